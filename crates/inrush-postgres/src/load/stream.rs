//! The rows: readers, encode workers, the sort or order stage, and one COPY stream per
//! connection, each in its own transaction, with the watch beside them; then every transaction
//! committed together (or, under `--resume`, block by block already), or all rolled back.

use super::adapt::{self, Feed, Gate};
use super::blocks::BlockClaims;
use super::prepare::Prepared;
use super::sink::{self, Finished, Sessions};
use super::watch;
use crate::ledger::Book;
use crate::prepared::JointCommit;
use crate::route::ShardServer;
use crate::{ConnectOptions, SessionInfo};
use inrush_core::{Phase, Reporter};
use inrush_load::rejects::Rejects;
use inrush_load::stages::{
    join_workers, spawn_error, spawn_ticker, spawn_workers, start_readers, EndTicker, Shared,
};
use inrush_load::summary::{Blocks, Phases};
use inrush_load::{order, sort, Error, LoadOptions, LoadSummary, Result};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;
use tokio::runtime::Runtime;

/// Streams the rows and commits; the summary, and the transactions' ids (to undo the load if a
/// key put back after it does not hold). `record`: the input's identity, recorded in
/// `inrush.load_commits` just before the commit (see [`crate::commits`]).
#[allow(clippy::too_many_arguments)]
pub(super) fn stream(
    load: &mut Prepared,
    target: &ConnectOptions,
    opts: &LoadOptions,
    runtime: &Runtime,
    reporter: &dyn Reporter,
    started: Instant,
    waits: &super::waits::Waits,
    record: Option<&str>,
) -> Result<(LoadSummary, Vec<i64>)> {
    let (first, rejects) = (load.first.take(), load.rejects.take());
    let Prepared {
        control,
        progress,
        sources,
        header_names,
        input_name,
        session,
        table,
        resume,
        format,
        text_reason,
        staging,
        destinations,
        prelude,
        shards,
        shard_book,
        workers: plan,
        plan: load_plan,
        connections,
        parallelism,
        ordered,
        ..
    } = &*load;
    let (format, connections, ordered) = (*format, *connections, *ordered);
    let wal_before = runtime.block_on(SessionInfo::wal_lsn(control));
    let (sinks, watched) = runtime.block_on(connect_sinks(control, target, shards, connections))?;
    for session in &watched[0].sessions {
        waits.add(session.pid);
    }
    // --resume: other processes may load the same input; blocks are taken before they are read.
    let claims = match resume {
        Some((identity, _, _)) => {
            opts.interrupt.resumable();
            Some(Arc::new(BlockClaims::start(target, identity)?))
        }
        None => None,
    };
    // Where each server's sinks reconnect and record the blocks they commit.
    let resumable = resume
        .as_ref()
        .zip(claims.as_deref())
        .map(|((input, _, _), claims)| {
            let on_shards = shards
                .iter()
                .filter_map(|s| Some((&s.options, shard_book.clone()?)));
            sink::Resumable {
                input,
                servers: std::iter::once((target, Book::Target))
                    .chain(on_shards)
                    .collect(),
                claims,
            }
        });

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
    // By default only some of the connections stream at first, and a controller chooses how
    // many as the load goes (see `adapt`).
    let gate = parallelism
        .adaptive
        .then(|| Gate::new(parallelism.chosen, connections));
    // Readers are not scoped threads: a read from a pipe that never ends cannot be
    // interrupted, so a cancelled load leaves them behind instead of waiting for them.
    let readers = {
        let skip = resume.as_ref().map(|r| r.1.clone()).unwrap_or_default();
        let first_header = header_names.clone().filter(|_| sources.csv.header);
        start_readers(
            sources,
            first,
            first_header,
            skip,
            claims
                .clone()
                .map(|c| c as Arc<dyn inrush_load::resume::Claims>),
            // One reader numbers the units in the input's order.
            if ordered { 1 } else { opts.workers.max(1) },
            &shared,
            block_tx,
        )
        .map_err(spawn_error)?
    };
    let (finished, resolved) = std::thread::scope(|scope| -> Result<(Vec<Finished>, u64)> {
        let shared = &*shared;
        let spawn = |name: String| std::thread::Builder::new().name(name);
        let workers = spawn_workers(scope, plan, shared, opts.workers, block_rx, chunk_tx)?;
        let middle = match middle {
            Some((Some(key), from_workers, to_sinks)) => Some(
                spawn("inrush-sort".into())
                    .spawn_scoped(scope, move || {
                        let chunk_bytes = plan.chunk_bytes;
                        if let Err(e) = sort::run(key, from_workers, to_sinks, shared, chunk_bytes)
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
        let ticker = spawn_ticker(scope, &done, &opts.interrupt, shared, reporter, progress)?;
        let _end_ticker = EndTicker(&done);

        let finished = runtime.block_on(async {
            let streams = sinks.into_iter().enumerate().map(|(i, sessions)| {
                let chunks = Feed {
                    chunks: chunk_rx.clone(),
                    turn: gate.as_ref().map(|gate| (gate, i)),
                };
                let (plan, destinations, prelude, resumable) =
                    (&plan, &destinations, &prelude, &resumable);
                async move {
                    let streamed = match resumable {
                        Some(resumable) => {
                            sink::run_resumable(
                                sessions,
                                destinations,
                                format,
                                chunks,
                                shared,
                                plan,
                                resumable,
                            )
                            .await
                        }
                        None => {
                            sink::run(
                                sessions,
                                prelude,
                                destinations,
                                format,
                                chunks,
                                shared,
                                plan,
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
            let find_deadlocks = resume.is_none() && connections > 1;
            let from_query = opts.from_query.is_some();
            let watching = watch::watch(&watched, shared, find_deadlocks, from_query);
            let pids: Vec<i32> = watched[0].sessions.iter().map(|s| s.pid).collect();
            let adapting = adapt::control(gate.as_ref(), control, &pids, &chunk_rx, shared);
            let results = tokio::select! {
                results = futures_util::future::join_all(streams) => results,
                never = watching => match never {},
                never = adapting => match never {},
            };
            drop(chunk_rx);
            results.into_iter().flatten().collect::<Vec<_>>()
        });
        let resolved = join_workers(workers)?;
        if let Some(middle) = middle {
            middle
                .join()
                .map_err(|_| Error::Internal("the sort or order stage panicked".into()))?;
        }
        done.store(true, Ordering::Relaxed);
        let _ = ticker.join();
        Ok((finished, resolved))
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
    let rows: u64 = finished.iter().map(|f| f.rows).sum();
    let sent = progress.rows_sent.load(Ordering::Relaxed);
    let refused: u64 = finished.iter().map(|f| f.refused).sum();
    // --resume: blocks sent, then found committed by another process loading the same input.
    let blocks = Blocks {
        loaded: finished.iter().map(|f| f.blocks).sum(),
        by_others: finished.iter().map(|f| f.by_others.0).sum(),
        rows_by_others: finished.iter().map(|f| f.by_others.1).sum(),
        taken_over: 0,
    };
    if rows + refused + blocks.rows_by_others != sent || finished.len() != connections {
        runtime.block_on(rollback(&finished));
        return Err(Error::Internal(format!(
            "the server counted {rows} rows but {sent} were sent; rolled back"
        )));
    }

    // From here on a signal no longer rolls back: the commit and a stop agree on which
    // came first (see `Interrupt`).
    let stopped = match opts.check_only {
        // Under --on-conflict these commits fill the staging table only: the merge into the
        // table is the commit window (see `Staging::merge`).
        false if staging.is_none() => !opts.interrupt.begin_commit(),
        _ => opts.interrupt.is_set(),
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
    // With --resume every chunk committed on its own already. Across shards, why the commit
    // is not two-phase, when it is not.
    let mut one_phase_reason = None;
    if opts.check_only {
        // --check: every row met the server's checks; none stays. Under --on-conflict the rows
        // are in the staging table, which the merge reads in a transaction it rolls back.
        match staging.is_some() {
            true => runtime.block_on(commit(&finished))?,
            false => runtime.block_on(rollback(&finished)),
        }
    } else if resume.is_none() {
        if let Some(identity) = record {
            // Without the record a rerun would load the rows twice should the rebuild fail
            // after the commit: no record, no commit.
            // Only the transactions that wrote rows: one that wrote nothing commits without
            // waiting for its commit record to reach the disk, so a crash may leave it aborted.
            let wrote = finished.iter().filter(|f| f.rows > 0);
            let txids: Vec<i64> = wrote.map(|f| f.txid).collect();
            let recorded = crate::commits::record(control, table, identity, rows, &txids);
            if let Err(e) = runtime.block_on(recorded) {
                runtime.block_on(rollback(&finished));
                return Err(e.into());
            }
        }
        reporter.phase(Phase::Commit);
        let (joint, why_not) = runtime.block_on(joint_commit(control, shards, connections))?;
        one_phase_reason = why_not;
        match joint {
            Some(joint) => runtime.block_on(commit_prepared(control, joint, &finished))?,
            None => runtime.block_on(commit(&finished))?,
        }
    }
    let blocks = claims.map(|claims| {
        let (by_others, rows_by_others, taken_over) = claims.by_others();
        Blocks {
            by_others: blocks.by_others + by_others,
            rows_by_others: blocks.rows_by_others + rows_by_others,
            taken_over,
            ..blocks
        }
    });
    let merged = match &staging {
        Some(st) => Some(runtime.block_on(st.merge(control, target, opts))?),
        _ => None,
    };
    let wal_after = runtime.block_on(SessionInfo::wal_lsn(control));
    let seconds = started.elapsed().as_secs_f64();
    let bytes = progress.bytes_read.load(Ordering::Relaxed);
    let txids = finished.iter().map(|f| f.txid).collect();
    let chosen = gate.map_or_else(|| parallelism.clone(), |gate| gate.parallelism());
    // Merged: the rows that reached the table, and what happened to the others.
    let commit_note = (!shards.is_empty() && !opts.check_only).then(|| match one_phase_reason {
        _ if resume.is_some() => format!(
            "--resume: each block committed on its own on the {} foreign server(s) it has rows for, then on the target, not with two-phase commit: each server's ledger says which blocks it has",
            shards.len()
        ),
        None => format!(
            "committed on the target and {} foreign server(s) together, with two-phase commit",
            shards.len()
        ),
        Some(why) => format!(
            "committed one transaction per server on the target and {} foreign server(s), not with two-phase commit ({why}): a failure between the first COMMIT and the last would be reported as a partial commit",
            shards.len()
        ),
    });
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
            input: input_name.clone(),
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
            connections: chosen.chosen,
            parallelism: chosen,
            workers: opts.workers.max(1),
            copy_format: format.name(),
            text_reason: text_reason.clone(),
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
            check_skipped: None,
            rows_resumed: resume.as_ref().map_or(0, |r| r.2),
            blocks,
            plan: load_plan.clone(),
            phases: Phases::default(),
            notes: merge_note.into_iter().chain(commit_note).collect(),
        },
        txids,
    ))
}

/// Every sink's sessions (on the target, and on each shard), and the same sessions grouped by
/// server for the watch.
async fn connect_sinks<'a>(
    control: &'a tokio_postgres::Client,
    target: &'a ConnectOptions,
    shards: &'a [ShardServer],
    connections: usize,
) -> crate::Result<(Vec<Sessions>, Vec<watch::Watched<'a>>)> {
    let connects = (0..connections).map(|_| async {
        let client = target.connect().await?;
        let shards = futures_util::future::try_join_all(shards.iter().map(|s| s.options.connect()));
        Ok::<_, crate::Error>(Sessions {
            client,
            shards: shards.await?,
        })
    });
    let sinks = futures_util::future::try_join_all(connects).await?;
    let mut watched = vec![watch::Watched {
        control,
        target,
        sessions: Vec::new(),
    }];
    watched.extend(shards.iter().map(|s| watch::Watched {
        control: &s.control,
        target: &s.options,
        sessions: Vec::new(),
    }));
    for sink in &sinks {
        watched[0]
            .sessions
            .push(watch::Session::of(&sink.client).await?);
        for (k, shard) in sink.shards.iter().enumerate() {
            watched[k + 1]
                .sessions
                .push(watch::Session::of(shard).await?);
        }
    }
    Ok((sinks, watched))
}

/// The load's two-phase commit, logged, when it writes to shards and every server can hold
/// each connection's transaction prepared (`max_prepared_transactions`) and the log can be
/// written; else why not (`None` for a load on the target alone).
async fn joint_commit(
    control: &tokio_postgres::Client,
    shards: &[ShardServer],
    connections: usize,
) -> crate::Result<(Option<JointCommit>, Option<String>)> {
    if shards.is_empty() {
        return Ok((None, None));
    }
    let slots = crate::prepared::slots(control).await?;
    let enough = |slots: i64| slots >= connections as i64;
    if !enough(slots) || !shards.iter().all(|s| enough(s.prepared_slots)) {
        let why = format!("max_prepared_transactions is below {connections} on one of them");
        return Ok((None, Some(why)));
    }
    let servers: Vec<String> = shards.iter().map(|s| s.shard.server.clone()).collect();
    Ok(match JointCommit::begin(control, &servers).await {
        Ok(joint) => (Some(joint), None),
        Err(e) => (None, Some(format!("its log on the target: {e}"))),
    })
}

/// Every session of every sink: on the target first, then on each shard.
fn all_sessions(finished: &[Finished]) -> impl Iterator<Item = &tokio_postgres::Client> {
    finished
        .iter()
        .flat_map(|f| std::iter::once(&f.client).chain(&f.shards))
}

/// Best effort: a connection that cannot roll back is closed, which rolls back too.
async fn rollback(finished: &[Finished]) {
    let rollbacks = all_sessions(finished).map(|c| c.batch_execute("ROLLBACK"));
    futures_util::future::join_all(rollbacks).await;
}

/// All or nothing across servers (see [`crate::prepared`]): every transaction PREPAREd, the
/// decision logged, then each COMMIT PREPARED. A failed PREPARE rolls every one back; a COMMIT
/// PREPARED that fails after the decision leaves that transaction prepared on its server, the
/// error names it, and `inrush recover` commits it.
async fn commit_prepared(
    control: &tokio_postgres::Client,
    joint: JointCommit,
    finished: &[Finished],
) -> Result<()> {
    let gids: Vec<(&tokio_postgres::Client, String)> = all_sessions(finished)
        .enumerate()
        .map(|(n, c)| (c, joint.gid(n)))
        .collect();
    let prepared = on_each(&gids, |_, gid| format!("PREPARE TRANSACTION '{gid}'")).await;
    if let Some(first_error) = prepared.iter().find_map(|r| r.as_ref().err()) {
        let reason = crate::describe_pg_error(first_error);
        // A session whose PREPARE failed still has its transaction open.
        on_each(&gids, |n, gid| match prepared[n].is_ok() {
            true => format!("ROLLBACK PREPARED '{gid}'"),
            false => "ROLLBACK".to_string(),
        })
        .await;
        joint.end(control).await;
        return Err(Error::from(crate::Error::Server(format!(
            "PREPARE TRANSACTION failed, every server rolled back: {reason}"
        ))));
    }
    if let Err(e) = joint.decide(control).await {
        on_each(&gids, |_, gid| format!("ROLLBACK PREPARED '{gid}'")).await;
        joint.end(control).await;
        return Err(e.into());
    }
    let results = on_each(&gids, |_, gid| format!("COMMIT PREPARED '{gid}'")).await;
    let left: Vec<&str> = gids
        .iter()
        .zip(&results)
        .filter(|(_, r)| r.is_err())
        .map(|((_, gid), _)| gid.as_str())
        .collect();
    let Some(first_error) = results.iter().find_map(|r| r.as_ref().err()) else {
        joint.end(control).await;
        return Ok(());
    };
    Err(Error::PartialCommit {
        committed: gids.len() - left.len(),
        connections: gids.len(),
        rows_committed: finished.iter().map(|f| f.rows).sum(),
        reason: format!(
            "{}; still prepared, committed by `inrush recover`: {}",
            crate::describe_pg_error(first_error),
            left.join(", ")
        ),
    })
}

/// Runs `sql(n, gid)` on each (`n`th) session at once; each one's result, in `gids`' order.
async fn on_each(
    gids: &[(&tokio_postgres::Client, String)],
    sql: impl Fn(usize, &str) -> String,
) -> Vec<Result<(), tokio_postgres::Error>> {
    let runs = gids.iter().enumerate().map(|(n, (client, gid))| {
        let statement = sql(n, gid);
        async move { client.batch_execute(&statement).await }
    });
    futures_util::future::join_all(runs).await
}

/// Commits every connection at once; reports exactly how many made it if not all did.
async fn commit(finished: &[Finished]) -> Result<()> {
    let commits = all_sessions(finished).map(|c| c.batch_execute("COMMIT"));
    let results = futures_util::future::join_all(commits).await;
    let committed = results.iter().filter(|r| r.is_ok()).count();
    let sessions = results.len();
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
        connections: sessions,
        rows_committed,
        reason: crate::describe_pg_error(&first_error),
    })
}
