//! MariaDB/MySQL as the target of `inrush copy`. InnoDB keeps a table's rows in its primary
//! key's order, so the key is made with the table (adding it after the rows would rebuild the
//! table) and the rows arrive in key order where the source reads them so; the secondary and
//! unique indexes follow the rows in one `ALTER TABLE` (one pass over the table, sorted builds).
//! Foreign keys come once every table is in: added with `foreign_key_checks` off (in place, no
//! table copy), then checked by a query for a child row without its parent.
//!
//! MariaDB's DDL commits by itself, so a step is recorded in the copy ledger
//! (`inrush_copy_ledger`) after it, and each statement is written to be run again
//! (`IF NOT EXISTS`): a copy that dies between the two does the step again harmlessly.

use crate::catalog::quote;
use crate::options::MysqlOptions;
use crate::target::{mariadb_type, runtime};
use inrush_core::database::{
    Column, Database, DefaultSpelling, Design, Done, IndexPart, Note, SchemaTarget, Step, Table,
};
use inrush_core::interrupt::Interrupt;
use inrush_core::query::{QueryError, QueryServer};
use inrush_core::SqlType;
use mysql_async::prelude::Queryable;
use std::sync::Arc;

const ENGINE: &str = "MariaDB";

/// The longest key InnoDB indexes whole (3072 bytes) in utf8mb4 characters of 4 bytes, kept
/// well under for keys of several columns.
const KEY_CHARS: u32 = 255;

const CREATE_LEDGER: &str = "CREATE TABLE IF NOT EXISTS inrush_copy_ledger ( \
     copy VARCHAR(255) NOT NULL, `table` VARCHAR(255) NOT NULL, step VARCHAR(255) NOT NULL, \
     at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP, PRIMARY KEY (copy, `table`, step)) \
     ENGINE=InnoDB DEFAULT CHARSET=utf8mb4";

/// A MariaDB/MySQL database a copy writes.
pub struct MysqlSchemaTarget {
    options: MysqlOptions,
}

impl MysqlSchemaTarget {
    pub fn new(options: MysqlOptions) -> MysqlSchemaTarget {
        MysqlSchemaTarget { options }
    }

    fn block_on<T>(
        &self,
        work: impl std::future::Future<Output = Result<T, QueryError>>,
    ) -> Result<T, QueryError> {
        runtime()
            .map_err(|e| failed("starting a runtime", e))?
            .block_on(work)
    }

    async fn connect(&self) -> Result<mysql_async::Conn, QueryError> {
        self.options
            .connect()
            .await
            .map_err(|e| failed(&format!("connecting to {}", self.options.describe()), e))
    }
}

fn failed(what: &str, e: impl std::fmt::Display) -> QueryError {
    QueryError {
        engine: ENGINE,
        what: what.to_string(),
        message: e.to_string(),
    }
}

/// MariaDB's DEFAULT: its own string constants, no boolean type, the current date only as an
/// expression.
const DEFAULT_SPELLING: DefaultSpelling = DefaultSpelling {
    string: literal,
    boolean_as_number: Some(inrush_encode::boolin),
    current_date: "(CURRENT_DATE)",
    parenthesized: false,
};

fn literal(text: &str) -> String {
    format!("'{}'", text.replace('\\', "\\\\").replace('\'', "''"))
}

