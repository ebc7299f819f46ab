//! A load into a target behind the [`Target`] interface: the pipeline's stages (readers,
//! workers on every core, the order stage when the outcome depends on the input's order, the
//! reject file, progress, interrupts) feeding the target's [`Writer`]s, each on a thread of
//! its own. [`load_into`] tells the load's story: prepare, plan, stream, commit, end.
//!
//! All or nothing: each writer holds a transaction of the load, and any error, a refused row
//! the user does not allow, or an interrupt before the commit drops them, which rolls back.

use crate::columns::map_columns;
use crate::rejects::Rejects;
use crate::resume::{self, Resume};
use crate::sources::{Opened, Sources};
use crate::stages::{
    create_columns, join_workers, reject_header, spawn_error, spawn_ticker, spawn_workers,
    start_readers, EndTicker, Inputs, Shared, CANCEL_POLL,
};
use crate::summary::{Parallelism, Phases};
use crate::target::{Committed, Table, Target, Writer};
use crate::worker::{ArrowPlan, Chunk, Decode, Rows, WorkerPlan};
use crate::{order, Error, LoadOptions, LoadPlan, LoadSummary, Maintenance, OnConflict, Result};
use inrush_core::ledger::{Committed as Block, InputFile};
use inrush_core::{Phase, Progress, Reporter, TargetColumn};
use inrush_read::inputs::InputFormat;
use inrush_read::jsonl::{ColumnForm, JsonLineParser};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Loads `opts`' inputs into `opts.table` of `target`: the load's story, each step a function
/// below.
pub fn load_into(
    target: &dyn Target,
    opts: &LoadOptions,
    reporter: &dyn Reporter,
) -> Result<LoadSummary> {
    let started = Instant::now();
    reporter.phase(Phase::Inspect);
    opts.validate()?;
    crate::support::refuse(target.lacks(), opts)?;
    // Prepare and plan: the inputs opened, the table read, what the load does around the rows.
    let mut load = prepare(target, opts)?;
    if let Some(summary) = already_loaded(target, &load, opts, started)? {
        return Ok(summary);
    }
    let inspected = Instant::now();
    // What the plan changes outside the load's transactions (indexes dropped) is put back by
    // `end` whatever happens in between.
    let dropped = !opts.check_only && target.begin(&load.table, &load.plan)?;
    if dropped {
        opts.interrupt.dropped(true);
    }
    // Kept with the commit, so that a rerun after a failure past it loads nothing.
    let record = crate::commits::to_record(opts, &load.sources, dropped);
    let dropped_at = Instant::now();
    // Stream and commit, then finish: put back what was dropped, take statistics.
    let streamed = stream(target, &mut load, opts, reporter, record.as_deref());
    let ended = end(
        target, &mut load, opts, reporter, &streamed, dropped, &record,
    );
    let streamed = settle(target, &load, opts, streamed, ended, &record)?;
    reporter.phase(Phase::Done);
    let at = [started, inspected, dropped_at];
    Ok(summary(target, load, opts, streamed, at))
}

/// A writer, and the rows it wrote.
type Wrote = (Box<dyn Writer>, u64);

/// What the load read and decided before it changes anything.
struct Prepared {
    progress: Arc<Progress>,
    sources: Arc<Sources>,
    /// The first text source, opened (its header read); the readers take it.
    first: Option<Opened>,
    header_names: Option<Vec<String>>,
    table: Table,
    /// The columns the input feeds, in the input's order.
    columns: Vec<TargetColumn>,
    /// `--resume`: the input as the ledger knows it, and where to read on from.
    resume: Option<(InputFile, Resume)>,
    /// The reject file, when rows may be refused; the stages take it.
    rejects: Option<Rejects>,
    workers: WorkerPlan,
    plan: LoadPlan,
    /// `--check` of rows the engine cannot check inside a rolled-back transaction: why.
    check_skipped: Option<String>,
    /// Rows go to writers (not under a `--check` that stays on the client).
    writes: bool,
    /// Rows reach the writers in the input's order: which row is refused and which key wins
    /// must not depend on which worker finished first.
    ordered: bool,
    notes: Vec<String>,
}

