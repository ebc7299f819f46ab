//! The README's examples run as shown: each `console` block's commands are run in order in a
//! directory of their own, against a private PostgreSQL in place of `postgresql://app@db/sales`
//! (and that directory in place of `/data/` for SQLite files), and what the README shows each one print must be what it prints, in order, numbers and
//! sizes aside (timings and rates differ from run to run). A line `...` stands for lines left
//! out. `$ cat FILE` writes the file shown, or, when a command before made it, checks it;
//! `$ echo $?` checks the last command's exit code. A command whose input the README does not
//! show (`orders.csv`, a MySQL server) is not run: those examples are checked by the tests of
//! what they do (`load_cli.rs`, `copy.rs`).
//!
//! Every `inrush ...` line of the README's and the guides' `sh` and `console` blocks must also
//! be one the command line takes (its options exist and go together), so that a renamed or
//! removed option cannot linger in the docs.

use inrush_testkit::Db;
use std::path::Path;
use std::process::Command;

/// The README's stand-in for the user's server, and the folder of its SQLite files.
const URL: &str = "postgresql://app@db/sales";
const SQLITE_DIR: &str = "sqlite:///data/";

/// The table the first example loads into, as the user's would be.
const USERS: &str =
    "CREATE TABLE users (id int PRIMARY KEY, name text, signed_up date, score numeric)";

/// A command and what the README shows it print.
struct Shown {
    command: String,
    printed: Vec<String>,
}

/// The commands of the README's `console` blocks, in order.
fn console_blocks(readme: &str) -> Vec<Shown> {
    let mut shown: Vec<Shown> = Vec::new();
    let mut inside = false;
    for line in readme.lines() {
        match line.trim_end() {
            "```console" => inside = true,
            "```" => inside = false,
            line if inside => match line.strip_prefix("$ ") {
                Some(command) => shown.push(Shown {
                    command: command.to_string(),
                    printed: Vec::new(),
                }),
                None => shown
                    .last_mut()
                    .expect("a console block opens with a command")
                    .printed
                    .push(line.to_string()),
            },
            _ => {}
        }
    }
    shown
}

/// A line with its numbers and the size units after them made alike: `in 0.18 s` and `in
/// 0.2 s`, `1.56 kB` and `980 B` read the same.
fn alike(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.trim_end().chars().peekable();
    while let Some(c) = chars.next() {
        if !c.is_ascii_digit() {
            out.push(c);
            continue;
        }
        while chars
            .peek()
            .is_some_and(|c| c.is_ascii_digit() || *c == ',' || *c == '.')
        {
            chars.next();
        }
        out.push('N');
    }
    for unit in [" KiB", " MiB", " GiB", " kB", " MB", " GB"] {
        out = out.replace(&format!("N{unit}"), "N B");
    }
    out
}

/// Each shown line, in order, among the printed ones; `...` skips any number of them.
fn assert_shown(command: &str, shown: &[String], printed: &str) {
    let printed: Vec<String> = printed.lines().map(alike).collect();
    let mut at = 0;
    let mut skipping = false;
    for line in shown {
        if line.trim() == "..." {
            skipping = true;
            continue;
        }
        let want = alike(line);
        match printed[at..].iter().position(|p| *p == want) {
            Some(found) if skipping || found == 0 => at += found + 1,
            _ => panic!(
                "`{command}` does not print what the README shows:\n  expected: {want}\n  printed:\n{}",
                printed.join("\n")
            ),
        }
        skipping = false;
    }
}

/// The command's words, the README's URL swapped for `conninfo` (one word) and its SQLite
/// folder for `dir`.
fn words(command: &str, conninfo: &str, dir: &Path) -> Vec<String> {
    let words = command.split_whitespace();
    let swapped = words.map(|w| match w.strip_prefix(SQLITE_DIR) {
        _ if w == URL => conninfo.to_string(),
        Some(file) => format!("sqlite://{}", dir.join(file).display()),
        None => w.to_string(),
    });
    swapped.collect()
}

