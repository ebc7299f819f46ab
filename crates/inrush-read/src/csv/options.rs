use crate::{Error, Result};

/// The dialect knobs COPY's CSV format has, with COPY's defaults.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CsvOptions {
    pub delimiter: u8,
    pub quote: u8,
    /// Defaults to the quote character (a doubled quote is a literal quote).
    pub escape: u8,
    /// An unquoted field equal to this is NULL.
    pub null: Vec<u8>,
    /// The first record is a header and is not data.
    pub header: bool,
}

impl Default for CsvOptions {
    fn default() -> Self {
        CsvOptions {
            delimiter: b',',
            quote: b'"',
            escape: b'"',
            null: Vec::new(),
            header: false,
        }
    }
}

impl CsvOptions {
    /// The command-line flags these options set away from their defaults (`--escape` only
    /// when it differs from the quote, as it defaults to it), for refusing them where no CSV
    /// is read.
    pub fn flags_set(&self) -> Vec<&'static str> {
        let default = CsvOptions::default();
        [
            (self.header, "--header"),
            (self.delimiter != default.delimiter, "--delimiter"),
            (self.quote != default.quote, "--quote"),
            (self.escape != self.quote, "--escape"),
            (self.null != default.null, "--null"),
        ]
        .into_iter()
        .filter_map(|(set, flag)| set.then_some(flag))
        .collect()
    }

    /// Refuses what COPY refuses, with its reasons.
    pub fn validate(&self) -> Result<()> {
        let single = |what: &str, b: u8| {
            if b.is_ascii() && b != b'\n' && b != b'\r' {
                Ok(())
            } else {
                Err(Error::Options(format!("{what} must be a single one-byte character other than newline or carriage return")))
            }
        };
        single("delimiter", self.delimiter)?;
        single("quote", self.quote)?;
        single("escape", self.escape)?;
        if self.delimiter == self.quote {
            return Err(Error::Options(
                "delimiter and quote must be different".into(),
            ));
        }
        if self.null.iter().any(|&b| b == b'\n' || b == b'\r') {
            return Err(Error::Options(
                "the NULL string cannot contain newline or carriage return".into(),
            ));
        }
        if self.null.contains(&self.delimiter) {
            return Err(Error::Options(
                "the delimiter must not appear in the NULL string".into(),
            ));
        }
        if self.null.contains(&self.quote) {
            return Err(Error::Options(
                "the quote must not appear in the NULL string".into(),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn null_string_may_hold_neither_delimiter_nor_quote_as_in_copy() {
        let with_null = |null: &str| CsvOptions {
            null: null.as_bytes().to_vec(),
            ..Default::default()
        };
        assert!(with_null("\\N").validate().is_ok());
        assert!(with_null("a,b").validate().is_err());
        // COPY: "CSV quote character must not appear in the NULL specification".
        assert!(with_null("\"").validate().is_err());
        assert!(with_null("n\"a").validate().is_err());
    }

    #[test]
    fn flags_set_names_what_differs_from_the_defaults() {
        assert!(CsvOptions::default().flags_set().is_empty());
        let quoted = CsvOptions {
            quote: b'\'',
            escape: b'\'',
            ..Default::default()
        };
        assert_eq!(quoted.flags_set(), ["--quote"]);
        let all = CsvOptions {
            header: true,
            delimiter: b';',
            escape: b'\\',
            null: b"NA".to_vec(),
            ..Default::default()
        };
        assert_eq!(
            all.flags_set(),
            ["--header", "--delimiter", "--escape", "--null"]
        );
    }
}
