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

/// Number formats shared by both renderers; `—` for anything missing or not finite.
pub(crate) mod fmt {
    pub const NONE: &str = "—";

    pub fn opt(v: Option<f64>, f: impl Fn(f64) -> String) -> String {
        v.filter(|v| v.is_finite())
            .map(f)
            .unwrap_or_else(|| NONE.into())
    }

    pub fn seconds(s: f64) -> String {
        if s.abs() >= 100.0 {
            format!("{s:.1} s")
        } else if s.abs() >= 1.0 {
            format!("{s:.2} s")
        } else {
            format!("{s:.3} s")
        }
    }

    pub fn ratio(r: f64) -> String {
        if r.abs() >= 100.0 {
            format!("{r:.0}x")
        } else if r.abs() >= 0.1 || r == 0.0 {
            format!("{r:.2}x")
        } else {
            format!("{r:.3}x")
        }
    }

    pub fn factor(r: f64) -> String {
        if r.abs() >= 100.0 {
            format!("{r:.0}x")
        } else if r.abs() >= 10.0 {
            format!("{r:.1}x")
        } else {
            format!("{r:.2}x")
        }
    }

    /// `1234567` → `1,234,567`.
    pub fn group(n: u64) -> String {
        let digits: Vec<char> = n.to_string().chars().collect();
        let head = match digits.len() % 3 {
            0 => 3,
            h => h,
        }
        .min(digits.len());
        let mut out: String = digits[..head].iter().collect();
        for chunk in digits[head..].chunks(3) {
            out.push(',');
            out.extend(chunk);
        }
        out
    }

    /// Rows per second, whole and grouped.
    pub fn rate(r: f64) -> String {
        if r.is_finite() && r >= 0.0 {
            group(r.round() as u64)
        } else {
            NONE.into()
        }
    }

    pub fn per_row(v: f64) -> String {
        if v.abs() >= 100.0 {
            format!("{v:.0}")
        } else if v.abs() >= 1.0 || v == 0.0 {
            format!("{v:.2}")
        } else {
            format!("{v:.3}")
        }
    }

    /// Binary units: `7.8 GiB`.
    pub fn bytes(n: u64) -> String {
        const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
        let mut v = n as f64;
        let mut unit = 0;
        while v >= 1024.0 && unit + 1 < UNITS.len() {
            v /= 1024.0;
            unit += 1;
        }
        if unit == 0 {
            format!("{n} B")
        } else {
            format!("{v:.1} {}", UNITS[unit])
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn numbers() {
            assert_eq!(group(1234567), "1,234,567");
            assert_eq!(group(12), "12");
            assert_eq!(group(123), "123");
            assert_eq!(group(1000), "1,000");
            assert_eq!(group(0), "0");
            assert_eq!(rate(f64::NAN), NONE);
            assert_eq!(rate(999.6), "1,000");
            assert_eq!(opt(Some(f64::INFINITY), seconds), NONE);
            assert_eq!(seconds(180.63), "180.6 s");
            assert_eq!(seconds(7.58), "7.58 s");
            assert_eq!(seconds(0.0123), "0.012 s");
            assert_eq!(bytes(8_342_000_000), "7.8 GiB");
            assert_eq!(bytes(512), "512 B");
            assert_eq!(ratio(23.826), "23.83x");
            assert_eq!(ratio(0.0538), "0.054x");
            assert_eq!(factor(1.45), "1.45x");
            assert_eq!(factor(12.1), "12.1x");
            assert_eq!(per_row(0.034), "0.034");
            assert_eq!(per_row(298.0), "298");
        }
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
