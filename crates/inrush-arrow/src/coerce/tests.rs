use super::*;
use arrow_array::builder::{ListBuilder, StringBuilder};
use arrow_array::types::*;
use arrow_array::*;
use arrow_schema::{Field, Fields};
use std::sync::Arc;

/// A target column with the binary type PostgreSQL's encoder writes it in.
#[derive(Clone)]
struct Col {
    column: TargetColumn,
    value_type: ValueType,
    typmod: i32,
}

fn column(value_type: ValueType, typmod: i32, type_sql: &str) -> Col {
    let column = TargetColumn {
        name: "c".into(),
        type_sql: type_sql.into(),
        sql_type: inrush_core::SqlType::Text,
        not_null: false,
    };
    Col {
        column,
        value_type,
        typmod,
    }
}

fn scalar(s: ScalarType, typmod: i32, type_sql: &str) -> Col {
    column(ValueType::Scalar { scalar: s }, typmod, type_sql)
}

fn array_of(elem: ScalarType, type_sql: &str) -> Col {
    column(
        ValueType::Array {
            elem,
            elem_oid: elem.oid(),
        },
        -1,
        type_sql,
    )
}

impl Col {
    fn coercion(&self, field: &Field) -> Result<Coercion> {
        Coercion::new(field, &self.column, &self.value_type, self.typmod)
    }
}

fn coercion(array: &dyn Array, target: &Col) -> Coercion {
    let field = Field::new("c", array.data_type().clone(), true);
    match target.coercion(&field) {
        Ok(c) => c,
        Err(e) => panic!("{e}"),
    }
}

fn encode(c: &Coercion, array: &dyn Array, row: usize) -> Result<Vec<u8>, EncodeError> {
    let mut out = Vec::new();
    c.prepare(array)
        .encode(row, &EncodeContext::default(), &mut out)
        .map(|_| out)
}

fn text(c: &Coercion, array: &dyn Array, row: usize) -> String {
    let mut s = String::new();
    c.prepare(array).text(row, &mut s);
    s
}

/// What `encode_value` makes of the value's text form: the reference every path must match.
fn reference(c: &Coercion, array: &dyn Array, row: usize) -> Result<Vec<u8>, EncodeError> {
    let mut out = Vec::new();
    let t = text(c, array, row);
    encode_value(
        &c.value_type,
        c.typmod,
        &t,
        &EncodeContext::default(),
        &mut out,
    )
    .map(|_| out)
}

/// Every non-null row: where the reference decides (Ok or Refused), the coercion decides the
/// same. Returns how many rows the reference decided.
fn assert_equivalent(array: &dyn Array, target: &Col) -> usize {
    let c = coercion(array, target);
    let mut decided = 0;
    for row in 0..array.len() {
        if c.prepare(array).is_null(row) {
            continue;
        }
        let want = reference(&c, array, row);
        if want == Err(EncodeError::Deferred) {
            continue;
        }
        decided += 1;
        // The prepared text (with its shortcut for strings) is the rendered text form.
        let mut rendered = String::new();
        c.write_text(array, row, &mut rendered);
        assert_eq!(text(&c, array, row), rendered);
        assert_eq!(
            encode(&c, array, row),
            want,
            "row {row}, text {:?}, {:?} into {}",
            text(&c, array, row),
            array.data_type(),
            target.column.type_sql
        );
    }
    decided
}

fn refused(msg: &str) -> Result<Vec<u8>, EncodeError> {
    Err(EncodeError::Refused(msg.into()))
}

/// xorshift, so generated cases are the same on every run.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn int_targets() -> [Col; 3] {
    [
        scalar(ScalarType::Int2, -1, "smallint"),
        scalar(ScalarType::Int4, -1, "integer"),
        scalar(ScalarType::Int8, -1, "bigint"),
    ]
}

#[test]
fn integer_bounds_of_every_width_into_every_integer_type() {
    let arrays: Vec<ArrayRef> = vec![
        Arc::new(Int8Array::from(vec![i8::MIN, -1, 0, i8::MAX])),
        Arc::new(Int16Array::from(vec![i16::MIN, i16::MAX])),
        Arc::new(Int32Array::from(vec![i32::MIN, -32769, 32768, i32::MAX])),
        Arc::new(Int64Array::from(vec![
            i64::MIN,
            -2147483649,
            2147483648,
            i64::MAX,
        ])),
        Arc::new(UInt8Array::from(vec![0, u8::MAX])),
        Arc::new(UInt16Array::from(vec![0, u16::MAX])),
        Arc::new(UInt32Array::from(vec![0, u32::MAX])),
        Arc::new(UInt64Array::from(vec![0, i64::MAX as u64, u64::MAX])),
    ];
    for a in &arrays {
        for t in &int_targets() {
            assert_eq!(assert_equivalent(a.as_ref(), t), a.len());
        }
    }
    let c = coercion(arrays[7].as_ref(), &int_targets()[2]);
    assert_eq!(
        encode(&c, arrays[7].as_ref(), 2),
        refused("value \"18446744073709551615\" is out of range for type bigint")
    );
    let a = Int64Array::from(vec![3_000_000_000]);
    let c = coercion(&a, &int_targets()[1]);
    assert_eq!(
        encode(&c, &a, 0),
        refused("value \"3000000000\" is out of range for type integer")
    );
    let a = Int32Array::from(vec![-32769]);
    let c = coercion(&a, &int_targets()[0]);
    assert_eq!(
        encode(&c, &a, 0),
        refused("value \"-32769\" is out of range for type smallint")
    );
    assert_eq!(
        encode(&c, &Int32Array::from(vec![-2]), 0).unwrap(),
        [0xff, 0xfe]
    );
}

#[test]
fn generated_integers_match_the_text_path() {
    let mut rng = Rng(7);
    let v: Vec<i64> = (0..2000)
        .map(|i| {
            let x = rng.next() as i64;
            // Mix small, medium and full-width values.
            match i % 4 {
                0 => x % 40_000,
                1 => x % 5_000_000_000,
                _ => x,
            }
        })
        .collect();
    let a = Int64Array::from(v.clone());
    let u = UInt64Array::from(v.iter().map(|&x| x as u64).collect::<Vec<_>>());
    for t in &int_targets() {
        assert_eq!(assert_equivalent(&a, t), a.len());
        assert_eq!(assert_equivalent(&u, t), u.len());
    }
    let n = scalar(ScalarType::Numeric, -1, "numeric");
    assert_eq!(assert_equivalent(&a, &n), a.len());
}

