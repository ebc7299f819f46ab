//! The log of two-phase commits across servers (a load routed to foreign partitions), so that
//! a process killed between its first PREPARE TRANSACTION and its last COMMIT PREPARED leaves
//! nothing undecided. Prepared transactions hold their locks until someone decides, so each
//! one must be decided exactly as the load would have:
//!
//! 1. before the first PREPARE, the load's id and the foreign servers it spans are written to
//!    `inrush.joint_commits` on the target, committed, undecided;
//! 2. once every transaction is prepared, the row is marked decided (committed): the commit
//!    point;
//! 3. every COMMIT PREPARED, then the row is deleted.
//!
//! Every prepared transaction is named `inrush_<id>_<n>`, so `inrush recover` (and
//! [`resolve`]) finds those of a load on each server: a decided load's are committed, an
//! undecided load's rolled back. The loading session holds an advisory lock on its id until it
//! is done, so a recover beside a load that is still committing leaves it alone.
//!
//! A distributed write (a Spark job, `inrush load --prepare`) is the same log with its parts
//! in other processes: the coordinator logs the job ([`job_begin`]), each task PREPAREs its
//! transactions as `inrush_<job>_<part>_<n>` ([`prepare_part`]), and the coordinator decides
//! ([`job_commit`]): the decision names the winning transactions (a retried or speculative
//! attempt prepares too, and must not land twice), which are committed, and every other
//! transaction of the job is rolled back. `recover` after a decision commits the winners only.

use crate::catalog::relations_exist;
use crate::route::shard;
use crate::{query_error, ConnectOptions, Error, Result};
use inrush_load::job::{JobOutcome, JobStep};
use tokio_postgres::Client;

const CREATE_LOG: &str = "CREATE SCHEMA IF NOT EXISTS inrush; \
     CREATE TABLE IF NOT EXISTS inrush.joint_commits ( \
       load_id text PRIMARY KEY, servers text[] NOT NULL, \
       decided boolean NOT NULL DEFAULT false, \
       started_at timestamptz NOT NULL DEFAULT now()); \
     ALTER TABLE inrush.joint_commits ADD COLUMN IF NOT EXISTS winners text[]";

/// `max_prepared_transactions` of `client`'s server: how many transactions can wait there,
/// prepared, for a joint commit.
pub async fn slots(client: &Client) -> Result<i64> {
    Ok(client
        .query_one(
            "SELECT current_setting('max_prepared_transactions')::bigint",
            &[],
        )
        .await
        .map_err(query_error("reading max_prepared_transactions"))?
        .get(0))
}

/// One load's two-phase commit, logged (see the module documentation).
pub struct JointCommit {
    id: String,
}

/// The advisory lock a load holds on its id while it commits.
fn lock_key(id: &str) -> i64 {
    // Distinct from the table claims' keys (`ddl::claim_key`) by construction: those are
    // small oids shifted, these a hash.
    let hash = id.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    });
    (hash | 1 << 62) as i64
}

impl JointCommit {
    /// Logs a new load spanning the target and `servers` (foreign server names), undecided.
    /// Fails when the log cannot be written (the right to create schema `inrush`).
    pub async fn begin(control: &Client, servers: &[String]) -> Result<JointCommit> {
        control
            .batch_execute(CREATE_LOG)
            .await
            .map_err(query_error("creating the inrush.joint_commits table"))?;
        let id: String = control
            .query_one(
                "SELECT left(md5(random()::text || clock_timestamp()::text || pg_backend_pid()), 16)",
                &[],
            )
            .await
            .map_err(query_error("naming the joint commit"))?
            .get(0);
        control
            .execute("SELECT pg_advisory_lock($1)", &[&lock_key(&id)])
            .await
            .map_err(query_error("locking the joint commit"))?;
        control
            .execute(
                "INSERT INTO inrush.joint_commits (load_id, servers) VALUES ($1, $2)",
                &[&id, &servers],
            )
            .await
            .map_err(query_error("logging the joint commit"))?;
        Ok(JointCommit { id })
    }

    /// The name of the load's `n`th prepared transaction.
    pub fn gid(&self, n: usize) -> String {
        format!("inrush_{}_{n}", self.id)
    }

    /// The commit point: every transaction is prepared, and from here each is committed.
    pub async fn decide(&self, control: &Client) -> Result<()> {
        control
            .execute(
                "UPDATE inrush.joint_commits SET decided = true WHERE load_id = $1",
                &[&self.id],
            )
            .await
            .map_err(query_error("recording the commit decision"))?;
        Ok(())
    }

    /// Every transaction is decided (committed or rolled back): the row goes. Best effort: a
    /// row left behind only makes `inrush recover` find nothing to do for it.
    pub async fn end(self, control: &Client) {
        let _ = control
            .execute(
                "DELETE FROM inrush.joint_commits WHERE load_id = $1",
                &[&self.id],
            )
            .await;
        let _ = control
            .execute("SELECT pg_advisory_unlock($1)", &[&lock_key(&self.id)])
            .await;
    }
}

