//! The load ledger, for `--resume`: every block of an input committed into a table is recorded
//! in the same transaction as its rows, so after any crash the ledger says exactly which rows
//! are in: a rerun loads every other block once, and never one twice. The input is identified
//! by path and block size (blocks are cut the same way again only with the same block size) and
//! fingerprinted by size, modification time and a hash of its head and tail, so a changed file
//! is refused instead of being mixed with the rows of its previous version.

use crate::{query_error, Error, Result};
pub use inrush_core::ledger::{resume_point, Committed, InputFile};
use tokio_postgres::Client;

const CREATE_LEDGER: &str = "CREATE SCHEMA IF NOT EXISTS inrush; \
     CREATE TABLE IF NOT EXISTS inrush.load_inputs ( \
       table_oid oid NOT NULL, input text NOT NULL, block_size bigint NOT NULL, \
       size bigint NOT NULL, mtime text NOT NULL, fingerprint text NOT NULL, \
       started_at timestamptz NOT NULL DEFAULT now(), \
       PRIMARY KEY (table_oid, input, block_size)); \
     CREATE TABLE IF NOT EXISTS inrush.load_ledger ( \
       table_oid oid NOT NULL, input text NOT NULL, block_size bigint NOT NULL, \
       block_offset bigint NOT NULL, block_len bigint NOT NULL, \
       first_line bigint NOT NULL, next_line bigint NOT NULL, rows bigint NOT NULL, \
       committed_at timestamptz NOT NULL DEFAULT now(), \
       PRIMARY KEY (table_oid, input, block_size, block_offset))";

/// Which input, cut how, and what it looked like, loaded into which table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputIdentity {
    pub table_oid: u32,
    /// The canonical path.
    pub input: String,
    pub block_size: i64,
    pub size: i64,
    pub mtime: String,
    pub fingerprint: String,
}

/// Registers the input (or checks it is unchanged) and returns its committed blocks by offset.
pub async fn open(client: &Client, id: &InputIdentity) -> Result<Vec<Committed>> {
    client
        .batch_execute(CREATE_LEDGER)
        .await
        .map_err(query_error("creating the inrush.load_ledger table"))?;
    let known = client
        .query_opt(
            "SELECT size, mtime, fingerprint FROM inrush.load_inputs WHERE table_oid = $1 AND input = $2 AND block_size = $3",
            &[&id.table_oid, &id.input, &id.block_size],
        )
        .await
        .map_err(query_error("reading inrush.load_inputs"))?;
    match known {
        Some(row) => {
            let (size, mtime, fingerprint): (i64, String, String) =
                (row.get(0), row.get(1), row.get(2));
            if (size, &mtime, &fingerprint) != (id.size, &id.mtime, &id.fingerprint) {
                return Err(Error::InputChanged {
                    input: id.input.clone(),
                    then: format!("{size} bytes, modified {mtime}, fingerprint {fingerprint}"),
                    now: format!(
                        "{} bytes, modified {}, fingerprint {}",
                        id.size, id.mtime, id.fingerprint
                    ),
                });
            }
        }
        None => {
            client
                .execute(
                    "INSERT INTO inrush.load_inputs (table_oid, input, block_size, size, mtime, fingerprint) VALUES ($1, $2, $3, $4, $5, $6)",
                    &[&id.table_oid, &id.input, &id.block_size, &id.size, &id.mtime, &id.fingerprint],
                )
                .await
                .map_err(query_error("registering the input in inrush.load_inputs"))?;
        }
    }
    let rows = client
        .query(
            "SELECT block_offset, block_len, first_line, next_line, rows FROM inrush.load_ledger \
             WHERE table_oid = $1 AND input = $2 AND block_size = $3 ORDER BY block_offset",
            &[&id.table_oid, &id.input, &id.block_size],
        )
        .await
        .map_err(query_error("reading inrush.load_ledger"))?;
    Ok(rows
        .iter()
        .map(|r| Committed {
            offset: r.get(0),
            len: r.get(1),
            first_line: r.get(2),
            next_line: r.get(3),
            rows: r.get(4),
        })
        .collect())
}

/// Whether the block at `offset` is committed (after a COMMIT whose answer was lost).
pub async fn contains(client: &Client, id: &InputIdentity, offset: i64) -> Result<bool> {
    let row = client
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM inrush.load_ledger WHERE table_oid = $1 AND input = $2 AND block_size = $3 AND block_offset = $4)",
            &[&id.table_oid, &id.input, &id.block_size, &offset],
        )
        .await
        .map_err(query_error("reading inrush.load_ledger"))?;
    Ok(row.get(0))
}

/// Records a block in the caller's open transaction (the one holding the block's rows); the
/// error is the driver's, so the caller can tell a lost connection from a refusal.
pub async fn record(
    client: &Client,
    id: &InputIdentity,
    block: Committed,
) -> Result<(), tokio_postgres::Error> {
    client
        .execute(
            "INSERT INTO inrush.load_ledger (table_oid, input, block_size, block_offset, block_len, first_line, next_line, rows) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
            &[&id.table_oid, &id.input, &id.block_size, &block.offset, &block.len, &block.first_line, &block.next_line, &block.rows],
        )
        .await?;
    Ok(())
}

impl InputIdentity {
    pub fn new(table_oid: u32, file: InputFile) -> Self {
        InputIdentity {
            table_oid,
            input: file.input,
            block_size: file.block_size,
            size: file.size,
            mtime: file.mtime,
            fingerprint: file.fingerprint,
        }
    }
}
