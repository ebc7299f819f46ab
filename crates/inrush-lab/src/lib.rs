//! The insert-performance lab: the experiments of `../shared/LAB.md` (A1-D8), run against the
//! user's own PostgreSQL, each figure printed beside the seed's published one.
//!
//! Owns: the catalogue of experiments, running them (fresh table, seeded data, CHECKPOINT,
//! timing that includes COMMIT, WAL per row, insert rate over time, client CPU), restoring any
//! server setting an experiment changed, and the report folder (`results.json`, `report.md`,
//! `report.html`) rendered from [`results::LabResults`].
//!
//! Does not own: parsing or encoding input for real loads (`inrush-load` does; the lab calls it
//! for the methods that are inrush's own), connection options or the private server
//! (`inrush-postgres`), or the command line (`inrush`).

pub mod report;
pub mod results;

use std::path::PathBuf;

/// What can go wrong in the lab.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A report folder or one of its files could not be read or written.
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// `results.json` is not a lab result.
    #[error("{path}: not a lab results file: {source}")]
    Results {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
