//! Point Cloud Library PCD files (format 0.7 and the older headers without `VERSION`): the
//! points' x, y and z, in any of the three encodings, `ascii`, `binary` (records in a row)
//! and `binary_compressed` (each field's values together, LZF-compressed). Other fields
//! (colour, intensity, normals, ...) are skipped. Points whose coordinates are not finite are
//! dropped: organised clouds from depth cameras mark missing returns with NaN.
//!
//! Every size the header declares is checked against the file before anything is allocated
//! for it, so a hostile header cannot ask for more memory than a small multiple of the file;
//! a compressed block may expand at most 10 times (LZF allows 88; real point data compresses
//! 2 to 4 times).

use super::mesh::{Mesh, SceneError};
use std::io::Read;
use std::path::Path;

/// The most a `binary_compressed` block may expand. LZF itself allows 88 (3 bytes into 264);
/// point data compresses 2 to 4 times, and a bound keeps what a file can make canopy allocate
/// (the block, the points) within a small multiple of its size.
const MOST_LZF_EXPANSION: usize = 10;

/// Loads the points of the PCD file `path`, as a mesh with positions only.
pub fn load(path: &Path) -> Result<Mesh, SceneError> {
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|mut f| f.read_to_end(&mut bytes))
        .map_err(|e| SceneError::io(path, e))?;
    read(&bytes, path)
}

/// Reads the points of PCD data; `path` names the source in errors.
pub fn read(bytes: &[u8], path: &Path) -> Result<Mesh, SceneError> {
    let (header, body) = Header::read(bytes, path)?;
    let points = match header.data {
        Data::Ascii => read_ascii(&header, body, path)?,
        Data::Binary => read_binary(&header, body, path)?,
        Data::Compressed => read_compressed(&header, body, path)?,
    };
    let total = points.len();
    let mut positions = points;
    positions.retain(|p| p.iter().all(|x| x.is_finite()));
    if positions.len() < total {
        log::info!(
            "{}: {} of {total} points without finite coordinates (missing returns) dropped",
            path.display(),
            total - positions.len()
        );
    }
    Ok(Mesh {
        positions,
        ..Mesh::default()
    })
}

/// How the body is encoded.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Data {
    Ascii,
    Binary,
    Compressed,
}

/// A field's type: `F` (float), `I` (signed) or `U` (unsigned), and its size in bytes.
#[derive(Clone, Copy, Debug)]
struct Scalar {
    kind: u8,
    size: usize,
}

impl Scalar {
    /// The value of one little-endian scalar.
    fn value(self, bytes: &[u8]) -> f64 {
        let mut word = [0; 8];
        word[..self.size].copy_from_slice(&bytes[..self.size]);
        let bits = u64::from_le_bytes(word);
        match (self.kind, self.size) {
            (b'F', 4) => f32::from_bits(bits as u32) as f64,
            (b'F', _) => f64::from_bits(bits),
            (b'U', _) => bits as f64,
            (_, n) => {
                // Sign-extend from n bytes.
                let shift = 64 - 8 * n as u32;
                ((bits as i64) << shift >> shift) as f64
            }
        }
    }
}

/// One field: its name, type and number of values.
#[derive(Clone, Debug)]
struct Field {
    name: String,
    scalar: Scalar,
    count: usize,
}

/// What a PCD header says.
struct Header {
    fields: Vec<Field>,
    points: usize,
    data: Data,
    /// The field holding x, y and z.
    xyz: [usize; 3],
}

