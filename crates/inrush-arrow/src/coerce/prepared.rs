//! A [`Coercion`] bound to one column array: the array downcast once (per batch and column)
//! so that each value costs a slice read, not a virtual call and a `DataType` comparison.
use super::{encode_int, encode_numeric, invalid_utf8, Coercion, Path};
use crate::{render, time};
use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{
    Array, BinaryArray, BinaryViewArray, BooleanArray, FixedSizeBinaryArray, LargeBinaryArray,
    LargeStringArray, StringArray, StringViewArray,
};
use arrow_buffer::NullBuffer;
use arrow_schema::{DataType, TimeUnit};
use inrush_encode::{ColumnEncoder, EncodeContext, EncodeError};
use inrush_encode::{ScalarType, ValueType};

/// One column array ready for [`Coercion`]'s per-value work; see [`Coercion::prepare`].
pub struct Prepared<'a> {
    coercion: &'a Coercion,
    /// The array as given, for the paths that render text (they walk it themselves).
    array: &'a dyn Array,
    /// A `NullArray`: it has no validity bitmap, yet every row is null.
    all_null: bool,
    /// The array's validity (a dictionary's: its keys').
    nulls: Option<&'a NullBuffer>,
    /// A dictionary's keys: row → index into its values.
    keys: Option<Integers<'a>>,
    /// A dictionary's values' validity: a valid key may point at a null value.
    value_nulls: Option<&'a NullBuffer>,
    /// The values the direct path reads (a dictionary's values array, indexed by key).
    values: Values<'a>,
    /// How [`Prepared::text`] writes a value.
    text: Text<'a>,
    /// Whether any row may be null (false: [`Prepared::is_null`] answers without looking).
    has_nulls: bool,
    /// The whole per-value work of the common pairs, or [`Direct::General`].
    direct: Direct<'a>,
}

