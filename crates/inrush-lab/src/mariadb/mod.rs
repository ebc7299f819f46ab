//! The lab on MariaDB (`--to mysql://...`): the experiments of [`catalogue`] run through
//! `inrush_mysql::lab`'s connection, one scratch database per run (dropped afterwards), the
//! clock running from the first statement until the last COMMIT (and any timed after-steps)
//! return; redo is the `Innodb_lsn_current` difference; settings changed with SET GLOBAL are
//! put back after each run.
//!
//! The lab does not start a MariaDB of its own: it needs the user's (`--to`).

pub mod catalogue;

use crate::data::{self, Row};
use crate::engine::{Engine, Rights, RunSpec, Saved};
use crate::measure::{inrush_load, CsvFile, RunClock, RunEnd};
use crate::methods::{self, share, tick, SharedSampler};
use crate::plan::{expand, Method, RunPlan};
use crate::results::{Environment, Measurement};
use crate::{Error, Result};
use futures_util::future::try_join_all;
use inrush_mysql::lab::{self, Commits, LabConn, LabRow, SavedSetting, Tick};
use inrush_mysql::{MysqlOptions, MysqlTarget};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

impl LabRow for Row {
    fn ints(&self) -> [i32; 3] {
        self.ints
    }
    fn texts(&self) -> [&str; 3] {
        [&self.chars[0], &self.chars[1], &self.chars[2]]
    }
}

/// The user's MariaDB.
pub struct Mariadb {
    options: MysqlOptions,
    rights: Rights,
    /// For the statements between runs (settings).
    control: tokio::runtime::Runtime,
}

impl Mariadb {
    /// Connects, reads the server and its settings, and checks the user may create the
    /// scratch databases.
    pub fn open(options: &MysqlOptions) -> Result<(Mariadb, Environment)> {
        let control = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|cause| Error::Io {
                path: "tokio runtime".into(),
                cause,
            })?;
        let info = control.block_on(async {
            let mut conn = LabConn::connect(options).await?;
            conn.server_info().await
        })?;
        let environment = Environment {
            engine: "MariaDB".into(),
            server_version: info.version,
            server_version_num: info.version_num,
            private_server: false,
            settings: info.settings.into_iter().collect(),
            client_cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            client_memory_bytes: crate::machine::memory_bytes(),
            os: crate::machine::os_text(),
            disk: "the server's disk (not visible from the client)".into(),
        };
        let rights = Rights {
            settings_refused: (!info.set_global).then(|| "needs SUPER to SET GLOBAL".into()),
            restart: false,
            note: Some("MariaDB has no CHECKPOINT statement: runs start with whatever pages InnoDB has not yet flushed in the background.".into()),
        };
        Ok((
            Mariadb {
                options: options.clone(),
                rights,
                control,
            },
            environment,
        ))
    }
}

impl Engine for Mariadb {
    fn log_name(&self) -> &'static str {
        "redo"
    }

    fn rights(&self) -> &Rights {
        &self.rights
    }

    fn catalogue(&self) -> Vec<crate::catalogue::ExperimentDef> {
        catalogue::catalogue()
    }

    fn apply(&self, plan: &RunPlan) -> Result<Vec<Saved>> {
        if plan.server.is_empty() {
            return Ok(Vec::new());
        }
        let mut saved = Vec::new();
        let applied = self.control.block_on(async {
            let mut conn = LabConn::connect(&self.options).await?;
            for (name, value) in &plan.server {
                let s = conn.set_global(name, value).await?;
                saved.push(Saved {
                    name: s.name,
                    previous: Some(s.previous),
                });
            }
            Ok::<_, Error>(())
        });
        if let Err(e) = applied {
            self.restore(plan, &saved)?;
            return Err(e);
        }
        Ok(saved)
    }

    fn restore(&self, _plan: &RunPlan, saved: &[Saved]) -> Result<()> {
        if saved.is_empty() {
            return Ok(());
        }
        let fail = |name: &str, e: Error| Error::Restore {
            name: name.to_string(),
            message: e.to_string(),
        };
        self.control.block_on(async {
            let mut conn = LabConn::connect(&self.options)
                .await
                .map_err(|e| fail(&saved[0].name, e.into()))?;
            for s in saved {
                let setting = SavedSetting {
                    name: s.name.clone(),
                    previous: s.previous.clone().unwrap_or_default(),
                };
                conn.restore_global(&setting)
                    .await
                    .map_err(|e| fail(&s.name, e.into()))?;
            }
            Ok(())
        })
    }

    fn measure(
        &self,
        runtime: &tokio::runtime::Runtime,
        plan: &RunPlan,
        run: RunSpec,
    ) -> Result<Measurement> {
        runtime.block_on(measure(&self.options, plan, run))
    }
}

/// Runs `plan` once in a scratch database, dropped afterwards whatever happened.
async fn measure(options: &MysqlOptions, plan: &RunPlan, run: RunSpec) -> Result<Measurement> {
    let mut control = LabConn::connect(options).await?;
    let db = format!("inrush_lab_{}_{}", std::process::id(), run.run_id);
    control
        .exec(&format!("DROP DATABASE IF EXISTS {db}"))
        .await?;
    control.exec(&format!("CREATE DATABASE {db}")).await?;
    let result = timed(options, plan, run, &mut control, &db).await;
    if let Err(e) = control.exec(&format!("DROP DATABASE IF EXISTS {db}")).await {
        tracing::warn!("dropping {db}: {e}");
    }
    result
}

