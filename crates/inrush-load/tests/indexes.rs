//! Indexes and foreign keys dropped for a load come back exactly as they were: after a
//! successful load, after a failed one, and after a loader that died (through `recover` or the
//! next load); a foreign key the new rows break is reported and left NOT VALID.

mod support;

use inrush_core::Silent;
use inrush_load::plan::{AfterLoad, IndexAction, Maintenance};
use inrush_load::Error;
use inrush_postgres::load as pipeline;

use inrush_postgres::ddl;
use support::{fresh_db, write_input, TestDb};

const TABLE: &str =
    "CREATE TABLE t (id int PRIMARY KEY, code text UNIQUE, name text, qty int, day date);
     CREATE INDEX t_name_idx ON t (name);
     CREATE INDEX t_qty_day_idx ON t (qty DESC, day) WHERE qty > 0;
     CREATE INDEX t_lower_name_idx ON t (lower(name));
     INSERT INTO t VALUES (0, 'zero', 'seed', 1, '2024-01-01');";

/// Every index of `t` with its full definition, sorted.
fn definitions(db: &mut TestDb) -> Vec<String> {
    let rows = db
        .client
        .query(
            "SELECT indexname || ': ' || indexdef FROM pg_indexes WHERE tablename = 't' ORDER BY 1",
            &[],
        )
        .unwrap();
    rows.iter().map(|r| r.get(0)).collect()
}

/// What a loader killed right after its drop leaves behind: the chosen indexes (and, with
/// `foreign_keys`, the foreign keys) of `t` journaled and dropped.
fn drop_like_a_dead_loader(
    db: &TestDb,
    pick: fn(&inrush_postgres::IndexInfo) -> bool,
    foreign_keys: bool,
) -> Vec<ddl::JournalEntry> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let client = db.target.connect().await.unwrap();
        let table = inrush_postgres::TableInfo::read(&client, "t")
            .await
            .unwrap();
        let indexes: Vec<_> = table
            .indexes(&client)
            .await
            .unwrap()
            .into_iter()
            .filter(&pick)
            .collect();
        let fks = if foreign_keys {
            table.foreign_keys(&client).await.unwrap()
        } else {
            Vec::new()
        };
        ddl::journal_and_drop(&client, &table, &indexes, &fks, &[])
            .await
            .unwrap()
    })
}

fn journal_len(db: &mut TestDb) -> i64 {
    let exists: bool = db
        .client
        .query_one("SELECT to_regclass('inrush.ddl_journal') IS NOT NULL", &[])
        .unwrap()
        .get(0);
    if !exists {
        return 0;
    }
    db.count("inrush.ddl_journal")
}

fn rows(n: usize, bad_at: Option<usize>) -> Vec<u8> {
    (1..=n)
        .flat_map(|i| {
            let qty = if Some(i) == bad_at {
                "oops".to_string()
            } else {
                (i % 7).to_string()
            };
            format!("{i},c{i},name {i},{qty},2024-02-{:02}\n", i % 28 + 1).into_bytes()
        })
        .collect()
}

#[test]
fn secondary_indexes_are_rebuilt_identically_and_constraints_kept() {
    let mut db = fresh_db();
    db.exec(TABLE);
    let before = definitions(&mut db);
    let (_dir, path) = write_input(&rows(5000, None), "csv");
    let summary = db.load(&db.load_options(&path, "t"), &Silent).unwrap();
    let actions: Vec<(&str, IndexAction)> = summary
        .plan
        .indexes
        .iter()
        .map(|d| (d.name.as_str(), d.action))
        .collect();
    assert_eq!(
        actions,
        [
            ("t_code_key", IndexAction::Keep),
            ("t_lower_name_idx", IndexAction::Rebuild),
            ("t_name_idx", IndexAction::Rebuild),
            ("t_pkey", IndexAction::Keep),
            ("t_qty_day_idx", IndexAction::Rebuild),
        ]
    );
    assert_eq!(definitions(&mut db), before);
    assert_eq!(journal_len(&mut db), 0);
    assert_eq!(db.count("t"), 5001);
    // The rebuilt indexes are valid, and VACUUM (ANALYZE) ran: the default for an indexed
    // table that is mostly new rows.
    assert_eq!(db.count("pg_index i JOIN pg_class c ON c.oid = i.indrelid WHERE c.relname = 't' AND NOT i.indisvalid"), 0);
    assert_eq!(
        db.count(
            "pg_stat_user_tables WHERE relname = 't' AND vacuum_count = 1 AND analyze_count = 1"
        ),
        1
    );
    assert!(summary.phases.maintain > 0.0);
}

/// `--after`: what runs after the load is the user's to choose. (The VACUUM is not checked
/// through the visibility map: the test server commits asynchronously, and PostgreSQL marks no
/// page all-visible before the inserting commit is flushed.)
#[test]
fn after_the_load_runs_what_was_asked() {
    for (after, expected, vacuums, analyzes) in [
        (AfterLoad::VacuumAnalyze, Maintenance::VacuumAnalyze, 1, 1),
        (AfterLoad::Analyze, Maintenance::Analyze, 0, 1),
        (AfterLoad::Nothing, Maintenance::None, 0, 0),
    ] {
        let mut db = fresh_db();
        db.exec(TABLE);
        let (_dir, path) = write_input(&rows(1000, None), "csv");
        let mut opts = db.load_options(&path, "t");
        opts.plan.after = after;
        let summary = db.load(&opts, &Silent).unwrap();
        assert_eq!(summary.plan.after, expected);
        assert_eq!(
            db.count(&format!(
                "pg_stat_user_tables WHERE relname = 't' AND vacuum_count = {vacuums} AND analyze_count = {analyzes}"
            )),
            1,
            "{after:?}"
        );
    }
}

