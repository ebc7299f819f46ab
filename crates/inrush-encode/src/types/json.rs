//! `json`, `jsonb`: a strict, iterative validator mirroring PostgreSQL's JSON lexer and parser
//! (`src/common/jsonapi.c`). The binary form of `json` is the text itself; that of `jsonb` is
//! the version byte 1 followed by the text (the server's `jsonb_recv` parses it).
//!
//! Accepted natively: RFC 8259 JSON as PostgreSQL reads it (whitespace is only space, tab,
//! newline, carriage return; no raw control characters inside strings), nested at most 1000
//! deep. Deferred: everything invalid (the server words the error), `\u` escapes of UTF-16
//! surrogates for `json` and any `\u` escape for `jsonb` (`\u0000` is refused there), and for
//! `jsonb` numbers with more than 1000 digits or an exponent beyond +-1000 and values over 64 MiB.
use crate::{EncodeError, Result};

const MAX_DEPTH: usize = 1000;
const JSONB_MAX_LEN: usize = 64 << 20;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Json,
    Jsonb,
}

/// `JSON_ALPHANUMERIC_CHAR`: letters, digits, `_`, and any non-ASCII byte.
fn is_alnum(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80
}

/// A string token starting at `s[i] == '"'`; returns the index after the closing quote.
fn lex_string(s: &[u8], mut i: usize, mode: Mode) -> Option<usize> {
    i += 1;
    loop {
        let c = *s.get(i)?;
        match c {
            b'"' => return Some(i + 1),
            b'\\' => match *s.get(i + 1)? {
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => i += 2,
                b'u' => {
                    if mode == Mode::Jsonb {
                        return None;
                    }
                    let mut ch = 0u32;
                    for k in 0..4 {
                        ch = ch * 16 + u32::from(super::hex_digit(*s.get(i + 2 + k)?)?);
                    }
                    if (0xd800..=0xdfff).contains(&ch) {
                        return None;
                    }
                    i += 6;
                }
                _ => return None,
            },
            0..=0x1f => return None,
            _ => i += 1,
        }
    }
}

/// A number token starting at `s[i]` (`-` or a digit); returns the index after it.
fn lex_number(s: &[u8], mut i: usize, mode: Mode) -> Option<usize> {
    let start = i;
    if s.get(i) == Some(&b'-') {
        i += 1;
    }
    match s.get(i) {
        Some(b'0') => i += 1,
        Some(b'1'..=b'9') => {
            while s.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
        }
        _ => return None,
    }
    if s.get(i) == Some(&b'.') {
        i += 1;
        if !s.get(i).is_some_and(u8::is_ascii_digit) {
            return None;
        }
        while s.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
    }
    let mantissa_len = i - start;
    let mut exp: u32 = 0;
    if matches!(s.get(i), Some(b'e') | Some(b'E')) {
        i += 1;
        if matches!(s.get(i), Some(b'+') | Some(b'-')) {
            i += 1;
        }
        if !s.get(i).is_some_and(u8::is_ascii_digit) {
            return None;
        }
        while let Some(&d) = s.get(i).filter(|d| d.is_ascii_digit()) {
            exp = (exp * 10 + u32::from(d - b'0')).min(1_000_000);
            i += 1;
        }
    }
    // Trailing alphanumerics belong to the (invalid) token.
    if s.get(i).is_some_and(|&c| is_alnum(c)) {
        return None;
    }
    if mode == Mode::Jsonb && (mantissa_len > 1000 || exp > 1000) {
        return None;
    }
    Some(i)
}

#[derive(Clone, Copy)]
enum State {
    /// A value is required.
    Value,
    /// Just after `[`: a value or `]`.
    ArrayFirst,
    /// Just after `{`: a key or `}`.
    ObjectFirst,
    /// After `,` in an object: a key.
    ObjectKey,
    /// A value just ended.
    After,
}

