//! Acceleration structures, one folder per structure holding its format, GPU builder,
//! traversal and CPU oracle ([`bvh`], [`kdtree`], [`octree`]), with the binary radix tree the
//! LBVH and the octree share ([`radix_tree`]). [`StructureKind`] lists the structures and
//! [`StructureKind::create`] makes one behind the traits every structure implements
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
pub mod grid;
pub mod kdtree;
pub mod native;
pub mod octree;
pub mod pointkd;
pub mod radix_tree;
mod structure;

pub use structure::{
    AnyStructure, BuildParams, CameraBatch, CameraCaster, FetchBytes, HostMesh, PointStructure,
    RayStructure, Structure, Traversable, TraversalBatch, TreeShape, submit_until_complete,
};

/// The acceleration structures canopy builds on the GPU: the one list that the command line,
/// the benchmarks and the tests go through. A new structure is one more variant here.
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
    /// VVH point kd-tree over vertices with k-nearest-neighbour queries (Zhou et al. 2008
    /// §5): [`pointkd`].
    PointKd,
    /// Screen-space tile x depth-slab grid for a pinhole view's camera rays (seed 001), with
    /// an LBVH for every other ray: [`grid`].
    Grid,
}

impl StructureKind {
    /// Every structure, in the order reports list them.
    pub const ALL: [StructureKind; 6] = [
        StructureKind::Lbvh,
        StructureKind::KdTree,
        StructureKind::Octree,
        StructureKind::Bih,
        StructureKind::Grid,
        StructureKind::PointKd,
    ];

    /// The name commands take and reports print: `lbvh`, `kdtree`, `octree`, `bih`, `grid`,
    /// `pointkd`.
    pub fn name(self) -> &'static str {
        match self {
            StructureKind::Lbvh => "lbvh",
            StructureKind::KdTree => "kdtree",
            StructureKind::Octree => "octree",
            StructureKind::Bih => "bih",
            StructureKind::Grid => "grid",
            StructureKind::PointKd => "pointkd",
        }
    }

    /// Whether rays can be traced through it ([`crate::trace::Tracer`]); the octree and the
    /// point kd-tree are point structures.
    pub fn traceable(self) -> bool {
        self.over_triangles()
    }

    /// Whether it is built for a pinhole view ([`RayStructure::set_view`]): the screen grid.
    pub fn needs_view(self) -> bool {
        self == StructureKind::Grid
    }

    /// Whether its build sorts Morton codes (whose width [`crate::geom::MortonBits`] sets).
    pub fn uses_morton_codes(self) -> bool {
        matches!(
            self,
            StructureKind::Lbvh | StructureKind::Octree | StructureKind::Grid
        )
    }

    /// Whether it is built over triangles (else over vertices).
    pub fn over_triangles(self) -> bool {
        !matches!(self, StructureKind::Octree | StructureKind::PointKd)
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
