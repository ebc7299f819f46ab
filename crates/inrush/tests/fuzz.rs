//! Differential fuzzing: generated CSV files loaded both by inrush and by PostgreSQL's own
//! `COPY ... (FORMAT csv)`, into tables of text columns (the reader) and of typed columns
//! (inrush's own encoders of each type's values); the two must agree on every file: both load
//! it, with the same rows, or both refuse it and inrush loads nothing.
//!
//! The files mix what real exports hold: quoted and unquoted fields, doubled quotes, commas,
//! backslashes, `\N` and `NULL` as text, empty fields and `""`, LF, CRLF and lone CR inside
//! quotes, Unicode, long fields, a header or none, in UTF-8, Latin-1 or Windows-1252
//! (`--encoding`, COPY's `ENCODING`); and what broken ones do: ragged rows, a quote left open,
//! text after a closing quote, line ends mixed, bytes that are no character. The typed files
//! hold integers, numerics, floats, booleans, dates, timestamps, UUIDs and bytea at their
//! limits and in the spellings each reader may take otherwise. Typed files go into MariaDB
//! against its strict `LOAD DATA` (NULL spelled as the unquoted word `NULL`, which both read as
//! NULL with inrush's `--null NULL`), and into SQLite (ordinary and STRICT tables) against what the
//! `sqlite3` shell's `.import` stores, inrush setting aside exactly the rows SQLite itself calls
//! wrong for their declared types. JSON lines files (strings with every escape, numbers at
//! their types' limits, other JSON kinds where a type expects one, nested values, arrays into
//! array columns, keys left out, repeated or unknown, lines that are no object) go into
//! PostgreSQL against its own `json_populate_record` of each line. A seeded run of
//! `INRUSH_FUZZ_CASES` files (400 by default) runs with the tests; `scripts/fuzz.sh --minutes N`
//! runs for N minutes (`INRUSH_FUZZ_MINUTES`) from a seed of its own (`INRUSH_FUZZ_SEED`), and
//! prints the files tried and every difference found, each with its file. Arrow input (Parquet,
//! IPC, DataFrames) is fuzzed the same way from Python, where pyarrow builds its tables:
//! `python/tests/test_fuzz.py`.
//!
//! Intended, and said in docs/loading.md: a UTF-8 byte order mark that opens a file is not
//! read as data.

mod mariadb_common;
mod sqlite_common;

use inrush_testkit::{Db, MariaDb};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_inrush");

/// splitmix64: a seeded stream, the same on every machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    /// True once in `n`.
    fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// What a field's text is made of: the characters a CSV reader must treat specially, and some
/// it must not.
const PIECES: &[&[u8]] = &[
    b"a", b"Z", b"7", b" ", b"  ", b",", b"\"", b"\"\"", b"\\", b"\\N", b"NULL", b"\t", b"\n",
    b"\r\n", b"\r", b"'", b";", b"#",
];

/// The encodings files are written in, as `--encoding` and COPY name them, with the
/// characters each adds to [`PIECES`] and the bytes that are no character in it (invalid
/// UTF-8, a NUL, Windows-1252's undefined 0x81 and 0x9d), which one file in eight holds.
type Encoding = (
    &'static str,
    &'static [&'static [u8]],
    &'static [&'static [u8]],
);

const ENCODINGS: &[Encoding] = &[
    (
        "UTF8",
        &[
            "é".as_bytes(),
            "✓".as_bytes(),
            "日本".as_bytes(),
            "\u{feff}".as_bytes(),
        ],
        &[b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x00"],
    ),
    ("UTF8", &["ü".as_bytes(), "€".as_bytes()], &[b"\xc3"]),
    (
        "LATIN1",
        &[b"\xe9", b"\xfc", b"\x80", b"\xff", b"\xa0"],
        &[b"\x00"],
    ),
    (
        "WIN1252",
        &[b"\xe9", b"\x80", b"\x9f"],
        &[b"\x81", b"\x9d", b"\x00"],
    ),
];

/// One field's text, before it is written.
fn text(rng: &mut Rng, extra: &[&[u8]]) -> Vec<u8> {
    if rng.one_in(40) {
        return b"x".repeat(5_000 + rng.below(100_000));
    }
    let n = rng.below(6);
    (0..n)
        .flat_map(|_| match !extra.is_empty() && rng.one_in(5) {
            true => *rng.pick(extra),
            false => *rng.pick(PIECES),
        })
        .copied()
        .collect()
}

/// `value` as a CSV field: quoted when it must be (or when the dice say), quotes doubled; an
/// empty unquoted field is NULL, so an empty text is always quoted.
fn field(rng: &mut Rng, value: Option<&[u8]>) -> Vec<u8> {
    let Some(value) = value else {
        return Vec::new();
    };
    let special = value.is_empty()
        || value.iter().any(|b| b",\"\n\r".contains(b))
        || value.starts_with(b" ")
        || value.ends_with(b" ")
        || value == b"\\.";
    if !special && !rng.one_in(4) {
        return value.to_vec();
    }
    let mut quoted = vec![b'"'];
    for &b in value {
        quoted.push(b);
        if b == b'"' {
            quoted.push(b'"');
        }
    }
    quoted.push(b'"');
    quoted
}

/// A generated file and how it was made.
struct Case {
    /// Each column's type.
    types: Vec<&'static str>,
    header: bool,
    encoding: &'static str,
    bytes: Vec<u8>,
}

/// A file of `columns` text columns; now and then broken the ways exports break.
fn case(rng: &mut Rng) -> Case {
    let columns = 1 + rng.below(4);
    let header = rng.one_in(2);
    let (encoding, chars, broken) = *rng.pick(ENCODINGS);
    let extra: Vec<&[u8]> = match rng.one_in(8) {
        true => chars.iter().chain(broken).copied().collect(),
        false => chars.to_vec(),
    };
    let eols: [&[u8]; 3] = [b"\n", b"\n", b"\r\n"];
    let eol = *rng.pick(&eols);
    let mut out = Vec::new();
    if encoding == "UTF8" && rng.one_in(30) {
        out.extend_from_slice("\u{feff}".as_bytes());
    }
    if header {
        let names: Vec<String> = (0..columns).map(|i| format!("c{i}")).collect();
        out.extend_from_slice(names.join(",").as_bytes());
        out.extend_from_slice(eol);
    }
    let rows = 1 + rng.below(12);
    for row in 0..rows {
        let mut width = columns;
        if rng.one_in(60) {
            // Ragged: a field too few or too many.
            width = if rng.one_in(2) {
                columns + 1
            } else {
                columns.max(2) - 1
            };
        }
        for i in 0..width {
            if i > 0 {
                out.push(b',');
            }
            let value = (!rng.one_in(6)).then(|| text(rng, &extra));
            out.extend(field(rng, value.as_deref()));
            if rng.one_in(150) {
                // Text after a closing quote, or a quote left open.
                out.extend_from_slice(if rng.one_in(2) { b"\"x" } else { b"\"" });
            }
        }
        let last = row + 1 == rows;
        match (last, rng.one_in(80)) {
            // The last line without its end, now and then.
            (true, _) if rng.one_in(3) => {}
            // Another line end than the file's.
            (_, true) => out.extend_from_slice(if eol == b"\n" { b"\r\n" } else { b"\n" }),
            _ => out.extend_from_slice(eol),
        }
    }
    Case {
        types: vec!["text"; columns],
        header,
        encoding,
        bytes: out,
    }
}

/// A column type, the spellings of its values most files hold (limits included), and the
/// edges: spellings each reader may take otherwise (signs, spaces, exponents, words,
/// prefixes, out of range), one field in twenty.
struct Typed {
    name: &'static str,
    common: fn(&mut Rng) -> String,
    edges: &'static [&'static str],
}

