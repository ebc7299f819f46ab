//! `inrush copy`: its arguments, its plan and report as text or JSON, and Ctrl-C. The copy
//! itself is `inrush_copy`'s; the engines on both sides come from [`crate::engines`].

use crate::{engines, report::group, Outcome};
use anyhow::{Context, Result};
use clap::Args;
use inrush_copy::{
    CopyOptions, CopyPlan, CopyReporter, CopySummary, Failed, TableReport, TableState,
};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

#[derive(Args, Debug)]
pub struct CopyArgs {
    /// The source database: postgresql://..., mysql://... (MariaDB or MySQL), or a SQLite file
    /// (sqlite:///path/to.db).
    #[arg(long)]
    pub from: String,
    /// The target database, as for --from (a SQLite file is made if missing).
    #[arg(long, env = "INRUSH_TO")]
    pub to: String,
    /// Copy only tables matching these patterns (`*`, `?`; `name` or `schema.name`; comma
    /// separated or repeated).
    #[arg(long, value_delimiter = ',')]
    pub tables: Vec<String>,
    /// Leave out tables matching these patterns.
    #[arg(long, value_delimiter = ',')]
    pub exclude: Vec<String>,
    /// Make the tables, keys and indexes; copy no row.
    #[arg(long)]
    pub schema_only: bool,
    /// Copy rows into tables that exist in the target already; make nothing.
    #[arg(long)]
    pub data_only: bool,
    /// Tables loaded at once (each with its own keys and indexes built after its rows).
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Parallel reads of one large table, cut by its integer primary key.
    #[arg(long)]
    pub connections: Option<usize>,
    /// Bad rows (a zero date, a value out of the target's range) each table may have: they
    /// go to `<table>.rejects` with the reason in `<table>.rejects.log`.
    #[arg(long, default_value_t = 0)]
    pub max_errors: u64,
    /// Directory of the reject files (default: the working directory).
    #[arg(long)]
    pub rejects: Option<std::path::PathBuf>,
    /// MariaDB/MySQL source: read zero dates (`0000-00-00`) as NULL instead of refusing them.
    #[arg(long)]
    pub zero_dates_null: bool,
    /// Name every schema, table, column, key and index in lower case in the target (ASCII
    /// letters, as PostgreSQL folds a name written without quotes: `Orders` becomes `orders`).
    /// Names that would become one are refused before anything changes.
    #[arg(long)]
    pub lower_case: bool,
    /// After each table, read both sides back and compare its row count and a checksum of
    /// every row's values (put in one canonical text per type); a difference fails the copy.
    #[arg(long)]
    pub verify: bool,
    /// Print what the copy would make, translate and leave out; change nothing.
    #[arg(long)]
    pub check: bool,
    /// Print the plan or the summary as JSON on stdout.
    #[arg(long)]
    pub json: bool,
    /// No progress bar: the copy draws none, and takes the option as `load` does, so scripts
    /// can pass it to both.
    #[arg(long)]
    pub no_progress: bool,
}

pub fn run(args: CopyArgs) -> Result<Outcome> {
    let mut opts = CopyOptions::new();
    let planning = Arc::new(AtomicBool::new(true));
    stop_on_signal(&opts.stop, &planning)?;
    let source = engines::named(&args.from).schema_source(&args.from, args.zero_dates_null)?;
    let target = engines::named(&args.to).schema_target(&args.to)?;
    opts.tables = args.tables.clone();
    opts.exclude = args.exclude.clone();
    opts.schema_only = args.schema_only;
    opts.data_only = args.data_only;
    opts.jobs = args.jobs.unwrap_or(opts.jobs).max(1);
    opts.connections = args.connections.unwrap_or(opts.connections).max(1);
    opts.max_errors = args.max_errors;
    opts.rejects = args.rejects.clone();
    opts.verify = args.verify;
    opts.lower_case = args.lower_case;
    let plan = inrush_copy::plan(&*source, &*target, &opts).map_err(failed)?;
    if args.check {
        match args.json {
            true => println!("{}", serde_json::to_string(&plan)?),
            false => eprint!("{}", describe_plan(&plan)),
        }
        return Ok(Outcome::Done);
    }
    let engine = engines::named(&args.to);
    let to = args.to.clone();
    let load_target =
        move || -> Result<Box<dyn inrush_load::target::Target>, inrush_load::Error> {
            engine
                .target(&to)
                .map_err(|e| match e.downcast::<inrush_load::Error>() {
                    Ok(e) => e,
                    Err(e) => inrush_load::Error::Usage(format!("{e:#}")),
                })
        };
    let reporter = Lines::new(&plan, args.json);
    planning.store(false, Ordering::SeqCst);
    let summary = inrush_copy::copy(&plan, &*source, &*target, &load_target, &opts, &reporter)
        .map_err(failed);
    reporter.bar.finish_and_clear();
    let summary = summary?;
    match args.json {
        true => println!("{}", serde_json::to_string(&summary)?),
        false => eprint!("{}", describe_summary(&summary)),
    }
    Ok(match summary.rows_rejected {
        0 => Outcome::Done,
        _ => Outcome::CompletedWithRejects,
    })
}

fn failed(f: Failed) -> anyhow::Error {
    let error = anyhow::Error::from(*f.error);
    match f.table {
        Some(table) => error.context(format!("copying {table}")),
        None => error,
    }
}

