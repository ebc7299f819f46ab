//! Running the lab: the engine the target names ([`crate::postgres`], [`crate::mariadb`]),
//! every selected experiment's variations with their server settings applied and restored
//! (what does not apply to the engine, or needs a right the user lacks, skipped with the
//! reason), progress with the time left, and the results.

use crate::catalogue::{ExperimentDef, VariationDef};
use crate::engine::{Engine, RunSpec};
use crate::progress::{Progress, ProgressInfo};
use crate::results::*;
use crate::{verdict, Error, Result};
use inrush_mysql::MysqlOptions;
use inrush_postgres::ConnectOptions;
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
    pub target: LabTarget,
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
            target: LabTarget::PrivatePostgres,
            interrupt: Arc::default(),
            seed: 42,
        }
    }
}

/// The server the lab measures.
#[derive(Debug, Clone)]
#[allow(clippy::large_enum_variant)] // one per lab run
pub enum LabTarget {
    /// A private, durable PostgreSQL the lab starts (and may restart).
    PrivatePostgres,
    /// The user's PostgreSQL.
    Postgres(ConnectOptions),
    /// The user's MariaDB (`mysql://` or `mariadb://`).
    Mariadb(MysqlOptions),
    /// A database behind an ODBC connection string (`odbc:...`, without the prefix).
    Odbc(String),
}

/// The experiments `ids` selects, in catalogue order.
pub fn select(all: Vec<ExperimentDef>, ids: &[String]) -> Result<Vec<ExperimentDef>> {
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
    // Every engine's catalogue has the same ids: an unknown one is refused before connecting.
    select(crate::catalogue::catalogue(), &opts.ids)?;
    let started_at = rfc3339_now();
    let (engine, environment): (Box<dyn Engine>, Environment) = match &opts.target {
        LabTarget::PrivatePostgres => boxed(crate::postgres::Postgres::open(None, progress)?),
        LabTarget::Postgres(t) => boxed(crate::postgres::Postgres::open(Some(t), progress)?),
        LabTarget::Mariadb(t) => boxed(crate::mariadb::Mariadb::open(t)?),
        LabTarget::Odbc(c) => boxed(crate::odbc::Odbc::open(c)?),
    };
    let experiments = select(engine.catalogue(), &opts.ids)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(environment.client_cores.clamp(2, 8))
        .enable_all()
        .build()
        .map_err(|cause| Error::Io {
            path: "tokio runtime".into(),
            cause,
        })?;
    let mut lab = Runner {
        opts,
        progress,
        engine: engine.as_ref(),
        runtime: &runtime,
        total_weight: 0.0,
        done_weight: 0.0,
        started: Instant::now(),
        run_id: 0,
    };
    lab.total_weight = experiments
        .iter()
        .filter(|e| e.unavailable.is_none())
        .flat_map(|e| e.variations.iter())
        .map(|v| lab.weight(v) * opts.repeat as f64)
        .sum();
    let n = experiments.len();
    let mut results = Vec::new();
    for (i, def) in experiments.iter().enumerate() {
        let exp = lab.experiment(def, i, n)?;
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

fn boxed<E: Engine + 'static>((engine, env): (E, Environment)) -> (Box<dyn Engine>, Environment) {
    (Box::new(engine), env)
}

/// The state of one lab run across experiments: where it is, for progress and run ids.
struct Runner<'a> {
    opts: &'a LabOptions,
    progress: &'a dyn Progress,
    engine: &'a dyn Engine,
    runtime: &'a tokio::runtime::Runtime,
    total_weight: f64,
    done_weight: f64,
    started: Instant,
    run_id: u32,
}