#[test]
fn a_failed_load_restores_every_index_and_commits_nothing() {
    let mut db = fresh_db();
    db.exec(TABLE);
    let before = definitions(&mut db);
    let (_dir, path) = write_input(&rows(5000, Some(4000)), "csv");
    let err = db.load(&db.load_options(&path, "t"), &Silent).unwrap_err();
    assert!(err.is_bad_input(), "{err}");
    assert_eq!(definitions(&mut db), before);
    assert_eq!(journal_len(&mut db), 0);
    assert_eq!(db.count("t"), 1);
}

#[test]
fn a_dead_loaders_indexes_come_back_through_recover_or_the_next_load() {
    let mut db = fresh_db();
    db.exec(TABLE);
    let before = definitions(&mut db);
    assert_eq!(drop_like_a_dead_loader(&db, |i| !i.unique, false).len(), 3);
    assert_ne!(definitions(&mut db), before);
    let restored = pipeline::recover(&db.target, None, &inrush_core::Silent)
        .unwrap()
        .restored;
    assert_eq!(restored.len(), 3);
    assert_eq!(definitions(&mut db), before);
    assert_eq!(journal_len(&mut db), 0);

    drop_like_a_dead_loader(&db, |i| !i.unique, false);
    let (_dir, path) = write_input(b"7,c7,x,1,2024-01-01\n", "csv");
    let mut opts = db.load_options(&path, "t");
    opts.plan.rebuild_indexes = false;
    db.load(&opts, &Silent).unwrap();
    assert_eq!(
        definitions(&mut db),
        before,
        "the next load recreates what the journal holds"
    );
    assert_eq!(journal_len(&mut db), 0);
}

#[test]
fn small_loads_and_keep_indexes_touch_nothing() {
    let mut db = fresh_db();
    db.exec(TABLE);
    db.exec("INSERT INTO t SELECT g, 'k' || g, 'n' || g, g % 5, '2024-01-01' FROM generate_series(1, 20000) g");
    let (_dir, path) = write_input(b"30001,c,x,1,2024-01-01\n", "csv");
    let summary = db.load(&db.load_options(&path, "t"), &Silent).unwrap();
    assert!(
        summary
            .plan
            .indexes
            .iter()
            .all(|d| d.action == IndexAction::Keep),
        "{}",
        summary.plan
    );
    assert!(
        summary.plan.rule.contains("under 20%"),
        "{}",
        summary.plan.rule
    );
    assert_eq!(journal_len(&mut db), 0);
}

const WITH_FOREIGN_KEY: &str = "CREATE TABLE customers (id int PRIMARY KEY);
     INSERT INTO customers SELECT generate_series(1, 100);
     CREATE TABLE t (id int, customer int CONSTRAINT t_customer_fk REFERENCES customers (id) ON DELETE CASCADE,
                     note text);
     CREATE INDEX t_customer_idx ON t (customer);";

fn constraints(db: &mut TestDb) -> Vec<String> {
    let rows = db
        .client
        .query("SELECT conname || ': ' || pg_get_constraintdef(oid) || ' valid=' || convalidated FROM pg_constraint WHERE conrelid = 't'::regclass ORDER BY 1", &[])
        .unwrap();
    rows.iter().map(|r| r.get(0)).collect()
}

fn orders(n: usize, bad_customer: Option<usize>) -> Vec<u8> {
    (1..=n)
        .flat_map(|i| {
            let customer = if Some(i) == bad_customer {
                999
            } else {
                i % 100 + 1
            };
            format!("{i},{customer},order {i}\n").into_bytes()
        })
        .collect()
}

#[test]
fn foreign_keys_come_back_validated_after_a_load() {
    let mut db = fresh_db();
    db.exec(WITH_FOREIGN_KEY);
    let before = (constraints(&mut db), definitions(&mut db));
    let (_dir, path) = write_input(&orders(3000, None), "csv");
    let summary = db.load(&db.load_options(&path, "t"), &Silent).unwrap();
    assert_eq!(summary.plan.foreign_keys.len(), 1);
    assert_eq!(summary.plan.foreign_keys[0].action, IndexAction::Rebuild);
    assert_eq!((constraints(&mut db), definitions(&mut db)), before);
    assert_eq!(journal_len(&mut db), 0);
}

