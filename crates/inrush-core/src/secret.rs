//! Where a password sits in a connection string as users write them, so that messages can show
//! the string without it and the process can hide it from its own arguments.
//!
//! Three spellings: a URL's user information and its `password=` parameter
//! (`postgresql://app:pw@h/db?password=pw`, `mysql://app:pw@h/db`), libpq's `key=value` words
//! (`password=pw`, `password = 'a b'`), and an ODBC connection string after `odbc:`
//! (`PWD=pw;`, `Password={p;w}`). A span covers the password only (a braced ODBC value with
//! its braces), never the key or libpq's quotes.

use std::ops::Range;

/// The byte ranges of every password in `s`.
pub fn password_spans(s: &str) -> Vec<Range<usize>> {
    settings(s).into_iter().map(|p| p.value).collect()
}

/// `s` without its passwords, keys and all (`postgresql://app@h/db`, `host=h user=u`), for a
/// command to be run again: the password then comes from where the engine's client looks for
/// one (`~/.pgpass`, `PGPASSWORD`, an option file, a DSN).
pub fn without_passwords(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut at = 0;
    for Password { whole, .. } in settings(s) {
        let (mut start, mut end) = (whole.start.max(at), whole.end);
        // One separator goes with the setting: the one after it, else the one before.
        match bytes.get(end) {
            Some(b'&' | b';') => end += 1,
            Some(b' ') => end += s[end..].len() - s[end..].trim_start_matches(' ').len(),
            _ if start > at && matches!(bytes[start - 1], b'&' | b';' | b' ' | b'?') => start -= 1,
            _ => {}
        }
        out.push_str(&s[at..start]);
        at = end;
    }
    out.push_str(&s[at..]);
    out
}

/// A password's value, and the whole setting that gives it: its key and the quotes or braces
/// around it (`password='pw'`, `PWD={pw}`), or a URL's `:pw` before the `@`.
struct Password {
    value: Range<usize>,
    whole: Range<usize>,
}

fn settings(s: &str) -> Vec<Password> {
    if let Some(scheme_end) = s.find("://") {
        url_spans(s, scheme_end + 3)
    } else if let Some(connection) = s.strip_prefix("odbc:") {
        odbc_spans(connection, "odbc:".len())
    } else {
        keyword_spans(s)
    }
}

/// `s` with every password shown as `***`.
pub fn masked(s: &str) -> String {
    mask(s, password_spans(s))
}

/// An ODBC connection string (without `odbc:`) with every password shown as `***`.
pub fn masked_odbc(connection: &str) -> String {
    let spans = odbc_spans(connection, 0).into_iter().map(|p| p.value);
    mask(connection, spans.collect())
}

fn mask(s: &str, spans: Vec<Range<usize>>) -> String {
    let mut out = String::with_capacity(s.len());
    let mut at = 0;
    for span in spans {
        out.push_str(&s[at..span.start]);
        out.push_str("***");
        at = span.end;
    }
    out.push_str(&s[at..]);
    out
}

fn url_spans(s: &str, authority_start: usize) -> Vec<Password> {
    let rest = &s[authority_start..];
    let authority_len = rest.find(['/', '?']).unwrap_or(rest.len());
    let mut spans = Vec::new();
    // The host follows the last `@`: a password may hold one unencoded.
    if let Some(at) = rest[..authority_len].rfind('@') {
        if let Some(colon) = rest[..at].find(':') {
            spans.push(Password {
                value: authority_start + colon + 1..authority_start + at,
                whole: authority_start + colon..authority_start + at,
            });
        }
    }
    if let Some(query) = rest.find('?') {
        let mut start = authority_start + query + 1;
        for pair in s[start..].split('&') {
            if let Some(value) = pair.strip_prefix("password=") {
                let value_start = start + "password=".len();
                spans.push(Password {
                    value: value_start..value_start + value.len(),
                    whole: start..value_start + value.len(),
                });
            }
            start += pair.len() + 1;
        }
    }
    spans.retain(|p| !p.value.is_empty());
    spans
}

/// libpq's `key = value` words: a value is a run without spaces or a `'...'` string in which
/// a backslash escapes the next character.
fn keyword_spans(s: &str) -> Vec<Password> {
    let bytes = s.as_bytes();
    let mut spans = Vec::new();
    let mut i = 0;
    while let Some(found) = s[i..].find("password") {
        let key = i + found;
        i = key + "password".len();
        if key > 0 && !bytes[key - 1].is_ascii_whitespace() {
            continue;
        }
        let mut j = i;
        while j < bytes.len() && bytes[j] == b' ' {
            j += 1;
        }
        if bytes.get(j) != Some(&b'=') {
            continue;
        }
        j += 1;
        while j < bytes.len() && bytes[j] == b' ' {
            j += 1;
        }
        let (start, end) = match bytes.get(j) {
            Some(b'\'') => {
                let mut k = j + 1;
                while k < bytes.len() && bytes[k] != b'\'' {
                    k += if bytes[k] == b'\\' { 2 } else { 1 };
                }
                (j + 1, k.min(bytes.len()))
            }
            _ => {
                let len = s[j..].find(char::is_whitespace).unwrap_or(s.len() - j);
                (j, j + len)
            }
        };
        let closing_quote = usize::from(start > j && end < bytes.len());
        if start < end {
            spans.push(Password {
                value: start..end,
                whole: key..end + closing_quote,
            });
        }
        i = end;
    }
    spans
}

