//! Whether a driver's parameter arrays may carry the load: at least one driver family has
//! stored row 1's values in every row of an array while reporting success, so on a driver
//! inrush has not been tested with, the load's first rows go into a scratch table twice, one
//! row per execute and then as the load sends them (parameter arrays, multi-row INSERTs), and
//! are read back. Arrays carry the load only when both read back alike; otherwise every row
//! goes one per execute, and the summary says why.
//!
//! `INRUSH_ODBC_ARRAYS` chooses otherwise: `check` checks on every driver, `trust` on none,
//! `off` sends one row per execute without checking.

use crate::books::{raw_rows, Books};
use crate::driver::{Dbms, Driver};
use crate::failed;
use crate::writer::{FirstRows, Inserts};
use inrush_load::row::{push, Values};
use inrush_load::{Error, Result};
use odbc_api::Connection;
use std::sync::{Arc, Mutex, OnceLock};

/// How the load sends rows, before any check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Policy {
    /// A driver tested here: arrays, unchecked.
    Trust,
    /// The first rows are checked ([`ArrayCheck`]).
    Check,
    /// One row per execute, asked for.
    Off,
}

/// The environment variable that chooses the [`Policy`].
pub(crate) const VARIABLE: &str = "INRUSH_ODBC_ARRAYS";

impl Policy {
    /// The policy for `driver`, as `asked` (the variable's value) chooses it.
    pub(crate) fn of(driver: &Driver, asked: Option<&str>) -> Result<Policy> {
        match asked.map(str::trim) {
            None | Some("") => Ok(match tested(driver) {
                true => Policy::Trust,
                false => Policy::Check,
            }),
            Some("check") => Ok(Policy::Check),
            Some("trust") => Ok(Policy::Trust),
            Some("off") => Ok(Policy::Off),
            Some(other) => Err(Error::Usage(format!(
                "{VARIABLE}={other:?}: expected check, trust or off"
            ))),
        }
    }
}

/// The drivers whose arrays the tests compare, row for row, with the database's own bulk path.
fn tested(driver: &Driver) -> bool {
    let name = driver.name.to_ascii_lowercase();
    match driver.kind() {
        Dbms::PostgreSql => name.contains("psqlodbc"),
        Dbms::MariaDb => name.contains("maodbc"),
        Dbms::Sqlite => name.contains("sqlite3odbc"),
        _ => false,
    }
}

/// What the check found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// This many rows read back alike both ways.
    Alike(usize),
    /// Why rows go one per execute.
    OneAtATime(String),
}

/// Rows the check takes: enough for several parameter sets of several rows each.
const ROWS: usize = 16;
/// Rows tried one by one for them: a refused row is passed over.
const TRIED: usize = 64;

/// The load's one check, made by the first writer with its first rows while the others wait.
pub(crate) struct ArrayCheck {
    /// A new connection, in autocommit.
    connect: Connect,
    kind: Dbms,
    /// The table, its columns (quoted) and the scratch table beside it.
    table: String,
    names: Vec<String>,
    scratch: String,
    rows_per_statement: usize,
    verdict: OnceLock<Verdict>,
}

/// How the check connects.
pub(crate) type Connect = Box<dyn Fn() -> Result<Connection<'static>> + Send + Sync>;

impl ArrayCheck {
    pub(crate) fn new(
        connect: Connect,
        driver: &Driver,
        books: &Books,
        names: &[String],
        rows_per_statement: usize,
    ) -> ArrayCheck {
        ArrayCheck {
            connect,
            kind: driver.kind(),
            table: books.table().to_string(),
            names: names.to_vec(),
            scratch: books.scratch.clone(),
            rows_per_statement,
            verdict: OnceLock::new(),
        }
    }

    /// What the check found, once it ran.
    pub(crate) fn verdict(&self) -> Option<&Verdict> {
        self.verdict.get()
    }

    /// The check on `rows` rows of `data`, in a scratch table made for it and dropped after.
    fn run(&self, data: &[u8], rows: usize) -> Result<Verdict> {
        let conn: Arc<Mutex<Connection<'static>>> = Arc::new(Mutex::new((self.connect)()?));
        self.make_scratch(&conn)?;
        let found = self.compare(&conn, data, rows);
        let drop = format!("DROP TABLE {}", self.scratch);
        if let Ok(conn) = conn.lock() {
            if let Err(e) = conn.execute(&drop, (), None) {
                tracing::warn!("{}", failed(drop.clone())(e));
            }
        }
        found
    }

