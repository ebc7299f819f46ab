//! The report folder rendered from the shared sample: the Markdown as a snapshot, the round
//! trip through `results.json`, escaping end to end, and results with nothing to chart.

mod support;

use inrush_lab::report::{self, render_html, render_markdown};
use inrush_lab::results::{Measurement, RateSample, Status};
use support::fixture::{run, sample};

#[test]
fn markdown_report() {
    insta::assert_snapshot!(render_markdown(&sample()));
}

#[test]
fn rerender_from_results_json_gives_identical_files() {
    let dir = tempfile::tempdir().unwrap();
    let files = report::write(&sample(), dir.path()).unwrap();
    let read = |p: &std::path::Path| std::fs::read(p).unwrap();
    let before = [read(&files.json), read(&files.markdown), read(&files.html)];
    // Clobber the rendered files: rerender must write them again from results.json alone.
    std::fs::write(&files.markdown, "stale").unwrap();
    std::fs::remove_file(&files.html).unwrap();
    let again = report::rerender(dir.path()).unwrap();
    assert_eq!(again, files);
    let after = [read(&files.json), read(&files.markdown), read(&files.html)];
    assert!(before == after, "rerender changed the report");
}

#[test]
fn figures_json_cannot_hold_still_render_again() {
    // JSON has no NaN or infinity; results.json stores them as null and must still re-render.
    let mut lab = sample();
    let m = &mut lab.experiments[0].variations[1].runs[0];
    m.seconds = f64::NAN;
    m.rows_per_second = f64::INFINITY;
    m.client_cpu_seconds = f64::NAN;
    m.extra.insert("vacuum_seconds".into(), f64::NAN);
    m.rate[0].seconds = f64::NAN;
    lab.experiments[0].variations[2].seed_seconds = Some(f64::NAN);
    if let Some(v) = lab.experiments[0].verdict.as_mut() {
        v.factor = f64::NAN;
    }
    let dir = tempfile::tempdir().unwrap();
    let files = report::write(&lab, dir.path()).unwrap();
    let html = std::fs::read_to_string(&files.html).unwrap();
    report::rerender(dir.path()).unwrap();
    assert_eq!(std::fs::read_to_string(&files.html).unwrap(), html);
    assert!(!html.contains("NaN"));
}

#[test]
fn rerender_of_a_folder_without_results_says_which_file() {
    let dir = tempfile::tempdir().unwrap();
    let err = report::rerender(dir.path()).unwrap_err().to_string();
    assert!(err.contains("results.json"), "{err}");
    std::fs::write(dir.path().join("results.json"), "{\"not\": \"results\"}").unwrap();
    let err = report::rerender(dir.path()).unwrap_err().to_string();
    assert!(err.contains("not a lab results file"), "{err}");
}

#[test]
fn html_is_one_self_contained_page() {
    let page = render_html(&sample());
    assert!(page.starts_with("<!DOCTYPE html>"));
    for outside in [
        "<script", "http://", "https://", "@import", "url(", "<link", "<img",
    ] {
        let hits: Vec<&str> = page
            .match_indices(outside)
            .map(|(i, _)| &page[i.saturating_sub(40)..(i + 60).min(page.len())])
            .filter(|ctx| !ctx.contains("xmlns=\"http://www.w3.org/2000/svg\""))
            .collect();
        assert!(hits.is_empty(), "{outside} in the page: {hits:?}");
    }
    // One section per experiment, each linked from the verdict table.
    for e in &sample().experiments {
        let id = format!("exp-{}", e.id.to_lowercase());
        assert!(page.contains(&format!("<section class=\"exp\" id=\"{id}\">")));
        assert!(page.contains(&format!("href=\"#{id}\"")));
    }
    // Three charts for each experiment with runs (A3, A6, B4, D1, D7, C3), none for C2.
    assert_eq!(page.matches("<svg ").count(), 18);
}

#[test]
fn strings_from_results_are_escaped_in_both_renderings() {
    let mut lab = sample();
    let evil = "<script>alert('x')</script> | a&b";
    lab.environment.server_version = evil.into();
    lab.environment
        .settings
        .insert("work_mem".into(), evil.into());
    lab.experiments[0].variations[1].label = evil.into();
    lab.experiments[0].notes.push(evil.into());
    lab.experiments[3].status = Status::Skipped(evil.into());
    let page = render_html(&lab);
    assert!(!page.contains("<script"), "unescaped markup in the HTML");
    assert!(page.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; | a&amp;b"));
    let md = render_markdown(&lab);
    assert!(
        !md.replace("\\<", "").contains('<') || md.contains("<a id="),
        "unescaped markup in the Markdown"
    );
    assert!(!md.replace("\\<", "").contains("<script"));
    // Every table row keeps its column count: no pipe leaked out of a cell.
    for line in md.lines().filter(|l| l.starts_with('|')) {
        let cells = line.replace("\\|", "").matches('|').count();
        assert!([3, 7, 10].contains(&cells), "{cells} pipes in {line}");
    }
}

#[test]
fn nothing_to_chart_is_rendered_without_panicking() {
    let mut lab = sample();
    let e = &mut lab.experiments[0];
    // No runs at all, a run of zero rows in zero seconds, NaN and infinite figures, one sample.
    e.variations[0].runs.clear();
    let mut zero = run(0, 0.0, 0, None);
    zero.rows_per_second = f64::NAN;
    zero.rate = vec![RateSample {
        seconds: 0.0,
        rows: 0,
    }];
    e.variations[1].runs = vec![zero];
    let nan = Measurement {
        seconds: f64::NAN,
        rows_per_second: f64::INFINITY,
        ..run(10, 1.0, 1, Some(1.0))
    };
    e.variations[2].runs = vec![nan];
    e.variations[3].seed_seconds = Some(f64::NAN);
    e.variations[4].runs.truncate(1);
    e.variations[4].runs[0].rate.truncate(1);
    lab.experiments[1].variations.clear();
    lab.experiments[2]
        .variations
        .iter_mut()
        .for_each(|v| v.baseline = false);
    let page = render_html(&lab);
    let md = render_markdown(&lab);
    assert!(!page.contains("NaN") && !md.contains("NaN"));
    assert!(!page.contains(">inf") && !md.contains("| inf"));
    // The ratio chart of A3 lost its baseline time: it says so rather than drawing.
    assert!(page.contains("nothing measured to draw"));
}

#[test]
fn a_huge_range_of_ratios_is_drawn_on_a_log_scale() {
    let mut lab = sample();
    let v = &mut lab.experiments[0].variations[4];
    for m in &mut v.runs {
        m.seconds /= 1000.0;
    }
    let page = render_html(&lab);
    assert!(page.contains("log scale"));
}