#[test]
fn decimals_into_numeric_with_other_scales() {
    let a = Decimal128Array::from(vec![-1230, 5, 123_456_789, 99_999, -5])
        .with_precision_and_scale(10, 3)
        .unwrap();
    let plain = scalar(ScalarType::Numeric, -1, "numeric");
    let c = coercion(&a, &plain);
    assert_eq!(text(&c, &a, 0), "-1.230");
    assert_eq!(text(&c, &a, 1), "0.005");
    assert_eq!(assert_equivalent(&a, &plain), 5);
    // numeric(8,2): rounds half away from zero, 0.005 -> 0.01, -0.005 -> -0.01.
    let typmod = ((8 << 16) | 2) + 4;
    let n82 = scalar(ScalarType::Numeric, typmod, "numeric(8,2)");
    let c = coercion(&a, &n82);
    assert_eq!(encode(&c, &a, 1), reference(&c, &a, 1));
    let mut direct = Vec::new();
    encode_value(
        &n82.value_type,
        typmod,
        "0.01",
        &EncodeContext::default(),
        &mut direct,
    )
    .unwrap();
    assert_eq!(encode(&c, &a, 1).unwrap(), direct);
    // numeric(4,2) cannot hold 123456.789: the server words that overflow (with a detail).
    let n42 = scalar(ScalarType::Numeric, ((4 << 16) | 2) + 4, "numeric(4,2)");
    let c = coercion(&a, &n42);
    assert!(encode(&c, &a, 2).is_err());
    // Negative Arrow scales are whole numbers with zeros appended.
    let b = Decimal128Array::from(vec![12])
        .with_precision_and_scale(5, -3)
        .unwrap();
    let c = coercion(&b, &plain);
    assert_eq!(text(&c, &b, 0), "12000");
    // Into integers: whole values fit, fractions are refused by int4in's syntax check.
    let d = Decimal128Array::from(vec![1200, 1230])
        .with_precision_and_scale(6, 2)
        .unwrap();
    let c = coercion(&d, &int_targets()[1]);
    assert!(matches!(encode(&c, &d, 1), Err(EncodeError::Refused(_))));
    let e = Decimal256Array::from(vec![arrow_buffer::i256::from_i128(-7)])
        .with_precision_and_scale(40, 1)
        .unwrap();
    let c = coercion(&e, &plain);
    assert_eq!(text(&c, &e, 0), "-0.7");
    assert_eq!(assert_equivalent(&e, &plain), 1);
}

#[test]
fn strings_with_length_checks_and_dictionaries() {
    let vc5 = scalar(ScalarType::Varchar, 5 + 4, "character varying(5)");
    let a = StringArray::from(vec![
        Some("ééééé"),
        Some("éééééé"),
        None,
        Some("abc  "),
        Some("abcde  "),
    ]);
    let c = coercion(&a, &vc5);
    assert_eq!(encode(&c, &a, 0).unwrap(), "ééééé".as_bytes());
    assert_eq!(
        encode(&c, &a, 1),
        refused("value too long for type character varying(5)")
    );
    assert!(c.prepare(&a).is_null(2));
    assert_eq!(encode(&c, &a, 4).unwrap(), b"abcde");
    assert_eq!(assert_equivalent(&a, &vc5), 4);
    let large = LargeStringArray::from(vec!["x", "toolong"]);
    assert_eq!(assert_equivalent(&large, &vc5), 2);
    let view = StringViewArray::from(vec!["a string longer than twelve bytes", "ab"]);
    let t = scalar(ScalarType::Text, -1, "text");
    assert_eq!(assert_equivalent(&view, &t), 2);

    let dict: DictionaryArray<Int32Type> = vec![Some("x"), None, Some("toolong"), Some("x")]
        .into_iter()
        .collect();
    let c = coercion(&dict, &vc5);
    assert_eq!(encode(&c, &dict, 3).unwrap(), b"x");
    assert!(c.prepare(&dict).is_null(1));
    assert_eq!(
        encode(&c, &dict, 2),
        refused("value too long for type character varying(5)")
    );
    assert_eq!(text(&c, &dict, 2), "toolong");
    // A null in the dictionary's values, not its keys, is null too.
    let keys = Int8Array::from(vec![0, 1]);
    let values: ArrayRef = Arc::new(StringArray::from(vec![Some("a"), None]));
    let d = DictionaryArray::new(keys, values);
    assert!(!c.prepare(&d).is_null(0));
    assert!(c.prepare(&d).is_null(1));
    // Strings go into any type through its input function, as CSV fields do.
    let n = StringArray::from(vec!["42", "x"]);
    let c = coercion(&n, &int_targets()[1]);
    assert_eq!(encode(&c, &n, 0).unwrap(), 42i32.to_be_bytes());
    assert_eq!(
        encode(&c, &n, 1),
        refused("invalid input syntax for type integer: \"x\"")
    );
}

#[test]
fn floats() {
    let f8 = scalar(ScalarType::Float8, -1, "double precision");
    let f4 = scalar(ScalarType::Float4, -1, "real");
    let num = scalar(ScalarType::Numeric, -1, "numeric");
    let mut rng = Rng(11);
    let mut v: Vec<f64> = (0..2000)
        .map(|_| f64::from_bits(rng.next()))
        .filter(|x| x.is_finite())
        .collect();
    v.extend([
        0.0,
        -0.0,
        0.1,
        1e15,
        1e-5,
        5e-324,
        f64::MAX,
        f64::INFINITY,
        f64::NEG_INFINITY,
    ]);
    let a = Float64Array::from(v.clone());
    assert!(assert_equivalent(&a, &f8) > 1000);
    assert!(assert_equivalent(&a, &f4) > 100);
    assert!(assert_equivalent(&a, &num) > 100);
    let s = Float32Array::from(v.iter().map(|&x| x as f32).collect::<Vec<_>>());
    assert!(assert_equivalent(&s, &f4) > 1000);
    assert!(assert_equivalent(&s, &f8) > 1000);
    // Any NaN is stored as the server's own NaN.
    let nan = Float64Array::from(vec![f64::from_bits(0xfff8_0000_0000_0001)]);
    let c = coercion(&nan, &f8);
    assert_eq!(
        encode(&c, &nan, 0).unwrap(),
        0x7ff8_0000_0000_0000u64.to_be_bytes()
    );
    assert_eq!(text(&c, &nan, 0), "NaN");
    let c = coercion(&s, &num);
    assert_eq!(text(&c, &Float32Array::from(vec![0.1f32]), 0), "0.1");
    // Halfway between two shortest spellings, float8out rounds to the even one:
    // '-822949374346612.25'::float8::text is -822949374346612.2, and so is the numeric.
    // (-822949374346612.25 as a sum: clippy would have the literal shortened.)
    let tie = Float64Array::from(vec![-(822_949_374_346_612.0 + 0.25), 0.125, 1e-5, 1.5e300]);
    let c = coercion(&tie, &num);
    assert_eq!(text(&c, &tie, 0), "-822949374346612.2");
    assert_eq!(text(&c, &tie, 1), "0.125");
    assert_eq!(text(&c, &tie, 2), "1e-05");
    assert_eq!(text(&c, &tie, 3), "1.5e+300");
}

