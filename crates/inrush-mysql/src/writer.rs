//! One connection's share of a load: each chunk streamed through `LOAD DATA LOCAL INFILE` from
//! memory, inside the connection's transaction, and checked.
//!
//! `LOAD DATA LOCAL` behaves as if IGNORE were given: a bad value becomes a warning and is
//! converted or truncated, a duplicate key skips the row. So every chunk runs under a
//! savepoint, and when the server's warnings (level Warning or Error; Notes are what strict
//! mode accepts, such as a decimal rounded to its scale) or its affected-row count say a row
//! did not go in as given, the chunk is rolled back to the savepoint and its rows go in again
//! without the bad ones ([`inrush_load::isolate`]): those the warnings name by row go again
//! alone and the rest around them; when a warning names no row (a duplicate key), the rows go
//! in halves until the bad one is alone. A row alone goes as a strict-mode INSERT, whose error
//! names what is wrong where LOAD DATA only warned. Each bad row is reported to the pipeline,
//! which rejects it or ends the load.
//!
//! Rows go as multi-row prepared INSERTs instead, under the same savepoint and the same checks,
//! when the server does not allow `LOAD DATA LOCAL`, or when a LOAD DATA would hold the table's
//! AUTO-INC lock for the whole statement (see [`Method`]).
//!
//! A table whose engine is not transactional (MyISAM, Aria, MEMORY) keeps what a statement
//! wrote: going back to the savepoint does nothing, so a chunk with a bad row is not loaded
//! again (its rows would go in twice); the load ends there, naming the row, and says that the
//! rows written so far stay.

use crate::catalog::quote;
use crate::engine_error;
use crate::options::MysqlOptions;
use crate::value::{lines, unescape_line};
use bytes::Bytes;
use futures_util::StreamExt;
use inrush_load::isolate::Isolation;
use inrush_load::{Interrupt, Result, Watch};
use mysql_async::prelude::Queryable;
use mysql_async::{Conn, Value};
use std::sync::Arc;
use std::time::Duration;

/// How rows whose key is in the table already are treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Conflict {
    /// A bad row, like any other.
    Error,
    /// `IGNORE`: the row already in the table (or first in the input) wins.
    Skip,
    /// `REPLACE`: the last occurrence wins; the old row is deleted and the new one inserted.
    Replace,
}

/// How a chunk's rows go to the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// `LOAD DATA LOCAL INFILE`, streamed from memory.
    LoadData,
    /// Multi-row prepared INSERTs of up to [`ROWS_PER_INSERT`] rows. InnoDB counts them as
    /// "simple inserts": under `innodb_autoinc_lock_mode=1` they take the table's AUTO-INC
    /// lock only to reserve their ids, where a LOAD DATA holds it to its end and parallel
    /// connections write in turn.
    Insert,
}

/// Ends the statement of connection `connection` when the load is interrupted before its
/// commit began: a statement that waits (for a row another session locked, for a metadata
/// lock) would otherwise hold the load, and the user's signal, until it ends. `KILL QUERY`
/// from a connection of its own makes it fail, and the load rolls back as on any error. Stops
/// watching when dropped.
pub fn interrupt_watch(
    options: &MysqlOptions,
    connection: u32,
    interrupt: &Arc<Interrupt>,
) -> Watch {
    let options = options.clone();
    interrupt.watch(Duration::from_millis(500), move || {
        end_statement(&options, connection, false)
    })
}

/// Ends the statement of connection `connection` at a second stop while it waits for a table's
/// metadata lock (the rebuild after the load, which finishes whatever a signal says, would
/// wait for another session's transaction without end); a statement that builds goes on.
pub fn lock_wait_watch(
    options: &MysqlOptions,
    connection: u32,
    interrupt: &Arc<Interrupt>,
) -> Watch {
    let options = options.clone();
    interrupt.watch_again(Duration::from_millis(500), move || {
        end_statement(&options, connection, true)
    })
}

/// `KILL QUERY` from a connection of its own; `when_waiting`: only while the statement waits
/// for a metadata lock. Best effort: a server out of reach has no statement of ours to end.
fn end_statement(options: &MysqlOptions, connection: u32, when_waiting: bool) {
    let kill = async {
        let mut conn = options.connect().await?;
        let state: Option<String> = match when_waiting {
            true => conn
                .exec_first(
                    "SELECT STATE FROM information_schema.PROCESSLIST WHERE ID = ?",
                    (connection,),
                )
                .await
                .map_err(engine_error("reading the rebuild's state"))?,
            false => None,
        };
        let waits = state.is_some_and(|s| s.starts_with("Waiting for table metadata lock"));
        let killed = match !when_waiting || waits {
            true => conn.query_drop(format!("KILL QUERY {connection}")).await,
            false => Ok(()),
        };
        let _ = conn.disconnect().await;
        killed.map_err(engine_error("KILL QUERY"))
    };
    if let Ok(rt) = inrush_load::target::runtime() {
        let _ = rt.block_on(kill);
    }
}

