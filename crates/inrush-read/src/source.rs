//! Opening an input: a file (plain, `.gz` or `.zst`) or standard input (`-`), counting the bytes
//! taken from it so progress and ETA can be computed whatever the compression.

use crate::{Error, Result};
use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// How the input's bytes are compressed, decided by the file name.
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

/// Opens `path` (`-` for standard input); `consumed` is advanced by every raw byte read.
pub fn open(path: &str, consumed: Arc<AtomicU64>) -> Result<Input> {
    if path == "-" {
        let counted = Counted {
            inner: io::stdin(),
            consumed,
        };
        return Ok(Input {
            name: "-".into(),
            size: None,
            compression: Compression::None,
            reader: Box::new(counted),
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
    let compression = Compression::from_path(p);
    let counted = Counted {
        inner: file,
        consumed,
    };
    let reader: Box<dyn Read + Send> = match compression {
        Compression::None => Box::new(counted),
        Compression::Gzip => Box::new(flate2::read::MultiGzDecoder::new(BufReader::with_capacity(
            1 << 20,
            counted,
        ))),
        Compression::Zstd => {
            Box::new(zstd::Decoder::new(counted).map_err(|cause| Error::Open {
                path: p.to_path_buf(),
                cause,
            })?)
        }
    };
    Ok(Input {
        name: path.to_string(),
        size: meta.is_file().then_some(meta.len()),
        compression,
        reader,
        seekable: meta.is_file() && compression == Compression::None,
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
