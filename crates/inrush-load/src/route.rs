//! Rows split by destination between the workers and the sinks: each chunk of encoded rows
//! becomes one chunk per destination (a partition, for PostgreSQL), the rows of each in the
//! input's order. A row with no destination is a bad row, refused as the engine would refuse
//! it. How a row's fields are read ([`RowEncoder::fields`]) and which destination they have
//! ([`Route`]) are the engine's business; this module only walks the rows and keeps every
//! chunk able to find its rows in the input again.

use crate::chunk::{Chunk, RowsIndex};
use crate::encoder::RowEncoder;
use crate::rejects::Rejects;
use crate::{Error, Result};
use bytes::Bytes;
use inrush_core::Location;
use std::sync::Arc;

/// Where a row goes.
pub trait Route: Send + Sync {
    /// The destination of a row from its fields in the load's column order, as
    /// [`RowEncoder::fields`] reads them (`None` for NULL), or the reason it has none, in the
    /// engine's words.
    fn route(&self, fields: &[Option<&[u8]>]) -> Result<u32, String>;
}

/// Finds a chunk's row in the input again, for a row no destination takes (the workers'
/// plan knows the inputs).
pub trait Locate {
    /// The row's record as read, and where it is.
    fn row_source<'c>(
        &self,
        chunk: &'c Chunk,
        index: &'c RowsIndex,
        row: usize,
    ) -> (&'c [u8], Location);

    /// Where row `row` of `chunk` is, as near as the chunk can tell without an index.
    fn locate(&self, chunk: &Chunk, row: u64) -> Location;
}

/// The rows of one destination taken out of a chunk so far.
#[derive(Default)]
struct Piece {
    data: Vec<u8>,
    picked: Vec<u32>,
    tuples: Vec<u32>,
    records: Vec<(u32, u32)>,
    numbers: Vec<u64>,
}

/// Splits `chunk` by destination (see the module documentation); a row with none goes to
/// `rejects`, or ends the load when rejects are not allowed.
pub fn split(
    chunk: &Chunk,
    rows: &dyn RowEncoder,
    route: &dyn Route,
    plan: &dyn Locate,
    rejects: Option<&Rejects>,
) -> Result<Vec<Chunk>> {
    // Indexed by destination: a map lookup per row cost more than the routing itself.
    let mut pieces: Vec<Piece> = Vec::new();
    let mut fields = Vec::new();
    let mut pos = 0;
    for row in 0..chunk.rows as usize {
        let end = rows
            .fields(&chunk.data, pos, &mut fields)
            .ok_or_else(|| Error::Internal("a malformed row to route".into()))?;
        match route.route(&fields) {
            Ok(dest) => {
                let dest = dest as usize;
                if pieces.len() <= dest {
                    pieces.resize_with(dest + 1, Piece::default);
                }
                let piece = &mut pieces[dest];
                piece.tuples.push(piece.data.len() as u32);
                piece.data.extend_from_slice(&chunk.data[pos..end]);
                piece.picked.push(row as u32);
                if let Some(index) = &chunk.rows_index {
                    piece.records.push(index.records[row]);
                    if let Some(numbers) = &index.row_numbers {
                        piece.numbers.push(numbers[row]);
                    }
                }
            }
            Err(reason) => refuse(chunk, row, reason, plan, rejects)?,
        }
        pos = end;
    }
    Ok(pieces
        .into_iter()
        .enumerate()
        .filter(|(_, piece)| !piece.picked.is_empty())
        .map(|(dest, piece)| piece_chunk(chunk, dest as u32, piece))
        .collect())
}

/// `chunk`'s pieces (from [`split`]) as one chunk that stands for its block: for a sink that
/// commits a block whole on every server (`--resume`), which must have all of it at once.
pub fn bundle(chunk: Chunk, pieces: Vec<Chunk>) -> Chunk {
    Chunk {
        data: Bytes::new(),
        rows: pieces.iter().map(|p| p.rows).sum(),
        rows_index: None,
        picked: None,
        pieces: Some(pieces),
        ..chunk
    }
}

/// A row no destination takes: to the reject file, or the load's error.
fn refuse(
    chunk: &Chunk,
    row: usize,
    reason: String,
    plan: &dyn Locate,
    rejects: Option<&Rejects>,
) -> Result<()> {
    match (rejects, &chunk.rows_index) {
        (Some(rejects), Some(index)) => {
            let (raw, location) = plan.row_source(chunk, index, row);
            // 23514, check_violation: what the server says of a row no partition takes.
            rejects.reject(raw, false, &location, &reason, Some("23514"))
        }
        _ => Err(Error::BadRow {
            location: plan.locate(chunk, row as u64),
            reason,
        }),
    }
}

fn piece_chunk(chunk: &Chunk, dest: u32, piece: Piece) -> Chunk {
    Chunk {
        data: Bytes::from(piece.data),
        rows: piece.picked.len() as u64,
        source: chunk.source,
        located: chunk.located,
        first_line: chunk.first_line,
        next_line: chunk.next_line,
        offset: chunk.offset,
        len: chunk.len,
        rows_index: chunk.rows_index.as_ref().map(|index| RowsIndex {
            block: index.block.clone(),
            tuples: piece.tuples,
            records: piece.records,
            row_numbers: index.row_numbers.as_ref().map(|_| piece.numbers),
        }),
        order: chunk.order,
        dest,
        picked: Some(Arc::from(piece.picked)),
        pieces: None,
    }
}
