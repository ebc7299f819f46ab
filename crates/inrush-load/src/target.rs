//! What the pipeline asks of a target engine: the interface a target crate implements.
//!
//! The pipeline owns the inputs (sources, splitting, parsing on every core, the reject file,
//! the order of rows, progress and interrupts); a target owns everything said to its engine:
//! its catalog, how a field's text becomes a value it stores (checked, so a bad value is a
//! rejected row and never a silent change), how rows are written and committed, and what is
//! done around the load. [`load_into`](crate::load_into) drives any [`Target`].
//!
//! The flow: [`Target::prepare`] reads (or, for `--create`, designs) the table and returns the
//! load's own object, a [`Load`], which the driver passes from step to step: the pipeline maps
//! input fields to its columns, [`Load::plan`] decides what the load does around the rows, and
//! the workers encode rows as [`Load::encoding`] says. [`Load::open`] opens the
//! load's writing side, its [`Streams`]: by default one [`Writer`] per connection, each on a
//! thread of its own taking chunks from one queue, then committed together
//! ([`Threaded`]); an engine with its own way of streaming (PostgreSQL's COPY sinks with their
//! watch and adaptive connections) brings its own.

use crate::commits::{EarlierLoad, Fate};
use crate::resume::Claims;
use crate::route::Route;
use crate::shared::{Shared, CANCEL_POLL};
use crate::sources::Sources;
use crate::stages::spawn_error;
use crate::summary::{Blocks, Log, Parallelism};
use crate::support::Support;
use crate::worker::{Chunk, WorkerPlan};
use crate::{Error, LoadOptions, LoadPlan, LoadSummary, OnConflict, Result};
use bytes::Bytes;
use inrush_core::catalog::TableSize;
use inrush_core::ledger::{Committed as Block, InputFile};
use inrush_core::{Phase, Reporter, SqlType, TargetColumn};
use inrush_read::jsonl::ColumnForm;
use std::sync::Arc;

pub use crate::encoder::{At, PlainFields, Refused, RowEncoder, RowWriter};

/// A runtime of its own for the calling thread, for an engine whose driver is async: the
/// pipeline's threads are plain threads, each connection is used by one of them at a time,
/// and the CPU work is in the workers, so one thread drives it.
pub fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::Internal(format!("starting a runtime: {e}")))
}

/// The result of a future that never waits: a synchronous engine's side of a rule written
/// once as async (the engine's methods do their work when called). A future that would wait
/// is an error, never a hang.
pub fn at_once<T>(future: impl std::future::Future<Output = Result<T>>) -> Result<T> {
    let mut future = std::pin::pin!(future);
    let mut context = std::task::Context::from_waker(std::task::Waker::noop());
    match future.as_mut().poll(&mut context) {
        std::task::Poll::Ready(done) => done,
        std::task::Poll::Pending => {
            Err(Error::Internal("a synchronous engine's step waited".into()))
        }
    }
}

/// A target engine, opened on one database: what it carries out, and the load it prepares.
pub trait Target: Sync {
    /// The options of [`crate::support::Feature`] this engine carries out; every other is
    /// refused by [`crate::support::refuse`] before anything is read or changed.
    fn supports(&self) -> &'static Support;

    /// Runs the whole `load` with what the engine watches beside it (PostgreSQL: sessions
    /// outside the load holding a lock it waits on, told to `reporter`, and a server that
    /// stops answering for `opts.network_timeout`).
    fn beside(
        &self,
        opts: &LoadOptions,
        reporter: &dyn Reporter,
        load: &mut dyn FnMut() -> Result<LoadSummary>,
    ) -> Result<LoadSummary> {
        let _ = (opts, reporter);
        load()
    }

    /// Opens one load: reads the table (`create`: the columns `--create` inferred, each mapped
    /// to the engine's own type unless `--types` names one, [`crate::create::given_types`]; the
    /// table is made inside the load's own transaction), and takes what the load holds from
    /// here to its end (a claim on the table, its sessions).
    fn prepare(
        &self,
        opts: &LoadOptions,
        create: Option<&[(String, SqlType)]>,
    ) -> Result<Box<dyn Load + '_>>;

