//! Vertex normals of a deforming mesh on the GPU (`glsl/scene/surface_normals.comp`), made
//! every frame from the posed triangles, and the displacement of a refined surface along them.
//!
//! Each vertex's *ring*, the triangles whose normals it averages, is built once on the CPU:
//! every triangle touching a vertex at the same rest position, so that the copies of a vertex
//! split along a texture seam (as glTF files split them) get one normal and the seam does not
//! show. [`ring_normals`] is the kernel's CPU reference.

use crate::prims::WORKGROUP_SIZE;
use crate::shaders;
use crate::vk::{Buffer, Context, Error, Pipeline, Recorder, Result};
use glam::Vec3;
use std::collections::HashMap;
use std::sync::Arc;

/// Push constants of `surface_normals.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct SurfaceNormalsPush {
    /// Positions read.
    pub positions_address: u64,
    /// Triangles.
    pub triangles_address: u64,
    /// Ring offsets: u32 per vertex and one past the last.
    pub ring_offsets_address: u64,
    /// Triangle indices of the rings.
    pub ring_address: u64,
    /// Out: normals, or displaced positions.
    pub out_address: u64,
    /// Height per vertex (displacement).
    pub heights_address: u64,
    /// Vertices.
    pub vertex_count: u32,
    /// Displacement per unit height.
    pub amount: f32,
}

/// The triangles of each vertex's ring as offsets (one per vertex and one past the last) and
/// triangle indices: every triangle touching a vertex at the same position as it in `rest`.
pub fn rings(rest: &[[f32; 3]], triangles: &[[u32; 3]]) -> (Vec<u32>, Vec<u32>) {
    // Welded vertex (first at its position) of every vertex.
    let mut first_at: HashMap<[u32; 3], u32> = HashMap::with_capacity(rest.len());
    let welded: Vec<u32> = rest
        .iter()
        .enumerate()
        .map(|(v, p)| *first_at.entry(p.map(f32::to_bits)).or_insert(v as u32))
        .collect();
    // Triangles per welded vertex, as a CSR.
    let mut counts = vec![0u32; rest.len() + 1];
    for t in triangles {
        for &v in t {
            counts[welded[v as usize] as usize + 1] += 1;
        }
    }
    for v in 0..rest.len() {
        counts[v + 1] += counts[v];
    }
    let mut cursor = counts.clone();
    let mut by_weld = vec![0u32; counts[rest.len()] as usize];
    for (index, t) in triangles.iter().enumerate() {
        for &v in t {
            let w = welded[v as usize] as usize;
            by_weld[cursor[w] as usize] = index as u32;
            cursor[w] += 1;
        }
    }
    let mut offsets = Vec::with_capacity(rest.len() + 1);
    let mut ring = Vec::new();
    offsets.push(0);
    for &w in &welded {
        let w = w as usize;
        let list = &by_weld[counts[w] as usize..counts[w + 1] as usize];
        // A triangle using two copies of the vertex (a degenerate one) counts once.
        let start = ring.len();
        for &t in list {
            if !ring[start..].contains(&t) {
                ring.push(t);
            }
        }
        offsets.push(ring.len() as u32);
    }
    (offsets, ring)
}

/// Each vertex's normal from its ring (the CPU reference of the kernel): the normalised sum
/// of its triangles' cross products, zero where they sum to nothing.
pub fn ring_normals(
    positions: &[[f32; 3]],
    triangles: &[[u32; 3]],
    (offsets, ring): (&[u32], &[u32]),
) -> Vec<[f32; 3]> {
    (0..offsets.len() - 1)
        .map(|v| {
            let sum: Vec3 = ring[offsets[v] as usize..offsets[v + 1] as usize]
                .iter()
                .map(|&t| {
                    let [a, b, c] =
                        triangles[t as usize].map(|i| Vec3::from(positions[i as usize]));
                    (b - a).cross(c - a)
                })
                .sum();
            sum.try_normalize().unwrap_or(Vec3::ZERO).to_array()
        })
        .collect()
}

/// The normals (and displacement) step of a deforming mesh of fixed topology.
pub struct SurfaceNormals {
    normals: Arc<Pipeline>,
    displace: Arc<Pipeline>,
    ring_offsets: Buffer,
    ring: Buffer,
    vertex_count: u32,
}

impl SurfaceNormals {
    /// The step for the mesh of `triangles` whose vertices rest at `rest` (which vertices
    /// share a position there decides the rings).
    pub fn new(ctx: &Context, rest: &[[f32; 3]], triangles: &[[u32; 3]]) -> Result<Self> {
        if rest.is_empty() {
            return Err(Error::InvalidInput(
                "normals of a mesh without vertices".into(),
            ));
        }
        let (offsets, ring) = rings(rest, triangles);
        Ok(Self {
            normals: ctx.pipeline(&shaders::SCENE_SURFACE_NORMALS, WORKGROUP_SIZE, &[])?,
            displace: ctx.pipeline(
                &shaders::SCENE_SURFACE_NORMALS,
                WORKGROUP_SIZE,
                &[("DISPLACE", 1)],
            )?,
            ring_offsets: ctx.create_buffer_with("normals ring offsets", &offsets)?,
            ring: ctx.create_buffer_with("normals rings", &ring_or_one(ring))?,
            vertex_count: rest.len() as u32,
        })
    }

    /// Records the normals of the vertices in `positions` into `normals`.
    pub fn record(
        &self,
        rec: &mut Recorder,
        positions: &Buffer,
        triangles: &Buffer,
        normals: &Buffer,
    ) -> Result<()> {
        self.dispatch(rec, &self.normals, (positions, triangles), normals, None)
    }

    /// Records the vertices in `positions` moved along their normals by `amount` times
    /// `heights` (a float per vertex) into `displaced`.
    pub fn record_displacement(
        &self,
        rec: &mut Recorder,
        positions: &Buffer,
        triangles: &Buffer,
        heights: &Buffer,
        amount: f32,
        displaced: &Buffer,
    ) -> Result<()> {
        self.dispatch(
            rec,
            &self.displace,
            (positions, triangles),
            displaced,
            Some((heights, amount)),
        )
    }

    fn dispatch(
        &self,
        rec: &mut Recorder,
        pipeline: &Pipeline,
        (positions, triangles): (&Buffer, &Buffer),
        out: &Buffer,
        displacement: Option<(&Buffer, f32)>,
    ) -> Result<()> {
        let push = SurfaceNormalsPush {
            positions_address: positions.address(),
            triangles_address: triangles.address(),
            ring_offsets_address: self.ring_offsets.address(),
            ring_address: self.ring.address(),
            out_address: out.address(),
            heights_address: displacement.map_or(0, |d| d.0.address()),
            vertex_count: self.vertex_count,
            amount: displacement.map_or(0.0, |d| d.1),
        };
        rec.dispatch(pipeline, &push, self.vertex_count.div_ceil(WORKGROUP_SIZE))?;
        rec.barrier_compute_to_compute();
        Ok(())
    }
}

/// A ring list of at least one entry (buffers cannot be empty).
fn ring_or_one(mut ring: Vec<u32>) -> Vec<u32> {
    if ring.is_empty() {
        ring.push(0);
    }
    ring
}
