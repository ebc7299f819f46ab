//! Distributed writes (a Spark job): tasks in other processes load their parts, the job's
//! coordinator decides once for all of them (see `inrush_load::job`).
//!
//! 1. The coordinator logs the job in `inrush.joint_commits`, undecided, with its table
//!    ([`begin`]), and says how the parts are to wait.
//! 2. Each task loads its part and leaves it *prepared* (its transactions end with PREPARE
//!    TRANSACTION `inrush_<job>_<part>_<n>`: [`prepare_part`]) or *staged* (committed into the
//!    part's own unlogged table, `inrush."stage_<job>_<part>"`: [`crate::parts::PartTable`]), then
//!    checks that the job is still undecided; one that finds it decided (a straggling attempt)
//!    takes its part back, since the coordinator's sweep of the job may have passed.
//! 3. The coordinator commits the parts of the attempts it keeps and takes back every other
//!    one (`inrush_load::job::commit` over `PgJobs`). Prepared: the decision is logged first, naming the winners, then each
//!    is committed (a dead coordinator's decision is finished by `inrush recover`, which never
//!    lands a loser). Staged: one transaction empties the table (an overwrite), moves the
//!    winners' rows into it and drops every part table, so readers see the old rows or the
//!    new, and there is nothing to finish after a crash.
//!
//! A streaming query's micro-batch is a job named for the query and batch, begun by its
//! tasks (the first one logs it), and its decision also records the batch in
//! `inrush.stream_batches`: a replayed batch (a query restarted from its checkpoint after the
//! target took the batch but Spark had not noted it) finds itself there, loads nothing, and
//! its commit lands nothing.
//!
//! A recover beside a decision waits for it (an advisory lock on the job's name); one that
//! runs while the tasks write takes the job back whole, and the commit then finds a winner
//! gone and lands nothing.

mod plan;

use crate::parts::{drop_tables, part_tables};
use crate::prepared::{create_log, finish_one, lock_key, prepared_of};
use crate::{query_error, quote_ident, ConnectOptions, Error, Result, TableInfo};
use inrush_load::job::{Batch, Decided, JobOutcome, JobStep, Jobs, Logged, Parts, Prepare};
use tokio_postgres::Client;

/// One step of job `job` on `target`, with the watch beside it: a server that leaves it
/// unanswered for the network timeout cuts the step's sessions (see `inrush_load::pulse`).
pub fn step(target: &ConnectOptions, job: &str, step: &JobStep) -> inrush_load::Result<JobOutcome> {
    let job = inrush_load::job::job_name(job)?;
    let runtime = inrush_load::target::runtime()?;
    let waits = crate::waits::Waits::default();
    let done = waits.around(target, &inrush_core::Silent, || {
        runtime.block_on(run(target, job, step))
    });
    inrush_load::pulse::explained(done, "PostgreSQL", target.cut_because())
}

async fn run(
    target: &ConnectOptions,
    job: &str,
    step: &JobStep,
) -> inrush_load::Result<JobOutcome> {
    let mut jobs = PgJobs::connect(target).await?;
    let done = match step {
        JobStep::Begin {
            table,
            overwrite,
            parts,
            batch,
            keep_indexes,
        } => {
            let how = (*overwrite, *parts, *keep_indexes);
            let client = jobs.session().await?;
            return Ok(begin(client, job, table, how, batch.as_ref()).await?);
        }
        JobStep::Commit { winners, batch } => {
            let row = log_row(jobs.session().await?, job).await?;
            jobs.lock(job).await?;
            let decided = inrush_load::job::commit(&mut jobs, job, winners, batch.as_ref()).await;
            jobs.unlock().await;
            let landed = decided.as_ref().is_ok_and(|o| !o.committed.is_empty());
            after_decision(&mut jobs, job, row, landed, decided).await
        }
        JobStep::Abort => {
            let row = log_row(jobs.session().await?, job).await?;
            jobs.lock(job).await?;
            let finished = inrush_load::job::abort(&mut jobs, job).await;
            jobs.unlock().await;
            let landed = finished.as_ref().is_ok_and(|o| !o.committed.is_empty());
            after_decision(&mut jobs, job, row, landed, finished).await
        }
    };
    done.map(|mut outcome| {
        outcome.notes.append(&mut jobs.notes);
        outcome
    })
}

/// A job's row in `inrush.joint_commits`.
struct LogRow {
    decided: bool,
    winners: Vec<String>,
    staged: bool,
    /// The table, qualified.
    target: String,
    overwrite: bool,
    /// Its begin dropped what its decision builds again ([`plan`]), and runs `upkeep` after.
    planned: bool,
    upkeep: Option<String>,
}

