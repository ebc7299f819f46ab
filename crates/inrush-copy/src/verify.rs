//! `--verify`: each table's rows on both sides reduced to a count and a checksum that does not
//! depend on their order, compared. Both sides are read as the CSV every [`QueryServer`]
//! writes, and each value is first put in one canonical text for its type, since two engines
//! print one value differently (`t` and `1`, `120.5` and `120.50`, a time's zone, a JSON
//! object's key order and spacing, a `CHAR`'s padding). The source is read from the copy's own
//! image, so writes it took during the copy do not count as differences.

use inrush_core::query::QueryServer;
use inrush_core::SqlType;
use inrush_load::Error;
use inrush_read::csv::{CsvOptions, Record, RecordParser, Splitter};
use serde::Serialize;
use std::hash::{Hash, Hasher};

/// A table's rows, reduced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Digest {
    pub rows: u64,
    /// The wrapping sum of each row's hash: the same for the same rows in any order.
    pub checksum: u64,
}

/// The digest of `sql`'s rows on `server`, each value canonical for its column's type.
pub fn digest(server: &dyn QueryServer, sql: &str, types: &[SqlType]) -> Result<Digest, Error> {
    let reader = server.csv(sql)?;
    let csv = CsvOptions::default();
    let mut splitter = Splitter::new(reader, sql, csv.clone(), 1 << 20);
    let eol = splitter.eol()?;
    splitter.take_first_record()?; // the header
    let parser = RecordParser::new(csv, eol);
    let mut digest = Digest {
        rows: 0,
        checksum: 0,
    };
    let mut record = Record::default();
    let mut text = Vec::new();
    for block in splitter {
        let block = block?;
        let data = &block.data[..];
        let mut at = 0;
        while at < data.len() {
            at = parser
                .parse(data, at, &mut record)
                .map_err(|e| Error::Internal(format!("verifying: {sql}: {e}")))?;
            // SipHash with fixed keys: the same in both reads of one process.
            let mut row = std::hash::DefaultHasher::new();
            for (i, field) in record.fields(data).enumerate() {
                match field {
                    None => row.write_u8(0),
                    Some(value) => {
                        text.clear();
                        canonical(types.get(i).unwrap_or(&SqlType::Text), value, &mut text);
                        row.write_u8(1);
                        text.hash(&mut row);
                    }
                }
            }
            digest.rows += 1;
            digest.checksum = digest.checksum.wrapping_add(row.finish());
        }
    }
    Ok(digest)
}

/// One value's canonical text for `sql_type` (see the module's documentation); a value it
/// cannot read stays as it is, so it still differs where it differs.
fn canonical(sql_type: &SqlType, value: &[u8], out: &mut Vec<u8>) {
    let Ok(text) = std::str::from_utf8(value) else {
        out.extend_from_slice(value);
        return;
    };
    let made = match sql_type {
        SqlType::Boolean => {
            inrush_encode::boolin(text).map(|b| if b { "t" } else { "f" }.to_string())
        }
        SqlType::SmallInt | SqlType::Integer | SqlType::BigInt => {
            text.trim().parse::<i128>().ok().map(|n| n.to_string())
        }
        SqlType::Numeric(_) => Some(decimal(text.trim())),
        SqlType::Real => text.trim().parse::<f32>().ok().map(|f| format!("{f:?}")),
        SqlType::Double => text.trim().parse::<f64>().ok().map(|f| format!("{f:?}")),
        SqlType::Timestamp(_) | SqlType::Time(_) => Some(fraction_trimmed(&text.replace('T', " "))),
        SqlType::TimestampTz(_) => {
            instant(text).or_else(|| Some(fraction_trimmed(&text.replace('T', " "))))
        }
        SqlType::Char(_) => Some(text.trim_end_matches(' ').to_string()),
        SqlType::Bytes | SqlType::Uuid => Some(text.to_ascii_lowercase()),
        SqlType::Json => json(text),
        _ => None,
    };
    match made {
        Some(made) => out.extend_from_slice(made.as_bytes()),
        None => out.extend_from_slice(value),
    }
}

/// `+012.500` and `12.5` alike: no sign for zero, no leading or trailing zeros.
fn decimal(text: &str) -> String {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    if !digits.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return text.to_string(); // NaN, Infinity, an exponent: as printed
    }
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
    let whole = whole.trim_start_matches('0');
    let fraction = fraction.trim_end_matches('0');
    let mut out = String::new();
    if negative && !(whole.is_empty() && fraction.is_empty()) {
        out.push('-');
    }
    out.push_str(if whole.is_empty() { "0" } else { whole });
    if !fraction.is_empty() {
        out.push('.');
        out.push_str(fraction);
    }
    out
}