    /// The scratch table, of the table's columns' own types, empty: the first of the ways to
    /// say it the database takes.
    fn make_scratch(&self, conn: &Mutex<Connection<'static>>) -> Result<()> {
        let (scratch, table, names) = (&self.scratch, &self.table, self.names.join(", "));
        let select = format!("SELECT {names} FROM {table}");
        let standard = format!("CREATE TABLE {scratch} AS ({select}) WITH NO DATA");
        let common = format!("CREATE TABLE {scratch} AS {select} WHERE 1 = 0");
        let ways = match self.kind {
            Dbms::SqlServer => vec![format!("SELECT TOP 0 {names} INTO {scratch} FROM {table}")],
            Dbms::Db2 => vec![standard],
            Dbms::Other => vec![standard, common],
            _ => vec![common],
        };
        let conn = lock(conn)?;
        let mut refused = None;
        for sql in &ways {
            match conn.execute(sql, (), None) {
                Ok(_) => return Ok(()),
                Err(e) => refused = Some(failed(sql.clone())(e)),
            }
        }
        Err(refused.unwrap_or_else(|| Error::Internal("no CREATE TABLE to try".into())))
    }

    /// The first rows of `data` the scratch table takes one at a time, read back; then the same
    /// rows as the load sends them, read back; alike or not.
    fn compare(
        &self,
        conn: &Arc<Mutex<Connection<'static>>>,
        data: &[u8],
        rows: usize,
    ) -> Result<Verdict> {
        let width = self.names.len();
        let mut one_by_one = Inserts::new(Arc::clone(conn), &self.scratch, &self.names, 1, None);
        one_by_one.one_at_a_time();
        let (mut taken, mut count) = (Vec::new(), 0);
        let mut values = Values::new(data);
        for _ in 0..rows.min(TRIED) {
            let mut row = Vec::new();
            values.by_ref().take(width).for_each(|v| push(&mut row, v));
            if one_by_one.insert(&row, 1, &mut |_, _, _| Ok(())).is_ok() {
                taken.extend_from_slice(&row);
                count += 1;
                if count == ROWS {
                    break;
                }
            }
        }
        drop(one_by_one);
        if count < 2 {
            return Ok(Verdict::OneAtATime(format!(
                "fewer than 2 of the first {} rows went in one at a time, too few to check the driver's parameter arrays",
                rows.min(TRIED)
            )));
        }
        let expected = self.read_back(conn)?;
        self.run_sql(conn, &format!("DELETE FROM {}", self.scratch))?;
        // Several parameter sets of several rows each, where the load sends multi-row INSERTs.
        let per_statement = self.rows_per_statement.min(count / 2).max(1);
        let mut arrays = Inserts::new(
            Arc::clone(conn),
            &self.scratch,
            &self.names,
            per_statement,
            None,
        );
        if let Err(e) = arrays.insert(&taken, count, &mut |_, _, _| Ok(())) {
            return Ok(Verdict::OneAtATime(format!(
                "the driver refused as parameter arrays {count} rows it took one at a time: {e}"
            )));
        }
        drop(arrays);
        let sent = self.read_back(conn)?;
        Ok(judge(expected, sent))
    }

    fn read_back(&self, conn: &Mutex<Connection<'static>>) -> Result<Vec<Vec<Option<Vec<u8>>>>> {
        let sql = format!("SELECT {} FROM {}", self.names.join(", "), self.scratch);
        raw_rows(
            &*lock(conn)?,
            &sql,
            (),
            "the rows of the check of parameter arrays",
        )
    }

    fn run_sql(&self, conn: &Mutex<Connection<'static>>, sql: &str) -> Result<()> {
        lock(conn)?
            .execute(sql, (), None)
            .map_err(failed(sql.to_string()))?;
        Ok(())
    }
}

impl FirstRows for ArrayCheck {
    fn arrays_carry(&self, data: &[u8], rows: usize) -> bool {
        let verdict = self.verdict.get_or_init(|| {
            self.run(data, rows).unwrap_or_else(|e| {
                Verdict::OneAtATime(format!(
                    "the driver's parameter arrays could not be checked: {e}"
                ))
            })
        });
        matches!(verdict, Verdict::Alike(_))
    }
}

