//! One table of facts per structure, in the spirit of Mesa's
//! `vk_acceleration_structure_build_ops` (a struct of facts and step functions per
//! implementation): what each [`StructureKind`] is called, what it is built over, whether it
//! needs a view, sorts Morton codes or builds a BVH, how it is created and how its CPU
//! reference is built. The command line, the benchmarks, the frame sequence and the tests read
//! these facts instead of matching on the kind, so a new structure is one variant, one entry
//! in [`STRUCTURES`] and its folder.

use super::bih::BihTree;
use super::bih::build::BihStructure;
use super::bih::cpu::{build_bih, check_bih};
use super::bih::trace::BihTreeGpu;
use super::bvh::cpu::{MortonLeaves, tree_stats};
use super::bvh::lbvh::LbvhStructure;
use super::bvh::ploc::ClimbTraffic;
use super::bvh::sah;
use super::grid::build::GridStructure;
use super::kdtree::build::KdTreeStructure;
use super::kdtree::cpu::{build_sah_kdtree, kdtree_stats};
use super::kdtree::{KdTree, KdTreeGpu};
use super::octree::OctreeStructure;
use super::pointkd::build::PointKdStructure;
use super::{AnyStructure, BuildParams, HostMesh, StructureKind, Traversable, TreeShape};
use crate::geom::TriangleInput;
use crate::vk::{Context, Result};

/// What a structure is built over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Primitives {
    /// The mesh's triangles; rays are traced through it.
    Triangles,
    /// The mesh's vertices, as points.
    Points,
}

/// The sizes a structure's memory is allocated for ([`StructureKind::create`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StructureSize {
    /// The most triangles of the meshes it is built over.
    pub triangles: u32,
    /// The most vertices of those meshes (what structures over points are built over).
    pub vertices: u32,
}

/// Makes a structure: its builder's memory sized for `size`, with `slots` builds in flight.
pub type CreateFn = fn(
    ctx: &Context,
    params: &BuildParams,
    size: StructureSize,
    slots: usize,
) -> Result<AnyStructure>;

/// Builds a structure's CPU reference over a mesh (under the parameters the GPU build
/// used); the error names the first invariant the reference broke.
pub type ReferenceFn =
    fn(mesh: HostMesh, params: &BuildParams) -> std::result::Result<CpuReference, String>;

/// What canopy knows of one structure.
#[derive(Clone, Copy, Debug)]
pub struct StructureFacts {
    /// Which structure.
    pub kind: StructureKind,
    /// The name commands take and reports print.
    pub name: &'static str,
    /// What it is built over.
    pub over: Primitives,
    /// Whether it is built for a pinhole view ([`super::RayStructure::set_view`]).
    pub needs_view: bool,
    /// Whether its build sorts Morton codes (whose width [`crate::geom::MortonBits`] sets).
    pub uses_morton_codes: bool,
    /// Whether it builds a BVH whose quality and layout [`super::bvh::lbvh::LbvhParams`] set
    /// (the LBVH, and the screen grid's for its other rays).
    pub builds_bvh: bool,
    /// How it is made.
    pub create: CreateFn,
    /// Its CPU reference, where it has one that benchmarks compare it with.
    pub reference: Option<ReferenceFn>,
}

/// A structure's CPU reference over one mesh.
pub struct CpuReference {
    /// Which builder.
    pub builder: &'static str,
    /// Its tree.
    pub tree: TreeShape,
    /// The tree, where rays can be traced through it once uploaded.
    pub traced: Option<Box<dyn ReferenceTree>>,
    /// The device memory the GPU tree's climb moves, replayed on the CPU (the LBVH).
    pub climb_traffic: Option<ClimbTraffic>,
    /// The device memory its treelet passes move, replayed on the CPU (an LBVH of the best
    /// quality).
    pub treelet_traffic: Option<ClimbTraffic>,
}

/// A tree built on the CPU that rays can be traced through on the GPU.
pub trait ReferenceTree {
    /// The tree in device memory.
    fn upload(&self, ctx: &Context) -> Result<Box<dyn UploadedTree>>;
}

