//! A whole database as `inrush copy` moves it, in no engine's spelling: its tables with their
//! columns, keys, indexes, foreign keys, checks and comments, and what a copy leaves behind
//! (views, routines, triggers, events), by name. A source engine reads it from its own catalog
//! ([`SchemaSource`]); a target engine writes it as its own DDL ([`SchemaTarget`]), translating
//! what it has an equivalent for and listing what it has not, so no engine parses another's
//! catalog and a new engine adds one reader and one writer.

use crate::interrupt::Interrupt;
use crate::query::{QueryError, QueryServer};
use crate::SqlType;
use serde::Serialize;
use std::collections::HashMap;
use std::sync::Arc;

mod lower_case;

/// The tables of one database (or of a PostgreSQL database's schemas), as its catalog has them.
#[derive(Debug, Clone, Serialize)]
pub struct Database {
    /// The source's engine (`PostgreSQL`, `MariaDB`, `SQLite`): the dialect of every
    /// [`Expression`] in it.
    pub engine: &'static str,
    pub tables: Vec<Table>,
    /// Types the source's users made (PostgreSQL's enums and domains), which columns name as
    /// [`SqlType::Source`]: a target of the same engine makes those its tables use.
    pub types: Vec<UserType>,
    /// What the copy does not move, by kind and name: views, routines, triggers, events.
    pub not_copied: Vec<Object>,
}

impl Database {
    /// The user type `sql_type` names, itself or as an array's element.
    pub fn user_type(&self, sql_type: &SqlType) -> Option<&UserType> {
        let SqlType::Source { engine, name } = sql_type else {
            return None;
        };
        let element = name.trim_end_matches("[]");
        let found = self.types.iter().find(|t| t.name == element);
        found.filter(|_| *engine == self.engine)
    }

    /// The user types a column of `sql_type` needs made first, each after the types it needs
    /// itself (a domain over an enum).
    pub fn types_needed(&self, sql_type: &SqlType) -> Vec<&UserType> {
        let mut needed = Vec::new();
        let mut next = self.user_type(sql_type);
        // A domain's base is another type, never itself: the chain ends, and the bound stops
        // a catalog that says otherwise.
        while let Some(found) = next.filter(|_| needed.len() <= self.types.len()) {
            needed.push(found);
            next = found.base.as_ref().and_then(|base| self.user_type(base));
        }
        needed.reverse();
        needed
    }

    /// Every column of a domain type given the domain's base type instead, for a target of
    /// another engine, which has no such type; returns (table, column, domain) of each.
    /// (An enum stays a source type: another engine stores its labels as text.)
    pub fn domains_as_base(&mut self) -> Vec<(String, String, String)> {
        let mut changed = Vec::new();
        for t in 0..self.tables.len() {
            for c in 0..self.tables[t].columns.len() {
                let column = &self.tables[t].columns[c];
                let Some(base) = self.base_of(&column.sql_type) else {
                    continue;
                };
                let SqlType::Source { name, .. } = &column.sql_type else {
                    continue;
                };
                changed.push((
                    self.tables[t].display_name(),
                    column.name.clone(),
                    name.trim_end_matches("[]").to_string(),
                ));
                self.tables[t].columns[c].sql_type = base;
            }
        }
        changed
    }

    /// The type a column of domain type `sql_type` (or an array of one) stores, past every
    /// domain: an enum's source type, or a built-in type.
    fn base_of(&self, sql_type: &SqlType) -> Option<SqlType> {
        let SqlType::Source { name, .. } = sql_type else {
            return None;
        };
        let mut base = self.user_type(sql_type)?.base.clone()?;
        // Bounded as in `types_needed`.
        for _ in 0..self.types.len() {
            match self.user_type(&base).and_then(|t| t.base.clone()) {
                Some(deeper) => base = deeper,
                None => break,
            }
        }
        for _ in 0..name.matches("[]").count() {
            base = SqlType::Array(Box::new(base));
        }
        Some(base)
    }
}

