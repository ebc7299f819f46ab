//! `interval`: PostgreSQL's own output style and integer ISO 8601 durations, parsed byte by
//! byte without allocation; everything else is deferred to the server.
//!
//! Native forms (only when typmod is -1):
//! - a sequence of `[+-]N unit` items (N up to 9 digits, no fraction; optional spaces between
//!   number and unit; unit any case among year(s), mon(s), month(s), day(s), hour(s), min(s),
//!   minute(s), sec(s), second(s)), optionally ending with a time field
//!   `[+-]H+:MM[:SS[.f{1,6}]]` (hours up to 9 digits, minutes and seconds 0..59). Each unit at
//!   most once (the server refuses repeats; a time field counts as hours, minutes and seconds).
//!   This covers the default `postgres` output style: `1 year 2 mons 3 days 04:05:06.5`,
//!   `-1 days +02:03:04`.
//! - ISO 8601 `P[nY][nM][nW][nD][T[nH][nM][nS]]` with integer n, uppercase, in that order, no
//!   surrounding whitespace (the server refuses ` P1D `, since its ISO reader does not trim).
//!
//! Deferred: fractions on units (their spill into smaller fields changed in PostgreSQL 15),
//! `@`, `ago`, abbreviations, SQL-standard `Y-M` and `D H:M:S`, bare numbers, and any value
//! whose reading depends on IntervalStyle: under `sql_standard`, a leading `-` with no other
//! explicit sign negates every field (`-1 days 02:03:04` is -1 day -02:03:04 there), so when
//! the first of several fields is negative and no later field has an explicit sign, we defer.
use crate::EncodeContext;
use crate::{EncodeError, Result};

use super::cursor::Cursor;
use super::trim_pg_space;

const USECS_PER_SEC: i64 = 1_000_000;
const USECS_PER_MINUTE: i64 = 60 * USECS_PER_SEC;
const USECS_PER_HOUR: i64 = 60 * USECS_PER_MINUTE;
const MAX_NUMBER_DIGITS: usize = 9;

const F_YEAR: u8 = 1;
const F_MONTH: u8 = 2;
const F_DAY: u8 = 4;
const F_HOUR: u8 = 8;
const F_MINUTE: u8 = 16;
const F_SECOND: u8 = 32;
const F_WEEK: u8 = 64;

pub(crate) fn encode(
    text: &str,
    typmod: i32,
    _ctx: &EncodeContext,
    out: &mut Vec<u8>,
) -> Result<()> {
    if typmod != -1 {
        return Err(EncodeError::Deferred);
    }
    let acc = if text.as_bytes().first() == Some(&b'P') {
        parse_iso(text.as_bytes())
    } else {
        parse_postgres(trim_pg_space(text).as_bytes())
    }
    .ok_or(EncodeError::Deferred)?;
    let (usec, days, months) = acc.finish().ok_or(EncodeError::Deferred)?;
    out.extend_from_slice(&usec.to_be_bytes());
    out.extend_from_slice(&days.to_be_bytes());
    out.extend_from_slice(&months.to_be_bytes());
    Ok(())
}

/// Field values as the server accumulates them; every intermediate must fit the server's
/// 32-bit fields so that no version's overflow handling comes into play.
#[derive(Default)]
struct Acc {
    years: i64,
    months: i64,
    days: i64,
    usec: i64,
    seen: u8,
}

impl Acc {
    fn add(&mut self, flag: u8, n: i64) -> Option<()> {
        if self.seen & flag != 0 {
            return None;
        }
        self.seen |= flag;
        match flag {
            F_YEAR => self.years = n,
            F_MONTH => self.months = n,
            F_DAY => self.days = fit_i32(self.days + n)?,
            F_WEEK => self.days = fit_i32(self.days + fit_i32(n * 7)?)?,
            F_HOUR => self.usec += n * USECS_PER_HOUR,
            F_MINUTE => self.usec += n * USECS_PER_MINUTE,
            F_SECOND => self.usec += n * USECS_PER_SEC,
            _ => return None,
        }
        Some(())
    }

