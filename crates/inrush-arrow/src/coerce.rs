//! How one Arrow column goes into one target column.
//!
//! [`Coercion::new`] checks the pair once and picks a path; [`Coercion::prepare`] binds it to a
//! batch's column array, and [`Prepared::encode`] then writes each value's binary COPY form.
//! For a column with no nulls and no dictionary, `prepare` also picks the whole per-value body
//! of the common pairs (integers of their own width, Decimal128, Date32, strings), so that a
//! lineitem value costs one match rather than a look at the path, the array and the validity.
//! The reference is always the value's text form ([`Prepared::text`]) read by
//! [`encode_value`]; the direct paths give the same bytes (the equivalence tests compare them
//! on generated values) and defer where `encode_value` would.
use crate::render::{self, Style, TextForms};
use crate::{Error, Result};
use arrow_array::Array;
use arrow_schema::{DataType, Field, TimeUnit};
use inrush_core::TargetColumn;
use inrush_encode::{
    encode_value, ColumnEncoder, EncodeContext, EncodeError, ScalarType, ValueType,
};
use std::cell::RefCell;

/// How one Arrow column goes into one target column; decided once, before any row is read.
#[derive(Debug, Clone)]
pub struct Coercion {
    value_type: ValueType,
    typmod: i32,
    /// The target type's text reader, chosen once (strings may hold a NUL: it checks).
    encoder: ColumnEncoder,
    /// The same reader without the NUL search, for a batch whose string bytes hold none.
    nul_free_encoder: ColumnEncoder,
    path: Path,
    style: Style,
}

/// The way values are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Path {
    /// Any integer into int2/int4/int8: range check, then the big-endian bytes.
    Int {
        width: u8,
    },
    Float4,
    Float8,
    /// Strings: their text is the value, read by `encode_value` with no copy.
    Str,
    /// Binary (not fixed-size) into anything but bytea: Parquet writers that predate the UTF8
    /// annotation store strings as plain byte arrays, so the bytes are read as UTF-8 text.
    BinaryText,
    Bool,
    /// Binary into bytea: the bytes are the value.
    Bytes,
    /// 16-byte fixed-size binary into uuid.
    Uuid,
    /// Date32 into date.
    Date,
    /// Timestamps into timestamp or timestamptz; `local` when the text form has no offset and
    /// the target is timestamptz (only exact on the client in a UTC session).
    Timestamp {
        unit: TimeUnit,
        local: bool,
    },
    /// Time32/Time64 into time.
    Time {
        unit: TimeUnit,
    },
    /// Integers and Decimal32/64/128 with a scale >= 0 into numeric, when the column's typmod
    /// keeps every digit (its scale is at least the Arrow scale): shown with `dscale` digits.
    /// Values of `limit` or more in magnitude overflow the precision and take the text path.
    Numeric {
        scale: u32,
        dscale: u32,
        limit: Option<u128>,
    },
    /// Render the text form and read it with `encode_value`.
    Text,
    /// The target has no binary encoder: always the server's input function.
    Server,
}

thread_local! {
    /// The text form of the value being encoded on the [`Path::Text`] path, reused.
    static SCRATCH: RefCell<String> = const { RefCell::new(String::new()) };
}

impl Coercion {
    /// Values of `field` as their text forms, for a target that reads text: PostgreSQL's, but
    /// for those `forms` gives the target's own.
    pub fn text(field: &Field, column: &TargetColumn, forms: TextForms) -> Result<Coercion> {
        let mut coercion = Coercion::new(field, column, &ValueType::Unsupported, -1)?;
        coercion.style.forms = forms;
        Ok(coercion)
    }

