//! `int2`, `int4`, `int8`: PostgreSQL's `pg_strtoint16/32/64` (and `scanint8` before 14).
//!
//! Accepted natively: optional surrounding whitespace (`isspace`), an optional sign and ASCII
//! decimal digits. Refused: empty, garbage and out-of-range text whose wording is identical on
//! every supported server. Deferred: anything containing `_` or a `0x`/`0o`/`0b` prefix (accepted
//! by PostgreSQL 16+ only), a NUL byte, and overflowing digit runs followed by garbage (which
//! error wins there is a detail of each version's parser).
use super::is_pg_space;
use crate::{EncodeError, Result};

/// What the digits said.
enum Parsed {
    /// A syntactically valid decimal integer; `overflow` when the magnitude exceeded u64.
    Value {
        negative: bool,
        magnitude: u64,
        overflow: bool,
    },
    /// Not a plain decimal integer.
    Invalid,
}

#[inline]
fn parse(text: &str) -> Parsed {
    let b = text.as_bytes();
    let n = b.len();
    let mut i = 0;
    // Fast path: no leading whitespace, optional sign.
    while i < n && is_pg_space(b[i]) {
        i += 1;
    }
    let mut negative = false;
    if i < n && (b[i] == b'-' || b[i] == b'+') {
        negative = b[i] == b'-';
        i += 1;
    }
    let start = i;
    let mut magnitude: u64 = 0;
    // The first 19 digits cannot overflow a u64: no check per digit for any real integer.
    let unchecked_end = n.min(start + 19);
    while i < unchecked_end {
        let d = b[i].wrapping_sub(b'0');
        if d > 9 {
            break;
        }
        magnitude = magnitude * 10 + u64::from(d);
        i += 1;
    }
    let mut overflow = false;
    while i < n {
        let d = b[i].wrapping_sub(b'0');
        if d > 9 {
            break;
        }
        match magnitude
            .checked_mul(10)
            .and_then(|m| m.checked_add(u64::from(d)))
        {
            Some(m) => magnitude = m,
            None => overflow = true,
        }
        i += 1;
    }
    if i == start {
        return Parsed::Invalid;
    }
    while i < n && is_pg_space(b[i]) {
        i += 1;
    }
    if i != n {
        return Parsed::Invalid;
    }
    Parsed::Value {
        negative,
        magnitude,
        overflow,
    }
}

/// True when the text might be accepted by some supported server version (16+ syntax) or
/// contains something (NUL) that never reaches the input function as-is.
fn version_dependent(text: &str) -> bool {
    let b = text.as_bytes();
    if b.iter().any(|&c| c == b'_' || c == 0) {
        return true;
    }
    let t = super::trim_pg_space(text).as_bytes();
    let t = match t.first() {
        Some(b'+') | Some(b'-') => &t[1..],
        _ => t,
    };
    t.len() >= 2 && t[0] == b'0' && matches!(t[1], b'x' | b'X' | b'o' | b'O' | b'b' | b'B')
}

#[cold]
fn invalid(text: &str, type_name: &str) -> EncodeError {
    if version_dependent(text) {
        return EncodeError::Deferred;
    }
    // An overflowing digit run followed by garbage: which error wins differs by version.
    let b = text.as_bytes();
    let mut run = 0usize;
    let mut max_run = 0usize;
    for &c in b {
        if c.is_ascii_digit() {
            run += 1;
            max_run = max_run.max(run);
        } else {
            run = 0;
        }
    }
    if max_run >= 5 {
        return EncodeError::Deferred;
    }
    EncodeError::Refused(format!(
        "invalid input syntax for type {type_name}: \"{text}\""
    ))
}

#[cold]
fn out_of_range(text: &str, type_name: &str) -> EncodeError {
    if text.as_bytes().contains(&0) {
        return EncodeError::Deferred;
    }
    EncodeError::Refused(format!(
        "value \"{text}\" is out of range for type {type_name}"
    ))
}

/// Parses to an i64 within `[min, max]` (given as `max` and `max + 1` for the negative bound).
#[inline]
fn parse_bounded(text: &str, max: u64, type_name: &str) -> Result<i64> {
    match parse(text) {
        Parsed::Value {
            negative,
            magnitude,
            overflow,
        } => {
            let limit = if negative { max + 1 } else { max };
            if overflow || magnitude > limit {
                return Err(out_of_range(text, type_name));
            }
            // magnitude <= 2^63, so the wrapping negation of 2^63 is exactly i64::MIN.
            let v = magnitude as i64;
            Ok(if negative { v.wrapping_neg() } else { v })
        }
        Parsed::Invalid => Err(invalid(text, type_name)),
    }
}

pub(crate) fn encode_int2(text: &str, out: &mut Vec<u8>) -> Result<()> {
    let v = parse_bounded(text, i16::MAX as u64, "smallint")?;
    out.extend_from_slice(&(v as i16).to_be_bytes());
    Ok(())
}

pub(crate) fn encode_int4(text: &str, out: &mut Vec<u8>) -> Result<()> {
    let v = parse_bounded(text, i32::MAX as u64, "integer")?;
    out.extend_from_slice(&(v as i32).to_be_bytes());
    Ok(())
}

