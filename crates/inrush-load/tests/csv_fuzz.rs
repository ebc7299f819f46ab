//! Property test against the server's own COPY: arbitrary CSV (`inrush_read::csv::cases` says
//! what it is made of) loaded by inrush, in blocks of arbitrary size, and by
//! `COPY ... FROM STDIN (FORMAT csv, ...)` with the same options into a table of text columns
//! must give the same rows (as text: NULL is not the empty string), or be refused by both.
//!
//! Before PostgreSQL 18, COPY FROM STDIN ends the data at a line that is only `\.`, even in CSV;
//! inrush, like COPY in 18, reads such a line as data. Against an older server those cases are
//! left out.
//!
//! 100 cases by default (about 15 seconds); `INRUSH_PROPTEST_CASES=2000 cargo test -p
//! inrush-load --test csv_fuzz` runs more. A failure is shrunk to a minimal input and printed.

mod support;

use inrush_read::csv::cases::{config, csv_case};
use proptest::prelude::*;
use proptest::test_runner::TestRunner;
use std::cell::RefCell;
use support::{assert_same_as_copy, fresh_db};

#[test]
fn arbitrary_csv_loads_as_copy_reads_it() {
    // One database for every case: each case makes its tables anew.
    let db = RefCell::new(fresh_db());
    let server_version: i32 = db
        .borrow_mut()
        .client
        .query_one("SELECT current_setting('server_version_num')::int", &[])
        .expect("server version")
        .get(0);
    let ends_at_backslash_dot = server_version < 180_000;
    let inputs = (
        csv_case(),
        prop_oneof![1..64usize, Just(1 << 20)],
        any::<bool>(),
    );
    TestRunner::new(config(100))
        .run(&inputs, |(case, block_size, force_text)| {
            let end_marker = case
                .data
                .split(|&b| b == b'\n' || b == b'\r')
                .any(|l| l == b"\\.");
            if ends_at_backslash_dot && end_marker {
                return Ok(());
            }
            let columns: Vec<String> = (0..case.columns).map(|i| format!("c{i} text")).collect();
            assert_same_as_copy(&mut db.borrow_mut(), &columns.join(", "), &case.data, |o| {
                o.csv = case.opts.clone();
                o.block_size = block_size;
                // Text COPY re-escapes every value; binary sends it as it is.
                o.force_text = force_text;
            });
            Ok(())
        })
        .unwrap_or_else(|e| panic!("{e}"));
}
