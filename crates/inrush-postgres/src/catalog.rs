//! What the catalog says about the target table and the session, read before a load.

use crate::{quote_ident, Error, Result};
use inrush_core::catalog::{ConstraintKind, Firing, Trigger};
pub use inrush_core::catalog::{ForeignKeyInfo, HiddenWork, IndexInfo, TableSize};
use inrush_core::TargetColumn;
use inrush_encode::{ScalarType, ValueType};
use std::collections::HashMap;
use tokio_postgres::Client;

/// Facts about the session that change how values must be read or what the load may do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionInfo {
    pub server_version_num: u32,
    pub server_version: String,
    pub time_zone: String,
    pub date_style: String,
    pub is_superuser: bool,
}

impl SessionInfo {
    pub async fn read(client: &Client) -> Result<SessionInfo> {
        let row = client
            .query_one(
                "SELECT current_setting('server_version_num')::int, current_setting('server_version'), \
                 current_setting('TimeZone'), current_setting('DateStyle'), \
                 coalesce((SELECT rolsuper FROM pg_roles WHERE rolname = current_user), false)",
                &[],
            )
            .await
            .map_err(|cause| Error::Query { what: "reading session settings".into(), cause })?;
        Ok(SessionInfo {
            server_version_num: row.get::<_, i32>(0) as u32,
            server_version: row.get(1),
            time_zone: row.get(2),
            date_style: row.get(3),
            is_superuser: row.get(4),
        })
    }

    /// True when a timestamp without offset means the same instant in UTC for this session.
    pub fn time_zone_is_utc(&self) -> bool {
        matches!(
            self.time_zone.to_ascii_lowercase().as_str(),
            "utc"
                | "etc/utc"
                | "gmt"
                | "etc/gmt"
                | "universal"
                | "etc/universal"
                | "zulu"
                | "etc/zulu"
                | "uct"
                | "etc/uct"
                | "gmt0"
                | "etc/gmt0"
        )
    }

    /// The WAL insert position in bytes, to measure what a load generated (the write position can
    /// lag behind with synchronous_commit off). `None` where the function is not
    /// available (a standby, or a server that hides it).
    pub async fn wal_lsn(client: &Client) -> Option<u64> {
        let row = client
            .query_one(
                "SELECT (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::bigint",
                &[],
            )
            .await
            .ok()?;
        row.try_get::<_, i64>(0).ok().map(|v| v as u64)
    }
}

