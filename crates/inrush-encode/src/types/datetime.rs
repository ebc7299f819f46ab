//! `date`, `time`, `timestamp` and `timestamptz`: the ISO forms real data files use, parsed
//! byte by byte without allocation; everything else is deferred to the server.
//!
//! Native forms (after trimming the whitespace the server ignores):
//! - date part: `YYYY-M[M]-D[D]` (4-digit year 0001..9999) or `YYYYMMDD`, read so under every
//!   DateStyle; and when the session's field order is DMY or MDY, `D[D]/M[M]/YYYY` or
//!   `M[M]/D[D]/YYYY` in that order, with `/`, `-` or `.` twice (the server's `DecodeDate`
//!   takes one or two digits first as the day under DMY, the month under MDY, and a
//!   four-digit year last as it stands; a two-digit year is widened by the server, so deferred);
//! - time part: `H[H]:MM[:SS[.f{1,6}]]`, hour 0..23, minute and second 0..59;
//! - timestamp: date part, optionally followed by one or more spaces or a single `T`/`t` and a
//!   time part;
//! - offset (after a time part, optionally preceded by one space): `Z`, `z`, `+HH`, `+HH:MM`,
//!   `+HHMM` (and `-`), hours 0..14, minutes 0..59;
//! - the specials `epoch`, `infinity`, `-infinity` in any case (not `+infinity`: PostgreSQL 18
//!   accepts it, 15 refuses it).
//!
//! What each type does with the parts, as verified on PostgreSQL 15 and 18:
//! - `date` reads the date part and ignores a following valid time part and offset;
//! - `time` reads the time part and ignores a following offset;
//! - `timestamp` ignores the offset;
//! - `timestamptz` converts with the offset, or, without one, only when the session time zone
//!   is UTC.
//!
//! typmod rounding follows `AdjustTimeForTypmod` / `AdjustTimestampForTypmod`: half away from
//! zero on the microsecond count, which for timestamps before 2000-01-01 (negative values)
//! means a half rounds towards the earlier instant.
use crate::{DateOrder, EncodeContext};
use crate::{EncodeError, Result};

use super::cursor::Cursor;
use super::trim_pg_space;

const USECS_PER_SEC: i64 = 1_000_000;
const USECS_PER_DAY: i64 = 86_400 * USECS_PER_SEC;
/// Days from 1970-01-01 to 2000-01-01.
const UNIX_TO_PG_DAYS: i64 = 10_957;
/// Largest numeric offset hour accepted natively (the server allows up to 15; real zones stop
/// at 14).
const MAX_OFFSET_HOUR: u64 = 14;

pub(crate) fn encode_date(text: &str, ctx: &EncodeContext, out: &mut Vec<u8>) -> Result<()> {
    if let Some(days) = iso_date(text.as_bytes()) {
        out.extend_from_slice(&(days as i32).to_be_bytes());
        return Ok(());
    }
    let s = trim_pg_space(text).as_bytes();
    if let Some(special) = special(s) {
        let v = match special {
            Special::Epoch => -(UNIX_TO_PG_DAYS as i32),
            Special::Infinity => i32::MAX,
            Special::NegInfinity => i32::MIN,
        };
        out.extend_from_slice(&v.to_be_bytes());
        return Ok(());
    }
    let mut p = Cursor::new(s);
    let date = date_part(&mut p, ctx.date_order).ok_or(EncodeError::Deferred)?;
    if !p.at_end() {
        // A valid time (and offset) after the date is read and ignored by date_in.
        if !separator(&mut p) {
            return Err(EncodeError::Deferred);
        }
        time_part(&mut p).ok_or(EncodeError::Deferred)?;
        offset_or_end(&mut p).ok_or(EncodeError::Deferred)?;
    }
    let days = pg_days(date);
    // 0001-01-01..9999-12-31 always fits.
    out.extend_from_slice(&(days as i32).to_be_bytes());
    Ok(())
}

pub(crate) fn encode_time(
    text: &str,
    typmod: i32,
    _ctx: &EncodeContext,
    out: &mut Vec<u8>,
) -> Result<()> {
    if !(-1..=6).contains(&typmod) {
        return Err(EncodeError::Deferred);
    }
    let s = trim_pg_space(text).as_bytes();
    let mut p = Cursor::new(s);
    let t = time_part(&mut p).ok_or(EncodeError::Deferred)?;
    // time_in ignores a zone after the time.
    offset_or_end(&mut p).ok_or(EncodeError::Deferred)?;
    let t = round_typmod(t, typmod);
    out.extend_from_slice(&t.to_be_bytes());
    Ok(())
}

