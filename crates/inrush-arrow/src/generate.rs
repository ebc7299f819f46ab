//! The generator's rows (`inrush_read::generate`) written as Parquet, typed as their columns
//! are: `inrush gen --format parquet`.

use crate::{Error, Result};
use arrow_array::builder::{
    Date32Builder, Decimal128Builder, Float64Builder, Int32Builder, StringBuilder,
    TimestampMicrosecondBuilder,
};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema as ArrowSchema, TimeUnit};
use inrush_read::generate::{Kind, Schema, Value};
use parquet::arrow::ArrowWriter;
use std::path::Path;
use std::sync::Arc;

/// Rows per record batch handed to the writer.
const BATCH_ROWS: u64 = 65_536;

/// The Arrow type a generated column is written as.
fn arrow_type(kind: Kind) -> DataType {
    match kind {
        Kind::Int32 => DataType::Int32,
        Kind::Float64 => DataType::Float64,
        Kind::Decimal { precision, scale } => DataType::Decimal128(precision, scale as i8),
        Kind::Text => DataType::Utf8,
        Kind::Date => DataType::Date32,
        Kind::Timestamp => DataType::Timestamp(TimeUnit::Microsecond, None),
    }
}

/// Writes `rows` rows of `schema` (seeded like the CSV and JSON-lines writers, so the same
/// seed gives the same values) to a Parquet file; returns the file's size.
pub fn write_parquet(path: &Path, schema: Schema, rows: u64, seed: u64) -> Result<u64> {
    let columns = schema.columns();
    let arrow_schema = Arc::new(ArrowSchema::new(
        columns
            .iter()
            .map(|c| Field::new(c.name, arrow_type(c.kind), !c.sql.contains("NOT NULL")))
            .collect::<Vec<_>>(),
    ));
    let io = |cause| Error::Open {
        path: path.to_path_buf(),
        cause,
    };
    let parquet = |cause| Error::Parquet {
        path: path.to_path_buf(),
        cause,
    };
    let file = std::fs::File::create(path).map_err(io)?;
    let mut writer = ArrowWriter::try_new(file, arrow_schema.clone(), None).map_err(parquet)?;
    let mut gen = schema.rows(seed);
    let mut values = Vec::with_capacity(columns.len());
    let mut written = 0;
    while written < rows {
        let n = (rows - written).min(BATCH_ROWS) as usize;
        let mut builders: Vec<Builder> = columns.iter().map(|c| Builder::new(c.kind, n)).collect();
        for _ in 0..n {
            gen.next_row(&mut values);
            for (builder, value) in builders.iter_mut().zip(&values) {
                builder.append(value);
            }
        }
        let arrays = builders
            .into_iter()
            .map(Builder::finish)
            .collect::<Result<Vec<ArrayRef>>>()?;
        let batch =
            RecordBatch::try_new(arrow_schema.clone(), arrays).map_err(|cause| Error::Arrow {
                path: path.to_path_buf(),
                cause,
            })?;
        writer.write(&batch).map_err(parquet)?;
        written += n as u64;
    }
    writer.close().map_err(parquet)?;
    Ok(std::fs::metadata(path).map_err(io)?.len())
}

/// A column builder for one generated kind.
enum Builder {
    Int32(Int32Builder),
    Float64(Float64Builder),
    Decimal(Decimal128Builder, u8, i8),
    Text(StringBuilder),
    Date(Date32Builder),
    Timestamp(TimestampMicrosecondBuilder),
}

impl Builder {
    fn new(kind: Kind, rows: usize) -> Builder {
        match kind {
            Kind::Int32 => Builder::Int32(Int32Builder::with_capacity(rows)),
            Kind::Float64 => Builder::Float64(Float64Builder::with_capacity(rows)),
            Kind::Decimal { precision, scale } => Builder::Decimal(
                Decimal128Builder::with_capacity(rows),
                precision,
                scale as i8,
            ),
            Kind::Text => Builder::Text(StringBuilder::with_capacity(rows, rows * 32)),
            Kind::Date => Builder::Date(Date32Builder::with_capacity(rows)),
            Kind::Timestamp => Builder::Timestamp(TimestampMicrosecondBuilder::with_capacity(rows)),
        }
    }

    /// Appends a value; the generator gives each column values of its own kind.
    fn append(&mut self, value: &Value) {
        match (self, value) {
            (Builder::Int32(b), Value::Int(v)) => b.append_value(*v as i32),
            (Builder::Float64(b), Value::Float(v)) => b.append_value(*v),
            (Builder::Decimal(b, ..), Value::Decimal(v)) => b.append_value(i128::from(*v)),
            (Builder::Text(b), Value::Text(v)) => b.append_value(v),
            (Builder::Date(b), Value::Date(v)) => b.append_value(*v),
            (Builder::Timestamp(b), Value::Timestamp(v)) => b.append_value(*v),
            (builder, _) => builder.append_null(),
        }
    }

    fn append_null(&mut self) {
        match self {
            Builder::Int32(b) => b.append_null(),
            Builder::Float64(b) => b.append_null(),
            Builder::Decimal(b, ..) => b.append_null(),
            Builder::Text(b) => b.append_null(),
            Builder::Date(b) => b.append_null(),
            Builder::Timestamp(b) => b.append_null(),
        }
    }

    fn finish(self) -> Result<ArrayRef> {
        Ok(match self {
            Builder::Int32(mut b) => Arc::new(b.finish()),
            Builder::Float64(mut b) => Arc::new(b.finish()),
            Builder::Decimal(mut b, precision, scale) => Arc::new(
                b.finish()
                    .with_precision_and_scale(precision, scale)
                    .map_err(|cause| Error::Arrow {
                        path: Default::default(),
                        cause,
                    })?,
            ),
            Builder::Text(mut b) => Arc::new(b.finish()),
            Builder::Date(mut b) => Arc::new(b.finish()),
            Builder::Timestamp(mut b) => Arc::new(b.finish()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ArrowFile;

    #[test]
    fn every_schema_writes_a_parquet_file_with_its_rows() {
        let dir = tempfile::tempdir().unwrap();
        for schema in Schema::ALL {
            let path = dir.path().join(format!("{}.parquet", schema.name()));
            write_parquet(&path, schema, 100_000, 3).unwrap();
            let file = ArrowFile::open(&path).unwrap();
            assert_eq!(file.rows(), 100_000);
            assert_eq!(file.schema().fields().len(), schema.columns().len());
        }
    }
}
