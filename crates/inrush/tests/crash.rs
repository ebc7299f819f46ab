//! The real binary, stopped the hard way: a loader killed (SIGKILL) after it dropped secondary
//! indexes and foreign keys leaves their definitions in `inrush.ddl_journal`, and `inrush
//! recover` or the next `inrush load` of the table puts back exactly what was there; a COPY
//! connection terminated by the server fails the load with nothing committed and everything
//! restored.
//!
//! One private server for the whole file (stopped at exit), one database per test. The kill
//! moments are drawn from a seed (`INRUSH_CRASH_SEED`, printed by the test) so that a failure
//! can be replayed.

use inrush_postgres::{ConnectOptions, PrivateServer, ServerOptions};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

static SERVER: Mutex<Option<PrivateServer>> = Mutex::new(None);
static CONNINFO: OnceLock<String> = OnceLock::new();

extern "C" fn stop_server() {
    if let Ok(mut server) = SERVER.lock() {
        server.take();
    }
}

/// The `postgres` database of the file's private server, as a libpq conninfo.
fn base_conninfo() -> &'static str {
    CONNINFO.get_or_init(|| {
        let server = PrivateServer::start(&ServerOptions {
            unsafe_fast: true,
            ..Default::default()
        })
        .expect("starting a private PostgreSQL for the tests (run the README's setup first)");
        let conninfo = server.conninfo("postgres");
        *SERVER.lock().expect("server slot") = Some(server);
        // SAFETY: registering a plain extern "C" function; it runs once at process exit.
        unsafe { libc::atexit(stop_server) };
        conninfo
    })
}

/// Rows in `t` before any load (ids below [`FIRST_LOADED_ID`]).
const SEED_ROWS: i64 = 2000;
const FIRST_LOADED_ID: usize = 100_000;
/// Rows of the big input (about 50 MB): the debug-built loader streams them for about two
/// seconds on an idle 2-core machine, well past the latest kill moment.
const BIG_ROWS: usize = 2_000_000;

const SCHEMA: &str = "CREATE TABLE customers (id int PRIMARY KEY);
     INSERT INTO customers SELECT generate_series(1, 100);
     CREATE TABLE t (id int PRIMARY KEY,
                     customer int CONSTRAINT t_customer_fk REFERENCES customers (id) ON DELETE CASCADE,
                     qty int,
                     note text);
     CREATE INDEX t_customer_qty_idx ON t (customer, qty DESC) WHERE qty > 0;
     CREATE INDEX t_lower_note_idx ON t (lower(note));
     INSERT INTO t SELECT g, g % 100 + 1, g % 7, 'Seed ' || g FROM generate_series(1, 2000) g;";

/// What the load drops (secondary indexes and the foreign key): the names the journal holds.
const JOURNALED: &str = "t_customer_fk, t_customer_qty_idx, t_lower_note_idx";

/// The same tables, `t` empty: its primary key is journaled and dropped too.
const EMPTY_SCHEMA: &str = "CREATE TABLE customers (id int PRIMARY KEY);
     INSERT INTO customers SELECT generate_series(1, 100);
     CREATE TABLE t (id int PRIMARY KEY,
                     customer int CONSTRAINT t_customer_fk REFERENCES customers (id) ON DELETE CASCADE,
                     qty int,
                     note text);
     CREATE INDEX t_customer_qty_idx ON t (customer, qty DESC) WHERE qty > 0;
     CREATE INDEX t_lower_note_idx ON t (lower(note));";

/// A database of its own on the file's server.
struct Db {
    name: String,
    conninfo: String,
    target: ConnectOptions,
}

impl Db {
    fn fresh() -> Db {
        Db::with_schema(SCHEMA)
    }