    /// Values of `field` in PostgreSQL's binary form of `value_type` with `typmod` applied
    /// (text forms for [`ValueType::Unsupported`]). Err names the column and both types when
    /// no value could ever fit (e.g. Boolean into date, Struct into int).
    pub fn new(
        field: &Field,
        column: &TargetColumn,
        value_type: &ValueType,
        typmod: i32,
    ) -> Result<Coercion> {
        let dt = render::value_type(field.data_type());
        let incompatible = || Error::Incompatible {
            column: column.name.clone(),
            arrow_type: field.data_type().to_string(),
            target: column.type_sql.clone(),
            why: None,
        };
        if !render::renderable(dt) {
            return Err(incompatible());
        }
        let (path, style) = match value_type {
            ValueType::Scalar { scalar } => {
                if !scalar_fits(dt, *scalar) {
                    return Err(incompatible());
                }
                (scalar_path(dt, *scalar, typmod), style_for(*scalar))
            }
            ValueType::Array { elem, .. } => {
                let fits = if render::is_string(dt) || *dt == DataType::Null {
                    true
                } else {
                    match render::list_child(dt) {
                        Some(child) => elements_fit(child, *elem),
                        None => false,
                    }
                };
                if !fits {
                    return Err(incompatible());
                }
                let path = if render::is_string(dt) {
                    Path::Str
                } else {
                    Path::Text
                };
                (path, style_for(*elem))
            }
            ValueType::Unsupported => (Path::Server, Style::default()),
        };
        Ok(Coercion {
            value_type: value_type.clone(),
            typmod,
            encoder: ColumnEncoder::new(value_type, typmod, false),
            nul_free_encoder: ColumnEncoder::new(value_type, typmod, true),
            path,
            style,
        })
    }

    /// The reference path: render the text form, read it with `encode_value`.
    fn encode_text(
        &self,
        array: &dyn Array,
        row: usize,
        ctx: &EncodeContext,
        out: &mut Vec<u8>,
    ) -> Result<(), EncodeError> {
        SCRATCH.with(|scratch| {
            let mut text = scratch.borrow_mut();
            text.clear();
            self.write_text(array, row, &mut text);
            encode_value(&self.value_type, self.typmod, &text, ctx, out)
        })
    }

    /// The text form of non-null row `row` of `array`.
    fn write_text(&self, array: &dyn Array, row: usize, buf: &mut String) {
        if self.path == Path::BinaryText {
            let (array, row) = render::resolve(array, row);
            if let Some(b) = render::bytes_value(array, row) {
                // Only invalid text is lossy here, and encode refuses it.
                buf.push_str(&String::from_utf8_lossy(b));
            }
            return;
        }
        match self.value_type {
            ValueType::Array { .. } => render::list_literal(array, row, self.style, buf),
            _ => render::value_text(array, row, self.style, buf),
        }
    }
}

fn style_for(scalar: ScalarType) -> Style {
    Style {
        json: matches!(scalar, ScalarType::Json | ScalarType::Jsonb),
        uuid: scalar == ScalarType::Uuid,
        integer: matches!(
            scalar,
            ScalarType::Int2 | ScalarType::Int4 | ScalarType::Int8
        ),
        ..Style::default()
    }
}

fn is_int(dt: &DataType) -> bool {
    dt.is_integer()
}

fn is_decimal(dt: &DataType) -> bool {
    matches!(
        dt,
        DataType::Decimal32(_, _)
            | DataType::Decimal64(_, _)
            | DataType::Decimal128(_, _)
            | DataType::Decimal256(_, _)
    )
}

fn is_binary(dt: &DataType) -> bool {
    matches!(
        dt,
        DataType::Binary
            | DataType::LargeBinary
            | DataType::BinaryView
            | DataType::FixedSizeBinary(_)
    )
}

fn is_nested(dt: &DataType) -> bool {
    render::is_list(dt) || matches!(dt, DataType::Struct(_) | DataType::Map(_, _))
}

/// Whether some value of Arrow type `dt` (a dictionary's value type) could go into `scalar`.
/// Strings go anywhere: their text is read by the type's input function, as from CSV.
fn scalar_fits(dt: &DataType, scalar: ScalarType) -> bool {
    use ScalarType as S;
    if render::is_string(dt) || *dt == DataType::Null {
        return true;
    }
    if is_binary(dt) && !matches!(dt, DataType::FixedSizeBinary(_)) {
        return true;
    }
    match scalar {
        S::Bool => *dt == DataType::Boolean,
        // Floats too: pandas writes integer columns with missing values as float64. Whole
        // values load ("3"), others are refused by the integer input as COPY would ("3.5").
        S::Int2 | S::Int4 | S::Int8 => {
            is_int(dt) || is_decimal(dt) || matches!(dt, DataType::Float32 | DataType::Float64)
        }
        S::Float4 | S::Float8 | S::Numeric => {
            is_int(dt) || is_decimal(dt) || matches!(dt, DataType::Float32 | DataType::Float64)
        }
        S::Text | S::Varchar | S::Bpchar => !is_nested(dt),
        S::Bytea => is_binary(dt),
        S::Date => matches!(
            dt,
            DataType::Date32 | DataType::Date64 | DataType::Timestamp(_, _)
        ),
        S::Time => matches!(dt, DataType::Time32(_) | DataType::Time64(_)),
        S::Timestamp | S::Timestamptz => matches!(
            dt,
            DataType::Timestamp(_, _) | DataType::Date32 | DataType::Date64
        ),
        S::Interval => matches!(dt, DataType::Duration(_) | DataType::Interval(_)),
        S::Uuid => *dt == DataType::FixedSizeBinary(16),
        S::Json | S::Jsonb => true,
    }
}

