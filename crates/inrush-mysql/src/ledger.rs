//! The load ledger for `--resume`, in two tables of the target database: every block of an
//! input committed into a table is recorded in the same transaction as its rows, so after any
//! crash the ledger says exactly which rows are in (the design of PostgreSQL's
//! `inrush.load_ledger`, see `inrush_postgres::ledger`). The key's columns are sized to fit
//! InnoDB's 3072-byte key in utf8mb4: an input path of up to 500 characters. [`status`] reads
//! it for `inrush status`.

use crate::options::MysqlOptions;
use crate::{catalog, engine_error};
use inrush_core::ledger::{Committed, InputFile, LoadStatus, Recorded};
use inrush_load::Result;
use mysql_async::prelude::Queryable;
use mysql_async::Conn;

const CREATE_INPUTS: &str = "CREATE TABLE IF NOT EXISTS inrush_load_inputs ( \
    tbl VARCHAR(130) NOT NULL, input VARCHAR(500) NOT NULL, block_size BIGINT NOT NULL, \
    size BIGINT NOT NULL, mtime VARCHAR(40) NOT NULL, fingerprint VARCHAR(40) NOT NULL, \
    started_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP, data_start BIGINT NULL, \
    PRIMARY KEY (tbl, input, block_size)) ENGINE=InnoDB";

const CREATE_LEDGER: &str = "CREATE TABLE IF NOT EXISTS inrush_load_ledger ( \
    tbl VARCHAR(130) NOT NULL, input VARCHAR(500) NOT NULL, block_size BIGINT NOT NULL, \
    block_offset BIGINT NOT NULL, block_len BIGINT NOT NULL, \
    first_line BIGINT NOT NULL, next_line BIGINT NOT NULL, `rows` BIGINT NOT NULL, \
    committed_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP, \
    PRIMARY KEY (tbl, input, block_size, block_offset)) ENGINE=InnoDB";

/// Whether `inrush_load_inputs` has its `data_start` column, which ledgers made before inrush
/// recorded where the data starts lack.
async fn has_data_start(conn: &mut Conn) -> Result<bool> {
    let found: Option<i64> = conn
        .query_first(
            "SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() \
             AND TABLE_NAME = 'inrush_load_inputs' AND COLUMN_NAME = 'data_start'",
        )
        .await
        .map_err(engine_error("reading inrush_load_inputs"))?;
    Ok(found.unwrap_or(0) > 0)
}

/// Registers the input for `table` (or checks it is unchanged) and returns its committed
/// blocks by offset ([`inrush_load::resume::open`]).
pub async fn open(conn: &mut Conn, table: &str, id: &InputFile) -> Result<Vec<Committed>> {
    inrush_load::resume::open(&mut Ledger { conn, table }, id).await
}

/// The ledger of one table, on one connection.
struct Ledger<'c> {
    conn: &'c mut Conn,
    table: &'c str,
}

