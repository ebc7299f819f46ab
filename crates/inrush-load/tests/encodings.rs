//! Files from older systems, checked against the server's own COPY with the same settings:
//! Latin-1 and Windows-1252 against `COPY ... (ENCODING '...')` of the same bytes, UTF-16
//! against COPY of the same text in UTF-8, day-first dates against COPY in a session with
//! that DateStyle.

mod support;

use inrush_core::Silent;
use inrush_encode::DateOrder;
use inrush_load::{Error, LoadOptions};
use inrush_read::encoding::Encoding;
use std::io::Write;
use support::{fresh_db, write_input, TestDb};

/// The server's `COPY table FROM STDIN (FORMAT csv, <options>)` of `data`, run after `setup`
/// in the same session; the rows it loaded, or its error message.
fn server_copy(
    db: &mut TestDb,
    table: &str,
    data: &[u8],
    options: &str,
    setup: &str,
) -> Result<u64, String> {
    let mut client = db.target.connect_blocking().expect("connect");
    client.batch_execute(setup).expect("session setup");
    let sql = format!("COPY {table} FROM STDIN (FORMAT csv{options})");
    let mut writer = client.copy_in(&sql).expect("COPY starts");
    writer.write_all(data).map_err(|e| e.to_string())?;
    writer.finish().map_err(|e| {
        e.as_db_error()
            .map_or(e.to_string(), |d| d.message().to_string())
    })
}

/// Text with what exports of older systems hold: accents, the euro sign, ß, doubled quotes and
/// line breaks inside quoted fields, CRLF line endings.
const TEXT: &str = "id,name,note\r\n\
    1,Zoë,\"plain\"\r\n\
    2,\"Café \"\"Größe\"\"\",\"two\r\nlines, with é\"\r\n\
    3,Straße,\"€ 12,50\"\r\n\
    4,,\"\"\r\n\
    5,\"Ærøskøbing\",\"« guillemets » and ¿ñ?\"\r\n";

fn table(db: &mut TestDb, name: &str) {
    db.exec(&format!(
        "DROP TABLE IF EXISTS {name}; CREATE TABLE {name} (id int, name text, note text)"
    ));
}

fn options(db: &TestDb, path: &std::path::Path, table: &str, block_size: usize) -> LoadOptions {
    let mut opts = db.load_options(path, table);
    opts.csv.header = true;
    // Small blocks: cuts fall inside quoted fields and between the bytes of every record.
    opts.block_size = block_size;
    opts
}

#[test]
fn single_byte_encodings_match_server_copy_with_that_encoding() {
    let mut db = fresh_db();
    // Windows-1252 has the euro sign; Latin-1 reads the same byte as a C1 control, as the
    // server does, so both are loaded from the Windows-1252 bytes.
    let (bytes, _, unmappable) = encoding_rs::WINDOWS_1252.encode(TEXT);
    assert!(!unmappable);
    for (encoding, name) in [(Encoding::Win1252, "WIN1252"), (Encoding::Latin1, "LATIN1")] {
        for block_size in [7, 64, 1 << 20] {
            table(&mut db, "ours");
            table(&mut db, "theirs");
            let (_dir, path) = write_input(&bytes, "csv");
            let mut opts = options(&db, &path, "ours", block_size);
            opts.encoding = Some(encoding);
            let summary = db.load(&opts, &Silent).expect("inrush loads");
            let copied = server_copy(
                &mut db,
                "theirs",
                &bytes,
                &format!(", HEADER, ENCODING '{name}'"),
                "",
            )
            .expect("COPY loads");
            assert_eq!(summary.rows, copied, "{name}, blocks of {block_size}");
            assert_eq!(
                db.rows_as_text("ours"),
                db.rows_as_text("theirs"),
                "{name}, blocks of {block_size}"
            );
            let note = one(&mut db, "SELECT note FROM ours WHERE id = 3");
            let euro = if encoding == Encoding::Win1252 {
                "€"
            } else {
                "\u{80}"
            };
            assert_eq!(note, format!("{euro} 12,50"), "{name}");
        }
    }
}

fn one(db: &mut TestDb, sql: &str) -> String {
    db.client.query_one(sql, &[]).expect(sql).get(0)
}

#[test]
fn header_names_in_latin1_pick_their_columns() {
    let mut db = fresh_db();
    db.exec("CREATE TABLE ours (\"prénom\" text, \"größe\" int)");
    let (_dir, path) = write_input(b"gr\xf6\xdfe,pr\xe9nom\n180,Ren\xe9e\n", "csv");
    let mut opts = options(&db, &path, "ours", 1 << 20);
    opts.encoding = Some(Encoding::Latin1);
    db.load(&opts, &Silent).expect("loads");
    assert_eq!(db.rows_as_text("ours"), vec!["(Renée,180)".to_string()]);
}