/// A time's fraction without its trailing zeros (`12:00:00.500000` as `12:00:00.5`).
fn fraction_trimmed(text: &str) -> String {
    match text.split_once('.') {
        Some((whole, fraction)) => {
            let digits = fraction.len()
                - fraction
                    .trim_start_matches(|c: char| c.is_ascii_digit())
                    .len();
            let (number, rest) = fraction.split_at(digits);
            let number = number.trim_end_matches('0');
            match number.is_empty() {
                true => format!("{whole}{rest}"),
                false => format!("{whole}.{number}{rest}"),
            }
        }
        None => text.to_string(),
    }
}

/// An instant `YYYY-MM-DD HH:MM:SS[.f][+-HH[:MM[:SS]]]` as seconds since 1970 in UTC, with
/// its fraction: the same instant printed in two zones reads the same.
fn instant(text: &str) -> Option<String> {
    let text = text.trim();
    let zone_at = text.rfind(['+', '-']).filter(|&i| i > 10)?;
    let (local, zone) = text.split_at(zone_at);
    let (date, time) = local.trim().split_once([' ', 'T'])?;
    let mut date_parts = date.split('-');
    let year: i64 = date_parts.next()?.parse().ok()?;
    let month: u32 = date_parts.next()?.parse().ok()?;
    let day: u32 = date_parts.next()?.parse().ok()?;
    let (clock, fraction) = time.split_once('.').unwrap_or((time, ""));
    let mut clock_parts = clock.split(':').map(|p| p.parse::<i64>().ok());
    let seconds_of_day = clock_parts.next()?? * 3600
        + clock_parts.next()?? * 60
        + clock_parts.next().flatten().unwrap_or(0);
    let sign = if zone.starts_with('-') { -1 } else { 1 };
    let mut zone_parts = zone[1..].split(':').map(|p| p.parse::<i64>().ok());
    let offset = zone_parts.next()?? * 3600
        + zone_parts.next().flatten().unwrap_or(0) * 60
        + zone_parts.next().flatten().unwrap_or(0);
    let days = inrush_core::calendar::days_from_civil(year, month, day);
    let seconds = days * 86_400 + seconds_of_day - sign * offset;
    let fraction = fraction.trim_end_matches('0');
    Some(match fraction.is_empty() {
        true => seconds.to_string(),
        false => format!("{seconds}.{fraction}"),
    })
}

/// JSON with its keys sorted and no spacing (how `jsonb` and MariaDB print an object differ).
fn json(text: &str) -> Option<String> {
    serde_json::from_str::<serde_json::Value>(text)
        .ok()
        .map(|v| v.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canon(sql_type: SqlType, value: &str) -> String {
        let mut out = Vec::new();
        canonical(&sql_type, value.as_bytes(), &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn one_value_printed_by_two_engines_reads_the_same() {
        let same = [
            (SqlType::Boolean, "t", "1"),
            (SqlType::Boolean, "false", "0"),
            (SqlType::Integer, "0042", "42"),
            (SqlType::Numeric(Some((10, 2))), "120.50", "120.5"),
            (SqlType::Numeric(None), "-0.00", "0"),
            (SqlType::Numeric(None), "+007.10", "7.1"),
            (SqlType::Double, "1e+300", "1e300"),
            (SqlType::Real, "1.5", "1.50"),
            (
                SqlType::Timestamp(None),
                "2024-01-02 03:04:05.500000",
                "2024-01-02T03:04:05.5",
            ),
            (
                SqlType::Timestamp(None),
                "2024-01-02 03:04:05.000",
                "2024-01-02 03:04:05",
            ),
            (
                SqlType::TimestampTz(None),
                "2024-06-01 14:00:00+02",
                "2024-06-01 12:00:00+00",
            ),
            (
                SqlType::TimestampTz(None),
                "2024-06-01 06:30:00.25-05:30",
                "2024-06-01 12:00:00.250+00",
            ),
            (
                SqlType::TimestampTz(None),
                "2024-06-01 12:00:00.500000",
                "2024-06-01 12:00:00.5",
            ),
            (SqlType::Char(5), "ab   ", "ab"),
            (SqlType::Bytes, "\\x00FF", "\\x00ff"),
            (
                SqlType::Json,
                "{\"b\": 1, \"a\": [1, 2]}",
                "{\"a\":[1,2],\"b\":1}",
            ),
        ];
        for (sql_type, one, other) in same {
            assert_eq!(
                canon(sql_type.clone(), one),
                canon(sql_type, other),
                "{one} / {other}"
            );
        }
        let differ = [
            (SqlType::Numeric(None), "1.5", "1.50001"),
            (
                SqlType::TimestampTz(None),
                "2024-06-01 12:00:00+01",
                "2024-06-01 12:00:00+00",
            ),
            (SqlType::Text, "a ", "a"),
            (SqlType::Boolean, "t", "f"),
        ];
        for (sql_type, one, other) in differ {
            assert_ne!(
                canon(sql_type.clone(), one),
                canon(sql_type, other),
                "{one} / {other}"
            );
        }
    }
}
