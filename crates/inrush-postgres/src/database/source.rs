//! A PostgreSQL database as `inrush copy` reads it: every table of its user schemas from the
//! catalog (`pg_class`, `pg_attribute`, `pg_constraint`, `pg_index`), the enums and domains
//! its columns may use (`pg_type`), and a snapshot exported
//! by one transaction that every reading connection joins (`SET TRANSACTION SNAPSHOT`), so all
//! of them read the database at one instant while it keeps taking writes (pg_dump's `-j` and
//! pgcopydb do the same).

use crate::{query_error, quote_ident, ConnectOptions, Error, Result};
use inrush_core::database::{
    select_item, Action, Check, Column, Database, Default, Expression, ForeignKey, Identity, Index,
    IndexPart, Key, Object, SchemaSource, Snapshot, Table, UserType,
};
use inrush_core::query::{QueryError, QueryServer};
use inrush_core::SqlType;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

pub(crate) const ENGINE: &str = "PostgreSQL";

/// Schemas a copy never reads: the server's own, and inrush's ledgers.
const SYSTEM: &str =
    "n.nspname NOT IN ('information_schema', 'inrush') AND n.nspname NOT LIKE 'pg\\_%'";

/// A PostgreSQL database a copy reads.
pub struct PgSchemaSource {
    options: ConnectOptions,
}

impl PgSchemaSource {
    pub fn new(options: ConnectOptions) -> PgSchemaSource {
        PgSchemaSource { options }
    }
}

fn source_error(e: Error) -> QueryError {
    QueryError {
        engine: ENGINE,
        what: String::new(),
        message: e.to_string(),
    }
}

impl SchemaSource for PgSchemaSource {
    fn engine(&self) -> &'static str {
        ENGINE
    }

    fn describe(&self) -> String {
        format!("PostgreSQL {}", self.options.describe())
    }

    fn schema(&self) -> Result<Database, QueryError> {
        read(&self.options).map_err(source_error)
    }

    fn snapshot(&self, _readers: usize) -> Result<Snapshot, QueryError> {
        let mut holder = self.options.connect_blocking().map_err(source_error)?;
        let sql = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY";
        holder
            .batch_execute(sql)
            .map_err(query_error(sql))
            .map_err(source_error)?;
        let sql = "SELECT pg_export_snapshot()";
        let id: String = holder
            .query_one(sql, &[])
            .map_err(query_error(sql))
            .map_err(source_error)?
            .get(0);
        let how = format!("exported snapshot {id}, joined by every reading connection");
        let server = PgSnapshot {
            options: self.options.clone(),
            id,
            _holder: Mutex::new(holder),
        };
        Ok(Snapshot {
            server: Arc::new(server),
            how,
        })
    }

    fn select(&self, table: &Table, columns: &[(String, String)], into: &str) -> String {
        let columns: Vec<String> = columns
            .iter()
            .map(|(c, name)| {
                let zoned = table
                    .columns
                    .iter()
                    .any(|t| &t.name == c && matches!(t.sql_type, SqlType::TimestampTz(_)));
                let utc = zoned && into != ENGINE;
                let read = utc.then(|| format!("({} AT TIME ZONE 'UTC')", quote_ident(c)));
                select_item(c, name, read, quote_ident)
            })
            .collect();
        format!("SELECT {} FROM {}", columns.join(", "), qualified(table))
    }
}

/// `"schema"."name"`.
fn qualified(table: &Table) -> String {
    match &table.schema {
        Some(schema) => format!("{}.{}", quote_ident(schema), quote_ident(&table.name)),
        None => quote_ident(&table.name),
    }
}

/// The source's queries, each in a transaction that joins the exported snapshot. The holder's
/// transaction keeps the snapshot alive (an exported snapshot lives as long as the transaction
/// that exported it), so it lives as long as this does.
struct PgSnapshot {
    options: ConnectOptions,
    id: String,
    _holder: Mutex<postgres::Client>,
}

impl std::fmt::Debug for PgSnapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PgSnapshot({})", self.id)
    }
}

