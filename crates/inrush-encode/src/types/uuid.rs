//! `uuid`: PostgreSQL's `string_to_uuid`, the same on every supported version. Everything is
//! decided on the client: optional `{...}` around 32 hex digits (either case), with an optional
//! `-` after any group of four digits except the last; no whitespace. Anything else is refused
//! with the server's wording (text holding a NUL byte is deferred).
use super::hex_digit;
use crate::{EncodeError, Result};

fn parse(s: &[u8]) -> Option<[u8; 16]> {
    let mut i = 0;
    let braces = s.first() == Some(&b'{');
    if braces {
        i = 1;
    }
    let mut data = [0u8; 16];
    for (k, byte) in data.iter_mut().enumerate() {
        let hi = hex_digit(*s.get(i)?)?;
        let lo = hex_digit(*s.get(i + 1)?)?;
        *byte = (hi << 4) | lo;
        i += 2;
        if k % 2 == 1 && k < 15 && s.get(i) == Some(&b'-') {
            i += 1;
        }
    }
    if braces {
        if s.get(i) != Some(&b'}') {
            return None;
        }
        i += 1;
    }
    (i == s.len()).then_some(data)
}

pub(crate) fn encode(text: &str, out: &mut Vec<u8>) -> Result<()> {
    match parse(text.as_bytes()) {
        Some(data) => {
            out.extend_from_slice(&data);
            Ok(())
        }
        None if text.as_bytes().contains(&0) => Err(EncodeError::Deferred),
        None => Err(EncodeError::Refused(format!(
            "invalid input syntax for type uuid: \"{text}\""
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(t: &str) -> Result<String> {
        let mut o = Vec::new();
        encode(t, &mut o).map(|_| o.iter().map(|b| format!("{b:02x}")).collect())
    }

    #[test]
    fn accepted() {
        // uuid_send on PostgreSQL 18 and 15.
        let h = "a0eebc999c0b4ef8bb6d6bb9bd380a11";
        for t in [
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
            "A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11",
            "{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}",
            "a0eebc999c0b4ef8bb6d6bb9bd380a11",
            "a0ee-bc99-9c0b-4ef8-bb6d-6bb9-bd38-0a11",
            "{a0eebc999c0b4ef8bb6d6bb9bd380a11}",
            "a0eebc999c0b-4ef8bb6d6bb9bd380a11",
        ] {
            assert_eq!(enc(t).as_deref(), Ok(h), "{t}");
        }
    }

    #[test]
    fn refused() {
        for t in [
            "",
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1",
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11-",
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a111",
            " a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11 ",
            "{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
            "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}",
            "a0eeb-c99-9c0b-4ef8-bb6d-6bb9bd380a11",
            "a0eebc99--9c0b-4ef8-bb6d-6bb9bd380a11",
            "-a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
            "g0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
            "{{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}}",
        ] {
            assert_eq!(
                enc(t),
                Err(EncodeError::Refused(format!(
                    "invalid input syntax for type uuid: \"{t}\""
                ))),
                "{t}"
            );
        }
        assert_eq!(
            enc("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11\0"),
            Err(EncodeError::Deferred)
        );
    }

    #[test]
    fn no_panic() {
        let mut o = Vec::new();
        for b in 0..=255u8 {
            let mut s = vec![b'{'];
            s.extend(std::iter::repeat_n(b, 40));
            let _ = encode(&String::from_utf8_lossy(&s), &mut o);
            let _ = encode(&String::from_utf8_lossy(&s[..17]), &mut o);
        }
    }
}
