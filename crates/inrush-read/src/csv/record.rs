//! One record at a time, with COPY's `CopyReadAttributesCSV` rules.

use super::{CsvOptions, Eol, QuoteState};
use memchr::{memchr, memchr2};
use std::ops::Range;

/// Why a record is not CSV that COPY would read. Messages are COPY's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    #[error("unterminated CSV quoted field")]
    UnterminatedQuote,
    #[error("unquoted carriage return found in data (use a quoted CSV field to represent carriage return)")]
    UnquotedCarriageReturn,
    #[error("unquoted newline found in data (use a quoted CSV field to represent newline)")]
    UnquotedNewline,
}

/// Where one field's bytes are.
#[derive(Debug, Clone)]
enum Field {
    Null,
    /// A field that is one unquoted run: bytes of the block itself, never copied.
    InBlock(Range<usize>),
    /// A field with quotes: de-quoted into the record's scratch buffer.
    InScratch(Range<usize>),
}

/// The fields of one record: plain fields as ranges of the block they came from, quoted ones
/// de-quoted into one scratch buffer, `None` for NULL. Reused from record to record so parsing
/// does not allocate. Accessors take the block the record was parsed from.
#[derive(Debug, Default)]
pub struct Record {
    scratch: Vec<u8>,
    fields: Vec<Field>,
}

impl Record {
    pub fn len(&self) -> usize {
        self.fields.len()
    }

    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// The bytes of field `i`, `None` when it is NULL (or absent). `data` is the block the
    /// record was parsed from.
    pub fn field<'r>(&'r self, data: &'r [u8], i: usize) -> Option<&'r [u8]> {
        self.resolve(data, self.fields.get(i)?)
    }

    /// Whether field `i` is bytes of the block as they are (unquoted), not de-quoted ones.
    pub fn in_block(&self, i: usize) -> bool {
        matches!(self.fields.get(i), Some(Field::InBlock(_)))
    }

    pub fn fields<'r>(&'r self, data: &'r [u8]) -> impl Iterator<Item = Option<&'r [u8]>> + 'r {
        self.fields.iter().map(move |f| self.resolve(data, f))
    }

    fn resolve<'r>(&'r self, data: &'r [u8], field: &Field) -> Option<&'r [u8]> {
        match field {
            Field::Null => None,
            Field::InBlock(r) => Some(&data[r.clone()]),
            Field::InScratch(r) => Some(&self.scratch[r.clone()]),
        }
    }

    fn clear(&mut self) {
        self.scratch.clear();
        self.fields.clear();
    }
}

/// Parses records out of a block that holds whole records (see [`super::Splitter`]).
#[derive(Debug, Clone)]
pub struct RecordParser {
    opts: CsvOptions,
    eol: Eol,
    /// Bytes that end an unquoted run: delimiter, quote, record terminator.
    specials: Specials,
}

/// Finds any of three bytes in 16 input bytes at once: bit `k` of the mask is byte `k`.
/// (For fields of a few bytes this is far cheaper than a `memchr3` per field, and for long
/// ones it keeps up with it.)
#[derive(Debug, Clone, Copy)]
struct Specials([u8; 3]);

impl Specials {
    #[cfg(target_arch = "x86_64")]
    #[inline]
    fn find(&self, chunk: &[u8; 16]) -> u32 {
        use std::arch::x86_64::{
            _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8,
        };
        // SAFETY: SSE2 is part of every x86_64 target; the load is an unaligned 16-byte read
        // of a 16-byte array.
        unsafe {
            let v = _mm_loadu_si128(chunk.as_ptr().cast());
            let eq = |b: u8| _mm_cmpeq_epi8(v, _mm_set1_epi8(b as i8));
            let any = _mm_or_si128(_mm_or_si128(eq(self.0[0]), eq(self.0[1])), eq(self.0[2]));
            _mm_movemask_epi8(any) as u32
        }
    }

    #[cfg(not(target_arch = "x86_64"))]
    #[inline]
    fn find(&self, chunk: &[u8; 16]) -> u32 {
        (0..16)
            .filter(|&k| self.0.contains(&chunk[k]))
            .fold(0, |mask, k| mask | 1 << k)
    }
}

/// A parser bound to one block, knowing whether the block can hold a stray line-break byte at
/// all (most blocks cannot, which spares a check per field).
pub struct BlockParser<'a> {
    parser: &'a RecordParser,
    data: &'a [u8],
    check_stray_eol: bool,
}

