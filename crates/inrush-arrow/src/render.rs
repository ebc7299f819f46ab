//! Arrow values as PostgreSQL text: the form a value takes when the server reads it (scalars as
//! their types print, lists as array literals) and JSON for json/jsonb targets.
//!
//! Every function here takes a non-null value; nulls inside lists, structs and maps are written
//! as `NULL` or `null`. Types that [`renderable`] rejects are never passed in (the coercion is
//! refused before any row is read), and would be written as nothing.
use crate::time;
use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{Array, ArrayRef};
use arrow_buffer::ArrowNativeType;
use arrow_schema::{DataType, IntervalUnit, TimeUnit};
use std::fmt::Write;
use std::ops::Range;

/// How a target that reads text without PostgreSQL's types takes some values (MariaDB's
/// `LOAD DATA`, SQLite's affinities); PostgreSQL's text forms otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TextForms {
    /// The target has no array types: a list is written as JSON (`[1,2]`), as structs and
    /// maps are, where PostgreSQL's `{1,2}` would be no value it reads.
    pub lists_as_json: bool,
    /// The target's booleans are integers: `1` and `0`, where `true` would be text.
    pub booleans_as_digits: bool,
    /// A zoned timestamp's offset as `+00:00` (SQLite's date functions read no `+00`).
    pub zone_with_minutes: bool,
}

impl TextForms {
    /// A database with neither arrays nor booleans (MariaDB and MySQL, whose TRUE is 1):
    /// lists as JSON, booleans as 1 and 0.
    pub const WITHOUT_ARRAYS: TextForms = TextForms {
        lists_as_json: true,
        booleans_as_digits: true,
        zone_with_minutes: false,
    };

    /// [`TextForms::WITHOUT_ARRAYS`], with ISO 8601's `+00:00` offsets (SQLite's date
    /// functions, SQL Server's datetimeoffset).
    pub const ISO: TextForms = TextForms {
        zone_with_minutes: true,
        ..TextForms::WITHOUT_ARRAYS
    };
}

/// How non-string values are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Style {
    /// The target reads JSON (json, jsonb, or arrays of them): non-strings become JSON values.
    pub json: bool,
    /// The target reads uuids: 16-byte fixed-size binaries are written as uuid text.
    pub uuid: bool,
    /// The target's own forms where they are not PostgreSQL's.
    pub forms: TextForms,
    /// The target reads integers: a whole float is written as one, every digit, where
    /// float8out's `1e+15` (and float4out's `1.6777216e+07`) is no integer's text.
    pub integer: bool,
}

/// The dictionary's values array and index for row `row`, or the array itself.
#[inline]
pub(crate) fn resolve(array: &dyn Array, row: usize) -> (&dyn Array, usize) {
    let DataType::Dictionary(key, _) = array.data_type() else {
        return (array, row);
    };
    let dict = array.as_any_dictionary();
    let keys = dict.keys();
    let index = match key.as_ref() {
        DataType::Int8 => keys.as_primitive::<Int8Type>().value(row).as_usize(),
        DataType::Int16 => keys.as_primitive::<Int16Type>().value(row).as_usize(),
        DataType::Int32 => keys.as_primitive::<Int32Type>().value(row).as_usize(),
        DataType::Int64 => keys.as_primitive::<Int64Type>().value(row).as_usize(),
        DataType::UInt8 => keys.as_primitive::<UInt8Type>().value(row).as_usize(),
        DataType::UInt16 => keys.as_primitive::<UInt16Type>().value(row).as_usize(),
        DataType::UInt32 => keys.as_primitive::<UInt32Type>().value(row).as_usize(),
        DataType::UInt64 => keys.as_primitive::<UInt64Type>().value(row).as_usize(),
        // Arrow allows no other key types.
        _ => return (array, row),
    };
    (dict.values().as_ref(), index)
}

/// Whether row `row` is null, looking through a dictionary to its values.
#[inline]
pub(crate) fn is_null(array: &dyn Array, row: usize) -> bool {
    // A NullArray has no validity buffer: `is_null` says false for its rows.
    if array.is_null(row) || *array.data_type() == DataType::Null {
        return true;
    }
    let (values, index) = resolve(array, row);
    values.is_null(index)
}

/// The Arrow type values are read as: a dictionary's value type, or the type itself.
pub(crate) fn value_type(dt: &DataType) -> &DataType {
    match dt {
        DataType::Dictionary(_, v) => v,
        _ => dt,
    }
}

