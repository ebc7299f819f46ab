//! What the server says about a load's own sessions while they run: who they are, which of
//! them waits on a lock another one holds, and what each is waiting on (the adaptive choice of
//! connections reads that, and how many more connections the server takes). Two sessions of
//! one load that wait on each other never finish: each COPY transaction stays open until every
//! one is done, so a wait between them is a deadlock the server cannot see (the holder waits on
//! the client, not on a lock).

use crate::{query_error, Result};
use tokio_postgres::Client;

/// The server process behind a connection.
pub async fn backend_pid(client: &Client) -> Result<i32> {
    Ok(client
        .query_one("SELECT pg_backend_pid()", &[])
        .await
        .map_err(query_error("SELECT pg_backend_pid()"))?
        .get(0))
}

/// Pairs `(waiting, holding)` among `pids`: a session waiting for another one's transaction
/// to end (a key it wrote, a row it locked). Only those waits cannot end while the load runs:
/// sessions COPYing into one table also wait on each other for a moment to extend it (a
/// relation extension lock), which `pg_blocking_pids` reports too.
pub async fn waits_among(client: &Client, pids: &[i32]) -> Result<Vec<(i32, i32)>> {
    let sql = "SELECT w.pid, h.pid FROM unnest($1::int[]) AS w(pid), \
               unnest(pg_blocking_pids(w.pid)) AS h(pid) WHERE h.pid = ANY($1) \
               AND EXISTS (SELECT FROM pg_locks l WHERE l.pid = w.pid AND NOT l.granted \
                           AND l.locktype IN ('transactionid', 'tuple'))";
    Ok(client
        .query(sql, &[&pids])
        .await
        .map_err(query_error(
            "looking for the load's sessions waiting on each other",
        ))?
        .iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect())
}

/// A wait between a session running a statement that starts with `tag` (this process's
/// source query, on the same server) and one of `pids`, either way: the waiting session and
/// the one it waits on. Either way round, neither can end: the query's rows are read by the
/// load that waits, or the load's lock is held until after the query's last row.
pub async fn tagged_wait_on(
    client: &Client,
    tag: &str,
    pids: &[i32],
) -> Result<Option<(i32, i32)>> {
    let sql = "WITH q AS (SELECT pid FROM pg_stat_activity WHERE starts_with(query, $1)) \
         SELECT a.pid, h.pid FROM pg_stat_activity a, unnest(pg_blocking_pids(a.pid)) AS h(pid) \
         WHERE (a.pid IN (SELECT pid FROM q) AND h.pid = ANY($2)) \
            OR (a.pid = ANY($2) AND h.pid IN (SELECT pid FROM q)) LIMIT 1";
    Ok(client
        .query_opt(sql, &[&tag, &pids])
        .await
        .map_err(query_error(
            "looking for the load's source query waiting on the load",
        ))?
        .map(|row| (row.get(0), row.get(1))))
}

/// A session outside the load that holds a lock one of the load's sessions waits for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    pub pid: i32,
    pub application: String,
    pub user: String,
    /// `pg_stat_activity.state` (`idle in transaction`, `active`...) and for how long.
    pub state: String,
    pub seconds: i64,
    /// What is waited for: `a lock on <relation>`, `a row...`, `an advisory lock...`.
    pub lock: String,
}

impl Holder {
    pub fn describe(&self) -> String {
        format!(
            "waiting for {} that another session holds: {}. Ctrl-C stops the load",
            self.lock,
            self.session()
        )
    }

    /// From a row of pid, application, user, state, seconds in it, and lock, in that order.
    fn from_row(row: &tokio_postgres::Row) -> Holder {
        Holder {
            pid: row.get(0),
            application: row.get(1),
            user: row.get(2),
            state: row.get(3),
            seconds: row.get(4),
            lock: row.get(5),
        }
    }

    /// `pid 12 (psql, user ann, idle in transaction for 40 s)`.
    pub fn session(&self) -> String {
        let application = match self.application.as_str() {
            "" => String::new(),
            name => format!("{name}, "),
        };
        format!(
            "pid {} ({application}user {}, {} for {} s)",
            self.pid, self.user, self.state, self.seconds
        )
    }
}

