//! PostgreSQL as a [`Target`] of inrush's one pipeline (`inrush_load::load_into`): the table
//! read and claimed (`table`), the plan and the COPY statements decided (`decide`), what the
//! plan drops journaled and put back (`definitions`), the rows streamed by M COPY sessions
//! beside a control session and committed together (`streams`), and the statistics taken
//! after (`maintain`).
//!
//! ```text
//! inputs ─▶ reader threads ─▶ [blocks: bounded] ─▶ N worker threads ─▶ [chunks: bounded] ─▶ M COPY sinks
//!          (one source each at a                   (parse, check, encode)                  (one transaction each)
//!           time; quote-aware cuts)
//! ```
//!
//! Commit policy: every connection loads inside its own transaction; only when every COPY has
//! finished without error are the transactions committed, together. A failure anywhere before
//! that rolls everything back: nothing of a failed load is visible. The remaining window is the
//! commit itself (milliseconds): if the server or network fails between the first and the last
//! COMMIT, some connections' rows are committed and others' are not; inrush reports exactly that
//! as `inrush_load::Error::PartialCommit` and exits with a distinct code.

mod adapt;
mod blocks;
mod cancel;
mod claim;
mod create;
mod decide;
pub(crate) use decide::decide_plan;
mod definitions;
mod maintain;
mod retry;
mod rows;
mod sink;
mod staging;
mod streams;
mod table;
mod waits;
pub(crate) use waits::Waits;
mod watch;

pub use definitions::{recover, Recovered};

use crate::copy::CopyFormat;
use crate::ledger::{Book, InputIdentity};
use crate::route::{Router, ShardServer};
use crate::{ConnectOptions, SessionInfo, TableInfo};
use claim::Claim;
use inrush_core::ledger::{Committed as Block, InputFile, LoadStatus};
use inrush_core::{Reporter, SqlType, TargetColumn};
use inrush_load::commits::EarlierLoad;
use inrush_load::sources::Sources;
use inrush_load::summary::Parallelism;
use inrush_load::support::{Feature, Support};
pub(crate) use inrush_load::target::runtime;
use inrush_load::target::{self, Committed, Encoding, Streams, Target};
use inrush_load::{Error, LoadOptions, LoadPlan, LoadSummary, PartitionRouting, Result};
use sink::Destination;
use staging::Staging;
use std::sync::{Mutex, MutexGuard};
use tokio::runtime::Runtime;
use tokio_postgres::Client;

/// Loads `opts`' inputs into `opts.table` of `target`; all or nothing (see the module
/// documentation).
pub fn run(
    target: &ConnectOptions,
    opts: &LoadOptions,
    reporter: &dyn Reporter,
) -> Result<LoadSummary> {
    inrush_load::load_into(&PostgresTarget::new(target.clone())?, opts, reporter)
}

/// A PostgreSQL database as a target. What one load learns and holds (its sessions, the claim,
/// the plan's statements, what it dropped) lives in `load` from `prepare` to the end.
pub struct PostgresTarget {
    options: ConnectOptions,
    /// One thread for every session's I/O: the CPU work is in the pipeline's workers.
    runtime: Runtime,
    waits: waits::Waits,
    load: Mutex<Option<Load>>,
}

/// One load's sessions and decisions.
struct Load {
    /// The options every session of the load connects with (`--datestyle` set).
    target: ConnectOptions,
    /// Reads the catalog, holds the claim, drops and puts back definitions, commits.
    control: Client,
    session: SessionInfo,
    table: TableInfo,
    claim: Claim,
    /// `--create`: the table's DDL, run first by the load's transaction.
    create_sql: Option<String>,
    /// `--resume`: the input as the ledger knows it.
    identity: Option<InputIdentity>,
    format: CopyFormat,
    /// Why the load goes as text COPY.
    text_reason: Option<String>,
    staging: Option<Staging>,
    /// `--stage`: the part's own table the rows go to (see `crate::prepared`).
    part_table: Option<String>,
    /// `COPY ... FROM STDIN` per destination (the table, or each leaf partition the rows are
    /// routed to on the client), and what each COPY transaction runs before it.
    destinations: Vec<Destination>,
    prelude: Vec<String>,
    /// The rows' partitions found on the client: the router, taken by the workers.
    router: Option<Router>,
    whole_blocks: bool,
    /// The foreign servers of a load routed to foreign partitions, connected, and what the
    /// plan takes off each remote table.
    shards: Vec<ShardServer>,
    shard_plans: Vec<decide::ShardPlan>,
    /// `--resume` onto foreign servers: where each shard records the blocks it committed.
    shard_book: Option<Book>,
    /// How many connections stream, and how that was chosen.
    parallelism: Parallelism,
    /// Rows reach the sinks in the input's order (one reader, the order stage).
    ordered: bool,
    dropped: definitions::Dropped,
    /// The committed transactions' ids: their rows carry them as `xmin` (see
    /// `definitions::undo`).
    txids: Vec<i64>,
    notes: Vec<String>,
}