impl QueryServer for PgSnapshot {
    fn engine(&self) -> &'static str {
        ENGINE
    }

    fn columns(&self, sql: &str) -> Result<Vec<(String, SqlType)>, QueryError> {
        self.options.columns(sql)
    }

    fn split(&self, sql: &str, column: &str, parts: usize) -> Result<Vec<String>, QueryError> {
        crate::copy_out::split_by(&self.options, Some(&self.id), sql, column, parts)
            .map_err(source_error)
    }

    fn csv(&self, sql: &str) -> Result<Box<dyn std::io::Read + Send>, QueryError> {
        crate::copy_out::reader(&self.options, Some(&self.id), sql, false).map_err(source_error)
    }

    fn speaks_copy_binary(&self) -> bool {
        true
    }

    fn copy_binary(
        &self,
        sql: &str,
        columns: &[String],
    ) -> Result<Box<dyn std::io::Read + Send>, QueryError> {
        let select = crate::copy_out::select_columns(sql, columns);
        crate::copy_out::reader(&self.options, Some(&self.id), &select, true).map_err(source_error)
    }
}

/// One table's row of the catalog, before its columns and constraints are attached.
type Tables = Vec<(u32, Table)>;

fn read(options: &ConnectOptions) -> Result<Database> {
    let mut client = options.connect_blocking()?;
    let mut tables = tables(&mut client)?;
    let oids: Vec<u32> = tables.iter().map(|(oid, _)| *oid).collect();
    let at: HashMap<u32, usize> = oids.iter().enumerate().map(|(i, o)| (*o, i)).collect();
    for (oid, column) in columns(&mut client, &oids)? {
        tables[at[&oid]].1.columns.push(column);
    }
    constraints(&mut client, &oids, &mut tables, &at)?;
    indexes(&mut client, &oids, &mut tables, &at)?;
    Ok(Database {
        engine: ENGINE,
        tables: tables.into_iter().map(|(_, t)| t).collect(),
        types: user_types(&mut client)?,
        not_copied: not_copied(&mut client)?,
    })
}

fn tables(client: &mut postgres::Client) -> Result<Tables> {
    // A partition's rows are read through its root; extension-owned tables are the
    // extension's to make.
    let sql = format!(
        "SELECT c.oid, n.nspname::text, c.relname::text, obj_description(c.oid, 'pg_class'), \
                greatest(c.reltuples, 0)::bigint, pg_total_relation_size(c.oid) \
         FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
         WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition AND {SYSTEM} \
           AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_class'::regclass \
                           AND d.objid = c.oid AND d.deptype = 'e') \
         ORDER BY 2, 3"
    );
    let rows = client.query(&sql, &[]).map_err(query_error(&sql))?;
    Ok(rows
        .iter()
        .map(|r| {
            let oid: u32 = r.get(0);
            let table = Table {
                schema: Some(r.get(1)),
                name: r.get(2),
                columns: Vec::new(),
                primary_key: None,
                uniques: Vec::new(),
                indexes: Vec::new(),
                foreign_keys: Vec::new(),
                checks: Vec::new(),
                comment: r.get(3),
                rows_estimate: r.get::<_, i64>(4) as u64,
                bytes: r.get::<_, i64>(5) as u64,
            };
            (oid, table)
        })
        .collect())
}

fn columns(client: &mut postgres::Client, oids: &[u32]) -> Result<Vec<(u32, Column)>> {
    let sql = "SELECT a.attrelid, a.attname::text, format_type(a.atttypid, a.atttypmod), \
                      a.attnotnull, pg_get_expr(d.adbin, d.adrelid), a.attidentity::text, \
                      a.attgenerated::text, col_description(a.attrelid, a.attnum), \
                      pg_get_serial_sequence(a.attrelid::regclass::text, a.attname) IS NOT NULL, \
                      CASE WHEN e.typtype IN ('e', 'd') THEN format('%I.%I', en.nspname, e.typname) \
                           || CASE WHEN e.oid <> t.oid THEN '[]' ELSE '' END END \
               FROM pg_attribute a \
               JOIN pg_type t ON t.oid = a.atttypid \
               JOIN pg_type e ON e.oid = CASE WHEN t.typcategory = 'A' AND t.typelem <> 0 \
                                              THEN t.typelem ELSE t.oid END \
               JOIN pg_namespace en ON en.oid = e.typnamespace \
               LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum \
               WHERE a.attrelid = ANY($1) AND a.attnum > 0 AND NOT a.attisdropped \
               ORDER BY a.attrelid, a.attnum";
    let rows = client.query(sql, &[&oids]).map_err(query_error(sql))?;
    Ok(rows
        .iter()
        .map(|r| {
            let default: Option<String> = r.get(4);
            let identity: &str = r.get(5);
            let generated: &str = r.get(6);
            let owns_sequence: bool = r.get(8);
            let identity = match identity {
                "a" => Some(Identity::Always),
                "d" => Some(Identity::ByDefault),
                // A serial: a default of nextval() on a sequence the column owns.
                _ if owns_sequence
                    && default
                        .as_deref()
                        .is_some_and(|d| d.starts_with("nextval(")) =>
                {
                    Some(Identity::Serial)
                }
                _ => None,
            };
            let (default, generated) = match (generated, default) {
                ("s" | "v", Some(expression)) => (None, Some(pg(expression))),
                _ if identity.is_some() => (None, None),
                (_, default) => (default, None),
            };
            // A user's type by its qualified name, which a target of this engine makes.
            let user_type: Option<String> = r.get(9);
            let sql_type = match user_type {
                Some(name) => SqlType::Source {
                    engine: ENGINE,
                    name,
                },
                None => crate::sql_type::parse(r.get(2)),
            };
            let column = Column {
                name: r.get(1),
                sql_type,
                not_null: r.get(3),
                default: default.as_deref().map(read_default),
                default_sql: default.map(pg),
                identity,
                generated,
                comment: r.get(7),
            };
            (r.get(0), column)
        })
        .collect())
}

