//! A field's text checked against its column's type and written as `LOAD DATA` reads it.
//!
//! The server has the last word: every row goes through `LOAD DATA LOCAL INFILE`, and any
//! warning it raises for a row (a value converted, truncated, out of range, a duplicate key)
//! makes that row a bad row (see `crate::writer`), so nothing changes silently. The checks here
//! refuse on the client what the server is certain to refuse, with its wording, so the common
//! bad values cost no round trip:
//!
//! - integers (`tinyint` to `bigint`, signed and UNSIGNED): a plain integer outside the type's
//!   range (`Out of range value for column 'c'`);
//! - `decimal(p,s)`: more than `p - s` digits before the point;
//! - `char(n)`/`varchar(n)`: more than `n` characters (trailing spaces aside, which the server
//!   trims with a note); `tinytext`...`longtext` and binary types by bytes;
//! - `enum`: a value that is no member (members compare case-insensitively, trailing spaces
//!   trimmed; a member's number is left to the server);
//! - `json`: text that is not JSON;
//! - NULL in a NOT NULL column that is not AUTO_INCREMENT.
//!
//! Everything else (dates and times, floats, bits, sets, other spellings of numbers) goes to
//! the server as given.
//!
//! The form: `LOAD DATA`'s defaults, fields ended by a tab, lines by `\n`, `\` escaping tab,
//! line feed, carriage return, NUL and itself, and `\N` for NULL.

use crate::catalog::Column;

/// One column's checks.
#[derive(Debug, Clone)]
pub struct ColumnCheck {
    name: String,
    kind: Kind,
    /// NULL is refused (NOT NULL and no AUTO_INCREMENT to fill it).
    refuse_null: bool,
}

#[derive(Debug, Clone, PartialEq)]
enum Kind {
    Integer {
        min: i128,
        max: i128,
    },
    Decimal {
        integer_digits: u64,
    },
    Chars(u64),
    Bytes(u64),
    Enum(Vec<String>),
    Json,
    /// `--create`'s boolean columns (TINYINT(1)): COPY's spellings of true and false, written
    /// as 1 and 0.
    Boolean,
    /// Any other TINYINT(1), which is what MariaDB makes of BOOLEAN: COPY's spellings of true
    /// and false as 1 and 0 (what `--create` infers, and what PostgreSQL's boolean takes,
    /// loads again), integers in range as for any TINYINT.
    Flag {
        min: i128,
        max: i128,
    },
    /// `--create`'s binary columns: PostgreSQL's `\x` hex form, written as the bytes.
    Hex,
    /// Checked by the server alone.
    Server,
}

impl ColumnCheck {
    pub fn of(column: &Column) -> ColumnCheck {
        let unsigned = column.column_type.to_ascii_lowercase().contains("unsigned");
        let int = |bits: u32| match unsigned {
            true => Kind::Integer {
                min: 0,
                max: (1i128 << bits) - 1,
            },
            false => Kind::Integer {
                min: -(1i128 << (bits - 1)),
                max: (1i128 << (bits - 1)) - 1,
            },
        };
        let flag = column
            .column_type
            .to_ascii_lowercase()
            .starts_with("tinyint(1)");
        let kind = match column.data_type.as_str() {
            "tinyint" if flag => match int(8) {
                Kind::Integer { min, max } => Kind::Flag { min, max },
                other => other,
            },
            "tinyint" => int(8),
            "smallint" => int(16),
            "mediumint" => int(24),
            "int" | "integer" => int(32),
            "bigint" => int(64),
            "decimal" | "numeric" => match (column.precision, column.scale) {
                (Some(p), Some(s)) => Kind::Decimal {
                    integer_digits: p - s,
                },
                _ => Kind::Server,
            },
            "char" | "varchar" => column.max_length.map_or(Kind::Server, Kind::Chars),
            "tinytext" | "text" | "mediumtext" | "longtext" | "binary" | "varbinary"
            | "tinyblob" | "blob" | "mediumblob" | "longblob" => {
                column.max_length.map_or(Kind::Server, Kind::Bytes)
            }
            "enum" => Kind::Enum(enum_members(&column.column_type)),
            "json" => Kind::Json,
            _ => Kind::Server,
        };
        ColumnCheck {
            name: column.name.clone(),
            kind,
            refuse_null: column.not_null && !column.auto_increment,
        }
    }

