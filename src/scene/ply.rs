//! Stanford PLY reader: `ascii`, `binary_little_endian` and `binary_big_endian` 1.0.
//!
//! Positions come from the `x`, `y`, `z` properties of the `vertex` element (any scalar type),
//! normals from `nx`, `ny`, `nz` when all three are there. Polygons come from the list property
//! `vertex_indices` (or `vertex_index`) of the `face` element, each a fan of n - 2 triangles,
//! and triangle strips from the list property `vertex_indices` of the `tristrips` element, where
//! -1 restarts the strip. Every other element and property, scalar or list, is read past.
//! Header errors name the header line; body errors name the element, as in `face 12`
//! (0-based), including a file that ends before all its elements are read.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

use super::mesh::{push_fan, push_strip};
use super::{Mesh, SceneError};

/// Reads the PLY file at `path`. The mesh is not [validated](Mesh::validate).
pub fn load(path: &Path) -> Result<Mesh, SceneError> {
    let file = File::open(path).map_err(|e| SceneError::io(path, e))?;
    read(BufReader::new(file), path)
}

/// Reads PLY data from `reader`; `path` names the source in errors. The mesh is not
/// [validated](Mesh::validate).
pub fn read(mut reader: impl BufRead, path: &Path) -> Result<Mesh, SceneError> {
    super::obj::skip_byte_order_mark(&mut reader).map_err(|e| SceneError::io(path, e))?;
    let header = Header::read(&mut reader, path)?;
    let body = match header.encoding {
        Encoding::Ascii => Body::Ascii {
            reader,
            line: String::new(),
            pos: 0,
        },
        Encoding::Binary { big_endian } => Body::Binary { reader, big_endian },
    };
    BodyReader {
        path,
        body,
        vertex_count: header.vertex_count,
        mesh: Mesh::default(),
    }
    .read(&header.elements)
}

/// A PLY scalar type.
#[derive(Clone, Copy)]
enum Scalar {
    I8,
    U8,
    I16,
    U16,
    I32,
    U32,
    F32,
    F64,
}

impl Scalar {
    /// The type a header names, in either its old or its sized spelling.
    fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "char" | "int8" => Self::I8,
            "uchar" | "uint8" => Self::U8,
            "short" | "int16" => Self::I16,
            "ushort" | "uint16" => Self::U16,
            "int" | "int32" => Self::I32,
            "uint" | "uint32" => Self::U32,
            "float" | "float32" => Self::F32,
            "double" | "float64" => Self::F64,
            _ => return None,
        })
    }

    /// Bytes in binary encodings.
    fn size(self) -> usize {
        match self {
            Self::I8 | Self::U8 => 1,
            Self::I16 | Self::U16 => 2,
            Self::I32 | Self::U32 | Self::F32 => 4,
            Self::F64 => 8,
        }
    }

    fn is_integer(self) -> bool {
        !matches!(self, Self::F32 | Self::F64)
    }
}

/// What a property holds.
#[derive(Clone, Copy)]
enum Kind {
    Scalar(Scalar),
    /// A count of type `count`, then that many items of type `item`.
    List {
        count: Scalar,
        item: Scalar,
    },
}

struct Property {
    name: String,
    kind: Kind,
}

struct Element {
    name: String,
    count: usize,
    properties: Vec<Property>,
    /// The header line that declares the element.
    line: usize,
}

impl Element {
    /// The index of the property called `name` (the first of `names` present).
    fn find(&self, names: &[&str]) -> Option<usize> {
        names
            .iter()
            .find_map(|n| self.properties.iter().position(|p| p.name == *n))
    }

    /// An error about this element's declaration.
    fn error(&self, path: &Path, message: String) -> SceneError {
        SceneError::malformed(path, format!("header line {}", self.line), message)
    }
}

#[derive(Clone, Copy)]
enum Encoding {
    Ascii,
    Binary { big_endian: bool },
}

struct Header {
    encoding: Encoding,
    elements: Vec<Element>,
    /// The `vertex` element's count (0 without one).
    vertex_count: u32,
}

