//! The plan, once the table is read and the input's columns mapped: COPY's format, the
//! staging table of `--on-conflict`, the statements each COPY transaction runs, what the plan
//! drops, how the rows find their partitions (and foreign servers), and how many connections.

use super::rows::CopyRows;
use super::sink::Destination;
use super::staging::Staging;
use super::Load;
use crate::copy::{copy_from_stdin, CopyFormat};
use crate::ledger::Book;
use crate::parts::PartTable;
use crate::plan::decide_plan;
use crate::route::{self, Router, Routing, ShardServer};
use crate::{activity, ddl, ConnectOptions, PgColumn, TableInfo};
use inrush_core::{SqlType, TargetColumn};
use inrush_encode::{DateOrder, EncodeContext, ScalarType, ValueType};
use inrush_load::sources::Sources;
use inrush_load::summary::Parallelism;
use inrush_load::target::Encoding;
use inrush_load::{Error, LoadOptions, LoadPlan, OnConflict, PartitionRouting, Result};
use inrush_read::jsonl::ColumnForm;
use tokio::runtime::Runtime;
use tokio_postgres::Client;

/// COPY FREEZE needs the table made or emptied in the same subtransaction: not under the
/// savepoints --max-errors loads each chunk in, nor on a partitioned table, which the server
/// refuses to freeze.
pub(super) fn frozen(opts: &LoadOptions, table: &TableInfo) -> bool {
    (opts.truncate || opts.create) && opts.max_errors == 0 && !table.partitioned
}

/// Decides the load into `columns` (the ones the input feeds, in its order) of `load_bytes`
/// of input: its plan, and in `load` how its rows go.
pub(super) fn decide(
    load: &mut Load,
    columns: &[TargetColumn],
    opts: &LoadOptions,
    load_bytes: Option<u64>,
    runtime: &Runtime,
) -> Result<LoadPlan> {
    let _cancel = super::cancel::cancel_on_interrupt(&load.target, &load.control, opts);
    runtime
        .block_on(decide_load(load, columns, opts, load_bytes))
        .map_err(|e| super::cancel::stopped(opts, e))
}

