//! A distributed write (a Spark job): tasks in other processes load their parts, and one
//! coordinator decides for all of them at once ([`JobStep`]): the parts that succeeded land
//! together, or none does. A part is left either prepared (`inrush load --prepare`: its
//! transactions end with PREPARE TRANSACTION) or staged (`--stage`: its rows committed into a
//! table of their own that the decision moves into the target in one transaction, for servers
//! without prepared transactions and for overwrites). The engine carries it out (PostgreSQL:
//! `inrush_postgres::prepared`).

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