    fn with_schema(schema: &str) -> Db {
        static N: AtomicU32 = AtomicU32::new(0);
        let name = format!(
            "crash_{}_{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        );
        let base = ConnectOptions::parse(base_conninfo()).expect("conninfo parses");
        base.execute_blocking(&format!("CREATE DATABASE {name}"))
            .expect("CREATE DATABASE");
        let conninfo = base_conninfo().replace("dbname=postgres", &format!("dbname={name}"));
        assert!(conninfo.contains(&name), "{conninfo}");
        let target = base.with_dbname(&name);
        target
            .execute_blocking(schema)
            .expect("creating the schema");
        Db {
            name,
            conninfo,
            target,
        }
    }

    fn text(&self, sql: &str) -> String {
        self.target
            .query_text_blocking(sql)
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
            .unwrap_or_default()
    }

    fn int(&self, sql: &str) -> i64 {
        let text = self.text(sql);
        text.parse()
            .unwrap_or_else(|_| panic!("{sql}: not a number: {text:?}"))
    }

    /// Every index of `t` (pg_indexes.indexdef) and every constraint of `t`
    /// (pg_get_constraintdef and whether it is validated), one per line, sorted.
    fn definitions(&self) -> String {
        self.text(
            "SELECT string_agg(d, E'\\n' ORDER BY d) FROM (
                 SELECT 'index ' || indexname || ': ' || indexdef AS d FROM pg_indexes
                  WHERE schemaname = 'public' AND tablename = 't'
                 UNION ALL
                 SELECT 'constraint ' || conname || ': ' || pg_get_constraintdef(oid) || ' valid=' || convalidated
                   FROM pg_constraint WHERE conrelid = 'public.t'::regclass) defs",
        )
    }

    fn journal_exists(&self) -> bool {
        self.text("SELECT to_regclass('inrush.ddl_journal') IS NOT NULL") == "t"
    }

    fn journal_len(&self) -> i64 {
        if !self.journal_exists() {
            return 0;
        }
        self.int("SELECT count(*) FROM inrush.ddl_journal")
    }

    /// The names of the journal's entries, sorted.
    fn journal(&self) -> String {
        if !self.journal_exists() {
            return String::new();
        }
        self.text("SELECT string_agg(name, ', ' ORDER BY name) FROM inrush.ddl_journal")
    }

    fn rows(&self) -> i64 {
        self.int("SELECT count(*) FROM t")
    }

    /// Secondary indexes and foreign keys of `t` still in place.
    fn droppable_left(&self) -> i64 {
        self.int(
            "SELECT (SELECT count(*) FROM pg_indexes WHERE schemaname = 'public' AND tablename = 't' AND indexname <> 't_pkey')
                  + (SELECT count(*) FROM pg_constraint WHERE conrelid = 'public.t'::regclass AND contype = 'f')",
        )
    }

    /// Backends of this database running a COPY (other than the one asking).
    fn copies_running(&self) -> i64 {
        self.int(&format!(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = '{}' AND query LIKE 'COPY%' AND pid <> pg_backend_pid()",
            self.name
        ))
    }
}

/// The big input, written once for the whole file: `id,customer,qty,note`, ids from
/// [`FIRST_LOADED_ID`], customers that exist.
fn big_input() -> &'static Path {
    static INPUT: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    &INPUT
        .get_or_init(|| {
            use std::io::Write;
            let dir = tempfile::tempdir().expect("tempdir");
            let path = dir.path().join("big.csv");
            let file = std::fs::File::create(&path).expect("create input");
            let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
            for i in FIRST_LOADED_ID..FIRST_LOADED_ID + BIG_ROWS {
                writeln!(out, "{i},{},{},Note {i}", i % 100 + 1, i % 7).expect("write input");
            }
            out.flush().expect("flush input");
            (dir, path)
        })
        .1
}

fn inrush(args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_inrush"));
    cmd.args(args).env("NO_COLOR", "1").env_remove("INRUSH_TO");
    cmd
}

/// Starts `inrush load` of the big input into `t`.
fn spawn_big_load(db: &Db) -> Child {
    inrush(&[
        "load",
        big_input().to_str().unwrap(),
        "--to",
        &db.conninfo,
        "--table",
        "t",
        "--no-progress",
    ])
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .expect("spawn inrush load")
}

