//! Carrying out a [`CopyPlan`]: tables made bare, then `jobs` tables at a time loaded and
//! built, then the keys between tables. See the crate's documentation for the order and why.

use crate::plan::{CopyPlan, TablePlan, TableState, CREATED, FINISHED, LOADED};
use crate::verify::{digest, Digest};
use crate::CopyOptions;
use inrush_core::database::{Done, Note, SchemaSource, SchemaTarget, Snapshot, Step};
use inrush_core::progress::{Phase, ProgressSnapshot, Reporter};
use inrush_core::query::QueryError;
use inrush_core::SqlType;
use inrush_load::target::Target;
use inrush_load::{Error, Interrupt, Kind, LoadOptions, QuerySource};
use serde::Serialize;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// A copy stopped from outside (Ctrl-C, SIGTERM): every table load running stops as a load
/// does (rolling back what it has not committed); no new step starts.
#[derive(Debug, Default)]
pub struct Stop {
    asked: AtomicBool,
    running: Mutex<Vec<Arc<Interrupt>>>,
}

impl Stop {
    /// Asks the copy to stop. Returns whether it was asked before.
    pub fn signal(&self) -> bool {
        let again = self.asked.swap(true, Ordering::SeqCst);
        for load in self
            .running
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
        {
            load.signal();
        }
        again
    }

    pub fn is_set(&self) -> bool {
        self.asked.load(Ordering::SeqCst)
    }

    /// A load's interrupt, signalled with the rest; already signalled when a stop was asked.
    fn load(&self) -> Arc<Interrupt> {
        let interrupt = Arc::new(Interrupt::default());
        let mut running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        running.retain(|i| Arc::strong_count(i) > 1);
        if self.is_set() {
            interrupt.signal();
        }
        running.push(interrupt.clone());
        interrupt
    }
}

/// A copy that failed: the table it failed on, if one, and why.
#[derive(Debug)]
pub struct Failed {
    pub table: Option<String>,
    /// Boxed: a load's error is large, and every step returns this.
    pub error: Box<Error>,
}

/// A target's failure, said as the target's (a [`QueryError`] reads as a source's).
pub(crate) fn in_target(e: QueryError) -> Error {
    Error::Engine {
        engine: e.engine,
        what: e.what,
        message: e.message,
    }
}

impl Failed {
    pub(crate) fn whole(error: impl Into<Error>) -> Failed {
        Failed {
            table: None,
            error: Box::new(error.into()),
        }
    }

    fn of(table: &str, error: impl Into<Error>) -> Failed {
        Failed {
            table: Some(table.to_string()),
            error: Box::new(error.into()),
        }
    }
}

/// What a copy tells whoever watches it (the CLI draws a line per table and a bar of rows).
pub trait CopyReporter: Send + Sync {
    /// A table's load began.
    fn loading(&self, table: &str);
    /// Rows of all the copy's loads sent so far, across tables.
    fn rows(&self, rows: u64);
    /// A step of a table began (`primary key orders_pkey`).
    fn building(&self, table: &str, what: &str);
    /// A table is done (rows and its own keys and indexes).
    fn finished(&self, report: &TableReport);
}

#[derive(Debug, Clone, Serialize)]
pub struct TableReport {
    pub table: String,
    pub target: String,
    /// Rows this run loaded (0 when an earlier run had).
    pub rows: u64,
    pub rows_rejected: u64,
    pub rejects_file: Option<String>,
    /// The load's seconds, and the builds' after it.
    pub load_seconds: f64,
    pub build_seconds: f64,
    pub rows_per_second: f64,
    /// How the rows went (`binary COPY over 3 connections`), from the load's summary.
    pub method: String,
    /// An earlier run of the copy had loaded it.
    pub resumed: bool,
    pub notes: Vec<Note>,
    /// `--verify`: both sides' rows, reduced.
    pub verified: Option<Verified>,
}

/// A table's rows in the source's image and in the target, compared (`--verify`).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Verified {
    pub source: Digest,
    pub target: Digest,
    pub seconds: f64,
}

/// The rows of a table differ between the source's image and the target.
#[derive(Debug)]
struct Differs {
    table: String,
    verified: Verified,
}

impl std::fmt::Display for Differs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (s, t) = (self.verified.source, self.verified.target);
        write!(
            f,
            "--verify: {} differs from its source: {} rows with checksum {:016x} there, {} rows with checksum {:016x} here",
            self.table, s.rows, s.checksum, t.rows, t.checksum
        )
    }
}