/// `ER_DUP_ENTRY`: expected, not a bad row, under `Conflict::Skip`.
const DUPLICATE_KEY: u16 = 1062;

pub struct ChunkWriter {
    table: String,
    columns: String,
    width: usize,
    conflict: Conflict,
    method: Method,
    /// The table's engine when it is not transactional.
    non_transactional: Option<String>,
}

/// Rows per INSERT under [`Method::Insert`] (within the protocol's 65,535 placeholders per
/// statement).
const ROWS_PER_INSERT: usize = 1000;

/// A warning as `SHOW WARNINGS` gives it.
struct Warning {
    code: u16,
    message: String,
    /// The row of the statement's input it names (1-based), if it names one.
    row: Option<usize>,
}

impl ChunkWriter {
    pub fn new(
        table: &str,
        columns: &[String],
        conflict: Conflict,
        method: Method,
        non_transactional: Option<String>,
    ) -> Self {
        ChunkWriter {
            width: columns.len(),
            method,
            non_transactional,
            table: table.to_string(),
            columns: columns
                .iter()
                .map(|c| quote(c))
                .collect::<Vec<_>>()
                .join(", "),
            conflict,
        }
    }

    /// The table, quoted and qualified.
    pub fn table(&self) -> &str {
        &self.table
    }

    fn load_data_sql(&self) -> String {
        let mode = match self.conflict {
            Conflict::Error => "",
            Conflict::Skip => "IGNORE ",
            Conflict::Replace => "REPLACE ",
        };
        format!(
            "LOAD DATA LOCAL INFILE 'inrush' {mode}INTO TABLE {} CHARACTER SET utf8mb4 ({})",
            self.table, self.columns
        )
    }

    /// Loads the `rows` lines of `data` in the connection's open transaction; see the module
    /// documentation. Returns the rows written.
    pub async fn write(
        &self,
        conn: &mut Conn,
        data: &Bytes,
        rows: u64,
        refused: &mut dyn FnMut(usize, String) -> Result<()>,
    ) -> Result<u64> {
        let (warnings, affected) = self.attempt(conn, data, rows).await?;
        if warnings.is_empty() {
            return Ok(rows);
        }
        if let Some(engine) = &self.non_transactional {
            return self.kept(engine, warnings, refused).map(|()| affected);
        }
        self.rollback(conn).await?;
        // The whole chunk was the first attempt; what it was refused for starts the search.
        let lines = lines(data);
        let mut isolation = Isolation::new(lines.len());
        let mut written = 0;
        let mut answer = Some(warnings);
        while let Some(sent) = isolation.next_attempt() {
            let warnings = match answer.take() {
                Some(warnings) => warnings,
                // A row alone goes as a strict-mode INSERT, whose error says more than LOAD
                // DATA's warning ("Incorrect date value", not "Data truncated").
                None if sent.len() == 1 => self.insert_one(conn, lines[sent.start]).await?,
                None => {
                    let mut again = Vec::with_capacity(data.len());
                    for line in &lines[sent.clone()] {
                        again.extend_from_slice(line);
                        again.push(b'\n');
                    }
                    self.attempt(conn, &again.into(), sent.len() as u64)
                        .await?
                        .0
                }
            };
            if warnings.is_empty() {
                written += sent.len() as u64;
                isolation.accepted();
            } else {
                self.rollback(conn).await?;
                self.refuse(&mut isolation, &warnings, refused)?;
            }
        }
        Ok(written)
    }

    /// Sends `rows` lines under a savepoint; returns what made a row bad (none when they went
    /// in as given; else the savepoint is still to roll back to) and the rows affected.
    async fn attempt(
        &self,
        conn: &mut Conn,
        data: &Bytes,
        rows: u64,
    ) -> Result<(Vec<Warning>, u64)> {
        self.savepoint(conn).await?;
        let (mut warnings, affected) = match self.method {
            Method::LoadData => self.load(conn, data).await?,
            Method::Insert => self.insert_all(conn, data).await?,
        };
        if warnings.is_empty() && self.conflict == Conflict::Error && affected != rows {
            warnings.push(Warning {
                code: 0,
                row: None,
                message: format!("{affected} of {rows} rows went in"),
            });
        }
        Ok((warnings, affected))
    }

