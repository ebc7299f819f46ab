//! What became of a transaction whose COMMIT got no answer: asked of the server, never guessed.
//!
//! A COMMIT can reach the server and its answer be lost on the way back (a reset, a proxy or
//! tunnel that died, a server gone silent), and then the rows are in while the client saw only
//! an error. So a COMMIT that ends in anything but the server's own error is settled by asking
//! over a new connection: a session still there in its transaction is ended first, unless it is
//! running (its COMMIT finishes: a backend is not stopped inside its commit), and the
//! transaction's fate is then read with `txid_status`, which is final once no session holds it.
//! A COMMIT still unanswered after [`ASK_AFTER`] is asked about the same way, which is how a
//! silent connection is noticed at the commit. Only when the server cannot be reached for the
//! whole limit is the fate unknown, and then the caller says so, with the query that tells.

use crate::{describe_pg_error, ConnectOptions};
use inrush_load::commits::Fate;
use std::time::{Duration, Instant};
use tokio_postgres::Client;

/// How long a COMMIT may go unanswered before the server is asked about it.
pub const ASK_AFTER: Duration = Duration::from_secs(5);

/// A transaction at its commit, and where to ask about it should the answer not come.
pub struct Pending<'a> {
    pub client: &'a Client,
    pub server: &'a ConnectOptions,
    /// The session's server process, and the transaction's id (`txid_current()`).
    pub pid: i32,
    pub txid: i64,
}

impl Pending<'_> {
    /// The query that tells the transaction's fate, for a message.
    pub fn ask(&self) -> String {
        format!(
            "SELECT txid_status({}) on {} (committed, or aborted)",
            self.txid,
            self.server.describe()
        )
    }
}

/// Commits `pending`; a lost or late answer is settled by asking, for at most `limit` once the
/// server stops answering.
pub async fn commit(pending: &Pending<'_>, limit: Duration) -> Fate {
    let commit = pending.client.batch_execute("COMMIT");
    tokio::pin!(commit);
    loop {
        match tokio::time::timeout(ASK_AFTER, &mut commit).await {
            Ok(Ok(())) => return Fate::Committed,
            // The server's own answer: the transaction rolled back (a deferred key, say).
            Ok(Err(e)) if e.as_db_error().is_some() => {
                let error = crate::Error::Query {
                    what: "COMMIT".into(),
                    cause: e,
                };
                return Fate::RolledBack(error.into());
            }
            Ok(Err(e)) => return settle(pending, limit, &describe_pg_error(&e)).await,
            // No answer yet: a commit that takes its time (a synchronous standby) goes on; one
            // the server finished or never received is settled.
            Err(_) => match look(pending, limit.min(ASK_AFTER)).await {
                Ok(Look::Running) => continue,
                _ => {
                    let why = format!("no answer to COMMIT in {} s", ASK_AFTER.as_secs());
                    return settle(pending, limit, &why).await;
                }
            },
        }
    }
}

/// Asks until the transaction's fate is known, or `limit` has passed without an answer.
pub async fn settle(pending: &Pending<'_>, limit: Duration, why: &str) -> Fate {
    let deadline = Instant::now() + limit;
    let mut pause = Duration::from_millis(100);
    let mut last = String::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match look(pending, left.max(Duration::from_millis(100))).await {
            Ok(Look::Done(fate)) => {
                return match fate {
                    Fated::Committed => Fate::Committed,
                    Fated::Aborted => Fate::RolledBack(inrush_load::Error::from(
                        crate::Error::Network(format!(
                            "COMMIT: {why}; asked afterwards, the server says the transaction did not commit"
                        )),
                    )),
                };
            }
            // Its COMMIT is running, or its session was just ended: look again.
            Ok(Look::Running) | Ok(Look::Ended) => {}
            Err(e) => last = e,
        }
        if Instant::now() + pause >= deadline {
            let reason = match last.is_empty() {
                true => why.to_string(),
                false => format!("{why}; asking the server for {} s: {last}", limit.as_secs()),
            };
            return Fate::Unknown {
                reason,
                ask: pending.ask(),
            };
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_secs(2));
    }
}

/// What the server says of a transaction.
enum Look {
    Done(Fated),
    /// Its session runs a statement (its COMMIT): the fate comes when it ends.
    Running,
    /// Its session sat in the transaction (the COMMIT never reached it) and was ended.
    Ended,
}

enum Fated {
    Committed,
    Aborted,
}

/// One look over a new connection, within `within`.
async fn look(pending: &Pending<'_>, within: Duration) -> Result<Look, String> {
    let asked = async {
        // Apart from the load's connections, which its watch may have cut.
        let server = pending.server.apart();
        let client = server.connect().await.map_err(|e| e.to_string())?;
        // The session, if it still holds the transaction (a pid alone may have been reused).
        let row = client
            .query_one(
                "SELECT txid_status($1), \
                        (SELECT state FROM pg_stat_activity \
                          WHERE pid = $2 AND backend_xid::text = ($1 % 4294967296)::text)",
                &[&pending.txid, &pending.pid],
            )
            .await
            .map_err(|e| describe_pg_error(&e))?;
        let (status, state): (Option<String>, Option<String>) = (row.get(0), row.get(1));
        Ok(match (status.as_deref(), state.as_deref()) {
            (Some("committed"), _) => Look::Done(Fated::Committed),
            (Some("aborted"), _) => Look::Done(Fated::Aborted),
            (_, Some("active")) => Look::Running,
            (_, Some(_)) => {
                // Idle in its transaction: its COMMIT never arrived, and ending the session
                // rolls it back, which makes the fate final.
                client
                    .execute("SELECT pg_terminate_backend($1)", &[&pending.pid])
                    .await
                    .map_err(|e| describe_pg_error(&e))?;
                Look::Ended
            }
            // The session is ending by itself: its fate is about to be final.
            (_, None) => Look::Ended,
        })
    };
    match tokio::time::timeout(within, asked).await {
        Ok(looked) => looked,
        Err(_) => Err(format!("no answer in {} s", within.as_secs_f32().ceil())),
    }
}
