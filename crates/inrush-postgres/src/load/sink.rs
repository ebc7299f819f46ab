//! What one COPY connection does: open a transaction, stream chunks from the shared queue until
//! it closes, finish the COPY, and hand the still-open transaction back for the joint commit.

use super::adapt::Feed;
use super::blocks::BlockClaims;
use super::retry::{is_transient, BACKOFF, RETRIES};
use crate::copy::{row_in_error_context, CopyFormat};
use crate::ledger::{Book, Committed, InputIdentity};
use crate::ConnectOptions;
use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use inrush_encode::binary_copy;
use inrush_load::isolate::Isolation;
use inrush_load::rejects::Rejects;
use inrush_load::stages::{Shared, CANCEL_POLL};
use inrush_load::worker::{Chunk, WorkerPlan};
use inrush_load::{Error, Result};
use std::sync::Arc;
use tokio_postgres::Client;

fn query_error(what: &str, cause: tokio_postgres::Error) -> Error {
    Error::from(crate::Error::Query {
        what: what.into(),
        cause,
    })
}

/// BEGIN on the target and every shard, the prelude (TRUNCATE, LOCK) on the target, and the
/// target's transaction id (each shard's is kept in `sessions`, for asking about its commit).
async fn open_transaction(sessions: &mut Sessions, prelude: &[String]) -> Result<i64> {
    for session in std::iter::once(&sessions.client).chain(&sessions.shards) {
        session
            .batch_execute("BEGIN")
            .await
            .map_err(|e| query_error("BEGIN", e))?;
    }
    for sql in prelude {
        sessions
            .client
            .batch_execute(sql)
            .await
            .map_err(|e| query_error(sql, e))?;
    }
    let mut txids = Vec::with_capacity(1 + sessions.shards.len());
    for session in std::iter::once(&sessions.client).chain(&sessions.shards) {
        let row = session
            .query_one("SELECT txid_current()", &[])
            .await
            .map_err(|e| query_error("SELECT txid_current()", e))?;
        txids.push(row.get::<_, i64>(0));
    }
    sessions.shard_txids = txids.split_off(1);
    Ok(txids[0])
}

/// The next chunk, or `None` when the queue is closed or the load cancelled (checked at least
/// every [`CANCEL_POLL`], so a stalled producer cannot hold a cancelled load). A sink the
/// adaptive gate holds back waits here for its turn (see `adapt`).
pub(crate) async fn next_chunk(feed: &Feed<'_>, shared: &Shared) -> Option<Chunk> {
    loop {
        if !feed.wait_turn(shared).await {
            return None;
        }
        match tokio::time::timeout(CANCEL_POLL, feed.chunks.recv_async()).await {
            Ok(Ok(chunk)) if !shared.is_cancelled() => {
                feed.took(&chunk);
                return Some(chunk);
            }
            Err(_elapsed) if !shared.is_cancelled() => continue,
            _ => return None,
        }
    }
}

/// Where each chunk sent on this connection starts in its COPY stream, so a row number in a
/// server error can be traced back to the input. One entry per chunk: memory stays small.
#[derive(Default)]
struct Ledger {
    entries: Vec<LedgerEntry>,
    rows: u64,
}

/// One chunk sent: its first row in the COPY stream, and where its rows came from.
#[derive(Debug, Clone, PartialEq, Eq)]
struct LedgerEntry {
    first_row: u64,
    source: u32,
    first_line: u64,
    offset: u64,
    len: usize,
    /// False for a chunk of sorted rows, which no longer knows where its rows came from.
    located: bool,
    /// A routed chunk's rows' indexes in the chunk they were taken from.
    picked: Option<Arc<[u32]>>,
}

impl Ledger {
    fn record(&mut self, chunk: &Chunk) {
        self.entries.push(LedgerEntry {
            first_row: self.rows + 1,
            source: chunk.source,
            first_line: chunk.first_line,
            offset: chunk.offset,
            len: chunk.len,
            located: chunk.located,
            picked: chunk.picked.clone(),
        });
        self.rows += chunk.rows;
    }

    /// Records `chunk` as the next in its stream; its bytes, to send.
    fn record_data(&mut self, chunk: Chunk) -> Bytes {
        self.record(&chunk);
        chunk.data
    }

