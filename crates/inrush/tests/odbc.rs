//! Loads over ODBC (`--to odbc:...`), through unixODBC and Debian's drivers into the tests'
//! servers: PostgreSQL's (psqlODBC, `odbc-postgresql`), MariaDB's (Connector/ODBC,
//! `odbc-mariadb`) and SQLite's (`libsqliteodbc`). The rows are those each engine's own bulk
//! path stores from the same file (COPY, strict LOAD DATA INFILE, `.import`), over one
//! connection or several; a value the database refuses loads nothing; what is not carried out
//! over ODBC is refused before anything changes.

mod mariadb_common;
mod odbc_common;
mod sqlite_common;
mod stop_common;

use inrush_testkit::{Db, MariaDb};

const BIN: &str = env!("CARGO_BIN_EXE_inrush");

const COLUMNS: &str =
    "(id integer PRIMARY KEY, name varchar(40), amount numeric(10,2), day date, note text)";

/// `--to` for `db` through psqlODBC.
fn odbc_to(db: &Db) -> String {
    odbc_common::psqlodbc(&db.conninfo)
}

/// `rows` rows with a header: quotes, commas, Unicode, signs, leap days, NULLs, and a long
/// value at row 2,500.
fn csv(rows: usize) -> String {
    let mut csv = String::from("id,name,amount,day,note\n");
    for i in 1..=rows {
        let day = ["2024-02-29", "1999-12-31", ""][i % 3];
        let note = ["plain", "\"a, \"\"quoted\"\" note\"", "ünïcødé ✓"][i % 3];
        // Past the first batch, a value longer than any before: the writer binds wider buffers.
        let long = "é".repeat(20_000);
        let note = if i == 2_500 { long.as_str() } else { note };
        let amount = format!("{}{}.{:02}", ["", "-"][i % 2], i % 1000, i % 100);
        csv.push_str(&format!("{i},name {i},{amount},{day},{note}\n"));
    }
    csv
}

fn dump(db: &Db, table: &str) -> Vec<Option<String>> {
    let rows = db.rows(&format!("SELECT {table}::text FROM {table} ORDER BY id"));
    rows.into_iter().map(|r| r[0].clone()).collect()
}

fn load(db: &Db, path: &std::path::Path, extra: &[&str]) -> (i32, String) {
    load_to(&odbc_to(db), path, extra)
}

/// `inrush load` of `path` (CSV with a header) into `ours` at `to`, with `extra`.
fn load_to(to: &str, path: &std::path::Path, extra: &[&str]) -> (i32, String) {
    let mut args = vec!["load", path.to_str().unwrap(), "--header", "--no-progress"];
    args.extend(["--to", to, "--table", "ours"]);
    args.extend_from_slice(extra);
    inrush_testkit::run(BIN, &args)
}

#[test]
fn rows_through_the_driver_are_the_rows_copy_stores_over_one_connection_or_several() {
    let db = Db::fresh("odbc");
    let dir = tempfile::tempdir().unwrap();
    for (rows, connections) in [(300, "1"), (5_000, "3")] {
        db.exec(&format!(
            "DROP TABLE IF EXISTS ours, theirs; CREATE TABLE ours {COLUMNS}; CREATE TABLE theirs {COLUMNS}"
        ));
        let text = csv(rows);
        let path = dir.path().join("rows.csv");
        std::fs::write(&path, &text).unwrap();
        let (_, body) = text.split_once('\n').unwrap();
        db.copy_csv("theirs", body.as_bytes());
        let (code, out) = load(&db, &path, &["--connections", connections, "--json"]);
        assert_eq!(code, 0, "{out}");
        assert!(out.contains("\"version\":\"PostgreSQL 18"), "{out}");
        assert!(out.contains("ODBC parameter arrays"), "{out}");
        assert_eq!(dump(&db, "ours"), dump(&db, "theirs"), "{out}");
        // Each connection's mark of its commit, and the load's record, are gone once it
        // committed.
        let left = "SELECT (SELECT count(*) FROM inrush_odbc_marks) + (SELECT count(*) FROM inrush_odbc_commits)";
        assert_eq!(db.int(left), 0, "{out}");
    }
}

