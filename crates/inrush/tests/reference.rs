//! The reference in docs/reference/, the man pages and the shell completions come from the clap
//! definitions (`inrush generate`): the committed reference is exactly what the command line
//! generates, and every command has its man page.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Output};

const REGENERATE: &str = "cargo run -p inrush -- generate reference docs/reference";

fn inrush(args: &[&str]) -> Output {
    let out = Command::new(env!("CARGO_BIN_EXE_inrush"))
        .args(args)
        .output()
        .expect("run inrush");
    assert!(
        out.status.success(),
        "inrush {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The names of the files in `dir`.
fn files(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry"))
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

/// The commands `inrush --help` lists (without `help`).
fn commands() -> Vec<String> {
    let help = String::from_utf8(inrush(&["--help"]).stdout).expect("UTF-8 help");
    help.lines()
        .skip_while(|l| *l != "Commands:")
        .skip(1)
        .take_while(|l| l.starts_with(' '))
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(String::from)
        .collect()
}

#[test]
fn the_committed_reference_is_what_the_cli_generates() {
    let generated = tempfile::tempdir().unwrap();
    let dir = generated.path().join("reference");
    inrush(&["generate", "reference", dir.to_str().unwrap()]);
    let committed = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/reference");
    let (new, old) = (files(&dir), files(&committed));
    assert!(
        new.contains("README.md") && new.contains("inrush-load.md"),
        "{new:?}"
    );
    let mut differ = Vec::new();
    for name in new.union(&old) {
        let (new, old) = (
            std::fs::read_to_string(dir.join(name)).ok(),
            std::fs::read_to_string(committed.join(name)).ok(),
        );
        match (new, old) {
            (Some(_), None) => differ.push(format!("docs/reference/{name} is missing")),
            (None, Some(_)) => differ.push(format!(
                "docs/reference/{name} is no command's page (delete it)"
            )),
            (Some(new), Some(old)) if new != old => {
                let line = new
                    .lines()
                    .zip(old.lines())
                    .position(|(a, b)| a != b)
                    .unwrap_or(new.lines().count().min(old.lines().count()));
                differ.push(format!(
                    "docs/reference/{name} differs from line {}:\n  generated: {}\n  committed: {}",
                    line + 1,
                    new.lines().nth(line).unwrap_or("(end of file)"),
                    old.lines().nth(line).unwrap_or("(end of file)"),
                ));
            }
            _ => {}
        }
    }
    assert!(
        differ.is_empty(),
        "the reference in docs/reference/ is not what the command line generates; run `{REGENERATE}`:\n{}",
        differ.join("\n")
    );
}

#[test]
fn every_command_has_a_man_page() {
    let dir = tempfile::tempdir().unwrap();
    let man = dir.path().join("man");
    inrush(&["generate", "man", man.to_str().unwrap()]);
    let pages = files(&man);
    let listed = commands();
    let expected = [
        "load", "copy", "plan", "recover", "status", "demo", "gen", "lab", "generate",
    ];
    for command in expected {
        assert!(
            listed.iter().any(|c| c == command),
            "`inrush --help` lists {listed:?}, not {command}"
        );
    }
    let missing: Vec<String> = ["inrush.1".to_string(), "inrush-lab-run.1".to_string()]
        .into_iter()
        .chain(listed.iter().map(|c| format!("inrush-{c}.1")))
        .filter(|page| !pages.contains(page))
        .collect();
    assert!(missing.is_empty(), "no man page {missing:?} in {pages:?}");
    let load = std::fs::read_to_string(man.join("inrush-load.1")).unwrap();
    assert!(
        load.starts_with(".ie") || load.contains(".TH"),
        "not a man page: {load}"
    );
    assert!(load.contains("network\\-timeout"), "{load}");
}

#[test]
fn bash_completions_offer_the_commands_and_their_options() {
    let out = inrush(&["generate", "completions", "bash"]);
    let script = String::from_utf8(out.stdout).expect("UTF-8 script");
    for word in ["--network-timeout", "copy"] {
        assert!(script.contains(word), "no {word} in:\n{script}");
    }
}
