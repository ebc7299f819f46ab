//! Loads into SQLite, as a user runs them: the table's contents against what the `sqlite3`
//! shell's `.import` stores for the same good rows (binding each field as text), bad rows
//! reported and kept out, refused options, and a killed or interrupted load leaving the file as
//! it was; SIGKILLed at moments drawn from `INRUSH_CRASH_SEED` (printed), with and without
//! `--resume`. (`sqlite_matrix.rs` crosses the flags with the table shapes.)

mod sqlite_common;

use inrush_testkit::arrow_array::{ArrayRef, BinaryArray};
use rusqlite::Connection;
use sqlite_common::*;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Numbers in every form SQLite's numeric affinity reads: the loaded values and their types
/// must be what `.import` stores, to the last bit of every double.
fn numbers(rows: usize) -> String {
    let mut seed = 0x2545F4914F6CDD1Du64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut out = String::from("i,r,n,t\n");
    let fixed = [
        "0",
        "-0",
        "+7",
        " 12 ",
        "3.0",
        "3.0e2",
        "1e3",
        "-0.0",
        ".5",
        "5.",
        "1.5",
        "9223372036854775807",
        "-9223372036854775808",
        "9223372036854775808",
        "100000000000000000000",
        "1e19",
        "2.5e-7",
        "123456789012345678",
        "0.1",
        "1.7976931348623157e308",
        "4.9e-324",
        "9007199254740993",
    ];
    for (i, v) in fixed.iter().enumerate() {
        out.push_str(&format!("{v},{v},{v},\"{i}, \"\"quoted\"\"\"\n"));
    }
    for i in 0..rows {
        let mantissa = next() % 10u64.pow(1 + (next() % 18) as u32);
        let point = next() % 20;
        let digits = mantissa.to_string();
        let number = match point as usize {
            p if p < digits.len() => format!(
                "{}.{}",
                &digits[..digits.len() - p],
                &digits[digits.len() - p..]
            ),
            _ => digits,
        };
        let sign = if next() % 3 == 0 { "-" } else { "" };
        let exp = match next() % 4 {
            0 => format!("e{}", (next() % 40) as i64 - 20),
            _ => String::new(),
        };
        let v = format!("{sign}{number}{exp}");
        out.push_str(&format!("{v},{v},{v},row {i} é\n"));
    }
    out
}

#[test]
fn contents_equal_the_shells_import_into_the_same_tables() {
    let dir = tempfile::tempdir().unwrap();
    let csv = write(dir.path(), "numbers.csv", &numbers(3000));
    for ddl in [
        "CREATE TABLE t (i INTEGER, r REAL, n NUMERIC, t TEXT)",
        "CREATE TABLE t (i ANY, r REAL, n INTEGER, t TEXT) STRICT",
        "CREATE TABLE t (i BIGINT, r DOUBLE PRECISION, n DECIMAL(10,2), t VARCHAR(5))",
    ] {
        let (ours, theirs) = (dir.path().join("ours.db"), dir.path().join("theirs.db"));
        let _ = std::fs::remove_file(&ours);
        let _ = std::fs::remove_file(&theirs);
        exec(&ours, ddl);
        exec(&theirs, ddl);
        // STRICT INTEGER refuses reals: those rows are rejected by inrush and by the shell.
        let (code, out) = load(&csv, &ours, &["--max-errors", "100000"]);
        assert!(code == 0 || code == 6, "{ddl}: {out}");
        let refused = dir.path().join("numbers.csv.rejects");
        let good = match code {
            6 => {
                // The good rows are the input without the rejected lines.
                let rejected: std::collections::HashSet<String> = std::fs::read_to_string(&refused)
                    .unwrap()
                    .lines()
                    .skip(1)
                    .map(str::to_string)
                    .collect();
                let text = std::fs::read_to_string(&csv).unwrap();
                let kept: String = text
                    .lines()
                    .enumerate()
                    .filter(|(i, l)| *i == 0 || !rejected.contains(*l))
                    .map(|(_, l)| format!("{l}\n"))
                    .collect();
                write(dir.path(), "good.csv", &kept)
            }
            _ => csv.clone(),
        };
        shell_import(&good, &theirs, "t");
        let (a, b) = (contents(&ours), contents(&theirs));
        assert_eq!(a.len(), b.len(), "{ddl}");
        for (x, y) in a.iter().zip(&b) {
            assert_eq!(x, y, "{ddl}");
        }
        let _ = std::fs::remove_file(refused);
    }
}

#[test]
fn bad_rows_are_reported_and_kept_out() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    exec(
        &db,
        "CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT NOT NULL, score REAL CHECK (score >= 0), \
           born DATE, ok BOOLEAN);
         INSERT INTO t VALUES (100, 'kept', 1, '2000-01-01', 1);",
    );
    let csv = write(
        dir.path(),
        "in.csv",
        "id,name,score,born,ok\n\
         1,ann,1.5,2020-01-02,true\n\
         2,bob,x,2020-01-03,false\n\
         3,,2,2020-01-04,0\n\
         4,dee,-1,2020-01-05,1\n\
         5,eve,2,2020-02-30,1\n\
         6,fay,2,2020-01-06,maybe\n\
         100,dup,2,2020-01-07,1\n\
         7,gus,3\n\
         8,hal,4,2020-01-08,no\n",
    );
    // Without --max-errors: the first bad row ends the load, and nothing changed.
    let (code, out) = load(&csv, &db, &[]);
    assert_eq!(code, 4, "{out}");
    assert!(
        out.contains("in.csv:3, column score, value \"x\": not a number"),
        "{out}"
    );
    assert_eq!(contents(&db).len(), 1);

    // The reject file and its log hold the input's data: its owner's alone, fresh or made
    // by an earlier load for everyone to read.
    use std::os::unix::fs::PermissionsExt;
    let files = [
        dir.path().join("in.csv.rejects"),
        dir.path().join("in.csv.rejects.log"),
    ];
    for file in &files {
        std::fs::write(file, "").unwrap();
        std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    let (code, out) = load(&csv, &db, &["--max-errors", "10"]);
    assert_eq!(code, 6, "{out}");
    for file in &files {
        let mode = std::fs::metadata(file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "{}", file.display());
    }
    let rows = contents(&db);
    assert_eq!(
        rows,
        [
            "integer:1 | text:'ann' | real:1.5 | text:'2020-01-02' | integer:1",
            "integer:8 | text:'hal' | real:4.0 | text:'2020-01-08' | integer:0",
            "integer:100 | text:'kept' | real:1.0 | text:'2000-01-01' | integer:1",
        ]
    );
    // The header, then the refused rows: those the workers refused as they read them, those
    // SQLite refused as they were inserted.
    let rejects = std::fs::read_to_string(dir.path().join("in.csv.rejects")).unwrap();
    let mut lines: Vec<&str> = rejects.lines().collect();
    assert_eq!(lines.remove(0), "id,name,score,born,ok");
    lines.sort();
    assert_eq!(
        lines,
        [
            "100,dup,2,2020-01-07,1",
            "2,bob,x,2020-01-03,false",
            "3,,2,2020-01-04,0",
            "4,dee,-1,2020-01-05,1",
            "5,eve,2,2020-02-30,1",
            "6,fay,2,2020-01-06,maybe",
            "7,gus,3",
        ]
    );
    let log = std::fs::read_to_string(dir.path().join("in.csv.rejects.log")).unwrap();
    for reason in [
        "not a number",
        "NOT NULL constraint failed: t.name",
        "CHECK constraint failed",
        "not a date (YYYY-MM-DD)",
        "not a boolean",
        "UNIQUE constraint failed: t.id",
        "missing data for column",
    ] {
        assert!(log.contains(reason), "{reason} not in {log}");
    }
}

