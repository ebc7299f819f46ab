//! Where a value came from, so every refusal can name file, line, column and value.

use std::fmt;

/// How much of a refused value is quoted back in messages: enough to recognise it, never a
/// megabyte of JSON.
const MAX_QUOTED_VALUE: usize = 120;

/// The position of a record (and optionally one field of it) in an input.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Location {
    /// The input's name as the user gave it (`-` for standard input).
    pub file: String,
    /// 1-based physical line on which the record starts; for a columnar file (Parquet, Arrow),
    /// the 1-based row number (see `row`).
    pub line: u64,
    /// `line` numbers rows of a columnar file, not text lines.
    pub row: bool,
    /// The target column the field was meant for, when the problem is one field.
    pub column: Option<String>,
    /// The field's text (shortened), when the problem is one field.
    pub value: Option<String>,
}

impl Location {
    pub fn record(file: impl Into<String>, line: u64) -> Self {
        Location {
            file: file.into(),
            line,
            row: false,
            column: None,
            value: None,
        }
    }

    /// Row `row` (1-based) of a columnar file.
    pub fn row(file: impl Into<String>, row: u64) -> Self {
        Location {
            row: true,
            ..Location::record(file, row)
        }
    }

    /// The same record, narrowed to one field.
    pub fn field(mut self, column: impl Into<String>, value: Option<&[u8]>) -> Self {
        self.column = Some(column.into());
        self.value = value.map(shorten);
        self
    }
}

fn shorten(value: &[u8]) -> String {
    let text = String::from_utf8_lossy(value);
    if text.chars().count() <= MAX_QUOTED_VALUE {
        return text.into_owned();
    }
    let mut short: String = text.chars().take(MAX_QUOTED_VALUE).collect();
    short.push('…');
    short
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.row {
            true => write!(f, "{}, row {}", self.file, self.line)?,
            false => write!(f, "{}:{}", self.file, self.line)?,
        }
        if let Some(column) = &self.column {
            write!(f, ", column {column}")?;
        }
        if let Some(value) = &self.value {
            write!(f, ", value {value:?}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_everything_known() {
        let loc = Location::record("a.csv", 7).field("qty", Some(b"12x"));
        assert_eq!(loc.to_string(), "a.csv:7, column qty, value \"12x\"");
        assert_eq!(Location::record("-", 1).to_string(), "-:1");
        assert_eq!(
            Location::row("t.parquet", 9).to_string(),
            "t.parquet, row 9"
        );
    }

    #[test]
    fn long_values_are_shortened() {
        let long = vec![b'x'; 1000];
        let loc = Location::record("a.csv", 1).field("c", Some(&long));
        assert_eq!(loc.value.unwrap().chars().count(), MAX_QUOTED_VALUE + 1);
    }
}
