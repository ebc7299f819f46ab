//! `inrush copy --lower-case`: a database's names as PostgreSQL folds a name written without
//! quotes, so that users of the copy write `select * from orders` where the source had
//! `Orders`, as pgloader's "downcase identifiers" does.
//!
//! Only ASCII letters are lowered, as PostgreSQL's `downcase_identifier` does in a multibyte
//! encoding: anything else would make names that an unquoted spelling still misses. Names are
//! changed in the engine-neutral [`Database`], before any target designs a table, so every
//! engine's DDL follows; the source's own text (defaults, checks, index statements, user
//! types) has its quoted mentions of those names lowered with them. A name quoted there that
//! the catalog did not list (a function's) stays as it is.

use super::{Database, Expression, ForeignKey, Index, IndexPart, Key, Table, UserType};
use crate::SqlType;
use std::collections::{HashMap, HashSet};

impl Database {
    /// This database with every schema, table, column, key, index, foreign key, check and
    /// user type named in lower case (its tables in the same order); an error names two names
    /// of the tables `copied` selects that lowering would make one.
    pub fn lower_cased(&self, copied: impl Fn(&Table) -> bool) -> Result<Database, String> {
        let renamed = Renamed::of(self);
        self.collisions(copied)?;
        Ok(Database {
            engine: self.engine,
            tables: self.tables.iter().map(|t| renamed.table(t)).collect(),
            types: self.types.iter().map(|t| renamed.user_type(t)).collect(),
            not_copied: self.not_copied.clone(),
        })
    }

    /// Two tables of a schema, two columns of a table, or two of a table's keys and indexes
    /// whose names differ only in case.
    fn collisions(&self, copied: impl Fn(&Table) -> bool) -> Result<(), String> {
        let mut tables = Collisions::new("tables");
        for table in self.tables.iter().filter(|t| copied(t)) {
            let schema = table.schema.as_deref().map(lower);
            tables.add(&(schema, lower(&table.name)), &table.display_name())?;
            let mut columns = Collisions::new("columns");
            for column in &table.columns {
                columns.add(&lower(&column.name), &column.name)?;
            }
            let mut names = Collisions::new("keys and indexes");
            let keys = table.primary_key.iter().chain(&table.uniques);
            for name in keys
                .map(|k| &k.name)
                .chain(table.indexes.iter().map(|i| &i.name))
            {
                names.add(&lower(name), name)?;
            }
        }
        Ok(())
    }
}

fn lower(name: &str) -> String {
    name.to_ascii_lowercase()
}

/// Names seen lowered, to find two that become one.
struct Collisions<K> {
    kind: &'static str,
    seen: HashMap<K, String>,
}

impl<K: std::hash::Hash + Eq + Clone> Collisions<K> {
    fn new(kind: &'static str) -> Collisions<K> {
        Collisions {
            kind,
            seen: HashMap::new(),
        }
    }

    fn add(&mut self, key: &K, name: &str) -> Result<(), String> {
        match self.seen.insert(key.clone(), name.to_string()) {
            Some(other) if other != name => Err(format!(
                "--lower-case: {} {other} and {name} would both be {}: copy them with their case kept (without --lower-case)",
                self.kind,
                lower(name)
            )),
            _ => Ok(()),
        }
    }
}

/// The names the catalog lists that lowering changes: each quoted mention of one in the
/// source's text is lowered with it.
struct Renamed {
    names: HashSet<String>,
}

impl Renamed {
    fn of(database: &Database) -> Renamed {
        let mut names = HashSet::new();
        for t in &database.tables {
            names.extend(t.schema.iter().cloned());
            names.insert(t.name.clone());
            names.extend(t.columns.iter().map(|c| c.name.clone()));
            let keys = t.primary_key.iter().chain(&t.uniques);
            names.extend(keys.map(|k| k.name.clone()));
            names.extend(t.indexes.iter().map(|i| i.name.clone()));
            names.extend(t.foreign_keys.iter().map(|f| f.name.clone()));
            names.extend(t.checks.iter().map(|c| c.name.clone()));
        }
        for t in &database.types {
            names.extend(t.schema.iter().cloned());
            let parts = crate::ident::name_parts(&t.name, '"');
            names.extend(parts);
        }
        names.retain(|n| lower(n) != *n);
        Renamed { names }
    }

    fn table(&self, t: &Table) -> Table {
        let mut table = t.clone();
        table.schema = t.schema.as_deref().map(lower);
        table.name = lower(&t.name);
        for column in &mut table.columns {
            column.name = lower(&column.name);
            column.sql_type = self.sql_type(&column.sql_type);
            if let Some(super::Default::Expression(e)) = &mut column.default {
                *e = self.expression(e);
            }
            for e in [&mut column.default_sql, &mut column.generated]
                .into_iter()
                .flatten()
            {
                *e = self.expression(e);
            }
        }
        for key in table.primary_key.iter_mut().chain(&mut table.uniques) {
            *key = Key {
                name: lower(&key.name),
                columns: key.columns.iter().map(|c| lower(c)).collect(),
            };
        }
        table.indexes = t.indexes.iter().map(|i| self.index(i)).collect();
        table.foreign_keys = t.foreign_keys.iter().map(foreign_key).collect();
        for check in &mut table.checks {
            check.name = lower(&check.name);
            check.clause = self.expression(&check.clause);
        }
        table
    }

