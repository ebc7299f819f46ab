//! Carrying out a [`CopyPlan`]: tables made bare, then `jobs` tables at a time loaded and
//! built, then the keys between tables. See the crate's documentation for the order and why.

use crate::board::{Board, Next, Shape, Task};
use crate::failed::{in_target, Failed};
use crate::plan::{CopyPlan, TablePlan, TableState, CREATED, CREATING, FINISHED, LOADED};
use crate::verify::{digest, Digest};
use crate::CopyOptions;
use inrush_core::database::{Done, Note, SchemaSource, SchemaTarget, Snapshot, Step};
use inrush_core::progress::{Phase, ProgressSnapshot, Reporter};
use inrush_core::SqlType;
use inrush_load::target::Target;
use inrush_load::{Error, Interrupt, Kind, LoadOptions, QuerySource};
use serde::Serialize;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

/// A copy stopped from outside (Ctrl-C, SIGTERM): every table load running stops as a load
/// does (rolling back what it has not committed), every step running has its statement
/// ended (an index build rolls back; a rerun builds it again), and no new one starts.
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

    /// The interrupt of one load or step, signalled with the rest; already signalled when a
    /// stop was asked.
    fn interrupt(&self) -> Arc<Interrupt> {
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
    /// The load's seconds; the builds' after it (from the first's start to the last's end,
    /// since they run at once); the keys steps' (foreign keys, numbering), summed.
    pub load_seconds: f64,
    pub build_seconds: f64,
    pub keys_seconds: f64,
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
    /// From the last table's keys and indexes to the end: the foreign keys and numbering that
    /// could not run while tables still loaded.
    pub tail_seconds: f64,
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
    if !opts.data_only {
        for table in plan.tables.iter().filter(|t| t.state == TableState::New) {
            let name = &table.design.name;
            let failed = |e| stopped_or(opts, Failed::of(name, in_target(e)));
            let intent = Step::new(CREATING, Vec::new());
            let done = record(plan, name, CREATING);
            target
                .run(&intent, Some(done), &opts.stop.interrupt())
                .map_err(failed)?;
            let done = record(plan, name, CREATED);
            let step = Step::new(CREATED, table.design.create.clone());
            target
                .run(&step, Some(done), &opts.stop.interrupt())
                .map_err(failed)?;
        }
    }
    let loading = !opts.schema_only && plan.tables.iter().any(|t| t.state != TableState::Loaded);
    // A one-writer target takes one step at a time. Workers beyond `jobs` to build keys and
    // indexes while the loads go on were measured slower on 2 cores (TPC-H SF 1: 33.4 s
    // against 29.2 s, 6 s more of the server's CPU): the loads keep the cores busy already.
    let jobs = opts.jobs.clamp(1, target.writers());
    let image = match loading || (opts.verify && !opts.schema_only) {
        true => Some(
            source
                .snapshot(jobs * opts.connections.max(1))
                .map_err(Failed::whole)?,
        ),
        false => None,
    };
    let copying = Copying {
        plan,
        image: image.as_ref(),
        target,
        load_target,
        opts,
        rows: RowsSent::new(reporter),
        reporter,
        tables: plan
            .tables
            .iter()
            .map(|t| Mutex::new(Tally::new(t)))
            .collect(),
        last_built: Mutex::new(None),
    };
    let board = Mutex::new(Board::new(shapes(plan, opts)));
    let changed = Condvar::new();
    let failure: Mutex<Option<Failed>> = Mutex::new(None);
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            let (copying, board, changed, failure) = (&copying, &board, &changed, &failure);
            scope.spawn(move || loop {
                let task = {
                    let mut board = board.lock().unwrap();
                    loop {
                        if opts.stop.is_set() || failure.lock().unwrap().is_some() {
                            return;
                        }
                        match board.take() {
                            Next::Run(task) => break task,
                            Next::Done => return,
                            // Woken by a task's end; the timeout sees a stop asked by a signal.
                            Next::Wait => {
                                let wait = std::time::Duration::from_millis(100);
                                board = changed.wait_timeout(board, wait).unwrap().0;
                            }
                        }
                    }
                };
                let outcome = copying.run(task);
                if let Err(e) = outcome {
                    // The others stop too: their uncommitted rows roll back, and a rerun
                    // resumes every table from the ledger. A task that fails after a stop
                    // was asked failed of it (its statement was ended): the stop says why.
                    if !opts.stop.signal() {
                        failure.lock().unwrap().get_or_insert(e);
                    }
                    changed.notify_all();
                    return;
                }
                board.lock().unwrap().done(task);
                changed.notify_all();
            });
        }
    });
    if let Some(failed) = failure.into_inner().unwrap() {
        return Err(failed);
    }
    if opts.stop.is_set() {
        return Err(Failed::whole(Error::Interrupted));
    }
    if !opts.data_only {
        let done = record(plan, "", FINISHED);
        target
            .run(
                &Step::new(FINISHED, Vec::new()),
                Some(done),
                &opts.stop.interrupt(),
            )
            .map_err(|e| stopped_or(opts, Failed::whole(in_target(e))))?;
    }
    let last_built = copying.last_built.lock().unwrap().unwrap_or(started);
    // In the plan's order: the largest first.
    let tables: Vec<TableReport> = copying
        .tables
        .into_iter()
        .map(|t| t.into_inner().unwrap().report)
        .collect();
    Ok(CopySummary {
        copy: plan.copy.clone(),
        snapshot: image.as_ref().map(|s| s.how.clone()),
        rows: tables.iter().map(|t| t.rows).sum(),
        rows_rejected: tables.iter().map(|t| t.rows_rejected).sum(),
        tables,
        tail_seconds: last_built.elapsed().as_secs_f64(),
        seconds: started.elapsed().as_secs_f64(),
        not_copied: plan.not_copied.clone(),
    })
}

