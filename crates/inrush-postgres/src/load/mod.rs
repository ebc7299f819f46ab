//! inrush's PostgreSQL load: the pipeline's stages (`inrush_load::stages`) feeding M COPY
//! streams, with everything said around them (the plan's DDL, the journal, the ledger, the
//! staging table of `--on-conflict`, the commit).
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
mod claim;
mod create;
mod definitions;
mod maintain;
mod prepare;
mod retry;
mod sink;
mod staging;
mod stream;
mod waits;
mod watch;

pub use definitions::{recover, Recovered};

use crate::{ConnectOptions, TableInfo};
use inrush_core::ledger::LoadStatus;
use inrush_core::{Phase, Reporter};
use inrush_load::summary::Phases;
use inrush_load::{Error, LoadOptions, LoadPlan, LoadSummary, PartitionRouting, Result};
use std::time::Instant;

/// Loads `opts`' inputs into `opts.table` of `target`; all or nothing (see the module
/// documentation). Each stage is a module: `prepare` reads and decides, `definitions` drops
/// what the plan rebuilds, `stream` loads and commits the rows, `definitions` puts back what
/// was dropped, `maintain` takes statistics.
pub fn run(
    target: &ConnectOptions,
    opts: &LoadOptions,
    reporter: &dyn Reporter,
) -> Result<LoadSummary> {
    let started = Instant::now();
    reporter.phase(Phase::Inspect);
    opts.validate()?;
    inrush_load::support::refuse(LACKS, opts)?;
    // --datestyle: every session of the load (control, COPY, the resolver's) reads dates in
    // that order, and the encoders learn it from the control session's DateStyle.
    let dated;
    let target = match opts.date_order {
        Some(order) => {
            dated = target.with_setting("DateStyle", &order.date_style());
            &dated
        }
        None => target,
    };
    waits::Waits::around(target, reporter, |waits| {
        load(target, opts, reporter, started, waits)
    })
}

/// [`run`] once its options are checked, with `waits` told the load's sessions.
fn load(
    target: &ConnectOptions,
    opts: &LoadOptions,
    reporter: &dyn Reporter,
    started: Instant,
    waits: &waits::Waits,
) -> Result<LoadSummary> {
    let runtime = runtime()?;
    // A stop during the inspection cancels its statement (see `prepare`): that error is the stop.
    let mut load = prepare::prepare(target, opts, &runtime, waits).map_err(|e| {
        match opts.interrupt.cancels() {
            true => Error::Interrupted,
            false => e,
        }
    })?;
    if let Some(summary) = already_loaded(&load, opts, &runtime, started)? {
        return Ok(summary);
    }
    let inspected = Instant::now();
    let dropped = definitions::drop(&mut load, target, opts, &runtime)?;
    let dropped_at = Instant::now();
    // Kept with the commit, so that a rerun after a failure past it loads nothing.
    let record = inrush_load::commits::to_record(opts, &load.sources, dropped.on_target());
    let streamed = stream::stream(
        &mut load,
        target,
        opts,
        &runtime,
        reporter,
        started,
        waits,
        record.as_deref(),
    );
    if let Some(st) = &load.staging {
        // Gone already after a merge; a failed load leaves it to drop here.
        let _ = runtime.block_on(st.drop(&load.control));
    }
    // Whatever happened to the load, dropped indexes are recreated now.
    let loaded_at = Instant::now();
    let mut summary = definitions::restore(
        streamed,
        &load,
        &dropped,
        target,
        opts,
        &runtime,
        reporter,
        record.as_deref(),
    )?;
    opts.interrupt.dropped(false);
    let rebuilt_at = Instant::now();
    if summary.loaded {
        maintain::maintain(&mut load, target, opts, &runtime, reporter);
    }
    summary.phases = Phases {
        inspect: (inspected - started).as_secs_f64(),
        drop_indexes: (dropped_at - inspected).as_secs_f64(),
        load: (loaded_at - dropped_at).as_secs_f64(),
        rebuild_indexes: (rebuilt_at - loaded_at).as_secs_f64(),
        maintain: rebuilt_at.elapsed().as_secs_f64(),
    };
    reporter.phase(Phase::Done);
    summary.seconds = started.elapsed().as_secs_f64();
    summary.rows_per_second = summary.rows as f64 / summary.seconds.max(1e-9);
    summary.megabytes_per_second = summary.bytes as f64 / 1e6 / summary.seconds.max(1e-9);
    summary.load_rows_per_second = summary.rows as f64 / summary.phases.load.max(1e-9);
    summary.load_megabytes_per_second = summary.bytes as f64 / 1e6 / summary.phases.load.max(1e-9);
    load.notes.append(&mut summary.notes);
    summary.notes = load.notes;
    Ok(summary)
}

