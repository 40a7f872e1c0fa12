//! Two levels: meshes placed by transforms ([`Instance`]), under a top tree rebuilt on the GPU
//! every frame ([`TwoLevelBvh`]).
//!
//! Each mesh has its own binary [`Bvh`], built once by [`super::lbvh::LbvhBuilder`] (or an
//! [`LbvhStructure`]) and refitted or rebuilt only when the mesh deforms; a mesh that moves
//! rigidly moves by its instance's transform alone.
//! [`TwoLevelBvh::record_build`] records the top tree over the instances in two steps:
//! 1. `glsl/bvh/instance_boxes.comp`: each instance's record copied to device memory, and its
//!    world box made from its mesh tree's root box (read on the GPU, so that a mesh tree
//!    rebuilt or refitted earlier in the same command buffer is seen) through its transform;
//! 2. the tree over those boxes ([`BoxTreeBuilder`]: the LBVH of each box's corners as a
//!    triangle whose bounds are the box): leaf k's id names the instance.
//!
//! Rays go through both levels in one kernel (`glsl/bvh/trace_instances.comp`), one loop with
//! one stack (`glsl/bvh/walk_instances.glsl`): at each instance the top tree's walk reaches, the
//! loop goes on in the mesh's tree with the ray in the instance's object space, against the
//! closest hit so far, and comes back to the top tree when the mesh's entries are done.
//!
//! **Triangle ids.** A hit names its triangle among the instances' triangles numbered one after
//! another in instance order: instance i's first triangle is the number of triangles of the
//! instances before it. These are the ids of the same scene with every instance's mesh copied
//! out in instance order ("flattened"), so code written for one mesh reads two-level hits
//! unchanged (cut-outs included: the appearance buffer is indexed by these ids);
//! [`TwoLevelBvh::locate`] turns an id back into its instance and the triangle of its mesh.
//!
//! [`PlacedMeshes`] is the same behind [`RayStructure`], over a file's placed meshes
//! ([`Placements`]): what a frame sequence traces a still glTF scene that places a mesh more
//! than once through.

use super::Bvh;
use super::boxes::BoxTreeBuilder;
use super::cpu::check_invariants;
use super::lbvh::{BvhLayout, LbvhParams, LbvhStructure};
use crate::accel::{
    HostMesh, RayStructure, Structure, StructureKind, Traversable, TraversalBatch, TreeShape,
};
use crate::geom::TriangleInput;
use crate::geom::ray::MISS;
use crate::prims::{Groups, WORKGROUP_SIZE};
use crate::scene::Placements;
use crate::shaders;
use crate::vk::{Buffer, Context, Error, MemoryKind, Pipeline, Recorder, Result, Slice};
use std::sync::Arc;

/// One placement of a mesh in a two-level scene.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Instance {
    /// Object to world: the three rows of an affine transform, `world = transform · (object,
    /// 1)`. It must be finite and invertible (a mirror is; a zero scale is not).
    pub transform: [[f32; 4]; 3],
    /// The mesh: an index into the trees handed to [`TwoLevelBvh::record_build`].
    pub mesh: u32,
    /// Rays see the instance when it shares a bit with their mask
    /// ([`TwoLevelBvh::set_ray_mask`]); 0 hides it.
    pub mask: u32,
    /// Report a hit's weights swapped (`u` for the triangle's third vertex, `v` for its
    /// second): the weights of a copied-out scene that reverses the winding of a mirrored
    /// copy's triangles, as [`crate::scene::Mesh::transformed`] does. False by default.
    pub swap_weights: bool,
}

impl Instance {
    /// The transform that leaves a mesh where it is.
    pub const IDENTITY: [[f32; 4]; 3] = [
        [1.0, 0.0, 0.0, 0.0],
        [0.0, 1.0, 0.0, 0.0],
        [0.0, 0.0, 1.0, 0.0],
    ];

    /// Mesh `mesh` placed by `transform`, seen by every ray.
    pub fn new(mesh: u32, transform: [[f32; 4]; 3]) -> Self {
        Self {
            transform,
            mesh,
            mask: u32::MAX,
            swap_weights: false,
        }
    }
}