fn pg(sql: String) -> Expression {
    Expression {
        engine: ENGINE,
        sql,
    }
}

/// A default as `pg_get_expr` prints it: `'a''b'::text`, `0`, `now()`, `CURRENT_TIMESTAMP`.
fn read_default(text: &str) -> Default {
    match text {
        "now()" | "CURRENT_TIMESTAMP" | "transaction_timestamp()" | "statement_timestamp()" => {
            return Default::CurrentTimestamp
        }
        "CURRENT_DATE" => return Default::CurrentDate,
        "true" | "false" => return Default::Literal(text.into()),
        _ => {}
    }
    let number = |t: &str| {
        let t = t.trim_start_matches('-');
        !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit() || b == b'.')
    };
    if number(text) {
        return Default::Literal(text.into());
    }
    // `'text'::type`: one quoted constant cast to the column's type.
    if let Some(rest) = text.strip_prefix('\'') {
        if let Some((quoted, cast)) = rest.rsplit_once("'::") {
            if !cast.contains('\'') && !quoted.replace("''", "").contains('\'') {
                return Default::Literal(quoted.replace("''", "'"));
            }
        }
    }
    // `(-1)`, as PostgreSQL prints a negative constant.
    if let Some(inner) = text.strip_prefix('(').and_then(|t| t.strip_suffix(')')) {
        if number(inner) {
            return Default::Literal(inner.into());
        }
    }
    Default::Expression(pg(text.into()))
}

fn constraints(
    client: &mut postgres::Client,
    oids: &[u32],
    tables: &mut Tables,
    at: &HashMap<u32, usize>,
) -> Result<()> {
    let sql = "SELECT c.conrelid, c.conname::text, c.contype::text, pg_get_constraintdef(c.oid), \
                      ARRAY(SELECT a.attname::text FROM unnest(c.conkey) WITH ORDINALITY k(n, i) \
                            JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = k.n \
                            ORDER BY k.i), \
                      pn.nspname::text, p.relname::text, \
                      ARRAY(SELECT a.attname::text FROM unnest(c.confkey) WITH ORDINALITY k(n, i) \
                            JOIN pg_attribute a ON a.attrelid = c.confrelid AND a.attnum = k.n \
                            ORDER BY k.i), \
                      c.confdeltype::text, c.confupdtype::text \
               FROM pg_constraint c \
               LEFT JOIN pg_class p ON p.oid = c.confrelid \
               LEFT JOIN pg_namespace pn ON pn.oid = p.relnamespace \
               WHERE c.conrelid = ANY($1) AND c.contype IN ('p', 'u', 'f', 'c') \
               ORDER BY c.conrelid, c.conname";
    let rows = client.query(sql, &[&oids]).map_err(query_error(sql))?;
    let action = |code: &str| match code {
        "r" => Action::Restrict,
        "c" => Action::Cascade,
        "n" => Action::SetNull,
        "d" => Action::SetDefault,
        _ => Action::NoAction,
    };
    for r in rows {
        let table = &mut tables[at[&r.get::<_, u32>(0)]].1;
        let name: String = r.get(1);
        let definition: String = r.get(3);
        let columns: Vec<String> = r.get(4);
        match r.get::<_, &str>(2) {
            "p" => table.primary_key = Some(Key { name, columns }),
            "u" => table.uniques.push(Key { name, columns }),
            "f" => table.foreign_keys.push(ForeignKey {
                name,
                columns,
                parent_schema: r.get(5),
                parent: r.get(6),
                parent_columns: r.get(7),
                on_delete: action(r.get(8)),
                on_update: action(r.get(9)),
            }),
            _ => {
                let clause = definition
                    .strip_prefix("CHECK ")
                    .unwrap_or(&definition)
                    .to_string();
                table.checks.push(Check {
                    name,
                    clause: pg(clause),
                })
            }
        }
    }
    Ok(())
}