impl BlockParser<'_> {
    /// Parses the record that starts at `pos`; returns where the next record starts.
    pub fn parse(&self, pos: usize, rec: &mut Record) -> Result<usize, RecordError> {
        self.parser
            .parse_record(self.data, pos, rec, self.check_stray_eol)
    }
}

impl RecordParser {
    pub fn new(opts: CsvOptions, eol: Eol) -> Self {
        let specials = Specials([opts.delimiter, opts.quote, eol.terminator()]);
        RecordParser {
            opts,
            eol,
            specials,
        }
    }

    /// The line ending this parser reads.
    pub fn eol(&self) -> Eol {
        self.eol
    }

    /// A parser for the records of `data`, a block of whole records.
    pub fn block<'a>(&'a self, data: &'a [u8]) -> BlockParser<'a> {
        let check_stray_eol = match self.eol {
            Eol::Lf => memchr(b'\r', data).is_some(),
            Eol::Cr => memchr(b'\n', data).is_some(),
            Eol::CrLf => true,
        };
        BlockParser {
            parser: self,
            data,
            check_stray_eol,
        }
    }

    /// Parses the record that starts at `pos` into `rec`; returns where the next record starts.
    /// `pos` must be below `data.len()`. (For many records of one block, [`RecordParser::block`]
    /// is faster.)
    pub fn parse(&self, data: &[u8], pos: usize, rec: &mut Record) -> Result<usize, RecordError> {
        self.parse_record(data, pos, rec, true)
    }

    /// Where the record starting at `start` ends by COPY's line reader (quote-aware), to skip a
    /// record that could not be parsed. `data.len()` when it runs to the end (an open quote).
    pub fn record_end(&self, data: &[u8], start: usize) -> usize {
        let term = self.eol.terminator();
        let mut quotes = QuoteState::default();
        for (i, &c) in data.iter().enumerate().skip(start) {
            if c == term && !quotes.in_quote() {
                return i + 1;
            }
            quotes.step(c, self.opts.quote, self.opts.escape);
        }
        data.len()
    }

    /// Whether `raw` leaves a quote open (an unterminated quoted field).
    pub fn leaves_quote_open(&self, raw: &[u8]) -> bool {
        let mut quotes = QuoteState::default();
        for &c in raw {
            quotes.step(c, self.opts.quote, self.opts.escape);
        }
        quotes.in_quote()
    }

    /// The first byte at or after `from` that ends an unquoted run, or `data.len()`.
    #[inline]
    fn run_stop(&self, data: &[u8], from: usize) -> usize {
        let mut at = from;
        while let Some(chunk) = data.get(at..at + 16) {
            let hits = self.specials.find(chunk.try_into().unwrap());
            if hits != 0 {
                return at + hits.trailing_zeros() as usize;
            }
            at += 16;
        }
        let tail = data[at..].iter().position(|b| self.specials.0.contains(b));
        tail.map_or(data.len(), |k| at + k)
    }

    /// An unquoted field: NULL when it is the NULL string, else the block's bytes themselves.
    #[inline]
    fn unquoted(&self, data: &[u8], run: Range<usize>) -> Field {
        if data[run.clone()] == *self.opts.null {
            Field::Null
        } else {
            Field::InBlock(run)
        }
    }

    fn parse_record(
        &self,
        data: &[u8],
        pos: usize,
        rec: &mut Record,
        check_stray_eol: bool,
    ) -> Result<usize, RecordError> {
        rec.clear();
        let mut i = pos;
        loop {
            // Most fields hold no quote, and most blocks no stray line-break byte: in such a
            // block the fields are cut at their delimiters sixteen bytes at a time, and only a
            // field with a quote goes through the general parser.
            if !check_stray_eol {
                match self.plain_fields(data, i, rec) {
                    Plain::RecordEnd(next) => return Ok(next),
                    Plain::Quote(field_start) => i = field_start,
                }
            }
            match self.general_field(data, i, rec, check_stray_eol)? {
                FieldEnd::Field(next) => i = next,
                FieldEnd::Record(next) => return Ok(next),
            }
        }
    }