#[test]
fn a_violated_foreign_key_undoes_the_load_and_comes_back_valid() {
    let mut db = fresh_db();
    db.exec(WITH_FOREIGN_KEY);
    let before = (constraints(&mut db), definitions(&mut db));
    let (_dir, path) = write_input(&orders(3000, Some(1234)), "csv");
    let err = db.load(&db.load_options(&path, "t"), &Silent).unwrap_err();
    let Error::KeyViolated {
        constraint,
        message,
        rows_undone,
        ..
    } = &err
    else {
        panic!("{err:?}")
    };
    assert_eq!((*rows_undone, constraint.as_str()), (3000, "t_customer_fk"));
    assert!(
        message.contains("Key (customer)=(999) is not present in table \"customers\""),
        "{message}"
    );
    // As COPY of the same rows would leave it: nothing loaded, the key valid as before.
    assert_eq!(db.count("t"), 0);
    assert_eq!((constraints(&mut db), definitions(&mut db)), before);
    assert_eq!(journal_len(&mut db), 0);
}

#[test]
fn recover_brings_back_foreign_keys_too() {
    let mut db = fresh_db();
    db.exec(WITH_FOREIGN_KEY);
    let before = constraints(&mut db);
    drop_like_a_dead_loader(&db, |_| false, true);
    assert!(constraints(&mut db).is_empty());
    assert_eq!(
        pipeline::recover(&db.target, Some("t"), &inrush_core::Silent)
            .unwrap()
            .restored
            .len(),
        1
    );
    assert_eq!(constraints(&mut db), before);
}

const EMPTY_WITH_KEYS: &str =
    "CREATE TABLE t (id int PRIMARY KEY, code text UNIQUE, name text, qty int, day date);
     CREATE INDEX t_name_idx ON t (name);";

#[test]
fn an_empty_tables_keys_are_built_after_the_load() {
    let mut db = fresh_db();
    db.exec(EMPTY_WITH_KEYS);
    let before = (definitions(&mut db), constraints(&mut db));
    let (_dir, path) = write_input(&rows(4000, None), "csv");
    let summary = db.load(&db.load_options(&path, "t"), &Silent).unwrap();
    assert!(
        summary
            .plan
            .indexes
            .iter()
            .all(|d| d.action == IndexAction::Rebuild),
        "{}",
        summary.plan
    );
    assert_eq!((definitions(&mut db), constraints(&mut db)), before);
    assert_eq!(db.count("t"), 4000);
    assert_eq!(journal_len(&mut db), 0);
}

#[test]
fn a_duplicate_key_undoes_the_load_and_names_the_key() {
    let mut db = fresh_db();
    db.exec(EMPTY_WITH_KEYS);
    let before = (definitions(&mut db), constraints(&mut db));
    let mut data = rows(4000, None);
    data.extend_from_slice(b"17,c-dup,again,1,2024-03-01\n");
    let (_dir, path) = write_input(&data, "csv");
    let err = db.load(&db.load_options(&path, "t"), &Silent).unwrap_err();
    let Error::KeyViolated {
        constraint,
        message,
        rows_undone,
        ..
    } = &err
    else {
        panic!("{err:?}")
    };
    assert_eq!((constraint.as_str(), *rows_undone), ("t_pkey", 4001));
    assert!(message.contains("Key (id)=(17) is duplicated"), "{message}");
    assert!(err.is_bad_input());
    assert_eq!(db.count("t"), 0, "the load was undone");
    assert_eq!((definitions(&mut db), constraints(&mut db)), before);
    assert_eq!(journal_len(&mut db), 0);
}

#[test]
fn plan_reports_every_kind_of_hidden_work() {
    let mut db = fresh_db();
    db.exec(
        "CREATE TABLE customers (id int PRIMARY KEY);
         CREATE TABLE audit (at timestamptz);
         CREATE FUNCTION log_row() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO audit VALUES (now()); RETURN NEW; END $$;
         CREATE TABLE t (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, customer int REFERENCES customers (id),
                         token uuid DEFAULT gen_random_uuid(), seen timestamptz DEFAULT clock_timestamp(), note text CHECK (note <> ''), body text);
         CREATE INDEX t_note_idx ON t (note);
         CREATE TRIGGER t_log AFTER INSERT ON t FOR EACH ROW EXECUTE FUNCTION log_row();
         ALTER TABLE t DISABLE TRIGGER t_log;
         INSERT INTO customers VALUES (1);
         -- Values past ~2 kB that do not compress: out of line, in the TOAST table.
         INSERT INTO t (customer, body) SELECT 1, string_agg(md5(g::text || i::text), '')
           FROM generate_series(1, 4) i, generate_series(1, 200) g GROUP BY i;
         ALTER TABLE t ENABLE TRIGGER t_log;",
    );
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("big.csv");
    std::fs::write(&input, vec![b'x'; 1 << 20]).unwrap();
    let plan = pipeline::plan(
        &db.target,
        &inrush_load::LoadOptions::new("", "t"),
        input.to_str(),
    )
    .unwrap();
    let text: String = plan
        .to_string()
        .lines()
        .filter(|l| !l.trim_start().starts_with("settings:"))
        .map(|l| format!("{l}\n"))
        .collect();
    insta::assert_snapshot!(text);
}

