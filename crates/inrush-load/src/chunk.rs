//! What the workers hand on: a chunk of encoded rows, where it stands in the input, and what
//! finds each of its rows again. Below the workers, the router and the streams that all use it.

use bytes::Bytes;
use std::sync::Arc;

/// Encoded rows of one block, ready for any COPY stream, with what is needed to find a row
/// again if the server refuses it.
pub struct Chunk {
    pub data: Bytes,
    pub rows: u64,
    /// The source the block came from (an index into the load's sources).
    pub source: u32,
    /// The position fields say where the rows came from (false once rows were sorted).
    pub located: bool,
    pub first_line: u64,
    /// The line the next block starts on (for the resume ledger).
    pub next_line: u64,
    pub offset: u64,
    pub len: usize,
    /// With rejects allowed: where each row is, to COPY a part of the chunk again and to put a
    /// row the server refuses into the reject file.
    pub rows_index: Option<RowsIndex>,
    /// Where the chunk stands in the input (see [`Order`]).
    pub order: Order,
    /// Where its rows go (a partition's index; 0 when rows are not routed).
    pub dest: u32,
    /// For a chunk split by destination ([`crate::route`]): each row's index in the chunk it
    /// was taken from, which is what finds the row in the input again.
    pub picked: Option<Arc<[u32]>>,
    /// A block routed whole (`WorkerPlan::whole_blocks`): its rows by destination, a chunk
    /// each (none when every row was refused); `data` is then empty and `rows` their sum.
    pub pieces: Option<Vec<Chunk>>,
}

impl Chunk {
    /// A chunk of no rows: a unit whose rows were all refused still ends with one.
    pub fn empty() -> Chunk {
        Chunk {
            data: Bytes::new(),
            rows: 0,
            source: 0,
            located: false,
            first_line: 0,
            next_line: 0,
            offset: 0,
            len: 0,
            rows_index: None,
            order: Order::default(),
            dest: 0,
            picked: None,
            pieces: None,
        }
    }

    /// The chunks its rows go in: its pieces when it is a block routed whole, else itself.
    pub fn parts(&self) -> &[Chunk] {
        self.pieces.as_deref().unwrap_or(std::slice::from_ref(self))
    }
}

/// Where a chunk stands in the input: the unit it came from (a block, a columnar part, a run
/// of a query's tuples), numbered in the order the reader sent them, and its place among that
/// unit's chunks. With one reader thread this is the input's order, which `crate::order`
/// restores for a load whose outcome depends on it (the first occurrence of a key wins).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Order {
    pub unit: u64,
    pub piece: u32,
    /// The unit's last chunk: every unit ends with one, empty if need be.
    pub last: bool,
}

/// Row `i` of a chunk is `data[tuples[i]..tuples[i + 1]]` (the last one runs to the end), and
/// came from `block[records[i].0..records[i].1]`.
pub struct RowsIndex {
    pub block: Bytes,
    pub tuples: Vec<u32>,
    pub records: Vec<(u32, u32)>,
    /// Columnar inputs: each row's number in its file (`block` then holds the rows as CSV).
    pub row_numbers: Option<Vec<u64>>,
}
