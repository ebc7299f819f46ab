//! What one variation does: the table, the data, the insert method, the settings, and what is
//! timed after the load. Plans are data, so the catalogue lists them and the runner executes them.
//!
//! SQL in a plan uses placeholders: `{t}` is the run's table (schema-qualified), `{s}` its schema
//! (every run gets a fresh schema, dropped afterwards), `{n}` the run's row count.

use crate::data::DataKind;
use inrush_read::generate::SQLBULKCOPY_COLUMNS;

/// How rows reach the server.
#[derive(Debug, Clone, PartialEq)]
pub enum Method {
    /// One `INSERT ... VALUES (literals)` per row, simple query protocol, autocommit.
    Literal,
    /// A prepared single-row INSERT, one execute per row; `commit_every: None` is autocommit.
    /// `lock`: each transaction starts with `LOCK TABLE ... IN EXCLUSIVE MODE`.
    Prepared {
        commit_every: Option<u64>,
        lock: bool,
    },
    /// A prepared multi-row `INSERT ... VALUES (...), (...)` of `rows_per_statement` rows.
    MultiRow {
        rows_per_statement: usize,
        commit_every: u64,
        lock: bool,
    },
    /// A prepared single-row INSERT with `depth` executes in flight before awaiting any
    /// (protocol pipelining).
    Pipelined { depth: usize, commit_every: u64 },
    /// COPY FROM STDIN over `streams` connections, each loading a contiguous share of the rows.
    /// `rows_per_copy`: each COPY statement (and its commit) carries at most this many rows
    /// (SqlBulkCopy's BatchSize); `None`: one COPY per stream. `lock`: LOCK TABLE EXCLUSIVE in
    /// each COPY's transaction. `freeze`: TRUNCATE and COPY ... FREEZE in one transaction (one
    /// stream only).
    Copy {
        binary: bool,
        streams: usize,
        rows_per_copy: Option<u64>,
        lock: bool,
        freeze: bool,
    },
    /// Producers (generate, parse, encode) and COPY consumers, one pair per stream, either at
    /// the same time or producers first (D8). The producing is timed.
    Produce { streams: usize, overlap: bool },
    /// `INSERT INTO t SELECT * FROM staging` (the staging table is filled before timing).
    InsertSelect,
    /// inrush's own load (`inrush_postgres::load::run`: parse/encode workers, binary COPY over
    /// `connections`) from a CSV file of the rows written before timing; no ANALYZE after.
    InrushLoad { connections: usize },
    /// `COPY staging TO STDOUT (FORMAT binary)` piped into `COPY t FROM STDIN` on a second
    /// connection.
    CopyPipe,
}

impl Method {
    /// Loading connections the method opens.
    pub fn connections(&self) -> usize {
        match self {
            Method::Copy { streams, .. } | Method::Produce { streams, .. } => (*streams).max(1),
            Method::CopyPipe => 2,
            _ => 1,
        }
    }

    pub fn uses_staging(&self) -> bool {
        matches!(self, Method::InsertSelect | Method::CopyPipe)
    }

    /// A rough cost per row in microseconds on a small machine, for the time-left estimate.
    pub fn micros_per_row(&self) -> f64 {
        match self {
            Method::Literal => 1500.0,
            Method::Prepared {
                commit_every: None, ..
            } => 1200.0,
            Method::Prepared {
                commit_every: Some(n),
                ..
            } => 60.0 + 1000.0 / *n as f64,
            Method::MultiRow {
                rows_per_statement,
                commit_every,
                ..
            } => 10.0 + 60.0 / *rows_per_statement as f64 + 1000.0 / *commit_every as f64,
            Method::Pipelined { commit_every, .. } => 25.0 + 1000.0 / *commit_every as f64,
            Method::Copy { rows_per_copy, .. } => {
                6.0 + rows_per_copy.map_or(0.0, |n| 1500.0 / n as f64)
            }
            Method::Produce { .. } => 9.0,
            Method::InsertSelect | Method::CopyPipe => 5.0,
            Method::InrushLoad { .. } => 6.0,
        }
    }
}

