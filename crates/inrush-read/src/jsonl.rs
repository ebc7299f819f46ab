//! JSON lines: one object per line, its keys naming the columns, its values turned into the text
//! COPY would have read for each column.
//!
//! Lines are cut like CSV blocks ([`crate::csv::Splitter::without_quotes`]): a JSON string
//! escapes its line breaks, so every line break ends a record.
//!
//! What a value becomes depends on the column ([`ColumnForm`]): for `json`/`jsonb` the value's
//! JSON text as written (a string keeps its quotes); for an array column a JSON array becomes a
//! PostgreSQL array literal; for anything else a string gives its unescaped content, a number
//! its literal text (`1.10` stays `1.10`), `true`/`false` themselves, objects and arrays their
//! JSON text, and `null` (or a missing key) NULL.

use inrush_encode::push_array_element;
use serde::de::{self, DeserializeSeed, MapAccess, Visitor};
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;

/// How a column takes a JSON value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnForm {
    /// The value's text (strings unescaped).
    Plain,
    /// The value's JSON text as written (`json`, `jsonb`).
    Json,
    /// A JSON array as a PostgreSQL array literal.
    Array,
}

/// Why a line could not be read; `key` names the value at fault when there is one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonLineError {
    pub key: Option<String>,
    pub reason: String,
}

/// Reads lines for a fixed list of columns.
#[derive(Debug, Clone)]
pub struct JsonLineParser {
    /// Column position by key: exact names, then unique case-insensitive ones (as for a header).
    exact: HashMap<String, usize>,
    folded: HashMap<String, Option<usize>>,
    forms: Vec<ColumnForm>,
}

/// The fields of one line, in column order; `None` is NULL.
pub type JsonFields<'a> = Vec<Option<Cow<'a, str>>>;

impl JsonLineParser {
    /// `columns`: (name, form) of every column the lines feed, in COPY order.
    pub fn new(columns: &[(String, ColumnForm)]) -> Self {
        let mut exact = HashMap::new();
        let mut folded: HashMap<String, Option<usize>> = HashMap::new();
        for (i, (name, _)) in columns.iter().enumerate() {
            exact.insert(name.clone(), i);
            folded
                .entry(name.to_lowercase())
                .and_modify(|slot| *slot = None)
                .or_insert(Some(i));
        }
        JsonLineParser {
            exact,
            folded,
            forms: columns.iter().map(|(_, form)| *form).collect(),
        }
    }

    /// The keys of a line, in the order written: what the first line names is what a load
    /// maps to columns (like a CSV header).
    pub fn keys(line: &str) -> Result<Vec<String>, JsonLineError> {
        let object: Vec<(String, &RawValue)> = serde_json::from_str::<KeyedValues>(line)
            .map_err(invalid)?
            .0;
        Ok(object.into_iter().map(|(k, _)| k).collect())
    }

    /// Reads one line (without its line break) into `fields`.
    pub fn parse<'a>(
        &self,
        line: &'a str,
        fields: &mut JsonFields<'a>,
    ) -> Result<(), JsonLineError> {
        fields.clear();
        fields.resize(self.forms.len(), None);
        let object = serde_json::from_str::<KeyedValues<'a>>(line)
            .map_err(invalid)?
            .0;
        for (key, raw) in object {
            let Some(i) = self.column(&key) else {
                return Err(JsonLineError {
                    reason: format!("key \"{key}\" matches no column of the load"),
                    key: Some(key),
                });
            };
            fields[i] = value_text(raw, self.forms[i]).map_err(|reason| JsonLineError {
                key: Some(key.clone()),
                reason,
            })?;
        }
        Ok(())
    }

    fn column(&self, key: &str) -> Option<usize> {
        self.exact
            .get(key)
            .copied()
            .or_else(|| self.folded.get(&key.to_lowercase()).copied().flatten())
    }
}

fn invalid(e: serde_json::Error) -> JsonLineError {
    JsonLineError {
        key: None,
        reason: format!("invalid JSON line: {e}"),
    }
}

/// The text a column of `form` takes from one JSON value; `None` for `null`.
fn value_text(raw: &RawValue, form: ColumnForm) -> Result<Option<Cow<'_, str>>, String> {
    let text = raw.get();
    match text.as_bytes().first() {
        Some(b'n') => Ok(None),
        _ if form == ColumnForm::Json => Ok(Some(Cow::Borrowed(text))),
        Some(b'"') => string(text).map(Some),
        Some(b'[') if form == ColumnForm::Array => {
            let mut out = String::with_capacity(text.len());
            array_literal(raw, &mut out)?;
            Ok(Some(Cow::Owned(out)))
        }
        _ => Ok(Some(Cow::Borrowed(text))),
    }
}

