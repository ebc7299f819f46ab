//! Faults in the middle of MariaDB loads, as `faults.rs` has them for PostgreSQL: the server
//! killed (`SIGKILL` of mariadbd, as a crash would) in each phase of a load that drops the
//! table's secondary keys, then started again (InnoDB recovers), then the same command run
//! again and/or `inrush recover`, and then: every row of the input in the table exactly once
//! (or none, where the phase says so), `SHOW CREATE TABLE` as before, `inrush_ddl_journal`
//! empty, no XA transaction left, and the exit code and message the README documents for that
//! phase.
//!
//! A test binary of its own, so the server (`inrush_testkit::mariadb`, one per test process) is
//! this file's alone to kill; the tests take turns with it ([`Server::lock`]). A load is held
//! at the start of a phase by `INRUSH_TEST_PAUSE` (see `inrush::report`): no timing hits
//! "after the commit, before the keys are added back" reliably.

mod mariadb_common;

use inrush_testkit::{mariadb, MariaDb};
use mariadb_common::{definition, inrush, shared_dir, BIN};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

const SEED_ROWS: i64 = 2000;
const FIRST_LOADED_ID: usize = 100_000;
/// About 8 MB: the debug-built loader sends it for about a second, and adding the two keys
/// back takes long enough to be caught running.
const ROWS: usize = 300_000;

/// `t`: InnoDB, a primary key (which stays) and two secondary keys (dropped by a load under
/// `--index-threshold 0` and added back after it), with rows.
const SCHEMA: &str = "CREATE TABLE t (id INT PRIMARY KEY, customer INT NOT NULL, \
       qty INT NOT NULL, note VARCHAR(40) NOT NULL, \
       KEY t_customer_qty (customer, qty DESC), KEY t_note (note(12))) ENGINE=InnoDB; \
     INSERT INTO t SELECT seq, seq % 100 + 1, seq % 7, CONCAT('Seed ', seq) FROM seq_1_to_2000";

/// The server, held by one test at a time.
struct Server(#[allow(dead_code)] MutexGuard<'static, ()>);

impl Server {
    fn lock() -> Server {
        static TURN: Mutex<()> = Mutex::new(());
        // A test that failed while holding the lock leaves the server usable, or down: up
        // again here.
        let turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
        let server = mariadb();
        if server.pid().is_none() {
            server.restart();
        }
        Server(turn)
    }

    /// A fresh database holding [`SCHEMA`]; `SHOW CREATE TABLE t` as it starts.
    fn db(&self) -> (MariaDb, String) {
        let db = MariaDb::fresh("faults");
        db.exec(SCHEMA);
        let before = definition(&db, "t");
        (db, before)
    }

    fn kill(&self) {
        mariadb().kill();
    }

    fn restart(&self) {
        mariadb().restart();
    }
}

/// The input, written once for the whole file (a rerun must find the same file):
/// `id,customer,qty,note` from [`FIRST_LOADED_ID`], no header.
fn input() -> &'static Path {
    static INPUT: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    &INPUT
        .get_or_init(|| {
            use std::io::Write;
            let dir = shared_dir();
            let path = dir.path().join("rows.csv");
            let file = std::fs::File::create(&path).expect("create input");
            let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
            for i in FIRST_LOADED_ID..FIRST_LOADED_ID + ROWS {
                writeln!(out, "{i},{},{},Note {i}", i % 100 + 1, i % 7).expect("write input");
            }
            out.flush().expect("flush input");
            (dir, path)
        })
        .1
}

/// `inrush load` of the input into `t`, dropping its keys; held at the start of phase `pause`
/// (see the module documentation) until the pause file is removed.
fn spawn_load(db: &MariaDb, pause: Option<(&str, &Path)>) -> Child {
    let mut cmd = Command::new(BIN);
    cmd.args(["load", input().to_str().unwrap(), "--to", &db.url])
        .args(["--table", "t", "--no-progress", "--index-threshold", "0"])
        .env("NO_COLOR", "1")
        .env_remove("INRUSH_TO")
        .env_remove("INRUSH_TEST_PAUSE")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some((phase, file)) = pause {
        cmd.env("INRUSH_TEST_PAUSE", format!("{phase}:{}", file.display()));
    }
    cmd.spawn().expect("spawn inrush load")
}