/// Whether list elements of type `dt` fit an array of `elem`; nested lists are further
/// dimensions (PostgreSQL arrays are not limited to one).
fn elements_fit(dt: &DataType, elem: ScalarType) -> bool {
    let dt = render::value_type(dt);
    if matches!(elem, ScalarType::Json | ScalarType::Jsonb) {
        return true;
    }
    match render::list_child(dt) {
        Some(child) => elements_fit(child, elem),
        None => scalar_fits(dt, elem),
    }
}

fn scalar_path(dt: &DataType, scalar: ScalarType, typmod: i32) -> Path {
    use ScalarType as S;
    if render::is_string(dt) {
        return Path::Str;
    }
    match (dt, scalar) {
        (DataType::Binary | DataType::LargeBinary | DataType::BinaryView, s) if s != S::Bytea => {
            Path::BinaryText
        }
        (dt, S::Int2) if is_int(dt) => Path::Int { width: 2 },
        (dt, S::Int4) if is_int(dt) => Path::Int { width: 4 },
        (dt, S::Int8) if is_int(dt) => Path::Int { width: 8 },
        (DataType::Float32, S::Float4) => Path::Float4,
        (DataType::Float64, S::Float8) => Path::Float8,
        (DataType::Boolean, S::Bool) => Path::Bool,
        (DataType::Binary | DataType::LargeBinary | DataType::BinaryView, S::Bytea) => Path::Bytes,
        (DataType::FixedSizeBinary(_), S::Bytea) => Path::Bytes,
        (DataType::FixedSizeBinary(16), S::Uuid) => Path::Uuid,
        (DataType::Date32, S::Date) => Path::Date,
        (DataType::Timestamp(unit, _), S::Timestamp) => Path::Timestamp {
            unit: *unit,
            local: false,
        },
        (DataType::Timestamp(unit, tz), S::Timestamptz) => Path::Timestamp {
            unit: *unit,
            local: tz.is_none(),
        },
        (DataType::Time32(unit) | DataType::Time64(unit), S::Time) => Path::Time { unit: *unit },
        (dt, S::Numeric) => numeric_path(dt, typmod).unwrap_or(Path::Text),
        _ => Path::Text,
    }
}

/// The direct numeric path, when every value is kept exactly (no typmod rounding).
fn numeric_path(dt: &DataType, typmod: i32) -> Option<Path> {
    let scale: u32 = match dt {
        dt if is_int(dt) => 0,
        DataType::Decimal32(_, s) | DataType::Decimal64(_, s) | DataType::Decimal128(_, s) => {
            u32::try_from(*s).ok()?
        }
        _ => return None,
    };
    if typmod < 4 {
        return Some(Path::Numeric {
            scale,
            dscale: scale,
            limit: None,
        });
    }
    // numeric(p,s): typmod is ((p << 16) | s) + 4; scales above 1000 are PostgreSQL 15's
    // negative scales, left to the text path as encode_value leaves them to the server.
    let m = typmod - 4;
    let precision = ((m >> 16) & 0xffff) as u32;
    let target_scale = (m & 0xffff) as u32;
    if !(1..=1000).contains(&precision) || target_scale > 1000 || target_scale < scale {
        return None;
    }
    // At most precision - scale integer digits: |v| < 10^(precision - target_scale + scale).
    let limit = 10u128.checked_pow(precision - target_scale + scale);
    Some(Path::Numeric {
        scale,
        dscale: target_scale,
        limit,
    })
}