/// A type a user made: an enum, or a domain (a type with constraints over another).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UserType {
    pub schema: Option<String>,
    /// As a column's [`SqlType::Source`] names it: quoted and qualified (`"sales"."mood"`).
    pub name: String,
    /// The statement that makes it, in the source's dialect.
    pub create: Expression,
    /// A domain's underlying type (an enum, another domain, or a built-in type).
    pub base: Option<SqlType>,
}

/// Something a copy leaves on the source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Object {
    /// `view`, `function`, `procedure`, `trigger`, `event`, `sequence`...
    pub kind: &'static str,
    /// Qualified where the source has schemas (`sales.monthly`).
    pub name: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Table {
    /// The source's schema; `None` where an engine has one namespace per database.
    pub schema: Option<String>,
    /// As the source spells it: case kept.
    pub name: String,
    /// Stored columns, in table order; a generated column is among them with its expression.
    pub columns: Vec<Column>,
    pub primary_key: Option<Key>,
    pub uniques: Vec<Key>,
    /// Indexes that enforce no key (a unique index made by `CREATE UNIQUE INDEX` is here too).
    pub indexes: Vec<Index>,
    pub foreign_keys: Vec<ForeignKey>,
    pub checks: Vec<Check>,
    pub comment: Option<String>,
    /// The catalog's estimates, to start the largest tables first.
    pub rows_estimate: u64,
    pub bytes: u64,
}

impl Table {
    /// What a target names after this table, each with its kind as messages say it: the
    /// table, its columns, its keys, indexes and foreign keys (and its schema, where it has
    /// one).
    pub fn names(&self) -> Vec<(&'static str, &str)> {
        let mut names: Vec<(&'static str, &str)> =
            self.schema.iter().map(|s| ("schema", s.as_str())).collect();
        names.push(("table", &self.name));
        names.extend(self.columns.iter().map(|c| ("column", c.name.as_str())));
        names.extend(
            self.primary_key
                .iter()
                .map(|k| ("primary key", k.name.as_str())),
        );
        names.extend(self.uniques.iter().map(|k| ("key", k.name.as_str())));
        names.extend(self.indexes.iter().map(|i| ("index", i.name.as_str())));
        names.extend(
            self.foreign_keys
                .iter()
                .map(|k| ("foreign key", k.name.as_str())),
        );
        names
    }

    /// `schema.name`, or the name alone: how messages and patterns name the table.
    pub fn display_name(&self) -> String {
        match &self.schema {
            Some(schema) => format!("{schema}.{}", self.name),
            None => self.name.clone(),
        }
    }

    /// The column a copy cuts the rows by for parallel reads: a one-column integer primary key.
    pub fn split_column(&self) -> Option<&str> {
        let key = self.primary_key.as_ref()?;
        let [column] = key.columns.as_slice() else {
            return None;
        };
        let found = self.columns.iter().find(|c| &c.name == column)?;
        matches!(
            found.sql_type,
            SqlType::SmallInt | SqlType::Integer | SqlType::BigInt
        )
        .then_some(column.as_str())
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Column {
    pub name: String,
    pub sql_type: SqlType,
    pub not_null: bool,
    pub default: Option<Default>,
    /// The default as the source's catalog writes it, which a target of the same engine
    /// takes as it is.
    pub default_sql: Option<Expression>,
    /// Numbered by the engine: a target numbers it too, restarted past the copied maximum.
    pub identity: Option<Identity>,
    /// A generated column's expression: computed by the target, never copied.
    pub generated: Option<Expression>,
    pub comment: Option<String>,
}

/// How a target engine spells what differs between engines in a column's DEFAULT clause.
#[derive(Debug, Clone, Copy)]
pub struct DefaultSpelling {
    /// A constant, as the engine's string constant.
    pub string: fn(&str) -> String,
    /// For an engine with no boolean type, how a boolean constant reads (`boolin`), to write
    /// it as 1 or 0.
    pub boolean_as_number: Option<fn(&str) -> Option<bool>>,
    /// The current date (MariaDB takes it only as an expression: `(CURRENT_DATE)`).
    pub current_date: &'static str,
    /// The source's own expression (from the same engine) goes in parentheses.
    pub parenthesized: bool,
}

impl Column {
    /// The column's ` DEFAULT ...` clause in a target that spells it as `spelling`, `same`
    /// when the source is of the target's engine (its own expressions are taken as they are);
    /// empty for none or a numbered column, whose engine numbers it. An expression of another
    /// engine is left out, with a note that says so.
    pub fn default_clause(&self, same: bool, spelling: &DefaultSpelling) -> (String, Option<Note>) {
        let clause = match &self.default {
            _ if self.identity.is_some() => String::new(),
            None => String::new(),
            Some(Default::Literal(value)) if self.sql_type == SqlType::Boolean => {
                match spelling.boolean_as_number {
                    Some(read) => format!(" DEFAULT {}", u8::from(read(value) == Some(true))),
                    None => format!(" DEFAULT {}", (spelling.string)(value)),
                }
            }
            Some(Default::Literal(value)) => format!(" DEFAULT {}", (spelling.string)(value)),
            Some(Default::CurrentTimestamp) => " DEFAULT CURRENT_TIMESTAMP".into(),
            Some(Default::CurrentDate) => format!(" DEFAULT {}", spelling.current_date),
            Some(Default::Expression(e)) if same && spelling.parenthesized => {
                format!(" DEFAULT ({})", e.sql)
            }
            Some(Default::Expression(e)) if same => format!(" DEFAULT {}", e.sql),
            Some(Default::Expression(e)) => {
                let note = format!("default of {}: {}'s {}", self.name, e.engine, e.sql);
                return (String::new(), Some(Note::left_out(note)));
            }
        };
        (clause, None)
    }
}

/// How a column is numbered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Identity {
    /// `GENERATED ALWAYS AS IDENTITY`: an insert may not give a value (COPY may).
    Always,
    /// `GENERATED BY DEFAULT AS IDENTITY`, `AUTO_INCREMENT`, SQLite's `INTEGER PRIMARY KEY`.
    ByDefault,
    /// PostgreSQL's `serial`: a default of `nextval()` on a sequence the column owns.
    Serial,
}

/// A column's default, in terms every engine can write where it can.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum Default {
    /// A constant, as the text its type's input reads (`0`, `pending`, `2024-01-01`).
    Literal(String),
    /// The time the row is inserted (`CURRENT_TIMESTAMP`, `now()`).
    CurrentTimestamp,
    CurrentDate,
    /// Anything else, in the source's dialect: a target of the same engine takes it as it is.
    Expression(Expression),
}

/// SQL text in the dialect of the engine that wrote it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Expression {
    pub engine: &'static str,
    pub sql: String,
}

