//! The BIH's GPU builder: a work queue driven by the GPU (seed 004 translated to Vulkan, which
//! has neither dynamic parallelism nor a guarantee that one workgroup waits safely for
//! another), in the paper's two stages.
//!
//! **Large-node stage**, in rounds of indirect dispatches. Round `r` holds the large tasks (a
//! node of more than [`BihParams::large_node`] primitives, its run of primitive indices, its
//! region and the box of its centroids) of depth `r`, each cut into slices of [`SLICE`]
//! primitives. Three kernels per round:
//! `glsl/bih/large_bins.comp` (one workgroup per slice: bins, merged into the task's bins in
//! device memory with atomics), `large_split.comp` (one workgroup per task: prices the
//! candidates and the clip node, writes the node, reserves its children with atomics and hands
//! each out as a large task of round `r + 1`, with its slices reserved by one atomic add, or
//! as a small task) and `large_partition.comp` (one workgroup per slice: partitions the run
//! into the next round's index buffer). One-invocation kernels ([`IndirectArgs`]) turn
//! the next round's task and slice counters into its dispatch sizes beside the partition, once
//! the split has made them final, so a round costs three barriers: the CPU never reads a
//! count, and a round with no tasks is five empty dispatches.
//!
//! **Small-node stage**, one dispatch: `glsl/bih/small_nodes.comp` gives every small task a
//! workgroup that builds its whole subtree from a stack in shared memory.
//!
//! How many large rounds are recorded: `max_depth + 1`, one per depth, so that every node is
//! reached however unbalanced the tree: a node at the depth limit is a leaf. Rounds past the
//! deepest large node are empty dispatches (their cost is in BENCHMARKS.md); clip nodes count
//! as levels, so no tighter bound holds without reading a count back. Without any large
//! rounds (`n` at most [`BihParams::large_node`]) the root is a small task.
//!
//! Memory is exact, so a build never overflows: a tree over `n` primitives has at most
//! [`super::max_nodes`] nodes; a round at most `n / (large_node + 1)` large tasks (their runs
//! are disjoint), as many slices as `n / SLICE` plus one per task, and the small tasks at most
//! `n`. Nodes are reserved per node (one atomic add for a split's pair) rather than in the
//! paper's chunks of 32 with headers: the headers let loosely coupled warps find each other's
//! work, which the round's dense task lists already do here, and no chunk is left part empty.

use super::cpu::check_bih;
use super::trace::BihTreeGpu;
use super::{BihParams, BihTree};
use crate::accel::{HostMesh, RayStructure, Structure, StructureKind, Traversable, TreeShape};
use crate::geom::TriangleInput;
use crate::geom::aabb::Aabb;
use crate::prims::WORKGROUP_SIZE;
use crate::prims::indirect::{IndirectArgs, SLOT_BYTES};
use crate::shaders;
use crate::vk::{Buffer, Context, Error, MemoryKind, Pipeline, Recorder, Result};
use std::sync::Arc;

/// Primitives per slice of a large task: one large-node workgroup's share.
pub const SLICE: u32 = 16 * WORKGROUP_SIZE;

/// Invocations of a small-node workgroup: a subtree has at most
/// [`super::MAX_SMALL_SUBTREE`] primitives, and each invocation prices at most one of the 93
/// split candidates.
const SMALL_NODE_WORKGROUP: u32 = 128;

/// Words of order-preserving floats per bin in the large-node stage's low and high buffers.
const BIN_LANES: u64 = 4;

/// `BihTask::flags`: the parent is a clip node.
pub const TASK_BELOW_CLIP: u32 = 1;
/// `BihTask::flags`: the run lives in the second index buffer.
pub const TASK_RUN_IN_SECOND: u32 = 2;
/// `BihTask::flags`: the run is the identity (the root's).
pub const TASK_IDENTITY: u32 = 4;

