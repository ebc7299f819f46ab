//! What the driver says of itself and of its database (`SQLGetInfo`), for the summary and for
//! the statements inrush writes.

use crate::failed;

use inrush_arrow::TextForms;
use inrush_load::Result;
use odbc_api::handles::{AsStatementRef, Statement};
use odbc_api::sys::{
    InfoType, Pointer, SQLGetStmtAttr, SQLSetStmtAttr, SqlReturn, StatementAttribute,
};
use odbc_api::Connection;
use std::ptr::null_mut;

/// The database and the driver behind one connection string.
#[derive(Debug, Clone)]
pub struct Driver {
    /// The database, as the driver names it (`PostgreSQL`, `MariaDB`, `SQLite`).
    pub dbms: String,
    pub dbms_version: String,
    /// The driver's library (`psqlodbcw.so`) and its version.
    pub name: String,
    pub version: String,
    /// The character that delimits names (`"`, or `` ` `` on MariaDB).
    pub quote: char,
}

impl Driver {
    /// Reads the facts from `conn`, which it then closes: the high-level connection keeps its
    /// handle to itself, and `SQLGetInfo`'s other answers need it.
    pub fn read(conn: Connection<'_>) -> Result<Driver> {
        let dbms = conn
            .database_management_system_name()
            .map_err(failed("reading the database's name"))?;
        let quote = conn
            .identifier_quote_char()
            .map_err(failed("reading how the database quotes names"))?
            .unwrap_or('"');
        let mut handle = conn.into_handle();
        let text = |info| info_text(handle.as_sys(), info).unwrap_or_default();
        let driver = Driver {
            dbms,
            dbms_version: text(InfoType::DbmsVer),
            name: text(InfoType::DriverName),
            version: text(InfoType::DriverVer),
            quote,
        };
        let _ = handle.disconnect();
        Ok(driver)
    }

    /// Rows per INSERT statement for a table of `columns` columns. psqlODBC and SQLite's
    /// driver run one statement per parameter set, so several rows go in each (`VALUES (..),
    /// (..)`), at most 32,766 parameters (SQLite's limit, half PostgreSQL's). Measured on
    /// 100,000 rows of 6 columns: psqlODBC took 5.0 s at 1 row, 2.3 s at 100 and 1.3 s at
    /// 1,000; SQLite's driver 1.25 s at 1, 0.55 s at 100, 0.8 s at 1,000.
    ///
    /// MariaDB's driver (Connector/ODBC 3.1.15) binds arrays on the wire, but past a few
    /// hundred thousand rows of 1,000-row arrays it sent bytes of pointers as a value (its
    /// bulk path), which a text or binary column would have stored: so its rows go as
    /// multi-row INSERTs too, one set per execute, 25% slower (2.0 s against 1.6 s for
    /// 500,000 rows). Other drivers bind the array on the wire or in the database and take
    /// one row per set; Oracle has no multi-row VALUES.
    pub fn rows_per_statement(&self, columns: usize) -> usize {
        let rows = match self.kind() {
            Dbms::PostgreSql => 1000,
            Dbms::Sqlite => 100,
            Dbms::MariaDb => 1000,
            _ => return 1,
        };
        (32_766 / columns.max(1)).clamp(1, rows)
    }

    pub(crate) fn kind(&self) -> Dbms {
        Dbms::of(&self.dbms)
    }

    /// The summary's words: `PostgreSQL 18.0 through psqlodbcw.so 16.00.0000 (ODBC)`.
    pub fn describe(&self) -> String {
        let with = |name: &str, version: &str| match version.is_empty() {
            true => name.to_string(),
            false => format!("{name} {version}"),
        };
        format!(
            "{} through {} (ODBC)",
            with(&self.dbms, &self.dbms_version),
            with(&self.name, &self.version)
        )
    }
}

/// One of `SQLGetInfo`'s text answers, or `None` when the driver gives none.
fn info_text(hdbc: odbc_api::sys::HDbc, info: InfoType) -> Option<String> {
    let mut buf = vec![0u16; 256];
    let mut bytes: i16 = 0;
    // SAFETY: `hdbc` is a connected handle owned by the caller for the call's length; the buffer
    // is as long as the length given (in bytes), and the driver writes at most that much.
    let ret = unsafe {
        odbc_api::sys::SQLGetInfoW(
            hdbc,
            info,
            buf.as_mut_ptr() as Pointer,
            (buf.len() * 2) as i16,
            &mut bytes,
        )
    };
    if ret != SqlReturn::SUCCESS && ret != SqlReturn::SUCCESS_WITH_INFO {
        return None;
    }
    let chars = (bytes.max(0) as usize / 2).min(buf.len());
    let text = String::from_utf16_lossy(&buf[..chars]);
    Some(text.trim_end_matches('\0').trim().to_string())
}

/// The kinds of database inrush words statements and advice for, by the name their drivers give (`SQLGetInfo`'s
/// `SQL_DBMS_NAME`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dbms {
    PostgreSql,
    MariaDb,
    Sqlite,
    SqlServer,
    Db2,
    Oracle,
    Other,
}

impl Dbms {
    /// Whether binary values may go through the database's driver as bytes. SQLite's
    /// (0.9998) stored a blob parameter of a statement executed again at the length of an
    /// earlier execute's value, cut short or run past its end into other bytes
    /// (`odbc.rs`: `binary_values_through_a_driver_go_into_binary_columns_as_their_bytes`).
    pub(crate) fn takes_bytes(self) -> bool {
        self != Dbms::Sqlite
    }

