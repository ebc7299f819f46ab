//! Inline SVG charts, drawn in Rust so `report.html` needs no script, font or URL.
//!
//! The colours are fixed and distinct: the screenshot test finds drawn charts by them, and a
//! reader learns them once (ours is always blue, the seed's always orange).

use super::escape::html;

/// Our figures (ratio bars).
pub const OURS: &str = "#1f77b4";
/// The seed's published figures (ratio bars).
pub const SEED: &str = "#ff7f0e";
/// WAL bytes per row bars.
pub const WAL: &str = "#2ca02c";
/// Insert-rate lines, one colour per variation (none of them blue, orange or green).
pub const LINES: [&str; 7] = [
    "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f",
];

/// Above this max/min ratio of the positive values a chart switches to a log scale, so a 1000x
/// outlier does not flatten every other bar to nothing.
const LOG_ABOVE: f64 = 100.0;
/// A log axis spans at most this many decades; smaller values sit on its floor.
const MAX_DECADES: i32 = 12;

/// A value axis: where a figure lands between the chart's floor (0.0) and top (1.0).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Axis {
    /// From 0 to `max`, ticks every `step`.
    Linear { max: f64, step: f64 },
    /// From 10^lo to 10^hi, a tick per decade.
    Log { lo: i32, hi: i32 },
}

impl Axis {
    /// The axis for these values: linear from zero unless the positive values span more than
    /// [`LOG_ABOVE`]; `None` when there is nothing finite and positive to draw.
    pub fn fit(values: impl IntoIterator<Item = f64>) -> Option<Axis> {
        let (min, max) = positive_range(values)?;
        if max / min > LOG_ABOVE {
            Some(Axis::log(min, max))
        } else {
            Some(Axis::linear(max))
        }
    }

    /// A linear axis from zero with a round top at or above `max` (`max` > 0 and finite).
    fn linear(max: f64) -> Axis {
        let step = nice(max / 4.0);
        let top = (max / step).ceil() * step;
        Axis::Linear {
            max: if top > 0.0 && top.is_finite() {
                top
            } else {
                1.0
            },
            step,
        }
    }

    fn log(min: f64, max: f64) -> Axis {
        let hi = (max.log10().ceil() as i32).clamp(-300, 300);
        let lo = (min.log10().floor() as i32).clamp(hi - MAX_DECADES, hi - 1);
        Axis::Log { lo, hi }
    }

    /// Where `v` lands, 0.0 (floor) to 1.0 (top); zero, negative and NaN values sit on the
    /// floor, values beyond the top are clamped to it.
    pub fn frac(&self, v: f64) -> f64 {
        if !v.is_finite() {
            return if v == f64::INFINITY { 1.0 } else { 0.0 };
        }
        let f = match *self {
            Axis::Linear { max, .. } => v / max,
            Axis::Log { lo, hi } => {
                if v <= 0.0 {
                    return 0.0;
                }
                (v.log10() - lo as f64) / (hi - lo) as f64
            }
        };
        f.clamp(0.0, 1.0)
    }

    /// The values to draw grid lines and labels at.
    pub fn ticks(&self) -> Vec<f64> {
        match *self {
            Axis::Linear { max, step } => {
                let n = (max / step).round() as usize;
                (0..=n.min(20)).map(|i| i as f64 * step).collect()
            }
            Axis::Log { lo, hi } => (lo..=hi).map(|e| 10f64.powi(e)).collect(),
        }
    }

    pub fn is_log(&self) -> bool {
        matches!(self, Axis::Log { .. })
    }
}

/// The smallest and largest finite positive value, if any.
fn positive_range(values: impl IntoIterator<Item = f64>) -> Option<(f64, f64)> {
    values
        .into_iter()
        .filter(|v| v.is_finite() && *v > 0.0)
        .fold(None, |acc, v| match acc {
            None => Some((v, v)),
            Some((lo, hi)) => Some((f64::min(lo, v), f64::max(hi, v))),
        })
}

/// The round step (1, 2, 2.5 or 5 times a power of ten) at or above `x`.
pub fn nice(x: f64) -> f64 {
    if !(x.is_finite() && x > 0.0) {
        return 1.0;
    }
    let p = 10f64.powf(x.log10().floor());
    for m in [1.0, 2.0, 2.5, 5.0, 10.0] {
        if m * p >= x * (1.0 - 1e-9) {
            return m * p;
        }
    }
    10.0 * p
}

