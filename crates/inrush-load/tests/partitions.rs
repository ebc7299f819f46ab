//! Partitioned tables routed on the client (`--route client`), against the server's own
//! routing: the partition hash against `satisfies_hash_partition` over many random keys of
//! every supported type, and loads whose every row lands in the leaf where the server's COPY
//! into the parent puts it, compared leaf by leaf (`tableoid`) with that COPY in a database of
//! its own.

use inrush_core::Silent;
use inrush_load::{Error, LoadOptions, PartitionRouting};
use inrush_postgres::route::hash::{self, KeyKind};
use inrush_testkit::Db;
use postgres::types::{FromSql, Type};
use std::io::Write;

/// Any value in its binary form.
struct Raw(Vec<u8>);

impl<'a> FromSql<'a> for Raw {
    fn from_sql(_: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(Raw(raw.to_vec()))
    }

    fn accepts(_: &Type) -> bool {
        true
    }
}

/// A small seeded generator (xorshift), so a failure can be replayed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Random values of `type_sql` as text.
fn values(type_sql: &str, rng: &mut Rng, n: usize) -> Vec<String> {
    (0..n)
        .map(|_| {
            let r = rng.next();
            match type_sql {
                "smallint" => (r as i16).to_string(),
                "integer" => (r as i32).to_string(),
                "bigint" => (r as i64).to_string(),
                "boolean" => r.is_multiple_of(2).to_string(),
                "date" => format!(
                    "{:04}-{:02}-{:02}",
                    1 + r % 4000,
                    1 + (r >> 12) % 12,
                    1 + (r >> 20) % 28
                ),
                "timestamp" | "timestamptz" => format!(
                    "{}-{:02}-{:02} {:02}:{:02}:{:02}.{:06}",
                    1900 + r % 300,
                    1 + (r >> 12) % 12,
                    1 + (r >> 20) % 28,
                    (r >> 25) % 24,
                    (r >> 30) % 60,
                    (r >> 36) % 60,
                    (r >> 42) % 1_000_000
                ),
                "uuid" => format!("{:016x}{:016x}", r, rng.next()),
                // Every length from 0 to 40, multibyte characters too.
                _ => (0..r % 41)
                    .map(|i| ['a', 'Z', '7', 'é', '€', ' '][((r >> (i % 60)) % 6) as usize])
                    .collect(),
            }
        })
        .collect()
}

#[test]
fn partition_hash_matches_the_servers() {
    let db = Db::fresh("partitions");
    let mut client = db.target.connect_blocking().unwrap();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let types = [
        ("smallint", KeyKind::Int2),
        ("integer", KeyKind::Int4),
        ("bigint", KeyKind::Int8),
        ("boolean", KeyKind::Bool),
        ("date", KeyKind::Int4),
        ("timestamp", KeyKind::Int8),
        ("timestamptz", KeyKind::Int8),
        ("uuid", KeyKind::Bytes),
        ("text", KeyKind::Bytes),
        ("varchar(60)", KeyKind::Bytes),
    ];
    for (i, (type_sql, kind)) in types.iter().enumerate() {
        // Two key columns: the combination of column hashes is checked too.
        db.exec(&format!(
            "CREATE TABLE h{i} (a {type_sql}, b {type_sql}) PARTITION BY HASH (a, b)"
        ));
        let (a, b) = (
            values(type_sql, &mut rng, 2000),
            values(type_sql, &mut rng, 2000),
        );
        let sql = format!(
            "SELECT CAST(a AS {type_sql}), CAST(b AS {type_sql}) FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS u(a, b, i) ORDER BY i"
        );
        let binary: Vec<(Raw, Raw)> = client
            .query(&sql, &[&a, &b])
            .unwrap()
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect();
        let mut remainders = Vec::new();
        for (n, (x, y)) in binary.iter().enumerate() {
            // Every tenth row has a NULL, which contributes nothing.
            let y = (n % 10 != 0).then_some(&y.0[..]);
            let row = hash::row_hash([(*kind, Some(&x.0[..])), (*kind, y)].into_iter()).unwrap();
            remainders.push((row % 13) as i32);
        }
        let check = format!(
            "SELECT count(*) FILTER (WHERE NOT satisfies_hash_partition('h{i}'::regclass, 13, r, CAST(a AS {type_sql}), CAST(CASE WHEN i % 10 <> 1 THEN b END AS {type_sql}))) \
             FROM unnest($1::text[], $2::text[], $3::int[]) WITH ORDINALITY AS u(a, b, r, i)"
        );
        let wrong: i64 = client
            .query_one(&check, &[&a, &b, &remainders])
            .unwrap()
            .get(0);
        assert_eq!(
            wrong, 0,
            "{type_sql}: {wrong} of 2000 keys hashed otherwise than the server"
        );
    }
}

/// Loads `data` into `table` of `schema` with inrush routing on the client, and with the
/// server's COPY into the parent in a database of its own; every row's leaf must agree.
fn same_leaves_as_copy(
    schema: &str,
    data: &[u8],
    tweak: impl Fn(&mut LoadOptions),
) -> inrush_load::LoadSummary {
    let (ours, model) = (Db::fresh("partitions"), Db::fresh("partitions"));
    ours.exec(schema);
    model.exec(schema);
    model.copy_csv("t", data);
    let (_dir, path) = input(data);
    let mut opts = LoadOptions::new(path.to_str().unwrap(), "t");
    opts.routing = PartitionRouting::Client;
    tweak(&mut opts);
    let summary = inrush_postgres::load::run(&ours.target, &opts, &Silent).unwrap();
    let by_leaf = "SELECT tableoid::regclass::text, t::text FROM t ORDER BY 1, 2";
    assert_eq!(ours.rows(by_leaf), model.rows(by_leaf));
    summary
}

fn input(data: &[u8]) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("input.csv");
    std::fs::File::create(&path)
        .unwrap()
        .write_all(data)
        .unwrap();
    (dir, path)
}

