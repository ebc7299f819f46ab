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

mod claim;
mod create;
mod sink;
mod staging;
mod watch;

use crate::copy::{copy_from_stdin, CopyFormat};
use crate::resolve::Resolver;
use crate::{ddl, ledger, ConnectOptions, SessionInfo, TableInfo, TableSize};
use claim::Claim;
use inrush_core::{Phase, Progress, Reporter, ValueType};
use inrush_encode::{DateOrder, EncodeContext};
use inrush_load::columns::map_columns;
use inrush_load::plan::Maintenance;
use inrush_load::rejects::Rejects;
use inrush_load::resume::{self, Resume};
use inrush_load::stages::{
    create_columns, default_rejects_path, join_workers, json_form, reject_header, spawn_error,
    spawn_ticker, spawn_workers, start_readers, Inputs, Shared, CANCEL_POLL,
};
use inrush_load::summary::Phases;
use inrush_load::worker::{ArrowPlan, Decode, Rows, WorkerPlan};
use inrush_load::{order, sort, Error, LoadOptions, LoadPlan, LoadSummary, OnConflict, Result};
use inrush_read::inputs::InputFormat;
use inrush_read::jsonl::JsonLineParser;
use sink::Finished;
use staging::Staging;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Loads `opts`' inputs into `opts.table` of `target`; all or nothing (see the module
/// documentation).
pub fn run(
    target: &ConnectOptions,
    opts: &LoadOptions,
    reporter: &dyn Reporter,
) -> Result<LoadSummary> {
    let started = Instant::now();
    reporter.phase(Phase::Inspect);
    opts.validate()?;
    refuse_sqlite_only(&opts.plan)?;
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
    let runtime = runtime()?;
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
            )?;
            Some(runtime.block_on(create::table_ddl(
                &control,
                &opts.table,
                &columns,
                &opts.create_types,
            ))?)
        }
    };
    let (session, table, claim) = runtime.block_on(async {
        let session = SessionInfo::read(&control).await?;
        if let Some(sql) = &create_sql {
            control
                .batch_execute(&format!("BEGIN; {sql}"))
                .await
                .map_err(crate::query_error(sql.as_str()))?;
        }
        let table = TableInfo::read(&control, &opts.table).await?;
        // A new table is this load's alone; another table's definitions may be another load's.
        let claim = match create_sql {
            Some(_) => Claim::Alone,
            None => {
                let must_be_alone = opts.truncate || opts.table_lock || opts.plan.disable_triggers;
                claim::take(
                    &control,
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
            (None, Claim::Alone) => ddl::pending(&control, Some(table.oid)).await?,
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
        Ok::<_, Error>((session, table, claim))
    })?;

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
    let mut query_note = None;
    // --resume: which blocks this input already has in the table, and where to read on from.
    let resume = match opts.resume {
        false => None,
        true => {
            let file = resume::input_file(&sources, opts.block_size)?;
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
    let unsupported: Vec<String> = columns
        .iter()
        .filter(|c| c.value_type == ValueType::Unsupported)
        .map(|c| format!("{} ({})", c.name, c.type_sql))
        .collect();
    let (format, text_reason) = if opts.force_text {
        (CopyFormat::Text, Some("requested".to_string()))
    } else if !unsupported.is_empty() {
        (
            CopyFormat::Text,
            Some(format!("no binary encoder for {}", unsupported.join(", "))),
        )
    } else {
        (CopyFormat::Binary, None)
    };
    // --on-conflict skip|update: the connections COPY into an unlogged staging table (their
    // commits touch only it), then one transaction merges it into the table and drops it.
    let staging = match opts.on_conflict {
        OnConflict::Error => None,
        mode => Some(runtime.block_on(Staging::create(&control, &table, &columns, mode))?),
    };
    // A query whose columns have the very types of the target's (and no OIDs in their binary
    // form) is streamed as COPY BINARY and its tuples go on untouched.
    if let Some(types) = &query_types {
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
        } else if format != CopyFormat::Binary || staging.is_some() || opts.max_errors > 0 {
            "as CSV (--max-errors and --on-conflict need each row parsed)"
        } else {
            let _ = sources
                .passthrough
                .set(columns.iter().map(|c| c.name.clone()).collect());
            "as COPY BINARY tuples, untouched (every column has the target's type)"
        };
        query_note = Some(format!("--from-query: rows streamed {how}"));
    }
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
    // Statements each COPY transaction runs first; each makes the load one transaction.
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
    let plan = WorkerPlan {
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
        load_plan.choose_sort(&plan.columns, blocked);
    }
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
    // One transaction per connection: a load that must be one transaction has one.
    let mut connections = match (
        opts.check_only,
        opts.truncate || opts.table_lock || opts.create,
    ) {
        (true, _) => 0,
        (false, true) => 1,
        (false, false) => opts.connections.max(1),
    };
    // With rejects allowed, the server refuses the second occurrence of a key: which one that
    // is must not depend on which connection got there first, and two connections holding the
    // same key would wait on each other. One connection then, fed in the input's order.
    if opts.max_errors > 0 && connections > 1 && load_plan.checks_keys_during_load() {
        connections = 1;
        notes.push("--max-errors with a unique key: one connection, rows in input order, so every occurrence of a key after the first goes to the reject file".into());
    }
    let ordered = opts.max_errors > 0 && connections == 1;
    let inspected = Instant::now();
    let (to_rebuild, to_readd, to_disable) = match opts.check_only {
        true => (Vec::new(), Vec::new(), Vec::new()),
        false => (
            load_plan.rebuilt(),
            load_plan.readded_foreign_keys(),
            load_plan.disabled_triggers(),
        ),
    };
    let changes_nothing = to_rebuild.is_empty() && to_readd.is_empty() && to_disable.is_empty();
    if changes_nothing
        && claim == Claim::Alone
        && create_sql.is_none()
        && !opts.truncate
        && !opts.table_lock
    {
        // Other loads of the table may run beside this one after all.
        runtime.block_on(ddl::share_own_claim(&control, table.oid))?;
    }
    let dropped = match changes_nothing {
        true => Vec::new(),
        false => match runtime.block_on(ddl::journal_and_drop(
            &control,
            &table,
            &to_rebuild,
            &to_readd,
            &to_disable,
        )) {
            Ok(dropped) => {
                opts.interrupt.dropped(!dropped.is_empty());
                dropped
            }
            Err(e) => {
                // Nothing was dropped: load with the indexes in place, and say why.
                notes.push(format!("indexes and foreign keys kept during the load: {e} (dropping them needs ownership of the table and the right to create schema inrush)"));
                Vec::new()
            }
        },
    };
    let dropped_at = Instant::now();

    let streamed = (|| -> Result<(LoadSummary, Vec<i64>)> {
        let wal_before = runtime.block_on(SessionInfo::wal_lsn(&control));
        let (sinks, sessions) = runtime.block_on(async {
            let connects = (0..connections).map(|_| async {
                let client = target.connect().await?;
                let session = watch::Session::of(&client).await?;
                Ok::<_, crate::Error>((client, session))
            });
            let connected = futures_util::future::try_join_all(connects).await?;
            Ok::<_, crate::Error>(connected.into_iter().unzip::<_, _, Vec<_>, Vec<_>>())
        })?;
        if resume.is_some() {
            opts.interrupt.resumable();
        }

        reporter.phase(Phase::Load);
        let shared = Arc::new(Shared::new(progress.clone(), rejects));
        let (block_tx, block_rx) = flume::bounded(opts.workers.max(1) * 2);
        let (chunk_tx, worker_chunks) = flume::bounded(opts.connections.max(1) * 2);
        // With a sort key, a sorter stands between the workers and the sinks; for an ordered
        // load, a stage that puts the chunks back in input order.
        let (middle, chunk_rx) = match (&load_plan.sort, ordered) {
            (None, false) => (None, worker_chunks),
            (key, _) => {
                let (to_sinks, chunk_rx) = flume::bounded(opts.connections.max(1) * 2);
                (Some((key, worker_chunks, to_sinks)), chunk_rx)
            }
        };
        let done = AtomicBool::new(false);
        // Readers are not scoped threads: a read from a pipe that never ends cannot be
        // interrupted, so a cancelled load leaves them behind instead of waiting for them.
        let readers = {
            let skip = resume.as_ref().map(|r| r.1.clone()).unwrap_or_default();
            let first_header = header_names.clone().filter(|_| sources.csv.header);
            start_readers(
                &sources,
                first,
                first_header,
                skip,
                // One reader numbers the units in the input's order.
                if ordered { 1 } else { opts.workers.max(1) },
                &shared,
                block_tx,
            )
            .map_err(spawn_error)?
        };
        let (finished, resolved, checked) =
            std::thread::scope(|scope| -> Result<(Vec<Finished>, u64, u64)> {
                let shared = &*shared;
                let spawn = |name: String| std::thread::Builder::new().name(name);
                let workers =
                    spawn_workers(scope, &plan, shared, opts.workers, block_rx, chunk_tx)?;
                let middle = match middle {
                    Some((Some(key), from_workers, to_sinks)) => Some(
                        spawn("inrush-sort".into())
                            .spawn_scoped(scope, move || {
                                let chunk_bytes = plan.chunk_bytes;
                                if let Err(e) =
                                    sort::run(key, from_workers, to_sinks, shared, chunk_bytes)
                                {
                                    shared.fail(e);
                                }
                            })
                            .map_err(spawn_error)?,
                    ),
                    Some((None, from_workers, to_sinks)) => Some(
                        spawn("inrush-order".into())
                            .spawn_scoped(scope, move || order::run(from_workers, to_sinks, shared))
                            .map_err(spawn_error)?,
                    ),
                    None => None,
                };
                let ticker =
                    spawn_ticker(scope, &done, &opts.interrupt, shared, reporter, &progress)?;

                let (finished, checked) = runtime.block_on(async {
                    if opts.check_only {
                        return (Vec::new(), drain(chunk_rx, shared).await);
                    }
                    let streams = sinks.into_iter().map(|client| {
                        let (chunks, plan, statement, prelude, resume) =
                            (chunk_rx.clone(), &plan, &statement, &prelude, &resume);
                        async move {
                            let streamed = match resume {
                                Some((identity, _, _)) => {
                                    sink::run_resumable(
                                        client, statement, format, chunks, shared, plan, identity,
                                        target,
                                    )
                                    .await
                                }
                                None => {
                                    sink::run(
                                        client, prelude, statement, format, chunks, shared, plan,
                                    )
                                    .await
                                }
                            };
                            match streamed {
                                Ok(finished) => Some(finished),
                                Err(e) => {
                                    shared.fail(e);
                                    None
                                }
                            }
                        }
                    });
                    // Two connections' transactions wait on each other only when both stay open
                    // to the end (not under --resume, which commits block by block).
                    let find_deadlocks = resume.is_none() && sessions.len() > 1;
                    let watched = watch::watch(&control, target, &sessions, shared, find_deadlocks);
                    let results = tokio::select! {
                        results = futures_util::future::join_all(streams) => results,
                        never = watched => match never {},
                    };
                    drop(chunk_rx);
                    (results.into_iter().flatten().collect::<Vec<_>>(), 0)
                });
                let resolved = join_workers(workers)?;
                if let Some(middle) = middle {
                    middle
                        .join()
                        .map_err(|_| Error::Internal("the sort or order stage panicked".into()))?;
                }
                done.store(true, Ordering::Relaxed);
                let _ = ticker.join();
                Ok((finished, resolved, checked))
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

        // The reject file is kept whatever happens: it describes the rows refused so far.
        let flushed = shared.rejects.as_ref().map_or(Ok(()), Rejects::flush);
        if let Some(error) = shared.take_error() {
            // Under --resume a stop keeps every block that committed: say so, and how to go on.
            let error = match (error, &resume) {
                (Error::Interrupted, Some(_)) => Error::InterruptedResumable {
                    rows: finished.iter().map(|f| f.rows).sum(),
                },
                (error, _) => error,
            };
            runtime.block_on(rollback(&finished));
            return Err(error);
        }
        if let Err(error) = flushed {
            runtime.block_on(rollback(&finished));
            return Err(error);
        }
        let rows: u64 = finished.iter().map(|f| f.rows).sum::<u64>() + checked;
        let sent = progress.rows_sent.load(Ordering::Relaxed);
        let refused: u64 = finished.iter().map(|f| f.refused).sum();
        if rows + refused != sent || finished.len() != connections {
            runtime.block_on(rollback(&finished));
            return Err(Error::Internal(format!(
                "the server counted {rows} rows but {sent} were sent; rolled back"
            )));
        }

        // From here on a signal no longer rolls back: the commit and a stop agree on which
        // came first (see `Interrupt`).
        let stopped = match opts.check_only {
            true => opts.interrupt.is_set(),
            false => !opts.interrupt.begin_commit(),
        };
        if stopped {
            runtime.block_on(rollback(&finished));
            return Err(match resume {
                Some(_) => Error::InterruptedResumable {
                    rows: finished.iter().map(|f| f.rows).sum(),
                },
                None => Error::Interrupted,
            });
        }
        // With --resume every chunk committed on its own already.
        if !opts.check_only && resume.is_none() {
            reporter.phase(Phase::Commit);
            runtime.block_on(commit(&finished))?;
        }
        let merged = match &staging {
            Some(st) if !opts.check_only => Some(runtime.block_on(st.merge(&control))?),
            _ => None,
        };
        let wal_after = runtime.block_on(SessionInfo::wal_lsn(&control));
        let seconds = started.elapsed().as_secs_f64();
        let bytes = progress.bytes_read.load(Ordering::Relaxed);
        let txids = finished.iter().map(|f| f.txid).collect();
        // Merged: the rows that reached the table, and what happened to the others.
        let (rows, merge_note) = match merged {
            Some(affected) => (
                affected,
                Some(format!(
                    "--on-conflict {}: {rows} input rows, {affected} inserted or updated, {} skipped",
                    opts.on_conflict.name(),
                    rows - affected.min(rows)
                )),
            ),
            None => (rows, None),
        };
        Ok((
            LoadSummary {
                input: input_name,
                table: table.qualified(),
                rows,
                bytes,
                seconds,
                rows_per_second: rows as f64 / seconds.max(1e-9),
                megabytes_per_second: bytes as f64 / 1e6 / seconds.max(1e-9),
                load_rows_per_second: rows as f64 / seconds.max(1e-9),
                load_megabytes_per_second: bytes as f64 / 1e6 / seconds.max(1e-9),
                wal_bytes: wal_before
                    .zip(wal_after)
                    .map(|(before, after)| after.saturating_sub(before)),
                connections: finished.len(),
                workers: opts.workers.max(1),
                copy_format: format.name(),
                text_reason,
                values_resolved_by_server: resolved,
                rows_rejected: shared.rejects.as_ref().map_or(0, Rejects::count),
                rejects_file: shared
                    .rejects
                    .as_ref()
                    .map(|r| r.path.display().to_string()),
                rejects_log: shared
                    .rejects
                    .as_ref()
                    .map(|r| r.log_path.display().to_string()),
                server_version: session.server_version.clone(),
                loaded: !opts.check_only,
                rows_resumed: resume.as_ref().map_or(0, |r| r.2),
                plan: load_plan.clone(),
                phases: Phases::default(),
                notes: merge_note.into_iter().collect(),
            },
            txids,
        ))
    })();

    if let Some(st) = &staging {
        // Gone already after a merge; a failed load leaves it to drop here.
        let _ =
            runtime.block_on(control.batch_execute(&format!("DROP TABLE IF EXISTS {}", st.name)));
    }
    // Whatever happened to the load, dropped indexes are recreated now.
    let loaded_at = Instant::now();
    let rebuilt = if dropped.is_empty() {
        Ok(())
    } else {
        reporter.phase(Phase::Indexes);
        runtime.block_on(ddl::restore(target, &dropped, opts.connections.max(1)))
    };
    let mut summary = match (streamed, rebuilt) {
        (Ok((summary, _)), Ok(())) => summary,
        (Ok((_, txids)), Err(broken)) if broken.is_broken_key() => {
            // The rows break a key put back after the commit (a unique index that cannot be
            // built, a foreign key added back NOT VALID that does not validate): take exactly
            // them out again, then put back every journaled definition and validate what was
            // valid, so the table is as it was. Such keys are dropped only for loads whose rows
            // all carry their transactions' ids (see `LoadOptions::keeps_keys`).
            let (constraint, name, message) = broken.broken_key();
            let undone = runtime.block_on(async {
                let deleted = undo(&control, &table, &txids).await?;
                let pending = ddl::pending(&control, Some(table.oid)).await?;
                ddl::restore(target, &pending, opts.connections.max(1)).await?;
                if matches!(broken, crate::Error::ForeignKeyViolated { .. }) {
                    ddl::validate_foreign_key(&control, &name, &constraint)
                        .await
                        .map_err(crate::query_error("validating the foreign key again"))?;
                }
                Ok::<_, crate::Error>(deleted)
            });
            return Err(match undone {
                Ok(deleted) => Error::KeyViolated {
                    constraint,
                    table: name,
                    message,
                    rows_undone: deleted,
                },
                Err(e) => Error::IndexesNotRestored {
                    load: Some(format!("{constraint}: {message}")),
                    reason: e.to_string(),
                },
            });
        }
        (Err(error), Ok(())) => return Err(error),
        (streamed, Err(e)) => {
            return Err(Error::IndexesNotRestored {
                load: streamed.err().map(|e| e.to_string()),
                reason: e.to_string(),
            })
        }
    };
    opts.interrupt.dropped(false);
    let rebuilt_at = Instant::now();
    if summary.loaded {
        let sql = match load_plan.after {
            Maintenance::None => None,
            Maintenance::Analyze | Maintenance::AnalyzeFrozen | Maintenance::AnalyzeOnly => {
                Some(format!("ANALYZE {}", table.qualified()))
            }
            Maintenance::VacuumAnalyze => Some(format!("VACUUM (ANALYZE) {}", table.qualified())),
        };
        if let Some(sql) = sql {
            reporter.phase(Phase::Maintain {
                vacuum: load_plan.after == Maintenance::VacuumAnalyze,
            });
            let upkeep = control.batch_execute(&sql);
            let done = runtime.block_on(until_interrupted(upkeep, &control, target, opts));
            match done {
                _ if opts.interrupt.is_set() => notes.push(format!(
                    "{sql} skipped: interrupted (the rows are committed)"
                )),
                // The rows are committed; only the upkeep failed (usually: not the table's owner).
                Err(e) => notes.push(format!("{sql} failed: {}", crate::describe_pg_error(&e))),
                Ok(()) => {}
            }
        }
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
    notes.append(&mut summary.notes);
    summary.notes = notes;
    Ok(summary)
}

/// Runs `work` on `client` until it ends; if the user interrupts first, asks the server to
/// cancel it and waits for it to end.
pub(crate) async fn until_interrupted<T>(
    work: impl std::future::Future<Output = T>,
    client: &tokio_postgres::Client,
    target: &ConnectOptions,
    opts: &LoadOptions,
) -> T {
    tokio::pin!(work);
    loop {
        tokio::select! {
            done = &mut work => return done,
            _ = tokio::time::sleep(CANCEL_POLL) => if opts.interrupt.is_set() {
                // Best effort: when the cancel cannot reach the server, the work runs to its end.
                let _ = target.cancel(&client.cancel_token()).await;
                return work.await;
            }
        }
    }
}

/// `--check`: takes encoded chunks and counts their rows; nothing reaches the table.
async fn drain(chunks: flume::Receiver<inrush_load::worker::Chunk>, shared: &Shared) -> u64 {
    let mut rows = 0;
    while let Some(chunk) = sink::next_chunk(&chunks, shared).await {
        rows += chunk.rows;
    }
    rows
}

/// Deletes the rows the load's transactions inserted (their `xmin`); returns how many.
async fn undo(
    control: &tokio_postgres::Client,
    table: &TableInfo,
    txids: &[i64],
) -> crate::Result<u64> {
    // xmin is the 32-bit transaction id: the low half of txid_current()'s epoch-extended id.
    let xids: Vec<i64> = txids.iter().map(|t| t & 0xFFFF_FFFF).collect();
    let sql = format!(
        "DELETE FROM {} WHERE xmin::text::bigint = ANY($1)",
        table.qualified()
    );
    control
        .execute(&sql, &[&xids])
        .await
        .map_err(|cause| crate::Error::Query { what: sql, cause })
}

/// Best effort: a connection that cannot roll back is closed, which rolls back too.
async fn rollback(finished: &[Finished]) {
    let rollbacks = finished.iter().map(|f| f.client.batch_execute("ROLLBACK"));
    futures_util::future::join_all(rollbacks).await;
}

/// Commits every connection at once; reports exactly how many made it if not all did.
async fn commit(finished: &[Finished]) -> Result<()> {
    let commits = finished.iter().map(|f| f.client.batch_execute("COMMIT"));
    let results = futures_util::future::join_all(commits).await;
    let committed = results.iter().filter(|r| r.is_ok()).count();
    let Some(first_error) = results.into_iter().find_map(|r| r.err()) else {
        return Ok(());
    };
    if committed == 0 {
        return Err(crate::Error::Query {
            what: "COMMIT".into(),
            cause: first_error,
        }
        .into());
    }
    let rows_committed = finished.iter().map(|f| f.rows).sum::<u64>();
    Err(Error::PartialCommit {
        committed,
        connections: finished.len(),
        rows_committed,
        reason: crate::describe_pg_error(&first_error),
    })
}

/// Reads what the plan weighs (indexes, keys, size, per-row work) and decides. `emptied`: the
/// table counts as empty (`--truncate` empties it in the load's own transaction).
async fn decide_plan(
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
    let plan = LoadPlan::decide(
        &table.qualified(),
        table.partitioned,
        indexes,
        foreign_keys,
        size,
        input_size,
        opts,
    );
    Ok(plan.with_hidden_work(hidden).loaded_frozen(frozen))
}

/// The async runtime for the connections: one thread, since the CPU work is in the workers.
fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::Internal(format!("starting the async runtime: {e}")))
}

/// `inrush plan`: what a load of `input` into `table` would do around the COPY.
pub fn plan(
    target: &ConnectOptions,
    table: &str,
    input: Option<&str>,
    opts: inrush_load::PlanOptions,
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
    refuse_sqlite_only(&opts)?;
    let runtime = runtime()?;
    Ok(runtime.block_on(async {
        let client = target.connect().await?;
        let table = TableInfo::read(&client, table).await?;
        let mut plan = decide_plan(&client, &table, input_size, opts, false, false).await?;
        // As if the input fed every column, in binary, with nothing that keeps its order.
        plan.choose_sort(&table.columns, None);
        Ok::<_, crate::Error>(plan)
    })?)
}

/// Options PostgreSQL has no use for.
fn refuse_sqlite_only(plan: &inrush_load::PlanOptions) -> Result<()> {
    match plan.fast_unsafe {
        true => Err(Error::Usage("--fast-unsafe: for SQLite targets only (PostgreSQL's own trade of safety for speed is an UNLOGGED table, which inrush leaves to you)".into())),
        false => Ok(()),
    }
}

/// What `inrush recover` did.
#[derive(Debug, Default)]
pub struct Recovered {
    /// The definitions recreated.
    pub restored: Vec<ddl::JournalEntry>,
    /// Tables left alone: a running load (or another recover) holds their definitions and puts
    /// them back itself.
    pub busy: Vec<String>,
}

/// `inrush recover`: recreates what the DDL journal holds (for one table, or all), except the
/// definitions of a table another inrush session is loading or recovering.
pub fn recover(target: &ConnectOptions, table: Option<&str>) -> Result<Recovered> {
    let runtime = runtime()?;
    Ok(runtime.block_on(async {
        let client = target.connect().await?;
        let oid = match table {
            Some(name) => Some(TableInfo::read(&client, name).await?.oid),
            None => None,
        };
        let mut recovered = Recovered::default();
        let entries = ddl::pending(&client, oid).await?;
        let mut tables: Vec<u32> = entries.iter().map(|e| e.table_oid).collect();
        tables.sort_unstable();
        tables.dedup();
        for table_oid in tables {
            let of_table = entries.iter().filter(|e| e.table_oid == table_oid);
            // The claim lasts as long as `client`'s session, so until this recover ends.
            if !ddl::claim(&client, table_oid).await? {
                recovered
                    .busy
                    .extend(of_table.take(1).map(|e| e.table_name.clone()));
                continue;
            }
            let of_table: Vec<ddl::JournalEntry> = of_table.cloned().collect();
            ddl::restore(target, &of_table, 4).await?;
            recovered.restored.extend(of_table);
        }
        Ok::<_, crate::Error>(recovered)
    })?)
}
