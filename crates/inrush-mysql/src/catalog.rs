//! What a MariaDB/MySQL table is made of, read from `information_schema`.

use crate::engine_error;
use inrush_core::SqlType;
use inrush_load::{Error, Result};
use mysql_async::prelude::Queryable;
use mysql_async::Conn;

#[derive(Debug, Clone)]
pub struct Table {
    pub schema: String,
    pub name: String,
    /// InnoDB, Aria, MyISAM...
    pub engine: String,
    /// The engine has transactions (InnoDB); MyISAM, Aria, MEMORY... keep every row they are
    /// given at once, whatever the load does after.
    pub transactional: bool,
    /// Columns that take values (generated columns left out), in table order.
    pub columns: Vec<Column>,
    /// Each index, by name; PRIMARY is the primary key.
    pub indexes: Vec<Index>,
    /// The keys through which the table references other tables (or itself).
    pub foreign_keys: Vec<ForeignKey>,
    pub triggers: Vec<String>,
    /// Other tables' foreign keys whose `ON DELETE` rule changes their rows when rows of this
    /// table are deleted (CASCADE, SET NULL, SET DEFAULT), as `` `db`.`child` (key: RULE) ``.
    pub changed_by_delete: Vec<String>,
    /// Data plus index bytes (`information_schema.TABLES`, an estimate for InnoDB).
    pub bytes: u64,
    /// The table holds no row (checked, not estimated).
    pub empty: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Index {
    pub name: String,
    pub unique: bool,
    /// In key order; an expression's part is left out.
    pub columns: Vec<String>,
}

/// A foreign key of the table: its `columns` name a row of `parent` by `parent_columns`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForeignKey {
    pub name: String,
    pub columns: Vec<String>,
    pub parent_schema: String,
    pub parent_table: String,
    pub parent_columns: Vec<String>,
}

impl ForeignKey {
    /// `` `schema`.`parent` ``.
    pub fn parent(&self) -> String {
        format!(
            "{}.{}",
            quote(&self.parent_schema),
            quote(&self.parent_table)
        )
    }

    /// `` FOREIGN KEY (`a`) REFERENCES `db`.`p` (`id`) ``, for the plan.
    pub fn definition(&self) -> String {
        let list = |c: &[String]| c.iter().map(|c| quote(c)).collect::<Vec<_>>().join(", ");
        format!(
            "FOREIGN KEY ({}) REFERENCES {} ({})",
            list(&self.columns),
            self.parent(),
            list(&self.parent_columns)
        )
    }

    /// Up to five rows of `child` whose key names no row of the parent: an anti-join through
    /// the parent's index, the check `foreign_key_checks` would have made row by row. A key
    /// with a NULL part references nothing, as for the server's own check.
    ///
    /// A plain read, not a locking one: that would wait on the rows other connections of the
    /// load wrote and have not committed, and they wait for this check to pass. It is the
    /// transaction's first plain read, so it sees every parent row deleted before it; a parent
    /// row deleted after it cannot go, since the DELETE's own check waits on the loaded rows.
    pub fn orphans_sql(&self, child: &str) -> String {
        let c = |column: &String| format!("`c`.{}", quote(column));
        let on: Vec<String> = self
            .columns
            .iter()
            .zip(&self.parent_columns)
            .map(|(column, parent)| format!("`p`.{} = {}", quote(parent), c(column)))
            .collect();
        let present: Vec<String> = self
            .columns
            .iter()
            .map(|column| format!("{} IS NOT NULL", c(column)))
            .collect();
        format!(
            "SELECT {} FROM {child} `c` LEFT JOIN {} `p` ON {} WHERE `p`.{} IS NULL AND {} \
             LIMIT 5",
            self.columns.iter().map(c).collect::<Vec<_>>().join(", "),
            self.parent(),
            on.join(" AND "),
            quote(&self.parent_columns[0]),
            present.join(" AND ")
        )
    }
}

#[derive(Debug, Clone)]
pub struct Column {
    pub name: String,
    /// `DATA_TYPE`: `int`, `varchar`, `decimal`...
    pub data_type: String,
    /// `COLUMN_TYPE`: `int(10) unsigned`, `enum('a','b')`...
    pub column_type: String,
    pub not_null: bool,
    /// Characters for character types, bytes for binary ones.
    pub max_length: Option<u64>,
    pub precision: Option<u64>,
    pub scale: Option<u64>,
    pub auto_increment: bool,
}

