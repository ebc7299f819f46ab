//! Number formats shared by the report's renderers and the verdicts; `—` for anything
//! missing or not finite.

pub const NONE: &str = "—";

pub fn opt(v: Option<f64>, f: impl Fn(f64) -> String) -> String {
    v.filter(|v| v.is_finite())
        .map(f)
        .unwrap_or_else(|| NONE.into())
}

pub fn seconds(s: f64) -> String {
    if s.abs() >= 100.0 {
        format!("{s:.1} s")
    } else if s.abs() >= 1.0 {
        format!("{s:.2} s")
    } else {
        format!("{s:.3} s")
    }
}

pub fn ratio(r: f64) -> String {
    if r.abs() >= 100.0 {
        format!("{r:.0}x")
    } else if r.abs() >= 0.1 || r == 0.0 {
        format!("{r:.2}x")
    } else {
        format!("{r:.3}x")
    }
}

pub fn factor(r: f64) -> String {
    if r.abs() >= 100.0 {
        format!("{r:.0}x")
    } else if r.abs() >= 10.0 {
        format!("{r:.1}x")
    } else {
        format!("{r:.2}x")
    }
}

/// `1234567` → `1,234,567`.
pub fn group(n: u64) -> String {
    let digits: Vec<char> = n.to_string().chars().collect();
    let head = match digits.len() % 3 {
        0 => 3,
        h => h,
    }
    .min(digits.len());
    let mut out: String = digits[..head].iter().collect();
    for chunk in digits[head..].chunks(3) {
        out.push(',');
        out.extend(chunk);
    }
    out
}

/// Rows per second, whole and grouped.
pub fn rate(r: f64) -> String {
    if r.is_finite() && r >= 0.0 {
        group(r.round() as u64)
    } else {
        NONE.into()
    }
}

pub fn per_row(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 1.0 || v == 0.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// Binary units: `7.8 GiB`.
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers() {
        assert_eq!(group(1234567), "1,234,567");
        assert_eq!(group(12), "12");
        assert_eq!(group(123), "123");
        assert_eq!(group(1000), "1,000");
        assert_eq!(group(0), "0");
        assert_eq!(rate(f64::NAN), NONE);
        assert_eq!(rate(999.6), "1,000");
        assert_eq!(opt(Some(f64::INFINITY), seconds), NONE);
        assert_eq!(seconds(180.63), "180.6 s");
        assert_eq!(seconds(7.58), "7.58 s");
        assert_eq!(seconds(0.0123), "0.012 s");
        assert_eq!(bytes(8_342_000_000), "7.8 GiB");
        assert_eq!(bytes(512), "512 B");
        assert_eq!(ratio(23.826), "23.83x");
        assert_eq!(ratio(0.0538), "0.054x");
        assert_eq!(factor(1.45), "1.45x");
        assert_eq!(factor(12.1), "12.1x");
        assert_eq!(per_row(0.034), "0.034");
        assert_eq!(per_row(298.0), "298");
    }
}
