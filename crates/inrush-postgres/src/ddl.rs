//! The DDL journal: the exact definition of everything inrush drops, written to
//! `inrush.ddl_journal` in the target database and committed on its own before the drop. A
//! rebuild removes the entry in the transaction that recreates the object, so whatever stops a
//! load (an error, Ctrl-C, a killed process, a lost server), the journal still names what is
//! missing, and `inrush recover` (or the next load of that table) puts it back.

use crate::catalog::IndexInfo;
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
       journaled_at timestamptz NOT NULL DEFAULT now())";

/// One dropped object waiting to be recreated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JournalEntry {
    pub id: i64,
    pub table_oid: u32,
    /// `"schema"."table"` when journaled, for messages.
    pub table_name: String,
    /// `index` for now.
    pub kind: String,
    pub name: String,
    /// The statement that recreates it.
    pub definition: String,
}

fn query_error(what: impl Into<String>) -> impl FnOnce(tokio_postgres::Error) -> Error {
    let what = what.into();
    move |source| Error::Query { what, source }
}

/// Journals `indexes` of `table` (committed), then drops them (committed). Needs the right to
/// create the `inrush` schema (or its existence) and ownership of the table.
pub async fn journal_and_drop_indexes(client: &Client, table: &TableInfo, indexes: &[IndexInfo]) -> Result<Vec<JournalEntry>> {
    client.batch_execute(CREATE_JOURNAL).await.map_err(query_error("creating the inrush.ddl_journal table"))?;
    let mut entries = Vec::with_capacity(indexes.len());
    client.batch_execute("BEGIN").await.map_err(query_error("BEGIN"))?;
    for index in indexes {
        let row = client
            .query_one(
                "INSERT INTO inrush.ddl_journal (table_oid, table_name, kind, name, definition) \
                 VALUES ($1, $2, 'index', $3, $4) RETURNING id",
                &[&table.oid, &table.qualified(), &index.name, &index.definition],
            )
            .await
            .map_err(query_error("writing the DDL journal"))?;
        entries.push(JournalEntry {
            id: row.get(0),
            table_oid: table.oid,
            table_name: table.qualified(),
            kind: "index".into(),
            name: index.name.clone(),
            definition: index.definition.clone(),
        });
    }
    client.batch_execute("COMMIT").await.map_err(query_error("committing the DDL journal"))?;
    let drops: Vec<String> =
        indexes.iter().map(|i| format!("DROP INDEX {}.{}", quote_ident(&table.schema), quote_ident(&i.name))).collect();
    let dropped = client.batch_execute(&format!("BEGIN; {}; COMMIT", drops.join("; "))).await;
    if let Err(source) = dropped {
        let _ = client.batch_execute("ROLLBACK").await;
        // Nothing was dropped: the journal entries must not survive to be "restored".
        forget(client, &entries).await?;
        return Err(Error::Query { what: "dropping indexes before the load".into(), source });
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
            "SELECT id, table_oid, table_name, kind, name, definition FROM inrush.ddl_journal \
             WHERE $1::oid IS NULL OR table_oid = $1 ORDER BY id",
            &[&table_oid],
        )
        .await
        .map_err(query_error("reading the DDL journal"))?;
    Ok(rows
        .iter()
        .map(|r| JournalEntry { id: r.get(0), table_oid: r.get(1), table_name: r.get(2), kind: r.get(3), name: r.get(4), definition: r.get(5) })
        .collect())
}

/// Recreates journaled objects over up to `parallel` connections, each in a transaction that
/// also deletes its journal entry. An object that exists again (someone recreated it) only loses
/// its entry. Memory for sorting: at least 256MB of maintenance_work_mem per build.
pub async fn restore(target: &ConnectOptions, entries: &[JournalEntry], parallel: usize) -> Result<()> {
    let lanes = parallel.clamp(1, entries.len().max(1));
    let mut work: Vec<Vec<&JournalEntry>> = vec![Vec::new(); lanes];
    for (i, entry) in entries.iter().enumerate() {
        work[i % lanes].push(entry);
    }
    let builds = work.into_iter().map(|lane| async move {
        let client = target.connect().await?;
        client
            .batch_execute(
                "SELECT set_config('maintenance_work_mem', \
                 greatest(pg_size_bytes(current_setting('maintenance_work_mem')), pg_size_bytes('256MB'))::text || 'B', false)",
            )
            .await
            .map_err(query_error("raising maintenance_work_mem for index builds"))?;
        for entry in lane {
            rebuild_one(&client, entry).await?;
        }
        Ok::<_, Error>(())
    });
    for result in futures_util::future::join_all(builds).await {
        result?;
    }
    Ok(())
}

async fn rebuild_one(client: &Client, entry: &JournalEntry) -> Result<()> {
    let what = format!("recreating {} {} of {}", entry.kind, entry.name, entry.table_name);
    client.batch_execute("BEGIN").await.map_err(query_error(what.clone()))?;
    let exists: bool = client
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid \
             WHERE i.indrelid = $1 AND c.relname = $2)",
            &[&entry.table_oid, &entry.name],
        )
        .await
        .map_err(query_error(what.clone()))?
        .get(0);
    let table_exists: bool = client
        .query_one("SELECT EXISTS (SELECT 1 FROM pg_class WHERE oid = $1)", &[&entry.table_oid])
        .await
        .map_err(query_error(what.clone()))?
        .get(0);
    if !exists && table_exists {
        if let Err(source) = client.batch_execute(&entry.definition).await {
            let _ = client.batch_execute("ROLLBACK").await;
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