/// Opens the inputs, reads (or designs) the table, maps the columns and decides the plan.
fn prepare(target: &dyn Target, opts: &LoadOptions) -> Result<Prepared> {
    let progress = Arc::new(Progress::default());
    let Inputs {
        sources,
        query_types,
        mut first,
        header_names,
        projections,
    } = Inputs::open(opts, &progress)?;
    let create = match opts.create {
        true => Some(create_columns(
            &sources,
            &query_types,
            header_names.as_deref(),
            &projections,
            first.as_mut(),
            opts.date_order,
        )?),
        false => None,
    };
    let table = target.prepare(opts, create.as_deref())?;
    refuse_truncate(&table, opts)?;
    let explicit = opts.columns.as_deref().filter(|_| !sources.columnar());
    let origin = sources.names_origin();
    let header_origin = header_names.as_deref().map(|n| (n, origin.as_str()));
    let columns = map_columns(&table.columns, &table.name, explicit, header_origin)?;
    let arrow = projections
        .into_iter()
        .zip(&sources.list)
        .map(|(projection, source)| ArrowPlan::new(source, projection, &columns))
        .collect::<Result<Vec<_>>>()?;
    // --resume: which blocks this input already has in the table, and where to read on from.
    let resume = match opts.resume {
        false => None,
        true => {
            let file = resume::input_file(&sources, first.as_ref(), opts.block_size)?;
            let committed = target.ledger(&table, &file)?;
            let start = Resume::start(&committed, &sources, first.as_mut(), &progress)?;
            // A stop keeps the blocks committed so far, and says so.
            opts.interrupt.resumable();
            Some((file, start))
        }
    };
    let rejects = open_rejects(opts, &sources, first.as_ref(), header_names.as_deref())?;
    let decode = match sources.format {
        InputFormat::Jsonl => Decode::Jsonl(JsonLineParser::new(
            &columns
                .iter()
                .map(|c| (c.name.clone(), ColumnForm::Plain))
                .collect::<Vec<_>>(),
        )),
        _ => Decode::Csv,
    };
    let workers = WorkerPlan {
        decode,
        sources: sources.clone(),
        columns: columns.clone(),
        rows: Rows::Target(target.encoder(&table, &positions(&table, &columns)?)?),
        relation: table.name.clone(),
        ordinal: false,
        arrow,
        chunk_bytes: opts.block_size.max(64 * 1024),
        route: None,
        whole_blocks: false,
    };
    let plan = target.plan(&table, opts, sources.size())?;
    // --check writes the rows inside the writers' transactions and rolls them back, so the
    // engine refuses what the load would; where it cannot, the rows are checked here only.
    // A table --create would make has nothing for the engine to check: it is not made.
    let (plan, check_skipped) = match opts.check_only {
        true => (plan.checked(), target.checks_on_client_only(&table, opts)),
        false => (plan, None),
    };
    let writes = !opts.check_only || (check_skipped.is_none() && table.create_sql.is_none());
    let mut notes: Vec<String> = sources.skipped_note().into_iter().collect();
    if let Some(sql) = &table.create_sql {
        notes.push(match opts.check_only {
            true => format!("--create: would run {sql} (--check: nothing was created)"),
            false => format!("--create: {sql} (a load that fails leaves no table)"),
        });
    }
    Ok(Prepared {
        progress,
        sources,
        first,
        header_names,
        table,
        columns,
        resume,
        rejects,
        workers,
        plan,
        check_skipped,
        writes,
        ordered: opts.max_errors > 0 || opts.on_conflict != OnConflict::Error,
        notes,
    })
}

