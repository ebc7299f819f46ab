//! `--create` over ODBC: each inferred column's type in the database's own words, as the
//! driver's `SQLGetTypeInfo` names the database type for the ODBC type that holds its values.

use crate::driver::Dbms;
use crate::failed;
use inrush_core::{SqlType, TargetColumn};
use inrush_load::{Error, Result};
use odbc_api::handles::{Statement, StatementImpl};
use odbc_api::sys::{SqlDataType, SqlReturn};
use odbc_api::{Connection, Cursor, CursorImpl};

/// What the driver says of one database type (`SQLGetTypeInfo`'s row).
#[derive(Debug, Clone, PartialEq)]
struct TypeInfo {
    name: String,
    /// `COLUMN_SIZE`: the most digits or characters it holds.
    size: Option<u64>,
    /// `CREATE_PARAMS`: what goes in its parentheses (`precision,scale`, `max length`).
    params: String,
    /// `MAXIMUM_SCALE`.
    max_scale: Option<u64>,
}

/// The ODBC types that hold `sql_type`'s values, best first; `Err`: why none does.
fn odbc_types(sql_type: &SqlType) -> std::result::Result<&'static [SqlDataType], &'static str> {
    use SqlDataType as T;
    Ok(match sql_type {
        // The database's boolean when BIT names one; else a small integer of 1 and 0.
        SqlType::Boolean => &[T::EXT_BIT, T::EXT_TINY_INT, T::SMALLINT],
        SqlType::SmallInt => &[T::SMALLINT, T::INTEGER],
        SqlType::Integer => &[T::INTEGER, T::EXT_BIG_INT],
        SqlType::BigInt => &[T::EXT_BIG_INT, T::NUMERIC, T::DECIMAL],
        SqlType::Numeric(_) => &[T::NUMERIC, T::DECIMAL],
        SqlType::Real => &[T::REAL, T::FLOAT, T::DOUBLE],
        SqlType::Double => &[T::DOUBLE, T::FLOAT],
        SqlType::Date => &[T::DATE],
        SqlType::Time(_) => &[T::TIME],
        SqlType::Timestamp(_) => &[T::TIMESTAMP],
        SqlType::TimestampTz(_) => {
            return Err(
                "ODBC has no type for a time with its zone, and a timestamp would drop the zone",
            )
        }
        SqlType::Uuid => &[T::EXT_GUID, T::CHAR, T::VARCHAR],
        SqlType::Bytes => &[T::EXT_LONG_VAR_BINARY, T::EXT_VAR_BINARY],
        SqlType::Varchar(Some(_)) | SqlType::Char(_) => &[T::EXT_W_VARCHAR, T::VARCHAR],
        _ => &[
            T::EXT_W_LONG_VARCHAR,
            T::EXT_LONG_VARCHAR,
            T::EXT_W_VARCHAR,
            T::VARCHAR,
        ],
    })
}

