//! `inrush copy`: a whole database from one engine to another, at load speed.
//!
//! Owns the order of a copy, for any pair of engines (connector-x's one dispatcher): read the
//! source's tables ([`SchemaSource::schema`]), design each for the target
//! ([`SchemaTarget::design`]), take one consistent image of the source
//! ([`SchemaSource::snapshot`]), then `jobs` workers take what the board (`board.rs`) says
//! may run next: a table's load through the ordinary pipeline (`inrush_load::load_into`, a
//! query split by the table's integer key into parallel reads), largest first; its keys and
//! indexes all at once while other tables still load (pgcopydb's overlap); a foreign key as
//! soon as both its tables are built; numbering restarted past the copied maximum. Every step
//! is recorded in the target's copy ledger as it ends, so a copy that dies resumes where it
//! stopped: a table whose rows were committed stays, a table in flight is emptied and loaded
//! again. `--verify` reads both sides back and compares each table's rows (`verify.rs`).
//!
//! Does not own: any engine's catalog or DDL (each engine crate implements the two traits of
//! `inrush_core::database`), nor how rows are read, checked or written (`inrush-load`).

mod board;
mod failed;
mod pattern;
mod plan;
mod run;
mod verify;

pub use failed::Failed;
pub use inrush_core::database::{SchemaSource, SchemaTarget};
pub use plan::{plan, CopyPlan, TablePlan, TableState};
pub use run::{copy, CopyReporter, CopySummary, Stop, TableReport, Verified};
pub use verify::Digest;

use std::path::PathBuf;
use std::sync::Arc;

/// What to copy and how.
#[derive(Debug, Clone)]
pub struct CopyOptions {
    /// Patterns (`*`, `?`) of the tables to copy, matched against `name` and `schema.name`;
    /// empty: every table.
    pub tables: Vec<String>,
    /// Patterns of tables to leave out.
    pub exclude: Vec<String>,
    /// Make the tables, keys and indexes; copy no row.
    pub schema_only: bool,
    /// Copy rows into tables that exist already; make nothing.
    pub data_only: bool,
    /// Tables loaded at once.
    pub jobs: usize,
    /// Parallel reads (and load streams) of one table: its key's range cut in this many parts.
    pub connections: usize,
    /// Parse/encode threads of each table's load.
    pub workers: usize,
    /// Bad rows a table may have before its load fails (its reject file gets them).
    pub max_errors: u64,
    /// Where each table's reject file goes (`<table>.rejects`); default: the working directory.
    pub rejects: Option<PathBuf>,
    /// Name every schema, table, column, key and index in lower case in the target, as
    /// PostgreSQL folds a name written without quotes.
    pub lower_case: bool,
    /// Compare each table's row count and checksum with the source's image after its load.
    pub verify: bool,
    /// Asked from outside (a signal) to stop.
    pub stop: Arc<Stop>,
}

impl CopyOptions {
    pub fn new() -> CopyOptions {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        CopyOptions {
            tables: Vec::new(),
            exclude: Vec::new(),
            schema_only: false,
            data_only: false,
            jobs: cores.clamp(2, 4),
            connections: cores.clamp(1, 4),
            workers: cores,
            max_errors: 0,
            rejects: None,
            lower_case: false,
            verify: false,
            stop: Arc::default(),
        }
    }
}

impl Default for CopyOptions {
    fn default() -> Self {
        Self::new()
    }
}