    /// The chunk holding 1-based stream row `row`, and the row's index inside it; `None` for
    /// a chunk of sorted rows, which no longer knows where its rows came from.
    fn find(&self, row: u64) -> Option<(LedgerEntry, u64)> {
        let at = self
            .entries
            .partition_point(|e| e.first_row <= row)
            .checked_sub(1)?;
        let entry = &self.entries[at];
        let index = row - entry.first_row;
        let index = match &entry.picked {
            Some(picked) => *picked.get(index as usize)? as u64,
            None => index,
        };
        entry.located.then(|| (entry.clone(), index))
    }
}

/// Where one destination's rows go: a COPY statement, run on the target (`server` 0) or on
/// shard `server - 1` of a load routed to foreign partitions.
pub(crate) struct Destination {
    pub statement: String,
    pub server: usize,
}

/// An open transaction whose COPY finished; committed or rolled back by the pipeline.
pub(crate) struct Finished {
    pub client: Client,
    /// The transactions of the same sink on each shard, open too.
    pub shards: Vec<Client>,
    /// The sessions' server processes, the target's first, and the shards' transactions.
    pub pids: Vec<i32>,
    pub shard_txids: Vec<i64>,
    pub rows: u64,
    /// The transaction's id (`txid_current()`): its rows carry it as `xmin`, which is how a
    /// load is undone after its commit when a key rebuilt after it does not hold.
    pub txid: i64,
    /// Rows the server refused that went to the reject file (`--max-errors`).
    pub refused: u64,
    /// `--resume`: blocks this connection committed, and blocks (with their rows) it sent but
    /// found committed by another process loading the same input.
    pub blocks: u64,
    pub by_others: (u64, u64),
}

/// One sink's sessions: on the target, and on each shard a routed load writes to.
pub(crate) struct Sessions {
    pub client: Client,
    pub shards: Vec<Client>,
    /// Each session's server process, the target's first: where to ask about a COMMIT whose
    /// answer is lost (see `crate::outcome`).
    pub pids: Vec<i32>,
    /// Each shard session's transaction id, once open.
    pub shard_txids: Vec<i64>,
}

impl Sessions {
    /// The session of a destination's server.
    fn of(&self, destination: &Destination) -> &Client {
        match destination.server {
            0 => &self.client,
            shard => &self.shards[shard - 1],
        }
    }

    fn finished(self, rows: u64, txid: i64, refused: u64) -> Finished {
        Finished {
            client: self.client,
            shards: self.shards,
            pids: self.pids,
            shard_txids: self.shard_txids,
            rows,
            txid,
            refused,
            blocks: 0,
            by_others: (0, 0),
        }
    }
}

/// Streams the chunks into `destinations[chunk.dest]` (one COPY per destination: the table,
/// or each leaf partition of a load routed on the client) in one transaction per server.
pub(crate) async fn run(
    sessions: Sessions,
    prelude: &[String],
    destinations: &[Destination],
    format: CopyFormat,
    chunks: Feed<'_>,
    shared: &Shared,
    plan: &WorkerPlan,
) -> Result<Finished> {
    let mut sessions = sessions;
    let txid = open_transaction(&mut sessions, prelude).await?;
    if let Some(rejects) = &shared.rejects {
        return run_isolating(
            sessions,
            txid,
            destinations,
            format,
            chunks,
            shared,
            plan,
            rejects,
        )
        .await;
    }
    if destinations.len() > 1 {
        return run_routed(sessions, txid, destinations, format, chunks, shared, plan).await;
    }
    let statement = &destinations[0].statement;
    let client = &sessions.client;
    let sink = client
        .copy_in::<_, Bytes>(statement)
        .await
        .map_err(|e| query_error(statement, e))?;
    futures_util::pin_mut!(sink);
    let mut ledger = Ledger::default();
    let from_queue = futures_util::stream::unfold((), |()| async {
        next_chunk(&chunks, shared).await.map(|chunk| (chunk, ()))
    });
    let recorded = from_queue.map(|chunk| ledger.record_data(chunk));
    let streamed = send_copy(sink, format, recorded).await;
    // Stop taking chunks at once on failure, so workers stop too.
    drop(chunks);
    match streamed {
        Ok(rows) => Ok(sessions.finished(rows, txid, 0)),
        Err(e) => Err(server_refusal(e, &ledger, plan)),
    }
}

