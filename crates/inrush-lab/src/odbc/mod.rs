//! The lab through an ODBC driver (`--to odbc:...`): the experiments of [`catalogue`] run
//! through `inrush_odbc::lab`'s connection, one scratch table per run in the connection's
//! default schema (dropped afterwards), the clock running from the first statement until the
//! last COMMIT returns; the log per row where the database says its position (PostgreSQL's
//! WAL, InnoDB's redo). The lab changes no server setting through ODBC.

pub mod catalogue;

use crate::data;
use crate::engine::{Engine, Rights, RunSpec, Saved};
use crate::measure::{inrush_load, CsvFile, RunClock, RunEnd};
use crate::methods::{share, tick, SharedSampler};
use crate::plan::{Method, RunPlan};
use crate::results::{Environment, Measurement};
use crate::{Error, Result};
use inrush_odbc::lab::{LabConn, LabServer};
use std::collections::BTreeMap;

/// The user's database behind an ODBC connection string.
pub struct Odbc {
    connection: String,
    server: LabServer,
    rights: Rights,
}

impl Odbc {
    /// Connects and reads what the driver says of itself and of its database.
    pub fn open(connection: &str) -> Result<(Odbc, Environment)> {
        let server = LabServer::read(connection)?;
        let environment = Environment {
            engine: server.dbms.clone(),
            server_version: server.described.clone(),
            server_version_num: 0,
            private_server: false,
            settings: BTreeMap::new(),
            client_cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            client_memory_bytes: crate::machine::memory_bytes(),
            os: crate::machine::os_text(),
            disk: "the server's disk (not visible from the client)".into(),
        };
        let rights = Rights {
            settings_refused: Some("over ODBC the lab changes no server setting".into()),
            restart: false,
            note: Some("Over ODBC runs start without a checkpoint: each database flushes pages its own way.".into()),
        };
        let odbc = Odbc {
            connection: connection.to_string(),
            server,
            rights,
        };
        Ok((odbc, environment))
    }
}

impl Engine for Odbc {
    fn log_name(&self) -> &'static str {
        self.server.log.unwrap_or("log")
    }

    fn rights(&self) -> &Rights {
        &self.rights
    }

    fn catalogue(&self) -> Vec<crate::catalogue::ExperimentDef> {
        catalogue::catalogue(self.server.parallel)
    }

    fn apply(&self, plan: &RunPlan) -> Result<Vec<Saved>> {
        match plan.server.is_empty() {
            true => Ok(Vec::new()),
            false => Err(Error::Usage(
                "over ODBC the lab changes no server setting".into(),
            )),
        }
    }

    fn restore(&self, _: &RunPlan, _: &[Saved]) -> Result<()> {
        Ok(())
    }

    fn measure(
        &self,
        _: &tokio::runtime::Runtime,
        plan: &RunPlan,
        run: RunSpec,
    ) -> Result<Measurement> {
        let control = LabConn::connect(&self.connection)?;
        let table = format!("inrush_lab_{}_{}", std::process::id(), run.run_id);
        let _ = control.exec(&format!("DROP TABLE {table}"));
        control.exec(&plan.create.replace("{t}", &table))?;
        let result = self.timed(&control, plan, run, &table);
        if let Err(e) = control.exec(&format!("DROP TABLE {table}")) {
            tracing::warn!("dropping {table}: {e}");
        }
        result
    }
}

impl Odbc {
    fn timed(
        &self,
        control: &LabConn,
        plan: &RunPlan,
        run: RunSpec,
        table: &str,
    ) -> Result<Measurement> {
        let expand = |sql: &str| sql.replace("{t}", table).replace("{s}", table);
        let generated = data::generate(plan.data, run.rows, run.seed)?;
        let csv = match plan.method {
            Method::InrushLoad { .. } => Some(CsvFile::write(&generated, run.run_id)?),
            _ => None,
        };
        let rows: Vec<[String; 6]> = generated
            .iter()
            .map(|r| {
                let [a, b, c] = r.ints.map(|i| i.to_string());
                let [d, e, f] = r.chars.clone();
                [a, b, c, d, e, f]
            })
            .collect();
        drop(generated);
        for sql in &plan.setup {
            control.exec(&expand(sql))?;
        }
        let mut loaders = (0..plan.method.connections())
            .map(|_| LabConn::connect(&self.connection))
            .collect::<Result<Vec<_>, _>>()?;
        let before = control.count(table)?;
        let log0 = control.log_position();

        let clock = RunClock::start(run.rows);
        let sampler = &clock.sampler;
        match (&plan.method, &csv) {
            (Method::InrushLoad { connections }, Some(csv)) => {
                let target = inrush_odbc::OdbcTarget::new(&self.connection);
                let load = |opts: &inrush_load::LoadOptions,
                            reporter: &dyn inrush_core::Reporter| {
                    inrush_load::load_into(&target, opts, reporter).map_err(|e| e.to_string())
                };
                inrush_load(&load, &csv.path, table, *connections, sampler)?
            }
            _ => send(&plan.method, &mut loaders, table, &rows, sampler)?,
        }
        let (seconds, client_cpu_seconds) = clock.read();
        drop(loaders);
        let log1 = control.log_position();
        let after = control.count(table)?;
        RunEnd {
            plan,
            table: table.to_string(),
            asked: run.rows,
            counts: (before, after),
            seconds,
            log: (log0, log1),
            client_cpu_seconds,
            sampler,
        }
        .measurement(None, BTreeMap::new())
    }
}

/// Sends the rows the way `method` says, over `loaders` (as many as it has connections), each
/// connection's share on a thread of its own.
fn send(
    method: &Method,
    loaders: &mut [LabConn],
    table: &str,
    rows: &[[String; 6]],
    sampler: &SharedSampler,
) -> Result<()> {
    let on_rows = |n| tick(sampler, n);
    let n = loaders.len();
    let first = loaders
        .first_mut()
        .ok_or_else(|| Error::Task("no loading connection".into()))?;
    match method {
        Method::Literal => first.insert_literal(table, rows, &on_rows)?,
        Method::Prepared { commit_every, .. } => {
            first.insert_arrays(table, rows, 1, *commit_every, &on_rows)?
        }
        Method::MultiRow {
            rows_per_statement,
            commit_every,
            ..
        } => first.insert_arrays(
            table,
            rows,
            *rows_per_statement,
            Some(*commit_every),
            &on_rows,
        )?,
        Method::Copy { rows_per_copy, .. } => {
            let every = rows_per_copy.unwrap_or(u64::MAX);
            std::thread::scope(|s| {
                let streams: Vec<_> = loaders
                    .iter_mut()
                    .enumerate()
                    .map(|(k, conn)| {
                        let (a, b) = share(rows.len(), n, k);
                        let on_rows = &on_rows;
                        s.spawn(move || {
                            conn.insert_arrays(
                                table,
                                &rows[a..b],
                                catalogue::STREAM_ARRAY,
                                Some(every),
                                on_rows,
                            )
                        })
                    })
                    .collect();
                streams.into_iter().try_for_each(|t| {
                    t.join()
                        .map_err(|_| Error::Task("a loading connection's thread panicked".into()))?
                        .map_err(Error::from)
                })
            })?
        }
        other => {
            return Err(Error::Usage(format!(
                "{other:?} does not run over ODBC (the catalogue marks it not applicable)"
            )))
        }
    }
    Ok(())
}
