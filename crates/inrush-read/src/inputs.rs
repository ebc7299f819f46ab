//! What the input arguments name: files, directories (their files, sorted) and globs, each
//! with the format its name says.

use crate::{Error, Result};
use std::path::{Path, PathBuf};

/// How an input's records are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum InputFormat {
    Csv,
    /// CSV with a tab delimiter (`.tsv`): COPY's CSV rules otherwise.
    Tsv,
    /// One JSON object per line (`.jsonl`, `.ndjson`).
    Jsonl,
    /// Apache Parquet (`.parquet`).
    Parquet,
    /// Arrow IPC file (`.arrow`, `.feather`, `.ipc`).
    Arrow,
}

impl InputFormat {
    pub fn name(self) -> &'static str {
        match self {
            InputFormat::Csv => "csv",
            InputFormat::Tsv => "tsv",
            InputFormat::Jsonl => "jsonl",
            InputFormat::Parquet => "parquet",
            InputFormat::Arrow => "arrow",
        }
    }

    /// The format a file name says, looking through `.gz`/`.zst`; `None` when it says nothing.
    /// Only the names the README lists: a `.txt` or `.json` file may be anything (notes, one
    /// JSON document), so it says nothing.
    pub fn from_path(path: &Path) -> Option<InputFormat> {
        Self::named(path).map(|(format, _)| format)
    }

    /// The format a name says, and whether it is compressed.
    fn named(path: &Path) -> Option<(InputFormat, bool)> {
        let name = path.file_name()?.to_str()?.to_ascii_lowercase();
        let plain = [".gz", ".gzip", ".zst", ".zstd"]
            .iter()
            .find_map(|ext| name.strip_suffix(ext));
        let ext = plain.unwrap_or(&name).rsplit_once('.')?.1;
        let format = match ext {
            "csv" => InputFormat::Csv,
            "tsv" => InputFormat::Tsv,
            "jsonl" | "ndjson" => InputFormat::Jsonl,
            "parquet" => InputFormat::Parquet,
            "arrow" | "feather" | "ipc" => InputFormat::Arrow,
            _ => return None,
        };
        Some((format, plain.is_some()))
    }

    /// Whether a directory load takes this file: its name says a format inrush reads from it
    /// (columnar files are read by parts, so not compressed).
    fn loadable(path: &Path) -> bool {
        match Self::named(path) {
            Some((InputFormat::Parquet | InputFormat::Arrow, compressed)) => !compressed,
            Some(_) => true,
            None => false,
        }
    }
}

/// The files the input arguments name, and the files of named directories that were left out
/// because their names say no format inrush reads.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Expanded {
    pub files: Vec<String>,
    pub skipped: Vec<String>,
}

/// Expands the input arguments, in order: `-` (standard input) and plain files stay as they
/// are; a directory gives its regular files whose names say a format (sorted, not recursive,
/// hidden files and reject files left out silently, other names listed as skipped); an
/// argument with `*`, `?` or `[` in its file name is a glob over its directory (for when the
/// shell did not expand it, e.g. quoted). Each argument must name at least one file.
pub fn expand(args: &[String]) -> Result<Expanded> {
    let mut files = Vec::new();
    let mut skipped = Vec::new();
    for arg in args {
        let path = Path::new(arg);
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let before = files.len();
        if arg == "-" || (path.is_file() && !has_wildcard(name)) {
            files.push(arg.clone());
            continue;
        }
        if path.is_dir() {
            for file in listing(path)? {
                if is_hidden_or_reject(&file) {
                    continue;
                }
                match InputFormat::loadable(&file) {
                    true => files.push(file.display().to_string()),
                    false => skipped.push(file.display().to_string()),
                }
            }
        } else if has_wildcard(name) {
            let dir = match path.parent() {
                Some(d) if !d.as_os_str().is_empty() => d,
                _ => Path::new("."),
            };
            for file in listing(dir)? {
                let file_name = file.file_name().and_then(|n| n.to_str()).unwrap_or("");
                // Like a shell, `*` does not match a leading dot; reject files are inrush's own.
                let hidden = file_name.starts_with('.') && !name.starts_with('.');
                if glob_match(name.as_bytes(), file_name.as_bytes())
                    && !hidden
                    && !file_name.ends_with(".rejects")
                    && !file_name.ends_with(".rejects.log")
                {
                    files.push(match path.parent() {
                        Some(d) if !d.as_os_str().is_empty() => file.display().to_string(),
                        _ => file_name.to_string(),
                    });
                }
            }
        } else {
            // Not there: opening it reports the error with the path.
            files.push(arg.clone());
            continue;
        }
        if files.len() == before {
            return Err(Error::Inputs(format!("{arg}: no input files there")));
        }
    }
    Ok(Expanded { files, skipped })
}

