//! The insert-performance lab: the experiments of `../shared/LAB.md` (A1-D8), run against the
//! user's own PostgreSQL, MariaDB or any database behind an ODBC driver, each figure printed
//! beside the field report's published one.
//!
//! Owns: the catalogue of experiments, running them (fresh table, seeded data, CHECKPOINT,
//! timing that includes COMMIT, WAL per row, insert rate over time, client CPU), restoring any
//! server setting an experiment changed, and the report folder (`results.json`, `report.md`,
//! `report.html`) rendered from [`results::LabResults`].
//!
//! One runner and one report for every engine: what is engine-specific sits behind
//! [`engine::Engine`], implemented for PostgreSQL ([`postgres`], [`measure`], [`methods`]) and
//! MariaDB ([`mariadb`], with its catalogue mapping each experiment onto InnoDB or saying why it
//! does not apply) and ODBC ([`odbc`]: the experiments on how rows are sent, as parameter
//! arrays through the driver).
//!
//! Does not own: parsing or encoding input for real loads (`inrush-load` does; the lab calls it
//! for the methods that are inrush's own), connection options or the private server
//! (`inrush-postgres`), MariaDB's SQL (`inrush_mysql::lab`), or the command line (`inrush`).

pub mod catalogue;
pub mod data;
pub mod engine;
mod fmt;
mod machine;
pub mod mariadb;
pub mod measure;
pub mod methods;
pub mod odbc;
pub mod plan;
pub mod postgres;
pub mod progress;
pub mod report;
pub mod results;
pub mod run;
pub mod verdict;

pub use progress::{Progress, ProgressInfo};
pub use run::{run, LabOptions, LabTarget};

use std::path::PathBuf;

/// What can go wrong in the lab. Each message says its cause in full, so no variant exposes the
/// cause again as its `source()` (printing the chain would repeat it).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A report folder or one of its files could not be read or written.
    #[error("{path}: {cause}")]
    Io {
        path: PathBuf,
        cause: std::io::Error,
    },
    /// `results.json` is not a lab result.
    #[error("{path}: not a lab results file: {cause}")]
    Results {
        path: PathBuf,
        cause: serde_json::Error,
    },
    /// The server or a connection failed while doing `what`.
    #[error("{what}: {}", inrush_postgres::describe_pg_error(.cause))]
    Query {
        what: String,
        cause: tokio_postgres::Error,
    },
    /// Connecting, or the private server, failed.
    #[error(transparent)]
    Postgres(#[from] inrush_postgres::Error),
    /// MariaDB or an ODBC driver refused a statement or a connection, or inrush's own load
    /// into it failed (the message names the statement).
    #[error(transparent)]
    Load(#[from] inrush_load::Error),
    /// The table holds a different number of rows than the run loaded.
    #[error("{table}: {found} rows after the run, {asked} asked for")]
    RowCount {
        table: String,
        asked: u64,
        found: u64,
    },
    /// The seeded data could not be generated or read back.
    #[error("seeded data: {0}")]
    Data(String),
    /// `lab run` was given an id that is not in the catalogue.
    #[error("unknown experiment {0:?} (see `inrush lab list`)")]
    UnknownExperiment(String),
    /// Options that make no sense (scale <= 0, repeat 0, ...).
    #[error("{0}")]
    Usage(String),
    /// A setting changed for an experiment could not be restored.
    #[error("restoring server setting {name}: {message}")]
    Restore { name: String, message: String },
    /// Ctrl-C: the lab stopped between two runs (settings restored).
    #[error("interrupted")]
    Interrupted,
    /// A loading task panicked or was cancelled.
    #[error("a loading task failed: {0}")]
    Task(String),
}

impl Error {
    /// Wraps a driver error with what was being done.
    pub(crate) fn query(what: impl Into<String>) -> impl FnOnce(tokio_postgres::Error) -> Error {
        let what = what.into();
        move |cause| Error::Query { what, cause }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
