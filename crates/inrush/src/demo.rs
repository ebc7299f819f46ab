//! `inrush demo`: the whole story in one command on a machine with no database: start a private
//! PostgreSQL, generate the SqlBulkCopy table's rows, load them with inrush and with `psql \copy`,
//! and print both times from the same run. `--keep` leaves the server running to load into;
//! `--stop DIR` stops it.

use crate::report::{self, group, OutputArgs};
use anyhow::{bail, Context, Result};
use clap::Args;
use inrush_load::LoadOptions;
use inrush_postgres::{ConnectOptions, PrivateServer, ServerOptions};
use inrush_read::generate::{sqlbulkcopy_csv, SQLBULKCOPY_COLUMNS};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

#[derive(Args, Debug)]
pub struct DemoArgs {
    /// Rows to generate.
    #[arg(long, default_value_t = 1_000_000)]
    pub rows: u64,
    /// Use this server instead of starting a private one (the demo creates its own tables).
    #[arg(long)]
    pub to: Option<String>,
    /// Leave the private server running at the end, and print its --to and how to stop it.
    #[arg(long, conflicts_with = "to")]
    pub keep: bool,
    /// Stop the server a `demo --keep` left running in DIR and delete its files.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["keep", "to", "rows"])]
    pub stop: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub output: OutputArgs,
}

const SEED: u64 = 42;
const ROUNDS: u32 = 2;

