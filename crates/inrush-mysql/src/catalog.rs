//! What a MariaDB/MySQL table is made of, read from `information_schema`.

use crate::engine_error;
use inrush_load::{Error, Result};
use mysql_async::prelude::Queryable;
use mysql_async::Conn;

#[derive(Debug, Clone)]
pub struct Table {
    pub schema: String,
    pub name: String,
    /// InnoDB, Aria, MyISAM...
    pub engine: String,
    /// Columns that take values (generated columns left out), in table order.
    pub columns: Vec<Column>,
    /// (name, unique) of each index; PRIMARY is the primary key.
    pub indexes: Vec<(String, bool)>,
    pub triggers: Vec<String>,
    /// Data plus index bytes (`information_schema.TABLES`, an estimate for InnoDB).
    pub bytes: u64,
    /// The table holds no row (checked, not estimated).
    pub empty: bool,
}

#[derive(Debug, Clone)]
pub struct Column {
    pub name: String,
    /// `DATA_TYPE`: `int`, `varchar`, `decimal`...
    pub data_type: String,
    /// `COLUMN_TYPE`: `int(10) unsigned`, `enum('a','b')`...
    pub column_type: String,
    pub not_null: bool,
    /// Characters for character types, bytes for binary ones.
    pub max_length: Option<u64>,
    pub precision: Option<u64>,
    pub scale: Option<u64>,
    pub auto_increment: bool,
}

impl Table {
    /// `` `schema`.`name` ``.
    pub fn qualified(&self) -> String {
        format!("{}.{}", quote(&self.schema), quote(&self.name))
    }

    pub fn has_unique_key(&self) -> bool {
        self.indexes.iter().any(|(_, unique)| *unique)
    }
}

/// `` `name` ``, with inner backquotes doubled.
pub fn quote(name: &str) -> String {
    format!("`{}`", name.replace('`', "``"))
}

/// `t`, `db.t`, `` `My Table` `` as SQL reads them; the schema defaults to `database`.
pub fn split_name(name: &str, database: &str) -> (String, String) {
    let mut parts = inrush_core::ident::name_parts(name, '`');
    let table = parts.pop().unwrap_or_default();
    let schema = parts.pop().unwrap_or_else(|| database.to_string());
    (schema, table)
}

/// The table `name` names in `database`.
pub async fn read(conn: &mut Conn, name: &str, database: &str) -> Result<Table> {
    let (schema, table) = split_name(name, database);
    let reading = |what: &str| engine_error(format!("reading the {what} of {schema}.{table}"));
    type TableRow = (String, String, Option<String>, Option<u64>, Option<u64>);
    let found: Option<TableRow> = conn
        .exec_first(
            "SELECT TABLE_SCHEMA, TABLE_NAME, ENGINE, DATA_LENGTH, INDEX_LENGTH \
             FROM information_schema.TABLES \
             WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND TABLE_TYPE = 'BASE TABLE'",
            (&schema, &table),
        )
        .await
        .map_err(reading("definition"))?;
    let Some((schema, name, engine, data, index)) = found else {
        return Err(Error::Columns(format!(
            "table {} does not exist in database {}",
            quote(&table),
            quote(&schema)
        )));
    };
    type ColumnRow = (
        String,
        String,
        String,
        String,
        Option<u64>,
        Option<u64>,
        Option<u64>,
        String,
    );
    let rows: Vec<ColumnRow> = conn
        .exec(
            "SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, IS_NULLABLE, \
               COALESCE(CHARACTER_MAXIMUM_LENGTH, 0), NUMERIC_PRECISION, NUMERIC_SCALE, EXTRA \
             FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? \
             ORDER BY ORDINAL_POSITION",
            (&schema, &name),
        )
        .await
        .map_err(reading("columns"))?;
    let columns = rows
        .into_iter()
        // Generated columns take no values.
        .filter(|r| {
            !r.7.to_ascii_uppercase().contains("GENERATED")
                && !matches!(
                    r.7.to_ascii_uppercase().as_str(),
                    "VIRTUAL" | "PERSISTENT" | "STORED"
                )
        })
        .map(|r| Column {
            name: r.0,
            data_type: r.1.to_ascii_lowercase(),
            column_type: r.2,
            not_null: r.3 == "NO",
            max_length: r.4.filter(|&n| n > 0),
            precision: r.5,
            scale: r.6,
            auto_increment: r.7.to_ascii_lowercase().contains("auto_increment"),
        })
        .collect();
    let indexes: Vec<(String, u64)> = conn
        .exec(
            "SELECT INDEX_NAME, MIN(NON_UNIQUE) FROM information_schema.STATISTICS \
             WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? GROUP BY INDEX_NAME ORDER BY INDEX_NAME",
            (&schema, &name),
        )
        .await
        .map_err(reading("indexes"))?;
    let triggers: Vec<String> = conn
        .exec(
            "SELECT TRIGGER_NAME FROM information_schema.TRIGGERS \
             WHERE EVENT_OBJECT_SCHEMA = ? AND EVENT_OBJECT_TABLE = ? ORDER BY TRIGGER_NAME",
            (&schema, &name),
        )
        .await
        .map_err(reading("triggers"))?;
    let qualified = format!("{}.{}", quote(&schema), quote(&name));
    let any: Option<u8> = conn
        .query_first(format!("SELECT 1 FROM {qualified} LIMIT 1"))
        .await
        .map_err(reading("rows"))?;
    Ok(Table {
        empty: any.is_none(),
        schema,
        name,
        engine: engine.unwrap_or_default(),
        columns,
        indexes: indexes
            .into_iter()
            .map(|(n, non_unique)| (n, non_unique == 0))
            .collect(),
        triggers,
        bytes: data.unwrap_or(0) + index.unwrap_or(0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_split_as_sql_reads_them() {
        assert_eq!(split_name("t", "db"), ("db".into(), "t".into()));
        assert_eq!(split_name("s.t", "db"), ("s".into(), "t".into()));
        assert_eq!(split_name("`a.b`", "db"), ("db".into(), "a.b".into()));
        assert_eq!(split_name("`x``y`.t", "db"), ("x`y".into(), "t".into()));
    }
}