/// A [`ReferenceTree`] in device memory.
pub trait UploadedTree {
    /// The tree, to trace the triangles of `input` (those it was built over) through.
    fn over<'a>(&'a self, input: &TriangleInput<'a>) -> Box<dyn Traversable + 'a>;
}

/// Every structure's facts, in the order reports list them; entry `i` is the kind whose
/// discriminant is `i` ([`StructureKind::facts`]).
pub static STRUCTURES: [StructureFacts; TABLE.len()] = TABLE;

const TABLE: [StructureFacts; 6] = [
    StructureFacts {
        kind: StructureKind::Lbvh,
        name: "lbvh",
        over: Primitives::Triangles,
        needs_view: false,
        uses_morton_codes: true,
        builds_bvh: true,
        create: create_lbvh,
        reference: Some(reference_lbvh),
    },
    StructureFacts {
        kind: StructureKind::KdTree,
        name: "kdtree",
        over: Primitives::Triangles,
        needs_view: false,
        uses_morton_codes: false,
        builds_bvh: false,
        create: create_kdtree,
        reference: Some(reference_kdtree),
    },
    StructureFacts {
        kind: StructureKind::Octree,
        name: "octree",
        over: Primitives::Points,
        needs_view: false,
        uses_morton_codes: true,
        builds_bvh: false,
        create: create_octree,
        reference: None,
    },
    StructureFacts {
        kind: StructureKind::Bih,
        name: "bih",
        over: Primitives::Triangles,
        needs_view: false,
        uses_morton_codes: false,
        builds_bvh: false,
        create: create_bih,
        reference: Some(reference_bih),
    },
    StructureFacts {
        kind: StructureKind::Grid,
        name: "grid",
        over: Primitives::Triangles,
        needs_view: true,
        uses_morton_codes: true,
        builds_bvh: true,
        create: create_grid,
        reference: None,
    },
    StructureFacts {
        kind: StructureKind::PointKd,
        name: "pointkd",
        over: Primitives::Points,
        needs_view: false,
        uses_morton_codes: false,
        builds_bvh: false,
        create: create_pointkd,
        reference: None,
    },
];

/// The kinds of [`TABLE`], in its order; a table out of the variants' order does not compile.
pub(super) const KINDS: [StructureKind; TABLE.len()] = {
    let mut kinds = [StructureKind::Lbvh; TABLE.len()];
    let mut i = 0;
    while i < TABLE.len() {
        assert!(
            TABLE[i].kind as usize == i,
            "STRUCTURES out of StructureKind's order"
        );
        kinds[i] = TABLE[i].kind;
        i += 1;
    }
    kinds
};

fn create_lbvh(
    ctx: &Context,
    params: &BuildParams,
    size: StructureSize,
    _slots: usize,
) -> Result<AnyStructure> {
    let structure = LbvhStructure::new(ctx, params.lbvh, size.triangles)?;
    Ok(AnyStructure::Rays(Box::new(structure)))
}

fn create_kdtree(
    ctx: &Context,
    params: &BuildParams,
    size: StructureSize,
    slots: usize,
) -> Result<AnyStructure> {
    let structure = KdTreeStructure::new(ctx, params.kdtree, size.triangles, slots)?;
    Ok(AnyStructure::Rays(Box::new(structure)))
}

fn create_octree(
    ctx: &Context,
    params: &BuildParams,
    size: StructureSize,
    _slots: usize,
) -> Result<AnyStructure> {
    let structure = OctreeStructure::new(ctx, params.lbvh.morton_bits, size.vertices)?;
    Ok(AnyStructure::Points(Box::new(structure)))
}

fn create_bih(
    ctx: &Context,
    params: &BuildParams,
    size: StructureSize,
    _slots: usize,
) -> Result<AnyStructure> {
    let structure = BihStructure::new(ctx, params.bih, size.triangles)?;
    Ok(AnyStructure::Rays(Box::new(structure)))
}

