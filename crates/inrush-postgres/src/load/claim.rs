//! Which load of a table may change its definitions, when several run at once.
//!
//! A load that drops and rebuilds indexes, disables triggers, or takes a strong lock (TRUNCATE,
//! LOCK TABLE) runs alone; others run beside each other and change nothing. Two loads that both
//! rebuilt one index collided (`pg_class_relname_nsp_index`), and DDL waiting on one load's open
//! COPY while that load's next COPY queued behind the DDL hung both. The claim is an advisory
//! lock per table held by the control connection (`crate::ddl::claim`).

use super::cancel::until_interrupted;
use crate::{ddl, ConnectOptions};
use inrush_load::{Error, LoadOptions, Result};
use tokio_postgres::Client;

/// How this load holds the table's definitions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Claim {
    /// Alone: it may drop, rebuild, recover and lock.
    Alone,
    /// Shared with other loads: it changes no definition.
    Shared,
}

/// Takes the claim this load needs: alone when it must (`must_be_alone`: it truncates, locks or
/// disables triggers), waiting for the others to end; else alone when no other load runs, and
/// shared otherwise (waiting while one that runs alone ends). The waits can be interrupted.
pub(crate) async fn take(
    control: &Client,
    table_oid: u32,
    table: &str,
    must_be_alone: bool,
    target: &ConnectOptions,
    opts: &LoadOptions,
) -> Result<Claim> {
    // A task of a distributed write changes nothing, and alone it would make its job's other
    // tasks wait for it: it shares, even when it is the first.
    if opts.prepare.is_none() && ddl::claim(control, table_oid).await? {
        return Ok(Claim::Alone);
    }
    if !must_be_alone && ddl::share_claim(control, table_oid).await? {
        return Ok(Claim::Shared);
    }
    tracing::warn!(
        "waiting for another inrush load (or `inrush recover`) of {table} to end: {}",
        match must_be_alone {
            true => "this load truncates, locks or disables triggers, which it must do alone",
            false => "that load is changing the table's indexes or locks",
        }
    );
    let waited = until_interrupted(
        ddl::wait_for_claim(control, table_oid, must_be_alone),
        control,
        target,
        opts,
    )
    .await;
    match waited {
        _ if opts.interrupt.is_set() => Err(Error::Interrupted),
        Err(e) => Err(e.into()),
        Ok(()) if must_be_alone => Ok(Claim::Alone),
        Ok(()) => Ok(Claim::Shared),
    }
}