impl TableInfo {
    /// Every index of the table with its definition, in name order. `pg_get_indexdef` names no
    /// tablespace, so each `CREATE INDEX` of a definition is preceded by the `SET LOCAL
    /// default_tablespace` that puts it back where it was (`''`, the database's default, for
    /// an index that had none: a default_tablespace set for the role or database must not move
    /// it). A key whose index is an exclusion index (`WITHOUT OVERLAPS`, a GiST index that
    /// `ADD CONSTRAINT ... USING INDEX` refuses) is reported as an exclusion constraint: it
    /// stays during the load like one.
    pub async fn indexes(&self, client: &Client) -> Result<Vec<IndexInfo>> {
        let rows = client
            .query(
                "SELECT ic.relname::text, \
                        CASE WHEN ic.relkind = 'I' THEN format('LOCK TABLE %s IN SHARE ROW EXCLUSIVE MODE; ', i.indrelid::regclass) ELSE '' END \
                        || format('SET LOCAL default_tablespace = %L; ', \
                                  coalesce((SELECT spcname FROM pg_tablespace WHERE oid = ic.reltablespace), '')) \
                        || pg_get_indexdef(i.indexrelid) || coalesce(( \
                          SELECT string_agg(format('; SET LOCAL default_tablespace = %L; %s; ALTER INDEX %I.%I ATTACH PARTITION %I.%I', \
                                   coalesce((SELECT spcname FROM pg_tablespace WHERE oid = cc.reltablespace), ''), \
                                   pg_get_indexdef(t.relid), pn.nspname, pc.relname, cn.nspname, cc.relname), '' \
                                 ORDER BY t.level, cc.relname) \
                          FROM pg_partition_tree(i.indexrelid) t \
                          JOIN pg_class cc ON cc.oid = t.relid JOIN pg_namespace cn ON cn.oid = cc.relnamespace \
                          JOIN pg_class pc ON pc.oid = t.parentrelid JOIN pg_namespace pn ON pn.oid = pc.relnamespace \
                          WHERE t.level > 0), ''), i.indisunique, \
                        c.conname::text, NOT (i.indisvalid AND i.indisready), \
                        coalesce((SELECT sum(pg_relation_size(t.relid)) FROM pg_partition_tree(i.indexrelid) t), \
                                 pg_relation_size(i.indexrelid))::bigint, \
                        CASE WHEN i.indisexclusion THEN 'x' ELSE c.contype::text END, coalesce(c.condeferrable, false), \
                        EXISTS (SELECT 1 FROM pg_constraint f WHERE f.contype = 'f' AND f.conindid = i.indexrelid), \
                        (SELECT a.attname::text FROM pg_attribute a JOIN pg_am am ON am.oid = ic.relam \
                          WHERE am.amname = 'btree' AND a.attrelid = i.indrelid AND a.attnum = i.indkey[0]) \
                 FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid \
                 LEFT JOIN pg_constraint c ON c.conindid = i.indexrelid AND c.conrelid = i.indrelid AND c.contype IN ('p', 'u', 'x') \
                 WHERE i.indrelid = $1 ORDER BY 1",
                &[&self.oid],
            )
            .await
            .map_err(|cause| Error::Query { what: format!("reading the indexes of {}", self.qualified()), cause })?;
        Ok(rows
            .iter()
            .map(|r| IndexInfo {
                name: r.get(0),
                definition: r.get(1),
                unique: r.get(2),
                constraint: r.get(3),
                invalid: r.get(4),
                bytes: r.get(5),
                constraint_kind: match r.get::<_, Option<&str>>(6) {
                    Some("p") => Some(ConstraintKind::PrimaryKey),
                    Some("u") => Some(ConstraintKind::Unique),
                    Some("x") => Some(ConstraintKind::Exclusion),
                    _ => None,
                },
                deferrable: r.get(7),
                referenced: r.get(8),
                leading_column: r.get(9),
                stays: None,
            })
            .collect())
    }

    /// The table's own foreign keys (checked row by row while rows are inserted).
    pub async fn foreign_keys(&self, client: &Client) -> Result<Vec<ForeignKeyInfo>> {
        let rows = client
            .query(
                "SELECT conname::text, pg_get_constraintdef(oid), convalidated FROM pg_constraint \
                 WHERE conrelid = $1 AND contype = 'f' AND conparentid = 0 ORDER BY 1",
                &[&self.oid],
            )
            .await
            .map_err(|cause| Error::Query {
                what: format!("reading the foreign keys of {}", self.qualified()),
                cause,
            })?;
        Ok(rows
            .iter()
            .map(|r| ForeignKeyInfo {
                name: r.get(0),
                definition: r.get(1),
                validated: r.get(2),
            })
            .collect())
    }