/// True when PostgreSQL's JSON parser certainly accepts `s` (under `mode`'s extra limits).
fn valid(s: &[u8], mode: Mode) -> bool {
    // One bit per open container: set for an object, clear for an array.
    let mut stack = [0u64; MAX_DEPTH / 64 + 1];
    let mut depth = 0usize;
    let mut state = State::Value;
    let mut i = 0usize;
    let n = s.len();
    let is_object =
        |stack: &[u64], depth: usize| stack[(depth - 1) / 64] >> ((depth - 1) % 64) & 1 == 1;
    loop {
        while i < n && matches!(s[i], b' ' | b'\t' | b'\n' | b'\r') {
            i += 1;
        }
        let c = if i < n { s[i] } else { 0 };
        let at_end = i >= n;
        match state {
            State::Value | State::ArrayFirst => {
                if at_end {
                    return false;
                }
                if matches!(state, State::ArrayFirst) && c == b']' {
                    depth -= 1;
                    i += 1;
                    state = State::After;
                    continue;
                }
                match c {
                    b'{' | b'[' => {
                        if depth >= MAX_DEPTH {
                            return false;
                        }
                        let (w, b) = (depth / 64, depth % 64);
                        if c == b'{' {
                            stack[w] |= 1 << b;
                            state = State::ObjectFirst;
                        } else {
                            stack[w] &= !(1 << b);
                            state = State::ArrayFirst;
                        }
                        depth += 1;
                        i += 1;
                    }
                    b'"' => match lex_string(s, i, mode) {
                        Some(j) => {
                            i = j;
                            state = State::After;
                        }
                        None => return false,
                    },
                    b'-' | b'0'..=b'9' => match lex_number(s, i, mode) {
                        Some(j) => {
                            i = j;
                            state = State::After;
                        }
                        None => return false,
                    },
                    _ => {
                        let start = i;
                        while i < n && is_alnum(s[i]) {
                            i += 1;
                        }
                        if !matches!(&s[start..i], b"true" | b"false" | b"null") {
                            return false;
                        }
                        state = State::After;
                    }
                }
            }
            State::ObjectFirst | State::ObjectKey => {
                if matches!(state, State::ObjectFirst) && c == b'}' {
                    depth -= 1;
                    i += 1;
                    state = State::After;
                    continue;
                }
                if at_end || c != b'"' {
                    return false;
                }
                match lex_string(s, i, mode) {
                    Some(j) => i = j,
                    None => return false,
                }
                while i < n && matches!(s[i], b' ' | b'\t' | b'\n' | b'\r') {
                    i += 1;
                }
                if i >= n || s[i] != b':' {
                    return false;
                }
                i += 1;
                state = State::Value;
            }
            State::After => {
                if depth == 0 {
                    return at_end;
                }
                if at_end {
                    return false;
                }
                let obj = is_object(&stack, depth);
                match (c, obj) {
                    (b',', true) => state = State::ObjectKey,
                    (b',', false) => state = State::Value,
                    (b'}', true) | (b']', false) => {
                        depth -= 1;
                        state = State::After;
                    }
                    _ => return false,
                }
                i += 1;
            }
        }
    }
}

pub(crate) fn encode_json(text: &str, out: &mut Vec<u8>) -> Result<()> {
    if !valid(text.as_bytes(), Mode::Json) {
        return Err(EncodeError::Deferred);
    }
    out.extend_from_slice(text.as_bytes());
    Ok(())
}

