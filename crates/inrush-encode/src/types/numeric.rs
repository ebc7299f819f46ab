//! `numeric`: PostgreSQL's `numeric_in` followed by `apply_typmod`, in the binary form of
//! `numeric_send` (ndigits, weight, sign, dscale, then base-10000 digits, all int16 big-endian).
//!
//! Accepted natively: surrounding whitespace, `[+-]digits[.digits][e[+-]digits]` including `.5`
//! and `5.`, with |exponent| <= 1000; a typmod `numeric(p,s)` with 0 <= s <= 1000 is applied by
//! rounding half away from zero to `s` places. Refused: empty or whitespace-only text. Deferred:
//! `NaN`/`Infinity` (version-dependent), PostgreSQL 16's `_`/`0x` forms, negative typmod scales
//! (PostgreSQL 15+), "numeric field overflow" (the message has a detail line), very long values,
//! and anything else unusual.
use super::{is_pg_space, trim_pg_space};
use crate::EncodeContext;
use crate::{EncodeError, Result};

const MAX_EXPONENT: i64 = 1000;
/// Conservative bounds on the result; larger values are valid but left to the server.
const MAX_NDIGITS: i64 = 1000;
const MAX_WEIGHT: i64 = 1000;
const MAX_DSCALE: i64 = 1000;

/// Reads up to 19 ASCII digits at `*i` (advancing it): their value and count, `None` when a
/// 20th digit follows (the value could overflow u64).
#[inline]
fn digits19(t: &[u8], i: &mut usize) -> Option<(u64, usize)> {
    let start = *i;
    let mut value: u64 = 0;
    while let Some(d) = t.get(*i).map(|c| c.wrapping_sub(b'0')).filter(|d| *d <= 9) {
        if *i - start == 19 {
            return None;
        }
        value = value * 10 + u64::from(d);
        *i += 1;
    }
    Some((value, *i - start))
}

fn floor_div4(v: i64) -> i64 {
    v.div_euclid(4)
}

pub(crate) fn encode(
    text: &str,
    typmod: i32,
    _ctx: &EncodeContext,
    out: &mut Vec<u8>,
) -> Result<()> {
    if encode_fast(text.as_bytes(), typmod, out) {
        return Ok(());
    }
    encode_general(text, typmod, out)
}

/// `10^k` for k in 0..=19 (every power that fits a u64).
const POW10: [u64; 20] = {
    let mut p = [1u64; 20];
    let mut k = 1;
    while k < 20 {
        p[k] = p[k - 1] * 10;
        k += 1;
    }
    p
};

