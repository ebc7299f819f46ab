//! Arbitrary CSV inputs for property tests: the splitter's own (here) and the comparison with
//! the server's COPY (`inrush-load`'s tests, through the `testing` feature).
//!
//! Inputs are built from a small alphabet that lands on COPY's edge cases: the quote, an escape
//! that differs from it, the delimiter, every line ending (the file's own and the others), the
//! NULL string, empty fields, `\.`, multibyte UTF-8. Most records have the table's field count
//! and well-formed quoting, so about half the inputs load and get compared row by row; stray
//! quotes, escapes and line endings, wrong field counts, token soup and dialects COPY refuses
//! make the rest. No input starts with
//! a byte order mark (inrush drops one, COPY keeps it: a documented difference).

use super::CsvOptions;
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::Config;

/// One input: its dialect, the field count of the table it is meant for, its bytes.
#[derive(Clone)]
pub struct CsvCase {
    pub opts: CsvOptions,
    /// The table has columns `c0`, `c1`, ... (what the header, if any, names).
    pub columns: usize,
    pub data: Vec<u8>,
}

impl std::fmt::Debug for CsvCase {
    // As text, so a shrunk failure reads like the CSV it is.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let o = &self.opts;
        f.debug_struct("CsvCase")
            .field("delimiter", &(o.delimiter as char))
            .field("quote", &(o.quote as char))
            .field("escape", &(o.escape as char))
            .field("null", &String::from_utf8_lossy(&o.null))
            .field("header", &o.header)
            .field("columns", &self.columns)
            .field("data", &String::from_utf8_lossy(&self.data))
            .finish()
    }
}

/// `INRUSH_PROPTEST_CASES` cases if set, else `default`; no regression files (a failure found
/// here becomes a named unit test beside the code it fixes).
pub fn config(default: u32) -> Config {
    let cases = std::env::var("INRUSH_PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default);
    Config {
        cases,
        // Some dialects are ones COPY refuses, which a test of parsing skips.
        max_global_rejects: cases.max(1024),
        failure_persistence: None,
        ..Config::default()
    }
}

/// Dialects: mostly ones COPY accepts, a few it refuses (quote or delimiter in the NULL string,
/// delimiter equal to quote) so refusals get compared too.
fn options() -> impl Strategy<Value = CsvOptions> {
    let delimiter = select(vec![b',', b';', b'\t', b'|']);
    let quote = prop_oneof![8 => select(vec![b'"', b'\'']), 1 => Just(b'|')];
    let null = prop_oneof![
        8 => select(vec!["", "\\N", "NULL", "a", "é"]),
        1 => select(vec!["\"", "x,y"]),
    ];
    (
        delimiter,
        quote,
        null,
        proptest::bool::weighted(0.25),
        0..4u8,
    )
        .prop_map(|(delimiter, quote, null, header, escape)| CsvOptions {
            delimiter,
            quote,
            // Mostly the quote itself (COPY's default), else a distinct escape; the delimiter
            // as escape is legal too.
            escape: match escape {
                0 => b'\\',
                1 => delimiter,
                _ => quote,
            },
            null: null.as_bytes().to_vec(),
            header,
        })
}

/// Inputs for a table of `columns` text columns.
pub fn csv_case() -> impl Strategy<Value = CsvCase> {
    (options(), 1..=3usize, select(LINE_ENDINGS.to_vec()))
        .prop_flat_map(|(opts, columns, eol)| {
            let body = prop_oneof![
                6 => vec(record(&opts, columns, eol), 0..8).prop_map(|r| r.concat()),
                1 => vec(soup_token(&opts), 0..40).prop_map(|t| t.concat()),
            ];
            (Just(opts), Just(columns), Just(eol), body, any::<bool>())
        })
        .prop_map(|(opts, columns, eol, body, cut_last_eol)| {
            let mut data = Vec::new();
            if opts.header {
                // COPY skips the header; inrush maps its names, so it names the table's columns.
                let names: Vec<String> = (0..columns).map(|i| format!("c{i}")).collect();
                data.extend_from_slice(
                    names.join(&(opts.delimiter as char).to_string()).as_bytes(),
                );
                data.extend_from_slice(eol);
            }
            data.extend_from_slice(&body);
            // The last record may go without a line ending.
            if cut_last_eol && data.ends_with(eol) {
                data.truncate(data.len() - eol.len());
            }
            CsvCase {
                opts,
                columns,
                data,
            }
        })
}

/// Text that may stand unquoted: none of delimiter, quote or line endings.
const TEXT: [&str; 8] = ["a", "b c", "é", "€", "😀", "\\.", "\\", "N"];

fn text(opts: &CsvOptions) -> impl Strategy<Value = Vec<u8>> {
    let null = opts.null.clone();
    prop_oneof![
        6 => select(TEXT.to_vec()).prop_map(|t| t.as_bytes().to_vec()),
        1 => Just(null),
    ]
}

/// A record: mostly `columns` fields and the file's line ending, sometimes another count or
/// ending.
fn record(opts: &CsvOptions, columns: usize, eol: &'static [u8]) -> impl Strategy<Value = Vec<u8>> {
    let count = prop_oneof![20 => Just(columns), 1 => 0..=columns + 1];
    let end = prop_oneof![
        30 => Just(eol.to_vec()),
        1 => line_ending(),
    ];
    let delimiter = opts.delimiter;
    (vec(field(opts), columns + 1), count, end).prop_map(move |(fields, count, end)| {
        let mut out = fields[..count].join(&delimiter);
        out.extend_from_slice(&end);
        out
    })
}

const LINE_ENDINGS: [&[u8]; 3] = [b"\n", b"\r\n", b"\r"];

fn line_ending() -> impl Strategy<Value = Vec<u8>> {
    select(LINE_ENDINGS.to_vec()).prop_map(<[u8]>::to_vec)
}

/// A field: unquoted and quoted runs, back to back (COPY reads `ab"c,d"e` as one field), now
/// and then a stray quote, escape or line ending.
fn field(opts: &CsvOptions) -> impl Strategy<Value = Vec<u8>> {
    let segment = prop_oneof![
        8 => vec(text(opts), 0..3).prop_map(|t| t.concat()),
        8 => quoted(opts),
        1 => stray(opts),
    ];
    vec(segment, 0..3).prop_map(|s| s.concat())
}

/// Quoted text holding anything: delimiters, line endings, escaped quotes and escapes, and an
/// escape before an ordinary character (literal in COPY).
fn quoted(opts: &CsvOptions) -> impl Strategy<Value = Vec<u8>> {
    let CsvOptions {
        delimiter,
        quote,
        escape,
        ..
    } = *opts;
    let piece = prop_oneof![
        4 => text(opts),
        1 => Just(vec![delimiter]),
        2 => line_ending(),
        1 => Just(vec![escape, quote]),
        1 => Just(vec![escape, escape]),
        // (With escape and quote the same, that would end the quoted text.)
        1 => Just(if escape == quote { b"x".to_vec() } else { vec![escape, b'x'] }),
    ];
    vec(piece, 0..4).prop_map(move |pieces| {
        let mut out = vec![quote];
        out.extend(pieces.concat());
        out.push(quote);
        out
    })
}

/// One byte or line ending where it breaks the record (or, by chance, does not).
fn stray(opts: &CsvOptions) -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        Just(vec![opts.quote]),
        Just(vec![opts.escape]),
        line_ending(),
    ]
}

fn soup_token(opts: &CsvOptions) -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        3 => text(opts),
        1 => Just(vec![opts.delimiter]),
        2 => stray(opts),
    ]
}