/// A primary key or unique constraint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Key {
    pub name: String,
    pub columns: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Index {
    pub name: String,
    pub unique: bool,
    pub parts: Vec<IndexPart>,
    /// The access method when it is not the engine's default B-tree (`gin`, `hash`,
    /// `FULLTEXT`, `SPATIAL`): only a target of the same engine builds it.
    pub method: Option<String>,
    /// A partial index's condition.
    pub predicate: Option<Expression>,
    /// The source's own statement, which a target of the same engine runs as it is.
    pub definition: Option<Expression>,
}

/// Why an index of another engine cannot be made in a target: the source's access method, a
/// partial index's condition, or a part that is an expression, all in the source's own terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unportable<'a> {
    Method(&'a str),
    Condition,
    Expression,
}

impl Index {
    /// The statement that makes the index in a target: the source's own when the target is
    /// the source's engine (`same`) and the source gave it; else `CREATE [UNIQUE] INDEX name ON
    /// table (key)`, the key's columns written by `column` (the column, quoted, or the target's
    /// expression for its first `n` characters), descending where they were; or why it cannot
    /// be made.
    pub fn create(
        &self,
        same: bool,
        name: &str,
        table: &str,
        column: impl Fn(&str, Option<u32>) -> String,
    ) -> Result<String, Unportable<'_>> {
        if let (true, Some(definition)) = (same, &self.definition) {
            return Ok(definition.sql.clone());
        }
        if let Some(method) = &self.method {
            return Err(Unportable::Method(method));
        }
        if self.predicate.is_some() {
            return Err(Unportable::Condition);
        }
        let mut key = Vec::with_capacity(self.parts.len());
        for part in &self.parts {
            let IndexPart::Column {
                name: c,
                descending,
                prefix,
            } = part
            else {
                return Err(Unportable::Expression);
            };
            let order = if *descending { " DESC" } else { "" };
            key.push(format!("{}{order}", column(c, *prefix)));
        }
        let unique = if self.unique { "UNIQUE " } else { "" };
        Ok(format!(
            "CREATE {unique}INDEX {name} ON {table} ({})",
            key.join(", ")
        ))
    }

    /// The columns of the key that are indexed by a prefix only, with its length.
    pub fn prefixes(&self) -> impl Iterator<Item = (&str, u32)> {
        self.parts.iter().filter_map(|part| match part {
            IndexPart::Column {
                name,
                prefix: Some(n),
                ..
            } => Some((name.as_str(), *n)),
            _ => None,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum IndexPart {
    Column {
        name: String,
        descending: bool,
        /// MariaDB's prefix index: the first characters (bytes for binary) of the value.
        prefix: Option<u32>,
    },
    Expression(Expression),
}

/// A foreign key: `columns` name a row of `parent` by `parent_columns`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ForeignKey {
    pub name: String,
    pub columns: Vec<String>,
    pub parent_schema: Option<String>,
    pub parent: String,
    pub parent_columns: Vec<String>,
    pub on_delete: Action,
    pub on_update: Action,
}

/// What a foreign key does to its rows when their parent row goes or changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Action {
    NoAction,
    Restrict,
    Cascade,
    SetNull,
    SetDefault,
}

impl Action {
    /// The SQL words, which every engine here spells alike.
    pub fn sql(self) -> &'static str {
        match self {
            Action::NoAction => "NO ACTION",
            Action::Restrict => "RESTRICT",
            Action::Cascade => "CASCADE",
            Action::SetNull => "SET NULL",
            Action::SetDefault => "SET DEFAULT",
        }
    }

    /// The action `words` spell (`CASCADE`, `set null`); `NO ACTION` for anything else.
    pub fn parse(words: &str) -> Action {
        match words.trim().to_ascii_uppercase().as_str() {
            "RESTRICT" => Action::Restrict,
            "CASCADE" => Action::Cascade,
            "SET NULL" => Action::SetNull,
            "SET DEFAULT" => Action::SetDefault,
            _ => Action::NoAction,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Check {
    pub name: String,
    pub clause: Expression,
}

/// A source database, as a copy reads it.
pub trait SchemaSource: Send + Sync {
    fn engine(&self) -> &'static str;

    /// What names the source in the target's copy ledger, so that a rerun finds its own copy
    /// (`MariaDB shop on db1:3306`); never a password.
    fn describe(&self) -> String;

    /// Every table of the database, and what a copy leaves out.
    fn schema(&self) -> Result<Database, QueryError>;

    /// A server on which every query (and key-range split) reads the database as it was at one
    /// instant, for up to `readers` queries at once: the copy's consistent image. It holds what
    /// keeps that instant (an exported snapshot, open transactions) until it is dropped.
    fn snapshot(&self, readers: usize) -> Result<Snapshot, QueryError>;

    /// The query that reads `columns` of `table`, every row, for a target of engine `into`
    /// (an instant reads as UTC without its zone where `into` has no type for it).
    ///
    /// `columns` pairs each copied column's name in `table` with its name in the target (the
    /// same but under `--lower-case`), which the query's result gives it.
    fn select(&self, table: &Table, columns: &[(String, String)], into: &str) -> String;
}

/// One item of a source's select list: the column (or `read`, an expression of it) under the
/// target's name for it, with `AS` only where the two differ.
pub fn select_item(
    column: &str,
    name: &str,
    read: Option<String>,
    quote: fn(&str) -> String,
) -> String {
    match read {
        Some(expression) => format!("{expression} AS {}", quote(name)),
        None if column == name => quote(column),
        None => format!("{} AS {}", quote(column), quote(name)),
    }
}

/// A consistent image of a source (see [`SchemaSource::snapshot`]).
pub struct Snapshot {
    pub server: Arc<dyn QueryServer>,
    /// How the image is held, for the report (`exported snapshot 00000003-0000001B-1`).
    pub how: String,
}

/// What a target engine makes of one source table.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Design {
    /// The table's name as a load names it here (quoted, qualified where it must be).
    pub name: String,
    /// The columns whose values are copied (the target computes the rest).
    pub columns: Vec<String>,
    /// Statements run before the rows: the table (and its schema).
    pub create: Vec<String>,
    /// The statement that empties the table, for a copy that died while loading it; `None`:
    /// every load of the table empties it in its own transaction (`--truncate`), which lets
    /// PostgreSQL write the rows frozen (COPY FREEZE), so the index builds and key checks
    /// after them need not set every row's hint bits again.
    pub empty: Option<String>,
    /// Run once the table's rows are in, while other tables still load, all at once: its keys
    /// and indexes. Each must not wait on another's lock (PostgreSQL builds a key's index
    /// here and attaches the key in `after_keys`).
    pub after_rows: Vec<Step>,
    /// Run once every `after_rows` step of the table is done, and those of the tables each
    /// step [`needs`](Step::needs): foreign keys (validated), keys put on their built indexes,
    /// numbering restarted past the copied maximum.
    pub after_keys: Vec<Step>,
    /// What the copy translated, and what it left out, and why.
    pub notes: Vec<Note>,
}

/// One unit of DDL a copy records as done when it is (so a rerun does not do it twice).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Step {
    /// Unique within its table (`index orders_customer_idx`, `foreign key orders_fk`).
    pub what: String,
    pub sql: Vec<String>,
    /// A translation the target may refuse (a CHECK clause from another dialect): refused, it
    /// becomes a note of what was left out, not a failed copy.
    pub optional: bool,
    /// A query for a row that breaks what the step made (a foreign key added unchecked): the
    /// step fails, naming the row, when it returns one.
    pub violation: Option<String>,
    /// Other tables (as their [`Design::name`]) whose keys must be in first, and which the
    /// step locks: a foreign key's parent.
    pub needs: Vec<String>,
}

impl Step {
    pub fn new(what: impl Into<String>, sql: Vec<String>) -> Step {
        Step {
            what: what.into(),
            sql,
            optional: false,
            violation: None,
            needs: Vec::new(),
        }
    }
}

/// The names of a table's keys and indexes in a target whose index names are one namespace per
/// schema with its tables (PostgreSQL's and SQLite's, where a key's index is named as its key),
/// read from a source whose names are one per table (MariaDB's: every primary key is
/// `PRIMARY`, and a foreign key's index may be named as its column, which another table may
/// be named too). A name another index or a table of the source also uses becomes
/// `table_name`, so no two collide.
pub struct IndexNames<'t> {
    table: &'t str,
    shared: HashMap<String, usize>,
    /// The target's longest name in bytes, cut at a character's boundary.
    limit: usize,
}

