//! How a load looks to a person (a progress bar, a short summary) and to a program (`--json`).

use anyhow::Result;
use indicatif::{DecimalBytes, ProgressBar, ProgressDrawTarget, ProgressStyle};
use inrush_core::{Phase, ProgressSnapshot, Reporter};
use inrush_load::LoadSummary;
use std::time::Instant;

/// Draws a bar on stderr (only when stderr is a terminal and progress is wanted).
pub struct ProgressReporter {
    bar: Option<ProgressBar>,
    started: Instant,
}

impl ProgressReporter {
    pub fn new(enabled: bool) -> Self {
        let bar = enabled.then(|| {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr_with_hz(5));
            let style = ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {wide_bar} {decimal_bytes}/{decimal_total_bytes} {decimal_bytes_per_sec} ETA {eta} {msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar());
            bar.set_style(style);
            bar
        });
        ProgressReporter {
            bar,
            started: Instant::now(),
        }
    }

    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

impl Reporter for ProgressReporter {
    fn phase(&self, phase: Phase) {
        if let Some(bar) = &self.bar {
            match phase {
                Phase::Inspect => bar.set_message("inspecting the table"),
                Phase::Commit => bar.set_message("committing"),
                Phase::Indexes => bar.set_message("rebuilding indexes"),
                Phase::Maintain => bar.set_message("vacuum / analyze"),
                Phase::Load | Phase::Done => {}
            }
        }
    }

    fn progress(&self, s: ProgressSnapshot) {
        let Some(bar) = &self.bar else { return };
        if let Some(total) = s.bytes_total {
            bar.set_length(total);
        }
        bar.set_position(s.bytes_read);
        let secs = self.started.elapsed().as_secs_f64().max(1e-3);
        bar.set_message(format!(
            "{} rows, {} rows/s",
            group(s.rows_sent),
            group((s.rows_sent as f64 / secs) as u64)
        ));
    }
}

