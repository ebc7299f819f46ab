//! What the driver's catalog functions say of the target table: its columns (`SQLColumns`) and
//! its indexes (`SQLStatistics`).

use crate::failed;
use inrush_core::{SqlType, TargetColumn};
use inrush_load::{Error, Result};
use odbc_api::handles::{Statement, StatementImpl};
use odbc_api::sys::{HStmt, SqlReturn};
use odbc_api::{Connection, Cursor, CursorImpl};

/// The table's columns as the driver's catalog (`SQLColumns`) lists them, in table order.
/// `SQLColumns` takes patterns, in which `_` and `%` stand for any character: the names are
/// asked for escaped (`\_`), then as written for a driver that escapes otherwise, and only
/// the table of exactly that name is kept (of that name in another case, when none is).
pub(crate) fn columns(
    conn: &Connection<'_>,
    schema: Option<&str>,
    table: &str,
) -> Result<Vec<TargetColumn>> {
    let escaped = |s: &str| {
        s.replace('\\', "\\\\")
            .replace('_', "\\_")
            .replace('%', "\\%")
    };
    let asked = [
        (schema.map_or("%".into(), escaped), escaped(table)),
        (schema.unwrap_or("%").to_string(), table.to_string()),
    ];
    let mut found = Vec::new();
    for (schema, pattern) in &asked {
        found = column_rows(conn, schema, pattern, table)?;
        if found.iter().any(|c| c.table == table) {
            found.retain(|c| c.table == table);
            break;
        }
        found.retain(|c| c.table.eq_ignore_ascii_case(table));
        if !found.is_empty() {
            break;
        }
    }
    let mut schemas: Vec<&str> = found.iter().map(|c| c.schema.as_str()).collect();
    schemas.dedup();
    if schemas.len() > 1 {
        return Err(Error::Usage(format!(
            "--table {table}: there is a table of that name in schemas {}; name one (SCHEMA.{table})",
            schemas.join(", ")
        )));
    }
    Ok(found.into_iter().map(|c| c.column).collect())
}

/// One row of `SQLColumns`: the column, and the schema and table it belongs to.
struct Listed {
    schema: String,
    table: String,
    column: TargetColumn,
}

/// The columns `SQLColumns` lists for the patterns `schema` and `pattern`.
fn column_rows(
    conn: &Connection<'_>,
    schema: &str,
    pattern: &str,
    table: &str,
) -> Result<Vec<Listed>> {
    let read = || failed(format!("reading the columns of {table}"));
    let rows = conn.columns("", schema, pattern, "%").map_err(read())?;
    let mut listed = Vec::new();
    for row in rows {
        let row = row.map_err(read())?;
        let text = |v: &[u8]| String::from_utf8_lossy(v).to_string();
        let column = TargetColumn {
            name: text(row.column_name.as_bytes().unwrap_or_default()),
            type_sql: text(row.type_name.as_bytes().unwrap_or_default()),
            sql_type: shared_type(row.data_type),
            // SQL_NO_NULLS.
            not_null: row.nullable == 0,
        };
        listed.push(Listed {
            schema: text(row.schema.as_bytes().unwrap_or_default()),
            table: text(row.table.as_bytes().unwrap_or_default()),
            column,
        });
    }
    Ok(listed)
}

/// What inrush needs to know of a column's ODBC type (`DATA_TYPE`): whether it holds bytes,
/// which go bound as binary. Every other value goes as text the driver converts.
fn shared_type(data_type: i16) -> SqlType {
    // SQL_BINARY, SQL_VARBINARY, SQL_LONGVARBINARY.
    match data_type {
        -4..=-2 => SqlType::Bytes,
        _ => SqlType::Text,
    }
}

// odbc-api does not wrap SQLStatistics; unixODBC's driver manager exports it.
unsafe extern "system" {
    fn SQLStatistics(
        statement: HStmt,
        catalog: *const u8,
        catalog_len: i16,
        schema: *const u8,
        schema_len: i16,
        table: *const u8,
        table_len: i16,
        unique: u16,
        reserved: u16,
    ) -> SqlReturn;
}

/// `SQL_INDEX_ALL`, and `SQL_QUICK` (the statistics the driver has at hand, no count).
const INDEX_ALL: u16 = 1;
const QUICK: u16 = 0;

/// An index as `SQLStatistics` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Index {
    pub(crate) name: String,
    /// Its `INDEX_QUALIFIER`: the schema that holds it on Oracle and DB2 (SQL Server's
    /// driver gives the table's name).
    pub(crate) qualifier: Option<String>,
    pub(crate) unique: bool,
    /// `SQL_INDEX_CLUSTERED`: the index holds the table's rows (SQL Server).
    pub(crate) clustered: bool,
}

/// The table's indexes as `SQLStatistics` lists them; empty when the driver cannot list them.
pub(crate) fn indexes(conn: &Connection<'_>, schema: Option<&str>, table: &str) -> Vec<Index> {
    listed(conn, schema, table).unwrap_or_default()
}

fn listed(conn: &Connection<'_>, schema: Option<&str>, table: &str) -> Result<Vec<Index>> {
    let read = || failed(format!("reading the indexes of {table}"));
    let statement: StatementImpl<'_> = conn.preallocate().map_err(read())?.into_handle();
    let (schema_ptr, schema_len) = match schema {
        Some(s) => (s.as_ptr(), s.len() as i16),
        None => (std::ptr::null(), 0),
    };
    // SAFETY: a statement handle of a live connection, and names that outlive the call
    // (the driver copies them).
    let called = unsafe {
        SQLStatistics(
            statement.as_sys(),
            std::ptr::null(),
            0,
            schema_ptr,
            schema_len,
            table.as_ptr(),
            table.len() as i16,
            INDEX_ALL,
            QUICK,
        )
    };
    if !matches!(called, SqlReturn::SUCCESS | SqlReturn::SUCCESS_WITH_INFO) {
        return Err(Error::Internal(format!("SQLStatistics on {table} failed")));
    }
    // SAFETY: the statement now holds SQLStatistics' result set.
    let mut cursor = unsafe { CursorImpl::new(statement) };
    let mut found: Vec<Index> = Vec::new();
    let (mut name, mut kind, mut non_unique, mut qualifier) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let text = |v: &[u8]| String::from_utf8_lossy(v).into_owned();
    while let Some(mut row) = cursor.next_row().map_err(read())? {
        // TYPE 0 (SQL_TABLE_STAT) is the table's own row, without an index.
        row.get_text(7, &mut kind).map_err(read())?;
        if !row.get_text(6, &mut name).map_err(read())? || kind == b"0" {
            continue;
        }
        row.get_text(4, &mut non_unique).map_err(read())?;
        let qualified = row.get_text(5, &mut qualifier).map_err(read())?;
        let name = text(&name);
        // One row per column of each index.
        if found.iter().any(|i| i.name == name) {
            continue;
        }
        found.push(Index {
            name,
            qualifier: (qualified && !qualifier.is_empty()).then(|| text(&qualifier)),
            unique: non_unique == b"0",
            clustered: kind == b"1",
        });
    }
    Ok(found)
}