/// Bytes of one destination's rows gathered before they go in as one COPY: few COPY
/// statements per partition, while memory stays bounded by partitions x this.
const ROUTED_FLUSH: usize = 1 << 20;

/// Routed on the client: each destination's chunks are gathered and COPYed into it in runs of
/// [`ROUTED_FLUSH`] bytes, all in the one transaction per server. A session runs one COPY at a
/// time, but runs to different servers (the target, each shard) overlap: while one server
/// works through a run, the sink goes on taking chunks and feeding the others. A full run
/// waiting for its busy server stops the intake, which keeps memory bounded.
async fn run_routed(
    sessions: Sessions,
    txid: i64,
    destinations: &[Destination],
    format: CopyFormat,
    chunks: Feed<'_>,
    shared: &Shared,
    plan: &WorkerPlan,
) -> Result<Finished> {
    let mut pending: Vec<(Vec<Chunk>, usize)> =
        destinations.iter().map(|_| (Vec::new(), 0)).collect();
    let mut busy = vec![false; 1 + sessions.shards.len()];
    let mut in_flight = futures_util::stream::FuturesUnordered::new();
    let start = |dest: usize, run: Vec<Chunk>| {
        let to = &destinations[dest];
        let session = sessions.of(to);
        async move {
            let copied = copy_run(session, &to.statement, format, run, plan).await;
            (to.server, copied)
        }
    };
    let (mut rows, mut open) = (0, true);
    while open || !in_flight.is_empty() {
        let blocked = pending
            .iter()
            .zip(destinations)
            .any(|((_, bytes), to)| *bytes >= ROUTED_FLUSH && busy[to.server]);
        tokio::select! {
            Some((server, copied)) = in_flight.next(), if !in_flight.is_empty() => {
                busy[server] = false;
                rows += copied?;
            }
            chunk = next_chunk(&chunks, shared), if open && !blocked => match chunk {
                None => open = false,
                Some(chunk) if chunk.rows > 0 => {
                    if let Some((gathered, bytes)) = pending.get_mut(chunk.dest as usize) {
                        *bytes += chunk.data.len();
                        gathered.push(chunk);
                    }
                }
                Some(_) => {}
            },
            else => break,
        }
        // Every full run whose server is free goes; once the input is done, every run.
        let last = !open && !shared.is_cancelled();
        for ((gathered, bytes), (dest, to)) in
            pending.iter_mut().zip(destinations.iter().enumerate())
        {
            let ready = *bytes >= ROUTED_FLUSH || (last && !gathered.is_empty());
            if ready && !busy[to.server] {
                busy[to.server] = true;
                *bytes = 0;
                in_flight.push(start(dest, std::mem::take(gathered)));
            }
        }
    }
    drop((chunks, in_flight));
    Ok(sessions.finished(rows, txid, 0))
}

/// One COPY of a run of chunks; a refused row is named by its input line.
async fn copy_run(
    client: &Client,
    statement: &str,
    format: CopyFormat,
    run: Vec<Chunk>,
    plan: &WorkerPlan,
) -> Result<u64> {
    let mut ledger = Ledger::default();
    let copied = async {
        let sink = client.copy_in::<_, Bytes>(statement).await?;
        futures_util::pin_mut!(sink);
        let recorded = run.into_iter().map(|chunk| ledger.record_data(chunk));
        send_copy(sink, format, futures_util::stream::iter(recorded)).await
    }
    .await;
    copied.map_err(|e| server_refusal(e, &ledger, plan))
}

/// Sends `data` through one COPY (binary: between its header and trailer); the server's row
/// count.
async fn send_copy(
    mut sink: std::pin::Pin<&mut tokio_postgres::CopyInSink<Bytes>>,
    format: CopyFormat,
    data: impl futures_util::Stream<Item = Bytes>,
) -> Result<u64, tokio_postgres::Error> {
    futures_util::pin_mut!(data);
    if format == CopyFormat::Binary {
        sink.send(Bytes::from_static(binary_copy::HEADER)).await?;
    }
    while let Some(bytes) = data.next().await {
        sink.send(bytes).await?;
    }
    if format == CopyFormat::Binary {
        sink.send(Bytes::from_static(binary_copy::TRAILER)).await?;
    }
    sink.as_mut().finish().await
}

