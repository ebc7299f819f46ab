//! What the plan takes off the table for the load and puts back after it: indexes, keys and
//! foreign keys journaled and dropped (triggers disabled), then restored whatever happened, and
//! a load undone when the rows break a key put back after its commit; `inrush recover` for a
//! load that died in between.

use super::cancel::until_interrupted;
use super::claim::Claim;
use super::Load;
use crate::{ddl, ConnectOptions, TableInfo};
use inrush_core::Reporter;
use inrush_load::patience::Patience;
use inrush_load::summary;
use inrush_load::{Error, LoadOptions, LoadPlan, Result};
use tokio::runtime::Runtime;

/// What [`drop`] dropped: on the target, and on each shard (by its index in the load's
/// shards), each journaled on its own server.
#[derive(Default)]
pub(super) struct Dropped {
    target: Vec<ddl::JournalEntry>,
    shards: Vec<(usize, Vec<ddl::JournalEntry>)>,
}

impl Dropped {
    pub(super) fn is_empty(&self) -> bool {
        self.target.is_empty() && self.shards.is_empty()
    }
}

/// Journals and drops what the plan rebuilds after the load (nothing under `--check`), on the
/// target and on each shard; when it may drop nothing on the target, lets other loads of the
/// table run beside this one. True when something is dropped now, kept in `load.dropped`.
pub(super) fn drop(
    load: &mut Load,
    plan: &mut LoadPlan,
    opts: &LoadOptions,
    runtime: &Runtime,
) -> Result<bool> {
    let target = drop_on_target(load, plan, opts, runtime)?;
    let mut shards = Vec::new();
    for plan in load.shard_plans.iter().filter(|p| !p.rebuilt.is_empty()) {
        let shard = &load.shards[plan.shard];
        let dropped = runtime.block_on(until_interrupted(
            ddl::journal_and_drop(&shard.control, &plan.table, &plan.rebuilt, &[], &[]),
            &shard.control,
            &shard.options,
            opts,
        ));
        match dropped {
            // Cancelled: nothing dropped there; what was dropped before is returned, so the
            // load, which sees the stop, puts it back.
            Err(_) if opts.interrupt.is_set() => break,
            Ok(dropped) if !dropped.is_empty() => {
                opts.interrupt.dropped(true);
                load.notes.push(format!(
                    "foreign server {}: {} dropped for the load and rebuilt after it (journaled in inrush.ddl_journal there)",
                    shard.shard.server,
                    plan.describe()
                ));
                shards.push((plan.shard, dropped));
            }
            Ok(_) => {}
            Err(e) => load.notes.push(format!(
                "foreign server {}: {} kept during the load: {e}",
                shard.shard.server,
                plan.describe()
            )),
        }
    }
    load.dropped = Dropped { target, shards };
    Ok(!load.dropped.is_empty())
}

