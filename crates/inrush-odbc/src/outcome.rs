//! ODBC's side of [`inrush_load::outcome`] and [`inrush_load::commits`]: how a COMMIT ends,
//! what it did when its answer was lost, and the load's record for a rerun.
//!
//! No database says the same thing of a finished transaction, so each writer's transaction
//! writes a mark of its own (a row of `inrush_odbc_marks` keyed by a token no other
//! transaction has) before its COMMIT. When the answer is lost or late, a new connection
//! inserts the same token: the key makes that insert wait while the old transaction lives
//! (its COMMIT running), fail when it committed, and go in when it rolled back, in every
//! database with a primary key. The insert is rolled back.
//!
//! ODBC calls block, so each one that may not come back (a COMMIT, a look) runs on a thread
//! of its own, waited for at most the limit; one that never returns is left behind with its
//! connection, and the process exits without it.

use crate::books::{make, text_rows, Books};
use crate::target::OdbcTarget;
use crate::{failed, state_of};
use inrush_load::commits::{committed_shares, EarlierLoad, Fate};
use inrush_load::outcome::{Answer, Asking, Look};
use inrush_load::target::Share;
use inrush_load::{Error, Result};
use odbc_api::{Connection, IntoParameter, SharedConnection};
use std::sync::Arc;
use std::time::Duration;

impl Books {
    /// Makes the marks' and the records' tables before the load's transactions open (DDL
    /// commits the one it runs in on some databases). Whether the role could: without them, a
    /// lost answer stays unknown, and a rerun cannot tell it loaded the rows already.
    pub(crate) fn prepare(&self, conn: &Connection<'_>) -> bool {
        let marks = format!(
            "CREATE TABLE {} (token VARCHAR(64) NOT NULL PRIMARY KEY)",
            self.marks
        );
        let (commits, rows, int) = (&self.commits, &self.rows, self.bigint);
        let records = format!(
            "CREATE TABLE {commits} (table_schema VARCHAR(64) NOT NULL, \
             table_name VARCHAR(250) NOT NULL, identity VARCHAR(2000) NOT NULL, \
             {rows} {int} NOT NULL, run VARCHAR(64) NOT NULL, part INTEGER NOT NULL, \
             parts INTEGER NOT NULL, recorded_at VARCHAR(40))"
        );
        make(conn, &self.marks, &marks).is_ok() && make(conn, commits, &records).is_ok()
    }

    /// Writes `token`'s mark in `conn`'s open transaction.
    pub(crate) fn mark(&self, conn: &Connection<'_>, token: &str) -> Result<()> {
        let sql = format!("INSERT INTO {} (token) VALUES (?)", self.marks);
        conn.execute(&sql, (&token.into_parameter(),), None)
            .map_err(failed("marking the load's commit"))?;
        Ok(())
    }

    /// Records, in `conn`'s open transaction, its writer's share of the load. The table is
    /// named as the load quotes it, schema and all, in `table_name` (`table_schema` is empty).
    pub(crate) fn record_share(&self, conn: &Connection<'_>, share: &Share<'_>) -> Result<()> {
        let sql = format!(
            "INSERT INTO {} (table_schema, table_name, identity, {}, run, part, parts, \
             recorded_at) VALUES ('', ?, ?, ?, ?, ?, ?, CURRENT_TIMESTAMP)",
            self.commits, self.rows
        );
        let (rows, part, parts) = (share.rows as i64, share.part as i32, share.parts as i32);
        let params = (
            &self.table.as_str().into_parameter(),
            &share.identity.into_parameter(),
            &rows,
            &share.load.into_parameter(),
            &part,
            &parts,
        );
        conn.execute(&sql, params, None)
            .map_err(failed(format!("recording the load in {}", self.commits)))?;
        Ok(())
    }

    /// The records of loads into the table, each with its input's identity: the rows its
    /// committed shares hold, and whether all of them are there.
    pub(crate) fn unfinished(&self, conn: &Connection<'_>) -> Result<Vec<(String, EarlierLoad)>> {
        if !crate::books::exists(conn, &self.commits) {
            return Ok(Vec::new());
        }
        let sql = format!(
            "SELECT identity, SUM({}), MIN(recorded_at), COUNT(*), MAX(parts) FROM {} \
             WHERE table_name = ? GROUP BY identity, run ORDER BY MIN(recorded_at) DESC",
            self.rows, self.commits
        );
        let table = self.table.as_str().into_parameter();
        let found = text_rows(conn, &sql, (&table,), &self.commits)?;
        let int = |v: &Option<String>| crate::books::int(v, &self.commits);
        found
            .into_iter()
            .map(|row| {
                let earlier = EarlierLoad {
                    rows: int(&row[1])? as u64,
                    recorded_at: row[2].clone().unwrap_or_default(),
                    committed: committed_shares(int(&row[3])? as u64, int(&row[4])? as u64),
                };
                Ok((row[0].clone().unwrap_or_default(), earlier))
            })
            .collect()
    }

    /// Deletes the records of the load of `identity` into the table.
    pub(crate) fn forget(&self, conn: &Connection<'_>, identity: &str) -> Result<()> {
        let sql = format!(
            "DELETE FROM {} WHERE table_name = ? AND identity = ?",
            self.commits
        );
        let params = (
            &self.table.as_str().into_parameter(),
            &identity.into_parameter(),
        );
        conn.execute(&sql, params, None).map_err(failed(format!(
            "deleting the load's record from {}",
            self.commits
        )))?;
        Ok(())
    }
}