impl Header {
    /// The header and the bytes after its `DATA` line.
    fn read<'a>(bytes: &'a [u8], path: &Path) -> Result<(Header, &'a [u8]), SceneError> {
        let bad = |line: usize, message: String| {
            SceneError::malformed(path, format!("header line {line}"), message)
        };
        let (mut names, mut sizes, mut types, mut counts) = (None, None, None, None);
        let (mut width, mut height, mut points) = (None, None, None);
        let (mut at, mut number) = (0, 0);
        loop {
            number += 1;
            let Some(end) = bytes[at..].iter().position(|&b| b == b'\n') else {
                return Err(bad(number, "the header ends before its DATA line".into()));
            };
            let line = String::from_utf8_lossy(&bytes[at..at + end]);
            at += end + 1;
            let mut words = line.split_whitespace();
            let Some(key) = words.next() else { continue };
            let values: Vec<&str> = words.collect();
            let numbers = |what: &str| -> Result<Vec<usize>, SceneError> {
                values
                    .iter()
                    .map(|v| {
                        v.parse::<usize>()
                            .map_err(|_| bad(number, format!("{what} '{v}' is not a count")))
                    })
                    .collect()
            };
            let one = |what: &str| -> Result<usize, SceneError> {
                match numbers(what)?[..] {
                    [n] => Ok(n),
                    _ => Err(bad(number, format!("{what} takes one number"))),
                }
            };
            match key.to_ascii_uppercase().as_str() {
                k if k.starts_with('#') => {}
                "VERSION" | "VIEWPOINT" => {}
                "FIELDS" | "COLUMNS" => {
                    names = Some(values.iter().map(|v| v.to_string()).collect())
                }
                "SIZE" => sizes = Some(numbers("SIZE")?),
                "TYPE" => {
                    let kinds: Vec<u8> = values
                        .iter()
                        .map(|v| match v.as_bytes() {
                            [k @ (b'F' | b'I' | b'U')] => Ok(*k),
                            _ => Err(bad(number, format!("TYPE '{v}': F, I or U"))),
                        })
                        .collect::<Result<_, _>>()?;
                    types = Some(kinds);
                }
                "COUNT" => counts = Some(numbers("COUNT")?),
                "WIDTH" => width = Some(one("WIDTH")?),
                "HEIGHT" => height = Some(one("HEIGHT")?),
                "POINTS" => points = Some(one("POINTS")?),
                "DATA" => {
                    let data = match values.first().map(|v| v.to_ascii_lowercase()).as_deref() {
                        Some("ascii") => Data::Ascii,
                        Some("binary") => Data::Binary,
                        Some("binary_compressed") => Data::Compressed,
                        _ => return Err(bad(number, format!("DATA '{}'", values.join(" ")))),
                    };
                    let names: Vec<String> =
                        names.ok_or_else(|| bad(number, "no FIELDS line".into()))?;
                    let n = names.len();
                    let sizes = sizes.unwrap_or_else(|| vec![4; n]);
                    let types = types.unwrap_or_else(|| vec![b'F'; n]);
                    let counts = counts.unwrap_or_else(|| vec![1; n]);
                    if sizes.len() != n || types.len() != n || counts.len() != n {
                        return Err(bad(
                            number,
                            format!(
                                "{n} FIELDS but {} SIZE, {} TYPE and {} COUNT entries",
                                sizes.len(),
                                types.len(),
                                counts.len()
                            ),
                        ));
                    }
                    let mut fields = Vec::with_capacity(n);
                    for i in 0..n {
                        let scalar = Scalar {
                            kind: types[i],
                            size: sizes[i],
                        };
                        let valid = match scalar.kind {
                            b'F' => matches!(scalar.size, 4 | 8),
                            _ => matches!(scalar.size, 1 | 2 | 4 | 8),
                        };
                        if !valid || counts[i] == 0 || counts[i] > 1 << 16 {
                            return Err(bad(
                                number,
                                format!(
                                    "field '{}': type {} of {} bytes, count {}",
                                    names[i], types[i] as char, sizes[i], counts[i]
                                ),
                            ));
                        }
                        fields.push(Field {
                            name: names[i].clone(),
                            scalar,
                            count: counts[i],
                        });
                    }
                    let find = |axis: &str| {
                        fields
                            .iter()
                            .position(|f| f.name.eq_ignore_ascii_case(axis))
                            .ok_or_else(|| bad(number, format!("no field '{axis}' among FIELDS")))
                    };
                    let xyz = [find("x")?, find("y")?, find("z")?];
                    let points = match (points, width, height) {
                        (Some(p), _, _) => p,
                        (None, Some(w), Some(h)) => w.checked_mul(h).ok_or_else(|| {
                            bad(number, format!("WIDTH {w} x HEIGHT {h} overflows"))
                        })?,
                        _ => return Err(bad(number, "neither POINTS nor WIDTH and HEIGHT".into())),
                    };
                    let header = Header {
                        fields,
                        points,
                        data,
                        xyz,
                    };
                    return Ok((header, &bytes[at..]));
                }
                other => return Err(bad(number, format!("unknown header key '{other}'"))),
            }
        }
    }

    /// Bytes of one point's record.
    fn record_bytes(&self) -> usize {
        self.fields.iter().map(|f| f.scalar.size * f.count).sum()
    }

    /// Where each field starts when each takes `width` of it (values on a line, bytes in a
    /// record, bytes in a block of all points' values): the running sum before it.
    fn starts(&self, width: impl Fn(&Field) -> usize) -> Vec<usize> {
        self.fields
            .iter()
            .scan(0, |at, f| {
                let here = *at;
                *at += width(f);
                Some(here)
            })
            .collect()
    }
}

fn read_ascii(header: &Header, body: &[u8], path: &Path) -> Result<Vec<[f32; 3]>, SceneError> {
    // The value index of each field's first value on a line.
    let starts = header.starts(|f| f.count);
    let xyz = header.xyz.map(|f| starts[f]);
    // One point per line, at least two bytes each: no more than the body holds.
    let mut points = Vec::with_capacity(header.points.min(body.len() / 2));
    for (line_index, line) in body.split(|&b| b == b'\n').enumerate() {
        if points.len() == header.points {
            break;
        }
        let text = String::from_utf8_lossy(line);
        let values: Vec<&str> = text.split_whitespace().collect();
        if values.is_empty() {
            continue;
        }
        let mut p = [0f32; 3];
        for (axis, &index) in xyz.iter().enumerate() {
            let value = values.get(index).ok_or_else(|| {
                SceneError::malformed(
                    path,
                    format!("point {}", points.len()),
                    format!("data line {} has {} values", line_index + 1, values.len()),
                )
            })?;
            p[axis] = parse_coordinate(value).ok_or_else(|| {
                SceneError::malformed(
                    path,
                    format!("point {}", points.len()),
                    format!("'{value}' is not a number"),
                )
            })?;
        }
        points.push(p);
    }
    if points.len() < header.points {
        return Err(SceneError::malformed(
            path,
            format!("point {}", points.len()),
            format!(
                "the data ends after {} of {} points",
                points.len(),
                header.points
            ),
        ));
    }
    Ok(points)
}

