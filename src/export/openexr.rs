//! OpenEXR scan-line files written by canopy itself: one part of flat channels, each block of
//! lines stored raw, run-length encoded or zip-compressed, the blocks compressed on all cores.
//! The layout is the OpenEXR file format's: the magic number and version, the header's
//! attributes, a table of every block's offset in the file, then the blocks in increasing y,
//! each its first line, its byte count and its bytes. Within a block the lines follow one
//! another, and within a line each channel's samples, channels sorted by name.
//!
//! Compression prepares a block as OpenEXR does: the bytes split into the even-indexed then
//! the odd-indexed ones, each byte then replaced by its difference to the one before plus 128.
//! A block that compression would not shrink is stored raw, which readers recognise by its
//! size. PIZ, the wavelet compression, is written through the `exr` crate instead.

use std::io::{self, Seek, SeekFrom, Write};

/// How a channel's samples are stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum SampleType {
    /// 32-bit unsigned integers.
    U32,
    /// 16-bit floats.
    F16,
    /// 32-bit floats.
    F32,
}

impl SampleType {
    fn bytes(self) -> usize {
        match self {
            Self::F16 => 2,
            Self::U32 | Self::F32 => 4,
        }
    }

    /// The file's code for it.
    fn code(self) -> i32 {
        match self {
            Self::U32 => 0,
            Self::F16 => 1,
            Self::F32 => 2,
        }
    }
}

/// One channel of the image: its name, its samples' type and a plane of its samples,
/// little-endian, one per pixel, rows from the top.
pub(super) struct Channel<'a> {
    pub name: &'a str,
    pub samples: SampleType,
    pub plane: &'a [u8],
}

/// How each block is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Compression {
    /// Raw, one line a block.
    None,
    /// Run-length encoded, one line a block.
    Rle,
    /// Zip (deflate) of one line a block.
    Zips,
    /// Zip of 16 lines a block.
    Zip,
}

impl Compression {
    /// The file's code for it.
    fn code(self) -> u8 {
        match self {
            Self::None => 0,
            Self::Rle => 1,
            Self::Zips => 2,
            Self::Zip => 3,
        }
    }

    fn lines_per_block(self) -> usize {
        match self {
            Self::Zip => 16,
            Self::None | Self::Rle | Self::Zips => 1,
        }
    }
}

/// The deflate level of zip blocks: OpenEXR's own default.
const ZIP_LEVEL: u8 = 4;

/// Lines compressed by one task: enough to amortise a task, few enough to spread a frame over
/// every core.
const LINES_PER_TASK: usize = 32;

/// Lines compressed before they are written: the compressed bytes an image holds at once.
const LINES_PER_BATCH: usize = 8 * LINES_PER_TASK;
// Batches start blocks.
const _: () = assert!(LINES_PER_BATCH.is_multiple_of(16));