/// A writer's transaction at its commit: how to reach the database again, its mark (`None`:
/// the role could not make the marks' table, so a lost answer cannot be settled), and how
/// long the database may leave the questions unanswered.
pub(crate) struct Pending {
    pub(crate) target: OdbcTarget,
    pub(crate) books: Arc<Books>,
    pub(crate) token: Option<String>,
    pub(crate) limit: Duration,
}

impl Pending {
    fn ask(&self) -> String {
        let at = self.target.shown();
        match &self.token {
            Some(token) => format!(
                "SELECT COUNT(*) FROM {} WHERE token = '{token}' through {at} (1: committed, 0: not)",
                self.books.marks
            ),
            None => format!(
                "count the table's rows through {at} (the load could not write a mark of its \
                 commit: the role may not create {})",
                self.books.marks
            ),
        }
    }
}

/// Commits `conn`'s transaction (its mark written already when there is one); a lost or
/// late answer is settled by looking over new connections.
pub(crate) fn commit(conn: SharedConnection<'static>, pending: &Pending) -> Result<Fate> {
    let answer = on_a_thread(move || {
        let conn = conn
            .lock()
            .map_err(|_| Answer::Lost("the writer's connection was left poisoned".into()))?;
        conn.commit().map_err(|e| match state_of(&e).get(..2) {
            // The database's own answer: the transaction rolled back (a serialization
            // failure, a key checked at the commit).
            Some("40" | "23") => Answer::Refused(failed("committing the load")(e)),
            _ => Answer::Lost(e.to_string()),
        })
    });
    let answer = async {
        match answer.await {
            Some(Ok(())) => Answer::Committed,
            Some(Err(answer)) => answer,
            None => Answer::Lost("the COMMIT's call ended without an answer".into()),
        }
    };
    let asking = Asking {
        engine: "ODBC",
        ask: pending.ask(),
        limit: pending.limit,
    };
    let rt = inrush_load::target::runtime()?;
    let fate = rt.block_on(async {
        if pending.token.is_none() {
            // Without a mark there is nothing to look for: a lost answer stays unknown.
            return match answer.await {
                Answer::Committed => Fate::Committed,
                Answer::Refused(e) => Fate::RolledBack(e),
                Answer::Lost(why) => Fate::Unknown {
                    reason: format!("{why}; without a mark of the commit to look for"),
                    ask: asking.ask.clone(),
                },
            };
        }
        inrush_load::outcome::commit(answer, &asking, |within| look(pending, within)).await
    });
    // The runtime is dropped without waiting for a thread left behind.
    rt.shutdown_background();
    Ok(fate)
}

/// One look over a new connection, within `within`: inserts the mark's token again.
async fn look(pending: &Pending, within: Duration) -> Result<Look, String> {
    let (target, marks) = (pending.target.clone(), pending.books.marks.clone());
    let token = pending.token.clone().unwrap_or_default();
    let looked = on_a_thread(move || {
        let conn = target.connect().map_err(|e| e.to_string())?;
        conn.set_autocommit(false).map_err(|e| e.to_string())?;
        let sql = format!("INSERT INTO {marks} (token) VALUES (?)");
        let seconds = within.as_secs().max(1) as usize;
        let inserted = conn.execute(&sql, (&token.as_str().into_parameter(),), Some(seconds));
        let looked = match inserted {
            Ok(_) => Look::Done(false),
            Err(e) => match state_of(&e).as_str() {
                s if s.starts_with("23") => Look::Done(true),
                // Waited on the old transaction's key until the timeout, or was chosen to
                // end a wait on it: the old transaction lives.
                s if s.starts_with("HYT") || s.starts_with("40") || s == "57014" => Look::Running,
                _ => return Err(e.to_string()),
            },
        };
        let _ = conn.rollback();
        Ok(looked)
    });
    match tokio::time::timeout(within + Duration::from_secs(1), looked).await {
        Ok(Some(looked)) => looked,
        Ok(None) => Err("the look's call ended without an answer".into()),
        Err(_) => Err(format!("no answer in {} s", within.as_secs_f32().ceil())),
    }
}

/// `call` on a thread of its own; its result, or `None` when the thread ended without one.
async fn on_a_thread<T: Send + 'static>(call: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let _ = tx.send(call());
    });
    rx.await.ok()
}

/// Deletes `token`'s mark over `conn` after its commit, waiting at most `limit`: a mark left
/// behind is never asked about again.
pub(crate) fn forget_mark(
    conn: SharedConnection<'static>,
    books: &Books,
    token: &str,
    limit: Duration,
) {
    let sql = format!("DELETE FROM {} WHERE token = ?", books.marks);
    let token = token.to_string();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        // In autocommit: no COMMIT of its own on the wire, to be taken for the load's.
        if let Ok(conn) = conn.lock() {
            if conn.set_autocommit(true).is_ok() {
                let _ = conn.execute(&sql, (&token.as_str().into_parameter(),), None);
            }
        }
        let _ = tx.send(());
    });
    let _ = rx.recv_timeout(limit);
}

/// A lost answer the database could not be asked about, as the kit says it.
pub(crate) fn unknown(reason: String, ask: String) -> Error {
    Error::CommitUnknown {
        unknown: 1,
        connections: 1,
        committed: 0,
        rows_committed: 0,
        reason,
        ask,
        rerun_asks: false,
    }
}
