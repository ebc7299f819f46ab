//! Faults in the middle of PostgreSQL loads: the server stopped as a crash would (`pg_ctl stop
//! -m immediate`) in each phase of a load, and a full disk (a tablespace on a small tmpfs)
//! during the rows and during the rebuild. After each, the server back up, the same command
//! run again and/or `inrush recover`, and then: every row of the input in the table exactly
//! once (or none, where the phase says so), every definition as before, the DDL journal empty,
//! no prepared transaction left, and the exit code and message the README documents for that
//! phase.
//!
//! One private server for this file, which the tests stop and start, so they take turns
//! ([`Server::lock`]). A load is held at the start of a phase by `INRUSH_TEST_PAUSE` (see
//! `inrush::report`): no timing hits "after the commit, before the rebuild" reliably.

use inrush_postgres::{PrivateServer, ServerOptions};
use inrush_testkit::Db;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

const SEED_ROWS: i64 = 2000;
const FIRST_LOADED_ID: usize = 100_000;
/// About 25 MB: the debug-built loader streams it for about a second, and its index builds
/// take long enough to be caught running.
const ROWS: usize = 1_000_000;

/// `t` with a primary key, two secondary indexes and a foreign key, all of which a load of
/// [`ROWS`] rows drops (but the primary key) and puts back; `{space}` is where its secondary
/// indexes live.
const SCHEMA: &str = "CREATE TABLE customers (id int PRIMARY KEY);
     INSERT INTO customers SELECT generate_series(1, 100);
     CREATE TABLE t (id int PRIMARY KEY,
                     customer int CONSTRAINT t_customer_fk REFERENCES customers (id),
                     qty int,
                     note text);
     CREATE INDEX t_customer_qty_idx ON t (customer, qty DESC) {space};
     CREATE INDEX t_lower_note_idx ON t (lower(note)) {space};
     INSERT INTO t SELECT g, g % 100 + 1, g % 7, 'Seed ' || g FROM generate_series(1, 2000) g;";

static SERVER: Mutex<Option<PrivateServer>> = Mutex::new(None);

extern "C" fn stop_server() {
    SERVER.lock().unwrap_or_else(|e| e.into_inner()).take();
}

