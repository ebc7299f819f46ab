//! How a running load tells the outside world what it is doing. Library crates never print:
//! they update a [`Progress`] and announce phases to a [`Reporter`].

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The stages of one load, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    Inspect,
    Load,
    Commit,
    /// Recreating indexes dropped for the load.
    Indexes,
    /// ANALYZE, or VACUUM (ANALYZE) when `vacuum`, so the table is ready to query.
    Maintain {
        vacuum: bool,
    },
    Done,
}

/// Counters shared by the pipeline's threads; cheap to update, read by whoever reports.
#[derive(Debug, Default)]
pub struct Progress {
    /// Bytes of input consumed (compressed bytes for compressed input); shared with the reader.
    pub bytes_read: Arc<AtomicU64>,
    /// Total input bytes when known up front (0 when not, e.g. standard input).
    pub bytes_total: AtomicU64,
    /// Rows encoded and handed to a COPY stream.
    pub rows_sent: AtomicU64,
}

impl Progress {
    pub fn snapshot(&self) -> ProgressSnapshot {
        let total = self.bytes_total.load(Ordering::Relaxed);
        ProgressSnapshot {
            bytes_read: self.bytes_read.load(Ordering::Relaxed),
            bytes_total: (total > 0).then_some(total),
            rows_sent: self.rows_sent.load(Ordering::Relaxed),
        }
    }
}

/// A consistent-enough copy of [`Progress`] for display.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProgressSnapshot {
    pub bytes_read: u64,
    pub bytes_total: Option<u64>,
    pub rows_sent: u64,
}

/// Receives phase changes and periodic progress; the CLI draws a bar, `--json` stays quiet,
/// the lab records a time series.
pub trait Reporter: Send + Sync {
    fn phase(&self, phase: Phase);
    fn progress(&self, snapshot: ProgressSnapshot);
    /// The load waits on something outside it (a lock another session holds): `what` says
    /// what and who, in a sentence. Once per cause.
    fn waiting(&self, what: &str) {
        let _ = what;
    }
}

/// A reporter that ignores everything (tests, embedding).
pub struct Silent;

impl Reporter for Silent {
    fn phase(&self, _: Phase) {}
    fn progress(&self, _: ProgressSnapshot) {}
}