#[test]
fn a_value_the_database_refuses_loads_nothing_and_exits_4() {
    let db = Db::fresh("odbc");
    db.exec(&format!("CREATE TABLE ours {COLUMNS}"));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.csv");
    // Inside a multi-row INSERT (row 1,234), and in the rows after the last whole one.
    let inside = csv(3000).replace("\n1234,name 1234,234.34,", "\n1234,name 1234,not a number,");
    let after = csv(3000) + "3001,late,not a number,2024-01-01,x\n";
    for (text, line) in [(inside, "bad.csv:1235"), (after, "bad.csv:3002")] {
        std::fs::write(&path, text).unwrap();
        let (code, out) = load(&db, &path, &[]);
        assert_eq!(code, 4, "{out}");
        assert!(out.contains("not a number"), "{out}");
        // The row the database refused, found alone: its file and line.
        assert!(out.contains(line), "{line}: {out}");
        assert_eq!(db.int("SELECT count(*) FROM ours"), 0, "{out}");
    }
}

/// `csv(3000)` with a value the database refuses at row 1,234 (inside a multi-row INSERT) and
/// a row 3,001 after the last whole one, whose key is row 5's.
fn two_bad_rows() -> String {
    csv(3000).replace("\n1234,name 1234,234.34,", "\n1234,name 1234,not a number,")
        + "5,late,1.00,2024-01-01,x\n"
}

/// Rejects allowed: the rows the database refuses go to the reject file, the rest in (exit
/// 6); one allowed fewer than there are, and nothing goes in (exit 4).
fn rejects_through(to: &str, dir: &std::path::Path, count: &dyn Fn() -> i64, empty: &dyn Fn()) {
    let path = dir.join("bad.csv");
    std::fs::write(&path, two_bad_rows()).unwrap();
    let rejects = dir.join("bad.rejects.csv");
    let rejects_arg = rejects.to_str().unwrap();
    let run = |max: &str| {
        let rejects = [
            "--max-errors",
            max,
            "--rejects",
            rejects_arg,
            "--connections",
            "2",
        ];
        load_to(to, &path, &rejects)
    };
    let (code, out) = run("5");
    assert_eq!(code, 6, "{out}");
    assert_eq!(count(), 2_999, "{out}");
    let refused = std::fs::read_to_string(&rejects).unwrap();
    assert!(refused.contains("1234,name 1234,not a number"), "{refused}");
    assert!(refused.contains("5,late,1.00"), "{refused}");
    empty();
    let (code, out) = run("1");
    assert_eq!(code, 4, "{out}");
    assert_eq!(count(), 0, "{out}");
}

#[test]
fn rows_the_database_refuses_go_to_the_reject_file_through_psqlodbc() {
    let db = Db::fresh("odbc");
    db.exec(&format!("CREATE TABLE ours {COLUMNS}"));
    let dir = tempfile::tempdir().unwrap();
    rejects_through(
        &odbc_to(&db),
        dir.path(),
        &|| db.int("SELECT count(*) FROM ours"),
        &|| db.exec("TRUNCATE ours"),
    );
}