fn routed_by_inrush(summary: &inrush_load::LoadSummary) {
    let routing = summary.plan.routing.as_deref().unwrap_or_default();
    assert!(routing.starts_with("by inrush"), "{routing}");
}

/// Rows of `(id, day, code)`: ids both sides of zero, days over three years, codes from a
/// small set and NULL.
fn rows(n: i64) -> Vec<u8> {
    (0..n)
        .flat_map(|i| {
            let id = (i * 7919) % 20_011 - 10_000;
            let day = format!("{}-{:02}-{:02}", 2023 + i % 3, 1 + i % 12, 1 + i % 28);
            let code = ["a", "b", "c", "it's", "z", ""][(i % 6) as usize];
            format!("{id},{day},{code}\n").into_bytes()
        })
        .collect()
}

#[test]
fn range_on_two_columns_with_minvalue_maxvalue_and_a_default() {
    let summary = same_leaves_as_copy(
        "CREATE TABLE t (id int, day date, code text) PARTITION BY RANGE (id, day);
         CREATE TABLE t_low PARTITION OF t FOR VALUES FROM (MINVALUE, MINVALUE) TO (-5000, '2024-01-01');
         CREATE TABLE t_mid PARTITION OF t FOR VALUES FROM (-5000, '2024-01-01') TO (0, MINVALUE);
         CREATE TABLE t_zero PARTITION OF t FOR VALUES FROM (0, MINVALUE) TO (0, MAXVALUE);
         CREATE TABLE t_high PARTITION OF t FOR VALUES FROM (5000, '2023-06-01') TO (MAXVALUE, MAXVALUE);
         CREATE TABLE t_rest PARTITION OF t DEFAULT;",
        &rows(20_000),
        |_| {},
    );
    routed_by_inrush(&summary);
    assert_eq!(summary.rows, 20_000);
}

#[test]
fn list_with_null_and_default() {
    let summary = same_leaves_as_copy(
        "CREATE TABLE t (id int, day date, code text) PARTITION BY LIST (code);
         CREATE TABLE t_ab PARTITION OF t FOR VALUES IN ('a', 'b');
         CREATE TABLE t_quote PARTITION OF t FOR VALUES IN ('it''s', NULL);
         CREATE TABLE t_rest PARTITION OF t DEFAULT;",
        &rows(5_000),
        |_| {},
    );
    routed_by_inrush(&summary);
}

#[test]
fn hash_on_two_columns_with_mixed_moduli() {
    let summary = same_leaves_as_copy(
        "CREATE TABLE t (id int, day date, code text) PARTITION BY HASH (code, id);
         CREATE TABLE t_0 PARTITION OF t FOR VALUES WITH (modulus 2, remainder 0);
         CREATE TABLE t_1 PARTITION OF t FOR VALUES WITH (modulus 4, remainder 1);
         CREATE TABLE t_3 PARTITION OF t FOR VALUES WITH (modulus 8, remainder 3);
         CREATE TABLE t_7 PARTITION OF t FOR VALUES WITH (modulus 8, remainder 7);",
        &rows(20_000),
        |o| o.connections = 3,
    );
    routed_by_inrush(&summary);
}

#[test]
fn two_levels_range_then_hash_and_list() {
    let summary = same_leaves_as_copy(
        "CREATE TABLE t (id bigint, day date, code varchar(10)) PARTITION BY RANGE (day);
         CREATE TABLE t_2023 PARTITION OF t FOR VALUES FROM ('2023-01-01') TO ('2024-01-01') PARTITION BY HASH (id);
         CREATE TABLE t_2023_0 PARTITION OF t_2023 FOR VALUES WITH (modulus 3, remainder 0);
         CREATE TABLE t_2023_1 PARTITION OF t_2023 FOR VALUES WITH (modulus 3, remainder 1);
         CREATE TABLE t_2023_2 PARTITION OF t_2023 FOR VALUES WITH (modulus 3, remainder 2);
         CREATE TABLE t_2024 PARTITION OF t FOR VALUES FROM ('2024-01-01') TO ('2025-01-01') PARTITION BY LIST (code);
         CREATE TABLE t_2024_a PARTITION OF t_2024 FOR VALUES IN ('a', 'z');
         CREATE TABLE t_2024_rest PARTITION OF t_2024 DEFAULT;
         CREATE TABLE t_later PARTITION OF t DEFAULT;",
        &rows(20_000),
        |_| {},
    );
    routed_by_inrush(&summary);
    assert!(summary
        .plan
        .routing
        .as_deref()
        .unwrap()
        .contains("6 leaf partitions"));
}

/// A foreign leaf under two levels (range, then list): the route to a shard is the same
/// whatever strategy put the leaf there.
#[test]
fn a_foreign_leaf_two_levels_down_gets_the_rows_copy_gives_it() {
    let schema = "CREATE TABLE t (id bigint, day date, code varchar(10)) PARTITION BY RANGE (day);
         CREATE TABLE t_2023 PARTITION OF t FOR VALUES FROM ('2023-01-01') TO ('2024-01-01');
         CREATE TABLE t_2024 PARTITION OF t FOR VALUES FROM ('2024-01-01') TO (MAXVALUE) PARTITION BY LIST (code);
         CREATE TABLE t_2024_a PARTITION OF t_2024 FOR VALUES IN ('a', 'z');
         CREATE FOREIGN TABLE t_2024_b PARTITION OF t_2024 FOR VALUES IN ('b', 'c') SERVER shard_l
           OPTIONS (table_name 'list_b');
         CREATE TABLE t_2024_rest PARTITION OF t_2024 DEFAULT;";
    let with_shard = |db: &Db| {
        let shard = Db::fresh("partitions");
        shard.exec("CREATE TABLE list_b (id bigint, day date, code varchar(10))");
        db.add_foreign_server("shard_l", &shard);
        db.exec(schema);
        shard
    };
    let (ours, model) = (Db::fresh("partitions"), Db::fresh("partitions"));
    let (our_shard, _model_shard) = (with_shard(&ours), with_shard(&model));
    let data = rows(20_000);
    model.copy_csv("t", &data);
    let (_dir, path) = input(&data);
    let opts = LoadOptions::new(path.to_str().unwrap(), "t");
    let summary = inrush_postgres::load::run(&ours.target, &opts, &Silent).unwrap();
    routed_by_inrush(&summary);
    let routing = summary.plan.routing.unwrap();
    assert!(routing.contains("1 of them foreign"), "{routing}");
    assert_eq!(ours.rows(BY_LEAF), model.rows(BY_LEAF));
    assert_eq!(
        our_shard.int("SELECT count(*) FROM list_b"),
        model.int("SELECT count(*) FROM t_2024_b")
    );
}