/// Whether values of `dt` are bytes (binary of any layout, through a dictionary too).
pub fn is_binary(dt: &DataType) -> bool {
    matches!(
        value_type(dt),
        DataType::Binary
            | DataType::LargeBinary
            | DataType::BinaryView
            | DataType::FixedSizeBinary(_)
    )
}

pub(crate) fn is_string(dt: &DataType) -> bool {
    matches!(
        value_type(dt),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
    )
}

pub(crate) fn is_list(dt: &DataType) -> bool {
    matches!(
        value_type(dt),
        DataType::List(_) | DataType::LargeList(_) | DataType::FixedSizeList(_, _)
    )
}

/// The element field of a list type.
pub(crate) fn list_child(dt: &DataType) -> Option<&DataType> {
    match value_type(dt) {
        DataType::List(f) | DataType::LargeList(f) | DataType::FixedSizeList(f, _) => {
            Some(f.data_type())
        }
        _ => None,
    }
}

/// Whether every value of `dt` (and of its children) can be written by this module.
pub(crate) fn renderable(dt: &DataType) -> bool {
    use DataType::*;
    match dt {
        Null
        | Boolean
        | Int8
        | Int16
        | Int32
        | Int64
        | UInt8
        | UInt16
        | UInt32
        | UInt64
        | Float32
        | Float64
        | Utf8
        | LargeUtf8
        | Utf8View
        | Binary
        | LargeBinary
        | BinaryView
        | FixedSizeBinary(_)
        | Date32
        | Date64
        | Time32(_)
        | Time64(_)
        | Timestamp(_, _)
        | Duration(_)
        | Interval(_)
        | Decimal32(_, _)
        | Decimal64(_, _)
        | Decimal128(_, _)
        | Decimal256(_, _) => true,
        List(f) | LargeList(f) | FixedSizeList(f, _) => renderable(f.data_type()),
        Struct(fields) => fields.iter().all(|f| renderable(f.data_type())),
        Map(f, _) => renderable(f.data_type()),
        Dictionary(_, v) => renderable(v),
        _ => false,
    }
}

/// The string at `row` of a string array (after [`resolve`]).
#[inline]
pub(crate) fn str_value(array: &dyn Array, row: usize) -> Option<&str> {
    Some(match array.data_type() {
        DataType::Utf8 => array.as_string::<i32>().value(row),
        DataType::LargeUtf8 => array.as_string::<i64>().value(row),
        DataType::Utf8View => array.as_string_view().value(row),
        _ => return None,
    })
}

/// The bytes at `row` of a binary array (after [`resolve`]).
#[inline]
pub(crate) fn bytes_value(array: &dyn Array, row: usize) -> Option<&[u8]> {
    Some(match array.data_type() {
        DataType::Binary => array.as_binary::<i32>().value(row),
        DataType::LargeBinary => array.as_binary::<i64>().value(row),
        DataType::BinaryView => array.as_binary_view().value(row),
        DataType::FixedSizeBinary(_) => array.as_fixed_size_binary().value(row),
        _ => return None,
    })
}

/// The integer at `row` of an integer array (after [`resolve`]).
#[inline]
pub(crate) fn int_value(array: &dyn Array, row: usize) -> Option<i128> {
    Some(match array.data_type() {
        DataType::Int8 => array.as_primitive::<Int8Type>().value(row).into(),
        DataType::Int16 => array.as_primitive::<Int16Type>().value(row).into(),
        DataType::Int32 => array.as_primitive::<Int32Type>().value(row).into(),
        DataType::Int64 => array.as_primitive::<Int64Type>().value(row).into(),
        DataType::UInt8 => array.as_primitive::<UInt8Type>().value(row).into(),
        DataType::UInt16 => array.as_primitive::<UInt16Type>().value(row).into(),
        DataType::UInt32 => array.as_primitive::<UInt32Type>().value(row).into(),
        DataType::UInt64 => array.as_primitive::<UInt64Type>().value(row).into(),
        _ => return None,
    })
}

/// A value as the target reads it: strings as they are, then JSON for JSON targets, array
/// literals for lists, JSON for structs and maps, and each scalar type's text form.
pub(crate) fn value_text(array: &dyn Array, row: usize, style: Style, out: &mut String) {
    let (array, row) = resolve(array, row);
    if let Some(s) = str_value(array, row) {
        out.push_str(s);
    } else if style.json {
        json_value(array, row, out);
    } else if let Some((values, range)) = list_range(array, row) {
        match style.forms.lists_as_json {
            true => json_value(array, row, out),
            false => write_literal(values.as_ref(), range, style, out),
        }
    } else if matches!(array.data_type(), DataType::Struct(_) | DataType::Map(_, _)) {
        json_value(array, row, out);
    } else {
        scalar_text(array, row, style, out);
    }
}

