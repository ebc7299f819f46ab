//! Distributed writes (a Spark job) on MariaDB/MySQL: the protocol of `inrush_load::job` with
//! XA transactions.
//!
//! Each task's part is one XA transaction, `inrush_<job>_<part>_0`, started with `XA START`
//! and left with `XA END` + `XA PREPARE` (MariaDB 10.5 and later keep a prepared XA
//! transaction when its connection ends). The coordinator logs the job in
//! `inrush_joint_commits` in the target database, logs its decision there naming the winners
//! (with a streaming batch's row in `inrush_stream_batches`, in the same transaction), then
//! runs `XA COMMIT` for the winners and `XA ROLLBACK` for every other transaction of the job
//! that `XA RECOVER` lists. `inrush recover` finishes a logged decision and takes back an
//! undecided job. A step and a recover of the same job take turns on a named lock.
//!
//! Every part is prepared: there is no staged form, so an overwrite, which must empty the
//! table in the same transaction as the rows land, is refused (TRUNCATE commits at once).

use crate::catalog;
use crate::engine_error;
use crate::options::MysqlOptions;
use crate::outcome;
use inrush_load::job::{Batch, Decided, JobOutcome, JobStep, Jobs, Logged, Parts, Prepare};
use inrush_load::{Error, Result};
use mysql_async::prelude::Queryable;
use mysql_async::Conn;

const CREATE_LOG: &str = "CREATE TABLE IF NOT EXISTS inrush_joint_commits ( \
     load_id VARCHAR(64) NOT NULL PRIMARY KEY, decided BOOLEAN NOT NULL DEFAULT FALSE, \
     winners TEXT, target TEXT NOT NULL, \
     started_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP) ENGINE=InnoDB";

const CREATE_LEDGER: &str = "CREATE TABLE IF NOT EXISTS inrush_stream_batches ( \
     query VARCHAR(64) NOT NULL, batch BIGINT NOT NULL, job VARCHAR(64) NOT NULL, \
     written_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP, \
     PRIMARY KEY (query, batch)) ENGINE=InnoDB";

/// The longest XA transaction name (its gtrid) the server takes.
const GID_MAX: usize = 64;

/// The XA transaction that holds `part` (one connection per part).
pub fn part_gid(part: &Prepare) -> Result<String> {
    let gid = format!("{}0", part.prefix());
    match gid.len() <= GID_MAX {
        true => Ok(gid),
        false => Err(Error::Usage(format!(
            "--prepare {}:{}: MariaDB names an XA transaction in at most {GID_MAX} bytes, and {gid} is longer (shorten the job's or the part's name)",
            part.job, part.part
        ))),
    }
}

/// One step of job `job` on `target`, with the watch beside it: a server that leaves it
/// unanswered for the network timeout cuts the step (see `inrush_load::pulse`).
pub fn step(target: &MysqlOptions, job: &str, step: &JobStep) -> Result<JobOutcome> {
    let job = inrush_load::job::job_name(job)?;
    let (rt, watch) = (
        inrush_load::target::runtime()?,
        inrush_load::target::runtime()?,
    );
    let mut looking = None;
    let done = inrush_load::pulse::beside(
        target.network_timeout(),
        target.describe(),
        &inrush_core::Silent,
        |within| target.look(&watch, &mut looking, within),
        |why| target.cut(why),
        || target.run(&rt, run(target, job, step)),
    );
    inrush_load::pulse::explained(done, "MariaDB", target.cut_because())
}

async fn run(target: &MysqlOptions, job: &str, step: &JobStep) -> Result<JobOutcome> {
    let mut jobs = XaJobs::connect(target).await?;
    let outcome = step_on(&mut jobs, job, step).await;
    let _ = jobs.conn.disconnect().await;
    outcome.map(|mut outcome| {
        outcome.notes.append(&mut jobs.notes);
        outcome
    })
}

/// `step` of `job` over the coordinator's connection.
async fn step_on(jobs: &mut XaJobs<'_>, job: &str, step: &JobStep) -> Result<JobOutcome> {
    match step {
        JobStep::Begin {
            table,
            overwrite,
            parts,
            batch,
            keep_indexes: _,
        } => {
            let database = jobs.options.database();
            let conn = jobs.conn().await?;
            let table = catalog::read(conn, table, database).await?;
            let how = (*overwrite, *parts);
            begin(conn, job, &table.qualified(), how, batch.as_ref()).await
        }
        JobStep::Commit { winners, batch } => {
            jobs.lock(job).await?;
            inrush_load::job::commit(jobs, job, winners, batch.as_ref()).await
        }
        JobStep::Abort => {
            jobs.lock(job).await?;
            inrush_load::job::abort(jobs, job).await
        }
    }
}

