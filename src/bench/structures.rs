//! Builds of every [`StructureKind`] over a mesh, measured and counted: the GPU time of the
//! build per stage (median of timed runs), the work of one build ([`WorkCounts`]: dispatches
//! recorded and with work, barriers), device memory (tree, scratch, peak), the tree's shape
//! (nodes, leaves, depth, SAH cost), the traversal work of the same rays through it
//! ([`RaySets`]), and optionally the driver's own builder beside the LBVH and a CPU reference
//! tree of the same triangles (`canopy build`, `canopy bench lbvh|kdtree`, `cargo bench`).
//!
//! Order within one structure: the timed builds first (and the driver's builder right after,
//! in the same state of the GPU), then one untimed build under a census, the tree's checks and
//! statistics, the traversals, and last the CPU reference, whose build leaves the GPU idle
//! long enough to clock down.

use super::harness::{Timing, count_work, time_runs};
use super::meshes::BenchMesh;
use super::traversal::{NativeTrace, RaySets, TraversalReport, camera_view};
use super::{Error, Result};
use crate::accel::bvh::lbvh::{BvhLayout, BvhQuality};
use crate::accel::bvh::ploc::ClimbTraffic;
use crate::accel::native::{NativeBlasBuilder, NativeTracer};
use crate::accel::{
    AnyStructure, BuildParams, CpuReference, HostMesh, Structure, StructureKind, StructureSize,
    TreeShape, submit_until_complete,
};
use crate::trace::Tracer;
use crate::vk::{Context, WorkCounts};
use std::time::Instant;

/// How the builds are measured.
#[derive(Clone, Debug)]
pub struct BuildConfig {
    /// Timed runs per build after a warm-up (at least 1); the median is reported.
    pub repeats: u32,
    /// Timed runs per trace of each ray set (0: the traversals are counted, not timed).
    pub trace_repeats: u32,
    /// The builders' parameters.
    pub build: BuildParams,
    /// Side of the square image of camera rays whose traversal is counted (0: none); the
    /// screen grid is built for their view (for a 1024x1024 image without them).
    pub ray_side: u32,
    /// Time the driver's own builder (`VK_KHR_acceleration_structure`) beside the LBVH, where
    /// the device has it.
    pub native: bool,
    /// Order the shadow and reflected rays by direction octant, then by the Morton code of
    /// their origin, instead of by pixel: what reordering secondary rays would buy the trace.
    pub sorted_secondary_rays: bool,
    /// Build the CPU reference tree (a full-sweep SAH BVH beside the LBVH, the full-SAH
    /// kd-tree beside the kd-tree) for meshes of up to this many triangles.
    pub reference_up_to: u32,
}

impl Default for BuildConfig {
    /// 15 timed runs, traces counted and timed (15 runs) on 256x256 camera rays, the driver's
    /// builder, CPU references up to 1M triangles.
    fn default() -> Self {
        Self {
            repeats: 15,
            trace_repeats: 15,
            build: BuildParams::default(),
            ray_side: 256,
            native: true,
            sorted_secondary_rays: false,
            reference_up_to: 1_000_000,
        }
    }
}

/// Device memory of a structure, in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct MemoryReport {
    /// The tree's own buffers (what a renderer keeps).
    pub tree_bytes: u64,
    /// The builder's buffers (scratch lists, keys, counters).
    pub scratch_bytes: u64,
    /// The most device-local bytes alive at once while the builder was made and the first
    /// tree built, the input mesh excluded (a kd-tree's lists grown on overflow included).
    pub peak_bytes: u64,
}

/// The driver's builder over the same buffers, and its ray tracing of the same rays.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct NativeReport {
    /// Its build time.
    pub build: Timing,
    /// Device bytes of its acceleration structure and scratch.
    pub bytes: u64,
    /// The mesh's rays traced with the driver's ray-tracing pipeline (where the device has
    /// one), timed as canopy's traversals are.
    pub traversal: Vec<NativeTrace>,
}

/// A CPU-built tree of the same triangles.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ReferenceReport {
    /// Which builder.
    pub builder: &'static str,
    /// Its build time on the CPU, in seconds (one thread).
    pub cpu_seconds: f64,
    /// Its tree.
    pub tree: TreeShape,
    /// The GPU tree's SAH cost over this one's.
    pub sah_ratio: Option<f64>,
    /// The same rays through it (where it can be traced on the GPU).
    pub traversal: Vec<TraversalReport>,
    /// The device memory the GPU tree's climb moves, replayed on the CPU (the LBVH).
    pub climb_traffic: Option<ClimbTraffic>,
    /// The device memory its treelet passes move, replayed on the CPU (an LBVH of the best
    /// quality).
    pub treelet_traffic: Option<ClimbTraffic>,
}

