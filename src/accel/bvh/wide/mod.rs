//! The 8-wide compressed BVH: a binary [`Bvh`] collapsed into nodes of up to eight children
//! with 8-bit quantized boxes ([`format`](mod@format)), so that a ray reads fewer, denser
//! nodes (Ylitie, Karras and Laine, HPG 2017). [`Collapser`] makes it from a finished binary tree in one
//! dispatch (`glsl/bvh/collapse.comp`; [`cpu::collapse`] is the reference), and
//! `glsl/bvh/wide_trace.comp` traces it ([`trace`]; [`cpu::trace_wide`] is its mirror).

pub mod cpu;
pub mod format;
pub mod trace;

use super::{Bvh, LeafTriangle};
use crate::shaders;
use crate::vk::{Buffer, Context, Error, MemoryKind, Pipeline, Recorder, Result};
use cpu::{WideTree, wide_node_capacity};
use format::WideNode;
use std::sync::Arc;

/// The most stack entries wide traversal holds (`STACK_SIZE` in `glsl/bvh/wide_trace.comp`).
pub const WIDE_STACK_SIZE: u32 = 128;

/// An 8-wide BVH on the device: what [`Collapser`] writes and wide traversal reads.
pub struct WideBvh {
    /// Nodes, the root at 0.
    pub nodes: Buffer,
    /// Each leaf's triangle, in the wide tree's order (the triangle id in `a.w`).
    pub leaf_triangles: Buffer,
    /// The last completed build's node count, stack need, height and nodes left unmade
    /// (u32 each, host-visible).
    stats: Buffer,
    capacity: u32,
    primitive_count: u32,
}

impl WideBvh {
    /// Device memory for a tree over up to `capacity` triangles.
    pub fn new(ctx: &Context, capacity: u32) -> Result<Self> {
        let n = capacity.max(1) as u64;
        Ok(Self {
            nodes: ctx.create_buffer(
                "wide bvh nodes",
                wide_node_capacity(capacity) as u64 * std::mem::size_of::<WideNode>() as u64,
                MemoryKind::Device,
            )?,
            leaf_triangles: ctx.create_buffer(
                "wide bvh leaf triangles",
                n * std::mem::size_of::<LeafTriangle>() as u64,
                MemoryKind::Device,
            )?,
            stats: ctx.create_buffer("wide bvh stats", 16, MemoryKind::Readback)?,
            capacity,
            primitive_count: 0,
        })
    }

    /// The most triangles this tree can hold.
    pub fn capacity(&self) -> u32 {
        self.capacity
    }

    /// Triangles in the tree of the last recorded build.
    pub fn primitive_count(&self) -> u32 {
        self.primitive_count
    }

    fn stat(&self, index: usize) -> u32 {
        if self.primitive_count == 0 {
            return 0;
        }
        let bytes = self.stats.mapped().expect("readback buffers are mapped");
        *bytemuck::from_bytes(&bytes[4 * index..4 * index + 4])
    }

    /// Nodes in the last build's tree, once its submission has completed.
    pub fn node_count(&self) -> u32 {
        self.stat(0)
    }

    /// The most stack entries a ray can hold in the last build's tree (once its submission
    /// has completed): at each node on its way down, its internal children less the one
    /// entered.
    pub fn stack_need(&self) -> u32 {
        self.stat(1)
    }

    /// Nodes on the longest path from the root down in the last build's tree, once its
    /// submission has completed (0 for an empty tree).
    pub fn height(&self) -> u32 {
        self.stat(2)
    }

    /// Whether the last build made every node (once its submission has completed). A
    /// collapse gives up a node whose parent it waited too long for (a device that runs
    /// workgroups on preempted CPU threads); the tree must then be made again
    /// ([`Collapser::recover`]).
    pub fn complete(&self) -> bool {
        self.stat(3) == 0
    }

    /// Whether the last build's tree (once its submission has completed) can be traced: its
    /// stack need is at most [`WIDE_STACK_SIZE`]. A tree that is not must be traced through
    /// its binary tree; tracing it would miss hits.
    pub fn fits_traversal_stack(&self) -> bool {
        self.stack_need() <= WIDE_STACK_SIZE
    }

    /// Device bytes held.
    pub fn bytes(&self) -> u64 {
        self.nodes.size() + self.leaf_triangles.size()
    }

    /// Reads the tree back (after its build has completed).
    pub fn download(&self, ctx: &Context) -> Result<WideTree> {
        let n = self.primitive_count as usize;
        if n == 0 {
            return Ok(WideTree::default());
        }
        let nodes = ctx.download(&self.nodes, 0, self.node_count() as usize)?;
        let triangles: Vec<LeafTriangle> = ctx.download(&self.leaf_triangles, 0, n)?;
        Ok(WideTree {
            nodes,
            leaf_primitives: triangles.iter().map(|t| t.a[3].to_bits()).collect(),
        })
    }
}

