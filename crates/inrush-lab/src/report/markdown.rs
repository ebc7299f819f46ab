//! `report.md`: the environment, the verdicts, and per experiment the same table and verdict
//! line as the HTML page, without charts.

use super::escape::{anchor, md};
use super::{rows, status_word, verdict_word, Row};
use crate::fmt;
use crate::results::{ExperimentResult, LabResults, Status};
use std::fmt::Write as _;

pub fn render(lab: &LabResults) -> String {
    let mut out = String::new();
    let env = &lab.environment;
    let _ = writeln!(out, "# inrush lab report\n");
    let _ = writeln!(
        out,
        "inrush {}, started {}; scale {}, {} run{} per variation. Times are medians; ratios are to \
         each experiment's baseline (below 1 is faster).\n",
        md(&lab.inrush_version),
        md(&lab.started_at),
        lab.scale,
        lab.repeat,
        if lab.repeat == 1 { "" } else { "s" }
    );

    let _ = writeln!(out, "## Environment\n");
    let _ = writeln!(out, "| | |\n|---|---|");
    for (k, v) in environment(lab) {
        let _ = writeln!(out, "| {k} | {} |", md(&v));
    }
    if !env.settings.is_empty() {
        let _ = writeln!(out, "\n| setting | value |\n|---|---|");
        for (k, v) in &env.settings {
            let _ = writeln!(out, "| {} | {} |", md(k), md(v));
        }
    }

    let _ = writeln!(out, "\n## Verdicts\n");
    let _ = writeln!(
        out,
        "| id | experiment | verdict | factor | reported factor | |\n|---|---|---|---|---|---|"
    );
    for e in &lab.experiments {
        let (factor, seed_factor, line) = match (&e.status, &e.verdict) {
            (Status::Ran, Some(v)) => (
                fmt::opt(Some(v.factor), fmt::factor),
                fmt::opt(v.seed_factor, fmt::factor),
                md(&v.text),
            ),
            (Status::Skipped(r) | Status::Failed(r), _) => {
                (fmt::NONE.into(), fmt::NONE.into(), md(r))
            }
            (Status::Ran, None) => (fmt::NONE.into(), fmt::NONE.into(), String::new()),
        };
        let _ = writeln!(
            out,
            "| [{}](#{}) | {} | {} | {factor} | {seed_factor} | {line} |",
            md(&e.id),
            anchor(&e.id),
            md(&e.title),
            verdict_word(e),
        );
    }

    for e in &lab.experiments {
        experiment(&mut out, e, lab.environment.log_name());
    }
    out
}

/// The environment rows both renderers show (values unescaped).
pub(super) fn environment(lab: &LabResults) -> Vec<(&'static str, String)> {
    let env = &lab.environment;
    vec![
        ("server", env.server_version.clone()),
        (
            "server run by",
            if env.private_server {
                "the lab (a private server it started)".into()
            } else {
                "the user (--to)".into()
            },
        ),
        ("client cores", env.client_cores.to_string()),
        ("client memory", fmt::bytes(env.client_memory_bytes)),
        ("operating system", env.os.clone()),
        ("disk", env.disk.clone()),
        ("scale / repeat", format!("{} / {}", lab.scale, lab.repeat)),
        ("started", lab.started_at.clone()),
        ("inrush", lab.inrush_version.clone()),
    ]
}

fn experiment(out: &mut String, e: &ExperimentResult, log: &str) {
    let _ = writeln!(out, "\n<a id=\"{}\"></a>\n", anchor(&e.id));
    let _ = writeln!(out, "## {}: {}\n", md(&e.id), md(&e.title));
    let _ = writeln!(
        out,
        "Report: {}  \nAdvice: {}\n",
        md(&e.seed_source),
        md(&e.advice)
    );
    match &e.status {
        Status::Ran => {}
        Status::Skipped(r) | Status::Failed(r) => {
            let _ = writeln!(
                out,
                "**{}:** {}\n",
                capitalised(status_word(&e.status)),
                md(r)
            );
        }
    }
    let rows = rows(e);
    if !rows.is_empty() {
        let _ = writeln!(out, "| variation | our median time | rows | rows/s | ratio to our baseline | {log} bytes/row | {log} records/row | reported figure | reported ratio to its baseline |");
        let _ = writeln!(out, "|---|--:|--:|--:|--:|--:|--:|---|--:|");
        for r in &rows {
            table_row(out, r);
        }
        out.push('\n');
    }
    if let Some(v) = e.verdict.as_ref().filter(|_| e.status == Status::Ran) {
        let _ = writeln!(out, "**Verdict ({}):** {}\n", verdict_word(e), md(&v.text));
    }
    let extras = extras(&rows);
    if !extras.is_empty() {
        let _ = writeln!(out, "Other timings (median run):\n");
        for line in extras {
            let _ = writeln!(out, "- {}", md(&line));
        }
        out.push('\n');
    }
    if !e.notes.is_empty() {
        let _ = writeln!(out, "Notes:\n");
        for n in &e.notes {
            let _ = writeln!(out, "- {}", md(n));
        }
        out.push('\n');
    }
}

fn table_row(out: &mut String, r: &Row) {
    let v = r.variation;
    let mut label = md(&v.label);
    if v.baseline {
        label.push_str(" (baseline)");
    }
    if let Some(set) = settings_changed(r) {
        let _ = write!(label, " ({})", md(&set));
    }
    let m = r.median;
    let _ = writeln!(
        out,
        "| {label} | {} | {} | {} | {} | {} | {} | {} | {} |",
        fmt::opt(r.seconds(), fmt::seconds),
        m.map(|m| fmt::group(m.rows))
            .unwrap_or_else(|| fmt::NONE.into()),
        m.map(|m| fmt::rate(m.rows_per_second))
            .unwrap_or_else(|| fmt::NONE.into()),
        fmt::opt(r.ratio, fmt::ratio),
        fmt::opt(r.wal_bytes_per_row(), fmt::per_row),
        fmt::opt(r.wal_records_per_row(), fmt::per_row),
        v.seed_figure
            .as_deref()
            .map(md)
            .unwrap_or_else(|| fmt::NONE.into()),
        fmt::opt(r.seed_ratio, fmt::ratio),
    );
}

/// `name=value, ...` of the settings the median run changed, if any (unescaped).
pub(super) fn settings_changed(r: &Row) -> Option<String> {
    let m = r.median.filter(|m| !m.settings_changed.is_empty())?;
    Some(
        m.settings_changed
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(", "),
    )
}

/// One line per variation whose median run has other timed figures (unescaped).
pub(super) fn extras(rows: &[Row]) -> Vec<String> {
    rows.iter()
        .filter_map(|r| {
            let m = r.median.filter(|m| !m.extra.is_empty())?;
            let figures: Vec<String> = m
                .extra
                .iter()
                .map(|(k, v)| {
                    let v = fmt::opt(Some(*v), |v| {
                        if k.ends_with("seconds") {
                            fmt::seconds(v)
                        } else {
                            format!("{v}")
                        }
                    });
                    format!("{k} {v}")
                })
                .collect();
            Some(format!("{}: {}", r.variation.label, figures.join(", ")))
        })
        .collect()
}

pub(super) fn capitalised(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}
