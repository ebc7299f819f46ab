//! Stub: every value is deferred to the server until this module is written.
use crate::{EncodeError, Result};

pub(crate) fn encode_float4(_text: &str, _out: &mut Vec<u8>) -> Result<()> {
    Err(EncodeError::Deferred)
}

pub(crate) fn encode_float8(_text: &str, _out: &mut Vec<u8>) -> Result<()> {
    Err(EncodeError::Deferred)
}