impl SchemaTarget for MysqlSchemaTarget {
    fn engine(&self) -> &'static str {
        ENGINE
    }

    fn design(&self, table: &Table, source: &Database) -> Design {
        design(table, source)
    }

    /// MariaDB's identifiers (its manual, "Identifier Names"): at most 64 characters, none past
    /// Unicode's Basic Multilingual Plane (an emoji), no NUL, no space at the end. A schema
    /// names nothing here (one namespace), a primary key is always `PRIMARY`.
    fn refuses_name(&self, kind: &str, name: &str) -> Option<String> {
        if matches!(kind, "schema" | "primary key") {
            return None;
        }
        if name.ends_with(' ') {
            return Some("a name there cannot end in a space".into());
        }
        if name.chars().count() > 64 {
            return Some("a name there is at most 64 characters".into());
        }
        if name.chars().any(|c| c == '\0' || u32::from(c) > 0xFFFF) {
            return Some("a name there holds only characters of Unicode's Basic Multilingual Plane (no emoji), and no NUL".into());
        }
        None
    }

    fn run(
        &self,
        step: &Step,
        done: Option<Done>,
        stop: &Arc<Interrupt>,
    ) -> Result<(), QueryError> {
        self.block_on(async {
            let mut conn = self.connect().await?;
            let _watch = crate::writer::interrupt_watch(&self.options, conn.id(), stop);
            // Foreign keys are added unchecked and checked by their own query (see above).
            let session = "SET SESSION foreign_key_checks = 0";
            conn.query_drop(session)
                .await
                .map_err(|e| failed(session, e))?;
            for statement in &step.sql {
                conn.query_drop(statement)
                    .await
                    .map_err(|e| failed(statement, e))?;
            }
            if let Some(query) = &step.violation {
                let found: Option<String> = conn
                    .query_first(query)
                    .await
                    .map_err(|e| failed(query, e))?;
                if let Some(row) = found {
                    return Err(failed(&step.what, format!("a row breaks it: {row}")));
                }
            }
            if let Some(done) = done {
                conn.query_drop(CREATE_LEDGER)
                    .await
                    .map_err(|e| failed("creating inrush_copy_ledger", e))?;
                let record =
                    "INSERT IGNORE INTO inrush_copy_ledger (copy, `table`, step) VALUES (?, ?, ?)";
                conn.exec_drop(record, (done.copy, done.table, done.step))
                    .await
                    .map_err(|e| failed(record, e))?;
            }
            let _ = conn.disconnect().await;
            Ok(())
        })
    }

    fn ledger(&self, copy: &str) -> Result<Vec<(String, String)>, QueryError> {
        self.block_on(async {
            let mut conn = self.connect().await?;
            conn.query_drop(CREATE_LEDGER)
                .await
                .map_err(|e| failed("creating inrush_copy_ledger", e))?;
            let sql = "SELECT `table`, step FROM inrush_copy_ledger WHERE copy = ?";
            let rows: Vec<(String, String)> =
                conn.exec(sql, (copy,)).await.map_err(|e| failed(sql, e))?;
            let _ = conn.disconnect().await;
            Ok(rows)
        })
    }

    fn existing(&self, names: &[String]) -> Result<Vec<String>, QueryError> {
        self.block_on(async {
            let mut conn = self.connect().await?;
            let sql =
                "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE()";
            let present: Vec<String> = conn.query(sql).await.map_err(|e| failed(sql, e))?;
            let _ = conn.disconnect().await;
            Ok(names
                .iter()
                .filter(|n| present.iter().any(|p| quote(p) == **n))
                .cloned()
                .collect())
        })
    }

    fn reader(&self) -> Arc<dyn QueryServer> {
        Arc::new(crate::MysqlSource::new(self.options.clone(), false))
    }

    fn select(&self, design: &Design) -> String {
        let columns: Vec<String> = design.columns.iter().map(|c| quote(c)).collect();
        format!("SELECT {} FROM {}", columns.join(", "), design.name)
    }
}

