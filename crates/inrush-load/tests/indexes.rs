//! Indexes dropped for a load come back exactly as they were: after a successful load, after a
//! failed one, and after a loader that died (through `recover` or the next load).

mod support;

use inrush_core::Silent;
use inrush_load::plan::IndexAction;
use inrush_load::{load, pipeline};
use inrush_postgres::ddl;
use support::{fresh_db, write_input, TestDb};

const TABLE: &str = "CREATE TABLE t (id int PRIMARY KEY, code text UNIQUE, name text, qty int, day date);
     CREATE INDEX t_name_idx ON t (name);
     CREATE INDEX t_qty_day_idx ON t (qty DESC, day) WHERE qty > 0;
     CREATE INDEX t_lower_name_idx ON t (lower(name));
     INSERT INTO t VALUES (0, 'zero', 'seed', 1, '2024-01-01');";

/// Every index of `t` with its full definition, sorted.
fn definitions(db: &mut TestDb) -> Vec<String> {
    let rows = db.client.query("SELECT indexname || ': ' || indexdef FROM pg_indexes WHERE tablename = 't' ORDER BY 1", &[]).unwrap();
    rows.iter().map(|r| r.get(0)).collect()
}

fn journal_len(db: &mut TestDb) -> i64 {
    let exists: bool = db.client.query_one("SELECT to_regclass('inrush.ddl_journal') IS NOT NULL", &[]).unwrap().get(0);
    if !exists {
        return 0;
    }
    db.count("inrush.ddl_journal")
}

fn rows(n: usize, bad_at: Option<usize>) -> Vec<u8> {
    (1..=n)
        .flat_map(|i| {
            let qty = if Some(i) == bad_at { "oops".to_string() } else { (i % 7).to_string() };
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
    let summary = load(&db.load_options(&path, "t"), &Silent).unwrap();
    let actions: Vec<(&str, IndexAction)> = summary.plan.indexes.iter().map(|d| (d.name.as_str(), d.action)).collect();
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
    // The rebuilt indexes are valid, and VACUUM (ANALYZE) ran. (Not checked through the
    // visibility map: the test server commits asynchronously, and PostgreSQL marks no page
    // all-visible before the inserting commit is flushed.)
    assert_eq!(db.count("pg_index i JOIN pg_class c ON c.oid = i.indrelid WHERE c.relname = 't' AND NOT i.indisvalid"), 0);
    assert_eq!(db.count("pg_stat_user_tables WHERE relname = 't' AND vacuum_count = 1 AND analyze_count = 1"), 1);
    assert!(summary.phases.maintain > 0.0);
}

#[test]
fn a_failed_load_restores_every_index_and_commits_nothing() {
    let mut db = fresh_db();
    db.exec(TABLE);
    let before = definitions(&mut db);
    let (_dir, path) = write_input(&rows(5000, Some(4000)), "csv");
    let err = load(&db.load_options(&path, "t"), &Silent).unwrap_err();
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
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    // What a loader killed after dropping leaves behind: journal entries, indexes gone.
    let drop_like_a_dead_loader = |db: &TestDb| {
        runtime.block_on(async {
            let client = db.target.connect().await.unwrap();
            let table = inrush_postgres::TableInfo::read(&client, "t").await.unwrap();
            let secondary: Vec<_> = table.indexes(&client).await.unwrap().into_iter().filter(|i| !i.unique).collect();
            ddl::journal_and_drop_indexes(&client, &table, &secondary).await.unwrap()
        })
    };
    assert_eq!(drop_like_a_dead_loader(&db).len(), 3);
    assert_ne!(definitions(&mut db), before);
    let restored = pipeline::recover(&db.target, None).unwrap();
    assert_eq!(restored.len(), 3);
    assert_eq!(definitions(&mut db), before);
    assert_eq!(journal_len(&mut db), 0);

    drop_like_a_dead_loader(&db);
    let (_dir, path) = write_input(b"7,c7,x,1,2024-01-01\n", "csv");
    let mut opts = db.load_options(&path, "t");
    opts.plan.rebuild_indexes = false;
    load(&opts, &Silent).unwrap();
    assert_eq!(definitions(&mut db), before, "the next load recreates what the journal holds");
    assert_eq!(journal_len(&mut db), 0);
}

#[test]
fn small_loads_and_keep_indexes_touch_nothing() {
    let mut db = fresh_db();
    db.exec(TABLE);
    db.exec("INSERT INTO t SELECT g, 'k' || g, 'n' || g, g % 5, '2024-01-01' FROM generate_series(1, 20000) g");
    let (_dir, path) = write_input(b"30001,c,x,1,2024-01-01\n", "csv");
    let summary = load(&db.load_options(&path, "t"), &Silent).unwrap();
    assert!(summary.plan.indexes.iter().all(|d| d.action == IndexAction::Keep), "{}", summary.plan);
    assert!(summary.plan.rule.contains("under 20%"), "{}", summary.plan.rule);
    assert_eq!(journal_len(&mut db), 0);
}
