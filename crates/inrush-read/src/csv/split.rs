//! Cutting a byte stream into blocks of whole records, so records can be parsed on every core.
//!
//! The cut is made by one sequential scan that tracks quote state exactly as COPY's line reader
//! does (`CopyReadLineText`): a quote toggles quoted text anywhere in a record, and inside quoted
//! text an escape character (when it differs from the quote) protects the character after it. A
//! line break inside quotes is therefore never taken for a record end, whatever the block size.
//! The scan only looks at quote, escape and line-ending bytes (`memchr`), so it runs far faster
//! than parsing and one thread keeps every parser busy; it also works on streams that cannot seek
//! (standard input, gzip).

use super::{CsvOptions, Eol, QuoteState};
use crate::{Error, Result};
use bytes::{Bytes, BytesMut};
use memchr::{memchr2, memchr_iter};
use std::io::Read;

/// The longest record accepted: COPY's own limit on a field is 1 GB.
pub const MAX_RECORD_BYTES: usize = 1 << 30;

/// Reads of a block's size that fit in one buffer allocation (see `Splitter::fill`).
const READS_PER_ALLOCATION: usize = 4;

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// A run of whole records.
#[derive(Debug, Clone)]
pub struct Block {
    /// 0-based position of the block in the input.
    pub index: u64,
    /// 1-based line on which the block's first record starts.
    pub first_line: u64,
    /// Offset of the block's first byte in the (decompressed) input.
    pub offset: u64,
    /// Line breaks in the block: the next block starts on line `first_line + lines`.
    pub lines: u64,
    pub data: Bytes,
}

/// Iterates over the blocks of an input. See the module documentation for how cuts are found.
pub struct Splitter<R> {
    reader: R,
    name: String,
    opts: CsvOptions,
    eol: Option<Eol>,
    block_size: usize,
    buf: BytesMut,
    /// `buf[..scanned]` has been scanned; quote state below is valid at `scanned`.
    scanned: usize,
    quotes: QuoteState,
    /// End of the last whole record found in `buf[..scanned]`.
    boundary: Option<usize>,
    eof: bool,
    started: bool,
    /// Track quotes (CSV); off for line-per-record formats such as JSON lines.
    quoting: bool,
    next_index: u64,
    next_line: u64,
    next_offset: u64,
}

impl<R: Read> Splitter<R> {
    /// `block_size` is a target: a block ends at the first record end after that many bytes.
    pub fn new(reader: R, name: impl Into<String>, opts: CsvOptions, block_size: usize) -> Self {
        Splitter {
            reader,
            name: name.into(),
            opts,
            eol: None,
            block_size: block_size.max(1),
            buf: BytesMut::new(),
            scanned: 0,
            quotes: QuoteState::default(),
            boundary: None,
            eof: false,
            started: false,
            quoting: true,
            next_index: 0,
            next_line: 1,
            next_offset: 0,
        }
    }

    /// The line ending fixed by the first line; known after the first block or header.
    /// An input with no line break at all reads as `Lf`.
    /// Continues an input at a record boundary a previous run recorded: `reader` is positioned
    /// at byte `offset` of the input, which starts line `line`; `eol` is the input's line ending.
    /// With the same block size, every cut it makes is the one the previous run made.
    pub fn resume(
        reader: R,
        name: impl Into<String>,
        opts: CsvOptions,
        block_size: usize,
        offset: u64,
        line: u64,
        eol: Eol,
    ) -> Self {
        let mut splitter = Splitter::new(reader, name, opts, block_size);
        splitter.started = true;
        splitter.eol = Some(eol);
        splitter.next_offset = offset;
        splitter.next_line = line;
        splitter
    }

    /// Cuts at every line break, quotes or not: for JSON lines, where a line break can only
    /// end a record (JSON strings escape theirs).
    pub fn without_quotes(mut self) -> Self {
        self.quoting = false;
        self
    }

    /// Where the next block will start: (offset in the input, line).
    pub fn position(&self) -> (u64, u64) {
        (self.next_offset, self.next_line)
    }

    pub fn eol(&mut self) -> Result<Eol> {
        self.start()?;
        Ok(self.eol.unwrap_or(Eol::Lf))
    }