async fn log_row(control: &Client, job: &str) -> Result<Option<LogRow>> {
    if !crate::catalog::relations_exist(control, &["inrush.joint_commits"]).await? {
        return Ok(None);
    }
    let row = control
        .query_opt(
            "SELECT decided, coalesce(winners, '{}'), staged, coalesce(target, ''), overwrite, \
             planned, upkeep FROM inrush.joint_commits WHERE load_id = $1",
            &[&job],
        )
        .await
        .map_err(query_error("reading the distributed write's log"))?;
    Ok(row.map(|r| LogRow {
        decided: r.get(0),
        winners: r.get(1),
        staged: r.get(2),
        target: r.get(3),
        overwrite: r.get(4),
        planned: r.get(5),
        upkeep: r.get(6),
    }))
}

/// A planned job's table, put back after its decision (`decided`, which `landed` rows, or an
/// overwrite's), whichever way it went, once the job is gone from the log. A job still logged
/// has prepared parts waiting for `recover` (a decision that failed part way): an index
/// build would wait on their locks, so `recover` builds after it has finished them.
async fn after_decision(
    jobs: &mut PgJobs<'_>,
    job: &str,
    row: Option<LogRow>,
    landed: bool,
    decided: inrush_load::Result<JobOutcome>,
) -> inrush_load::Result<JobOutcome> {
    let Some(row) = row.filter(|r| r.planned) else {
        return decided;
    };
    let target = jobs.server;
    let control = jobs.session().await?;
    if decided.is_err() && !matches!(log_row(control, job).await, Ok(None)) {
        return decided;
    }
    let landed = landed || (row.overwrite && decided.is_ok());
    let upkeep = row.upkeep.as_deref();
    let finished = plan::finish(control, target, &row.target, upkeep, landed).await;
    match (decided, finished) {
        (Ok(mut outcome), Ok(notes)) => {
            outcome.notes.extend(notes);
            Ok(outcome)
        }
        (Err(e), _) => Err(e),
        (Ok(_), Err(e)) => Err(e.into()),
    }
}

/// Logs the job into `table` (which must exist and take INSERTs), undecided, unless it is
/// logged already; its parts wait prepared when the server can hold them and the job
/// appends, else staged.
async fn begin(
    control: &Client,
    job: &str,
    table: &str,
    (overwrite, parts, keep_indexes): (bool, Parts, bool),
    batch: Option<&Batch>,
) -> Result<JobOutcome> {
    let target = TableInfo::read(control, table).await?;
    let parts = match parts {
        Parts::Prepared if overwrite => return Err(Error::Config(
            "an overwrite moves its rows in one transaction: its parts are staged, not prepared"
                .into(),
        )),
        Parts::Auto if overwrite || crate::activity::prepared_slots(control).await? == 0 => {
            Parts::Staged
        }
        Parts::Auto => Parts::Prepared,
        chosen => chosen,
    };
    create_log(control).await?;
    if let Some(batch) = batch {
        if written(control, batch).await? {
            return Ok(JobOutcome {
                done: true,
                ..JobOutcome::default()
            });
        }
    }
    // A stream's batch is begun by each of its tasks: none may drop what another loads beside.
    let plan = match batch {
        None => Some(plan::plan_job(control, &target, overwrite, keep_indexes).await?),
        Some(_) => None,
    };
    let logged = control
        .execute(
            "INSERT INTO inrush.joint_commits (load_id, servers, staged, target, overwrite, planned, upkeep) \
             VALUES ($1, '{}', $2, $3, $4, $5, $6) ON CONFLICT (load_id) DO NOTHING",
            &[
                &job,
                &(parts == Parts::Staged),
                &target.qualified(),
                &overwrite,
                &plan.is_some(),
                &plan.as_ref().and_then(|p| p.upkeep.clone()),
            ],
        )
        .await
        .map_err(query_error("logging the distributed write"))?;
    // Logged first: a coordinator that dies now leaves a job `recover` takes back, and its
    // drop in the journal, which `recover` puts back.
    let mut notes = Vec::new();
    if let (Some(plan), 1) = (&plan, logged) {
        notes.extend(plan.drop(control, &target).await);
    }
    // As the job was first logged: the tasks of a stream each begin it.
    let Some(row) = log_row(control, job).await?.filter(|r| !r.decided) else {
        return Err(ended(job));
    };
    Ok(JobOutcome {
        parts: Some(if row.staged {
            Parts::Staged
        } else {
            Parts::Prepared
        }),
        notes,
        ..JobOutcome::default()
    })
}

