//! Asking the server to read a value the client's encoders deferred (DateStyle-dependent dates,
//! PostgreSQL 16's `1_000`, hex floats, ...). The answer is exact by construction: the server's
//! own input function runs with the column's typmod (as COPY calls it), in a session with the same settings as the COPY sessions, and the
//! result comes back in binary, ready for the COPY stream. Answers are cached, so a file full of
//! `01/02/2024` costs one round trip per distinct value, not per row.

use crate::{ConnectOptions, Error, Result};
use postgres::types::{FromSql, Type};
use std::collections::HashMap;

/// Distinct values remembered per resolver before the cache starts over.
const CACHE_LIMIT: usize = 65_536;

/// One connection's worth of value resolution; one per worker thread, opened on first use.
pub struct Resolver {
    target: ConnectOptions,
    /// Per column, the SELECT that reads `$1` with its type's input function
    /// ([`crate::PgColumn::input_sql`]).
    inputs: Vec<String>,
    client: Option<postgres::Client>,
    statements: HashMap<usize, postgres::Statement>,
    cache: HashMap<(usize, Box<str>), Result<Vec<u8>, String>>,
    /// Values sent to the server so far.
    pub round_trips: u64,
}

impl Resolver {
    pub fn new(target: ConnectOptions, inputs: Vec<String>) -> Self {
        Resolver {
            target,
            inputs,
            client: None,
            statements: HashMap::new(),
            cache: HashMap::new(),
            round_trips: 0,
        }
    }

    /// The binary form of `text` read as column `col`'s type (typmod applied), or the server's
    /// reason for refusing it.
    pub fn resolve(&mut self, col: usize, text: &str) -> Result<Result<Vec<u8>, String>> {
        if let Some(hit) = self.cache.get(&(col, text.into())) {
            return Ok(hit.clone());
        }
        let client = match &mut self.client {
            Some(client) => client,
            None => self.client.insert(self.target.connect_blocking()?),
        };
        let stmt = match self.statements.get(&col) {
            Some(s) => s.clone(),
            None => {
                let sql = &self.inputs[col];
                let s = client.prepare(sql).map_err(|cause| Error::Query {
                    what: format!("preparing {sql}"),
                    cause,
                })?;
                self.statements.insert(col, s.clone());
                s
            }
        };
        self.round_trips += 1;
        let answer = match client.query_one(&stmt, &[&text]) {
            Ok(row) => Ok(row.get::<_, RawValue>(0).0),
            Err(e) => match e.as_db_error() {
                Some(db) => Err(db.message().to_string()),
                None => {
                    return Err(Error::Query {
                        what: "resolving a value on the server".into(),
                        cause: e,
                    })
                }
            },
        };
        if self.cache.len() >= CACHE_LIMIT {
            self.cache.clear();
        }
        self.cache.insert((col, text.into()), answer.clone());
        Ok(answer)
    }
}

/// A result column's bytes exactly as the server sent them in binary.
pub(crate) struct RawValue(pub Vec<u8>);

impl<'a> FromSql<'a> for RawValue {
    fn from_sql(_: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(RawValue(raw.to_vec()))
    }

    fn accepts(_: &Type) -> bool {
        true
    }
}