/// A compact tick or value label: `0`, `0.25`, `12`, `1.5k`, `2M`, `1e-5`.
pub fn short(v: f64) -> String {
    if !v.is_finite() {
        return "n/a".into();
    }
    let a = v.abs();
    let trim = |s: String| {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    };
    if a == 0.0 {
        "0".into()
    } else if !(1e-3..1e15).contains(&a) {
        format!("{v:.0e}")
    } else if a >= 1e9 {
        trim(format!("{:.1}", v / 1e9)) + "G"
    } else if a >= 1e6 {
        trim(format!("{:.1}", v / 1e6)) + "M"
    } else if a >= 1e4 {
        trim(format!("{:.1}", v / 1e3)) + "k"
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 1.0 {
        trim(format!("{v:.2}"))
    } else {
        trim(format!("{v:.3}"))
    }
}

/// One series of a bar chart: its name in the legend and its fill.
pub struct Series<'a> {
    pub name: &'a str,
    pub colour: &'a str,
}

/// One row of a horizontal bar chart: a label and one value per series (`None`: no figure).
pub struct BarRow<'a> {
    pub label: &'a str,
    pub values: Vec<Option<f64>>,
}

/// Font sizes of the chart text in report.html's style: `svg.chart` and `.ttl`.
const FONT: f64 = 11.0;
const TITLE_FONT: f64 = 13.0;
/// Line height of wrapped label text.
const LINE_STEP: f64 = 13.0;

/// A generous estimate of how wide `s` is drawn at `font` px: per-character widths of DejaVu
/// Sans (the widest sans-serif the page names), rounded up. Label columns are sized by it, so an
/// overestimate costs a little space where an underestimate would cut text off.
pub fn text_width(s: &str, font: f64) -> f64 {
    let em = |c: char| match c {
        'i' | 'j' | 'l' | 'I' | '.' | ',' | ':' | ';' | '\'' | '|' | '!' | ' ' => 0.32,
        'f' | 't' | 'r' | '(' | ')' | '[' | ']' | '-' | '/' => 0.42,
        'm' | 'W' => 0.98,
        'w' | 'M' | '=' | '+' | '%' | '<' | '>' | '~' | '@' => 0.86,
        c if c.is_ascii_uppercase() => 0.78,
        _ => 0.64,
    };
    s.chars().map(em).sum::<f64>() * font
}

/// `s` broken at spaces into lines no wider than `max` px at `font` px; a word wider than a
/// line on its own is broken between characters.
pub fn wrap(s: &str, max: f64, font: f64) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in s.split(' ').filter(|w| !w.is_empty()) {
        let joined = if line.is_empty() {
            word.to_string()
        } else {
            format!("{line} {word}")
        };
        if text_width(&joined, font) <= max {
            line = joined;
            continue;
        }
        if !line.is_empty() {
            lines.push(std::mem::take(&mut line));
        }
        for c in word.chars() {
            line.push(c);
            if text_width(&line, font) > max && line.chars().count() > 1 {
                line.pop();
                lines.push(std::mem::replace(&mut line, c.to_string()));
            }
        }
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(line);
    }
    lines
}