impl<'t> IndexNames<'t> {
    /// Names of `table` of `source` in a target of engine `into`.
    pub fn new(table: &'t Table, source: &Database, into: &str, limit: usize) -> IndexNames<'t> {
        let mut shared = HashMap::new();
        if source.engine != into {
            for t in &source.tables {
                let keys = t.uniques.iter().map(|k| &k.name);
                let named = keys.chain(t.indexes.iter().map(|i| &i.name));
                let named = named.chain(t.primary_key.iter().map(|k| &k.name));
                for name in named.chain([&t.name]) {
                    *shared.entry(name.to_lowercase()).or_insert(0) += 1;
                }
            }
        }
        IndexNames {
            table: &table.name,
            shared,
            limit,
        }
    }

    /// The name here of key or index `name` (`suffix` names an unnamed or shared one).
    pub fn key(&self, name: &str, suffix: &str) -> String {
        let shared = self
            .shared
            .get(&name.to_lowercase())
            .is_some_and(|&n| n > 1);
        // MariaDB's every primary key is `PRIMARY` (`primary` once `--lower-case` has lowered it).
        let primary = name.eq_ignore_ascii_case("PRIMARY");
        let name = match (name.is_empty() || primary, shared) {
            (true, _) => format!("{}_{suffix}", self.table),
            (false, true) => format!("{}_{name}", self.table),
            (false, false) => name.to_string(),
        };
        let mut end = name.len().min(self.limit);
        while !name.is_char_boundary(end) {
            end -= 1;
        }
        name[..end].to_string()
    }
}

/// The copy ledger's record of a step done: in the target, so a rerun of the same copy skips
/// what is done.
#[derive(Debug, Clone, Copy)]
pub struct Done<'a> {
    /// The copy's name (see [`SchemaSource::describe`]).
    pub copy: &'a str,
    pub table: &'a str,
    /// `created`, `loaded`, a [`Step::what`], `finished`.
    pub step: &'a str,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Note {
    /// Left out (else: translated).
    pub left_out: bool,
    pub what: String,
}

