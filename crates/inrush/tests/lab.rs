//! `inrush lab` as a user runs it: the catalogue listing, and usage errors.

use std::process::Command;

fn inrush(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_inrush"))
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .expect("run inrush")
}

#[test]
fn lab_list_prints_the_catalogue() {
    let out = inrush(&["lab", "list"]);
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    insta::assert_snapshot!(stdout);
}

#[test]
fn lab_list_mariadb_says_what_does_not_apply() {
    let out = inrush(&["lab", "list", "--mariadb"]);
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("LOAD DATA LOCAL INFILE, one stream"),
        "{stdout}"
    );
    assert!(
        stdout.contains("x COPY binary, one stream: not applicable on MariaDB: "),
        "{stdout}"
    );
    assert!(
        stdout.contains("C2  ") && stdout.contains("    not applicable on MariaDB: InnoDB"),
        "{stdout}"
    );
    assert!(!stdout.contains("NOT VALID"), "{stdout}");
}

#[test]
fn lab_run_refuses_unknown_ids_and_bad_scales() {
    let out = inrush(&["lab", "run", "Z9", "--to", "host=/nonexistent"]);
    assert_ne!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown experiment"));
    let out = inrush(&["lab", "run", "--scale", "0"]);
    assert_ne!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--scale"));
}

#[test]
fn lab_list_odbc_names_the_parameter_arrays_and_says_what_does_not_apply() {
    let out = inrush(&["lab", "list", "--odbc"]);
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    for said in [
        "parameter arrays, 10000 rows/execute, commit every 10000",
        "x pipelined single-row INSERTs, 10 in flight, commit every 1000: not applicable over ODBC: a driver runs one execute at a time",
        "4 connection(s), parameter arrays of 1000 rows",
        "not applicable over ODBC: it needs the database's own DDL or settings",
    ] {
        assert!(stdout.contains(said), "{said}: {stdout}");
    }
    let out = inrush(&["lab", "run", "A1", "--to", "odbc:"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("needs a connection string"));
}