async fn decide_load(
    load: &mut Load,
    columns: &[TargetColumn],
    opts: &LoadOptions,
    input_size: Option<u64>,
) -> Result<LoadPlan> {
    let described = described(&load.table, columns)?;
    let (format, text_reason) = copy_format(opts, &described);
    load.format = format;
    load.text_reason = text_reason;
    // --on-conflict skip|update: the connections COPY into an unlogged staging table (their
    // commits touch only it), then one transaction merges it into the table and drops it.
    if opts.on_conflict != OnConflict::Error {
        load.staging =
            Some(Staging::decide(&load.control, &load.table, columns, opts.on_conflict).await?);
    }
    let mut copy_columns: Vec<String> = columns.iter().map(|c| c.name.clone()).collect();
    if load.staging.is_some() {
        copy_columns.push(Staging::ORDINAL.into());
    }
    let frozen = frozen(opts, &load.table);
    if let Some(part) = opts.prepare.as_ref().filter(|p| p.staged) {
        load.part_table = Some(PartTable::new(&load.table, columns, part));
    }
    let into = match (&load.staging, &load.part_table) {
        (Some(st), _) => st.name.clone(),
        (None, Some(part)) => part.name.clone(),
        (None, None) => load.table.qualified(),
    };
    let statement = copy_from_stdin(&into, &copy_columns, format, frozen);
    load.prelude = prelude(opts, &load.create_sql, &load.table);
    let plan_options = inrush_load::PlanOptions {
        keep_keys: opts.keeps_keys(),
        // Other loads of the table run beside this one: it changes no definition.
        rebuild_indexes: opts.plan.rebuild_indexes && load.claim == super::Claim::Alone,
        ..opts.plan
    };
    let emptied = opts.truncate || opts.create;
    let table = &load.table;
    let mut plan = decide_plan(
        &load.control,
        table,
        input_size,
        plan_options,
        emptied,
        frozen,
    )
    .await?;
    if load.claim == super::Claim::Shared {
        plan.rule = format!(
            "indexes and keys are kept: another inrush load of {} was running when this one started, and only a load that runs alone changes them",
            table.qualified()
        );
    }
    if load.create_sql.is_some() {
        load.control
            .batch_execute("ROLLBACK")
            .await
            .map_err(crate::query_error("ROLLBACK"))?;
    }
    // --check: the rows go in inside the sink's transaction, rolled back at the end, with
    // every definition in place (--disable-triggers: disabled in that transaction only).
    if opts.check_only {
        let disabled = plan.disabled_triggers();
        load.prelude.extend(disabled.iter().map(|(name, _)| {
            format!(
                "ALTER TABLE {} DISABLE TRIGGER {}",
                table.qualified(),
                crate::quote_ident(name)
            )
        }));
    } else {
        let blocked = if opts.max_errors > 0 {
            Some("--max-errors finds refused rows by their place in the input")
        } else if opts.resume {
            Some("--resume commits the input block by block, in order")
        } else if load.staging.is_some() {
            Some("--on-conflict keeps the input's order")
        } else if format == CopyFormat::Text {
            Some("text COPY (a column with no binary encoder)")
        } else {
            None
        };
        plan.choose_sort(columns, |at| sortable(&described[at]), blocked);
    }
    let staged = load.staging.is_some() || load.part_table.is_some();
    let blocked = routing_blocked(opts, format, staged, &plan);
    let (routed, routing) = routing(
        &load.control,
        table,
        columns,
        blocked,
        &load.target,
        opts.truncate,
        opts.routing,
        opts.resume,
    )
    .await?;
    plan.routing = routing;
    if let (Some(_), Some(_)) = (
        &opts.prepare,
        routed.as_ref().filter(|r| !r.shards.is_empty()),
    ) {
        return Err(Error::Usage(format!(
            "--prepare: {} has foreign partitions, whose own two-phase commit a task of a distributed write cannot join",
            table.qualified()
        )));
    }
    load.destinations = match routed {
        Some(Routed { router, shards }) => {
            // --truncate empties every leaf in the load's own transaction: each leaf can then
            // be written frozen, which COPY into the partitioned table cannot do.
            let frozen_leaves = opts.truncate && opts.max_errors == 0;
            plan = plan.loaded_frozen(frozen_leaves);
            let destinations = leaf_destinations(&router, &copy_columns, format, frozen_leaves);
            load.router = Some(router);
            load.whole_blocks = opts.resume;
            load.shards = shards;
            destinations
        }
        None => vec![Destination {
            statement,
            server: 0,
        }],
    };
    if !opts.check_only {
        load.shard_plans = shard_plans(&load.shards, input_size, plan_options).await?;
        if let Some(sentence) = plan.routing.as_mut() {
            for shard_plan in load.shard_plans.iter().filter(|p| !p.rebuilt.is_empty()) {
                sentence.push_str(&format!(
                    "; on foreign server {}: {}",
                    load.shards[shard_plan.shard].shard.server,
                    shard_plan.describe()
                ));
            }
        }
    }
    let keys_checked =
        plan.checks_keys_during_load() || load.shard_plans.iter().any(|p| p.checks_keys);
    let to_shards = !load.shards.is_empty();
    load.parallelism = connections(&load.control, opts, keys_checked, to_shards).await?;
    load.ordered = opts.max_errors > 0 && load.parallelism.opened == 1;
    Ok(plan)
}

/// Each leaf's COPY: into its remote table on its own server for a foreign leaf, else into
/// the leaf.
fn leaf_destinations(
    router: &Router,
    copy_columns: &[String],
    format: CopyFormat,
    frozen: bool,
) -> Vec<Destination> {
    router
        .leaves
        .iter()
        .map(|leaf| match &leaf.remote {
            Some(remote) => Destination {
                statement: copy_from_stdin(&remote.qualified, &remote.columns, format, false),
                server: remote.shard + 1,
            },
            None => Destination {
                statement: copy_from_stdin(&leaf.qualified, copy_columns, format, frozen),
                server: 0,
            },
        })
        .collect()
}

/// How the workers encode the rows: binary (or text) COPY tuples, the values no binary encoder
/// takes read by the server through a resolver of its own, each row's place in the input for
/// the staging table, and the router.
pub(super) fn encoding(load: &mut Load, columns: &[TargetColumn]) -> Result<Encoding> {
    let columns = described(&load.table, columns)?;
    let json = columns.iter().map(|c| json_form(&c.value_type)).collect();
    let session = &load.session;
    Ok(Encoding {
        rows: Box::new(CopyRows {
            format: load.format,
            ctx: EncodeContext {
                server_version_num: session.server_version_num,
                session_time_zone_is_utc: session.time_zone_is_utc(),
                date_order: DateOrder::of_date_style(&session.date_style),
            },
            columns,
            relation: load.table.name.clone(),
            ordinal: load.staging.is_some(),
            target: load.target.clone(),
        }),
        route: load
            .router
            .take()
            .map(|r| Box::new(r) as Box<dyn inrush_load::route::Route>),
        whole_blocks: load.whole_blocks,
        json: Some(json),
    })
}

