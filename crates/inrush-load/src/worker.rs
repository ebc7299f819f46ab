//! What one parse/encode worker does with a block: read every record (CSV or JSON lines), hand
//! its fields to the engine's [`RowWriter`], gather the rows into a chunk, and say exactly where
//! and why when a row cannot be loaded.

use crate::encoder::{gathered, At, PlainFields, Refused, RowEncoder, RowWriter, ValueTexts};
use crate::rejects::Rejects;
use crate::route::{self, Route};
use crate::shared::{Shared, CANCEL_POLL};
use crate::sources::{Columnar, Source, Sources, Unit, Work};
use crate::{Error, Result};
use bytes::Bytes;
use inrush_arrow::{Coercion, Part, Prepared, RecordBatch};
use inrush_core::query::TextRows;
use inrush_core::{Location, TargetColumn};
use inrush_read::csv::{Block, BlockParser, Record, RecordParser};
use inrush_read::encoding::Encoding;
use inrush_read::jsonl::{JsonFields, JsonLineParser};
use std::borrow::Cow;
use std::sync::atomic::Ordering;
use std::sync::Arc;

pub use crate::chunk::{Chunk, Order, RowsIndex};

/// The rows of a columnar part encoded so far, and with rejects allowed, what finds them again.
struct ChunkRows {
    out: Vec<u8>,
    rows: u64,
    source: u32,
    /// The part's index, or a stream slice's first row: what the chunks' `offset` holds.
    part: u64,
    /// The row number of the chunk's first row.
    first_row: Option<u64>,
    index: Option<PartIndex>,
    capacity: usize,
}

/// A [`RowsIndex`] being built for a columnar chunk: its rows as CSV, where each tuple and
/// row is, and each row's number in its file.
#[derive(Default)]
struct PartIndex {
    block: Vec<u8>,
    tuples: Vec<u32>,
    records: Vec<(u32, u32)>,
    numbers: Vec<u64>,
}

impl ChunkRows {
    fn new(plan: &WorkerPlan, source: u32, part: u64, indexed: bool) -> Self {
        let capacity = plan.chunk_bytes + plan.chunk_bytes / 4;
        ChunkRows {
            out: Vec::with_capacity(capacity),
            rows: 0,
            source,
            part,
            first_row: None,
            index: indexed.then(Default::default),
            capacity,
        }
    }

    fn push(&mut self, tuple_start: u32, row_number: u64, csv: impl FnOnce() -> Vec<u8>) {
        self.rows += 1;
        self.first_row.get_or_insert(row_number);
        if let Some(index) = &mut self.index {
            let start = index.block.len() as u32;
            index.block.extend_from_slice(&csv());
            index.tuples.push(tuple_start);
            index.records.push((start, index.block.len() as u32));
            index.numbers.push(row_number);
        }
    }

    /// The rows so far as a chunk; starts a new one.
    fn take(&mut self, next_row: u64) -> Chunk {
        let out = std::mem::replace(&mut self.out, Vec::with_capacity(self.capacity));
        let first_line = self.first_row.take().unwrap_or(next_row);
        let rows = std::mem::take(&mut self.rows);
        let index = self.index.as_mut().map(std::mem::take);
        Chunk {
            data: Bytes::from(out),
            rows,
            source: self.source,
            located: true,
            first_line,
            next_line: next_row + 1,
            offset: self.part,
            len: 0,
            rows_index: index.map(|index| RowsIndex {
                block: Bytes::from(index.block),
                tuples: index.tuples,
                records: index.records,
                row_numbers: Some(index.numbers),
            }),
            order: Order::default(),
            dest: 0,
            picked: None,
            pieces: None,
        }
    }
}

/// How records are read out of a block.
pub enum Decode {
    /// COPY's CSV, with each source's own parser (line endings differ between files).
    Csv,
    /// One JSON object per line.
    Jsonl(JsonLineParser),
}

