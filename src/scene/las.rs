//! ASPRS LAS and LAZ point clouds (through the `las` crate, LAZ through `laz`): read relative to
//! an origin, so that georeferenced coordinates keep their precision, and written back with
//! per-point values added as LAS extra bytes, every original field and coordinate kept
//! exactly.
//!
//! **Precision.** A LAS file stores each coordinate as a 32-bit integer `X` with the header's
//! scale and offset (`x = X * scale + offset`); georeferenced clouds sit hundreds of kilometres
//! from zero, where an `f32` keeps metres, not millimetres. canopy works in `f32` relative to
//! the cloud's [`OffsetCloud::origin`]: the middle of the header's bounds, put on the file's grid
//! of representable coordinates. Within the cloud's extent the relative coordinates keep what
//! `f32` keeps at that extent (a 1 km cloud: about 0.06 mm). Written back
//! ([`write_with_values`]), the points keep their original integers, so nothing is rounded.
//!
//! **Hostile files.** Before the `las` crate reads a file, the sizes it would allocate by are
//! checked against the file's: the point count (a point takes at least one byte, compressed),
//! the extended records' lengths, a LAZ file's chunk count, and a point record of at most
//! 1,024 bytes. A panic inside the decoders is an error naming the file, not a crash.

use super::gltf_source::guarded;
use super::mesh::SceneError;
use super::offset_cloud::OffsetCloud;
use std::io::{BufReader, BufWriter};
use std::path::Path;

/// A per-point value written as a LAS extra-bytes field: its name (at most 32 bytes) and one
/// `f32` per point.
pub type ExtraField<'a> = (&'a str, &'a [f32]);

/// Whether `path` names a LAS or LAZ file (by its extension).
pub fn is_las(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("las") || e.eq_ignore_ascii_case("laz"))
}

/// Reads the points of the LAS or LAZ file `path`, relative to its origin (on the file's grid
/// of coordinates: `offset + n * scale` per axis).
pub fn load(path: &Path) -> Result<OffsetCloud, SceneError> {
    let (header, mut reader) = open(path)?;
    let transforms = *header.transforms();
    let bounds = header.bounds();
    let mid = |t: las::Transform, lo: f64, hi: f64| {
        let steps = ((lo + hi) * 0.5 - t.offset) / t.scale;
        if steps.is_finite() {
            t.offset + steps.round() * t.scale
        } else {
            t.offset
        }
    };
    let origin = [
        mid(transforms.x, bounds.min.x, bounds.max.x),
        mid(transforms.y, bounds.min.y, bounds.max.y),
        mid(transforms.z, bounds.min.z, bounds.max.z),
    ];
    let count = header.number_of_points();
    let mut points = Vec::with_capacity(count as usize);
    for index in 0..count {
        let point = read_point(path, &mut reader, index)?;
        let relative = [
            point.x - origin[0],
            point.y - origin[1],
            point.z - origin[2],
        ];
        if !relative.iter().all(|c| c.is_finite()) {
            return Err(SceneError::malformed(
                path,
                format!("point {index}"),
                "a coordinate is not finite",
            ));
        }
        points.push(relative.map(|c| c as f32));
    }
    Ok(OffsetCloud { origin, points })
}

/// Writes the points of the LAS or LAZ file `input` to `output` with `fields` added to each as
/// extra bytes (an `f32` per field, described by an Extra Bytes record): every other field,
/// record and coordinate as the input has them. LAZ when `output` ends in `.laz`. Written
/// atomically (a partial file never has the final name; see [`crate::atomic_file`]).
pub fn write_with_values(
    input: &Path,
    output: &Path,
    fields: &[ExtraField],
) -> Result<(), SceneError> {
    let (header, mut reader) = open(input)?;
    let count = header.number_of_points();
    if let Some((name, values)) = fields.iter().find(|(_, v)| v.len() as u64 != count) {
        return Err(SceneError::malformed(
            input,
            "points",
            format!("{} values of {name} for {count} points", values.len()),
        ));
    }
    if let Some((name, _)) = fields.iter().find(|(name, _)| name.len() > 32) {
        return Err(SceneError::malformed(
            output,
            "extra bytes",
            format!("the field name {name} is longer than LAS's 32 bytes"),
        ));
    }
    let mut builder = las::Builder::from(header);
    let added = u16::try_from(4 * fields.len()).ok();
    builder.point_format.extra_bytes = added
        .and_then(|added| builder.point_format.extra_bytes.checked_add(added))
        .ok_or_else(|| {
            SceneError::malformed(output, "extra bytes", "more than a point record can hold")
        })?;
    builder.point_format.is_compressed = is_compressed(output);
    let mut descriptors = extra_bytes_descriptors(&builder.vlrs);
    for (name, _) in fields {
        descriptors.extend(float_descriptor(name));
    }
    // The input's own LASzip record describes its points without the new bytes: the writer
    // makes the output's.
    builder
        .vlrs
        .retain(|v| !is_extra_bytes_record(v) && v.user_id != LASZIP_USER);
    builder.vlrs.push(las::Vlr {
        user_id: "LASF_Spec".into(),
        record_id: EXTRA_BYTES_RECORD,
        description: "canopy: per-point values".into(),
        data: descriptors,
    });
    let header = builder
        .into_header()
        .map_err(|e| SceneError::malformed(output, "header", e.to_string()))?;
    let io = |e: std::io::Error| SceneError::io(output, e);
    crate::atomic_file::write_atomically_with(output, |file| {
        // From the first point on every attempt.
        reader.seek(0).map_err(std::io::Error::other)?;
        let written = file.try_clone()?;
        let mut writer = guarded(output, "points", || {
            las::Writer::new(BufWriter::new(written), header.clone())
        })
        .map_err(std::io::Error::other)?
        .map_err(std::io::Error::other)?;
        for index in 0..count {
            let mut point = read_point(input, &mut reader, index).map_err(std::io::Error::other)?;
            for (_, values) in fields {
                point
                    .extra_bytes
                    .extend(values[index as usize].to_le_bytes());
            }
            writer.write_point(point).map_err(std::io::Error::other)?;
        }
        writer.close().map_err(std::io::Error::other)
    })
    .map_err(io)
}

