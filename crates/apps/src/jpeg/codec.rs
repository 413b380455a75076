//! A strip's trip through JPEG: baseline encoding by `jpeg-encoder`,
//! decoding by `jpeg-decoder`, each on the calling thread.
//!
//! Why these crates, and why chroma is kept whole: the **Codec** note
//! of the [`jpeg`](super) module.

use super::image::CHANNELS;

/// Why a strip could not be encoded or decoded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CodecError {
    /// The encoder refused the strip.
    #[error("encoding a {width}x{height} strip: {source}")]
    Encode {
        /// Pixels of a row.
        width: usize,
        /// Rows.
        height: usize,
        /// What jpeg-encoder said.
        #[source]
        source: jpeg_encoder::EncodingError,
    },
    /// The strip's pixels do not fill `width` x `height`, or a side does
    /// not fit baseline JPEG's 16 bits.
    #[error("a {width}x{height} strip cannot be made of {bytes} bytes of RGB")]
    Shape {
        /// Pixels of a row.
        width: usize,
        /// Rows.
        height: usize,
        /// Bytes given.
        bytes: usize,
    },
    /// The decoder refused the JPEG bytes.
    #[error("decoding a strip: {0}")]
    Decode(#[from] jpeg_decoder::Error),
    /// The JPEG decoded, but not to the expected strip.
    #[error("a strip decoded to {found}, where a {width}x{height} RGB strip was expected")]
    Mismatch {
        /// Pixels of a row expected.
        width: usize,
        /// Rows expected.
        height: usize,
        /// What it decoded to.
        found: String,
    },
}

/// Encodes `pixels`, `height` rows of `width` RGB pixels, as a baseline
/// JPEG at `quality` (1–100).
pub fn compress(
    pixels: &[u8],
    width: usize,
    height: usize,
    quality: u8,
) -> Result<Vec<u8>, CodecError> {
    let sides = u16::try_from(width).ok().zip(u16::try_from(height).ok());
    let (w, h) = match sides {
        Some(sides) if pixels.len() == width * height * CHANNELS => sides,
        _ => {
            return Err(CodecError::Shape {
                width,
                height,
                bytes: pixels.len(),
            })
        }
    };
    // Compressed strips are a tenth of their pixels, or so, at quality 75.
    let mut jpeg = Vec::with_capacity(pixels.len() / 8);
    let mut encoder = jpeg_encoder::Encoder::new(&mut jpeg, quality);
    encoder.set_sampling_factor(jpeg_encoder::SamplingFactor::R_4_4_4);
    encoder
        .encode(pixels, w, h, jpeg_encoder::ColorType::Rgb)
        .map_err(|source| CodecError::Encode {
            width,
            height,
            source,
        })?;
    Ok(jpeg)
}

/// Decodes `jpeg`, which must be a `width` x `height` RGB image, to its
/// rows of pixels. The decoder allocates no more than those pixels,
/// whatever the bytes claim.
pub fn decompress(jpeg: &[u8], width: usize, height: usize) -> Result<Vec<u8>, CodecError> {
    let mut decoder = jpeg_decoder::Decoder::new(jpeg);
    decoder.set_max_decoding_buffer_size(width * height * CHANNELS);
    decoder.read_info()?;
    let mismatch = |found: String| CodecError::Mismatch {
        width,
        height,
        found,
    };
    match decoder.info() {
        Some(i)
            if usize::from(i.width) == width
                && usize::from(i.height) == height
                && i.pixel_format == jpeg_decoder::PixelFormat::RGB24 => {}
        Some(i) => {
            return Err(mismatch(format!(
                "{}x{} {:?}",
                i.width, i.height, i.pixel_format
            )))
        }
        None => return Err(mismatch("no header".into())),
    }
    let pixels = decoder.decode()?;
    if pixels.len() != width * height * CHANNELS {
        return Err(mismatch(format!("{} bytes", pixels.len())));
    }
    Ok(pixels)
}

#[cfg(test)]
mod tests {
    use super::super::image::{psnr, Image};
    use super::*;

    #[test]
    fn a_strip_survives_the_round_trip() {
        let image = Image::synthetic(64, 40, 3);
        for (quality, at_least) in [(100, 45.0), (75, 33.0), (10, 24.0)] {
            let jpeg = compress(&image.pixels, 64, 40, quality).unwrap();
            assert!(jpeg.len() < image.pixels.len(), "quality {quality}");
            let back = decompress(&jpeg, 64, 40).unwrap();
            let db = psnr(&image.pixels, &back);
            assert!(db > at_least, "quality {quality}: {db:.1} dB");
        }
    }

    #[test]
    fn bad_shapes_and_bytes_are_errors_not_panics() {
        let image = Image::synthetic(16, 8, 1);
        assert!(matches!(
            compress(&image.pixels, 16, 9, 75),
            Err(CodecError::Shape { .. })
        ));
        assert!(matches!(
            compress(&[], 70000, 0, 75),
            Err(CodecError::Shape { .. })
        ));
        let jpeg = compress(&image.pixels, 16, 8, 75).unwrap();
        assert!(matches!(
            decompress(&jpeg, 16, 9),
            Err(CodecError::Mismatch { .. })
        ));
        assert!(decompress(&jpeg[..jpeg.len() / 2], 16, 8).is_err());
        assert!(decompress(b"not a jpeg", 16, 8).is_err());
    }
}
