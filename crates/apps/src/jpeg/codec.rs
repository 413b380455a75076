//! A strip's trip through JPEG: baseline encoding by `jpeg-encoder`,
//! decoding by `jpeg-decoder`, each on the calling thread.
//!
//! Why these crates rather than a DCT pipeline of our own: the seed ran
//! the Independent JPEG Group's sequential codec, a real one, and the
//! app's point is the distribution around it, not the codec. Both crates
//! are pure Rust (no C toolchain on the nodes), single-threaded as used
//! here (jpeg-decoder's rayon feature is off, so a strip is decoded by the
//! thread the app gives it, and one thread per node means one core per
//! node), and bound what they allocate by the image's size. jpeg-encoder
//! is the encoder of the image-rs family; jpeg-decoder was already in the
//! workspace's lock file and decodes every baseline file jpeg-encoder
//! writes.
//!
//! Chroma is kept whole (4:4:4), not subsampled 4:2:0 as libjpeg and
//! jpeg-encoder do by default below quality 90: with 4:2:0 this encoder
//! and decoder bring short strips back badly at their edge rows
//! (measured at quality 75 on the synthetic image: 12.8 dB for a strip
//! of 64 x 2, 23.6 for 64 x 8, against 31.7 and 32.1 in 4:4:4), and on
//! many nodes with two threads the strips are short. It costs about half
//! again in JPEG bytes (15 449 for the 448 x 448 image at quality 75,
//! against 9 917).

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