    fn index(&self, i: &Index) -> Index {
        let parts = i.parts.iter().map(|part| match part {
            IndexPart::Column {
                name,
                descending,
                prefix,
            } => IndexPart::Column {
                name: lower(name),
                descending: *descending,
                prefix: *prefix,
            },
            IndexPart::Expression(e) => IndexPart::Expression(self.expression(e)),
        });
        Index {
            name: lower(&i.name),
            unique: i.unique,
            parts: parts.collect(),
            method: i.method.clone(),
            predicate: i.predicate.as_ref().map(|e| self.expression(e)),
            definition: i.definition.as_ref().map(|e| self.expression(e)),
        }
    }

    fn user_type(&self, t: &UserType) -> UserType {
        UserType {
            schema: t.schema.as_deref().map(lower),
            name: self.rename_quoted(&t.name, "PostgreSQL"),
            create: self.expression(&t.create),
            base: t.base.as_ref().map(|b| self.sql_type(b)),
        }
    }

    /// A user type's name, as a column's type names it (`"Sales"."Mood"[]`).
    fn sql_type(&self, sql_type: &SqlType) -> SqlType {
        match sql_type {
            SqlType::Source { engine, name } => SqlType::Source {
                engine,
                name: self.rename_quoted(name, engine),
            },
            SqlType::Array(element) => SqlType::Array(Box::new(self.sql_type(element))),
            other => other.clone(),
        }
    }

    fn expression(&self, e: &Expression) -> Expression {
        Expression {
            engine: e.engine,
            sql: self.rename_quoted(&e.sql, e.engine),
        }
    }

    /// `sql` of `engine`'s dialect with each quoted name that lowering changes lowered, in
    /// the same quotes; string constants are passed over.
    fn rename_quoted(&self, sql: &str, engine: &str) -> String {
        // MariaDB reads "..." as a string and escapes with backslashes inside strings;
        // PostgreSQL and SQLite double the quote.
        let (quotes, backslash): (&[(char, char)], bool) = match engine {
            "MariaDB" => (&[('`', '`')], true),
            "SQLite" => (&[('"', '"'), ('`', '`'), ('[', ']')], false),
            _ => (&[('"', '"')], false),
        };
        let mut out = String::with_capacity(sql.len());
        let mut chars = sql.chars().peekable();
        while let Some(c) = chars.next() {
            out.push(c);
            if c == '\'' {
                while let Some(s) = chars.next() {
                    out.push(s);
                    match s {
                        '\\' if backslash => out.extend(chars.next()),
                        '\'' if chars.peek() == Some(&'\'') => out.extend(chars.next()),
                        '\'' => break,
                        _ => {}
                    }
                }
                continue;
            }
            let Some(&(_, close)) = quotes.iter().find(|(open, _)| *open == c) else {
                continue;
            };
            let mut name = String::new();
            while let Some(n) = chars.next() {
                if n == close {
                    if chars.peek() == Some(&close) && close != ']' {
                        chars.next();
                        name.push(close);
                        continue;
                    }
                    break;
                }
                name.push(n);
            }
            if self.names.contains(&name) {
                name = lower(&name);
            }
            let doubled = String::from_iter([close, close]);
            match close {
                ']' => out.push_str(&name),
                _ => out.push_str(&name.replace(close, &doubled)),
            }
            out.push(close);
        }
        out
    }
}