/// This file's server, held for one test at a time.
struct Server(MutexGuard<'static, Option<PrivateServer>>);

impl Server {
    fn lock() -> Server {
        // A test that failed while holding the lock leaves the server as it was: usable.
        let mut slot = SERVER.lock().unwrap_or_else(|e| e.into_inner());
        if slot.is_none() {
            let server = PrivateServer::start(&ServerOptions {
                unsafe_fast: true,
                settings: vec![
                    ("max_prepared_transactions".into(), "8".into()),
                    // A crash must keep what was committed before it, as on a real server:
                    // `unsafe_fast` turns this off (fsync off is harmless, the OS survives).
                    ("synchronous_commit".into(), "on".into()),
                ],
                ..Default::default()
            })
            .expect("starting a private PostgreSQL (run the README's setup first)");
            *slot = Some(server);
            // SAFETY: registering a plain extern "C" function; it runs once at process exit.
            unsafe { libc::atexit(stop_server) };
        }
        let server = Server(slot);
        // Up, whatever the test before did to it.
        if server
            .get()
            .connect_options("postgres")
            .execute_blocking("SELECT 1")
            .is_err()
        {
            server.get().restart().expect("restarting the server");
        }
        server
    }

    fn get(&self) -> &PrivateServer {
        self.0.as_ref().expect("started")
    }

    /// A fresh database holding [`SCHEMA`], its secondary indexes in `space` (a tablespace) or
    /// the default one.
    fn db(&self, space: Option<&str>) -> Db {
        let server = self.get();
        let db = Db::fresh_on(
            &server.connect_options("postgres"),
            &server.conninfo("postgres"),
            "faults",
        );
        let space = space.map_or(String::new(), |s| format!("TABLESPACE {s}"));
        db.exec(&SCHEMA.replace("{space}", &space));
        db
    }

    fn crash(&self) {
        self.get().crash().expect("pg_ctl stop -m immediate");
    }

    fn restart(&self) {
        self.get().restart().expect("restarting after the crash");
    }
}

/// The input, written once for the whole file: `id,customer,qty,note` from [`FIRST_LOADED_ID`].
fn input() -> &'static Path {
    static INPUT: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    &INPUT
        .get_or_init(|| {
            use std::io::Write;
            let dir = tempfile::tempdir().expect("tempdir");
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

/// `inrush load` of the input into `t`, with `extra`; held at the start of phase `pause` (see
/// the module documentation) until `pause_file` is removed.
fn spawn_load(db: &Db, pause: Option<(&str, &Path)>, extra: &[&str]) -> Child {
    spawn_load_of(input(), db, pause, extra)
}

fn spawn_load_of(input: &Path, db: &Db, pause: Option<(&str, &Path)>, extra: &[&str]) -> Child {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_inrush"));
    cmd.args(["load", input.to_str().unwrap(), "--to", &db.conninfo])
        .args(["--table", "t", "--no-progress"])
        .args(extra)
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

fn inrush(args: &[&str]) -> (i32, String) {
    inrush_testkit::run(env!("CARGO_BIN_EXE_inrush"), args)
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

/// A pause file in a directory of its own.
fn pause_file() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("paused");
    (dir, file)
}

/// Holds the load at `phase`, then crashes the server and lets the load go on against it.
fn crash_at(server: &Server, db: &Db, phase: &str, extra: &[&str]) -> (Option<i32>, String) {
    let (_dir, file) = pause_file();
    let mut load = spawn_load(db, Some((phase, &file)), extra);
    wait_until(&mut load, &format!("the pause at {phase}"), || {
        file.exists()
    });
    server.crash();
    std::fs::remove_file(&file).expect("release the load");
    finish(
        load,
        Duration::from_secs(60),
        &format!("the load crashed at {phase}"),
    )
}

/// The table holds `rows` rows, each id once; every definition is `before`; nothing is left in
/// the journal or prepared.
fn assert_whole(db: &Db, before: &str, rows: i64, when: &str) {
    assert_eq!(
        db.text("SELECT count(*) || ' ' || count(DISTINCT id) FROM t"),
        format!("{rows} {rows}"),
        "{when}: rows"
    );
    assert_eq!(db.definitions(), before, "{when}: definitions");
    assert_eq!(db.journal_len(), 0, "{when}: the DDL journal");
    assert_eq!(
        db.int("SELECT count(*) FROM pg_prepared_xacts"),
        0,
        "{when}: prepared transactions"
    );
}

/// The same load run again: it exits 0 and the table holds the input once.
fn rerun_loads_once(db: &Db, before: &str, when: &str) {
    let (code, stderr) = finish(spawn_load(db, None, &[]), Duration::from_secs(120), when);
    assert_eq!(code, Some(0), "{when}: {stderr}");
    assert_whole(db, before, SEED_ROWS + ROWS as i64, when);
}

/// Stopped before its COPY (after the drop) or during it: nothing is committed, the exit says
/// the server failed and the definitions are in the journal; the same load run again puts
/// them back and loads every row once.
#[test]
fn a_crash_before_or_during_the_copy_commits_nothing_and_a_rerun_loads_once() {
    let server = Server::lock();
    for during in [false, true] {
        let db = server.db(None);
        let before = db.definitions();
        let (code, stderr) = match during {
            false => crash_at(&server, &db, "load", &[]),
            true => {
                let mut load = spawn_load(&db, None, &[]);
                wait_until(&mut load, "a COPY", || {
                    db.int("SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'COPY%' AND state = 'active'") > 0
                });
                server.crash();
                finish(
                    load,
                    Duration::from_secs(60),
                    "the load crashed during its COPY",
                )
            }
        };
        assert_eq!(code, Some(3), "during={during}: {stderr}");
        assert!(
            stderr.contains("could not be recreated") && stderr.contains("inrush recover"),
            "during={during}: the message names what is left and how to finish it:\n{stderr}"
        );
        server.restart();
        assert_eq!(
            db.int("SELECT count(*) FROM t"),
            SEED_ROWS,
            "nothing committed"
        );
        assert!(
            db.journal_len() > 0,
            "the dropped definitions are journaled"
        );
        rerun_loads_once(
            &db,
            &before,
            &format!("rerun after a crash (during={during})"),
        );
    }
}

/// Stopped after the commit, before the rebuild: exit 8, the rows stay; once the server is
/// back the same load loads nothing and puts everything back. With `inrush recover` first,
/// the load run after it loads nothing either.
#[test]
fn a_crash_between_the_commit_and_the_rebuild_exits_8_and_nothing_loads_twice() {
    let server = Server::lock();
    for recover_first in [false, true] {
        let db = server.db(None);
        let before = db.definitions();
        let (code, stderr) = crash_at(&server, &db, "indexes", &[]);
        assert_eq!(code, Some(8), "{stderr}");
        assert!(
            stderr.contains(&format!("committed {ROWS} rows"))
                && stderr.contains("inrush recover --to"),
            "{stderr}"
        );
        server.restart();
        let loaded = SEED_ROWS + ROWS as i64;
        assert_eq!(
            db.int("SELECT count(*) FROM t"),
            loaded,
            "the committed rows stay"
        );
        if recover_first {
            let (code, out) = inrush(&["recover", "--to", &db.conninfo, "--table", "t"]);
            assert_eq!(code, 0, "{out}");
            assert_eq!(
                db.definitions(),
                before,
                "recover puts every definition back"
            );
        }
        let (code, stderr) = finish(
            spawn_load(&db, None, &[]),
            Duration::from_secs(120),
            "rerun",
        );
        assert_eq!(code, Some(0), "{stderr}");
        assert!(stderr.contains("loaded nothing into"), "{stderr}");
        assert_whole(&db, &before, loaded, "after the rerun");
    }
}

/// A connection that streamed no row commits a transaction that wrote nothing, whose commit
/// record the server need not flush: a crash right after the commit may leave it aborted. That
/// must not make the rows that did commit look half committed (found by the cell above when
/// the adaptive connections left a stream idle).
#[test]
fn a_crash_after_the_commit_with_idle_connections_still_loads_nothing_twice() {
    let server = Server::lock();
    let db = server.db(None);
    let before = db.definitions();
    let dir = tempfile::tempdir().expect("tempdir");
    let small = dir.path().join("small.csv");
    let rows: String = (0..1000)
        .map(|i| {
            format!(
                "{},{},{},Small {i}\n",
                FIRST_LOADED_ID + i,
                i % 100 + 1,
                i % 7
            )
        })
        .collect();
    std::fs::write(&small, rows).expect("write the input");
    let extra = ["--connections", "4", "--index-threshold", "0"];
    let (_pause_dir, file) = pause_file();
    let mut load = spawn_load_of(&small, &db, Some(("indexes", &file)), &extra);
    wait_until(&mut load, "the pause before the rebuild", || file.exists());
    server.crash();
    std::fs::remove_file(&file).expect("release the load");
    let (code, stderr) = finish(load, Duration::from_secs(60), "the load crashed");
    assert_eq!(code, Some(8), "{stderr}");
    server.restart();
    let again = spawn_load_of(&small, &db, None, &extra);
    let (code, stderr) = finish(again, Duration::from_secs(60), "rerun");
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("loaded nothing into"), "{stderr}");
    assert_whole(&db, &before, SEED_ROWS + 1000, "after the rerun");
}

/// Stopped while it rebuilds an index: exit 8, and `inrush recover` then the same load finish
/// it, with every row once.
#[test]
fn a_crash_during_the_rebuild_exits_8_and_recover_finishes_it() {
    let server = Server::lock();
    let db = server.db(None);
    let before = db.definitions();
    let (_dir, file) = pause_file();
    let mut load = spawn_load(&db, Some(("indexes", &file)), &[]);
    wait_until(&mut load, "the pause before the rebuild", || file.exists());
    std::fs::remove_file(&file).expect("release the load");
    wait_until(&mut load, "an index build", || {
        db.int("SELECT count(*) FROM pg_stat_activity WHERE query ILIKE '%CREATE%INDEX%' AND state = 'active' AND pid <> pg_backend_pid()") > 0
    });
    server.crash();
    let (code, stderr) = finish(
        load,
        Duration::from_secs(60),
        "the load crashed in its rebuild",
    );
    assert_eq!(code, Some(8), "{stderr}");
    server.restart();
    let (code, out) = inrush(&["recover", "--to", &db.conninfo]);
    assert_eq!(code, 0, "{out}");
    let loaded = SEED_ROWS + ROWS as i64;
    assert_whole(&db, &before, loaded, "after recover");
    let (code, stderr) = finish(
        spawn_load(&db, None, &[]),
        Duration::from_secs(120),
        "rerun",
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("loaded nothing into"), "{stderr}");
    assert_whole(&db, &before, loaded, "after the rerun");
}

/// Stopped during ANALYZE, once everything is back: the load is done (exit 0) and its note
/// says what failed.
#[test]
fn a_crash_during_analyze_keeps_a_finished_load_and_says_so() {
    let server = Server::lock();
    let db = server.db(None);
    let before = db.definitions();
    let (code, stderr) = crash_at(&server, &db, "analyze", &["--after", "analyze"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains("note: ANALYZE") && stderr.contains("failed"),
        "{stderr}"
    );
    server.restart();
    assert_whole(
        &db,
        &before,
        SEED_ROWS + ROWS as i64,
        "after the crash in ANALYZE",
    );
}

/// A tablespace on a tmpfs of `megabytes`, owned by the server's user; unmounted (and its
/// tablespace dropped) on drop. `None` when this process cannot mount (not root).
struct SmallDisk {
    dir: tempfile::TempDir,
    name: String,
    base: inrush_postgres::ConnectOptions,
}

impl SmallDisk {
    fn new(server: &Server, megabytes: u32) -> Option<SmallDisk> {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={megabytes}M")])
            .args(["tmpfs", dir.path().to_str().unwrap()])
            .status();
        if !mounted.is_ok_and(|s| s.success()) {
            return None;
        }
        let owner = std::fs::metadata(server.get().data_dir()).expect("data dir");
        let chowned = std::os::unix::fs::chown(dir.path(), Some(owner.uid()), Some(owner.gid()));
        chowned.expect("chown the tmpfs to the server's user");
        let name = format!("small_{}", std::process::id());
        let base = server.get().connect_options("postgres");
        base.execute_blocking(&format!(
            "CREATE TABLESPACE {name} LOCATION '{}'",
            dir.path().display()
        ))
        .expect("CREATE TABLESPACE");
        Some(SmallDisk { dir, name, base })
    }

    fn grow(&self, megabytes: u32) {
        let status = Command::new("mount")
            .args(["-o", &format!("remount,size={megabytes}M")])
            .arg(self.dir.path())
            .status()
            .expect("mount -o remount");
        assert!(status.success(), "remounting the tmpfs larger");
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = self
            .base
            .execute_blocking(&format!("DROP TABLESPACE IF EXISTS {}", self.name));
        let _ = Command::new("umount").arg(self.dir.path()).status();
    }
}

/// The disk of the indexes fills while they are rebuilt after the commit: exit 8, the rows
/// stay; with room again the same load loads nothing and puts every index back in its
/// tablespace.
#[test]
fn a_full_disk_during_the_rebuild_exits_8_and_a_rerun_finishes_with_room() {
    let server = Server::lock();
    let Some(disk) = SmallDisk::new(&server, 4) else {
        eprintln!("skipped: mounting a tmpfs needs root");
        return;
    };
    let db = server.db(Some(&disk.name));
    let before = db.definitions();
    let (code, stderr) = finish(spawn_load(&db, None, &[]), Duration::from_secs(120), "load");
    assert_eq!(code, Some(8), "{stderr}");
    assert!(
        stderr.contains("No space left on device") || stderr.contains("could not extend"),
        "{stderr}"
    );
    let loaded = SEED_ROWS + ROWS as i64;
    assert_eq!(
        db.int("SELECT count(*) FROM t"),
        loaded,
        "the committed rows stay"
    );
    disk.grow(256);
    let (code, stderr) = finish(
        spawn_load(&db, None, &[]),
        Duration::from_secs(120),
        "rerun",
    );
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("loaded nothing into"), "{stderr}");
    assert_whole(&db, &before, loaded, "after the rerun with room");
    assert_eq!(
        db.int(&format!(
            "SELECT count(*) FROM pg_indexes WHERE tablename = 't' AND tablespace = '{}'",
            disk.name
        )),
        2,
        "both indexes back in their tablespace"
    );
    db.exec("DROP TABLE t");
}

/// The table's disk fills during the COPY: nothing is committed, every definition is back.
#[test]
fn a_full_disk_during_the_copy_commits_nothing() {
    let server = Server::lock();
    let Some(disk) = SmallDisk::new(&server, 8) else {
        eprintln!("skipped: mounting a tmpfs needs root");
        return;
    };
    let db = server.db(None);
    db.exec(&format!("ALTER TABLE t SET TABLESPACE {}", disk.name));
    let before = db.definitions();
    let (code, stderr) = finish(spawn_load(&db, None, &[]), Duration::from_secs(120), "load");
    assert_eq!(code, Some(3), "{stderr}");
    assert!(
        stderr.contains("No space left on device") || stderr.contains("could not extend"),
        "{stderr}"
    );
    assert_whole(&db, &before, SEED_ROWS, "after the full disk");
    db.exec("DROP TABLE t");
}