    /// `inrush plan`: the table as [`Target::prepare`] would find it, for [`Load::plan`]
    /// only: nothing claimed, nothing put back, nothing changed.
    fn inspect(&self, opts: &LoadOptions) -> Result<Box<dyn Load + '_>> {
        self.prepare(opts, None)
    }
}

/// One load into a target, from [`Target::prepare`] to its end: the table, what the engine
/// decided for it and what it holds (sessions, a claim, what `begin` dropped). The driver
/// owns it and passes it on from step to step; dropping it lets go of everything.
pub trait Load {
    /// The table as the load found (or designed) it.
    fn table(&self) -> &Table;

    /// The engine and its version, for the summary (`SQLite 3.50.4`).
    fn version(&self) -> String;

    /// How rows are written, for the summary (`multi-row INSERT`).
    fn method(&self) -> &'static str;

    /// What the load does around the rows (indexes dropped and built after, statistics), for
    /// `load_bytes` of input into `columns` (the ones the input feeds, in its order); `inrush
    /// plan` prints it, the load carries it out. It reads and decides; [`Load::begin`] makes
    /// what it arranges.
    fn plan(
        &mut self,
        columns: &[TargetColumn],
        opts: &LoadOptions,
        load_bytes: Option<u64>,
    ) -> Result<LoadPlan>;

    /// How the workers turn records into rows for `columns` (the ones the input feeds, in its
    /// order), after [`Load::plan`].
    fn encoding(&mut self, columns: &[TargetColumn]) -> Result<Encoding>;

    /// `--from-query` (its columns' names and types, `types`): how its rows reach the table,
    /// for the summary's notes, after [`Load::encoding`].
    fn query_note(
        &self,
        sources: &Sources,
        types: &[(String, SqlType)],
        columns: &[TargetColumn],
        opts: &LoadOptions,
    ) -> Option<String> {
        let _ = (sources, types, columns, opts);
        None
    }

    /// Why the rows go in a slower form than the engine's best, when they do.
    fn slower_because(&self) -> Option<String> {
        None
    }

    /// Rows must reach the writers in the input's order, so that which row is refused and
    /// which key wins does not depend on which worker finished first.
    fn ordered(&self, opts: &LoadOptions) -> bool {
        opts.max_errors > 0 || opts.on_conflict != OnConflict::Error
    }

    /// How many writers (connections, each with its own transaction) the default streams use;
    /// `ordered`: rows must reach the table in the input's order (one writer then).
    fn writers(&self, opts: &LoadOptions, ordered: bool) -> usize {
        let _ = (opts, ordered);
        1
    }

    /// `--resume`: registers `input` in the target's ledger (or refuses it when it changed
    /// since, [`Error::InputChanged`] by [`crate::resume::unchanged`]) and returns the blocks
    /// of it already committed, by offset.
    fn ledger(&mut self, input: &InputFile) -> Result<Vec<Block>>;

    /// `--check`: why the rows of this load cannot be written inside transactions rolled back
    /// at the end (a table without transactions keeps what is written), so that the check
    /// stays on the client: values only, not the table's keys, CHECK constraints, foreign
    /// keys and triggers. `None`: the check writes them, and the engine checks every row.
    fn checks_on_client_only(&self, opts: &LoadOptions) -> Option<String> {
        let _ = opts;
        None
    }

    /// Before the writers start: what the plan arranged that is made before the rows (a
    /// staging table), and what it changes outside the load's transactions (indexes
    /// journaled and dropped, where DDL is not transactional). [`Load::end`] runs whatever
    /// happens after this returns. True when definitions are now dropped outside the load's
    /// transactions, so an exit before `end` would leave them dropped: a signal then waits
    /// for them to be put back. Under `--check` the plan drops nothing. What cannot be dropped
    /// (a right refused, a lock waited for too long) stays, and the plan says so
    /// ([`LoadPlan::keep_after_all`]).
    fn begin(&mut self, plan: &mut LoadPlan, opts: &LoadOptions) -> Result<bool> {
        let _ = (plan, opts);
        Ok(false)
    }