/// `columns` as the load's table describes them.
fn described(table: &TableInfo, columns: &[TargetColumn]) -> Result<Vec<PgColumn>> {
    let not_ours = || {
        Error::Internal(format!(
            "a column mapped is not one of {}",
            table.qualified()
        ))
    };
    table.described(columns).ok_or_else(not_ours)
}

/// How a JSON value goes into a column of this type.
fn json_form(value_type: &ValueType) -> ColumnForm {
    match value_type {
        ValueType::Scalar {
            scalar: ScalarType::Json | ScalarType::Jsonb,
        } => ColumnForm::Json,
        ValueType::Array { .. } => ColumnForm::Array,
        _ => ColumnForm::Plain,
    }
}

/// Whether the column's binary form sorts, and as signed numbers (see [`CopyRows::signed`]).
fn sortable(column: &PgColumn) -> Option<bool> {
    CopyRows::signed(&column.value_type)
}

/// What the decision arranged, made before the rows: the staging table of `--on-conflict`, a
/// staged part's table, and under `--resume` onto foreign servers each one's ledger.
pub(super) async fn arrange(load: &mut Load) -> Result<()> {
    if let Some(staging) = &load.staging {
        staging.make(&load.control).await?;
    }
    if let Some(part) = &load.part_table {
        part.create(&load.control).await?;
    }
    if let (Some(_), false) = (&load.identity, load.shards.is_empty()) {
        let sessions: Vec<&Client> = load.shards.iter().map(|s| &s.control).collect();
        load.shard_book = Some(Book::open_shard(&load.control, &sessions).await?);
    }
    Ok(())
}

/// How many connections the load opens, and how many of them stream at first. One transaction
/// per connection: a load that must be one transaction has one. Else `--connections N` fixes
/// N; by default the load starts with `opts.connections` and chooses during the load among up
/// to twice that (see `adapt`), as far as the server has slots to spare: one is left for the
/// resolver's connection, and others' sessions may come and go.
async fn connections(
    control: &Client,
    opts: &LoadOptions,
    keys_checked: bool,
    to_shards: bool,
) -> crate::Result<Parallelism> {
    if opts.check_only {
        return Ok(Parallelism::fixed(
            1,
            "--check: one connection, whose transaction is rolled back at the end",
        ));
    }
    if opts.truncate || opts.table_lock || opts.create {
        return Ok(Parallelism::fixed(
            1,
            "one transaction (--truncate, --table-lock or --create), so one connection",
        ));
    }
    // With rejects allowed, the server refuses the second occurrence of a key: which one that
    // is must not depend on which connection got there first, and two connections holding the
    // same key would wait on each other. One connection then, fed in the input's order.
    if opts.max_errors > 0 && keys_checked {
        return Ok(Parallelism::fixed(1, "--max-errors with a unique key: one connection, rows in input order, so every occurrence of a key after the first goes to the reject file"));
    }
    let start = opts.connections.max(1);
    if !opts.adapt_connections {
        return Ok(Parallelism::fixed(start, "fixed by --connections"));
    }
    // Each connection is a transaction on every foreign server too, and a prepared one under
    // two-phase commit (bounded by their max_prepared_transactions): opening spares there is
    // not free.
    if to_shards {
        return Ok(Parallelism::fixed(start, "fixed: a load onto foreign servers opens each connection as a transaction on every one of them"));
    }
    let spare = activity::free_slots(control).await? - 1;
    let cap = (start * 2).max(2).min(spare.max(1) as usize);
    Ok(Parallelism {
        adaptive: true,
        opened: cap,
        chosen: start.min(cap),
        reason: String::new(),
    })
}