#[test]
fn truncate_replaces_the_rows_atomically_and_writes_them_frozen() {
    let mut db = fresh_db();
    db.exec(TABLE);
    let before = definitions(&mut db);
    let (_d1, bad) = write_input(&rows(3000, Some(2500)), "csv");
    let mut opts = db.load_options(&bad, "t");
    opts.truncate = true;
    assert!(db.load(&opts, &Silent).is_err());
    assert_eq!(
        db.count("t WHERE name = 'seed'"),
        1,
        "a failed load keeps the old rows"
    );
    assert_eq!(definitions(&mut db), before);

    let (_d2, good) = write_input(&rows(3000, None), "csv");
    opts.inputs = vec![good.to_string_lossy().into_owned()];
    let summary = db.load(&opts, &Silent).unwrap();
    assert_eq!((summary.rows, summary.connections), (3000, 1));
    assert_eq!(db.count("t"), 3000, "the old row is gone");
    assert_eq!(summary.plan.after, Maintenance::AnalyzeFrozen);
    // COPY FREEZE marked the pages each batch started empty all-visible (a plain COPY marks
    // none; ANALYZE counts them into relallvisible); the rows themselves are all frozen.
    assert_eq!(
        db.count("pg_class WHERE relname = 't' AND relallvisible > 0"),
        1
    );
    assert_eq!(definitions(&mut db), before);
}

#[test]
fn recover_attaches_a_key_whose_index_was_built_before_the_loader_died() {
    let mut db = fresh_db();
    db.exec(EMPTY_WITH_KEYS);
    let before = (definitions(&mut db), constraints(&mut db));
    drop_like_a_dead_loader(&db, |i| i.constraint.is_some(), false);
    // Step one of the rebuild happened (the unique index), step two (the constraint) did not.
    db.exec("CREATE UNIQUE INDEX t_pkey ON public.t USING btree (id)");
    assert_eq!(
        pipeline::recover(&db.target, Some("t"), &inrush_core::Silent)
            .unwrap()
            .restored
            .len(),
        2
    );
    assert_eq!((definitions(&mut db), constraints(&mut db)), before);
    assert_eq!(journal_len(&mut db), 0);
}

#[test]
fn disabled_triggers_come_back_in_their_own_mode() {
    let mut db = fresh_db();
    db.exec(
        "CREATE TABLE audit (n int);
         CREATE FUNCTION count_row() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN INSERT INTO audit VALUES (1); RETURN NEW; END $$;
         CREATE TABLE t (id int, note text);
         CREATE TRIGGER t_count AFTER INSERT ON t FOR EACH ROW EXECUTE FUNCTION count_row();
         ALTER TABLE t ENABLE ALWAYS TRIGGER t_count;",
    );
    // Without the flag the trigger fires for every row.
    let csv: Vec<u8> = (1..=500)
        .flat_map(|i| format!("{i},n{i}\n").into_bytes())
        .collect();
    let (_d2, path) = write_input(&csv, "csv");
    let mut opts = db.load_options(&path, "t");
    db.load(&opts, &Silent).unwrap();
    assert_eq!(db.count("audit"), 500);
    opts.plan.disable_triggers = true;
    db.load(&opts, &Silent).unwrap();
    assert_eq!(db.count("audit"), 500, "disabled during the load");
    assert_eq!(db.count("t"), 1000);
    assert_eq!(
        db.count("pg_trigger WHERE tgname = 't_count' AND tgenabled = 'A'"),
        1,
        "back to ENABLE ALWAYS"
    );
    assert_eq!(journal_len(&mut db), 0);
}

/// A partitioned table: its secondary indexes are dropped and rebuilt, each partition's index
/// under its own name (a hand-made one too) and attached again; the key stays. The same after
/// a killed loader and `recover`.
#[test]
fn partitioned_indexes_are_rebuilt_partition_by_partition_under_their_names() {
    let mut db = fresh_db();
    db.exec(
        "CREATE TABLE t (id int, code text, name text, qty int, day date, PRIMARY KEY (id, day)) PARTITION BY RANGE (day);
         CREATE TABLE t_jan PARTITION OF t FOR VALUES FROM ('2024-01-01') TO ('2024-02-01');
         CREATE TABLE t_feb PARTITION OF t FOR VALUES FROM ('2024-02-01') TO ('2024-03-01') PARTITION BY HASH (id);
         CREATE TABLE t_feb_0 PARTITION OF t_feb FOR VALUES WITH (modulus 2, remainder 0);
         CREATE TABLE t_feb_1 PARTITION OF t_feb FOR VALUES WITH (modulus 2, remainder 1);
         CREATE INDEX t_name_idx ON t (name);
         CREATE INDEX jan_by_hand ON t_jan (qty);
         CREATE INDEX t_qty_idx ON ONLY t (qty);
         CREATE INDEX feb_qty ON ONLY t_feb (qty);
         CREATE INDEX feb_0_qty ON t_feb_0 (qty);
         CREATE INDEX feb_1_qty ON t_feb_1 (qty);
         ALTER INDEX feb_qty ATTACH PARTITION feb_0_qty;
         ALTER INDEX feb_qty ATTACH PARTITION feb_1_qty;
         ALTER INDEX t_qty_idx ATTACH PARTITION jan_by_hand;
         ALTER INDEX t_qty_idx ATTACH PARTITION feb_qty;",
    );
    let every_index = |db: &mut TestDb| -> Vec<String> {
        db.client
            .query(
                "SELECT indexrelid::regclass::text || ' valid=' || indisvalid || ' ' || pg_get_indexdef(indexrelid) || \
                        coalesce(' parent=' || (SELECT inhparent::regclass::text FROM pg_inherits WHERE inhrelid = indexrelid), '') \
                 FROM pg_index WHERE indrelid IN (SELECT relid FROM pg_partition_tree('t')) ORDER BY 1",
                &[],
            )
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect()
    };
    let before = every_index(&mut db);
    assert_eq!(before.len(), 15, "{before:#?}");
    let data: Vec<u8> = (1..=2000)
        .flat_map(|i| {
            format!(
                "{i},c{i},name {i},{},2024-0{}-{:02}\n",
                i % 7,
                i % 2 + 1,
                i % 28 + 1
            )
            .into_bytes()
        })
        .collect();
    let (_dir, path) = write_input(&data, "csv");
    let summary = db.load(&db.load_options(&path, "t"), &Silent).unwrap();
    assert_eq!(summary.rows, 2000);
    let rebuilt: Vec<String> = summary.plan.rebuilt().into_iter().map(|i| i.name).collect();
    assert_eq!(rebuilt, ["t_name_idx", "t_qty_idx"]);
    assert_eq!(every_index(&mut db), before);
    assert_eq!(journal_len(&mut db), 0);
    assert_eq!(
        db.count("t WHERE qty = 3"),
        286,
        "the rebuilt indexes answer"
    );

    // A loader killed right after the drop: recover puts back the same definitions.
    db.exec("TRUNCATE t");
    drop_like_a_dead_loader(&db, |i| !i.unique, false);
    assert_ne!(every_index(&mut db), before);
    pipeline::recover(&db.target, Some("t"), &inrush_core::Silent).unwrap();
    assert_eq!(every_index(&mut db), before);
}

