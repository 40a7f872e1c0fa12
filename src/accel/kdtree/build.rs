//! The GPU SAH kd-tree builder: Zhou et al., "Real-Time KD-Tree Construction on Graphics
//! Hardware" (SIGGRAPH Asia 2008) §3, with the single-kernel steps of Chang et al. (GPU Pro 4,
//! 2013, chapter 13). Every frame from scratch, with no CPU read-back inside a build.
//!
//! # Stages (kernels in `glsl/kdtree/`, data in `glsl/kdtree/build.glsl`)
//!
//! 1. `init`: a record (box, triangle id) per triangle and the root.
//! 2. **Large-node stage**, one level per iteration, every level recorded ahead and sized by
//!    indirect dispatch from the GPU's counters (finished levels dispatch nothing):
//!    - `large_boxes`: per chunk of [`CHUNK`] records, a subgroup reduction of the boxes and
//!      per-workgroup atomic min/max into the node's box; then the node's last chunk to finish
//!      splits it (`split.glsl`): empty-space cuts (a side whose empty part exceeds `Ce` of the
//!      cell) then a spatial-median split of the longest axis; nodes of at most `T` records
//!      become small roots;
//!    - `large_classify`: per chunk, each record to the left, right or both children with
//!      subgroup ballots and one atomic per child and workgroup; straddling triangles are
//!      clipped to each child's cell (the tight box of the clipped polygon); then the node's
//!      last chunk to finish routes each child (`route.glsl`) to the small roots, the leaves,
//!      or the next level.
//!
//!    Two dispatches per level: a node's own step runs in the workgroup of its last chunk (a
//!    counter per node), so no dispatch per node is needed between the chunk passes.
//! 3. **Small-node stage**, one dispatch: a workgroup per small root builds its whole subtree
//!    depth first from a stack in shared memory (`small_subtrees`); split candidates are the
//!    box faces of the small root's records (up to 384), their left/right sets 64-bit masks
//!    made once per root in the workgroup's shared memory, and the exact SAH of each
//!    candidate two popcounts.
//! 4. **Output**: leaf counts bottom-up (`leaf_counts`), then each node's preorder address and
//!    its [`KdNode`](super::KdNode) (`write_nodes`): the format of
//!    [`crate::accel::kdtree`], which the ray caster reads.
//!
//! # Memory and overflow
//!
//! The scratch arena is sized from the triangle capacity ([`KdCapacity`]). Lists whose size
//! depends on the scene (records duplicated by straddling, tree nodes, leaf references, small
//! records and nodes) have bounds from [`KdBuildParams`]' factors. The large stage's two
//! record lists are dead once it ends, and the small stage makes almost all of the tree's
//! entries: so the lists share one buffer with the entries, placed after the first
//! [`KdCapacity::large_entries`] entries (the most the large stage may make), and the small
//! stage's entries overwrite them. The small roots' split masks never reach device memory: each
//! invocation of the small stage keeps its record's in registers.
//! [`KdTreeBuilder::scratch_bytes_for`] gives the arena's size without making it. A list that
//! would overflow sets a flag on the GPU and the node that wanted the space becomes a leaf where
//! that keeps the tree correct; after the submission [`KdStatusReadback::overflow`] reports it,
//! and [`KdTreeBuilder::grow`] enlarges the lists so the build can be rerun
//! ([`KdTreeStructure`] does both, as [`crate::accel::Structure::grow_if_overflowed`]).

use super::KdParams;
use super::cpu::check_kdtree;
use super::scratch::{KdChunk, KdEntry, KdLargeNode, KdRecord, KdSmallNode};
use super::{KdTreeGpu, MAX_DEPTH};
use crate::accel::{HostMesh, RayStructure, Structure, StructureKind, Traversable, TreeShape};
use crate::geom::TriangleInput;
use crate::prims::indirect::IndirectArgs;
use crate::shaders;
use crate::vk::{Buffer, Context, Error, MemoryKind, Pipeline, Recorder, Result};
use std::sync::Arc;

/// Records per chunk of the large-node stage (Zhou's N); the chunk kernels' workgroup size.
pub const CHUNK: u32 = 256;
/// The most records a small root may hold: the width of its masks.
pub const MAX_SMALL: u32 = 64;
/// Counter levels: large levels 0..=MAX_DEPTH, plus the one after the last.
/// How far the build lists may grow: this many times the capacities the default parameters
/// give the builder's triangles. A mesh whose tree needs more (triangles nested in or
/// overlapping each other, each in a great many cells) gets a shallower tree instead, so that
/// a small hostile file cannot make the build take gigabytes: its depth limit is lowered by
/// three levels for every overflow past the bound.
pub const GROWTH_BOUND: u32 = 64;

/// Levels the depth limit falls each time the lists would grow past [`GROWTH_BOUND`].
const DEPTH_STEP: u32 = 3;