    /// A column a query's rows load into. A query's rows come in PostgreSQL's text forms
    /// (`QueryServer::csv`), so a binary column takes `\x` hex, which it stores as the bytes.
    pub fn of_query(column: &Column) -> ColumnCheck {
        let binary = [
            "binary",
            "varbinary",
            "tinyblob",
            "blob",
            "mediumblob",
            "longblob",
        ];
        match binary.contains(&column.data_type.as_str()) {
            true => ColumnCheck {
                refuse_null: column.not_null,
                ..ColumnCheck::hex(&column.name)
            },
            false => ColumnCheck::of(column),
        }
    }

    /// A column `--create` made for booleans.
    pub fn boolean(name: &str) -> ColumnCheck {
        ColumnCheck {
            name: name.to_string(),
            kind: Kind::Boolean,
            refuse_null: false,
        }
    }

    /// A column `--create` made for binary values.
    pub fn hex(name: &str) -> ColumnCheck {
        ColumnCheck {
            name: name.to_string(),
            kind: Kind::Hex,
            refuse_null: false,
        }
    }

    /// Appends `text` (`None`: NULL) as a `LOAD DATA` field, or says why the server would
    /// refuse it. `plain`: the text is known to hold nothing to escape.
    // Inlined into the row loop: called once per field, the call and its frame cost as much
    // as the usual check (a length, a few digits); the rare kinds are out of line.
    #[inline]
    pub fn write(&self, text: Option<&str>, plain: bool, out: &mut Vec<u8>) -> Result<(), String> {
        let Some(text) = text else {
            return self.write_null(out);
        };
        match &self.kind {
            Kind::Boolean | Kind::Hex => self.write_converted(text, out),
            Kind::Flag { .. } if inrush_encode::boolin(text).is_some() => {
                self.write_converted(text, out)
            }
            _ => {
                self.check(text)?;
                if plain {
                    out.extend_from_slice(text.as_bytes());
                } else {
                    escape_into(text.as_bytes(), out);
                }
                Ok(())
            }
        }
    }

    /// Appends a binary value's bytes as they are: into a column that stores bytes, checked
    /// against its length; into any other, as its text when they are UTF-8 (`7` into an INT),
    /// else for the server to judge in the column's character set.
    pub fn write_bytes(&self, bytes: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
        match (&self.kind, std::str::from_utf8(bytes)) {
            (Kind::Hex, _) => {}
            (Kind::Bytes(limit), _) if bytes.len() as u64 > *limit => {
                return Err(format!("Data too long for column '{}'", self.name))
            }
            (Kind::Bytes(_), _) => {}
            (_, Ok(text)) => return self.write(Some(text), false, out),
            (_, Err(_)) => {}
        }
        escape_into(bytes, out);
        Ok(())
    }

    fn write_null(&self, out: &mut Vec<u8>) -> Result<(), String> {
        if self.refuse_null {
            return Err(format!("Column '{}' cannot be null", self.name));
        }
        out.extend_from_slice(b"\\N");
        Ok(())
    }

    /// A value `--create` gave a column of another type: a boolean or `\x` hex.
    fn write_converted(&self, text: &str, out: &mut Vec<u8>) -> Result<(), String> {
        match &self.kind {
            Kind::Boolean | Kind::Flag { .. } => match inrush_encode::boolin(text) {
                Some(true) => out.push(b'1'),
                Some(false) => out.push(b'0'),
                None => return Err(format!("not a boolean for column '{}'", self.name)),
            },
            _ => {
                let bytes = text
                    .strip_prefix("\\x")
                    .filter(|h| h.len() % 2 == 0)
                    .and_then(|h| {
                        (0..h.len())
                            .step_by(2)
                            .map(|i| u8::from_str_radix(&h[i..i + 2], 16).ok())
                            .collect::<Option<Vec<u8>>>()
                    })
                    .ok_or_else(|| format!("not \\x and hex digits for column '{}'", self.name))?;
                escape_into(&bytes, out);
            }
        }
        Ok(())
    }

    /// The usual cases in line: a short integer in range, a decimal or a string shorter
    /// in bytes than the column's limit.
    #[inline]
    fn check(&self, text: &str) -> Result<(), String> {
        match &self.kind {
            Kind::Integer { min, max } | Kind::Flag { min, max } => match short_integer(text) {
                Some(v) if v >= *min && v <= *max => Ok(()),
                _ => self.check_slow(text),
            },
            // No more bytes than digits allowed before the point: nothing to count.
            Kind::Decimal { integer_digits } if text.len() as u64 <= *integer_digits => Ok(()),
            // A character is at least a byte: no more bytes than characters allowed fits.
            Kind::Chars(n) if text.len() as u64 <= *n => Ok(()),
            Kind::Server | Kind::Boolean | Kind::Hex => Ok(()),
            _ => self.check_slow(text),
        }
    }

