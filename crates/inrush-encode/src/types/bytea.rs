//! Stub: every value is deferred to the server until this module is written.
use crate::{EncodeError, Result};

pub(crate) fn encode(_text: &str, _out: &mut Vec<u8>) -> Result<()> {
    Err(EncodeError::Deferred)
}