impl std::error::Error for Differs {}

#[derive(Debug, Clone, Serialize)]
pub struct CopySummary {
    pub copy: String,
    /// How the source's image was held.
    pub snapshot: Option<String>,
    pub tables: Vec<TableReport>,
    /// Foreign keys, numbering, and what was refused of them.
    pub after_all_seconds: f64,
    pub seconds: f64,
    pub rows: u64,
    pub rows_rejected: u64,
    pub not_copied: Vec<inrush_core::database::Object>,
}

/// Runs `plan`: `load_target` makes the target of one table's load (one per table: a load
/// owns its target's state).
pub fn copy(
    plan: &CopyPlan,
    source: &dyn SchemaSource,
    target: &dyn SchemaTarget,
    load_target: &(dyn Fn() -> Result<Box<dyn Target>, Error> + Sync),
    opts: &CopyOptions,
    reporter: &dyn CopyReporter,
) -> Result<CopySummary, Failed> {
    let started = Instant::now();
    fn record<'a>(plan: &'a CopyPlan, table: &'a str, step: &'a str) -> Done<'a> {
        Done {
            copy: &plan.copy,
            table,
            step,
        }
    }
    if !opts.data_only {
        for table in plan.tables.iter().filter(|t| t.state == TableState::New) {
            let name = &table.design.name;
            target
                .run(
                    &Step::new(CREATED, table.design.create.clone()),
                    Some(record(plan, name, CREATED)),
                )
                .map_err(|e| Failed::of(name, in_target(e)))?;
        }
    }
    let loading = !opts.schema_only && plan.tables.iter().any(|t| t.state != TableState::Loaded);
    let jobs = opts.jobs.clamp(1, target.writers());
    let snapshot = match loading || (opts.verify && !opts.schema_only) {
        true => Some(
            source
                .snapshot(jobs * opts.connections.max(1))
                .map_err(Failed::whole)?,
        ),
        false => None,
    };
    let rows = RowsSent::new(reporter);
    let queue: Mutex<Vec<&TablePlan>> = Mutex::new(plan.tables.iter().rev().collect());
    let reports = Mutex::new(Vec::new());
    let failure: Mutex<Option<Failed>> = Mutex::new(None);
    let each = |work: &(dyn Fn(&TablePlan) -> Result<(), Failed> + Sync)| {
        std::thread::scope(|scope| {
            for _ in 0..jobs.min(plan.tables.len()) {
                scope.spawn(|| loop {
                    if opts.stop.is_set() || failure.lock().unwrap().is_some() {
                        return;
                    }
                    let Some(table) = queue.lock().unwrap().pop() else {
                        return;
                    };
                    if let Err(e) = work(table) {
                        // The others stop too: their uncommitted rows roll back, and a rerun
                        // resumes every table from the ledger.
                        opts.stop.signal();
                        failure.lock().unwrap().get_or_insert(e);
                        return;
                    }
                });
            }
        })
    };
    each(&|table: &TablePlan| {
        let image = snapshot.as_ref();
        let report = one_table(
            table,
            plan,
            image,
            target,
            load_target,
            opts,
            &rows,
            reporter,
        )?;
        reporter.finished(&report);
        reports.lock().unwrap().push(report);
        Ok(())
    });
    if let Some(failed) = failure.lock().unwrap().take() {
        return Err(failed);
    }
    if opts.stop.is_set() {
        return Err(Failed::whole(Error::Interrupted));
    }
    let snapshot_how = snapshot.as_ref().map(|s| s.how.clone());
    drop(snapshot); // the source's image is no longer needed: let its transactions go
    let after_all = Instant::now();
    let notes = Mutex::new(Vec::new());
    if !opts.data_only {
        *queue.lock().unwrap() = plan.tables.iter().rev().collect();
        each(&|table: &TablePlan| {
            let mut own = Vec::new();
            steps(
                table,
                &table.design.after_all,
                plan,
                target,
                (&opts.stop, reporter),
                &mut own,
            )?;
            notes.lock().unwrap().push((table.design.name.clone(), own));
            Ok(())
        });
        if let Some(failed) = failure.lock().unwrap().take() {
            return Err(failed);
        }
        if opts.stop.is_set() {
            return Err(Failed::whole(Error::Interrupted));
        }
        target
            .run(
                &Step::new(FINISHED, Vec::new()),
                Some(record(plan, "", FINISHED)),
            )
            .map_err(|e| Failed::whole(in_target(e)))?;
    }
    let mut tables = reports.into_inner().unwrap();
    for (name, own) in notes.into_inner().unwrap() {
        if let Some(report) = tables.iter_mut().find(|r| r.target == name) {
            report.notes.extend(own);
        }
    }
    // In the plan's order: the largest first.
    let order = |r: &TableReport| plan.tables.iter().position(|t| t.design.name == r.target);
    tables.sort_by_key(order);
    Ok(CopySummary {
        copy: plan.copy.clone(),
        snapshot: snapshot_how,
        rows: tables.iter().map(|t| t.rows).sum(),
        rows_rejected: tables.iter().map(|t| t.rows_rejected).sum(),
        tables,
        after_all_seconds: after_all.elapsed().as_secs_f64(),
        seconds: started.elapsed().as_secs_f64(),
        not_copied: plan.not_copied.clone(),
    })
}

