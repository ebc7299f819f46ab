//! What the MariaDB test binaries share: running the CLI, files the server can read, the
//! server's own strict `LOAD DATA INFILE` as the model, and the two differential checks every
//! write path must pass (typed good rows, and every kind of bad row).

// Each test binary that includes this module uses a part of it.
#![allow(dead_code)]

use inrush_testkit::MariaDb;
use std::path::{Path, PathBuf};

pub const BIN: &str = env!("CARGO_BIN_EXE_inrush");

pub fn inrush(args: &[&str]) -> (i32, String) {
    inrush_testkit::run(BIN, args)
}

/// `inrush load INPUT --to DB --table t` plus `extra`, with `--header` for a `.csv` INPUT.
pub fn load(csv: &Path, db: &MariaDb, table: &str, extra: &[&str]) -> (i32, String) {
    inrush(&load_args(csv, db, table, extra))
}

/// The arguments [`load`] runs, for tests that start the load themselves (to kill or watch it).
pub fn load_args<'a>(
    csv: &'a Path,
    db: &'a MariaDb,
    table: &'a str,
    extra: &[&'a str],
) -> Vec<&'a str> {
    let input = csv.to_str().unwrap();
    let mut args = vec![
        "load",
        input,
        "--to",
        &db.url,
        "--table",
        table,
        "--no-progress",
    ];
    if input.ends_with(".csv") {
        args.push("--header");
    }
    args.extend_from_slice(extra);
    args
}

/// A directory the server (another user) can read the test's files in.
pub fn shared_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

pub fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    path
}