#[test]
fn dates_before_1970_and_before_year_1() {
    let date = scalar(ScalarType::Date, -1, "date");
    // 1969-12-31, 0001-01-01, 1 BC (year 0), 9999-12-31, 10000-01-01.
    let a = Date32Array::from(vec![-1, -719_162, -719_163, 2_932_896, 2_932_897]);
    let c = coercion(&a, &date);
    assert_eq!(text(&c, &a, 0), "1969-12-31");
    assert_eq!(text(&c, &a, 1), "0001-01-01");
    assert_eq!(text(&c, &a, 2), "0001-12-31 BC");
    assert_eq!(text(&c, &a, 3), "9999-12-31");
    assert_eq!(text(&c, &a, 4), "10000-01-01");
    assert_eq!(encode(&c, &a, 0).unwrap(), (-10_958i32).to_be_bytes());
    assert_eq!(encode(&c, &a, 2), Err(EncodeError::Deferred));
    assert_eq!(encode(&c, &a, 4), Err(EncodeError::Deferred));
    assert_eq!(assert_equivalent(&a, &date), 3);
    let mut rng = Rng(3);
    let g = Date32Array::from(
        (0..2000)
            .map(|_| (rng.next() % 3_700_000) as i32 - 750_000)
            .collect::<Vec<_>>(),
    );
    assert!(assert_equivalent(&g, &date) > 1500);
    // Dates into timestamps and text.
    let ts = scalar(ScalarType::Timestamp, -1, "timestamp without time zone");
    assert_eq!(assert_equivalent(&a, &ts), 3);
    let t = scalar(ScalarType::Text, -1, "text");
    let c = coercion(&a, &t);
    assert_eq!(encode(&c, &a, 2).unwrap(), b"0001-12-31 BC");
}

#[test]
fn timestamps_of_every_unit() {
    let ts = |typmod| scalar(ScalarType::Timestamp, typmod, "timestamp");
    let tstz = |typmod| scalar(ScalarType::Timestamptz, typmod, "timestamptz");
    let a = TimestampNanosecondArray::from(vec![
        0,
        -1,
        1_700_000_000_123_456_789,
        -1_000_000_000_000_000_500,
    ]);
    let c = coercion(&a, &ts(-1));
    assert_eq!(text(&c, &a, 1), "1969-12-31 23:59:59.999999999");
    // .999999999 rounds up to the next second, as the server reads 9 digits.
    assert_eq!(
        encode(&c, &a, 1).unwrap(),
        (-10_957i64 * 86_400_000_000).to_be_bytes()
    );
    assert_eq!(
        encode(&c, &a, 2).unwrap(),
        ((1_700_000_000_123_457i64) - 946_684_800_000_000).to_be_bytes()
    );
    let z = a.clone().with_timezone("+02:00");
    let c = coercion(&z, &tstz(-1));
    // Shown in UTC whatever the zone: Arrow stores the instant.
    assert_eq!(text(&c, &z, 0), "1970-01-01 00:00:00+00");
    assert_eq!(encode(&c, &z, 2), encode(&coercion(&a, &ts(-1)), &a, 2));

    let mut rng = Rng(99);
    // Years 1..9999 in seconds since 1970: -62135596800 .. 253402300800.
    let secs: Vec<i64> = (0..1500)
        .map(|_| (rng.next() % 315_537_897_600) as i64 - 62_135_596_800)
        .collect();
    let micros: Vec<i64> = secs
        .iter()
        .map(|s| s * 1_000_000 + (rng.next() % 1_000_000) as i64)
        .collect();
    let millis: Vec<i64> = secs
        .iter()
        .map(|s| s * 1000 + (rng.next() % 1000) as i64)
        .collect();
    let nanos: Vec<i64> = (0..1500)
        .map(|_| (rng.next() as i64) / 1000 * 1000)
        .collect();
    let arrays: Vec<ArrayRef> = vec![
        Arc::new(TimestampSecondArray::from(secs.clone())),
        Arc::new(TimestampMillisecondArray::from(millis.clone())),
        Arc::new(TimestampMicrosecondArray::from(micros.clone())),
        Arc::new(TimestampNanosecondArray::from(nanos.clone())),
        Arc::new(TimestampMicrosecondArray::from(micros).with_timezone("UTC")),
        Arc::new(TimestampNanosecondArray::from(nanos).with_timezone("Europe/Paris")),
    ];
    for a in &arrays {
        for typmod in [-1, 0, 3, 6] {
            assert_eq!(assert_equivalent(a.as_ref(), &ts(typmod)), a.len());
            assert_eq!(assert_equivalent(a.as_ref(), &tstz(typmod)), a.len());
        }
    }
    // Before year 1 the server decides.
    let bc = TimestampSecondArray::from(vec![-62_135_596_801]);
    let c = coercion(&bc, &ts(-1));
    assert_eq!(text(&c, &bc, 0), "0001-12-31 23:59:59 BC");
    assert_eq!(encode(&c, &bc, 0), Err(EncodeError::Deferred));
    // A local timestamp into timestamptz is only exact in a UTC session.
    let local = TimestampSecondArray::from(vec![0]);
    let c = coercion(&local, &tstz(-1));
    let ctx = EncodeContext {
        session_time_zone_is_utc: false,
        ..EncodeContext::default()
    };
    assert_eq!(
        c.prepare(&local).encode(0, &ctx, &mut Vec::new()),
        Err(EncodeError::Deferred)
    );
}

#[test]
fn nanoseconds_round_as_the_server_reads_nine_digits() {
    let a = TimestampNanosecondArray::from(vec![1500, 2500, 123_456_500, 499, 501]);
    let c = coercion(&a, &scalar(ScalarType::Timestamp, -1, "timestamp"));
    let base = -946_684_800_000_000i64;
    for (row, micros) in [(0, 2), (1, 2), (2, 123_456), (3, 0), (4, 1)] {
        assert_eq!(
            encode(&c, &a, row).unwrap(),
            (base + micros).to_be_bytes(),
            "{}",
            text(&c, &a, row)
        );
    }
}

#[test]
fn times() {
    let time = |typmod| scalar(ScalarType::Time, typmod, "time");
    let us = Time64MicrosecondArray::from(vec![0, 45_296_000_100, 86_399_999_999]);
    let c = coercion(&us, &time(-1));
    assert_eq!(text(&c, &us, 1), "12:34:56.0001");
    for typmod in [-1, 0, 2, 6] {
        assert_eq!(assert_equivalent(&us, &time(typmod)), 3);
    }
    let s = Time32SecondArray::from(vec![0, 86_399]);
    assert_eq!(assert_equivalent(&s, &time(-1)), 2);
    let ms = Time32MillisecondArray::from(vec![1, 86_399_999]);
    assert_eq!(assert_equivalent(&ms, &time(1)), 2);
    let ns = Time64NanosecondArray::from(vec![86_399_999_999_999, 1_000, -1]);
    let c = coercion(&ns, &time(-1));
    assert_eq!(text(&c, &ns, 0), "23:59:59.999999999");
    assert_eq!(encode(&c, &ns, 0).unwrap(), 86_400_000_000i64.to_be_bytes());
    // A nanosecond before midnight is no time of day: the server refuses its text, where
    // rounding it to microseconds would have made it 00:00:00.
    assert_eq!(text(&c, &ns, 2), "-00:00:00.000000001");
    assert_eq!(encode(&c, &ns, 2), Err(EncodeError::Deferred));
    assert_eq!(assert_equivalent(&ns, &time(-1)), 1);
}

