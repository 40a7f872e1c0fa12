//! The BVH builder: every frame from scratch, in four GPU steps.
//!
//! 1. `glsl/radix_tree/primitive_bounds.comp`: the bounds of the triangles' box centres, in one
//!    dispatch.
//! 2. `glsl/radix_tree/morton_codes.comp`: 30- or 63-bit Morton code of each box centre (recomputed
//!    from the vertices: cheaper than storing a box per triangle).
//! 3. [`crate::prims::radix_sort::RadixSort`] of (code, triangle) pairs: the sorted values are the leaf order.
//! 4. `glsl/bvh/hploc.comp`: the whole tree in one dispatch, climbing the radix tree of the
//!    sorted codes bottom-up without building it, and each leaf's triangle copied in leaf
//!    order. [`BvhQuality::Fast`] merges every radix-tree node's two children at once: the
//!    LBVH of Karras (2012), built with its boxes as Apetrei (2014) does. [`BvhQuality::High`]
//!    reduces the clusters of every range by PLOC on the way up (H-PLOC, Benthin et al. 2024;
//!    [`crate::accel::bvh::ploc`] is the reference).
//! 5. With [`BvhQuality::Best`], after the fast climb: `glsl/bvh/treelets.comp`, treelet
//!    restructuring (Karras & Aila 2013), one dispatch per pass
//!    ([`crate::accel::bvh::treelet`] is the reference).
//!
//! The output is a [`Bvh`] in the format of [`crate::accel::bvh`]. Scratch memory, sized for
//! the capacity: the keys, the sort's own, and the climb's clusters, cluster counts and
//! boundary slots (40 bytes per triangle).

use super::BvhNode;
use super::cpu::MortonLeaves;
use super::cpu::check_invariants;
use super::ploc::{self, ClimbTraffic, ClusterParams};
use super::refit::BvhRefitter;
use super::treelet::{self, TreeletParams, TreeletPasses};
use super::wide::cpu::check_wide_invariants;
use super::wide::{Collapser, WIDE_STACK_SIZE, WideBvh};
use super::{Bvh, MAX_TRAVERSAL_HEIGHT};
use crate::accel::radix_tree::{CodeBuffers, RadixTreeSteps};
use crate::accel::{HostMesh, RayStructure, Structure, StructureKind, Traversable, TreeShape};
use crate::geom::TriangleInput;
use crate::geom::aabb::triangle_bounds;
use crate::prims::{WORKGROUP_SIZE, check_count};
use crate::shaders;
use crate::vk::Count;
use crate::vk::{Buffer, Context, Error, MemoryKind, Pipeline, Recorder, Result};
use std::sync::Arc;

use crate::geom::morton::MortonBits;

/// The tree a build makes: how far it goes for a low SAH cost.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum BvhQuality {
    /// The binary radix tree of the Morton codes (LBVH): the least build work.
    #[default]
    Fast,
    /// Clusters merged by surface area on the way up (H-PLOC): a tree of SAH cost close to a
    /// full-sweep SAH build, for a few more passes over each workgroup's clusters.
    High,
    /// The fast tree, then restructured by treelets (Karras & Aila 2013) in two passes over
    /// the nodes of 8 leaves or more: the lowest SAH cost (within 7% of a full-sweep SAH
    /// build on every mesh measured), for the slowest build.
    Best,
}

impl BvhQuality {
    /// Every quality, fastest build first.
    pub const ALL: [Self; 3] = [Self::Fast, Self::High, Self::Best];

    /// How the climb clusters for this quality.
    pub const fn cluster_params(self) -> ClusterParams {
        match self {
            Self::Fast | Self::Best => ClusterParams {
                merge_threshold: 1,
                search_radius: 1,
            },
            // Measured on the shared meshes: larger thresholds and radii buy nothing
            // (BENCHMARKS.md, "Less work per frame").
            Self::High => ClusterParams {
                merge_threshold: 16,
                search_radius: 8,
            },
        }
    }

