//! Shared by the integration tests: the sample results every report test renders.
//!
//! `fixture.rs` is also compiled into the crate's own unit tests (`src/report/mod.rs` includes
//! it by path under `cfg(test)`), so there is one sample for both kinds of test and none of it
//! ships in the library or needs a cargo feature.

#![allow(dead_code)]

use inrush_lab::{results, verdict};

pub mod fixture;
pub mod png;
