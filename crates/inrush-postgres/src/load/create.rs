//! `--create` on PostgreSQL: the `CREATE TABLE` for the columns the pipeline inferred (see
//! `inrush_load::create`), with `--types` checked against the server's own types.

use inrush_core::SqlType;
use inrush_load::create::given_types;
use inrush_load::{Error, Result};
use tokio_postgres::Client;

/// `CREATE TABLE` for `table` (as the user wrote it, parsed by the server), refused when the
/// table exists already. `overrides` (`--types`) replace the types of the columns they name;
/// each must name a column and a type the server knows.
pub(crate) async fn table_ddl(
    control: &Client,
    table: &str,
    inferred: &[(String, SqlType)],
    overrides: &[(String, String)],
) -> Result<String> {
    let given = given_types(inferred, overrides)?;
    let mut columns: Vec<(String, String)> = inferred
        .iter()
        .map(|(column, sql_type)| (column.clone(), crate::sql_type::name(sql_type)))
        .collect();
    for (i, sql_type) in given.into_iter().enumerate() {
        let Some(sql_type) = sql_type else { continue };
        let name = &columns[i].0;
        // The type goes into the DDL as written: only a name the server reads as a type.
        let known = control
            .query_one("SELECT to_regtype($1) IS NOT NULL", &[&sql_type])
            .await
            .map(|row| row.get::<_, bool>(0));
        match known {
            Ok(true) => columns[i].1 = sql_type.to_string(),
            Ok(false) => {
                return Err(Error::Usage(format!(
                "--types: {sql_type:?} (for column {name:?}) is not a type of the target database"
            )))
            }
            Err(e) => {
                return Err(Error::Usage(format!(
                    "--types: {sql_type:?} (for column {name:?}) is not a type: {}",
                    crate::describe_pg_error(&e)
                )))
            }
        }
    }
    let sql = "SELECT to_regclass($1)::text, parse_ident($1)";
    let row = control
        .query_one(sql, &[&table])
        .await
        .map_err(crate::query_error(sql))?;
    if let Some(existing) = row.get::<_, Option<String>>(0) {
        return Err(Error::TableExists {
            table: existing,
            place: String::new(),
        });
    }
    let parts: Vec<String> = row.get(1);
    let qualified: Vec<String> = parts.iter().map(|p| crate::quote_ident(p)).collect();
    let columns: Vec<String> = columns
        .iter()
        .map(|(name, sql_type)| format!("{} {sql_type}", crate::quote_ident(name)))
        .collect();
    Ok(format!(
        "CREATE TABLE {} ({})",
        qualified.join("."),
        columns.join(", ")
    ))
}