/// Waits (at most `limit`) for `child` to end; its exit code and stderr.
fn finish(mut child: Child, limit: Duration, what: &str) -> (Option<i32>, String) {
    let deadline = Instant::now() + limit;
    while child.try_wait().expect("try_wait").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().expect("wait");
            panic!(
                "{what}: still running after {limit:?}; stderr:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().expect("wait");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Waits until `ready` holds (the load must still run meanwhile).
fn wait_until(child: &mut Child, what: &str, mut ready: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !ready() {
        if let Some(status) = child.try_wait().expect("try_wait") {
            let mut stderr = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = std::io::Read::read_to_string(&mut e, &mut stderr);
            }
            panic!("the load ended ({status}) before {what}:\n{stderr}");
        }
        assert!(Instant::now() < deadline, "no {what} within 2 minutes");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Whether another session in this database runs a statement `LIKE like` now.
fn running(db: &MariaDb, like: &str) -> bool {
    db.rows(&format!(
        "SELECT COUNT(*) FROM information_schema.processlist \
          WHERE db = DATABASE() AND id <> CONNECTION_ID() AND info LIKE '{like}'"
    )) != ["0"]
}

/// A pause file in a directory of its own.
fn pause_file() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("paused");
    (dir, file)
}

/// Holds the load at `phase`, kills the server and lets the load go on against it.
fn kill_at(server: &Server, db: &MariaDb, phase: &str) -> (Option<i32>, String) {
    let (_dir, file) = pause_file();
    let mut load = spawn_load(db, Some((phase, &file)));
    wait_until(&mut load, &format!("the pause at {phase}"), || {
        file.exists()
    });
    server.kill();
    std::fs::remove_file(&file).expect("release the load");
    finish(
        load,
        Duration::from_secs(60),
        &format!("the load killed at {phase}"),
    )
}

/// An exit 8's message: the rows committed and staying, the keys still dropped (named even
/// though the server that holds the journal is gone), the command that finishes, and that a
/// rerun loads nothing.
fn assert_unfinished_message(stderr: &str, when: &str) {
    for said in [
        &format!("the load committed {ROWS} rows into"),
        "do not load them again",
        "still dropped, kept in the DDL journal: index t_customer_qty, index t_note",
        "To finish: ",
        "inrush recover --to 'mysql://",
        "a rerun of this same load finds its rows there",
    ] {
        assert!(
            stderr.contains(said),
            "{when}: {said:?} missing from:\n{stderr}"
        );
    }
}

/// After a kill past the commit, the server back: the rows stay, the keys are still dropped
/// and journaled, and the load's record is there for a rerun to find.
fn assert_left_to_finish(db: &MariaDb, before: &str, when: &str) {
    assert_eq!(
        count(db),
        SEED_ROWS + ROWS as i64,
        "{when}: the committed rows stay"
    );
    assert_ne!(
        definition(db, "t"),
        before,
        "{when}: the keys are not back yet"
    );
    assert_eq!(
        db.rows("SELECT COUNT(*) FROM inrush_ddl_journal"),
        ["2"],
        "{when}: both keys journaled"
    );
    assert_eq!(
        db.rows("SELECT COUNT(DISTINCT run) FROM inrush_load_commits"),
        ["1"],
        "{when}: the load's record, committed with its rows"
    );
}

/// The number of rows of `t`.
fn count(db: &MariaDb) -> i64 {
    db.rows("SELECT COUNT(*) FROM t")[0]
        .parse()
        .expect("a count")
}

/// `t` holds `rows` rows, each id once; `SHOW CREATE TABLE` is `before`; nothing is left in
/// the journal, no load's record, no XA transaction.
fn assert_whole(db: &MariaDb, before: &str, rows: i64, when: &str) {
    assert_eq!(
        db.rows("SELECT COUNT(*), COUNT(DISTINCT id) FROM t"),
        [format!("{rows}\t{rows}")],
        "{when}: rows"
    );
    assert_eq!(definition(db, "t"), before, "{when}: SHOW CREATE TABLE");
    assert_eq!(
        db.rows("SELECT COUNT(*) FROM inrush_ddl_journal"),
        ["0"],
        "{when}: the DDL journal"
    );
    assert_eq!(
        db.rows("XA RECOVER"),
        Vec::<String>::new(),
        "{when}: XA transactions"
    );
}

/// Killed before the rows are sent (the keys dropped) or while they are: nothing is
/// committed, the exit (3) says the server failed and the keys are in the journal; once the
/// server is back, the same load puts them back and loads every row once.
#[test]
fn a_kill_before_or_during_the_rows_commits_nothing_and_a_rerun_loads_once() {
    let server = Server::lock();
    for during in [false, true] {
        let (db, before) = server.db();
        let (code, stderr) = match during {
            false => kill_at(&server, &db, "load"),
            true => {
                let mut load = spawn_load(&db, None);
                wait_until(&mut load, "a LOAD DATA", || {
                    running(&db, "LOAD DATA%") || running(&db, "INSERT%")
                });
                server.kill();
                finish(
                    load,
                    Duration::from_secs(60),
                    "the load killed during its rows",
                )
            }
        };
        assert_eq!(code, Some(3), "during={during}: {stderr}");
        assert!(
            stderr.contains("could not be recreated") && stderr.contains("inrush recover"),
            "during={during}: the message names what is left and how to finish it:\n{stderr}"
        );
        server.restart();
        assert_eq!(count(&db), SEED_ROWS, "during={during}: nothing committed");
        assert_ne!(
            db.rows("SELECT COUNT(*) FROM inrush_ddl_journal"),
            ["0"],
            "during={during}: the dropped keys are journaled"
        );
        let (code, stderr) = finish(spawn_load(&db, None), Duration::from_secs(120), "the rerun");
        assert_eq!(code, Some(0), "during={during}: {stderr}");
        assert_whole(
            &db,
            &before,
            SEED_ROWS + ROWS as i64,
            &format!("the rerun after a kill (during={during})"),
        );
        assert_eq!(
            db.rows("SELECT COUNT(*) FROM inrush_load_commits"),
            ["0"],
            "during={during}: the load's record"
        );
    }
}

/// Killed after the commit, before the keys are added back: exit 8, the rows stay; once the
/// server is back the same load loads nothing and puts the keys back. With `inrush recover`
/// first, the load run after it loads nothing either.
#[test]
fn a_kill_between_the_commit_and_the_rebuild_exits_8_and_nothing_loads_twice() {
    let server = Server::lock();
    for recover_first in [false, true] {
        let (db, before) = server.db();
        let (code, stderr) = kill_at(&server, &db, "indexes");
        let when = format!("recover_first={recover_first}");
        assert_eq!(code, Some(8), "{when}: {stderr}");
        assert_unfinished_message(&stderr, &when);
        server.restart();
        assert_left_to_finish(&db, &before, &when);
        let loaded = SEED_ROWS + ROWS as i64;
        if recover_first {
            let (code, out) = inrush(&["recover", "--to", &db.url, "--table", "t"]);
            assert_eq!(code, 0, "{out}");
            assert_eq!(definition(&db, "t"), before, "recover puts the keys back");
        }
        let (code, stderr) = finish(spawn_load(&db, None), Duration::from_secs(120), "the rerun");
        assert_eq!(code, Some(0), "recover_first={recover_first}: {stderr}");
        assert!(
            stderr.contains("loaded nothing into"),
            "recover_first={recover_first}: {stderr}"
        );
        assert_whole(
            &db,
            &before,
            loaded,
            &format!("the rerun (recover_first={recover_first})"),
        );
        assert_eq!(
            db.rows("SELECT COUNT(*) FROM inrush_load_commits"),
            ["0"],
            "recover_first={recover_first}: the load's record is consumed"
        );
    }
}

/// Killed while the `ALTER TABLE ... ADD KEY` that puts the keys back runs: exit 8; once the
/// server is back `inrush recover` puts them back, and the same load loads nothing.
#[test]
fn a_kill_during_the_rebuild_exits_8_and_recover_finishes_it() {
    let server = Server::lock();
    let (db, before) = server.db();
    let (_dir, file) = pause_file();
    let mut load = spawn_load(&db, Some(("indexes", &file)));
    wait_until(&mut load, "the pause before the rebuild", || file.exists());
    std::fs::remove_file(&file).expect("release the load");
    wait_until(&mut load, "an ALTER TABLE ... ADD", || {
        running(&db, "ALTER TABLE%ADD%")
    });
    server.kill();
    let (code, stderr) = finish(
        load,
        Duration::from_secs(60),
        "the load killed in its rebuild",
    );
    assert_eq!(code, Some(8), "{stderr}");
    assert_unfinished_message(&stderr, "killed in the rebuild");
    server.restart();
    // InnoDB's DDL is atomic: the ALTER TABLE the kill cut off is rolled back as it starts.
    assert_left_to_finish(&db, &before, "killed in the rebuild");
    let loaded = SEED_ROWS + ROWS as i64;
    let (code, out) = inrush(&["recover", "--to", &db.url]);
    assert_eq!(code, 0, "{out}");
    assert_whole(&db, &before, loaded, "after recover");
    let (code, stderr) = finish(spawn_load(&db, None), Duration::from_secs(120), "the rerun");
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("loaded nothing into"), "{stderr}");
    assert_whole(&db, &before, loaded, "after the rerun");
    assert_eq!(
        db.rows("SELECT COUNT(*) FROM inrush_load_commits"),
        ["0"],
        "the load's record is consumed"
    );
}