fn int_in(rng: &mut Rng, low: i64, high: i64) -> String {
    let span = (high as i128 - low as i128 + 1) as u128;
    let v = low as i128 + (rng.next() as u128 % span) as i128;
    v.to_string()
}

const TYPES: &[Typed] = &[
    Typed {
        name: "smallint",
        common: |r| int_in(r, -32768, 32767),
        edges: &[
            "-32768", "32767", "32768", "-32769", "+7", " 42", "42 ", "007", "-0", "1.0", "1e2",
            "0x1F", "", " ", "1 2", "٣",
        ],
    },
    Typed {
        name: "integer",
        common: |r| int_in(r, i32::MIN as i64, i32::MAX as i64),
        edges: &[
            "2147483647",
            "-2147483648",
            "2147483648",
            "-2147483649",
            "+0",
            "  -5  ",
            "1_000",
            "0b101",
            "0o17",
            "0x1f",
            "1.5",
            "99999999999999999999",
        ],
    },
    Typed {
        name: "bigint",
        common: |r| int_in(r, i64::MIN, i64::MAX),
        edges: &[
            "9223372036854775807",
            "-9223372036854775808",
            "9223372036854775808",
            "-9223372036854775809",
            "+9",
            "0009",
            "1e18",
            "\t3",
        ],
    },
    Typed {
        name: "numeric",
        common: |r| {
            let (int, frac) = (r.next() % 1_000_000_000, r.next() % 100_000_000);
            let sign = if r.one_in(3) { "-" } else { "" };
            format!("{sign}{int}.{frac:0width$}", width = 1 + r.below(8))
        },
        edges: &[
            "NaN",
            "nan",
            "Infinity",
            "-Infinity",
            "inf",
            "1e5",
            "-1.5E-3",
            ".5",
            "5.",
            "-0",
            "-0.000",
            "+.1",
            "  3.14  ",
            "1,5",
            "1e",
            "e5",
            "1e131072",
            "0.00000000000000000000000000000000000001",
            "123456789012345678901234567890.123456789",
        ],
    },
    Typed {
        name: "numeric(10,2)",
        common: |r| format!("{}.{:02}", int_in(r, -99_999_999, 99_999_999), r.below(100)),
        edges: &[
            "1.005",
            "1.015",
            "-1.005",
            "99999999.995",
            "99999999.994",
            "100000000",
            "0.001",
            "NaN",
            "1e2",
            "-0.005",
        ],
    },
    Typed {
        name: "real",
        common: |r| {
            format!(
                "{}",
                f32::from_bits(r.next() as u32 & 0x7f7f_ffff)
                    * if r.one_in(2) { -1.0 } else { 1.0 }
            )
        },
        edges: &[
            "1.5",
            "3.4028235e38",
            "3.4028236e38",
            "3.5e38",
            "1e-45",
            "1.4e-45",
            "1e-46",
            "NaN",
            "-Infinity",
            "inf",
            "-inf",
            "infinity",
            "-0",
            "1e",
            "0.1",
            "16777217",
            "1e-38",
        ],
    },
    Typed {
        name: "double precision",
        common: |r| {
            format!(
                "{}",
                f64::from_bits(r.next() & 0x7fef_ffff_ffff_ffff)
                    * if r.one_in(2) { -1.0 } else { 1.0 }
            )
        },
        edges: &[
            "1.7976931348623157e308",
            "1.7976931348623159e308",
            "1e309",
            "5e-324",
            "4.9e-324",
            "2e-324",
            "1e-400",
            "NaN",
            "Infinity",
            "-infinity",
            "0x10",
            "1.0e+",
            ".e1",
            "9007199254740993",
        ],
    },
    Typed {
        name: "boolean",
        common: |r| r.pick(&["t", "f", "true", "false", "1", "0"]).to_string(),
        edges: &[
            "TRUE", "False", "yes", "no", "on", "off", "y", "n", "Y", "tr", "tru", "fa", "of", "o",
            "ye", " t ", "T", "maybe", "2", "10", "00",
        ],
    },
    Typed {
        name: "date",
        common: |r| {
            format!(
                "{:04}-{:02}-{:02}",
                1 + r.below(9999),
                1 + r.below(12),
                1 + r.below(28)
            )
        },
        edges: &[
            "2024-02-29",
            "2023-02-29",
            "0001-01-01",
            "9999-12-31",
            "10000-01-01",
            "2024-13-01",
            "2024-00-10",
            "2024-1-5",
            "20240105",
            "epoch",
            "infinity",
            "-infinity",
            "2024-01-05 BC",
            "0001-01-01 BC",
            "Jan 5 2024",
            "5/1/2024",
            "2024-01-05T00:00",
            "2024-01-05 10:00",
            " 2024-01-05",
            "4713-01-01 BC",
            "5874897-12-31",
        ],
    },
    Typed {
        name: "timestamp",
        common: |r| {
            format!(
                "{:04}-{:02}-{:02} {:02}:{:02}:{:02}.{:06}",
                1 + r.below(9999),
                1 + r.below(12),
                1 + r.below(28),
                r.below(24),
                r.below(60),
                r.below(60),
                r.below(1_000_000)
            )
        },
        edges: &[
            "2024-01-05 10:00:00",
            "2024-01-05T10:00:00",
            "2024-01-05 10:00:00.1234567",
            "2024-01-05 10:00:00.9999995",
            "2024-01-05 24:00:00",
            "2024-01-05 23:59:60",
            "2024-01-05 10:00",
            "2024-01-05",
            "infinity",
            "-infinity",
            "2024-01-05 10:00:00+02",
            "2024-01-05 10:00:00 BC",
            "294276-12-31 23:59:59",
            "2024-01-05 25:00:00",
            "2024-01-05 10:60:00",
        ],
    },
    Typed {
        name: "timestamptz",
        common: |r| {
            format!(
                "{:04}-{:02}-{:02} {:02}:{:02}:{:02}{}",
                1 + r.below(9999),
                1 + r.below(12),
                1 + r.below(28),
                r.below(24),
                r.below(60),
                r.below(60),
                r.pick(&["", "+00", "+02", "-05:30", "Z", " UTC"])
            )
        },
        edges: &[
            "2024-01-05 10:00:00+14",
            "2024-01-05 10:00:00+15",
            "2024-01-05 10:00:00 Europe/Paris",
            "2024-01-05 10:00:00 PST",
            "2024-03-10 02:30:00 America/New_York",
            "2024-01-05 10:00:00+0530",
            "2024-01-05T10:00:00.5Z",
            "infinity",
            "2024-01-05 10:00:00 XYZ",
        ],
    },
    Typed {
        name: "time",
        common: |r| {
            format!(
                "{:02}:{:02}:{:02}.{:03}",
                r.below(24),
                r.below(60),
                r.below(60),
                r.below(1000)
            )
        },
        edges: &[
            "24:00:00",
            "24:00:01",
            "23:59:60",
            "00:00",
            "1:2:3",
            "12:00:00.9999995",
            "12:00 PM",
            "allballs",
            "25:00",
        ],
    },
    Typed {
        name: "interval",
        common: |r| {
            format!(
                "{} days {:02}:{:02}:{:02}",
                int_in(r, -1000, 1000),
                r.below(24),
                r.below(60),
                r.below(60)
            )
        },
        edges: &[
            "1 year 2 mons",
            "P1Y2M3DT4H5M6S",
            "-1 day +02:00",
            "1.5 days",
            "@ 1 hour ago",
            "178000000 years",
            "00:00:00.0000001",
            "1 fortnight",
        ],
    },
    Typed {
        name: "jsonb",
        common: |r| {
            r.pick(&[
                "{\"a\": 1}",
                "[1, 2, 3]",
                "\"x\"",
                "null",
                "true",
                "{\"b\": [1.50, \"é\"]}",
                "1e3",
            ])
            .to_string()
        },
        edges: &[
            "{\"a\":1,\"a\":2}",
            "[1,2",
            "{'a':1}",
            "\"\\u0000\"",
            "1.0000000000000000000001",
            "NaN",
            "",
            " {} ",
        ],
    },
    Typed {
        name: "integer[]",
        common: |r| format!("{{{},{}}}", int_in(r, -99, 99), int_in(r, -99, 99)),
        edges: &[
            "{}",
            "{NULL}",
            "{{1,2},{3,4}}",
            "{1,{2}}",
            "[0:1]={1,2}",
            "{ 1 , 2 }",
            "{\"1\"}",
            "1,2",
        ],
    },
    Typed {
        name: "uuid",
        common: |r| {
            let (a, b) = (r.next(), r.next());
            let h = format!("{a:016x}{b:016x}");
            format!(
                "{}-{}-{}-{}-{}",
                &h[..8],
                &h[8..12],
                &h[12..16],
                &h[16..20],
                &h[20..]
            )
        },
        edges: &[
            "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11",
            "{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}",
            "a0eebc999c0b4ef8bb6d6bb9bd380a11",
            "a0ee-bc99-9c0b-4ef8-bb6d-6bb9-bd38-0a11",
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1",
            "not-a-uuid",
            " a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
        ],
    },
    Typed {
        name: "bytea",
        common: |r| {
            let n = r.below(8);
            let hex: String = (0..n).map(|_| format!("{:02x}", r.below(256))).collect();
            format!("\\x{hex}")
        },
        edges: &[
            "\\x",
            "\\xDEADbeef",
            "\\xabc",
            "\\x0g",
            "abc",
            "\\\\",
            "\\001",
            "\\x 00",
            "a\\000b",
        ],
    },
    Typed {
        name: "text",
        common: |r| String::from_utf8(text(r, &[])).unwrap_or_default(),
        edges: &["\\.", "\\N", " "],
    },
];