/// The reject file, when `--max-errors` lets rows be refused.
fn open_rejects(
    opts: &LoadOptions,
    sources: &Sources,
    first: Option<&Opened>,
    header_names: Option<&[String]>,
) -> Result<Option<Rejects>> {
    if opts.max_errors == 0 {
        return Ok(None);
    }
    let path = opts
        .rejects
        .clone()
        .unwrap_or_else(|| crate::stages::default_rejects_path(sources));
    let header = reject_header(first, header_names);
    Ok(Some(Rejects::create(
        &path,
        opts.max_errors,
        header.as_deref(),
        opts.resume,
    )?))
}

/// The rows: the writers opened, the stages run, every writer's checks, then the commit
/// (`record`: the input's identity, kept with it; see [`crate::commits`]).
fn stream(
    target: &dyn Target,
    load: &mut Prepared,
    opts: &LoadOptions,
    reporter: &dyn Reporter,
    record: Option<&str>,
) -> Result<Streamed> {
    // --check: one writer, so that a key met twice in the input is refused as a duplicate,
    // not waited on by another writer's open transaction.
    let count = match opts.check_only {
        true => 1,
        false => target.writers(opts, load.ordered).max(1),
    };
    let writers = match load.writes {
        false => Vec::new(),
        true => (0..count)
            .map(|_| {
                let resume = load.resume.as_ref().map(|(file, _)| file);
                target.writer(&load.table, &load.columns, &load.plan, opts, resume)
            })
            .collect::<Result<Vec<_>>>()?,
    };
    let connections = writers.len();
    reporter.phase(Phase::Load);
    let shared = Arc::new(Shared::new(load.progress.clone(), load.rejects.take()));
    let ran = run_stages(load, opts, reporter, &shared, writers);
    // The reject file is kept whatever happens: it describes the rows refused so far.
    let flushed = shared.rejects.as_ref().map_or(Ok(()), Rejects::flush);
    let resumable = load.resume.is_some();
    let (written, mut writers) = ran?;
    if let Some(error) = shared.take_error() {
        // Under --resume a stop keeps every block that committed: say so, and how to go on.
        return Err(match (error, resumable) {
            (Error::Interrupted, true) => Error::InterruptedResumable { rows: written },
            (error, _) => error,
        });
    }
    flushed?;
    // Every writer's own checks pass before any commits (a failed one commits nothing);
    // they count as loading, as the row-by-row checks they replace would.
    for (writer, _) in &mut writers {
        writer.check()?;
    }
    let loaded_at = Instant::now();
    let committed = commit(writers, opts, reporter, resumable, record, written)?;
    Ok(Streamed {
        written,
        rejected: shared.rejects.as_ref().map_or(0, Rejects::count),
        loaded_at,
        committed,
        connections,
        rejects: shared.rejects.as_ref().map(|r| {
            (
                r.path.display().to_string(),
                r.log_path.display().to_string(),
            )
        }),
    })
}

