//! The load ledger for `--resume`, in two tables of the target database: every block of an
//! input committed into a table is recorded in the same transaction as its rows, so after any
//! crash the ledger says exactly which rows are in (the design of PostgreSQL's
//! `inrush.load_ledger`, see `inrush_postgres::ledger`). The key's columns are sized to fit
//! InnoDB's 3072-byte key in utf8mb4: an input path of up to 500 characters.

use crate::engine_error;
use inrush_core::ledger::{Committed, InputFile};
use inrush_load::{Error, Result};
use mysql_async::prelude::Queryable;
use mysql_async::Conn;

const CREATE_INPUTS: &str = "CREATE TABLE IF NOT EXISTS inrush_load_inputs ( \
    tbl VARCHAR(130) NOT NULL, input VARCHAR(500) NOT NULL, block_size BIGINT NOT NULL, \
    size BIGINT NOT NULL, mtime VARCHAR(40) NOT NULL, fingerprint VARCHAR(40) NOT NULL, \
    started_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP, \
    PRIMARY KEY (tbl, input, block_size)) ENGINE=InnoDB";

const CREATE_LEDGER: &str = "CREATE TABLE IF NOT EXISTS inrush_load_ledger ( \
    tbl VARCHAR(130) NOT NULL, input VARCHAR(500) NOT NULL, block_size BIGINT NOT NULL, \
    block_offset BIGINT NOT NULL, block_len BIGINT NOT NULL, \
    first_line BIGINT NOT NULL, next_line BIGINT NOT NULL, `rows` BIGINT NOT NULL, \
    committed_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP, \
    PRIMARY KEY (tbl, input, block_size, block_offset)) ENGINE=InnoDB";

/// Registers the input for `table` (or checks it is unchanged) and returns its committed
/// blocks by offset.
pub async fn open(conn: &mut Conn, table: &str, id: &InputFile) -> Result<Vec<Committed>> {
    for sql in [CREATE_INPUTS, CREATE_LEDGER] {
        conn.query_drop(sql)
            .await
            .map_err(engine_error("creating the inrush_load_ledger table"))?;
    }
    let known: Option<(i64, String, String)> = conn
        .exec_first(
            "SELECT size, mtime, fingerprint FROM inrush_load_inputs \
             WHERE tbl = ? AND input = ? AND block_size = ?",
            (table, &id.input, id.block_size),
        )
        .await
        .map_err(engine_error("reading inrush_load_inputs"))?;
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
        None => conn
            .exec_drop(
                "INSERT INTO inrush_load_inputs (tbl, input, block_size, size, mtime, fingerprint) \
                 VALUES (?, ?, ?, ?, ?, ?)",
                (table, &id.input, id.block_size, id.size, &id.mtime, &id.fingerprint),
            )
            .await
            .map_err(engine_error("registering the input in inrush_load_inputs"))?,
    }
    let rows: Vec<(i64, i64, i64, i64, i64)> = conn
        .exec(
            "SELECT block_offset, block_len, first_line, next_line, `rows` FROM inrush_load_ledger \
             WHERE tbl = ? AND input = ? AND block_size = ? ORDER BY block_offset",
            (table, &id.input, id.block_size),
        )
        .await
        .map_err(engine_error("reading inrush_load_ledger"))?;
    Ok(rows
        .into_iter()
        .map(|(offset, len, first_line, next_line, rows)| Committed {
            offset,
            len,
            first_line,
            next_line,
            rows,
        })
        .collect())
}

/// Records a block in the connection's open transaction (the one holding the block's rows).
pub async fn record(conn: &mut Conn, table: &str, id: &InputFile, block: Committed) -> Result<()> {
    conn.exec_drop(
        "INSERT INTO inrush_load_ledger \
         (tbl, input, block_size, block_offset, block_len, first_line, next_line, `rows`) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
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
    .await
    .map_err(engine_error("recording the block in inrush_load_ledger"))
}