/// MariaDB's column types, and their values as strict mode takes or refuses them.
/// A JSON document of each kind: object, array, string, null, boolean.
fn json_value(rng: &mut Rng) -> String {
    let documents = ["{\"a\": 1}", "[1, 2, 3]", "\"x\"", "null", "true"];
    rng.pick(&documents).to_string()
}

const MARIADB_TYPES: &[Typed] = &[
    Typed {
        name: "TINYINT",
        common: |r| int_in(r, -128, 127),
        edges: &[
            "127", "-128", "128", "-129", "+5", " 5", "5 ", "1.5", "1.4", "1e2", "0x10", "", "05",
            "-0",
        ],
    },
    Typed {
        name: "SMALLINT UNSIGNED",
        common: |r| int_in(r, 0, 65535),
        edges: &["65535", "65536", "-1", "-0", "+1", "1.0"],
    },
    Typed {
        name: "INT",
        common: |r| int_in(r, i32::MIN as i64, i32::MAX as i64),
        edges: &[
            "2147483647",
            "-2147483648",
            "2147483648",
            "99999999999999999999",
            " -5",
            "1_0",
        ],
    },
    Typed {
        name: "BIGINT UNSIGNED",
        common: |r| (r.next() >> r.below(64)).to_string(),
        edges: &[
            "18446744073709551615",
            "18446744073709551616",
            "-1",
            "+18",
            "1e19",
        ],
    },
    Typed {
        name: "DECIMAL(10,2)",
        common: |r| format!("{}.{:02}", int_in(r, -99_999_999, 99_999_999), r.below(100)),
        edges: &[
            "1.005",
            "1.004",
            "-1.005",
            "99999999.99",
            "99999999.995",
            "100000000",
            "-0.001",
            "1e2",
            ".5",
            "5.",
            "+1",
            " 1",
            "1,5",
            "0.0000001",
        ],
    },
    Typed {
        name: "DOUBLE",
        common: |r| {
            format!(
                "{}",
                f64::from_bits(r.next() & 0x7fef_ffff_ffff_ffff)
                    * if r.one_in(2) { -1.0 } else { 1.0 }
            )
        },
        edges: &[
            "1.7976931348623157e308",
            "1e309",
            "-0",
            "NaN",
            "inf",
            "1e-400",
            "0x10",
            "1e",
            ".e1",
            "5e-324",
        ],
    },
    Typed {
        name: "FLOAT",
        common: |r| format!("{}", f32::from_bits(r.next() as u32 & 0x7f7f_ffff)),
        edges: &["3.4e38", "3.5e38", "1e-46", "-0", "16777217"],
    },
    Typed {
        name: "DATE",
        common: |r| {
            format!(
                "{:04}-{:02}-{:02}",
                1000 + r.below(9000),
                1 + r.below(12),
                1 + r.below(28)
            )
        },
        edges: &[
            "2024-02-29",
            "2023-02-29",
            "0000-00-00",
            "1000-01-01",
            "0001-01-01",
            "9999-12-31",
            "10000-01-01",
            "2024-1-5",
            "20240105",
            "2024/01/05",
            "2024-01-05 10:00:00",
            "2024-13-01",
            " 2024-01-05",
        ],
    },
    Typed {
        name: "DATETIME(3)",
        common: |r| {
            format!(
                "{:04}-{:02}-{:02} {:02}:{:02}:{:02}.{:03}",
                1000 + r.below(9000),
                1 + r.below(12),
                1 + r.below(28),
                r.below(24),
                r.below(60),
                r.below(60),
                r.below(1000)
            )
        },
        edges: &[
            "2024-01-05 10:00:00.1234",
            "2024-01-05 10:00:00.9995",
            "2024-01-05T10:00:00",
            "2024-01-05 24:00:00",
            "2024-01-05",
            "9999-12-31 23:59:59.999",
            "2024-01-05 10:00",
            "2024-01-05 10:60:00",
        ],
    },
    Typed {
        name: "TIME",
        common: |r| format!("{:02}:{:02}:{:02}", r.below(24), r.below(60), r.below(60)),
        edges: &[
            "838:59:59",
            "839:00:00",
            "-838:59:59",
            "24:00:00",
            "12:00",
            "1 12:00:00",
            "12:60:00",
            "120000",
            "-00:00:01",
        ],
    },
    Typed {
        name: "VARCHAR(5)",
        common: |r| {
            (0..r.below(6))
                .map(|_| *r.pick(&["a", "é", "✓", " ", "'", "\\"]))
                .collect()
        },
        edges: &[
            "abcdef",
            "ééééé",
            "éééééé",
            "abcd ",
            "abcde ",
            "abcde  ",
            "日本語日本",
        ],
    },
    Typed {
        name: "CHAR(3)",
        common: |r| (0..r.below(4)).map(|_| *r.pick(&["x", "ü", " "])).collect(),
        edges: &["abcd", "ab ", "abc ", "   ", "    "],
    },
    Typed {
        name: "ENUM('a','b','c')",
        common: |r| r.pick(&["a", "b", "c"]).to_string(),
        edges: &["d", "A", " a", "a ", "", "1", "0", "3", "4"],
    },
    Typed {
        name: "JSON",
        common: json_value,
        edges: &["[1,2", "{'a':1}", "", "1e400", "{\"a\":1,\"a\":2}", " {} "],
    },
];