    /// What the definitions of the indexes `names` leave out, by index name: see [`IndexExtras`].
    /// For a partitioned index, its partitions' indexes too.
    pub async fn index_extras(
        &self,
        client: &Client,
        names: &[&str],
    ) -> Result<HashMap<String, IndexExtras>> {
        let rows = client
            .query(
                "WITH idx AS (SELECT ic.relname::text AS name, i.indexrelid AS root \
                   FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid \
                   WHERE i.indrelid = $1 AND ic.relname = ANY($2)), \
                 tree AS (SELECT name, root AS relid FROM idx \
                          UNION SELECT idx.name, t.relid FROM idx, pg_partition_tree(idx.root) t), \
                 step AS (SELECT tree.name, s.ord, s.sql FROM tree \
                   JOIN pg_index i ON i.indexrelid = tree.relid \
                   JOIN pg_class ic ON ic.oid = i.indexrelid JOIN pg_namespace n ON n.oid = ic.relnamespace \
                   JOIN pg_class tc ON tc.oid = i.indrelid JOIN pg_namespace tn ON tn.oid = tc.relnamespace \
                   CROSS JOIN LATERAL ( \
                     SELECT 1, format('COMMENT ON INDEX %I.%I IS %L', n.nspname, ic.relname, d.description) \
                       FROM pg_description d \
                       WHERE d.classoid = 'pg_class'::regclass AND d.objoid = ic.oid AND d.objsubid = 0 \
                     UNION ALL SELECT 2, format('ALTER INDEX %I.%I ALTER COLUMN %s SET STATISTICS %s', \
                                                n.nspname, ic.relname, a.attnum, a.attstattarget) \
                       FROM pg_attribute a WHERE a.attrelid = ic.oid AND a.attstattarget >= 0 \
                     UNION ALL SELECT 3, format('ALTER TABLE %I.%I CLUSTER ON %I', tn.nspname, tc.relname, ic.relname) \
                       WHERE i.indisclustered \
                     UNION ALL SELECT 4, format('ALTER TABLE %I.%I REPLICA IDENTITY USING INDEX %I', \
                                                tn.nspname, tc.relname, ic.relname) \
                       WHERE i.indisreplident \
                     UNION ALL SELECT 5, format('ALTER INDEX %I.%I DEPENDS ON EXTENSION %I', n.nspname, ic.relname, e.extname) \
                       FROM pg_depend p JOIN pg_extension e ON e.oid = p.refobjid \
                       WHERE p.classid = 'pg_class'::regclass AND p.objid = ic.oid \
                         AND p.refclassid = 'pg_extension'::regclass AND p.deptype = 'x' \
                     UNION ALL SELECT 6, format('COMMENT ON CONSTRAINT %I ON %I.%I IS %L', \
                                                k.conname, tn.nspname, tc.relname, d.description) \
                       FROM pg_constraint k JOIN pg_description d ON d.classoid = 'pg_constraint'::regclass \
                         AND d.objoid = k.oid AND d.objsubid = 0 \
                       WHERE k.conrelid = i.indrelid AND k.conindid = ic.oid AND k.contype IN ('p', 'u') \
                   ) s(ord, sql)) \
                 SELECT idx.name, \
                   (SELECT string_agg(sql, '; ' ORDER BY ord, sql) FROM step WHERE step.name = idx.name), \
                   coalesce((SELECT CASE WHEN k.condeferred THEN ' DEFERRABLE INITIALLY DEFERRED' \
                                         WHEN k.condeferrable THEN ' DEFERRABLE' END \
                             FROM pg_constraint k WHERE k.conrelid = $1 AND k.conindid = idx.root \
                               AND k.contype IN ('p', 'u')), ''), \
                   (SELECT string_agg(DISTINCT s.spcname::text, ', ') FROM tree \
                     JOIN pg_class c ON c.oid = tree.relid JOIN pg_tablespace s ON s.oid = c.reltablespace \
                     WHERE tree.name = idx.name AND NOT has_tablespace_privilege(s.oid, 'CREATE')) \
                 FROM idx",
                &[&self.oid, &names],
            )
            .await
            .map_err(|cause| Error::Query {
                what: format!("reading what the index definitions of {} leave out", self.qualified()),
                cause,
            })?;
        Ok(rows
            .iter()
            .map(|r| {
                let extras = IndexExtras {
                    follow_up: r.get(1),
                    deferral: r.get(2),
                    denied_tablespaces: r.get(3),
                };
                (r.get(0), extras)
            })
            .collect())
    }

    /// `COMMENT ON CONSTRAINT` for each of the foreign keys `names` that has a comment (which
    /// `pg_get_constraintdef` leaves out), by name.
    pub async fn foreign_key_comments(
        &self,
        client: &Client,
        names: &[&str],
    ) -> Result<HashMap<String, String>> {
        let rows = client
            .query(
                "SELECT k.conname::text, format('COMMENT ON CONSTRAINT %I ON %s IS %L', \
                        k.conname, $3::text, d.description) \
                 FROM pg_constraint k JOIN pg_description d ON d.classoid = 'pg_constraint'::regclass \
                   AND d.objoid = k.oid AND d.objsubid = 0 \
                 WHERE k.conrelid = $1 AND k.contype = 'f' AND k.conname = ANY($2)",
                &[&self.oid, &names, &self.qualified()],
            )
            .await
            .map_err(|cause| Error::Query {
                what: format!("reading the comments on the foreign keys of {}", self.qualified()),
                cause,
            })?;
        Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
    }