/// The LASF_Spec record id of extra-bytes descriptions.
const EXTRA_BYTES_RECORD: u16 = 4;

/// The longest point record read: LAS's standard fields take at most 67 bytes, and real files
/// add a few dozen extra bytes. The LAZ decoder keeps about 3 KB of models per byte of a
/// record, so a hostile header could otherwise make a small file cost 200 MB.
const MAX_POINT_RECORD_BYTES: u16 = 1024;

/// The user id of the record that describes a LAZ file's compressed points.
const LASZIP_USER: &str = "laszip encoded";

/// The bytes of one extra-bytes descriptor.
const DESCRIPTOR_BYTES: usize = 192;

/// Whether `vlr` describes extra bytes.
fn is_extra_bytes_record(vlr: &las::Vlr) -> bool {
    vlr.user_id == "LASF_Spec" && vlr.record_id == EXTRA_BYTES_RECORD
}

/// The descriptors already in `vlrs` (of extra bytes the input has), in their order.
fn extra_bytes_descriptors(vlrs: &[las::Vlr]) -> Vec<u8> {
    vlrs.iter()
        .filter(|v| is_extra_bytes_record(v))
        .flat_map(|v| v.data.iter().copied())
        .collect()
}

/// The LAS 1.4 extra-bytes descriptor of an `f32` field called `name`: data type 9 (float),
/// no options.
fn float_descriptor(name: &str) -> [u8; DESCRIPTOR_BYTES] {
    let mut d = [0u8; DESCRIPTOR_BYTES];
    d[2] = 9;
    d[4..4 + name.len()].copy_from_slice(name.as_bytes());
    let description = b"canopy";
    d[160..160 + description.len()].copy_from_slice(description);
    d
}

/// Whether `path` is to be LAZ (by its extension).
fn is_compressed(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("laz"))
}

/// The header and a reader of `path`, its extended records and point count checked against
/// its size first.
fn open(path: &Path) -> Result<(las::Header, las::Reader), SceneError> {
    let mut file = std::fs::File::open(path).map_err(|e| SceneError::io(path, e))?;
    let size = file.metadata().map_err(|e| SceneError::io(path, e))?.len();
    check_extended_records(path, &mut file, size)?;
    check_chunk_table(path, &mut file, size)?;
    let reader = guarded(path, "header", || las::Reader::new(BufReader::new(file)))?
        .map_err(|e| SceneError::malformed(path, "header", e.to_string()))?;
    let header = reader.header().clone();
    let record = header.point_format().len();
    if record > MAX_POINT_RECORD_BYTES {
        return Err(SceneError::malformed(
            path,
            "header",
            format!(
                "points of {record} bytes (canopy reads records of at most \
                 {MAX_POINT_RECORD_BYTES} bytes: the standard fields and extra bytes)"
            ),
        ));
    }
    if header.number_of_points() > size {
        return Err(SceneError::malformed(
            path,
            "header",
            format!(
                "{} points claimed in a file of {size} bytes",
                header.number_of_points()
            ),
        ));
    }
    Ok((header, reader))
}

/// Where a LAS 1.4 header says its extended records start (u64) and how many there are (u32).
const FIRST_EXTENDED_RECORD_AT: u64 = 235;

/// The bytes of an extended record's header; its data's length (u64) is at byte 20.
const EXTENDED_RECORD_HEADER_BYTES: u64 = 60;

