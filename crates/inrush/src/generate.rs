//! `inrush generate`: man pages, shell completions and the Markdown reference, all from the
//! clap definitions in [`crate::cli`], so that none of them can say something the help does not.
//!
//! The reference is written deterministically (commands and options in the help's order, no
//! dates, no paths, no wrapping): `tests/reference.rs` compares it byte for byte with the copy
//! in `docs/reference/`.

use crate::Outcome;
use anyhow::{Context, Result};
use clap::{Arg, ArgAction, Args, Subcommand};
use std::path::Path;

#[derive(Args, Debug)]
pub struct GenerateArgs {
    #[command(subcommand)]
    pub command: GenerateCommand,
}

#[derive(Subcommand, Debug)]
pub enum GenerateCommand {
    /// Write one man page per command and subcommand (inrush.1, inrush-load.1,
    /// inrush-lab-run.1, ...) into DIR.
    Man {
        /// The folder for the pages (created if missing).
        dir: std::path::PathBuf,
    },
    /// Print the completion script of a shell on stdout (e.g. `inrush generate completions
    /// bash > /etc/bash_completion.d/inrush`).
    Completions {
        /// The shell the script is for.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Write the command reference as Markdown into DIR: one page per command and subcommand
    /// (inrush-load.md, ...) and README.md listing them.
    Reference {
        /// The folder for the pages (created if missing).
        dir: std::path::PathBuf,
    },
}

/// Writes what `args` asks for, from `cli`, the whole command tree.
pub fn run(args: GenerateArgs, cli: clap::Command) -> Result<Outcome> {
    match args.command {
        GenerateCommand::Man { dir } => {
            create_dir(&dir)?;
            let pages = man_pages(&dir, cli)
                .with_context(|| format!("writing the man pages into {}", dir.display()))?;
            eprintln!("wrote {pages} man pages into {}", dir.display());
        }
        GenerateCommand::Completions { shell } => {
            // Into memory first: clap_complete panics on a failed write (a closed pipe).
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut cli.clone(), "inrush", &mut script);
            std::io::Write::write_all(&mut std::io::stdout().lock(), &script)
                .context("writing the completion script")?;
        }
        GenerateCommand::Reference { dir } => {
            create_dir(&dir)?;
            let pages = reference(cli);
            for (name, text) in &pages {
                let path = dir.join(name);
                std::fs::write(&path, text)
                    .with_context(|| format!("writing {}", path.display()))?;
            }
            eprintln!("wrote {} pages into {}", pages.len(), dir.display());
        }
    }
    Ok(Outcome::Done)
}

/// `inrush.1` and one page per subcommand (`inrush-lab-run.1`), each saying which inrush it
/// documents (clap_mangen's own `generate_to` gives a subcommand's page no version). No date:
/// the same inrush writes the same pages.
fn man_pages(dir: &Path, cli: clap::Command) -> std::io::Result<usize> {
    let mut cli = cli.disable_help_subcommand(true);
    cli.build();
    let source = format!("inrush {}", cli.get_version().unwrap_or_default());
    let mut commands = vec![&cli];
    collect(&cli, &mut commands);
    for cmd in &commands {
        clap_mangen::Man::new((*cmd).clone())
            .source(source.clone())
            .generate_to(dir)?;
    }
    Ok(commands.len())
}

fn create_dir(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))
}

/// The reference's files, as (file name, contents): `README.md`, the index, then one page per
/// command and subcommand (`inrush-load.md`, `inrush-lab-run.md`, ...).
fn reference(cli: clap::Command) -> Vec<(String, String)> {
    let mut cli = cli.disable_help_subcommand(true);
    cli.build();
    let mut commands = Vec::new();
    collect(&cli, &mut commands);
    let mut files = vec![("README.md".to_string(), index(&cli, &commands))];
    files.extend(commands.iter().map(|c| (file_name(c), page(c))));
    files
}

/// Every visible subcommand of `cmd`, depth first, in the help's order.
fn collect<'a>(cmd: &'a clap::Command, out: &mut Vec<&'a clap::Command>) {
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        out.push(sub);
        collect(sub, out);
    }
}

/// `inrush lab run`, as typed.
fn full_name(cmd: &clap::Command) -> String {
    cmd.get_bin_name().unwrap_or(cmd.get_name()).to_string()
}

/// `inrush-lab-run.md`, like the man page's `inrush-lab-run.1`.
fn file_name(cmd: &clap::Command) -> String {
    let name = cmd.get_display_name().unwrap_or(cmd.get_name());
    format!("{name}.md")
}

