//! A load that committed but could not finish (the server went away while it rebuilt an
//! index, the disk filled) leaves its rows committed, and the user (or a script) may run the
//! same command again. That must not load every row twice.
//!
//! So a load that drops definitions outside its transactions records itself in the target as
//! it commits: the table, its input's [`identity`], its rows, and what tells whether its
//! transactions committed (each engine its own way: PostgreSQL asks `txid_status` of the
//! transactions, MariaDB writes the record inside the load's transaction). The load deletes
//! the record once everything is back. A record still there is a load that committed and did
//! not finish: the next load of the same input into that table puts back what is left, loads
//! nothing, and says so ([`judge`]). `inrush recover` leaves the record, so a rerun after a
//! recover loads nothing either; a load of any other input is not concerned.

use crate::sources::{Origin, Sources};
use crate::{Error, LoadOptions, OnConflict, Result};

/// A record of an earlier load of the same input into the same table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EarlierLoad {
    /// Rows it committed.
    pub rows: u64,
    /// When it recorded itself, as the engine shows a timestamp.
    pub recorded_at: String,
    pub committed: Committed,
}

/// Whether the earlier load's transactions committed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Committed {
    All,
    /// Some of its connections committed, others not (it exited 5).
    Some,
    /// None did (the commit failed, or the engine no longer knows): the record is stale.
    None,
}

/// What a load does about an earlier load of its input: `Ok(Some(note))`, it loads nothing
/// (the rows are there) and the summary says why; `Ok(None)`, it loads as usual (the record
/// is stale and may be deleted); an error when only part of the earlier load committed, which
/// no rerun can complete without duplicating the rest.
pub fn judge(earlier: &EarlierLoad, table: &str) -> Result<Option<String>> {
    let EarlierLoad {
        rows, recorded_at, ..
    } = earlier;
    match earlier.committed {
        Committed::All => Ok(Some(format!(
            "nothing loaded: this input's {rows} rows were committed into {table} by a load at {recorded_at} that could not finish; what it left dropped is put back"
        ))),
        Committed::Some => Err(Error::Usage(format!(
            "a load of this input into {table} at {recorded_at} committed only some of its connections (exit 5): loading it again would put those rows in twice; delete the rows it committed, then delete its record (inrush.load_commits / inrush_load_commits) and load again"
        ))),
        Committed::None => Ok(None),
    }
}

/// Whether running the load again cannot put its rows in twice by itself: `--resume` skips the
/// blocks its ledger holds, and `--on-conflict` merges rows that are there already.
pub fn rerun_adds_nothing(opts: &LoadOptions) -> bool {
    opts.resume || opts.on_conflict != OnConflict::Error
}

/// The input's identity, for the record a load keeps with its commit when it `dropped`
/// definitions outside its transactions (a failure after the commit would leave them dropped
/// and the rows in); `None` when it needs no record or its input cannot be recognised.
pub fn to_record(opts: &LoadOptions, sources: &Sources, dropped: bool) -> Option<String> {
    match dropped && !rerun_adds_nothing(opts) {
        true => identity(sources),
        false => None,
    }
}

/// What identifies a load's input across runs: for each file (directories and globs expanded,
/// in load order), its canonical path, size, modification time and a hash of its head and
/// tail. `None` when an input is standard input, a query or batches in memory: those cannot
/// be recognised when they come again.
pub fn identity(sources: &Sources) -> Option<String> {
    let mut lines = Vec::with_capacity(sources.list.len());
    for source in &sources.list {
        let Origin::Path(path) = &source.origin else {
            return None;
        };
        if path == "-" {
            return None;
        }
        let path = std::fs::canonicalize(path).ok()?;
        let meta = std::fs::metadata(&path).ok()?;
        let mtime = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos());
        let hash = inrush_read::source::fingerprint(&path).ok()?;
        lines.push(format!(
            "{}\t{}\t{mtime}\t{hash}",
            path.display(),
            meta.len()
        ));
    }
    Some(lines.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn earlier(committed: Committed) -> EarlierLoad {
        EarlierLoad {
            rows: 2_000_000,
            recorded_at: "2026-11-27 18:00:00+00".into(),
            committed,
        }
    }

    #[test]
    fn a_committed_earlier_load_means_nothing_is_loaded_again() {
        let note = judge(&earlier(Committed::All), "t").unwrap().unwrap();
        assert!(note.starts_with("nothing loaded"), "{note}");
        assert!(note.contains("2000000 rows"), "{note}");
    }

    #[test]
    fn a_stale_record_lets_the_load_go_on() {
        assert_eq!(judge(&earlier(Committed::None), "t").unwrap(), None);
    }

    #[test]
    fn a_partly_committed_earlier_load_is_refused() {
        assert!(matches!(
            judge(&earlier(Committed::Some), "t"),
            Err(Error::Usage(_))
        ));
    }

    #[test]
    fn an_identity_names_every_file_and_changes_with_its_content() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.csv");
        std::fs::write(&path, "1,2\n").unwrap();
        let opts = crate::LoadOptions::new(path.display().to_string(), "t");
        let first = identity(&Sources::from_options(&opts).unwrap()).unwrap();
        assert!(first.contains("a.csv\t4\t"), "{first}");
        std::fs::write(&path, "1,3\n").unwrap();
        let second = identity(&Sources::from_options(&opts).unwrap()).unwrap();
        assert_ne!(first, second);
        let stdin = crate::LoadOptions::new("-", "t");
        assert_eq!(identity(&Sources::from_options(&stdin).unwrap()), None);
    }
}
