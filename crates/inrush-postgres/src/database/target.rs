//! PostgreSQL as the target of `inrush copy`: a source table designed as PostgreSQL DDL, in the
//! order that loads fastest and still ends with every key (pgcopydb's order): the table bare
//! (after the source's enums and domains it uses, from a PostgreSQL source),
//! then its rows, then its primary key, unique constraints and indexes while other tables still
//! load, then, once every table is in, foreign keys added `NOT VALID` and validated, and
//! numbering restarted past the copied maximum. DDL is transactional here, so each step commits
//! with its record in the copy ledger (`inrush.copy_ledger`), and a rerun never does it twice.

use super::source::ENGINE;
use crate::{query_error, quote_ident, ConnectOptions, Error};
use inrush_core::database::{
    Column, Database, DefaultSpelling, Design, Done, Identity, IndexNames, Note, SchemaTarget,
    Step, Table, Unportable,
};
use inrush_core::ident::sql_string;
use inrush_core::interrupt::Interrupt;
use inrush_core::query::QueryError;
use inrush_core::SqlType;
use std::sync::Arc;
use std::time::Duration;

/// PostgreSQL's DEFAULT: standard string constants, read by the column's type (`'t'` too).
const DEFAULT_SPELLING: DefaultSpelling = DefaultSpelling {
    string: sql_string,
    boolean_as_number: None,
    current_date: "CURRENT_DATE",
    parenthesized: false,
};

/// A PostgreSQL database a copy writes.
pub struct PgSchemaTarget {
    options: ConnectOptions,
}

impl PgSchemaTarget {
    pub fn new(options: ConnectOptions) -> PgSchemaTarget {
        PgSchemaTarget { options }
    }

    fn connect(&self) -> Result<postgres::Client, QueryError> {
        self.options.connect_blocking().map_err(target_error)
    }
}

fn target_error(e: Error) -> QueryError {
    QueryError {
        engine: ENGINE,
        what: String::new(),
        message: e.to_string(),
    }
}

/// The copy ledger (made under inrush's lock: `crate::own`).
const CREATE_LEDGER: &str = "CREATE SCHEMA IF NOT EXISTS inrush; \
     CREATE TABLE IF NOT EXISTS inrush.copy_ledger (copy text NOT NULL, \"table\" text NOT NULL, \
       step text NOT NULL, at timestamptz NOT NULL DEFAULT now(), \
       PRIMARY KEY (copy, \"table\", step))";

impl SchemaTarget for PgSchemaTarget {
    fn engine(&self) -> &'static str {
        ENGINE
    }

    fn design(&self, table: &Table, source: &Database) -> Design {
        design(table, source)
    }

    /// PostgreSQL cuts a longer name to its first 63 bytes (NAMEDATALEN - 1), with a notice
    /// only, so two names could become one, and a key's name is not its source's.
    fn refuses_name(&self, _: &str, name: &str) -> Option<String> {
        (name.len() > 63).then(|| format!("{} bytes, where a name there is at most 63", name.len()))
    }

    fn run(
        &self,
        step: &Step,
        done: Option<Done>,
        stop: &Arc<Interrupt>,
    ) -> Result<(), QueryError> {
        let mut client = self.connect()?;
        let (options, token) = (self.options.clone(), client.cancel_token());
        let _watch = stop.watch(Duration::from_millis(500), move || {
            // Best effort, as every cancel: the step ends when its statement does anyway.
            let _ = options.cancel_blocking(&token);
        });
        let mut tx = client
            .transaction()
            .map_err(query_error("BEGIN"))
            .map_err(target_error)?;
        // Index builds sort in memory up to this (the server's default is 64MB).
        let memory = "SELECT set_config('maintenance_work_mem', greatest(pg_size_bytes(current_setting('maintenance_work_mem')), pg_size_bytes('256MB'))::text || 'B', true)";
        tx.batch_execute(memory)
            .map_err(query_error(memory))
            .map_err(target_error)?;
        for statement in &step.sql {
            tx.batch_execute(statement)
                .map_err(query_error(statement.as_str()))
                .map_err(target_error)?;
        }
        if let Some(query) = &step.violation {
            let found = tx
                .query_opt(query.as_str(), &[])
                .map_err(query_error(query.as_str()))
                .map_err(target_error)?;
            if let Some(row) = found {
                return Err(QueryError {
                    engine: ENGINE,
                    what: step.what.clone(),
                    message: format!("a row breaks it: {}", row.get::<_, String>(0)),
                });
            }
        }
        if let Some(done) = done {
            let record =
                "INSERT INTO inrush.copy_ledger (copy, \"table\", step) VALUES ($1, $2, $3) \
                          ON CONFLICT DO NOTHING";
            tx.execute(record, &[&done.copy, &done.table, &done.step])
                .map_err(query_error(record))
                .map_err(target_error)?;
        }
        tx.commit()
            .map_err(query_error("COMMIT"))
            .map_err(target_error)
    }

    fn ledger(&self, copy: &str) -> Result<Vec<(String, String)>, QueryError> {
        let mut client = self.connect()?;
        client
            .batch_execute(&crate::own::locked(CREATE_LEDGER))
            .map_err(query_error("creating inrush.copy_ledger"))
            .map_err(target_error)?;
        let sql = "SELECT \"table\", step FROM inrush.copy_ledger WHERE copy = $1";
        let rows = client
            .query(sql, &[&copy])
            .map_err(query_error(sql))
            .map_err(target_error)?;
        Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
    }

    fn existing(&self, names: &[String]) -> Result<Vec<String>, QueryError> {
        let mut client = self.connect()?;
        let sql = "SELECT n FROM unnest($1::text[]) n WHERE to_regclass(n) IS NOT NULL";
        let rows = client
            .query(sql, &[&names])
            .map_err(query_error(sql))
            .map_err(target_error)?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    fn reader(&self) -> std::sync::Arc<dyn inrush_core::query::QueryServer> {
        std::sync::Arc::new(self.options.clone())
    }

    fn select(&self, design: &Design) -> String {
        let columns: Vec<String> = design.columns.iter().map(|c| quote_ident(c)).collect();
        format!("SELECT {} FROM {}", columns.join(", "), design.name)
    }
}