fn index(cli: &clap::Command, commands: &[&clap::Command]) -> String {
    let mut out = String::from("# inrush command reference\n\n");
    out.push_str(&about(cli));
    out.push_str(
        "\n\nOne page per command, generated from the same definitions as `inrush COMMAND --help` \
         (`cargo run -p inrush -- generate reference docs/reference` writes this folder again). \
         `inrush generate man DIR` writes them as man pages.\n\n",
    );
    out.push_str(&usage(cli));
    out.push_str("\n## Commands\n\n| Command | Description |\n|---|---|\n");
    for cmd in commands {
        out.push_str(&format!(
            "| [`{}`]({}) | {} |\n",
            full_name(cmd),
            file_name(cmd),
            md(&summary(cmd))
        ));
    }
    out.push_str("\n## Options\n\n");
    out.push_str(&options(cli));
    out
}

fn page(cmd: &clap::Command) -> String {
    let mut out = format!("# {}\n\n", full_name(cmd));
    out.push_str(&about(cmd));
    out.push_str("\n\n");
    out.push_str(&usage(cmd));
    let subcommands: Vec<_> = cmd.get_subcommands().filter(|s| !s.is_hide_set()).collect();
    if !subcommands.is_empty() {
        out.push_str("\n## Commands\n\n| Command | Description |\n|---|---|\n");
        for sub in subcommands {
            out.push_str(&format!(
                "| [`{}`]({}) | {} |\n",
                full_name(sub),
                file_name(sub),
                md(&summary(sub))
            ));
        }
    }
    out.push_str("\n## Options\n\n");
    out.push_str(&options(cmd));
    out.push_str("\n[All commands](README.md)\n");
    out
}

