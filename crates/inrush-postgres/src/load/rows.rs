//! The workers' rows as COPY tuples: binary, each value in its type's send format (the values
//! no client encoder reads exactly go to the server's own input function, through a
//! [`Resolver`] per worker), or text lines when a column's type has no binary encoder. Under
//! `--on-conflict` each row ends with its place in the input, for the staging merge to keep
//! the first or the last of a key.

use crate::copy::CopyFormat;
use crate::resolve::Resolver;
use crate::{ConnectOptions, PgColumn};
use inrush_arrow::{Coercion, Field, Prepared};
use inrush_core::TargetColumn;
use inrush_encode::binary_copy::{tuple_fields, TupleWriter};
use inrush_encode::{text_copy, ColumnEncoder, EncodeContext, EncodeError, ScalarType, ValueType};
use inrush_load::encoder::{as_text, At, Refused, RowEncoder, RowWriter, ValueTexts};

/// One load's COPY encoding, shared by the workers.
pub(super) struct CopyRows {
    pub format: CopyFormat,
    pub ctx: EncodeContext,
    pub columns: Vec<PgColumn>,
    /// The relation's bare name, as the server names it in NOT NULL messages.
    pub relation: String,
    /// Each row ends with its [`At::position`] as a bigint field.
    pub ordinal: bool,
    /// Where each worker's resolver connects.
    pub target: ConnectOptions,
}

impl RowEncoder for CopyRows {
    fn worker(&self, nul_free: bool) -> Box<dyn RowWriter + '_> {
        let encoder = |c: &PgColumn| ColumnEncoder::new(&c.value_type, c.typmod, nul_free);
        let inputs = self.columns.iter().map(|c| c.input_sql.clone()).collect();
        Box::new(CopyWriter {
            rows: self,
            encoders: self.columns.iter().map(encoder).collect(),
            resolver: Resolver::new(self.target.clone(), inputs),
            text: String::new(),
        })
    }

    fn reads_plain(&self) -> bool {
        false
    }

    fn coercion(
        &self,
        field: &Field,
        column: usize,
        target: &TargetColumn,
    ) -> inrush_arrow::Result<Coercion> {
        // Under text COPY too: the type decides how values render (uuid, json).
        let ours = &self.columns[column];
        Coercion::new(field, target, &ours.value_type, ours.typmod)
    }

    fn fields<'d>(
        &self,
        data: &'d [u8],
        pos: usize,
        fields: &mut Vec<Option<&'d [u8]>>,
    ) -> Option<usize> {
        tuple_fields(data, pos, fields)
    }
}

/// One worker's COPY tuples.
struct CopyWriter<'r> {
    rows: &'r CopyRows,
    encoders: Vec<ColumnEncoder>,
    resolver: Resolver,
    /// A deferred value's text, for the server to read.
    text: String,
}

impl RowWriter for CopyWriter<'_> {
    fn row(&mut self, fields: &[Option<&str>], at: At, out: &mut Vec<u8>) -> Result<(), Refused> {
        match self.rows.format {
            CopyFormat::Text => self.text_row(fields, at, out),
            CopyFormat::Binary => self.binary_row(fields, at, out),
        }
    }

    fn arrow_row(
        &mut self,
        columns: &[Prepared],
        row: usize,
        at: At,
        texts: &mut ValueTexts,
        out: &mut Vec<u8>,
    ) -> Result<(), Refused> {
        if self.rows.format == CopyFormat::Text {
            return as_text(self, columns, row, at, texts, out);
        }
        let CopyWriter {
            rows,
            resolver,
            text,
            ..
        } = self;
        let values = Values {
            null: |i: usize| columns[i].is_null(row),
            encode: |i: usize, ctx: &EncodeContext, buf: &mut Vec<u8>| {
                columns[i].encode(row, ctx, buf)
            },
            text: |i: usize, text: &mut String| columns[i].text(row, text),
        };
        rows.binary_tuple(values, at, out, resolver, text)
    }

    fn round_trips(&self) -> u64 {
        self.resolver.round_trips
    }
}