impl Header {
    /// Reads the header, leaving `reader` at the first byte of the body.
    fn read(reader: &mut impl BufRead, path: &Path) -> Result<Self, SceneError> {
        let mut encoding = None;
        let mut elements: Vec<Element> = Vec::new();
        let mut bytes = Vec::new();
        let mut line = 0;
        loop {
            line += 1;
            let error = |message: String| {
                SceneError::malformed(path, format!("header line {line}"), message)
            };
            bytes.clear();
            if reader
                .read_until(b'\n', &mut bytes)
                .map_err(|e| SceneError::io(path, e))?
                == 0
            {
                return Err(error("the file ends before 'end_header'".into()));
            }
            let text = String::from_utf8_lossy(&bytes);
            let words: Vec<&str> = text.split_ascii_whitespace().collect();
            if line == 1 {
                if words != ["ply"] {
                    return Err(error(
                        "not a PLY file (the first line must be 'ply')".into(),
                    ));
                }
                continue;
            }
            match words.as_slice() {
                ["format", format, "1.0"] => {
                    encoding = Some(match *format {
                        "ascii" => Encoding::Ascii,
                        "binary_little_endian" => Encoding::Binary { big_endian: false },
                        "binary_big_endian" => Encoding::Binary { big_endian: true },
                        _ => return Err(error(format!("unknown format '{format}'"))),
                    });
                }
                ["format", ..] => {
                    return Err(error(format!("unsupported format line '{}'", text.trim())));
                }
                ["comment" | "obj_info", ..] | [] => {}
                ["element", name, count] => {
                    let count = count
                        .parse()
                        .map_err(|_| error(format!("bad element count '{count}'")))?;
                    if elements.iter().any(|e| e.name == *name) {
                        return Err(error(format!("element '{name}' is declared twice")));
                    }
                    elements.push(Element {
                        name: (*name).to_owned(),
                        count,
                        properties: Vec::new(),
                        line,
                    });
                }
                ["property", kind @ .., name] => {
                    let scalar = |name: &str| {
                        Scalar::parse(name)
                            .ok_or_else(|| error(format!("unknown property type '{name}'")))
                    };
                    let kind = match kind {
                        [ty] => Kind::Scalar(scalar(ty)?),
                        ["list", count, item] => Kind::List {
                            count: scalar(count)?,
                            item: scalar(item)?,
                        },
                        _ => return Err(error(format!("bad property line '{}'", text.trim()))),
                    };
                    let element = elements
                        .last_mut()
                        .ok_or_else(|| error("a property before any element".into()))?;
                    element.properties.push(Property {
                        name: (*name).to_owned(),
                        kind,
                    });
                }
                ["end_header"] => {
                    let encoding = encoding
                        .ok_or_else(|| error("no 'format' line before 'end_header'".into()))?;
                    let vertex_count = match elements.iter().find(|e| e.name == "vertex") {
                        Some(vertex) => u32::try_from(vertex.count).map_err(|_| {
                            vertex.error(path, format!("{} vertices is too many", vertex.count))
                        })?,
                        None => 0,
                    };
                    return Ok(Self {
                        encoding,
                        elements,
                        vertex_count,
                    });
                }
                _ => return Err(error(format!("unknown header line '{}'", text.trim()))),
            }
        }
    }
}

/// The body of a PLY file in its encoding.
enum Body<R> {
    /// Whitespace-separated numbers; `line` is the current line and `pos` the place in it.
    Ascii {
        reader: R,
        line: String,
        pos: usize,
    },
    Binary {
        reader: R,
        big_endian: bool,
    },
}

impl<R: BufRead> Body<R> {
    /// Reads one value of type `ty`. Every PLY scalar fits an `f64` exactly.
    fn scalar(&mut self, ty: Scalar) -> io::Result<f64> {
        match self {
            Self::Ascii { reader, line, pos } => {
                let token = next_token(reader, line, pos)?;
                let (value, expected) = if ty.is_integer() {
                    (token.parse::<i64>().map(|v| v as f64).ok(), "an integer")
                } else {
                    (token.parse::<f64>().ok(), "a number")
                };
                value.ok_or_else(|| {
                    io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("'{token}' is not {expected}"),
                    )
                })
            }
            Self::Binary { reader, big_endian } => binary_scalar(reader, ty, *big_endian),
        }
    }

    /// Reads the count of a list of `count`-typed length.
    fn list_len(&mut self, count: Scalar) -> io::Result<usize> {
        let n = self.scalar(count)?;
        if n < 0.0 || n.fract() != 0.0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("bad list length {n}"),
            ));
        }
        Ok(n as usize)
    }
}