    fn check_slow(&self, text: &str) -> Result<(), String> {
        let out_of_range = || Err(format!("Out of range value for column '{}'", self.name));
        let too_long = || Err(format!("Data too long for column '{}'", self.name));
        match &self.kind {
            Kind::Integer { min, max } | Kind::Flag { min, max } => match plain_integer(text) {
                Some(v) if v < *min || v > *max => out_of_range(),
                // A 40-digit integer does not fit i128 either: out of every range.
                None if is_plain_integer_form(text) => out_of_range(),
                _ => Ok(()),
            },
            Kind::Decimal { integer_digits } => match decimal_integer_digits(text) {
                Some(digits) if digits > *integer_digits => out_of_range(),
                _ => Ok(()),
            },
            // What is cut beyond the length may be white space of any kind (utf8mb4's scan of
            // spaces is C's isspace): the server drops it with a note, or silently for CHAR.
            Kind::Chars(n) => {
                match text.trim_end_matches(WHITE_SPACE).chars().count() as u64 > *n {
                    true => too_long(),
                    false => Ok(()),
                }
            }
            Kind::Bytes(n) => match text.len() as u64 > *n {
                true => too_long(),
                false => Ok(()),
            },
            Kind::Enum(members) => {
                let value = text.trim_end_matches(' ');
                let folded = value.to_lowercase();
                let member = members.iter().any(|m| m.to_lowercase() == folded);
                match member || value.bytes().all(|b| b.is_ascii_digit()) {
                    true => Ok(()),
                    false => Err(format!(
                        "Data truncated for column '{}' (not a member of its enum)",
                        self.name
                    )),
                }
            }
            Kind::Json => serde_json::from_str::<serde_json::Value>(text)
                .map(|_| ())
                .map_err(|e| format!("Invalid JSON text in column '{}': {e}", self.name)),
            Kind::Server | Kind::Boolean | Kind::Hex => Ok(()),
        }
    }
}

/// What MariaDB's utf8mb4 counts as a space where a value is cut to a column's length.
const WHITE_SPACE: [char; 6] = [' ', '\t', '\n', '\x0b', '\x0c', '\r'];

/// `enum('a','b''c')` -> [a, b'c].
fn enum_members(column_type: &str) -> Vec<String> {
    let inner = column_type
        .find('(')
        .and_then(|start| {
            column_type
                .rfind(')')
                .map(|end| &column_type[start + 1..end])
        })
        .unwrap_or("");
    let mut members = Vec::new();
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\'' {
            continue;
        }
        let mut member = String::new();
        while let Some(c) = chars.next() {
            match c {
                '\'' if chars.peek() == Some(&'\'') => {
                    member.push('\'');
                    chars.next();
                }
                '\'' => break,
                '\\' => member.extend(chars.next()),
                c => member.push(c),
            }
        }
        members.push(member);
    }
    members
}

