//! What a SQLite table is made of, read from its own catalog (`pragma_table_list`,
//! `pragma_table_xinfo`, `pragma_index_list`, `sqlite_schema`).

use crate::{failed, quote};
use inrush_load::Result;
use rusqlite::{Connection, OptionalExtension};

#[derive(Debug, Clone)]
pub struct Table {
    /// `main`, `temp`, or an attached database's name.
    pub schema: String,
    /// As the catalog spells it.
    pub name: String,
    pub strict: bool,
    pub columns: Vec<Column>,
    pub indexes: Vec<Index>,
    /// Triggers that run for every inserted row.
    pub triggers: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct Column {
    pub name: String,
    /// The declared type as written (`VARCHAR(20)`, empty for none).
    pub declared: String,
    pub not_null: bool,
    /// Position in the primary key (1-based), 0 when not part of it.
    pub pk: i64,
    /// A boolean in a STRICT table, which has no BOOLEAN type: an INTEGER column constrained
    /// `CHECK ("c" IN (0, 1))`, as `--create` makes it; loaded from COPY's spellings of true
    /// and false, like a column declared BOOLEAN.
    pub boolean: bool,
}

/// The constraint that marks `column` of a STRICT table as a boolean (see [`Column::boolean`]).
pub fn boolean_check(column: &str) -> String {
    format!("CHECK ({} IN (0, 1))", quote(column))
}

#[derive(Debug, Clone)]
pub struct Index {
    pub name: String,
    /// The `CREATE INDEX` that made it; `None` for the indexes of PRIMARY KEY and UNIQUE
    /// constraints, which live and die with the table.
    pub sql: Option<String>,
    pub unique: bool,
}

impl Table {
    /// `"schema"."name"`.
    pub fn qualified(&self) -> String {
        format!("{}.{}", quote(&self.schema), quote(&self.name))
    }

    /// The INTEGER PRIMARY KEY column, if the table has one (the rowid under another name).
    pub fn rowid_column(&self) -> Option<&Column> {
        let mut pk = self.columns.iter().filter(|c| c.pk > 0);
        match (pk.next(), pk.next()) {
            (Some(c), None) if c.declared.eq_ignore_ascii_case("INTEGER") => Some(c),
            _ => None,
        }
    }