/// An instance as the GPU reads it (`BvhInstance` in `glsl/bvh/instance_format.glsl`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct BvhInstance {
    /// The inverse of the instance's transform, rows.
    pub world_to_object: [[f32; 4]; 3],
    /// The instance's transform, rows.
    pub object_to_world: [[f32; 4]; 3],
    /// The mesh tree's internal nodes.
    pub nodes_address: u64,
    /// The mesh tree's leaf triangles.
    pub leaves_address: u64,
    /// The id of the mesh's triangle 0 in hits.
    pub first_triangle: u32,
    /// The mesh's triangles.
    pub triangle_count: u32,
    /// The instance's mask.
    pub mask: u32,
    /// [`INSTANCE_SWAP_WEIGHTS`] where the instance swaps its hits' weights.
    pub flags: u32,
}

const _: () = assert!(std::mem::size_of::<BvhInstance>() == 128);

/// The flag of an instance whose hits' weights are swapped ([`Instance::swap_weights`]).
pub const INSTANCE_SWAP_WEIGHTS: u32 = 1;

/// Push constants of `instance_boxes.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct InstanceBoxesPush {
    /// The host's instance records.
    pub staged_address: u64,
    /// The records in device memory, written.
    pub instances_address: u64,
    /// Each instance's world box as two corners, written.
    pub corners_address: u64,
    /// Instances.
    pub count: u32,
    /// Padding.
    pub pad: u32,
}

/// Push constants of `trace_instances.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct TraceInstancesPush {
    /// The top tree's internal nodes.
    pub top_nodes_address: u64,
    /// The top tree's leaves (an instance each).
    pub top_leaves_address: u64,
    /// The instance records.
    pub instances_address: u64,
    /// Rays.
    pub rays_address: u64,
    /// Hits written.
    pub hits_address: u64,
    /// Device ray count or 0.
    pub count_address: u64,
    /// Host ray count.
    pub host_count: u32,
    /// Instances in the top tree.
    pub instance_count: u32,
    /// [`crate::geom::RayWork`] written per ray by the counting kernel, 0 otherwise.
    pub work_address: u64,
    /// The scene's appearance buffer where materials cut out, 0 for none.
    pub cutouts_address: u64,
    /// The rays' mask.
    pub ray_mask: u32,
    /// Padding.
    pub pad: u32,
}

/// A two-level BVH as an application's own shader takes it: `CanopyInstances` in
/// `glsl/include/canopy_trace.glsl`, for `canopy_trace_instances_closest` and
/// `canopy_trace_instances_any` ([`TwoLevelBvh::shader_view`]).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct ShaderInstances {
    /// The top tree's internal nodes.
    pub top_nodes: u64,
    /// The top tree's leaves.
    pub top_leaves: u64,
    /// The instance records.
    pub instances: u64,
    /// Instances in the top tree (0: every ray misses).
    pub instance_count: u32,
    /// The rays' mask.
    pub ray_mask: u32,
}

/// Where a two-level hit's triangle lies ([`TwoLevelBvh::locate`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InstanceTriangle {
    /// The instance, an index into the instances of the last build.
    pub instance: u32,
    /// The triangle of its mesh.
    pub triangle: u32,
}

/// A two-level BVH over up to a fixed number of instances: the top tree, its builder and the
/// instances' device records; rays are traced through it as through any [`Traversable`]
/// ([`crate::trace::Tracer`]). Reusable every frame.
pub struct TwoLevelBvh {
    top_builder: BoxTreeBuilder,
    top: Bvh,
    instance_boxes: Arc<Pipeline>,
    /// The host's records of the last build (host-visible).
    staged: Buffer,
    /// The same, in device memory.
    instances: Buffer,
    /// What `staged` holds.
    staged_records: Vec<BvhInstance>,
    /// Each instance's world box, its two corners: what the top tree is built over.
    corners: Buffer,
    capacity: u32,
    /// (first triangle, instance) of each instance in the top tree, in instance order.
    ranges: Vec<(u32, u32)>,
    /// Triangles of every instance of the last build.
    triangle_count: u32,
    ray_mask: u32,
}

impl TwoLevelBvh {
    /// Device memory for a top tree over up to `capacity` instances (about 500 bytes an
    /// instance, the builder's scratch included).
    pub fn new(ctx: &Context, capacity: u32) -> Result<Self> {
        let n = capacity as u64;
        let record = std::mem::size_of::<BvhInstance>() as u64;
        Ok(Self {
            top_builder: BoxTreeBuilder::new(ctx, capacity)?,
            top: Bvh::new(ctx, capacity)?,
            instance_boxes: ctx.pipeline(&shaders::BVH_INSTANCE_BOXES, WORKGROUP_SIZE, &[])?,
            staged: ctx.create_buffer("instances staged", n * record, MemoryKind::Upload)?,
            instances: ctx.create_buffer("instances", n * record, MemoryKind::Device)?,
            corners: ctx.create_buffer("instance corners", n * 24, MemoryKind::Device)?,
            staged_records: Vec::new(),
            capacity,
            ranges: Vec::new(),
            triangle_count: 0,
            ray_mask: u32::MAX,
        })
    }