#[test]
fn resume_into_local_leaves_commits_each_block_with_its_ledger_row() {
    let summary = same_leaves_as_copy(
        "CREATE TABLE t (id int, day date, code text) PARTITION BY HASH (id);
         CREATE TABLE t_0 PARTITION OF t FOR VALUES WITH (modulus 3, remainder 0);
         CREATE TABLE t_1 PARTITION OF t FOR VALUES WITH (modulus 3, remainder 1);
         CREATE TABLE t_2 PARTITION OF t FOR VALUES WITH (modulus 3, remainder 2);",
        &rows(20_000),
        |o| {
            o.resume = true;
            o.block_size = 32 * 1024;
            o.connections = 2;
        },
    );
    let routing = summary.plan.routing.unwrap();
    assert!(
        routing.starts_with("by inrush")
            && routing.ends_with("; --resume: each block's rows committed in one transaction with its row in inrush.load_ledger"),
        "{routing}"
    );
    assert_eq!(summary.rows, 20_000);
    assert!(
        summary.blocks.is_some_and(|b| b.loaded >= 10),
        "{:?}",
        summary.blocks
    );
}

const NO_DEFAULT: &str = "CREATE TABLE t (id int, day date, code text) PARTITION BY RANGE (day);
     CREATE TABLE t_2023 PARTITION OF t FOR VALUES FROM ('2023-01-01') TO ('2024-01-01');
     CREATE TABLE t_2024 PARTITION OF t FOR VALUES FROM ('2024-01-01') TO ('2025-01-01');";

#[test]
fn a_row_no_partition_takes_is_a_bad_row_named_by_its_line() {
    let db = Db::fresh("partitions");
    db.exec(NO_DEFAULT);
    let data = b"1,2023-05-01,a\n2,2024-05-01,b\n3,2025-05-01,c\n4,2023-05-02,d\n";
    let (_dir, path) = input(data);
    let mut opts = LoadOptions::new(path.to_str().unwrap(), "t");
    opts.routing = PartitionRouting::Client;
    let err = inrush_postgres::load::run(&db.target, &opts, &Silent).unwrap_err();
    let Error::BadRow { location, reason } = &err else {
        panic!("not a bad row: {err}");
    };
    assert_eq!(
        reason,
        "no partition of relation \"t\" found for row (Partition key of the failing row contains (day) = (2025-05-01).)"
    );
    assert!(location.to_string().contains(":3"), "{location}");
    assert_eq!(db.int("SELECT count(*) FROM t"), 0, "nothing is loaded");
    // The server refuses the same row in the same words.
    let mut client = db.target.connect_blocking().unwrap();
    let refused = client
        .batch_execute("INSERT INTO t VALUES (3, '2025-05-01', 'c')")
        .unwrap_err();
    let refused = refused.as_db_error().unwrap();
    assert_eq!(
        format!(
            "{} ({})",
            refused.message(),
            refused.detail().unwrap_or_default()
        ),
        *reason
    );
}

#[test]
fn with_max_errors_rows_no_partition_takes_and_bad_values_go_to_the_reject_file() {
    let data =
        b"1,2023-05-01,a\nx,2024-05-01,b\n3,2025-05-01,c\n4,2023-05-02,d\n5,,e\n6,2024-12-31,f\n";
    let (ours, dir) = (Db::fresh("partitions"), tempfile::tempdir().unwrap());
    ours.exec(NO_DEFAULT);
    let (_input, path) = input(data);
    let mut opts = LoadOptions::new(path.to_str().unwrap(), "t");
    opts.routing = PartitionRouting::Client;
    opts.max_errors = 10;
    opts.rejects = Some(dir.path().join("rejects.csv"));
    let summary = inrush_postgres::load::run(&ours.target, &opts, &Silent).unwrap();
    routed_by_inrush(&summary);
    assert_eq!((summary.rows, summary.rows_rejected), (3, 3));
    let rejected = std::fs::read_to_string(dir.path().join("rejects.csv")).unwrap();
    assert_eq!(rejected, "x,2024-05-01,b\n3,2025-05-01,c\n5,,e\n");
    assert_eq!(
        ours.rows("SELECT tableoid::regclass::text, id::text FROM t ORDER BY 2"),
        [["t_2023", "1"], ["t_2023", "4"], ["t_2024", "6"]]
            .map(|r| r.map(|v| Some(v.to_string())).to_vec())
    );
}

#[test]
fn keys_inrush_cannot_route_go_through_the_server_and_the_plan_says_why() {
    let summary = same_leaves_as_copy(
        "CREATE TABLE t (id int, day date, code text) PARTITION BY RANGE ((id + 1));
         CREATE TABLE t_neg PARTITION OF t FOR VALUES FROM (MINVALUE) TO (0);
         CREATE TABLE t_pos PARTITION OF t FOR VALUES FROM (0) TO (MAXVALUE);",
        &rows(1_000),
        |_| {},
    );
    assert_eq!(
        summary.plan.routing.as_deref(),
        Some("by the server (COPY into \"public\".\"t\"): the partition key of \"public\".\"t\" is an expression, which inrush does not evaluate")
    );
    // By default the server routes.
    let summary = same_leaves_as_copy(
        "CREATE TABLE t (id int, day date, code text) PARTITION BY LIST (code);
         CREATE TABLE t_all PARTITION OF t DEFAULT;",
        &rows(100),
        |o| o.routing = PartitionRouting::Server,
    );
    assert!(summary
        .plan
        .routing
        .as_deref()
        .unwrap()
        .starts_with("by the server"));
}