    /// A key that makes a row conflict with another: a primary key or a unique index.
    pub fn has_unique_key(&self) -> bool {
        self.columns.iter().any(|c| c.pk > 0) || self.indexes.iter().any(|i| i.unique)
    }
}

/// Splits a table name as SQL reads it: `t`, `main.t`, `"My Table"`, `"db"."t"`.
pub fn split_name(name: &str) -> (Option<String>, String) {
    let mut parts = inrush_core::ident::name_parts(name, '"');
    match parts.len() {
        1 => (None, parts.remove(0)),
        _ => {
            let table = parts.pop().unwrap_or_default();
            (Some(parts.join(".")), table)
        }
    }
}

/// The table `name` names, or `None` when there is no such table.
pub fn read(conn: &Connection, name: &str) -> Result<Option<Table>> {
    let (schema, table) = split_name(name);
    let found = conn
        .query_row(
            "SELECT schema, name, strict FROM pragma_table_list \
             WHERE name = ?1 COLLATE NOCASE AND type = 'table' \
               AND (?2 IS NULL OR schema = ?2 COLLATE NOCASE) \
             ORDER BY schema = 'temp' DESC, schema = 'main' DESC LIMIT 1",
            (&table, &schema),
            |row| {
                Ok((
                    row.get::<_, String>(0)?,
                    row.get::<_, String>(1)?,
                    row.get::<_, bool>(2)?,
                ))
            },
        )
        .optional()
        .map_err(failed(format!("looking up table {name}")))?;
    let Some((schema, name, strict)) = found else {
        return Ok(None);
    };
    let reading = || failed(format!("reading the definition of {name}"));
    // hidden: 1 for a virtual table's hidden columns, 2 and 3 for generated columns, which
    // take no values.
    let mut columns = Vec::new();
    let mut stmt = conn
        .prepare(
            "SELECT name, type, \"notnull\", pk FROM pragma_table_xinfo(?1, ?2) \
             WHERE hidden = 0 ORDER BY cid",
        )
        .map_err(reading())?;
    let rows = stmt
        .query_map((&name, &schema), |row| {
            Ok(Column {
                name: row.get(0)?,
                declared: row.get(1)?,
                not_null: row.get(2)?,
                pk: row.get(3)?,
                boolean: false,
            })
        })
        .map_err(reading())?;
    for column in rows {
        columns.push(column.map_err(reading())?);
    }
    if strict {
        let sql: String = conn
            .query_row(
                &format!(
                    "SELECT sql FROM {}.sqlite_schema WHERE type = 'table' AND name = ?1",
                    quote(&schema)
                ),
                [&name],
                |row| row.get(0),
            )
            .map_err(reading())?;
        for column in &mut columns {
            column.boolean = column.declared.eq_ignore_ascii_case("INTEGER")
                && sql.contains(&boolean_check(&column.name));
        }
    }
    let mut stmt = conn
        .prepare(&format!(
            "SELECT il.name, il.\"unique\", s.sql FROM pragma_index_list(?1, ?2) il \
             LEFT JOIN {}.sqlite_schema s ON s.type = 'index' AND s.name = il.name \
             ORDER BY il.seq DESC",
            quote(&schema)
        ))
        .map_err(reading())?;
    let indexes = stmt
        .query_map((&name, &schema), |row| {
            Ok(Index {
                name: row.get(0)?,
                unique: row.get(1)?,
                sql: row.get(2)?,
            })
        })
        .map_err(reading())?
        .collect::<rusqlite::Result<Vec<_>>>()
        .map_err(reading())?;
    let mut stmt = conn
        .prepare(&format!(
            "SELECT name FROM {}.sqlite_schema WHERE type = 'trigger' AND tbl_name = ?1 \
             ORDER BY name",
            quote(&schema)
        ))
        .map_err(reading())?;
    let triggers = stmt
        .query_map([&name], |row| row.get(0))
        .map_err(reading())?
        .collect::<rusqlite::Result<Vec<String>>>()
        .map_err(reading())?;
    Ok(Some(Table {
        schema,
        name,
        strict,
        columns,
        indexes,
        triggers,
    }))
}

/// Other tables' foreign keys whose `ON DELETE` rule changes their rows when rows of `table`
/// are deleted (CASCADE, SET NULL, SET DEFAULT), as `"child" (ON DELETE RULE)`.
pub fn changed_by_delete(conn: &Connection, table: &Table) -> Result<Vec<String>> {
    let reading = || {
        failed(format!(
            "reading the keys that reference {}",
            table.qualified()
        ))
    };
    // One row per column of a key: grouped by the key's id.
    let mut stmt = conn
        .prepare(&format!(
            "SELECT m.name, f.on_delete FROM {}.sqlite_schema m, pragma_foreign_key_list(m.name, ?2) f \
             WHERE m.type = 'table' AND f.\"table\" = ?1 COLLATE NOCASE AND m.name <> ?1 COLLATE NOCASE \
               AND f.on_delete IN ('CASCADE', 'SET NULL', 'SET DEFAULT') \
             GROUP BY m.name, f.id ORDER BY m.name, f.id",
            quote(&table.schema)
        ))
        .map_err(reading())?;
    let keys = stmt
        .query_map((&table.name, &table.schema), |row| {
            Ok(format!(
                "{} (ON DELETE {})",
                quote(&row.get::<_, String>(0)?),
                row.get::<_, String>(1)?
            ))
        })
        .map_err(reading())?
        .collect::<rusqlite::Result<Vec<String>>>()
        .map_err(reading())?;
    Ok(keys)
}

/// Whether the table holds no row (cheap: stops at the first).
pub fn is_empty(conn: &Connection, table: &Table) -> Result<bool> {
    conn.query_row(
        &format!("SELECT NOT EXISTS (SELECT 1 FROM {})", table.qualified()),
        [],
        |row| row.get(0),
    )
    .map_err(failed(format!("reading {}", table.qualified())))
}

/// The size of the database file the table lives in (pages in use times the page size).
pub fn database_bytes(conn: &Connection, schema: &str) -> Result<u64> {
    let q = quote(schema);
    conn.query_row(
        &format!("SELECT p.page_count * s.page_size FROM {q}.pragma_page_count() p, {q}.pragma_page_size() s"),
        [],
        |row| row.get::<_, i64>(0),
    )
    .map(|b| b.max(0) as u64)
    .map_err(failed("reading the database's size"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_split_as_sql_reads_them() {
        assert_eq!(split_name("t"), (None, "t".into()));
        assert_eq!(split_name("main.t"), (Some("main".into()), "t".into()));
        assert_eq!(split_name("\"a.b\""), (None, "a.b".into()));
        assert_eq!(
            split_name("\"x\"\"y\".t"),
            (Some("x\"y".into()), "t".into())
        );
    }

    #[test]
    fn reads_columns_keys_and_indexes() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, \
               v REAL, g INT GENERATED ALWAYS AS (id * 2)) STRICT;
             CREATE INDEX t_v ON t (v);
             CREATE TRIGGER t_ins AFTER INSERT ON t BEGIN SELECT 1; END;",
        )
        .unwrap();
        let t = read(&conn, "T").unwrap().unwrap();
        assert!(t.strict);
        let names: Vec<&str> = t.columns.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["id", "name", "v"]);
        assert_eq!(t.rowid_column().map(|c| c.name.as_str()), Some("id"));
        assert!(t.columns[1].not_null);
        assert!(t.has_unique_key());
        let indexes: Vec<(&str, bool, bool)> = t
            .indexes
            .iter()
            .map(|i| (i.name.as_str(), i.unique, i.sql.is_some()))
            .collect();
        assert_eq!(
            indexes,
            [("sqlite_autoindex_t_1", true, false), ("t_v", false, true)]
        );
        assert_eq!(t.triggers, ["t_ins"]);
        assert!(is_empty(&conn, &t).unwrap());
        assert!(read(&conn, "missing").unwrap().is_none());
    }
}
