//! Faults on the wire between inrush and the server, through a fault-injecting proxy
//! ([`inrush_testkit::proxy`]) on a local port: a COMMIT whose answer is lost, one that never
//! reaches the server, a connection that goes silent at the commit, the whole server going
//! silent while the rows stream or the indexes are rebuilt, latency and a bandwidth cap. After
//! each: the exit code and the message say what the table holds (asked of the server, never
//! guessed), nothing hangs past the network timeout, and the same command run again leaves
//! every row exactly once. The same for MariaDB, whose URL's host and port must be where the
//! rows go.
//!
//! One private PostgreSQL for this file, listening on 127.0.0.1; the tests' MariaDB is this
//! file's own (one per test process). Counts are read straight from the servers, never
//! through the proxy.

mod odbc_common;

use inrush_load::job::{JobOutcome, JobStep, Parts};
use inrush_postgres::{PrivateServer, ServerOptions};
use inrush_testkit::proxy::{Action, Fault, Proxy};
use inrush_testkit::{mariadb, Db, MariaDb};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

const ROWS: usize = 200_000;
/// A PostgreSQL simple query that is exactly COMMIT: its whole message, type and length too
/// (not COMMIT PREPARED, not a table name, not the end of a batch that makes inrush's tables).
const PG_COMMIT: &[u8] = b"Q\0\0\0\x0bCOMMIT\0";
/// MariaDB's COM_QUERY of COMMIT.
const MARIADB_COMMIT: &[u8] = b"\x03COMMIT";
/// How long a test waits for a load before it calls it a hang.
const HANG: Duration = Duration::from_secs(90);

static SERVER: Mutex<Option<PrivateServer>> = Mutex::new(None);
static BASE: OnceLock<(inrush_postgres::ConnectOptions, String, u16)> = OnceLock::new();

extern "C" fn stop_server() {
    SERVER.lock().unwrap_or_else(|e| e.into_inner()).take();
}

/// This file's PostgreSQL: its `postgres` database over the socket, its TCP conninfo, its port.
fn pg() -> &'static (inrush_postgres::ConnectOptions, String, u16) {
    BASE.get_or_init(|| {
        let server = PrivateServer::start(&ServerOptions {
            unsafe_fast: true,
            tcp: true,
            settings: vec![("max_prepared_transactions".into(), "16".into())],
            ..Default::default()
        })
        .expect("starting a private PostgreSQL (run the README's setup first)");
        let tcp = server.tcp_conninfo("127.0.0.1", "postgres", "sslmode=disable");
        let port = word(&tcp, "port=").parse().expect("a port");
        let base = (server.connect_options("postgres"), tcp, port);
        *SERVER.lock().unwrap_or_else(|e| e.into_inner()) = Some(server);
        // SAFETY: registering a plain extern "C" function; it runs once at process exit.
        unsafe { libc::atexit(stop_server) };
        base
    })
}

fn word<'a>(conninfo: &'a str, key: &str) -> &'a str {
    let at = conninfo.find(key).expect("the key") + key.len();
    conninfo[at..].split(' ').next().unwrap_or_default()
}

/// A fresh database with `schema`, and a proxy in front of the server: the database as tests
/// read it (directly) and the conninfo the loader is given (through the proxy).
fn pg_db(schema: &str) -> (Db, Proxy, String) {
    let (base, tcp, port) = pg();
    let db = Db::fresh_on(base, tcp, "network");
    db.exec(schema);
    let proxy = Proxy::start(SocketAddr::from(([127, 0, 0, 1], *port)));
    let through = db
        .conninfo
        .replace(&format!("port={port}"), &format!("port={}", proxy.port()));
    (db, proxy, through)
}

const PLAIN: &str = "CREATE TABLE t (id int, customer int, qty int, note text)";
const INDEXED: &str = "CREATE TABLE t (id int, customer int, qty int, note text);
     CREATE INDEX t_customer ON t (customer);";

/// `id,customer,qty,note`, written once for the whole file.
fn input() -> &'static Path {
    static INPUT: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    &INPUT
        .get_or_init(|| {
            use std::io::Write;
            let dir = tempfile::tempdir().expect("tempdir");
            let path = dir.path().join("rows.csv");
            let file = std::fs::File::create(&path).expect("create input");
            let mut out = std::io::BufWriter::new(file);
            for i in 0..ROWS {
                writeln!(out, "{i},{},{},Note {i}", i % 100 + 1, i % 7).expect("write input");
            }
            out.flush().expect("flush input");
            (dir, path)
        })
        .1
}

