//! Ctrl-C and SIGTERM in each phase of a load, once and twice: the message says what is true
//! in that phase, the exit code matches it, and no exit leaves a definition dropped. And the
//! one wait that ends by itself: a drop of keys kept waiting by another session's lock.
//!
//! The load goes into an empty table with a primary key and a secondary index, so both are
//! dropped before the COPY and rebuilt after it, and VACUUM (ANALYZE) runs last (asked for,
//! so the test does not hang on the default's choice). The test
//! watches `pg_stat_activity` for the phase's statement and signals the loader then.
//!
//! A load with `--on-conflict` changes the table only in its merge at the end: a signal there
//! rolls the merge back.
//!
//! The same holds for a table with a postgres_fdw partition loaded straight on its shard (a
//! database of the tests' server): there the shard's own index is dropped and rebuilt, its
//! journal is on the shard, and the commit spans both servers.

use inrush_testkit::Db;
use std::path::PathBuf;
use std::process::Child;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

const ROWS: usize = 600_000;

const SCHEMA: &str =
    "CREATE TABLE t (id int PRIMARY KEY, n int CHECK (n >= 0), s varchar(20), d date); \
                      CREATE INDEX t_s ON t (s, n);";

fn input() -> &'static PathBuf {
    static INPUT: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    &INPUT
        .get_or_init(|| {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("big.csv");
            let mut text = String::with_capacity(ROWS * 32);
            for i in 0..ROWS {
                text.push_str(&format!(
                    "{i},{},name {},2024-03-{:02}\n",
                    i % 1000,
                    i % 977,
                    i % 28 + 1
                ));
            }
            std::fs::write(&path, text).unwrap();
            (dir, path)
        })
        .1
}

fn start(db: &Db) -> Child {
    inrush_testkit::spawn_load(
        env!("CARGO_BIN_EXE_inrush"),
        db,
        input().to_str().unwrap(),
        "t",
        &["--after", "vacuum-analyze"],
    )
}

/// Waits until one of the load's sessions runs a statement starting with one of `prefixes`
/// (a rebuilt index's may follow the `SET LOCAL default_tablespace` that puts it back where
/// it was).
fn wait_for_statement(db: &Db, child: &mut Child, prefixes: &[&str]) {
    let like: Vec<String> = prefixes
        .iter()
        .map(|p| {
            format!(
                "regexp_replace(query, '^SET LOCAL default_tablespace = [^;]*; ', '') LIKE '{p}%'"
            )
        })
        .collect();
    let sql = format!(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() \
         AND pid <> pg_backend_pid() AND state = 'active' AND ({})",
        like.join(" OR ")
    );
    let deadline = Instant::now() + Duration::from_secs(120);
    while db.int(&sql) == 0 {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the load ended before {prefixes:?}"
        );
        assert!(
            Instant::now() < deadline,
            "no {prefixes:?} within 2 minutes"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn signal(child: &Child, sig: i32) {
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as i32, sig) };
}

/// A table hash-partitioned in two: one local leaf with an index of its own, one foreign leaf
/// on `shard` whose remote table has a primary key and a secondary index.
const SHARDED: &str =
    "CREATE TABLE t (id int, n int, s varchar(20), d date) PARTITION BY HASH (id); \
     CREATE TABLE t_0 PARTITION OF t FOR VALUES WITH (modulus 2, remainder 0); \
     CREATE INDEX t_0_s ON t_0 (s, n); \
     CREATE FOREIGN TABLE t_1 PARTITION OF t FOR VALUES WITH (modulus 2, remainder 1) \
       SERVER shard OPTIONS (table_name 't_far');";

const SHARD: &str = "CREATE TABLE t_far (id int PRIMARY KEY, n int, s varchar(20), d date); \
                     CREATE INDEX t_far_s ON t_far (s, n);";