/// Everything a worker needs, shared read-only by all workers.
pub struct WorkerPlan {
    pub decode: Decode,
    pub sources: Arc<Sources>,
    pub columns: Vec<TargetColumn>,
    /// The engine's encoder.
    pub rows: Box<dyn RowEncoder>,
    /// Columnar sources: per source, which fields feed the columns and how (empty otherwise).
    pub arrow: Vec<ArrowPlan>,
    /// Encoded bytes after which a columnar part's rows go out as a chunk (memory stays
    /// bounded whatever the row group's size).
    pub chunk_bytes: usize,
    /// Rows split by destination before they are sent ([`crate::route`]).
    pub route: Option<Box<dyn Route>>,
    /// Routed, a block's pieces go out together ([`Chunk::pieces`]): its sink commits it
    /// whole, on every server it has rows for (`--resume`).
    pub whole_blocks: bool,
}

/// How the fields of one columnar file go into the columns.
pub struct ArrowPlan {
    pub projection: Vec<usize>,
    pub coercions: Vec<Coercion>,
}

impl ArrowPlan {
    /// Checks every (field, column) pair before any row is read.
    pub fn new(
        source: &Source,
        projection: Vec<usize>,
        columns: &[TargetColumn],
        rows: &dyn RowEncoder,
    ) -> Result<Self> {
        let file = source
            .arrow
            .as_ref()
            .ok_or_else(|| Error::Internal("a columnar source without its file".into()))?;
        let schema = file.schema();
        let coercions = projection
            .iter()
            .zip(columns)
            .enumerate()
            .map(|(at, (&i, column))| rows.coercion(schema.field(i), at, column))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ArrowPlan {
            projection,
            coercions,
        })
    }
}

/// One CSV line (quoted fields, `None` as an empty unquoted field), for reject files of
/// columnar inputs and their header.
pub fn csv_line<'v>(values: impl Iterator<Item = Option<&'v str>>) -> Vec<u8> {
    let mut line = Vec::new();
    for (i, value) in values.enumerate() {
        if i > 0 {
            line.push(b',');
        }
        if let Some(v) = value {
            line.push(b'"');
            line.extend_from_slice(v.replace('"', "\"\"").as_bytes());
            line.push(b'"');
        }
    }
    line.push(b'\n');
    line
}

/// Bits of [`At::position`] for the position within one input (256 TiB); the source's number
/// sits above them, within a positive bigint.
const POSITION_BITS: u32 = 48;

/// The workers' plan finds a routed chunk's rows in the inputs.
impl route::Locate for WorkerPlan {
    fn row_source<'c>(
        &self,
        chunk: &'c Chunk,
        index: &'c RowsIndex,
        row: usize,
    ) -> (&'c [u8], Location) {
        WorkerPlan::row_source(self, chunk, index, row)
    }

    fn locate(&self, chunk: &Chunk, row: u64) -> Location {
        let at = (chunk.source, chunk.first_line, chunk.offset, chunk.len);
        self.locate_row(at.0, at.1, at.2, at.3, row)
            .unwrap_or_else(|| self.chunk_location(chunk.source, chunk.first_line))
    }
}

/// A record read out of a block: CSV fields in the block, or a JSON line's values.
enum Fields<'a> {
    /// `plain_block`: the block holds none of the bytes [`PlainFields`] speaks of.
    Csv(&'a Record, bool),
    Jsonl(&'a JsonFields<'a>),
}

impl<'a> Fields<'a> {
    fn len(&self) -> usize {
        match self {
            Fields::Csv(rec, _) => rec.len(),
            Fields::Jsonl(fields) => fields.len(),
        }
    }