/// A task of the work queue (`BihTask` in `glsl/bih/queue.glsl`): a node, its run of
/// primitives and its region.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct BihTask {
    /// The node to write.
    pub node: u32,
    /// The run's first entry.
    pub first: u32,
    /// The run's length.
    pub count: u32,
    /// [`TASK_BELOW_CLIP`], [`TASK_RUN_IN_SECOND`], [`TASK_IDENTITY`], and the depth from
    /// bit 8.
    pub flags: u32,
    /// The region's lower corner: the scene box cut by the ancestors' planes (the root's is
    /// made from its primitives).
    pub region_lo: [f32; 3],
    /// The region's upper corner.
    pub region_hi: [f32; 3],
}

/// A task of the large-node stage (`LargeTask` in `glsl/bih/queue.glsl`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct LargeTask {
    /// The node, run and region.
    pub task: BihTask,
    /// The box of the run's centroids (the root's comes from the bounds pass).
    pub centroid_lo: [f32; 3],
    /// Its upper corner.
    pub centroid_hi: [f32; 3],
    /// Its first entry in the round's slice list.
    pub slice_first: u32,
    /// Leaf, split or clip, from the split kernel.
    pub kind: u32,
    /// The split or clip axis.
    pub axis: u32,
    /// A split's bins on the left.
    pub left_bins: u32,
    /// A split's primitives on the left.
    pub left_count: u32,
    /// Left primitives the partition has placed.
    pub left_cursor: u32,
    /// Right primitives the partition has placed.
    pub right_cursor: u32,
    /// Padding.
    pub pad: u32,
}

// 96 bytes, as the scalar layout of `LargeTask` in `glsl/bih/queue.glsl` packs it.
const _: () = assert!(std::mem::size_of::<LargeTask>() == 96);

/// Push constants of `small_nodes.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct SmallNodesPush {
    /// Vertex positions.
    pub positions_address: u64,
    /// Triangles.
    pub triangles_address: u64,
    /// The first index buffer.
    pub first_indices_address: u64,
    /// The second index buffer.
    pub second_indices_address: u64,
    /// The leaves' runs, written.
    pub leaf_primitives_address: u64,
    /// Nodes, written.
    pub nodes_address: u64,
    /// The small tasks.
    pub tasks_address: u64,
    /// The counters.
    pub counters_address: u64,
    /// The scene box, written by a small root.
    pub bounds_address: u64,
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
    /// Padding.
    pub pad: u32,
}

/// Push constants of `large_bins.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct LargeBinsPush {
    /// Vertex positions.
    pub positions_address: u64,
    /// Triangles.
    pub triangles_address: u64,
    /// This round's runs.
    pub indices_address: u64,
    /// This round's large tasks.
    pub tasks_address: u64,
    /// This round's slices (their tasks).
    pub slices_address: u64,
    /// Bin counts per task slot.
    pub bin_counts_address: u64,
    /// Bin lows per task slot.
    pub bin_lows_address: u64,
    /// Bin highs per task slot.
    pub bin_highs_address: u64,
    /// The root's centroid box and box (ordered uints).
    pub root_bounds_address: u64,
    /// The counters.
    pub counters_address: u64,
    /// Index of this round's slice counter.
    pub slice_counter: u32,
    /// The round.
    pub round: u32,
    /// Primitives per slice.
    pub slice_size: u32,
    /// 1: reduce the root's bounds; 0: bin.
    pub bounds_mode: u32,
}

/// Push constants of `large_split.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct LargeSplitPush {
    /// This round's large tasks (decisions written).
    pub tasks_address: u64,
    /// The next round's large tasks, written.
    pub next_tasks_address: u64,
    /// The next round's slices, written.
    pub next_slices_address: u64,
    /// The small tasks, appended.
    pub small_tasks_address: u64,
    /// Nodes, written.
    pub nodes_address: u64,
    /// Bin counts per task slot.
    pub bin_counts_address: u64,
    /// Bin lows per task slot.
    pub bin_lows_address: u64,
    /// Bin highs per task slot.
    pub bin_highs_address: u64,
    /// The root's centroid box and box (ordered uints).
    pub root_bounds_address: u64,
    /// The scene box, written in round 0.
    pub bounds_address: u64,
    /// The counters.
    pub counters_address: u64,
    /// Index of this round's large task counter.
    pub task_counter: u32,
    /// The round.
    pub round: u32,
    /// Primitives per slice.
    pub slice_size: u32,
    /// Children of more primitives stay in the large-node stage.
    pub large_threshold: u32,
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
    /// Padding.
    pub pad: u32,
}

