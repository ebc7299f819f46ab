//! The vocabulary of `--resume`: an input file as the ledger identifies it, the blocks
//! already committed, and where a rerun reads on from. Each target keeps its ledger in its own
//! database, in the same transaction as each block's rows.

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
}