/// `<text>` of `lines` one under the other, the first baseline at `y`.
fn text_lines(x: f64, y: f64, class: &str, anchor: &str, lines: &[String]) -> String {
    let mut s = format!(r#"<text x="{x:.1}" y="{y:.1}" class="{class}" text-anchor="{anchor}">"#);
    for (i, line) in lines.iter().enumerate() {
        let dy = if i == 0 { 0.0 } else { LINE_STEP };
        s.push_str(&format!(
            r#"<tspan x="{x:.1}" dy="{dy:.0}">{}</tspan>"#,
            html(line)
        ));
    }
    s.push_str("</text>");
    s
}

/// The widest a bar chart's label column gets; longer labels wrap onto more lines.
const MAX_LABEL_W: f64 = 300.0;
/// The bars' own width, and room for the value printed after the longest bar.
const PLOT_W: f64 = 314.0;
const VALUE_W: f64 = 56.0;
/// Margin between the SVG's edge or the bars and the label column.
const PAD: f64 = 6.0;
/// The width of an empty bar chart.
const BAR_W: f64 = 540.0;
const TOP: f64 = 30.0;
const BAR_H: f64 = 13.0;
const GROUP_GAP: f64 = 9.0;

/// Horizontal grouped bars, value printed at each bar's end. The label column is as wide as
/// the longest label (up to [`MAX_LABEL_W`], past which labels wrap), so no label is cut or
/// drawn outside the chart. `suffix` follows printed values (e.g. "x").
pub fn bar_chart(title: &str, series: &[Series], rows: &[BarRow], suffix: &str) -> String {
    let values = rows.iter().flat_map(|r| r.values.iter().flatten().copied());
    let Some(axis) = Axis::fit(values) else {
        return empty(title, BAR_W);
    };
    let label_w = rows
        .iter()
        .map(|r| text_width(r.label, FONT))
        .fold(0.0, f64::max)
        .min(MAX_LABEL_W);
    let labels: Vec<Vec<String>> = rows.iter().map(|r| wrap(r.label, label_w, FONT)).collect();
    let plot_x = PAD + label_w + PAD;
    let width = (plot_x + PLOT_W + VALUE_W).max(2.0 * PAD + text_width(title, TITLE_FONT));
    let bars_h = BAR_H * series.len().max(1) as f64;
    let group_h = |lines: &[String]| bars_h.max(LINE_STEP * lines.len() as f64) + GROUP_GAP;
    let plot_h: f64 = labels.iter().map(|l| group_h(l)).sum();
    let height = TOP + plot_h + 40.0;
    let mut s = open(title, width, height);
    grid_vertical(&mut s, &axis, plot_x, PLOT_W, TOP, plot_h);
    let mut y_group = TOP;
    for (row, lines) in rows.iter().zip(&labels) {
        let h = group_h(lines);
        let mid = y_group + h / 2.0;
        y_group += h;
        s.push_str(&format!("<g><title>{}</title>", html(row.label)));
        s.push_str(&text_lines(
            plot_x - PAD,
            mid - LINE_STEP * (lines.len() - 1) as f64 / 2.0 + 4.0,
            "lbl",
            "end",
            lines,
        ));
        let y0 = mid - bars_h / 2.0;
        for (j, ser) in series.iter().enumerate() {
            let y = y0 + j as f64 * BAR_H;
            match row.values.get(j).copied().flatten() {
                Some(v) => {
                    let w = (axis.frac(v) * PLOT_W).max(if v > 0.0 { 1.0 } else { 0.0 });
                    s.push_str(&format!(
                        r#"<rect x="{plot_x:.1}" y="{:.1}" width="{w:.1}" height="{:.1}" fill="{}"><title>{}: {}{suffix}</title></rect>"#,
                        y + 1.0,
                        BAR_H - 2.0,
                        ser.colour,
                        html(ser.name),
                        short(v),
                    ));
                    s.push_str(&format!(
                        r#"<text x="{:.1}" y="{:.1}" class="val">{}{suffix}</text>"#,
                        plot_x + w + 3.0,
                        y + BAR_H - 2.5,
                        short(v)
                    ));
                }
                None => s.push_str(&format!(
                    r#"<text x="{:.1}" y="{:.1}" class="na">{} n/a</text>"#,
                    plot_x + 3.0,
                    y + BAR_H - 2.5,
                    html(ser.name)
                )),
            }
        }
        s.push_str("</g>");
    }
    let legend_y = TOP + plot_h + 34.0;
    let mut x = plot_x;
    for ser in series {
        s.push_str(&format!(
            r#"<rect x="{x:.1}" y="{:.1}" width="10" height="10" fill="{}"/><text x="{:.1}" y="{legend_y:.1}" class="lbl">{}</text>"#,
            legend_y - 9.0,
            ser.colour,
            x + 14.0,
            html(ser.name)
        ));
        x += 24.0 + text_width(ser.name, FONT);
    }
    if axis.is_log() {
        s.push_str(&format!(
            r#"<text x="{:.1}" y="{legend_y:.1}" class="na" text-anchor="end">log scale</text>"#,
            width - PAD
        ));
    }
    s.push_str("</svg>");
    s
}

/// One line of a line chart.
pub struct Line<'a> {
    pub label: &'a str,
    pub points: Vec<(f64, f64)>,
}

const LINE_W: f64 = 1090.0;
const LINE_H: f64 = 270.0;