fn foreign_key(f: &ForeignKey) -> ForeignKey {
    ForeignKey {
        name: lower(&f.name),
        columns: f.columns.iter().map(|c| lower(c)).collect(),
        parent_schema: f.parent_schema.as_deref().map(lower),
        parent: lower(&f.parent),
        parent_columns: f.parent_columns.iter().map(|c| lower(c)).collect(),
        on_delete: f.on_delete,
        on_update: f.on_update,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::database::tests::column;
    use crate::database::{Action, Check};

    fn renamed(names: &[&str]) -> Renamed {
        Renamed {
            names: names.iter().map(|n| n.to_string()).collect(),
        }
    }

    /// A table of integer columns.
    fn table(schema: &str, name: &str, columns: &[&str]) -> Table {
        let columns = columns.iter().map(|c| column(c, SqlType::Integer));
        crate::database::tests::table(schema, name, columns.collect())
    }

    fn pg(sql: &str) -> Expression {
        Expression {
            engine: "PostgreSQL",
            sql: sql.into(),
        }
    }

    #[test]
    fn quoted_names_the_catalog_lists_are_lowered_and_nothing_else() {
        let r = renamed(&["Orders", "CustomerId", "Sales"]);
        assert_eq!(
            r.rename_quoted(
                "CREATE INDEX \"Idx\" ON \"Sales\".\"Orders\" USING btree (\"CustomerId\", \"Fn\"(x))",
                "PostgreSQL"
            ),
            "CREATE INDEX \"Idx\" ON \"sales\".\"orders\" USING btree (\"customerid\", \"Fn\"(x))"
        );
    }

    #[test]
    fn string_constants_are_passed_over_in_each_dialect() {
        let r = renamed(&["Qty", "it's"]);
        assert_eq!(
            r.rename_quoted("\"Qty\" > 0 AND note <> '\"Qty\" it''s'", "PostgreSQL"),
            "\"qty\" > 0 AND note <> '\"Qty\" it''s'"
        );
        assert_eq!(
            r.rename_quoted(
                "`Qty` > 0 and note <> 'it\\'s `Qty`' and \"Qty\" = 1",
                "MariaDB"
            ),
            "`qty` > 0 and note <> 'it\\'s `Qty`' and \"Qty\" = 1"
        );
        assert_eq!(
            r.rename_quoted("[Qty] + `Qty` + \"Qty\" + 'Qty'", "SQLite"),
            "[qty] + `qty` + \"qty\" + 'Qty'"
        );
    }

    #[test]
    fn a_quote_inside_a_quoted_name_stays_doubled() {
        let r = renamed(&["A\"B"]);
        assert_eq!(
            r.rename_quoted("\"A\"\"B\" + 1", "PostgreSQL"),
            "\"a\"\"b\" + 1"
        );
    }

    #[test]
    fn only_ascii_letters_are_lowered_as_postgresql_folds_an_unquoted_name() {
        assert_eq!(lower("ÜberTabelle"), "Übertabelle");
    }

    #[test]
    fn every_name_and_every_reference_to_it_is_lowered_together() {
        let mut orders = table("Sales", "Orders", &["Id", "CustomerId"]);
        orders.primary_key = Some(Key {
            name: "Orders_pkey".into(),
            columns: vec!["Id".into()],
        });
        orders.foreign_keys.push(ForeignKey {
            name: "Orders_Customer_fk".into(),
            columns: vec!["CustomerId".into()],
            parent_schema: Some("Sales".into()),
            parent: "Customers".into(),
            parent_columns: vec!["Id".into()],
            on_delete: Action::Cascade,
            on_update: Action::NoAction,
        });
        orders.checks.push(Check {
            name: "Positive".into(),
            clause: pg("(\"CustomerId\" > 0)"),
        });
        orders.columns[1].sql_type = SqlType::Source {
            engine: "PostgreSQL",
            name: "\"Sales\".\"Mood\"[]".into(),
        };
        let database = Database {
            engine: "PostgreSQL",
            tables: vec![orders, table("Sales", "Customers", &["Id"])],
            types: vec![UserType {
                schema: Some("Sales".into()),
                name: "\"Sales\".\"Mood\"".into(),
                create: pg("CREATE TYPE \"Sales\".\"Mood\" AS ENUM ('Happy')"),
                base: None,
            }],
            not_copied: Vec::new(),
        };
        let lowered = database.lower_cased(|_| true).unwrap();
        let orders = &lowered.tables[0];
        assert_eq!(
            (orders.schema.as_deref(), orders.name.as_str()),
            (Some("sales"), "orders")
        );
        assert_eq!(orders.columns[1].name, "customerid");
        assert_eq!(orders.primary_key.as_ref().unwrap().columns, ["id"]);
        let fk = &orders.foreign_keys[0];
        assert_eq!(
            (fk.parent.as_str(), fk.parent_columns.as_slice()),
            ("customers", &["id".to_string()][..])
        );
        assert_eq!(orders.checks[0].clause.sql, "(\"customerid\" > 0)");
        assert_eq!(
            orders.columns[1].sql_type,
            SqlType::Source {
                engine: "PostgreSQL",
                name: "\"sales\".\"mood\"[]".into()
            }
        );
        assert_eq!(
            lowered.types[0].create.sql,
            "CREATE TYPE \"sales\".\"mood\" AS ENUM ('Happy')"
        );
        assert!(lowered.user_type(&orders.columns[1].sql_type).is_some());
    }

    #[test]
    fn two_names_that_lowering_makes_one_are_refused_by_name() {
        let database = Database {
            engine: "MariaDB",
            tables: vec![table("s", "t", &["Total", "total"])],
            types: Vec::new(),
            not_copied: Vec::new(),
        };
        let error = database.lower_cased(|_| true).unwrap_err();
        assert!(
            error.contains("columns Total and total would both be total"),
            "{error}"
        );
        let database = Database {
            tables: vec![table("s", "T", &["a"]), table("s", "t", &["a"])],
            ..database
        };
        assert!(database
            .lower_cased(|_| true)
            .unwrap_err()
            .contains("tables s.T and s.t"));
    }
}