#[test]
fn create_makes_a_strict_typed_table() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("new.sqlite3");
    let csv = write(
        dir.path(),
        "in.csv",
        "id,price,day,flag,note\n1,2.50,2024-01-02,true,a\n2,3,2024-01-03,false,\"b, c\"\n",
    );
    let url = format!("sqlite://{}", db.display());
    let (code, out) = inrush(&[
        "load",
        csv.to_str().unwrap(),
        "--header",
        "--to",
        &url,
        "--table",
        "t",
        "--create",
        "--no-progress",
    ]);
    assert_eq!(code, 0, "{out}");
    let conn = Connection::open(&db).unwrap();
    let sql: String = conn
        .query_row("SELECT sql FROM sqlite_schema WHERE name = 't'", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(
        sql,
        "CREATE TABLE \"t\" (\"id\" INTEGER, \"price\" REAL, \"day\" TEXT, \"flag\" INTEGER CHECK (\"flag\" IN (0, 1)), \"note\" TEXT) STRICT"
    );
    assert_eq!(
        contents(&db),
        [
            "integer:1 | real:2.5 | text:'2024-01-02' | integer:1 | text:'a'",
            "integer:2 | real:3.0 | text:'2024-01-03' | integer:0 | text:'b, c'",
        ]
    );
    // Again: the table exists now.
    let (code, out) = inrush(&[
        "load",
        csv.to_str().unwrap(),
        "--header",
        "--to",
        &url,
        "--table",
        "t",
        "--create",
        "--no-progress",
    ]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("exists already"), "{out}");
}

#[test]
fn options_sqlite_cannot_honour_are_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    exec(&db, "CREATE TABLE t (a INTEGER)");
    let csv = write(dir.path(), "in.csv", "a\n1\n");
    for (flags, named) in [
        (&["--text"][..], "--text"),
        (&["--datestyle", "dmy"][..], "--datestyle"),
        (&["--disable-triggers"][..], "--disable-triggers"),
        (&["--on-conflict", "skip"][..], "--on-conflict skip"),
    ] {
        let (code, out) = load(&csv, &db, flags);
        assert_eq!(code, 2, "{flags:?}: {out}");
        assert!(out.contains(named), "{flags:?}: {out}");
    }
    assert!(contents(&db).is_empty());
}

#[test]
fn on_conflict_skip_keeps_the_first_and_update_the_last() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    exec(
        &db,
        "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT); INSERT INTO t VALUES (1, 'old');",
    );
    let csv = write(dir.path(), "in.csv", "id,v\n1,a\n2,b\n2,c\n3,d\n");
    // A second input, whose key 2 comes last in the input though early in its own file.
    let second = write(dir.path(), "more.csv", "id,v\n2,e\n");
    let second = second.to_str().unwrap();
    let (code, out) = load(
        &csv,
        &db,
        &[
            second,
            "--on-conflict",
            "skip",
            "--workers",
            "2",
            "--block-size",
            "8",
        ],
    );
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        contents(&db),
        [
            "integer:1 | text:'old'",
            "integer:2 | text:'b'",
            "integer:3 | text:'d'"
        ]
    );
    let (code, out) = load(
        &csv,
        &db,
        &[
            second,
            "--on-conflict",
            "update",
            "--workers",
            "2",
            "--block-size",
            "8",
        ],
    );
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        contents(&db),
        [
            "integer:1 | text:'a'",
            "integer:2 | text:'e'",
            "integer:3 | text:'d'"
        ]
    );
}

#[test]
fn indexes_are_built_again_in_the_transaction_and_a_broken_one_undoes_the_load() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    exec(
        &db,
        "CREATE TABLE t (a INTEGER, b TEXT); CREATE UNIQUE INDEX t_a ON t (a); CREATE INDEX t_b ON t (b);",
    );
    let good = write(dir.path(), "good.csv", "a,b\n1,x\n2,y\n");
    let (code, out) = load(&good, &db, &[]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("t_a") && out.contains("t_b"),
        "the plan names both: {out}"
    );
    let (code, out) = inrush(&["plan", "--to", db.to_str().unwrap(), "--table", "t"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("t_b"), "{out}");

    // Large next to the table: both indexes are dropped, and the unique one cannot be built
    // again over the rows.
    exec(&db, "DELETE FROM t");
    let mut rows = String::from("a,b\n");
    for i in 0..5000 {
        rows.push_str(&format!("{i},row {i}\n"));
    }
    rows.push_str("17,again\n");
    let dup = write(dir.path(), "dup.csv", &rows);
    let (code, out) = load(&dup, &db, &[]);
    assert_eq!(code, 4, "{out}");
    assert!(out.contains("t_a of") && out.contains("UNIQUE"), "{out}");
    let conn = Connection::open(&db).unwrap();
    let indexes: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_schema WHERE type = 'index' ORDER BY name")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(indexes, ["t_a", "t_b"]);
    assert!(contents(&db).is_empty());
}