    /// Opens the load's writing side (see [`Streams`]): by default `writers` writers (one
    /// under `--check`, so that a key met twice in the input is refused as a duplicate, not
    /// waited on by another writer's open transaction).
    fn open(
        &mut self,
        columns: &[TargetColumn],
        plan: &LoadPlan,
        opts: &LoadOptions,
        resume: Option<&InputFile>,
    ) -> Result<Box<dyn Streams + '_>> {
        let count = match opts.check_only {
            true => 1,
            false => self.writers(opts, self.ordered(opts)).max(1),
        };
        let writers = (0..count)
            .map(|_| self.writer(columns, plan, opts, resume))
            .collect::<Result<Vec<_>>>()?;
        Ok(Box::new(Threaded::new(writers, resume.is_some())))
    }

    /// One writer of the default streams: its transaction, the plan's steps before the rows.
    /// Rows come to the writer in chunks of what the encoder wrote. With `resume`, each chunk
    /// is a block of that input, committed with its ledger row on its own. A load that opens
    /// streams of its own has none.
    fn writer(
        &mut self,
        columns: &[TargetColumn],
        plan: &LoadPlan,
        opts: &LoadOptions,
        resume: Option<&InputFile>,
    ) -> Result<Box<dyn Writer>> {
        let _ = (columns, plan, opts, resume);
        Err(Error::Internal(
            "this target opens streams of its own".into(),
        ))
    }

    /// After the writers, committed (`committed`) or rolled back: what `begin` changed is put
    /// back, then, for a committed load, what the plan does after it outside its transactions
    /// (statistics, its phase told to `reporter`). An error means the table could not be put
    /// back as it was (or, as [`Error::KeyViolated`], that the load was undone).
    fn end(
        &mut self,
        plan: &LoadPlan,
        opts: &LoadOptions,
        committed: bool,
        reporter: &dyn Reporter,
    ) -> Result<Committed> {
        let _ = (plan, opts, committed, reporter);
        Ok(Committed::default())
    }

    /// After [`Load::end`] failed: what is still dropped (`index t_c1`), as far as the
    /// engine can still tell, for the message that says how to finish.
    fn still_dropped(&mut self) -> Vec<String> {
        Vec::new()
    }

    /// Records of loads into the table that committed and could not finish, each with its
    /// input's identity (see [`crate::commits`]); stale ones (their commit failed) dropped. A
    /// target whose loads drop nothing outside their transaction has none.
    fn unfinished_loads(&mut self) -> Result<Vec<(String, EarlierLoad)>> {
        Ok(Vec::new())
    }

    /// Deletes the record of the load of `identity` into the table: it finished, or a rerun
    /// found its rows there and loaded nothing.
    fn forget_load(&mut self, identity: &str) -> Result<()> {
        let _ = identity;
        Ok(())
    }
}

/// A table as a target describes it to the pipeline.
#[derive(Debug, Clone)]
pub struct Table {
    /// How messages name it.
    pub name: String,
    /// Every column, in table order (for `--columns` and header mapping).
    pub columns: Vec<TargetColumn>,
    /// Bytes the table holds now, if known (for deciding the plan).
    pub bytes: Option<u64>,
    /// `--create`: the statement that makes the table, run in the load's transaction.
    pub create_sql: Option<String>,
    /// `--create`: what the summary says of it, when the engine says more than the statement.
    pub create_note: Option<String>,
    /// Other tables' foreign keys whose `ON DELETE` rule changes their rows when rows of this
    /// one are deleted (CASCADE, SET NULL, SET DEFAULT), each as the engine names it.
    pub changed_by_delete: Vec<String>,
}

