//! Loads against a real PostgreSQL, checked against the server's own COPY of the same bytes.

mod support;

use inrush_core::Silent;
use inrush_load::summary::Parallelism;
use inrush_load::{Error, LoadOptions};
use inrush_read::csv::CsvOptions;
use support::{assert_same_as_copy, fresh_db, write_input};

fn no_tweak(_: &mut LoadOptions) {}

#[test]
fn csv_syntax_corpus_matches_server_copy() {
    let mut db = fresh_db();
    let cols = "a text, b text, c text";
    for data in inrush_testkit::CSV_SYNTAX_CORPUS {
        // A byte order mark is the one deliberate difference: inrush drops it, COPY keeps it.
        if data.starts_with(b"\xEF\xBB\xBF") {
            continue;
        }
        assert_same_as_copy(&mut db, cols, data, no_tweak);
    }
}

#[test]
fn byte_order_mark_is_dropped() {
    let mut db = fresh_db();
    db.exec("CREATE TABLE t (a int, b text)");
    let (_dir, path) = write_input(b"\xEF\xBB\xBF1,x\n", "csv");
    db.load(&db.load_options(&path, "t"), &Silent).unwrap();
    assert_eq!(db.rows_as_text("t"), ["(1,x)"]);
}

#[test]
fn dialect_options_match_server_copy() {
    let mut db = fresh_db();
    let cols = "a text, b text";
    let with = |csv: CsvOptions| move |o: &mut LoadOptions| o.csv = csv.clone();
    let tab = CsvOptions {
        delimiter: b'\t',
        ..Default::default()
    };
    assert_same_as_copy(&mut db, cols, b"1\t\"x\ty\"\n", with(tab));
    let semi_single = CsvOptions {
        delimiter: b';',
        quote: b'\'',
        escape: b'\'',
        ..Default::default()
    };
    assert_same_as_copy(&mut db, cols, b"'a;b';'it''s'\n", with(semi_single));
    let backslash = CsvOptions {
        escape: b'\\',
        ..Default::default()
    };
    assert_same_as_copy(
        &mut db,
        cols,
        b"\"a\\\"b\",\"c\\\\\"\n\"d\\e\",x\\y\n",
        with(backslash),
    );
    let null_word = CsvOptions {
        null: b"NULL".to_vec(),
        ..Default::default()
    };
    assert_same_as_copy(&mut db, cols, b"NULL,\"NULL\"\n,x\n", with(null_word));
    let header = CsvOptions {
        header: true,
        ..Default::default()
    };
    assert_same_as_copy(&mut db, cols, b"a,b\n1,2\n", with(header));
}

#[test]
fn types_corpus_matches_server_copy() {
    let mut db = fresh_db();
    db.exec("CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy'); CREATE DOMAIN posint AS int CHECK (VALUE > 0)");
    // One column per case: every value the server accepts must load identically; every value it
    // refuses must be refused. Each line is loaded on its own so one refusal tests one value.
    let cases: &[(&str, &[&str])] = &[
        (
            "smallint",
            &[
                "0", "-32768", "32767", "32768", " 42 ", "+7", "4x", "", "1_000", "0x1F",
            ],
        ),
        (
            "int",
            &[
                "0",
                "-2147483648",
                "2147483647",
                "2147483648",
                "  -5\t",
                "1e3",
                "007",
            ],
        ),
        (
            "bigint",
            &[
                "9223372036854775807",
                "-9223372036854775808",
                "9223372036854775808",
                "12",
            ],
        ),
        (
            "numeric",
            &[
                "0",
                "-0.00",
                "1.5e3",
                "123456789012345678901234567890.123456789",
                "NaN",
                "-.5",
                "5.",
                "1e-20",
                "abc",
            ],
        ),
        (
            "numeric(6,2)",
            &["1234.567", "9999.995", "0.005", "-0.004", "12345.1"],
        ),
        (
            "real",
            &[
                "1.5",
                "-0",
                "3.4e38",
                "3.5e38",
                "1e-46",
                "NaN",
                "-Infinity",
                "inf",
                "0x1p3",
                "1.17549435e-38",
            ],
        ),
        (
            "double precision",
            &[
                "0.1", "1e308", "1e309", "4.9e-324", "1e-400", "  2.5  ", "Infinity", "-inf", "1_0",
            ],
        ),
        (
            "boolean",
            &[
                "t", "TRUE", "yes", "on", "1", "f", "No", "off", "0", "of", "o", "maybe", " t ",
            ],
        ),
        (
            "varchar(5)",
            &["abc", "abcde", "abcdef", "abc   ", "héllo", "héllos"],
        ),
        ("char(4)", &["ab", "abcd", "abcde", "ab    "]),
        ("text", &["anything at all", " spaced "]),
        (
            "date",
            &[
                "2024-02-29",
                "2023-02-29",
                "1999-01-08",
                "January 8, 1999",
                "01/02/2003",
                "epoch",
                "infinity",
                "-infinity",
                "20240101",
                "0001-01-01 BC",
            ],
        ),
        (
            "time",
            &["04:05:06.789", "24:00:00", "23:59:60", "4:05 PM", "12:00"],
        ),
        (
            "timestamp",
            &[
                "2024-01-02 03:04:05.123456",
                "2024-01-02T03:04:05",
                "2024-01-02 03:04:05.1234567",
                "2024-01-02 03:04:05+02",
                "infinity",
            ],
        ),
        (
            "timestamptz",
            &[
                "2024-01-02 03:04:05+02",
                "2024-01-02 03:04:05Z",
                "2024-01-02 03:04:05",
                "2024-01-02 03:04:05 PST",
                "2024-06-01 12:00:00 Europe/Paris",
            ],
        ),
        (
            "interval",
            &[
                "1 day",
                "1 year 2 mons 3 days 04:05:06.5",
                "-01:02:03",
                "P1Y2M3DT4H5M6S",
                "1.5 days",
                "@ 1 hour ago",
                "3 fortnights",
            ],
        ),
        (
            "uuid",
            &[
                "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
                "{A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11}",
                "a0eebc999c0b4ef8bb6d6bb9bd380a11",
                "a0ee-bc99-9c0b-4ef8-bb6d-6bb9-bd38-0a11",
                "not-a-uuid",
            ],
        ),
        (
            "json",
            &[
                "{\"a\": [1, 2.5e3, null, true]}",
                "[]",
                "\"\\u00e9\"",
                "{bad}",
                "1e400",
            ],
        ),
        (
            "jsonb",
            &[
                "{\"b\": 1, \"a\": 2, \"a\": 3}",
                "\"\\u0000\"",
                "[1, {\"x\": \"y\"}]",
            ],
        ),
        (
            "bytea",
            &[
                "\\x00ff10",
                "\\xDEADbeef",
                "plain",
                "a\\\\b",
                "\\001\\377",
                "\\x0",
                "\\q",
            ],
        ),
        (
            "int[]",
            &[
                "{1,2,3}",
                "{}",
                "{1,NULL,3}",
                "{ 1 , 2 }",
                "{{1,2},{3,4}}",
                "[0:1]={5,6}",
                "{a}",
            ],
        ),
        (
            "text[]",
            &["{a,\"b c\",\"d\\\"e\",NULL,\"NULL\"}", "{ spaced , x }"],
        ),
        ("varchar(3)[]", &["{abc,de}", "{abcd}"]),
        ("mood", &["happy", "sad", "angry"]),
        ("mood[]", &["{ok,happy}"]),
        ("posint", &["5", "-5", "x"]),
        ("inet", &["10.0.0.1", "::1/128", "nonsense"]),
    ];
    for (ty, values) in cases {
        for value in *values {
            let mut line = String::from("\"");
            line.push_str(&value.replace('"', "\"\""));
            line.push_str("\"\n");
            assert_same_as_copy(&mut db, &format!("v {ty}"), line.as_bytes(), no_tweak);
        }
    }
}

