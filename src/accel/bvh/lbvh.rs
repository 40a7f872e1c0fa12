//! The LBVH builder (Karras 2012): every frame from scratch, in five GPU steps.
//!
//! 1. `glsl/lbvh/primitive_bounds.comp`: the bounds of the triangles' box centres, in one
//!    dispatch.
//! 2. `glsl/lbvh/morton_codes.comp`: 30- or 63-bit Morton code of each box centre (recomputed
//!    from the vertices: cheaper than storing a box per triangle).
//! 3. [`RadixSort`] of (code, triangle) pairs: the sorted values are the leaf order.
//! 4. `glsl/lbvh/radix_tree.comp`: the whole binary radix tree in one dispatch, with parent
//!    links; duplicate codes are split by index.
//! 5. `glsl/lbvh/bottom_up_boxes.comp`: boxes bottom-up, each internal node visited once (the
//!    second child to arrive continues), and each leaf's triangle copied in leaf order.
//!
//! The output is a [`Bvh`] in the format of [`crate::accel::bvh`]. Scratch memory, sized for
//! the capacity: the keys, the sort's own, and an arena for the leaf parents and visit
//! counters of steps 4-5.

use super::Bvh;
use crate::geom::TriangleInput;
use crate::prims::indirect::IndirectArgs;
use crate::prims::radix_sort::{KeyType, RadixSort};
use crate::prims::{WORKGROUP_SIZE, check_count};
use crate::shaders;
use crate::vk::{Buffer, Context, Error, MemoryKind, Pipeline, Recorder, Result};
use crate::vk::{Count, Slice};
use std::sync::Arc;

pub use crate::geom::morton::MortonBits;

fn key_type(bits: MortonBits) -> KeyType {
    match bits {
        MortonBits::Bits30 => KeyType::U32,
        MortonBits::Bits63 => KeyType::U64,
    }
}

/// LBVH build parameters.
#[derive(Clone, Copy, Debug)]
pub struct LbvhParams {
    /// Morton code width (default 30 bits).
    pub morton_bits: MortonBits,
    /// Invocations per workgroup of the bottom-up pass (default 256; a multiple of the
    /// subgroup size, at most 256). Its invocations climb
    /// for very different numbers of levels and a workgroup ends with its last one, so this
    /// trades occupancy against dispatch granularity.
    pub climb_workgroup_size: u32,
}

impl Default for LbvhParams {
    fn default() -> Self {
        Self {
            morton_bits: MortonBits::default(),
            climb_workgroup_size: 256,
        }
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
    /// Values (primitive indices) written.
    pub values_address: u64,
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

/// Push constants of `bottom_up_boxes.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct BottomUpPush {
    /// Vertex positions.
    pub positions_address: u64,
    /// Triangle indices.
    pub triangles_address: u64,
    /// Triangle of each leaf.
    pub leaf_primitives_address: u64,
    /// Internal nodes.
    pub nodes_address: u64,
    /// Leaf parents.
    pub leaf_parents_address: u64,
    /// Visit counters.
    pub counters_address: u64,
    /// Leaf triangles written.
    pub leaf_triangles_address: u64,
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
    /// Keys written.
    pub(crate) keys: u64,
    /// Values written.
    pub(crate) values: u64,
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
        morton_bits: MortonBits,
        points: bool,
        capacity: u32,
    ) -> Result<Self> {
        let codes63 = (morton_bits == MortonBits::Bits63) as u32;
        let tiles = capacity.div_ceil(BOUNDS_TILE).max(1) as u64;
        let reduce_scratch =
            ctx.create_buffer("lbvh bounds partials", 32 * (tiles + 1), MemoryKind::Device)?;
        ctx.submit_and_wait(|rec| {
            rec.fill(&reduce_scratch, 0, 4, 0);
            Ok(())
        })?;
        Ok(Self {
            morton_bits,
            bounds: ctx.pipeline(
                &shaders::LBVH_PRIMITIVE_BOUNDS,
                WORKGROUP_SIZE,
                &[points as u32, BOUNDS_ITEMS_PER_INVOCATION],
            )?,
            morton: ctx.pipeline(
                &shaders::LBVH_MORTON_CODES,
                WORKGROUP_SIZE,
                &[points as u32, codes63],
            )?,
            radix_tree: ctx.pipeline(&shaders::LBVH_RADIX_TREE, WORKGROUP_SIZE, &[codes63])?,
            sort: RadixSort::new(ctx, key_type(morton_bits), capacity)?,
            indirect: IndirectArgs::new(ctx, "lbvh", 3)?,
            reduce_scratch,
            centroid_bounds: ctx.create_buffer("lbvh centroid bounds", 32, MemoryKind::Device)?,
        })
    }

    /// Bytes of a key.
    pub(crate) fn key_bytes(&self) -> u64 {
        self.morton_bits.key_bits() as u64 / 8
    }

    /// Steps 1-2: centroid bounds, then (key, index) pairs.
    pub(crate) fn record_codes(
        &self,
        rec: &mut Recorder,
        buffers: &CodeBuffers,
        count: Count,
    ) -> Result<()> {
        let CodeBuffers {
            positions,
            triangles,
            keys,
            values,
        } = *buffers;
        let (count_address, host_count) = count.push();
        rec.begin_stage("lbvh: bounds");
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

        rec.begin_stage("lbvh: morton codes");
        let groups = self
            .indirect
            .groups_for(rec, 1, &count, WORKGROUP_SIZE, 0)?;
        let push = MortonPush {
            positions_address: positions,
            triangles_address: triangles,
            bounds_address: self.centroid_bounds.address(),
            keys_address: keys,
            values_address: values,
            count_address,
            host_count,
            pad: 0,
        };
        rec.dispatch_groups(&self.morton, &push, &groups)?;
        rec.barrier_compute_to_compute();
        rec.end_stage();
        Ok(())
    }