/// `inrush load` of the input into `t` of `to`, with `extra`; held at the start of `pause`'s
/// phase while its file exists (see `inrush::report`).
fn spawn(to: &str, pause: Option<(&str, &Path)>, extra: &[&str]) -> Child {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_inrush"));
    cmd.args(["load", input().to_str().unwrap(), "--to", to])
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

/// The loader's exit code and all it printed; a loader still running after [`HANG`] fails the
/// test.
fn finish(mut child: Child) -> (i32, String) {
    let deadline = Instant::now() + HANG;
    while child.try_wait().expect("try_wait").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().expect("wait");
            panic!(
                "the load hangs: still running after {HANG:?}:\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().expect("wait");
    let printed = [out.stdout, out.stderr].concat();
    let code = out.status.code().unwrap_or(-1);
    (code, String::from_utf8_lossy(&printed).into_owned())
}

fn load(to: &str, extra: &[&str]) -> (i32, String) {
    finish(spawn(to, None, extra))
}

/// Holds a load at the start of `phase`, runs `then` (a fault), and lets it go on.
fn at_phase(to: &str, phase: &str, extra: &[&str], then: impl FnOnce()) -> (i32, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("paused");
    let mut child = spawn(to, Some((phase, &file)), extra);
    let deadline = Instant::now() + HANG;
    while !file.exists() {
        if let Some(status) = child.try_wait().expect("try_wait") {
            let (_, out) = finish(child);
            panic!("the load ended ({status}) before {phase}:\n{out}");
        }
        assert!(Instant::now() < deadline, "no {phase} within {HANG:?}");
        std::thread::sleep(Duration::from_millis(5));
    }
    then();
    std::fs::remove_file(&file).expect("letting the load go on");
    finish(child)
}

fn count(db: &Db) -> i64 {
    db.int("SELECT count(*) FROM t")
}

/// Every row of the input exactly once.
fn assert_whole(db: &Db, when: &str) {
    let (rows, ids) = (count(db), db.int("SELECT count(DISTINCT id) FROM t"));
    assert_eq!((rows, ids), (ROWS as i64, ROWS as i64), "{when}");
}

fn records(db: &Db) -> i64 {
    db.int("SELECT CASE WHEN to_regclass('inrush.load_commits') IS NULL THEN 0 ELSE (SELECT count(*) FROM inrush.load_commits) END")
}

/// The row count a partial commit's message names.
fn rows_said(out: &str) -> i64 {
    let at = out
        .find("connections committed (")
        .expect("a partial commit's count")
        + "connections committed (".len();
    out[at..]
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("a row count in: {out}"))
}

fn arm(proxy: &Proxy, pattern: &[u8], action: Action) {
    arm_after(proxy, pattern, action, 0);
}

/// Arms `action` for the match of `pattern` that comes after `skip` others.
fn arm_after(proxy: &Proxy, pattern: &[u8], action: Action, skip: usize) {
    proxy.arm(Fault {
        pattern: pattern.to_vec(),
        action,
        times: 1,
        skip,
    });
}

#[test]
fn a_lost_commit_answer_is_asked_about_and_the_load_says_it_committed() {
    let (db, proxy, to) = pg_db(PLAIN);
    arm(&proxy, PG_COMMIT, Action::AnswerLost);
    let (code, out) = load(&to, &["--connections", "1"]);
    assert_eq!(proxy.struck(), 1, "{out}");
    assert_eq!(code, 0, "the rows are in, so the load committed:\n{out}");
    assert_whole(&db, "after a lost answer");
    assert_eq!(records(&db), 0, "a finished load leaves no record");
}

#[test]
fn two_connections_with_one_answer_lost_report_both_committed() {
    let (db, proxy, to) = pg_db(PLAIN);
    arm(&proxy, PG_COMMIT, Action::AnswerLost);
    let (code, out) = load(&to, &["--connections", "2"]);
    assert_eq!(proxy.struck(), 1, "{out}");
    assert_eq!(code, 0, "{out}");
    assert_whole(&db, "two connections, one answer lost");
}

#[test]
fn a_commit_that_never_arrives_is_a_partial_commit_of_the_rows_that_did() {
    let (db, proxy, to) = pg_db(PLAIN);
    never_arrives(&db, &proxy, &to, 0);
}

/// One of two connections' COMMIT (the one after `skip` others) never reaches the server:
/// exit 5, the message counting exactly the rows in the table, and the same command run again
/// loads the input once, finds it in already, or is refused, by what the table holds.
fn never_arrives(db: &Db, proxy: &Proxy, to: &str, skip: usize) {
    arm_after(proxy, PG_COMMIT, Action::NeverArrives, skip);
    let (code, out) = load(to, &["--connections", "2"]);
    assert_eq!(proxy.struck(), 1, "{out}");
    assert_eq!(code, 5, "{out}");
    // Which connection's COMMIT is lost is a matter of timing, and so is how many rows it
    // carried (none, even): the message must count exactly those in the table.
    let rows = count(db);
    assert_eq!(
        rows_said(&out),
        rows,
        "the message counts the committed rows:\n{out}"
    );
    let (code, again) = load(to, &["--connections", "2"]);
    match rows {
        // Nothing of the input is in: the same command loads it once.
        0 => {
            assert_eq!(code, 0, "{again}");
            assert_whole(db, "after the rerun");
        }
        // The connection whose COMMIT was lost had no rows: every row is in already.
        n if n == ROWS as i64 => {
            assert_eq!(code, 0, "{again}");
            assert!(again.contains("nothing loaded"), "{again}");
            assert_whole(db, "after the rerun");
        }
        // It would load the committed rows twice: it is refused.
        _ => {
            assert_eq!(code, 2, "{again}");
            assert!(again.contains("committed only some"), "{again}");
            assert_eq!(count(db), rows, "nothing loaded twice");
        }
    }
}

#[test]
fn a_commit_a_silent_connection_swallows_is_settled_by_asking() {
    let (db, proxy, to) = pg_db(PLAIN);
    arm(&proxy, PG_COMMIT, Action::StallAfter);
    let (code, out) = load(&to, &["--connections", "1", "--network-timeout", "5"]);
    assert_eq!(proxy.struck(), 1, "{out}");
    assert_eq!(code, 0, "{out}");
    assert_whole(&db, "after a silent commit");
}

#[test]
fn a_lost_answer_with_the_server_out_of_reach_exits_9_and_a_rerun_loads_nothing_twice() {
    let (db, proxy, to) = pg_db(PLAIN);
    arm(&proxy, PG_COMMIT, Action::StallAfter);
    let child = spawn(&to, None, &["--connections", "1", "--network-timeout", "3"]);
    // The COMMIT went through; from now on every question is left unanswered too.
    let deadline = Instant::now() + HANG;
    while proxy.struck() == 0 {
        assert!(Instant::now() < deadline, "no COMMIT within {HANG:?}");
        std::thread::sleep(Duration::from_millis(2));
    }
    proxy.stall();
    let (code, out) = finish(child);
    assert_eq!(code, 9, "{out}");
    assert!(
        out.contains("SELECT txid_status("),
        "the query that tells:\n{out}"
    );
    assert!(out.contains("asks the server first"), "{out}");
    assert_whole(&db, "the COMMIT did reach the server");
    proxy.heal();
    let (code, again) = load(&to, &["--connections", "1"]);
    assert_eq!(code, 0, "{again}");
    assert!(again.contains("nothing loaded"), "{again}");
    assert_whole(&db, "after the rerun");
    assert_eq!(records(&db), 0, "the rerun consumed the record");
}

#[test]
fn a_server_gone_silent_during_the_rows_ends_the_load_in_the_network_timeout() {
    let (db, proxy, to) = pg_db(PLAIN);
    let started = Instant::now();
    let (code, out) = at_phase(&to, "load", &["--network-timeout", "3"], || proxy.stall());
    assert_eq!(code, 3, "{out}");
    assert!(out.contains("has not answered for 3 s"), "{out}");
    assert!(out.contains("--network-timeout"), "{out}");
    assert!(started.elapsed() < Duration::from_secs(60), "{out}");
    assert_eq!(count(&db), 0, "nothing committed");
    proxy.heal();
    let (code, again) = load(&to, &[]);
    assert_eq!(code, 0, "{again}");
    assert_whole(&db, "after the rerun");
}

#[test]
fn a_server_gone_silent_during_the_rebuild_exits_8_and_a_rerun_finishes_once() {
    let (db, proxy, to) = pg_db(INDEXED);
    let before = db.definitions();
    let (code, out) = at_phase(&to, "indexes", &["--network-timeout", "3"], || {
        proxy.stall()
    });
    assert_eq!(code, 8, "{out}");
    assert!(out.contains("do not load them again"), "{out}");
    assert_whole(&db, "committed before the rebuild");
    proxy.heal();
    let (code, again) = load(&to, &[]);
    assert_eq!(code, 0, "{again}");
    assert!(again.contains("nothing loaded"), "{again}");
    assert_whole(&db, "after the rerun");
    assert_eq!(db.definitions(), before, "every index back");
    assert_eq!(db.journal_len(), 0);
}

#[test]
fn a_connection_reset_during_the_rows_commits_nothing_and_a_rerun_loads_once() {
    let (db, proxy, to) = pg_db(PLAIN);
    let (code, out) = at_phase(&to, "load", &[], || proxy.reset_all());
    assert_eq!(code, 3, "{out}");
    assert_eq!(count(&db), 0, "nothing committed:\n{out}");
    let (code, again) = load(&to, &[]);
    assert_eq!(code, 0, "{again}");
    assert_whole(&db, "after the rerun");
}

#[test]
fn a_resume_load_outlasts_a_ledger_write_and_a_commit_answer_lost_on_the_wire() {
    let (db, proxy, to) = pg_db(PLAIN);
    // The second block's ledger row never arrives; the third block's COMMIT answer is lost.
    arm_after(
        &proxy,
        b"INTO inrush.load_ledger (",
        Action::NeverArrives,
        1,
    );
    arm_after(&proxy, PG_COMMIT, Action::AnswerLost, 2);
    let args = ["--resume", "--connections", "1", "--block-size", "262144"];
    let (code, out) = load(&to, &args);
    assert_eq!(proxy.struck(), 2, "{out}");
    assert_eq!(code, 0, "the lost connections are retried:\n{out}");
    assert_whole(&db, "no block twice");
    let (code, again) = load(&to, &args);
    assert_eq!(code, 0, "{again}");
    assert_whole(&db, "the rerun finds every block in");
}

#[test]
fn an_on_conflict_merge_whose_commit_answer_is_lost_is_asked_about() {
    let (db, proxy, to) =
        pg_db("CREATE TABLE t (id int PRIMARY KEY, customer int, qty int, note text)");
    // The connection's COMMIT fills the staging table; the merge's is the load's commit.
    arm_after(&proxy, PG_COMMIT, Action::AnswerLost, 1);
    let args = ["--on-conflict", "skip", "--connections", "1"];
    let (code, out) = load(&to, &args);
    assert_eq!(proxy.struck(), 1, "{out}");
    assert_eq!(code, 0, "{out}");
    assert_whole(&db, "merged once");
    let (code, again) = load(&to, &args);
    assert_eq!(code, 0, "{again}");
    assert_whole(&db, "a rerun merges nothing twice");
}

#[test]
fn latency_and_a_bandwidth_cap_change_nothing_but_the_time() {
    let (db, proxy, to) = pg_db(INDEXED);
    proxy.set_latency(Duration::from_millis(50));
    proxy.set_bandwidth(Some(8 << 20));
    let (code, out) = load(&to, &["--connections", "2"]);
    assert_eq!(code, 0, "{out}");
    assert_whole(&db, "over a slow network");
}

/// About 5 MB at 1 MB/s: several times the network timeout, on a server that answers.
#[test]
fn a_load_longer_than_the_network_timeout_is_not_taken_for_a_silent_server() {
    let (db, proxy, to) = pg_db(PLAIN);
    proxy.set_bandwidth(Some(1 << 20));
    let (code, out) = load(&to, &["--network-timeout", "2"]);
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("has not answered"), "{out}");
    assert_whole(&db, "a slow load");
}