    /// How the tree is restructured after the climb.
    pub const fn treelet_params(self) -> TreeletParams {
        match self {
            Self::Fast | Self::High => TreeletParams {
                passes: 0,
                min_leaves: 0,
            },
            // Measured on the shared meshes (BENCHMARKS.md, "Treelet restructuring"): a third
            // pass, or treelets at nodes of fewer leaves, lower the SAH cost by 1% or less.
            Self::Best => TreeletParams {
                passes: 2,
                min_leaves: 8,
            },
        }
    }

    /// The tree a build of this quality makes over `leaves`, made on the CPU as the GPU makes
    /// it, node for node: the climb ([`ploc::cluster_sorted`]), then the treelet passes
    /// ([`treelet::restructure`]); with the bytes each step moves in device memory.
    pub fn build_on_cpu(self, leaves: &MortonLeaves, key_bits: u32) -> CpuBuild {
        let mut climb = ploc::cluster_sorted(
            &leaves.keys,
            key_bits,
            &leaves.leaf_boxes,
            self.cluster_params(),
        );
        let treelets = self.treelet_params();
        if treelets.passes > 0 {
            // The climb also writes each leaf's parent.
            climb.traffic.write(4 * leaves.keys.len() as u64);
        }
        let treelet_traffic = treelet::restructure(&mut climb.nodes, treelets);
        CpuBuild {
            nodes: climb.nodes,
            climb_traffic: climb.traffic,
            treelet_traffic,
        }
    }

    /// Its name on the command line.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Fast => "fast",
            Self::High => "high",
            Self::Best => "best",
        }
    }
}

/// A tree made on the CPU as a build of some quality makes it ([`BvhQuality::build_on_cpu`]).
pub struct CpuBuild {
    /// The internal nodes, numbered as the GPU numbers them.
    pub nodes: Vec<BvhNode>,
    /// The bytes the climb moves in device memory.
    pub climb_traffic: ClimbTraffic,
    /// The bytes the treelet passes move (none without passes).
    pub treelet_traffic: ClimbTraffic,
}

/// How traversal reads the tree a build makes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum BvhLayout {
    /// The binary tree as built: two children per 64-byte node.
    #[default]
    Binary,
    /// The binary tree collapsed into an 8-wide compressed tree by one more dispatch
    /// ([`crate::accel::bvh::wide`]): up to eight children per 80-byte node, about a third of
    /// the binary tree's node reads per ray.
    Wide,
}

impl BvhLayout {
    /// Its name on the command line.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Binary => "binary",
            Self::Wide => "wide",
        }
    }
}

/// BVH build parameters.
#[derive(Clone, Copy, Debug)]
pub struct LbvhParams {
    /// Morton code width (default 30 bits).
    pub morton_bits: MortonBits,
    /// Invocations per workgroup of the fast climb (default 32, rounded up to a multiple of
    /// the subgroup size; at most 256). Its invocations climb for very different numbers of
    /// levels and a workgroup ends with its last one, so small workgroups keep the GPU
    /// busier: on an H100 at 1M triangles the climb takes 0.307 ms in workgroups of 32 and
    /// 0.398 ms in workgroups of 256. The high-quality climb's workgroups hold twice its
    /// merge threshold.
    pub climb_workgroup_size: u32,
    /// Which tree to build (default [`BvhQuality::Fast`]).
    pub quality: BvhQuality,
    /// How traversal reads it (default [`BvhLayout::Binary`]).
    pub layout: BvhLayout,
}

impl Default for LbvhParams {
    fn default() -> Self {
        Self {
            morton_bits: MortonBits::default(),
            climb_workgroup_size: 32,
            quality: BvhQuality::default(),
            layout: BvhLayout::default(),
        }
    }
}

