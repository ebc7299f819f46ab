//! Foreign partitions loaded on their own servers. A `postgres_fdw` foreign table's rows live
//! in a remote table: the foreign server's options say where (host, port, database), the
//! foreign table's options which table (`schema_name`, `table_name`, each column's
//! `column_name`), and the user mapping as whom. COPY into the parent sends those rows through
//! the coordinator as INSERTs; inrush COPYs them straight into the remote table instead, on a
//! connection of its own, with the password the client's own `PGPASSWORD` or `.pgpass` gives
//! (never the mapping's: that one is the coordinator's to use).
//!
//! Straight COPY must mean what the coordinator's INSERTs mean, so a remote table is loaded
//! straight only when each loaded column has the same type there as on the coordinator (binary
//! COPY carries no type), and each column of the foreign table the load omits has no default,
//! identity or generation on the remote side (the coordinator would send NULL for it).

use crate::{query_error, quote_ident, ConnectOptions, Result};
use inrush_core::TargetColumn;
use tokio_postgres::config::Host;
use tokio_postgres::Client;

/// A foreign server some leaves of the tree live on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shard {
    /// The foreign server's name on the coordinator.
    pub server: String,
    /// How the client reaches it: a libpq conninfo without a password.
    pub conninfo: String,
}

/// Where a foreign leaf's rows go on its shard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Remote {
    /// Its index in [`super::Router::shards`].
    pub shard: usize,
    /// `"schema"."table"` on the shard, safe to splice into SQL.
    pub qualified: String,
    /// The remote names of the loaded columns, in the load's order.
    pub columns: Vec<String>,
    /// The loaded columns' types, as the coordinator prints them.
    types: Vec<String>,
    /// The remote names of the foreign table's columns the load omits.
    omitted: Vec<String>,
}

/// A foreign server as the coordinator's catalog describes it to the current user.
struct ServerRow {
    name: String,
    options: Vec<String>,
    /// The user mapping's options (`None` when there is none, or the user may not read it).
    mapping_options: Option<Vec<String>>,
    current_user: String,
}

/// The catalog columns [`ServerRow`] is read from, in its order, for a query over
/// `pg_foreign_server s`.
const SERVER_COLUMNS: &str = "s.srvname::text, coalesce(s.srvoptions, '{}')::text[], \
     (SELECT um.umoptions FROM pg_user_mappings um WHERE um.srvid = s.oid \
        AND (um.umuser = 0 OR um.usename = current_user) ORDER BY um.umuser = 0 LIMIT 1)::text[], \
     current_user::text";

impl ServerRow {
    /// From the row's columns `at..at + 4` (see [`SERVER_COLUMNS`]).
    fn read(row: &tokio_postgres::Row, at: usize) -> ServerRow {
        ServerRow {
            name: row.get(at),
            options: row.get(at + 1),
            mapping_options: row.get(at + 2),
            current_user: row.get(at + 3),
        }
    }
}

/// One foreign leaf as the coordinator's catalog describes it.
struct ForeignRow {
    oid: u32,
    wrapper: String,
    server: ServerRow,
    table_options: Vec<String>,
    schema: String,
    name: String,
}

/// The foreign server `name` of the coordinator `client`, as a shard the client reaches (see
/// [`remotes`] for `coordinator`); `None` if there is no such server.
pub async fn shard_named(
    client: &Client,
    name: &str,
    coordinator: &ConnectOptions,
) -> Result<Option<Shard>> {
    let sql = format!("SELECT {SERVER_COLUMNS} FROM pg_foreign_server s WHERE s.srvname = $1");
    let row = client
        .query_opt(&sql, &[&name])
        .await
        .map_err(query_error("reading a foreign server"))?;
    Ok(row.map(|row| {
        let server = ServerRow::read(&row, 0);
        Shard {
            conninfo: conninfo(&server, coordinator),
            server: server.name,
        }
    }))
}

