//! Octrees and point k-d trees over points from the binary radix tree (Karras 2012 §4).
//!
//! The points' Morton codes are sorted into a radix tree as for the LBVH
//! ([`crate::accel::radix_tree`]); points sharing a
//! cell are merged (`glsl/octree/unique_flags.comp`, [`Compact`] of the first of each run,
//! `glsl/octree/gather_keys.comp`); the radix tree is built over the distinct codes; each
//! radix-tree edge carries `floor(δ/3) - floor(δparent/3)` octree nodes
//! (`glsl/octree/edge_counts.comp`), a scan allocates them, and `glsl/octree/link_nodes.comp`
//! writes them with their parents. The same radix tree read as a point k-d tree splits each
//! internal node on axis `δ mod 3` at the boundary of the two half-cells of its first
//! differing bit ([`KdSplit`]). Everything stays on the GPU; counts are device counts.

pub mod cpu;

use crate::accel::bvh::BvhNode;
use crate::accel::radix_tree::{CodeBuffers, RadixTreeBuffers, RadixTreeSteps};
use crate::accel::{HostMesh, PointStructure, Structure, StructureKind, TreeShape};
use crate::geom::PointInput;
use crate::geom::morton::MortonBits;
use crate::prims::compact::Compact;
use crate::prims::scan::{Scan, ScanKind};
use crate::prims::{WORKGROUP_SIZE, check_count};
use crate::shaders;
use crate::vk::{Buffer, Context, Error, MemoryKind, Pipeline, Recorder, Result};
use crate::vk::{Count, Slice};
use std::sync::Arc;

/// An octree node (`OctreeNode` in `glsl/octree/format.glsl`). 16 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct OctreeNode {
    /// The top `3 * level` bits of the Morton codes of the points inside.
    pub prefix: u64,
    /// Index of the parent node (`u32::MAX` for the root, node 0).
    pub parent: u32,
    /// Depth: 0 for the root, the code's levels (10 or 21) for a leaf cell.
    pub level: u32,
}

/// The split of a point k-d tree node: the radix tree's internal node read as a k-d node.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct KdSplit {
    /// 0, 1 or 2 for x, y, z.
    pub axis: u32,
    /// Position of the splitting plane on that axis.
    pub plane: f32,
}

/// Push constants of `unique_flags.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct UniqueFlagsPush {
    /// Sorted keys.
    pub keys_address: u64,
    /// Flags written.
    pub flags_address: u64,
    /// Keys.
    pub count: u32,
    /// Padding.
    pub pad: u32,
}

/// Push constants of `gather_keys.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct GatherKeysPush {
    /// Sorted keys.
    pub keys_address: u64,
    /// Kept indices.
    pub indices_address: u64,
    /// Distinct keys written.
    pub unique_keys_address: u64,
    /// Number kept (device).
    pub count_address: u64,
}

/// Push constants of `edge_counts.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct EdgeCountsPush {
    /// Distinct sorted keys.
    pub keys_address: u64,
    /// Radix tree internal nodes.
    pub nodes_address: u64,
    /// Radix tree leaf parents.
    pub leaf_parents_address: u64,
    /// Point bounds.
    pub bounds_address: u64,
    /// Distinct keys (device).
    pub count_address: u64,
    /// Edge counts written.
    pub edge_counts_address: u64,
    /// Splits written.
    pub splits_address: u64,
    /// Entries of the edge count array.
    pub entries: u32,
    /// Padding.
    pub pad: u32,
}

/// Push constants of `link_nodes.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct LinkNodesPush {
    /// Distinct sorted keys.
    pub keys_address: u64,
    /// Radix tree internal nodes.
    pub nodes_address: u64,
    /// Radix tree leaf parents.
    pub leaf_parents_address: u64,
    /// Distinct keys (device).
    pub count_address: u64,
    /// Edge counts.
    pub edge_counts_address: u64,
    /// Scanned edge counts.
    pub offsets_address: u64,
    /// Octree nodes written.
    pub octree_address: u64,
    /// Octree node count written.
    pub octree_count_address: u64,
    /// Entries of the edge count array.
    pub entries: u32,
    /// Padding.
    pub pad: u32,
}

/// An octree and point k-d tree on the device.
pub struct Octree {
    /// Octree nodes, root first.
    pub nodes: Buffer,
    /// Counts: `[distinct points, octree nodes]` (u32 each).
    pub counts: Buffer,
    /// The radix tree over the distinct codes (the k-d tree's topology).
    pub radix_nodes: Buffer,
    /// The k-d split of each radix tree internal node.
    pub splits: Buffer,
    levels: u32,
    capacity: u32,
}

