//! The LBVH builder (Karras 2012): every frame from scratch, in five GPU steps.
//!
//! 1. `glsl/radix_tree/primitive_bounds.comp`: the bounds of the triangles' box centres, in one
//!    dispatch.
//! 2. `glsl/radix_tree/morton_codes.comp`: 30- or 63-bit Morton code of each box centre (recomputed
//!    from the vertices: cheaper than storing a box per triangle).
//! 3. [`crate::prims::radix_sort::RadixSort`] of (code, triangle) pairs: the sorted values are the leaf order.
//! 4. `glsl/radix_tree/internal_nodes.comp`: the whole binary radix tree in one dispatch, with parent
//!    links; duplicate codes are split by index.
//! 5. `glsl/bvh/bottom_up_boxes.comp`: boxes bottom-up, each internal node visited once (the
//!    second child to arrive continues), and each leaf's triangle copied in leaf order.
//!
//! The output is a [`Bvh`] in the format of [`crate::accel::bvh`]. Scratch memory, sized for
//! the capacity: the keys, the sort's own, and an arena for the leaf parents and visit
//! counters of steps 4-5.

use super::Bvh;
use super::cpu::check_invariants;
use crate::accel::radix_tree::{CodeBuffers, RadixTreeBuffers, RadixTreeSteps};
use crate::accel::{HostMesh, RayStructure, Structure, StructureKind, Traversable, TreeShape};
use crate::geom::TriangleInput;
use crate::geom::aabb::triangle_bounds;
use crate::prims::{WORKGROUP_SIZE, check_count};
use crate::shaders;
use crate::vk::Count;
use crate::vk::{Buffer, Context, Error, MemoryKind, Pipeline, Recorder, Result};
use std::sync::Arc;

use crate::geom::morton::MortonBits;

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
        let steps = RadixTreeSteps::new(ctx, "lbvh", params.morton_bits, false, capacity)?;
        let n = capacity as u64;
        Ok(Self {
            bottom_up: ctx.pipeline(
                &shaders::BVH_BOTTOM_UP_BOXES,
                params.climb_workgroup_size,
                &[(
                    "UNIFORM_CLIMB",
                    ctx.caps().ends_divergent_invocations_at_memory_barriers() as u32,
                )],
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
    ///
    /// Synchronisation: records no wait for earlier work: the caller orders its writes of the
    /// input before (a transfer or compute → compute barrier) and keeps earlier readers of
    /// the tree from overlapping (one build per tree in flight). Ends with a compute →
    /// compute barrier, so compute work recorded after it reads the finished tree; readers
    /// in other stages need their own barrier. Runs on the queue family `rec`'s command buffer
    /// is submitted to (compute).
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

/// An LBVH with its builder, behind [`RayStructure`].
pub struct LbvhStructure {
    builder: LbvhBuilder,
    bvh: Bvh,
}

impl LbvhStructure {
    /// An LBVH built with `params` over up to `triangles` triangles.
    pub fn new(ctx: &Context, params: LbvhParams, triangles: u32) -> Result<Self> {
        Ok(Self {
            builder: LbvhBuilder::new(ctx, params, triangles)?,
            bvh: Bvh::new(ctx, triangles)?,
        })
    }

    /// The tree the last build wrote.
    pub fn bvh(&self) -> &Bvh {
        &self.bvh
    }
}

impl Structure for LbvhStructure {
    fn kind(&self) -> StructureKind {
        StructureKind::Lbvh
    }

    fn tree_bytes(&self) -> u64 {
        self.bvh.bytes()
    }

    fn describe(
        &self,
        ctx: &Context,
        _slot: usize,
        mesh: HostMesh,
    ) -> Result<std::result::Result<TreeShape, String>> {
        let (nodes, leaves) = self.bvh.download(ctx)?;
        let boxes = triangle_bounds(mesh.positions, mesh.triangles);
        Ok(check_invariants(&nodes, &leaves, &boxes).map(|stats| stats.shape()))
    }
}

impl RayStructure for LbvhStructure {
    fn record_build(
        &mut self,
        rec: &mut Recorder,
        input: &TriangleInput,
        _slot: usize,
    ) -> Result<()> {
        self.builder.record(rec, input, &mut self.bvh)
    }

    fn traversable<'a>(&'a self, _input: &TriangleInput<'a>) -> Box<dyn Traversable + 'a> {
        Box::new(&self.bvh)
    }
}
