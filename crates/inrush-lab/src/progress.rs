//! What the lab tells whoever watches it run.

use crate::results::ExperimentResult;

/// Where the lab is, for a progress display.
#[derive(Debug, Clone)]
pub struct ProgressInfo {
    pub experiment: String,
    pub title: String,
    /// 1-based position among the selected experiments.
    pub index: usize,
    pub experiments: usize,
    pub variation: String,
    pub run: u32,
    pub repeat: u32,
    pub elapsed_seconds: f64,
    /// Estimated from the work done so far (rows weighted by each method's cost).
    pub remaining_seconds: Option<f64>,
    /// 0..1 of the estimated work.
    pub fraction: f64,
}

/// Receives progress; the CLI draws it and prints each experiment's table as it finishes.
pub trait Progress {
    fn running(&self, info: &ProgressInfo);
    fn message(&self, _line: &str) {}
    fn experiment_done(&self, _result: &ExperimentResult) {}
}

/// Nothing shown.
pub struct Silent;
impl Progress for Silent {
    fn running(&self, _: &ProgressInfo) {}
}
