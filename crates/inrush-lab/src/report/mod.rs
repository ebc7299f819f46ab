//! The report folder: `results.json` (every raw figure), `report.md` and a self-contained
//! `report.html`, all rendered from [`LabResults`] alone, so `inrush lab report DIR` can render
//! them again from `results.json`.
//!
//! `figures` turns an experiment into the rows both renderers print (median run, ratios to the
//! baselines, WAL per row); `markdown` and `html` only lay them out; `svg` draws the charts.

mod escape;
mod html;
mod markdown;
mod svg;

pub use html::render as render_html;
pub use markdown::render as render_markdown;

use crate::results::{ExperimentResult, Holds, LabResults, Measurement, Status, Variation};
#[cfg(test)]
use crate::{results, verdict};
use crate::{Error, Result};
use std::path::{Path, PathBuf};

/// The files a report folder holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportFiles {
    pub json: PathBuf,
    pub markdown: PathBuf,
    pub html: PathBuf,
}

/// Writes `results.json`, `report.md` and `report.html` into `dir` (created if missing).
pub fn write(results: &LabResults, dir: &Path) -> Result<ReportFiles> {
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let files = ReportFiles {
        json: dir.join("results.json"),
        markdown: dir.join("report.md"),
        html: dir.join("report.html"),
    };
    let mut json = serde_json::to_vec_pretty(results).map_err(|cause| Error::Results {
        path: files.json.clone(),
        cause,
    })?;
    json.push(b'\n');
    std::fs::write(&files.json, json).map_err(io(&files.json))?;
    std::fs::write(&files.markdown, render_markdown(results)).map_err(io(&files.markdown))?;
    std::fs::write(&files.html, render_html(results)).map_err(io(&files.html))?;
    Ok(files)
}

/// Reads `dir/results.json` and renders the report again (`inrush lab report DIR`).
pub fn rerender(dir: &Path) -> Result<ReportFiles> {
    let path = dir.join("results.json");
    let bytes = std::fs::read(&path).map_err(io(&path))?;
    let results: LabResults =
        serde_json::from_slice(&bytes).map_err(|cause| Error::Results { path, cause })?;
    write(&results, dir)
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> Error {
    let path = path.to_path_buf();
    move |cause| Error::Io { path, cause }
}

/// One table row: a variation's median run and how it compares with the baselines.
pub(crate) struct Row<'a> {
    pub variation: &'a Variation,
    /// The run with the median time (the figure tables and charts show); `None` without runs.
    pub median: Option<&'a Measurement>,
    /// Our median time over our baseline's.
    pub ratio: Option<f64>,
    /// The seed's time over the seed's baseline time.
    pub seed_ratio: Option<f64>,
}

impl Row<'_> {
    pub fn seconds(&self) -> Option<f64> {
        self.median.map(|m| m.seconds)
    }
    pub fn wal_bytes_per_row(&self) -> Option<f64> {
        self.median
            .filter(|m| m.rows > 0)
            .map(|m| m.wal_bytes_per_row())
    }
    pub fn wal_records_per_row(&self) -> Option<f64> {
        let m = self.median.filter(|m| m.rows > 0)?;
        Some(m.wal_records? as f64 / m.rows as f64)
    }
}

/// `a / b` when both are finite and `b` is positive.
fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if a.is_finite() && b.is_finite() && b > 0.0 => Some(a / b),
        _ => None,
    }
}

pub(crate) fn rows(e: &ExperimentResult) -> Vec<Row<'_>> {
    let baseline = e.variations.iter().find(|v| v.baseline);
    let base_seconds = baseline.and_then(Variation::median_seconds);
    let base_seed = baseline.and_then(|b| b.seed_seconds);
    e.variations
        .iter()
        .map(|v| {
            let median = v.median_run();
            Row {
                variation: v,
                median,
                ratio: ratio(median.map(|m| m.seconds), base_seconds),
                seed_ratio: ratio(v.seed_seconds, base_seed),
            }
        })
        .collect()
}

/// How the verdict column reads: `holds`, `partly`, `does not hold`, `inconclusive`, or why
/// there is none.
pub(crate) fn verdict_word(e: &ExperimentResult) -> &'static str {
    match (&e.status, &e.verdict) {
        (Status::Skipped(_), _) => "skipped",
        (Status::Failed(_), _) => "failed",
        (Status::Ran, None) => "no verdict",
        (Status::Ran, Some(v)) => match v.holds {
            Holds::Yes => "holds",
            Holds::Partly => "partly",
            Holds::No => "does not hold",
            Holds::Inconclusive => "inconclusive",
        },
    }
}

pub(crate) fn status_word(s: &Status) -> &'static str {
    match s {
        Status::Ran => "ran",
        Status::Skipped(_) => "skipped",
        Status::Failed(_) => "failed",
    }
}

#[cfg(test)]
#[path = "../../tests/support/fixture.rs"]
pub(crate) mod fixture;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_compare_medians_with_the_baselines() {
        let lab = fixture::sample();
        let a3 = lab.experiments.iter().find(|e| e.id == "A3").unwrap();
        let rows = rows(a3);
        assert_eq!(rows[0].ratio, Some(1.0));
        assert_eq!(rows[0].seed_ratio, Some(1.0));
        let last = rows.last().unwrap();
        assert!(last.ratio.unwrap() < 0.2, "{:?}", last.ratio);
        assert!((last.seed_ratio.unwrap() - 7.58 / 92.05).abs() < 1e-12);
        // The median run is the one whose time is the median.
        let m = rows[0].median.unwrap();
        assert_eq!(Some(m.seconds), rows[0].variation.median_seconds());
    }

    #[test]
    fn missing_baseline_or_zero_times_give_no_ratio() {
        assert_eq!(ratio(Some(1.0), Some(0.0)), None);
        assert_eq!(ratio(Some(f64::NAN), Some(1.0)), None);
        assert_eq!(ratio(None, Some(1.0)), None);
        assert_eq!(ratio(Some(2.0), Some(4.0)), Some(0.5));
    }
}
