//! A partition's bound as `pg_get_expr(relpartbound, oid)` prints it, read back: `FOR VALUES
//! FROM (...) TO (...)`, `FOR VALUES IN (...)`, `FOR VALUES WITH (modulus m, remainder r)` or
//! `DEFAULT`. Values stay text here (the server turns them into their binary form, see
//! `catalog`); the printer quotes every value but a non-negative number (`get_const_expr`).

/// One value of a bound, as text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Literal {
    Value(String),
    Null,
    MinValue,
    MaxValue,
}

/// A partition's bound, its values as text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BoundText {
    Range {
        from: Vec<Literal>,
        to: Vec<Literal>,
    },
    List(Vec<Literal>),
    Hash {
        modulus: u64,
        remainder: u64,
    },
    Default,
}

impl BoundText {
    /// Reads what `pg_get_expr` printed; `None` for anything else.
    pub fn parse(text: &str) -> Option<BoundText> {
        let text = text.trim();
        if text == "DEFAULT" {
            return Some(BoundText::Default);
        }
        let rest = text.strip_prefix("FOR VALUES ")?;
        if let Some(rest) = rest.strip_prefix("FROM ") {
            let (from, rest) = list(rest)?;
            let (to, rest) = list(rest.trim_start().strip_prefix("TO ")?)?;
            return rest
                .trim()
                .is_empty()
                .then_some(BoundText::Range { from, to });
        }
        if let Some(rest) = rest.strip_prefix("IN ") {
            let (values, rest) = list(rest)?;
            return rest.trim().is_empty().then_some(BoundText::List(values));
        }
        let inner = rest.strip_prefix("WITH (")?.strip_suffix(')')?;
        let (modulus, remainder) = inner.split_once(", ")?;
        Some(BoundText::Hash {
            modulus: modulus.strip_prefix("modulus ")?.parse().ok()?,
            remainder: remainder.strip_prefix("remainder ")?.parse().ok()?,
        })
    }
}

/// `(v, v, ...)` at the start of `s`; the values and what follows the closing parenthesis.
fn list(s: &str) -> Option<(Vec<Literal>, &str)> {
    let mut rest = s.trim_start().strip_prefix('(')?;
    let mut values = Vec::new();
    loop {
        let (value, after) = literal(rest.trim_start())?;
        values.push(value);
        let after = after.trim_start();
        if let Some(after) = after.strip_prefix(',') {
            rest = after;
        } else {
            return Some((values, after.strip_prefix(')')?));
        }
    }
}

/// One value: `'quoted'` (quotes doubled; `E'...'` with backslash escapes), a bare number
/// (perhaps in parentheses), `NULL`, `MINVALUE` or `MAXVALUE`.
fn literal(s: &str) -> Option<(Literal, &str)> {
    let (escapes, quoted) = match (s.strip_prefix("E'"), s.strip_prefix('\'')) {
        (Some(rest), _) => (true, Some(rest)),
        (None, rest) => (false, rest),
    };
    if let Some(body) = quoted {
        let mut value = String::new();
        let mut chars = body.char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '\'' if body[i + 1..].starts_with('\'') => {
                    chars.next();
                    value.push('\'');
                }
                '\'' => return Some((Literal::Value(value), &body[i + 1..])),
                '\\' if escapes => value.push(chars.next()?.1),
                c => value.push(c),
            }
        }
        return None;
    }
    let end = s.find([',', ')']).unwrap_or(s.len());
    let (word, rest) = s.split_at(end);
    let word = word.trim();
    let literal = match word {
        "NULL" => Literal::Null,
        "MINVALUE" => Literal::MinValue,
        "MAXVALUE" => Literal::MaxValue,
        // `(-5)`: the closing parenthesis is the value's, not the list's.
        _ if word.starts_with('(') => {
            let rest = rest.strip_prefix(')')?;
            return Some((Literal::Value(word[1..].to_string()), rest));
        }
        _ if !word.is_empty() => Literal::Value(word.to_string()),
        _ => return None,
    };
    Some((literal, rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Literal {
        Literal::Value(s.into())
    }

    #[test]
    fn reads_what_the_server_prints() {
        assert_eq!(
            BoundText::parse("FOR VALUES FROM (MINVALUE, MINVALUE) TO ('-5', '2020-01-01')"),
            Some(BoundText::Range {
                from: vec![Literal::MinValue, Literal::MinValue],
                to: vec![v("-5"), v("2020-01-01")],
            })
        );
        assert_eq!(
            BoundText::parse("FOR VALUES IN ('it''s', NULL, 'b\\c', 7, (-3))"),
            Some(BoundText::List(vec![
                v("it's"),
                Literal::Null,
                v("b\\c"),
                v("7"),
                v("-3")
            ]))
        );
        assert_eq!(
            BoundText::parse("FOR VALUES IN (E'a\\\\b', 'x, y)')"),
            Some(BoundText::List(vec![v("a\\b"), v("x, y)")]))
        );
        assert_eq!(
            BoundText::parse("FOR VALUES WITH (modulus 4, remainder 3)"),
            Some(BoundText::Hash {
                modulus: 4,
                remainder: 3
            })
        );
        assert_eq!(BoundText::parse("DEFAULT"), Some(BoundText::Default));
        assert_eq!(BoundText::parse("FOR VALUES IN ('open"), None);
        assert_eq!(BoundText::parse("FOR VALUES FROM (1) TO"), None);
    }
}