    /// One row as a strict-mode INSERT under the savepoint; what made it bad, if anything.
    async fn insert_one(&self, conn: &mut Conn, line: &[u8]) -> Result<Vec<Warning>> {
        self.savepoint(conn).await?;
        let params: Vec<Value> = unescape_line(line)
            .map(|f| f.map_or(Value::NULL, Value::Bytes))
            .collect();
        match conn.exec_drop(self.insert_sql(1), params).await {
            Err(e) => {
                let other = engine_error(format!("inserting a row into {}", self.table));
                Ok(vec![self.refusal(e, other)?])
            }
            Ok(()) if conn.get_warnings() > 0 => self.bad_warnings(conn).await,
            Ok(()) => Ok(Vec::new()),
        }
    }

    /// What a statement's failure says of its rows: the server's refusal of one of them, or,
    /// for a lock that could not be had ([`lock_failure`]) or anything but the server's
    /// refusal (`other`), the load's failure.
    fn refusal(
        &self,
        e: mysql_async::Error,
        other: impl FnOnce(mysql_async::Error) -> inrush_load::Error,
    ) -> Result<Warning> {
        match e {
            mysql_async::Error::Server(e) if is_lock_failure(e.code) => {
                Err(lock_failure(e, &self.table))
            }
            // A right the user lacks refuses every row alike: the load's fault, not a row's.
            mysql_async::Error::Server(e) if crate::RIGHTS_REFUSED.contains(&e.code) => Err(
                engine_error(format!("loading into {}", self.table))(e.into()),
            ),
            mysql_async::Error::Server(e) => Ok(Warning {
                code: e.code,
                row: None,
                message: e.message,
            }),
            e => Err(other(e)),
        }
    }

    async fn savepoint(&self, conn: &mut Conn) -> Result<()> {
        conn.query_drop("SAVEPOINT inrush_chunk")
            .await
            .map_err(engine_error(format!(
                "a savepoint before loading into {}",
                self.table
            )))
    }

    async fn rollback(&self, conn: &mut Conn) -> Result<()> {
        conn.query_drop("ROLLBACK TO SAVEPOINT inrush_chunk")
            .await
            .map_err(engine_error(format!(
                "rolling back a chunk into {}",
                self.table
            )))
    }

    /// Reports the rows a refused attempt gave away: the rows the warnings name (when every
    /// warning names one) go again alone, as strict-mode INSERTs, and the rest around them;
    /// else the attempt is halved ([`Isolation::suspected`]). A row refused alone is rejected.
    fn refuse(
        &self,
        isolation: &mut Isolation,
        warnings: &[Warning],
        refused: &mut dyn FnMut(usize, String) -> Result<()>,
    ) -> Result<()> {
        let named: Vec<usize> = match warnings.iter().all(|w| w.row.is_some()) {
            true => warnings
                .iter()
                .filter_map(|w| w.row?.checked_sub(1))
                .collect(),
            false => Vec::new(),
        };
        for row in isolation.suspected(&named) {
            let message = warnings.first().map(|w| w.message.clone());
            refused(row, without_row(message.unwrap_or_default()))?;
        }
        Ok(())
    }

    /// A table that cannot roll back keeps the chunk's rows: the load ends at its first bad
    /// row, saying so.
    fn kept(
        &self,
        engine: &str,
        warnings: Vec<Warning>,
        refused: &mut dyn FnMut(usize, String) -> Result<()>,
    ) -> Result<()> {
        let kept = format!("; {} is {engine}, which cannot roll back: the rows written so far stay in the table, this chunk's included", self.table);
        match warnings.iter().find_map(|w| w.row.map(|r| (r, &w.message))) {
            Some((row, message)) => {
                refused(row.saturating_sub(1), without_row(message.clone()) + &kept)
            }
            None => Err(inrush_load::Error::ServerRefused {
                location: None,
                message: warnings
                    .first()
                    .map(|w| w.message.clone())
                    .unwrap_or_default()
                    + &kept,
                sqlstate: None,
            }),
        }
    }

