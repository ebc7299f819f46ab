//! MariaDB's side of [`inrush_load::outcome`]: how a COMMIT ends, and how a transaction is
//! looked at over a new connection.
//!
//! MariaDB keeps no status of a finished transaction, so each writer's transaction writes a
//! mark of its own (a row in `inrush_commit_marks` with a token no other transaction has)
//! just before its COMMIT: the row is there exactly when the transaction committed. When the
//! answer is lost (a reset, a proxy or tunnel that died) or late, a new connection looks at the
//! old one: still running (its COMMIT) is waited for; still there but idle (the COMMIT never
//! reached it) is killed, which rolls it back; gone, the mark says what it did. Only when the
//! server cannot be reached for the whole limit is the fate unknown, and the caller says so,
//! with the query that tells.

use crate::{engine_error, MysqlOptions};
use inrush_load::commits::Fate;
use inrush_load::outcome::{Answer, Asking, Look};
use inrush_load::Result;
use mysql_async::prelude::Queryable;
use mysql_async::Conn;
use std::time::Duration;

const TABLE: &str = "inrush_commit_marks";

/// Made before the load's transactions open (DDL would commit the one it runs in). A role
/// that may not create it loads without marks: a lost answer is then one it cannot ask about.
pub async fn prepare(conn: &mut Conn) -> bool {
    let made = conn
        .query_drop(format!(
            "CREATE TABLE IF NOT EXISTS {TABLE} ( \
               token VARCHAR(64) NOT NULL PRIMARY KEY, \
               made_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP) ENGINE=InnoDB"
        ))
        .await;
    made.is_ok() || crate::tables_exist(conn, &[TABLE]).await.unwrap_or(false)
}

/// The clause `LOCK TABLES` needs for a session that writes its mark.
pub const LOCK: &str = "inrush_commit_marks WRITE";

/// A token no other transaction's mark has: the run's, and the connection's id.
pub fn token(connection: u32) -> String {
    format!("{}-{connection}", inrush_load::commits::run_token())
}

/// A transaction at its commit: the connection it runs on, and its mark (`None`: no mark, so
/// a lost answer cannot be settled).
pub struct Pending<'a> {
    pub options: &'a MysqlOptions,
    pub connection: u32,
    pub mark: Option<&'a str>,
}

impl Pending<'_> {
    fn ask(&self) -> String {
        match self.mark {
            Some(token) => format!(
                "SELECT COUNT(*) FROM {TABLE} WHERE token = '{token}' on {} (1: committed, 0: not)",
                self.options.describe()
            ),
            None => format!(
                "count the table's rows on {} (the load could not write a mark of its commit: the role may not create {TABLE})",
                self.options.describe()
            ),
        }
    }
}

/// Writes the mark in `conn`'s open transaction.
pub async fn mark(conn: &mut Conn, token: &str) -> Result<()> {
    conn.exec_drop(format!("INSERT INTO {TABLE} (token) VALUES (?)"), (token,))
        .await
        .map_err(engine_error("marking the load's commit"))
}

/// Commits `conn`'s transaction; a lost or late answer is settled by asking, for at most
/// `limit` once the server stops answering. A committed mark is deleted again.
pub async fn commit(conn: &mut Conn, pending: &Pending<'_>, limit: Duration) -> Fate {
    let answer = async {
        match conn.query_drop("COMMIT").await {
            Ok(()) => Answer::Committed,
            // The server's own answer: the transaction rolled back.
            Err(e @ mysql_async::Error::Server(_)) => {
                Answer::Refused(engine_error("committing the load")(e))
            }
            Err(e) => Answer::Lost(e.to_string()),
        }
    };
    let asking = Asking {
        engine: "MariaDB",
        ask: pending.ask(),
        limit,
    };
    let fate = match pending.mark {
        Some(_) => {
            inrush_load::outcome::commit(answer, &asking, |within| look(pending, within)).await
        }
        // Without a mark there is nothing to look for: a lost answer stays unknown.
        None => match answer.await {
            Answer::Committed => Fate::Committed,
            Answer::Refused(e) => Fate::RolledBack(e),
            Answer::Lost(why) => Fate::Unknown {
                reason: format!("{why}; without a mark of the commit to look for"),
                ask: asking.ask,
            },
        },
    };
    if let (Fate::Committed, Some(token)) = (&fate, pending.mark) {
        // Best effort: a mark left behind is never asked about again.
        let forget = format!("DELETE FROM {TABLE} WHERE token = ?");
        let _ = tokio::time::timeout(limit, conn.exec_drop(forget, (token,))).await;
    }
    fate
}

/// One look over a new connection, within `within`.
async fn look(pending: &Pending<'_>, within: Duration) -> Result<Look, String> {
    let asked = async {
        let mut conn = pending.options.connect().await.map_err(|e| e.to_string())?;
        let command: Option<String> = conn
            .exec_first(
                "SELECT COMMAND FROM information_schema.PROCESSLIST WHERE ID = ?",
                (pending.connection,),
            )
            .await
            .map_err(|e| e.to_string())?;
        let looked = match command.as_deref() {
            Some("Query") => Look::Running,
            Some(_) => {
                // Killing the connection rolls its transaction back: the fate is final.
                conn.query_drop(format!("KILL CONNECTION {}", pending.connection))
                    .await
                    .map_err(|e| e.to_string())?;
                Look::Ended
            }
            None => {
                let token = pending.mark.unwrap_or_default();
                let marks: Option<u64> = conn
                    .exec_first(
                        format!("SELECT COUNT(*) FROM {TABLE} WHERE token = ?"),
                        (token,),
                    )
                    .await
                    .map_err(|e| e.to_string())?;
                Look::Done(marks.unwrap_or(0) > 0)
            }
        };
        let _ = conn.disconnect().await;
        Ok(looked)
    };
    match tokio::time::timeout(within, asked).await {
        Ok(looked) => looked,
        Err(_) => Err(format!("no answer in {} s", within.as_secs_f32().ceil())),
    }
}
