//! The pipeline's stages, shared by every target: the inputs opened far enough to name their
//! columns ([`Inputs`]), reader threads cutting them into units of work, encode workers on
//! every core, the progress ticker, and the state they share ([`Shared`]).
//!
//! ```text
//! inputs ─▶ reader threads ─▶ [work: bounded] ─▶ N worker threads ─▶ [chunks: bounded] ─▶ the target's writers
//!          (one source each at a                 (parse, check, encode)
//!           time; quote-aware cuts)
//! ```
//!
//! Memory is bounded by the two queue depths times the block size, whatever the input size.
//! The first error anywhere is kept, sets the cancel flag, and every stage stops: the readers and
//! workers check the flag between blocks, writers stop taking chunks, dropped queues unblock
//! whoever waits on them. [`crate::load_into`] drives these stages into a [`crate::target::Target`];
//! PostgreSQL's COPY streams drive them from `inrush-postgres`.

use crate::resume::Claims;
use crate::sources::{first_line_keys, Columnar, Opened, Origin, Sources, Unit, Work};
use crate::worker::{csv_line, WorkerPlan};
use crate::{Error, LoadOptions, Result};
use inrush_core::{Progress, Reporter, SqlType};
use inrush_read::csv::Block;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

pub use crate::shared::{Shared, CANCEL_POLL};

/// `data.csv` → `data.csv.rejects`; standard input, a query or several inputs →
/// `inrush.rejects` here.
pub fn default_rejects_path(sources: &Sources) -> PathBuf {
    match &sources.list[..] {
        [one] if one.name != "-" && matches!(one.origin, Origin::Path(_)) => {
            PathBuf::from(format!("{}.rejects", one.name))
        }
        _ => PathBuf::from("inrush.rejects"),
    }
}

/// Starts the reader threads: each takes the next unread source, cuts it into blocks and
/// sends them on. The first source comes already opened; every other CSV source's header
/// must name the same columns as the first one's. Under `--resume`, source 0's blocks in `skip`
/// are committed already, and with `claims` each other block is taken before it is read.
#[allow(clippy::too_many_arguments)]
pub fn start_readers(
    sources: &Arc<Sources>,
    first: Option<Opened>,
    first_header: Option<Vec<String>>,
    skip: std::collections::HashSet<u64>,
    claims: Option<Arc<dyn Claims>>,
    threads: usize,
    shared: &Arc<Shared>,
    work: flume::Sender<Work>,
) -> std::io::Result<Vec<std::thread::JoinHandle<()>>> {
    // Source 0 comes opened (text inputs) or is taken like any other (columnar ones).
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(usize::from(
        first.is_some(),
    )));
    let first = Arc::new(Mutex::new(first));
    let first_header = Arc::new(first_header);
    let skip = Arc::new(skip);
    // Units are numbered as they are sent: with one reader, in the input's order.
    let sequence = Arc::new(std::sync::atomic::AtomicU64::new(0));
    (0..threads.min(sources.list.len()))
        .map(|i| {
            let (sources, shared, work) = (sources.clone(), shared.clone(), work.clone());
            let (next, first, first_header, skip, claims, sequence) = (
                next.clone(),
                first.clone(),
                first_header.clone(),
                skip.clone(),
                claims.clone(),
                sequence.clone(),
            );
            std::thread::Builder::new()
                .name(format!("inrush-read-{i}"))
                .spawn(move || {
                    let mut pending = first.lock().ok().and_then(|mut f| f.take());
                    let mut index = 0;
                    loop {
                        let opened = pending.take();
                        if opened.is_none() {
                            index = next.fetch_add(1, Ordering::Relaxed);
                            if index >= sources.list.len() || shared.is_cancelled() {
                                return;
                            }
                        }
                        let consumed = shared.progress.bytes_read.clone();
                        let (skip, claims) = (skip.clone(), claims.clone());
                        let units = source_units(
                            &sources,
                            index,
                            opened,
                            &first_header,
                            skip,
                            claims,
                            consumed,
                        );
                        let fed = match units {
                            Ok(units) => feed(index as u32, units, &sequence, &shared, &work),
                            Err(e) => return shared.fail(e),
                        };
                        if !fed {
                            return;
                        }
                    }
                })
        })
        .collect()
}

