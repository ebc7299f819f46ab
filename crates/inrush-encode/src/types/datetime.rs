//! Stub: every value is deferred to the server until this module is written.
use crate::{EncodeError, Result};
use crate::EncodeContext;

pub(crate) fn encode_date(_text: &str, _ctx: &EncodeContext, _out: &mut Vec<u8>) -> Result<()> {
    Err(EncodeError::Deferred)
}

pub(crate) fn encode_time(_text: &str, _typmod: i32, _ctx: &EncodeContext, _out: &mut Vec<u8>) -> Result<()> {
    Err(EncodeError::Deferred)
}

pub(crate) fn encode_timestamp(_text: &str, _typmod: i32, _ctx: &EncodeContext, _out: &mut Vec<u8>) -> Result<()> {
    Err(EncodeError::Deferred)
}

pub(crate) fn encode_timestamptz(_text: &str, _typmod: i32, _ctx: &EncodeContext, _out: &mut Vec<u8>) -> Result<()> {
    Err(EncodeError::Deferred)
}