/// A small load into a large indexed table is sorted by the primary key before it is sent;
/// the rows are the same, and a duplicate key still names the key (not a line: the rows were
/// reordered).
#[test]
fn a_small_load_is_sorted_by_the_kept_primary_key() {
    let mut db = fresh_db();
    db.exec(
        "CREATE TABLE t (id int PRIMARY KEY, code text, day date);
         CREATE INDEX t_code_idx ON t (code);
         INSERT INTO t SELECT g * 2, 'c' || g, date '2024-01-01' + g % 300 FROM generate_series(1, 60000) g;
         ANALYZE t;",
    );
    // Odd keys, in an order far from sorted.
    let data: Vec<u8> = (0..3000u64)
        .map(|i| (i * 7919) % 3000)
        .flat_map(|k| format!("{},n{k},2025-01-{:02}\n", k * 2 + 1, k % 28 + 1).into_bytes())
        .collect();
    let (_dir, path) = write_input(&data, "csv");
    let mut opts = db.load_options(&path, "t");
    opts.block_size = 4096;
    // By default only an index past 64 MiB is worth it; this one is 1.3 MiB.
    let plan = pipeline::plan(
        &db.target,
        &inrush_load::LoadOptions::new("", "t"),
        path.to_str(),
    )
    .unwrap();
    assert!(plan.sort.is_none());
    assert!(
        plan.to_string()
            .contains("t_pkey (1.3 MiB) stays in memory; sorting pays for indexes past 64 MiB"),
        "{plan}"
    );
    opts.plan.sort_min_index_bytes = 0;
    let summary = db.load(&opts, &Silent).unwrap();
    assert_eq!(summary.rows, 3000);
    let sort = summary.plan.sort.as_ref().expect("sorted");
    assert_eq!(
        (sort.index.as_str(), sort.column.as_str()),
        ("t_pkey", "id")
    );
    assert!(summary
        .plan
        .to_string()
        .contains("sort: rows sorted by id (leading key of t_pkey)"));
    assert_eq!(db.count("t WHERE id % 2 = 1"), 3000);
    assert_eq!(
        db.count("t WHERE id % 2 = 1 AND code = 'n' || ((id - 1) / 2)"),
        3000
    );

    // A key that is there already: the server's message names it.
    let (_dir2, dup) = write_input(b"7,x,2025-01-01\n4,y,2025-01-01\n", "csv");
    let mut opts = db.load_options(&dup, "t");
    opts.plan.sort_min_index_bytes = 0;
    let e = db.load(&opts, &Silent).unwrap_err().to_string();
    assert!(e.contains("Key (id)=(4) already exists"), "{e}");
    // With --max-errors the rows keep their order (refused rows are found by their line).
    opts.max_errors = 5;
    let summary = db.load(&opts, &Silent).unwrap();
    assert!(summary.plan.sort.is_none());
    assert_eq!(summary.rows_rejected, 2);
}

