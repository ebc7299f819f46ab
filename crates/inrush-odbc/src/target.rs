//! [`OdbcTarget`]: the pipeline's [`Target`] for a database reached through its ODBC driver.

use crate::advice;
use crate::apart::{Apart, Cut};
use crate::arrays::{self, ArrayCheck, Policy, Verdict};
use crate::books::Books;
use crate::catalog;
use crate::create;
use crate::driver::{Dbms, Driver, Savepoint};
use crate::failed;
use crate::outcome::Pending;
use crate::writer::{FirstRows, Inserts, OdbcWriter};
use inrush_arrow::Prepared;
use inrush_core::catalog::{IndexInfo, TableSize};
use inrush_core::ledger::{Committed as Block, InputFile, LoadStatus};
use inrush_core::Reporter;
use inrush_core::{SqlType, TargetColumn};
use inrush_load::commits::EarlierLoad;
use inrush_load::encoder::ValueTexts;
use inrush_load::row::{push, Bound};
use inrush_load::support::{Feature, Support};
use inrush_load::target::{
    self, At, Committed, Encoding, Load, Refused, RowEncoder, Target, Writer,
};
use inrush_load::Interrupt;
use inrush_load::{
    AfterLoad, Capabilities, Error, LoadOptions, LoadPlan, LoadSummary, OnConflict, PlanOptions,
    Result,
};
use odbc_api::{Connection, ConnectionOptions};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A database behind an ODBC connection string, as the target of loads.
#[derive(Clone)]
pub struct OdbcTarget {
    connection: String,
    /// Set when the database is found silent: every writer then stops waiting on it.
    cut: Arc<Cut>,
}

impl OdbcTarget {
    /// The target `connection` (an ODBC connection string: `DSN=...` or `Driver={...};...`)
    /// names.
    pub fn new(connection: &str) -> OdbcTarget {
        OdbcTarget {
            connection: connection.to_string(),
            cut: Arc::default(),
        }
    }

    /// `inrush status`: the `--resume` loads the ledger beside `table` (or in the connection's
    /// default schema) records.
    pub fn status(&self, table: Option<&str>) -> Result<Vec<LoadStatus>> {
        let driver = Driver::read(self.connect()?)?;
        let (schema, name) = split(table.unwrap_or_default(), driver.quote);
        ledger_of(&driver, schema.as_deref(), &name).status(&self.connect()?, table.is_some())
    }

    pub(crate) fn connect(&self) -> Result<Connection<'static>> {
        self.connect_within(LOGIN)
    }

    /// A connection, the login given at most `within` where the driver keeps to it.
    fn connect_within(&self, within: Duration) -> Result<Connection<'static>> {
        let env = odbc_api::environment().map_err(failed("starting unixODBC's driver manager"))?;
        let options = ConnectionOptions {
            login_timeout_sec: Some(within.as_secs().max(1) as u32),
            ..ConnectionOptions::default()
        };
        env.connect_with_connection_string(&self.connection, options)
            .map_err(failed(format!("connecting with {}", self.shown())))
    }

    /// One look at the database for the watch beside the load, over `held` (a connection of
    /// the watch's own, made when missing): whether a catalog question (`SQLTables`, which
    /// every driver asks its database, unlike `SELECT 1`) is answered within `within`.
    fn look(&self, within: Duration, held: &Arc<Mutex<Option<Connection<'static>>>>) -> bool {
        let (answer, answered) = std::sync::mpsc::channel();
        let (target, held) = (self.clone(), Arc::clone(held));
        // A look left unanswered keeps its thread and the connection; the next ones find it
        // held and count as unanswered too, until it returns.
        std::thread::spawn(move || {
            let Ok(mut conn) = held.try_lock() else {
                let _ = answer.send(false);
                return;
            };
            if conn.is_none() {
                *conn = target.connect_within(within).ok();
            }
            let asked = conn.as_ref().is_some_and(|c| {
                c.tables("", "", "inrush_look", "")
                    .map(|rows| rows.count())
                    .is_ok()
            });
            if !asked {
                // Made again at the next look.
                *conn = None;
            }
            let _ = answer.send(asked);
        });
        answered.recv_timeout(within).unwrap_or(false)
    }

    /// `call` over a new connection, on a thread of its own ([`Apart`]): waited for until it
    /// returns, a stop is asked before the commit, or the load is cut (the database went
    /// silent), so that no catalog question or DDL holds the load either.
    fn over<T: Send + 'static>(
        &self,
        interrupt: &Arc<Interrupt>,
        call: impl FnOnce(Connection<'static>) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let target = self.clone();
        let mut apart = Apart::new((), Arc::clone(interrupt), Arc::clone(&self.cut));
        apart.call(move |_| call(target.connect()?))
    }

    /// The connection string as messages show it.
    pub(crate) fn shown(&self) -> String {
        inrush_core::secret::masked_odbc(&self.connection)
    }
}

