//! MariaDB's side of [`inrush_load::commits`]: `inrush_load_commits` in the target database.
//! Each writer's transaction records its share of the load (the input's identity, a token of
//! the run, which share of how many, its rows), so a share is there exactly when its writer
//! committed: every share of a run, the whole load committed; some, only those writers did
//! (exit 5, which a rerun must not repeat). No other sign of the commit is needed. The shares
//! are deleted once the load put back what it dropped.

use crate::engine_error;
use inrush_load::commits::{committed_shares, EarlierLoad};
use inrush_load::target::Share;
use inrush_load::Result;
use mysql_async::prelude::Queryable;
use mysql_async::Conn;

/// The columns a share has beyond those of the table's first version (one row per load,
/// written by the writer that committed last), added to a table made by that version.
const SHARE_COLUMNS: &str = "run VARCHAR(64) NOT NULL DEFAULT '',      part INT NOT NULL DEFAULT 1, parts INT NOT NULL DEFAULT 1";

/// Made before the load's transactions open: DDL would commit the one it runs in.
pub async fn create(conn: &mut Conn) -> Result<()> {
    conn.query_drop(format!(
        "CREATE TABLE IF NOT EXISTS inrush_load_commits ( \
           id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, \
           table_schema VARCHAR(64) NOT NULL, table_name VARCHAR(64) NOT NULL, \
           identity TEXT NOT NULL, `rows` BIGINT NOT NULL, {SHARE_COLUMNS}, \
           recorded_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP) ENGINE=InnoDB"
    ))
    .await
    .map_err(engine_error("creating inrush_load_commits"))?;
    let shares: Option<u64> = conn
        .query_first(
            "SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() \
             AND TABLE_NAME = 'inrush_load_commits' AND COLUMN_NAME = 'run'",
        )
        .await
        .map_err(engine_error("reading inrush_load_commits' columns"))?;
    if shares == Some(0) {
        let add = SHARE_COLUMNS.replace(", ", ", ADD COLUMN ");
        conn.query_drop(format!("ALTER TABLE inrush_load_commits ADD COLUMN {add}"))
            .await
            .map_err(engine_error("adding shares to inrush_load_commits"))?;
    }
    Ok(())
}

/// Records, in `conn`'s open transaction, its writer's share of the load into
/// `schema`.`table`.
pub async fn record(
    conn: &mut Conn,
    (schema, table): (&str, &str),
    share: &Share<'_>,
) -> Result<()> {
    conn.exec_drop(
        "INSERT INTO inrush_load_commits \
           (table_schema, table_name, identity, `rows`, run, part, parts) \
         VALUES (?, ?, ?, ?, ?, ?, ?)",
        (
            schema,
            table,
            share.identity,
            share.rows,
            share.load,
            share.part as u64,
            share.parts as u64,
        ),
    )
    .await
    .map_err(engine_error("recording the load in inrush_load_commits"))
}

/// The records of loads into `schema`.`table`, each with its input's identity: the rows its
/// committed shares hold, and whether all of them are there.
pub async fn unfinished(
    conn: &mut Conn,
    (schema, table): (&str, &str),
) -> Result<Vec<(String, EarlierLoad)>> {
    if !crate::tables_exist(conn, &["inrush_load_commits"]).await? {
        return Ok(Vec::new());
    }
    create(conn).await?;
    let rows: Vec<(String, u64, String, u64, u64)> = conn
        .exec(
            "SELECT identity, SUM(`rows`), CAST(MIN(recorded_at) AS CHAR), COUNT(*), MAX(parts) \
             FROM inrush_load_commits WHERE table_schema = ? AND table_name = ? \
             GROUP BY identity, run ORDER BY MAX(id) DESC",
            (schema, table),
        )
        .await
        .map_err(engine_error("reading inrush_load_commits"))?;
    Ok(rows
        .into_iter()
        .map(|(identity, rows, recorded_at, present, parts)| {
            let earlier = EarlierLoad {
                rows,
                recorded_at,
                committed: committed_shares(present, parts),
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