/// Everything the catalog holds about the indexes and constraints of `t` (and of its
/// partitions) that a rebuild must bring back, one line per row: every column of `pg_index`, of
/// `pg_class` (for the indexes; the storage counters and relfilenode aside), of `pg_attribute`
/// (statistics targets) and of `pg_constraint`, the comments, the dependencies and the tables'
/// replica identity. Oids are replaced by names (tablespaces included): a rebuilt object has
/// new ones.
fn catalog_snapshot(db: &mut TestDb) -> Vec<String> {
    // Before PostgreSQL 18 a stored expression keeps each node's offset in the statement that
    // made it, which a rebuilt definition's prefix (its SET LOCAL default_tablespace) moves.
    const UNPLACED: &str = "':location -?[0-9]+', ':location', 'g'";
    const TABLES: &str = "(SELECT 't'::regclass UNION SELECT relid FROM pg_partition_tree('t'))";
    let indexes = format!("(SELECT indexrelid FROM pg_index WHERE indrelid IN {TABLES})");
    let constraints = format!("(SELECT oid FROM pg_constraint WHERE conrelid IN {TABLES})");
    let queries = [
        format!(
            "SELECT 'pg_index ' || indexrelid::regclass || ' of ' || indrelid::regclass || ' ' || \
                    regexp_replace((to_jsonb(i) - 'indexrelid' - 'indrelid')::text, {UNPLACED}) \
             FROM pg_index i WHERE indexrelid IN {indexes}"
        ),
        format!(
            "SELECT 'pg_class ' || c.relname || ' tablespace=' || coalesce(s.spcname, '-') || ' ' || \
                    (to_jsonb(c) - 'oid' - 'relfilenode' - 'relpages' - 'reltuples' - 'relallvisible' \
                                 - 'relallfrozen' - 'reltablespace')::text \
             FROM pg_class c LEFT JOIN pg_tablespace s ON s.oid = c.reltablespace \
             WHERE c.oid IN {indexes}"
        ),
        format!(
            "SELECT 'pg_attribute ' || attrelid::regclass || ' ' || (to_jsonb(a) - 'attrelid')::text \
             FROM pg_attribute a WHERE attrelid IN {indexes}"
        ),
        format!(
            "SELECT 'pg_constraint ' || conname || ' of ' || conrelid::regclass || ' index=' || \
                    conindid::regclass || ' references=' || confrelid::regclass || ' parent=' || \
                    coalesce((SELECT p.conname FROM pg_constraint p WHERE p.oid = k.conparentid), '-') || ' ' || \
                    regexp_replace((to_jsonb(k) - 'oid' - 'conrelid' - 'conindid' - 'confrelid' - 'conparentid')::text, {UNPLACED}) \
             FROM pg_constraint k WHERE oid IN {constraints}"
        ),
        format!(
            "SELECT 'comment on ' || pg_describe_object(classoid, objoid, objsubid) || ': ' || description \
             FROM pg_description \
             WHERE (classoid = 'pg_class'::regclass AND objoid IN {indexes}) \
                OR (classoid = 'pg_constraint'::regclass AND objoid IN {constraints})"
        ),
        format!(
            "SELECT 'pg_depend ' || pg_describe_object(classid, objid, objsubid) || ' -> ' || \
                    pg_describe_object(refclassid, refobjid, refobjsubid) || ' ' || deptype::text \
             FROM pg_depend \
             WHERE (classid = 'pg_class'::regclass AND objid IN {indexes}) \
                OR (classid = 'pg_constraint'::regclass AND objid IN {constraints})"
        ),
        format!(
            "SELECT 'table ' || oid::regclass || ' replica identity=' || relreplident::text \
             FROM pg_class WHERE oid IN {TABLES}"
        ),
    ];
    let mut lines: Vec<String> = queries
        .iter()
        .flat_map(|q| {
            db.client
                .query(q.as_str(), &[])
                .unwrap_or_else(|e| panic!("{q}: {e:?}"))
                .into_iter()
                .map(|r| r.get::<_, String>(0))
        })
        .collect();
    lines.sort();
    lines
}

/// Fails, naming the lines lost and gained, when `t`'s catalog is not `before` any more.
fn assert_catalog_is(db: &mut TestDb, before: &[String], when: &str) {
    let after = catalog_snapshot(db);
    if after != before {
        let lost: Vec<&String> = before.iter().filter(|l| !after.contains(l)).collect();
        let gained: Vec<&String> = after.iter().filter(|l| !before.contains(l)).collect();
        panic!("{when}: the catalog changed\nlost: {lost:#?}\ngained: {gained:#?}");
    }
}

/// `n` rows of `t` in [`WHOLE`], ids from `first`, with a bad `qty` at `bad_at`.
fn whole_rows(first: usize, n: usize, bad_at: Option<usize>) -> Vec<u8> {
    (first..first + n)
        .flat_map(|i| {
            let qty = match Some(i) == bad_at {
                true => "oops".to_string(),
                false => (i % 7).to_string(),
            };
            let day = i % 28 + 1;
            format!("{i},c{i},name {i},{qty},2024-02-{day:02},{}\n", i % 100 + 1).into_bytes()
        })
        .collect()
}