    /// Takes the first record off the input (a header), as raw bytes with its terminator.
    /// `None` for an empty input.
    pub fn take_first_record(&mut self) -> Result<Option<Block>> {
        self.start()?;
        loop {
            self.scan(0);
            if let Some(end) = self.boundary {
                return Ok(Some(self.emit(end)));
            }
            if self.eof {
                return Ok((!self.buf.is_empty()).then(|| self.emit(self.buf.len())));
            }
            self.fill()?;
        }
    }

    /// Reads the first bytes: drops a UTF-8 byte order mark and fixes the line ending.
    fn start(&mut self) -> Result<()> {
        if self.started {
            return Ok(());
        }
        self.started = true;
        while self.buf.len() < BOM.len() && !self.eof {
            self.fill()?;
        }
        if self.buf.starts_with(BOM) {
            let _ = self.buf.split_to(BOM.len());
            self.next_offset = BOM.len() as u64;
        }
        self.detect_eol()
    }

    /// COPY takes the first unquoted line break as the ending of every line.
    fn detect_eol(&mut self) -> Result<()> {
        let mut quotes = QuoteState::default();
        let mut i = 0;
        loop {
            while i < self.buf.len() {
                let c = self.buf[i];
                if self.quoting {
                    quotes.step(c, self.opts.quote, self.opts.escape);
                }
                if !quotes.in_quote() && (c == b'\n' || c == b'\r') {
                    if c == b'\n' {
                        self.eol = Some(Eol::Lf);
                        return Ok(());
                    }
                    if i + 1 < self.buf.len() {
                        self.eol = Some(if self.buf[i + 1] == b'\n' {
                            Eol::CrLf
                        } else {
                            Eol::Cr
                        });
                        return Ok(());
                    }
                    if self.eof {
                        self.eol = Some(Eol::Cr);
                        return Ok(());
                    }
                    break; // need the byte after `\r`
                }
                i += 1;
            }
            if self.eof {
                return Ok(());
            }
            if self.buf.len() > MAX_RECORD_BYTES {
                return Err(Error::RecordTooLong {
                    name: self.name.clone(),
                    limit: MAX_RECORD_BYTES,
                });
            }
            self.fill()?;
        }
    }

    /// Scans new bytes, remembering the last record end seen outside quotes; stops at the first
    /// record end at or past `min_end`.
    fn scan(&mut self, min_end: usize) {
        let term = self.eol.unwrap_or(Eol::Lf).terminator();
        let (quote, escape) = (self.opts.quote, self.opts.escape);
        let mut i = self.scanned;
        let end = self.buf.len();
        while i < end {
            if !self.quotes.in_quote() {
                // Outside quotes only a quote changes the state, so up to the next one every
                // terminator is a record end: the one wanted and the last before it are each
                // found in one pass, not one call per record.
                let rest = &self.buf[i..end];
                let plain = if self.quoting {
                    memchr::memchr(quote, rest).unwrap_or(rest.len())
                } else {
                    rest.len()
                };
                let plain_end = i + plain;
                if plain > 0 {
                    self.quotes.skip_plain();
                }
                let from = min_end.saturating_sub(1).max(i);
                if from < plain_end {
                    if let Some(off) = memchr::memchr(term, &self.buf[from..plain_end]) {
                        self.boundary = Some(from + off + 1);
                        self.scanned = from + off + 1;
                        return;
                    }
                }
                if let Some(off) = memchr::memrchr(term, &self.buf[i..plain_end.min(from)]) {
                    self.boundary = Some(i + off + 1);
                }
                i = plain_end;
                if i < end {
                    self.quotes.step(quote, quote, escape);
                    i += 1;
                }
                continue;
            }
            // Inside quotes a terminator is data: only the quote and the escape matter.
            let rest = &self.buf[i..end];
            let hit = if quote == escape {
                memchr::memchr(quote, rest)
            } else {
                memchr2(quote, escape, rest)
            };
            let Some(off) = hit else {
                // Plain bytes reset the "previous byte was an escape" state.
                if !rest.is_empty() {
                    self.quotes.skip_plain();
                }
                i = end;
                break;
            };
            let at = i + off;
            if off > 0 {
                self.quotes.skip_plain();
            }
            self.quotes.step(self.buf[at], quote, escape);
            i = at + 1;
        }
        self.scanned = i;
    }

