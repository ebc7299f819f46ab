//! `--tables` and `--exclude` patterns: `*` any run of characters, `?` one, matched whole and
//! without regard to case (a MariaDB table name's case depends on the server's file system).

/// Whether `pattern` matches all of `name`.
pub fn matches(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.to_lowercase().chars().collect();
    let n: Vec<char> = name.to_lowercase().chars().collect();
    // The classic two-pointer glob: on a mismatch, let the last `*` take one more character.
    let (mut i, mut j) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while j < n.len() {
        match p.get(i) {
            Some('*') => {
                star = Some((i, j));
                i += 1;
            }
            Some(&c) if c == '?' || c == n[j] => {
                i += 1;
                j += 1;
            }
            _ => match star {
                Some((si, sj)) => {
                    i = si + 1;
                    j = sj + 1;
                    star = Some((si, sj + 1));
                }
                None => return false,
            },
        }
    }
    p[i..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn a_pattern_matches_the_whole_name_in_any_case() {
        assert!(matches("orders", "Orders"));
        assert!(matches("order*", "orders_2024"));
        assert!(matches("*_log", "audit_log"));
        assert!(matches("t?", "t1"));
        assert!(matches("*", ""));
        assert!(matches("a*b*c", "axxbyyc"));
        assert!(matches("public.*", "public.orders"));
        assert!(!matches("order", "orders"));
        assert!(!matches("t?", "t12"));
        assert!(!matches("a*b", "ac"));
    }
}
