//! Any database with an ODBC driver as a load target (`--to 'odbc:DSN=sales;UID=app'` or
//! `--to 'odbc:Driver={...};Server=...;'`), through unixODBC's driver manager and the
//! database's own driver.
//!
//! Rows go as ODBC parameter arrays: one execute of a prepared INSERT carries up to
//! [`ROWS_PER_EXECUTE`] rows, bound column by column as text the driver converts to each
//! column's type (array DML), and binary values as their bytes. Each connection prepares its INSERT once. Every connection
//! loads in its own transaction, and the kit's one rule commits them together
//! (`inrush_load::target`); a COMMIT whose answer is lost is asked about ([`outcome`]), and
//! `--resume` commits block by block with a ledger ([`ledger`]), in tables beside the
//! target's ([`books`]). The table's indexes and keys stay as they are: over ODBC inrush
//! changes no definition, and the plan says how to build them after the load ([`advice`]).

mod advice;
mod apart;
mod arrays;
mod books;
mod catalog;
mod create;
mod driver;
pub mod lab;
mod ledger;
mod outcome;
mod target;
mod writer;

pub use target::OdbcTarget;

use inrush_load::{Error, Kind};

/// Rows per execute: each is one round trip carrying that many rows' parameters.
pub const ROWS_PER_EXECUTE: usize = 1000;

/// What the driver said of a call that failed, for messages: its SQLSTATE and message.
#[derive(Debug, thiserror::Error)]
#[error("{what}: {message}")]
pub struct OdbcError {
    pub what: String,
    /// `[SQLSTATE] message`, as the driver gave it.
    pub message: String,
    pub state: Option<String>,
}

/// A failure of `what`, of the kind its SQLSTATE's class says.
pub(crate) fn failed(what: impl Into<String>) -> impl FnOnce(odbc_api::Error) -> Error {
    let what = what.into();
    move |e| {
        let (state, message) = match &e {
            odbc_api::Error::Diagnostics { record, .. } => {
                let state = record.state.as_str().to_string();
                let text = String::from_utf8_lossy(&record.message).trim().to_string();
                (Some(state.clone()), format!("[{state}] {text}"))
            }
            other => (None, other.to_string()),
        };
        let kind = match state.as_deref().map(|s| &s[..2]) {
            // Connection exceptions, invalid authorization.
            Some("08" | "28") => Kind::Server,
            // Data exceptions, integrity constraints, invalid character values.
            Some("22" | "23") => Kind::BadInput,
            // Syntax, access rule: a table or column that is not there.
            Some("42") => Kind::Usage,
            _ => Kind::Server,
        };
        Error::driver(
            kind,
            OdbcError {
                what,
                message,
                state,
            },
        )
    }
}

/// The SQLSTATE of a failed call, or nothing.
pub(crate) fn state_of(e: &odbc_api::Error) -> String {
    match e {
        odbc_api::Error::Diagnostics { record, .. } => record.state.as_str().to_string(),
        _ => String::new(),
    }
}

/// The connection string `to` names: what follows `odbc:`.
pub fn connection_string(to: &str) -> Option<&str> {
    to.strip_prefix("odbc:").filter(|s| !s.trim().is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connection_string_is_what_follows_the_scheme() {
        assert_eq!(connection_string("odbc:DSN=sales"), Some("DSN=sales"));
        assert_eq!(connection_string("odbc:"), None);
        assert_eq!(connection_string("postgresql://h/d"), None);
    }
}
