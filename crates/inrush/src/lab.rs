//! `inrush lab`: list the experiments, run them (progress on stderr, each experiment's table on
//! stdout as it finishes, the report folder at the end), or re-render a report from its JSON.

use crate::report::group;
use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use inrush_lab::results::{ExperimentResult, LabResults, Status};
use inrush_lab::{LabOptions, LabTarget, Progress, ProgressInfo};
use inrush_postgres::ConnectOptions;
use std::time::Instant;

#[derive(Args, Debug)]
pub struct LabArgs {
    #[command(subcommand)]
    pub command: LabCommand,
}

#[derive(Subcommand, Debug)]
pub enum LabCommand {
    /// List the experiments, their variations and the published figures they are compared with.
    List {
        /// The experiments as they run on MariaDB (`lab run --to mysql://...`): what each
        /// variation becomes, and why what does not apply does not.
        #[arg(long, conflicts_with = "odbc")]
        mariadb: bool,
        /// The experiments as they run through an ODBC driver (`lab run --to odbc:...`).
        #[arg(long)]
        odbc: bool,
    },
    /// Run experiments and write a report folder (results.json, report.md, report.html).
    Run(LabRunArgs),
    /// Re-render a report folder from its results.json.
    Report {
        /// The folder `lab run --out` wrote.
        dir: std::path::PathBuf,
    },
}

#[derive(Args, Debug)]
pub struct LabRunArgs {
    /// Experiment ids (A1 ... D8), group letters (A, B, C, D) or `all` [default: all].
    pub ids: Vec<String>,
    /// The server to measure; without it the lab starts a private PostgreSQL with durable
    /// settings (and may restart it for wal_buffers and wal_level experiments). With it,
    /// settings that need a restart are skipped, and ALTER SYSTEM settings need superuser
    /// (restored after). A mysql:// or mariadb:// URL runs the experiments that apply to
    /// MariaDB (groups A, B, D and C3; the rest listed as not applicable, with the reason);
    /// the lab starts no MariaDB of its own. An `odbc:` connection string runs, through the
    /// database's ODBC driver, the experiments on how rows are sent (groups A and D: literal
    /// SQL, commits, parameter arrays, connections).
    #[arg(long, env = "INRUSH_TO")]
    pub to: Option<String>,
    /// Rows multiplier: 1.0 is the quick run (all experiments in 25-40 minutes on 2 cores with
    /// the default 3 runs each, a third of that with --repeat 1);
    /// larger scales suit real servers.
    #[arg(long, default_value_t = 1.0)]
    pub scale: f64,
    /// Runs per variation: the tables show the median, and a verdict whose difference is
    /// inside the runs' spread says "inconclusive" (1 run: no spread, the verdict says so).
    #[arg(long, default_value_t = inrush_lab::run::DEFAULT_REPEAT)]
    pub repeat: u32,
    /// The report folder.
    #[arg(long, default_value = "inrush-lab-report")]
    pub out: std::path::PathBuf,
    /// Print the results as one JSON object on stdout (no tables, no progress).
    #[arg(long)]
    pub json: bool,
    /// No progress bar on stderr.
    #[arg(long)]
    pub no_progress: bool,
}

pub fn run(args: LabArgs) -> Result<()> {
    match args.command {
        LabCommand::List { mariadb, odbc } => {
            let all = match (mariadb, odbc) {
                (true, _) => inrush_lab::mariadb::catalogue::catalogue(),
                (_, true) => inrush_lab::odbc::catalogue::catalogue(true),
                _ => inrush_lab::catalogue::catalogue(),
            };
            print!("{}", inrush_lab::catalogue::list_text(all));
            Ok(())
        }
        LabCommand::Report { dir } => {
            let files = inrush_lab::report::rerender(&dir)?;
            eprintln!(
                "re-rendered {} and {} from {}",
                files.html.display(),
                files.markdown.display(),
                files.json.display()
            );
            Ok(())
        }
        LabCommand::Run(args) => run_lab(args),
    }
}