/// The remote table of every foreign leaf in `oids` (in that order), with the shards they live
/// on; or why one of them cannot be loaded straight. `coordinator`: the target, whose host is
/// where a foreign server without a host is (the coordinator's postgres_fdw connects locally).
pub(super) async fn remotes(
    client: &Client,
    oids: &[u32],
    columns: &[TargetColumn],
    coordinator: &ConnectOptions,
) -> Result<Result<(Vec<Remote>, Vec<Shard>), String>> {
    let sql = format!(
        "SELECT ft.ftrelid, w.fdwname::text, coalesce(ft.ftoptions, '{{}}')::text[], \
                n.nspname::text, c.relname::text, {SERVER_COLUMNS} \
         FROM pg_foreign_table ft JOIN pg_foreign_server s ON s.oid = ft.ftserver \
         JOIN pg_foreign_data_wrapper w ON w.oid = s.srvfdw \
         JOIN pg_class c ON c.oid = ft.ftrelid JOIN pg_namespace n ON n.oid = c.relnamespace \
         WHERE ft.ftrelid = ANY($1::oid[])"
    );
    let rows = client
        .query(&sql, &[&oids])
        .await
        .map_err(query_error("reading the foreign partitions' servers"))?;
    let foreign: Vec<ForeignRow> = rows
        .iter()
        .map(|r| ForeignRow {
            oid: r.get(0),
            wrapper: r.get(1),
            table_options: r.get(2),
            schema: r.get(3),
            name: r.get(4),
            server: ServerRow::read(r, 5),
        })
        .collect();
    let attributes = client
        .query(
            "SELECT a.attrelid, a.attname::text, format_type(a.atttypid, a.atttypmod), \
                    coalesce(a.attfdwoptions, '{}')::text[] \
             FROM pg_attribute a WHERE a.attrelid = ANY($1::oid[]) AND a.attnum > 0 \
               AND NOT a.attisdropped ORDER BY a.attrelid, a.attnum",
            &[&oids],
        )
        .await
        .map_err(query_error("reading the foreign partitions' columns"))?;
    let mut shards: Vec<Shard> = Vec::new();
    let mut remotes = Vec::new();
    for &oid in oids {
        let Some(leaf) = foreign.iter().find(|f| f.oid == oid) else {
            return Ok(Err(format!(
                "foreign partition {oid} was not found in pg_foreign_table"
            )));
        };
        let local = format!("{}.{}", quote_ident(&leaf.schema), quote_ident(&leaf.name));
        if leaf.wrapper != "postgres_fdw" {
            return Ok(Err(format!(
                "partition {local} is a foreign table of the {} wrapper (inrush loads postgres_fdw's remote tables only)",
                leaf.wrapper
            )));
        }
        let shard = match shards.iter().position(|s| s.server == leaf.server.name) {
            Some(at) => at,
            None => {
                shards.push(Shard {
                    server: leaf.server.name.clone(),
                    conninfo: conninfo(&leaf.server, coordinator),
                });
                shards.len() - 1
            }
        };
        let table_option = |key| option(&leaf.table_options, key);
        let qualified = format!(
            "{}.{}",
            quote_ident(table_option("schema_name").unwrap_or(&leaf.schema)),
            quote_ident(table_option("table_name").unwrap_or(&leaf.name))
        );
        // Each column of the foreign table: its local name, type, and remote name.
        let mine: Vec<(String, String, String)> = attributes
            .iter()
            .filter(|a| a.get::<_, u32>(0) == oid)
            .map(|a| {
                let name: String = a.get(1);
                let options: Vec<String> = a.get(3);
                let remote = option(&options, "column_name").unwrap_or(&name).to_string();
                (name, a.get(2), remote)
            })
            .collect();
        let mut remote_columns = Vec::new();
        let mut types = Vec::new();
        for column in columns {
            let Some((_, type_sql, remote)) = mine.iter().find(|(n, ..)| *n == column.name) else {
                return Ok(Err(format!(
                    "column {} is not a column of foreign partition {local}",
                    column.name
                )));
            };
            remote_columns.push(remote.clone());
            types.push(type_sql.clone());
        }
        let omitted = mine
            .iter()
            .filter(|(n, ..)| !columns.iter().any(|c| c.name == *n))
            .map(|(.., remote)| remote.clone())
            .collect();
        remotes.push(Remote {
            shard,
            qualified,
            columns: remote_columns,
            types,
            omitted,
        });
    }
    Ok(Ok((remotes, shards)))
}