/// How `table` of `source` is made in PostgreSQL (see the module's documentation).
pub fn design(table: &Table, source: &Database) -> Design {
    let same = source.engine == ENGINE;
    // Another engine's single namespace lands in the target's own (its search_path).
    let schema = table.schema.as_deref().filter(|_| same);
    let name = match schema {
        Some(schema) => format!("{}.{}", quote_ident(schema), quote_ident(&table.name)),
        None => quote_ident(&table.name),
    };
    // PostgreSQL cuts names at 63 bytes.
    let names = IndexNames::new(table, source, ENGINE, 63);
    let mut design = Design {
        name: name.clone(),
        // Measured on TPC-H lineitem (6M rows, 2 cores): loaded frozen, its two index builds
        // and two foreign key checks took 10.5 s instead of 17 s; the one stream this needs
        // loads about as fast as two (from PostgreSQL 15.8 s against 14.7 s, from MariaDB 20.6
        // against 20.8 s), and the table's key still cuts the reads into parallel queries.
        empty: None,
        ..Design::default()
    };
    design.create.extend(schema.and_then(make_schema));
    if same {
        make_types(table, source, &mut design.create);
    }
    let mut columns = Vec::new();
    let mut identities = Vec::new();
    for column in &table.columns {
        let (definition, copied) = column_definition(column, same, &mut design.notes);
        columns.push(definition);
        if copied {
            design.columns.push(column.name.clone());
        }
        if column.identity.is_some() {
            identities.push(column.name.clone());
        }
    }
    design
        .create
        .push(format!("CREATE TABLE {name} ({})", columns.join(", ")));
    if let Some(comment) = &table.comment {
        design.create.push(format!(
            "COMMENT ON TABLE {name} IS {}",
            sql_string(comment)
        ));
    }
    for column in &table.columns {
        if let Some(comment) = &column.comment {
            design.create.push(format!(
                "COMMENT ON COLUMN {name}.{} IS {}",
                quote_ident(&column.name),
                sql_string(comment)
            ));
        }
    }
    let list = |columns: &[String]| {
        let quoted: Vec<String> = columns.iter().map(|c| quote_ident(c)).collect();
        quoted.join(", ")
    };
    // A key's index is built in `after_rows`, beside the table's other builds (ADD PRIMARY KEY
    // would hold the table's ACCESS EXCLUSIVE lock for the whole sort, so they could only
    // follow it), and the key is put on it in `after_keys`, in a moment.
    let keys = table.primary_key.iter().map(|k| (k, "pkey", "PRIMARY KEY"));
    for (key, suffix, kind) in keys.chain(table.uniques.iter().map(|k| (k, "key", "UNIQUE"))) {
        let bare = names.key(&key.name, suffix);
        let key_name = quote_ident(&bare);
        let what = format!("{} {bare}", kind.to_lowercase());
        design.after_rows.push(Step::new(
            format!("index of {what}"),
            vec![format!(
                "CREATE UNIQUE INDEX {key_name} ON {name} ({})",
                list(&key.columns)
            )],
        ));
        design.after_keys.push(Step::new(
            what,
            vec![format!(
                "ALTER TABLE {name} ADD CONSTRAINT {key_name} {kind} USING INDEX {key_name}"
            )],
        ));
    }
    index_steps(&mut design, table, source, &names, &name);
    for check in &table.checks {
        let clause = match same {
            true => check.clause.sql.clone(),
            false => format!("({})", requote(&check.clause.sql)),
        };
        // ACCESS EXCLUSIVE while it reads every row: after the builds, not among them.
        design.after_keys.push(Step {
            what: format!("check {}", check.name),
            sql: vec![format!(
                "ALTER TABLE {name} ADD CONSTRAINT {} CHECK {clause}",
                quote_ident(&names.key(&check.name, "check"))
            )],
            optional: !same,
            violation: None,
            needs: Vec::new(),
        });
    }
    for key in &table.foreign_keys {
        let parent_schema = key.parent_schema.as_deref().filter(|_| same);
        let parent = match parent_schema {
            Some(schema) => format!("{}.{}", quote_ident(schema), quote_ident(&key.parent)),
            None => quote_ident(&key.parent),
        };
        let key_name = quote_ident(&names.key(&key.name, "fkey"));
        let mut step = Step::new(
            format!("foreign key {}", key.name),
            vec![
                format!(
                    "ALTER TABLE {name} ADD CONSTRAINT {key_name} FOREIGN KEY ({}) REFERENCES {parent} ({}) ON DELETE {} ON UPDATE {} NOT VALID",
                    list(&key.columns),
                    list(&key.parent_columns),
                    key.on_delete.sql(),
                    key.on_update.sql()
                ),
                format!("ALTER TABLE {name} VALIDATE CONSTRAINT {key_name}"),
            ],
        );
        step.needs.push(parent);
        design.after_keys.push(step);
    }
    for column in identities {
        design.after_keys.push(Step::new(
            format!("numbering of {column}"),
            vec![format!(
                "SELECT setval(pg_get_serial_sequence({}, {}), max({})) FROM {name}",
                sql_string(&name),
                sql_string(&column),
                quote_ident(&column)
            )],
        ));
    }
    design
}