/// One table: emptied if an earlier run left it in flight, loaded, then its keys and indexes.
#[allow(clippy::too_many_arguments)]
fn one_table(
    table: &TablePlan,
    plan: &CopyPlan,
    image: Option<&Snapshot>,
    target: &dyn SchemaTarget,
    load_target: &(dyn Fn() -> Result<Box<dyn Target>, Error> + Sync),
    opts: &CopyOptions,
    rows: &RowsSent,
    reporter: &dyn CopyReporter,
) -> Result<TableReport, Failed> {
    let name = &table.design.name;
    let mut report = TableReport {
        table: table.name(),
        target: name.clone(),
        rows: 0,
        rows_rejected: 0,
        rejects_file: None,
        load_seconds: 0.0,
        build_seconds: 0.0,
        rows_per_second: 0.0,
        method: String::new(),
        resumed: table.state == TableState::Loaded,
        notes: table.design.notes.clone(),
        verified: None,
    };
    if let (false, TableState::New | TableState::InFlight, Some(image)) =
        (opts.schema_only, table.state, image)
    {
        if table.state == TableState::InFlight {
            // What a dead run committed of it may be any part of its rows: start again.
            let empty = Step::new("emptied", vec![table.design.empty.clone()]);
            target
                .run(&empty, None)
                .map_err(|e| Failed::of(name, in_target(e)))?;
        }
        reporter.loading(&table.name());
        let summary =
            load(table, image, load_target, opts, rows).map_err(|e| Failed::of(name, e))?;
        let done = Done {
            copy: &plan.copy,
            table: name,
            step: LOADED,
        };
        target
            .run(&Step::new(LOADED, Vec::new()), Some(done))
            .map_err(|e| Failed::of(name, in_target(e)))?;
        report.rows = summary.rows;
        report.rows_rejected = summary.rows_rejected;
        report.rejects_file = summary.rejects_file.clone();
        report.load_seconds = summary.seconds;
        report.rows_per_second = summary.rows_per_second;
        // How the query's rows went: as tuples untouched, or parsed (and why).
        let read = summary
            .notes
            .iter()
            .find_map(|n| n.strip_prefix("--from-query: rows streamed "));
        report.method = format!(
            "{} over {} connection{}{}",
            summary.engine.method,
            summary.connections,
            if summary.connections == 1 { "" } else { "s" },
            read.map(|r| format!(", {r}")).unwrap_or_default()
        );
    }
    if !opts.data_only {
        let builds = Instant::now();
        steps(
            table,
            &table.design.after_rows,
            plan,
            target,
            (&opts.stop, reporter),
            &mut report.notes,
        )?;
        report.build_seconds = builds.elapsed().as_secs_f64();
    }
    if let (true, Some(image)) = (opts.verify, image) {
        reporter.building(&table.name(), "verifying");
        let verified = verify(table, image, target).map_err(|e| Failed::of(name, e))?;
        report.verified = Some(verified);
        if verified.source != verified.target {
            let differs = Differs {
                table: table.name(),
                verified,
            };
            return Err(Failed::of(name, Error::driver(Kind::Other, differs)));
        }
    }
    Ok(report)
}

