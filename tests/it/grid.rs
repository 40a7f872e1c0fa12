//! The screen grid (seed 001): every GPU build is checked against the CPU reference (each
//! triangle in exactly the tiles its projected bounds cover, up to the rounding margin, in
//! its one slab, bins ordered front to back), and every pixel's cast hit against brute force,
//! the LBVH built in the same frame and the CPU cast: on random soups, a real mesh, triangles
//! crossing the near plane, huge triangles covering the screen, a mesh outside the view, an
//! empty scene, images that are not a multiple of the tile, reference lists that must grow,
//! a backdrop whose depths span a few ulps, and the default scene's size with every dispatch
//! grid folded. The kernels' SPIR-V holds no `dot`, and the references kernel no float
//! division.

use crate::common;

use canopy::accel::bvh::lbvh::LbvhParams;
use canopy::accel::grid::GridParams;
use canopy::accel::grid::build::GridStructure;
use canopy::accel::grid::cpu::{self, CpuGrid};
use canopy::accel::{CameraBatch, RayStructure, Structure, submit_until_complete};
use canopy::geom::PinholeView;
use canopy::geom::ray::{Hit, MISS, Query, Ray, RayWork, closest_hit_brute_force};
use canopy::render::Camera;
use canopy::scene::Mesh;
use canopy::vk::{Context, MemoryKind, Slice};
use common::{
    DeviceMesh, Rng, assert_hits_match_brute_force, assert_valid, context, folding_context,
    random_mesh, trace,
};
use glam::Vec3;

/// A grid built and cast on the GPU, read back.
struct Cast {
    grid: CpuGrid,
    rays: Vec<Ray>,
    hits: Vec<Hit>,
    work: Vec<RayWork>,
    lbvh_hits: Vec<Hit>,
    grown: bool,
}

/// The camera orbiting `mesh`'s bounding sphere (30° around, 20° up, 45°, at 2.2 radii).
fn orbit_view(mesh: &Mesh, width: u32, height: u32) -> PinholeView {
    let (lo, hi) = mesh.bounds().unwrap();
    let (lo, hi) = (Vec3::from(lo), Vec3::from(hi));
    let radius = ((hi - lo) * 0.5).length().max(1e-3);
    Camera::orbit((lo + hi) * 0.5, radius * 2.2, 30.0, 20.0, 45.0).view(width, height)
}

fn view_from(eye: [f32; 3], target: [f32; 3], width: u32, height: u32) -> PinholeView {
    Camera {
        position: eye.into(),
        target: target.into(),
        up: Vec3::Y,
        fov_y_degrees: 60.0,
    }
    .view(width, height)
}

/// Builds the grid of `mesh` for `view` on the GPU and casts every pixel's ray through it;
/// the same rays traced through the structure's LBVH.
fn cast(ctx: &Context, mesh: &Mesh, view: &PinholeView, params: GridParams) -> Cast {
    let device = DeviceMesh::new(ctx, mesh);
    let input = device.input();
    let mut grid =
        GridStructure::new(ctx, params, LbvhParams::default(), device.count.max(1), 1).unwrap();
    grid.set_view(ctx, view).unwrap();
    let rays: Vec<Ray> = (0..view.pixels() as u32)
        .map(|i| view.primary_ray(i % view.width, i / view.width))
        .collect();
    let ray_buffer = ctx.create_buffer_with("rays", &rays).unwrap();
    let hits = ctx
        .create_buffer("hits", view.pixels() * 16, MemoryKind::Device)
        .unwrap();
    let work = ctx
        .create_buffer("work", view.pixels() * 8, MemoryKind::Device)
        .unwrap();
    let capacity = grid.reference_capacity();
    submit_until_complete(ctx, &mut grid, |rec, grid| {
        grid.record_build(rec, &input, 0)?;
        let traversable = grid.traversable(&input);
        let batch = CameraBatch {
            view: *view,
            rays: Slice::whole(&ray_buffer),
            hits: Slice::whole(&hits),
            work: Some(Slice::whole(&work)),
            cutouts: None,
        };
        traversable
            .camera_caster()
            .expect("the grid casts camera rays")
            .record_cast(rec, &batch)
    })
    .unwrap();
    assert_valid(ctx);
    let lbvh_hits = trace(
        ctx,
        grid.traversable(&input).as_ref(),
        &rays,
        Query::Closest,
    );
    let n = rays.len();
    Cast {
        grid: grid.download(ctx).unwrap(),
        hits: ctx.download(&hits, 0, n).unwrap(),
        work: ctx.download(&work, 0, n).unwrap(),
        rays,
        lbvh_hits,
        grown: grid.reference_capacity() > capacity,
    }
}