#[test]
fn bytes_with_no_character_are_bad_rows_with_the_servers_reason() {
    let mut db = fresh_db();
    for (encoding, name, data) in [
        // 0x81 is unassigned in Windows-1252.
        (
            Encoding::Win1252,
            "WIN1252",
            &b"id,name,note\n1,ok,\xe9\n2,\"b\x81d\nline\",x\n3,ok,\x80\n"[..],
        ),
        (
            Encoding::Latin1,
            "LATIN1",
            &b"id,name,note\n1,ok,\xe9\n2,\"b\0d\nline\",x\n3,ok,\x80\n"[..],
        ),
    ] {
        table(&mut db, "ours");
        table(&mut db, "theirs");
        let (_dir, path) = write_input(data, "csv");
        let mut opts = options(&db, &path, "ours", 1 << 20);
        opts.encoding = Some(encoding);
        let theirs = server_copy(
            &mut db,
            "theirs",
            data,
            &format!(", HEADER, ENCODING '{name}'"),
            "",
        )
        .expect_err("COPY refuses");
        match db.load(&opts, &Silent) {
            Err(Error::BadRow { location, reason }) => {
                assert_eq!(reason, theirs, "{name}");
                assert_eq!(location.line, 3, "{name}");
                assert_eq!(location.column.as_deref(), Some("name"), "{name}");
            }
            other => panic!("{name}: {:?}", other.map(|s| s.rows)),
        }
        // With rejects allowed, the row goes to the reject file and the others load.
        opts.max_errors = 1;
        let summary = db.load(&opts, &Silent).expect("loads the good rows");
        assert_eq!((summary.rows, summary.rows_rejected), (2, 1), "{name}");
        assert_eq!(
            db.rows_as_text("ours"),
            vec![
                "(1,ok,é)".to_string(),
                format!(
                    "(3,ok,{})",
                    if encoding == Encoding::Win1252 {
                        "€"
                    } else {
                        "\u{80}"
                    }
                )
            ],
            "{name}"
        );
    }
}

fn utf16(text: &str, big_endian: bool, mark: bool) -> Vec<u8> {
    let mut units: Vec<u16> = text.encode_utf16().collect();
    if mark {
        units.insert(0, 0xFEFF);
    }
    units
        .into_iter()
        .flat_map(|u| match big_endian {
            true => u.to_be_bytes(),
            false => u.to_le_bytes(),
        })
        .collect()
}

#[test]
fn utf16_matches_server_copy_of_the_same_text_in_utf8() {
    let mut db = fresh_db();
    // A character outside the BMP: a surrogate pair in UTF-16.
    let text = format!("{TEXT}6,\"😀 \"\"emoji\"\"\",\"a\nb\"\r\n");
    table(&mut db, "theirs");
    let copied = server_copy(&mut db, "theirs", text.as_bytes(), ", HEADER", "").unwrap();
    for (data, declared, what) in [
        (utf16(&text, false, true), None, "LE with its mark, found"),
        (utf16(&text, true, true), None, "BE with its mark, found"),
        (
            utf16(&text, true, true),
            Some(Encoding::Utf16),
            "UTF16 by its mark",
        ),
        (
            utf16(&text, false, false),
            Some(Encoding::Utf16Le),
            "UTF16LE, no mark",
        ),
        (
            utf16(&text, false, true),
            Some(Encoding::Utf16Le),
            "UTF16LE, its mark",
        ),
    ] {
        for block_size in [5, 1 << 20] {
            table(&mut db, "ours");
            let (_dir, path) = write_input(&data, "csv");
            let mut opts = options(&db, &path, "ours", block_size);
            opts.encoding = declared;
            let summary = db
                .load(&opts, &Silent)
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            assert_eq!(summary.rows, copied, "{what}");
            assert_eq!(
                db.rows_as_text("ours"),
                db.rows_as_text("theirs"),
                "{what}, blocks of {block_size}"
            );
        }
    }
}

#[test]
fn utf16_problems_are_named() {
    let mut db = fresh_db();
    table(&mut db, "ours");
    let (_dir, path) = write_input(&utf16("id,name,note\n1,a,b\n", false, false), "csv");
    let mut opts = options(&db, &path, "ours", 1 << 20);
    opts.encoding = Some(Encoding::Utf16);
    let error = db
        .load(&opts, &Silent)
        .expect_err("no byte order mark")
        .to_string();
    assert!(error.contains("UTF16 without a byte order mark"), "{error}");

    // An unpaired surrogate on line 3, in the note.
    let mut data = utf16("id,name,note\n1,a,b\n2,c,", false, true);
    data.extend_from_slice(&[0x00, 0xD8]);
    data.extend(utf16("x\n3,d,e\n", false, false));
    let (_dir, path) = write_input(&data, "csv");
    let opts = options(&db, &path, "ours", 1 << 20);
    match db.load(&opts, &Silent) {
        Err(Error::BadRow { location, reason }) => {
            assert_eq!(
                (location.line, location.column.as_deref()),
                (3, Some("note"))
            );
            assert!(
                reason.contains("\"UTF16LE\"") && reason.contains("unpaired surrogate"),
                "{reason}"
            );
        }
        other => panic!("{:?}", other.map(|s| s.rows)),
    }
}