/// Writes the image of `channels` (`width` x `height` pixels), with `attributes` as text
/// attributes of its header, to `out`, from where it stands. Blocks are written as each batch
/// of [`LINES_PER_BATCH`] lines is compressed, and their offsets then filled in, so the file's
/// bytes are never held whole. An error, before anything is written, for an empty image, a
/// plane of the wrong size, blocks past an `i32` of bytes, or a name that is empty, repeated,
/// too long (255 bytes) or holds a NUL.
pub(super) fn write(
    out: &mut (impl Write + Seek),
    (width, height): (u32, u32),
    channels: &[Channel],
    attributes: &[(String, String)],
    compression: Compression,
) -> io::Result<()> {
    let invalid = |what: String| Err(io::Error::new(io::ErrorKind::InvalidInput, what));
    let (width, height) = (width as usize, height as usize);
    if width == 0 || height == 0 || width > i32::MAX as usize || height > i32::MAX as usize {
        return invalid(format!("an OpenEXR image of {width}x{height} pixels"));
    }
    let mut sorted: Vec<&Channel> = channels.iter().collect();
    sorted.sort_by(|a, b| a.name.cmp(b.name));
    for pair in sorted.windows(2) {
        if pair[0].name == pair[1].name {
            return invalid(format!("OpenEXR channel '{}' given twice", pair[0].name));
        }
    }
    for channel in &sorted {
        if Some(channel.plane.len()) != width.checked_mul(height * channel.samples.bytes()) {
            return invalid(format!(
                "OpenEXR channel '{}' has {} bytes for {width}x{height} samples",
                channel.name,
                channel.plane.len()
            ));
        }
    }
    // A block's byte count is stored as an i32.
    let line: usize = sorted.iter().map(|c| width * c.samples.bytes()).sum();
    if line * compression.lines_per_block() > i32::MAX as usize {
        return invalid(format!("OpenEXR lines of {line} bytes"));
    }
    let names = sorted.iter().map(|c| c.name);
    for name in names
        .clone()
        .chain(attributes.iter().map(|(n, _)| n.as_str()))
    {
        if name.is_empty() || name.len() > 255 || name.contains('\0') {
            return invalid(format!(
                "'{name}' cannot name an OpenEXR channel or attribute"
            ));
        }
    }

    let header = header((width, height), &sorted, attributes, compression);
    let long_names = names
        .chain(attributes.iter().map(|(n, _)| n.as_str()))
        .any(|name| name.len() > 31);
    let version: u32 = 2 | if long_names { 1 << 10 } else { 0 };
    let start = out.stream_position()?;
    out.write_all(&20000630u32.to_le_bytes())?;
    out.write_all(&version.to_le_bytes())?;
    out.write_all(&header)?;
    let lines = compression.lines_per_block();
    let blocks = height.div_ceil(lines);
    let table = out.stream_position()?;
    out.write_all(&vec![0; 8 * blocks])?;
    let mut offsets = Vec::with_capacity(8 * blocks);
    let mut offset = table + 8 * blocks as u64 - start;
    for first in (0..height).step_by(LINES_PER_BATCH) {
        let batch = first..height.min(first + LINES_PER_BATCH);
        for (k, block) in compress_blocks(width, batch, &sorted, compression)
            .iter()
            .enumerate()
        {
            out.write_all(&((first + k * lines) as i32).to_le_bytes())?;
            out.write_all(&(block.len() as i32).to_le_bytes())?;
            out.write_all(block)?;
            offsets.extend_from_slice(&offset.to_le_bytes());
            offset += 8 + block.len() as u64;
        }
    }
    out.seek(SeekFrom::Start(table))?;
    out.write_all(&offsets)?;
    out.seek(SeekFrom::Start(start + offset))?;
    Ok(())
}

/// The header: the attributes OpenEXR requires, then `attributes` as strings, then its end.
fn header(
    (width, height): (usize, usize),
    channels: &[&Channel],
    attributes: &[(String, String)],
    compression: Compression,
) -> Vec<u8> {
    fn attribute(header: &mut Vec<u8>, name: &str, kind: &str, value: &[u8]) {
        for text in [name, kind] {
            header.extend_from_slice(text.as_bytes());
            header.push(0);
        }
        header.extend_from_slice(&(value.len() as i32).to_le_bytes());
        header.extend_from_slice(value);
    }
    let words = |words: &[i32]| -> Vec<u8> { words.iter().flat_map(|w| w.to_le_bytes()).collect() };
    let floats =
        |floats: &[f32]| -> Vec<u8> { floats.iter().flat_map(|f| f.to_le_bytes()).collect() };

    let mut list = Vec::new();
    for channel in channels {
        list.extend_from_slice(channel.name.as_bytes());
        list.push(0);
        list.extend_from_slice(&channel.samples.code().to_le_bytes());
        // Perceptually linear (no), three reserved bytes, then x and y sampling (every pixel).
        list.extend_from_slice(&[0, 0, 0, 0]);
        list.extend_from_slice(&words(&[1, 1]));
    }
    list.push(0);
    let window = words(&[0, 0, width as i32 - 1, height as i32 - 1]);

    let mut header = Vec::new();
    attribute(&mut header, "channels", "chlist", &list);
    attribute(
        &mut header,
        "compression",
        "compression",
        &[compression.code()],
    );
    attribute(&mut header, "dataWindow", "box2i", &window);
    attribute(&mut header, "displayWindow", "box2i", &window);
    // Increasing y.
    attribute(&mut header, "lineOrder", "lineOrder", &[0]);
    attribute(&mut header, "pixelAspectRatio", "float", &floats(&[1.0]));
    attribute(
        &mut header,
        "screenWindowCenter",
        "v2f",
        &floats(&[0.0, 0.0]),
    );
    attribute(&mut header, "screenWindowWidth", "float", &floats(&[1.0]));
    for (name, value) in attributes {
        attribute(&mut header, name, "string", value.as_bytes());
    }
    header.push(0);
    header
}

