//! A distributed write (a Spark job): tasks in other processes load their parts, and one
//! coordinator decides for all of them at once ([`JobStep`]): the parts that succeeded land
//! together, or none does. A part is left either prepared (`inrush load --prepare`: its
//! transactions end with PREPARE TRANSACTION) or staged (`--stage`: its rows committed into a
//! table of their own that the decision moves into the target in one transaction, for servers
//! without prepared transactions and for overwrites). The coordinator's [`commit`] and
//! [`abort`] are the same on every engine; the engine gives them its log, ledger and parts
//! through [`Jobs`] (PostgreSQL: `inrush_postgres::job`; MariaDB/MySQL's XA transactions:
//! `inrush_mysql::job`).
//!
//! On a network that loses answers: a decision's COMMIT whose answer is lost is asked about
//! ([`decided`]), never taken for a failure; after a decision that landed, the engine carries
//! it out over a new connection if its own broke, since committing the winners and taking
//! back the rest is safe to repeat. A part whose PREPARE answer is lost fails its task; the
//! coordinator never names it, so it is taken back with the job's other losers.

use crate::commits::Fate;

/// A task of a distributed write: the load's transactions end with `PREPARE TRANSACTION`,
/// each named `inrush_<job>_<part>_<n>` (names `inrush recover` finds), or, `staged`, its rows
/// are committed into the part's own table, `stage_<job>_<part>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prepare {
    pub job: String,
    pub part: String,
    pub staged: bool,
}

/// A job's or part's name: 1 to 40 ASCII letters and digits, since the names go into SQL
/// literals and `_` separates them.
fn word(w: &str) -> Option<String> {
    (!w.is_empty() && w.len() <= 40 && w.bytes().all(|b| b.is_ascii_alphanumeric()))
        .then(|| w.to_string())
}

/// `job`, if it can name a job.
pub fn job_name(job: &str) -> crate::Result<&str> {
    match word(job) {
        Some(_) => Ok(job),
        None => Err(crate::Error::Usage(format!(
            "{job:?} cannot name a distributed write (1 to 40 ASCII letters and digits)"
        ))),
    }
}

impl Prepare {
    /// `JOB:PART` (see [`job_name`]).
    pub fn parse(spelled: &str) -> Result<Prepare, String> {
        let (job, part) = spelled
            .split_once(':')
            .and_then(|(job, part)| word(job).zip(word(part)))
            .ok_or_else(|| {
                format!("{spelled:?} is not JOB:PART (each 1 to 40 ASCII letters and digits)")
            })?;
        Ok(Prepare {
            job,
            part,
            staged: false,
        })
    }

    /// The same part, staged.
    pub fn staged(self) -> Prepare {
        Prepare {
            staged: true,
            ..self
        }
    }

    /// As the option that asks for it is written.
    pub fn option(&self) -> &'static str {
        match self.staged {
            true => "--stage",
            false => "--prepare",
        }
    }

    /// What every transaction name of this part starts with.
    pub fn prefix(&self) -> String {
        format!("inrush_{}_{}_", self.job, self.part)
    }
}

/// How a job's parts wait for the decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Parts {
    /// Staged where the server has no prepared transactions, or the job overwrites.
    Auto,
    Prepared,
    Staged,
}

/// One micro-batch of a streaming query (Spark's query id, which a restart from the same
/// checkpoint keeps, and the batch's number): a job that writes one lands it in the target's
/// ledger of written batches in the same decision, so a replay of the batch lands nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batch {
    pub query: String,
    pub id: i64,
}

/// What the coordinator does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobStep {
    /// Logs the job, undecided, before its parts load: into `table`, emptied first when
    /// `overwrite` (in the decision's transaction), its parts as `parts` asks. Idempotent,
    /// since a stream's tasks each begin their batch's job: the first one logs it and every
    /// part waits as that one chose. A `batch` already in the ledger is [`JobOutcome::done`].
    /// A job of no batch plans the table once for all its tasks (indexes dropped now, rebuilt
    /// after the decision, unless `keep_indexes`); a stream's batches change no definition,
    /// since a task's begin cannot drop what another task already loads beside.
    Begin {
        table: String,
        overwrite: bool,
        parts: Parts,
        batch: Option<Batch>,
        keep_indexes: bool,
    },
    /// Commits these prepared transactions or staging tables (the parts that succeeded, one
    /// attempt each) and takes back the job's others; with `batch`, records it in the ledger
    /// in the same decision, or, if it is there already, lands nothing of this job.
    Commit {
        winners: Vec<String>,
        batch: Option<Batch>,
    },
    /// Rolls back every transaction of the job.
    Abort,
}

/// What the coordinator's step did: the parts committed and rolled back (transactions, or
/// staging tables), for a begin how the parts are to wait, whether the job's batch had been
/// written already (its parts have nothing to load; its commit landed nothing), and what the
/// step did to the table's definitions and statistics.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct JobOutcome {
    pub committed: Vec<String>,
    pub rolled_back: Vec<String>,
    pub parts: Option<Parts>,
    pub done: bool,
    pub notes: Vec<String>,
}

/// A job's entry in its log: decided or not, and the winners of its decision.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Logged {
    pub decided: bool,
    pub winners: Vec<String>,
}

/// How a decision went.
pub enum Decided {
    /// Logged, naming the winners: they are committed after it (and a dead coordinator's
    /// decision is finished by `inrush recover`).
    Logged,
    /// Carried out whole in the decision's own transaction (staged parts moved into the table):
    /// nothing is left to finish.
    Landed(JobOutcome),
}

