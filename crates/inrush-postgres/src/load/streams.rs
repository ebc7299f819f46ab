//! The rows: one COPY stream per connection, each in its own transaction, with the watch and
//! the adaptive controller beside them; then every transaction committed together (or, under
//! `--resume`, block by block already), or all rolled back.

use super::adapt::{self, Feed, Gate};
use super::blocks::BlockClaims;
use super::sink::{self, Finished, Sessions};
use super::{watch, Load, PostgresTarget};
use crate::ledger::Book;
use crate::prepared::JointCommit;
use crate::route::ShardServer;
use crate::{outcome, ConnectOptions, SessionInfo};
use inrush_core::{Phase, Reporter};
use inrush_load::resume::Claims;
use inrush_load::stages::Shared;
use inrush_load::summary::{Blocks, Log};
use inrush_load::target::{self, Committed, Streams};
use inrush_load::worker::{Chunk, WorkerPlan};
use inrush_load::{Error, LoadOptions, Result};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// The load's COPY sinks, on the load's sessions while they stream; dropped before their
/// commit, they roll every transaction back.
pub(super) struct PgStreams<'t> {
    target: &'t PostgresTarget,
    load: &'t mut Load,
    /// Each connection's sessions, until they stream.
    sinks: Vec<Sessions>,
    /// The sinks' sessions on each server, the target's first, for the watch.
    watched: Vec<Vec<watch::Session>>,
    /// `--resume`: the blocks this process reads, among the others loading the same input.
    claims: Option<Arc<BlockClaims>>,
    /// The adaptive number of streaming connections (see `adapt`).
    gate: Option<Gate>,
    /// The transactions whose COPY finished, open until the commit.
    finished: Vec<Finished>,
    wal_before: Option<u64>,
    /// The rows come from a `--from-query`, which may run on the target's server.
    from_query: bool,
}