#[test]
fn a_stop_while_rows_stream_rolls_back_exits_130_and_a_rerun_loads_once() {
    let db = Db::fresh("odbc");
    db.exec(&format!("CREATE TABLE ours {COLUMNS}"));
    let text = csv(20_000);
    let half: String = text
        .lines()
        .take(10_000)
        .map(|l| format!("{l}\n"))
        .collect();
    let to = odbc_to(&db);
    for signal in [libc::SIGINT, libc::SIGTERM] {
        let child = stop_common::load_from_pipe(BIN, &to, "ours", &["--connections", "2"]);
        let (code, err) = stop_common::stopped_while_reading(child, &half, signal);
        assert_eq!(code, 130, "signal {signal}: {err}");
        assert_eq!(
            db.int("SELECT count(*) FROM ours"),
            0,
            "signal {signal}: {err}"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rows.csv");
    std::fs::write(&path, &text).unwrap();
    let (code, out) = load(&db, &path, &[]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(db.int("SELECT count(*) FROM ours"), 20_000, "{out}");
}

#[test]
fn what_is_not_carried_out_over_odbc_is_refused_with_2_and_the_password_never_shown() {
    let db = Db::fresh("odbc");
    db.exec(&format!("CREATE TABLE ours {COLUMNS}"));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rows.csv");
    std::fs::write(&path, csv(10)).unwrap();
    for extra in [&["--on-conflict", "skip"][..], &["--text"]] {
        let (code, out) = load(&db, &path, extra);
        assert_eq!(code, 2, "{extra:?}: {out}");
        assert!(out.contains("ODBC"), "{extra:?}: {out}");
    }
    assert_eq!(db.int("SELECT count(*) FROM ours"), 0);
    let to = format!("{}Pwd=s3cret;Port=1;", odbc_to(&db));
    let (code, out) = inrush_testkit::run(
        BIN,
        &[
            "load",
            path.to_str().unwrap(),
            "--header",
            "--to",
            &to,
            "--table",
            "ours",
        ],
    );
    assert_eq!(code, 3, "{out}");
    assert!(!out.contains("s3cret"), "{out}");
}

#[test]
fn plan_says_the_table_keeps_its_indexes_and_changes_nothing() {
    let db = Db::fresh("odbc");
    db.exec(&format!(
        "CREATE TABLE ours {COLUMNS}; CREATE INDEX ours_day ON ours (day)"
    ));
    let to = odbc_to(&db);
    let (code, out) = inrush_testkit::run(BIN, &["plan", "--to", &to, "--table", "ours"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("indexes and keys are kept: over ODBC"),
        "{out}"
    );
    // Where inrush's own target would rebuild them instead.
    assert!(
        out.contains("inrush's own target (--to postgresql://...)"),
        "{out}"
    );
    // Each index the driver lists, by name.
    assert!(
        out.contains("index ours_pkey") && out.contains("index ours_day"),
        "{out}"
    );
    // The database's own statistics command, and no other database's bulk path.
    assert!(out.contains("run ANALYZE \"ours\""), "{out}");
    assert!(
        !out.contains("TABLOCK") && !out.contains("APPEND_VALUES"),
        "{out}"
    );
    assert_eq!(
        db.int("SELECT count(*) FROM pg_indexes WHERE indexname = 'ours_day'"),
        1
    );
}

/// Types every engine has, and rows without NULLs (LOAD DATA reads an empty field as a value).
const TYPED: &str =
    "(id INTEGER PRIMARY KEY, name VARCHAR(40), amount DECIMAL(10,2), day DATE, note TEXT)";

/// The same in a STRICT SQLite table, which refuses text in a REAL column as the others do.
const STRICT: &str = "(id INTEGER PRIMARY KEY, name TEXT, amount REAL, day TEXT, note TEXT) STRICT";

fn full_csv(rows: usize) -> String {
    csv(rows).replace(",,", ",2000-01-01,")
}

/// Loads `text` into `ours` through ODBC at `to` with `connections`, and checks it equals
/// `theirs` as `dump` reads both.
fn same_as_bulk(
    to: &str,
    path: &std::path::Path,
    connections: &str,
    dump: &dyn Fn(&str) -> Vec<String>,
) {
    let (code, out) = load_to(to, path, &["--connections", connections]);
    assert_eq!(code, 0, "{out}");
    let theirs = dump("theirs");
    assert!(!theirs.is_empty());
    assert_eq!(dump("ours"), theirs, "{out}");
}

/// `--to` for `db` through MariaDB Connector/ODBC.
fn mariadb_to(db: &MariaDb) -> String {
    odbc_common::mariadb_odbc(&db.url)
}

#[test]
fn a_value_mariadbs_driver_refuses_loads_nothing_and_exits_4() {
    let db = MariaDb::fresh("odbc");
    db.exec(&format!("CREATE TABLE ours {TYPED}"));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.csv");
    std::fs::write(&path, two_bad_rows()).unwrap();
    let (code, out) = load_to(&mariadb_to(&db), &path, &[]);
    assert_eq!(code, 4, "{out}");
    assert!(out.contains("bad.csv:1235"), "{out}");
    assert_eq!(db.rows("SELECT count(*) FROM ours"), ["0"], "{out}");
}

#[test]
fn rows_the_database_refuses_go_to_the_reject_file_through_mariadbs_driver() {
    let db = MariaDb::fresh("odbc");
    db.exec(&format!("CREATE TABLE ours {TYPED}"));
    let dir = tempfile::tempdir().unwrap();
    rejects_through(
        &mariadb_to(&db),
        dir.path(),
        &|| db.rows("SELECT count(*) FROM ours")[0].parse().unwrap(),
        &|| db.exec("TRUNCATE ours"),
    );
}

#[test]
fn rows_the_database_refuses_go_to_the_reject_file_through_sqlites_driver() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("t.db");
    let open = || rusqlite::Connection::open(&file).unwrap();
    open()
        .execute_batch(&format!("CREATE TABLE ours {STRICT}"))
        .unwrap();
    rejects_through(
        &odbc_common::sqlite_odbc(&file),
        dir.path(),
        &|| {
            open()
                .query_row("SELECT count(*) FROM ours", [], |r| r.get(0))
                .unwrap()
        },
        &|| open().execute_batch("DELETE FROM ours").unwrap(),
    );
}

#[test]
fn rows_through_mariadbs_driver_are_the_rows_load_data_stores() {
    let db = MariaDb::fresh("odbc");
    let dir = mariadb_common::shared_dir();
    let to = mariadb_to(&db);
    // 40 MB of 20 kB values: fewer rows per execute, so that one execute's buffers stay
    // within 8 MiB.
    let mut long = String::from("id,name,amount,day,note\n");
    for i in 1..=2_000 {
        long.push_str(&format!(
            "{i},n{i},1.{:02},2024-02-29,{}\n",
            i % 100,
            "ü".repeat(10_000)
        ));
    }
    for text in [full_csv(3_000), long] {
        let path = mariadb_common::write(dir.path(), "rows.csv", &text);
        db.exec(&format!(
            "DROP TABLE IF EXISTS ours, theirs; CREATE TABLE ours {TYPED}; CREATE TABLE theirs {TYPED}"
        ));
        mariadb_common::server_load(&db, &path, "theirs").unwrap();
        same_as_bulk(&to, &path, "2", &|t| {
            db.rows(&format!("SELECT * FROM {t} ORDER BY 1"))
        });
    }
}

/// Past a few hundred thousand rows sent as 1,000-row parameter arrays, MariaDB's driver sent
/// the bytes of pointers as a value (refused here only because they were no UTF-8): every
/// value of a long load must arrive as it was sent.
#[test]
fn a_long_load_through_mariadbs_driver_stores_every_value_as_sent() {
    let db = MariaDb::fresh("odbc_long");
    let dir = mariadb_common::shared_dir();
    let mut text = String::from("a,b,c,d,e,f\n");
    let mut expected = Vec::new();
    let mut seed: u64 = 1;
    let mut next = |n: u64| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) % n
    };
    for i in 0..500_000u64 {
        let (b, c) = (next(1_000_000), next(1_000_000_000));
        let d = "x".repeat(5 + next(56) as usize);
        let f = "y".repeat(1 + next(100) as usize);
        let row = format!("{i},{b},{c},{d},word{},{f}", i % 977);
        text.push_str(&row);
        text.push('\n');
        expected.push(row.replace(',', "\t"));
    }
    let path = mariadb_common::write(dir.path(), "long.csv", &text);
    db.exec("CREATE TABLE ours (a INT, b INT, c INT, d VARCHAR(100), e VARCHAR(100), f BLOB)");
    let (code, out) = load_to(&mariadb_to(&db), &path, &[]);
    assert_eq!(code, 0, "{out}");
    let rows = db.rows("SELECT a, b, c, d, e, f FROM ours ORDER BY a");
    assert!(rows == expected, "the table differs from the input");
}

#[test]
fn rows_through_sqlites_driver_are_the_rows_import_stores() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("t.db");
    let path = dir.path().join("rows.csv");
    std::fs::write(&path, full_csv(3_000)).unwrap();
    let conn = rusqlite::Connection::open(&file).unwrap();
    conn.execute_batch(&format!(
        "CREATE TABLE ours {TYPED}; CREATE TABLE theirs {TYPED}"
    ))
    .unwrap();
    drop(conn);
    sqlite_common::shell_import(&path, &file, "theirs");
    let to = odbc_common::sqlite_odbc(&file);
    // SQLite takes one writer at a time: the load asks for three and writes over one.
    same_as_bulk(&to, &path, "3", &|t| {
        let conn = rusqlite::Connection::open(&file).unwrap();
        let mut stmt = conn
            .prepare(&format!("SELECT * FROM {t} ORDER BY 1"))
            .unwrap();
        let rows = stmt.query_map([], |r| {
            Ok((0..5)
                .map(|i| format!("{:?}", r.get::<_, rusqlite::types::Value>(i).unwrap()))
                .collect::<Vec<_>>()
                .join("\t"))
        });
        rows.unwrap().map(Result::unwrap).collect()
    });
}

