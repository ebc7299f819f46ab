//! Seeded synthetic data: the same seed gives the same bytes on every machine, so the demo, the
//! benchmarks and the lab measure the same input.

use inrush_core::calendar::civil_from_days;
use std::io::{self, Write};

/// The SqlBulkCopy field report's table (../shared/seeds/002): three ints and three
/// varchar(100), about 330 bytes of CSV a row.
pub const SQLBULKCOPY_COLUMNS: &str = "fieldint1 int NOT NULL, fieldint2 int NOT NULL, fieldint3 int NOT NULL, \
     fieldchar1 varchar(100) NOT NULL, fieldchar2 varchar(100) NOT NULL, fieldchar3 varchar(100) NOT NULL";

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789 -";

/// splitmix64: tiny, fast, and stable across platforms and crate versions.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// The tables the generator knows: the seeds' SqlBulkCopy table, the Insert Benchmark's
/// table, and a TPC-H lineitem-like table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Schema {
    SqlBulkCopy,
    /// iibench's `purchases_index`: a bigserial key the server fills, and three secondary
    /// indexes.
    InsertBench,
    /// TPC-H lineitem's columns and types (dbgen's `dss.ddl`), with values of its shapes.
    Lineitem,
}

/// A column's type, as far as writing its values goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Int32,
    Float64,
    /// Fixed point: values are integers scaled by 10^scale.
    Decimal {
        precision: u8,
        scale: u8,
    },
    Text,
    /// Days since 1970-01-01.
    Date,
    /// Microseconds since 1970-01-01 00:00, no time zone.
    Timestamp,
}

/// One generated value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Int(i64),
    Float(f64),
    /// `unscaled / 10^scale` of its column's [`Kind::Decimal`].
    Decimal(i64),
    Text(String),
    Date(i32),
    Timestamp(i64),
}

/// A generated column: its name, SQL type and kind.
#[derive(Debug, Clone, Copy)]
pub struct Column {
    pub name: &'static str,
    pub sql: &'static str,
    pub kind: Kind,
}

const fn col(name: &'static str, sql: &'static str, kind: Kind) -> Column {
    Column { name, sql, kind }
}

const SQLBULKCOPY: &[Column] = &[
    col("fieldint1", "int NOT NULL", Kind::Int32),
    col("fieldint2", "int NOT NULL", Kind::Int32),
    col("fieldint3", "int NOT NULL", Kind::Int32),
    col("fieldchar1", "varchar(100) NOT NULL", Kind::Text),
    col("fieldchar2", "varchar(100) NOT NULL", Kind::Text),
    col("fieldchar3", "varchar(100) NOT NULL", Kind::Text),
];

const INSERTBENCH: &[Column] = &[
    col("dateandtime", "timestamp NOT NULL", Kind::Timestamp),
    col("cashregisterid", "int NOT NULL", Kind::Int32),
    col("customerid", "int NOT NULL", Kind::Int32),
    col("productid", "int NOT NULL", Kind::Int32),
    col("price", "float8 NOT NULL", Kind::Float64),
    col("data", "varchar(4000)", Kind::Text),
];

const DEC15_2: Kind = Kind::Decimal {
    precision: 15,
    scale: 2,
};

const LINEITEM: &[Column] = &[
    col("l_orderkey", "int NOT NULL", Kind::Int32),
    col("l_partkey", "int NOT NULL", Kind::Int32),
    col("l_suppkey", "int NOT NULL", Kind::Int32),
    col("l_linenumber", "int NOT NULL", Kind::Int32),
    col("l_quantity", "numeric(15,2) NOT NULL", DEC15_2),
    col("l_extendedprice", "numeric(15,2) NOT NULL", DEC15_2),
    col("l_discount", "numeric(15,2) NOT NULL", DEC15_2),
    col("l_tax", "numeric(15,2) NOT NULL", DEC15_2),
    col("l_returnflag", "char(1) NOT NULL", Kind::Text),
    col("l_linestatus", "char(1) NOT NULL", Kind::Text),
    col("l_shipdate", "date NOT NULL", Kind::Date),
    col("l_commitdate", "date NOT NULL", Kind::Date),
    col("l_receiptdate", "date NOT NULL", Kind::Date),
    col("l_shipinstruct", "char(25) NOT NULL", Kind::Text),
    col("l_shipmode", "char(10) NOT NULL", Kind::Text),
    col("l_comment", "varchar(44) NOT NULL", Kind::Text),
];

