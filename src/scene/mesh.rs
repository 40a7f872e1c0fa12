//! The triangle mesh every structure is built from, stored as structure of arrays so each
//! attribute uploads to the GPU as one tightly packed buffer.

use std::path::PathBuf;

/// A triangle mesh: one array per attribute.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Mesh {
    /// Vertex positions.
    pub positions: Vec<[f32; 3]>,
    /// Per-vertex normals: empty, or one per position.
    pub normals: Vec<[f32; 3]>,
    /// Triangles as three vertex indices each.
    pub triangles: Vec<[u32; 3]>,
}

/// Why a mesh could not be loaded or used. Every variant names the file (or "<memory>") and,
/// where there is one, the line or element at fault.
#[derive(Debug, thiserror::Error)]
pub enum SceneError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The operating-system error.
        source: std::io::Error,
    },
    /// The file's contents are malformed.
    #[error("{path}:{location}: {message}")]
    Malformed {
        /// The file.
        path: PathBuf,
        /// Where: "line 12", "face 3041", "accessor 2", ...
        location: String,
        /// What is wrong.
        message: String,
    },
    /// The file holds no triangles.
    #[error("{path}: the mesh has no triangles")]
    Empty {
        /// The file.
        path: PathBuf,
    },
    /// The file's extension names no format canopy reads.
    #[error("{path}: unknown mesh format (expected .obj, .ply, .gltf or .glb)")]
    UnknownFormat {
        /// The file.
        path: PathBuf,
    },
}

impl Mesh {
    /// Number of triangles.
    pub fn triangle_count(&self) -> usize {
        self.triangles.len()
    }

    /// Number of vertices.
    pub fn vertex_count(&self) -> usize {
        self.positions.len()
    }
}