/// Readers, workers on every core, the order stage when the outcome depends on the input's
/// order, and each writer on a thread of its own, all taking chunks from one queue (`--check`
/// on the client has none and counts the chunks' rows here); the rows written, and the
/// writers with their rows.
fn run_stages(
    load: &mut Prepared,
    opts: &LoadOptions,
    reporter: &dyn Reporter,
    shared: &Arc<Shared>,
    writers: Vec<Box<dyn Writer>>,
) -> Result<(u64, Vec<Wrote>)> {
    let workers = opts.workers.max(1);
    let (block_tx, block_rx) = flume::bounded(workers * 2);
    let (chunk_tx, worker_chunks) = flume::bounded(workers * 2);
    let (middle, chunk_rx) = match load.ordered {
        false => (None, worker_chunks),
        true => {
            let (to_writer, chunk_rx) = flume::bounded(workers * 2);
            (Some((worker_chunks, to_writer)), chunk_rx)
        }
    };
    // Not scoped: a read from a pipe that never ends cannot be interrupted (see `stages`).
    let readers = start_readers(
        &load.sources,
        load.first.take(),
        load.header_names
            .clone()
            .filter(|_| load.sources.csv.header),
        load.resume
            .as_ref()
            .map(|(_, r)| r.skip.clone())
            .unwrap_or_default(),
        None,
        if load.ordered { 1 } else { workers },
        shared,
        block_tx,
    )
    .map_err(spawn_error)?;
    let (plan, progress, by_block) = (&load.workers, &load.progress, load.resume.is_some());
    let done = AtomicBool::new(false);
    let ran = std::thread::scope(|scope| -> Result<_> {
        let shared = &**shared;
        let spawn = |name: String| std::thread::Builder::new().name(name);
        let workers = spawn_workers(scope, plan, shared, opts.workers, block_rx, chunk_tx)?;
        let middle = match middle {
            Some((from_workers, to_writer)) => Some(
                spawn("inrush-order".into())
                    .spawn_scoped(scope, move || order::run(from_workers, to_writer, shared))
                    .map_err(spawn_error)?,
            ),
            None => None,
        };
        let ticker = spawn_ticker(scope, &done, &opts.interrupt, shared, reporter, progress)?;
        let _end_ticker = EndTicker(&done);
        let mut streams = Vec::new();
        for (i, mut writer) in writers.into_iter().enumerate() {
            let chunks = chunk_rx.clone();
            let handle = spawn(format!("inrush-write-{i}")).spawn_scoped(scope, move || {
                let mut written = 0;
                let wrote = write_all(
                    Some(&mut writer),
                    &chunks,
                    plan,
                    shared,
                    by_block,
                    &mut written,
                );
                if let Err(e) = wrote {
                    shared.fail(e);
                }
                (writer, written)
            });
            streams.push(handle.map_err(spawn_error)?);
        }
        let mut written = 0;
        if streams.is_empty() {
            write_all(None, &chunk_rx, plan, shared, by_block, &mut written)?;
        }
        drop(chunk_rx);
        let mut writers = Vec::new();
        for stream in streams {
            let (writer, rows) = stream
                .join()
                .map_err(|_| Error::Internal("a writer panicked".into()))?;
            written += rows;
            writers.push((writer, rows));
        }
        join_workers(workers)?;
        if let Some(middle) = middle {
            middle
                .join()
                .map_err(|_| Error::Internal("the order stage panicked".into()))?;
        }
        done.store(true, Ordering::Relaxed);
        let _ = ticker.join();
        Ok((written, writers))
    })?;
    reporter.progress(progress.snapshot());
    if !shared.is_cancelled() {
        for reader in readers {
            reader
                .join()
                .map_err(|_| Error::Internal("an input reader panicked".into()))?;
        }
    }
    Ok(ran)
}

/// The commit window: every writer commits, or (`--check`) rolls back; `None` when nothing
/// committed. `record` is written by the writer that commits last.
fn commit(
    mut writers: Vec<Wrote>,
    opts: &LoadOptions,
    reporter: &dyn Reporter,
    resumable: bool,
    record: Option<&str>,
    written: u64,
) -> Result<Option<Committed>> {
    if writers.is_empty() {
        return Ok(None);
    }
    if opts.check_only {
        // --check: dropping the writers rolls their transactions back.
        drop(writers);
        return match opts.interrupt.is_set() {
            true => Err(Error::Interrupted),
            false => Ok(None),
        };
    }
    // Several writers' commits are one window: once the first commits, the others must too,
    // so a stop is refused from before the first on. A single writer marks that point itself,
    // at its last statement that could still roll back (SQLite builds its indexes inside the
    // transaction).
    let stopped = match writers.len() {
        1 => opts.interrupt.is_set(),
        _ => !opts.interrupt.begin_commit(),
    };
    if stopped {
        return Err(match resumable {
            true => Error::InterruptedResumable { rows: written },
            false => Error::Interrupted,
        });
    }
    if let (Some(identity), Some((last, _))) = (record, writers.last_mut()) {
        last.record(identity, written)?;
    }
    reporter.phase(Phase::Commit);
    Ok(Some(commit_all(writers)?))
}