/// A JSON string's content; borrowed when it has no escapes.
fn string(text: &str) -> Result<Cow<'_, str>, String> {
    let inner = &text[1..text.len() - 1];
    if !inner.contains('\\') {
        return Ok(Cow::Borrowed(inner));
    }
    serde_json::from_str::<String>(text)
        .map(Cow::Owned)
        .map_err(|e| e.to_string())
}

/// Writes a JSON array as a PostgreSQL array literal: strings and objects (as their JSON text)
/// as elements, quoted where `array_in` needs it; `NULL` for null; nested arrays as nested
/// braces.
fn array_literal(raw: &RawValue, out: &mut String) -> Result<(), String> {
    let elements: Vec<&RawValue> = serde_json::from_str(raw.get()).map_err(|e| e.to_string())?;
    out.push('{');
    for (i, element) in elements.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let text = element.get();
        match text.as_bytes().first() {
            Some(b'n') => out.push_str("NULL"),
            Some(b'[') => array_literal(element, out)?,
            Some(b'"') => push_array_element(&string(text)?, out),
            Some(b'{') => push_array_element(text, out),
            _ => out.push_str(text),
        }
    }
    out.push('}');
    Ok(())
}

/// An object's entries in the order written, values unparsed. Keys are owned: a key with an
/// escape cannot be borrowed, and keys are few next to values.
struct KeyedValues<'a>(Vec<(String, &'a RawValue)>);

impl<'de: 'a, 'a> de::Deserialize<'de> for KeyedValues<'a> {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Entries<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for Entries<'a> {
            type Value = KeyedValues<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Self::Value, M::Error> {
                let mut entries = Vec::with_capacity(map.size_hint().unwrap_or(8));
                while let Some(key) = map.next_key::<String>()? {
                    if entries.iter().any(|(k, _): &(String, _)| *k == key) {
                        return Err(de::Error::custom(format!("key \"{key}\" appears twice")));
                    }
                    let value = map.next_value_seed(Raw(std::marker::PhantomData))?;
                    entries.push((key, value));
                }
                Ok(KeyedValues(entries))
            }
        }
        deserializer.deserialize_map(Entries(std::marker::PhantomData))
    }
}

struct Raw<'a>(std::marker::PhantomData<&'a ()>);

impl<'de: 'a, 'a> DeserializeSeed<'de> for Raw<'a> {
    type Value = &'a RawValue;
    fn deserialize<D: de::Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<Self::Value, D::Error> {
        <&RawValue as de::Deserialize>::deserialize(deserializer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parser() -> JsonLineParser {
        JsonLineParser::new(&[
            ("id".into(), ColumnForm::Plain),
            ("Name".into(), ColumnForm::Plain),
            ("doc".into(), ColumnForm::Json),
            ("tags".into(), ColumnForm::Array),
        ])
    }

    fn parse(line: &str) -> Result<Vec<Option<String>>, JsonLineError> {
        let mut fields = Vec::new();
        parser().parse(line, &mut fields)?;
        Ok(fields
            .into_iter()
            .map(|f| f.map(|c| c.into_owned()))
            .collect())
    }

    fn some(s: &str) -> Option<String> {
        Some(s.to_string())
    }

    #[test]
    fn values_take_the_form_of_their_column() {
        let fields = parse(
            r#"{"id": 1.10, "name": "a\"b\\n", "doc": {"k": [1, "x"]}, "tags": ["a b", null, "q\"", 3, [1]]}"#,
        )
        .unwrap();
        assert_eq!(
            fields,
            vec![
                some("1.10"),
                some("a\"b\\n"),
                some(r#"{"k": [1, "x"]}"#),
                some(r#"{"a b",NULL,"q\"",3,{1}}"#),
            ]
        );
        // A string into json keeps its quotes; null and missing keys are NULL.
        let fields = parse(r#"{"doc": "s", "name": null}"#).unwrap();
        assert_eq!(fields, vec![None, None, some("\"s\""), None]);
        assert_eq!(parse(r#"{"id": true}"#).unwrap()[0], some("true"));
    }

    #[test]
    fn bad_lines_say_why() {
        let e = parse(r#"{"id": 1, "nope": 2}"#).unwrap_err();
        assert_eq!(e.key.as_deref(), Some("nope"));
        assert!(e.reason.contains("matches no column"), "{}", e.reason);
        let e = parse(r#"{"id": 1,"#).unwrap_err();
        assert!(e.reason.starts_with("invalid JSON line"), "{}", e.reason);
        let e = parse("[1, 2]").unwrap_err();
        assert!(e.reason.contains("a JSON object"), "{}", e.reason);
        let e = parse(r#"{"id": 1, "id": 2}"#).unwrap_err();
        assert!(e.reason.contains("appears twice"), "{}", e.reason);
    }

    #[test]
    fn keys_come_in_the_order_written() {
        assert_eq!(
            JsonLineParser::keys(r#"{"b": 1, "a": {"x": 2}}"#).unwrap(),
            vec!["b".to_string(), "a".to_string()]
        );
    }
}