impl CopyWriter<'_> {
    fn binary_row(
        &mut self,
        fields: &[Option<&str>],
        at: At,
        out: &mut Vec<u8>,
    ) -> Result<(), Refused> {
        let CopyWriter {
            rows,
            encoders,
            resolver,
            text,
        } = self;
        let values = Values {
            null: |i: usize| fields[i].is_none(),
            encode: |i: usize, ctx: &EncodeContext, buf: &mut Vec<u8>| {
                encoders[i].encode(fields[i].unwrap_or_default(), ctx, buf)
            },
            text: |i: usize, text: &mut String| text.push_str(fields[i].unwrap_or_default()),
        };
        rows.binary_tuple(values, at, out, resolver, text)
    }

    /// Text COPY: the server reads the values; the client still checks NULLs.
    fn text_row(&self, fields: &[Option<&str>], at: At, out: &mut Vec<u8>) -> Result<(), Refused> {
        let mark = out.len();
        for (i, (column, field)) in self.rows.columns.iter().zip(fields).enumerate() {
            if field.is_none() && column.column.not_null {
                out.truncate(mark);
                return Err(Refused::Value(i, self.rows.not_null_reason(column)));
            }
            if i > 0 {
                out.push(b'\t');
            }
            text_copy::push_field(out, field.map(str::as_bytes));
        }
        if self.rows.ordinal {
            out.extend_from_slice(format!("\t{}", at.position).as_bytes());
        }
        out.push(b'\n');
        Ok(())
    }
}

/// One row's values, as a binary tuple takes them: whether column `i`'s is NULL, its binary
/// form, and (when the client defers it) its text for the server to read.
struct Values<N, E, T> {
    null: N,
    encode: E,
    text: T,
}

impl CopyRows {
    /// Appends one binary tuple of `values`, with the ordinal when there is one; a refused
    /// value leaves `out` as it was.
    fn binary_tuple<N, E, T>(
        &self,
        mut values: Values<N, E, T>,
        at: At,
        out: &mut Vec<u8>,
        resolver: &mut Resolver,
        scratch: &mut String,
    ) -> Result<(), Refused>
    where
        N: Fn(usize) -> bool,
        E: FnMut(usize, &EncodeContext, &mut Vec<u8>) -> Result<(), EncodeError>,
        T: FnMut(usize, &mut String),
    {
        let mut out = TupleWriter::on(out);
        let width = self.columns.len() + usize::from(self.ordinal);
        let mark = out.begin_tuple(width as u16);
        for (i, column) in self.columns.iter().enumerate() {
            if (values.null)(i) {
                if column.column.not_null {
                    out.rewind(mark);
                    return Err(Refused::Value(i, self.not_null_reason(column)));
                }
                out.null();
                continue;
            }
            let written = out.field(|buf| {
                let start = buf.len();
                match (values.encode)(i, &self.ctx, buf) {
                    Ok(()) => Ok(()),
                    Err(EncodeError::Refused(reason)) => Err(Refused::Value(i, reason)),
                    Err(EncodeError::Deferred) => {
                        buf.truncate(start);
                        scratch.clear();
                        (values.text)(i, scratch);
                        resolve_into(resolver, i, scratch, buf)
                    }
                }
            });
            if let Err(refused) = written {
                out.rewind(mark);
                return Err(refused);
            }
        }
        if self.ordinal {
            let appended: Result<(), ()> = out.field(|buf| {
                buf.extend_from_slice(&(at.position as i64).to_be_bytes());
                Ok(())
            });
            debug_assert!(appended.is_ok());
        }
        Ok(())
    }

    fn not_null_reason(&self, column: &PgColumn) -> String {
        format!(
            "null value in column \"{}\" of relation \"{}\" violates not-null constraint",
            column.column.name, self.relation
        )
    }

    /// Whether values of this type sort by their binary form: `Some(true)` as big-endian signed
    /// numbers (integers, dates, timestamps), `Some(false)` as bytes (text in byte order,
    /// which is what an index's locality needs, not the collation's order; uuid).
    pub fn signed(value_type: &ValueType) -> Option<bool> {
        use ScalarType as S;
        match value_type {
            ValueType::Scalar { scalar } => match scalar {
                S::Int2 | S::Int4 | S::Int8 | S::Date | S::Timestamp | S::Timestamptz => Some(true),
                S::Text | S::Varchar | S::Bpchar | S::Uuid => Some(false),
                _ => None,
            },
            _ => None,
        }
    }
}

/// Asks the server for a value the client deferred, appending its binary form.
fn resolve_into(
    resolver: &mut Resolver,
    column: usize,
    text: &str,
    buf: &mut Vec<u8>,
) -> Result<(), Refused> {
    match resolver.resolve(column, text) {
        Ok(Ok(value)) => {
            buf.extend_from_slice(&value);
            Ok(())
        }
        Ok(Err(reason)) => Err(Refused::Value(column, reason)),
        // The server's failure, not the row's.
        Err(e) => Err(Refused::Failed(e.into())),
    }
}
