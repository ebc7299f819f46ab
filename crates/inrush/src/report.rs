//! How a load looks to a person (a progress bar, a short summary) and to a program (`--json`).

use anyhow::Result;
use clap::Args;
use indicatif::{DecimalBytes, ProgressBar, ProgressDrawTarget, ProgressStyle};
use inrush_core::{Phase, ProgressSnapshot, Reporter};
use inrush_load::plan::{IndexAction, Maintenance};
use inrush_load::summary::Recovered;
use inrush_load::LoadSummary;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

#[derive(Args, Debug)]
pub struct OutputArgs {
    /// Print the summary as one JSON object on stdout (without it, the summary is written for
    /// people, on stderr, so that stdout stays free for what a script pipes).
    #[arg(long)]
    pub json: bool,
    /// No progress bar on stderr.
    #[arg(long)]
    pub no_progress: bool,
}

/// Redraws per second at most (the load reports ten times a second).
const HZ: u8 = 5;

/// Draws a bar on stderr (only when stderr is a terminal and progress is wanted).
pub struct ProgressReporter {
    bar: Option<ProgressBar>,
    started: Instant,
    /// The terminal's width now.
    width: Box<dyn Fn() -> usize + Send + Sync>,
    /// The width the bar's style was laid out for.
    laid_out: AtomicUsize,
}

impl ProgressReporter {
    pub fn new(enabled: bool) -> Self {
        let width = Box::new(|| console::Term::stderr().size().1 as usize);
        match enabled {
            true => Self::drawing_to(ProgressDrawTarget::stderr_with_hz(HZ), width),
            false => ProgressReporter {
                bar: None,
                started: Instant::now(),
                width,
                laid_out: AtomicUsize::new(0),
            },
        }
    }

    fn drawing_to(target: ProgressDrawTarget, width: Box<dyn Fn() -> usize + Send + Sync>) -> Self {
        let bar = ProgressBar::with_draw_target(None, target);
        // The spinner and the clock move in phases that report no progress (index rebuilds,
        // VACUUM), so a long one does not look like a hang.
        bar.enable_steady_tick(Duration::from_millis(1000 / HZ as u64));
        let reporter = ProgressReporter {
            bar: Some(bar),
            started: Instant::now(),
            width,
            laid_out: AtomicUsize::new(0),
        };
        reporter.lay_out();
        reporter
    }

