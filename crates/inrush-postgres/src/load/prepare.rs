//! Before anything changes: the inputs opened far enough to name their columns, the table read
//! (made, for `--create`, in a transaction rolled back at once), the claim on it, the encoding,
//! the COPY statement and what each transaction runs first, the plan, and how many connections.

use super::claim::{self, Claim};
use super::create;
use super::sink::Destination;
use super::staging::Staging;
use crate::copy::{copy_from_stdin, CopyFormat};
use crate::ledger::{self, Book, InputIdentity};
use crate::resolve::Resolver;
use crate::route::{self, Router, Routing, ShardServer};
use crate::{activity, ddl, ConnectOptions, SessionInfo, TableInfo, TableSize};
use inrush_core::{Progress, TargetColumn, ValueType};
use inrush_encode::{DateOrder, EncodeContext};
use inrush_load::columns::map_columns;
use inrush_load::rejects::Rejects;
use inrush_load::resume::{self, Resume};
use inrush_load::sources::{Opened, Sources};
use inrush_load::stages::{create_columns, default_rejects_path, json_form, reject_header, Inputs};
use inrush_load::summary::Parallelism;
use inrush_load::worker::{ArrowPlan, Decode, Rows, WorkerPlan};
use inrush_load::{LoadOptions, LoadPlan, OnConflict, PartitionRouting, Result};
use inrush_read::inputs::InputFormat;
use inrush_read::jsonl::JsonLineParser;
use std::collections::HashSet;
use std::sync::Arc;
use tokio::runtime::Runtime;
use tokio_postgres::Client;

/// Everything the load decided before it changes anything.
pub(super) struct Prepared {
    /// The session that reads the catalog, holds the claim, drops and restores definitions.
    pub control: Client,
    pub progress: Arc<Progress>,
    pub sources: Arc<Sources>,
    /// The first text source, opened (its header read); the readers take it.
    pub first: Option<Opened>,
    pub header_names: Option<Vec<String>>,
    pub input_name: String,
    pub session: SessionInfo,
    pub table: TableInfo,
    pub claim: Claim,
    /// `--create`: the table's DDL, run first by the load's transaction.
    pub create_sql: Option<String>,
    /// `--resume`: the input's identity in the ledger, the blocks to skip, the rows loaded
    /// before.
    pub resume: Option<(InputIdentity, HashSet<u64>, u64)>,
    /// The reject file, when rows may be refused; the stages take it.
    pub rejects: Option<Rejects>,
    pub format: CopyFormat,
    /// Why the load goes as text COPY.
    pub text_reason: Option<String>,
    pub staging: Option<Staging>,
    /// `COPY ... FROM STDIN` per destination (the table, or each leaf partition the rows are
    /// routed to on the client), and what each COPY transaction runs before it.
    pub destinations: Vec<Destination>,
    pub prelude: Vec<String>,
    /// The foreign servers of a load routed to foreign partitions, connected, and what the
    /// plan takes off each remote table.
    pub shards: Vec<ShardServer>,
    pub shard_plans: Vec<ShardPlan>,
    /// `--resume` onto foreign servers: where each shard records the blocks it committed.
    pub shard_book: Option<Book>,
    pub workers: WorkerPlan,
    pub plan: LoadPlan,
    pub notes: Vec<String>,
    /// Connections opened, each with its transaction.
    pub connections: usize,
    /// How that number was chosen; when `adaptive`, `chosen` is how many start streaming and
    /// the load chooses on (see `adapt`).
    pub parallelism: Parallelism,
    /// Rows reach the table in the input's order (one reader, the order stage).
    pub ordered: bool,
}

