//! What one parse/encode worker does with a block: parse every record, check and encode every
//! field into a COPY chunk, and say exactly where and why when a row cannot be loaded.

use crate::pipeline::{Shared, CANCEL_POLL};
use crate::rejects::Rejects;
use crate::{Error, Result};
use bytes::Bytes;
use inrush_core::{Location, TargetColumn};
use inrush_encode::binary_copy::TupleWriter;
use inrush_encode::{encode_value, text_copy, EncodeContext, EncodeError};
use inrush_postgres::copy::CopyFormat;
use inrush_postgres::resolve::Resolver;
use inrush_postgres::ConnectOptions;
use inrush_read::csv::{Block, BlockParser, Record, RecordParser};
use std::sync::atomic::Ordering;

/// Encoded rows of one block, ready for any COPY stream, with what is needed to find a row
/// again if the server refuses it.
pub(crate) struct Chunk {
    pub data: Bytes,
    pub rows: u64,
    pub first_line: u64,
    /// The line the next block starts on (for the resume ledger).
    pub next_line: u64,
    pub offset: u64,
    pub len: usize,
    /// With rejects allowed: where each row is, to COPY a part of the chunk again and to put a
    /// row the server refuses into the reject file.
    pub rows_index: Option<RowsIndex>,
}

/// Row `i` of a chunk is `data[tuples[i]..tuples[i + 1]]` (the last one runs to the end), and
/// came from `block[records[i].0..records[i].1]`.
pub(crate) struct RowsIndex {
    pub block: Bytes,
    pub tuples: Vec<u32>,
    pub records: Vec<(u32, u32)>,
}

/// Everything a worker needs, shared read-only by all workers.
pub(crate) struct WorkerPlan {
    pub parser: RecordParser,
    pub columns: Vec<TargetColumn>,
    pub format: CopyFormat,
    pub ctx: EncodeContext,
    pub target: ConnectOptions,
    /// The input's name for messages.
    pub file: String,
    /// Whether blocks can be read again from `file` by offset (plain files only).
    pub seekable: bool,
    /// The relation's bare name, as the server names it in NOT NULL messages.
    pub relation: String,
    /// Append each record's byte offset in the input as a last bigint field: the input order,
    /// for `--on-conflict update` to let the last occurrence of a key win.
    pub ordinal: bool,
    /// The byte counted as a line break (`\r` for CR-only files).
    pub line_break: u8,
}

/// Why one field failed: the server's wording, or a resolver that could not reach the server.
enum FieldError {
    Refused(String),
    Resolver(inrush_postgres::Error),
}

impl WorkerPlan {
    /// Runs until the block queue closes, the chunk queue closes, or the load is cancelled.
    /// Returns how many values the server resolved for this worker.
    pub fn run(
        &self,
        shared: &Shared,
        blocks: flume::Receiver<Block>,
        chunks: flume::Sender<Chunk>,
    ) -> u64 {
        let mut resolver = Resolver::new(self.target.clone(), self.columns.clone());
        let mut rec = Record::default();
        loop {
            let block = match blocks.recv_timeout(CANCEL_POLL) {
                Ok(block) => block,
                Err(flume::RecvTimeoutError::Timeout) if !shared.is_cancelled() => continue,
                Err(_) => break,
            };
            if shared.is_cancelled() {
                break;
            }
            match self.encode_block(&block, &mut rec, &mut resolver, shared.rejects.as_ref()) {
                Ok(chunk) => {
                    let rows = chunk.rows;
                    if chunks.send(chunk).is_err() {
                        break;
                    }
                    shared.progress.rows_sent.fetch_add(rows, Ordering::Relaxed);
                }
                Err(e) => {
                    shared.fail(e);
                    break;
                }
            }
        }
        resolver.round_trips
    }

    /// Encodes every record of a block. A refused row is written to `rejects` when the user
    /// allows rejects, else it ends the load.
    fn encode_block(
        &self,
        block: &Block,
        rec: &mut Record,
        resolver: &mut Resolver,
        rejects: Option<&Rejects>,
    ) -> Result<Chunk> {
        let data = &block.data[..];
        // Checked once per block; only a block with a bad byte is checked record by record.
        let block_is_valid = check_encoding(data).is_ok();
        let parser = self.parser.block(data);
        let mut out = TupleWriter::with_capacity(data.len() + data.len() / 4 + 64);
        let mut rows = 0u64;
        let mut index = rejects.map(|_| (Vec::new(), Vec::new()));
        let mut pos = 0;
        while pos < data.len() {
            let start = pos;
            let tuple_start = out.len() as u32;
            match self.encode_record(
                block,
                &parser,
                start,
                block_is_valid,
                rec,
                &mut out,
                resolver,
            ) {
                Ok(next) => {
                    rows += 1;
                    if let Some((tuples, records)) = &mut index {
                        tuples.push(tuple_start);
                        records.push((start as u32, next as u32));
                    }
                    pos = next;
                }
                Err((Error::BadRow { location, reason }, next)) if rejects.is_some() => {
                    if let Some(rejects) = rejects {
                        let raw = &data[start..next];
                        rejects.reject(
                            raw,
                            self.parser.leaves_quote_open(raw),
                            &location,
                            &reason,
                            None,
                        )?;
                    }
                    pos = next;
                }
                Err((error, _)) => return Err(error),
            }
        }
        Ok(Chunk {
            data: Bytes::from(out.into_inner()),
            rows,
            first_line: block.first_line,
            next_line: block.first_line + block.lines,
            offset: block.offset,
            len: data.len(),
            rows_index: index.map(|(tuples, records)| RowsIndex {
                block: block.data.clone(),
                tuples,
                records,
            }),
        })
    }