/// A fresh MariaDB database with `t`, and a proxy in front of the server: the database as
/// tests read it (directly) and the URL the loader is given (through the proxy, as a tunnel
/// on a local port would be).
/// `t` hash-partitioned in two: a local leaf, and a foreign one on a shard database whose
/// foreign server names the proxy's port, so that the load's sessions on the shard cross the
/// proxy too (as its sessions on `t`'s server do). The database, the shard, the proxy, and the
/// conninfo through it.
fn pg_sharded() -> (Db, Db, Proxy, String) {
    let (db, proxy, through) = pg_db("");
    let (base, tcp, _) = pg();
    let shard = Db::fresh_on(base, tcp, "network_shard");
    shard.exec("CREATE TABLE t_1 (id int, customer int, qty int, note text)");
    let user = db.text("SELECT current_user");
    db.exec(&format!(
        "CREATE EXTENSION postgres_fdw;
         CREATE SERVER shard FOREIGN DATA WRAPPER postgres_fdw
           OPTIONS (host '127.0.0.1', port '{}', dbname '{}');
         CREATE USER MAPPING FOR CURRENT_USER SERVER shard OPTIONS (user '{user}');
         CREATE TABLE t (id int, customer int, qty int, note text) PARTITION BY HASH (id);
         CREATE TABLE t_0 PARTITION OF t FOR VALUES WITH (modulus 2, remainder 0);
         CREATE FOREIGN TABLE t_1 PARTITION OF t FOR VALUES WITH (modulus 2, remainder 1)
           SERVER shard;",
        proxy.port(),
        shard.name
    ));
    (db, shard, proxy, through)
}