impl Table {
    /// Where each of `columns` stands among the table's columns.
    pub fn positions(&self, columns: &[TargetColumn]) -> Result<Vec<usize>> {
        columns
            .iter()
            .map(|c| {
                self.columns
                    .iter()
                    .position(|t| t.name == c.name)
                    .ok_or_else(|| {
                        Error::Internal(format!("column {} is not in {}", c.name, self.name))
                    })
            })
            .collect()
    }

    /// What the plan weighs of the table when the engine knows only its bytes on disk: no
    /// index sizes, no row estimate.
    pub fn size(&self, empty: bool) -> TableSize {
        TableSize {
            table_bytes: self.bytes.unwrap_or(0) as i64,
            index_bytes: 0,
            rows_estimate: -1.0,
            empty,
        }
    }

    /// What the engine keeps for each of the table's columns (`per_column`, in the table's
    /// order), for the loaded `columns` in their order.
    pub fn of_loaded<T: Clone>(
        &self,
        per_column: &[T],
        columns: &[TargetColumn],
    ) -> Result<Vec<T>> {
        self.positions(columns)?
            .into_iter()
            .map(|i| {
                per_column
                    .get(i)
                    .cloned()
                    .ok_or_else(|| Error::Internal(format!("no column {i} in {}", self.name)))
            })
            .collect()
    }

    /// Refuses `option`, which `does` delete rows of this table, when other tables' keys
    /// would follow those deletes: inrush changes no table but the one it loads.
    pub fn refuse_deletes(&self, option: &str, does: &str) -> Result<()> {
        if self.changed_by_delete.is_empty() {
            return Ok(());
        }
        Err(Error::Usage(format!(
            "{option}: {does} {}, which changes rows of other tables through their foreign keys: {}; load without {option}",
            self.name,
            self.changed_by_delete.join(", ")
        )))
    }
}

/// Writes encoded rows inside the load's transaction; dropping it rolls back.
pub trait Writer: Send {
    /// Writes `rows` rows encoded in `data` in the writer's open transaction. A row the engine
    /// refuses (a constraint) is passed to `refused` with its index in the chunk, the engine's
    /// message and the column it names (for the reject log, with the row's value there); when
    /// `refused` accepts it (the user allows rejects) the other rows are written, else the load
    /// ends with its error. Returns how many rows were written. `data` is the chunk's own
    /// buffer, so a writer that hands the bytes on (MariaDB's `LOAD DATA LOCAL` stream) need
    /// not copy them.
    fn write(
        &mut self,
        data: &Bytes,
        rows: u64,
        refused: &mut dyn FnMut(usize, String, Option<String>) -> Result<()>,
    ) -> Result<u64>;

    /// `--resume`: begins the transaction of one block's rows ([`in_block`]).
    fn begin_block(&mut self) -> Result<()>;

    /// `--resume`: records `block` in the ledger inside the block's transaction, and commits.
    fn commit_block(&mut self, block: Block) -> Result<()>;

    /// `--resume`: rolls a block's transaction back after an error, as far as the connection
    /// still can (the error said is the first one).
    fn roll_back_block(&mut self);

    /// After every chunk is written and before any writer commits: the checks the plan left
    /// to the end of the load (foreign keys checked once over the rows). An error rolls back
    /// every writer.
    fn check(&mut self) -> Result<()> {
        Ok(())
    }

    /// Records, inside this writer's transaction, its share of the load's record (see
    /// [`crate::commits`]). Called on every writer before the first commits, so the record is
    /// whole exactly when every writer committed, and a part of it names the writers that did.
    /// Whether it was recorded (an engine that keeps no record, or a role that may not write
    /// one, does not).
    fn record(&mut self, share: &Share) -> Result<bool> {
        let _ = share;
        Ok(false)
    }

    /// Finishes what the plan does after the rows (indexes back, ANALYZE) and commits.
    fn commit(self: Box<Self>) -> Result<Committed>;
}

