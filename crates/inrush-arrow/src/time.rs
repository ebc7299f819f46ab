//! Calendar arithmetic and the server's rounding rules for dates, times and timestamps.
use arrow_schema::TimeUnit;
use inrush_core::calendar::civil_from_days;
use std::fmt::Write;

pub(crate) const USECS_PER_SEC: i64 = 1_000_000;
pub(crate) const USECS_PER_DAY: i64 = 86_400 * USECS_PER_SEC;
/// Days from 1970-01-01 to 2000-01-01 (PostgreSQL's epoch).
pub(crate) const UNIX_TO_PG_DAYS: i64 = 10_957;
/// Days since 2000-01-01 of 0001-01-01 and 10000-01-01: the years `encode_value` reads itself.
/// Values outside are deferred so both paths agree (the server takes 4713 BC to 294276 AD).
pub(crate) const PG_DAY_MIN: i64 = -730_119;
pub(crate) const PG_DAY_END: i64 = 2_921_940;

/// Microseconds a fraction of `nanos` (0..1e9) billionths of a second becomes when the server
/// reads its 9 digits: `ParseFractionalSecond` does `rint(strtod(".ddddddddd") * 1000000)`.
/// `nanos as f64 / 1e9` is the same correctly rounded double strtod gives, and `rint` rounds
/// half to even in the default rounding mode.
pub(crate) fn nanos_to_micros(nanos: i64) -> i64 {
    if nanos % 1000 == 0 {
        return nanos / 1000;
    }
    ((nanos as f64 / 1e9) * 1e6).round_ties_even() as i64
}

/// `AdjustTimeForTypmod` / `AdjustTimestampForTypmod`, as `inrush-encode` applies them: round
/// half away from zero to `typmod` fractional digits; -1 and 6 leave the value alone. `None` for
/// typmods `encode_value` defers.
pub(crate) fn round_typmod(v: i64, typmod: i32) -> Option<i64> {
    if !(-1..=6).contains(&typmod) {
        return None;
    }
    if typmod == -1 || typmod == 6 {
        return Some(v);
    }
    let scale = 10i64.pow(6 - typmod as u32);
    let half = scale / 2;
    Some(if v >= 0 {
        (v + half) / scale * scale
    } else {
        -((-v + half) / scale * scale)
    })
}

/// A timestamp of `unit` as (whole seconds since 1970, billionths within that second).
pub(crate) fn split_timestamp(v: i64, unit: TimeUnit) -> (i64, i64) {
    match unit {
        TimeUnit::Second => (v, 0),
        TimeUnit::Millisecond => (v.div_euclid(1000), v.rem_euclid(1000) * 1_000_000),
        TimeUnit::Microsecond => (v.div_euclid(1_000_000), v.rem_euclid(1_000_000) * 1000),
        TimeUnit::Nanosecond => (v.div_euclid(1_000_000_000), v.rem_euclid(1_000_000_000)),
    }
}

/// Microseconds since 2000-01-01 that the server reads from a timestamp's text form (before
/// typmod rounding), `None` outside the years 1..9999 (left to the server).
pub(crate) fn pg_timestamp(v: i64, unit: TimeUnit) -> Option<i64> {
    let (secs, nanos) = split_timestamp(v, unit);
    let days = secs.div_euclid(86_400) - UNIX_TO_PG_DAYS;
    if !(PG_DAY_MIN..PG_DAY_END).contains(&days) {
        return None;
    }
    let secs = secs - UNIX_TO_PG_DAYS * 86_400;
    Some(secs * USECS_PER_SEC + nanos_to_micros(nanos))
}

/// A time of day of `unit` as microseconds since midnight, as the server reads its text form;
/// `None` outside 00:00:00..24:00:00 (invalid Arrow data: the server decides). A negative value
/// is `None` before any rounding: its text (`-00:00:00.000000001`) is refused, where rounding
/// would make it midnight.
pub(crate) fn pg_time(v: i64, unit: TimeUnit) -> Option<i64> {
    if v < 0 {
        return None;
    }
    let (secs, nanos) = split_timestamp(v, unit);
    let us = secs.checked_mul(USECS_PER_SEC)? + nanos_to_micros(nanos);
    (0..=USECS_PER_DAY).contains(&us).then_some(us)
}

/// `YYYY-MM-DD`, with ` BC` appended by the caller when `bc` (PostgreSQL's ISO form).
fn write_ymd(days: i64, out: &mut String) -> bool {
    let (y, m, d) = civil_from_days(days);
    let (year, bc) = if y <= 0 { (1 - y, true) } else { (y, false) };
    if let Ok(year @ 0..=9999) = u32::try_from(year) {
        // By hand: `write!` costs more than the rest of a date's rendering.
        let digit = |n: u32| b'0' + (n % 10) as u8;
        let text = [
            digit(year / 1000),
            digit(year / 100),
            digit(year / 10),
            digit(year),
            b'-',
            digit(m / 10),
            digit(m),
            b'-',
            digit(d / 10),
            digit(d),
        ];
        // ASCII digits and dashes: always UTF-8.
        out.push_str(std::str::from_utf8(&text).unwrap_or_default());
    } else {
        let _ = write!(out, "{year:04}-{m:02}-{d:02}");
    }
    bc
}

/// A date (days since 1970) as PostgreSQL prints it with DateStyle ISO.
pub(crate) fn write_date(days: i64, out: &mut String) {
    if write_ymd(days, out) {
        out.push_str(" BC");
    }
}

