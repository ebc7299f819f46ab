//! Stub: every value is deferred to the server until this module is written.
use crate::{EncodeError, Result};

pub(crate) fn encode_text(_text: &str, _out: &mut Vec<u8>) -> Result<()> {
    Err(EncodeError::Deferred)
}

pub(crate) fn encode_varchar(_text: &str, _typmod: i32, _out: &mut Vec<u8>) -> Result<()> {
    Err(EncodeError::Deferred)
}

pub(crate) fn encode_bpchar(_text: &str, _typmod: i32, _out: &mut Vec<u8>) -> Result<()> {
    Err(EncodeError::Deferred)
}