/// Dates in every form the client reads itself, and forms it leaves to the server.
fn dates(order: DateOrder) -> Vec<&'static str> {
    let mut all = vec![
        "2024-12-31",
        "2024-01-02 03:04:05",
        "20240102",
        "2000-02-29T23:59:59.999999+05:30",
        "Jan 5 2024",
        "epoch",
    ];
    all.extend(match order {
        DateOrder::Dmy => [
            "31/12/2024",
            "1/2/2024",
            "01.02.2024 10:11",
            "15-06-2023 23:59:59.5",
            "29/02/2024T10:00:00Z",
            "3/4/99",
            " 3/4/1999 10:11:12-08 ",
        ],
        DateOrder::Mdy => [
            "12/31/2024",
            "1/2/2024",
            "01.02.2024 10:11",
            "06-15-2023 23:59:59.5",
            "02/29/2024T10:00:00Z",
            "3/4/99",
            " 3/4/1999 10:11:12-08 ",
        ],
        DateOrder::Ymd => [
            "2024/12/31",
            "2024.1.2",
            "99/3/4",
            "2024-1-2 10:11",
            "2023-06-15 23:59:59.5",
            "2024-02-29 10:00:00Z",
            "1999-3-4 10:11:12-08",
        ],
    });
    all
}

#[test]
fn datestyle_matches_server_copy_in_a_session_with_that_datestyle() {
    let mut db = fresh_db();
    let columns = "d date, ts timestamp, tz timestamptz";
    for order in [DateOrder::Dmy, DateOrder::Mdy, DateOrder::Ymd] {
        let data: String = dates(order)
            .iter()
            .map(|s| format!("\"{s}\",\"{s}\",\"{s}\"\n"))
            .collect();
        db.exec(&format!("DROP TABLE IF EXISTS ours, theirs; CREATE TABLE ours ({columns}); CREATE TABLE theirs ({columns})"));
        let (_dir, path) = write_input(data.as_bytes(), "csv");
        let mut opts = db.load_options(&path, "ours");
        opts.date_order = Some(order);
        let summary = db
            .load(&opts, &Silent)
            .unwrap_or_else(|e| panic!("{order:?}: {e}"));
        let setup = format!("SET DateStyle = '{}'", order.date_style());
        let copied = server_copy(&mut db, "theirs", data.as_bytes(), "", &setup)
            .unwrap_or_else(|e| panic!("{order:?}: {e}"));
        assert_eq!(summary.rows, copied);
        assert_eq!(
            db.rows_as_text("ours"),
            db.rows_as_text("theirs"),
            "{order:?}"
        );
    }
}

#[test]
fn a_date_the_order_refuses_is_refused_as_copy_refuses_it() {
    let mut db = fresh_db();
    db.exec("CREATE TABLE ours (d date); CREATE TABLE theirs (d date)");
    let data = b"31/12/2024\n12/31/2024\n";
    let (_dir, path) = write_input(data, "csv");
    let mut opts = db.load_options(&path, "ours");
    opts.date_order = Some(DateOrder::Dmy);
    let theirs = server_copy(&mut db, "theirs", data, "", "SET DateStyle = 'ISO, DMY'")
        .expect_err("COPY refuses");
    match db.load(&opts, &Silent) {
        Err(Error::BadRow { location, reason }) => {
            assert_eq!(location.line, 2);
            assert_eq!(reason, theirs);
        }
        other => panic!("{:?}", other.map(|s| s.rows)),
    }
    // The server's own DateStyle (MDY here) reads the other one.
    opts.date_order = None;
    let error = db.load(&opts, &Silent).expect_err("MDY refuses 31/12/2024");
    assert!(error.to_string().contains("input.csv:1"), "{error}");
}

#[test]
fn day_first_timestamps_are_read_on_the_client() {
    let mut db = fresh_db();
    db.exec("CREATE TABLE ours (ts timestamp, d date)");
    let data: String = (0..5000)
        .map(|i| {
            let (day, month, hour, minute) = (i % 28 + 1, i % 12 + 1, i % 24, i % 60);
            format!(
                "{day}/{month:02}/2024 {hour:02}:{minute:02}:{:02},{day}.{month}.2023\n",
                i % 60
            )
        })
        .collect();
    let (_dir, path) = write_input(data.as_bytes(), "csv");
    let mut opts = db.load_options(&path, "ours");
    opts.date_order = Some(DateOrder::Dmy);
    let summary = db.load(&opts, &Silent).expect("loads");
    assert_eq!(summary.rows, 5000);
    assert_eq!(summary.engine.values_read_by_server, 0);
    assert_eq!(
        one(
            &mut db,
            "SELECT ts::text || ' ' || d::text FROM ours ORDER BY ts LIMIT 1"
        ),
        "2024-01-01 00:00:00 2023-01-01"
    );
}