impl PostgresTarget {
    pub fn new(options: ConnectOptions) -> Result<PostgresTarget> {
        Ok(PostgresTarget {
            options,
            runtime: runtime()?,
            waits: waits::Waits::default(),
            load: Mutex::new(None),
        })
    }

    /// The load `prepare` opened.
    fn load(&self) -> Result<MutexGuard<'_, Option<Load>>> {
        self.load
            .lock()
            .map_err(|_| Error::Internal("the load's state was poisoned".into()))
    }

    /// What `f` reads of the load, if one is open (and its state not poisoned).
    fn peek<T>(&self, f: impl FnOnce(&Load) -> T) -> Option<T> {
        self.load.lock().ok()?.as_ref().map(f)
    }

    /// Runs `f` on the load `prepare` opened.
    fn with<T>(&self, f: impl FnOnce(&mut Load) -> Result<T>) -> Result<T> {
        match self.load()?.as_mut() {
            Some(load) => f(load),
            None => Err(Error::Internal(
                "the PostgreSQL load was not prepared".into(),
            )),
        }
    }
}

/// PostgreSQL carries out every option but SQLite's own.
pub const SUPPORT: Support = Support {
    engine: "PostgreSQL",
    carries: &[
        Feature::Text,
        Feature::DateStyle,
        Feature::DisableTriggers,
        Feature::Route,
        Feature::Prepare,
        Feature::Stage,
    ],
    instead: &[(
        Feature::FastUnsafe,
        "for SQLite targets only (PostgreSQL's own trade of safety for speed is an UNLOGGED table, which inrush leaves to you)",
    )],
};

impl Target for PostgresTarget {
    fn version(&self) -> String {
        self.peek(|l| l.session.server_version.clone())
            .unwrap_or_default()
    }