#[test]
fn a_row_a_leaf_refuses_is_named_by_its_line_or_rejected_alone() {
    let db = Db::fresh("partitions");
    db.exec(NO_DEFAULT);
    db.exec("ALTER TABLE t ADD CHECK (id <> 7)");
    let data: Vec<u8> = (1..=40)
        .flat_map(|i| format!("{i},{}-03-{:02},x\n", 2023 + i % 2, i % 28 + 1).into_bytes())
        .collect();
    let (_dir, path) = input(&data);
    let mut opts = LoadOptions::new(path.to_str().unwrap(), "t");
    opts.routing = PartitionRouting::Client;
    opts.block_size = 64;
    let err = inrush_postgres::load::run(&db.target, &opts, &Silent).unwrap_err();
    let Error::ServerRefused {
        location, message, ..
    } = &err
    else {
        panic!("not refused by the server: {err}");
    };
    assert!(message.contains("violates check constraint"), "{message}");
    assert_eq!(location.as_ref().map(|l| l.line), Some(7), "{err}");
    assert_eq!(db.int("SELECT count(*) FROM t"), 0);

    let rejects = tempfile::tempdir().unwrap();
    opts.max_errors = 1;
    opts.rejects = Some(rejects.path().join("rejects.csv"));
    let summary = inrush_postgres::load::run(&db.target, &opts, &Silent).unwrap();
    assert_eq!((summary.rows, summary.rows_rejected), (39, 1));
    let rejected = std::fs::read_to_string(rejects.path().join("rejects.csv")).unwrap();
    assert_eq!(rejected, "7,2024-03-08,x\n");
}

#[test]
fn inrush_plan_says_who_routes() {
    let db = Db::fresh("partitions");
    db.exec(NO_DEFAULT);
    let plan = |routing| {
        inrush_postgres::load::plan(&db.target, &planned("t", routing, false), None).unwrap()
    };
    let client = plan(PartitionRouting::Client);
    assert_eq!(
        client.routing.as_deref(),
        Some("by inrush: each row's leaf found on the client, 2 leaf partitions each loaded by its own COPY")
    );
    assert!(
        client.to_string().contains("\n  routing: by inrush"),
        "{client}"
    );
    let server = plan(PartitionRouting::Server);
    assert!(server
        .routing
        .as_deref()
        .unwrap()
        .starts_with("by the server"));
    // By default, a table whose partitions are all local is routed by the server.
    let auto = plan(PartitionRouting::Auto).routing.unwrap();
    assert!(auto.ends_with("every partition is local, where the server's own routing measured faster (--route client routes on the client)"), "{auto}");
    db.exec("CREATE TABLE plain (a int)");
    let plain = inrush_postgres::load::plan(
        &db.target,
        &planned("plain", PartitionRouting::Client, false),
        None,
    )
    .unwrap();
    assert_eq!(plain.routing, None);
}

#[test]
fn truncate_writes_each_leaf_frozen() {
    let db = Db::fresh("partitions");
    db.exec(NO_DEFAULT);
    db.exec("INSERT INTO t VALUES (0, '2023-01-01', 'old')");
    let data: Vec<u8> = (1..=2000)
        .flat_map(|i| format!("{i},{}-03-{:02},x\n", 2023 + i % 2, i % 28 + 1).into_bytes())
        .collect();
    let (_dir, path) = input(&data);
    let mut opts = LoadOptions::new(path.to_str().unwrap(), "t");
    opts.routing = PartitionRouting::Client;
    opts.truncate = true;
    let summary = inrush_postgres::load::run(&db.target, &opts, &Silent).unwrap();
    routed_by_inrush(&summary);
    assert_eq!(summary.plan.after, inrush_load::Maintenance::AnalyzeFrozen);
    assert_eq!(db.int("SELECT count(*) FROM t"), 2000);
    // Written frozen, so all-visible without a VACUUM: ANALYZE finds every page so.
    assert_eq!(
        db.text("SELECT bool_and(relallvisible = relpages AND relpages > 0) FROM pg_class WHERE relname IN ('t_2023', 't_2024')"),
        "t"
    );
}

/// A hash-partitioned `t` with two local leaves and two foreign ones, each on a shard database
/// of its own (one named otherwise there, its columns too), made in `db`.
fn sharded(db: &Db, remote_extra: &str) -> (Db, Db) {
    let shards = (Db::fresh("shard"), Db::fresh("shard"));
    shards
        .0
        .exec("CREATE TABLE t_2 (id int, day date, code text)");
    shards.1.exec(&format!(
        "CREATE SCHEMA far; CREATE TABLE far.rows_3 (ident int, day date, label text{remote_extra})"
    ));
    db.add_foreign_server("shard_a", &shards.0);
    db.add_foreign_server("shard_b", &shards.1);
    db.exec(
        "CREATE TABLE t (id int, day date, code text) PARTITION BY HASH (id);
         CREATE TABLE t_0 PARTITION OF t FOR VALUES WITH (modulus 4, remainder 0);
         CREATE TABLE t_1 PARTITION OF t FOR VALUES WITH (modulus 4, remainder 1);
         CREATE FOREIGN TABLE t_2 PARTITION OF t FOR VALUES WITH (modulus 4, remainder 2) SERVER shard_a;
         CREATE FOREIGN TABLE t_3 PARTITION OF t FOR VALUES WITH (modulus 4, remainder 3) SERVER shard_b
           OPTIONS (schema_name 'far', table_name 'rows_3');
         ALTER FOREIGN TABLE t_3 ALTER COLUMN id OPTIONS (column_name 'ident'),
           ALTER COLUMN code OPTIONS (column_name 'label');",
    );
    shards
}