#[test]
fn booleans_binary_and_uuids() {
    let b = BooleanArray::from(vec![true, false]);
    let bool_t = scalar(ScalarType::Bool, -1, "boolean");
    assert_eq!(assert_equivalent(&b, &bool_t), 2);
    assert_eq!(encode(&coercion(&b, &bool_t), &b, 0).unwrap(), [1]);

    let bytea = scalar(ScalarType::Bytea, -1, "bytea");
    let bin = BinaryArray::from(vec![&b"\x00\xffab"[..], b""]);
    let c = coercion(&bin, &bytea);
    assert_eq!(text(&c, &bin, 0), "\\x00ff6162");
    assert_eq!(assert_equivalent(&bin, &bytea), 2);
    let large = LargeBinaryArray::from(vec![&b"\\x"[..]]);
    assert_eq!(assert_equivalent(&large, &bytea), 1);

    let raw = [
        0x12u8, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0, 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd,
        0xef,
    ];
    let u = FixedSizeBinaryArray::try_from_iter(vec![raw.to_vec()].into_iter()).unwrap();
    let uuid = scalar(ScalarType::Uuid, -1, "uuid");
    let c = coercion(&u, &uuid);
    assert_eq!(text(&c, &u, 0), "12345678-9abc-def0-0123-456789abcdef");
    assert_eq!(encode(&c, &u, 0).unwrap(), raw);
    assert_eq!(assert_equivalent(&u, &uuid), 1);
    assert_eq!(assert_equivalent(&u, &bytea), 1);
}

