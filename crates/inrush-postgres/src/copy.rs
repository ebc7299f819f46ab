//! COPY statements: built here, with every identifier quoted, and nowhere else.

use crate::quote_ident;
#[cfg(test)]
use crate::TableInfo;

pub use inrush_encode::CopyFormat;

/// `COPY "s"."t" ("a", "b") FROM STDIN (FORMAT ...)`. `target` is an already quoted, qualified
/// name (a table's `qualified()`). With `freeze`, rows are written frozen: only allowed in the
/// transaction that created or truncated the table.
pub fn copy_from_stdin(
    target: &str,
    columns: &[String],
    format: CopyFormat,
    freeze: bool,
) -> String {
    let cols: Vec<String> = columns.iter().map(|c| quote_ident(c)).collect();
    format!(
        "COPY {target} ({}) FROM STDIN (FORMAT {}{})",
        cols.join(", "),
        format.name(),
        if freeze { ", FREEZE" } else { "" }
    )
}

/// The row number COPY names in its error context (`COPY t, line 42, column c: ...`): the
/// 1-based position of the row in that stream.
pub fn row_in_error_context(context: &str) -> Option<u64> {
    let after = context.split(", line ").nth(1)?;
    let digits: String = after.chars().take_while(|c| c.is_ascii_digit()).collect();
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statement_quotes_everything() {
        let table = TableInfo {
            oid: 1,
            schema: "Sales".into(),
            name: "order\"s".into(),
            columns: vec![],
            partitioned: false,
        };
        let sql = copy_from_stdin(
            &table.qualified(),
            &["Id".into(), "x y".into()],
            CopyFormat::Binary,
            false,
        );
        assert!(
            copy_from_stdin(&table.qualified(), &["Id".into()], CopyFormat::Text, true)
                .ends_with("(FORMAT text, FREEZE)")
        );
        assert_eq!(
            sql,
            r#"COPY "Sales"."order""s" ("Id", "x y") FROM STDIN (FORMAT binary)"#
        );
    }

    #[test]
    fn error_context_row() {
        assert_eq!(
            row_in_error_context("COPY t, line 42, column a: \"x\""),
            Some(42)
        );
        assert_eq!(row_in_error_context("COPY t, line 7"), Some(7));
        assert_eq!(row_in_error_context("something else"), None);
    }
}