/// Push constants of `large_partition.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct LargePartitionPush {
    /// Vertex positions.
    pub positions_address: u64,
    /// Triangles.
    pub triangles_address: u64,
    /// This round's runs.
    pub indices_in_address: u64,
    /// The next round's runs, written.
    pub indices_out_address: u64,
    /// The leaves' runs, written.
    pub leaf_primitives_address: u64,
    /// This round's large tasks, decided.
    pub tasks_address: u64,
    /// This round's slices (their tasks).
    pub slices_address: u64,
    /// The counters.
    pub counters_address: u64,
    /// Index of this round's slice counter.
    pub slice_counter: u32,
    /// Primitives per slice.
    pub slice_size: u32,
}

/// The counter of small tasks; round `r`'s large tasks and slices follow at
/// [`large_task_counter`] and the word after it. Word 0 counts nodes.
const SMALL_TASK_COUNTER: u32 = 1;

/// The counter of round `round`'s large tasks (its slices are counted in the next word).
fn large_task_counter(round: u32) -> u32 {
    2 + 2 * round
}

/// Builds BIHs over up to a fixed number of triangles; reusable every frame.
pub struct BihBuilder {
    params: BihParams,
    capacity: u32,
    small_nodes: Arc<Pipeline>,
    large_bins: Arc<Pipeline>,
    large_split: Arc<Pipeline>,
    large_partition: Arc<Pipeline>,
    indirect: IndirectArgs,
    /// The runs of even and odd rounds.
    indices: [Buffer; 2],
    /// Small tasks.
    small_tasks: Buffer,
    /// Large tasks of even and odd rounds.
    large_tasks: [Buffer; 2],
    /// Slices (their task) of even and odd rounds.
    slices: [Buffer; 2],
    /// The large tasks' bins: counts, lows, highs.
    bins: [Buffer; 3],
    /// The root's centroid box and box.
    root_bounds: Buffer,
    /// `[nodes, small tasks, (large tasks, slices) per round]`, reset by every build.
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
        let large = Self::max_large_tasks(capacity, &params) as u64;
        let slices = n / SLICE as u64 + large + 1;
        let bins = large * 3 * params.bins as u64;
        let task_bytes = std::mem::size_of::<BihTask>() as u64;
        let large_bytes = std::mem::size_of::<LargeTask>() as u64;
        let constants = [("BINS", params.bins)];
        let pipeline = |kernel| ctx.pipeline(kernel, WORKGROUP_SIZE, &constants);
        Ok(Self {
            small_nodes: ctx.pipeline(
                &shaders::BIH_SMALL_NODES,
                SMALL_NODE_WORKGROUP,
                &constants,
            )?,
            large_bins: pipeline(&shaders::BIH_LARGE_BINS)?,
            large_split: pipeline(&shaders::BIH_LARGE_SPLIT)?,
            large_partition: pipeline(&shaders::BIH_LARGE_PARTITION)?,
            indirect: IndirectArgs::new(ctx, "bih rounds", 2 * params.max_depth + 3)?,
            indices: [
                device("bih indices 0", 4 * n)?,
                device("bih indices 1", 4 * n)?,
            ],
            small_tasks: device("bih small tasks", task_bytes * n)?,
            large_tasks: [
                device("bih large tasks 0", large_bytes * large)?,
                device("bih large tasks 1", large_bytes * large)?,
            ],
            slices: [
                device("bih slices 0", 4 * slices)?,
                device("bih slices 1", 4 * slices)?,
            ],
            bins: [
                device("bih bin counts", 4 * bins)?,
                device("bih bin lows", 4 * BIN_LANES * bins)?,
                device("bih bin highs", 4 * BIN_LANES * bins)?,
            ],
            root_bounds: device("bih root bounds", 4 * 12)?,
            counters: device(
                "bih counters",
                4 * large_task_counter(params.max_depth + 1) as u64,
            )?,
            params,
            capacity,
        })
    }

    /// The most large tasks one round can hold over `capacity` primitives (their runs are
    /// disjoint and longer than `large_node`), at least one (the root's slot).
    fn max_large_tasks(capacity: u32, params: &BihParams) -> u32 {
        capacity / (params.large_node + 1) + 1
    }

    /// The large-node rounds recorded for `n` primitives (see the module's documentation).
    pub fn large_rounds(&self, n: u32) -> u32 {
        if n <= self.params.large_node {
            return 0;
        }
        self.params.max_depth + 1
    }

    /// The builder's parameters.
    pub fn params(&self) -> &BihParams {
        &self.params
    }

    /// Device bytes of the builder's scratch (the tree's own buffers excluded).
    pub fn scratch_bytes(&self) -> u64 {
        let buffers = self
            .indices
            .iter()
            .chain(&self.large_tasks)
            .chain(&self.slices);
        buffers.chain(&self.bins).map(Buffer::size).sum::<u64>()
            + self.small_tasks.size()
            + self.root_bounds.size()
            + self.counters.size()
    }

    /// A tree sized for this builder's capacity, to build into.
    pub fn allocate_tree(&self, ctx: &Context) -> Result<BihTreeGpu> {
        BihTreeGpu::allocate(ctx, self.capacity, self.params.max_leaf)
    }

    /// Records the build of `tree` over `input`: the counters reset and the root's task
    /// written, the large-node rounds (profiler stage "bih: large nodes") and the small-node
    /// stage ("bih: small nodes"). An empty input gives an empty tree (every ray misses).
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
        let rounds = self.large_rounds(n);
        self.record_reset(rec, n, rounds);
        rec.begin_stage("bih: large nodes");
        self.record_sizing(rec, 0, rounds)?;
        rec.barrier_compute_to_indirect();
        for round in 0..rounds {
            self.record_large_round(rec, input, tree, round, rounds)?;
        }
        rec.end_stage();
        rec.begin_stage("bih: small nodes");
        self.record_small_nodes(rec, input, tree, rounds)?;
        rec.end_stage();
        Ok(())
    }

    /// The counters (one node: the root), and the root's task: a large task of round 0 with
    /// all its slices when there are large rounds, else a small task.
    fn record_reset(&self, rec: &mut Recorder, n: u32, rounds: u32) {
        // At most 133 words: within vkCmdUpdateBuffer's 64 KiB.
        let mut counters = vec![0u32; (self.counters.size() / 4) as usize];
        counters[0] = 1;
        let root = BihTask {
            count: n,
            flags: TASK_IDENTITY,
            ..BihTask::default()
        };
        if rounds == 0 {
            counters[SMALL_TASK_COUNTER as usize] = 1;
            rec.update_buffer(&self.small_tasks, 0, &[root]);
        } else {
            let first = large_task_counter(0) as usize;
            counters[first] = 1;
            counters[first + 1] = n.div_ceil(SLICE);
            let large = LargeTask {
                task: root,
                ..LargeTask::default()
            };
            rec.update_buffer(&self.large_tasks[0], 0, &[large]);
            rec.fill(&self.slices[0], 0, 4 * n.div_ceil(SLICE) as u64, 0);
            let identity: Vec<u32> = (0..12)
                .map(|i| if (i / 3) % 2 == 0 { u32::MAX } else { 0 })
                .collect();
            rec.update_buffer(&self.root_bounds, 0, &identity);
            let [counts, lows, highs] = &self.bins;
            rec.fill(counts, 0, counts.size(), 0);
            rec.fill(lows, 0, lows.size(), u32::MAX);
            rec.fill(highs, 0, highs.size(), 0);
        }
        rec.update_buffer(&self.counters, 0, &counters);
        rec.barrier_transfer_to_compute();
    }

    /// The dispatch sizes of the large-node round `round` from its task and slice counters
    /// (slots `2 round` and `2 round + 1`), or after the last one of the small-node stage
    /// from its task counter (slot `2 rounds`), without the barrier.
    fn record_sizing(&self, rec: &mut Recorder, round: u32, rounds: u32) -> Result<()> {
        let counter_address = |index: u32| self.counters.address() + 4 * index as u64;
        if round == rounds {
            let small = counter_address(SMALL_TASK_COUNTER);
            return self
                .indirect
                .record_unfenced(rec, 2 * rounds, (small, self.capacity, 1, 0));
        }
        let counter = large_task_counter(round);
        let max_tasks = Self::max_large_tasks(self.capacity, &self.params);
        let max_slices = (self.slices[0].size() / 4) as u32;
        let tasks = (counter_address(counter), max_tasks, 1, 0);
        self.indirect.record_unfenced(rec, 2 * round, tasks)?;
        let slices = (counter_address(counter + 1), max_slices, 1, 0);
        self.indirect.record_unfenced(rec, 2 * round + 1, slices)
    }

    /// Large-node round `round` of `rounds` (its dispatch sizes written): (in round 0, the
    /// root's bounds pass) the bins, the split, then the partition beside the next round's
    /// (or the small-node stage's) sizing, for which the split's counters are final: three
    /// barriers a round.
    fn record_large_round(
        &self,
        rec: &mut Recorder,
        input: &TriangleInput,
        tree: &BihTreeGpu,
        round: u32,
        rounds: u32,
    ) -> Result<()> {
        if round == 0 {
            self.record_large_bins(rec, input, round, 1);
            rec.barrier_compute_to_compute();
        }
        self.record_large_bins(rec, input, round, 0);
        rec.barrier_compute_to_compute();
        self.record_large_split(rec, tree, round);
        rec.barrier_compute_to_compute();
        self.record_large_partition(rec, input, tree, round);
        self.record_sizing(rec, round + 1, rounds)?;
        rec.barrier_compute_to_indirect();
        Ok(())
    }

    /// The buffers of round `round`'s tasks, slices and indices (`now`) and of the next
    /// round's (`next`): the two halves take turns.
    fn halves(round: u32) -> (usize, usize) {
        ((round % 2) as usize, ((round + 1) % 2) as usize)
    }

    /// The offset of indirect slot `slot`'s dispatch size.
    fn slot_offset(slot: u32) -> u64 {
        slot as u64 * SLOT_BYTES
    }

    /// `large_bins` over round `round`'s slices, without a barrier: the root's bounds
    /// (`bounds_mode` 1, round 0 only) or the bins of every large task (`bounds_mode` 0).
    fn record_large_bins(
        &self,
        rec: &mut Recorder,
        input: &TriangleInput,
        round: u32,
        bounds_mode: u32,
    ) {
        let (now, _) = Self::halves(round);
        let [counts, lows, highs] = &self.bins;
        let push = LargeBinsPush {
            positions_address: input.positions.address(),
            triangles_address: input.triangles.address(),
            indices_address: self.indices[now].address(),
            tasks_address: self.large_tasks[now].address(),
            slices_address: self.slices[now].address(),
            bin_counts_address: counts.address(),
            bin_lows_address: lows.address(),
            bin_highs_address: highs.address(),
            root_bounds_address: self.root_bounds.address(),
            counters_address: self.counters.address(),
            slice_counter: large_task_counter(round) + 1,
            round,
            slice_size: SLICE,
            bounds_mode,
        };
        let offset = Self::slot_offset(2 * round + 1);
        rec.dispatch_indirect(&self.large_bins, &push, self.indirect.buffer(), offset);
    }

    /// `large_split` over round `round`'s tasks, without a barrier: each task's decision
    /// from its bins, its node written, its children handed out as the next round's large
    /// tasks or as small tasks.
    fn record_large_split(&self, rec: &mut Recorder, tree: &BihTreeGpu, round: u32) {
        let (now, next) = Self::halves(round);
        let [counts, lows, highs] = &self.bins;
        let params = &self.params;
        let push = LargeSplitPush {
            tasks_address: self.large_tasks[now].address(),
            next_tasks_address: self.large_tasks[next].address(),
            next_slices_address: self.slices[next].address(),
            small_tasks_address: self.small_tasks.address(),
            nodes_address: tree.nodes.address(),
            bin_counts_address: counts.address(),
            bin_lows_address: lows.address(),
            bin_highs_address: highs.address(),
            root_bounds_address: self.root_bounds.address(),
            bounds_address: tree.bounds.address(),
            counters_address: self.counters.address(),
            task_counter: large_task_counter(round),
            round,
            slice_size: SLICE,
            large_threshold: params.large_node,
            max_depth: params.max_depth,
            max_leaf: params.max_leaf,
            traversal_cost: params.traversal_cost,
            intersection_cost: params.intersection_cost,
            clip_nodes: params.clip_nodes as u32,
            pad: 0,
        };
        let offset = Self::slot_offset(2 * round);
        rec.dispatch_indirect(&self.large_split, &push, self.indirect.buffer(), offset);
    }

    /// `large_partition` over round `round`'s slices, without a barrier: each task's
    /// decision carried out on its slices' primitives (into the next round's indices, or
    /// its leaf's run of the leaf primitive list).
    fn record_large_partition(
        &self,
        rec: &mut Recorder,
        input: &TriangleInput,
        tree: &BihTreeGpu,
        round: u32,
    ) {
        let (now, next) = Self::halves(round);
        let push = LargePartitionPush {
            positions_address: input.positions.address(),
            triangles_address: input.triangles.address(),
            indices_in_address: self.indices[now].address(),
            indices_out_address: self.indices[next].address(),
            leaf_primitives_address: tree.leaf_primitives.address(),
            tasks_address: self.large_tasks[now].address(),
            slices_address: self.slices[now].address(),
            counters_address: self.counters.address(),
            slice_counter: large_task_counter(round) + 1,
            slice_size: SLICE,
        };
        let offset = Self::slot_offset(2 * round + 1);
        rec.dispatch_indirect(&self.large_partition, &push, self.indirect.buffer(), offset);
    }

    /// The small-node stage: one workgroup per small task (its dispatch size written after
    /// the last large-node round, or before the stage when there are none).
    fn record_small_nodes(
        &self,
        rec: &mut Recorder,
        input: &TriangleInput,
        tree: &BihTreeGpu,
        rounds: u32,
    ) -> Result<()> {
        let slot = 2 * rounds;
        let params = &self.params;
        let push = SmallNodesPush {
            positions_address: input.positions.address(),
            triangles_address: input.triangles.address(),
            first_indices_address: self.indices[0].address(),
            second_indices_address: self.indices[1].address(),
            leaf_primitives_address: tree.leaf_primitives.address(),
            nodes_address: tree.nodes.address(),
            tasks_address: self.small_tasks.address(),
            counters_address: self.counters.address(),
            bounds_address: tree.bounds.address(),
            max_depth: params.max_depth,
            max_leaf: params.max_leaf,
            traversal_cost: params.traversal_cost,
            intersection_cost: params.intersection_cost,
            clip_nodes: params.clip_nodes as u32,
            pad: 0,
        };
        let offset = slot as u64 * SLOT_BYTES;
        rec.dispatch_indirect(&self.small_nodes, &push, self.indirect.buffer(), offset);
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