impl<'t> PgStreams<'t> {
    /// Connects every sink's sessions (on the target and each shard) for `load`.
    pub(super) fn open(
        target: &'t PostgresTarget,
        load: &'t mut Load,
        opts: &LoadOptions,
    ) -> Result<PgStreams<'t>> {
        let runtime = &target.runtime;
        let wal_before = runtime.block_on(SessionInfo::wal_lsn(&load.control));
        let parallelism = load.parallelism.clone();
        let mut streams = PgStreams {
            target,
            load,
            sinks: Vec::new(),
            watched: Vec::new(),
            claims: None,
            gate: None,
            finished: Vec::new(),
            wal_before,
            from_query: opts.from_query.is_some(),
        };
        let load = &*streams.load;
        let (sinks, watched) = runtime.block_on(connect_sinks(
            &load.target,
            &load.shards,
            parallelism.opened,
        ))?;
        for session in &watched[0] {
            target.waits.add(session.pid);
        }
        // --resume: other processes may load the same input; blocks are taken before they
        // are read.
        let claims = match &load.identity {
            Some(identity) => {
                opts.interrupt.resumable();
                Some(Arc::new(BlockClaims::start(&load.target, identity)?))
            }
            None => None,
        };
        // By default only some of the connections stream at first, and a controller chooses
        // how many as the load goes (see `adapt`).
        streams.gate = parallelism
            .adaptive
            .then(|| Gate::new(parallelism.chosen, parallelism.opened));
        (streams.sinks, streams.watched, streams.claims) = (sinks, watched, claims);
        Ok(streams)
    }

    /// Every sink streams until the queue closes, with the watch and the controller beside.
    fn stream(&mut self, chunks: flume::Receiver<Chunk>, plan: &WorkerPlan, shared: &Shared) {
        let load = &*self.load;
        let sinks = std::mem::take(&mut self.sinks);
        let connections = sinks.len();
        let gate = self.gate.as_ref();
        let claims = self.claims.as_deref();
        // Where each server's sinks reconnect and record the blocks they commit.
        let resumable = load.identity.as_ref().zip(claims).map(|(input, claims)| {
            let on_shards = load
                .shards
                .iter()
                .filter_map(|s| Some((&s.options, load.shard_book.clone()?)));
            sink::Resumable {
                input,
                servers: std::iter::once((&load.target, Book::Target))
                    .chain(on_shards)
                    .collect(),
                claims,
            }
        });
        let mut sessions = std::mem::take(&mut self.watched).into_iter();
        let mut watched = vec![watch::Watched {
            control: &load.control,
            target: &load.target,
            sessions: sessions.next().unwrap_or_default(),
        }];
        watched.extend(
            load.shards
                .iter()
                .zip(sessions)
                .map(|(s, sessions)| watch::Watched {
                    control: &s.control,
                    target: &s.options,
                    sessions,
                }),
        );
        let (format, destinations, prelude) = (load.format, &load.destinations, &load.prelude);
        let finished = self.target.runtime.block_on(async {
            let streams = sinks.into_iter().enumerate().map(|(i, sessions)| {
                let chunks = Feed {
                    chunks: chunks.clone(),
                    turn: gate.map(|gate| (gate, i)),
                };
                let resumable = &resumable;
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
            let find_deadlocks = resumable.is_none() && connections > 1;
            let from_query = self.from_query;
            let watching = watch::watch(&watched, shared, find_deadlocks, from_query);
            let pids: Vec<i32> = watched[0].sessions.iter().map(|s| s.pid).collect();
            let adapting = adapt::control(gate, &load.control, &pids, &chunks, shared);
            let results = tokio::select! {
                results = futures_util::future::join_all(streams) => results,
                never = watching => match never {},
                never = adapting => match never {},
            };
            drop(chunks);
            results.into_iter().flatten().collect::<Vec<_>>()
        });
        // Every row sent is in a transaction, or in the reject file, or committed by another
        // process loading the same input.
        let rows: u64 = finished.iter().map(|f| f.rows).sum();
        let refused: u64 = finished.iter().map(|f| f.refused).sum();
        let by_others: u64 = finished.iter().map(|f| f.by_others.1).sum();
        let sent = shared.progress.rows_sent.load(Ordering::Relaxed);
        if !shared.is_cancelled()
            && (rows + refused + by_others != sent || finished.len() != connections)
        {
            shared.fail(Error::Internal(format!(
                "the server counted {rows} rows but {sent} were sent; rolled back"
            )));
        }
        self.finished = finished;
    }
}

impl Streams for PgStreams<'_> {
    fn connections(&self) -> usize {
        self.load.parallelism.opened
    }

    /// Twice the connections that stream at first.
    fn queue(&self, _: usize) -> usize {
        self.load.parallelism.chosen.max(1) * 2
    }

    fn claims(&self) -> Option<Arc<dyn Claims>> {
        self.claims.clone().map(|c| c as Arc<dyn Claims>)
    }

    fn write(&mut self, chunks: flume::Receiver<Chunk>, plan: &WorkerPlan, shared: &Shared) -> u64 {
        self.stream(chunks, plan, shared);
        self.finished.iter().map(|f| f.rows).sum()
    }

    fn commit(
        mut self: Box<Self>,
        opts: &LoadOptions,
        reporter: &dyn Reporter,
        record: Option<&str>,
        written: u64,
    ) -> Result<Option<Committed>> {
        let finished = std::mem::take(&mut self.finished);
        let committed = self.commit_finished(&finished, opts, reporter, record, written);
        if committed.is_err() {
            self.target.runtime.block_on(rollback(&finished));
        }
        committed.map(Some)
    }
}