fn drop_on_target(
    load: &mut Load,
    load_plan: &mut LoadPlan,
    opts: &LoadOptions,
    runtime: &Runtime,
) -> Result<Vec<ddl::JournalEntry>> {
    let Load {
        target,
        control,
        table,
        claim,
        create_sql,
        ..
    } = load;
    let claim = *claim;
    let (to_rebuild, to_readd, to_disable) = match opts.check_only {
        true => (Vec::new(), Vec::new(), Vec::new()),
        false => (
            load_plan.rebuilt(),
            load_plan.readded_foreign_keys(),
            load_plan.disabled_triggers(),
        ),
    };
    let changes_nothing = to_rebuild.is_empty() && to_readd.is_empty() && to_disable.is_empty();
    if changes_nothing
        && claim == Claim::Alone
        && create_sql.is_none()
        && !opts.truncate
        && !opts.table_lock
    {
        // Other loads of the table may run beside this one after all.
        runtime.block_on(ddl::share_own_claim(control, table.oid))?;
    }
    Ok(match changes_nothing {
        true => Vec::new(),
        // The drop waits for every session that has the table open in a transaction (and,
        // waiting, makes new ones wait behind it), for a few seconds: a signal cancels it.
        false => match runtime.block_on(until_interrupted(
            ddl::journal_and_drop(control, table, &to_rebuild, &to_readd, &to_disable),
            control,
            target,
            opts,
        )) {
            Ok(dropped) => {
                opts.interrupt.dropped(!dropped.is_empty());
                dropped
            }
            // Cancelled: rolled back, nothing dropped, nothing journaled.
            Err(_) if opts.interrupt.is_set() => return Err(Error::Interrupted),
            // Asked for by name: a load with the triggers firing is not the load asked for.
            Err(e) if !to_disable.is_empty() => {
                let names: Vec<String> = to_disable.iter().map(|(name, _)| name.clone()).collect();
                let why = format!(
                    "--disable-triggers: trigger {} of {} cannot be disabled, so nothing was loaded: {e}",
                    names.join(", "),
                    table.qualified()
                );
                return Err(match e.is_permission_denied() {
                    true => crate::Error::Permission(why).into(),
                    false => e.into(),
                });
            }
            Err(e) if e.is_lock_timeout() => {
                load_plan.keep_after_all(&inrush_load::plan::held_open(&table.qualified()));
                Vec::new()
            }
            Err(e) => {
                // Nothing was dropped: load with the indexes in place, and say why.
                load_plan.keep_after_all(&format!("{e} (dropping them needs ownership of the table and the right to create schema inrush)"));
                Vec::new()
            }
        },
    })
}

/// Puts back what [`drop`] dropped, whatever happened to the load (`committed` or not). When
/// the rows of a committed load break a key put back after the commit, they are deleted again
/// first (see [`undo`]) and the failure is [`Error::KeyViolated`].
pub(super) fn restore(
    load: &Load,
    opts: &LoadOptions,
    runtime: &Runtime,
    committed: bool,
    reporter: &dyn Reporter,
) -> Result<()> {
    let (control, table, dropped) = (&load.control, &load.table, &load.dropped);
    let lanes = opts.connections.max(1);
    let patience = Patience::new(Some(&opts.interrupt), reporter);
    // Every server's, whatever another's restore did: none is left without its indexes.
    let on_shards: Vec<crate::Result<()>> = dropped
        .shards
        .iter()
        .map(|(shard, entries)| {
            runtime.block_on(ddl::restore(
                &load.shards[*shard].options,
                entries,
                lanes,
                &patience,
            ))
        })
        .collect();
    let on_target = match dropped.target.is_empty() {
        true => Ok(()),
        false => runtime.block_on(ddl::restore(
            &load.target,
            &dropped.target,
            lanes,
            &patience,
        )),
    };
    let broken = match on_target.and(on_shards.into_iter().collect::<crate::Result<()>>()) {
        Ok(()) => return Ok(()),
        Err(broken) if committed && broken.is_broken_key() => broken,
        Err(e) => return Err(e.into()),
    };
    // The rows break a key put back after the commit (a unique index that cannot be built, a
    // foreign key added back NOT VALID that does not validate): take exactly them out again,
    // then put back every journaled definition and validate what was valid, so the table is
    // as it was. Such keys are dropped only for loads whose rows all carry their
    // transactions' ids (see `LoadOptions::keeps_keys`).
    let (constraint, name, message) = broken.broken_key();
    let undone = runtime.block_on(async {
        let deleted = undo(control, table, &load.txids).await?;
        let pending = ddl::pending(control, Some(table.oid)).await?;
        ddl::restore(&load.target, &pending, lanes, &patience).await?;
        if matches!(broken, crate::Error::ForeignKeyViolated { .. }) {
            ddl::validate_foreign_key(control, &name, &constraint)
                .await
                .map_err(crate::query_error("validating the foreign key again"))?;
        }
        Ok::<_, crate::Error>(deleted)
    });
    Err(match undone {
        Ok(deleted) => Error::KeyViolated {
            constraint,
            table: name,
            message,
            rows_undone: deleted,
        },
        Err(e) => Error::IndexesNotRestored {
            load: Some(format!("{constraint}: {message}")),
            reason: e.to_string(),
        },
    })
}