fn indexes(
    client: &mut postgres::Client,
    oids: &[u32],
    tables: &mut Tables,
    at: &HashMap<u32, usize>,
) -> Result<()> {
    // Indexes of no constraint; each key column by name, or its expression as the server
    // prints it.
    let sql = "SELECT x.indrelid, i.relname::text, x.indisunique, pg_get_indexdef(x.indexrelid), \
                      am.amname::text, pg_get_expr(x.indpred, x.indrelid), \
                      ARRAY(SELECT coalesce(a.attname::text, '') \
                            FROM generate_series(1, x.indnkeyatts) k(i) \
                            LEFT JOIN pg_attribute a ON a.attrelid = x.indrelid \
                                 AND a.attnum = x.indkey[k.i - 1] AND x.indkey[k.i - 1] <> 0 \
                            ORDER BY k.i), \
                      ARRAY(SELECT pg_get_indexdef(x.indexrelid, k.i, true) \
                            FROM generate_series(1, x.indnkeyatts) k(i) ORDER BY k.i), \
                      ARRAY(SELECT (x.indoption[k.i - 1] & 1) = 1 \
                            FROM generate_series(1, x.indnkeyatts) k(i) ORDER BY k.i), \
                      x.indnatts > x.indnkeyatts \
               FROM pg_index x \
               JOIN pg_class i ON i.oid = x.indexrelid \
               JOIN pg_am am ON am.oid = i.relam \
               WHERE x.indrelid = ANY($1) AND x.indisvalid \
                 AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = x.indexrelid \
                                 AND c.conrelid = x.indrelid) \
               ORDER BY x.indrelid, i.relname";
    let rows = client.query(sql, &[&oids]).map_err(query_error(sql))?;
    for r in rows {
        let table = &mut tables[at[&r.get::<_, u32>(0)]].1;
        let names: Vec<String> = r.get(6);
        let printed: Vec<String> = r.get(7);
        let descending: Vec<bool> = r.get(8);
        let parts = names
            .into_iter()
            .zip(printed)
            .zip(descending)
            .map(|((name, printed), descending)| match name.is_empty() {
                false => IndexPart::Column {
                    name,
                    descending,
                    prefix: None,
                },
                true => IndexPart::Expression(pg(printed)),
            })
            .collect();
        let method: String = r.get(4);
        let including: bool = r.get(9);
        table.indexes.push(Index {
            name: r.get(1),
            unique: r.get(2),
            parts,
            // INCLUDE columns are PostgreSQL's alone, as other methods are.
            method: (method != "btree" || including).then_some(method),
            predicate: r.get::<_, Option<String>>(5).map(pg),
            definition: Some(pg(r.get(3))),
        });
    }
    Ok(())
}

