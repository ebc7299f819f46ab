//! Secondary indexes dropped for a large load and built again after it, in one `ALTER TABLE`
//! each way (InnoDB then sorts the rows once for all of them), with a journal.
//!
//! MariaDB's DDL commits at once and cannot be rolled back, so every definition is first
//! written to `inrush_ddl_journal` in the target database (committed), then dropped; after the
//! load, whatever happened to it, the definitions are added back and their journal rows
//! deleted. A load that dies in between leaves them in the journal, and the next load of the
//! table (or `inrush recover`) adds them back. Only indexes that enforce nothing are dropped:
//! a unique key the rows broke could not be built again, and the load could not be undone.
//!
//! Each definition is the index's own line of `SHOW CREATE TABLE` (`KEY`, `FULLTEXT KEY`,
//! `SPATIAL KEY`, with prefix lengths, order and options exactly as the server prints them).
//!
//! MyISAM and Aria do the same without dropping anything: `ALTER TABLE ... DISABLE KEYS`
//! stops the upkeep of the non-unique indexes and `ENABLE KEYS` builds them again by sorting.
//! It is journaled the same way, as the entry [`KEYS_DISABLED`], so a load that dies leaves
//! the keys to be enabled again by the next load or `inrush recover`.

use crate::catalog::quote;
use crate::engine_error;
use inrush_load::{Error, Result};
use mysql_async::prelude::Queryable;
use mysql_async::Conn;

const CREATE_JOURNAL: &str = "CREATE TABLE IF NOT EXISTS inrush_ddl_journal ( \
    table_schema VARCHAR(64) NOT NULL, table_name VARCHAR(64) NOT NULL, \
    index_name VARCHAR(64) NOT NULL, position INT NOT NULL, definition TEXT NOT NULL, \
    dropped_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP, \
    PRIMARY KEY (table_schema, table_name, index_name)) ENGINE=InnoDB";

/// The journal's index name for a table whose non-unique keys are disabled (MyISAM, Aria);
/// restoring it is `ENABLE KEYS`.
pub const KEYS_DISABLED: &str = "(non-unique keys)";

/// An index as the journal keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dropped {
    pub schema: String,
    pub table: String,
    pub index: String,
    /// The line of `SHOW CREATE TABLE`, without its trailing comma: `KEY `i` (`a`)`.
    pub definition: String,
}

/// The `SHOW CREATE TABLE` lines of the named indexes, in the table's order (adding them back
/// in that order gives the same `SHOW CREATE TABLE`).
pub async fn definitions(
    conn: &mut Conn,
    schema: &str,
    table: &str,
    names: &[String],
) -> Result<Vec<Dropped>> {
    let qualified = format!("{}.{}", quote(schema), quote(table));
    let shown: Option<(String, String)> = conn
        .query_first(format!("SHOW CREATE TABLE {qualified}"))
        .await
        .map_err(engine_error(format!(
            "reading the definition of {qualified}"
        )))?;
    let create = shown.map(|(_, sql)| sql).unwrap_or_default();
    let lines: Vec<&str> = create
        .lines()
        .map(|l| l.trim().trim_end_matches(','))
        .collect();
    let mut found = names
        .iter()
        .map(|name| {
            let key = format!("KEY {} ", quote(name));
            lines
                .iter()
                .position(|l| {
                    l.starts_with(&key)
                        || l.starts_with(&format!("FULLTEXT {key}"))
                        || l.starts_with(&format!("SPATIAL {key}"))
                })
                .map(|at| (at, name))
                .ok_or_else(|| {
                    Error::Internal(format!(
                        "index {name} not found in SHOW CREATE TABLE {qualified}"
                    ))
                })
        })
        .collect::<Result<Vec<_>>>()?;
    found.sort();
    Ok(found
        .into_iter()
        .map(|(at, name)| Dropped {
            schema: schema.to_string(),
            table: table.to_string(),
            index: name.clone(),
            definition: lines[at].to_string(),
        })
        .collect())
}

/// Journals `indexes` (committed), then drops them in one `ALTER TABLE`.
pub async fn journal_and_drop(conn: &mut Conn, indexes: &[Dropped]) -> Result<()> {
    let Some(first) = indexes.first() else {
        return Ok(());
    };
    journal(conn, indexes).await?;
    let drops: Vec<String> = indexes
        .iter()
        .map(|d| format!("DROP INDEX {}", quote(&d.index)))
        .collect();
    let sql = format!(
        "ALTER TABLE {}.{} {}",
        quote(&first.schema),
        quote(&first.table),
        drops.join(", ")
    );
    conn.query_drop(&sql)
        .await
        .map_err(engine_error(sql.clone()))
}

