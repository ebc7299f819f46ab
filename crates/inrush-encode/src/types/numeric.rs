//! `numeric`: PostgreSQL's `numeric_in` followed by `apply_typmod`, in the binary form of
//! `numeric_send` (ndigits, weight, sign, dscale, then base-10000 digits, all int16 big-endian).
//!
//! Accepted natively: surrounding whitespace, `[+-]digits[.digits][e[+-]digits]` including `.5`
//! and `5.`, with |exponent| <= 1000; a typmod `numeric(p,s)` with 0 <= s <= 1000 is applied by
//! rounding half away from zero to `s` places. Refused: empty or whitespace-only text. Deferred:
//! `NaN`/`Infinity` (version-dependent), PostgreSQL 16's `_`/`0x` forms, negative typmod scales
//! (PostgreSQL 15+), "numeric field overflow" (the message has a detail line), very long values,
//! and anything else unusual.
use super::trim_pg_space;
use crate::EncodeContext;
use crate::{EncodeError, Result};

const MAX_EXPONENT: i64 = 1000;
/// Conservative bounds on the result; larger values are valid but left to the server.
const MAX_NDIGITS: i64 = 1000;
const MAX_WEIGHT: i64 = 1000;
const MAX_DSCALE: i64 = 1000;

fn floor_div4(v: i64) -> i64 {
    v.div_euclid(4)
}

