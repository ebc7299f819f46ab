//! The load ledger for `--resume`, in two tables of the database file itself: every block of an
//! input committed into a table is recorded in the same transaction as its rows, so after any
//! crash the ledger says exactly which rows are in (the same design as PostgreSQL's
//! `inrush.load_ledger`, see `inrush_postgres::ledger`). [`status`] reads it for
//! `inrush status`.

use crate::{catalog, failed};
use inrush_core::ledger::{Committed, InputFile, LoadStatus, Recorded};
use inrush_load::target::at_once;
use inrush_load::{Error, Result};
use rusqlite::{Connection, OpenFlags, OptionalExtension};
use std::path::Path;
use std::time::Duration;

const CREATE_LEDGER: &str = "\
    CREATE TABLE IF NOT EXISTS inrush_load_inputs ( \
      tbl TEXT NOT NULL, input TEXT NOT NULL, block_size INTEGER NOT NULL, \
      size INTEGER NOT NULL, mtime TEXT NOT NULL, fingerprint TEXT NOT NULL, \
      started_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP, \
      PRIMARY KEY (tbl, input, block_size)); \
    CREATE TABLE IF NOT EXISTS inrush_load_ledger ( \
      tbl TEXT NOT NULL, input TEXT NOT NULL, block_size INTEGER NOT NULL, \
      block_offset INTEGER NOT NULL, block_len INTEGER NOT NULL, \
      first_line INTEGER NOT NULL, next_line INTEGER NOT NULL, rows INTEGER NOT NULL, \
      committed_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP, \
      PRIMARY KEY (tbl, input, block_size, block_offset));";

/// Whether `inrush_load_inputs` has its `data_start` column, which ledgers made before inrush
/// recorded where the data starts lack.
fn has_data_start(conn: &Connection) -> rusqlite::Result<bool> {
    conn.query_row(
        "SELECT count(*) FROM pragma_table_info('inrush_load_inputs') WHERE name = 'data_start'",
        [],
        |r| r.get::<_, i64>(0).map(|n| n > 0),
    )
}

/// Makes the ledger's tables, or adds `data_start` to an older ledger's, in one write
/// transaction (two processes starting together would both add the column).
fn create(conn: &Connection) -> rusqlite::Result<()> {
    conn.execute_batch(&format!("BEGIN IMMEDIATE; {CREATE_LEDGER}"))?;
    let made = has_data_start(conn).and_then(|has| match has {
        true => Ok(()),
        false => conn.execute_batch("ALTER TABLE inrush_load_inputs ADD COLUMN data_start INTEGER"),
    });
    match made {
        Ok(()) => conn.execute_batch("COMMIT"),
        Err(e) => {
            let _ = conn.execute_batch("ROLLBACK");
            Err(e)
        }
    }
}

/// Registers the input for `table` (or checks it is unchanged) and returns its committed
/// blocks by offset ([`inrush_load::resume::open`]).
pub fn open(conn: &Connection, table: &str, id: &InputFile) -> Result<Vec<Committed>> {
    at_once(inrush_load::resume::open(&mut Ledger { conn, table }, id))
}

/// The ledger of one table, in one database file. Its methods do their work when called.
struct Ledger<'c> {
    conn: &'c Connection,
    table: &'c str,
}

impl inrush_load::resume::Ledger for Ledger<'_> {
    async fn create(&mut self) -> Result<()> {
        create(self.conn).map_err(failed("creating the inrush_load_ledger table"))
    }

    async fn register(&mut self, id: &InputFile) -> Result<()> {
        self.conn
            .execute(
                "INSERT INTO inrush_load_inputs \
                 (tbl, input, block_size, size, mtime, fingerprint, data_start) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) \
                 ON CONFLICT DO UPDATE SET data_start = coalesce(data_start, excluded.data_start)",
                (
                    self.table,
                    &id.input,
                    id.block_size,
                    id.size,
                    &id.mtime,
                    &id.fingerprint,
                    id.data_start,
                ),
            )
            .map(drop)
            .map_err(failed("registering the input in inrush_load_inputs"))
    }

    async fn registered(&mut self, id: &InputFile) -> Result<Option<(i64, String, String)>> {
        self.conn
            .query_row(
                "SELECT size, mtime, fingerprint FROM inrush_load_inputs \
                 WHERE tbl = ?1 AND input = ?2 AND block_size = ?3",
                (self.table, &id.input, id.block_size),
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .optional()
            .map_err(failed("reading inrush_load_inputs"))
    }

    async fn blocks(&mut self, id: &InputFile) -> Result<Vec<Committed>> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT block_offset, block_len, first_line, next_line, rows \
                 FROM inrush_load_ledger WHERE tbl = ?1 AND input = ?2 AND block_size = ?3 \
                 ORDER BY block_offset",
            )
            .map_err(failed("reading inrush_load_ledger"))?;
        stmt.query_map((self.table, &id.input, id.block_size), |r| {
            Ok(Committed {
                offset: r.get(0)?,
                len: r.get(1)?,
                first_line: r.get(2)?,
                next_line: r.get(3)?,
                rows: r.get(4)?,
            })
        })
        .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
        .map_err(failed("reading inrush_load_ledger"))
    }
}