/// `SHOW CREATE TABLE` without the AUTO_INCREMENT counter, which a load moves on.
pub fn definition(db: &MariaDb, table: &str) -> String {
    let shown = db.rows(&format!("SHOW CREATE TABLE {table}")).join("\n");
    shown
        .split(' ')
        .filter(|word| !word.starts_with("AUTO_INCREMENT="))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The server's own strict-mode `LOAD DATA INFILE` of a CSV with a header, NULL as `NULL`.
pub fn server_load(db: &MariaDb, csv: &Path, table: &str) -> Result<(), String> {
    db.try_exec(&format!(
        "SET SESSION sql_mode = CONCAT_WS(',', @@sql_mode, 'STRICT_ALL_TABLES'); \
         LOAD DATA INFILE '{}' INTO TABLE {table} CHARACTER SET utf8mb4 \
         FIELDS TERMINATED BY ',' OPTIONALLY ENCLOSED BY '\"' ESCAPED BY '' \
         LINES TERMINATED BY '\\n' IGNORE 1 LINES",
        csv.display()
    ))
}

pub const TYPES: &str =
    "(id INT PRIMARY KEY, big BIGINT UNSIGNED, tiny TINYINT(1), amount DECIMAL(10,2), \
    dbl DOUBLE, name VARCHAR(20), code CHAR(3), body TEXT, day DATE, at DATETIME(3), t TIME, \
    kind ENUM('a','b','c'), doc JSON)";

/// Thirteen column types with tabs, backslashes, line breaks, `\\N` as text and Unicode, loaded
/// over two connections, against the server's own `LOAD DATA INFILE` of the same CSV, row for
/// row; `method` is how the summary must say the rows went in.
pub fn typed_rows_load_as_the_server_reads_them(db: &MariaDb, method: &str) {
    db.exec(&format!(
        "CREATE TABLE ours {TYPES}; CREATE TABLE theirs {TYPES}"
    ));
    let dir = shared_dir();
    let mut csv = String::from("id,big,tiny,amount,dbl,name,code,body,day,at,t,kind,doc\n");
    let bodies = [
        "plain",
        "tab\there",
        "back\\slash",
        "\"quoted\"",
        "line\nbreak",
        "été €",
        "😀",
        "carriage\rreturn",
        "comma, inside",
        "\\N",
        "",
    ];
    for i in 0..400u64 {
        let body = bodies[i as usize % bodies.len()];
        let quoted = format!("\"{}\"", body.replace('"', "\"\""));
        csv.push_str(&format!(
            "{i},{},{},{}.{:02},{},n{i},c{},{quoted},2024-{:02}-{:02},2024-01-02 03:04:05.{:03},{:02}:30:00,{},{}\n",
            u64::MAX - i * 7919,
            i % 2,
            i as i64 * 37 - 5000,
            i % 100,
            (i as f64) * 1.25e-3 - 0.5,
            i % 10,
            1 + i % 12,
            1 + i % 28,
            i % 1000,
            i % 24,
            ["a", "b", "c"][i as usize % 3],
            match i % 4 {
                0 => "NULL".to_string(),
                1 => "\"{\"\"k\"\": [1, 2]}\"".to_string(),
                2 => format!("{i}"),
                _ => "\"\"\"s\"\"\"".to_string(),
            }
        ));
    }
    let csv = write(dir.path(), "good.csv", &csv);
    server_load(db, &csv, "theirs").expect("the server loads every row");
    let (code, out) = load(&csv, db, "ours", &["--null", "NULL", "--connections", "2"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains(&format!("{method} over 2 connections")),
        "{out}"
    );
    let ours = db.rows("SELECT * FROM ours ORDER BY id");
    let theirs = db.rows("SELECT * FROM theirs ORDER BY id");
    assert_eq!(ours.len(), 400);
    for (a, b) in ours.iter().zip(&theirs) {
        assert_eq!(a, b);
    }
}

/// Every kind of bad row: refused with its line, column and the server's reason, the table
/// unchanged without `--max-errors`, only the good rows in with it.
pub fn bad_rows_are_reported_and_kept_out(db: &MariaDb) {
    db.exec(
        "CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(5) NOT NULL, score DECIMAL(5,2), \
           born DATE, kind ENUM('a','b')); INSERT INTO t VALUES (100, 'kept', 1, '2000-01-01', 'a')",
    );
    let dir = shared_dir();
    let csv = write(
        dir.path(),
        "in.csv",
        "id,name,score,born,kind\n\
         1,ann,1.5,2020-01-02,a\n\
         2,bobbybob,2,2020-01-03,b\n\
         3,cy,12345.6,2021-03-04,a\n\
         4,dee,3,2020-02-30,a\n\
         5,eve,4,2020-01-05,z\n\
         6,,5,2020-01-06,b\n\
         100,dup,6,2020-01-07,a\n\
         7,gus,x,2020-01-08,a\n\
         8,hal,8,2020-01-09,b\n",
    );
    let before = db.rows("SELECT * FROM t ORDER BY id");
    let (code, out) = load(&csv, db, "t", &[]);
    assert_eq!(code, 4, "{out}");
    assert!(
        out.contains("in.csv:3, column name, value \"bobbybob\": Data too long"),
        "{out}"
    );
    assert_eq!(db.rows("SELECT * FROM t ORDER BY id"), before);

    let (code, out) = load(&csv, db, "t", &["--max-errors", "10"]);
    assert_eq!(code, 6, "{out}");
    assert_eq!(
        db.rows("SELECT * FROM t ORDER BY id"),
        [
            "1\tann\t1.50\t2020-01-02\ta",
            "8\thal\t8.00\t2020-01-09\tb",
            "100\tkept\t1.00\t2000-01-01\ta",
        ]
    );
    let rejects = std::fs::read_to_string(dir.path().join("in.csv.rejects")).unwrap();
    let mut lines: Vec<&str> = rejects.lines().skip(1).collect();
    lines.sort();
    assert_eq!(
        lines,
        [
            "100,dup,6,2020-01-07,a",
            "2,bobbybob,2,2020-01-03,b",
            "3,cy,12345.6,2021-03-04,a",
            "4,dee,3,2020-02-30,a",
            "5,eve,4,2020-01-05,z",
            "6,,5,2020-01-06,b",
            "7,gus,x,2020-01-08,a",
        ]
    );
    let log = std::fs::read_to_string(dir.path().join("in.csv.rejects.log")).unwrap();
    for reason in [
        "Data too long",
        "Out of range value",
        "Incorrect date value",
        "not a member of its enum",
        "cannot be null",
        "Duplicate entry '100'",
        "Incorrect decimal value",
    ] {
        assert!(log.contains(reason), "{reason} not in {log}");
    }
}