fn lock<'a>(
    conn: &'a Mutex<Connection<'static>>,
) -> Result<std::sync::MutexGuard<'a, Connection<'static>>> {
    conn.lock()
        .map_err(|_| Error::Internal("the check's connection was left poisoned".into()))
}

/// Alike when both reads hold the same rows, in any order (a table has none).
fn judge(
    mut one_by_one: Vec<Vec<Option<Vec<u8>>>>,
    mut arrays: Vec<Vec<Option<Vec<u8>>>>,
) -> Verdict {
    let rows = one_by_one.len();
    one_by_one.sort();
    arrays.sort();
    if one_by_one == arrays {
        return Verdict::Alike(rows);
    }
    // The rows one by one stored that the arrays did not, each matched once.
    let mut unmatched = one_by_one;
    for row in &arrays {
        if let Ok(at) = unmatched.binary_search(row) {
            unmatched.remove(at);
        }
    }
    let differ = unmatched.len();
    Verdict::OneAtATime(format!(
        "the driver's parameter arrays stored {differ} of {rows} rows otherwise than one row per execute did ({} read back)",
        arrays.len()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(values: &[&[Option<&str>]]) -> Vec<Vec<Option<Vec<u8>>>> {
        values
            .iter()
            .map(|row| {
                row.iter()
                    .map(|v| v.map(|v| v.as_bytes().to_vec()))
                    .collect()
            })
            .collect()
    }

    fn driver(dbms: &str, name: &str) -> Driver {
        Driver {
            dbms: dbms.into(),
            dbms_version: String::new(),
            name: name.into(),
            version: String::new(),
            quote: '"',
        }
    }

    #[test]
    fn the_same_rows_in_another_order_are_alike() {
        let a = rows(&[&[Some("1"), None], &[Some("2"), Some("b")]]);
        let b = rows(&[&[Some("2"), Some("b")], &[Some("1"), None]]);
        assert_eq!(judge(a, b), Verdict::Alike(2));
    }

    #[test]
    fn the_first_row_stored_in_every_row_is_caught() {
        let a = rows(&[&[Some("1")], &[Some("2")], &[Some("3")]]);
        let b = rows(&[&[Some("1")], &[Some("1")], &[Some("1")]]);
        let Verdict::OneAtATime(why) = judge(a, b) else {
            panic!("alike")
        };
        assert!(why.contains("stored 2 of 3 rows"), "{why}");
    }

    #[test]
    fn rows_missing_from_the_arrays_are_caught() {
        let a = rows(&[&[Some("1")], &[Some("2")]]);
        let b = rows(&[&[Some("1")]]);
        let Verdict::OneAtATime(why) = judge(a, b) else {
            panic!("alike")
        };
        assert!(
            why.contains("1 of 2 rows") && why.contains("(1 read back)"),
            "{why}"
        );
    }

    #[test]
    fn a_null_is_not_an_empty_text() {
        let a = rows(&[&[None]]);
        let b = rows(&[&[Some("")]]);
        assert!(matches!(judge(a, b), Verdict::OneAtATime(_)));
    }

    #[test]
    fn only_the_tested_drivers_are_trusted_unless_asked() {
        let tested = [
            driver("PostgreSQL", "psqlodbcw.so"),
            driver("MariaDB", "libmaodbc.so"),
            driver("SQLite", "libsqlite3odbc-0.9998.so"),
        ];
        for d in &tested {
            assert_eq!(Policy::of(d, None).unwrap(), Policy::Trust, "{}", d.name);
            assert_eq!(Policy::of(d, Some("check")).unwrap(), Policy::Check);
        }
        let others = [
            driver("Microsoft SQL Server", "libmsodbcsql-18.so"),
            driver("PostgreSQL", "libpgodbc-other.so"),
        ];
        for d in &others {
            assert_eq!(Policy::of(d, None).unwrap(), Policy::Check, "{}", d.name);
            assert_eq!(Policy::of(d, Some("trust")).unwrap(), Policy::Trust);
        }
        assert_eq!(Policy::of(&others[0], Some("off")).unwrap(), Policy::Off);
        assert!(matches!(
            Policy::of(&others[0], Some("yes")),
            Err(Error::Usage(_))
        ));
    }
}
