//! Opening an input: a file (plain, `.gz` or `.zst`) or standard input (`-`), counting the bytes
//! taken from it so progress and ETA can be computed whatever the compression.

use crate::{Error, Result};
use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// How the input's bytes are compressed: what their first bytes say, else the file's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    None,
    Gzip,
    Zstd,
}

impl Compression {
    pub fn name(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Gzip => "gzip",
            Compression::Zstd => "zstd",
        }
    }

    pub fn from_path(path: &Path) -> Compression {
        match path.extension().and_then(|e| e.to_str()) {
            Some("gz" | "gzip") => Compression::Gzip,
            Some("zst" | "zstd") => Compression::Zstd,
            _ => Compression::None,
        }
    }

    /// What a stream's first bytes say: gzip's ID1 ID2 (RFC 1952) or a zstd frame's magic
    /// number (RFC 8878); `None` for neither, which text never starts with (0x1f is a control
    /// character, 0xb5 not the start of a UTF-8 sequence).
    pub fn sniff(head: &[u8]) -> Option<Compression> {
        match head {
            [0x1f, 0x8b, ..] => Some(Compression::Gzip),
            [0x28, 0xb5, 0x2f, 0xfd, ..] => Some(Compression::Zstd),
            _ => None,
        }
    }

    /// A file's compression: its first bytes, else (too short, unreadable) its name. A `.gz`
    /// without the extension is read as gzip all the same, and a plain file named `.gz` as
    /// plain.
    pub fn of_file(path: &Path) -> Compression {
        let mut head = [0; 4];
        let read = File::open(path).and_then(|mut f| read_head(&mut f, &mut head));
        match read {
            Ok(n) if n == head.len() => Compression::sniff(&head).unwrap_or(Compression::None),
            Ok(n) => Compression::sniff(&head[..n]).unwrap_or_else(|| Compression::from_path(path)),
            Err(_) => Compression::from_path(path),
        }
    }
}

/// Reads until `head` is full or the stream ends; how many bytes it holds.
fn read_head(reader: &mut impl Read, head: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < head.len() {
        match reader.read(&mut head[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// An opened input, ready to be split.
pub struct Input {
    /// The name used in messages: the path as given, or `-`.
    pub name: String,
    /// Size on disk when known (compressed size for compressed files).
    pub size: Option<u64>,
    pub compression: Compression,
    /// The decompressed byte stream.
    pub reader: Box<dyn Read + Send>,
    /// Whether byte offsets in the stream are offsets in the file (plain regular files), so a
    /// block can be read again to locate an error the server reported.
    pub seekable: bool,
}

/// Opens `path` (`-` for standard input); `consumed` is advanced by every raw byte read. A
/// pipe's reads end with an error once `stop` says so, instead of waiting for a writer that
/// may never write again.
pub fn open(path: &str, consumed: Arc<AtomicU64>, stop: Stop) -> Result<Input> {
    if path == "-" {
        // A pipe cannot be read twice: its first bytes, read to tell its compression, go
        // before the rest.
        let mut stdin = Stoppable {
            inner: io::stdin(),
            fd: 0,
            stop,
        };
        let mut head = [0; 4];
        let n = read_head(&mut stdin, &mut head).map_err(|cause| Error::Read {
            name: "-".into(),
            cause,
        })?;
        let compression = Compression::sniff(&head[..n]).unwrap_or(Compression::None);
        let counted = Counted {
            inner: io::Cursor::new(head[..n].to_vec()).chain(stdin),
            consumed,
        };
        return Ok(Input {
            name: "-".into(),
            size: None,
            compression,
            reader: decompressed(compression, counted, Path::new("-"))?,
            seekable: false,
        });
    }
    let p = Path::new(path);
    let file = File::open(p).map_err(|cause| Error::Open {
        path: p.to_path_buf(),
        cause,
    })?;
    let meta = file.metadata().map_err(|cause| Error::Open {
        path: p.to_path_buf(),
        cause,
    })?;
    // Only a regular file can be read twice (its head here, then from the start).
    let compression = match meta.is_file() {
        true => Compression::of_file(p),
        false => Compression::from_path(p),
    };
    // A regular file's read never waits on a writer; a FIFO's may.
    let raw: Box<dyn Read + Send> = match meta.is_file() {
        true => Box::new(file),
        false => Box::new(Stoppable {
            fd: std::os::fd::AsRawFd::as_raw_fd(&file),
            inner: file,
            stop,
        }),
    };
    let counted = Counted {
        inner: raw,
        consumed,
    };
    Ok(Input {
        name: path.to_string(),
        size: meta.is_file().then_some(meta.len()),
        compression,
        reader: decompressed(compression, counted, p)?,
        seekable: meta.is_file() && compression == Compression::None,
    })
}

/// `raw` as its decompressed bytes.
fn decompressed<R: Read + Send + 'static>(
    compression: Compression,
    raw: R,
    path: &Path,
) -> Result<Box<dyn Read + Send>> {
    Ok(match compression {
        Compression::None => Box::new(raw),
        Compression::Gzip => Box::new(flate2::read::MultiGzDecoder::new(BufReader::with_capacity(
            1 << 20,
            raw,
        ))),
        Compression::Zstd => Box::new(zstd::Decoder::new(raw).map_err(|cause| Error::Open {
            path: path.to_path_buf(),
            cause,
        })?),
    })
}

/// Opens a plain file positioned at `offset` (to resume a load there); `consumed` starts at
/// `offset` so progress and ETA stay right.
pub fn open_at(path: &str, offset: u64, consumed: Arc<AtomicU64>) -> Result<Box<dyn Read + Send>> {
    use std::io::{Seek, SeekFrom};
    let p = Path::new(path);
    let mut file = File::open(p).map_err(|cause| Error::Open {
        path: p.to_path_buf(),
        cause,
    })?;
    file.seek(SeekFrom::Start(offset))
        .map_err(|cause| Error::Open {
            path: p.to_path_buf(),
            cause,
        })?;
    consumed.store(offset, Ordering::Relaxed);
    Ok(Box::new(Counted {
        inner: file,
        consumed,
    }))
}

/// Reads `len` bytes at `offset` of a plain file again (to locate a row the server refused).
pub fn read_range(path: &str, offset: u64, len: usize) -> io::Result<Vec<u8>> {
    use std::io::{Seek, SeekFrom};
    let mut file = File::open(path)?;
    file.seek(SeekFrom::Start(offset))?;
    let mut buf = vec![0; len];
    file.read_exact(&mut buf)?;
    Ok(buf)
}

/// Appends up to `want` bytes read from `reader` to `buf`; returns how many (0 at the end).
/// `name` is the input's name for the error.
pub(crate) fn read_more(
    reader: &mut impl Read,
    buf: &mut bytes::BytesMut,
    want: usize,
    name: &str,
) -> Result<usize> {
    let len = buf.len();
    buf.resize(len + want, 0);
    let read = loop {
        match reader.read(&mut buf[len..]) {
            Ok(n) => break n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(source) => {
                buf.truncate(len);
                return Err(Error::Read {
                    name: name.to_string(),
                    cause: source,
                });
            }
        }
    };
    buf.truncate(len + read);
    Ok(read)
}

/// Wraps a stream from elsewhere (a query's rows) so its bytes count for progress like a file's.
pub fn counted<R: Read + Send + 'static>(
    inner: R,
    consumed: Arc<AtomicU64>,
) -> Box<dyn Read + Send> {
    Box::new(Counted { inner, consumed })
}

/// Whether the reader of an input should give up waiting (the load was stopped).
pub type Stop = Arc<dyn Fn() -> bool + Send + Sync>;

/// How often a read of a pipe looks whether to stop.
const STOP_POLL_MS: i32 = 100;

/// A pipe (or any input that is not a regular file), read only once `poll(2)` says bytes or
/// its end are there, so that a stop is seen within [`STOP_POLL_MS`] however long the writer
/// takes.
struct Stoppable<R> {
    inner: R,
    fd: std::os::fd::RawFd,
    stop: Stop,
}

impl<R: Read> Read for Stoppable<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            if (self.stop)() {
                return Err(io::Error::other("the load was stopped"));
            }
            let mut fd = libc::pollfd {
                fd: self.fd,
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one pollfd, owned here, for the length of the call.
            match unsafe { libc::poll(&mut fd, 1, STOP_POLL_MS) } {
                0 => continue,
                n if n < 0 && io::Error::last_os_error().kind() == io::ErrorKind::Interrupted => {
                    continue
                }
                // Readable, at its end, or in error: the read itself says which.
                _ => return self.inner.read(buf),
            }
        }
    }
}