    fn finish(&self) -> Option<(i64, i32, i32)> {
        // |n| < 10^9 for every field, so none of these sums overflow i64.
        let months = fit_i32(self.years * 12 + self.months)?;
        Some((self.usec, i32::try_from(self.days).ok()?, months as i32))
    }
}

fn fit_i32(v: i64) -> Option<i64> {
    (i64::from(i32::MIN)..=i64::from(i32::MAX))
        .contains(&v)
        .then_some(v)
}

fn unit_flag(word: &[u8]) -> Option<u8> {
    const UNITS: &[(&[u8], u8)] = &[
        (b"year", F_YEAR),
        (b"years", F_YEAR),
        (b"mon", F_MONTH),
        (b"mons", F_MONTH),
        (b"month", F_MONTH),
        (b"months", F_MONTH),
        (b"day", F_DAY),
        (b"days", F_DAY),
        (b"hour", F_HOUR),
        (b"hours", F_HOUR),
        (b"min", F_MINUTE),
        (b"mins", F_MINUTE),
        (b"minute", F_MINUTE),
        (b"minutes", F_MINUTE),
        (b"sec", F_SECOND),
        (b"secs", F_SECOND),
        (b"second", F_SECOND),
        (b"seconds", F_SECOND),
    ];
    UNITS
        .iter()
        .find(|(name, _)| word.eq_ignore_ascii_case(name))
        .map(|&(_, f)| f)
}

/// The `postgres` output style (and `postgres_verbose` without `@`/`ago`).
fn parse_postgres(s: &[u8]) -> Option<Acc> {
    let mut p = Cursor::new(s);
    let mut acc = Acc::default();
    let mut fields = 0usize;
    let mut first_negative = false;
    let mut later_signed = false;
    loop {
        let sign = match p.peek()? {
            b'-' => -1,
            b'+' => 1,
            _ => 0,
        };
        if sign != 0 {
            p.bump();
        }
        if fields == 0 {
            first_negative = sign < 0;
        } else if sign != 0 {
            later_signed = true;
        }
        fields += 1;
        let (n, _) = p.digits(MAX_NUMBER_DIGITS)?;
        // Every number here has at most 9 digits, so each conversion to i64 always succeeds.
        let n = i64::try_from(n).ok()?;
        let neg = sign < 0;
        if p.eat(b':') {
            // Time field: must be the last one.
            let (m, mn) = p.digits(2)?;
            if mn != 2 || m > 59 {
                return None;
            }
            let mut usec = n * USECS_PER_HOUR + i64::try_from(m).ok()? * USECS_PER_MINUTE;
            if p.eat(b':') {
                let (sec, sn) = p.digits(2)?;
                if sn != 2 || sec > 59 {
                    return None;
                }
                usec += i64::try_from(sec).ok()? * USECS_PER_SEC;
                if p.eat(b'.') {
                    let (f, fnum) = p.digits(6)?;
                    usec += i64::try_from(f).ok()? * 10i64.pow(6 - fnum as u32);
                }
            }
            if acc.seen & (F_HOUR | F_MINUTE | F_SECOND) != 0 {
                return None;
            }
            acc.seen |= F_HOUR | F_MINUTE | F_SECOND;
            acc.usec += if neg { -usec } else { usec };
            if !p.at_end() {
                return None;
            }
            break;
        }
        p.skip_spaces();
        let flag = unit_flag(p.word())?;
        acc.add(flag, if neg { -n } else { n })?;
        if p.at_end() {
            break;
        }
        if p.skip_spaces() == 0 {
            return None;
        }
    }
    // Under IntervalStyle sql_standard, a leading `-` with no other explicit sign anywhere
    // negates every field; with a single field that changes nothing.
    if first_negative && fields > 1 && !later_signed {
        return None;
    }
    Some(acc)
}

