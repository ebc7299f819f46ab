//! Loads over ODBC (`--to odbc:...`), through unixODBC and Debian's PostgreSQL driver
//! (psqlODBC, `odbc-postgresql`) into the tests' PostgreSQL: the rows are those COPY stores
//! from the same file, over one connection or several; a value the database refuses loads
//! nothing; what is not carried out over ODBC is refused before anything changes.

use inrush_testkit::Db;

const BIN: &str = env!("CARGO_BIN_EXE_inrush");

const COLUMNS: &str =
    "(id integer PRIMARY KEY, name varchar(40), amount numeric(10,2), day date, note text)";

/// `--to` for `db` through psqlODBC, from its `host= port= user= dbname=` conninfo.
fn odbc_to(db: &Db) -> String {
    let mut to = String::from("odbc:Driver={PostgreSQL Unicode};");
    for pair in db.conninfo.split_whitespace() {
        let Some((key, value)) = pair.split_once('=') else {
            continue;
        };
        let key = match key {
            "host" => "Server",
            "port" => "Port",
            "user" => "Uid",
            "dbname" => "Database",
            "password" => "Pwd",
            _ => continue,
        };
        to.push_str(&format!("{key}={value};"));
    }
    to
}

/// `rows` rows with a header: quotes, commas, Unicode, signs, leap days, NULLs.
fn csv(rows: usize) -> String {
    let mut csv = String::from("id,name,amount,day,note\n");
    for i in 1..=rows {
        let day = ["2024-02-29", "1999-12-31", ""][i % 3];
        let note = ["plain", "\"a, \"\"quoted\"\" note\"", "ünïcødé ✓"][i % 3];
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
    let to = odbc_to(db);
    let mut args = vec!["load", path.to_str().unwrap(), "--header", "--no-progress"];
    args.extend(["--to", &to, "--table", "ours"]);
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
        assert!(out.contains("\"version\":\"PostgreSQL (ODBC)\""), "{out}");
        assert!(out.contains("ODBC parameter arrays"), "{out}");
        assert_eq!(dump(&db, "ours"), dump(&db, "theirs"), "{out}");
    }
}

#[test]
fn a_value_the_database_refuses_loads_nothing_and_exits_4() {
    let db = Db::fresh("odbc");
    db.exec(&format!("CREATE TABLE ours {COLUMNS}"));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.csv");
    let mut text = csv(3000);
    text.push_str("3001,late,not a number,2024-01-01,x\n");
    std::fs::write(&path, text).unwrap();
    let (code, out) = load(&db, &path, &[]);
    assert_eq!(code, 4, "{out}");
    assert!(out.contains("not a number"), "{out}");
    assert_eq!(db.int("SELECT count(*) FROM ours"), 0, "{out}");
}

#[test]
fn what_is_not_carried_out_over_odbc_is_refused_with_2_and_the_password_never_shown() {
    let db = Db::fresh("odbc");
    db.exec(&format!("CREATE TABLE ours {COLUMNS}"));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rows.csv");
    std::fs::write(&path, csv(10)).unwrap();
    for extra in [
        &["--resume"][..],
        &["--on-conflict", "skip"],
        &["--max-errors", "5"],
        &["--text"],
    ] {
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
    assert_eq!(
        db.int("SELECT count(*) FROM pg_indexes WHERE indexname = 'ours_day'"),
        1
    );
}
