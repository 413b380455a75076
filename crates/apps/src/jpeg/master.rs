//! The master's side of the pipeline (module docs, steps 1, 2, 6 and 7):
//! each configuration's rounds, alternated, the strips sent out and
//! gathered back, and the verification by PSNR.

use super::*;

/// One configuration's round: the image through the pipeline once; the
/// times, the decoded image and the bytes of JPEG.
fn round(
    ep: &Endpoint,
    cfg: &Config,
    image: &Image,
    threads: u32,
) -> Result<(Round, Image, usize), Error> {
    let nodes = ep.node().nodes();
    let spawned = cfg.threads;
    let compressing = compressing_nodes(nodes);
    let strips = (compressing * threads) as usize;
    // Strip s = k·P + i, in the order k-major: every node's first strip
    // leaves before any second one. Its compressor and decompressor:
    let order: Vec<(Address, Address)> = (0..threads)
        .flat_map(|k| (0..compressing).map(move |i| (k, i)))
        .map(|(k, i)| {
            let compressor = address(Role::Compress, i, k, nodes, spawned);
            let decompressor = address(Role::Decompress, partner(i, nodes), k, nodes, spawned);
            (compressor, decompressor)
        })
        .collect();
    let began = Instant::now();
    for &(compressor, decompressor) in &order {
        for to in [compressor, decompressor] {
            let start = start_message(threads, image.width, image.height, cfg.quality);
            ep.send(to, TAG_START, start)?;
        }
    }
    let sends: Vec<_> = order
        .iter()
        .enumerate()
        .map(|(s, &(compressor, _))| {
            let rows = image.rows(strip_rows(image.height, strips, s));
            ep.isend(compressor, TAG_STRIP, rows.to_vec())
        })
        .collect();
    for sent in sends {
        sent.wait()?;
    }
    let mut decoded = Image {
        width: image.width,
        height: image.height,
        pixels: vec![0; image.pixels.len()],
    };
    let stride = image.stride();
    let mut placed = Vec::with_capacity(strips);
    for (s, &(_, from)) in order.iter().enumerate() {
        let rows = strip_rows(image.height, strips, s);
        let place = &mut decoded.pixels[rows.start * stride..rows.end * stride];
        let held = ep.mprobe(from, ANY_TAG)?;
        if held.status().tag != TAG_DECODED {
            return Err(unexpected(held.mrecv()?, TAG_DECODED));
        }
        if held.status().len != place.len() {
            return Err(Error::Protocol(format!(
                "{from} sent {} bytes for strip {s}, whose rows are {} bytes",
                held.status().len,
                place.len()
            )));
        }
        held.mrecv_into(place)?;
        placed.push(began.elapsed().as_secs_f64());
    }
    let total = began.elapsed();
    // Each strip's five stages, from the times its threads saw on their
    // clocks, which start with the master's to within a start's latency
    // (clamped, so that the offset cannot make a stage negative).
    let mut stages = [0.0f64; 5];
    let mut bytes = 0u64;
    for (&(compressor, decompressor), placed) in order.iter().zip(placed) {
        let mut compressed = ep.recv(compressor, TAG_TIMES)?.unpack()?;
        let (input, encoded) = (compressed.unpack::<f64>()?, compressed.unpack::<f64>()?);
        bytes = bytes.saturating_add(compressed.unpack::<u64>()?);
        let mut decompressed = ep.recv(decompressor, TAG_TIMES)?.unpack()?;
        let (jpeg, pixels) = (decompressed.unpack::<f64>()?, decompressed.unpack::<f64>()?);
        let marks = [0.0, input, encoded, jpeg, pixels, placed];
        for (stage, pair) in stages.iter_mut().zip(marks.windows(2)) {
            *stage += (pair[1] - pair[0]).max(0.0);
        }
    }
    // Times from the threads: a nonsensical one counts as zero, not a panic.
    let mean = |secs: f64| Duration::try_from_secs_f64(secs / strips as f64).unwrap_or_default();
    let [distribute, compress, send, decompress, combine] = stages.map(mean);
    let round = Round {
        distribute,
        compress,
        send,
        decompress,
        combine,
        total,
    };
    Ok((round, decoded, usize::try_from(bytes).unwrap_or(usize::MAX)))
}

/// The PSNR of `decoded` against `original`, whole and of its worst
/// strip of `strips` (with `threads` per node), or why they are under
/// [`min_psnr`] at `quality`.
pub(super) fn verify(
    original: &Image,
    decoded: &Image,
    (strips, threads): (usize, u32),
    quality: u8,
) -> Result<(f64, f64), Error> {
    let floor = min_psnr(quality);
    let whole = psnr(&original.pixels, &decoded.pixels);
    let (strip, worst) = (0..strips)
        .map(|s| {
            let rows = strip_rows(original.height, strips, s);
            (s, psnr(original.rows(rows.clone()), decoded.rows(rows)))
        })
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .unwrap_or((0, whole));
    // NaN cannot happen, but would fail here rather than pass.
    match whole >= floor && worst >= floor {
        true => Ok((whole, worst)),
        false => Err(Error::Wrong(format!(
            "PSNR {whole:.2} dB, strip {strip} {worst:.2} dB, with {threads} threads per node: under the {floor:.1} dB that quality {quality} must reach"
        ))),
    }
}

pub(super) fn master(ep: &Endpoint, cfg: &Config) -> Result<Report, Error> {
    let (image, source) = match &cfg.picture {
        Picture::Synthetic {
            width,
            height,
            seed,
        } => (Image::synthetic(*width, *height, *seed), "synthetic".into()),
        Picture::Ppm(path) => {
            let name = path.file_name().unwrap_or(path.as_os_str());
            (Image::read_ppm(path)?, name.to_string_lossy().into_owned())
        }
    };
    // The file may have changed since the job was checked.
    check_size(image.width, image.height)?;
    let strips = compressing_nodes(ep.node().nodes()) as usize * cfg.threads as usize;
    if image.height < strips {
        return Err(ConfigError::TooFewRows {
            height: image.height,
            strips,
        }
        .into());
    }
    let mut configurations: Vec<Measured> = std::iter::once(1)
        .chain((cfg.threads > 1).then_some(cfg.threads))
        .map(|threads| Measured {
            threads,
            rounds: Vec::with_capacity(cfg.rounds),
        })
        .collect();
    let (mut worst, mut worst_strip, mut compressed) = (f64::INFINITY, f64::INFINITY, 0);
    // Round 0 is untimed.
    for timed in (0..=cfg.rounds).map(|round| round > 0) {
        for c in configurations.iter_mut() {
            let (round, decoded, bytes) = round(ep, cfg, &image, c.threads)?;
            let strips = compressing_nodes(ep.node().nodes()) as usize * c.threads as usize;
            let (db, strip_db) = verify(&image, &decoded, (strips, c.threads), cfg.quality)?;
            worst_strip = worst_strip.min(strip_db);
            worst = worst.min(db);
            if c.threads == 1 {
                compressed = bytes;
            }
            if timed {
                c.rounds.push(round);
            }
        }
    }
    Ok(Report {
        width: image.width,
        height: image.height,
        source,
        quality: cfg.quality,
        nodes: ep.node().nodes(),
        configurations,
        psnr: worst,
        strip_psnr: worst_strip,
        min_psnr: min_psnr(cfg.quality),
        compressed,
    })
}
