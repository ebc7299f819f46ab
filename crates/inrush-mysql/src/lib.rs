//! MariaDB and MySQL as a target of inrush: everything said to them.
//!
//! Owns: which `--to` names such a server and how to reach it ([`options`]), the catalog
//! (`information_schema`: [`catalog`]), the checks of each value against its column's type and
//! `LOAD DATA`'s escaping ([`value`]), one connection's `LOAD DATA LOCAL INFILE` streams with
//! every warning turned into a bad row ([`writer`]), and the [`inrush_load::Target`] that puts
//! them together ([`MysqlTarget`]); and a query's rows read from such a server for
//! `--from-query` ([`source`]); a whole database read and written by `inrush copy`
//! ([`database`]); and the SQL and connection of `inrush lab`'s experiments on MariaDB
//! ([`lab`]).
//!
//! Commit policy: as for PostgreSQL, every connection loads inside its own transaction and all
//! commit together once every chunk is in and every connection's checks passed; anything
//! before that rolls everything back. Not for an engine without transactions (MyISAM, Aria,
//! MEMORY): what it was given stays, which the plan and the summary say; `--max-errors` and
//! `--resume`, which rely on rolling back, are refused for it.
//!
//! Around it, the plan: secondary indexes journaled, dropped and built again after a large load
//! in one `ALTER TABLE` ([`ddl`]; MyISAM and Aria: `DISABLE KEYS`, `ENABLE KEYS`), `ANALYZE
//! TABLE` after.
//!
//! Several loads of one table: a named lock per table (`GET_LOCK`, [`claim`]), taken before the
//! journal's leftovers are read. A load that changes the table's definitions holds it to its
//! end; one that changes nothing lets it go once its writers have the table open; `inrush
//! recover` leaves a table whose lock a live load holds to that load.
//!
//! `--resume`: each block its own transaction with its row in `inrush_load_ledger` ([`ledger`]).
//!
//! A COMMIT whose answer is lost is settled by asking the server: each writer's transaction
//! writes a mark of its own, which is there exactly when it committed ([`outcome`]).
//!
//! `--create`: the table typed from the inferred types, made before the writers start (DDL
//! commits at once) and dropped again when the load does not commit.
//!
//! Foreign keys: into an empty table, written with `foreign_key_checks = 0` and checked once
//! before the commit by an anti-join of each connection's rows against the parent (MariaDB
//! never checks them again itself); otherwise row by row, as the plan says.
//!
//! `--table-lock`: one connection, `SET autocommit = 0` then `LOCK TABLES ... WRITE`, the
//! load, `COMMIT`, `UNLOCK TABLES` (LOCK TABLES commits the open transaction and START
//! TRANSACTION releases the lock, so this is the only order that keeps both).

pub mod catalog;
pub mod claim;
pub mod commits;
pub mod database;
pub mod ddl;
pub mod job;
pub mod lab;
pub mod ledger;
pub mod options;
pub mod outcome;
mod recover;
pub mod source;
mod target;
pub mod value;
pub mod writer;

pub use database::{MysqlSchemaSource, MysqlSchemaTarget};
pub use options::{is_mysql_url, MysqlOptions};
pub use recover::{recover, Recovered};
pub use source::MysqlSource;
pub use target::MysqlTarget;

/// A server error as the load reports it: what was being done, and the server's message.
/// Whether every one of inrush's bookkeeping `tables` (the journal, the ledger, the records of
/// committed loads) exists in the target database: none is made before a load needs it.
pub(crate) async fn tables_exist(
    conn: &mut mysql_async::Conn,
    tables: &[&str],
) -> inrush_load::Result<bool> {
    use mysql_async::prelude::Queryable;
    let placeholders = vec!["?"; tables.len()].join(", ");
    let found: Option<u64> = conn
        .exec_first(
            format!(
                "SELECT COUNT(*) FROM information_schema.TABLES \
                 WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME IN ({placeholders})"
            ),
            tables.to_vec(),
        )
        .await
        .map_err(engine_error(format!("looking for {}", tables.join(", "))))?;
    Ok(found.unwrap_or(0) == tables.len() as u64)
}

/// The server's codes for a statement refused for want of a right: a table's, a column's, a
/// database's, a global one.
pub(crate) const RIGHTS_REFUSED: [u16; 4] = [1142, 1143, 1044, 1227];

/// Whether the server refused a statement for want of a right, by the code [`engine_error`]
/// keeps.
pub(crate) fn refused_a_right(e: &inrush_load::Error) -> bool {
    answered_with(e, &RIGHTS_REFUSED)
}

/// Whether a statement gave up waiting for a lock (`lock_wait_timeout`,
/// `innodb_lock_wait_timeout`: ER_LOCK_WAIT_TIMEOUT).
pub(crate) fn waited_too_long(e: &inrush_load::Error) -> bool {
    answered_with(e, &[1205])
}

/// Whether a statement was ended by `KILL QUERY` (ER_QUERY_INTERRUPTED).
pub(crate) fn ended(e: &inrush_load::Error) -> bool {
    answered_with(e, &[1317])
}

fn answered_with(e: &inrush_load::Error, codes: &[u16]) -> bool {
    match e {
        inrush_load::Error::Engine {
            code: Some(code), ..
        } => codes.contains(code),
        _ => false,
    }
}

pub(crate) fn engine_error(
    what: impl Into<String>,
) -> impl FnOnce(mysql_async::Error) -> inrush_load::Error {
    let what = what.into();
    move |cause| inrush_load::Error::Engine {
        engine: "MariaDB",
        what,
        code: server_code(&cause),
        message: cause.to_string(),
    }
}

/// The server's number for an error it answered with.
pub(crate) fn server_code(e: &mysql_async::Error) -> Option<u16> {
    match e {
        mysql_async::Error::Server(e) => Some(e.code),
        _ => None,
    }
}