const BY_LEAF: &str = "SELECT tableoid::regclass::text, t::text FROM t ORDER BY 1, 2";

/// A sharded `t` (see [`sharded`]) to load `data` into, and its model: the same tables loaded
/// by the server's own routing, COPY into the parent (the foreign rows through postgres_fdw).
struct ShardedLoad {
    ours: Db,
    shards: (Db, Db),
    model: Db,
    _model_shards: (Db, Db),
    _dir: tempfile::TempDir,
    path: std::path::PathBuf,
}

impl ShardedLoad {
    fn new(data: &[u8]) -> ShardedLoad {
        let (ours, model) = (Db::fresh("partitions"), Db::fresh("partitions"));
        let shards = sharded(&ours, "");
        let _model_shards = sharded(&model, "");
        model.copy_csv("t", data);
        let (_dir, path) = input(data);
        ShardedLoad {
            ours,
            shards,
            model,
            _model_shards,
            _dir,
            path,
        }
    }

    /// Every row is in the leaf the server's COPY into the parent put it in.
    fn assert_same_leaves(&self) {
        assert_eq!(self.ours.rows(BY_LEAF), self.model.rows(BY_LEAF));
    }
}

#[test]
fn foreign_leaves_are_loaded_straight_into_their_remote_tables() {
    let load = ShardedLoad::new(&rows(20_000));
    let (ours, model, path) = (&load.ours, &load.model, &load.path);
    let (our_a, our_b) = &load.shards;
    let mut opts = LoadOptions::new(path.to_str().unwrap(), "t");
    // The default routes a table with foreign partitions on the client.
    assert_eq!(opts.routing, PartitionRouting::Auto);
    opts.connections = 2;
    let summary = inrush_postgres::load::run(&ours.target, &opts, &Silent).unwrap();
    routed_by_inrush(&summary);
    let routing = summary.plan.routing.unwrap();
    assert!(
        routing.contains("2 of them foreign: COPY straight into their remote tables on 2 foreign servers (shard_a, shard_b)"),
        "{routing}"
    );
    assert!(
        summary
            .notes
            .iter()
            .any(|n| n.contains("with two-phase commit")),
        "{:?}",
        summary.notes
    );
    // Each connection is a transaction on every server: their number is not chosen on the way.
    assert!(!summary.parallelism.adaptive);
    assert_eq!((summary.connections, summary.parallelism.opened), (2, 2));
    load.assert_same_leaves();
    // The rows are in the shards' own tables, and no transaction was left prepared.
    assert_eq!(
        our_a.int("SELECT count(*) FROM t_2") + our_b.int("SELECT count(*) FROM far.rows_3"),
        model.int("SELECT count(*) FROM t_2") + model.int("SELECT count(*) FROM t_3")
    );
    assert_eq!(ours.int("SELECT count(*) FROM pg_prepared_xacts"), 0);
    // Each shard's table was analyzed on its own server.
    assert_eq!(
        our_b.text(
            "SELECT last_analyze IS NOT NULL FROM pg_stat_user_tables WHERE relname = 'rows_3'"
        ),
        "t"
    );
}

#[test]
fn a_remote_table_that_differs_goes_through_the_coordinator_and_the_plan_says_why() {
    let db = Db::fresh("partitions");
    let (_a, b) = sharded(&db, ", extra int DEFAULT 7");
    let data = rows(1_000);
    let (_dir, path) = input(&data);
    let mut opts = LoadOptions::new(path.to_str().unwrap(), "t");
    opts.routing = PartitionRouting::Client;
    // A column the foreign table lacks takes its remote default either way: loaded straight.
    let summary = inrush_postgres::load::run(&db.target, &opts, &Silent).unwrap();
    routed_by_inrush(&summary);
    assert_eq!(b.int("SELECT count(*) FROM far.rows_3 WHERE extra <> 7"), 0);
    // A remote type other than the coordinator's: binary COPY cannot go straight.
    b.exec("ALTER TABLE far.rows_3 ALTER COLUMN ident TYPE bigint");
    db.exec("TRUNCATE t");
    let summary = inrush_postgres::load::run(&db.target, &opts, &Silent).unwrap();
    let routing = summary.plan.routing.unwrap();
    assert!(
        routing.starts_with("by the server")
            && routing.contains(
                "column ident of \"far\".\"rows_3\" is bigint there but integer on the coordinator"
            ),
        "{routing}"
    );
    assert_eq!(db.int("SELECT count(*) FROM t"), 1_000);
    // --truncate empties the foreign leaves through the coordinator: routed by the server.
    opts.truncate = true;
    b.exec("ALTER TABLE far.rows_3 ALTER COLUMN ident TYPE int");
    let summary = inrush_postgres::load::run(&db.target, &opts, &Silent).unwrap();
    assert!(summary.plan.routing.unwrap().contains("--truncate"));
    assert_eq!(db.int("SELECT count(*) FROM t"), 1_000);
}

#[test]
fn with_max_errors_a_row_a_shard_refuses_goes_to_the_reject_file() {
    let db = Db::fresh("partitions");
    let (a, _b) = sharded(&db, "");
    a.exec("ALTER TABLE t_2 ADD CHECK (code <> 'z')");
    let data = rows(600);
    let dir = tempfile::tempdir().unwrap();
    let (_input, path) = input(&data);
    let mut opts = LoadOptions::new(path.to_str().unwrap(), "t");
    opts.routing = PartitionRouting::Client;
    opts.max_errors = 1_000;
    opts.rejects = Some(dir.path().join("rejects.csv"));
    let summary = inrush_postgres::load::run(&db.target, &opts, &Silent).unwrap();
    routed_by_inrush(&summary);
    assert_eq!(summary.rows, db.int("SELECT count(*) FROM t") as u64);
    assert!(summary.rows_rejected > 0);
    assert_eq!(summary.rows + summary.rows_rejected, 600);
    let rejected = std::fs::read_to_string(dir.path().join("rejects.csv")).unwrap();
    assert!(rejected.lines().all(|l| l.ends_with(",z")), "{rejected}");
    assert_eq!(a.int("SELECT count(*) FROM t_2 WHERE code = 'z'"), 0);
}

