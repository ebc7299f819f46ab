//! Which waits between a load's own sessions fail the load (`watch`): a wait for another
//! session's transaction, which stays open until every COPY is done, never ends; a wait for a
//! lock the holder gives back by itself (as sessions extending the same table do) must not
//! fail a load. A `--from-query` and a session of the load waiting on each other are found
//! whichever waits on the other.

mod support;

use inrush_postgres::activity::{backend_pid, tagged_wait_on, waits_among};
use std::time::{Duration, Instant};

/// Runs `sql` on a new session in a thread (it may wait), returning once the server sees that
/// session blocked by `holder`, with its pid.
fn blocked_by(
    db: &support::TestDb,
    rt: &tokio::runtime::Runtime,
    control: &tokio_postgres::Client,
    holder: i32,
    sql: &'static str,
) -> (i32, std::thread::JoinHandle<()>) {
    let mut waiter = db.target.connect_blocking().expect("connect");
    let pid: i32 = waiter
        .query_one("SELECT pg_backend_pid()", &[])
        .expect("pid")
        .get(0);
    let handle = std::thread::spawn(move || {
        let _ = waiter.batch_execute(sql);
    });
    let started = Instant::now();
    loop {
        let blocked: bool = rt
            .block_on(control.query_one("SELECT $1 = ANY(pg_blocking_pids($2))", &[&holder, &pid]))
            .expect("pg_blocking_pids")
            .get(0);
        if blocked {
            return (pid, handle);
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{sql} never waited"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn only_a_wait_for_another_sessions_transaction_counts() {
    let mut db = support::fresh_db();
    db.exec("CREATE TABLE k (id int PRIMARY KEY)");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let control = rt.block_on(db.target.connect()).expect("control");
    let holder = rt.block_on(db.target.connect()).expect("holder");
    let holder_pid = rt.block_on(backend_pid(&holder)).expect("pid");

    // A table lock: released by itself when the holder's statement or transaction ends.
    rt.block_on(holder.batch_execute("BEGIN; LOCK TABLE k IN ACCESS EXCLUSIVE MODE"))
        .expect("lock");
    let (waiter, done) = blocked_by(&db, &rt, &control, holder_pid, "SELECT * FROM k");
    let waits = rt
        .block_on(waits_among(&control, &[holder_pid, waiter]))
        .expect("waits");
    assert_eq!(waits, vec![]);
    rt.block_on(holder.batch_execute("ROLLBACK"))
        .expect("rollback");
    done.join().expect("waiter");

    // A key another session wrote and has not committed: waits for its transaction.
    rt.block_on(holder.batch_execute("BEGIN; INSERT INTO k VALUES (1)"))
        .expect("insert");
    let (waiter, done) = blocked_by(&db, &rt, &control, holder_pid, "INSERT INTO k VALUES (1)");
    let waits = rt
        .block_on(waits_among(&control, &[holder_pid, waiter]))
        .expect("waits");
    assert_eq!(waits, vec![(waiter, holder_pid)]);
    rt.block_on(holder.batch_execute("ROLLBACK"))
        .expect("rollback");
    done.join().expect("waiter");
}

#[test]
fn a_wait_between_the_source_query_and_the_load_is_found_either_way_round() {
    let mut db = support::fresh_db();
    db.exec("CREATE TABLE q (id int)");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let control = rt.block_on(db.target.connect()).expect("control");
    let tag = "/* inrush source test */";

    // The query first: it holds its lock while its rows wait to be read; the load's TRUNCATE
    // waits on it.
    let query = rt.block_on(db.target.connect()).expect("query");
    let query_pid = rt.block_on(backend_pid(&query)).expect("pid");
    rt.block_on(query.batch_execute("BEGIN")).expect("begin");
    let sql = format!("{tag} SELECT count(*) FROM q");
    rt.block_on(query.batch_execute(&sql)).expect("query");
    let (load, done) = blocked_by(&db, &rt, &control, query_pid, "TRUNCATE q");
    let wait = rt.block_on(tagged_wait_on(&control, tag, &[load]));
    assert_eq!(wait.expect("asked"), Some((load, query_pid)));
    rt.block_on(query.batch_execute("ROLLBACK"))
        .expect("rollback");
    done.join().expect("load");

    // The load first: its TRUNCATE holds the table, the query waits on it.
    let load = rt.block_on(db.target.connect()).expect("load");
    let load_pid = rt.block_on(backend_pid(&load)).expect("pid");
    rt.block_on(load.batch_execute("BEGIN; TRUNCATE q"))
        .expect("truncate");
    let waiting = format!("{tag} SELECT count(*) FROM q").leak();
    let (query, done) = blocked_by(&db, &rt, &control, load_pid, waiting);
    let wait = rt.block_on(tagged_wait_on(&control, tag, &[load_pid]));
    assert_eq!(wait.expect("asked"), Some((query, load_pid)));
    rt.block_on(load.batch_execute("ROLLBACK"))
        .expect("rollback");
    done.join().expect("query");
}
