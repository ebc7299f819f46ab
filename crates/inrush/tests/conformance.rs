//! What every engine must do, through the command line: an engine is done when it passes
//! these. Each check is its own test, run on each engine ([`suite!`] at the end), against a
//! database of its own: good rows are stored as the engine's own bulk path stores the same
//! file (PostgreSQL's COPY, MariaDB's strict `LOAD DATA INFILE`, SQLite's `.import`), from CSV,
//! JSON lines and Parquet, over one connection or several; the same mistakes exit with the
//! same code (the README's table) and change nothing; a bad row loads nothing unless rejects
//! are allowed, and then only it is left out; `--check` writes nothing; `--resume` reruns load
//! nothing twice and `status` shows them; `--on-conflict`, `--truncate`, `--columns` and
//! `--create` do what they say; a distributed write (`--prepare`) lands the parts its job
//! names, where the engine says it carries it out, and is refused by name where not; indexes
//! come back after a large load; `inrush copy` goes into and out of the engine; `plan` and
//! `recover` answer; a stop (SIGINT, SIGTERM) before the commit exits 130, leaves the table
//! (or no table, for `--create`) as it was, and the same load run again loads every row once.
//!
//! A new engine adds its [`Engine`] and one line to the suite.

mod mariadb_common;
mod odbc_common;
mod sqlite_common;
mod stop_common;

use stop_common::stopped_while_reading;

use inrush_testkit::{Db, MariaDb};
use std::path::{Path, PathBuf};
use std::rc::Rc;

const BIN: &str = env!("CARGO_BIN_EXE_inrush");

/// What a check asks of a database: a statement run, a query read.
type Ask<T> = Box<dyn Fn(&str) -> T>;

/// A bulk load of a CSV file with a header into a table.
type Bulk = Box<dyn Fn(&Path, &str)>;

/// A database of one engine, as the checks make and read it.
struct Engine {
    name: &'static str,
    /// For `--to`.
    to: String,
    exec: Ask<()>,
    /// The first column of the first row of a query, as text.
    value: Ask<String>,
    /// Every row of a table, in the order of its first column, as text.
    dump: Ask<Vec<String>>,
    /// The engine's own bulk load of a CSV file with a header into a table.
    bulk: Bulk,
    /// Where the engine refuses to connect (a server nobody listens on, a file in no
    /// directory).
    unreachable: &'static str,
    /// The query that counts the indexes named `{}` in the database.
    index_count: &'static str,
    /// A name as the engine's SQL delimits it.
    quote: fn(&str) -> String,
    /// The inputs' directory, readable by the server.
    dir: tempfile::TempDir,
}