/// A list value as a PostgreSQL array literal (`{1,2,NULL}`, `{"a b","x\"y"}`, nested lists as
/// `{{1,2},{3,4}}`); a string is taken to be the literal already.
pub(crate) fn list_literal(array: &dyn Array, row: usize, style: Style, out: &mut String) {
    let (array, row) = resolve(array, row);
    if let Some(s) = str_value(array, row) {
        out.push_str(s);
    } else if let Some((values, range)) = list_range(array, row) {
        write_literal(values.as_ref(), range, style, out);
    }
}

fn list_range(array: &dyn Array, row: usize) -> Option<(&ArrayRef, Range<usize>)> {
    Some(match array.data_type() {
        DataType::List(_) => {
            let l = array.as_list::<i32>();
            let o = l.value_offsets();
            (l.values(), o[row].as_usize()..o[row + 1].as_usize())
        }
        DataType::LargeList(_) => {
            let l = array.as_list::<i64>();
            let o = l.value_offsets();
            (l.values(), o[row].as_usize()..o[row + 1].as_usize())
        }
        DataType::FixedSizeList(_, _) => {
            let l = array.as_fixed_size_list();
            let start = l.value_offset_at(row);
            (l.values(), start..start + l.value_length() as usize)
        }
        _ => return None,
    })
}

fn write_literal(values: &dyn Array, range: Range<usize>, style: Style, out: &mut String) {
    out.push('{');
    let mut elem = String::new();
    for (n, i) in range.enumerate() {
        if n > 0 {
            out.push(',');
        }
        if is_null(values, i) {
            out.push_str("NULL");
            continue;
        }
        let (v, j) = resolve(values, i);
        if !style.json && list_range(v, j).is_some() {
            // A sub-array: PostgreSQL reads it as the next dimension (rectangular or refused).
            value_text(v, j, style, out);
            continue;
        }
        elem.clear();
        value_text(v, j, style, &mut elem);
        inrush_encode::push_array_element(&elem, out);
    }
    out.push('}');
}

