//! `report.html`: one self-contained page (inline CSS and SVG, no script, no URL): a summary
//! (environment, settings, a verdict table linking to the sections), then one section per
//! experiment with its table, verdict line, charts and notes.

use super::escape::{anchor, html};
use super::markdown::{capitalised, environment, extras, settings_changed};
use super::svg::{self, BarRow, Line, Series};
use super::{rows, status_word, verdict_word, Row};
use crate::fmt;
use crate::results::{ExperimentResult, Holds, LabResults, Status};
use std::fmt::Write as _;

const STYLE: &str = r#"
body{margin:0;background:#fff;color:#222;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif}
main{max-width:1120px;margin:0 auto;padding:16px 20px 40px}
h1{font-size:24px;margin:8px 0 4px}h2{font-size:19px;margin:0 0 6px}h3{font-size:15px;margin:14px 0 6px}
a{color:#0b5cad}
.lede{color:#555;margin:0 0 12px}
table{border-collapse:collapse;margin:6px 0 10px}
th,td{border:1px solid #d6d6d6;padding:3px 8px;vertical-align:top}
th{background:#f3f3f3;text-align:left;font-weight:600}
td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tr.base td{background:#fafafa;font-weight:600}
.env{display:flex;gap:24px;flex-wrap:wrap}
.settings td{font-family:ui-monospace,"DejaVu Sans Mono",monospace;font-size:12px}
section.exp{border-top:2px solid #ccc;padding-top:14px;margin-top:26px}
.meta{margin:0 0 8px;color:#444}
.verdict{padding:6px 10px;border-left:6px solid #999;background:#f4f4f4;margin:8px 0}
.v-holds{border-color:#1e8a3c;background:#e8f5ec}.v-partly{border-color:#c9a400;background:#fbf6dd}
.v-no{border-color:#c0392b;background:#fbe9e7}.v-inconclusive{border-color:#777;background:#f1f1f1}
.badge{display:inline-block;padding:0 7px;border-radius:3px;font-size:12px;font-weight:600;background:#ddd;color:#333}
.b-holds{background:#1e8a3c;color:#fff}.b-partly{background:#c9a400;color:#222}.b-no{background:#c0392b;color:#fff}
.b-inconclusive{background:#e0e0e0;color:#222;border:1px dashed #777}.b-skipped{background:#888;color:#fff}.b-failed{background:#5a1a12;color:#fff}
.status{padding:6px 10px;background:#f6f1e7;border-left:6px solid #8a6d3b;white-space:pre-wrap;margin:8px 0}
.charts{display:flex;flex-wrap:wrap;gap:12px 20px;margin:8px 0}
svg.chart{background:#fff;font-size:11px}
svg .ttl{font-size:13px;font-weight:600;fill:#222}svg .lbl{fill:#333}svg .val{fill:#333}
svg .tick{fill:#666;font-size:10px}svg .na{fill:#888;font-style:italic}
small{color:#666}
"#;

pub fn render(lab: &LabResults) -> String {
    let mut out = String::with_capacity(64 * 1024);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>inrush lab report, {}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<main>\n",
        html(&lab.started_at)
    );
    let _ = writeln!(out, "<h1>inrush lab report</h1>");
    let _ = writeln!(
        out,
        "<p class=\"lede\">The insert-performance experiments of the field reports, run \
         against this server. Times are medians of {} run{}; ratios are to each experiment's \
         baseline (below 1 is faster). Blue is ours, orange the field report's.</p>",
        lab.repeat,
        if lab.repeat == 1 { "" } else { "s" }
    );

    out.push_str("<div class=\"env\">\n<table class=\"environment\"><tbody>\n");
    for (k, v) in environment(lab) {
        let _ = writeln!(out, "<tr><th>{k}</th><td>{}</td></tr>", html(&v));
    }
    out.push_str("</tbody></table>\n");
    if !lab.environment.settings.is_empty() {
        out.push_str("<table class=\"settings\"><thead><tr><th>setting</th><th>value</th></tr></thead><tbody>\n");
        for (k, v) in &lab.environment.settings {
            let _ = writeln!(out, "<tr><td>{}</td><td>{}</td></tr>", html(k), html(v));
        }
        out.push_str("</tbody></table>\n");
    }
    out.push_str("</div>\n");

    out.push_str("<h2>Verdicts</h2>\n<table class=\"verdicts\"><thead><tr><th>id</th><th>experiment</th><th>verdict</th><th>factor</th><th>reported factor</th><th></th></tr></thead><tbody>\n");
    for e in &lab.experiments {
        let (factor, seed_factor, line) = match (&e.status, &e.verdict) {
            (Status::Ran, Some(v)) => (
                fmt::opt(Some(v.factor), fmt::factor),
                fmt::opt(v.seed_factor, fmt::factor),
                html(&v.text),
            ),
            (Status::Skipped(r) | Status::Failed(r), _) => {
                (fmt::NONE.into(), fmt::NONE.into(), html(first_line(r)))
            }
            (Status::Ran, None) => (fmt::NONE.into(), fmt::NONE.into(), String::new()),
        };
        let _ = writeln!(
            out,
            "<tr><td><a href=\"#{}\">{}</a></td><td>{}</td><td>{}</td><td class=\"n\">{factor}</td><td class=\"n\">{seed_factor}</td><td>{line}</td></tr>",
            anchor(&e.id),
            html(&e.id),
            html(&e.title),
            badge(e),
        );
    }
    out.push_str("</tbody></table>\n");

    for e in &lab.experiments {
        experiment(&mut out, e, lab.environment.log_name());
    }
    out.push_str("</main>\n</body>\n</html>\n");
    out
}

/// The css class suffix and word for an experiment's outcome.
fn outcome(e: &ExperimentResult) -> &'static str {
    match (&e.status, &e.verdict) {
        (Status::Skipped(_), _) => "skipped",
        (Status::Failed(_), _) => "failed",
        (Status::Ran, None) => "none",
        (Status::Ran, Some(v)) => match v.holds {
            Holds::Yes => "holds",
            Holds::Partly => "partly",
            Holds::No => "no",
            Holds::Inconclusive => "inconclusive",
        },
    }
}

fn badge(e: &ExperimentResult) -> String {
    format!(
        "<span class=\"badge b-{}\">{}</span>",
        outcome(e),
        verdict_word(e)
    )
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

fn experiment(out: &mut String, e: &ExperimentResult, log: &str) {
    let _ = writeln!(
        out,
        "<section class=\"exp\" id=\"{}\">\n<h2>{}: {} {}</h2>",
        anchor(&e.id),
        html(&e.id),
        html(&e.title),
        badge(e)
    );
    let _ = writeln!(
        out,
        "<p class=\"meta\">Report: {}<br>Advice: {}</p>",
        html(&e.seed_source),
        html(&e.advice)
    );
    if let Status::Skipped(r) | Status::Failed(r) = &e.status {
        let _ = writeln!(
            out,
            "<div class=\"status\"><strong>{}:</strong> {}</div>",
            capitalised(status_word(&e.status)),
            html(r)
        );
    }
    let rows = rows(e);
    if !rows.is_empty() {
        let _ = writeln!(out, "<table class=\"figures\"><thead><tr><th>variation</th><th>our median time</th><th>rows</th><th>rows/s</th><th>ratio to our baseline</th><th>{log} bytes/row</th><th>{log} records/row</th><th>reported figure</th><th>reported ratio to its baseline</th></tr></thead><tbody>");
        for r in &rows {
            table_row(out, r);
        }
        out.push_str("</tbody></table>\n");
    }
    if let Some(v) = e.verdict.as_ref().filter(|_| e.status == Status::Ran) {
        let _ = writeln!(
            out,
            "<p class=\"verdict v-{}\"><strong>Verdict:</strong> {}</p>",
            outcome(e),
            html(&v.text)
        );
    }
    if rows.iter().any(|r| r.median.is_some()) {
        charts(out, e, &rows, log);
    }
    let extras = extras(&rows);
    if !extras.is_empty() {
        out.push_str("<h3>Other timings (median run)</h3>\n<ul>\n");
        for line in extras {
            let _ = writeln!(out, "<li>{}</li>", html(&line));
        }
        out.push_str("</ul>\n");
    }
    if !e.notes.is_empty() {
        out.push_str("<h3>Notes</h3>\n<ul>\n");
        for n in &e.notes {
            let _ = writeln!(out, "<li>{}</li>", html(n));
        }
        out.push_str("</ul>\n");
    }
    out.push_str("</section>\n");
}

fn table_row(out: &mut String, r: &Row) {
    let v = r.variation;
    let mut label = html(&v.label);
    if v.baseline {
        label.push_str(" <small>(baseline)</small>");
    }
    if let Some(set) = settings_changed(r) {
        let _ = write!(label, "<br><small>{}</small>", html(&set));
    }
    let m = r.median;
    let _ = writeln!(
        out,
        "<tr{}><td>{label}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td><td class=\"n\">{}</td></tr>",
        if v.baseline { " class=\"base\"" } else { "" },
        fmt::opt(r.seconds(), fmt::seconds),
        m.map(|m| fmt::group(m.rows)).unwrap_or_else(|| fmt::NONE.into()),
        m.map(|m| fmt::rate(m.rows_per_second)).unwrap_or_else(|| fmt::NONE.into()),
        fmt::opt(r.ratio, fmt::ratio),
        fmt::opt(r.wal_bytes_per_row(), fmt::per_row),
        fmt::opt(r.wal_records_per_row(), fmt::per_row),
        v.seed_figure.as_deref().map(html).unwrap_or_else(|| fmt::NONE.into()),
        fmt::opt(r.seed_ratio, fmt::ratio),
    );
}

fn charts(out: &mut String, e: &ExperimentResult, rows: &[Row], log: &str) {
    out.push_str("<div class=\"charts\">\n");
    let ratio_rows: Vec<BarRow> = rows
        .iter()
        .map(|r| BarRow {
            label: &r.variation.label,
            values: vec![r.ratio, r.seed_ratio],
        })
        .collect();
    out.push_str(&svg::bar_chart(
        &format!("{}: time relative to the baseline", e.id),
        &[
            Series {
                name: "ours",
                colour: svg::OURS,
            },
            Series {
                name: "field report",
                colour: svg::SEED,
            },
        ],
        &ratio_rows,
        "x",
    ));
    out.push('\n');
    let wal_rows: Vec<BarRow> = rows
        .iter()
        .map(|r| BarRow {
            label: &r.variation.label,
            values: vec![r.wal_bytes_per_row()],
        })
        .collect();
    out.push_str(&svg::bar_chart(
        &format!("{}: {log} bytes per row", e.id),
        &[Series {
            name: &format!("{log} bytes/row"),
            colour: svg::WAL,
        }],
        &wal_rows,
        "",
    ));
    out.push('\n');
    let lines: Vec<Line> = rows
        .iter()
        .filter_map(|r| {
            let first = r.variation.runs.first()?;
            Some(Line {
                label: &r.variation.label,
                points: svg::rates(&first.rate),
            })
        })
        .collect();
    out.push_str(&svg::line_chart(
        &format!(
            "{}: insert rate over time (first run of each variation)",
            e.id
        ),
        "rows/s",
        &lines,
    ));
    out.push_str("\n</div>\n");
}