    /// Other tables' foreign keys that reference this table or one of its partitions, as
    /// `"public"."kid" (kid_pid_fkey)`: while one exists the server refuses to TRUNCATE the table.
    /// (A key of the table on itself does not stop it.)
    pub async fn referenced_by(&self, client: &Client) -> Result<Vec<String>> {
        let rows = client
            .query(
                "WITH tree AS (SELECT $1::oid AS relid UNION SELECT relid FROM pg_partition_tree($1::oid::regclass)) \
                 SELECT n.nspname::text, r.relname::text, c.conname::text FROM pg_constraint c \
                 JOIN pg_class r ON r.oid = c.conrelid JOIN pg_namespace n ON n.oid = r.relnamespace \
                 WHERE c.contype = 'f' AND c.conparentid = 0 \
                   AND c.confrelid IN (SELECT relid FROM tree) AND c.conrelid NOT IN (SELECT relid FROM tree) \
                 ORDER BY 1, 2, 3",
                &[&self.oid],
            )
            .await
            .map_err(|cause| Error::Query {
                what: format!("reading the foreign keys that reference {}", self.qualified()),
                cause,
            })?;
        Ok(rows
            .iter()
            .map(|r| {
                let (schema, table, key): (&str, &str, &str) = (r.get(0), r.get(1), r.get(2));
                format!("{}.{} ({key})", quote_ident(schema), quote_ident(table))
            })
            .collect())
    }

    pub async fn size(&self, client: &Client) -> Result<TableSize> {
        let r = client
            .query_one(
                "SELECT coalesce((SELECT sum(pg_table_size(t.relid)) FROM pg_partition_tree(c.oid) t WHERE t.isleaf), \
                                 pg_table_size(c.oid))::bigint, \
                        coalesce((SELECT sum(pg_indexes_size(t.relid)) FROM pg_partition_tree(c.oid) t WHERE t.isleaf), \
                                 pg_indexes_size(c.oid))::bigint, \
                        c.reltuples::float8 FROM pg_class c WHERE c.oid = $1",
                &[&self.oid],
            )
            .await
            .map_err(|cause| Error::Query { what: format!("reading the size of {}", self.qualified()), cause })?;
        let readable: bool = client
            .query_one(
                "SELECT has_table_privilege($1::oid, 'SELECT')",
                &[&self.oid],
            )
            .await
            .map_err(|cause| Error::Query {
                what: format!("checking SELECT on {}", self.qualified()),
                cause,
            })?
            .get(0);
        let empty = readable
            && client
                .query_one(
                    &format!("SELECT NOT EXISTS (SELECT 1 FROM {})", self.qualified()),
                    &[],
                )
                .await
                .map_err(|cause| Error::Query {
                    what: format!("checking whether {} is empty", self.qualified()),
                    cause,
                })?
                .get::<_, bool>(0);
        Ok(TableSize {
            table_bytes: r.get(0),
            index_bytes: r.get(1),
            rows_estimate: r.get(2),
            empty,
        })
    }
}

/// What `pg_get_indexdef` leaves out of an index (besides its tablespace, which
/// [`TableInfo::indexes`] puts in the definition), for [`crate::ddl`] to put back.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IndexExtras {
    /// The statements that restore the rest, `; `-separated: comments on the index and on its
    /// key, statistics targets of its expression columns, `CLUSTER ON`, `REPLICA IDENTITY USING
    /// INDEX` and `DEPENDS ON EXTENSION`. `ALTER TABLE` takes a lock on the table that would
    /// deadlock against other indexes' builds, so they run once every build is done.
    pub follow_up: Option<String>,
    /// ` DEFERRABLE` or ` DEFERRABLE INITIALLY DEFERRED` for the index of a deferrable key:
    /// `ADD CONSTRAINT ... USING INDEX` makes it immediate unless told.
    pub deferral: String,
    /// The tablespaces of the index (or of its partitions' indexes) the current user may not
    /// create in, comma-separated: it could not be rebuilt there.
    pub denied_tablespaces: Option<String>,
}

/// A column of the target table with what PostgreSQL's encoders need beyond the shared
/// description.
#[derive(Debug, Clone)]
pub struct PgColumn {
    pub column: TargetColumn,
    /// The type modifier that applies to values (for a domain, its base type's), -1 for none.
    pub typmod: i32,
    pub value_type: ValueType,
    /// A SELECT that reads `$1` (text) with the type's own input function and typmod, exactly as
    /// COPY does. (A cast would not do: `'abc'::varchar(2)` truncates where COPY refuses.)
    pub input_sql: String,
}