/// `key`'s value in a catalog options array (`{key=value,...}`).
fn option<'o>(options: &'o [String], key: &str) -> Option<&'o str> {
    options
        .iter()
        .find_map(|o| o.strip_prefix(key)?.strip_prefix('='))
}

/// The libpq options of a foreign server that say where it is and how to talk to it.
const CONNECTION_KEYS: [&str; 6] = [
    "host",
    "hostaddr",
    "port",
    "dbname",
    "sslmode",
    "connect_timeout",
];

/// Where the client reaches a foreign server, as whom: the server's own connection options,
/// the user mapping's user (else the coordinator's current user), and what libpq would take by
/// default on the coordinator for what the server leaves out (its host; port 5432; a database
/// named as the user).
fn conninfo(server: &ServerRow, coordinator: &ConnectOptions) -> String {
    let mut pairs: Vec<(&str, String)> = CONNECTION_KEYS
        .iter()
        .filter_map(|&key| Some((key, option(&server.options, key)?.to_string())))
        .collect();
    let user = server
        .mapping_options
        .as_deref()
        .and_then(|o| option(o, "user"))
        .unwrap_or(&server.current_user)
        .to_string();
    let has = |pairs: &[(&str, String)], key: &str| pairs.iter().any(|(k, _)| *k == key);
    if !has(&pairs, "host") && !has(&pairs, "hostaddr") {
        if let Some(host) = coordinator.config().get_hosts().first() {
            let host = match host {
                Host::Tcp(h) => h.clone(),
                Host::Unix(p) => p.display().to_string(),
            };
            pairs.push(("host", host));
        }
    }
    if !has(&pairs, "port") {
        pairs.push(("port", "5432".into()));
    }
    if !has(&pairs, "dbname") {
        pairs.push(("dbname", user.clone()));
    }
    pairs.push(("user", user));
    pairs
        .iter()
        .map(|(k, v)| format!("{k}='{}'", v.replace('\\', "\\\\").replace('\'', "\\'")))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A shard the load writes to, connected.
pub struct ShardServer {
    pub shard: Shard,
    pub options: ConnectOptions,
    /// Reads the remote catalog, watches the load's sessions there, runs the upkeep.
    pub control: Client,
    /// `max_prepared_transactions`: how many transactions can wait there for a joint commit.
    pub prepared_slots: i64,
    /// The remote tables the load writes to.
    pub tables: Vec<String>,
}

/// Connects to every shard and checks that COPY straight into each remote table means what
/// postgres_fdw's INSERTs would (see the module documentation); or why not, in words. Each
/// shard is given the load's network timeout (`limit`): its connections' TCP user timeout, and
/// how long a lost answer there is asked about.
pub async fn open(
    shards: &[Shard],
    remotes: &[Remote],
    limit: std::time::Duration,
) -> Result<Result<Vec<ShardServer>, String>> {
    let mut opened = Vec::new();
    for (at, shard) in shards.iter().enumerate() {
        let options = ConnectOptions::parse(&shard.conninfo)?.with_network_timeout(limit);
        let control = match options.connect().await {
            Ok(client) => client,
            Err(e) => {
                return Ok(Err(format!(
                    "foreign server {} ({}) cannot be reached from here: {e}",
                    shard.server,
                    options.describe()
                )))
            }
        };
        let mut tables = Vec::new();
        for remote in remotes.iter().filter(|r| r.shard == at) {
            if let Some(reason) = differs(&control, remote).await? {
                return Ok(Err(format!(
                    "{reason} on foreign server {} ({})",
                    shard.server,
                    options.describe()
                )));
            }
            // Two foreign leaves may name one remote table: planned and analyzed once.
            if !tables.contains(&remote.qualified) {
                tables.push(remote.qualified.clone());
            }
        }
        let prepared_slots = crate::activity::prepared_slots(&control).await?;
        opened.push(ShardServer {
            shard: shard.clone(),
            options,
            control,
            prepared_slots,
            tables,
        });
    }
    Ok(Ok(opened))
}

/// Why COPY into `remote` would differ from the coordinator's INSERTs, if it would.
async fn differs(control: &Client, remote: &Remote) -> Result<Option<String>> {
    let rows = control
        .query(
            "SELECT c.relkind::text, a.attname::text, format_type(a.atttypid, a.atttypmod), \
                    (ad.adbin IS NOT NULL OR a.attidentity <> '' OR a.attgenerated <> '') \
             FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped \
             LEFT JOIN pg_attrdef ad ON ad.adrelid = a.attrelid AND ad.adnum = a.attnum \
             WHERE c.oid = to_regclass($1)",
            &[&remote.qualified],
        )
        .await
        .map_err(query_error("reading a remote table's columns"))?;
    let Some(first) = rows.first() else {
        return Ok(Some(format!("table {} does not exist", remote.qualified)));
    };
    let kind: String = first.get(0);
    if kind != "r" && kind != "p" {
        return Ok(Some(format!(
            "{} is not a table (relkind {kind})",
            remote.qualified
        )));
    }
    let column = |name: &str| rows.iter().find(|r| r.get::<_, &str>(1) == name);
    for (name, type_sql) in remote.columns.iter().zip(&remote.types) {
        let Some(row) = column(name) else {
            return Ok(Some(format!("{} has no column {name}", remote.qualified)));
        };
        let theirs: String = row.get(2);
        if theirs != *type_sql {
            return Ok(Some(format!(
                "column {name} of {} is {theirs} there but {type_sql} on the coordinator (binary COPY needs the same type)",
                remote.qualified
            )));
        }
    }
    for name in &remote.omitted {
        if column(name).is_some_and(|row| row.get::<_, bool>(3)) {
            return Ok(Some(format!(
                "column {name} of {}, which the input omits, has a default there (through the coordinator it would be NULL)",
                remote.qualified
            )));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaf(server_options: &[&str], mapping: Option<&[&str]>) -> ServerRow {
        let strings = |o: &[&str]| o.iter().map(|s| s.to_string()).collect();
        ServerRow {
            name: "s".into(),
            options: strings(server_options),
            mapping_options: mapping.map(strings),
            current_user: "me".into(),
        }
    }

    #[test]
    fn conninfo_from_server_options_and_mapping() {
        let coordinator = ConnectOptions::parse("host=/run/pg port=5433 user=x dbname=y").unwrap();
        let full = leaf(
            &["host=10.0.0.2", "port=6000", "dbname=d'b", "fetch_size=100"],
            Some(&["user=loader", "password=secret"]),
        );
        assert_eq!(
            conninfo(&full, &coordinator),
            "host='10.0.0.2' port='6000' dbname='d\\'b' user='loader'"
        );
        // Left out: the coordinator's host, libpq's port, a database named as the user.
        let bare = leaf(&[], None);
        assert_eq!(
            conninfo(&bare, &coordinator),
            "host='/run/pg' port='5432' dbname='me' user='me'"
        );
        assert!(ConnectOptions::parse(&conninfo(&full, &coordinator)).is_ok());
    }

    #[test]
    fn options_split_at_the_first_equals_sign() {
        let options = vec!["a=1".to_string(), "ab=x=y".to_string()];
        assert_eq!(option(&options, "ab"), Some("x=y"));
        assert_eq!(option(&options, "a"), Some("1"));
        assert_eq!(option(&options, "b"), None);
    }
}
