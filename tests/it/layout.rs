//! Every struct the GPU sees is written twice: `#[repr(C)]` in Rust and a block or struct in
//! GLSL. These tests read the layout the GLSL compiler actually produced back out of each
//! kernel's SPIR-V (tests/it/common/spirv.rs) and compare it with the Rust definition: the
//! push-constant block of every kernel, and structs shared through buffers (`Aabb`, the BVH
//! and kd-tree nodes, rays, hits and per-ray work counts, materials, lights, ray payloads,
//! bounce counters, octree nodes and splits, ...).
//!
//! Adding a kernel: one entry in `push_constant_layouts` (the coverage test fails until there
//! is one). Adding a shared struct: one entry in `shared_struct_layouts`. No GPU needed.

use crate::common::spirv::{Module, StructLayout};
use canopy::accel::bih::BihNode;
use canopy::accel::bih::build::{
    BihTask, LargeBinsPush, LargePartitionPush, LargeSplitPush, SmallNodesPush,
};
use canopy::accel::bih::trace::TraceBihPush;
use canopy::accel::bvh::instances::{BvhInstance, InstanceBoxesPush, TraceInstancesPush};
use canopy::accel::bvh::lbvh::ClimbPush;
use canopy::accel::bvh::refit::RefitPush;
use canopy::accel::bvh::trace::TracePush;
use canopy::accel::bvh::treelet::TreeletPush;
use canopy::accel::bvh::wide::CollapsePush;
use canopy::accel::bvh::wide::format::WideNode;
use canopy::accel::bvh::{BvhNode, LeafTriangle};
use canopy::accel::grid::build::{CastPush, ProjectPush, ReferencesPush};
use canopy::accel::grid::{GridFrame, GridTriangle};
use canopy::accel::kdtree::KdNode;
use canopy::accel::kdtree::build::{
    BuildRefs, KdBuildStatus, KdClassifyPush, KdInitPush, KdLevelCounters, KdLevelPush,
    KdSmallRootCounters,
};
use canopy::accel::kdtree::scratch::{KdChunk, KdEntry, KdLargeNode, KdRecord, KdSmallNode};
use canopy::accel::kdtree::trace::TraceKdPush;
use canopy::accel::native::NativeRaygenPush;
use canopy::accel::octree::{
    EdgeCountsPush, GatherKeysPush, KdSplit, LinkNodesPush, OctreeNode, UniqueFlagsPush,
};
use canopy::accel::pointkd::PointKdNode;
use canopy::accel::pointkd::build::{PointKdBuildPush, PointKdBuildRefs, PointKdBuildState};
use canopy::accel::pointkd::knn::{KnnCounters, KnnPush, PointKdHeader};
use canopy::accel::pointkd::radius::{RadiusEstimatePush, RadiusSelectPush, RadiusStorePush};
use canopy::accel::radix_tree::{MortonPush, PrimitiveBoundsPush, RadixTreePush};
use canopy::bench::dispatch::EmptyPush;
use canopy::geom::aabb::Aabb;
use canopy::geom::ray::{Hit, Ray, RayWork};
use canopy::points::NormalsPush;
use canopy::points::deform::StrengthPush;
use canopy::points::orient::{OrientPush, OrientStats};
use canopy::prims::compact::CompactPush;
use canopy::prims::indirect::PreparePush;
use canopy::prims::multisplit::BinHistogramPush;
use canopy::prims::radix_sort::{ScatterPush, UpsweepPush};
use canopy::prims::reduce::ReducePush;
use canopy::prims::scan::ScanPush;
use canopy::prims::segmented_reduce::SegmentedReducePush;
use canopy::render::photons::{
    EstimatePush, PhotonCounters, PhotonEmitter, PhotonPush, PhotonTarget,
};
use canopy::render::scene_gpu::AppearanceHead;
use canopy::render::{
    AovsPush, BounceCounters, CameraRaysPush, ChannelsPush, CloseListsPush, GatherQueriesPush,
    GpuLight, Material, PixelAovs, RayPayload, ResolvePush, SceneRefs, ShadePush,
    ShadowRadiancePush,
};
use canopy::scene::animated::normals::SurfaceNormalsPush;
use canopy::scene::animated::skin::{MorphPart, SkinPush};
use canopy::scene::animated::subdivide::SubdividePush;
use canopy::scene::default_scene::DefaultSurfacePush;
use canopy::scene::environment::GpuEnvironment;
use canopy::scene::texture::{GpuTexture, TextureRef};
use canopy::shaders;
use canopy::vk::{Kernel, PUSH_CONSTANT_BYTES};

/// The layout Rust gives the fields a GLSL block mirrors.
struct RustLayout {
    name: &'static str,
    offsets: Vec<u32>,
    sizes: Vec<u32>,
    size: u32,
}

/// `rust_layout!(Type { field, ... })`: offsets and sizes of the listed fields, in the order the
/// GLSL declares its members. Trailing Rust padding that the GLSL leaves out is not listed.
macro_rules! rust_layout {
    ($ty:ty { $($field:ident),* $(,)? }) => {{
        let zero: $ty = bytemuck::Zeroable::zeroed();
        RustLayout {
            name: stringify!($ty),
            offsets: vec![$(std::mem::offset_of!($ty, $field) as u32),*],
            sizes: vec![$(std::mem::size_of_val(&zero.$field) as u32),*],
            size: std::mem::size_of::<$ty>() as u32,
        }
    }};
}