/// The units of work of source `index` (`opened` when it was opened already): a query's
/// binary tuples or blocks of rows, a columnar file's parts, or a text source's blocks, without the blocks an
/// earlier run committed (`skip`, for source 0 under --resume) and those `claims` does not
/// give this process.
fn source_units(
    sources: &Arc<Sources>,
    index: usize,
    opened: Option<Opened>,
    first_header: &Option<Vec<String>>,
    skip: Arc<std::collections::HashSet<u64>>,
    claims: Option<Arc<dyn Claims>>,
    consumed: Arc<std::sync::atomic::AtomicU64>,
) -> Result<Box<dyn Iterator<Item = Result<Unit>> + Send>> {
    if let Some(columns) = sources.passthrough.get() {
        let tuples = sources.open_tuples(index, columns, consumed)?;
        return Ok(Box::new(tuples.map(|t| Ok(Unit::Tuples(t?)))));
    }
    if let Some(rows) = sources.open_rows(index)? {
        return Ok(Box::new(
            rows.map(|r| r.map(|(first, rows)| Unit::Rows(first, rows))),
        ));
    }
    match &sources.list[index].arrow {
        // Columnar: the workers read the parts themselves.
        Some(Columnar::File(file)) => {
            return Ok(Box::new(
                file.parts().into_iter().map(|p| Ok(Unit::Part(p))),
            ))
        }
        // In memory: only this reader can take the batches, in their order.
        Some(Columnar::Stream(stream)) => {
            return Ok(Box::new(stream.slices()?.map(|slice| {
                let (first_row, batch) = slice?;
                Ok(Unit::Batch(first_row, batch))
            })))
        }
        None => {}
    }
    let opened = match opened {
        Some(opened) => opened,
        None => sources.open(index, consumed)?,
    };
    check_header(sources, index, &opened, first_header)?;
    let blocks = opened.pending.into_iter().map(Ok).chain(opened.splitter);
    let Some(claims) = claims.filter(|_| index == 0) else {
        let uncommitted = move |block: &inrush_read::Result<Block>| !matches!(block, Ok(b) if index == 0 && skip.contains(&b.offset));
        return Ok(Box::new(
            blocks.filter(uncommitted).map(|b| Ok(Unit::Block(b?))),
        ));
    };
    // Shared with other processes: the blocks this one takes, then, at the end, those other
    // processes took and let go uncommitted (they stopped), read again.
    let taker = claims.clone();
    let ours = move |block: inrush_read::Result<Block>| match block {
        Ok(b) if skip.contains(&b.offset) => None,
        Ok(b) => match taker.take(b.offset, b.first_line) {
            Ok(true) => Some(Ok(Unit::Block(b))),
            Ok(false) => None,
            Err(e) => Some(Err(e)),
        },
        Err(e) => Some(Err(e.into())),
    };
    let sources = sources.clone();
    let left_over = std::iter::once_with(move || claims.left_over()).flat_map(move |left| {
        let (left, failed) = match left {
            Ok(left) => (left, None),
            Err(e) => (Vec::new(), Some(Err(e))),
        };
        let sources = sources.clone();
        failed.into_iter().chain(
            left.into_iter()
                .map(move |(offset, line)| block_at(&sources, offset, line)),
        )
    });
    Ok(Box::new(blocks.filter_map(ours).chain(left_over)))
}

/// The block of source 0 that starts at `offset`, on `line`, read again.
fn block_at(sources: &Sources, offset: u64, line: u64) -> Result<Unit> {
    let unread = Arc::new(std::sync::atomic::AtomicU64::new(0));
    match sources.reopen_at(0, offset, line, unread)?.next() {
        Some(block) => Ok(Unit::Block(block?)),
        None => Err(Error::Internal(format!(
            "{}: no block at byte {offset}",
            sources.list[0].name
        ))),
    }
}

/// Sends a source's units to the workers; false when the load stops (cancelled, failed, or
/// the workers gone).
fn feed(
    source: u32,
    units: impl Iterator<Item = Result<Unit>>,
    sequence: &std::sync::atomic::AtomicU64,
    shared: &Shared,
    work: &flume::Sender<Work>,
) -> bool {
    for unit in units {
        let sent = match unit {
            Ok(unit) => {
                let seq = sequence.fetch_add(1, Ordering::Relaxed);
                !shared.is_cancelled() && work.send(Work { source, seq, unit }).is_ok()
            }
            Err(e) => {
                shared.fail(e);
                false
            }
        };
        if !sent {
            return false;
        }
    }
    true
}

/// Every CSV source of a load with headers must name the same columns as the first.
fn check_header(
    sources: &Sources,
    index: usize,
    opened: &Opened,
    first: &Option<Vec<String>>,
) -> Result<()> {
    let (Some(expected), Some((names, _))) = (first, &opened.header) else {
        return Ok(());
    };
    if names == expected {
        return Ok(());
    }
    Err(Error::Columns(format!(
        "{}: the header names {} but {} names {}; load them separately or pass --columns",
        sources.list[index].name,
        names.join(","),
        sources.list[0].name,
        expected.join(",")
    )))
}

/// The inputs of a load, opened far enough to name their columns.
pub struct Inputs {
    pub sources: Arc<Sources>,
    /// A query's column names and types, read from its server.
    pub query_types: Option<Vec<(String, SqlType)>>,
    /// The first text source, opened: its header (or first JSON line) names the columns.
    pub first: Option<Opened>,
    pub header_names: Option<Vec<String>>,
    /// Columnar files: per source, the fields that feed the columns.
    pub projections: Vec<Vec<usize>>,
}