/// After the rows, committed or not: what `begin` dropped put back, and for a committed load
/// the upkeep (a stop after the commit skips it); a finished load's commit record deleted.
fn end(
    target: &dyn Target,
    load: &mut Prepared,
    opts: &LoadOptions,
    reporter: &dyn Reporter,
    streamed: &Result<Streamed>,
    dropped: bool,
    record: &Option<String>,
) -> Result<Committed> {
    if opts.check_only {
        return Ok(Committed::default());
    }
    let mut plan = load.plan.clone();
    if streamed.is_ok() && opts.interrupt.is_set() {
        plan.after = Maintenance::None;
    }
    if dropped {
        reporter.phase(Phase::Indexes);
    }
    let ended = target.end(&load.table, &plan, streamed.is_ok());
    if ended.is_ok() {
        opts.interrupt.dropped(false);
    }
    if let (Some(identity), Ok(_), Ok(_)) = (record, streamed, &ended) {
        if let Err(e) = target.forget_load(&load.table, identity) {
            load.notes.push(format!(
                "{e}: a rerun of this load into {} would load nothing until its record is deleted",
                load.table.name
            ));
        }
    }
    ended
}

/// The load's outcome from the rows' and the end's: a failure after the commit is
/// [`Error::Unfinished`] (the rows stay), one before it with definitions left dropped
/// [`Error::IndexesNotRestored`].
fn settle(
    target: &dyn Target,
    load: &Prepared,
    opts: &LoadOptions,
    streamed: Result<Streamed>,
    ended: Result<Committed>,
    record: &Option<String>,
) -> Result<Streamed> {
    match (streamed, ended) {
        (Ok(mut streamed), Ok(ended)) => {
            if let Some(c) = streamed.committed.as_mut() {
                c.steps.extend(ended.steps);
                c.notes.extend(ended.notes);
                c.rebuild_seconds += ended.rebuild_seconds;
                c.maintain_seconds += ended.maintain_seconds;
            }
            Ok(streamed)
        }
        (Err(error), Ok(_)) => Err(error),
        // Committed: the rows stay, whatever is left to put back.
        (Ok(streamed), Err(e)) if streamed.committed.is_some() => Err(Error::Unfinished {
            rows: streamed.written,
            table: load.table.name.clone(),
            reason: e.to_string(),
            left: target.still_dropped(&load.table),
            recover: None,
            rerun_loads_nothing: record.is_some() || crate::commits::rerun_adds_nothing(opts),
        }),
        (streamed, Err(e)) => Err(Error::IndexesNotRestored {
            load: streamed.err().map(|e| e.to_string()),
            reason: e.to_string(),
        }),
    }
}