/// Foreign keys hold: a row without its parent is a bad row, and `--truncate` of a parent
/// whose children follow its deletes (CASCADE, SET NULL) is refused before anything happens,
/// since its DELETE would change their rows. `--on-conflict update` is an upsert: the
/// children keep theirs.
#[test]
fn foreign_keys_hold_and_truncate_spares_other_tables() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    exec(
        &db,
        "CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER); INSERT INTO t VALUES (1, 0), (2, 0); \
         CREATE TABLE kid (id INTEGER PRIMARY KEY, p INTEGER REFERENCES t (id) ON DELETE CASCADE); \
         CREATE TABLE nul (id INTEGER PRIMARY KEY, p INTEGER REFERENCES t (id) ON DELETE SET NULL); \
         CREATE TABLE child (id INTEGER PRIMARY KEY, p INTEGER REFERENCES t (id)); \
         INSERT INTO kid VALUES (20, 2); INSERT INTO nul VALUES (30, 1);",
    );
    let children = || {
        let conn = Connection::open(&db).unwrap();
        let mut stmt = conn
            .prepare("SELECT 'kid', id, p FROM kid UNION ALL SELECT 'nul', id, p FROM nul")
            .unwrap();
        let rows = stmt
            .query_map([], |r| {
                Ok(format!(
                    "{} {} {:?}",
                    r.get::<_, String>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, Option<i64>>(2)?
                ))
            })
            .unwrap();
        rows.map(Result::unwrap).collect::<Vec<_>>()
    };
    let before = children();
    let csv = write(dir.path(), "t.csv", "id,v\n1,5\n2,5\n3,5\n");
    let (code, out) = load(&csv, &db, &["--truncate"]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("\"kid\" (ON DELETE CASCADE)"), "{out}");
    assert!(out.contains("\"nul\" (ON DELETE SET NULL)"), "{out}");
    assert_eq!(children(), before);
    let (code, out) = load(&csv, &db, &["--on-conflict", "update"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(children(), before);
    assert_eq!(
        contents(&db),
        [
            "integer:1 | integer:5",
            "integer:2 | integer:5",
            "integer:3 | integer:5"
        ]
    );
    // Into the child: the row whose parent is missing is set aside.
    let rows = write(dir.path(), "child.csv", "id,p\n1,1\n2,99\n3,3\n");
    let (code, out) = inrush(&[
        "load",
        rows.to_str().unwrap(),
        "--header",
        "--to",
        db.to_str().unwrap(),
        "--table",
        "child",
        "--no-progress",
        "--max-errors",
        "1",
    ]);
    assert_eq!(code, 6, "{out}");
    let rejects = std::fs::read_to_string(dir.path().join("child.csv.rejects")).unwrap();
    assert_eq!(rejects.lines().skip(1).collect::<Vec<_>>(), ["2,99"]);
    let reasons = std::fs::read_to_string(dir.path().join("child.csv.rejects.log")).unwrap();
    assert!(
        reasons.contains("FOREIGN KEY constraint failed"),
        "{reasons}"
    );
}

/// A row of 40 columns keeps every value, and a refused one is named by its own column.
#[test]
fn wide_rows_keep_every_column() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let names: Vec<String> = (0..40).map(|i| format!("c{i}")).collect();
    let ddl: Vec<String> = names.iter().map(|n| format!("{n} INTEGER")).collect();
    exec(&db, &format!("CREATE TABLE t ({}) STRICT", ddl.join(", ")));
    let row = |k: usize| {
        (0..40)
            .map(|i| (k * 100 + i).to_string())
            .collect::<Vec<_>>()
    };
    let mut bad = row(3);
    bad[37] = "x".into();
    let csv = format!(
        "{}\n{}\n{}\n{}\n",
        names.join(","),
        row(1).join(","),
        row(2).join(","),
        bad.join(",")
    );
    let csv = write(dir.path(), "wide.csv", &csv);
    let (code, out) = load(&csv, &db, &[]);
    assert_eq!(code, 4, "{out}");
    assert!(out.contains("c37"), "{out}");
    let (code, out) = load(&csv, &db, &["--max-errors", "1"]);
    assert_eq!(code, 6, "{out}");
    let rows = contents(&db);
    assert_eq!(rows.len(), 2);
    let want: Vec<String> = row(2).iter().map(|v| format!("integer:{v}")).collect();
    assert_eq!(rows[1], want.join(" | "));
}

/// SQLite has no arrays and stores booleans as integers: Parquet lists load as JSON arrays
/// (`json_array_length` reads them), booleans as 1 and 0, whatever the column's affinity; a
/// zoned timestamp with its offset as `+00:00`, which a DATETIME column and `datetime()` read.
#[test]
fn parquet_lists_load_as_json_and_booleans_as_integers() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let path = dir.path().join("lists.parquet");
    let forms = inrush_testkit::forms_arrays();
    let columns: Vec<(&str, ArrayRef)> = vec![
        ("l", forms.lists),
        ("b", forms.flags.clone()),
        ("i", forms.flags.clone()),
        ("s", forms.flags),
        ("at", forms.at),
    ];
    inrush_testkit::parquet_of(&path, columns, 2);
    exec(
        &db,
        "CREATE TABLE t (l TEXT, b BOOLEAN, i INTEGER, s TEXT, at DATETIME)",
    );
    let (code, out) = inrush(&[
        "load",
        path.to_str().unwrap(),
        "--to",
        db.to_str().unwrap(),
        "--table",
        "t",
        "--no-progress",
    ]);
    assert_eq!(code, 0, "{out}");
    // Two workers may insert the two row groups in either order: the rows sorted.
    let mut rows = contents(&db);
    rows.sort();
    assert_eq!(
        rows,
        [
            "null:NULL | null:NULL | null:NULL | null:NULL | null:NULL",
            "text:'[1,null,-2]' | integer:1 | integer:1 | text:'1' | text:'1970-01-01 00:00:00+00:00'",
            "text:'[]' | integer:0 | integer:0 | text:'0' | text:'2023-11-14 22:13:20.123456+00:00'",
        ]
    );
    let read: Vec<(Option<i64>, Option<String>)> = Connection::open(&db)
        .unwrap()
        .prepare("SELECT json_array_length(l), datetime(at) FROM t ORDER BY at IS NULL, at")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let day = |s: &str| Some(s.to_string());
    assert_eq!(
        read,
        [
            (Some(3), day("1970-01-01 00:00:00")),
            (Some(0), day("2023-11-14 22:13:20")),
            (None, None)
        ]
    );
}

/// A binary value is a blob where the column keeps values as given, and its text elsewhere,
/// checked as the column's type; bytes that are no UTF-8 go into a blob column only.
#[test]
fn parquet_binary_values_are_blobs_or_their_text_by_column() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let path = dir.path().join("bytes.parquet");
    let bytes: Vec<&[u8]> = vec![b"7", b"hi", &[0xff, 0x00], b"a\0"];
    let array = || -> ArrayRef { Arc::new(BinaryArray::from(bytes.clone())) };
    let columns: Vec<(&str, ArrayRef)> = vec![
        ("b", array()),
        ("u", array()),
        ("t", array()),
        ("i", array()),
    ];
    inrush_testkit::parquet_of(&path, columns, 2);
    exec(&db, "CREATE TABLE t (b BLOB, u, t TEXT, i INTEGER)");
    let rejects = dir.path().join("rejects.csv");
    let (code, out) = inrush(&[
        "load",
        path.to_str().unwrap(),
        "--to",
        db.to_str().unwrap(),
        "--table",
        "t",
        "--max-errors",
        "5",
        "--rejects",
        rejects.to_str().unwrap(),
        "--no-progress",
    ]);
    assert_eq!(code, 6, "{out}");
    // "hi" is no number; 0xff 0x00 is no UTF-8; "a\0" holds a NUL.
    let log = std::fs::read_to_string(dir.path().join("rejects.csv.log")).unwrap();
    assert!(log.contains("not a number"), "{log}");
    assert!(log.contains("not UTF-8 text"), "{log}");
    assert!(log.contains("a NUL byte"), "{log}");
    assert_eq!(
        contents(&db),
        ["blob:X'37' | blob:X'37' | text:'7' | integer:7"],
        "{out}"
    );
}