fn is_plain_integer_form(text: &str) -> bool {
    let t = text.trim_matches(' ');
    let digits = t.strip_prefix(['+', '-']).unwrap_or(t);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// `[-]digits`, at most 18 digits (so it fits i64 unchecked), as a number.
fn short_integer(text: &str) -> Option<i128> {
    let (negative, digits) = match text.as_bytes() {
        [b'-', rest @ ..] => (true, rest),
        all => (false, all),
    };
    if digits.is_empty() || digits.len() > 18 {
        return None;
    }
    let mut v: i64 = 0;
    for &b in digits {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v * 10 + i64::from(d);
    }
    Some(i128::from(if negative { -v } else { v }))
}

/// `[spaces][+-]digits[spaces]` as a number, if it fits i128.
fn plain_integer(text: &str) -> Option<i128> {
    // Most values are plain digits: read them without trimming or i128 parsing.
    if let Some(v) = short_integer(text) {
        return Some(v);
    }
    is_plain_integer_form(text)
        .then(|| text.trim_matches(' ').parse().ok())
        .flatten()
}

/// Digits before the point of a plain decimal (`-0012.50` has 2), if the text is one.
fn decimal_integer_digits(text: &str) -> Option<u64> {
    let t = text.trim_matches(' ');
    let t = t.strip_prefix(['+', '-']).unwrap_or(t);
    let (int, frac) = t.split_once('.').unwrap_or((t, ""));
    let plain = !(int.is_empty() && frac.is_empty())
        && int.bytes().all(|b| b.is_ascii_digit())
        && frac.bytes().all(|b| b.is_ascii_digit());
    plain.then(|| int.trim_start_matches('0').len() as u64)
}

/// A field's bytes as `LOAD DATA` reads them back.
pub fn escape_into(bytes: &[u8], out: &mut Vec<u8>) {
    // Most fields have nothing to escape: one pass to see, one copy. The pass has no early
    // exit, so it runs 32 bytes at a time; it also flags the control bytes below 14 that
    // need no escape, which the loop below then copies as they are.
    let maybe = bytes
        .iter()
        .fold(false, |any, &b| any | (b < 14) | (b == b'\\'));
    if !maybe {
        out.extend_from_slice(bytes);
        return;
    }
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let escaped: &[u8] = match b {
            b'\\' => b"\\\\",
            b'\t' => b"\\t",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            0 => b"\\0",
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i]);
        out.extend_from_slice(escaped);
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
}

/// The lines of a chunk of `LOAD DATA` text, without their `\n`.
pub fn lines(data: &[u8]) -> Vec<&[u8]> {
    split_at(data.strip_suffix(b"\n").unwrap_or(data), b'\n').collect()
}

/// The fields of one `LOAD DATA` line (without its `\n`), unescaped; `None` for `\N`.
pub fn unescape_line(line: &[u8]) -> impl Iterator<Item = Option<Vec<u8>>> + '_ {
    split_at(line, b'\t').map(unescape_field)
}

/// `data` cut at every `byte` (as `split`, but by `memchr` rather than a byte at a time).
fn split_at(data: &[u8], byte: u8) -> impl Iterator<Item = &[u8]> {
    let mut from = 0;
    memchr::memchr_iter(byte, data)
        .chain(std::iter::once(data.len()))
        .map(move |end| {
            let piece = &data[from..end];
            from = end + 1;
            piece
        })
}

