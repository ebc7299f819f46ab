//! Stub: every value is deferred to the server until this module is written.
use crate::{EncodeError, Result};

pub(crate) fn encode_int2(_text: &str, _out: &mut Vec<u8>) -> Result<()> {
    Err(EncodeError::Deferred)
}

pub(crate) fn encode_int4(_text: &str, _out: &mut Vec<u8>) -> Result<()> {
    Err(EncodeError::Deferred)
}

pub(crate) fn encode_int8(_text: &str, _out: &mut Vec<u8>) -> Result<()> {
    Err(EncodeError::Deferred)
}