#[test]
fn a_shard_lost_mid_load_fails_the_load_and_commits_nothing_anywhere() {
    let db = Db::fresh("partitions");
    let (a, b) = sharded(&db, "");
    // The shard's session ends in the middle of the COPY, as when its server goes away: at a
    // row far into the input that goes to that shard.
    let victim = db.int("SELECT min(i) FROM generate_series(5000, 6000) i WHERE satisfies_hash_partition('t'::regclass, 4, 2, i)");
    a.exec(&format!(
        "CREATE FUNCTION vanish() RETURNS trigger LANGUAGE plpgsql AS $$ \
         BEGIN IF NEW.id = {victim} THEN PERFORM pg_terminate_backend(pg_backend_pid()); END IF; RETURN NEW; END $$; \
         CREATE TRIGGER vanish BEFORE INSERT ON t_2 FOR EACH ROW EXECUTE FUNCTION vanish(); \
         CREATE INDEX t_2_day ON t_2 (day)"
    ));
    let before = a.definitions();
    let data: Vec<u8> = (0..10_000)
        .flat_map(|i| format!("{i},2024-01-01,x\n").into_bytes())
        .collect();
    let (_dir, path) = input(&data);
    let mut opts = LoadOptions::new(path.to_str().unwrap(), "t");
    opts.routing = PartitionRouting::Client;
    opts.connections = 2;
    let err = inrush_postgres::load::run(&db.target, &opts, &Silent).unwrap_err();
    assert!(err.to_string().contains("terminat"), "{err}");
    assert_eq!(
        db.int("SELECT count(*) FROM ONLY t_0") + db.int("SELECT count(*) FROM ONLY t_1"),
        0
    );
    assert_eq!(a.int("SELECT count(*) FROM t_2"), 0);
    assert_eq!(b.int("SELECT count(*) FROM far.rows_3"), 0);
    assert_eq!(db.int("SELECT count(*) FROM pg_prepared_xacts"), 0);
    // The index dropped on that shard for the load is back.
    assert_eq!(a.definitions(), before);
    assert_eq!(a.journal_len(), 0);
}

#[test]
fn a_shards_indexes_are_dropped_for_the_load_and_rebuilt_on_its_own_server() {
    let db = Db::fresh("partitions");
    let (a, _b) = sharded(&db, "");
    a.exec("ALTER TABLE t_2 ADD PRIMARY KEY (id); CREATE INDEX t_2_day ON t_2 (day)");
    let before = a.definitions();
    let data = rows(5_000);
    let (_dir, path) = input(&data);
    let plan = inrush_postgres::load::plan(
        &db.target,
        &planned("t", PartitionRouting::Auto, false),
        path.to_str(),
    )
    .unwrap();
    let routing = plan.routing.unwrap();
    assert!(
        routing.ends_with("; on foreign server shard_a: index(es) t_2_day of \"public\".\"t_2\""),
        "{routing}"
    );
    let opts = LoadOptions::new(path.to_str().unwrap(), "t");
    let summary = inrush_postgres::load::run(&db.target, &opts, &Silent).unwrap();
    routed_by_inrush(&summary);
    let note = summary
        .notes
        .iter()
        .find(|n| n.starts_with("foreign server shard_a:"))
        .unwrap_or_else(|| panic!("{:?}", summary.notes));
    // The secondary index goes; the key stays (a broken key could not be undone on the shard).
    assert!(
        note.contains("index(es) t_2_day of \"public\".\"t_2\" dropped"),
        "{note}"
    );
    assert_eq!(a.definitions(), before);
    assert_eq!(a.journal_len(), 0);
    assert_eq!(
        a.int("SELECT count(*) FROM t_2"),
        db.int("SELECT count(*) FROM t_2")
    );
}

#[test]
fn a_citus_distributed_table_goes_through_the_coordinator_with_its_definitions_kept() {
    let db = Db::fresh("partitions");
    // The columns of Citus' own catalog table that inrush reads, with the row Citus keeps for
    // a hash-distributed table: the tests have no Citus server.
    db.exec(
        "CREATE TABLE pg_dist_partition (logicalrelid regclass, partmethod \"char\");
         CREATE TABLE t (id int, day date, code text); CREATE INDEX t_day ON t (day);
         INSERT INTO pg_dist_partition VALUES ('t', 'h')",
    );
    let rule = "\"public\".\"t\" is a Citus hash-distributed table: the rows go through COPY on the coordinator, which Citus sends on to its shards (inrush does not load Citus shards straight), and its indexes and keys are kept (Citus replays their DDL on every shard)";
    let plan = inrush_postgres::load::plan(
        &db.target,
        &planned("t", PartitionRouting::Auto, false),
        None,
    )
    .unwrap();
    assert_eq!(plan.rule, rule);
    let data = rows(3_000);
    let (_dir, path) = input(&data);
    let summary = inrush_postgres::load::run(
        &db.target,
        &LoadOptions::new(path.to_str().unwrap(), "t"),
        &Silent,
    )
    .unwrap();
    assert_eq!(summary.plan.rule, rule);
    assert!(summary.plan.rebuilt().is_empty());
    assert_eq!(db.int("SELECT count(*) FROM t"), 3_000);
}