#[test]
fn the_readme_console_examples_print_what_the_readme_shows() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md"))
            .expect("README.md");
    let db = Db::fresh("examples");
    db.exec(USERS);
    let dir = tempfile::tempdir().expect("tempdir");
    let mut last = None;
    let mut ran = 0;
    for Shown { command, printed } in console_blocks(&readme) {
        let words = words(&command, &db.conninfo, dir.path());
        match words.iter().map(String::as_str).collect::<Vec<_>>()[..] {
            ["cat", file] => {
                let path = dir.path().join(file);
                match path.exists() {
                    true => {
                        let made = std::fs::read_to_string(&path).expect("a file a command made");
                        assert_shown(&command, &printed, &made);
                    }
                    false => std::fs::write(&path, printed.join("\n") + "\n").expect("an input"),
                }
            }
            ["echo", "$?"] => {
                let code: i32 = printed[0].parse().expect("an exit code");
                assert_eq!(last, Some(code), "the exit code the README shows");
            }
            ["inrush", "load", input, ..] if dir.path().join(input).exists() => {
                let out = Command::new(env!("CARGO_BIN_EXE_inrush"))
                    .args(&words[1..])
                    .arg("--no-progress")
                    .current_dir(dir.path())
                    .env("NO_COLOR", "1")
                    .env_remove("INRUSH_TO")
                    .output()
                    .expect("run inrush");
                let printed_now =
                    String::from_utf8_lossy(&[out.stdout, out.stderr].concat()).into_owned();
                assert_shown(&command, &printed, &printed_now);
                last = out.status.code();
                ran += 1;
            }
            _ => last = None,
        }
    }
    assert!(ran >= 4, "the README's loads were found and run ({ran})");
}

#[test]
fn alike_lines_differ_only_in_numbers_and_units() {
    assert_eq!(
        alike("loaded 3 rows in 0.18 s; WAL written 1.56 kB"),
        alike("loaded 3 rows in 0.2 s; WAL written 980 B")
    );
    assert_ne!(alike("loaded 3 rows"), alike("loaded 3 row"));
}

/// The words of a shell command line: quotes kept together and removed, what follows `<`, `>`
/// or `#` dropped (a redirect, a comment).
fn shell_words(line: &str) -> Vec<String> {
    let (mut words, mut word, mut quote, mut started) = (Vec::new(), String::new(), None, false);
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => (quote, started) = (Some(c), true),
            (None, '<' | '>' | '#') if !started => break,
            (None, c) if c.is_whitespace() => {
                if started {
                    words.push(std::mem::take(&mut word));
                }
                started = false;
            }
            (None, c) => (word.push(c), started = true).1,
        }
    }
    if started {
        words.push(word);
    }
    words
}

/// Every `inrush ...` line of the `sh` and `console` blocks of the README and the guides, a
/// backslash continuation joined: where it is, and the line.
fn documented_commands() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut docs = vec![root.join("README.md")];
    let guides = std::fs::read_dir(root.join("docs")).expect("docs/");
    docs.extend(
        guides
            .map(|e| e.expect("a guide").path())
            .filter(|p| p.extension().is_some_and(|e| e == "md")),
    );
    let mut found = Vec::new();
    for doc in docs {
        let text = std::fs::read_to_string(&doc).expect("a guide");
        let (mut inside, mut pending) = (false, String::new());
        for (n, line) in text.lines().enumerate() {
            match line.trim() {
                "```sh" | "```console" => inside = true,
                "```" => inside = false,
                line if inside => {
                    let line = line.strip_prefix("$ ").unwrap_or(line);
                    pending.push_str(line.trim_end_matches('\\'));
                    if line.ends_with('\\') {
                        continue;
                    }
                    let command = std::mem::take(&mut pending);
                    if command.starts_with("inrush ") {
                        let name = doc.file_name().unwrap_or_default().to_string_lossy();
                        found.push((format!("{name}:{}", n + 1), command));
                    }
                }
                _ => {}
            }
        }
    }
    found
}

#[test]
fn every_command_the_docs_show_is_one_the_command_line_takes() {
    let commands = documented_commands();
    assert!(
        commands.len() >= 30,
        "the guides' commands were found ({})",
        commands.len()
    );
    for (at, command) in commands {
        let words = shell_words(&command);
        if let Err(e) = <inrush::cli::Cli as clap::Parser>::try_parse_from(&words) {
            panic!("{at}: `{command}` is refused:\n{e}");
        }
    }
}

#[test]
fn shell_words_keep_quotes_together_and_drop_redirects_and_comments() {
    assert_eq!(
        shell_words(r#"inrush load - --to "host=/x dbname=s" --null '' < a.csv  # a comment"#),
        [
            "inrush",
            "load",
            "-",
            "--to",
            "host=/x dbname=s",
            "--null",
            ""
        ]
    );
}
