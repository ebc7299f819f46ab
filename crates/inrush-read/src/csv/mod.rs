//! CSV as PostgreSQL's COPY reads it (`src/backend/commands/copyfromparse.c`): a quote starts
//! quoted text anywhere in a field, an unquoted field equal to the NULL string is NULL, a quoted
//! empty field is an empty string, and the first line's ending fixes the ending of every line.

#[cfg(any(test, feature = "testing"))]
pub mod cases;
mod options;
mod record;
mod split;

pub use options::CsvOptions;
pub use record::{BlockParser, Record, RecordError, RecordParser};
pub use split::{Block, Splitter};

/// COPY's line reader's view of quotes (`CopyReadLineText`): a quote toggles quoted text
/// anywhere; inside quotes an escape that differs from the quote protects the next quote or
/// escape. Shared by the splitter (where do records end?) and the parser (where does a bad
/// record end?), so both always agree.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QuoteState {
    in_quote: bool,
    last_was_escape: bool,
}

impl QuoteState {
    pub fn in_quote(self) -> bool {
        self.in_quote
    }

    /// Advances over byte `c`.
    #[inline]
    pub fn step(&mut self, c: u8, quote: u8, escape: u8) {
        if quote == escape {
            if c == quote {
                self.in_quote = !self.in_quote;
            }
            return;
        }
        if self.in_quote && c == escape {
            self.last_was_escape = !self.last_was_escape;
        }
        if c == quote && !self.last_was_escape {
            self.in_quote = !self.in_quote;
        }
        if c != escape {
            self.last_was_escape = false;
        }
    }

    /// Advances over bytes that are neither quote nor escape (only resets the escape flag).
    #[inline]
    pub fn skip_plain(&mut self) {
        self.last_was_escape = false;
    }
}

/// Line ending, fixed by the first line as in COPY (`eol_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Eol {
    Lf,
    CrLf,
    Cr,
}

impl Eol {
    /// The byte that ends a record: the splitter cuts after it.
    pub fn terminator(self) -> u8 {
        match self {
            Eol::Lf | Eol::CrLf => b'\n',
            Eol::Cr => b'\r',
        }
    }
}