pub(crate) fn encode_timestamp(
    text: &str,
    typmod: i32,
    ctx: &EncodeContext,
    out: &mut Vec<u8>,
) -> Result<()> {
    let (v, _offset) = parse_timestamp(text, typmod, ctx.date_order)?;
    out.extend_from_slice(&v.to_be_bytes());
    Ok(())
}

pub(crate) fn encode_timestamptz(
    text: &str,
    typmod: i32,
    ctx: &EncodeContext,
    out: &mut Vec<u8>,
) -> Result<()> {
    if !(-1..=6).contains(&typmod) {
        return Err(EncodeError::Deferred);
    }
    // Rounding applies to the UTC value, so it happens after the offset.
    let (v, offset) = parse_timestamp(text, -1, ctx.date_order)?;
    let v = match offset {
        Offset::Special => v,
        Offset::Seconds(secs) => round_typmod(v - i64::from(secs) * USECS_PER_SEC, typmod),
        Offset::None if ctx.session_time_zone_is_utc => round_typmod(v, typmod),
        Offset::None => return Err(EncodeError::Deferred),
    };
    out.extend_from_slice(&v.to_be_bytes());
    Ok(())
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Offset {
    /// `epoch` / `infinity` / `-infinity`: the value is already final.
    Special,
    None,
    /// Seconds east of UTC.
    Seconds(i32),
}

/// Local microseconds since 2000-01-01 (rounded for `typmod` unless it is -1) and the offset.
fn parse_timestamp(text: &str, typmod: i32, order: DateOrder) -> Result<(i64, Offset)> {
    if !(-1..=6).contains(&typmod) {
        return Err(EncodeError::Deferred);
    }
    let s = trim_pg_space(text).as_bytes();
    if let Some(special) = special(s) {
        let v = match special {
            Special::Epoch => -UNIX_TO_PG_DAYS * USECS_PER_DAY,
            Special::Infinity => i64::MAX,
            Special::NegInfinity => i64::MIN,
        };
        return Ok((v, Offset::Special));
    }
    let mut p = Cursor::new(s);
    let date = date_part(&mut p, order).ok_or(EncodeError::Deferred)?;
    let mut v = pg_days(date) * USECS_PER_DAY;
    let mut offset = Offset::None;
    if !p.at_end() {
        if !separator(&mut p) {
            return Err(EncodeError::Deferred);
        }
        v += time_part(&mut p).ok_or(EncodeError::Deferred)?;
        if let Some(secs) = offset_or_end(&mut p).ok_or(EncodeError::Deferred)? {
            offset = Offset::Seconds(secs);
        }
    }
    Ok((round_typmod(v, typmod), offset))
}

enum Special {
    Epoch,
    Infinity,
    NegInfinity,
}

fn special(s: &[u8]) -> Option<Special> {
    if s.eq_ignore_ascii_case(b"epoch") {
        Some(Special::Epoch)
    } else if s.eq_ignore_ascii_case(b"infinity") {
        Some(Special::Infinity)
    } else if s.eq_ignore_ascii_case(b"-infinity") {
        Some(Special::NegInfinity)
    } else {
        None
    }
}

/// `AdjustTimeForTypmod` / `AdjustTimestampForTypmod`: round half away from zero to `typmod`
/// fractional digits; -1 and 6 leave the value alone. `typmod` is already checked to be -1..=6.
fn round_typmod(v: i64, typmod: i32) -> i64 {
    if !(0..6).contains(&typmod) {
        return v;
    }
    let scale = 10i64.pow(6 - typmod as u32);
    let half = scale / 2;
    if v >= 0 {
        (v + half) / scale * scale
    } else {
        -((-v + half) / scale * scale)
    }
}

/// Days since 2000-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
fn pg_days((y, m, d): (u32, u32, u32)) -> i64 {
    let (y, m, d) = (i64::from(y), i64::from(m), i64::from(d));
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468 - UNIX_TO_PG_DAYS
}

// `is_multiple_of` needs Rust 1.87; the workspace supports 1.80.
#[allow(unknown_lints, clippy::manual_is_multiple_of)]
fn is_leap(y: u32) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

fn days_in_month(y: u32, m: u32) -> u32 {
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if is_leap(y) => 29,
        2 => 28,
        _ => 0,
    }
}

