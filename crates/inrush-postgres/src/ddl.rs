//! The DDL journal: the exact definition of everything inrush drops (secondary indexes, foreign
//! keys), written to
//! `inrush.ddl_journal` in the target database and committed on its own before the drop. A
//! rebuild removes the entry in the transaction that recreates the object, so whatever stops a
//! load (an error, Ctrl-C, a killed process, a lost server), the journal still names what is
//! missing, and `inrush recover` (or the next load of that table) puts it back.

use crate::catalog::{ForeignKeyInfo, IndexInfo};
use crate::{quote_ident, ConnectOptions, Error, Result, TableInfo};
use tokio_postgres::Client;

const CREATE_JOURNAL: &str = "CREATE SCHEMA IF NOT EXISTS inrush; \
     CREATE TABLE IF NOT EXISTS inrush.ddl_journal ( \
       id bigserial PRIMARY KEY, \
       table_oid oid NOT NULL, \
       table_name text NOT NULL, \
       kind text NOT NULL, \
       name text NOT NULL, \
       definition text NOT NULL, \
       validate boolean NOT NULL DEFAULT false, \
       journaled_at timestamptz NOT NULL DEFAULT now())";

/// One dropped object waiting to be recreated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JournalEntry {
    pub id: i64,
    pub table_oid: u32,
    /// `"schema"."table"` when journaled, for messages.
    pub table_name: String,
    /// `index` or `foreign key`.
    pub kind: String,
    pub name: String,
    /// The statement that recreates it (for a foreign key: without NOT VALID).
    pub definition: String,
    /// A foreign key to VALIDATE once added back (it was valid before the load).
    pub validate: bool,
}

const INDEX: &str = "index";
const FOREIGN_KEY: &str = "foreign key";
/// A primary key or unique constraint: rebuilt as CREATE UNIQUE INDEX + ADD CONSTRAINT USING INDEX.
const CONSTRAINT_INDEX: &str = "constraint index";

fn query_error(what: impl Into<String>) -> impl FnOnce(tokio_postgres::Error) -> Error {
    let what = what.into();
    move |source| Error::Query { what, source }
}

/// Journals `indexes` and `foreign_keys` of `table` (committed), then drops them (committed).
/// Needs the right to create the `inrush` schema (or its existence) and ownership of the table.
pub async fn journal_and_drop(
    client: &Client,
    table: &TableInfo,
    indexes: &[IndexInfo],
    foreign_keys: &[ForeignKeyInfo],
) -> Result<Vec<JournalEntry>> {
    let qualified = table.qualified();
    let mut objects: Vec<(&str, &str, String, bool, String)> = Vec::new(); // kind, name, definition, validate, drop
    for i in indexes {
        match (&i.constraint, i.constraint_kind.as_deref()) {
            (Some(constraint), Some(kind @ ("p" | "u"))) => {
                let clause = if kind == "p" { "PRIMARY KEY" } else { "UNIQUE" };
                let definition = format!(
                    "{}; ALTER TABLE {qualified} ADD CONSTRAINT {} {clause} USING INDEX {}",
                    i.definition,
                    quote_ident(constraint),
                    quote_ident(&i.name)
                );
                let drop = format!("ALTER TABLE {qualified} DROP CONSTRAINT {}", quote_ident(constraint));
                objects.push((CONSTRAINT_INDEX, constraint, definition, false, drop));
            }
            _ => {
                let drop = format!("DROP INDEX {}.{}", quote_ident(&table.schema), quote_ident(&i.name));
                objects.push((INDEX, &i.name, i.definition.clone(), false, drop));
            }
        }
    }
    for fk in foreign_keys {
        let body = fk.definition.trim_end_matches(" NOT VALID");
        let add = format!("ALTER TABLE {qualified} ADD CONSTRAINT {} {body}", quote_ident(&fk.name));
        let drop = format!("ALTER TABLE {qualified} DROP CONSTRAINT {}", quote_ident(&fk.name));
        objects.push((FOREIGN_KEY, &fk.name, add, fk.validated, drop));
    }
    client.batch_execute(CREATE_JOURNAL).await.map_err(query_error("creating the inrush.ddl_journal table"))?;
    let mut entries = Vec::with_capacity(indexes.len());
    client.batch_execute("BEGIN").await.map_err(query_error("BEGIN"))?;
    for (kind, name, definition, validate, _) in &objects {
        let row = client
            .query_one(
                "INSERT INTO inrush.ddl_journal (table_oid, table_name, kind, name, definition, validate) \
                 VALUES ($1, $2, $3, $4, $5, $6) RETURNING id",
                &[&table.oid, &qualified, kind, name, definition, validate],
            )
            .await
            .map_err(query_error("writing the DDL journal"))?;
        entries.push(JournalEntry {
            id: row.get(0),
            table_oid: table.oid,
            table_name: qualified.clone(),
            kind: kind.to_string(),
            name: name.to_string(),
            definition: definition.clone(),
            validate: *validate,
        });
    }
    client.batch_execute("COMMIT").await.map_err(query_error("committing the DDL journal"))?;
    let drops: Vec<&str> = objects.iter().map(|o| o.4.as_str()).collect();
    let dropped = client.batch_execute(&format!("BEGIN; {}; COMMIT", drops.join("; "))).await;
    if let Err(source) = dropped {
        let _ = client.batch_execute("ROLLBACK").await;
        // Nothing was dropped: the journal entries must not survive to be "restored".
        forget(client, &entries).await?;
        return Err(Error::Query { what: "dropping indexes and foreign keys before the load".into(), source });
    }
    Ok(entries)
}

