//! Simple procedural meshes: spheres, axis-aligned cubes and ground squares, for test scenes
//! and for the ground under a rendered mesh.

use super::Mesh;
use std::f32::consts::{PI, TAU};

/// A UV sphere of `rings` latitude bands and `2 * rings` longitude segments, with outward
/// normals. Its poles are single vertices, so no triangle is degenerate.
pub fn uv_sphere(centre: [f32; 3], radius: f32, rings: u32) -> Mesh {
    let rings = rings.max(2);
    let segments = 2 * rings;
    let mut mesh = Mesh::default();
    for j in 0..uv_sphere_vertex_count(rings) {
        let normal = uv_sphere_normal(rings, j);
        mesh.positions
            .push(std::array::from_fn(|a| centre[a] + radius * normal[a]));
        mesh.normals.push(normal);
    }
    let bottom = mesh.positions.len() as u32 - 1;
    let at = |ring: u32, segment: u32| 1 + (ring - 1) * segments + segment % segments;
    for s in 0..segments {
        mesh.triangles.push([0, at(1, s + 1), at(1, s)]);
        mesh.triangles
            .push([bottom, at(rings - 1, s), at(rings - 1, s + 1)]);
    }
    for ring in 1..rings - 1 {
        for s in 0..segments {
            let (a, b) = (at(ring, s), at(ring, s + 1));
            let (c, d) = (at(ring + 1, s + 1), at(ring + 1, s));
            mesh.triangles.push([a, b, c]);
            mesh.triangles.push([a, c, d]);
        }
    }
    mesh
}

/// Vertices of [`uv_sphere`] with `rings` (at least 2) latitude bands.
pub fn uv_sphere_vertex_count(rings: u32) -> u32 {
    2 + (rings - 1) * 2 * rings
}

/// The unit normal of vertex `j` of [`uv_sphere`] with `rings` (at least 2) bands: the top
/// pole, then `rings - 1` rings of `2 * rings` vertices from the top, then the bottom pole
/// (`glsl/scene/default_surface.comp` makes the same vertices).
pub fn uv_sphere_normal(rings: u32, j: u32) -> [f32; 3] {
    let segments = 2 * rings;
    if j == 0 {
        return [0.0, 1.0, 0.0];
    }
    if j > (rings - 1) * segments {
        return [0.0, -1.0, 0.0];
    }
    let theta = PI * (1 + (j - 1) / segments) as f32 / rings as f32;
    let phi = TAU * ((j - 1) % segments) as f32 / segments as f32;
    [
        theta.sin() * phi.cos(),
        theta.cos(),
        theta.sin() * phi.sin(),
    ]
}

/// A horizontal square of half-side `half_size` centred on `centre`, facing up: two triangles.
pub fn ground_square(centre: [f32; 3], half_size: f32) -> Mesh {
    let s = half_size;
    Mesh {
        positions: [(-s, -s), (s, -s), (-s, s), (s, s)]
            .map(|(x, z)| [centre[0] + x, centre[1], centre[2] + z])
            .to_vec(),
        normals: vec![[0.0, 1.0, 0.0]; 4],
        triangles: vec![[0, 2, 3], [0, 3, 1]],
    }
}

/// An axis-aligned cube of side `size` with its smallest corner at `corner`: 8 vertices and 12
/// triangles (no normals).
pub fn cube(corner: [f32; 3], size: f32) -> Mesh {
    const QUADS: [[u32; 4]; 6] = [
        [0, 2, 6, 4],
        [1, 5, 7, 3],
        [0, 4, 5, 1],
        [2, 3, 7, 6],
        [0, 1, 3, 2],
        [4, 6, 7, 5],
    ];
    Mesh {
        positions: (0..8u32)
            .map(|v| std::array::from_fn(|k| corner[k] + size * ((v >> k) & 1) as f32))
            .collect(),
        normals: Vec::new(),
        triangles: QUADS
            .iter()
            .flat_map(|&[a, b, c, d]| [[a, b, c], [a, c, d]])
            .collect(),
    }
}