/// Push constants of `collapse.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct CollapsePush {
    /// The binary tree's internal nodes.
    pub nodes_address: u64,
    /// The binary tree's leaf triangles.
    pub leaf_triangles_address: u64,
    /// Wide nodes written.
    pub wide_nodes_address: u64,
    /// Wide leaf triangles written.
    pub wide_triangles_address: u64,
    /// The queue's tasks (8 bytes per wide node).
    pub tasks_address: u64,
    /// The queue's counters.
    pub queue_address: u64,
    /// Node count, stack need, height and nodes left unmade written (host-visible).
    pub stats_address: u64,
    /// Wide nodes the buffers hold: an invocation each.
    pub task_capacity: u32,
    /// Padding.
    pub pad: u32,
}

/// Invocations per workgroup of the collapse.
const COLLAPSE_WORKGROUP_SIZE: u32 = 64;
/// The queue's counters between builds (`QUEUE_*` in `collapse.comp`): tickets, nodes,
/// triangles, outstanding, exited, stack need, height.
const QUEUE_AT_REST: [u32; 7] = [0, 1, 0, 1, 0, 0, 0];

/// Collapses binary BVHs over up to a fixed number of triangles into 8-wide ones; reusable
/// every frame. Scratch: 8 bytes per wide node the tree can hold, left as found by every
/// build.
pub struct Collapser {
    pipeline: Arc<Pipeline>,
    tasks: Buffer,
    queue: Buffer,
    capacity: u32,
}

impl Collapser {
    /// A collapser for trees over up to `capacity` triangles.
    pub fn new(ctx: &Context, capacity: u32) -> Result<Self> {
        let workgroup = COLLAPSE_WORKGROUP_SIZE.next_multiple_of(ctx.caps().subgroup_size);
        let tasks = wide_node_capacity(capacity) as u64;
        let collapser = Self {
            pipeline: ctx.pipeline(
                &shaders::BVH_COLLAPSE,
                workgroup,
                &[("WORKGROUP_LOOP", ctx.caps().runs_subgroups_in_turn() as u32)],
            )?,
            tasks: ctx.create_buffer("wide bvh tasks", 8 * tasks, MemoryKind::Device)?,
            queue: ctx.create_buffer_with("wide bvh queue", &QUEUE_AT_REST)?,
            capacity,
        };
        collapser.recover(ctx)?;
        Ok(collapser)
    }

    /// Puts the task slots back as a build expects them (every slot unpublished), after a
    /// build left nodes unmade ([`WideBvh::complete`]); waits for the device.
    pub fn recover(&self, ctx: &Context) -> Result<()> {
        ctx.submit_and_wait(|rec| {
            rec.fill(&self.tasks, 0, self.tasks.size(), u32::MAX);
            Ok(())
        })
    }

    /// Records the collapse of `bvh` (built earlier in the same command buffer, followed by
    /// a compute → compute barrier) into `output`, as the stage "lbvh: wide". Ends with a
    /// compute → compute barrier that also makes the tree's figures visible to the host once
    /// the submission has completed.
    pub fn record(&self, rec: &mut Recorder, bvh: &Bvh, output: &mut WideBvh) -> Result<()> {
        let n = bvh.primitive_count();
        output.primitive_count = 0;
        if n == 0 {
            return Ok(());
        }
        if n > self.capacity || n > output.capacity {
            return Err(Error::InvalidInput(format!(
                "wide BVH of {n} triangles: the collapser holds {} and the tree {}",
                self.capacity, output.capacity
            )));
        }
        output.primitive_count = n;
        let task_capacity = wide_node_capacity(n);
        let workgroups = task_capacity.div_ceil(self.pipeline.workgroup_size);
        let push = CollapsePush {
            nodes_address: bvh.nodes.address(),
            leaf_triangles_address: bvh.leaf_triangles.address(),
            wide_nodes_address: output.nodes.address(),
            wide_triangles_address: output.leaf_triangles.address(),
            tasks_address: self.tasks.address(),
            queue_address: self.queue.address(),
            stats_address: output.stats.address(),
            task_capacity,
            pad: 0,
        };
        rec.begin_stage("lbvh: wide");
        rec.dispatch(&self.pipeline, &push, workgroups)?;
        rec.barrier_compute_to_compute_and_host();
        rec.end_stage();
        Ok(())
    }
}