/// The target table: its name as the server spells it and the columns a load may feed.
#[derive(Debug, Clone)]
pub struct TableInfo {
    pub oid: u32,
    pub schema: String,
    pub name: String,
    /// Columns COPY would fill without a column list: not dropped, not generated.
    pub columns: Vec<PgColumn>,
    /// A partitioned table (rows go to its partitions).
    pub partitioned: bool,
}

impl TableInfo {
    /// The columns as every engine describes them.
    pub fn target_columns(&self) -> Vec<TargetColumn> {
        self.columns.iter().map(|c| c.column.clone()).collect()
    }

    /// The table's own description of `columns` (which the load maps from this table's);
    /// `None` if one is not this table's.
    pub fn described(&self, columns: &[TargetColumn]) -> Option<Vec<PgColumn>> {
        let own = |c: &TargetColumn| self.columns.iter().find(|own| own.column.name == c.name);
        columns.iter().map(|c| own(c).cloned()).collect()
    }

    /// `"schema"."table"`, safe to splice into SQL.
    pub fn qualified(&self) -> String {
        format!("{}.{}", quote_ident(&self.schema), quote_ident(&self.name))
    }

    /// How Citus distributes the table (`pg_dist_partition.partmethod`: `h` hash, `r` range,
    /// `a` append, `n` reference table), when the server runs Citus and the table is one of its
    /// distributed tables.
    pub async fn citus_distribution(&self, client: &Client) -> Result<Option<String>> {
        if !relations_exist(client, &["pg_dist_partition"]).await? {
            return Ok(None);
        }
        let row = client
            .query_opt(
                "SELECT partmethod::text FROM pg_dist_partition WHERE logicalrelid = $1::oid::regclass",
                &[&self.oid],
            )
            .await
            .map_err(|cause| Error::Query {
                what: "reading Citus' pg_dist_partition".into(),
                cause,
            })?;
        Ok(row.map(|r| r.get(0)))
    }

    /// Looks `table` up as the server would (`regclass`: search_path, quoting, case folding).
    pub async fn read(client: &Client, table: &str) -> Result<TableInfo> {
        let found = client
            .query_opt(
                "SELECT c.oid, n.nspname, c.relname, c.relkind::text, has_table_privilege(c.oid, 'INSERT') \
                 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
                 WHERE c.oid = to_regclass($1)",
                &[&table],
            )
            .await
            .map_err(|cause| Error::Query { what: format!("looking up table {table}"), cause })?;
        let Some(row) = found else {
            return Err(Error::TableNotFound(table.to_string()));
        };
        let oid: u32 = row.get(0);
        let (schema, name, relkind): (String, String, String) =
            (row.get(1), row.get(2), row.get(3));
        if relkind != "r" && relkind != "p" {
            return Err(Error::NotATable(format!(
                "{}.{}",
                quote_ident(&schema),
                quote_ident(&name)
            )));
        }
        if !row.get::<_, bool>(4) {
            return Err(Error::Permission(format!(
                "the current user may not INSERT into {}.{} (GRANT INSERT is needed)",
                quote_ident(&schema),
                quote_ident(&name)
            )));
        }
        let rows = client
            .query(
                "SELECT a.attname::text, format_type(a.atttypid, a.atttypmod), a.atttypmod, a.attnotnull, \
                        a.atttypid, t.typtype::text, t.typelem, t.typlen, t.typbasetype, t.typtypmod \
                 FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid \
                 WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = '' \
                 ORDER BY a.attnum",
                &[&oid],
            )
            .await
            .map_err(|cause| Error::Query { what: format!("reading the columns of {table}"), cause })?;
        let mut columns = Vec::with_capacity(rows.len());
        for r in rows {
            let ty = TypeRow {
                oid: r.get(4),
                typtype: r.get(5),
                elem: r.get(6),
                len: r.get(7),
                base: r.get(8),
                base_typmod: r.get(9),
            };
            let (value_type, typmod, io_type) = resolve_type(client, ty, r.get(2)).await?;
            let input_sql = input_function_sql(client, io_type, typmod).await?;
            let type_sql: String = r.get(1);
            let column = TargetColumn {
                name: r.get(0),
                sql_type: crate::sql_type::parse(&type_sql),
                type_sql,
                not_null: r.get(3),
            };
            columns.push(PgColumn {
                column,
                typmod,
                value_type,
                input_sql,
            });
        }
        Ok(TableInfo {
            oid,
            schema,
            name,
            columns,
            partitioned: relkind == "p",
        })
    }
}