async fn forget(client: &Client, entries: &[JournalEntry]) -> Result<()> {
    let ids: Vec<i64> = entries.iter().map(|e| e.id).collect();
    client
        .execute("DELETE FROM inrush.ddl_journal WHERE id = ANY($1)", &[&ids])
        .await
        .map_err(query_error("clearing the DDL journal"))?;
    Ok(())
}

/// Journal entries still waiting, for one table or all; empty when there is no journal.
pub async fn pending(client: &Client, table_oid: Option<u32>) -> Result<Vec<JournalEntry>> {
    let exists: bool = client
        .query_one("SELECT to_regclass('inrush.ddl_journal') IS NOT NULL", &[])
        .await
        .map_err(query_error("looking for the DDL journal"))?
        .get(0);
    if !exists {
        return Ok(Vec::new());
    }
    let rows = client
        .query(
            "SELECT id, table_oid, table_name, kind, name, definition, validate FROM inrush.ddl_journal \
             WHERE $1::oid IS NULL OR table_oid = $1 ORDER BY id",
            &[&table_oid],
        )
        .await
        .map_err(query_error("reading the DDL journal"))?;
    Ok(rows
        .iter()
        .map(|r| JournalEntry {
            id: r.get(0),
            table_oid: r.get(1),
            table_name: r.get(2),
            kind: r.get(3),
            name: r.get(4),
            definition: r.get(5),
            validate: r.get(6),
        })
        .collect())
}