    /// Step 3: sorts the pairs.
    pub(crate) fn record_sort(
        &self,
        rec: &mut Recorder,
        keys: &Buffer,
        values: &Buffer,
        count: Count,
    ) -> Result<()> {
        rec.begin_stage("lbvh: sort");
        let words = self.key_bytes() / 4;
        let n = count.max() as u64;
        self.sort.record(
            rec,
            Slice::new(keys, 0, n * words),
            Slice::new(values, 0, n),
            count,
            self.morton_bits.key_bits(),
        )?;
        rec.barrier_compute_to_compute();
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
        rec.begin_stage("lbvh: radix tree");
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

/// Builds LBVHs over up to a fixed number of triangles; reusable every frame.
pub struct LbvhBuilder {
    steps: RadixTreeSteps,
    bottom_up: Arc<Pipeline>,
    climb_workgroup_size: u32,
    capacity: u32,
    /// Leaf parents and visit counters (4 + 4 bytes per triangle).
    arena: Buffer,
    keys: Buffer,
}

impl LbvhBuilder {
    /// A builder for up to `capacity` triangles.
    pub fn new(ctx: &Context, params: LbvhParams, capacity: u32) -> Result<Self> {
        // The radix tree's searches double a signed range length: below 2^30 it cannot overflow.
        if capacity == 0 || capacity >= 1 << 30 {
            return Err(Error::InvalidInput(format!(
                "LBVH capacity {capacity}: must be in 1..2^30"
            )));
        }
        let climb = params.climb_workgroup_size;
        let subgroup = ctx.caps().subgroup_size;
        if climb == 0 || climb > WORKGROUP_SIZE || !climb.is_multiple_of(subgroup) {
            return Err(Error::InvalidInput(format!(
                "LBVH climb workgroup size {climb}: must be a multiple of the subgroup size \
                 ({subgroup}) up to {WORKGROUP_SIZE}"
            )));
        }
        let steps = RadixTreeSteps::new(ctx, params.morton_bits, false, capacity)?;
        let n = capacity as u64;
        Ok(Self {
            bottom_up: ctx.pipeline(
                &shaders::LBVH_BOTTOM_UP_BOXES,
                params.climb_workgroup_size,
                &[ctx.caps().ends_divergent_invocations_at_memory_barriers() as u32],
            )?,
            arena: ctx.create_buffer("lbvh arena", 8 * n, MemoryKind::Device)?,
            keys: ctx.create_buffer("lbvh keys", n * steps.key_bytes(), MemoryKind::Device)?,
            steps,
            capacity,
            climb_workgroup_size: params.climb_workgroup_size,
        })
    }

    /// The most triangles a build can take.
    pub fn capacity(&self) -> u32 {
        self.capacity
    }

    /// The sorted Morton codes of the last build (u32 or u64 per triangle, in leaf order),
    /// valid until the next build: for inspection and tests.
    pub fn sorted_keys(&self) -> &Buffer {
        &self.keys
    }

    /// Records the build of `output` over `input`: steps as in the module documentation,
    /// each a profiler stage ("lbvh: bounds", ...). The tree is complete once the command
    /// buffer has executed; an empty input gives an empty tree (every ray misses).
    pub fn record(
        &self,
        rec: &mut Recorder,
        input: &TriangleInput,
        output: &mut Bvh,
    ) -> Result<()> {
        let n = input.count;
        output.set_primitive_count(0);
        if n == 0 {
            return Ok(());
        }
        check_count("LBVH build", &Count::Host(n), self.capacity)?;
        if n > output.capacity() {
            return Err(Error::InvalidInput(format!(
                "LBVH build of {n} triangles into a tree for {}",
                output.capacity()
            )));
        }
        input.triangles.check("LBVH triangles", n as u64, 4)?;
        output.set_primitive_count(n);
        let count = Count::Host(n);
        let steps = &self.steps;
        let values = output.leaf_primitives.address();
        let buffers = CodeBuffers {
            positions: input.positions.address(),
            triangles: input.triangles.address(),
            keys: self.keys.address(),
            values,
        };
        steps.record_codes(rec, &buffers, count)?;
        steps.record_sort(rec, &self.keys, &output.leaf_primitives, count)?;
        let arena = self.arena.address();
        let tree = RadixTreeBuffers {
            keys: self.keys.address(),
            nodes: output.nodes.address(),
            leaf_parents: arena,
            counters: arena + 4 * n as u64,
        };
        steps.record_radix_tree(rec, &tree, count)?;

        rec.begin_stage("lbvh: bottom-up boxes");
        let push = BottomUpPush {
            positions_address: input.positions.address(),
            triangles_address: input.triangles.address(),
            leaf_primitives_address: values,
            nodes_address: output.nodes.address(),
            leaf_parents_address: tree.leaf_parents,
            counters_address: tree.counters,
            leaf_triangles_address: output.leaf_triangles.address(),
            count_address: 0,
            host_count: n,
            pad: 0,
        };
        rec.dispatch(
            &self.bottom_up,
            &push,
            n.div_ceil(self.climb_workgroup_size),
        )?;
        rec.barrier_compute_to_compute();
        rec.end_stage();
        Ok(())
    }
}