/// Text as SQLite's text, blob and `ANY` columns take it: words, and numbers a column of
/// numeric affinity would convert.
fn sqlite_text(rng: &mut Rng) -> String {
    let words = [
        "a", "héllo", "日本", " x ", "1", "-2.50", "1e3", "NULL", "\\N", "0x1F", "'",
    ];
    rng.pick(&words).to_string()
}

const SQLITE_INTEGER: Typed = Typed {
    name: "INTEGER",
    common: |r| int_in(r, i64::MIN, i64::MAX),
    edges: &[
        "9223372036854775807",
        "-9223372036854775808",
        "9223372036854775808",
        "-9223372036854775809",
        "+7",
        " 42",
        "42 ",
        "\t3",
        "007",
        "-0",
        "1.0",
        "1.5",
        "1e2",
        "1e19",
        "0x1F",
        "1_000",
        "٣",
        "",
        "abc",
        "NaN",
        "Infinity",
    ],
};

const SQLITE_REAL: Typed = Typed {
    name: "REAL",
    common: |r| {
        let sign = if r.one_in(3) { "-" } else { "" };
        let (int, frac) = (r.next() % 1_000_000, r.next() % 1_000_000_000);
        format!("{sign}{int}.{frac}e{}", int_in(r, -320, 300))
    },
    edges: &[
        "1.7976931348623157e308",
        "1.7976931348623159e308",
        "1e309",
        "-1e309",
        "4.9e-324",
        "2e-324",
        "1e-400",
        "-0.0",
        "0",
        ".5",
        "5.",
        "+.1",
        " 3.14 ",
        "1,5",
        "1e",
        "e5",
        "NaN",
        "inf",
        "Infinity",
        "0x10",
        "",
        "9223372036854775808",
        "0.1000000000000000055511151231257827021181583404541015625",
        "1.00000000000000011102230246251565404236316680908203125",
    ],
};

const SQLITE_NUMERIC: Typed = Typed {
    name: "NUMERIC",
    common: |r| match r.one_in(2) {
        true => int_in(r, -1_000_000_000_000, 1_000_000_000_000),
        false => format!("{}.{:03}", int_in(r, -99_999, 99_999), r.below(1000)),
    },
    edges: &[
        "1.000",
        "1.5e300",
        "1e2",
        "0.1",
        "9223372036854775807",
        "9223372036854775808",
        "12345678901234567890",
        "-0",
        "-0.0",
        " 7",
        "",
        "x",
    ],
};

const SQLITE_TEXT: Typed = Typed {
    name: "TEXT",
    common: sqlite_text,
    edges: &["", " ", "  padded  "],
};

const SQLITE_BLOB: Typed = Typed {
    name: "BLOB",
    common: sqlite_text,
    edges: &["", " "],
};

/// SQLite's declared types as `.import` meets them: each column's affinity converts the text
/// (`' 42'` into an INTEGER column is the integer 42, `abc` stays text), a JSON column
/// (NUMERIC affinity) holds text. Not here: what inrush reads otherwise by design, said in
/// docs/sqlite.md (booleans stored as 1 and 0, `\x` hex as a blob) or what SQLite has no
/// judgement of its own on (dates).
const SQLITE_TYPES: &[Typed] = &[
    SQLITE_INTEGER,
    SQLITE_REAL,
    SQLITE_NUMERIC,
    SQLITE_TEXT,
    SQLITE_BLOB,
    Typed {
        name: "JSON",
        common: json_value,
        edges: &[
            "[1,2",
            "{'a':1}",
            "",
            "1e400",
            "{\"a\":1,\"a\":2}",
            " {} ",
            "[1,]",
            "NaN",
            "1",
            "2.5",
        ],
    },
];

/// A STRICT table's types, each of which refuses what it cannot hold.
const SQLITE_STRICT_TYPES: &[Typed] = &[
    SQLITE_INTEGER,
    SQLITE_REAL,
    SQLITE_TEXT,
    SQLITE_BLOB,
    Typed {
        name: "ANY",
        common: sqlite_text,
        edges: &["", "9223372036854775808", " 5"],
    },
];

/// How a typed file spells NULL, as its reference reader takes it.
#[derive(Clone, Copy, PartialEq)]
enum Nulls {
    /// An empty unquoted field (COPY's CSV).
    Empty,
    /// The unquoted word `NULL` (`LOAD DATA` with `ENCLOSED BY`; inrush's `--null NULL`);
    /// a value `NULL` is quoted, which both read as text.
    Word,
    /// None (`.import`, which has no NULL of its own).
    Never,
}

