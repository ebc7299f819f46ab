//! Escaping for every string that comes from results (labels, server version, settings, error
//! texts): none of them may become markup in the HTML page or break a Markdown table.

/// Text for HTML element content and attribute values.
pub fn html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// Text for Markdown, inline and in table cells: one line (line breaks become spaces), pipes
/// and the characters that start markup or raw HTML backslash-escaped. An underscore inside a
/// word (`synchronous_commit`) cannot start emphasis and is left as it is, for readability.
pub fn md(s: &str) -> String {
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len());
    for (i, &c) in chars.iter().enumerate() {
        match c {
            '\r' if chars.get(i + 1) == Some(&'\n') => {}
            '\n' | '\r' | '\t' => out.push(' '),
            '\\' | '|' | '`' | '*' | '[' | ']' | '<' | '>' | '&' | '#' | '~' | '!' => {
                out.push('\\');
                out.push(c);
            }
            '_' => {
                let word = |c: Option<&char>| c.is_some_and(|c| c.is_alphanumeric());
                if !(i > 0 && word(chars.get(i - 1)) && word(chars.get(i + 1))) {
                    out.push('\\');
                }
                out.push('_');
            }
            _ => out.push(c),
        }
    }
    out
}

/// A fragment id (`exp-b4`) from an experiment id: lower-case ASCII letters, digits and `-`.
pub fn anchor(id: &str) -> String {
    let slug: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    format!("exp-{slug}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_escapes_markup_and_quotes() {
        assert_eq!(
            html(r#"<script>alert("x")</script> & 'y'"#),
            "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;y&#39;"
        );
        assert_eq!(
            html("PostgreSQL 18.0 (Debian) — ünïcode"),
            "PostgreSQL 18.0 (Debian) — ünïcode"
        );
    }

    #[test]
    fn markdown_keeps_table_cells_whole() {
        assert_eq!(md("a | b"), r"a \| b");
        assert_eq!(md("line one\r\nline two\nthree"), "line one line two three");
        assert_eq!(md("<img src=x>"), r"\<img src=x\>");
        assert_eq!(
            md("*bold* `code` [link](u)"),
            r"\*bold\* \`code\` \[link\](u)"
        );
        assert_eq!(md(r"C:\path"), r"C:\\path");
        assert_eq!(md("# not a heading"), r"\# not a heading");
    }

    #[test]
    fn markdown_underscores_only_where_they_could_emphasise() {
        assert_eq!(md("synchronous_commit"), "synchronous_commit");
        assert_eq!(md("_x_ and __init"), r"\_x\_ and \_\_init");
    }

    #[test]
    fn anchors_are_plain() {
        assert_eq!(anchor("B4"), "exp-b4");
        assert_eq!(anchor("x \"<y>\""), "exp-x---y--");
    }
}