impl Schema {
    pub const ALL: [Schema; 3] = [Schema::SqlBulkCopy, Schema::InsertBench, Schema::Lineitem];

    pub fn name(self) -> &'static str {
        match self {
            Schema::SqlBulkCopy => "sqlbulkcopy",
            Schema::InsertBench => "insertbench",
            Schema::Lineitem => "lineitem",
        }
    }

    /// The columns the generator writes, in order.
    pub fn columns(self) -> &'static [Column] {
        match self {
            Schema::SqlBulkCopy => SQLBULKCOPY,
            Schema::InsertBench => INSERTBENCH,
            Schema::Lineitem => LINEITEM,
        }
    }

    /// `CREATE TABLE` (and indexes) for a table named `table` (already quoted) that the
    /// generated rows load into.
    pub fn create_sql(self, table: &str) -> String {
        let columns: Vec<String> = self
            .columns()
            .iter()
            .map(|c| format!("{} {}", c.name, c.sql))
            .collect();
        match self {
            Schema::InsertBench => format!(
                "CREATE TABLE {table} (transactionid bigserial PRIMARY KEY, {});\n\
                 CREATE INDEX ON {table} (price, customerid);\n\
                 CREATE INDEX ON {table} (cashregisterid, price, customerid);\n\
                 CREATE INDEX ON {table} (price, dateandtime, customerid);",
                columns.join(", ")
            ),
            _ => format!("CREATE TABLE {table} ({});", columns.join(", ")),
        }
    }

    /// Generated rows, the same for the same seed on every machine.
    pub fn rows(self, seed: u64) -> Rows {
        Rows {
            schema: self,
            rng: Rng::new(seed),
            row: 0,
        }
    }
}

impl std::str::FromStr for Schema {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Schema::ALL
            .into_iter()
            .find(|schema| schema.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Schema::ALL.iter().map(|s| s.name()).collect();
                format!("unknown schema {s:?} (known: {})", names.join(", "))
            })
    }
}

/// The row generator of one schema and seed.
#[derive(Debug, Clone)]
pub struct Rows {
    schema: Schema,
    rng: Rng,
    row: u64,
}

impl Rows {
    /// Fills `out` with the next row's values, one per column.
    pub fn next_row(&mut self, out: &mut Vec<Value>) {
        out.clear();
        let rng = &mut self.rng;
        self.row += 1;
        match self.schema {
            Schema::SqlBulkCopy => {
                for _ in 0..3 {
                    out.push(Value::Int(rng.next_u64() as i32 as i64));
                }
                for _ in 0..3 {
                    out.push(Value::Text(letters(rng, 90, 100)));
                }
            }
            Schema::InsertBench => {
                // iibench: time moves forward, registers and products from small ranges.
                let base = 1_735_689_600_000_000i64; // 2025-01-01
                let at = base + self.row as i64 * 1_000 + (rng.next_u64() % 1_000) as i64;
                out.push(Value::Timestamp(at));
                out.push(Value::Int((rng.next_u64() % 1_000) as i64));
                out.push(Value::Int((rng.next_u64() % 100_000) as i64));
                out.push(Value::Int((rng.next_u64() % 10_000) as i64));
                out.push(Value::Float((rng.next_u64() % 50_000) as f64 / 100.0));
                out.push(Value::Text(letters(rng, 10, 20)));
            }
            Schema::Lineitem => {
                let order = (self.row - 1) / 4 + 1;
                out.push(Value::Int(order as i64));
                out.push(Value::Int((rng.next_u64() % 200_000 + 1) as i64));
                out.push(Value::Int((rng.next_u64() % 10_000 + 1) as i64));
                out.push(Value::Int(((self.row - 1) % 4 + 1) as i64));
                let quantity = (rng.next_u64() % 50 + 1) as i64;
                out.push(Value::Decimal(quantity * 100));
                let price = 90_000 + (rng.next_u64() % 20_000) as i64;
                out.push(Value::Decimal(quantity * price));
                out.push(Value::Decimal((rng.next_u64() % 11) as i64));
                out.push(Value::Decimal((rng.next_u64() % 9) as i64));
                out.push(Value::Text(pick(rng, &["A", "N", "R"]).into()));
                out.push(Value::Text(pick(rng, &["F", "O"]).into()));
                let ship = 8036 + (rng.next_u64() % 2_500) as i32; // 1992-01-02 onwards
                out.push(Value::Date(ship));
                out.push(Value::Date(ship - 30 + (rng.next_u64() % 60) as i32));
                out.push(Value::Date(ship + 1 + (rng.next_u64() % 30) as i32));
                let instructs = [
                    "DELIVER IN PERSON",
                    "COLLECT COD",
                    "NONE",
                    "TAKE BACK RETURN",
                ];
                out.push(Value::Text(pick(rng, &instructs).into()));
                let modes = ["REG AIR", "AIR", "RAIL", "SHIP", "TRUCK", "MAIL", "FOB"];
                out.push(Value::Text(pick(rng, &modes).into()));
                out.push(Value::Text(letters(rng, 10, 43)));
            }
        }
    }
}