/// Logs the job (unless it is logged already: a stream's tasks each begin their batch's job).
async fn begin(
    conn: &mut Conn,
    job: &str,
    table: &str,
    (overwrite, parts): (bool, Parts),
    batch: Option<&Batch>,
) -> Result<JobOutcome> {
    if overwrite {
        return Err(Error::Usage(
            "an overwrite into MariaDB/MySQL cannot be atomic (TRUNCATE commits at once, and an XA transaction cannot empty the table in the decision): write with mode(\"append\") into a table emptied first, or into PostgreSQL".into(),
        ));
    }
    if parts == Parts::Staged {
        return Err(Error::Usage(
            "staged parts are PostgreSQL's: MariaDB/MySQL's parts are XA transactions (parts \"prepared\" or \"auto\")".into(),
        ));
    }
    for sql in [CREATE_LOG, CREATE_LEDGER] {
        conn.query_drop(sql)
            .await
            .map_err(engine_error("creating inrush_joint_commits"))?;
    }
    if let Some(batch) = batch {
        if written(conn, batch).await? {
            return Ok(JobOutcome {
                done: true,
                ..JobOutcome::default()
            });
        }
    }
    conn.exec_drop(
        "INSERT IGNORE INTO inrush_joint_commits (load_id, target) VALUES (?, ?)",
        (job, table),
    )
    .await
    .map_err(engine_error("logging the distributed write"))?;
    if !undecided(conn, job).await? {
        return Err(ended(job));
    }
    Ok(JobOutcome {
        parts: Some(Parts::Prepared),
        ..JobOutcome::default()
    })
}

fn ended(job: &str) -> Error {
    Error::Engine {
        engine: "MariaDB",
        what: "a distributed write's part".into(),
        message: inrush_load::job::ended_message(job),
        code: None,
    }
}

fn failed(job: &str, message: String) -> Error {
    Error::Engine {
        engine: "MariaDB",
        what: format!("distributed write {job}"),
        message,
        code: None,
    }
}

/// Whether `job` is logged and undecided: its parts may still wait for it.
async fn undecided(conn: &mut Conn, job: &str) -> Result<bool> {
    Ok(logged(conn, job).await?.is_some_and(|l| !l.decided))
}

/// After a task's `XA PREPARE` of `gid` (on a connection since closed: the session that
/// prepared it can run nothing else until it ends): its job still waits for it, or, decided
/// already (a straggling attempt), the part takes itself back.
pub async fn part_prepared(target: &MysqlOptions, part: &Prepare, gid: &str) -> Result<()> {
    let mut conn = target.connect().await?;
    let kept = match undecided(&mut conn, &part.job).await {
        Ok(true) => Ok(()),
        Ok(false) => finish_one(&mut conn, gid, false)
            .await
            .and(Err(ended(&part.job))),
        Err(e) => Err(e),
    };
    let _ = conn.disconnect().await;
    kept
}

/// Whether a decision recorded `batch` as written.
async fn written(conn: &mut Conn, batch: &Batch) -> Result<bool> {
    if !crate::tables_exist(conn, &["inrush_stream_batches"]).await? {
        return Ok(false);
    }
    let found: Option<u8> = conn
        .exec_first(
            "SELECT 1 FROM inrush_stream_batches WHERE query = ? AND batch = ?",
            (&batch.query, batch.id),
        )
        .await
        .map_err(engine_error("reading the ledger of streaming batches"))?;
    Ok(found.is_some())
}

/// Takes the job's named lock, which a recover of the same job waits for; it is the
/// session's, and ends with the step's connection.
async fn lock(conn: &mut Conn, job: &str) -> Result<()> {
    // A day: MariaDB takes no infinite wait. NULL: the server refused the lock.
    let got: Option<Option<i64>> = conn
        .exec_first("SELECT GET_LOCK(?, 86400)", (lock_name(job),))
        .await
        .map_err(engine_error("locking the distributed write"))?;
    match got.flatten() {
        Some(1) => Ok(()),
        _ => Err(failed(job, "its lock could not be taken".into())),
    }
}

fn lock_name(job: &str) -> String {
    format!("inrush_job_{job}")
}