/// Exactly `YYYY-MM-DD` with a valid date, the form nearly every file writes: its days since
/// 2000-01-01 without the general parser's trimming and cursor (anything else: `None`, and the
/// general path decides).
#[inline]
fn iso_date(s: &[u8]) -> Option<i64> {
    let &[y0, y1, y2, y3, b'-', m0, m1, b'-', d0, d1] = s else {
        return None;
    };
    let digit = |c: u8| {
        let d = c.wrapping_sub(b'0');
        (d <= 9).then_some(u32::from(d))
    };
    let y = digit(y0)? * 1000 + digit(y1)? * 100 + digit(y2)? * 10 + digit(y3)?;
    let (m, d) = (digit(m0)? * 10 + digit(m1)?, digit(d0)? * 10 + digit(d1)?);
    if y == 0 || !(1..=12).contains(&m) || d == 0 || d > days_in_month(y, m) {
        return None;
    }
    Some(pg_days((y, m, d)))
}

/// `YYYY-M[M]-D[D]` or `YYYYMMDD`, or in `order` `D[D]/M[M]/YYYY` (DMY) or `M[M]/D[D]/YYYY`
/// (MDY) with `/`, `-` or `.`; validated, year 1..=9999.
fn date_part(p: &mut Cursor<'_>, order: DateOrder) -> Option<(u32, u32, u32)> {
    let (first, n) = p.digits(8)?;
    let (y, m, d) = match n {
        1 | 2 if order != DateOrder::Ymd => {
            let sep = p.peek().filter(|b| matches!(b, b'/' | b'-' | b'.'))?;
            p.bump();
            let (second, _) = p.digits(2)?;
            if !p.eat(sep) {
                return None;
            }
            let (year, yn) = p.digits(4)?;
            if yn != 4 {
                return None;
            }
            match order {
                DateOrder::Dmy => (year, second, first),
                _ => (year, first, second),
            }
        }
        4 => {
            if !p.eat(b'-') {
                return None;
            }
            let (m, _) = p.digits(2)?;
            if !p.eat(b'-') {
                return None;
            }
            let (d, _) = p.digits(2)?;
            (first, m, d)
        }
        8 => {
            // Only verified followed by the end or a space.
            if !matches!(p.peek(), None | Some(b' ')) {
                return None;
            }
            (first / 10_000, first / 100 % 100, first % 100)
        }
        _ => return None,
    };
    // At most 8 digits each, so these always fit.
    let (y, m, d) = (
        u32::try_from(y).ok()?,
        u32::try_from(m).ok()?,
        u32::try_from(d).ok()?,
    );
    if !(1..=9999).contains(&y) || !(1..=12).contains(&m) || d < 1 || d > days_in_month(y, m) {
        return None;
    }
    Some((y, m, d))
}

/// Between date and time: one or more spaces, or a single `T`/`t`.
fn separator(p: &mut Cursor<'_>) -> bool {
    match p.peek() {
        Some(b'T' | b't') => {
            p.bump();
            true
        }
        Some(b' ') => {
            p.skip_spaces();
            true
        }
        _ => false,
    }
}

/// `H[H]:MM[:SS[.f{1,6}]]` in microseconds since midnight, hour 0..=23.
fn time_part(p: &mut Cursor<'_>) -> Option<i64> {
    let (h, _) = p.digits(2)?;
    if !p.eat(b':') {
        return None;
    }
    let (mi, mn) = p.digits(2)?;
    if mn != 2 {
        return None;
    }
    let mut sec = 0;
    let mut frac = 0;
    if p.eat(b':') {
        let (sv, sn) = p.digits(2)?;
        if sn != 2 {
            return None;
        }
        sec = sv;
        if p.eat(b'.') {
            let (f, fnum) = p.digits(6)?;
            frac = f * 10u64.pow(6 - fnum as u32);
        }
    }
    if h > 23 || mi > 59 || sec > 59 {
        return None;
    }
    let secs = i64::try_from(h * 3600 + mi * 60 + sec).ok()?;
    Some(secs * USECS_PER_SEC + i64::try_from(frac).ok()?)
}

