//! Wavefront OBJ reader.
//!
//! Reads `v` (positions; a `w` or colour after the first three numbers is ignored), `vn` and
//! `f`, whose corners may be written `v`, `v/vt`, `v//vn` or `v/vt/vn`, with 1-based or
//! negative (relative to the end of the list so far) indices. Faces refer to vertices and
//! normals defined above them. A polygon of n corners becomes a fan of n - 2 triangles. Normals
//! are kept only when every face corner names one and each vertex always gets the same normal;
//! otherwise the mesh has none. Texture coordinates, groups, objects, smoothing groups and
//! materials are skipped, and any other statement (such as the obsolete `fo`, `l` or `p`) is
//! skipped with a debug message. A `\` at the end of a line continues the statement on the
//! next. Every error names the line.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use super::mesh::push_fan;
use super::{Mesh, SceneError};

/// Reads the OBJ file at `path`. The mesh is not [validated](Mesh::validate).
pub fn load(path: &Path) -> Result<Mesh, SceneError> {
    let file = File::open(path).map_err(|e| SceneError::io(path, e))?;
    read(BufReader::new(file), path)
}

/// Reads OBJ text from `reader`; `path` names the source in errors. The mesh is not
/// [validated](Mesh::validate).
pub fn read(mut reader: impl BufRead, path: &Path) -> Result<Mesh, SceneError> {
    skip_byte_order_mark(&mut reader).map_err(|e| SceneError::io(path, e))?;
    let mut parser = Parser::new(path);
    let mut statement = Vec::new();
    let mut next_line = 1;
    loop {
        parser.line = next_line;
        statement.clear();
        let lines =
            read_statement(&mut reader, &mut statement).map_err(|e| SceneError::io(path, e))?;
        if lines == 0 {
            return Ok(parser.finish());
        }
        if statement.len() > MAX_STATEMENT_BYTES || statement.contains(&0) {
            return Err(parser.error(
                "binary data, not OBJ text (is the file another format with an .obj name?)".into(),
            ));
        }
        next_line += lines;
        if let Some(comment) = statement.iter().position(|&b| b == b'#') {
            statement.truncate(comment);
        }
        parser.statement(&String::from_utf8_lossy(&statement))?;
    }
}

/// Skips a UTF-8 byte-order mark at the start of `reader` (editors on Windows write one), so
/// that the first line reads as it looks.
pub(crate) fn skip_byte_order_mark(reader: &mut impl BufRead) -> std::io::Result<()> {
    if reader.fill_buf()?.starts_with(b"\xef\xbb\xbf") {
        reader.consume(3);
    }
    Ok(())
}

/// The longest statement read: far above any real OBJ line, and a bound on what one read of a
/// binary file without line breaks takes into memory.
const MAX_STATEMENT_BYTES: usize = 1 << 20;

/// Reads one statement into `statement`, joining lines that end in `\`, without the line
/// breaks, and stopping past [`MAX_STATEMENT_BYTES`]. Returns the number of lines read (0 at
/// the end of the input).
fn read_statement(reader: &mut impl BufRead, statement: &mut Vec<u8>) -> std::io::Result<usize> {
    let mut lines = 0;
    let limit = MAX_STATEMENT_BYTES as u64 + 1;
    while reader.by_ref().take(limit).read_until(b'\n', statement)? > 0 {
        if statement.len() > MAX_STATEMENT_BYTES {
            return Ok(lines + 1);
        }
        lines += 1;
        if statement.last() == Some(&b'\n') {
            statement.pop();
        }
        if statement.last() == Some(&b'\r') {
            statement.pop();
        }
        match statement.last_mut() {
            Some(last @ b'\\') => *last = b' ',
            _ => break,
        }
    }
    Ok(lines)
}

/// No normal assigned to a vertex yet.
const UNSET: u32 = u32::MAX;

/// The state of one OBJ read.
struct Parser<'a> {
    path: &'a Path,
    /// The (first) line of the statement being read, 1-based.
    line: usize,
    positions: Vec<[f32; 3]>,
    /// The `vn` list, indexed by the faces.
    normal_list: Vec<[f32; 3]>,
    /// The `vn` entry each vertex gets, or [`UNSET`].
    vertex_normal: Vec<u32>,
    /// Whether every face corner so far named a normal, and each vertex the same one.
    normals_consistent: bool,
    triangles: Vec<[u32; 3]>,
    /// The corners of the face being read.
    corners: Vec<u32>,
    /// Unknown statements already reported.
    skipped: Vec<String>,
}

impl<'a> Parser<'a> {
    fn new(path: &'a Path) -> Self {
        Self {
            path,
            line: 0,
            positions: Vec::new(),
            normal_list: Vec::new(),
            vertex_normal: Vec::new(),
            normals_consistent: true,
            triangles: Vec::new(),
            corners: Vec::new(),
            skipped: Vec::new(),
        }
    }

