//! PostgreSQL's names for [`SqlType`]: the types `--create` writes into its `CREATE TABLE`, and
//! the types a source query's result columns have (read from `format_type`).

use inrush_core::SqlType;

/// The engine a [`SqlType::Source`] names for a type only PostgreSQL has.
const ENGINE: &str = "PostgreSQL";

/// The type's name as `format_type` spells it (`timestamp(3) with time zone`, `integer[]`).
/// A type only another engine has holds that engine's text.
pub fn name(sql_type: &SqlType) -> String {
    use SqlType::*;
    let fraction = |digits: &Option<u32>| digits.map(|n| format!("({n})")).unwrap_or_default();
    match sql_type {
        Boolean => "boolean".into(),
        SmallInt => "smallint".into(),
        Integer => "integer".into(),
        BigInt => "bigint".into(),
        Numeric(None) => "numeric".into(),
        Numeric(Some((precision, scale))) => format!("numeric({precision},{scale})"),
        Real => "real".into(),
        Double => "double precision".into(),
        Varchar(None) => "character varying".into(),
        Varchar(Some(n)) => format!("character varying({n})"),
        Char(n) => format!("character({n})"),
        Text => "text".into(),
        Bytes => "bytea".into(),
        Bit(n) => format!("bit({n})"),
        Date => "date".into(),
        Time(digits) => format!("time{} without time zone", fraction(digits)),
        Timestamp(digits) => format!("timestamp{} without time zone", fraction(digits)),
        TimestampTz(digits) => format!("timestamp{} with time zone", fraction(digits)),
        Interval => "interval".into(),
        Uuid => "uuid".into(),
        Json => "jsonb".into(),
        Array(element) => format!("{}[]", name(element)),
        Source { engine, name } if *engine == ENGINE => name.clone(),
        Source { .. } => "text".into(),
    }
}

/// The type `format_type` named `spelled`. Exact both ways: a name [`name`] would not give
/// back as it is (`json`, `numeric(5,-2)`, `inet`) stays PostgreSQL's own, so a source column
/// and a target column of one name are always of one type (their COPY BINARY tuples agree).
pub fn parse(spelled: &str) -> SqlType {
    match read(spelled) {
        Some(sql_type) if name(&sql_type) == spelled => sql_type,
        _ => SqlType::Source {
            engine: ENGINE,
            name: spelled.to_string(),
        },
    }
}

fn read(spelled: &str) -> Option<SqlType> {
    use SqlType::*;
    if let Some(element) = spelled.strip_suffix("[]") {
        return Some(Array(Box::new(read(element)?)));
    }
    Some(match spelled {
        "boolean" => Boolean,
        "smallint" => SmallInt,
        "integer" => Integer,
        "bigint" => BigInt,
        "numeric" => Numeric(None),
        "real" => Real,
        "double precision" => Double,
        "character varying" => Varchar(None),
        "text" => Text,
        "bytea" => Bytes,
        "date" => Date,
        "time without time zone" => Time(None),
        "timestamp without time zone" => Timestamp(None),
        "timestamp with time zone" => TimestampTz(None),
        "interval" => Interval,
        "uuid" => Uuid,
        "jsonb" => Json,
        _ => {
            // A type with its modifier: `numeric(10,2)`, `timestamp(3) with time zone`.
            let (head, rest) = spelled.split_once('(')?;
            let (numbers, tail) = rest.split_once(')')?;
            let numbers = numbers.split(',').map(|n| n.parse().ok());
            let numbers: Vec<u32> = numbers.collect::<Option<_>>()?;
            match (head, numbers.as_slice(), tail) {
                ("numeric", &[precision, scale], "") => Numeric(Some((precision, scale))),
                ("character varying", &[n], "") => Varchar(Some(n)),
                ("character", &[n], "") => Char(n),
                ("bit", &[n], "") => Bit(n),
                ("time", &[n], " without time zone") => Time(Some(n)),
                ("timestamp", &[n], " without time zone") => Timestamp(Some(n)),
                ("timestamp", &[n], " with time zone") => TimestampTz(Some(n)),
                _ => return None,
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_reads_back_as_the_type_it_names() {
        for spelled in [
            "boolean",
            "integer",
            "numeric(10,2)",
            "character varying",
            "character varying(20)",
            "character(3)",
            "bit(8)",
            "time(3) without time zone",
            "timestamp without time zone",
            "timestamp(6) with time zone",
            "jsonb",
            "integer[]",
            "character varying(5)[]",
        ] {
            let parsed = parse(spelled);
            assert!(!matches!(parsed, SqlType::Source { .. }), "{spelled}");
            assert_eq!(name(&parsed), spelled);
        }
    }

    #[test]
    fn names_it_cannot_give_back_stay_postgresql_own() {
        for spelled in [
            "json",
            "inet",
            "numeric(5,-2)",
            "mood",
            "public.mood[]",
            "bpchar",
        ] {
            let source = SqlType::Source {
                engine: ENGINE,
                name: spelled.into(),
            };
            assert_eq!(parse(spelled), source);
            assert_eq!(name(&source), spelled);
        }
    }

    #[test]
    fn another_engines_own_type_is_text() {
        let other = SqlType::Source {
            engine: "MariaDB",
            name: "SET('a','b')".into(),
        };
        assert_eq!(name(&other), "text");
    }
}
