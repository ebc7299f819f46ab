//! `inrush copy`: whole databases moved between real servers, MariaDB into PostgreSQL (what
//! pgloader is used for) and PostgreSQL into PostgreSQL (pgcopydb's job). The schema is read
//! back from the target's catalog; the rows are compared with a one-table `inrush load
//! --from-query` of the same source (itself checked value by value in `migrate.rs`), and with
//! the source's own rows.

use inrush_testkit::{Db, MariaDb};

fn inrush(args: &[&str]) -> (i32, String) {
    inrush_testkit::run(env!("CARGO_BIN_EXE_inrush"), args)
}

fn copy(from: &str, to: &str, extra: &[&str]) -> (i32, String) {
    let mut args = vec!["copy", "--from", from, "--to", to];
    args.extend_from_slice(extra);
    inrush(&args)
}

/// A shop: numbered keys, a unique email, a composite key, foreign keys with their actions,
/// defaults, a CHECK, an enum, a prefix index, a FULLTEXT index, comments, and what a copy
/// leaves (a view, a procedure, a trigger).
const SHOP: &str = "
  CREATE TABLE customers (
    id INT AUTO_INCREMENT PRIMARY KEY,
    email VARCHAR(80) NOT NULL UNIQUE,
    name VARCHAR(40) NOT NULL DEFAULT 'anon' COMMENT 'shown on invoices',
    joined DATETIME DEFAULT CURRENT_TIMESTAMP,
    vip TINYINT(1) NOT NULL DEFAULT 0
  ) COMMENT 'who buys';
  CREATE TABLE orders (
    id BIGINT AUTO_INCREMENT PRIMARY KEY,
    customer_id INT NOT NULL,
    status ENUM('new','paid','sent') NOT NULL DEFAULT 'new',
    total DECIMAL(10,2) NOT NULL,
    note TEXT,
    doc JSON,
    CONSTRAINT total_not_negative CHECK (total >= 0),
    CONSTRAINT orders_customer FOREIGN KEY (customer_id) REFERENCES customers (id) ON DELETE CASCADE,
    INDEX by_status (status, total DESC),
    INDEX by_note (note(10)),
    FULLTEXT INDEX note_words (note)
  );
  CREATE TABLE order_lines (
    order_id BIGINT NOT NULL,
    line SMALLINT NOT NULL,
    sku CHAR(8) NOT NULL,
    qty INT UNSIGNED NOT NULL DEFAULT 1,
    PRIMARY KEY (order_id, line),
    CONSTRAINT lines_order FOREIGN KEY (order_id) REFERENCES orders (id) ON DELETE CASCADE ON UPDATE RESTRICT
  );
  CREATE VIEW big_orders AS SELECT * FROM orders WHERE total > 100;
  CREATE PROCEDURE touch() SELECT 1;
  CREATE TRIGGER lines_touch BEFORE INSERT ON order_lines FOR EACH ROW SET NEW.qty = NEW.qty;
  INSERT INTO customers (email, name, joined, vip) VALUES
    ('a@x.org', 'Ann', '2024-01-02 03:04:05', 1), ('b@x.org', 'Bob', NULL, 0),
    ('c@x.org', 'Cé ✓', '2023-12-31 23:59:59', 0);
  INSERT INTO orders (customer_id, status, total, note, doc) VALUES
    (1, 'paid', 120.50, 'first, \"quoted\"\nline', '{\"k\": [1, 2]}'),
    (1, 'new', 0, NULL, NULL), (3, 'sent', 99.99, 'ünïcödé', 'null');
  INSERT INTO order_lines VALUES (1, 1, 'SKU-0001', 2), (1, 2, 'SKU-0002', 1), (3, 1, 'SKU-0003', 7);";

