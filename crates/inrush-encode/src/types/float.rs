//! `float4`, `float8`: PostgreSQL's `float4in`/`float8in` (glibc `strtof`/`strtod`).
//!
//! Accepted natively: surrounding whitespace, `[+-]digits[.digits][e[+-]digits]` (and `.5`,
//! `5.`), `NaN`, `inf`, `infinity` with optional sign, case-insensitively. Rust's float parsing
//! is correctly rounded, as glibc's is; float4 is parsed straight to `f32` (the server uses
//! `strtof`, not a narrowed double). Refused: empty or whitespace-only text. Deferred: results
//! that overflow to infinity or underflow to zero (the server says "out of range"), hex floats,
//! `nan(...)` and anything else Rust does not parse.
use super::trim_pg_space;
use crate::{EncodeError, Result};

/// What kind of float text this is.
enum Special {
    NaN { negative: bool },
    Inf { negative: bool },
    Number,
}

fn classify(t: &str) -> Option<Special> {
    let (negative, rest) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    if rest.eq_ignore_ascii_case("nan") {
        return Some(Special::NaN { negative });
    }
    if rest.eq_ignore_ascii_case("inf") || rest.eq_ignore_ascii_case("infinity") {
        return Some(Special::Inf { negative });
    }
    // Plain decimal: digits, at most one point, an exponent with at most 5 digits.
    let b = rest.as_bytes();
    let mut i = 0;
    let mut mantissa_digits = 0;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
        mantissa_digits += 1;
    }
    if i < b.len() && b[i] == b'.' {
        i += 1;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
            mantissa_digits += 1;
        }
    }
    if mantissa_digits == 0 {
        return None;
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
            i += 1;
        }
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == start || i - start > 5 {
            return None;
        }
    }
    if i != b.len() {
        return None;
    }
    Some(Special::Number)
}

/// True when the mantissa (before any exponent) has a nonzero digit.
fn has_nonzero_digit(t: &str) -> bool {
    t.bytes()
        .take_while(|&c| c != b'e' && c != b'E')
        .any(|c| (b'1'..=b'9').contains(&c))
}

#[cold]
fn empty(text: &str, type_name: &str) -> EncodeError {
    if text.as_bytes().contains(&0) {
        return EncodeError::Deferred;
    }
    EncodeError::Refused(format!(
        "invalid input syntax for type {type_name}: \"{text}\""
    ))
}

/// What differs between real and double precision: width, name, and the bit patterns of the
/// special values (which must be the server's, sign of NaN included).
trait PgFloat: std::str::FromStr + Copy {
    const NAME: &'static str;
    const NAN: u64;
    const INFINITY: u64;
    const SIGN: u64;
    const BYTES: usize;
    fn bits(self) -> u64;
    fn is_finite(self) -> bool;
    fn is_zero(self) -> bool;
}

impl PgFloat for f32 {
    const NAME: &'static str = "real";
    const NAN: u64 = 0x7fc0_0000;
    const INFINITY: u64 = 0x7f80_0000;
    const SIGN: u64 = 0x8000_0000;
    const BYTES: usize = 4;
    fn bits(self) -> u64 {
        u64::from(self.to_bits())
    }
    fn is_finite(self) -> bool {
        f32::is_finite(self)
    }
    fn is_zero(self) -> bool {
        self == 0.0
    }
}

impl PgFloat for f64 {
    const NAME: &'static str = "double precision";
    const NAN: u64 = 0x7ff8_0000_0000_0000;
    const INFINITY: u64 = 0x7ff0_0000_0000_0000;
    const SIGN: u64 = 0x8000_0000_0000_0000;
    const BYTES: usize = 8;
    fn bits(self) -> u64 {
        self.to_bits()
    }
    fn is_finite(self) -> bool {
        f64::is_finite(self)
    }
    fn is_zero(self) -> bool {
        self == 0.0
    }
}