/// The stored bytes of the blocks of lines `rows` (which starts a block), in increasing y,
/// compressed by tasks of [`LINES_PER_TASK`] lines on the shared thread pool.
fn compress_blocks(
    width: usize,
    rows: std::ops::Range<usize>,
    channels: &[&Channel],
    compression: Compression,
) -> Vec<Vec<u8>> {
    let lines = compression.lines_per_block();
    let mut blocks = vec![Vec::new(); rows.len().div_ceil(lines)];
    let blocks_per_task = LINES_PER_TASK.div_ceil(lines);
    rayon_core::scope(|scope| {
        for (task, slots) in blocks.chunks_mut(blocks_per_task).enumerate() {
            let rows = &rows;
            scope.spawn(move |_| {
                for (k, slot) in slots.iter_mut().enumerate() {
                    let first = rows.start + (task * blocks_per_task + k) * lines;
                    let block = first..rows.end.min(first + lines);
                    *slot = compress(block_bytes(width, block, channels), compression);
                }
            });
        }
    });
    blocks
}

/// The raw bytes of the lines `rows`: each line's channels one after another.
fn block_bytes(width: usize, rows: std::ops::Range<usize>, channels: &[&Channel]) -> Vec<u8> {
    let line: usize = channels.iter().map(|c| width * c.samples.bytes()).sum();
    let mut bytes = Vec::with_capacity(line * rows.len());
    for y in rows {
        for channel in channels {
            let row = width * channel.samples.bytes();
            bytes.extend_from_slice(&channel.plane[y * row..(y + 1) * row]);
        }
    }
    bytes
}

/// A block as stored: compressed, or raw where compression does not shrink it.
fn compress(raw: Vec<u8>, compression: Compression) -> Vec<u8> {
    let packed = match compression {
        Compression::None => return raw,
        Compression::Rle => run_length(&predicted(&raw)),
        Compression::Zips | Compression::Zip => {
            miniz_oxide::deflate::compress_to_vec_zlib(&predicted(&raw), ZIP_LEVEL)
        }
    };
    if packed.len() < raw.len() {
        packed
    } else {
        raw
    }
}

/// OpenEXR's preparation for compression: the even-indexed bytes, then the odd-indexed ones,
/// each then stored as its difference to the byte before it (in that order) plus 128.
fn predicted(raw: &[u8]) -> Vec<u8> {
    if raw.is_empty() {
        return Vec::new();
    }
    let mut split = vec![0; raw.len()];
    let (evens, odds) = split.split_at_mut(raw.len().div_ceil(2));
    for ((pair, even), odd) in raw
        .chunks_exact(2)
        .zip(evens.iter_mut())
        .zip(odds.iter_mut())
    {
        (*even, *odd) = (pair[0], pair[1]);
    }
    if raw.len() % 2 == 1 {
        evens[evens.len() - 1] = raw[raw.len() - 1];
    }
    let mut out = split.clone();
    for ((difference, &value), &previous) in out.iter_mut().skip(1).zip(&split[1..]).zip(&split) {
        *difference = value.wrapping_sub(previous).wrapping_add(128);
    }
    out
}

/// OpenEXR's run-length code: a run of 3 to 128 equal bytes as its length less one and the
/// byte; anything else as literal stretches of up to 127 bytes, each after its length
/// negated.
fn run_length(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len() + bytes.len() / 127 + 1);
    let mut i = 0;
    while i < bytes.len() {
        let run = run_at(bytes, i, 128);
        if run >= 3 {
            out.extend_from_slice(&[(run - 1) as u8, bytes[i]]);
            i += run;
            continue;
        }
        // No run of 3 starts at i, so the stretch holds at least its first byte.
        let end = next_run_of_three(bytes, i, bytes.len().min(i + 127));
        out.push((-((end - i) as i32)) as u8);
        out.extend_from_slice(&bytes[i..end]);
        i = end;
    }
    out
}

/// The eight bytes from `at`, little-endian: byte `k` of the word is `bytes[at + k]`.
fn word(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap())
}