#[test]
fn many_blocks_many_workers_match_server_copy() {
    let mut db = fresh_db();
    let mut data = Vec::new();
    for i in 0..3000 {
        let text = match i % 5 {
            0 => format!("\"line\n{i}\""),
            1 => format!("\"quote\"\"{i}\""),
            2 => String::new(),
            3 => "\"\"".to_string(),
            _ => format!("plain{i}"),
        };
        data.extend_from_slice(format!("{i},{text},2024-01-{:02}\n", i % 28 + 1).as_bytes());
    }
    for block_size in [1, 37, 4096] {
        assert_same_as_copy(&mut db, "id int, note text, d date", &data, |o| {
            o.block_size = block_size;
            o.workers = 3;
            o.connections = 3;
        });
    }
}

#[test]
fn header_picks_columns_and_others_take_defaults() {
    let mut db = fresh_db();
    db.exec("CREATE TABLE t (id int, name text, created date DEFAULT '2000-01-01', qty int)");
    let (_dir, path) = write_input(b"qty,ID,name\n5,1,a\n6,2,b\n", "csv");
    let mut opts = db.load_options(&path, "t");
    opts.csv.header = true;
    assert_eq!(db.load(&opts, &Silent).unwrap().rows, 2);
    assert_eq!(
        db.rows_as_text("t"),
        ["(1,a,2000-01-01,5)", "(2,b,2000-01-01,6)"]
    );

    let (_dir2, path2) = write_input(b"7,c\n", "csv");
    let mut opts = db.load_options(&path2, "t");
    opts.columns = Some(vec!["qty".into(), "name".into()]);
    db.load(&opts, &Silent).unwrap();
    assert_eq!(db.count("t WHERE name = 'c' AND qty = 7 AND id IS NULL"), 1);
}

#[test]
fn compressed_inputs_load() {
    use std::io::Write;
    let mut db = fresh_db();
    db.exec("CREATE TABLE t (a int, b text)");
    let plain = b"1,one\n2,\"two\nlines\"\n";
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(plain).unwrap();
    let (_d1, gz_path) = write_input(&gz.finish().unwrap(), "csv.gz");
    let (_d2, zst_path) = write_input(&zstd::encode_all(&plain[..], 3).unwrap(), "csv.zst");
    assert_eq!(
        db.load(&db.load_options(&gz_path, "t"), &Silent)
            .unwrap()
            .rows,
        2
    );
    assert_eq!(
        db.load(&db.load_options(&zst_path, "t"), &Silent)
            .unwrap()
            .rows,
        2
    );
    assert_eq!(db.count("t"), 4);
}