const COUNTER_LEVELS: u64 = MAX_DEPTH as u64 + 2;
const STATUS_BYTES: u64 = std::mem::size_of::<KdBuildStatus>() as u64;
const LEVEL_BYTES: u64 = std::mem::size_of::<KdLevelCounters>() as u64;
const RECORD_BYTES: u64 = std::mem::size_of::<KdRecord>() as u64;
const LARGE_NODE_BYTES: u64 = std::mem::size_of::<KdLargeNode>() as u64;
const CHUNK_BYTES: u64 = std::mem::size_of::<KdChunk>() as u64;
const SMALL_NODE_BYTES: u64 = std::mem::size_of::<KdSmallNode>() as u64;
const ENTRY_BYTES: u64 = std::mem::size_of::<KdEntry>() as u64;
/// The counters: the status, the large levels', the small roots'.
const COUNTER_BYTES: u64 =
    STATUS_BYTES + COUNTER_LEVELS * LEVEL_BYTES + std::mem::size_of::<KdSmallRootCounters>() as u64;
const REFS_BYTES: u64 = std::mem::size_of::<BuildRefs>() as u64;
/// The large-node stage may make one in this many of the tree's entries
/// ([`KdCapacity::large_entries`]).
const LARGE_STAGE_ENTRY_SHARE: u32 = 16;
/// Byte alignment of the lists within a shared buffer.
const LIST_ALIGNMENT: u64 = 256;
/// Invocations per workgroup of the small-node stage: one per small-root record.
const NODE_WORKGROUP: u32 = MAX_SMALL;

/// Overflow bits (`OVERFLOW_*` in `glsl/kdtree/build.glsl`).
const OVERFLOW_RECORDS: u32 = 1;
const OVERFLOW_ENTRIES: u32 = 2;
const OVERFLOW_LEAF_TRIANGLES: u32 = 4;
const OVERFLOW_SMALL_RECORDS: u32 = 8;
const OVERFLOW_SMALL_NODES: u32 = 16;

/// Parameters of the GPU kd-tree build, with the defaults of Zhou et al.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KdBuildParams {
    /// The SAH cost model (`Ct`, `Ci`, empty bonus) of the small-node stage and the depth
    /// limit, shared with the CPU reference builder ([`KdParams`]); the depth limit is at most
    /// [`MAX_DEPTH`].
    pub costs: KdParams,
    /// `T`: nodes of at most this many records go to the small-node stage (default 64, at
    /// most [`MAX_SMALL`]).
    pub small_threshold: u32,
    /// `Ce`: a side of a large node's cell is cut off when its empty part exceeds this
    /// fraction of the cell's extent (default 0.25).
    pub empty_cut: f32,
    /// Consecutive large splits that separate nothing (every record on both sides, as with
    /// coincident triangles) after which the children become leaves (default 3, at least 1).
    pub max_stalls: u32,
    /// Record list capacity per triangle. A large node of n records reserves 2n in the next
    /// level's list, so this bounds twice the records of a level, straddlers included
    /// (default 3).
    pub record_factor: f32,
    /// Tree node capacity per triangle (default 10: SAH trees of real meshes have 8 or so,
    /// half of them empty leaves).
    pub node_factor: f32,
    /// Leaf triangle references per triangle (default 6).
    pub leaf_factor: f32,
    /// Small-root records per triangle (default 2).
    pub small_record_factor: f32,
    /// Small roots per small-root record (default 1/16: the small roots of real meshes and
    /// random soups hold 40 to 50 records on average).
    pub small_root_factor: f32,
}

impl Default for KdBuildParams {
    fn default() -> Self {
        Self {
            costs: KdParams::default(),
            small_threshold: MAX_SMALL,
            empty_cut: 0.25,
            max_stalls: 3,
            record_factor: 3.0,
            node_factor: 10.0,
            leaf_factor: 6.0,
            small_record_factor: 2.0,
            small_root_factor: 0.0625,
        }
    }
}

impl KdBuildParams {
    fn check(&self) -> Result<()> {
        let factors = [
            self.record_factor,
            self.node_factor,
            self.leaf_factor,
            self.small_record_factor,
            self.small_root_factor,
        ];
        let costs = &self.costs;
        let problem = if !(1..=MAX_SMALL).contains(&self.small_threshold) {
            Some(format!("T = {}: 1 to {MAX_SMALL}", self.small_threshold))
        } else if !(0.0..1.0).contains(&self.empty_cut) {
            Some(format!("Ce = {}: in [0, 1)", self.empty_cut))
        } else if self.max_stalls == 0 {
            Some("max_stalls = 0: at least 1".into())
        } else if factors.iter().any(|f| !(f.is_finite() && *f > 0.0)) {
            Some(format!("capacity factors {factors:?}: positive"))
        } else if ![
            costs.traversal_cost,
            costs.intersection_cost,
            costs.empty_bonus,
        ]
        .iter()
        .all(|c| c.is_finite() && *c > 0.0)
        {
            Some(format!("costs {costs:?}: positive"))
        } else {
            None
        };
        match problem {
            Some(p) => Err(Error::InvalidInput(format!(
                "kd-tree build parameters: {p}"
            ))),
            None => Ok(()),
        }
    }

    /// The depth limit for `triangles` triangles: the cost model's, at most [`MAX_DEPTH`].
    pub fn depth_limit(&self, triangles: u32) -> u32 {
        self.costs.depth_limit(triangles as usize).min(MAX_DEPTH)
    }
}