#[test]
fn a_mariadb_database_moves_into_postgresql_with_its_keys_indexes_and_numbering() {
    let source = MariaDb::fresh("copy_from");
    source.exec(SHOP);
    let target = Db::fresh("copy_to");

    // The plan changes nothing and says what is translated and left out.
    let (code, out) = copy(&source.url, &target.conninfo, &["--check"]);
    assert_eq!(code, 0, "{out}");
    for said in [
        "3 tables, largest first; nothing was changed",
        "left out: FULLTEXT index note_words of orders: PostgreSQL has no such index",
        "translated: prefix index by_note of orders: on left(note, 10)",
        "translated: column status: mariadb's enum('new','paid','sent') became text",
        "after its keys and \"customers\"'s: foreign key orders_customer",
        "view big_orders",
        "procedure touch",
        "trigger lines_touch",
    ] {
        assert!(out.contains(said), "{said:?} not in:\n{out}");
    }
    assert_eq!(
        target.int("SELECT count(*) FROM pg_class WHERE relname = 'orders'"),
        0
    );

    let (code, out) = copy(&source.url, &target.conninfo, &["--verify"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("copied 3 tables, 9 rows"), "{out}");
    assert_eq!(out.matches("; verified equal (").count(), 3, "{out}");
    assert!(out.contains("under FLUSH TABLES WITH READ LOCK"), "{out}");

    let columns = target.text(
        "SELECT string_agg(attrelid::regclass || '.' || attname || ' ' || format_type(atttypid, atttypmod) \
                || CASE WHEN attnotnull THEN ' not null' ELSE '' END \
                || coalesce(' default ' || pg_get_expr(adbin, adrelid), '') \
                || CASE attidentity WHEN 'd' THEN ' identity' ELSE '' END, E'\\n' ORDER BY attrelid::regclass::text, attnum) \
         FROM pg_attribute LEFT JOIN pg_attrdef ON adrelid = attrelid AND adnum = attnum \
         WHERE attrelid IN ('customers'::regclass, 'orders'::regclass, 'order_lines'::regclass) \
           AND attnum > 0 AND NOT attisdropped",
    );
    assert_eq!(
        columns,
        "customers.id integer not null identity\n\
         customers.email character varying(80) not null\n\
         customers.name character varying(40) not null default 'anon'::character varying\n\
         customers.joined timestamp(0) without time zone default CURRENT_TIMESTAMP\n\
         customers.vip boolean not null default false\n\
         order_lines.order_id bigint not null\n\
         order_lines.line smallint not null\n\
         order_lines.sku character(8) not null\n\
         order_lines.qty bigint not null default '1'::bigint\n\
         orders.id bigint not null identity\n\
         orders.customer_id integer not null\n\
         orders.status text not null default 'new'::text\n\
         orders.total numeric(10,2) not null\n\
         orders.note text\n\
         orders.doc jsonb"
    );
    let definitions = target.definitions();
    for definition in [
        "constraint customers customers_pkey: PRIMARY KEY (id) valid=true",
        "constraint customers email: UNIQUE (email) valid=true",
        "constraint order_lines order_lines_pkey: PRIMARY KEY (order_id, line) valid=true",
        "constraint order_lines lines_order: FOREIGN KEY (order_id) REFERENCES orders(id) ON UPDATE RESTRICT ON DELETE CASCADE valid=true",
        "constraint orders orders_customer: FOREIGN KEY (customer_id) REFERENCES customers(id) ON UPDATE RESTRICT ON DELETE CASCADE valid=true",
        "constraint orders total_not_negative: CHECK ((total >= (0)::numeric)) valid=true",
        "index by_note: CREATE INDEX by_note ON public.orders USING btree (\"left\"(note, 10)) valid=true",
        "index by_status: CREATE INDEX by_status ON public.orders USING btree (status, total DESC) valid=true",
    ] {
        assert!(definitions.contains(definition), "{definition:?} not in:\n{definitions}");
    }
    assert_eq!(
        target.text("SELECT obj_description('customers'::regclass) || ' / ' || col_description('customers'::regclass, 3)"),
        "who buys / shown on invoices"
    );
    // Numbering goes on past the copied maximum.
    target.exec("INSERT INTO customers (email) VALUES ('d@x.org')");
    assert_eq!(target.int("SELECT max(id) FROM customers"), 4);

    // The rows are what a one-table load of the same query makes of them.
    let anchor = Db::fresh("copy_anchor");
    for table in ["customers", "orders", "order_lines"] {
        let (code, out) = inrush(&[
            "load",
            "--from-query",
            &format!("SELECT * FROM {table}"),
            "--from",
            &source.url,
            "--to",
            &anchor.conninfo,
            "--table",
            table,
            "--create",
            "--no-progress",
        ]);
        assert_eq!(code, 0, "{out}");
        let rows = |db: &Db| {
            db.rows(&format!(
                "SELECT t::text FROM {table} t WHERE {} ORDER BY 1",
                match table {
                    "customers" => "id < 4",
                    _ => "true",
                }
            ))
        };
        assert_eq!(rows(&target), rows(&anchor), "{table}");
    }
    assert_eq!(
        target.text("SELECT string_agg(status || ' ' || total || ' ' || coalesce(doc::text, '-'), ', ' ORDER BY id) FROM orders"),
        "paid 120.50 {\"k\": [1, 2]}, new 0.00 -, sent 99.99 null"
    );

    // Run again, the copy is done: nothing is made or loaded twice.
    let (code, out) = copy(&source.url, &target.conninfo, &[]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("copied orders: rows copied by an earlier run"),
        "{out}"
    );
    assert_eq!(target.int("SELECT count(*) FROM orders"), 3);
}

/// Every shape PostgreSQL gives a table that a copy into PostgreSQL keeps as it was.
const PG_SOURCE: &str = "
  CREATE SCHEMA sales;
  CREATE TYPE sales.tier AS ENUM ('basic', 'gold', 'it''s');
  CREATE DOMAIN sales.premium AS sales.tier CONSTRAINT premium_paid CHECK (VALUE <> 'basic');
  CREATE DOMAIN public.weight AS integer DEFAULT 1 NOT NULL CONSTRAINT weight_positive CHECK (VALUE > 0);
  CREATE TABLE sales.regions (code text PRIMARY KEY, name text NOT NULL UNIQUE);
  CREATE TABLE sales.accounts (
    id serial PRIMARY KEY,
    region text NOT NULL REFERENCES sales.regions (code) ON UPDATE CASCADE,
    email text NOT NULL,
    balance numeric(12,2) NOT NULL DEFAULT 0 CHECK (balance > -1000),
    tags text[],
    opened timestamptz NOT NULL DEFAULT now(),
    email_lower text GENERATED ALWAYS AS (lower(email)) STORED,
    tier sales.tier NOT NULL DEFAULT 'basic',
    tiers sales.tier[]);
  CREATE UNIQUE INDEX accounts_email ON sales.accounts (lower(email));
  CREATE INDEX accounts_rich ON sales.accounts (balance) WHERE balance > 1000;
  COMMENT ON TABLE sales.accounts IS 'one per customer';
  CREATE TABLE public.events (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    account int REFERENCES sales.accounts (id) ON DELETE SET NULL,
    at timestamp(3) NOT NULL,
    body jsonb,
    weight public.weight,
    level sales.premium);
  CREATE INDEX events_body ON public.events USING gin (body);
  CREATE VIEW public.recent AS SELECT * FROM public.events;
  INSERT INTO sales.regions VALUES ('eu', 'Europe'), ('us', 'United States');
  INSERT INTO sales.accounts (region, email, balance, tags, opened, tier, tiers)
    SELECT CASE WHEN i % 2 = 0 THEN 'eu' ELSE 'us' END, 'User' || i || '@X.org', i * 10.5,
           ARRAY['t' || i, NULL], '2024-01-01 00:00:00+00'::timestamptz + i * interval '1 hour',
           (enum_range(NULL::sales.tier))[1 + i % 3], ARRAY['gold', 'it''s']::sales.tier[]
    FROM generate_series(1, 500) i;
  INSERT INTO public.events (account, at, body, weight, level)
    SELECT 1 + i % 500, '2024-06-01'::timestamp + i * interval '1.5 s', jsonb_build_object('i', i),
           1 + i % 7, CASE WHEN i % 2 = 0 THEN 'gold'::sales.tier END
    FROM generate_series(1, 3000) i;";

/// Every definition of the tables of `db`'s user schemas, by table.
fn schema_of(db: &Db) -> String {
    db.text(
        "SELECT string_agg(x, E'\\n' ORDER BY x) FROM ( \
           SELECT 'column ' || attrelid::regclass || '.' || attname || ' ' || format_type(atttypid, atttypmod) \
                  || CASE WHEN attnotnull THEN ' not null' ELSE '' END \
                  || coalesce(' default ' || pg_get_expr(adbin, adrelid), '') \
                  || ' ' || attidentity::text || attgenerated::text AS x \
             FROM pg_attribute JOIN pg_class c ON c.oid = attrelid \
             LEFT JOIN pg_attrdef ON adrelid = attrelid AND adnum = attnum \
            WHERE c.relkind = 'r' AND c.relnamespace IN ('public'::regnamespace, 'sales'::regnamespace) \
              AND attnum > 0 AND NOT attisdropped \
           UNION ALL SELECT 'index ' || pg_get_indexdef(indexrelid) FROM pg_index \
            WHERE indrelid IN (SELECT oid FROM pg_class WHERE relnamespace IN ('public'::regnamespace, 'sales'::regnamespace)) \
           UNION ALL SELECT 'constraint ' || conrelid::regclass || ' ' || conname || ': ' || pg_get_constraintdef(oid) \
             FROM pg_constraint WHERE connamespace IN ('public'::regnamespace, 'sales'::regnamespace) \
           UNION ALL SELECT 'type ' || format_type(t.oid, NULL) || ' ' || t.typtype::text || ' ' \
                  || coalesce(format_type(t.typbasetype, t.typtypmod), '') || ' ' || t.typnotnull \
                  || coalesce(' default ' || t.typdefault, '') \
                  || coalesce((SELECT ' ' || string_agg(enumlabel, ',' ORDER BY enumsortorder) \
                               FROM pg_enum WHERE enumtypid = t.oid), '') \
             FROM pg_type t WHERE t.typtype IN ('e', 'd') \
              AND t.typnamespace IN ('public'::regnamespace, 'sales'::regnamespace) \
           UNION ALL SELECT 'domain constraint ' || contypid::regtype || ' ' || conname || ': ' || pg_get_constraintdef(oid) \
             FROM pg_constraint WHERE contypid <> 0 \
              AND connamespace IN ('public'::regnamespace, 'sales'::regnamespace) \
           UNION ALL SELECT 'comment ' || obj_description('sales.accounts'::regclass)) q",
    )
}

/// Every row of every table, as text, in key order.
fn rows_of(db: &Db) -> Vec<Vec<Option<String>>> {
    let mut all = Vec::new();
    for table in ["sales.regions", "sales.accounts", "public.events"] {
        all.extend(db.rows(&format!(
            "SELECT '{table}', t::text FROM {table} t ORDER BY 2"
        )));
    }
    all
}

#[test]
fn a_postgresql_database_copies_into_another_as_it_was() {
    let source = Db::fresh("copy_pg_from");
    source.exec(PG_SOURCE);
    let target = Db::fresh("copy_pg_to");
    let (code, out) = copy(
        &source.conninfo,
        &target.conninfo,
        &["--jobs", "2", "--verify"],
    );
    assert_eq!(code, 0, "{out}");
    assert_eq!(out.matches("; verified equal (").count(), 3, "{out}");
    assert!(out.contains("copied 3 tables, 3,502 rows"), "{out}");
    assert!(out.contains("exported snapshot"), "{out}");
    assert!(out.contains("not copied: view public.recent"), "{out}");
    assert!(!out.contains("not copied: type"), "{out}");
    assert_eq!(schema_of(&target), schema_of(&source));
    assert_eq!(rows_of(&target), rows_of(&source));
    // Every row was written frozen (COPY FREEZE): nothing is left for VACUUM or for the
    // builds after the load to set on every row. (The pages COPY added ahead and left empty
    // are not marked.)
    target.exec("CREATE EXTENSION IF NOT EXISTS pg_visibility");
    let unfrozen = "SELECT count(*) FROM public.events e \
                    JOIN pg_visibility('public.events') v ON v.blkno = (e.ctid::text::point)[0] \
                    WHERE NOT v.all_frozen";
    assert_eq!(target.int(unfrozen), 0);
    // Serial and identity numbering go on past the copied maximum.
    target.exec("INSERT INTO sales.accounts (region, email) VALUES ('eu', 'new@x.org')");
    target.exec("INSERT INTO public.events (at) VALUES (now())");
    assert_eq!(target.int("SELECT max(id) FROM sales.accounts"), 501);
    assert_eq!(target.int("SELECT max(id) FROM public.events"), 3001);
}

#[test]
fn a_copy_that_fails_on_a_table_resumes_with_the_tables_done_kept() {
    let source = MariaDb::fresh("copy_resume");
    source.exec(
        "CREATE TABLE a (id INT PRIMARY KEY, v VARCHAR(10));
         CREATE TABLE b (id INT PRIMARY KEY, day DATE);
         INSERT INTO a VALUES (1, 'x'), (2, 'y'), (3, 'z'), (4, 'w'), (5, 'v');
         ANALYZE TABLE a, b;
         SET SESSION sql_mode = '';
         INSERT INTO b VALUES (1, '2024-01-01'), (2, '0000-00-00'), (3, '2024-01-03');",
    );
    let target = Db::fresh("copy_resume_to");
    // The zero date is a bad row: the copy of b fails, a's (the larger, so the first) stays.
    let (code, out) = copy(&source.url, &target.conninfo, &["--jobs", "1"]);
    assert_eq!(code, 4, "exit {code}: {out}");
    assert!(
        out.contains("copying \"b\": query, row 2, column day, value \"0000-00-00\""),
        "{out}"
    );
    assert_eq!(target.int("SELECT count(*) FROM b"), 0);
    let (code, out) = copy(&source.url, &target.conninfo, &["--check"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("b -> \"b\": about"), "{out}");
    assert!(
        out.contains("(an earlier run was loading it: emptied and loaded again)"),
        "{out}"
    );

    // Allowed to refuse one row, the rerun loads b and keeps a as the first run left it.
    let rejects = tempfile::tempdir().unwrap();
    let dir = rejects.path().to_str().unwrap();
    let (code, out) = copy(
        &source.url,
        &target.conninfo,
        &["--max-errors", "1", "--rejects", dir],
    );
    assert_eq!(code, 6, "{out}");
    assert!(
        out.contains("copied a: rows copied by an earlier run"),
        "{out}"
    );
    assert_eq!(target.int("SELECT count(*) FROM a"), 5);
    assert_eq!(
        target.text("SELECT string_agg(id || ' ' || day, ', ' ORDER BY id) FROM b"),
        "1 2024-01-01, 3 2024-01-03"
    );
    let log = std::fs::read_to_string(rejects.path().join("b.rejects.log")).unwrap();
    assert!(log.contains("0000-00-00"), "{log}");
    assert_eq!(
        target.int(
            "SELECT count(*) FROM pg_constraint WHERE conrelid = 'b'::regclass AND contype = 'p'"
        ),
        1
    );
}

#[test]
fn tables_read_one_instant_while_the_source_takes_writes() {
    // Each transaction writes the same key into both tables: a copy of one instant has the
    // same keys in both, however the writes fall between the tables' reads.
    let source = Db::fresh("copy_instant");
    source.exec(
        "CREATE TABLE a (id bigint PRIMARY KEY, pad text); CREATE TABLE b (id bigint PRIMARY KEY, pad text);
         INSERT INTO a SELECT i, repeat('x', 200) FROM generate_series(1, 200000) i;
         INSERT INTO b SELECT i, repeat('y', 200) FROM generate_series(1, 200000) i;",
    );
    let target = Db::fresh("copy_instant_to");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (stop, conninfo) = (stop.clone(), source.conninfo.clone());
        std::thread::spawn(move || {
            let mut client = postgres::Client::connect(&conninfo, postgres::NoTls).unwrap();
            let mut id = 1_000_000i64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                id += 1;
                client
                    .batch_execute(&format!("BEGIN; INSERT INTO a VALUES ({id}, 'w'); DELETE FROM a WHERE id = {}; INSERT INTO b VALUES ({id}, 'w'); DELETE FROM b WHERE id = {}; COMMIT", id - 999_000, id - 999_000))
                    .unwrap();
            }
            id - 1_000_000
        })
    };
    std::thread::sleep(std::time::Duration::from_millis(200));
    let (code, out) = copy(
        &source.conninfo,
        &target.conninfo,
        &["--jobs", "1", "--connections", "2"],
    );
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let written = writer.join().unwrap();
    assert_eq!(code, 0, "{out}");
    assert!(
        written > 10,
        "the writer wrote {written} transactions during the copy"
    );
    let differ = target.int("SELECT count(*) FROM (SELECT id FROM a EXCEPT SELECT id FROM b) d")
        + target.int("SELECT count(*) FROM (SELECT id FROM b EXCEPT SELECT id FROM a) d");
    assert_eq!(differ, 0);
    assert_eq!(target.int("SELECT count(*) FROM a"), 200000);
}

