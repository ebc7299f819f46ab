//! `text`, `varchar(n)`, `char(n)`: the bytes as given (PostgreSQL trims nothing), with
//! `varchar_input`/`bpchar_input`'s length rule: a value longer than `n` characters is cut to
//! `n` when every excess character is a space, and refused otherwise; `char(n)` pads with spaces
//! to `n` characters. Text holding a NUL byte is deferred (it cannot be a PostgreSQL string).
use crate::{EncodeError, Result};

const VARHDRSZ: i32 = 4;
/// `MaxAttrSize`: no real `varchar(n)`/`char(n)` typmod is larger.
const MAX_LEN: usize = 10 * 1024 * 1024;

/// The byte length of `s` cut to at most `max_chars` characters, and whether it was cut.
/// `None` when characters beyond the cut are not all spaces.
fn clip(s: &str, max_chars: usize) -> Option<usize> {
    if s.len() <= max_chars {
        return Some(s.len());
    }
    let cut = match s.char_indices().nth(max_chars) {
        Some((i, _)) => i,
        None => return Some(s.len()),
    };
    if s.as_bytes()[cut..].iter().all(|&b| b == b' ') {
        Some(cut)
    } else {
        None
    }
}

fn no_nul(text: &str) -> Result<()> {
    if memchr::memchr(0, text.as_bytes()).is_some() {
        Err(EncodeError::Deferred)
    } else {
        Ok(())
    }
}

pub(crate) fn encode_text(text: &str, out: &mut Vec<u8>) -> Result<()> {
    no_nul(text)?;
    self::text(text, out)
}

/// `text` of a value known to hold no NUL byte.
pub(crate) fn text(text: &str, out: &mut Vec<u8>) -> Result<()> {
    out.extend_from_slice(text.as_bytes());
    Ok(())
}

pub(crate) fn encode_varchar(text: &str, typmod: i32, out: &mut Vec<u8>) -> Result<()> {
    no_nul(text)?;
    varchar(text, typmod, out)
}

/// `varchar(n)` of a value known to hold no NUL byte.
pub(crate) fn varchar(text: &str, typmod: i32, out: &mut Vec<u8>) -> Result<()> {
    if typmod < VARHDRSZ {
        out.extend_from_slice(text.as_bytes());
        return Ok(());
    }
    let max = (typmod - VARHDRSZ) as usize;
    match clip(text, max) {
        Some(len) => {
            out.extend_from_slice(&text.as_bytes()[..len]);
            Ok(())
        }
        None => Err(EncodeError::Refused(format!(
            "value too long for type character varying({max})"
        ))),
    }
}

pub(crate) fn encode_bpchar(text: &str, typmod: i32, out: &mut Vec<u8>) -> Result<()> {
    no_nul(text)?;
    bpchar(text, typmod, out)
}

/// `char(n)` of a value known to hold no NUL byte.
pub(crate) fn bpchar(text: &str, typmod: i32, out: &mut Vec<u8>) -> Result<()> {
    if typmod < VARHDRSZ {
        out.extend_from_slice(text.as_bytes());
        return Ok(());
    }
    let max = (typmod - VARHDRSZ) as usize;
    if max > MAX_LEN {
        return Err(EncodeError::Deferred);
    }
    match clip(text, max) {
        Some(len) => {
            let kept = &text[..len];
            out.extend_from_slice(kept.as_bytes());
            // Pad to `max` characters (no-op when already cut to exactly `max`).
            let chars = if kept.is_ascii() {
                kept.len()
            } else {
                kept.chars().count()
            };
            if chars < max {
                out.resize(out.len() + (max - chars), b' ');
            }
            Ok(())
        }
        None => Err(EncodeError::Refused(format!(
            "value too long for type character({max})"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vc(t: &str, n: i32) -> Result<Vec<u8>> {
        let mut o = Vec::new();
        encode_varchar(t, n, &mut o).map(|_| o)
    }
    fn bp(t: &str, n: i32) -> Result<Vec<u8>> {
        let mut o = Vec::new();
        encode_bpchar(t, n, &mut o).map(|_| o)
    }

    #[test]
    fn text_as_is() {
        let mut o = Vec::new();
        encode_text("  héllo\t\\ ", &mut o).unwrap();
        assert_eq!(o, "  héllo\t\\ ".as_bytes());
        assert_eq!(encode_text("a\0b", &mut o), Err(EncodeError::Deferred));
    }

    #[test]
    fn varchar() {
        // Checked against PostgreSQL 18 and 15: varcharsend('...'::varchar(n)).
        assert_eq!(vc("abc", -1).unwrap(), b"abc");
        assert_eq!(vc("abc", 5 + 4).unwrap(), b"abc");
        assert_eq!(vc(" abc ", 5 + 4).unwrap(), b" abc ");
        assert_eq!(vc("abcde   ", 5 + 4).unwrap(), b"abcde");
        assert_eq!(vc("héllo  ", 5 + 4).unwrap(), "héllo".as_bytes());
        assert_eq!(vc("ééééé", 5 + 4).unwrap(), "ééééé".as_bytes());
        assert_eq!(
            vc("abcdef", 5 + 4),
            Err(EncodeError::Refused(
                "value too long for type character varying(5)".into()
            ))
        );
        assert_eq!(
            vc("abcde \t", 5 + 4),
            Err(EncodeError::Refused(
                "value too long for type character varying(5)".into()
            ))
        );
        assert_eq!(
            vc("éééééé", 5 + 4),
            Err(EncodeError::Refused(
                "value too long for type character varying(5)".into()
            ))
        );
    }

    #[test]
    fn bpchar() {
        assert_eq!(bp("ab", 5 + 4).unwrap(), b"ab   ");
        assert_eq!(bp("é", 3 + 4).unwrap(), "é  ".as_bytes());
        assert_eq!(bp("abcde   ", 5 + 4).unwrap(), b"abcde");
        assert_eq!(bp("", 2 + 4).unwrap(), b"  ");
        assert_eq!(bp("ab ", -1).unwrap(), b"ab ");
        assert_eq!(
            bp("abcdef", 5 + 4),
            Err(EncodeError::Refused(
                "value too long for type character(5)".into()
            ))
        );
        assert_eq!(
            bp("xy", 1 + 4),
            Err(EncodeError::Refused(
                "value too long for type character(1)".into()
            ))
        );
    }

    #[test]
    fn no_panic() {
        let mut o = Vec::new();
        for b in 0..=255u8 {
            let s = String::from_utf8_lossy(&[b, b' ', b]).into_owned();
            for tm in [-1, 0, 4, 5, 6, i32::MAX] {
                let _ = encode_varchar(&s, tm, &mut o);
                let _ = encode_bpchar(&s, tm, &mut o);
            }
        }
    }
}