    /// Fits the bar's style to the terminal's width when that has changed.
    fn lay_out(&self) {
        let Some(bar) = &self.bar else { return };
        let width = (self.width)();
        if self.laid_out.swap(width, Ordering::Relaxed) != width {
            bar.set_style(
                ProgressStyle::with_template(&template(width))
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
        }
    }

    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// One part of the bar's line: its template, its widest rendering, and its rank (the highest
/// rank is dropped first when the line would not fit).
struct Part(&'static str, usize, u8);

const BAR: &str = "{bar}";
const BAR_MIN: usize = 10;
/// What the message (`12,345,678 rows, 1,234,567 rows/s` or the phase) is given; a longer one
/// is cut rather than wrapped.
const MESSAGE: usize = 34;
/// In display order.
const PARTS: [Part; 5] = [
    Part("[{elapsed_precise}]", 10, 4),
    Part(BAR, BAR_MIN, 1),
    Part("{decimal_bytes}/{decimal_total_bytes}", 21, 3),
    Part("{decimal_bytes_per_sec}", 12, 5),
    Part("ETA {eta}", 8, 2),
];

/// The bar's template for a terminal `width` columns wide: a spinner, the parts that fit (the
/// least important dropped first), and the message; the bar takes the room left.
fn template(width: usize) -> String {
    // A line as wide as the terminal wraps on some terminals.
    let room = width.saturating_sub(1);
    let mut parts: Vec<&Part> = PARTS.iter().collect();
    let need = |parts: &[&Part]| 2 + MESSAGE + parts.iter().map(|p| p.1 + 1).sum::<usize>();
    while need(&parts) > room {
        let Some(last) = (0..parts.len()).max_by_key(|&i| parts[i].2) else {
            break;
        };
        parts.remove(last);
    }
    let spare = room.saturating_sub(need(&parts));
    let mut line = String::from("{spinner} ");
    for part in parts {
        match part.0 {
            BAR => line.push_str(&format!("{{bar:{}}}", BAR_MIN + spare)),
            other => line.push_str(other),
        }
        line.push(' ');
    }
    line.push_str("{wide_msg}");
    line
}

/// The fault tests' seam (`tests/faults.rs`): with `INRUSH_TEST_PAUSE=PHASE:FILE`, a load that
/// enters `PHASE` (`load`, `commit`, `indexes`, `analyze`, `vacuum`) creates `FILE` and waits
/// while it exists, so a test can stop the server at that exact point of the load (between
/// the commit and the rebuild, say), which no timing can hit reliably.
fn pause_for_a_test(phase: Phase) {
    let Ok(pause) = std::env::var("INRUSH_TEST_PAUSE") else {
        return;
    };
    let name = match phase {
        Phase::Inspect => "inspect",
        Phase::Load => "load",
        Phase::Commit => "commit",
        Phase::Indexes => "indexes",
        Phase::Maintain { vacuum: false } => "analyze",
        Phase::Maintain { vacuum: true } => "vacuum",
        Phase::Done => "done",
    };
    let Some((at, file)) = pause.split_once(':') else {
        return;
    };
    if at != name || std::fs::write(file, name).is_err() {
        return;
    }
    while std::path::Path::new(file).exists() {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

impl Reporter for ProgressReporter {
    fn phase(&self, phase: Phase) {
        pause_for_a_test(phase);
        let Some(bar) = &self.bar else { return };
        let message = match phase {
            Phase::Inspect => "inspecting the table",
            Phase::Commit => "committing",
            Phase::Indexes => "rebuilding indexes",
            Phase::Maintain { vacuum: true } => "VACUUM (ANALYZE)",
            Phase::Maintain { vacuum: false } => "ANALYZE",
            Phase::Load | Phase::Done => return,
        };
        bar.set_message(message);
        // Drawn now, whatever the rate limit: a phase shorter than a frame would not show.
        bar.suspend(|| {});
    }

    /// Said even without a bar (`--no-progress`, `--json`, a log): a wait with no word looks
    /// like a hang.
    fn waiting(&self, what: &str) {
        match &self.bar {
            Some(bar) => bar.println(format!("inrush: {what}")),
            None => eprintln!("inrush: {what}"),
        }
    }

    fn progress(&self, s: ProgressSnapshot) {
        let Some(bar) = &self.bar else { return };
        self.lay_out();
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
/// `inrush status`, for people: one paragraph per load.
pub fn load_status(loads: &[inrush_core::ledger::LoadStatus]) -> String {
    let mut out = String::new();
    for load in loads {
        let percent = match load.size {
            0 => 100.0,
            size => load.bytes as f64 * 100.0 / size as f64,
        };
        out.push_str(&format!(
            "{} <- {} (blocks of {}): {}\n  committed: {} blocks, {} rows, {} of {} ({percent:.1}%)\n  started {}, last commit {}\n",
            load.table,
            load.input,
            DecimalBytes(load.block_size as u64),
            load.state(),
            group(load.blocks as u64),
            group(load.rows as u64),
            DecimalBytes(load.bytes as u64),
            DecimalBytes(load.size as u64),
            load.started_at,
            load.last_commit.as_deref().unwrap_or("none"),
        ));
        for block in &load.loading {
            out.push_str(&format!(
                "  loading now: block {} (near byte {}) by pid {} from {} ({})\n",
                block.block,
                group(block.block as u64 * load.block_size as u64),
                block.pid,
                block.client_addr.as_deref().unwrap_or("a local socket"),
                block.application_name.as_deref().unwrap_or(""),
            ));
        }
        if load.state() == "interrupted" {
            out.push_str("  no process is loading it: run the same `inrush load ... --resume` to load the rest\n");
        }
    }
    out
}

pub fn group(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// `inrush recover`'s report: as JSON on stdout, or for people on stderr.
pub fn print_recovered(r: &Recovered, json: bool) -> Result<()> {
    if json {
        println!("{}", serde_json::to_string(r)?);
        return Ok(());
    }
    let lists = [&r.recreated, &r.committed, &r.rolled_back, &r.left_alone];
    if lists.iter().all(|l| l.is_empty()) {
        eprintln!("nothing to recover: {}", r.nothing);
    }
    for gid in &r.committed {
        eprintln!("committed {gid} (its load or job had decided to commit)");
    }
    for gid in &r.rolled_back {
        eprintln!("rolled back {gid} (its load or job had not decided, or did not keep it)");
    }
    for what in &r.left_alone {
        eprintln!("left alone: {what}");
    }
    for what in &r.recreated {
        eprintln!("recreated {what}");
    }
    Ok(())
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

/// The indexes dropped for the load and rebuilt after it.
fn rebuilt(s: &LoadSummary) -> Vec<&str> {
    match s.loaded {
        true => s
            .plan
            .indexes
            .iter()
            .filter(|d| d.action == IndexAction::Rebuild)
            .map(|d| d.name.as_str())
            .collect(),
        false => vec![],
    }
}

/// `time: inspect 0.01 s, load 1.00 s, ANALYZE 0.30 s`: the phases that ran (their sum is the
/// headline's time).
fn phase_times(s: &LoadSummary) -> String {
    let p = &s.phases;
    let indexes = !rebuilt(s).is_empty();
    let upkeep = match s.plan.after {
        _ if !s.loaded => None,
        Maintenance::None => None,
        Maintenance::VacuumAnalyze => Some("VACUUM (ANALYZE)"),
        Maintenance::Analyze | Maintenance::AnalyzeFrozen | Maintenance::AnalyzeOnly => {
            Some("ANALYZE")
        }
    };
    let times = [
        (Some("inspect"), p.inspect),
        (indexes.then_some("drop indexes"), p.drop_indexes),
        (Some(if s.loaded { "load" } else { "check" }), p.load),
        (indexes.then_some("rebuild indexes"), p.rebuild_indexes),
        (upkeep, p.maintain),
    ];
    let said: Vec<String> = times
        .iter()
        .filter_map(|(name, secs)| name.map(|n| format!("{n} {secs:.2} s")))
        .collect();
    format!("time: {}", said.join(", "))
}

/// Why the load used the connections it did: the choice on its line, then each thing measured
/// on a line of its own (the reason reads `choice: measured; measured; ...`).
fn connections_lines(reason: &str) -> String {
    let (choice, measured) = reason.split_once(": ").unwrap_or((reason, ""));
    let mut out = format!("\n  connections: {choice}");
    for part in measured.split("; ").filter(|p| !p.is_empty()) {
        out.push_str(&format!("\n    {part}"));
    }
    out
}

pub fn human_summary(s: &LoadSummary) -> String {
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    // The rows were in the table already (a rerun of a load that committed): no rates, no plan.
    if s.loaded && s.connections == 0 {
        let notes = s.notes.iter().map(|n| format!("\n  note: {n}"));
        return format!(
            "loaded nothing into {}{}",
            s.table,
            notes.collect::<String>()
        );
    }
    let headline = if s.loaded {
        format!(
            "loaded {} row{} into {} in {:.2} s",
            group(s.rows),
            plural(s.rows as usize),
            s.table,
            s.seconds
        )
    } else {
        // --check: what the server refused (in transactions rolled back), or which of its
        // checks were not made.
        let verdict = match (&s.check_skipped, s.rows_rejected) {
            (Some(why), 0) => format!("their values would load, but the table's own checks were not made: {why}"),
            (Some(why), n) => format!("{} would be refused, the others' values would load, but the table's own checks were not made: {why}", group(n)),
            (None, 0) => "they would load".to_string(),
            (None, n) => format!("{} would be refused, the others would load", group(n)),
        };
        format!(
            "checked {} rows against {} in {:.2} s: {verdict}; nothing was written",
            group(s.rows + s.rows_rejected),
            s.table,
            s.seconds
        )
    };
    // The load's own rate, as the bar showed it; the time around it is on the next line.
    let mut out = format!(
        "{headline}\n  {} rows/s, {:.1} MB/s while {}, {} read from {}\n  {}\n  ",
        group(s.load_rows_per_second as u64),
        s.load_megabytes_per_second,
        if s.loaded { "loading" } else { "checking" },
        DecimalBytes(s.bytes),
        s.input,
        phase_times(s),
    );
    if s.loaded {
        out.push_str(&format!(
            "{} over {} connection{}{}, ",
            s.engine.method,
            s.connections,
            plural(s.connections),
            match s.parallelism.adaptive {
                true => " (chosen during the load)",
                false => "",
            }
        ));
    }
    out.push_str(&format!("{} worker{}", s.workers, plural(s.workers)));
    if s.rows_resumed > 0 {
        out.push_str(&format!(
            "; {} rows were in from earlier runs (--resume)",
            group(s.rows_resumed)
        ));
    }
    if let Some(b) = s.blocks.filter(|b| b.by_others + b.taken_over > 0) {
        out.push_str(&format!(
            "; {} block{} loaded here ({} taken over from a process that stopped), {} ({} rows) by other processes loading the same input",
            group(b.loaded),
            plural(b.loaded as usize),
            group(b.taken_over),
            group(b.by_others),
            group(b.rows_by_others)
        ));
    }
    if let Some(log) = s.engine.log.filter(|_| s.loaded) {
        out.push_str(&format!(
            "; {} written {}",
            log.name,
            DecimalBytes(log.bytes)
        ));
    }
    let rebuilt = rebuilt(s);
    if !rebuilt.is_empty() {
        out.push_str(&format!(
            "\n  indexes rebuilt after the load: {}",
            rebuilt.join(", ")
        ));
    }
    let plan = &s.plan;
    let plan_printed = s.loaded
        && (!plan.indexes.is_empty()
            || !plan.foreign_keys.is_empty()
            || !plan.hidden.triggers.is_empty());
    if plan_printed {
        for line in plan
            .to_string()
            .lines()
            .filter(|l| !l.trim_start().starts_with("settings:"))
        {
            out.push_str(&format!("\n  {line}"));
        }
    }
    if s.loaded && !s.parallelism.reason.is_empty() {
        out.push_str(&connections_lines(&s.parallelism.reason));
    }
    for note in &s.notes {
        out.push_str(&format!("\n  note: {note}"));
    }
    if let Some(reason) = &s.engine.slower_because {
        out.push_str(&format!("\n  {} because: {reason}", s.engine.method));
    }
    // Printed with the plan above when that is; a partitioned table's routing always is.
    if let (Some(routing), false) = (&plan.routing, plan_printed) {
        out.push_str(&format!("\n  routing: {routing}"));
    }
    if let (true, Some(file), Some(log)) = (s.rows_rejected > 0, &s.rejects_file, &s.rejects_log) {
        out.push_str(&format!(
            "\n  {} row{} refused: written to {file} (reasons in {log})",
            group(s.rows_rejected),
            plural(s.rows_rejected as usize)
        ));
    }
    if s.engine.values_read_by_server > 0 {
        out.push_str(&format!(
            "\n  {} values in rare forms were read by the server's own parser",
            group(s.engine.values_read_by_server)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// A terminal of a given width that keeps the lines drawn on it.
    #[derive(Debug, Clone)]
    struct Screen {
        width: u16,
        lines: Arc<Mutex<Vec<String>>>,
    }

    impl Screen {
        fn new(width: u16) -> Self {
            Screen {
                width,
                lines: Arc::default(),
            }
        }

        fn last(&self) -> String {
            self.lines
                .lock()
                .unwrap()
                .last()
                .cloned()
                .unwrap_or_default()
        }
    }

    impl indicatif::TermLike for Screen {
        fn width(&self) -> u16 {
            self.width
        }
        fn move_cursor_up(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_down(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_right(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn move_cursor_left(&self, _: usize) -> std::io::Result<()> {
            Ok(())
        }
        fn write_line(&self, s: &str) -> std::io::Result<()> {
            self.write_str(s)
        }
        /// indicatif pads each line with spaces to the terminal's width, in a write of its own.
        fn write_str(&self, s: &str) -> std::io::Result<()> {
            if !s.trim().is_empty() {
                self.lines.lock().unwrap().push(s.to_string());
            }
            Ok(())
        }
        fn clear_line(&self) -> std::io::Result<()> {
            Ok(())
        }
        fn flush(&self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// A reporter drawing on `screen` as it draws on stderr (same rate limit).
    fn reporter_on(screen: &Screen) -> ProgressReporter {
        let target = ProgressDrawTarget::term_like_with_hz(Box::new(screen.clone()), HZ);
        let width = screen.width as usize;
        ProgressReporter::drawing_to(target, Box::new(move || width))
    }

    /// The widest figures a load shows stay on one line, with a bar, at 80 and 120 columns; the
    /// least useful parts go first.
    #[test]
    fn the_bar_fits_the_terminal() {
        for (width, shown, dropped) in [
            (
                120,
                &["[00:00:0", "999.99 GB/999.99 GB", "B/s", "ETA "][..],
                &[][..],
            ),
            (
                80,
                &["999.99 GB/999.99 GB", "ETA "][..],
                &["[00:00:0", "B/s"][..],
            ),
            (40, &[][..], &["999.99 GB", "ETA "][..]),
        ] {
            let screen = Screen::new(width);
            let reporter = reporter_on(&screen);
            let total = 999_990_000_000;
            reporter.progress(ProgressSnapshot {
                bytes_read: total,
                bytes_total: Some(total),
                rows_sent: 123_456_789,
            });
            // A load's widest message (the rate here would be absurd: the clock just started).
            reporter
                .bar
                .as_ref()
                .unwrap()
                .set_message("123,456,789 rows, 9,999,999 rows/s");
            reporter.bar.as_ref().unwrap().suspend(|| {});
            let line = screen.last();
            reporter.finish();
            let columns = line.chars().count();
            assert!(columns < width as usize, "{columns} columns: {line:?}");
            // Narrower than about 50 columns only the spinner and the message are left.
            if width >= 80 {
                let bar = line.chars().filter(|c| matches!(c, '█' | '░')).count();
                assert!(bar >= BAR_MIN, "{line:?}");
                assert!(
                    line.ends_with("123,456,789 rows, 9,999,999 rows/s"),
                    "{line:?}"
                );
            }
            for part in shown {
                assert!(line.contains(part), "{width}: {part:?} missing in {line:?}");
            }
            for part in dropped {
                assert!(!line.contains(part), "{width}: {part:?} still in {line:?}");
            }
        }
    }

    /// Each phase is drawn when it starts, however fast the load drew before (the rate limit
    /// is spent) and however short the phase; the upkeep is named as the plan chose it.
    #[test]
    fn every_phase_shows_and_names_its_work() {
        let screen = Screen::new(120);
        let reporter = reporter_on(&screen);
        for rows in 0..50 {
            reporter.progress(ProgressSnapshot {
                bytes_read: rows * 1000,
                bytes_total: Some(100_000),
                rows_sent: rows,
            });
        }
        for (phase, says) in [
            (Phase::Commit, "committing"),
            (Phase::Indexes, "rebuilding indexes"),
            (Phase::Maintain { vacuum: false }, "ANALYZE"),
            (Phase::Maintain { vacuum: true }, "VACUUM (ANALYZE)"),
        ] {
            reporter.phase(phase);
            let line = screen.last();
            assert!(line.trim_end().ends_with(says), "{phase:?}: {line:?}");
            assert!(!line.contains("vacuum / analyze"), "{line:?}");
        }
        reporter.finish();
    }

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
            seconds: 1.55,
            rows_per_second: 645_161.3,
            megabytes_per_second: 215.5,
            load_rows_per_second: 1_000_000.0,
            load_megabytes_per_second: 334.0,
            connections: 2,
            parallelism: inrush_load::summary::Parallelism {
                adaptive: true,
                opened: 4,
                chosen: 2,
                reason:
                    "2 of 4 opened: 3 gave 1% more rows/s than 2 (under the 5% a stream must add)"
                        .into(),
            },
            workers: 2,
            engine: inrush_load::summary::EngineReport {
                version: "18.1".into(),
                method: "binary COPY",
                slower_because: None,
                log: Some(inrush_load::summary::Log {
                    name: "WAL",
                    bytes: 400_000_000,
                }),
                values_read_by_server: 3,
            },
            rows_rejected: 2,
            rejects_file: Some("data.csv.rejects".into()),
            rejects_log: Some("data.csv.rejects.log".into()),
            loaded: true,
            check_skipped: None,
            rows_resumed: 0,
            blocks: None,
            prepared: Vec::new(),
            plan: inrush_load::LoadPlan::decide(
                "\"public\".\"t\"",
                &inrush_load::Capabilities {
                    vacuum: true,
                    rebuilds: Some("built once after the load".into()),
                    unique_after: Ok(()),
                    ..inrush_load::Capabilities::default()
                },
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
                    stays: None,
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
            connections: 0,
            rows_rejected: 0,
            engine: inrush_load::summary::EngineReport {
                log: None,
                values_read_by_server: 0,
                ..s.engine.clone()
            },
            ..s
        };
        insta::assert_snapshot!("checked", human_summary(&checked));
    }
}