impl PgStreams<'_> {
    /// Commits (or, for `--check`, rolls back) `finished`, merges the staging table, and says
    /// what the load did.
    fn commit_finished(
        &mut self,
        finished: &[Finished],
        opts: &LoadOptions,
        reporter: &dyn Reporter,
        record: Option<&str>,
        written: u64,
    ) -> Result<Committed> {
        let runtime = &self.target.runtime;
        let load = &mut *self.load;
        let resumable = load.identity.is_some();
        let servers: Vec<&ConnectOptions> = std::iter::once(&load.target)
            .chain(load.shards.iter().map(|s| &s.options))
            .collect();
        let limit = load.target.network_timeout();
        let commit = |recorded| commit(finished, &servers, limit, recorded);
        // Under --on-conflict these commits fill the staging table only: the merge into the
        // table is the commit window (see `Staging::merge`).
        let enters = !opts.check_only && load.staging.is_none();
        target::into_commit(&opts.interrupt, enters, resumable.then_some(written))?;
        // With --resume every chunk committed on its own already. Across shards, why the
        // commit is not two-phase, when it is not.
        let mut one_phase_reason = None;
        let mut prepared = Vec::new();
        let mut recorded = false;
        let mut unrecorded = Vec::new();
        if opts.check_only {
            // --check: every row met the server's checks; none stays. Under --on-conflict the
            // rows are in the staging table, which the merge reads in a transaction it rolls
            // back.
            match load.staging.is_some() {
                true => runtime.block_on(commit(false))?,
                false => runtime.block_on(rollback(finished)),
            }
        } else if let Some(part) = &opts.prepare {
            // A task of a distributed write: its job commits it, with the others.
            reporter.phase(Phase::Commit);
            prepared = match &load.part_table {
                Some(table) => {
                    runtime.block_on(commit(false))?;
                    let open = crate::job::staged_part_done(&load.control, part, &table.name);
                    runtime.block_on(open)?;
                    vec![table.name.clone()]
                }
                None => {
                    let sessions: Vec<&tokio_postgres::Client> = all_sessions(finished).collect();
                    let gids = crate::job::prepare_part(&load.control, part, &sessions);
                    runtime.block_on(gids)?
                }
            };
        } else if !resumable {
            recorded = match record {
                Some(identity) => {
                    let said = &mut unrecorded;
                    record_load(load, runtime, finished, (identity, written), said)?
                }
                None => false,
            };
            reporter.phase(Phase::Commit);
            let connections = finished.len();
            let joint = joint_commit(&load.control, &load.shards, connections);
            let (joint, why_not) = runtime.block_on(joint)?;
            one_phase_reason = why_not;
            match joint {
                Some(joint) => {
                    let sessions: Vec<&ConnectOptions> = finished
                        .iter()
                        .flat_map(|_| servers.iter().copied())
                        .collect();
                    runtime.block_on(commit_prepared(&load.control, joint, finished, &sessions))?
                }
                None => runtime.block_on(commit(recorded))?,
            }
        }
        load.txids = finished.iter().map(|f| f.txid).collect();
        let blocks = self.claims.as_ref().map(|claims| {
            let (by_others, rows_by_others, taken_over) = claims.by_others();
            Blocks {
                loaded: finished.iter().map(|f| f.blocks).sum(),
                by_others: finished.iter().map(|f| f.by_others.0).sum::<u64>() + by_others,
                rows_by_others: finished.iter().map(|f| f.by_others.1).sum::<u64>()
                    + rows_by_others,
                taken_over,
            }
        });
        let merged = match &load.staging {
            Some(st) => Some(runtime.block_on(st.merge(&load.control, &load.target, opts))?),
            None => None,
        };
        let wal_after = runtime.block_on(SessionInfo::wal_lsn(&load.control));
        let mut notes = std::mem::take(&mut load.notes);
        notes.extend(unrecorded);
        if let Some(affected) = merged {
            notes.push(format!(
                "--on-conflict {}: {written} input rows, {affected} inserted or updated, {} skipped",
                opts.on_conflict.name(),
                written - affected.min(written)
            ));
        }
        notes.extend(commit_note(load, opts, one_phase_reason));
        let parallelism = match &self.gate {
            Some(gate) => gate.parallelism(),
            None => load.parallelism.clone(),
        };
        Ok(Committed {
            notes,
            rows: merged,
            parallelism: Some(parallelism),
            blocks,
            log: self.wal_before.zip(wal_after).map(|(b, a)| Log {
                name: "WAL",
                bytes: a.saturating_sub(b),
            }),
            prepared,
            recorded,
            ..Committed::default()
        })
    }
}

/// Records the load of `identity` before its COMMIT (see [`crate::commits`]), with the
/// transactions that wrote rows: one that wrote nothing commits without waiting for its commit
/// record to reach the disk, so a crash may leave it aborted. A load that dropped definitions
/// commits only with its record (a rerun after a failed rebuild would load the rows twice);
/// any other goes on without one where the role may not write it, and says so in `notes`.
/// Whether it was recorded.
fn record_load(
    load: &Load,
    runtime: &tokio::runtime::Runtime,
    finished: &[Finished],
    (identity, written): (&str, u64),
    notes: &mut Vec<String>,
) -> Result<bool> {
    let txids: Vec<i64> = finished
        .iter()
        .filter(|f| f.rows > 0)
        .map(|f| f.txid)
        .collect();
    let recorded = crate::commits::record(&load.control, &load.table, identity, written, &txids);
    match runtime.block_on(recorded) {
        Ok(()) => Ok(true),
        Err(e) if load.dropped.is_empty() && e.is_permission_denied() => {
            notes.push(format!(
                "the load kept no record of its commit ({e}): had the COMMIT's answer been lost with the server out of reach, running it again could not have told whether its rows were in"
            ));
            Ok(false)
        }
        Err(e) => Err(e.into()),
    }
}