    /// Pushes the fields from `i` (a field's start) up to the record's end or to the first
    /// field with a quote. Only for a block without stray line-break bytes, so with a one-byte
    /// terminator (CRLF blocks always count as having one).
    #[inline]
    fn plain_fields(&self, data: &[u8], i: usize, rec: &mut Record) -> Plain {
        let delimiter = self.opts.delimiter;
        let term = self.eol.terminator();
        let mut field_start = i;
        // Pushes the field ending at `end`.
        let mut cut = |rec: &mut Record, end: usize| {
            rec.fields.push(self.unquoted(data, field_start..end));
            field_start = end + 1;
        };
        let mut at = i;
        while let Some(chunk) = data.get(at..at + 16) {
            let mut hits = self.specials.find(chunk.try_into().unwrap());
            while hits != 0 {
                let p = at + hits.trailing_zeros() as usize;
                hits &= hits - 1;
                let c = data[p];
                if c == delimiter {
                    cut(rec, p);
                } else if c == term {
                    cut(rec, p);
                    return Plain::RecordEnd(p + 1);
                } else {
                    return Plain::Quote(field_start);
                }
            }
            at += 16;
        }
        for (p, &c) in data.iter().enumerate().skip(at) {
            if c == delimiter {
                cut(rec, p);
            } else if c == term {
                cut(rec, p);
                return Plain::RecordEnd(p + 1);
            } else if c == self.opts.quote {
                return Plain::Quote(field_start);
            }
        }
        cut(rec, data.len());
        Plain::RecordEnd(data.len())
    }

    /// The field starting at `i`, whatever it holds (quotes, and with `check_stray_eol` the
    /// check that no line-break byte other than the terminator stands outside quotes).
    fn general_field(
        &self,
        data: &[u8],
        mut i: usize,
        rec: &mut Record,
        check_stray_eol: bool,
    ) -> Result<FieldEnd, RecordError> {
        let CsvOptions {
            delimiter,
            quote,
            escape,
            ..
        } = self.opts;
        let term = self.eol.terminator();
        let start = rec.scratch.len();
        let mut saw_quote = false;
        // Until a quote shows up the field is one unquoted run, left in place.
        let mut plain = i..i;
        // Each pass handles one unquoted run and, if a quote follows, one quoted run.
        let ended = loop {
            let stop = self.run_stop(data, i);
            let mut run_end = stop;
            if stop < data.len() && data[stop] == term && self.eol == Eol::CrLf {
                // The `\r` of `\r\n` always sits in the run that ends at the `\n`.
                if stop > i && data[stop - 1] == b'\r' {
                    run_end = stop - 1;
                } else {
                    return Err(RecordError::UnquotedNewline);
                }
            }
            if check_stray_eol {
                self.check_stray_eol(&data[i..run_end])?;
            }
            if saw_quote {
                rec.scratch.extend_from_slice(&data[i..run_end]);
            } else {
                plain = i..run_end;
            }
            if stop == data.len() {
                break FieldEnd::Record(data.len());
            }
            let c = data[stop];
            if c == delimiter {
                break FieldEnd::Field(stop + 1);
            }
            if c == term {
                break FieldEnd::Record(stop + 1);
            }
            // A quote: quoted text until the closing quote, wherever in the field it is.
            if !saw_quote {
                rec.scratch.extend_from_slice(&data[plain.clone()]);
                saw_quote = true;
            }
            i = self.quoted_run(data, stop + 1, &mut rec.scratch, quote, escape)?;
        };
        let field = if saw_quote {
            Field::InScratch(start..rec.scratch.len())
        } else {
            self.unquoted(data, plain)
        };
        rec.fields.push(field);
        Ok(ended)
    }

    /// Copies a quoted run starting just after its opening quote; returns the index after the
    /// closing quote.
    fn quoted_run(
        &self,
        data: &[u8],
        mut k: usize,
        out: &mut Vec<u8>,
        quote: u8,
        escape: u8,
    ) -> Result<usize, RecordError> {
        loop {
            let rest = &data[k..];
            let hit = if quote == escape {
                memchr(quote, rest)
            } else {
                memchr2(quote, escape, rest)
            };
            let Some(off) = hit else {
                return Err(RecordError::UnterminatedQuote);
            };
            let m = k + off;
            out.extend_from_slice(&data[k..m]);
            let c = data[m];
            // The escape test comes first: with quote == escape a doubled quote is a literal.
            if c == escape {
                if let Some(&next) = data.get(m + 1) {
                    if next == escape || next == quote {
                        out.push(next);
                        k = m + 2;
                        continue;
                    }
                }
            }
            if c == quote {
                return Ok(m + 1);
            }
            out.push(c);
            k = m + 1;
        }
    }