#[test]
fn unsupported_types_fall_back_to_text_copy() {
    let mut db = fresh_db();
    db.exec("CREATE TABLE t (a int, net inet, p point)");
    let (_dir, path) = write_input(b"1,10.0.0.1,\"(1,2)\"\n2,,\n", "csv");
    let summary = db.load(&db.load_options(&path, "t"), &Silent).unwrap();
    assert_eq!(summary.engine.method, "text COPY");
    assert!(
        summary
            .engine
            .slower_because
            .as_deref()
            .unwrap_or("")
            .contains("net (inet)"),
        "{:?}",
        summary.engine.slower_because
    );
    assert_eq!(db.rows_as_text("t"), ["(1,10.0.0.1,\"(1,2)\")", "(2,,)"]);
}

/// Loads `data` into a fresh `t (columns)` and returns the error message; the table must be empty.
fn refusal(columns: &str, data: &[u8]) -> String {
    let mut db = fresh_db();
    db.exec(&format!("CREATE TABLE t ({columns})"));
    let mut good = b"1,ok\n2,fine\n".to_vec();
    if !columns.starts_with("id int") {
        good.clear();
    }
    good.extend_from_slice(data);
    let (_dir, path) = write_input(&good, "csv");
    let err = db
        .load(&db.load_options(&path, "t"), &Silent)
        .expect_err("the load must fail");
    assert_eq!(db.count("t"), 0, "nothing may be committed after {err}");
    assert!(err.is_bad_input(), "{err:?}");
    let message = err
        .to_string()
        .replace(&format!("{}/", path.parent().unwrap().display()), "");
    assert!(
        message.contains("input.csv:"),
        "no file and line in {message}"
    );
    message
}

#[test]
fn bad_rows_name_file_line_column_value_and_reason() {
    let cols = "id int, name varchar(5) NOT NULL";
    let cases: &[(&[u8], &str)] = &[
        (b"3,ok,extra\n", "input.csv:3: extra data after last expected column"),
        (b"3\n", "input.csv:3: missing data for column \"name\""),
        (b"x3,ok\n", "input.csv:3, column id, value \"x3\": invalid input syntax for type integer: \"x3\""),
        (b"99999999999,ok\n", "input.csv:3, column id, value \"99999999999\": value \"99999999999\" is out of range for type integer"),
        (b"3,toolong\n", "input.csv:3, column name, value \"toolong\": value too long for type character varying(5)"),
        (b"3,\n", "input.csv:3, column name: null value in column \"name\" of relation \"t\" violates not-null constraint"),
        (b"3,b\xe9d\n", "input.csv:3, column name, value \"b\u{FFFD}d\": invalid byte sequence for encoding \"UTF8\": 0xe9 0x64"),
        (b"3,\"open\n4,x\n", "input.csv:3: unterminated CSV quoted field"),
        (b"\"3\nx\",ok\n", "input.csv:3, column id, value \"3\\nx\": invalid input syntax for type integer"),
    ];
    for (data, expected) in cases {
        let message = refusal(cols, data);
        assert!(
            message.starts_with(expected),
            "expected {expected:?}\n     got {message:?}"
        );
    }
}

#[test]
fn server_refusals_are_traced_to_the_input_line() {
    let message = refusal(
        "id int, name text CHECK (name <> 'bad')",
        b"3,x\n\"4\n\",y\n5,bad\n6,z\n",
    );
    assert!(message.starts_with("input.csv:6"), "{message}");
    assert!(message.contains("violates check constraint"), "{message}");
    let message = refusal("id int PRIMARY KEY, name text", b"3,x\n1,dup\n");
    assert!(
        message.contains("duplicate key value violates unique constraint"),
        "{message}"
    );
}

#[test]
fn missing_table_and_unknown_header_column_are_clear() {
    let mut db = fresh_db();
    db.exec("CREATE TABLE t (a int)");
    let (_dir, path) = write_input(b"b\n1\n", "csv");
    let err = db
        .load(&db.load_options(&path, "nope"), &Silent)
        .unwrap_err();
    assert!(matches!(err, Error::NoSuchTable { .. }), "{err:?}");
    assert!(
        err.to_string().contains("table nope does not exist"),
        "{err}"
    );
    let mut opts = db.load_options(&path, "t");
    opts.csv.header = true;
    let err = db.load(&opts, &Silent).unwrap_err().to_string();
    let expected = format!(
        "column \"b\" named by the header of {} is not a column of \"public\".\"t\"",
        path.display()
    );
    assert!(err.contains(&expected), "{err}");
}

#[test]
fn summary_counts_rows_bytes_and_wal() {
    let mut db = fresh_db();
    db.exec("CREATE TABLE t (a int, b text)");
    let data: Vec<u8> = (0..1000)
        .flat_map(|i| format!("{i},row {i}\n").into_bytes())
        .collect();
    let (_dir, path) = write_input(&data, "csv");
    let summary = db.load(&db.load_options(&path, "t"), &Silent).unwrap();
    assert_eq!(summary.rows, 1000);
    assert_eq!(summary.bytes, data.len() as u64);
    assert_eq!(summary.connections, 2);
    assert_eq!(summary.engine.method, "binary COPY");
    assert!(summary
        .engine
        .log
        .is_some_and(|log| log.name == "WAL" && log.bytes > 0));
    assert_eq!(db.count("t"), 1000);
}

