//! `bool`: PostgreSQL's `boolin` (`parse_bool_with_len`), which is the same on every supported
//! version. Everything is decided on the client: any non-empty prefix of `true`/`false`/`yes`/
//! `no`, `on`, `of`/`off`, `1`, `0`, case-insensitively after trimming whitespace, is accepted;
//! anything else is refused with the server's wording. (Text with a NUL byte is deferred: it
//! never reaches `boolin` as written.)
use super::trim_pg_space;
use crate::{EncodeError, Result};

/// `pg_strncasecmp(value, word, len)` for a `value` of exactly `len` bytes: a case-insensitive
/// prefix match that fails when `value` is longer than `word`.
fn is_prefix_of(value: &[u8], word: &[u8]) -> bool {
    value.len() <= word.len() && value.eq_ignore_ascii_case(&word[..value.len()])
}

fn parse(v: &[u8]) -> Option<bool> {
    match v.first()? {
        b't' | b'T' => is_prefix_of(v, b"true").then_some(true),
        b'f' | b'F' => is_prefix_of(v, b"false").then_some(false),
        b'y' | b'Y' => is_prefix_of(v, b"yes").then_some(true),
        b'n' | b'N' => is_prefix_of(v, b"no").then_some(false),
        b'o' | b'O' => {
            // 'o' alone is not unique: at least two characters.
            if v.len() < 2 {
                None
            } else if is_prefix_of(v, b"on") {
                Some(true)
            } else if is_prefix_of(v, b"off") {
                Some(false)
            } else {
                None
            }
        }
        b'1' => (v.len() == 1).then_some(true),
        b'0' => (v.len() == 1).then_some(false),
        _ => None,
    }
}

/// The boolean `text` spells as PostgreSQL's `boolin` reads it; `None` for anything else.
pub fn boolin(text: &str) -> Option<bool> {
    parse(trim_pg_space(text).as_bytes())
}

pub(crate) fn encode(text: &str, out: &mut Vec<u8>) -> Result<()> {
    match parse(trim_pg_space(text).as_bytes()) {
        Some(b) => {
            out.push(u8::from(b));
            Ok(())
        }
        None if text.as_bytes().contains(&0) => Err(EncodeError::Deferred),
        None => Err(EncodeError::Refused(format!(
            "invalid input syntax for type boolean: \"{text}\""
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(t: &str) -> Result<u8> {
        let mut o = Vec::new();
        encode(t, &mut o)?;
        assert_eq!(o.len(), 1);
        Ok(o[0])
    }

    #[test]
    fn accepted() {
        // Checked with boolsend on PostgreSQL 18 and 15.
        for t in [
            "t",
            "tr",
            "tru",
            "true",
            "TRUE",
            " True\n",
            "y",
            "ye",
            "yes",
            "YES",
            "on",
            "ON",
            "1",
            " 1 ",
            "\x0btRuE\x0c",
        ] {
            assert_eq!(enc(t), Ok(1), "{t:?}");
        }
        for t in [
            "f", "fa", "fal", "fals", "false", "FaLsE", "n", "no", "NO", "of", "off", "OFF", "0",
            "\t0\r",
        ] {
            assert_eq!(enc(t), Ok(0), "{t:?}");
        }
    }

    #[test]
    fn refused() {
        for t in [
            "", " ", "o", "O", "trueish", "truex", "yess", "noo", "onn", "offf", "ofx", "01", "10",
            "2", "t r", " x ", "ja", "ｔ",
        ] {
            assert_eq!(
                enc(t),
                Err(EncodeError::Refused(format!(
                    "invalid input syntax for type boolean: \"{t}\""
                ))),
                "{t:?}"
            );
        }
        assert_eq!(enc("t\0"), Err(EncodeError::Deferred));
    }

    #[test]
    fn no_panic() {
        let mut o = Vec::new();
        for b in 0..=255u8 {
            let _ = encode(&String::from_utf8_lossy(&[b]), &mut o);
            let _ = encode(&String::from_utf8_lossy(&[b'o', b]), &mut o);
        }
        let _ = encode(&"t".repeat(100_000), &mut o);
    }
}