/// How `table` of `source` is made in MariaDB (see the module's documentation).
pub fn design(table: &Table, source: &Database) -> Design {
    let same = source.engine == ENGINE;
    let name = quote(&table.name);
    let mut design = Design {
        name: name.clone(),
        empty: Some(format!("TRUNCATE TABLE {name}")),
        ..Design::default()
    };
    // Columns of keys, unique or foreign, which InnoDB indexes whole.
    let keys = table.primary_key.iter().chain(&table.uniques);
    let keyed: Vec<&str> = keys
        .flat_map(|k| k.columns.iter().map(String::as_str))
        .chain(
            table
                .foreign_keys
                .iter()
                .flat_map(|k| k.columns.iter().map(String::as_str)),
        )
        .collect();
    let mut definitions = Vec::new();
    for column in &table.columns {
        let (definition, copied) = column_definition(
            column,
            keyed.contains(&column.name.as_str()),
            same,
            &mut design.notes,
        );
        definitions.push(definition);
        if copied {
            design.columns.push(column.name.clone());
        }
    }
    let list = |columns: &[String]| {
        let quoted: Vec<String> = columns.iter().map(|c| quote(c)).collect();
        quoted.join(", ")
    };
    if let Some(key) = &table.primary_key {
        definitions.push(format!("PRIMARY KEY ({})", list(&key.columns)));
    }
    // AUTO_INCREMENT must lead a key.
    for column in table.columns.iter().filter(|c| c.identity.is_some()) {
        let leads = table
            .primary_key
            .iter()
            .any(|k| k.columns.first() == Some(&column.name));
        if !leads {
            definitions.push(format!("KEY ({})", quote(&column.name)));
        }
    }
    let comment = table
        .comment
        .as_ref()
        .map(|c| format!(" COMMENT={}", literal(c)))
        .unwrap_or_default();
    design.create.push(format!(
        "CREATE TABLE {name} ({}) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4{comment}",
        definitions.join(", ")
    ));
    let mut indexes = Vec::new();
    for key in &table.uniques {
        indexes.push(format!(
            "ADD UNIQUE KEY IF NOT EXISTS {} ({})",
            quote(&key.name),
            list(&key.columns)
        ));
    }
    for index in &table.indexes {
        match index_definition(index, table, source, same) {
            Ok(definition) => indexes.push(definition),
            Err(note) => design.notes.push(note),
        }
    }
    if !indexes.is_empty() {
        design.after_rows.push(Step::new(
            "keys and indexes",
            vec![format!("ALTER TABLE {name} {}", indexes.join(", "))],
        ));
    }
    for check in &table.checks {
        if !same {
            design.notes.push(Note::left_out(format!(
                "check {} of {}: {}'s {}",
                check.name,
                table.display_name(),
                check.clause.engine,
                check.clause.sql
            )));
            continue;
        }
        // Its ALTER waits on the index ALTER's metadata lock: after the builds, not among them.
        design.after_keys.push(Step::new(
            format!("check {}", check.name),
            vec![format!(
                "ALTER TABLE {name} ADD CONSTRAINT IF NOT EXISTS {} CHECK ({})",
                quote(&check.name),
                check.clause.sql
            )],
        ));
    }
    for key in &table.foreign_keys {
        let parent = quote(&key.parent);
        let joined: Vec<String> = key
            .columns
            .iter()
            .zip(&key.parent_columns)
            .map(|(c, p)| format!("p.{} = c.{}", quote(p), quote(c)))
            .collect();
        let present: Vec<String> = key
            .columns
            .iter()
            .map(|c| format!("c.{} IS NOT NULL", quote(c)))
            .collect();
        let shown: Vec<String> = key
            .columns
            .iter()
            .map(|c| format!("CAST(c.{} AS CHAR)", quote(c)))
            .collect();
        let mut step = Step::new(
            format!("foreign key {}", key.name),
            vec![format!(
                "ALTER TABLE {name} ADD CONSTRAINT {} FOREIGN KEY IF NOT EXISTS ({}) REFERENCES {parent} ({}) ON DELETE {} ON UPDATE {}",
                quote(&key.name),
                list(&key.columns),
                list(&key.parent_columns),
                key.on_delete.sql(),
                key.on_update.sql()
            )],
        );
        step.violation = Some(format!(
            "SELECT CONCAT_WS(', ', {}) FROM {name} c WHERE {} AND NOT EXISTS (SELECT 1 FROM {parent} p WHERE {}) LIMIT 1",
            shown.join(", "),
            present.join(" AND "),
            joined.join(" AND ")
        ));
        step.needs.push(parent);
        design.after_keys.push(step);
    }
    design
}

