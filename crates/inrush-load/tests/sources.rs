//! Inputs other than one CSV file: directories and globs of files (compressed or not, line
//! endings mixed), JSON lines, and a query on another server. Each must give the very table
//! the server's own COPY of the same rows gives.

mod support;

use inrush_load::QuerySource;
use inrush_read::csv::CsvOptions;
use inrush_read::generate::Rng;
use std::io::Write;
use support::{fresh_db, write_input};

const COLUMNS: &str =
    "id int, name text, amount numeric(12,2), flag bool, tags text[], doc jsonb, note varchar(20)";

/// One generated row, written both as CSV (as COPY reads it) and as a JSON line.
struct Row {
    id: i64,
    name: Option<String>,
    amount: Option<String>,
    flag: Option<bool>,
    tags: Option<Vec<String>>,
    doc: Option<serde_json::Value>,
    note: Option<String>,
}

fn rows(n: usize, seed: u64) -> Vec<Row> {
    let mut rng = Rng::new(seed);
    let words = [
        "plain",
        "with space",
        "quo\"te",
        "com,ma",
        "new\nline",
        "back\\slash",
        "ünï",
    ];
    let pick = |rng: &mut Rng| words[(rng.next_u64() % words.len() as u64) as usize].to_string();
    (0..n)
        .map(|i| {
            let r = rng.next_u64();
            let tags = (0..r % 4).map(|_| pick(&mut rng)).collect();
            Row {
                id: i as i64,
                name: (!r.is_multiple_of(7)).then(|| pick(&mut rng)),
                amount: (!r.is_multiple_of(5)).then(|| format!("{}.{:02}", r % 100_000, r % 100)),
                flag: (!r.is_multiple_of(3)).then_some(r.is_multiple_of(2)),
                tags: (!r.is_multiple_of(6)).then_some(tags),
                doc: (!r.is_multiple_of(4))
                    .then(|| serde_json::json!({"k": r % 10, "s": pick(&mut rng), "a": [1, null]})),
                note: (!r.is_multiple_of(9)).then(|| format!("n{}", r % 1000)),
            }
        })
        .collect()
}

fn csv_field(out: &mut String, value: Option<&str>) {
    if let Some(v) = value {
        out.push('"');
        out.push_str(&v.replace('"', "\"\""));
        out.push('"');
    }
}

fn pg_array(items: &[String]) -> String {
    let quoted: Vec<String> = items
        .iter()
        .map(|s| format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\"")))
        .collect();
    format!("{{{}}}", quoted.join(","))
}

fn to_csv(rows: &[Row], header: bool, crlf: bool) -> Vec<u8> {
    let eol = if crlf { "\r\n" } else { "\n" };
    let mut out = String::new();
    if header {
        out.push_str("id,name,amount,flag,tags,doc,note");
        out.push_str(eol);
    }
    for row in rows {
        out.push_str(&row.id.to_string());
        for value in [
            row.name.clone(),
            row.amount.clone(),
            row.flag.map(|f| f.to_string()),
            row.tags.as_deref().map(pg_array),
            row.doc.as_ref().map(|d| d.to_string()),
            row.note.clone(),
        ] {
            out.push(',');
            csv_field(&mut out, value.as_deref());
        }
        out.push_str(eol);
    }
    out.into_bytes()
}

fn to_jsonl(rows: &[Row]) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, row) in rows.iter().enumerate() {
        let mut object = serde_json::Map::new();
        object.insert("id".into(), row.id.into());
        // Missing keys and explicit nulls both mean NULL; alternate between them.
        let mut put = |key: &str, value: Option<serde_json::Value>| match value {
            Some(v) => {
                object.insert(key.into(), v);
            }
            None if i % 2 == 0 => {
                object.insert(key.into(), serde_json::Value::Null);
            }
            None => {}
        };
        put("name", row.name.clone().map(Into::into));
        // Numbers as written: "12.30" must stay 12.30, so they go out as raw JSON numbers.
        put(
            "amount",
            row.amount
                .as_ref()
                .map(|a| serde_json::from_str(a).expect("a JSON number")),
        );
        put("flag", row.flag.map(Into::into));
        put("tags", row.tags.clone().map(Into::into));
        put("doc", row.doc.clone());
        put("note", row.note.clone().map(Into::into));
        out.extend_from_slice(serde_json::to_string(&object).expect("json").as_bytes());
        out.push(b'\n');
        if i % 50 == 0 {
            out.push(b'\n'); // blank lines are not rows
        }
    }
    out
}