/// One structure built over one mesh, measured.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct StructureReport {
    /// Which structure.
    pub structure: StructureKind,
    /// The quality of the BVH it builds (the LBVH, and the screen grid's for its other rays).
    pub bvh_quality: Option<BvhQuality>,
    /// How rays read that BVH.
    pub bvh_layout: Option<BvhLayout>,
    /// The mesh's label.
    pub mesh: String,
    /// Triangles of the mesh.
    pub triangles: u32,
    /// Vertices of the mesh.
    pub vertices: u32,
    /// What it was built over: the triangles, or the vertices (octree).
    pub primitives: u32,
    /// GPU time of the build, per stage.
    pub build: Timing,
    /// GPU time of a refit of the built tree (the LBVH, [`crate::accel::bvh::refit`]).
    pub refit: Option<Timing>,
    /// The work of one build.
    pub work: WorkCounts,
    /// Device memory.
    pub memory: MemoryReport,
    /// The tree.
    pub tree: TreeShape,
    /// The rays of the mesh through the tree (none for the octree).
    pub traversal: Vec<TraversalReport>,
    /// The driver's builder (LBVH only, where the device has one).
    pub native: Option<NativeReport>,
    /// The CPU reference (LBVH and kd-tree, up to [`BuildConfig::reference_up_to`]).
    pub reference: Option<ReferenceReport>,
}

impl StructureReport {
    /// The structure's name in tables: `lbvh-hq` for a high-quality LBVH and `lbvh-best` for
    /// one restructured by treelets, `lbvh-wide`, `lbvh-hq-wide` and `lbvh-best-wide` for
    /// those traced as 8-wide trees.
    pub fn label(&self) -> &'static str {
        let wide = self.bvh_layout == Some(BvhLayout::Wide);
        match (self.structure, self.bvh_quality, wide) {
            (StructureKind::Lbvh, Some(BvhQuality::High), false) => "lbvh-hq",
            (StructureKind::Lbvh, Some(BvhQuality::High), true) => "lbvh-hq-wide",
            (StructureKind::Lbvh, Some(BvhQuality::Best), false) => "lbvh-best",
            (StructureKind::Lbvh, Some(BvhQuality::Best), true) => "lbvh-best-wide",
            (StructureKind::Lbvh, _, true) => "lbvh-wide",
            (kind, _, _) => kind.name(),
        }
    }
}

/// Makes a structure of `kind` for `mesh` and builds the first tree (a kd-tree's lists grown
/// until they fit).
fn build_first(
    ctx: &Context,
    kind: StructureKind,
    mesh: &BenchMesh,
    config: &BuildConfig,
) -> Result<AnyStructure> {
    let size = StructureSize {
        triangles: mesh.triangle_count(),
        vertices: mesh.vertex_count(),
    };
    let mut built = kind.create(ctx, &config.build, size, 1)?;
    let side = if config.ray_side > 0 {
        config.ray_side
    } else {
        1024
    };
    built.set_view(ctx, &camera_view(mesh, side))?;
    let (input, vertices) = (mesh.input(), mesh.vertex_count());
    submit_until_complete(ctx, &mut built, |rec, built| {
        built.record_build(rec, &input, vertices, 0)
    })?;
    Ok(built)
}

/// Measures the structures of one mesh; the mesh's rays are made once and traced through
/// every structure.
pub struct MeshBench<'a> {
    ctx: &'a Context,
    mesh: &'a BenchMesh,
    config: BuildConfig,
    tracer: Tracer,
    rays: Option<RaySets>,
}

impl<'a> MeshBench<'a> {
    /// Measurements of `mesh` under `config`.
    pub fn new(ctx: &'a Context, mesh: &'a BenchMesh, config: BuildConfig) -> Result<Self> {
        let rays = (config.ray_side > 0 && mesh.triangle_count() > 0)
            .then(|| RaySets::new(ctx, mesh, config.ray_side, config.sorted_secondary_rays))
            .transpose()?;
        Ok(Self {
            ctx,
            mesh,
            config,
            tracer: Tracer::new(ctx)?,
            rays,
        })
    }

