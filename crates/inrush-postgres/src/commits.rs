//! PostgreSQL's side of [`inrush_load::commits`]: `inrush.load_commits`, one row for each load
//! that dropped definitions and came to its commit, deleted once it put them back. Whether
//! its transactions committed is asked of the server (`txid_status`), so the row is written
//! just before the COMMIT, outside the load's transactions, and a load whose commit failed
//! leaves a row that says so by itself: no second write after the commit is needed, which is
//! exactly the moment a failing server or disk would refuse it.

use crate::{query_error, Result, TableInfo};
use inrush_load::commits::{Committed, EarlierLoad};
use tokio_postgres::Client;

const CREATE: &str = "CREATE SCHEMA IF NOT EXISTS inrush; \
     CREATE TABLE IF NOT EXISTS inrush.load_commits ( \
       id bigserial PRIMARY KEY, \
       table_oid oid NOT NULL, \
       table_name text NOT NULL, \
       identity text NOT NULL, \
       rows bigint NOT NULL, \
       txids bigint[] NOT NULL, \
       recorded_at timestamptz NOT NULL DEFAULT now())";

/// Records the load of `identity` into `table`: `rows` rows in the transactions `txids`
/// (`txid_current()` of each that wrote rows), about to commit. Committed on its own.
pub async fn record(
    client: &Client,
    table: &TableInfo,
    identity: &str,
    rows: u64,
    txids: &[i64],
) -> Result<()> {
    // CREATE SCHEMA IF NOT EXISTS asks for the right to create schemas even when the schema
    // is there: a role that may only write the record must not be asked for it.
    let exists = client
        .query_one("SELECT to_regclass('inrush.load_commits') IS NOT NULL", &[])
        .await
        .map_err(query_error("looking for inrush.load_commits"))?;
    if !exists.get::<_, bool>(0) {
        crate::own::create(client, CREATE)
            .await
            .map_err(query_error("creating inrush.load_commits"))?;
    }
    client
        .execute(
            "INSERT INTO inrush.load_commits (table_oid, table_name, identity, rows, txids) \
             VALUES ($1, $2, $3, $4, $5)",
            &[
                &table.oid,
                &table.qualified(),
                &identity,
                &(rows as i64),
                &txids,
            ],
        )
        .await
        .map_err(query_error("recording the load in inrush.load_commits"))?;
    Ok(())
}

/// Deletes the record of the load of `identity` into `table_oid` (it finished; an earlier
/// one of the same input was consumed or deleted as stale before it started).
pub async fn forget(client: &Client, table_oid: u32, identity: &str) -> Result<()> {
    client
        .execute(
            "DELETE FROM inrush.load_commits WHERE table_oid = $1 AND identity = $2",
            &[&table_oid, &identity],
        )
        .await
        .map_err(query_error(
            "deleting the load's record from inrush.load_commits",
        ))?;
    Ok(())
}

/// The records of earlier loads into `table_oid` that committed (some of their transactions
/// at least), with their inputs' identities; a stale one (its commit failed) is deleted and
/// not returned.
pub async fn unfinished(client: &Client, table_oid: u32) -> Result<Vec<(String, EarlierLoad)>> {
    let exists = client
        .query_one("SELECT to_regclass('inrush.load_commits') IS NOT NULL", &[])
        .await
        .map_err(query_error("looking for inrush.load_commits"))?;
    if !exists.get::<_, bool>(0) {
        return Ok(Vec::new());
    }
    let rows = client
        .query(
            "SELECT id, identity, rows, recorded_at::text, \
                    (SELECT count(*) FROM unnest(txids) t WHERE txid_status(t) = 'committed'), \
                    cardinality(txids) \
               FROM inrush.load_commits WHERE table_oid = $1 ORDER BY id DESC",
            &[&table_oid],
        )
        .await
        .map_err(query_error("reading inrush.load_commits"))?;
    let mut loads = Vec::new();
    for row in rows {
        let (committed, total): (i64, i32) = (row.get(4), row.get(5));
        let earlier = EarlierLoad {
            rows: row.get::<_, i64>(2) as u64,
            recorded_at: row.get(3),
            committed: match committed {
                0 => Committed::None,
                n if n == i64::from(total) => Committed::All,
                _ => Committed::Some,
            },
        };
        if earlier.committed == Committed::None {
            let id: i64 = row.get(0);
            client
                .execute("DELETE FROM inrush.load_commits WHERE id = $1", &[&id])
                .await
                .map_err(query_error(
                    "deleting a stale record from inrush.load_commits",
                ))?;
            continue;
        }
        loads.push((row.get::<_, String>(1), earlier));
    }
    Ok(loads)
}