/// Turns a COPY failure into an error naming the input line when the server named a row.
fn server_refusal(e: tokio_postgres::Error, ledger: &Ledger, plan: &WorkerPlan) -> Error {
    let Some(db) = e
        .as_db_error()
        .filter(|db| is_about_a_row(db.code().code()))
    else {
        return Error::from(crate::Error::Query {
            what: "COPY".into(),
            cause: e,
        });
    };
    let row = db.where_().and_then(row_in_error_context);
    let column = db
        .column()
        .map(str::to_string)
        .or_else(|| db.where_().and_then(column_in_error_context));
    let location = row.and_then(|row| ledger.find(row)).map(|(e, index)| {
        let location = plan
            .locate_row(e.source, e.first_line, e.offset, e.len, index)
            .unwrap_or_else(|| plan.chunk_location(e.source, e.first_line));
        Box::new(match &column {
            Some(c) => location.field(c.clone(), None),
            None => location,
        })
    });
    let mut message = db.message().to_string();
    if let Some(detail) = db.detail() {
        message.push_str(&format!(" ({detail})"));
    }
    Error::ServerRefused {
        location,
        message,
        sqlstate: Some(db.code().code().to_string()),
    }
}

/// Only data errors (22), integrity violations (23) and errors raised by triggers or functions
/// (P0) are about a row; a cancel, a timeout, a deadlock or a full disk is not.
pub(crate) fn is_about_a_row(code: &str) -> bool {
    code.starts_with("22") || code.starts_with("23") || code.starts_with("P0")
}

/// `COPY t, line 3, column qty: "..."` → `qty`.
fn column_in_error_context(context: &str) -> Option<String> {
    let after = context.split(", column ").nth(1)?;
    Some(after.split(':').next()?.trim().to_string())
}

/// What a `--resume` sink needs to commit a block on each server and to let it go.
pub(crate) struct Resumable<'a> {
    pub input: &'a InputIdentity,
    /// Each server's options (to reconnect after a lost connection) and the book its commits
    /// go in: the target first, then each shard of a load routed to foreign partitions.
    pub servers: Vec<(&'a ConnectOptions, Book)>,
    pub claims: &'a BlockClaims,
}

/// `--resume`: every block is committed on its own, with its row in the load ledger, so a
/// crash loses at most the blocks in flight and a rerun skips every committed one. A block
/// routed to foreign partitions is committed on each server it has rows for (see
/// [`commit_block`]). Each block is let go in `claims` once committed (see `super::blocks`).
pub(crate) async fn run_resumable(
    sessions: Sessions,
    destinations: &[Destination],
    format: CopyFormat,
    chunks: Feed<'_>,
    shared: &Shared,
    plan: &WorkerPlan,
    resumable: &Resumable<'_>,
) -> Result<Finished> {
    let mut sessions = sessions;
    let (mut refused, mut rows, mut blocks, mut by_others) = (0, 0, 0, (0, 0));
    let to = Copies {
        destinations,
        format,
        plan,
        rejects: shared.rejects.as_ref(),
    };
    while let Some(chunk) = next_chunk(&chunks, shared).await {
        let committed = commit_block(&mut sessions, &to, &chunk, shared, resumable).await;
        resumable.claims.release(chunk.offset as i64);
        match committed {
            Ok(Some(n)) => {
                rows += n;
                refused += chunk.rows.saturating_sub(n);
                blocks += 1;
            }
            Ok(None) => {
                by_others.0 += 1;
                by_others.1 += chunk.rows;
            }
            // A stop cancels what each session runs (see `watch`): this block is rolled back
            // (on the servers that had not committed it yet), and the blocks committed before
            // it must still be counted.
            Err(_) if shared.is_cancelled() => break,
            Err(e) => return Err(e),
        }
    }
    drop(chunks);
    Ok(Finished {
        rows,
        refused,
        blocks,
        by_others,
        ..sessions.finished(0, 0, 0)
    })
}

/// Where a block's rows are COPYed, and how.
struct Copies<'a> {
    destinations: &'a [Destination],
    format: CopyFormat,
    plan: &'a WorkerPlan,
    /// With rejects allowed, each piece is loaded under savepoints (see [`load_isolating`]).
    rejects: Option<&'a Rejects>,
}