    /// The most instances a build can take.
    pub fn capacity(&self) -> u32 {
        self.capacity
    }

    /// Triangles of every instance of the last build: one more than the largest id a hit may
    /// name.
    pub fn triangle_count(&self) -> u32 {
        self.triangle_count
    }

    /// The mask of the rays traced after this call (every bit by default): an instance is
    /// skipped by a ray whose mask shares no bit with its own.
    pub fn set_ray_mask(&mut self, mask: u32) {
        self.ray_mask = mask;
    }

    /// The top tree of the last build (a leaf's triangle id is an index into the instances it
    /// holds, which leave out those without triangles or with a mask of 0).
    pub fn top(&self) -> &Bvh {
        &self.top
    }

    /// Records the top tree's build over `instances` of the `meshes` trees, in the two steps
    /// of the module documentation (profiler stages "two-level: boxes" and "lbvh: ...").
    ///
    /// The instances are checked first: each names a mesh in `meshes` and has a finite,
    /// invertible transform, and all of them hold fewer than 2^32 - 1 triangles; anything else
    /// is an [`Error::InvalidInput`] naming the instance, and nothing is recorded.
    ///
    /// Synchronisation and lifetimes: the mesh trees' builds are recorded before, with their
    /// barrier (or have run). The trees must stay alive, in the same buffers, while rays are
    /// traced through this tree, which reads them by address. Where the instances' records
    /// change, the previous build's submission must have completed (they are staged in
    /// host-visible memory the build reads; a build over the same records as the last writes
    /// nothing there). Ends with a compute → compute barrier, so traces recorded after it see
    /// the tree.
    pub fn record_build(
        &mut self,
        rec: &mut Recorder,
        meshes: &[&Bvh],
        instances: &[Instance],
    ) -> Result<()> {
        let records = self.records(meshes, instances)?;
        self.top.set_primitive_count(0);
        if records.is_empty() {
            return Ok(());
        }
        // A build over the records of the last writes nothing to the host-visible staging,
        // so that a still scene can be built again with earlier frames still reading it.
        if records != self.staged_records {
            let staged = self.staged.mapped_mut().expect("upload buffers are mapped");
            let bytes: &[u8] = bytemuck::cast_slice(&records);
            staged[..bytes.len()].copy_from_slice(bytes);
            self.staged_records = records;
        }
        let count = self.staged_records.len() as u32;
        rec.begin_stage("two-level: boxes");
        let push = InstanceBoxesPush {
            staged_address: self.staged.address(),
            instances_address: self.instances.address(),
            corners_address: self.corners.address(),
            count,
            pad: 0,
        };
        rec.dispatch(&self.instance_boxes, &push, count.div_ceil(WORKGROUP_SIZE))?;
        rec.barrier_compute_to_compute();
        rec.end_stage();
        self.top_builder
            .record(rec, Slice::whole(&self.corners), count, &mut self.top)
    }