/// `--resume` through the driver at `to`: a load killed after some blocks committed, then run
/// again, leaves every row once; a run after that adds nothing; a changed input is refused.
fn resumes_through(to: &str, dir: &std::path::Path, count: &dyn Fn() -> i64) {
    let path = dir.join("resumed.csv");
    std::fs::write(&path, csv(100_000)).unwrap();
    let file = path.to_str().unwrap();
    let args = [
        "load",
        file,
        "--header",
        "--no-progress",
        "--to",
        to,
        "--table",
        "ours",
        "--resume",
        "--block-size",
        "65536",
    ];
    let mut child = std::process::Command::new(BIN)
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while count() == 0 && child.try_wait().unwrap().is_none() {
        assert!(std::time::Instant::now() < deadline, "no block committed");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let _ = child.kill();
    child.wait().unwrap();
    let killed_with = count();
    let status = || {
        let (code, out) =
            inrush_testkit::run(BIN, &["status", "--to", to, "--table", "ours", "--json"]);
        assert_eq!(code, 0, "{out}");
        out
    };
    let out = status();
    assert!(out.contains("resumed.csv"), "{out}");
    assert!(out.contains(&format!("\"rows\":{killed_with}")), "{out}");
    for run in ["after the kill", "once more"] {
        let (code, out) = inrush_testkit::run(BIN, &args);
        assert_eq!(code, 0, "{run} (killed with {killed_with} rows in): {out}");
        assert_eq!(count(), 100_000, "{run}: {out}");
    }
    let out = status();
    assert!(
        out.contains("\"rows\":100000") && out.contains("complete"),
        "{out}"
    );
    std::fs::write(&path, csv(100_001)).unwrap();
    let (code, out) = inrush_testkit::run(BIN, &args);
    assert_eq!(code, 2, "a changed input: {out}");
    assert_eq!(count(), 100_000, "{out}");
}

#[test]
fn a_resumed_load_through_psqlodbc_leaves_every_row_once_after_a_kill() {
    let db = Db::fresh("odbc");
    db.exec(&format!("CREATE TABLE ours {COLUMNS}"));
    let dir = tempfile::tempdir().unwrap();
    resumes_through(&odbc_to(&db), dir.path(), &|| {
        db.int("SELECT count(*) FROM ours")
    });
}

#[test]
fn a_resumed_load_through_mariadbs_driver_leaves_every_row_once_after_a_kill() {
    let db = MariaDb::fresh("odbc");
    db.exec(&format!("CREATE TABLE ours {TYPED}"));
    let dir = tempfile::tempdir().unwrap();
    resumes_through(&mariadb_to(&db), dir.path(), &|| {
        db.rows("SELECT count(*) FROM ours")[0].parse().unwrap()
    });
}

#[test]
fn a_resumed_load_through_sqlites_driver_leaves_every_row_once_after_a_kill() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("t.db");
    let open = || {
        let conn = rusqlite::Connection::open(&file).unwrap();
        conn.busy_timeout(std::time::Duration::from_secs(10))
            .unwrap();
        conn
    };
    open()
        .execute_batch(&format!("CREATE TABLE ours {STRICT}"))
        .unwrap();
    resumes_through(&odbc_common::sqlite_odbc(&file), dir.path(), &|| {
        open()
            .query_row("SELECT count(*) FROM ours", [], |r| r.get(0))
            .unwrap()
    });
}

