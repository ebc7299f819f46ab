//! The report folder: `results.json` (every raw figure), `report.md` and a self-contained
//! `report.html`, all rendered from [`LabResults`].

use crate::results::LabResults;
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
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| Error::Io { path, source }
    };
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let files = ReportFiles {
        json: dir.join("results.json"),
        markdown: dir.join("report.md"),
        html: dir.join("report.html"),
    };
    let json = serde_json::to_vec_pretty(results).map_err(|source| Error::Results {
        path: files.json.clone(),
        source,
    })?;
    std::fs::write(&files.json, json).map_err(io(&files.json))?;
    // The Markdown and HTML renderers come next; until then only the raw figures are written.
    Ok(files)
}

/// Reads `dir/results.json` and renders the report again (`inrush lab report DIR`).
pub fn rerender(dir: &Path) -> Result<ReportFiles> {
    let path = dir.join("results.json");
    let bytes = std::fs::read(&path).map_err(|source| Error::Io {
        path: path.clone(),
        source,
    })?;
    let results: LabResults =
        serde_json::from_slice(&bytes).map_err(|source| Error::Results { path, source })?;
    write(&results, dir)
}