#[test]
fn json_lines_and_parquet_inputs() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let parquet = dir.path().join("g.parquet");
    let (code, out) = inrush(&[
        "gen",
        "--rows",
        "5000",
        "--format",
        "parquet",
        "--output",
        parquet.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}");
    let (code, out) = inrush(&[
        "load",
        parquet.to_str().unwrap(),
        "--to",
        db.to_str().unwrap(),
        "--table",
        "t",
        "--create",
        "--no-progress",
    ]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(contents(&db).len(), 5000);

    let jsonl = write(
        dir.path(),
        "in.jsonl",
        "{\"a\": 1, \"b\": \"x\"}\n\n{\"b\": \"y\", \"a\": 2}\n",
    );
    exec(&db, "CREATE TABLE j (a INTEGER, b TEXT)");
    let (code, out) = inrush(&[
        "load",
        jsonl.to_str().unwrap(),
        "--to",
        db.to_str().unwrap(),
        "--table",
        "j",
        "--no-progress",
    ]);
    assert_eq!(code, 0, "{out}");
    let n: i64 = Connection::open(&db)
        .unwrap()
        .query_row("SELECT sum(a) FROM j WHERE b IN ('x', 'y')", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(n, 3);
}

/// A large input being loaded into a table that holds rows already.
fn start_large_load(dir: &Path) -> (PathBuf, Child) {
    let db = dir.join("t.db");
    let csv = dir.join("big.csv");
    inrush_testkit::generate(BIN, &csv, 600_000);
    exec(
        &db,
        "CREATE TABLE t (fieldint1 INTEGER, fieldint2 INTEGER, fieldint3 INTEGER, fieldchar1 TEXT, \
           fieldchar2 TEXT, fieldchar3 TEXT);
         CREATE INDEX t_2 ON t (fieldint2);
         INSERT INTO t VALUES (1, 2, 3, 'a', 'b', 'c');",
    );
    let child = Command::new(BIN)
        .args([
            "load",
            csv.to_str().unwrap(),
            "--header",
            "--to",
            db.to_str().unwrap(),
            "--table",
            "t",
            "--no-progress",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The rollback journal appears with the transaction's first write.
    let journal = dir.join("t.db-journal");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !journal.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(journal.exists(), "the load never started writing");
    std::thread::sleep(Duration::from_millis(100));
    (db, child)
}

fn assert_as_before(db: &Path) {
    let conn = Connection::open(db).unwrap();
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    assert_eq!(
        contents(db),
        ["integer:1 | integer:2 | integer:3 | text:'a' | text:'b' | text:'c'"]
    );
    let indexes: i64 = conn
        .query_row(
            "SELECT count(*) FROM sqlite_schema WHERE name = 't_2'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(indexes, 1);
}

#[test]
fn a_killed_load_leaves_the_file_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let (db, mut child) = start_large_load(dir.path());
    assert!(
        child.try_wait().unwrap().is_none(),
        "the load ended before the kill"
    );
    child.kill().unwrap();
    child.wait().unwrap();
    assert_as_before(&db);
}

#[test]
fn sigterm_rolls_back_and_exits_130() {
    let dir = tempfile::tempdir().unwrap();
    let (db, child) = start_large_load(dir.path());
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let out = child.wait_with_output().unwrap();
    let printed = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(130), "{printed}");
    assert!(printed.contains("rolled back"), "{printed}");
    assert_as_before(&db);
}

/// Count and sums over every column of `t`: equal for two tables holding the same rows.
fn totals(db: &Path) -> (i64, i64, i64, i64, i64) {
    Connection::open(db)
        .unwrap()
        .query_row(
            "SELECT count(*), sum(fieldint1), sum(fieldint2), sum(fieldint3), \
               sum(length(fieldchar1) + length(fieldchar2) + length(fieldchar3)) FROM t",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
        )
        .unwrap()
}

#[test]
fn resume_after_a_kill_loads_every_block_exactly_once() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("big.csv");
    inrush_testkit::generate(BIN, &csv, 300_000);
    let ddl = "CREATE TABLE t (fieldint1 INTEGER, fieldint2 INTEGER, fieldint3 INTEGER, \
               fieldchar1 TEXT, fieldchar2 TEXT, fieldchar3 TEXT)";
    let (once, resumed) = (dir.path().join("once.db"), dir.path().join("resumed.db"));
    exec(&once, ddl);
    exec(&resumed, ddl);
    let (code, out) = load(&csv, &once, &[]);
    assert_eq!(code, 0, "{out}");

    let args = |db: &Path| -> Vec<String> {
        [
            "load",
            csv.to_str().unwrap(),
            "--header",
            "--to",
            db.to_str().unwrap(),
            "--table",
            "t",
            "--no-progress",
            "--resume",
            "--block-size",
            "65536",
        ]
        .map(String::from)
        .to_vec()
    };
    let mut child = Command::new(BIN)
        .args(args(&resumed))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Killed once some blocks are committed.
    let reader = Connection::open(&resumed).unwrap();
    reader.busy_timeout(Duration::from_secs(5)).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        // A busy database (the load's commit holding it past the timeout on a slow machine)
        // is asked again, like a ledger not there yet.
        let committed: i64 = reader
            .query_row(
                "SELECT count(*) FROM sqlite_schema WHERE name = 'inrush_load_ledger'",
                [],
                |r| r.get(0),
            )
            .unwrap_or(0);
        let blocks: i64 = match committed {
            0 => 0,
            _ => reader
                .query_row("SELECT count(*) FROM inrush_load_ledger", [], |r| r.get(0))
                .unwrap_or(0),
        };
        if blocks >= 3 || Instant::now() > deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    assert!(
        child.try_wait().unwrap().is_none(),
        "the load ended before the kill"
    );
    child.kill().unwrap();
    child.wait().unwrap();
    let partial = totals(&resumed).0;
    assert!(
        partial > 0 && partial < 300_000,
        "{partial} rows after the kill"
    );

    let out = Command::new(BIN).args(args(&resumed)).output().unwrap();
    let printed = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{printed}");
    assert!(
        printed.contains("from earlier runs (--resume)"),
        "{printed}"
    );
    assert_eq!(totals(&resumed), totals(&once));
    let ledger: i64 = reader
        .query_row("SELECT sum(rows) FROM inrush_load_ledger", [], |r| r.get(0))
        .unwrap();
    assert_eq!(ledger, 300_000);
}

#[test]
fn fast_unsafe_loads_says_what_it_risks_and_is_sqlite_only() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    exec(&db, "CREATE TABLE t (a INTEGER, b TEXT)");
    let csv = write(dir.path(), "in.csv", "a,b\n1,x\n2,y\n");
    let (code, out) = load(&csv, &db, &["--fast-unsafe"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("can corrupt the whole database file"), "{out}");
    assert_eq!(
        contents(&db),
        ["integer:1 | text:'x'", "integer:2 | text:'y'"]
    );
    let journal: String = Connection::open(&db)
        .unwrap()
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(journal, "delete", "the file keeps its own journal mode");

    let (code, out) = inrush(&[
        "load",
        csv.to_str().unwrap(),
        "--to",
        "postgresql://nowhere.invalid/x",
        "--table",
        "t",
        "--fast-unsafe",
    ]);
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("--fast-unsafe: for SQLite targets only"),
        "{out}"
    );
}

/// The CSV syntax corpus, read into SQLite as PostgreSQL's COPY reads it into `text` columns
/// (inrush reads COPY's CSV whatever the target), or refused where COPY refuses it.
#[test]
fn csv_syntax_corpus_reads_as_postgresql_copy_reads_it() {
    let pg = inrush_testkit::Db::fresh("sqlite");
    let dir = tempfile::tempdir().unwrap();
    for (i, data) in inrush_testkit::CSV_SYNTAX_CORPUS.iter().enumerate() {
        // A byte order mark is the one deliberate difference: inrush drops it, COPY keeps it.
        if data.starts_with(b"\xEF\xBB\xBF") {
            continue;
        }
        pg.exec("DROP TABLE IF EXISTS theirs; CREATE TABLE theirs (a text, b text, c text)");
        let theirs = pg
            .try_copy_csv("theirs", data)
            .map(|()| pg.rows("SELECT a, b, c FROM theirs ORDER BY ctid"));
        let db = dir.path().join(format!("corpus{i}.db"));
        exec(&db, "CREATE TABLE t (a TEXT, b TEXT, c TEXT)");
        let input = dir.path().join(format!("corpus{i}.csv"));
        std::fs::write(&input, data).unwrap();
        let (code, out) = inrush(&[
            "load",
            input.to_str().unwrap(),
            "--to",
            db.to_str().unwrap(),
            "--table",
            "t",
            "--no-progress",
        ]);
        let shown = String::from_utf8_lossy(data);
        let ours: Vec<Vec<Option<String>>> = Connection::open(&db)
            .unwrap()
            .prepare("SELECT a, b, c FROM t ORDER BY rowid")
            .unwrap()
            .query_map([], |r| Ok(vec![r.get(0)?, r.get(1)?, r.get(2)?]))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        match theirs {
            Ok(rows) => {
                assert_eq!(code, 0, "{shown:?}: {out}");
                assert_eq!(ours, rows, "{shown:?}");
            }
            Err(_) => {
                assert_eq!(code, 4, "{shown:?}: COPY refuses it, inrush said {out}");
                assert!(ours.is_empty(), "{shown:?}");
            }
        }
    }
}

// The fault cells: the loader SIGKILLed at moments drawn from a seed, with and without
// `--resume`, and the file judged after each kill as the next opener finds it.

/// Rows of `t` before a killed load (ids 1 to 2000), and the first id of the input's rows.
const KILL_SEED_ROWS: i64 = 2000;
const KILL_FIRST_ID: i64 = 100_000;

/// A primary key, a UNIQUE constraint (an index SQLite cannot drop) and two secondary
/// indexes (dropped and built again inside a load much larger than the table), statistics
/// already there (so that the load's `ANALYZE` adds no table).
const KILL_SCHEMA: &str = "
    CREATE TABLE t (id INTEGER PRIMARY KEY, code TEXT NOT NULL UNIQUE, grp INTEGER NOT NULL, note TEXT);
    CREATE INDEX t_grp_note ON t (grp, note DESC);
    CREATE INDEX t_lower_note ON t (lower(note)) WHERE grp > 10;
    WITH RECURSIVE g(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g WHERE i < 2000)
    INSERT INTO t SELECT i, 's' || i, i % 97, 'seed ' || i FROM g;
    ANALYZE;";

/// `rows` rows of about 350 bytes from id [`KILL_FIRST_ID`] on: 100,000 are about 35 MB, which
/// the debug-built loader takes a couple of seconds over, and whose pages with those of the
/// indexes built again outgrow its 64 MiB page cache, so that SQLite writes into the database
/// file before the commit and a kill can leave a hot journal behind.
fn wide_input(path: &Path, rows: i64) {
    use std::io::Write;
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    writeln!(out, "id,code,grp,note").unwrap();
    for i in KILL_FIRST_ID..KILL_FIRST_ID + rows {
        let text = "abcdefghij".repeat(20 + (i % 21) as usize);
        writeln!(out, "{i},c{i:08x},{},note {i} {text}", i % 97).unwrap();
    }
    out.flush().unwrap();
}

/// `count` delays below `within`, drawn from `INRUSH_CRASH_SEED` (splitmix64), as
/// `crash.rs` draws them; the seed is printed so that a failure can be replayed.
fn seeded_delays(count: usize, within: Duration) -> Vec<Duration> {
    let seed: u64 = std::env::var("INRUSH_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_240_611);
    eprintln!("kill delays from INRUSH_CRASH_SEED={seed}, within {within:?}");
    let mut state = seed;
    (0..count)
        .map(|_| {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            Duration::from_millis(z % within.as_millis().max(1) as u64)
        })
        .collect()
}

/// `inrush load CSV --header --to DB --table t` plus `extra`, its stderr into `log`.
fn spawn_load(csv: &Path, db: &Path, extra: &[&str], log: &Path) -> Child {
    Command::new(BIN)
        .args(["load", csv.to_str().unwrap(), "--header", "--to"])
        .args([db.to_str().unwrap(), "--table", "t", "--no-progress"])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).unwrap())
        .spawn()
        .unwrap()
}