/// Whether a decision recorded `batch` as written.
async fn written(control: &Client, batch: &Batch) -> Result<bool> {
    if !crate::catalog::relations_exist(control, &["inrush.stream_batches"]).await? {
        return Ok(false);
    }
    let row = control
        .query_one(
            "SELECT EXISTS (SELECT FROM inrush.stream_batches WHERE query = $1 AND batch = $2)",
            &[&batch.query, &batch.id],
        )
        .await
        .map_err(query_error("reading the ledger of streaming batches"))?;
    Ok(row.get(0))
}

/// Records `batch` as written by `job`, inside the decision's transaction.
async fn record(control: &Client, job: &str, batch: Option<&Batch>) -> Result<()> {
    let Some(batch) = batch else { return Ok(()) };
    control
        .execute(
            "INSERT INTO inrush.stream_batches (query, batch, job) VALUES ($1, $2, $3)",
            &[&batch.query, &batch.id, &job],
        )
        .await
        .map_err(query_error("recording the streaming batch"))?;
    Ok(())
}

/// Whether `job` is logged and undecided: its tasks' parts may still wait for it.
async fn undecided(control: &Client, job: &str) -> Result<bool> {
    Ok(log_row(control, job).await?.is_some_and(|r| !r.decided))
}

fn ended(job: &str) -> Error {
    Error::Server(inrush_load::job::ended_message(job))
}

/// A prepared part: PREPAREs each of `sessions`' transactions as the part's `n`th. Err:
/// nothing of the part stays prepared (a failed PREPARE leaves its session's transaction
/// open, for the caller to roll back).
pub async fn prepare_part(
    control: &Client,
    part: &Prepare,
    sessions: &[&Client],
) -> Result<Vec<String>> {
    let gids: Vec<String> = (0..sessions.len())
        .map(|n| format!("{}{n}", part.prefix()))
        .collect();
    let statements: Vec<String> = gids
        .iter()
        .map(|gid| format!("PREPARE TRANSACTION '{gid}'"))
        .collect();
    let prepares = sessions
        .iter()
        .zip(&statements)
        .map(|(c, sql)| c.batch_execute(sql));
    let results = futures_util::future::join_all(prepares).await;
    let failed = results.iter().find_map(|r| r.as_ref().err());
    if failed.is_none() && undecided(control, &part.job).await? {
        return Ok(gids);
    }
    for (gid, prepared) in gids.iter().zip(&results) {
        if prepared.is_ok() {
            finish_one(control, gid, false).await?;
        }
    }
    Err(match failed {
        Some(e) => Error::Server(format!(
            "PREPARE TRANSACTION failed, this part rolled back: {}",
            crate::describe_pg_error(e)
        )),
        None => ended(&part.job),
    })
}

/// A staged part, committed into `table`: still wanted if its job is undecided, else dropped.
pub async fn staged_part_done(control: &Client, part: &Prepare, table: &str) -> Result<()> {
    if undecided(control, &part.job).await? {
        return Ok(());
    }
    drop_tables(control, &[table.to_string()]).await?;
    Err(ended(&part.job))
}

/// PostgreSQL's log, ledger and parts, for the coordinator's steps (`inrush_load::job`), over
/// the coordinator's session: a new one when the one it had broke, since every step after a
/// decision's settled COMMIT is safe to run again (a logged decision is carried out, an
/// undecided job taken back), and the notes that say so.
struct PgJobs<'a> {
    server: &'a ConnectOptions,
    client: Client,
    /// The session's server process and when it started (a pid alone may be reused), ended
    /// should the session break mid-transaction.
    backend: (i32, String),
    /// The job whose lock the session holds, which a recover beside the decision waits for
    /// (see `crate::prepared::resolve`).
    locked: Option<i64>,
    notes: Vec<String>,
}

impl<'a> PgJobs<'a> {
    async fn connect(server: &'a ConnectOptions) -> Result<PgJobs<'a>> {
        let client = server.connect().await?;
        let backend = backend(&client).await?;
        Ok(PgJobs {
            server,
            client,
            backend,
            locked: None,
            notes: Vec::new(),
        })
    }

    /// The session, new if the old one broke or does not answer a ping (made again with
    /// backoff), ending the old one (a transaction it left open would hold the job's log row)
    /// and taking the job's lock again.
    async fn session(&mut self) -> Result<&Client> {
        // A session that went silent (its COMMIT's answer swallowed, say) fails the ping.
        let ping = self.client.simple_query("");
        if let Ok(Ok(_)) = tokio::time::timeout(inrush_load::outcome::ASK_AFTER, ping).await {
            return Ok(&self.client);
        }
        let server = self.server;
        // A server the watch found silent is not tried again.
        let given_up = || server.cut_because().is_some();
        let client = inrush_load::outcome::reconnect(|| server.connect(), given_up).await?;
        let (pid, started) = &self.backend;
        let _ = client
            .execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                 WHERE pid = $1 AND backend_start::text = $2",
                &[pid, started],
            )
            .await;
        self.backend = backend(&client).await?;
        self.client = client;
        if let Some(key) = self.locked {
            lock(&self.client, key).await?;
        }
        self.notes.push(format!(
            "the coordinator's connection to {} broke; the step went on over a new one",
            self.server.describe()
        ));
        Ok(&self.client)
    }

