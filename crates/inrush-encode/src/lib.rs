//! Text values to PostgreSQL wire bytes.
//!
//! Owns: the COPY BINARY framing ([`binary_copy`]), the types it encodes, known by OID
//! ([`ScalarType`]), one encoder per such type that turns a field's text into its binary send
//! format exactly as the server's own input function would have read it ([`types`]), and the
//! escaping for the text COPY fallback ([`text_copy`]).
//!
//! The rule every encoder follows: answer `Ok` only when certain the server's text input would
//! accept the value and produce these bytes; answer [`EncodeError::Refused`] only when certain it
//! would refuse, with the server's own wording; otherwise answer [`EncodeError::Deferred`] and
//! the caller asks the server (see `inrush-postgres`'s resolver). Rare forms (dates with month
//! names or two-digit years, hex floats, PostgreSQL 16's `1_000`) thereby stay exact without
//! being reimplemented.
//!
//! Does not own: reading or splitting input, knowing the catalog, or any I/O.

pub mod binary_copy;
pub mod text_copy;
pub mod types;
mod value_type;

pub use types::{
    boolin, encode_value, push_array_element, ColumnEncoder, DateOrder, EncodeContext,
};
pub use value_type::{ScalarType, ValueType};

/// Why a value could not be encoded on the client.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EncodeError {
    /// The server would refuse this value; the message is PostgreSQL's wording.
    #[error("{0}")]
    Refused(String),
    /// The client cannot decide cheaply and exactly: ask the server.
    #[error("value needs the server's parser")]
    Deferred,
}

pub type Result<T, E = EncodeError> = std::result::Result<T, E>;

/// The wire format of a COPY stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopyFormat {
    /// Values already in each type's binary form: the server does no parsing.
    Binary,
    /// Tab-separated text: the fallback for tables with a type inrush cannot encode.
    Text,
}

impl CopyFormat {
    pub fn name(self) -> &'static str {
        match self {
            CopyFormat::Binary => "binary",
            CopyFormat::Text => "text",
        }
    }
}