/// Ctrl-C or SIGTERM while `planning` (reading both catalogs and the ledger, which may wait on
/// a lock) exits at once: nothing has changed. Later it stops every table's load (each rolls
/// back what it has not committed) and ends every key or index being built; a rerun of the
/// same command resumes from the copy ledger. A second signal exits at once.
fn stop_on_signal(stop: &Arc<inrush_copy::Stop>, planning: &Arc<AtomicBool>) -> Result<()> {
    let (stop, planning) = (stop.clone(), planning.clone());
    ctrlc::set_handler(move || {
        if planning.load(Ordering::SeqCst) {
            eprintln!("\nstopped before anything was changed");
            std::process::exit(130);
        }
        if stop.signal() {
            std::process::exit(130);
        }
        eprintln!("\nstopping: each table's load rolls back what it has not committed, and a key or index being built is ended and rolled back (a second signal ends at once); run the same command again to resume");
    })
    .context("installing the Ctrl-C handler")
}

/// One line per table as it finishes, and a bar of the rows of every table when stderr is a
/// terminal.
struct Lines {
    bar: indicatif::ProgressBar,
    json: bool,
}

impl Lines {
    fn new(plan: &CopyPlan, json: bool) -> Lines {
        let total: u64 = plan
            .tables
            .iter()
            .filter(|t| t.state != TableState::Loaded)
            .map(|t| t.source.rows_estimate)
            .sum();
        let bar = match !json && std::io::stderr().is_terminal() {
            true => indicatif::ProgressBar::new(total.max(1)),
            false => indicatif::ProgressBar::hidden(),
        };
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{spinner} {pos:>12} rows of about {len}  {per_sec:>14}  {msg}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar.enable_steady_tick(std::time::Duration::from_millis(200));
        Lines { bar, json }
    }
}

impl CopyReporter for Lines {
    fn loading(&self, table: &str) {
        self.bar.set_message(format!("loading {table}"));
    }

    fn rows(&self, rows: u64) {
        self.bar.set_position(rows);
    }

    fn building(&self, table: &str, what: &str) {
        self.bar.set_message(format!("{table}: {what}"));
    }

    fn finished(&self, report: &TableReport) {
        if !self.json {
            self.bar.suspend(|| eprintln!("{}", table_line(report)));
        }
    }
}

fn table_line(r: &TableReport) -> String {
    let rows = match r.resumed {
        true => "rows copied by an earlier run".to_string(),
        false => format!(
            "{} rows in {:.1} s ({}/s, {})",
            group(r.rows),
            r.load_seconds,
            group(r.rows_per_second as u64),
            r.method
        ),
    };
    let rejected = match r.rows_rejected {
        0 => String::new(),
        n => format!(
            "; {} refused into {}",
            group(n),
            r.rejects_file.as_deref().unwrap_or("the reject file")
        ),
    };
    let verified = match r.verified {
        Some(v) => format!(
            "; verified equal ({} rows, checksum {:016x}, {:.1} s)",
            group(v.target.rows),
            v.target.checksum,
            v.seconds
        ),
        None => String::new(),
    };
    format!(
        "copied {}: {rows}{rejected}; keys and indexes {:.1} s{verified}",
        r.table, r.build_seconds
    )
}

fn describe_plan(plan: &CopyPlan) -> String {
    let mut out = format!(
        "inrush copy from {} ({} into {}): {} tables, largest first; nothing was changed\n",
        plan.copy,
        plan.source_engine,
        plan.target_engine,
        plan.tables.len()
    );
    for t in &plan.tables {
        let state = match t.state {
            TableState::New => "",
            TableState::InFlight => " (an earlier run was loading it: emptied and loaded again)",
            TableState::Loaded => " (rows copied by an earlier run)",
        };
        out.push_str(&format!(
            "\n{} -> {}: about {} rows{state}\n",
            t.name(),
            t.design.name,
            group(t.source.rows_estimate)
        ));
        for sql in &t.design.create {
            out.push_str(&format!("  before rows: {sql}\n"));
        }
        for step in &t.design.after_rows {
            let done = if t.done.contains(&step.what) {
                " (done)"
            } else {
                ""
            };
            out.push_str(&format!("  after its rows: {}{done}\n", step.what));
        }
        for step in &t.design.after_keys {
            let also = match step.needs.is_empty() {
                true => String::new(),
                false => format!(" and {}'s", step.needs.join(", ")),
            };
            out.push_str(&format!("  after its keys{also}: {}\n", step.what));
        }
        for note in &t.design.notes {
            let how = if note.left_out {
                "left out"
            } else {
                "translated"
            };
            out.push_str(&format!("  {how}: {}\n", note.what));
        }
    }
    if !plan.not_copied.is_empty() {
        out.push_str("\nnot copied:\n");
        for o in &plan.not_copied {
            out.push_str(&format!("  {} {}\n", o.kind, o.name));
        }
    }
    out
}

fn describe_summary(s: &CopySummary) -> String {
    let mut out = format!(
        "\ncopied {} tables, {} rows in {:.1} s ({:.1} s after the last table's indexes)\n",
        s.tables.len(),
        group(s.rows),
        s.seconds,
        s.tail_seconds
    );
    if let Some(how) = &s.snapshot {
        out.push_str(&format!("source image: {how}\n"));
    }
    for t in &s.tables {
        for note in &t.notes {
            let how = if note.left_out {
                "left out"
            } else {
                "translated"
            };
            out.push_str(&format!("{how}: {}\n", note.what));
        }
    }
    if !s.not_copied.is_empty() {
        let names: Vec<String> = s
            .not_copied
            .iter()
            .map(|o| format!("{} {}", o.kind, o.name))
            .collect();
        out.push_str(&format!("not copied: {}\n", names.join(", ")));
    }
    if s.rows_rejected > 0 {
        out.push_str(&format!(
            "{} rows refused into the tables' reject files\n",
            group(s.rows_rejected)
        ));
    }
    out
}
