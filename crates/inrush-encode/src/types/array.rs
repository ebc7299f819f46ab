//! One-dimensional arrays: PostgreSQL's `array_in` text form, in the binary form of
//! `array_send` (ndim, has-null flag, element OID, per dimension length and lower bound 1, then
//! each element as an int32 length, -1 for NULL, and its binary form).
//!
//! Accepted natively: `{}` and `{e1,e2,...}` with whitespace around the braces and elements;
//! double-quoted elements (backslash escapes the next character); unquoted elements (trimmed,
//! backslash escapes the next character, an unescaped `NULL` in any case is SQL NULL). Each
//! element goes through the element type's encoder with the column's typmod, and the first
//! element that is refused or deferred decides the answer (the whole structure is checked first,
//! as PostgreSQL 13-16 do before reading any element). Deferred: nested arrays, `[1:3]=`
//! dimension decorations, empty or oddly quoted elements and any other malformed literal.
use super::is_pg_space;
use crate::EncodeContext;
use crate::ScalarType;
use crate::{EncodeError, Result};
use std::borrow::Cow;

/// Appends `text` as one element of an array literal (the writer's side of [`split`]),
/// double-quoted, with `"` and `\\` escaped, when `array_in` would otherwise misread it.
pub fn push_element(text: &str, out: &mut String) {
    let quote = text.is_empty()
        || text.eq_ignore_ascii_case("NULL")
        || text.bytes().any(|b| {
            matches!(
                b,
                b'"' | b'\\' | b'{' | b'}' | b',' | b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c
            )
        });
    if !quote {
        out.push_str(text);
        return;
    }
    out.push('"');
    for c in text.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
}

/// The elements of a one-dimensional array literal (`None` is SQL NULL), or `None` when the
/// literal is not one this module reads.
fn split(text: &str) -> Option<Vec<Option<Cow<'_, str>>>> {
    let s = text.as_bytes();
    let n = s.len();
    let mut i = 0;
    let skip_ws = |i: &mut usize| {
        while *i < n && is_pg_space(s[*i]) {
            *i += 1;
        }
    };
    skip_ws(&mut i);
    if s.get(i) != Some(&b'{') {
        return None;
    }
    i += 1;
    let mut elems = Vec::new();
    skip_ws(&mut i);
    if s.get(i) == Some(&b'}') {
        i += 1;
    } else {
        loop {
            skip_ws(&mut i);
            let c = *s.get(i)?;
            if c == b'"' {
                i += 1;
                let start = i;
                let mut owned: Option<String> = None;
                loop {
                    let c = *s.get(i)?;
                    match c {
                        b'"' => break,
                        b'\\' => {
                            let buf = owned.get_or_insert_with(|| text[start..i].to_owned());
                            let ch = text.get(i + 1..)?.chars().next()?;
                            buf.push(ch);
                            i += 1 + ch.len_utf8();
                        }
                        _ => {
                            let ch = text.get(i..)?.chars().next()?;
                            if let Some(buf) = owned.as_mut() {
                                buf.push(ch);
                            }
                            i += ch.len_utf8();
                        }
                    }
                }
                let value = match owned {
                    Some(buf) => Cow::Owned(buf),
                    None => Cow::Borrowed(&text[start..i]),
                };
                i += 1; // the closing quote
                skip_ws(&mut i);
                elems.push(Some(value));
            } else {
                // Unquoted: up to an unescaped ',' or '}', trailing unescaped whitespace dropped.
                let start = i;
                let mut owned: Option<String> = None;
                // Byte length of the kept text (in `owned` if any, else from `start`).
                let mut keep_len = 0usize;
                let mut escaped = false;
                loop {
                    let c = *s.get(i)?;
                    match c {
                        b',' | b'}' => break,
                        b'"' | b'{' | b'[' | b']' => return None,
                        b'\\' => {
                            escaped = true;
                            let buf = owned.get_or_insert_with(|| text[start..i].to_owned());
                            let ch = text.get(i + 1..)?.chars().next()?;
                            buf.push(ch);
                            keep_len = buf.len();
                            i += 1 + ch.len_utf8();
                        }
                        _ => {
                            let ch = text.get(i..)?.chars().next()?;
                            i += ch.len_utf8();
                            let len = match owned.as_mut() {
                                Some(buf) => {
                                    buf.push(ch);
                                    buf.len()
                                }
                                None => i - start,
                            };
                            if !(ch.is_ascii() && is_pg_space(ch as u8)) {
                                keep_len = len;
                            }
                        }
                    }
                }
                let value = match owned {
                    Some(mut buf) => {
                        buf.truncate(keep_len);
                        Cow::Owned(buf)
                    }
                    None => Cow::Borrowed(&text[start..start + keep_len]),
                };
                if value.is_empty() {
                    // `{a,,b}` or `{a, }`: malformed.
                    return None;
                }
                if !escaped && value.eq_ignore_ascii_case("NULL") {
                    elems.push(None);
                } else {
                    elems.push(Some(value));
                }
            }
            match s.get(i)? {
                b',' => i += 1,
                b'}' => {
                    i += 1;
                    break;
                }
                _ => return None,
            }
        }
    }
    skip_ws(&mut i);
    (i == n).then_some(elems)
}