/// A table whose indexes and keys have what their definitions leave out: a tablespace
/// (`{space}`), comments on indexes and constraints, statistics targets on expression
/// columns, CLUSTER ON, a replica identity index, an extension dependency, deferrable keys.
const WHOLE: &str = "CREATE TABLE customers (id int PRIMARY KEY);
     INSERT INTO customers SELECT generate_series(1, 100);
     CREATE TABLE t (id int NOT NULL, code text NOT NULL, name text, qty int, day date, customer int,
       CONSTRAINT t_pkey PRIMARY KEY (id) USING INDEX TABLESPACE {space},
       CONSTRAINT t_name_id_key UNIQUE (name, id) DEFERRABLE INITIALLY DEFERRED,
       CONSTRAINT t_customer_fk FOREIGN KEY (customer) REFERENCES customers (id) DEFERRABLE INITIALLY DEFERRED);
     CREATE UNIQUE INDEX t_code_idx ON t (code) TABLESPACE {space};
     CREATE INDEX t_name_idx ON t (name) TABLESPACE {space};
     CREATE INDEX t_qty_idx ON t (qty) TABLESPACE {space} WHERE qty > 0;
     CREATE INDEX t_lower_name_idx ON t (lower(name), (qty + 1));
     ALTER INDEX t_lower_name_idx ALTER COLUMN 1 SET STATISTICS 500;
     ALTER INDEX t_lower_name_idx ALTER COLUMN 2 SET STATISTICS 0;
     ALTER INDEX t_lower_name_idx DEPENDS ON EXTENSION plpgsql;
     COMMENT ON INDEX t_name_idx IS 'names, for the ''search'' page';
     COMMENT ON INDEX t_pkey IS 'the index of the key';
     COMMENT ON CONSTRAINT t_pkey ON t IS 'one row per id';
     COMMENT ON CONSTRAINT t_name_id_key ON t IS 'checked at commit';
     COMMENT ON CONSTRAINT t_customer_fk ON t IS 'whose row';
     ALTER TABLE t CLUSTER ON t_name_idx;
     ALTER TABLE t REPLICA IDENTITY USING INDEX t_code_idx;
     INSERT INTO t VALUES (0, 'zero', 'seed', 1, '2024-01-01', 1);";

/// Indexes and keys dropped for a load come back whole: in their tablespace, with their
/// comments, statistics targets, CLUSTER ON, replica identity, extension dependency and
/// deferrability, after a load that succeeds, after one that fails, and through `recover`
/// after a loader that died.
#[test]
fn rebuilt_definitions_keep_every_property() {
    let mut db = fresh_db();
    let space = tablespace(&mut db);
    db.exec(&WHOLE.replace("{space}", &space));
    let before = catalog_snapshot(&mut db);
    assert!(
        before
            .iter()
            .any(|l| l.contains(&format!("t_name_idx tablespace={space}"))),
        "{before:#?}"
    );

    // (a) A load that drops and rebuilds every index and key it may.
    let (_dir, path) = write_input(&whole_rows(1, 5000, None), "csv");
    let mut opts = db.load_options(&path, "t");
    opts.plan.rebuild_unique = true;
    let summary = db.load(&opts, &Silent).unwrap();
    let rebuilt: Vec<String> = summary.plan.rebuilt().into_iter().map(|i| i.name).collect();
    assert_eq!(
        rebuilt,
        [
            "t_code_idx",
            "t_lower_name_idx",
            "t_name_idx",
            "t_pkey",
            "t_qty_idx"
        ]
    );
    assert_eq!(summary.plan.readded_foreign_keys().len(), 1);
    assert_eq!(db.count("t"), 5001);
    assert_catalog_is(&mut db, &before, "after a load");
    assert_eq!(journal_len(&mut db), 0);

    // (b) A load that fails on a bad row, having dropped the same.
    let (_dir, bad) = write_input(&whole_rows(10_001, 6000, Some(14_000)), "csv");
    let mut opts = db.load_options(&bad, "t");
    opts.plan.rebuild_unique = true;
    let err = db.load(&opts, &Silent).unwrap_err();
    assert!(err.is_bad_input(), "{err}");
    assert_eq!(db.count("t"), 5001, "the failed load committed nothing");
    assert_catalog_is(&mut db, &before, "after a failed load");
    assert_eq!(journal_len(&mut db), 0);

    // (c) A loader that died right after dropping everything, deferrable key included; then
    // `inrush recover`.
    assert_eq!(drop_like_a_dead_loader(&db, |_| true, true).len(), 7);
    assert_ne!(catalog_snapshot(&mut db), before);
    pipeline::recover(&db.target, Some("t"), &inrush_core::Silent).unwrap();
    assert_catalog_is(&mut db, &before, "after recover");
    assert_eq!(journal_len(&mut db), 0);
}

/// The database's name, for the server-wide objects (tablespaces, roles) of one test.
fn database_name(db: &mut TestDb) -> String {
    db.client
        .query_one("SELECT current_database()", &[])
        .unwrap()
        .get(0)
}

/// An in-place tablespace (a directory under pg_tblspc, made by the server) of this test's
/// own: it needs no directory owned by the server's OS user.
fn tablespace(db: &mut TestDb) -> String {
    let space = format!("{}_space", database_name(db));
    db.exec("SET allow_in_place_tablespaces = on");
    db.exec(&format!("CREATE TABLESPACE {space} LOCATION ''"));
    space
}

