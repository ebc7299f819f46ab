//! The one driver: a load into any [`Target`]. The pipeline's stages (readers, workers on
//! every core, the sort or order stage, the reject file, progress, interrupts) feed the
//! target's [`Streams`] on this thread. [`load_into`] tells the load's story: prepare, plan,
//! begin, stream, commit, end.
//!
//! All or nothing: the streams hold the load's transactions, and any error, a refused row the
//! user does not allow, or an interrupt before the commit drops them, which rolls back.

use crate::columns::map_columns;
use crate::rejects::Rejects;
use crate::resume::{self, Resume};
use crate::sources::{Opened, Sources};
use crate::stages::{
    create_columns, join_workers, reject_header, spawn_error, spawn_ticker, spawn_workers,
    start_readers, EndTicker, Inputs, Shared,
};
use crate::summary::{EngineReport, Parallelism, Phases};
use crate::target::{Committed, Load, Streams, Table, Target, Threaded};
use crate::worker::{ArrowPlan, Decode, WorkerPlan};
use crate::{order, sort, Error, LoadOptions, LoadPlan, LoadSummary, Maintenance, Result};
use inrush_core::ledger::InputFile;
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
    crate::support::refuse(target.supports(), opts)?;
    target.beside(opts, reporter, &mut || {
        // Prepare and plan: the inputs opened, the table read, what the load does around it.
        let mut load = prepare(target, opts).map_err(|e| stopped(opts, e))?;
        if let Some(summary) = already_loaded(&mut load, opts, started)? {
            return Ok(summary);
        }
        let inspected = Instant::now();
        // What the plan arranges is made, and what it changes outside the load's transactions
        // (indexes dropped) is put back by `end` whatever happens in between.
        let dropped = load.engine.begin(&mut load.plan, opts)?;
        if dropped {
            opts.interrupt.dropped(true);
        }
        // Kept with the commit, so that a rerun after a failure at or past it loads nothing.
        let record = crate::commits::to_record(opts, &load.input.sources);
        let dropped_at = Instant::now();
        // Stream and commit, then end: put back what was dropped, take statistics.
        let streamed = stream(&mut load, opts, reporter, record.as_deref());
        let ended = end(&mut load, opts, reporter, &streamed, dropped, &record);
        let streamed = settle(&mut load, opts, streamed, ended)?;
        reporter.phase(Phase::Done);
        let at = [started, inspected, dropped_at];
        Ok(summary(load, opts, streamed, at))
    })
}

/// What the load read and decided before it changes anything, and the engine's side of it.
struct Prepared<'t> {
    engine: Box<dyn Load + 't>,
    input: Input,
    /// The columns the input feeds, in the input's order.
    columns: Vec<TargetColumn>,
    plan: LoadPlan,
    /// `--check` of rows the engine cannot check inside a rolled-back transaction: why.
    check_skipped: Option<String>,
    /// Rows go to the engine (not under a `--check` that stays on the client).
    writes: bool,
    notes: Vec<String>,
}

/// The input's side of a prepared load, which the stages read while the engine's streams
/// write.
struct Input {
    progress: Arc<Progress>,
    sources: Arc<Sources>,
    /// The first text source, opened (its header read); the readers take it.
    first: Option<Opened>,
    header_names: Option<Vec<String>>,
    /// `--resume`: the input as the ledger knows it, and where to read on from.
    resume: Option<(InputFile, Resume)>,
    /// The reject file, when rows may be refused; the stages take it.
    rejects: Option<Rejects>,
    workers: WorkerPlan,
    /// Rows reach the streams in the input's order (see [`Load::ordered`]).
    ordered: bool,
}