impl Note {
    pub fn translated(what: impl Into<String>) -> Note {
        Note {
            left_out: false,
            what: what.into(),
        }
    }

    pub fn left_out(what: impl Into<String>) -> Note {
        Note {
            left_out: true,
            what: what.into(),
        }
    }
}

/// A target database, as a copy writes it.
pub trait SchemaTarget: Send + Sync {
    fn engine(&self) -> &'static str;

    /// How `table` of `source` is made here.
    fn design(&self, table: &Table, source: &Database) -> Design;

    /// Why a name of `kind` ([`Table::names`]) cannot be one here as it is, if it cannot: a
    /// copy refuses it before it changes anything, where the server would refuse it part way,
    /// or shorten it.
    fn refuses_name(&self, kind: &str, name: &str) -> Option<String> {
        let _ = (kind, name);
        None
    }

    /// Runs `step`'s statements in order on one connection, then its violation query, in one
    /// transaction with the ledger's record of `done` where the engine's DDL is
    /// transactional; where it is not, the record follows the statements. A stop (`stop`
    /// signalled) ends the statement running (an index build can take minutes): the step
    /// fails unrecorded, and a rerun runs it again.
    fn run(&self, step: &Step, done: Option<Done>, stop: &Arc<Interrupt>)
        -> Result<(), QueryError>;