/// `load_to` with `INRUSH_ODBC_ARRAYS=arrays`.
fn load_arrays(to: &str, path: &std::path::Path, arrays: &str, extra: &[&str]) -> (i32, String) {
    let mut args = vec!["load", path.to_str().unwrap(), "--header", "--no-progress"];
    args.extend(["--to", to, "--table", "ours", "--json"]);
    args.extend_from_slice(extra);
    let child = std::process::Command::new(BIN)
        .args(&args)
        .env("NO_COLOR", "1")
        .env("INRUSH_ODBC_ARRAYS", arrays)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    inrush_testkit::finish(child)
}

#[test]
fn a_drivers_arrays_are_checked_on_the_first_rows_read_back_and_the_check_leaves_no_table() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rows.csv");
    // A row the database refuses among the first: the check passes over it.
    let text = full_csv(3_000).replace("\n3,name 3,-3.03,", "\n3,name 3,not a number,");
    std::fs::write(&path, &text).unwrap();
    let checked = |out: &str| {
        assert!(out.contains("was checked: the first 16 rows sent as parameter arrays read back as sent one row per execute"), "{out}");
        assert!(!out.contains("one row per execute (ODBC)"), "{out}");
    };
    let ok = [0, 6];

    let pg = Db::fresh("odbc");
    pg.exec(&format!(
        "CREATE TABLE ours {TYPED}; CREATE TABLE theirs {TYPED}"
    ));
    let good: String = text
        .lines()
        .filter(|l| !l.contains("not a number"))
        .skip(1)
        .map(|l| format!("{l}\n"))
        .collect();
    pg.copy_csv("theirs", good.as_bytes());
    let (code, out) = load_arrays(
        &odbc_to(&pg),
        &path,
        "check",
        &["--max-errors", "5", "--connections", "2"],
    );
    assert!(ok.contains(&code), "{out}");
    checked(&out);
    assert_eq!(dump(&pg, "ours").len(), 2_999, "{out}");
    assert_eq!(
        pg.rows("SELECT * FROM ours EXCEPT SELECT * FROM theirs"),
        Vec::<Vec<Option<String>>>::new()
    );
    assert_eq!(
        pg.int("SELECT count(*) FROM pg_tables WHERE tablename LIKE 'inrush_odbc_check%'"),
        0
    );

    let maria = MariaDb::fresh("odbc");
    maria.exec(&format!("CREATE TABLE ours {TYPED}"));
    let (code, out) = load_arrays(&mariadb_to(&maria), &path, "check", &["--max-errors", "5"]);
    assert!(ok.contains(&code), "{out}");
    checked(&out);
    assert_eq!(maria.rows("SELECT count(*) FROM ours"), ["2999"], "{out}");
    let left =
        "SELECT count(*) FROM information_schema.tables WHERE table_name LIKE 'inrush_odbc_check%'";
    assert_eq!(maria.rows(left), ["0"]);

    let file = dir.path().join("t.db");
    let open = || rusqlite::Connection::open(&file).unwrap();
    open()
        .execute_batch(&format!("CREATE TABLE ours {STRICT}"))
        .unwrap();
    let (code, out) = load_arrays(
        &odbc_common::sqlite_odbc(&file),
        &path,
        "check",
        &["--max-errors", "5"],
    );
    assert!(ok.contains(&code), "{out}");
    checked(&out);
    let count = |sql: &str| -> i64 { open().query_row(sql, [], |r| r.get(0)).unwrap() };
    assert_eq!(count("SELECT count(*) FROM ours"), 2_999, "{out}");
    assert_eq!(
        count("SELECT count(*) FROM sqlite_master WHERE name LIKE 'inrush_odbc_check%'"),
        0
    );
}