/// What a kernel's push-constant block must look like.
enum Expected {
    /// The Rust struct the host pushes.
    Rust(RustLayout),
    /// No Rust struct yet: the GLSL member offsets, written out.
    GlslOffsets(&'static [u32]),
}

/// One entry per kernel: its push-constant block and the Rust struct pushed to it.
fn push_constant_layouts() -> Vec<(Kernel, Expected)> {
    use Expected::*;
    let scan = || {
        rust_layout!(ScanPush {
            input_address,
            output_address,
            count_address,
            scratch_address,
            host_count
        })
    };
    let reduce = || {
        rust_layout!(ReducePush {
            input_address,
            output_address,
            count_address,
            scratch_address,
            host_count
        })
    };
    // Both k-nearest kernels take the same push constants (glsl/pointkd/knn.glsl).
    let knn = || {
        rust_layout!(KnnPush {
            nodes_address,
            header_address,
            entries_address,
            queries_address,
            radii_address,
            ids_address,
            distances_address,
            found_address,
            count_address,
            counters_address,
            host_count,
            k,
            radius,
            max_radius,
            niter,
            pad
        })
    };
    vec![
        (shaders::PRIMS_SCAN, Rust(scan())),
        (shaders::PRIMS_REDUCE, Rust(reduce())),
        (shaders::PRIMS_REDUCE_AABB, Rust(reduce())),
        (
            shaders::PRIMS_PREPARE_INDIRECT,
            Rust(rust_layout!(PreparePush {
                count_address,
                args_address,
                overflow_address,
                elements_per_group,
                min_groups,
                max_count,
                max_groups_per_dim,
            })),
        ),
        (
            shaders::PRIMS_RADIX_UPSWEEP,
            Rust(rust_layout!(UpsweepPush {
                keys_address,
                table_address,
                count_address,
                host_count,
                shift,
                tile_stride,
                bits
            })),
        ),
        (
            shaders::PRIMS_RADIX_SCATTER,
            Rust(rust_layout!(ScatterPush {
                keys_in_address,
                keys_out_address,
                values_in_address,
                values_out_address,
                table_address,
                count_address,
                host_count,
                shift,
                tile_stride,
                bits
            })),
        ),
        (
            shaders::PRIMS_BIN_HISTOGRAM,
            Rust(rust_layout!(BinHistogramPush {
                bin_ids_address,
                counts_address,
                count_address,
                host_count,
                bins
            })),
        ),
        (
            shaders::PRIMS_COMPACT,
            Rust(rust_layout!(CompactPush {
                values_address,
                flags_address,
                output_address,
                kept_count_address,
                count_address,
                scratch_address,
                host_count,
                max_count
            })),
        ),
        (
            shaders::PRIMS_SEGMENTED_REDUCE,
            Rust(rust_layout!(SegmentedReducePush {
                values_address,
                ids_address,
                output_address,
                count_address,
                host_count,
                max_count,
                segments,
                pad
            })),
        ),
        (
            shaders::RADIX_TREE_PRIMITIVE_BOUNDS,
            Rust(rust_layout!(PrimitiveBoundsPush {
                positions_address,
                triangles_address,
                bounds_address,
                scratch_address,
                count_address,
                host_count
            })),
        ),
        (
            shaders::RADIX_TREE_MORTON_CODES,
            Rust(rust_layout!(MortonPush {
                positions_address,
                triangles_address,
                bounds_address,
                keys_address,
                count_address,
                host_count
            })),
        ),
        (
            shaders::RADIX_TREE_INTERNAL_NODES,
            Rust(rust_layout!(RadixTreePush {
                keys_address,
                nodes_address,
                leaf_parents_address,
                counters_address,
                count_address,
                host_count
            })),
        ),
        (
            shaders::BVH_HPLOC,
            Rust(rust_layout!(ClimbPush {
                keys_address,
                positions_address,
                triangles_address,
                leaf_primitives_address,
                nodes_address,
                leaf_triangles_address,
                clusters_address,
                cluster_counts_address,
                slots_address,
                height_address,
                leaf_parents_address,
                host_count
            })),
        ),
        (
            shaders::BVH_REFIT,
            Rust(rust_layout!(RefitPush {
                positions_address,
                triangles_address,
                nodes_address,
                leaf_triangles_address,
                leaf_primitives_address,
                leaf_parents_address,
                arrivals_address,
                count,
                pad
            })),
        ),
        (
            shaders::BVH_TREELETS,
            Rust(rust_layout!(TreeletPush {
                nodes_address,
                leaf_parents_address,
                heights_address,
                arrivals_address,
                height_address,
                host_count
            })),
        ),
        (
            shaders::BVH_COLLAPSE,
            Rust(rust_layout!(CollapsePush {
                nodes_address,
                leaf_triangles_address,
                wide_nodes_address,
                wide_triangles_address,
                tasks_address,
                queue_address,
                stats_address,
                task_capacity
            })),
        ),
        (
            shaders::BVH_WIDE_TRACE,
            Rust(rust_layout!(TracePush {
                nodes_address,
                leaf_triangles_address,
                rays_address,
                hits_address,
                count_address,
                host_count,
                primitive_count,
                work_address,
                cutouts_address
            })),
        ),
        (
            shaders::BVH_TRACE,
            Rust(rust_layout!(TracePush {
                nodes_address,
                leaf_triangles_address,
                rays_address,
                hits_address,
                count_address,
                host_count,
                primitive_count,
                work_address,
                cutouts_address
            })),
        ),
        (
            shaders::BVH_INSTANCE_BOXES,
            Rust(rust_layout!(InstanceBoxesPush {
                staged_address,
                instances_address,
                corners_address,
                count,
                pad
            })),
        ),
        (
            shaders::BVH_TRACE_INSTANCES,
            Rust(rust_layout!(TraceInstancesPush {
                top_nodes_address,
                top_leaves_address,
                instances_address,
                rays_address,
                hits_address,
                count_address,
                host_count,
                instance_count,
                work_address,
                cutouts_address,
                ray_mask,
                pad
            })),
        ),
        (
            shaders::KDTREE_INIT,
            Rust(rust_layout!(KdInitPush {
                refs_address,
                positions_address,
                triangles_address,
                triangle_count
            })),
        ),
        (
            shaders::KDTREE_LARGE_CLASSIFY,
            Rust(rust_layout!(KdClassifyPush {
                refs_address,
                positions_address,
                triangles_address,
                level
            })),
        ),
        (
            shaders::KDTREE_LARGE_BOXES,
            Rust(rust_layout!(KdLevelPush {
                refs_address,
                level
            })),
        ),
        (
            shaders::KDTREE_SMALL_SUBTREES,
            Rust(rust_layout!(KdLevelPush { refs_address })),
        ),
        (
            shaders::KDTREE_LEAF_COUNTS,
            Rust(rust_layout!(KdLevelPush { refs_address })),
        ),
        (
            shaders::KDTREE_WRITE_NODES,
            Rust(rust_layout!(KdLevelPush { refs_address })),
        ),
        (
            shaders::KDTREE_TRACE,
            Rust(rust_layout!(TraceKdPush {
                nodes_address,
                leaf_triangles_address,
                positions_address,
                triangles_address,
                rays_address,
                hits_address,
                bounds_address,
                count_address,
                host_count,
                work_address,
                cutouts_address
            })),
        ),
        (
            shaders::BIH_SMALL_NODES,
            Rust(rust_layout!(SmallNodesPush {
                positions_address,
                triangles_address,
                first_indices_address,
                second_indices_address,
                leaf_primitives_address,
                nodes_address,
                tasks_address,
                counters_address,
                bounds_address,
                max_depth,
                max_leaf,
                traversal_cost,
                intersection_cost,
                clip_nodes,
                pad
            })),
        ),
        (
            shaders::BIH_LARGE_BINS,
            Rust(rust_layout!(LargeBinsPush {
                positions_address,
                triangles_address,
                indices_address,
                tasks_address,
                slices_address,
                bin_counts_address,
                bin_lows_address,
                bin_highs_address,
                root_bounds_address,
                counters_address,
                slice_counter,
                round,
                slice_size,
                bounds_mode
            })),
        ),
        (
            shaders::BIH_LARGE_SPLIT,
            Rust(rust_layout!(LargeSplitPush {
                tasks_address,
                next_tasks_address,
                next_slices_address,
                small_tasks_address,
                nodes_address,
                bin_counts_address,
                bin_lows_address,
                bin_highs_address,
                root_bounds_address,
                bounds_address,
                counters_address,
                task_counter,
                round,
                slice_size,
                large_threshold,
                max_depth,
                max_leaf,
                traversal_cost,
                intersection_cost,
                clip_nodes,
                pad
            })),
        ),
        (
            shaders::BIH_LARGE_PARTITION,
            Rust(rust_layout!(LargePartitionPush {
                positions_address,
                triangles_address,
                indices_in_address,
                indices_out_address,
                leaf_primitives_address,
                tasks_address,
                slices_address,
                counters_address,
                slice_counter,
                slice_size
            })),
        ),
        (
            shaders::BIH_TRACE,
            Rust(rust_layout!(TraceBihPush {
                nodes_address,
                leaf_primitives_address,
                positions_address,
                triangles_address,
                rays_address,
                hits_address,
                bounds_address,
                count_address,
                host_count,
                primitive_count,
                work_address,
                cutouts_address
            })),
        ),
        (
            shaders::NATIVE_RAYGEN,
            Rust(rust_layout!(NativeRaygenPush {
                rays_address,
                hits_address,
                structure_address,
                count,
                any_hit
            })),
        ),
        (shaders::POINTKD_KNN, Rust(knn())),
        (shaders::POINTKD_KNN_NEAREST, Rust(knn())),
        (
            shaders::POINTKD_RADIUS_SELECT,
            Rust(rust_layout!(RadiusSelectPush {
                nodes_address,
                header_address,
                centres_address,
                chosen_address,
                count_address,
                radii_address,
                top_points,
                levels,
                k,
                pad
            })),
        ),
        (
            shaders::POINTKD_RADIUS_STORE,
            Rust(rust_layout!(RadiusStorePush {
                chosen_address,
                found_address,
                radii_address,
                count_address
            })),
        ),
        (
            shaders::POINTKD_RADIUS_ESTIMATE,
            Rust(rust_layout!(RadiusEstimatePush {
                nodes_address,
                header_address,
                node_radii_address,
                entries_address,
                queries_address,
                radii_address,
                count_address,
                host_count,
                pad
            })),
        ),
        (
            shaders::POINTS_ORIENT,
            Rust(rust_layout!(OrientPush {
                positions_address,
                normals_address,
                ids_address,
                weights_address,
                component_address,
                parity_address,
                parent_address,
                link_address,
                lightest_address,
                top_address,
                stats_address,
                count,
                k,
                round,
                pad
            })),
        ),
        (
            shaders::POINTS_STRENGTH,
            Rust(rust_layout!(StrengthPush {
                active_address,
                static_address,
                out_address,
                count,
                pad
            })),
        ),
        (
            shaders::POINTKD_KEYS,
            Rust(rust_layout!(PointKdBuildPush { refs_address })),
        ),
        (
            shaders::POINTKD_INIT,
            Rust(rust_layout!(PointKdBuildPush { refs_address })),
        ),
        (
            shaders::POINTKD_SPLIT,
            Rust(rust_layout!(PointKdBuildPush { refs_address })),
        ),
        (
            shaders::POINTKD_FLAGS,
            Rust(rust_layout!(PointKdBuildPush { refs_address })),
        ),
        (
            shaders::POINTKD_SCATTER,
            Rust(rust_layout!(PointKdBuildPush { refs_address })),
        ),
        (
            shaders::POINTKD_ROUND_END,
            Rust(rust_layout!(PointKdBuildPush { refs_address })),
        ),
        (
            shaders::POINTKD_SMALL,
            Rust(rust_layout!(PointKdBuildPush { refs_address })),
        ),
        (
            shaders::POINTKD_ENTRIES,
            Rust(rust_layout!(PointKdBuildPush { refs_address })),
        ),
        (
            shaders::POINTS_NORMALS,
            Rust(rust_layout!(NormalsPush {
                positions_address,
                ids_address,
                distances_address,
                out_address,
                count,
                k
            })),
        ),
        (
            shaders::GRID_PROJECT,
            Rust(rust_layout!(ProjectPush {
                positions_address,
                triangles_address,
                grid_triangles_address,
                counts_address,
                frame_address,
                origin,
                count,
                forward,
                width,
                right_inverse,
                height,
                up_inverse,
                tile_size,
                near
            })),
        ),
        (
            shaders::GRID_REFERENCES,
            Rust(rust_layout!(ReferencesPush {
                grid_triangles_address,
                offsets_address,
                frame_address,
                bin_ids_address,
                triangle_ids_address,
                count,
                capacity,
                tiles_x,
                slabs
            })),
        ),
        (
            shaders::GRID_CAST,
            Rust(rust_layout!(CastPush {
                rays_address,
                hits_address,
                work_address,
                bin_starts_address,
                triangle_ids_address,
                positions_address,
                triangles_address,
                frame_address,
                forward,
                width,
                height,
                tiles_x,
                tiles,
                slabs,
                tile_size,
                pad,
                cutouts_address
            })),
        ),
        (
            shaders::SCENE_DEFAULT_SURFACE,
            Rust(rust_layout!(DefaultSurfacePush {
                positions_address,
                normals_address,
                segments_u,
                segments_v,
                time,
                ground_half_size,
                ground_height,
                sphere_rings,
                spheres
            })),
        ),
        (
            shaders::SCENE_SKIN,
            Rust(rust_layout!(SkinPush {
                rest_address,
                joints_address,
                weights_address,
                palette_address,
                out_address,
                part_of_vertex_address,
                parts_address,
                offsets_address,
                morph_weights_address,
                vertex_count,
                pad
            })),
        ),
        (
            shaders::SCENE_SUBDIVIDE,
            Rust(rust_layout!(SubdividePush {
                coarse_address,
                refined_address,
                row_offsets_address,
                columns_address,
                weights_address,
                rows,
                pad
            })),
        ),
        (
            shaders::SCENE_SURFACE_NORMALS,
            Rust(rust_layout!(SurfaceNormalsPush {
                positions_address,
                triangles_address,
                ring_offsets_address,
                ring_address,
                out_address,
                heights_address,
                vertex_count,
                amount
            })),
        ),
        (
            shaders::RENDER_AOVS,
            Rust(rust_layout!(AovsPush {
                scene,
                list_address,
                aovs_address,
                forward,
                capacity,
                pixels,
                sample,
                sample_weight,
                cone_spread
            })),
        ),
        (
            shaders::RENDER_CAMERA_RAYS,
            Rust(rust_layout!(CameraRaysPush {
                list_address,
                origin,
                width,
                forward,
                height,
                right,
                capacity,
                up,
                counter_words,
                radiance_address,
                counters_address,
                sample,
                samples
            })),
        ),
        (
            shaders::RENDER_SHADE,
            Rust(rust_layout!(ShadePush {
                scene,
                list_address,
                count_address,
                next_list_address,
                shadow_list_address,
                counters_address,
                radiance_address,
                capacity,
                next_capacity,
                shadow_capacity,
                host_count,
                cone_spread,
                ambient,
                surface_offset,
                pass_flags
            })),
        ),
        (
            shaders::RENDER_GATHER_QUERIES,
            Rust(rust_layout!(GatherQueriesPush {
                scene,
                list_address,
                count_address,
                positions_address,
                payloads_address,
                counters_address,
                capacity,
                host_count,
                gather_capacity,
                cone_spread
            })),
        ),
        (
            shaders::PHOTONS_TRACE,
            Rust(rust_layout!(PhotonPush {
                scene,
                lights_address,
                state_address,
                counters_address,
                list_address,
                next_list_address,
                stored_address,
                powers_address,
                triangle_count,
                light_count,
                material_count,
                photon_count,
                bounce,
                spawn,
                seed,
                surface_offset
            })),
        ),
        (
            shaders::PHOTONS_ESTIMATE,
            Rust(rust_layout!(EstimatePush {
                nodes_address,
                entries_address,
                powers_address,
                positions_address,
                payloads_address,
                found_address,
                count_address,
                radiance_address,
                capacity,
                pad
            })),
        ),
        (
            shaders::RENDER_CLOSE_LISTS,
            Rust(rust_layout!(CloseListsPush {
                counters_address,
                next_capacity,
                shadow_capacity,
                elements_per_group,
                max_groups_per_dim
            })),
        ),
        (
            shaders::RENDER_SHADOW_RADIANCE,
            Rust(rust_layout!(ShadowRadiancePush {
                list_address,
                count_address,
                radiance_address,
                capacity,
                pad
            })),
        ),
        (
            shaders::RENDER_CHANNELS,
            Rust(rust_layout!(ChannelsPush {
                radiance_address,
                aovs_address,
                planes_address,
                pixels,
                channel_count,
                channels,
                sample_weight,
                pad
            })),
        ),
        (
            shaders::RENDER_RESOLVE,
            Rust(rust_layout!(ResolvePush {
                radiance_address,
                image_address,
                pixels,
                sample_weight
            })),
        ),
        (
            shaders::OCTREE_UNIQUE_FLAGS,
            Rust(rust_layout!(UniqueFlagsPush {
                keys_address,
                flags_address,
                count
            })),
        ),
        (
            shaders::OCTREE_GATHER_KEYS,
            Rust(rust_layout!(GatherKeysPush {
                keys_address,
                indices_address,
                unique_keys_address,
                count_address
            })),
        ),
        (
            shaders::OCTREE_EDGE_COUNTS,
            Rust(rust_layout!(EdgeCountsPush {
                keys_address,
                nodes_address,
                leaf_parents_address,
                bounds_address,
                count_address,
                edge_counts_address,
                splits_address,
                entries
            })),
        ),
        (
            shaders::OCTREE_LINK_NODES,
            Rust(rust_layout!(LinkNodesPush {
                keys_address,
                nodes_address,
                leaf_parents_address,
                count_address,
                edge_counts_address,
                offsets_address,
                octree_address,
                octree_count_address,
                entries
            })),
        ),
        // {u64 src_address, u64 dst_address, u32 vector_count}: the bench's copy (src/cli/bench.rs).
        (shaders::PRIMS_COPY, GlslOffsets(&[0, 8, 16])),
        (
            shaders::BENCH_EMPTY,
            Rust(rust_layout!(EmptyPush {
                counter_address,
                group_count
            })),
        ),
    ]
}

/// A struct shared with GLSL through buffers.
struct SharedStruct {
    /// A kernel declaring it.
    kernel: Kernel,
    /// Its GLSL name.
    name: &'static str,
    /// Its GLSL member types, to find it in release builds (which drop names).
    shape: &'static [&'static str],
    /// The Rust mirror.
    rust: RustLayout,
    /// The member offsets, written out.
    offsets: &'static [u32],
}

