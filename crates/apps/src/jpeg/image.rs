//! The image the app compresses: 8-bit RGB rows, made up from a seed or
//! read from a binary PPM file; its cut into strips; and the PSNR that
//! judges the round trip.

use rand::{Rng, SeedableRng};
use std::io::Read;
use std::ops::Range;
use std::path::{Path, PathBuf};

/// Bytes of a pixel: red, green, blue.
pub const CHANNELS: usize = 3;
/// The most bytes of an image: 64 MiB.
pub const MAX_IMAGE_BYTES: usize = 64 << 20;
/// The widest or tallest image: baseline JPEG stores each in 16 bits.
pub const MAX_SIDE: usize = u16::MAX as usize;

/// An 8-bit RGB image, rows top to bottom.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Image {
    /// Pixels of a row.
    pub width: usize,
    /// Rows.
    pub height: usize,
    /// `height` rows of `width` pixels of [`CHANNELS`] bytes.
    pub pixels: Vec<u8>,
}

/// Why an image file could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ImageError {
    /// The file could not be opened or read.
    #[error("reading {}", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
    /// The file is not a binary PPM (`P6`) with a maximum value of 255.
    #[error("{}: not a binary 8-bit PPM (P6, maximum value 255): {reason}", .path.display())]
    NotPpm {
        /// The file.
        path: PathBuf,
        /// What was wrong with its header.
        reason: &'static str,
    },
    /// The header promises more than [`MAX_IMAGE_BYTES`] of pixels.
    #[error("{}: {width}x{height} RGB is more than {MAX_IMAGE_BYTES} bytes", .path.display())]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Pixels of a row.
        width: usize,
        /// Rows.
        height: usize,
    },
    /// The file holds fewer pixels than its header promises.
    #[error("{}: the header promises {expected} bytes of pixels, the file has {found}", .path.display())]
    Truncated {
        /// The file.
        path: PathBuf,
        /// Bytes of pixels promised.
        expected: usize,
        /// Bytes of pixels present.
        found: usize,
    },
}

impl Image {
    /// A `width` x `height` test card from `seed`: smooth gradients, a few
    /// soft-edged discs and a little noise, so that JPEG has both flat areas and
    /// edges to encode, as a photograph has.
    pub fn synthetic(width: usize, height: usize, seed: u64) -> Image {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let discs: Vec<(f64, f64, f64, [u8; 3])> = (0..5)
            .map(|_| {
                let x = rng.gen_range(0.0..width as f64);
                let y = rng.gen_range(0.0..height as f64);
                let r = rng.gen_range(0.1..0.3) * width.min(height) as f64;
                (x, y, r, [rng.gen(), rng.gen(), rng.gen()])
            })
            .collect();
        let mut pixels = Vec::with_capacity(width * height * CHANNELS);
        for y in 0..height {
            for x in 0..width {
                let (fx, fy) = (x as f64 / width as f64, y as f64 / height as f64);
                let mut rgb = [
                    255.0 * fx,
                    255.0 * fy,
                    127.5 * (1.0 + (6.0 * (fx + fy)).sin()),
                ];
                let (xf, yf) = (x as f64, y as f64);
                for &(cx, cy, r, colour) in &discs {
                    // Edges blend over two pixels, as a lens draws them.
                    let inside = ((r - ((xf - cx).powi(2) + (yf - cy).powi(2)).sqrt()) / 2.0)
                        .clamp(0.0, 1.0);
                    for (value, c) in rgb.iter_mut().zip(colour) {
                        *value += inside * (f64::from(c) - *value);
                    }
                }
                for value in rgb {
                    let noisy = value + rng.gen_range(-2.0..2.0);
                    pixels.push(noisy.clamp(0.0, 255.0) as u8);
                }
            }
        }
        Image {
            width,
            height,
            pixels,
        }
    }