/// The common case without allocation: `[+-]digits[.digits]` with no whitespace, no exponent,
/// at most 19 integer digits and 19 fraction digits (at most 16 once the typmod's
/// rounding is applied). Appends the value and answers true only when the result is exactly
/// what [`encode_general`] would produce; answers false (with `out` untouched) for everything
/// else, including overflow, so that the general path decides.
#[inline]
fn encode_fast(t: &[u8], typmod: i32, out: &mut Vec<u8>) -> bool {
    let n = t.len();
    let mut i = 0;
    let mut negative = false;
    match t.first() {
        Some(b'-') => {
            negative = true;
            i = 1;
        }
        Some(b'+') => i = 1,
        Some(_) => {}
        None => return false,
    }
    // Integer and fraction parts: at most 19 digits each (leading zeros included), so < 10^19.
    let Some((mut ip, digit_count)) = digits19(t, &mut i) else {
        return false;
    };
    let (mut fp, mut f) = (0u64, 0usize);
    if i < n && t[i] == b'.' {
        i += 1;
        let Some(frac) = digits19(t, &mut i) else {
            return false;
        };
        (fp, f) = frac;
    }
    if i != n || digit_count + f == 0 {
        return false;
    }

    // The typmod: round the fraction half away from zero to `scale` places.
    let dscale: i64;
    let mut max_int_digits: Option<i64> = None;
    if typmod >= 4 {
        let m = typmod - 4;
        let precision = i64::from((m >> 16) & 0xffff);
        let scale = i64::from(m & 0xffff);
        if !(1..=1000).contains(&precision) || scale > 1000 {
            return false;
        }
        let s = scale as usize;
        if s < f {
            // f - s is in 1..=19, so the divisor fits.
            let p = POW10[f - s];
            let mut q = fp / p;
            if fp % p >= p / 2 {
                q += 1;
                // The fraction rounded up to 1: carry into the integer part (< 10^19 + 1).
                if q == POW10[s] {
                    q = 0;
                    ip += 1;
                }
            }
            fp = q;
            f = s;
        }
        dscale = scale;
        max_int_digits = Some(precision - scale);
    } else {
        dscale = f as i64;
    }

    if ip == 0 && fp == 0 {
        let mut zero = [0u8; 8];
        zero[6..8].copy_from_slice(&(dscale as u16).to_be_bytes());
        out.extend_from_slice(&zero);
        return true;
    }
    if f > 16 {
        return false;
    }

    // Base-10000 groups at fixed slots: 0..5 hold the integer part (< 10^19 + 1, so at most
    // 5 groups) right-aligned, slot k having weight 4 - k; 5..9 hold the fraction padded to
    // 16 digits (< 10^16). Slots 9.. stay zero so that reads past the last group are zero.
    let mut groups = [0u16; 9 + 8];
    if ip < 10000 {
        groups[4] = ip as u16;
    } else if ip < 100_000_000 {
        groups[3] = (ip / 10000) as u16;
        groups[4] = (ip % 10000) as u16;
    } else {
        let mut x = ip;
        for slot in groups[..5].iter_mut().rev() {
            *slot = (x % 10000) as u16;
            x /= 10000;
        }
        if x != 0 {
            return false;
        }
    }
    if f <= 4 {
        groups[5] = (fp * POW10[4 - f]) as u16;
    } else {
        let fx = fp * POW10[16 - f];
        let (hi, lo) = (fx / 100_000_000, fx % 100_000_000);
        groups[5] = (hi / 10000) as u16;
        groups[6] = (hi % 10000) as u16;
        groups[7] = (lo / 10000) as u16;
        groups[8] = (lo % 10000) as u16;
    }
    // Bit 8 - k set when slot k is nonzero: the first and last nonzero slots without loops.
    let mut mask = 0u32;
    for (k, &g) in groups[..9].iter().enumerate() {
        mask |= u32::from(g != 0) << (8 - k);
    }
    if mask == 0 {
        return false;
    }
    let first = (mask.leading_zeros() - (32 - 9)) as usize;
    let last = 8 - mask.trailing_zeros() as usize;
    let weight = 4 - first as i64;
    let ndigits = last + 1 - first;
    let lead = groups.get(first).copied().unwrap_or(0);
    if let Some(max) = max_int_digits {
        // Decimal digits before the point, or minus the zeros just after it
        // (`lead_place + 1` in the general path).
        let lead_digits =
            1 + i64::from(lead >= 10) + i64::from(lead >= 100) + i64::from(lead >= 1000);
        if 4 * weight + lead_digits > max {
            return false;
        }
    }

    // Header and up to 9 groups as four fixed-size big-endian words, then cut to length.
    let g = |k: usize| u64::from(groups.get(first + k).copied().unwrap_or(0));
    let header = (ndigits as u64) << 48
        | u64::from(weight as i16 as u16) << 32
        | if negative { 0x4000u64 << 16 } else { 0 }
        | u64::from(dscale as u16);
    let w1 = g(0) << 48 | g(1) << 32 | g(2) << 16 | g(3);
    let w2 = g(4) << 48 | g(5) << 32 | g(6) << 16 | g(7);
    let start = out.len();
    out.reserve(8 + 2 * 9);
    out.extend_from_slice(&header.to_be_bytes());
    out.extend_from_slice(&w1.to_be_bytes());
    if ndigits > 4 {
        out.extend_from_slice(&w2.to_be_bytes());
        out.extend_from_slice(&(g(8) as u16).to_be_bytes());
    }
    out.truncate(start + 8 + 2 * ndigits);
    true
}