#[test]
fn lists_into_arrays() {
    let ints = ListArray::from_iter_primitive::<Int32Type, _, _>(vec![
        Some(vec![Some(1), Some(2), None]),
        Some(vec![]),
        None,
        Some(vec![Some(-7)]),
    ]);
    let int4s = array_of(ScalarType::Int4, "integer[]");
    let c = coercion(&ints, &int4s);
    assert_eq!(text(&c, &ints, 0), "{1,2,NULL}");
    assert_eq!(text(&c, &ints, 1), "{}");
    assert!(c.prepare(&ints).is_null(2));
    assert_eq!(assert_equivalent(&ints, &int4s), 3);
    // int8 elements into int2[]: each element is range-checked.
    let big = ListArray::from_iter_primitive::<Int64Type, _, _>(vec![Some(vec![Some(70_000)])]);
    let c = coercion(&big, &array_of(ScalarType::Int2, "smallint[]"));
    assert_eq!(
        encode(&c, &big, 0),
        refused("value \"70000\" is out of range for type smallint")
    );

    let mut sb = ListBuilder::new(StringBuilder::new());
    sb.values().append_value("a b");
    sb.values().append_value("x\"y");
    sb.values().append_null();
    sb.values().append_value("NULL");
    sb.values().append_value("");
    sb.append(true);
    let strs = sb.finish();
    let texts = array_of(ScalarType::Text, "text[]");
    let c = coercion(&strs, &texts);
    assert_eq!(text(&c, &strs, 0), r#"{"a b","x\"y",NULL,"NULL",""}"#);
    // Whatever encode_value makes of the literal, it is the same answer.
    assert_eq!(encode(&c, &strs, 0), reference(&c, &strs, 0));

    // Nested lists are further dimensions: the text is a 2-D literal the server reads (a 1-D
    // encoder defers it; a ragged one the server refuses with its own words).
    let inner = ListArray::from_iter_primitive::<Int32Type, _, _>(vec![
        Some(vec![Some(1), Some(2)]),
        Some(vec![Some(3), Some(4)]),
    ]);
    let nested = ListArray::new(
        Arc::new(Field::new_list_field(inner.data_type().clone(), true)),
        arrow_buffer::OffsetBuffer::from_lengths([2]),
        Arc::new(inner),
        None,
    );
    let c = coercion(&nested, &int4s);
    assert_eq!(text(&c, &nested, 0), "{{1,2},{3,4}}");
    assert!(matches!(
        encode(&c, &nested, 0),
        Err(EncodeError::Deferred) | Ok(_)
    ));
    // A list into a scalar column is refused up front.
    let field = Field::new("c", ints.data_type().clone(), true);
    let e = int_targets()[1].coercion(&field).unwrap_err().to_string();
    assert!(e.contains("column \"c\"") && e.contains("integer"), "{e}");
}

#[test]
fn structs_maps_and_lists_into_json() {
    let jsonb = scalar(ScalarType::Jsonb, -1, "jsonb");
    let json = scalar(ScalarType::Json, -1, "json");
    let s = StructArray::from(vec![
        (
            Arc::new(Field::new("a", DataType::Int32, true)),
            Arc::new(Int32Array::from(vec![Some(1), None])) as ArrayRef,
        ),
        (
            Arc::new(Field::new("b", DataType::Utf8, true)),
            Arc::new(StringArray::from(vec!["x\"y", "é"])) as ArrayRef,
        ),
        (
            Arc::new(Field::new("f", DataType::Float64, true)),
            Arc::new(Float64Array::from(vec![1.5, f64::NAN])) as ArrayRef,
        ),
    ]);
    let c = coercion(&s, &jsonb);
    assert_eq!(text(&c, &s, 0), r#"{"a":1,"b":"x\"y","f":1.5}"#);
    assert_eq!(text(&c, &s, 1), r#"{"a":null,"b":"é","f":"NaN"}"#);
    assert_eq!(assert_equivalent(&s, &jsonb), 2);
    assert_eq!(assert_equivalent(&s, &json), 2);

    let l = ListArray::from_iter_primitive::<Int32Type, _, _>(vec![Some(vec![Some(1), None])]);
    let c = coercion(&l, &jsonb);
    assert_eq!(text(&c, &l, 0), "[1,null]");

    // A string column into json is the document itself, not a JSON string.
    let docs = StringArray::from(vec![r#"{"k": [1, 2]}"#, "not json"]);
    let c = coercion(&docs, &jsonb);
    assert_eq!(encode(&c, &docs, 0), reference(&c, &docs, 0));
    assert!(encode(&c, &docs, 0).is_ok());
    let d = Date32Array::from(vec![0]);
    assert_eq!(text(&coercion(&d, &json), &d, 0), "\"1970-01-01\"");

    // Struct into int: refused before any row is read.
    let field = Field::new("s", s.data_type().clone(), true);
    let e = int_targets()[1].coercion(&field).unwrap_err();
    assert!(matches!(e, Error::Incompatible { .. }), "{e}");
    let _ = Fields::empty();
}

#[test]
fn incompatible_pairs_name_the_column_and_both_types() {
    let date = scalar(ScalarType::Date, -1, "date");
    let field = Field::new("flag", DataType::Boolean, true);
    let mut target = date.clone();
    target.column.name = "shipdate".into();
    let e = target.coercion(&field).unwrap_err().to_string();
    assert_eq!(
        e,
        "column \"shipdate\": cannot load Arrow Boolean into date"
    );
    for (dt, t) in [
        (DataType::Boolean, ScalarType::Int4),
        (DataType::Int32, ScalarType::Bool),
        (DataType::Int32, ScalarType::Date),
        (DataType::FixedSizeBinary(16), ScalarType::Int4),
        (DataType::FixedSizeBinary(8), ScalarType::Uuid),
        (DataType::Date32, ScalarType::Time),
        (DataType::Float16, ScalarType::Float4),
    ] {
        let field = Field::new("c", dt.clone(), true);
        assert!(
            scalar(t, -1, "t").coercion(&field).is_err(),
            "{dt} into {t:?}"
        );
    }
    // Unsupported targets take anything renderable, and always ask the server.
    let a = Int32Array::from(vec![5]);
    let c = coercion(&a, &column(ValueType::Unsupported, -1, "point"));
    assert_eq!(encode(&c, &a, 0), Err(EncodeError::Deferred));
    assert_eq!(text(&c, &a, 0), "5");
}

#[test]
fn scalars_into_text_use_their_text_form() {
    let t = scalar(ScalarType::Text, -1, "text");
    let vc3 = scalar(ScalarType::Varchar, 3 + 4, "character varying(3)");
    let a = Int64Array::from(vec![12, 1234]);
    assert_eq!(encode(&coercion(&a, &t), &a, 1).unwrap(), b"1234");
    assert_eq!(
        encode(&coercion(&a, &vc3), &a, 1),
        refused("value too long for type character varying(3)")
    );
    let b = BooleanArray::from(vec![true]);
    assert_eq!(encode(&coercion(&b, &t), &b, 0).unwrap(), b"true");
    let ts = TimestampMicrosecondArray::from(vec![1]).with_timezone("UTC");
    assert_eq!(
        encode(&coercion(&ts, &t), &ts, 0).unwrap(),
        b"1970-01-01 00:00:00.000001+00"
    );
}

#[test]
fn generated_decimals_and_integers_into_numeric_typmods() {
    let tm = |p: i32, s: i32| ((p << 16) | s) + 4;
    let targets = [
        scalar(ScalarType::Numeric, -1, "numeric"),
        scalar(ScalarType::Numeric, tm(15, 2), "numeric(15,2)"),
        scalar(ScalarType::Numeric, tm(12, 4), "numeric(12,4)"),
        scalar(ScalarType::Numeric, tm(5, 2), "numeric(5,2)"),
        scalar(ScalarType::Numeric, tm(10, 1), "numeric(10,1)"),
        scalar(ScalarType::Numeric, tm(38, 0), "numeric(38,0)"),
        scalar(ScalarType::Numeric, tm(1000, 1000), "numeric(1000,1000)"),
        scalar(ScalarType::Numeric, tm(4, 4), "numeric(4,4)"),
    ];
    let mut rng = Rng(5);
    let mut values: Vec<i128> = (0..600)
        .map(|i| {
            let x = rng.next() as i64 as i128;
            match i % 5 {
                0 => x % 100,
                1 => x % 10_000_000,
                2 => x,
                3 => x * (rng.next() as i128),
                _ => (x % 1000) * 10_000,
            }
        })
        .collect();
    values.extend([
        0,
        1,
        -1,
        9999,
        10_000,
        -10_000,
        99_999_999,
        i128::MAX,
        i128::MIN + 1,
    ]);
    for (precision, scale) in [(38u8, 2i8), (38, 0), (38, 7), (38, 38), (20, 3)] {
        let a = Decimal128Array::from(values.clone())
            .with_precision_and_scale(precision, scale)
            .unwrap();
        for t in &targets {
            // Only overflowing values are left to the server (its message has a detail).
            let decided = assert_equivalent(&a, t);
            assert!(
                decided >= 3,
                "{decided} for {scale} into {}",
                t.column.type_sql
            );
            if t.typmod == -1 {
                assert_eq!(decided, a.len());
            }
        }
    }
    let small: Vec<i64> = values.iter().map(|&v| v as i64).collect();
    let d64 = Decimal64Array::from(small.clone())
        .with_precision_and_scale(18, 4)
        .unwrap();
    let d32 = Decimal32Array::from(small.iter().map(|&v| v as i32).collect::<Vec<_>>())
        .with_precision_and_scale(9, 3)
        .unwrap();
    let ints = Int64Array::from(small);
    for t in &targets {
        assert!(assert_equivalent(&d64, t) >= 3);
        assert!(assert_equivalent(&d32, t) >= 3);
        assert!(assert_equivalent(&ints, t) >= 3);
    }
    assert_eq!(assert_equivalent(&ints, &targets[0]), ints.len());
    // TPC-H's money columns: decimal(15,2) into numeric(15,2), zero keeps its scale.
    let a = Decimal128Array::from(vec![0, 9_071_700])
        .with_precision_and_scale(15, 2)
        .unwrap();
    let c = coercion(&a, &targets[1]);
    assert_eq!(
        c.path,
        Path::Numeric {
            scale: 2,
            dscale: 2,
            limit: Some(10u128.pow(15))
        }
    );
    assert_eq!(encode(&c, &a, 0).unwrap(), [0, 0, 0, 0, 0, 0, 0, 2]);
    assert_eq!(
        encode(&c, &a, 1).unwrap(),
        [0, 2, 0, 1, 0, 0, 0, 2, 0, 9, 0x02, 0xcd] // 9 0717 ., weight 1
    );
}

/// Each direct path against the text path it replaces, on 1M values. Run optimised without a
/// release build: `CARGO_PROFILE_DEV_OPT_LEVEL=2 cargo test -p inrush-arrow bench -- --ignored
/// --nocapture`.
#[test]
#[ignore]
fn bench_direct_paths_against_the_text_path() {
    let n = 1_000_000;
    let mut rng = Rng(1);
    let cases: Vec<(&str, ArrayRef, Col)> = vec![
        (
            "int64 -> int4",
            Arc::new(Int64Array::from(
                (0..n)
                    .map(|_| (rng.next() % 1_000_000) as i64)
                    .collect::<Vec<_>>(),
            )),
            int_targets()[1].clone(),
        ),
        (
            "decimal(15,2) -> numeric(15,2)",
            Arc::new(
                Decimal128Array::from(
                    (0..n)
                        .map(|_| (rng.next() % 10_000_000) as i128)
                        .collect::<Vec<_>>(),
                )
                .with_precision_and_scale(15, 2)
                .unwrap(),
            ),
            scalar(ScalarType::Numeric, ((15 << 16) | 2) + 4, "numeric(15,2)"),
        ),
        (
            "timestamp(us) -> timestamp",
            Arc::new(TimestampMicrosecondArray::from(
                (0..n)
                    .map(|_| (rng.next() % (1 << 50)) as i64)
                    .collect::<Vec<_>>(),
            )),
            scalar(ScalarType::Timestamp, -1, "timestamp"),
        ),
        (
            "date32 -> date",
            Arc::new(Date32Array::from(
                (0..n)
                    .map(|_| (rng.next() % 20_000) as i32)
                    .collect::<Vec<_>>(),
            )),
            scalar(ScalarType::Date, -1, "date"),
        ),
        (
            "float64 -> float8",
            Arc::new(Float64Array::from(
                (0..n).map(|_| rng.next() as f64 / 7.0).collect::<Vec<_>>(),
            )),
            scalar(ScalarType::Float8, -1, "double precision"),
        ),
        (
            "utf8view (lineitem) -> char(25)",
            Arc::new(StringViewArray::from_iter_values((0..n).map(|_| {
                [
                    "DELIVER IN PERSON",
                    "COLLECT COD",
                    "NONE",
                    "TAKE BACK RETURN",
                ][rng.next() as usize % 4]
            }))),
            scalar(ScalarType::Bpchar, 25 + 4, "character(25)"),
        ),
        (
            "utf8view (comments) -> varchar(44)",
            Arc::new(StringViewArray::from_iter_values((0..n).map(|_| {
                &"furiously regular deposits sleep carefully"[..10 + rng.next() as usize % 33]
            }))),
            scalar(ScalarType::Varchar, 44 + 4, "character varying(44)"),
        ),
    ];
    let ctx = EncodeContext::default();
    for (name, a, t) in cases {
        let c = coercion(a.as_ref(), &t);
        let mut out = Vec::with_capacity(n * 16);
        let start = std::time::Instant::now();
        let prepared = c.prepare(a.as_ref());
        for row in 0..n {
            let _ = prepared.encode(row, &ctx, &mut out);
        }
        let direct = start.elapsed();
        out.clear();
        let start = std::time::Instant::now();
        for row in 0..n {
            let _ = c.encode_text(a.as_ref(), row, &ctx, &mut out);
        }
        let text = start.elapsed();
        println!("{name:32} direct {direct:>10.2?}  text {text:>10.2?}");
    }
}

#[test]
fn whole_floats_into_integers() {
    let a = Float64Array::from(vec![3.0, 3.5, -0.0, 1e20, f64::NAN, 32767.0, 32768.0]);
    let int2 = &int_targets()[0];
    let c = coercion(&a, int2);
    assert_eq!(encode(&c, &a, 0).unwrap(), 3i16.to_be_bytes());
    assert_eq!(
        encode(&c, &a, 1),
        refused("invalid input syntax for type smallint: \"3.5\"")
    );
    // Every digit, so that the integer's input refuses it for its range, not its spelling.
    assert_eq!(text(&c, &a, 3), "100000000000000000000");
    assert_eq!(
        encode(&c, &a, 3),
        refused("value \"100000000000000000000\" is out of range for type smallint")
    );
    assert_eq!(
        encode(&c, &a, 6),
        refused("value \"32768\" is out of range for type smallint")
    );
    for t in &int_targets() {
        assert_eq!(assert_equivalent(&a, t), a.len());
    }
    // Whole values past float8out's fixed-point range load too, every digit kept.
    let big = Float64Array::from(vec![1e15, 9_007_199_254_740_992.0]);
    let int8 = &int_targets()[2];
    let c = coercion(&big, int8);
    assert_eq!(text(&c, &big, 0), "1000000000000000");
    assert_eq!(encode(&c, &big, 1).unwrap(), (1i64 << 53).to_be_bytes());
    let single = Float32Array::from(vec![16_777_216.0]);
    assert_eq!(text(&coercion(&single, int8), &single, 0), "16777216");
}

#[test]
fn other_list_shapes_and_maps() {
    use arrow_array::builder::{Int32Builder, MapBuilder};
    let fixed = FixedSizeListArray::from_iter_primitive::<Int64Type, _, _>(
        vec![
            Some(vec![Some(1), None]),
            None,
            Some(vec![Some(3), Some(4)]),
        ],
        2,
    );
    let int8s = array_of(ScalarType::Int8, "bigint[]");
    let c = coercion(&fixed, &int8s);
    assert_eq!(text(&c, &fixed, 0), "{1,NULL}");
    assert_eq!(text(&c, &fixed.slice(2, 1), 0), "{3,4}");
    assert_eq!(assert_equivalent(&fixed, &int8s), 2);
    let large = LargeListArray::from_iter_primitive::<Int32Type, _, _>(vec![Some(vec![Some(5)])]);
    assert_eq!(assert_equivalent(&large, &int8s), 1);
    // Dates in a list are quoted only when needed, BC ones because of the space.
    let dates = ListArray::from_iter_primitive::<Date32Type, _, _>(vec![Some(vec![
        Some(0),
        Some(-719_163),
    ])]);
    let c = coercion(&dates, &array_of(ScalarType::Date, "date[]"));
    assert_eq!(text(&c, &dates, 0), "{1970-01-01,\"0001-12-31 BC\"}");

    let mut m = MapBuilder::new(None, StringBuilder::new(), Int32Builder::new());
    m.keys().append_value("a");
    m.values().append_value(1);
    m.keys().append_value("b\"");
    m.values().append_null();
    m.append(true).unwrap();
    m.append(false).unwrap();
    let map = m.finish();
    let jsonb = scalar(ScalarType::Jsonb, -1, "jsonb");
    let c = coercion(&map, &jsonb);
    assert_eq!(text(&c, &map, 0), r#"{"a":1,"b\"":null}"#);
    assert!(c.prepare(&map).is_null(1));
    assert_eq!(text(&c, &map, 1), "");
    assert_eq!(assert_equivalent(&map, &jsonb), 1);
    // A list of structs into jsonb[]: each element is a JSON document.
    let s = StructArray::from(vec![(
        Arc::new(Field::new("k", DataType::Int32, true)),
        Arc::new(Int32Array::from(vec![1, 2])) as ArrayRef,
    )]);
    let l = ListArray::new(
        Arc::new(Field::new_list_field(s.data_type().clone(), true)),
        arrow_buffer::OffsetBuffer::from_lengths([2]),
        Arc::new(s),
        None,
    );
    let c = coercion(&l, &array_of(ScalarType::Jsonb, "jsonb[]"));
    assert_eq!(text(&c, &l, 0), r#"{"{\"k\":1}","{\"k\":2}"}"#);
}

#[test]
fn all_null_columns_go_anywhere() {
    let a = NullArray::new(3);
    for t in [
        scalar(ScalarType::Date, -1, "date"),
        array_of(ScalarType::Int4, "integer[]"),
        column(ValueType::Unsupported, -1, "point"),
    ] {
        let c = coercion(&a, &t);
        assert!((0..3).all(|row| c.prepare(&a).is_null(row)));
        assert!(matches!(encode(&c, &a, 0), Err(EncodeError::Refused(_))));
        assert_eq!(text(&c, &a, 0), "");
    }
}

#[test]
fn null_typed_list_elements_are_null() {
    let l = ListArray::new(
        Arc::new(Field::new_list_field(DataType::Null, true)),
        arrow_buffer::OffsetBuffer::from_lengths([2]),
        Arc::new(NullArray::new(2)),
        None,
    );
    let c = coercion(&l, &array_of(ScalarType::Int4, "integer[]"));
    assert_eq!(text(&c, &l, 0), "{NULL,NULL}");
    assert_eq!(
        assert_equivalent(&l, &array_of(ScalarType::Int4, "integer[]")),
        1
    );
}

#[test]
fn unannotated_byte_arrays_are_text_outside_bytea() {
    let a = BinaryArray::from(vec![
        &b"abc"[..],
        b"\xff",
        b"ab\xc3\x28",
        b"42",
        b"\xe2\x82",
    ]);
    let vc = scalar(ScalarType::Varchar, 3 + 4, "character varying(3)");
    let c = coercion(&a, &vc);
    assert_eq!(encode(&c, &a, 0).unwrap(), b"abc");
    assert_eq!(text(&c, &a, 0), "abc");
    assert_eq!(
        encode(&c, &a, 1),
        refused("invalid byte sequence for encoding \"UTF8\": 0xff")
    );
    assert_eq!(
        encode(&c, &a, 2),
        refused("invalid byte sequence for encoding \"UTF8\": 0xc3 0x28")
    );
    assert_eq!(
        encode(&c, &a, 4),
        refused("invalid byte sequence for encoding \"UTF8\": 0xe2 0x82")
    );
    let c = coercion(&a, &int_targets()[1]);
    assert_eq!(encode(&c, &a, 3).unwrap(), 42i32.to_be_bytes());
    // Into bytea they stay bytes.
    let c = coercion(&a, &scalar(ScalarType::Bytea, -1, "bytea"));
    assert_eq!(encode(&c, &a, 1).unwrap(), [0xff]);
    let view = BinaryViewArray::from(vec![&b"x"[..]]);
    let c = coercion(&view, &scalar(ScalarType::Text, -1, "text"));
    assert_eq!(encode(&c, &view, 0).unwrap(), b"x");
}

#[test]
fn durations_and_intervals() {
    let interval = scalar(ScalarType::Interval, -1, "interval");
    let d = DurationMicrosecondArray::from(vec![90_061_500_000, -1, 0]);
    let c = coercion(&d, &interval);
    assert_eq!(text(&c, &d, 0), "25:01:01.5");
    assert_eq!(text(&c, &d, 1), "-00:00:00.000001");
    assert_eq!(assert_equivalent(&d, &interval), 3);
    let m = IntervalMonthDayNanoArray::from(vec![IntervalMonthDayNano::new(14, -3, 1_500_000_000)]);
    let c = coercion(&m, &interval);
    assert_eq!(text(&c, &m, 0), "14 mons -3 days 00:00:01.5");
    assert_eq!(assert_equivalent(&m, &interval), 1);
}

#[test]
fn sliced_arrays_read_their_own_rows_and_nulls() {
    // A slice keeps its parent's buffers with an offset: values and validity follow it.
    let ints = Int64Array::from(vec![Some(1), None, Some(3), Some(4)]);
    let sliced = ints.slice(1, 3);
    let c = coercion(&sliced, &int_targets()[2]);
    let p = c.prepare(&sliced);
    assert!(p.is_null(0));
    assert!(!p.is_null(1));
    assert_eq!(encode(&c, &sliced, 1).unwrap(), 3i64.to_be_bytes());
    assert_eq!(encode(&c, &sliced, 2).unwrap(), 4i64.to_be_bytes());
    let strings = StringArray::from(vec![Some("a"), Some("b"), None, Some("d")]);
    let sliced = strings.slice(1, 3);
    let t = scalar(ScalarType::Text, -1, "text");
    let c = coercion(&sliced, &t);
    assert_eq!(encode(&c, &sliced, 0).unwrap(), b"b");
    assert!(c.prepare(&sliced).is_null(1));
    assert_eq!(text(&c, &sliced, 2), "d");
    let dict: DictionaryArray<UInt16Type> = vec![Some("x"), None, Some("y"), Some("x")]
        .into_iter()
        .collect();
    let sliced = dict.slice(1, 3);
    let c = coercion(&sliced, &t);
    assert!(c.prepare(&sliced).is_null(0));
    assert_eq!(encode(&c, &sliced, 1).unwrap(), b"y");
    assert_eq!(text(&c, &sliced, 2), "x");
}

#[test]
fn native_text_forms_match_the_rendered_ones() {
    // `Prepared::text` writes strings, integers, decimals and dates from their native values;
    // the reference is `render::value_text`, which looks at the array's type for every value.
    let plain = Style::default();
    let t = scalar(ScalarType::Text, -1, "text");
    let dict: DictionaryArray<Int8Type> = DictionaryArray::new(
        Int8Array::from(vec![1, 0, 1]),
        Arc::new(Int32Array::from(vec![-7, i32::MAX])),
    );
    let arrays: Vec<ArrayRef> = vec![
        Arc::new(Int8Array::from(vec![i8::MIN, -1, 0, i8::MAX])),
        Arc::new(Int64Array::from(vec![i64::MIN, -10, 0, i64::MAX])),
        Arc::new(UInt64Array::from(vec![0, 9, u64::MAX])),
        Arc::new(
            Decimal128Array::from(vec![-1230, -5, 0, 7, 123_456, i128::MAX / 10])
                .with_precision_and_scale(38, 2)
                .unwrap(),
        ),
        Arc::new(
            Decimal64Array::from(vec![-1, 100])
                .with_precision_and_scale(18, 0)
                .unwrap(),
        ),
        Arc::new(
            Decimal32Array::from(vec![5, -20])
                .with_precision_and_scale(9, -2)
                .unwrap(),
        ),
        Arc::new(Date32Array::from(vec![
            -719_162, -719_163, 0, 19_723, 2_932_897,
        ])),
        Arc::new(dict),
        Arc::new(StringArray::from(vec!["", "a\tb", "é"])),
        Arc::new(LargeStringArray::from(vec![
            "x",
            "a longer value than twelve",
        ])),
        Arc::new(StringViewArray::from(vec![
            "short",
            "a longer value than twelve",
        ])),
        Arc::new(DictionaryArray::<Int8Type>::new(
            Int8Array::from(vec![1, 0]),
            Arc::new(StringArray::from(vec!["k", "v"])),
        )),
    ];
    for array in &arrays {
        let c = coercion(array.as_ref(), &t);
        for row in 0..array.len() {
            let mut want = String::new();
            render::value_text(array.as_ref(), row, plain, &mut want);
            assert_eq!(
                text(&c, array.as_ref(), row),
                want,
                "{:?}",
                array.data_type()
            );
        }
    }
}

/// Every non-null row of `array`: the encoding `prepare` chose (direct or not, as `direct`
/// says) answers as the general path does, errors included, and as the text path where that
/// decides.
fn assert_direct(array: &dyn Array, target: &Col, direct: bool) {
    let c = coercion(array, target);
    let p = c.prepare(array);
    let what = format!("{:?} into {}", array.data_type(), target.column.type_sql);
    assert_eq!(p.is_direct(), direct, "{what}");
    let ctx = EncodeContext::default();
    for row in 0..array.len() {
        if p.is_null(row) {
            continue;
        }
        let (mut fast, mut general) = (Vec::new(), Vec::new());
        let fast = p.encode(row, &ctx, &mut fast).map(|_| fast);
        let general = p.encode_general(row, &ctx, &mut general).map(|_| general);
        assert_eq!(fast, general, "row {row} of {what}");
    }
    assert_equivalent(array, target);
}

#[test]
fn direct_integers_of_every_width() {
    let arrays: Vec<ArrayRef> = vec![
        Arc::new(Int8Array::from(vec![i8::MIN, -1, 0, i8::MAX])),
        Arc::new(Int16Array::from(vec![i16::MIN, -1, 0, 1, i16::MAX])),
        Arc::new(Int32Array::from(vec![
            i32::MIN,
            -32769,
            -1,
            0,
            32768,
            i32::MAX,
        ])),
        Arc::new(Int64Array::from(vec![
            i64::MIN,
            -2147483649,
            -1,
            0,
            2147483648,
            i64::MAX,
        ])),
        Arc::new(UInt16Array::from(vec![0, u16::MAX])),
        Arc::new(UInt32Array::from(vec![0, u32::MAX])),
        Arc::new(UInt64Array::from(vec![0, u64::MAX])),
    ];
    let own_width = [
        (DataType::Int16, 2),
        (DataType::Int32, 4),
        (DataType::Int64, 8),
    ];
    for a in &arrays {
        for (t, width) in int_targets().iter().zip([2, 4, 8]) {
            let direct = own_width.contains(&(a.data_type().clone(), width));
            assert_direct(a.as_ref(), t, direct);
            // A slice reads its own rows; a null anywhere takes the general path.
            assert_direct(a.slice(1, a.len() - 1).as_ref(), t, direct);
        }
    }
    let with_null = Int64Array::from(vec![Some(1), None, Some(i64::MAX)]);
    assert_direct(&with_null, &int_targets()[2], false);
    assert_direct(&with_null.slice(2, 1), &int_targets()[2], true);
}

#[test]
fn direct_decimals_at_every_scale() {
    let numeric = |p: i32, s: i32, sql: &str| scalar(ScalarType::Numeric, ((p << 16) | s) + 4, sql);
    let plain = scalar(ScalarType::Numeric, -1, "numeric");
    let mut rng = Rng(11);
    for scale in [0i8, 1, 2, 3, 4, 5, 9, 18, 38] {
        let mut values = vec![
            0,
            1,
            -1,
            5,
            -5,
            10_000,
            99_999_999,
            i64::MAX as i128,
            i128::MAX,
        ];
        values.extend([i128::MIN + 1, 10i128.pow(37), -(10i128.pow(38) - 1)]);
        values.extend((0..200).map(|i| rng.next() as i128 % 10i128.pow(i % 30)));
        let a = Decimal128Array::from(values)
            .with_precision_and_scale(38, scale)
            .unwrap();
        assert_direct(&a, &plain, true);
        // The column's scale at least the Arrow scale: direct, beyond the precision by text.
        let s = i32::from(scale);
        assert_direct(&a, &numeric(38, s, "numeric(38,s)"), true);
        assert_direct(&a, &numeric(s + 3, s, "numeric(s+3,s)"), true);
        assert_direct(&a, &numeric(s + 15, s + 2, "numeric(s+15,s+2)"), true);
        // A smaller scale rounds: the text path.
        if scale > 0 {
            assert_direct(&a, &numeric(38, s - 1, "numeric(38,s-1)"), false);
        }
    }
    let lineitem = Decimal128Array::from(vec![0, 1, 100, 10_495_000, -99_999_999_999_999])
        .with_precision_and_scale(15, 2)
        .unwrap();
    assert_direct(&lineitem, &numeric(15, 2, "numeric(15,2)"), true);
    let other = Decimal64Array::from(vec![1, -1])
        .with_precision_and_scale(10, 2)
        .unwrap();
    assert_direct(&other, &plain, false);
}

#[test]
fn direct_dates_at_the_edges() {
    let date = scalar(ScalarType::Date, -1, "date");
    use crate::time::{PG_DAY_END, PG_DAY_MIN, UNIX_TO_PG_DAYS};
    let first = (PG_DAY_MIN + UNIX_TO_PG_DAYS) as i32;
    let end = (PG_DAY_END + UNIX_TO_PG_DAYS) as i32;
    let a = Date32Array::from(vec![
        i32::MIN,
        first - 1,
        first,
        -1,
        0,
        1,
        end - 1,
        end,
        i32::MAX,
    ]);
    assert_direct(&a, &date, true);
    let p = coercion(&a, &date);
    let p = p.prepare(&a);
    let mut out = Vec::new();
    for (row, deferred) in [
        (0, true),
        (1, true),
        (2, false),
        (6, false),
        (7, true),
        (8, true),
    ] {
        let got = p.encode(row, &EncodeContext::default(), &mut out);
        assert_eq!(got == Err(EncodeError::Deferred), deferred, "row {row}");
    }
}

#[test]
fn direct_strings_with_and_without_nul() {
    let targets = [
        scalar(ScalarType::Text, -1, "text"),
        scalar(ScalarType::Varchar, 5 + 4, "character varying(5)"),
        scalar(ScalarType::Bpchar, 3 + 4, "character(3)"),
        scalar(ScalarType::Bpchar, 20 + 4, "character(20)"),
    ];
    let clean = vec![
        "",
        "a",
        "abc  ",
        "ééé",
        "twelve bytes",
        "thirteen byte",
        "a longer string",
    ];
    let mut dirty = clean.clone();
    dirty.extend(["a\0", "\0", "twelve byte\0", "a longer string\0"]);
    for values in [&clean, &dirty] {
        let utf8 = StringArray::from(values.clone());
        let view = StringViewArray::from(values.clone());
        let large = LargeStringArray::from(values.clone());
        for t in &targets {
            assert_direct(&utf8, t, true);
            assert_direct(&view, t, true);
            assert_direct(&large, t, false);
            // Slices without the NUL values.
            assert_direct(&utf8.slice(1, 5), t, true);
            assert_direct(&view.slice(1, 5), t, true);
        }
    }
    // Every length a view holds inline and some it does not, a NUL at every place or none.
    let t = &targets[0];
    let ctx = EncodeContext::default();
    for len in 0..=40 {
        for nul in (0..len).map(Some).chain([None]) {
            let mut s = "x".repeat(len);
            if let Some(at) = nul {
                s.replace_range(at..=at, "\0");
            }
            for array in [
                Arc::new(StringViewArray::from(vec![s.as_str()])) as ArrayRef,
                Arc::new(StringArray::from(vec![s.as_str()])),
            ] {
                let c = coercion(array.as_ref(), t);
                let got = c.prepare(array.as_ref()).encode(0, &ctx, &mut Vec::new());
                let want = if nul.is_some() {
                    Err(EncodeError::Deferred)
                } else {
                    Ok(())
                };
                assert_eq!(got, want, "{s:?} as {:?}", array.data_type());
            }
        }
    }
    // The parquet reader's views point into the page, whose length prefixes hold NULs: only
    // the values' own bytes count.
    let page = b"\x0f\0\0\0thirteen bytes!\x12\0\0\0another long value";
    let view = |len: u128, offset: u128| {
        let prefix = u32::from_le_bytes(page[offset as usize..][..4].try_into().unwrap());
        len | (u128::from(prefix) << 32) | (offset << 96)
    };
    let views = vec![view(15, 4), view(18, 23)];
    let buffers = vec![arrow_buffer::Buffer::from(page.to_vec())];
    let paged = StringViewArray::try_new(views.into(), buffers, None).unwrap();
    assert_eq!(paged.value(1), "another long value");
    assert_direct(&paged, t, true);
    let c = coercion(&paged, t);
    assert_eq!(c.prepare(&paged).encode(0, &ctx, &mut Vec::new()), Ok(()));
    // Dictionaries and nulls take the general path.
    let dict: DictionaryArray<Int32Type> = vec!["x", "a\0", "x"].into_iter().collect();
    assert_direct(&dict, t, false);
    let with_null = StringViewArray::from(vec![Some("a"), None, Some("b\0")]);
    assert_direct(&with_null, t, false);
}
