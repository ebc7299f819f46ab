//! Sorting a small load's rows by a kept index's leading key before they are sent (see
//! [`crate::plan::SortKey`]): the index then takes its new entries leaf by leaf. The rows are
//! held in memory, which the plan bounds ([`crate::plan::SORT_BUDGET`]).

use crate::plan::SortKey;
use crate::stages::{Shared, CANCEL_POLL};
use crate::worker::Chunk;
use crate::{Error, Result};
use bytes::Bytes;

/// One row: its key (normalised so bytes compare in key order; `None` for NULL, which sorts
/// last as in a default B-tree) and where its tuple is.
struct Row {
    key: Option<Vec<u8>>,
    chunk: u32,
    start: u32,
    end: u32,
}

/// Takes every chunk the workers encode, then sends the rows on sorted, in chunks of about
/// `chunk_bytes`. Returns false when the load was cancelled or the sinks went away.
pub fn run(
    key: &SortKey,
    input: flume::Receiver<Chunk>,
    output: flume::Sender<Chunk>,
    shared: &Shared,
    chunk_bytes: usize,
) -> Result<bool> {
    let mut chunks: Vec<Bytes> = Vec::new();
    let mut rows: Vec<Row> = Vec::new();
    loop {
        let chunk = match input.recv_timeout(CANCEL_POLL) {
            Ok(chunk) => chunk,
            Err(flume::RecvTimeoutError::Timeout) if !shared.is_cancelled() => continue,
            Err(flume::RecvTimeoutError::Timeout) => return Ok(false),
            Err(flume::RecvTimeoutError::Disconnected) => break,
        };
        let index = chunks.len() as u32;
        split_tuples(&chunk.data, key, index, &mut rows)?;
        chunks.push(chunk.data);
    }
    if shared.is_cancelled() {
        return Ok(false);
    }
    rows.sort_by(|a, b| match (&a.key, &b.key) {
        (Some(x), Some(y)) => x.cmp(y),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => std::cmp::Ordering::Equal,
    });
    let mut out = Vec::with_capacity(chunk_bytes + chunk_bytes / 4);
    let mut count = 0u64;
    let send = |data: Vec<u8>, rows: u64| {
        output
            .send(Chunk {
                data: Bytes::from(data),
                rows,
                ..Chunk::empty()
            })
            .is_ok()
    };
    for row in &rows {
        let data = &chunks[row.chunk as usize];
        out.extend_from_slice(&data[row.start as usize..row.end as usize]);
        count += 1;
        if out.len() >= chunk_bytes {
            let full =
                std::mem::replace(&mut out, Vec::with_capacity(chunk_bytes + chunk_bytes / 4));
            if !send(full, std::mem::take(&mut count)) {
                return Ok(false);
            }
        }
    }
    Ok(count == 0 || send(out, count))
}

/// Appends the rows of one chunk of binary COPY tuples (16-bit field count, then each field's
/// 32-bit length and bytes; -1 for NULL) with their keys.
fn split_tuples(data: &[u8], key: &SortKey, chunk: u32, rows: &mut Vec<Row>) -> Result<()> {
    let malformed = || Error::Internal("sorting: a chunk is not whole binary COPY tuples".into());
    let read = |at: usize, n: usize| data.get(at..at + n).ok_or_else(malformed);
    let mut pos = 0;
    while pos < data.len() {
        let start = pos;
        let count = read(pos, 2)?;
        let fields = u16::from_be_bytes([count[0], count[1]]) as usize;
        pos += 2;
        let mut value = None;
        for field in 0..fields {
            let raw = read(pos, 4)?;
            pos += 4;
            // -1 is NULL: no bytes follow.
            let Ok(len) = usize::try_from(i32::from_be_bytes([raw[0], raw[1], raw[2], raw[3]]))
            else {
                continue;
            };
            if field == key.position {
                let mut bytes = read(pos, len)?.to_vec();
                if key.signed {
                    if let Some(first) = bytes.first_mut() {
                        *first ^= 0x80;
                    }
                }
                value = Some(bytes);
            }
            pos += len;
        }
        read(start, pos - start)?;
        rows.push(Row {
            key: value,
            chunk,
            start: start as u32,
            end: pos as u32,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use inrush_encode::binary_copy::TupleWriter;

    fn key(signed: bool) -> SortKey {
        SortKey {
            index: "i".into(),
            column: "k".into(),
            position: 1,
            signed,
        }
    }

    #[test]
    fn tuples_split_with_their_keys_in_sort_order() {
        let mut out = TupleWriter::with_capacity(256);
        for (k, v) in [
            (Some(5i32), "a"),
            (Some(-3), "bb"),
            (None, "c"),
            (Some(0), ""),
        ] {
            out.begin_tuple(2);
            let _ = out.field(|b| -> Result<(), ()> {
                b.extend_from_slice(v.as_bytes());
                Ok(())
            });
            match k {
                Some(k) => {
                    let _ = out.field(|b| -> Result<(), ()> {
                        b.extend_from_slice(&k.to_be_bytes());
                        Ok(())
                    });
                }
                None => out.null(),
            }
        }
        let data = out.into_inner();
        let mut rows = Vec::new();
        split_tuples(&data, &key(true), 0, &mut rows).unwrap();
        assert_eq!(rows.len(), 4);
        assert_eq!(rows.last().map(|r| r.end as usize), Some(data.len()));
        assert!(rows[2].key.is_none());
        // -3 < 0 < 5 once the sign bit is flipped.
        assert!(rows[1].key < rows[3].key && rows[3].key < rows[0].key);
        let mut bad = data.clone();
        bad.truncate(data.len() - 1);
        assert!(split_tuples(&bad, &key(true), 0, &mut Vec::new()).is_err());
    }
}
