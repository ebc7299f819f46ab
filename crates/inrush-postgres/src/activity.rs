//! What the server says about a load's own sessions while they run: who they are, and which of
//! them waits on a lock another one holds. Two sessions of one load that wait on each other
//! never finish: each COPY transaction stays open until every one is done, so a wait between
//! them is a deadlock the server cannot see (the holder waits on the client, not on a lock).

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