/// The type `sql_type`'s column is given on a database of `kind`, from the types `info` says
/// the driver has (`None`: it has none of them).
fn column_type(
    kind: Dbms,
    sql_type: &SqlType,
    info: &dyn Fn(SqlDataType) -> Option<TypeInfo>,
) -> std::result::Result<String, String> {
    let wanted = odbc_types(sql_type).map_err(str::to_string)?;
    let found = wanted.iter().find_map(|&t| {
        let info = info(t)?;
        // MariaDB's BIT(1) takes bits, not the digits 1 and 0 sent as text.
        let boolean = t != SqlDataType::EXT_BIT || !takes_digits(&info.name);
        boolean.then_some((t, info))
    });
    let Some((odbc, info)) = found else {
        return match sql_type {
            // SQLite's driver lists `numeric` as a DOUBLE; every SQL database has NUMERIC.
            SqlType::Numeric(Some((p, s))) => Ok(format!("NUMERIC({p},{s})")),
            SqlType::Numeric(None) => Ok("NUMERIC".into()),
            _ => Err("the driver lists no database type for its values".into()),
        };
    };
    let params = info.params.to_ascii_lowercase();
    let sized = |n: u64| match params.is_empty() {
        true => info.name.clone(),
        false => format!("{}({n})", info.name),
    };
    Ok(match sql_type {
        SqlType::Numeric(Some((p, s))) if !params.is_empty() => format!("{}({p},{s})", info.name),
        // Of any size: PostgreSQL's numeric is that without a precision; elsewhere, the most
        // digits the database holds, half of them (or its most) after the point.
        SqlType::Numeric(None) if !params.is_empty() && kind != Dbms::PostgreSql => {
            let p = info.size.unwrap_or(38);
            let s = info.max_scale.unwrap_or(p / 2).min(p / 2);
            format!("{}({p},{s})", info.name)
        }
        SqlType::Varchar(Some(n)) | SqlType::Char(n) => sized(u64::from(*n)),
        SqlType::Uuid if odbc != SqlDataType::EXT_GUID => sized(36),
        // A VARCHAR in place of a long text: the longest the database has.
        _ if [SqlDataType::VARCHAR, SqlDataType::EXT_W_VARCHAR].contains(&odbc)
            && !params.is_empty() =>
        {
            sized(info.size.unwrap_or(4000))
        }
        _ => info.name.clone(),
    })
}

/// Whether a column of `type_name` made for booleans takes them as 1 and 0 rather than as
/// the words (`true`, `yes`) of the input: the database has no boolean type by that name.
pub(crate) fn takes_digits(type_name: &str) -> bool {
    !type_name.to_ascii_lowercase().contains("bool")
}

/// The columns of a table `--create` makes from `inferred` (each name and type, `--types`
/// naming some) on a database of `kind`, and its `CREATE TABLE` for `table`, each name
/// quoted by `quote`.
pub(crate) fn design(
    conn: &Connection<'_>,
    kind: Dbms,
    table: &str,
    inferred: &[(String, SqlType)],
    overrides: &[(String, String)],
    quote: &dyn Fn(&str) -> String,
) -> Result<(Vec<TargetColumn>, String)> {
    let given = inrush_load::create::given_types(inferred, overrides)?;
    let info = |t: SqlDataType| type_info(conn, t);
    let mut columns = Vec::new();
    for ((name, sql_type), given) in inferred.iter().zip(given) {
        let type_sql = match given {
            Some(t) => t.to_string(),
            None => column_type(kind, sql_type, &info).map_err(|why| {
                Error::Usage(format!(
                    "--create over ODBC: no type for column {name:?} ({sql_type:?}): {why}; name one with --types {name}=TYPE"
                ))
            })?,
        };
        columns.push(TargetColumn {
            name: name.clone(),
            type_sql,
            sql_type: sql_type.clone(),
            not_null: false,
        });
    }
    let definitions: Vec<String> = columns
        .iter()
        .map(|c| format!("{} {}", quote(&c.name), c.type_sql))
        .collect();
    let sql = format!("CREATE TABLE {table} ({})", definitions.join(", "));
    Ok((columns, sql))
}

/// The first database type the driver lists for `odbc` (its best match), if any.
fn type_info(conn: &Connection<'_>, odbc: SqlDataType) -> Option<TypeInfo> {
    let statement: StatementImpl<'_> = conn.preallocate().ok()?.into_handle();
    // SAFETY: a statement handle of a live connection.
    let called = unsafe { odbc_api::sys::SQLGetTypeInfo(statement.as_sys(), odbc) };
    if !matches!(called, SqlReturn::SUCCESS | SqlReturn::SUCCESS_WITH_INFO) {
        return None;
    }
    // SAFETY: the statement now holds SQLGetTypeInfo's result set.
    let mut cursor = unsafe { CursorImpl::new(statement) };
    let mut row = cursor.next_row().ok()??;
    let mut text = |column: u16| {
        let mut buf = Vec::new();
        let there = row.get_text(column, &mut buf).ok()?;
        there.then(|| String::from_utf8_lossy(&buf).trim().to_string())
    };
    let name = text(1)?;
    let size = text(3).and_then(|s| s.parse().ok());
    let params = text(6).unwrap_or_default();
    let max_scale = text(15).and_then(|s| s.parse().ok());
    Some(TypeInfo {
        name,
        size,
        params,
        max_scale,
    })
}