/// Lines over a shared time axis, legend on the right; a line of one point is drawn as a dot.
pub fn line_chart(title: &str, y_label: &str, lines: &[Line]) -> String {
    let finite = |p: &&(f64, f64)| p.0.is_finite() && p.1.is_finite() && p.0 >= 0.0;
    let xs = lines
        .iter()
        .flat_map(|l| l.points.iter().filter(finite).map(|p| p.0));
    let ys = lines
        .iter()
        .flat_map(|l| l.points.iter().filter(finite).map(|p| p.1));
    let (Some(x_axis), Some(y_axis)) = (
        positive_range(xs).map(|(_, max)| Axis::linear(max)),
        Axis::fit(ys),
    ) else {
        return empty(title, LINE_W);
    };
    let (left, right, bottom) = (70.0, 250.0, 40.0);
    let plot_w = LINE_W - left - right;
    // The legend on the right lists every line, its label wrapped to the room left of the
    // chart's edge; a long legend makes the chart taller rather than spill out.
    let legend_x = left + plot_w + 16.0;
    let legend: Vec<Vec<String>> = lines
        .iter()
        .map(|l| wrap(l.label, LINE_W - PAD - (legend_x + 24.0), FONT))
        .collect();
    let entry_h = |lines: &[String]| 18.0 + LINE_STEP * (lines.len() - 1) as f64;
    let height = LINE_H.max(TOP + legend.iter().map(|l| entry_h(l)).sum::<f64>() + bottom);
    let plot_h = height - TOP - bottom;
    let mut s = open(title, LINE_W, height);
    // Horizontal grid (values) and vertical ticks (seconds).
    for t in y_axis.ticks() {
        let y = TOP + plot_h - y_axis.frac(t) * plot_h;
        s.push_str(&format!(
            r##"<line x1="{left:.1}" x2="{:.1}" y1="{y:.1}" y2="{y:.1}" stroke="#e3e3e3"/><text x="{:.1}" y="{:.1}" class="tick" text-anchor="end">{}</text>"##,
            left + plot_w,
            left - 5.0,
            y + 4.0,
            short(t)
        ));
    }
    for t in x_axis.ticks() {
        let x = left + x_axis.frac(t) * plot_w;
        s.push_str(&format!(
            r##"<line x1="{x:.1}" x2="{x:.1}" y1="{:.1}" y2="{:.1}" stroke="#999"/><text x="{x:.1}" y="{:.1}" class="tick" text-anchor="middle">{}</text>"##,
            TOP + plot_h,
            TOP + plot_h + 5.0,
            TOP + plot_h + 18.0,
            short(t)
        ));
    }
    s.push_str(&format!(
        r##"<line x1="{left:.1}" x2="{:.1}" y1="{:.1}" y2="{:.1}" stroke="#999"/><text x="{:.1}" y="{:.1}" class="tick" text-anchor="middle">seconds since the first statement</text><text x="{left:.1}" y="{:.1}" class="tick">{}{}</text>"##,
        left + plot_w,
        TOP + plot_h,
        TOP + plot_h,
        left + plot_w / 2.0,
        height - 6.0,
        TOP - 6.0,
        html(y_label),
        if y_axis.is_log() { " (log scale)" } else { "" }
    ));
    let mut legend_y = TOP + 8.0;
    for (i, line) in lines.iter().enumerate() {
        let colour = LINES[i % LINES.len()];
        // Past the palette, colours repeat with a dash pattern to tell the lines apart.
        let dash = match i / LINES.len() {
            0 => "",
            1 => r#" stroke-dasharray="8 4""#,
            _ => r#" stroke-dasharray="2 3""#,
        };
        let pts: Vec<(f64, f64)> = line
            .points
            .iter()
            .filter(finite)
            .map(|&(x, y)| {
                (
                    left + x_axis.frac(x) * plot_w,
                    TOP + plot_h - y_axis.frac(y) * plot_h,
                )
            })
            .collect();
        match pts.as_slice() {
            [] => {}
            [(x, y)] => s.push_str(&format!(
                r#"<circle cx="{x:.1}" cy="{y:.1}" r="4" fill="{colour}"><title>{}</title></circle>"#,
                html(line.label)
            )),
            _ => {
                let path: Vec<String> = pts.iter().map(|(x, y)| format!("{x:.1},{y:.1}")).collect();
                s.push_str(&format!(
                    r#"<polyline points="{}" fill="none" stroke="{colour}" stroke-width="2.5"{dash} stroke-linejoin="round"><title>{}</title></polyline>"#,
                    path.join(" "),
                    html(line.label)
                ));
            }
        }
        let ly = legend_y;
        legend_y += entry_h(&legend[i]);
        s.push_str(&format!(
            r#"<g><title>{}</title><line x1="{legend_x:.1}" x2="{:.1}" y1="{ly:.1}" y2="{ly:.1}" stroke="{colour}" stroke-width="3"{dash}/>"#,
            html(line.label),
            legend_x + 18.0,
        ));
        s.push_str(&text_lines(
            legend_x + 24.0,
            ly + 4.0,
            "lbl",
            "start",
            &legend[i],
        ));
        s.push_str("</g>");
    }
    s.push_str("</svg>");
    s
}