    /// Reads more input into the buffer; sets `eof` when there is none.
    fn fill(&mut self) -> Result<()> {
        let want = self.block_size.clamp(64 * 1024, 8 * 1024 * 1024);
        // Emitted blocks share the buffer's allocation, so it never grows in place: `reserve`
        // copies the unread tail into a new one. Room for several reads at once makes that
        // copy happen once per few blocks instead of on every read (it was a copy of the
        // whole input).
        if self.buf.capacity() - self.buf.len() < want {
            self.buf.reserve(want * READS_PER_ALLOCATION);
        }
        let read = crate::source::read_more(&mut self.reader, &mut self.buf, want, &self.name)?;
        if read == 0 {
            self.eof = true;
        }
        Ok(())
    }

    /// Cuts `buf[..end]` off as the next block.
    fn emit(&mut self, end: usize) -> Block {
        let data = self.buf.split_to(end).freeze();
        self.scanned -= end.min(self.scanned);
        self.boundary = None;
        // Lines are counted in `\n` for every ending but CR-only, where `\r` is the line break.
        let term = self.eol.unwrap_or(Eol::Lf).terminator();
        let line_break = if term == b'\r' { b'\r' } else { b'\n' };
        let lines = memchr_iter(line_break, &data).count() as u64;
        let block = Block {
            index: self.next_index,
            first_line: self.next_line,
            offset: self.next_offset,
            lines,
            data,
        };
        self.next_index += 1;
        self.next_line += lines;
        self.next_offset += block.data.len() as u64;
        block
    }
}

