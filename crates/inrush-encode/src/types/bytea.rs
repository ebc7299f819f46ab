//! `bytea`: PostgreSQL's `byteain`. The binary form is the raw bytes.
//!
//! Accepted natively: hex format (`\x` then hex pairs in either case, with space, tab, newline
//! or carriage return allowed between pairs) and escape format (`\\` is one backslash, `\ooo`
//! with a first digit 0-3 is that byte, every other byte is itself). Deferred: odd digit counts,
//! bad hex characters, whitespace inside a pair, any other backslash sequence, NUL bytes.
use super::hex_digit;
use crate::{EncodeError, Result};

fn decode_hex(s: &[u8], out: &mut Vec<u8>) -> Result<()> {
    out.reserve(s.len() / 2);
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        if matches!(c, b' ' | b'\n' | b'\t' | b'\r') {
            i += 1;
            continue;
        }
        let hi = hex_digit(c).ok_or(EncodeError::Deferred)?;
        let lo = s
            .get(i + 1)
            .copied()
            .and_then(hex_digit)
            .ok_or(EncodeError::Deferred)?;
        out.push((hi << 4) | lo);
        i += 2;
    }
    Ok(())
}

fn decode_escape(s: &[u8], out: &mut Vec<u8>) -> Result<()> {
    out.reserve(s.len());
    let mut i = 0;
    while i < s.len() {
        // Copy the run up to the next backslash at once.
        let run_end = memchr::memchr(b'\\', &s[i..]).map_or(s.len(), |p| i + p);
        out.extend_from_slice(&s[i..run_end]);
        i = run_end;
        if i >= s.len() {
            break;
        }
        let next = s.get(i + 1).copied();
        if next == Some(b'\\') {
            out.push(b'\\');
            i += 2;
            continue;
        }
        match (next, s.get(i + 2).copied(), s.get(i + 3).copied()) {
            (Some(a @ b'0'..=b'3'), Some(b @ b'0'..=b'7'), Some(c @ b'0'..=b'7')) => {
                out.push(((a - b'0') << 6) | ((b - b'0') << 3) | (c - b'0'));
                i += 4;
            }
            // The server refuses ("invalid input syntax for type bytea"); let it say so.
            _ => return Err(EncodeError::Deferred),
        }
    }
    Ok(())
}

pub(crate) fn encode(text: &str, out: &mut Vec<u8>) -> Result<()> {
    let s = text.as_bytes();
    if memchr::memchr(0, s).is_some() {
        return Err(EncodeError::Deferred);
    }
    if s.len() >= 2 && s[0] == b'\\' && s[1] == b'x' {
        decode_hex(&s[2..], out)
    } else {
        decode_escape(s, out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(t: &str) -> Result<Vec<u8>> {
        let mut o = Vec::new();
        encode(t, &mut o).map(|_| o)
    }

    #[test]
    fn accepted() {
        // bytea_send / the value itself on PostgreSQL 18 and 15.
        assert_eq!(enc(r"\x").unwrap(), b"");
        assert_eq!(enc(r"\xDEADbeef").unwrap(), b"\xde\xad\xbe\xef");
        assert_eq!(enc("\\x de ad\n\tbe\r ef ").unwrap(), b"\xde\xad\xbe\xef");
        assert_eq!(enc("").unwrap(), b"");
        assert_eq!(enc("abc").unwrap(), b"abc");
        assert_eq!(enc(r"a\\b").unwrap(), b"a\\b");
        assert_eq!(enc(r"\000\001\377x\101").unwrap(), b"\x00\x01\xffxA");
        assert_eq!(enc("é").unwrap(), "é".as_bytes());
        assert_eq!(enc(r"\\x41").unwrap(), b"\\x41");
    }

    #[test]
    fn deferred() {
        for t in [
            r"\x1",
            r"\x1 2",
            r"\xg0",
            r"\x0g",
            "\\x\x0b00",
            r"\X41",
            r"\400",
            r"\08",
            r"\0",
            r"a\b",
            "\\",
            r"\x41\0",
            "a\0",
        ] {
            assert_eq!(enc(t), Err(EncodeError::Deferred), "{t}");
        }
    }

    #[test]
    fn no_panic() {
        let mut o = Vec::new();
        for b in 0..=255u8 {
            for s in [
                vec![b'\\', b],
                vec![b'\\', b'x', b],
                vec![b'\\', b'3', b, b],
                vec![b'\\', b'x', b'0', b],
            ] {
                let _ = encode(&String::from_utf8_lossy(&s), &mut o);
            }
        }
    }
}
