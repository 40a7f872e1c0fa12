//! The BIH's GPU builder: a work queue driven by the GPU in rounds of indirect dispatches
//! (seed 004 translated to Vulkan, which has neither dynamic parallelism nor a guarantee that
//! one workgroup waits safely for another).
//!
//! Round `r` holds the tasks (a node, its run of primitive indices and its region) of depth
//! `r`. One workgroup per task (`glsl/bih/split.comp`) bins the node's primitives, prices the
//! binned-SAH candidates and the clip node, and either writes a leaf or reserves its child
//! nodes (two adjacent ones for a split, one for a clip node) and their tasks of round
//! `r + 1` with atomics, partitioning the run stably into the next round's index buffer.
//! Before each round, a one-invocation kernel ([`IndirectArgs`]) turns the round's task
//! counter into the dispatch's size: the CPU never reads a count, and a round with no tasks is
//! an empty dispatch. `max_depth + 1` rounds are recorded; the last makes every task a leaf.
//!
//! Memory is exact, so a build never overflows: a tree over `n` primitives has at most
//! [`super::max_nodes`] nodes, and a round at most `n` tasks. Not yet here (seed 004): chunks of 32 nodes
//! with headers (nodes are reserved in pairs), and the large-node stage that spreads one node
//! over many workgroups; every node is one workgroup's, so the first levels, with few large
//! nodes, use few of the GPU's cores.

use super::cpu::check_bih;
use super::trace::BihTreeGpu;
use super::{BihParams, BihTree};
use crate::accel::{HostMesh, RayStructure, Structure, StructureKind, Traversable, TreeShape};
use crate::geom::TriangleInput;
use crate::geom::aabb::Aabb;
use crate::prims::WORKGROUP_SIZE;
use crate::prims::indirect::IndirectArgs;
use crate::shaders;
use crate::vk::{Buffer, Context, Error, MemoryKind, Pipeline, Recorder, Result};
use std::sync::Arc;

/// Push constants of `split.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct BihSplitPush {
    /// Vertex positions.
    pub positions_address: u64,
    /// Triangles.
    pub triangles_address: u64,
    /// The runs of this round's tasks.
    pub indices_in_address: u64,
    /// The runs of the next round's tasks, written.
    pub indices_out_address: u64,
    /// The leaves' runs, written.
    pub leaf_primitives_address: u64,
    /// Nodes, written.
    pub nodes_address: u64,
    /// This round's tasks.
    pub tasks_in_address: u64,
    /// The next round's tasks, written.
    pub tasks_out_address: u64,
    /// `[nodes, tasks of round 0, tasks of round 1, ...]`.
    pub counters_address: u64,
    /// The scene box, written by the root.
    pub bounds_address: u64,
    /// The round (the depth of its nodes).
    pub round: u32,
    /// Nodes this deep are leaves.
    pub max_depth: u32,
    /// Nodes of at most this many primitives are leaves.
    pub max_leaf: u32,
    /// Ct.
    pub traversal_cost: f32,
    /// Ci.
    pub intersection_cost: f32,
    /// 1 when clip nodes may be made.
    pub clip_nodes: u32,
}

/// A task of the work queue (`BihTask` in `split.comp`): a node, its run of primitives and
/// its region.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct BihTask {
    /// The node to write.
    pub node: u32,
    /// The run's first entry.
    pub first: u32,
    /// The run's length.
    pub count: u32,
    /// 1 when the parent is a clip node (the node may not be one).
    pub below_clip: u32,
    /// The region's lower corner: the scene box cut by the ancestors' planes (the root's is
    /// made from its primitives).
    pub region_lo: [f32; 3],
    /// The region's upper corner.
    pub region_hi: [f32; 3],
}

/// Builds BIHs over up to a fixed number of triangles; reusable every frame.
pub struct BihBuilder {
    params: BihParams,
    capacity: u32,
    split: Arc<Pipeline>,
    indirect: IndirectArgs,
    /// The runs of even and odd rounds.
    indices: [Buffer; 2],
    /// The tasks of even and odd rounds.
    tasks: [Buffer; 2],
    /// `[nodes, tasks per round]`, reset by every build.
    counters: Buffer,
}