impl Column {
    /// The column's type in the engines' shared terms (`Source` for MariaDB's own: enums,
    /// sets, spatial types, years).
    pub fn sql_type(&self) -> SqlType {
        let column_type = self.column_type.to_ascii_lowercase();
        let unsigned = column_type.contains("unsigned");
        let digits = |n: Option<u64>| n.and_then(|n| u32::try_from(n).ok());
        match self.data_type.as_str() {
            "tinyint" if column_type.starts_with("tinyint(1)") => SqlType::Boolean,
            "tinyint" => SqlType::SmallInt,
            "smallint" if !unsigned => SqlType::SmallInt,
            "smallint" | "mediumint" => SqlType::Integer,
            "int" | "integer" if !unsigned => SqlType::Integer,
            "int" | "integer" => SqlType::BigInt,
            "bigint" if !unsigned => SqlType::BigInt,
            "bigint" => SqlType::Numeric(Some((20, 0))),
            "decimal" | "numeric" => {
                SqlType::Numeric(digits(self.precision).zip(digits(self.scale)))
            }
            "float" => SqlType::Real,
            "double" => SqlType::Double,
            "bit" if column_type == "bit(1)" => SqlType::Boolean,
            "date" => SqlType::Date,
            // The catalog read has no DATETIME_PRECISION: the fraction's digits are unknown.
            "datetime" => SqlType::Timestamp(None),
            "timestamp" => SqlType::TimestampTz(None),
            "time" => SqlType::Time(None),
            "char" => digits(self.max_length).map_or(SqlType::Text, SqlType::Char),
            "varchar" => SqlType::Varchar(digits(self.max_length)),
            "tinytext" | "text" | "mediumtext" | "longtext" => SqlType::Text,
            "binary" | "varbinary" | "tinyblob" | "blob" | "mediumblob" | "longblob" => {
                SqlType::Bytes
            }
            "json" => SqlType::Json,
            "uuid" => SqlType::Uuid,
            _ => SqlType::Source {
                engine: "mariadb",
                name: self.column_type.clone(),
            },
        }
    }
}

impl Table {
    /// `` `schema`.`name` ``.
    pub fn qualified(&self) -> String {
        format!("{}.{}", quote(&self.schema), quote(&self.name))
    }

    pub fn has_unique_key(&self) -> bool {
        self.indexes.iter().any(|i| i.unique)
    }

    /// MyISAM and Aria: `ALTER TABLE ... DISABLE KEYS` stops the upkeep of non-unique indexes,
    /// and `ENABLE KEYS` builds them again by sorting.
    pub fn disables_keys(&self) -> bool {
        ["myisam", "aria"].contains(&self.engine.to_ascii_lowercase().as_str())
    }
}

/// `` `name` ``, with inner backquotes doubled.
pub fn quote(name: &str) -> String {
    format!("`{}`", name.replace('`', "``"))
}

/// `t`, `db.t`, `` `My Table` `` as SQL reads them; the schema defaults to `database`.
pub fn split_name(name: &str, database: &str) -> (String, String) {
    let mut parts = inrush_core::ident::name_parts(name, '`');
    let table = parts.pop().unwrap_or_default();
    let schema = parts.pop().unwrap_or_else(|| database.to_string());
    (schema, table)
}

/// The table `name` names in `database`.
pub async fn read(conn: &mut Conn, name: &str, database: &str) -> Result<Table> {
    let (schema, table) = split_name(name, database);
    type TableRow = (
        String,
        String,
        Option<String>,
        Option<u64>,
        Option<u64>,
        Option<String>,
    );
    let found: Option<TableRow> = conn
        .exec_first(
            "SELECT t.TABLE_SCHEMA, t.TABLE_NAME, t.ENGINE, t.DATA_LENGTH, t.INDEX_LENGTH, \
               e.TRANSACTIONS \
             FROM information_schema.TABLES t \
             LEFT JOIN information_schema.ENGINES e ON e.ENGINE = t.ENGINE \
             WHERE t.TABLE_SCHEMA = ? AND t.TABLE_NAME = ? AND t.TABLE_TYPE = 'BASE TABLE'",
            (&schema, &table),
        )
        .await
        .map_err(reading(&schema, &table, "definition"))?;
    let Some((schema, name, engine, data, index, transactions)) = found else {
        return Err(Error::NoSuchTable {
            table: quote(&table),
            place: format!(" in database {}", quote(&schema)),
        });
    };
    let columns = columns(conn, &schema, &name).await?;
    let indexes = indexes(conn, &schema, &name).await?;
    let foreign_keys = foreign_keys(conn, &schema, &name).await?;
    let triggers: Vec<String> = conn
        .exec(
            "SELECT TRIGGER_NAME FROM information_schema.TRIGGERS \
             WHERE EVENT_OBJECT_SCHEMA = ? AND EVENT_OBJECT_TABLE = ? ORDER BY TRIGGER_NAME",
            (&schema, &name),
        )
        .await
        .map_err(reading(&schema, &name, "triggers"))?;
    let changed_by_delete = changed_by_delete(conn, &schema, &name).await?;
    let qualified = format!("{}.{}", quote(&schema), quote(&name));
    let any: Option<u8> = conn
        .query_first(format!("SELECT 1 FROM {qualified} LIMIT 1"))
        .await
        .map_err(reading(&schema, &name, "rows"))?;
    Ok(Table {
        empty: any.is_none(),
        schema,
        name,
        engine: engine.unwrap_or_default(),
        transactional: transactions.as_deref() != Some("NO"),
        columns,
        indexes,
        foreign_keys,
        triggers,
        changed_by_delete,
        bytes: data.unwrap_or(0) + index.unwrap_or(0),
    })
}