impl<R: Read> Iterator for Splitter<R> {
    type Item = Result<Block>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Err(e) = self.start() {
            return Some(Err(e));
        }
        loop {
            self.scan(self.block_size);
            if let Some(end) = self.boundary {
                if end >= self.block_size || self.eof {
                    return Some(Ok(self.emit(end)));
                }
            }
            if self.eof {
                // The last record may lack a line break; an open quote is the parser's to report.
                return (!self.buf.is_empty()).then(|| Ok(self.emit(self.buf.len())));
            }
            if self.buf.len() > MAX_RECORD_BYTES && self.boundary.is_none() {
                return Some(Err(Error::RecordTooLong {
                    name: self.name.clone(),
                    limit: MAX_RECORD_BYTES,
                }));
            }
            if let Err(e) = self.fill() {
                return Some(Err(e));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::csv::record::tests::{parse_all, parse_block};
    use crate::csv::{cases, Record, RecordParser};
    use proptest::collection::vec;
    use proptest::prelude::*;

    /// Splits `data` with the given block size and parses each block on its own, as workers do.
    fn split_then_parse(
        data: &[u8],
        opts: &CsvOptions,
        block_size: usize,
    ) -> (Vec<Vec<Option<String>>>, Vec<u64>) {
        let mut splitter = Splitter::new(data, "t.csv", opts.clone(), block_size);
        let eol = splitter.eol().unwrap();
        let mut rows = Vec::new();
        let mut first_lines = Vec::new();
        for block in splitter {
            let block = block.unwrap();
            first_lines.push(block.first_line);
            rows.extend(parse_all(opts, eol, &block.data).unwrap());
        }
        (rows, first_lines)
    }

    /// Every block size from 1 byte to past the end must give the rows of one whole parse.
    fn assert_split_invariant(data: &[u8], opts: &CsvOptions) {
        let eol = Splitter::new(data, "t", opts.clone(), 1).eol().unwrap();
        let whole = parse_all(opts, eol, data).unwrap();
        for block_size in 1..=data.len() + 1 {
            let (rows, _) = split_then_parse(data, opts, block_size);
            assert_eq!(rows, whole, "block size {block_size}");
        }
    }

    #[test]
    fn adversarial_quotes_survive_every_cut() {
        let inputs: &[&[u8]] = &[
            b"1,\"a\nb\"\n2,\"\n\n\"\n3,\"\"\"\n\"\"\"\n",
            b"\"x\ny\",\"\"\"\"\n\"\n\",z\n,\n\n\"a\"\"\nb\"",
            b"ab\"c\nd\"e,1\n\"\",\"\n\"\n",
            b"a,\"b\r\nc\"\r\n\"d\"\"\r\n\"\r\n",
        ];
        for data in inputs {
            assert_split_invariant(data, &CsvOptions::default());
        }
        let backslash = CsvOptions {
            escape: b'\\',
            ..Default::default()
        };
        assert_split_invariant(
            b"\"a\\\"\nb\",c\n\"\\\\\",\"\n\\\"\"\nx\\,\"y\"\n",
            &backslash,
        );
    }

    #[test]
    fn generated_rows_survive_every_cut() {
        // Fields full of quotes, delimiters and line breaks, from a fixed seed.
        let mut rng = crate::generate::Rng::new(42);
        let pieces: [&[u8]; 6] = [b"a", b",", b"\n", b"\"\"", b"x y", b""];
        let mut data = Vec::new();
        for _ in 0..40 {
            for f in 0..3 {
                let quoted = rng.next_u64().is_multiple_of(2);
                if quoted {
                    data.push(b'"');
                }
                for _ in 0..(rng.next_u64() % 4) {
                    let piece = pieces[(rng.next_u64() % 6) as usize];
                    if quoted || !piece.iter().any(|&b| b == b',' || b == b'\n' || b == b'"') {
                        data.extend_from_slice(piece);
                    }
                }
                if quoted {
                    data.push(b'"');
                }
                data.push(if f == 2 { b'\n' } else { b',' });
            }
        }
        assert_split_invariant(&data, &CsvOptions::default());
    }

    #[test]
    fn blocks_know_their_first_line() {
        let data = b"a\n\"b\nc\"\nd\ne\n";
        let (rows, lines) = split_then_parse(data, &CsvOptions::default(), 1);
        assert_eq!(rows.len(), 4);
        assert_eq!(lines, vec![1, 2, 4, 5]);
    }

    #[test]
    fn bom_is_dropped_and_header_taken() {
        let data = b"\xEF\xBB\xBFid,name\r\n1,x\r\n";
        let mut splitter = Splitter::new(&data[..], "t", CsvOptions::default(), 1024);
        let header = splitter.take_first_record().unwrap().unwrap();
        assert_eq!(&header.data[..], b"id,name\r\n");
        assert_eq!(splitter.eol().unwrap(), Eol::CrLf);
        let rest: Vec<Block> = splitter.map(|b| b.unwrap()).collect();
        assert_eq!(rest.len(), 1);
        assert_eq!(rest[0].first_line, 2);
        assert_eq!(&rest[0].data[..], b"1,x\r\n");
    }

    #[test]
    fn resuming_at_a_boundary_makes_the_same_cuts() {
        let data = b"a,1\n\"b\nc\",2\nd,3\ne,4\nf,5\ng,6\n";
        let blocks: Vec<Block> = Splitter::new(&data[..], "t", CsvOptions::default(), 6)
            .map(|b| b.unwrap())
            .collect();
        let third = &blocks[2];
        let rest = &data[third.offset as usize..];
        let resumed: Vec<Block> = Splitter::resume(
            rest,
            "t",
            CsvOptions::default(),
            6,
            third.offset,
            third.first_line,
            Eol::Lf,
        )
        .map(|b| b.unwrap())
        .collect();
        let tail: Vec<(u64, u64, Vec<u8>)> = blocks[2..]
            .iter()
            .map(|b| (b.offset, b.first_line, b.data.to_vec()))
            .collect();
        let again: Vec<(u64, u64, Vec<u8>)> = resumed
            .iter()
            .map(|b| (b.offset, b.first_line, b.data.to_vec()))
            .collect();
        assert_eq!(again, tail);
    }

    /// Hands out its bytes in the given chunk sizes, so line endings, quotes and escapes fall
    /// across reads.
    struct Chunked<'a> {
        data: &'a [u8],
        sizes: Vec<usize>,
        reads: usize,
    }

    impl Read for Chunked<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let size = self.sizes[self.reads % self.sizes.len()];
            self.reads += 1;
            let n = size.min(buf.len()).min(self.data.len());
            buf[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    proptest! {
        #![proptest_config(cases::config(512))]

        /// Whatever the block size and the reads, the blocks are the input cut at record ends
        /// (as COPY's line reader finds them) and give the records of one whole parse, or its
        /// first error; resumed at any block, the splitter makes the same cuts from there on.
        /// 512 cases (about a second); `INRUSH_PROPTEST_CASES=100000` runs more.
        #[test]
        fn blocks_are_the_input_cut_at_record_ends(
            case in cases::csv_case(),
            block_size in prop_oneof![1..64usize, Just(1 << 20)],
            reads in vec(1..16usize, 1..4),
            resume_at in any::<prop::sample::Index>(),
        ) {
            let (opts, data) = (&case.opts, &case.data[..]);
            prop_assume!(opts.validate().is_ok());
            let eol = Splitter::new(data, "t", opts.clone(), 1 << 20).eol().unwrap();
            let parser = RecordParser::new(opts.clone(), eol);

            // Record ends by the line reader; where a record parses, the parser ends it there too.
            let mut ends = std::collections::BTreeSet::new();
            let mut rec = Record::default();
            let mut pos = 0;
            while pos < data.len() {
                let end = parser.record_end(data, pos);
                if let Ok(next) = parser.parse(data, pos, &mut rec) {
                    prop_assert_eq!(next, end, "parser and line reader differ at {}", pos);
                }
                ends.insert(end);
                pos = end;
            }

            let reader = Chunked { data, sizes: reads.clone(), reads: 0 };
            let mut splitter = Splitter::new(reader, "t", opts.clone(), block_size);
            prop_assert_eq!(splitter.eol().unwrap(), eol);
            let mut blocks = Vec::new();
            if opts.header {
                blocks.extend(splitter.take_first_record().unwrap());
            }
            blocks.extend(splitter.map(Result::unwrap));

            let line_break = if eol == Eol::Cr { b'\r' } else { b'\n' };
            let mut offset = 0;
            for (i, block) in blocks.iter().enumerate() {
                prop_assert_eq!(block.index, i as u64);
                prop_assert_eq!(block.offset, offset as u64);
                let lines_before = memchr_iter(line_break, &data[..offset]).count() as u64;
                prop_assert_eq!(block.first_line, 1 + lines_before);
                prop_assert!(!block.data.is_empty());
                offset += block.data.len();
                prop_assert!(ends.contains(&offset), "cut at {} is no record end", offset);
            }
            let joined: Vec<u8> = blocks.iter().flat_map(|b| &b.data[..]).copied().collect();
            prop_assert_eq!(joined, data);

            let mut split_rows = Vec::new();
            let split = blocks.iter().try_for_each(|b| {
                split_rows.extend(parse_block(&parser, &b.data)?);
                Ok(())
            });
            prop_assert_eq!(split.map(|()| split_rows), parse_all(opts, eol, data));

            // A load resumes after its header, at a block it recorded.
            let resumable = &blocks[usize::from(opts.header).min(blocks.len())..];
            if !resumable.is_empty() {
                let from = &resumable[resume_at.index(resumable.len())];
                let rest = &data[from.offset as usize..];
                let reader = Chunked { data: rest, sizes: reads, reads: 0 };
                let (offset, line) = (from.offset, from.first_line);
                let resumed: Vec<(u64, u64, Bytes)> =
                    Splitter::resume(reader, "t", opts.clone(), block_size, offset, line, eol)
                        .map(|b| b.map(|b| (b.offset, b.first_line, b.data)).unwrap())
                        .collect();
                let expected: Vec<(u64, u64, Bytes)> = blocks[from.index as usize..]
                    .iter()
                    .map(|b| (b.offset, b.first_line, b.data.clone()))
                    .collect();
                prop_assert_eq!(resumed, expected);
            }
        }
    }

    #[test]
    fn empty_input_has_no_blocks() {
        let mut splitter = Splitter::new(&b""[..], "t", CsvOptions::default(), 8);
        assert!(splitter.take_first_record().unwrap().is_none());
        assert_eq!(splitter.count(), 0);
    }
}
