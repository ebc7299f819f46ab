//! After a committed load: statistics (`ANALYZE`), and the visibility map (`VACUUM`) when the
//! plan asks for it; cancelled, not waited for, when the user interrupts.

use super::cancel::until_interrupted;
use super::Load;
use crate::ConnectOptions;
use inrush_core::{Phase, Reporter};
use inrush_load::plan::Maintenance;
use inrush_load::{LoadOptions, LoadPlan};
use tokio::runtime::Runtime;

/// Runs the plan's upkeep; a failure or an interrupt is a note (the rows are committed).
pub(super) fn maintain(
    load: &mut Load,
    load_plan: &LoadPlan,
    opts: &LoadOptions,
    runtime: &Runtime,
    reporter: &dyn Reporter,
) {
    let Load {
        target,
        control,
        table,
        notes,
        shards,
        ..
    } = load;
    let statement = |table: &str| match load_plan.after {
        Maintenance::None => None,
        Maintenance::Analyze | Maintenance::AnalyzeFrozen | Maintenance::AnalyzeOnly => {
            Some(format!("ANALYZE {table}"))
        }
        Maintenance::VacuumAnalyze => Some(format!("VACUUM (ANALYZE) {table}")),
    };
    if load_plan.after == Maintenance::None {
        return;
    }
    reporter.phase(Phase::Maintain {
        vacuum: load_plan.after == Maintenance::VacuumAnalyze,
    });
    // The target's table, then each remote table a routed load wrote to on its own server
    // (the coordinator's ANALYZE samples foreign partitions, but leaves the shards' own
    // statistics and visibility maps as they were).
    let mut work: Vec<(&tokio_postgres::Client, &ConnectOptions, String)> =
        vec![(&*control, &*target, table.qualified())];
    for shard in shards.iter() {
        for remote in &shard.tables {
            work.push((&shard.control, &shard.options, remote.clone()));
        }
    }
    for (client, server, table) in work {
        let Some(sql) = statement(&table) else {
            continue;
        };
        let upkeep = client.batch_execute(&sql);
        let done = runtime.block_on(until_interrupted(upkeep, client, server, opts));
        match done {
            _ if opts.interrupt.is_set() => {
                notes.push(format!(
                    "{sql} skipped: interrupted (the rows are committed)"
                ));
                return;
            }
            // The rows are committed; only the upkeep failed (usually: not the table's owner).
            Err(e) => notes.push(format!("{sql} failed: {}", crate::describe_pg_error(&e))),
            Ok(()) => {}
        }
    }
}
