//! Which table column each input field feeds.

use crate::{Error, Result};
use inrush_core::TargetColumn;

/// Maps input fields to table columns: `explicit` (`--columns`) wins, then the header's names
/// (exact match, else a unique case-insensitive match), else every column in table order.
/// The header comes with what it is, for messages (`the header of orders.csv`). Columns the
/// input does not name take their defaults.
pub fn map_columns(
    columns: &[TargetColumn],
    table: &str,
    explicit: Option<&[String]>,
    header: Option<(&[String], &str)>,
) -> Result<Vec<TargetColumn>> {
    let (names, source): (Vec<String>, &str) = match (explicit, header) {
        (Some(cols), _) => (cols.to_vec(), "--columns"),
        (None, Some((header, origin))) => (header.to_vec(), origin),
        (None, None) => return Ok(columns.to_vec()),
    };
    let mut mapped: Vec<TargetColumn> = Vec::with_capacity(names.len());
    for name in &names {
        let column =
            position_by_name(columns.iter().map(|c| c.name.as_str()), name).map(|i| &columns[i]);
        let Some(column) = column else {
            return Err(Error::Columns(format!(
                "column {name:?} named by {source} is not a column of {} (it has: {})",
                table,
                columns
                    .iter()
                    .map(|c| c.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        };
        if mapped.iter().any(|m| m.name == column.name) {
            return Err(Error::Columns(format!(
                "column {:?} is named twice by {source}",
                column.name
            )));
        }
        mapped.push(column.clone());
    }
    Ok(mapped)
}

/// Where `name` is among `names`: an exact match, else the one case-insensitive match (none
/// when several differ only in case).
pub fn position_by_name<'n>(
    names: impl Iterator<Item = &'n str> + Clone,
    name: &str,
) -> Option<usize> {
    names.clone().position(|n| n == name).or_else(|| {
        let mut folded = names
            .enumerate()
            .filter(|(_, n)| n.eq_ignore_ascii_case(name));
        match (folded.next(), folded.next()) {
            (Some((i, _)), None) => Some(i),
            _ => None,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use inrush_core::SqlType;

    fn table() -> Vec<TargetColumn> {
        let col = |name: &str| TargetColumn {
            name: name.into(),
            type_sql: "integer".into(),
            sql_type: SqlType::Integer,
            not_null: false,
        };
        vec![col("id"), col("Name"), col("qty")]
    }

    fn names(cols: &[TargetColumn]) -> Vec<&str> {
        cols.iter().map(|c| c.name.as_str()).collect()
    }

    #[test]
    fn header_names_map_by_exact_then_folded_case() {
        let header = vec!["qty".to_string(), "name".to_string()];
        assert_eq!(
            names(
                &map_columns(
                    &table(),
                    "\"public\".\"t\"",
                    None,
                    Some((&header, "the header of x.csv"))
                )
                .unwrap()
            ),
            ["qty", "Name"]
        );
    }

    #[test]
    fn explicit_columns_win_and_default_is_all() {
        let cols = vec!["id".to_string()];
        let header = vec!["zzz".to_string()];
        assert_eq!(
            names(
                &map_columns(
                    &table(),
                    "\"public\".\"t\"",
                    Some(&cols),
                    Some((&header, "x"))
                )
                .unwrap()
            ),
            ["id"]
        );
        assert_eq!(
            names(&map_columns(&table(), "\"public\".\"t\"", None, None).unwrap()),
            ["id", "Name", "qty"]
        );
    }

    #[test]
    fn unknown_and_duplicate_names_are_refused() {
        let err = map_columns(
            &table(),
            "\"public\".\"t\"",
            None,
            Some((&["nope".to_string()], "the header of x.csv")),
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("\"nope\" named by the header of x.csv is not a column"),
            "{err}"
        );
        let err = map_columns(
            &table(),
            "\"public\".\"t\"",
            Some(&["id".into(), "ID".into()]),
            None,
        )
        .unwrap_err()
        .to_string();
        assert!(err.contains("named twice"), "{err}");
    }
}