    fn get(&self, data: &'a [u8], i: usize) -> Option<&'a [u8]> {
        match self {
            Fields::Csv(rec, _) => rec.field(data, i),
            Fields::Jsonl(fields) => fields.get(i).and_then(|f| f.as_deref()).map(str::as_bytes),
        }
    }

    /// The fields another target may copy without escaping: a CSV field cut from a plain
    /// block as it is (a quoted one may hold a line feed, and a JSON string anything once
    /// decoded).
    fn plain(&self) -> PlainFields {
        let Fields::Csv(rec, true) = self else {
            return PlainFields::default();
        };
        PlainFields::from_flags((0..rec.len()).map(|i| rec.in_block(i)))
    }
}

impl WorkerPlan {
    /// Runs until the block queue closes, the chunk queue closes, or the load is cancelled.
    /// Returns how many values the engine read for this worker one by one.
    pub fn run(
        &self,
        shared: &Shared,
        work: flume::Receiver<Work>,
        chunks: flume::Sender<Chunk>,
    ) -> u64 {
        // A CSV field comes from a block checked to hold no NUL byte (or a record checked on
        // its own), so its text needs no second look; a JSON string can decode to one.
        let mut rows = self.rows.worker(matches!(self.decode, Decode::Csv));
        let rows = rows.as_mut();
        loop {
            let work = match work.recv_timeout(CANCEL_POLL) {
                Ok(work) => work,
                Err(flume::RecvTimeoutError::Timeout) if !shared.is_cancelled() => continue,
                Err(_) => break,
            };
            if shared.is_cancelled() {
                break;
            }
            let mut piece = 0;
            let mut send_one = |mut chunk: Chunk, last: bool| {
                chunk.order = Order {
                    unit: work.seq,
                    piece,
                    last,
                };
                piece += 1;
                let rows = chunk.rows;
                let sent = chunks.send(chunk).is_ok();
                shared.progress.rows_sent.fetch_add(rows, Ordering::Relaxed);
                sent
            };
            // Routed, a chunk goes out as its pieces; the unit still ends with a last one.
            let mut send = |chunk: Chunk, last: bool| match &self.route {
                None => send_one(chunk, last),
                Some(route) => {
                    match route::split(
                        &chunk,
                        &*self.rows,
                        route.as_ref(),
                        self,
                        shared.rejects.as_ref(),
                    ) {
                        Ok(pieces) if self.whole_blocks => {
                            send_one(route::bundle(chunk, pieces), last)
                        }
                        Ok(pieces) if pieces.is_empty() => send_one(Chunk::empty(), last),
                        Ok(pieces) => {
                            let n = pieces.len();
                            pieces
                                .into_iter()
                                .enumerate()
                                .all(|(i, p)| send_one(p, last && i + 1 == n))
                        }
                        Err(e) => {
                            shared.fail(e);
                            false
                        }
                    }
                }
            };
            let done = match &work.unit {
                Unit::Block(block) => self
                    .encode_block(work.source, block, rows, shared.rejects.as_ref())
                    .map(|chunk| send(chunk, true)),
                // A query's binary tuples, already in the target's types and column order.
                Unit::Tuples(block) => Ok(send(
                    Chunk {
                        data: block.data.clone(),
                        rows: block.lines,
                        source: work.source,
                        located: true,
                        first_line: block.first_line,
                        next_line: block.first_line + block.lines,
                        offset: block.offset,
                        len: block.data.len(),
                        rows_index: None,
                        order: Order::default(),
                        dest: 0,
                        picked: None,
                        pieces: None,
                    },
                    true,
                )),
                Unit::Batch(first_row, batch) => {
                    self.encode_slice(work.source, *first_row, batch, rows, shared, &mut send)
                }
                Unit::Rows(first_row, block) => {
                    let sent =
                        self.encode_rows(work.source, *first_row, block, rows, shared, &mut send);
                    let bytes = block.data().len() as u64;
                    shared
                        .progress
                        .bytes_read
                        .fetch_add(bytes, Ordering::Relaxed);
                    sent
                }
                Unit::Part(part) => {
                    let sent = self.encode_part(work.source, part, rows, shared, &mut send);
                    shared
                        .progress
                        .bytes_read
                        .fetch_add(part.bytes, Ordering::Relaxed);
                    sent
                }
            };
            match done {
                Ok(true) => {}
                Ok(false) => break,
                Err(e) => {
                    shared.fail(e);
                    break;
                }
            }
        }
        rows.round_trips()
    }

    fn source(&self, source: u32) -> &Source {
        &self.sources.list[source as usize]
    }