pub(crate) fn encode_int8(text: &str, out: &mut Vec<u8>) -> Result<()> {
    let v = parse_bounded(text, i64::MAX as u64, "bigint")?;
    out.extend_from_slice(&v.to_be_bytes());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e2(t: &str) -> Result<Vec<u8>> {
        let mut o = Vec::new();
        encode_int2(t, &mut o).map(|_| o)
    }
    fn e4(t: &str) -> Result<Vec<u8>> {
        let mut o = Vec::new();
        encode_int4(t, &mut o).map(|_| o)
    }
    fn e8(t: &str) -> Result<Vec<u8>> {
        let mut o = Vec::new();
        encode_int8(t, &mut o).map(|_| o)
    }
    fn hex(v: Vec<u8>) -> String {
        v.iter().map(|b| format!("{b:02x}")).collect()
    }
    fn refused(r: Result<Vec<u8>>) -> String {
        match r {
            Err(EncodeError::Refused(m)) => m,
            other => panic!("expected refusal, got {other:?}"),
        }
    }

    #[test]
    fn golden() {
        // From int2send/int4send/int8send on PostgreSQL 18 and 15.
        assert_eq!(hex(e4("12").unwrap()), "0000000c");
        assert_eq!(hex(e4(" \t-12\n ").unwrap()), "fffffff4");
        assert_eq!(hex(e4("+2147483647").unwrap()), "7fffffff");
        assert_eq!(hex(e4("-2147483648").unwrap()), "80000000");
        assert_eq!(hex(e4("-0").unwrap()), "00000000");
        assert_eq!(hex(e4("000000000000000000000000042").unwrap()), "0000002a");
        assert_eq!(hex(e2("-32768").unwrap()), "8000");
        assert_eq!(hex(e2("32767").unwrap()), "7fff");
        assert_eq!(hex(e8("-9223372036854775808").unwrap()), "8000000000000000");
        assert_eq!(hex(e8("9223372036854775807").unwrap()), "7fffffffffffffff");
        assert_eq!(hex(e8("\x0b\x0c1\r").unwrap()), "0000000000000001");
    }

    #[test]
    fn digits_either_side_of_the_unchecked_run() {
        // 19 digits are read without overflow checks, the rest with them.
        assert_eq!(hex(e8("1000000000000000000").unwrap()), "0de0b6b3a7640000");
        assert_eq!(
            hex(e8("0000000000000000000009223372036854775807").unwrap()),
            "7fffffffffffffff"
        );
        assert_eq!(
            hex(e8("-00000000000000000009223372036854775808").unwrap()),
            "8000000000000000"
        );
        for t in [
            "9999999999999999999",
            "18446744073709551615",
            "18446744073709551616",
            "-99999999999999999999",
        ] {
            assert_eq!(
                refused(e8(t)),
                format!("value \"{t}\" is out of range for type bigint")
            );
        }
        assert_eq!(
            refused(e4("00000000000000000002147483648")),
            "value \"00000000000000000002147483648\" is out of range for type integer"
        );
    }

    #[test]
    fn refusals() {
        assert_eq!(
            refused(e4("99999999999")),
            "value \"99999999999\" is out of range for type integer"
        );
        assert_eq!(
            refused(e4(" 99999999999 ")),
            "value \" 99999999999 \" is out of range for type integer"
        );
        assert_eq!(
            refused(e4("2147483648")),
            "value \"2147483648\" is out of range for type integer"
        );
        assert_eq!(
            refused(e2("-32769")),
            "value \"-32769\" is out of range for type smallint"
        );
        assert_eq!(
            refused(e8("9223372036854775808")),
            "value \"9223372036854775808\" is out of range for type bigint"
        );
        assert_eq!(
            refused(e8("-99999999999999999999999999")),
            "value \"-99999999999999999999999999\" is out of range for type bigint"
        );
        assert_eq!(
            refused(e2("abc")),
            "invalid input syntax for type smallint: \"abc\""
        );
        assert_eq!(
            refused(e8("")),
            "invalid input syntax for type bigint: \"\""
        );
        assert_eq!(
            refused(e4("1 2")),
            "invalid input syntax for type integer: \"1 2\""
        );
        assert_eq!(
            refused(e4("  ")),
            "invalid input syntax for type integer: \"  \""
        );
        assert_eq!(
            refused(e4("-")),
            "invalid input syntax for type integer: \"-\""
        );
        assert_eq!(
            refused(e4("+-1")),
            "invalid input syntax for type integer: \"+-1\""
        );
        assert_eq!(
            refused(e4("1.0")),
            "invalid input syntax for type integer: \"1.0\""
        );
        assert_eq!(
            refused(e4("１")),
            "invalid input syntax for type integer: \"１\""
        );
    }

    #[test]
    fn deferrals() {
        for t in [
            "1_000",
            "0x1F",
            "-0X1f",
            "0o17",
            "+0b101",
            " 0b",
            "1\0",
            "99999999999x",
            "0_",
            "_1",
        ] {
            assert_eq!(e4(t), Err(EncodeError::Deferred), "{t:?}");
        }
    }

    #[test]
    fn no_panic() {
        let mut o = Vec::new();
        for b in 0..=255u8 {
            let s = String::from_utf8_lossy(&[b, b'1', b]).into_owned();
            let _ = encode_int2(&s, &mut o);
            let _ = encode_int4(&s, &mut o);
            let _ = encode_int8(&s, &mut o);
        }
        let long = "9".repeat(100_000);
        assert!(matches!(e8(&long), Err(EncodeError::Refused(_))));
        let _ = e4(&"-".repeat(1000));
    }
}