/// A coordinate as PCD writes them (`nan` for a missing one), rounded once to f32.
fn parse_coordinate(text: &str) -> Option<f32> {
    match text.parse::<f32>() {
        Ok(v) => Some(v),
        Err(_) if text.eq_ignore_ascii_case("nan") || text.eq_ignore_ascii_case("-nan") => {
            Some(f32::NAN)
        }
        Err(_) => None,
    }
}

fn read_binary(header: &Header, body: &[u8], path: &Path) -> Result<Vec<[f32; 3]>, SceneError> {
    let record = header.record_bytes();
    let needed = header.points.checked_mul(record);
    if needed.is_none_or(|n| n > body.len()) {
        return Err(SceneError::malformed(
            path,
            "data",
            format!(
                "{} points of {record} bytes, but {} bytes follow the header",
                header.points,
                body.len()
            ),
        ));
    }
    let offsets = header.starts(|f| f.scalar.size * f.count);
    Ok(body
        .chunks_exact(record.max(1))
        .take(header.points)
        .map(|r| {
            header.xyz.map(|f| {
                let field = &header.fields[f];
                field.scalar.value(&r[offsets[f]..]) as f32
            })
        })
        .collect())
}

fn read_compressed(header: &Header, body: &[u8], path: &Path) -> Result<Vec<[f32; 3]>, SceneError> {
    let bad = |message: String| SceneError::malformed(path, "compressed data", message);
    let word = |at: usize| -> Option<usize> {
        Some(u32::from_le_bytes(body.get(at..at + 4)?.try_into().ok()?) as usize)
    };
    let (Some(compressed), Some(size)) = (word(0), word(4)) else {
        return Err(bad("its two sizes are missing".into()));
    };
    let block = body.get(8..8 + compressed).ok_or_else(|| {
        bad(format!(
            "{compressed} bytes declared, {} follow",
            body.len() - 8
        ))
    })?;
    let expected = header.points.checked_mul(header.record_bytes());
    if expected != Some(size) || size > compressed.saturating_mul(MOST_LZF_EXPANSION) {
        return Err(bad(format!(
            "{size} bytes once uncompressed, where {} points of {} bytes need {:?} and {compressed} \
             compressed bytes give at most {}",
            header.points,
            header.record_bytes(),
            expected,
            compressed.saturating_mul(MOST_LZF_EXPANSION)
        )));
    }
    let columns = lzf_decompress(block, size).map_err(bad)?;
    // Field by field: all points' values of the first field, then the second's, ...
    let starts = header.starts(|f| f.scalar.size * f.count * header.points);
    Ok((0..header.points)
        .map(|i| {
            header.xyz.map(|f| {
                let field = &header.fields[f];
                let stride = field.scalar.size * field.count;
                field.scalar.value(&columns[starts[f] + i * stride..]) as f32
            })
        })
        .collect())
}

/// Decompresses LZF data (liblzf's format, as PCL writes it) into exactly `size` bytes.
pub fn lzf_decompress(input: &[u8], size: usize) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(size);
    let mut at = 0;
    while at < input.len() {
        let control = input[at] as usize;
        at += 1;
        if control < 32 {
            // A run of control + 1 literal bytes.
            let run = input
                .get(at..at + control + 1)
                .ok_or_else(|| format!("a literal run at byte {} passes the end", at - 1))?;
            if out.len() + run.len() > size {
                return Err(format!("more than the {size} bytes declared"));
            }
            out.extend_from_slice(run);
            at += control + 1;
        } else {
            // A back reference: length (3 bits, extended by a byte when 7) and distance.
            let mut length = control >> 5;
            if length == 7 {
                length += *input.get(at).ok_or("a back reference passes the end")? as usize;
                at += 1;
            }
            let low = *input.get(at).ok_or("a back reference passes the end")? as usize;
            at += 1;
            let distance = ((control & 0x1f) << 8) + low + 1;
            let length = length + 2;
            if distance > out.len() {
                return Err(format!(
                    "a back reference {distance} bytes back, {} written",
                    out.len()
                ));
            }
            if out.len() + length > size {
                return Err(format!("more than the {size} bytes declared"));
            }
            let from = out.len() - distance;
            for i in 0..length {
                out.push(out[from + i]);
            }
        }
    }
    if out.len() != size {
        return Err(format!("{} bytes, {size} declared", out.len()));
    }
    Ok(out)
}