/// Over ODBC inrush writes rows and changes nothing else; the options of one engine's own are
/// that engine's.
const SUPPORT: Support = Support {
    engine: "ODBC",
    carries: &[],
    instead: &[
        (
            Feature::Text,
            "PostgreSQL's text COPY; ODBC is given bound values",
        ),
        (
            Feature::DateStyle,
            "for PostgreSQL targets; over ODBC, dates go as ISO 8601 text the driver converts",
        ),
        (Feature::DisableTriggers, "for PostgreSQL targets"),
        (Feature::FastUnsafe, "for SQLite targets only"),
        (
            Feature::Route,
            "partitions are routed by inrush on PostgreSQL only",
        ),
        (
            Feature::Prepare,
            "a distributed write's parts are PostgreSQL's and MariaDB's",
        ),
        (
            Feature::Stage,
            "a distributed write's parts are PostgreSQL's and MariaDB's",
        ),
    ],
};

/// The options a load over ODBC does not carry out yet, each with why.
fn refuse_unsupported(opts: &LoadOptions) -> Result<()> {
    let refused = match opts.on_conflict != OnConflict::Error {
        true => Some("--on-conflict"),
        false => None,
    };
    match refused {
        Some(option) => Err(Error::Usage(format!(
            "{option} is not carried out over ODBC; load into an existing table"
        ))),
        None => Ok(()),
    }
}

/// `--max-errors` where the search for refused rows has been seen to keep every other row:
/// through psqlODBC, MariaDB's and SQLite's drivers, each tested against its server.
fn refuse_rejects(opts: &LoadOptions, driver: &Driver) -> Result<()> {
    let tested = matches!(
        driver.kind(),
        Dbms::PostgreSql | Dbms::MariaDb | Dbms::Sqlite
    );
    if opts.max_errors == 0 || tested {
        return Ok(());
    }
    Err(Error::Usage(format!(
        "--max-errors is carried out over ODBC for PostgreSQL, MariaDB and SQLite only: {}'s \
         driver has not been tested at finding refused rows",
        driver.dbms
    )))
}

/// How long a login may take (`SQL_ATTR_LOGIN_TIMEOUT`), where the driver keeps to it.
const LOGIN: Duration = Duration::from_secs(30);

impl Target for OdbcTarget {
    /// With the watch beside it: a database that leaves its looks unanswered for the network
    /// timeout is cut (every writer stops waiting on it), and the load says so.
    fn beside(
        &self,
        opts: &LoadOptions,
        reporter: &dyn Reporter,
        load: &mut dyn FnMut() -> Result<LoadSummary>,
    ) -> Result<LoadSummary> {
        let shown = self.shown();
        let held = Arc::new(Mutex::new(None));
        let loaded = inrush_load::pulse::beside(
            opts.network_timeout,
            &shown,
            reporter,
            |within| self.look(within, &held),
            |why| self.cut.cut(why),
            load,
        );
        inrush_load::pulse::explained(loaded, "ODBC", self.cut.why())
    }

