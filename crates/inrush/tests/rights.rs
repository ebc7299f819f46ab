//! Loads by a role without every right: each statement the server refuses for want of one
//! ends the load with a message that names the right (and, on PostgreSQL, the GRANT that
//! gives it), with nothing loaded; what the plan would only do for speed (dropping indexes,
//! ANALYZE after) is not done, and the summary says why.

use inrush_testkit::{Db, MariaDb};

const BIN: &str = env!("CARGO_BIN_EXE_inrush");

fn inrush(args: &[&str]) -> (i32, String) {
    inrush_testkit::run(BIN, args)
}

/// `first..=last` as `id,v` lines.
fn rows(dir: &std::path::Path, name: &str, first: u32, last: u32) -> String {
    let path = dir.join(name);
    let text: String = (first..=last)
        .map(|i| format!("{i},v{}\n", i % 50))
        .collect();
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn on_postgresql_each_missing_right_is_named_with_its_grant() {
    let db = Db::fresh("rights");
    if db.conninfo.contains("://") {
        eprintln!("skipped: the role is set on a key=value conninfo (INRUSH_TEST_URL is a URL)");
        return;
    }
    let role = format!("loader_{}", std::process::id());
    db.exec(&format!(
        "CREATE ROLE {role} LOGIN; \
         CREATE TABLE t (id int PRIMARY KEY, v text); CREATE INDEX t_v ON t (v); \
         INSERT INTO t VALUES (0, 'first'); \
         CREATE TABLE s (id serial, v text); \
         CREATE FUNCTION mark() RETURNS trigger LANGUAGE plpgsql AS 'BEGIN NEW.v := ''fired''; RETURN NEW; END'; \
         CREATE TRIGGER t_mark BEFORE INSERT ON t FOR EACH ROW EXECUTE FUNCTION mark(); \
         REVOKE CREATE ON SCHEMA public FROM PUBLIC; \
         GRANT SELECT ON t, s TO {role}"
    ));
    let to = format!("{} user={role}", db.conninfo);
    let dir = tempfile::tempdir().unwrap();
    let small = rows(dir.path(), "small.csv", 1, 10);
    let load = |input: &str, table: &str, flags: &[&str]| {
        let mut args = vec![
            "load",
            input,
            "--to",
            &to,
            "--table",
            table,
            "--no-progress",
        ];
        args.extend_from_slice(flags);
        inrush(&args)
    };
    let (code, out) = load(&small, "t", &[]);
    assert_eq!(code, 3, "{out}");
    assert!(out.contains("GRANT INSERT is needed"), "{out}");

    db.exec(&format!("GRANT INSERT ON t, s TO {role}"));
    for (flags, named) in [
        (
            &["--truncate"][..],
            "the TRUNCATE right on table t: GRANT TRUNCATE ON TABLE t",
        ),
        (
            &["--table-lock"][..],
            "the UPDATE, DELETE or TRUNCATE right on table t",
        ),
        (&["--resume"][..], "the CREATE right on database"),
        (
            &["--on-conflict", "skip"][..],
            "the CREATE right on database",
        ),
        (
            &["--disable-triggers"][..],
            "--disable-triggers: trigger t_mark",
        ),
    ] {
        let (code, out) = load(&small, "t", flags);
        assert_eq!(code, 3, "{flags:?}: {out}");
        assert!(out.contains(named), "{flags:?}: {out}");
        assert_eq!(db.text("SELECT count(*) FROM t"), "1", "{flags:?}");
    }
    let headed = dir.path().join("headed.csv");
    std::fs::write(&headed, "id,v\n1,x\n").unwrap();
    let (code, out) = load(headed.to_str().unwrap(), "made", &["--create", "--header"]);
    assert_eq!(code, 3, "{out}");
    assert!(out.contains("the CREATE right on schema public"), "{out}");
    let values = dir.path().join("values.csv");
    std::fs::write(&values, "a\nb\n").unwrap();
    let (code, out) = load(values.to_str().unwrap(), "s", &["--columns", "v"]);
    assert_eq!(code, 3, "{out}");
    assert!(
        out.contains("the USAGE right on sequence s_id_seq"),
        "{out}"
    );

    // Large enough to drop t_v, which needs ownership: kept, and the plan says why.
    db.exec(&format!("GRANT CREATE ON DATABASE {} TO {role}", db.name));
    let big = rows(dir.path(), "big.csv", 1, 5000);
    let (code, out) = load(&big, "t", &[]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("indexes and keys are kept, though the load is large enough to drop them")
            && out.contains("must be owner of index t_v"),
        "{out}"
    );
    // The server would skip the upkeep with a warning: the summary says it was not done.
    assert!(
        out.contains(
            "skipped: it needs ownership of the table, or from PostgreSQL 17 the MAINTAIN right"
        ),
        "{out}"
    );
    assert_eq!(db.text("SELECT count(*) FROM t WHERE v = 'fired'"), "5000");
    assert_eq!(
        db.text("SELECT count(*) FROM pg_indexes WHERE indexname = 't_v'"),
        "1"
    );
}

#[test]
fn on_mariadb_each_missing_right_is_named() {
    let db = MariaDb::fresh("rights");
    let user = format!("loader_{}", std::process::id());
    db.exec(&format!(
        "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10), KEY kv (v)); \
         CREATE USER '{user}'@'%' IDENTIFIED BY 'pw'; \
         GRANT SELECT ON {0}.t TO '{user}'@'%'",
        db.name
    ));
    let to = db.url.replace("inrush:inrush@", &format!("{user}:pw@"));
    let dir = tempfile::tempdir().unwrap();
    let small = rows(dir.path(), "small.csv", 1, 10);
    let load = |input: &str, flags: &[&str]| {
        let mut args = vec!["load", input, "--to", &to, "--table", "t", "--no-progress"];
        args.extend_from_slice(flags);
        inrush(&args)
    };
    let (code, out) = load(&small, &[]);
    assert_eq!(code, 3, "{out}");
    assert!(out.contains("INSERT command denied"), "{out}");

    db.exec(&format!("GRANT INSERT ON {}.t TO '{user}'@'%'", db.name));
    for (flags, named) in [
        (&["--truncate"][..], "DELETE command denied"),
        (&["--table-lock"][..], "needs the LOCK TABLES privilege"),
        (&["--resume"][..], "CREATE command denied"),
    ] {
        let (code, out) = load(&small, flags);
        assert_eq!(code, 3, "{flags:?}: {out}");
        assert!(out.contains(named), "{flags:?}: {out}");
        assert!(db.rows("SELECT * FROM t").is_empty(), "{flags:?}");
    }

    // Large enough to drop kv, which needs ALTER and CREATE: kept, and the plan says why.
    let big = rows(dir.path(), "big.csv", 1, 5000);
    let (code, out) = load(&big, &[]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("indexes and keys are kept, though the load is large enough to drop them")
            && out.contains("CREATE command denied"),
        "{out}"
    );
    assert_eq!(db.rows("SELECT COUNT(*) FROM t"), ["5000"]);
    assert_eq!(
        db.rows("SELECT COUNT(*) FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() AND INDEX_NAME = 'kv'"),
        ["1"]
    );
}

/// SQLite's rights are the file's: a database the user may not write is named as such (run as
/// `nobody` when the tests run as root, whom file modes do not stop).
#[test]
fn on_sqlite_a_file_the_user_may_not_write_is_named() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.csv");
    std::fs::write(&input, "id,v\n1,x\n").unwrap();
    let input = input.to_str().unwrap();
    let to = format!("sqlite://{}", dir.path().join("db.sqlite").display());
    let (code, out) = inrush(&[
        "load", input, "--header", "--to", &to, "--table", "t", "--create",
    ]);
    assert_eq!(code, 0, "{out}");
    let mode = |path: &std::path::Path, bits| {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(bits)).unwrap()
    };
    mode(&dir.path().join("db.sqlite"), 0o444);
    mode(dir.path(), 0o555);
    let args = ["load", input, "--header", "--to", &to, "--table", "t"];
    // SAFETY: geteuid reads the process's own user id.
    let out = match unsafe { libc::geteuid() } {
        0 => std::process::Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", BIN])
            .args(args)
            .output(),
        _ => std::process::Command::new(BIN).args(args).output(),
    }
    .unwrap();
    mode(dir.path(), 0o755);
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{said}");
    assert!(
        said.contains("the right to write the database file"),
        "{said}"
    );
}