/// Whether every relation in `names` (qualified as SQL reads them) exists: the ledger, journal
/// and commit log are made by the first load that needs them, and readers find none before.
pub(crate) async fn relations_exist(client: &Client, names: &[&str]) -> Result<bool> {
    let names: Vec<&str> = names.to_vec();
    Ok(client
        .query_one(
            "SELECT bool_and(to_regclass(n) IS NOT NULL) FROM unnest($1::text[]) n",
            &[&names],
        )
        .await
        .map_err(crate::query_error(format!(
            "looking for {}",
            names.join(", ")
        )))?
        .get(0))
}

struct TypeRow {
    oid: u32,
    typtype: String,
    elem: u32,
    len: i16,
    base: u32,
    base_typmod: i32,
}

/// Maps a column type to an encoder: domains to their base type (the server's binary input
/// for a domain reads the base type, then checks the domain's constraints), enums to their label
/// text, arrays to their element.
/// Also returns the type whose input function reads the column's text (a domain's base type:
/// the binary value of a domain is its base type's, and the server checks the domain's
/// constraints when it receives it).
async fn resolve_type(
    client: &Client,
    mut ty: TypeRow,
    mut typmod: i32,
) -> Result<(ValueType, i32, u32)> {
    for _ in 0..32 {
        match ty.typtype.as_str() {
            "d" => {
                typmod = ty.base_typmod;
                ty = read_type(client, ty.base).await?;
            }
            "e" => {
                return Ok((
                    ValueType::Scalar {
                        scalar: ScalarType::Text,
                    },
                    -1,
                    ty.oid,
                ))
            }
            _ if ty.elem != 0 && ty.len == -1 => {
                let elem = read_type(client, ty.elem).await?;
                let value_type = match (elem.typtype.as_str(), ScalarType::from_oid(elem.oid)) {
                    ("e", _) => ValueType::Array {
                        elem: ScalarType::Text,
                        elem_oid: elem.oid,
                    },
                    ("b", Some(scalar)) => ValueType::Array {
                        elem: scalar,
                        elem_oid: elem.oid,
                    },
                    _ => ValueType::Unsupported,
                };
                return Ok((value_type, typmod, ty.oid));
            }
            _ => {
                let value_type = ScalarType::from_oid(ty.oid)
                    .map_or(ValueType::Unsupported, |scalar| ValueType::Scalar {
                        scalar,
                    });
                return Ok((value_type, typmod, ty.oid));
            }
        }
    }
    Ok((ValueType::Unsupported, typmod, ty.oid))
}

/// `SELECT schema.typinput($1::text::cstring[, typioparam, typmod])`: how COPY reads text.
async fn input_function_sql(client: &Client, type_oid: u32, typmod: i32) -> Result<String> {
    let r = client
        .query_one(
            "SELECT quote_ident(n.nspname) || '.' || quote_ident(p.proname), p.pronargs, \
                    CASE WHEN t.typelem <> 0 THEN t.typelem ELSE t.oid END \
             FROM pg_type t JOIN pg_proc p ON p.oid = t.typinput JOIN pg_namespace n ON n.oid = p.pronamespace \
             WHERE t.oid = $1",
            &[&type_oid],
        )
        .await
        .map_err(|cause| Error::Query { what: format!("reading the input function of type {type_oid}"), cause })?;
    let (function, nargs, ioparam): (String, i16, u32) = (r.get(0), r.get(1), r.get(2));
    Ok(if nargs >= 3 {
        format!("SELECT {function}($1::text::cstring, {ioparam}::oid, {typmod})")
    } else {
        format!("SELECT {function}($1::text::cstring)")
    })
}

async fn read_type(client: &Client, oid: u32) -> Result<TypeRow> {
    let r = client
        .query_one("SELECT oid, typtype::text, typelem, typlen, typbasetype, typtypmod FROM pg_type WHERE oid = $1", &[&oid])
        .await
        .map_err(|cause| Error::Query { what: format!("reading type {oid}"), cause })?;
    Ok(TypeRow {
        oid: r.get(0),
        typtype: r.get(1),
        elem: r.get(2),
        len: r.get(3),
        base: r.get(4),
        base_typmod: r.get(5),
    })
}