/// One entry per struct shared with GLSL through buffers.
fn shared_struct_layouts() -> Vec<SharedStruct> {
    vec![
        SharedStruct {
            kernel: shaders::RENDER_AOVS,
            name: "PixelAovs",
            shape: &[
                "vec3<f32>",
                "f32",
                "vec3<f32>",
                "u32",
                "vec3<f32>",
                "f32",
                "u32",
            ],
            rust: rust_layout!(PixelAovs {
                normal,
                depth,
                albedo,
                object_id,
                position,
                coverage,
                instance_id
            }),
            offsets: &[0, 12, 16, 28, 32, 44, 48],
        },
        SharedStruct {
            kernel: shaders::SCENE_SKIN,
            name: "MorphPart",
            shape: &["u32", "u32", "u32", "u32", "u32", "u32"],
            rust: rust_layout!(MorphPart {
                first_vertex,
                vertex_count,
                targets,
                first_offset,
                first_weight,
                pad
            }),
            offsets: &[0, 4, 8, 12, 16, 20],
        },
        SharedStruct {
            kernel: shaders::PRIMS_REDUCE_AABB,
            name: "Aabb",
            shape: &["vec3<f32>", "u32", "vec3<f32>", "u32"],
            rust: rust_layout!(Aabb {
                min,
                pad0,
                max,
                pad1
            }),
            offsets: &[0, 12, 16, 28],
        },
        SharedStruct {
            kernel: shaders::BVH_TRACE,
            name: "BvhNode",
            shape: &[
                "vec3<f32>",
                "u32",
                "vec3<f32>",
                "u32",
                "vec3<f32>",
                "u32",
                "vec3<f32>",
                "u32",
            ],
            rust: rust_layout!(BvhNode {
                left_min,
                left,
                left_max,
                right,
                right_min,
                parent,
                right_max,
                leaf_count
            }),
            offsets: &[0, 12, 16, 28, 32, 44, 48, 60],
        },
        SharedStruct {
            kernel: shaders::BVH_COLLAPSE,
            name: "WideNode",
            shape: &["vec3<f32>", "u32", "u32", "u32", "u32", "u32", "[u32; 12]"],
            rust: rust_layout!(WideNode {
                origin,
                exponents_internal,
                child_base,
                triangle_base,
                leaf_mask,
                leaf_count,
                planes
            }),
            offsets: &[0, 12, 16, 20, 24, 28, 32],
        },
        SharedStruct {
            kernel: shaders::BVH_TRACE,
            name: "LeafTriangle",
            shape: &["vec4<f32>", "vec4<f32>", "vec4<f32>"],
            rust: rust_layout!(LeafTriangle { a, b, c }),
            offsets: &[0, 16, 32],
        },
        SharedStruct {
            kernel: shaders::BVH_TRACE_INSTANCES,
            name: "BvhInstance",
            shape: &[
                "[vec4<f32>; 3]",
                "[vec4<f32>; 3]",
                "u64",
                "u64",
                "u32",
                "u32",
                "u32",
                "u32",
            ],
            rust: rust_layout!(BvhInstance {
                world_to_object,
                object_to_world,
                nodes_address,
                leaves_address,
                first_triangle,
                triangle_count,
                mask,
                flags
            }),
            offsets: &[0, 48, 96, 104, 112, 116, 120, 124],
        },
        SharedStruct {
            kernel: shaders::BVH_TRACE,
            name: "Ray",
            shape: &["vec3<f32>", "f32", "vec3<f32>", "f32"],
            rust: rust_layout!(Ray {
                origin,
                tmin,
                direction,
                tmax
            }),
            offsets: &[0, 12, 16, 28],
        },
        SharedStruct {
            kernel: shaders::BVH_TRACE,
            name: "Hit",
            shape: &["f32", "u32", "f32", "f32"],
            rust: rust_layout!(Hit { t, triangle, u, v }),
            offsets: &[0, 4, 8, 12],
        },
        SharedStruct {
            kernel: shaders::KDTREE_TRACE,
            name: "RayWork",
            shape: &["u32", "u32"],
            rust: rust_layout!(RayWork {
                nodes_visited,
                primitives_tested
            }),
            offsets: &[0, 4],
        },
        SharedStruct {
            kernel: shaders::BIH_SMALL_NODES,
            name: "BihTask",
            shape: &["u32", "u32", "u32", "u32", "vec3<f32>", "vec3<f32>"],
            rust: rust_layout!(BihTask {
                node,
                first,
                count,
                flags,
                region_lo,
                region_hi
            }),
            offsets: &[0, 4, 8, 12, 16, 28],
        },
        SharedStruct {
            kernel: shaders::BIH_TRACE,
            name: "BihNode",
            shape: &["u32", "u32", "vec2<f32>"],
            rust: rust_layout!(BihNode { word0, word1, clip }),
            offsets: &[0, 4, 8],
        },
        SharedStruct {
            kernel: shaders::POINTKD_SPLIT,
            name: "PointKdBuildState",
            shape: &["u32", "u32", "u32", "u32", "u32", "u32", "u32", "u32"],
            rust: rust_layout!(PointKdBuildState {
                node_count,
                tasks,
                next_tasks,
                small_tasks,
                to_partition,
                parity,
                queue,
                overflow
            }),
            offsets: &[0, 4, 8, 12, 16, 20, 24, 28],
        },
        SharedStruct {
            kernel: shaders::POINTKD_SPLIT,
            name: "PointKdBuildRefs",
            shape: &[
                "u64", "[u64; 2]", "[u64; 2]", "[u64; 2]", "u64", "u64", "u64", "u64", "u64",
                "u64", "u64", "u64", "u64", "u64", "u32", "u32", "u32", "u32", "u32", "u32", "u32",
                "u32", "f32", "f32", "f32", "u32", "u32", "u32",
            ],
            rust: rust_layout!(PointKdBuildRefs {
                positions,
                lists,
                owners,
                tasks,
                splits,
                small,
                flags,
                offsets,
                keys,
                nodes,
                entries,
                state,
                header,
                count_address,
                count,
                stride,
                node_capacity,
                task_capacity,
                small_capacity,
                large_node,
                max_leaf,
                max_depth,
                empty_space,
                traversal_cost,
                radius,
                k_estimate,
                local_radius,
                pad
            }),
            offsets: &[
                0, 8, 24, 40, 56, 64, 72, 80, 88, 96, 104, 112, 120, 128, 136, 140, 144, 148, 152,
                156, 160, 164, 168, 172, 176, 180, 184, 188,
            ],
        },
        SharedStruct {
            kernel: shaders::POINTKD_KNN,
            name: "PointKdHeader",
            shape: &["u32", "f32", "u32", "u32"],
            rust: rust_layout!(PointKdHeader {
                node_count,
                query_radius,
                point_count,
                pad
            }),
            offsets: &[0, 4, 8, 12],
        },
        SharedStruct {
            kernel: shaders::POINTKD_KNN,
            name: "KnnCounters",
            shape: &["u64", "u64", "u64", "u64"],
            rust: rust_layout!(KnnCounters {
                queries,
                range_searches,
                nodes_tested,
                points_tested
            }),
            offsets: &[0, 8, 16, 24],
        },
        SharedStruct {
            kernel: shaders::PHOTONS_TRACE,
            name: "PhotonCounters",
            shape: &["u32", "u32", "u32", "u32"],
            rust: rust_layout!(PhotonCounters {
                emitters,
                emitted,
                stored,
                pad
            }),
            offsets: &[0, 4, 8, 12],
        },
        SharedStruct {
            kernel: shaders::PHOTONS_TRACE,
            name: "PhotonEmitter",
            shape: &[
                "vec3<f32>",
                "f32",
                "vec3<f32>",
                "u32",
                "u32",
                "u32",
                "f32",
                "f32",
            ],
            rust: rust_layout!(PhotonEmitter {
                centre,
                radius,
                power,
                light,
                first,
                count,
                cos_max,
                back
            }),
            offsets: &[0, 12, 16, 28, 32, 36, 40, 44],
        },
        SharedStruct {
            kernel: shaders::PHOTONS_TRACE,
            name: "PhotonTarget",
            shape: &["vec3<u32>", "u32", "vec3<u32>", "u32"],
            rust: rust_layout!(PhotonTarget {
                lo,
                pad,
                hi,
                radius_bits
            }),
            offsets: &[0, 12, 16, 28],
        },
        SharedStruct {
            kernel: shaders::POINTS_ORIENT,
            name: "OrientStats",
            shape: &["[u32; 32]", "u32", "u32"],
            rust: rust_layout!(OrientStats {
                hooks,
                flipped,
                pad
            }),
            offsets: &[0, 128, 132],
        },
        SharedStruct {
            kernel: shaders::POINTKD_KNN,
            name: "PointKdNode",
            shape: &["vec3<f32>", "u32", "vec3<f32>", "u32"],
            rust: rust_layout!(PointKdNode {
                lo,
                word0,
                hi,
                word1
            }),
            offsets: &[0, 12, 16, 28],
        },
        SharedStruct {
            kernel: shaders::GRID_REFERENCES,
            name: "GridFrame",
            shape: &["u64", "u32", "u32", "u32", "u32"],
            rust: rust_layout!(GridFrame {
                needed,
                z_min_bits,
                z_max_bits,
                references,
                pad
            }),
            offsets: &[0, 8, 12, 16, 20],
        },
        SharedStruct {
            kernel: shaders::GRID_REFERENCES,
            name: "GridTriangle",
            shape: &["u32", "u32", "f32", "u32"],
            rust: rust_layout!(GridTriangle {
                tiles_lo,
                tiles_hi,
                depth,
                pad
            }),
            offsets: &[0, 4, 8, 12],
        },
        SharedStruct {
            kernel: shaders::KDTREE_TRACE,
            name: "KdNode",
            shape: &["u32", "u32"],
            rust: rust_layout!(KdNode { word0, word1 }),
            offsets: &[0, 4],
        },
        SharedStruct {
            kernel: shaders::KDTREE_LARGE_BOXES,
            name: "BuildRefs",
            shape: &[
                "[u64; 2]", "[u64; 2]", "u64", "[u64; 2]", "u64", "u64", "u64", "u64", "u64",
                "u64", "u64", "u64", "u64", "u32", "u32", "u32", "u32", "u32", "u32", "u32", "u32",
                "u32", "u32", "u32", "f32", "f32", "f32", "f32", "u32",
            ],
            rust: rust_layout!(BuildRefs {
                records,
                large_nodes,
                children,
                chunks,
                small_roots,
                small_records,
                entries,
                leaf_triangles,
                status,
                levels,
                small_root_counters,
                tree_nodes,
                tree_bounds,
                record_capacity,
                large_node_capacity,
                chunk_capacity,
                small_record_capacity,
                small_root_capacity,
                entry_capacity,
                large_entry_capacity,
                leaf_capacity,
                max_depth,
                small_threshold,
                max_stalls,
                empty_cut,
                traversal_cost,
                intersection_cost,
                empty_bonus,
                max_groups_per_dim
            }),
            offsets: &[
                0, 16, 32, 40, 56, 64, 72, 80, 88, 96, 104, 112, 120, 128, 132, 136, 140, 144, 148,
                152, 156, 160, 164, 168, 172, 176, 180, 184, 188,
            ],
        },
        SharedStruct {
            kernel: shaders::KDTREE_LARGE_BOXES,
            name: "LevelCounters",
            shape: &["u32", "u32", "u32", "u32", "vec4<u32>", "[u32; 24]"],
            rust: rust_layout!(KdLevelCounters {
                node_count,
                chunk_count,
                records,
                pad,
                chunk_grid,
                line_pad
            }),
            offsets: &[0, 4, 8, 12, 16, 32],
        },
        SharedStruct {
            kernel: shaders::KDTREE_SMALL_SUBTREES,
            name: "SmallRootCounters",
            shape: &["u32", "vec3<u32>"],
            rust: rust_layout!(KdSmallRootCounters {
                node_count,
                node_grid
            }),
            offsets: &[0, 4],
        },
        SharedStruct {
            kernel: shaders::KDTREE_LEAF_COUNTS,
            name: "BuildStatus",
            shape: &["u32", "u32", "u32", "u32"],
            rust: rust_layout!(KdBuildStatus {
                nodes,
                leaf_triangles,
                small_records,
                overflow
            }),
            offsets: &[0, 4, 8, 12],
        },
        SharedStruct {
            kernel: shaders::KDTREE_LARGE_CLASSIFY,
            name: "Record",
            shape: &["vec3<f32>", "vec3<f32>", "u32"],
            rust: rust_layout!(KdRecord { lo, hi, triangle }),
            offsets: &[0, 12, 24],
        },
        SharedStruct {
            kernel: shaders::KDTREE_LARGE_BOXES,
            name: "LargeNode",
            shape: &[
                "vec3<f32>",
                "u32",
                "vec3<f32>",
                "u32",
                "vec3<u32>",
                "u32",
                "vec3<u32>",
                "u32",
                "u32",
                "f32",
                "u32",
                "u32",
            ],
            rust: rust_layout!(KdLargeNode {
                cell_lo,
                first,
                cell_hi,
                count,
                tight_lo,
                entry,
                tight_hi,
                depth,
                split_axis,
                split,
                stalls,
                chunks_done
            }),
            offsets: &[0, 12, 16, 28, 32, 44, 48, 60, 64, 68, 72, 76],
        },
        SharedStruct {
            kernel: shaders::KDTREE_LARGE_CLASSIFY,
            name: "Chunk",
            shape: &["u32", "u32"],
            rust: rust_layout!(KdChunk { node, first }),
            offsets: &[0, 4],
        },
        SharedStruct {
            kernel: shaders::KDTREE_SMALL_SUBTREES,
            name: "SmallNode",
            shape: &["vec3<f32>", "u32", "vec3<f32>", "u32", "u64", "u32", "u32"],
            rust: rust_layout!(KdSmallNode {
                cell_lo,
                root_first,
                cell_hi,
                root_count,
                members,
                entry,
                depth
            }),
            offsets: &[0, 12, 16, 28, 32, 40, 44],
        },
        SharedStruct {
            kernel: shaders::KDTREE_WRITE_NODES,
            name: "Entry",
            shape: &["u32", "u32", "u32", "u32"],
            rust: rust_layout!(KdEntry {
                word0,
                word1,
                parent,
                leaves
            }),
            offsets: &[0, 4, 8, 12],
        },
        SharedStruct {
            kernel: shaders::OCTREE_EDGE_COUNTS,
            name: "KdSplit",
            shape: &["u32", "f32"],
            rust: rust_layout!(KdSplit { axis, plane }),
            offsets: &[0, 4],
        },
        SharedStruct {
            kernel: shaders::RENDER_SHADE,
            name: "SceneRefs",
            shape: &["u64", "u64", "u64", "u64", "u64"],
            rust: rust_layout!(SceneRefs {
                positions,
                normals,
                triangles,
                triangle_materials,
                appearance
            }),
            offsets: &[0, 8, 16, 24, 32],
        },
        SharedStruct {
            kernel: shaders::RENDER_SHADE,
            name: "Material",
            shape: &[
                "vec3<f32>",
                "f32",
                "vec3<f32>",
                "u32",
                "f32",
                "u32",
                "f32",
                "f32",
                "struct",
                "struct",
                "f32",
                "f32",
                "f32",
                "f32",
                "struct",
                "struct",
                "struct",
            ],
            rust: rust_layout!(Material {
                colour,
                checker_scale,
                emission,
                kind,
                ior,
                alpha_mode,
                alpha_cutoff,
                alpha,
                base_colour_texture,
                emissive_texture,
                metallic,
                roughness,
                normal_scale,
                occlusion_strength,
                normal_texture,
                metallic_roughness_texture,
                occlusion_texture
            }),
            offsets: &[
                0, 12, 16, 28, 32, 36, 40, 44, 48, 80, 112, 116, 120, 124, 128, 160, 192,
            ],
        },
        SharedStruct {
            kernel: shaders::RENDER_SHADE,
            name: "Environment",
            shape: &["u64", "u32", "u32", "f32", "f32", "f32", "u32"],
            rust: rust_layout!(GpuEnvironment {
                texels,
                width,
                height,
                intensity,
                rotation_cos,
                rotation_sin,
                pad
            }),
            offsets: &[0, 8, 12, 16, 20, 24, 28],
        },
        SharedStruct {
            kernel: shaders::RENDER_SHADE,
            name: "TextureRef",
            shape: &["vec3<f32>", "u32", "vec3<f32>", "u32"],
            rust: rust_layout!(TextureRef {
                transform_u,
                texture,
                transform_v,
                texcoord_set
            }),
            offsets: &[0, 12, 16, 28],
        },
        SharedStruct {
            kernel: shaders::RENDER_SHADE,
            name: "Texture",
            shape: &["u32", "u32", "u32", "u32"],
            rust: rust_layout!(GpuTexture {
                first_texel,
                width,
                height,
                sampling
            }),
            offsets: &[0, 4, 8, 12],
        },
        SharedStruct {
            kernel: shaders::RENDER_SHADE,
            name: "RayPayload",
            shape: &["vec3<f32>", "u32"],
            rust: rust_layout!(RayPayload { weight, pixel }),
            offsets: &[0, 12],
        },
        SharedStruct {
            kernel: shaders::RENDER_CLOSE_LISTS,
            name: "BounceCounters",
            shape: &["u32", "u32", "u32", "u32", "vec4<u32>", "vec4<u32>"],
            rust: rust_layout!(BounceCounters {
                appended_rays,
                appended_shadow_rays,
                rays,
                shadow_rays,
                shade_groups,
                shadow_groups
            }),
            offsets: &[0, 4, 8, 12, 16, 32],
        },
        SharedStruct {
            kernel: shaders::RENDER_SHADE,
            name: "Light",
            shape: &["vec3<f32>", "u32", "vec3<f32>", "f32"],
            rust: rust_layout!(GpuLight {
                vector,
                kind,
                intensity,
                pad
            }),
            offsets: &[0, 12, 16, 28],
        },
        SharedStruct {
            kernel: shaders::OCTREE_LINK_NODES,
            name: "OctreeNode",
            shape: &["u64", "u32", "u32"],
            rust: rust_layout!(OctreeNode {
                prefix,
                parent,
                level
            }),
            offsets: &[0, 8, 12],
        },
    ]
}