    /// Reads a binary PPM (`P6`, maximum value 255) file.
    pub fn read_ppm(path: &Path) -> Result<Image, ImageError> {
        let io = |source| ImageError::Io {
            path: path.to_owned(),
            source,
        };
        let mut file = std::io::BufReader::new(std::fs::File::open(path).map_err(io)?);
        let (width, height) = ppm_header(&mut file).map_err(|e| match e {
            HeaderError::Io(source) => io(source),
            HeaderError::Bad(reason) => ImageError::NotPpm {
                path: path.to_owned(),
                reason,
            },
        })?;
        let expected = width * height * CHANNELS;
        if expected > MAX_IMAGE_BYTES {
            return Err(ImageError::TooLarge {
                path: path.to_owned(),
                width,
                height,
            });
        }
        let mut pixels = Vec::with_capacity(expected);
        // One byte past the promise tells a longer file from an exact one.
        file.take(expected as u64 + 1)
            .read_to_end(&mut pixels)
            .map_err(io)?;
        if pixels.len() < expected {
            return Err(ImageError::Truncated {
                path: path.to_owned(),
                expected,
                found: pixels.len(),
            });
        }
        pixels.truncate(expected);
        Ok(Image {
            width,
            height,
            pixels,
        })
    }

    /// The width and height a PPM file's header gives, without reading
    /// its pixels: for checking a job before it starts.
    pub fn ppm_size(path: &Path) -> Result<(usize, usize), ImageError> {
        let io = |source| ImageError::Io {
            path: path.to_owned(),
            source,
        };
        let mut file = std::io::BufReader::new(std::fs::File::open(path).map_err(io)?);
        ppm_header(&mut file).map_err(|e| match e {
            HeaderError::Io(source) => io(source),
            HeaderError::Bad(reason) => ImageError::NotPpm {
                path: path.to_owned(),
                reason,
            },
        })
    }

    /// Bytes of a row.
    pub fn stride(&self) -> usize {
        self.width * CHANNELS
    }

    /// The bytes of `rows`.
    pub fn rows(&self, rows: Range<usize>) -> &[u8] {
        &self.pixels[rows.start * self.stride()..rows.end * self.stride()]
    }
}