/// The next whitespace-separated token of an ASCII body, reading lines as needed.
fn next_token<'l>(
    reader: &mut impl BufRead,
    line: &'l mut String,
    pos: &mut usize,
) -> io::Result<&'l str> {
    loop {
        let rest = &line[*pos..];
        if let Some(start) = rest.find(|c: char| !c.is_ascii_whitespace()) {
            let start = *pos + start;
            let end = line[start..]
                .find(|c: char| c.is_ascii_whitespace())
                .map_or(line.len(), |e| start + e);
            *pos = end;
            return Ok(&line[start..end]);
        }
        line.clear();
        *pos = 0;
        if reader.read_line(line)? == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
    }
}

/// Reads one binary value of type `ty` in the given byte order.
fn binary_scalar(reader: &mut impl Read, ty: Scalar, big_endian: bool) -> io::Result<f64> {
    let mut buffer = [0u8; 8];
    let bytes = &mut buffer[..ty.size()];
    reader.read_exact(bytes)?;
    if big_endian != cfg!(target_endian = "big") {
        bytes.reverse();
    }
    let bytes: &[u8] = bytes;
    Ok(match ty {
        Scalar::I8 => f64::from(native::<i8>(bytes)),
        Scalar::U8 => f64::from(bytes[0]),
        Scalar::I16 => f64::from(native::<i16>(bytes)),
        Scalar::U16 => f64::from(native::<u16>(bytes)),
        Scalar::I32 => f64::from(native::<i32>(bytes)),
        Scalar::U32 => f64::from(native::<u32>(bytes)),
        Scalar::F32 => f64::from(native::<f32>(bytes)),
        Scalar::F64 => native::<f64>(bytes),
    })
}

/// A value from bytes in native order.
fn native<T: bytemuck::AnyBitPattern>(bytes: &[u8]) -> T {
    bytemuck::pod_read_unaligned(bytes)
}

/// What one element contributes to the mesh.
enum Role {
    /// Positions from the properties at `xyz`, normals from those at `normal` if any.
    Vertex {
        xyz: [usize; 3],
        normal: Option<[usize; 3]>,
    },
    /// Polygons from the list property at this index.
    Faces(usize),
    /// Triangle strips from the list property at this index.
    Strips(usize),
    /// Read past.
    Skip,
}

impl Role {
    fn of(element: &Element, path: &Path) -> Result<Self, SceneError> {
        let list = |names: &[&str]| match element.find(names) {
            Some(p) if matches!(element.properties[p].kind, Kind::List { .. }) => Ok(p),
            _ => Err(element.error(
                path,
                format!(
                    "element '{}' has no list property '{}'",
                    element.name,
                    names.join("' or '")
                ),
            )),
        };
        let scalar = |name: &str| {
            element
                .find(&[name])
                .filter(|&p| matches!(element.properties[p].kind, Kind::Scalar(_)))
        };
        let scalars = |[x, y, z]: [&str; 3]| Some([scalar(x)?, scalar(y)?, scalar(z)?]);
        Ok(match element.name.as_str() {
            "vertex" => Self::Vertex {
                xyz: scalars(["x", "y", "z"]).ok_or_else(|| {
                    element.error(
                        path,
                        "element 'vertex' needs scalar properties 'x', 'y' and 'z'".into(),
                    )
                })?,
                normal: scalars(["nx", "ny", "nz"]),
            },
            "face" => Self::Faces(list(&["vertex_indices", "vertex_index"])?),
            "tristrips" => Self::Strips(list(&["vertex_indices"])?),
            _ => Self::Skip,
        })
    }
}

/// Reads the body of a PLY file into a mesh.
struct BodyReader<'a, R> {
    path: &'a Path,
    body: Body<R>,
    vertex_count: u32,
    mesh: Mesh,
}

