//! A field's text to the value SQLite stores, checked against the column's declared type.
//!
//! SQLite types values, not columns: a column's declared type only gives it an *affinity*,
//! which converts text that looks like a number and keeps everything else as given. So the
//! `sqlite3` shell's `.import` (which binds every field as text) accepts `abc` in an INTEGER
//! column without a word. inrush stores exactly what that binding would store for every value
//! it accepts, and refuses the values the declared type says are wrong:
//!
//! - INTEGER, REAL and NUMERIC affinity: the value must be a number as SQLite reads one
//!   (`sqlite3AtoF`: optional sign, digits, a point, an exponent, spaces around). An integer
//!   literal that fits 64 bits is bound as that integer; any other number is bound as its
//!   text, which the column's affinity converts exactly as for `.import` (`3.0e2` becomes the
//!   integer 300, `1.5` the nearest double by SQLite's own rounding).
//! - NUMERIC affinity whose declared type names a convention: BOOL/BOOLEAN (true/false, yes/no,
//!   on/off, t/f, y/n, 1/0, stored as 1 or 0, SQLite's own TRUE and FALSE), DATE
//!   (`YYYY-MM-DD`), TIME (`HH:MM[:SS[.fff]]`), DATETIME and TIMESTAMP (a date, `T` or a space,
//!   a time, an optional `Z` or `±HH:MM`), all as text; a number is also accepted there (Julian
//!   day or Unix time, as SQLite's date functions read it). JSON: valid JSON, then the affinity.
//! - TEXT affinity: any text. BLOB (or no declared type): text as given, except `\x` followed
//!   by hex digits (PostgreSQL's bytea form, what `--from-query` yields) which becomes a blob.
//! - STRICT tables: INTEGER, REAL, TEXT, BLOB and ANY as SQLite enforces them, with its wording
//!   (`cannot store TEXT value in INTEGER column t.c`), so the row is refused before the insert.
//!
//! Values travel from the workers to the writer as typed rows ([`inrush_load::row`]).

use inrush_core::SqlType;
use inrush_load::row::Bound;

/// How SQLite treats values bound to a column (its declared type's affinity), and which
/// convention inrush checks on top of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Integer,
    Real,
    Numeric,
    Text,
    /// BLOB affinity (declared BLOB, or no type at all): values are stored as given.
    Blob,
    /// STRICT's ANY: stored as given, text stays text.
    Any,
    Bool,
    Date,
    Time,
    DateTime,
    Json,
}

impl Kind {
    /// The kind of a declared type, by SQLite's affinity rules (section 3.1 of "Datatypes In
    /// SQLite": the first of INT, CHAR/CLOB/TEXT, BLOB or nothing, REAL/FLOA/DOUB that the
    /// name contains, else NUMERIC), then the conventions of NUMERIC names.
    pub fn of_declared(declared: &str, strict: bool) -> Kind {
        let t = declared.to_ascii_uppercase();
        if strict && t == "ANY" {
            return Kind::Any;
        }
        if t.contains("INT") {
            Kind::Integer
        } else if t.contains("CHAR") || t.contains("CLOB") || t.contains("TEXT") {
            Kind::Text
        } else if t.contains("BLOB") || t.trim().is_empty() {
            Kind::Blob
        } else if t.contains("REAL") || t.contains("FLOA") || t.contains("DOUB") {
            Kind::Real
        } else if t.contains("BOOL") {
            Kind::Bool
        } else if t.contains("DATETIME") || t.contains("TIMESTAMP") {
            Kind::DateTime
        } else if t.contains("DATE") {
            Kind::Date
        } else if t.contains("TIME") {
            Kind::Time
        } else if t.contains("JSON") {
            Kind::Json
        } else {
            Kind::Numeric
        }
    }

