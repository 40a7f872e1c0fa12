//! The binary radix tree (Karras 2012) that the LBVH and the octree both stand on: the bounds
//! of the primitives' centres (`glsl/radix_tree/primitive_bounds.comp`), a Morton code per
//! centre (`glsl/radix_tree/morton_codes.comp`), a radix sort of the codes with their indices, and
//! the whole tree of internal nodes over the sorted codes in one dispatch, with parent links
//! (`glsl/radix_tree/internal_nodes.comp`; duplicate codes are split by index). The octree
//! reads its cells off the tree's prefixes ([`crate::accel::octree`]); the LBVH sorts the same
//! codes and climbs the same tree without building it, fitting boxes (and clustering) on the
//! way up ([`crate::accel::bvh::lbvh`]).

use crate::geom::morton::MortonBits;
use crate::prims::WORKGROUP_SIZE;
use crate::prims::indirect::IndirectArgs;
use crate::prims::radix_sort::{KeyType, RadixSort};
use crate::shaders;
use crate::vk::{Buffer, Context, MemoryKind, Pipeline, Recorder, Result};
use crate::vk::{Count, Slice};
use std::sync::Arc;

fn key_type(bits: MortonBits) -> KeyType {
    match bits {
        MortonBits::Bits30 => KeyType::U32,
        MortonBits::Bits63 => KeyType::U64,
    }
}

/// Push constants of `primitive_bounds.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct PrimitiveBoundsPush {
    /// Vertex (or point) positions.
    pub positions_address: u64,
    /// Triangle indices (unused for points).
    pub triangles_address: u64,
    /// The centroid bounds written.
    pub bounds_address: u64,
    /// Done-counter and per-tile partials.
    pub scratch_address: u64,
    /// Device count or 0.
    pub count_address: u64,
    /// Host count.
    pub host_count: u32,
    /// Padding.
    pub pad: u32,
}

/// Push constants of `morton_codes.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct MortonPush {
    /// Vertex (or point) positions.
    pub positions_address: u64,
    /// Triangle indices (unused for points).
    pub triangles_address: u64,
    /// Centroid bounds.
    pub bounds_address: u64,
    /// Keys written.
    pub keys_address: u64,
    /// Device count or 0.
    pub count_address: u64,
    /// Host count.
    pub host_count: u32,
    /// Padding.
    pub pad: u32,
}

/// Push constants of `radix_tree.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct RadixTreePush {
    /// Sorted keys.
    pub keys_address: u64,
    /// Internal nodes written.
    pub nodes_address: u64,
    /// Leaf parents written.
    pub leaf_parents_address: u64,
    /// Visit counters zeroed.
    pub counters_address: u64,
    /// Device count or 0.
    pub count_address: u64,
    /// Host count.
    pub host_count: u32,
    /// Padding.
    pub pad: u32,
}

/// Invocations of `primitive_bounds.comp` each reduce this many primitives.
const BOUNDS_ITEMS_PER_INVOCATION: u32 = 4;
const BOUNDS_TILE: u32 = WORKGROUP_SIZE * BOUNDS_ITEMS_PER_INVOCATION;

/// Device addresses the Morton code steps read and write.
#[derive(Clone, Copy)]
pub(crate) struct CodeBuffers {
    /// Vertex (or point) positions.
    pub(crate) positions: u64,
    /// Triangles (0 for points).
    pub(crate) triangles: u64,
}

/// Device addresses the radix tree step reads and writes.
#[derive(Clone, Copy)]
pub(crate) struct RadixTreeBuffers {
    /// Sorted keys.
    pub(crate) keys: u64,
    /// Internal nodes written.
    pub(crate) nodes: u64,
    /// Leaf parents written (u32 per leaf).
    pub(crate) leaf_parents: u64,
    /// Visit counters zeroed (u32 per internal node).
    pub(crate) counters: u64,
}

/// The steps shared by the LBVH and the octree: bounds, Morton codes, sort and radix tree.
pub(crate) struct RadixTreeSteps {
    /// The structure they build for, naming the profiler stages and buffers ("lbvh: sort").
    label: &'static str,
    pub(crate) morton_bits: MortonBits,
    bounds: Arc<Pipeline>,
    morton: Arc<Pipeline>,
    radix_tree: Arc<Pipeline>,
    pub(crate) sort: RadixSort,
    pub(crate) indirect: IndirectArgs,
    reduce_scratch: Buffer,
    /// The centroid bounds (one 32-byte box, as `prims::reduce::Aabb`).
    pub(crate) centroid_bounds: Buffer,
}