/// A downloaded octree.
#[derive(Clone, Debug, PartialEq)]
pub struct OctreeHost {
    /// Cells per axis are 2^levels.
    pub levels: u32,
    /// Number of distinct occupied leaf cells.
    pub distinct_points: u32,
    /// Nodes, root first.
    pub nodes: Vec<OctreeNode>,
    /// The radix tree over the distinct codes.
    pub radix_nodes: Vec<BvhNode>,
    /// The k-d split of each radix tree internal node.
    pub splits: Vec<KdSplit>,
}

impl OctreeHost {
    /// Number of nodes at each level, root (level 0) first.
    pub fn nodes_per_level(&self) -> Vec<usize> {
        let mut counts = vec![0; self.levels as usize + 1];
        for node in &self.nodes {
            counts[node.level as usize] += 1;
        }
        counts
    }

    /// The octree's shape as reports show it: its cells, those without children as leaves.
    pub fn shape(&self) -> TreeShape {
        let mut has_children = vec![false; self.nodes.len()];
        for node in &self.nodes {
            if let Some(parent) = has_children.get_mut(node.parent as usize) {
                *parent = true;
            }
        }
        let per_level: Vec<u64> = self.nodes_per_level().iter().map(|&n| n as u64).collect();
        TreeShape {
            nodes: self.nodes.len() as u64,
            leaves: has_children.iter().filter(|&&c| !c).count() as u64,
            depth: per_level.iter().rposition(|&n| n > 0).unwrap_or(0) as u32,
            references: self.distinct_points as u64,
            sah_cost: None,
            sah_model: None,
            nodes_per_level: per_level,
            in_view: None,
        }
    }
}

impl Octree {
    /// Device bytes held.
    pub fn bytes(&self) -> u64 {
        self.nodes.size() + self.counts.size() + self.radix_nodes.size() + self.splits.size()
    }

    /// Reads the octree back (after its build has run).
    pub fn download(&self, ctx: &Context) -> Result<OctreeHost> {
        let counts: Vec<u32> = ctx.download(&self.counts, 0, 2)?;
        let (distinct, nodes) = (counts[0] as usize, counts[1] as usize);
        Ok(OctreeHost {
            levels: self.levels,
            distinct_points: counts[0],
            nodes: ctx.download(&self.nodes, 0, nodes)?,
            radix_nodes: ctx.download(&self.radix_nodes, 0, distinct.saturating_sub(1).max(1))?,
            splits: ctx.download(&self.splits, 0, distinct.saturating_sub(1))?,
        })
    }
}

/// Builds octrees over up to a fixed number of points.
pub struct OctreeBuilder {
    steps: RadixTreeSteps,
    unique_flags: Arc<Pipeline>,
    gather_keys: Arc<Pipeline>,
    edge_counts: Arc<Pipeline>,
    link_nodes: Arc<Pipeline>,
    compact: Compact,
    scan: Scan,
    capacity: u32,
    keys: Buffer,
    values: Buffer,
    flags: Buffer,
    kept: Buffer,
    unique_keys: Buffer,
    leaf_parents: Buffer,
    edge_counts_buffer: Buffer,
    offsets: Buffer,
}

