//! What every engine must do, run on each of PostgreSQL, MariaDB and SQLite through the
//! command line: an engine is done when it passes these. The same mistakes exit with the same
//! code (the README's table) and change nothing; good rows round-trip; a bad row loads nothing
//! unless rejects are allowed, and then only it is left out; `--check` writes nothing; a
//! `--resume` rerun loads nothing twice; a table `--create` made takes the same file again.

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
    let db = std::rc::Rc::new(Db::fresh("conformance"));
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
    let db = std::rc::Rc::new(MariaDb::fresh("conformance"));
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

/// Good rows in, as written; all or nothing; rejects; `--check`; `--resume`; `--create`.
fn loads_as_every_engine_must(engine: &Engine) {
    let name = engine.name;
    let load = |input: &Path, table: &str, extra: &[&str]| load_to(&engine.to, input, table, extra);
    let dir = tempfile::tempdir().unwrap();
    let rows: String = (1..=2000).map(|i| format!("{i},name {i}\n")).collect();
    let good = write(dir.path(), "good.csv", &format!("id,v\n{rows}"));
    (engine.exec)("CREATE TABLE g (id INTEGER PRIMARY KEY, v VARCHAR(20))");
    let (code, out) = load(&good, "g", &["--json", "--block-size", "4096"]);
    assert_eq!(code, 0, "{name}, good rows: {out}");
    assert!(out.contains("\"rows\":2000"), "{name}: {out}");
    assert_eq!((engine.count)("g"), 2000, "{name}: every good row");

    // A bad row late in the input: nothing of it loads, or (rejects allowed) all but it.
    let bad = write(dir.path(), "bad.csv", &format!("id,v\n{rows}x,late\n"));
    (engine.exec)("CREATE TABLE b (id INTEGER, v VARCHAR(20))");
    let (code, out) = load(&bad, "b", &["--block-size", "4096"]);
    assert_eq!(code, 4, "{name}, a bad row: {out}");
    assert_eq!(
        (engine.count)("b"),
        0,
        "{name}: a failed load leaves nothing"
    );
    let rejects = dir.path().join("b.rejects.csv");
    let rejects_arg = rejects.to_str().unwrap();
    let allowed = [
        "--max-errors",
        "5",
        "--rejects",
        rejects_arg,
        "--block-size",
        "4096",
    ];
    let (code, out) = load(&bad, "b", &allowed);
    assert_eq!(code, 6, "{name}, a bad row allowed: {out}");
    assert_eq!(
        (engine.count)("b"),
        2000,
        "{name}: all rows but the bad one"
    );
    let refused = std::fs::read_to_string(&rejects).unwrap();
    assert!(refused.contains("x,late"), "{name}: {refused}");

    // --check reads and checks, and writes nothing.
    (engine.exec)("CREATE TABLE c (id INTEGER PRIMARY KEY, v VARCHAR(20))");
    let (code, out) = load(&good, "c", &["--check"]);
    assert_eq!(code, 0, "{name}, --check: {out}");
    assert_eq!((engine.count)("c"), 0, "{name}: --check wrote rows");

    // --resume: a rerun of a finished load adds nothing.
    (engine.exec)("CREATE TABLE resumed (id INTEGER, v VARCHAR(20))");
    for run in 1..=2 {
        let (code, out) = load(&good, "resumed", &["--resume", "--block-size", "4096"]);
        assert_eq!(code, 0, "{name}, --resume run {run}: {out}");
        assert_eq!(
            (engine.count)("resumed"),
            2000,
            "{name}: --resume run {run}"
        );
    }

    // What --create makes takes the same file again.
    let typed = write(
        dir.path(),
        "typed.csv",
        "id,flag,day,amount,note\n1,t,2024-01-31,1.5,a\n2,f,2024-02-29,-2.25,\"b, c\"\n",
    );
    let (code, out) = load(&typed, "made", &["--create"]);
    assert_eq!(code, 0, "{name}, --create: {out}");
    let (code, out) = load(&typed, "made", &[]);
    assert_eq!(code, 0, "{name}, the same file again: {out}");
    assert_eq!((engine.count)("made"), 4, "{name}: both loads' rows");
}

#[test]
fn postgresql_conforms() {
    let engine = postgres();
    loads_as_every_engine_must(&engine);
    same_mistakes_same_codes(engine);
}

#[test]
fn mariadb_conforms() {
    let engine = mariadb();
    loads_as_every_engine_must(&engine);
    same_mistakes_same_codes(engine);
}

#[test]
fn sqlite_conforms() {
    let engine = sqlite();
    loads_as_every_engine_must(&engine);
    same_mistakes_same_codes(engine);
}