/// Good rows and one bad row of every kind the client catches, with an unterminated quote last
/// (it swallows the rest of the input, as COPY's reader would).
const MIXED: &[(&str, bool)] = &[
    ("1,alice,2024-01-01", true),
    ("2,bob,2024-13-01", false),
    ("3,carol,2024-01-03,extra", false),
    ("4,dave", false),
    ("99999999999,erin,2024-01-05", false),
    ("6,frank-too-long,2024-01-06", false),
    ("7,,2024-01-07", false),
    ("8,gr\u{e9}ta,2024-01-08", true),
    ("9,\"multi\nline\",2024-01-09", false),
    ("10,\"ivan\",2024-01-10", true),
    ("x11,judy,2024-01-11", false),
    ("12,karl,2024-01-12", true),
];

fn mixed_input() -> (Vec<u8>, Vec<String>, Vec<String>) {
    let mut data = b"id,name,day\n".to_vec();
    let (mut good, mut bad) = (Vec::new(), Vec::new());
    for (line, ok) in MIXED {
        data.extend_from_slice(line.as_bytes());
        data.push(b'\n');
        if *ok {
            good.push(line.to_string())
        } else {
            bad.push(line.to_string())
        }
    }
    // Invalid UTF-8 and an unterminated quote, which must come last.
    data.extend_from_slice(b"13,b\xe9d,2024-01-13\n");
    bad.push("13,b\u{fffd}d,2024-01-13".into());
    data.extend_from_slice(b"14,\"open,2024-01-14\n15,lost,2024-01-15\n");
    bad.push("14,\"open,2024-01-14\n15,lost,2024-01-15".into());
    (data, good, bad)
}

#[test]
fn rejects_hold_exactly_the_bad_rows_and_the_table_exactly_the_good_ones() {
    let (data, good, bad) = mixed_input();
    for (block_size, workers) in [(1 << 20, 2), (1, 3)] {
        let mut db = fresh_db();
        db.exec("CREATE TABLE t (id int, name varchar(8) NOT NULL, day date)");
        let (dir, path) = write_input(&data, "csv");
        let mut opts = db.load_options(&path, "t");
        opts.csv.header = true;
        opts.max_errors = 100;
        opts.block_size = block_size;
        opts.workers = workers;
        let summary = db
            .load(&opts, &Silent)
            .expect("a load with rejects completes");
        assert_eq!(summary.rows, good.len() as u64);
        assert_eq!(summary.rows_rejected, bad.len() as u64);
        assert_eq!(db.count("t"), good.len() as i64);
        assert_eq!(db.count("t WHERE id IN (1, 8, 10, 12)"), 4);

        let rejects_path = dir.path().join("input.csv.rejects");
        assert_eq!(summary.rejects_file.as_deref(), rejects_path.to_str());
        let rejected = std::fs::read(&rejects_path).unwrap();
        let rejected = String::from_utf8_lossy(&rejected);
        assert!(
            rejected.starts_with("id,name,day\n"),
            "the header comes first: {rejected}"
        );
        let mut records: Vec<&str> = Vec::new();
        let body = &rejected["id,name,day\n".len()..];
        // Records end at a line break outside quotes; the unterminated one runs to the end.
        let mut start = 0;
        let mut in_quote = false;
        for (i, c) in body.char_indices() {
            if c == '"' {
                in_quote = !in_quote;
            } else if c == '\n' && !in_quote {
                records.push(&body[start..i]);
                start = i + 1;
            }
        }
        if start < body.len() {
            records.push(body[start..].trim_end_matches('\n'));
        }
        let mut expected: Vec<&str> = bad.iter().map(String::as_str).collect();
        records.sort();
        expected.sort();
        assert_eq!(records, expected, "block size {block_size}");

        let log = std::fs::read_to_string(dir.path().join("input.csv.rejects.log")).unwrap();
        let entries: Vec<serde_json::Value> = log
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(entries.len(), bad.len());
        let line_of = |line: u64| {
            entries
                .iter()
                .find(|e| e["line"] == line)
                .unwrap_or_else(|| panic!("no log for line {line}: {log}"))
        };
        assert_eq!(
            line_of(3)["reason"],
            "date/time field value out of range: \"2024-13-01\""
        );
        assert_eq!(
            line_of(4)["reason"],
            "extra data after last expected column (expected 3 fields, found 4)"
        );
        assert_eq!(line_of(7)["column"], "name");
        assert_eq!(
            line_of(7)["reason"],
            "value too long for type character varying(8)"
        );
        assert_eq!(line_of(13)["value"], "x11");
    }
}

#[test]
fn more_rejects_than_allowed_stop_the_load_and_commit_nothing() {
    let (data, _, _) = mixed_input();
    let mut db = fresh_db();
    db.exec("CREATE TABLE t (id int, name varchar(8) NOT NULL, day date)");
    let (_dir, path) = write_input(&data, "csv");
    let mut opts = db.load_options(&path, "t");
    opts.csv.header = true;
    opts.max_errors = 3;
    let err = db.load(&opts, &Silent).expect_err("too many rejects");
    assert!(
        matches!(err, Error::TooManyRejects { limit: 3, .. }),
        "{err:?}"
    );
    assert!(err.is_bad_input());
    assert_eq!(db.count("t"), 0);
}