    /// Encodes every record of a block. A refused row is written to `rejects` when the user
    /// allows rejects, else it ends the load.
    fn encode_block(
        &self,
        source: u32,
        block: &Block,
        rows_out: &mut dyn RowWriter,
        rejects: Option<&Rejects>,
    ) -> Result<Chunk> {
        // Single-byte encodings become UTF-8 here, on every core; the rest of the block's way
        // (parsing, rejects, finding a row again) sees the UTF-8, while offsets and the length
        // the resume ledger keeps stay the file's.
        let raw_len = block.data.len();
        let block = &match self.source(source).encoding().to_utf8(&block.data) {
            Cow::Borrowed(_) => block.clone(),
            Cow::Owned(utf8) => Block {
                data: Bytes::from(utf8),
                ..block.clone()
            },
        };
        let data = &block.data[..];
        // Checked once per block; only a block with a bad byte is checked record by record.
        let block_is_valid = check_encoding(data).is_ok();
        let mut out = Vec::with_capacity(data.len() + data.len() / 4 + 64);
        let mut rows = 0u64;
        let mut index = rejects.map(|_| (Vec::new(), Vec::new()));
        let mut reader = RecordReader::new(self, source, data)?;
        let mut pos = 0;
        while pos < data.len() {
            let start = pos;
            let tuple_start = out.len() as u32;
            let outcome = match reader.read(start, block_is_valid) {
                // A blank line in JSON lines: no record.
                Ok(None) => None,
                Ok(Some(fields)) => {
                    let at = (source, block, start);
                    Some(self.encode_fields(at, &fields, rows_out, &mut out))
                }
                Err(reason) => {
                    let mut location = self.locate(source, block, start);
                    // A CSV record with a bad byte: name the field that holds it.
                    if let Some(i) = reader.bad_field().filter(|&i| i < self.columns.len()) {
                        location =
                            location.field(self.columns[i].name.clone(), reader.rec.field(data, i));
                    }
                    Some(Err(Error::BadRow { location, reason }))
                }
            };
            let next = reader.next;
            let Some(encoded) = outcome else {
                pos = next;
                continue;
            };
            match encoded {
                Ok(_) => {
                    rows += 1;
                    if let Some((tuples, records)) = &mut index {
                        tuples.push(tuple_start);
                        records.push((start as u32, next as u32));
                    }
                }
                Err(Error::BadRow { location, reason }) if rejects.is_some() => {
                    if let Some(rejects) = rejects {
                        let raw = &data[start..next];
                        rejects.reject(
                            raw,
                            reader.leaves_quote_open(raw),
                            &location,
                            &reason,
                            None,
                        )?;
                    }
                }
                Err(error) => return Err(error),
            }
            pos = next;
        }
        Ok(Chunk {
            data: Bytes::from(out),
            rows,
            source,
            located: true,
            first_line: block.first_line,
            next_line: block.first_line + block.lines,
            offset: block.offset,
            len: raw_len,
            rows_index: index.map(|(tuples, records)| RowsIndex {
                block: block.data.clone(),
                tuples,
                records,
                row_numbers: None,
            }),
            order: Order::default(),
            dest: 0,
            picked: None,
            pieces: None,
        })
    }

    /// Reads one part of a columnar file and encodes its rows (see [`Self::encode_batches`]).
    fn encode_part(
        &self,
        source: u32,
        part: &Part,
        rows: &mut dyn RowWriter,
        shared: &Shared,
        send: &mut dyn FnMut(Chunk, bool) -> bool,
    ) -> Result<bool> {
        let plan = self.arrow_plan(source)?;
        let Some(Columnar::File(file)) = &self.source(source).arrow else {
            return Err(Error::Internal("a part from a source with no file".into()));
        };
        let batches = file.read_part(part.index, &plan.projection)?;
        let (id, first_row) = (part.index as u64, part.first_row);
        self.encode_batches(source, id, first_row, batches, rows, shared, send)
    }

    /// Encodes a slice of a stream's batch, its columns taken in the target's order.
    fn encode_slice(
        &self,
        source: u32,
        first_row: u64,
        batch: &RecordBatch,
        rows: &mut dyn RowWriter,
        shared: &Shared,
        send: &mut dyn FnMut(Chunk, bool) -> bool,
    ) -> Result<bool> {
        let plan = self.arrow_plan(source)?;
        let projected = batch
            .project(&plan.projection)
            .map_err(|e| Error::Internal(format!("projecting a stream's batch: {e}")))?;
        self.encode_batches(
            source,
            first_row,
            first_row,
            Box::new(std::iter::once(Ok(projected))),
            rows,
            shared,
            send,
        )
    }

