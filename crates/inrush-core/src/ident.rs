//! SQL names as users write them on the command line, and text as SQL constants.

/// The dot-separated parts of a qualified name, `quote` quoting a part (doubled inside it):
/// `main.t`, `"My Table"`, `` `db`.`t` ``.
pub fn name_parts(name: &str, quote: char) -> Vec<String> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut quoted = false;
    let mut chars = name.trim().chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            c if c == quote && quoted && chars.peek() == Some(&quote) => {
                current.push(quote);
                chars.next();
            }
            c if c == quote => quoted = !quoted,
            '.' if !quoted => parts.push(std::mem::take(&mut current)),
            c => current.push(c),
        }
    }
    parts.push(current);
    parts
}

/// `text` as a standard SQL string constant (`'it''s'`), which PostgreSQL (with
/// `standard_conforming_strings`, on since 9.1) and SQLite read as written; MariaDB's is
/// another, since it reads backslashes as escapes.
pub fn sql_string(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_string_constant_doubles_its_quotes_only() {
        assert_eq!(sql_string("it's \\x"), "'it''s \\x'");
        assert_eq!(sql_string(""), "''");
    }

    #[test]
    fn parts_split_at_unquoted_dots() {
        assert_eq!(name_parts("t", '"'), ["t"]);
        assert_eq!(name_parts(" main.t ", '"'), ["main", "t"]);
        assert_eq!(name_parts("\"a.b\".\"x\"\"y\"", '"'), ["a.b", "x\"y"]);
        assert_eq!(name_parts("`x``y`.t", '`'), ["x`y", "t"]);
    }
}