/// One variation's run, at scale 1.0.
#[derive(Debug, Clone)]
pub struct RunPlan {
    /// Rows at `--scale 1.0` (the quick default); multiplied by the scale.
    pub rows: u64,
    /// `CREATE TABLE {t} ...`.
    pub create: String,
    /// Untimed SQL after the table is created (constraints, indexes, triggers, prefill), one
    /// statement per entry (so VACUUM may be one).
    pub setup: Vec<String>,
    pub data: DataKind,
    /// Session settings on every loading connection (`SET name = value`), e.g.
    /// synchronous_commit.
    pub session: Vec<(String, String)>,
    /// Server settings changed with ALTER SYSTEM for this run and restored after it.
    pub server: Vec<(String, String)>,
    /// Whether `server` settings need a restart (only possible on the lab's private server).
    pub restart: bool,
    pub method: Method,
    /// Timed and included in the run's seconds (e.g. indexes created after the load); each also
    /// gets `<label>_seconds` in the extras.
    pub after: Vec<(String, String)>,
    /// Timed after the run, not included in its seconds: `<label>_seconds` in the extras, and
    /// `query_ready_seconds` = the run plus all of them.
    pub followups: Vec<(String, String)>,
}

/// `CREATE TABLE {t} (the SqlBulkCopy columns)`, autovacuum off so it does not blur the figures.
pub fn plain_table() -> String {
    table_with("")
}

/// The SqlBulkCopy table with extra column or constraint definitions appended.
pub fn table_with(extra: &str) -> String {
    let sep = if extra.is_empty() { "" } else { ", " };
    format!(
        "CREATE TABLE {{t}} ({SQLBULKCOPY_COLUMNS}{sep}{extra}) WITH (autovacuum_enabled = off)"
    )
}

impl RunPlan {
    pub fn new(rows: u64, method: Method) -> Self {
        RunPlan {
            rows,
            create: plain_table(),
            setup: Vec::new(),
            data: DataKind::Random,
            session: Vec::new(),
            server: Vec::new(),
            restart: false,
            method,
            after: Vec::new(),
            followups: Vec::new(),
        }
    }

    pub fn create(mut self, sql: impl Into<String>) -> Self {
        self.create = sql.into();
        self
    }

    pub fn setup(mut self, sql: impl Into<String>) -> Self {
        self.setup.push(sql.into());
        self
    }

    pub fn data(mut self, kind: DataKind) -> Self {
        self.data = kind;
        self
    }

    pub fn session(mut self, name: &str, value: &str) -> Self {
        self.session.push((name.into(), value.into()));
        self
    }

    pub fn server(mut self, name: &str, value: &str, restart: bool) -> Self {
        self.server.push((name.into(), value.into()));
        self.restart |= restart;
        self
    }

    pub fn after(mut self, label: &str, sql: impl Into<String>) -> Self {
        self.after.push((label.into(), sql.into()));
        self
    }

    pub fn followup(mut self, label: &str, sql: impl Into<String>) -> Self {
        self.followups.push((label.into(), sql.into()));
        self
    }

    /// Rows at `scale` (at least 10, so every method sends something).
    pub fn rows_at(&self, scale: f64) -> u64 {
        ((self.rows as f64 * scale).round() as u64).max(10)
    }
}

/// Replaces `{t}`, `{s}` and `{n}` (the run's row count).
pub fn expand(sql: &str, schema: &str, rows: u64) -> String {
    sql.replace("{t}", &format!("{schema}.t"))
        .replace("{s}", schema)
        .replace("{n}", &rows.to_string())
}

// Method shorthands for the catalogue.
pub fn literal() -> Method {
    Method::Literal
}
pub fn prepared(commit_every: Option<u64>) -> Method {
    Method::Prepared {
        commit_every,
        lock: false,
    }
}
pub fn multi_row(rows_per_statement: usize, commit_every: u64) -> Method {
    Method::MultiRow {
        rows_per_statement,
        commit_every,
        lock: false,
    }
}
pub fn pipelined(depth: usize, commit_every: u64) -> Method {
    Method::Pipelined {
        depth,
        commit_every,
    }
}
pub fn copy_binary(streams: usize) -> Method {
    Method::Copy {
        binary: true,
        streams,
        rows_per_copy: None,
        lock: false,
        freeze: false,
    }
}
pub fn copy_text() -> Method {
    Method::Copy {
        binary: false,
        streams: 1,
        rows_per_copy: None,
        lock: false,
        freeze: false,
    }
}