pub(crate) fn encode_jsonb(text: &str, out: &mut Vec<u8>) -> Result<()> {
    if text.len() > JSONB_MAX_LEN || !valid(text.as_bytes(), Mode::Jsonb) {
        return Err(EncodeError::Deferred);
    }
    out.push(1);
    out.extend_from_slice(text.as_bytes());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(t: &str) -> Result<Vec<u8>> {
        let mut o = Vec::new();
        encode_json(t, &mut o).map(|_| o)
    }
    fn jsonb(t: &str) -> Result<Vec<u8>> {
        let mut o = Vec::new();
        encode_jsonb(t, &mut o).map(|_| o)
    }

    // Every string here was checked with `select '...'::json` / `::jsonb` on PostgreSQL 18
    // and 15.
    const VALID: &[&str] = &[
        "1",
        "-0",
        "0.5e-3",
        "-12.5E+10",
        "1e5",
        "\"\"",
        "\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\"",
        "\"\u{7f}é😀\"",
        "true",
        "false",
        "null",
        " {\"a\" : [true , false,null ] } ",
        "\t\n\r[]",
        "{}",
        "[[],{}]",
        "{\"a\":{\"b\":{\"c\":[1,2,{\"d\":null}]}}}",
        "{\"a\":1,\"a\":2}",
        "[1e1000]",
    ];

    const INVALID: &[&str] = &[
        "",
        " ",
        "01",
        "1.",
        ".5",
        "-",
        "+1",
        "1e",
        "1e+",
        "1true",
        "nul",
        "True",
        "NaN",
        "[1,]",
        "[,1]",
        "{\"a\"}",
        "{\"a\":}",
        "{\"a\":1,}",
        "{a:1}",
        "{'a':1}",
        "[1 2]",
        "[1]]",
        "[[1]",
        "{\"a\":1]",
        "[1}",
        "\"\\a\"",
        "\"a\tb\"",
        "\"abc",
        "\"\\u12\"",
        "\"\\u12g4\"",
        "\u{c}1",
        "\u{b}1",
        "1 2",
        "\"a\"\"b\"",
        "\u{a0}1",
        "1\0",
        "[\"\\",
    ];

    #[test]
    fn json_valid_and_invalid() {
        for t in VALID {
            assert_eq!(json(t).as_deref(), Ok(t.as_bytes()), "{t:?}");
            let mut want = vec![1u8];
            want.extend_from_slice(t.as_bytes());
            assert_eq!(jsonb(t), Ok(want), "{t:?}");
        }
        for t in INVALID {
            assert_eq!(json(t), Err(EncodeError::Deferred), "{t:?}");
            assert_eq!(jsonb(t), Err(EncodeError::Deferred), "{t:?}");
        }
    }

    #[test]
    fn unicode_escapes() {
        assert_eq!(
            json("\"\\u00e9\\u0000\\uFFFF\"").unwrap(),
            b"\"\\u00e9\\u0000\\uFFFF\""
        );
        // Surrogates: accepted unpaired by json on 15 and 18, but not decided here.
        assert_eq!(json("\"\\ud800\""), Err(EncodeError::Deferred));
        assert_eq!(json("\"\\ud83d\\ude00\""), Err(EncodeError::Deferred));
        // jsonb refuses \u0000 ("unsupported Unicode escape sequence"): defer every \u.
        assert_eq!(jsonb("\"\\u0000\""), Err(EncodeError::Deferred));
        assert_eq!(jsonb("\"\\u00e9\""), Err(EncodeError::Deferred));
    }

    #[test]
    fn depth() {
        let ok = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        assert!(json(&ok).is_ok());
        assert!(jsonb(&ok).is_ok());
        let deep = format!("{}{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
        assert_eq!(json(&deep), Err(EncodeError::Deferred));
        assert_eq!(jsonb(&deep), Err(EncodeError::Deferred));
        let objs = format!("{}1{}", "{\"a\":".repeat(500), "}".repeat(500));
        assert!(jsonb(&objs).is_ok());
        let mixed = format!("{}1{}", "[{\"a\":".repeat(300), "}]".repeat(300));
        assert!(json(&mixed).is_ok());
        let bad_mixed = format!("{}1{}", "[{\"a\":".repeat(300), "]}".repeat(300));
        assert_eq!(json(&bad_mixed), Err(EncodeError::Deferred));
    }

    #[test]
    fn jsonb_number_limits() {
        assert_eq!(jsonb("1e1001"), Err(EncodeError::Deferred));
        assert_eq!(jsonb(&"9".repeat(1001)), Err(EncodeError::Deferred));
        assert!(json("1e1001").is_ok());
    }

    #[test]
    fn no_panic() {
        let mut o = Vec::new();
        let deep = "[".repeat(1_000_000);
        let _ = encode_json(&deep, &mut o);
        let _ = encode_jsonb(&"{\"a\":".repeat(200_000), &mut o);
        for b in 0..=255u8 {
            for s in [
                vec![b],
                vec![b'[', b],
                vec![b'"', b'\\', b],
                vec![b'{', b'"', b'"', b],
                vec![b'-', b],
                vec![b'1', b'e', b],
            ] {
                let s = String::from_utf8_lossy(&s).into_owned();
                let _ = encode_json(&s, &mut o);
                let _ = encode_jsonb(&s, &mut o);
            }
        }
    }
}