/// Push constants of `hploc.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct ClimbPush {
    /// Sorted keys.
    pub keys_address: u64,
    /// Vertex positions.
    pub positions_address: u64,
    /// Triangle indices.
    pub triangles_address: u64,
    /// Triangle of each leaf.
    pub leaf_primitives_address: u64,
    /// Internal nodes written.
    pub nodes_address: u64,
    /// Leaf triangles written.
    pub leaf_triangles_address: u64,
    /// Clusters (32 bytes per leaf position).
    pub clusters_address: u64,
    /// Cluster counts (u32 per leaf position).
    pub cluster_counts_address: u64,
    /// Boundary slots (u32 per boundary, all `NO_PARENT` between builds).
    pub slots_address: u64,
    /// The root's height written (host-visible).
    pub height_address: u64,
    /// Each leaf's parent written, for the treelet passes (u32 per leaf).
    pub leaf_parents_address: u64,
    /// Triangles.
    pub host_count: u32,
    /// Padding.
    pub pad: u32,
}

/// Bytes of one cluster of the climb (`Cluster` in `glsl/bvh/hploc.comp`).
const CLUSTER_BYTES: u64 = 32;

/// Builds BVHs over up to a fixed number of triangles; reusable every frame.
pub struct LbvhBuilder {
    params: LbvhParams,
    steps: RadixTreeSteps,
    climb: Arc<Pipeline>,
    climb_workgroup_size: u32,
    treelets: Option<TreeletPasses>,
    capacity: u32,
    /// Clusters, cluster counts and boundary slots.
    arena: Buffer,
    keys: Buffer,
}

impl LbvhBuilder {
    /// A builder for up to `capacity` triangles.
    pub fn new(ctx: &Context, params: LbvhParams, capacity: u32) -> Result<Self> {
        // Leaf positions and boundaries are u32, with NO_PARENT reserved; below 2^30 as the
        // radix tree's own limit.
        if capacity == 0 || capacity >= 1 << 30 {
            return Err(Error::InvalidInput(format!(
                "LBVH capacity {capacity}: must be in 1..2^30"
            )));
        }
        let subgroup = ctx.caps().subgroup_size;
        let clusters = params.quality.cluster_params();
        let climb = match clusters.merge_threshold {
            1 => params.climb_workgroup_size,
            threshold => 2 * threshold,
        }
        .next_multiple_of(subgroup);
        if climb == 0 || climb > WORKGROUP_SIZE {
            return Err(Error::InvalidInput(format!(
                "LBVH climb workgroup size {}: must be from 1 to {WORKGROUP_SIZE}",
                params.climb_workgroup_size
            )));
        }
        let steps = RadixTreeSteps::new(ctx, "lbvh", params.morton_bits, false, capacity)?;
        let n = capacity as u64;
        let arena = ctx.create_buffer("lbvh climb", (CLUSTER_BYTES + 8) * n, MemoryKind::Device)?;
        // Every build leaves the slots as it found them.
        ctx.submit_and_wait(|rec| {
            rec.fill(&arena, (CLUSTER_BYTES + 4) * n, 4 * n, u32::MAX);
            Ok(())
        })?;
        let treelet_params = params.quality.treelet_params();
        let treelets = match treelet_params.passes {
            0 => None,
            _ => Some(TreeletPasses::new(ctx, treelet_params, capacity)?),
        };
        Ok(Self {
            climb: ctx.pipeline(
                &shaders::BVH_HPLOC,
                climb,
                &[
                    ("KEYS64", (params.morton_bits == MortonBits::Bits63) as u32),
                    (
                        "UNIFORM_CLIMB",
                        ctx.caps().ends_divergent_invocations_at_memory_barriers() as u32,
                    ),
                    ("MERGE_THRESHOLD", clusters.merge_threshold),
                    ("SEARCH_RADIUS", clusters.search_radius),
                    ("WRITES_LEAF_PARENTS", treelets.is_some() as u32),
                ],
            )?,
            treelets,
            arena,
            keys: ctx.create_buffer("lbvh keys", n * steps.key_bytes(), MemoryKind::Device)?,
            params,
            steps,
            capacity,
            climb_workgroup_size: climb,
        })
    }

