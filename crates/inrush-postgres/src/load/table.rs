//! Before anything changes: the control session, the table read (made, for `--create`, in a
//! transaction `decide` rolls back once the plan is read), the claim on it, and what a load
//! that died left dropped put back.

use super::cancel::{cancel_on_interrupt, stopped};
use super::claim::{self, Claim};
use super::{create, Load};
use crate::waits::Waits;
use crate::{ddl, ConnectOptions, SessionInfo, TableInfo};
use inrush_core::SqlType;
use inrush_load::patience::Patience;
use inrush_load::summary::Parallelism;
use inrush_load::{Error, LoadOptions, Result};
use tokio::runtime::Runtime;
use tokio_postgres::Client;

/// Opens the load on `options`' database: its control session (watched by `waits`), the
/// table (designed from `create`'s inferred columns), the claim.
pub(super) fn open(
    options: &ConnectOptions,
    opts: &LoadOptions,
    create: Option<&[(String, SqlType)]>,
    runtime: &Runtime,
    waits: &Waits,
) -> Result<Load> {
    // --datestyle: every session of the load (control, COPY, the resolver's) reads dates in
    // that order, and the encoders learn it from the control session's DateStyle.
    let options = options.with_network_timeout(opts.network_timeout);
    let target = match opts.date_order {
        Some(order) => options.with_setting("DateStyle", &order.date_style()),
        None => options,
    };
    let control = runtime.block_on(target.connect())?;
    waits.add(runtime.block_on(crate::activity::backend_pid(&control))?);
    let _cancel = cancel_on_interrupt(&target, &control, opts);
    let opened = runtime.block_on(async {
        // --create: the table is made in a transaction on the control connection only to read
        // it back (then rolled back); the load makes it again in its own transaction, so COPY
        // FREEZE applies and a failed load leaves no table behind.
        let create_sql = match create {
            Some(columns) => {
                Some(create::table_ddl(&control, &opts.table, columns, &opts.create_types).await?)
            }
            None => None,
        };
        let (session, table, claim) = open_table(&control, &target, opts, &create_sql).await?;
        Ok::<_, Error>((create_sql, session, table, claim))
    });
    let (create_sql, session, table, claim) = opened.map_err(|e| stopped(opts, e))?;
    Ok(fresh(target, control, session, table, claim, create_sql))
}

/// `inrush plan`: the load's table as `open` would find it, read on a session of its own;
/// nothing is claimed, put back or changed.
pub(super) fn inspect(
    options: &ConnectOptions,
    opts: &LoadOptions,
    runtime: &Runtime,
) -> Result<Load> {
    let target = options.with_network_timeout(opts.network_timeout);
    let control = runtime.block_on(target.connect())?;
    let (session, table) = runtime.block_on(async {
        let session = SessionInfo::read(&control).await?;
        let table = TableInfo::read(&control, &opts.table).await?;
        Ok::<_, Error>((session, table))
    })?;
    Ok(fresh(target, control, session, table, Claim::Alone, None))
}

/// A load that has decided nothing yet.
fn fresh(
    target: ConnectOptions,
    control: Client,
    session: SessionInfo,
    table: TableInfo,
    claim: Claim,
    create_sql: Option<String>,
) -> Load {
    Load {
        target,
        control,
        session,
        table,
        claim,
        create_sql,
        identity: None,
        format: crate::copy::CopyFormat::Binary,
        text_reason: None,
        staging: None,
        part_table: None,
        destinations: Vec::new(),
        prelude: Vec::new(),
        router: None,
        whole_blocks: false,
        shards: Vec::new(),
        shard_plans: Vec::new(),
        shard_book: None,
        parallelism: Parallelism::fixed(1, ""),
        ordered: false,
        dropped: Default::default(),
        txids: Vec::new(),
        notes: Vec::new(),
    }
}

/// Reads the table (made first, for `--create`, in a transaction the caller rolls back), takes
/// the claim on it, and puts back what a load that died left dropped.
async fn open_table(
    control: &Client,
    target: &ConnectOptions,
    opts: &LoadOptions,
    create_sql: &Option<String>,
) -> Result<(SessionInfo, TableInfo, Claim)> {
    let session = SessionInfo::read(control).await?;
    if let Some(sql) = &create_sql {
        control
            .batch_execute(&format!("BEGIN; {sql}"))
            .await
            .map_err(crate::query_error(sql.as_str()))?;
    }
    let table = TableInfo::read(control, &opts.table).await?;
    if opts.truncate && create_sql.is_none() {
        let keys = table.referenced_by(control).await?;
        if !keys.is_empty() {
            return Err(Error::Usage(format!(
                "--truncate: the server does not TRUNCATE {} while other tables' foreign keys reference it: {}; load without --truncate",
                table.qualified(),
                keys.join(", ")
            )));
        }
    }
    // A new table is this load's alone; another table's definitions may be another load's.
    let claim = match create_sql {
        Some(_) => Claim::Alone,
        None => {
            let must_be_alone = opts.truncate || opts.table_lock || opts.plan.disable_triggers;
            claim::take(
                control,
                table.oid,
                &table.qualified(),
                must_be_alone,
                target,
                opts,
            )
            .await?
        }
    };
    // Definitions a load that died left in the journal come back before anything else
    // (a live load's are its own business).
    let leftovers = match (&create_sql, claim) {
        (None, Claim::Alone) => ddl::pending(control, Some(table.oid)).await?,
        _ => Vec::new(),
    };
    if !leftovers.is_empty() {
        tracing::warn!(
            "recreating {} index(es) an earlier load of {} left dropped",
            leftovers.len(),
            table.qualified()
        );
        let patience = Patience::new(Some(&opts.interrupt), &inrush_core::Silent);
        ddl::restore(target, &leftovers, opts.connections.max(1), &patience).await?;
    }
    Ok((session, table, claim))
}
