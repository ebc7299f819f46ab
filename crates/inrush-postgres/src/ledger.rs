//! The load ledger, for `--resume`: every block of an input committed into a table is recorded
//! in the same transaction as its rows, so after any crash the ledger says exactly which rows
//! are in: a rerun loads every other block once, and never one twice. The input is identified
//! by path and block size (blocks are cut the same way again only with the same block size) and
//! fingerprinted by size, modification time and a hash of its head and tail, so a changed file
//! is refused instead of being mixed with the rows of its previous version.
//!
//! Several processes (on one host or several) may load one input together, each given the same
//! input and `--resume`: a process takes a block by a session-level advisory lock on the block
//! ([`take_block`]) before it reads it, and lets it go once the block is committed; the ledger's
//! primary key is the last word (a block committed twice fails the second commit). [`status`]
//! reads a load's progress from the ledger and the locks held now.
//!
//! A load routed on the client to foreign partitions commits each block on each server it has
//! rows for: on every shard, its rows there with the block's row in that shard's own
//! `inrush.shard_ledger` ([`Book::Shard`]), and then, last, the target's rows with its row in
//! `inrush.load_ledger`. The target's ledger says which blocks are in; for a block it lacks, a
//! shard's ledger says whether that shard has the block's rows already (a process stopped
//! between the two commits), so the rows go to each server once without two-phase commit.

use crate::catalog::relations_exist;
use crate::{query_error, Result};
pub use inrush_core::ledger::{resume_point, Committed, InputFile};
use inrush_core::ledger::{LoadStatus, Loading, Recorded};
use tokio_postgres::Client;

const CREATE_LEDGER: &str = "CREATE SCHEMA IF NOT EXISTS inrush; \
     CREATE TABLE IF NOT EXISTS inrush.load_inputs ( \
       table_oid oid NOT NULL, input text NOT NULL, block_size bigint NOT NULL, \
       size bigint NOT NULL, mtime text NOT NULL, fingerprint text NOT NULL, \
       started_at timestamptz NOT NULL DEFAULT now(), \
       PRIMARY KEY (table_oid, input, block_size)); \
     ALTER TABLE inrush.load_inputs ADD COLUMN IF NOT EXISTS data_start bigint; \
     CREATE TABLE IF NOT EXISTS inrush.load_ledger ( \
       table_oid oid NOT NULL, input text NOT NULL, block_size bigint NOT NULL, \
       block_offset bigint NOT NULL, block_len bigint NOT NULL, \
       first_line bigint NOT NULL, next_line bigint NOT NULL, rows bigint NOT NULL, \
       committed_at timestamptz NOT NULL DEFAULT now(), \
       PRIMARY KEY (table_oid, input, block_size, block_offset))";

/// The shards' ledger: a block's rows committed on one shard, keyed by the coordinator's
/// database and table as well as by input and block (the shard has oids of its own, and may
/// serve several coordinators).
const CREATE_SHARD_LEDGER: &str = "CREATE SCHEMA IF NOT EXISTS inrush; \
     CREATE TABLE IF NOT EXISTS inrush.shard_ledger ( \
       coordinator text NOT NULL, table_oid oid NOT NULL, input text NOT NULL, \
       block_size bigint NOT NULL, block_offset bigint NOT NULL, rows bigint NOT NULL, \
       committed_at timestamptz NOT NULL DEFAULT now(), \
       PRIMARY KEY (coordinator, table_oid, input, block_size, block_offset))";

/// Which input, cut how, and what it looked like, loaded into which table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputIdentity {
    pub table_oid: u32,
    pub file: InputFile,
}

/// The input's fields read as the identity's own (`id.input`).
impl std::ops::Deref for InputIdentity {
    type Target = InputFile;

    fn deref(&self) -> &InputFile {
        &self.file
    }
}

/// Registers the input (or checks it is unchanged) and returns its committed blocks by offset
/// ([`inrush_load::resume::open`]).
pub async fn open(client: &Client, id: &InputIdentity) -> inrush_load::Result<Vec<Committed>> {
    let mut ledger = Ledger {
        client,
        table_oid: id.table_oid,
    };
    inrush_load::resume::open(&mut ledger, &id.file).await
}