/// Element capacities of the builder's lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KdCapacity {
    /// Triangles per build.
    pub triangles: u32,
    /// Records per level list.
    pub records: u32,
    /// Tree nodes.
    pub nodes: u32,
    /// Leaf triangle references.
    pub leaf_triangles: u32,
    /// Small-root records.
    pub small_records: u32,
    /// Small roots.
    pub small_roots: u32,
}

impl std::fmt::Display for KdCapacity {
    /// `records 4096, nodes 8192, leaf triangles 16384, small records 512, small roots 1024`.
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(
            f,
            "records {}, nodes {}, leaf triangles {}, small records {}, small roots {}",
            self.records, self.nodes, self.leaf_triangles, self.small_records, self.small_roots
        )
    }
}

impl KdCapacity {
    fn new(triangles: u32, params: &KdBuildParams) -> Result<Self> {
        let scaled = |factor: f32, n: u32| -> Result<u32> {
            let value = (factor as f64 * n as f64).ceil() + 1024.0;
            if value > (u32::MAX / 8) as f64 {
                return Err(Error::InvalidInput(format!(
                    "kd-tree build of {triangles} triangles: a list of {value} elements is too large"
                )));
            }
            Ok(value as u32)
        };
        let small_records = scaled(params.small_record_factor, triangles)?;
        Ok(Self {
            triangles,
            // Level 0 holds one record per triangle.
            records: scaled(params.record_factor.max(1.0), triangles)?,
            nodes: scaled(params.node_factor, triangles)?,
            leaf_triangles: scaled(params.leaf_factor, triangles)?,
            small_records,
            small_roots: scaled(params.small_root_factor, small_records)?,
        })
    }

    /// Whether any list is more than `times` the same list of `bound`.
    fn beyond(&self, bound: &KdCapacity, times: u32) -> bool {
        let over = |list: u32, of: u32| list as u64 > times as u64 * of as u64;
        over(self.records, bound.records)
            || over(self.nodes, bound.nodes)
            || over(self.leaf_triangles, bound.leaf_triangles)
            || over(self.small_records, bound.small_records)
            || over(self.small_roots, bound.small_roots)
    }

    /// Large nodes per level: each holds more than `T` records in a disjoint range of the
    /// level's record list, so this many cannot overflow.
    fn large_nodes(&self, params: &KdBuildParams) -> u32 {
        self.records / (params.small_threshold + 1) + 2
    }

    /// Chunks per level: at most one partial chunk per node.
    fn chunks(&self, params: &KdBuildParams) -> u32 {
        self.records / CHUNK + self.large_nodes(params) + 1
    }

    /// Tree entries the large-node stage may make: the first sixteenth of [`Self::nodes`]
    /// (real meshes make about one per ten triangles there, of four to nine per triangle in
    /// all). The record lists follow them in the entries' buffer, and the small stage's
    /// entries overwrite the lists. A large stage that needs more flags the nodes as
    /// overflowed, which grows both.
    pub fn large_entries(&self) -> u32 {
        self.nodes / LARGE_STAGE_ENTRY_SHARE
    }
}

/// Which lists of a build overflowed (the build's tree is then not to be used).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KdOverflow(u32);

impl KdOverflow {
    /// The lists' names.
    pub fn lists(&self) -> Vec<&'static str> {
        [
            (OVERFLOW_RECORDS, "records"),
            (OVERFLOW_ENTRIES, "nodes"),
            (OVERFLOW_LEAF_TRIANGLES, "leaf triangles"),
            (OVERFLOW_SMALL_RECORDS, "small records"),
            (OVERFLOW_SMALL_NODES, "small nodes"),
        ]
        .into_iter()
        .filter(|(bit, _)| self.0 & bit != 0)
        .map(|(_, name)| name)
        .collect()
    }
}

/// The build's counters as the GPU leaves them (`BuildStatus` in `glsl/kdtree/build.glsl`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct KdBuildStatus {
    /// Tree nodes.
    pub nodes: u32,
    /// Leaf triangle references.
    pub leaf_triangles: u32,
    /// Records of small roots.
    pub small_records: u32,
    /// Overflow bits.
    pub overflow: u32,
}

/// Host memory a build's status is copied to (from [`KdTreeBuilder::status_readback`]): one
/// per build in flight.
pub struct KdStatusReadback {
    buffer: Buffer,
}

impl KdStatusReadback {
    /// The counters of the build recorded with this readback (valid once its submission has
    /// completed).
    pub fn status(&self) -> KdBuildStatus {
        let bytes = self.buffer.mapped().expect("readback buffers are mapped");
        *bytemuck::from_bytes(&bytes[..STATUS_BYTES as usize])
    }

    /// The lists that build overflowed, if any (its tree is then not to be used).
    pub fn overflow(&self) -> Option<KdOverflow> {
        let bits = self.status().overflow;
        (bits != 0).then_some(KdOverflow(bits))
    }
}