impl TableInfo {
    pub async fn hidden_work(&self, client: &Client) -> Result<HiddenWork> {
        let q = |what: &str| {
            let what = format!("reading the {what} of {}", self.qualified());
            move |cause| Error::Query { what, cause }
        };
        let triggers = client
            .query(
                "SELECT tgname::text, pg_get_triggerdef(oid), tgenabled::text FROM pg_trigger \
                 WHERE tgrelid = $1 AND NOT tgisinternal ORDER BY 1",
                &[&self.oid],
            )
            .await
            .map_err(q("triggers"))?
            .iter()
            .map(|r| Trigger {
                name: r.get(0),
                definition: r.get(1),
                firing: match r.get::<_, &str>(2) {
                    "A" => Firing::Always,
                    "R" => Firing::Replica,
                    "D" => Firing::Disabled,
                    _ => Firing::Origin,
                },
            })
            .collect();
        let sequences = client
            .query(
                "SELECT a.attname::text, s.seqrelid::regclass::text, s.seqcache FROM pg_attribute a \
                 JOIN pg_depend d ON d.refclassid = 'pg_class'::regclass AND d.refobjid = a.attrelid \
                      AND d.refobjsubid = a.attnum AND d.classid = 'pg_class'::regclass AND d.deptype IN ('a', 'i') \
                 JOIN pg_sequence s ON s.seqrelid = d.objid \
                 WHERE a.attrelid = $1 ORDER BY a.attnum",
                &[&self.oid],
            )
            .await
            .map_err(q("sequences"))?
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2)))
            .collect();
        // Built-in functions have no pg_depend entries, so the expression is matched against the
        // names of volatile functions (nextval excepted: COPY's batching handles it).
        let volatile_defaults = client
            .query(
                "SELECT a.attname::text, pg_get_expr(d.adbin, d.adrelid) FROM pg_attrdef d \
                 JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum \
                 WHERE d.adrelid = $1 AND a.attgenerated = '' AND EXISTS ( \
                   SELECT 1 FROM pg_proc p WHERE p.provolatile = 'v' AND p.proname <> 'nextval' \
                   AND pg_get_expr(d.adbin, d.adrelid) LIKE '%' || p.proname || '(%') \
                 ORDER BY a.attnum",
                &[&self.oid],
            )
            .await
            .map_err(q("defaults"))?
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect();
        // TOAST takes values once a row passes ~2 kB (TOAST_TUPLE_THRESHOLD). Statistics
        // measure toasted values by their pointer, so the TOAST table's size is the evidence;
        // the columns named are those whose type can hold such values.
        let toast_bytes: i64 = client
            .query_one(
                "SELECT coalesce(pg_relation_size(NULLIF(reltoastrelid, 0)), 0) FROM pg_class WHERE oid = $1",
                &[&self.oid],
            )
            .await
            .map_err(q("TOAST table"))?
            .get(0);
        let toast_columns = client
            .query(
                "SELECT a.attname::text, format_type(a.atttypid, a.atttypmod) \
                 FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid \
                 WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped AND t.typlen = -1 \
                   AND a.attstorage IN ('x', 'e') AND (a.atttypmod = -1 OR a.atttypmod > 2036) \
                 ORDER BY a.attnum",
                &[&self.oid],
            )
            .await
            .map_err(q("TOAST-able columns"))?
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect();
        let partitions: i64 = client
            .query_one(
                "SELECT count(*) FROM pg_inherits WHERE inhparent = $1",
                &[&self.oid],
            )
            .await
            .map_err(q("partitions"))?
            .get(0);
        let settings = client
            .query(
                "SELECT name::text, setting || coalesce(unit, '') FROM pg_settings WHERE name IN \
                 ('wal_level', 'max_wal_size', 'checkpoint_timeout', 'maintenance_work_mem', 'max_parallel_maintenance_workers', \
                  'synchronous_commit', 'data_checksums', 'wal_compression', 'full_page_writes') ORDER BY 1",
                &[],
            )
            .await
            .map_err(q("settings"))?
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect();
        Ok(HiddenWork {
            triggers,
            sequences,
            volatile_defaults,
            toast_bytes,
            toast_columns,
            partitions,
            settings,
        })
    }
}