impl BihBuilder {
    /// A builder for up to `capacity` triangles.
    pub fn new(ctx: &Context, params: BihParams, capacity: u32) -> Result<Self> {
        params.check().map_err(Error::InvalidInput)?;
        if capacity == 0 || capacity >= 1 << 28 {
            return Err(Error::InvalidInput(format!(
                "BIH capacity {capacity}: must be in 1..2^28"
            )));
        }
        let device = |name: &str, bytes: u64| ctx.create_buffer(name, bytes, MemoryKind::Device);
        let n = capacity as u64;
        let task_bytes = std::mem::size_of::<BihTask>() as u64;
        Ok(Self {
            split: ctx.pipeline(
                &shaders::BIH_SPLIT,
                WORKGROUP_SIZE,
                &[("BINS", params.bins)],
            )?,
            indirect: IndirectArgs::new(ctx, "bih rounds", params.max_depth + 1)?,
            indices: [
                device("bih indices 0", 4 * n)?,
                device("bih indices 1", 4 * n)?,
            ],
            tasks: [
                device("bih tasks 0", task_bytes * n)?,
                device("bih tasks 1", task_bytes * n)?,
            ],
            counters: device("bih counters", 4 * (params.max_depth as u64 + 3))?,
            params,
            capacity,
        })
    }

    /// The builder's parameters.
    pub fn params(&self) -> &BihParams {
        &self.params
    }

    /// Device bytes of the builder's scratch (the tree's own buffers excluded).
    pub fn scratch_bytes(&self) -> u64 {
        let pairs = self.indices.iter().chain(&self.tasks);
        pairs.map(Buffer::size).sum::<u64>() + self.counters.size()
    }

    /// A tree sized for this builder's capacity, to build into.
    pub fn allocate_tree(&self, ctx: &Context) -> Result<BihTreeGpu> {
        BihTreeGpu::allocate(ctx, self.capacity, self.params.max_leaf)
    }

    /// Records the build of `tree` over `input`: the counters reset and the root's task
    /// written, then `max_depth + 1` rounds (profiler stage "bih: rounds"). An empty input
    /// gives an empty tree (every ray misses).
    ///
    /// Synchronisation: waits for all earlier work in the command buffer (a full barrier), so
    /// the caller's writes of the input are ordered; keep earlier readers of the tree from
    /// overlapping (one build per tree in flight). Ends with a compute → compute barrier, so
    /// compute work recorded after it reads the finished tree. Runs on the queue family
    /// `rec`'s command buffer is submitted to (compute).
    pub fn record(
        &self,
        rec: &mut Recorder,
        input: &TriangleInput,
        tree: &mut BihTreeGpu,
    ) -> Result<()> {
        let n = input.count;
        if n > self.capacity || n > tree.capacity() {
            return Err(Error::InvalidInput(format!(
                "BIH build of {n} triangles; the builder was made for {} and the tree for {}",
                self.capacity,
                tree.capacity()
            )));
        }
        tree.set_primitive_count(n);
        if n == 0 {
            return Ok(());
        }
        input.positions.check("BIH build positions", 1, 4)?;
        input.triangles.check("BIH build triangles", n as u64, 4)?;
        rec.barrier_after_earlier_work();
        self.record_reset(rec, n);
        rec.begin_stage("bih: rounds");
        for round in 0..=self.params.max_depth {
            self.record_round(rec, input, tree, round)?;
        }
        rec.end_stage();
        Ok(())
    }

    /// The counters: one node (the root), one task in round 0 (the root over every
    /// primitive), none in the others.
    fn record_reset(&self, rec: &mut Recorder, n: u32) {
        // At most 67 words: within vkCmdUpdateBuffer's 64 KiB.
        let mut counters = vec![0u32; (self.counters.size() / 4) as usize];
        counters[..2].copy_from_slice(&[1, 1]);
        rec.update_buffer(&self.counters, 0, &counters);
        let root = BihTask {
            count: n,
            ..BihTask::default()
        };
        rec.update_buffer(&self.tasks[0], 0, &[root]);
        rec.barrier_transfer_to_compute();
    }