/// The ledger of one table, by its oid.
struct Ledger<'c> {
    client: &'c Client,
    table_oid: u32,
}

impl inrush_load::resume::Ledger for Ledger<'_> {
    async fn create(&mut self) -> inrush_load::Result<()> {
        crate::own::create(self.client, CREATE_LEDGER)
            .await
            .map_err(query_error("creating the inrush.load_ledger table"))?;
        Ok(())
    }

    async fn register(&mut self, id: &InputFile) -> inrush_load::Result<()> {
        self.client
            .execute(
                "INSERT INTO inrush.load_inputs (table_oid, input, block_size, size, mtime, fingerprint, data_start) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7) \
                 ON CONFLICT (table_oid, input, block_size) DO UPDATE SET data_start = EXCLUDED.data_start \
                 WHERE load_inputs.data_start IS NULL",
                &[&self.table_oid, &id.input, &id.block_size, &id.size, &id.mtime, &id.fingerprint, &id.data_start],
            )
            .await
            .map_err(query_error("registering the input in inrush.load_inputs"))?;
        Ok(())
    }

    async fn registered(
        &mut self,
        id: &InputFile,
    ) -> inrush_load::Result<Option<(i64, String, String)>> {
        let row = self
            .client
            .query_opt(
                "SELECT size, mtime, fingerprint FROM inrush.load_inputs WHERE table_oid = $1 AND input = $2 AND block_size = $3",
                &[&self.table_oid, &id.input, &id.block_size],
            )
            .await
            .map_err(query_error("reading inrush.load_inputs"))?;
        Ok(row.map(|r| (r.get(0), r.get(1), r.get(2))))
    }

    async fn blocks(&mut self, id: &InputFile) -> inrush_load::Result<Vec<Committed>> {
        let rows = self
            .client
            .query(
                "SELECT block_offset, block_len, first_line, next_line, rows FROM inrush.load_ledger \
                 WHERE table_oid = $1 AND input = $2 AND block_size = $3 ORDER BY block_offset",
                &[&self.table_oid, &id.input, &id.block_size],
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
}

/// Whether the block at `offset` is committed.
pub async fn contains(client: &Client, id: &InputIdentity, offset: i64) -> Result<bool> {
    Ok(Book::Target.rows(client, id, offset).await?.is_some())
}

/// Where a server records the blocks it committed (see the module documentation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Book {
    /// The target's `inrush.load_ledger`, which says what is loaded: a block is in when it is
    /// there.
    Target,
    /// `inrush.shard_ledger` on a shard of a load routed to foreign partitions: the block's
    /// rows on that shard are in. `coordinator` is the target's database.
    Shard { coordinator: String },
}

impl Book {
    /// The book of every shard of a load into `target`'s database, made there if need be.
    pub async fn open_shard(target: &Client, shards: &[&Client]) -> Result<Book> {
        let coordinator: String = target
            .query_one("SELECT current_database()::text", &[])
            .await
            .map_err(query_error("reading the target's database name"))?
            .get(0);
        for shard in shards {
            crate::own::create(shard, CREATE_SHARD_LEDGER)
                .await
                .map_err(query_error(
                    "creating the inrush.shard_ledger table on a shard",
                ))?;
        }
        Ok(Book::Shard { coordinator })
    }

    /// Records a block in the caller's open transaction (the one holding the block's rows);
    /// the error is the driver's, so the caller can tell a lost connection from a refusal.
    pub async fn record(
        &self,
        client: &Client,
        id: &InputIdentity,
        block: Committed,
    ) -> Result<(), tokio_postgres::Error> {
        match self {
            Book::Target => client.execute(
                "INSERT INTO inrush.load_ledger (table_oid, input, block_size, block_offset, block_len, first_line, next_line, rows) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
                &[&id.table_oid, &id.input, &id.block_size, &block.offset, &block.len, &block.first_line, &block.next_line, &block.rows],
            ).await?,
            Book::Shard { coordinator } => client.execute(
                "INSERT INTO inrush.shard_ledger (coordinator, table_oid, input, block_size, block_offset, rows) \
                 VALUES ($1, $2, $3, $4, $5, $6)",
                &[coordinator, &id.table_oid, &id.input, &id.block_size, &block.offset, &block.rows],
            ).await?,
        };
        Ok(())
    }