/// `numeric_send` of `v * 10^-scale` shown with `dscale` (>= `scale`) fractional digits:
/// ndigits, weight, sign, dscale, then base-10000 digits without leading or trailing zero
/// groups. False (nothing written) when the scaled value does not fit in 128 bits.
fn encode_numeric(v: i128, scale: u32, dscale: u32, out: &mut Vec<u8>) -> bool {
    // Align the decimal point to a group boundary: 4 * frac_groups fractional digits.
    let frac_groups = dscale.div_ceil(4);
    let shift = frac_groups * 4 - scale;
    let abs = v.unsigned_abs();
    // Least significant group first; 128 bits hold at most 39 digits, 10 groups.
    let mut groups = [0u16; 10];
    let mut n = 0;
    // 128-bit arithmetic is slow; most values fit 64 bits.
    let small = match (u64::try_from(abs), 10u64.checked_pow(shift)) {
        (Ok(a), Some(p)) => a.checked_mul(p),
        _ => None,
    };
    if let Some(mut m) = small {
        while m > 0 {
            groups[n] = (m % 10_000) as u16;
            m /= 10_000;
            n += 1;
        }
    } else {
        let Some(mut m) = 10u128.checked_pow(shift).and_then(|p| abs.checked_mul(p)) else {
            return false;
        };
        while m > 0 {
            groups[n] = (m % 10_000) as u16;
            m /= 10_000;
            n += 1;
        }
    }
    let low = groups[..n].iter().position(|&g| g != 0).unwrap_or(n);
    let ndigits = n - low;
    let (weight, sign) = if ndigits == 0 {
        (0i16, 0u16)
    } else {
        (
            n as i16 - 1 - frac_groups as i16,
            if v < 0 { 0x4000 } else { 0 },
        )
    };
    let mut buf = [0u8; 8 + 2 * 10];
    buf[0..2].copy_from_slice(&(ndigits as u16).to_be_bytes());
    buf[2..4].copy_from_slice(&weight.to_be_bytes());
    buf[4..6].copy_from_slice(&sign.to_be_bytes());
    buf[6..8].copy_from_slice(&(dscale as u16).to_be_bytes());
    for (i, g) in groups[low..n].iter().rev().enumerate() {
        buf[8 + 2 * i..10 + 2 * i].copy_from_slice(&g.to_be_bytes());
    }
    // The whole buffer then a truncate: a fixed-size copy is inlined, one of `ndigits` a
    // memcpy call (4% of a Parquet lineitem load's CPU, four numeric columns a row).
    out.extend_from_slice(&buf);
    out.truncate(out.len() - 2 * (10 - ndigits));
    true
}

/// What the server says of bytes that are not UTF-8 (`report_invalid_encoding`): the bad
/// sequence's bytes, as many as its first byte announces.
fn invalid_utf8(bad: &[u8]) -> EncodeError {
    let first = bad.first().copied().unwrap_or(0);
    let len = match first {
        b if b & 0x80 == 0 => 1,
        b if b & 0xe0 == 0xc0 => 2,
        b if b & 0xf0 == 0xe0 => 3,
        b if b & 0xf8 == 0xf0 => 4,
        _ => 1,
    };
    let shown: Vec<String> = bad.iter().take(len).map(|b| format!("0x{b:02x}")).collect();
    EncodeError::Refused(format!(
        "invalid byte sequence for encoding \"UTF8\": {}",
        shown.join(" ")
    ))
}

/// An integer into int2/int4/int8, with the server's out-of-range wording.
#[inline]
fn encode_int(v: i128, width: u8, out: &mut Vec<u8>) -> Result<(), EncodeError> {
    let out_of_range =
        |name: &str| EncodeError::Refused(format!("value \"{v}\" is out of range for type {name}"));
    match width {
        2 => {
            let v = i16::try_from(v).map_err(|_| out_of_range("smallint"))?;
            out.extend_from_slice(&v.to_be_bytes());
        }
        4 => {
            let v = i32::try_from(v).map_err(|_| out_of_range("integer"))?;
            out.extend_from_slice(&v.to_be_bytes());
        }
        _ => {
            let v = i64::try_from(v).map_err(|_| out_of_range("bigint"))?;
            out.extend_from_slice(&v.to_be_bytes());
        }
    }
    Ok(())
}

mod prepared;
pub use prepared::Prepared;

#[cfg(test)]
mod tests;
