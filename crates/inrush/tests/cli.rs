//! The binary as a user runs it: exit codes, JSON output, and no password in any message.

use std::process::Command;

/// `inrush load - --table t` into `conninfo`, reading what the test writes to its stdin.
fn load_from_stdin(conninfo: &str, stderr: std::process::Stdio) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_inrush"))
        .args([
            "load",
            "-",
            "--to",
            conninfo,
            "--table",
            "t",
            "--no-progress",
        ])
        .stdin(std::process::Stdio::piped())
        .stderr(stderr)
        .spawn()
        .expect("spawn inrush")
}

fn inrush(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_inrush"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("run inrush")
}

#[test]
fn usage_errors_exit_2() {
    let out = inrush(&["load", "x.csv", "--table", "t", "--delimiter", "ab"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a single one-byte character"));
}

/// A SQLite query source is refused by name, a MariaDB one that cannot be reached fails as a
/// server does (exit 3); neither prints the URL's password.
#[test]
fn from_query_engines_are_named_without_echoing_the_password() {
    for (from, code, says) in [
        (
            "mysql://app:secret@127.0.0.1:1/shop",
            3,
            "connecting to mysql://app:***@127.0.0.1:1/shop",
        ),
        ("sqlite:///tmp/source.db", 2, "--from names a SQLite file"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let to = dir.path().join("target.db");
        let args = [
            "load",
            "--from-query",
            "SELECT 1",
            "--from",
            from,
            "--table",
            "t",
            "--to",
            to.to_str().unwrap(),
        ];
        let out = inrush(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{stderr}");
        assert!(stderr.contains(says), "{stderr}");
        assert!(!stderr.contains("secret"), "{stderr}");
    }
}

#[test]
fn encoding_and_datestyle_are_checked_by_the_argument_parser() {
    let out = inrush(&["load", "x.csv", "--table", "t", "--encoding", "ebcdic"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("unknown encoding \"ebcdic\""), "{stderr}");
    let out = inrush(&["load", "x.csv", "--table", "t", "--datestyle", "DYM"]);
    assert_eq!(out.status.code(), Some(2));
    // Names as PostgreSQL spells them, in any case: past the parser, the missing file stops it.
    let out = inrush(&[
        "load",
        "missing.csv",
        "--table",
        "t",
        "--encoding",
        "windows-1252",
        "--datestyle",
        "dmy",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("missing.csv"), "{stderr}");
}

#[test]
fn unreachable_server_exits_3_without_printing_the_password() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.csv");
    std::fs::write(&input, "1\n").unwrap();
    let url = format!(
        "postgresql://alice:s3cr3t-pw@/db?host={}",
        dir.path().display()
    );
    let out = inrush(&[
        "load",
        input.to_str().unwrap(),
        "--to",
        &url,
        "--table",
        "t",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("cannot connect to alice@"), "{stderr}");
    assert!(!stderr.contains("s3cr3t-pw"), "{stderr}");
}

#[test]
fn demo_runs_end_to_end_and_reports_json() {
    let out = inrush(&["demo", "--rows", "5000", "--json"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value =
        serde_json::from_str(stdout.trim()).expect("one JSON object on stdout");
    assert_eq!(json["rows"], 5000);
    assert_eq!(json["inrush"]["rows"], 5000);
    assert_eq!(json["inrush"]["engine"]["method"], "binary COPY");
    assert!(json["psql_copy_seconds"].as_f64().unwrap_or(0.0) > 0.0);
}

/// Without --keep, the demo's ending says what `--to` takes and how to keep its server.
#[test]
fn demo_ending_says_what_to_load_into() {
    let out = inrush(&["demo", "--rows", "2000", "--no-progress"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("--to takes any PostgreSQL server"),
        "{stderr}"
    );
    // Runnable as printed: the test's binary is on no PATH, so it is named by its path.
    let me = std::fs::canonicalize(env!("CARGO_BIN_EXE_inrush")).unwrap();
    let keep = format!("{} demo --keep", me.display());
    assert!(stderr.contains(&keep), "{keep:?} missing from:\n{stderr}");
    assert!(stderr.contains("25-40 min"), "{stderr}");
}

/// `demo --keep` leaves its server running, with the demo's rows, and prints a `load` command
/// that works against it; `demo --stop DIR` stops it and deletes its files.
#[test]
fn demo_keep_leaves_a_server_to_load_into_until_stop() {
    let out = inrush(&["demo", "--rows", "2000", "--no-progress", "--keep"]);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let dir = stderr
        .lines()
        .find_map(|l| l.split("inrush demo --stop ").nth(1))
        .map(|d| std::path::PathBuf::from(d.trim()));
    /// Stops the kept server however the test ends.
    struct Stop(Option<std::path::PathBuf>);
    impl Drop for Stop {
        fn drop(&mut self) {
            if let Some(dir) = self.0.take().filter(|d| d.exists()) {
                inrush(&["demo", "--stop", dir.to_str().unwrap()]);
            }
        }
    }
    let mut guard = Stop(dir.clone());
    assert!(out.status.success(), "{stderr}");
    let dir = dir.unwrap_or_else(|| panic!("no --stop line: {stderr}"));
    let conninfo = stderr
        .lines()
        .find_map(|l| l.split("inrush load FILE --to '").nth(1))
        .and_then(|l| l.split('\'').next())
        .unwrap_or_else(|| panic!("no load command: {stderr}"))
        .to_string();
    let mut client = postgres::Client::connect(&conninfo, postgres::NoTls).expect("connect");
    let count: i64 = client
        .query_one("SELECT count(*) FROM inrush_demo", &[])
        .unwrap()
        .get(0);
    assert_eq!(count, 2000);
    // The printed command, with a file.
    let input = tempfile::tempdir().unwrap();
    let csv = input.path().join("mine.csv");
    std::fs::write(&csv, "id,name\n1,a\n2,b\n").unwrap();
    let load = inrush(&[
        "load",
        csv.to_str().unwrap(),
        "--to",
        &conninfo,
        "--table",
        "mine",
        "--header",
        "--create",
        "--no-progress",
    ]);
    assert!(
        load.status.success(),
        "{}",
        String::from_utf8_lossy(&load.stderr)
    );
    let count: i64 = client
        .query_one("SELECT count(*) FROM mine", &[])
        .unwrap()
        .get(0);
    assert_eq!(count, 2);
    drop(client);

    guard.0 = None;
    let stop = inrush(&["demo", "--stop", dir.to_str().unwrap()]);
    assert!(
        stop.status.success(),
        "{}",
        String::from_utf8_lossy(&stop.stderr)
    );
    assert!(!dir.exists(), "{} is still there", dir.display());
    assert!(postgres::Client::connect(&conninfo, postgres::NoTls).is_err());
    // Not a server's directory: refused, nothing deleted.
    let stop = inrush(&["demo", "--stop", input.path().to_str().unwrap()]);
    assert!(!stop.status.success());
    assert!(csv.exists());
}

/// `inrush load -` against a private server: stdin input, JSON on stdout, and exit code 4 with
/// file:line for a bad row, with nothing committed.
#[test]
fn load_from_stdin_reports_json_and_bad_input_exits_4() {
    use std::io::Write;
    use std::process::Stdio;

    let db = inrush_testkit::Db::fresh("cli");
    let target = db.target.clone();
    target
        .execute_blocking("CREATE TABLE t (id int, name text)")
        .unwrap();
    let conninfo = db.conninfo.clone();
    let dir = tempfile::tempdir().unwrap();
    let rejects = dir.path().join("bad.csv");
    let run_with = |input: &[u8], extra: &[&str]| {
        let mut child = Command::new(env!("CARGO_BIN_EXE_inrush"))
            .args([
                "load", "-", "--to", &conninfo, "--table", "t", "--header", "--json",
            ])
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn inrush");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(input)
            .expect("write stdin");
        child.wait_with_output().expect("wait")
    };
    let run = |input: &[u8]| run_with(input, &[]);

    let ok = run(b"name,id\nalice,1\n\"bob\nsmith\",2\n");
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&ok.stdout).expect("JSON summary");
    assert_eq!(json["rows"], 2);
    assert_eq!(json["input"], "-");
    // The load's own rate, beside the whole run's: rows over the load phase's seconds.
    let (rows, phases) = (2.0, &json["phases"]);
    let load = phases["load"].as_f64().expect("phases.load");
    let rate = json["load_rows_per_second"]
        .as_f64()
        .expect("load_rows_per_second");
    assert!((rate * load - rows).abs() < 1e-6, "{json}");
    let whole = json["rows_per_second"].as_f64().unwrap() * json["seconds"].as_f64().unwrap();
    assert!((whole - rows).abs() < 1e-6, "{json}");
    assert!(phases["maintain"].as_f64().is_some(), "{json}");

    let bad = run(b"id,name\n3,carol\nfour,dave\n");
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(bad.status.code(), Some(4), "{stderr}");
    assert!(
        stderr.contains("-:3, column id, value \"four\": invalid input syntax for type integer"),
        "{stderr}"
    );
    let failure: serde_json::Value =
        serde_json::from_slice(&bad.stdout).expect("JSON error object");
    assert_eq!(failure["exit_code"], 4);
    assert!(
        failure["error"]
            .as_str()
            .unwrap_or("")
            .contains("-:3, column id"),
        "{failure}"
    );
    assert_eq!(
        target
            .query_text_blocking("SELECT count(*) FROM t")
            .unwrap()
            .as_deref(),
        Some("2")
    );

    // With --max-errors the good rows load, the bad one is set aside, and the exit code says so.
    let partial = run_with(
        b"id,name\n3,carol\nfour,dave\n",
        &["--max-errors", "5", "--rejects", rejects.to_str().unwrap()],
    );
    assert_eq!(
        partial.status.code(),
        Some(6),
        "{}",
        String::from_utf8_lossy(&partial.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&partial.stdout).expect("JSON summary");
    assert_eq!(
        (json["rows"].as_u64(), json["rows_rejected"].as_u64()),
        (Some(1), Some(1))
    );
    assert_eq!(
        std::fs::read_to_string(&rejects).unwrap(),
        "id,name\nfour,dave\n"
    );
    assert_eq!(
        target
            .query_text_blocking("SELECT count(*) FROM t")
            .unwrap()
            .as_deref(),
        Some("3")
    );

    // SIGTERM while the input is still open: exit 130, nothing of this load committed.
    let mut child = load_from_stdin(&conninfo, Stdio::piped());
    let mut stdin = child.stdin.take().expect("stdin");
    for i in 0..10_000 {
        writeln!(stdin, "{i},row {i}").expect("write stdin");
    }
    stdin.flush().expect("flush");
    std::thread::sleep(std::time::Duration::from_millis(700));
    // SAFETY: sending a signal to our own child process.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let out = child.wait_with_output().expect("wait");
    drop(stdin);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(
        stderr.contains("rolled back, nothing was committed"),
        "{stderr}"
    );
    assert_eq!(
        target
            .query_text_blocking("SELECT count(*) FROM t")
            .unwrap()
            .as_deref(),
        Some("3")
    );
}

/// `inrush gen` writes the same rows as CSV, JSON lines and Parquet, and each loads into the
/// table `gen` prints to the same rows, row for row.
#[test]
fn generated_rows_load_the_same_from_every_format() {
    let db = inrush_testkit::Db::fresh("cli");
    let target = db.target.clone();
    let conninfo = db.conninfo.clone();
    let dir = tempfile::tempdir().unwrap();
    let mut client = target.connect_blocking().unwrap();
    for schema in ["lineitem", "insertbench"] {
        let mut tables = Vec::new();
        for format in ["csv", "jsonl", "parquet"] {
            let path = dir.path().join(format!("{schema}.{format}"));
            let out = inrush(&[
                "gen",
                schema,
                "--rows",
                "20000",
                "--format",
                format,
                "--header",
                "-o",
                path.to_str().unwrap(),
            ]);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{stderr}");
            let table = format!("{schema}_{format}");
            let ddl = stderr
                .split_once("load them into:\n")
                .map(|(_, ddl)| {
                    ddl.replace(&format!("TABLE {schema} "), &format!("TABLE {table} "))
                        .replace(&format!("ON {schema} "), &format!("ON {table} "))
                })
                .expect("gen prints the table's DDL");
            client.batch_execute(&ddl).unwrap();
            let mut args = vec![
                "load",
                path.to_str().unwrap(),
                "--to",
                &conninfo,
                "--table",
                &table,
                "--json",
            ];
            if format == "csv" {
                args.push("--header");
            }
            let out = inrush(&args);
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            assert_eq!(json["rows"], 20000, "{format}");
            tables.push(table);
        }
        // Every column but the server-filled key, compared row for row.
        let columns = if schema == "insertbench" {
            "dateandtime, cashregisterid, customerid, productid, price, data"
        } else {
            "*"
        };
        let rows = |client: &mut postgres::Client, table: &str| -> Vec<String> {
            let sql = format!("SELECT t::text FROM (SELECT {columns} FROM {table}) t ORDER BY 1");
            client
                .query(&sql, &[])
                .unwrap()
                .iter()
                .map(|r| r.get(0))
                .collect()
        };
        let csv = rows(&mut client, &tables[0]);
        assert_eq!(csv.len(), 20000);
        assert_eq!(rows(&mut client, &tables[1]), csv, "jsonl vs csv");
        assert_eq!(rows(&mut client, &tables[2]), csv, "parquet vs csv");
    }
}

/// What a user sees of a run: the command, its exit code and its stderr, with `dir` as `[dir]`.
fn seen(args: &[&str], out: &std::process::Output, dir: &std::path::Path) -> String {
    let dir = dir.display().to_string();
    format!(
        "$ inrush {}\nexit {}\n{}",
        args.join(" "),
        out.status
            .code()
            .map_or("by a signal".into(), |c| c.to_string()),
        String::from_utf8_lossy(&out.stderr)
    )
    .replace(&dir, "[dir]")
}

/// Each cause is said once (no `os error 2: ... os error 2`, no `error connecting to server:
/// error connecting to server`), with the exit code the README gives: a missing input is a
/// usage error, not refused input; `gen` refuses a format it cannot write while parsing.
#[test]
fn each_cause_is_said_once_with_its_documented_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().display().to_string();
    std::fs::write(dir.path().join("in.csv"), "1\n").unwrap();
    let no_server = format!("postgresql://alice@/db?host={d}");
    let runs: Vec<Vec<String>> = vec![
        vec![
            "load".into(),
            format!("{d}/missing.csv"),
            "--to".into(),
            no_server.clone(),
            "--table".into(),
            "t".into(),
        ],
        vec![
            "load".into(),
            format!("{d}/missing.parquet"),
            "--to".into(),
            no_server.clone(),
            "--table".into(),
            "t".into(),
        ],
        vec![
            "load".into(),
            format!("{d}/in.csv"),
            "--to".into(),
            no_server.clone(),
            "--table".into(),
            "t".into(),
        ],
        vec![
            "gen".into(),
            "--format".into(),
            "arrow".into(),
            "-o".into(),
            format!("{d}/g.arrow"),
        ],
    ];
    let mut transcript = String::new();
    for args in &runs {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        transcript.push_str(&seen(&args, &inrush(&args), dir.path()));
    }
    assert!(!dir.path().join("g.arrow").exists());
    insta::assert_snapshot!(transcript);
}

/// The reject file's default is said in the help, standard input's included.
#[test]
fn help_says_where_rejects_go() {
    let out = inrush(&["load", "--help"]);
    let help = String::from_utf8_lossy(&out.stdout);
    let rejects: Vec<&str> = help
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("--rejects"))
        .take_while(|l| !l.trim().is_empty())
        .collect();
    insta::assert_snapshot!(rejects.join("\n"));
}

/// Messages from the server say its error once (no `db error: db error:`), with exit codes as
/// documented: `--types` naming no column is a usage error; `recover` refused by duplicate rows
/// is refused data (4), not a connection problem (3). A warning on a stderr that is not a
/// terminal has no colour codes, even without NO_COLOR.
#[test]
fn server_messages_say_their_error_once_with_documented_exit_codes() {
    use std::io::Write;
    use std::process::Stdio;

    let db = inrush_testkit::Db::fresh("cli");
    let target = db.target.clone();
    target
        .execute_blocking("CREATE TABLE t (id int PRIMARY KEY)")
        .unwrap();
    let conninfo = db.conninfo.clone();
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.csv");
    std::fs::write(&input, "id,zip\n1,01234\n").unwrap();
    let input = input.to_str().unwrap();
    let mut transcript = String::new();
    let mut run = |args: &[&str], env_no_color: bool| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_inrush"));
        cmd.args(args).env_remove("NO_COLOR");
        if env_no_color {
            cmd.env("NO_COLOR", "1");
        }
        let out = cmd.output().expect("run inrush");
        let shown: Vec<&str> = args
            .iter()
            .map(|a| if *a == conninfo { "URL" } else { a })
            .collect();
        transcript.push_str(&seen(&shown, &out, dir.path()));
        out
    };
    run(
        &[
            "load",
            "--from-query",
            "SELEC 1",
            "--from",
            &conninfo,
            "--to",
            &conninfo,
            "--table",
            "t",
        ],
        true,
    );
    run(
        &[
            "load",
            input,
            "--header",
            "--create",
            "--types",
            "nope=text",
            "--to",
            &conninfo,
            "--table",
            "new",
        ],
        true,
    );

    // A load killed once it has journaled and dropped the empty table's primary key; rows that
    // break the key arrive before `recover`.
    let mut child = load_from_stdin(&conninfo, Stdio::null());
    let mut stdin = child.stdin.take().expect("stdin");
    // More than a block (1 MB): the load plans (and drops) once its first block is read. A
    // thread writes, since the pipe may fill; it holds stdin open until joined.
    let writer = std::thread::spawn(move || {
        let rows: String = (1..=300_000).map(|i| format!("{i}\n")).collect();
        let _ = stdin.write_all(rows.as_bytes()); // a broken pipe once killed is expected
        stdin
    });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let indexes = "SELECT count(*) FROM pg_indexes WHERE tablename = 't'";
    while target.query_text_blocking(indexes).unwrap().as_deref() != Some("0") {
        assert!(
            std::time::Instant::now() < deadline,
            "the primary key was never dropped"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.kill().expect("kill inrush");
    child.wait().expect("wait");
    drop(writer.join().expect("writer thread"));
    target
        .execute_blocking("INSERT INTO t VALUES (7), (7)")
        .unwrap();
    run(&["recover", "--to", &conninfo], true);
    // The next load recreates what the journal holds first, and says so on stderr: a pipe.
    run(
        &[
            "load",
            input,
            "--header",
            "--to",
            &conninfo,
            "--table",
            "t",
            "--columns",
            "id",
        ],
        false,
    );
    assert!(!transcript.contains('\u{1b}'), "{transcript}");
    insta::assert_snapshot!(transcript);
}

/// By default the load chooses its connections while it runs and says so, in the summary and in
/// `--json`; `--connections N` fixes N.
#[test]
fn connections_are_chosen_during_the_load_unless_fixed() {
    let db = inrush_testkit::Db::fresh("cli");
    db.exec("CREATE TABLE t (a int, b text)");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rows.csv");
    let rows: String = (0..5000).map(|i| format!("{i},row {i}\n")).collect();
    std::fs::write(&path, rows).unwrap();
    let load = |extra: &[&str]| {
        let mut args = vec![
            "load",
            path.to_str().unwrap(),
            "--to",
            &db.conninfo,
            "--table",
            "t",
            "--no-progress",
            "--workers",
            "2",
        ];
        args.extend_from_slice(extra);
        let out = inrush(&args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    };
    let json = |out: std::process::Output| -> serde_json::Value {
        serde_json::from_slice(&out.stdout).expect("one JSON object on stdout")
    };
    let chosen = json(load(&["--json"]));
    let p = &chosen["parallelism"];
    assert_eq!(p["adaptive"], true, "{chosen}");
    assert_eq!(chosen["connections"], p["chosen"]);
    assert!(p["opened"].as_u64().unwrap() >= p["chosen"].as_u64().unwrap());
    assert!(p["reason"].as_str().unwrap().contains(" opened"), "{p}");

    let fixed = json(load(&["--json", "--connections", "3"]));
    assert_eq!(fixed["connections"], 3);
    assert_eq!(
        fixed["parallelism"],
        serde_json::json!({"adaptive": false, "opened": 3, "chosen": 3, "reason": "fixed by --connections"})
    );

    let said = String::from_utf8_lossy(&load(&[]).stderr).to_string();
    assert!(said.contains("(chosen during the load)"), "{said}");
    assert!(said.contains("\n  connections: "), "{said}");
    assert_eq!(db.int("SELECT count(*) FROM t"), 15_000);
}

/// `ps` shows every user each process's arguments: a password given in `--to` is overwritten
/// there once the arguments are read, and the load still uses it.
#[test]
fn a_password_in_the_arguments_is_hidden_from_other_users_ps() {
    use std::io::Write;
    let db = inrush_testkit::Db::fresh("cli");
    db.target
        .execute_blocking("CREATE TABLE t (id int, note text)")
        .unwrap();
    let conninfo = format!("{} password=s3cret-in-args", db.conninfo);
    let mut child = load_from_stdin(&conninfo, std::process::Stdio::piped());
    let cmdline = format!("/proc/{}/cmdline", child.id());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let shown = loop {
        let shown = String::from_utf8_lossy(&std::fs::read(&cmdline).unwrap()).replace('\0', " ");
        if shown.contains("password=xxxxxxxxxxxxxx ") || std::time::Instant::now() > deadline {
            break shown;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    let mut stdin = child.stdin.take().expect("stdin");
    writeln!(stdin, "1,one").unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(!shown.contains("s3cret"), "{shown}");
    assert!(shown.contains("password=xxxxxxxxxxxxxx "), "{shown}");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows = db.target.query_text_blocking("SELECT count(*) FROM t");
    assert_eq!(rows.unwrap().as_deref(), Some("1"));
}

/// `sslmode` as libpq reads it, against a server with TLS on: `prefer` (the default) and
/// `require` encrypt, `disable` does not, `verify-full` checks the certificate against
/// `sslrootcert` and the host name, and a certificate no root vouches for ends the load with a
/// connection error (exit 3) that says why. Skipped without a PostgreSQL built with SSL (see
/// `inrush_testkit::tls_server`).
#[test]
fn tls_as_sslmode_asks() {
    let Some(tls) = inrush_testkit::tls_server() else {
        eprintln!("skipped: no PostgreSQL built with SSL (set INRUSH_TLS_PG_BIN)");
        return;
    };
    let root = format!("sslrootcert={}", tls.cert.display());
    let conninfo = |host: &str, ssl: &str| tls.server.tcp_conninfo(host, "postgres", ssl);
    let encrypted = |conninfo: &str| -> bool {
        let mut client = inrush_postgres::ConnectOptions::parse(conninfo)
            .unwrap()
            .connect_blocking()
            .unwrap_or_else(|e| panic!("{conninfo}: {e}"));
        client
            .query_one(
                "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
                &[],
            )
            .unwrap()
            .get(0)
    };
    assert!(encrypted(&conninfo("127.0.0.1", "")));
    assert!(encrypted(&conninfo("127.0.0.1", "sslmode=require")));
    assert!(!encrypted(&conninfo("127.0.0.1", "sslmode=disable")));
    let verified = conninfo("localhost", &format!("sslmode=verify-full {root}"));
    assert!(encrypted(&verified));

    let mut client = inrush_postgres::ConnectOptions::parse(&verified)
        .unwrap()
        .connect_blocking()
        .unwrap();
    client
        .batch_execute("CREATE TABLE t (a int, b text)")
        .unwrap();
    let input = tls.server.root().join("in.csv");
    std::fs::write(&input, "1,x\n2,y\n").unwrap();
    let input = input.to_str().unwrap();
    let out = inrush(&[
        "load",
        input,
        "--to",
        &verified,
        "--table",
        "t",
        "--no-progress",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: i64 = client
        .query_one("SELECT count(*) FROM t", &[])
        .unwrap()
        .get(0);
    assert_eq!(rows, 2);

    let unvouched = conninfo("localhost", "sslmode=verify-full");
    let out = inrush(&[
        "load",
        input,
        "--to",
        &unvouched,
        "--table",
        "t",
        "--no-progress",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("certificate"), "{stderr}");
}

/// gzip and zstd are recognised by their first bytes, not only by a file's name: on standard
/// input (`zcat`-less pipes) and in a file named without `.gz`.
#[test]
fn compressed_input_is_recognised_by_its_first_bytes() {
    use std::io::Write;
    use std::process::Stdio;

    let db = inrush_testkit::Db::fresh("cli");
    db.exec("CREATE TABLE t (id int, name text)");
    let csv = b"id,name\n1,alice\n2,\"bob\nsmith\"\n";
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(csv).unwrap();
    let gz = gz.finish().unwrap();
    let zst = zstd::encode_all(&csv[..], 3).unwrap();
    let load = |input: &str, stdin: Option<&[u8]>| {
        let mut child = Command::new(env!("CARGO_BIN_EXE_inrush"))
            .args([
                "load",
                input,
                "--to",
                &db.conninfo,
                "--table",
                "t",
                "--header",
            ])
            .args(["--no-progress"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn inrush");
        let mut pipe = child.stdin.take().expect("stdin");
        if let Some(bytes) = stdin {
            pipe.write_all(bytes).expect("write stdin");
        }
        drop(pipe);
        let out = child.wait_with_output().expect("wait");
        assert!(
            out.status.success(),
            "{input}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    load("-", Some(&gz));
    load("-", Some(&zst));
    let dir = tempfile::tempdir().unwrap();
    let unnamed = dir.path().join("people.csv");
    std::fs::write(&unnamed, &gz).unwrap();
    load(unnamed.to_str().unwrap(), None);
    assert_eq!(
        db.text("SELECT count(*) || ' ' || string_agg(DISTINCT name, '|' ORDER BY name) FROM t"),
        "6 alice|bob\nsmith"
    );
}

/// `inrush plan` takes the load's own command line: `load` replaced by `plan`, the input's
/// size weighed from its first input; a load with nothing to load is a usage error.
#[test]
fn plan_takes_the_loads_own_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("plan.db");
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute_batch(
        "CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT); CREATE INDEX t_name ON t (name);
         INSERT INTO t VALUES (1, 'a');",
    )
    .unwrap();
    drop(conn);
    let csv = dir.path().join("in.csv");
    let rows: String = (2..5000).map(|i| format!("{i};name {i}\n")).collect();
    std::fs::write(&csv, format!("id;name\n{rows}")).unwrap();
    let (db, csv) = (db.to_str().unwrap(), csv.to_str().unwrap());
    let common = ["--to", db, "--table", "t"];
    let plan = inrush(
        &[
            &["plan", csv, "--header", "--delimiter", ";"][..],
            &common[..],
        ]
        .concat(),
    );
    let said = String::from_utf8_lossy(&plan.stdout);
    assert!(
        plan.status.success(),
        "{}",
        String::from_utf8_lossy(&plan.stderr)
    );
    assert!(
        said.contains("t_name") && !said.contains("unknown"),
        "{said}"
    );
    let bare = inrush(&[&["plan"][..], &common[..]].concat());
    let said = String::from_utf8_lossy(&bare.stdout);
    assert!(
        bare.status.success(),
        "{}",
        String::from_utf8_lossy(&bare.stderr)
    );
    assert!(said.contains("without --input"), "{said}");
    let nothing = inrush(&[&["load"][..], &common[..]].concat());
    assert_eq!(nothing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&nothing.stderr).contains("nothing to load"));
}

/// `--check` finds what the load would refuse (issue 30): it writes the rows in a transaction
/// it rolls back, so a key already in the table, a foreign-key miss and a CHECK violation
/// end it with the load's exit 4 naming the row; with `--max-errors` every refused row goes
/// to the reject file (exit 6, as a load with rejects); the table and its definitions are
/// as they were, `--truncate` included.
#[test]
fn check_finds_what_the_server_would_refuse() {
    let db = inrush_testkit::Db::fresh("check");
    db.exec(
        "CREATE TABLE parent (id int PRIMARY KEY); INSERT INTO parent VALUES (1), (2);
         CREATE TABLE t (id int PRIMARY KEY, p int REFERENCES parent, n int CHECK (n >= 0));
         CREATE INDEX t_n ON t (n);
         INSERT INTO t VALUES (1, 1, 1), (2, 2, 2);",
    );
    let dir = tempfile::tempdir().unwrap();
    let bin = env!("CARGO_BIN_EXE_inrush");
    let file = |name: &str, body: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, body).unwrap();
        path.to_str().unwrap().to_string()
    };
    let (rows, definitions) = (db.text("SELECT * FROM t ORDER BY id"), db.definitions());
    let check = |input: &str, extra: &[&str]| {
        let mut args = vec![
            "load",
            input,
            "--to",
            &db.conninfo,
            "--table",
            "t",
            "--header",
            "--check",
            "--no-progress",
        ];
        args.extend_from_slice(extra);
        let (code, out) = inrush_testkit::run(bin, &args);
        assert_eq!(db.text("SELECT * FROM t ORDER BY id"), rows, "{out}");
        assert_eq!(db.definitions(), definitions, "{out}");
        (code, out)
    };
    let again = file("again.csv", "id,p,n\n3,1,3\n1,1,1\n");
    let (code, out) = check(&again, &[]);
    assert_eq!(code, 4, "{out}");
    assert!(out.contains("again.csv:3:"), "{out}");
    assert!(out.contains("(id)=(1)"), "{out}");
    // A foreign key is checked at the end of the COPY, which names the value, not the line.
    let orphan = file("orphan.csv", "id,p,n\n3,9,3\n");
    let (code, out) = check(&orphan, &[]);
    assert_eq!(code, 4, "{out}");
    assert!(out.contains("t_p_fkey") && out.contains("(p)=(9)"), "{out}");
    let negative = file("negative.csv", "id,p,n\n3,1,-1\n");
    let (code, out) = check(&negative, &[]);
    assert_eq!(code, 4, "{out}");
    assert!(
        out.contains("t_n_check") && out.contains("negative.csv:2:"),
        "{out}"
    );
    // Every refused row in the reject file, the others counted as loadable.
    let mixed = file("mixed.csv", "id,p,n\n3,1,3\n1,1,1\n4,9,4\n5,1,-5\n6,2,6\n");
    let rejects = dir.path().join("mixed.rejects");
    let rejects_arg = rejects.to_str().unwrap();
    let (code, out) = check(&mixed, &["--max-errors", "10", "--rejects", rejects_arg]);
    assert_eq!(code, 6, "{out}");
    assert!(
        out.contains("checked 5 rows") && out.contains("3 would be refused"),
        "{out}"
    );
    assert!(out.contains("nothing was written"), "{out}");
    let refused = std::fs::read_to_string(&rejects).unwrap();
    let mut refused: Vec<&str> = refused.lines().collect();
    refused.sort();
    assert_eq!(refused, ["1,1,1", "4,9,4", "5,1,-5", "id,p,n"], "{out}");
    let (code, out) = check(&mixed, &["--max-errors", "10", "--json"]);
    assert_eq!(code, 6, "{out}");
    assert!(out.contains("\"loaded\":false"), "{out}");
    // --truncate: checked against the table emptied in the transaction rolled back.
    let (code, out) = check(&again, &["--truncate"]);
    assert_eq!(code, 0, "{out}");
    let (code, out) = check(&orphan, &["--truncate"]);
    assert_eq!(code, 4, "{out}");
    assert_eq!(db.journal_len(), 0);
}