/// The counters of one large level (`LevelCounters` in `glsl/kdtree/build.glsl`): counts
/// for the kernels to guard with and the folded indirect dispatch grid of the level's
/// per-chunk kernels, grown on the GPU as the previous level appends.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct KdLevelCounters {
    /// Nodes in the level's list.
    pub node_count: u32,
    /// Chunks in the level's chunk list.
    pub chunk_count: u32,
    /// Records reserved in the next level's array.
    pub records: u32,
    /// Padding.
    pub pad: u32,
    /// `VkDispatchIndirectCommand` over the chunks (and one unused word).
    pub chunk_grid: [u32; 4],
    /// Padding to one 128-byte cache line per level.
    pub line_pad: [u32; 24],
}

/// The counters of the small roots (`SmallRootCounters` in `glsl/kdtree/build.glsl`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct KdSmallRootCounters {
    /// Small roots the large stage made.
    pub node_count: u32,
    /// `VkDispatchIndirectCommand` over them, one workgroup each.
    pub node_grid: [u32; 3],
}

/// Where the build's lists live and its parameters (`BuildRefs` in
/// `glsl/kdtree/build.glsl`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub struct BuildRefs {
    /// Record lists of even and odd large levels (in the entries' buffer, after the large
    /// stage's entries).
    pub records: [u64; 2],
    /// Node lists of even and odd large levels.
    pub large_nodes: [u64; 2],
    /// Children of the current large level, two per node.
    pub children: u64,
    /// Chunk lists of even and odd large levels.
    pub chunks: [u64; 2],
    /// The small roots.
    pub small_roots: u64,
    /// Small roots' records.
    pub small_records: u64,
    /// Tree entries.
    pub entries: u64,
    /// Leaf triangle ids (the tree's).
    pub leaf_triangles: u64,
    /// Status block.
    pub status: u64,
    /// Large level counters.
    pub levels: u64,
    /// The small roots' counters.
    pub small_root_counters: u64,
    /// Output nodes (the tree's).
    pub tree_nodes: u64,
    /// Output scene box (the tree's).
    pub tree_bounds: u64,
    /// Capacities.
    pub record_capacity: u32,
    /// Large nodes per level.
    pub large_node_capacity: u32,
    /// Chunks per level.
    pub chunk_capacity: u32,
    /// Small-root records.
    pub small_record_capacity: u32,
    /// Small roots.
    pub small_root_capacity: u32,
    /// Tree entries.
    pub entry_capacity: u32,
    /// Tree entries of the large stage (the record lists follow them).
    pub large_entry_capacity: u32,
    /// Leaf triangle references.
    pub leaf_capacity: u32,
    /// Depth limit of this build.
    pub max_depth: u32,
    /// `T`.
    pub small_threshold: u32,
    /// Stalls before leaves.
    pub max_stalls: u32,
    /// `Ce`.
    pub empty_cut: f32,
    /// `Ct`.
    pub traversal_cost: f32,
    /// `Ci`.
    pub intersection_cost: f32,
    /// Empty bonus.
    pub empty_bonus: f32,
    /// The device's per-dimension workgroup limit the dispatch grids are folded to.
    pub max_groups_per_dim: u32,
}

/// Push constants of `init.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct KdInitPush {
    /// The [`BuildRefs`].
    pub refs_address: u64,
    /// Vertex positions.
    pub positions_address: u64,
    /// Triangles.
    pub triangles_address: u64,
    /// Triangles to build over.
    pub triangle_count: u32,
    /// Padding.
    pub pad: u32,
}

/// Push constants of the per-level kernels without mesh access.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct KdLevelPush {
    /// The [`BuildRefs`].
    pub refs_address: u64,
    /// The level.
    pub level: u32,
    /// Padding.
    pub pad: u32,
}

/// Push constants of `large_classify.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct KdClassifyPush {
    /// The [`BuildRefs`].
    pub refs_address: u64,
    /// Vertex positions.
    pub positions_address: u64,
    /// Triangles.
    pub triangles_address: u64,
    /// The level.
    pub level: u32,
    /// Padding.
    pub pad: u32,
}

/// The sizes of a build's scratch lists, in bytes, and where the record lists lie in the
/// entries' buffer.
struct ArenaLayout {
    /// The entries, and the record lists after the large stage's entries.
    entries: u64,
    /// The record lists' offsets in the entries' buffer.
    records: [u64; 2],
    /// Each of the two large node lists.
    large_nodes: u64,
    /// The children of a large level.
    children: u64,
    /// Each of the two chunk lists.
    chunks: u64,
    small_roots: u64,
    small_records: u64,
}

impl ArenaLayout {
    fn new(capacity: &KdCapacity, params: &KdBuildParams) -> Self {
        let list = |count: u32, bytes: u64| count.max(1) as u64 * bytes;
        let large = capacity.large_nodes(params);
        let records = list(capacity.records, RECORD_BYTES).next_multiple_of(LIST_ALIGNMENT);
        let first =
            (capacity.large_entries() as u64 * ENTRY_BYTES).next_multiple_of(LIST_ALIGNMENT);
        Self {
            entries: list(capacity.nodes, ENTRY_BYTES).max(first + 2 * records),
            records: [first, first + records],
            large_nodes: list(large, LARGE_NODE_BYTES),
            children: list(2 * large, LARGE_NODE_BYTES),
            chunks: list(capacity.chunks(params), CHUNK_BYTES),
            small_roots: list(capacity.small_roots, SMALL_NODE_BYTES),
            small_records: list(capacity.small_records, RECORD_BYTES),
        }
    }