    /// Builds `kind` over the mesh and measures it.
    pub fn measure(&mut self, kind: StructureKind) -> Result<StructureReport> {
        let (ctx, mesh, config) = (self.ctx, self.mesh, &self.config);
        let builds_bvh = kind.builds_bvh();
        let bvh_quality = builds_bvh.then_some(config.build.lbvh.quality);
        let bvh_layout = builds_bvh.then_some(config.build.lbvh.layout);
        let primitives = if kind.over_triangles() {
            mesh.triangle_count()
        } else {
            mesh.vertex_count()
        };
        if primitives == 0 {
            return Err(Error::Invalid(format!(
                "{} has no triangles: the {kind} is built over triangles",
                mesh.label
            )));
        }
        let base = ctx.device_memory().live;
        ctx.reset_peak_memory();
        let mut built = build_first(ctx, kind, mesh, config)?;
        let (input, vertices) = (mesh.input(), mesh.vertex_count());
        let after = ctx.device_memory();
        let tree_bytes = built.tree_bytes();
        let memory = MemoryReport {
            tree_bytes,
            scratch_bytes: (after.live - base).saturating_sub(tree_bytes),
            peak_bytes: after.peak - base,
        };
        let build = time_runs(
            ctx,
            config.repeats,
            |_| Ok(()),
            |rec| built.record_build(rec, &input, vertices, 0),
        )?;
        let refit = match &mut built {
            AnyStructure::Rays(structure) if kind == StructureKind::Lbvh => Some(time_runs(
                ctx,
                config.repeats,
                |_| Ok(()),
                |rec| structure.record_refit(rec, &input),
            )?),
            _ => None,
        };
        let mut native = if kind == StructureKind::Lbvh && config.native {
            self.native()?
        } else {
            None
        };
        let work = count_work(ctx, |rec| built.record_build(rec, &input, vertices, 0))?;
        let host = HostMesh {
            positions: &mesh.host.positions,
            triangles: &mesh.host.triangles,
        };
        let tree = built
            .describe(ctx, 0, host)?
            .map_err(|e| Error::InvalidTree(format!("{}: {e}", mesh.label)))?;
        let traversal = match (&built, self.rays.as_mut()) {
            (AnyStructure::Rays(structure), Some(rays)) => {
                let structure = structure.traversable(&input);
                rays.trace(
                    ctx,
                    &self.tracer,
                    mesh,
                    structure.as_ref(),
                    config.trace_repeats,
                )?
            }
            _ => Vec::new(),
        };
        if let (Some((_, builder)), Some(rays)) = (&native, &self.rays)
            && let Some(tracer) = NativeTracer::new(ctx, builder)?
        {
            let n = mesh.triangle_count();
            ctx.submit_and_wait(|rec| {
                builder.record(rec, &mesh.positions, vertices, &mesh.triangles, n)?;
                tracer.record_top_level(rec);
                Ok(())
            })?;
            let traces = rays.trace_native(ctx, &tracer, config.trace_repeats)?;
            if let Some((report, _)) = native.as_mut() {
                report.traversal = traces;
            }
        }
        let native = native.map(|(report, _)| report);
        let reference = if mesh.triangle_count() <= config.reference_up_to {
            self.reference(kind, &tree)?
        } else {
            None
        };
        Ok(StructureReport {
            structure: kind,
            bvh_quality,
            bvh_layout,
            mesh: mesh.label.clone(),
            triangles: mesh.triangle_count(),
            vertices: mesh.vertex_count(),
            primitives,
            build,
            refit,
            work,
            memory,
            tree,
            traversal,
            native,
            reference,
        })
    }

    /// The driver's builder over the mesh, timed (its rays not yet traced), and the builder;
    /// `None` where the device has none.
    fn native(&self) -> Result<Option<(NativeReport, NativeBlasBuilder)>> {
        let (ctx, mesh) = (self.ctx, self.mesh);
        let (n, vertices) = (mesh.triangle_count(), mesh.vertex_count());
        let Some(native) = NativeBlasBuilder::new(ctx, n, vertices)? else {
            return Ok(None);
        };
        let build = time_runs(
            ctx,
            self.config.repeats,
            |_| Ok(()),
            |rec| native.record(rec, &mesh.positions, vertices, &mesh.triangles, n),
        )?;
        let report = NativeReport {
            build,
            bytes: native.bytes(),
            traversal: Vec::new(),
        };
        Ok(Some((report, native)))
    }

    /// The CPU reference of `kind` over the mesh, compared with the GPU tree `gpu`.
    fn reference(
        &mut self,
        kind: StructureKind,
        gpu: &TreeShape,
    ) -> Result<Option<ReferenceReport>> {
        let Some(build_reference) = kind.facts().reference else {
            return Ok(None);
        };
        let (ctx, mesh) = (self.ctx, self.mesh);
        let host = HostMesh {
            positions: &mesh.host.positions,
            triangles: &mesh.host.triangles,
        };
        let started = Instant::now();
        let reference = build_reference(host, &self.config.build)
            .map_err(|e| Error::InvalidTree(format!("{}: {e}", mesh.label)))?;
        let cpu_seconds = started.elapsed().as_secs_f64();
        let traversal = match (&reference.traced, self.rays.as_mut()) {
            (Some(cpu_tree), Some(rays)) => {
                let input = mesh.input();
                let uploaded = cpu_tree.upload(ctx)?;
                let structure = uploaded.over(&input);
                rays.trace(
                    ctx,
                    &self.tracer,
                    mesh,
                    structure.as_ref(),
                    self.config.trace_repeats,
                )?
            }
            _ => Vec::new(),
        };
        let CpuReference {
            builder,
            tree,
            climb_traffic,
            treelet_traffic,
            ..
        } = reference;
        let ratio = match (gpu.sah_cost, tree.sah_cost) {
            (Some(g), Some(c)) if c > 0.0 => Some(g / c),
            _ => None,
        };
        Ok(Some(ReferenceReport {
            builder,
            cpu_seconds,
            tree,
            sah_ratio: ratio,
            traversal,
            climb_traffic,
            treelet_traffic,
        }))
    }
}
