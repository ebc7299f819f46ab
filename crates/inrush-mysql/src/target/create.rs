//! `--create` on MariaDB: the table designed from the inferred or given types.

use crate::catalog::{self, Table};
use crate::value::ColumnCheck;
use inrush_core::SqlType;
use inrush_load::{Error, Result};

/// `--create`: the table for the columns `inrush-load` inferred, typed as a user moving data
/// into MariaDB expects; `--types` gives MariaDB types.
pub(super) fn designed(
    schema: String,
    name: String,
    columns: &[(String, SqlType)],
    overrides: &[(String, String)],
) -> Result<(Table, Vec<ColumnCheck>, String)> {
    let given = inrush_load::create::given_types(columns, overrides)?;
    let mut table_columns = Vec::new();
    let mut checks = Vec::new();
    let mut definitions = Vec::new();
    for ((column, inferred), given) in columns.iter().zip(given) {
        let (sql_type, convention) = match given {
            Some(t) => (t.to_string(), None),
            None => mariadb_type(column, inferred)?,
        };
        let lower = sql_type.to_ascii_lowercase();
        let data_type = lower
            .split(['(', ' '])
            .next()
            .unwrap_or_default()
            .to_string();
        let length = |s: &str| {
            s.split_once('(')
                .and_then(|(_, rest)| rest.split([',', ')']).next())
                .and_then(|n| n.trim().parse().ok())
        };
        let numbers = lower
            .split_once('(')
            .map(|(_, rest)| {
                rest.trim_end_matches(')')
                    .split(',')
                    .map(|n| n.trim().parse().ok())
                    .collect::<Vec<Option<u64>>>()
            })
            .unwrap_or_default();
        let c = catalog::Column {
            name: column.clone(),
            data_type: data_type.clone(),
            column_type: sql_type.clone(),
            not_null: false,
            max_length: matches!(
                data_type.as_str(),
                "char" | "varchar" | "binary" | "varbinary"
            )
            .then(|| length(&lower))
            .flatten(),
            precision: numbers.first().copied().flatten(),
            scale: numbers.get(1).copied().flatten(),
            auto_increment: false,
        };
        checks.push(match convention {
            Some(Convention::Boolean) => ColumnCheck::boolean(column),
            Some(Convention::Hex) => ColumnCheck::hex(column),
            None => ColumnCheck::of(&c),
        });
        definitions.push(format!("{} {sql_type}", catalog::quote(column)));
        table_columns.push(c);
    }
    let table = Table {
        schema,
        name,
        engine: "InnoDB".into(),
        transactional: true,
        columns: table_columns,
        indexes: Vec::new(),
        foreign_keys: Vec::new(),
        triggers: Vec::new(),
        changed_by_delete: Vec::new(),
        bytes: 0,
        empty: true,
    };
    let sql = format!(
        "CREATE TABLE {} ({}) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4",
        table.qualified(),
        definitions.join(", ")
    );
    Ok((table, checks, sql))
}

/// How a created column's text is read beyond what the server reads itself.
pub(crate) enum Convention {
    Boolean,
    Hex,
}

/// The MariaDB type for a type `--create` inferred, or a query's column has.
pub(crate) fn mariadb_type(
    column: &str,
    inferred: &SqlType,
) -> Result<(String, Option<Convention>)> {
    use SqlType::*;
    let plain = |s: String| Ok((s, None));
    let fraction = |digits: &Option<u32>| digits.unwrap_or(6);
    match inferred {
        Boolean => Ok(("BOOLEAN".into(), Some(Convention::Boolean))),
        SmallInt => plain("SMALLINT".into()),
        Integer => plain("INT".into()),
        BigInt => plain("BIGINT".into()),
        // Unconstrained: the widest exact type, so no digit is lost.
        Numeric(None) => plain("DECIMAL(65,30)".into()),
        Numeric(Some((precision, scale))) => plain(format!("DECIMAL({precision},{scale})")),
        Real => plain("FLOAT".into()),
        Double => plain("DOUBLE".into()),
        Varchar(Some(n)) => plain(format!("VARCHAR({n})")),
        // MariaDB's CHAR holds at most 255 characters.
        Char(n) if *n <= 255 => plain(format!("CHAR({n})")),
        Char(n) => plain(format!("VARCHAR({n})")),
        Date => plain("DATE".into()),
        Time(digits) => plain(format!("TIME({})", fraction(digits))),
        Timestamp(digits) => plain(format!("DATETIME({})", fraction(digits))),
        TimestampTz(_) => Err(Error::Usage(format!(
            "--create: column {column:?} holds times with a zone, which MariaDB's DATETIME cannot take; give it a type with --types {column}=VARCHAR(40), or convert the input to UTC"
        ))),
        Uuid => plain("CHAR(36)".into()),
        Json => plain("JSON".into()),
        Bytes => Ok(("LONGBLOB".into(), Some(Convention::Hex))),
        Varchar(None) | Text | Bit(_) | Interval | Array(_) | Source { .. } => {
            plain("LONGTEXT".into())
        }
    }
}
