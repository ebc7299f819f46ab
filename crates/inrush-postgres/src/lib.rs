//! Everything inrush says to PostgreSQL.
//!
//! Owns: connection settings as libpq reads them ([`options`]: URIs, key=value strings, `PG*`
//! variables, `.pgpass`, `sslmode`), what the catalog says about a target table and session
//! ([`catalog`]), COPY statements and streams ([`copy`]; a source query's rows as a stream:
//! [`copy_out`]), a whole database read and written by `inrush copy` ([`database`]), asking the server to parse values the client defers ([`resolve`]), routing
//! a partitioned table's rows to its leaves ([`route`]), the
//! journal of dropped definitions ([`ddl`]), the record of a load between its commit and its
//! end ([`commits`]), what a COMMIT whose answer was lost did ([`outcome`]), the `--resume` ledger ([`ledger`]), a private
//! throwaway server for the demo and tests ([`server`]), PostgreSQL's names for the types
//! `--create` makes and a source query has ([`sql_type`]), and the load itself ([`load`]: the
//! pipeline's stages from `inrush-load` driven into parallel COPY streams, and the plan, the
//! staging, the claims and the commit around them). Identifiers are always quoted
//! ([`quote_ident`]); passwords never appear in any message this crate builds.
//!
//! Does not own: reading input, encoding values, or the pipeline's stages (`inrush-load`).

pub mod activity;
pub mod catalog;
pub mod commits;
pub mod copy;
pub mod copy_out;
pub mod database;
pub mod ddl;
pub mod job;
pub mod ledger;
pub mod load;
pub mod options;
pub mod outcome;
mod own;
pub mod parts;
mod plan;
pub mod prepared;
pub mod resolve;
pub mod route;
pub mod server;
pub mod sql_type;
mod waits;

pub use catalog::{
    ForeignKeyInfo, HiddenWork, IndexInfo, PgColumn, SessionInfo, TableInfo, TableSize,
};
pub use options::ConnectOptions;

/// A load's errors carry this crate's whole, with their kind; the causes every engine has
/// become the pipeline's own errors, worded once.
impl From<Error> for inrush_load::Error {
    fn from(e: Error) -> Self {
        match e {
            Error::TableNotFound(table) => inrush_load::Error::NoSuchTable {
                table,
                place: " (or is not visible on the search_path)".into(),
            },
            e => inrush_load::Error::driver(e.kind(), e),
        }
    }
}
pub use server::{PrivateServer, ServerOptions};

/// Everything that can go wrong talking to PostgreSQL. Each message says its cause in full,
/// so no variant exposes the cause again as its `source()` (printing the chain would repeat it).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("invalid connection string: {0}")]
    Config(String),
    #[error("cannot connect to {target}: {}", describe_pg_error(.cause))]
    Connect {
        target: String,
        cause: tokio_postgres::Error,
    },
    #[error("{what}: {}{}", describe_pg_error(.cause), right_needed(.what, .cause))]
    Query {
        what: String,
        cause: tokio_postgres::Error,
    },
    #[error("table {0} does not exist (or is not visible on the search_path)")]
    TableNotFound(String),
    #[error("{0} is not a table (views and foreign tables are not loaded)")]
    NotATable(String),
    #[error("permission denied: {0}")]
    Permission(String),
    /// A foreign key dropped for the load was added back NOT VALID, and validating it found
    /// rows that break it.
    #[error("foreign key {constraint} of {table} was added back NOT VALID: {message}")]
    ForeignKeyViolated {
        constraint: String,
        table: String,
        message: String,
    },
    /// A primary key or unique constraint rebuilt after the load does not hold for the rows.
    #[error("{constraint} of {table} cannot be rebuilt: {message}")]
    UniqueViolated {
        constraint: String,
        table: String,
        message: String,
    },
    #[error("private server: {0}")]
    Server(String),
    /// Putting a definition back gave up waiting for a table another session keeps open:
    /// who, and for how long.
    #[error("{0}")]
    HeldOpen(String),
    /// The network to the server, or the server's silence: what was lost, as a sentence.
    #[error("{0}")]
    Network(String),
    #[error("{context}: {cause}")]
    Io {
        context: String,
        cause: std::io::Error,
    },
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// What the failure means to a script (see [`inrush_load::Kind`]).
    pub fn kind(&self) -> inrush_load::Kind {
        use inrush_load::Kind;
        match self {
            Error::Config(_) | Error::TableNotFound(_) | Error::NotATable(_) => Kind::Usage,
            // Rows already in the table break a key put back: the data, not the server.
            Error::UniqueViolated { .. } => Kind::BadInput,
            Error::ForeignKeyViolated { .. } => Kind::KeyNotValid,
            Error::Connect { .. }
            | Error::Query { .. }
            | Error::Permission(_)
            | Error::Server(_)
            | Error::HeldOpen(_)
            | Error::Network(_)
            | Error::Io { .. } => Kind::Server,
        }
    }

    /// Whether the server itself answered (with an error of its own): it is there.
    pub fn is_server_answer(&self) -> bool {
        match self {
            Error::Query { cause, .. } | Error::Connect { cause, .. } => {
                cause.as_db_error().is_some()
            }
            _ => false,
        }
    }

    /// Whether the server refused for want of a right (SQLSTATE 42501).
    pub fn is_permission_denied(&self) -> bool {
        match self {
            Error::Permission(_) => true,
            Error::Query { cause, .. } => {
                cause.code() == Some(&tokio_postgres::error::SqlState::INSUFFICIENT_PRIVILEGE)
            }
            _ => false,
        }
    }

    /// The server's own answer, when it refused a statement.
    pub fn db_error(&self) -> Option<&tokio_postgres::error::DbError> {
        match self {
            Error::Query { cause, .. } => cause.as_db_error(),
            _ => None,
        }
    }

    /// Whether a statement gave up waiting for a lock (`lock_timeout`, SQLSTATE 55P03).
    pub fn is_lock_timeout(&self) -> bool {
        matches!(self, Error::Query { cause, .. }
            if cause.code() == Some(&tokio_postgres::error::SqlState::LOCK_NOT_AVAILABLE))
    }

    /// Whether the load's rows break a key put back after it.
    pub fn is_broken_key(&self) -> bool {
        matches!(
            self,
            Error::UniqueViolated { .. } | Error::ForeignKeyViolated { .. }
        )
    }

    /// The key, its table and what the server said, for [`Error::is_broken_key`] errors.
    pub fn broken_key(&self) -> (String, String, String) {
        match self {
            Error::UniqueViolated {
                constraint,
                table,
                message,
            }
            | Error::ForeignKeyViolated {
                constraint,
                table,
                message,
            } => (constraint.clone(), table.clone(), message.clone()),
            _ => Default::default(),
        }
    }
}

