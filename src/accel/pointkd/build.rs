//! The point kd-tree built on the GPU (seed 000 §5.1), level by level with no CPU in the loop:
//!
//! 1. **pointkd: sort** (`keys.comp`, three radix sorts): each axis's list of point indices in
//!    coordinate order; `init.comp` makes the root's task (its cell the points' box, read from
//!    the lists' ends) and estimates `R` when none is given.
//! 2. **pointkd: large nodes**, one round per level up to the depth limit, sized on the GPU:
//!    `split.comp` decides each task (leaf, small task, or a spatial-median or empty-space split
//!    whose children are allocated as a pair); `flags.comp`, a scan and `scatter.comp`
//!    partition the three lists stably within every split node, so each list stays sorted within
//!    each child (node boxes in O(1), a split in one pass, as the paper keeps them);
//!    `round_end.comp` moves to the next level.
//! 3. **pointkd: small nodes** (`small.comp`): one invocation per node of at most `T` points
//!    builds its subtree by exact VVH over its points' coordinates, with bit masks.
//! 4. **pointkd: entries** (`entries.comp`): positions and indices in leaf order, and the
//!    tree's header (node count and `R`) for the queries.
//!
//! The decisions are those of [`super::cpu::build`], priced in the same f32 arithmetic, so the
//! trees are the same up to the numbering of nodes and the order of points within a leaf.

use super::knn::PointKdTreeGpu;
use super::{MAX_DEPTH, PointKdParams};
use crate::accel::{HostMesh, PointStructure, Structure, StructureKind, TreeShape};
use crate::geom::PointInput;
use crate::prims::WORKGROUP_SIZE;
use crate::prims::indirect::IndirectArgs;
use crate::prims::radix_sort::{KeyType, RadixSort};
use crate::prims::scan::{Scan, ScanKind};
use crate::shaders;
use crate::vk::Slice;
use crate::vk::{Buffer, Context, Count, Error, Kernel, MemoryKind, Pipeline, Recorder, Result};
use std::sync::Arc;

/// The build kernels' shared refs (`PointKdBuildRefs` in `glsl/pointkd/build.glsl`), held in
/// a buffer: they exceed the push constants' 128 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub struct PointKdBuildRefs {
    /// Positions.
    pub positions: u64,
    /// The lists, current and next (parity chosen on the GPU).
    pub lists: [u64; 2],
    /// Task per list position, current and next.
    pub owners: [u64; 2],
    /// Task queues.
    pub tasks: [u64; 2],
    /// Split per task.
    pub splits: u64,
    /// Small tasks.
    pub small: u64,
    /// Scan input.
    pub flags: u64,
    /// Scan output.
    pub offsets: u64,
    /// Sort keys.
    pub keys: u64,
    /// Out: nodes.
    pub nodes: u64,
    /// Out: entries.
    pub entries: u64,
    /// [`PointKdBuildState`].
    pub state: u64,
    /// The tree's [`super::knn::PointKdHeader`].
    pub header: u64,
    /// The point count on the device, or 0.
    pub count_address: u64,
    /// Points (with `count_address`: their bound).
    pub count: u32,
    /// List length.
    pub stride: u32,
    /// Node capacity.
    pub node_capacity: u32,
    /// Task capacity per level.
    pub task_capacity: u32,
    /// Small task capacity.
    pub small_capacity: u32,
    /// `T`.
    pub large_node: u32,
    /// Leaf size without pricing.
    pub max_leaf: u32,
    /// Depth limit.
    pub max_depth: u32,
    /// `Ce`.
    pub empty_space: f32,
    /// `Cts`.
    pub traversal_cost: f32,
    /// `R` (0: estimated on the GPU).
    pub radius: f32,
    /// Neighbours `R` is estimated for.
    pub k_estimate: u32,
    /// 1 when `R` was not given: small nodes price for their own density.
    pub local_radius: u32,
    /// Padding.
    pub pad: u32,
}

/// The build's counters (`PointKdBuildState`), read back after a build.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct PointKdBuildState {
    /// Nodes allocated.
    pub node_count: u32,
    /// Large tasks of the level.
    pub tasks: u32,
    /// Tasks appended for the next level.
    pub next_tasks: u32,
    /// Small tasks.
    pub small_tasks: u32,
    /// Elements to partition this level.
    pub to_partition: u32,
    /// Which lists are current.
    pub parity: u32,
    /// Which task queue is current.
    pub queue: u32,
    /// A capacity was exceeded.
    pub overflow: u32,
}

/// Push constants of every build kernel: the refs' address.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct PointKdBuildPush {
    /// The [`PointKdBuildRefs`] buffer.
    pub refs_address: u64,
}

const TASK_BYTES: u64 = 48;
const STATE_BYTES: u64 = std::mem::size_of::<PointKdBuildState>() as u64;