/// Creates `table` with the test's columns and fills it with `rows` by the server's own COPY.
fn server_table(db: &mut support::TestDb, table: &str, rows: &[Row]) {
    db.exec(&format!("CREATE TABLE {table} ({COLUMNS})"));
    db.server_copy(
        table,
        &to_csv(rows, false, false),
        &CsvOptions::default(),
        None,
    )
    .unwrap();
}

fn small_blocks(opts: &mut inrush_load::LoadOptions) {
    // Many blocks from few rows: every source is cut, and blocks of different sources mix.
    opts.block_size = 2048;
}

#[test]
fn a_directory_of_mixed_files_loads_like_copy_of_each() {
    let mut db = fresh_db();
    db.exec(&format!(
        "CREATE TABLE expected ({COLUMNS}); CREATE TABLE t ({COLUMNS})"
    ));
    let dir = tempfile::tempdir().unwrap();
    let parts = [rows(300, 1), rows(200, 2), rows(250, 3)];
    let csv = CsvOptions {
        header: true,
        ..CsvOptions::default()
    };
    for (i, part) in parts.iter().enumerate() {
        let data = to_csv(part, true, i == 1);
        db.server_copy("expected", &data, &csv, None).unwrap();
        let path = dir.path().join(format!("part-{i}.csv"));
        match i {
            2 => {
                let file = std::fs::File::create(path.with_extension("csv.gz")).unwrap();
                let mut gz = flate2::write::GzEncoder::new(file, flate2::Compression::fast());
                gz.write_all(&data).unwrap();
                gz.finish().unwrap();
            }
            _ => std::fs::write(&path, &data).unwrap(),
        }
    }
    std::fs::write(dir.path().join("README.md"), "not an input").unwrap();

    let mut opts = db.load_options(dir.path(), "t");
    opts.csv = csv.clone();
    small_blocks(&mut opts);
    let summary = db.load(&opts, &inrush_core::Silent).unwrap();
    assert_eq!(summary.rows, 750);
    assert!(summary.input.starts_with("3 files"), "{}", summary.input);
    assert_eq!(db.rows_as_text("t"), db.rows_as_text("expected"));

    // A glob picks the same files; a file whose header differs is refused, naming both.
    db.exec("TRUNCATE t");
    opts.inputs = vec![format!("{}/part-*", dir.path().display())];
    db.load(&opts, &inrush_core::Silent).unwrap();
    assert_eq!(db.rows_as_text("t"), db.rows_as_text("expected"));
    std::fs::write(dir.path().join("part-9.csv"), "id,name\n1,x\n").unwrap();
    db.exec("TRUNCATE t");
    let e = db
        .load(&opts, &inrush_core::Silent)
        .unwrap_err()
        .to_string();
    assert!(e.contains("part-9.csv: the header names id,name"), "{e}");
    assert_eq!(db.count("t"), 0, "a refused load leaves nothing");
}

#[test]
fn json_lines_load_like_copy_of_the_same_rows_as_csv() {
    let mut db = fresh_db();
    db.exec(&format!("CREATE TABLE t ({COLUMNS})"));
    let rows = rows(2000, 7);
    server_table(&mut db, "expected", &rows);
    let (_dir, path) = write_input(&to_jsonl(&rows), "jsonl");
    let mut opts = db.load_options(&path, "t");
    small_blocks(&mut opts);
    let summary = db.load(&opts, &inrush_core::Silent).unwrap();
    assert_eq!(summary.rows, 2000);
    assert_eq!(db.rows_as_text("t"), db.rows_as_text("expected"));
}