/// Why a partitioned table's rows cannot be routed on the client in this load, if not.
fn routing_blocked(
    opts: &LoadOptions,
    format: CopyFormat,
    staged: bool,
    plan: &LoadPlan,
) -> Option<&'static str> {
    if opts.routing == PartitionRouting::Server {
        Some("--route server")
    } else if staged {
        Some("the rows go to a staging table first, then into the partitioned table")
    } else if format != CopyFormat::Binary {
        Some("text COPY: inrush routes on the binary values")
    } else if plan.sort.is_some() {
        Some("the rows are sorted by a kept index's key first")
    } else {
        None
    }
}

/// A partitioned table's rows routed by inrush: the router, and the foreign servers its
/// foreign leaves live on, connected.
pub(super) struct Routed {
    pub router: Router,
    pub shards: Vec<ShardServer>,
}

/// How a partitioned table's rows find their partitions (see [`crate::route`]): the router
/// when inrush routes them, and the plan's sentence either way. `truncates`: the load empties
/// the table first, which the coordinator does to foreign leaves through postgres_fdw, in a
/// transaction a COPY straight into the shard would wait on. `resume`: the load commits block
/// by block (`sink::run_resumable`).
#[allow(clippy::too_many_arguments)]
pub(super) async fn routing(
    client: &Client,
    table: &TableInfo,
    columns: &[TargetColumn],
    blocked: Option<&str>,
    target: &ConnectOptions,
    truncates: bool,
    mode: PartitionRouting,
    resume: bool,
) -> crate::Result<(Option<Routed>, Option<String>)> {
    if !table.partitioned {
        return Ok((None, None));
    }
    let routing = match blocked {
        Some(why) => Routing::Server(why.to_string()),
        None => route::routing(client, table, columns, target).await?,
    };
    let routed = match routing {
        Routing::Client(router) if router.shards.is_empty() && mode == PartitionRouting::Auto => {
            Err("every partition is local, where the server's own routing measured faster (--route client routes on the client)".to_string())
        }
        Routing::Client(router) if router.shards.is_empty() => Ok((router, Vec::new())),
        Routing::Client(_) if truncates => Err("--truncate empties the foreign partitions through the coordinator's postgres_fdw, in a transaction a COPY on the shard would wait on".to_string()),
        Routing::Client(router) => {
            let remotes: Vec<_> = router.leaves.iter().filter_map(|l| l.remote.clone()).collect();
            route::shard::open(&router.shards, &remotes, target.network_timeout())
                .await?
                .map(|shards| (router, shards))
        }
        Routing::Server(why) => Err(why),
    };
    Ok(match routed {
        Ok((router, shards)) => {
            let mut sentence = format!(
                "by inrush: each row's leaf found on the client, {} leaf partitions each loaded by its own COPY",
                router.leaves.len()
            );
            if !shards.is_empty() {
                let foreign = router.leaves.iter().filter(|l| l.remote.is_some()).count();
                sentence.push_str(&format!(
                    ", {foreign} of them foreign: COPY straight into their remote tables on {} ({}), whose indexes stay in place",
                    match shards.len() { 1 => "1 foreign server".to_string(), n => format!("{n} foreign servers") },
                    shards.iter().map(|s| s.shard.server.as_str()).collect::<Vec<_>>().join(", ")
                ));
            }
            if resume {
                sentence.push_str(match shards.is_empty() {
                    true => "; --resume: each block's rows committed in one transaction with its row in inrush.load_ledger",
                    false => "; --resume: each block committed on its own on every server it has rows for, on the foreign servers first (with its row in each one's inrush.shard_ledger), then on the target with its row in inrush.load_ledger, last; a block the target's ledger lacks is loaded again only where the server's own ledger lacks it",
                });
            }
            (Some(Routed { router, shards }), Some(sentence))
        }
        Err(why) => (
            None,
            Some(format!(
                "by the server (COPY into {}): {why}",
                table.qualified()
            )),
        ),
    })
}

/// A remote table of a load routed to foreign partitions, and what its plan rebuilds after the
/// load: the table's own secondary indexes, by the rule that decides the target's (a unique key
/// stays: rows that broke one could not be taken out of the shard again).
pub(super) struct ShardPlan {
    /// Its index in the load's shards.
    pub shard: usize,
    pub table: TableInfo,
    pub rebuilt: Vec<crate::IndexInfo>,
    /// A unique key stays during the load: the server refuses a duplicate as it comes.
    pub checks_keys: bool,
}