/// Rows per second between consecutive samples of cumulative rows, plotted at each sample's
/// time; the run starts at (0 s, 0 rows). Samples that do not move forward in time are
/// skipped, and a count that goes down shows as a rate of 0.
pub fn rates(samples: &[crate::results::RateSample]) -> Vec<(f64, f64)> {
    let mut out = Vec::with_capacity(samples.len());
    let (mut t0, mut r0) = (0.0f64, 0u64);
    for s in samples {
        let dt = s.seconds - t0;
        if !(s.seconds.is_finite() && dt > 0.0) {
            continue;
        }
        let rate = (s.rows as f64 - r0 as f64) / dt;
        out.push((s.seconds, rate.max(0.0)));
        (t0, r0) = (s.seconds, s.rows);
    }
    out
}

fn open(title: &str, width: f64, height: f64) -> String {
    format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" role="img" aria-label="{t}"><title>{t}</title><text x="4" y="16" class="ttl">{t}</text>"#,
        t = html(title)
    )
}

fn empty(title: &str, width: f64) -> String {
    let mut s = open(title, width, 60.0);
    s.push_str(r#"<text x="4" y="42" class="na">nothing measured to draw</text></svg>"#);
    s
}

fn grid_vertical(s: &mut String, axis: &Axis, x0: f64, w: f64, y0: f64, h: f64) {
    for t in axis.ticks() {
        let x = x0 + axis.frac(t) * w;
        s.push_str(&format!(
            r##"<line x1="{x:.1}" x2="{x:.1}" y1="{y0:.1}" y2="{:.1}" stroke="#e3e3e3"/><text x="{x:.1}" y="{:.1}" class="tick" text-anchor="middle">{}</text>"##,
            y0 + h,
            y0 + h + 13.0,
            short(t)
        ));
    }
    s.push_str(&format!(
        r##"<line x1="{x0:.1}" x2="{x0:.1}" y1="{y0:.1}" y2="{:.1}" stroke="#999"/>"##,
        y0 + h
    ));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::RateSample;

    #[test]
    fn nothing_positive_means_no_axis() {
        assert_eq!(Axis::fit([]), None);
        assert_eq!(Axis::fit([0.0, -1.0, f64::NAN, f64::INFINITY]), None);
    }

    #[test]
    fn small_ranges_are_linear_from_zero_with_a_round_top() {
        let a = Axis::fit([0.5, 1.0, 3.7]).unwrap();
        assert_eq!(
            a,
            Axis::Linear {
                max: 4.0,
                step: 1.0
            }
        );
        assert_eq!(a.ticks(), vec![0.0, 1.0, 2.0, 3.0, 4.0]);
        assert_eq!(a.frac(2.0), 0.5);
        // One value, zeros and NaN beside it.
        let a = Axis::fit([0.0, 7.0, f64::NAN]).unwrap();
        assert!(matches!(a, Axis::Linear { max, .. } if max >= 7.0));
        assert_eq!(a.frac(0.0), 0.0);
        assert_eq!(a.frac(f64::NAN), 0.0);
        assert_eq!(a.frac(-3.0), 0.0);
        assert_eq!(a.frac(1e9), 1.0, "beyond the top is clamped");
    }

    #[test]
    fn huge_ranges_switch_to_log_and_are_clamped() {
        let a = Axis::fit([0.01, 1.0, 500.0]).unwrap();
        assert_eq!(a, Axis::Log { lo: -2, hi: 3 });
        assert_eq!(a.ticks().len(), 6);
        assert!((a.frac(1.0) - 0.4).abs() < 1e-12);
        assert_eq!(a.frac(0.0), 0.0);
        // Extremes: at most MAX_DECADES, never an infinite top.
        let a = Axis::fit([1e-300, f64::MAX]).unwrap();
        let Axis::Log { lo, hi } = a else {
            panic!("{a:?}")
        };
        assert_eq!(hi - lo, MAX_DECADES);
        assert!(a.ticks().iter().all(|t| t.is_finite()));
        assert_eq!(a.frac(1e-300), 0.0);
    }

    #[test]
    fn nice_steps() {
        assert_eq!(nice(0.9), 1.0);
        assert_eq!(nice(1.1), 2.0);
        assert_eq!(nice(2.2), 2.5);
        assert_eq!(nice(3.0), 5.0);
        assert_eq!(nice(7.0), 10.0);
        assert_eq!(nice(1234.0), 2000.0);
        assert_eq!(nice(0.0), 1.0);
        assert_eq!(nice(f64::NAN), 1.0);
    }

    #[test]
    fn short_labels() {
        assert_eq!(short(0.0), "0");
        assert_eq!(short(0.25), "0.25");
        assert_eq!(short(12.0), "12");
        assert_eq!(short(1.50), "1.5");
        assert_eq!(short(25_000.0), "25k");
        assert_eq!(short(2_000_000.0), "2M");
        assert_eq!(short(f64::NAN), "n/a");
        assert_eq!(short(0.00001), "1e-5");
    }

    #[test]
    fn rates_from_cumulative_samples() {
        let s = |seconds, rows| RateSample { seconds, rows };
        assert!(rates(&[]).is_empty());
        assert_eq!(rates(&[s(2.0, 1000)]), vec![(2.0, 500.0)], "one sample");
        assert_eq!(
            rates(&[
                s(0.0, 0),
                s(1.0, 100),
                s(1.0, 150),
                s(3.0, 50),
                s(f64::NAN, 9)
            ]),
            vec![(1.0, 100.0), (3.0, 0.0)],
            "t=0, repeated time, a falling count and NaN time"
        );
    }

    #[test]
    fn charts_without_data_say_so_instead_of_drawing() {
        let svg = bar_chart(
            "t",
            &[Series {
                name: "ours",
                colour: OURS,
            }],
            &[BarRow {
                label: "a",
                values: vec![None],
            }],
            "x",
        );
        assert!(svg.contains("nothing measured"));
        assert!(!svg.contains(OURS));
        let svg = line_chart(
            "t",
            "rows/s",
            &[Line {
                label: "a",
                points: vec![],
            }],
        );
        assert!(svg.contains("nothing measured"));
    }

    #[test]
    fn many_lines_get_dashes_and_a_taller_chart() {
        let labels: Vec<String> = (0..20).map(|i| format!("v{i}")).collect();
        let lines: Vec<Line> = labels
            .iter()
            .map(|l| Line {
                label: l,
                points: vec![(1.0, 1.0), (2.0, 3.0)],
            })
            .collect();
        let svg = line_chart("t", "rows/s", &lines);
        assert!(svg.contains("stroke-dasharray=\"8 4\""));
        assert!(svg.contains("stroke-dasharray=\"2 3\""));
        let h = 30.0 + 18.0 * 20.0 + 40.0;
        assert!(
            svg.contains(&format!("height=\"{h:.0}\"")),
            "{}",
            &svg[..200]
        );
    }

    /// Every `<text>` of `svg` with its x, anchor, class and drawn lines (tspans, or its own
    /// text without the tooltip), entities decoded.
    fn texts(svg: &str) -> Vec<(f64, String, String, Vec<String>)> {
        let attr = |tag: &str, name: &str| {
            let tag = format!(" {tag}");
            let at = tag.find(&format!(" {name}=\""))? + name.len() + 3;
            Some(tag[at..at + tag[at..].find('"')?].to_string())
        };
        let decode = |s: &str| {
            s.replace("&lt;", "<")
                .replace("&gt;", ">")
                .replace("&quot;", "\"")
                .replace("&#39;", "'")
                .replace("&amp;", "&")
        };
        let mut out = Vec::new();
        for chunk in svg.split("<text ").skip(1) {
            let tag = &chunk[..chunk.find('>').unwrap()];
            let body = &chunk[tag.len() + 1..chunk.find("</text>").unwrap()];
            let body = match body.find("</title>") {
                Some(end) => &body[end + "</title>".len()..],
                None => body,
            };
            let lines: Vec<String> = if body.contains("<tspan") {
                body.split("<tspan")
                    .skip(1)
                    .map(|t| decode(&t[t.find('>').unwrap() + 1..t.find("</tspan>").unwrap()]))
                    .collect()
            } else {
                vec![decode(body)]
            };
            let x: f64 = attr(tag, "x").unwrap().parse().unwrap();
            out.push((
                x,
                attr(tag, "text-anchor").unwrap_or("start".into()),
                attr(tag, "class").unwrap_or_default(),
                lines,
            ));
        }
        out
    }

    /// Asserts that every text of `svg` lies within its viewBox's width.
    fn assert_text_inside(svg: &str) {
        let vb = svg.split("viewBox=\"0 0 ").nth(1).unwrap();
        let width: f64 = vb.split(' ').next().unwrap().parse().unwrap();
        for (x, anchor, class, lines) in texts(svg) {
            let font = match class.as_str() {
                "ttl" => TITLE_FONT,
                "tick" => 10.0,
                _ => FONT,
            };
            for line in lines {
                let w = text_width(&line, font);
                let (from, to) = match anchor.as_str() {
                    "end" => (x - w, x),
                    "middle" => (x - w / 2.0, x + w / 2.0),
                    _ => (x, x + w),
                };
                assert!(
                    from >= 0.0 && to <= width,
                    "{line:?} drawn from {from:.1} to {to:.1}, outside 0..{width}"
                );
            }
        }
    }

    #[test]
    fn long_labels_are_whole_and_inside_the_chart() {
        let long = "all together: TRUNCATE + COPY FREEZE binary in one transaction, synchronous_commit=off";
        let labels = [
            "WAL",
            "prepared INSERT per row, autocommit",
            long,
            "an_identifier_far_too_long_to_fit_on_one_line_of_the_label_column_at_all",
        ];
        let rows: Vec<BarRow> = labels
            .iter()
            .enumerate()
            .map(|(i, l)| BarRow {
                label: l,
                values: vec![Some(1.0 + i as f64 * 1000.0)],
            })
            .collect();
        let series = [Series {
            name: "WAL bytes/row",
            colour: WAL,
        }];
        let svg = bar_chart("A1: WAL bytes per row", &series, &rows, "");
        assert_text_inside(&svg);
        // Wrapped, not cut: each label's lines put together give the label again.
        let drawn: Vec<String> = texts(&svg)
            .into_iter()
            .filter(|(_, anchor, class, _)| anchor == "end" && class == "lbl")
            .map(|(_, _, _, lines)| lines.join(" "))
            .collect();
        assert_eq!(drawn[..3], labels[..3]);
        assert_eq!(drawn[3].replace(' ', ""), labels[3]);
        assert!(!svg.contains('…'));
        // Short labels take a narrow column: the bars start near the left edge.
        let short_svg = bar_chart("t", &series, &rows[..1], "");
        let bars_x: f64 = short_svg.split("<rect x=\"").nth(1).unwrap()[..4]
            .parse()
            .unwrap();
        assert!(bars_x < 50.0, "{short_svg}");

        let lines: Vec<Line> = labels
            .iter()
            .map(|l| Line {
                label: l,
                points: vec![(1.0, 1.0), (2.0, 3.0)],
            })
            .collect();
        let svg = line_chart("D1: insert rate", "rows/s", &lines);
        assert_text_inside(&svg);
        let legend: Vec<String> = texts(&svg)
            .into_iter()
            .filter(|(x, _, class, _)| *x > 800.0 && class == "lbl")
            .map(|(_, _, _, lines)| lines.join(" "))
            .collect();
        assert_eq!(legend[..3], labels[..3]);
    }

    #[test]
    fn wrapping_breaks_at_spaces_then_inside_words() {
        assert_eq!(wrap("", 50.0, FONT), vec![String::new()]);
        assert_eq!(wrap("a b", 500.0, FONT), vec!["a b"]);
        let lines = wrap(
            "commit every 1000 rows",
            text_width("commit every", FONT),
            FONT,
        );
        assert_eq!(lines, vec!["commit every", "1000 rows"]);
        let lines = wrap("abcdefgh", text_width("abc", FONT), FONT);
        assert_eq!(lines, vec!["abc", "def", "gh"]);
    }

    #[test]
    fn one_point_is_a_dot_and_labels_are_escaped() {
        let svg = line_chart(
            "t",
            "rows/s",
            &[Line {
                label: "<b>&",
                points: vec![(1.0, 5.0)],
            }],
        );
        assert!(svg.contains("<circle"));
        assert!(svg.contains("&lt;b&gt;&amp;"));
        assert!(!svg.contains("<b>"));
    }
}