pub(crate) fn encode(
    text: &str,
    typmod: i32,
    _ctx: &EncodeContext,
    out: &mut Vec<u8>,
) -> Result<()> {
    let t = trim_pg_space(text).as_bytes();
    if t.is_empty() {
        if text.as_bytes().contains(&0) {
            return Err(EncodeError::Deferred);
        }
        return Err(EncodeError::Refused(format!(
            "invalid input syntax for type numeric: \"{text}\""
        )));
    }

    // ---- Lexing: sign, integer digits, fraction digits, exponent.
    let n = t.len();
    let mut i = 0;
    let mut negative = false;
    if t[0] == b'+' || t[0] == b'-' {
        negative = t[0] == b'-';
        i = 1;
    }
    let int_start = i;
    while i < n && t[i].is_ascii_digit() {
        i += 1;
    }
    let int_end = i;
    let mut frac_start = i;
    let mut frac_end = i;
    if i < n && t[i] == b'.' {
        i += 1;
        frac_start = i;
        while i < n && t[i].is_ascii_digit() {
            i += 1;
        }
        frac_end = i;
    }
    let int_count = (int_end - int_start) as i64;
    let frac_count = (frac_end - frac_start) as i64;
    if int_count + frac_count == 0 {
        return Err(EncodeError::Deferred);
    }
    let mut exp: i64 = 0;
    if i < n && (t[i] == b'e' || t[i] == b'E') {
        i += 1;
        let mut exp_negative = false;
        if i < n && (t[i] == b'+' || t[i] == b'-') {
            exp_negative = t[i] == b'-';
            i += 1;
        }
        let start = i;
        while i < n && t[i].is_ascii_digit() {
            exp = (exp * 10 + i64::from(t[i] - b'0')).min(MAX_EXPONENT + 1);
            i += 1;
        }
        if i == start || exp > MAX_EXPONENT {
            return Err(EncodeError::Deferred);
        }
        if exp_negative {
            exp = -exp;
        }
    }
    if i != n {
        return Err(EncodeError::Deferred);
    }
    if int_count + frac_count > 4 * MAX_NDIGITS + 8 {
        return Err(EncodeError::Deferred);
    }

    // ---- Decimal digits, with one leading slot for a rounding carry. Digit index k has
    // decimal place (intpos - 1 - k).
    let total = 1 + (int_count + frac_count) as usize;
    let mut stack = [0u8; 64];
    let mut heap;
    let digits: &mut [u8] = if total <= stack.len() {
        &mut stack[..total]
    } else {
        heap = vec![0u8; total];
        &mut heap[..]
    };
    for (slot, &c) in digits[1..]
        .iter_mut()
        .zip(t[int_start..int_end].iter().chain(&t[frac_start..frac_end]))
    {
        *slot = c - b'0';
    }
    let intpos: i64 = 1 + int_count + exp;
    let mut dscale: i64 = (frac_count - exp).max(0);
    let mut len = total as i64;

    // ---- The typmod: round to the scale; remember the allowed integer digits.
    let mut max_int_digits: Option<i64> = None;
    if typmod >= 4 {
        let m = typmod - 4;
        let precision = i64::from((m >> 16) & 0xffff);
        let scale = i64::from(m & 0xffff);
        if !(1..=1000).contains(&precision) || scale > 1000 {
            // Negative scales (PostgreSQL 15+) and anything unexpected.
            return Err(EncodeError::Deferred);
        }
        let keep = intpos + scale;
        if keep < len {
            if keep <= 0 {
                // Every digit is below the rounding place, and the one at it is the zero slot.
                len = 0;
            } else {
                let keep_u = keep as usize;
                let round_up = digits[keep_u] >= 5;
                len = keep;
                if round_up {
                    let mut j = keep_u;
                    loop {
                        // j >= 1 here; digits[0] is the carry slot and always absorbs.
                        j -= 1;
                        if digits[j] == 9 {
                            digits[j] = 0;
                        } else {
                            digits[j] += 1;
                            break;
                        }
                        if j == 0 {
                            // Unreachable (digits[0] starts at 0), but never panic.
                            return Err(EncodeError::Deferred);
                        }
                    }
                }
            }
        }
        dscale = scale;
        max_int_digits = Some(precision - scale);
    }
    let used = &digits[..len as usize];

    // ---- Strip zeros.
    let first = used.iter().position(|&d| d != 0);
    let last = used.iter().rposition(|&d| d != 0);
    let (first, last) = match (first, last) {
        (Some(f), Some(l)) => (f as i64, l as i64),
        _ => {
            if dscale > MAX_DSCALE {
                return Err(EncodeError::Deferred);
            }
            out.extend_from_slice(&0u16.to_be_bytes());
            out.extend_from_slice(&0u16.to_be_bytes());
            out.extend_from_slice(&0u16.to_be_bytes());
            out.extend_from_slice(&(dscale as u16).to_be_bytes());
            return Ok(());
        }
    };
    let lead_place = intpos - 1 - first;
    let last_place = intpos - 1 - last;
    if let Some(max) = max_int_digits {
        if lead_place + 1 > max {
            // "numeric field overflow" with a DETAIL line: let the server say it.
            return Err(EncodeError::Deferred);
        }
    }
    let weight = floor_div4(lead_place);
    let last_group = floor_div4(last_place);
    let ndigits = weight - last_group + 1;
    if ndigits > MAX_NDIGITS || weight.abs() > MAX_WEIGHT || dscale > MAX_DSCALE {
        return Err(EncodeError::Deferred);
    }

    out.extend_from_slice(&(ndigits as u16).to_be_bytes());
    out.extend_from_slice(&(weight as i16).to_be_bytes());
    out.extend_from_slice(&(if negative { 0x4000u16 } else { 0 }).to_be_bytes());
    out.extend_from_slice(&(dscale as u16).to_be_bytes());
    // Walk the base-10000 groups from `weight` down to `last_group`.
    for g in (last_group..=weight).rev() {
        let mut v: u16 = 0;
        for place in (4 * g..4 * g + 4).rev() {
            let idx = intpos - 1 - place;
            let d = if idx >= first && idx <= last {
                used[idx as usize]
            } else {
                0
            };
            v = v * 10 + u16::from(d);
        }
        out.extend_from_slice(&v.to_be_bytes());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn typmod(p: i32, s: i32) -> i32 {
        ((p << 16) | s) + 4
    }
    fn enc(t: &str, tm: i32) -> Result<String> {
        let mut o = Vec::new();
        encode(t, tm, &EncodeContext::default(), &mut o)
            .map(|_| o.iter().map(|b| format!("{b:02x}")).collect())
    }

    #[test]
    fn golden_unconstrained() {
        // numeric_send on PostgreSQL 18 and 15.
        for (t, h) in [
            ("1.5e3", "000100000000000005dc"),
            ("-.5", "0001ffff400000011388"),
            ("5.", "00010000000000000005"),
            ("0", "0000000000000000"),
            ("-0.000", "0000000000000003"),
            ("0.0001", "0001ffff000000040001"),
            ("12345678.9", "000300010000000104d2162e2328"),
            ("1e-3", "0001ffff00000003000a"),
            ("100000000", "00010002000000000001"),
            ("1.55e1", "0002000000000001000f1388"),
            ("12345e-2", "0002000000000002007b1194"),
            ("000123.4500", "0002000000000004007b1194"),
            ("1e100", "00010019000000000001"),
            ("\t 1.5e+3 \n", "000100000000000005dc"),
            ("1.5E-3", "0001ffff00000004000f"),
            ("1e0001", "0001000000000000000a"),
            ("+7", "00010000000000000007"),
        ] {
            assert_eq!(enc(t, -1).as_deref(), Ok(h), "{t}");
        }
    }

    #[test]
    fn golden_typmod() {
        for (t, p, s, h) in [
            ("12.340", 10, 3, "0002000000000003000c0d48"),
            ("12.3456", 10, 3, "0002000000000003000c0d84"),
            ("-12.3455", 10, 3, "0002000040000003000c0d84"),
            ("0.00001", 3, 5, "0001fffe0000000503e8"),
            ("0.00099", 3, 5, "0002ffff0000000500092328"),
            ("0.000999", 3, 5, "0001ffff00000005000a"),
            ("0.0009999", 3, 5, "0001ffff00000005000a"),
            ("99.994", 4, 2, "0002000000000002006326ac"),
            ("0.4", 3, 0, "0000000000000000"),
            ("0.5", 3, 0, "00010000000000000001"),
            ("-0.4", 3, 0, "0000000000000000"),
            ("9.99", 3, 1, "0001000000000001000a"),
            ("1e-9", 5, 2, "0000000000000002"),
        ] {
            assert_eq!(enc(t, typmod(p, s)).as_deref(), Ok(h), "{t} ({p},{s})");
        }
    }

    #[test]
    fn refusals_and_deferrals() {
        assert_eq!(
            enc("  ", -1),
            Err(EncodeError::Refused(
                "invalid input syntax for type numeric: \"  \"".into()
            ))
        );
        assert_eq!(
            enc("", 10),
            Err(EncodeError::Refused(
                "invalid input syntax for type numeric: \"\"".into()
            ))
        );
        for t in [
            "NaN", "Infinity", "-inf", "1_000", "0x1F", "1e", "1e1001", "1e-1001", ".", "-",
            "1.2.3", "1e+-3", "abc", "1 2",
        ] {
            assert_eq!(enc(t, -1), Err(EncodeError::Deferred), "{t}");
        }
        assert_eq!(enc("99.995", typmod(4, 2)), Err(EncodeError::Deferred));
        assert_eq!(enc("0.01", typmod(3, 5)), Err(EncodeError::Deferred));
        assert_eq!(
            enc("0.001", typmod(3, 5)).as_deref(),
            Ok("0001ffff00000005000a")
        );
        // numeric(5,-2) on PostgreSQL 15+.
        assert_eq!(
            enc("1", ((5 << 16) | (-2i32 & 0x7ff)) + 4),
            Err(EncodeError::Deferred)
        );
    }

    #[test]
    fn no_panic() {
        for b in 0..=255u8 {
            let s = String::from_utf8_lossy(&[b, b'1', b'.', b, b'e', b]).into_owned();
            for tm in [
                -1,
                4,
                typmod(1, 0),
                typmod(1000, 1000),
                typmod(3, 5),
                i32::MAX,
                i32::MIN,
            ] {
                let _ = enc(&s, tm);
            }
        }
        for tm in [-1, typmod(1000, 1000), typmod(10, 2)] {
            let _ = enc(&"9".repeat(100_000), tm);
            let _ = enc(&format!("0.{}", "9".repeat(3000)), tm);
            let _ = enc(&format!("{}.{}", "9".repeat(30), "9".repeat(30)), tm);
            let _ = enc(&format!("{}e-1000", "9".repeat(100)), tm);
        }
    }
}