/// The enums and domains of the user schemas, each with the statement that makes it (what
/// pg_dump writes): labels in their order; a domain's base type (qualified when it is a user
/// type), default, NOT NULL and named CHECKs.
fn user_types(client: &mut postgres::Client) -> Result<Vec<UserType>> {
    let sql = format!(
        "SELECT n.nspname::text, format('%I.%I', n.nspname, t.typname), t.typtype::text, \
                ARRAY(SELECT quote_literal(e.enumlabel) FROM pg_enum e \
                      WHERE e.enumtypid = t.oid ORDER BY e.enumsortorder), \
                CASE WHEN b.typtype IN ('e', 'd') THEN format('%I.%I', bn.nspname, b.typname) \
                     ELSE format_type(t.typbasetype, t.typtypmod) END, \
                t.typnotnull, t.typdefault, \
                ARRAY(SELECT format('CONSTRAINT %I %s', c.conname, pg_get_constraintdef(c.oid)) \
                      FROM pg_constraint c WHERE c.contypid = t.oid AND c.contype = 'c' \
                      ORDER BY c.conname) \
         FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace \
         LEFT JOIN pg_type b ON b.oid = t.typbasetype \
         LEFT JOIN pg_namespace bn ON bn.oid = b.typnamespace \
         WHERE t.typtype IN ('e', 'd') AND {SYSTEM} \
           AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_type'::regclass \
                           AND d.objid = t.oid AND d.deptype = 'e') \
         ORDER BY 1, 2"
    );
    let rows = client.query(&sql, &[]).map_err(query_error(&sql))?;
    Ok(rows
        .iter()
        .map(|r| {
            let name: String = r.get(1);
            let (create, base) = match r.get::<_, &str>(2) {
                "e" => {
                    let labels: Vec<String> = r.get(3);
                    let create = format!("CREATE TYPE {name} AS ENUM ({})", labels.join(", "));
                    (create, None)
                }
                _ => {
                    let base: String = r.get(4);
                    let mut create = format!("CREATE DOMAIN {name} AS {base}");
                    if let Some(default) = r.get::<_, Option<String>>(6) {
                        create.push_str(&format!(" DEFAULT {default}"));
                    }
                    if r.get(5) {
                        create.push_str(" NOT NULL");
                    }
                    for check in r.get::<_, Vec<String>>(7) {
                        create.push(' ');
                        create.push_str(&check);
                    }
                    (create, Some(crate::sql_type::parse(&base)))
                }
            };
            UserType {
                schema: Some(r.get(0)),
                name,
                create: pg(create),
                base,
            }
        })
        .collect())
}

/// Views, routines, triggers, and sequences no column owns: listed, not copied.
fn not_copied(client: &mut postgres::Client) -> Result<Vec<Object>> {
    let sql = format!(
        "SELECT kind, name FROM ( \
           SELECT CASE c.relkind WHEN 'm' THEN 'materialized view' WHEN 'S' THEN 'sequence' \
                  ELSE 'view' END AS kind, n.nspname || '.' || c.relname AS name \
           FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
           WHERE c.relkind IN ('v', 'm', 'S') AND {SYSTEM} \
             AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_class'::regclass \
                             AND d.objid = c.oid AND d.deptype IN ('a', 'i', 'e')) \
           UNION ALL \
           SELECT CASE p.prokind WHEN 'p' THEN 'procedure' WHEN 'a' THEN 'aggregate' \
                  ELSE 'function' END, n.nspname || '.' || p.proname \
           FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace \
           WHERE {SYSTEM} AND NOT EXISTS (SELECT 1 FROM pg_depend d \
                 WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e') \
           UNION ALL \
           SELECT 'trigger', n.nspname || '.' || c.relname || '.' || t.tgname \
           FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid \
           JOIN pg_namespace n ON n.oid = c.relnamespace \
           WHERE NOT t.tgisinternal AND {SYSTEM} \
           UNION ALL \
           SELECT 'type', n.nspname || '.' || t.typname \
           FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace \
           WHERE t.typtype IN ('r', 'm') AND {SYSTEM} \
         ) o ORDER BY 1, 2"
    );
    let rows = client.query(&sql, &[]).map_err(query_error(&sql))?;
    let kind = |k: &str| -> &'static str {
        match k {
            "materialized view" => "materialized view",
            "sequence" => "sequence",
            "procedure" => "procedure",
            "aggregate" => "aggregate",
            "function" => "function",
            "trigger" => "trigger",
            "type" => "type",
            _ => "view",
        }
    };
    Ok(rows
        .iter()
        .map(|r| Object {
            kind: kind(r.get(0)),
            name: r.get(1),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_defaults_are_literals_and_the_rest_stay_expressions() {
        let lit = |s: &str| Default::Literal(s.into());
        assert_eq!(read_default("0"), lit("0"));
        assert_eq!(read_default("(-1)"), lit("-1"));
        assert_eq!(read_default("1.5"), lit("1.5"));
        assert_eq!(read_default("'pending'::text"), lit("pending"));
        assert_eq!(read_default("'it''s'::character varying"), lit("it's"));
        assert_eq!(read_default("'2024-01-01'::date"), lit("2024-01-01"));
        assert_eq!(read_default("true"), lit("true"));
        assert_eq!(read_default("now()"), Default::CurrentTimestamp);
        assert_eq!(read_default("CURRENT_DATE"), Default::CurrentDate);
        for expression in ["lower('A'::text)", "(1 + 2)", "gen_random_uuid()"] {
            assert_eq!(
                read_default(expression),
                Default::Expression(pg(expression.into()))
            );
        }
    }
}