/// Sends SIGKILL to `child` `delay` after `started` and reaps it: `None` when it was killed,
/// or the exit code of a run that had ended first.
fn kill_at(mut child: Child, started: Instant, delay: Duration) -> Option<i32> {
    use std::os::unix::process::ExitStatusExt;
    std::thread::sleep((started + delay).saturating_duration_since(Instant::now()));
    // A child that exited but is not reaped yet takes the signal without effect.
    child.kill().unwrap();
    let status = child.wait().unwrap();
    match status.signal() {
        Some(libc::SIGKILL) => None,
        _ => Some(status.code().expect("an exit code or SIGKILL")),
    }
}

/// The rollback journal a killed load left beside `db`, before anyone opened the file again:
/// a hot one (its header written: the database file may hold pages of the unfinished
/// transaction) must be rolled back by the next opener.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Journal {
    None,
    /// Created but never made hot (its first byte zero): the database file is untouched and
    /// SQLite ignores it.
    Cold,
    Hot,
}

fn journal_of(db: &Path) -> (PathBuf, Journal) {
    let path = PathBuf::from(format!("{}-journal", db.display()));
    let state = match std::fs::read(&path) {
        Err(_) => Journal::None,
        Ok(bytes) if bytes.first().is_some_and(|&b| b != 0) => Journal::Hot,
        Ok(_) => Journal::Cold,
    };
    (path, state)
}

/// Opens `db` as the next user would (rolling back a hot journal) and asserts that
/// `PRAGMA integrity_check` says `ok`, and that a hot journal is gone with its transaction.
fn open_intact(db: &Path, journal: (PathBuf, Journal), what: &str) -> Connection {
    let conn = Connection::open(db).unwrap();
    let check: Vec<String> = conn
        .prepare("PRAGMA integrity_check")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(check, ["ok"], "{what}: the file is damaged");
    if journal.1 == Journal::Hot {
        assert!(
            !journal.0.exists(),
            "{what}: the hot journal is still there after the next opener read the file"
        );
    }
    conn
}

