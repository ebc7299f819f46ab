//! How a copy fails: the table it failed on, if one, and the error.

use inrush_core::query::QueryError;
use inrush_load::Error;

/// A copy that failed: the table it failed on, if one, and why.
#[derive(Debug)]
pub struct Failed {
    pub table: Option<String>,
    /// Boxed: a load's error is large, and every step returns this.
    pub error: Box<Error>,
}

/// A target's failure, said as the target's (a [`QueryError`] reads as a source's).
pub(crate) fn in_target(e: QueryError) -> Error {
    Error::Engine {
        engine: e.engine,
        what: e.what,
        message: e.message,
        code: None,
    }
}

impl Failed {
    pub(crate) fn whole(error: impl Into<Error>) -> Failed {
        Failed {
            table: None,
            error: Box::new(error.into()),
        }
    }

    pub(crate) fn of(table: &str, error: impl Into<Error>) -> Failed {
        Failed {
            table: Some(table.to_string()),
            error: Box::new(error.into()),
        }
    }
}