/// Recreates journaled objects: indexes over up to `parallel` connections, each in a
/// transaction that also deletes its journal entry (memory for sorting: at least 256MB of
/// maintenance_work_mem per build); then foreign keys, added back NOT VALID (the entry deleted
/// in the same transaction) and validated, which only reads. An object that exists again
/// (someone recreated it) only loses its entry. A foreign key the rows break stays NOT VALID and
/// is reported as [`Error::ForeignKeyViolated`] after everything else was restored.
pub async fn restore(target: &ConnectOptions, entries: &[JournalEntry], parallel: usize) -> Result<()> {
    let (indexes, foreign_keys): (Vec<&JournalEntry>, Vec<&JournalEntry>) = entries.iter().partition(|e| e.kind != FOREIGN_KEY);
    // A shared queue rather than a fixed split: a lane takes the next index when it is free, so
    // one wide index does not leave the other lanes waiting behind it.
    let lanes = parallel.clamp(1, indexes.len().max(1));
    let queue = std::sync::Mutex::new(indexes.into_iter().collect::<std::collections::VecDeque<_>>());
    let next = || queue.lock().ok().and_then(|mut q| q.pop_front());
    let builds = (0..lanes).map(|_| async {
        let Some(mut entry) = next() else { return Ok(()) };
        let client = target.connect().await?;
        client
            .batch_execute(
                "SELECT set_config('maintenance_work_mem', \
                 greatest(pg_size_bytes(current_setting('maintenance_work_mem')), pg_size_bytes('256MB'))::text || 'B', false)",
            )
            .await
            .map_err(query_error("raising maintenance_work_mem for index builds"))?;
        loop {
            rebuild_one(&client, entry).await?;
            match next() {
                Some(e) => entry = e,
                None => return Ok::<_, Error>(()),
            }
        }
    });
    for result in futures_util::future::join_all(builds).await {
        result?;
    }
    if foreign_keys.is_empty() {
        return Ok(());
    }
    let client = target.connect().await?;
    let mut violated = None;
    for entry in foreign_keys {
        rebuild_one(&client, entry).await?;
        if entry.validate {
            let sql = format!("ALTER TABLE {} VALIDATE CONSTRAINT {}", entry.table_name, quote_ident(&entry.name));
            if let Err(e) = client.batch_execute(&sql).await {
                let Some(db) = e.as_db_error() else {
                    return Err(Error::Query { what: sql, source: e });
                };
                let message = match db.detail() {
                    Some(detail) => format!("{} ({detail})", db.message()),
                    None => db.message().to_string(),
                };
                violated.get_or_insert(Error::ForeignKeyViolated {
                    constraint: entry.name.clone(),
                    table: entry.table_name.clone(),
                    message,
                });
            }
        }
    }
    violated.map_or(Ok(()), Err)
}

async fn rebuild_one(client: &Client, entry: &JournalEntry) -> Result<()> {
    let what = format!("recreating {} {} of {}", entry.kind, entry.name, entry.table_name);
    client.batch_execute("BEGIN").await.map_err(query_error(what.clone()))?;
    let exists_sql = if entry.kind == INDEX {
        "SELECT EXISTS (SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = $1 AND c.relname = $2)"
    } else {
        "SELECT EXISTS (SELECT 1 FROM pg_constraint WHERE conrelid = $1 AND conname = $2)"
    };
    let exists: bool = client
        .query_one(exists_sql, &[&entry.table_oid, &entry.name])
        .await
        .map_err(query_error(what.clone()))?
        .get(0);
    let table_exists: bool = client
        .query_one("SELECT EXISTS (SELECT 1 FROM pg_class WHERE oid = $1)", &[&entry.table_oid])
        .await
        .map_err(query_error(what.clone()))?
        .get(0);
    if !exists && table_exists {
        // A foreign key comes back NOT VALID: adding it checks nothing, VALIDATE does, later.
        let sql = if entry.kind == FOREIGN_KEY { format!("{} NOT VALID", entry.definition) } else { entry.definition.clone() };
        if let Err(source) = client.batch_execute(&sql).await {
            let _ = client.batch_execute("ROLLBACK").await;
            // Duplicates or NULLs where a primary key or unique constraint is rebuilt.
            if let Some(db) = source.as_db_error().filter(|db| matches!(db.code().code(), "23505" | "23502")) {
                let message = match db.detail() {
                    Some(detail) => format!("{} ({detail})", db.message()),
                    None => db.message().to_string(),
                };
                return Err(Error::UniqueViolated { constraint: entry.name.clone(), table: entry.table_name.clone(), message });
            }
            return Err(Error::Query { what, source });
        }
    }
    client
        .execute("DELETE FROM inrush.ddl_journal WHERE id = $1", &[&entry.id])
        .await
        .map_err(query_error(what.clone()))?;
    client.batch_execute("COMMIT").await.map_err(query_error(what))?;
    Ok(())
}
