//! `--create`: the table a load makes from its input. Column names come from the header (JSON
//! keys, Parquet fields); types from the file's schema or, for text, from the values of the
//! first block, where a later value that does not fit is a bad row like any other. (A query's
//! names and types are its own, read by the pipeline.)

use crate::sources::{Opened, Sources};
use crate::{Error, Result};
use inrush_arrow::DataType;
use inrush_core::SqlType;
use inrush_encode::DateOrder;
use inrush_read::csv::Record;
use inrush_read::inputs::InputFormat;
use inrush_read::jsonl::{ColumnForm, JsonLineParser};

/// `--types` for the columns `--create` inferred (`columns`: name and type): the type each
/// column is given, if any. A name is matched as a header's is (exact, else the one column
/// that differs only in case); one that matches no column, or several, is refused.
pub fn given_types<'t>(
    columns: &[(String, SqlType)],
    overrides: &'t [(String, String)],
) -> Result<Vec<Option<&'t str>>> {
    let names = || columns.iter().map(|(n, _)| n.as_str());
    let mut given = vec![None; columns.len()];
    for (name, sql_type) in overrides {
        let Some(i) = crate::columns::position_by_name(names(), name) else {
            let folded = names().filter(|n| n.eq_ignore_ascii_case(name)).count();
            return Err(Error::Usage(match folded {
                0 => format!(
                    "--types: the input has no column {name:?} (it has: {})",
                    names().collect::<Vec<_>>().join(", ")
                ),
                _ => format!(
                    "--types: {name:?} names {folded} columns that differ only in case: write it as the input does"
                ),
            }));
        };
        given[i] = Some(sql_type.as_str());
    }
    Ok(given)
}

/// Each column's name and type for an input file (a query's come from the source server, see
/// `QueryServer::columns`). `order`: `--datestyle`'s, in which `31/12/2024` is a date.
pub fn column_types(
    sources: &Sources,
    names: Option<&[String]>,
    projections: &[Vec<usize>],
    first: Option<&mut Opened>,
    order: Option<DateOrder>,
) -> Result<Vec<(String, SqlType)>> {
    let source = &sources.list[0];
    let Some(names) = names else {
        return Err(Error::Columns(
            "--create needs column names: a CSV header (--header), JSON lines, Parquet or a query"
                .into(),
        ));
    };
    if let (Some(file), Some(projection)) = (&source.arrow, projections.first()) {
        let schema = file.schema();
        return names
            .iter()
            .zip(projection)
            .map(|(name, &i)| {
                let data_type = schema.field(i).data_type();
                let sql = arrow_sql_type(data_type).ok_or_else(|| {
                    Error::Columns(format!(
                        "--create: no SQL type for column {name:?} (Arrow {data_type})"
                    ))
                })?;
                Ok((name.clone(), sql))
            })
            .collect();
    }
    let first = first.ok_or_else(|| Error::Internal("--create without an opened input".into()))?;
    // A sample: what was read ahead, plus the next block (sent on afterwards like the rest).
    if let Some(block) = first.splitter.next() {
        first.pending.push(block?);
    }
    let mut kinds = vec![None::<Kind>; names.len()];
    let mut observe = |i: usize, value: Kind| {
        if let Some(slot) = kinds.get_mut(i) {
            *slot = Some(slot.map_or(value, |seen| seen.join(value)));
        }
    };
    match sources.format {
        InputFormat::Jsonl => {
            let json = JsonLineParser::new(
                &names
                    .iter()
                    .map(|n| (n.clone(), ColumnForm::Json))
                    .collect::<Vec<_>>(),
            );
            for block in &first.pending {
                let text = String::from_utf8_lossy(&block.data);
                let mut fields = Vec::new();
                for line in text.lines() {
                    if json.parse(line, &mut fields).is_ok() {
                        for (i, field) in fields.iter().enumerate() {
                            let kind = field.as_deref().and_then(|f| json_kind(f, order));
                            if let Some(value) = kind {
                                observe(i, value);
                            }
                        }
                    }
                }
            }
        }
        _ => {
            let parser = source
                .parser()
                .ok_or_else(|| Error::Internal("--create before the input was opened".into()))?;
            let mut rec = Record::default();
            for block in &first.pending {
                let mut pos = 0;
                while pos < block.data.len() {
                    let Ok(next) = parser.parse(&block.data, pos, &mut rec) else {
                        break;
                    };
                    for (i, field) in rec.fields(&block.data).enumerate() {
                        if let Some(bytes) = field {
                            observe(i, Kind::of(&String::from_utf8_lossy(bytes), order));
                        }
                    }
                    pos = next;
                }
            }
        }
    }
    Ok(names
        .iter()
        .zip(kinds)
        .map(|(name, kind)| (name.clone(), kind.unwrap_or(Kind::Text).sql_type()))
        .collect())
}