    pub(crate) fn of(name: &str) -> Dbms {
        let name = name.to_ascii_lowercase();
        let starts = |prefixes: &[&str]| prefixes.iter().any(|p| name.starts_with(p));
        if starts(&["postgresql"]) {
            Dbms::PostgreSql
        } else if starts(&["mariadb", "mysql"]) {
            Dbms::MariaDb
        } else if starts(&["sqlite"]) {
            Dbms::Sqlite
        } else if name.contains("sql server") {
            Dbms::SqlServer
        } else if starts(&["db2", "dsn"]) {
            // DB2/LINUXX8664, DB2/NT64; DB2 for z/OS names itself DSNxxxxx.
            Dbms::Db2
        } else if starts(&["oracle"]) {
            Dbms::Oracle
        } else {
            Dbms::Other
        }
    }

    /// How a columnar input's values are written for the database to read as text. Only
    /// PostgreSQL has arrays and reads `true` and a `+00` offset everywhere; the others get
    /// JSON arrays, booleans as 1 and 0 (MariaDB's TRUE, SQL Server's BIT, Oracle's NUMBER(1))
    /// and ISO 8601's `+00:00` (SQL Server's datetimeoffset, SQLite's date functions).
    pub(crate) fn text_forms(self) -> TextForms {
        match self {
            Dbms::PostgreSql => TextForms::default(),
            Dbms::MariaDb => TextForms::WITHOUT_ARRAYS,
            _ => TextForms::ISO,
        }
    }
}

/// The statements that undo one attempt's rows and nothing before them, in the database's
/// words: rejects are found without losing the rows the transaction already holds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Savepoint {
    pub(crate) set: &'static str,
    pub(crate) back: &'static str,
    /// Dropped after an attempt that went in, where the database keeps each one until then
    /// (PostgreSQL nests a savepoint set again under the same name).
    pub(crate) release: Option<&'static str>,
}

impl Savepoint {
    pub(crate) fn of(kind: Dbms) -> Savepoint {
        const SET: &str = "SAVEPOINT inrush_rows";
        const BACK: &str = "ROLLBACK TO SAVEPOINT inrush_rows";
        const RELEASE: Option<&str> = Some("RELEASE SAVEPOINT inrush_rows");
        match kind {
            Dbms::SqlServer => Savepoint {
                set: "SAVE TRANSACTION inrush_rows",
                back: "ROLLBACK TRANSACTION inrush_rows",
                release: None,
            },
            Dbms::Db2 => Savepoint {
                set: "SAVEPOINT inrush_rows ON ROLLBACK RETAIN CURSORS",
                back: BACK,
                release: RELEASE,
            },
            // Setting it again moves it.
            Dbms::Oracle => Savepoint {
                set: SET,
                back: BACK,
                release: None,
            },
            _ => Savepoint {
                set: SET,
                back: BACK,
                release: RELEASE,
            },
        }
    }
}

/// How many parameter sets per execute the driver takes, at most `sets`. odbc-api sets the
/// size before each execute without looking at the answer, and a driver that keeps a smaller
/// one (01S02, "option value changed"; some cap it at 16 bits, some at 1) would store only that
/// many rows of each array while reporting success. So it is asked here once, and the buffers
/// hold no more sets than it said it takes.
pub(crate) fn sets_taken(statement: &mut impl AsStatementRef, sets: usize) -> usize {
    let handle = statement.as_stmt_ref().as_sys();
    // SAFETY: a live statement handle. The size goes as the pointer's value and comes back into
    // a SQLULEN (usize). No buffer is read until an execute, which sees at most this size.
    unsafe {
        let asked = SQLSetStmtAttr(handle, StatementAttribute::ParamsetSize, sets as Pointer, 0);
        if asked == SqlReturn::SUCCESS {
            return sets;
        }
        let mut kept: usize = 1;
        let value = (&mut kept as *mut usize).cast();
        let read = SQLGetStmtAttr(
            handle,
            StatementAttribute::ParamsetSize,
            value,
            0,
            null_mut(),
        );
        match read {
            SqlReturn::SUCCESS | SqlReturn::SUCCESS_WITH_INFO => kept.clamp(1, sets),
            _ => 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use odbc_api::{ConnectionOptions, Environment};

    /// SQLite's driver (which needs no server) takes any number of parameter sets, and the
    /// loads' buffers are as large as asked.
    #[test]
    fn a_driver_that_takes_the_size_asked_keeps_it() {
        let file = std::env::temp_dir().join(format!("inrush-sets-{}.db", std::process::id()));
        let env = Environment::new().unwrap();
        let text = format!("Driver={{SQLite3}};Database={};", file.display());
        let conn = env
            .connect_with_connection_string(&text, ConnectionOptions::default())
            .unwrap();
        conn.execute("CREATE TABLE t (a TEXT)", (), None).unwrap();
        let mut prepared = conn.prepare("INSERT INTO t (a) VALUES (?)").unwrap();
        assert_eq!(sets_taken(&mut prepared, 1), 1);
        assert_eq!(sets_taken(&mut prepared, 1000), 1000);
        assert_eq!(sets_taken(&mut prepared, 70_000), 70_000);
        drop(prepared);
        drop(conn);
        std::fs::remove_file(file).unwrap();
    }
}
