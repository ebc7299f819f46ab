//! Just enough of a PNG decoder to read Chromium's screenshots: 8-bit RGB or RGBA, not
//! interlaced, zlib through flate2 (no PNG crate is available offline).

use flate2::read::ZlibDecoder;
use std::io::Read;

pub struct Image {
    pub width: usize,
    pub height: usize,
    /// Row-major RGB; alpha is dropped (screenshots are opaque).
    pub pixels: Vec<[u8; 3]>,
}

pub fn decode(bytes: &[u8]) -> Result<Image, String> {
    const SIGNATURE: &[u8] = b"\x89PNG\r\n\x1a\n";
    let mut rest = bytes
        .strip_prefix(SIGNATURE)
        .ok_or("not a PNG (signature)")?;
    let (mut width, mut height, mut channels) = (0usize, 0usize, 0usize);
    let mut idat = Vec::new();
    while rest.len() >= 12 {
        let len = u32::from_be_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
        let kind = &rest[4..8];
        let data = rest.get(8..8 + len).ok_or("truncated chunk")?;
        match kind {
            b"IHDR" => {
                let be =
                    |i: usize| u32::from_be_bytes([data[i], data[i + 1], data[i + 2], data[i + 3]]);
                width = be(0) as usize;
                height = be(4) as usize;
                let (depth, colour, interlace) = (data[8], data[9], data[12]);
                channels = match (depth, colour, interlace) {
                    (8, 2, 0) => 3,
                    (8, 6, 0) => 4,
                    _ => return Err(format!("unsupported PNG: depth {depth}, colour type {colour}, interlace {interlace}")),
                };
            }
            b"IDAT" => idat.extend_from_slice(data),
            b"IEND" => break,
            _ => {}
        }
        rest = &rest[(12 + len).min(rest.len())..];
    }
    if channels == 0 {
        return Err("no IHDR".into());
    }
    let mut raw = Vec::new();
    ZlibDecoder::new(&idat[..])
        .read_to_end(&mut raw)
        .map_err(|e| format!("inflate: {e}"))?;
    let stride = width * channels;
    if raw.len() < height * (stride + 1) {
        return Err(format!(
            "{} bytes of image data for {width}x{height}",
            raw.len()
        ));
    }
    let mut prev = vec![0u8; stride];
    let mut pixels = Vec::with_capacity(width * height);
    for y in 0..height {
        let line = &raw[y * (stride + 1)..(y + 1) * (stride + 1)];
        let (filter, src) = (line[0], &line[1..]);
        let mut cur = vec![0u8; stride];
        for i in 0..stride {
            let a = if i >= channels { cur[i - channels] } else { 0 };
            let b = prev[i];
            let c = if i >= channels { prev[i - channels] } else { 0 };
            let predictor = match filter {
                0 => 0,
                1 => a,
                2 => b,
                3 => ((a as u16 + b as u16) / 2) as u8,
                4 => paeth(a, b, c),
                f => return Err(format!("filter type {f}")),
            };
            cur[i] = src[i].wrapping_add(predictor);
        }
        pixels.extend(cur.chunks_exact(channels).map(|p| [p[0], p[1], p[2]]));
        prev = cur;
    }
    Ok(Image {
        width,
        height,
        pixels,
    })
}

fn paeth(a: u8, b: u8, c: u8) -> u8 {
    let p = a as i16 + b as i16 - c as i16;
    let (pa, pb, pc) = (
        (p - a as i16).abs(),
        (p - b as i16).abs(),
        (p - c as i16).abs(),
    );
    if pa <= pb && pa <= pc {
        a
    } else if pb <= pc {
        b
    } else {
        c
    }
}

/// `#rrggbb` → RGB.
pub fn rgb(hex: &str) -> [u8; 3] {
    let h = hex.trim_start_matches('#');
    let c = |i: usize| u8::from_str_radix(&h[i..i + 2], 16).unwrap_or(0);
    [c(0), c(2), c(4)]
}

impl Image {
    /// Pixels within `tolerance` of `colour` on every channel.
    pub fn count_near(&self, colour: [u8; 3], tolerance: u8) -> usize {
        self.pixels
            .iter()
            .filter(|p| (0..3).all(|i| p[i].abs_diff(colour[i]) <= tolerance))
            .count()
    }
}