/// Whether two closest hits are the same: the same triangle, or (a ray through an edge or
/// vertex shared by several) the same distance.
fn same_hit(a: &Hit, b: &Hit) -> bool {
    a.triangle == b.triangle
        || (a.triangle != MISS && b.triangle != MISS && (a.t - b.t).abs() <= 1e-5 * a.t.abs())
}

/// Builds and casts, checks the grid against the reference and the hits against brute force,
/// the LBVH and the CPU cast; returns the cast.
fn check(ctx: &Context, mesh: &Mesh, view: &PinholeView, params: GridParams, label: &str) -> Cast {
    let run = cast(ctx, mesh, view, params);
    let stats = cpu::check(&mesh.positions, &mesh.triangles, view, &params, &run.grid)
        .unwrap_or_else(|e| panic!("{label}: {e}"));
    assert_eq!(
        stats.references,
        run.grid.triangle_ids.len() as u64,
        "{label}"
    );
    for (i, (grid, lbvh)) in run.hits.iter().zip(&run.lbvh_hits).enumerate() {
        assert!(
            same_hit(grid, lbvh),
            "{label}: pixel {i}: grid {grid:?}, LBVH {lbvh:?}"
        );
    }
    let (cpu_hits, cpu_work) = cpu::cast(
        &run.grid,
        &mesh.positions,
        &mesh.triangles,
        view,
        params.tile_size,
        &run.rays,
    );
    for (i, (gpu, cpu)) in run.hits.iter().zip(&cpu_hits).enumerate() {
        assert!(
            same_hit(gpu, cpu),
            "{label}: pixel {i}: GPU {gpu:?}, CPU {cpu:?}"
        );
    }
    let total = |w: &[RayWork]| w.iter().map(|w| w.primitives_tested as u64).sum::<u64>();
    let (gpu_tests, cpu_tests) = (total(&run.work), total(&cpu_work));
    assert!(
        gpu_tests.abs_diff(cpu_tests) <= cpu_tests / 100,
        "{label}: {gpu_tests} triangle tests on the GPU, {cpu_tests} on the CPU"
    );
    if run.hits.iter().filter(|h| h.triangle != MISS).count() * 4 > run.hits.len() {
        assert_hits_match_brute_force(mesh, &run.rays, &run.hits, &run.hits, label);
    } else {
        for (i, ray) in run.rays.iter().enumerate() {
            let expected = closest_hit_brute_force(&mesh.positions, &mesh.triangles, ray);
            assert!(
                same_hit(&run.hits[i], &expected),
                "{label}: pixel {i}: {:?}, brute force {expected:?}",
                run.hits[i]
            );
        }
    }
    run
}

#[test]
fn random_soups_and_a_real_mesh() {
    let ctx = context();
    let mut rng = Rng::new(51);
    let params = GridParams::default();
    for (n, width, height) in [(1, 16, 16), (2, 24, 8), (100, 40, 30), (5000, 64, 48)] {
        let mesh = random_mesh(&mut rng, n, 3.0, 0.3);
        let view = orbit_view(&mesh, width, height);
        check(
            &ctx,
            &mesh,
            &view,
            params,
            &format!("random {n} at {width}x{height}"),
        );
    }
    let mesh = Mesh::load(&common::test_data("meshes/bunny_small.obj")).unwrap();
    let run = check(
        &ctx,
        &mesh,
        &orbit_view(&mesh, 99, 77),
        params,
        "bunny_small",
    );
    // Slabs cut the work: a ray tests far fewer triangles than its tile holds.
    let tested: u64 = run.work.iter().map(|w| w.primitives_tested as u64).sum();
    let in_tiles: u64 = (0..run.rays.len() as u32)
        .map(|i| {
            let tile = (i / 99 / 8) * run.grid.tiles[0] + (i % 99) / 8;
            (0..params.slabs)
                .map(|s| run.grid.bin(tile, s).len() as u64)
                .sum::<u64>()
        })
        .sum();
    assert!(
        tested * 10 < in_tiles * 9,
        "{tested} tests of {in_tiles} in the rays' tiles"
    );
}

#[test]
fn slab_counts_and_tile_sizes() {
    let ctx = context();
    let mesh = random_mesh(&mut Rng::new(52), 3000, 2.0, 0.2);
    let view = orbit_view(&mesh, 50, 37);
    for (tile_size, slabs) in [(8, 1), (8, 4), (16, 16), (8, 256)] {
        let params = GridParams {
            tile_size,
            slabs,
            ..GridParams::default()
        };
        check(
            &ctx,
            &mesh,
            &view,
            params,
            &format!("{tile_size}-pixel tiles, {slabs} slabs"),
        );
    }
}