    /// The parameters it builds with.
    pub fn params(&self) -> LbvhParams {
        self.params
    }

    /// The most triangles a build can take.
    pub fn capacity(&self) -> u32 {
        self.capacity
    }

    /// Bytes the bounds, Morton codes and sort of a build move in device memory per triangle,
    /// counted from the kernels' access pattern (the tree's steps are counted by
    /// [`BvhQuality::build_on_cpu`], which replays them).
    pub fn sorted_codes_bytes_per_triangle(&self) -> f64 {
        self.steps.sorted_codes_bytes_per_triangle()
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
    /// the tree from overlapping (one build per tree in flight, and one build per builder).
    /// Ends with a compute → compute barrier, so compute work recorded after it reads the
    /// finished tree (and the host its [`Bvh::height`] once the submission has completed);
    /// readers in other stages need their own barrier. Runs on the queue
    /// family `rec`'s command buffer is submitted to (compute).
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
        };
        steps.record_sorted_codes(rec, &buffers, &self.keys, &output.leaf_primitives, count)?;

        rec.begin_stage("lbvh: tree");
        let arena = self.arena.address();
        let capacity = self.capacity as u64;
        let push = ClimbPush {
            keys_address: self.keys.address(),
            positions_address: input.positions.address(),
            triangles_address: input.triangles.address(),
            leaf_primitives_address: values,
            nodes_address: output.nodes.address(),
            leaf_triangles_address: output.leaf_triangles.address(),
            clusters_address: arena,
            cluster_counts_address: arena + CLUSTER_BYTES * capacity,
            slots_address: arena + (CLUSTER_BYTES + 4) * capacity,
            height_address: output.height_address(),
            leaf_parents_address: self
                .treelets
                .as_ref()
                .map_or(0, TreeletPasses::leaf_parents_address),
            host_count: n,
            pad: 0,
        };
        rec.dispatch(&self.climb, &push, n.div_ceil(self.climb_workgroup_size))?;
        rec.barrier_compute_to_compute();
        rec.end_stage();
        if let Some(treelets) = &self.treelets {
            rec.begin_stage("lbvh: treelets");
            treelets.record(rec, output)?;
            rec.end_stage();
        }
        Ok(())
    }
}

/// An LBVH with its builder, behind [`RayStructure`]; with [`BvhLayout::Wide`] also the
/// collapse into an 8-wide tree, which rays are then traced through.
pub struct LbvhStructure {
    builder: LbvhBuilder,
    bvh: Bvh,
    wide: Option<(Collapser, WideBvh)>,
    /// Made on the first refit.
    refitter: Option<BvhRefitter>,
}

impl LbvhStructure {
    /// An LBVH built with `params` over up to `triangles` triangles.
    pub fn new(ctx: &Context, params: LbvhParams, triangles: u32) -> Result<Self> {
        let wide = match params.layout {
            BvhLayout::Binary => None,
            BvhLayout::Wide => Some((
                Collapser::new(ctx, triangles)?,
                WideBvh::new(ctx, triangles)?,
            )),
        };
        Ok(Self {
            builder: LbvhBuilder::new(ctx, params, triangles)?,
            bvh: Bvh::new(ctx, triangles)?,
            wide,
            refitter: None,
        })
    }

    /// The tree the last build wrote.
    pub fn bvh(&self) -> &Bvh {
        &self.bvh
    }

    /// The 8-wide tree the last build wrote, with [`BvhLayout::Wide`].
    pub fn wide_bvh(&self) -> Option<&WideBvh> {
        self.wide.as_ref().map(|(_, wide)| wide)
    }
}

impl Structure for LbvhStructure {
    fn kind(&self) -> StructureKind {
        StructureKind::Lbvh
    }