    /// One `LOAD DATA LOCAL` of `data`; returns the warnings that make a row bad, and the rows
    /// it affected.
    async fn load(&self, conn: &mut Conn, data: &Bytes) -> Result<(Vec<Warning>, u64)> {
        let bytes = data.clone();
        conn.set_infile_handler(async move {
            Ok(futures_util::stream::once(async move { Ok(bytes) }).boxed())
        });
        match conn.query_drop(self.load_data_sql()).await {
            Ok(()) => {}
            Err(mysql_async::Error::Server(e)) if is_local_infile_refusal(e.code) => {
                return Err(local_infile_refused(e.into(), &self.table))
            }
            // A row the statement stopped at (a trigger's SIGNAL, a constraint), which the
            // search finds.
            Err(e) => {
                let refused = self.refusal(e, |e| local_infile_refused(e, &self.table))?;
                return Ok((vec![refused], 0));
            }
        }
        // Read before SHOW WARNINGS, whose own count would replace it: a chunk with only
        // notes (a decimal rounded to its scale) would seem to have lost its rows.
        let affected = conn.affected_rows();
        match conn.get_warnings() {
            0 => Ok((Vec::new(), affected)),
            _ => Ok((self.bad_warnings(conn).await?, affected)),
        }
    }

    /// The chunk's rows as multi-row INSERTs ([`Method::Insert`]); returns
    /// what makes a row bad (no warning names its row here) and the rows affected.
    async fn insert_all(&self, conn: &mut Conn, data: &[u8]) -> Result<(Vec<Warning>, u64)> {
        let lines = lines(data);
        let per = ROWS_PER_INSERT.min(65_535 / self.width.max(1)).max(1);
        let mut affected = 0;
        for batch in insert_batches(&lines, per) {
            let sql = self.insert_sql(batch.len());
            let params: Vec<Value> = batch
                .iter()
                .flat_map(|line| unescape_line(line))
                .map(|f| f.map_or(Value::NULL, Value::Bytes))
                .collect();
            match conn.exec_drop(&sql, params).await {
                Ok(()) => affected += conn.affected_rows(),
                Err(e) => {
                    let other = engine_error(format!("inserting into {}", self.table));
                    return Ok((vec![self.refusal(e, other)?], affected));
                }
            }
            if conn.get_warnings() > 0 {
                // Their rows are the statement's, not the chunk's: the search finds them.
                let warnings: Vec<Warning> = self
                    .bad_warnings(conn)
                    .await?
                    .into_iter()
                    .map(|w| Warning { row: None, ..w })
                    .collect();
                if !warnings.is_empty() {
                    return Ok((warnings, affected));
                }
            }
        }
        Ok((Vec::new(), affected))
    }

    /// An INSERT of `rows` rows of placeholders.
    fn insert_sql(&self, rows: usize) -> String {
        let row = format!("({})", vec!["?"; self.width].join(", "));
        let mut sql = format!(
            "{} INTO {} ({}) VALUES ",
            self.verb(),
            self.table,
            self.columns
        );
        sql.reserve((row.len() + 2) * rows);
        for i in 0..rows {
            if i > 0 {
                sql.push_str(", ");
            }
            sql.push_str(&row);
        }
        sql
    }

    fn verb(&self) -> &'static str {
        match self.conflict {
            Conflict::Error => "INSERT",
            Conflict::Skip => "INSERT IGNORE",
            Conflict::Replace => "REPLACE",
        }
    }

    /// `SHOW WARNINGS`, without Notes and, under `Conflict::Skip`, duplicate keys.
    async fn bad_warnings(&self, conn: &mut Conn) -> Result<Vec<Warning>> {
        let shown: Vec<(String, u16, String)> = conn
            .query("SHOW WARNINGS")
            .await
            .map_err(engine_error("reading the load's warnings"))?;
        Ok(shown
            .into_iter()
            .filter(|(level, code, _)| {
                level != "Note" && !(self.conflict == Conflict::Skip && *code == DUPLICATE_KEY)
            })
            .map(|(_, code, message)| Warning {
                code,
                row: row_of(&message),
                message,
            })
            .filter(|w| w.code != 0)
            .collect())
    }
}

/// The column a refusal names: `... for column 'c'`, `... for column `db`.`t`.`c``, `Column
/// 'c' cannot be null`; `None` for a key (`Duplicate entry ... for key ...`) or a trigger's
/// SIGNAL.
pub fn column_in_message(message: &str) -> Option<String> {
    if let Some(rest) = message.split("for column ").nth(1) {
        return match rest.strip_prefix('\'') {
            Some(quoted) => quoted.split('\'').next().map(str::to_string),
            // `db`.`t`.`c`: the last part (a name holds no backquote unescaped).
            None => rest
                .split(|c: char| c.is_whitespace())
                .next()
                .and_then(|path| path.rsplit('.').next())
                .map(|last| last.trim_matches('`').replace("``", "`")),
        };
    }
    let rest = message.strip_prefix("Column '")?;
    rest.split_once("' cannot be null")
        .map(|(c, _)| c.to_string())
}

