//! The load ledger for `--resume`, in two tables of the database file itself: every block of an
//! input committed into a table is recorded in the same transaction as its rows, so after any
//! crash the ledger says exactly which rows are in (the same design as PostgreSQL's
//! `inrush.load_ledger`, see `inrush_postgres::ledger`).

use crate::failed;
use inrush_core::ledger::{Committed, InputFile};
use inrush_load::{Error, Result};
use rusqlite::{Connection, OptionalExtension};

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

/// Registers the input for `table` (or checks it is unchanged) and returns its committed
/// blocks by offset.
pub fn open(conn: &Connection, table: &str, id: &InputFile) -> Result<Vec<Committed>> {
    conn.execute_batch(CREATE_LEDGER)
        .map_err(failed("creating the inrush_load_ledger table"))?;
    let known = conn
        .query_row(
            "SELECT size, mtime, fingerprint FROM inrush_load_inputs \
             WHERE tbl = ?1 AND input = ?2 AND block_size = ?3",
            (table, &id.input, id.block_size),
            |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                ))
            },
        )
        .optional()
        .map_err(failed("reading inrush_load_inputs"))?;
    match known {
        Some((size, mtime, fingerprint)) => {
            if (size, &mtime, &fingerprint) != (id.size, &id.mtime, &id.fingerprint) {
                return Err(Error::Usage(format!(
                    "--resume: {} changed since its load began (then {size} bytes, modified {mtime}, fingerprint {fingerprint}; now {}): load it without --resume into a table without its old rows",
                    id.input,
                    id.describe()
                )));
            }
        }
        None => {
            conn.execute(
                "INSERT INTO inrush_load_inputs (tbl, input, block_size, size, mtime, fingerprint) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                (table, &id.input, id.block_size, id.size, &id.mtime, &id.fingerprint),
            )
            .map_err(failed("registering the input in inrush_load_inputs"))?;
        }
    }
    let mut stmt = conn
        .prepare(
            "SELECT block_offset, block_len, first_line, next_line, rows FROM inrush_load_ledger \
             WHERE tbl = ?1 AND input = ?2 AND block_size = ?3 ORDER BY block_offset",
        )
        .map_err(failed("reading inrush_load_ledger"))?;
    let blocks = stmt
        .query_map((table, &id.input, id.block_size), |r| {
            Ok(Committed {
                offset: r.get(0)?,
                len: r.get(1)?,
                first_line: r.get(2)?,
                next_line: r.get(3)?,
                rows: r.get(4)?,
            })
        })
        .and_then(|rows| rows.collect::<rusqlite::Result<Vec<_>>>())
        .map_err(failed("reading inrush_load_ledger"))?;
    Ok(blocks)
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