/// What a text value looks like, from the narrowest type to text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Int,
    BigInt,
    Numeric,
    Float,
    Bool,
    Date,
    Timestamp,
    TimestampTz,
    Uuid,
    Json,
    Text,
}

impl Kind {
    fn sql_type(self) -> SqlType {
        match self {
            Kind::Int => SqlType::Integer,
            Kind::BigInt => SqlType::BigInt,
            Kind::Numeric => SqlType::Numeric(None),
            Kind::Float => SqlType::Double,
            Kind::Bool => SqlType::Boolean,
            Kind::Date => SqlType::Date,
            Kind::Timestamp => SqlType::Timestamp(None),
            Kind::TimestampTz => SqlType::TimestampTz(None),
            Kind::Uuid => SqlType::Uuid,
            Kind::Json => SqlType::Json,
            Kind::Text => SqlType::Text,
        }
    }

    /// The narrowest type that holds both.
    fn join(self, other: Kind) -> Kind {
        use Kind::*;
        match (self, other) {
            (a, b) if a == b => a,
            (Int | BigInt, Int | BigInt) => BigInt,
            (Int | BigInt | Numeric, Int | BigInt | Numeric) => Numeric,
            (Int | BigInt | Numeric | Float, Int | BigInt | Numeric | Float) => Float,
            (Date | Timestamp, Date | Timestamp) => Timestamp,
            _ => Text,
        }
    }

    /// What a text value reads as. Only types whose reading keeps the value: digits with a
    /// leading zero (`01234`, a zip code) are text, since a number would drop the zero.
    /// `order`: `--datestyle`'s, in which `31/12/2024` reads as a date (the load's encoders
    /// and sessions read it in that order too).
    fn of(text: &str, order: Option<DateOrder>) -> Kind {
        let unsigned = text.strip_prefix(['-', '+']).unwrap_or(text);
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        let zero_led = |s: &str| s.len() > 1 && s.starts_with('0');
        if digits(unsigned) && zero_led(unsigned) {
            return Kind::Text;
        }
        if digits(unsigned) {
            return match text.parse::<i64>() {
                Ok(v) if i32::try_from(v).is_ok() => Kind::Int,
                Ok(_) => Kind::BigInt,
                Err(_) => Kind::Numeric,
            };
        }
        if let Some((whole, fraction)) = unsigned.split_once('.') {
            if (whole.is_empty() || digits(whole)) && digits(fraction) {
                return match zero_led(whole) {
                    true => Kind::Text,
                    false => Kind::Numeric,
                };
            }
        }
        // Exponent forms (`1e3`), and what float8in reads besides digits.
        let whole = unsigned.split(['.', 'e', 'E']).next().unwrap_or_default();
        let exponent = unsigned.contains(['e', 'E'])
            && !zero_led(whole)
            && text.parse::<f64>().is_ok_and(f64::is_finite);
        let special = ["nan", "inf", "infinity"]
            .iter()
            .any(|w| unsigned.eq_ignore_ascii_case(w));
        if exponent || special {
            return Kind::Float;
        }
        // COPY's boolean spellings; `1` and `0` stay integers.
        let boolean = [
            "t", "f", "true", "false", "y", "n", "yes", "no", "on", "off",
        ];
        if boolean.iter().any(|w| text.eq_ignore_ascii_case(w)) {
            return Kind::Bool;
        }
        if text.starts_with(['{', '['])
            && serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok()
        {
            return Kind::Json;
        }
        let b = text.as_bytes();
        let date = |b: &[u8]| {
            b.len() >= 10
                && b[..4].iter().all(u8::is_ascii_digit)
                && b[4] == b'-'
                && b[5..7].iter().all(u8::is_ascii_digit)
                && b[7] == b'-'
                && b[8..10].iter().all(u8::is_ascii_digit)
        };
        if date(b) && b.len() == 10 {
            return Kind::Date;
        }
        if date(b) && b.len() >= 19 && (b[10] == b' ' || b[10] == b'T') {
            let time = &text[11..];
            let clock = time.len() >= 8
                && time.as_bytes()[2] == b':'
                && time.as_bytes()[5] == b':'
                && time[..8].bytes().filter(u8::is_ascii_digit).count() == 6;
            if clock {
                let rest = time[8..].trim_start_matches(|c: char| c == '.' || c.is_ascii_digit());
                if rest.is_empty() {
                    return Kind::Timestamp;
                }
                let zone = rest == "Z"
                    || (rest.starts_with(['+', '-'])
                        && rest[1..].bytes().all(|c| c.is_ascii_digit() || c == b':'));
                if zone {
                    return Kind::TimestampTz;
                }
            }
        }
        let uuid = b.len() == 36
            && b.iter().enumerate().all(|(i, c)| match i {
                8 | 13 | 18 | 23 => *c == b'-',
                _ => c.is_ascii_hexdigit(),
            });
        if uuid {
            return Kind::Uuid;
        }
        order.and_then(|o| slashed(text, o)).unwrap_or(Kind::Text)
    }
}

