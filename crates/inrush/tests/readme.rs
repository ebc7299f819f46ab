//! The help is the one source: every option says what it does, and the option table of the
//! loading guide (`docs/loading.md`) lists exactly the options `inrush load --help` shows.

use std::collections::BTreeSet;
use std::process::Command;

/// `inrush ARGS --help` at a fixed width, so wrapping does not depend on who runs the test.
fn help(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_inrush"))
        .args(args)
        .arg("--help")
        .env("COLUMNS", "100")
        .output()
        .expect("run inrush");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 help")
}

/// The `--long` names in `text`.
fn flags(text: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut rest = text;
    while let Some(at) = rest.find("--") {
        let name: String = rest[at + 2..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect();
        if !name.is_empty() {
            found.insert(format!("--{name}"));
        }
        rest = &rest[at + 2 + name.len()..];
    }
    found
}

/// The options of a help text (`-o, --output <OUTPUT>`, `--json`), each with the text that
/// describes it: on the same line (short help) or on the lines below (long help).
fn options(help: &str) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = Vec::new();
    let mut in_options = false;
    for line in help.lines().filter(|l| !l.trim().is_empty()) {
        if !line.starts_with(' ') {
            in_options = line.ends_with("Options:");
            continue;
        }
        let indent = line.len() - line.trim_start().len();
        match out.last_mut() {
            _ if in_options && indent <= 6 && line.trim_start().starts_with('-') => {
                let (option, said) = line.trim().split_once("  ").unwrap_or((line.trim(), ""));
                let said = [said.trim()].into_iter().filter(|s| !s.is_empty());
                out.push((option.to_string(), said.map(String::from).collect()))
            }
            Some((_, text)) if in_options => text.push(line.trim().to_string()),
            _ => {}
        }
    }
    out
}

/// The first column of the `| option | meaning |` table under "## Loading files" of the
/// loading guide.
fn readme_load_options() -> Vec<String> {
    let readme = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/loading.md"
    ))
    .expect("docs/loading.md");
    let section = readme
        .split("\n## ")
        .find(|s| s.starts_with("Loading files"))
        .expect("a \"Loading files\" section");
    let rows: Vec<&str> = section
        .lines()
        .skip_while(|l| !l.starts_with("| option | meaning |"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .collect();
    assert!(!rows.is_empty(), "no option table under \"Loading files\"");
    rows.iter()
        .map(|row| {
            // The first cell ends at the first `|` that is not escaped (`csv\|tsv`).
            let cell = &row[1..];
            let end = cell
                .match_indices('|')
                .find(|(i, _)| !cell[..*i].ends_with('\\'))
                .map_or(cell.len(), |(i, _)| i);
            cell[..end].trim().to_string()
        })
        .collect()
}

#[test]
fn the_readme_lists_exactly_the_load_options_of_the_help() {
    let shown: BTreeSet<String> = options(&help(&["load"]))
        .iter()
        .flat_map(|(line, _)| flags(line))
        .filter(|f| f != "--help")
        .collect();
    assert!(
        shown.contains("--create") && shown.contains("--format"),
        "{shown:?}"
    );
    let readme: BTreeSet<String> = readme_load_options()
        .iter()
        .flat_map(|c| flags(c))
        .collect();
    let missing: Vec<_> = shown.difference(&readme).collect();
    let unknown: Vec<_> = readme.difference(&shown).collect();
    assert!(
        missing.is_empty() && unknown.is_empty(),
        "docs/loading.md's option table: missing {missing:?}; not in `inrush load --help`: {unknown:?}"
    );
}

/// The README's `--format` row names every format the help offers.
#[test]
fn the_readme_names_every_load_format() {
    let help = help(&["load"]);
    let values: Vec<&str> = help
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("--format"))
        .skip_while(|l| !l.trim_start().starts_with("Possible values:"))
        .skip(1)
        .map_while(|l| l.trim_start().strip_prefix("- "))
        .map(|v| v.split(':').next().unwrap_or(v))
        .collect();
    assert!(values.contains(&"tsv"), "{help}");
    let row = readme_load_options()
        .into_iter()
        .find(|c| c.starts_with("`--format"))
        .expect("a --format row");
    for value in values {
        assert!(row.contains(value), "{row} does not name {value}");
    }
}

/// No option shows up in a help without saying what it does.
#[test]
fn every_option_says_what_it_does() {
    let commands: [&[&str]; 8] = [
        &[],
        &["load"],
        &["demo"],
        &["gen"],
        &["plan"],
        &["recover"],
        &["lab", "run"],
        &["lab", "report"],
    ];
    let mut bare = Vec::new();
    for args in commands {
        for (option, text) in options(&help(args)) {
            let said = text.iter().any(|l| {
                !["[default:", "[env:", "[possible values:"]
                    .iter()
                    .any(|p| l.starts_with(p))
            });
            if !said {
                bare.push(format!("inrush {} {option}", args.join(" ")));
            }
        }
    }
    assert!(bare.is_empty(), "options without a description: {bare:#?}");
}

/// The top-level help names every input `load` takes and what `gen` writes.
#[test]
fn top_level_help_says_what_each_command_does() {
    insta::assert_snapshot!(help(&[]));
}