/// The full reader: whitespace, exponents, any length.
#[inline(never)]
fn encode_general(text: &str, typmod: i32, out: &mut Vec<u8>) -> Result<()> {
    let raw = text.as_bytes();
    let t = match (raw.first(), raw.last()) {
        (Some(&a), Some(&b)) if !is_pg_space(a) && !is_pg_space(b) => raw,
        _ => trim_pg_space(text).as_bytes(),
    };
    if t.is_empty() {
        if text.as_bytes().contains(&0) {
            return Err(EncodeError::Deferred);
        }
        return Err(EncodeError::Refused(format!(
            "invalid input syntax for type numeric: \"{text}\""
        )));
    }
    let lexed = lex(t)?;
    let (int_count, frac_count) = (lexed.int.len() as i64, lexed.frac.len() as i64);

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
    let lexed_digits = t[lexed.int.clone()].iter().chain(&t[lexed.frac.clone()]);
    for (slot, &c) in digits[1..].iter_mut().zip(lexed_digits) {
        *slot = c - b'0';
    }
    let intpos: i64 = 1 + int_count + lexed.exp;
    let mut digits = Digits {
        digits,
        len: total as i64,
        intpos,
        dscale: (frac_count - lexed.exp).max(0),
        max_int_digits: None,
    };
    if typmod >= 4 {
        digits.round_to(typmod)?;
    }
    digits.pack(lexed.negative, out)
}

/// A numeric's text, lexed: sign, integer digits, fraction digits, exponent.
struct Lexed {
    negative: bool,
    int: std::ops::Range<usize>,
    frac: std::ops::Range<usize>,
    exp: i64,
}

/// Lexes `t` (trimmed, not empty); anything PostgreSQL's reader would treat otherwise (no
/// digits, a stray byte, an exponent out of range, too many digits) is deferred to it.
fn lex(t: &[u8]) -> Result<Lexed> {
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
    let int = int_start..i;
    let mut frac = i..i;
    if i < n && t[i] == b'.' {
        i += 1;
        let frac_start = i;
        while i < n && t[i].is_ascii_digit() {
            i += 1;
        }
        frac = frac_start..i;
    }
    if int.is_empty() && frac.is_empty() {
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
    if i != n || (int.len() + frac.len()) as i64 > 4 * MAX_NDIGITS + 8 {
        return Err(EncodeError::Deferred);
    }
    Ok(Lexed {
        negative,
        int,
        frac,
        exp,
    })
}

/// A numeric's decimal digits (`digits[0]` the carry slot), as the typmod leaves them.
struct Digits<'a> {
    digits: &'a mut [u8],
    /// The digits in use.
    len: i64,
    /// Digit index k has decimal place (intpos - 1 - k).
    intpos: i64,
    dscale: i64,
    /// The integer digits the typmod allows.
    max_int_digits: Option<i64>,
}