struct Counted<R> {
    inner: R,
    consumed: Arc<AtomicU64>,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.consumed.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// FNV-1a over the first and last 64 KiB: stable across platforms and versions, cheap on any
/// size, and enough to notice a file replaced by another of the same size and time.
pub fn fingerprint(path: &std::path::Path) -> std::io::Result<String> {
    use std::io::{Read, Seek, SeekFrom};
    const SPAN: u64 = 64 * 1024;
    let mut file = std::fs::File::open(path)?;
    let size = file.metadata()?.len();
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut feed = |bytes: &[u8]| {
        for &b in bytes {
            hash ^= u64::from(b);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    };
    let mut buf = vec![0; SPAN.min(size) as usize];
    file.read_exact(&mut buf)?;
    feed(&buf);
    if size > SPAN {
        let tail = SPAN.min(size - SPAN);
        file.seek(SeekFrom::Start(size - tail))?;
        let mut buf = vec![0; tail as usize];
        file.read_exact(&mut buf)?;
        feed(&buf);
    }
    Ok(format!("{hash:016x}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compression_is_told_by_the_first_bytes_then_by_the_name() {
        assert_eq!(
            Compression::sniff(&[0x1f, 0x8b, 8, 0]),
            Some(Compression::Gzip)
        );
        assert_eq!(
            Compression::sniff(&[0x28, 0xb5, 0x2f, 0xfd]),
            Some(Compression::Zstd)
        );
        assert_eq!(Compression::sniff(b"id,n"), None);
        assert_eq!(Compression::sniff(&[0x1f]), None);
        let dir = tempfile::tempdir().unwrap();
        let named = dir.path().join("plain.csv.gz");
        std::fs::write(&named, "id,name\n").unwrap();
        assert_eq!(Compression::of_file(&named), Compression::None);
        let short = dir.path().join("x.gz");
        std::fs::write(&short, "1").unwrap();
        assert_eq!(Compression::of_file(&short), Compression::Gzip);
        let unnamed = dir.path().join("data");
        std::fs::write(&unnamed, [0x1f, 0x8b, 8, 0, 0]).unwrap();
        assert_eq!(Compression::of_file(&unnamed), Compression::Gzip);
    }

    #[test]
    fn fingerprints_see_head_and_tail() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a");
        std::fs::write(&a, vec![b'x'; 200_000]).unwrap();
        let first = fingerprint(&a).unwrap();
        let mut changed = vec![b'x'; 200_000];
        changed[199_999] = b'y';
        std::fs::write(&a, &changed).unwrap();
        assert_ne!(fingerprint(&a).unwrap(), first);
        assert_eq!(fingerprint(&a).unwrap(), fingerprint(&a).unwrap());
    }
}