/// A GPU builder of point kd-trees over up to `capacity` points.
pub struct PointKdBuilder {
    params: PointKdParams,
    capacity: u32,
    stride: u32,
    kernels: [Arc<Pipeline>; 8],
    sort: RadixSort,
    scan: Scan,
    indirect: IndirectArgs,
    refs: Buffer,
    keys: Buffer,
    lists: [Buffer; 2],
    owners: [Buffer; 2],
    tasks: [Buffer; 2],
    splits: Buffer,
    small: Buffer,
    flags: Buffer,
    offsets: Buffer,
    state: Buffer,
    status: Buffer,
    task_capacity: u32,
    small_capacity: u32,
    /// A count of 0 on the device, for builds over no points.
    no_points: Buffer,
}

/// The build's kernels; their indices below name them in `PointKdBuilder::kernels`.
pub const KERNELS: [Kernel; 8] = [
    shaders::POINTKD_KEYS,
    shaders::POINTKD_INIT,
    shaders::POINTKD_SPLIT,
    shaders::POINTKD_FLAGS,
    shaders::POINTKD_SCATTER,
    shaders::POINTKD_ROUND_END,
    shaders::POINTKD_SMALL,
    shaders::POINTKD_ENTRIES,
];
const KEYS: usize = 0;
const INIT: usize = 1;
const SPLIT: usize = 2;
const FLAGS: usize = 3;
const SCATTER: usize = 4;
const ROUND_END: usize = 5;
const SMALL: usize = 6;
const ENTRIES: usize = 7;