    /// An error at the current line.
    fn error(&self, message: String) -> SceneError {
        SceneError::malformed(self.path, format!("line {}", self.line), message)
    }

    /// Reads one statement, comments already removed.
    fn statement(&mut self, text: &str) -> Result<(), SceneError> {
        let mut tokens = text.split_ascii_whitespace();
        let Some(keyword) = tokens.next() else {
            return Ok(());
        };
        match keyword {
            "v" => {
                let p = self.vector(tokens, "vertex")?;
                self.positions.push(p);
                self.vertex_normal.push(UNSET);
            }
            "vn" => {
                let n = self.vector(tokens, "normal")?;
                self.normal_list.push(n);
            }
            "f" => self.face(tokens)?,
            "vt" | "o" | "g" | "s" | "usemtl" | "mtllib" => {}
            _ => {
                if !self.skipped.iter().any(|k| k == keyword) {
                    log::debug!(
                        "{}:line {}: skipping '{keyword}' statements",
                        self.path.display(),
                        self.line
                    );
                    self.skipped.push(keyword.to_owned());
                }
            }
        }
        Ok(())
    }

    /// The first three numbers of a `v` or `vn` statement, which must be finite.
    fn vector<'t>(
        &self,
        mut tokens: impl Iterator<Item = &'t str>,
        what: &str,
    ) -> Result<[f32; 3], SceneError> {
        let mut v = [0.0f32; 3];
        for c in &mut v {
            let token = tokens
                .next()
                .ok_or_else(|| self.error(format!("a {what} needs three coordinates")))?;
            *c = token
                .parse()
                .map_err(|_| self.error(format!("bad number '{token}' in a {what}")))?;
            if !c.is_finite() {
                return Err(self.error(format!("{what} coordinate '{token}' is not finite")));
            }
        }
        Ok(v)
    }

    /// Reads the corners of an `f` statement and appends its triangles.
    fn face<'t>(&mut self, tokens: impl Iterator<Item = &'t str>) -> Result<(), SceneError> {
        self.corners.clear();
        for corner in tokens {
            let mut parts = corner.split('/');
            let vertex = parts.next().unwrap_or_default();
            let _texture = parts.next();
            let normal = parts.next().filter(|n| !n.is_empty());
            if parts.next().is_some() {
                return Err(self.error(format!("face corner '{corner}' has more than 3 parts")));
            }
            let v = self.index(vertex, self.positions.len(), "vertex")?;
            match normal {
                Some(n) => {
                    let n = self.index(n, self.normal_list.len(), "normal")?;
                    self.assign_normal(v, n);
                }
                None => self.normals_consistent = false,
            }
            self.corners.push(v);
        }
        if self.corners.len() < 3 {
            return Err(self.error(format!(
                "a face needs at least 3 vertices, this one has {}",
                self.corners.len()
            )));
        }
        push_fan(&self.corners, &mut self.triangles);
        Ok(())
    }

    /// Gives vertex `v` normal `n`, noting when a vertex gets two different normals.
    fn assign_normal(&mut self, v: u32, n: u32) {
        if !self.normals_consistent {
            return;
        }
        let assigned = &mut self.vertex_normal[v as usize];
        if *assigned == UNSET {
            *assigned = n;
        } else if *assigned != n
            && self.normal_list[*assigned as usize] != self.normal_list[n as usize]
        {
            self.normals_consistent = false;
        }
    }

    /// The 0-based index of an OBJ index `token` into a list of `count` `what`s.
    fn index(&self, token: &str, count: usize, what: &str) -> Result<u32, SceneError> {
        let i: i64 = token
            .parse()
            .map_err(|_| self.error(format!("bad {what} index '{token}'")))?;
        let resolved = match i {
            0 => return Err(self.error(format!("{what} index 0 (OBJ indices start at 1)"))),
            1.. => i - 1,
            ..0 => count as i64 + i,
        };
        if !(0..count as i64).contains(&resolved) {
            return Err(self.error(format!(
                "{what} index {i} is out of range ({count} defined so far)"
            )));
        }
        Ok(resolved as u32)
    }

    /// The mesh read, with normals if they were consistent.
    fn finish(self) -> Mesh {
        let normals = if self.normals_consistent && !self.triangles.is_empty() {
            self.vertex_normal
                .iter()
                .map(|&n| match n {
                    UNSET => [0.0, 0.0, 1.0],
                    n => self.normal_list[n as usize],
                })
                .collect()
        } else {
            Vec::new()
        };
        Mesh {
            positions: self.positions,
            normals,
            triangles: self.triangles,
        }
    }
}