/// One writer's share of a load's record (see [`Writer::record`]).
#[derive(Debug, Clone)]
pub struct Share<'a> {
    /// The input's identity ([`crate::commits::identity`]).
    pub identity: &'a str,
    /// This run of the load, apart from any other run of the same input.
    pub load: &'a str,
    /// Which share (from 1), of how many, and the rows it commits.
    pub part: usize,
    pub parts: usize,
    pub rows: u64,
}

/// What a committed load did beside writing rows.
#[derive(Debug, Clone, Default)]
pub struct Committed {
    /// The plan as carried out, one line per step, for the summary.
    pub steps: Vec<String>,
    pub notes: Vec<String>,
    /// Seconds spent building dropped indexes again.
    pub rebuild_seconds: f64,
    /// Seconds spent on statistics (ANALYZE) and the like.
    pub maintain_seconds: f64,
    /// The rows the table took when they are not the rows written (`--on-conflict` merges
    /// them, skipping or updating some).
    pub rows: Option<u64>,
    /// How the number of connections was chosen, when the streams chose it as they went.
    pub parallelism: Option<Parallelism>,
    /// `--resume`: the blocks this run loaded and found loaded by others.
    pub blocks: Option<Blocks>,
    /// The log the load wrote, where the engine says.
    pub log: Option<Log>,
    /// `--prepare`: the transactions left prepared for the job to decide.
    pub prepared: Vec<String>,
    /// The load recorded itself with its commit (see [`crate::commits`]): it deletes the
    /// record once it is done, and a rerun after a failure finds it.
    pub recorded: bool,
}

impl Committed {
    /// Adds what `later` (the end's) did.
    pub fn extend(&mut self, later: Committed) {
        self.steps.extend(later.steps);
        self.notes.extend(later.notes);
        self.rebuild_seconds += later.rebuild_seconds;
        self.maintain_seconds += later.maintain_seconds;
        self.rows = later.rows.or(self.rows);
        self.parallelism = later.parallelism.or(self.parallelism.take());
        self.blocks = later.blocks.or(self.blocks.take());
        self.log = later.log.or(self.log);
        self.prepared.extend(later.prepared);
        self.recorded |= later.recorded;
    }
}

/// How the workers turn records into an engine's rows, and where those go.
pub struct Encoding {
    pub rows: Box<dyn RowEncoder>,
    /// Rows split by destination before they are sent ([`crate::route`]).
    pub route: Option<Box<dyn Route>>,
    /// A routed block's pieces travel together ([`WorkerPlan::whole_blocks`]).
    pub whole_blocks: bool,
    /// JSON lines: how each column's value is read; `None`: as plain text.
    pub json: Option<Vec<ColumnForm>>,
}

impl Encoding {
    /// Rows made by `encoder`, in one stream.
    pub fn encoder(encoder: Box<dyn RowEncoder>) -> Encoding {
        Encoding {
            rows: encoder,
            route: None,
            whole_blocks: false,
            json: None,
        }
    }
}

/// The load's writing side: it takes the encoded chunks, checks what the plan left to the end,
/// and commits, all or nothing. Dropped before its commit, it rolls back.
pub trait Streams {
    /// How many connections write at most.
    fn connections(&self) -> usize;

    /// How many encoded chunks may wait for the streams, given `workers` workers: enough to
    /// keep every stream busy, few enough to bound memory. By default twice the workers.
    fn queue(&self, workers: usize) -> usize {
        workers * 2
    }

    /// `--resume` by several processes at once: which blocks this one reads.
    fn claims(&self) -> Option<Arc<dyn Claims>> {
        None
    }

    /// Writes the chunks `chunks` brings until it closes or the load is cancelled, on the
    /// driver's thread beside the stages; a failure goes to `shared`. The rows written.
    fn write(&mut self, chunks: flume::Receiver<Chunk>, plan: &WorkerPlan, shared: &Shared) -> u64;