    /// Round `round`: its dispatch sized from its task counter, then `split.comp`.
    fn record_round(
        &self,
        rec: &mut Recorder,
        input: &TriangleInput,
        tree: &BihTreeGpu,
        round: u32,
    ) -> Result<()> {
        let count_address = self.counters.address() + 4 * (1 + round as u64);
        self.indirect
            .record(rec, round, count_address, self.capacity, 1, 0)?;
        let (now, next) = ((round % 2) as usize, ((round + 1) % 2) as usize);
        let params = &self.params;
        let push = BihSplitPush {
            positions_address: input.positions.address(),
            triangles_address: input.triangles.address(),
            indices_in_address: self.indices[now].address(),
            indices_out_address: self.indices[next].address(),
            leaf_primitives_address: tree.leaf_primitives.address(),
            nodes_address: tree.nodes.address(),
            tasks_in_address: self.tasks[now].address(),
            tasks_out_address: self.tasks[next].address(),
            counters_address: self.counters.address(),
            bounds_address: tree.bounds.address(),
            round,
            max_depth: params.max_depth,
            max_leaf: params.max_leaf,
            traversal_cost: params.traversal_cost,
            intersection_cost: params.intersection_cost,
            clip_nodes: params.clip_nodes as u32,
        };
        let offset = round as u64 * crate::prims::indirect::SLOT_BYTES;
        rec.dispatch_indirect(&self.split, &push, self.indirect.buffer(), offset);
        rec.barrier_compute_to_compute();
        Ok(())
    }

    /// The number of nodes the last build wrote (after its submission completed).
    pub fn node_count(&self, ctx: &Context) -> Result<u32> {
        Ok(ctx.download::<u32>(&self.counters, 0, 1)?[0])
    }
}

/// A BIH with its builder, behind [`RayStructure`].
pub struct BihStructure {
    builder: BihBuilder,
    tree: BihTreeGpu,
}

impl BihStructure {
    /// A BIH built with `params` over up to `triangles` triangles.
    pub fn new(ctx: &Context, params: BihParams, triangles: u32) -> Result<Self> {
        let builder = BihBuilder::new(ctx, params, triangles)?;
        Ok(Self {
            tree: builder.allocate_tree(ctx)?,
            builder,
        })
    }

    /// The tree the last build wrote.
    pub fn tree(&self) -> &BihTreeGpu {
        &self.tree
    }

    /// The builder.
    pub fn builder(&self) -> &BihBuilder {
        &self.builder
    }

    /// The tree the last build wrote, on the host (after its submission completed).
    pub fn download(&self, ctx: &Context) -> Result<BihTree> {
        let n = self.tree.primitive_count() as usize;
        if n == 0 {
            return Ok(BihTree {
                nodes: vec![super::BihNode::leaf(0, 0)],
                ..BihTree::default()
            });
        }
        let nodes = self.builder.node_count(ctx)? as usize;
        let bounds: Vec<Aabb> = ctx.download(&self.tree.bounds, 0, 1)?;
        Ok(BihTree {
            nodes: ctx.download(&self.tree.nodes, 0, nodes)?,
            leaf_primitives: ctx.download(&self.tree.leaf_primitives, 0, n)?,
            bounds: (bounds[0].min, bounds[0].max),
        })
    }
}

impl Structure for BihStructure {
    fn kind(&self) -> StructureKind {
        StructureKind::Bih
    }

    fn tree_bytes(&self) -> u64 {
        self.tree.bytes()
    }

    fn describe(
        &self,
        ctx: &Context,
        _slot: usize,
        mesh: HostMesh,
    ) -> Result<std::result::Result<TreeShape, String>> {
        let tree = self.download(ctx)?;
        let params = self.builder.params();
        Ok(check_bih(mesh.positions, mesh.triangles, &tree, params).map(|s| s.shape(params)))
    }
}

impl RayStructure for BihStructure {
    fn record_build(
        &mut self,
        rec: &mut Recorder,
        input: &TriangleInput,
        _slot: usize,
    ) -> Result<()> {
        self.builder.record(rec, input, &mut self.tree)
    }

    fn traversable<'a>(&'a self, input: &TriangleInput<'a>) -> Box<dyn Traversable + 'a> {
        Box::new(self.tree.over(input))
    }
}
