//! A distributed write's plan, made once by its coordinator around all of its tasks: the
//! plain secondary indexes a large job is better without are journaled and dropped before the
//! tasks start (`begin`) and rebuilt once the job is decided, then the table's statistics are
//! gathered (`finish`). The rules are a command-line load's with an unknown input size (the
//! coordinator cannot see the DataFrame's): an empty table, or one the job overwrites, is
//! rebuilt after. Keys (primary, unique, foreign) stay whatever the size: a load undoes its rows
//! when a key put back after it fails, and a job's parts are committed by then. A dead
//! coordinator's drop is put back by `inrush recover` (or the table's next load), from the same
//! journal a command-line load writes.

use crate::plan::decide_plan;
use crate::{ddl, ConnectOptions, Result, TableInfo};
use inrush_load::patience::Patience;
use inrush_load::plan::Maintenance;
use inrush_load::PlanOptions;
use tokio_postgres::Client;

/// What a job does around its tasks.
pub(super) struct JobPlan {
    rebuilt: Vec<inrush_core::catalog::IndexInfo>,
    rule: String,
    /// What makes the table query-ready after a decision that lands rows.
    pub upkeep: Option<String>,
}

/// The job's plan for `table` (see the module documentation); `keep_indexes`: drop nothing.
pub(super) async fn plan_job(
    control: &Client,
    table: &TableInfo,
    overwrite: bool,
    keep_indexes: bool,
) -> Result<JobPlan> {
    let opts = PlanOptions {
        rebuild_indexes: !keep_indexes,
        keep_keys: Some(
            "a distributed write's parts are committed before a key put back after them could fail",
        ),
        ..PlanOptions::default()
    };
    let plan = decide_plan(control, table, None, opts, overwrite, false).await?;
    let upkeep = match plan.after {
        Maintenance::None => None,
        Maintenance::VacuumAnalyze => Some(format!("VACUUM (ANALYZE) {}", table.qualified())),
        _ => Some(format!("ANALYZE {}", table.qualified())),
    };
    Ok(JobPlan {
        rebuilt: plan.rebuilt(),
        rule: plan.rule,
        upkeep,
    })
}

impl JobPlan {
    /// Journals and drops what the plan rebuilds after the job, alone or not at all (another
    /// load's DDL and ours would wait on each other; the claim ends with the step's session).
    /// A note of what it dropped, or why it kept it: the tasks load either way.
    pub(super) async fn drop(&self, control: &Client, table: &TableInfo) -> Option<String> {
        if self.rebuilt.is_empty() {
            return None;
        }
        let dropped = match ddl::claim(control, table.oid).await {
            Ok(true) => ddl::journal_and_drop(control, table, &self.rebuilt, &[], &[]).await,
            Ok(false) => {
                return Some(format!(
                    "indexes kept during the job: another inrush load of {} is running",
                    table.qualified()
                ))
            }
            Err(e) => Err(e),
        };
        Some(match dropped {
            Ok(entries) => {
                let names: Vec<String> = entries.into_iter().map(|e| e.name).collect();
                format!(
                    "{} dropped for the job and rebuilt after its decision: {} (journaled in inrush.ddl_journal)",
                    names.join(", "),
                    self.rule
                )
            }
            // Nothing was dropped (one transaction).
            Err(e) => format!("indexes kept during the job: {e} (dropping them needs ownership of the table and the right to create schema inrush)"),
        })
    }
}

/// After the decision: puts back what the table's journal holds (what [`JobPlan::drop`] dropped,
/// or a dead load left dropped), waiting for the table's other inrush sessions (a straggling
/// task's) to end; then, when rows `landed`, runs `upkeep`. Notes what it did. The claim ends
/// with the step's session.
pub(super) async fn finish(
    control: &Client,
    target: &ConnectOptions,
    table: &str,
    upkeep: Option<&str>,
    landed: bool,
) -> Result<Vec<String>> {
    let table = TableInfo::read(control, table).await?;
    let mut notes = Vec::new();
    ddl::wait_for_claim(control, table.oid, true).await?;
    let restored = async {
        let pending = ddl::pending(control, Some(table.oid)).await?;
        ddl::restore(
            target,
            &pending,
            2,
            &Patience::new(None, &inrush_core::Silent),
        )
        .await?;
        Ok::<_, crate::Error>(pending)
    }
    .await
    .map_err(|e| {
        crate::Error::Server(format!(
            "{} (the job's rows are as decided; `inrush recover` puts back what is still dropped)",
            e
        ))
    })?;
    if !restored.is_empty() {
        let names: Vec<String> = restored.into_iter().map(|e| e.name).collect();
        notes.push(format!("rebuilt {}", names.join(", ")));
    }
    if let (Some(sql), true) = (upkeep, landed) {
        // The rows are committed; only the upkeep failed (usually: not the table's owner).
        match control.batch_execute(sql).await {
            Ok(()) => notes.push(sql.to_string()),
            Err(e) => notes.push(format!("{sql} failed: {}", crate::describe_pg_error(&e))),
        }
    }
    Ok(notes)
}