impl RadixTreeSteps {
    pub(crate) fn new(
        ctx: &Context,
        label: &'static str,
        morton_bits: MortonBits,
        points: bool,
        capacity: u32,
    ) -> Result<Self> {
        let codes63 = (morton_bits == MortonBits::Bits63) as u32;
        let tiles = capacity.div_ceil(BOUNDS_TILE).max(1) as u64;
        let reduce_scratch = ctx.create_buffer(
            &format!("{label} bounds partials"),
            32 * (tiles + 1),
            MemoryKind::Device,
        )?;
        ctx.submit_and_wait(|rec| {
            rec.fill(&reduce_scratch, 0, 4, 0);
            Ok(())
        })?;
        Ok(Self {
            label,
            morton_bits,
            bounds: ctx.pipeline(
                &shaders::RADIX_TREE_PRIMITIVE_BOUNDS,
                WORKGROUP_SIZE,
                &[
                    ("POINTS", points as u32),
                    ("ITEMS_PER_INVOCATION", BOUNDS_ITEMS_PER_INVOCATION),
                ],
            )?,
            morton: ctx.pipeline(
                &shaders::RADIX_TREE_MORTON_CODES,
                WORKGROUP_SIZE,
                &[("POINTS", points as u32), ("CODES63", codes63)],
            )?,
            radix_tree: ctx.pipeline(
                &shaders::RADIX_TREE_INTERNAL_NODES,
                WORKGROUP_SIZE,
                &[("KEYS64", codes63)],
            )?,
            sort: RadixSort::new(
                ctx,
                key_type(morton_bits),
                morton_bits.code_bits(),
                capacity,
            )?,
            indirect: IndirectArgs::new(ctx, label, 3)?,
            reduce_scratch,
            centroid_bounds: ctx.create_buffer(
                &format!("{label} centroid bounds"),
                32,
                MemoryKind::Device,
            )?,
        })
    }

    /// Bytes steps 1-3 of a triangle build move in device memory per triangle, counted from
    /// the kernels' access pattern: the bounds and the Morton kernels each read a triangle's
    /// indices and vertices (48 bytes), the Morton kernel writes its code, and the codes are
    /// sorted with their indices.
    pub(crate) fn sorted_codes_bytes_per_triangle(&self) -> f64 {
        2.0 * 48.0 + self.key_bytes() as f64 + self.sort.bytes_per_pair(true)
    }

    /// Bytes of a key.
    pub(crate) fn key_bytes(&self) -> u64 {
        self.morton_bits.key_bits() as u64 / 8
    }

    /// Steps 1-3: centroid bounds, a Morton code per primitive, and the codes sorted with their
    /// primitives: the sorted codes end in `keys` (u32 or u64 each) and the primitives in code
    /// order in `values`.
    pub(crate) fn record_sorted_codes(
        &self,
        rec: &mut Recorder,
        buffers: &CodeBuffers,
        keys: &Buffer,
        values: &Buffer,
        count: Count,
    ) -> Result<()> {
        let CodeBuffers {
            positions,
            triangles,
        } = *buffers;
        let (count_address, host_count) = count.push();
        rec.begin_stage(&format!("{}: bounds", self.label));
        let groups = self.indirect.groups_for(rec, 0, &count, BOUNDS_TILE, 1)?;
        let push = PrimitiveBoundsPush {
            positions_address: positions,
            triangles_address: triangles,
            bounds_address: self.centroid_bounds.address(),
            scratch_address: self.reduce_scratch.address(),
            count_address,
            host_count,
            pad: 0,
        };
        rec.dispatch_groups(&self.bounds, &push, &groups)?;
        rec.barrier_compute_to_compute();
        rec.end_stage();

        rec.begin_stage(&format!("{}: morton codes", self.label));
        let groups = self
            .indirect
            .groups_for(rec, 1, &count, WORKGROUP_SIZE, 0)?;
        let push = MortonPush {
            positions_address: positions,
            triangles_address: triangles,
            bounds_address: self.centroid_bounds.address(),
            keys_address: self.sort.unsorted_keys(Slice::whole(keys)).address(),
            count_address,
            host_count,
            pad: 0,
        };
        rec.dispatch_groups(&self.morton, &push, &groups)?;
        rec.barrier_compute_to_compute();
        rec.end_stage();

        rec.begin_stage(&format!("{}: sort", self.label));
        let words = self.key_bytes() / 4;
        let n = count.max() as u64;
        self.sort.record_indexed(
            rec,
            Slice::new(keys, 0, n * words),
            Slice::new(values, 0, n),
            count,
        )?;
        rec.end_stage();
        Ok(())
    }

    /// Step 4: the radix tree over the sorted keys.
    pub(crate) fn record_radix_tree(
        &self,
        rec: &mut Recorder,
        buffers: &RadixTreeBuffers,
        count: Count,
    ) -> Result<()> {
        let (count_address, host_count) = count.push();
        rec.begin_stage(&format!("{}: radix tree", self.label));
        let groups = self
            .indirect
            .groups_for(rec, 2, &count, WORKGROUP_SIZE, 1)?;
        let push = RadixTreePush {
            keys_address: buffers.keys,
            nodes_address: buffers.nodes,
            leaf_parents_address: buffers.leaf_parents,
            counters_address: buffers.counters,
            count_address,
            host_count,
            pad: 0,
        };
        rec.dispatch_groups(&self.radix_tree, &push, &groups)?;
        rec.barrier_compute_to_compute();
        rec.end_stage();
        Ok(())
    }
}