/// `P[nY][nM][nW][nD][T[nH][nM][nS]]`, integers only, each unit once and in this order.
/// `s` starts with `P`.
fn parse_iso(s: &[u8]) -> Option<Acc> {
    let mut p = Cursor::new(s);
    p.eat(b'P');
    let mut acc = Acc::default();
    let mut time_part = false;
    let mut last_rank = 0u8;
    let mut any = false;
    let mut any_time = false;
    while !p.at_end() {
        if p.eat(b'T') {
            if time_part {
                return None;
            }
            time_part = true;
            continue;
        }
        let (n, _) = p.digits(MAX_NUMBER_DIGITS)?;
        // At most 9 digits, so this always fits.
        let n = i64::try_from(n).ok()?;
        let unit = p.peek()?;
        p.bump();
        let (rank, flag) = match (time_part, unit) {
            (false, b'Y') => (1, F_YEAR),
            (false, b'M') => (2, F_MONTH),
            (false, b'W') => (3, F_WEEK),
            (false, b'D') => (4, F_DAY),
            (true, b'H') => (5, F_HOUR),
            (true, b'M') => (6, F_MINUTE),
            (true, b'S') => (7, F_SECOND),
            _ => return None,
        };
        if rank <= last_rank {
            return None;
        }
        last_rank = rank;
        acc.add(flag, n)?;
        any = true;
        any_time |= time_part;
    }
    if !any || (time_part && !any_time) {
        return None;
    }
    Some(acc)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iv(s: &str) -> Result<String> {
        let mut out = Vec::new();
        encode(s, -1, &EncodeContext::default(), &mut out)
            .map(|_| out.iter().map(|b| format!("{b:02x}")).collect())
    }

    fn ok(s: &str) -> Result<String> {
        Ok(s.to_string())
    }

    // Golden bytes from interval_send on PostgreSQL 18.6 and 15.18 (identical).
    #[test]
    fn golden() {
        let cases = [
            (
                "1 year 2 mons 3 days 04:05:06.5",
                "000000036c9361a0000000030000000e",
            ),
            ("-1 days +02:03:04", "00000001b81ee600ffffffff00000000"),
            ("00:00:00", "00000000000000000000000000000000"),
            ("-00:00:01", "fffffffffff0bdc00000000000000000"),
            ("+01:00:00", "00000000d693a4000000000000000000"),
            ("1 day", "00000000000000000000000100000000"),
            ("1 days", "00000000000000000000000100000000"),
            ("1 Day", "00000000000000000000000100000000"),
            ("1 DAYS", "00000000000000000000000100000000"),
            ("1  day", "00000000000000000000000100000000"),
            ("1day", "00000000000000000000000100000000"),
            (" 1 day ", "00000000000000000000000100000000"),
            ("+1 days", "00000000000000000000000100000000"),
            ("-0 days", "00000000000000000000000000000000"),
            ("2 years", "00000000000000000000000000000018"),
            ("1 mon", "00000000000000000000000000000001"),
            ("3 months", "00000000000000000000000000000003"),
            ("1 month", "00000000000000000000000000000001"),
            ("5 hours", "0000000430e234000000000000000000"),
            ("5 hour", "0000000430e234000000000000000000"),
            ("5 mins", "0000000011e1a3000000000000000000"),
            ("5 min", "0000000011e1a3000000000000000000"),
            ("5 minutes", "0000000011e1a3000000000000000000"),
            ("7 secs", "00000000006acfc00000000000000000"),
            ("7 seconds", "00000000006acfc00000000000000000"),
            ("7 sec", "00000000006acfc00000000000000000"),
            ("-1 years -2 mons", "000000000000000000000000fffffff2"),
            (
                "-1 years -2 mons 3 days",
                "000000000000000000000003fffffff2",
            ),
            ("-1 day -02:00:00", "fffffffe52d8b800ffffffff00000000"),
            ("-1 days -1 hours", "ffffffff296c5c00ffffffff00000000"),
            ("1 day -02:00", "fffffffe52d8b8000000000100000000"),
            ("1 year -2 mons", "0000000000000000000000000000000a"),
            ("2 mons 1 year", "0000000000000000000000000000000e"),
            ("1 day 1 mon", "00000000000000000000000100000001"),
            (
                "1 years 2 mons 3 days 4 hours 5 mins 6 secs",
                "000000036c8bc080000000030000000e",
            ),
            ("1 hour 30 mins", "0000000141dd76000000000000000000"),
            ("100:00:00", "00000053d1ac10000000000000000000"),
            ("1:02", "00000000ddbab2000000000000000000"),
            ("01:02:03.123456", "00000000ddea5b000000000000000000"),
            ("-01:02:03", "ffffffff221787400000000000000000"),
            ("-1 days", "0000000000000000ffffffff00000000"),
            ("999999999 days", "00000000000000003b9ac9ff00000000"),
            ("999999999 hours", "31f5c4ec50d45c000000000000000000"),
            (
                "-999999999:59:59.999999",
                "ce0a3b12d89800010000000000000000",
            ),
            ("178956970 years", "0000000000000000000000007ffffff8"),
            (
                "178956970 years -999999999 mons",
                "000000000000000000000000446535f9",
            ),
            ("P1Y2M3DT4H5M6S", "000000036c8bc080000000030000000e"),
            ("P1D", "00000000000000000000000100000000"),
            ("PT1H", "00000000d693a4000000000000000000"),
            ("P1W", "00000000000000000000000700000000"),
            ("PT1M", "00000000039387000000000000000000"),
            ("P1M", "00000000000000000000000000000001"),
            ("P0D", "00000000000000000000000000000000"),
            ("PT0S", "00000000000000000000000000000000"),
            ("P10Y", "00000000000000000000000000000078"),
            ("PT36H", "0000001e2cc310000000000000000000"),
            ("PT100000M", "00000574fbde60000000000000000000"),
            ("P1DT1H", "00000000d693a4000000000100000000"),
            ("PT1S", "00000000000f42400000000000000000"),
        ];
        for (text, want) in cases {
            assert_eq!(iv(text), ok(want), "{text:?}");
        }
    }

    #[test]
    fn deferred() {
        for s in [
            "",
            " ",
            "-",
            "+",
            "1",
            "1 fortnight",
            "1 day 1 days",
            "1 hour 01:00:00",
            "1 mon 1 month",
            "-1 day -1 day",
            "01:02:03.1234567",
            "1.5 days",
            "@ 1 day",
            "1 day ago",
            "- 1 day",
            "00:60:00",
            "00:00:60",
            "1-2",
            "3 04:05:06",
            "1 d",
            "1 y",
            "1 h",
            "1 m",
            "1 s",
            "1 week",
            "P1D2D",
            "P1M1Y",
            "PT",
            "P",
            "P1DT",
            "PT1H1H",
            "P-1D",
            "p1d",
            "P1y",
            "PT1.5S",
            "P1Y2M3DT4H5M6.5S",
            " P1D ",
            "P1D ",
            "P 1D",
            "P+1D",
            "2147483648 days",
            "178956971 years",
            "1 year 2147483647 mons",
            "1000000000 days",
            "04:05:06 1 day",
            "-1 days 02:03:04",
            "-1 years 2 mons",
            "-1 days 02:00",
            "1 day\t1 hour",
            "01:02:",
            "01:2:03",
            "1:02:3",
            "01:02:03.",
            "1 days2 hours",
            "P306783379W",
            "infinity",
            "-infinity",
            "1 day,",
            "2147483647 days",
            "2147483647 hours",
            "1 day 1 hour 1",
            "P0001-02-03T04:05:06",
            "1 year 1 years",
        ] {
            assert_eq!(iv(s), Err(EncodeError::Deferred), "{s:?}");
        }
        let mut out = Vec::new();
        assert_eq!(
            encode("1 day", 0x7fff0000, &EncodeContext::default(), &mut out),
            Err(EncodeError::Deferred)
        );
    }

    #[test]
    fn garbage_never_panics() {
        let mut buf = Vec::new();
        for text in super::super::random_texts(
            b"0123456789-:+. PTYMWDHSdaysmonhour",
            0x2545_f491_4f6c_dd1d,
            200_000,
            40,
        ) {
            buf.clear();
            let _ = encode(&text, -1, &EncodeContext::default(), &mut buf);
        }
        for s in [
            "999999999 years 999999999 mons 999999999 days 999999999:59:59.999999",
            "-999999999 hours -999999999 mins -999999999 secs",
            "P999999999Y999999999M999999999W999999999DT999999999H999999999M999999999S",
            "\u{e9}",
            "P\u{e9}",
        ] {
            let _ = encode(s, -1, &EncodeContext::default(), &mut buf);
        }
    }
}