/// The transactions left prepared in `dbs`.
fn prepared_in(dbs: &[&Db]) -> i64 {
    let names: Vec<String> = dbs.iter().map(|d| format!("'{}'", d.name)).collect();
    let sql = format!(
        "SELECT count(*) FROM pg_prepared_xacts WHERE database IN ({})",
        names.join(", ")
    );
    dbs[0].int(&sql)
}

#[test]
fn a_lost_commit_prepared_answer_on_a_sharded_load_is_finished_over_a_new_connection() {
    let (db, shard, proxy, to) = pg_sharded();
    arm(&proxy, b"COMMIT PREPARED", Action::AnswerLost);
    let (code, out) = load(&to, &["--connections", "1"]);
    assert_eq!(proxy.struck(), 1, "{out}");
    assert_eq!(code, 0, "every server committed:\n{out}");
    assert_whole(&db, "after the load");
    assert_eq!(prepared_in(&[&db, &shard]), 0, "nothing left prepared");
}

#[test]
fn a_lost_prepare_answer_on_a_sharded_load_rolls_every_server_back_and_a_rerun_loads_once() {
    let (db, shard, proxy, to) = pg_sharded();
    arm(&proxy, b"PREPARE TRANSACTION", Action::AnswerLost);
    let (code, out) = load(&to, &["--connections", "1"]);
    assert_eq!(proxy.struck(), 1, "{out}");
    assert_eq!(code, 3, "{out}");
    assert!(out.contains("every server rolled back"), "{out}");
    assert_eq!(count(&db), 0);
    assert_eq!(prepared_in(&[&db, &shard]), 0, "nothing left prepared");
    let (code, out) = load(&to, &["--connections", "1"]);
    assert_eq!(code, 0, "{out}");
    assert_whole(&db, "after the rerun");
}

#[test]
fn a_sharded_load_whose_servers_go_silent_during_the_rows_ends_in_the_network_timeout() {
    let (db, _shard, proxy, to) = pg_sharded();
    let started = Instant::now();
    let args = ["--network-timeout", "3", "--connections", "1"];
    let (code, out) = at_phase(&to, "load", &args, || proxy.stall());
    assert_eq!(code, 3, "{out}");
    assert!(out.contains("has not answered for 3 s"), "{out}");
    assert!(started.elapsed() < Duration::from_secs(60), "{out}");
    proxy.heal();
    assert_eq!(count(&db), 0, "nothing committed");
    let (code, again) = load(&to, &["--connections", "1"]);
    assert_eq!(code, 0, "{again}");
    assert_whole(&db, "after the rerun");
}

/// A distributed write's coordinator step on PostgreSQL through `to`, given `limit` to answer.
fn pg_step(to: &str, job: &str, step: JobStep, limit: u64) -> inrush_load::Result<JobOutcome> {
    let target = inrush_postgres::ConnectOptions::parse(to).expect("a conninfo");
    let target = target.with_network_timeout(Duration::from_secs(limit));
    inrush_postgres::job::step(&target, job, &step)
}

fn begin(parts: Parts) -> JobStep {
    JobStep::Begin {
        table: "t".into(),
        overwrite: false,
        parts,
        batch: None,
        keep_indexes: false,
    }
}

fn commit(winners: Vec<String>) -> JobStep {
    JobStep::Commit {
        winners,
        batch: None,
    }
}

fn sorted(names: &[String]) -> Vec<String> {
    let mut names = names.to_vec();
    names.sort();
    names
}

/// The prepared transactions of `prefix` (`inrush_JOB_PART_`), as a coordinator names them.
fn pg_prepared(db: &Db, prefix: &str) -> Vec<String> {
    let sql =
        format!("SELECT gid FROM pg_prepared_xacts WHERE starts_with(gid, '{prefix}') ORDER BY 1");
    db.rows(&sql)
        .into_iter()
        .filter_map(|r| r[0].clone())
        .collect()
}

/// Runs `step`, silencing the whole proxy once its armed fault has struck.
fn silenced_at_the_strike<T: Send>(proxy: &Proxy, step: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|s| {
        s.spawn(|| {
            let deadline = Instant::now() + HANG;
            while proxy.struck() == 0 && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(5));
            }
            proxy.stall();
        });
        step()
    })
}

#[test]
fn a_lost_answer_to_the_decision_on_prepared_parts_is_asked_about_and_the_parts_land_once() {
    let (db, proxy, to) = pg_db(PLAIN);
    pg_step(&to, "j1", begin(Parts::Prepared), 30).expect("begin");
    let (code, out) = load(&to, &["--prepare", "j1:p0", "--connections", "2"]);
    assert_eq!(code, 0, "{out}");
    let winners = pg_prepared(&db, "inrush_j1_p0_");
    assert_eq!(winners.len(), 2, "{out}");
    // The decision's own COMMIT (its parts are then committed with COMMIT PREPARED).
    arm(&proxy, PG_COMMIT, Action::AnswerLost);
    let outcome = pg_step(&to, "j1", commit(winners.clone()), 30).expect("the decision landed");
    assert_eq!(proxy.struck(), 1);
    assert_eq!(sorted(&outcome.committed), winners, "{outcome:?}");
    assert!(
        outcome
            .notes
            .iter()
            .any(|n| n.contains("went on over a new one")),
        "{outcome:?}"
    );
    assert_whole(&db, "after the decision");
    assert!(pg_prepared(&db, "inrush_j1_").is_empty());
}

