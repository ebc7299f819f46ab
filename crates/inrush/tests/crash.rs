//! The real binary, stopped the hard way: a loader killed (SIGKILL) after it dropped secondary
//! indexes and foreign keys leaves their definitions in `inrush.ddl_journal`, and `inrush
//! recover` or the next `inrush load` of the table puts back exactly what was there; a COPY
//! connection terminated by the server fails the load with nothing committed and everything
//! restored. A `--resume` load killed at any moment, again and again, or cut off by the server,
//! is finished by the same command run once more, with every input row in the table exactly once;
//! routed to foreign partitions, killed between a block's commits on the shards and on the
//! target, with every row once on its own server.
//!
//! One private server for the whole file (stopped at exit), one database per test. The kill
//! moments are drawn from a seed (`INRUSH_CRASH_SEED`, printed by the test) so that a failure
//! can be replayed.

use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};

use std::sync::OnceLock;
use std::time::{Duration, Instant};

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

/// A database of its own on the tests' server, holding a schema, with what these tests ask of it.
struct Db(inrush_testkit::Db);

impl std::ops::Deref for Db {
    type Target = inrush_testkit::Db;
    fn deref(&self) -> &inrush_testkit::Db {
        &self.0
    }
}

impl Db {
    fn fresh() -> Db {
        Db::with_schema(SCHEMA)
    }

    fn with_schema(schema: &str) -> Db {
        let db = inrush_testkit::Db::fresh("crash");
        db.exec(schema);
        Db(db)
    }