pub(crate) fn encode(
    elem: ScalarType,
    elem_oid: u32,
    typmod: i32,
    text: &str,
    ctx: &EncodeContext,
    out: &mut Vec<u8>,
) -> Result<()> {
    let elems = split(text).ok_or(EncodeError::Deferred)?;
    let count = i32::try_from(elems.len()).map_err(|_| EncodeError::Deferred)?;
    if elems.is_empty() {
        out.extend_from_slice(&0i32.to_be_bytes());
        out.extend_from_slice(&0i32.to_be_bytes());
        out.extend_from_slice(&elem_oid.to_be_bytes());
        return Ok(());
    }
    let has_null = elems.iter().any(Option::is_none);
    out.extend_from_slice(&1i32.to_be_bytes());
    out.extend_from_slice(&i32::from(has_null).to_be_bytes());
    out.extend_from_slice(&elem_oid.to_be_bytes());
    out.extend_from_slice(&count.to_be_bytes());
    out.extend_from_slice(&1i32.to_be_bytes());
    for e in &elems {
        match e {
            None => out.extend_from_slice(&(-1i32).to_be_bytes()),
            Some(v) => {
                let at = out.len();
                out.extend_from_slice(&[0; 4]);
                super::encode_scalar(elem, typmod, v, ctx, out)?;
                let len = i32::try_from(out.len() - at - 4).map_err(|_| EncodeError::Deferred)?;
                out[at..at + 4].copy_from_slice(&len.to_be_bytes());
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn array_elements_are_quoted_when_needed() {
        let q = |t: &str| {
            let mut s = String::new();
            push_element(t, &mut s);
            s
        };
        assert_eq!(q("abc"), "abc");
        assert_eq!(q(""), "\"\"");
        assert_eq!(q("null"), "\"null\"");
        assert_eq!(q("a b"), "\"a b\"");
        assert_eq!(q("x\"y"), "\"x\\\"y\"");
        assert_eq!(q("a\\b"), "\"a\\\\b\"");
        assert_eq!(q("{1}"), "\"{1}\"");
        assert_eq!(q("é"), "é");
    }

    #[test]
    fn quoted_elements_read_back_as_they_were() {
        for text in ["", "null", "a b", "x\"y", "a\\b", "{1}", "plain", " lead"] {
            let mut literal = String::from("{");
            push_element(text, &mut literal);
            literal.push('}');
            let elements = split(&literal).expect("a literal split reads");
            assert_eq!(elements, vec![Some(Cow::Borrowed(text))], "{literal}");
        }
    }

    fn enc(elem: ScalarType, typmod: i32, t: &str) -> Result<String> {
        let mut o = Vec::new();
        encode(
            elem,
            elem.oid(),
            typmod,
            t,
            &EncodeContext::default(),
            &mut o,
        )
        .map(|_| o.iter().map(|b| format!("{b:02x}")).collect())
    }
    fn elems(t: &str) -> Option<Vec<Option<String>>> {
        split(t).map(|v| v.into_iter().map(|e| e.map(|c| c.into_owned())).collect())
    }

    #[test]
    fn golden() {
        // array_send on PostgreSQL 18 and 15 (typmod'd cases loaded with COPY into a table).
        assert_eq!(
            enc(ScalarType::Int4, -1, "{}").unwrap(),
            "000000000000000000000017"
        );
        assert_eq!(
            enc(ScalarType::Int4, -1, " { } ").unwrap(),
            "000000000000000000000017"
        );
        assert_eq!(
            enc(ScalarType::Int4, -1, "{1,NULL,3}").unwrap(),
            "00000001000000010000001700000003000000010000000400000001ffffffff0000000400000003"
        );
        assert_eq!(
            enc(ScalarType::Text, -1, r#"{a,"b c",NULL,"NULL",nuLL, x\ y ,\ z\ }"#).unwrap(),
            "0000000100000001000000190000000700000001000000016100000003622063ffffffff000000044e554c4cffffffff0000000378207900000003207a20"
        );
        assert_eq!(
            enc(ScalarType::Varchar, 2 + 4, r#"{"ab  ",a}"#).unwrap(),
            "00000001000000000000041300000002000000010000000261620000000161"
        );
        assert_eq!(
            enc(ScalarType::Bpchar, 3 + 4, "{a}").unwrap(),
            "000000010000000000000412000000010000000100000003612020"
        );
        assert_eq!(
            enc(ScalarType::Numeric, (5 << 16 | 2) + 4, "{1.005,2}").unwrap(),
            "0000000100000000000006a400000002000000010000000c0002000000000002000100640000000a00010000000000020002"
        );
    }

    #[test]
    fn splitting() {
        let s =
            |v: &[Option<&str>]| Some(v.iter().map(|e| e.map(str::to_owned)).collect::<Vec<_>>());
        assert_eq!(elems("{a b}"), s(&[Some("a b")]));
        assert_eq!(elems(" {a,b} "), s(&[Some("a"), Some("b")]));
        assert_eq!(elems(r#"{"a" }"#), s(&[Some("a")]));
        assert_eq!(elems(r#"{""}"#), s(&[Some("")]));
        assert_eq!(elems(r#"{a\"b}"#), s(&[Some("a\"b")]));
        assert_eq!(elems(r#"{"a\}"}"#), s(&[Some("a}")]));
        assert_eq!(elems(r#"{ a b , c }"#), s(&[Some("a b"), Some("c")]));
        assert_eq!(elems(r#"{ a \ , c\\ }"#), s(&[Some("a  "), Some("c\\")]));
        assert_eq!(
            elems(r#"{N\ULL,"null",NULL}"#),
            s(&[Some("NULL"), Some("null"), None])
        );
        assert_eq!(elems(r#"{"é\é",é é}"#), s(&[Some("éé"), Some("é é")]));
        for bad in [
            "",
            "x",
            "{a,b",
            "{a,,b}",
            "{a,}",
            "{,a}",
            r#"{"a" b}"#,
            r#"{a"b"}"#,
            "{a{b}",
            "{a,b} x",
            "[1:2]={a,b}",
            "{{1},{2}}",
            r#"{"a"#,
            r#"{a\"#,
            "{ , }",
        ] {
            assert_eq!(elems(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn element_errors() {
        assert_eq!(
            enc(ScalarType::Int4, -1, r#"{abc,"x"}"#),
            Err(EncodeError::Refused(
                "invalid input syntax for type integer: \"abc\"".into()
            ))
        );
        assert_eq!(
            enc(ScalarType::Int4, -1, r#"{"",NULL}"#),
            Err(EncodeError::Refused(
                "invalid input syntax for type integer: \"\"".into()
            ))
        );
        assert_eq!(
            enc(ScalarType::Varchar, 2 + 4, "{abc}"),
            Err(EncodeError::Refused(
                "value too long for type character varying(2)".into()
            ))
        );
        assert_eq!(
            enc(ScalarType::Int4, -1, "{1_0,abc}"),
            Err(EncodeError::Deferred)
        );
        assert_eq!(
            enc(ScalarType::Int4, -1, "{abc,{1}}"),
            Err(EncodeError::Deferred)
        );
    }

    #[test]
    fn no_panic() {
        let mut o = Vec::new();
        let ctx = EncodeContext::default();
        for b in 0..=255u8 {
            for s in [
                vec![b'{', b, b'}'],
                vec![b'{', b'"', b'\\', b, b'"', b'}'],
                vec![b'{', b'\\', b],
                vec![b'{', b'a', b'\\', b, b' ', b'}'],
                vec![b'{', b'"', b],
                vec![b, b'{', b'}', b],
            ] {
                let t = String::from_utf8_lossy(&s).into_owned();
                for elem in [
                    ScalarType::Int4,
                    ScalarType::Text,
                    ScalarType::Bpchar,
                    ScalarType::Jsonb,
                    ScalarType::Numeric,
                ] {
                    let _ = encode(elem, elem.oid(), 5, &t, &ctx, &mut o);
                }
            }
        }
        let _ = encode(ScalarType::Text, 25, -1, &"{".repeat(100_000), &ctx, &mut o);
        let _ = encode(
            ScalarType::Text,
            25,
            -1,
            &format!("{{{}}}", "a,".repeat(100_000)),
            &ctx,
            &mut o,
        );
    }
}