/// Checks that every extended variable-length record a LAS 1.4 file declares lies within its
/// `size` bytes: the `las` crate allocates each record's declared length (up to 2^64 bytes)
/// before reading it, which a hostile file could use to exhaust memory.
fn check_extended_records(
    path: &Path,
    file: &mut std::fs::File,
    size: u64,
) -> Result<(), SceneError> {
    use std::io::{Read, Seek, SeekFrom};
    let mut read_at = |at: u64, bytes: &mut [u8]| -> std::io::Result<()> {
        file.seek(SeekFrom::Start(at))?;
        file.read_exact(bytes)
    };
    let io = |e| SceneError::io(path, e);
    // Too short for a LAS 1.4 header's record fields: the las crate's reading names what
    // is missing.
    if size < FIRST_EXTENDED_RECORD_AT + 12 {
        return file.rewind().map_err(io);
    }
    let mut version = [0u8; 2];
    read_at(24, &mut version).map_err(io)?;
    if version[0] != 1 || version[1] < 4 {
        return file.rewind().map_err(io);
    }
    let mut fields = [0u8; 12];
    read_at(FIRST_EXTENDED_RECORD_AT, &mut fields).map_err(io)?;
    let mut at = u64::from_le_bytes(fields[..8].try_into().expect("8 bytes"));
    let count = u32::from_le_bytes(fields[8..].try_into().expect("4 bytes"));
    for record in 0..count {
        let fits = |end: Option<u64>| end.is_some_and(|end| end <= size);
        let data_at = at.checked_add(EXTENDED_RECORD_HEADER_BYTES);
        if !fits(data_at) {
            return Err(SceneError::malformed(
                path,
                format!("extended record {record}"),
                format!("it starts at byte {at}, past the file's {size} bytes"),
            ));
        }
        let mut length = [0u8; 8];
        read_at(at + 20, &mut length).map_err(io)?;
        let length = u64::from_le_bytes(length);
        let end = data_at.and_then(|d| d.checked_add(length));
        if !fits(end) {
            return Err(SceneError::malformed(
                path,
                format!("extended record {record}"),
                format!("{length} bytes of data run past the file's {size} bytes"),
            ));
        }
        at = end.expect("checked");
    }
    file.rewind().map_err(io)
}

/// Checks that a LAZ file's chunk table holds no more chunks than the file has bytes: the
/// `laz` crate reserves room for every chunk the table declares before reading it.
fn check_chunk_table(path: &Path, file: &mut std::fs::File, size: u64) -> Result<(), SceneError> {
    use std::io::{Read, Seek, SeekFrom};
    let io = |e| SceneError::io(path, e);
    let mut read_at = |at: u64, bytes: &mut [u8]| -> std::io::Result<bool> {
        if at
            .checked_add(bytes.len() as u64)
            .is_none_or(|end| end > size)
        {
            return Ok(false);
        }
        file.seek(SeekFrom::Start(at))?;
        file.read_exact(bytes)?;
        Ok(true)
    };
    // The point format's id (bit 7: compressed) at byte 104; the points start at the u32 at 96.
    let (mut format, mut points_at) = ([0u8; 1], [0u8; 4]);
    if !read_at(104, &mut format).map_err(io)?
        || format[0] & 0x80 == 0
        || !read_at(96, &mut points_at).map_err(io)?
    {
        return file.rewind().map_err(io);
    }
    // The points start with the table's offset; -1: it is in the file's last 8 bytes.
    let mut offset = [0u8; 8];
    let mut table_at = match read_at(u32::from_le_bytes(points_at) as u64, &mut offset) {
        Ok(true) => i64::from_le_bytes(offset),
        _ => return file.rewind().map_err(io),
    };
    if table_at == -1 && read_at(size.saturating_sub(8), &mut offset).map_err(io)? {
        table_at = i64::from_le_bytes(offset);
    }
    // The table: a version (u32), then the chunk count (u32).
    let mut header = [0u8; 8];
    if let Ok(at) = u64::try_from(table_at)
        && read_at(at, &mut header).map_err(io)?
    {
        let chunks = u32::from_le_bytes(header[4..].try_into().expect("4 bytes"));
        if chunks as u64 > size {
            return Err(SceneError::malformed(
                path,
                "chunk table",
                format!("{chunks} chunks claimed in a file of {size} bytes"),
            ));
        }
    }
    file.rewind().map_err(io)
}

/// Point `index` of `reader`, the next one.
fn read_point(path: &Path, reader: &mut las::Reader, index: u64) -> Result<las::Point, SceneError> {
    let location = || format!("point {index}");
    guarded(path, &location(), || reader.read_point())?
        .map_err(|e| SceneError::malformed(path, location(), e.to_string()))?
        .ok_or_else(|| SceneError::malformed(path, location(), "the file ends before it"))
}