    /// The kind in the engines' shared terms: SQLite's integers are 64-bit, its reals
    /// doubles; BLOB affinity and ANY keep whatever they are given.
    pub fn sql_type(self) -> SqlType {
        match self {
            Kind::Integer => SqlType::BigInt,
            Kind::Real => SqlType::Double,
            Kind::Numeric => SqlType::Numeric(None),
            Kind::Text => SqlType::Text,
            Kind::Blob | Kind::Any => SqlType::Source {
                engine: "sqlite",
                name: self.strict_name().into(),
            },
            Kind::Bool => SqlType::Boolean,
            Kind::Date => SqlType::Date,
            Kind::Time => SqlType::Time(None),
            Kind::DateTime => SqlType::Timestamp(None),
            Kind::Json => SqlType::Json,
        }
    }

    /// The STRICT type name SQLite uses in its refusals.
    fn strict_name(self) -> &'static str {
        match self {
            Kind::Integer => "INTEGER",
            Kind::Real => "REAL",
            Kind::Text => "TEXT",
            Kind::Blob => "BLOB",
            _ => "ANY",
        }
    }
}

/// A value ready to bind.
#[derive(Debug, Clone, PartialEq)]
pub enum Value<'a> {
    Null,
    Integer(i64),
    /// A decimal short enough that its double is one exact IEEE operation away (at most 15
    /// significant digits, a power of ten up to 10^22): every correct parse, Rust's and
    /// SQLite's, gives the same double, so the worker parses it and the writer binds it.
    Real(f64),
    /// A number that is not an integer literal, bound as its text: the column's affinity
    /// converts it, so the value stored is exactly the one SQLite's own `sqlite3AtoF` reads
    /// (whose rounding of long inputs differs from a correctly rounded parse, and between
    /// versions), integer or real by SQLite's rule.
    RealText(&'a str),
    Text(&'a str),
    Blob(Vec<u8>),
}

impl Value<'_> {
    fn storage_class(&self) -> &'static str {
        match self {
            Value::Null => "NULL",
            Value::Integer(_) => "INTEGER",
            Value::Real(_) | Value::RealText(_) => "REAL",
            Value::Text(_) => "TEXT",
            Value::Blob(_) => "BLOB",
        }
    }
}

/// One column as the value checks see it.
#[derive(Debug, Clone)]
pub struct ColumnCheck {
    /// `table.column`, as SQLite names it in constraint messages.
    pub qualified: String,
    /// The affinity and convention values are converted by.
    pub kind: Kind,
    /// STRICT tables: the type SQLite enforces (Integer, Real, Text, Blob or Any).
    pub strict: Option<Kind>,
    pub not_null: bool,
    /// An INTEGER PRIMARY KEY (the rowid): NULL means "the next rowid", anything else must be
    /// an integer.
    pub rowid: bool,
}