/// One block, exactly once on every server whatever stops when: on each shard it has rows for
/// (at once), its rows there with its row in that shard's ledger, in one transaction; then on
/// the target its rows there with its row in the target's ledger, committed last. A shard whose
/// ledger has the block already (a run stopped between the two commits) is passed. The block's
/// rows, or `None` when another process committed it first.
async fn commit_block(
    sessions: &mut Sessions,
    to: &Copies<'_>,
    chunk: &Chunk,
    shared: &Shared,
    resumable: &Resumable<'_>,
) -> Result<Option<u64>> {
    let block = block_of(chunk);
    let on = |server: usize| -> Vec<&Chunk> {
        chunk
            .parts()
            .iter()
            .filter(|p| to.destinations[p.dest as usize].server == server)
            .collect()
    };
    let shards = sessions.shards.iter_mut().enumerate().map(|(k, session)| {
        let (pieces, (server, book)) = (on(k + 1), &resumable.servers[k + 1]);
        async move {
            if pieces.is_empty() {
                return Ok::<u64, Error>(0);
            }
            let input = resumable.input;
            let step = Step {
                server,
                book,
                input,
            };
            Ok(
                match step.commit(session, to, &pieces, block, shared).await? {
                    Some(rows) => rows,
                    // Committed there already, by a run that stopped before the target's commit
                    // or by another process loading the same block.
                    None => book.rows(session, input, block.offset).await?.unwrap_or(0) as u64,
                },
            )
        }
    });
    // Each shard's step ends (committed or rolled back) before the block's fate is decided.
    let on_shards = futures_util::future::join_all(shards)
        .await
        .into_iter()
        .sum::<Result<u64>>()?;
    let (server, book) = &resumable.servers[0];
    let step = Step {
        server,
        book,
        input: resumable.input,
    };
    let block = Committed {
        rows: on_shards as i64,
        ..block
    };
    step.commit(&mut sessions.client, to, &on(0), block, shared)
        .await
}

/// A block's commit on one server.
struct Step<'a> {
    server: &'a ConnectOptions,
    book: &'a Book,
    input: &'a InputIdentity,
}

/// How an attempt at a block on one server failed.
enum Failure<'c> {
    /// The driver's error (a lost connection, a block committed already, a row refused),
    /// and the piece whose COPY it ended.
    Driver(tokio_postgres::Error, Option<&'c Chunk>),
    /// What loading the rows under savepoints met (`--max-errors`).
    Load(Error),
}

impl Step<'_> {
    /// The block's `pieces` and its row in the book (counting `block.rows` loaded elsewhere
    /// and the rows loaded here), in one transaction on `session`: the rows the row counts, or
    /// `None` when the book has the block already. Transient failures (a lost connection, a
    /// server restarting, a serialization failure) are retried with backoff on a new
    /// connection; a COMMIT whose answer was lost may have happened, and the book says. Not
    /// retried with rejects allowed: a block redone may list its rejects again in the reject
    /// file.
    async fn commit(
        &self,
        session: &mut Client,
        to: &Copies<'_>,
        pieces: &[&Chunk],
        block: Committed,
        shared: &Shared,
    ) -> Result<Option<u64>> {
        let mut attempt = 0;
        loop {
            let failure = match self.attempt(session, to, pieces, block).await {
                Ok(rows) => return Ok(Some(rows)),
                Err(failure) => failure,
            };
            let _ = session.batch_execute("ROLLBACK").await;
            let (e, piece) = match failure {
                Failure::Load(e) => return Err(e),
                Failure::Driver(e, _) if self.book.has_already(&e) => return Ok(None),
                Failure::Driver(e, piece) => (e, piece),
            };
            let retry = to.rejects.is_none() && attempt < RETRIES && !shared.is_cancelled();
            if !(retry && is_transient(&e)) {
                let mut ledger = Ledger::default();
                if let Some(piece) = piece {
                    ledger.record(piece);
                }
                return Err(server_refusal(e, &ledger, to.plan));
            }
            attempt += 1;
            tracing::warn!(
                "block at byte {} of {}: {e}; retrying ({attempt}/{RETRIES})",
                block.offset,
                self.input.input
            );
            tokio::time::sleep(BACKOFF * 2u32.pow(attempt - 1)).await;
            let Ok(fresh) = self.server.connect().await else {
                continue;
            };
            *session = fresh;
            // This process holds the block: a commit found in the book is its own.
            if let Some(rows) = self.book.rows(session, self.input, block.offset).await? {
                return Ok(Some(rows as u64));
            }
        }
    }

    /// One try: BEGIN, a COPY per piece, the book's row, COMMIT.
    async fn attempt<'c>(
        &self,
        session: &Client,
        to: &Copies<'_>,
        pieces: &[&'c Chunk],
        block: Committed,
    ) -> Result<u64, Failure<'c>> {
        let driver = |piece| move |e| Failure::Driver(e, piece);
        session.batch_execute("BEGIN").await.map_err(driver(None))?;
        let mut loaded = 0;
        for &piece in pieces {
            let statement = &to.destinations[piece.dest as usize].statement;
            loaded += match to.rejects {
                Some(rejects) => {
                    load_isolating(session, statement, to.format, piece, to.plan, rejects)
                        .await
                        .map_err(Failure::Load)?
                }
                None => copy_one(session, statement, to.format, piece.data.clone())
                    .await
                    .map_err(driver(Some(piece)))?,
            };
        }
        let block = Committed {
            rows: block.rows + loaded as i64,
            ..block
        };
        let recorded = self.book.record(session, self.input, block).await;
        recorded.map_err(driver(None))?;
        session
            .batch_execute("COMMIT")
            .await
            .map_err(driver(None))?;
        Ok(block.rows as u64)
    }
}