/// Runs inrush to completion (at most `limit`), returning its exit status, stdout and stderr.
fn run(args: &[&str], limit: Duration) -> (ExitStatus, String, String) {
    let child = inrush(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn inrush");
    finish(child, limit, &args.join(" "))
}

/// Waits for `child` (at most `limit`, else kills it and fails), returning status and output.
fn finish(mut child: Child, limit: Duration, what: &str) -> (ExitStatus, String, String) {
    let deadline = Instant::now() + limit;
    loop {
        if child.try_wait().expect("try_wait").is_some() {
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().expect("wait");
            panic!(
                "`inrush {what}` still running after {limit:?} (killed it); stderr so far:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().expect("wait");
    (
        out.status,
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Polls `ready` every 10 ms until it holds; fails the test after `limit`, or if the loader
/// exits first.
fn wait_until(child: &mut Child, limit: Duration, what: &str, mut ready: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    loop {
        if ready() {
            return;
        }
        if let Some(status) = child.try_wait().expect("try_wait") {
            let mut stderr = String::new();
            if let Some(mut e) = child.stderr.take() {
                let _ = std::io::Read::read_to_string(&mut e, &mut stderr);
            }
            panic!("the loader exited ({status}) before {what}; stderr:\n{stderr}");
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("no {what} after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The definitions hold what the test is about (PostgreSQL 18 adds its NOT NULL constraints).
fn assert_has_every_object(definitions: &str) {
    for line in [
        "index t_pkey: CREATE UNIQUE INDEX t_pkey ON public.t USING btree (id)",
        "index t_customer_qty_idx: CREATE INDEX t_customer_qty_idx ON public.t USING btree (customer, qty DESC) WHERE (qty > 0)",
        "index t_lower_note_idx: CREATE INDEX t_lower_note_idx ON public.t USING btree (lower(note))",
        "constraint t_pkey: PRIMARY KEY (id) valid=true",
        "constraint t_customer_fk: FOREIGN KEY (customer) REFERENCES customers(id) ON DELETE CASCADE valid=true",
    ] {
        assert!(definitions.lines().any(|l| l == line), "{line:?} missing from:\n{definitions}");
    }
}

/// Kills the loader with SIGKILL once it has journaled and dropped the indexes and foreign key,
/// `delay` later; fails if the loader had already exited by then (the kill must hit a load in
/// flight). Returns with the process reaped.
fn kill_after_drop(db: &Db, delay: Duration) {
    let mut child = spawn_big_load(db);
    wait_until(
        &mut child,
        Duration::from_secs(30),
        "journal entries and dropped indexes",
        || db.journal_len() == 3 && db.droppable_left() == 0,
    );
    std::thread::sleep(delay);
    if let Some(status) = child.try_wait().expect("try_wait") {
        panic!("the loader finished ({status}) before the kill {delay:?} after the drop: make the input bigger");
    }
    // SAFETY: sending a signal to our own child process, which has not been reaped yet.
    let killed = unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGKILL) };
    assert_eq!(killed, 0, "kill: {}", std::io::Error::last_os_error());
    let status = child.wait().expect("wait");
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(libc::SIGKILL), "{status}");
}

/// Kill moments after the drop, drawn from a seed (splitmix64), between 0 and 600 ms.
fn kill_delays(count: usize) -> Vec<Duration> {
    let seed: u64 = std::env::var("INRUSH_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_240_611);
    eprintln!("kill delays from INRUSH_CRASH_SEED={seed}");
    let mut state = seed;
    (0..count)
        .map(|_| {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            Duration::from_millis(z % 600)
        })
        .collect()
}

#[test]
fn killed_loader_leaves_a_journal_that_recover_restores() {
    for delay in kill_delays(3) {
        let db = Db::fresh();
        let before = db.definitions();
        assert_has_every_object(&before);
        kill_after_drop(&db, delay);

        assert_eq!(
            db.rows(),
            SEED_ROWS,
            "killed {delay:?} after the drop, rows of the load are visible: either the kill came after the \
             commit (input too small for this machine) or rows were committed before all COPYs finished"
        );
        assert_eq!(db.journal(), JOURNALED, "killed {delay:?} after the drop");
        assert_eq!(db.droppable_left(), 0, "killed {delay:?} after the drop");
        assert_ne!(db.definitions(), before);

        let (status, _, stderr) = run(&["recover", "--to", &db.conninfo], Duration::from_secs(30));
        assert!(
            status.success(),
            "recover after a kill {delay:?} after the drop: {status}\n{stderr}"
        );
        for name in ["t_customer_qty_idx", "t_lower_note_idx", "t_customer_fk"] {
            assert!(
                stderr.contains(name),
                "recover does not say it recreated {name}:\n{stderr}"
            );
        }
        assert_eq!(
            db.definitions(),
            before,
            "killed {delay:?} after the drop, then recovered"
        );
        assert_eq!(db.journal_len(), 0);
        assert_eq!(db.rows(), SEED_ROWS);

        // Nothing left to do: a second recover says so and changes nothing.
        let (status, _, stderr) = run(&["recover", "--to", &db.conninfo], Duration::from_secs(30));
        assert!(status.success(), "{status}\n{stderr}");
        assert!(stderr.contains("nothing to recover"), "{stderr}");
        assert_eq!(db.definitions(), before);
    }
}

#[test]
fn the_next_load_restores_what_a_killed_loader_dropped() {
    let db = Db::fresh();
    let before = db.definitions();
    assert_has_every_object(&before);
    kill_after_drop(&db, kill_delays(1)[0]);
    assert_eq!(db.rows(), SEED_ROWS);
    assert_eq!(db.journal(), JOURNALED);

    let dir = tempfile::tempdir().expect("tempdir");
    let one_row = dir.path().join("one.csv");
    std::fs::write(&one_row, "5000000,42,3,Late row\n").expect("write input");
    let (status, _, stderr) = run(
        &[
            "load",
            one_row.to_str().unwrap(),
            "--to",
            &db.conninfo,
            "--table",
            "t",
            "--keep-indexes",
            "--no-progress",
        ],
        Duration::from_secs(30),
    );
    assert!(status.success(), "{status}\n{stderr}");
    assert_eq!(
        db.definitions(),
        before,
        "the next load recreates what the journal holds"
    );
    assert_eq!(db.journal_len(), 0);
    assert_eq!(db.rows(), SEED_ROWS + 1);
    assert_eq!(
        db.text("SELECT t::text FROM t WHERE id = 5000000"),
        "(5000000,42,3,\"Late row\")"
    );
}

#[test]
fn a_terminated_connection_fails_the_load_and_restores_everything() {
    let db = Db::fresh();
    let before = db.definitions();
    assert_has_every_object(&before);
    let mut child = spawn_big_load(&db);
    wait_until(&mut child, Duration::from_secs(30), "COPY running", || {
        db.copies_running() > 0
    });
    let terminated = db.text(&format!(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
          WHERE datname = '{}' AND query LIKE 'COPY%' AND pid <> pg_backend_pid() LIMIT 1",
        db.name
    ));
    assert_eq!(terminated, "t", "a COPY backend was terminated");

    let (status, _, stderr) = finish(
        child,
        Duration::from_secs(60),
        "load (one COPY connection terminated)",
    );
    assert_eq!(
        status.code(),
        Some(3),
        "a lost connection is a server problem (exit 3):\n{stderr}"
    );
    let lower = stderr.to_lowercase();
    assert!(
        lower.contains("copy") && (lower.contains("connection") || lower.contains("terminat")),
        "the message names the COPY and the lost connection:\n{stderr}"
    );
    assert_eq!(
        db.rows(),
        SEED_ROWS,
        "no row of the failed load is committed"
    );
    assert_eq!(
        db.definitions(),
        before,
        "every index and constraint is back as it was"
    );
    assert_eq!(db.journal_len(), 0);
}

/// A kill that cannot come too late: the input is standard input, held open, so the load cannot
/// have reached its commit. Into an empty table the primary key is journaled and dropped too,
/// and must come back as it was: the same index, the same constraint.
#[test]
fn killed_stdin_loader_into_an_empty_table_gets_its_primary_key_back() {
    use std::io::Write;
    let db = Db::with_schema(EMPTY_SCHEMA);
    let before = db.definitions();
    assert_has_every_object(&before);
    let mut child = inrush(&[
        "load",
        "-",
        "--to",
        &db.conninfo,
        "--table",
        "t",
        "--no-progress",
    ])
    .stdin(Stdio::piped())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .expect("spawn inrush load -");
    let mut stdin = child.stdin.take().expect("stdin");
    // Far more than one block (1 MB), so chunks reach the COPY connections; a pipe this side
    // of the loader's buffers may block, so a thread writes.
    let writer = std::thread::spawn(move || {
        let mut batch = String::new();
        for i in 1..=100_000 {
            batch.push_str(&format!("{i},{},{},Note {i}\n", i % 100 + 1, i % 7));
        }
        // A broken pipe once the loader is killed is expected.
        let _ = stdin
            .write_all(batch.as_bytes())
            .and_then(|()| stdin.flush());
        stdin // held open until joined: the input never ends while the loader runs
    });
    wait_until(
        &mut child,
        Duration::from_secs(30),
        "the primary key journaled and dropped and COPY running",
        || {
            db.journal_len() == 4
            && db.int("SELECT count(*) FROM pg_indexes WHERE schemaname = 'public' AND tablename = 't'") == 0
            && db.copies_running() > 0
        },
    );
    // SAFETY: sending a signal to our own child process, which has not been reaped yet.
    assert_eq!(
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGKILL) },
        0
    );
    let status = child.wait().expect("wait");
    drop(writer.join().expect("writer thread"));
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(libc::SIGKILL), "{status}");

    assert_eq!(db.rows(), 0);
    assert_eq!(db.journal(), format!("{JOURNALED}, t_pkey"));
    let (status, _, stderr) = run(&["recover", "--to", &db.conninfo], Duration::from_secs(30));
    assert!(status.success(), "{status}\n{stderr}");
    assert_eq!(
        db.definitions(),
        before,
        "the primary key, indexes and foreign key are back as they were"
    );
    assert_eq!(db.journal_len(), 0);
}

/// A COPY cancelled from outside (`pg_cancel_backend`, or a `statement_timeout`) is a server-side
/// failure, not a bad row: exit 3, as for a terminated connection.
#[test]
fn a_cancelled_copy_is_a_server_problem_not_bad_input() {
    let db = Db::fresh();
    let before = db.definitions();
    let mut child = spawn_big_load(&db);
    wait_until(&mut child, Duration::from_secs(30), "COPY running", || {
        db.copies_running() > 0
    });
    let cancelled = db.text(&format!(
        "SELECT pg_cancel_backend(pid) FROM pg_stat_activity
          WHERE datname = '{}' AND query LIKE 'COPY%' AND pid <> pg_backend_pid() LIMIT 1",
        db.name
    ));
    assert_eq!(cancelled, "t", "a COPY was cancelled");
    let (status, _, stderr) = finish(child, Duration::from_secs(60), "load (one COPY cancelled)");
    assert_eq!(
        db.rows(),
        SEED_ROWS,
        "no row of the failed load is committed"
    );
    assert_eq!(db.definitions(), before);
    assert_eq!(db.journal_len(), 0);
    assert_eq!(
        status.code(),
        Some(3),
        "a cancelled statement is a server problem, not bad input:\n{stderr}"
    );
    assert!(
        !stderr.contains(".csv:"),
        "no input line is to blame:\n{stderr}"
    );
}