/// Every definition in the file (`sqlite_schema`), the ledger's own tables left out.
fn definitions(conn: &Connection) -> Vec<String> {
    conn.prepare(
        "SELECT type || ' ' || name || ' on ' || tbl_name || ': ' || coalesce(sql, '(implicit)') \
         FROM sqlite_schema WHERE tbl_name NOT LIKE 'inrush\\_%' ESCAPE '\\' ORDER BY type, name",
    )
    .unwrap()
    .query_map([], |r| r.get(0))
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

/// Rows, distinct ids, distinct codes, the sum of the ids and of the texts' lengths in `t`.
fn key_totals(conn: &Connection) -> [i64; 5] {
    conn.query_row(
        "SELECT count(*), count(DISTINCT id), count(DISTINCT code), coalesce(sum(id), 0), \
           coalesce(sum(length(code) + length(note)), 0) FROM t",
        [],
        |r| Ok([r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?]),
    )
    .unwrap()
}

/// The seed rows plus `rows` input rows, each once: rows, distinct ids, distinct codes and
/// the sum of the ids (the texts' lengths are not predicted).
fn expected_keys(rows: i64) -> [i64; 4] {
    let ids = |from: i64, to: i64| (from + to) * (to - from + 1) / 2;
    let all = KILL_SEED_ROWS + rows;
    let sum = ids(1, KILL_SEED_ROWS) + ids(KILL_FIRST_ID, KILL_FIRST_ID + rows - 1);
    [all, all, all, sum]
}

/// A load without `--resume` is one transaction: SIGKILLed at any moment (reading, inserting,
/// building the dropped indexes again, `ANALYZE`, committing, exiting), it leaves a file that
/// passes `integrity_check` and holds either none of the load's rows, byte for byte as before
/// once a hot journal is rolled back, or all of them, with every definition as before. Run
/// again, the same load loads the rows (killed before the commit) or refuses them as
/// duplicates with exit 4 (after).
///
/// (`--fast-unsafe` gives this up, as the README says: its journal is in memory, so pages
/// SQLite spills into the file before the commit, once the load outgrows the page cache,
/// cannot be rolled back. Killed that way this input left "database disk image is malformed";
/// killed before the spill, the file was intact.)
#[test]
fn sigkill_at_seeded_moments_leaves_the_file_intact_and_the_load_all_or_nothing() {
    const ROWS: i64 = 100_000;
    const KILLS: usize = 5;
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("wide.csv");
    wide_input(&csv, ROWS);
    let pristine = dir.path().join("pristine.db");
    exec(&pristine, KILL_SCHEMA);
    let bytes_before = std::fs::read(&pristine).unwrap();
    let (schema_before, totals_before) = {
        let conn = Connection::open(&pristine).unwrap();
        (definitions(&conn), key_totals(&conn))
    };
    assert_eq!(totals_before[..4], expected_keys(0));

    // A load never killed: how long one takes here, and the file it leaves.
    let db = dir.path().join("t.db");
    std::fs::copy(&pristine, &db).unwrap();
    let started = Instant::now();
    let (code, out) = load(&csv, &db, &[]);
    let whole = started.elapsed();
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("indexes rebuilt after the load: t_grp_note, t_lower_note"),
        "the kills are to find the indexes dropped too: {out}"
    );
    let totals_after = {
        let conn = open_intact(&db, journal_of(&db), "a load never killed");
        assert_eq!(definitions(&conn), schema_before, "a load never killed");
        key_totals(&conn)
    };
    assert_eq!(totals_after[..4], expected_keys(ROWS));
    eprintln!("one whole load: {whole:?}");

    // The kills land anywhere in a load, and some after it.
    let mut before_commit = 0;
    let mut last = None;
    for (kill, delay) in seeded_delays(KILLS, whole * 5 / 4).into_iter().enumerate() {
        // A journal the last kill left unused (never made hot) goes too.
        let _ = std::fs::remove_file(journal_of(&db).0);
        std::fs::copy(&pristine, &db).unwrap();
        let log = dir.path().join(format!("kill{kill}.log"));
        let started = Instant::now();
        let child = spawn_load(&csv, &db, &[], &log);
        let ended = kill_at(child, started, delay);
        let journal = journal_of(&db);
        let what = format!(
            "kill {kill}, {delay:?} after the start ({}, journal: {:?})",
            match ended {
                None => "killed".to_string(),
                Some(code) => format!("had exited {code} first"),
            },
            journal.1
        );
        let conn = open_intact(&db, journal.clone(), &what);
        assert_eq!(definitions(&conn), schema_before, "{what}");
        let totals = key_totals(&conn);
        drop(conn);
        let outcome = if totals == totals_before {
            assert!(
                std::fs::read(&db).unwrap() == bytes_before,
                "{what}: none of the load's rows, but the file is not as it was"
            );
            assert_eq!(ended, None, "{what}: exited without loading");
            before_commit += 1;
            "none of the rows"
        } else if totals == totals_after {
            // The load commits and then exits: a kill may fall between the two.
            assert!(
                matches!(ended, None | Some(0)),
                "{what}: {}",
                std::fs::read_to_string(&log).unwrap()
            );
            assert_ne!(
                journal.1,
                Journal::Hot,
                "{what}: committed, yet a hot journal"
            );
            "all of the rows"
        } else {
            panic!("{what}: part of the load is in the table: {totals:?}, before {totals_before:?}, after {totals_after:?}");
        };
        eprintln!("{what}: {outcome}");
        last = Some((what, totals));
    }
    assert!(
        before_commit > 0,
        "no kill came before the commit: the kills come too late for this machine"
    );

    // The same load again, on the file the last kill left.
    let (what, totals) = last.unwrap();
    let (code, out) = load(&csv, &db, &[]);
    let conn = open_intact(&db, journal_of(&db), "the load run again");
    assert_eq!(definitions(&conn), schema_before, "the load run again");
    if totals == totals_before {
        assert_eq!(code, 0, "after {what}: {out}");
    } else {
        assert_eq!(code, 4, "after {what}: {out}");
        assert!(out.contains("UNIQUE constraint failed: t.id"), "{out}");
    }
    assert_eq!(key_totals(&conn), totals_after, "after {what}");
}