/// `min..=max` characters from a 64-letter alphabet (no quote, comma or backslash).
fn letters(rng: &mut Rng, min: usize, max: usize) -> String {
    let len = min + (rng.next_u64() % (max - min + 1) as u64) as usize;
    let mut s = String::with_capacity(len);
    let mut bits = rng.next_u64();
    for k in 0..len {
        if k % 10 == 9 {
            bits = rng.next_u64();
        }
        s.push(ALPHABET[(bits & 63) as usize] as char);
        bits >>= 6;
    }
    s
}

fn pick<'a>(rng: &mut Rng, choices: &[&'a str]) -> &'a str {
    choices[(rng.next_u64() % choices.len() as u64) as usize]
}

/// Text output formats: COPY's CSV, and JSON lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextFormat {
    Csv { header: bool },
    Jsonl,
}

/// Writes `rows` rows of `schema` as CSV or JSON lines; returns the bytes written.
pub fn write_text(
    out: &mut impl Write,
    schema: Schema,
    format: TextFormat,
    rows: u64,
    seed: u64,
) -> io::Result<u64> {
    let columns = schema.columns();
    let mut gen = schema.rows(seed);
    let mut values = Vec::with_capacity(columns.len());
    let mut line = String::with_capacity(512);
    let mut written = 0u64;
    if let TextFormat::Csv { header: true } = format {
        let names: Vec<&str> = columns.iter().map(|c| c.name).collect();
        line.push_str(&names.join(","));
        line.push('\n');
        out.write_all(line.as_bytes())?;
        written += line.len() as u64;
    }
    let json = format == TextFormat::Jsonl;
    for _ in 0..rows {
        gen.next_row(&mut values);
        line.clear();
        if json {
            line.push('{');
        }
        for (i, (column, value)) in columns.iter().zip(&values).enumerate() {
            if i > 0 {
                line.push(',');
            }
            // Names and generated texts need no JSON or CSV escapes (see `letters`, `pick`).
            let quote =
                json && matches!(value, Value::Text(_) | Value::Date(_) | Value::Timestamp(_));
            if json {
                line.push('"');
                line.push_str(column.name);
                line.push_str("\":");
            }
            if quote {
                line.push('"');
            }
            write_value(&mut line, column.kind, value);
            if quote {
                line.push('"');
            }
        }
        line.push_str(if json { "}\n" } else { "\n" });
        out.write_all(line.as_bytes())?;
        written += line.len() as u64;
    }
    Ok(written)
}