pub fn run(args: DemoArgs) -> Result<()> {
    if let Some(root) = &args.stop {
        PrivateServer::stop_kept(root)?;
        eprintln!(
            "stopped the server in {} and deleted its files",
            root.display()
        );
        return Ok(());
    }
    let say = |line: String| {
        if !args.output.json {
            eprintln!("{line}");
        }
    };
    say(format!(
        "inrush demo: {} rows of the SqlBulkCopy table (3 int + 3 varchar(100))",
        group(args.rows)
    ));
    let mut server = None;
    let (target, psql, conninfo) = match &args.to {
        Some(url) => (
            ConnectOptions::parse(url)?,
            PathBuf::from("psql"),
            url.clone(),
        ),
        None => {
            // Prepared transactions let the private server take what needs them: a Spark
            // job's all-or-nothing write (`inrush.spark`), a load across foreign servers.
            let options = ServerOptions {
                settings: vec![("max_prepared_transactions".into(), "32".into())],
                ..ServerOptions::default()
            };
            let started = server
                .insert(PrivateServer::start(&options).context("starting a private PostgreSQL")?);
            say(format!("  started a private server: {}", started.version()));
            (
                started.connect_options("postgres"),
                started.bin_dir().join("psql"),
                started.conninfo("postgres"),
            )
        }
    };

    let dir = tempfile::tempdir().context("creating a scratch directory")?;
    let csv = dir.path().join("sqlbulkcopy.csv");
    let t = Instant::now();
    let file = std::fs::File::create(&csv)?;
    let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
    let bytes = sqlbulkcopy_csv(&mut out, args.rows, SEED)?;
    std::io::Write::flush(&mut out)?;
    drop(out);
    make_readable(dir.path(), &csv)?;
    say(format!(
        "  generated {:.1} MB of CSV in {:.1} s",
        bytes as f64 / 1e6,
        t.elapsed().as_secs_f64()
    ));

    target.execute_blocking(&format!(
        "DROP TABLE IF EXISTS inrush_demo, inrush_demo_psql; \
         CREATE TABLE inrush_demo ({SQLBULKCOPY_COLUMNS}); CREATE TABLE inrush_demo_psql ({SQLBULKCOPY_COLUMNS}); CHECKPOINT"
    ))?;

    // Two interleaved rounds, best of each: on a fresh cluster whichever load runs first pays
    // for creating WAL segments that later loads reuse.
    let mut opts = LoadOptions::new(csv.to_string_lossy(), "inrush_demo");
    // Like with like: psql \copy does no VACUUM (ANALYZE) afterwards either.
    opts.plan.after = inrush_load::AfterLoad::Nothing;
    let (mut best, mut psql_seconds) = (None::<inrush_load::LoadSummary>, f64::INFINITY);
    for round in 1..=ROUNDS {
        target.execute_blocking("TRUNCATE inrush_demo; CHECKPOINT")?;
        let reporter = report::ProgressReporter::new(!args.output.no_progress && !args.output.json);
        let summary = inrush_postgres::load::run(&target, &opts, &reporter);
        reporter.finish();
        let summary = summary?;
        target.execute_blocking("TRUNCATE inrush_demo_psql; CHECKPOINT")?;
        let psql = psql_copy(&psql, &conninfo, &csv)?;
        say(format!(
            "  round {round}: inrush {:.2} s, psql \\copy {psql:.2} s",
            summary.seconds
        ));
        psql_seconds = psql_seconds.min(psql);
        if best.as_ref().is_none_or(|b| summary.seconds < b.seconds) {
            best = Some(summary);
        }
    }
    let summary = best.context("the demo ran no round")?;
    say(format!(
        "  inrush:     {:>6.2} s  ({} rows/s, {}, {} connections, {} workers)",
        summary.seconds,
        group(summary.rows_per_second as u64),
        summary.engine.method,
        summary.connections,
        summary.workers
    ));
    say(format!("  psql \\copy: {psql_seconds:>6.2} s"));
    let counts = target
        .query_text_blocking("SELECT (SELECT count(*) FROM inrush_demo) || ' ' || (SELECT count(*) FROM inrush_demo_psql)")?
        .unwrap_or_default();
    let expected = format!("{0} {0}", args.rows);
    if counts != expected {
        bail!("row counts differ: inrush and psql tables hold {counts}, expected {expected}");
    }
    let ratio = psql_seconds / summary.seconds.max(1e-9);
    // With --keep the server outlives us: its directory says how to stop it.
    let kept = server.filter(|_| args.keep).map(|server| {
        let dirs = (server.root().to_path_buf(), server.data_dir());
        server.keep();
        dirs
    });
    // Commands as they run here: a fresh checkout's binary is on no PATH.
    let inrush = crate::command();
    let stop = |dir: &Path| format!("{inrush} demo --stop {}", dir.display());
    if args.output.json {
        let mut json = serde_json::json!({ "rows": args.rows, "inrush": summary, "psql_copy_seconds": psql_seconds, "speedup_vs_psql_copy": ratio });
        if let Some((dir, data_dir)) = &kept {
            json["server"] = serde_json::json!({ "conninfo": conninfo, "dir": dir, "data_dir": data_dir, "stop": stop(dir) });
        }
        println!("{json}");
        return Ok(());
    }
    // A tiny load is all connecting and planning: say "slower" rather than "0.2x faster".
    let compared = match ratio >= 1.0 {
        true => format!("{ratio:.1}x faster than"),
        false => format!("{:.1}x slower than", 1.0 / ratio.max(1e-9)),
    };
    say(format!("  inrush was {compared} psql \\copy (best of {ROUNDS} rounds each); both tables hold {} rows.", group(args.rows)));
    match (&kept, &args.to) {
        (Some((dir, data_dir)), _) => {
            say(format!(
                "  the server keeps running (--keep); its data directory: {}",
                data_dir.display()
            ));
            say(format!("  load your own file into it:\n    {inrush} load FILE --to '{conninfo}' --table T --header --create"));
            say(format!("  query it: {} '{conninfo}'", psql.display()));
            say(format!("  stop it and delete its files: {}", stop(dir)));
        }
        // Not the user's URL again: it may hold a password.
        (None, Some(_)) => say(format!("  load your own file: {inrush} load FILE --to URL --table T --header, with the URL you gave the demo (--create makes the table)")),
        (None, None) => {
            say(format!("  load your own file: {inrush} load FILE --to URL --table T --header (--create makes the table)"));
            say("    --to takes any PostgreSQL server: a URL (postgresql://user@host:5432/db) or key=value string; PG* variables and ~/.pgpass fill the gaps, as for psql".into());
            say(format!("    this demo's server is stopped now: {inrush} demo --keep leaves it running and prints its --to"));
        }
    }
    say(format!("  see which bulk-insert advice holds on this machine: {inrush} lab run (quick scale, 25-40 min on 2 cores; --to URL for your server)"));
    Ok(())
}

/// Times `psql -c '\copy inrush_demo_psql FROM file (FORMAT csv)'`.
fn psql_copy(psql: &Path, conninfo: &str, csv: &Path) -> Result<f64> {
    let t = Instant::now();
    let out = Command::new(psql)
        .args(["-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", conninfo, "-c"])
        .arg(format!(
            "\\copy inrush_demo_psql FROM '{}' (FORMAT csv)",
            csv.display()
        ))
        .output()
        .with_context(|| format!("running {}", psql.display()))?;
    if !out.status.success() {
        bail!(
            "psql \\copy failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(t.elapsed().as_secs_f64())
}

/// psql runs as us, but keep the file readable for a server-side comparison too.
fn make_readable(dir: &Path, file: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755))?;
    std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o644))?;
    Ok(())
}