    /// The bytes of all the lists.
    fn bytes(&self) -> u64 {
        self.entries
            + 2 * self.large_nodes
            + self.children
            + 2 * self.chunks
            + self.small_roots
            + self.small_records
    }
}

/// The scratch lists of a build.
struct Arena {
    capacity: KdCapacity,
    layout: ArenaLayout,
    large_nodes: [Buffer; 2],
    children: Buffer,
    chunks: [Buffer; 2],
    small_roots: Buffer,
    small_records: Buffer,
    /// The entries, and the large stage's record lists after the large stage's entries.
    entries: Buffer,
}

impl Arena {
    fn new(ctx: &Context, capacity: KdCapacity, params: &KdBuildParams) -> Result<Self> {
        let layout = ArenaLayout::new(&capacity, params);
        let buffer = |name: &str, bytes: u64| {
            ctx.create_buffer(&format!("kd-tree build {name}"), bytes, MemoryKind::Device)
        };
        Ok(Self {
            capacity,
            large_nodes: [
                buffer("large nodes 0", layout.large_nodes)?,
                buffer("large nodes 1", layout.large_nodes)?,
            ],
            children: buffer("children", layout.children)?,
            chunks: [
                buffer("chunks 0", layout.chunks)?,
                buffer("chunks 1", layout.chunks)?,
            ],
            small_roots: buffer("small roots", layout.small_roots)?,
            small_records: buffer("small records", layout.small_records)?,
            entries: buffer("entries and records", layout.entries)?,
            layout,
        })
    }

    fn bytes(&self) -> u64 {
        let buffers = [
            &self.large_nodes[0],
            &self.large_nodes[1],
            &self.children,
            &self.chunks[0],
            &self.chunks[1],
            &self.small_roots,
            &self.small_records,
            &self.entries,
        ];
        buffers.iter().map(|b| b.size()).sum()
    }
}

/// Builds SAH kd-trees on the GPU; reusable every frame.
pub struct KdTreeBuilder {
    params: KdBuildParams,
    init: Arc<Pipeline>,
    large_boxes: Arc<Pipeline>,
    large_classify: Arc<Pipeline>,
    small_subtrees: Arc<Pipeline>,
    leaf_counts: Arc<Pipeline>,
    write_nodes: Arc<Pipeline>,
    indirect: IndirectArgs,
    arena: Arena,
    /// The counters (status, large levels, small roots) and the reset image copied over
    /// them at the start of every build (zero counts, dispatch y = z = 1).
    counters: Buffer,
    counters_reset: Buffer,
    refs: Buffer,
    max_groups_per_dim: u32,
}

impl KdTreeBuilder {
    /// A builder for meshes of up to `triangles` triangles.
    pub fn new(ctx: &Context, params: KdBuildParams, triangles: u32) -> Result<Self> {
        params.check()?;
        let capacity = KdCapacity::new(triangles, &params)?;
        // Zero counts and empty grids {0, 1, 1}.
        let large_reset = KdLevelCounters {
            chunk_grid: [0, 1, 1, 0],
            ..Default::default()
        };
        let small_reset = KdSmallRootCounters {
            node_count: 0,
            node_grid: [0, 1, 1],
        };
        let mut reset: Vec<u8> = vec![0; STATUS_BYTES as usize];
        for _ in 0..COUNTER_LEVELS {
            reset.extend_from_slice(bytemuck::bytes_of(&large_reset));
        }
        reset.extend_from_slice(bytemuck::bytes_of(&small_reset));
        let reset: Vec<u32> = bytemuck::pod_collect_to_vec(&reset);
        debug_assert_eq!(reset.len() as u64 * 4, COUNTER_BYTES);
        let builder = Self {
            max_groups_per_dim: ctx.caps().max_workgroup_count,
            params,
            init: ctx.pipeline(&shaders::KDTREE_INIT, CHUNK, &[])?,
            large_boxes: ctx.pipeline(&shaders::KDTREE_LARGE_BOXES, CHUNK, &[])?,
            large_classify: ctx.pipeline(&shaders::KDTREE_LARGE_CLASSIFY, CHUNK, &[])?,
            small_subtrees: ctx.pipeline(&shaders::KDTREE_SMALL_SUBTREES, NODE_WORKGROUP, &[])?,
            leaf_counts: ctx.pipeline(&shaders::KDTREE_LEAF_COUNTS, CHUNK, &[])?,
            write_nodes: ctx.pipeline(&shaders::KDTREE_WRITE_NODES, CHUNK, &[])?,
            indirect: IndirectArgs::new(ctx, "kd-tree output", 1)?,
            arena: Arena::new(ctx, capacity, &params)?,
            counters: ctx.create_buffer(
                "kd-tree build counters",
                COUNTER_BYTES,
                MemoryKind::Device,
            )?,
            counters_reset: ctx.create_buffer_with("kd-tree build counter reset", &reset)?,
            refs: ctx.create_buffer("kd-tree build refs", REFS_BYTES, MemoryKind::Device)?,
        };
        builder.check_dispatch_limits(ctx)?;
        Ok(builder)
    }