    fn supports(&self) -> &'static Support {
        &SUPPORT
    }

    fn prepare(
        &self,
        opts: &LoadOptions,
        create: Option<&[(String, SqlType)]>,
    ) -> Result<Box<dyn Load + '_>> {
        refuse_unsupported(opts)?;
        let table = opts.table.clone();
        let (columns, indexes, driver, (schema, name)) =
            self.over(&opts.interrupt, move |conn| {
                let quote = conn
                    .identifier_quote_char()
                    .map_err(failed("reading how the database quotes names"))?
                    .unwrap_or('"');
                let (schema, name) = split(&table, quote);
                let columns = catalog::columns(&conn, schema.as_deref(), &name)?;
                let indexes = catalog::indexes(&conn, schema.as_deref(), &name);
                Ok((columns, indexes, Driver::read(conn)?, (schema, name)))
            })?;
        let (schema, name) = (schema.as_deref(), name.as_str());
        refuse_rejects(opts, &driver)?;
        let quote = |n: &str| quote_name(driver.quote, n);
        let asked = std::env::var(arrays::VARIABLE).ok();
        let arrays = Policy::of(&driver, asked.as_deref())?;
        let ledger = ledger_of(&driver, schema, name);
        let qualified = ledger.table().to_string();
        let indexes = indexes
            .iter()
            .map(|i| advice::index(driver.kind(), &qualified, quote, i))
            .collect();
        let (columns, create_sql) = match (create, columns.is_empty()) {
            (None, false) => (columns, None),
            (None, true) => {
                return Err(Error::NoSuchTable {
                    table: opts.table.clone(),
                    place: format!(
                        " (the {} driver's catalog lists no column of it)",
                        driver.dbms
                    ),
                })
            }
            (Some(_), false) => {
                return Err(Error::TableExists {
                    table: qualified,
                    place: String::new(),
                })
            }
            (Some(inferred), true) => {
                let (quote, kind) = (driver.quote, driver.kind());
                let (inferred, types) = (inferred.to_vec(), opts.create_types.clone());
                let table = qualified.clone();
                let (columns, sql) = self.over(&opts.interrupt, move |conn| {
                    let quote = |n: &str| quote_name(quote, n);
                    create::design(&conn, kind, &table, &inferred, &types, &quote)
                })?;
                (columns, Some(sql))
            }
        };
        Ok(Box::new(OdbcLoad {
            target: self,
            driver,
            arrays,
            check: None,
            interrupt: Arc::clone(&opts.interrupt),
            books: Arc::new(ledger),
            indexes,
            marks: false,
            writers: 0,
            table: target::Table {
                name: qualified,
                columns,
                bytes: None,
                create_sql,
                create_note: None,
                changed_by_delete: Vec::new(),
            },
        }))
    }
}

/// `--table`'s schema, when it names one, and table, as SQL reads them (`sales.orders`,
/// `"My Table"` in the database's `quote`).
fn split(table: &str, quote: char) -> (Option<String>, String) {
    let mut parts = inrush_core::ident::name_parts(table, quote);
    let name = parts.pop().unwrap_or_default();
    let schema = (!parts.is_empty()).then(|| parts.join("."));
    (schema, name)
}

/// The `--resume` ledger of `schema`'s table `name`, each quoted as `driver` quotes names.
fn ledger_of(driver: &Driver, schema: Option<&str>, name: &str) -> Books {
    let quoted = |n: &str| quote_name(driver.quote, n);
    let schema = schema.map(quoted);
    let table = match &schema {
        Some(schema) => format!("{schema}.{}", quoted(name)),
        None => quoted(name),
    };
    Books::new(driver.kind(), driver.quote, schema.as_deref(), &table)
}

/// `name` as a delimited identifier in the driver's `quote` character, that character doubled
/// inside it.
fn quote_name(quote: char, name: &str) -> String {
    let doubled = format!("{quote}{quote}");
    format!("{quote}{}{quote}", name.replace(quote, &doubled))
}

/// One load through ODBC.
struct OdbcLoad<'t> {
    target: &'t OdbcTarget,
    driver: Driver,
    /// Whether rows go as parameter arrays, and the check of them when there is one.
    arrays: Policy,
    check: Option<Arc<ArrayCheck>>,
    /// The load's stop, which ends a wait on the database.
    interrupt: Arc<Interrupt>,
    /// inrush's tables beside the table: the `--resume` ledger, the commits' marks and records.
    books: Arc<Books>,
    /// Whether the marks' and records' tables are there (see [`Books::prepare`]).
    marks: bool,
    /// The table's indexes, as the driver lists them: kept, and said (with advice, where
    /// there is some).
    indexes: Vec<IndexInfo>,
    /// Writers opened so far, each mark's token apart.
    writers: usize,
    table: target::Table,
}