    /// A wide tree left incomplete (its collapse gave up waiting, on a CPU device under load)
    /// is made again. A tree too deep for traversal's stack makes this structure change what
    /// it builds: a wide tree needing more stack than [`WIDE_STACK_SIZE`] is no longer made
    /// (rays go through the binary tree), and a high-quality binary tree taller than
    /// [`MAX_TRAVERSAL_HEIGHT`] (nested shells of growing size can make one) is built fast
    /// from then on.
    fn grow_if_overflowed(&mut self, ctx: &Context, _slot: usize) -> Result<bool> {
        if let Some((collapser, wide)) = &self.wide {
            if !wide.complete() {
                log::warn!("the 8-wide BVH's collapse left nodes unmade: making it again");
                collapser.recover(ctx)?;
                return Ok(true);
            }
            if wide.fits_traversal_stack() {
                return Ok(false);
            }
            log::warn!(
                "an 8-wide BVH needing {} stack entries does not fit the traversal stack of \
                 {WIDE_STACK_SIZE}: tracing the binary BVH from now on",
                wide.stack_need()
            );
            self.wide = None;
            if self.bvh.fits_traversal_stack() {
                return Ok(true);
            }
        }
        if self.bvh.fits_traversal_stack() {
            return Ok(false);
        }
        log::warn!(
            "a high-quality BVH {} levels tall does not fit the traversal stack of {}: \
             building fast BVHs from now on",
            self.bvh.height(),
            MAX_TRAVERSAL_HEIGHT
        );
        let params = LbvhParams {
            quality: BvhQuality::Fast,
            ..self.builder.params()
        };
        self.builder = LbvhBuilder::new(ctx, params, self.builder.capacity())?;
        Ok(true)
    }

    fn tree_bytes(&self) -> u64 {
        self.bvh.bytes() + self.wide_bvh().map_or(0, WideBvh::bytes)
    }

    fn describe(
        &self,
        ctx: &Context,
        _slot: usize,
        mesh: HostMesh,
    ) -> Result<std::result::Result<TreeShape, String>> {
        let (nodes, leaves) = self.bvh.download(ctx)?;
        let boxes = triangle_bounds(mesh.positions, mesh.triangles);
        let shape = match check_invariants(&nodes, &leaves, &boxes) {
            Ok(stats) => stats.shape(),
            Err(fault) => return Ok(Err(fault)),
        };
        if let Some(wide) = self.wide_bvh() {
            let tree = wide.download(ctx)?;
            if let Err(fault) = check_wide_invariants(&tree, &boxes) {
                return Ok(Err(format!("the 8-wide tree: {fault}")));
            }
        }
        Ok(Ok(shape))
    }
}

impl RayStructure for LbvhStructure {
    fn record_build(
        &mut self,
        rec: &mut Recorder,
        input: &TriangleInput,
        _slot: usize,
    ) -> Result<()> {
        self.builder.record(rec, input, &mut self.bvh)?;
        if let Some((collapser, wide)) = &mut self.wide {
            collapser.record(rec, &self.bvh, wide)?;
        }
        Ok(())
    }

    /// Two dispatches over the tree: its boxes exact, its order the old positions' (see
    /// [`super::refit`] for what that costs tracing). With [`BvhLayout::Wide`] the 8-wide
    /// tree is collapsed again from the refitted one.
    fn record_refit(&mut self, rec: &mut Recorder, input: &TriangleInput) -> Result<()> {
        let refitter = match &mut self.refitter {
            Some(refitter) => refitter,
            none => none.insert(BvhRefitter::new(rec.context(), self.builder.capacity())?),
        };
        refitter.record(rec, input, &self.bvh)?;
        if let Some((collapser, wide)) = &mut self.wide {
            collapser.record(rec, &self.bvh, wide)?;
        }
        Ok(())
    }

    fn traversable<'a>(&'a self, _input: &TriangleInput<'a>) -> Box<dyn Traversable + 'a> {
        match self.wide_bvh() {
            Some(wide) => Box::new(wide),
            None => Box::new(&self.bvh),
        }
    }
}