/// MariaDB's log, ledger and parts, for the coordinator's steps (`inrush_load::job`), over the
/// coordinator's connection: a new one when the one it had broke, since every step after a
/// decision's settled COMMIT is safe to run again (a logged decision is carried out, an
/// undecided job taken back), and the notes that say so.
struct XaJobs<'a> {
    options: &'a MysqlOptions,
    conn: Conn,
    /// The job whose lock the connection holds.
    locked: Option<String>,
    notes: Vec<String>,
}

impl<'a> XaJobs<'a> {
    async fn connect(options: &'a MysqlOptions) -> Result<XaJobs<'a>> {
        Ok(XaJobs {
            options,
            conn: options.connect().await?,
            locked: None,
            notes: Vec::new(),
        })
    }

    /// The connection, new if the old one broke or does not answer a ping (made again with
    /// backoff), killing the old one (a transaction it left open would hold the job's log row)
    /// and taking the job's lock again.
    async fn conn(&mut self) -> Result<&mut Conn> {
        // A connection that went silent (its COMMIT's answer swallowed, say) fails the ping.
        let ping = self.conn.ping();
        if let Ok(Ok(())) = tokio::time::timeout(inrush_load::outcome::ASK_AFTER, ping).await {
            return Ok(&mut self.conn);
        }
        let options = self.options;
        // A server the watch found silent is not tried again.
        let given_up = || options.cut_because().is_some();
        let mut conn = inrush_load::outcome::reconnect(|| options.connect(), given_up).await?;
        let _ = conn
            .query_drop(format!("KILL CONNECTION {}", self.conn.id()))
            .await;
        if let Some(job) = &self.locked {
            lock(&mut conn, job).await?;
        }
        self.conn = conn;
        self.notes.push(format!(
            "the coordinator's connection to {} broke; the step went on over a new one",
            options.describe()
        ));
        Ok(&mut self.conn)
    }

    async fn lock(&mut self, job: &str) -> Result<()> {
        lock(self.conn().await?, job).await?;
        self.locked = Some(job.to_string());
        Ok(())
    }
}

/// The job's entry in `inrush_joint_commits`.
async fn logged(conn: &mut Conn, job: &str) -> Result<Option<Logged>> {
    if !crate::tables_exist(conn, &["inrush_joint_commits"]).await? {
        return Ok(None);
    }
    let row: Option<(bool, Option<String>)> = conn
        .exec_first(
            "SELECT decided, winners FROM inrush_joint_commits WHERE load_id = ?",
            (job,),
        )
        .await
        .map_err(engine_error("reading the distributed write's log"))?;
    Ok(row.map(|(decided, winners)| Logged {
        decided,
        winners: winners
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect(),
    }))
}

impl Jobs for XaJobs<'_> {
    fn engine(&self) -> &'static str {
        "MariaDB"
    }

    async fn logged(&mut self, job: &str) -> Result<Option<Logged>> {
        logged(self.conn().await?, job).await
    }

    async fn written(&mut self, batch: &Batch) -> Result<bool> {
        written(self.conn().await?, batch).await
    }

    /// Logged (the winners, newline-separated, and the batch) in one transaction, once each
    /// winner is still prepared. A COMMIT whose answer is lost is asked about by the mark the
    /// transaction writes (`crate::outcome`).
    async fn decide(
        &mut self,
        job: &str,
        winners: &[String],
        batch: Option<&Batch>,
    ) -> Result<Decided> {
        let options = self.options;
        let conn = self.conn().await?;
        let prepared = prepared_of(conn, job).await?;
        if let Some(lost) = winners.iter().find(|w| !prepared.contains(w)) {
            return Err(failed(
                job,
                format!("transaction {lost} is no longer prepared (did `inrush recover` run while the job wrote?); every part was rolled back"),
            ));
        }
        // Made before the transaction: DDL would commit it.
        let token = outcome::prepare(conn)
            .await
            .then(|| outcome::token(conn.id()));
        let logged = async {
            conn.query_drop("START TRANSACTION")
                .await
                .map_err(engine_error("beginning the decision"))?;
            conn.exec_drop(
                "UPDATE inrush_joint_commits SET decided = TRUE, winners = ? WHERE load_id = ?",
                (winners.join("\n"), job),
            )
            .await
            .map_err(engine_error("recording the distributed write's decision"))?;
            if let Some(b) = batch {
                conn.exec_drop(
                    "INSERT INTO inrush_stream_batches (query, batch, job) VALUES (?, ?, ?)",
                    (&b.query, b.id, job),
                )
                .await
                .map_err(engine_error("recording the streaming batch"))?;
            }
            match &token {
                Some(token) => outcome::mark(conn, token).await,
                None => Ok(()),
            }
        };
        if let Err(e) = logged.await {
            let _ = conn.query_drop("ROLLBACK").await;
            return Err(e);
        }
        let pending = outcome::Pending {
            options,
            connection: conn.id(),
            mark: token.as_deref(),
        };
        let fate = outcome::commit(conn, &pending, options.network_timeout()).await;
        inrush_load::job::decided(job, fate)?;
        Ok(Decided::Logged)
    }

    async fn finish(&mut self, job: &str, winners: &[String]) -> Result<JobOutcome> {
        let conn = self.conn().await?;
        let mut outcome = JobOutcome::default();
        for gid in prepared_of(conn, job).await? {
            let commit = winners.contains(&gid);
            finish_one(conn, &gid, commit).await?;
            match commit {
                true => outcome.committed.push(gid),
                false => outcome.rolled_back.push(gid),
            }
        }
        if crate::tables_exist(conn, &["inrush_joint_commits"]).await? {
            conn.exec_drop("DELETE FROM inrush_joint_commits WHERE load_id = ?", (job,))
                .await
                .map_err(engine_error("forgetting the distributed write"))?;
        }
        Ok(outcome)
    }
}