    async fn lock(&mut self, job: &str) -> Result<()> {
        let key = lock_key(job);
        lock(self.session().await?, key).await?;
        self.locked = Some(key);
        Ok(())
    }

    async fn unlock(&mut self) {
        if let Some(key) = self.locked.take() {
            let unlock = "SELECT pg_advisory_unlock($1)";
            let _ = self.client.execute(unlock, &[&key]).await;
        }
    }
}

async fn backend(client: &Client) -> Result<(i32, String)> {
    let row = client
        .query_one(
            "SELECT pid, backend_start::text FROM pg_stat_activity WHERE pid = pg_backend_pid()",
            &[],
        )
        .await
        .map_err(query_error("reading the session's process id"))?;
    Ok((row.get(0), row.get(1)))
}

async fn lock(client: &Client, key: i64) -> Result<()> {
    client
        .execute("SELECT pg_advisory_lock($1)", &[&key])
        .await
        .map_err(query_error("locking the distributed write"))?;
    Ok(())
}

impl Jobs for PgJobs<'_> {
    fn engine(&self) -> &'static str {
        "PostgreSQL"
    }

    async fn logged(&mut self, job: &str) -> inrush_load::Result<Option<Logged>> {
        Ok(log_row(self.session().await?, job).await?.map(|r| Logged {
            decided: r.decided,
            winners: r.winners,
        }))
    }

    async fn written(&mut self, batch: &Batch) -> inrush_load::Result<bool> {
        Ok(written(self.session().await?, batch).await?)
    }

    /// Staged parts move in the decision's own transaction; prepared ones are committed after
    /// it is logged.
    async fn decide(
        &mut self,
        job: &str,
        winners: &[String],
        batch: Option<&Batch>,
    ) -> inrush_load::Result<Decided> {
        let server = self.server;
        let control = self.session().await?;
        // Logged and undecided: `inrush_load::job::commit` read it just before, under the lock.
        let row = log_row(control, job).await?;
        let row = row.ok_or_else(|| Error::Server(inrush_load::job::ended_message(job)))?;
        let decision = Decision {
            control,
            server,
            job,
            batch,
        };
        if row.staged {
            let moved = move_staged(&decision, &row.target, row.overwrite, winners).await?;
            return Ok(Decided::Landed(moved));
        }
        decide_prepared(&decision, winners).await?;
        Ok(Decided::Logged)
    }

    async fn finish(&mut self, job: &str, winners: &[String]) -> inrush_load::Result<JobOutcome> {
        Ok(finish(self.session().await?, job, winners).await?)
    }
}

/// A decision being taken: on `control`, of `server`, for `job` (and its streaming `batch`).
struct Decision<'a> {
    control: &'a Client,
    server: &'a ConnectOptions,
    job: &'a str,
    batch: Option<&'a Batch>,
}

impl Decision<'_> {
    /// Runs `work` in one transaction: committed if it succeeds, else rolled back. A COMMIT
    /// whose answer is lost is asked about (`crate::outcome`): the decision landed or it did
    /// not, and only a server out of reach leaves it unknown.
    async fn in_transaction(
        &self,
        work: impl std::future::Future<Output = Result<()>>,
    ) -> inrush_load::Result<()> {
        let control = self.control;
        let begun = async {
            control.batch_execute("BEGIN").await?;
            control
                .query_one("SELECT pg_backend_pid(), txid_current()", &[])
                .await
        };
        let ids = begun.await.map_err(query_error("beginning the decision"));
        let done = match ids {
            Ok(ids) => work.await.map(|()| ids),
            Err(e) => Err(e),
        };
        let ids = match done {
            Ok(ids) => ids,
            Err(e) => {
                let _ = control.batch_execute("ROLLBACK").await;
                return Err(e.into());
            }
        };
        let pending = crate::outcome::Pending {
            client: control,
            server: self.server,
            pid: ids.get(0),
            txid: ids.get(1),
        };
        let fate = crate::outcome::commit(&pending, self.server.network_timeout()).await;
        inrush_load::job::decided(self.job, fate)
    }

    /// Records the streaming batch as written by the job, inside the decision's transaction.
    async fn record(&self) -> Result<()> {
        record(self.control, self.job, self.batch).await
    }
}