impl PointKdBuilder {
    /// A builder with `params` for up to `capacity` points (all memory allocated here).
    pub fn new(ctx: &Context, params: PointKdParams, capacity: u32) -> Result<Self> {
        if params.max_depth > MAX_DEPTH
            || params.max_leaf == 0
            || !(1..=32).contains(&params.large_node)
            || capacity >= 1 << 29
        {
            return Err(Error::InvalidInput(format!(
                "point kd-tree builder: depth limit {} (at most {MAX_DEPTH}), leaf size {} \
                 (at least 1), T {} (1 to 32), {capacity} points (below 2^29)",
                params.max_depth, params.max_leaf, params.large_node
            )));
        }
        if params
            .query_radius
            .is_some_and(|r| !(r.is_finite() && r > 0.0))
        {
            return Err(Error::InvalidInput(format!(
                "query radius {:?}: a positive number",
                params.query_radius
            )));
        }
        let n = capacity.max(1);
        let stride = n.next_multiple_of(4);
        let lists = 3 * stride as u64;
        let task_capacity = 2 * (n / (params.large_node + 1)) + 4;
        let small_capacity = n / (params.max_leaf + 1) + 2;
        let device = |name: &str, bytes: u64| ctx.create_buffer(name, bytes, MemoryKind::Device);
        let kernels = KERNELS
            .iter()
            .map(|k| ctx.pipeline(k, WORKGROUP_SIZE, &[]))
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            params,
            capacity,
            stride,
            kernels: kernels
                .try_into()
                .unwrap_or_else(|_| unreachable!("a pipeline per kernel")),
            sort: RadixSort::new(ctx, KeyType::U32, 32, n)?,
            scan: Scan::new(ctx, ScanKind::Exclusive, 3 * stride)?,
            indirect: IndirectArgs::new(ctx, "pointkd", 3)?,
            refs: device(
                "pointkd refs",
                std::mem::size_of::<PointKdBuildRefs>() as u64,
            )?,
            keys: device("pointkd keys", lists * 4)?,
            lists: [
                device("pointkd lists 0", lists * 4)?,
                device("pointkd lists 1", lists * 4)?,
            ],
            owners: [
                device("pointkd owners 0", stride as u64 * 4)?,
                device("pointkd owners 1", stride as u64 * 4)?,
            ],
            tasks: [
                device("pointkd tasks 0", task_capacity as u64 * TASK_BYTES)?,
                device("pointkd tasks 1", task_capacity as u64 * TASK_BYTES)?,
            ],
            splits: device("pointkd splits", task_capacity as u64 * 16)?,
            small: device("pointkd small tasks", small_capacity as u64 * TASK_BYTES)?,
            flags: device("pointkd flags", lists * 4)?,
            offsets: device("pointkd offsets", lists * 4)?,
            state: device("pointkd state", STATE_BYTES)?,
            status: ctx.create_buffer("pointkd status", STATE_BYTES, MemoryKind::Readback)?,
            task_capacity,
            small_capacity,
            no_points: ctx.create_buffer_with("pointkd no points", &[0u32])?,
        })
    }

    /// The most nodes a tree over `points` points can have: two per split, at most `n - 1`
    /// splits of points and at most six empty-space cuts per large split.
    pub fn max_nodes(points: u32, large_node: u32) -> u32 {
        let n = points.max(1);
        2 * n + 12 * (n / (large_node + 1)) + 16
    }

    /// The counters of the last build (after its submission completed): nodes, overflow.
    pub fn status(&self) -> PointKdBuildState {
        let bytes = self.status.mapped().expect("the status is mapped");
        bytemuck::pod_read_unaligned(&bytes[..STATE_BYTES as usize])
    }

    /// Records the build over `input` into `tree` (made by [`PointKdTreeGpu::new`] for at
    /// least as many points), ending with the barrier that makes it visible to compute work;
    /// the counters are copied to [`Self::status`].
    pub fn record(
        &self,
        rec: &mut Recorder,
        input: &PointInput,
        tree: &PointKdTreeGpu,
    ) -> Result<()> {
        let count = match input.count {
            // No points: built as a count on the device that holds 0 (its bound of 1 keeps
            // every primitive's grid non-empty), as an empty photon map is: an empty tree.
            0 => Count::Device {
                buffer: &self.no_points,
                offset: 0,
                max: 1,
            },
            n => Count::Host(n),
        };
        self.record_counted(rec, (input.positions, count), tree)
    }

    /// [`Self::record`] over `count` points of `positions`, a count that may be on the device
    /// (photons stored on the GPU): the kernels read it there, and dispatches cover its bound.
    pub fn record_counted(
        &self,
        rec: &mut Recorder,
        (positions, count): (Slice<[f32; 3]>, Count),
        tree: &PointKdTreeGpu,
    ) -> Result<()> {
        let n = count.max();
        if n > self.capacity || n > tree.capacity() {
            return Err(Error::InvalidInput(format!(
                "point kd-tree of {n} points: the builder holds {}, the tree {}",
                self.capacity,
                tree.capacity()
            )));
        }
        positions.check("pointkd positions", n as u64, 4)?;
        tree.set_point_count(n);
        let (count_address, _) = count.push();
        let refs = PointKdBuildRefs {
            positions: positions.address(),
            lists: [self.lists[0].address(), self.lists[1].address()],
            owners: [self.owners[0].address(), self.owners[1].address()],
            tasks: [self.tasks[0].address(), self.tasks[1].address()],
            splits: self.splits.address(),
            small: self.small.address(),
            flags: self.flags.address(),
            offsets: self.offsets.address(),
            keys: self.keys.address(),
            nodes: tree.nodes.address(),
            entries: tree.entries.address(),
            state: self.state.address(),
            header: tree.header.address(),
            count_address,
            count: n,
            stride: self.stride,
            node_capacity: Self::max_nodes(tree.capacity(), self.params.large_node),
            task_capacity: self.task_capacity,
            small_capacity: self.small_capacity,
            large_node: self.params.large_node,
            max_leaf: self.params.max_leaf,
            max_depth: self.params.max_depth,
            empty_space: self.params.empty_space,
            traversal_cost: self.params.traversal_cost,
            radius: self.params.query_radius.unwrap_or(0.0),
            k_estimate: self.params.k_estimate,
            local_radius: self.params.query_radius.is_none() as u32,
            pad: 0,
        };
        let push = PointKdBuildPush {
            refs_address: self.refs.address(),
        };
        rec.barrier_compute_to_transfer();
        rec.update_buffer(&self.refs, 0, &[refs]);
        rec.barrier_transfer_to_compute();

        rec.begin_stage("pointkd: sort");
        rec.dispatch(&self.kernels[KEYS], &push, n.div_ceil(WORKGROUP_SIZE))?;
        rec.barrier_compute_to_compute();
        for axis in 0..3u64 {
            let at = axis * self.stride as u64;
            let keys = Slice::new(&self.keys, at * 4, self.stride as u64);
            let values = Slice::new(&self.lists[0], at * 4, self.stride as u64);
            self.sort.record(rec, keys, values, count)?;
            rec.barrier_compute_to_compute();
        }
        rec.dispatch(&self.kernels[INIT], &push, 1)?;
        rec.barrier_compute_to_indirect();
        rec.end_stage();

        rec.begin_stage("pointkd: large nodes");
        let field = |offset: usize| self.state.address() + offset as u64;
        let elements = 3 * self.stride;
        let tasks_offset = std::mem::offset_of!(PointKdBuildState, tasks);
        for _ in 0..=self.params.max_depth {
            // A round past the tree's last level of large tasks dispatches nothing: skipped
            // outright where the device can.
            rec.skip_if_zero(&self.state, tasks_offset as u64, |rec| {
                self.record_large_round(rec, &push, elements)
            })?;
        }
        rec.end_stage();

        rec.begin_stage("pointkd: small nodes");
        let small = field(std::mem::offset_of!(PointKdBuildState, small_tasks));
        self.indirect
            .record(rec, 2, small, self.small_capacity, WORKGROUP_SIZE, 0)?;
        let slot = 2 * crate::prims::indirect::SLOT_BYTES;
        rec.dispatch_indirect(&self.kernels[SMALL], &push, self.indirect.buffer(), slot);
        rec.barrier_compute_to_compute();
        rec.end_stage();

        rec.begin_stage("pointkd: entries");
        let groups = n.div_ceil(WORKGROUP_SIZE).max(1);
        rec.dispatch(&self.kernels[ENTRIES], &push, groups)?;
        rec.barrier_compute_to_transfer();
        rec.copy_buffer(&self.state, 0, &self.status, 0, STATE_BYTES);
        rec.barrier_transfer_to_host();
        rec.barrier_compute_to_compute();
        rec.end_stage();
        Ok(())
    }
}