    fn method(&self) -> &'static str {
        match self.peek(|l| l.format).unwrap_or(CopyFormat::Binary) {
            CopyFormat::Binary => "binary COPY",
            CopyFormat::Text => "text COPY",
        }
    }

    fn supports(&self) -> &'static Support {
        &SUPPORT
    }

    fn beside(
        &self,
        opts: &LoadOptions,
        reporter: &dyn Reporter,
        load: &mut dyn FnMut() -> Result<LoadSummary>,
    ) -> Result<LoadSummary> {
        let options = self.options.with_network_timeout(opts.network_timeout);
        let loaded = self.waits.around(&options, reporter, load);
        inrush_load::pulse::explained(loaded, "PostgreSQL", self.options.cut_because())
    }

    fn prepare(
        &self,
        opts: &LoadOptions,
        create: Option<&[(String, SqlType)]>,
    ) -> Result<target::Table> {
        let load = table::open(&self.options, opts, create, &self.runtime, &self.waits)?;
        let described = target::Table {
            name: load.table.qualified(),
            columns: load.table.target_columns(),
            bytes: None,
            create_note: load.create_sql.as_ref().map(|sql| {
                let frozen = decide::frozen(opts, &load.table);
                format!(
                    "--create: {sql}, in the load's own transaction{}",
                    match frozen {
                        true => " (rows written frozen: COPY FREEZE)",
                        false => "",
                    }
                )
            }),
            create_sql: load.create_sql.clone(),
            // --truncate of a referenced table is refused by `table::open` already.
            changed_by_delete: Vec::new(),
        };
        *self.load()? = Some(load);
        Ok(described)
    }

    fn ledger(&self, _: &target::Table, input: &InputFile) -> Result<Vec<Block>> {
        self.with(|load| {
            let identity = InputIdentity::new(load.table.oid, input.clone());
            let committed = self
                .runtime
                .block_on(crate::ledger::open(&load.control, &identity))?;
            load.identity = Some(identity);
            Ok(committed)
        })
    }

    fn plan(
        &self,
        _: &target::Table,
        columns: &[TargetColumn],
        opts: &LoadOptions,
        load_bytes: Option<u64>,
    ) -> Result<LoadPlan> {
        self.with(|load| decide::decide(load, columns, opts, load_bytes, &self.runtime))
    }

    fn encoding(&self, _: &target::Table, columns: &[TargetColumn]) -> Result<Encoding> {
        self.with(|load| decide::encoding(load, columns))
    }

    fn query_note(
        &self,
        sources: &Sources,
        types: &[(String, SqlType)],
        columns: &[TargetColumn],
        opts: &LoadOptions,
    ) -> Option<String> {
        self.peek(|l| {
            let staged = l.staging.is_some();
            let columns = l.table.described(columns)?;
            Some(decide::passthrough(
                sources, types, &columns, l.format, opts, staged,
            ))
        })
        .flatten()
    }

    fn slower_because(&self) -> Option<String> {
        self.peek(|l| l.text_reason.clone()).flatten()
    }

    fn ordered(&self, opts: &LoadOptions) -> bool {
        self.peek(|l| l.ordered).unwrap_or(opts.max_errors > 0)
    }

    fn begin(&self, _: &target::Table, plan: &LoadPlan, opts: &LoadOptions) -> Result<bool> {
        self.with(|load| definitions::drop(load, plan, opts, &self.runtime))
    }

    fn open(
        &self,
        _: &target::Table,
        _: &[TargetColumn],
        _: &LoadPlan,
        opts: &LoadOptions,
        _: Option<&InputFile>,
    ) -> Result<Box<dyn Streams + '_>> {
        let load = self.load()?.take();
        let load =
            load.ok_or_else(|| Error::Internal("the PostgreSQL load was not prepared".into()))?;
        Ok(Box::new(streams::PgStreams::open(self, load, opts)?))
    }

    fn end(
        &self,
        _: &target::Table,
        plan: &LoadPlan,
        opts: &LoadOptions,
        committed: bool,
        reporter: &dyn Reporter,
    ) -> Result<Committed> {
        self.with(|load| {
            if let Some(st) = &load.staging {
                // Gone already after a merge; a failed load leaves it to drop here.
                let _ = self.runtime.block_on(st.drop(&load.control));
            }
            if let (Some(part), false) = (&load.part_table, committed) {
                let dropped = crate::job::drop_tables(&load.control, std::slice::from_ref(part));
                let _ = self.runtime.block_on(dropped);
            }
            let started = std::time::Instant::now();
            let restored = definitions::restore(load, opts, &self.runtime, committed);
            let rebuild_seconds = started.elapsed().as_secs_f64();
            restored?;
            let mut done = Committed {
                rebuild_seconds,
                ..Committed::default()
            };
            if committed && !opts.check_only {
                let started = std::time::Instant::now();
                maintain::maintain(load, plan, opts, &self.runtime, reporter);
                done.maintain_seconds = started.elapsed().as_secs_f64();
            }
            done.notes.append(&mut load.notes);
            Ok(done)
        })
    }

    fn still_dropped(&self, _: &target::Table) -> Vec<String> {
        self.with(|load| Ok(definitions::still_dropped(load, &self.runtime)))
            .unwrap_or_default()
    }

    fn unfinished_loads(&self, _: &target::Table) -> Result<Vec<(String, EarlierLoad)>> {
        self.with(|load| {
            let earlier = crate::commits::unfinished(&load.control, load.table.oid);
            match self.runtime.block_on(earlier) {
                Ok(loads) => Ok(loads),
                // Not readable by this user (another one made it): nothing this load can tell.
                Err(e) => {
                    tracing::warn!("{e}");
                    Ok(Vec::new())
                }
            }
        })
    }

    fn forget_load(&self, _: &target::Table, identity: &str) -> Result<()> {
        self.with(|load| {
            let forgotten = crate::commits::forget(&load.control, load.table.oid, identity);
            Ok(self.runtime.block_on(forgotten)?)
        })
    }
}

/// `inrush plan`: what a load of `input` into `table` would do around the COPY (`resume`: a
/// load with `--resume`), read from the catalog without claiming the table.
pub fn plan(
    target: &ConnectOptions,
    table: &str,
    input: Option<&str>,
    opts: inrush_load::PlanOptions,
    routing: PartitionRouting,
    resume: bool,
) -> Result<LoadPlan> {
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
    let load = LoadOptions {
        resume,
        plan: opts,
        ..LoadOptions::new("", table)
    };
    inrush_load::support::refuse(&SUPPORT, &load)?;
    let opts = inrush_load::PlanOptions {
        keep_keys: load.keeps_keys().or(opts.keep_keys),
        ..opts
    };
    runtime()?.block_on(decide::preview(
        target, table, input_size, opts, routing, resume,
    ))
}

/// `inrush status`: every `--resume` load in the target's ledger (into `table` only, when
/// given), with the blocks processes hold now.
pub fn status(target: &ConnectOptions, table: Option<&str>) -> Result<Vec<LoadStatus>> {
    let runtime = runtime()?;
    Ok(runtime.block_on(async {
        let client = target.connect().await?;
        let oid = match table {
            Some(name) => Some(TableInfo::read(&client, name).await?.oid),
            None => None,
        };
        crate::ledger::status(&client, oid).await
    })?)
}