/// What `schema`.`name`'s catalog says of it, failing as reading its `what`.
fn reading(schema: &str, name: &str, what: &str) -> impl FnOnce(mysql_async::Error) -> Error {
    engine_error(format!("reading the {what} of {schema}.{name}"))
}

/// The columns that take values (not generated ones), in table order.
async fn columns(conn: &mut Conn, schema: &str, name: &str) -> Result<Vec<Column>> {
    type ColumnRow = (
        String,
        String,
        String,
        String,
        Option<u64>,
        Option<u64>,
        Option<u64>,
        String,
    );
    let rows: Vec<ColumnRow> = conn
        .exec(
            "SELECT COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, IS_NULLABLE, \
               COALESCE(CHARACTER_MAXIMUM_LENGTH, 0), NUMERIC_PRECISION, NUMERIC_SCALE, EXTRA \
             FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? \
             ORDER BY ORDINAL_POSITION",
            (schema, name),
        )
        .await
        .map_err(reading(schema, name, "columns"))?;
    let columns = rows
        .into_iter()
        // Generated columns take no values.
        .filter(|r| {
            !r.7.to_ascii_uppercase().contains("GENERATED")
                && !matches!(
                    r.7.to_ascii_uppercase().as_str(),
                    "VIRTUAL" | "PERSISTENT" | "STORED"
                )
        })
        .map(|r| Column {
            name: r.0,
            data_type: r.1.to_ascii_lowercase(),
            column_type: r.2,
            not_null: r.3 == "NO",
            max_length: r.4.filter(|&n| n > 0),
            precision: r.5,
            scale: r.6,
            auto_increment: r.7.to_ascii_lowercase().contains("auto_increment"),
        })
        .collect();
    Ok(columns)
}

/// Every index, its columns in order.
async fn indexes(conn: &mut Conn, schema: &str, name: &str) -> Result<Vec<Index>> {
    let parts: Vec<(String, u64, Option<String>)> = conn
        .exec(
            "SELECT INDEX_NAME, NON_UNIQUE, COLUMN_NAME FROM information_schema.STATISTICS \
             WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY INDEX_NAME, SEQ_IN_INDEX",
            (schema, name),
        )
        .await
        .map_err(reading(schema, name, "indexes"))?;
    let mut indexes: Vec<Index> = Vec::new();
    for (index, non_unique, column) in parts {
        if indexes.last().is_none_or(|i| i.name != index) {
            indexes.push(Index {
                name: index,
                unique: non_unique == 0,
                columns: Vec::new(),
            });
        }
        if let (Some(last), Some(column)) = (indexes.last_mut(), column) {
            last.columns.push(column);
        }
    }
    Ok(indexes)
}

/// Every foreign key, its columns and its parent's in order.
async fn foreign_keys(conn: &mut Conn, schema: &str, name: &str) -> Result<Vec<ForeignKey>> {
    type KeyPart = (String, String, String, String, String);
    let parts: Vec<KeyPart> = conn
        .exec(
            "SELECT CONSTRAINT_NAME, COLUMN_NAME, REFERENCED_TABLE_SCHEMA, REFERENCED_TABLE_NAME, \
               REFERENCED_COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE \
             WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND REFERENCED_TABLE_NAME IS NOT NULL \
             ORDER BY CONSTRAINT_NAME, ORDINAL_POSITION",
            (schema, name),
        )
        .await
        .map_err(reading(schema, name, "foreign keys"))?;
    let mut foreign_keys: Vec<ForeignKey> = Vec::new();
    for (key, column, parent_schema, parent_table, parent_column) in parts {
        if foreign_keys.last().is_none_or(|k| k.name != key) {
            foreign_keys.push(ForeignKey {
                name: key,
                columns: Vec::new(),
                parent_schema,
                parent_table,
                parent_columns: Vec::new(),
            });
        }
        if let Some(last) = foreign_keys.last_mut() {
            last.columns.push(column);
            last.parent_columns.push(parent_column);
        }
    }
    Ok(foreign_keys)
}