    fn arrow_plan(&self, source: u32) -> Result<&ArrowPlan> {
        self.arrow
            .get(source as usize)
            .ok_or_else(|| Error::Internal("a part from a source with no columnar plan".into()))
    }

    /// Encodes the rows of columnar batches (`first_row`: the 0-based number of their first
    /// row; `id`: what their chunks' offset holds), sending a chunk every `chunk_bytes` and
    /// always a last one (empty if need be, so the unit's end is known). Returns false when
    /// the chunk queue closed.
    #[allow(clippy::too_many_arguments)]
    fn encode_batches(
        &self,
        source: u32,
        id: u64,
        first_row: u64,
        batches: inrush_arrow::PartBatches,
        rows: &mut dyn RowWriter,
        shared: &Shared,
        send: &mut dyn FnMut(Chunk, bool) -> bool,
    ) -> Result<bool> {
        let input = self.source(source);
        let plan = self.arrow_plan(source)?;
        let rejects = shared.rejects.as_ref();
        let mut batch_rows = ChunkRows::new(self, source, id, rejects.is_some());
        let mut row_number = first_row;
        let mut texts = ValueTexts::default();
        // One batch decoded at a time: a part (a Parquet row group) may be far larger.
        for batch in batches {
            if shared.is_cancelled() {
                return Ok(false);
            }
            let batch = batch?;
            // Downcast each column once per batch, not once per value.
            let columns: Vec<Prepared> = batch
                .columns()
                .iter()
                .zip(&plan.coercions)
                .map(|(array, coercion)| coercion.prepare(array.as_ref()))
                .collect();
            let plain = PlainFields::from_flags(columns.iter().map(Prepared::text_is_plain));
            for row in 0..batch.num_rows() {
                row_number += 1;
                let tuple_start = batch_rows.out.len() as u32;
                let at = At {
                    plain,
                    position: self.position(source, row_number),
                };
                let out = &mut batch_rows.out;
                match rows.arrow_row(&columns, row, at, &mut texts, out) {
                    Ok(()) => {
                        batch_rows.push(tuple_start, row_number, || Self::row_as_csv(&columns, row))
                    }
                    Err(Refused::Failed(error)) => return Err(error),
                    Err(Refused::Value(col, reason)) => {
                        let text = &mut texts.text;
                        text.clear();
                        columns[col].text(row, text);
                        let null = columns[col].is_null(row);
                        let location = Location::row(input.name.clone(), row_number).field(
                            self.columns[col].name.clone(),
                            (!null).then_some(text.as_bytes()),
                        );
                        let Some(rejects) = rejects else {
                            return Err(Error::BadRow { location, reason });
                        };
                        rejects.reject(
                            &Self::row_as_csv(&columns, row),
                            false,
                            &location,
                            &reason,
                            None,
                        )?;
                    }
                }
                if batch_rows.out.len() >= self.chunk_bytes
                    && !send(batch_rows.take(row_number), false)
                {
                    return Ok(false);
                }
            }
        }
        Ok(send(batch_rows.take(row_number), true))
    }