/// The sessions other than this one holding a lock on the table `oid` (at most three).
pub async fn holders_of(client: &Client, oid: u32) -> Result<Vec<Holder>> {
    let sql = "SELECT a.pid, coalesce(a.application_name, ''), coalesce(a.usename::text, ''), \
               coalesce(a.state, ''), coalesce(extract(epoch FROM now() - a.state_change)::bigint, 0), l.mode \
               FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid \
               WHERE l.locktype = 'relation' AND l.relation = $1 AND l.granted \
                 AND l.pid <> pg_backend_pid() ORDER BY a.state_change LIMIT 3";
    Ok(client
        .query(sql, &[&oid])
        .await
        .map_err(query_error(
            "looking for the sessions that keep the table open",
        ))?
        .iter()
        .map(Holder::from_row)
        .collect())
}

/// The first session outside `pids` that one of `pids` waits on, if any.
pub async fn outside_holder(client: &Client, pids: &[i32]) -> Result<Option<Holder>> {
    // An advisory lock is most likely another load's claim on the table (`load::claim`).
    let sql = "SELECT h.pid, coalesce(a.application_name, ''), coalesce(a.usename::text, ''), \
               coalesce(a.state, ''), coalesce(extract(epoch FROM now() - a.state_change)::bigint, 0), \
               coalesce((SELECT CASE l.locktype \
                                 WHEN 'relation' THEN 'a lock on ' || l.relation::regclass::text \
                                 WHEN 'advisory' THEN 'an advisory lock (an inrush load''s claim on the table, when the holder is inrush)' \
                                 WHEN 'transactionid' THEN 'a row it wrote or locked' \
                                 WHEN 'tuple' THEN 'a row it wrote or locked' \
                                 ELSE 'a ' || l.locktype || ' lock' END \
                         FROM pg_locks l WHERE l.pid = w.pid AND NOT l.granted LIMIT 1), 'a lock') \
               FROM unnest($1::int[]) AS w(pid) \
               CROSS JOIN LATERAL unnest(pg_blocking_pids(w.pid)) AS h(pid) \
               LEFT JOIN pg_stat_activity a ON a.pid = h.pid \
               WHERE h.pid <> ALL($1) LIMIT 1";
    Ok(client
        .query_opt(sql, &[&pids])
        .await
        .map_err(query_error("looking for a session the load waits on"))?
        .as_ref()
        .map(Holder::from_row))
}

/// Connections the server would still accept from an ordinary user: `max_connections` less the
/// slots reserved for superusers (and, from PostgreSQL 16, for `pg_use_reserved_connections`)
/// and the client sessions open now.
pub async fn free_slots(client: &Client) -> Result<i64> {
    let sql = "SELECT current_setting('max_connections')::int \
               - current_setting('superuser_reserved_connections')::int \
               - coalesce(current_setting('reserved_connections', true)::int, 0) \
               - (SELECT count(*)::int FROM pg_stat_activity WHERE backend_type = 'client backend')";
    Ok(client
        .query_one(sql, &[])
        .await
        .map_err(query_error("counting the server's free connection slots"))?
        .get::<_, i32>(0)
        .into())
}

/// What a session was doing at one instant: `pg_stat_activity`'s `wait_event_type`,
/// `wait_event` and `state` (empty when NULL).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wait {
    pub event_type: String,
    pub event: String,
    pub state: String,
}

/// One look at `pids`, and whether the checkpointer is writing a checkpoint (it waits on
/// `CheckpointerMain` only between checkpoints; PostgreSQL 15 to 18 name it so).
pub async fn waits_of(client: &Client, pids: &[i32]) -> Result<(Vec<Wait>, bool)> {
    let sql = "SELECT backend_type = 'checkpointer', coalesce(wait_event_type, ''), \
               coalesce(wait_event, ''), coalesce(state, '') FROM pg_stat_activity \
               WHERE pid = ANY($1) OR backend_type = 'checkpointer'";
    let rows = client
        .query(sql, &[&pids])
        .await
        .map_err(query_error("reading what the load's sessions wait on"))?;
    let mut checkpointing = false;
    let mut waits = Vec::with_capacity(pids.len());
    for row in rows {
        let wait = Wait {
            event_type: row.get(1),
            event: row.get(2),
            state: row.get(3),
        };
        match row.get::<_, bool>(0) {
            true => checkpointing = wait.event != "CheckpointerMain",
            false => waits.push(wait),
        }
    }
    Ok((waits, checkpointing))
}

/// `max_prepared_transactions` of `client`'s server: how many transactions can wait there,
/// prepared, for a joint commit.
pub async fn prepared_slots(client: &Client) -> Result<i64> {
    Ok(client
        .query_one(
            "SELECT current_setting('max_prepared_transactions')::bigint",
            &[],
        )
        .await
        .map_err(query_error("reading max_prepared_transactions"))?
        .get(0))
}