/// A value's encoding for the common pairs, chosen once per batch for a column with no nulls
/// and no dictionary: a value then costs one match on this, with no look at the path, the
/// array's type, the integer width or the validity. Same bytes as the general path.
enum Direct<'a> {
    /// Integers into the integer type of their own width: no range to check.
    Int2(&'a [i16]),
    Int4(&'a [i32]),
    Int8(&'a [i64]),
    /// Decimal128 on the [`Path::Numeric`] path.
    Numeric {
        values: &'a [i128],
        scale: u32,
        dscale: u32,
        limit: Option<u128>,
    },
    Date(&'a [i32]),
    /// Strings with the column's text reader: the one without a NUL search when the batch's
    /// string bytes hold no NUL (searched once, here, instead of once per value).
    Utf8(&'a StringArray, &'a ColumnEncoder),
    /// Views: with `check` (a text target, given the reader without the search), each
    /// value is checked for NUL as it is read, a word at a time and inline: a value of up to
    /// 12 bytes inside its view, which is loaded anyway; a pass over a batch's views of its
    /// own costs more (the parquet reader's views point into the page, between length
    /// prefixes that hold NULs, so its buffers cannot be searched whole).
    Utf8View {
        array: &'a StringViewArray,
        encoder: &'a ColumnEncoder,
        check: bool,
    },
    /// [`Prepared::encode_general`].
    General,
}

/// The text forms [`Prepared::text`] writes from the native values, with no look at the
/// array's `DataType` per value (what `render::value_text` writes for them, non-JSON style).
enum Text<'a> {
    /// A string's text is itself, whatever the target (scalar, array literal, JSON).
    Str(Strings<'a>),
    Int(Integers<'a>),
    /// Unscaled decimals and their scale.
    Decimal(Integers<'a>, i8),
    Date(&'a [i32]),
    /// Through `Coercion::write_text`.
    Rendered,
}

/// The typed values a direct path reads.
enum Values<'a> {
    /// Integers, and the integer representation of decimals (unscaled), dates, times and
    /// timestamps.
    Integers(Integers<'a>),
    Float4(&'a [f32]),
    Float8(&'a [f64]),
    Strings(Strings<'a>),
    Binaries(Binaries<'a>),
    Bool(&'a BooleanArray),
    /// The path renders text, or the array is not of the type the path was chosen for.
    None,
}

/// The native values of an integer-backed array.
enum Integers<'a> {
    I8(&'a [i8]),
    I16(&'a [i16]),
    I32(&'a [i32]),
    I64(&'a [i64]),
    I128(&'a [i128]),
    U8(&'a [u8]),
    U16(&'a [u16]),
    U32(&'a [u32]),
    U64(&'a [u64]),
}

enum Strings<'a> {
    Utf8(&'a StringArray),
    LargeUtf8(&'a LargeStringArray),
    Utf8View(&'a StringViewArray),
}

enum Binaries<'a> {
    Binary(&'a BinaryArray),
    LargeBinary(&'a LargeBinaryArray),
    BinaryView(&'a BinaryViewArray),
    FixedSize(&'a FixedSizeBinaryArray),
}

impl Coercion {
    /// Binds the coercion to `array` (a column of one batch, of the field's type): the typed
    /// views are taken here once, and [`Prepared`]'s per-row methods use them.
    pub fn prepare<'a>(&'a self, array: &'a dyn Array) -> Prepared<'a> {
        let dictionary = array.as_any_dictionary_opt().and_then(|dict| {
            // Arrow keys are always integers; anything else is read as a plain array.
            Integers::of(dict.keys()).map(|keys| (keys, dict.values().as_ref()))
        });
        let (keys, value_array, value_nulls) = match dictionary {
            Some((keys, values)) => (Some(keys), values, values.nulls()),
            None => (None, array, None),
        };
        let values = match self.path {
            Path::Int { .. }
            | Path::Date
            | Path::Timestamp { .. }
            | Path::Time { .. }
            | Path::Numeric { .. } => Integers::of(value_array).map(Values::Integers),
            Path::Float4 => value_array
                .as_primitive_opt::<Float32Type>()
                .map(|a| Values::Float4(a.values())),
            Path::Float8 => value_array
                .as_primitive_opt::<Float64Type>()
                .map(|a| Values::Float8(a.values())),
            Path::Str => Strings::of(value_array).map(Values::Strings),
            Path::BinaryText | Path::Bytes | Path::Uuid => {
                Binaries::of(value_array).map(Values::Binaries)
            }
            Path::Bool => value_array.as_boolean_opt().map(Values::Bool),
            Path::Text | Path::Server => None,
        };
        let plain = !self.style.json
            && !matches!(self.value_type, ValueType::Array { .. })
            && self.path != Path::BinaryText;
        let text = match value_array.data_type() {
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
                Strings::of(value_array).map(Text::Str)
            }
            _ if !plain => None,
            dt if dt.is_integer() => Integers::of(value_array).map(Text::Int),
            DataType::Decimal32(_, s) | DataType::Decimal64(_, s) | DataType::Decimal128(_, s) => {
                Integers::of(value_array).map(|v| Text::Decimal(v, *s))
            }
            DataType::Date32 => value_array
                .as_primitive_opt::<Date32Type>()
                .map(|a| Text::Date(a.values())),
            _ => None,
        };
        let all_null = *array.data_type() == DataType::Null;
        let counts = |n: Option<&NullBuffer>| n.is_some_and(|n| n.null_count() > 0);
        let has_nulls = all_null || counts(array.nulls()) || counts(value_nulls);
        let direct = match keys {
            None if !has_nulls => self.direct(array),
            _ => Direct::General,
        };
        Prepared {
            coercion: self,
            array,
            all_null,
            nulls: array.nulls(),
            keys,
            value_nulls,
            values: values.unwrap_or(Values::None),
            text: text.unwrap_or(Text::Rendered),
            has_nulls,
            direct,
        }
    }

    /// The direct encoding of `array` (no nulls, no dictionary), if it is a common pair.
    fn direct<'a>(&'a self, array: &'a dyn Array) -> Direct<'a> {
        let direct = match (self.path, array.data_type()) {
            (Path::Int { width: 2 }, DataType::Int16) => array
                .as_primitive_opt::<Int16Type>()
                .map(|a| Direct::Int2(a.values())),
            (Path::Int { width: 4 }, DataType::Int32) => array
                .as_primitive_opt::<Int32Type>()
                .map(|a| Direct::Int4(a.values())),
            (Path::Int { width: 8 }, DataType::Int64) => array
                .as_primitive_opt::<Int64Type>()
                .map(|a| Direct::Int8(a.values())),
            (
                Path::Numeric {
                    scale,
                    dscale,
                    limit,
                },
                DataType::Decimal128(_, _),
            ) => array
                .as_primitive_opt::<Decimal128Type>()
                .map(|a| Direct::Numeric {
                    values: a.values(),
                    scale,
                    dscale,
                    limit,
                }),
            (Path::Date, DataType::Date32) => array
                .as_primitive_opt::<Date32Type>()
                .map(|a| Direct::Date(a.values())),
            (Path::Str, DataType::Utf8) => array.as_string_opt::<i32>().map(|a| {
                Direct::Utf8(a, self.text_encoder(self.text_target() && utf8_nul_free(a)))
            }),
            (Path::Str, DataType::Utf8View) => array.as_string_view_opt().map(|array| {
                let check = self.text_target();
                Direct::Utf8View {
                    array,
                    encoder: self.text_encoder(check),
                    check,
                }
            }),
            _ => None,
        };
        direct.unwrap_or(Direct::General)
    }

    /// Whether the target is a text type: the one place a NUL changes the answer (it is
    /// deferred; the other types' readers take it as any other byte).
    fn text_target(&self) -> bool {
        matches!(
            self.value_type,
            ValueType::Scalar {
                scalar: ScalarType::Text | ScalarType::Varchar | ScalarType::Bpchar
            }
        )
    }

    /// The reader for strings known to hold no NUL, or not.
    fn text_encoder(&self, nul_free: bool) -> &ColumnEncoder {
        if nul_free {
            &self.nul_free_encoder
        } else {
            &self.encoder
        }
    }
}

/// Whether no value of `a` holds a NUL byte: one search of the bytes its rows span.
fn utf8_nul_free(a: &StringArray) -> bool {
    let offsets = a.value_offsets();
    let (start, end) = (offsets[0] as usize, offsets[offsets.len() - 1] as usize);
    memchr::memchr(0, &a.value_data()[start..end]).is_none()
}

/// Whether some byte of `x` is zero (the classic bit trick: exact for "some", which is all
/// that is asked).
#[inline]
fn has_zero_byte(x: u128) -> bool {
    const ONES: u128 = u128::from_le_bytes([0x01; 16]);
    const HIGHS: u128 = u128::from_le_bytes([0x80; 16]);
    x.wrapping_sub(ONES) & !x & HIGHS != 0
}

/// Whether the value of `view` (`value`: its bytes) holds a NUL byte, a word at a time.
#[inline]
fn view_has_nul(view: u128, value: &[u8]) -> bool {
    let len = value.len();
    if len <= 12 {
        // Inside the view: the bytes, and 0xff beyond them (in place of the zero padding).
        return has_zero_byte((view >> 32) | (!0u128 << (8 * len)));
    }
    // Eight bytes at a time, in the low half of a word whose high half is 0xff; the last
    // word overlaps its predecessor, so no loop over single bytes.
    let word = |at: usize| {
        let w = u64::from_le_bytes(value[at..at + 8].try_into().unwrap_or_default());
        u128::from(w) | (!0u128 << 64)
    };
    let mut nul = has_zero_byte(word(len - 8));
    let mut at = 0;
    while at + 8 < len {
        nul |= has_zero_byte(word(at));
        at += 8;
    }
    nul
}

impl<'a> Prepared<'a> {
    /// Non-null row `row`'s bytes, when the column is Arrow binary of any layout (through a
    /// dictionary too): for a target that stores bytes as they are, where the text forms
    /// would give it their `\x` hex.
    pub fn bytes(&self, row: usize) -> Option<&'a [u8]> {
        if self.is_null(row) {
            return None;
        }
        let (array, row) = render::resolve(self.array, row);
        match array.data_type() {
            DataType::Binary => Some(array.as_binary::<i32>().value(row)),
            DataType::LargeBinary => Some(array.as_binary::<i64>().value(row)),
            DataType::BinaryView => Some(array.as_binary_view().value(row)),
            DataType::FixedSizeBinary(_) => Some(array.as_fixed_size_binary().value(row)),
            _ => None,
        }
    }
}

impl Prepared<'_> {
    /// Whether row `row` is SQL NULL (looking through a dictionary to its values).
    #[inline]
    pub fn is_null(&self, row: usize) -> bool {
        self.has_nulls && self.is_null_here(row)
    }

    /// [`Prepared::is_null`] of a column that has nulls: kept out of line, so the check of
    /// a column without stays small enough to inline into the row loop.
    fn is_null_here(&self, row: usize) -> bool {
        if self.all_null || self.nulls.is_some_and(|n| n.is_null(row)) {
            return true;
        }
        match (&self.keys, self.value_nulls) {
            (Some(keys), Some(value_nulls)) => value_nulls.is_null(keys.index(row)),
            _ => false,
        }
    }

    /// The index of row `row` in `values`.
    #[inline]
    fn index(&self, row: usize) -> usize {
        match &self.keys {
            Some(keys) => keys.index(row),
            None => row,
        }
    }

    /// Appends the binary COPY value (no length prefix) of non-null row `row` to `out`,
    /// exactly as the server's COPY would have stored the value's text form. Refused carries
    /// PostgreSQL's wording; Deferred means: call [`Prepared::text`] and let the server
    /// decide. On error `out` may hold a partial value (the caller truncates).
    #[inline]
    pub fn encode(
        &self,
        row: usize,
        ctx: &EncodeContext,
        out: &mut Vec<u8>,
    ) -> Result<(), EncodeError> {
        match &self.direct {
            Direct::Int2(v) => out.extend_from_slice(&v[row].to_be_bytes()),
            Direct::Int4(v) => out.extend_from_slice(&v[row].to_be_bytes()),
            Direct::Int8(v) => out.extend_from_slice(&v[row].to_be_bytes()),
            Direct::Date(days) => return encode_date(days[row].into(), out),
            Direct::Numeric {
                values,
                scale,
                dscale,
                limit,
            } => return self.encode_decimal(values[row], *scale, *dscale, *limit, row, ctx, out),
            Direct::Utf8(a, encoder) => return encoder.encode(a.value(row), ctx, out),
            Direct::Utf8View {
                array,
                encoder,
                check,
            } => {
                let value = array.value(row);
                if *check && view_has_nul(array.views()[row], value.as_bytes()) {
                    return Err(EncodeError::Deferred);
                }
                return encoder.encode(value, ctx, out);
            }
            Direct::General => return self.encode_general(row, ctx, out),
        }
        Ok(())
    }

    /// [`Prepared::encode`] of any pair, a dictionary, or a column with nulls (and the
    /// reference the tests hold the direct encodings to).
    pub(super) fn encode_general(
        &self,
        row: usize,
        ctx: &EncodeContext,
        out: &mut Vec<u8>,
    ) -> Result<(), EncodeError> {
        // A null dictionary key may hold any value: check it before following it. The caller
        // checks is_null first; a NULL has no binary form to give.
        if self.is_null(row) {
            return Err(EncodeError::Refused(
                "null value where a value was expected".into(),
            ));
        }
        let c = self.coercion;
        let index = self.index(row);
        match (c.path, &self.values) {
            (Path::Int { width }, Values::Integers(ints)) => {
                encode_int(ints.get(index), width, out)
            }
            (Path::Float4, Values::Float4(v)) => {
                let v = v[index];
                // float4in("NaN") stores the canonical NaN, whatever the Arrow payload.
                let bits = if v.is_nan() { 0x7fc0_0000 } else { v.to_bits() };
                out.extend_from_slice(&bits.to_be_bytes());
                Ok(())
            }
            (Path::Float8, Values::Float8(v)) => {
                let v = v[index];
                let bits = if v.is_nan() {
                    0x7ff8_0000_0000_0000
                } else {
                    v.to_bits()
                };
                out.extend_from_slice(&bits.to_be_bytes());
                Ok(())
            }
            (Path::Str, Values::Strings(s)) => c.encoder.encode(s.get(index), ctx, out),
            (Path::BinaryText, Values::Binaries(b)) => {
                let b = b.get(index);
                let s = std::str::from_utf8(b).map_err(|e| invalid_utf8(&b[e.valid_up_to()..]))?;
                c.encoder.encode(s, ctx, out)
            }
            (Path::Bool, Values::Bool(b)) => {
                out.push(u8::from(b.value(index)));
                Ok(())
            }
            (Path::Bytes | Path::Uuid, Values::Binaries(b)) => {
                out.extend_from_slice(b.get(index));
                Ok(())
            }
            (Path::Date, Values::Integers(days)) => encode_date(
                i64::try_from(days.get(index)).map_err(|_| EncodeError::Deferred)?,
                out,
            ),
            (Path::Timestamp { unit, local }, Values::Integers(v)) => {
                if local && !ctx.session_time_zone_is_utc {
                    return Err(EncodeError::Deferred);
                }
                let v = i64::try_from(v.get(index)).map_err(|_| EncodeError::Deferred)?;
                let us = time::pg_timestamp(v, unit).ok_or(EncodeError::Deferred)?;
                let us = time::round_typmod(us, c.typmod).ok_or(EncodeError::Deferred)?;
                out.extend_from_slice(&us.to_be_bytes());
                Ok(())
            }
            (Path::Time { unit }, Values::Integers(v)) => {
                let v = i64::try_from(v.get(index)).map_err(|_| EncodeError::Deferred)?;
                let us = time::pg_time(v, unit).ok_or(EncodeError::Deferred)?;
                let us = time::round_typmod(us, c.typmod).ok_or(EncodeError::Deferred)?;
                out.extend_from_slice(&us.to_be_bytes());
                Ok(())
            }
            (
                Path::Numeric {
                    scale,
                    dscale,
                    limit,
                },
                Values::Integers(v),
            ) => self.encode_decimal(v.get(index), scale, dscale, limit, row, ctx, out),
            (Path::Text, _) => c.encode_text(self.array, row, ctx, out),
            // The server path, or an array not of the type the path was chosen for.
            _ => Err(EncodeError::Deferred),
        }
    }

    /// Unscaled `v` of row `row` on the [`Path::Numeric`] path: directly when it fits the
    /// column's precision and 128 bits, else through its text form.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn encode_decimal(
        &self,
        v: i128,
        scale: u32,
        dscale: u32,
        limit: Option<u128>,
        row: usize,
        ctx: &EncodeContext,
        out: &mut Vec<u8>,
    ) -> Result<(), EncodeError> {
        if limit.is_some_and(|l| v.unsigned_abs() >= l) || !encode_numeric(v, scale, dscale, out) {
            return self.coercion.encode_text(self.array, row, ctx, out);
        }
        Ok(())
    }

    /// Whether [`Prepared::text`] writes only digits, signs, points, dashes and letters here
    /// (integers, decimals, dates): nothing a text line would escape.
    pub fn text_is_plain(&self) -> bool {
        matches!(self.text, Text::Int(_) | Text::Decimal(..) | Text::Date(_))
    }

    /// The value's PostgreSQL text form (what [`Prepared::encode`] means), for Deferred
    /// resolution, the text COPY fallback and reject files. Appends to `buf`; appends nothing
    /// for a null row (the caller writes its own NULL marker).
    pub fn text(&self, row: usize, buf: &mut String) {
        if self.is_null(row) {
            return;
        }
        match &self.text {
            Text::Str(s) => buf.push_str(s.get(self.index(row))),
            Text::Int(v) => {
                buf.push_str(format_int(&mut itoa::Buffer::new(), v.get(self.index(row))))
            }
            Text::Decimal(v, scale) => {
                let mut digits = itoa::Buffer::new();
                let digits = format_int(&mut digits, v.get(self.index(row)));
                render::write_decimal(digits, *scale, buf)
            }
            Text::Date(days) => time::write_date(days[self.index(row)].into(), buf),
            Text::Rendered => self.coercion.write_text(self.array, row, buf),
        }
    }
}

/// An integer's digits; through i64 when it fits (formatting a u128 divides by 10^19 in
/// software: it was most of a decimal column's rendering).
#[inline]
fn format_int(buf: &mut itoa::Buffer, v: i128) -> &str {
    match i64::try_from(v) {
        Ok(v) => buf.format(v),
        Err(_) => buf.format(v),
    }
}

/// Days since 1970 into `date`; Deferred outside the range the client writes.
#[inline]
fn encode_date(days: i64, out: &mut Vec<u8>) -> Result<(), EncodeError> {
    let days = days - time::UNIX_TO_PG_DAYS;
    if !(time::PG_DAY_MIN..time::PG_DAY_END).contains(&days) {
        return Err(EncodeError::Deferred);
    }
    out.extend_from_slice(&(days as i32).to_be_bytes());
    Ok(())
}

#[cfg(test)]
impl Prepared<'_> {
    pub(super) fn is_direct(&self) -> bool {
        !matches!(self.direct, Direct::General)
    }
}

impl<'a> Integers<'a> {
    /// The native values of an integer, decimal (but 256-bit), date32, time or timestamp
    /// array.
    fn of(array: &'a dyn Array) -> Option<Self> {
        fn native<T: ArrowPrimitiveType>(array: &dyn Array) -> Option<&[T::Native]> {
            array.as_primitive_opt::<T>().map(|a| a.values().as_ref())
        }
        Some(match array.data_type() {
            DataType::Int8 => Integers::I8(native::<Int8Type>(array)?),
            DataType::Int16 => Integers::I16(native::<Int16Type>(array)?),
            DataType::Int32 => Integers::I32(native::<Int32Type>(array)?),
            DataType::Int64 => Integers::I64(native::<Int64Type>(array)?),
            DataType::UInt8 => Integers::U8(native::<UInt8Type>(array)?),
            DataType::UInt16 => Integers::U16(native::<UInt16Type>(array)?),
            DataType::UInt32 => Integers::U32(native::<UInt32Type>(array)?),
            DataType::UInt64 => Integers::U64(native::<UInt64Type>(array)?),
            DataType::Decimal32(_, _) => Integers::I32(native::<Decimal32Type>(array)?),
            DataType::Decimal64(_, _) => Integers::I64(native::<Decimal64Type>(array)?),
            DataType::Decimal128(_, _) => Integers::I128(native::<Decimal128Type>(array)?),
            DataType::Date32 => Integers::I32(native::<Date32Type>(array)?),
            DataType::Time32(TimeUnit::Second) => Integers::I32(native::<Time32SecondType>(array)?),
            DataType::Time32(TimeUnit::Millisecond) => {
                Integers::I32(native::<Time32MillisecondType>(array)?)
            }
            DataType::Time64(TimeUnit::Microsecond) => {
                Integers::I64(native::<Time64MicrosecondType>(array)?)
            }
            DataType::Time64(TimeUnit::Nanosecond) => {
                Integers::I64(native::<Time64NanosecondType>(array)?)
            }
            DataType::Timestamp(TimeUnit::Second, _) => {
                Integers::I64(native::<TimestampSecondType>(array)?)
            }
            DataType::Timestamp(TimeUnit::Millisecond, _) => {
                Integers::I64(native::<TimestampMillisecondType>(array)?)
            }
            DataType::Timestamp(TimeUnit::Microsecond, _) => {
                Integers::I64(native::<TimestampMicrosecondType>(array)?)
            }
            DataType::Timestamp(TimeUnit::Nanosecond, _) => {
                Integers::I64(native::<TimestampNanosecondType>(array)?)
            }
            _ => return None,
        })
    }

    #[inline]
    fn get(&self, i: usize) -> i128 {
        match self {
            Integers::I8(v) => v[i].into(),
            Integers::I16(v) => v[i].into(),
            Integers::I32(v) => v[i].into(),
            Integers::I64(v) => v[i].into(),
            Integers::I128(v) => v[i],
            Integers::U8(v) => v[i].into(),
            Integers::U16(v) => v[i].into(),
            Integers::U32(v) => v[i].into(),
            Integers::U64(v) => v[i].into(),
        }
    }

    /// A dictionary key as an index into its values (Arrow's `as_usize`: an `as` cast).
    #[inline]
    fn index(&self, i: usize) -> usize {
        match self {
            Integers::I8(v) => v[i] as usize,
            Integers::I16(v) => v[i] as usize,
            Integers::I32(v) => v[i] as usize,
            Integers::I64(v) => v[i] as usize,
            Integers::I128(v) => v[i] as usize,
            Integers::U8(v) => v[i].into(),
            Integers::U16(v) => v[i].into(),
            Integers::U32(v) => v[i] as usize,
            Integers::U64(v) => v[i] as usize,
        }
    }
}

impl<'a> Strings<'a> {
    fn of(array: &'a dyn Array) -> Option<Self> {
        Some(match array.data_type() {
            DataType::Utf8 => Strings::Utf8(array.as_string_opt::<i32>()?),
            DataType::LargeUtf8 => Strings::LargeUtf8(array.as_string_opt::<i64>()?),
            DataType::Utf8View => Strings::Utf8View(array.as_string_view_opt()?),
            _ => return None,
        })
    }

    #[inline]
    fn get(&self, i: usize) -> &'a str {
        match self {
            Strings::Utf8(a) => a.value(i),
            Strings::LargeUtf8(a) => a.value(i),
            Strings::Utf8View(a) => a.value(i),
        }
    }
}

impl<'a> Binaries<'a> {
    fn of(array: &'a dyn Array) -> Option<Self> {
        Some(match array.data_type() {
            DataType::Binary => Binaries::Binary(array.as_binary_opt::<i32>()?),
            DataType::LargeBinary => Binaries::LargeBinary(array.as_binary_opt::<i64>()?),
            DataType::BinaryView => Binaries::BinaryView(array.as_binary_view_opt()?),
            DataType::FixedSizeBinary(_) => Binaries::FixedSize(array.as_fixed_size_binary_opt()?),
            _ => return None,
        })
    }

    #[inline]
    fn get(&self, i: usize) -> &'a [u8] {
        match self {
            Binaries::Binary(a) => a.value(i),
            Binaries::LargeBinary(a) => a.value(i),
            Binaries::BinaryView(a) => a.value(i),
            Binaries::FixedSize(a) => a.value(i),
        }
    }
}