/// How many bytes from `start` (at most `limit`) equal the one at `start`, eight at a time.
fn run_at(bytes: &[u8], start: usize, limit: usize) -> usize {
    let end = bytes.len().min(start + limit);
    let repeated = u64::from_le_bytes([bytes[start]; 8]);
    let mut at = start;
    while at + 8 <= end {
        let differ = word(bytes, at) ^ repeated;
        if differ != 0 {
            return at - start + (differ.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    at + bytes[at..end]
        .iter()
        .take_while(|&&b| b == bytes[start])
        .count()
        - start
}

/// The first position in `start..end` where three equal bytes begin, or `end`: seven
/// positions a step, from the bytes that equal their successor in two overlapping words.
fn next_run_of_three(bytes: &[u8], start: usize, end: usize) -> usize {
    const LOW: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    let mut at = start;
    while at < end && at + 9 <= bytes.len() {
        let differ = word(bytes, at) ^ word(bytes, at + 1);
        // The high bit of byte k where bytes[at + k] == bytes[at + k + 1].
        let same = !(((differ & LOW) + LOW) | differ) & !LOW;
        let three = same & (same >> 8);
        if three != 0 {
            return end.min(at + (three.trailing_zeros() / 8) as usize);
        }
        at += 7;
    }
    (at..end)
        .find(|&k| k + 2 < bytes.len() && bytes[k] == bytes[k + 1] && bytes[k] == bytes[k + 2])
        .unwrap_or(end)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The inverse of [`run_length`], as OpenEXR's readers decode it.
    fn run_length_decoded(mut code: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        while let [count, rest @ ..] = code {
            let count = *count as i8 as i32;
            if count < 0 {
                let n = (-count) as usize;
                out.extend_from_slice(&rest[..n]);
                code = &rest[n..];
            } else {
                out.extend(std::iter::repeat_n(rest[0], count as usize + 1));
                code = &rest[1..];
            }
        }
        out
    }

    #[test]
    fn run_length_code_round_trips_runs_and_literals() {
        let mut rng = crate::rng::Rng::new(11);
        let mut cases: Vec<Vec<u8>> = vec![
            vec![],
            vec![7],
            vec![7, 7],
            vec![7, 7, 7],
            vec![1; 128],
            vec![1; 129],
            vec![2; 1000],
            (0..=255).collect(),
            (0..1000).map(|i| (i % 3) as u8).collect(),
        ];
        for _ in 0..50 {
            let len = rng.below(600) as usize;
            // Few distinct values make runs of every length, mixed with literals.
            cases.push((0..len).map(|_| rng.below(3) as u8).collect());
        }
        for bytes in cases {
            let code = run_length(&bytes);
            assert_eq!(run_length_decoded(&code), bytes);
            // Literal stretches cost one byte in 127 at worst.
            assert!(code.len() <= bytes.len() + bytes.len().div_ceil(127));
        }
        // A long run costs two bytes in 128.
        assert_eq!(run_length(&[9; 1280]).len(), 20);
    }

    #[test]
    fn bad_images_are_refused_before_anything_is_written() {
        let plane = [0u8; 8];
        let channel = |name, plane| Channel {
            name,
            samples: SampleType::F16,
            plane,
        };
        let attribute = |name: &str| vec![(name.to_string(), String::new())];
        let long = "x".repeat(256);
        let cases: [(Vec<Channel>, _, (u32, u32)); 6] = [
            (vec![channel("R", &plane)], vec![], (0, 4)),
            (vec![channel("R", &plane)], vec![], (2, 3)),
            (
                vec![channel("R", &plane), channel("R", &plane)],
                vec![],
                (2, 2),
            ),
            (vec![channel("", &plane)], vec![], (2, 2)),
            (vec![channel("R", &plane)], attribute("a\0b"), (2, 2)),
            (vec![channel("R", &plane)], attribute(&long), (2, 2)),
        ];
        for (channels, attributes, size) in cases {
            let mut out = io::Cursor::new(Vec::new());
            let error = write(&mut out, size, &channels, &attributes, Compression::Rle);
            assert_eq!(error.unwrap_err().kind(), io::ErrorKind::InvalidInput);
            assert!(out.get_ref().is_empty());
        }
    }

    #[test]
    fn prediction_splits_bytes_then_takes_differences() {
        assert_eq!(predicted(&[]), Vec::<u8>::new());
        assert_eq!(predicted(&[10]), vec![10]);
        // Even bytes 10, 12, 14 then odd 11, 13: differences from the byte before, plus 128.
        assert_eq!(
            predicted(&[10, 11, 12, 13, 14]),
            vec![10, 130, 130, 125, 130]
        );
    }
}
