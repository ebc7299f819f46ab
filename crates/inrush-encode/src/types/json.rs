//! Stub: every value is deferred to the server until this module is written.
use crate::{EncodeError, Result};

pub(crate) fn encode_json(_text: &str, _out: &mut Vec<u8>) -> Result<()> {
    Err(EncodeError::Deferred)
}

pub(crate) fn encode_jsonb(_text: &str, _out: &mut Vec<u8>) -> Result<()> {
    Err(EncodeError::Deferred)
}