impl inrush_load::resume::Ledger for Ledger<'_> {
    async fn create(&mut self) -> Result<()> {
        for sql in [CREATE_INPUTS, CREATE_LEDGER] {
            self.conn
                .query_drop(sql)
                .await
                .map_err(engine_error("creating the inrush_load_ledger table"))?;
        }
        // A ledger made before inrush recorded where the data starts gets the column (an
        // ALTER only then: it waits for every transaction that read the table). Another
        // process may add it at the same moment: its duplicate (1060, ER_DUP_FIELDNAME) is as
        // good. (Not `ADD COLUMN IF NOT EXISTS`, which MySQL does not have.)
        if has_data_start(self.conn).await? {
            return Ok(());
        }
        match self
            .conn
            .query_drop("ALTER TABLE inrush_load_inputs ADD COLUMN data_start BIGINT NULL")
            .await
        {
            Err(mysql_async::Error::Server(e)) if e.code == 1060 => Ok(()),
            added => added.map_err(engine_error("adding data_start to inrush_load_inputs")),
        }
    }

    async fn register(&mut self, id: &InputFile) -> Result<()> {
        // Not INSERT IGNORE: that would also cut a path too long for the key, silently.
        self.conn
            .exec_drop(
                "INSERT INTO inrush_load_inputs \
                 (tbl, input, block_size, size, mtime, fingerprint, data_start) \
                 VALUES (?, ?, ?, ?, ?, ?, ?) \
                 ON DUPLICATE KEY UPDATE data_start = COALESCE(data_start, VALUES(data_start))",
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
            .await
            .map_err(engine_error("registering the input in inrush_load_inputs"))
    }

    async fn registered(&mut self, id: &InputFile) -> Result<Option<(i64, String, String)>> {
        self.conn
            .exec_first(
                "SELECT size, mtime, fingerprint FROM inrush_load_inputs \
                 WHERE tbl = ? AND input = ? AND block_size = ?",
                (self.table, &id.input, id.block_size),
            )
            .await
            .map_err(engine_error("reading inrush_load_inputs"))
    }

    async fn blocks(&mut self, id: &InputFile) -> Result<Vec<Committed>> {
        let rows: Vec<(i64, i64, i64, i64, i64)> = self
            .conn
            .exec(
                "SELECT block_offset, block_len, first_line, next_line, `rows` \
                 FROM inrush_load_ledger WHERE tbl = ? AND input = ? AND block_size = ? \
                 ORDER BY block_offset",
                (self.table, &id.input, id.block_size),
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

/// `inrush status` for the database `options` names: every load in its ledger (into `table`
/// only, when given). `loading` stays empty: a MariaDB `--resume` takes no lock per block (one
/// process loads an input; its named lock is the table's, held only while it starts), so
/// nothing on the server tells a load that runs now from an interrupted one (both are
/// `interrupted` until complete).
pub fn status(options: &MysqlOptions, table: Option<&str>) -> Result<Vec<LoadStatus>> {
    inrush_load::target::runtime()?.block_on(async {
        let mut conn = options.connect().await?;
        let loads = read_status(&mut conn, options, table).await;
        let _ = conn.disconnect().await;
        loads
    })
}

/// One row of the status query: table, input, block size, size, data start, started at,
/// blocks, rows, bytes, last commit.
type StatusRow = (
    String,
    String,
    i64,
    i64,
    Option<i64>,
    String,
    i64,
    i64,
    i64,
    Option<String>,
);

async fn read_status(
    conn: &mut Conn,
    options: &MysqlOptions,
    table: Option<&str>,
) -> Result<Vec<LoadStatus>> {
    // The ledger names a table as the load's catalog read spelled it.
    let table = match table {
        Some(name) => Some(
            catalog::read(conn, name, options.database())
                .await?
                .qualified(),
        ),
        None => None,
    };
    if !crate::tables_exist(conn, &["inrush_load_inputs", "inrush_load_ledger"]).await? {
        return Ok(Vec::new());
    }
    let data_start = match has_data_start(conn).await? {
        true => "i.data_start",
        false => "NULL",
    };
    let rows: Vec<StatusRow> = conn
        .exec(
            format!(
                "SELECT i.tbl, i.input, i.block_size, i.size, {data_start}, \
                   CAST(i.started_at AS CHAR), COUNT(l.block_offset), \
                   CAST(COALESCE(SUM(l.`rows`), 0) AS SIGNED), \
                   CAST(COALESCE(SUM(l.block_len), 0) AS SIGNED), \
                   CAST(MAX(l.committed_at) AS CHAR) \
                 FROM inrush_load_inputs i LEFT JOIN inrush_load_ledger l \
                   ON l.tbl = i.tbl AND l.input = i.input AND l.block_size = i.block_size \
                 WHERE ? IS NULL OR i.tbl = ? \
                 GROUP BY i.tbl, i.input, i.block_size, i.size, {data_start}, i.started_at \
                 ORDER BY 1, 2, 3"
            ),
            (&table, &table),
        )
        .await
        .map_err(engine_error("reading inrush_load_ledger"))?;
    Ok(rows
        .into_iter()
        .map(
            |(
                table,
                input,
                block_size,
                size,
                data_start,
                started_at,
                blocks,
                rows,
                bytes,
                last,
            )| {
                let recorded = Recorded {
                    table,
                    input,
                    block_size,
                    size,
                    data_start,
                    blocks,
                    rows,
                    bytes,
                    started_at,
                    last_commit: last,
                };
                LoadStatus::new(recorded, Vec::new())
            },
        )
        .collect())
}
