//! The engines inrush loads into and reads queries from, chosen from one registry by the URL's
//! scheme (as sqlx's `Database::URL_SCHEMES`): `--to`, `--from`, `status`, `recover` and `plan`
//! all ask it, so a new engine is one entry here beside its crate.

use anyhow::Result;
use inrush_core::database::{SchemaSource, SchemaTarget};
use inrush_core::ledger::LoadStatus;
use inrush_core::query::QueryServer;
use inrush_core::Reporter;
use inrush_load::job::{JobOutcome, JobStep};
pub use inrush_load::summary::Recovered;
use inrush_load::target::Target;
use inrush_load::{Error, LoadOptions, LoadPlan};
use inrush_mysql::{MysqlOptions, MysqlSource, MysqlTarget};
use inrush_postgres::ConnectOptions;
use inrush_sqlite::SqliteTarget;
use std::sync::Arc;

/// An engine, as the commands use it. `to` and `from` are as the user wrote them (they may hold
/// a password: never echoed).
pub trait Engine: Sync {
    /// For messages (`MariaDB/MySQL`).
    fn name(&self) -> &'static str;

    /// The URL schemes that name it.
    fn schemes(&self) -> &'static [&'static str];

    /// Whether `to`, with no scheme of any engine, names it all the same (a SQLite file's
    /// path).
    fn names_without_scheme(&self, to: &str) -> bool {
        let _ = to;
        false
    }

    /// The load target `to` names.
    fn target(&self, to: &str) -> Result<Box<dyn Target>>;

    /// The server of `--from-query` that `from` names; `zero_dates_null` is MariaDB's own.
    fn source(&self, from: &str, zero_dates_null: bool) -> Result<Arc<dyn QueryServer>> {
        let _ = (from, zero_dates_null);
        Err(usage(format!(
            "--from names {}: --from-query reads from PostgreSQL, MariaDB or MySQL",
            self.name()
        )))
    }

    /// `inrush copy --from`: the database `from` names, as a copy reads it.
    fn schema_source(&self, from: &str, zero_dates_null: bool) -> Result<Box<dyn SchemaSource>>;

    /// `inrush copy --to`: the database `to` names, as a copy writes it.
    fn schema_target(&self, to: &str) -> Result<Box<dyn SchemaTarget>>;

    /// `inrush plan`: what a load of `input` with `opts` would do.
    fn plan(&self, to: &str, opts: &LoadOptions, input: Option<&str>) -> Result<LoadPlan> {
        Ok(inrush_load::plan_into(&*self.target(to)?, opts, input)?)
    }

    /// `inrush status`: the `--resume` loads the target's ledger holds, and the ledger's name.
    fn status(&self, to: &str, table: Option<&str>) -> Result<(Vec<LoadStatus>, &'static str)>;

    /// `inrush recover`: puts back what loads that died left, and says what it did.
    fn recover(&self, to: &str, table: Option<&str>, reporter: &dyn Reporter) -> Result<Recovered>;

    /// A distributed write's coordinator (`inrush.spark`): one step of job `job`, whose tasks
    /// load with `--prepare` (see [`inrush_load::job`]).
    fn job(&self, to: &str, job: &str, step: &JobStep) -> Result<JobOutcome> {
        let _ = (to, job, step);
        Err(usage(format!(
            "{}: distributed writes are two-phase on PostgreSQL and MariaDB/MySQL only",
            self.name()
        )))
    }
}

/// Every engine; PostgreSQL is last, as the one named by anything else (a `key=value` string,
/// the `PG*` variables, nothing at all).
pub static ENGINES: &[&dyn Engine] = &[&Mariadb, &Sqlite, &Odbc, &Postgres];

/// The engine `url` names: by its scheme, else the one that claims it, else PostgreSQL.
pub fn named(url: &str) -> &'static dyn Engine {
    let scheme = url
        .split_once(':')
        .map(|(scheme, _)| scheme.to_ascii_lowercase());
    let by_scheme = |e: &&&dyn Engine| scheme.as_deref().is_some_and(|s| e.schemes().contains(&s));
    let found = ENGINES.iter().find(by_scheme);
    let found = found.or_else(|| ENGINES.iter().find(|e| e.names_without_scheme(url)));
    *found.unwrap_or(&ENGINES[ENGINES.len() - 1])
}

fn usage(message: String) -> anyhow::Error {
    Error::Usage(message).into()
}

struct Postgres;