/// The summary of a load that streamed (`at`: when it started, finished inspecting, and had
/// dropped what the plan drops).
fn summary(
    target: &dyn Target,
    load: Prepared,
    opts: &LoadOptions,
    streamed: Streamed,
    at: [Instant; 3],
) -> LoadSummary {
    let [started, inspected, dropped_at] = at;
    let Streamed {
        written: rows,
        rejected,
        loaded_at,
        committed,
        connections,
        rejects,
    } = streamed;
    let Prepared {
        progress,
        sources,
        table,
        resume,
        plan,
        check_skipped,
        mut notes,
        ..
    } = load;
    let bytes = progress.bytes_read.load(Ordering::Relaxed);
    let seconds = started.elapsed().as_secs_f64();
    let load_seconds = (loaded_at - dropped_at).as_secs_f64();
    let (rebuild, maintain) = committed
        .as_ref()
        .map_or((0.0, 0.0), |c| (c.rebuild_seconds, c.maintain_seconds));
    notes.extend(committed.into_iter().flat_map(|c| c.notes));
    LoadSummary {
        input: sources.describe(),
        table: table.name.clone(),
        rows,
        bytes,
        seconds,
        rows_per_second: rows as f64 / seconds.max(1e-9),
        megabytes_per_second: bytes as f64 / 1e6 / seconds.max(1e-9),
        load_rows_per_second: rows as f64 / load_seconds.max(1e-9),
        load_megabytes_per_second: bytes as f64 / 1e6 / load_seconds.max(1e-9),
        wal_bytes: None,
        connections,
        parallelism: Parallelism::fixed(
            connections,
            match (connections, opts.adapt_connections) {
                (n, false) if n == opts.connections => "fixed by --connections",
                (1, _) => "one connection: the engine or the options load in one transaction",
                _ => "cores, at most 4: connections are chosen during the load for PostgreSQL only",
            },
        ),
        workers: opts.workers.max(1),
        copy_format: target.method(),
        text_reason: None,
        values_resolved_by_server: 0,
        server_version: target.version(),
        rows_rejected: rejected,
        rejects_log: rejects.as_ref().map(|(_, log)| log.clone()),
        rejects_file: rejects.map(|(file, _)| file),
        loaded: !opts.check_only,
        check_skipped,
        rows_resumed: resume.as_ref().map_or(0, |(_, r)| r.rows_before),
        blocks: None,
        plan,
        phases: Phases {
            inspect: (inspected - started).as_secs_f64(),
            drop_indexes: (dropped_at - inspected).as_secs_f64(),
            load: load_seconds,
            rebuild_indexes: rebuild,
            maintain,
        },
        notes,
    }
}

/// A rerun of a load that committed and could not finish (see [`crate::commits`]): its
/// summary, the rows being in the table already; `prepare` has put back what it left dropped.
fn already_loaded(
    target: &dyn Target,
    load: &Prepared,
    opts: &LoadOptions,
    started: Instant,
) -> Result<Option<LoadSummary>> {
    let Prepared {
        table,
        sources,
        plan,
        ..
    } = load;
    if opts.check_only || opts.resume {
        return Ok(None);
    }
    let loads = target.unfinished_loads(table)?;
    if loads.is_empty() {
        return Ok(None);
    }
    let Some(identity) = crate::commits::identity(sources) else {
        return Ok(None);
    };
    let Some((_, earlier)) = loads.iter().find(|(id, _)| *id == identity) else {
        return Ok(None);
    };
    let Some(note) = crate::commits::judge(earlier, &table.name)? else {
        return Ok(None);
    };
    target.forget_load(table, &identity)?;
    Ok(Some(LoadSummary::nothing_loaded(
        sources.describe(),
        table.name.clone(),
        target.version(),
        plan.clone(),
        started.elapsed().as_secs_f64(),
        note,
    )))
}

/// Where each mapped column stands among the table's columns.
fn positions(
    table: &crate::target::Table,
    columns: &[inrush_core::TargetColumn],
) -> Result<Vec<usize>> {
    columns
        .iter()
        .map(|c| {
            table
                .columns
                .iter()
                .position(|t| t.name == c.name)
                .ok_or_else(|| {
                    Error::Internal(format!("column {} is not in {}", c.name, table.name))
                })
        })
        .collect()
}

/// What streaming the rows and committing them gave.
struct Streamed {
    written: u64,
    rejected: u64,
    loaded_at: Instant,
    /// `None` for `--check`.
    committed: Option<Committed>,
    connections: usize,
    /// The reject file and its log.
    rejects: Option<(String, String)>,
}

