//! What became of a transaction whose COMMIT got no answer: asked of the server, never guessed
//! (PostgreSQL's side: `inrush_postgres::outcome`).
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
use inrush_load::{Error, Result};
use mysql_async::prelude::Queryable;
use mysql_async::Conn;
use std::time::{Duration, Instant};

/// How long a COMMIT may go unanswered before the server is asked about it.
pub const ASK_AFTER: Duration = Duration::from_secs(5);

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
    let fate = {
        let commit = conn.query_drop("COMMIT");
        tokio::pin!(commit);
        loop {
            match tokio::time::timeout(ASK_AFTER, &mut commit).await {
                Ok(Ok(())) => break Fate::Committed,
                // The server's own answer: the transaction rolled back.
                Ok(Err(e @ mysql_async::Error::Server(_))) => {
                    break Fate::RolledBack(engine_error("committing the load")(e))
                }
                Ok(Err(e)) => break settle(pending, limit, &e.to_string()).await,
                // No answer yet: a COMMIT the server still runs goes on; one it finished or
                // never received is settled.
                Err(_) => match look(pending, limit.min(ASK_AFTER)).await {
                    Ok(Look::Running) => continue,
                    _ => {
                        let why = format!("no answer to COMMIT in {} s", ASK_AFTER.as_secs());
                        break settle(pending, limit, &why).await;
                    }
                },
            }
        }
    };
    if let (Fate::Committed, Some(token)) = (&fate, pending.mark) {
        // Best effort: a mark left behind is never asked about again.
        let forget = format!("DELETE FROM {TABLE} WHERE token = ?");
        let _ = tokio::time::timeout(limit, conn.exec_drop(forget, (token,))).await;
    }
    fate
}

/// Asks until the transaction's fate is known, or `limit` has passed without an answer.
async fn settle(pending: &Pending<'_>, limit: Duration, why: &str) -> Fate {
    let unknown = |reason: String| Fate::Unknown {
        reason,
        ask: pending.ask(),
    };
    if pending.mark.is_none() {
        return unknown(format!("{why}; without a mark of the commit to look for"));
    }
    let deadline = Instant::now() + limit;
    let mut pause = Duration::from_millis(100);
    let mut last = String::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match look(pending, left.max(Duration::from_millis(100))).await {
            Ok(Look::Done(true)) => return Fate::Committed,
            Ok(Look::Done(false)) => {
                return Fate::RolledBack(Error::Engine {
                    engine: "MariaDB",
                    what: "committing the load".into(),
                    message: format!(
                        "{why}; asked afterwards, the server says the transaction did not commit"
                    ),
                })
            }
            Ok(Look::Running) | Ok(Look::Ended) => {}
            Err(e) => last = e,
        }
        if Instant::now() + pause >= deadline {
            return unknown(match last.is_empty() {
                true => why.to_string(),
                false => format!("{why}; asking the server for {} s: {last}", limit.as_secs()),
            });
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_secs(2));
    }
}

/// What the server says of the transaction.
enum Look {
    /// Its connection is gone: whether its mark is there.
    Done(bool),
    /// Its connection runs a statement (its COMMIT): the fate comes when it ends.
    Running,
    /// Its connection sat in the transaction (the COMMIT never reached it) and was killed.
    Ended,
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