    /// Tables that can load at once (SQLite has one writer).
    fn writers(&self) -> usize {
        usize::MAX
    }

    /// The ledger of the copy named `copy` (see [`SchemaSource::describe`]): (table, step) of
    /// everything it recorded as done. Made when missing.
    fn ledger(&self, copy: &str) -> Result<Vec<(String, String)>, QueryError>;

    /// Of the tables `names` (as [`Design::name`] spells them), those that exist here.
    fn existing(&self, names: &[String]) -> Result<Vec<String>, QueryError>;

    /// The target as a server queries read (`--verify` reads the copied rows back).
    fn reader(&self) -> Arc<dyn QueryServer>;

    /// The query that reads a designed table's copied columns.
    fn select(&self, design: &Design) -> String;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(name: &str) -> SqlType {
        SqlType::Source {
            engine: "PostgreSQL",
            name: name.into(),
        }
    }

    fn user_type(name: &str, base: Option<SqlType>) -> UserType {
        UserType {
            schema: Some("s".into()),
            name: name.into(),
            create: Expression {
                engine: "PostgreSQL",
                sql: format!("CREATE {name}"),
            },
            base,
        }
    }

    pub(super) fn column(name: &str, sql_type: SqlType) -> Column {
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

    /// Table `schema.name` of `columns`, without keys, indexes or checks.
    pub(super) fn table(schema: &str, name: &str, columns: Vec<Column>) -> Table {
        Table {
            schema: Some(schema.into()),
            name: name.into(),
            columns,
            primary_key: None,
            uniques: Vec::new(),
            indexes: Vec::new(),
            foreign_keys: Vec::new(),
            checks: Vec::new(),
            comment: None,
            rows_estimate: 0,
            bytes: 0,
        }
    }

    /// An enum `s.tier`, a domain `s.premium` over it, a domain `s.top` over that, and a
    /// domain `s.weight` over `integer`; table `t` has a column of each, and arrays.
    fn database() -> Database {
        let columns = [
            ("a", source("s.tier")),
            ("b", source("s.top")),
            ("c", source("s.weight[]")),
            ("d", source("inet")),
            ("e", SqlType::Integer),
            ("f", source("s.premium[]")),
        ];
        let columns = columns.into_iter().map(|(n, t)| column(n, t)).collect();
        Database {
            engine: "PostgreSQL",
            tables: vec![table("s", "t", columns)],
            types: vec![
                user_type("s.premium", Some(source("s.tier"))),
                user_type("s.tier", None),
                user_type("s.top", Some(source("s.premium"))),
                user_type("s.weight", Some(SqlType::Integer)),
            ],
            not_copied: Vec::new(),
        }
    }

    #[test]
    fn a_type_comes_after_the_types_it_is_made_of() {
        let db = database();
        let names = |t: SqlType| -> Vec<String> {
            db.types_needed(&t).iter().map(|u| u.name.clone()).collect()
        };
        assert_eq!(names(source("s.top")), ["s.tier", "s.premium", "s.top"]);
        assert_eq!(names(source("s.weight[]")), ["s.weight"]);
        assert_eq!(names(source("s.tier")), ["s.tier"]);
        assert!(names(source("inet")).is_empty());
        assert!(names(SqlType::Integer).is_empty());
        // Another engine's type of the same name is not this one.
        let other = SqlType::Source {
            engine: "MariaDB",
            name: "s.tier".into(),
        };
        assert!(names(other).is_empty());
    }

    #[test]
    fn a_domain_column_stores_its_base_past_every_domain_and_the_rest_stay() {
        let mut db = database();
        let changed = db.domains_as_base();
        let types: Vec<&SqlType> = db.tables[0].columns.iter().map(|c| &c.sql_type).collect();
        assert_eq!(
            types,
            [
                &source("s.tier"),
                &source("s.tier"),
                &SqlType::Array(Box::new(SqlType::Integer)),
                &source("inet"),
                &SqlType::Integer,
                &SqlType::Array(Box::new(source("s.tier"))),
            ]
        );
        let columns: Vec<(&str, &str)> = changed
            .iter()
            .map(|(_, c, d)| (c.as_str(), d.as_str()))
            .collect();
        assert_eq!(
            columns,
            [("b", "s.top"), ("c", "s.weight"), ("f", "s.premium")]
        );
    }

    #[test]
    fn a_catalog_whose_domains_loop_ends() {
        let mut db = database();
        db.types = vec![
            user_type("s.x", Some(source("s.y"))),
            user_type("s.y", Some(source("s.x"))),
        ];
        assert!(db.types_needed(&source("s.x")).len() <= 3);
        db.tables[0].columns = vec![column("a", source("s.x"))];
        db.domains_as_base();
    }

    #[test]
    fn an_index_named_as_another_table_or_index_is_named_after_its_own_table_too() {
        let mut db = database();
        db.engine = "MariaDB";
        let mut b = db.tables[0].clone();
        b.name = "b".into();
        let index = |name: &str| Index {
            name: name.into(),
            unique: false,
            parts: Vec::new(),
            method: None,
            predicate: None,
            definition: None,
        };
        // MariaDB names a foreign key's index after its column, here `t`, the other table.
        b.indexes = vec![index("t"), index("b_only"), index("shared")];
        db.tables[0].indexes = vec![index("shared")];
        db.tables.push(b);
        let names = IndexNames::new(&db.tables[1], &db, "PostgreSQL", 63);
        assert_eq!(names.key("t", "idx"), "b_t");
        assert_eq!(names.key("b_only", "idx"), "b_only");
        assert_eq!(names.key("shared", "idx"), "b_shared");
        assert_eq!(names.key("PRIMARY", "pkey"), "b_pkey");
    }
}