impl Load for OdbcLoad<'_> {
    fn table(&self) -> &target::Table {
        &self.table
    }

    fn version(&self) -> String {
        self.driver.describe()
    }

    fn method(&self) -> &'static str {
        if self.one_at_a_time().is_some() {
            return "one row per execute (ODBC)";
        }
        match self.driver.rows_per_statement(self.table.columns.len()) {
            1 => "ODBC parameter arrays",
            _ => "ODBC parameter arrays of multi-row INSERTs",
        }
    }

    fn slower_because(&self) -> Option<String> {
        self.one_at_a_time()
    }

    fn plan(
        &mut self,
        _: &[TargetColumn],
        opts: &LoadOptions,
        load_bytes: Option<u64>,
    ) -> Result<LoadPlan> {
        let can = Capabilities {
            keeps_all: Some(advice::indexes_rule(self.driver.kind(), &self.table.name)),
            notes: advice::notes(&self.driver.dbms, &self.table.name),
            ..Capabilities::default()
        };
        let size = TableSize {
            table_bytes: 0,
            index_bytes: 0,
            rows_estimate: -1.0,
            empty: false,
        };
        let options = PlanOptions {
            after: AfterLoad::Nothing,
            ..opts.plan
        };
        let plan = LoadPlan::decide(
            &self.table.name,
            &can,
            self.indexes.clone(),
            Vec::new(),
            size,
            load_bytes,
            options,
        );
        Ok(plan)
    }

    fn encoding(&mut self, columns: &[TargetColumn]) -> Result<Encoding> {
        let digits = columns
            .iter()
            .map(|c| c.sql_type == SqlType::Boolean && create::takes_digits(&c.type_sql))
            .collect();
        let dbms = self.driver.kind();
        Ok(Encoding::encoder(Box::new(TextValues { digits, dbms })))
    }

    fn writers(&self, opts: &LoadOptions, ordered: bool) -> usize {
        // SQLite takes one writing transaction at a time: a second would wait on the first's
        // lock until the driver gives up ("database is locked").
        let one_writer = self.driver.kind() == Dbms::Sqlite;
        match one_writer || ordered || opts.truncate || opts.table_lock {
            true => 1,
            false => opts.connections.max(1),
        }
    }

    fn ledger(&mut self, input: &InputFile) -> Result<Vec<Block>> {
        let (books, input) = (Arc::clone(&self.books), input.clone());
        self.target
            .over(&self.interrupt, move |conn| books.open(&conn, &input))
    }

    fn begin(&mut self, _: &mut LoadPlan, opts: &LoadOptions) -> Result<bool> {
        // DDL commits on some databases: --create's table is made here, in autocommit, and
        // dropped again by `end` when the load does not commit.
        if let (Some(sql), false) = (&self.table.create_sql, opts.check_only) {
            let sql = sql.clone();
            self.target.over(&self.interrupt, move |conn| {
                conn.execute(&sql, (), None)
                    .map_err(create::refused(&sql))?;
                Ok(())
            })?;
        }
        // Under --resume each block's commit is in the ledger; --check commits nothing.
        if !opts.resume && !opts.check_only {
            let books = Arc::clone(&self.books);
            self.marks = self
                .target
                .over(&self.interrupt, move |conn| Ok(books.prepare(&conn)))?;
        }
        Ok(false)
    }

    fn end(
        &mut self,
        _: &LoadPlan,
        opts: &LoadOptions,
        committed: bool,
        _: &dyn Reporter,
    ) -> Result<Committed> {
        let notes = match self.check.as_ref().and_then(|c| c.verdict()) {
            Some(Verdict::Alike(rows)) => vec![format!(
                "{} was checked: the first {rows} rows sent as parameter arrays read back as sent one row per execute",
                self.driver.name
            )],
            _ => Vec::new(),
        };
        if let (Some(_), false, false) = (&self.table.create_sql, committed, opts.check_only) {
            let sql = format!("DROP TABLE {}", self.table.name);
            self.target.over(&self.interrupt, move |conn| {
                conn.execute(&sql, (), None).map_err(failed(sql.clone()))?;
                Ok(())
            })?;
        }
        Ok(Committed {
            notes,
            ..Committed::default()
        })
    }

    fn unfinished_loads(&mut self) -> Result<Vec<(String, EarlierLoad)>> {
        let books = Arc::clone(&self.books);
        self.target
            .over(&self.interrupt, move |conn| books.unfinished(&conn))
    }

    fn forget_load(&mut self, identity: &str) -> Result<()> {
        let (books, identity) = (Arc::clone(&self.books), identity.to_string());
        self.target
            .over(&self.interrupt, move |conn| books.forget(&conn, &identity))
    }

    fn writer(
        &mut self,
        columns: &[TargetColumn],
        _: &LoadPlan,
        opts: &LoadOptions,
        resume: Option<&InputFile>,
    ) -> Result<Box<dyn Writer>> {
        // In the load's transaction: a load that fails leaves the rows as they were.
        let delete = opts
            .truncate
            .then(|| format!("DELETE FROM {}", self.table.name));
        let conn = self.target.over(&self.interrupt, move |conn| {
            conn.set_autocommit(false)
                .map_err(failed("opening the load's transaction"))?;
            if let Some(delete) = &delete {
                conn.execute(delete, (), None)
                    .map_err(failed(delete.clone()))?;
            }
            Ok(conn)
        })?;
        let names: Vec<String> = columns
            .iter()
            .map(|c| quote_name(self.driver.quote, &c.name))
            .collect();
        let rows = self.driver.rows_per_statement(columns.len());
        let interrupt = opts.interrupt.clone();
        let savepoint = (opts.max_errors > 0).then(|| Savepoint::of(self.driver.kind()));
        let table = &self.table.name;
        let resume = resume.map(|input| (Arc::clone(&self.books), input.clone()));
        self.writers += 1;
        let token = format!("{}-{}", inrush_load::commits::run_token(), self.writers);
        let pending = Pending {
            target: self.target.clone(),
            books: Arc::clone(&self.books),
            token: self.marks.then_some(token),
            limit: opts.network_timeout,
        };
        let mut inserts = Inserts::new(Arc::new(Mutex::new(conn)), table, &names, rows, savepoint);
        if self.arrays == Policy::Off {
            inserts.one_at_a_time();
        }
        let inserts = inserts.checked(self.check(&names, rows, opts));
        let cut = Arc::clone(&self.target.cut);
        let writer = OdbcWriter::new(inserts, pending, self.marks, resume, interrupt, cut);
        Ok(Box::new(writer))
    }
}

