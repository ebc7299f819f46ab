//! One module per family of types: each turns the text of one field into the type's binary
//! send format (the bytes after the 4-byte length in a COPY BINARY tuple).

mod array;
mod boolean;
mod bytea;
mod cursor;
mod datetime;
mod float;
mod int;
mod interval;
mod json;
mod numeric;
mod text;
mod uuid;

pub use array::push_element as push_array_element;

use crate::Result;
use inrush_core::{ScalarType, ValueType};

/// Facts about the target session that change how text is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EncodeContext {
    /// `server_version_num`, e.g. 180001.
    pub server_version_num: u32,
    /// The session's TimeZone is UTC (or an alias with no offset ever), so a timestamptz without
    /// an explicit offset can be converted on the client.
    pub session_time_zone_is_utc: bool,
    /// DateStyle's field order, which decides how the server reads `01/02/2024` (never
    /// `2024-01-02`: a year of four digits written first is read first under every order).
    pub date_order: DateOrder,
}

/// The field order of DateStyle (its second part: `ISO, DMY`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DateOrder {
    /// Month, day, year: PostgreSQL's default.
    Mdy,
    Dmy,
    Ymd,
}

impl DateOrder {
    /// The order a `current_setting('DateStyle')` value says (the server always shows both
    /// parts, e.g. `ISO, MDY` or `German, DMY`).
    pub fn of_date_style(date_style: &str) -> DateOrder {
        let style = date_style.to_ascii_uppercase();
        if style.contains("DMY") {
            DateOrder::Dmy
        } else if style.contains("YMD") {
            DateOrder::Ymd
        } else {
            DateOrder::Mdy
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            DateOrder::Mdy => "MDY",
            DateOrder::Dmy => "DMY",
            DateOrder::Ymd => "YMD",
        }
    }

    /// The DateStyle that reads in this order and keeps ISO output.
    pub fn date_style(self) -> String {
        format!("ISO, {}", self.name())
    }
}

impl Default for EncodeContext {
    fn default() -> Self {
        EncodeContext {
            server_version_num: 180000,
            session_time_zone_is_utc: true,
            date_order: DateOrder::Mdy,
        }
    }
}

/// Appends the binary form of `text`, read as a value of `value_type` with modifier `typmod`,
/// to `out`. On error `out` may hold a partial value: the caller truncates.
pub fn encode_value(
    value_type: &ValueType,
    typmod: i32,
    text: &str,
    ctx: &EncodeContext,
    out: &mut Vec<u8>,
) -> Result<()> {
    match value_type {
        ValueType::Scalar { scalar } => encode_scalar(*scalar, typmod, text, ctx, out),
        ValueType::Array { elem, elem_oid } => {
            array::encode(*elem, *elem_oid, typmod, text, ctx, out)
        }
        ValueType::Unsupported => Err(crate::EncodeError::Deferred),
    }
}

pub(crate) fn encode_scalar(
    scalar: ScalarType,
    typmod: i32,
    text: &str,
    ctx: &EncodeContext,
    out: &mut Vec<u8>,
) -> Result<()> {
    match scalar {
        ScalarType::Bool => boolean::encode(text, out),
        ScalarType::Int2 => int::encode_int2(text, out),
        ScalarType::Int4 => int::encode_int4(text, out),
        ScalarType::Int8 => int::encode_int8(text, out),
        ScalarType::Float4 => float::encode_float4(text, out),
        ScalarType::Float8 => float::encode_float8(text, out),
        ScalarType::Numeric => numeric::encode(text, typmod, ctx, out),
        ScalarType::Text => text::encode_text(text, out),
        ScalarType::Varchar => text::encode_varchar(text, typmod, out),
        ScalarType::Bpchar => text::encode_bpchar(text, typmod, out),
        ScalarType::Bytea => bytea::encode(text, out),
        ScalarType::Date => datetime::encode_date(text, ctx, out),
        ScalarType::Time => datetime::encode_time(text, typmod, ctx, out),
        ScalarType::Timestamp => datetime::encode_timestamp(text, typmod, ctx, out),
        ScalarType::Timestamptz => datetime::encode_timestamptz(text, typmod, ctx, out),
        ScalarType::Interval => interval::encode(text, typmod, ctx, out),
        ScalarType::Uuid => uuid::encode(text, out),
        ScalarType::Json => json::encode_json(text, out),
        ScalarType::Jsonb => json::encode_jsonb(text, out),
    }
}

/// The value of one hexadecimal digit, either case.
pub(crate) fn hex_digit(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// PostgreSQL's `scanner_isspace`/`isspace` set, used by most input functions to trim.
pub(crate) fn is_pg_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// `text` without the leading and trailing whitespace input functions ignore.
pub(crate) fn trim_pg_space(text: &str) -> &str {
    text.trim_matches(|c: char| c.is_ascii() && is_pg_space(c as u8))
}

/// Seeded random texts over `alphabet`, for the encoders' never-panic tests.
#[cfg(test)]
pub(crate) fn random_texts(
    alphabet: &'static [u8],
    seed: u64,
    count: usize,
    max_len: u64,
) -> impl Iterator<Item = String> {
    let mut seed = seed;
    (0..count).map(move |_| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let len = (seed % max_len) as usize;
        let mut x = seed;
        (0..len)
            .map(|_| {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                alphabet[(x >> 33) as usize % alphabet.len()] as char
            })
            .collect()
    })
}