/// A scalar's text form, as PostgreSQL prints the matching type.
fn scalar_text(array: &dyn Array, row: usize, style: Style, out: &mut String) {
    if let Some(v) = int_value(array, row) {
        out.push_str(itoa::Buffer::new().format(v));
        return;
    }
    match array.data_type() {
        DataType::Boolean => {
            out.push_str(
                match (
                    array.as_boolean().value(row),
                    style.forms.booleans_as_digits,
                ) {
                    (true, false) => "true",
                    (false, false) => "false",
                    (true, true) => "1",
                    (false, true) => "0",
                },
            );
        }
        DataType::Float32 => write_number(
            array.as_primitive::<Float32Type>().value(row).into(),
            true,
            style,
            out,
        ),
        DataType::Float64 => write_number(
            array.as_primitive::<Float64Type>().value(row),
            false,
            style,
            out,
        ),
        DataType::Decimal32(_, s) => {
            let v = array.as_primitive::<Decimal32Type>().value(row);
            write_decimal(itoa::Buffer::new().format(v), *s, out);
        }
        DataType::Decimal64(_, s) => {
            let v = array.as_primitive::<Decimal64Type>().value(row);
            write_decimal(itoa::Buffer::new().format(v), *s, out);
        }
        DataType::Decimal128(_, s) => {
            let v = array.as_primitive::<Decimal128Type>().value(row);
            write_decimal(itoa::Buffer::new().format(v), *s, out);
        }
        DataType::Decimal256(_, s) => {
            let v = array.as_primitive::<Decimal256Type>().value(row);
            write_decimal(&v.to_string(), *s, out);
        }
        DataType::FixedSizeBinary(16) if style.uuid => {
            let b = array.as_fixed_size_binary().value(row);
            for (i, byte) in b.iter().enumerate() {
                if matches!(i, 4 | 6 | 8 | 10) {
                    out.push('-');
                }
                let _ = write!(out, "{byte:02x}");
            }
        }
        DataType::Binary
        | DataType::LargeBinary
        | DataType::BinaryView
        | DataType::FixedSizeBinary(_) => {
            if let Some(b) = bytes_value(array, row) {
                write_hex(b, out);
            }
        }
        DataType::Date32 => {
            time::write_date(array.as_primitive::<Date32Type>().value(row).into(), out);
        }
        DataType::Date64 => {
            let ms = array.as_primitive::<Date64Type>().value(row);
            if ms.rem_euclid(86_400_000) == 0 {
                time::write_date(ms.div_euclid(86_400_000), out);
            } else {
                // Not a whole day: keep the time rather than silently dropping it.
                time::write_timestamp(ms, TimeUnit::Millisecond, "", out);
            }
        }
        DataType::Time32(unit) => {
            let v: i64 = match unit {
                TimeUnit::Second => array.as_primitive::<Time32SecondType>().value(row).into(),
                _ => array
                    .as_primitive::<Time32MillisecondType>()
                    .value(row)
                    .into(),
            };
            time::write_time(v, *unit, out);
        }
        DataType::Time64(unit) => {
            let v = match unit {
                TimeUnit::Nanosecond => array.as_primitive::<Time64NanosecondType>().value(row),
                _ => array.as_primitive::<Time64MicrosecondType>().value(row),
            };
            time::write_time(v, *unit, out);
        }
        DataType::Timestamp(unit, tz) => {
            let zone = match (tz, style.forms.zone_with_minutes) {
                (None, _) => "",
                (Some(_), false) => "+00",
                (Some(_), true) => "+00:00",
            };
            time::write_timestamp(timestamp_value(array, row, *unit), *unit, zone, out);
        }
        DataType::Duration(unit) => {
            let v = match unit {
                TimeUnit::Second => array.as_primitive::<DurationSecondType>().value(row),
                TimeUnit::Millisecond => array.as_primitive::<DurationMillisecondType>().value(row),
                TimeUnit::Microsecond => array.as_primitive::<DurationMicrosecondType>().value(row),
                TimeUnit::Nanosecond => array.as_primitive::<DurationNanosecondType>().value(row),
            };
            time::write_duration(v, *unit, out);
        }
        DataType::Interval(unit) => {
            let (months, days, nanos) = match unit {
                IntervalUnit::YearMonth => (
                    array.as_primitive::<IntervalYearMonthType>().value(row),
                    0,
                    0,
                ),
                IntervalUnit::DayTime => {
                    let v = array.as_primitive::<IntervalDayTimeType>().value(row);
                    (0, v.days, i64::from(v.milliseconds) * 1_000_000)
                }
                IntervalUnit::MonthDayNano => {
                    let v = array.as_primitive::<IntervalMonthDayNanoType>().value(row);
                    (v.months, v.days, v.nanoseconds)
                }
            };
            let _ = write!(out, "{months} mons {days} days ");
            time::write_duration(nanos, TimeUnit::Nanosecond, out);
        }
        _ => {}
    }
}

/// The raw value of a timestamp array of any unit.
#[inline]
pub(crate) fn timestamp_value(array: &dyn Array, row: usize, unit: TimeUnit) -> i64 {
    match unit {
        TimeUnit::Second => array.as_primitive::<TimestampSecondType>().value(row),
        TimeUnit::Millisecond => array.as_primitive::<TimestampMillisecondType>().value(row),
        TimeUnit::Microsecond => array.as_primitive::<TimestampMicrosecondType>().value(row),
        TimeUnit::Nanosecond => array.as_primitive::<TimestampNanosecondType>().value(row),
    }
}

/// bytea's hex output form, `\x` and two lowercase digits per byte.
pub(crate) fn write_hex(bytes: &[u8], out: &mut String) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.reserve(2 + bytes.len() * 2);
    out.push_str("\\x");
    for b in bytes {
        out.push(HEX[usize::from(b >> 4)] as char);
        out.push(HEX[usize::from(b & 15)] as char);
    }
}

/// An unscaled decimal (`digits`, optionally signed) with `scale` fractional digits, e.g.
/// `-1230` at scale 2 is `-12.30`; a negative scale appends zeros.
pub(crate) fn write_decimal(digits: &str, scale: i8, out: &mut String) {
    let (neg, digits) = match digits.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, digits),
    };
    if neg {
        out.push('-');
    }
    if scale <= 0 {
        out.push_str(digits);
        if digits != "0" {
            for _ in 0..-i32::from(scale) {
                out.push('0');
            }
        }
        return;
    }
    let scale = scale as usize;
    if digits.len() > scale {
        let (int, frac) = digits.split_at(digits.len() - scale);
        out.push_str(int);
        out.push('.');
        out.push_str(frac);
    } else {
        out.push_str("0.");
        for _ in digits.len()..scale {
            out.push('0');
        }
        out.push_str(digits);
    }
}