    /// The device records of `instances` over `meshes`, leaving out those no ray can hit; sets
    /// the triangle numbering ([`Self::locate`]).
    fn records(&mut self, meshes: &[&Bvh], instances: &[Instance]) -> Result<Vec<BvhInstance>> {
        if instances.len() > self.capacity as usize {
            return Err(Error::InvalidInput(format!(
                "two-level BVH build of {} instances into one for {}",
                instances.len(),
                self.capacity
            )));
        }
        let mut records = Vec::with_capacity(instances.len());
        let mut ranges = Vec::with_capacity(instances.len());
        let mut first_triangle: u64 = 0;
        for (index, instance) in instances.iter().enumerate() {
            let mesh = meshes.get(instance.mesh as usize).ok_or_else(|| {
                Error::InvalidInput(format!(
                    "instance {index}: mesh {} out of range ({} meshes)",
                    instance.mesh,
                    meshes.len()
                ))
            })?;
            let world_to_object = invert(&instance.transform).ok_or_else(|| {
                Error::InvalidInput(format!(
                    "instance {index}: its transform {:?} is not finite and invertible",
                    instance.transform
                ))
            })?;
            let triangle_count = mesh.primitive_count();
            if triangle_count > 0 && instance.mask != 0 {
                ranges.push((first_triangle as u32, index as u32));
                records.push(BvhInstance {
                    world_to_object,
                    object_to_world: instance.transform,
                    nodes_address: mesh.nodes.address(),
                    leaves_address: mesh.leaf_triangles.address(),
                    first_triangle: first_triangle as u32,
                    triangle_count,
                    mask: instance.mask,
                    flags: if instance.swap_weights {
                        INSTANCE_SWAP_WEIGHTS
                    } else {
                        0
                    },
                });
            }
            first_triangle += triangle_count as u64;
            if first_triangle >= MISS as u64 {
                return Err(Error::InvalidInput(format!(
                    "instances 0..={index} hold {first_triangle} triangles: hits number them \
                     in 32 bits, below {MISS}"
                )));
            }
        }
        self.ranges = ranges;
        self.triangle_count = first_triangle as u32;
        Ok(records)
    }

    /// The world box of each instance in the last build's top tree (in the order of its
    /// leaves' ids), read back once the build's submission has completed: for inspection and
    /// tests.
    pub fn world_boxes(&self, ctx: &Context) -> Result<Vec<[[f32; 3]; 2]>> {
        ctx.download(&self.corners, 0, self.top.primitive_count() as usize)
    }

    /// The tree as an application's own shader traces it through the GLSL include
    /// ([`crate::GLSL_DIR`], `include/canopy_trace.glsl`), with the current ray mask: valid
    /// while the tree's last build is.
    pub fn shader_view(&self) -> ShaderInstances {
        ShaderInstances {
            top_nodes: self.top.nodes.address(),
            top_leaves: self.top.leaf_triangles.address(),
            instances: self.instances.address(),
            instance_count: self.top.primitive_count(),
            ray_mask: self.ray_mask,
        }
    }

    /// The instance and the triangle of its mesh that a hit's triangle id names, for the last
    /// build's instances; None for an id no instance holds (a miss's [`MISS`]).
    pub fn locate(&self, triangle: u32) -> Option<InstanceTriangle> {
        if triangle >= self.triangle_count {
            return None;
        }
        let at = self.ranges.partition_point(|&(first, _)| first <= triangle);
        let (first, instance) = self.ranges[at.checked_sub(1)?];
        Some(InstanceTriangle {
            instance,
            triangle: triangle - first,
        })
    }
}

/// A scene of placed meshes ([`Placements`]) behind [`RayStructure`]: each mesh's tree built
/// with the first build and kept, the top tree over the copies built again with every build,
/// rays traced through both levels. Its triangle ids are those of the copied-out scene, so a
/// frame sequence traces a still scene that places meshes more than once through it in place
/// of one tree over every copy ([`crate::sequence::SequenceConfig::two_levels`]). A copy whose
/// transform cannot be inverted (a node scaled to nothing) is hidden, as its copied-out
/// triangles, all of zero area, are; a mirrored copy's hits have their weights swapped, as its
/// copied-out triangles have their winding reversed.
pub struct PlacedMeshes {
    meshes: Vec<MeshTree>,
    instances: Vec<Instance>,
    two_level: TwoLevelBvh,
    meshes_built: bool,
}

/// A placed mesh on the device and its tree.
struct MeshTree {
    positions: Buffer,
    triangles: Buffer,
    /// Its triangles (the buffers hold one of zeros for a mesh without any).
    count: u32,
    tree: LbvhStructure,
}