#[test]
fn a_lost_answer_to_the_move_of_staged_parts_is_asked_about_and_the_step_says_it_landed() {
    let (db, proxy, to) = pg_db(PLAIN);
    pg_step(&to, "j2", begin(Parts::Staged), 30).expect("begin");
    let (code, out) = load(&to, &["--stage", "j2:p0"]);
    assert_eq!(code, 0, "{out}");
    arm(&proxy, PG_COMMIT, Action::AnswerLost);
    let winner = r#"inrush."stage_j2_p0""#.to_string();
    let outcome = pg_step(&to, "j2", commit(vec![winner.clone()]), 30).expect("the move landed");
    assert_eq!(proxy.struck(), 1);
    assert_eq!(outcome.committed, vec![winner], "{outcome:?}");
    assert_whole(&db, "after the move");
    assert_eq!(
        db.int("SELECT count(*) FROM pg_class WHERE relname LIKE 'stage_j2%'"),
        0
    );
}

#[test]
fn a_part_whose_prepare_answer_is_lost_fails_and_never_lands_beside_its_retry() {
    let (db, proxy, to) = pg_db(PLAIN);
    pg_step(&to, "j3", begin(Parts::Prepared), 30).expect("begin");
    arm(&proxy, b"PREPARE TRANSACTION", Action::AnswerLost);
    let (code, out) = load(&to, &["--prepare", "j3:p0", "--connections", "2"]);
    assert_eq!(proxy.struck(), 1, "{out}");
    assert_ne!(code, 0, "the part did not see its PREPARE answered:\n{out}");
    // The task's retry is another attempt, another part; the coordinator keeps only it.
    let (code, out) = load(&to, &["--prepare", "j3:p1", "--connections", "2"]);
    assert_eq!(code, 0, "{out}");
    let winners = pg_prepared(&db, "inrush_j3_p1_");
    let outcome = pg_step(&to, "j3", commit(winners.clone()), 30).expect("the decision");
    assert_eq!(sorted(&outcome.committed), winners, "{outcome:?}");
    assert_whole(
        &db,
        "after the decision: the failed part's rows are not there",
    );
    assert!(
        pg_prepared(&db, "inrush_j3_").is_empty(),
        "the failed part was taken back"
    );
}

#[test]
fn a_server_gone_silent_at_the_decision_ends_the_step_and_the_same_step_lands_once_after() {
    let (db, proxy, to) = pg_db(PLAIN);
    pg_step(&to, "j4", begin(Parts::Prepared), 30).expect("begin");
    let (code, out) = load(&to, &["--prepare", "j4:p0"]);
    assert_eq!(code, 0, "{out}");
    let winners = pg_prepared(&db, "inrush_j4_p0_");
    // The decision's first statement goes through, then the whole server goes silent.
    arm(&proxy, b"UPDATE inrush.joint_commits", Action::StallAfter);
    let started = Instant::now();
    let failed = silenced_at_the_strike(&proxy, || pg_step(&to, "j4", commit(winners.clone()), 3));
    let failed = failed.expect_err("a silent server");
    assert!(started.elapsed() < HANG, "{failed}");
    assert!(
        failed.to_string().contains("has not answered for 3 s"),
        "{failed}"
    );
    assert_eq!(count(&db), 0, "nothing landed");
    proxy.heal();
    let outcome = pg_step(&to, "j4", commit(winners.clone()), 30).expect("the decision");
    assert_eq!(sorted(&outcome.committed), winners, "{outcome:?}");
    assert_whole(&db, "after the decision");
}

/// A SQLite file holding the input as `t`, with a primary key and an index, for `inrush copy`.
fn sqlite_source() -> &'static str {
    static SOURCE: OnceLock<(tempfile::TempDir, String)> = OnceLock::new();
    &SOURCE
        .get_or_init(|| {
            let dir = tempfile::tempdir().expect("tempdir");
            let path = dir.path().join("app.db");
            let mut file = rusqlite::Connection::open(&path).expect("a SQLite file");
            file.execute_batch(
                "CREATE TABLE t (id INTEGER PRIMARY KEY, customer INT, qty INT, note TEXT);
                 CREATE INDEX t_customer ON t (customer);",
            )
            .expect("the source's table");
            let tx = file.transaction().expect("a transaction");
            {
                let mut insert = tx
                    .prepare("INSERT INTO t VALUES (?, ?, ?, ?)")
                    .expect("insert");
                for i in 0..ROWS as i64 {
                    let row = (i, i % 100 + 1, i % 7, format!("Note {i}"));
                    insert.execute(row).expect("a row");
                }
            }
            tx.commit().expect("the source's rows");
            (dir, format!("sqlite://{}", path.display()))
        })
        .1
}

/// `inrush copy` of the SQLite source into `to`.
fn copy(to: &str) -> (i32, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_inrush"));
    cmd.args([
        "copy",
        "--from",
        sqlite_source(),
        "--to",
        to,
        "--no-progress",
    ])
    .env("NO_COLOR", "1")
    .env_remove("INRUSH_TO")
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    finish(cmd.spawn().expect("spawn inrush copy"))
}