    /// An unquoted run may hold no line-ending byte other than the record's own terminator.
    fn check_stray_eol(&self, run: &[u8]) -> Result<(), RecordError> {
        match self.eol {
            Eol::Lf | Eol::CrLf if memchr(b'\r', run).is_some() => {
                Err(RecordError::UnquotedCarriageReturn)
            }
            Eol::Cr if memchr(b'\n', run).is_some() => Err(RecordError::UnquotedNewline),
            _ => Ok(()),
        }
    }
}

/// How a field ended: where the next field or the next record starts.
enum FieldEnd {
    Field(usize),
    Record(usize),
}

/// Where [`RecordParser::plain_fields`] stopped.
enum Plain {
    /// The record ended; the next one starts here.
    RecordEnd(usize),
    /// The field starting here holds a quote.
    Quote(usize),
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) type Rows = Vec<Vec<Option<String>>>;

    /// Parses every record of `data`; fields as strings, NULL as `None`.
    pub(crate) fn parse_all(opts: &CsvOptions, eol: Eol, data: &[u8]) -> Result<Rows, RecordError> {
        let parser = RecordParser::new(opts.clone(), eol);
        collect_rows(data, |pos, rec| parser.parse(data, pos, rec))
    }

    /// Parses every record of a block as the workers do, through [`RecordParser::block`].
    pub(crate) fn parse_block(parser: &RecordParser, data: &[u8]) -> Result<Rows, RecordError> {
        let block = parser.block(data);
        collect_rows(data, |pos, rec| block.parse(pos, rec))
    }

    fn collect_rows(
        data: &[u8],
        parse: impl Fn(usize, &mut Record) -> Result<usize, RecordError>,
    ) -> Result<Rows, RecordError> {
        let mut rec = Record::default();
        let mut rows = Vec::new();
        let mut pos = 0;
        while pos < data.len() {
            pos = parse(pos, &mut rec)?;
            rows.push(
                rec.fields(data)
                    .map(|f| f.map(|b| String::from_utf8_lossy(b).into_owned()))
                    .collect(),
            );
        }
        Ok(rows)
    }

    fn rows(data: &str) -> Vec<Vec<Option<String>>> {
        parse_all(&CsvOptions::default(), Eol::Lf, data.as_bytes()).unwrap()
    }

    fn s(v: &str) -> Option<String> {
        Some(v.to_string())
    }

    #[test]
    fn quoted_empty_is_empty_and_unquoted_empty_is_null() {
        assert_eq!(rows("a,,\"\"\n"), vec![vec![s("a"), None, s("")]]);
    }

    #[test]
    fn quotes_hold_delimiters_newlines_and_doubled_quotes() {
        assert_eq!(
            rows("\"a,b\",\"c\nd\",\"e\"\"f\"\n"),
            vec![vec![s("a,b"), s("c\nd"), s("e\"f")]]
        );
    }

    #[test]
    fn a_quote_mid_field_starts_quoted_text_as_copy_does() {
        assert_eq!(rows("ab\"c,d\"e,x\n"), vec![vec![s("abc,de"), s("x")]]);
        // A quoted NULL string is not NULL.
        assert_eq!(rows("\"\"\"\"\n"), vec![vec![s("\"")]]);
    }

    #[test]
    fn last_record_needs_no_line_break() {
        assert_eq!(
            rows("1,2\n3,4"),
            vec![vec![s("1"), s("2")], vec![s("3"), s("4")]]
        );
    }

    #[test]
    fn empty_line_is_one_null_field() {
        assert_eq!(rows("\n"), vec![vec![None]]);
    }

    #[test]
    fn null_string_option_only_matches_unquoted() {
        let opts = CsvOptions {
            null: b"NULL".to_vec(),
            ..Default::default()
        };
        let got = parse_all(&opts, Eol::Lf, b"NULL,\"NULL\",\n").unwrap();
        assert_eq!(got, vec![vec![None, s("NULL"), s("")]]);
    }

    #[test]
    fn distinct_escape_protects_quote_and_itself_inside_quotes_only() {
        let opts = CsvOptions {
            escape: b'\\',
            ..Default::default()
        };
        let got = parse_all(&opts, Eol::Lf, b"\"a\\\"b\",\"c\\\\\",\"d\\e\",x\\y\n").unwrap();
        assert_eq!(got, vec![vec![s("a\"b"), s("c\\"), s("d\\e"), s("x\\y")]]);
    }

    #[test]
    fn crlf_records_and_stray_line_breaks() {
        let got = parse_all(
            &CsvOptions::default(),
            Eol::CrLf,
            b"a,\"b\r\nc\"\r\n\"d\"\r\n",
        )
        .unwrap();
        assert_eq!(got, vec![vec![s("a"), s("b\r\nc")], vec![s("d")]]);
        assert_eq!(
            parse_all(&CsvOptions::default(), Eol::CrLf, b"a\nb\r\n"),
            Err(RecordError::UnquotedNewline)
        );
        assert_eq!(
            parse_all(&CsvOptions::default(), Eol::Lf, b"a\rb\n"),
            Err(RecordError::UnquotedCarriageReturn)
        );
        assert_eq!(
            parse_all(&CsvOptions::default(), Eol::Lf, b"a\r\n"),
            Err(RecordError::UnquotedCarriageReturn)
        );
        let cr = parse_all(&CsvOptions::default(), Eol::Cr, b"a,b\rc,\"d\ne\"\r").unwrap();
        assert_eq!(cr, vec![vec![s("a"), s("b")], vec![s("c"), s("d\ne")]]);
    }

    #[test]
    fn record_end_is_quote_aware() {
        let parser = RecordParser::new(CsvOptions::default(), Eol::Lf);
        let data = b"\"a\nb\",x\ry\nnext\n";
        assert_eq!(parser.record_end(data, 0), 10);
        assert_eq!(parser.record_end(b"\"open\nrest\n", 0), 11);
        assert!(parser.leaves_quote_open(b"1,\"open\n"));
        assert!(!parser.leaves_quote_open(b"1,\"a\"\"b\"\n"));
    }

    #[test]
    fn unterminated_quote_is_reported() {
        assert_eq!(
            parse_all(&CsvOptions::default(), Eol::Lf, b"\"abc\n"),
            Err(RecordError::UnterminatedQuote)
        );
    }

    #[test]
    fn specials_are_found_exactly_in_every_lane() {
        let specials = Specials([b',', b'"', b'\n']);
        for lane in 0..16 {
            for b in 0..=255u8 {
                for fill in [0x00, b',', 0x80, 0xff] {
                    let mut chunk = [fill; 16];
                    chunk[lane] = b;
                    let expected = (0..16)
                        .filter(|&k| matches!(chunk[k], b',' | b'"' | b'\n'))
                        .fold(0u32, |mask, k| mask | 1 << k);
                    assert_eq!(specials.find(&chunk), expected, "{chunk:?}");
                }
            }
        }
    }

    #[test]
    fn plain_records_are_cut_alike_in_a_block_and_one_at_a_time() {
        let opts = CsvOptions {
            null: b"NULL".to_vec(),
            ..Default::default()
        };
        let parser = RecordParser::new(opts.clone(), Eol::Lf);
        // Fields across 16-byte boundaries, NULL strings, an empty last field, a quoted field
        // between plain ones, a last record without a line break.
        let data = b"12345678,NULL,abcdefghijklmnopq,\nNULLx,,NULL\nplain,then \"q,uo\"te,after the quoted one,NULL\nlast,one";
        let block = parse_block(&parser, data).unwrap();
        assert_eq!(block, parse_all(&opts, Eol::Lf, data).unwrap());
        assert_eq!(
            block[0],
            vec![s("12345678"), None, s("abcdefghijklmnopq"), s("")]
        );
        assert_eq!(block[1], vec![s("NULLx"), s(""), None]);
        assert_eq!(
            block[2],
            vec![
                s("plain"),
                s("then q,uote"),
                s("after the quoted one"),
                None
            ]
        );
    }

    #[test]
    fn other_delimiters() {
        let opts = CsvOptions {
            delimiter: b'\t',
            ..Default::default()
        };
        assert_eq!(
            parse_all(&opts, Eol::Lf, b"a\t\"b\tc\"\n").unwrap(),
            vec![vec![s("a"), s("b\tc")]]
        );
    }
}