impl Digits<'_> {
    /// Rounds to the typmod's scale, half away from zero, and notes its integer digits.
    fn round_to(&mut self, typmod: i32) -> Result<()> {
        let m = typmod - 4;
        let precision = i64::from((m >> 16) & 0xffff);
        let scale = i64::from(m & 0xffff);
        if !(1..=1000).contains(&precision) || scale > 1000 {
            // Negative scales (PostgreSQL 15+) and anything unexpected.
            return Err(EncodeError::Deferred);
        }
        let keep = self.intpos + scale;
        if keep < self.len {
            if keep <= 0 {
                // Every digit is below the rounding place, and the one at it is the zero slot.
                self.len = 0;
            } else {
                let keep_u = keep as usize;
                let round_up = self.digits[keep_u] >= 5;
                self.len = keep;
                if round_up {
                    let mut j = keep_u;
                    loop {
                        // j >= 1 here; digits[0] is the carry slot and always absorbs.
                        j -= 1;
                        if self.digits[j] == 9 {
                            self.digits[j] = 0;
                        } else {
                            self.digits[j] += 1;
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
        self.dscale = scale;
        self.max_int_digits = Some(precision - scale);
        Ok(())
    }

    /// Writes the binary numeric: zeros stripped, base-10000 groups.
    fn pack(&self, negative: bool, out: &mut Vec<u8>) -> Result<()> {
        let (intpos, dscale) = (self.intpos, self.dscale);
        let used = &self.digits[..self.len as usize];
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
        if let Some(max) = self.max_int_digits {
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
    /// Both paths on one text: the fast path must either decline (leaving `out` untouched) or
    /// produce exactly the general path's bytes.
    fn fast_matches_general(t: &str, tm: i32) -> bool {
        let mut fast = vec![0xaa];
        let took = encode_fast(t.as_bytes(), tm, &mut fast);
        let mut general = vec![0xaa];
        let g = encode_general(t, tm, &mut general);
        if took {
            assert_eq!(g, Ok(()), "{t:?} typmod {tm}: fast Ok, general {g:?}");
            assert_eq!(fast, general, "{t:?} typmod {tm}");
        } else {
            assert_eq!(fast, vec![0xaa], "{t:?} typmod {tm}: declined but wrote");
        }
        took
    }

    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    const TYPMODS: [(i32, i32); 16] = [
        (15, 2),
        (5, 0),
        (3, 5),
        (6, 2),
        (4, 2),
        (1, 0),
        (2, 1),
        (3, 0),
        (10, 3),
        (12, 4),
        (19, 4),
        (20, 0),
        (38, 18),
        (18, 17),
        (1000, 1000),
        (1000, 0),
    ];

    /// Digit strings of a given length in several shapes.
    fn digit_string(rng: &mut Rng, len: usize) -> String {
        let shape = rng.below(6);
        (0..len)
            .map(|k| {
                let d = match shape {
                    0 => 9,
                    1 => 0,
                    2 if k == 0 => 0,
                    3 if k + 1 == len => 0,
                    4 if k + 1 == len => 5,
                    5 if k + 1 < len => 9,
                    _ => rng.below(10) as u8,
                };
                char::from(b'0' + d)
            })
            .collect()
    }

    /// Deterministic corpus of plain decimals: every sign, integer and fraction length up to
    /// 21, and the tricky roundings, under each typmod and unconstrained.
    fn corpus() -> Vec<(String, i32)> {
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        let mut v = Vec::new();
        let mut typmods = vec![-1, 0, 3, 4];
        typmods.extend(TYPMODS.iter().map(|&(p, s)| typmod(p, s)));
        let fixed = [
            "0",
            "-0",
            "+0",
            ".5",
            "5.",
            "-.5",
            "-5.",
            "0.",
            ".0",
            "00",
            "-00.000",
            "17",
            "24386.67",
            "0.04",
            "-5.5",
            "9999.995",
            "99.995",
            "99.994",
            "-99.995",
            "0.005",
            "0.0049999",
            "999999999999999999",
            "9999999999999999999",
            "10000000000000000000",
            "0.9999999999999999",
            "0.99999999999999999",
            "0.9999999999999999999",
            "9999999999999999999.9999999999999999999",
            "0.0000000000000000001",
            "1.0000000000000000000",
            "0000000000000000000000001.5",
            "12345678.9",
            "100000000",
            "0.0001",
            "0.00001",
            "0.00999",
            "0.000999",
            "0.009995",
            "1.00",
            "0.50",
            "0.49",
            "-0.5",
            "-0.4",
            "9.5",
            "99999.5",
            "-999.9999",
            "+24386.67",
            "1234567890123.455",
            "9999999999999.995",
            "9999999999999.994",
        ];
        for t in fixed {
            for &tm in &typmods {
                v.push((t.to_string(), tm));
            }
        }
        for sign in ["", "-", "+"] {
            for il in 0..=21 {
                for fl in 0..=21 {
                    for rep in 0..4 {
                        let int = digit_string(&mut rng, il);
                        let t = if fl == 0 && rep % 2 == 0 {
                            format!("{sign}{int}")
                        } else {
                            format!("{sign}{int}.{}", digit_string(&mut rng, fl))
                        };
                        let tm = typmods[rng.below(typmods.len() as u64) as usize];
                        v.push((t, tm));
                    }
                }
            }
        }
        // Short values like real data, under the typmods that matter most.
        for _ in 0..20_000 {
            let il = rng.below(8) as usize;
            let fl = rng.below(6) as usize;
            let sign = ["", "-", ""][rng.below(3) as usize];
            let t = format!(
                "{sign}{}.{}",
                digit_string(&mut rng, il),
                digit_string(&mut rng, fl)
            );
            let t = if fl == 0 && rng.below(2) == 0 {
                t.trim_end_matches('.').to_string()
            } else {
                t
            };
            let tm = typmods[rng.below(typmods.len() as u64) as usize];
            v.push((t, tm));
        }
        v
    }

    #[test]
    fn fast_path_matches_general_path() {
        let mut taken = 0;
        let all = corpus();
        for (t, tm) in &all {
            if fast_matches_general(t, *tm) {
                taken += 1;
            }
        }
        // Every typmod on a whole grid of digit counts, scales and signs.
        let mut rng = Rng(7);
        for &(p, s) in TYPMODS.iter() {
            for il in 0..=20 {
                for fl in 0..=20 {
                    for sign in ["", "-"] {
                        let t = format!(
                            "{sign}{}.{}",
                            digit_string(&mut rng, il),
                            digit_string(&mut rng, fl)
                        );
                        if fast_matches_general(&t, typmod(p, s)) {
                            taken += 1;
                        }
                    }
                }
            }
        }
        assert!(taken > all.len() / 2, "fast path taken only {taken} times");
    }

    #[test]
    fn fast_path_covers_common_values() {
        for (t, tm) in [
            ("24386.67", typmod(15, 2)),
            ("0.04", typmod(15, 2)),
            ("17", typmod(15, 2)),
            ("-5.5", typmod(15, 2)),
            ("24386.67", -1),
            ("0.04", -1),
            ("17", -1),
            ("-5.5", -1),
            ("99.995", typmod(6, 2)),
            ("0.001", typmod(3, 5)),
            ("-0", typmod(5, 0)),
            (".5", -1),
            ("5.", -1),
        ] {
            assert!(fast_matches_general(t, tm), "{t} {tm}");
        }
        // Overflow after rounding, whitespace and exponents are left to the general path.
        for (t, tm) in [
            ("9999.995", typmod(6, 2)),
            ("99999.5", typmod(5, 0)),
            ("0.01", typmod(3, 5)),
            (" 1", -1),
            ("1 ", -1),
            ("1e3", -1),
            ("", -1),
            ("-", -1),
            (".", -1),
            ("1_000", -1),
        ] {
            assert!(!fast_matches_general(t, tm), "{t} {tm}");
        }
        // numeric_send(numeric_in('99.995', 0, typmod(6, 2))) on PostgreSQL 18 and 15.
        assert_eq!(
            enc("99.995", typmod(6, 2)).as_deref(),
            Ok("00010000000000020064")
        );
        assert_eq!(enc("9999.995", typmod(6, 2)), Err(EncodeError::Deferred));
    }

    /// Writes `text<TAB>typmod<TAB>hex` for every corpus value the encoder accepts, for
    /// comparison with a server: `NUMERIC_CORPUS_OUT=/tmp/x.tsv cargo test ... -- --ignored`.
    #[test]
    #[ignore]
    fn dump_corpus_for_server_check() {
        let Ok(path) = std::env::var("NUMERIC_CORPUS_OUT") else {
            return;
        };
        let mut lines = String::new();
        for (t, tm) in corpus() {
            if let Ok(h) = enc(&t, tm) {
                lines.push_str(&format!("{t}\t{tm}\t{h}\n"));
            }
        }
        std::fs::write(path, lines).expect("write corpus");
    }

    /// Timing only: `cargo test --release -p inrush-encode -- --ignored --nocapture numeric`.
    #[test]
    #[ignore]
    fn bench_numeric_encode() {
        let ctx = EncodeContext::default();
        // Values shaped like TPC-H lineitem's numeric(15,2) columns.
        let mut vals: Vec<String> = Vec::new();
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for i in 0..4096u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            vals.push(match i % 4 {
                0 => format!("{}", 1 + x % 50),
                1 => format!("{}.{:02}", 900 + x % 100_000, (x >> 20) % 100),
                2 => format!("0.{:02}", x % 11),
                _ => format!("0.0{}", x % 9),
            });
        }
        for (label, tm) in [("numeric(15,2)", typmod(15, 2)), ("numeric", -1)] {
            let n = 10_000_000usize;
            let mut out = Vec::with_capacity(64);
            let mut sink = 0usize;
            let start = std::time::Instant::now();
            for k in 0..n {
                out.clear();
                let v = &vals[k & 4095];
                if encode(std::hint::black_box(v), tm, &ctx, &mut out).is_ok() {
                    sink += out.len();
                }
            }
            let el = start.elapsed();
            println!(
                "{label}: {:.2} ns/value (sink {sink})",
                el.as_nanos() as f64 / n as f64
            );
        }
    }
}