impl<R: BufRead> BodyReader<'_, R> {
    fn read(mut self, elements: &[Element]) -> Result<Mesh, SceneError> {
        // Per instance: one value per property (0 for lists), the items of the list the
        // element's role reads, and the corners of a face or strip.
        let mut values = Vec::new();
        let mut items = Vec::new();
        let mut corners = Vec::new();
        for element in elements {
            let role = Role::of(element, self.path)?;
            if element.properties.is_empty() {
                // Its instances hold nothing to read: a count of 10^18 must not loop.
                continue;
            }
            let wanted_list = match role {
                Role::Faces(p) | Role::Strips(p) => Some(p),
                Role::Vertex { .. } | Role::Skip => None,
            };
            for i in 0..element.count {
                let at = || format!("{} {i}", element.name);
                self.instance(element, wanted_list, &mut values, &mut items)
                    .map_err(|e| self.body_error(e, at(), element))?;
                match role {
                    Role::Vertex { xyz, normal } => {
                        self.mesh.positions.push(xyz.map(|p| values[p] as f32));
                        if let Some(n) = normal {
                            self.mesh.normals.push(n.map(|p| values[p] as f32));
                        }
                    }
                    Role::Faces(_) => {
                        if items.len() < 3 {
                            return Err(SceneError::malformed(
                                self.path,
                                at(),
                                format!(
                                    "a face needs at least 3 vertices, this one has {}",
                                    items.len()
                                ),
                            ));
                        }
                        corners.clear();
                        for &v in &items {
                            corners.push(self.index(v, &at)?);
                        }
                        push_fan(&corners, &mut self.mesh.triangles);
                    }
                    Role::Strips(_) => {
                        corners.clear();
                        for &v in &items {
                            if v == -1.0 {
                                push_strip(&corners, &mut self.mesh.triangles);
                                corners.clear();
                            } else {
                                corners.push(self.index(v, &at)?);
                            }
                        }
                        push_strip(&corners, &mut self.mesh.triangles);
                    }
                    Role::Skip => {}
                }
            }
        }
        Ok(self.mesh)
    }

    /// Reads one instance of `element`: each scalar into `values`, and the items of the list
    /// property at `wanted_list` into `items`. Other lists are read past.
    fn instance(
        &mut self,
        element: &Element,
        wanted_list: Option<usize>,
        values: &mut Vec<f64>,
        items: &mut Vec<f64>,
    ) -> io::Result<()> {
        values.clear();
        for (p, property) in element.properties.iter().enumerate() {
            let value = match property.kind {
                Kind::Scalar(ty) => self.body.scalar(ty)?,
                Kind::List { count, item } => {
                    let n = self.body.list_len(count)?;
                    if wanted_list == Some(p) {
                        items.clear();
                        for _ in 0..n {
                            items.push(self.body.scalar(item)?);
                        }
                    } else {
                        for _ in 0..n {
                            self.body.scalar(item)?;
                        }
                    }
                    0.0
                }
            };
            values.push(value);
        }
        Ok(())
    }

    /// A vertex index read as `v`, checked against the vertex count.
    fn index(&self, v: f64, at: &impl Fn() -> String) -> Result<u32, SceneError> {
        if v.fract() == 0.0 && (0.0..f64::from(self.vertex_count)).contains(&v) {
            Ok(v as u32)
        } else {
            Err(SceneError::malformed(
                self.path,
                at(),
                format!(
                    "vertex index {v} is out of range ({} vertices)",
                    self.vertex_count
                ),
            ))
        }
    }

    /// The error for a failed read of an instance of `element`, located at `at`.
    fn body_error(&self, e: io::Error, at: String, element: &Element) -> SceneError {
        match e.kind() {
            io::ErrorKind::UnexpectedEof => SceneError::malformed(
                self.path,
                at,
                format!(
                    "the file ends before all {} '{}' elements are read",
                    element.count, element.name
                ),
            ),
            io::ErrorKind::InvalidData => SceneError::malformed(self.path, at, e.to_string()),
            _ => SceneError::io(self.path, e),
        }
    }
}