    /// The largest dispatch of a build must fold into the device's grid (a device limit
    /// error otherwise: only with a per-dimension limit far below Vulkan's minimum).
    fn check_dispatch_limits(&self, ctx: &Context) -> Result<()> {
        let capacity = &self.arena.capacity;
        let largest = capacity
            .chunks(&self.params)
            .max(capacity.small_roots)
            .max(capacity.nodes.div_ceil(CHUNK));
        ctx.dispatch_grid(largest).map(|_| ())
    }

    /// The parameters.
    pub fn params(&self) -> &KdBuildParams {
        &self.params
    }

    /// The list capacities.
    pub fn capacity(&self) -> KdCapacity {
        self.arena.capacity
    }

    /// Device memory of the scratch lists and counters (the tree's own buffers excluded).
    pub fn scratch_bytes(&self) -> u64 {
        self.arena.bytes() + self.counters.size() + self.refs.size()
    }

    /// [`Self::scratch_bytes`] of a builder for `triangles` triangles with `params`, without
    /// making it.
    pub fn scratch_bytes_for(triangles: u32, params: &KdBuildParams) -> Result<u64> {
        params.check()?;
        let capacity = KdCapacity::new(triangles, params)?;
        Ok(ArenaLayout::new(&capacity, params).bytes() + COUNTER_BYTES + REFS_BYTES)
    }

    /// A tree sized for this builder's capacity, to build into.
    pub fn allocate_tree(&self, ctx: &Context) -> Result<KdTreeGpu> {
        KdTreeGpu::allocate(
            ctx,
            self.arena.capacity.nodes,
            self.arena.capacity.leaf_triangles,
        )
    }

    /// Host memory for the status of one build in flight.
    pub fn status_readback(&self, ctx: &Context) -> Result<KdStatusReadback> {
        Ok(KdStatusReadback {
            buffer: ctx.create_buffer(
                "kd-tree build status",
                STATUS_BYTES,
                MemoryKind::Readback,
            )?,
        })
    }

    /// Records a build of `input`'s triangles into `tree` (from [`Self::allocate_tree`] since
    /// the last [`Self::grow`]). Every dispatch is recorded ahead: the large and small stages
    /// record one pass per level up to the depth limit, sized on the GPU. The build's status
    /// is copied to `status`, to be checked for overflow once the submission has completed.
    ///
    /// Synchronisation: waits for all earlier work in the command buffer before it resets
    /// its lists (a full barrier), so the caller's writes of the input are ordered; keep
    /// earlier readers of the tree from overlapping (one build per tree in flight). Ends
    /// with a compute → compute barrier (the tree visible to later compute work) and a
    /// transfer → host barrier (the status readable once the submission completed). Runs on
    /// the queue family `rec`'s command buffer is submitted to (compute).
    pub fn record(
        &self,
        rec: &mut Recorder,
        input: &TriangleInput,
        tree: &KdTreeGpu,
        status: &KdStatusReadback,
    ) -> Result<()> {
        let capacity = &self.arena.capacity;
        if input.count > capacity.triangles {
            return Err(Error::InvalidInput(format!(
                "kd-tree build of {} triangles; the builder was made for {}",
                input.count, capacity.triangles
            )));
        }
        input.positions.check("kd-tree build positions", 1, 4)?;
        input
            .triangles
            .check("kd-tree build triangles", input.count as u64, 4)?;
        if tree.nodes.size() < capacity.nodes as u64 * 8
            || tree.leaf_triangles.size() < capacity.leaf_triangles as u64 * 4
        {
            return Err(Error::InvalidInput(
                "kd-tree smaller than the builder's capacity (allocate it after growing)".into(),
            ));
        }
        let max_depth = self.params.depth_limit(input.count);
        rec.barrier_after_earlier_work();
        self.record_init(rec, input, tree, max_depth)?;
        self.record_large_levels(rec, input, max_depth);
        self.record_small_subtrees(rec);
        self.record_output(rec, status)
    }

    /// The level push constants every per-level kernel takes.
    fn level_push(&self, level: u32) -> KdLevelPush {
        KdLevelPush {
            refs_address: self.refs.address(),
            level,
            pad: 0,
        }
    }

    /// `init.comp`: the build's references and counters reset, the root's records (one per
    /// triangle) and the scene box.
    fn record_init(
        &self,
        rec: &mut Recorder,
        input: &TriangleInput,
        tree: &KdTreeGpu,
        max_depth: u32,
    ) -> Result<()> {
        rec.begin_stage("kd-tree: init");
        let counters = &self.counters;
        rec.update_buffer(&self.refs, 0, &[self.refs_for(tree, max_depth)]);
        rec.copy_buffer(&self.counters_reset, 0, counters, 0, counters.size());
        rec.barrier_transfer_to_compute();
        let push = KdInitPush {
            refs_address: self.refs.address(),
            positions_address: input.positions.address(),
            triangles_address: input.triangles.address(),
            triangle_count: input.count,
            pad: 0,
        };
        rec.dispatch(&self.init, &push, input.count.div_ceil(CHUNK).max(1))?;
        rec.barrier_compute_to_indirect();
        rec.end_stage();
        Ok(())
    }