#[test]
fn check_reads_and_judges_every_row_but_writes_none() {
    let (data, good, bad) = mixed_input();
    let mut db = fresh_db();
    db.exec("CREATE TABLE t (id int, name varchar(8) NOT NULL, day date)");
    let (_dir, path) = write_input(&data, "csv");
    let mut opts = db.load_options(&path, "t");
    opts.csv.header = true;
    opts.check_only = true;
    // Without --max-errors the first bad row found fails the check (with several workers it
    // need not be the earliest in the file).
    let err = db
        .load(&opts, &Silent)
        .expect_err("a bad row fails the check");
    assert!(
        matches!(err, Error::BadRow { .. }) && err.to_string().contains("input.csv:"),
        "{err}"
    );
    opts.max_errors = 100;
    let summary = db.load(&opts, &Silent).expect("check with rejects");
    assert!(!summary.loaded);
    assert_eq!(
        (summary.rows, summary.rows_rejected),
        (good.len() as u64, bad.len() as u64)
    );
    // One connection writes the rows in a transaction it rolls back, so the server checks them.
    assert_eq!(summary.connections, 1);
    assert_eq!(db.count("t"), 0);
}

fn numbered_rows(n: usize) -> Vec<u8> {
    (0..n)
        .flat_map(|i| format!("{i},\"row\n{i}\"\n").into_bytes())
        .collect()
}

#[test]
fn resume_is_idempotent_and_finishes_an_interrupted_load_exactly_once() {
    let mut db = fresh_db();
    db.exec("CREATE TABLE t (id int, note text)");
    let data = numbered_rows(600_000);
    let (_dir, path) = write_input(&data, "csv");
    let mut opts = db.load_options(&path, "t");
    opts.resume = true;
    opts.block_size = 64 * 1024;
    opts.workers = 1;
    opts.connections = 1;
    // Stop the first run once its first chunks are committed (visible to others, which only
    // --resume makes possible): whatever it committed stays, the rest comes next time.
    let interrupt = opts.interrupt.clone();
    let watcher = db.target.clone();
    let stopper = std::thread::spawn(move || {
        support::wait_for_committed_rows(&mut watcher.connect_blocking().unwrap(), "t");
        interrupt.signal();
    });
    let first = db.load(&opts, &Silent);
    stopper.join().unwrap();
    let after_first = db.count("t");
    eprintln!("first run committed {after_first} rows");
    let Err(Error::InterruptedResumable { rows }) = &first else {
        panic!("{first:?}")
    };
    assert_eq!(
        *rows as i64,
        db.count("t"),
        "the message counts what is committed"
    );
    assert!(first
        .as_ref()
        .unwrap_err()
        .to_string()
        .contains("run the same command again"));
    assert!(after_first > 0 && after_first < 600_000, "{after_first}");

    opts.interrupt = Default::default();
    let second = db.load(&opts, &Silent).unwrap();
    assert_eq!(second.rows_resumed as i64, after_first);
    assert_eq!(second.rows as i64 + after_first, 600_000);
    assert_eq!(db.count("t"), 600_000);
    assert_eq!(
        db.count("(SELECT DISTINCT id FROM t) d"),
        600_000,
        "no row twice"
    );

    let third = db.load(&opts, &Silent).unwrap();
    assert_eq!((third.rows, third.rows_resumed), (0, 600_000));
    assert_eq!(db.count("t"), 600_000);
}

#[test]
fn resume_refuses_a_changed_input() {
    let mut db = fresh_db();
    db.exec("CREATE TABLE t (id int, note text)");
    let (_dir, path) = write_input(&numbered_rows(1000), "csv");
    let mut opts = db.load_options(&path, "t");
    opts.resume = true;
    db.load(&opts, &Silent).unwrap();
    std::fs::write(&path, numbered_rows(1001)).unwrap();
    let err = db.load(&opts, &Silent).unwrap_err();
    assert!(
        err.to_string().contains("changed since its load began"),
        "{err}"
    );
    assert_eq!(db.count("t"), 1000);
}

