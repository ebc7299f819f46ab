//! The workers' rows as COPY tuples: binary, each value in its type's send format (the values
//! no client encoder reads exactly go to the server's own input function, through a
//! [`Resolver`] per worker), or text lines when a column's type has no binary encoder. Under
//! `--on-conflict` each row ends with its place in the input, for the staging merge to keep
//! the first or the last of a key.

use crate::copy::CopyFormat;
use crate::resolve::Resolver;
use crate::ConnectOptions;
use inrush_arrow::Prepared;
use inrush_core::TargetColumn;
use inrush_encode::binary_copy::TupleWriter;
use inrush_encode::{text_copy, ColumnEncoder, EncodeContext, EncodeError};
use inrush_load::encoder::{as_text, At, Refused, RowEncoder, RowWriter, ValueTexts};

/// One load's COPY encoding, shared by the workers.
pub(super) struct CopyRows {
    pub format: CopyFormat,
    pub ctx: EncodeContext,
    pub columns: Vec<TargetColumn>,
    /// The relation's bare name, as the server names it in NOT NULL messages.
    pub relation: String,
    /// Each row ends with its [`At::position`] as a bigint field.
    pub ordinal: bool,
    /// Where each worker's resolver connects.
    pub target: ConnectOptions,
}

impl RowEncoder for CopyRows {
    fn worker(&self, nul_free: bool) -> Box<dyn RowWriter + '_> {
        let encoder = |c: &TargetColumn| ColumnEncoder::new(&c.value_type, c.typmod, nul_free);
        Box::new(CopyWriter {
            rows: self,
            encoders: self.columns.iter().map(encoder).collect(),
            resolver: Resolver::new(self.target.clone(), self.columns.clone()),
            text: String::new(),
        })
    }

    fn reads_plain(&self) -> bool {
        false
    }
}

/// One worker's COPY tuples.
struct CopyWriter<'r> {
    rows: &'r CopyRows,
    encoders: Vec<ColumnEncoder>,
    resolver: Resolver,
    /// A columnar value's text, when the server reads it.
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
        let mut out = TupleWriter::on(out);
        let mark = out.begin_tuple(self.width());
        for (i, (prepared, column)) in columns.iter().zip(&self.rows.columns).enumerate() {
            if prepared.is_null(row) {
                if column.not_null {
                    out.rewind(mark);
                    return Err(Refused::Value(i, self.rows.not_null_reason(column)));
                }
                out.null();
                continue;
            }
            let (ctx, resolver, text) = (&self.rows.ctx, &mut self.resolver, &mut self.text);
            let written = out.field(|buf| {
                let start = buf.len();
                match prepared.encode(row, ctx, buf) {
                    Ok(()) => Ok(()),
                    Err(EncodeError::Refused(reason)) => Err(Refused::Value(i, reason)),
                    Err(EncodeError::Deferred) => {
                        buf.truncate(start);
                        text.clear();
                        prepared.text(row, text);
                        resolve_into(resolver, i, text, buf)
                    }
                }
            });
            if let Err(refused) = written {
                out.rewind(mark);
                return Err(refused);
            }
        }
        self.push_ordinal(&mut out, at);
        Ok(())
    }

    fn round_trips(&self) -> u64 {
        self.resolver.round_trips
    }
}

impl CopyWriter<'_> {
    /// Fields in a tuple: the columns, and the ordinal when there is one.
    fn width(&self) -> u16 {
        (self.rows.columns.len() + usize::from(self.rows.ordinal)) as u16
    }

    fn binary_row(
        &mut self,
        fields: &[Option<&str>],
        at: At,
        out: &mut Vec<u8>,
    ) -> Result<(), Refused> {
        let mut out = TupleWriter::on(out);
        let mark = out.begin_tuple(self.width());
        let columns = self.rows.columns.iter().zip(&self.encoders);
        for (i, ((column, encoder), field)) in columns.zip(fields).enumerate() {
            let Some(text) = field else {
                if column.not_null {
                    out.rewind(mark);
                    return Err(Refused::Value(i, self.rows.not_null_reason(column)));
                }
                out.null();
                continue;
            };
            let (ctx, resolver) = (&self.rows.ctx, &mut self.resolver);
            let written = out.field(|buf| {
                let start = buf.len();
                match encoder.encode(text, ctx, buf) {
                    Ok(()) => Ok(()),
                    Err(EncodeError::Refused(reason)) => Err(Refused::Value(i, reason)),
                    Err(EncodeError::Deferred) => {
                        buf.truncate(start);
                        resolve_into(resolver, i, text, buf)
                    }
                }
            });
            if let Err(refused) = written {
                out.rewind(mark);
                return Err(refused);
            }
        }
        self.push_ordinal(&mut out, at);
        Ok(())
    }

    /// Text COPY: the server reads the values; the client still checks NULLs.
    fn text_row(&self, fields: &[Option<&str>], at: At, out: &mut Vec<u8>) -> Result<(), Refused> {
        let mark = out.len();
        for (i, (column, field)) in self.rows.columns.iter().zip(fields).enumerate() {
            if field.is_none() && column.not_null {
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

    /// Appends the binary tuple's last field, the ordinal, when there is one.
    fn push_ordinal(&self, out: &mut TupleWriter<&mut Vec<u8>>, at: At) {
        if self.rows.ordinal {
            let appended: Result<(), ()> = out.field(|buf| {
                buf.extend_from_slice(&(at.position as i64).to_be_bytes());
                Ok(())
            });
            debug_assert!(appended.is_ok());
        }
    }
}

impl CopyRows {
    fn not_null_reason(&self, column: &TargetColumn) -> String {
        format!(
            "null value in column \"{}\" of relation \"{}\" violates not-null constraint",
            column.name, self.relation
        )
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
