//! The tables a distributed write's staged parts load into (`inrush."stage_<job>_<part>"`):
//! made by a part's load, moved into the table by the job's decision ([`crate::job`]), dropped
//! by whoever finds them no longer wanted, a recover included ([`crate::prepared`]).

use crate::{query_error, quote_ident, Result, TableInfo};
use inrush_core::TargetColumn;
use inrush_load::job::Prepare;
use tokio_postgres::Client;

/// A staged part's table, made empty for the part's `columns` of `table` (their types, no
/// constraint: the move into the table checks them).
pub struct PartTable {
    /// `inrush."stage_<job>_<part>"`.
    pub name: String,
    create: String,
}

impl PartTable {
    /// The part's table for `columns` of `table`, as the plan decides it; made by
    /// [`PartTable::create`].
    pub fn new(table: &TableInfo, columns: &[TargetColumn], part: &Prepare) -> PartTable {
        let name = format!(
            "inrush.{}",
            quote_ident(&format!("stage_{}_{}", part.job, part.part))
        );
        let list: Vec<String> = columns.iter().map(|c| quote_ident(&c.name)).collect();
        let create = format!(
            "CREATE SCHEMA IF NOT EXISTS inrush; DROP TABLE IF EXISTS {name}; \
             CREATE UNLOGGED TABLE {name} AS SELECT {} FROM {} WITH NO DATA",
            list.join(", "),
            table.qualified()
        );
        PartTable { name, create }
    }

    pub async fn create(&self, control: &Client) -> Result<()> {
        crate::own::create(control, &self.create)
            .await
            .map_err(query_error("creating the part's staging table"))
    }
}

/// The staging tables of job `id`'s parts, as `inrush."stage_..."`.
pub async fn part_tables(client: &Client, id: &str) -> Result<Vec<String>> {
    let rows = client
        .query(
            "SELECT c.relname::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE n.nspname = 'inrush' AND c.relkind = 'r' AND starts_with(c.relname::text, $1) \
             ORDER BY 1",
            &[&format!("stage_{id}_")],
        )
        .await
        .map_err(query_error("finding the job's staging tables"))?;
    Ok(rows
        .iter()
        .map(|r| format!("inrush.{}", quote_ident(r.get(0))))
        .collect())
}

/// Drops `tables` (names as [`part_tables`] gives them).
pub async fn drop_tables(client: &Client, tables: &[String]) -> Result<()> {
    if tables.is_empty() {
        return Ok(());
    }
    let sql = format!("DROP TABLE IF EXISTS {}", tables.join(", "));
    client
        .batch_execute(&sql)
        .await
        .map_err(query_error("dropping the job's staging tables"))
}