/// `31/12/2024` (`12/31/2024` in MDY), alone or with `HH:MM:SS[.fff]` after a space: a date or
/// a timestamp when day and month are those of a real date in `order`.
fn slashed(text: &str, order: DateOrder) -> Option<Kind> {
    let (date, time) = match text.split_once(' ') {
        Some((date, time)) => (date, Some(time)),
        None => (text, None),
    };
    let mut parts = date.split('/');
    let (first, second, year) = (parts.next()?, parts.next()?, parts.next()?);
    let digits = |s: &str, lens: std::ops::RangeInclusive<usize>| {
        lens.contains(&s.len()) && s.bytes().all(|b| b.is_ascii_digit())
    };
    if parts.next().is_some() || !digits(first, 1..=2) || !digits(second, 1..=2) {
        return None;
    }
    if !digits(year, 4..=4) {
        return None;
    }
    let (day, month) = match order {
        DateOrder::Dmy => (first, second),
        DateOrder::Mdy => (second, first),
        DateOrder::Ymd => return None,
    };
    let (day, month, year): (u32, u32, u32) =
        (day.parse().ok()?, month.parse().ok()?, year.parse().ok()?);
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return None,
    };
    if !(1..=days).contains(&day) {
        return None;
    }
    let Some(time) = time else {
        return Some(Kind::Date);
    };
    let b = time.as_bytes();
    let clock = b.len() >= 8
        && b[2] == b':'
        && b[5] == b':'
        && time[..8].bytes().filter(u8::is_ascii_digit).count() == 6
        && time[8..]
            .trim_start_matches('.')
            .bytes()
            .all(|c| c.is_ascii_digit())
        && (b.len() == 8 || b[8] == b'.');
    clock.then_some(Kind::Timestamp)
}

/// A JSON value's kind: objects and arrays as jsonb, numbers and `true`/`false` as themselves,
/// strings by their content, but never as a number or boolean: JSON has its own for those, so
/// a string (`"01234"`, `"1"`, `"yes"`) is text unless it is a date, timestamp or uuid.
fn json_kind(raw: &str, order: Option<DateOrder>) -> Option<Kind> {
    match raw.as_bytes().first()? {
        b'n' => None,
        b'{' | b'[' => Some(Kind::Json),
        b'"' => serde_json::from_str::<String>(raw)
            .ok()
            .map(|s| match Kind::of(&s, order) {
                Kind::Int
                | Kind::BigInt
                | Kind::Numeric
                | Kind::Float
                | Kind::Bool
                | Kind::Json => Kind::Text,
                kind => kind,
            }),
        _ => Some(Kind::of(raw, order)),
    }
}