/// Records a block in the connection's open transaction (the one holding the block's rows).
pub fn record(conn: &Connection, table: &str, id: &InputFile, block: Committed) -> Result<()> {
    conn.execute(
        "INSERT INTO inrush_load_ledger \
         (tbl, input, block_size, block_offset, block_len, first_line, next_line, rows) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        (
            table,
            &id.input,
            id.block_size,
            block.offset,
            block.len,
            block.first_line,
            block.next_line,
            block.rows,
        ),
    )
    .map(|_| ())
    .map_err(failed("recording the block in inrush_load_ledger"))
}

/// `inrush status` for the database file at `path`: every load in its ledger (into `table`
/// only, when given). `loading` stays empty: SQLite has one writer at a time and no registry
/// of what a process holds, so a load that runs now is told from an interrupted one by nothing
/// in the file (both are `interrupted` until complete).
pub fn status(path: &Path, table: Option<&str>) -> Result<Vec<LoadStatus>> {
    // Read-only: a status never makes a database file, nor writes to one.
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_URI;
    let conn = Connection::open_with_flags(path, flags)
        .map_err(failed(format!("opening {}", path.display())))?;
    // A load's commit holds the file a moment.
    conn.busy_timeout(Duration::from_secs(10))
        .map_err(failed("setting the busy timeout"))?;
    // The ledger names a table as the load's catalog read spelled it.
    let table = match table {
        None => None,
        Some(name) => match catalog::read(&conn, name)? {
            Some(table) => Some(table.qualified()),
            None => {
                return Err(Error::Columns(format!(
                    "table {name} does not exist in {}",
                    path.display()
                )))
            }
        },
    };
    let ledger: i64 = conn
        .query_row(
            "SELECT count(*) FROM sqlite_schema \
             WHERE type = 'table' AND name IN ('inrush_load_inputs', 'inrush_load_ledger')",
            [],
            |r| r.get(0),
        )
        .map_err(failed("looking for inrush_load_ledger"))?;
    if ledger < 2 {
        return Ok(Vec::new());
    }
    let data_start = match has_data_start(&conn).map_err(failed("reading inrush_load_inputs"))? {
        true => "i.data_start",
        false => "NULL",
    };
    let mut stmt = conn
        .prepare(&format!(
            "SELECT i.tbl, i.input, i.block_size, i.size, {data_start}, i.started_at, \
               count(l.block_offset), coalesce(sum(l.rows), 0), coalesce(sum(l.block_len), 0), \
               max(l.committed_at) \
             FROM inrush_load_inputs i LEFT JOIN inrush_load_ledger l \
               ON l.tbl = i.tbl AND l.input = i.input AND l.block_size = i.block_size \
             WHERE ?1 IS NULL OR i.tbl = ?1 \
             GROUP BY i.tbl, i.input, i.block_size ORDER BY 1, 2, 3"
        ))
        .map_err(failed("reading inrush_load_ledger"))?;
    let loads = stmt
        .query_map([&table], |r| {
            Ok(Recorded {
                table: r.get(0)?,
                input: r.get(1)?,
                block_size: r.get(2)?,
                size: r.get(3)?,
                data_start: r.get(4)?,
                started_at: r.get(5)?,
                blocks: r.get(6)?,
                rows: r.get(7)?,
                bytes: r.get(8)?,
                last_commit: r.get(9)?,
            })
        })
        .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
        .map_err(failed("reading inrush_load_ledger"))?;
    Ok(loads
        .into_iter()
        .map(|load| LoadStatus::new(load, Vec::new()))
        .collect())
}