/// What [`resolve`] did.
#[derive(Debug, Default)]
pub struct Resolved {
    /// `gid on server` of each transaction committed, then of each rolled back.
    pub committed: Vec<String>,
    pub rolled_back: Vec<String>,
    /// Loads still committing in another session, left alone.
    pub busy: Vec<String>,
}

/// Decides every prepared transaction a dead load left, on the target (`control`, reached as
/// `target`) and on each foreign server the log names (see the module documentation).
pub async fn resolve(control: &Client, target: &ConnectOptions) -> Result<Resolved> {
    let mut resolved = Resolved::default();
    if !relations_exist(control, &["inrush.joint_commits"]).await? {
        return Ok(resolved);
    }
    let loads = control
        .query(
            "SELECT load_id, servers, decided, winners FROM inrush.joint_commits ORDER BY started_at",
            &[],
        )
        .await
        .map_err(query_error("reading inrush.joint_commits"))?;
    for load in loads {
        let (id, servers, decided): (String, Vec<String>, bool) =
            (load.get(0), load.get(1), load.get(2));
        // A job's decision names its winners; a load's covers every transaction.
        let winners: Option<Vec<String>> = load.get(3);
        let decision = match (decided, winners) {
            (false, _) => Decision::RollBack,
            (true, None) => Decision::CommitAll,
            (true, Some(winners)) => Decision::Commit(winners),
        };
        let free: bool = control
            .query_one("SELECT pg_try_advisory_lock($1)", &[&lock_key(&id)])
            .await
            .map_err(query_error("locking a joint commit"))?
            .get(0);
        if !free {
            resolved.busy.push(id);
            continue;
        }
        let joint = JointCommit { id };
        decide_on(control, "the target", &joint.id, &decision, &mut resolved).await?;
        for server in &servers {
            let Some(found) = shard::shard_named(control, server, target).await? else {
                return Err(Error::Server(format!(
                    "joint commit {}: foreign server {server} no longer exists; decide its prepared transactions (inrush_{}_*) on that server by hand",
                    joint.id, joint.id
                )));
            };
            let options = ConnectOptions::parse(&found.conninfo)?;
            let client = options.connect().await?;
            let name = format!("foreign server {server}");
            decide_on(&client, &name, &joint.id, &decision, &mut resolved).await?;
        }
        joint.end(control).await;
    }
    Ok(resolved)
}

/// What becomes of a logged load's prepared transactions.
enum Decision {
    /// Undecided: none may land.
    RollBack,
    /// A load decided: all of them.
    CommitAll,
    /// A job decided: these; the rest were other attempts.
    Commit(Vec<String>),
}

/// Carries out `decision` on every transaction of load (or job) `id` still prepared on
/// `client`'s server.
async fn decide_on(
    client: &Client,
    server: &str,
    id: &str,
    decision: &Decision,
    resolved: &mut Resolved,
) -> Result<()> {
    for gid in prepared_of(client, id).await? {
        let commit = match decision {
            Decision::RollBack => false,
            Decision::CommitAll => true,
            Decision::Commit(winners) => winners.contains(&gid),
        };
        finish_one(client, &gid, commit).await?;
        let into = match commit {
            true => &mut resolved.committed,
            false => &mut resolved.rolled_back,
        };
        into.push(format!("{gid} on {server}"));
    }
    Ok(())
}