/// A file of 1 to 4 columns of `types` (one type or several), values of their common spellings
/// and, one field in twenty, an edge; one field in eight NULL, spelled as `nulls` says. For a
/// reader with no header option of its own (`LOAD DATA`, `.import`), a header always
/// (`IGNORE 1 LINES`, `--skip 1`); else in half the files. An empty value is quoted either way
/// ([`field`]).
fn typed_file(rng: &mut Rng, types: &'static [Typed], nulls: Nulls) -> Case {
    let width = 1 + rng.below(4);
    let types: Vec<&Typed> = (0..width).map(|_| rng.pick(types)).collect();
    let header = nulls != Nulls::Empty || rng.one_in(2);
    let mut out = Vec::new();
    if header {
        let names: Vec<String> = (0..width).map(|i| format!("c{i}")).collect();
        out.extend_from_slice(names.join(",").as_bytes());
        out.push(b'\n');
    }
    for _ in 0..1 + rng.below(12) {
        for (i, t) in types.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            let null = nulls != Nulls::Never && rng.one_in(8);
            let value = match (null, rng.one_in(20)) {
                (true, _) => None,
                (_, true) => Some(rng.pick(t.edges).to_string()),
                _ => Some((t.common)(rng)),
            };
            match (value, nulls) {
                (None, Nulls::Word) => out.extend_from_slice(b"NULL"),
                (Some(v), Nulls::Word) if v == "NULL" => out.extend_from_slice(b"\"NULL\""),
                (value, _) => out.extend(field(rng, value.as_deref().map(str::as_bytes))),
            }
        }
        out.push(b'\n');
    }
    Case {
        types: types.iter().map(|t| t.name).collect(),
        header,
        encoding: "UTF8",
        bytes: out,
    }
}

fn typed_case(rng: &mut Rng) -> Case {
    typed_file(rng, TYPES, Nulls::Empty)
}

fn mariadb_case(rng: &mut Rng) -> Case {
    typed_file(rng, MARIADB_TYPES, Nulls::Word)
}

fn sqlite_case(rng: &mut Rng) -> Case {
    typed_file(rng, SQLITE_TYPES, Nulls::Never)
}

fn sqlite_strict_case(rng: &mut Rng) -> Case {
    typed_file(rng, SQLITE_STRICT_TYPES, Nulls::Never)
}

/// `c0 TYPE, c1 TYPE, ...`: the case's columns.
fn definitions(case: &Case) -> String {
    let columns: Vec<String> = (0..case.types.len())
        .map(|i| format!("c{i} {}", case.types[i]))
        .collect();
    columns.join(", ")
}

/// Whether inrush (its exit code and output) and `reference`, which loaded the file or refused
/// it, agree: the same rows of `ours` and `theirs`, as `rows` reads them, or both refused and
/// nothing of the file in `ours`. `Ok(loaded)`, or how they differ.
fn agree<T: PartialEq + std::fmt::Debug>(
    reference: &str,
    (code, out): (i32, String),
    theirs: Result<(), String>,
    rows: &dyn Fn(&str) -> Vec<T>,
) -> Result<bool, String> {
    match (code, theirs) {
        (0, Ok(())) => {
            let (ours, theirs) = (rows("ours"), rows("theirs"));
            match ours == theirs {
                true => Ok(true),
                false => Err(format!(
                    "rows differ:\n  inrush: {ours:?}\n  {reference}: {theirs:?}"
                )),
            }
        }
        (0, Err(e)) => Err(format!("inrush loaded what {reference} refuses ({e})")),
        (4, Err(_)) => match rows("ours").len() {
            0 => Ok(false),
            left => Err(format!("inrush refused the file but left {left} rows")),
        },
        (code, Ok(())) => Err(format!(
            "inrush exited {code} where {reference} loads it: {out}"
        )),
        (code, Err(e)) => Err(format!(
            "inrush exited {code}, not 4, where {reference} refuses ({e}): {out}"
        )),
    }
}

/// How one file went into MariaDB both ways: inrush, and the server's own strict
/// `LOAD DATA INFILE`.
fn against_load_data(db: &MariaDb, dir: &std::path::Path, case: &Case) -> Result<bool, String> {
    let columns = definitions(case);
    db.exec(&format!(
        "DROP TABLE IF EXISTS ours, theirs; CREATE TABLE ours ({columns}) ENGINE=InnoDB; CREATE TABLE theirs ({columns}) ENGINE=InnoDB"
    ));
    let path = mariadb_common::write(dir, "case.csv", &String::from_utf8_lossy(&case.bytes));
    let inrush = mariadb_common::load(&path, db, "ours", &["--connections", "1", "--null", "NULL"]);
    let loaded = mariadb_common::server_load(db, &path, "theirs");
    let order: Vec<String> = (1..=case.types.len()).map(|i| i.to_string()).collect();
    let rows = |t: &str| db.rows(&format!("SELECT * FROM {t} ORDER BY {}", order.join(", ")));
    agree("LOAD DATA", inrush, loaded, &rows)
}

#[test]
fn typed_values_load_into_mariadb_as_its_strict_load_data_reads_them() {
    let db = MariaDb::fresh("fuzz");
    let dir = mariadb_common::shared_dir();
    fuzz("MariaDB typed CSV", 300, mariadb_case, &mut |case| {
        against_load_data(&db, dir.path(), case)
    });
}

/// What `.import` of `case` into `theirs` stores: each field bound as text to an INSERT (with
/// the library inrush links, so both convert text to numbers alike), each row as
/// [`sqlite_common::typed_rows`] writes it, and whether SQLite itself calls it wrong for its
/// declared types: a STRICT table refuses it, a column of numeric affinity kept the text as
/// text, a JSON column's text (JSON has NUMERIC affinity) is not JSON (`json_valid`).
fn imported(db: &std::path::Path, case: &Case) -> Vec<(String, bool)> {
    let conn = rusqlite::Connection::open(db).unwrap();
    let names: Vec<String> = (0..case.types.len()).map(|i| format!("c{i}")).collect();
    let stored: Vec<String> = names
        .iter()
        .map(|c| format!("typeof({c}) || ':' || quote({c})"))
        .collect();
    // Wrong, in SQLite's own words: a number column kept the text as text; a JSON column's
    // text (the field itself, ?N, before its NUMERIC affinity converts it) is not JSON.
    let wrong: Vec<String> = case
        .types
        .iter()
        .zip(&names)
        .enumerate()
        .filter_map(|(i, (t, c))| match *t {
            "JSON" => Some(format!(" OR NOT json_valid(?{})", i + 1)),
            t if numeric_affinity(t) => Some(format!(" OR typeof({c}) IN ('text', 'blob')")),
            _ => None,
        })
        .collect();
    let params: Vec<String> = (1..=names.len()).map(|i| format!("?{i}")).collect();
    let insert = format!(
        "INSERT INTO theirs VALUES ({}) RETURNING {}, false{}",
        params.join(", "),
        stored.join(" || ' | ' || "),
        wrong.concat()
    );
    let text = String::from_utf8(case.bytes.clone()).unwrap();
    let lines = text.lines().skip(usize::from(case.header));
    lines
        .map(|line| {
            let fields = sqlite_common::csv_fields(line);
            conn.query_row(&insert, rusqlite::params_from_iter(&fields), |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, bool>(1)?))
            })
            .unwrap_or((String::new(), true))
        })
        .collect()
}