/// After a copy that may have failed: it failed saying so, the same command run again
/// finishes, and the table holds every row once, with its key and index.
fn assert_copied_once(db: &Db, (code, out): (i32, String), to: &str, when: &str) {
    if code != 0 {
        assert_eq!(
            code, 3,
            "{when}: a failure of the server or the connection:\n{out}"
        );
        let (code, out) = copy(to);
        assert_eq!(code, 0, "{when}: the rerun:\n{out}");
    }
    assert_whole(db, when);
    let built = "SELECT count(*) FROM pg_index WHERE indrelid = 't'::regclass";
    assert_eq!(db.int(built), 2, "{when}: the key and the index");
}

#[test]
fn a_copy_whose_commit_answers_are_lost_one_by_one_leaves_every_row_once() {
    let mut struck = 0;
    for skip in 0.. {
        let (db, proxy, to) = pg_db("");
        arm_after(&proxy, PG_COMMIT, Action::AnswerLost, skip);
        let copied = copy(&to);
        if proxy.struck() == 0 {
            // The copy commits fewer times than `skip`: every one of its commits was cut.
            assert_eq!(copied.0, 0, "{}", copied.1);
            break;
        }
        struck += 1;
        assert_copied_once(&db, copied, &to, &format!("answer {skip} lost"));
    }
    assert!(
        struck >= 3,
        "the copy's rows, its ledger and its builds each commit"
    );
}

#[test]
fn a_copy_cut_during_the_rows_or_a_build_resumes_and_leaves_every_row_once() {
    for (pattern, action) in [
        (&b"COPY "[..], Action::NeverArrives),
        (&b"CREATE INDEX"[..], Action::AnswerLost),
        (&b"PRIMARY KEY"[..], Action::NeverArrives),
    ] {
        let (db, proxy, to) = pg_db("");
        arm(&proxy, pattern, action);
        let copied = copy(&to);
        let when = String::from_utf8_lossy(pattern).into_owned();
        assert_eq!(proxy.struck(), 1, "{when}: {}", copied.1);
        assert_copied_once(&db, copied, &to, &when);
    }
}

fn mariadb_db() -> (MariaDb, Proxy, String) {
    let db = MariaDb::fresh("network");
    db.exec("CREATE TABLE t (id INT, customer INT, qty INT, note VARCHAR(40)) ENGINE=InnoDB");
    let port = mariadb().port();
    let proxy = Proxy::start(SocketAddr::from(([127, 0, 0, 1], port)));
    let through = db
        .url
        .replace(&format!(":{port}/"), &format!(":{}/", proxy.port()));
    (db, proxy, through)
}

/// `mariadb_db`'s `t` with a secondary key, which a load under `--index-threshold 0` drops
/// and adds back after its commit.
fn mariadb_indexed() -> (MariaDb, Proxy, String) {
    let (db, proxy, to) = mariadb_db();
    db.exec("ALTER TABLE t ADD KEY t_customer (customer)");
    (db, proxy, to)
}

fn at_mariadb_phase(to: &str, phase: &str, proxy: &Proxy) -> (i32, String) {
    let args = ["--network-timeout", "3", "--index-threshold", "0"];
    at_phase(to, phase, &args, || proxy.stall())
}

fn mariadb_count(db: &MariaDb) -> i64 {
    db.rows("SELECT COUNT(*), COUNT(DISTINCT id) FROM t")[0]
        .split('\t')
        .map(|n| n.trim().parse::<i64>().expect("a count"))
        .reduce(|rows, ids| if rows == ids { rows } else { -rows })
        .expect("a row")
}