/// Reads, opens and decides (see the module documentation).
pub(super) fn prepare(
    target: &ConnectOptions,
    opts: &LoadOptions,
    runtime: &Runtime,
    waits: &super::waits::Waits,
) -> Result<Prepared> {
    let progress = Arc::new(Progress::default());
    let Inputs {
        sources,
        query_types,
        mut first,
        header_names,
        projections,
    } = Inputs::open(opts, &progress)?;
    let input_name = sources.describe();
    let input_size = sources.size();
    let control = runtime.block_on(target.connect())?;
    waits.add(runtime.block_on(crate::activity::backend_pid(&control))?);
    // A stop while the inspection waits (on a lock another session holds on the table) cancels
    // the waiting statement, so the load ends now rather than when the lock is let go.
    let _cancel = {
        let (target, token) = (target.clone(), control.cancel_token());
        opts.interrupt
            .watch(std::time::Duration::from_millis(500), move || {
                if let Ok(runtime) = super::runtime() {
                    // Best effort, as every cancel: the stop is seen after the wait anyway.
                    let _ = runtime.block_on(target.cancel(&token));
                }
            })
    };
    // --create: the table is made in a transaction on the control connection only to read it
    // back (then rolled back); the load makes it again in its own transaction, so COPY FREEZE
    // applies and a failed load leaves no table behind.
    let create_sql = match opts.create {
        false => None,
        true => {
            let columns = create_columns(
                &sources,
                &query_types,
                header_names.as_deref(),
                &projections,
                first.as_mut(),
                opts.date_order,
            )?;
            Some(runtime.block_on(create::table_ddl(
                &control,
                &opts.table,
                &columns,
                &opts.create_types,
            ))?)
        }
    };
    let (session, table, claim) =
        runtime.block_on(open_table(&control, target, opts, &create_sql))?;

    let explicit = opts.columns.as_deref().filter(|_| !sources.columnar());
    let origin = sources.names_origin();
    let header_origin = header_names.as_deref().map(|n| (n, origin.as_str()));
    let columns = map_columns(&table.columns, &table.qualified(), explicit, header_origin)?;
    let header = reject_header(first.as_ref(), header_names.as_deref());
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
            let identity = ledger::InputIdentity::new(table.oid, file);
            let committed = runtime.block_on(ledger::open(&control, &identity))?;
            let Resume { skip, rows_before } =
                Resume::start(&committed, &sources, first.as_mut(), &progress)?;
            Some((identity, skip, rows_before))
        }
    };
    let rejects = match opts.max_errors {
        0 => None,
        limit => {
            let path = opts
                .rejects
                .clone()
                .unwrap_or_else(|| default_rejects_path(&sources));
            Some(Rejects::create(
                &path,
                limit,
                header.as_deref(),
                opts.resume,
            )?)
        }
    };
    let (format, text_reason) = copy_format(opts, &columns);
    // --on-conflict skip|update: the connections COPY into an unlogged staging table (their
    // commits touch only it), then one transaction merges it into the table and drops it.
    let staging = match opts.on_conflict {
        OnConflict::Error => None,
        mode => Some(runtime.block_on(Staging::create(&control, &table, &columns, mode))?),
    };
    let query_note = query_types
        .as_ref()
        .map(|types| passthrough(&sources, types, &columns, format, opts, staging.is_some()));
    let mut copy_columns: Vec<String> = columns.iter().map(|c| c.name.clone()).collect();
    if staging.is_some() {
        copy_columns.push(Staging::ORDINAL.into());
    }
    // COPY FREEZE needs the table made or emptied in the same subtransaction: not under the
    // savepoints --max-errors loads each chunk in.
    // Nor on a partitioned table, which the server refuses to freeze.
    let frozen = (opts.truncate || opts.create) && opts.max_errors == 0 && !table.partitioned;
    let statement = copy_from_stdin(
        staging
            .as_ref()
            .map_or(table.qualified(), |st| st.name.clone())
            .as_str(),
        &copy_columns,
        format,
        frozen,
    );
    let mut prelude = prelude(opts, &create_sql, &table);
    let decode = match sources.format {
        InputFormat::Jsonl => Decode::Jsonl(JsonLineParser::new(
            &columns
                .iter()
                .map(|c| (c.name.clone(), json_form(&c.value_type)))
                .collect::<Vec<_>>(),
        )),
        _ => Decode::Csv,
    };
    let resolving = target.clone();
    let mut workers = WorkerPlan {
        decode,
        sources: sources.clone(),
        columns,
        rows: Rows::Copy {
            format,
            ctx: EncodeContext {
                server_version_num: session.server_version_num,
                session_time_zone_is_utc: session.time_zone_is_utc(),
                date_order: DateOrder::of_date_style(&session.date_style),
            },
            resolver: Box::new(move |columns| {
                Box::new(Resolver::new(resolving.clone(), columns.to_vec()))
            }),
        },
        relation: table.name.clone(),
        ordinal: staging.is_some(),
        arrow,
        chunk_bytes: opts.block_size.max(64 * 1024),
        route: None,
        whole_blocks: false,
    };

    let plan_options = inrush_load::PlanOptions {
        keep_keys: opts.keeps_keys(),
        // Other loads of the table run beside this one: it changes no definition.
        rebuild_indexes: opts.plan.rebuild_indexes && claim == Claim::Alone,
        ..opts.plan
    };
    let mut load_plan = runtime.block_on(decide_plan(
        &control,
        &table,
        input_size,
        plan_options,
        opts.truncate || opts.create,
        frozen,
    ))?;
    if claim == Claim::Shared {
        load_plan.rule = format!(
            "indexes and keys are kept: another inrush load of {} was running when this one started, and only a load that runs alone changes them",
            table.qualified()
        );
    }

    if create_sql.is_some() {
        runtime
            .block_on(control.batch_execute("ROLLBACK"))
            .map_err(crate::query_error("ROLLBACK"))?;
    }
    // --check: the rows go in inside the sink's transaction, rolled back at the end, with
    // every definition in place (--disable-triggers: disabled in that transaction only).
    if opts.check_only {
        prelude.extend(load_plan.disabled_triggers().iter().map(|(name, _)| {
            format!(
                "ALTER TABLE {} DISABLE TRIGGER {}",
                table.qualified(),
                crate::quote_ident(name)
            )
        }));
        load_plan = load_plan.checked();
    }
    if !opts.check_only {
        let blocked = if opts.max_errors > 0 {
            Some("--max-errors finds refused rows by their place in the input")
        } else if opts.resume {
            Some("--resume commits the input block by block, in order")
        } else if staging.is_some() {
            Some("--on-conflict keeps the input's order")
        } else if format == CopyFormat::Text {
            Some("text COPY (a column with no binary encoder)")
        } else {
            None
        };
        load_plan.choose_sort(&workers.columns, blocked);
    }
    let blocked = routing_blocked(opts, format, staging.is_some(), &load_plan);
    let (routed, routing) = runtime.block_on(routing(
        &control,
        &table,
        &workers.columns,
        blocked,
        target,
        opts.truncate,
        opts.routing,
        opts.resume,
    ))?;
    load_plan.routing = routing;
    let (destinations, shards) = match routed {
        Some(Routed { router, shards }) => {
            // --truncate empties every leaf in the load's own transaction: each leaf can then
            // be written frozen, which COPY into the partitioned table cannot do.
            let frozen_leaves = opts.truncate && opts.max_errors == 0;
            load_plan = load_plan.loaded_frozen(frozen_leaves);
            let destinations = router
                .leaves
                .iter()
                .map(|leaf| match &leaf.remote {
                    Some(remote) => Destination {
                        statement: copy_from_stdin(
                            &remote.qualified,
                            &remote.columns,
                            format,
                            false,
                        ),
                        server: remote.shard + 1,
                    },
                    None => Destination {
                        statement: copy_from_stdin(
                            &leaf.qualified,
                            &copy_columns,
                            format,
                            frozen_leaves,
                        ),
                        server: 0,
                    },
                })
                .collect();
            workers.route = Some(Box::new(router));
            workers.whole_blocks = opts.resume;
            (destinations, shards)
        }
        None => (
            vec![Destination {
                statement,
                server: 0,
            }],
            Vec::new(),
        ),
    };
    let shard_book = match (&resume, shards.is_empty()) {
        (Some(_), false) => {
            let sessions: Vec<&Client> = shards.iter().map(|s| &s.control).collect();
            Some(runtime.block_on(Book::open_shard(&control, &sessions))?)
        }
        _ => None,
    };
    let shard_plans = match opts.check_only {
        true => Vec::new(),
        false => runtime.block_on(shard_plans(&shards, input_size, plan_options))?,
    };
    let mut notes: Vec<String> = query_note
        .into_iter()
        .chain(sources.skipped_note())
        .collect();
    if let Some(sql) = &create_sql {
        notes.push(match opts.check_only {
            true => format!("--create: would run {sql} (--check: nothing was created)"),
            false => format!(
                "--create: {sql}, in the load's own transaction{}",
                match frozen {
                    true => " (rows written frozen: COPY FREEZE)",
                    false => "",
                }
            ),
        });
    }
    let keys_checked =
        load_plan.checks_keys_during_load() || shard_plans.iter().any(|p| p.checks_keys);
    let parallelism = runtime.block_on(connections(
        &control,
        opts,
        keys_checked,
        !shards.is_empty(),
    ))?;
    let connections = parallelism.opened;
    let ordered = opts.max_errors > 0 && connections == 1;
    Ok(Prepared {
        control,
        progress,
        sources,
        first,
        header_names,
        input_name,
        session,
        table,
        claim,
        create_sql,
        resume,
        rejects,
        format,
        text_reason,
        staging,
        destinations,
        prelude,
        shard_plans,
        shards,
        shard_book,
        workers,
        plan: load_plan,
        notes,
        connections,
        parallelism,
        ordered,
    })
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
            return Err(inrush_load::Error::Usage(format!(
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
        ddl::restore(target, &leftovers, opts.connections.max(1)).await?;
    }
    Ok((session, table, claim))
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
        Some("--on-conflict merges its staging table into the partitioned table")
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
            route::shard::open(&router.shards, &remotes)
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

/// What a load does with a Citus distributed table: COPY into it on the coordinator, which
/// Citus routes to its shards itself (loading the shards straight waits for a Citus server to
/// be tested on), and no change to its definitions.
fn citus_rule(table: &TableInfo, method: &str) -> String {
    let kind = match method {
        "h" => "hash-distributed",
        "r" => "range-distributed",
        "a" => "append-distributed",
        "n" => "reference",
        _ => "distributed",
    };
    format!(
        "{} is a Citus {kind} table: the rows go through COPY on the coordinator, which Citus sends on to its shards (inrush does not load Citus shards straight), and its indexes and keys are kept (Citus replays their DDL on every shard)",
        table.qualified()
    )
}

/// A remote table of a load routed to foreign partitions, and what its plan rebuilds after the
/// load: the table's own secondary indexes, by the rule that decides the target's (a unique key
/// stays: rows that broke one could not be taken out of the shard again).
pub(super) struct ShardPlan {
    /// Its index in [`Prepared::shards`].
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
fn copy_format(opts: &LoadOptions, columns: &[TargetColumn]) -> (CopyFormat, Option<String>) {
    let unsupported: Vec<String> = columns
        .iter()
        .filter(|c| c.value_type == ValueType::Unsupported)
        .map(|c| format!("{} ({})", c.name, c.type_sql))
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
fn passthrough(
    sources: &Sources,
    types: &[(String, String)],
    columns: &[TargetColumn],
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
        oid_free && types.iter().any(|(n, t)| *n == c.name && *t == c.type_sql)
    });
    let binary = sources
        .query()
        .is_some_and(|(from, _)| from.speaks_copy_binary());
    let how = if !binary {
        "as CSV, read by the target's input functions"
    } else if !same_types {
        "as CSV, read by the target's input functions (the column types differ)"
    } else if format != CopyFormat::Binary || staged || opts.max_errors > 0 {
        "as CSV (--max-errors and --on-conflict need each row parsed)"
    } else {
        let _ = sources
            .passthrough
            .set(columns.iter().map(|c| c.name.clone()).collect());
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

/// Reads what the plan weighs (indexes, keys, size, per-row work) and decides. `emptied`: the
/// table counts as empty (`--truncate` empties it in the load's own transaction).
pub(super) async fn decide_plan(
    client: &tokio_postgres::Client,
    table: &TableInfo,
    input_size: Option<u64>,
    opts: inrush_load::PlanOptions,
    emptied: bool,
    frozen: bool,
) -> crate::Result<LoadPlan> {
    let indexes = table.indexes(client).await?;
    let foreign_keys = table.foreign_keys(client).await?;
    let mut size = table.size(client).await?;
    let mut opts = opts;
    if emptied {
        // A key built after the load that fails undoes the load's rows, but not the TRUNCATE
        // of the rows that were there: those keys stay.
        if !size.empty && opts.keep_keys.is_none() {
            opts.keep_keys = Some("--truncate of a table with rows: if a key put back after the load failed, the emptied rows could not come back");
        }
        size = TableSize {
            table_bytes: 0,
            index_bytes: 0,
            rows_estimate: 0.0,
            empty: true,
        };
    }
    let hidden = table.hidden_work(client).await?;
    // A Citus table's definitions are not changed: Citus replays their DDL on every shard.
    let citus = table.citus_distribution(client).await?;
    if citus.is_some() {
        opts.rebuild_indexes = false;
    }
    let mut plan = LoadPlan::decide(
        &table.qualified(),
        table.partitioned,
        indexes,
        foreign_keys,
        size,
        input_size,
        opts,
    );
    if let Some(method) = citus {
        plan.rule = citus_rule(table, &method);
    }
    Ok(plan.with_hidden_work(hidden).loaded_frozen(frozen))
}