/// A column of `CREATE TABLE`, and whether its values are copied. `keyed`: part of a key
/// (primary, unique or foreign), which a text column can only be under a length.
fn column_definition(
    column: &Column,
    keyed: bool,
    same: bool,
    notes: &mut Vec<Note>,
) -> (String, bool) {
    let type_name = match &column.sql_type {
        SqlType::TimestampTz(digits) => {
            notes.push(Note::translated(format!(
                "column {}: times with a zone became DATETIME in UTC",
                column.name
            )));
            format!("DATETIME({})", digits.unwrap_or(6))
        }
        SqlType::Text | SqlType::Varchar(None) if keyed => {
            notes.push(Note::translated(format!(
                "column {}: text in a key became VARCHAR({KEY_CHARS}); a longer value is a bad row",
                column.name
            )));
            format!("VARCHAR({KEY_CHARS})")
        }
        SqlType::Source { engine, name } if *engine == "mariadb" && same => name.clone(),
        other => {
            let (type_name, _) =
                mariadb_type(&column.name, other).unwrap_or_else(|_| ("LONGTEXT".into(), None));
            if let SqlType::Source { engine, name } = other {
                notes.push(Note::translated(format!(
                    "column {}: {engine}'s {name} became {type_name}",
                    column.name
                )));
            }
            type_name
        }
    };
    let mut text = format!("{} {type_name}", quote(&column.name));
    let mut copied = true;
    if let Some(generated) = &column.generated {
        match same {
            true => {
                text.push_str(&format!(" AS ({}) PERSISTENT", generated.sql));
                copied = false;
            }
            false => notes.push(Note::translated(format!(
                "generated column {}: its values copied, its expression ({}'s) left out",
                column.name, generated.engine
            ))),
        }
    }
    if column.not_null {
        text.push_str(" NOT NULL");
    }
    if column.identity.is_some() {
        text.push_str(" AUTO_INCREMENT");
    }
    let (default, note) = column.default_clause(same, &DEFAULT_SPELLING);
    text.push_str(&default);
    notes.extend(note);
    if let Some(comment) = &column.comment {
        text.push_str(&format!(" COMMENT {}", literal(comment)));
    }
    (text, copied)
}

/// `ADD INDEX ...` for `index`, or the note of why it is left out.
fn index_definition(
    index: &inrush_core::database::Index,
    table: &Table,
    source: &Database,
    same: bool,
) -> Result<String, Note> {
    let left_out = |why: String| {
        Note::left_out(format!(
            "index {} of {}: {why}",
            index.name,
            table.display_name()
        ))
    };
    let kind = match (&index.method, same) {
        (None, _) => {
            if index.unique {
                "UNIQUE INDEX"
            } else {
                "INDEX"
            }
        }
        (Some(method), true) if method == "FULLTEXT" => "FULLTEXT INDEX",
        (Some(method), true) if method == "SPATIAL" => "SPATIAL INDEX",
        (Some(method), _) => return Err(left_out(format!("MariaDB has no {method} index"))),
    };
    if index.predicate.is_some() {
        return Err(left_out("MariaDB has no partial index".into()));
    }
    let mut parts = Vec::new();
    for part in &index.parts {
        match part {
            IndexPart::Column {
                name,
                descending,
                prefix,
            } => {
                let text_column = table.columns.iter().any(|c| {
                    &c.name == name
                        && matches!(
                            c.sql_type,
                            SqlType::Text | SqlType::Varchar(None) | SqlType::Json | SqlType::Bytes
                        )
                });
                let prefix = match (prefix, text_column && kind != "FULLTEXT INDEX") {
                    (Some(n), _) => format!("({n})"),
                    // A long text is indexed by its first characters.
                    (None, true) => format!("({KEY_CHARS})"),
                    (None, false) => String::new(),
                };
                let order = if *descending { " DESC" } else { "" };
                parts.push(format!("{}{prefix}{order}", quote(name)));
            }
            IndexPart::Expression(_) => {
                return Err(left_out(format!("its expression is {}'s", source.engine)))
            }
        }
    }
    Ok(format!(
        "ADD {kind} IF NOT EXISTS {} ({})",
        quote(&index.name),
        parts.join(", ")
    ))
}
