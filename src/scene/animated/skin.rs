//! The GPU skinning step: a [`Rig`]'s vertices posed every frame by `glsl/scene/skin.comp`
//! (morph targets, then linear blend skinning with up to eight influences), from a frame's
//! [`Pose`] sampled on the CPU. Only the pose travels to the GPU each frame (its palette of
//! joint matrices and its morph weights, a few kilobytes), recorded into the frame's command
//! buffer; the rest positions, influences and morph offsets are uploaded once.

use crate::prims::WORKGROUP_SIZE;
use crate::scene::rig::{ClipTime, Pose, Rig};
use crate::shaders;
use crate::vk::{Buffer, Context, Error, Pipeline, Recorder, Result};
use glam::Mat4;
use std::sync::Arc;

/// Push constants of `skin.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct SkinPush {
    /// Rest positions.
    pub rest_address: u64,
    /// Two u32 (four 16-bit palette indices) per vertex and group of four influences.
    pub joints_address: u64,
    /// A vec4 of weights per vertex and group.
    pub weights_address: u64,
    /// The frame's palette (column-major 4x4 matrices).
    pub palette_address: u64,
    /// Out: posed positions.
    pub out_address: u64,
    /// The part of each vertex (with morph targets).
    pub part_of_vertex_address: u64,
    /// [`MorphPart`] per part (with morph targets).
    pub parts_address: u64,
    /// Morph offsets (with morph targets).
    pub offsets_address: u64,
    /// The frame's morph weights (with morph targets).
    pub morph_weights_address: u64,
    /// Vertices.
    pub vertex_count: u32,
    /// Padding.
    pub pad: u32,
}

/// A part's morph targets as `skin.comp` reads them.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct MorphPart {
    /// First vertex.
    pub first_vertex: u32,
    /// Vertices.
    pub vertex_count: u32,
    /// Morph targets.
    pub targets: u32,
    /// First offset (target-major).
    pub first_offset: u32,
    /// First weight in the frame's morph weights.
    pub first_weight: u32,
    /// Padding.
    pub pad: u32,
}

/// The most bytes one `vkCmdUpdateBuffer` writes.
const UPDATE_LIMIT: usize = 65536;

/// The device buffers of a rig's morph targets.
struct MorphBuffers {
    part_of_vertex: Buffer,
    parts: Buffer,
    offsets: Buffer,
    weights: Buffer,
}

/// Poses a [`Rig`] on the GPU every frame (see the module docs).
pub struct Skinner {
    rig: Rig,
    clip: ClipTime,
    root: Mat4,
    pipeline: Arc<Pipeline>,
    rest: Buffer,
    joints: Buffer,
    weights: Buffer,
    palette: Buffer,
    morph: Option<MorphBuffers>,
}

impl Skinner {
    /// A skinner of `rig` playing `clip`, every pose's matrices multiplied on the left by
    /// `root` (the transform that places the scene); uploads the rig's vertex data.
    pub fn new(ctx: &Context, rig: Rig, clip: ClipTime, root: Mat4) -> Result<Self> {
        let vertex_count = rig.rest.mesh.positions.len();
        if vertex_count == 0 {
            return Err(Error::InvalidInput("a rig without vertices".into()));
        }
        if let Some(c) = clip.clip
            && c >= rig.clips.len()
        {
            return Err(Error::InvalidInput(format!(
                "animation {c}: the file has {}",
                rig.clips.len()
            )));
        }
        let groups = rig.influences as usize / 4;
        let mut joints: Vec<u32> = Vec::with_capacity(vertex_count * groups * 2);
        let mut weights: Vec<[f32; 4]> = Vec::with_capacity(vertex_count * groups);
        for (j, w) in rig.joints.iter().zip(&rig.weights) {
            for g in 0..groups {
                let j = &j[4 * g..4 * g + 4];
                joints.push(j[0] as u32 | (j[1] as u32) << 16);
                joints.push(j[2] as u32 | (j[3] as u32) << 16);
                weights.push([w[4 * g], w[4 * g + 1], w[4 * g + 2], w[4 * g + 3]]);
            }
        }
        let morph = if rig.has_morph_targets() {
            let parts: Vec<MorphPart> = rig
                .parts
                .iter()
                .map(|p| MorphPart {
                    first_vertex: p.first_vertex,
                    vertex_count: p.vertex_count,
                    targets: p.targets,
                    first_offset: p.first_offset,
                    first_weight: p.first_weight,
                    pad: 0,
                })
                .collect();
            Some(MorphBuffers {
                part_of_vertex: ctx
                    .create_buffer_with("skin part of vertex", &rig.part_of_vertex)?,
                parts: ctx.create_buffer_with("skin morph parts", &parts)?,
                offsets: ctx.create_buffer_with("skin morph offsets", &rig.morph_offsets)?,
                weights: ctx.create_buffer(
                    "skin morph weights",
                    4 * rig.morph_weight_count() as u64,
                    crate::vk::MemoryKind::Device,
                )?,
            })
        } else {
            None
        };
        let pipeline = ctx.pipeline(
            &shaders::SCENE_SKIN,
            WORKGROUP_SIZE,
            &[
                ("INFLUENCE_GROUPS", groups as u32),
                ("MORPH", morph.is_some() as u32),
            ],
        )?;
        Ok(Self {
            rest: ctx.create_buffer_with("skin rest positions", &rig.rest.mesh.positions)?,
            joints: ctx.create_buffer_with("skin joints", &joints)?,
            weights: ctx.create_buffer_with("skin weights", &weights)?,
            palette: ctx.create_buffer(
                "skin palette",
                64 * rig.palette_len().max(1) as u64,
                crate::vk::MemoryKind::Device,
            )?,
            morph,
            pipeline,
            rig,
            clip,
            root,
        })
    }

