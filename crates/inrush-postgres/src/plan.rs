//! What PostgreSQL can do around a load of a table (its `Capabilities`), and the plan the one
//! rule, `LoadPlan::decide`, makes of it with what the catalog says: for a load's table, each
//! of a routed load's remote tables, and a distributed write's table.

use crate::{TableInfo, TableSize};
use inrush_load::{Capabilities, ForeignKeysAfter, LoadPlan};

/// Reads what the plan weighs (indexes, keys, size, per-row work) and decides. `emptied`: the
/// table counts as empty (`--truncate` empties it in the load's own transaction).
pub(crate) async fn decide_plan(
    client: &tokio_postgres::Client,
    table: &TableInfo,
    input_size: Option<u64>,
    opts: inrush_load::PlanOptions,
    emptied: bool,
    frozen: bool,
) -> crate::Result<LoadPlan> {
    let indexes = table.indexes(client).await?;
    let foreign_keys = table.foreign_keys(client).await?;
    let mut size = table.size(client).await?;
    let mut opts = opts;
    if emptied {
        // A key built after the load that fails undoes the load's rows, but not the TRUNCATE
        // of the rows that were there: those keys stay.
        if !size.empty && opts.keep_keys.is_none() {
            opts.keep_keys = Some("--truncate of a table with rows: if a key put back after the load failed, the emptied rows could not come back");
        }
        size = TableSize {
            table_bytes: 0,
            index_bytes: 0,
            rows_estimate: 0.0,
            empty: true,
        };
    }
    let hidden = table.hidden_work(client).await?;
    // A Citus table's definitions are not changed: Citus replays their DDL on every shard.
    let citus = table.citus_distribution(client).await?;
    let plan = LoadPlan::decide(
        &table.qualified(),
        &capabilities(table, citus.as_deref()),
        indexes,
        foreign_keys,
        size,
        input_size,
        opts,
    );
    Ok(plan.with_hidden_work(hidden).loaded_frozen(frozen))
}

/// What PostgreSQL can do around a load of `table` (`citus`: its Citus distribution method).
fn capabilities(table: &TableInfo, citus: Option<&str>) -> Capabilities {
    let (unique_after, foreign_keys) = match table.partitioned {
        true => (
            Err(
                "on a partitioned table (a constraint cannot be attached USING INDEX there)".into(),
            ),
            ForeignKeysAfter::Never("partitioned table: checked row by row during the load".into()),
        ),
        false => (
            Ok(()),
            ForeignKeysAfter::WhenLarge(
                "re-added after the load NOT VALID, then validated once".into(),
            ),
        ),
    };
    Capabilities {
        vacuum: true,
        rebuilds: Some("built once after the load".into()),
        unique_after,
        foreign_keys,
        keeps_all: citus.map(|method| citus_rule(table, method)),
        notes: Vec::new(),
    }
}

/// What a load does with a Citus distributed table: COPY into it on the coordinator, which
/// Citus routes to its shards itself (loading the shards straight waits for a Citus server to
/// be tested on), and no change to its definitions.
fn citus_rule(table: &TableInfo, method: &str) -> String {
    let kind = match method {
        "h" => "hash-distributed",
        "r" => "range-distributed",
        "a" => "append-distributed",
        "n" => "reference",
        _ => "distributed",
    };
    format!(
        "{} is a Citus {kind} table: the rows go through COPY on the coordinator, which Citus sends on to its shards (inrush does not load Citus shards straight), and its indexes and keys are kept (Citus replays their DDL on every shard)",
        table.qualified()
    )
}
