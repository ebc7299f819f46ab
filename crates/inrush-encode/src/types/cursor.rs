//! The byte cursor the hand-written text parsers share (`datetime`, `interval`): position,
//! lookahead, single-byte matching, space runs, bounded digit runs and letter runs. It knows
//! nothing about any type's grammar; that stays with each type's module.

/// A read position in an ASCII-oriented byte string. Never allocates.
pub(super) struct Cursor<'a> {
    s: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    #[inline]
    pub(super) fn new(s: &'a [u8]) -> Self {
        Cursor { s, pos: 0 }
    }

    #[inline]
    pub(super) fn at_end(&self) -> bool {
        self.pos >= self.s.len()
    }

    #[inline]
    pub(super) fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }

    /// Steps past the byte `peek` just returned.
    #[inline]
    pub(super) fn bump(&mut self) {
        debug_assert!(self.pos < self.s.len());
        self.pos += 1;
    }

    /// Steps past `b` if it is the next byte.
    #[inline]
    pub(super) fn eat(&mut self, b: u8) -> bool {
        if self.peek() == Some(b) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    /// Steps past a run of ASCII spaces (only `b' '`); returns how many.
    #[inline]
    pub(super) fn skip_spaces(&mut self) -> usize {
        let start = self.pos;
        while self.eat(b' ') {}
        self.pos - start
    }

    /// A run of 1..=max ASCII digits not followed by another digit: (value, length). `None`
    /// (position unspecified) when there is no digit or more than `max`. `max` must be at most
    /// 19 so that the value fits.
    #[inline]
    pub(super) fn digits(&mut self, max: usize) -> Option<(u64, usize)> {
        debug_assert!(max <= 19);
        let start = self.pos;
        let mut v: u64 = 0;
        while let Some(b) = self.peek() {
            if !b.is_ascii_digit() {
                break;
            }
            if self.pos - start >= max {
                return None;
            }
            v = v * 10 + u64::from(b - b'0');
            self.pos += 1;
        }
        let n = self.pos - start;
        (n > 0).then_some((v, n))
    }

    /// A run of ASCII letters (possibly empty), as a slice of the input.
    #[inline]
    pub(super) fn word(&mut self) -> &'a [u8] {
        let start = self.pos;
        while matches!(self.peek(), Some(b) if b.is_ascii_alphabetic()) {
            self.pos += 1;
        }
        &self.s[start..self.pos]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peek_eat_bump_at_end() {
        let mut c = Cursor::new(b"ab");
        assert!(!c.at_end());
        assert_eq!(c.peek(), Some(b'a'));
        assert!(!c.eat(b'b'));
        assert!(c.eat(b'a'));
        assert_eq!(c.peek(), Some(b'b'));
        c.bump();
        assert!(c.at_end());
        assert_eq!(c.peek(), None);
        assert!(!c.eat(b'b'));

        let c = Cursor::new(b"");
        assert!(c.at_end());
        assert_eq!(c.peek(), None);
    }

    #[test]
    fn skip_spaces_counts_only_spaces() {
        let mut c = Cursor::new(b"   \tx");
        assert_eq!(c.skip_spaces(), 3);
        assert_eq!(c.peek(), Some(b'\t'));
        assert_eq!(c.skip_spaces(), 0);
        assert_eq!(c.peek(), Some(b'\t'));
    }

    #[test]
    fn digits_reads_bounded_runs() {
        let mut c = Cursor::new(b"2024-01");
        assert_eq!(c.digits(4), Some((2024, 4)));
        assert!(c.eat(b'-'));
        // Leading zeros count towards the length.
        assert_eq!(c.digits(2), Some((1, 2)));
        assert!(c.at_end());
        // No digit at all.
        assert_eq!(Cursor::new(b"").digits(3), None);
        assert_eq!(Cursor::new(b"x1").digits(3), None);
        // Shorter than max is fine; stops at the first non-digit.
        let mut c = Cursor::new(b"7:");
        assert_eq!(c.digits(2), Some((7, 1)));
        assert_eq!(c.peek(), Some(b':'));
        // Longer than max is refused, not split.
        assert_eq!(Cursor::new(b"123").digits(2), None);
        assert_eq!(Cursor::new(b"0000000000").digits(9), None);
        // The widest run callers use, and the widest the type allows.
        assert_eq!(Cursor::new(b"999999999").digits(9), Some((999_999_999, 9)));
        assert_eq!(
            Cursor::new(b"9999999999999999999").digits(19),
            Some((9_999_999_999_999_999_999, 19))
        );
    }

    #[test]
    fn word_reads_letters() {
        let mut c = Cursor::new(b"Days 1");
        assert_eq!(c.word(), b"Days");
        assert_eq!(c.word(), b"");
        assert_eq!(c.skip_spaces(), 1);
        assert_eq!(c.word(), b"");
        assert_eq!(c.digits(1), Some((1, 1)));
        assert_eq!(c.word(), b"");
        assert!(c.at_end());
        // Non-ASCII bytes end a word.
        let mut c = Cursor::new("é".as_bytes());
        assert_eq!(c.word(), b"");
        assert_eq!(c.peek(), Some(0xc3));
    }
}
