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
mod definitions;
mod maintain;
mod retry;
mod rows;
mod sink;
mod staging;
mod streams;
mod table;
mod watch;

pub use definitions::{recover, Recovered};

use crate::copy::CopyFormat;
use crate::ledger::{Book, InputIdentity};
use crate::route::{Router, ShardServer};
use crate::waits;
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
use inrush_load::{LoadOptions, LoadPlan, LoadSummary, Result};
use sink::Destination;
use staging::Staging;
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

/// A PostgreSQL database as a target.
pub struct PostgresTarget {
    options: ConnectOptions,
    /// One thread for every session's I/O: the CPU work is in the pipeline's workers.
    runtime: Runtime,
    waits: waits::Waits,
}

/// One load into a PostgreSQL table: what it learns and holds (its sessions, the claim, the
/// plan's statements, what it dropped), from `prepare` to its end.
struct PgLoad<'t> {
    target: &'t PostgresTarget,
    load: Load,
    described: target::Table,
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
    part_table: Option<crate::parts::PartTable>,
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
        })
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
    ) -> Result<Box<dyn target::Load + '_>> {
        let load = table::open(&self.options, opts, create, &self.runtime, &self.waits)?;
        Ok(Box::new(PgLoad::new(self, load, opts)))
    }

    fn inspect(&self, opts: &LoadOptions) -> Result<Box<dyn target::Load + '_>> {
        let load = table::inspect(&self.options, opts, &self.runtime)?;
        Ok(Box::new(PgLoad::new(self, load, opts)))
    }
}

impl PgLoad<'_> {
    fn new<'t>(target: &'t PostgresTarget, load: Load, opts: &LoadOptions) -> PgLoad<'t> {
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
        PgLoad {
            target,
            load,
            described,
        }
    }
}

impl target::Load for PgLoad<'_> {
    fn table(&self) -> &target::Table {
        &self.described
    }

    fn version(&self) -> String {
        self.load.session.server_version.clone()
    }

    fn method(&self) -> &'static str {
        match self.load.format {
            CopyFormat::Binary => "binary COPY",
            CopyFormat::Text => "text COPY",
        }
    }

    fn ledger(&mut self, input: &InputFile) -> Result<Vec<Block>> {
        let load = &mut self.load;
        let identity = InputIdentity::new(load.table.oid, input.clone());
        let opened = crate::ledger::open(&load.control, &identity);
        let committed = self.target.runtime.block_on(opened)?;
        load.identity = Some(identity);
        Ok(committed)
    }

    fn plan(
        &mut self,
        columns: &[TargetColumn],
        opts: &LoadOptions,
        load_bytes: Option<u64>,
    ) -> Result<LoadPlan> {
        decide::decide(
            &mut self.load,
            columns,
            opts,
            load_bytes,
            &self.target.runtime,
        )
    }

    fn encoding(&mut self, columns: &[TargetColumn]) -> Result<Encoding> {
        decide::encoding(&mut self.load, columns)
    }

    fn query_note(
        &self,
        sources: &Sources,
        types: &[(String, SqlType)],
        columns: &[TargetColumn],
        opts: &LoadOptions,
    ) -> Option<String> {
        let l = &self.load;
        let staged = l.staging.is_some();
        let columns = l.table.described(columns)?;
        Some(decide::passthrough(
            sources, types, &columns, l.format, opts, staged,
        ))
    }

    fn slower_because(&self) -> Option<String> {
        self.load.text_reason.clone()
    }

    fn ordered(&self, _: &LoadOptions) -> bool {
        self.load.ordered
    }

    fn begin(&mut self, plan: &mut LoadPlan, opts: &LoadOptions) -> Result<bool> {
        let (load, runtime) = (&mut self.load, &self.target.runtime);
        {
            let _cancel = cancel::cancel_on_interrupt(&load.target, &load.control, opts);
            let arranged = runtime.block_on(decide::arrange(load));
            arranged.map_err(|e| cancel::stopped(opts, e))?;
        }
        match opts.check_only {
            true => Ok(false),
            false => definitions::drop(load, plan, opts, runtime),
        }
    }

    fn open(
        &mut self,
        _: &[TargetColumn],
        _: &LoadPlan,
        opts: &LoadOptions,
        _: Option<&InputFile>,
    ) -> Result<Box<dyn Streams + '_>> {
        let streams = streams::PgStreams::open(self.target, &mut self.load, opts)?;
        Ok(Box::new(streams))
    }

    fn end(
        &mut self,
        plan: &LoadPlan,
        opts: &LoadOptions,
        committed: bool,
        reporter: &dyn Reporter,
    ) -> Result<Committed> {
        let (load, runtime) = (&mut self.load, &self.target.runtime);
        if let Some(st) = &load.staging {
            // Gone already after a merge; a failed load leaves it to drop here.
            let _ = runtime.block_on(st.drop(&load.control));
        }
        if let (Some(part), false) = (&load.part_table, committed) {
            let dropped =
                crate::parts::drop_tables(&load.control, std::slice::from_ref(&part.name));
            let _ = runtime.block_on(dropped);
        }
        let started = std::time::Instant::now();
        let restored = definitions::restore(load, opts, runtime, committed, reporter);
        let rebuild_seconds = started.elapsed().as_secs_f64();
        restored?;
        let mut done = Committed {
            rebuild_seconds,
            ..Committed::default()
        };
        if committed && !opts.check_only {
            let started = std::time::Instant::now();
            maintain::maintain(load, plan, opts, runtime, reporter);
            done.maintain_seconds = started.elapsed().as_secs_f64();
        }
        done.notes.append(&mut load.notes);
        Ok(done)
    }

    fn still_dropped(&mut self) -> Vec<String> {
        definitions::still_dropped(&self.load, &self.target.runtime)
    }

    fn unfinished_loads(&mut self) -> Result<Vec<(String, EarlierLoad)>> {
        let load = &self.load;
        let earlier = crate::commits::unfinished(&load.control, load.table.oid);
        match self.target.runtime.block_on(earlier) {
            Ok(loads) => Ok(loads),
            // Not readable by this user (another one made it): nothing this load can tell.
            Err(e) => {
                tracing::warn!("{e}");
                Ok(Vec::new())
            }
        }
    }

    fn forget_load(&mut self, identity: &str) -> Result<()> {
        let load = &self.load;
        let forgotten = crate::commits::forget(&load.control, load.table.oid, identity);
        Ok(self.target.runtime.block_on(forgotten)?)
    }
}

/// `inrush plan`: what a load with `opts` of `input` (its size decides) would do, decided as
/// the load decides it, with nothing claimed or changed.
pub fn plan(target: &ConnectOptions, opts: &LoadOptions, input: Option<&str>) -> Result<LoadPlan> {
    inrush_load::plan_into(&PostgresTarget::new(target.clone())?, opts, input)
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
