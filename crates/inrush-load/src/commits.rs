//! A load that committed but could not finish (the server went away while it rebuilt an
//! index, the disk filled), or whose COMMIT's answer was lost on the way back with the server
//! out of reach to ask, leaves its rows committed (or perhaps committed), and the user (or a
//! script) may run the same command again. That must not load every row twice.
//!
//! So every load of an input that can be recognised again records itself in the target as it
//! commits: the table, its input's [`identity`], its rows, and what tells whether its
//! transactions committed (each engine its own way: PostgreSQL asks `txid_status` of the
//! transactions, MariaDB writes the record inside the load's transaction). The load deletes
//! the record once everything is back. A record still there is a load that committed and did
//! not finish, or whose outcome it could not learn: the next load of the same input into that
//! table asks, puts back what is left, loads nothing if the rows are in, and says so
//! ([`judge`]). `inrush recover` leaves the record, so a rerun after a recover loads nothing
//! either; a load of any other input is not concerned.

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

/// A token that names this run of a load apart from every other (its shares of the record).
pub fn run_token() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{}-{nanos}", std::process::id())
}

/// Whether a load recorded in shares, one per writer's transaction, committed: `present` of
/// its `parts` shares are there.
pub fn committed_shares(present: u64, parts: u64) -> Committed {
    match present {
        0 => Committed::None,
        n if n >= parts => Committed::All,
        _ => Committed::Some,
    }
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
            "nothing loaded: this input's {rows} rows were committed into {table} by a load at {recorded_at} that could not finish or learn its outcome; what it left dropped is put back"
        ))),
        Committed::Some => Err(Error::Usage(format!(
            "a load of this input into {table} at {recorded_at} committed only some of its connections (exit 5): loading it again would put those rows in twice; delete the rows it committed, then delete its record (inrush.load_commits / inrush_load_commits) and load again"
        ))),
        Committed::None => Ok(None),
    }
}

/// What one connection's COMMIT came to, as the engine learned it: from the answer, or, when
/// the answer was lost, by asking the server afterwards. Never guessed from an error alone: a
/// COMMIT whose answer did not come back may well have committed.
#[derive(Debug)]
pub enum Fate {
    Committed,
    /// The server said so (its own error), or asked afterwards, knew the transaction aborted.
    RolledBack(Error),
    /// No answer, and the server could not be asked in time. `ask` is the query that tells.
    Unknown {
        reason: String,
        ask: String,
    },
}

/// The load's outcome from each connection's fate at the commit, with the rows it wrote:
/// every one committed, or nothing did (the first refusal's error), or some did (exit 5, the
/// rows counted those that committed), or some cannot be known (exit 9, the queries that tell).
/// `recorded`: the load recorded itself, so a rerun asks before it loads.
pub fn judge_commits(fates: Vec<(Fate, u64)>, recorded: bool) -> Result<()> {
    let connections = fates.len();
    let committed: Vec<u64> = fates
        .iter()
        .filter(|(f, _)| matches!(f, Fate::Committed))
        .map(|(_, rows)| *rows)
        .collect();
    let rows_committed = committed.iter().sum();
    let mut unknown = Vec::new();
    let mut refused = None;
    for (fate, _) in fates {
        match fate {
            Fate::Committed => {}
            Fate::RolledBack(e) => {
                refused.get_or_insert(e);
            }
            Fate::Unknown { reason, ask } => unknown.push((reason, ask)),
        }
    }
    if let Some((reason, _)) = unknown.first() {
        return Err(Error::CommitUnknown {
            unknown: unknown.len(),
            connections,
            committed: committed.len(),
            rows_committed,
            reason: reason.clone(),
            ask: unknown
                .iter()
                .map(|(_, ask)| ask.as_str())
                .collect::<Vec<_>>()
                .join("; "),
            rerun_asks: recorded,
        });
    }
    match (refused, committed.len()) {
        (None, _) => Ok(()),
        (Some(e), 0) => Err(e),
        (Some(e), n) => Err(Error::PartialCommit {
            committed: n,
            connections,
            rows_committed,
            reason: e.to_string(),
        }),
    }
}

/// Whether running the load again cannot put its rows in twice by itself: `--resume` skips the
/// blocks its ledger holds, and `--on-conflict` merges rows that are there already.
pub fn rerun_adds_nothing(opts: &LoadOptions) -> bool {
    opts.resume || opts.on_conflict != OnConflict::Error
}

/// The input's identity, for the record a load keeps with its commit; `None` when it needs no
/// record (a rerun adds nothing by itself, `--check` commits nothing, a `--prepare` part's
/// job decides) or its input cannot be recognised.
pub fn to_record(opts: &LoadOptions, sources: &Sources) -> Option<String> {
    match may_record(opts) {
        true => identity(sources),
        false => None,
    }
}

/// Whether a load of `opts` may keep a record, by its options alone: an engine that makes the
/// record's table before the load asks, so that a load that never records makes none.
pub fn may_record(opts: &LoadOptions) -> bool {
    !(rerun_adds_nothing(opts)
        || opts.check_only
        || opts.prepare.is_some()
        || opts.from_query.is_some()
        || opts.inputs.iter().all(|i| i == "-"))
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

    fn refused() -> Fate {
        Fate::RolledBack(Error::Internal("refused".into()))
    }

    fn unknown(n: u32) -> Fate {
        Fate::Unknown {
            reason: "connection reset".into(),
            ask: format!("SELECT txid_status({n})"),
        }
    }

    #[test]
    fn every_connection_committed_is_a_commit() {
        let fates = vec![(Fate::Committed, 5), (Fate::Committed, 7)];
        assert!(judge_commits(fates, false).is_ok());
    }

    #[test]
    fn nothing_committed_is_the_first_refusal() {
        let e = judge_commits(vec![(refused(), 5), (refused(), 7)], false).unwrap_err();
        assert!(matches!(e, Error::Internal(_)), "{e}");
    }

    #[test]
    fn a_partial_commit_counts_only_the_committed_connections_rows() {
        let e = judge_commits(vec![(Fate::Committed, 5), (refused(), 7)], false).unwrap_err();
        match e {
            Error::PartialCommit {
                committed: 1,
                connections: 2,
                rows_committed: 5,
                ..
            } => {}
            e => panic!("{e:?}"),
        }
    }

    #[test]
    fn an_unknown_fate_is_never_reported_as_a_failure_or_a_commit() {
        let fates = vec![(Fate::Committed, 5), (unknown(1), 7), (unknown(2), 1)];
        let e = judge_commits(fates, true).unwrap_err();
        assert_eq!(e.kind(), crate::Kind::CommitUnknown);
        let text = e.to_string();
        assert!(text.contains("2 of the load's 3 connections"), "{text}");
        assert!(text.contains("(5 rows)"), "{text}");
        assert!(
            text.contains("SELECT txid_status(1); SELECT txid_status(2)"),
            "{text}"
        );
        assert!(text.contains("asks the server first"), "{text}");
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
