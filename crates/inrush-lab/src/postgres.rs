//! The lab on PostgreSQL: the user's server or a private durable one, the user's rights, the
//! settings recorded in the report, and settings changed with ALTER SYSTEM (reloaded, or on the
//! private server restarted) and put back after the run. Runs are measured by
//! [`crate::measure`] with the methods of [`crate::methods`].

use crate::catalogue::{catalogue, ExperimentDef};
use crate::engine::{Engine, Rights, RunSpec, Saved};
use crate::measure::{measure, RunContext};
use crate::plan::RunPlan;
use crate::progress::Progress;
use crate::results::{Environment, Measurement};
use crate::{Error, Result};
use inrush_postgres::{ConnectOptions, PrivateServer, ServerOptions};
use std::collections::BTreeMap;

/// The user's PostgreSQL (`--to`), or a private one the lab started and stops when dropped.
pub struct Postgres {
    target: ConnectOptions,
    server: Option<PrivateServer>,
    rights: Rights,
    checkpoint: bool,
}

impl Postgres {
    /// Connects to `target`, or starts a private durable server when there is none; reads the
    /// environment and the user's rights.
    pub fn open(
        target: Option<&ConnectOptions>,
        progress: &dyn Progress,
    ) -> Result<(Postgres, Environment)> {
        let server = match target {
            Some(_) => None,
            None => {
                progress.message(
                    "starting a private PostgreSQL (durable settings: fsync on, synchronous_commit on)",
                );
                Some(PrivateServer::start(&ServerOptions::default())?)
            }
        };
        let target = match (target, &server) {
            (Some(t), _) => t.clone(),
            (None, Some(s)) => s.connect_options("postgres"),
            (None, None) => return Err(Error::Usage("no server".into())),
        };
        let (environment, superuser, checkpoint) = environment(&target, server.is_some())?;
        let rights = Rights {
            settings_refused: (!superuser).then(|| "needs superuser to ALTER SYSTEM".into()),
            restart: server.is_some(),
            note: (!checkpoint).then(|| "The user may not CHECKPOINT (needs superuser or pg_checkpoint): runs start without one.".into()),
        };
        Ok((
            Postgres {
                target,
                server,
                rights,
                checkpoint,
            },
            environment,
        ))
    }
}

impl Engine for Postgres {
    fn log_name(&self) -> &'static str {
        "WAL"
    }

    fn rights(&self) -> &Rights {
        &self.rights
    }

    fn catalogue(&self) -> Vec<ExperimentDef> {
        catalogue()
    }

    fn apply(&self, plan: &RunPlan) -> Result<Vec<Saved>> {
        apply_server_settings(
            &self.target,
            &plan.server,
            plan.restart,
            self.server.as_ref(),
        )
    }

    fn restore(&self, plan: &RunPlan, saved: &[Saved]) -> Result<()> {
        restore_server_settings(&self.target, saved, plan.restart, self.server.as_ref())
    }

    fn measure(
        &self,
        runtime: &tokio::runtime::Runtime,
        plan: &RunPlan,
        run: RunSpec,
    ) -> Result<Measurement> {
        let ctx = RunContext {
            target: self.target.clone(),
            rows: run.rows,
            run_id: run.run_id,
            checkpoint: self.checkpoint,
            seed: run.seed,
        };
        runtime.block_on(measure(plan, &ctx))
    }
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

fn pg(what: &str) -> impl FnOnce(postgres::Error) -> Error + '_ {
    move |cause| Error::Query {
        what: what.to_string(),
        cause,
    }
}

fn environment(target: &ConnectOptions, private: bool) -> Result<(Environment, bool, bool)> {
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
        engine: "PostgreSQL".into(),
        server_version: row.get(0),
        server_version_num: row.get::<_, i32>(1) as u32,
        private_server: private,
        settings,
        client_cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        client_memory_bytes: crate::machine::memory_bytes(),
        os: crate::machine::os_text(),
        disk: if private {
            crate::machine::disk_text(&std::env::temp_dir())
        } else {
            "the server's disk (not visible from the client)".into()
        },
    };
    Ok((env, row.get(2), row.get(3)))
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