    /// Encodes a block of a query's rows (`first_row`: the 0-based number of its first), sent
    /// in chunks as a columnar part's rows are. Returns false when the chunk queue closed.
    fn encode_rows(
        &self,
        source: u32,
        first_row: u64,
        block: &TextRows,
        rows: &mut dyn RowWriter,
        shared: &Shared,
        send: &mut dyn FnMut(Chunk, bool) -> bool,
    ) -> Result<bool> {
        let input = self.source(source);
        let rejects = shared.rejects.as_ref();
        let mut chunk = ChunkRows::new(self, source, first_row, rejects.is_some());
        let data = block.data();
        // Checked once per block; only a block with a bad byte is checked value by value.
        let block_is_valid = check_encoding(data).is_ok();
        let plain = match self.rows.reads_plain()
            && memchr::memchr3(b'\\', b'\t', b'\r', data).is_none()
            && memchr::memchr(b'\n', data).is_none()
        {
            true => PlainFields::from_flags(self.columns.iter().map(|_| true)),
            false => PlainFields::default(),
        };
        let mut row_number = first_row;
        for r in 0..block.rows() {
            row_number += 1;
            let location = || Location::row(input.name.clone(), row_number);
            let bad_byte = (!block_is_valid)
                .then(|| {
                    block.row(r).enumerate().find_map(|(i, value)| {
                        let bad = check_encoding(value?).err()?;
                        Some((i, value?, bad))
                    })
                })
                .flatten();
            let width = block.row(r).len();
            let refused = if width != self.columns.len() {
                Some((location(), self.field_count_reason(width)))
            } else if let Some((i, value, bad)) = bad_byte {
                let reason = input.encoding().undecodable_reason(&value[bad..]);
                let column = self.columns[i].name.clone();
                Some((location().field(column, Some(value)), reason))
            } else {
                let tuple_start = chunk.out.len() as u32;
                let at = At {
                    plain,
                    position: self.position(source, row_number),
                };
                // Safe: the values were checked to be UTF-8, with their block or just above.
                let values = block
                    .row(r)
                    .map(|v| v.map(|b| unsafe { std::str::from_utf8_unchecked(b) }));
                match gathered(width, values, |values| rows.row(values, at, &mut chunk.out)) {
                    Ok(()) => {
                        chunk.push(tuple_start, row_number, || Self::text_row_as_csv(block, r));
                        None
                    }
                    Err(Refused::Failed(error)) => return Err(error),
                    Err(Refused::Value(i, reason)) => {
                        let value = block.row(r).nth(i).flatten();
                        let column = self.columns[i].name.clone();
                        Some((location().field(column, value), reason))
                    }
                }
            };
            if let Some((location, reason)) = refused {
                let Some(rejects) = rejects else {
                    return Err(Error::BadRow { location, reason });
                };
                let line = Self::text_row_as_csv(block, r);
                rejects.reject(&line, false, &location, &reason, None)?;
            }
            if chunk.out.len() >= self.chunk_bytes && !send(chunk.take(row_number), false) {
                return Ok(false);
            }
        }
        Ok(send(chunk.take(row_number), true))
    }

    /// A query's row as a CSV line (for the reject file).
    fn text_row_as_csv(block: &TextRows, row: usize) -> Vec<u8> {
        let texts: Vec<Option<Cow<str>>> = block
            .row(row)
            .map(|v| v.map(String::from_utf8_lossy))
            .collect();
        csv_line(texts.iter().map(|t| t.as_deref()))
    }

    /// A columnar row as a CSV line of its values' text forms (for the reject file).
    fn row_as_csv(columns: &[Prepared], row: usize) -> Vec<u8> {
        let texts: Vec<Option<String>> = columns
            .iter()
            .map(|column| {
                (!column.is_null(row)).then(|| {
                    let mut value = String::new();
                    column.text(row, &mut value);
                    value
                })
            })
            .collect();
        csv_line(texts.iter().map(|t| t.as_deref()))
    }

    /// Checks the field count and writes the record at `start` of `block`.
    fn encode_fields(
        &self,
        (source, block, start): (u32, &Block, usize),
        fields: &Fields<'_>,
        rows: &mut dyn RowWriter,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        let data = &block.data[..];
        if fields.len() != self.columns.len() {
            return Err(Error::BadRow {
                location: self.locate(source, block, start),
                reason: self.field_count_reason(fields.len()),
            });
        }
        let at = At {
            plain: fields.plain(),
            position: self.position(source, block.offset + start as u64),
        };
        // Safe: the record was checked to be UTF-8 (with its block, or on its own), and fields
        // are cut at ASCII bytes (or are JSON strings decoded into UTF-8).
        let text = |i| {
            let field = fields.get(data, i);
            field.map(|b| unsafe { std::str::from_utf8_unchecked(b) })
        };
        let values = (0..fields.len()).map(text);
        gathered(fields.len(), values, |values| rows.row(values, at, out)).map_err(|refused| {
            match refused {
                Refused::Failed(error) => error,
                Refused::Value(col, reason) => Error::BadRow {
                    location: self
                        .locate(source, block, start)
                        .field(self.columns[col].name.clone(), fields.get(data, col)),
                    reason,
                },
            }
        })
    }