/// A backdrop 900,000 units away, facing an oblique camera (each depth a sum of three
/// rounded products): its depths span a few dozen ulps (0.0625 each at that distance), so a
/// slab is an ulp or two deep and a depth one bit off lies in another slab. The checker holds
/// every depth, the depth range and every slab to the reference's bits.
#[test]
fn depth_ranges_of_a_few_ulps() {
    let ctx = context();
    let view = view_from([0.0; 3], [6e5, 4e5, -7e5], 64, 48);
    let [forward, right, up] = [view.forward, view.right, view.up].map(Vec3::from);
    let mut rng = Rng::new(54);
    let mut mesh = Mesh::default();
    for t in 0..600 {
        let across =
            |rng: &mut Rng, scale: f32| (rng.f32_in(-scale, scale), rng.f32_in(-scale, scale));
        let (x, y) = across(&mut rng, 0.9);
        for _ in 0..3 {
            let (dx, dy) = across(&mut rng, 0.05);
            let depth = 9e5 + rng.f32_in(-1.0, 1.0);
            let p = depth * (forward + right * (x + dx) + up * (y + dy));
            mesh.positions.push(p.into());
        }
        mesh.triangles.push([3 * t, 3 * t + 1, 3 * t + 2]);
    }
    for slabs in [16, 256] {
        let params = GridParams {
            slabs,
            ..GridParams::default()
        };
        let run = check(
            &ctx,
            &mesh,
            &view,
            params,
            &format!("far away, {slabs} slabs"),
        );
        let (z_min, z_max) = run.grid.frame.depth_range();
        let ulp = z_min.to_bits().abs_diff(z_max.to_bits());
        assert!(
            (8..=64).contains(&ulp),
            "depth range {z_min}..{z_max}: {ulp} ulps"
        );
    }
}

/// The depths and slabs are made of products, sums and comparisons, each rounded correctly on
/// every device, in the order the CPU reference takes: no float division in the references
/// kernel (Vulkan lets a device round one by 2.5 ulps; lavapipe's, like the CPU's, is exact),
/// and no `dot` in any grid kernel (a device may fuse or reorder it: NVIDIA's depths differed
/// from the CPU's in the last bit). The projection's divisions place triangles in tiles,
/// within the margins; the cast's are the watertight test's.
#[test]
fn kernels_place_depths_without_division_or_dot() {
    const OP_DOT: u32 = 148;
    const OP_FDIV: u32 = 136;
    let mut faults = Vec::new();
    for kernel in [
        canopy::shaders::GRID_PROJECT,
        canopy::shaders::GRID_REFERENCES,
        canopy::shaders::GRID_CAST,
    ] {
        let opcodes = common::spirv::Module::parse(kernel.spirv).opcodes;
        if opcodes.contains(&OP_DOT) {
            faults.push(format!("{} uses dot", kernel.name));
        }
        if kernel.name == "grid/references" && opcodes.contains(&OP_FDIV) {
            faults.push(format!("{} divides floats", kernel.name));
        }
    }
    assert!(faults.is_empty(), "{}", faults.join(", "));
}