    /// After every chunk is written and before anything commits: the checks the plan left to
    /// the end of the load. An error rolls everything back.
    fn check(&mut self) -> Result<()> {
        Ok(())
    }

    /// The commit window: every transaction commits, or (`--check`) rolls back; `None` when
    /// nothing committed. `record` (see [`crate::commits`]) is kept with the commit.
    fn commit(
        self: Box<Self>,
        opts: &LoadOptions,
        reporter: &dyn Reporter,
        record: Option<&str>,
        written: u64,
    ) -> Result<Option<Committed>>;
}

/// Whether the load goes on into its commit. `enters`: the commit window opens here
/// ([`crate::Interrupt::begin_commit`]: a stop asked from now on waits for the commit, and
/// the commit and the stop agree on which came first); else a stop asked so far is only read
/// (the window opens later, or this commit changes nothing the user sees). A stop asked
/// before is the load's end, rolled back; under `--resume` (`resumed`: the rows written) the
/// blocks committed so far stay.
pub fn into_commit(interrupt: &crate::Interrupt, enters: bool, resumed: Option<u64>) -> Result<()> {
    let stopped = match enters {
        true => !interrupt.begin_commit(),
        false => interrupt.is_set(),
    };
    match (stopped, resumed) {
        (false, _) => Ok(()),
        (true, Some(rows)) => Err(Error::InterruptedResumable { rows }),
        (true, None) => Err(Error::Interrupted),
    }
}

/// `refused` (see [`Writer::write`]) for an engine whose refusals name their column in the
/// message only: `column_of` reads it there, for the reject log.
pub fn naming_column<'a>(
    refused: &'a mut dyn FnMut(usize, String, Option<String>) -> Result<()>,
    column_of: fn(&str) -> Option<String>,
) -> impl FnMut(usize, String) -> Result<()> + 'a {
    move |i, message| {
        let column = column_of(&message);
        refused(i, message, column)
    }
}

/// The default [`Streams`]: each [`Writer`] on a thread of its own, all taking chunks from one
/// queue, committed one after the other. Without writers (`--check` that stays on the client)
/// the chunks' rows are counted here.
pub struct Threaded {
    writers: Vec<(Box<dyn Writer>, u64)>,
    /// `--resume`: each chunk is a block, committed with its ledger row.
    by_block: bool,
}

impl Threaded {
    pub fn new(writers: Vec<Box<dyn Writer>>, by_block: bool) -> Threaded {
        Threaded {
            writers: writers.into_iter().map(|w| (w, 0)).collect(),
            by_block,
        }
    }
}

impl Streams for Threaded {
    fn connections(&self) -> usize {
        self.writers.len()
    }

    fn write(&mut self, chunks: flume::Receiver<Chunk>, plan: &WorkerPlan, shared: &Shared) -> u64 {
        let by_block = self.by_block;
        if self.writers.is_empty() {
            let mut counted = 0;
            if let Err(e) = write_all(None, &chunks, plan, shared, by_block, &mut counted) {
                shared.fail(e);
            }
            return counted;
        }
        std::thread::scope(|scope| {
            let mut streams = Vec::new();
            for (i, (writer, written)) in self.writers.iter_mut().enumerate() {
                let chunks = chunks.clone();
                let spawned = std::thread::Builder::new()
                    .name(format!("inrush-write-{i}"))
                    .spawn_scoped(scope, move || {
                        let wrote =
                            write_all(Some(writer), &chunks, plan, shared, by_block, written);
                        if let Err(e) = wrote {
                            shared.fail(e);
                        }
                    });
                match spawned {
                    Ok(handle) => streams.push(handle),
                    Err(e) => shared.fail(spawn_error(e)),
                }
            }
            drop(chunks);
            for stream in streams {
                if stream.join().is_err() {
                    shared.fail(Error::Internal("a writer panicked".into()));
                }
            }
        });
        self.writers.iter().map(|(_, rows)| rows).sum()
    }