impl Runner<'_> {
    /// A variation's estimated cost, for the time left.
    fn weight(&self, v: &VariationDef) -> f64 {
        match v.unavailable {
            Some(_) => 0.0,
            None => {
                v.plan.rows_at(self.opts.scale) as f64 * v.plan.method.micros_per_row() / 1e6 + 0.3
            }
        }
    }

    fn interrupted(&self) -> bool {
        self.opts.interrupt.load(Ordering::Relaxed)
    }

    /// One experiment's variations and verdict; an error only when a server setting could not
    /// be changed or put back (the lab stops there).
    fn experiment(
        &mut self,
        def: &ExperimentDef,
        index: usize,
        count: usize,
    ) -> Result<ExperimentResult> {
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
        if let Some(reason) = &def.unavailable {
            exp.status = Status::Skipped(reason.clone());
            return Ok(exp);
        }
        if self.interrupted() {
            exp.status = Status::Skipped("interrupted before it ran".into());
            return Ok(exp);
        }
        if let Some(note) = &self.engine.rights().note {
            exp.notes.push(note.clone());
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
            if let Some(reason) = self.skip(v) {
                exp.notes.push(format!("Skipped {reason}."));
                skipped.push(reason);
                self.done_weight += self.weight(v) * self.opts.repeat as f64;
                exp.variations.push(variation);
                continue;
            }
            row_counts.push(v.plan.rows_at(self.opts.scale));
            let failed = self.runs(def, v, index, count, &mut variation)?;
            exp.variations.push(variation);
            if let Some(e) = failed {
                exp.status = Status::Failed(format!("{}: {e}", v.label));
                break;
            }
        }
        if self.interrupted() && exp.status == Status::Ran {
            exp.notes.push("Interrupted: some runs are missing.".into());
        }
        if skipped.len() == def.variations.len() {
            exp.status = Status::Skipped(skipped.join("; "));
        }
        if exp.status == Status::Ran {
            exp.verdict = verdict::judge(&def.rules, &exp.variations).map(|mut v| {
                // The verdicts speak of PostgreSQL's WAL; other engines name their own log.
                v.text = v
                    .text
                    .replace("WAL ", &format!("{} ", self.engine.log_name()));
                v
            });
            let distinct: std::collections::BTreeSet<u64> = row_counts.iter().copied().collect();
            if distinct.len() > 1 {
                exp.notes.push(format!(
                    "Variations loaded different row counts ({}); compare rows per second, not seconds.",
                    distinct.iter().map(|n| n.to_string()).collect::<Vec<_>>().join(", ")
                ));
            }
        }
        Ok(exp)
    }

    /// Why a variation is not run here: it does not apply to the engine, or needs a right or
    /// a restart the lab does not have.
    fn skip(&self, v: &VariationDef) -> Option<String> {
        let rights = self.engine.rights();
        if let Some(reason) = &v.unavailable {
            Some(format!("{}: {reason}", v.label))
        } else if v.plan.restart && !rights.restart {
            Some(format!(
                "{}: needs a server restart ({}), done only on the lab's private server (run without --to)",
                v.label,
                setting_list(&v.plan.server)
            ))
        } else if v.plan.server.is_empty() {
            None
        } else {
            rights
                .settings_refused
                .as_ref()
                .map(|why| format!("{}: {why} {}", v.label, setting_list(&v.plan.server)))
        }
    }

    /// The variation's runs, each with its server settings applied and restored; the error of
    /// the run that failed, if one did.
    fn runs(
        &mut self,
        def: &ExperimentDef,
        v: &VariationDef,
        index: usize,
        count: usize,
        variation: &mut Variation,
    ) -> Result<Option<Error>> {
        let rows = v.plan.rows_at(self.opts.scale);
        for r in 1..=self.opts.repeat {
            if self.interrupted() {
                break;
            }
            let elapsed = self.started.elapsed().as_secs_f64();
            let (done, total) = (self.done_weight, self.total_weight);
            self.progress.running(&ProgressInfo {
                experiment: def.id.to_string(),
                title: def.title.to_string(),
                index: index + 1,
                experiments: count,
                variation: format!("{} ({} rows)", v.label, rows),
                run: r,
                repeat: self.opts.repeat,
                elapsed_seconds: elapsed,
                remaining_seconds: (done > 0.0).then(|| elapsed / done * (total - done).max(0.0)),
                fraction: (done / total).min(1.0),
            });
            self.run_id += 1;
            let spec = RunSpec {
                rows,
                run_id: self.run_id,
                seed: self.opts.seed,
            };
            let saved = self.engine.apply(&v.plan)?;
            let measured = self.engine.measure(self.runtime, &v.plan, spec);
            self.engine.restore(&v.plan, &saved)?;
            self.done_weight += self.weight(v);
            match measured {
                Ok(m) => variation.runs.push(m),
                Err(e) => return Ok(Some(e)),
            }
        }
        Ok(None)
    }
}

fn setting_list(settings: &[(String, String)]) -> String {
    settings
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Now as RFC 3339 in UTC (no date crate needed).
pub fn rfc3339_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs()) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = inrush_core::calendar::civil_from_days(days);
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
        let all = crate::catalogue::catalogue;
        assert_eq!(select(all(), &[]).unwrap().len(), 28);
        assert_eq!(select(all(), &["all".into()]).unwrap().len(), 28);
        let ids: Vec<&str> = select(all(), &["b".into(), "a2,D8".into()])
            .unwrap()
            .iter()
            .map(|e| e.id)
            .collect();
        assert_eq!(ids.len(), 11);
        assert_eq!(ids[0], "A2");
        assert!(matches!(
            select(all(), &["Z9".into()]),
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