impl ShardPlan {
    /// `index(es) a, b of "s"."t"`.
    pub fn describe(&self) -> String {
        let names: Vec<&str> = self.rebuilt.iter().map(|i| i.name.as_str()).collect();
        format!(
            "index(es) {} of {}",
            names.join(", "),
            self.table.qualified()
        )
    }
}

/// The plan of every remote table the load writes to; a table another inrush load holds keeps
/// its indexes. `input_size` is shared evenly among the remote tables.
pub(super) async fn shard_plans(
    shards: &[ShardServer],
    input_size: Option<u64>,
    opts: inrush_load::PlanOptions,
) -> crate::Result<Vec<ShardPlan>> {
    let tables: usize = shards.iter().map(|s| s.tables.len()).sum();
    let share = input_size.map(|bytes| bytes / tables.max(1) as u64);
    let opts = inrush_load::PlanOptions {
        keep_keys: Some("a key broken on a shard after the load could not be undone there"),
        disable_triggers: false,
        ..opts
    };
    let mut plans = Vec::new();
    for (at, shard) in shards.iter().enumerate() {
        for name in &shard.tables {
            let table = TableInfo::read(&shard.control, name).await?;
            let alone = ddl::claim(&shard.control, table.oid).await?;
            let plan = decide_plan(&shard.control, &table, share, opts, false, false).await?;
            plans.push(ShardPlan {
                shard: at,
                rebuilt: match alone {
                    true => plan.rebuilt(),
                    false => Vec::new(),
                },
                checks_keys: plan.checks_keys_during_load(),
                table,
            });
        }
    }
    Ok(plans)
}

/// Binary COPY, unless asked for text or a column has no binary encoder.
fn copy_format(opts: &LoadOptions, columns: &[PgColumn]) -> (CopyFormat, Option<String>) {
    let unsupported: Vec<String> = columns
        .iter()
        .filter(|c| c.value_type == ValueType::Unsupported)
        .map(|c| format!("{} ({})", c.column.name, c.column.type_sql))
        .collect();
    if opts.force_text {
        (CopyFormat::Text, Some("requested".to_string()))
    } else if !unsupported.is_empty() {
        (
            CopyFormat::Text,
            Some(format!("no binary encoder for {}", unsupported.join(", "))),
        )
    } else {
        (CopyFormat::Binary, None)
    }
}

/// A query whose columns have the very types of the target's (and no OIDs in their binary
/// form) is streamed as COPY BINARY and its tuples go on untouched; says how the rows go.
pub(super) fn passthrough(
    sources: &Sources,
    types: &[(String, SqlType)],
    columns: &[PgColumn],
    format: CopyFormat,
    opts: &LoadOptions,
    staged: bool,
) -> String {
    let same_types = columns.iter().all(|c| {
        let oid_free = match &c.value_type {
            ValueType::Scalar { .. } => true,
            ValueType::Array { elem_oid, .. } => *elem_oid < 16384,
            ValueType::Unsupported => false,
        };
        let c = &c.column;
        let same = |t: &SqlType| crate::sql_type::name(t) == c.type_sql;
        oid_free && types.iter().any(|(n, t)| *n == c.name && same(t))
    });
    let binary = sources
        .query()
        .is_some_and(|(from, _)| from.speaks_copy_binary());
    let values = sources.query().is_some_and(|(from, _)| from.reads_rows());
    let how = if values {
        "as values, read by the target's input functions"
    } else if !binary {
        "as CSV, read by the target's input functions"
    } else if !same_types {
        "as CSV, read by the target's input functions (the column types differ)"
    } else if format != CopyFormat::Binary || staged || opts.max_errors > 0 {
        "as CSV (--max-errors and --on-conflict need each row parsed)"
    } else {
        let _ = sources
            .passthrough
            .set(columns.iter().map(|c| c.column.name.clone()).collect());
        "as COPY BINARY tuples, untouched (every column has the target's type)"
    };
    format!("--from-query: rows streamed {how}")
}

/// Statements each COPY transaction runs first; each makes the load one transaction.
fn prelude(opts: &LoadOptions, create_sql: &Option<String>, table: &TableInfo) -> Vec<String> {
    let mut prelude = Vec::new();
    prelude.extend(create_sql.clone());
    if opts.truncate {
        prelude.push(format!("TRUNCATE {}", table.qualified()));
    }
    if opts.table_lock {
        prelude.push(format!(
            "LOCK TABLE {} IN EXCLUSIVE MODE",
            table.qualified()
        ));
    }
    prelude
}