/// Other tables' foreign keys whose `ON DELETE` rule changes their rows when rows of this one
/// are deleted.
async fn changed_by_delete(conn: &mut Conn, schema: &str, name: &str) -> Result<Vec<String>> {
    let rules: Vec<(String, String, String, String)> = conn
        .exec(
            "SELECT CONSTRAINT_SCHEMA, TABLE_NAME, CONSTRAINT_NAME, DELETE_RULE \
             FROM information_schema.REFERENTIAL_CONSTRAINTS \
             WHERE UNIQUE_CONSTRAINT_SCHEMA = ? AND REFERENCED_TABLE_NAME = ? \
               AND DELETE_RULE IN ('CASCADE', 'SET NULL', 'SET DEFAULT') \
               AND NOT (CONSTRAINT_SCHEMA = ? AND TABLE_NAME = ?) \
             ORDER BY 1, 2, 3",
            (schema, name, schema, name),
        )
        .await
        .map_err(reading(schema, name, "keys that reference it"))?;
    Ok(rules
        .into_iter()
        .map(|(child_schema, child, key, rule)| {
            format!(
                "{}.{} ({key}: ON DELETE {rule})",
                quote(&child_schema),
                quote(&child)
            )
        })
        .collect())
}

/// The redo log's position (`Innodb_lsn_current`, else `Innodb_os_log_written`): the
/// difference over a load is the redo it wrote (and whatever else ran meanwhile).
pub async fn redo_position(conn: &mut Conn) -> Option<u64> {
    for name in ["Innodb_lsn_current", "Innodb_os_log_written"] {
        let row: Option<(String, String)> = conn
            .query_first(format!("SHOW GLOBAL STATUS LIKE '{name}'"))
            .await
            .ok()?;
        if let Some(v) = row.and_then(|(_, v)| v.parse().ok()) {
            return Some(v);
        }
    }
    None
}

/// Who holds a metadata lock on `schema`.`table`, for a message: each session's connection
/// id, account and statement, as MariaDB's `metadata_lock_info` plugin lists them; without
/// the plugin the server cannot tell, and the words say how to have them named.
pub async fn lock_holders(conn: &mut Conn, schema: &str, table: &str) -> String {
    let sql = "SELECT DISTINCT p.ID, p.USER, p.HOST, COALESCE(p.INFO, '') \
               FROM information_schema.METADATA_LOCK_INFO m \
               JOIN information_schema.PROCESSLIST p ON p.ID = m.THREAD_ID \
               WHERE m.TABLE_SCHEMA = ? AND m.TABLE_NAME = ? AND p.ID <> CONNECTION_ID() \
               ORDER BY p.ID";
    let listed: std::result::Result<Vec<(u64, String, String, String)>, _> =
        conn.exec(sql, (schema, table)).await;
    let Ok(holders) = listed else {
        return "MariaDB names the session holding it once its metadata_lock_info plugin is installed (INSTALL SONAME 'metadata_lock_info')".into();
    };
    if holders.is_empty() {
        return "it let go of the table meanwhile".into();
    }
    let sessions: Vec<String> = holders
        .iter()
        .map(|(id, user, host, statement)| {
            let doing = match statement.is_empty() {
                true => "idle in its transaction".to_string(),
                false => format!("running {}", statement.chars().take(80).collect::<String>()),
            };
            format!("connection {id} ({user}@{host}, {doing})")
        })
        .collect();
    format!("held by {}", sessions.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_split_as_sql_reads_them() {
        assert_eq!(split_name("t", "db"), ("db".into(), "t".into()));
        assert_eq!(split_name("s.t", "db"), ("s".into(), "t".into()));
        assert_eq!(split_name("`a.b`", "db"), ("db".into(), "a.b".into()));
        assert_eq!(split_name("`x``y`.t", "db"), ("x`y".into(), "t".into()));
    }

    #[test]
    fn orphans_are_found_by_an_anti_join_on_every_column_of_the_key() {
        let key = ForeignKey {
            name: "fk".into(),
            columns: vec!["a".into(), "b`".into()],
            parent_schema: "db".into(),
            parent_table: "p".into(),
            parent_columns: vec!["x".into(), "y".into()],
        };
        assert_eq!(
            key.orphans_sql("`db`.`c`"),
            "SELECT `c`.`a`, `c`.`b``` FROM `db`.`c` `c` LEFT JOIN `db`.`p` `p` \
             ON `p`.`x` = `c`.`a` AND `p`.`y` = `c`.`b``` WHERE `p`.`x` IS NULL \
             AND `c`.`a` IS NOT NULL AND `c`.`b``` IS NOT NULL LIMIT 5"
        );
        assert_eq!(
            key.definition(),
            "FOREIGN KEY (`a`, `b```) REFERENCES `db`.`p` (`x`, `y`)"
        );
    }
}
