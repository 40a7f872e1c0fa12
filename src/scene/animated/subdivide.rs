//! Loop subdivision on the GPU (seed 000 §4, Fig. 5): a control mesh refined every frame,
//! level after level, by `glsl/scene/subdivide.comp` from the stencils
//! [`LoopSubdivision`] builds once on the CPU. The topology never changes, so only the
//! vertex positions are computed per frame; the refined triangles are uploaded once.

use super::subdivision::LoopSubdivision;
use crate::prims::WORKGROUP_SIZE;
use crate::shaders;
use crate::vk::{Buffer, Context, MemoryKind, Pipeline, Recorder, Result};
use std::sync::Arc;

/// Push constants of `subdivide.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct SubdividePush {
    /// The coarse level's positions.
    pub coarse_address: u64,
    /// Out: the refined level's positions.
    pub refined_address: u64,
    /// Row offsets of the level's stencils.
    pub row_offsets_address: u64,
    /// Their coarse vertices.
    pub columns_address: u64,
    /// Their weights.
    pub weights_address: u64,
    /// Refined vertices.
    pub rows: u32,
    /// Padding.
    pub pad: u32,
}

/// One level's stencils on the device.
struct Level {
    row_offsets: Buffer,
    columns: Buffer,
    weights: Buffer,
    rows: u32,
}

/// Refines a control mesh of fixed topology every frame (see the module docs).
pub struct Subdivider {
    pipeline: Arc<Pipeline>,
    levels: Vec<Level>,
    /// The intermediate levels' positions (all but the last, which goes to the caller).
    scratch: Vec<Buffer>,
    control_vertices: u32,
}

impl Subdivider {
    /// Uploads `subdivision`'s stencils and allocates its intermediate levels.
    pub fn new(ctx: &Context, subdivision: &LoopSubdivision) -> Result<Self> {
        let mut levels = Vec::new();
        for (k, stencils) in subdivision.levels.iter().enumerate() {
            levels.push(Level {
                row_offsets: ctx
                    .create_buffer_with(&format!("subdivision {k} rows"), &stencils.row_offsets)?,
                columns: ctx
                    .create_buffer_with(&format!("subdivision {k} columns"), &stencils.columns)?,
                weights: ctx
                    .create_buffer_with(&format!("subdivision {k} weights"), &stencils.weights)?,
                rows: stencils.rows() as u32,
            });
        }
        let scratch = levels
            .iter()
            .take(levels.len().saturating_sub(1))
            .enumerate()
            .map(|(k, level)| {
                ctx.create_buffer(
                    &format!("subdivision level {}", k + 1),
                    12 * level.rows as u64,
                    MemoryKind::Device,
                )
            })
            .collect::<Result<_>>()?;
        Ok(Self {
            pipeline: ctx.pipeline(&shaders::SCENE_SUBDIVIDE, WORKGROUP_SIZE, &[])?,
            levels,
            scratch,
            control_vertices: subdivision.vertex_counts[0],
        })
    }

    /// Levels of refinement.
    pub fn levels(&self) -> usize {
        self.levels.len()
    }

    /// Vertices of the control mesh.
    pub fn control_vertex_count(&self) -> u32 {
        self.control_vertices
    }

    /// Vertices of the refined mesh.
    pub fn refined_vertex_count(&self) -> u32 {
        self.levels.last().map_or(self.control_vertices, |l| l.rows)
    }

    /// Records every level, from the control positions in `control` to the refined ones in
    /// `refined` (12 bytes per vertex each, from their starts). With no levels nothing is
    /// recorded: the caller uses the control positions.
    pub fn record(&self, rec: &mut Recorder, control: &Buffer, refined: &Buffer) -> Result<()> {
        if self.levels.is_empty() {
            return Ok(());
        }
        rec.begin_stage("scene: subdivide");
        for (k, level) in self.levels.iter().enumerate() {
            let coarse = if k == 0 {
                control
            } else {
                &self.scratch[k - 1]
            };
            let out = self.scratch.get(k).unwrap_or(refined);
            let push = SubdividePush {
                coarse_address: coarse.address(),
                refined_address: out.address(),
                row_offsets_address: level.row_offsets.address(),
                columns_address: level.columns.address(),
                weights_address: level.weights.address(),
                rows: level.rows,
                pad: 0,
            };
            rec.dispatch(&self.pipeline, &push, level.rows.div_ceil(WORKGROUP_SIZE))?;
            rec.barrier_compute_to_compute();
        }
        rec.end_stage();
        Ok(())
    }
}