    /// A record's place in the whole input ([`At::position`]): its source's number above its
    /// `position` there (a byte offset, or a columnar row's number), so the rows of a later
    /// input come after every row of an earlier one.
    fn position(&self, source: u32, position: u64) -> u64 {
        (u64::from(source) << POSITION_BITS) | position
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

    /// The location of the record starting at byte `start` of `block`.
    pub fn locate(&self, source: u32, block: &Block, start: usize) -> Location {
        let source = self.source(source);
        let breaks = memchr::memchr_iter(source.line_break(), &block.data[..start]).count() as u64;
        Location::record(source.name.clone(), block.first_line + breaks)
    }

    /// Row `i` of a chunk: its original bytes and where it starts (for the reject file).
    pub fn row_source<'c>(
        &self,
        chunk: &'c Chunk,
        index: &'c RowsIndex,
        i: usize,
    ) -> (&'c [u8], Location) {
        let (start, end) = (index.records[i].0 as usize, index.records[i].1 as usize);
        if let Some(numbers) = &index.row_numbers {
            let location = Location::row(self.source(chunk.source).name.clone(), numbers[i]);
            return (&index.block[start..end], location);
        }
        let block = Block {
            index: 0,
            first_line: chunk.first_line,
            offset: chunk.offset,
            lines: 0,
            data: index.block.clone(),
        };
        (
            &index.block[start..end],
            self.locate(chunk.source, &block, start),
        )
    }

    /// The text of `column`'s field in the record `raw` of `source` (a row the engine refused,
    /// whose message named the column), when the record can be read again on its own.
    pub fn field_text(&self, source: u32, raw: &[u8], column: &str) -> Option<Vec<u8>> {
        let i = self
            .columns
            .iter()
            .position(|c| c.name == column)
            .or_else(|| {
                let folded = |c: &&TargetColumn| c.name.eq_ignore_ascii_case(column);
                self.columns.iter().position(|c| folded(&c))
            })?;
        match &self.decode {
            Decode::Csv => {
                let mut rec = Record::default();
                self.source(source).parser()?.parse(raw, 0, &mut rec).ok()?;
                rec.field(raw, i).map(<[u8]>::to_vec)
            }
            Decode::Jsonl(json) => {
                let line = std::str::from_utf8(raw)
                    .ok()?
                    .trim_end_matches(['\r', '\n']);
                let mut fields = Vec::new();
                json.parse(line, &mut fields).ok()?;
                fields.get(i)?.as_ref().map(|f| f.as_bytes().to_vec())
            }
        }
    }

    /// Where a chunk starts, when its rows cannot be told apart.
    pub fn chunk_location(&self, source: u32, first_line: u64) -> Location {
        Location::record(self.source(source).name.clone(), first_line)
    }

    /// Finds row `index` (0-based) of a chunk again by re-reading its block from the input file;
    /// `None` when the input cannot be re-read (standard input, compressed, a query).
    pub fn locate_row(
        &self,
        source: u32,
        first_line: u64,
        offset: u64,
        len: usize,
        index: u64,
    ) -> Option<Location> {
        let input = self.source(source);
        let numbered =
            self.sources.passthrough.get().is_some() || self.sources.reads_rows(source as usize);
        if input.arrow.is_some() || numbered {
            // Columnar parts without rejects, and a query's rows or binary tuples, hold
            // consecutive rows numbered from the chunk's first.
            return Some(Location::row(input.name.clone(), first_line + index));
        }
        if !input.rereadable() {
            return None;
        }
        let data = inrush_read::source::read_range(&input.name, offset, len).ok()?;
        let block = Block {
            index: 0,
            first_line,
            offset,
            lines: 0,
            data: Bytes::from(input.encoding().to_utf8(&data).into_owned()),
        };
        let mut reader = RecordReader::new(self, source, &block.data).ok()?;
        let block_is_valid = check_encoding(&block.data).is_ok();
        let mut pos = 0;
        let mut seen = 0;
        loop {
            // Rows are counted as the worker counted them: blank JSON lines are not rows.
            let is_row = matches!(reader.read(pos, block_is_valid), Ok(Some(_)) | Err(_));
            if is_row {
                if seen == index {
                    return Some(self.locate(source, &block, pos));
                }
                seen += 1;
            }
            pos = reader.next;
            if pos >= block.data.len() {
                return None;
            }
        }
    }
}

/// Reads the records of one block, whatever the input format; `next` is where the record
/// after the last one read starts (also after a bad record).
struct RecordReader<'a> {
    data: &'a [u8],
    /// What the source was in before it became UTF-8, for the reason of a bad byte.
    encoding: Encoding,
    syntax: Syntax<'a>,
    rec: Record,
    json: JsonFields<'a>,
    next: usize,
    /// Another target's CSV block holds no backslash, tab or carriage return (NUL is refused
    /// before a record is encoded), so its unquoted fields need no escaping.
    plain_block: bool,
}