/// SQLite's affinity rules (datatype3.html, 3.1) for the numeric affinities, INTEGER, REAL and
/// NUMERIC.
fn numeric_affinity(declared: &str) -> bool {
    let t = declared.to_ascii_uppercase();
    let text = ["CHAR", "CLOB", "TEXT"].iter().any(|w| t.contains(w));
    t.contains("INT") || !(text || t.contains("BLOB") || t.is_empty() || t == "ANY")
}

/// How one file went into SQLite both ways: inrush with room for every bad row, and
/// [`imported`]. They agree when inrush loaded exactly the rows SQLite does not call wrong,
/// each as `.import` stores it, and set the others aside (exit 6). `Ok(true)` when no row was
/// wrong.
fn against_import(dir: &std::path::Path, case: &Case, strict: bool) -> Result<bool, String> {
    let db = dir.join("fuzz.db");
    let _ = std::fs::remove_file(&db);
    let columns = definitions(case);
    let strict = if strict { " STRICT" } else { "" };
    sqlite_common::exec(
        &db,
        &format!("CREATE TABLE ours ({columns}){strict}; CREATE TABLE theirs ({columns}){strict};"),
    );
    let csv = dir.join("case.csv");
    std::fs::write(&csv, &case.bytes).unwrap();
    let rejects = dir.join("case.rejects");
    let (code, out) = sqlite_common::inrush(&[
        "load",
        csv.to_str().unwrap(),
        "--to",
        db.to_str().unwrap(),
        "--table",
        "ours",
        "--header",
        "--no-progress",
        "--max-errors",
        "1000",
        "--rejects",
        rejects.to_str().unwrap(),
    ]);
    let model = imported(&db, case);
    let wrong = model.iter().filter(|(_, wrong)| *wrong).count();
    let mut theirs: Vec<String> = model.into_iter().filter(|r| !r.1).map(|r| r.0).collect();
    let names: Vec<String> = (0..case.types.len()).map(|i| format!("c{i}")).collect();
    let mut ours = sqlite_common::typed_rows(&db, "ours", &names, "rowid");
    ours.sort();
    theirs.sort();
    match (code, wrong) {
        (0, 0) | (6, 1..) if ours == theirs => Ok(wrong == 0),
        (0 | 6, _) => Err(format!(
            "exit {code}, {wrong} rows wrong by SQLite; rows differ:\n  inrush: {ours:?}\n  .import: {theirs:?}\n  {out}"
        )),
        _ => Err(format!("inrush exited {code}: {out}")),
    }
}

/// `generate`'s files against `.import`, into ordinary or STRICT tables.
fn fuzz_import(what: &str, generate: fn(&mut Rng) -> Case, strict: bool) {
    let dir = tempfile::tempdir().unwrap();
    fuzz(what, 300, generate, &mut |case| {
        against_import(dir.path(), case, strict)
    });
}

#[test]
fn typed_values_load_into_sqlite_as_import_stores_them() {
    fuzz_import("SQLite typed CSV", sqlite_case, false);
}

#[test]
fn typed_values_load_into_strict_sqlite_tables_as_import_stores_them() {
    fuzz_import("SQLite STRICT typed CSV", sqlite_strict_case, true);
}

/// What a table holds, in one order: each row as PostgreSQL's text of it.
fn contents(db: &Db, table: &str) -> Vec<Option<String>> {
    let rows = db.rows(&format!("SELECT {table}::text FROM {table} ORDER BY 1"));
    rows.into_iter().map(|r| r[0].clone()).collect()
}

/// How one file went both ways: `Ok(loaded)` when they agree (whether both loaded it),
/// `Err(how they differ)`.
fn against_copy(db: &Db, dir: &std::path::Path, case: &Case) -> Result<bool, String> {
    let columns = definitions(case);
    db.exec(&format!(
        "DROP TABLE IF EXISTS ours, theirs; CREATE TABLE ours ({columns}); CREATE TABLE theirs ({columns})"
    ));
    let path = dir.join("case.csv");
    std::fs::write(&path, &case.bytes).unwrap();
    let mut args = vec![
        "load",
        path.to_str().unwrap(),
        "--no-progress",
        "--to",
        &db.conninfo,
    ];
    args.extend(["--table", "ours", "--format", "csv", "--connections", "1"]);
    args.extend(["--encoding", case.encoding]);
    if case.header {
        args.push("--header");
    }
    let inrush = inrush_testkit::run(BIN, &args);
    let header = if case.header { ", HEADER" } else { "" };
    let options = format!("{header}, ENCODING '{}'", case.encoding);
    // Intended: a UTF-8 byte order mark that opens the file is not data (COPY reads it as the
    // first field's first character; Excel writes one).
    let bom = "\u{feff}".as_bytes();
    let copied = copy(
        db,
        case.bytes.strip_prefix(bom).unwrap_or(&case.bytes),
        &options,
    );
    agree("COPY", inrush, copied, &|t| contents(db, t))
}

fn copy(db: &Db, bytes: &[u8], options: &str) -> Result<(), String> {
    use std::io::Write;
    let mut client = db.target.connect_blocking().expect("connect");
    let sql = format!("COPY theirs FROM STDIN (FORMAT csv{options})");
    let mut writer = client.copy_in(&sql).map_err(|e| e.to_string())?;
    writer.write_all(bytes).map_err(|e| e.to_string())?;
    writer.finish().map(|_| ()).map_err(|e| format!("{e:?}"))
}

