//! The case the issue names: TPC-H lineitem from Parquet into the standard lineitem table,
//! where Arrow's int64 keys go into integer columns and decimals into numeric(15,2).
use arrow_array::types::Int32Type;
use arrow_array::{
    ArrayRef, Date32Array, Decimal128Array, DictionaryArray, Int64Array, RecordBatch, StringArray,
};
use arrow_schema::{DataType, Field, Schema};
use inrush_arrow::{ArrowFile, Coercion, Prepared};
use inrush_core::{SqlType, TargetColumn};
use inrush_encode::{encode_value, EncodeContext, EncodeError, ScalarType, ValueType};
use parquet::arrow::ArrowWriter;
use parquet::file::properties::WriterProperties;
use std::sync::Arc;

/// A lineitem column and the binary type PostgreSQL's encoder writes it in.
struct Col {
    column: TargetColumn,
    value_type: ValueType,
    typmod: i32,
}

fn target(name: &str, scalar: ScalarType, typmod: i32, type_sql: &str) -> Col {
    let column = TargetColumn {
        name: name.into(),
        type_sql: type_sql.into(),
        sql_type: SqlType::Text,
        not_null: true,
    };
    Col {
        column,
        value_type: ValueType::Scalar { scalar },
        typmod,
    }
}

#[test]
fn lineitem_parquet_into_the_standard_table() {
    let schema = Arc::new(Schema::new(vec![
        Field::new("l_orderkey", DataType::Int64, false),
        Field::new("l_linenumber", DataType::Int64, false),
        Field::new("l_quantity", DataType::Decimal128(15, 2), false),
        Field::new(
            "l_returnflag",
            DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8)),
            false,
        ),
        Field::new("l_shipdate", DataType::Date32, false),
        Field::new("l_comment", DataType::Utf8, false),
    ]));
    let rows = 1000;
    let keys: Vec<i64> = (0..rows).map(|i| i * 3_000_000 + 1).collect();
    let flags = Int32Array::from((0..rows).map(|i| (i % 3) as i32).collect::<Vec<_>>());
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from(keys.clone())),
        Arc::new(Int64Array::from(
            (0..rows).map(|i| i % 7 + 1).collect::<Vec<_>>(),
        )),
        Arc::new(
            Decimal128Array::from((0..rows).map(|i| i128::from(i) * 100).collect::<Vec<_>>())
                .with_precision_and_scale(15, 2)
                .unwrap(),
        ),
        Arc::new(DictionaryArray::<Int32Type>::new(
            flags,
            Arc::new(StringArray::from(vec!["A", "N", "R"])),
        )),
        Arc::new(Date32Array::from(
            (0..rows).map(|i| 8035 + i as i32).collect::<Vec<_>>(),
        )),
        Arc::new(StringArray::from(
            (0..rows)
                .map(|i| format!("comment {i}"))
                .collect::<Vec<_>>(),
        )),
    ];
    let batch = RecordBatch::try_new(schema.clone(), columns).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lineitem.parquet");
    let props = WriterProperties::builder()
        .set_max_row_group_row_count(Some(300))
        .build();
    let mut w =
        ArrowWriter::try_new(std::fs::File::create(&path).unwrap(), schema, Some(props)).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();

    // The table's columns, in an order other than the file's.
    let table = [
        target("l_orderkey", ScalarType::Int4, -1, "integer"),
        target("l_linenumber", ScalarType::Int4, -1, "integer"),
        target(
            "l_comment",
            ScalarType::Varchar,
            44 + 4,
            "character varying(44)",
        ),
        target(
            "l_quantity",
            ScalarType::Numeric,
            ((15 << 16) | 2) + 4,
            "numeric(15,2)",
        ),
        target("l_returnflag", ScalarType::Bpchar, 1 + 4, "character(1)"),
        target("l_shipdate", ScalarType::Date, -1, "date"),
    ];
    let file = ArrowFile::open(&path).unwrap();
    let file_schema = file.schema();
    let projection: Vec<usize> = table
        .iter()
        .map(|c| file_schema.index_of(&c.column.name).unwrap())
        .collect();
    let coercions: Vec<Coercion> = table
        .iter()
        .zip(&projection)
        .map(|(c, &i)| {
            Coercion::new(file_schema.field(i), &c.column, &c.value_type, c.typmod).unwrap()
        })
        .collect();
    assert_eq!(file.parts().len(), 4);

    let ctx = EncodeContext::default();
    let (mut good, mut bad) = (0u64, Vec::new());
    let (mut out, mut text) = (Vec::new(), String::new());
    for part in file.parts() {
        let mut row_number = part.first_row;
        for batch in file.read_part(part.index, &projection).unwrap() {
            let batch = batch.unwrap();
            let columns: Vec<Prepared> = coercions
                .iter()
                .zip(batch.columns())
                .map(|(c, array)| c.prepare(array.as_ref()))
                .collect();
            for row in 0..batch.num_rows() {
                let mut refused = None;
                for (col, c) in columns.iter().enumerate() {
                    assert!(!c.is_null(row));
                    out.clear();
                    match c.encode(row, &ctx, &mut out) {
                        Ok(()) => {
                            // The same bytes as COPY would store from the text form.
                            text.clear();
                            c.text(row, &mut text);
                            let mut reference = Vec::new();
                            encode_value(
                                &table[col].value_type,
                                table[col].typmod,
                                &text,
                                &ctx,
                                &mut reference,
                            )
                            .unwrap();
                            assert_eq!(out, reference, "{text}");
                        }
                        Err(EncodeError::Refused(reason)) => refused = Some(reason),
                        Err(EncodeError::Deferred) => panic!("nothing here needs the server"),
                    }
                }
                match refused {
                    Some(reason) => bad.push((row_number, reason)),
                    None => good += 1,
                }
                row_number += 1;
            }
        }
    }
    // Keys past 2^31 are bad rows with their row number and value, the rest load.
    let first_bad = keys.iter().position(|&k| k > i64::from(i32::MAX)).unwrap() as u64;
    assert_eq!(good, first_bad);
    assert_eq!(bad.len() as u64, rows as u64 - first_bad);
    assert_eq!(bad[0].0, first_bad);
    assert_eq!(
        bad[0].1,
        format!(
            "value \"{}\" is out of range for type integer",
            keys[first_bad as usize]
        )
    );
}

use arrow_array::Int32Array;

#[test]
fn file_and_coercions_go_to_worker_threads() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<ArrowFile>();
    send_sync::<Coercion>();
}