impl ColumnCheck {
    /// A binary value: a blob where the column stores values as given (BLOB, no type, ANY),
    /// else its text, checked as the column's type (`7` into an INTEGER column is 7).
    pub fn bytes<'b>(&self, bytes: &'b [u8]) -> Result<Value<'b>, String> {
        match (self.kind, std::str::from_utf8(bytes)) {
            (Kind::Blob | Kind::Any, _) => Ok(Value::Blob(bytes.to_vec())),
            // As a string's NUL is refused: SQLite's text functions end the text there.
            (_, Ok(text)) if text.contains('\0') => {
                Err("a NUL byte, which only a BLOB, ANY or untyped column takes".into())
            }
            (_, Ok(text)) => self.value(Some(text)),
            (_, Err(_)) => {
                Err("not UTF-8 text, which only a BLOB, ANY or untyped column takes".into())
            }
        }
    }

    /// The value SQLite would store for `text` bound to this column, or why inrush refuses it.
    pub fn value<'t>(&self, text: Option<&'t str>) -> Result<Value<'t>, String> {
        let Some(text) = text else {
            if self.not_null && !self.rowid {
                return Err(format!("NOT NULL constraint failed: {}", self.qualified));
            }
            return Ok(Value::Null);
        };
        let value = match self.kind {
            Kind::Text => Value::Text(text),
            Kind::Any => Value::Text(text),
            Kind::Blob => match hex_blob(text) {
                Some(blob) => Value::Blob(blob),
                None => Value::Text(text),
            },
            Kind::Integer | Kind::Real | Kind::Numeric => match numeric(text) {
                Some(v) => v,
                None if self.strict.is_some() => Value::Text(text),
                None => return Err(format!("not a number (the column is {})", self.describe())),
            },
            Kind::Bool => match inrush_encode::boolin(text) {
                Some(b) => Value::Integer(b as i64),
                None => {
                    return Err("not a boolean (true/false, yes/no, on/off, t/f, y/n, 1/0)".into())
                }
            },
            Kind::Date | Kind::Time | Kind::DateTime => match numeric(text) {
                Some(v) => v,
                None if self.date_time_ok(text) => Value::Text(text),
                None => return Err(self.date_time_reason()),
            },
            Kind::Json => match serde_json::from_str::<serde::de::IgnoredAny>(text) {
                Ok(_) => numeric(text).unwrap_or(Value::Text(text)),
                Err(e) => return Err(format!("invalid JSON: {e}")),
            },
        };
        if let Some(storage) = self.strict {
            self.strict_check(storage, value, text)
        } else if self.rowid
            && !matches!(value, Value::Integer(_))
            && !(matches!(value, Value::Real(_) | Value::RealText(_)) && integral(text))
        {
            Err("datatype mismatch (an INTEGER PRIMARY KEY holds integers only)".into())
        } else {
            Ok(value)
        }
    }

    /// STRICT: what SQLite accepts after applying the column's affinity (a number read from
    /// text stays that text in a TEXT column, as binding the text would keep it).
    fn strict_check<'t>(
        &self,
        storage: Kind,
        value: Value<'t>,
        text: &'t str,
    ) -> Result<Value<'t>, String> {
        let fits = match (storage, &value) {
            (Kind::Any, _) | (_, Value::Null) => true,
            (Kind::Integer, Value::Integer(_)) => true,
            // SQLite makes the integer a real itself, as for the bound text.
            (Kind::Real, Value::Integer(_) | Value::Real(_) | Value::RealText(_)) => true,
            (Kind::Integer, Value::Real(_) | Value::RealText(_)) => integral(text),
            (Kind::Text, Value::Text(_)) => true,
            (Kind::Text, Value::Integer(_) | Value::Real(_) | Value::RealText(_)) => {
                return Ok(Value::Text(text))
            }
            (Kind::Blob, Value::Blob(_)) => true,
            _ => false,
        };
        match fits {
            true => Ok(value),
            false => Err(format!(
                "cannot store {} value in {} column {}",
                value.storage_class(),
                storage.strict_name(),
                self.qualified
            )),
        }
    }

    fn describe(&self) -> String {
        let name = match self.kind {
            Kind::Integer => "INTEGER",
            Kind::Real => "REAL",
            _ => "NUMERIC",
        };
        format!("{name} by affinity")
    }

    fn date_time_ok(&self, text: &str) -> bool {
        match self.kind {
            Kind::Date => iso_date(text.as_bytes()) == Some(10) && text.len() == 10,
            Kind::Time => iso_time(text.as_bytes()) == Some(text.len()),
            _ => iso_datetime(text.as_bytes()),
        }
    }

    fn date_time_reason(&self) -> String {
        let form = match self.kind {
            Kind::Date => "a date (YYYY-MM-DD)",
            Kind::Time => "a time (HH:MM[:SS[.fff]])",
            _ => "a date and time (YYYY-MM-DD HH:MM[:SS[.fff]][Z|±HH:MM])",
        };
        format!("not {form} or a number, as SQLite's date functions read them")
    }
}

