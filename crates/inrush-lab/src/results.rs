//! What a lab run found: the contract between running experiments and rendering the report.
//! `results.json` is this structure serialised, so `inrush lab report DIR` can re-render a
//! report from it alone.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Everything one `inrush lab run` measured, with where it was measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LabResults {
    /// The inrush version that ran the lab.
    pub inrush_version: String,
    /// When the run started, RFC 3339 in UTC.
    pub started_at: String,
    /// `--scale`: 1.0 is the quick default; row counts are multiplied by it.
    #[serde(deserialize_with = "lenient::f64")]
    pub scale: f64,
    /// `--repeat`: how many runs each variation has.
    pub repeat: u32,
    pub environment: Environment,
    pub experiments: Vec<ExperimentResult>,
}

/// The machine and server the figures belong to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Environment {
    /// "PostgreSQL" or "MariaDB" (results written before MariaDB: PostgreSQL).
    #[serde(default = "postgresql")]
    pub engine: String,
    /// `version()` of the server.
    pub server_version: String,
    pub server_version_num: u32,
    /// Whether the lab started its own private server (no `--to`).
    pub private_server: bool,
    /// The settings that matter for inserts (PostgreSQL: wal_level, synchronous_commit,
    /// shared_buffers, ...; MariaDB: innodb_buffer_pool_size, innodb_flush_log_at_trx_commit,
    /// innodb_autoinc_lock_mode, ...), as the server reported them before the run.
    pub settings: BTreeMap<String, String>,
    /// The client machine: logical cores and memory.
    pub client_cores: usize,
    pub client_memory_bytes: u64,
    /// Operating system and disk, as far as the client can tell (e.g. "Linux 6.1; ext4 on
    /// /dev/vda"); free text.
    pub os: String,
    pub disk: String,
}

fn postgresql() -> String {
    "PostgreSQL".into()
}

impl Environment {
    /// What the engine calls its log, as the report's columns and charts name it.
    pub fn log_name(&self) -> &'static str {
        match self.engine.as_str() {
            "MariaDB" => "redo",
            _ => "WAL",
        }
    }
}

/// One experiment of the catalogue (e.g. "B4") and what happened to it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExperimentResult {
    /// Catalogue id: A1..A6, B1..B9, C1..C5, D1..D8.
    pub id: String,
    pub title: String,
    /// The seed table mirrored, e.g. "000 Table 6 (DB2 tests 65-68)".
    pub seed_source: String,
    /// The advice under test, one sentence: "Commit every 1000 rows rather than every row".
    pub advice: String,
    pub status: Status,
    pub variations: Vec<Variation>,
    /// Whether the field report's advice holds here, and by what factor; `None` when skipped or failed.
    pub verdict: Option<Verdict>,
    /// Anything the reader must know: extrapolations, settings that could not be changed, ...
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "state", content = "reason")]
pub enum Status {
    Ran,
    /// Not run, and why (a right the user lacks, a setting that needs a restart, ...).
    Skipped(String),
    /// Started but failed; the error as the server or client reported it.
    Failed(String),
}

/// One row of the experiment's table: a method or setting, with our runs and the field report's figure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Variation {
    /// e.g. "commit every 100 rows", "2 secondary indexes present".
    pub label: String,
    /// The variation the others are compared with (exactly one per experiment).
    pub baseline: bool,
    /// The field report's published figure as printed there, e.g. "10.11 s (10k rows)".
    pub seed_figure: Option<String>,
    /// The field report's figure in seconds, when it is a time, for ratios against the field report's baseline.
    pub seed_seconds: Option<f64>,
    /// One measurement per `--repeat`.
    pub runs: Vec<Measurement>,
}

/// One timed run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Measurement {
    /// Rows loaded (checked against the rows asked for).
    pub rows: u64,
    /// Wall time from the first statement to COMMIT returning (CHECKPOINT excluded).
    #[serde(deserialize_with = "lenient::f64")]
    pub seconds: f64,
    #[serde(deserialize_with = "lenient::f64")]
    pub rows_per_second: f64,
    /// Log written during the run: PostgreSQL's WAL (LSN difference), MariaDB's redo
    /// (`Innodb_lsn_current` difference).
    pub wal_bytes: u64,
    /// WAL records, where the server reports them (pg_stat_wal.wal_records).
    pub wal_records: Option<u64>,
    /// CPU time the client process used during the run.
    #[serde(deserialize_with = "lenient::f64")]
    pub client_cpu_seconds: f64,
    /// Insert rate over the run: cumulative rows at elapsed seconds, sampled by the client.
    pub rate: Vec<RateSample>,
    /// Settings this run changed on the server (restored afterwards): name -> value used.
    pub settings_changed: BTreeMap<String, String>,
    /// Other timed figures of the run, e.g. "first_scan_seconds", "vacuum_seconds".
    #[serde(deserialize_with = "lenient::map")]
    pub extra: BTreeMap<String, f64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RateSample {
    #[serde(deserialize_with = "lenient::f64")]
    pub seconds: f64,
    pub rows: u64,
}

/// Does the field report's advice hold here, and by how much.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    pub holds: Holds,
    /// Our factor for the advice (e.g. 7.9 means the advised way was 7.9x faster here).
    #[serde(deserialize_with = "lenient::f64")]
    pub factor: f64,
    /// The field report's factor for the same comparison, when it published one.
    pub seed_factor: Option<f64>,
    /// One line that says what was measured, in the factor's direction, and why when
    /// inconclusive: "Holds here: \"autocommit\" takes 7.90x the time per row of \"commit every
    /// 1000\" (the field report: 12.1x; advice tested: ...)."
    pub text: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Holds {
    Yes,
    /// The direction holds but the effect is much smaller (or larger) than the field report's.
    Partly,
    No,
    /// Our runs cannot tell: the difference is inside their spread, or they are too short to
    /// time (the verdict's text says which).
    Inconclusive,
}

/// JSON has no NaN or infinity: `serde_json` writes such figures (a run of 0 rows in 0 s) as
/// `null`. They read back as NaN, so a report folder can always be rendered again.
mod lenient {
    use serde::{Deserialize, Deserializer};
    use std::collections::BTreeMap;

    pub fn f64<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
    }

    pub fn map<'de, D: Deserializer<'de>>(d: D) -> Result<BTreeMap<String, f64>, D::Error> {
        let map = BTreeMap::<String, Option<f64>>::deserialize(d)?;
        Ok(map
            .into_iter()
            .map(|(k, v)| (k, v.unwrap_or(f64::NAN)))
            .collect())
    }
}

impl Measurement {
    /// WAL bytes per row loaded.
    pub fn wal_bytes_per_row(&self) -> f64 {
        self.wal_bytes as f64 / self.rows.max(1) as f64
    }
}

impl Variation {
    /// The run whose time is the median: every figure a table row or chart shows comes from
    /// this one run, so its seconds, rows/s and WAL belong together.
    pub fn median_run(&self) -> Option<&Measurement> {
        let mut runs: Vec<&Measurement> = self.runs.iter().collect();
        runs.sort_by(|a, b| a.seconds.total_cmp(&b.seconds));
        runs.get(runs.len() / 2).copied()
    }

    /// The median time over the runs (the figure the tables and charts show).
    pub fn median_seconds(&self) -> Option<f64> {
        self.median_run().map(|m| m.seconds)
    }
}