/// The type an Arrow type's values are, for `--create`.
fn arrow_sql_type(data_type: &DataType) -> Option<SqlType> {
    Some(match data_type {
        DataType::Boolean => SqlType::Boolean,
        DataType::Int8 | DataType::Int16 | DataType::UInt8 => SqlType::SmallInt,
        DataType::Int32 | DataType::UInt16 => SqlType::Integer,
        DataType::Int64 | DataType::UInt32 => SqlType::BigInt,
        DataType::UInt64 => SqlType::Numeric(Some((20, 0))),
        DataType::Float16 | DataType::Float32 => SqlType::Real,
        DataType::Float64 => SqlType::Double,
        DataType::Decimal32(p, s)
        | DataType::Decimal64(p, s)
        | DataType::Decimal128(p, s)
        | DataType::Decimal256(p, s) => match u32::try_from(*s) {
            Ok(s) if *p <= 76 => SqlType::Numeric(Some((u32::from(*p), s))),
            _ => SqlType::Numeric(None),
        },
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => SqlType::Text,
        DataType::Binary
        | DataType::LargeBinary
        | DataType::BinaryView
        | DataType::FixedSizeBinary(_) => SqlType::Bytes,
        DataType::Date32 | DataType::Date64 => SqlType::Date,
        DataType::Time32(_) | DataType::Time64(_) => SqlType::Time(None),
        DataType::Timestamp(_, None) => SqlType::Timestamp(None),
        DataType::Timestamp(_, Some(_)) => SqlType::TimestampTz(None),
        DataType::Duration(_) | DataType::Interval(_) => SqlType::Interval,
        DataType::Dictionary(_, values) => return arrow_sql_type(values),
        DataType::List(item) | DataType::LargeList(item) | DataType::FixedSizeList(item, _) => {
            match item.data_type() {
                DataType::List(_) | DataType::LargeList(_) | DataType::Struct(_) => SqlType::Json,
                inner => SqlType::Array(Box::new(arrow_sql_type(inner)?)),
            }
        }
        DataType::Struct(_) | DataType::Map(..) => SqlType::Json,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The type a column of these values gets.
    fn kind(values: &[&str]) -> Option<SqlType> {
        values
            .iter()
            .map(|v| Kind::of(v, None))
            .reduce(Kind::join)
            .map(Kind::sql_type)
    }

    #[test]
    fn types_name_a_column_as_a_header_does_and_never_guess_between_two() {
        let columns = |names: &[&str]| -> Vec<(String, SqlType)> {
            names
                .iter()
                .map(|n| (n.to_string(), SqlType::Text))
                .collect()
        };
        let given = |t: &[(&str, &str)]| -> Vec<(String, String)> {
            t.iter()
                .map(|(n, t)| (n.to_string(), t.to_string()))
                .collect()
        };
        let ab = columns(&["a", "B"]);
        let types = given(&[("b", "int"), ("a", "date")]);
        assert_eq!(
            given_types(&ab, &types).unwrap(),
            [Some("date"), Some("int")]
        );
        let err = given_types(&ab, &given(&[("c", "int")])).unwrap_err();
        assert!(
            err.to_string().contains("no column \"c\" (it has: a, B)"),
            "{err}"
        );
        // Exact beats folded; two that differ only in case are not guessed between.
        let both = columns(&["id", "ID"]);
        let exact = given(&[("ID", "int")]);
        assert_eq!(given_types(&both, &exact).unwrap(), [None, Some("int")]);
        let err = given_types(&both, &given(&[("Id", "int")])).unwrap_err();
        assert_eq!(err.kind(), crate::Kind::Usage);
        assert!(
            err.to_string()
                .contains("2 columns that differ only in case"),
            "{err}"
        );
    }

    #[test]
    fn text_values_get_the_narrowest_type_that_holds_them() {
        assert_eq!(kind(&["1", "-20"]), Some(SqlType::Integer));
        assert_eq!(kind(&["1", "3000000000"]), Some(SqlType::BigInt));
        assert_eq!(kind(&["1", "2.50"]), Some(SqlType::Numeric(None)));
        assert_eq!(kind(&["1.5", "1e10"]), Some(SqlType::Double));
        assert_eq!(
            kind(&["99999999999999999999"]),
            Some(SqlType::Numeric(None))
        );
        assert_eq!(kind(&["true", "FALSE"]), Some(SqlType::Boolean));
        assert_eq!(
            kind(&["2024-01-02", "2024-01-02 03:04:05.5"]),
            Some(SqlType::Timestamp(None))
        );
        assert_eq!(
            kind(&["2024-01-02T03:04:05Z", "2024-01-02 03:04:05+02:00"]),
            Some(SqlType::TimestampTz(None))
        );
        assert_eq!(
            kind(&["a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"]),
            Some(SqlType::Uuid)
        );
        assert_eq!(kind(&["1", "x"]), Some(SqlType::Text));
        assert_eq!(kind(&["2024-13-45x"]), Some(SqlType::Text));
        assert_eq!(json_kind("{\"a\": 1}", None), Some(Kind::Json));
        assert_eq!(json_kind("\"2024-01-02\"", None), Some(Kind::Date));
        assert_eq!(json_kind("null", None), None);
    }

    #[test]
    fn slashed_dates_are_dates_in_the_order_datestyle_gives() {
        let of = |v: &str, order| Kind::of(v, Some(order)).sql_type();
        assert_eq!(of("31/12/2024", DateOrder::Dmy), SqlType::Date);
        assert_eq!(of("12/31/2024", DateOrder::Mdy), SqlType::Date);
        assert_eq!(of("31/12/2024", DateOrder::Mdy), SqlType::Text);
        assert_eq!(of("29/02/2023", DateOrder::Dmy), SqlType::Text);
        assert_eq!(of("29/02/2024", DateOrder::Dmy), SqlType::Date);
        assert_eq!(
            of("1/2/2024 10:00:00.5", DateOrder::Dmy),
            SqlType::Timestamp(None)
        );
        assert_eq!(of("1/2/2024 10:00", DateOrder::Dmy), SqlType::Text);
        assert_eq!(of("31/12/24", DateOrder::Dmy), SqlType::Text);
        assert_eq!(of("2024/12/31", DateOrder::Ymd), SqlType::Text);
        assert_eq!(Kind::of("31/12/2024", None).sql_type(), SqlType::Text);
        assert_eq!(
            json_kind("\"31/12/2024\"", Some(DateOrder::Dmy)),
            Some(Kind::Date)
        );
    }

    #[test]
    fn a_guess_never_changes_a_value() {
        // A leading zero would be dropped by a number: zip codes, account numbers stay text.
        assert_eq!(kind(&["01234", "00501"]), Some(SqlType::Text));
        assert_eq!(kind(&["12345", "00501"]), Some(SqlType::Text));
        assert_eq!(kind(&["-007"]), Some(SqlType::Text));
        assert_eq!(kind(&["00.5"]), Some(SqlType::Text));
        assert_eq!(kind(&["01e3"]), Some(SqlType::Text));
        assert_eq!(kind(&["0", "-0", "10"]), Some(SqlType::Integer));
        assert_eq!(kind(&["0.5", "-0.5", ".5"]), Some(SqlType::Numeric(None)));
        // COPY's boolean spellings, in any case; 1 and 0 stay integers.
        assert_eq!(
            kind(&["t", "F", "yes", "No", "on", "OFF", "y", "n"]),
            Some(SqlType::Boolean)
        );
        assert_eq!(kind(&["1", "0"]), Some(SqlType::Integer));
        assert_eq!(kind(&["t", "1"]), Some(SqlType::Text));
        assert_eq!(
            kind(&["1e3", "NaN", "Infinity", "-inf", "2.5"]),
            Some(SqlType::Double)
        );
        assert_eq!(kind(&["1e999"]), Some(SqlType::Text));
        // JSON objects and arrays in a CSV field, as in JSON lines; a PostgreSQL array is text.
        assert_eq!(kind(&["{\"a\": [1, 2]}", "[1, 2]"]), Some(SqlType::Json));
        assert_eq!(kind(&["{1,2}"]), Some(SqlType::Text));
        // A JSON string is never a number or a boolean; a JSON number and true/false are.
        assert_eq!(json_kind("\"01234\"", None), Some(Kind::Text));
        assert_eq!(json_kind("\"12\"", None), Some(Kind::Text));
        assert_eq!(json_kind("\"true\"", None), Some(Kind::Text));
        assert_eq!(json_kind("\"{}\"", None), Some(Kind::Text));
        assert_eq!(json_kind("12", None), Some(Kind::Int));
        assert_eq!(json_kind("1.5e3", None), Some(Kind::Float));
        assert_eq!(json_kind("false", None), Some(Kind::Bool));
    }

    #[test]
    fn arrow_types_map_to_the_types_that_hold_their_values() {
        use inrush_arrow::Field;
        use std::sync::Arc;
        assert_eq!(
            arrow_sql_type(&DataType::Decimal128(15, 2)),
            Some(SqlType::Numeric(Some((15, 2))))
        );
        let list = DataType::List(Arc::new(Field::new("item", DataType::Utf8, true)));
        assert_eq!(
            arrow_sql_type(&list),
            Some(SqlType::Array(Box::new(SqlType::Text)))
        );
        let dict = DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8View));
        assert_eq!(arrow_sql_type(&dict), Some(SqlType::Text));
        assert_eq!(
            arrow_sql_type(&DataType::UInt64),
            Some(SqlType::Numeric(Some((20, 0))))
        );
    }
}