/// Opens the inputs, reads (or designs) the table, maps the columns and decides the plan.
fn prepare<'t>(target: &'t dyn Target, opts: &LoadOptions) -> Result<Prepared<'t>> {
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
    let mut engine = target.prepare(opts, create.as_deref())?;
    let table = engine.table().clone();
    refuse_truncate(&table, opts)?;
    let explicit = opts.columns.as_deref().filter(|_| !sources.columnar());
    let origin = sources.names_origin();
    let header_origin = header_names.as_deref().map(|n| (n, origin.as_str()));
    let columns = map_columns(&table.columns, &table.name, explicit, header_origin)?;
    // --resume: which blocks this input already has in the table, and where to read on from.
    let resume = match opts.resume {
        false => None,
        true => {
            let file = resume::input_file(&sources, first.as_ref(), opts.block_size)?;
            let committed = engine.ledger(&file)?;
            let start = Resume::start(&committed, &sources, first.as_mut(), &progress)?;
            // A stop keeps the blocks committed so far, and says so.
            opts.interrupt.resumable();
            Some((file, start))
        }
    };
    let rejects = open_rejects(opts, &sources, first.as_ref(), header_names.as_deref())?;
    let plan = engine.plan(&columns, opts, sources.size())?;
    let encoding = engine.encoding(&columns)?;
    let mut notes: Vec<String> = Vec::new();
    notes.extend(
        query_types
            .as_deref()
            .and_then(|types| engine.query_note(&sources, types, &columns, opts)),
    );
    notes.extend(sources.skipped_note());
    let decode = match sources.format {
        InputFormat::Jsonl => {
            let forms = encoding.json.clone();
            let forms = forms.unwrap_or_else(|| vec![ColumnForm::Plain; columns.len()]);
            let named = columns.iter().map(|c| c.name.clone()).zip(forms);
            Decode::Jsonl(JsonLineParser::new(&named.collect::<Vec<_>>()))
        }
        _ => Decode::Csv,
    };
    let arrow = projections
        .into_iter()
        .zip(&sources.list)
        .map(|(projection, source)| ArrowPlan::new(source, projection, &columns, &*encoding.rows))
        .collect::<Result<Vec<_>>>()?;
    let workers = WorkerPlan {
        decode,
        sources: sources.clone(),
        columns: columns.clone(),
        rows: encoding.rows,
        arrow,
        chunk_bytes: opts.block_size.max(64 * 1024),
        route: encoding.route,
        whole_blocks: encoding.whole_blocks,
    };
    // --check writes the rows inside the writers' transactions and rolls them back, so the
    // engine refuses what the load would; where it cannot, the rows are checked here only.
    // A table --create would make has nothing for the engine to check: it is not made.
    let plan = match opts.prepare {
        Some(_) => plan.for_task(),
        None => plan,
    };
    let (plan, check_skipped) = match opts.check_only {
        true => (plan.checked(), engine.checks_on_client_only(opts)),
        false => (plan, None),
    };
    let writes = !opts.check_only || (check_skipped.is_none() && table.create_sql.is_none());
    if let Some(sql) = &table.create_sql {
        notes.push(match (opts.check_only, &table.create_note) {
            (true, _) => format!("--create: would run {sql} (--check: nothing was created)"),
            (false, Some(note)) => note.clone(),
            (false, None) => format!("--create: {sql} (a load that fails leaves no table)"),
        });
    }
    let ordered = engine.ordered(opts);
    Ok(Prepared {
        engine,
        input: Input {
            progress,
            sources,
            first,
            header_names,
            resume,
            rejects,
            workers,
            ordered,
        },
        columns,
        plan,
        check_skipped,
        writes,
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

/// The rows: the streams opened, the stages run, the checks left to the end, then the commit
/// (`record`: the input's identity, kept with it; see [`crate::commits`]).
fn stream(
    load: &mut Prepared,
    opts: &LoadOptions,
    reporter: &dyn Reporter,
    record: Option<&str>,
) -> Result<Streamed> {
    let mut streams = match load.writes {
        true => {
            let resume = load.input.resume.as_ref().map(|(file, _)| file);
            load.engine.open(&load.columns, &load.plan, opts, resume)?
        }
        false => Box::new(Threaded::new(Vec::new(), false)),
    };
    let connections = streams.connections();
    reporter.phase(Phase::Load);
    let input = &mut load.input;
    let shared = Arc::new(Shared::new(input.progress.clone(), input.rejects.take()));
    let ran = run_stages(input, &load.plan, opts, reporter, &shared, &mut *streams);
    // The reject file is kept whatever happens: it describes the rows refused so far.
    let flushed = shared.rejects.as_ref().map_or(Ok(()), Rejects::flush);
    let (written, resolved) = ran?;
    if let Some(error) = shared.take_error() {
        // Under --resume a stop keeps every block that committed: say so, and how to go on.
        return Err(match (stopped(opts, error), opts.resume) {
            (Error::Interrupted, true) => Error::InterruptedResumable { rows: written },
            (error, _) => error,
        });
    }
    flushed?;
    // The checks count as loading, as the row-by-row checks they replace would.
    streams.check()?;
    let loaded_at = Instant::now();
    let committed = streams.commit(opts, reporter, record, written)?;
    Ok(Streamed {
        written,
        rejected: shared.rejects.as_ref().map_or(0, Rejects::count),
        resolved,
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

/// Readers, workers on every core, the stage between them and the streams (a sort by a kept
/// index's key, or the order stage when the outcome depends on the input's order), and the
/// streams on this thread; the rows written, and the values the workers had the server
/// read.
fn run_stages(
    load: &mut Input,
    plan: &LoadPlan,
    opts: &LoadOptions,
    reporter: &dyn Reporter,
    shared: &Arc<Shared>,
    streams: &mut dyn Streams,
) -> Result<(u64, u64)> {
    let workers = opts.workers.max(1);
    let depth = streams.queue(workers).max(1);
    let (block_tx, block_rx) = flume::bounded(workers * 2);
    let (chunk_tx, worker_chunks) = flume::bounded(depth);
    let (middle, chunk_rx) = match (&plan.sort, load.ordered) {
        (None, false) => (None, worker_chunks),
        (key, _) => {
            let (to_streams, chunk_rx) = flume::bounded(depth);
            (Some((key.clone(), worker_chunks, to_streams)), chunk_rx)
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
        streams.claims(),
        // One reader numbers the units in the input's order.
        if load.ordered { 1 } else { workers },
        shared,
        block_tx,
    )
    .map_err(spawn_error)?;
    let (plan, progress) = (&load.workers, &load.progress);
    let done = AtomicBool::new(false);
    let ran = std::thread::scope(|scope| -> Result<_> {
        let shared = &**shared;
        let spawn = |name: &str| std::thread::Builder::new().name(name.into());
        let workers = spawn_workers(scope, plan, shared, opts.workers, block_rx, chunk_tx)?;
        let middle = match middle {
            Some((Some(key), from_workers, to_streams)) => Some(
                spawn("inrush-sort")
                    .spawn_scoped(scope, move || {
                        let sorted = sort::run(&key, plan, from_workers, to_streams, shared);
                        if let Err(e) = sorted {
                            shared.fail(e);
                        }
                    })
                    .map_err(spawn_error)?,
            ),
            Some((None, from_workers, to_streams)) => Some(
                spawn("inrush-order")
                    .spawn_scoped(scope, move || order::run(from_workers, to_streams, shared))
                    .map_err(spawn_error)?,
            ),
            None => None,
        };
        let ticker = spawn_ticker(scope, &done, &opts.interrupt, shared, reporter, progress)?;
        let end_ticker = EndTicker(&done, ticker.thread().clone());
        let written = streams.write(chunk_rx, plan, shared);
        let resolved = join_workers(workers)?;
        if let Some(middle) = middle {
            middle
                .join()
                .map_err(|_| Error::Internal("the sort or order stage panicked".into()))?;
        }
        end_ticker.end();
        let _ = ticker.join();
        Ok((written, resolved))
    })?;
    reporter.progress(progress.snapshot());
    if !shared.is_cancelled() {
        // Every block was taken, so the readers have finished or are about to.
        for reader in readers {
            reader
                .join()
                .map_err(|_| Error::Internal("an input reader panicked".into()))?;
        }
    }
    Ok(ran)
}

/// After the rows, committed or not: what `begin` dropped put back, and for a committed load
/// the upkeep (a stop after the commit skips it); a finished load's commit record deleted.
fn end(
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
    let committed = streamed.as_ref().is_ok_and(|s| s.committed.is_some());
    if committed && opts.interrupt.is_set() {
        plan.after = Maintenance::None;
    }
    if dropped {
        reporter.phase(Phase::Indexes);
    }
    let ended = load.engine.end(&plan, opts, streamed.is_ok(), reporter);
    if ended.is_ok() {
        opts.interrupt.dropped(false);
    }
    let recorded = streamed
        .as_ref()
        .is_ok_and(|s| s.committed.as_ref().is_some_and(|c| c.recorded));
    if let (Some(identity), true, Ok(_)) = (record, recorded, &ended) {
        if let Err(e) = load.engine.forget_load(identity) {
            load.notes.push(format!(
                "{e}: a rerun of this load into {} would load nothing until its record is deleted",
                load.engine.table().name
            ));
        }
    }
    ended
}

/// The load's outcome from the rows' and the end's: a failure after the commit is
/// [`Error::Unfinished`] (the rows stay) unless the end undid the load, one before it with
/// definitions left dropped [`Error::IndexesNotRestored`].
fn settle(
    load: &mut Prepared,
    opts: &LoadOptions,
    streamed: Result<Streamed>,
    ended: Result<Committed>,
) -> Result<Streamed> {
    match (streamed, ended) {
        (Ok(mut streamed), Ok(ended)) => {
            if let Some(c) = streamed.committed.as_mut() {
                c.extend(ended);
            }
            Ok(streamed)
        }
        (Err(error), Ok(_)) => Err(error),
        // The end answered for the load: its rows were taken out again (or could not be).
        (Ok(_), Err(e @ (Error::KeyViolated { .. } | Error::IndexesNotRestored { .. }))) => Err(e),
        // Committed: the rows stay, whatever is left to put back.
        (Ok(streamed), Err(e)) if streamed.committed.is_some() => Err(Error::Unfinished {
            rows: streamed.written,
            table: load.engine.table().name.clone(),
            reason: e.to_string(),
            left: load.engine.still_dropped(),
            recover: None,
            rerun_loads_nothing: streamed.committed.as_ref().is_some_and(|c| c.recorded)
                || crate::commits::rerun_adds_nothing(opts),
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
    load: Prepared,
    opts: &LoadOptions,
    streamed: Streamed,
    at: [Instant; 3],
) -> LoadSummary {
    let [started, inspected, dropped_at] = at;
    let Streamed {
        written,
        rejected,
        resolved,
        loaded_at,
        committed,
        connections,
        rejects,
    } = streamed;
    let Prepared {
        engine,
        input:
            Input {
                progress,
                sources,
                resume,
                ..
            },
        plan,
        check_skipped,
        mut notes,
        ..
    } = load;
    let bytes = progress.bytes_read.load(Ordering::Relaxed);
    let seconds = started.elapsed().as_secs_f64();
    let load_seconds = (loaded_at - dropped_at).as_secs_f64();
    let committed = committed.unwrap_or_default();
    let rows = committed.rows.unwrap_or(written);
    let parallelism = committed.parallelism.unwrap_or_else(|| {
        Parallelism::fixed(
            connections,
            match (connections, opts.adapt_connections) {
                (n, false) if n == opts.connections => "fixed by --connections",
                (1, _) => "one connection: the engine or the options load in one transaction",
                _ => "cores, at most 4: connections are chosen during the load for PostgreSQL only",
            },
        )
    });
    notes.extend(committed.notes);
    LoadSummary {
        input: sources.describe(),
        table: engine.table().name.clone(),
        rows,
        bytes,
        seconds,
        rows_per_second: rows as f64 / seconds.max(1e-9),
        megabytes_per_second: bytes as f64 / 1e6 / seconds.max(1e-9),
        load_rows_per_second: rows as f64 / load_seconds.max(1e-9),
        load_megabytes_per_second: bytes as f64 / 1e6 / load_seconds.max(1e-9),
        connections: parallelism.chosen,
        parallelism,
        workers: opts.workers.max(1),
        engine: EngineReport {
            version: engine.version(),
            method: engine.method(),
            slower_because: engine.slower_because(),
            log: committed.log,
            values_read_by_server: resolved,
        },
        rows_rejected: rejected,
        rejects_log: rejects.as_ref().map(|(_, log)| log.clone()),
        rejects_file: rejects.map(|(file, _)| file),
        loaded: !opts.check_only,
        check_skipped,
        rows_resumed: resume.as_ref().map_or(0, |(_, r)| r.rows_before),
        blocks: committed.blocks,
        prepared: committed.prepared,
        plan,
        phases: Phases {
            inspect: (inspected - started).as_secs_f64(),
            drop_indexes: (dropped_at - inspected).as_secs_f64(),
            load: load_seconds,
            rebuild_indexes: committed.rebuild_seconds,
            maintain: committed.maintain_seconds,
        },
        notes,
    }
}

/// A rerun of a load that committed and could not finish (see [`crate::commits`]): its
/// summary, the rows being in the table already; `prepare` has put back what it left dropped.
fn already_loaded(
    load: &mut Prepared,
    opts: &LoadOptions,
    started: Instant,
) -> Result<Option<LoadSummary>> {
    let Prepared {
        engine,
        input: Input { sources, .. },
        plan,
        ..
    } = load;
    if opts.check_only || opts.resume {
        return Ok(None);
    }
    let loads = engine.unfinished_loads()?;
    if loads.is_empty() {
        return Ok(None);
    }
    let Some(identity) = crate::commits::identity(sources) else {
        return Ok(None);
    };
    let Some((_, earlier)) = loads.iter().find(|(id, _)| *id == identity) else {
        return Ok(None);
    };
    let table = engine.table().name.clone();
    let Some(note) = crate::commits::judge(earlier, &table)? else {
        return Ok(None);
    };
    engine.forget_load(&identity)?;
    Ok(Some(LoadSummary::nothing_loaded(
        sources.describe(),
        table,
        engine.version(),
        plan.clone(),
        started.elapsed().as_secs_f64(),
        note,
    )))
}

/// What streaming the rows and committing them gave.
struct Streamed {
    written: u64,
    rejected: u64,
    /// Values the workers had the server read (PostgreSQL's resolver).
    resolved: u64,
    loaded_at: Instant,
    /// `None` for `--check`.
    committed: Option<Committed>,
    connections: usize,
    /// The reject file and its log.
    rejects: Option<(String, String)>,
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
    crate::support::refuse(target.supports(), opts)?;
    let mut load = target.inspect(opts)?;
    let columns = load.table().columns.clone();
    load.plan(&columns, opts, input_size)
}

/// `error`, or the stop it came of: a read that a stop ended (a pipe's, which would wait for
/// its writer forever) fails, and the load says it was interrupted.
fn stopped(opts: &LoadOptions, error: Error) -> Error {
    match opts.interrupt.cancels() {
        true => Error::Interrupted,
        false => error,
    }
}

/// `--truncate` is a DELETE in the load's transaction (TRUNCATE would commit at once), which
/// fires the rules of the keys that reference the table.
fn refuse_truncate(table: &Table, opts: &LoadOptions) -> Result<()> {
    match opts.truncate {
        true => table.refuse_deletes("--truncate", "deletes the rows of"),
        false => Ok(()),
    }
}