/// `text` as SQLite's numeric affinity takes it, or `None` when it is not a number.
///
/// Follows `sqlite3AtoF`'s grammar: an integer literal that fits 64 bits is that integer; any
/// other number is left to SQLite to convert ([`Value::RealText`]).
pub fn numeric(text: &str) -> Option<Value<'_>> {
    let s = text.trim_matches(|c: char| matches!(c, ' ' | '\t' | '\n' | '\x0b' | '\x0c' | '\r'));
    let b = s.as_bytes();
    let mut i = usize::from(matches!(b.first(), Some(b'+' | b'-')));
    let int_start = i;
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    let mut digits = i - int_start;
    let mut is_real = false;
    if i < b.len() && b[i] == b'.' {
        is_real = true;
        i += 1;
        let frac_start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        digits += i - frac_start;
    }
    if digits == 0 {
        return None;
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        is_real = true;
        i += 1;
        if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
            i += 1;
        }
        let exp_start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == exp_start {
            return None;
        }
    }
    if i != b.len() {
        return None;
    }
    if !is_real {
        if let Ok(v) = s.parse::<i64>() {
            return Some(Value::Integer(v));
        }
    }
    match exact_decimal(b) {
        true => s.parse().ok().map(Value::Real),
        false => Some(Value::RealText(text)),
    }
}

/// Whether a number (already known to be well formed) has at most 15 significant digits and
/// a decimal exponent within ±22 once written as an integer significand: its double is then
/// that integer times or divided by an exact power of ten, one correctly rounded operation.
fn exact_decimal(b: &[u8]) -> bool {
    let (mut digits, mut started, mut point_shift, mut exponent) = (0i32, false, 0i32, 0i32);
    let mut in_fraction = false;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'0'..=b'9' => {
                started |= b[i] != b'0';
                if started {
                    digits += 1;
                }
                if in_fraction {
                    point_shift -= 1;
                }
            }
            b'.' => in_fraction = true,
            b'e' | b'E' => {
                exponent = match std::str::from_utf8(&b[i + 1..])
                    .ok()
                    .and_then(|e| e.parse().ok())
                {
                    Some(e) => e,
                    None => return false,
                };
                break;
            }
            _ => {}
        }
        i += 1;
    }
    digits <= 15 && (point_shift + exponent).abs() <= 22
}

/// Whether SQLite's affinity makes a real literal an integer (`applyNumericAffinity`: the
/// double is one exactly and lies strictly inside the 64-bit range), judged by a correctly
/// rounded parse; in the rare case SQLite rounds otherwise, a STRICT table refuses the row
/// at the insert, and it is reported then.
fn integral(text: &str) -> bool {
    let s = text.trim_matches(|c: char| matches!(c, ' ' | '\t' | '\n' | '\x0b' | '\x0c' | '\r'));
    let Ok(r) = s.parse::<f64>() else {
        return false;
    };
    // sqlite3VdbeIntegerAffinity: doubleToInt64 clamps, then the double must equal it.
    let ix = if r <= i64::MIN as f64 {
        i64::MIN
    } else if r >= i64::MAX as f64 {
        i64::MAX
    } else {
        r as i64
    };
    r == ix as f64 && ix > i64::MIN && ix < i64::MAX
}

/// `\x` followed by an even number of hex digits.
fn hex_blob(text: &str) -> Option<Vec<u8>> {
    let hex = text.strip_prefix("\\x")?.as_bytes();
    if hex.len() % 2 != 0 {
        return None;
    }
    hex.chunks(2)
        .map(|pair| {
            let digit = |c: u8| (c as char).to_digit(16);
            Some((digit(pair[0])? * 16 + digit(pair[1])?) as u8)
        })
        .collect()
}

fn digits(b: &[u8], at: usize, n: usize) -> Option<u32> {
    let part = b.get(at..at + n)?;
    part.iter().all(u8::is_ascii_digit).then(|| {
        part.iter()
            .fold(0u32, |acc, &d| acc * 10 + u32::from(d - b'0'))
    })
}

/// `YYYY-MM-DD`, a real calendar date; returns its length.
fn iso_date(b: &[u8]) -> Option<usize> {
    let (y, m, d) = (digits(b, 0, 4)?, digits(b, 5, 2)?, digits(b, 8, 2)?);
    if b[4] != b'-' || b[7] != b'-' || !(1..=12).contains(&m) || d == 0 {
        return None;
    }
    let leap = y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
    let days = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    (d <= days[m as usize - 1]).then_some(10)
}