    /// Encodes the record at `start`; returns where the next record starts, also on refusal.
    #[allow(clippy::too_many_arguments)]
    fn encode_record(
        &self,
        block: &Block,
        parser: &BlockParser<'_>,
        start: usize,
        block_is_valid: bool,
        rec: &mut Record,
        out: &mut TupleWriter,
        resolver: &mut Resolver,
    ) -> Result<usize, (Error, usize)> {
        let data = &block.data[..];
        let next = parser.parse(start, rec).map_err(|e| {
            let error = Error::BadRow {
                location: self.locate(block, start),
                reason: e.to_string(),
            };
            (error, self.parser.record_end(data, start))
        })?;
        if !block_is_valid {
            if let Err(bad) = check_encoding(&data[start..next]) {
                return Err((self.encoding_error(block, start, rec, start + bad), next));
            }
        }
        if rec.len() != self.columns.len() {
            let error = Error::BadRow {
                location: self.locate(block, start),
                reason: self.field_count_reason(rec.len()),
            };
            return Err((error, next));
        }
        let ordinal = self.ordinal.then_some(block.offset + start as u64);
        match self.format {
            CopyFormat::Binary => self.encode_binary_row(data, rec, out, resolver, ordinal),
            CopyFormat::Text => self.encode_text_row(data, rec, out, ordinal),
        }
        .map_err(|(col, e)| (self.field_error(block, start, rec, col, e), next))?;
        Ok(next)
    }

    fn encode_binary_row(
        &self,
        data: &[u8],
        rec: &Record,
        out: &mut TupleWriter,
        resolver: &mut Resolver,
        ordinal: Option<u64>,
    ) -> Result<(), (usize, FieldError)> {
        let mark = out.begin_tuple((self.columns.len() + usize::from(ordinal.is_some())) as u16);
        for (i, (column, field)) in self.columns.iter().zip(rec.fields(data)).enumerate() {
            let Some(bytes) = field else {
                if column.not_null {
                    out.rewind(mark);
                    return Err((i, FieldError::Refused(self.not_null_reason(column))));
                }
                out.null();
                continue;
            };
            // Safe: the record was checked to be UTF-8 (with its block, or on its own), and
            // fields are cut at ASCII bytes.
            let text = unsafe { std::str::from_utf8_unchecked(bytes) };
            let written = out.field(|buf| {
                let start = buf.len();
                match encode_value(&column.value_type, column.typmod, text, &self.ctx, buf) {
                    Ok(()) => Ok(()),
                    Err(EncodeError::Refused(reason)) => Err(FieldError::Refused(reason)),
                    Err(EncodeError::Deferred) => {
                        buf.truncate(start);
                        match resolver.resolve(i, text) {
                            Ok(Ok(value)) => {
                                buf.extend_from_slice(&value);
                                Ok(())
                            }
                            Ok(Err(reason)) => Err(FieldError::Refused(reason)),
                            Err(e) => Err(FieldError::Resolver(e)),
                        }
                    }
                }
            });
            if let Err(e) = written {
                out.rewind(mark);
                return Err((i, e));
            }
        }
        if let Some(ordinal) = ordinal {
            let appended: Result<(), ()> = out.field(|buf| {
                buf.extend_from_slice(&(ordinal as i64).to_be_bytes());
                Ok(())
            });
            debug_assert!(appended.is_ok());
        }
        Ok(())
    }