/// Runs one untimed or timed step; a SELECT is a check that must find no rows (the anti-join
/// of the foreign keys checked after the load).
async fn step(conn: &mut LabConn, sql: &str) -> Result<()> {
    if !sql.starts_with("SELECT") {
        return Ok(conn.exec(sql).await?);
    }
    match conn.rows(sql).await? {
        0 => Ok(()),
        n => Err(Error::Data(format!("{n} rows without their parent: {sql}"))),
    }
}

async fn timed(
    options: &MysqlOptions,
    plan: &RunPlan,
    run: RunSpec,
    control: &mut LabConn,
    db: &str,
) -> Result<Measurement> {
    let table = format!("{db}.t");
    step(control, &expand(&plan.create, db, run.rows)).await?;
    let rows = match plan.method {
        Method::Produce { .. } => Vec::new(),
        _ => data::generate(plan.data, run.rows, run.seed)?,
    };
    let csv = match plan.method {
        Method::InrushLoad { .. } => Some(CsvFile::write(&rows, run.run_id)?),
        _ => None,
    };
    for sql in &plan.setup {
        step(control, &expand(sql, db, run.rows)).await?;
    }
    let mut loaders = Vec::new();
    for _ in 0..plan.method.connections() {
        let mut conn = LabConn::connect(options).await?;
        for (name, value) in &plan.session {
            conn.set_session(name, value).await?;
        }
        loaders.push(conn);
    }
    let before = control.count(&table).await?;
    let redo0 = control.redo_position().await;

    let clock = RunClock::start(run.rows);
    let sampler = &clock.sampler;
    match (&plan.method, &csv) {
        (Method::InrushLoad { connections }, Some(csv)) => {
            let load = |opts: &inrush_load::LoadOptions, reporter: &dyn inrush_core::Reporter| {
                inrush_load::load_into(&MysqlTarget::new(options.clone()), opts, reporter)
                    .map_err(|e| e.to_string())
            };
            inrush_load(&load, &csv.path, &table, *connections, sampler)?
        }
        _ => load(&plan.method, &mut loaders, &table, &rows, run, sampler).await?,
    }
    let mut extra = BTreeMap::new();
    for (label, sql) in &plan.after {
        let t = Instant::now();
        step(control, &expand(sql, db, run.rows)).await?;
        extra.insert(format!("{label}_seconds"), t.elapsed().as_secs_f64());
    }
    let (seconds, client_cpu_seconds) = clock.read();
    drop(loaders);
    let redo1 = control.redo_position().await;

    let after = control.count(&table).await?;
    RunEnd {
        plan,
        table,
        asked: run.rows,
        counts: (before, after),
        seconds,
        log: (redo0, redo1),
        client_cpu_seconds,
        sampler,
    }
    .measurement(None, extra)
}

/// Sends the rows the way `method` says, over `loaders` (as many as it has connections).
async fn load(
    method: &Method,
    loaders: &mut [LabConn],
    table: &str,
    rows: &[Row],
    run: RunSpec,
    sampler: &SharedSampler,
) -> Result<()> {
    let ticks = sampler.clone();
    let on_rows: Tick = Arc::new(move |n| tick(&ticks, n));
    let n = loaders.len();
    let first = loaders
        .first_mut()
        .ok_or_else(|| Error::Task("no loading connection".into()))?;
    match method {
        Method::Literal => first.insert_literal(table, rows, &on_rows).await?,
        Method::Prepared { commit_every, lock } => {
            let commits = Commits {
                every: *commit_every,
                lock: *lock,
            };
            first
                .insert_prepared(table, rows, 1, commits, &on_rows)
                .await?
        }
        Method::MultiRow {
            rows_per_statement,
            commit_every,
            lock,
        } => {
            let commits = Commits {
                every: Some(*commit_every),
                lock: *lock,
            };
            first
                .insert_prepared(table, rows, *rows_per_statement, commits, &on_rows)
                .await?
        }
        Method::Copy {
            rows_per_copy,
            lock,
            ..
        } => {
            let streams = loaders.iter_mut().enumerate().map(|(k, conn)| {
                let (a, b) = share(rows.len(), n, k);
                conn.load_data(table, &rows[a..b], *rows_per_copy, *lock, &on_rows)
            });
            try_join_all(streams).await?;
        }
        Method::Produce { overlap, .. } => {
            let (receivers, producers) =
                methods::producers(n, run.rows, *overlap, run.seed, load_lines)?;
            let consumers = loaders
                .iter_mut()
                .zip(receivers)
                .map(|(conn, rx)| conn.load_stream(table, rx, false, &on_rows));
            let consumed = try_join_all(consumers).await;
            methods::join(producers)?;
            consumed?;
        }
        Method::Pipelined { .. }
        | Method::InsertSelect
        | Method::CopyPipe
        | Method::InrushLoad { .. } => {
            return Err(Error::Usage(format!(
                "{method:?} does not run on MariaDB (the catalogue marks it not applicable)"
            )))
        }
    }
    Ok(())
}

/// Rows as `LOAD DATA` text, for D8's producers.
fn load_lines(rows: &[Row]) -> Vec<u8> {
    let mut out = Vec::with_capacity(rows.len() * 330);
    for row in rows {
        lab::load_line(row, &mut out);
    }
    out
}