/// The table `t`, on the tests' server alone or with a foreign partition on a shard (the
/// second server then).
fn servers(sharded: bool) -> (Db, Option<Db>) {
    let db = Db::fresh("signals");
    let shard = sharded.then(|| {
        let shard = Db::fresh("signals");
        shard.exec(SHARD);
        db.add_foreign_server("shard", &shard);
        db.exec(SHARDED);
        shard
    });
    if shard.is_none() {
        db.exec(SCHEMA);
    }
    (db, shard)
}

/// Every server's definitions as `before`, its journal empty, no transaction left prepared.
fn assert_put_back(servers: &[&Db], before: &[String], stderr: &str) {
    for (server, before) in servers.iter().zip(before) {
        assert_eq!(&server.definitions(), before, "{}: {stderr}", server.name);
        assert_eq!(server.journal_len(), 0, "{}: {stderr}", server.name);
        let prepared = format!(
            "SELECT count(*) FROM pg_prepared_xacts WHERE database = '{}'",
            server.name
        );
        assert_eq!(server.int(&prepared), 0, "{}: {stderr}", server.name);
    }
}

/// Signals the loader `times` times once a phase's statement runs (on the shard when
/// `sharded`); checks what it said and left on every server.
fn interrupt_at(
    sharded: bool,
    prefixes: &[&str],
    sig: i32,
    times: usize,
    exit: i32,
    rows: i64,
    said: &str,
) {
    let (db, shard) = servers(sharded);
    let servers: Vec<&Db> = std::iter::once(&db).chain(&shard).collect();
    let before: Vec<String> = servers.iter().map(|s| s.definitions()).collect();
    let mut child = start(&db);
    wait_for_statement(servers[servers.len() - 1], &mut child, prefixes);
    for _ in 0..times {
        signal(&child, sig);
        std::thread::sleep(Duration::from_millis(50));
    }
    let (code, stderr) = inrush_testkit::finish(child);
    assert_eq!(code, exit, "{stderr}");
    assert!(stderr.contains(said), "expected {said:?} in:\n{stderr}");
    assert_eq!(db.int("SELECT count(*) FROM t"), rows, "{stderr}");
    assert_put_back(&servers, &before, &stderr);
}

/// How the drop of keys starts (it waits for locks a few seconds at most).
const DROP: &str = "BEGIN; SET LOCAL lock_timeout";

/// `t` (on the last server: the shard when `sharded`) open in a transaction of another session.
fn reader_of_t(servers: &[&Db], sharded: bool) -> postgres::Client {
    let held = servers[servers.len() - 1];
    let mut reader = postgres::Client::connect(&held.conninfo, postgres::NoTls).unwrap();
    let table = if sharded { "t_far" } else { "t" };
    reader
        .batch_execute(&format!("BEGIN; SELECT count(*) FROM {table}"))
        .unwrap();
    reader
}

/// Dropping keys waits for every session that has the table open in a transaction (and,
/// waiting, makes new ones wait behind it): with such a session on the last server (the
/// shard when `sharded`), one SIGTERM once the drop waits there cancels it, and the load ends
/// with every server as it was while that session still holds the table.
fn sigterm_while_the_drop_waits(sharded: bool) {
    let (db, shard) = servers(sharded);
    let servers: Vec<&Db> = std::iter::once(&db).chain(&shard).collect();
    let before: Vec<String> = servers.iter().map(|s| s.definitions()).collect();
    let mut reader = reader_of_t(&servers, sharded);
    let mut child = start(&db);
    wait_for_statement(servers[servers.len() - 1], &mut child, &[DROP]);
    signal(&child, libc::SIGTERM);
    let (code, stderr) = inrush_testkit::finish(child);
    assert_eq!(code, 130, "{stderr}");
    assert!(stderr.contains("rolling back"), "{stderr}");
    reader.batch_execute("ROLLBACK").unwrap();
    assert_eq!(db.int("SELECT count(*) FROM t"), 0, "{stderr}");
    assert_put_back(&servers, &before, &stderr);
}