/// A float as `write_float` prints it, or a whole one as an integer for a target that reads
/// integers (`{:.0}` prints a float's exact value).
fn write_number(v: f64, single: bool, style: Style, out: &mut String) {
    match style.integer && v.is_finite() && v.fract() == 0.0 {
        true => {
            let _ = write!(out, "{v:.0}");
        }
        false => write_float(v, single, out),
    }
}

/// A float as `float8out`/`float4out` print it with extra_float_digits >= 1: the shortest text
/// that reads back as the same value, fixed-point for decimal exponents -4..15 (-4..6 for a
/// float4) and `d.ddde+XX` otherwise; `NaN`, `Infinity`, `-Infinity`.
pub(crate) fn write_float(v: f64, single: bool, out: &mut String) {
    if v.is_nan() {
        out.push_str("NaN");
        return;
    }
    if v.is_infinite() {
        out.push_str(if v > 0.0 { "Infinity" } else { "-Infinity" });
        return;
    }
    // Ryu, the algorithm PostgreSQL's own float8out/float4out run (src/common/d2s.c, f2s.c),
    // so that a tie between two shortest spellings rounds as the server's does (to even);
    // core::fmt's shortest digits round such a tie up.
    let mut buffer = ryu::Buffer::new();
    let text = match single {
        true => buffer.format_finite(v as f32),
        false => buffer.format_finite(v),
    };
    let (neg, digits, n, exp) = decimal_digits(text);
    let digits = &digits[..n];
    if neg {
        out.push('-');
    }
    let fixed_max = if single { 6 } else { 15 };
    if (-4..fixed_max).contains(&exp) {
        if exp < 0 {
            out.push_str("0.");
            for _ in 0..(-exp - 1) {
                out.push('0');
            }
            digits.iter().for_each(|&d| out.push(d as char));
        } else {
            let int_len = exp as usize + 1;
            for (i, &d) in digits.iter().enumerate() {
                if i == int_len {
                    out.push('.');
                }
                out.push(d as char);
            }
            for _ in digits.len()..int_len {
                out.push('0');
            }
        }
    } else {
        for (i, &d) in digits.iter().enumerate() {
            if i == 1 {
                out.push('.');
            }
            out.push(d as char);
        }
        let _ = write!(
            out,
            "e{}{:02}",
            if exp < 0 { '-' } else { '+' },
            exp.unsigned_abs()
        );
    }
}

/// Ryu's text (`-822949374346612.2`, `0.0001`, `1e16`, `1.5e-7`) as its sign, its significant
/// digits (the first `n` of the array, no zeros either side) and the first digit's decimal
/// exponent: `-822949374346612.2` is (true, "8229493743466122", 16, 14).
fn decimal_digits(text: &str) -> (bool, [u8; 24], usize, i32) {
    let (neg, text) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (mantissa, exp) = match text.split_once('e') {
        Some((m, e)) => (m, e.parse::<i32>().unwrap_or(0)),
        None => (text, 0),
    };
    let int_len = mantissa.find('.').unwrap_or(mantissa.len()) as i32;
    let mut digits = [b'0'; 24];
    let (mut n, mut zeros) = (0, 0);
    for d in mantissa.bytes().filter(u8::is_ascii_digit) {
        match (n, d) {
            (0, b'0') => zeros += 1,
            _ if n < digits.len() => {
                digits[n] = d;
                n += 1;
            }
            _ => {}
        }
    }
    while n > 1 && digits[n - 1] == b'0' {
        n -= 1;
    }
    match n {
        0 => (neg, digits, 1, 0),
        _ => (neg, digits, n, int_len - 1 - zeros + exp),
    }
}

