//! Keeps the load's COPY sessions from waiting forever.
//!
//! A sink waiting on the server (a lock held by another session, a COPY the server is slow to
//! finish) does not look at the cancel flag, so a cancelled load asks the server to cancel what
//! each session runs. And two sessions of one load can wait on each other where the server
//! cannot see it: the second COPY of a key a kept unique index already holds from another
//! connection waits for that transaction, which stays open until every COPY is done (a trigger
//! updating a shared row does the same). Polling `pg_blocking_pids` from the control connection
//! finds that and fails the load instead of hanging; on each shard of a load routed to foreign
//! partitions too, from a control session there.

use crate::{activity, ConnectOptions};
use inrush_load::stages::{Shared, CANCEL_POLL};
use inrush_load::Error;
use std::convert::Infallible;
use tokio_postgres::{CancelToken, Client};

/// One COPY session of the load.
pub(crate) struct Session {
    pub pid: i32,
    pub token: CancelToken,
}

impl Session {
    pub async fn of(client: &Client) -> crate::Result<Session> {
        Ok(Session {
            pid: activity::backend_pid(client).await?,
            token: client.cancel_token(),
        })
    }
}

/// The load's COPY sessions on one server (the target, or a shard), and the session that
/// watches them there.
pub(crate) struct Watched<'a> {
    pub control: &'a Client,
    pub target: &'a ConnectOptions,
    pub sessions: Vec<Session>,
}

/// Runs beside the sinks until they are done (the caller drops it then). When the load is
/// cancelled, cancels what every session runs on every server; with `find_deadlocks` (the
/// sessions' transactions stay open until all are done), fails the load with
/// [`Error::SelfBlocked`] when one waits on another of the same server; with `from_query`,
/// with [`Error::QueryBlocked`] when the source query runs on one of the servers and waits on
/// a session of the load (whose transaction ends only after the query's last row), or a
/// session of the load waits on it (whose rows the load reads only once it has its lock).
pub(crate) async fn watch(
    servers: &[Watched<'_>],
    shared: &Shared,
    find_deadlocks: bool,
    from_query: bool,
) -> Infallible {
    // Lock waits are checked every second: a real wait between two sessions never ends, so
    // there is no hurry, and the query costs the server next to nothing.
    const CHECK_EVERY: u32 = 20;
    let mut ticks = 0u32;
    // A wait counts when two checks in a row see it: one that ends by itself is not failed on.
    let mut seen: Vec<Vec<(i32, i32)>> = vec![Vec::new(); servers.len()];
    let mut query_seen: Vec<Option<(i32, i32)>> = vec![None; servers.len()];
    while !shared.is_cancelled() {
        tokio::time::sleep(CANCEL_POLL).await;
        ticks += 1;
        if !(find_deadlocks || from_query) || !ticks.is_multiple_of(CHECK_EVERY) {
            continue;
        }
        for ((server, seen), query_seen) in servers.iter().zip(&mut seen).zip(&mut query_seen) {
            let pids: Vec<i32> = server.sessions.iter().map(|s| s.pid).collect();
            // A session's number in the load, for messages.
            let number = |pid| pids.iter().position(|&p| p == pid).map_or(0, |i| i + 1);
            if from_query {
                let tag = crate::copy_out::query_tag();
                if let Ok(wait) = activity::tagged_wait_on(server.control, tag, &pids).await {
                    if let Some((waiting, holding)) = wait.filter(|w| *query_seen == Some(*w)) {
                        shared.fail(Error::QueryBlocked {
                            connection: number(holding).max(number(waiting)),
                        });
                    }
                    *query_seen = wait;
                }
            }
            if find_deadlocks {
                if let Ok(waits) = activity::waits_among(server.control, &pids).await {
                    if let Some(&(waiting, holding)) = waits.iter().find(|w| seen.contains(w)) {
                        shared.fail(Error::SelfBlocked {
                            waiting: number(waiting),
                            holding: number(holding),
                            connections: pids.len(),
                        });
                    }
                    *seen = waits;
                }
            }
        }
    }
    for server in servers {
        for session in &server.sessions {
            // Best effort: a session that is gone or idle has nothing to cancel.
            let _ = server.target.cancel(&session.token).await;
        }
    }
    std::future::pending().await
}