/// Commits every writer's transaction, one after the other: the load's commit window. A
/// failure after the first commit leaves some writers' rows in and others' out, which is said.
fn commit_all(writers: Vec<Wrote>) -> Result<Committed> {
    let connections = writers.len();
    let mut done = crate::target::Committed::default();
    let mut rows_committed = 0;
    for (i, (writer, rows)) in writers.into_iter().enumerate() {
        match writer.commit() {
            Ok(committed) => {
                rows_committed += rows;
                done.steps.extend(committed.steps);
                done.notes.extend(committed.notes);
                done.rebuild_seconds += committed.rebuild_seconds;
                done.maintain_seconds += committed.maintain_seconds;
            }
            Err(e) if i == 0 => return Err(e),
            Err(e) => {
                return Err(Error::PartialCommit {
                    committed: i,
                    connections,
                    rows_committed,
                    reason: e.to_string(),
                })
            }
        }
    }
    Ok(done)
}

/// Hands every chunk to the writer (or, for `--check`, counts its rows) until the queue
/// closes or the load is cancelled, counting the rows written.
fn write_all(
    mut writer: Option<&mut Box<dyn Writer>>,
    chunks: &flume::Receiver<Chunk>,
    plan: &WorkerPlan,
    shared: &Shared,
    by_block: bool,
    written: &mut u64,
) -> Result<()> {
    loop {
        let chunk = match chunks.recv_timeout(CANCEL_POLL) {
            Ok(chunk) => chunk,
            Err(flume::RecvTimeoutError::Timeout) if !shared.is_cancelled() => continue,
            Err(_) => return Ok(()),
        };
        if shared.is_cancelled() {
            return Ok(());
        }
        let block = by_block.then_some(Block {
            offset: chunk.offset as i64,
            len: chunk.len as i64,
            first_line: chunk.first_line as i64,
            next_line: chunk.next_line as i64,
            rows: 0,
        });
        *written += match writer.as_mut() {
            None => chunk.rows,
            Some(writer) => {
                writer.write(&chunk.data, chunk.rows, block, &mut |i, reason, column| {
                    refuse_row(&chunk, i, reason, column, plan, shared)
                })?
            }
        };
    }
}

/// A row the engine refused: into the reject file when the user allows rejects, else the
/// load's error, naming the row (and the column the engine named, with the row's value there).
fn refuse_row(
    chunk: &Chunk,
    i: usize,
    reason: String,
    column: Option<String>,
    plan: &WorkerPlan,
    shared: &Shared,
) -> Result<()> {
    if let (Some(rejects), Some(index)) = (&shared.rejects, &chunk.rows_index) {
        let (raw, mut location) = plan.row_source(chunk, index, i);
        if let Some(column) = column {
            let value = plan.field_text(chunk.source, raw, &column);
            location = location.field(column, value.as_deref());
        }
        return rejects.reject(raw, false, &location, &reason, None);
    }
    let location = plan
        .locate_row(
            chunk.source,
            chunk.first_line,
            chunk.offset,
            chunk.len,
            i as u64,
        )
        .unwrap_or_else(|| plan.chunk_location(chunk.source, chunk.first_line));
    Err(Error::ServerRefused {
        location: Some(Box::new(location)),
        message: reason,
        sqlstate: None,
    })
}

/// What a load of `input` (its size decides) into `opts.table` of `target` would do, without
/// doing it (`inrush plan`).
pub fn plan_into(target: &dyn Target, opts: &LoadOptions, input: Option<&str>) -> Result<LoadPlan> {
    let input_size = match input {
        Some(path) => Some(
            std::fs::metadata(path)
                .map_err(|cause| inrush_read::Error::Open {
                    path: path.into(),
                    cause,
                })?
                .len(),
        ),
        None => None,
    };
    crate::support::refuse(target.lacks(), opts)?;
    let table = target.prepare(opts, None)?;
    target.plan(&table, opts, input_size)
}

/// `--truncate` is a DELETE in the load's transaction (TRUNCATE would commit at once), which
/// fires the rules of the keys that reference the table.
fn refuse_truncate(table: &crate::target::Table, opts: &LoadOptions) -> Result<()> {
    match opts.truncate {
        true => table.refuse_deletes("--truncate", "deletes the rows of"),
        false => Ok(()),
    }
}