/// A `--resume` load SIGKILLed again and again at moments drawn from a seed: after each kill
/// the file passes `integrity_check`, a hot journal is rolled back by the next opener, and the
/// table holds exactly the rows of the blocks the ledger records (each block's lines, no other
/// input row); the same command run once more exits 0 with every input row in the table
/// exactly once, and the ledger's rows add up to them.
#[test]
fn sigkill_under_resume_then_a_rerun_loads_every_row_exactly_once() {
    const ROWS: i64 = 60_000;
    const KILLS: usize = 5;
    let resume: &[&str] = &["--resume", "--block-size", "524288"];
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("wide.csv");
    wide_input(&csv, ROWS);
    let pristine = dir.path().join("pristine.db");
    exec(&pristine, KILL_SCHEMA);
    let schema_before = definitions(&Connection::open(&pristine).unwrap());

    // A load never killed: how long one takes here, and what it leaves.
    let scratch = dir.path().join("scratch.db");
    std::fs::copy(&pristine, &scratch).unwrap();
    let started = Instant::now();
    let (code, out) = load(&csv, &scratch, resume);
    let whole = started.elapsed();
    assert_eq!(code, 0, "{out}");
    let totals_after = key_totals(&Connection::open(&scratch).unwrap());
    assert_eq!(totals_after[..4], expected_keys(ROWS));
    eprintln!("one whole load: {whole:?}");

    // The table against its ledger: the rows each recorded block's lines hold (line 2 is id
    // KILL_FIRST_ID), all there, and no input row outside the recorded blocks.
    let matches_ledger = |conn: &Connection, what: &str| -> i64 {
        let ledger = "SELECT count(*) FROM sqlite_schema WHERE name = 'inrush_load_ledger'";
        if conn.query_row(ledger, [], |r| r.get::<_, i64>(0)).unwrap() == 0 {
            let loaded: i64 = conn
                .query_row(
                    "SELECT count(*) FROM t WHERE id >= ?1",
                    [KILL_FIRST_ID],
                    |r| r.get(0),
                )
                .unwrap();
            assert_eq!(loaded, 0, "{what}: rows loaded, yet no ledger");
            return 0;
        }
        let (blocks, recorded, wrong): (i64, i64, i64) = conn
            .query_row(
                "SELECT count(*), coalesce(sum(rows), 0), \
                   count(*) FILTER (WHERE rows <> next_line - first_line OR rows <> \
                     (SELECT count(*) FROM t WHERE id >= ?1 + first_line - 2 AND id < ?1 + next_line - 2)) \
                 FROM inrush_load_ledger",
                [KILL_FIRST_ID],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .unwrap();
        assert_eq!(
            wrong, 0,
            "{what}: {wrong} of {blocks} blocks do not hold their lines' rows"
        );
        let outside: i64 = conn
            .query_row(
                "SELECT count(*) FROM t WHERE id >= ?1 AND NOT EXISTS (SELECT 1 FROM inrush_load_ledger l \
                   WHERE t.id >= ?1 + l.first_line - 2 AND t.id < ?1 + l.next_line - 2)",
                [KILL_FIRST_ID],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(outside, 0, "{what}: input rows of no recorded block");
        let totals = key_totals(conn);
        assert_eq!(
            totals[0] - KILL_SEED_ROWS,
            recorded,
            "{what}: the table against its ledger"
        );
        assert_eq!(
            [totals[1], totals[2]],
            [totals[0]; 2],
            "{what}: a key twice"
        );
        recorded
    };

    // Each run starts where the last stopped and is killed within a third of a whole load,
    // so that the kills find the load at many points before it is done.
    let db = dir.path().join("t.db");
    std::fs::copy(&pristine, &db).unwrap();
    let mut partial = std::collections::BTreeSet::new();
    for (kill, delay) in seeded_delays(KILLS, whole / 3).into_iter().enumerate() {
        let log = dir.path().join(format!("kill{kill}.log"));
        let started = Instant::now();
        let child = spawn_load(&csv, &db, resume, &log);
        let ended = kill_at(child, started, delay);
        let journal = journal_of(&db);
        let what = format!(
            "kill {kill}, {delay:?} after the start ({}, journal: {:?})",
            match ended {
                None => "killed".to_string(),
                Some(code) => format!("had exited {code} first"),
            },
            journal.1
        );
        assert!(
            matches!(ended, None | Some(0)),
            "{what}: {}",
            std::fs::read_to_string(&log).unwrap()
        );
        let conn = open_intact(&db, journal, &what);
        assert_eq!(definitions(&conn), schema_before, "{what}");
        let committed = matches_ledger(&conn, &what);
        eprintln!("{what}: {committed} rows committed");
        if 0 < committed && committed < ROWS {
            partial.insert(committed);
        }
    }
    assert!(
        partial.len() >= 2,
        "only {} kills found the load partly committed ({partial:?}): the kills come too early or too late for this machine",
        partial.len()
    );

    let (code, out) = load(&csv, &db, resume);
    assert_eq!(code, 0, "the run after {KILLS} kills: {out}");
    assert!(out.contains("from earlier runs (--resume)"), "{out}");
    let conn = open_intact(&db, journal_of(&db), "the run after the kills");
    assert_eq!(definitions(&conn), schema_before);
    assert_eq!(matches_ledger(&conn, "the run after the kills"), ROWS);
    assert_eq!(key_totals(&conn), totals_after);
}

/// `inrush status --to FILE --table t --json`: the one load in the ledger (null when none).
fn status_json(db: &Path) -> serde_json::Value {
    let db = db.to_str().unwrap();
    let out = Command::new(BIN)
        .args(["status", "--to", db, "--table", "t", "--json"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "inrush status: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let loads: serde_json::Value = serde_json::from_str(&stdout).expect("status JSON");
    assert!(loads.as_array().map(Vec::len) <= Some(1), "{stdout}");
    loads[0].clone()
}

/// `inrush status` reads SQLite's ledger as PostgreSQL's: a `--resume` load SIGKILLed mid-way
/// is `interrupted`, with the blocks and rows the file holds (nothing `loading`: SQLite keeps
/// no record of who holds what); once the same command has loaded the rest, `complete` (its
/// blocks cover the input from past the header to its end).
#[test]
fn status_shows_a_killed_resume_load_interrupted_then_complete() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("big.csv");
    inrush_testkit::generate(BIN, &csv, 300_000);
    let db = dir.path().join("status.db");
    exec(
        &db,
        "CREATE TABLE t (fieldint1 INTEGER, fieldint2 INTEGER, fieldint3 INTEGER, \
         fieldchar1 TEXT, fieldchar2 TEXT, fieldchar3 TEXT)",
    );
    let (input, to) = (csv.to_str().unwrap(), db.to_str().unwrap());
    let args = [
        "load",
        input,
        "--header",
        "--to",
        to,
        "--table",
        "t",
        "--no-progress",
        "--resume",
        "--block-size",
        "65536",
    ];
    let mut child = Command::new(BIN)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let reader = Connection::open(&db).unwrap();
    reader.busy_timeout(Duration::from_secs(5)).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    // Killed once some blocks are committed (a busy file or no ledger yet count as none).
    while Instant::now() < deadline
        && reader
            .query_row("SELECT count(*) FROM inrush_load_ledger", [], |r| {
                r.get::<_, i64>(0)
            })
            .unwrap_or(0)
            < 3
    {
        std::thread::sleep(Duration::from_millis(2));
    }
    assert!(
        child.try_wait().unwrap().is_none(),
        "the load ended before the kill"
    );
    child.kill().unwrap();
    child.wait().unwrap();

    let count = |sql: &str| -> i64 { reader.query_row(sql, [], |r| r.get(0)).unwrap() };
    let interrupted = status_json(&db);
    assert_eq!(interrupted["state"], "interrupted", "{interrupted}");
    assert_eq!(interrupted["complete"], false, "{interrupted}");
    assert_eq!(
        interrupted["loading"],
        serde_json::json!([]),
        "{interrupted}"
    );
    let rows = count("SELECT count(*) FROM t");
    assert!(0 < rows && rows < 300_000, "{rows} rows after the kill");
    assert_eq!(interrupted["rows"], rows, "{interrupted}");
    assert_eq!(
        interrupted["blocks"],
        count("SELECT count(*) FROM inrush_load_ledger"),
        "{interrupted}"
    );
    let size = std::fs::metadata(&csv).unwrap().len() as i64;
    assert_eq!(interrupted["size"], size, "{interrupted}");
    assert_eq!(
        interrupted["input"],
        csv.canonicalize().unwrap().to_str().unwrap(),
        "{interrupted}"
    );
    let (code, text) = inrush(&["status", "--to", to, "--table", "t"]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("): interrupted\n"), "{text}");
    assert!(text.contains("no process is loading it"), "{text}");

    let (code, out) = inrush(&args);
    assert_eq!(code, 0, "{out}");
    let complete = status_json(&db);
    assert_eq!(complete["state"], "complete", "{complete}");
    assert_eq!(complete["complete"], true, "{complete}");
    assert_eq!(complete["rows"], 300_000, "{complete}");
    assert_eq!(
        complete["blocks"],
        count("SELECT count(*) FROM inrush_load_ledger"),
        "{complete}"
    );
    // Every byte but the header's.
    let header = std::fs::read_to_string(&csv).unwrap().find('\n').unwrap() as i64 + 1;
    assert_eq!(complete["bytes"], size - header, "{complete}");
    let (code, text) = inrush(&["status", "--to", to]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("): complete\n"), "{text}");
    assert!(text.contains("300,000 rows"), "{text}");
}

/// A ledger from before inrush recorded where the data starts cannot say whether a load is
/// complete (`unknown`, as PostgreSQL's); the next `--resume` load adds the column and records
/// its own input's start, so its load is `complete`.
#[test]
fn status_of_a_ledger_without_data_start_is_unknown() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("old.db");
    exec(
        &db,
        "CREATE TABLE t (a INTEGER, b TEXT); \
         CREATE TABLE inrush_load_inputs ( \
           tbl TEXT NOT NULL, input TEXT NOT NULL, block_size INTEGER NOT NULL, \
           size INTEGER NOT NULL, mtime TEXT NOT NULL, fingerprint TEXT NOT NULL, \
           started_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP, \
           PRIMARY KEY (tbl, input, block_size)); \
         CREATE TABLE inrush_load_ledger ( \
           tbl TEXT NOT NULL, input TEXT NOT NULL, block_size INTEGER NOT NULL, \
           block_offset INTEGER NOT NULL, block_len INTEGER NOT NULL, \
           first_line INTEGER NOT NULL, next_line INTEGER NOT NULL, rows INTEGER NOT NULL, \
           committed_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP, \
           PRIMARY KEY (tbl, input, block_size, block_offset)); \
         INSERT INTO inrush_load_inputs (tbl, input, block_size, size, mtime, fingerprint) \
           VALUES ('\"main\".\"t\"', '/gone.csv', 1048576, 8, '0', 'f'); \
         INSERT INTO inrush_load_ledger VALUES \
           ('\"main\".\"t\"', '/gone.csv', 1048576, 4, 4, 2, 3, 1, CURRENT_TIMESTAMP);",
    );
    let old = status_json(&db);
    assert_eq!(old["state"], "unknown", "{old}");
    assert_eq!(old["complete"], serde_json::Value::Null, "{old}");
    assert_eq!(old["rows"], 1, "{old}");

    let csv = dir.path().join("new.csv");
    std::fs::write(&csv, "a,b\n1,x\n2,y\n").unwrap();
    let (code, out) = load(&csv, &db, &["--resume"]);
    assert_eq!(code, 0, "{out}");
    let db = db.to_str().unwrap();
    let out = Command::new(BIN)
        .args(["status", "--to", db, "--json"])
        .output()
        .unwrap();
    let loads: serde_json::Value = serde_json::from_slice(&out.stdout).expect("status JSON");
    let states: Vec<_> = loads
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["input"].as_str().unwrap().ends_with("new.csv"),
                l["state"].clone(),
            )
        })
        .collect();
    assert_eq!(
        states,
        [(false, "unknown".into()), (true, "complete".into())],
        "{loads}"
    );
}