fn run_lab(args: LabRunArgs) -> Result<()> {
    if !(args.scale > 0.0 && args.scale.is_finite()) {
        return Err(inrush_lab::Error::Usage("--scale must be above 0".into()).into());
    }
    if args.repeat == 0 {
        return Err(inrush_lab::Error::Usage("--repeat must be at least 1".into()).into());
    }
    let mut opts = LabOptions::new(args.scale);
    opts.ids = args.ids.clone();
    opts.repeat = args.repeat;
    opts.target = match &args.to {
        Some(url) if inrush_mysql::is_mysql_url(url) => {
            LabTarget::Mariadb(inrush_mysql::MysqlOptions::parse(url)?)
        }
        Some(to) if to.starts_with("odbc:") => match inrush_odbc::connection_string(to) {
            Some(connection) => LabTarget::Odbc(connection.to_string()),
            None => {
                let why =
                    "--to odbc: needs a connection string (odbc:DSN=... or odbc:Driver={...};...)";
                return Err(inrush_lab::Error::Usage(why.into()).into());
            }
        },
        Some(url) => LabTarget::Postgres(ConnectOptions::parse(url)?),
        None => LabTarget::PrivatePostgres,
    };
    stop_on_signal(&opts.interrupt)?;
    let log = match opts.target {
        LabTarget::Mariadb(_) => "redo",
        LabTarget::Odbc(_) => "log",
        _ => "WAL",
    };
    let display = Display::new(!args.no_progress && !args.json, !args.json, log);
    let started = Instant::now();
    let results = inrush_lab::run(&opts, &display);
    display.finish();
    let results = results?;
    let files = inrush_lab::report::write(&results, &args.out)
        .with_context(|| format!("writing the report into {}", args.out.display()))?;
    if args.json {
        println!("{}", serde_json::to_string(&results)?);
    } else {
        print_summary(&results, started.elapsed().as_secs_f64());
        eprintln!(
            "report: {} ({} and {} beside it); `inrush lab report {}` re-renders it",
            files.html.display(),
            files.markdown.display(),
            files.json.display(),
            args.out.display()
        );
    }
    if opts.interrupt.load(std::sync::atomic::Ordering::Relaxed) {
        return Err(inrush_lab::Error::Interrupted.into());
    }
    Ok(())
}

/// Ctrl-C stops the lab after the current run (its server settings are restored first); a
/// second Ctrl-C exits at once.
fn stop_on_signal(interrupt: &std::sync::Arc<std::sync::atomic::AtomicBool>) -> Result<()> {
    use std::sync::atomic::Ordering;
    let interrupt = interrupt.clone();
    ctrlc::set_handler(move || {
        if interrupt.swap(true, Ordering::Relaxed) {
            eprintln!("\ninterrupted again: exiting; a server setting the current run changed may still be set (check ALTER SYSTEM; on MariaDB, SET GLOBAL)");
            std::process::exit(130);
        }
        eprintln!("\ninterrupted: stopping after the current run (settings are restored; again to exit at once)");
    })
    .context("installing the Ctrl-C handler")
}

/// Progress on stderr, each finished experiment's table on stdout.
struct Display {
    bar: Option<ProgressBar>,
    tables: bool,
    /// What the engine calls its log: "WAL", "redo".
    log: &'static str,
    /// When the previous experiment finished (or the lab started): each table says how long
    /// its experiment took, setup (and PostgreSQL's CHECKPOINTs) included.
    last: std::sync::Mutex<Instant>,
}

impl Display {
    fn new(progress: bool, tables: bool, log: &'static str) -> Self {
        let bar = progress.then(|| {
            let bar =
                ProgressBar::with_draw_target(Some(1000), ProgressDrawTarget::stderr_with_hz(4));
            let style =
                ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:20} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_bar());
            bar.set_style(style);
            bar.enable_steady_tick(std::time::Duration::from_millis(250));
            bar
        });
        Display {
            bar,
            tables,
            log,
            last: std::sync::Mutex::new(Instant::now()),
        }
    }

    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }

    fn say(&self, text: &str, stdout: bool) {
        let print = || {
            if stdout {
                println!("{text}");
            } else {
                eprintln!("{text}");
            }
        };
        match &self.bar {
            Some(bar) => bar.suspend(print),
            None => print(),
        }
    }
}

impl Progress for Display {
    fn running(&self, p: &ProgressInfo) {
        if p.index == 1 && p.fraction == 0.0 {
            // The first run: the private server has started, the clock for A1's time starts.
            if let Ok(mut last) = self.last.lock() {
                *last = Instant::now();
            }
        }
        let Some(bar) = &self.bar else { return };
        bar.set_position((p.fraction * 1000.0) as u64);
        let left = p.remaining_seconds.map_or("estimating".to_string(), |s| {
            format!("~{} left", duration(s))
        });
        let run = if p.repeat > 1 {
            format!(" run {}/{}", p.run, p.repeat)
        } else {
            String::new()
        };
        bar.set_message(format!(
            "{} ({}/{}) {}{run} | {left}",
            p.experiment, p.index, p.experiments, p.variation
        ));
    }

    fn message(&self, line: &str) {
        self.say(&format!("lab: {line}"), false);
    }

    fn experiment_done(&self, e: &ExperimentResult) {
        let took = match self.last.lock() {
            Ok(mut last) => {
                let took = last.elapsed().as_secs_f64();
                *last = Instant::now();
                took
            }
            Err(_) => 0.0,
        };
        if self.tables {
            self.say(
                &format!(
                    "{}\n  took {} (setup included)",
                    experiment_table(e, self.log).trim_end(),
                    duration(took)
                ),
                true,
            );
        }
    }
}

fn duration(s: f64) -> String {
    let s = s.max(0.0).round() as u64;
    if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
}