/// How the records of one block are written.
enum Syntax<'a> {
    Csv(BlockParser<'a>, &'a RecordParser),
    Jsonl(&'a JsonLineParser),
}

impl<'a> RecordReader<'a> {
    fn new(plan: &'a WorkerPlan, source: u32, data: &'a [u8]) -> Result<Self> {
        let syntax = match &plan.decode {
            Decode::Csv => {
                let parser = plan
                    .source(source)
                    .parser()
                    .ok_or_else(|| Error::Internal("a block from a source never opened".into()))?;
                Syntax::Csv(parser.block(data), parser)
            }
            Decode::Jsonl(parser) => Syntax::Jsonl(parser),
        };
        let plain_block = plan.rows.reads_plain()
            && matches!(syntax, Syntax::Csv(..))
            && memchr::memchr3(b'\\', b'\t', b'\r', data).is_none();
        Ok(RecordReader {
            data,
            encoding: plan.source(source).encoding(),
            syntax,
            rec: Record::default(),
            json: Vec::new(),
            next: 0,
            plain_block,
        })
    }

    /// The record at `start`: its fields, `None` for a blank JSON line, or why it is bad.
    /// `block_is_valid`: the whole block is known to be UTF-8 without NUL.
    fn read(&mut self, start: usize, block_is_valid: bool) -> Result<Option<Fields<'_>>, String> {
        let data = self.data;
        let parser = match &self.syntax {
            Syntax::Jsonl(parser) => *parser,
            Syntax::Csv(block, parser) => {
                self.next = match block.parse(start, &mut self.rec) {
                    Ok(next) => next,
                    Err(e) => {
                        self.next = parser.record_end(data, start);
                        return Err(e.to_string());
                    }
                };
                if !block_is_valid {
                    if let Err(bad) = check_encoding(&data[start..self.next]) {
                        return Err(self.encoding.undecodable_reason(&data[start + bad..]));
                    }
                }
                return Ok(Some(Fields::Csv(&self.rec, self.plain_block)));
            }
        };
        let end = memchr::memchr(b'\n', &data[start..]).map_or(data.len(), |i| start + i);
        self.next = (end + 1).min(data.len());
        let line = &data[start..end];
        if !block_is_valid {
            if let Err(bad) = check_encoding(line) {
                return Err(self.encoding.undecodable_reason(&line[bad..]));
            }
        }
        // Checked with its block or just above.
        let line = unsafe { std::str::from_utf8_unchecked(line) };
        if line.trim().is_empty() {
            return Ok(None);
        }
        match parser.parse(line, &mut self.json) {
            Ok(()) => Ok(Some(Fields::Jsonl(&self.json))),
            Err(e) => Err(match e.key {
                Some(key) => format!("{key}: {}", e.reason),
                None => e.reason,
            }),
        }
    }

    /// After an encoding error in a CSV record: the first field that is not UTF-8 or has a NUL.
    fn bad_field(&self) -> Option<usize> {
        if !matches!(self.syntax, Syntax::Csv(..)) {
            return None;
        }
        (0..self.rec.len()).find(|&i| {
            self.rec
                .field(self.data, i)
                .is_some_and(|f| std::str::from_utf8(f).is_err() || f.contains(&0))
        })
    }

    /// Whether a bad record's bytes leave a CSV quote open (so its reject line needs closing).
    fn leaves_quote_open(&self, raw: &[u8]) -> bool {
        match &self.syntax {
            Syntax::Csv(_, parser) => parser.leaves_quote_open(raw),
            Syntax::Jsonl(_) => false,
        }
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