#[test]
fn recover_decides_the_prepared_transactions_a_dead_load_left() {
    let db = Db::fresh("partitions");
    let (a, _b) = sharded(&db, "");
    let (_dir, path) = input(&rows(100));
    let summary = inrush_postgres::load::run(
        &db.target,
        &LoadOptions::new(path.to_str().unwrap(), "t"),
        &Silent,
    )
    .unwrap();
    assert!(summary
        .notes
        .iter()
        .any(|n| n.contains("with two-phase commit")));
    assert_eq!(
        db.int("SELECT count(*) FROM inrush.joint_commits"),
        0,
        "a load logs, then forgets"
    );
    // Two loads that died in their commit: one after its decision, one before.
    db.exec(
        "INSERT INTO inrush.joint_commits (load_id, servers, decided) \
         VALUES ('decided', '{shard_a}', true), ('undecided', '{shard_a}', false)",
    );
    for (server, load, n, x) in [
        (&db, "decided", 0, 1),
        (&a, "decided", 1, 2),
        (&db, "undecided", 0, 3),
        (&a, "undecided", 1, 4),
    ] {
        server.exec("CREATE TABLE IF NOT EXISTS side (x int)");
        server.exec(&format!(
            "BEGIN; INSERT INTO side VALUES ({x}); PREPARE TRANSACTION 'inrush_{load}_{n}'"
        ));
    }
    let recovered = inrush_postgres::load::recover(&db.target, None, &inrush_core::Silent).unwrap();
    let (mut committed, mut rolled_back) = (
        recovered.prepared.committed.clone(),
        recovered.prepared.rolled_back.clone(),
    );
    committed.sort();
    rolled_back.sort();
    assert_eq!(
        committed,
        [
            "inrush_decided_0 on the target",
            "inrush_decided_1 on foreign server shard_a"
        ]
    );
    assert_eq!(
        rolled_back,
        [
            "inrush_undecided_0 on the target",
            "inrush_undecided_1 on foreign server shard_a"
        ]
    );
    assert_eq!(db.text("SELECT string_agg(x::text, ',') FROM side"), "1");
    assert_eq!(a.text("SELECT string_agg(x::text, ',') FROM side"), "2");
    for server in [&db, &a] {
        assert_eq!(server.int("SELECT count(*) FROM pg_prepared_xacts"), 0);
    }
    assert_eq!(db.int("SELECT count(*) FROM inrush.joint_commits"), 0);
}

#[test]
fn with_max_errors_a_key_a_shard_holds_twice_is_rejected_on_one_connection() {
    let db = Db::fresh("partitions");
    let (a, _b) = sharded(&db, "");
    a.exec("ALTER TABLE t_2 ADD PRIMARY KEY (id)");
    // Every row twice: the second of each t_2 row breaks the shard's key.
    let data = [rows(600), rows(600)].concat();
    let dir = tempfile::tempdir().unwrap();
    let (_input, path) = input(&data);
    let mut opts = LoadOptions::new(path.to_str().unwrap(), "t");
    opts.connections = 2;
    opts.max_errors = 1_000;
    opts.rejects = Some(dir.path().join("rejects.csv"));
    let summary = inrush_postgres::load::run(&db.target, &opts, &Silent).unwrap();
    routed_by_inrush(&summary);
    assert_eq!(summary.connections, 1, "{:?}", summary.notes);
    let in_t_2 = a.int("SELECT count(*) FROM t_2");
    assert_eq!(a.int("SELECT count(DISTINCT id) FROM t_2"), in_t_2);
    assert_eq!(summary.rows_rejected as i64, in_t_2);
    assert_eq!(summary.rows + summary.rows_rejected, 1_200);
    // Every refused row is in the reject file.
    let rejected = std::fs::read_to_string(dir.path().join("rejects.csv")).unwrap();
    assert_eq!(rejected.lines().count() as i64, in_t_2);
}

/// The options of a `--resume` load of `path` into `t`, in blocks of 32 kB (a dozen for 20k
/// rows) over two connections, then `tweak`ed.
fn resumed(path: &std::path::Path, tweak: impl Fn(&mut LoadOptions)) -> LoadOptions {
    let mut opts = LoadOptions::new(path.to_str().unwrap(), "t");
    opts.resume = true;
    opts.block_size = 32 * 1024;
    opts.connections = 2;
    tweak(&mut opts);
    opts
}

/// Each server's ledger counts exactly the rows it holds: the target's every row of the load,
/// each shard's its own (a block loaded twice somewhere, or rows without their ledger row,
/// would differ).
fn assert_ledgers_match(db: &Db, a: &Db, b: &Db) {
    assert_eq!(
        db.int("SELECT coalesce(sum(rows), 0) FROM inrush.load_ledger"),
        db.int("SELECT count(*) FROM t")
    );
    assert_shard_ledgers_match(a, b);
}

fn assert_shard_ledgers_match(a: &Db, b: &Db) {
    for (shard, table) in [(a, "t_2"), (b, "far.rows_3")] {
        assert_eq!(
            shard.int("SELECT coalesce(sum(rows), 0) FROM inrush.shard_ledger"),
            shard.int(&format!("SELECT count(*) FROM {table}")),
            "{table}"
        );
    }
}

#[test]
fn resume_routes_on_the_client_block_by_block_and_a_rerun_loads_nothing() {
    let load = ShardedLoad::new(&rows(20_000));
    let (ours, path) = (&load.ours, &load.path);
    let (our_a, our_b) = &load.shards;
    let opts = resumed(path, |_| {});
    let plan = inrush_postgres::load::plan(
        &ours.target,
        &planned("t", PartitionRouting::Auto, true),
        path.to_str(),
    )
    .unwrap();
    let summary = inrush_postgres::load::run(&ours.target, &opts, &Silent).unwrap();
    for routing in [plan.routing.unwrap(), summary.plan.routing.clone().unwrap()] {
        assert!(
            routing.starts_with("by inrush")
                && routing.contains(
                    "--resume: each block committed on its own on every server it has rows for"
                ),
            "{routing}"
        );
    }
    assert!(
        summary
            .notes
            .iter()
            .any(|n| n.starts_with("--resume: each block committed")),
        "{:?}",
        summary.notes
    );
    assert_eq!(summary.rows, 20_000);
    load.assert_same_leaves();
    let blocks = ours.int("SELECT count(*) FROM inrush.load_ledger");
    assert!(blocks >= 10, "{blocks} blocks");
    assert_eq!(summary.blocks.map(|b| b.loaded), Some(blocks as u64));
    assert_ledgers_match(ours, our_a, our_b);
    // Every block has rows on each shard here.
    assert_eq!(
        our_a.int("SELECT count(*) FROM inrush.shard_ledger"),
        blocks
    );

    // Run again: every block is in, nothing is loaded.
    let again = inrush_postgres::load::run(&ours.target, &opts, &Silent).unwrap();
    assert_eq!((again.rows, again.rows_resumed), (0, 20_000));
    load.assert_same_leaves();
    assert_ledgers_match(ours, our_a, our_b);
}

