//! One module per family of types: each turns the text of one field into the type's binary
//! send format (the bytes after the 4-byte length in a COPY BINARY tuple).

mod array;
mod boolean;
pub use boolean::boolin;
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
use crate::{ScalarType, ValueType};

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
    scalar_encoder(scalar, false)(text, typmod, ctx, out)
}

/// A scalar type's encoder: text, typmod, session, output.
type ScalarFn = fn(&str, i32, &EncodeContext, &mut Vec<u8>) -> Result<()>;

/// The encoder of `scalar`; with `nul_free`, the text types skip their NUL check (the caller
/// vouches that no value holds one).
fn scalar_encoder(scalar: ScalarType, nul_free: bool) -> ScalarFn {
    match scalar {
        ScalarType::Bool => |t, _, _, out| boolean::encode(t, out),
        ScalarType::Int2 => |t, _, _, out| int::encode_int2(t, out),
        ScalarType::Int4 => |t, _, _, out| int::encode_int4(t, out),
        ScalarType::Int8 => |t, _, _, out| int::encode_int8(t, out),
        ScalarType::Float4 => |t, _, _, out| float::encode_float4(t, out),
        ScalarType::Float8 => |t, _, _, out| float::encode_float8(t, out),
        ScalarType::Numeric => numeric::encode,
        ScalarType::Text if nul_free => |t, _, _, out| text::text(t, out),
        ScalarType::Text => |t, _, _, out| text::encode_text(t, out),
        ScalarType::Varchar if nul_free => |t, typmod, _, out| text::varchar(t, typmod, out),
        ScalarType::Varchar => |t, typmod, _, out| text::encode_varchar(t, typmod, out),
        ScalarType::Bpchar if nul_free => |t, typmod, _, out| text::bpchar(t, typmod, out),
        ScalarType::Bpchar => |t, typmod, _, out| text::encode_bpchar(t, typmod, out),
        ScalarType::Bytea => |t, _, _, out| bytea::encode(t, out),
        ScalarType::Date => |t, _, ctx, out| datetime::encode_date(t, ctx, out),
        ScalarType::Time => datetime::encode_time,
        ScalarType::Timestamp => datetime::encode_timestamp,
        ScalarType::Timestamptz => datetime::encode_timestamptz,
        ScalarType::Interval => interval::encode,
        ScalarType::Uuid => |t, _, _, out| uuid::encode(t, out),
        ScalarType::Json => |t, _, _, out| json::encode_json(t, out),
        ScalarType::Jsonb => |t, _, _, out| json::encode_jsonb(t, out),
    }
}

/// One column's encoder, chosen once: a scalar costs one indirect call per value instead of
/// [`encode_value`]'s two `match`es. Same bytes and answers as [`encode_value`].
#[derive(Debug, Clone)]
pub struct ColumnEncoder {
    value_type: ValueType,
    typmod: i32,
    scalar: Option<ScalarFn>,
}

impl ColumnEncoder {
    /// `nul_free`: the caller has checked that no value it passes holds a NUL byte (CSV fields
    /// of a block checked whole), so text types need not look again.
    pub fn new(value_type: &ValueType, typmod: i32, nul_free: bool) -> Self {
        let scalar = match value_type {
            ValueType::Scalar { scalar } => Some(scalar_encoder(*scalar, nul_free)),
            ValueType::Array { .. } | ValueType::Unsupported => None,
        };
        ColumnEncoder {
            value_type: value_type.clone(),
            typmod,
            scalar,
        }
    }

    /// As [`encode_value`] for this column's type and typmod.
    #[inline]
    pub fn encode(&self, text: &str, ctx: &EncodeContext, out: &mut Vec<u8>) -> Result<()> {
        match self.scalar {
            Some(encode) => encode(text, self.typmod, ctx, out),
            None => encode_value(&self.value_type, self.typmod, text, ctx, out),
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::EncodeError;
    use ScalarType::*;

    #[test]
    fn column_encoders_answer_as_encode_value() {
        let scalars = [
            Bool,
            Int2,
            Int4,
            Int8,
            Float4,
            Float8,
            Numeric,
            Text,
            Varchar,
            Bpchar,
            Bytea,
            Date,
            Time,
            Timestamp,
            Timestamptz,
            Interval,
            Uuid,
            Json,
            Jsonb,
        ];
        let texts = [
            "",
            " 42 ",
            "-7",
            "1.5",
            "t",
            "abc",
            "abc  ",
            "a\0b",
            "\0",
            "2024-01-02",
            "2024-02-30",
            "10:00:01.5",
            "2024-01-02 10:00+05",
            "1 day",
            "{\"a\": 1}",
            "0123456789abcdef0123456789abcdef",
            "\\x00ff",
            "héllo wörld",
            "{1,2}",
        ];
        // -1, varchar/char(4), numeric(15,2), and a time precision.
        let typmods = [-1, 8, (15 << 16 | 2) + 4, 3];
        let ctx = EncodeContext::default();
        let run = |f: &dyn Fn(&mut Vec<u8>) -> Result<()>| {
            let mut out = Vec::new();
            f(&mut out).map(|()| out)
        };
        for scalar in scalars {
            let value_type = ValueType::Scalar { scalar };
            for typmod in typmods {
                for nul_free in [false, true] {
                    let encoder = ColumnEncoder::new(&value_type, typmod, nul_free);
                    for text in texts.iter().filter(|t| !nul_free || !t.contains('\0')) {
                        let reference =
                            run(&|out| encode_value(&value_type, typmod, text, &ctx, out));
                        let column = run(&|out| encoder.encode(text, &ctx, out));
                        assert_eq!(column, reference, "{scalar:?}({typmod}) {text:?}");
                    }
                }
            }
        }
        // Without the caller's word, a NUL still defers.
        let text = ColumnEncoder::new(&ValueType::Scalar { scalar: Text }, -1, false);
        assert_eq!(
            text.encode("a\0b", &ctx, &mut Vec::new()),
            Err(EncodeError::Deferred)
        );
    }
}