/// A partitioned table's indexes come back whole too, each partition's index with its own
/// tablespace, comment, statistics target and CLUSTER ON.
#[test]
fn rebuilt_partitioned_indexes_keep_every_property() {
    let mut db = fresh_db();
    let space = tablespace(&mut db);
    db.exec(&format!(
        "CREATE TABLE t (id int, name text, qty int, day date) PARTITION BY RANGE (day);
         CREATE TABLE t_jan PARTITION OF t FOR VALUES FROM ('2024-01-01') TO ('2024-02-01');
         CREATE TABLE t_feb PARTITION OF t FOR VALUES FROM ('2024-02-01') TO ('2024-03-01');
         CREATE INDEX t_qty_idx ON ONLY t (qty) TABLESPACE {space};
         CREATE INDEX jan_qty ON t_jan (qty);
         CREATE INDEX feb_qty ON t_feb (qty) TABLESPACE {space};
         ALTER INDEX t_qty_idx ATTACH PARTITION jan_qty;
         ALTER INDEX t_qty_idx ATTACH PARTITION feb_qty;
         CREATE INDEX t_lower_name_idx ON t (lower(name));
         ALTER INDEX t_jan_lower_idx ALTER COLUMN 1 SET STATISTICS 300;
         COMMENT ON INDEX t_qty_idx IS 'by quantity';
         COMMENT ON INDEX feb_qty IS 'February, by quantity';
         ALTER TABLE t_jan CLUSTER ON jan_qty;"
    ));
    let before = catalog_snapshot(&mut db);
    let data: Vec<u8> = (1..=2000)
        .flat_map(|i| {
            format!(
                "{i},name {i},{},2024-0{}-{:02}\n",
                i % 7,
                i % 2 + 1,
                i % 28 + 1
            )
            .into_bytes()
        })
        .collect();
    let (_dir, path) = write_input(&data, "csv");
    let summary = db.load(&db.load_options(&path, "t"), &Silent).unwrap();
    let rebuilt: Vec<String> = summary.plan.rebuilt().into_iter().map(|i| i.name).collect();
    assert_eq!(rebuilt, ["t_lower_name_idx", "t_qty_idx"]);
    assert_catalog_is(&mut db, &before, "after a load");

    drop_like_a_dead_loader(&db, |i| !i.unique, false);
    pipeline::recover(&db.target, Some("t"), &inrush_core::Silent).unwrap();
    assert_catalog_is(&mut db, &before, "after recover");
    assert_eq!(journal_len(&mut db), 0);
}

/// An index in a tablespace the loading role may not create in could not be built again there:
/// it is kept during the load, and the plan in the summary says why.
#[test]
fn an_index_in_a_tablespace_the_loader_may_not_use_is_kept() {
    let mut db = fresh_db();
    let space = tablespace(&mut db);
    let database = database_name(&mut db);
    let role = format!("{database}_loader");
    db.exec(&format!(
        "CREATE ROLE {role};
         GRANT CREATE ON DATABASE {database} TO {role};
         GRANT CREATE ON SCHEMA public TO {role};
         SET ROLE {role};
         CREATE TABLE t (id int, name text);
         CREATE INDEX t_name_idx ON t (name);
         RESET ROLE;
         ALTER INDEX t_name_idx SET TABLESPACE {space};"
    ));
    let before = catalog_snapshot(&mut db);
    db.target = db.target.with_setting("role", &role);
    let data: Vec<u8> = (1..=2000)
        .flat_map(|i| format!("{i},name {i}\n").into_bytes())
        .collect();
    let (_dir, path) = write_input(&data, "csv");
    let summary = db.load(&db.load_options(&path, "t"), &Silent).unwrap();
    assert!(
        summary.plan.rule.contains(&format!(
            "indexes and keys are kept, though the load is large enough to drop them: permission denied: the current user may not create indexes in tablespace {space}"
        )),
        "{}",
        summary.plan.rule
    );
    assert!(summary
        .plan
        .indexes
        .iter()
        .all(|i| i.action == inrush_load::plan::IndexAction::Keep));
    assert_eq!(db.count("t"), 2000);
    assert_catalog_is(&mut db, &before, "after the load");
}

/// A key `WITHOUT OVERLAPS` is enforced by a GiST index, which `ADD CONSTRAINT ... USING INDEX`
/// refuses: it stays during a load into an empty table, like an exclusion constraint.
#[test]
fn a_key_without_overlaps_stays_during_the_load() {
    let mut db = fresh_db();
    let version: i32 = db
        .client
        .query_one("SELECT current_setting('server_version_num')::int", &[])
        .expect("server version")
        .get(0);
    if version < 180_000 {
        eprintln!("skipped: WITHOUT OVERLAPS keys came in PostgreSQL 18");
        return;
    }
    db.exec(
        "CREATE EXTENSION btree_gist;
         CREATE TABLE t (id int, during daterange, name text, PRIMARY KEY (id, during WITHOUT OVERLAPS));
         CREATE INDEX t_name_idx ON t (name);",
    );
    let before = catalog_snapshot(&mut db);
    let data: Vec<u8> = (1..=2000)
        .flat_map(|i| format!("{i},\"[2024-01-01,2024-02-01)\",name {i}\n").into_bytes())
        .collect();
    let (_dir, path) = write_input(&data, "csv");
    let summary = db.load(&db.load_options(&path, "t"), &Silent).unwrap();
    let rebuilt: Vec<String> = summary.plan.rebuilt().into_iter().map(|i| i.name).collect();
    assert_eq!(rebuilt, ["t_name_idx"]);
    assert_eq!(db.count("t"), 2000);
    assert_catalog_is(&mut db, &before, "after the load");
}