#[test]
fn arrays_turned_off_send_one_row_per_execute_and_say_so() {
    let db = Db::fresh("odbc");
    db.exec(&format!(
        "CREATE TABLE ours {COLUMNS}; CREATE TABLE theirs {COLUMNS}"
    ));
    let dir = tempfile::tempdir().unwrap();
    let text = csv(3_000);
    let path = dir.path().join("rows.csv");
    std::fs::write(&path, &text).unwrap();
    db.copy_csv("theirs", text.split_once('\n').unwrap().1.as_bytes());
    let (code, out) = load_arrays(&odbc_to(&db), &path, "off", &[]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("one row per execute (ODBC)"), "{out}");
    assert!(
        out.contains("INRUSH_ODBC_ARRAYS=off asks for one row per execute"),
        "{out}"
    );
    assert_eq!(dump(&db, "ours"), dump(&db, "theirs"), "{out}");
    let (code, out) = load_arrays(&odbc_to(&db), &path, "sometimes", &[]);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("expected check, trust or off"), "{out}");
}

/// A Parquet file of what PostgreSQL's text forms would get wrong elsewhere: a list (an array
/// literal), booleans (`true`) and a zoned timestamp (`+00`).
fn forms_parquet(path: &std::path::Path) {
    use inrush_testkit::arrow_array::{ArrayRef, Int32Array};
    use std::sync::Arc;
    let forms = inrush_testkit::forms_arrays();
    let columns: Vec<(&str, ArrayRef)> = vec![
        ("n", Arc::new(Int32Array::from(vec![1, 2, 3]))),
        ("l", forms.lists),
        ("b", forms.flags.clone()),
        ("s", forms.flags),
        ("at", forms.at),
    ];
    inrush_testkit::parquet_of(path, columns, 2);
}