/// Differences between a GLSL struct and its Rust mirror, each a line naming `what`.
fn compare(what: &str, glsl: &StructLayout, rust: &RustLayout) -> Vec<String> {
    let mut problems = Vec::new();
    if glsl.offsets != rust.offsets {
        problems.push(format!(
            "{what}: GLSL member offsets {:?} != {} field offsets {:?}",
            glsl.offsets, rust.name, rust.offsets
        ));
    }
    let glsl_sizes: Vec<u32> = glsl.sizes.iter().map(|s| s.unwrap_or(0)).collect();
    if glsl_sizes != rust.sizes {
        problems.push(format!(
            "{what}: GLSL member sizes {:?} ({:?}) != {} field sizes {:?}",
            glsl_sizes, glsl.shape, rust.name, rust.sizes
        ));
    }
    match glsl.end() {
        Some(end) if rust.size >= end => {}
        end => problems.push(format!(
            "{what}: {} is {} bytes but the GLSL block spans {end:?}",
            rust.name, rust.size
        )),
    }
    problems
}

#[test]
fn push_constants_match_rust() {
    let mut problems = Vec::new();
    for (kernel, expected) in push_constant_layouts() {
        let what = format!("push constants of glsl/{}.comp", kernel.name);
        let Some(glsl) = Module::parse(kernel.spirv).push_constants() else {
            problems.push(format!("{what}: no push-constant block found"));
            continue;
        };
        match &expected {
            Expected::Rust(rust) => {
                problems.extend(compare(&what, &glsl, rust));
                if rust.size > PUSH_CONSTANT_BYTES {
                    problems.push(format!(
                        "{what}: {} is {} bytes, over the {PUSH_CONSTANT_BYTES}-byte push range",
                        rust.name, rust.size
                    ));
                }
            }
            Expected::GlslOffsets(offsets) => {
                if glsl.offsets != *offsets {
                    problems.push(format!(
                        "{what}: offsets {:?}, expected {offsets:?}",
                        glsl.offsets
                    ));
                }
            }
        }
        if glsl.end().is_none_or(|end| end > PUSH_CONSTANT_BYTES) {
            problems.push(format!(
                "{what}: spans {:?} bytes, over the {PUSH_CONSTANT_BYTES}-byte push range",
                glsl.end()
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "layout mismatches:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_appearance_head_matches_its_glsl_block() {
    // The block ends in the materials, a runtime array: its head is the Rust struct, the
    // materials start where it ends.
    let head = rust_layout!(AppearanceHead {
        texcoords,
        textures,
        texels,
        triangles,
        triangle_materials,
        tangents,
        colours,
        triangle_instances,
        lights,
        material_count,
        texture_count,
        light_count,
        pad,
        environment
    });
    let shape = [
        "u64", "u64", "u64", "u64", "u64", "u64", "u64", "u64", "u64", "u32", "u32", "u32", "u32",
        "struct", "[struct]",
    ];
    for kernel in [shaders::RENDER_SHADE, shaders::BVH_TRACE] {
        let found = Module::parse(kernel.spirv).structs_named("Appearance", &shape);
        assert!(!found.is_empty(), "Appearance not found in {}", kernel.name);
        for glsl in found {
            assert_eq!(glsl.offsets[..14], head.offsets[..], "in {}", kernel.name);
            let sizes: Vec<u32> = glsl.sizes[..14].iter().map(|s| s.unwrap()).collect();
            assert_eq!(sizes, head.sizes, "in {}", kernel.name);
            assert_eq!(glsl.offsets[14], head.size, "materials in {}", kernel.name);
        }
    }
    assert_eq!(head.size, 120);
}

#[test]
fn shared_structs_match_rust() {
    let mut problems = Vec::new();
    for SharedStruct {
        kernel,
        name,
        shape,
        rust,
        offsets,
    } in shared_struct_layouts()
    {
        let what = format!("struct {name} in glsl/{}.comp", kernel.name);
        let module = Module::parse(kernel.spirv);
        let found = module.structs_named(name, shape);
        if found.is_empty() {
            problems.push(format!(
                "{what}: not found in a buffer (by name, or as {shape:?})"
            ));
        }
        if rust.offsets != offsets {
            problems.push(format!(
                "{what}: {} offsets {:?}, expected {offsets:?}",
                rust.name, rust.offsets
            ));
        }
        for glsl in &found {
            if glsl
                .shape
                .iter()
                .map(String::as_str)
                .ne(shape.iter().copied())
            {
                problems.push(format!(
                    "{what}: member types {:?}, expected {shape:?}",
                    glsl.shape
                ));
            }
            problems.extend(compare(&what, glsl, &rust));
            for stride in module.strides_of_arrays_of(glsl.id) {
                if stride != rust.size {
                    problems.push(format!(
                        "{what}: arrays of it have a stride of {stride} bytes, {} is {}",
                        rust.name, rust.size
                    ));
                }
            }
        }
    }
    assert!(
        problems.is_empty(),
        "layout mismatches:\n{}",
        problems.join("\n")
    );
}

#[test]
fn aabb_is_32_bytes() {
    assert_eq!(std::mem::size_of::<Aabb>(), 32);
    assert_eq!(std::mem::align_of::<Aabb>(), 4);
}

fn kernel_files(dir: &std::path::Path, root: &std::path::Path, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            kernel_files(&path, root, out);
        } else if path.extension().is_some_and(|e| e == "comp") {
            let relative = path.strip_prefix(root).unwrap().with_extension("");
            out.push(relative.to_string_lossy().replace('\\', "/"));
        }
    }
}

#[test]
fn every_kernel_has_a_push_constant_entry() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("glsl");
    let mut files = Vec::new();
    kernel_files(&root, &root, &mut files);
    let listed: Vec<&str> = push_constant_layouts()
        .iter()
        .map(|(k, _)| k.name)
        .collect();
    let mut missing: Vec<&String> = files
        .iter()
        .filter(|f| !listed.contains(&f.as_str()))
        .collect();
    missing.sort();
    assert!(
        missing.is_empty(),
        "kernels without an entry in push_constant_layouts() (tests/layout.rs): {missing:?}"
    );
    let mut unique = listed.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), listed.len(), "a kernel is listed twice");
}