    fn check(&mut self) -> Result<()> {
        // Every writer's own checks pass before any commits (a failed one commits nothing).
        for (writer, _) in &mut self.writers {
            writer.check()?;
        }
        Ok(())
    }

    fn commit(
        self: Box<Self>,
        opts: &LoadOptions,
        reporter: &dyn Reporter,
        record: Option<&str>,
        written: u64,
    ) -> Result<Option<Committed>> {
        let mut writers = self.writers;
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
        // Several writers' commits are one window: once the first commits, the others must
        // too, so a stop is refused from before the first on. A single writer marks that point
        // itself, at its last statement that could still roll back (SQLite builds its indexes
        // inside the transaction).
        let resumed = opts.resume.then_some(written);
        into_commit(&opts.interrupt, writers.len() > 1, resumed)?;
        let recorded = match record {
            Some(identity) => record_shares(&mut writers, identity)?,
            None => false,
        };
        reporter.phase(Phase::Commit);
        commit_all(writers, recorded).map(Some)
    }
}

/// Commits every writer's transaction, one after the other: the load's commit window. A
/// failure after the first commit leaves some writers' rows in and others' out, which is said.
/// Each writer's share of the load's record, in its own transaction; whether every one was.
fn record_shares(writers: &mut [(Box<dyn Writer>, u64)], identity: &str) -> Result<bool> {
    let load = crate::commits::run_token();
    let parts = writers.len();
    let mut recorded = true;
    for (i, (writer, rows)) in writers.iter_mut().enumerate() {
        let share = Share {
            identity,
            load: &load,
            part: i + 1,
            parts,
            rows: *rows,
        };
        recorded &= writer.record(&share)?;
    }
    Ok(recorded)
}

fn commit_all(writers: Vec<(Box<dyn Writer>, u64)>, recorded: bool) -> Result<Committed> {
    let mut done = Committed::default();
    let mut fates = Vec::with_capacity(writers.len());
    let mut writers = writers.into_iter();
    for (writer, rows) in writers.by_ref() {
        let fate = match writer.commit() {
            Ok(committed) => {
                done.extend(committed);
                Fate::Committed
            }
            Err(Error::CommitUnknown { reason, ask, .. }) => Fate::Unknown { reason, ask },
            Err(e) => Fate::RolledBack(e),
        };
        let stop = !matches!(fate, Fate::Committed);
        fates.push((fate, rows));
        if stop {
            break;
        }
    }
    // Once one writer did not commit, the others do not either: dropped, they roll back.
    for (writer, rows) in writers {
        drop(writer);
        let why = "not committed: an earlier connection's COMMIT failed";
        fates.push((Fate::RolledBack(Error::Internal(why.into())), rows));
    }
    crate::commits::judge_commits(fates, recorded)?;
    done.recorded = recorded;
    Ok(done)
}

/// Hands every chunk to the writer (or, without one, counts its rows) until the queue closes
/// or the load is cancelled, counting the rows written.
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
        let Some(writer) = writer.as_mut() else {
            *written += chunk.rows;
            continue;
        };
        let write = |writer: &mut Box<dyn Writer>| {
            writer.write(&chunk.data, chunk.rows, &mut |i, reason, column| {
                refuse_row(&chunk, i, reason, column, plan, shared)
            })
        };
        *written += match block {
            None => write(writer)?,
            Some(block) => in_block(writer, block, write)?,
        };
    }
}

/// `--resume`'s commit of one block: its rows and its ledger row (with the rows written) in a
/// transaction of their own, committed before the next block; nothing of it when it fails.
fn in_block<W: Writer + ?Sized>(
    writer: &mut Box<W>,
    block: Block,
    write: impl FnOnce(&mut Box<W>) -> Result<u64>,
) -> Result<u64> {
    writer.begin_block()?;
    let written = write(writer).and_then(|written| {
        writer.commit_block(Block {
            rows: written as i64,
            ..block
        })?;
        Ok(written)
    });
    if written.is_err() {
        writer.roll_back_block();
    }
    written
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