/// `inrush load` of the Parquet file `path` into `table` at `to`.
fn try_load_parquet(to: &str, path: &std::path::Path, table: &str) -> (i32, String) {
    let args = ["load", path.to_str().unwrap(), "--no-progress"];
    inrush_testkit::run(BIN, &[&args[..], &["--to", to, "--table", table]].concat())
}

/// [`try_load_parquet`], which must succeed.
fn load_parquet(to: &str, path: &std::path::Path, table: &str) {
    let (code, out) = try_load_parquet(to, path, table);
    assert_eq!(code, 0, "{out}");
}

/// Through MariaDB's driver, Parquet values are written as MariaDB's own path writes them:
/// lists as JSON, booleans as 1 and 0.
#[test]
fn parquet_through_mariadbs_driver_stores_what_the_native_path_stores() {
    let db = MariaDb::fresh("odbc_forms");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("forms.parquet");
    forms_parquet(&path);
    let columns = "(n INT, l JSON, b BOOLEAN, s VARCHAR(10), at VARCHAR(40))";
    db.exec(&format!(
        "CREATE TABLE ours {columns}; CREATE TABLE theirs {columns}"
    ));
    load_parquet(&mariadb_to(&db), &path, "ours");
    load_parquet(&db.url, &path, "theirs");
    let rows = |t: &str| db.rows(&format!("SELECT * FROM {t} ORDER BY n"));
    assert_eq!(rows("ours"), rows("theirs"));
    assert_eq!(
        rows("ours")[0],
        "1\t[1,null,-2]\t1\t1\t1970-01-01 00:00:00+00"
    );
}

/// Through SQLite's driver, Parquet values are written as SQLite's own path writes them:
/// lists as JSON, booleans as 1 and 0, a zone's offset as `+00:00`.
#[test]
fn parquet_through_sqlites_driver_stores_what_the_native_path_stores() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("t.db");
    let path = dir.path().join("forms.parquet");
    forms_parquet(&path);
    let columns = "(n INTEGER, l TEXT, b BOOLEAN, s TEXT, at DATETIME)";
    let conn = rusqlite::Connection::open(&file).unwrap();
    conn.execute_batch(&format!(
        "CREATE TABLE ours {columns}; CREATE TABLE theirs {columns}"
    ))
    .unwrap();
    drop(conn);
    load_parquet(&odbc_common::sqlite_odbc(&file), &path, "ours");
    load_parquet(file.to_str().unwrap(), &path, "theirs");
    let names = ["n", "l", "b", "s", "at"];
    let rows = |t: &str| sqlite_common::typed_rows(&file, t, &names, "n");
    assert_eq!(rows("ours"), rows("theirs"));
    assert_eq!(
        rows("ours")[1],
        "integer:2 | text:'[]' | integer:0 | text:'0' | text:'2023-11-14 22:13:20.123456+00:00'"
    );
}