/// Files from `generate` until `INRUSH_FUZZ_CASES` (`cases` by default) are tried or
/// `INRUSH_FUZZ_MINUTES` pass, each given to `compare`; fails naming every difference.
fn fuzz(
    what: &str,
    cases: usize,
    generate: fn(&mut Rng) -> Case,
    compare: &mut dyn FnMut(&Case) -> Result<bool, String>,
) {
    let seed = std::env::var("INRUSH_FUZZ_SEED").map_or(20261203, |s| s.parse().unwrap());
    let cases: usize = std::env::var("INRUSH_FUZZ_CASES").map_or(cases, |s| s.parse().unwrap());
    let minutes: Option<u64> = std::env::var("INRUSH_FUZZ_MINUTES")
        .ok()
        .map(|m| m.parse().unwrap());
    let until = minutes.map(|m| Instant::now() + Duration::from_secs(m * 60));
    let mut rng = Rng(seed);
    let (mut tried, mut refused, mut found) = (0usize, 0usize, Vec::new());
    while match until {
        Some(until) => Instant::now() < until,
        None => tried < cases,
    } {
        let case = generate(&mut rng);
        tried += 1;
        match compare(&case) {
            Ok(loaded) => refused += usize::from(!loaded),
            Err(difference) => {
                let input = String::from_utf8_lossy(&case.bytes);
                let types = case.types.join(", ");
                found.push(format!(
                    "file {tried} (seed {seed}, {types}): {difference}\n  input: {input:?}"
                ));
            }
        }
    }
    println!(
        "fuzz: {tried} {what} files tried (seed {seed}), {refused} refused by both, {} differences",
        found.len()
    );
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// `generate`'s files against PostgreSQL's COPY.
fn fuzz_copy(what: &str, generate: fn(&mut Rng) -> Case) {
    let db = Db::fresh("fuzz");
    let dir = tempfile::tempdir().unwrap();
    fuzz(what, 400, generate, &mut |case| {
        against_copy(&db, dir.path(), case)
    });
}

#[test]
fn csv_files_load_as_postgresqls_copy_reads_them() {
    fuzz_copy("CSV", case);
}

#[test]
fn typed_values_load_as_postgresqls_copy_reads_them() {
    fuzz_copy("typed CSV", typed_case);
}

/// A column type for JSON lines, and JSON values for it: the ones most lines hold, and edges
/// (other JSON kinds, spellings, limits), one value in twenty.
struct JsonTyped {
    name: &'static str,
    common: fn(&mut Rng) -> String,
    edges: &'static [&'static str],
}

/// A JSON string of pieces that need escaping, escaped as JSON writers do (or with `\u`).
fn json_string(rng: &mut Rng) -> String {
    const PARTS: &[&str] = &[
        "a",
        "Z",
        " ",
        ",",
        "\\\"",
        "\\\\",
        "\\/",
        "\\n",
        "\\t",
        "\\r",
        "\\b",
        "\\f",
        "é",
        "\\u00e9",
        "\\ud83d\\ude00",
        "😀",
        "'",
        "{",
        "[1]",
        "\\u0041",
        "NULL",
        "\\\\N",
    ];
    let mut s = String::from("\"");
    for _ in 0..rng.below(8) {
        s.push_str(rng.pick::<&str>(PARTS));
    }
    s.push('"');
    s
}

/// Any JSON value, nested now and then.
fn json_any(rng: &mut Rng, depth: usize) -> String {
    match rng.below(if depth > 1 { 4 } else { 6 }) {
        0 => int_in(rng, -1000, 1000),
        1 => json_string(rng),
        2 => rng
            .pick(&["true", "false", "null", "1.50", "-0", "1e3"])
            .to_string(),
        3 => format!("{}.{:02}", int_in(rng, -99, 99), rng.below(100)),
        4 => {
            let items: Vec<String> = (0..rng.below(3))
                .map(|_| json_any(rng, depth + 1))
                .collect();
            format!("[{}]", items.join(", "))
        }
        _ => {
            let items: Vec<String> = (0..rng.below(3))
                .map(|i| format!("\"k{i}\": {}", json_any(rng, depth + 1)))
                .collect();
            format!("{{{}}}", items.join(","))
        }
    }
}

const JSON_TYPES: &[JsonTyped] = &[
    JsonTyped {
        name: "integer",
        common: |rng| int_in(rng, -100_000, 100_000),
        edges: &[
            "2147483647",
            "2147483648",
            "-2147483648",
            "1.0",
            "1e2",
            "-0",
            "\"12\"",
            "\" 12 \"",
            "true",
            "[1]",
            "{}",
            "\"\"",
            "12.5",
        ],
    },
    JsonTyped {
        name: "bigint",
        common: |rng| int_in(rng, i64::MIN / 2, i64::MAX / 2),
        edges: &[
            "9223372036854775807",
            "9223372036854775808",
            "-9223372036854775808",
            "1E2",
            "0x10",
        ],
    },
    JsonTyped {
        name: "numeric(12,3)",
        common: |rng| format!("{}.{:03}", int_in(rng, -99_999, 99_999), rng.below(1000)),
        edges: &[
            "12.30",
            "1e-3",
            "1.23456",
            "-0.0005",
            "123456789.1234",
            "1E+5",
            "\"NaN\"",
            "\"1,5\"",
            "1000000000",
        ],
    },
    JsonTyped {
        name: "double precision",
        common: |rng| {
            format!(
                "{}.{}e{}",
                int_in(rng, -9, 9),
                rng.below(1000),
                int_in(rng, -30, 30)
            )
        },
        edges: &[
            "1e308",
            "1e309",
            "-0.0",
            "\"NaN\"",
            "\"Infinity\"",
            "\"-inf\"",
            "4.9e-324",
            "1e-400",
            "0.1",
            "12345678901234567890",
        ],
    },
    JsonTyped {
        name: "boolean",
        common: |rng| rng.pick(&["true", "false"]).to_string(),
        edges: &[
            "\"t\"", "\"yes\"", "\"off\"", "1", "0", "\"TRUE\"", "\"\"", "null", "\" on \"",
        ],
    },
    JsonTyped {
        name: "text",
        common: json_string,
        edges: &[
            "12.30",
            "1e3",
            "true",
            "{\"a\": [1, 2]}",
            "[1,\"x\"]",
            "\"\\u0000\"",
            "\"\\ud800\"",
            "\"\\uDC00x\"",
            "\"\"",
            "{ \"a\" :1 }",
        ],
    },
    JsonTyped {
        name: "varchar(5)",
        common: json_string,
        edges: &[
            "\"abcdef\"",
            "\"abcde \"",
            "\"😀😀😀😀😀\"",
            "123456",
            "\"ab\\u0000\"",
        ],
    },
    JsonTyped {
        name: "date",
        common: |rng| {
            format!(
                "\"{}-{:02}-{:02}\"",
                1900 + rng.below(200),
                1 + rng.below(12),
                1 + rng.below(28)
            )
        },
        edges: &[
            "\"2024-02-29\"",
            "\"2023-02-29\"",
            "\"infinity\"",
            "\"5874897-12-31\"",
            "\"4713-01-01 BC\"",
            "20240101",
            "\"2024-01-01T10:00:00\"",
            "\" 2024-01-02 \"",
        ],
    },
    JsonTyped {
        name: "timestamptz",
        common: |rng| {
            format!(
                "\"{}-{:02}-{:02}T{:02}:{:02}:{:02}Z\"",
                1970 + rng.below(100),
                1 + rng.below(12),
                1 + rng.below(28),
                rng.below(24),
                rng.below(60),
                rng.below(60)
            )
        },
        edges: &[
            "\"2024-01-01 10:00:00+05:30\"",
            "\"2024-01-01T10:00:00.1234567Z\"",
            "\"-infinity\"",
            "\"2024-13-01T00:00:00Z\"",
            "\"2024-06-01 12:00\"",
            "1700000000",
        ],
    },
    JsonTyped {
        name: "jsonb",
        common: |rng| json_any(rng, 0),
        edges: &["{\"a\":1,\"a\":2}", "\"\\u0000\"", "1.000", "[ ]", "1e400"],
    },
    JsonTyped {
        name: "json",
        common: |rng| json_any(rng, 0),
        edges: &["{ \"a\" : 1 ,\"a\":2 }", "[1 ,2]", "1.000", "\"\\u00e9\""],
    },
    JsonTyped {
        name: "integer[]",
        common: |rng| {
            let items: Vec<String> = (0..rng.below(4)).map(|_| int_in(rng, -50, 50)).collect();
            format!("[{}]", items.join(","))
        },
        edges: &[
            "[[1,2],[3,4]]",
            "[[1],[2,3]]",
            "[1,null]",
            "[\"1\"]",
            "[1.5]",
            "\"{1,2}\"",
            "[]",
            "[[]]",
            "{\"a\":1}",
            "5",
        ],
    },
    JsonTyped {
        name: "text[]",
        common: |rng| {
            let items: Vec<String> = (0..rng.below(4)).map(|_| json_string(rng)).collect();
            format!("[{}]", items.join(", "))
        },
        edges: &[
            "[\"a,b\", \"{c}\", \"\\\"q\\\"\", null, \"NULL\"]",
            "[1, true]",
            "[{\"a\":1}]",
            "[[\"a\"],[\"b\"]]",
            "[\"\"]",
        ],
    },
];