#[test]
fn bad_json_lines_go_to_the_reject_file_with_their_line() {
    let mut db = fresh_db();
    db.exec("CREATE TABLE t (id int NOT NULL, note varchar(3))");
    let data = concat!(
        "{\"id\": 1, \"note\": \"ok\"}\n",
        "{\"id\": 2, \"note\": \"too long\"}\n",
        "{\"id\": 3, \"nope\": 1}\n",
        "{\"id\": 4,\n",
        "{\"id\": 99999999999}\n",
        "{\"note\": \"x\"}\n",
        "{\"id\": 7}\n",
    );
    let (dir, path) = write_input(data.as_bytes(), "jsonl");
    let mut opts = db.load_options(&path, "t");
    opts.max_errors = 10;
    let rejects = dir.path().join("bad.jsonl");
    opts.rejects = Some(rejects.clone());
    let summary = db.load(&opts, &inrush_core::Silent).unwrap();
    assert_eq!(summary.rows, 2);
    assert_eq!(summary.rows_rejected, 5);
    assert_eq!(db.rows_as_text("t"), vec!["(1,ok)", "(7,)"]);
    let rejected = std::fs::read_to_string(&rejects).unwrap();
    let lines: Vec<&str> = data.lines().collect();
    assert_eq!(
        rejected.lines().collect::<Vec<_>>(),
        [lines[1], lines[2], lines[3], lines[4], lines[5]]
    );
    let log = std::fs::read_to_string(rejects.with_extension("jsonl.log")).unwrap();
    let log: Vec<serde_json::Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let reasons: Vec<(u64, String)> = log
        .iter()
        .map(|e| {
            (
                e["line"].as_u64().unwrap(),
                e["reason"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        reasons[0],
        (2, "value too long for type character varying(3)".into())
    );
    assert!(
        reasons[1].1.contains("key \"nope\" matches no column"),
        "{:?}",
        reasons[1]
    );
    assert!(
        reasons[2].1.starts_with("invalid JSON line"),
        "{:?}",
        reasons[2]
    );
    assert!(
        reasons[3].1.contains("out of range for type integer"),
        "{:?}",
        reasons[3]
    );
    assert!(
        reasons[4].1.contains("violates not-null constraint"),
        "{:?}",
        reasons[4]
    );
}

#[test]
fn a_query_on_another_server_loads_like_copy_of_its_rows() {
    let mut source = fresh_db();
    let mut db = fresh_db();
    let rows = rows(3000, 11);
    server_table(&mut source, "src", &rows);
    source.exec("UPDATE src SET id = NULL WHERE id % 500 = 3");
    // The target's types differ (bigint id, varchar name): values are read by its rules.
    db.exec(
        "CREATE TABLE t (id bigint, name varchar(30), amount numeric(14,3), flag bool, tags text[], doc json, note text)",
    );
    for split_by in [None, Some("id".to_string())] {
        db.exec("TRUNCATE t");
        let mut opts = db.load_options(std::path::Path::new("unused"), "t");
        opts.connections = 3;
        opts.from_query = Some(QuerySource {
            from: std::sync::Arc::new(source.target.clone()),
            sql: "SELECT * FROM src WHERE name IS DISTINCT FROM 'plain'".into(),
            split_by: split_by.clone(),
        });
        small_blocks(&mut opts);
        let summary = db.load(&opts, &inrush_core::Silent).unwrap();
        let expected = source
            .client
            .query(
                "SELECT t::text FROM (SELECT id::bigint, name::varchar(30), amount::numeric(14,3), flag, tags, doc::json, note FROM src WHERE name IS DISTINCT FROM 'plain') t ORDER BY 1",
                &[],
            )
            .unwrap()
            .iter()
            .map(|r| r.get::<_, String>(0))
            .collect::<Vec<_>>();
        assert_eq!(summary.rows as usize, expected.len());
        assert_eq!(db.rows_as_text("t"), expected, "split by {split_by:?}");
        if split_by.is_some() {
            assert_eq!(summary.input, "query (3 parts)");
        }
        assert!(
            summary.notes.iter().any(|n| n.contains("as CSV")),
            "{:?}",
            summary.notes
        );
    }

    // The very same types: the source's binary tuples go to the target untouched, in parallel.
    db.exec(&format!("CREATE TABLE same ({COLUMNS})"));
    for split_by in [None, Some("id".to_string())] {
        db.exec("TRUNCATE same");
        let mut opts = db.load_options(std::path::Path::new("unused"), "same");
        opts.connections = 3;
        opts.from_query = Some(QuerySource {
            from: std::sync::Arc::new(source.target.clone()),
            sql: "SELECT note, id, name, amount, flag, tags, doc FROM src".into(),
            split_by: split_by.clone(),
        });
        small_blocks(&mut opts);
        let summary = db.load(&opts, &inrush_core::Silent).unwrap();
        assert!(
            summary
                .notes
                .iter()
                .any(|n| n.contains("COPY BINARY tuples")),
            "{:?}",
            summary.notes
        );
        assert_eq!(summary.rows, 3000);
        assert_eq!(
            db.rows_as_text("same"),
            source.rows_as_text("src"),
            "split by {split_by:?}"
        );
    }
    // A row the target refuses is named by its row in the query's stream.
    db.exec("TRUNCATE same; ALTER TABLE same ADD CHECK (id <> 1234)");
    let mut opts = db.load_options(std::path::Path::new("unused"), "same");
    opts.from_query = Some(QuerySource {
        from: std::sync::Arc::new(source.target.clone()),
        sql: "SELECT * FROM src ORDER BY id NULLS FIRST".into(),
        split_by: None,
    });
    small_blocks(&mut opts);
    let row = source.count("src WHERE id IS NULL OR id < 1234") + 1;
    let e = db
        .load(&opts, &inrush_core::Silent)
        .unwrap_err()
        .to_string();
    assert!(e.starts_with(&format!("query, row {row}")), "{e}");
    assert!(e.contains("violates check constraint"), "{e}");
}

/// The rows as a Parquet file in row groups of `group` rows (several parts, several chunks).
fn to_parquet(rows: &[Row], group: usize, path: &std::path::Path) {
    use arrow_array::builder::{ListBuilder, StringBuilder};
    use arrow_array::{
        ArrayRef, BooleanArray, Decimal128Array, Int64Array, RecordBatch, StringArray,
    };
    use std::sync::Arc;
    let mut tags = ListBuilder::new(StringBuilder::new());
    for row in rows {
        match &row.tags {
            Some(items) => {
                for item in items {
                    tags.values().append_value(item);
                }
                tags.append(true);
            }
            None => tags.append(false),
        }
    }
    let amount = Decimal128Array::from(
        rows.iter()
            .map(|r| {
                r.amount
                    .as_ref()
                    .map(|a| a.replace('.', "").parse::<i128>().unwrap())
            })
            .collect::<Vec<_>>(),
    )
    .with_precision_and_scale(12, 2)
    .unwrap();
    let text = |f: &dyn Fn(&Row) -> Option<String>| -> ArrayRef {
        Arc::new(StringArray::from(rows.iter().map(f).collect::<Vec<_>>()))
    };
    let columns: Vec<(&str, ArrayRef)> = vec![
        (
            "id",
            Arc::new(Int64Array::from(
                rows.iter().map(|r| r.id).collect::<Vec<_>>(),
            )),
        ),
        ("name", text(&|r| r.name.clone())),
        ("amount", Arc::new(amount)),
        (
            "flag",
            Arc::new(BooleanArray::from(
                rows.iter().map(|r| r.flag).collect::<Vec<_>>(),
            )),
        ),
        ("tags", Arc::new(tags.finish())),
        ("doc", text(&|r| r.doc.as_ref().map(|d| d.to_string()))),
        ("note", text(&|r| r.note.clone())),
    ];
    let batch = RecordBatch::try_from_iter(columns).unwrap();
    let props = parquet::file::properties::WriterProperties::builder()
        .set_max_row_group_row_count(Some(group))
        .build();
    let file = std::fs::File::create(path).unwrap();
    let mut writer =
        parquet::arrow::ArrowWriter::try_new(file, batch.schema(), Some(props)).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
}

#[test]
fn parquet_loads_like_copy_of_the_same_rows_as_csv() {
    let mut db = fresh_db();
    db.exec(&format!("CREATE TABLE t ({COLUMNS})"));
    let rows = rows(3000, 5);
    server_table(&mut db, "expected", &rows);
    let dir = tempfile::tempdir().unwrap();
    // Two files, several row groups each; rows of one part go out in several chunks.
    to_parquet(&rows[..1800], 700, &dir.path().join("a.parquet"));
    to_parquet(&rows[1800..], 500, &dir.path().join("b.parquet"));
    let mut opts = db.load_options(dir.path(), "t");
    opts.block_size = 16 * 1024;
    let summary = db.load(&opts, &inrush_core::Silent).unwrap();
    assert_eq!(summary.rows, 3000);
    assert_eq!(db.rows_as_text("t"), db.rows_as_text("expected"));

    // --columns picks fields by name, in any order; the others take their defaults.
    db.exec("TRUNCATE t");
    opts.columns = Some(vec!["note".into(), "id".into()]);
    db.load(&opts, &inrush_core::Silent).unwrap();
    assert_eq!(
        db.rows_as_text("t")[..2],
        db.client
            .query("SELECT t::text FROM (SELECT id, NULL::text, NULL::numeric, NULL::bool, NULL::text[], NULL::jsonb, note FROM expected) t ORDER BY 1 LIMIT 2", &[])
            .unwrap()
            .iter()
            .map(|r| r.get::<_, String>(0))
            .collect::<Vec<_>>()[..]
    );
}

#[test]
fn a_query_that_reads_the_table_it_truncates_fails_instead_of_waiting_forever() {
    let mut db = fresh_db();
    // More rows than the pipeline's queues and the socket hold (about 12 MB): a query that
    // started before the TRUNCATE cannot finish, and so release its lock, before the load
    // takes its rows either.
    server_table(&mut db, "t", &rows(100_000, 8));
    let before = db.rows_as_text("t");
    // The query's session waits for the load's TRUNCATE lock, and the load for the query's
    // rows: no server sees that wait, so the load must.
    let mut opts = db.load_options(std::path::Path::new("unused"), "t");
    opts.truncate = true;
    for split_by in [None, Some("id".to_string())] {
        opts.from_query = Some(QuerySource {
            from: std::sync::Arc::new(db.target.clone()),
            sql: "SELECT * FROM t".into(),
            split_by,
        });
        let (done, outcome) = std::sync::mpsc::channel();
        let (target, load) = (db.target.clone(), opts.clone());
        std::thread::spawn(move || {
            let _ = done.send(inrush_postgres::load::run(
                &target,
                &load,
                &inrush_core::Silent,
            ));
        });
        let e = outcome
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("the load ends")
            .unwrap_err();
        assert!(
            matches!(e, inrush_load::Error::QueryBlocked { .. }),
            "{e:?}"
        );
        assert_eq!(db.rows_as_text("t"), before);
    }
}

#[test]
fn csv_flags_are_refused_for_inputs_that_are_not_csv() {
    let mut db = fresh_db();
    db.exec(&format!("CREATE TABLE t ({COLUMNS})"));
    let rows = rows(10, 3);
    server_table(&mut db, "src", &rows);
    let dir = tempfile::tempdir().unwrap();
    let parquet = dir.path().join("in.parquet");
    to_parquet(&rows, 10, &parquet);
    let jsonl = dir.path().join("in.jsonl");
    std::fs::write(&jsonl, to_jsonl(&rows)).unwrap();
    let refused = |opts: &inrush_load::LoadOptions, db: &mut support::TestDb| {
        let e = db.load(opts, &inrush_core::Silent).unwrap_err();
        assert!(matches!(e, inrush_load::Error::Usage(_)), "{e:?}");
        e.to_string()
    };

    let mut opts = db.load_options(&parquet, "t");
    opts.csv.header = true;
    opts.csv.null = b"NA".to_vec();
    assert_eq!(
        refused(&opts, &mut db),
        format!(
            "--header, --null apply to CSV input: {} is not CSV (parquet files name their \
             fields and hold their strings in UTF-8)",
            parquet.display()
        )
    );
    let mut opts = db.load_options(&parquet, "t");
    opts.encoding = Some(inrush_read::encoding::Encoding::Latin1);
    assert!(refused(&opts, &mut db).starts_with("--encoding LATIN1 applies to text inputs"));

    // JSON lines are text: an encoding applies, the CSV flags do not.
    let mut opts = db.load_options(&jsonl, "t");
    opts.csv.delimiter = b';';
    assert!(refused(&opts, &mut db).starts_with("--delimiter applies to CSV input"));
    opts.csv.delimiter = b',';
    opts.encoding = Some(inrush_read::encoding::Encoding::Latin1);
    assert_eq!(db.load(&opts, &inrush_core::Silent).unwrap().rows, 10);

    let mut opts = db.load_options(std::path::Path::new("unused"), "t");
    opts.from_query = Some(QuerySource {
        from: std::sync::Arc::new(db.target.clone()),
        sql: "SELECT * FROM src".into(),
        split_by: None,
    });
    opts.csv.header = true;
    assert!(refused(&opts, &mut db).starts_with("--header applies to CSV input: --from-query"));
    assert_eq!(db.rows_as_text("t").len(), 10, "only the JSON lines loaded");
}

#[test]
fn parquet_values_out_of_range_are_bad_rows_with_their_row_number() {
    use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
    use std::sync::Arc;
    let mut db = fresh_db();
    db.exec("CREATE TABLE t (id int NOT NULL, code varchar(3))");
    let ids: ArrayRef = Arc::new(Int64Array::from(vec![
        Some(1),
        Some(3_000_000_000),
        Some(3),
        None,
        Some(5),
    ]));
    let codes: ArrayRef = Arc::new(StringArray::from(vec![
        Some("a"),
        Some("b"),
        Some("long"),
        Some("d"),
        Some("e,\""),
    ]));
    let batch = RecordBatch::try_from_iter(vec![("id", ids), ("code", codes)]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("in.parquet");
    let mut writer = parquet::arrow::ArrowWriter::try_new(
        std::fs::File::create(&path).unwrap(),
        batch.schema(),
        None,
    )
    .unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();

    let mut opts = db.load_options(&path, "t");
    let e = db
        .load(&opts, &inrush_core::Silent)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("in.parquet, row 2, column id, value \"3000000000\": value \"3000000000\" is out of range for type integer"),
        "{e}"
    );
    assert_eq!(db.count("t"), 0);

    opts.max_errors = 5;
    let rejects = dir.path().join("in.rejects");
    opts.rejects = Some(rejects.clone());
    let summary = db.load(&opts, &inrush_core::Silent).unwrap();
    assert_eq!((summary.rows, summary.rows_rejected), (2, 3));
    assert_eq!(db.rows_as_text("t"), vec!["(1,a)", "(5,\"e,\"\"\")"]);
    // The reject file is CSV that loads again once fixed: a header, then the rows' texts.
    assert_eq!(
        std::fs::read_to_string(&rejects).unwrap(),
        "\"id\",\"code\"\n\"3000000000\",\"b\"\n\"3\",\"long\"\n,\"d\"\n"
    );
    let log = std::fs::read_to_string(rejects.with_extension("rejects.log")).unwrap();
    let first: serde_json::Value = serde_json::from_str(log.lines().next().unwrap()).unwrap();
    assert_eq!(first["row"], 2);
    assert_eq!(first["column"], "id");

    // A column that no value could fit is refused before any row is read.
    db.exec("CREATE TABLE d (id date, code text)");
    let e = db
        .load(&db.load_options(&path, "d"), &inrush_core::Silent)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("column \"id\": cannot load Arrow Int64 into date"),
        "{e}"
    );
}

/// `--create` makes the table from each kind of input, in the load's transaction, frozen.
#[test]
fn create_makes_the_table_from_the_input_and_loads_it_frozen() {
    let mut db = fresh_db();
    let mut source = fresh_db();
    let rows = rows(1500, 21);
    let dir = tempfile::tempdir().unwrap();
    let csv_path = dir.path().join("in.csv");
    std::fs::write(&csv_path, to_csv(&rows, true, false)).unwrap();
    let jsonl_path = dir.path().join("in.jsonl");
    std::fs::write(&jsonl_path, to_jsonl(&rows)).unwrap();
    let parquet_path = dir.path().join("in.parquet");
    to_parquet(&rows, 400, &parquet_path);
    server_table(&mut source, "src", &rows);
    type Setup<'a> = Box<dyn Fn(&mut inrush_load::LoadOptions) + 'a>;
    let cases: Vec<(&str, Setup<'_>, &str)> = vec![
        ("from_csv", Box::new(|o| o.csv.header = true), "id integer, name text, amount numeric, flag boolean, tags text, doc jsonb, note text"),
        ("from_jsonl", Box::new(|o| o.inputs = vec![jsonl_path.display().to_string()]), "amount numeric, doc jsonb, flag boolean, id integer, name text, note text, tags jsonb"),
        ("from_parquet", Box::new(|o| o.inputs = vec![parquet_path.display().to_string()]), "id bigint, name text, amount numeric(12,2), flag boolean, tags text[], doc text, note text"),
        ("from_query", Box::new(|o| o.from_query = Some(QuerySource { from: std::sync::Arc::new(source.target.clone()), sql: "SELECT * FROM src".into(), split_by: None })), "id integer, name text, amount numeric(12,2), flag boolean, tags text[], doc jsonb, note character varying(20)"),
    ];
    // (The JSON lines were written with their keys sorted: the first line's order is the
    // table's.)
    for (table, setup, expected_types) in cases {
        let mut opts = db.load_options(&csv_path, table);
        opts.create = true;
        setup(&mut opts);
        let summary = db.load(&opts, &inrush_core::Silent).unwrap();
        assert_eq!(summary.rows, 1500, "{table}");
        assert_eq!(column_types(&mut db, table), expected_types, "{table}");
        assert!(
            summary
                .notes
                .iter()
                .any(|n| n.contains("--create: CREATE TABLE")),
            "{:?}",
            summary.notes
        );
        // Frozen by COPY FREEZE: pages all-visible without a VACUUM. (The server marks the pages
        // a multi-insert batch starts empty; a page a batch continues stays unmarked.)
        let (pages, visible): (i32, i32) = {
            let row = db
                .client
                .query_one(&format!("SELECT relpages, relallvisible FROM pg_class WHERE oid = '{table}'::regclass"), &[])
                .unwrap();
            (row.get(0), row.get(1))
        };
        assert!(
            pages > 0 && visible * 3 >= pages * 2,
            "{table}: {visible} of {pages} pages all-visible"
        );
        assert_eq!(db.count(table), 1500);
    }
    // The table exists now: --create refuses rather than loading into it.
    let mut opts = db.load_options(&csv_path, "from_csv");
    opts.csv.header = true;
    opts.create = true;
    let e = db
        .load(&opts, &inrush_core::Silent)
        .unwrap_err()
        .to_string();
    assert!(e.contains("exists already"), "{e}");
    // A failed load leaves no table behind.
    std::fs::write(&csv_path, format!("id,n\n{}x,3\n", "1,2\n".repeat(1000))).unwrap();
    let mut opts = db.load_options(&csv_path, "never");
    opts.csv.header = true;
    opts.create = true;
    opts.block_size = 64; // the bad row lies beyond the sampled block
    let e = db
        .load(&opts, &inrush_core::Silent)
        .unwrap_err()
        .to_string();
    assert!(e.contains("invalid input syntax for type integer"), "{e}");
    let missing: Option<String> = db
        .client
        .query_one("SELECT to_regclass('never')::text", &[])
        .unwrap()
        .get(0);
    assert_eq!(missing, None);
}

/// The types of `table`'s columns, in order, as `name type`.
fn column_types(db: &mut support::TestDb, table: &str) -> String {
    db.client
        .query(
            "SELECT attname || ' ' || format_type(atttypid, atttypmod) FROM pg_attribute \
             WHERE attrelid = $1::text::regclass AND attnum > 0 ORDER BY attnum",
            &[&table],
        )
        .unwrap()
        .iter()
        .map(|r| r.get::<_, String>(0))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `--create` guesses only types that keep every value as written: zip codes stay `01234`,
/// from CSV and from JSON strings alike; COPY's boolean spellings, `1e3`/`NaN` and JSON in a
/// CSV field get their types; `--types` replaces a guess; `--check` says the DDL and makes
/// nothing.
#[test]
fn create_keeps_every_value_as_written() {
    let mut db = fresh_db();
    let dir = tempfile::tempdir().unwrap();
    let csv_path = dir.path().join("zips.csv");
    std::fs::write(
        &csv_path,
        "zip,flag,ratio,doc,n,id\n\
         01234,t,1e3,\"{\"\"a\"\": [1, 2]}\",0,1\n\
         00501,F,NaN,[1],-0.5,2\n\
         90210,yes,Infinity,{},0.25,3\n",
    )
    .unwrap();
    let mut opts = db.load_options(&csv_path, "from_csv");
    opts.csv.header = true;
    opts.create = true;
    db.load(&opts, &inrush_core::Silent).unwrap();
    assert_eq!(
        column_types(&mut db, "from_csv"),
        "zip text, flag boolean, ratio double precision, doc jsonb, n numeric, id integer"
    );
    assert_eq!(
        db.rows_as_text("from_csv"),
        [
            "(00501,f,NaN,[1],-0.5,2)",
            "(01234,t,1000,\"{\"\"a\"\": [1, 2]}\",0,1)",
            "(90210,t,Infinity,{},0.25,3)"
        ]
    );

    let jsonl_path = dir.path().join("zips.jsonl");
    std::fs::write(
        &jsonl_path,
        "{\"zip\": \"01234\", \"n\": 5, \"s\": \"12\", \"b\": \"true\"}\n\
         {\"zip\": \"00501\", \"n\": 7, \"s\": \"0.5\", \"b\": \"no\"}\n",
    )
    .unwrap();
    let mut opts = db.load_options(&jsonl_path, "from_jsonl");
    opts.create = true;
    db.load(&opts, &inrush_core::Silent).unwrap();
    assert_eq!(
        column_types(&mut db, "from_jsonl"),
        "zip text, n integer, s text, b text"
    );
    assert_eq!(
        db.rows_as_text("from_jsonl"),
        ["(00501,7,0.5,no)", "(01234,5,12,true)"]
    );

    // --types replaces guesses (a comma inside the type's parentheses is the type's).
    let mut opts = db.load_options(&csv_path, "typed");
    opts.csv.header = true;
    opts.create = true;
    opts.create_types = vec![
        ("N".into(), "numeric(5,2)".into()),
        ("zip".into(), "varchar(5)".into()),
    ];
    db.load(&opts, &inrush_core::Silent).unwrap();
    assert_eq!(
        column_types(&mut db, "typed"),
        "zip character varying(5), flag boolean, ratio double precision, doc jsonb, \
         n numeric(5,2), id integer"
    );
    // A column the input does not have, or a type the server does not know, is a usage error.
    for (column, sql_type, expected) in [
        (
            "zipcode",
            "text",
            "--types: the input has no column \"zipcode\" (it has: zip, flag, ratio, doc, n, id)",
        ),
        (
            "zip",
            "txet",
            "--types: \"txet\" (for column \"zip\") is not a type",
        ),
    ] {
        opts.table = "never".into();
        opts.create_types = vec![(column.into(), sql_type.into())];
        let e = db.load(&opts, &inrush_core::Silent).unwrap_err();
        assert!(matches!(e, inrush_load::Error::Usage(_)), "{e:?}");
        assert!(e.to_string().starts_with(expected), "{e}");
    }

    // --create --check says what it would create, and creates nothing.
    let mut opts = db.load_options(&csv_path, "checked");
    opts.csv.header = true;
    opts.create = true;
    opts.check_only = true;
    let summary = db.load(&opts, &inrush_core::Silent).unwrap();
    assert_eq!(summary.rows, 3);
    assert!(
        summary.notes.iter().any(|n| n.contains(
            "--create: would run CREATE TABLE \"checked\" (\"zip\" text, \"flag\" boolean, "
        )),
        "{:?}",
        summary.notes
    );
    let missing: Option<String> = db
        .client
        .query_one("SELECT to_regclass('checked')::text", &[])
        .unwrap()
        .get(0);
    assert_eq!(missing, None);
}

/// A `.tsv` file (plain or compressed) is read with a tab delimiter, as COPY reads it with
/// `DELIMITER E'\t'`; `--delimiter` still wins.
#[test]
fn tsv_files_are_read_tab_delimited() {
    let mut db = fresh_db();
    db.exec("CREATE TABLE expected (id int, name text); CREATE TABLE t (id int, name text)");
    let data = b"id\tname\n1\ta,b\n2\t\"quoted\ttab\"\n3\t\n";
    let tsv = CsvOptions {
        delimiter: b'\t',
        header: true,
        ..CsvOptions::default()
    };
    db.server_copy("expected", data, &tsv, None).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("in.tsv");
    std::fs::write(&plain, data).unwrap();
    let zst = dir.path().join("in.tsv.zst");
    std::fs::write(&zst, zstd::encode_all(&data[..], 3).unwrap()).unwrap();
    for path in [&plain, &zst] {
        db.exec("TRUNCATE t");
        let mut opts = db.load_options(path, "t");
        opts.csv.header = true;
        let summary = db.load(&opts, &inrush_core::Silent).unwrap();
        assert_eq!(summary.rows, 3, "{}", path.display());
        assert_eq!(db.rows_as_text("t"), db.rows_as_text("expected"));
    }
    db.exec("TRUNCATE t");
    std::fs::write(&plain, b"id|name\n1|a\tb\n").unwrap();
    let mut opts = db.load_options(&plain, "t");
    opts.csv.header = true;
    opts.csv.delimiter = b'|';
    db.load(&opts, &inrush_core::Silent).unwrap();
    assert_eq!(db.rows_as_text("t"), ["(1,\"a\tb\")"]);
}

/// A directory gives only the files whose names say a format: a README.txt with a matching
/// header is not data. The summary names what was skipped; a header that does not fit the
/// table names its file.
#[test]
fn a_directory_loads_only_files_named_as_inputs() {
    let mut db = fresh_db();
    db.exec("CREATE TABLE t (id int, name text)");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.csv"), "id,name\n1,x\n").unwrap();
    std::fs::write(dir.path().join("README.txt"), "id,name\n2,documentation\n").unwrap();
    std::fs::write(dir.path().join("orders.tbl"), "id,name\n3,y\n").unwrap();
    std::fs::write(dir.path().join("config.json"), "{\"id\": 4}\n").unwrap();
    let mut opts = db.load_options(dir.path(), "t");
    opts.csv.header = true;
    let summary = db.load(&opts, &inrush_core::Silent).unwrap();
    assert_eq!(db.rows_as_text("t"), ["(1,x)"]);
    let d = dir.path().display();
    assert!(
        summary.notes.iter().any(|n| n.ends_with(&format!(
            ": {d}/README.txt, {d}/config.json, {d}/orders.tbl"
        )) && n.starts_with("skipped")),
        "{:?}",
        summary.notes
    );

    std::fs::write(dir.path().join("a.csv"), "id;name\n1;x\n").unwrap();
    let e = db
        .load(&opts, &inrush_core::Silent)
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with(&format!(
            "column \"id;name\" named by the header of {d}/a.csv is not a column of"
        )),
        "{e}"
    );
}