fn listing(dir: &Path) -> Result<Vec<PathBuf>> {
    let open_error = |cause| Error::Open {
        path: dir.to_path_buf(),
        cause,
    };
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(open_error)? {
        let path = entry.map_err(open_error)?.path();
        if path.is_file() {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

fn is_hidden_or_reject(path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    name.starts_with('.') || name.ends_with(".rejects") || name.ends_with(".rejects.log")
}

fn has_wildcard(name: &str) -> bool {
    name.contains(['*', '?', '['])
}

/// Shell-style matching of one file name: `*`, `?`, `[abc]`, `[a-z]`, `[!x]`.
fn glob_match(pattern: &[u8], name: &[u8]) -> bool {
    match pattern.first() {
        None => name.is_empty(),
        Some(b'*') => (0..=name.len()).any(|skip| glob_match(&pattern[1..], &name[skip..])),
        Some(b'?') => !name.is_empty() && glob_match(&pattern[1..], &name[1..]),
        Some(b'[') => {
            let Some(close) = pattern.iter().skip(2).position(|&b| b == b']') else {
                return name.first() == Some(&b'[') && glob_match(&pattern[1..], &name[1..]);
            };
            let class = &pattern[1..close + 2];
            let (negated, class) = match class.first() {
                Some(b'!' | b'^') => (true, &class[1..]),
                _ => (false, class),
            };
            let Some(&c) = name.first() else {
                return false;
            };
            let mut hit = false;
            let mut i = 0;
            while i < class.len() {
                if i + 2 < class.len() && class[i + 1] == b'-' {
                    hit |= class[i] <= c && c <= class[i + 2];
                    i += 3;
                } else {
                    hit |= class[i] == c;
                    i += 1;
                }
            }
            hit != negated && glob_match(&pattern[close + 3..], &name[1..])
        }
        Some(&p) => name.first() == Some(&p) && glob_match(&pattern[1..], &name[1..]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_come_from_names() {
        let f = |n: &str| InputFormat::from_path(Path::new(n));
        assert_eq!(f("a.csv"), Some(InputFormat::Csv));
        assert_eq!(f("a.CSV.gz"), Some(InputFormat::Csv));
        assert_eq!(f("x/part-0.jsonl.zst"), Some(InputFormat::Jsonl));
        assert_eq!(f("lineitem.parquet"), Some(InputFormat::Parquet));
        assert_eq!(f("t.arrow"), Some(InputFormat::Arrow));
        assert_eq!(f("t.tsv.zst"), Some(InputFormat::Tsv));
        assert_eq!(f("README"), None);
        assert_eq!(f("README.txt"), None);
        assert_eq!(f("orders.tbl"), None);
        assert_eq!(f("config.json"), None);
    }

    #[test]
    fn globs_match_like_a_shell() {
        let m = |p: &str, n: &str| glob_match(p.as_bytes(), n.as_bytes());
        assert!(m("*.csv", "a.csv"));
        assert!(!m("*.csv", "a.csv.gz"));
        assert!(m("part-?.csv*", "part-1.csv.gz"));
        assert!(m("p[0-2].csv", "p1.csv"));
        assert!(!m("p[!0-2].csv", "p1.csv"));
        assert!(m("*", ""));
        assert!(!m("a*b", "ac"));
    }

    #[test]
    fn directories_and_globs_expand_sorted() {
        let dir = tempfile::tempdir().unwrap();
        for name in [
            "b.csv",
            "a.csv.gz",
            "c.jsonl",
            ".hidden.csv",
            "a.csv.rejects",
            "notes.md",
            "README.txt",
            "d.tsv.zst",
            "e.parquet.gz",
        ] {
            std::fs::write(dir.path().join(name), b"").unwrap();
        }
        let d = dir.path().display().to_string();
        let names = |files: Vec<String>| -> Vec<String> {
            files
                .iter()
                .map(|f| {
                    Path::new(f)
                        .file_name()
                        .unwrap()
                        .to_str()
                        .unwrap()
                        .to_string()
                })
                .collect()
        };
        let listed = expand(std::slice::from_ref(&d)).unwrap();
        assert_eq!(
            names(listed.files),
            ["a.csv.gz", "b.csv", "c.jsonl", "d.tsv.zst"]
        );
        assert_eq!(
            names(listed.skipped),
            ["README.txt", "e.parquet.gz", "notes.md"]
        );
        assert_eq!(
            names(expand(&[format!("{d}/*.csv*")]).unwrap().files),
            ["a.csv.gz", "b.csv"]
        );
        let e = expand(&[format!("{d}/*.parquet")]).unwrap_err();
        assert!(e.to_string().contains("no input files"), "{e}");
        assert_eq!(expand(&["-".into()]).unwrap().files, ["-"]);
    }
}
