//! Acceleration structures, one folder per structure holding its format, GPU builder,
//! traversal and CPU oracle ([`bvh`], [`kdtree`], [`octree`]), with the binary radix tree the
//! LBVH and the octree share ([`radix_tree`]). [`StructureKind`] lists the structures,
//! [`STRUCTURES`] holds the facts of each ([`StructureFacts`]: its name, what it is built
//! over, how it is made, its CPU reference), and [`StructureKind::create`] makes one behind
//! the traits every structure implements
//! ([`Structure`], [`RayStructure`], [`PointStructure`], [`Traversable`]). [`native`] is the
//! driver's own builder, run over the same buffers as a yardstick.
//!
//! Every builder follows one pattern, and the next structures follow it too: a `Params`
//! struct with documented defaults; `new(&ctx, params, capacity)`, where all device memory is
//! sized once for inputs of up to `capacity` primitives; and `record(&mut rec, &input, &mut
//! tree)` (the kd-tree's also takes the slot its status is read back from), which records
//! the build into a [`crate::vk::Recorder`] with the synchronisation its rustdoc states. A
//! capacity exceeded at record time is an error, never a GPU fault. `<Name>Structure` pairs a
//! builder with its tree behind the traits.

pub mod bih;
pub mod bvh;
mod facts;
pub mod grid;
pub mod kdtree;
pub mod native;
pub mod octree;
pub mod pointkd;
pub mod radix_tree;
mod structure;

pub use facts::{
    CpuReference, CreateFn, Primitives, ReferenceFn, ReferenceTree, STRUCTURES, StructureFacts,
    StructureSize, UploadedTree,
};
pub use structure::{
    AnyStructure, BuildParams, CameraBatch, CameraCaster, FetchBytes, HostMesh, PointStructure,
    RayStructure, Structure, Traversable, TraversalBatch, TreeShape, submit_until_complete,
};

/// The acceleration structures canopy builds on the GPU: the one list that the command line,
/// the benchmarks and the tests go through. A new structure is one more variant here, in the
/// order of its entry in [`STRUCTURES`] (the table of what each is), and its folder.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StructureKind {
    /// Linear BVH over triangles (Karras 2012): [`bvh::lbvh`].
    Lbvh,
    /// SAH kd-tree over triangles (Zhou et al. 2008, Chang et al. 2013): [`kdtree::build`].
    KdTree,
    /// Octree and point k-d tree over vertices (Karras 2012): [`octree`].
    Octree,
    /// Binned-SAH bounding interval hierarchy over triangles (seed 004): [`bih`].
    Bih,
    /// Screen-space tile x depth-slab grid for a pinhole view's camera rays (seed 001), with
    /// an LBVH for every other ray: [`grid`].
    Grid,
    /// VVH point kd-tree over vertices with k-nearest-neighbour queries (Zhou et al. 2008
    /// §5): [`pointkd`].
    PointKd,
}

impl StructureKind {
    /// Every structure, in the order reports list them (that of [`STRUCTURES`]).
    pub const ALL: [StructureKind; facts::KINDS.len()] = facts::KINDS;

    /// What canopy knows of this structure: its entry in [`STRUCTURES`].
    pub fn facts(self) -> &'static StructureFacts {
        &STRUCTURES[self as usize]
    }

    /// The name commands take and reports print: `lbvh`, `kdtree`, `octree`, `bih`, `grid`,
    /// `pointkd`.
    pub fn name(self) -> &'static str {
        self.facts().name
    }

    /// Whether rays can be traced through it ([`crate::trace::Tracer`]); the octree and the
    /// point kd-tree are point structures.
    pub fn traceable(self) -> bool {
        self.over_triangles()
    }

    /// Whether it is built for a pinhole view ([`RayStructure::set_view`]): the screen grid.
    pub fn needs_view(self) -> bool {
        self.facts().needs_view
    }

    /// Whether its build sorts Morton codes (whose width [`crate::geom::MortonBits`] sets).
    pub fn uses_morton_codes(self) -> bool {
        self.facts().uses_morton_codes
    }

    /// Whether it builds a BVH whose quality and layout the LBVH's parameters set: the LBVH,
    /// and the screen grid's for its other rays.
    pub fn builds_bvh(self) -> bool {
        self.facts().builds_bvh
    }

    /// Whether it is built over triangles (else over vertices).
    pub fn over_triangles(self) -> bool {
        self.facts().over == Primitives::Triangles
    }

    /// A structure of this kind, its builder's memory sized for meshes of up to `size`, with
    /// `slots` builds in flight. A build may cover fewer primitives than `size`, none
    /// included (every ray then misses); a `size` of no primitives at all (no triangles for a
    /// structure over triangles, no vertices for one over points) is refused.
    pub fn create(
        self,
        ctx: &crate::vk::Context,
        params: &BuildParams,
        size: StructureSize,
        slots: usize,
    ) -> crate::vk::Result<AnyStructure> {
        let (capacity, primitives) = match self.over_triangles() {
            true => (size.triangles, "triangles"),
            false => (size.vertices, "points"),
        };
        if capacity == 0 {
            return Err(crate::vk::Error::InvalidInput(format!(
                "{self}: nothing to build over (room for 0 {primitives})"
            )));
        }
        (self.facts().create)(ctx, params, size, slots)
    }
}

impl std::fmt::Display for StructureKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for StructureKind {
    type Err = String;

    /// A [name](StructureKind::name), in any case (`kd-tree` also names the kd-tree).
    fn from_str(text: &str) -> Result<Self, String> {
        let wanted = text.trim().to_ascii_lowercase().replace('-', "");
        StructureKind::ALL
            .into_iter()
            .find(|k| k.name() == wanted)
            .ok_or_else(|| {
                let names: Vec<&str> = StructureKind::ALL.iter().map(|k| k.name()).collect();
                format!("'{text}': expected one of {}", names.join(", "))
            })
    }
}
