//! After a committed load: statistics (`ANALYZE`), and the visibility map (`VACUUM`) when the
//! plan asks for it; cancelled, not waited for, when the user interrupts.

use super::prepare::Prepared;
use crate::ConnectOptions;
use inrush_core::{Phase, Reporter};
use inrush_load::plan::Maintenance;
use inrush_load::stages::CANCEL_POLL;
use inrush_load::LoadOptions;
use tokio::runtime::Runtime;

/// Runs the plan's upkeep; a failure or an interrupt is a note (the rows are committed).
pub(super) fn maintain(
    load: &mut Prepared,
    target: &ConnectOptions,
    opts: &LoadOptions,
    runtime: &Runtime,
    reporter: &dyn Reporter,
) {
    let Prepared {
        control,
        table,
        plan: load_plan,
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
        vec![(&*control, target, table.qualified())];
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

/// Runs `work` on `client` until it ends; if the user interrupts first, asks the server to
/// cancel it and waits for it to end.
pub(crate) async fn until_interrupted<T>(
    work: impl std::future::Future<Output = T>,
    client: &tokio_postgres::Client,
    target: &ConnectOptions,
    opts: &LoadOptions,
) -> T {
    tokio::pin!(work);
    loop {
        tokio::select! {
            done = &mut work => return done,
            _ = tokio::time::sleep(CANCEL_POLL) => if opts.interrupt.is_set() {
                // Best effort: when the cancel cannot reach the server, the work runs to its end.
                let _ = target.cancel(&client.cancel_token()).await;
                return work.await;
            }
        }
    }
}