/// `HH:MM[:SS[.fff]]`; returns its length.
fn iso_time(b: &[u8]) -> Option<usize> {
    let (h, m) = (digits(b, 0, 2)?, digits(b, 3, 2)?);
    if b[2] != b':' || h > 24 || m > 59 {
        return None;
    }
    let mut len = 5;
    if b.get(5) == Some(&b':') {
        if digits(b, 6, 2)? > 59 {
            return None;
        }
        len = 8;
        if b.get(8) == Some(&b'.') {
            len = 9;
            while b.get(len).is_some_and(u8::is_ascii_digit) {
                len += 1;
            }
            if len == 9 {
                return None;
            }
        }
    }
    Some(len)
}

fn iso_datetime(b: &[u8]) -> bool {
    if iso_date(b).is_none() {
        return false;
    }
    if b.len() == 10 {
        return true;
    }
    if !matches!(b[10], b' ' | b'T') {
        return false;
    }
    let Some(len) = iso_time(&b[11..]) else {
        return false;
    };
    let zone = &b[11 + len..];
    match zone {
        [] | [b'Z'] => true,
        [b'+' | b'-', ..] => zone.len() == 6 && iso_time(&zone[1..]) == Some(5),
        _ => false,
    }
}

/// Appends one value to the chunk's typed rows ([`inrush_load::row`]).
pub fn push_value(out: &mut Vec<u8>, value: &Value<'_>) {
    let bound = match value {
        Value::Null => Bound::Null,
        Value::Integer(i) => Bound::Integer(*i),
        Value::Real(r) => Bound::Real(*r),
        Value::Text(t) | Value::RealText(t) => Bound::Text(t.as_bytes()),
        Value::Blob(b) => Bound::Blob(b),
    };
    inrush_load::row::push(out, bound);
}

#[cfg(test)]
mod tests {
    use super::*;
    use inrush_load::row::Values;

    fn column(declared: &str, strict: bool) -> ColumnCheck {
        let kind = Kind::of_declared(declared, strict);
        ColumnCheck {
            qualified: "t.c".into(),
            kind,
            strict: strict.then_some(kind),
            not_null: false,
            rowid: false,
        }
    }

    #[test]
    fn affinity_follows_sqlite_rules() {
        for (declared, kind) in [
            ("INTEGER", Kind::Integer),
            ("BIGINT", Kind::Integer),
            ("POINT", Kind::Integer),
            ("VARCHAR(10)", Kind::Text),
            ("CLOB", Kind::Text),
            ("BLOB", Kind::Blob),
            ("", Kind::Blob),
            ("DOUBLE PRECISION", Kind::Real),
            ("FLOATING POINT", Kind::Integer),
            ("DECIMAL(10,2)", Kind::Numeric),
            ("BOOLEAN", Kind::Bool),
            ("DATETIME", Kind::DateTime),
            ("TIMESTAMP", Kind::DateTime),
            ("DATE", Kind::Date),
            ("TIME", Kind::Time),
            ("JSON", Kind::Json),
        ] {
            assert_eq!(Kind::of_declared(declared, false), kind, "{declared}");
        }
    }