enum HeaderError {
    Io(std::io::Error),
    Bad(&'static str),
}

/// Reads `P6 width height 255` and the one white-space byte after it;
/// `#` comments run to the end of their line.
fn ppm_header(file: &mut impl Read) -> Result<(usize, usize), HeaderError> {
    let mut byte = || -> Result<Option<u8>, HeaderError> {
        let mut b = [0u8];
        match file.read(&mut b).map_err(HeaderError::Io)? {
            0 => Ok(None),
            _ => Ok(Some(b[0])),
        }
    };
    let mut magic = [0u8; 2];
    for m in &mut magic {
        *m = byte()?.ok_or(HeaderError::Bad("too short"))?;
    }
    if &magic != b"P6" {
        return Err(HeaderError::Bad("it does not start with P6"));
    }
    let mut fields = [0usize; 3];
    for field in &mut fields {
        let mut digits = 0;
        let mut next = byte()?;
        loop {
            match next {
                Some(b'#') => while !matches!(byte()?, Some(b'\n') | None) {},
                Some(b) if b.is_ascii_whitespace() => {}
                _ => break,
            }
            next = byte()?;
        }
        while let Some(d @ b'0'..=b'9') = next {
            digits += 1;
            *field = field
                .checked_mul(10)
                .and_then(|f| f.checked_add(usize::from(d - b'0')))
                .filter(|&f| f <= MAX_IMAGE_BYTES)
                .ok_or(HeaderError::Bad("a number in the header is too large"))?;
            next = byte()?;
        }
        if digits == 0 || !next.is_some_and(|b| b.is_ascii_whitespace()) {
            return Err(HeaderError::Bad("its header is not three numbers"));
        }
    }
    let [width, height, max] = fields;
    if max != 255 {
        return Err(HeaderError::Bad("its maximum value is not 255"));
    }
    Ok((width, height))
}

/// The rows of strip `strip` of `strips`, cut as evenly as whole rows
/// allow: strip s is rows s·H/S to (s+1)·H/S.
pub fn strip_rows(height: usize, strips: usize, strip: usize) -> Range<usize> {
    strip * height / strips..(strip + 1) * height / strips
}

/// Peak signal-to-noise ratio of `decoded` against `original`, in dB:
/// 10·log10(255² / mean squared error); infinite when they are equal.
pub fn psnr(original: &[u8], decoded: &[u8]) -> f64 {
    let squares: u64 = original
        .iter()
        .zip(decoded)
        .map(|(&a, &b)| (i64::from(a) - i64::from(b)).pow(2) as u64)
        .sum();
    if squares == 0 {
        return f64::INFINITY;
    }
    let mse = squares as f64 / original.len().max(1) as f64;
    10.0 * (255.0 * 255.0 / mse).log10()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_cover_every_row_once() {
        for (height, strips) in [(448, 8), (10, 3), (7, 7), (1000, 6)] {
            let mut next = 0;
            for s in 0..strips {
                let rows = strip_rows(height, strips, s);
                assert_eq!(rows.start, next);
                assert!(!rows.is_empty());
                next = rows.end;
            }
            assert_eq!(next, height);
        }
    }

    #[test]
    fn psnr_of_equal_images_is_infinite_and_falls_with_error() {
        let a = vec![100u8; 300];
        assert_eq!(psnr(&a, &a), f64::INFINITY);
        let b = vec![101u8; 300];
        assert!((psnr(&a, &b) - 48.13).abs() < 0.01);
        let c = vec![110u8; 300];
        assert!(psnr(&a, &c) < psnr(&a, &b));
    }

    #[test]
    fn the_synthetic_image_is_repeatable() {
        let a = Image::synthetic(32, 16, 7);
        assert_eq!(a.pixels.len(), 32 * 16 * 3);
        assert_eq!(a, Image::synthetic(32, 16, 7));
        assert_ne!(a, Image::synthetic(32, 16, 8));
    }

    #[test]
    fn a_ppm_is_read_and_bad_ones_are_refused() {
        let dir = std::env::temp_dir().join(format!("tw-jpeg-ppm-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let write = |name: &str, bytes: &[u8]| {
            let path = dir.join(name);
            std::fs::write(&path, bytes).unwrap();
            path
        };
        let mut good = b"P6\n# a comment\n2 1\n255\n".to_vec();
        good.extend([1, 2, 3, 4, 5, 6]);
        let image = Image::read_ppm(&write("good.ppm", &good)).unwrap();
        assert_eq!((image.width, image.height), (2, 1));
        assert_eq!(image.pixels, [1, 2, 3, 4, 5, 6]);
        assert_eq!(Image::ppm_size(&write("good.ppm", &good)).unwrap(), (2, 1));
        let short = Image::read_ppm(&write("short.ppm", &good[..good.len() - 1]));
        assert!(matches!(
            short,
            Err(ImageError::Truncated {
                expected: 6,
                found: 5,
                ..
            })
        ));
        let p3 = Image::read_ppm(&write("p3.ppm", b"P3\n2 1\n255\n1 2 3 4 5 6\n"));
        assert!(matches!(p3, Err(ImageError::NotPpm { .. })));
        let deep = Image::read_ppm(&write("deep.ppm", b"P6\n2 1\n65535\n"));
        assert!(matches!(deep, Err(ImageError::NotPpm { .. })));
        let huge = Image::read_ppm(&write("huge.ppm", b"P6\n99999999999 1\n255\n"));
        assert!(matches!(huge, Err(ImageError::NotPpm { .. })));
        let missing = Image::read_ppm(&dir.join("missing.ppm"));
        assert!(matches!(missing, Err(ImageError::Io { .. })));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