#[test]
fn resume_retries_a_terminated_connection_without_loading_a_block_twice() {
    let mut db = fresh_db();
    db.exec("CREATE TABLE t (id int, note text)");
    let (_dir, path) = write_input(&numbered_rows(600_000), "csv");
    let mut opts = db.load_options(&path, "t");
    opts.resume = true;
    opts.block_size = 64 * 1024;
    opts.workers = 1;
    opts.connections = 1;
    let watcher = db.target.clone();
    let killer = std::thread::spawn(move || {
        let mut client = watcher.connect_blocking().unwrap();
        support::wait_for_committed_rows(&mut client, "t");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while std::time::Instant::now() < deadline {
            // The sink's backend, busy or inside a block's transaction (the control
            // connection is idle, and this one is excluded).
            let killed: i64 = client
                .query_one(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
                     WHERE datname = current_database() AND pid <> pg_backend_pid() \
                     AND state IN ('active', 'idle in transaction')",
                    &[],
                )
                .unwrap()
                .get(0);
            if killed > 0 {
                return killed;
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        0
    });
    let summary = db
        .load(&opts, &Silent)
        .expect("a terminated connection is retried with --resume");
    assert!(
        killer.join().unwrap() >= 1,
        "no COPY backend was terminated"
    );
    assert_eq!(summary.rows, 600_000);
    assert_eq!(db.count("t"), 600_000);
    assert_eq!(
        db.count("(SELECT DISTINCT id FROM t) d"),
        600_000,
        "no block twice"
    );
}

#[test]
fn rows_the_server_refuses_are_isolated_into_the_reject_file() {
    let mut db = fresh_db();
    db.exec(
        "CREATE TABLE customers (id int PRIMARY KEY); INSERT INTO customers SELECT generate_series(1, 50);
         CREATE TABLE t (id int PRIMARY KEY, customer int REFERENCES customers (id), qty int CHECK (qty >= 0));
         INSERT INTO t VALUES (0, 1, 0);",
    );
    // 3000 good rows, with server-side refusals mixed in: a duplicate key (also with an
    // existing row), a CHECK failure, a foreign key miss (checked at the end of each COPY, so
    // found by bisection rather than named by COPY's error context), and a run of 60
    // duplicates (an input loaded twice), whose attempts shrink to a row and grow again.
    let mut data = Vec::new();
    let mut bad = Vec::new();
    for i in 1..=3000 {
        data.extend_from_slice(format!("{i},{},{}\n", i % 50 + 1, i % 9).as_bytes());
        let extra = match i {
            700 => vec!["700,1,1".to_string()],
            1200 => (1..=60).map(|k| format!("{k},1,1")).collect(),
            1500 => vec!["0,2,2".to_string()],
            2100 => vec!["5001,3,-4".to_string()],
            2900 => vec!["5002,999,1".to_string()],
            _ => Vec::new(),
        };
        for line in extra {
            data.extend_from_slice(line.as_bytes());
            data.push(b'\n');
            bad.push(line);
        }
    }
    let (dir, path) = write_input(&data, "csv");
    let mut opts = db.load_options(&path, "t");
    opts.max_errors = 100;
    opts.block_size = 8 * 1024;
    opts.plan.rebuild_indexes = false;
    let summary = db
        .load(&opts, &Silent)
        .expect("server refusals are rejects");
    assert_eq!((summary.rows, summary.rows_rejected), (3000, 64));
    assert_eq!(db.count("t"), 3001);
    let rejected = std::fs::read_to_string(dir.path().join("input.csv.rejects")).unwrap();
    let mut got: Vec<&str> = rejected.lines().collect();
    got.sort();
    bad.sort();
    assert_eq!(got, bad);
    let log = std::fs::read_to_string(dir.path().join("input.csv.rejects.log")).unwrap();
    assert!(log.contains("\"sqlstate\":\"23505\""), "{log}");
    assert!(log.contains("\"sqlstate\":\"23514\""), "{log}");
    assert!(log.contains("\"sqlstate\":\"23503\""), "{log}");
    assert!(log.contains("Key (customer)=(999) is not present"), "{log}");
}

#[test]
fn a_resumed_load_keeps_the_rejects_of_earlier_runs() {
    let mut db = fresh_db();
    db.exec("CREATE TABLE t (id int, note text)");
    let (dir, path) = write_input(b"id,note\n1,a\nx2,b\n3,c\n", "csv");
    let mut opts = db.load_options(&path, "t");
    opts.resume = true;
    opts.max_errors = 5;
    opts.csv.header = true;
    assert_eq!(db.load(&opts, &Silent).unwrap().rows_rejected, 1);
    assert_eq!(
        db.load(&opts, &Silent).unwrap().rows,
        0,
        "everything was committed already"
    );
    let rejected = std::fs::read_to_string(dir.path().join("input.csv.rejects")).unwrap();
    assert_eq!(rejected, "id,note\nx2,b\n");
    assert_eq!(db.count("t"), 2);
}

#[test]
fn on_conflict_skip_and_update_merge_into_existing_rows() {
    use inrush_load::OnConflict;
    let mut db = fresh_db();
    db.exec("CREATE TABLE t (id int PRIMARY KEY, name text, qty int); INSERT INTO t VALUES (1, 'old', 10), (2, 'old', 20);");
    // Key 2 exists; key 3 is new and appears twice (first "three-a", last "three-b").
    let (_dir, path) = write_input(b"2,new,21\n3,three-a,30\n4,four,40\n3,three-b,31\n", "csv");
    let mut opts = db.load_options(&path, "t");
    opts.connections = 2;
    opts.block_size = 8;
    opts.on_conflict = OnConflict::Skip;
    let skipped = db.load(&opts, &Silent).unwrap();
    assert_eq!(skipped.rows, 2, "{:?}", skipped.notes);
    assert_eq!(
        db.rows_as_text("t"),
        ["(1,old,10)", "(2,old,20)", "(3,three-a,30)", "(4,four,40)"]
    );

    db.exec("DELETE FROM t WHERE id > 2");
    opts.on_conflict = OnConflict::Update;
    let updated = db.load(&opts, &Silent).unwrap();
    assert_eq!(updated.rows, 3, "{:?}", updated.notes);
    assert_eq!(
        db.rows_as_text("t"),
        ["(1,old,10)", "(2,new,21)", "(3,three-b,31)", "(4,four,40)"]
    );
    assert!(
        updated
            .notes
            .iter()
            .any(|n| n
                .contains("--on-conflict update: 4 input rows, 3 inserted or updated, 1 skipped")),
        "{:?}",
        updated.notes
    );
    assert_eq!(
        db.count("pg_tables WHERE schemaname = 'inrush' AND tablename LIKE 'stage_%'"),
        0,
        "the staging table is gone"
    );
}

/// The input order of several files is theirs in turn: a key met late in the first file and
/// early in the second is first met in the first (skip keeps that row) and last in the second
/// (update keeps that one). Each row's place used to be its byte offset in its own file alone.
#[test]
fn on_conflict_order_runs_across_several_inputs() {
    use inrush_load::OnConflict;
    let mut db = fresh_db();
    db.exec("CREATE TABLE t (id int PRIMARY KEY, name text)");
    let mut first = String::new();
    for id in 2..200 {
        first.push_str(&format!("{id},filler\n"));
    }
    first.push_str("1,first\n");
    let (dir, one) = write_input(first.as_bytes(), "csv");
    let two = dir.path().join("two.csv");
    std::fs::write(&two, "1,second\n").unwrap();
    let mut opts = db.load_options(&one, "t");
    opts.inputs.push(two.to_string_lossy().into_owned());
    opts.block_size = 512;
    for (mode, kept) in [(OnConflict::Skip, "first"), (OnConflict::Update, "second")] {
        db.exec("TRUNCATE t");
        opts.on_conflict = mode;
        db.load(&opts, &Silent).unwrap();
        let rows = db.rows_as_text("t");
        assert_eq!(rows.len(), 199, "{mode:?}");
        assert!(rows.contains(&format!("(1,{kept})")), "{mode:?}: {rows:?}");
    }
}

#[test]
fn resume_and_server_side_rejects_work_together() {
    let mut db = fresh_db();
    db.exec("CREATE TABLE t (id int PRIMARY KEY, qty int CHECK (qty >= 0)); INSERT INTO t VALUES (0, 0);");
    let mut data = Vec::new();
    for i in 1..=2000 {
        data.extend_from_slice(format!("{i},{}\n", i % 7).as_bytes());
        if i == 900 {
            data.extend_from_slice(b"901,-1\n0,5\n");
        }
    }
    let (dir, path) = write_input(&data, "csv");
    let mut opts = db.load_options(&path, "t");
    opts.resume = true;
    opts.max_errors = 5;
    opts.block_size = 4096;
    opts.plan.rebuild_indexes = false;
    let first = db.load(&opts, &Silent).unwrap();
    assert_eq!((first.rows, first.rows_rejected), (2000, 2));
    let second = db.load(&opts, &Silent).unwrap();
    assert_eq!((second.rows, second.rows_resumed), (0, 2000));
    assert_eq!(db.count("t"), 2001);
    let rejected = std::fs::read_to_string(dir.path().join("input.csv.rejects")).unwrap();
    let mut lines: Vec<&str> = rejected.lines().collect();
    lines.sort();
    assert_eq!(lines, ["0,5", "901,-1"]);
}

#[test]
fn resume_survives_a_server_restart_mid_load() {
    use inrush_postgres::{PrivateServer, ServerOptions};
    // A server of its own: restarting the shared one would end the other tests' sessions.
    let server = PrivateServer::start(&ServerOptions {
        unsafe_fast: true,
        ..Default::default()
    })
    .unwrap();
    let target = server.connect_options("postgres");
    target
        .execute_blocking("CREATE TABLE t (id int, note text)")
        .unwrap();
    let (_dir, path) = write_input(&numbered_rows(600_000), "csv");
    let mut opts = LoadOptions::new(path.to_string_lossy(), "t");
    opts.resume = true;
    opts.block_size = 64 * 1024;
    opts.workers = 1;
    opts.connections = 1;
    let (first_opts, first_target) = (opts.clone(), target.clone());
    let loader =
        std::thread::spawn(move || inrush_postgres::load::run(&first_target, &first_opts, &Silent));
    support::wait_for_committed_rows(&mut target.connect_blocking().unwrap(), "t");
    server.restart().expect("restarting the server mid-load");
    let first = loader.join().unwrap();
    // The sink retries through the restart; whatever stopped is picked up by the same command.
    if first.is_err() {
        inrush_postgres::load::run(&target, &opts, &Silent).expect("the rerun completes");
    }
    let count = |sql: &str| target.query_text_blocking(sql).unwrap().unwrap_or_default();
    assert_eq!(
        count("SELECT count(*) FROM t"),
        "600000",
        "first run: {first:?}"
    );
    assert_eq!(
        count("SELECT count(DISTINCT id) FROM t"),
        "600000",
        "no row twice"
    );
}

/// The default load opens more connections than it streams over at first and chooses how many
/// stream while it runs; the others wait at the gate, their transactions open, and commit their
/// zero rows with the rest. Every row still arrives once, as the server's COPY reads it, through
/// the plain, `--resume` and `--max-errors` sinks alike.
#[test]
fn adaptive_connections_load_exactly_what_copy_loads() {
    let mut db = fresh_db();
    let data = numbered_rows(200_000);
    let (_dir, path) = write_input(&data, "csv");
    db.exec("CREATE TABLE theirs (id int, note text)");
    db.server_copy("theirs", &data, &CsvOptions::default(), None)
        .unwrap();
    let expected = db.rows_as_text("theirs");
    for (table, tweak) in [
        ("plain", no_tweak as fn(&mut LoadOptions)),
        ("resumed", |o: &mut LoadOptions| o.resume = true),
        ("isolating", |o: &mut LoadOptions| o.max_errors = 10),
    ] {
        db.exec(&format!("CREATE TABLE {table} (id int, note text)"));
        let mut opts = db.load_options(&path, table);
        opts.block_size = 16 << 10;
        tweak(&mut opts);
        let summary = db.load(&opts, &Silent).unwrap();
        assert_eq!(db.rows_as_text(table), expected, "{table}");
        let p = &summary.parallelism;
        assert!(p.adaptive, "{table}: {p:?}");
        assert_eq!(p.opened, 4, "{table}: twice the 2 it starts with");
        assert!((1..=4).contains(&p.chosen), "{table}: {p:?}");
        assert_eq!(summary.connections, p.chosen);
        assert!(
            p.reason.starts_with(&format!("{} of 4 opened", p.chosen)),
            "{table}: {}",
            p.reason
        );
    }
}

/// `--connections N` fixes N for the whole load, as does a load that must be one transaction.
#[test]
fn fixed_connections_stay_fixed_and_say_why() {
    let mut db = fresh_db();
    db.exec("CREATE TABLE t (id int, note text)");
    let (_dir, path) = write_input(&numbered_rows(20_000), "csv");
    let mut opts = db.load_options(&path, "t");
    opts.connections = 3;
    opts.adapt_connections = false;
    let summary = db.load(&opts, &Silent).unwrap();
    assert_eq!(summary.connections, 3);
    assert_eq!(
        summary.parallelism,
        Parallelism::fixed(3, "fixed by --connections")
    );
    opts.adapt_connections = true;
    opts.truncate = true;
    let summary = db.load(&opts, &Silent).unwrap();
    assert_eq!((summary.connections, summary.parallelism.opened), (1, 1));
    assert!(!summary.parallelism.adaptive);
    assert!(summary.parallelism.reason.contains("--truncate"));
    assert_eq!(db.count("t"), 20_000);
}

/// Interrupts the load once the first rows are sent.
struct InterruptOnFirstRows(std::sync::Arc<inrush_load::Interrupt>);

impl inrush_core::Reporter for InterruptOnFirstRows {
    fn phase(&self, _: inrush_core::Phase) {}
    fn progress(&self, snapshot: inrush_core::ProgressSnapshot) {
        if snapshot.rows_sent > 0 {
            self.0.signal();
        }
    }
}

/// A stop while some sinks wait at the gate (one streams of the two opened) ends the load
/// at once: the waiting sinks see the cancel, nothing is committed, nothing hangs.
#[test]
fn an_interrupt_while_sinks_wait_at_the_gate_ends_the_load_cleanly() {
    let mut db = fresh_db();
    db.exec("CREATE TABLE t (id int, note text)");
    let (_dir, path) = write_input(&numbered_rows(600_000), "csv");
    let mut opts = db.load_options(&path, "t");
    opts.connections = 1;
    opts.block_size = 64 << 10;
    let reporter = InterruptOnFirstRows(opts.interrupt.clone());
    let result = db.load(&opts, &reporter);
    assert!(matches!(result, Err(Error::Interrupted)), "{result:?}");
    assert_eq!(db.count("t"), 0);
}

/// Keeps what the load says it waits on.
#[derive(Default)]
struct Waited(std::sync::Mutex<Vec<String>>);

impl inrush_core::Reporter for Waited {
    fn phase(&self, _: inrush_core::Phase) {}
    fn progress(&self, _: inrush_core::ProgressSnapshot) {}
    fn waiting(&self, what: &str) {
        self.0.lock().unwrap().push(what.to_string());
    }
}

/// A load that waits on another session's lock says whose it is, and goes on once it is let
/// go: a wait with no word looks like a hang.
#[test]
fn a_load_waiting_on_another_sessions_lock_names_the_holder() {
    let mut db = fresh_db();
    db.exec("CREATE TABLE t (id int, note text)");
    let (_dir, path) = write_input(&numbered_rows(1000), "csv");
    let mut holder = db.target.connect_blocking().unwrap();
    holder
        .batch_execute(
            "SET application_name = 'lock-holder'; BEGIN; LOCK TABLE t IN ACCESS EXCLUSIVE MODE",
        )
        .unwrap();
    let pid: i32 = holder
        .query_one("SELECT pg_backend_pid()", &[])
        .unwrap()
        .get(0);
    let reporter = std::sync::Arc::new(Waited::default());
    let (target, opts, told) = (
        db.target.clone(),
        db.load_options(&path, "t"),
        reporter.clone(),
    );
    let load = std::thread::spawn(move || inrush_postgres::load::run(&target, &opts, &*told));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while reporter.0.lock().unwrap().is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "the wait was never told"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let told = reporter.0.lock().unwrap().clone();
    assert_eq!(told.len(), 1, "{told:?}");
    assert!(
        told[0].contains(&format!("pid {pid} (lock-holder, user ")),
        "{told:?}"
    );
    assert!(told[0].contains("idle in transaction"), "{told:?}");
    holder.batch_execute("COMMIT").unwrap();
    let summary = load
        .join()
        .unwrap()
        .expect("the load goes on once the lock is let go");
    assert_eq!(summary.rows, 1000);
    assert_eq!(db.count("t"), 1000);
}
