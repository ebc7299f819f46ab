//! The load ledger for `--resume` over ODBC: two tables beside the target table
//! ([`Books`]), with the columns of the SQLite and MariaDB engines' ledgers. Every block is
//! recorded in the transaction that holds its rows, so after any crash the ledger says exactly
//! which rows are in (see `inrush_postgres::ledger` for the design); the rule that reads it is
//! the kit's ([`inrush_load::resume::open`]).

use crate::books::{exists, int, make, text_rows, Books};
use crate::failed;
use inrush_core::ledger::{Committed, InputFile, LoadStatus, Recorded};
use inrush_load::target::at_once;
use inrush_load::Result;
use odbc_api::{Connection, IntoParameter};

impl Books {
    fn create_inputs(&self) -> String {
        let (inputs, int) = (&self.inputs, self.bigint);
        format!(
            "CREATE TABLE {inputs} (tbl VARCHAR(250) NOT NULL, input VARCHAR(500) NOT NULL, \
             block_size {int} NOT NULL, size {int} NOT NULL, mtime VARCHAR(40) NOT NULL, \
             fingerprint VARCHAR(40) NOT NULL, data_start {int}, started_at VARCHAR(40), \
             PRIMARY KEY (tbl, input, block_size))"
        )
    }

    fn create_ledger(&self) -> String {
        let (ledger, int, rows) = (&self.ledger, self.bigint, &self.rows);
        format!(
            "CREATE TABLE {ledger} (tbl VARCHAR(250) NOT NULL, input VARCHAR(500) NOT NULL, \
             block_size {int} NOT NULL, block_offset {int} NOT NULL, block_len {int} NOT NULL, \
             first_line {int} NOT NULL, next_line {int} NOT NULL, {rows} {int} NOT NULL, \
             committed_at VARCHAR(40), PRIMARY KEY (tbl, input, block_size, block_offset))"
        )
    }

    /// Records `block` of `id` in `conn`'s open transaction (the one holding its rows).
    pub(crate) fn record(
        &self,
        conn: &Connection<'_>,
        id: &InputFile,
        block: Committed,
    ) -> Result<()> {
        let sql = format!(
            "INSERT INTO {} (tbl, input, block_size, block_offset, block_len, first_line, \
             next_line, {}, committed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, CURRENT_TIMESTAMP)",
            self.ledger, self.rows
        );
        let params = (
            &self.table.as_str().into_parameter(),
            &id.input.as_str().into_parameter(),
            &id.block_size,
            &block.offset,
            &block.len,
            &block.first_line,
            &block.next_line,
            &block.rows,
        );
        conn.execute(&sql, params, None)
            .map_err(failed(format!("recording the block in {}", self.ledger)))?;
        Ok(())
    }

    /// `inrush status`: every load this ledger records (into its table only, when `one`).
    pub(crate) fn status(&self, conn: &Connection<'_>, one: bool) -> Result<Vec<LoadStatus>> {
        if !exists(conn, &self.inputs) || !exists(conn, &self.ledger) {
            return Ok(Vec::new());
        }
        let (inputs, blocks, rows) = (&self.inputs, &self.ledger, &self.rows);
        let only = match one {
            true => "WHERE i.tbl = ?",
            false => "",
        };
        let sql = format!(
            "SELECT i.tbl, i.input, i.block_size, i.size, i.data_start, i.started_at, \
               COUNT(l.block_offset), COALESCE(SUM(l.{rows}), 0), COALESCE(SUM(l.block_len), 0), \
               MAX(l.committed_at) \
             FROM {inputs} i LEFT JOIN {blocks} l \
               ON l.tbl = i.tbl AND l.input = i.input AND l.block_size = i.block_size \
             {only} GROUP BY i.tbl, i.input, i.block_size, i.size, i.data_start, i.started_at \
             ORDER BY i.tbl, i.input, i.block_size"
        );
        let table = self.table.as_str().into_parameter();
        let found = match one {
            true => text_rows(conn, &sql, (&table,), blocks)?,
            false => text_rows(conn, &sql, (), blocks)?,
        };
        found
            .into_iter()
            .map(|row| {
                let at = |i: usize| int(&row[i], blocks);
                let recorded = Recorded {
                    table: row[0].clone().unwrap_or_default(),
                    input: row[1].clone().unwrap_or_default(),
                    block_size: at(2)?,
                    size: at(3)?,
                    data_start: at(4).ok(),
                    started_at: row[5].clone().unwrap_or_default(),
                    blocks: at(6)?,
                    rows: at(7)?,
                    bytes: at(8)?,
                    last_commit: row[9].clone(),
                };
                Ok(LoadStatus::new(recorded, Vec::new()))
            })
            .collect()
    }