/// After a time: the end (`Some(None)`), or an optional single space and a numeric offset
/// or `Z` ending the text (`Some(Some(seconds east))`); anything else `None`.
fn offset_or_end(p: &mut Cursor<'_>) -> Option<Option<i32>> {
    if p.at_end() {
        return Some(None);
    }
    p.eat(b' ');
    let secs = match p.peek()? {
        b'Z' | b'z' => {
            p.bump();
            0
        }
        sign @ (b'+' | b'-') => {
            p.bump();
            let (hh, hn) = p.digits(4)?;
            let (h, m) = match hn {
                2 if p.eat(b':') => {
                    let (m, mn) = p.digits(2)?;
                    if mn != 2 {
                        return None;
                    }
                    (hh, m)
                }
                2 => (hh, 0),
                4 => (hh / 100, hh % 100),
                _ => return None,
            };
            if h > MAX_OFFSET_HOUR || m > 59 {
                return None;
            }
            let secs = i32::try_from(h * 3600 + m * 60).ok()?;
            if sign == b'-' {
                -secs
            } else {
                secs
            }
        }
        _ => return None,
    };
    p.at_end().then_some(Some(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctx() -> EncodeContext {
        EncodeContext::default()
    }

    fn hex(v: &[u8]) -> String {
        v.iter().map(|b| format!("{b:02x}")).collect()
    }

    fn date(s: &str) -> Result<String> {
        let mut out = Vec::new();
        encode_date(s, &ctx(), &mut out).map(|_| hex(&out))
    }

    fn time(s: &str, typmod: i32) -> Result<String> {
        let mut out = Vec::new();
        encode_time(s, typmod, &ctx(), &mut out).map(|_| hex(&out))
    }

    fn ts(s: &str, typmod: i32) -> Result<String> {
        let mut out = Vec::new();
        encode_timestamp(s, typmod, &ctx(), &mut out).map(|_| hex(&out))
    }

    fn tstz(s: &str, typmod: i32) -> Result<String> {
        let mut out = Vec::new();
        encode_timestamptz(s, typmod, &ctx(), &mut out).map(|_| hex(&out))
    }

    fn ok(s: &str) -> Result<String> {
        Ok(s.to_string())
    }

    // Golden bytes below come from date_send/time_send/timestamp_send/timestamptz_send on
    // PostgreSQL 18.6 and 15.18 (identical on both), session TimeZone UTC.

    #[test]
    fn date_golden() {
        assert_eq!(date("2024-01-02"), ok("0000223f"));
        assert_eq!(date("2024-1-2"), ok("0000223f"));
        assert_eq!(date(" 2024-01-02 "), ok("0000223f"));
        assert_eq!(date("\t2024-01-02\n"), ok("0000223f"));
        assert_eq!(date("20240102"), ok("0000223f"));
        assert_eq!(date("2000-01-01"), ok("00000000"));
        assert_eq!(date("1970-01-01"), ok("ffffd533"));
        assert_eq!(date("2000-02-29"), ok("0000003b"));
        assert_eq!(date("1900-02-28"), ok("ffff718e"));
        assert_eq!(date("0001-01-01"), ok("fff4dbf9"));
        assert_eq!(date("00010101"), ok("fff4dbf9"));
        assert_eq!(date("9999-12-31"), ok("002c95d3"));
        assert_eq!(date("epoch"), ok("ffffd533"));
        assert_eq!(date("EPOCH"), ok("ffffd533"));
        assert_eq!(date("Infinity"), ok("7fffffff"));
        assert_eq!(date("-INFINITY"), ok("80000000"));
        // A valid time and offset after the date are ignored.
        assert_eq!(date("2024-01-02 10:00"), ok("0000223f"));
        assert_eq!(date("2024-01-02T10:00"), ok("0000223f"));
        assert_eq!(date("2024-01-02 10:00+05"), ok("0000223f"));
        assert_eq!(date("2024-01-02 23:59:59.999999-11"), ok("0000223f"));
        assert_eq!(date("2024-01-02T10:00:00Z"), ok("0000223f"));
    }

    #[test]
    fn iso_fast_path_agrees_with_the_general_parser() {
        // Every day and impossible day of years at the edges of the calendar's rules.
        for y in [
            1, 4, 100, 400, 1899, 1900, 1970, 1999, 2000, 2024, 2100, 9999,
        ] {
            for m in 0..=13 {
                for d in 0..=32 {
                    let s = format!("{y:04}-{m:02}-{d:02}");
                    let general = date_part(&mut Cursor::new(s.as_bytes()), DateOrder::Mdy);
                    assert_eq!(iso_date(s.as_bytes()), general.map(pg_days), "{s}");
                }
            }
        }
        // Not its shape: the general path decides.
        for s in [
            "2024-1-02",
            "2024-01-2",
            " 2024-01-02",
            "2024-01-02 ",
            "2024/01/02",
            "2024-0a-02",
            "+024-01-02",
            "0000-01-01",
            "20240102",
        ] {
            assert_eq!(iso_date(s.as_bytes()), None, "{s}");
        }
    }

    #[test]
    fn date_deferred() {
        for s in [
            "",
            "2024-02-30",
            "1900-02-29",
            "2024-00-01",
            "2024-13-01",
            "2024-01-0",
            "0000-01-01",
            "00000101",
            "10000-01-01",
            "02024-01-02",
            "24-01-02",
            "2024/01/02",
            "2024.01.02",
            "Jan 2 2024",
            "2024-01-02 BC",
            "J2451545",
            "+infinity",
            "today",
            "now",
            "2024--01-02",
            "2024-01-02-",
            "2024-01-02+05",
            "2024-01-02z",
            "2024-01-02 24:00",
            "2024-01-02 10:61",
            "2024-01-02 10:00 PST",
            "2024-001-02",
            "20240102T10:00",
        ] {
            assert_eq!(date(s), Err(EncodeError::Deferred), "{s:?}");
        }
    }

    #[test]
    fn time_golden() {
        assert_eq!(time("12:00", -1), ok("0000000a0eebb000"));
        assert_eq!(time("12:00:00", -1), ok("0000000a0eebb000"));
        assert_eq!(time(" 12:00 ", -1), ok("0000000a0eebb000"));
        assert_eq!(time("1:02:03", -1), ok("00000000dde878c0"));
        assert_eq!(time("12:00:00.5", -1), ok("0000000a0ef35120"));
        assert_eq!(time("12:00:00.123456", -1), ok("0000000a0eed9240"));
        assert_eq!(time("12:00:00.000000", -1), ok("0000000a0eebb000"));
        assert_eq!(time("00:00", -1), ok("0000000000000000"));
        // The zone is ignored by time_in.
        assert_eq!(time("12:00+02", -1), ok("0000000a0eebb000"));
        assert_eq!(time("12:00:00-05:30", -1), ok("0000000a0eebb000"));
        assert_eq!(time("12:00:00Z", -1), ok("0000000a0eebb000"));
        assert_eq!(time("12:00:00 +02", -1), ok("0000000a0eebb000"));
        // time(2) and time(0) rounding, half up.
        assert_eq!(time("12:00:00.125", 2), ok("0000000a0eedabd0"));
        assert_eq!(time("12:00:00.135", 2), ok("0000000a0eedd2e0"));
        assert_eq!(time("12:00:00.145", 2), ok("0000000a0eedf9f0"));
        assert_eq!(time("12:00:00.115", 2), ok("0000000a0eed84c0"));
        assert_eq!(time("23:59:59.995", 2), ok("000000141dd76000"));
        assert_eq!(time("23:59:59.5", 0), ok("000000141dd76000"));
        assert_eq!(time("12:00:00.5", 6), ok("0000000a0ef35120"));
    }

    #[test]
    fn time_deferred() {
        for s in [
            "",
            "24:00:00",
            "23:59:60",
            "12:60",
            "12:00:00.1234565",
            "12:00:00.",
            "12:00:.5",
            "12:00:00,5",
            "allballs",
            "120000",
            "2024-01-02 12:00",
            "12:00:00 UTC",
            "12:00:00 pm",
            "12",
            "12:0",
            "12:00:0",
            "123:00",
            "12:00+16",
            "12:00+0560",
            "12:00+5",
            "now",
        ] {
            assert_eq!(time(s, -1), Err(EncodeError::Deferred), "{s:?}");
        }
        assert_eq!(time("12:00", 7), Err(EncodeError::Deferred));
    }

    #[test]
    fn timestamp_golden() {
        assert_eq!(ts("2024-01-01 10:00:00", -1), ok("0002b0de36ada800"));
        assert_eq!(ts("2024-01-01 10:00", -1), ok("0002b0de36ada800"));
        assert_eq!(ts("2024-01-01  10:00", -1), ok("0002b0de36ada800"));
        assert_eq!(ts("2024-01-01T10:00:00-03:30", -1), ok("0002b0de36ada800"));
        assert_eq!(ts("2024-01-01 10:00:00+05", -1), ok("0002b0de36ada800"));
        assert_eq!(ts("2024-01-01 10:00:00Z", -1), ok("0002b0de36ada800"));
        assert_eq!(ts("2024-01-01 10:00:00 +05:00", -1), ok("0002b0de36ada800"));
        assert_eq!(ts("2024-01-01", -1), ok("0002b0d5d4e94000"));
        assert_eq!(ts("2024-01-01 ", -1), ok("0002b0d5d4e94000"));
        assert_eq!(ts("1970-01-01 00:00:00", -1), ok("fffca2fec4c82000"));
        assert_eq!(ts("1900-02-28 23:59:59.999999", -1), ok("fff4ce915cae9fff"));
        assert_eq!(ts("9999-12-31 23:59:59.999999", -1), ok("0380e70b913b7fff"));
        assert_eq!(ts("0001-01-01 00:00:00", -1), ok("ff1fe2ffc59c6000"));
        assert_eq!(ts("2024-01-01 1:2:03", -1), Err(EncodeError::Deferred));
        assert_eq!(ts("2024-01-01 10:00:00.000001", -1), ok("0002b0de36ada801"));
        assert_eq!(ts("2024-01-02 03:04:05.5", -1), ok("0002b0ec851d9460"));
        assert_eq!(ts("2024-01-02T03:04:05.5", -1), ok("0002b0ec851d9460"));
        assert_eq!(ts("20240102 03:04:05.5", -1), ok("0002b0ec851d9460"));
        assert_eq!(ts("epoch", -1), ok("fffca2fec4c82000"));
        assert_eq!(ts("Epoch", -1), ok("fffca2fec4c82000"));
        assert_eq!(ts("infinity", -1), ok("7fffffffffffffff"));
        assert_eq!(ts(" -infinity ", -1), ok("8000000000000000"));
        assert_eq!(ts("infinity", 2), ok("7fffffffffffffff"));
        // timestamp(2) rounding: half away from zero about 2000-01-01.
        assert_eq!(ts("2024-01-01 12:00:00.125", 2), ok("0002b0dfe3d6ebd0"));
        assert_eq!(ts("2024-01-01 12:00:00.135", 2), ok("0002b0dfe3d712e0"));
        assert_eq!(ts("2024-01-01 12:00:00.145", 2), ok("0002b0dfe3d739f0"));
        assert_eq!(ts("2024-01-01 12:00:00.115", 2), ok("0002b0dfe3d6c4c0"));
        assert_eq!(ts("2024-01-01 23:59:59.995", 2), ok("0002b0e9f2c0a000"));
    }

    #[test]
    fn timestamp_rounding_before_2000() {
        // The server: '1999-12-31 12:00:00.125'::timestamp(2) = 12:00:00.12, and
        // '1999-12-31 23:59:59.995'::timestamp(2) = 23:59:59.99, '...23:59:59.5'::timestamp(0)
        // = 23:59:59.
        let base = pg_days((1999, 12, 31)) * USECS_PER_DAY;
        let want = |t: i64| Ok(hex(&(base + t).to_be_bytes()));
        assert_eq!(ts("1999-12-31 12:00:00.125", 2), want(43_200_120_000));
        assert_eq!(ts("1999-12-31 12:00:00.135", 2), want(43_200_130_000));
        assert_eq!(ts("1999-12-31 23:59:59.995", 2), want(86_399_990_000));
        assert_eq!(ts("1999-12-31 23:59:59.5", 0), want(86_399_000_000));
        assert_eq!(ts("1999-12-31 12:00:01.5", 0), want(43_201_000_000));
    }

    #[test]
    fn timestamp_deferred() {
        for s in [
            "",
            "2024-01-01T",
            "2024-01-01 10",
            "2024-01-01 10:00:00.",
            "2024-01-01 24:00",
            "2024-01-01 10:00:00.1234567",
            "2024-01-01T 10:00",
            "2024-01-01 T10:00",
            "2024-01-01 10:00 PST",
            "2024-01-01 10:00:00 UTC",
            "2024-01-01 10:00:00+16",
            "2024-01-01 10:00:00+05:30:10",
            "2024-01-01 10:00:00+5",
            "2024-01-01 10:00:00+05:3",
            "2024-01-01 10:00:00  +05",
            "2024-01-01+05",
            "+infinity",
            "now",
            "today",
            "tomorrow",
            "yesterday",
            "2024-01-01 10:00:00 BC",
            "20240102T030405",
            "2024-02-30 00:00",
            "2024-01-01\t10:00",
        ] {
            assert_eq!(ts(s, -1), Err(EncodeError::Deferred), "{s:?}");
        }
        assert_eq!(ts("2024-01-01", 7), Err(EncodeError::Deferred));
        assert_eq!(ts("2024-01-01", -2), Err(EncodeError::Deferred));
    }

    #[test]
    fn timestamptz_golden() {
        assert_eq!(
            tstz("2024-02-29 13:14:15.123456+05:30", -1),
            ok("0002b57f31d7d400")
        );
        assert_eq!(
            tstz("2024-02-29 13:14:15.123456 +05:30", -1),
            ok("0002b57f31d7d400")
        );
        assert_eq!(tstz("2024-02-29 13:14:15+0530", -1), ok("0002b57f31d5f1c0"));
        assert_eq!(tstz("2024-02-29 13:14:15+05", -1), ok("0002b57f9d1fc3c0"));
        assert_eq!(tstz("2024-02-29 13:14:15-08", -1), ok("0002b58a829f17c0"));
        assert_eq!(
            tstz("2024-02-29 13:14:15-00:30", -1),
            ok("0002b584394bc9c0")
        );
        assert_eq!(tstz("2024-02-29 13:14:15+00", -1), ok("0002b583ce01f7c0"));
        assert_eq!(tstz("2024-02-29 13:14:15Z", -1), ok("0002b583ce01f7c0"));
        assert_eq!(tstz("2024-02-29 13:14:15z", -1), ok("0002b583ce01f7c0"));
        assert_eq!(tstz("2024-02-29T13:14:15Z", -1), ok("0002b583ce01f7c0"));
        assert_eq!(tstz("2024-02-29t13:14:15Z", -1), ok("0002b583ce01f7c0"));
        assert_eq!(tstz("2024-02-29 13:14:15 Z", -1), ok("0002b583ce01f7c0"));
        assert_eq!(tstz("2024-02-29 13:14+05", -1), ok("0002b57f9c3ae200"));
        assert_eq!(tstz("0001-01-01 00:00:00+01", -1), ok("ff1fe2feef08bc00"));
        assert_eq!(
            tstz("9999-12-31 23:59:59.999999-12", -1),
            ok("0380e715a0272fff")
        );
        assert_eq!(tstz("epoch", -1), ok("fffca2fec4c82000"));
        assert_eq!(tstz("infinity", -1), ok("7fffffffffffffff"));
        assert_eq!(tstz("-infinity", -1), ok("8000000000000000"));
        // Without an offset, in a UTC session.
        assert_eq!(tstz("2024-02-29 13:14:15", -1), ok("0002b583ce01f7c0"));
        assert_eq!(tstz("1970-01-01", -1), ok("fffca2fec4c82000"));
        // timestamptz(2): rounding applies to the UTC value.
        // timestamptz_in('2000-01-01 01:00:00.125+01', 1184, 2) = 2000-01-01 00:00:00.13+00
        assert_eq!(
            tstz("2000-01-01 01:00:00.125+01", 2),
            Ok(hex(&130_000i64.to_be_bytes()))
        );
        // timestamptz_in('2000-01-01 00:00:00.125-01', 1184, 2) = 2000-01-01 01:00:00.13+00
        assert_eq!(
            tstz("2000-01-01 00:00:00.125-01", 2),
            Ok(hex(&3_600_130_000i64.to_be_bytes()))
        );
        // '1999-12-31 23:59:59.125+00' rounds towards the earlier instant.
        assert_eq!(
            tstz("1999-12-31 23:59:59.125+00", 2),
            Ok(hex(&(-880_000i64).to_be_bytes()))
        );
        assert_eq!(tstz("2024-01-01 00:00+00", 7), Err(EncodeError::Deferred));
    }

    #[test]
    fn timestamptz_non_utc_session() {
        let ctx = EncodeContext {
            session_time_zone_is_utc: false,
            ..EncodeContext::default()
        };
        let mut out = Vec::new();
        assert_eq!(
            encode_timestamptz("2024-02-29 13:14:15", -1, &ctx, &mut out),
            Err(EncodeError::Deferred)
        );
        assert_eq!(
            encode_timestamptz("2024-02-29", -1, &ctx, &mut out),
            Err(EncodeError::Deferred)
        );
        out.clear();
        encode_timestamptz("2024-02-29 13:14:15+05:30", -1, &ctx, &mut out).unwrap();
        assert_eq!(hex(&out), "0002b57f31d5f1c0");
        out.clear();
        encode_timestamptz("epoch", -1, &ctx, &mut out).unwrap();
        assert_eq!(hex(&out), "fffca2fec4c82000");
    }

    #[test]
    fn timestamptz_deferred() {
        for s in [
            "2024-02-29 13:14:15+16",
            "2024-02-29 13:14:15+15",
            "2024-02-29 13:14:15+05:30:10",
            "2024-02-29+05",
            "2024-02-29 13:14:15 UTC",
            "2024-02-29 13:14:15 Europe/Paris",
            "2024-02-29 13:14:15+05:60",
            "2024-02-29 13:14:15+0560",
            "2024-02-29 13:14:15.+05",
            "2024-02-29 13:14:15+05:3",
            "2024-02-29 13:14:15 zulu",
            "2024-02-29 13:14:15Z ",
        ] {
            // "...Z " is trimmed, so it is accepted; skip it here.
            if s.ends_with("Z ") {
                assert_eq!(tstz(s, -1), ok("0002b583ce01f7c0"));
                continue;
            }
            assert_eq!(tstz(s, -1), Err(EncodeError::Deferred), "{s:?}");
        }
    }

    fn in_order(order: DateOrder) -> EncodeContext {
        EncodeContext {
            date_order: order,
            ..EncodeContext::default()
        }
    }

    #[test]
    fn dates_in_the_session_field_order() {
        let encode = |s: &str, order: DateOrder| {
            let mut out = Vec::new();
            encode_date(s, &in_order(order), &mut out).map(|_| hex(&out))
        };
        let stamp = |s: &str, order: DateOrder| {
            let mut out = Vec::new();
            encode_timestamp(s, -1, &in_order(order), &mut out).map(|_| hex(&out))
        };
        // 2024-01-02 is 0000223f; 2024-02-01 is 0000225d.
        for s in [
            "02/01/2024",
            "2/1/2024",
            "02-01-2024",
            "02.01.2024",
            " 2/01/2024 ",
        ] {
            assert_eq!(encode(s, DateOrder::Dmy), ok("0000223f"), "{s:?}");
            assert_eq!(encode(s, DateOrder::Mdy), ok("0000225d"), "{s:?}");
            assert_eq!(
                encode(s, DateOrder::Ymd),
                Err(EncodeError::Deferred),
                "{s:?}"
            );
        }
        // ISO dates read the same whatever the order.
        for order in [DateOrder::Dmy, DateOrder::Mdy, DateOrder::Ymd] {
            assert_eq!(encode("2024-01-02", order), ok("0000223f"));
        }
        assert_eq!(
            stamp("02/01/2024 10:00:00", DateOrder::Dmy),
            stamp("2024-01-02 10:00:00", DateOrder::Dmy)
        );
        assert_eq!(
            stamp("01/02/2024T10:00:00+05", DateOrder::Mdy),
            stamp("2024-01-02 10:00:00", DateOrder::Mdy)
        );
        for s in [
            "31/12/24",    // two-digit years are widened by the server
            "31/02/2024",  // no such day
            "13/13/2024",  // no such month
            "1/2-2024",    // mixed separators
            "1/2/20245",   // five-digit year
            "123/1/2024",  // three digits first
            "1/2/2024 BC", // era
            "1/2/2024 10", // hour alone
            "1//2024",     // empty field
        ] {
            assert_eq!(
                encode(s, DateOrder::Dmy),
                Err(EncodeError::Deferred),
                "{s:?}"
            );
        }
        assert_eq!(
            encode("12/31/2024", DateOrder::Dmy),
            Err(EncodeError::Deferred)
        );
        assert_eq!(
            encode("31/12/2024", DateOrder::Mdy),
            Err(EncodeError::Deferred)
        );
    }

    #[test]
    fn date_order_of_the_session() {
        assert_eq!(DateOrder::of_date_style("ISO, MDY"), DateOrder::Mdy);
        assert_eq!(DateOrder::of_date_style("German, DMY"), DateOrder::Dmy);
        assert_eq!(DateOrder::of_date_style("iso, ymd"), DateOrder::Ymd);
        assert_eq!(DateOrder::Dmy.date_style(), "ISO, DMY");
    }

    #[test]
    fn calendar_matches_brute_force() {
        // Walk every day from 0001-01-01 to 9999-12-31 and check consecutive numbering.
        let mut expect = pg_days((1, 1, 1));
        assert_eq!(expect, -730_119);
        for y in 1..=9999 {
            for m in 1..=12 {
                for d in 1..=days_in_month(y, m) {
                    assert_eq!(pg_days((y, m, d)), expect, "{y}-{m}-{d}");
                    expect += 1;
                }
            }
        }
        assert_eq!(pg_days((9999, 12, 31)), 0x002c95d3);
    }

    #[test]
    fn garbage_never_panics() {
        let mut buf = Vec::new();
        for text in super::super::random_texts(
            b"0123456789-:+. TtZz\t/PpeEinfy",
            0x9e37_79b9_7f4a_7c15,
            200_000,
            32,
        ) {
            for typmod in [-1, 0, 3, 6] {
                buf.clear();
                let _ = encode_date(&text, &ctx(), &mut buf);
                let _ = encode_time(&text, typmod, &ctx(), &mut buf);
                let _ = encode_timestamp(&text, typmod, &ctx(), &mut buf);
                let _ = encode_timestamptz(&text, typmod, &ctx(), &mut buf);
                let _ = encode_timestamp(&text, typmod, &in_order(DateOrder::Dmy), &mut buf);
            }
        }
        for s in [
            "99999999999999999999",
            "9999-99-99 99:99:99.9999999+9999",
            "\u{e9}t\u{e9}",
            "-",
            "+",
            ":",
        ] {
            for typmod in [-1, 0, 3, 6, i32::MIN, i32::MAX] {
                let _ = encode_date(s, &ctx(), &mut buf);
                let _ = encode_time(s, typmod, &ctx(), &mut buf);
                let _ = encode_timestamp(s, typmod, &ctx(), &mut buf);
                let _ = encode_timestamptz(s, typmod, &ctx(), &mut buf);
            }
        }
    }
}