impl PointKdBuilder {
    /// One round of the large-node stage over the level's tasks: `split.comp` decides every
    /// task, `flags.comp`, a scan and `scatter.comp` partition the `elements` list positions of
    /// the split nodes, and `round_end.comp` moves to the next level.
    fn record_large_round(
        &self,
        rec: &mut Recorder,
        push: &PointKdBuildPush,
        elements: u32,
    ) -> Result<()> {
        let field = |offset: usize| self.state.address() + offset as u64;
        let tasks = field(std::mem::offset_of!(PointKdBuildState, tasks));
        self.indirect
            .record(rec, 0, tasks, self.task_capacity, WORKGROUP_SIZE, 0)?;
        rec.dispatch_indirect(&self.kernels[SPLIT], push, self.indirect.buffer(), 0);
        rec.barrier_compute_to_compute();
        let partition = std::mem::offset_of!(PointKdBuildState, to_partition);
        self.indirect
            .record(rec, 1, field(partition), elements, WORKGROUP_SIZE, 0)?;
        let slot = crate::prims::indirect::SLOT_BYTES;
        rec.dispatch_indirect(&self.kernels[FLAGS], push, self.indirect.buffer(), slot);
        rec.barrier_compute_to_compute();
        let count = Count::Device {
            buffer: &self.state,
            offset: partition as u64,
            max: elements,
        };
        let (flags, offsets) = (Slice::whole(&self.flags), Slice::whole(&self.offsets));
        self.scan.record(rec, flags, offsets, count)?;
        rec.barrier_compute_to_compute();
        rec.dispatch_indirect(&self.kernels[SCATTER], push, self.indirect.buffer(), slot);
        rec.barrier_compute_to_compute();
        rec.dispatch(&self.kernels[ROUND_END], push, 1)?;
        rec.barrier_compute_to_indirect();
        Ok(())
    }
}

/// A point kd-tree with its GPU builder, behind [`PointStructure`].
pub struct PointKdStructure {
    builder: PointKdBuilder,
    tree: PointKdTreeGpu,
}

impl PointKdStructure {
    /// A structure built with `params` over up to `points` points.
    pub fn new(ctx: &Context, params: PointKdParams, points: u32) -> Result<Self> {
        Ok(Self {
            builder: PointKdBuilder::new(ctx, params, points)?,
            tree: PointKdTreeGpu::new(ctx, points, params.large_node)?,
        })
    }

    /// The tree the last build wrote, for neighbour queries ([`super::knn::Knn`]).
    pub fn tree(&self) -> &PointKdTreeGpu {
        &self.tree
    }

    /// The builder's counters after the last build's submission completed.
    pub fn status(&self) -> PointKdBuildState {
        self.builder.status()
    }
}

impl Structure for PointKdStructure {
    fn kind(&self) -> StructureKind {
        StructureKind::PointKd
    }

    fn tree_bytes(&self) -> u64 {
        self.tree.nodes.size() + self.tree.entries.size()
    }

    fn describe(
        &self,
        ctx: &Context,
        _slot: usize,
        mesh: HostMesh,
    ) -> Result<std::result::Result<TreeShape, String>> {
        let status = self.builder.status();
        if status.overflow != 0 {
            return Ok(Err(format!("the build outgrew its lists: {status:?}")));
        }
        let tree = self.tree.download(ctx)?;
        let points = &mesh.positions[..tree.point_ids.len().min(mesh.positions.len())];
        Ok(super::cpu::check(points, &tree).map(|stats| TreeShape {
            nodes: stats.nodes,
            leaves: stats.leaves,
            depth: stats.depth,
            references: tree.point_ids.len() as u64,
            ..TreeShape::default()
        }))
    }
}

impl PointStructure for PointKdStructure {
    fn record_build(&mut self, rec: &mut Recorder, input: &PointInput, _slot: usize) -> Result<()> {
        self.builder.record(rec, input, &self.tree)
    }
}