fn create_grid(
    ctx: &Context,
    params: &BuildParams,
    size: StructureSize,
    slots: usize,
) -> Result<AnyStructure> {
    let structure = GridStructure::new(ctx, params.grid, params.lbvh, size.triangles, slots)?;
    Ok(AnyStructure::Rays(Box::new(structure)))
}

fn create_pointkd(
    ctx: &Context,
    params: &BuildParams,
    size: StructureSize,
    _slots: usize,
) -> Result<AnyStructure> {
    let structure = PointKdStructure::new(ctx, params.pointkd, size.vertices)?;
    Ok(AnyStructure::Points(Box::new(structure)))
}

/// The LBVH's reference: a full-sweep SAH BVH, and the device traffic of the GPU's climb
/// (and treelet passes) replayed on the CPU.
fn reference_lbvh(
    mesh: HostMesh,
    params: &BuildParams,
) -> std::result::Result<CpuReference, String> {
    let (positions, triangles) = (mesh.positions, mesh.triangles);
    let bvh = sah::build_sah_bvh(positions, triangles);
    let stats = tree_stats(&bvh.nodes, triangles.len());
    let lbvh = params.lbvh;
    let leaves = MortonLeaves::of(positions, triangles, lbvh.morton_bits);
    let built = lbvh
        .quality
        .build_on_cpu(&leaves, lbvh.morton_bits.key_bits());
    let treelets = lbvh.quality.treelet_params().passes > 0;
    Ok(CpuReference {
        builder: "CPU full-sweep SAH BVH",
        tree: stats.shape(),
        traced: None,
        climb_traffic: Some(built.climb_traffic),
        treelet_traffic: treelets.then_some(built.treelet_traffic),
    })
}

/// The kd-tree's reference: a full-SAH kd-tree, traced on the GPU.
fn reference_kdtree(
    mesh: HostMesh,
    params: &BuildParams,
) -> std::result::Result<CpuReference, String> {
    let costs = params.kdtree.costs;
    let tree = build_sah_kdtree(mesh.positions, mesh.triangles, &costs);
    let shape = kdtree_stats(&tree, &costs).shape(&costs);
    Ok(CpuReference {
        builder: "CPU full-SAH kd-tree",
        tree: shape,
        traced: Some(Box::new(tree)),
        climb_traffic: None,
        treelet_traffic: None,
    })
}

/// The BIH's reference: the same binned-SAH BIH built on the CPU and checked, traced on the
/// GPU.
fn reference_bih(
    mesh: HostMesh,
    params: &BuildParams,
) -> std::result::Result<CpuReference, String> {
    let (positions, triangles) = (mesh.positions, mesh.triangles);
    let tree = build_bih(positions, triangles, &params.bih);
    let stats =
        check_bih(positions, triangles, &tree, &params.bih).map_err(|e| format!("CPU BIH: {e}"))?;
    Ok(CpuReference {
        builder: "CPU binned-SAH BIH",
        tree: stats.shape(&params.bih),
        traced: Some(Box::new(tree)),
        climb_traffic: None,
        treelet_traffic: None,
    })
}

impl ReferenceTree for KdTree {
    fn upload(&self, ctx: &Context) -> Result<Box<dyn UploadedTree>> {
        Ok(Box::new(KdTreeGpu::upload(ctx, self)?))
    }
}

impl UploadedTree for KdTreeGpu {
    fn over<'a>(&'a self, input: &TriangleInput<'a>) -> Box<dyn Traversable + 'a> {
        Box::new(KdTreeGpu::over(self, input))
    }
}

impl ReferenceTree for BihTree {
    fn upload(&self, ctx: &Context) -> Result<Box<dyn UploadedTree>> {
        Ok(Box::new(BihTreeGpu::upload(ctx, self)?))
    }
}

impl UploadedTree for BihTreeGpu {
    fn over<'a>(&'a self, input: &TriangleInput<'a>) -> Box<dyn Traversable + 'a> {
        Box::new(BihTreeGpu::over(self, input))
    }
}
