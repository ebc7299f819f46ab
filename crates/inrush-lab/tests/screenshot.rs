//! The HTML report as a browser draws it: headless Chromium screenshots the sample report, and
//! the screenshot must hold the charts' colours in quantity (bars, lines) and text, i.e. the
//! charts were drawn and the page is not blank.
//!
//! Needs `/usr/bin/chromium` (Debian's chromium package; `scripts/setup.sh` installs it). Without
//! it this test fails: a report nobody checked is not a passing test.
//! `INRUSH_LAB_SAMPLE_DIR=/some/dir` keeps the report and the screenshot there.

mod support;

use inrush_lab::report;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::fixture::sample;
use support::png::{self, rgb};

const CHROMIUM: &str = "/usr/bin/chromium";

/// Colours of `src/report/svg.rs`: ours, the seed's, WAL bars, the first rate line.
const OURS: &str = "#1f77b4";
const SEED: &str = "#ff7f0e";
const WAL: &str = "#2ca02c";
const FIRST_LINE: &str = "#d62728";

#[test]
fn chromium_draws_the_charts() {
    assert!(
        Path::new(CHROMIUM).exists(),
        "{CHROMIUM} is missing: the report's screenshot test needs Debian's chromium package \
         (run scripts/setup.sh as root, or apt-get install -y chromium)"
    );
    let tmp = tempfile::tempdir().unwrap();
    let dir = match std::env::var_os("INRUSH_LAB_SAMPLE_DIR") {
        Some(d) => std::path::PathBuf::from(d),
        None => tmp.path().join("report"),
    };
    let files = report::write(&sample(), &dir).unwrap();
    let shot = dir.join("screenshot.png");
    let _ = std::fs::remove_file(&shot);
    let profile = tempfile::tempdir().unwrap();
    let stderr = std::fs::File::create(tmp.path().join("chromium.log")).unwrap();
    let mut child = Command::new(CHROMIUM)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg("--window-size=1200,3000")
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!(
            "file://{}",
            files.html.canonicalize().unwrap().display()
        ))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .unwrap_or_else(|e| panic!("starting {CHROMIUM}: {e}"));
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium took over 120 s to take the screenshot");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let log = std::fs::read_to_string(tmp.path().join("chromium.log")).unwrap_or_default();
    let bytes = std::fs::read(&shot)
        .unwrap_or_else(|e| panic!("no screenshot ({e}); chromium {status}:\n{log}"));
    let image = png::decode(&bytes).unwrap();
    assert!(
        image.width >= 1000 && image.height >= 2000,
        "screenshot is {}x{}",
        image.width,
        image.height
    );

    // Not blank: plenty of non-white pixels, and dark ones (text, table rules).
    let total = image.pixels.len();
    let non_white = image
        .pixels
        .iter()
        .filter(|p| p.iter().any(|&c| c < 240))
        .count();
    let dark = image
        .pixels
        .iter()
        .filter(|p| p.iter().all(|&c| c < 100))
        .count();
    assert!(
        non_white * 50 > total,
        "page looks blank: {non_white} of {total} pixels are not white"
    );
    assert!(dark > 5_000, "hardly any text drawn: {dark} dark pixels");

    // Charts: each colour far more than its legend swatches alone (about 100 pixels each) would
    // give. Bars are filled rectangles of that exact colour; lines are 2.5 px wide, so their
    // antialiased edges are allowed a little tolerance.
    for (what, colour, at_least) in [
        ("our ratio bars", OURS, 3_000),
        ("the seed's ratio bars", SEED, 3_000),
        ("WAL-per-row bars", WAL, 3_000),
        ("insert-rate lines", FIRST_LINE, 500),
    ] {
        let n = image.count_near(rgb(colour), 10);
        assert!(
            n >= at_least,
            "{what} ({colour}): {n} pixels in the screenshot, expected at least {at_least}; \
             see {}",
            shot.display()
        );
    }
}