#[test]
fn a_copy_refuses_what_cannot_work_before_it_changes_anything() {
    let source = Db::fresh("copy_refuse");
    source.exec("CREATE TABLE t (id int PRIMARY KEY); INSERT INTO t VALUES (1)");
    let target = Db::fresh("copy_refuse_to");
    target.exec("CREATE TABLE t (id int)");
    let missing = "sqlite:///nowhere/x.db";
    let cases: [(&str, &[&str], &str); 3] = [
        (
            &target.conninfo,
            &[],
            "table \"public\".\"t\" is in the target already, and this copy did not make it",
        ),
        (
            &target.conninfo,
            &["--schema-only", "--data-only"],
            "--schema-only and --data-only",
        ),
        (
            &target.conninfo,
            &["--tables", "nothing*"],
            "matches --tables and --exclude",
        ),
    ];
    for (to, extra, said) in cases {
        let mut args = vec!["copy", "--from", &source.conninfo, "--to", to];
        args.extend_from_slice(extra);
        let (code, out) = inrush(&args);
        assert_eq!(code, 2, "{extra:?}: {out}");
        assert!(out.contains(said), "{extra:?}: {said:?} not in {out}");
    }
    let (code, out) = copy(missing, &target.conninfo, &[]);
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("--from: /nowhere/x.db does not exist"),
        "{out}"
    );
    assert_eq!(target.int("SELECT count(*) FROM t"), 0);
    // Rows into the table that is there: --data-only.
    let (code, out) = copy(&source.conninfo, &target.conninfo, &["--data-only"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(target.int("SELECT count(*) FROM t"), 1);
    // A row the source does not have is a difference --verify finds.
    target.exec("INSERT INTO t VALUES (2)");
    let (code, out) = copy(
        &source.conninfo,
        &target.conninfo,
        &["--data-only", "--verify"],
    );
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("--verify: public.t differs from its source: 1 rows with checksum"),
        "{out}"
    );
    // --json: the plan, then the summary, on standard output.
    let fresh = Db::fresh("copy_json_to");
    let json = |args: &[&str]| -> serde_json::Value {
        let mut all = vec![
            "copy",
            "--from",
            &source.conninfo,
            "--to",
            &fresh.conninfo,
            "--json",
        ];
        all.extend_from_slice(args);
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_inrush"))
            .args(&all)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let plan = json(&["--check"]);
    assert_eq!(plan["tables"][0]["design"]["name"], "\"public\".\"t\"");
    assert_eq!(plan["tables"][0]["state"], "new");
    let summary = json(&["--verify"]);
    assert_eq!(summary["rows"], 1);
    assert_eq!(summary["tables"][0]["table"], "public.t");
    assert_eq!(summary["tables"][0]["verified"]["target"]["rows"], 1);
    assert!(summary["snapshot"]
        .as_str()
        .unwrap()
        .starts_with("exported snapshot"));
    // The table was loaded by the first run: the ledger keeps it from a second load.
    assert!(out.contains(", 2 rows with checksum"), "{out}");
}

#[test]
fn a_sqlite_file_moves_into_postgresql_with_its_keys_and_indexes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("app.db");
    let file = rusqlite::Connection::open(&path).unwrap();
    file.execute_batch(
        "CREATE TABLE authors (id INTEGER PRIMARY KEY, name VARCHAR(40) NOT NULL UNIQUE,
           born DATE, active BOOLEAN DEFAULT 1);
         CREATE TABLE books (id INTEGER PRIMARY KEY AUTOINCREMENT,
           author INTEGER REFERENCES authors ON DELETE CASCADE, title TEXT NOT NULL,
           price DECIMAL(8,2), cover BLOB, score REAL, added DATETIME DEFAULT CURRENT_TIMESTAMP,
           meta);
         CREATE INDEX books_title ON books (title DESC);
         CREATE UNIQUE INDEX books_author_title ON books (author, title);
         CREATE INDEX books_cheap ON books (price) WHERE price < 10;
         CREATE VIEW cheap AS SELECT * FROM books WHERE price < 10;
         CREATE TRIGGER books_added AFTER INSERT ON books BEGIN SELECT 1; END;
         INSERT INTO authors VALUES (1, 'Ann', '1970-01-02', 1), (2, 'Bob, \"Jr\"', NULL, 0);
         INSERT INTO books (author, title, price, cover, score, added, meta) VALUES
           (1, 'A', 9.5, x'00ff', 0.1, '2024-01-02 03:04:05', 'x'),
           (2, 'B
line', NULL, NULL, 1e300, '2024-01-03 00:00:00', 42);",
    )
    .unwrap();
    drop(file);
    let target = Db::fresh("copy_sqlite_to");
    let from = format!("sqlite://{}", path.display());
    let (code, out) = copy(&from, &target.conninfo, &["--verify"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out.matches("; verified equal (").count(), 2, "{out}");
    assert!(out.contains("copied 2 tables, 4 rows"), "{out}");
    assert!(
        out.contains("left out: index books_cheap of books: its expression is SQLite's"),
        "{out}"
    );
    assert!(
        out.contains("not copied: trigger books_added, view cheap"),
        "{out}"
    );
    let columns = target.text(
        "SELECT string_agg(attrelid::regclass || '.' || attname || ' ' || format_type(atttypid, atttypmod) \
                || CASE WHEN attnotnull THEN ' not null' ELSE '' END \
                || coalesce(' default ' || pg_get_expr(adbin, adrelid), '') \
                || CASE attidentity WHEN 'd' THEN ' identity' ELSE '' END, E'\\n' ORDER BY attrelid::regclass::text, attnum) \
         FROM pg_attribute LEFT JOIN pg_attrdef ON adrelid = attrelid AND adnum = attnum \
         WHERE attrelid IN ('authors'::regclass, 'books'::regclass) AND attnum > 0 AND NOT attisdropped",
    );
    assert_eq!(
        columns,
        "authors.id bigint not null identity\n\
         authors.name character varying(40) not null\n\
         authors.born date\n\
         authors.active boolean default true\n\
         books.id bigint not null identity\n\
         books.author bigint\n\
         books.title text not null\n\
         books.price numeric(8,2)\n\
         books.cover bytea\n\
         books.score double precision\n\
         books.added timestamp without time zone default CURRENT_TIMESTAMP\n\
         books.meta text"
    );
    let definitions = target.definitions();
    for definition in [
        "constraint authors authors_name_key: UNIQUE (name) valid=true",
        "constraint authors authors_pkey: PRIMARY KEY (id) valid=true",
        "constraint books books_author_fkey: FOREIGN KEY (author) REFERENCES authors(id) ON DELETE CASCADE valid=true",
        "index books_author_title: CREATE UNIQUE INDEX books_author_title ON public.books USING btree (author, title) valid=true",
        "index books_title: CREATE INDEX books_title ON public.books USING btree (title DESC) valid=true",
    ] {
        assert!(definitions.contains(definition), "{definition:?} not in:\n{definitions}");
    }
    assert_eq!(
        target.rows("SELECT t::text FROM books t ORDER BY id"),
        [
            [Some(
                "(1,1,A,9.50,\"\\\\x00ff\",0.1,\"2024-01-02 03:04:05\",x)".to_string()
            )],
            [Some(
                "(2,2,\"B\nline\",,,1e+300,\"2024-01-03 00:00:00\",42)".to_string()
            )],
        ]
    );
    assert_eq!(
        target.text("SELECT string_agg(t::text, ' ' ORDER BY id) FROM authors t"),
        "(1,Ann,1970-01-02,t) (2,\"Bob, \"\"Jr\"\"\",,f)"
    );
    target.exec("INSERT INTO books (title) VALUES ('C')");
    assert_eq!(target.int("SELECT max(id) FROM books"), 3);
}

#[test]
fn a_copy_killed_mid_table_resumes_keeping_the_tables_it_finished() {
    let source = Db::fresh("copy_killed");
    source.exec(
        "CREATE TABLE t1 (id bigint PRIMARY KEY, pad text);
         CREATE TABLE t2 (id bigint PRIMARY KEY, pad text);
         CREATE TABLE t3 (id int PRIMARY KEY);
         INSERT INTO t1 SELECT i, md5(i::text) FROM generate_series(1, 600000) i;
         INSERT INTO t2 SELECT i, md5(i::text) FROM generate_series(1, 500000) i;
         INSERT INTO t3 SELECT generate_series(1, 10);",
    );
    let target = Db::fresh("copy_killed_to");
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_inrush"))
        .args([
            "copy",
            "--from",
            &source.conninfo,
            "--to",
            &target.conninfo,
            "--jobs",
            "1",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // SIGTERM once the first (largest) table's rows are recorded, while the second loads.
    let loaded =
        "SELECT count(*) FROM pg_tables WHERE schemaname = 'inrush' AND tablename = 'copy_ledger'";
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        assert!(
            std::time::Instant::now() < deadline,
            "t1 was never recorded as loaded"
        );
        if target.int(loaded) == 1
            && target.int("SELECT count(*) FROM inrush.copy_ledger WHERE \"table\" = '\"public\".\"t1\"' AND step = 'loaded'") == 1
        {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    // SAFETY: signalling a child process this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let (code, out) = inrush_testkit::finish(child);
    assert_eq!(code, 130, "{out}");
    assert_eq!(
        target.int("SELECT count(*) FROM t2"),
        0,
        "t2's load rolled back"
    );

    let (code, out) = copy(&source.conninfo, &target.conninfo, &["--verify"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("copied public.t1: rows copied by an earlier run"),
        "{out}"
    );
    assert!(out.contains("copied public.t2: 500,000 rows"), "{out}");
    assert_eq!(out.matches("; verified equal (").count(), 3, "{out}");
    for (table, rows) in [("t1", 600000), ("t2", 500000), ("t3", 10)] {
        assert_eq!(
            target.int(&format!("SELECT count(*) FROM {table}")),
            rows,
            "{table}"
        );
        assert_eq!(
            target.int(&format!("SELECT count(*) FROM pg_constraint WHERE conrelid = '{table}'::regclass AND contype = 'p'")),
            1,
            "{table}'s key"
        );
    }
}

#[test]
fn sigterm_ends_a_step_that_waits_and_the_rerun_does_it() {
    let source = Db::fresh("copy_step_waits");
    source
        .exec("CREATE TABLE t (id int PRIMARY KEY); INSERT INTO t SELECT generate_series(1, 10);");
    let target = Db::fresh("copy_step_waits_to");
    // `--check` makes the copy ledger (and nothing else); a session holding it locked makes
    // the copy's first step wait at its record, as a build waits on a lock or runs for minutes.
    let (code, out) = copy(&source.conninfo, &target.conninfo, &["--check"]);
    assert_eq!(code, 0, "{out}");
    let mut holder = postgres::Client::connect(&target.conninfo, postgres::NoTls).unwrap();
    holder
        .batch_execute("BEGIN; LOCK TABLE inrush.copy_ledger IN SHARE MODE")
        .unwrap();
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_inrush"))
        .args(["copy", "--from", &source.conninfo, "--to", &target.conninfo])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let waiting = "SELECT count(*) FROM pg_stat_activity \
                   WHERE wait_event_type = 'Lock' AND query LIKE '%copy_ledger%'";
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while target.int(waiting) == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the copy never waited"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // SAFETY: signalling a child process this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    // Still locked: the copy ends because its statement was cancelled, not because the wait did.
    let (code, out) = inrush_testkit::finish(child);
    assert_eq!(code, 130, "{out}");
    holder.batch_execute("ROLLBACK").unwrap();
    assert_eq!(
        target.text("SELECT coalesce(to_regclass('public.t')::text, 'none')"),
        "none",
        "the step rolled back"
    );
    let (code, out) = copy(&source.conninfo, &target.conninfo, &["--verify"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("; verified equal ("), "{out}");
}

#[test]
fn a_postgresql_database_moves_into_mariadb_with_its_keys_and_numbering() {
    let source = Db::fresh("copy_to_maria");
    source.exec(PG_SOURCE);
    let target = MariaDb::fresh("copy_from_pg");
    let (code, out) = copy(&source.conninfo, &target.url, &["--verify"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("copied 3 tables, 3,502 rows"), "{out}");
    assert_eq!(out.matches("; verified equal (").count(), 3, "{out}");
    for said in [
        "translated: column code: text in a key became VARCHAR(255)",
        "translated: column opened: times with a zone became DATETIME in UTC",
        "translated: generated column email_lower: its values copied",
        "left out: index accounts_rich of sales.accounts: MariaDB has no partial index",
        "left out: index events_body of public.events: MariaDB has no gin index",
        "left out: index accounts_email of sales.accounts: its expression is PostgreSQL's",
        "left out: check accounts_balance_check of sales.accounts",
        "translated: column tier: PostgreSQL's sales.tier became LONGTEXT",
        "translated: column weight: domain public.weight became its base type, without its NOT NULL, default and CHECKs",
        "translated: column level: domain sales.premium became its base type, without its NOT NULL, default and CHECKs",
    ] {
        assert!(out.contains(said), "{said:?} not in:\n{out}");
    }
    let columns = target.rows(
        "SELECT CONCAT_WS(' ', TABLE_NAME, COLUMN_NAME, COLUMN_TYPE, IS_NULLABLE, IFNULL(COLUMN_DEFAULT, '-'), EXTRA) \
         FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME NOT LIKE 'inrush\\_%' \
         ORDER BY TABLE_NAME, ORDINAL_POSITION",
    );
    assert_eq!(
        columns,
        [
            "accounts id int(11) NO - auto_increment",
            "accounts region varchar(255) NO - ",
            "accounts email longtext NO - ",
            "accounts balance decimal(12,2) NO 0.00 ",
            "accounts tags longtext YES NULL ",
            "accounts opened datetime(6) NO current_timestamp(6) ",
            "accounts email_lower longtext YES NULL ",
            "accounts tier longtext NO 'basic' ",
            "accounts tiers longtext YES NULL ",
            "events id bigint(20) NO - auto_increment",
            "events account int(11) YES NULL ",
            "events at datetime(3) NO - ",
            "events body longtext YES NULL ",
            "events weight int(11) YES NULL ",
            "events level longtext YES NULL ",
            "regions code varchar(255) NO - ",
            "regions name varchar(255) NO - ",
        ]
    );
    let keys = target.rows(
        "SELECT CONCAT_WS(' ', TABLE_NAME, INDEX_NAME, NON_UNIQUE, GROUP_CONCAT(COLUMN_NAME ORDER BY SEQ_IN_INDEX)) \
         FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME NOT LIKE 'inrush\\_%' \
         GROUP BY TABLE_NAME, INDEX_NAME, NON_UNIQUE ORDER BY TABLE_NAME, INDEX_NAME",
    );
    assert_eq!(
        keys,
        [
            "accounts accounts_region_fkey 1 region",
            "accounts PRIMARY 0 id",
            "events events_account_fkey 1 account",
            "events PRIMARY 0 id",
            "regions PRIMARY 0 code",
            "regions regions_name_key 0 name",
        ]
    );
    let foreign = target.rows(
        "SELECT CONCAT_WS(' ', CONSTRAINT_NAME, TABLE_NAME, REFERENCED_TABLE_NAME, DELETE_RULE, UPDATE_RULE) \
         FROM information_schema.REFERENTIAL_CONSTRAINTS WHERE CONSTRAINT_SCHEMA = DATABASE() ORDER BY 1",
    );
    assert_eq!(
        foreign,
        [
            "accounts_region_fkey accounts regions NO ACTION CASCADE",
            "events_account_fkey events accounts SET NULL NO ACTION",
        ]
    );
    target.exec("INSERT INTO accounts (region, email) VALUES ('eu', 'new@x.org')");
    assert_eq!(target.rows("SELECT MAX(id) FROM accounts"), ["501"]);
    assert_eq!(
        target.rows("SELECT CONCAT_WS(' ', id, region, tags, opened, email_lower) FROM accounts WHERE id = 1"),
        ["1 us {t1,NULL} 2024-01-01 01:00:00.000000 user1@x.org"]
    );
}

/// MariaDB's DDL commits by itself, so a copy can stop after a table's CREATE TABLE and before
/// its record. The ledger says first which table the copy is making: the rerun takes such a
/// table as its own (emptied and loaded), and makes one whose CREATE never ran.
#[test]
fn a_mariadb_table_made_just_before_a_stop_is_the_reruns_own() {
    let source = Db::fresh("copy_creating");
    source.exec(
        "CREATE TABLE a (id int PRIMARY KEY, v text);
         INSERT INTO a SELECT g, 'v' || g FROM generate_series(1, 100) g;
         CREATE TABLE b (id int PRIMARY KEY);
         INSERT INTO b VALUES (1), (2);",
    );
    let target = MariaDb::fresh("copy_creating_to");
    let (code, out) = copy(&source.conninfo, &target.url, &["--schema-only"]);
    assert_eq!(code, 0, "{out}");
    // What stops right after a's CREATE TABLE and right before b's leave.
    target.exec("DELETE FROM inrush_copy_ledger WHERE step <> 'creating'; DROP TABLE b");
    let (code, out) = copy(&source.conninfo, &target.url, &["--verify"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out.matches("; verified equal (").count(), 2, "{out}");
}

#[test]
fn a_mariadb_database_moves_into_a_sqlite_file() {
    let source = MariaDb::fresh("copy_to_sqlite");
    source.exec(SHOP);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shop.db");
    let to = format!("sqlite://{}", path.display());
    let (code, out) = copy(&source.url, &to, &["--verify", "--jobs", "3"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("copied 3 tables, 9 rows"), "{out}");
    assert_eq!(out.matches("; verified equal (").count(), 3, "{out}");
    assert!(
        out.contains("left out: check total_not_negative of orders"),
        "{out}"
    );
    let file = rusqlite::Connection::open(&path).unwrap();
    let schema: Vec<String> = file
        .prepare("SELECT sql FROM sqlite_schema WHERE name NOT LIKE 'inrush%' AND name NOT LIKE 'sqlite%' AND sql IS NOT NULL ORDER BY name")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        schema,
        [
            "CREATE INDEX \"by_note\" ON \"orders\" (substr(\"note\", 1, 10))",
            "CREATE INDEX \"by_status\" ON \"orders\" (\"status\", \"total\" DESC)",
            "CREATE TABLE \"customers\" (\"id\" INTEGER PRIMARY KEY NOT NULL, \"email\" VARCHAR(80) NOT NULL, \"name\" VARCHAR(40) NOT NULL DEFAULT 'anon', \"joined\" DATETIME DEFAULT CURRENT_TIMESTAMP, \"vip\" BOOLEAN NOT NULL DEFAULT 0)",
            "CREATE UNIQUE INDEX \"email\" ON \"customers\" (\"email\")",
            "CREATE TABLE \"order_lines\" (\"order_id\" INTEGER NOT NULL, \"line\" INTEGER NOT NULL, \"sku\" CHAR(8) NOT NULL, \"qty\" INTEGER NOT NULL DEFAULT '1', PRIMARY KEY (\"order_id\", \"line\"), FOREIGN KEY (\"order_id\") REFERENCES \"orders\" (\"id\") ON DELETE CASCADE ON UPDATE RESTRICT)",
            "CREATE TABLE \"orders\" (\"id\" INTEGER PRIMARY KEY NOT NULL, \"customer_id\" INTEGER NOT NULL, \"status\" TEXT NOT NULL DEFAULT 'new', \"total\" NUMERIC(10,2) NOT NULL, \"note\" TEXT, \"doc\" JSON, FOREIGN KEY (\"customer_id\") REFERENCES \"customers\" (\"id\") ON DELETE CASCADE ON UPDATE RESTRICT)",
            "CREATE INDEX \"orders_customer\" ON \"orders\" (\"customer_id\")",
        ]
    );
    let rows: Vec<String> = file
        .prepare("SELECT id || '|' || customer_id || '|' || status || '|' || total || '|' || quote(note) || '|' || quote(doc) FROM orders ORDER BY id")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        rows,
        [
            "1|1|paid|120.5|'first, \"quoted\"\nline'|'{\"k\": [1, 2]}'",
            "2|1|new|0|NULL|NULL",
            "3|3|sent|99.99|'ünïcödé'|'null'",
        ]
    );
    file.execute("INSERT INTO customers (email) VALUES ('d@x.org')", [])
        .unwrap();
    let id: i64 = file
        .query_row("SELECT max(id) FROM customers", [], |r| r.get(0))
        .unwrap();
    assert_eq!(id, 4);
}

#[test]
fn mariadb_tables_read_one_instant_while_the_source_takes_writes() {
    let source = MariaDb::fresh("copy_maria_instant");
    source.exec(
        "CREATE TABLE a (id BIGINT PRIMARY KEY, pad VARCHAR(200));
         CREATE TABLE b (id BIGINT PRIMARY KEY, pad VARCHAR(200));
         INSERT INTO a SELECT seq, REPEAT('x', 200) FROM seq_1_to_100000;
         INSERT INTO b SELECT seq, REPEAT('y', 200) FROM seq_1_to_100000;
         DELIMITER //
         CREATE PROCEDURE churn() BEGIN
           DECLARE i BIGINT DEFAULT 1;
           WHILE i < 1000000 DO
             START TRANSACTION;
             INSERT INTO a VALUES (100000 + i, 'w'); DELETE FROM a WHERE id = i;
             INSERT INTO b VALUES (100000 + i, 'w'); DELETE FROM b WHERE id = i;
             COMMIT;
             SET i = i + 1;
           END WHILE;
         END//
         DELIMITER ;",
    );
    let mut writer = source.spawn("CALL churn()");
    std::thread::sleep(std::time::Duration::from_millis(300));
    let target = Db::fresh("copy_maria_instant_to");
    let (code, out) = copy(&source.url, &target.conninfo, &["--jobs", "1", "--verify"]);
    let after = source.rows("SELECT MAX(id) FROM a")[0]
        .parse::<i64>()
        .unwrap();
    let churning = source.rows(
        "SELECT ID FROM information_schema.PROCESSLIST \
         WHERE DB = DATABASE() AND ID <> CONNECTION_ID() AND COMMAND = 'Query'",
    );
    for id in &churning {
        let _ = source.try_exec(&format!("KILL {id}"));
    }
    let _ = writer.kill();
    let _ = writer.wait();
    assert_eq!(code, 0, "{out}");
    assert_eq!(churning.len(), 1, "the writer ran through the copy");
    assert!(out.contains("under FLUSH TABLES WITH READ LOCK"), "{out}");
    let differ = target.int("SELECT count(*) FROM (SELECT id FROM a EXCEPT SELECT id FROM b) d")
        + target.int("SELECT count(*) FROM (SELECT id FROM b EXCEPT SELECT id FROM a) d");
    assert_eq!(differ, 0);
    assert_eq!(target.int("SELECT count(*) FROM a"), 100000);
    let copied = target.int("SELECT max(id) FROM a");
    assert!(copied > 100000, "writes before the copy are in it");
    assert!(after > copied, "writes went on after the copy's instant");
}

/// PostgreSQL with its names in mixed case, as a team that quoted everything has it: a
/// schema, an enum, a serial key, a foreign key, a CHECK, a plain and an expression index,
/// and enough rows that the key cuts the reads.
const MIXED_CASE: &str = r#"
  CREATE SCHEMA "Sales";
  CREATE TYPE "Sales"."Mood" AS ENUM ('Happy', 'Sad');
  CREATE TABLE "Sales"."Customers" ("Id" serial PRIMARY KEY, "Email" text NOT NULL UNIQUE);
  CREATE TABLE "Sales"."Orders" (
    "Id" bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    "CustomerId" int NOT NULL REFERENCES "Sales"."Customers" ("Id") ON DELETE CASCADE,
    "Total" numeric(10, 2) NOT NULL CONSTRAINT "Total_Positive" CHECK ("Total" >= 0),
    "Note" text DEFAULT 'Say "Hi"',
    "Mood" "Sales"."Mood");
  CREATE INDEX "Orders_By_Customer" ON "Sales"."Orders" ("CustomerId");
  CREATE INDEX "Orders_Note_Lower" ON "Sales"."Orders" (lower("Note"));
  INSERT INTO "Sales"."Customers" ("Email") SELECT 'c' || g || '@x.org' FROM generate_series(1, 100) g;
  INSERT INTO "Sales"."Orders" ("CustomerId", "Total", "Note", "Mood")
    SELECT 1 + g % 100, g / 100.0, CASE WHEN g % 7 = 0 THEN NULL ELSE 'Note ' || g END,
           CASE WHEN g % 2 = 0 THEN 'Happy' ELSE 'Sad' END::"Sales"."Mood"
    FROM generate_series(1, 600000) g;
  ANALYZE;"#;

#[test]
fn lower_case_names_every_table_column_key_and_type_as_postgresql_folds_them() {
    let source = Db::fresh("copy_lower_from");
    source.exec(MIXED_CASE);
    let target = Db::fresh("copy_lower_to");
    let (code, out) = copy(
        &source.conninfo,
        &target.conninfo,
        &["--lower-case", "--verify", "--connections", "2"],
    );
    assert_eq!(code, 0, "{out}");
    assert_eq!(out.matches("; verified equal (").count(), 2, "{out}");
    assert!(out.contains("copied 2 tables, 600,100 rows"), "{out}");
    // Every name written without quotes now reaches it.
    assert_eq!(
        target.rows(
            "SELECT count(*)::text, sum(total)::text, count(note)::text, min(mood)::text \
             FROM sales.orders o JOIN sales.customers c ON c.id = o.customerid"
        ),
        [vec![
            Some("600000".to_string()),
            Some("1800003000.00".to_string()),
            Some("514286".to_string()),
            Some("Happy".to_string())
        ]]
    );
    let names = target.text(
        "SELECT string_agg(x, E'\\n' ORDER BY x) FROM ( \
           SELECT 'index ' || pg_get_indexdef(indexrelid) AS x FROM pg_index \
            WHERE indrelid IN ('sales.orders'::regclass, 'sales.customers'::regclass) \
           UNION ALL SELECT 'constraint ' || conname || ': ' || pg_get_constraintdef(oid) \
             FROM pg_constraint WHERE connamespace = 'sales'::regnamespace \
           UNION ALL SELECT 'type ' || format_type(oid, NULL) FROM pg_type \
            WHERE typnamespace = 'sales'::regnamespace AND typtype = 'e' \
           UNION ALL SELECT 'default ' || pg_get_expr(adbin, adrelid) FROM pg_attrdef \
            WHERE adrelid = 'sales.orders'::regclass) q",
    );
    for said in [
        "index CREATE INDEX orders_by_customer ON sales.orders USING btree (customerid)",
        "index CREATE INDEX orders_note_lower ON sales.orders USING btree (lower(note))",
        "constraint total_positive: CHECK ((total >= (0)::numeric))",
        "constraint orders_customerid_fkey: FOREIGN KEY (customerid) REFERENCES sales.customers(id) ON DELETE CASCADE",
        "type sales.mood",
        "default 'Say \"Hi\"'::text",
    ] {
        assert!(names.contains(said), "{said:?} not in:\n{names}");
    }
    // Numbering goes on past the copied maximum.
    target.exec("INSERT INTO sales.customers (email) VALUES ('new@x.org')");
    target.exec("INSERT INTO sales.orders (customerid, total) VALUES (1, 1)");
    assert_eq!(target.int("SELECT max(id) FROM sales.customers"), 101);
    assert_eq!(target.int("SELECT max(id) FROM sales.orders"), 600001);
    // A rerun of the same copy finds its own tables by their lowered names.
    let (code, out) = copy(&source.conninfo, &target.conninfo, &["--lower-case"]);
    assert_eq!(code, 0, "{out}");
}

#[test]
fn lower_case_from_mariadb_reaches_postgresql_as_its_users_write_names() {
    let source = MariaDb::fresh("copy_lower_maria");
    source.exec(
        "CREATE TABLE `Customers` (`Id` INT AUTO_INCREMENT PRIMARY KEY, `Email` VARCHAR(80) NOT NULL UNIQUE);
         CREATE TABLE `Orders` (
           `Id` BIGINT AUTO_INCREMENT PRIMARY KEY,
           `CustomerId` INT NOT NULL,
           `Total` DECIMAL(10,2) NOT NULL,
           `Note` TEXT,
           CONSTRAINT `Total_Positive` CHECK (`Total` >= 0),
           CONSTRAINT `Orders_Customer` FOREIGN KEY (`CustomerId`) REFERENCES `Customers` (`Id`),
           INDEX `By_Note` (`Note`(10)));
         INSERT INTO `Customers` (`Email`) VALUES ('a@x.org'), ('b@x.org');
         INSERT INTO `Orders` (`CustomerId`, `Total`, `Note`) VALUES (1, 5, 'Hi `Total`'), (2, 7.5, NULL);",
    );
    let target = Db::fresh("copy_lower_maria_to");
    let (code, out) = copy(&source.url, &target.conninfo, &["--lower-case", "--verify"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out.matches("; verified equal (").count(), 2, "{out}");
    assert!(!out.contains("left out: check"), "{out}");
    assert_eq!(
        target.rows("SELECT o.id::text, email, total::text, note FROM orders o JOIN customers c ON c.id = o.customerid ORDER BY 1"),
        [
            vec![Some("1".into()), Some("a@x.org".into()), Some("5.00".into()), Some("Hi `Total`".into())],
            vec![Some("2".into()), Some("b@x.org".into()), Some("7.50".into()), None],
        ]
    );
    assert_eq!(
        target.text(
            "SELECT string_agg(conname || ' ' || pg_get_constraintdef(oid), E'\\n' ORDER BY conname) \
             FROM pg_constraint WHERE conrelid = 'orders'::regclass AND contype <> 'n'"
        ),
        "orders_customer FOREIGN KEY (customerid) REFERENCES customers(id) ON UPDATE RESTRICT ON DELETE RESTRICT\n\
         orders_pkey PRIMARY KEY (id)\n\
         total_positive CHECK ((total >= (0)::numeric))"
    );
    assert_eq!(
        target.text("SELECT pg_get_indexdef('by_note'::regclass)"),
        "CREATE INDEX by_note ON public.orders USING btree (\"left\"(note, 10))"
    );
    target.exec("INSERT INTO orders (customerid, total) VALUES (1, 1)");
    assert_eq!(target.int("SELECT max(id) FROM orders"), 3);
}

#[test]
fn lower_case_refuses_two_names_that_would_become_one_before_it_changes_anything() {
    let source = Db::fresh("copy_lower_clash");
    source.exec(
        r#"CREATE TABLE "T" (id int); CREATE TABLE t (id int); CREATE TABLE u (id int, "Id" int)"#,
    );
    let target = Db::fresh("copy_lower_clash_to");
    let (code, out) = copy(&source.conninfo, &target.conninfo, &["--lower-case"]);
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("--lower-case: tables public.T and public.t would both be public.t"),
        "{out}"
    );
    let (code, out) = copy(
        &source.conninfo,
        &target.conninfo,
        &["--lower-case", "--tables", "u"],
    );
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("columns id and Id would both be id"), "{out}");
    assert_eq!(
        target.int("SELECT count(*) FROM pg_class WHERE relnamespace = 'public'::regnamespace"),
        0
    );
}

/// The case a SQLite file's CREATE TABLE spelled, into MariaDB (whose table names are
/// case-sensitive on Linux), in two runs: the schema, then the rows into what it made.
#[test]
fn lower_case_from_sqlite_into_mariadb_in_two_runs_schema_then_rows() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("Mixed.db");
    let file = rusqlite::Connection::open(&path).unwrap();
    file.execute_batch(
        "CREATE TABLE Authors (Id INTEGER PRIMARY KEY, Name VARCHAR(40) NOT NULL UNIQUE);
         CREATE TABLE \"Books\" (Id INTEGER PRIMARY KEY, AuthorId INTEGER REFERENCES Authors (Id),
           [Title] TEXT NOT NULL, `Qty` INTEGER CHECK (Qty > 0));
         CREATE INDEX Books_Title ON Books (Title);
         INSERT INTO Authors VALUES (1, 'Ann'), (2, 'Bob');
         INSERT INTO Books VALUES (1, 1, 'A', 3), (2, 2, 'B', 1), (3, 1, 'C', NULL);",
    )
    .unwrap();
    drop(file);
    let from = format!("sqlite://{}", path.display());
    let target = MariaDb::fresh("copy_lower_sqlite");
    let (code, out) = copy(&from, &target.url, &["--lower-case", "--schema-only"]);
    assert_eq!(code, 0, "{out}");
    let (code, out) = copy(
        &from,
        &target.url,
        &["--lower-case", "--data-only", "--verify"],
    );
    assert_eq!(code, 0, "{out}");
    assert_eq!(out.matches("; verified equal (").count(), 2, "{out}");
    assert_eq!(
        target.rows(
            "SELECT CONCAT_WS(' ', TABLE_NAME, INDEX_NAME, GROUP_CONCAT(COLUMN_NAME ORDER BY SEQ_IN_INDEX)) \
             FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME IN ('authors', 'books') \
             GROUP BY TABLE_NAME, INDEX_NAME ORDER BY 1"
        ),
        [
            "authors authors_name_key name",
            "authors PRIMARY id",
            "books books_authorid_fkey authorid",
            "books books_title title",
            "books PRIMARY id",
        ]
    );
    assert_eq!(
        target.rows("SELECT CONCAT_WS(' ', b.id, a.name, b.title, b.qty) FROM books b JOIN authors a ON a.id = b.authorid ORDER BY b.id"),
        ["1 Ann A 3", "2 Bob B 1", "3 Ann C"]
    );
}

/// A user with every right on its database but no RELOAD (what a hosted MariaDB often gives)
/// cannot take the global read lock: the copy opens its snapshots one after another, says so,
/// and still copies and verifies.
#[test]
fn a_mariadb_user_without_reload_copies_with_the_weaker_image_said() {
    let source = MariaDb::fresh("copy_no_reload");
    source.exec(
        "CREATE TABLE a (id INT PRIMARY KEY, v VARCHAR(10));
         INSERT INTO a SELECT seq, CONCAT('v', seq) FROM seq_1_to_1000;
         CREATE TABLE b (id INT PRIMARY KEY, a INT REFERENCES a (id));
         INSERT INTO b SELECT seq, seq FROM seq_1_to_10;",
    );
    let user = &source.name;
    source.exec(&format!(
        "CREATE USER '{user}'@'%' IDENTIFIED BY 'pw'; GRANT ALL ON `{user}`.* TO '{user}'@'%'"
    ));
    let (_, at) = source.url.split_once('@').expect("user@host in the URL");
    let url = format!("mysql://{user}:pw@{at}");
    let target = Db::fresh("copy_no_reload_to");
    let (code, out) = copy(&url, &target.conninfo, &["--verify"]);
    source.exec(&format!("DROP USER '{user}'@'%'"));
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("one after another (no RELOAD privilege for FLUSH TABLES WITH READ LOCK)"),
        "{out}"
    );
    assert!(!out.contains("pw@"), "{out}");
    assert_eq!(out.matches("; verified equal (").count(), 2, "{out}");
}

/// As `sigterm_ends_a_step_that_waits_and_the_rerun_does_it`, on MariaDB, whose DDL commits
/// by itself and whose wait ends only by `KILL QUERY` from another session; and a signal while
/// the plan waits to read the ledger ends the copy at once, nothing changed.
#[test]
fn sigterm_ends_a_mariadb_step_that_waits_and_the_rerun_does_it() {
    let source = Db::fresh("copy_maria_step_waits");
    source
        .exec("CREATE TABLE t (id int PRIMARY KEY); INSERT INTO t SELECT generate_series(1, 10);");
    let target = MariaDb::fresh("copy_maria_step_waits_to");
    let (code, out) = copy(&source.conninfo, &target.url, &["--check"]);
    assert_eq!(code, 0, "{out}");
    let held = "SELECT ID FROM information_schema.PROCESSLIST \
                WHERE DB = DATABASE() AND INFO LIKE 'SELECT SLEEP%'";
    let waiting = "SELECT COUNT(*) FROM information_schema.PROCESSLIST \
                   WHERE DB = DATABASE() AND STATE LIKE 'Waiting for table metadata lock%'";
    // Write-locked, the ledger keeps the plan from reading it; read-locked, it lets the plan
    // read it and the first step's record waits.
    for (lock, said) in [
        ("WRITE", "stopped before anything was changed"),
        ("READ", "stopping: each table's load rolls back"),
    ] {
        let mut holder = target.spawn(&format!(
            "LOCK TABLES inrush_copy_ledger {lock}; SELECT SLEEP(600)"
        ));
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while target.rows(held).is_empty() {
            assert!(std::time::Instant::now() < deadline, "{lock}: never locked");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let child = std::process::Command::new(env!("CARGO_BIN_EXE_inrush"))
            .args(["copy", "--from", &source.conninfo, "--to", &target.url])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        while target.rows(waiting) == ["0"] {
            assert!(
                std::time::Instant::now() < deadline,
                "{lock}: the copy never waited"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        // SAFETY: signalling a child process this test started.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        // Still locked: the copy ends because it was told to, not because the wait did.
        let (code, out) = inrush_testkit::finish(child);
        assert_eq!(code, 130, "{lock}: {out}");
        assert!(out.contains(said), "{lock}: {said:?} not in {out}");
        for id in target.rows(held) {
            target.exec(&format!("KILL {id}"));
        }
        holder.wait().unwrap();
    }
    assert_eq!(target.rows("SHOW TABLES LIKE 't'"), Vec::<String>::new());
    let (code, out) = copy(&source.conninfo, &target.url, &["--verify"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("; verified equal ("), "{out}");
}

/// Names that break SQL built naively: both quote characters, a semicolon, a comment, `$$`, a
/// backslash, Unicode, spaces inside and at the end.
const ODD_SCHEMA: &str = r#"s"; -- $$ \ ü"#;

/// Two tables of [`ODD_SCHEMA`] whose every name is odd: a numbered key, a unique column, a
/// foreign key between them, an index.
fn odd_source() -> String {
    let s = format!("\"{}\"", ODD_SCHEMA.replace('"', "\"\""));
    format!(
        r#"CREATE SCHEMA {s};
           CREATE TABLE {s}."p'x"" ; " (id serial PRIMARY KEY, "n""; $$" text UNIQUE, "ü " int);
           CREATE TABLE {s}."c;--" (id int PRIMARY KEY, "p id" int REFERENCES {s}."p'x"" ; " (id), "\" text);
           CREATE INDEX "i""; -- ü" ON {s}."c;--" ("\");
           INSERT INTO {s}."p'x"" ; " ("n""; $$", "ü ") SELECT 'n' || i, i FROM generate_series(1, 50) i;
           INSERT INTO {s}."c;--" SELECT i, i % 50 + 1, 'it''s \ ' || i FROM generate_series(1, 80) i;"#
    )
}

/// The odd schema's columns, keys and indexes, as text.
fn odd_schema_of(db: &Db) -> String {
    let sql = format!(
        "WITH n AS (SELECT oid FROM pg_namespace WHERE nspname = '{}') \
         SELECT string_agg(x, E'\\n' ORDER BY x) FROM ( \
           SELECT 'column ' || attrelid::regclass || '.' || quote_ident(attname) || ' ' \
                  || format_type(atttypid, atttypmod) || CASE WHEN attnotnull THEN ' not null' ELSE '' END AS x \
             FROM pg_attribute JOIN pg_class c ON c.oid = attrelid \
            WHERE c.relkind = 'r' AND c.relnamespace = (SELECT oid FROM n) AND attnum > 0 AND NOT attisdropped \
           UNION ALL SELECT 'index ' || pg_get_indexdef(indexrelid) FROM pg_index \
            WHERE indrelid IN (SELECT oid FROM pg_class WHERE relnamespace = (SELECT oid FROM n)) \
           UNION ALL SELECT 'constraint ' || conrelid::regclass || ' ' || quote_ident(conname) || ': ' \
                  || pg_get_constraintdef(oid) FROM pg_constraint WHERE connamespace = (SELECT oid FROM n)) q",
        ODD_SCHEMA.replace('\'', "''")
    );
    db.text(&sql)
}

fn odd_rows_of(db: &Db) -> Vec<Vec<Option<String>>> {
    let s = format!("\"{}\"", ODD_SCHEMA.replace('"', "\"\""));
    let mut all = db.rows(&format!(
        r#"SELECT t::text FROM {s}."p'x"" ; " t ORDER BY 1"#
    ));
    all.extend(db.rows(&format!(r#"SELECT t::text FROM {s}."c;--" t ORDER BY 1"#)));
    all
}

/// A PostgreSQL database whose schema, tables, columns, keys and index have odd names copies
/// into another with every name, key and row as it was, verified; its numbering goes on.
#[test]
fn odd_names_copy_from_postgresql_into_postgresql_as_they_were() {
    let source = Db::fresh("copy_odd_from");
    source.exec(&odd_source());
    let target = Db::fresh("copy_odd_to");
    let (code, out) = copy(&source.conninfo, &target.conninfo, &["--verify"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out.matches("; verified equal (").count(), 2, "{out}");
    let schema = odd_schema_of(&source);
    assert_eq!(schema.lines().count(), 16, "{schema}");
    assert_eq!(odd_schema_of(&target), schema);
    assert_eq!(odd_rows_of(&target), odd_rows_of(&source));
    let s = format!("\"{}\"", ODD_SCHEMA.replace('"', "\"\""));
    target.exec(&format!(
        r#"INSERT INTO {s}."p'x"" ; " ("n""; $$") VALUES ('new')"#
    ));
    assert_eq!(
        target.int(&format!(r#"SELECT max(id) FROM {s}."p'x"" ; ""#)),
        51
    );
}

/// MariaDB tables and columns with odd names (a backtick too; MariaDB allows no name to end in
/// a space) reach PostgreSQL with every name, key and row, verified.
#[test]
fn odd_names_copy_from_mariadb_into_postgresql_as_they_were() {
    let source = MariaDb::fresh("copy_odd_maria");
    source.exec(
        r#"CREATE TABLE `p'x"; -- $$ \ ü` (id INT AUTO_INCREMENT PRIMARY KEY, `n"; $$` VARCHAR(20) UNIQUE, `a``b ü` INT);
           CREATE TABLE `c;--` (id INT PRIMARY KEY, `p id` INT, `\` TEXT,
             CONSTRAINT `f"k; $$` FOREIGN KEY (`p id`) REFERENCES `p'x"; -- $$ \ ü` (id), INDEX `i"; -- ü` (`\`(5)));
           INSERT INTO `p'x"; -- $$ \ ü` (`n"; $$`, `a``b ü`) VALUES ('one', 1), ('two', 2), ('it''s', NULL);
           INSERT INTO `c;--` VALUES (1, 1, 'a \\ b'), (2, 3, NULL), (3, NULL, 'ü');"#,
    );
    let target = Db::fresh("copy_odd_maria_to");
    let (code, out) = copy(&source.url, &target.conninfo, &["--verify"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out.matches("; verified equal (").count(), 2, "{out}");
    let p = r#""p'x""; -- $$ \ ü""#;
    let columns = target.text(&format!(
        r#"SELECT string_agg(quote_ident(attname), ',' ORDER BY attnum) FROM pg_attribute
            WHERE attrelid = '{}'::regclass AND attnum > 0"#,
        p.replace('\'', "''")
    ));
    assert_eq!(columns, r#"id,"n""; $$","a`b ü""#);
    let keys = target.text(
        "SELECT string_agg(conname || ' ' || contype::text, ',' ORDER BY conname) FROM pg_constraint \
          WHERE conrelid = '\"c;--\"'::regclass",
    );
    assert!(keys.contains("f\"k; $$ f"), "{keys}");
    assert_eq!(
        target.rows(&format!(r#"SELECT t::text FROM {p} t ORDER BY id"#)),
        vec![
            vec![Some("(1,one,1)".to_string())],
            vec![Some("(2,two,2)".to_string())],
            vec![Some("(3,it's,)".to_string())],
        ]
    );
    assert_eq!(
        target.text(r#"SELECT string_agg(coalesce("\", '-'), '|' ORDER BY id) FROM "c;--""#),
        r#"a \ b|-|ü"#
    );
}

/// Names MariaDB cannot hold (ending in a space) are refused before anything changes, each
/// named, where the server would refuse the first part way through the copy.
#[test]
fn names_mariadb_cannot_hold_are_refused_before_a_copy_changes_anything() {
    let source = Db::fresh("copy_odd_to_maria");
    source.exec(&odd_source());
    let target = MariaDb::fresh("copy_odd_maria_in");
    let (code, out) = copy(&source.conninfo, &target.url, &[]);
    assert_eq!(code, 2, "{out}");
    for said in [
        "MariaDB cannot hold these names as they are",
        r#"table "p'x" ; " of s"; -- $$ \ ü.p'x" ; : a name there cannot end in a space"#,
        r#"column "ü " of"#,
        "--exclude",
    ] {
        assert!(out.contains(said), "{said:?} not in:\n{out}");
    }
    assert!(target.rows("SHOW TABLES").is_empty());
}