/// The steps that build `table`'s indexes after its rows (named by `names`), in PostgreSQL's
/// words, or the notes that say why one is left out; `name` is the table, quoted.
fn index_steps(
    design: &mut Design,
    table: &Table,
    source: &Database,
    names: &IndexNames,
    name: &str,
) {
    let same = source.engine == ENGINE;
    for index in &table.indexes {
        let index_name = names.key(&index.name, "idx");
        // A prefix is an expression, which needs its own parentheses.
        let column = |c: &str, prefix: Option<u32>| match prefix {
            Some(n) => format!("(left({}, {n}))", quote_ident(c)),
            None => quote_ident(c),
        };
        let (index_of, table_name) = (&index.name, table.display_name());
        match index.create(same, &quote_ident(&index_name), name, column) {
            Ok(sql) => {
                for (column, n) in index.prefixes() {
                    design.notes.push(Note::translated(format!(
                        "prefix index {index_of} of {table_name}: on left({column}, {n})"
                    )));
                }
                let what = format!("index {index_name}");
                design.after_rows.push(Step::new(what, vec![sql]));
            }
            Err(Unportable::Method(method)) => design.notes.push(Note::left_out(format!(
                "{method} index {index_of} of {table_name}: PostgreSQL has no such index"
            ))),
            Err(_) => design.notes.push(Note::left_out(format!(
                "index {index_of} of {table_name}: its expression is {}'s",
                source.engine
            ))),
        }
    }
}

/// Appends what makes the user types `table`'s columns use, each after the types it needs.
fn make_types(table: &Table, source: &Database, create: &mut Vec<String>) {
    for column in &table.columns {
        for user_type in source.types_needed(&column.sql_type) {
            let schema = user_type.schema.as_deref().and_then(make_schema);
            for statement in schema
                .into_iter()
                .chain([unless_there(&user_type.create.sql)])
            {
                if !create.contains(&statement) {
                    create.push(statement);
                }
            }
        }
    }
}

/// The statement that makes `schema` unless it is there; none for `public`: even with IF NOT
/// EXISTS, CREATE SCHEMA needs the right to create schemas, which a user loading into `public`
/// may not have.
fn make_schema(schema: &str) -> Option<String> {
    (schema != "public").then(|| format!("CREATE SCHEMA IF NOT EXISTS {}", quote_ident(schema)))
}