impl PlacedMeshes {
    /// The meshes of `placements` on the device and room for their trees (built as `params`
    /// says, in the binary layout) and the top tree.
    pub fn new(ctx: &Context, params: LbvhParams, placements: &Placements) -> Result<Self> {
        let params = LbvhParams {
            layout: BvhLayout::Binary,
            ..params
        };
        let meshes = placements
            .meshes
            .iter()
            .map(|mesh| {
                let count = mesh.triangle_count() as u32;
                let (positions, triangles): (&[[f32; 3]], &[[u32; 3]]) = match count {
                    0 => (&[[0.0; 3]], &[[0; 3]]),
                    _ => (&mesh.positions, &mesh.triangles),
                };
                Ok(MeshTree {
                    positions: ctx.create_buffer_with("placed mesh positions", positions)?,
                    triangles: ctx.create_buffer_with("placed mesh triangles", triangles)?,
                    count,
                    tree: LbvhStructure::new(ctx, params, count.max(1))?,
                })
            })
            .collect::<Result<_>>()?;
        let instances = placements
            .copies
            .iter()
            .map(|&(mesh, placement)| {
                let transform = std::array::from_fn(|r| placement.row(r).to_array());
                match invert(&transform) {
                    Some(_) => Instance {
                        swap_weights: placement.determinant() < 0.0,
                        ..Instance::new(mesh, transform)
                    },
                    None => Instance {
                        mask: 0,
                        ..Instance::new(mesh, Instance::IDENTITY)
                    },
                }
            })
            .collect::<Vec<_>>();
        Ok(Self {
            two_level: TwoLevelBvh::new(ctx, instances.len() as u32)?,
            meshes,
            instances,
            meshes_built: false,
        })
    }

    /// The copies traced (each mesh's tree once, and the top tree over them).
    pub fn two_level(&self) -> &TwoLevelBvh {
        &self.two_level
    }
}

impl Structure for PlacedMeshes {
    fn kind(&self) -> StructureKind {
        StructureKind::Lbvh
    }

    /// A mesh's tree too tall for traversal (a high-quality tree) has it built again fast,
    /// as an LBVH structure does.
    fn grow_if_overflowed(&mut self, ctx: &Context, slot: usize) -> Result<bool> {
        let mut again = false;
        for mesh in &mut self.meshes {
            again |= mesh.tree.grow_if_overflowed(ctx, slot)?;
        }
        self.meshes_built &= !again;
        Ok(again)
    }

    fn tree_bytes(&self) -> u64 {
        let meshes: u64 = self.meshes.iter().map(|m| m.tree.tree_bytes()).sum();
        meshes + self.two_level.top.bytes()
    }

    /// The top tree, checked against the copies' world boxes.
    fn describe(
        &self,
        ctx: &Context,
        _slot: usize,
        _mesh: HostMesh,
    ) -> Result<std::result::Result<TreeShape, String>> {
        let (nodes, leaves) = self.two_level.top.download(ctx)?;
        let corners: Vec<[f32; 3]> = ctx.download(&self.two_level.corners, 0, 2 * leaves.len())?;
        let boxes: Vec<crate::geom::aabb::Bounds> =
            corners.chunks_exact(2).map(|c| (c[0], c[1])).collect();
        Ok(check_invariants(&nodes, &leaves, &boxes).map(|stats| stats.shape()))
    }
}

impl RayStructure for PlacedMeshes {
    /// The meshes' trees with the first build (and again after [`Structure::grow_if_overflowed`]
    /// said so), then the top tree; `input` (the copied-out scene) is not read.
    fn record_build(
        &mut self,
        rec: &mut Recorder,
        _input: &TriangleInput,
        _slot: usize,
    ) -> Result<()> {
        if !self.meshes_built {
            for mesh in &mut self.meshes {
                let input = TriangleInput::whole(&mesh.positions, &mesh.triangles, mesh.count);
                mesh.tree.record_build(rec, &input, 0)?;
            }
            self.meshes_built = true;
        }
        let trees: Vec<&Bvh> = self.meshes.iter().map(|m| m.tree.bvh()).collect();
        self.two_level.record_build(rec, &trees, &self.instances)
    }

    fn traversable<'a>(&'a self, _input: &TriangleInput<'a>) -> Box<dyn Traversable + 'a> {
        Box::new(&self.two_level)
    }
}

/// The inverse of the affine transform `m` (three rows of a 3x4 matrix), computed in double
/// precision; None where `m` or its inverse is not finite in single precision, or `m` is
/// singular.
pub fn invert(m: &[[f32; 4]; 3]) -> Option<[[f32; 4]; 3]> {
    let a = |r: usize, c: usize| m[r][c] as f64;
    let cofactor = |r: usize, c: usize| {
        let (r0, r1) = ((r + 1) % 3, (r + 2) % 3);
        let (c0, c1) = ((c + 1) % 3, (c + 2) % 3);
        a(r0, c0) * a(r1, c1) - a(r0, c1) * a(r1, c0)
    };
    let det: f64 = (0..3).map(|c| a(0, c) * cofactor(0, c)).sum();
    if !m.iter().flatten().all(|x| x.is_finite()) || det == 0.0 || !det.is_finite() {
        return None;
    }
    // The inverse of the 3x3 part is the transposed cofactors over the determinant; the
    // translation is carried back through it.
    let inverse: [[f64; 3]; 3] =
        std::array::from_fn(|r| std::array::from_fn(|c| cofactor(c, r) / det));
    let mut out = [[0.0f32; 4]; 3];
    for r in 0..3 {
        for c in 0..3 {
            out[r][c] = inverse[r][c] as f32;
        }
        out[r][3] = -(0..3).map(|c| inverse[r][c] * a(c, 3)).sum::<f64>() as f32;
    }
    out.iter().flatten().all(|x| x.is_finite()).then_some(out)
}