/// A JSON lines file of 1 to 4 columns: the first line names every column (in an order of its
/// own), later ones may leave a key out (NULL) or, rarely, carry a key no column has, a key twice,
/// or be no object at all; blank lines and CRLF line ends now and then.
fn json_case(rng: &mut Rng) -> Case {
    let width = 1 + rng.below(4);
    let types: Vec<&JsonTyped> = (0..width).map(|_| rng.pick(JSON_TYPES)).collect();
    let mut out = String::new();
    for line in 0..1 + rng.below(10) {
        let mut keys: Vec<usize> = (0..width).collect();
        for i in (1..keys.len()).rev() {
            keys.swap(i, rng.below(i + 1));
        }
        let mut members = Vec::new();
        for &k in &keys {
            if line > 0 && rng.one_in(8) {
                continue;
            }
            let t = types[k];
            let value = match rng.below(20) {
                0 => "null".to_string(),
                1 => rng.pick(t.edges).to_string(),
                _ => (t.common)(rng),
            };
            members.push(format!("\"c{k}\": {value}"));
            if rng.one_in(60) {
                members.push(format!("\"c{k}\": {}", (t.common)(rng)));
            }
        }
        if line > 0 && rng.one_in(40) {
            members.push("\"extra\": 1".to_string());
        }
        let text = match line > 0 && rng.one_in(60) {
            true => rng
                .pick(&["[1, 2]", "\"x\"", "{\"c0\": ", "null"])
                .to_string(),
            false => format!("{{{}}}", members.join(", ")),
        };
        out.push_str(&text);
        out.push_str(if rng.one_in(10) { "\r\n" } else { "\n" });
        if rng.one_in(15) {
            out.push('\n');
        }
    }
    Case {
        types: types.iter().map(|t| t.name).collect(),
        header: false,
        encoding: "UTF8",
        bytes: out.into_bytes(),
    }
}

/// How one JSON lines file went both ways: inrush, and the server's own reading of each line
/// into a row, `json_populate_record` (each key by its column's name, each value read by its
/// column's type as its text would be, a JSON array into an array column as an array), with
/// inrush's own rules, said in docs/loading.md: a key that names no column, or a key twice,
/// refuses its line; a `json` column takes its value as written (`->`, as COPY of that text
/// would), where `json_populate_record` writes a string's escapes anew (`"\u00e9"` as `"é"`).
fn against_populate(db: &Db, dir: &std::path::Path, case: &Case) -> Result<bool, String> {
    let columns = definitions(case);
    db.exec(&format!(
        "DROP TABLE IF EXISTS ours, theirs, lines; CREATE TABLE ours ({columns}); \
         CREATE TABLE theirs ({columns}); CREATE TABLE lines (n int, line text)"
    ));
    let path = dir.join("case.jsonl");
    std::fs::write(&path, &case.bytes).unwrap();
    let inrush = inrush_testkit::run(
        BIN,
        &[
            "load",
            path.to_str().unwrap(),
            "--no-progress",
            "--to",
            &db.conninfo,
            "--table",
            "ours",
            "--connections",
            "1",
        ],
    );
    let mut client = db.target.connect_blocking().expect("connect");
    let text = String::from_utf8(case.bytes.clone()).unwrap();
    for (n, line) in text.split('\n').enumerate() {
        let n = n as i32;
        client
            .execute("INSERT INTO lines VALUES ($1, $2)", &[&n, &line])
            .unwrap();
    }
    let names: Vec<String> = (0..case.types.len()).map(|i| format!("c{i}")).collect();
    let values: Vec<String> = names
        .iter()
        .zip(&case.types)
        .map(|(c, t)| match *t {
            "json" => format!(
                "CASE WHEN json_typeof(line::json -> '{c}') <> 'null' THEN line::json -> '{c}' END"
            ),
            _ => format!("r.{c}"),
        })
        .collect();
    let populated = client
        .query_one(
            "SELECT count(*) FROM lines WHERE btrim(line, E' \\t\\r') <> '' \
               AND json_typeof(line::json) = 'object' \
               AND (EXISTS (SELECT FROM json_object_keys(line::json) k WHERE k <> ALL($1)) \
                    OR (SELECT count(*) <> count(DISTINCT k) FROM json_object_keys(line::json) k))",
            &[&names],
        )
        .map_err(|e| format!("{e:?}"))
        .and_then(|refused| match refused.get::<_, i64>(0) {
            0 => client
                .batch_execute(&format!(
                    "INSERT INTO theirs SELECT {} \
                       FROM lines, json_populate_record(null::theirs, line::json) r \
                      WHERE btrim(line, E' \\t\\r') <> '' ORDER BY n",
                    values.join(", ")
                ))
                .map_err(|e| format!("{e:?}")),
            _ => Err("a key that names no column, or a key twice".to_string()),
        });
    agree("json_populate_record", inrush, populated, &|t| {
        contents(db, t)
    })
}

#[test]
fn json_lines_load_as_postgresqls_json_populate_record_reads_them() {
    let db = Db::fresh("fuzz");
    let dir = tempfile::tempdir().unwrap();
    fuzz("JSON lines", 300, json_case, &mut |case| {
        against_populate(&db, dir.path(), case)
    });
}