/// `1234567` → `1,234,567`.
pub fn group(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The human summary (stderr) or the JSON object (stdout).
pub fn print_summary(s: &LoadSummary, json: bool) -> Result<()> {
    if json {
        println!("{}", serde_json::to_string(s)?);
        return Ok(());
    }
    eprintln!("{}", human_summary(s));
    Ok(())
}

pub fn human_summary(s: &LoadSummary) -> String {
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    let headline = if s.loaded {
        format!(
            "loaded {} rows into {} in {:.2} s",
            group(s.rows),
            s.table,
            s.seconds
        )
    } else {
        format!(
            "checked {} rows against {} in {:.2} s: they would load; nothing was written",
            group(s.rows),
            s.table,
            s.seconds
        )
    };
    let mut out = format!(
        "{headline}\n  {} rows/s, {:.1} MB/s, {} read from {}\n  ",
        group(s.rows_per_second as u64),
        s.megabytes_per_second,
        DecimalBytes(s.bytes),
        s.input,
    );
    if s.loaded {
        out.push_str(&format!(
            "{} COPY over {} connection{}, ",
            s.copy_format,
            s.connections,
            plural(s.connections)
        ));
    }
    out.push_str(&format!("{} worker{}", s.workers, plural(s.workers)));
    if s.rows_resumed > 0 {
        out.push_str(&format!(
            "; {} rows were in from earlier runs (--resume)",
            group(s.rows_resumed)
        ));
    }
    if let Some(wal) = s.wal_bytes.filter(|_| s.loaded) {
        out.push_str(&format!("; WAL written {}", DecimalBytes(wal)));
    }
    if s.loaded
        && s.plan
            .indexes
            .iter()
            .any(|d| d.action == inrush_load::plan::IndexAction::Rebuild)
    {
        let rebuilt: Vec<&str> = s
            .plan
            .indexes
            .iter()
            .filter(|d| d.action == inrush_load::plan::IndexAction::Rebuild)
            .map(|d| d.name.as_str())
            .collect();
        out.push_str(&format!(
            "\n  indexes rebuilt after the load: {} (drop {:.2} s, load {:.2} s, rebuild {:.2} s)",
            rebuilt.join(", "),
            s.phases.drop_indexes,
            s.phases.load,
            s.phases.rebuild_indexes
        ));
    }
    if s.loaded && s.plan.after != inrush_load::plan::Maintenance::None {
        let what = match s.plan.after {
            inrush_load::plan::Maintenance::VacuumAnalyze => "VACUUM (ANALYZE)",
            _ => "ANALYZE",
        };
        out.push_str(&format!(
            "\n  query-ready: {what} in {:.2} s",
            s.phases.maintain
        ));
    }
    let plan = &s.plan;
    if s.loaded
        && (!plan.indexes.is_empty()
            || !plan.foreign_keys.is_empty()
            || !plan.hidden.triggers.is_empty())
    {
        for line in plan
            .to_string()
            .lines()
            .filter(|l| !l.trim_start().starts_with("settings:"))
        {
            out.push_str(&format!("\n  {line}"));
        }
    }
    for note in &s.notes {
        out.push_str(&format!("\n  note: {note}"));
    }
    if let Some(reason) = &s.text_reason {
        out.push_str(&format!("\n  text COPY because: {reason}"));
    }
    if let (true, Some(file), Some(log)) = (s.rows_rejected > 0, &s.rejects_file, &s.rejects_log) {
        out.push_str(&format!(
            "\n  {} rows refused: written to {file} (reasons in {log})",
            group(s.rows_rejected)
        ));
    }
    if s.values_resolved_by_server > 0 {
        out.push_str(&format!(
            "\n  {} values in rare forms were read by the server's own parser",
            group(s.values_resolved_by_server)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_are_grouped() {
        assert_eq!(group(0), "0");
        assert_eq!(group(999), "999");
        assert_eq!(group(1000), "1,000");
        assert_eq!(group(1234567), "1,234,567");
    }

    #[test]
    fn summary_reads_well() {
        let s = LoadSummary {
            input: "data.csv".into(),
            table: "\"public\".\"t\"".into(),
            rows: 1_000_000,
            bytes: 334_000_000,
            seconds: 1.25,
            rows_per_second: 800_000.0,
            megabytes_per_second: 267.2,
            wal_bytes: Some(400_000_000),
            connections: 2,
            workers: 2,
            copy_format: "binary",
            text_reason: None,
            values_resolved_by_server: 3,
            server_version: "18.1".into(),
            rows_rejected: 2,
            rejects_file: Some("data.csv.rejects".into()),
            rejects_log: Some("data.csv.rejects.log".into()),
            loaded: true,
            rows_resumed: 0,
            plan: inrush_load::LoadPlan::decide(
                "\"public\".\"t\"",
                false,
                vec![inrush_postgres::IndexInfo {
                    name: "t_name_idx".into(),
                    definition: "CREATE INDEX t_name_idx ON public.t USING btree (name)".into(),
                    unique: false,
                    constraint: None,
                    constraint_kind: None,
                    deferrable: false,
                    referenced: false,
                    invalid: false,
                    bytes: 8192,
                    leading_column: Some("name".into()),
                }],
                vec![],
                inrush_postgres::TableSize {
                    table_bytes: 0,
                    index_bytes: 8192,
                    rows_estimate: 0.0,
                    empty: true,
                },
                Some(334_000_000),
                inrush_load::PlanOptions::default(),
            ),
            phases: inrush_load::summary::Phases {
                inspect: 0.01,
                drop_indexes: 0.02,
                load: 1.0,
                rebuild_indexes: 0.22,
                maintain: 0.3,
            },
            notes: vec![],
        };
        insta::assert_snapshot!(human_summary(&s));
        let checked = LoadSummary {
            loaded: false,
            wal_bytes: Some(0),
            connections: 0,
            rows_rejected: 0,
            values_resolved_by_server: 0,
            ..s
        };
        insta::assert_snapshot!("checked", human_summary(&checked));
    }
}
