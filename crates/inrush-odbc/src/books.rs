//! inrush's own tables beside the target table, in its schema: the `--resume` ledger
//! ([`crate::ledger`]), the marks that tell whether a COMMIT whose answer was lost committed,
//! and the load's record for a rerun ([`crate::outcome`]).
//!
//! The statements are the SQL every database here takes: no `IF NOT EXISTS`, no upsert, no
//! default, no timestamp type (SQL Server's `TIMESTAMP` is a row version): the times are the
//! database's `CURRENT_TIMESTAMP`, kept as text.

use crate::driver::Dbms;
use crate::failed;
use inrush_load::{Error, Result};
use odbc_api::{Connection, Cursor, ParameterCollectionRef, ResultSetMetadata};

/// The names of inrush's tables beside one table, qualified by its schema when it has one.
/// They are apart from the native engines' (`inrush_load_ledger`, ...), whose columns differ
/// by database.
pub(crate) struct Books {
    pub(crate) inputs: String,
    pub(crate) ledger: String,
    pub(crate) marks: String,
    pub(crate) commits: String,
    /// Where the check of a driver's parameter arrays puts its rows, one per process.
    pub(crate) scratch: String,
    /// The `rows` column, quoted: a reserved word on MariaDB.
    pub(crate) rows: String,
    /// The database's 64-bit integer (Oracle has none by that name).
    pub(crate) bigint: &'static str,
    /// How the books name the table: as the load quotes it.
    pub(crate) table: String,
}

impl Books {
    /// The books of `table` (quoted, with `schema` quoted when given) on a database of `kind`
    /// whose names `quote` delimits.
    pub(crate) fn new(kind: Dbms, quote: char, schema: Option<&str>, table: &str) -> Books {
        let prefix = schema.map(|s| format!("{s}.")).unwrap_or_default();
        Books {
            inputs: format!("{prefix}inrush_odbc_inputs"),
            ledger: format!("{prefix}inrush_odbc_ledger"),
            marks: format!("{prefix}inrush_odbc_marks"),
            commits: format!("{prefix}inrush_odbc_commits"),
            scratch: format!("{prefix}inrush_odbc_check_{}", std::process::id()),
            rows: format!("{quote}rows{quote}"),
            bigint: match kind {
                Dbms::Oracle => "NUMBER(19)",
                _ => "BIGINT",
            },
            table: table.to_string(),
        }
    }

    /// The table, as the load names it.
    pub(crate) fn table(&self) -> &str {
        &self.table
    }
}

/// Whether `table` can be read: the one test of a table's being there that every driver
/// answers alike.
pub(crate) fn exists(conn: &Connection<'_>, table: &str) -> bool {
    let sql = format!("SELECT COUNT(*) FROM {table} WHERE 1 = 0");
    conn.execute(&sql, (), None).is_ok()
}

/// Makes `table` by `create` unless it is there, or another process made it meanwhile.
pub(crate) fn make(conn: &Connection<'_>, table: &str, create: &str) -> Result<()> {
    if exists(conn, table) {
        return Ok(());
    }
    match conn.execute(create, (), None) {
        Ok(_) => Ok(()),
        Err(_) if exists(conn, table) => Ok(()),
        Err(e) => Err(failed(format!("creating {table}"))(e)),
    }
}

/// The rows `sql` returns with `params`, every value as text (`None`, NULL), trimmed.
pub(crate) fn text_rows(
    conn: &Connection<'_>,
    sql: &str,
    params: impl ParameterCollectionRef,
    what: &str,
) -> Result<Vec<Vec<Option<String>>>> {
    let text = |v: Vec<u8>| String::from_utf8_lossy(&v).trim().to_string();
    Ok(raw_rows(conn, sql, params, what)?
        .into_iter()
        .map(|row| row.into_iter().map(|v| v.map(text)).collect())
        .collect())
}

/// The rows `sql` returns with `params`, every value as the driver's text of it, byte for byte.
pub(crate) fn raw_rows(
    conn: &Connection<'_>,
    sql: &str,
    params: impl ParameterCollectionRef,
    what: &str,
) -> Result<Vec<Vec<Option<Vec<u8>>>>> {
    let read = || failed(format!("reading {what}"));
    let Some(mut cursor) = conn.execute(sql, params, None).map_err(read())? else {
        return Ok(Vec::new());
    };
    let columns = cursor.num_result_cols().map_err(read())? as u16;
    let mut rows = Vec::new();
    let mut buf = Vec::new();
    while let Some(mut row) = cursor.next_row().map_err(read())? {
        let mut values = Vec::new();
        for column in 1..=columns {
            let value = row.get_text(column, &mut buf).map_err(read())?;
            values.push(value.then(|| buf.clone()));
        }
        rows.push(values);
    }
    Ok(rows)
}

/// `value`, an integer read as text from `what`.
pub(crate) fn int(value: &Option<String>, what: &str) -> Result<i64> {
    value
        .as_deref()
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| Error::Internal(format!("{what} holds {value:?}, not an integer")))
}