/// MyISAM, Aria: journals [`KEYS_DISABLED`] for the table (committed), then disables its
/// non-unique keys. Returns the journal's entry, for [`restore`].
pub async fn journal_and_disable_keys(
    conn: &mut Conn,
    schema: &str,
    table: &str,
) -> Result<Dropped> {
    let entry = Dropped {
        schema: schema.to_string(),
        table: table.to_string(),
        index: KEYS_DISABLED.to_string(),
        definition: "DISABLE KEYS".to_string(),
    };
    journal(conn, std::slice::from_ref(&entry)).await?;
    let sql = format!(
        "ALTER TABLE {}.{} DISABLE KEYS",
        quote(schema),
        quote(table)
    );
    conn.query_drop(&sql)
        .await
        .map_err(engine_error(sql.clone()))?;
    Ok(entry)
}

/// Writes the entries to the journal (autocommit: they are there before anything changes).
async fn journal(conn: &mut Conn, indexes: &[Dropped]) -> Result<()> {
    conn.query_drop(CREATE_JOURNAL)
        .await
        .map_err(engine_error("creating the inrush_ddl_journal table"))?;
    for (position, d) in indexes.iter().enumerate() {
        conn.exec_drop(
            "REPLACE INTO inrush_ddl_journal \
             (table_schema, table_name, index_name, position, definition) VALUES (?, ?, ?, ?, ?)",
            (
                &d.schema,
                &d.table,
                &d.index,
                position as u32,
                &d.definition,
            ),
        )
        .await
        .map_err(engine_error("journaling an index before dropping it"))?;
    }
    Ok(())
}

/// The journal's entries for one table (all tables: `None`), oldest first.
pub async fn pending(conn: &mut Conn, table: Option<(&str, &str)>) -> Result<Vec<Dropped>> {
    if !crate::tables_exist(conn, &["inrush_ddl_journal"]).await? {
        return Ok(Vec::new());
    }
    let rows: Vec<(String, String, String, String)> = match table {
        Some((schema, name)) => {
            conn.exec(
                "SELECT table_schema, table_name, index_name, definition FROM inrush_ddl_journal \
                 WHERE table_schema = ? AND table_name = ? ORDER BY position",
                (schema, name),
            )
            .await
        }
        None => {
            conn.query(
                "SELECT table_schema, table_name, index_name, definition FROM inrush_ddl_journal \
                 ORDER BY table_schema, table_name, position",
            )
            .await
        }
    }
    .map_err(engine_error("reading inrush_ddl_journal"))?;
    Ok(rows
        .into_iter()
        .map(|(schema, table, index, definition)| Dropped {
            schema,
            table,
            index,
            definition,
        })
        .collect())
}

/// Adds journaled indexes back, one `ALTER TABLE` per table, and clears their journal rows.
/// An index that exists already (a restore that finished before its journal row was deleted)
/// is only cleared. Disabled keys are enabled again (which does nothing when they are).
/// Each `ALTER TABLE` waits for a table another session keeps open at most
/// [`inrush_load::patience::REBUILD_LOCK_WAIT`] (`lock_wait_timeout`, a year by default).
pub async fn restore(conn: &mut Conn, indexes: &[Dropped]) -> Result<()> {
    if indexes.is_empty() {
        return Ok(());
    }
    let bound = format!(
        "SET SESSION lock_wait_timeout = {}",
        inrush_load::patience::REBUILD_LOCK_WAIT.as_secs()
    );
    conn.query_drop(&bound).await.map_err(engine_error(bound))?;
    let mut tables: Vec<(&str, &str)> = indexes
        .iter()
        .map(|d| (d.schema.as_str(), d.table.as_str()))
        .collect();
    tables.dedup();
    for (schema, table) in tables {
        let existing: Vec<String> = conn
            .exec(
                "SELECT DISTINCT INDEX_NAME FROM information_schema.STATISTICS \
                 WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?",
                (schema, table),
            )
            .await
            .map_err(engine_error("reading the table's indexes"))?;
        let ours = |d: &&Dropped| d.schema == schema && d.table == table;
        if indexes
            .iter()
            .filter(ours)
            .any(|d| d.index == KEYS_DISABLED)
        {
            let sql = format!("ALTER TABLE {}.{} ENABLE KEYS", quote(schema), quote(table));
            conn.query_drop(&sql)
                .await
                .map_err(engine_error(sql.clone()))?;
        }
        let adds: Vec<String> = indexes
            .iter()
            .filter(ours)
            .filter(|d| d.index != KEYS_DISABLED && !existing.contains(&d.index))
            .map(|d| format!("ADD {}", d.definition))
            .collect();
        if !adds.is_empty() {
            let sql = format!(
                "ALTER TABLE {}.{} {}",
                quote(schema),
                quote(table),
                adds.join(", ")
            );
            conn.query_drop(&sql)
                .await
                .map_err(engine_error(sql.clone()))?;
        }
        for d in indexes
            .iter()
            .filter(|d| d.schema == schema && d.table == table)
        {
            conn.exec_drop(
                "DELETE FROM inrush_ddl_journal \
                 WHERE table_schema = ? AND table_name = ? AND index_name = ?",
                (schema, table, &d.index),
            )
            .await
            .map_err(engine_error("clearing inrush_ddl_journal"))?;
        }
    }
    Ok(())
}