/// One experiment as a table: our figures beside the seed's, then the verdict and the notes.
pub fn experiment_table(e: &ExperimentResult, log: &str) -> String {
    let mut out = format!(
        "\n{}  {}  ({})\n  advice: {}\n",
        e.id, e.title, e.seed_source, e.advice
    );
    match &e.status {
        Status::Ran => {}
        Status::Skipped(why) => out.push_str(&format!("  skipped: {why}\n")),
        Status::Failed(why) => out.push_str(&format!("  FAILED: {why}\n")),
    }
    let per_row = |v: &inrush_lab::results::Variation| {
        let m = v.runs.iter().map(|m| m.seconds / m.rows.max(1) as f64);
        let mut all: Vec<f64> = m.collect();
        all.sort_by(f64::total_cmp);
        all.get(all.len() / 2).copied()
    };
    let base = e.variations.iter().find(|v| v.baseline);
    let base_per_row = base.and_then(per_row);
    let base_seed = base.and_then(|v| v.seed_seconds);
    let width = e
        .variations
        .iter()
        .map(|v| v.label.len())
        .max()
        .unwrap_or(10)
        .min(72);
    out.push_str(&format!(
        "    {:width$}  {:>9} {:>9} {:>10} {:>8} {:>9} {:>6}  reported\n",
        "variation",
        "rows",
        "seconds",
        "rows/s",
        format!("{log} B/r"),
        format!("{log} rec/r"),
        "x base"
    ));
    for v in &e.variations {
        let mark = if v.baseline { "*" } else { " " };
        let seed = match (&v.seed_figure, v.seed_seconds, base_seed) {
            (Some(f), Some(s), Some(b)) if !v.baseline => format!("{f} ({:.2}x base)", s / b),
            (Some(f), _, _) => f.clone(),
            _ => "-".into(),
        };
        // The median run for every column: seconds and rows/s from different runs disagree.
        let Some(m) = v.median_run() else {
            out.push_str(&format!(
                "  {mark} {:width$}  {:>9}  (not run)  reported: {seed}\n",
                v.label, "-"
            ));
            continue;
        };
        let x = match (per_row(v), base_per_row) {
            (Some(a), Some(b)) if b > 0.0 => format!("{:.2}", a / b),
            _ => "-".into(),
        };
        out.push_str(&format!(
            "  {mark} {:width$}  {:>9} {:>9.3} {:>10} {:>8.0} {:>9} {:>6}  {seed}\n",
            v.label,
            group(m.rows),
            m.seconds,
            group(m.rows_per_second as u64),
            m.wal_bytes_per_row(),
            m.wal_records.map_or("-".into(), |r| format!(
                "{:.2}",
                r as f64 / m.rows.max(1) as f64
            )),
            x
        ));
    }
    match &e.verdict {
        Some(v) => out.push_str(&format!("  verdict: {}\n", v.text)),
        None if e.status == Status::Ran => {
            out.push_str("  verdict: none (the compared variations did not both run)\n")
        }
        None => {}
    }
    for n in &e.notes {
        out.push_str(&format!("  note: {n}\n"));
    }
    out
}

fn print_summary(results: &LabResults, seconds: f64) {
    let ran = results
        .experiments
        .iter()
        .filter(|e| e.status == Status::Ran)
        .count();
    let holds = |h| {
        results
            .experiments
            .iter()
            .filter(|e| e.verdict.as_ref().is_some_and(|v| v.holds == h))
            .count()
    };
    use inrush_lab::results::Holds;
    eprintln!(
        "\nlab: {ran} of {} experiments ran in {} on {} (scale {}, {} run(s) each): advice holds {}, partly {}, not {}, inconclusive {}",
        results.experiments.len(),
        duration(seconds),
        results.environment.server_version.split(" on ").next().unwrap_or("?"),
        results.scale,
        results.repeat,
        holds(Holds::Yes),
        holds(Holds::Partly),
        holds(Holds::No),
        holds(Holds::Inconclusive)
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use inrush_lab::results::{Measurement, Variation};

    fn run(seconds: f64) -> Measurement {
        Measurement {
            rows: 1000,
            seconds,
            rows_per_second: 1000.0 / seconds,
            wal_bytes: 100_000,
            wal_records: None,
            client_cpu_seconds: 0.0,
            rate: Vec::new(),
            settings_changed: Default::default(),
            extra: Default::default(),
        }
    }

    #[test]
    fn a_row_shows_one_run_the_median() {
        // In run order the middle run is the slowest; the median is 2 s, i.e. 500 rows/s.
        let e = ExperimentResult {
            id: "A1".into(),
            title: "t".into(),
            seed_source: "s".into(),
            advice: "a".into(),
            status: Status::Ran,
            variations: vec![Variation {
                label: "v".into(),
                baseline: true,
                seed_figure: None,
                seed_seconds: None,
                runs: vec![run(1.0), run(4.0), run(2.0)],
            }],
            verdict: None,
            notes: Vec::new(),
        };
        let table = experiment_table(&e, "WAL");
        let row = table.lines().find(|l| l.contains(" v ")).unwrap();
        assert!(row.contains("2.000") && row.contains(" 500 "), "{row}");
    }
}