    /// The rows this book records for the block at `offset`; `None` when it is not committed.
    pub async fn rows(
        &self,
        client: &Client,
        id: &InputIdentity,
        offset: i64,
    ) -> Result<Option<i64>> {
        let row = match self {
            Book::Target => client.query_opt(
                "SELECT rows FROM inrush.load_ledger WHERE table_oid = $1 AND input = $2 AND block_size = $3 AND block_offset = $4",
                &[&id.table_oid, &id.input, &id.block_size, &offset],
            ).await,
            Book::Shard { coordinator } => client.query_opt(
                "SELECT rows FROM inrush.shard_ledger WHERE coordinator = $1 AND table_oid = $2 AND input = $3 AND block_size = $4 AND block_offset = $5",
                &[coordinator, &id.table_oid, &id.input, &id.block_size, &offset],
            ).await,
        }
        .map_err(query_error("reading the ledger"))?;
        Ok(row.map(|r| r.get(0)))
    }

    /// Whether `e` (from recording a block) says the block was committed already, by another
    /// process or by an earlier run.
    pub fn has_already(&self, e: &tokio_postgres::Error) -> bool {
        let table = match self {
            Book::Target => "load_ledger",
            Book::Shard { .. } => "shard_ledger",
        };
        e.as_db_error().is_some_and(|db| {
            db.code() == &tokio_postgres::error::SqlState::UNIQUE_VIOLATION
                && db.schema() == Some("inrush")
                && db.table() == Some(table)
        })
    }
}

/// The advisory lock of one block, in the two-`int4` form (apart from the table claim's
/// `bigint` keys, `crate::ddl`): a hash of the table, input and block size, and the block's
/// ordinal. Every block but the last is at least `block_size` long, so the ordinal
/// (`offset / block_size`) is the block's own up to 2^32 blocks.
const BLOCK_KEY: &str =
    "hashtext($1::oid::text || ':' || $2::text || ':' || $3::bigint::text), $4::int";

fn ordinal(id: &InputIdentity, offset: i64) -> i32 {
    (offset / id.block_size.max(1)) as u32 as i32
}

/// `SELECT function(the block's key)` for one of the advisory-lock functions.
async fn on_block_lock(
    client: &Client,
    function: &str,
    id: &InputIdentity,
    offset: i64,
    what: &'static str,
) -> Result<tokio_postgres::Row> {
    client
        .query_one(
            &format!("SELECT {function}({BLOCK_KEY})"),
            &[
                &id.table_oid,
                &id.input,
                &id.block_size,
                &ordinal(id, offset),
            ],
        )
        .await
        .map_err(query_error(what))
}

/// What became of an attempt to take a block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Taken {
    /// This session holds it now.
    Mine,
    /// It is committed already.
    Committed,
    /// Another session holds it.
    Held,
}

/// Takes the block at `offset` for this session (a session-level lock: it ends with the
/// connection, whatever ends the process). Whether it is committed is read after the lock is
/// taken, in a statement of its own, so the commit of a holder that has just let go is seen.
pub async fn take_block(client: &Client, id: &InputIdentity, offset: i64) -> Result<Taken> {
    let locked: bool = on_block_lock(
        client,
        "pg_try_advisory_lock",
        id,
        offset,
        "taking a block of the input",
    )
    .await?
    .get(0);
    if !locked {
        return Ok(Taken::Held);
    }
    if contains(client, id, offset).await? {
        release_block(client, id, offset).await?;
        return Ok(Taken::Committed);
    }
    Ok(Taken::Mine)
}

