use serde::Serialize;

/// What a completed load did, for people (the CLI's table) and machines (`--json`).
#[derive(Debug, Clone, Serialize)]
pub struct LoadSummary {
    pub input: String,
    pub table: String,
    pub rows: u64,
    /// Input bytes read (compressed bytes for compressed input).
    pub bytes: u64,
    pub seconds: f64,
    /// `rows / seconds`: over the whole run, index rebuild and VACUUM included.
    pub rows_per_second: f64,
    /// `bytes / seconds`, in MB (10^6 bytes) per second.
    pub megabytes_per_second: f64,
    /// `rows / phases.load`: the load's own rate (reading, sending, committing), the one the
    /// progress bar shows; the time around it is in `phases`.
    pub load_rows_per_second: f64,
    /// `bytes / phases.load`, in MB per second.
    pub load_megabytes_per_second: f64,
    /// Connections that streamed rows at the end of the load (see `parallelism`).
    pub connections: usize,
    /// How the number of connections was chosen, and why.
    pub parallelism: Parallelism,
    pub workers: usize,
    /// What the engine did, in its own terms.
    pub engine: EngineReport,
    /// Rows refused and written to the reject file (`--max-errors`); 0 when none were.
    pub rows_rejected: u64,
    pub rejects_file: Option<String>,
    pub rejects_log: Option<String>,
    /// False for `--check`: every row was read and checked, none was written.
    pub loaded: bool,
    /// `--check`: the checks the server did not make, and why (the rows were checked on the
    /// client only, not written in transactions rolled back); `None` for a load, and for a
    /// check the server made in full (keys, foreign keys, CHECK constraints, triggers).
    pub check_skipped: Option<String>,
    /// Rows earlier runs of this load had committed (`--resume`); `rows` counts this run's.
    pub rows_resumed: u64,
    /// `--resume`: the blocks this run committed, and those other processes loading the same
    /// input committed while it ran.
    pub blocks: Option<Blocks>,
    /// `--prepare`: the transactions the load left prepared, named for its job's coordinator
    /// to commit or roll back; empty otherwise.
    pub prepared: Vec<String>,
    /// What was done around the COPY, and why.
    pub plan: crate::LoadPlan,
    /// Seconds per phase; `seconds` is their sum: the time until the table is ready to query.
    pub phases: Phases,
    /// Things the user should know (a strategy that could not be applied, and why).
    pub notes: Vec<String>,
}

impl LoadSummary {
    /// A load that wrote nothing because its rows are in the table already (see
    /// [`crate::commits`]): `note` says why.
    pub fn nothing_loaded(
        input: String,
        table: String,
        version: String,
        plan: crate::LoadPlan,
        seconds: f64,
        note: String,
    ) -> LoadSummary {
        LoadSummary {
            input,
            table,
            rows: 0,
            bytes: 0,
            seconds,
            rows_per_second: 0.0,
            megabytes_per_second: 0.0,
            load_rows_per_second: 0.0,
            load_megabytes_per_second: 0.0,
            connections: 0,
            parallelism: Parallelism::fixed(0, "nothing to load"),
            workers: 0,
            engine: EngineReport {
                version,
                method: "none",
                ..EngineReport::default()
            },
            rows_rejected: 0,
            rejects_file: None,
            rejects_log: None,
            // Not a `--check`: the rows are in the table; `connections: 0` says none were sent.
            loaded: true,
            check_skipped: None,
            rows_resumed: 0,
            blocks: None,
            prepared: Vec::new(),
            plan,
            phases: Phases {
                inspect: seconds,
                ..Phases::default()
            },
            notes: vec![note],
        }
    }
}

/// What the engine did, in its own terms: the one part of the summary that differs from engine
/// to engine.
#[derive(Debug, Clone, Default, Serialize)]
pub struct EngineReport {
    /// The engine and its version (`PostgreSQL 18.1`, `SQLite 3.50.4`).
    pub version: String,
    /// How the rows were written (`binary COPY`, `LOAD DATA LOCAL`, `multi-row INSERT`).
    pub method: &'static str,
    /// Why the rows went in a slower form than the engine's best, when they did.
    pub slower_because: Option<String>,
    /// The log the engine wrote while the load ran, where it says (includes any concurrent
    /// activity).
    pub log: Option<Log>,
    /// Values the engine's own parser read for the client, one by one (PostgreSQL's values
    /// no client encoder reads exactly, see inrush-encode).
    pub values_read_by_server: u64,
}

/// A log the engine writes every change to before its data files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Log {
    /// What the engine calls it: PostgreSQL's `WAL`, InnoDB's `redo log`.
    pub name: &'static str,
    pub bytes: u64,
}

/// A resumable load's blocks, when several processes may share the input (`--resume`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Blocks {
    /// Blocks this process committed.
    pub loaded: u64,
    /// Blocks another process held when this one came to them, and committed.
    pub by_others: u64,
    /// The rows of those blocks.
    pub rows_by_others: u64,
    /// Blocks another process took and let go uncommitted (it stopped), loaded here (counted
    /// in `loaded` too).
    pub taken_over: u64,
}

/// How many connections a load used and why: fixed (`--connections N`, or a load that must be
/// one transaction), or chosen while it ran from the rows per second it measured.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Parallelism {
    /// Chosen during the load (false: fixed).
    pub adaptive: bool,
    /// Connections opened, each with its transaction: the most the load could stream over.
    pub opened: usize,
    /// Connections streaming at the end: the load's choice.
    pub chosen: usize,
    /// Why, in a sentence or two (what was measured, what the server's sessions waited on).
    pub reason: String,
}

impl Parallelism {
    pub fn fixed(connections: usize, reason: impl Into<String>) -> Parallelism {
        Parallelism {
            adaptive: false,
            opened: connections,
            chosen: connections,
            reason: reason.into(),
        }
    }
}

#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Phases {
    pub inspect: f64,
    pub drop_indexes: f64,
    pub load: f64,
    pub rebuild_indexes: f64,
    /// ANALYZE or VACUUM (ANALYZE) after the load.
    pub maintain: f64,
}

/// What `inrush recover` did, on any engine: definitions recreated, transactions a dead load
/// or coordinator left committed or rolled back (by name), and what it left to a load or
/// coordinator still running, each with why.
#[derive(Debug, Default, Serialize)]
pub struct Recovered {
    pub recreated: Vec<String>,
    pub committed: Vec<String>,
    pub rolled_back: Vec<String>,
    pub left_alone: Vec<String>,
    /// Why there was nothing to do, when there was not.
    #[serde(skip)]
    pub nothing: &'static str,
}

impl Recovered {
    /// How a table left to the live load that holds it is said, on every engine.
    pub fn live_load(table: &str) -> String {
        format!(
            "{table} (an inrush load of it is running and puts its definitions back when it ends)"
        )
    }
}