/// The job's prepared XA transactions, by name.
async fn prepared_of(conn: &mut Conn, job: &str) -> Result<Vec<String>> {
    let rows: Vec<mysql_async::Row> = conn
        .query("XA RECOVER")
        .await
        .map_err(|e| {
            failed(
                job,
                format!("XA RECOVER failed ({e}): on MySQL 8 listing prepared XA transactions needs the XA_RECOVER_ADMIN privilege (MariaDB lists them to every user)"),
            )
        })?;
    let prefix = format!("inrush_{job}_");
    Ok(rows
        .into_iter()
        .filter_map(|row| row.get::<Vec<u8>, _>(3))
        .map(|data| String::from_utf8_lossy(&data).into_owned())
        .filter(|gid| gid.starts_with(&prefix))
        .collect())
}

async fn finish_one(conn: &mut Conn, gid: &str, commit: bool) -> Result<()> {
    // The name is inrush's own: letters, digits and `_` (`Prepare::prefix`).
    let sql = match commit {
        true => format!("XA COMMIT '{gid}'"),
        false => format!("XA ROLLBACK '{gid}'"),
    };
    conn.query_drop(&sql).await.map_err(engine_error(sql))
}

/// What `inrush recover` did to the jobs a coordinator left.
#[derive(Debug, Default)]
pub struct Resolved {
    pub committed: Vec<String>,
    pub rolled_back: Vec<String>,
    /// Jobs whose coordinator is deciding now.
    pub busy: Vec<String>,
}

/// `inrush recover`: finishes each logged job's decision, or takes back an undecided one.
pub async fn resolve(options: &MysqlOptions) -> Result<Resolved> {
    let mut resolved = Resolved::default();
    let mut jobs = XaJobs::connect(options).await?;
    let conn = jobs.conn().await?;
    if !crate::tables_exist(conn, &["inrush_joint_commits"]).await? {
        let _ = jobs.conn.disconnect().await;
        return Ok(resolved);
    }
    let logged: Vec<String> = conn
        .query("SELECT load_id FROM inrush_joint_commits ORDER BY started_at")
        .await
        .map_err(engine_error("reading inrush_joint_commits"))?;
    for job in logged {
        let free: Option<Option<i64>> = jobs
            .conn()
            .await?
            .exec_first("SELECT GET_LOCK(?, 0)", (lock_name(&job),))
            .await
            .map_err(engine_error("locking a distributed write"))?;
        if free.flatten() != Some(1) {
            resolved.busy.push(job);
            continue;
        }
        let finished = inrush_load::job::abort(&mut jobs, &job).await;
        let _ = jobs
            .conn
            .exec_drop("SELECT RELEASE_LOCK(?)", (lock_name(&job),))
            .await;
        let finished = finished?;
        resolved.committed.extend(finished.committed);
        resolved.rolled_back.extend(finished.rolled_back);
    }
    let _ = jobs.conn.disconnect().await;
    Ok(resolved)
}
