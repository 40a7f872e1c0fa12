//! What a structure is built over, as device buffers: triangles or points.

use crate::vk::{Buffer, Slice};

/// Triangles on the device: `count` triangles of vertex indices into `positions`. Indices
/// must be below the vertex count (checked when meshes are loaded; an embedding app
/// guarantees it for its own buffers).
#[derive(Clone, Copy, Debug)]
pub struct TriangleInput<'a> {
    /// Vertex positions, 12 bytes each.
    pub positions: Slice<'a, [f32; 3]>,
    /// Triangles, three u32 vertex indices each.
    pub triangles: Slice<'a, [u32; 3]>,
    /// Number of triangles.
    pub count: u32,
}

impl<'a> TriangleInput<'a> {
    /// All of `triangles` (three u32 each) over `positions` (a vec3 of f32 each): `count`
    /// triangles.
    pub fn whole(positions: &'a Buffer, triangles: &'a Buffer, count: u32) -> Self {
        Self {
            positions: Slice::whole(positions),
            triangles: Slice::whole(triangles),
            count,
        }
    }
}

/// Points on the device: the first `count` positions of `positions`.
#[derive(Clone, Copy, Debug)]
pub struct PointInput<'a> {
    /// Positions, 12 bytes each.
    pub positions: Slice<'a, [f32; 3]>,
    /// Number of points.
    pub count: u32,
}
