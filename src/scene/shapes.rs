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
    let mut vertex = |normal: [f32; 3]| {
        mesh.positions
            .push(std::array::from_fn(|a| centre[a] + radius * normal[a]));
        mesh.normals.push(normal);
    };
    vertex([0.0, 1.0, 0.0]);
    for ring in 1..rings {
        let theta = PI * ring as f32 / rings as f32;
        for segment in 0..segments {
            let phi = TAU * segment as f32 / segments as f32;
            vertex([
                theta.sin() * phi.cos(),
                theta.cos(),
                theta.sin() * phi.sin(),
            ]);
        }
    }
    vertex([0.0, -1.0, 0.0]);
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
