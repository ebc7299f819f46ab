//! One exit code per cause, whatever the engine: the same mistakes made against PostgreSQL,
//! MariaDB and SQLite exit with the same code (the README's table) and change nothing.

use inrush_testkit::{Db, MariaDb};
use std::path::{Path, PathBuf};

const BIN: &str = env!("CARGO_BIN_EXE_inrush");

/// A database of one engine, as the tests make and read it.
struct Engine {
    name: &'static str,
    /// For `--to`.
    to: String,
    exec: Box<dyn Fn(&str)>,
    /// How many rows `table` holds.
    count: Box<dyn Fn(&str) -> i64>,
    /// Where the engine refuses to connect (a server nobody listens on, a file in no
    /// directory).
    unreachable: &'static str,
    _dir: Option<tempfile::TempDir>,
}

fn postgres() -> Engine {
    let db = std::rc::Rc::new(Db::fresh("exit_codes"));
    let (exec, count) = (db.clone(), db.clone());
    Engine {
        name: "PostgreSQL",
        to: db.conninfo.clone(),
        exec: Box::new(move |sql| exec.exec(sql)),
        count: Box::new(move |t| count.int(&format!("SELECT count(*) FROM {t}"))),
        unreachable: "postgresql://inrush@127.0.0.1:1/nothing",
        _dir: None,
    }
}

fn mariadb() -> Engine {
    let db = std::rc::Rc::new(MariaDb::fresh("exit_codes"));
    let (exec, count) = (db.clone(), db.clone());
    Engine {
        name: "MariaDB",
        to: db.url.clone(),
        exec: Box::new(move |sql| exec.exec(sql)),
        count: Box::new(move |t| {
            count.rows(&format!("SELECT COUNT(*) FROM {t}"))[0]
                .parse()
                .unwrap()
        }),
        unreachable: "mysql://inrush:inrush@127.0.0.1:1/nothing",
        _dir: None,
    }
}

fn sqlite() -> Engine {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.db");
    let (exec, count) = (path.clone(), path.clone());
    Engine {
        name: "SQLite",
        to: path.to_str().unwrap().to_string(),
        exec: Box::new(move |sql| {
            rusqlite::Connection::open(&exec)
                .unwrap()
                .execute_batch(sql)
                .unwrap()
        }),
        count: Box::new(move |t| {
            rusqlite::Connection::open(&count)
                .unwrap()
                .query_row(&format!("SELECT count(*) FROM {t}"), [], |r| r.get(0))
                .unwrap()
        }),
        unreachable: "/nonexistent-directory/t.db",
        _dir: Some(dir),
    }
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// `inrush load INPUT --header --to TO --table TABLE` plus `extra`.
fn load_to(to: &str, input: &Path, table: &str, extra: &[&str]) -> (i32, String) {
    let mut args = vec![
        "load",
        input.to_str().unwrap(),
        "--header",
        "--no-progress",
        "--to",
        to,
        "--table",
        table,
    ];
    args.extend_from_slice(extra);
    inrush_testkit::run(BIN, &args)
}

/// Every cause of the README's table a load can meet before or while it runs, made on
/// `engine`: its code, and the table unchanged.
fn same_mistakes_same_codes(engine: Engine) {
    let name = engine.name;
    let load = |input: &Path, table: &str, extra: &[&str]| load_to(&engine.to, input, table, extra);
    (engine.exec)("CREATE TABLE t (id INTEGER PRIMARY KEY, v VARCHAR(10))");
    (engine.exec)("INSERT INTO t VALUES (1, 'kept')");
    let dir = tempfile::tempdir().unwrap();
    let good = write(dir.path(), "good.csv", "id,v\n2,a\n3,b\n");
    let expect = |what: &str, (code, out): (i32, String), want: i32, says: &str| {
        assert_eq!(code, want, "{name}, {what}: {out}");
        assert!(out.contains(says), "{name}, {what}: {out}");
        assert_eq!((engine.count)("t"), 1, "{name}, {what}: the table changed");
    };

    // 2: the command line names what is not there, or asks what cannot be.
    expect(
        "a missing table",
        load(&good, "nope", &[]),
        2,
        "does not exist",
    );
    let exists = load(&good, "t", &["--create"]);
    expect("--create of a table there", exists, 2, "exists already");
    let absent = dir.path().join("absent.csv");
    expect("a missing input", load(&absent, "t", &[]), 2, "absent.csv");
    let conflict = load(&good, "t", &["--create", "--resume"]);
    expect("options that conflict", conflict, 2, "cannot be combined");
    let types = load(&good, "u", &["--create", "--types", "nope=text"]);
    expect("--types for no column", types, 2, "no column \"nope\"");

    // 3: the server is not there.
    let away = load_to(engine.unreachable, &good, "t", &[]);
    expect("an unreachable server", away, 3, "");

    // 4: the input's rows are refused.
    let bad = write(dir.path(), "bad.csv", "id,v\n2,a\nx,b\n");
    expect("a bad value", load(&bad, "t", &[]), 4, "bad.csv");
    let twice = write(dir.path(), "twice.csv", "id,v\n1,again\n");
    expect("a key already there", load(&twice, "t", &[]), 4, "");

    // 2: a --resume input that changed since its load began is not mixed in.
    (engine.exec)("CREATE TABLE r (id INTEGER, v VARCHAR(10))");
    let resumed = write(dir.path(), "resumed.csv", "id,v\n1,a\n2,b\n");
    let (code, out) = load(&resumed, "r", &["--resume"]);
    assert_eq!(code, 0, "{name}, --resume: {out}");
    std::fs::write(&resumed, "id,v\n1,a\n2,b\n3,c\n").unwrap();
    let (code, out) = load(&resumed, "r", &["--resume"]);
    assert_eq!(code, 2, "{name}, a changed --resume input: {out}");
    assert!(out.contains("changed since"), "{name}: {out}");
    assert_eq!(
        (engine.count)("r"),
        2,
        "{name}: the changed input was mixed in"
    );
}

#[test]
fn postgresql_exits_with_the_same_code_for_the_same_mistake() {
    same_mistakes_same_codes(postgres());
}

#[test]
fn mariadb_exits_with_the_same_code_for_the_same_mistake() {
    same_mistakes_same_codes(mariadb());
}

#[test]
fn sqlite_exits_with_the_same_code_for_the_same_mistake() {
    same_mistakes_same_codes(sqlite());
}