/// The ledger row of a block, before any of its rows are counted in.
fn block_of(chunk: &Chunk) -> Committed {
    Committed {
        offset: chunk.offset as i64,
        len: chunk.len as i64,
        first_line: chunk.first_line as i64,
        next_line: chunk.next_line as i64,
        rows: 0,
    }
}

/// One complete COPY of one chunk; returns the rows the server counted.
async fn copy_one(
    client: &Client,
    statement: &(impl tokio_postgres::ToStatement + ?Sized),
    format: CopyFormat,
    data: Bytes,
) -> Result<u64, tokio_postgres::Error> {
    let sink = client.copy_in::<_, Bytes>(statement).await?;
    futures_util::pin_mut!(sink);
    send_copy(sink, format, futures_util::stream::iter([data])).await
}

/// With rejects allowed (`--max-errors`): one COPY per chunk under a savepoint, so a row the
/// server refuses (a constraint, a trigger) costs only itself. Savepoints are subtransactions,
/// which is why the fast path above streams one COPY instead.
#[allow(clippy::too_many_arguments)]
async fn run_isolating(
    sessions: Sessions,
    txid: i64,
    destinations: &[Destination],
    format: CopyFormat,
    chunks: Feed<'_>,
    shared: &Shared,
    plan: &WorkerPlan,
    rejects: &Rejects,
) -> Result<Finished> {
    let (mut rows, mut refused) = (0, 0);
    loop {
        let Some(chunk) = next_chunk(&chunks, shared).await else {
            break;
        };
        let to = &destinations[chunk.dest as usize];
        let loaded = load_isolating(
            sessions.of(to),
            &to.statement,
            format,
            &chunk,
            plan,
            rejects,
        )
        .await?;
        rows += loaded;
        refused += chunk.rows - loaded;
    }
    drop(chunks);
    Ok(sessions.finished(rows, txid, refused))
}