impl Engine for Postgres {
    fn name(&self) -> &'static str {
        "PostgreSQL"
    }

    fn schemes(&self) -> &'static [&'static str] {
        &["postgresql", "postgres"]
    }

    fn target(&self, to: &str) -> Result<Box<dyn Target>> {
        let options = ConnectOptions::parse(to)?;
        Ok(Box::new(inrush_postgres::load::PostgresTarget::new(
            options,
        )?))
    }

    fn source(&self, from: &str, zero_dates_null: bool) -> Result<Arc<dyn QueryServer>> {
        if zero_dates_null {
            return Err(usage(
                "--zero-dates-null: only a MariaDB/MySQL --from has zero dates".into(),
            ));
        }
        Ok(Arc::new(ConnectOptions::parse(from)?))
    }

    fn schema_source(&self, from: &str, zero_dates_null: bool) -> Result<Box<dyn SchemaSource>> {
        if zero_dates_null {
            return Err(usage(
                "--zero-dates-null: only a MariaDB/MySQL --from has zero dates".into(),
            ));
        }
        let options = ConnectOptions::parse(from)?;
        Ok(Box::new(inrush_postgres::database::PgSchemaSource::new(
            options,
        )))
    }

    fn schema_target(&self, to: &str) -> Result<Box<dyn SchemaTarget>> {
        let options = ConnectOptions::parse(to)?;
        Ok(Box::new(inrush_postgres::database::PgSchemaTarget::new(
            options,
        )))
    }

    fn status(&self, to: &str, table: Option<&str>) -> Result<(Vec<LoadStatus>, &'static str)> {
        let target = ConnectOptions::parse(to)?;
        let loads = inrush_postgres::load::status(&target, table)?;
        Ok((loads, "inrush.load_ledger"))
    }

    fn job(&self, to: &str, job: &str, step: &JobStep) -> Result<JobOutcome> {
        Ok(inrush_postgres::job::step(
            &ConnectOptions::parse(to)?,
            job,
            step,
        )?)
    }

    fn recover(&self, to: &str, table: Option<&str>, reporter: &dyn Reporter) -> Result<Recovered> {
        let recovered =
            inrush_postgres::load::recover(&ConnectOptions::parse(to)?, table, reporter)?;
        Ok(recovered.report())
    }
}

struct Mariadb;

impl Engine for Mariadb {
    fn name(&self) -> &'static str {
        "MariaDB/MySQL"
    }

    fn schemes(&self) -> &'static [&'static str] {
        &["mysql", "mariadb"]
    }

    fn target(&self, to: &str) -> Result<Box<dyn Target>> {
        Ok(Box::new(MysqlTarget::new(MysqlOptions::parse(to)?)))
    }

    fn source(&self, from: &str, zero_dates_null: bool) -> Result<Arc<dyn QueryServer>> {
        let options = MysqlOptions::parse_option("--from", from)?;
        Ok(Arc::new(MysqlSource::new(options, zero_dates_null)))
    }

    fn schema_source(&self, from: &str, zero_dates_null: bool) -> Result<Box<dyn SchemaSource>> {
        let options = MysqlOptions::parse_option("--from", from)?;
        Ok(Box::new(inrush_mysql::MysqlSchemaSource::new(
            options,
            zero_dates_null,
        )))
    }

    fn schema_target(&self, to: &str) -> Result<Box<dyn SchemaTarget>> {
        let options = MysqlOptions::parse(to)?;
        Ok(Box::new(inrush_mysql::MysqlSchemaTarget::new(options)))
    }

    fn status(&self, to: &str, table: Option<&str>) -> Result<(Vec<LoadStatus>, &'static str)> {
        let loads = inrush_mysql::ledger::status(&MysqlOptions::parse(to)?, table)?;
        Ok((loads, "inrush_load_ledger"))
    }

    fn job(&self, to: &str, job: &str, step: &JobStep) -> Result<JobOutcome> {
        Ok(inrush_mysql::job::step(
            &MysqlOptions::parse(to)?,
            job,
            step,
        )?)
    }

    fn recover(&self, to: &str, table: Option<&str>, _: &dyn Reporter) -> Result<Recovered> {
        Ok(inrush_mysql::recover(&MysqlOptions::parse(to)?, table)?.report())
    }
}

struct Sqlite;

impl Sqlite {
    fn path(to: &str) -> Result<std::path::PathBuf> {
        inrush_sqlite::database_path(to)
            .ok_or_else(|| usage("--to: a SQLite URL names no file (sqlite:///path/to.db)".into()))
    }
}