impl OdbcLoad<'_> {
    /// The load's check of the driver's parameter arrays, made for its first writer, when the
    /// policy asks for one and rows are sent.
    fn check(
        &mut self,
        names: &[String],
        rows: usize,
        opts: &LoadOptions,
    ) -> Option<Arc<dyn FirstRows>> {
        if self.arrays != Policy::Check || opts.check_only {
            return None;
        }
        let target = self.target.clone();
        let check = self.check.get_or_insert_with(|| {
            let connect = Box::new(move || target.connect());
            Arc::new(ArrayCheck::new(
                connect,
                &self.driver,
                &self.books,
                names,
                rows,
            ))
        });
        Some(Arc::clone(check) as Arc<dyn FirstRows>)
    }

    /// Why every row goes one per execute, when it does.
    fn one_at_a_time(&self) -> Option<String> {
        match (self.arrays, self.check.as_ref().and_then(|c| c.verdict())) {
            (Policy::Off, _) => Some(format!(
                "{}=off asks for one row per execute",
                arrays::VARIABLE
            )),
            (_, Some(Verdict::OneAtATime(why))) => {
                Some(format!("{why}; rows went one per execute"))
            }
            _ => None,
        }
    }
}

/// Each field as text (NULL for an empty unquoted field), converted by the driver to its
/// column's type: the database checks every value, and a value it refuses fails the load.
/// A boolean goes as 1 or 0 into a column `--create` made for booleans on a database without
/// a boolean type (`digits`). A columnar input's values are written in the database's own
/// forms ([`Dbms::text_forms`]), but for its binary values, which go as their bytes into
/// binary columns.
struct TextValues {
    digits: Vec<bool>,
    dbms: Dbms,
}