/// A failure, or the stop that caused it (a stop ends the statement a step waits on).
fn stopped_or(opts: &CopyOptions, failed: Failed) -> Failed {
    match opts.stop.is_set() {
        true => Failed::whole(Error::Interrupted),
        false => failed,
    }
}

fn record<'a>(plan: &'a CopyPlan, table: &'a str, step: &'a str) -> Done<'a> {
    Done {
        copy: &plan.copy,
        table,
        step,
    }
}

/// Each table's work left, for the board: what earlier runs did is not done again.
fn shapes(plan: &CopyPlan, opts: &CopyOptions) -> Vec<Shape> {
    let at = |name: &String| plan.tables.iter().position(|t| &t.design.name == name);
    let pending = |t: &TablePlan, steps: &[Step]| -> Vec<usize> {
        let left = steps.iter().enumerate().filter(|(_, s)| !t.done(&s.what));
        left.map(|(i, _)| i).collect()
    };
    plan.tables
        .iter()
        .map(|t| Shape {
            load: !opts.schema_only && t.state != TableState::Loaded,
            builds: match opts.data_only {
                true => Vec::new(),
                false => pending(t, &t.design.after_rows),
            },
            keys: match opts.data_only {
                true => Vec::new(),
                false => pending(t, &t.design.after_keys)
                    .into_iter()
                    // A table not in this copy is not waited for (the plan leaves out keys
                    // to tables it does not copy; one made before is there).
                    .map(|i| {
                        (
                            i,
                            t.design.after_keys[i].needs.iter().filter_map(at).collect(),
                        )
                    })
                    .collect(),
            },
            after: match opts.data_only {
                true => t
                    .design
                    .after_keys
                    .iter()
                    .flat_map(|k| &k.needs)
                    .filter_map(at)
                    .collect(),
                false => Vec::new(),
            },
        })
        .collect()
}

/// One table's account, filled in as its tasks end.
struct Tally {
    report: TableReport,
    /// When its first build began.
    builds_began: Option<Instant>,
}

impl Tally {
    fn new(table: &TablePlan) -> Tally {
        Tally {
            report: TableReport {
                table: table.name(),
                target: table.design.name.clone(),
                rows: 0,
                rows_rejected: 0,
                rejects_file: None,
                load_seconds: 0.0,
                build_seconds: 0.0,
                keys_seconds: 0.0,
                rows_per_second: 0.0,
                method: String::new(),
                resumed: table.state == TableState::Loaded,
                notes: table.design.notes.clone(),
                verified: None,
            },
            builds_began: None,
        }
    }
}

/// A copy under way: what every task reads, and the tables' accounts.
struct Copying<'a> {
    plan: &'a CopyPlan,
    image: Option<&'a Snapshot>,
    target: &'a dyn SchemaTarget,
    load_target: &'a (dyn Fn() -> Result<Box<dyn Target>, Error> + Sync),
    opts: &'a CopyOptions,
    rows: RowsSent<'a>,
    reporter: &'a dyn CopyReporter,
    /// By the plan's table index.
    tables: Vec<Mutex<Tally>>,
    /// When the last table's keys and indexes were in.
    last_built: Mutex<Option<Instant>>,
}

