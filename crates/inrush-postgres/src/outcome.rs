//! PostgreSQL's side of [`inrush_load::outcome`]: how a COMMIT ends, and how a transaction is
//! looked at over a new connection. Every transaction knows its id (`txid_current()`): a
//! session still idle in it is ended (`pg_terminate_backend`, which rolls it back; a backend
//! is not stopped inside its commit), and `txid_status` is then final.

use crate::{describe_pg_error, ConnectOptions};
use inrush_load::commits::Fate;
use inrush_load::outcome::{Answer, Asking, Look};
use std::time::Duration;
use tokio_postgres::Client;

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
    let answer = async {
        match pending.client.batch_execute("COMMIT").await {
            Ok(()) => Answer::Committed,
            // The server's own answer: the transaction rolled back (a deferred key, say).
            Err(e) if e.as_db_error().is_some() => {
                let what = "COMMIT".into();
                Answer::Refused(crate::Error::Query { what, cause: e }.into())
            }
            Err(e) => Answer::Lost(describe_pg_error(&e)),
        }
    };
    let asking = Asking {
        engine: "PostgreSQL",
        ask: pending.ask(),
        limit,
    };
    inrush_load::outcome::commit(answer, &asking, |within| look(pending, within)).await
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
            (Some("committed"), _) => Look::Done(true),
            (Some("aborted"), _) => Look::Done(false),
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