impl Traversable for TwoLevelBvh {
    fn record_traversal(
        &self,
        rec: &mut Recorder,
        batch: &TraversalBatch,
        groups: &Groups,
    ) -> Result<()> {
        let pipeline = batch.pipeline(rec.context(), &shaders::BVH_TRACE_INSTANCES)?;
        let (count_address, host_count) = batch.count.push();
        let push = TraceInstancesPush {
            top_nodes_address: self.top.nodes.address(),
            top_leaves_address: self.top.leaf_triangles.address(),
            instances_address: self.instances.address(),
            rays_address: batch.rays.address(),
            hits_address: batch.hits.address(),
            count_address,
            host_count,
            instance_count: self.top.primitive_count(),
            work_address: batch.work_address(),
            cutouts_address: batch.cutouts_address(),
            ray_mask: self.ray_mask,
            pad: 0,
        };
        rec.dispatch_groups(&pipeline, &push, groups)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn apply(m: &[[f32; 4]; 3], p: [f32; 3]) -> [f64; 3] {
        std::array::from_fn(|r| {
            (0..3).map(|c| m[r][c] as f64 * p[c] as f64).sum::<f64>() + m[r][3] as f64
        })
    }

    #[test]
    fn inverses_undo_rotations_scales_mirrors_and_translations() {
        let (s, c) = 0.6f32.sin_cos();
        let transforms = [
            Instance::IDENTITY,
            [[c, -s, 0.0, 3.0], [s, c, 0.0, -2.0], [0.0, 0.0, 1.0, 0.5]],
            [
                [-2.0, 0.0, 0.0, 1.0],
                [0.0, 0.5, 0.0, 0.0],
                [0.0, 0.0, 3.0, -7.0],
            ],
            [
                [1.0, 2.0, 0.0, 0.0],
                [0.0, 1.0, 0.0, 0.0],
                [0.0, 0.0, 1e-3, 2.0],
            ],
        ];
        for m in transforms {
            let inverse = invert(&m).unwrap();
            for p in [[0.0, 0.0, 0.0], [1.0, -2.0, 3.5], [-10.0, 4.0, 0.25]] {
                let world = apply(&m, p).map(|x| x as f32);
                let back = apply(&inverse, world);
                for k in 0..3 {
                    // Within single precision's rounding of the terms summed (a scale of
                    // 1e-3 undone multiplies the world point's rounding by 1e3).
                    let terms = (0..3)
                        .map(|c| (inverse[k][c] * world[c]).abs() as f64)
                        .sum::<f64>()
                        + inverse[k][3].abs() as f64;
                    assert!(
                        (back[k] - p[k] as f64).abs() <= 1e-6 * terms.max(1.0),
                        "{m:?}: {p:?} -> {back:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn singular_and_non_finite_transforms_have_no_inverse() {
        let mut flat = Instance::IDENTITY;
        flat[2][2] = 0.0;
        let mut nan = Instance::IDENTITY;
        nan[0][3] = f32::NAN;
        let mut infinite = Instance::IDENTITY;
        infinite[1][1] = f32::INFINITY;
        // Rows that repeat: rank 2.
        let repeated = [
            [1.0, 2.0, 3.0, 0.0],
            [2.0, 4.0, 6.0, 0.0],
            [0.0, 0.0, 1.0, 0.0],
        ];
        // So small a scale that the inverse overflows single precision.
        let tiny = [
            [1e-39, 0.0, 0.0, 0.0],
            [0.0, 1e-39, 0.0, 0.0],
            [0.0, 0.0, 1e-39, 0.0],
        ];
        for m in [flat, nan, infinite, repeated, tiny] {
            assert_eq!(invert(&m), None, "{m:?}");
        }
    }
}
