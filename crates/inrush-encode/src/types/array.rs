//! Stub: every value is deferred to the server until this module is written.
use crate::{EncodeError, Result};
use crate::EncodeContext;
use inrush_core::ScalarType;

pub(crate) fn encode(_elem: ScalarType, _elem_oid: u32, _typmod: i32, _text: &str, _ctx: &EncodeContext, _out: &mut Vec<u8>) -> Result<()> {
    Err(EncodeError::Deferred)
}