#[test]
fn resume_after_a_stop_between_the_shards_commits_and_the_targets_loads_each_row_once() {
    let load = ShardedLoad::new(&rows(20_000));
    let (ours, path) = (&load.ours, &load.path);
    let (our_a, our_b) = &load.shards;
    // A local row far into the input fails its block's commit on the target, after the
    // block's rows on the shards have committed there: the state a process dying between the
    // two commits leaves.
    let victim = ours.int(
        "SELECT id FROM (SELECT (i * 7919) % 20011 - 10000 AS id FROM generate_series(15000, 16000) i) r \
         WHERE satisfies_hash_partition('t'::regclass, 4, 0, id) LIMIT 1",
    );
    ours.exec(&format!(
        "CREATE FUNCTION stop() RETURNS trigger LANGUAGE plpgsql AS $$ \
         BEGIN IF NEW.id = {victim} THEN RAISE EXCEPTION 'stopped here'; END IF; RETURN NEW; END $$; \
         CREATE TRIGGER stop BEFORE INSERT ON t_0 FOR EACH ROW EXECUTE FUNCTION stop()"
    ));
    let opts = resumed(path, |_| {});
    let err = inrush_postgres::load::run(&ours.target, &opts, &Silent).unwrap_err();
    assert!(err.to_string().contains("stopped here"), "{err}");
    // The shards hold a block the target's ledger lacks.
    let shard_blocks = |shard: &Db| shard.int("SELECT count(*) FROM inrush.shard_ledger");
    let on_target = ours.int("SELECT count(*) FROM inrush.load_ledger");
    assert!(
        shard_blocks(our_a) > on_target && shard_blocks(our_b) > on_target,
        "{on_target} blocks on the target"
    );
    assert_shard_ledgers_match(our_a, our_b);

    ours.exec("DROP TRIGGER stop ON t_0");
    let summary = inrush_postgres::load::run(&ours.target, &opts, &Silent).unwrap();
    assert_eq!(summary.rows + summary.rows_resumed, 20_000);
    load.assert_same_leaves();
    assert_ledgers_match(ours, our_a, our_b);
}

#[test]
fn resume_with_max_errors_rejects_a_shards_refusals_within_its_blocks() {
    let db = Db::fresh("partitions");
    let (a, b) = sharded(&db, "");
    a.exec("ALTER TABLE t_2 ADD CHECK (code <> 'z')");
    let data = rows(6_000);
    let dir = tempfile::tempdir().unwrap();
    let (_input, path) = input(&data);
    let opts = resumed(&path, |opts| {
        opts.max_errors = 10_000;
        opts.rejects = Some(dir.path().join("rejects.csv"));
    });
    let summary = inrush_postgres::load::run(&db.target, &opts, &Silent).unwrap();
    routed_by_inrush(&summary);
    assert!(summary.rows_rejected > 0);
    assert_eq!(summary.rows + summary.rows_rejected, 6_000);
    assert_eq!(summary.rows, db.int("SELECT count(*) FROM t") as u64);
    let rejected = std::fs::read_to_string(dir.path().join("rejects.csv")).unwrap();
    assert!(rejected.lines().all(|l| l.ends_with(",z")), "{rejected}");
    assert_eq!(rejected.lines().count() as u64, summary.rows_rejected);
    assert_eq!(a.int("SELECT count(*) FROM t_2 WHERE code = 'z'"), 0);
    // The target's ledger counts the rows loaded, the shard's those it took.
    assert_ledgers_match(&db, &a, &b);
}

#[test]
fn resume_retries_a_shards_lost_connection_without_loading_a_block_twice() {
    let db = Db::fresh("partitions");
    let (a, b) = sharded(&db, "");
    let (_dir, path) = input(&rows(200_000));
    let opts = resumed(&path, |o| o.connections = 1);
    // Once rows are in on shard_a, its sink session (busy, or inside a block's transaction)
    // is terminated, as when the shard restarts: the block is retried on a new connection.
    let shard = a.target.clone();
    let killer = std::thread::spawn(move || {
        let mut client = shard.connect_blocking().unwrap();
        let count = |client: &mut postgres::Client, sql: &str| -> i64 {
            client.query_one(sql, &[]).unwrap().get(0)
        };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while std::time::Instant::now() < deadline {
            if count(&mut client, "SELECT count(*) FROM t_2") > 0 {
                let killed = count(
                    &mut client,
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
                     WHERE datname = current_database() AND pid <> pg_backend_pid() \
                     AND state IN ('active', 'idle in transaction')",
                );
                if killed > 0 {
                    return killed;
                }
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        0
    });
    let summary = inrush_postgres::load::run(&db.target, &opts, &Silent)
        .expect("a lost connection to a shard is retried with --resume");
    assert!(
        killer.join().unwrap() >= 1,
        "no session on the shard was terminated"
    );
    assert_eq!(summary.rows, 200_000);
    assert_ledgers_match(&db, &a, &b);
}

/// What `inrush plan` is given for `table`.
fn planned(table: &str, routing: PartitionRouting, resume: bool) -> LoadOptions {
    LoadOptions {
        routing,
        resume,
        ..LoadOptions::new("", table)
    }
}