#[test]
fn near_plane_huge_triangles_and_views_without_triangles() {
    let ctx = context();
    let params = GridParams::default();
    // A ground grid running under and behind the eye, with a soup above it: many triangles
    // cross the near plane and the plane through the eye.
    let mut scene = random_mesh(&mut Rng::new(53), 2000, 4.0, 0.3);
    let base = scene.positions.len() as u32;
    for i in 0..=20 {
        for j in 0..=20 {
            scene
                .positions
                .push([i as f32 - 10.0, -2.0, j as f32 - 10.0]);
        }
    }
    for i in 0..20 {
        for j in 0..20 {
            let v = base + i * 21 + j;
            scene.triangles.push([v, v + 1, v + 21]);
            scene.triangles.push([v + 1, v + 22, v + 21]);
        }
    }
    let view = view_from([0.0, -1.5, 0.0], [1.0, -1.6, 3.0], 48, 40);
    check(&ctx, &scene, &view, params, "eye inside the scene");
    // A huge wall covering the whole screen behind the soup, and one huge triangle through it.
    let mut huge = random_mesh(&mut Rng::new(54), 1000, 1.0, 0.05);
    let base = huge.positions.len() as u32;
    huge.positions
        .extend([[-1e3, -1e3, -5.0], [1e3, -1e3, -5.0], [0.0, 1e3, -5.0]]);
    huge.positions
        .extend([[-1e3, -1e3, 3.0], [1e3, -1e3, -3.0], [0.0, 1e3, 0.0]]);
    huge.triangles
        .extend([[base, base + 1, base + 2], [base + 3, base + 4, base + 5]]);
    let view = view_from([0.0, 0.0, 4.0], [0.0, 0.0, 0.0], 40, 24);
    let run = check(&ctx, &huge, &view, params, "huge triangles");
    let tiles = run.grid.tile_count() as u64;
    assert!(
        run.grid.triangle_ids.len() as u64 >= 2 * tiles,
        "both huge triangles in every tile"
    );
    // Looking away: nothing in view, no references, every ray misses.
    let mesh = random_mesh(&mut Rng::new(55), 500, 1.0, 0.1);
    let away = view_from([0.0, 0.0, 5.0], [0.0, 0.0, 10.0], 32, 32);
    let run = check(&ctx, &mesh, &away, params, "mesh behind the eye");
    assert!(run.grid.triangle_ids.is_empty() && run.hits.iter().all(|h| h.triangle == MISS));
    let aside = view_from([0.0, 0.0, 5.0], [20.0, 0.0, 5.0], 32, 32);
    let run = check(&ctx, &mesh, &aside, params, "mesh beside the view");
    assert!(run.grid.triangle_ids.is_empty());
    // No triangles at all; and degenerate and non-finite triangles among real ones.
    let empty = Mesh {
        positions: vec![[0.0; 3]],
        triangles: Vec::new(),
        ..Mesh::default()
    };
    let run = cast(&ctx, &empty, &away, params);
    assert!(run.grid.triangle_ids.is_empty() && run.hits.iter().all(|h| h.triangle == MISS));
    let mut broken = random_mesh(&mut Rng::new(56), 400, 1.0, 0.2);
    broken.triangles[0] = [0, 0, 1];
    broken.positions[broken.triangles[1][0] as usize] = [f32::NAN, 0.0, 0.0];
    let view = orbit_view(&random_mesh(&mut Rng::new(56), 400, 1.0, 0.2), 40, 40);
    let run = cast(&ctx, &broken, &view, params);
    cpu::check(
        &broken.positions,
        &broken.triangles,
        &view,
        &params,
        &run.grid,
    )
    .unwrap();
    // The non-finite triangle is culled; the degenerate one is kept, like any other in view
    // (see `degenerate_triangles_in_view_are_referenced`).
    assert!(!run.grid.triangle_ids.contains(&1));
}

/// Degenerate triangles in view (two or three corners on one point, or on one line) are
/// projected by their corners like any other: the GPU build references them and so does the
/// reference. A scanned mesh with a few once failed the check ("referenced but out of view")
/// on a GPU whose cross product of the grid's old zero-normal cull was fused: `cross(d, d)`
/// of a triangle whose last two corners are equal came out as a product's rounding error
/// instead of 0, so the GPU kept what the reference culled. A grid referencing them as that
/// GPU did (made by the reference with each degenerate triangle's last corner nudged by one
/// ulp) checks too.
#[test]
fn degenerate_triangles_in_view_are_referenced() {
    let ctx = context();
    let params = GridParams::default();
    let mut rng = Rng::new(57);
    let mut mesh = random_mesh(&mut rng, 200, 1.0, 0.2);
    let proper = mesh.triangle_count();
    for i in 0..40 {
        let p: [f32; 3] = std::array::from_fn(|_| rng.f32_in(-1.0, 1.0));
        let q: [f32; 3] = std::array::from_fn(|a| p[a] + rng.f32_in(-0.3, 0.3));
        let mid: [f32; 3] = std::array::from_fn(|a| p[a] + 0.5 * (q[a] - p[a]));
        let corners = match i % 5 {
            0 => [q, p, p],
            1 => [p, p, q],
            2 => [p, q, p],
            3 => [p, p, p],
            _ => [p, mid, q],
        };
        let first = mesh.positions.len() as u32;
        mesh.positions.extend(corners);
        mesh.triangles.push([first, first + 1, first + 2]);
    }
    let view = orbit_view(&mesh, 64, 48);
    let run = check(&ctx, &mesh, &view, params, "degenerate triangles");
    let referenced = |grid: &CpuGrid| {
        grid.triangle_ids
            .iter()
            .filter(|&&t| t as usize >= proper)
            .count()
    };
    assert!(
        referenced(&run.grid) > 0,
        "no degenerate triangle referenced"
    );
    let reference = cpu::build(&mesh.positions, &mesh.triangles, &view, &params);
    assert!(referenced(&reference) > 0);
    let mut nudged = mesh.clone();
    for t in &mesh.triangles[proper..] {
        let x = &mut nudged.positions[t[2] as usize][0];
        *x = x.next_up();
    }
    let fused = cpu::build(&nudged.positions, &nudged.triangles, &view, &params);
    cpu::check(&mesh.positions, &mesh.triangles, &view, &params, &fused)
        .unwrap_or_else(|e| panic!("a grid as a fused cross product made it: {e}"));
}