/// A rerun of a load that committed and could not finish (see [`inrush_load::commits`]): its
/// summary, the rows being in the table already; `prepare` has put back what it left dropped.
fn already_loaded(
    load: &prepare::Prepared,
    opts: &LoadOptions,
    runtime: &tokio::runtime::Runtime,
    started: Instant,
) -> Result<Option<LoadSummary>> {
    if opts.check_only || opts.resume {
        return Ok(None);
    }
    let identity = || inrush_load::commits::identity(&load.sources);
    let earlier = runtime.block_on(crate::commits::earlier(
        &load.control,
        load.table.oid,
        identity,
    ));
    let (id, earlier) = match earlier {
        Ok(Some(found)) => found,
        Ok(None) => return Ok(None),
        // Not readable by this user (another one made it): nothing this load can tell.
        Err(e) => {
            tracing::warn!("{e}");
            return Ok(None);
        }
    };
    let Some(note) = inrush_load::commits::judge(&earlier, &load.table.qualified())? else {
        return Ok(None);
    };
    runtime.block_on(crate::commits::consume(&load.control, id))?;
    Ok(Some(LoadSummary::nothing_loaded(
        load.input_name.clone(),
        load.table.qualified(),
        load.session.server_version.clone(),
        load.plan.clone(),
        started.elapsed().as_secs_f64(),
        note,
    )))
}

/// The async runtime for the connections: one thread, since the CPU work is in the workers.
fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::Internal(format!("starting the async runtime: {e}")))
}

/// `inrush plan`: what a load of `input` into `table` would do around the COPY (`resume`: a
/// load with `--resume`).
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
    inrush_load::support::refuse(LACKS, &load)?;
    let opts = inrush_load::PlanOptions {
        keep_keys: load.keeps_keys().or(opts.keep_keys),
        ..opts
    };
    let runtime = runtime()?;
    Ok(runtime.block_on(async {
        let client = target.connect().await?;
        let table = TableInfo::read(&client, table).await?;
        let mut plan =
            prepare::decide_plan(&client, &table, input_size, opts, false, false).await?;
        // As if the input fed every column, in binary, with nothing that keeps its order.
        plan.choose_sort(&table.columns, None);
        let blocked = match routing {
            PartitionRouting::Server => Some("--route server"),
            _ if plan.sort.is_some() => Some("the rows are sorted by a kept index's key first"),
            PartitionRouting::Auto | PartitionRouting::Client => None,
        };
        let columns = &table.columns;
        let (routed, routing) = prepare::routing(
            &client, &table, columns, blocked, target, false, routing, resume,
        )
        .await?;
        plan.routing = routing;
        if let (Some(routed), Some(sentence)) = (routed, plan.routing.as_mut()) {
            for shard_plan in prepare::shard_plans(&routed.shards, input_size, opts).await? {
                if !shard_plan.rebuilt.is_empty() {
                    sentence.push_str(&format!(
                        "; on foreign server {}: {}",
                        routed.shards[shard_plan.shard].shard.server,
                        shard_plan.describe()
                    ));
                }
            }
        }
        Ok::<_, crate::Error>(plan)
    })?)
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

/// Options PostgreSQL has no use for.
pub const LACKS: inrush_load::support::Lacks = &[(
    inrush_load::support::Feature::FastUnsafe,
    "for SQLite targets only (PostgreSQL's own trade of safety for speed is an UNLOGGED table, which inrush leaves to you)",
)];
