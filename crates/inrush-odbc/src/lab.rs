//! What `inrush lab` says through an ODBC driver: the lab's table in SQL every database takes,
//! and a lab connection that sends the seeded rows the ways the field reports' programs did
//! (a literal INSERT per row; a prepared INSERT bound to parameter arrays of so many rows per
//! execute, committed every so many rows), counts them, and reads the log's position where
//! the database says it.
//!
//! The lab (`inrush-lab`) decides what runs and times it; everything here is one statement or
//! loop through the driver.

use crate::books::{int, text_rows};
use crate::driver::{Dbms, Driver};
use crate::failed;
use crate::target::OdbcTarget;
use inrush_load::Result;
use odbc_api::Connection;

/// The lab's columns, in the order every method sends them.
pub const COLUMNS: &str = "fieldint1, fieldint2, fieldint3, fieldchar1, fieldchar2, fieldchar3";

/// The longest text of each column, in bytes, for the bound buffers.
const WIDTHS: [usize; 6] = [11, 11, 11, 100, 100, 100];

/// The SqlBulkCopy table, no key: `CREATE TABLE {t} (...)`.
pub const TABLE: &str =
    "CREATE TABLE {t} (fieldint1 INTEGER NOT NULL, fieldint2 INTEGER NOT NULL, \
     fieldint3 INTEGER NOT NULL, fieldchar1 VARCHAR(100) NOT NULL, \
     fieldchar2 VARCHAR(100) NOT NULL, fieldchar3 VARCHAR(100) NOT NULL)";

/// Receives the rows sent so far, for the insert-rate samples.
pub type Tick<'a> = &'a (dyn Fn(u64) + Sync);

/// The database behind a connection string, as the lab reports it.
#[derive(Debug, Clone)]
pub struct LabServer {
    /// As the driver names it: `PostgreSQL`, `MariaDB`, `Microsoft SQL Server`.
    pub dbms: String,
    /// `PostgreSQL 18.0 through psqlodbcw.so 13.02.0000 (ODBC)`.
    pub described: String,
    /// What the database calls its log, where the lab reads its position (`None`: it does
    /// not).
    pub log: Option<&'static str>,
    /// Whether the database takes several writing connections at once (SQLite does not).
    pub parallel: bool,
}

/// One connection of the lab.
pub struct LabConn {
    conn: Connection<'static>,
    kind: Dbms,
}

impl LabServer {
    pub fn read(connection: &str) -> Result<LabServer> {
        let driver = Driver::read(OdbcTarget::new(connection).connect()?)?;
        let kind = driver.kind();
        Ok(LabServer {
            described: driver.describe(),
            log: log_name(kind),
            parallel: kind != Dbms::Sqlite,
            dbms: driver.dbms,
        })
    }
}

/// The log whose position the lab reads: PostgreSQL's WAL, InnoDB's redo log.
fn log_name(kind: Dbms) -> Option<&'static str> {
    match kind {
        Dbms::PostgreSql => Some("WAL"),
        Dbms::MariaDb => Some("redo"),
        _ => None,
    }
}

impl LabConn {
    pub fn connect(connection: &str) -> Result<LabConn> {
        let target = OdbcTarget::new(connection);
        let conn = target.connect()?;
        let name = conn
            .database_management_system_name()
            .map_err(failed("reading the database's name"))?;
        Ok(LabConn {
            conn,
            kind: Dbms::of(&name),
        })
    }

    pub fn exec(&self, sql: &str) -> Result<()> {
        self.conn
            .execute(sql, (), None)
            .map_err(failed(sql.to_string()))?;
        Ok(())
    }

    /// The `column`th value (from 1) of the first row `sql` returns, as text.
    fn value(&self, sql: &str, column: usize) -> Result<Option<String>> {
        let rows = text_rows(&self.conn, sql, (), sql)?;
        Ok(rows
            .into_iter()
            .next()
            .and_then(|row| row.into_iter().nth(column - 1))
            .flatten())
    }