/// A table's rows in the source's image and in the target, reduced (see [`crate::verify`]).
fn verify(
    table: &TablePlan,
    image: &Snapshot,
    target: &dyn SchemaTarget,
) -> Result<Verified, Error> {
    let started = Instant::now();
    let types: Vec<SqlType> = table
        .design
        .columns
        .iter()
        .map(|name| {
            let column = table.source.columns.iter().find(|c| &c.name == name);
            column.map_or(SqlType::Text, |c| c.sql_type.clone())
        })
        .collect();
    let source = digest(&*image.server, &table.select, &types)?;
    let copied =
        digest(&*target.reader(), &target.select(&table.design), &types).map_err(|e| match e {
            Error::Source(e) => in_target(e),
            e => e,
        })?;
    Ok(Verified {
        source,
        target: copied,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// One table's rows, read from the source's image by the ordinary load: the query cut by
/// the table's integer key into parallel reads when it is large enough to gain from them.
fn load(
    table: &TablePlan,
    image: &Snapshot,
    load_target: &(dyn Fn() -> Result<Box<dyn Target>, Error> + Sync),
    opts: &CopyOptions,
    rows: &RowsSent,
) -> Result<inrush_load::LoadSummary, Error> {
    // Below these a split's extra queries and connections cost more than they gain (a
    // SQLite source knows its rows, not its bytes).
    const SPLIT_FROM_BYTES: u64 = 32 << 20;
    const SPLIT_FROM_ROWS: u64 = 500_000;
    let large =
        table.source.bytes >= SPLIT_FROM_BYTES || table.source.rows_estimate >= SPLIT_FROM_ROWS;
    let split_by = table
        .source
        .split_column()
        .filter(|c| table.design.columns.iter().any(|d| d == c))
        .filter(|_| large && opts.connections > 1);
    let mut load = LoadOptions::new("", table.design.name.clone());
    load.inputs.clear();
    load.from_query = Some(QuerySource {
        from: image.server.clone(),
        sql: table.select.clone(),
        split_by: split_by.map(String::from),
    });
    load.connections = opts.connections.max(1);
    load.workers = opts.workers.max(1);
    load.max_errors = opts.max_errors;
    let file: String = table
        .name()
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || c == '.' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if opts.max_errors > 0 {
        let dir = opts.rejects.clone().unwrap_or_default();
        load.rejects = Some(dir.join(format!("{file}.rejects")));
    }
    load.interrupt = opts.stop.load();
    let target = load_target()?;
    let reporter = TableRows {
        rows,
        sent: AtomicU64::new(0),
    };
    inrush_load::load_into(&*target, &load, &reporter)
}

/// Runs `steps` of `table` not done before, each recorded as it ends; an optional one the
/// target refuses becomes a note of what was left out.
fn steps(
    table: &TablePlan,
    steps: &[Step],
    plan: &CopyPlan,
    target: &dyn SchemaTarget,
    (stop, reporter): (&Stop, &dyn CopyReporter),
    notes: &mut Vec<Note>,
) -> Result<(), Failed> {
    let name = &table.design.name;
    for step in steps.iter().filter(|s| !table.done(&s.what)) {
        if stop.is_set() {
            return Err(Failed::of(name, Error::Interrupted));
        }
        reporter.building(&table.name(), &step.what);
        let done = Done {
            copy: &plan.copy,
            table: name,
            step: &step.what,
        };
        match target.run(step, Some(done)) {
            Ok(()) => {}
            Err(e) if step.optional => notes.push(Note::left_out(format!(
                "{} of {}: the target refused its translation ({})",
                step.what,
                table.name(),
                e.message
            ))),
            Err(e) => return Err(Failed::of(name, in_target(e))),
        }
    }
    Ok(())
}

/// The rows every load of the copy has sent, summed for one progress bar.
struct RowsSent<'r> {
    total: AtomicU64,
    reporter: &'r dyn CopyReporter,
}

impl<'r> RowsSent<'r> {
    fn new(reporter: &'r dyn CopyReporter) -> RowsSent<'r> {
        RowsSent {
            total: AtomicU64::new(0),
            reporter,
        }
    }
}

/// One load's reporter: its rows, added to the copy's.
struct TableRows<'r> {
    rows: &'r RowsSent<'r>,
    /// What this load had reported, so each snapshot adds only what is new.
    sent: AtomicU64,
}

impl Reporter for TableRows<'_> {
    fn phase(&self, _: Phase) {}

    fn progress(&self, snapshot: ProgressSnapshot) {
        let before = self.sent.swap(snapshot.rows_sent, Ordering::Relaxed);
        let added = snapshot.rows_sent.saturating_sub(before);
        let total = self.rows.total.fetch_add(added, Ordering::Relaxed) + added;
        self.rows.reporter.rows(total);
    }
}