    /// The names of the journal's entries, sorted.
    fn journal(&self) -> String {
        if self.journal_len() == 0 {
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

    /// Sessions of this database other than the one asking (a killed loader's backends stay
    /// until they notice the closed socket).
    fn sessions(&self) -> i64 {
        self.int(&format!(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = '{}' AND backend_type = 'client backend' AND pid <> pg_backend_pid()",
            self.name
        ))
    }

    /// Rows in `t` and the rows `inrush.load_ledger` says are committed into it, read in one
    /// snapshot.
    fn rows_and_ledger_rows(&self) -> (i64, i64) {
        if self.text("SELECT to_regclass('inrush.load_ledger') IS NOT NULL") != "t" {
            return (self.rows(), 0);
        }
        let both = self.text(
            "SELECT (SELECT count(*) FROM t) || ' ' || (SELECT coalesce(sum(rows), 0) FROM inrush.load_ledger
                                                       WHERE table_oid = 'public.t'::regclass)",
        );
        let (rows, ledger) = both.split_once(' ').expect("two numbers");
        (
            rows.parse().expect("rows"),
            ledger.parse().expect("ledger rows"),
        )
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

/// `inrush load -` into `table`, reading whatever the test writes to its standard input.
fn spawn_stdin_load(db: &Db, table: &str, extra: &[&str]) -> Child {
    let mut args = vec![
        "load",
        "-",
        "--to",
        &db.conninfo,
        "--table",
        table,
        "--no-progress",
    ];
    args.extend_from_slice(extra);
    inrush(&args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn inrush load -")
}

/// Writes `batch` to the loader's standard input from a thread (a pipe this side of the
/// loader's buffers may block), and holds the input open until the thread is joined, so it
/// never ends while the loader runs. A broken pipe once the loader is killed is expected.
fn feed_and_hold(child: &mut Child, batch: String) -> std::thread::JoinHandle<ChildStdin> {
    use std::io::Write;
    let mut stdin = child.stdin.take().expect("stdin");
    std::thread::spawn(move || {
        let _ = stdin
            .write_all(batch.as_bytes())
            .and_then(|()| stdin.flush());
        stdin
    })
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
        "index t_pkey: CREATE UNIQUE INDEX t_pkey ON public.t USING btree (id) valid=true",
        "index t_customer_qty_idx: CREATE INDEX t_customer_qty_idx ON public.t USING btree (customer, qty DESC) WHERE (qty > 0) valid=true",
        "index t_lower_note_idx: CREATE INDEX t_lower_note_idx ON public.t USING btree (lower(note)) valid=true",
        "constraint t t_pkey: PRIMARY KEY (id) valid=true",
        "constraint t t_customer_fk: FOREIGN KEY (customer) REFERENCES customers(id) ON DELETE CASCADE valid=true",
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
    let status = sigkill(child);
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(status.signal(), Some(libc::SIGKILL), "{status}");
}

/// Sends SIGKILL to `child` and reaps it. A child that has exited on its own but is not reaped
/// yet takes the signal without effect: its own exit status is returned.
fn sigkill(mut child: Child) -> ExitStatus {
    // SAFETY: sending a signal to our own child process, which has not been reaped yet.
    let killed = unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGKILL) };
    assert_eq!(killed, 0, "kill: {}", std::io::Error::last_os_error());
    child.wait().expect("wait")
}

/// Kill moments after the drop, drawn from a seed (splitmix64), between 0 and 600 ms.
fn kill_delays(count: usize) -> Vec<Duration> {
    seeded_delays(count, Duration::from_millis(600))
}

/// `count` delays below `within`, drawn from `INRUSH_CRASH_SEED` (splitmix64).
fn seeded_delays(count: usize, within: Duration) -> Vec<Duration> {
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
            Duration::from_millis(z % within.as_millis().max(1) as u64)
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
        // The same, for a script.
        let args = ["recover", "--to", &db.conninfo, "--json"];
        let (status, stdout, _) = run(&args, Duration::from_secs(30));
        assert!(status.success(), "{status}");
        let said: serde_json::Value = serde_json::from_str(&stdout).expect("one JSON object");
        assert_eq!(said["recreated"], serde_json::json!([]), "{stdout}");
        assert_eq!(said["left_alone"], serde_json::json!([]), "{stdout}");
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
          WHERE datname = '{}' AND query LIKE 'COPY%' AND state = 'active' AND pid <> pg_backend_pid() LIMIT 1",
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
    let db = Db::with_schema(EMPTY_SCHEMA);
    let before = db.definitions();
    assert_has_every_object(&before);
    let mut child = spawn_stdin_load(&db, "t", &[]);
    // Far more than one block (1 MB), so chunks reach the COPY connections.
    let batch = (1..=100_000)
        .map(|i| format!("{i},{},{},Note {i}\n", i % 100 + 1, i % 7))
        .collect();
    let writer = feed_and_hold(&mut child, batch);
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
    let status = sigkill(child);
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

/// Names that break SQL built naively (both quote characters, a semicolon, a comment, `$$`, a
/// backslash, Unicode, a trailing space) go through the journal intact: a loader killed after it
/// dropped such a table's keys, in such a schema, leaves a journal that `inrush recover` puts
/// back exactly.
#[test]
fn odd_names_survive_the_journal_and_recover() {
    let schema = r#""s""; -- $$ \ ü""#;
    let table = format!(r#"{schema}."t'x"" ; ""#);
    let db = Db::with_schema(&format!(
        r#"CREATE SCHEMA {schema};
           CREATE TABLE {table} (id int PRIMARY KEY, "n""; $$" text);
           CREATE INDEX "i""; -- ü" ON {table} ("n""; $$");"#
    ));
    let definitions = || {
        db.text(
            r#"SELECT string_agg(indexname || ': ' || indexdef, E'\n' ORDER BY indexname)
                 FROM pg_indexes WHERE schemaname = 's"; -- $$ \ ü'"#,
        )
    };
    let before = definitions();
    assert_eq!(before.lines().count(), 2, "{before}");
    let mut child = spawn_stdin_load(&db, &table, &[]);
    let writer = feed_and_hold(
        &mut child,
        (1..=100_000).map(|i| format!("{i},n {i}\n")).collect(),
    );
    wait_until(
        &mut child,
        Duration::from_secs(30),
        "both indexes journaled and dropped and COPY running",
        || db.journal_len() == 2 && definitions().is_empty() && db.copies_running() > 0,
    );
    sigkill(child);
    drop(writer.join().expect("writer thread"));
    let (status, _, stderr) = run(&["recover", "--to", &db.conninfo], Duration::from_secs(30));
    assert!(status.success(), "{status}\n{stderr}");
    assert_eq!(definitions(), before, "the keys are back as they were");
    assert_eq!(db.journal_len(), 0);
}

/// A COPY cancelled from outside (`pg_cancel_backend`, or a `statement_timeout`) is a server-side
/// failure, not a bad row: exit 3, as for a terminated connection.
#[test]
fn a_cancelled_copy_is_a_server_problem_not_bad_input() {
    use std::io::Write;
    let db = Db::fresh();
    let before = db.definitions();
    // From standard input held open, so the COPY is certainly still running when it is
    // cancelled (a file load can finish its COPY just as the cancel arrives).
    // One connection: PostgreSQL acts on a cancel only when the COPY reads another row, so a
    // second connection that happened to get no more rows would finish and commit.
    let mut child = spawn_stdin_load(&db, "t", &["--connections", "1"]);
    let mut stdin = child.stdin.take().expect("stdin");
    let rows = |from: usize| -> String {
        (from..from + 100_000)
            .map(|i| format!("{i},{},{},Note {i}\n", i % 100 + 1, i % 7))
            .collect()
    };
    let first = rows(FIRST_LOADED_ID);
    let writer = std::thread::spawn(move || {
        let _ = stdin
            .write_all(first.as_bytes())
            .and_then(|()| stdin.flush());
        stdin
    });
    wait_until(&mut child, Duration::from_secs(30), "COPY running", || {
        db.copies_running() > 0
    });
    let cancelled = db.text(&format!(
        "SELECT count(pg_cancel_backend(pid)) FROM pg_stat_activity
          WHERE datname = '{}' AND query LIKE 'COPY%' AND state = 'active' AND pid <> pg_backend_pid()",
        db.name
    ));
    assert_ne!(cancelled, "0", "a COPY was cancelled");
    // A backend waiting for COPY data acts on the cancel when more data comes.
    let mut stdin = writer.join().expect("writer");
    let more = rows(FIRST_LOADED_ID + 100_000);
    let _ = stdin
        .write_all(more.as_bytes())
        .and_then(|()| stdin.flush());
    drop(stdin);
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

const RESUME_SCHEMA: &str = "CREATE TABLE t (id bigint, note text)";
/// Rows of the `--resume` input (about 36 MB): the debug-built loader commits them block by
/// block in one to two seconds on an idle 2-core machine.
const RESUME_ROWS: i64 = 2_000_000;
/// Blocks of 64 kB: about 550 of them, each its own transaction with its ledger row.
const RESUME_BLOCK_SIZE: &str = "65536";
/// Kills of one `--resume` load before it is left to finish.
const RESUME_KILLS: usize = 24;

/// The `--resume` input, written once for the whole file: `id,note` with unique ids from 1,
/// notes plain, NULL, empty, or quoted with commas, doubled quotes and line breaks (so a block
/// cut must know whether a line break is inside quotes).
fn resume_input() -> &'static Path {
    static INPUT: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    &INPUT
        .get_or_init(|| {
            use std::io::Write;
            let dir = tempfile::tempdir().expect("tempdir");
            let path = dir.path().join("resume.csv");
            let file = std::fs::File::create(&path).expect("create input");
            let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
            for id in 1..=RESUME_ROWS {
                match id % 10 {
                    3 => writeln!(out, "{id},\"three\nlines, {id}\nend\""),
                    5 => writeln!(out, "{id},\"say \"\"hi\"\", {id}\""),
                    7 if id % 100 == 7 => writeln!(out, "{id},"),
                    7 => writeln!(out, "{id},\"\""),
                    _ => writeln!(out, "{id},n{id}"),
                }
                .expect("write input");
            }
            out.flush().expect("flush input");
            (dir, path)
        })
        .1
}

/// Starts `inrush load <resume input> --table t --resume`: the same command every time.
fn spawn_resume_load(db: &Db) -> Child {
    spawn_resume_load_of(db, resume_input(), &[])
}

/// Starts `inrush load <input> --table t --resume`, with `extra` options.
fn spawn_resume_load_of(db: &Db, input: &Path, extra: &[&str]) -> Child {
    let mut args = vec![
        "load",
        input.to_str().unwrap(),
        "--to",
        &db.conninfo,
        "--table",
        "t",
        "--resume",
        "--block-size",
        RESUME_BLOCK_SIZE,
        "--no-progress",
    ];
    args.extend_from_slice(extra);
    inrush(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn inrush load --resume")
}

/// Waits (at most 10 s) until the server has no session of a dead loader left: a backend
/// finishes what it had received (maybe a COMMIT) before it notices the closed socket.
fn wait_for_sessions_to_end(db: &Db) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let sessions = db.sessions();
        if sessions == 0 {
            return;
        }
        if Instant::now() > deadline {
            panic!("{sessions} sessions of the dead loader still on the server after 10 s");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Every row in `t` is committed with its block's ledger row: `t` holds exactly the rows the
/// ledger counts (a block loaded twice, or rows without their ledger row, would differ).
/// Returns that count.
fn assert_rows_match_ledger(db: &Db, what: &str) -> i64 {
    let (rows, ledger) = db.rows_and_ledger_rows();
    assert_eq!(
        rows, ledger,
        "{what}: t holds {rows} rows, inrush.load_ledger counts {ledger}"
    );
    rows
}

/// `t` holds exactly the rows of the resume input, each once: compared row for row with the
/// server's own COPY of the same file.
fn assert_holds_resume_input(db: &Db, what: &str) {
    use std::io::Write;
    db.target
        .execute_blocking(
            "DROP TABLE IF EXISTS expected; CREATE TABLE expected (id bigint, note text)",
        )
        .expect("creating the expected table");
    let mut client = db.target.connect_blocking().expect("connect");
    let mut writer = client
        .copy_in("COPY expected FROM STDIN (FORMAT csv)")
        .expect("COPY expected");
    let mut file = std::fs::File::open(resume_input()).expect("open input");
    std::io::copy(&mut file, &mut writer).expect("sending the input to COPY");
    writer.flush().expect("flush COPY");
    let copied = writer.finish().expect("server COPY of the input");
    assert_eq!(copied, RESUME_ROWS as u64, "the server's COPY of the input");
    assert_eq!(
        db.text(
            "SELECT (SELECT count(*) FROM t) || ' rows, ' || (SELECT count(DISTINCT id) FROM t) || ' distinct ids, '
                 || (SELECT count(*) FROM (SELECT * FROM t EXCEPT ALL SELECT * FROM expected) extra) || ' not in the input, '
                 || (SELECT count(*) FROM (SELECT * FROM expected EXCEPT ALL SELECT * FROM t) missing) || ' missing'"
        ),
        format!("{RESUME_ROWS} rows, {RESUME_ROWS} distinct ids, 0 not in the input, 0 missing"),
        "{what}"
    );
}

#[test]
fn resume_after_sigkill_at_seeded_points_loads_every_row_exactly_once() {
    use std::os::unix::process::ExitStatusExt;
    // How long one whole load takes here (into a table of its own): the kills land within an
    // eighth of that after each start, so that each run (after starting up: connecting, reading
    // the catalog and the ledger) commits a few percent of the input at most, and the kills
    // find the table in many states, from empty to complete.
    let scratch = Db::with_schema(RESUME_SCHEMA);
    resume_input();
    let started = Instant::now();
    let (status, _, stderr) = finish(
        spawn_resume_load(&scratch),
        Duration::from_secs(120),
        "load --resume, never killed",
    );
    assert!(status.success(), "a load never killed: {status}\n{stderr}");
    let whole = started.elapsed();
    assert_eq!(scratch.rows(), RESUME_ROWS, "a load never killed");
    let within = whole / 8;
    eprintln!("one whole load: {whole:?}; kills within {within:?} of each start");

    let db = Db::with_schema(RESUME_SCHEMA);
    let started = Instant::now();
    let mut partial_states = std::collections::BTreeSet::new();
    for (kill, delay) in seeded_delays(RESUME_KILLS, within).into_iter().enumerate() {
        let mut child = spawn_resume_load(&db);
        std::thread::sleep(delay);
        let outcome = match child.try_wait().expect("try_wait") {
            Some(_) => {
                let (status, _, stderr) = finish(child, Duration::from_secs(1), "load --resume");
                assert!(
                    status.success(),
                    "kill {kill}: the run finished before the kill {delay:?} after its start, with {status}:\n{stderr}"
                );
                "finished first"
            }
            None => {
                let status = sigkill(child);
                match status.signal() {
                    Some(libc::SIGKILL) => "killed",
                    _ if status.success() => "finished first",
                    _ => panic!(
                        "kill {kill} {delay:?} after the start: the run had failed first: {status}"
                    ),
                }
            }
        };
        wait_for_sessions_to_end(&db);
        let committed = assert_rows_match_ledger(
            &db,
            &format!("after kill {kill} ({outcome}, {delay:?} after the start)"),
        );
        eprintln!("kill {kill}: {outcome} {delay:?} after the start; {committed} rows committed");
        if 0 < committed && committed < RESUME_ROWS {
            partial_states.insert(committed);
        }
    }
    assert!(
        partial_states.len() >= 5,
        "only {} kills found the load partly committed ({partial_states:?}): the kills come too early or too late for this machine",
        partial_states.len()
    );

    let (status, _, stderr) = finish(
        spawn_resume_load(&db),
        Duration::from_secs(120),
        "load --resume after the kills",
    );
    assert!(
        status.success(),
        "the run after {RESUME_KILLS} kills: {status}\n{stderr}"
    );
    assert_rows_match_ledger(&db, "after the last run");
    assert_holds_resume_input(
        &db,
        &format!("after {RESUME_KILLS} kills and one run to the end"),
    );
    eprintln!(
        "{RESUME_KILLS} kills and the last run: {:?}",
        started.elapsed()
    );
}

/// Terminates (through the `postgres` database, so that it works while `db` refuses
/// connections) every COPY session of a `--resume` load into `db`: each runs BEGIN, COPY, the
/// ledger INSERT and COMMIT, block after block, and pg_stat_activity shows the last of them
/// between statements too. Returns how many were terminated.
fn terminate_copy_sessions(db: &Db) -> i64 {
    let base = inrush_testkit::server().0.clone();
    let sql = format!(
        "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity
          WHERE datname = '{}' AND backend_type = 'client backend'
            AND (query LIKE 'COPY%' OR query LIKE 'INSERT INTO inrush.load_ledger%' OR query IN ('BEGIN', 'COMMIT'))",
        db.name
    );
    let text = base
        .query_text_blocking(&sql)
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .unwrap_or_default();
    text.parse()
        .unwrap_or_else(|_| panic!("{sql}: not a number: {text:?}"))
}

/// Starts a `--resume` load into `db` and terminates its COPY sessions once blocks are
/// committed; returns the loader and how many sessions were terminated.
fn start_resume_load_and_terminate_its_copies(
    db: &Db,
    before_terminating: impl FnOnce(),
) -> (Child, i64) {
    let mut child = spawn_resume_load(db);
    wait_until(
        &mut child,
        Duration::from_secs(30),
        "blocks committed in inrush.load_ledger",
        || db.rows_and_ledger_rows().1 > 0,
    );
    before_terminating();
    let mut terminated = 0;
    wait_until(
        &mut child,
        Duration::from_secs(30),
        "COPY session to terminate",
        || {
            terminated = terminate_copy_sessions(db);
            terminated > 0
        },
    );
    (child, terminated)
}

/// README: with `--resume`, lost connections are retried with backoff. Every COPY connection
/// terminated mid-load: each retries its block on a new connection and the load completes,
/// every row once.
#[test]
fn resume_retries_terminated_copy_connections() {
    let db = Db::with_schema(RESUME_SCHEMA);
    let (child, terminated) = start_resume_load_and_terminate_its_copies(&db, || {});
    let (status, _, stderr) = finish(
        child,
        Duration::from_secs(60),
        "load --resume (its COPY connections terminated)",
    );
    assert!(
        status.success(),
        "{terminated} COPY connections terminated, then retried: {status}\n{stderr}"
    );
    assert!(
        stderr.contains("retrying (1/"),
        "the loader says it retries:\n{stderr}"
    );
    wait_for_sessions_to_end(&db);
    assert_rows_match_ledger(&db, "after the retried load");
    assert_holds_resume_input(
        &db,
        &format!("{terminated} COPY connections terminated and retried"),
    );
}

/// The connections lost for longer than the retries last (the database refuses connections
/// meanwhile): the loader gives up with exit 3, keeping the blocks it committed; once the
/// database is back, the same command loads the rest, every row once.
#[test]
fn resume_after_a_terminated_connection() {
    let db = Db::with_schema(RESUME_SCHEMA);
    let base = inrush_testkit::server().0.clone();
    let allow = |yes: bool| {
        base.execute_blocking(&format!(
            "ALTER DATABASE {} WITH ALLOW_CONNECTIONS {yes}",
            db.name
        ))
        .expect("ALTER DATABASE ... ALLOW_CONNECTIONS")
    };
    let (child, terminated) = start_resume_load_and_terminate_its_copies(&db, || allow(false));
    // The retries last about 13 s (0.2 s doubling, 6 tries).
    let (status, _, stderr) = finish(
        child,
        Duration::from_secs(60),
        "load --resume (its COPY connections terminated, the database refusing new ones)",
    );
    allow(true);
    assert_eq!(
        status.code(),
        Some(3),
        "{terminated} COPY connections terminated and no new one possible: a lost connection is a server problem (exit 3):\n{stderr}"
    );
    assert!(
        stderr.contains("retrying (6/6)"),
        "the loader retried before giving up:\n{stderr}"
    );
    wait_for_sessions_to_end(&db);
    let committed = assert_rows_match_ledger(&db, "after the terminated connections");
    assert!(
        0 < committed && committed < RESUME_ROWS,
        "{committed} rows committed before the connections were terminated: expected some, not all"
    );

    let (status, _, stderr) = finish(
        spawn_resume_load(&db),
        Duration::from_secs(120),
        "load --resume after the terminated connections",
    );
    assert!(
        status.success(),
        "the same command again: {status}\n{stderr}"
    );
    assert_rows_match_ledger(&db, "after the second run");
    assert_holds_resume_input(
        &db,
        &format!("{committed} rows committed before the connections were terminated, the rest by the second run"),
    );
}

// Several processes loading one input together (`--resume` on several hosts): each takes the
// blocks no other holds, a block is committed once whichever process dies, and `inrush status`
// tells a running load from an interrupted or a complete one.

/// `inrush status --to db --table t --json`: the one load in the ledger (null before it is
/// registered).
fn status_json(db: &Db) -> serde_json::Value {
    let (status, stdout, stderr) = run(
        &["status", "--to", &db.conninfo, "--table", "t", "--json"],
        Duration::from_secs(30),
    );
    assert!(status.success(), "inrush status: {status}\n{stderr}");
    let loads: serde_json::Value = serde_json::from_str(&stdout).expect("status JSON");
    assert!(loads.as_array().map(Vec::len) <= Some(1), "{stdout}");
    loads[0].clone()
}

/// Blocks committed in the ledger.
fn ledger_blocks(db: &Db) -> i64 {
    db.int("SELECT count(*) FROM inrush.load_ledger")
}

/// Starts `count` loaders of `input` at once, each with `extra(i)` options.
fn spawn_cooperating(
    db: &Db,
    input: &Path,
    count: usize,
    extra: impl Fn(usize) -> Vec<String>,
) -> Vec<Child> {
    (0..count)
        .map(|i| {
            let extra = extra(i);
            let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
            spawn_resume_load_of(db, input, &extra)
        })
        .collect()
}

/// The `--json` summaries of loaders that must all succeed (exit 6: with rows in the reject
/// file).
fn summaries(children: Vec<Child>, what: &str) -> Vec<serde_json::Value> {
    children
        .into_iter()
        .enumerate()
        .map(|(i, child)| {
            let (status, stdout, stderr) = finish(child, Duration::from_secs(180), what);
            assert!(
                status.success() || status.code() == Some(6),
                "{what}, process {i}: {status}\n{stderr}"
            );
            serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}"))
        })
        .collect()
}

/// Each process's summary says how many blocks it loaded and how many it left to others; their
/// sums are the ledger's blocks and rows, so no block was counted (or loaded) twice.
fn assert_blocks_add_up(db: &Db, summaries: &[serde_json::Value]) {
    let loaded: i64 = summaries
        .iter()
        .map(|s| s["blocks"]["loaded"].as_i64().expect("blocks.loaded"))
        .sum();
    assert_eq!(loaded, ledger_blocks(db), "blocks loaded by the processes");
    let rows: i64 = summaries.iter().map(|s| s["rows"].as_i64().unwrap()).sum();
    assert_eq!(
        rows,
        db.rows_and_ledger_rows().1,
        "rows loaded by the processes"
    );
    let busy = summaries
        .iter()
        .filter(|s| s["blocks"]["loaded"].as_i64() > Some(0))
        .count();
    assert!(
        busy >= 2,
        "only {busy} of the processes loaded blocks: {summaries:?}"
    );
}

#[test]
fn three_processes_share_one_input_and_load_every_row_once() {
    let db = Db::with_schema(RESUME_SCHEMA);
    let children = spawn_cooperating(&db, resume_input(), 3, |_| vec!["--json".into()]);
    let summaries = summaries(children, "three cooperating loads");
    assert_rows_match_ledger(&db, "three cooperating loads");
    assert_holds_resume_input(&db, "three cooperating loads");
    assert_blocks_add_up(&db, &summaries);

    let status = status_json(&db);
    assert_eq!(status["complete"], true, "{status}");
    assert_eq!(status["state"], "complete", "{status}");
    assert_eq!(status["rows"], RESUME_ROWS, "{status}");
    assert_eq!(status["blocks"], ledger_blocks(&db), "{status}");
    assert_eq!(status["bytes"], status["size"], "no header: {status}");
    assert_eq!(status["loading"], serde_json::json!([]), "{status}");
    let (_, text, _) = run(
        &["status", "--to", &db.conninfo, "--table", "t"],
        Duration::from_secs(30),
    );
    assert!(text.contains("): complete\n"), "{text}");
    assert!(
        text.contains(&format!(
            "{} rows",
            inrush::report::group(RESUME_ROWS as u64)
        )),
        "{text}"
    );
}

/// A load killed mid-way is `interrupted` in `inrush status` (nothing in progress, not
/// complete); a running one shows the blocks its session holds, with the session's pid and
/// application name.
#[test]
fn status_tells_a_running_load_from_an_interrupted_one() {
    let db = Db::with_schema(RESUME_SCHEMA);
    let mut child = spawn_resume_load(&db);
    let mut running = serde_json::Value::Null;
    wait_until(
        &mut child,
        Duration::from_secs(30),
        "a block in progress",
        || {
            running = status_json(&db);
            running["loading"].as_array().is_some_and(|l| !l.is_empty())
                && running["blocks"].as_i64() > Some(0)
        },
    );
    let status = sigkill(child);
    assert_eq!(running["complete"], false, "{running}");
    assert_eq!(running["state"], "loading", "{running}");
    assert_eq!(
        running["loading"][0]["application_name"], "inrush",
        "{running}"
    );
    assert!(running["loading"][0]["pid"].as_i64() > Some(0), "{running}");
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(
        status.signal(),
        Some(libc::SIGKILL),
        "the load ended before the kill"
    );
    wait_for_sessions_to_end(&db);
    let interrupted = status_json(&db);
    assert_eq!(interrupted["complete"], false, "{interrupted}");
    assert_eq!(interrupted["state"], "interrupted", "{interrupted}");
    assert_eq!(
        interrupted["loading"],
        serde_json::json!([]),
        "{interrupted}"
    );
    assert_eq!(
        interrupted["rows"],
        assert_rows_match_ledger(&db, "killed"),
        "{interrupted}"
    );
    let (_, text, _) = run(
        &["status", "--to", &db.conninfo, "--table", "t"],
        Duration::from_secs(30),
    );
    assert!(text.contains("): interrupted\n"), "{text}");
    assert!(text.contains("no process is loading it"), "{text}");
}

/// SIGKILL of one of three cooperating loaders, stopped first (SIGSTOP) while it holds a block
/// (before the other two start, so that timing plays no part), so that it still holds it when
/// the other two have read the whole input and wait for it: once it is
/// killed, they find those blocks uncommitted and load them, so when they end every row is in,
/// once; the same command once more finds nothing left to load.
#[test]
fn sigkill_of_one_of_three_cooperating_loaders_then_a_rerun_loads_every_row_once() {
    let db = Db::with_schema(RESUME_SCHEMA);
    // The victim's sessions are named, so the test knows when it holds a block.
    let mut victim = inrush(&[
        "load",
        resume_input().to_str().unwrap(),
        "--to",
        &format!("{} application_name=victim", db.conninfo),
        "--table",
        "t",
        "--resume",
        "--block-size",
        RESUME_BLOCK_SIZE,
        "--no-progress",
    ])
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .spawn()
    .expect("spawn the victim");
    // A block it holds and has not committed (a block is held a moment after its commit, and
    // while the ledger is read for it).
    let victim_holds_a_block = || {
        db.text("SELECT to_regclass('inrush.load_ledger') IS NOT NULL") == "t"
            && db.int(
            "SELECT count(*) FROM pg_locks k JOIN pg_stat_activity a USING (pid)
              WHERE k.locktype = 'advisory' AND k.objsubid = 2 AND k.granted AND a.application_name = 'victim'
                AND NOT EXISTS (SELECT 1 FROM inrush.load_ledger l WHERE l.block_offset / l.block_size = k.objid::bigint)",
        ) > 0
    };
    // Stopped while it holds a block (let go on again and stopped anew if it had just let its
    // last one go).
    let signal = |child: &Child, signal| {
        // SAFETY: signalling our own child, not reaped yet.
        assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, signal) }, 0);
    };
    loop {
        wait_until(
            &mut victim,
            Duration::from_secs(30),
            "the victim holding a block",
            victim_holds_a_block,
        );
        signal(&victim, libc::SIGSTOP);
        std::thread::sleep(Duration::from_millis(100));
        if victim_holds_a_block() {
            break;
        }
        signal(&victim, libc::SIGCONT);
    }
    let children = spawn_cooperating(&db, resume_input(), 2, |_| vec!["--json".into()]);
    wait_until(
        &mut victim,
        Duration::from_secs(120),
        "a survivor waiting for a block of the stopped one",
        || {
            db.int("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 2 AND NOT granted AND database = (SELECT oid FROM pg_database WHERE datname = current_database())") > 0
        },
    );
    let killed = sigkill(victim);
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(killed.signal(), Some(libc::SIGKILL), "{killed}");
    let survivors = summaries(children, "a survivor of the kill");
    let taken_over: i64 = survivors
        .iter()
        .map(|s| s["blocks"]["taken_over"].as_i64().unwrap())
        .sum();
    assert!(taken_over > 0, "{survivors:?}");
    wait_for_sessions_to_end(&db);
    assert_rows_match_ledger(&db, "after the survivors");
    assert_holds_resume_input(&db, "one of three killed, the others to the end");
    assert_eq!(status_json(&db)["complete"], true);

    let (status, stdout, stderr) = finish(
        spawn_resume_load_of(&db, resume_input(), &["--json"]),
        Duration::from_secs(180),
        "the rerun",
    );
    assert!(status.success(), "the rerun: {status}\n{stderr}");
    let summary: serde_json::Value = serde_json::from_str(&stdout).expect("summary");
    assert_eq!(
        (summary["rows"].as_i64(), summary["rows_resumed"].as_i64()),
        (Some(0), Some(RESUME_ROWS)),
        "{summary}"
    );
    assert_rows_match_ledger(&db, "after the rerun");
    assert_holds_resume_input(&db, "one of three killed, then a rerun");
}

/// All three cooperating loaders killed mid-load: the same command run once more loads the
/// rest, every row once.
#[test]
fn three_cooperating_loaders_killed_then_a_rerun_loads_every_row_once() {
    let db = Db::with_schema(RESUME_SCHEMA);
    let mut children = spawn_cooperating(&db, resume_input(), 3, |_| Vec::new());
    wait_until(
        &mut children[0],
        Duration::from_secs(30),
        "blocks committed",
        || db.rows_and_ledger_rows().1 > 0,
    );
    for child in children {
        sigkill(child);
    }
    wait_for_sessions_to_end(&db);
    let committed = assert_rows_match_ledger(&db, "after the kills");
    assert!(committed < RESUME_ROWS, "all committed before the kills");
    assert_eq!(status_json(&db)["complete"], false);
    let (status, _, stderr) = finish(
        spawn_resume_load(&db),
        Duration::from_secs(180),
        "the rerun",
    );
    assert!(status.success(), "the rerun: {status}\n{stderr}");
    assert_rows_match_ledger(&db, "after the rerun");
    assert_holds_resume_input(&db, "three killed, then a rerun");
}

/// `--max-errors` with bad rows: each process writes its own reject file (one shared path is
/// refused: their records would interleave), and every bad row is in exactly one of them,
/// since a block is read by one process only.
#[test]
fn cooperating_loaders_with_max_errors_reject_each_bad_row_once() {
    use std::io::Write;
    let dir = tempfile::tempdir().expect("tempdir");
    let input = dir.path().join("bad.csv");
    let mut out = std::io::BufWriter::new(std::fs::File::create(&input).expect("create"));
    let rows = 400_000;
    for id in 1..=rows {
        match id % 40_000 {
            0 => writeln!(out, "x{id},bad"),
            _ => writeln!(out, "{id},n{id}"),
        }
        .expect("write");
    }
    out.flush().expect("flush");
    drop(out);
    let db = Db::with_schema(RESUME_SCHEMA);
    let rejects = |i: usize| dir.path().join(format!("rejects-{i}.csv"));
    let children = spawn_cooperating(&db, &input, 3, |i| {
        vec![
            "--json".into(),
            "--max-errors".into(),
            "100".into(),
            "--rejects".into(),
            rejects(i).display().to_string(),
        ]
    });
    let summaries = summaries(children, "three cooperating loads with --max-errors");
    assert_rows_match_ledger(&db, "with --max-errors");
    let mut rejected: Vec<String> = (0..3)
        .flat_map(|i| {
            std::fs::read_to_string(rejects(i))
                .unwrap_or_default()
                .lines()
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect();
    rejected.sort();
    let mut expected: Vec<String> = (1..=rows / 40_000)
        .map(|k| format!("x{},bad", k * 40_000))
        .collect();
    expected.sort();
    assert_eq!(
        rejected, expected,
        "every bad row in exactly one reject file"
    );
    let rejected: i64 = summaries
        .iter()
        .map(|s| s["rows_rejected"].as_i64().unwrap())
        .sum();
    assert_eq!(rejected, rows / 40_000);
    assert_eq!(
        db.text("SELECT count(*) || ' ' || count(DISTINCT id) || ' ' || sum(id) FROM t"),
        format!(
            "{n} {n} {}",
            rows * (rows + 1) / 2 - (1..=rows / 40_000).map(|k| k * 40_000).sum::<i64>(),
            n = rows - rows / 40_000
        )
    );

    // A reject file another process writes (the test holds its lock, as a loader does): the
    // load is refused before it empties the file or loads anything.
    let shared = dir.path().join("shared.csv");
    std::fs::write(&shared, "x1,kept\n").expect("write");
    let held = std::fs::File::open(&shared).expect("open");
    held.lock().expect("lock");
    let (status, _, stderr) = run(
        &[
            "load",
            input.to_str().unwrap(),
            "--to",
            &db.conninfo,
            "--table",
            "t",
            "--max-errors",
            "100",
            "--rejects",
            shared.to_str().unwrap(),
        ],
        Duration::from_secs(60),
    );
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("is being written by another inrush process"),
        "{stderr}"
    );
    assert_eq!(std::fs::read_to_string(&shared).unwrap(), "x1,kept\n");
    assert_rows_match_ledger(&db, "after the refused load");
}

/// A table with a primary key and a secondary index: the first loader to start drops and
/// rebuilds the secondary index, so it loads alone while the others wait for it (and then find
/// the input loaded); with `--keep-indexes` they share the table and its blocks. Either way
/// every row is in once and every index is back and valid.
#[test]
fn cooperating_loaders_into_a_table_with_indexes() {
    for keep in [false, true] {
        let db = Db::with_schema(
            "CREATE TABLE t (id bigint PRIMARY KEY, note text); CREATE INDEX t_note_idx ON t (note)",
        );
        let extra = |_| match keep {
            true => vec!["--json".to_string(), "--keep-indexes".into()],
            false => vec!["--json".to_string()],
        };
        let children = spawn_cooperating(&db, resume_input(), 3, extra);
        let summaries = summaries(
            children,
            "three cooperating loads into a table with indexes",
        );
        assert_rows_match_ledger(&db, "with indexes");
        assert_holds_resume_input(&db, "with indexes");
        let loaded: Vec<i64> = summaries
            .iter()
            .map(|s| s["blocks"]["loaded"].as_i64().unwrap())
            .collect();
        assert_eq!(
            loaded.iter().sum::<i64>(),
            ledger_blocks(&db),
            "keep indexes: {keep}"
        );
        // The one that drops the index loads alone; sharing the table, they share the blocks.
        let busy = loaded.iter().filter(|&&n| n > 0).count();
        match keep {
            false => assert_eq!(busy, 1, "blocks loaded per process: {loaded:?}"),
            true => assert!(busy >= 2, "blocks loaded per process: {loaded:?}"),
        }
        assert_eq!(
            db.text("SELECT string_agg(indexrelid::regclass::text || ' ' || indisvalid, ', ' ORDER BY indexrelid::regclass::text) FROM pg_index WHERE indrelid = 't'::regclass"),
            "t_note_idx true, t_pkey true",
            "keep indexes: {keep}"
        );
        assert_eq!(db.journal_len(), 0);
    }
}

// A --resume load routed on the client to foreign partitions: each block is committed on each
// shard it has rows for, then on the target, and a stop between the two is made good by the
// next run without loading anything twice.

/// `t` with the resume input's columns, hash-partitioned four ways: two leaves local, two
/// foreign, each on a shard database of its own (returned, their tables named `t_2`, `t_3`).
fn sharded_resume_db() -> (Db, [Db; 2]) {
    let db = Db(inrush_testkit::Db::fresh("crash"));
    let shards = [
        Db::with_schema("CREATE TABLE t_2 (id bigint, note text)"),
        Db::with_schema("CREATE TABLE t_3 (id bigint, note text)"),
    ];
    db.add_foreign_server("shard_a", &shards[0]);
    db.add_foreign_server("shard_b", &shards[1]);
    db.exec(
        "CREATE TABLE t (id bigint, note text) PARTITION BY HASH (id);
         CREATE TABLE t_0 PARTITION OF t FOR VALUES WITH (modulus 4, remainder 0);
         CREATE TABLE t_1 PARTITION OF t FOR VALUES WITH (modulus 4, remainder 1);
         CREATE FOREIGN TABLE t_2 PARTITION OF t FOR VALUES WITH (modulus 4, remainder 2) SERVER shard_a;
         CREATE FOREIGN TABLE t_3 PARTITION OF t FOR VALUES WITH (modulus 4, remainder 3) SERVER shard_b;",
    );
    (db, shards)
}

/// After a routed `--resume` load: each shard's ledger counts exactly the rows its table holds,
/// and every row of `t` is in the leaf its key hashes to.
fn assert_shards_match_their_ledgers(db: &Db, shards: &[Db; 2]) {
    for (shard, table) in shards.iter().zip(["t_2", "t_3"]) {
        assert_eq!(
            shard.int("SELECT coalesce(sum(rows), 0) FROM inrush.shard_ledger"),
            shard.int(&format!("SELECT count(*) FROM {table}")),
            "{table}: its rows and the rows its inrush.shard_ledger counts"
        );
    }
    assert_eq!(
        db.int("SELECT count(*) FROM t WHERE NOT satisfies_hash_partition('t'::regclass, 4, substr(tableoid::regclass::text, 3)::int, id)"),
        0,
        "rows in a leaf other than their key's"
    );
}

/// The advisory lock the test holds while a block's commit on the target waits for it.
const HOLD: i64 = 7407;

/// Killed (SIGKILL) while a block's rows are committed on both shards and its commit on the
/// target waits (a row of a local leaf waits for a lock the test holds): the same command run
/// again loads that block's rows on the target only, so every row of the input is on its
/// server once, and each server's ledger counts exactly its rows.
#[test]
fn resume_routed_to_shards_killed_between_their_commits_and_the_targets_loads_every_row_once() {
    let (db, shards) = sharded_resume_db();
    let victim = db.int(
        "SELECT min(i) FROM generate_series(1000000, 1001000) i WHERE satisfies_hash_partition('t'::regclass, 4, 0, i::bigint)",
    );
    db.exec(&format!(
        "CREATE FUNCTION hold() RETURNS trigger LANGUAGE plpgsql AS $$ \
         BEGIN IF NEW.id = {victim} THEN PERFORM pg_advisory_xact_lock({HOLD}); END IF; RETURN NEW; END $$; \
         CREATE TRIGGER hold BEFORE INSERT ON t_0 FOR EACH ROW EXECUTE FUNCTION hold()"
    ));
    let mut holder = db.target.connect_blocking().expect("connect");
    holder
        .batch_execute(&format!("SELECT pg_advisory_lock({HOLD})"))
        .expect("taking the lock");
    let mut child = spawn_resume_load(&db);
    let waiting = format!(
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND objid = {HOLD} \
           AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
    );
    wait_until(
        &mut child,
        Duration::from_secs(120),
        "the block's commit on the target waiting",
        || db.int(&waiting) > 0,
    );
    // The block's rows are committed on the shards: the target's commit comes after theirs.
    let on_target = ledger_blocks(&db);
    for shard in &shards {
        let on_shard = shard.int("SELECT count(*) FROM inrush.shard_ledger");
        assert!(
            on_shard > on_target,
            "{on_shard} blocks on a shard, {on_target} on the target"
        );
    }
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(sigkill(child).signal(), Some(libc::SIGKILL));
    // The dead loader's session on the target goes on once the lock is let go, and finds its
    // client gone: the block is not committed there.
    drop(holder);
    wait_for_sessions_to_end(&db);
    shards.iter().for_each(wait_for_sessions_to_end);
    db.exec("DROP TRIGGER hold ON t_0");
    rerun_loads_every_row_once(&db, &shards, "after the kill");
}

/// The same `--resume` command run to its end: every row of the input once, on its server.
fn rerun_loads_every_row_once(db: &Db, shards: &[Db; 2], after: &str) {
    let what = format!("load --resume {after}");
    let (status, _, stderr) = finish(spawn_resume_load(db), Duration::from_secs(180), &what);
    assert!(status.success(), "{what}: {status}\n{stderr}");
    assert_rows_match_ledger(db, &what);
    assert_shards_match_their_ledgers(db, shards);
    assert_holds_resume_input(db, &what);
}

/// Three `--resume` processes of one input into a table with foreign partitions share its
/// blocks, and every row is on its server once.
#[test]
fn three_processes_share_one_input_routed_to_shards() {
    let (db, shards) = sharded_resume_db();
    let children = spawn_cooperating(&db, resume_input(), 3, |_| vec!["--json".into()]);
    let summaries = summaries(children, "three cooperating loads onto shards");
    assert_rows_match_ledger(&db, "three cooperating loads onto shards");
    assert_shards_match_their_ledgers(&db, &shards);
    assert_holds_resume_input(&db, "three cooperating loads onto shards");
    assert_blocks_add_up(&db, &summaries);
}

/// SIGTERM to a `--resume` load routed to shards stops it (exit 130) with the blocks it
/// committed kept on every server; the same command loads the rest, every row once.
#[test]
fn sigterm_of_a_resume_load_routed_to_shards_then_a_rerun_loads_every_row_once() {
    let (db, shards) = sharded_resume_db();
    let mut child = spawn_resume_load(&db);
    wait_until(
        &mut child,
        Duration::from_secs(60),
        "a committed block",
        || {
            db.text("SELECT to_regclass('inrush.load_ledger') IS NOT NULL") == "t"
                && ledger_blocks(&db) > 0
        },
    );
    // SAFETY: signalling our own child, not reaped yet.
    assert_eq!(
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) },
        0
    );
    let (status, _, stderr) = finish(child, Duration::from_secs(60), "load --resume, stopped");
    assert_eq!(status.code(), Some(130), "{stderr}");
    wait_for_sessions_to_end(&db);
    rerun_loads_every_row_once(&db, &shards, "after the stop");
}

/// Ends (`pg_terminate_backend`) every session of `db` rebuilding what the load dropped
/// (`CREATE INDEX`, `ALTER TABLE ... ADD CONSTRAINT`); how many it ended.
fn terminate_rebuilds(db: &Db) -> i64 {
    db.int(&format!(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
          WHERE datname = '{}' AND state = 'active' AND pid <> pg_backend_pid()
            AND (query ILIKE '%CREATE%INDEX%' OR query ILIKE '%ALTER TABLE%ADD CONSTRAINT%')",
        db.name
    ))
}

/// The server cuts off the rebuild after the load committed: the rows stay, the exit code (8)
/// and the message say so, with what is left and the command that puts it back; the same
/// command run again (as a script retrying a failed load would) loads nothing and puts
/// everything back; run a third time, with its record consumed, it loads as any load would
/// (here the primary key refuses the rows, which are in already).
#[test]
fn a_rebuild_cut_off_after_the_commit_exits_8_and_a_rerun_loads_nothing() {
    let db = Db::fresh();
    let before = db.definitions();
    let mut child = spawn_big_load(&db);
    let mut ended = 0;
    wait_until(&mut child, Duration::from_secs(60), "the rebuild", || {
        ended += terminate_rebuilds(&db);
        ended > 0
    });
    let (status, _, stderr) = finish(child, Duration::from_secs(60), "load (rebuild cut off)");
    assert_eq!(status.code(), Some(8), "{stderr}");
    let loaded = SEED_ROWS + BIG_ROWS as i64;
    assert_eq!(db.rows(), loaded, "the committed rows stay");
    for said in [
        &format!("committed {BIG_ROWS} rows into \"public\".\"t\""),
        "do not load them again",
        "still dropped, kept in the DDL journal: ",
        "To finish: ",
        "inrush recover --to '",
        " --table 't'",
        "a rerun of this same load finds its rows there",
    ] {
        assert!(stderr.contains(said), "{said:?} missing from:\n{stderr}");
    }
    assert!(db.journal_len() > 0, "what is not back is journaled");

    let (status, _, stderr) = finish(spawn_big_load(&db), Duration::from_secs(120), "rerun");
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("loaded nothing into"), "{stderr}");
    assert!(
        stderr.contains(&format!("this input's {BIG_ROWS} rows were committed")),
        "{stderr}"
    );
    assert_eq!(db.rows(), loaded, "the rerun loaded no row");
    assert_eq!(db.journal_len(), 0);
    assert_eq!(db.definitions(), before, "every definition is back");
    assert_eq!(
        db.int("SELECT count(*) FROM inrush.load_commits"),
        0,
        "the record is consumed"
    );

    let (status, _, stderr) = finish(spawn_big_load(&db), Duration::from_secs(120), "third run");
    assert_eq!(
        status.code(),
        Some(4),
        "the primary key refuses the rows again:\n{stderr}"
    );
    assert_eq!(db.rows(), loaded);
    assert_eq!(db.definitions(), before);
}

/// A load that finishes leaves no record behind: the same input loaded again (after the rows
/// were deleted) loads.
#[test]
fn a_finished_load_leaves_no_record() {
    let db = Db::fresh();
    let (status, _, stderr) = finish(spawn_big_load(&db), Duration::from_secs(120), "load");
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert_eq!(db.int("SELECT count(*) FROM inrush.load_commits"), 0);
    db.exec(&format!("DELETE FROM t WHERE id >= {FIRST_LOADED_ID}"));
    let (status, _, stderr) = finish(spawn_big_load(&db), Duration::from_secs(120), "again");
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert_eq!(db.rows(), SEED_ROWS + BIG_ROWS as i64, "{stderr}");
}