/// Wraps a driver error with what was being done (`map_err(query_error("reading X"))`).
pub fn query_error(what: impl Into<String>) -> impl FnOnce(tokio_postgres::Error) -> Error {
    let what = what.into();
    move |cause| Error::Query { what, cause }
}

/// For a refusal for want of a right (SQLSTATE 42501): the right `what` (the statement, or
/// what it was for) needs, and the `GRANT` that gives it, after the server's message, which
/// names the object but seldom the right.
fn right_needed(what: &str, cause: &tokio_postgres::Error) -> String {
    match cause.as_db_error() {
        Some(db) if db.code() == &tokio_postgres::error::SqlState::INSUFFICIENT_PRIVILEGE => {
            needed_right(what, db.message()).map_or(String::new(), |needs| format!(" ({needs})"))
        }
        _ => String::new(),
    }
}

fn needed_right(what: &str, message: &str) -> Option<String> {
    if let Some(object) = message.strip_prefix("must be owner of ") {
        return Some(format!(
            "it needs ownership of {object}, or membership in the role that owns it"
        ));
    }
    let (kind, object) = message
        .strip_prefix("permission denied for ")?
        .split_once(' ')?;
    let verb = what.split_whitespace().next().unwrap_or_default();
    let creating = verb == "CREATE" || what.starts_with("creating");
    let right = match kind {
        "database" => {
            return Some(format!(
                "it needs the CREATE right on database {object}, to make schema inrush, where inrush keeps its journal and ledgers: GRANT CREATE ON DATABASE {object} TO <role>, or have an owner of the database make the schema for the role: CREATE SCHEMA inrush AUTHORIZATION <role>"
            ))
        }
        "schema" if creating => "CREATE",
        "schema" | "sequence" => "USAGE",
        "function" => "EXECUTE",
        "tablespace" => "CREATE",
        "table" | "relation" => match verb {
            "TRUNCATE" => "TRUNCATE",
            // LOCK TABLE ... IN EXCLUSIVE MODE takes any of the three.
            "LOCK" => "UPDATE, DELETE or TRUNCATE",
            "COPY" | "INSERT" => "INSERT",
            "SELECT" => "SELECT",
            "DELETE" => "DELETE",
            "UPDATE" => "UPDATE",
            _ => return None,
        },
        _ => return None,
    };
    // Any of several rights will do: the GRANT gives the first.
    let grant = right.split(',').next().unwrap_or(right);
    let kind = if kind == "relation" { "table" } else { kind };
    Some(format!(
        "it needs the {right} right on {kind} {object}: GRANT {grant} ON {} {object} TO <role>",
        kind.to_uppercase()
    ))
}

/// The server's message, detail and hint when it sent them; otherwise tokio-postgres's text and
/// its causes (its own text leaves them out: `error connecting to server: Connection refused`).
pub fn describe_pg_error(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => {
            let mut s = format!("{}: {}", db.severity(), db.message());
            if let Some(detail) = db.detail() {
                s.push_str(&format!(" (DETAIL: {detail})"));
            }
            if let Some(hint) = db.hint() {
                s.push_str(&format!(" (HINT: {hint})"));
            }
            s
        }
        None => {
            let mut s = e.to_string();
            let mut cause = std::error::Error::source(e);
            while let Some(c) = cause {
                s.push_str(&format!(": {c}"));
                cause = c.source();
            }
            s
        }
    }
}

/// `"name"` with embedded quotes doubled: safe for any identifier, whatever its case or chars.
pub fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_are_always_quoted() {
        assert_eq!(quote_ident("Orders"), "\"Orders\"");
        assert_eq!(
            quote_ident("a\"; drop table x; --"),
            "\"a\"\"; drop table x; --\""
        );
    }
}