/// What the journal still holds for the load's table after a failed restore, read on a
/// session of its own (the control session may be the one that failed); what was dropped on
/// the target when the server cannot be asked.
pub(super) fn still_dropped(load: &Load, runtime: &Runtime) -> Vec<String> {
    let pending = runtime.block_on(async {
        let client = load.target.connect().await?;
        ddl::pending(&client, Some(load.table.oid)).await
    });
    let named = |e: &ddl::JournalEntry| format!("{} {}", e.kind, e.name);
    match pending {
        Ok(entries) => entries.iter().map(named).collect(),
        Err(_) => load.dropped.target.iter().map(named).collect(),
    }
}

/// Deletes the rows the load's transactions inserted (their `xmin`); returns how many.
async fn undo(
    control: &tokio_postgres::Client,
    table: &TableInfo,
    txids: &[i64],
) -> crate::Result<u64> {
    // xmin is the 32-bit transaction id: the low half of txid_current()'s epoch-extended id.
    let xids: Vec<i64> = txids.iter().map(|t| t & 0xFFFF_FFFF).collect();
    let sql = format!(
        "DELETE FROM {} WHERE xmin::text::bigint = ANY($1)",
        table.qualified()
    );
    control
        .execute(&sql, &[&xids])
        .await
        .map_err(|cause| crate::Error::Query { what: sql, cause })
}

/// What `inrush recover` did.
#[derive(Debug, Default)]
pub struct Recovered {
    /// The definitions recreated.
    pub restored: Vec<ddl::JournalEntry>,
    /// Tables left alone: a running load (or another recover) holds their definitions and puts
    /// them back itself.
    pub busy: Vec<String>,
    /// The prepared transactions of two-phase commits a load left undecided, decided.
    pub prepared: crate::prepared::Resolved,
}

impl Recovered {
    /// What was done, in the words `inrush recover` says on every engine.
    pub fn report(self) -> inrush_load::summary::Recovered {
        let joint = self.prepared;
        let left_alone = joint
            .busy
            .iter()
            .map(|load| format!("joint commit {load} (its load is still committing)"));
        let live = self.busy.iter().map(|t| summary::Recovered::live_load(t));
        let recreated = self
            .restored
            .iter()
            .map(|e| format!("{} {} on {}", e.kind, e.name, e.table_name));
        summary::Recovered {
            recreated: recreated.collect(),
            committed: joint.committed,
            rolled_back: joint.rolled_back,
            left_alone: left_alone.chain(live).collect(),
            nothing: "the DDL journal is empty, and no load left a transaction prepared",
        }
    }
}

/// `inrush recover`: decides the prepared transactions a load that died in its two-phase commit
/// left (whatever `table`), then recreates what the DDL journal holds (for one table, or all),
/// except the definitions of a table another inrush session is loading or recovering.
pub fn recover(
    target: &ConnectOptions,
    table: Option<&str>,
    reporter: &dyn Reporter,
) -> Result<Recovered> {
    let runtime = inrush_load::target::runtime()?;
    Ok(runtime.block_on(async {
        let client = target.connect().await?;
        let oid = match table {
            Some(name) => Some(TableInfo::read(&client, name).await?.oid),
            None => None,
        };
        let mut recovered = Recovered {
            prepared: crate::prepared::resolve(&client, target).await?,
            ..Recovered::default()
        };
        let entries = ddl::pending(&client, oid).await?;
        let mut tables: Vec<u32> = entries.iter().map(|e| e.table_oid).collect();
        tables.sort_unstable();
        tables.dedup();
        for table_oid in tables {
            let of_table = entries.iter().filter(|e| e.table_oid == table_oid);
            // The claim lasts as long as `client`'s session, so until this recover ends.
            if !ddl::claim(&client, table_oid).await? {
                recovered
                    .busy
                    .extend(of_table.take(1).map(|e| e.table_name.clone()));
                continue;
            }
            let of_table: Vec<ddl::JournalEntry> = of_table.cloned().collect();
            ddl::restore(target, &of_table, 4, &Patience::new(None, reporter)).await?;
            recovered.restored.extend(of_table);
        }
        Ok::<_, crate::Error>(recovered)
    })?)
}