/// A row SQLite refuses for a key goes to the reject log with the key's column and the row's
/// value there.
#[test]
fn the_reject_log_names_the_key_column_sqlite_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("keys.db");
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute_batch("CREATE TABLE t (id INTEGER PRIMARY KEY, code TEXT UNIQUE)")
        .unwrap();
    let csv = dir.path().join("keys.csv");
    std::fs::write(&csv, "id,code\n1,a\n2,b\n3,a\n").unwrap();
    let rejects = dir.path().join("keys.rejects");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_inrush"))
        .args(["load", csv.to_str().unwrap(), "--to", db.to_str().unwrap()])
        .args([
            "--table",
            "t",
            "--header",
            "--no-progress",
            "--max-errors",
            "5",
        ])
        .args(["--rejects", rejects.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(6),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let log = std::fs::read_to_string(format!("{}.log", rejects.display())).unwrap();
    let entry: serde_json::Value = serde_json::from_str(log.lines().next().unwrap()).unwrap();
    assert_eq!(entry["column"], "code", "{log}");
    assert_eq!(entry["value"], "a", "{log}");
}

/// `--check` finds what the load would refuse (issue 30): the rows go in inside a transaction
/// rolled back, so a key already in the table, a foreign-key miss and a CHECK violation end
/// it with exit 4 naming the row; with `--max-errors` every refused row is in the reject file
/// (exit 6); the file's rows and schema are as they were, `--truncate` included.
#[test]
fn check_finds_what_sqlite_would_refuse() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("check.db");
    exec(
        &db,
        "CREATE TABLE parent (id INTEGER PRIMARY KEY); INSERT INTO parent VALUES (1), (2);
         CREATE TABLE t (id INTEGER PRIMARY KEY, p INTEGER REFERENCES parent, n INTEGER CHECK (n >= 0));
         CREATE INDEX t_n ON t (n);
         INSERT INTO t VALUES (1, 1, 1), (2, 2, 2);",
    );
    let schema = || {
        let conn = Connection::open(&db).unwrap();
        let sql: Vec<String> = conn
            .prepare("SELECT sql FROM sqlite_schema ORDER BY name")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        sql
    };
    let (rows, definitions) = (contents(&db), schema());
    let check = |csv: &Path, extra: &[&str]| {
        let mut args = vec!["--check"];
        args.extend_from_slice(extra);
        let (code, out) = load(csv, &db, &args);
        assert_eq!(contents(&db), rows, "{out}");
        assert_eq!(schema(), definitions, "{out}");
        (code, out)
    };
    let again = write(dir.path(), "again.csv", "id,p,n\n3,1,3\n1,1,1\n");
    let (code, out) = check(&again, &[]);
    assert_eq!(code, 4, "{out}");
    assert!(out.contains("again.csv:3") && out.contains("t.id"), "{out}");
    let orphan = write(dir.path(), "orphan.csv", "id,p,n\n3,9,3\n");
    let (code, out) = check(&orphan, &[]);
    assert_eq!(code, 4, "{out}");
    assert!(out.contains("FOREIGN KEY"), "{out}");
    let negative = write(dir.path(), "negative.csv", "id,p,n\n3,1,-1\n");
    let (code, out) = check(&negative, &[]);
    assert_eq!(code, 4, "{out}");
    assert!(
        out.contains("negative.csv:2") && out.contains("CHECK"),
        "{out}"
    );
    let mixed = write(
        dir.path(),
        "mixed.csv",
        "id,p,n\n3,1,3\n1,1,1\n4,9,4\n5,1,-5\n6,2,6\n",
    );
    let rejects = dir.path().join("mixed.rejects");
    let rejects_arg = rejects.to_str().unwrap();
    let (code, out) = check(&mixed, &["--max-errors", "10", "--rejects", rejects_arg]);
    assert_eq!(code, 6, "{out}");
    assert!(
        out.contains("checked 5 rows") && out.contains("3 would be refused"),
        "{out}"
    );
    assert!(out.contains("nothing was written"), "{out}");
    let refused = std::fs::read_to_string(&rejects).unwrap();
    let mut refused: Vec<&str> = refused.lines().collect();
    refused.sort();
    assert_eq!(refused, ["1,1,1", "4,9,4", "5,1,-5", "id,p,n"], "{out}");
    let (code, out) = check(&mixed, &["--max-errors", "10", "--json"]);
    assert_eq!(code, 6, "{out}");
    assert!(out.contains("\"loaded\":false"), "{out}");
    // --truncate: checked against the table emptied in the transaction rolled back.
    let (code, out) = check(&again, &["--truncate"]);
    assert_eq!(code, 0, "{out}");
    let (code, out) = check(&orphan, &["--truncate"]);
    assert_eq!(code, 4, "{out}");
}
