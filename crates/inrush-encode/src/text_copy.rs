//! Escaping for COPY's text format, the fallback for tables with a column type that has no
//! binary encoder here: the client still splits and parses the CSV, the server parses values.

/// Appends `value` escaped for text COPY (tab-delimited, `\N` for NULL).
pub fn push_field(out: &mut Vec<u8>, value: Option<&[u8]>) {
    let Some(value) = value else {
        out.extend_from_slice(b"\\N");
        return;
    };
    let mut start = 0;
    for (i, &b) in value.iter().enumerate() {
        let escaped: &[u8] = match b {
            b'\\' => b"\\\\",
            b'\t' => b"\\t",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            _ => continue,
        };
        out.extend_from_slice(&value[start..i]);
        out.extend_from_slice(escaped);
        start = i + 1;
    }
    out.extend_from_slice(&value[start..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_what_text_copy_would_misread() {
        let mut out = Vec::new();
        push_field(&mut out, Some(b"a\tb\\c\nd\re"));
        out.push(b'\t');
        push_field(&mut out, None);
        push_field(&mut out, Some(b"\\N"));
        assert_eq!(out, b"a\\tb\\\\c\\nd\\re\t\\N\\\\N");
    }
}