impl Engine for Sqlite {
    fn name(&self) -> &'static str {
        "a SQLite file"
    }

    fn schemes(&self) -> &'static [&'static str] {
        &["sqlite"]
    }

    fn names_without_scheme(&self, to: &str) -> bool {
        inrush_sqlite::database_path(to).is_some()
    }

    fn target(&self, to: &str) -> Result<Box<dyn Target>> {
        Ok(Box::new(SqliteTarget::new(Self::path(to)?)))
    }

    fn schema_source(&self, from: &str, zero_dates_null: bool) -> Result<Box<dyn SchemaSource>> {
        if zero_dates_null {
            return Err(usage(
                "--zero-dates-null: only a MariaDB/MySQL --from has zero dates".into(),
            ));
        }
        let path = inrush_sqlite::database_path(from).ok_or_else(|| {
            usage("--from: a SQLite URL names no file (sqlite:///path/to.db)".into())
        })?;
        if !path.exists() {
            return Err(usage(format!("--from: {} does not exist", path.display())));
        }
        Ok(Box::new(inrush_sqlite::SqliteSchemaSource::new(path)))
    }

    fn schema_target(&self, to: &str) -> Result<Box<dyn SchemaTarget>> {
        Ok(Box::new(inrush_sqlite::SqliteSchemaTarget::new(
            Self::path(to)?,
        )))
    }

    fn status(&self, to: &str, table: Option<&str>) -> Result<(Vec<LoadStatus>, &'static str)> {
        let loads = inrush_sqlite::ledger::status(&Self::path(to)?, table)?;
        Ok((loads, "inrush_load_ledger"))
    }

    fn recover(&self, to: &str, _: Option<&str>, _: &dyn Reporter) -> Result<Recovered> {
        Self::path(to)?;
        Ok(inrush_sqlite::recover())
    }
}

/// Any database with an ODBC driver: loads and their `--resume` ledger (no copy, nothing to
/// recover).
struct Odbc;

impl Odbc {
    fn connection(to: &str) -> Result<&str> {
        inrush_odbc::connection_string(to).ok_or_else(|| {
            usage("--to odbc: names no connection string (odbc:DSN=name;UID=user or odbc:Driver={...};Server=...)".into())
        })
    }

    fn not_over_odbc(what: &str) -> anyhow::Error {
        usage(format!("{what} is not carried out over ODBC; loads are"))
    }
}

impl Engine for Odbc {
    fn name(&self) -> &'static str {
        "ODBC"
    }

    fn schemes(&self) -> &'static [&'static str] {
        &["odbc"]
    }

    fn target(&self, to: &str) -> Result<Box<dyn Target>> {
        Ok(Box::new(inrush_odbc::OdbcTarget::new(Self::connection(
            to,
        )?)))
    }

    fn schema_source(&self, _: &str, _: bool) -> Result<Box<dyn SchemaSource>> {
        Err(Self::not_over_odbc("inrush copy"))
    }

    fn schema_target(&self, _: &str) -> Result<Box<dyn SchemaTarget>> {
        Err(Self::not_over_odbc("inrush copy"))
    }

    fn status(&self, to: &str, table: Option<&str>) -> Result<(Vec<LoadStatus>, &'static str)> {
        let target = inrush_odbc::OdbcTarget::new(Self::connection(to)?);
        Ok((target.status(table)?, "inrush_odbc_ledger"))
    }

    fn recover(&self, to: &str, _: Option<&str>, _: &dyn Reporter) -> Result<Recovered> {
        Self::connection(to)?;
        Ok(Recovered {
            nothing: "a load over ODBC changes no definition and commits all or nothing",
            ..Recovered::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_url_names_its_engine_and_anything_else_is_postgresql() {
        let cases = [
            ("mysql://root@h/db", "MariaDB/MySQL"),
            ("MariaDB://root@h/db", "MariaDB/MySQL"),
            ("sqlite:///tmp/x.db", "a SQLite file"),
            ("odbc:DSN=sales", "ODBC"),
            ("data/x.sqlite3", "a SQLite file"),
            ("postgresql://u@h/db", "PostgreSQL"),
            ("postgres://u@h/db", "PostgreSQL"),
            ("host=h dbname=db", "PostgreSQL"),
            ("", "PostgreSQL"),
        ];
        for (url, engine) in cases {
            assert_eq!(named(url).name(), engine, "{url}");
        }
    }

    #[test]
    fn no_two_engines_share_a_scheme() {
        let mut schemes: Vec<_> = ENGINES.iter().flat_map(|e| e.schemes()).collect();
        let all = schemes.len();
        schemes.sort();
        schemes.dedup();
        assert_eq!(schemes.len(), all);
    }
}
