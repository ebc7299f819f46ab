//! MariaDB's side of [`inrush_load::commits`]: `inrush_load_commits` in the target database,
//! one row for each load that dropped indexes and committed, deleted once it put them back.
//! The row is written inside the transaction of the writer that commits last, so it is there
//! exactly when every writer committed: no other sign of the commit is needed.

use crate::engine_error;
use inrush_load::commits::{Committed, EarlierLoad};
use inrush_load::Result;
use mysql_async::prelude::Queryable;
use mysql_async::Conn;

/// Made before the load's transactions open: DDL would commit the one it runs in.
pub async fn create(conn: &mut Conn) -> Result<()> {
    conn.query_drop(
        "CREATE TABLE IF NOT EXISTS inrush_load_commits ( \
           id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, \
           table_schema VARCHAR(64) NOT NULL, table_name VARCHAR(64) NOT NULL, \
           identity TEXT NOT NULL, `rows` BIGINT NOT NULL, \
           recorded_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP) ENGINE=InnoDB",
    )
    .await
    .map_err(engine_error("creating inrush_load_commits"))
}

/// Records, in `conn`'s open transaction, the load of `identity` into `schema`.`table`.
pub async fn record(
    conn: &mut Conn,
    (schema, table): (&str, &str),
    identity: &str,
    rows: u64,
) -> Result<()> {
    conn.exec_drop(
        "INSERT INTO inrush_load_commits (table_schema, table_name, identity, `rows`) \
         VALUES (?, ?, ?, ?)",
        (schema, table, identity, rows),
    )
    .await
    .map_err(engine_error("recording the load in inrush_load_commits"))
}

/// The records of loads into `schema`.`table`, each with its input's identity.
pub async fn unfinished(
    conn: &mut Conn,
    (schema, table): (&str, &str),
) -> Result<Vec<(String, EarlierLoad)>> {
    if !crate::tables_exist(conn, &["inrush_load_commits"]).await? {
        return Ok(Vec::new());
    }
    let rows: Vec<(String, u64, String)> = conn
        .exec(
            "SELECT identity, `rows`, CAST(recorded_at AS CHAR) FROM inrush_load_commits \
             WHERE table_schema = ? AND table_name = ? ORDER BY id DESC",
            (schema, table),
        )
        .await
        .map_err(engine_error("reading inrush_load_commits"))?;
    Ok(rows
        .into_iter()
        .map(|(identity, rows, recorded_at)| {
            let earlier = EarlierLoad {
                rows,
                recorded_at,
                committed: Committed::All,
            };
            (identity, earlier)
        })
        .collect())
}

/// Deletes the records of the load of `identity` into `schema`.`table`.
pub async fn forget(conn: &mut Conn, (schema, table): (&str, &str), identity: &str) -> Result<()> {
    conn.exec_drop(
        "DELETE FROM inrush_load_commits \
         WHERE table_schema = ? AND table_name = ? AND identity = ?",
        (schema, table, identity),
    )
    .await
    .map_err(engine_error(
        "deleting the load's record from inrush_load_commits",
    ))
}