/// `sql`, which makes a type, done unless the type is there: an earlier table of the copy
/// (or an earlier run of it) may have made it, and CREATE TYPE has no IF NOT EXISTS.
fn unless_there(sql: &str) -> String {
    let mut tag = "$inrush$".to_string();
    while sql.contains(&tag) {
        tag.insert(tag.len() - 1, '_');
    }
    format!("DO {tag} BEGIN {sql}; EXCEPTION WHEN duplicate_object THEN NULL; END {tag}")
}

/// A column of `CREATE TABLE`, and whether its values are copied (a generated column's are
/// computed here).
fn column_definition(column: &Column, same: bool, notes: &mut Vec<Note>) -> (String, bool) {
    let mut type_name = crate::sql_type::name(&column.sql_type);
    if let SqlType::Source { engine, name } = &column.sql_type {
        if !same {
            notes.push(Note::translated(format!(
                "column {}: {engine}'s {name} became text",
                column.name
            )));
        }
    }
    let mut text = quote_ident(&column.name);
    let mut copied = true;
    match column.identity {
        Some(Identity::Serial) => {
            type_name = match column.sql_type {
                SqlType::SmallInt => "smallserial".into(),
                SqlType::Integer => "serial".into(),
                _ => "bigserial".into(),
            };
        }
        Some(identity) => {
            let how = match identity {
                Identity::Always => "ALWAYS",
                _ => "BY DEFAULT",
            };
            type_name.push_str(&format!(" GENERATED {how} AS IDENTITY"));
        }
        None => {}
    }
    text.push(' ');
    text.push_str(&type_name);
    if column.not_null {
        text.push_str(" NOT NULL");
    }
    if let Some(generated) = &column.generated {
        match same {
            true => {
                text.push_str(&format!(" GENERATED ALWAYS AS ({}) STORED", generated.sql));
                copied = false;
            }
            false => notes.push(Note::translated(format!(
                "generated column {}: its values copied, its expression ({}'s {}) left out",
                column.name, generated.engine, generated.sql
            ))),
        }
    }
    // From PostgreSQL, the default as its catalog writes it.
    match (&column.default_sql, same && column.identity.is_none()) {
        (Some(written), true) => text.push_str(&format!(" DEFAULT {}", written.sql)),
        _ => {
            let (default, note) = column.default_clause(same, &DEFAULT_SPELLING);
            text.push_str(&default);
            notes.extend(note);
        }
    }
    (text, copied)
}