/// The command's long about (its whole doc comment), else its about, as Markdown paragraphs.
fn about(cmd: &clap::Command) -> String {
    let text = cmd
        .get_long_about()
        .or(cmd.get_about())
        .map(|s| s.to_string())
        .unwrap_or_default();
    text.trim()
        .split("\n\n")
        .map(|p| md(&p.replace('\n', " ")))
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// The one-line about the command lists show.
fn summary(cmd: &clap::Command) -> String {
    cmd.get_about().map(|s| s.to_string()).unwrap_or_default()
}

/// The usage line(s), as the help prints them after `Usage:`.
fn usage(cmd: &clap::Command) -> String {
    let usage = cmd.clone().render_usage().to_string();
    let usage = usage.trim().strip_prefix("Usage:").unwrap_or(&usage);
    let lines: Vec<&str> = usage.lines().map(str::trim).collect();
    format!("```text\n{}\n```\n", lines.join("\n"))
}

/// The `| Option | Description | Default |` table of every visible argument: positional ones
/// first (in their order), then the options in the help's order.
fn options(cmd: &clap::Command) -> String {
    let mut args: Vec<&Arg> = cmd.get_arguments().filter(|a| !a.is_hide_set()).collect();
    args.sort_by_key(|a| match a.is_positional() {
        true => (0, a.get_index().unwrap_or(0)),
        false => (1, a.get_display_order()),
    });
    let mut out = String::from("| Option | Description | Default |\n|---|---|---|\n");
    for arg in args {
        let (description, written_default) = description(arg);
        let default = clap_default(arg).or(written_default).unwrap_or_default();
        out.push_str(&format!(
            "| {} | {} | {} |\n",
            option(arg),
            description,
            default
        ));
    }
    out
}

/// `--format <FORMAT>`, `-o, --output <OUTPUT>`, `[INPUTS]...`, `--table <TABLE>` (required).
fn option(arg: &Arg) -> String {
    let names: Vec<String> = match arg.get_value_names() {
        Some(names) => names.iter().map(|n| n.to_string()).collect(),
        None => vec![arg.get_id().as_str().to_uppercase()],
    };
    let many = arg.get_num_args().is_some_and(|n| n.max_values() > 1);
    let dots = if many { "..." } else { "" };
    let mut text = if arg.is_positional() {
        let name = names.join(" ");
        match arg.is_required_set() {
            true => format!("<{name}>{dots}"),
            false => format!("[{name}]{dots}"),
        }
    } else {
        let mut text = String::new();
        if let Some(short) = arg.get_short() {
            text.push_str(&format!("-{short}"));
            if arg.get_long().is_some() {
                text.push_str(", ");
            }
        }
        if let Some(long) = arg.get_long() {
            text.push_str(&format!("--{long}"));
        }
        if arg.get_action().takes_values() {
            let values = names.iter().map(|n| format!("<{n}>")).collect::<Vec<_>>();
            let values = values.join(" ");
            match arg.get_num_args().is_some_and(|n| n.min_values() == 0) {
                true => text.push_str(&format!(" [{values}]{dots}")),
                false => text.push_str(&format!(" {values}{dots}")),
            }
        }
        text
    };
    text = format!("`{}`", text.replace('|', "\\|"));
    if let Some(aliases) = arg.get_visible_aliases() {
        for alias in aliases {
            text.push_str(&format!(", `--{alias}`"));
        }
    }
    if arg.is_required_set() {
        text.push_str(" (required)");
    }
    text
}

/// The argument's help as one Markdown cell (paragraphs joined by `<br><br>`), with its
/// possible values and environment variable; and the default its text gives, `[default: ...]`
/// or `(default: ...)`, taken out of the text when clap knows no default.
fn description(arg: &Arg) -> (String, Option<String>) {
    let text = arg
        .get_long_help()
        .or(arg.get_help())
        .map(|s| s.to_string())
        .unwrap_or_default();
    let (text, written) = match clap_default(arg) {
        None => take_written_default(&text),
        Some(_) => (text, None),
    };
    let mut parts: Vec<String> = text
        .trim()
        .split("\n\n")
        .filter(|p| !p.trim().is_empty())
        .map(|p| md(&p.trim().replace('\n', " ")))
        .collect();
    let values: Vec<_> = match arg.get_action().takes_values() && !arg.is_hide_possible_values_set()
    {
        true => arg.get_possible_values(),
        false => Vec::new(),
    };
    let values: Vec<_> = values.into_iter().filter(|v| !v.is_hide_set()).collect();
    if values.iter().any(|v| v.get_help().is_some()) {
        let lines: Vec<String> = values
            .iter()
            .map(|v| match v.get_help() {
                Some(help) => format!("`{}`: {}", v.get_name(), md(&help.to_string())),
                None => format!("`{}`", v.get_name()),
            })
            .collect();
        parts.push(format!("Possible values:<br>{}", lines.join("<br>")));
    } else if !values.is_empty() {
        let names: Vec<String> = values
            .iter()
            .map(|v| format!("`{}`", v.get_name()))
            .collect();
        parts.push(format!("Possible values: {}", names.join(", ")));
    }
    if let Some(env) = arg.get_env().filter(|_| !arg.is_hide_env_set()) {
        parts.push(format!(
            "Environment variable: `{}`",
            env.to_string_lossy().replace('|', "\\|")
        ));
    }
    (parts.join("<br><br>"), written.map(|d| md(&d)))
}

/// The default clap knows and the help shows: only for arguments that take a value (a flag's
/// `false` is not shown).
fn clap_default(arg: &Arg) -> Option<String> {
    let defaults = arg.get_default_values();
    if defaults.is_empty()
        || arg.is_hide_default_value_set()
        || !arg.get_action().takes_values()
        || matches!(arg.get_action(), ArgAction::SetTrue | ArgAction::SetFalse)
    {
        return None;
    }
    let values: Vec<String> = defaults
        .iter()
        .map(|v| match v.to_string_lossy() {
            v if v.is_empty() => "`\"\"` (empty)".to_string(),
            v => format!("`{}`", v.replace('|', "\\|")),
        })
        .collect();
    Some(values.join(", "))
}

/// `text` without its `[default: ...]` or `(default: ...)`, and what that said.
fn take_written_default(text: &str) -> (String, Option<String>) {
    for (open, close) in [("[default: ", ']'), ("(default: ", ')')] {
        let Some(start) = text.find(open) else {
            continue;
        };
        // The matching bracket: the default's own text may have brackets of its own.
        let mut depth = 0;
        let mut end = None;
        for (i, c) in text[start..].char_indices() {
            match c {
                '[' | '(' => depth += 1,
                ']' | ')' => {
                    depth -= 1;
                    if depth == 0 {
                        end = (c == close).then_some(start + i);
                        break;
                    }
                }
                _ => {}
            }
        }
        let Some(end) = end else {
            continue;
        };
        let default = text[start + open.len()..end].replace('\n', " ");
        let before = text[..start].trim_end();
        let after = &text[end + 1..];
        // At the end, the text ends as the help's one-paragraph texts do: without a period.
        let rest = match after.trim() {
            "" | "." => before.strip_suffix('.').unwrap_or(before).to_string(),
            _ => format!("{before}{after}"),
        };
        return (rest, Some(default.trim().to_string()));
    }
    (text.to_string(), None)
}

/// Help text as Markdown inside a table cell: `|` escaped, and `<`/`>` outside code spans as
/// entities (`<input>.rejects` is not an HTML tag).
fn md(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_code = false;
    for c in text.chars() {
        match c {
            '`' => {
                in_code = !in_code;
                out.push(c);
            }
            '|' => out.push_str("\\|"),
            '<' if !in_code => out.push_str("&lt;"),
            '>' if !in_code => out.push_str("&gt;"),
            c => out.push(c),
        }
    }
    out
}