/// `HH:MM:SS[.fffffffff]` with trailing zeros of the fraction dropped; `secs` may exceed a day
/// (durations) and is not negative.
pub(crate) fn write_hms(secs: i64, nanos: i64, out: &mut String) {
    let _ = write!(
        out,
        "{:02}:{:02}:{:02}",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    );
    write_fraction(nanos, out);
}

fn write_fraction(nanos: i64, out: &mut String) {
    if nanos == 0 {
        return;
    }
    let mut digits = 9;
    let mut n = nanos;
    while n % 10 == 0 {
        n /= 10;
        digits -= 1;
    }
    let _ = write!(out, ".{n:0digits$}");
}

/// A time of day of `unit`.
pub(crate) fn write_time(v: i64, unit: TimeUnit, out: &mut String) {
    let (secs, nanos) = split_timestamp(v, unit);
    if secs < 0 {
        // Not a valid Arrow time; written so that the server refuses it.
        out.push('-');
        let total = -(secs as i128 * 1_000_000_000 + nanos as i128);
        let secs = (total / 1_000_000_000) as i64;
        write_hms(secs, (total % 1_000_000_000) as i64, out);
    } else {
        write_hms(secs, nanos, out);
    }
}

/// A timestamp of `unit` as PostgreSQL prints it (DateStyle ISO): `zone` after the time (`+00`
/// for a zoned one, shown in UTC; empty for one without), then ` BC` for years before 1.
pub(crate) fn write_timestamp(v: i64, unit: TimeUnit, zone: &str, out: &mut String) {
    let (secs, nanos) = split_timestamp(v, unit);
    let bc = write_ymd(secs.div_euclid(86_400), out);
    out.push(' ');
    write_hms(secs.rem_euclid(86_400), nanos, out);
    out.push_str(zone);
    if bc {
        out.push_str(" BC");
    }
}

/// A duration as an interval's `[-]H:MM:SS[.f]` form (hours may exceed 24).
pub(crate) fn write_duration(v: i64, unit: TimeUnit, out: &mut String) {
    let per_sec: i128 = match unit {
        TimeUnit::Second => 1,
        TimeUnit::Millisecond => 1000,
        TimeUnit::Microsecond => 1_000_000,
        TimeUnit::Nanosecond => 1_000_000_000,
    };
    let v = i128::from(v);
    if v < 0 {
        out.push('-');
    }
    let a = v.unsigned_abs() as i128;
    let secs = (a / per_sec) as i64;
    let nanos = ((a % per_sec) * (1_000_000_000 / per_sec)) as i64;
    write_hms(secs, nanos, out);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn day_bounds_are_the_dates_they_say() {
        assert_eq!(civil_from_days(UNIX_TO_PG_DAYS), (2000, 1, 1));
        assert_eq!(civil_from_days(PG_DAY_MIN + UNIX_TO_PG_DAYS), (1, 1, 1));
        assert_eq!(
            civil_from_days(PG_DAY_MIN + UNIX_TO_PG_DAYS - 1),
            (0, 12, 31)
        );
        assert_eq!(civil_from_days(PG_DAY_END + UNIX_TO_PG_DAYS), (10000, 1, 1));
    }

    #[test]
    fn texts() {
        let mut s = String::new();
        write_date(-719_528 + 366, &mut s); // 0001-01-01
        assert_eq!(s, "0001-01-01");
        s.clear();
        write_date(-719_528 + 365, &mut s); // year 0 = 1 BC
        assert_eq!(s, "0001-12-31 BC");
        s.clear();
        write_date(2_932_897, &mut s); // the first day past 4 digits
        assert_eq!(s, "10000-01-01");
        s.clear();
        write_date(19_723, &mut s);
        assert_eq!(s, "2024-01-01");
        s.clear();
        write_timestamp(-1, TimeUnit::Nanosecond, "+00", &mut s);
        assert_eq!(s, "1969-12-31 23:59:59.999999999+00");
        s.clear();
        write_timestamp(1_500, TimeUnit::Millisecond, "", &mut s);
        assert_eq!(s, "1970-01-01 00:00:01.5");
        s.clear();
        write_time(45_296_000_100, TimeUnit::Microsecond, &mut s);
        assert_eq!(s, "12:34:56.0001");
        s.clear();
        write_duration(-90_061_500, TimeUnit::Millisecond, &mut s);
        assert_eq!(s, "-25:01:01.5");
    }

    #[test]
    fn nanosecond_rounding_follows_rint_of_the_double() {
        assert_eq!(nanos_to_micros(123_456_000), 123_456);
        assert_eq!(nanos_to_micros(123_456_499), 123_456);
        assert_eq!(nanos_to_micros(123_456_501), 123_457);
        assert_eq!(nanos_to_micros(999_999_999), 1_000_000);
        // Exact halves depend on the double nearest to the fraction, then ties go to even.
        for n in [500i64, 1500, 2500, 123_456_500] {
            let f: f64 = format!("0.{n:09}").parse().unwrap();
            assert_eq!(nanos_to_micros(n), (f * 1e6).round_ties_even() as i64);
        }
    }

    #[test]
    fn typmod_rounding() {
        assert_eq!(round_typmod(1_500_000, 0), Some(2_000_000));
        assert_eq!(round_typmod(-1_500_000, 0), Some(-2_000_000));
        assert_eq!(round_typmod(1_234_567, 3), Some(1_235_000));
        assert_eq!(round_typmod(5, -1), Some(5));
        assert_eq!(round_typmod(5, 7), None);
    }
}