/// Another dialect's `` `name` `` as `"name"`: what a CHECK clause of MariaDB needs to read
/// here (the rest of it may still be refused; its step is optional).
fn requote(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut chars = sql.chars().peekable();
    let mut in_string = false;
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_string = !in_string;
                out.push(c);
            }
            '`' if !in_string => {
                let mut name = String::new();
                while let Some(n) = chars.next() {
                    if n == '`' {
                        if chars.peek() == Some(&'`') {
                            chars.next();
                            name.push('`');
                            continue;
                        }
                        break;
                    }
                    name.push(n);
                }
                out.push_str(&quote_ident(&name));
            }
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use inrush_core::database::{
        Action, Check, Default, Expression, ForeignKey, Index, IndexPart, Key,
    };

    fn column(name: &str, sql_type: SqlType) -> Column {
        Column {
            name: name.into(),
            sql_type,
            not_null: false,
            default: None,
            default_sql: None,
            identity: None,
            generated: None,
            comment: None,
        }
    }

    fn mariadb_orders() -> Table {
        let mut id = column("id", SqlType::Integer);
        id.identity = Some(Identity::ByDefault);
        id.not_null = true;
        let mut status = column("status", SqlType::Varchar(Some(10)));
        status.default = Some(Default::Literal("it's new".into()));
        let mut total = column("total", SqlType::Numeric(Some((10, 2))));
        total.generated = Some(Expression {
            engine: "MariaDB",
            sql: "`qty` * `price`".into(),
        });
        Table {
            schema: None,
            name: "orders".into(),
            columns: vec![id, status, total, column("customer", SqlType::Integer)],
            primary_key: Some(Key {
                name: "PRIMARY".into(),
                columns: vec!["id".into()],
            }),
            uniques: Vec::new(),
            indexes: vec![Index {
                name: "by_status".into(),
                unique: false,
                parts: vec![IndexPart::Column {
                    name: "status".into(),
                    descending: false,
                    prefix: Some(4),
                }],
                method: None,
                predicate: None,
                definition: None,
            }],
            foreign_keys: vec![ForeignKey {
                name: "orders_customer".into(),
                columns: vec!["customer".into()],
                parent_schema: Some("shop".into()),
                parent: "customers".into(),
                parent_columns: vec!["id".into()],
                on_delete: Action::Cascade,
                on_update: Action::NoAction,
            }],
            checks: vec![Check {
                name: "positive".into(),
                clause: Expression {
                    engine: "MariaDB",
                    sql: "`customer` > 0 and `status` <> 'a`b'".into(),
                },
            }],
            comment: Some("all orders".into()),
            rows_estimate: 0,
            bytes: 0,
        }
    }

    #[test]
    fn a_mariadb_table_becomes_postgresql_ddl_in_load_order() {
        let table = mariadb_orders();
        let source = Database {
            engine: "MariaDB",
            tables: vec![table.clone()],
            types: Vec::new(),
            not_copied: Vec::new(),
        };
        let design = design(&table, &source);
        assert_eq!(design.name, "\"orders\"");
        assert_eq!(design.columns, ["id", "status", "total", "customer"]);
        assert_eq!(design.create, [
            "CREATE TABLE \"orders\" (\"id\" integer GENERATED BY DEFAULT AS IDENTITY NOT NULL, \"status\" character varying(10) DEFAULT 'it''s new', \"total\" numeric(10,2), \"customer\" integer)",
            "COMMENT ON TABLE \"orders\" IS 'all orders'",
        ]);
        let after: Vec<&str> = design
            .after_rows
            .iter()
            .flat_map(|s| s.sql.iter().map(String::as_str))
            .collect();
        // Builds that take no lock against each other: they run at once.
        assert_eq!(
            after,
            [
                "CREATE UNIQUE INDEX \"orders_pkey\" ON \"orders\" (\"id\")",
                "CREATE INDEX \"by_status\" ON \"orders\" ((left(\"status\", 4)))",
            ]
        );
        let last: Vec<&str> = design
            .after_keys
            .iter()
            .flat_map(|s| s.sql.iter().map(String::as_str))
            .collect();
        assert_eq!(last, [
            "ALTER TABLE \"orders\" ADD CONSTRAINT \"orders_pkey\" PRIMARY KEY USING INDEX \"orders_pkey\"",
            "ALTER TABLE \"orders\" ADD CONSTRAINT \"positive\" CHECK (\"customer\" > 0 and \"status\" <> 'a`b')",
            "ALTER TABLE \"orders\" ADD CONSTRAINT \"orders_customer\" FOREIGN KEY (\"customer\") REFERENCES \"customers\" (\"id\") ON DELETE CASCADE ON UPDATE NO ACTION NOT VALID",
            "ALTER TABLE \"orders\" VALIDATE CONSTRAINT \"orders_customer\"",
            "SELECT setval(pg_get_serial_sequence('\"orders\"', 'id'), max(\"id\")) FROM \"orders\"",
        ]);
        assert!(design.after_keys[1].optional);
        assert_eq!(design.after_keys[2].needs, ["\"customers\""]);
        let notes: Vec<&str> = design.notes.iter().map(|n| n.what.as_str()).collect();
        assert_eq!(notes, [
            "generated column total: its values copied, its expression (MariaDB's `qty` * `price`) left out",
            "prefix index by_status of orders: on left(status, 4)",
        ]);
    }

    #[test]
    fn names_two_tables_share_are_made_unique_by_their_table() {
        let mut a = mariadb_orders();
        a.foreign_keys.clear();
        a.checks.clear();
        let mut b = a.clone();
        b.name = "returns".into();
        let source = Database {
            engine: "MariaDB",
            tables: vec![a.clone(), b.clone()],
            types: Vec::new(),
            not_copied: Vec::new(),
        };
        let made: Vec<String> = [a, b]
            .iter()
            .flat_map(|t| design(t, &source).after_rows)
            .map(|s| s.what)
            .collect();
        assert_eq!(
            made,
            [
                "index of primary key orders_pkey",
                "index orders_by_status",
                "index of primary key returns_pkey",
                "index returns_by_status",
            ]
        );
    }

    #[test]
    fn requote_turns_backquoted_names_into_double_quoted_ones_outside_strings() {
        assert_eq!(requote("`a` > 0"), "\"a\" > 0");
        assert_eq!(requote("`we``ird` = 'x`y'"), "\"we`ird\" = 'x`y'");
        assert_eq!(requote("`q\"t` is null"), "\"q\"\"t\" is null");
    }
}