/// A value as JSON: numbers and booleans as themselves, lists as arrays, structs and maps as
/// objects, everything else (strings, non-finite floats, dates, binary) as a JSON string of its
/// text form.
pub(crate) fn json_value(array: &dyn Array, row: usize, out: &mut String) {
    if is_null(array, row) {
        out.push_str("null");
        return;
    }
    let (array, row) = resolve(array, row);
    let style = Style {
        json: true,
        ..Style::default()
    };
    match array.data_type() {
        DataType::Boolean
        | DataType::Int8
        | DataType::Int16
        | DataType::Int32
        | DataType::Int64
        | DataType::UInt8
        | DataType::UInt16
        | DataType::UInt32
        | DataType::UInt64
        | DataType::Decimal32(_, _)
        | DataType::Decimal64(_, _)
        | DataType::Decimal128(_, _)
        | DataType::Decimal256(_, _) => scalar_text(array, row, style, out),
        DataType::Float32 | DataType::Float64 => {
            let start = out.len();
            scalar_text(array, row, style, out);
            let t = &out[start..];
            if t.ends_with("NaN") || t.ends_with("Infinity") {
                let t = t.to_string();
                out.truncate(start);
                json_string(&t, out);
            }
        }
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
            if let Some(s) = str_value(array, row) {
                json_string(s, out);
            }
        }
        DataType::List(_) | DataType::LargeList(_) | DataType::FixedSizeList(_, _) => {
            if let Some((values, range)) = list_range(array, row) {
                out.push('[');
                for (n, i) in range.enumerate() {
                    if n > 0 {
                        out.push(',');
                    }
                    json_value(values.as_ref(), i, out);
                }
                out.push(']');
            }
        }
        DataType::Struct(fields) => {
            let s = array.as_struct();
            out.push('{');
            for (n, (field, column)) in fields.iter().zip(s.columns()).enumerate() {
                if n > 0 {
                    out.push(',');
                }
                json_string(field.name(), out);
                out.push(':');
                json_value(column.as_ref(), row, out);
            }
            out.push('}');
        }
        DataType::Map(_, _) => {
            let m = array.as_map();
            let o = m.value_offsets();
            let (keys, values) = (m.keys(), m.values());
            out.push('{');
            let mut key = String::new();
            for (n, i) in (o[row].as_usize()..o[row + 1].as_usize()).enumerate() {
                if n > 0 {
                    out.push(',');
                }
                key.clear();
                if !is_null(keys.as_ref(), i) {
                    value_text(keys.as_ref(), i, Style::default(), &mut key);
                }
                json_string(&key, out);
                out.push(':');
                json_value(values.as_ref(), i, out);
            }
            out.push('}');
        }
        _ => {
            let mut text = String::new();
            scalar_text(array, row, Style::default(), &mut text);
            json_string(&text, out);
        }
    }
}

/// `s` as a JSON string literal.
pub(crate) fn json_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn float(v: f64, single: bool) -> String {
        let mut s = String::new();
        write_float(v, single, &mut s);
        s
    }

    #[test]
    fn floats_print_as_float8out() {
        // Checked against PostgreSQL's float8out / float4out (extra_float_digits = 1).
        assert_eq!(float(0.0, false), "0");
        assert_eq!(float(-0.0, false), "-0");
        assert_eq!(float(1.5, false), "1.5");
        assert_eq!(float(0.1, false), "0.1");
        assert_eq!(float(100.0, false), "100");
        assert_eq!(float(1e14, false), "100000000000000");
        assert_eq!(float(1e15, false), "1e+15");
        assert_eq!(float(123456789012345680.0, false), "1.2345678901234568e+17");
        assert_eq!(float(0.0001, false), "0.0001");
        assert_eq!(float(0.00001234, false), "1.234e-05");
        assert_eq!(float(1e300, false), "1e+300");
        assert_eq!(float(5e-324, false), "5e-324");
        assert_eq!(float(f64::NAN, false), "NaN");
        assert_eq!(float(f64::NEG_INFINITY, false), "-Infinity");
        assert_eq!(float(0.1f32 as f64, true), "0.1");
        assert_eq!(float(123456.0, true), "123456");
        assert_eq!(float(1234567.0, true), "1.234567e+06");
        assert_eq!(float(f32::MAX as f64, true), "3.4028235e+38");
    }

    #[test]
    fn decimals_keep_their_scale() {
        let d = |digits: &str, scale: i8| {
            let mut s = String::new();
            write_decimal(digits, scale, &mut s);
            s
        };
        assert_eq!(d("-1230", 2), "-12.30");
        assert_eq!(d("5", 3), "0.005");
        assert_eq!(d("-5", 3), "-0.005");
        assert_eq!(d("0", 2), "0.00");
        assert_eq!(d("123", 0), "123");
        assert_eq!(d("123", -2), "12300");
        assert_eq!(d("0", -2), "0");
    }

    #[test]
    fn json_strings() {
        let mut s = String::new();
        json_string("a\"b\\c\n\u{1}é", &mut s);
        assert_eq!(s, "\"a\\\"b\\\\c\\n\\u0001é\"");
    }
}