/// A binary value is bound as its bytes: PostgreSQL's and MariaDB's binary columns store them
/// as they are, as the native paths do. Into any other column, or through SQLite's driver,
/// the load is refused before a row is read.
#[test]
fn binary_values_through_a_driver_go_into_binary_columns_as_their_bytes() {
    use inrush_testkit::arrow_array::{ArrayRef, BinaryArray, Int64Array};
    use std::sync::Arc;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bytes.parquet");
    // Longer than the first buffers, so they are bound again, wider; then enough values of
    // other lengths to fill parameter arrays of several sets (one driver has cut every
    // blob of an array to the first one's length).
    let long = vec![0xa5u8; 70_000];
    let many: Vec<Vec<u8>> = (0..2_500u32)
        .map(|i| vec![(i % 251) as u8; (i % 37) as usize])
        .collect();
    let mut bytes: Vec<Option<&[u8]>> =
        vec![Some(b"7"), Some(&[0xff, 0x00, 0x5c]), None, Some(&long)];
    bytes.extend(many.iter().map(|b| Some(b.as_slice())));
    let count = bytes.len() as i64;
    let columns: Vec<(&str, ArrayRef)> = vec![
        (
            "n",
            Arc::new(Int64Array::from((1..=count).collect::<Vec<_>>())),
        ),
        ("b", Arc::new(BinaryArray::from(bytes))),
    ];
    inrush_testkit::parquet_of(&path, columns, 1_000);
    let expected = |null: &str| {
        let long = "a5".repeat(70_000);
        let mut lines = vec![
            format!("1 37"),
            format!("2 ff005c"),
            format!("3 {null}"),
            format!("4 {long}"),
        ];
        for (i, b) in many.iter().enumerate() {
            let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
            lines.push(format!("{} {hex}", i + 5));
        }
        lines
    };

    let db = MariaDb::fresh("odbc_bytes");
    db.exec("CREATE TABLE ours (n INT, b LONGBLOB)");
    load_parquet(&mariadb_to(&db), &path, "ours");
    let rows =
        db.rows("SELECT concat_ws(' ', n, coalesce(lower(hex(b)), 'null')) FROM ours ORDER BY n");
    assert_eq!(rows, expected("null"));
    db.exec("CREATE TABLE words (n INT, b TEXT)");
    let (code, out) = try_load_parquet(&mariadb_to(&db), &path, "words");
    assert_eq!(code, 4, "{out}");
    assert!(
        out.contains("binary values go only into binary columns"),
        "{out}"
    );
    assert_eq!(db.rows("SELECT count(*) FROM words"), ["0"]);

    let pg = Db::fresh("odbc_bytes");
    pg.exec("CREATE TABLE ours (n int, b bytea)");
    load_parquet(&odbc_to(&pg), &path, "ours");
    let rows =
        pg.rows("SELECT n || ' ' || coalesce(encode(b, 'hex'), 'null') FROM ours ORDER BY n");
    let rows: Vec<String> = rows.into_iter().map(|r| r[0].clone().unwrap()).collect();
    assert_eq!(rows, expected("null"));

    // SQLite's driver gives a blob parameter of a statement executed again an earlier
    // value's length: refused, and the file itself takes them.
    let file = dir.path().join("t.db");
    let conn = rusqlite::Connection::open(&file).unwrap();
    conn.execute_batch("CREATE TABLE ours (n INTEGER, b BLOB)")
        .unwrap();
    let (code, out) = try_load_parquet(&odbc_common::sqlite_odbc(&file), &path, "ours");
    assert_eq!(code, 4, "{out}");
    assert!(out.contains("load into the database file itself"), "{out}");
    load_parquet(file.to_str().unwrap(), &path, "ours");
    let mut stmt = conn
        .prepare("SELECT n || ' ' || typeof(b) || ':' || lower(hex(b)) FROM ours ORDER BY n")
        .unwrap();
    let rows: Vec<String> = stmt
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let blobs: Vec<String> = expected("null")
        .into_iter()
        .map(|r| r.replacen(' ', " blob:", 1).replace("blob:null", "null:"))
        .collect();
    assert_eq!(rows, blobs);
}
