//! How one Arrow column goes into one target column.
//!
//! [`Coercion::new`] checks the pair once and picks a path; [`Coercion::encode`] then writes each
//! value's binary COPY form. The reference is always the value's text form
//! ([`Coercion::text`]) read by [`encode_value`]; the direct paths below give the same bytes
//! (the equivalence tests compare them on generated values) and defer where `encode_value`
//! would.
use crate::render::{self, Style};
use crate::time;
use crate::{Error, Result};
use arrow_array::cast::AsArray;
use arrow_array::types::{Date32Type, Float32Type, Float64Type};
use arrow_array::Array;
use arrow_schema::{DataType, Field, TimeUnit};
use inrush_core::{ScalarType, TargetColumn, ValueType};
use inrush_encode::{encode_value, EncodeContext, EncodeError};
use std::cell::RefCell;

/// How one Arrow column goes into one target column; decided once, before any row is read.
#[derive(Debug, Clone)]
pub struct Coercion {
    value_type: ValueType,
    typmod: i32,
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
    /// Err names the column and both types when no value could ever fit (e.g. Boolean into
    /// date, Struct into int).
    pub fn new(field: &Field, column: &TargetColumn) -> Result<Coercion> {
        let dt = render::value_type(field.data_type());
        let incompatible = || Error::Incompatible {
            column: column.name.clone(),
            arrow_type: field.data_type().to_string(),
            target: column.type_sql.clone(),
        };
        if !render::renderable(dt) {
            return Err(incompatible());
        }
        let (path, style) = match &column.value_type {
            ValueType::Scalar { scalar } => {
                if !scalar_fits(dt, *scalar) {
                    return Err(incompatible());
                }
                (scalar_path(dt, *scalar), style_for(*scalar))
            }
            ValueType::Array { elem, .. } => {
                let fits = if render::is_string(dt) {
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
            ValueType::Unsupported => (
                Path::Server,
                Style {
                    json: false,
                    uuid: false,
                },
            ),
        };
        Ok(Coercion {
            value_type: column.value_type.clone(),
            typmod: column.typmod,
            path,
            style,
        })
    }

    /// Whether row `row` is SQL NULL (looking through a dictionary to its values).
    pub fn is_null(&self, array: &dyn Array, row: usize) -> bool {
        render::is_null(array, row)
    }

    /// Appends the binary COPY value (no length prefix) of non-null row `row` of `array` to
    /// `out`, exactly as the server's COPY would have stored the value's text form. Refused
    /// carries PostgreSQL's wording; Deferred means: call [`Coercion::text`] and let the server
    /// decide. On error `out` may hold a partial value (the caller truncates).
    pub fn encode(
        &self,
        array: &dyn Array,
        row: usize,
        ctx: &EncodeContext,
        out: &mut Vec<u8>,
    ) -> Result<(), EncodeError> {
        let (array, row) = render::resolve(array, row);
        if array.is_null(row) {
            // The caller checks is_null first; a NULL has no binary form to give.
            return Err(EncodeError::Refused(
                "null value where a value was expected".into(),
            ));
        }
        match self.path {
            Path::Int { width } => {
                let v = render::int_value(array, row).ok_or(EncodeError::Deferred)?;
                encode_int(v, width, out)
            }
            Path::Float4 => {
                let v = array.as_primitive::<Float32Type>().value(row);
                // float4in("NaN") stores the canonical NaN, whatever the Arrow payload.
                let bits = if v.is_nan() { 0x7fc0_0000 } else { v.to_bits() };
                out.extend_from_slice(&bits.to_be_bytes());
                Ok(())
            }
            Path::Float8 => {
                let v = array.as_primitive::<Float64Type>().value(row);
                let bits = if v.is_nan() {
                    0x7ff8_0000_0000_0000
                } else {
                    v.to_bits()
                };
                out.extend_from_slice(&bits.to_be_bytes());
                Ok(())
            }
            Path::Str => {
                let s = render::str_value(array, row).ok_or(EncodeError::Deferred)?;
                encode_value(&self.value_type, self.typmod, s, ctx, out)
            }
            Path::Bool => {
                out.push(u8::from(array.as_boolean().value(row)));
                Ok(())
            }
            Path::Bytes => {
                let b = render::bytes_value(array, row).ok_or(EncodeError::Deferred)?;
                out.extend_from_slice(b);
                Ok(())
            }
            Path::Uuid => {
                let b = render::bytes_value(array, row).ok_or(EncodeError::Deferred)?;
                out.extend_from_slice(b);
                Ok(())
            }
            Path::Date => {
                let days = i64::from(array.as_primitive::<Date32Type>().value(row))
                    - time::UNIX_TO_PG_DAYS;
                if !(time::PG_DAY_MIN..time::PG_DAY_END).contains(&days) {
                    return Err(EncodeError::Deferred);
                }
                out.extend_from_slice(&(days as i32).to_be_bytes());
                Ok(())
            }
            Path::Timestamp { unit, local } => {
                if local && !ctx.session_time_zone_is_utc {
                    return Err(EncodeError::Deferred);
                }
                let v = render::timestamp_value(array, row, unit);
                let us = time::pg_timestamp(v, unit).ok_or(EncodeError::Deferred)?;
                let us = time::round_typmod(us, self.typmod).ok_or(EncodeError::Deferred)?;
                out.extend_from_slice(&us.to_be_bytes());
                Ok(())
            }
            Path::Time { unit } => {
                let v: i64 = match unit {
                    TimeUnit::Second => array
                        .as_primitive::<arrow_array::types::Time32SecondType>()
                        .value(row)
                        .into(),
                    TimeUnit::Millisecond => array
                        .as_primitive::<arrow_array::types::Time32MillisecondType>()
                        .value(row)
                        .into(),
                    TimeUnit::Microsecond => array
                        .as_primitive::<arrow_array::types::Time64MicrosecondType>()
                        .value(row),
                    TimeUnit::Nanosecond => array
                        .as_primitive::<arrow_array::types::Time64NanosecondType>()
                        .value(row),
                };
                let us = time::pg_time(v, unit).ok_or(EncodeError::Deferred)?;
                let us = time::round_typmod(us, self.typmod).ok_or(EncodeError::Deferred)?;
                out.extend_from_slice(&us.to_be_bytes());
                Ok(())
            }
            Path::Text => SCRATCH.with(|scratch| {
                let mut text = scratch.borrow_mut();
                text.clear();
                self.write_text(array, row, &mut text);
                encode_value(&self.value_type, self.typmod, &text, ctx, out)
            }),
            Path::Server => Err(EncodeError::Deferred),
        }
    }

    /// The value's PostgreSQL text form (what [`Coercion::encode`] means), for Deferred
    /// resolution, the text COPY fallback and reject files. Appends to `buf`.
    pub fn text(&self, array: &dyn Array, row: usize, buf: &mut String) {
        self.write_text(array, row, buf);
    }

    fn write_text(&self, array: &dyn Array, row: usize, buf: &mut String) {
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
    match scalar {
        S::Bool => *dt == DataType::Boolean,
        S::Int2 | S::Int4 | S::Int8 => is_int(dt) || is_decimal(dt),
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

fn scalar_path(dt: &DataType, scalar: ScalarType) -> Path {
    use ScalarType as S;
    if render::is_string(dt) {
        return Path::Str;
    }
    match (dt, scalar) {
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
        _ => Path::Text,
    }
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

#[cfg(test)]
mod tests;
