//! Inputs not in UTF-8 (`--encoding`): exports of older systems in Latin-1, Windows-1252 or
//! UTF-16, read as COPY reads them with `ENCODING 'LATIN1'` (or after iconv, for UTF-16).
//!
//! Two ways in, because the splitter cuts blocks on quote and line-break bytes:
//! - single-byte encodings (Latin-1, Windows-1252) keep every ASCII byte as itself, so their
//!   blocks are cut as they are and each worker turns its own block into UTF-8
//!   ([`Encoding::to_utf8`]): the conversion runs on every core, and offsets stay the file's;
//! - in UTF-16 a quote or line break is two bytes, one of which may be any byte of another
//!   character, so the splitter cannot cut it: [`decoded`] puts a streaming decoder in front of
//!   the splitter.
//!
//! A byte that stands for no character is not replaced (that would change a value silently):
//! it is left in the UTF-8 as an invalid byte, so the UTF-8 check of the record holding it fails
//! and names its line and field, and [`Encoding::undecodable_reason`] says why.

use crate::{Error, Result};
use std::borrow::Cow;
use std::io::{self, Read};

/// What `--encoding` names, with PostgreSQL's names (and `UTF16*`, which COPY does not read).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Utf8,
    /// ISO-8859-1: every byte is the code point of the same number.
    Latin1,
    /// Windows-1252: Latin-1 with printable characters (€, curly quotes...) in 0x80..0x9F.
    Win1252,
    /// UTF-16 in the byte order its byte order mark says.
    Utf16,
    Utf16Le,
    Utf16Be,
}

/// The byte UTF-16 decoding leaves where a sequence is malformed (an unpaired surrogate, an odd
/// last byte): never valid in UTF-8, and not ASCII, so the splitter never takes it for syntax.
const MALFORMED: u8 = 0xFF;

impl std::str::FromStr for Encoding {
    type Err = Error;

    /// PostgreSQL's names and common aliases, compared as PostgreSQL compares them: case and
    /// punctuation ignored (`latin1`, `ISO-8859-1`, `windows-1252`, `cp1252`, `UTF-16LE`).
    fn from_str(name: &str) -> Result<Encoding> {
        let clean: String = name
            .chars()
            .filter(char::is_ascii_alphanumeric)
            .map(|c| c.to_ascii_lowercase())
            .collect();
        Ok(match clean.as_str() {
            "utf8" | "unicode" => Encoding::Utf8,
            "latin1" | "iso88591" | "l1" => Encoding::Latin1,
            "win1252" | "windows1252" | "cp1252" => Encoding::Win1252,
            "utf16" => Encoding::Utf16,
            "utf16le" => Encoding::Utf16Le,
            "utf16be" => Encoding::Utf16Be,
            _ => return Err(Error::UnknownEncoding(name.to_string())),
        })
    }
}