impl Inputs {
    pub fn open(opts: &LoadOptions, progress: &Progress) -> Result<Inputs> {
        let sources = Arc::new(Sources::from_options(opts)?);
        progress
            .bytes_total
            .store(sources.size().unwrap_or(0), Ordering::Relaxed);
        // The first text source is opened here: its header (or first JSON line) names the
        // columns. Columnar files name them in their schema.
        // A query names its columns (and types) itself: nothing is opened before the target is
        // known, which decides whether its rows come as CSV or as binary tuples.
        let query_types = match sources.query() {
            Some((from, sql)) => Some(from.columns(sql)?),
            None => None,
        };
        let (first, header_names, projections) = if sources.columnar() {
            let (names, projections) = sources.columnar_projection(opts.columns.as_deref())?;
            (None, Some(names), projections)
        } else if let Some(types) = &query_types {
            let names = types.iter().map(|(name, _)| name.clone()).collect();
            (None, Some(names), Vec::new())
        } else {
            let first = sources.open(0, progress.bytes_read.clone())?;
            let names = match (&first.header, first.pending.first()) {
                (Some((names, _)), _) => Some(names.clone()),
                (None, Some(line)) => Some(first_line_keys(line, &sources.list[0])?),
                (None, None) => None,
            };
            (Some(first), names, Vec::new())
        };
        Ok(Inputs {
            sources,
            query_types,
            first,
            header_names,
            projections,
        })
    }
}

/// Why a stage's thread did not start.
pub fn spawn_error(e: std::io::Error) -> Error {
    Error::Internal(format!("starting a thread: {e}"))
}

/// Starts `count` encode workers (at least one) taking blocks from `blocks` and sending chunks
/// to `chunks`; the queues' own ends are dropped on return, so the workers alone hold them.
pub fn spawn_workers<'scope, 'env>(
    scope: &'scope std::thread::Scope<'scope, 'env>,
    plan: &'env WorkerPlan,
    shared: &'env Shared,
    count: usize,
    blocks: flume::Receiver<Work>,
    chunks: flume::Sender<crate::worker::Chunk>,
) -> Result<Vec<std::thread::ScopedJoinHandle<'scope, u64>>> {
    (0..count.max(1))
        .map(|i| {
            let (blocks, chunks) = (blocks.clone(), chunks.clone());
            std::thread::Builder::new()
                .name(format!("inrush-encode-{i}"))
                .spawn_scoped(scope, move || plan.run(shared, blocks, chunks))
                .map_err(spawn_error)
        })
        .collect()
}

/// Waits for the encode workers; the values the server resolved for them, in all.
pub fn join_workers(workers: Vec<std::thread::ScopedJoinHandle<'_, u64>>) -> Result<u64> {
    workers.into_iter().try_fold(0, |resolved, worker| {
        let n = worker
            .join()
            .map_err(|_| Error::Internal("an encode worker panicked".into()))?;
        Ok(resolved + n)
    })
}

/// Starts the thread that reports progress every 100 ms and turns an interrupt into the
/// load's failure, until `done` is set.
pub fn spawn_ticker<'scope, 'env>(
    scope: &'scope std::thread::Scope<'scope, 'env>,
    done: &'env AtomicBool,
    interrupt: &'env crate::Interrupt,
    shared: &'env Shared,
    reporter: &'env dyn Reporter,
    progress: &'env Progress,
) -> Result<std::thread::ScopedJoinHandle<'scope, ()>> {
    std::thread::Builder::new()
        .name("inrush-progress".into())
        .spawn_scoped(scope, move || {
            while !done.load(Ordering::Relaxed) {
                if interrupt.is_set() {
                    shared.fail(Error::Interrupted);
                }
                reporter.progress(progress.snapshot());
                // Woken early by `EndTicker`: a load's end does not wait out the tick.
                std::thread::park_timeout(Duration::from_millis(100));
            }
        })
        .map_err(spawn_error)
}

/// Ends the ticker (the flag, and its thread woken) when dropped or asked: a scope's body
/// that returns early (an error, a panicking stage) would otherwise leave the scope waiting
/// for the ticker forever.
pub struct EndTicker<'a>(pub &'a AtomicBool, pub std::thread::Thread);

impl EndTicker<'_> {
    pub fn end(&self) {
        self.0.store(true, Ordering::Relaxed);
        self.1.unpark();
    }
}

impl Drop for EndTicker<'_> {
    fn drop(&mut self) {
        self.end();
    }
}

/// `--create`: the columns' names and types. A query's were read already; files are typed
/// from themselves.
pub fn create_columns(
    sources: &Sources,
    query_types: &Option<Vec<(String, SqlType)>>,
    header_names: Option<&[String]>,
    projections: &[Vec<usize>],
    first: Option<&mut Opened>,
    order: Option<inrush_encode::DateOrder>,
) -> Result<Vec<(String, SqlType)>> {
    match query_types {
        Some(types) => Ok(types.clone()),
        None => crate::create::column_types(sources, header_names, projections, first, order),
    }
}

/// What the reject file starts with: the CSV header, or a columnar file's column names.
pub fn reject_header(
    first: Option<&Opened>,
    header_names: Option<&[String]>,
) -> Option<bytes::Bytes> {
    match (first, header_names) {
        (Some(first), _) => first.header.as_ref().map(|(_, raw)| raw.clone()),
        (None, Some(names)) => Some(csv_line(names.iter().map(|n| Some(n.as_str()))).into()),
        (None, None) => None,
    }
}