impl RowEncoder for TextValues {
    fn worker(&self, _: bool) -> Box<dyn target::RowWriter + '_> {
        Box::new(self)
    }

    fn text_forms(&self) -> inrush_arrow::TextForms {
        self.dbms.text_forms()
    }

    /// A binary value is bound as its bytes ([`target::RowWriter::arrow_row`] below), which a
    /// binary column stores as they are; what any other column would make of them differs
    /// from one driver to the next, so they go into binary columns only.
    fn coercion(
        &self,
        field: &inrush_arrow::Field,
        _: usize,
        target: &TargetColumn,
    ) -> inrush_arrow::Result<inrush_arrow::Coercion> {
        let why = match self.dbms.takes_bytes() {
            true if target.sql_type == SqlType::Bytes => None,
            true => Some(
                "through ODBC, binary values go only into binary columns (BINARY, VARBINARY, \
                 BLOB, bytea)",
            ),
            false => Some(
                "SQLite's ODBC driver stores binary values at other values' lengths; load \
                 into the database file itself (--to FILE.db)",
            ),
        };
        if let (true, Some(why)) = (inrush_arrow::is_binary(field.data_type()), why) {
            return Err(inrush_arrow::Error::Incompatible {
                column: target.name.clone(),
                arrow_type: field.data_type().to_string(),
                target: target.type_sql.clone(),
                why: Some(why.into()),
            });
        }
        inrush_arrow::Coercion::text(field, target, self.text_forms())
    }

    fn reads_plain(&self) -> bool {
        false
    }
}

impl TextValues {
    /// One row of the `width` values `value` gives, column by column; a refused value leaves
    /// `out` as it was.
    fn line<'v>(
        &self,
        width: usize,
        out: &mut Vec<u8>,
        mut value: impl FnMut(usize) -> Result<Bound<'v>, Refused>,
    ) -> Result<(), Refused> {
        let mark = out.len();
        for i in 0..width {
            match value(i) {
                Ok(bound) => push(out, bound),
                Err(refused) => {
                    out.truncate(mark);
                    return Err(refused);
                }
            }
        }
        Ok(())
    }

    /// Column `i`'s `field`, as it is bound.
    fn bound<'a>(&self, i: usize, field: Option<&'a str>) -> Result<Bound<'a>, Refused> {
        Ok(
            match (field, self.digits.get(i).copied().unwrap_or(false)) {
                (None, _) => Bound::Null,
                (Some(f), false) => Bound::Text(f.as_bytes()),
                (Some(f), true) => match inrush_encode::boolin(f) {
                    Some(b) => Bound::Text(if b { b"1" } else { b"0" }),
                    None => {
                        let reason = "not a boolean (true/false, yes/no, on/off, t/f, y/n, 1/0)";
                        return Err(Refused::Value(i, reason.into()));
                    }
                },
            },
        )
    }
}

impl target::RowWriter for &TextValues {
    fn row(&mut self, fields: &[Option<&str>], _: At, out: &mut Vec<u8>) -> Result<(), Refused> {
        self.line(fields.len(), out, |i| self.bound(i, fields[i]))
    }

    /// A binary value goes as its bytes, not as its `\x` text.
    fn arrow_row(
        &mut self,
        columns: &[Prepared],
        row: usize,
        _: At,
        texts: &mut ValueTexts,
        out: &mut Vec<u8>,
    ) -> Result<(), Refused> {
        texts.render_but_bytes(columns, row, false)?;
        let ValueTexts { text, spans } = texts;
        self.line(spans.len(), out, |i| match columns[i].bytes(row) {
            Some(bytes) => Ok(Bound::Blob(bytes)),
            None => self.bound(i, spans[i].clone().map(|r| &text[r])),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn driver(dbms: &str) -> Driver {
        Driver {
            dbms: dbms.to_string(),
            dbms_version: String::new(),
            name: String::new(),
            version: String::new(),
            quote: '"',
        }
    }

    #[test]
    fn rejects_are_refused_on_a_driver_not_tested_at_finding_them() {
        let mut opts = LoadOptions::new("in.csv", "t");
        opts.max_errors = 5;
        for tested in ["PostgreSQL", "MariaDB", "SQLite"] {
            assert!(refuse_rejects(&opts, &driver(tested)).is_ok(), "{tested}");
        }
        let refused = refuse_rejects(&opts, &driver("Microsoft SQL Server")).unwrap_err();
        assert!(matches!(&refused, Error::Usage(m) if m.contains("Microsoft SQL Server's driver")));
        opts.max_errors = 0;
        assert!(refuse_rejects(&opts, &driver("Microsoft SQL Server")).is_ok());
    }
}
