//! The HTML report as a browser draws it: headless Chromium screenshots the sample report, and
//! the screenshot must hold the charts' colours in quantity (bars, lines) and text, i.e. the
//! charts were drawn and the page is not blank. A control screenshot of the same page with its
//! SVG removed must lack those colours, so they can only have come from the charts.
//!
//! Needs `/usr/bin/chromium` (Debian's chromium package; `scripts/setup.sh` installs it), or
//! the browser named by `INRUSH_CHROMIUM`. Without it this test fails: a report nobody looked
//! at is not a passing test. `INRUSH_LAB_SAMPLE_DIR=/some/dir` keeps the report and the
//! screenshot there.

mod support;

use inrush_lab::report;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::fixture::sample;
use support::png::{self, rgb, Image};

/// Colours of `src/report/svg.rs`, and how many pixels of each the sample must show: far more
/// than the legend swatches alone (about 100 pixels each). Bars are filled rectangles of the
/// exact colour; lines are 2.5 px wide, so antialiased edges get a little tolerance.
const CHART_COLOURS: [(&str, &str, usize); 4] = [
    ("our ratio bars", "#1f77b4", 3_000),
    ("the field report's ratio bars", "#ff7f0e", 3_000),
    ("WAL-per-row bars", "#2ca02c", 3_000),
    ("insert-rate lines", "#d62728", 500),
];
const TOLERANCE: u8 = 10;

fn chromium() -> PathBuf {
    let path = std::env::var_os("INRUSH_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    assert!(
        path.exists(),
        "{} is missing: the report's screenshot test needs Debian's chromium package \
         (run scripts/setup.sh as root, or apt-get install -y chromium)",
        path.display()
    );
    path
}

/// Screenshots `html` at 1200x3000 into `png` with a fresh profile, and decodes it.
fn screenshot(browser: &Path, html: &Path, png: &Path) -> Image {
    let _ = std::fs::remove_file(png);
    let profile = tempfile::tempdir().unwrap();
    let log = profile.path().join("chromium.log");
    let mut child = Command::new(browser)
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
        .arg(format!(
            "--user-data-dir={}",
            profile.path().join("p").display()
        ))
        .arg("--window-size=1200,3000")
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!("file://{}", html.canonicalize().unwrap().display()))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap_or_else(|e| panic!("starting {}: {e}", browser.display()));
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
    let bytes = std::fs::read(png).unwrap_or_else(|e| {
        let log = std::fs::read_to_string(&log).unwrap_or_default();
        panic!("no screenshot ({e}); chromium {status}:\n{log}")
    });
    let image = png::decode(&bytes).unwrap();
    assert!(
        image.width >= 1000 && image.height >= 2000,
        "screenshot is {}x{}",
        image.width,
        image.height
    );
    image
}

#[test]
fn chromium_draws_the_charts() {
    let browser = chromium();
    let tmp = tempfile::tempdir().unwrap();
    let dir = match std::env::var_os("INRUSH_LAB_SAMPLE_DIR") {
        Some(d) => PathBuf::from(d),
        None => tmp.path().join("report"),
    };
    let files = report::write(&sample(), &dir).unwrap();
    let shot = dir.join("screenshot.png");
    let image = screenshot(&browser, &files.html, &shot);

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

    for (what, colour, at_least) in CHART_COLOURS {
        let n = image.count_near(rgb(colour), TOLERANCE);
        eprintln!("{what} ({colour}): {n} pixels");
        assert!(
            n >= at_least,
            "{what} ({colour}): {n} pixels in the screenshot, expected at least {at_least}; \
             see {}",
            shot.display()
        );
    }

    // Control: the same page without its SVG has (almost) none of the chart colours, so the
    // counts above measure charts, not badges, links or table colours.
    let page = std::fs::read_to_string(&files.html).unwrap();
    let without_svg = strip_svg(&page);
    assert!(
        without_svg.len() < page.len() / 2,
        "the SVG was not removed"
    );
    let control_html = tmp.path().join("no-charts.html");
    std::fs::write(&control_html, without_svg).unwrap();
    let control = screenshot(&browser, &control_html, &tmp.path().join("no-charts.png"));
    for (what, colour, at_least) in CHART_COLOURS {
        let n = control.count_near(rgb(colour), TOLERANCE);
        assert!(
            n < at_least / 10,
            "{what} ({colour}): {n} pixels on the page without charts"
        );
    }
}

/// The page with every `<svg ...>...</svg>` element removed.
fn strip_svg(page: &str) -> String {
    let mut out = String::with_capacity(page.len());
    let mut rest = page;
    while let Some(start) = rest.find("<svg ") {
        out.push_str(&rest[..start]);
        let end = rest[start..]
            .find("</svg>")
            .map(|e| start + e + "</svg>".len())
            .unwrap_or(rest.len());
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}