impl Copying<'_> {
    fn run(&self, task: Task) -> Result<(), Failed> {
        match task {
            Task::Load(t) => self.load(t),
            Task::Build(t, step) => {
                let table = &self.plan.tables[t];
                let began = Instant::now();
                self.tally(t).builds_began.get_or_insert(began);
                let note = self.step(table, &table.design.after_rows[step])?;
                let mut tally = self.tally(t);
                tally.report.notes.extend(note);
                let first = tally.builds_began.unwrap_or(began);
                tally.report.build_seconds = first.elapsed().as_secs_f64();
                Ok(())
            }
            Task::Finish(t) => self.finish(t),
            Task::Keys(t, step) => {
                let table = &self.plan.tables[t];
                let began = Instant::now();
                let note = self.step(table, &table.design.after_keys[step])?;
                let mut tally = self.tally(t);
                tally.report.notes.extend(note);
                tally.report.keys_seconds += began.elapsed().as_secs_f64();
                Ok(())
            }
        }
    }

    fn tally(&self, t: usize) -> std::sync::MutexGuard<'_, Tally> {
        self.tables[t].lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A table's rows: emptied first if an earlier run left it in flight.
    fn load(&self, t: usize) -> Result<(), Failed> {
        let table = &self.plan.tables[t];
        let name = &table.design.name;
        let Some(image) = self.image else {
            return Err(Failed::whole(Error::Internal(
                "a load without the source's image".into(),
            )));
        };
        // What a dead run committed of it may be any part of its rows: start again.
        if let (TableState::InFlight, Some(empty)) = (table.state, &table.design.empty) {
            let empty = Step::new("emptied", vec![empty.clone()]);
            self.target
                .run(&empty, None, &self.opts.stop.interrupt())
                .map_err(|e| Failed::of(name, in_target(e)))?;
        }
        self.reporter.loading(&table.name());
        let summary = load(table, image, self.load_target, self.opts, &self.rows)
            .map_err(|e| Failed::of(name, e))?;
        let done = record(self.plan, name, LOADED);
        self.target
            .run(
                &Step::new(LOADED, Vec::new()),
                Some(done),
                &self.opts.stop.interrupt(),
            )
            .map_err(|e| Failed::of(name, in_target(e)))?;
        // How the query's rows went: as tuples untouched, or parsed (and why).
        let read = summary
            .notes
            .iter()
            .find_map(|n| n.strip_prefix("--from-query: rows streamed "));
        let report = &mut self.tally(t).report;
        report.rows = summary.rows;
        report.rows_rejected = summary.rows_rejected;
        report.rejects_file = summary.rejects_file.clone();
        report.load_seconds = summary.seconds;
        report.rows_per_second = summary.rows_per_second;
        report.method = format!(
            "{} over {} connection{}{}",
            summary.engine.method,
            summary.connections,
            if summary.connections == 1 { "" } else { "s" },
            read.map(|r| format!(", {r}")).unwrap_or_default()
        );
        Ok(())
    }

    /// A table whose rows, keys and indexes are in: verified (`--verify`), then reported.
    fn finish(&self, t: usize) -> Result<(), Failed> {
        *self.last_built.lock().unwrap() = Some(Instant::now());
        let table = &self.plan.tables[t];
        if let (true, false, Some(image)) = (self.opts.verify, self.opts.schema_only, self.image) {
            self.reporter.building(&table.name(), "verifying");
            let verified =
                verify(table, image, self.target).map_err(|e| Failed::of(&table.design.name, e))?;
            self.tally(t).report.verified = Some(verified);
            if verified.source != verified.target {
                let differs = Differs {
                    table: table.name(),
                    verified,
                };
                return Err(Failed::of(
                    &table.design.name,
                    Error::driver(Kind::Other, differs),
                ));
            }
        }
        let report = self.tally(t).report.clone();
        self.reporter.finished(&report);
        Ok(())
    }

    /// Runs `step` of `table`, recorded as it ends; an optional one the target refuses
    /// becomes a note of what was left out.
    fn step(&self, table: &TablePlan, step: &Step) -> Result<Option<Note>, Failed> {
        let name = &table.design.name;
        self.reporter.building(&table.name(), &step.what);
        let done = Some(record(self.plan, name, &step.what));
        match self.target.run(step, done, &self.opts.stop.interrupt()) {
            Ok(()) => Ok(None),
            // Ended by a stop, it is not a refusal: it fails, the worker reports the stop, and
            // a rerun runs it again.
            Err(e) if step.optional && !self.opts.stop.is_set() => {
                Ok(Some(Note::left_out(format!(
                    "{} of {}: the target refused its translation ({})",
                    step.what,
                    table.name(),
                    e.message
                ))))
            }
            Err(e) => Err(Failed::of(name, in_target(e))),
        }
    }
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
    // The load empties the table itself (see `Design::empty`); a table of --data-only that
    // no run loaded keeps the rows it has.
    load.truncate =
        table.design.empty.is_none() && (table.state == TableState::InFlight || !opts.data_only);
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
    load.interrupt = opts.stop.interrupt();
    let target = load_target()?;
    let reporter = TableRows {
        rows,
        sent: AtomicU64::new(0),
    };
    inrush_load::load_into(&*target, &load, &reporter)
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