    pub fn count(&self, table: &str) -> Result<u64> {
        let sql = format!("SELECT COUNT(*) FROM {table}");
        Ok(int(&self.value(&sql, 1)?, &sql)? as u64)
    }

    /// The log's position in bytes, where the database says it ([`LabServer::log`]).
    pub fn log_position(&self) -> Option<u64> {
        let (sql, column) = match self.kind {
            // Where the next record goes: written out or not, as the native lab reads it.
            Dbms::PostgreSql => ("SELECT pg_current_wal_insert_lsn() - '0/0'::pg_lsn", 1),
            Dbms::MariaDb => ("SHOW GLOBAL STATUS LIKE 'Innodb_lsn_current'", 2),
            _ => return None,
        };
        let value = self.value(sql, column).ok()??;
        // PostgreSQL's difference is a numeric.
        value.split('.').next()?.parse().ok()
    }

    /// One `INSERT ... VALUES (literals)` per row, in autocommit.
    pub fn insert_literal(&self, table: &str, rows: &[[String; 6]], tick: Tick) -> Result<()> {
        for row in rows {
            let texts = row[3..]
                .iter()
                .map(|t| format!("'{}'", t.replace('\'', "''")));
            let values: Vec<String> = row[..3].iter().cloned().chain(texts).collect();
            let sql = format!(
                "INSERT INTO {table} ({COLUMNS}) VALUES ({})",
                values.join(", ")
            );
            self.exec(&sql)?;
            tick(1);
        }
        Ok(())
    }

    /// A prepared one-row INSERT, executed with parameter arrays of `per_execute` rows
    /// (`SQL_ATTR_PARAMSET_SIZE`; 1: row by row), committed every `every` rows (`None`:
    /// autocommit) and at the end.
    pub fn insert_arrays(
        &self,
        table: &str,
        rows: &[[String; 6]],
        per_execute: usize,
        every: Option<u64>,
        tick: Tick,
    ) -> Result<()> {
        let per = per_execute.clamp(1, 100_000);
        let marks = ["?"; 6].join(", ");
        let sql = format!("INSERT INTO {table} ({COLUMNS}) VALUES ({marks})");
        let autocommit = |on: bool| {
            self.conn
                .set_autocommit(on)
                .map_err(failed("switching autocommit"))
        };
        autocommit(every.is_none())?;
        let sent = self.send(&sql, rows, per, every, tick);
        let ended = match (&sent, every) {
            (Ok(()), Some(_)) => self.conn.commit().map_err(failed("COMMIT")),
            (Err(_), Some(_)) => self.conn.rollback().map_err(failed("ROLLBACK")),
            (_, None) => Ok(()),
        };
        autocommit(true)?;
        sent.and(ended)
    }

    fn send(
        &self,
        sql: &str,
        rows: &[[String; 6]],
        per: usize,
        every: Option<u64>,
        tick: Tick,
    ) -> Result<()> {
        let mut prepared = self.conn.prepare(sql).map_err(failed(sql.to_string()))?;
        let per = crate::driver::sets_taken(&mut prepared, per);
        let mut inserter = prepared
            .into_text_inserter(per, WIDTHS)
            .map_err(failed("binding the parameter arrays"))?;
        let mut pending = 0u64;
        for chunk in rows.chunks(per) {
            inserter.set_num_rows(chunk.len());
            for column in 0..6 {
                let mut cells = inserter.column_mut(column);
                for (i, row) in chunk.iter().enumerate() {
                    cells.set_cell(i, Some(row[column].as_bytes()));
                }
            }
            inserter
                .execute()
                .map_err(failed(format!("inserting {} rows", chunk.len())))?;
            pending += chunk.len() as u64;
            if every.is_some_and(|every| pending >= every) {
                self.conn.commit().map_err(failed("COMMIT"))?;
                pending = 0;
            }
            tick(chunk.len() as u64);
        }
        Ok(())
    }
}