/// Logs the decision to commit the prepared `winners`, once each of them is prepared (and
/// records the batch with it).
async fn decide_prepared(decision: &Decision<'_>, winners: &[String]) -> inrush_load::Result<()> {
    let (control, job) = (decision.control, decision.job);
    let prepared = prepared_of(control, job).await?;
    if let Some(lost) = winners.iter().find(|w| !prepared.contains(w)) {
        return Err(Error::Server(format!(
            "distributed write {job}: transaction {lost} is no longer prepared (did `inrush recover` run while the job wrote?); every part was rolled back"
        )).into());
    }
    decision
        .in_transaction(async {
            control
                .execute(
                    "UPDATE inrush.joint_commits SET decided = true, winners = $2 WHERE load_id = $1",
                    &[&job, &winners],
                )
                .await
                .map_err(query_error("recording the distributed write's decision"))?;
            decision.record().await
        })
        .await
}

/// Commits the prepared `winners` (none: takes everything back), rolls back the job's other
/// transactions, drops its staging tables, then its log row.
async fn finish(control: &Client, job: &str, winners: &[String]) -> Result<JobOutcome> {
    let mut outcome = JobOutcome::default();
    for gid in prepared_of(control, job).await? {
        let commit = winners.contains(&gid);
        finish_one(control, &gid, commit).await?;
        match commit {
            true => outcome.committed.push(gid),
            false => outcome.rolled_back.push(gid),
        }
    }
    let tables = part_tables(control, job).await?;
    drop_tables(control, &tables).await?;
    outcome.rolled_back.extend(tables);
    forget(control, job).await?;
    Ok(outcome)
}

async fn forget(client: &Client, job: &str) -> Result<()> {
    client
        .execute(
            "DELETE FROM inrush.joint_commits WHERE load_id = $1",
            &[&job],
        )
        .await
        .map_err(query_error("forgetting the distributed write"))?;
    Ok(())
}

/// The staged decision, in one transaction: `target` emptied (`overwrite`), the `winners`'
/// rows moved into it, every part table of the job dropped and the job forgotten.
async fn move_staged(
    decision: &Decision<'_>,
    target: &str,
    overwrite: bool,
    winners: &[String],
) -> inrush_load::Result<JobOutcome> {
    let (control, job) = (decision.control, decision.job);
    let tables = part_tables(control, job).await?;
    if let Some(lost) = winners.iter().find(|w| !tables.contains(w)) {
        return Err(Error::Server(format!(
            "distributed write {job}: staging table {lost} is gone (did `inrush recover` run while the job wrote?); nothing was moved"
        )).into());
    }
    let mut sql = vec![];
    if overwrite {
        sql.push(format!("TRUNCATE {target}"));
    }
    for winner in winners {
        let list = columns_of(control, winner).await?.join(", ");
        sql.push(format!(
            "INSERT INTO {target} ({list}) SELECT {list} FROM {winner}"
        ));
    }
    if !tables.is_empty() {
        sql.push(format!("DROP TABLE {}", tables.join(", ")));
    }
    sql.push(format!(
        "DELETE FROM inrush.joint_commits WHERE load_id = '{job}'"
    ));
    let what = format!("moving the parts of distributed write {job} into {target}");
    decision
        .in_transaction(async {
            control
                .batch_execute(&sql.join("; "))
                .await
                .map_err(|cause| Error::Query { what, cause })?;
            decision.record().await
        })
        .await?;
    let rolled_back = tables
        .into_iter()
        .filter(|t| !winners.contains(t))
        .collect();
    Ok(JobOutcome {
        committed: winners.to_vec(),
        rolled_back,
        ..JobOutcome::default()
    })
}

/// The columns of staging table `table`, quoted, in order.
async fn columns_of(client: &Client, table: &str) -> Result<Vec<String>> {
    let rows = client
        .query(
            "SELECT attname::text FROM pg_attribute WHERE attrelid = $1::text::regclass \
             AND attnum > 0 AND NOT attisdropped ORDER BY attnum",
            &[&table],
        )
        .await
        .map_err(query_error("reading a staging table's columns"))?;
    Ok(rows.iter().map(|r| quote_ident(r.get(0))).collect())
}