/// How a load routed to foreign servers committed on them.
fn commit_note(load: &Load, opts: &LoadOptions, one_phase: Option<String>) -> Option<String> {
    let shards = load.shards.len();
    if shards == 0 || opts.check_only {
        return None;
    }
    Some(match one_phase {
        _ if load.identity.is_some() => format!(
            "--resume: each block committed on its own on the {shards} foreign server(s) it has rows for, then on the target, not with two-phase commit: each server's ledger says which blocks it has"
        ),
        None => format!(
            "committed on the target and {shards} foreign server(s) together, with two-phase commit"
        ),
        Some(why) => format!(
            "committed one transaction per server on the target and {shards} foreign server(s), not with two-phase commit ({why}): a failure between the first COMMIT and the last would be reported as a partial commit"
        ),
    })
}

impl Drop for PgStreams<'_> {
    /// Rolls back what did not commit; the load's `end` puts back what it dropped.
    fn drop(&mut self) {
        if !self.finished.is_empty() {
            self.target.runtime.block_on(rollback(&self.finished));
        }
    }
}

/// Every sink's sessions (on the target, and on each shard), and the same sessions grouped by
/// server (the target's first) for the watch.
async fn connect_sinks(
    target: &ConnectOptions,
    shards: &[ShardServer],
    connections: usize,
) -> crate::Result<(Vec<Sessions>, Vec<Vec<watch::Session>>)> {
    let connects = (0..connections).map(|_| async {
        let client = target.connect().await?;
        let shards = futures_util::future::try_join_all(shards.iter().map(|s| s.options.connect()));
        Ok::<_, crate::Error>(Sessions {
            client,
            shards: shards.await?,
            pids: Vec::new(),
            shard_txids: Vec::new(),
        })
    });
    let mut sinks = futures_util::future::try_join_all(connects).await?;
    let mut watched: Vec<Vec<watch::Session>> = (0..=shards.len()).map(|_| Vec::new()).collect();
    for sink in &mut sinks {
        let sessions = std::iter::once(&sink.client).chain(&sink.shards);
        for (k, session) in sessions.enumerate() {
            let session = watch::Session::of(session).await?;
            sink.pids.push(session.pid);
            watched[k].push(session);
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
    let slots = crate::activity::prepared_slots(control).await?;
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
/// error names it, and `inrush recover` commits it. A statement whose answer is lost on the
/// wire is finished over a new connection ([`crate::prepared::finish_apart`]): a PREPARE
/// that may have landed is rolled back there, a COMMIT PREPARED committed there, since the
/// decision is logged. `servers`: each session's, in [`all_sessions`]' order.
async fn commit_prepared(
    control: &tokio_postgres::Client,
    joint: JointCommit,
    finished: &[Finished],
    servers: &[&ConnectOptions],
) -> Result<()> {
    let gids: Vec<(&tokio_postgres::Client, String)> = all_sessions(finished)
        .enumerate()
        .map(|(n, c)| (c, joint.gid(n)))
        .collect();
    let pids = finished.iter().flat_map(|f| f.pids.iter().copied());
    let apart: Vec<(&ConnectOptions, i32, &str)> = servers
        .iter()
        .zip(pids)
        .zip(&gids)
        .map(|((server, pid), (_, gid))| (*server, pid, gid.as_str()))
        .collect();
    let prepared = on_each(&gids, |_, gid| format!("PREPARE TRANSACTION '{gid}'")).await;
    let prepared_reason = prepared
        .iter()
        .find_map(|r| r.as_ref().err())
        .map(crate::describe_pg_error);
    if prepared.iter().any(|r| r.is_err()) {
        // A session whose PREPARE failed still has its transaction open (one whose answer was
        // lost has no session left, and its transaction may be prepared: see `settle_lost`).
        on_each(&gids, |n, gid| match prepared[n].is_ok() {
            true => format!("ROLLBACK PREPARED '{gid}'"),
            false => "ROLLBACK".to_string(),
        })
        .await;
        let lost = prepared.into_iter().map(|r| {
            r.or_else(|e| match e.as_db_error() {
                Some(_) => Ok(()),
                None => Err(e),
            })
        });
        let settled = settle_lost(lost.collect(), &apart, false).await;
        joint.end(control).await;
        let reason = prepared_reason.unwrap_or_default();
        let left: Vec<String> = settled.into_iter().filter_map(|r| r.err()).collect();
        return Err(Error::from(crate::Error::Server(match left.is_empty() {
            true => format!("PREPARE TRANSACTION failed, every server rolled back: {reason}"),
            false => format!(
                "PREPARE TRANSACTION failed ({reason}); every server rolled back but where {}: `inrush recover` rolls that back",
                left.join("; ")
            ),
        })));
    }
    if let Err(e) = joint.decide(control).await {
        on_each(&gids, |_, gid| format!("ROLLBACK PREPARED '{gid}'")).await;
        joint.end(control).await;
        return Err(e.into());
    }
    let results = on_each(&gids, |_, gid| format!("COMMIT PREPARED '{gid}'")).await;
    let results = settle_lost(results, &apart, true).await;
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
        // A sink's rows count with its session on the target (see `commit`).
        rows_committed: finished
            .iter()
            .flat_map(|f| std::iter::once(f.rows).chain(f.shards.iter().map(|_| 0)))
            .zip(&results)
            .filter_map(|(rows, r)| r.is_ok().then_some(rows))
            .sum(),
        reason: format!(
            "{first_error}; still prepared, committed by `inrush recover`: {}",
            left.join(", ")
        ),
    })
}

/// Each result, those whose answer was lost on the wire finished over a new connection to
/// their session's server (`apart`: server, session's process, transaction), committed or
/// rolled back: what stays an error says why, in words.
async fn settle_lost(
    results: Vec<std::result::Result<(), tokio_postgres::Error>>,
    apart: &[(&ConnectOptions, i32, &str)],
    commit: bool,
) -> Vec<std::result::Result<(), String>> {
    let settled = results
        .into_iter()
        .zip(apart)
        .map(|(r, &(server, pid, gid))| async move {
            match r {
                Err(e) if e.as_db_error().is_none() => {
                    let finished = crate::prepared::finish_apart(server, pid, gid, commit).await;
                    let lost = crate::describe_pg_error(&e);
                    finished.map_err(|again| {
                        format!("{lost}; finishing {gid} over a new connection: {again}")
                    })
                }
                r => r.map_err(|e| crate::describe_pg_error(&e)),
            }
        });
    futures_util::future::join_all(settled).await
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

/// Commits every connection at once. A COMMIT whose answer is lost is settled by asking the
/// server (see [`crate::outcome`]), so what is reported is what each transaction did: every
/// one committed, none, some (counting the rows of those that did), or some not known.
/// `servers`: the target's, then each shard's; `recorded`: the load recorded itself.
async fn commit(
    finished: &[Finished],
    servers: &[&ConnectOptions],
    limit: Duration,
    recorded: bool,
) -> Result<()> {
    let pending: Vec<(outcome::Pending, u64)> = finished
        .iter()
        .flat_map(|f| {
            let txids = std::iter::once(f.txid).chain(f.shard_txids.iter().copied());
            let clients = std::iter::once(&f.client).chain(&f.shards);
            // A sink's rows count with its session on the target: a routed sink's shares
            // are not counted apart.
            let rows = std::iter::once(f.rows).chain(std::iter::repeat(0));
            clients.zip(txids).zip(&f.pids).zip(servers).zip(rows).map(
                |((((client, txid), &pid), server), rows)| {
                    let pending = outcome::Pending {
                        client,
                        server,
                        pid,
                        txid,
                    };
                    (pending, rows)
                },
            )
        })
        .collect();
    let commits = pending.iter().map(|(p, _)| outcome::commit(p, limit));
    let fates = futures_util::future::join_all(commits).await;
    let fates = fates.into_iter().zip(pending.iter().map(|(_, rows)| *rows));
    inrush_load::commits::judge_commits(fates.collect(), recorded)
}