/// Lets the block at `offset` go (committed, or given up).
pub async fn release_block(client: &Client, id: &InputIdentity, offset: i64) -> Result<()> {
    on_block_lock(
        client,
        "pg_advisory_unlock",
        id,
        offset,
        "letting a block of the input go",
    )
    .await?;
    Ok(())
}

/// Waits until no session holds the block at `offset` (its holder committed it, or ended), then
/// says how many rows the ledger has for it: `None` when it is not committed.
pub async fn settle_block(client: &Client, id: &InputIdentity, offset: i64) -> Result<Option<i64>> {
    on_block_lock(
        client,
        "pg_advisory_lock",
        id,
        offset,
        "waiting for a block another process loads",
    )
    .await?;
    release_block(client, id, offset).await?;
    Book::Target.rows(client, id, offset).await
}

impl InputIdentity {
    pub fn new(table_oid: u32, file: InputFile) -> Self {
        InputIdentity { table_oid, file }
    }
}

/// Every load in the ledger (of `table_oid` only, when given), with the blocks held now.
pub async fn status(client: &Client, table_oid: Option<u32>) -> Result<Vec<LoadStatus>> {
    if !relations_exist(client, &["inrush.load_ledger", "inrush.load_inputs"]).await? {
        return Ok(Vec::new());
    }
    // data_start is missing from ledgers made before it was recorded.
    let data_start: bool = client
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = 'inrush.load_inputs'::regclass AND attname = 'data_start')",
            &[],
        )
        .await
        .map_err(query_error("reading inrush.load_inputs"))?
        .get(0);
    let loads = client
        .query(
            &format!(
                "SELECT i.table_oid::regclass::text, i.input, i.block_size, i.size, {}, \
                   i.started_at::text, count(l.block_offset), coalesce(sum(l.rows), 0)::bigint, \
                   coalesce(sum(l.block_len), 0)::bigint, max(l.committed_at)::text, \
                   hashtext(i.table_oid::text || ':' || i.input || ':' || i.block_size::text) \
                 FROM inrush.load_inputs i LEFT JOIN inrush.load_ledger l USING (table_oid, input, block_size) \
                 WHERE $1::oid IS NULL OR i.table_oid = $1::oid \
                 GROUP BY 1, 2, 3, 4, 5, 6, 11 ORDER BY 1, 2, 3",
                match data_start {
                    true => "i.data_start",
                    false => "NULL::bigint",
                }
            ),
            &[&table_oid],
        )
        .await
        .map_err(query_error("reading inrush.load_ledger"))?;
    let mut statuses = Vec::with_capacity(loads.len());
    for row in loads {
        let key: i32 = row.get(10);
        let recorded = Recorded {
            table: row.get(0),
            input: row.get(1),
            block_size: row.get(2),
            size: row.get(3),
            data_start: row.get(4),
            blocks: row.get(6),
            rows: row.get(7),
            bytes: row.get(8),
            started_at: row.get(5),
            last_commit: row.get(9),
        };
        statuses.push(LoadStatus::new(recorded, loading(client, key).await?));
    }
    Ok(statuses)
}

/// The blocks of the load whose lock key starts with `key`, held now, and their sessions.
async fn loading(client: &Client, key: i32) -> Result<Vec<Loading>> {
    let rows = client
        .query(
            "SELECT k.objid::bigint, k.pid, host(a.client_addr), a.application_name \
             FROM pg_locks k LEFT JOIN pg_stat_activity a ON a.pid = k.pid \
             WHERE k.locktype = 'advisory' AND k.objsubid = 2 AND k.granted \
               AND k.database = (SELECT oid FROM pg_database WHERE datname = current_database()) \
               AND k.classid = $1::int4::oid \
             ORDER BY 1",
            &[&key],
        )
        .await
        .map_err(query_error("reading pg_locks"))?;
    Ok(rows
        .iter()
        .map(|r| Loading {
            block: r.get(0),
            pid: r.get(1),
            client_addr: r.get(2),
            application_name: r.get(3),
        })
        .collect())
}