/// Parsed directly at the type's width: real uses strtof, not double then narrowing.
fn encode_float<F: PgFloat>(text: &str, out: &mut Vec<u8>) -> Result<()> {
    let t = trim_pg_space(text);
    if t.is_empty() {
        return Err(empty(text, F::NAME));
    }
    let sign = |negative: bool| if negative { F::SIGN } else { 0 };
    let bits = match classify(t) {
        Some(Special::NaN { negative }) => F::NAN | sign(negative),
        Some(Special::Inf { negative }) => F::INFINITY | sign(negative),
        Some(Special::Number) => {
            let v: F = t.parse().map_err(|_| EncodeError::Deferred)?;
            // Overflow and underflow are errors whose wording the server owns.
            if !v.is_finite() || (v.is_zero() && has_nonzero_digit(t)) {
                return Err(EncodeError::Deferred);
            }
            v.bits()
        }
        None => return Err(EncodeError::Deferred),
    };
    out.extend_from_slice(&bits.to_be_bytes()[8 - F::BYTES..]);
    Ok(())
}

pub(crate) fn encode_float4(text: &str, out: &mut Vec<u8>) -> Result<()> {
    encode_float::<f32>(text, out)
}

pub(crate) fn encode_float8(text: &str, out: &mut Vec<u8>) -> Result<()> {
    encode_float::<f64>(text, out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e4(t: &str) -> Result<String> {
        let mut o = Vec::new();
        encode_float4(t, &mut o).map(|_| o.iter().map(|b| format!("{b:02x}")).collect())
    }
    fn e8(t: &str) -> Result<String> {
        let mut o = Vec::new();
        encode_float8(t, &mut o).map(|_| o.iter().map(|b| format!("{b:02x}")).collect())
    }

    #[test]
    fn golden_float8() {
        // float8send on PostgreSQL 18 and 15.
        for (t, h) in [
            ("NaN", "7ff8000000000000"),
            ("-NaN", "fff8000000000000"),
            ("-inf", "fff0000000000000"),
            ("Infinity", "7ff0000000000000"),
            ("+INFINITY", "7ff0000000000000"),
            ("1e-320", "00000000000007e8"),
            ("4.9e-324", "0000000000000001"),
            ("0.1", "3fb999999999999a"),
            (" 0.1\n", "3fb999999999999a"),
            ("-0", "8000000000000000"),
            ("1.e5", "40f86a0000000000"),
            (".5", "3fe0000000000000"),
            ("0e99999", "0000000000000000"),
            ("1.7976931348623157e308", "7fefffffffffffff"),
        ] {
            assert_eq!(e8(t).as_deref(), Ok(h), "{t}");
        }
    }

    #[test]
    fn golden_float4() {
        // float4send on PostgreSQL 18 and 15.
        for (t, h) in [
            ("NaN", "7fc00000"),
            ("+nan", "7fc00000"),
            ("-NaN", "ffc00000"),
            ("Infinity", "7f800000"),
            ("-Inf", "ff800000"),
            ("1e-40", "000116c2"),
            ("3.4028235e38", "7f7fffff"),
            ("0.1", "3dcccccd"),
            ("1.17549435e-38", "00800000"),
            ("1.5e-45", "00000001"),
            // Double rounding would give 0x3f800001 here; strtof gives 0x3f800000.
            ("1.00000005960464477539062500001", "3f800001"),
        ] {
            assert_eq!(e4(t).as_deref(), Ok(h), "{t}");
        }
    }

    #[test]
    fn refusals_and_deferrals() {
        assert_eq!(
            e8("  "),
            Err(EncodeError::Refused(
                "invalid input syntax for type double precision: \"  \"".into()
            ))
        );
        assert_eq!(
            e4(""),
            Err(EncodeError::Refused(
                "invalid input syntax for type real: \"\"".into()
            ))
        );
        for t in [
            "3.4028236e38",
            "7e-46",
            "1e-46",
            "0x1p3",
            "nan(12)",
            "1e",
            "abc",
            "1_0",
            "1e999999",
            "infin",
            "1,5",
            "--1",
            ". ",
            ".",
            "e5",
            "1e-400",
        ] {
            assert_eq!(e4(t), Err(EncodeError::Deferred), "{t}");
        }
        for t in ["1e309", "1e-400", "0x1p3", "nan(12)", "inf inity", "\0"] {
            assert_eq!(e8(t), Err(EncodeError::Deferred), "{t}");
        }
    }

    #[test]
    fn no_panic() {
        for b in 0..=255u8 {
            let s = String::from_utf8_lossy(&[b, b'1', b'.', b, b'e', b]).into_owned();
            let _ = e4(&s);
            let _ = e8(&s);
        }
        let _ = e8(&"9".repeat(100_000));
        let _ = e4(&format!("0.{}1", "0".repeat(10_000)));
    }
}
