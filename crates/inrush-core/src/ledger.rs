//! The vocabulary of `--resume`: an input file as the ledger identifies it, the blocks
//! already committed, where a rerun reads on from, and what `inrush status` says of a load.
//! Each target keeps its ledger in its own database, in the same transaction as each block's
//! rows, and reads it into these types.

/// Which input, cut how, and what it looked like: a rerun must cut the same blocks out of the
/// same bytes (a changed file is refused instead of being mixed with its old rows).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputFile {
    /// The canonical path.
    pub input: String,
    pub block_size: i64,
    pub size: i64,
    /// Nanoseconds since the epoch, as text.
    pub mtime: String,
    /// A hash of the file's head and tail (`inrush_read::source::fingerprint`).
    pub fingerprint: String,
    /// Where its data starts (after a header): the first block's offset. Not part of the
    /// identity (the same file has the same header); the ledger keeps it so that
    /// [`LoadStatus`] can tell a complete load.
    pub data_start: i64,
}

impl InputFile {
    /// For a message saying what changed.
    pub fn describe(&self) -> String {
        format!(
            "{} bytes, modified {}, fingerprint {}",
            self.size, self.mtime, self.fingerprint
        )
    }
}

/// One block already committed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Committed {
    pub offset: i64,
    pub len: i64,
    pub first_line: i64,
    pub next_line: i64,
    pub rows: i64,
}

/// Where a rerun can start reading: the end of the committed blocks that follow each other from
/// `data_start` (offset, line); blocks committed past a gap are skipped as they come.
pub fn resume_point(committed: &[Committed], data_start: (u64, u64)) -> (u64, u64) {
    let (mut offset, mut line) = data_start;
    for block in committed {
        if block.offset as u64 == offset {
            offset += block.len as u64;
            line = block.next_line as u64;
        }
    }
    (offset, line)
}

/// What a ledger records of one input's load into one table, as a target reads it for
/// `inrush status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    /// The table, as the target names it.
    pub table: String,
    pub input: String,
    pub block_size: i64,
    /// The input's size in bytes.
    pub size: i64,
    /// Where its data starts ([`InputFile::data_start`]); `None` in a ledger written before
    /// inrush recorded it.
    pub data_start: Option<i64>,
    /// Blocks, rows and input bytes committed.
    pub blocks: i64,
    pub rows: i64,
    pub bytes: i64,
    pub started_at: String,
    pub last_commit: Option<String>,
}

/// One input's load into one table, as the ledger and the blocks held now say
/// (`inrush status`, the same for every target).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct LoadStatus {
    pub table: String,
    pub input: String,
    pub block_size: i64,
    /// The input's size in bytes.
    pub size: i64,
    /// Blocks, rows and input bytes committed.
    pub blocks: i64,
    pub rows: i64,
    pub bytes: i64,
    pub started_at: String,
    pub last_commit: Option<String>,
    /// Whether the committed blocks cover the input from its first block to its end; `None`
    /// for a ledger written before inrush recorded where the first block starts.
    pub complete: Option<bool>,
    /// The blocks being loaded now, and by which session, as far as the target can tell (see
    /// each target's `ledger::status`; empty where it cannot).
    pub loading: Vec<Loading>,
    /// `complete`, `loading`, `interrupted` or `unknown` (see [`LoadStatus::state`]).
    pub state: &'static str,
}

/// A block some session holds now: taken, not committed yet.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Loading {
    /// The block's ordinal (`offset / block_size`).
    pub block: i64,
    pub pid: i32,
    pub client_addr: Option<String>,
    pub application_name: Option<String>,
}

impl LoadStatus {
    /// A load as its ledger records it, with the blocks held now.
    pub fn new(recorded: Recorded, loading: Vec<Loading>) -> LoadStatus {
        let Recorded {
            table,
            input,
            block_size,
            size,
            data_start,
            blocks,
            rows,
            bytes,
            started_at,
            last_commit,
        } = recorded;
        let mut status = LoadStatus {
            table,
            input,
            block_size,
            size,
            blocks,
            rows,
            bytes,
            started_at,
            last_commit,
            // Blocks never overlap (the ledger's key, and the same cuts), so their bytes cover
            // the data exactly when they add up to it.
            complete: data_start.map(|start| bytes >= size - start),
            loading,
            state: "",
        };
        status.state = status.state();
        status
    }

    /// `complete`, `loading` (some process holds a block now), `interrupted` (neither), or
    /// `unknown`.
    pub fn state(&self) -> &'static str {
        match (self.complete, self.loading.is_empty()) {
            (Some(true), _) => "complete",
            (_, false) => "loading",
            (Some(false), true) => "interrupted",
            (None, true) => "unknown",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(offset: i64, len: i64, first_line: i64, next_line: i64) -> Committed {
        Committed {
            offset,
            len,
            first_line,
            next_line,
            rows: 1,
        }
    }

    #[test]
    fn resume_point_follows_the_contiguous_prefix() {
        assert_eq!(resume_point(&[], (10, 2)), (10, 2));
        let committed = [block(10, 5, 2, 4), block(15, 5, 4, 6), block(30, 5, 9, 11)];
        assert_eq!(resume_point(&committed, (10, 2)), (20, 6));
        assert_eq!(resume_point(&committed[1..], (10, 2)), (10, 2));
    }

    fn recorded(data_start: Option<i64>, bytes: i64) -> Recorded {
        Recorded {
            table: "t".into(),
            input: "/in.csv".into(),
            block_size: 10,
            size: 100,
            data_start,
            blocks: 3,
            rows: 30,
            bytes,
            started_at: "then".into(),
            last_commit: None,
        }
    }

    #[test]
    fn a_load_is_complete_when_its_blocks_cover_the_data_after_the_header() {
        let held = || {
            vec![Loading {
                block: 4,
                pid: 7,
                client_addr: None,
                application_name: None,
            }]
        };
        let state = |data_start, bytes, loading| {
            let status = LoadStatus::new(recorded(data_start, bytes), loading);
            (status.complete, status.state)
        };
        assert_eq!(state(Some(10), 90, vec![]), (Some(true), "complete"));
        assert_eq!(state(Some(10), 89, vec![]), (Some(false), "interrupted"));
        assert_eq!(state(Some(10), 89, held()), (Some(false), "loading"));
        assert_eq!(state(Some(10), 90, held()), (Some(true), "complete"));
        assert_eq!(state(None, 100, vec![]), (None, "unknown"));
        assert_eq!(state(None, 50, held()), (None, "loading"));
    }
}