    /// The large-node stage, per level: `large_boxes.comp` (per chunk; each node's last chunk
    /// splits it) and `large_classify.comp` (per chunk; each split node's last chunk routes
    /// its children), sized by the grid the level before grew on the GPU.
    fn record_large_levels(&self, rec: &mut Recorder, input: &TriangleInput, max_depth: u32) {
        rec.begin_stage("kd-tree: large nodes");
        let counters = &self.counters;
        let chunk_grid = std::mem::offset_of!(KdLevelCounters, chunk_grid) as u64;
        for level in 0..=max_depth {
            let chunks = STATUS_BYTES + level as u64 * LEVEL_BYTES + chunk_grid;
            let push = self.level_push(level);
            let classify = KdClassifyPush {
                refs_address: self.refs.address(),
                positions_address: input.positions.address(),
                triangles_address: input.triangles.address(),
                level,
                pad: 0,
            };
            rec.dispatch_indirect(&self.large_boxes, &push, counters, chunks);
            rec.barrier_compute_to_compute();
            rec.dispatch_indirect(&self.large_classify, &classify, counters, chunks);
            rec.barrier_compute_to_indirect();
        }
        rec.end_stage();
    }

    /// The small-node stage: `small_subtrees.comp`, one workgroup per small root.
    fn record_small_subtrees(&self, rec: &mut Recorder) {
        rec.begin_stage("kd-tree: small nodes");
        let grid = STATUS_BYTES
            + COUNTER_LEVELS * LEVEL_BYTES
            + std::mem::offset_of!(KdSmallRootCounters, node_grid) as u64;
        let push = self.level_push(0);
        rec.dispatch_indirect(&self.small_subtrees, &push, &self.counters, grid);
        rec.barrier_compute_to_indirect();
        rec.end_stage();
    }

    /// `leaf_counts.comp` (leaves under each entry, bottom-up) and `write_nodes.comp` (the
    /// nodes in preorder), over the entries the build made; the status copied to `status`.
    fn record_output(&self, rec: &mut Recorder, status: &KdStatusReadback) -> Result<()> {
        rec.begin_stage("kd-tree: output");
        let counters = &self.counters;
        let capacity = self.arena.capacity.nodes;
        self.indirect
            .record(rec, 0, counters.address(), capacity, CHUNK, 0)?;
        let push = self.level_push(0);
        rec.dispatch_indirect(&self.leaf_counts, &push, self.indirect.buffer(), 0);
        rec.barrier_compute_to_compute();
        rec.dispatch_indirect(&self.write_nodes, &push, self.indirect.buffer(), 0);
        rec.barrier_compute_to_transfer();
        rec.copy_buffer(counters, 0, &status.buffer, 0, STATUS_BYTES);
        rec.barrier_transfer_to_host();
        rec.barrier_compute_to_compute();
        rec.end_stage();
        Ok(())
    }

    /// Dispatches one build records: 1 + 2 per large level + 1 for the small stage + 3.
    pub fn dispatches(&self, triangles: u32) -> u32 {
        let levels = self.params.depth_limit(triangles) + 1;
        1 + 2 * levels + 1 + 3
    }

    fn refs_for(&self, tree: &KdTreeGpu, max_depth: u32) -> BuildRefs {
        let a = &self.arena;
        let c = &a.capacity;
        let counters = self.counters.address();
        BuildRefs {
            records: a.layout.records.map(|offset| a.entries.address() + offset),
            large_nodes: [a.large_nodes[0].address(), a.large_nodes[1].address()],
            children: a.children.address(),
            chunks: [a.chunks[0].address(), a.chunks[1].address()],
            small_roots: a.small_roots.address(),
            small_records: a.small_records.address(),
            entries: a.entries.address(),
            leaf_triangles: tree.leaf_triangles.address(),
            status: counters,
            levels: counters + STATUS_BYTES,
            small_root_counters: counters + STATUS_BYTES + COUNTER_LEVELS * LEVEL_BYTES,
            tree_nodes: tree.nodes.address(),
            tree_bounds: tree.bounds.address(),
            record_capacity: c.records,
            large_node_capacity: c.large_nodes(&self.params),
            chunk_capacity: c.chunks(&self.params),
            small_record_capacity: c.small_records,
            small_root_capacity: c.small_roots,
            entry_capacity: c.nodes,
            large_entry_capacity: c.large_entries(),
            leaf_capacity: c.leaf_triangles,
            max_depth,
            small_threshold: self.params.small_threshold,
            max_stalls: self.params.max_stalls,
            empty_cut: self.params.empty_cut,
            traversal_cost: self.params.costs.traversal_cost,
            intersection_cost: self.params.costs.intersection_cost,
            empty_bonus: self.params.costs.empty_bonus,
            max_groups_per_dim: self.max_groups_per_dim,
        }
    }