#[test]
fn a_mariadb_url_naming_a_host_and_port_sends_the_rows_there() {
    let (db, proxy, to) = mariadb_db();
    // Through the proxy, the rows' statement is refused on the way: a load that moved to the
    // server's own Unix socket would not meet it, and would succeed.
    arm(&proxy, b"LOAD DATA", Action::NeverArrives);
    let (code, out) = load(&to, &["--connections", "1"]);
    assert_eq!(proxy.struck(), 1, "the rows went around the proxy:\n{out}");
    assert_eq!(code, 3, "{out}");
    assert_eq!(mariadb_count(&db), 0);
    let (code, out) = load(&to, &["--connections", "1"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(mariadb_count(&db), ROWS as i64);
}

#[test]
fn a_lost_mariadb_commit_answer_is_asked_about_and_the_load_says_it_committed() {
    let (db, proxy, to) = mariadb_db();
    arm(&proxy, MARIADB_COMMIT, Action::AnswerLost);
    let (code, out) = load(&to, &["--connections", "2"]);
    assert_eq!(proxy.struck(), 1, "{out}");
    assert_eq!(code, 0, "the rows are in, so the load committed:\n{out}");
    assert_eq!(mariadb_count(&db), ROWS as i64);
}

#[test]
fn a_mariadb_commit_that_never_arrives_commits_nothing_and_a_rerun_loads_once() {
    let (db, proxy, to) = mariadb_db();
    arm(&proxy, MARIADB_COMMIT, Action::NeverArrives);
    let (code, out) = load(&to, &["--connections", "1"]);
    assert_eq!(proxy.struck(), 1, "{out}");
    assert_eq!(code, 3, "{out}");
    assert!(out.contains("did not commit"), "asked, not guessed:\n{out}");
    assert_eq!(mariadb_count(&db), 0);
    let (code, out) = load(&to, &["--connections", "1"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(mariadb_count(&db), ROWS as i64);
}

#[test]
fn a_mariadb_partial_commit_counts_the_committed_rows_and_a_rerun_is_refused() {
    let (db, proxy, to) = mariadb_db();
    // The connections commit one after the other: the second's COMMIT never arrives.
    arm_after(&proxy, MARIADB_COMMIT, Action::NeverArrives, 1);
    let (code, out) = load(&to, &["--connections", "2"]);
    assert_eq!(proxy.struck(), 1, "{out}");
    assert_eq!(code, 5, "{out}");
    let rows = mariadb_count(&db);
    assert_eq!(
        rows_said(&out),
        rows,
        "the message counts the committed rows:\n{out}"
    );
    let (code, again) = load(&to, &["--connections", "2"]);
    match rows {
        0 => {
            assert_eq!(code, 0, "{again}");
            assert_eq!(mariadb_count(&db), ROWS as i64);
        }
        _ => {
            assert_eq!(code, 2, "{again}");
            assert!(again.contains("committed only some"), "{again}");
            assert_eq!(mariadb_count(&db), rows, "nothing loaded twice");
        }
    }
}

#[test]
fn a_mariadb_commit_a_silent_connection_swallows_is_settled_by_asking() {
    let (db, proxy, to) = mariadb_db();
    arm(&proxy, MARIADB_COMMIT, Action::StallAfter);
    let (code, out) = load(&to, &["--connections", "1", "--network-timeout", "5"]);
    assert_eq!(proxy.struck(), 1, "{out}");
    assert_eq!(code, 0, "{out}");
    assert_eq!(mariadb_count(&db), ROWS as i64);
}

#[test]
fn a_mariadb_server_gone_silent_during_the_rows_ends_the_load_in_the_network_timeout() {
    let (db, proxy, to) = mariadb_indexed();
    let (code, out) = at_mariadb_phase(&to, "load", &proxy);
    assert_eq!(code, 3, "{out}");
    assert!(out.contains("has not answered for 3 s"), "{out}");
    assert_eq!(mariadb_count(&db), 0, "nothing committed");
    proxy.heal();
    // What the load dropped is put back by the next load of the table.
    let (code, again) = load(&to, &["--index-threshold", "0"]);
    assert_eq!(code, 0, "{again}");
    assert_eq!(mariadb_count(&db), ROWS as i64);
    assert!(db.rows("SHOW CREATE TABLE t")[0].contains("t_customer"));
}

#[test]
fn a_mariadb_server_gone_silent_during_the_rebuild_exits_8_and_a_rerun_finishes_once() {
    let (db, proxy, to) = mariadb_indexed();
    let (code, out) = at_mariadb_phase(&to, "indexes", &proxy);
    assert_eq!(code, 8, "{out}");
    assert_eq!(
        mariadb_count(&db),
        ROWS as i64,
        "committed before the rebuild"
    );
    proxy.heal();
    let (code, again) = load(&to, &["--index-threshold", "0"]);
    assert_eq!(code, 0, "{again}");
    assert!(again.contains("nothing"), "{again}");
    assert_eq!(mariadb_count(&db), ROWS as i64, "nothing loaded twice");
    assert!(db.rows("SHOW CREATE TABLE t")[0].contains("t_customer"));
}

#[test]
fn a_mariadb_load_longer_than_the_network_timeout_is_not_taken_for_a_silent_server() {
    let (db, proxy, to) = mariadb_db();
    proxy.set_bandwidth(Some(1 << 20));
    let (code, out) = load(&to, &["--network-timeout", "2"]);
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("has not answered"), "{out}");
    assert_eq!(mariadb_count(&db), ROWS as i64);
}

/// A distributed write's coordinator step on MariaDB through `to`, given `limit` to answer.
fn mariadb_step(to: &str, job: &str, step: JobStep, limit: u64) -> inrush_load::Result<JobOutcome> {
    let target = inrush_mysql::MysqlOptions::parse(to).expect("a URL");
    let target = target.with_network_timeout(Duration::from_secs(limit));
    inrush_mysql::job::step(&target, job, &step)
}

/// The XA transactions prepared on `db`'s server whose names start with `prefix`.
fn mariadb_prepared(db: &MariaDb, prefix: &str) -> Vec<String> {
    let rows = db.rows("XA RECOVER");
    let names = rows.iter().filter_map(|r| r.split('\t').nth(3));
    names
        .filter(|n| n.starts_with(prefix))
        .map(str::to_string)
        .collect()
}

#[test]
fn a_lost_answer_to_a_mariadb_decision_is_asked_about_and_the_parts_land_once() {
    let (db, proxy, to) = mariadb_db();
    mariadb_step(&to, "m1", begin(Parts::Prepared), 30).expect("begin");
    let (code, out) = load(&to, &["--prepare", "m1:p0"]);
    assert_eq!(code, 0, "{out}");
    let winners = mariadb_prepared(&db, "inrush_m1_p0_");
    assert_eq!(winners.len(), 1, "{out}");
    arm(&proxy, MARIADB_COMMIT, Action::AnswerLost);
    let outcome =
        mariadb_step(&to, "m1", commit(winners.clone()), 30).expect("the decision landed");
    assert_eq!(proxy.struck(), 1);
    assert_eq!(sorted(&outcome.committed), winners, "{outcome:?}");
    assert_eq!(mariadb_count(&db), ROWS as i64);
    assert!(mariadb_prepared(&db, "inrush_m1_").is_empty());
}

#[test]
fn a_mariadb_server_gone_silent_at_the_decision_ends_the_step_and_the_same_step_lands_once_after() {
    let (db, proxy, to) = mariadb_db();
    mariadb_step(&to, "m2", begin(Parts::Prepared), 30).expect("begin");
    let (code, out) = load(&to, &["--prepare", "m2:p0"]);
    assert_eq!(code, 0, "{out}");
    let winners = mariadb_prepared(&db, "inrush_m2_p0_");
    arm(&proxy, b"UPDATE inrush_joint_commits", Action::StallAfter);
    let started = Instant::now();
    let step = || mariadb_step(&to, "m2", commit(winners.clone()), 3);
    let failed = silenced_at_the_strike(&proxy, step).expect_err("a silent server");
    assert!(started.elapsed() < HANG, "{failed}");
    assert!(
        failed.to_string().contains("has not answered for 3 s"),
        "{failed}"
    );
    assert_eq!(mariadb_count(&db), 0, "nothing landed");
    proxy.heal();
    let outcome = mariadb_step(&to, "m2", commit(winners.clone()), 30).expect("the decision");
    assert_eq!(sorted(&outcome.committed), winners, "{outcome:?}");
    assert_eq!(mariadb_count(&db), ROWS as i64);
}

// ---- the same through psqlODBC (`--to odbc:`) ----

/// `conninfo` (through the proxy) as a psqlODBC connection string.
fn odbc(conninfo: &str) -> String {
    odbc_common::psqlodbc(conninfo)
}

/// The ODBC loads' records of themselves still in the table beside `t`.
fn odbc_records(db: &Db) -> i64 {
    db.int("SELECT CASE WHEN to_regclass('inrush_odbc_commits') IS NULL THEN 0 ELSE (SELECT count(*) FROM inrush_odbc_commits) END")
}

#[test]
fn a_lost_commit_answer_over_odbc_is_asked_about_and_the_load_says_it_committed() {
    let (db, proxy, through) = pg_db(PLAIN);
    arm(&proxy, PG_COMMIT, Action::AnswerLost);
    let (code, out) = load(&odbc(&through), &["--connections", "1"]);
    assert_eq!(proxy.struck(), 1, "{out}");
    assert_eq!(code, 0, "the rows are in, so the load committed:\n{out}");
    assert_whole(&db, "after a lost answer");
    assert_eq!(odbc_records(&db), 0, "a finished load leaves no record");
}

#[test]
fn an_odbc_commit_that_never_arrives_commits_nothing_and_a_rerun_loads_once() {
    let (db, proxy, through) = pg_db(PLAIN);
    let to = odbc(&through);
    arm(&proxy, PG_COMMIT, Action::NeverArrives);
    let (code, out) = load(&to, &["--connections", "2"]);
    assert_eq!(proxy.struck(), 1, "{out}");
    assert_eq!(code, 3, "{out}");
    assert!(out.contains("did not commit"), "asked, not guessed:\n{out}");
    assert_eq!(count(&db), 0);
    let (code, out) = load(&to, &["--connections", "2"]);
    assert_eq!(code, 0, "{out}");
    assert_whole(&db, "after the rerun");
}

#[test]
fn an_odbc_commit_that_never_arrives_after_another_is_a_partial_commit_of_its_rows() {
    let (db, proxy, through) = pg_db(PLAIN);
    // The connections commit one after the other: the second's COMMIT never arrives.
    never_arrives(&db, &proxy, &odbc(&through), 1);
}

#[test]
fn an_odbc_commit_with_the_server_out_of_reach_exits_9_and_a_rerun_loads_nothing_twice() {
    let (db, proxy, through) = pg_db(PLAIN);
    let to = odbc(&through);
    arm(&proxy, PG_COMMIT, Action::StallAfter);
    let child = spawn(&to, None, &["--connections", "1", "--network-timeout", "3"]);
    let deadline = Instant::now() + HANG;
    while proxy.struck() == 0 {
        assert!(Instant::now() < deadline, "no COMMIT within {HANG:?}");
        std::thread::sleep(Duration::from_millis(2));
    }
    proxy.stall();
    let (code, out) = finish(child);
    assert_eq!(code, 9, "{out}");
    assert!(
        out.contains("FROM inrush_odbc_marks WHERE token"),
        "the query that tells:\n{out}"
    );
    assert!(out.contains("asks the server first"), "{out}");
    assert_whole(&db, "the COMMIT did reach the server");
    proxy.heal();
    let (code, again) = load(&to, &["--connections", "1"]);
    assert_eq!(code, 0, "{again}");
    assert!(again.contains("nothing loaded"), "{again}");
    assert_whole(&db, "after the rerun");
    assert_eq!(odbc_records(&db), 0, "the rerun consumed the record");
}

#[test]
fn an_odbc_server_gone_silent_during_the_rows_ends_the_load_in_the_network_timeout() {
    let (db, proxy, through) = pg_db(PLAIN);
    let to = odbc(&through);
    let started = Instant::now();
    let (code, out) = at_phase(&to, "load", &["--network-timeout", "3"], || proxy.stall());
    assert_eq!(code, 3, "{out}");
    assert!(out.contains("has not answered for 3 s"), "{out}");
    assert!(started.elapsed() < Duration::from_secs(60), "{out}");
    assert_eq!(count(&db), 0, "nothing committed");
    proxy.heal();
    let (code, again) = load(&to, &[]);
    assert_eq!(code, 0, "{again}");
    assert_whole(&db, "after the rerun");
}

#[test]
fn an_odbc_load_longer_than_the_network_timeout_is_not_taken_for_a_silent_server() {
    let (db, proxy, through) = pg_db(PLAIN);
    proxy.set_bandwidth(Some(1 << 20));
    let started = Instant::now();
    let (code, out) = load(&odbc(&through), &["--network-timeout", "2"]);
    assert_eq!(code, 0, "{out}");
    assert!(!out.contains("has not answered"), "{out}");
    assert!(
        started.elapsed() > Duration::from_secs(2),
        "longer than the timeout: {out}"
    );
    assert_whole(&db, "a slow load");
}

#[test]
fn an_odbc_server_gone_silent_before_the_rows_ends_the_load_in_the_network_timeout() {
    let (db, proxy, through) = pg_db(PLAIN);
    let to = odbc(&through);
    // Held before the table is read: the catalog's questions and the ledger's go unanswered.
    let started = Instant::now();
    let (code, out) = at_phase(&to, "inspect", &["--network-timeout", "3"], || {
        proxy.stall()
    });
    assert_eq!(code, 3, "{out}");
    assert!(out.contains("has not answered for 3 s"), "{out}");
    assert!(started.elapsed() < Duration::from_secs(60), "{out}");
    assert_eq!(count(&db), 0, "nothing committed");
    proxy.heal();
    let (code, again) = load(&to, &[]);
    assert_eq!(code, 0, "{again}");
    assert_whole(&db, "after the rerun");
}