/// COPYs a chunk; when the server refuses a row, rolls back to before the attempt, puts the
/// row named by COPY's error context (or, when none is named, the one halving finds) into the
/// reject file, and COPYs the rest again, as [`Isolation`] says. Returns the rows loaded.
async fn load_isolating(
    client: &Client,
    statement: &str,
    format: CopyFormat,
    chunk: &Chunk,
    plan: &WorkerPlan,
    rejects: &Rejects,
) -> Result<u64> {
    let Some(index) = &chunk.rows_index else {
        return Err(Error::Internal(
            "a chunk without its rows index in rejects mode".into(),
        ));
    };
    let slice = |r: &std::ops::Range<usize>| {
        let at = |i: usize| {
            index
                .tuples
                .get(i)
                .map_or(chunk.data.len(), |&t| t as usize)
        };
        chunk.data.slice(at(r.start)..at(r.end))
    };
    // Two round trips an attempt, not five: the COPY is prepared once for the chunk, and
    // what the savepoint needs before an attempt goes in the same write as its COPY.
    let copy = client
        .prepare(statement)
        .await
        .map_err(|e| query_error("COPY", e))?;
    let mut settle = Settle::Open;
    let mut loaded = 0;
    let mut isolation = Isolation::new(index.tuples.len());
    while let Some(range) = isolation.next_attempt() {
        // `join` polls the savepoint's statement first, so it is sent first: the driver
        // sends each request on its first poll and answers them in order.
        let (settled, copied) = futures_util::future::join(
            client.batch_execute(settle.before_attempt()),
            copy_one(client, &copy, format, slice(&range)),
        )
        .await;
        settled.map_err(|e| query_error(settle.before_attempt(), e))?;
        let e = match copied {
            Ok(k) => {
                settle = Settle::Release;
                loaded += k;
                isolation.accepted();
                continue;
            }
            Err(e) => e,
        };
        let Some(db) = e
            .as_db_error()
            .filter(|db| is_about_a_row(db.code().code()))
        else {
            return Err(query_error("COPY", e));
        };
        settle = Settle::RollBack;
        // COPY stops at the row it names: the rows before it were read without complaint.
        let named: Vec<usize> = db
            .where_()
            .and_then(row_in_error_context)
            .filter(|&k| k >= 1)
            .map(|k| k as usize - 1)
            .into_iter()
            .collect();
        for row in isolation.refused(&named, true) {
            let (raw, location) = plan.row_source(chunk, index, row);
            let column = db
                .column()
                .map(str::to_string)
                .or_else(|| db.where_().and_then(column_in_error_context));
            let location = match column {
                Some(c) => location.field(c, None),
                None => location,
            };
            let mut reason = db.message().to_string();
            if let Some(detail) = db.detail() {
                reason.push_str(&format!(" ({detail})"));
            }
            rejects.reject(raw, false, &location, &reason, Some(db.code().code()))?;
        }
    }
    if let Some(end) = settle.at_end() {
        client
            .batch_execute(end)
            .await
            .map_err(|e| query_error(end, e))?;
    }
    Ok(loaded)
}

/// What [`load_isolating`]'s savepoint needs after the last attempt: one savepoint stays open
/// across the attempts (ROLLBACK TO keeps it), so a subtransaction is begun only after an
/// accepted attempt is released.
#[derive(Clone, Copy)]
enum Settle {
    /// No attempt yet: none is open.
    Open,
    /// The last attempt was accepted.
    Release,
    /// The last attempt was refused.
    RollBack,
}

impl Settle {
    /// The statement sent with the next attempt's COPY.
    fn before_attempt(self) -> &'static str {
        match self {
            Settle::Open => "SAVEPOINT inrush_rows",
            Settle::Release => "RELEASE SAVEPOINT inrush_rows; SAVEPOINT inrush_rows",
            Settle::RollBack => "ROLLBACK TO SAVEPOINT inrush_rows",
        }
    }

    /// The statement that ends the savepoint after the last attempt, if one is open.
    fn at_end(self) -> Option<&'static str> {
        match self {
            Settle::Open => None,
            Settle::Release => Some("RELEASE SAVEPOINT inrush_rows"),
            Settle::RollBack => {
                Some("ROLLBACK TO SAVEPOINT inrush_rows; RELEASE SAVEPOINT inrush_rows")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ledger_finds_the_chunk_of_a_row() {
        let mut ledger = Ledger::default();
        for (rows, line) in [(3u64, 1u64), (2, 10), (4, 20)] {
            ledger.record(&Chunk {
                rows,
                located: true,
                first_line: line,
                next_line: line,
                ..Chunk::empty()
            });
        }
        assert_eq!(ledger.find(1).map(|(e, i)| (e.first_line, i)), Some((1, 0)));
        assert_eq!(
            ledger.find(4).map(|(e, i)| (e.first_line, i)),
            Some((10, 0))
        );
        assert_eq!(
            ledger.find(9).map(|(e, i)| (e.first_line, i)),
            Some((20, 3))
        );
        assert_eq!(ledger.find(0), None);
    }

    #[test]
    fn column_from_context() {
        assert_eq!(
            column_in_error_context("COPY t, line 3, column qty: \"x\"").as_deref(),
            Some("qty")
        );
        assert_eq!(column_in_error_context("COPY t, line 3"), None);
    }
}