/// The server's message without its ` at row N`: the pipeline names the input's line.
/// `lines` in statements of `per` rows, the rest in statements of descending powers of two:
/// a statement is prepared once per size (the connection caches it), and a chunk's rest of
/// any length needs no statement of its own.
fn insert_batches<T>(lines: &[T], per: usize) -> impl Iterator<Item = &[T]> {
    let full = lines.len() - lines.len() % per;
    let (mut rest, mut size) = (&lines[full..], per.next_power_of_two());
    let tail = std::iter::from_fn(move || {
        while size > rest.len() {
            size /= 2;
        }
        (!rest.is_empty()).then(|| {
            let (batch, after) = rest.split_at(size);
            rest = after;
            batch
        })
    });
    lines[..full].chunks(per).chain(tail)
}

fn without_row(message: String) -> String {
    match message.rfind(" at row ") {
        Some(at) if message[at + 8..].trim().parse::<u64>().is_ok() => message[..at].to_string(),
        _ => message,
    }
}

/// `... at row 12` -> 12.
fn row_of(message: &str) -> Option<usize> {
    let at = message.rfind(" at row ")?;
    message[at + 8..].trim().parse().ok()
}

/// `ER_LOCK_WAIT_TIMEOUT` (another session, perhaps another connection of this load, holds a
/// row the statement needs: a key both write) and `ER_LOCK_DEADLOCK` (InnoDB rolled the whole
/// transaction back): the load's failure, not a row's. Sent again in halves, each part would
/// wait out the timeout once more.
fn is_lock_failure(code: u16) -> bool {
    matches!(code, 1205 | 1213)
}

/// A lock the load's rows waited for in vain, as the refusal of the rows that waited: most
/// often a key that another connection of the same load wrote too (its transaction stays open
/// until the load commits), so no rerun of the statement could take it.
fn lock_failure(e: mysql_async::ServerError, table: &str) -> inrush_load::Error {
    inrush_load::Error::ServerRefused {
        location: None,
        message: format!(
            "{} (loading into {table}: a key of these rows is held by another transaction, most likely another connection of this load that wrote the same key; load with --connections 1, or --max-errors, to find the row)",
            e.message
        ),
        sqlstate: Some(e.state),
    }
}

/// `ER_NOT_ALLOWED_COMMAND` (MariaDB, MySQL 5.7), `ER_CLIENT_LOCAL_FILES_DISABLED` (MySQL 8).
fn is_local_infile_refusal(code: u16) -> bool {
    matches!(code, 1148 | 3948 | 2068)
}

/// A server that refuses `LOCAL INFILE` says why in an error; say what to do about it.
fn local_infile_refused(e: mysql_async::Error, table: &str) -> inrush_load::Error {
    let message = e.to_string();
    let hint = match &e {
        mysql_async::Error::Server(s) if is_local_infile_refusal(s.code) => " (the server must allow it: SET GLOBAL local_infile = 1, or local_infile=1 in its configuration)",
        _ => "",
    };
    inrush_load::Error::Engine {
        engine: "MariaDB",
        what: format!("LOAD DATA LOCAL INFILE into {table}"),
        message: format!("{message}{hint}"),
        code: crate::server_code(&e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_names_its_column_in_every_form_the_server_writes() {
        for (message, column) in [
            ("Data truncated for column 'birth' at row 3", Some("birth")),
            ("Out of range value for column 'qty'", Some("qty")),
            (
                "Incorrect integer value: 'f' for column `db`.`t`.`flag` at row 1",
                Some("flag"),
            ),
            ("Column 'name' cannot be null", Some("name")),
            ("Duplicate entry '1' for key 'PRIMARY'", None),
            ("refused by the trigger", None),
        ] {
            assert_eq!(column_in_message(message).as_deref(), column, "{message}");
        }
    }

    #[test]
    fn insert_batches_cover_the_lines_in_few_sizes() {
        for per in [1, 3, 1000] {
            for n in 0..2600 {
                let lines: Vec<usize> = (0..n).collect();
                let batches: Vec<&[usize]> = insert_batches(&lines, per).collect();
                assert_eq!(batches.concat(), lines, "{n} lines, {per} a statement");
                for batch in &batches {
                    assert!(
                        batch.len() == per || (batch.len() < per && batch.len().is_power_of_two()),
                        "{n} lines, {per} a statement: a batch of {}",
                        batch.len()
                    );
                }
            }
        }
    }

    #[test]
    fn warnings_name_their_row() {
        assert_eq!(
            row_of("Incorrect integer value: 'x' for column `d`.`t`.`a` at row 12"),
            Some(12)
        );
        assert_eq!(row_of("Duplicate entry '1' for key 'PRIMARY'"), None);
    }
}
