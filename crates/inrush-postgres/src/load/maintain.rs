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
    // Loads of one table that end together would each take its statistics, one waiting for
    // the other's; only the last needs to, and it sees every row committed before it looked.
    // A load beside this one that fails leaves them to autovacuum.
    let others = runtime.block_on(crate::ddl::release_claim(control, table.oid));
    if let (Ok(true), Some(sql)) = (&others, statement(&table.qualified())) {
        notes.push(format!(
            "{sql} left to another inrush load of {} still running: the last load of a table to end takes its statistics (autovacuum, if that one commits nothing)",
            table.qualified()
        ));
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
        // The server skips a table the role may not maintain with a warning, not an error:
        // asked first, so that the summary never says it ran.
        if let Ok(false) = runtime.block_on(may_maintain(client, &table)) {
            notes.push(format!(
                "{sql} skipped: it needs ownership of the table, or from PostgreSQL 17 the MAINTAIN right (GRANT MAINTAIN ON TABLE {table} TO <role>); autovacuum analyzes the table in its own time"
            ));
            continue;
        }
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

/// Whether the role may VACUUM and ANALYZE `table`: the MAINTAIN right from PostgreSQL 17
/// (owners and `pg_maintain` have it), before that ownership of the table or the database, or
/// superuser.
async fn may_maintain(
    client: &tokio_postgres::Client,
    table: &str,
) -> Result<bool, tokio_postgres::Error> {
    let version: i32 = client
        .query_one("SELECT current_setting('server_version_num')::int", &[])
        .await?
        .get(0);
    let sql = match version >= 170_000 {
        true => "SELECT has_table_privilege($1::text::regclass, 'MAINTAIN')",
        false => {
            "SELECT pg_has_role(c.relowner, 'USAGE') \
               OR pg_has_role((SELECT datdba FROM pg_database WHERE datname = current_database()), 'USAGE') \
               OR (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) \
             FROM pg_class c WHERE c.oid = $1::text::regclass"
        }
    };
    Ok(client.query_one(sql, &[&table]).await?.get(0))
}