#[test]
fn sigterm_while_the_drop_waits_for_a_lock_ends_the_load_with_the_keys_in_place() {
    sigterm_while_the_drop_waits(false);
}

/// On a shard, what the coordinator dropped before is put back too.
#[test]
fn sigterm_while_a_shards_drop_waits_for_a_lock_puts_every_server_back() {
    sigterm_while_the_drop_waits(true);
}

/// Unsignalled, the drop gives up after 5 s, and the load goes on with the keys in place
/// (there and on a shard alike), saying why; every row goes in.
fn a_drop_kept_waiting(sharded: bool, said: &str) {
    let (db, shard) = servers(sharded);
    let servers: Vec<&Db> = std::iter::once(&db).chain(&shard).collect();
    let before: Vec<String> = servers.iter().map(|s| s.definitions()).collect();
    let mut reader = reader_of_t(&servers, sharded);
    let (code, stderr) = inrush_testkit::finish(start(&db));
    reader.batch_execute("ROLLBACK").unwrap();
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains(said), "expected {said:?} in:\n{stderr}");
    assert_eq!(db.int("SELECT count(*) FROM t"), ROWS as i64, "{stderr}");
    assert_put_back(&servers, &before, &stderr);
}

#[test]
fn a_drop_that_waits_too_long_for_a_lock_keeps_the_keys() {
    a_drop_kept_waiting(false, r#"another session kept "public"."t" open for 5 s"#);
}

#[test]
fn a_shards_drop_that_waits_too_long_for_a_lock_keeps_its_keys() {
    a_drop_kept_waiting(true, "kept during the load");
}

#[test]
fn sigterm_during_the_copy_rolls_back_and_puts_the_keys_back() {
    interrupt_at(false, &["COPY"], libc::SIGTERM, 1, 130, 0, "rolling back");
}

/// How a rebuilt key's statements start.
const REBUILD: [&str; 3] = ["CREATE INDEX", "CREATE UNIQUE INDEX", "ALTER TABLE"];

/// A session holding `t` in `mode` in a transaction (it does not block the COPY).
fn holder_of_t(db: &Db, mode: &str) -> postgres::Client {
    let mut holder = postgres::Client::connect(&db.conninfo, postgres::NoTls).unwrap();
    holder
        .batch_execute(&format!("BEGIN; LOCK TABLE t IN {mode} MODE"))
        .unwrap();
    holder
}

fn holder_pid(holder: &mut postgres::Client) -> i32 {
    holder
        .query_one("SELECT pg_backend_pid()", &[])
        .unwrap()
        .get(0)
}

/// Runs `inrush recover` for `t`; its exit code and stderr.
fn recover(db: &Db) -> (i32, String) {
    inrush_testkit::run(
        env!("CARGO_BIN_EXE_inrush"),
        &["recover", "--to", &db.conninfo, "--table", "t"],
    )
}

#[test]
fn a_second_ctrl_c_while_the_rollbacks_rebuild_waits_for_a_lock_leaves_the_keys_to_recover() {
    let (db, _) = servers(false);
    let before = db.definitions();
    let mut child = start(&db);
    wait_for_statement(&db, &mut child, &["COPY"]);
    let mut holder = holder_of_t(&db, "ROW EXCLUSIVE");
    let pid = holder_pid(&mut holder);
    signal(&child, libc::SIGINT);
    wait_for_statement(&db, &mut child, &REBUILD);
    signal(&child, libc::SIGINT);
    let (code, stderr) = inrush_testkit::finish(child);
    assert_eq!(code, 3, "{stderr}");
    for said in [
        "exiting now would leave them dropped",
        &format!("on \"public\".\"t\", which another session kept open: pid {pid} "),
        "stopped waiting at the second interrupt",
        "run `inrush recover`",
    ] {
        assert!(stderr.contains(said), "expected {said:?} in:\n{stderr}");
    }
    assert_eq!(db.int("SELECT count(*) FROM t"), 0, "{stderr}");
    assert!(db.journal_len() > 0, "{stderr}");
    holder.batch_execute("COMMIT").unwrap();
    let (code, said) = recover(&db);
    assert_eq!(code, 0, "{said}");
    assert_put_back(&[&db], &[before], &stderr);
}

/// The rebuild after the commit asks for the table's lock a moment at a time while another
/// session keeps it open, names that session, and finishes once it is gone.
#[test]
fn a_rebuild_kept_waiting_by_a_reader_names_it_and_finishes_once_it_leaves() {
    let (db, _) = servers(false);
    let before = db.definitions();
    let mut child = start(&db);
    wait_for_statement(&db, &mut child, &["COPY"]);
    // A reader does not keep the indexes from being built, but their constraints' ALTER TABLE
    // waits for it.
    let mut holder = holder_of_t(&db, "ACCESS SHARE");
    let pid = holder_pid(&mut holder);
    wait_for_statement(&db, &mut child, &["ALTER TABLE"]);
    // Past the first attempt's lock wait: the next is asked for after a pause.
    std::thread::sleep(Duration::from_secs(4));
    // Queued behind an attempt, a query of the table runs once the attempt stands aside.
    let read = db.int("SELECT count(*) FROM t");
    holder.batch_execute("COMMIT").unwrap();
    let (code, stderr) = inrush_testkit::finish(child);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(read, ROWS as i64, "{stderr}");
    let said = format!("waits for \"public\".\"t\", which another session keeps open: pid {pid} ");
    assert!(stderr.contains(&said), "expected {said:?} in:\n{stderr}");
    assert_eq!(db.int("SELECT count(*) FROM t"), ROWS as i64, "{stderr}");
    assert_put_back(&[&db], &[before], &stderr);
}

/// After the commit, a second Ctrl-C stops the rebuild's waiting: the rows stay, the message
/// says so and names what is left to `inrush recover`.
#[test]
fn a_second_ctrl_c_while_the_rebuild_waits_for_a_lock_keeps_the_rows_and_leaves_the_keys_to_recover(
) {
    let (db, _) = servers(false);
    let before = db.definitions();
    let mut child = start(&db);
    wait_for_statement(&db, &mut child, &["COPY"]);
    let mut holder = holder_of_t(&db, "ACCESS SHARE");
    wait_for_statement(&db, &mut child, &["ALTER TABLE"]);
    signal(&child, libc::SIGINT);
    std::thread::sleep(Duration::from_millis(50));
    signal(&child, libc::SIGINT);
    let (code, stderr) = inrush_testkit::finish(child);
    assert_eq!(code, 8, "{stderr}");
    for said in [
        &format!("the load committed {ROWS} rows"),
        "stopped waiting at the second interrupt",
        "recover",
    ] {
        assert!(stderr.contains(said), "expected {said:?} in:\n{stderr}");
    }
    assert_eq!(db.int("SELECT count(*) FROM t"), ROWS as i64, "{stderr}");
    // `recover` waits for the session too, and says so.
    let pid = holder_pid(&mut holder);
    let recovering = std::process::Command::new(env!("CARGO_BIN_EXE_inrush"))
        .args(["recover", "--to", &db.conninfo, "--table", "t"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(4));
    holder.batch_execute("COMMIT").unwrap();
    let (code, said) = inrush_testkit::finish(recovering);
    assert_eq!(code, 0, "{said}");
    let waited = format!("which another session keeps open: pid {pid} ");
    assert!(said.contains(&waited), "expected {waited:?} in:\n{said}");
    assert_put_back(&[&db], &[before], &stderr);
}

#[test]
fn sigterm_during_the_index_rebuild_keeps_the_commit_and_finishes_the_rebuild() {
    interrupt_at(
        false,
        &["CREATE INDEX", "CREATE UNIQUE INDEX"],
        libc::SIGTERM,
        2,
        0,
        ROWS as i64,
        "the rows stay committed",
    );
}

#[test]
fn ctrl_c_during_vacuum_skips_it_and_says_the_rows_are_committed() {
    interrupt_at(
        false,
        &["VACUUM"],
        libc::SIGINT,
        1,
        0,
        ROWS as i64,
        "skipped: interrupted",
    );
}

#[test]
fn sigterm_during_the_copy_on_a_shard_rolls_back_every_server() {
    interrupt_at(true, &["COPY"], libc::SIGTERM, 1, 130, 0, "rolling back");
}

#[test]
fn a_second_ctrl_c_during_the_copy_on_a_shard_still_puts_its_index_back() {
    interrupt_at(
        true,
        &["COPY"],
        libc::SIGINT,
        2,
        130,
        0,
        "exiting now would leave them dropped",
    );
}

#[test]
fn sigterm_during_the_rebuild_on_a_shard_keeps_the_commit_and_finishes_it() {
    interrupt_at(
        true,
        &["CREATE INDEX"],
        libc::SIGTERM,
        2,
        0,
        ROWS as i64,
        "the rows stay committed",
    );
}

/// `--on-conflict` merges its staging table into the table in one INSERT at the end: SIGTERM
/// then cancels it, and the table, its keys and the server are as before the load (no staging
/// table left behind).
#[test]
fn sigterm_during_the_on_conflict_merge_rolls_it_back() {
    let (db, _) = servers(false);
    let before = db.definitions();
    let mut child = inrush_testkit::spawn_load(
        env!("CARGO_BIN_EXE_inrush"),
        &db,
        input().to_str().unwrap(),
        "t",
        &["--on-conflict", "update"],
    );
    wait_for_statement(&db, &mut child, &["INSERT INTO \"public\".\"t\""]);
    signal(&child, libc::SIGTERM);
    let (code, stderr) = inrush_testkit::finish(child);
    assert_eq!(code, 130, "{stderr}");
    assert_eq!(db.int("SELECT count(*) FROM t"), 0, "{stderr}");
    let staged =
        "SELECT count(*) FROM pg_tables WHERE schemaname = 'inrush' AND tablename LIKE 'stage_%'";
    assert_eq!(db.int(staged), 0, "{stderr}");
    assert_put_back(&[&db], &[before], &stderr);
}

/// SIGTERM while the inspection waits on a lock another session holds on the table ends the
/// load at once (the waiting statement is cancelled), not when the lock is let go.
#[test]
fn sigterm_while_the_inspection_waits_for_a_lock_ends_the_load_at_once() {
    let (db, _) = servers(false);
    let before = db.definitions();
    let mut holder = postgres::Client::connect(&db.conninfo, postgres::NoTls).unwrap();
    holder
        .batch_execute("BEGIN; LOCK TABLE t IN ACCESS EXCLUSIVE MODE")
        .unwrap();
    let mut child = start(&db);
    let waiting = "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() \
                   AND wait_event_type = 'Lock'";
    let deadline = Instant::now() + Duration::from_secs(60);
    while db.int(waiting) == 0 {
        assert!(
            child.try_wait().unwrap().is_none(),
            "the load ended before waiting"
        );
        assert!(
            Instant::now() < deadline,
            "the load never waited for the lock"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    signal(&child, libc::SIGTERM);
    // The lock is still held: the load must end without it.
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("SIGTERM did not end a load waiting for a lock");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let (code, stderr) = inrush_testkit::finish(child);
    assert_eq!(code, 130, "{stderr}");
    holder.batch_execute("ROLLBACK").unwrap();
    assert_eq!(db.int("SELECT count(*) FROM t"), 0, "{stderr}");
    assert_put_back(&[&db], &[before], &stderr);
}