impl Encoding {
    /// PostgreSQL's name, as messages use it.
    pub fn name(self) -> &'static str {
        match self {
            Encoding::Utf8 => "UTF8",
            Encoding::Latin1 => "LATIN1",
            Encoding::Win1252 => "WIN1252",
            Encoding::Utf16 => "UTF16",
            Encoding::Utf16Le => "UTF16LE",
            Encoding::Utf16Be => "UTF16BE",
        }
    }

    /// Read through a decoder in front of the splitter (offsets are then in the UTF-8 stream,
    /// not in the file).
    pub fn is_utf16(self) -> bool {
        matches!(
            self,
            Encoding::Utf16 | Encoding::Utf16Le | Encoding::Utf16Be
        )
    }

    /// Whether a byte of a single-byte encoding stands for no character: NUL (as in
    /// PostgreSQL, which no text can hold) and the five bytes Windows-1252 leaves unassigned.
    fn undecodable(self, b: u8) -> bool {
        b == 0 || (self == Encoding::Win1252 && matches!(b, 0x81 | 0x8D | 0x8F | 0x90 | 0x9D))
    }

    /// A block of a single-byte encoding as UTF-8 (other encodings are already UTF-8 here).
    /// ASCII-only data, the common case, is returned as it is. Undecodable bytes are kept as
    /// they are (see the module documentation).
    pub fn to_utf8(self, data: &[u8]) -> Cow<'_, [u8]> {
        // UTF-8 first: scanning its blocks for ASCII would be a pass over the data for nothing.
        if !matches!(self, Encoding::Latin1 | Encoding::Win1252) {
            return Cow::Borrowed(data);
        }
        let ascii = encoding_rs::Encoding::ascii_valid_up_to(data);
        if ascii == data.len() {
            return Cow::Borrowed(data);
        }
        let mut out = Vec::with_capacity(data.len() + data.len() / 4 + 16);
        out.extend_from_slice(&data[..ascii]);
        let mut rest = &data[ascii..];
        while !rest.is_empty() {
            let run = rest
                .iter()
                .position(|&b| self.undecodable(b))
                .unwrap_or(rest.len());
            self.decode_run(&rest[..run], &mut out);
            if let Some(&bad) = rest.get(run) {
                out.push(bad);
                rest = &rest[run + 1..];
            } else {
                rest = &[];
            }
        }
        Cow::Owned(out)
    }

    /// Appends a run of decodable single-byte text as UTF-8.
    fn decode_run(self, run: &[u8], out: &mut Vec<u8>) {
        if self == Encoding::Latin1 {
            // encoding_rs's "iso-8859-1" label is Windows-1252 (WHATWG); this is the real one.
            let start = out.len();
            out.resize(start + run.len() * 2, 0);
            let written = encoding_rs::mem::convert_latin1_to_utf8(run, &mut out[start..]);
            out.truncate(start + written);
        } else {
            let (text, _) = encoding_rs::WINDOWS_1252.decode_without_bom_handling(run);
            out.extend_from_slice(text.as_bytes());
        }
    }

    /// Why the first bytes of `bad` (where the UTF-8 check of decoded text failed) cannot be
    /// loaded, in PostgreSQL's words where it has them.
    pub fn undecodable_reason(self, bad: &[u8]) -> String {
        let hex = |bytes: &[u8]| {
            bytes
                .iter()
                .map(|b| format!("0x{b:02x}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        match self {
            Encoding::Utf8 => format!(
                "invalid byte sequence for encoding \"UTF8\": {}",
                hex(&bad[..bad.len().min(2)])
            ),
            Encoding::Latin1 | Encoding::Win1252 => match bad.first() {
                Some(&b) if b != 0 => format!(
                    "character with byte sequence {} in encoding \"{}\" has no equivalent in encoding \"UTF8\"",
                    hex(&[b]),
                    self.name()
                ),
                _ => format!("invalid byte sequence for encoding \"{}\": 0x00", self.name()),
            },
            Encoding::Utf16 | Encoding::Utf16Le | Encoding::Utf16Be => match bad.first() {
                Some(&MALFORMED) => format!(
                    "invalid byte sequence for encoding \"{}\": an unpaired surrogate or a lone last byte",
                    self.name()
                ),
                _ => format!(
                    "invalid byte sequence for encoding \"{}\": the character U+0000",
                    self.name()
                ),
            },
        }
    }
}

/// Looks at the first bytes of `reader` for a UTF-16 byte order mark and returns the stream as
/// the splitter takes it, with the encoding the input is in. `declared` is `--encoding`:
/// without it a UTF-16 mark is followed and anything else is UTF-8 (a UTF-8 mark is the
/// splitter's to drop); `UTF16` needs a mark; `UTF16LE`/`UTF16BE` drop a mark that agrees and
/// refuse one that does not. `name` names the input in errors.
pub fn decoded(
    mut reader: Box<dyn Read + Send>,
    declared: Option<Encoding>,
    name: &str,
) -> Result<(Box<dyn Read + Send>, Encoding)> {
    if let Some(said @ (Encoding::Utf8 | Encoding::Latin1 | Encoding::Win1252)) = declared {
        return Ok((reader, said));
    }
    let mut head = [0u8; 2];
    let mut got = 0;
    while got < head.len() {
        match reader.read(&mut head[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(cause) => {
                return Err(Error::Read {
                    name: name.to_string(),
                    cause,
                })
            }
        }
    }
    let mark = match &head[..got] {
        [0xFF, 0xFE] => Some(Encoding::Utf16Le),
        [0xFE, 0xFF] => Some(Encoding::Utf16Be),
        _ => None,
    };
    let byte_order = |reason: String| Error::ByteOrder {
        name: name.to_string(),
        reason,
    };
    let encoding = match (declared, mark) {
        (None, None) => Encoding::Utf8,
        (None | Some(Encoding::Utf16), Some(found)) => found,
        (Some(Encoding::Utf16), None) => {
            return Err(byte_order(
                "UTF16 without a byte order mark: say UTF16LE (Windows) or UTF16BE".into(),
            ))
        }
        (Some(said), Some(found)) if said != found => {
            return Err(byte_order(format!(
                "--encoding {} but the byte order mark says {}",
                said.name(),
                found.name()
            )))
        }
        (Some(said), _) => said,
    };
    let reader: Box<dyn Read + Send> =
        Box::new(io::Cursor::new(head[..got].to_vec()).chain(reader));
    Ok(match encoding {
        Encoding::Utf16Le | Encoding::Utf16Be => {
            (Box::new(Utf16Reader::new(reader, encoding)), encoding)
        }
        _ => (reader, encoding),
    })
}

/// UTF-16 in, UTF-8 out, decoded as it streams (the mark of its own byte order dropped).
struct Utf16Reader<R> {
    inner: R,
    decoder: encoding_rs::Decoder,
    raw: Vec<u8>,
    out: Vec<u8>,
    /// `out[taken..]` is decoded and not read yet.
    taken: usize,
    done: bool,
}

impl<R: Read> Utf16Reader<R> {
    fn new(inner: R, encoding: Encoding) -> Self {
        let codec = match encoding {
            Encoding::Utf16Be => encoding_rs::UTF_16BE,
            _ => encoding_rs::UTF_16LE,
        };
        Utf16Reader {
            inner,
            decoder: codec.new_decoder_with_bom_removal(),
            raw: vec![0; 256 * 1024],
            out: Vec::new(),
            taken: 0,
            done: false,
        }
    }

    /// Decodes the next read of the inner stream into `out`.
    fn refill(&mut self) -> io::Result<()> {
        let read = loop {
            match self.inner.read(&mut self.raw) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        };
        let last = read == 0;
        let mut src = &self.raw[..read];
        let room = self
            .decoder
            .max_utf8_buffer_length_without_replacement(read)
            .unwrap_or(read * 3 + 16);
        self.out.clear();
        self.out.resize(room.max(16), 0);
        self.taken = 0;
        let mut written = 0;
        loop {
            let (result, used, wrote) = self.decoder.decode_to_utf8_without_replacement(
                src,
                &mut self.out[written..],
                last,
            );
            written += wrote;
            src = &src[used..];
            match result {
                encoding_rs::DecoderResult::InputEmpty => break,
                encoding_rs::DecoderResult::OutputFull => {
                    let grown = self.out.len() * 2;
                    self.out.resize(grown, 0);
                }
                encoding_rs::DecoderResult::Malformed(..) => {
                    if written == self.out.len() {
                        self.out.push(0);
                    }
                    self.out[written] = MALFORMED;
                    written += 1;
                }
            }
        }
        self.out.truncate(written);
        self.done = last;
        Ok(())
    }
}

impl<R: Read> Read for Utf16Reader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.taken == self.out.len() {
            if self.done || buf.is_empty() {
                return Ok(0);
            }
            self.refill()?;
        }
        let n = buf.len().min(self.out.len() - self.taken);
        buf[..n].copy_from_slice(&self.out[self.taken..self.taken + n]);
        self.taken += n;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utf8(encoding: Encoding, data: &[u8]) -> Vec<u8> {
        encoding.to_utf8(data).into_owned()
    }

    fn read_all(data: Vec<u8>, declared: Option<Encoding>) -> Result<(Vec<u8>, Encoding)> {
        let (mut reader, encoding) = decoded(Box::new(io::Cursor::new(data)), declared, "t")?;
        let mut out = Vec::new();
        // One byte at a time: the decoder must not depend on how reads are cut.
        let mut byte = [0u8; 1];
        while reader.read(&mut byte).unwrap() == 1 {
            out.push(byte[0]);
        }
        Ok((out, encoding))
    }

    fn utf16le(text: &str, mark: bool) -> Vec<u8> {
        let mut out = if mark { vec![0xFF, 0xFE] } else { Vec::new() };
        out.extend(text.encode_utf16().flat_map(u16::to_le_bytes));
        out
    }

    #[test]
    fn names_as_postgresql_matches_them() {
        for (name, want) in [
            ("UTF8", Encoding::Utf8),
            ("utf-8", Encoding::Utf8),
            ("latin1", Encoding::Latin1),
            ("ISO-8859-1", Encoding::Latin1),
            ("iso_8859_1", Encoding::Latin1),
            ("WIN1252", Encoding::Win1252),
            ("windows-1252", Encoding::Win1252),
            ("cp1252", Encoding::Win1252),
            ("UTF16", Encoding::Utf16),
            ("utf-16le", Encoding::Utf16Le),
            ("UTF_16BE", Encoding::Utf16Be),
        ] {
            assert_eq!(name.parse::<Encoding>().unwrap(), want, "{name}");
        }
        assert!(matches!(
            "ebcdic".parse::<Encoding>(),
            Err(Error::UnknownEncoding(name)) if name == "ebcdic"
        ));
    }

    #[test]
    fn single_byte_blocks_become_utf8() {
        assert!(matches!(
            Encoding::Latin1.to_utf8(b"plain"),
            Cow::Borrowed(_)
        ));
        assert_eq!(
            utf8(Encoding::Latin1, b"caf\xe9,\"\xdf\"\n"),
            "café,\"ß\"\n".as_bytes()
        );
        // 0x80 is a C1 control in Latin-1, the euro sign in Windows-1252.
        assert_eq!(utf8(Encoding::Latin1, b"\x80"), "\u{80}".as_bytes());
        assert_eq!(
            utf8(Encoding::Win1252, b"5\x80 \x93q\x94"),
            "5€ “q”".as_bytes()
        );
        assert_eq!(
            utf8(Encoding::Latin1, &(0u8..=255).collect::<Vec<_>>()[1..]),
            (1u32..=255)
                .map(|c| char::from_u32(c).unwrap())
                .collect::<String>()
                .as_bytes()
        );
    }

    #[test]
    fn undecodable_bytes_stay_and_fail_the_utf8_check() {
        let out = utf8(Encoding::Win1252, b"\xe9\x81x");
        assert_eq!(out, b"\xc3\xa9\x81x");
        let bad = std::str::from_utf8(&out).unwrap_err().valid_up_to();
        assert_eq!(
            Encoding::Win1252.undecodable_reason(&out[bad..]),
            "character with byte sequence 0x81 in encoding \"WIN1252\" has no equivalent in encoding \"UTF8\""
        );
        assert_eq!(utf8(Encoding::Latin1, b"\xe9\0"), b"\xc3\xa9\0");
        assert_eq!(
            Encoding::Latin1.undecodable_reason(b"\0"),
            "invalid byte sequence for encoding \"LATIN1\": 0x00"
        );
        // Latin-1 has a character for every other byte.
        assert_eq!(utf8(Encoding::Latin1, b"\x81"), "\u{81}".as_bytes());
    }

    #[test]
    fn utf16_is_found_by_its_mark_and_decoded_whatever_the_reads() {
        let text = "id,name\n1,\"Zoë \"\"€\"\"\nß\"\n2,😀\n";
        let (out, encoding) = read_all(utf16le(text, true), None).unwrap();
        assert_eq!(
            (String::from_utf8(out).unwrap().as_str(), encoding),
            (text, Encoding::Utf16Le)
        );
        let mut be = vec![0xFE, 0xFF];
        be.extend(text.encode_utf16().flat_map(u16::to_be_bytes));
        let (out, encoding) = read_all(be, Some(Encoding::Utf16)).unwrap();
        assert_eq!(
            (String::from_utf8(out).unwrap().as_str(), encoding),
            (text, Encoding::Utf16Be)
        );
        let (out, _) = read_all(utf16le(text, false), Some(Encoding::Utf16Le)).unwrap();
        assert_eq!(out, text.as_bytes());
        // Without a mark or --encoding, the bytes are left for the UTF-8 check.
        let (out, encoding) = read_all(b"ab".to_vec(), None).unwrap();
        assert_eq!((out.as_slice(), encoding), (&b"ab"[..], Encoding::Utf8));
    }

    #[test]
    fn utf16_byte_order_must_be_known_and_agree() {
        assert!(matches!(
            read_all(utf16le("a", false), Some(Encoding::Utf16)),
            Err(Error::ByteOrder { .. })
        ));
        assert!(matches!(
            read_all(utf16le("a", true), Some(Encoding::Utf16Be)),
            Err(Error::ByteOrder { .. })
        ));
    }

    #[test]
    fn malformed_utf16_leaves_a_marker_and_keeps_the_syntax() {
        // "a", an unpaired high surrogate, ",b", then an odd last byte.
        let data = vec![
            0xFF, 0xFE, b'a', 0, 0x00, 0xD8, b',', 0, b'b', 0, b'\n', 0, 0x41,
        ];
        let (out, _) = read_all(data, None).unwrap();
        assert_eq!(out, b"a\xff,b\n\xff");
        assert!(Encoding::Utf16Le
            .undecodable_reason(&out[1..])
            .contains("unpaired surrogate"));
    }
}