#[test]
fn references_grow_when_a_frame_needs_more() {
    let ctx = context();
    let mesh = random_mesh(&mut Rng::new(57), 300, 1.0, 1.5);
    let params = GridParams {
        references_per_triangle: 0.5,
        ..GridParams::default()
    };
    let run = check(
        &ctx,
        &mesh,
        &orbit_view(&mesh, 64, 64),
        params,
        "cramped references",
    );
    assert!(run.grown && run.grid.triangle_ids.len() > 150);
}

#[test]
fn bad_parameters_are_named() {
    let ctx = context();
    for params in [
        GridParams {
            tile_size: 0,
            ..GridParams::default()
        },
        GridParams {
            tile_size: 3,
            ..GridParams::default()
        },
        GridParams {
            tile_size: 64,
            ..GridParams::default()
        },
        GridParams {
            slabs: 0,
            ..GridParams::default()
        },
        GridParams {
            slabs: 257,
            ..GridParams::default()
        },
        GridParams {
            near: 0.0,
            ..GridParams::default()
        },
        GridParams {
            near: f32::NAN,
            ..GridParams::default()
        },
    ] {
        let made = GridStructure::new(&ctx, params, LbvhParams::default(), 10, 1);
        assert!(made.is_err(), "{params:?} accepted");
    }
    let mut grid =
        GridStructure::new(&ctx, GridParams::default(), LbvhParams::default(), 10, 1).unwrap();
    let mesh = random_mesh(&mut Rng::new(58), 10, 1.0, 0.2);
    let device = DeviceMesh::new(&ctx, &mesh);
    let input = device.input();
    // No view: a clear error, not a GPU fault.
    let err = ctx
        .submit_and_wait(|rec| grid.record_build(rec, &input, 0))
        .unwrap_err();
    assert!(err.to_string().contains("view"), "{err}");
    let mut flat = orbit_view(&mesh, 8, 8);
    flat.right = [0.0; 3];
    assert!(grid.set_view(&ctx, &flat).is_err());
    assert!(
        grid.set_view(
            &ctx,
            &PinholeView {
                width: 0,
                ..orbit_view(&mesh, 8, 8)
            }
        )
        .is_err()
    );
    // Casting rays of another view.
    grid.set_view(&ctx, &orbit_view(&mesh, 8, 8)).unwrap();
    let other = orbit_view(&mesh, 16, 8);
    let rays = ctx
        .create_buffer("rays", 128 * 32, MemoryKind::Device)
        .unwrap();
    let err = ctx
        .submit_and_wait(|rec| {
            grid.record_build(rec, &input, 0)?;
            let batch = CameraBatch {
                view: other,
                rays: Slice::whole(&rays),
                hits: Slice::whole(&rays),
                work: None,
                cutouts: None,
            };
            grid.traversable(&input)
                .camera_caster()
                .unwrap()
                .record_cast(rec, &batch)
        })
        .unwrap_err();
    assert!(err.to_string().contains("built for"), "{err}");
    assert_valid(&ctx);
    assert!(grid.tree_bytes() > 0);
}

#[test]
fn default_scene_size_with_folded_grids() {
    // The default scene's size (254,114 triangles) at 320x240 with every dispatch grid folded
    // under a limit of 64 workgroups per dimension.
    let ctx = folding_context();
    let mesh = random_mesh(&mut Rng::new(59), 254_114, 10.0, 0.3);
    let view = orbit_view(&mesh, 320, 240);
    let run = cast(&ctx, &mesh, &view, GridParams::default());
    let stats = cpu::check(
        &mesh.positions,
        &mesh.triangles,
        &view,
        &GridParams::default(),
        &run.grid,
    )
    .unwrap();
    assert!(stats.triangles_in_view > 50_000, "{stats:?}");
    for (i, (grid, lbvh)) in run.hits.iter().zip(&run.lbvh_hits).enumerate() {
        assert!(
            same_hit(grid, lbvh),
            "pixel {i}: grid {grid:?}, LBVH {lbvh:?}"
        );
    }
    assert!(run.hits.iter().filter(|h| h.triangle != MISS).count() > run.hits.len() / 4);
}