    /// The rig.
    pub fn rig(&self) -> &Rig {
        &self.rig
    }

    /// The clip played and whether it loops.
    pub fn clip(&self) -> ClipTime {
        self.clip
    }

    /// The transform placing the scene.
    pub fn root(&self) -> Mat4 {
        self.root
    }

    /// Vertices posed.
    pub fn vertex_count(&self) -> u32 {
        self.rig.rest.mesh.positions.len() as u32
    }

    /// The pose at frame time `time` seconds.
    pub fn pose(&self, time: f32) -> Pose {
        self.rig.pose(self.clip, time, self.root)
    }

    /// Bytes [`Self::record`] uploads each frame: the palette and the morph weights.
    pub fn uploaded_bytes(&self) -> u64 {
        64 * self.rig.palette_len() as u64 + 4 * self.rig.morph_weight_count() as u64
    }

    /// Records the pose at `time` seconds into `out` (12 bytes per vertex, from its start):
    /// the pose's upload (ordered after the GPU's earlier reads of the last one), then the
    /// skinning kernel.
    pub fn record(&self, rec: &mut Recorder, time: f32, out: &Buffer) -> Result<()> {
        let pose = self.pose(time);
        rec.begin_stage("scene: skin");
        rec.barrier_compute_to_transfer();
        let palette: Vec<[f32; 16]> = pose.palette.iter().map(Mat4::to_cols_array).collect();
        upload(rec, &self.palette, bytemuck::cast_slice(&palette));
        if let Some(morph) = &self.morph {
            upload(rec, &morph.weights, &pose.morph_weights);
        }
        rec.barrier_transfer_to_compute();
        let push = SkinPush {
            rest_address: self.rest.address(),
            joints_address: self.joints.address(),
            weights_address: self.weights.address(),
            palette_address: self.palette.address(),
            out_address: out.address(),
            part_of_vertex_address: self
                .morph
                .as_ref()
                .map_or(0, |m| m.part_of_vertex.address()),
            parts_address: self.morph.as_ref().map_or(0, |m| m.parts.address()),
            offsets_address: self.morph.as_ref().map_or(0, |m| m.offsets.address()),
            morph_weights_address: self.morph.as_ref().map_or(0, |m| m.weights.address()),
            vertex_count: self.vertex_count(),
            pad: 0,
        };
        rec.dispatch(
            &self.pipeline,
            &push,
            self.vertex_count().div_ceil(WORKGROUP_SIZE),
        )?;
        rec.barrier_compute_to_compute();
        rec.end_stage();
        Ok(())
    }
}

/// Writes `bytes` at the start of `buffer` in the command stream, in pieces of at most
/// [`UPDATE_LIMIT`] bytes.
fn upload(rec: &mut Recorder, buffer: &Buffer, bytes: &[f32]) {
    for (k, piece) in bytes.chunks(UPDATE_LIMIT / 4).enumerate() {
        rec.update_buffer(buffer, (k * UPDATE_LIMIT) as u64, piece);
    }
}