/// What a failed `CREATE TABLE` is: the database refused the statement (a type given with
/// `--types` it does not have, a name it does not take).
pub(crate) fn refused(sql: &str) -> impl FnOnce(odbc_api::Error) -> Error + '_ {
    move |e| match failed(sql.to_string())(e) {
        Error::Driver { error, .. } => Error::Usage(format!(
            "--create: the database refused {sql}: {} (a type given with --types?)",
            error
                .downcast_ref::<crate::OdbcError>()
                .map_or(String::new(), |e| e.message.clone())
        )),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(name: &str, params: &str, size: u64) -> Option<TypeInfo> {
        Some(TypeInfo {
            name: name.into(),
            size: Some(size),
            params: params.into(),
            max_scale: None,
        })
    }

    /// psqlODBC's answers for the types asked.
    fn postgres(t: SqlDataType) -> Option<TypeInfo> {
        match t {
            SqlDataType::EXT_BIT => info("bool", "", 1),
            SqlDataType::NUMERIC => info("numeric", "precision, scale", 1000),
            SqlDataType::VARCHAR => info("varchar", "max. length", 255),
            SqlDataType::EXT_LONG_VARCHAR => info("text", "", 8190),
            SqlDataType::INTEGER => info("int4", "", 10),
            _ => None,
        }
    }

    /// MariaDB's driver's, which has no boolean and caps DECIMAL at (65,30).
    fn mariadb(t: SqlDataType) -> Option<TypeInfo> {
        match t {
            SqlDataType::EXT_BIT => info("bit", "", 1),
            SqlDataType::EXT_TINY_INT => info("tinyint", "", 3),
            SqlDataType::DECIMAL => Some(TypeInfo {
                max_scale: Some(30),
                ..info("decimal", "M,D", 65)?
            }),
            SqlDataType::EXT_W_VARCHAR => info("varchar", "[(M)]", 65535),
            _ => None,
        }
    }

    #[test]
    fn each_type_is_the_databases_own_name_with_what_its_parentheses_take() {
        let pg = |t| column_type(Dbms::PostgreSql, &t, &postgres).unwrap();
        assert_eq!(pg(SqlType::Boolean), "bool");
        assert_eq!(pg(SqlType::Numeric(Some((10, 2)))), "numeric(10,2)");
        assert_eq!(pg(SqlType::Numeric(None)), "numeric");
        assert_eq!(pg(SqlType::Varchar(Some(40))), "varchar(40)");
        assert_eq!(pg(SqlType::Text), "text");
        let maria = |t| column_type(Dbms::MariaDb, &t, &mariadb).unwrap();
        assert_eq!(maria(SqlType::Numeric(None)), "decimal(65,30)");
        assert_eq!(maria(SqlType::Text), "varchar(65535)");
        assert_eq!(maria(SqlType::Boolean), "tinyint");
        assert!(!takes_digits(&pg(SqlType::Boolean)));
    }

    #[test]
    fn a_value_no_type_holds_is_refused_with_the_reason() {
        let zone = column_type(Dbms::PostgreSql, &SqlType::TimestampTz(None), &postgres);
        assert!(zone.unwrap_err().contains("zone"));
        let sqlite = |_| None;
        let numeric = column_type(Dbms::Sqlite, &SqlType::Numeric(None), &sqlite);
        assert_eq!(numeric.unwrap(), "NUMERIC");
        let none = column_type(Dbms::PostgreSql, &SqlType::Date, &postgres);
        assert!(none.unwrap_err().contains("lists no database type"));
    }
}