/// A value's PostgreSQL text form.
pub fn write_value(out: &mut String, kind: Kind, value: &Value) {
    use std::fmt::Write as _;
    // Writing to a String cannot fail.
    let _ = match value {
        Value::Int(v) => write!(out, "{v}"),
        Value::Float(v) => write!(out, "{v}"),
        Value::Decimal(v) => match kind {
            Kind::Decimal { scale, .. } if scale > 0 => {
                let unit = 10u64.pow(scale as u32);
                let sign = if *v < 0 { "-" } else { "" };
                let abs = v.unsigned_abs();
                let width = scale as usize;
                write!(out, "{sign}{}.{:0width$}", abs / unit, abs % unit)
            }
            _ => write!(out, "{v}"),
        },
        Value::Text(s) => {
            out.push_str(s);
            Ok(())
        }
        Value::Date(days) => {
            let (y, m, d) = civil_from_days(*days as i64);
            write!(out, "{y:04}-{m:02}-{d:02}")
        }
        Value::Timestamp(micros) => {
            let days = micros.div_euclid(86_400_000_000);
            let rest = micros.rem_euclid(86_400_000_000);
            let (y, m, d) = civil_from_days(days);
            let secs = rest / 1_000_000;
            let (h, min, s, us) = (secs / 3600, secs / 60 % 60, secs % 60, rest % 1_000_000);
            write!(out, "{y:04}-{m:02}-{d:02} {h:02}:{min:02}:{s:02}.{us:06}")
        }
    };
}

/// Writes `rows` rows of the SqlBulkCopy table as CSV (no header); returns the bytes written.
/// Strings are 90 to 100 characters from a 64-letter alphabet, never quoted or NULL.
pub fn sqlbulkcopy_csv(out: &mut impl Write, rows: u64, seed: u64) -> io::Result<u64> {
    write_text(
        out,
        Schema::SqlBulkCopy,
        TextFormat::Csv { header: false },
        rows,
        seed,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_bytes() {
        let (mut a, mut b) = (Vec::new(), Vec::new());
        let n = sqlbulkcopy_csv(&mut a, 100, 7).unwrap();
        sqlbulkcopy_csv(&mut b, 100, 7).unwrap();
        assert_eq!(a, b);
        assert_eq!(n as usize, a.len());
        assert_eq!(a.iter().filter(|&&c| c == b'\n').count(), 100);
    }

    #[test]
    fn every_schema_writes_csv_and_json_lines_with_one_value_per_column() {
        for schema in Schema::ALL {
            let mut csv = Vec::new();
            write_text(&mut csv, schema, TextFormat::Csv { header: true }, 50, 1).unwrap();
            let text = String::from_utf8(csv).unwrap();
            let lines: Vec<&str> = text.lines().collect();
            assert_eq!(lines.len(), 51);
            for line in &lines {
                assert_eq!(line.split(',').count(), schema.columns().len(), "{line}");
            }
            let mut jsonl = Vec::new();
            write_text(&mut jsonl, schema, TextFormat::Jsonl, 50, 1).unwrap();
            for line in String::from_utf8(jsonl).unwrap().lines() {
                let object: serde_json::Map<String, serde_json::Value> =
                    serde_json::from_str(line).unwrap();
                assert_eq!(object.len(), schema.columns().len());
            }
            assert!(schema.create_sql("t").starts_with("CREATE TABLE t ("));
        }
    }

    #[test]
    fn values_print_as_postgresql_reads_them() {
        let text = |kind, v: Value| {
            let mut s = String::new();
            write_value(&mut s, kind, &v);
            s
        };
        assert_eq!(text(DEC15_2, Value::Decimal(-5)), "-0.05");
        assert_eq!(text(DEC15_2, Value::Decimal(123_456)), "1234.56");
        assert_eq!(text(Kind::Date, Value::Date(0)), "1970-01-01");
        assert_eq!(text(Kind::Date, Value::Date(-1)), "1969-12-31");
        assert_eq!(text(Kind::Date, Value::Date(19_782)), "2024-02-29");
        assert_eq!(
            text(Kind::Timestamp, Value::Timestamp(1_735_689_600_000_001)),
            "2025-01-01 00:00:00.000001"
        );
    }
}