/// `KEY=value;` pairs; `PWD` and `Password` (any case) hold passwords, whose value may be
/// braced (`{a;b}`, with `}}` for a `}`).
fn odbc_spans(connection: &str, offset: usize) -> Vec<Password> {
    let mut spans = Vec::new();
    let mut start = 0;
    while start < connection.len() {
        let rest = &connection[start..];
        let Some(eq) = rest.find('=') else { break };
        let key = rest[..eq].trim().to_ascii_lowercase();
        let value_start = start + eq + 1;
        let value = &connection[value_start..];
        let value_len = match value.trim_start().starts_with('{') {
            true => braced_len(value),
            false => value.find(';').unwrap_or(value.len()),
        };
        if (key == "pwd" || key == "password") && value_len > 0 {
            let key_start = start + rest.len() - rest.trim_start().len();
            spans.push(Password {
                value: offset + value_start..offset + value_start + value_len,
                whole: offset + key_start..offset + value_start + value_len,
            });
        }
        start = value_start + value_len;
        start += connection[start..]
            .find(';')
            .map_or(connection.len() - start, |i| i + 1);
    }
    spans
}

/// The length of a braced value up to and with its closing brace (`}}` is a brace inside it).
fn braced_len(value: &str) -> usize {
    let bytes = value.as_bytes();
    let mut i = value.find('{').map_or(0, |open| open + 1);
    while i < bytes.len() {
        match (bytes[i], bytes.get(i + 1)) {
            (b'}', Some(b'}')) => i += 2,
            (b'}', _) => return i + 1,
            _ => i += 1,
        }
    }
    bytes.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_found_in_every_spelling_and_nothing_else_is() {
        for (given, shown) in [
            (
                "postgresql://app:s3cret@h:5432/db",
                "postgresql://app:***@h:5432/db",
            ),
            ("postgres://app:p@ss@h/db", "postgres://app:***@h/db"),
            (
                "mysql://app:pw@127.0.0.1/shop?ssl-mode=required",
                "mysql://app:***@127.0.0.1/shop?ssl-mode=required",
            ),
            (
                "postgresql://app@h/db?sslmode=require&password=pw",
                "postgresql://app@h/db?sslmode=require&password=***",
            ),
            ("postgresql://app@h/db", "postgresql://app@h/db"),
            ("postgresql://app:@h/db", "postgresql://app:@h/db"),
            (
                "host=h password=pw dbname=d",
                "host=h password=*** dbname=d",
            ),
            (
                "host=h password = 'a \\' b' user=u",
                "host=h password = '***' user=u",
            ),
            ("host=h oldpassword=x", "host=h oldpassword=x"),
            ("odbc:DSN=x;UID=u;PWD=s3cret;", "odbc:DSN=x;UID=u;PWD=***;"),
            (
                "odbc:Driver={PostgreSQL Unicode};Password={a;b}}c};Server=h",
                "odbc:Driver={PostgreSQL Unicode};Password=***;Server=h",
            ),
            ("odbc:DSN=x; pwd =pw", "odbc:DSN=x; pwd =***"),
            ("orders.csv", "orders.csv"),
            ("", ""),
        ] {
            assert_eq!(masked(given), shown, "{given}");
        }
        assert_eq!(masked_odbc("DSN=x;Password=pw"), "DSN=x;Password=***");
    }

    #[test]
    fn without_passwords_a_connection_string_keeps_every_other_setting() {
        for (given, left) in [
            (
                "postgresql://app:s3cret@db.example:5433/sales?sslmode=require&password=x",
                "postgresql://app@db.example:5433/sales?sslmode=require",
            ),
            (
                "postgresql://app@h/db?password=x&sslmode=require",
                "postgresql://app@h/db?sslmode=require",
            ),
            ("postgresql://app@h/db?password=x", "postgresql://app@h/db"),
            (
                "mysql://root:p@ss@127.0.0.1/db",
                "mysql://root@127.0.0.1/db",
            ),
            ("postgresql:///sales", "postgresql:///sales"),
            (
                "host=/tmp dbname=sales password=pw user=app",
                "host=/tmp dbname=sales user=app",
            ),
            ("host=h password = 'a \\' b'", "host=h"),
            ("password=pw  host=h", "host=h"),
            ("odbc:DSN=x;PWD={a;b}}c};UID=u", "odbc:DSN=x;UID=u"),
            ("odbc:DSN=x;UID=u;Password=pw", "odbc:DSN=x;UID=u"),
            ("sqlite:///tmp/x.db", "sqlite:///tmp/x.db"),
        ] {
            assert_eq!(without_passwords(given), left, "{given}");
        }
    }

    #[test]
    fn spans_hold_whole_characters() {
        let s = "postgresql://app:pässwört@h/db";
        for span in password_spans(s) {
            assert_eq!(&s[span], "pässwört");
        }
    }
}