    /// Registers `id` (or checks it is unchanged) over `conn`, in autocommit, and returns its
    /// committed blocks by offset.
    pub(crate) fn open(&self, conn: &Connection<'_>, id: &InputFile) -> Result<Vec<Committed>> {
        at_once(inrush_load::resume::open(
            &mut Ledger { conn, books: self },
            id,
        ))
    }
}

/// The ledger of one table over one connection in autocommit. Its methods do their work when
/// called.
struct Ledger<'a> {
    conn: &'a Connection<'a>,
    books: &'a Books,
}

impl Ledger<'_> {
    /// The rows `sql` returns for `id`'s (table, input, block size).
    fn rows(&self, sql: &str, id: &InputFile, what: &str) -> Result<Vec<Vec<Option<String>>>> {
        let params = (
            &self.books.table.as_str().into_parameter(),
            &id.input.as_str().into_parameter(),
            &id.block_size,
        );
        text_rows(self.conn, sql, params, what)
    }
}

impl inrush_load::resume::Ledger for Ledger<'_> {
    async fn create(&mut self) -> Result<()> {
        make(self.conn, &self.books.inputs, &self.books.create_inputs())?;
        make(self.conn, &self.books.ledger, &self.books.create_ledger())
    }

    async fn register(&mut self, id: &InputFile) -> Result<()> {
        if self.registered(id).await?.is_some() {
            return Ok(());
        }
        let sql = format!(
            "INSERT INTO {} (tbl, input, block_size, size, mtime, fingerprint, data_start, \
             started_at) VALUES (?, ?, ?, ?, ?, ?, ?, CURRENT_TIMESTAMP)",
            self.books.inputs
        );
        let params = (
            &self.books.table.as_str().into_parameter(),
            &id.input.as_str().into_parameter(),
            &id.block_size,
            &id.size,
            &id.mtime.as_str().into_parameter(),
            &id.fingerprint.as_str().into_parameter(),
            &id.data_start,
        );
        match self.conn.execute(&sql, params, None) {
            Ok(_) => Ok(()),
            // Another process registered it between the read and the insert.
            Err(_) if self.registered(id).await?.is_some() => Ok(()),
            Err(e) => Err(failed(format!(
                "registering the input in {}",
                self.books.inputs
            ))(e)),
        }
    }

    async fn registered(&mut self, id: &InputFile) -> Result<Option<(i64, String, String)>> {
        let inputs = &self.books.inputs;
        let sql = format!(
            "SELECT size, mtime, fingerprint FROM {inputs} \
             WHERE tbl = ? AND input = ? AND block_size = ?"
        );
        let rows = self.rows(&sql, id, inputs)?;
        let Some([size, mtime, fingerprint]) = rows
            .into_iter()
            .next()
            .and_then(|r| <[Option<String>; 3]>::try_from(r).ok())
        else {
            return Ok(None);
        };
        let text = |v: Option<String>| v.unwrap_or_default();
        Ok(Some((int(&size, inputs)?, text(mtime), text(fingerprint))))
    }

    async fn blocks(&mut self, id: &InputFile) -> Result<Vec<Committed>> {
        let (ledger, rows) = (&self.books.ledger, &self.books.rows);
        let sql = format!(
            "SELECT block_offset, block_len, first_line, next_line, {rows} FROM {ledger} \
             WHERE tbl = ? AND input = ? AND block_size = ? ORDER BY block_offset"
        );
        self.rows(&sql, id, ledger)?
            .iter()
            .map(|row| {
                let at = |i: usize| int(&row[i], ledger);
                Ok(Committed {
                    offset: at(0)?,
                    len: at(1)?,
                    first_line: at(2)?,
                    next_line: at(3)?,
                    rows: at(4)?,
                })
            })
            .collect()
    }
}