/// What an engine keeps of its distributed writes, for the coordinator's [`commit`] and
/// [`abort`], which are the same on every engine: the log of jobs and decisions, the ledger of
/// streaming batches, and the parts waiting for a decision.
// The coordinator's steps run on one thread (`block_on`): the futures need not be `Send`.
#[allow(async_fn_in_trait)]
pub trait Jobs {
    /// The engine, for messages.
    fn engine(&self) -> &'static str;

    /// The job's log entry; `None` when it is not logged (never begun, or forgotten).
    async fn logged(&mut self, job: &str) -> crate::Result<Option<Logged>>;

    /// Whether a decision recorded `batch` as written.
    async fn written(&mut self, batch: &Batch) -> crate::Result<bool>;

    /// Decides to land `winners` once each is checked to still wait (an error otherwise):
    /// logged, with `batch` recorded in the ledger, in one transaction, or landed whole there.
    async fn decide(
        &mut self,
        job: &str,
        winners: &[String],
        batch: Option<&Batch>,
    ) -> crate::Result<Decided>;

    /// Commits the prepared `winners` (none: takes everything back), takes back every other
    /// part of the job, then forgets it.
    async fn finish(&mut self, job: &str, winners: &[String]) -> crate::Result<JobOutcome>;
}

/// What a decision's own COMMIT did, asked of the server when its answer was lost (see
/// [`crate::outcome`]): a decision that landed is carried on with, one that did not is the
/// error, and one nobody could ask about names the query that tells.
pub fn decided(job: &str, fate: Fate) -> crate::Result<()> {
    match fate {
        Fate::Committed => Ok(()),
        Fate::RolledBack(e) => Err(e),
        Fate::Unknown { reason, ask } => Err(crate::Error::DecisionUnknown {
            job: job.to_string(),
            reason,
            ask,
        }),
    }
}

/// Why a part that finds its job ended takes itself back.
pub fn ended_message(job: &str) -> String {
    format!("distributed write {job} has ended (decided, or never logged on this server): this part's rows were taken back")
}

fn failed(jobs: &impl Jobs, job: &str, message: String) -> crate::Error {
    crate::Error::Engine {
        engine: jobs.engine(),
        what: format!("distributed write {job}"),
        message,
        code: None,
    }
}

/// The coordinator's commit of `winners` (the parts of the attempts it keeps), taking back
/// every other part of the job; with `batch`, recorded in the ledger in the same decision.
/// Before the decision a failure takes the whole job back; after it (a commit of a prepared
/// winner failed) the logged decision stands, for `inrush recover` to finish: taking the
/// remaining winners back then would land the job in part. The engine holds the job's lock
/// around it, which a recover of the job waits for.
pub async fn commit<J: Jobs>(
    jobs: &mut J,
    job: &str,
    winners: &[String],
    batch: Option<&Batch>,
) -> crate::Result<JobOutcome> {
    if let Some(b) = batch {
        if jobs.written(b).await? {
            // An earlier run of the query landed the batch: its decision, if it is still to
            // be finished, is finished; everything else of the job is taken back.
            let outcome = abort(jobs, job).await?;
            return Ok(JobOutcome {
                done: true,
                ..outcome
            });
        }
    }
    match jobs.logged(job).await {
        Ok(Some(Logged { decided: false, .. })) => {}
        // Decided already, by a commit that failed part way: that decision stands.
        Ok(Some(Logged { winners, .. })) => return jobs.finish(job, &winners).await,
        // A batch whose every partition was empty: no task logged it.
        Ok(None) if batch.is_some() && winners.is_empty() => return Ok(JobOutcome::default()),
        Ok(None) => {
            let gone = failed(jobs, job, "it is not logged on this server (decided already, or taken back by `inrush recover`); nothing of it landed".into());
            return Err(take_back(jobs, job, gone).await);
        }
        Err(e) => return Err(take_back(jobs, job, e).await),
    }
    match jobs.decide(job, winners, batch).await {
        Ok(Decided::Landed(outcome)) => Ok(outcome),
        Ok(Decided::Logged) => match jobs.finish(job, winners).await {
            Ok(outcome) => Ok(outcome),
            Err(e) => Err(failed(jobs, job, format!("it was decided, then committing its parts failed ({e}): `inrush recover --to <the same target>` commits the rest"))),
        },
        Err(e) => Err(take_back(jobs, job, e).await),
    }
}

/// Takes back every part of the job and forgets it, unless its decision was logged (Spark
/// follows a commit that failed part way with an abort; a replayed batch meets an earlier
/// run's decision): then it finishes that decision, as `recover` does.
pub async fn abort<J: Jobs>(jobs: &mut J, job: &str) -> crate::Result<JobOutcome> {
    let winners = match jobs.logged(job).await? {
        Some(Logged {
            decided: true,
            winners,
        }) => winners,
        _ => Vec::new(),
    };
    jobs.finish(job, &winners).await
}

/// Takes back every part of a job that `failure` stopped before its decision; the failure
/// stays the error.
async fn take_back<J: Jobs>(jobs: &mut J, job: &str, failure: crate::Error) -> crate::Error {
    let _ = jobs.finish(job, &[]).await;
    failure
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_part_is_named_by_words_that_cannot_break_out_of_a_literal() {
        let p = Prepare::parse("a1b2:p3a0").unwrap();
        assert_eq!(p.prefix(), "inrush_a1b2_p3a0_");
        for bad in ["", "job", "job:", ":part", "jo_b:p", "j:p'", "j:p:q", "é:p"] {
            assert!(Prepare::parse(bad).is_err(), "{bad:?}");
        }
        assert!(job_name("j0b").is_ok());
        assert!(job_name("j0b'; DROP").is_err());
    }
}