    #[test]
    fn numbers_convert_as_numeric_affinity_does() {
        let n = |s| numeric(s);
        assert_eq!(n("42"), Some(Value::Integer(42)));
        assert_eq!(n(" -7 "), Some(Value::Integer(-7)));
        assert_eq!(n("+5"), Some(Value::Integer(5)));
        assert_eq!(n("3.0e2"), Some(Value::Real(300.0)));
        assert_eq!(n("1.5"), Some(Value::Real(1.5)));
        assert_eq!(
            n("0.1234567890123456"),
            Some(Value::RealText("0.1234567890123456"))
        );
        assert_eq!(n("1e23"), Some(Value::RealText("1e23")));
        assert_eq!(n(".5"), Some(Value::Real(0.5)));
        assert_eq!(n("5."), Some(Value::Real(5.0)));
        assert_eq!(n("9223372036854775807"), Some(Value::Integer(i64::MAX)));
        assert_eq!(
            n("9223372036854775808"),
            Some(Value::RealText("9223372036854775808"))
        );
        for (real, is_integer) in [
            ("3.0e2", true),
            ("-0.0", true),
            ("5.", true),
            ("1.5", false),
            ("1e19", false),
            ("9.223372036854775807e18", false),
        ] {
            assert_eq!(integral(real), is_integer, "{real}");
        }
        for bad in [
            "", " ", "abc", "1e", "0x10", "1_000", "Inf", "NaN", "1.2.3", "--1", ".",
        ] {
            assert_eq!(n(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn affinity_columns_refuse_what_is_not_their_type() {
        assert_eq!(
            column("INTEGER", false).value(Some("12")),
            Ok(Value::Integer(12))
        );
        assert!(column("INTEGER", false).value(Some("twelve")).is_err());
        assert_eq!(
            column("TEXT", false).value(Some("007")),
            Ok(Value::Text("007"))
        );
        assert_eq!(column("", false).value(Some("abc")), Ok(Value::Text("abc")));
        assert_eq!(
            column("BLOB", false).value(Some("\\x00ff")),
            Ok(Value::Blob(vec![0, 255]))
        );
        assert_eq!(
            column("BOOLEAN", false).value(Some("Yes")),
            Ok(Value::Integer(1))
        );
        assert!(column("BOOLEAN", false).value(Some("maybe")).is_err());
        assert_eq!(
            column("DATE", false).value(Some("2024-02-29")),
            Ok(Value::Text("2024-02-29"))
        );
        assert!(column("DATE", false).value(Some("2023-02-29")).is_err());
        assert!(column("DATE", false).value(Some("01/02/2024")).is_err());
        assert_eq!(
            column("DATE", false).value(Some("2460000.5")),
            Ok(Value::Real(2460000.5))
        );
        for ok in [
            "2024-01-05 10:11",
            "2024-01-05T10:11:12.345Z",
            "2024-01-05 10:11:12+02:00",
        ] {
            assert!(column("DATETIME", false).value(Some(ok)).is_ok(), "{ok}");
        }
        for bad in ["2024-01-05 25:00", "2024-01-05X10:11", "2024-01-05 10:11+2"] {
            assert!(column("DATETIME", false).value(Some(bad)).is_err(), "{bad}");
        }
        assert_eq!(
            column("JSON", false).value(Some("12")),
            Ok(Value::Integer(12))
        );
        assert_eq!(
            column("JSON", false).value(Some("{\"a\":1}")),
            Ok(Value::Text("{\"a\":1}"))
        );
        assert!(column("JSON", false).value(Some("{a:1}")).is_err());
    }

    #[test]
    fn strict_columns_refuse_in_sqlite_words() {
        assert_eq!(
            column("INTEGER", true).value(Some("1.5")),
            Err("cannot store REAL value in INTEGER column t.c".into())
        );
        assert_eq!(
            column("INTEGER", true).value(Some("x")),
            Err("cannot store TEXT value in INTEGER column t.c".into())
        );
        assert_eq!(column("REAL", true).value(Some("2")), Ok(Value::Integer(2)));
        assert_eq!(
            column("INTEGER", true).value(Some("2.0")),
            Ok(Value::Real(2.0))
        );
        assert_eq!(column("ANY", true).value(Some("2")), Ok(Value::Text("2")));
        assert!(column("BLOB", true).value(Some("abc")).is_err());
        let mut not_null = column("TEXT", true);
        not_null.not_null = true;
        assert_eq!(
            not_null.value(None),
            Err("NOT NULL constraint failed: t.c".into())
        );
    }

    #[test]
    fn rows_read_back_as_written() {
        let mut out = Vec::new();
        for v in [
            Value::Null,
            Value::Integer(-3),
            Value::Real(2.5),
            Value::Text("é"),
            Value::Blob(vec![1, 2]),
        ] {
            push_value(&mut out, &v);
        }
        let back: Vec<Bound> = Values::new(&out).collect();
        assert_eq!(
            back,
            [
                Bound::Null,
                Bound::Integer(-3),
                Bound::Real(2.5),
                Bound::Text("é".as_bytes()),
                Bound::Blob(&[1, 2])
            ]
        );
    }
}