fn unescape_field(field: &[u8]) -> Option<Vec<u8>> {
    if field == b"\\N" {
        return None;
    }
    // Most fields hold no escape: one copy, not a byte at a time.
    let Some(mut at) = memchr::memchr(b'\\', field) else {
        return Some(field.to_vec());
    };
    let mut value = Vec::with_capacity(field.len());
    let mut from = 0;
    loop {
        value.extend_from_slice(&field[from..at]);
        let Some(&next) = field.get(at + 1) else {
            value.push(b'\\');
            break;
        };
        value.push(match next {
            b't' => b'\t',
            b'n' => b'\n',
            b'r' => b'\r',
            b'0' => 0,
            other => other,
        });
        from = at + 2;
        match memchr::memchr(b'\\', &field[from..]) {
            Some(off) => at = from + off,
            None => {
                value.extend_from_slice(&field[from..]);
                break;
            }
        }
    }
    Some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn column(data_type: &str, column_type: &str, max_length: Option<u64>) -> ColumnCheck {
        ColumnCheck::of(&Column {
            name: "c".into(),
            data_type: data_type.into(),
            column_type: column_type.into(),
            not_null: true,
            max_length,
            precision: Some(5),
            scale: Some(2),
            auto_increment: false,
        })
    }

    fn written(check: &ColumnCheck, text: Option<&str>) -> Result<String, String> {
        let mut out = Vec::new();
        check
            .write(text, false, &mut out)
            .map(|()| String::from_utf8(out).unwrap())
    }

    #[test]
    fn integers_by_range_and_sign() {
        let tiny = column("tinyint", "tinyint(3) unsigned", None);
        assert_eq!(written(&tiny, Some("255")), Ok("255".into()));
        assert!(written(&tiny, Some("256"))
            .unwrap_err()
            .contains("Out of range"));
        assert!(written(&tiny, Some("-1")).is_err());
        let big = column("bigint", "bigint(20)", None);
        assert!(written(&big, Some("9223372036854775807")).is_ok());
        assert!(written(&big, Some("9223372036854775808")).is_err());
        assert!(written(&big, Some("99999999999999999999999999999999999999999")).is_err());
        assert!(written(&big, Some("-9223372036854775808")).is_ok());
        assert!(written(&big, Some("-9223372036854775809")).is_err());
        let int = column("int", "int(11)", None);
        assert!(written(&int, Some("-2147483648")).is_ok());
        assert!(written(&int, Some("-2147483649")).is_err());
        assert!(written(&int, Some("999999999999999999")).is_err());
        assert!(written(&int, Some(" 12 ")).is_ok());
        assert!(written(&int, Some("+3000000000")).is_err());
        // Other spellings are the server's to judge.
        assert!(written(&big, Some("1e3")).is_ok());
        assert!(written(&int, Some("-")).is_ok());
    }

    #[test]
    fn decimals_strings_enums_json_and_null() {
        let dec = column("decimal", "decimal(5,2)", None);
        assert!(written(&dec, Some("-123.456")).is_ok());
        assert!(written(&dec, Some("1234.5")).is_err());
        assert!(written(&dec, Some("000123.4")).is_ok());
        assert!(written(&dec, Some("999")).is_ok());
        assert!(written(&dec, Some("1000")).is_err());
        let s = column("varchar", "varchar(3)", Some(3));
        assert!(written(&s, Some("été")).is_ok());
        assert!(written(&s, Some("abc   ")).is_ok());
        assert!(written(&s, Some("abc\t\n\x0b\x0c\r")).is_ok());
        assert!(written(&s, Some("abc\u{a0}")).is_err());
        assert!(written(&s, Some("abc\0")).is_err());
        assert!(written(&s, Some("abcd"))
            .unwrap_err()
            .contains("Data too long"));
        assert!(written(&s, Some("étéa")).is_err());
        let e = column("enum", "enum('a','b''c')", None);
        assert!(written(&e, Some("B'C")).is_ok());
        assert!(written(&e, Some("2")).is_ok());
        assert!(written(&e, Some("d")).is_err());
        let j = column("json", "json", None);
        assert!(written(&j, Some("{\"a\": [1]}")).is_ok());
        assert!(written(&j, Some("{a}"))
            .unwrap_err()
            .contains("Invalid JSON"));
        assert_eq!(written(&j, None), Err("Column 'c' cannot be null".into()));
    }

    #[test]
    fn lines_and_fields_are_cut_as_split_cuts_them() {
        for data in [
            &b""[..],
            b"\n",
            b"a",
            b"a\n",
            b"a\n\nb",
            b"\n\n",
            b"a\tb\n\tc\t\n",
        ] {
            let expected: Vec<&[u8]> = data
                .strip_suffix(b"\n")
                .unwrap_or(data)
                .split(|&b| b == b'\n')
                .collect();
            assert_eq!(lines(data), expected, "{data:?}");
            let fields: Vec<&[u8]> = split_at(data, b'\t').collect();
            assert_eq!(fields, data.split(|&b| b == b'\t').collect::<Vec<_>>());
        }
    }

    #[test]
    fn escaping_round_trips() {
        let mut out = Vec::new();
        escape_into(b"a\tb\nc\\d\re\0f", &mut out);
        assert_eq!(out, b"a\\tb\\nc\\\\d\\re\\0f");
        let line = [out.as_slice(), b"\t\\N\tx"].concat();
        assert_eq!(
            unescape_line(&line).collect::<Vec<_>>(),
            [
                Some(b"a\tb\nc\\d\re\0f".to_vec()),
                None,
                Some(b"x".to_vec())
            ]
        );
        // Control bytes that need no escape stay as they are, beside ones that do.
        for text in [&b"\x01\x0b\x0c\x0d"[..], b"\x08a\x0eb", b"\x1f\\"] {
            let mut out = Vec::new();
            escape_into(text, &mut out);
            let expected: Vec<u8> = text
                .iter()
                .flat_map(|&b| match b {
                    b'\r' => b"\\r".to_vec(),
                    b'\\' => b"\\\\".to_vec(),
                    b => vec![b],
                })
                .collect();
            assert_eq!(out, expected);
        }
        // Escapes first, last and side by side; a lone backslash at the end stays one.
        assert_eq!(
            unescape_line(b"\\\\\\tx\\0\tplain\t\\N\\n\tend\\").collect::<Vec<_>>(),
            [
                Some(b"\\\tx\0".to_vec()),
                Some(b"plain".to_vec()),
                Some(b"N\n".to_vec()),
                Some(b"end\\".to_vec())
            ]
        );
    }
}