    /// Text COPY: the server parses values; the client still parses the CSV and checks NULLs.
    fn encode_text_row(
        &self,
        data: &[u8],
        rec: &Record,
        out: &mut TupleWriter,
        ordinal: Option<u64>,
    ) -> Result<(), (usize, FieldError)> {
        let mark = out.len();
        for (i, (column, field)) in self.columns.iter().zip(rec.fields(data)).enumerate() {
            if field.is_none() && column.not_null {
                out.rewind(mark);
                return Err((i, FieldError::Refused(self.not_null_reason(column))));
            }
            let line = out.bytes_mut();
            if i > 0 {
                line.push(b'\t');
            }
            text_copy::push_field(line, field);
        }
        if let Some(ordinal) = ordinal {
            out.bytes_mut()
                .extend_from_slice(format!("\t{ordinal}").as_bytes());
        }
        out.bytes_mut().push(b'\n');
        Ok(())
    }

    fn not_null_reason(&self, column: &TargetColumn) -> String {
        format!(
            "null value in column \"{}\" of relation \"{}\" violates not-null constraint",
            column.name, self.relation
        )
    }

    fn field_count_reason(&self, found: usize) -> String {
        if found > self.columns.len() {
            format!(
                "extra data after last expected column (expected {} fields, found {found})",
                self.columns.len()
            )
        } else {
            format!(
                "missing data for column \"{}\" (expected {} fields, found {found})",
                self.columns[found].name,
                self.columns.len()
            )
        }
    }

    fn field_error(
        &self,
        block: &Block,
        start: usize,
        rec: &Record,
        col: usize,
        e: FieldError,
    ) -> Error {
        match e {
            FieldError::Resolver(e) => Error::Postgres(e),
            FieldError::Refused(reason) => Error::BadRow {
                location: self
                    .locate(block, start)
                    .field(self.columns[col].name.clone(), rec.field(&block.data, col)),
                reason,
            },
        }
    }

    /// Names the field of the record at `start` (already parsed into `rec`) that holds the
    /// bad byte at `bad`.
    fn encoding_error(&self, block: &Block, start: usize, rec: &Record, bad: usize) -> Error {
        let data = &block.data[..];
        let reason = format!(
            "invalid byte sequence for encoding \"UTF8\": {}",
            data[bad..]
                .iter()
                .take(2)
                .map(|b| format!("0x{b:02x}"))
                .collect::<Vec<_>>()
                .join(" ")
        );
        let location = self.locate(block, start);
        let field = (0..rec.len().min(self.columns.len())).find(|&i| {
            rec.field(data, i)
                .is_some_and(|f| std::str::from_utf8(f).is_err() || f.contains(&0))
        });
        let location = match field {
            Some(i) => location.field(self.columns[i].name.clone(), rec.field(data, i)),
            None => location,
        };
        Error::BadRow { location, reason }
    }

    /// The location of the record starting at byte `start` of `block`.
    pub fn locate(&self, block: &Block, start: usize) -> Location {
        let breaks = memchr::memchr_iter(self.line_break, &block.data[..start]).count() as u64;
        Location::record(self.file.clone(), block.first_line + breaks)
    }

    /// Row `i` of a chunk: its original bytes and where it starts (for the reject file).
    pub fn row_source<'c>(
        &self,
        chunk: &'c Chunk,
        index: &'c RowsIndex,
        i: usize,
    ) -> (&'c [u8], Location) {
        let (start, end) = (index.records[i].0 as usize, index.records[i].1 as usize);
        let block = Block {
            index: 0,
            first_line: chunk.first_line,
            offset: chunk.offset,
            lines: 0,
            data: index.block.clone(),
        };
        (&index.block[start..end], self.locate(&block, start))
    }

    /// Finds row `index` (0-based) of a chunk again by re-reading its block from the input file;
    /// `None` when the input cannot be re-read (standard input, compressed).
    pub fn locate_row(
        &self,
        chunk_first_line: u64,
        offset: u64,
        len: usize,
        index: u64,
    ) -> Option<Location> {
        if !self.seekable {
            return None;
        }
        let data = inrush_read::source::read_range(&self.file, offset, len).ok()?;
        let block = Block {
            index: 0,
            first_line: chunk_first_line,
            offset,
            lines: 0,
            data: Bytes::from(data),
        };
        let mut rec = Record::default();
        let mut pos = 0;
        for _ in 0..index {
            pos = self.parser.parse(&block.data, pos, &mut rec).ok()?;
        }
        Some(self.locate(&block, pos))
    }
}

/// `Err(position)` of the first byte that is not valid UTF-8 or is NUL (which no text type
/// can hold).
fn check_encoding(data: &[u8]) -> Result<(), usize> {
    if let Err(e) = std::str::from_utf8(data) {
        return Err(e.valid_up_to());
    }
    match memchr::memchr(0, data) {
        Some(pos) => Err(pos),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoding_check_finds_the_first_bad_byte() {
        assert_eq!(check_encoding("héllo".as_bytes()), Ok(()));
        assert_eq!(check_encoding(b"ab\xe9cd"), Err(2));
        assert_eq!(check_encoding(b"abc\0"), Err(3));
    }
}