impl OctreeBuilder {
    /// A builder for up to `capacity` points with Morton codes of `bits` (10 or 21 levels).
    pub fn new(ctx: &Context, bits: MortonBits, capacity: u32) -> Result<Self> {
        // Node indices are u32: every distinct point adds at most `levels` nodes to the root.
        let levels = bits.per_axis() as u64;
        if capacity == 0 || capacity >= 1 << 30 || levels * capacity as u64 + 1 > u32::MAX as u64 {
            return Err(Error::InvalidInput(format!(
                "octree capacity {capacity}: must be in 1..{}",
                (u32::MAX as u64 - 1) / levels
            )));
        }
        let steps = RadixTreeSteps::new(ctx, "octree", bits, true, capacity)?;
        let keys64 = (bits == MortonBits::Bits63) as u32;
        let n = capacity as u64;
        let key_bytes = steps.key_bytes();
        let device = |name: &str, bytes: u64| ctx.create_buffer(name, bytes, MemoryKind::Device);
        let entries = 2 * n;
        Ok(Self {
            unique_flags: ctx.pipeline(
                &shaders::OCTREE_UNIQUE_FLAGS,
                WORKGROUP_SIZE,
                &[("KEYS64", keys64)],
            )?,
            gather_keys: ctx.pipeline(
                &shaders::OCTREE_GATHER_KEYS,
                WORKGROUP_SIZE,
                &[("KEYS64", keys64)],
            )?,
            edge_counts: ctx.pipeline(
                &shaders::OCTREE_EDGE_COUNTS,
                WORKGROUP_SIZE,
                &[("KEYS64", keys64)],
            )?,
            link_nodes: ctx.pipeline(
                &shaders::OCTREE_LINK_NODES,
                WORKGROUP_SIZE,
                &[("KEYS64", keys64)],
            )?,
            compact: Compact::new(ctx, capacity)?,
            scan: Scan::new(ctx, ScanKind::Exclusive, entries as u32)?,
            capacity,
            keys: device("octree keys", key_bytes * n)?,
            values: device("octree values", 4 * n)?,
            flags: device("octree unique flags", 4 * n)?,
            kept: device("octree kept indices", 4 * n)?,
            unique_keys: device("octree distinct keys", key_bytes * n)?,
            leaf_parents: device("octree leaf parents", 4 * n)?,
            edge_counts_buffer: device("octree edge counts", 4 * entries)?,
            offsets: device("octree edge offsets", 4 * entries)?,
            steps,
        })
    }

    /// Levels of the octree (10 or 21).
    pub fn levels(&self) -> u32 {
        self.steps.morton_bits.per_axis()
    }

    /// Device memory for the octree of up to this builder's capacity.
    pub fn allocate(&self, ctx: &Context) -> Result<Octree> {
        let n = self.capacity as u64;
        let levels = self.levels() as u64;
        Ok(Octree {
            nodes: ctx.create_buffer("octree nodes", 16 * (levels * n + 1), MemoryKind::Device)?,
            counts: ctx.create_buffer("octree counts", 8, MemoryKind::Device)?,
            radix_nodes: ctx.create_buffer(
                "octree radix nodes",
                64 * n.max(2),
                MemoryKind::Device,
            )?,
            splits: ctx.create_buffer("octree k-d splits", 8 * n.max(2), MemoryKind::Device)?,
            levels: levels as u32,
            capacity: self.capacity,
        })
    }

    /// Records the build over the points of `input` into `output` (from
    /// [`OctreeBuilder::allocate`]).
    ///
    /// Synchronisation: records no wait for earlier work: the caller orders its writes of the
    /// input before (a transfer or compute → compute barrier) and keeps earlier readers of
    /// the tree from overlapping (one build per tree in flight). Ends with a compute →
    /// compute barrier, so compute work recorded after it reads the finished tree; readers
    /// in other stages need their own barrier. Runs on the queue family `rec`'s command buffer
    /// is submitted to (compute).
    pub fn record(&self, rec: &mut Recorder, input: &PointInput, output: &Octree) -> Result<()> {
        let (points, count) = (input.positions, input.count);
        if count == 0 {
            // No points: no nodes (every query finds nothing).
            rec.fill(&output.counts, 0, 8, 0);
            rec.barrier_transfer_to_compute();
            return Ok(());
        }
        check_count("octree build", &Count::Host(count), self.capacity)?;
        if output.capacity < count || output.levels != self.levels() {
            return Err(Error::InvalidInput(format!(
                "octree build of {count} points at {} levels into an octree allocated for {} \
                 points at {} levels",
                self.levels(),
                output.capacity,
                output.levels
            )));
        }
        points.check("octree points", count as u64, 4)?;
        let steps = &self.steps;
        let host = Count::Host(count);
        let buffers = CodeBuffers {
            positions: points.address(),
            triangles: 0,
        };
        steps.record_sorted_codes(rec, &buffers, &self.keys, &self.values, host)?;
        self.record_distinct_codes(rec, count, output)?;
        // The visit counters are not used (the octree needs no boxes): they go to a buffer
        // written later.
        let tree = RadixTreeBuffers {
            keys: self.unique_keys.address(),
            nodes: output.radix_nodes.address(),
            leaf_parents: self.leaf_parents.address(),
            counters: self.edge_counts_buffer.address(),
        };
        let distinct = Count::Device {
            buffer: &output.counts,
            offset: 0,
            max: count,
        };
        steps.record_radix_tree(rec, &tree, distinct)?;
        self.record_nodes(rec, count, output)
    }