/// `"name"`, `"` doubled inside: standard SQL.
fn double_quoted(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// `` `name` ``, `` ` `` doubled inside: MariaDB's.
fn backquoted(name: &str) -> String {
    format!("`{}`", name.replace('`', "``"))
}

impl Engine {
    fn count(&self, table: &str) -> i64 {
        let n = (self.value)(&format!("SELECT COUNT(*) FROM {table}"));
        n.parse().unwrap()
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        mariadb_common::write(self.dir.path(), name, text)
    }

    /// `inrush load INPUT --to TO --table TABLE` plus `extra`, with `--header` for a CSV.
    fn load(&self, input: &Path, table: &str, extra: &[&str]) -> (i32, String) {
        let input = input.to_str().unwrap();
        let mut args = vec!["load", input, "--no-progress", "--to", &self.to];
        args.extend(["--table", table]);
        if input.ends_with(".csv") {
            args.push("--header");
        }
        args.extend_from_slice(extra);
        inrush_testkit::run(BIN, &args)
    }

    /// `inrush plan INPUT --to TO --table TABLE`.
    fn plan(&self, input: &Path, table: &str) -> (i32, String) {
        let input = input.to_str().unwrap();
        inrush_testkit::run(BIN, &["plan", input, "--to", &self.to, "--table", table])
    }

    /// Makes the tables `ours` and `theirs` with `columns`.
    fn twins(&self, columns: &str) {
        for table in ["ours", "theirs"] {
            (self.exec)(&format!("CREATE TABLE {table} {columns}"));
        }
    }

    /// Loads `csv` into `ours` with inrush (plus `extra`, from `input` when given) and into
    /// `theirs` with the engine's own bulk path ([`Engine::twins`]), and compares them.
    fn loads_as_its_own_bulk_path(&self, csv: &Path, input: Option<&Path>, extra: &[&str]) {
        let name = self.name;
        (self.bulk)(csv, "theirs");
        let (code, out) = self.load(input.unwrap_or(csv), "ours", extra);
        assert_eq!(code, 0, "{name}: {out}");
        let theirs = (self.dump)("theirs");
        assert!(!theirs.is_empty(), "{name}: the bulk path loaded nothing");
        assert_eq!((self.dump)("ours"), theirs, "{name}: {out}");
    }
}

/// The columns of the typed checks: types every engine has.
const TYPED: &str =
    "(id INTEGER PRIMARY KEY, name VARCHAR(40), amount DECIMAL(10,2), day DATE, note VARCHAR(200))";

/// The columns of the checks of other inputs.
const NAMED: &str = "(id INTEGER PRIMARY KEY, name VARCHAR(40))";

/// `rows` rows for [`TYPED`], with a header: quotes, commas, Unicode, signs, leap days.
fn typed_csv(rows: usize) -> String {
    let mut csv = String::from("id,name,amount,day,note\n");
    for i in 1..=rows {
        let day = ["2024-02-29", "1999-12-31", "2000-01-01"][i % 3];
        let note = ["plain", "\"a, \"\"quoted\"\" note\"", "ünïcødé ✓"][i % 3];
        let amount = format!("{}{}.{:02}", ["", "-"][i % 2], i % 1000, i % 100);
        csv.push_str(&format!("{i},name {i},{amount},{day},{note}\n"));
    }
    csv
}

fn postgres() -> Engine {
    let db = Rc::new(Db::fresh("conformance"));
    let (exec, value, dump, bulk) = (db.clone(), db.clone(), db.clone(), db);
    Engine {
        name: "PostgreSQL",
        to: exec.conninfo.clone(),
        exec: Box::new(move |sql| exec.exec(sql)),
        value: Box::new(move |sql| value.text(&format!("SELECT ({sql})::text"))),
        dump: Box::new(move |t| {
            let rows = dump.rows(&format!("SELECT {t}::text FROM {t} ORDER BY {t}.id"));
            rows.into_iter().map(|r| r[0].clone().unwrap()).collect()
        }),
        bulk: Box::new(move |csv, t| {
            let text = std::fs::read_to_string(csv).unwrap();
            let (_, rows) = text.split_once('\n').unwrap();
            bulk.copy_csv(t, rows.as_bytes());
        }),
        unreachable: "postgresql://inrush@127.0.0.1:1/nothing",
        index_count: "SELECT count(*) FROM pg_indexes WHERE indexname = '{}'",
        quote: double_quoted,
        dir: tempfile::tempdir().unwrap(),
    }
}

fn mariadb() -> Engine {
    let db = Rc::new(MariaDb::fresh("conformance"));
    let (exec, value, dump, bulk) = (db.clone(), db.clone(), db.clone(), db.clone());
    Engine {
        name: "MariaDB",
        to: db.url.clone(),
        exec: Box::new(move |sql| exec.exec(sql)),
        value: Box::new(move |sql| value.rows(sql)[0].clone()),
        dump: Box::new(move |t| dump.rows(&format!("SELECT * FROM {t} ORDER BY 1"))),
        bulk: Box::new(move |csv, t| mariadb_common::server_load(&bulk, csv, t).unwrap()),
        unreachable: "mysql://inrush:inrush@127.0.0.1:1/nothing",
        index_count: "SELECT COUNT(DISTINCT INDEX_NAME) FROM information_schema.STATISTICS \
            WHERE TABLE_SCHEMA = DATABASE() AND INDEX_NAME = '{}'",
        quote: backquoted,
        dir: mariadb_common::shared_dir(),
    }
}

fn sqlite() -> Engine {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.db");
    let open = {
        let path = path.clone();
        move || rusqlite::Connection::open(&path).unwrap()
    };
    let (exec, value, dump) = (open.clone(), open.clone(), open);
    Engine {
        name: "SQLite",
        to: path.to_str().unwrap().to_string(),
        exec: Box::new(move |sql| exec().execute_batch(sql).unwrap()),
        value: Box::new(move |sql| {
            let v: rusqlite::types::Value = value().query_row(sql, [], |r| r.get(0)).unwrap();
            match v {
                rusqlite::types::Value::Integer(n) => n.to_string(),
                rusqlite::types::Value::Text(t) => t,
                other => format!("{other:?}"),
            }
        }),
        dump: Box::new(move |t| {
            let conn = dump();
            let mut stmt = conn
                .prepare(&format!("SELECT * FROM {t} ORDER BY 1"))
                .unwrap();
            let width = stmt.column_count();
            let rows = stmt.query_map([], |r| {
                let values: Vec<String> = (0..width)
                    .map(|i| format!("{:?}", r.get::<_, rusqlite::types::Value>(i).unwrap()))
                    .collect();
                Ok(values.join("\t"))
            });
            rows.unwrap().map(Result::unwrap).collect()
        }),
        bulk: Box::new(move |csv, t| sqlite_common::shell_import(csv, &path, t)),
        unreachable: "/nonexistent-directory/t.db",
        index_count: "SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND name = '{}'",
        quote: double_quoted,
        dir,
    }
}

/// PostgreSQL's checks through psqlODBC (`--to odbc:`).
fn postgres_odbc() -> Engine {
    let engine = postgres();
    Engine {
        name: "PostgreSQL through psqlODBC",
        to: odbc_common::psqlodbc(&engine.to),
        unreachable:
            "odbc:Driver={PostgreSQL Unicode};Server=127.0.0.1;Port=1;Database=nothing;Uid=inrush;",
        ..engine
    }
}

/// MariaDB's checks through MariaDB Connector/ODBC.
fn mariadb_odbc() -> Engine {
    let engine = mariadb();
    Engine {
        name: "MariaDB through Connector/ODBC",
        to: odbc_common::mariadb_odbc(&engine.to),
        unreachable:
            "odbc:Driver={MariaDB Unicode};Server=127.0.0.1;Port=1;Database=nothing;User=inrush;",
        ..engine
    }
}

/// SQLite's checks through SQLite's ODBC driver.
fn sqlite_odbc() -> Engine {
    let engine = sqlite();
    Engine {
        name: "SQLite through its ODBC driver",
        to: odbc_common::sqlite_odbc(std::path::Path::new(&engine.to)),
        unreachable: "odbc:Driver={SQLite3};Database=/nonexistent-directory/t.db;",
        ..engine
    }
}

// ---- Names ----

/// A table and its columns named with both quote characters, a semicolon, a comment, `$$`, a
/// backslash, `_` and `%` (patterns to a catalog) and Unicode: loaded, their rows there, and
/// planned, each name quoted as the engine delimits it.
fn names_with_quotes_semicolons_and_unicode_are_quoted_everywhere(engine: &Engine) {
    let q = engine.quote;
    let table = "we\"ird`; -- $$ \\ a_b% ü'x";
    let (id, name) = ("i\"d; --", "naïve `name` $$");
    (engine.exec)(&format!(
        "CREATE TABLE {} ({} INTEGER PRIMARY KEY, {} VARCHAR(40))",
        q(table),
        q(id),
        q(name)
    ));
    // A table whose name the first one's pattern also matches.
    (engine.exec)(&format!(
        "CREATE TABLE {} (other INTEGER)",
        q(&table.replace('_', "x"))
    ));
    let csv_name = |n: &str| format!("\"{}\"", n.replace('"', "\"\""));
    let header = format!("{},{}", csv_name(id), csv_name(name));
    let csv = engine.write(
        "names.csv",
        &format!("{header}\n1,\"a'; --\"\n2,$$b$$\n3,ü\n"),
    );
    let (code, out) = engine.load(&csv, &q(table), &["--connections", "2"]);
    assert_eq!(code, 0, "{}: {out}", engine.name);
    assert_eq!(engine.count(&q(table)), 3, "{}: {out}", engine.name);
    let third = (engine.value)(&format!(
        "SELECT {} FROM {} WHERE {} = 3",
        q(name),
        q(table),
        q(id)
    ));
    assert_eq!(third, "ü", "{}", engine.name);
    let (code, out) = engine.plan(&csv, &q(table));
    assert_eq!(code, 0, "{}: {out}", engine.name);
}

// ---- Good rows, from every kind of input ----

fn good_rows_are_stored_as_the_engines_own_bulk_path_stores_them(engine: &Engine) {
    let csv = engine.write("typed.csv", &typed_csv(300));
    engine.twins(TYPED);
    engine.loads_as_its_own_bulk_path(&csv, None, &[]);
}

fn several_connections_store_every_row_once(engine: &Engine) {
    let csv = engine.write("many.csv", &typed_csv(20_000));
    let extra = ["--connections", "3", "--block-size", "65536"];
    engine.twins(TYPED);
    engine.loads_as_its_own_bulk_path(&csv, None, &extra);
}

fn json_lines_are_stored_as_the_same_rows_in_csv(engine: &Engine) {
    let csv = engine.write("rows.csv", "id,name\n1,ann\n2,\"b, \"\"c\"\"\"\n3,ünï\n");
    let jsonl = engine.write(
        "rows.jsonl",
        "{\"id\":1,\"name\":\"ann\"}\n{\"id\":2,\"name\":\"b, \\\"c\\\"\"}\n{\"id\":3,\"name\":\"ünï\"}\n",
    );
    engine.twins(NAMED);
    engine.loads_as_its_own_bulk_path(&csv, Some(&jsonl), &[]);
}

fn parquet_is_stored_as_the_same_rows_in_csv(engine: &Engine) {
    let lines: Vec<String> = (1..=500).map(|i| format!("{i},name {i}")).collect();
    let csv = engine.write("rows.csv", &format!("id,name\n{}\n", lines.join("\n")));
    let parquet = engine.dir.path().join("rows.parquet");
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    inrush_testkit::id_and_strings_parquet(&parquet, &["id", "name"], &lines, 100);
    engine.twins(NAMED);
    engine.loads_as_its_own_bulk_path(&csv, Some(&parquet), &[]);
}

fn a_large_load_builds_secondary_indexes_after_the_rows_and_they_are_there(engine: &Engine) {
    let csv = engine.write("typed.csv", &typed_csv(3000));
    let name = engine.name;
    engine.twins(TYPED);
    (engine.exec)("CREATE INDEX ours_name ON ours (name)");
    let args = [
        "plan",
        csv.to_str().unwrap(),
        "--header",
        "--to",
        &engine.to,
        "--table",
        "ours",
    ];
    let (code, planned) = inrush_testkit::run(BIN, &args);
    assert_eq!(code, 0, "{name}: {planned}");
    assert!(
        planned.contains("built once after the load"),
        "{name}: {planned}"
    );
    engine.loads_as_its_own_bulk_path(&csv, None, &[]);
    let count = engine.index_count.replace("{}", "ours_name");
    assert_eq!((engine.value)(&count), "1", "{name}: the index is back");
}

// ---- Whole databases ----

fn copy_takes_a_database_into_the_engine_and_out_again(engine: &Engine) {
    let name = engine.name;
    let source = engine.dir.path().join("source.db");
    let rows: String = (1..=300).map(|i| format!("({i}, 'name {i}'),")).collect();
    let conn = rusqlite::Connection::open(&source).unwrap();
    conn.execute_batch(&format!(
        "CREATE TABLE shop (id INTEGER PRIMARY KEY, name VARCHAR(40) NOT NULL);
         CREATE INDEX shop_name ON shop (name);
         INSERT INTO shop VALUES {};",
        rows.trim_end_matches(',')
    ))
    .unwrap();
    drop(conn);
    let from = format!("sqlite://{}", source.display());
    let (code, out) = inrush_testkit::run(BIN, &["copy", "--from", &from, "--to", &engine.to]);
    assert_eq!(code, 0, "{name}, into: {out}");
    assert_eq!(engine.count("shop"), 300, "{name}: {out}");
    let count = engine.index_count.replace("{}", "shop_name");
    assert_eq!((engine.value)(&count), "1", "{name}: the index came along");
    let back = format!("sqlite://{}", engine.dir.path().join("back.db").display());
    let args = [
        "copy", "--from", &engine.to, "--to", &back, "--tables", "shop",
    ];
    let (code, out) = inrush_testkit::run(BIN, &args);
    assert_eq!(code, 0, "{name}, out: {out}");
    let back = rusqlite::Connection::open(engine.dir.path().join("back.db")).unwrap();
    let n: i64 = back
        .query_row(
            "SELECT count(*) FROM shop WHERE name LIKE 'name %'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(n, 300, "{name}: {out}");
}

// ---- All or nothing, and rejects ----

/// 2,000 good rows and one bad one at the end, into `table` (made).
fn late_bad_row(engine: &Engine, table: &str) -> PathBuf {
    (engine.exec)(&format!("CREATE TABLE {table} (id INTEGER, v VARCHAR(20))"));
    let rows: String = (1..=2000).map(|i| format!("{i},name {i}\n")).collect();
    engine.write("bad.csv", &format!("id,v\n{rows}x,late\n"))
}

fn a_bad_row_loads_nothing_and_exits_4(engine: &Engine) {
    let bad = late_bad_row(engine, "b");
    let (code, out) = engine.load(&bad, "b", &["--block-size", "4096"]);
    assert_eq!(code, 4, "{}: {out}", engine.name);
    assert!(out.contains("bad.csv:2002"), "{}: {out}", engine.name);
    assert_eq!(
        engine.count("b"),
        0,
        "{}: a failed load leaves nothing",
        engine.name
    );
}

fn rejects_allowed_leave_out_only_the_bad_row_and_exit_6(engine: &Engine) {
    let bad = late_bad_row(engine, "b");
    let rejects = engine.dir.path().join("b.rejects.csv");
    let rejects_arg = rejects.to_str().unwrap();
    let allowed = [
        "--max-errors",
        "5",
        "--rejects",
        rejects_arg,
        "--block-size",
        "4096",
    ];
    let (code, out) = engine.load(&bad, "b", &allowed);
    assert_eq!(code, 6, "{}: {out}", engine.name);
    assert_eq!(
        engine.count("b"),
        2000,
        "{}: all rows but the bad one",
        engine.name
    );
    let refused = std::fs::read_to_string(&rejects).unwrap();
    assert!(refused.contains("x,late"), "{}: {refused}", engine.name);
}

fn rows_the_server_refuses_are_rejected_one_by_one(engine: &Engine) {
    // Keys already there, spread through the input: the server, not the reader, refuses them.
    (engine.exec)("CREATE TABLE k (id INTEGER PRIMARY KEY, v VARCHAR(20))");
    (engine.exec)("INSERT INTO k VALUES (7, 'old'), (500, 'old'), (999, 'old')");
    let rows: String = (1..=1000).map(|i| format!("{i},new\n")).collect();
    let csv = engine.write("keys.csv", &format!("id,v\n{rows}"));
    let rejects = engine.dir.path().join("k.rejects.csv");
    let extra = ["--max-errors", "10", "--rejects", rejects.to_str().unwrap()];
    let (code, out) = engine.load(&csv, "k", &extra);
    assert_eq!(code, 6, "{}: {out}", engine.name);
    assert_eq!(engine.count("k"), 1000, "{}: {out}", engine.name);
    let old = engine.count("k WHERE v = 'old'");
    assert_eq!(old, 3, "{}: the rows there stay as they were", engine.name);
    let text = std::fs::read_to_string(&rejects).unwrap();
    let mut refused: Vec<&str> = text.lines().filter(|l| l.ends_with(",new")).collect();
    refused.sort();
    assert_eq!(refused, ["500,new", "7,new", "999,new"], "{}", engine.name);
}

fn check_reads_everything_and_writes_nothing(engine: &Engine) {
    (engine.exec)("CREATE TABLE c (id INTEGER PRIMARY KEY, v VARCHAR(20))");
    let csv = engine.write("good.csv", "id,v\n1,a\n2,b\n");
    let (code, out) = engine.load(&csv, "c", &["--check"]);
    assert_eq!(code, 0, "{}: {out}", engine.name);
    assert_eq!(engine.count("c"), 0, "{}: --check wrote rows", engine.name);
}

// ---- What the options say ----

/// A table `k` holding (1, 'old'), and an input with key 1 again and key 2 twice.
fn conflicting_keys(engine: &Engine) -> PathBuf {
    (engine.exec)("CREATE TABLE k (id INTEGER PRIMARY KEY, v VARCHAR(20))");
    (engine.exec)("INSERT INTO k VALUES (1, 'old')");
    engine.write("keys.csv", "id,v\n1,new\n2,first\n2,last\n")
}

fn on_conflict_skip_keeps_the_first_row_of_a_key(engine: &Engine) {
    let csv = conflicting_keys(engine);
    let (code, out) = engine.load(&csv, "k", &["--on-conflict", "skip"]);
    assert_eq!(code, 0, "{}: {out}", engine.name);
    let kept = engine.count("k WHERE (id = 1 AND v = 'old') OR (id = 2 AND v = 'first')");
    assert_eq!((engine.count("k"), kept), (2, 2), "{}: {out}", engine.name);
}

fn on_conflict_update_keeps_the_last_row_of_a_key(engine: &Engine) {
    let csv = conflicting_keys(engine);
    let (code, out) = engine.load(&csv, "k", &["--on-conflict", "update"]);
    assert_eq!(code, 0, "{}: {out}", engine.name);
    let kept = engine.count("k WHERE (id = 1 AND v = 'new') OR (id = 2 AND v = 'last')");
    assert_eq!((engine.count("k"), kept), (2, 2), "{}: {out}", engine.name);
}

fn truncate_replaces_what_the_table_held(engine: &Engine) {
    (engine.exec)("CREATE TABLE t (id INTEGER PRIMARY KEY, v VARCHAR(20))");
    (engine.exec)("INSERT INTO t VALUES (1, 'old'), (2, 'old'), (3, 'old')");
    let csv = engine.write("new.csv", "id,v\n1,new\n9,new\n");
    let (code, out) = engine.load(&csv, "t", &["--truncate"]);
    assert_eq!(code, 0, "{}: {out}", engine.name);
    let new = engine.count("t WHERE v = 'new'");
    assert_eq!((engine.count("t"), new), (2, 2), "{}: {out}", engine.name);
}

fn columns_feed_the_named_columns_only(engine: &Engine) {
    (engine.exec)("CREATE TABLE t (id INTEGER, v VARCHAR(20), w VARCHAR(20))");
    let csv = engine.write("in.csv", "a,b\n1,x\n2,y\n");
    let (code, out) = engine.load(&csv, "t", &["--columns", "id,w"]);
    assert_eq!(code, 0, "{}: {out}", engine.name);
    let fed = engine.count("t WHERE v IS NULL AND w IN ('x', 'y')");
    assert_eq!(fed, 2, "{}: {out}", engine.name);
}

fn a_created_table_takes_the_same_file_again(engine: &Engine) {
    let typed = engine.write(
        "typed.csv",
        "id,flag,day,amount,note\n1,t,2024-01-31,1.5,a\n2,f,2024-02-29,-2.25,\"b, c\"\n",
    );
    let (code, out) = engine.load(&typed, "made", &["--create"]);
    assert_eq!(code, 0, "{}, --create: {out}", engine.name);
    let (code, out) = engine.load(&typed, "made", &[]);
    assert_eq!(code, 0, "{}, the same file again: {out}", engine.name);
    assert_eq!(engine.count("made"), 4, "{}: both loads' rows", engine.name);
}

// ---- --resume, status ----

fn a_resumed_rerun_adds_nothing_and_status_shows_the_load(engine: &Engine) {
    (engine.exec)("CREATE TABLE r (id INTEGER, v VARCHAR(20))");
    let rows: String = (1..=2000).map(|i| format!("{i},name {i}\n")).collect();
    let csv = engine.write("resumed.csv", &format!("id,v\n{rows}"));
    for run in 1..=2 {
        let (code, out) = engine.load(&csv, "r", &["--resume", "--block-size", "4096"]);
        assert_eq!(code, 0, "{}, --resume run {run}: {out}", engine.name);
        assert_eq!(
            engine.count("r"),
            2000,
            "{}: --resume run {run}",
            engine.name
        );
    }
    let (code, out) = inrush_testkit::run(BIN, &["status", "--to", &engine.to, "--json"]);
    assert_eq!(code, 0, "{}: {out}", engine.name);
    assert!(out.contains("resumed.csv"), "{}: {out}", engine.name);
    assert!(out.contains("2000"), "{}: {out}", engine.name);
}

fn a_changed_resume_input_is_refused_with_2(engine: &Engine) {
    (engine.exec)("CREATE TABLE r (id INTEGER, v VARCHAR(10))");
    let resumed = engine.write("resumed.csv", "id,v\n1,a\n2,b\n");
    let (code, out) = engine.load(&resumed, "r", &["--resume"]);
    assert_eq!(code, 0, "{}, --resume: {out}", engine.name);
    std::fs::write(&resumed, "id,v\n1,a\n2,b\n3,c\n").unwrap();
    let (code, out) = engine.load(&resumed, "r", &["--resume"]);
    assert_eq!(code, 2, "{}, a changed --resume input: {out}", engine.name);
    assert!(out.contains("changed since"), "{}: {out}", engine.name);
    assert_eq!(
        engine.count("r"),
        2,
        "{}: the changed input was mixed in",
        engine.name
    );
}

// ---- The same mistakes, the same codes ----

/// A table `t` holding one row, and a good input for it; `load` of it must exit `want`,
/// saying `says`, and leave `t` as it was.
fn refused(engine: &Engine, extra: &[&str], table: &str, want: i32, says: &str) {
    (engine.exec)("CREATE TABLE t (id INTEGER PRIMARY KEY, v VARCHAR(10))");
    (engine.exec)("INSERT INTO t VALUES (1, 'kept')");
    let good = engine.write("good.csv", "id,v\n2,a\n3,b\n");
    let (code, out) = engine.load(&good, table, extra);
    assert_eq!(code, want, "{}: {out}", engine.name);
    assert!(out.contains(says), "{}: {out}", engine.name);
    assert_eq!(engine.count("t"), 1, "{}: the table changed", engine.name);
}

fn a_missing_table_exits_2(engine: &Engine) {
    refused(engine, &[], "nope", 2, "does not exist");
}

fn create_of_a_table_there_exits_2(engine: &Engine) {
    refused(engine, &["--create"], "t", 2, "exists already");
}

fn options_that_conflict_exit_2(engine: &Engine) {
    refused(
        engine,
        &["--create", "--resume"],
        "t",
        2,
        "cannot be combined",
    );
}

fn types_for_no_column_exit_2(engine: &Engine) {
    refused(
        engine,
        &["--create", "--types", "nope=text"],
        "u",
        2,
        "no column \"nope\"",
    );
}

fn a_missing_input_exits_2(engine: &Engine) {
    (engine.exec)("CREATE TABLE t (id INTEGER)");
    let absent = engine.dir.path().join("absent.csv");
    let (code, out) = engine.load(&absent, "t", &[]);
    assert_eq!(code, 2, "{}: {out}", engine.name);
    assert!(out.contains("absent.csv"), "{}: {out}", engine.name);
}

fn an_unreachable_server_exits_3(engine: &Engine) {
    let good = engine.write("good.csv", "id,v\n2,a\n");
    let args = [
        "load",
        good.to_str().unwrap(),
        "--header",
        "--to",
        engine.unreachable,
        "--table",
        "t",
    ];
    let (code, out) = inrush_testkit::run(BIN, &args);
    assert_eq!(code, 3, "{}: {out}", engine.name);
}

fn a_bad_value_exits_4_naming_the_file(engine: &Engine) {
    (engine.exec)("CREATE TABLE t (id INTEGER PRIMARY KEY, v VARCHAR(10))");
    let bad = engine.write("bad.csv", "id,v\n2,a\nx,b\n");
    let (code, out) = engine.load(&bad, "t", &[]);
    assert_eq!(code, 4, "{}: {out}", engine.name);
    assert!(out.contains("bad.csv:3"), "{}: {out}", engine.name);
    assert_eq!(engine.count("t"), 0, "{}", engine.name);
}

fn a_key_already_there_exits_4(engine: &Engine) {
    (engine.exec)("CREATE TABLE t (id INTEGER PRIMARY KEY, v VARCHAR(10))");
    (engine.exec)("INSERT INTO t VALUES (1, 'kept')");
    let twice = engine.write("twice.csv", "id,v\n2,new\n1,again\n");
    let (code, out) = engine.load(&twice, "t", &[]);
    assert_eq!(code, 4, "{}: {out}", engine.name);
    assert_eq!(engine.count("t"), 1, "{}: the table changed", engine.name);
}

// ---- A distributed write (--prepare), where the engine carries it out ----

/// Loads `rows` into `t` as part `part` of job `job`; the transactions it left prepared.
fn prepared_part(
    engine: &Engine,
    job: &str,
    part: &str,
    rows: std::ops::Range<i32>,
) -> Vec<String> {
    let lines: String = rows.map(|i| format!("{i},part {part}\n")).collect();
    let csv = engine.write(&format!("{part}.csv"), &format!("id,v\n{lines}"));
    let name = format!("{job}:{part}");
    let (code, out) = engine.load(&csv, "t", &["--prepare", &name, "--json"]);
    assert_eq!(code, 0, "{}: {out}", engine.name);
    let json = out.lines().rev().find(|l| l.starts_with('{')).unwrap();
    let summary: serde_json::Value = serde_json::from_str(json).unwrap();
    let prepared = summary["prepared"].as_array().unwrap();
    prepared
        .iter()
        .map(|t| t.as_str().unwrap().to_string())
        .collect()
}

fn a_distributed_write_lands_the_parts_its_job_names_once(engine: &Engine) {
    use inrush_load::job::{JobStep, Parts};
    (engine.exec)("CREATE TABLE t (id INTEGER PRIMARY KEY, v VARCHAR(20))");
    let target = inrush::engines::named(&engine.to)
        .target(&engine.to)
        .unwrap();
    if !target
        .supports()
        .carries
        .contains(&inrush_load::support::Feature::Prepare)
    {
        // Refused up front, by name, and nothing changes.
        let csv = engine.write("part.csv", "id,v\n1,a\n");
        let (code, out) = engine.load(&csv, "t", &["--prepare", "j:p0"]);
        assert_eq!(code, 2, "{}: {out}", engine.name);
        assert!(out.contains("--prepare"), "{}: {out}", engine.name);
        assert_eq!(engine.count("t"), 0, "{}", engine.name);
        return;
    }
    let jobs = inrush::engines::named(&engine.to);
    let step = |step: JobStep| jobs.job(&engine.to, "j", &step).unwrap();
    step(JobStep::Begin {
        table: "t".into(),
        overwrite: false,
        parts: Parts::Prepared,
        batch: None,
        keep_indexes: false,
    });
    let winner = prepared_part(engine, "j", "p0", 1..101);
    let loser = prepared_part(engine, "j", "p1", 101..201);
    assert!(!winner.is_empty() && !loser.is_empty(), "{}", engine.name);
    assert_eq!(
        engine.count("t"),
        0,
        "{}: a prepared part is not visible",
        engine.name
    );
    let outcome = step(JobStep::Commit {
        winners: winner.clone(),
        batch: None,
    });
    let mut committed = outcome.committed.clone();
    committed.sort();
    let mut winner = winner;
    winner.sort();
    assert_eq!(committed, winner, "{}: {outcome:?}", engine.name);
    assert_eq!(
        engine.count("t"),
        100,
        "{}: only the part the job named",
        engine.name
    );
    assert_eq!(
        engine.count("t WHERE v = 'part p0'"),
        100,
        "{}",
        engine.name
    );
    // Nothing is left for recover: the job took its other part back.
    let (code, out) = inrush_testkit::run(BIN, &["recover", "--to", &engine.to, "--json"]);
    assert_eq!(code, 0, "{}: {out}", engine.name);
    let json = out.lines().find(|l| l.starts_with('{')).unwrap_or_default();
    let recovered: serde_json::Value = serde_json::from_str(json).unwrap();
    assert_eq!(
        recovered["rolled_back"],
        serde_json::json!([]),
        "{}: {out}",
        engine.name
    );
}

// ---- plan, recover ----

fn plan_says_what_a_load_would_do_and_changes_nothing(engine: &Engine) {
    (engine.exec)("CREATE TABLE t (id INTEGER PRIMARY KEY, v VARCHAR(10))");
    (engine.exec)("CREATE INDEX t_v ON t (v)");
    let csv = engine.write("in.csv", "id,v\n1,a\n");
    let (code, out) = engine.plan(&csv, "t");
    assert_eq!(code, 0, "{}: {out}", engine.name);
    assert!(
        out.contains("t_v"),
        "{}: the plan names the index: {out}",
        engine.name
    );
    assert_eq!(engine.count("t"), 0, "{}", engine.name);
}

fn recover_with_nothing_left_says_so(engine: &Engine) {
    let (code, out) = inrush_testkit::run(BIN, &["recover", "--to", &engine.to, "--json"]);
    assert_eq!(code, 0, "{}: {out}", engine.name);
    let json = out.lines().find(|l| l.starts_with('{')).unwrap_or_default();
    let recovered: serde_json::Value = serde_json::from_str(json).unwrap();
    for list in ["recreated", "committed", "rolled_back", "left_alone"] {
        assert_eq!(
            recovered[list],
            serde_json::json!([]),
            "{}: {out}",
            engine.name
        );
    }
}

/// `inrush load -` into `table` (plus `extra`) from a pipe the check writes to and holds
/// open, so the load cannot reach its commit before the check stops it.
fn load_from_pipe(engine: &Engine, table: &str, extra: &[&str]) -> std::process::Child {
    stop_common::load_from_pipe(BIN, &engine.to, table, extra)
}

/// The first half of `csv`'s lines, its header first.
fn first_half(csv: &str) -> String {
    let lines: Vec<&str> = csv.lines().collect();
    lines[..lines.len() / 2]
        .iter()
        .map(|l| format!("{l}\n"))
        .collect()
}

fn an_interrupt_while_rows_stream_rolls_back_exits_130_and_a_rerun_loads_once(engine: &Engine) {
    let name = engine.name;
    (engine.exec)(&format!("CREATE TABLE t {TYPED}"));
    let csv = typed_csv(20_000);
    for signal in [libc::SIGINT, libc::SIGTERM] {
        let child = load_from_pipe(engine, "t", &["--connections", "2"]);
        let (code, err) = stopped_while_reading(child, &first_half(&csv), signal);
        assert_eq!(code, 130, "{name}, signal {signal}: {err}");
        assert_eq!(engine.count("t"), 0, "{name}, signal {signal}: {err}");
    }
    let file = engine.write("typed.csv", &csv);
    let (code, out) = engine.load(&file, "t", &[]);
    assert_eq!((code, engine.count("t")), (0, 20_000), "{name}: {out}");
}

fn an_interrupted_create_leaves_no_table(engine: &Engine) {
    let name = engine.name;
    let csv = typed_csv(20_000);
    let child = load_from_pipe(engine, "made", &["--create"]);
    let (code, err) = stopped_while_reading(child, &first_half(&csv), libc::SIGINT);
    assert_eq!(code, 130, "{name}: {err}");
    // Made again from the whole file: there was no table left to refuse it (exit 2).
    let file = engine.write("typed.csv", &csv);
    let (code, out) = engine.load(&file, "made", &["--create"]);
    assert_eq!((code, engine.count("made")), (0, 20_000), "{name}: {out}");
}

/// Every check, on each engine named: `mod ENGINE { #[test] fn CHECK() }`.
macro_rules! suite {
    ($($engine:ident),*) => {$(
        checks!($engine:
            names_with_quotes_semicolons_and_unicode_are_quoted_everywhere,
            good_rows_are_stored_as_the_engines_own_bulk_path_stores_them,
            several_connections_store_every_row_once,
            json_lines_are_stored_as_the_same_rows_in_csv,
            parquet_is_stored_as_the_same_rows_in_csv,
            a_large_load_builds_secondary_indexes_after_the_rows_and_they_are_there,
            copy_takes_a_database_into_the_engine_and_out_again,
            a_bad_row_loads_nothing_and_exits_4,
            rejects_allowed_leave_out_only_the_bad_row_and_exit_6,
            rows_the_server_refuses_are_rejected_one_by_one,
            check_reads_everything_and_writes_nothing,
            on_conflict_skip_keeps_the_first_row_of_a_key,
            on_conflict_update_keeps_the_last_row_of_a_key,
            truncate_replaces_what_the_table_held,
            columns_feed_the_named_columns_only,
            a_created_table_takes_the_same_file_again,
            a_resumed_rerun_adds_nothing_and_status_shows_the_load,
            a_changed_resume_input_is_refused_with_2,
            a_missing_table_exits_2,
            create_of_a_table_there_exits_2,
            options_that_conflict_exit_2,
            types_for_no_column_exit_2,
            a_missing_input_exits_2,
            an_unreachable_server_exits_3,
            a_bad_value_exits_4_naming_the_file,
            a_key_already_there_exits_4,
            a_distributed_write_lands_the_parts_its_job_names_once,
            plan_says_what_a_load_would_do_and_changes_nothing,
            recover_with_nothing_left_says_so,
            an_interrupt_while_rows_stream_rolls_back_exits_130_and_a_rerun_loads_once,
            an_interrupted_create_leaves_no_table,
        );
    )*};
}

macro_rules! checks {
    ($engine:ident: $($check:ident),* $(,)?) => {
        mod $engine {
            $(
                #[test]
                fn $check() {
                    crate::$check(&crate::$engine());
                }
            )*
        }
    };
}

suite!(postgres, mariadb, sqlite);

/// The checks of a load through an ODBC driver, on each driver named. Left out, since a load
/// over ODBC refuses them (exit 2, tested in `odbc.rs`) or changes no definition:
/// `--on-conflict`, `inrush copy`, and indexes dropped and built again. `plan` names the
/// indexes it keeps.
macro_rules! odbc_suite {
    ($($engine:ident),*) => {$(
        checks!($engine:
            names_with_quotes_semicolons_and_unicode_are_quoted_everywhere,
            good_rows_are_stored_as_the_engines_own_bulk_path_stores_them,
            several_connections_store_every_row_once,
            json_lines_are_stored_as_the_same_rows_in_csv,
            parquet_is_stored_as_the_same_rows_in_csv,
            rows_the_server_refuses_are_rejected_one_by_one,
            check_reads_everything_and_writes_nothing,
            truncate_replaces_what_the_table_held,
            columns_feed_the_named_columns_only,
            a_resumed_rerun_adds_nothing_and_status_shows_the_load,
            a_changed_resume_input_is_refused_with_2,
            a_missing_table_exits_2,
            create_of_a_table_there_exits_2,
            options_that_conflict_exit_2,
            types_for_no_column_exit_2,
            a_missing_input_exits_2,
            an_unreachable_server_exits_3,
            a_bad_value_exits_4_naming_the_file,
            a_key_already_there_exits_4,
            a_distributed_write_lands_the_parts_its_job_names_once,
            plan_says_what_a_load_would_do_and_changes_nothing,
            recover_with_nothing_left_says_so,
            an_interrupt_while_rows_stream_rolls_back_exits_130_and_a_rerun_loads_once,
            an_interrupted_create_leaves_no_table,
        );
    )*};
}

odbc_suite!(postgres_odbc, mariadb_odbc, sqlite_odbc);

/// The checks that hold through some drivers only, each for its database's reason.
/// - A text in an INTEGER column: PostgreSQL and MariaDB refuse it themselves; SQLite stores
///   it, as `.import` does, in a table that is not STRICT (inrush's own SQLite engine refuses
///   it).
/// - A table `--create` made, loaded again from the same file: MariaDB has no boolean type, so
///   the booleans' column is a TINYINT given 1 and 0; loaded into again, `SQLColumns` says
///   TINYINT of it as of any other, and MariaDB refuses the words `t` and `f`.
mod odbc_partly {
    checks!(postgres_odbc:
        a_bad_row_loads_nothing_and_exits_4,
        rejects_allowed_leave_out_only_the_bad_row_and_exit_6,
        a_created_table_takes_the_same_file_again,
    );
    checks!(mariadb_odbc:
        a_bad_row_loads_nothing_and_exits_4,
        rejects_allowed_leave_out_only_the_bad_row_and_exit_6,
    );
    checks!(sqlite_odbc: a_created_table_takes_the_same_file_again);
}