/// The transactions of load (or job) `id` prepared in `client`'s database.
async fn prepared_of(client: &Client, id: &str) -> Result<Vec<String>> {
    let prefix = format!("inrush_{id}_");
    let rows = client
        .query(
            "SELECT gid FROM pg_prepared_xacts WHERE starts_with(gid, $1) AND database = current_database()",
            &[&prefix],
        )
        .await
        .map_err(query_error("reading pg_prepared_xacts"))?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

/// COMMIT PREPARED or ROLLBACK PREPARED `gid` (read from the server: quoted, whoever made it).
async fn finish_one(client: &Client, gid: &str, commit: bool) -> Result<()> {
    let literal = gid.replace('\'', "''");
    let sql = match commit {
        true => format!("COMMIT PREPARED '{literal}'"),
        false => format!("ROLLBACK PREPARED '{literal}'"),
    };
    client
        .batch_execute(&sql)
        .await
        .map_err(query_error(sql.clone()))
}

/// A distributed write's coordinator: one step of job `job` (see the module documentation).
pub fn job(target: &ConnectOptions, job: &str, step: &JobStep) -> inrush_load::Result<JobOutcome> {
    let job = inrush_load::job::job_name(job)?;
    let runtime = crate::load::runtime()?;
    Ok(runtime.block_on(async {
        let client = target.connect().await?;
        match step {
            JobStep::Begin => crate::prepared::job_begin(&client, job)
                .await
                .map(|()| JobOutcome::default()),
            JobStep::Commit(winners) => crate::prepared::job_commit(&client, job, winners).await,
            JobStep::Abort => crate::prepared::job_abort(&client, job).await,
        }
    })?)
}

/// Logs distributed write `job` (letters and digits), undecided, before its tasks start.
pub async fn job_begin(control: &Client, job: &str) -> Result<()> {
    control
        .batch_execute(CREATE_LOG)
        .await
        .map_err(query_error("creating the inrush.joint_commits table"))?;
    control
        .execute(
            "INSERT INTO inrush.joint_commits (load_id, servers) VALUES ($1, '{}')",
            &[&job],
        )
        .await
        .map_err(query_error("logging the distributed write"))?;
    Ok(())
}

/// A task of `part.job`: PREPAREs each of `sessions`' transactions as the part's `n`th, then
/// checks that the job is still undecided. A task that prepares after its job decided (a
/// speculative attempt still running) rolls its own transactions back: the coordinator's
/// sweep of the job's other transactions may have passed. Err: nothing of the part stays
/// prepared (a failed PREPARE leaves its session's transaction open, for the caller to roll
/// back).
pub async fn prepare_part(
    control: &Client,
    part: &inrush_load::job::Prepare,
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
    let open: Option<bool> = match failed {
        Some(_) => None,
        None => control
            .query_opt(
                "SELECT NOT decided FROM inrush.joint_commits WHERE load_id = $1",
                &[&part.job],
            )
            .await
            .map_err(query_error("reading the job's decision"))?
            .map(|r| r.get(0)),
    };
    if open == Some(true) {
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
        None => Error::Server(format!(
            "distributed write {} has ended (decided, or never logged on this server): this part's rows were rolled back",
            part.job
        )),
    })
}

/// Decides distributed write `job`: `winners` (one prepared part per task) are committed,
/// every other transaction of the job rolled back, and the log row goes. The decision is
/// logged first, naming the winners, so a coordinator that dies after it leaves `recover`
/// to finish exactly this. Refused, with everything rolled back, when a winner is not
/// prepared (a `recover` ran while the job wrote): the job lands whole or not at all.
pub async fn job_commit(control: &Client, job: &str, winners: &[String]) -> Result<JobOutcome> {
    // A recover beside the decision waits for it (see `resolve`).
    control
        .execute("SELECT pg_advisory_lock($1)", &[&lock_key(job)])
        .await
        .map_err(query_error("locking the distributed write"))?;
    let decided = decide_job(control, job, winners).await;
    let outcome = match decided {
        Ok(()) => finish_job(control, job, Some(winners)).await,
        Err(e) => {
            let _ = finish_job(control, job, None).await;
            Err(e)
        }
    };
    let _ = control
        .execute("SELECT pg_advisory_unlock($1)", &[&lock_key(job)])
        .await;
    outcome
}

/// Rolls back every transaction of distributed write `job` and forgets it.
pub async fn job_abort(control: &Client, job: &str) -> Result<JobOutcome> {
    finish_job(control, job, None).await
}

/// Logs the decision to commit `winners`, once each of them is prepared.
async fn decide_job(control: &Client, job: &str, winners: &[String]) -> Result<()> {
    let prepared = prepared_of(control, job).await?;
    if let Some(lost) = winners.iter().find(|w| !prepared.contains(w)) {
        return Err(Error::Server(format!(
            "distributed write {job}: transaction {lost} is no longer prepared (did `inrush recover` run while the job wrote?); every part was rolled back"
        )));
    }
    let logged = control
        .execute(
            "UPDATE inrush.joint_commits SET decided = true, winners = $2 \
             WHERE load_id = $1 AND NOT decided",
            &[&job, &winners],
        )
        .await
        .map_err(query_error("recording the distributed write's decision"))?;
    match logged {
        1 => Ok(()),
        _ => Err(Error::Server(format!(
            "distributed write {job} is not logged as undecided on this server"
        ))),
    }
}

/// Commits `winners` (none for an abort), rolls back the job's other transactions, then
/// drops its log row.
async fn finish_job(control: &Client, job: &str, winners: Option<&[String]>) -> Result<JobOutcome> {
    let mut outcome = JobOutcome::default();
    let winners = winners.unwrap_or_default();
    for gid in prepared_of(control, job).await? {
        let commit = winners.contains(&gid);
        finish_one(control, &gid, commit).await?;
        match commit {
            true => outcome.committed.push(gid),
            false => outcome.rolled_back.push(gid),
        }
    }
    control
        .execute(
            "DELETE FROM inrush.joint_commits WHERE load_id = $1",
            &[&job],
        )
        .await
        .map_err(query_error("forgetting the distributed write"))?;
    Ok(outcome)
}