    /// Doubles the lists that `overflow` names, and the small roots with their records
    /// (reallocating the scratch arena); trees must then be allocated again. Where that would
    /// pass [`GROWTH_BOUND`], the lists stay as they are and the depth limit is lowered
    /// instead; the build must be recorded again either way.
    pub fn grow(&mut self, ctx: &Context, overflow: KdOverflow) -> Result<()> {
        let mut capacity = self.arena.capacity;
        let double = |x: u32| x.saturating_mul(2).min(u32::MAX / 8);
        let bits = overflow.0;
        if bits & OVERFLOW_RECORDS != 0 {
            capacity.records = double(capacity.records);
        }
        if bits & OVERFLOW_ENTRIES != 0 {
            capacity.nodes = double(capacity.nodes);
        }
        if bits & OVERFLOW_LEAF_TRIANGLES != 0 {
            capacity.leaf_triangles = double(capacity.leaf_triangles);
        }
        if bits & OVERFLOW_SMALL_RECORDS != 0 {
            capacity.small_records = double(capacity.small_records);
        }
        // The small roots are sized as a share of their records: they grow with them.
        if bits & (OVERFLOW_SMALL_RECORDS | OVERFLOW_SMALL_NODES) != 0 {
            capacity.small_roots = double(capacity.small_roots);
        }
        let bound = KdCapacity::new(capacity.triangles, &KdBuildParams::default())?;
        if capacity.beyond(&bound, GROWTH_BOUND) {
            let depth = self.params.depth_limit(capacity.triangles);
            if depth > 0 {
                let shallower = depth.saturating_sub(DEPTH_STEP);
                self.params.costs.max_depth = Some(shallower);
                log::warn!(
                    "kd-tree build: {} would grow past {GROWTH_BOUND} times their first size \
                     (the triangles overlap in many cells); depth limit lowered from {depth} \
                     to {shallower}",
                    overflow.lists().join(", ")
                );
                return Ok(());
            }
        }
        if capacity == self.arena.capacity {
            return Err(Error::InvalidInput(format!(
                "kd-tree build lists ({}) cannot grow further",
                overflow.lists().join(", ")
            )));
        }
        log::info!(
            "kd-tree build: {} overflowed; capacities now {capacity}",
            overflow.lists().join(", ")
        );
        self.arena = Arena::new(ctx, capacity, &self.params)?;
        self.check_dispatch_limits(ctx)
    }
}

/// A kd-tree with its builder and one build status per slot, behind [`RayStructure`].
pub struct KdTreeStructure {
    builder: KdTreeBuilder,
    tree: KdTreeGpu,
    status: Vec<KdStatusReadback>,
}

impl KdTreeStructure {
    /// A kd-tree built with `params` over up to `triangles` triangles, with `slots` builds in
    /// flight.
    pub fn new(ctx: &Context, params: KdBuildParams, triangles: u32, slots: usize) -> Result<Self> {
        let builder = KdTreeBuilder::new(ctx, params, triangles)?;
        Ok(Self {
            tree: builder.allocate_tree(ctx)?,
            status: (0..slots.max(1))
                .map(|_| builder.status_readback(ctx))
                .collect::<Result<_>>()?,
            builder,
        })
    }

    /// The tree the last build wrote.
    pub fn tree(&self) -> &KdTreeGpu {
        &self.tree
    }

    /// The builder (its capacities and scratch).
    pub fn builder(&self) -> &KdTreeBuilder {
        &self.builder
    }

    /// The status of the build in `slot`, once its submission has completed.
    pub fn status(&self, slot: usize) -> KdBuildStatus {
        self.status[slot].status()
    }
}

impl Structure for KdTreeStructure {
    fn kind(&self) -> StructureKind {
        StructureKind::KdTree
    }

    fn grow_if_overflowed(&mut self, ctx: &Context, slot: usize) -> Result<bool> {
        let Some(overflow) = self.status[slot].overflow() else {
            return Ok(false);
        };
        self.builder.grow(ctx, overflow)?;
        self.tree = self.builder.allocate_tree(ctx)?;
        Ok(true)
    }

    fn tree_bytes(&self) -> u64 {
        self.tree.bytes()
    }

    fn describe(
        &self,
        ctx: &Context,
        slot: usize,
        mesh: HostMesh,
    ) -> Result<std::result::Result<TreeShape, String>> {
        let status = self.status(slot);
        let tree = self
            .tree
            .download(ctx, status.nodes, status.leaf_triangles)?;
        let costs = &self.builder.params().costs;
        Ok(check_kdtree(mesh.positions, mesh.triangles, &tree).map(|stats| stats.shape(costs)))
    }
}

impl RayStructure for KdTreeStructure {
    fn record_build(
        &mut self,
        rec: &mut Recorder,
        input: &TriangleInput,
        slot: usize,
    ) -> Result<()> {
        self.builder
            .record(rec, input, &self.tree, &self.status[slot])
    }

    fn traversable<'a>(&'a self, input: &TriangleInput<'a>) -> Box<dyn Traversable + 'a> {
        Box::new(self.tree.over(input))
    }
}
