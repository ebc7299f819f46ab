//! Running the lab: the server (the user's, or a private durable one), the rights and settings
//! it has, every selected experiment's variations with their server settings applied and
//! restored, progress with the time left, and the results.

use crate::catalogue::{catalogue, ExperimentDef};
use crate::measure::{measure, RunContext};
use crate::results::*;
use crate::{verdict, Error, Result};
use inrush_postgres::{ConnectOptions, PrivateServer, ServerOptions};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Runs per variation unless asked otherwise: the fewest whose spread (the noise a verdict
/// weighs its difference against) means something.
pub const DEFAULT_REPEAT: u32 = 3;

/// What `inrush lab run` asks for.
#[derive(Debug, Clone)]
pub struct LabOptions {
    /// Experiment ids (case-insensitive); empty or `all`: every experiment.
    pub ids: Vec<String>,
    pub scale: f64,
    /// Runs per variation: tables show the median, verdicts weigh the difference against the
    /// runs' spread.
    pub repeat: u32,
    /// `None`: start a private, durable server for the lab.
    pub target: Option<ConnectOptions>,
    /// Set (by a Ctrl-C handler) to stop after the current run; settings are restored.
    pub interrupt: Arc<AtomicBool>,
    pub seed: u64,
}

impl LabOptions {
    pub fn new(scale: f64) -> Self {
        LabOptions {
            ids: Vec::new(),
            scale,
            repeat: DEFAULT_REPEAT,
            target: None,
            interrupt: Arc::default(),
            seed: 42,
        }
    }
}

/// Where the lab is, for a progress display.
#[derive(Debug, Clone)]
pub struct ProgressInfo {
    pub experiment: String,
    pub title: String,
    /// 1-based position among the selected experiments.
    pub index: usize,
    pub experiments: usize,
    pub variation: String,
    pub run: u32,
    pub repeat: u32,
    pub elapsed_seconds: f64,
    /// Estimated from the work done so far (rows weighted by each method's cost).
    pub remaining_seconds: Option<f64>,
    /// 0..1 of the estimated work.
    pub fraction: f64,
}

/// Receives progress; the CLI draws it and prints each experiment's table as it finishes.
pub trait Progress {
    fn running(&self, info: &ProgressInfo);
    fn message(&self, _line: &str) {}
    fn experiment_done(&self, _result: &ExperimentResult) {}
}

/// Nothing shown.
pub struct Silent;
impl Progress for Silent {
    fn running(&self, _: &ProgressInfo) {}
}

/// The settings recorded in the environment.
const SETTINGS: &[&str] = &[
    "wal_level",
    "synchronous_commit",
    "fsync",
    "full_page_writes",
    "wal_compression",
    "wal_buffers",
    "max_wal_size",
    "checkpoint_timeout",
    "shared_buffers",
    "max_wal_senders",
    "autovacuum",
    "data_checksums",
    "wal_log_hints",
    "commit_delay",
];

/// The experiments `ids` selects, in catalogue order.
pub fn select(ids: &[String]) -> Result<Vec<ExperimentDef>> {
    let all = catalogue();
    if ids.is_empty() || ids.iter().any(|i| i.eq_ignore_ascii_case("all")) {
        return Ok(all);
    }
    let mut wanted = Vec::new();
    for id in ids {
        for part in id.split(',').filter(|p| !p.is_empty()) {
            let up = part.trim().to_ascii_uppercase();
            // A group letter selects the group: `lab run B`.
            let hits: Vec<&ExperimentDef> = all
                .iter()
                .filter(|e| e.id == up || (up.len() == 1 && e.id.starts_with(&up)))
                .collect();
            if hits.is_empty() {
                return Err(Error::UnknownExperiment(part.to_string()));
            }
            wanted.extend(hits.iter().map(|e| e.id));
        }
    }
    Ok(all.into_iter().filter(|e| wanted.contains(&e.id)).collect())
}

/// What the connected user may do.
#[derive(Debug, Clone, Copy)]
struct Rights {
    superuser: bool,
    checkpoint: bool,
}

/// Runs the selected experiments and returns every figure.
pub fn run(opts: &LabOptions, progress: &dyn Progress) -> Result<LabResults> {
    if !(opts.scale > 0.0 && opts.scale.is_finite()) {
        return Err(Error::Usage(format!(
            "--scale must be above 0, not {}",
            opts.scale
        )));
    }
    if opts.repeat == 0 {
        return Err(Error::Usage("--repeat must be at least 1".into()));
    }
    let experiments = select(&opts.ids)?;
    let started_at = rfc3339_now();
    let server = match &opts.target {
        Some(_) => None,
        None => {
            progress.message(
                "starting a private PostgreSQL (durable settings: fsync on, synchronous_commit on)",
            );
            Some(PrivateServer::start(&ServerOptions::default())?)
        }
    };
    let target = match (&opts.target, &server) {
        (Some(t), _) => t.clone(),
        (None, Some(s)) => s.connect_options("postgres"),
        (None, None) => return Err(Error::Usage("no server".into())),
    };
    let (environment, rights) = environment(&target, server.is_some())?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(environment.client_cores.clamp(2, 8))
        .enable_all()
        .build()
        .map_err(|cause| Error::Io {
            path: "tokio runtime".into(),
            cause,
        })?;

    let weight = |p: &crate::plan::RunPlan| {
        p.rows_at(opts.scale) as f64 * p.method.micros_per_row() / 1e6 + 0.3
    };
    let total_weight: f64 = experiments
        .iter()
        .flat_map(|e| e.variations.iter())
        .map(|v| weight(&v.plan) * opts.repeat as f64)
        .sum();
    let mut done_weight = 0.0;
    let started = Instant::now();
    let mut run_id = 0u32;
    let mut results = Vec::new();
    let n = experiments.len();
    for (i, def) in experiments.iter().enumerate() {
        let mut exp = ExperimentResult {
            id: def.id.to_string(),
            title: def.title.to_string(),
            seed_source: def.seed_source.to_string(),
            advice: def.advice.to_string(),
            status: Status::Ran,
            variations: Vec::new(),
            verdict: None,
            notes: def.notes.clone(),
        };
        if opts.interrupt.load(Ordering::Relaxed) {
            exp.status = Status::Skipped("interrupted before it ran".into());
            results.push(exp);
            continue;
        }
        if !rights.checkpoint {
            exp.notes.push("The user may not CHECKPOINT (needs superuser or pg_checkpoint): runs start without one.".into());
        }
        let mut skipped = Vec::new();
        let mut row_counts = Vec::new();
        for v in &def.variations {
            let mut variation = Variation {
                label: v.label.clone(),
                baseline: v.baseline,
                seed_figure: v.seed_figure.clone(),
                seed_seconds: v.seed_seconds,
                runs: Vec::new(),
            };
            let rows = v.plan.rows_at(opts.scale);
            let skip = if v.plan.restart && server.is_none() {
                Some(format!(
                    "{}: needs a server restart ({}), done only on the lab's private server (run without --to)",
                    v.label,
                    setting_list(&v.plan.server)
                ))
            } else if !v.plan.server.is_empty() && !rights.superuser {
                Some(format!(
                    "{}: needs superuser to ALTER SYSTEM {}",
                    v.label,
                    setting_list(&v.plan.server)
                ))
            } else {
                None
            };
            if let Some(reason) = skip {
                exp.notes.push(format!("Skipped {reason}."));
                skipped.push(reason);
                done_weight += weight(&v.plan) * opts.repeat as f64;
                exp.variations.push(variation);
                continue;
            }
            row_counts.push(rows);
            for r in 1..=opts.repeat {
                if opts.interrupt.load(Ordering::Relaxed) {
                    break;
                }
                let elapsed = started.elapsed().as_secs_f64();
                progress.running(&ProgressInfo {
                    experiment: def.id.to_string(),
                    title: def.title.to_string(),
                    index: i + 1,
                    experiments: n,
                    variation: format!("{} ({} rows)", v.label, rows),
                    run: r,
                    repeat: opts.repeat,
                    elapsed_seconds: elapsed,
                    remaining_seconds: (done_weight > 0.0)
                        .then(|| elapsed / done_weight * (total_weight - done_weight).max(0.0)),
                    fraction: (done_weight / total_weight).min(1.0),
                });
                run_id += 1;
                let ctx = RunContext {
                    target: target.clone(),
                    rows,
                    run_id,
                    checkpoint: rights.checkpoint,
                    seed: opts.seed,
                };
                let saved = apply_server_settings(
                    &target,
                    &v.plan.server,
                    v.plan.restart,
                    server.as_ref(),
                )?;
                let measured = runtime.block_on(measure(&v.plan, &ctx));
                restore_server_settings(&target, &saved, v.plan.restart, server.as_ref())?;
                done_weight += weight(&v.plan);
                match measured {
                    Ok(m) => variation.runs.push(m),
                    Err(e) => {
                        exp.status = Status::Failed(format!("{}: {e}", v.label));
                        break;
                    }
                }
            }
            exp.variations.push(variation);
            if matches!(exp.status, Status::Failed(_)) {
                break;
            }
        }
        if opts.interrupt.load(Ordering::Relaxed) && exp.status == Status::Ran {
            exp.notes.push("Interrupted: some runs are missing.".into());
        }
        if skipped.len() == def.variations.len() {
            exp.status = Status::Skipped(skipped.join("; "));
        }
        if exp.status == Status::Ran {
            exp.verdict = verdict::judge(&def.rules, &exp.variations);
            let distinct: std::collections::BTreeSet<u64> = row_counts.iter().copied().collect();
            if distinct.len() > 1 {
                exp.notes.push(format!(
                    "Variations loaded different row counts ({}); compare rows per second, not seconds.",
                    distinct.iter().map(|n| n.to_string()).collect::<Vec<_>>().join(", ")
                ));
            }
        }
        progress.experiment_done(&exp);
        results.push(exp);
    }
    Ok(LabResults {
        inrush_version: env!("CARGO_PKG_VERSION").to_string(),
        started_at,
        scale: opts.scale,
        repeat: opts.repeat,
        environment,
        experiments: results,
    })
}

fn setting_list(settings: &[(String, String)]) -> String {
    settings
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn pg(what: &str) -> impl FnOnce(postgres::Error) -> Error + '_ {
    move |cause| Error::Query {
        what: what.to_string(),
        cause,
    }
}

fn environment(target: &ConnectOptions, private: bool) -> Result<(Environment, Rights)> {
    let mut client = target.connect_blocking()?;
    let row = client
        .query_one(
            "SELECT version(), current_setting('server_version_num')::int, r.rolsuper, \
             r.rolsuper OR EXISTS (SELECT 1 FROM pg_roles c WHERE c.rolname = 'pg_checkpoint' \
                                   AND pg_has_role(current_user, c.oid, 'MEMBER')) \
             FROM pg_roles r WHERE r.rolname = current_user",
            &[],
        )
        .map_err(pg("reading the server's version and the user's rights"))?;
    let can_create: bool = client
        .query_one(
            "SELECT has_database_privilege(current_database(), 'CREATE')",
            &[],
        )
        .map_err(pg("checking the CREATE privilege"))?
        .get(0);
    if !can_create {
        return Err(Error::Usage(format!(
            "{} may not create schemas in its database; every lab run uses a scratch schema of its own (GRANT CREATE ON DATABASE ... TO ...), or run without --to for a private server",
            target.describe()
        )));
    }
    let mut settings = BTreeMap::new();
    for name in SETTINGS {
        let rows = client
            .query(
                "SELECT setting || coalesce(unit, '') FROM pg_settings WHERE name = $1",
                &[name],
            )
            .map_err(pg("reading pg_settings"))?;
        if let Some(r) = rows.first() {
            settings.insert(name.to_string(), r.get::<_, String>(0));
        }
    }
    let env = Environment {
        server_version: row.get(0),
        server_version_num: row.get::<_, i32>(1) as u32,
        private_server: private,
        settings,
        client_cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        client_memory_bytes: memory_bytes(),
        os: os_text(),
        disk: if private {
            disk_text(&std::env::temp_dir())
        } else {
            "the server's disk (not visible from the client)".into()
        },
    };
    Ok((
        env,
        Rights {
            superuser: row.get(2),
            checkpoint: row.get(3),
        },
    ))
}

/// A setting changed with ALTER SYSTEM, and what postgresql.auto.conf held before.
struct Saved {
    name: String,
    previous: Option<String>,
}

fn apply_server_settings(
    target: &ConnectOptions,
    settings: &[(String, String)],
    restart: bool,
    server: Option<&PrivateServer>,
) -> Result<Vec<Saved>> {
    if settings.is_empty() {
        return Ok(Vec::new());
    }
    let mut client = target.connect_blocking()?;
    let mut saved = Vec::new();
    for (name, value) in settings {
        let previous = client
            .query(
                "SELECT setting FROM pg_file_settings WHERE name = $1 AND sourcefile LIKE '%postgresql.auto.conf' ORDER BY seqno DESC LIMIT 1",
                &[name],
            )
            .map_err(pg("reading postgresql.auto.conf"))?
            .first()
            .map(|r| r.get::<_, String>(0));
        saved.push(Saved {
            name: name.clone(),
            previous,
        });
        let sql = format!("ALTER SYSTEM SET {name} = '{}'", value.replace('\'', "''"));
        if let Err(e) = client.batch_execute(&sql) {
            drop(client);
            let _ = restore_server_settings(target, &saved, false, None);
            return Err(pg("ALTER SYSTEM")(e));
        }
    }
    drop(client);
    reload_or_restart(target, restart, server)?;
    Ok(saved)
}

fn restore_server_settings(
    target: &ConnectOptions,
    saved: &[Saved],
    restart: bool,
    server: Option<&PrivateServer>,
) -> Result<()> {
    if saved.is_empty() {
        return Ok(());
    }
    let fail = |name: &str, message: String| Error::Restore {
        name: name.to_string(),
        message,
    };
    let mut client = target
        .connect_blocking()
        .map_err(|e| fail(&saved[0].name, e.to_string()))?;
    for s in saved {
        let sql = match &s.previous {
            Some(v) => format!("ALTER SYSTEM SET {} = '{}'", s.name, v.replace('\'', "''")),
            None => format!("ALTER SYSTEM RESET {}", s.name),
        };
        client
            .batch_execute(&sql)
            .map_err(|e| fail(&s.name, e.to_string()))?;
    }
    drop(client);
    reload_or_restart(target, restart, server).map_err(|e| fail(&saved[0].name, e.to_string()))
}

fn reload_or_restart(
    target: &ConnectOptions,
    restart: bool,
    server: Option<&PrivateServer>,
) -> Result<()> {
    match (restart, server) {
        (true, Some(server)) => Ok(server.restart()?),
        (true, None) => Err(Error::Usage(
            "a restart is only possible on the lab's private server".into(),
        )),
        (false, _) => {
            target.execute_blocking("SELECT pg_reload_conf()")?;
            Ok(())
        }
    }
}

fn memory_bytes() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

fn os_text() -> String {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    format!("{} {}", std::env::consts::OS, release.trim())
        .trim()
        .to_string()
}

/// The filesystem holding `path`, from /proc/mounts (the longest matching mount point).
fn disk_text(path: &std::path::Path) -> String {
    let path = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    mounts
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() >= 3 && path.starts_with(f[1])).then(|| {
                (
                    f[1].len(),
                    format!("{} on {} (mounted at {})", f[2], f[0], f[1]),
                )
            })
        })
        .max_by_key(|(len, _)| *len)
        .map_or_else(|| "unknown".into(), |(_, s)| s)
}

/// Now as RFC 3339 in UTC (no date crate needed).
pub fn rfc3339_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs()) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selection_by_id_group_and_all() {
        assert_eq!(select(&[]).unwrap().len(), 28);
        assert_eq!(select(&["all".into()]).unwrap().len(), 28);
        let ids: Vec<&str> = select(&["b".into(), "a2,D8".into()])
            .unwrap()
            .iter()
            .map(|e| e.id)
            .collect();
        assert_eq!(ids.len(), 11);
        assert_eq!(ids[0], "A2");
        assert!(matches!(
            select(&["Z9".into()]),
            Err(Error::UnknownExperiment(_))
        ));
    }

    #[test]
    fn timestamps_look_like_rfc3339() {
        let t = rfc3339_now();
        assert_eq!(t.len(), 20);
        assert!(t.starts_with("20") && t.ends_with('Z') && t.as_bytes()[10] == b'T');
    }
}
