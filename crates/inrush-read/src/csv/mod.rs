//! CSV as PostgreSQL's COPY reads it (`src/backend/commands/copyfromparse.c`): a quote starts
//! quoted text anywhere in a field, an unquoted field equal to the NULL string is NULL, a quoted
//! empty field is an empty string, and the first line's ending fixes the ending of every line.

mod options;
mod record;
mod split;

pub use options::CsvOptions;
pub use record::{BlockParser, Record, RecordError, RecordParser};
pub use split::{Block, Splitter};

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
