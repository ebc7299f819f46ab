//! Sorting a small load's rows by a kept index's leading key before they are sent (see
//! [`crate::plan::SortKey`]): the index then takes its new entries leaf by leaf. The rows are
//! held in memory, which the plan bounds ([`crate::plan::SORT_BUDGET`]).

use crate::encoder::RowEncoder;
use crate::plan::SortKey;
use crate::stages::{Shared, CANCEL_POLL};
use crate::worker::{Chunk, WorkerPlan};
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
/// the plan's `chunk_bytes`. Returns false when the load was cancelled or the sinks went away.
pub fn run(
    key: &SortKey,
    plan: &WorkerPlan,
    input: flume::Receiver<Chunk>,
    output: flume::Sender<Chunk>,
    shared: &Shared,
) -> Result<bool> {
    let chunk_bytes = plan.chunk_bytes;
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
        keyed_rows(&chunk.data, &*plan.rows, key, index, &mut rows)?;
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

/// Appends the rows of one chunk with their keys, its rows cut by the engine's encoder.
fn keyed_rows(
    data: &[u8],
    encoder: &dyn RowEncoder,
    key: &SortKey,
    chunk: u32,
    rows: &mut Vec<Row>,
) -> Result<()> {
    let mut fields = Vec::new();
    let mut pos = 0;
    while pos < data.len() {
        let end = encoder
            .fields(data, pos, &mut fields)
            .ok_or_else(|| Error::Internal("sorting: a chunk is not whole rows".into()))?;
        let value = fields.get(key.position).copied().flatten().map(|bytes| {
            let mut bytes = bytes.to_vec();
            if let Some(first) = bytes.first_mut().filter(|_| key.signed) {
                *first ^= 0x80;
            }
            bytes
        });
        rows.push(Row {
            key: value,
            chunk,
            start: pos as u32,
            end: end as u32,
        });
        pos = end;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encoder::RowWriter;

    /// Rows of one-byte lengths (255 for NULL) and bytes, two fields each.
    struct Pairs;

    impl RowEncoder for Pairs {
        fn worker(&self, _: bool) -> Box<dyn RowWriter + '_> {
            unreachable!("the test writes its rows itself")
        }

        fn fields<'d>(
            &self,
            data: &'d [u8],
            mut pos: usize,
            fields: &mut Vec<Option<&'d [u8]>>,
        ) -> Option<usize> {
            fields.clear();
            for _ in 0..2 {
                let len = *data.get(pos)?;
                pos += 1;
                if len == 255 {
                    fields.push(None);
                } else {
                    fields.push(Some(data.get(pos..pos + usize::from(len))?));
                    pos += usize::from(len);
                }
            }
            Some(pos)
        }
    }

    #[test]
    fn rows_come_with_their_keys_in_sort_order() {
        let mut data = Vec::new();
        for (k, v) in [
            (Some(5i32), "a"),
            (Some(-3), "bb"),
            (None, "c"),
            (Some(0), ""),
        ] {
            data.push(v.len() as u8);
            data.extend_from_slice(v.as_bytes());
            match k {
                Some(k) => {
                    data.push(4);
                    data.extend_from_slice(&k.to_be_bytes());
                }
                None => data.push(255),
            }
        }
        let key = SortKey {
            index: "i".into(),
            column: "k".into(),
            position: 1,
            signed: true,
        };
        let mut rows = Vec::new();
        keyed_rows(&data, &Pairs, &key, 0, &mut rows).unwrap();
        assert_eq!(rows.len(), 4);
        assert_eq!(rows.last().map(|r| r.end as usize), Some(data.len()));
        assert!(rows[2].key.is_none());
        // -3 < 0 < 5 once the sign bit is flipped.
        assert!(rows[1].key < rows[3].key && rows[3].key < rows[0].key);
        let cut = &data[..data.len() - 1];
        assert!(keyed_rows(cut, &Pairs, &key, 0, &mut Vec::new()).is_err());
    }
}