    /// `unique_flags.comp`, a compaction and `gather_keys.comp`: the distinct sorted codes
    /// (points sharing a cell merged), their count in `output.counts[0]`.
    fn record_distinct_codes(&self, rec: &mut Recorder, count: u32, output: &Octree) -> Result<()> {
        rec.begin_stage("octree: distinct codes");
        let groups = count.div_ceil(WORKGROUP_SIZE);
        let push = UniqueFlagsPush {
            keys_address: self.keys.address(),
            flags_address: self.flags.address(),
            count,
            pad: 0,
        };
        rec.dispatch(&self.unique_flags, &push, groups)?;
        rec.barrier_compute_to_compute();
        let distinct = Slice::<u32>::new(&output.counts, 0, 1);
        self.compact.record(
            rec,
            None,
            Slice::new(&self.flags, 0, count as u64),
            Slice::new(&self.kept, 0, count as u64),
            distinct,
            Count::Host(count),
        )?;
        rec.barrier_compute_to_compute();
        let push = GatherKeysPush {
            keys_address: self.keys.address(),
            indices_address: self.kept.address(),
            unique_keys_address: self.unique_keys.address(),
            count_address: distinct.address(),
        };
        rec.dispatch(&self.gather_keys, &push, groups)?;
        rec.barrier_compute_to_compute();
        rec.end_stage();
        Ok(())
    }

    /// `edge_counts.comp` (octree nodes per radix-tree edge, and the k-d splits), a scan
    /// allocating them, and `link_nodes.comp` writing them with their parents.
    fn record_nodes(&self, rec: &mut Recorder, count: u32, output: &Octree) -> Result<()> {
        rec.begin_stage("octree: nodes");
        let entries = 2 * count - 1;
        let entry_groups = entries.div_ceil(WORKGROUP_SIZE);
        let distinct_address = output.counts.address();
        let push = EdgeCountsPush {
            keys_address: self.unique_keys.address(),
            nodes_address: output.radix_nodes.address(),
            leaf_parents_address: self.leaf_parents.address(),
            bounds_address: self.steps.centroid_bounds.address(),
            count_address: distinct_address,
            edge_counts_address: self.edge_counts_buffer.address(),
            splits_address: output.splits.address(),
            entries,
            pad: 0,
        };
        rec.dispatch(&self.edge_counts, &push, entry_groups)?;
        rec.barrier_compute_to_compute();
        self.scan.record(
            rec,
            Slice::new(&self.edge_counts_buffer, 0, entries as u64),
            Slice::new(&self.offsets, 0, entries as u64),
            Count::Host(entries),
        )?;
        rec.barrier_compute_to_compute();
        let push = LinkNodesPush {
            keys_address: self.unique_keys.address(),
            nodes_address: output.radix_nodes.address(),
            leaf_parents_address: self.leaf_parents.address(),
            count_address: distinct_address,
            edge_counts_address: self.edge_counts_buffer.address(),
            offsets_address: self.offsets.address(),
            octree_address: output.nodes.address(),
            octree_count_address: output.counts.address() + 4,
            entries,
            pad: 0,
        };
        rec.dispatch(&self.link_nodes, &push, entry_groups)?;
        rec.barrier_compute_to_compute();
        rec.end_stage();
        Ok(())
    }
}

/// An octree with its builder, behind [`PointStructure`].
pub struct OctreeStructure {
    builder: OctreeBuilder,
    octree: Octree,
}

impl OctreeStructure {
    /// An octree of `bits`-bit Morton cells over up to `capacity` points.
    pub fn new(ctx: &Context, bits: MortonBits, capacity: u32) -> Result<Self> {
        let builder = OctreeBuilder::new(ctx, bits, capacity)?;
        Ok(Self {
            octree: builder.allocate(ctx)?,
            builder,
        })
    }

    /// The octree the last build wrote.
    pub fn octree(&self) -> &Octree {
        &self.octree
    }
}

impl Structure for OctreeStructure {
    fn kind(&self) -> StructureKind {
        StructureKind::Octree
    }

    fn tree_bytes(&self) -> u64 {
        self.octree.bytes()
    }

    fn describe(
        &self,
        ctx: &Context,
        _slot: usize,
        _mesh: HostMesh,
    ) -> Result<std::result::Result<TreeShape, String>> {
        Ok(Ok(self.octree.download(ctx)?.shape()))
    }
}

impl PointStructure for OctreeStructure {
    fn record_build(&mut self, rec: &mut Recorder, input: &PointInput, _slot: usize) -> Result<()> {
        self.builder.record(rec, input, &self.octree)
    }
}
