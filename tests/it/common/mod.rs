//! Shared test helpers: a validated context on the default device (lavapipe in CI), seeded
//! random input, and the sizes every primitive is checked at.
#![allow(dead_code)]

pub mod files;
pub mod spirv;

use canopy::accel::kdtree::build::KdBuildParams;
use canopy::vk::{Context, ContextOptions, Validation};

/// A context with the Khronos validation layer required (set `CANOPY_VALIDATION=off` to run
/// without it where the layer is not installed), for this test alone until it ends.
///
/// The tests share one process, so contexts are pooled: a test takes one a finished test gave
/// back (with the pipelines it compiled) or makes one. A validation error is still the test's
/// own: the log is empty when it gets the context, and the test fails when it gives the
/// context back with errors it did not take (see [`TestContext`]).
pub fn context() -> TestContext {
    context_with(None)
}

/// The per-dimension workgroup limit the folding tests pretend: small enough that their
/// modest sizes need 2D and 3D grids.
pub const FOLDING_LIMIT: u32 = 64;

/// As [`context`], pretending the device allows at most [`FOLDING_LIMIT`] workgroups per
/// dispatch dimension, so that every dispatch above it is folded into 2D or 3D.
pub fn folding_context() -> TestContext {
    let ctx = context_with(Some(FOLDING_LIMIT));
    assert_eq!(ctx.caps().max_workgroup_count, FOLDING_LIMIT);
    ctx
}

/// Contexts given back by finished tests, with the workgroup limit each pretends.
static POOL: std::sync::Mutex<Vec<(Option<u32>, Context)>> = std::sync::Mutex::new(Vec::new());

fn context_with(max_workgroup_count: Option<u32>) -> TestContext {
    let _ = env_logger::builder().is_test(true).try_init();
    let pooled = {
        let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
        let at = pool.iter().position(|(key, _)| *key == max_workgroup_count);
        at.map(|at| pool.swap_remove(at).1)
    };
    let ctx = match pooled {
        Some(ctx) => {
            if let Err(e) = ctx.check_validation() {
                panic!("a pooled context had validation errors no test took: {e}");
            }
            ctx
        }
        None => new_context(max_workgroup_count),
    };
    TestContext {
        fence_timeout: ctx.fence_timeout(),
        ctx: Some(ctx),
        max_workgroup_count,
    }
}

/// A context of its own, never pooled (for a test that leaves it in a state no other test
/// should inherit, or that needs two devices).
pub fn new_context(max_workgroup_count: Option<u32>) -> Context {
    let validation = match std::env::var("CANOPY_VALIDATION").as_deref() {
        Ok("off") => Validation::Off,
        _ => Validation::Required,
    };
    Context::new(&ContextOptions {
        device: None,
        validation,
        max_workgroup_count,
    })
    .expect("creating a Vulkan context (run tools/setup.sh)")
}

/// One test's context (it dereferences to [`Context`]). Dropped at the end of the test, it
/// fails the test if validation reported errors the test did not take (through
/// [`assert_valid`] or `check_validation`), and goes back to the pool, unless the test
/// panicked, a wait on it timed out or its fence timeout was changed: such a context is
/// destroyed.
pub struct TestContext {
    ctx: Option<Context>,
    max_workgroup_count: Option<u32>,
    fence_timeout: Option<std::time::Duration>,
}

impl std::ops::Deref for TestContext {
    type Target = Context;
    fn deref(&self) -> &Context {
        self.ctx.as_ref().unwrap()
    }
}

impl Drop for TestContext {
    fn drop(&mut self) {
        let ctx = self.ctx.take().unwrap();
        let errors = ctx.check_validation();
        if std::thread::panicking() {
            return;
        }
        if let Err(e) = errors {
            panic!("{e}");
        }
        if !ctx.timed_out() && ctx.fence_timeout() == self.fence_timeout {
            let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
            pool.push((self.max_workgroup_count, ctx));
        }
    }
}

/// Fails the test when validation reported errors.
pub fn assert_valid(ctx: &Context) {
    if let Err(e) = ctx.check_validation() {
        panic!("{e}");
    }
}

#[allow(unused_imports)] // not every test crate draws random input
pub use canopy::rng::Rng;

/// The sizes each primitive is checked at: 1, 2, subgroup±1, workgroup±1, `tile`±1, 10^5, 10^6.
pub fn sizes(ctx: &Context, tile: u32) -> Vec<u32> {
    let sg = ctx.caps().subgroup_size;
    let wg = canopy::prims::WORKGROUP_SIZE;
    let mut v = vec![
        1,
        2,
        sg - 1,
        sg,
        sg + 1,
        wg - 1,
        wg,
        wg + 1,
        tile - 1,
        tile,
        tile + 1,
        100_000,
        1_000_000,
    ];
    v.sort();
    v.dedup();
    v
}

/// `n` as a count: read by the GPU from `buffer` (which holds `n`) when `indirect`, else
/// passed from the host. Direct and indirect runs of a primitive must agree.
pub fn count_of(buffer: &canopy::vk::Buffer, n: u32, indirect: bool) -> canopy::vk::Count<'_> {
    if indirect {
        canopy::vk::Count::Device {
            buffer,
            offset: 0,
            max: n,
        }
    } else {
        canopy::vk::Count::Host(n)
    }
}

/// `n` random triangles: centres in [-extent, extent]³, vertices within `size` of them.
pub fn random_mesh(rng: &mut Rng, n: usize, extent: f32, size: f32) -> canopy::scene::Mesh {
    let mut positions = Vec::with_capacity(3 * n);
    for _ in 0..n {
        let c: [f32; 3] = std::array::from_fn(|_| rng.f32_in(-extent, extent));
        for _ in 0..3 {
            positions.push(std::array::from_fn(|a| c[a] + rng.f32_in(-size, size)));
        }
    }
    canopy::scene::Mesh {
        triangles: (0..n as u32)
            .map(|t| [3 * t, 3 * t + 1, 3 * t + 2])
            .collect(),
        positions,
        normals: Vec::new(),
    }
}

/// Random rays: from outside or inside the mesh's box towards random points in it or on a
/// random triangle, and some in random directions, with finite and infinite tmax.
pub fn random_rays(
    rng: &mut Rng,
    mesh: &canopy::scene::Mesh,
    count: usize,
) -> Vec<canopy::geom::ray::Ray> {
    let (lo, hi) = mesh.bounds().unwrap();
    let point = |rng: &mut Rng, grow: f32| -> [f32; 3] {
        std::array::from_fn(|a| {
            let pad = (hi[a] - lo[a]) * grow + 1e-3;
            rng.f32_in(lo[a] - pad, hi[a] + pad)
        })
    };
    (0..count)
        .map(|i| {
            let origin = point(rng, if i % 3 == 0 { 0.0 } else { 0.5 });
            let direction: [f32; 3] = if i % 5 == 4 {
                std::array::from_fn(|_| rng.f32_in(-1.0, 1.0))
            } else if i % 2 == 0 {
                let t = mesh.triangles[rng.below(mesh.triangles.len() as u32) as usize];
                let (u, v) = (rng.f32_in(0.0, 0.5), rng.f32_in(0.0, 0.5));
                let [a, b, c] = t.map(|i| mesh.positions[i as usize]);
                std::array::from_fn(|k| (1.0 - u - v) * a[k] + u * b[k] + v * c[k] - origin[k])
            } else {
                let target = point(rng, 0.0);
                std::array::from_fn(|a| target[a] - origin[a])
            };
            let tmax = if i % 7 == 6 { 0.5 } else { f32::INFINITY };
            canopy::geom::ray::Ray {
                origin,
                tmin: 0.0,
                direction,
                tmax,
            }
        })
        .collect()
}

/// Traces `rays` with `query` against `structure`; one hit per ray.
pub fn trace(
    ctx: &Context,
    structure: &dyn canopy::accel::Traversable,
    rays: &[canopy::geom::ray::Ray],
    query: canopy::geom::ray::Query,
) -> Vec<canopy::geom::ray::Hit> {
    let tracer = canopy::trace::Tracer::new(ctx).unwrap();
    let ray_buffer = ctx.create_buffer_with("rays", rays).unwrap();
    let bytes = (rays.len() * std::mem::size_of::<canopy::geom::ray::Hit>()) as u64;
    let hits = ctx
        .create_buffer("hits", bytes, canopy::vk::MemoryKind::Device)
        .unwrap();
    ctx.submit_and_wait(|rec| {
        tracer.record(
            rec,
            structure,
            query,
            canopy::vk::Slice::whole(&ray_buffer),
            canopy::vk::Slice::whole(&hits),
            canopy::vk::Count::Host(rays.len() as u32),
        )
    })
    .unwrap();
    assert_valid(ctx);
    ctx.download(&hits, 0, rays.len()).unwrap()
}

/// Whether two distances along `ray` to a triangle it meets at `incidence` (the cosine of the
/// angle between the ray and the triangle's plane's normal) name the same point up to float
/// rounding: within 1e-5 relative to the distance travelled, plus 4e-7 / incidence for a ray
/// nearly in the plane (the distance's conditioning: on an H100, a ray at incidence 2e-3
/// ended 1.6e-5 relative from the CPU's), or 1e-6 of the mesh's extent.
fn same_distance(
    ray: &canopy::geom::ray::Ray,
    (a, b): (f32, f32),
    incidence: f64,
    extent: f32,
) -> bool {
    let length = ray.direction.iter().map(|d| d * d).sum::<f32>().sqrt() as f64;
    let relative = 1e-5 + 4e-7 / incidence.max(1e-12);
    ((a - b).abs() as f64) * length <= relative * (a.abs() as f64 * length) + 1e-6 * extent as f64
}

/// The cosine of the angle between `ray` and the normal of `triangle`'s plane, in double
/// precision (0 for a degenerate triangle).
fn incidence(mesh: &canopy::scene::Mesh, ray: &canopy::geom::ray::Ray, triangle: u32) -> f64 {
    let v = |i: u32| mesh.positions[i as usize].map(f64::from);
    let [a, b, c] = mesh.triangles[triangle as usize].map(v);
    let d = ray.direction.map(f64::from);
    let (e1, e2): ([f64; 3], [f64; 3]) = (
        std::array::from_fn(|k| b[k] - a[k]),
        std::array::from_fn(|k| c[k] - a[k]),
    );
    let n = [
        e1[1] * e2[2] - e1[2] * e2[1],
        e1[2] * e2[0] - e1[0] * e2[2],
        e1[0] * e2[1] - e1[1] * e2[0],
    ];
    let norm = |x: [f64; 3]| x.iter().map(|y| y * y).sum::<f64>().sqrt();
    let scale = norm(n) * norm(d);
    if scale == 0.0 {
        return 0.0;
    }
    (0..3).map(|k| n[k] * d[k]).sum::<f64>().abs() / scale
}

/// Whether `ray` meets `triangle` where single-precision tests on different devices may decide
/// differently: in double precision, the ray's point in the triangle's plane lies within 4e-6
/// of the coordinates' magnitude of the triangle's boundary, or the ray all but lies in the
/// triangle's plane (the cosine of their angle below 1e-3: seen from the ray the triangle is a
/// sliver, and both the inside test and `t` are ill-conditioned; on an H100 a ray at cosine
/// 3.2e-4 to a 0.05-wide triangle put its hit 4e-4 from the CPU's). Not for MISS.
fn grazes(mesh: &canopy::scene::Mesh, ray: &canopy::geom::ray::Ray, triangle: u32) -> bool {
    if triangle == canopy::geom::ray::MISS {
        return false;
    }
    let v = |i: u32| mesh.positions[i as usize].map(f64::from);
    let [a, b, c] = mesh.triangles[triangle as usize].map(v);
    let o = ray.origin.map(f64::from);
    let d = ray.direction.map(f64::from);
    let sub = |x: [f64; 3], y: [f64; 3]| -> [f64; 3] { std::array::from_fn(|k| x[k] - y[k]) };
    let cross = |x: [f64; 3], y: [f64; 3]| -> [f64; 3] {
        [
            x[1] * y[2] - x[2] * y[1],
            x[2] * y[0] - x[0] * y[2],
            x[0] * y[1] - x[1] * y[0],
        ]
    };
    let dot = |x: [f64; 3], y: [f64; 3]| (0..3).map(|k| x[k] * y[k]).sum::<f64>();
    let normal = cross(sub(b, a), sub(c, a));
    if incidence(mesh, ray, triangle) < 1e-3 {
        return true;
    }
    let along = dot(normal, d);
    let t = dot(normal, sub(a, o)) / along;
    let p: [f64; 3] = std::array::from_fn(|k| o[k] + t * d[k]);
    let scale = p.iter().chain(&o).fold(0.0f64, |m, x| m.max(x.abs())) + 1e-30;
    // Distance from p to each edge line, signed inside-positive.
    let inside = |x: [f64; 3], y: [f64; 3]| {
        let edge = sub(y, x);
        dot(cross(edge, sub(p, x)), normal) / (dot(normal, normal).sqrt() * dot(edge, edge).sqrt())
    };
    let margin = inside(a, b).min(inside(b, c)).min(inside(c, a));
    margin.abs() <= 4e-6 * scale
}

/// GPU closest hits equal brute force (the same triangle, or on ties the same distance) and
/// GPU any-hit queries agree on occlusion; at least a quarter of the rays must hit.
pub fn assert_hits_match_brute_force(
    mesh: &canopy::scene::Mesh,
    rays: &[canopy::geom::ray::Ray],
    closest: &[canopy::geom::ray::Hit],
    any: &[canopy::geom::ray::Hit],
    label: &str,
) {
    use canopy::geom::ray::MISS;
    use canopy::geom::ray::{any_hit_brute_force, closest_hit_brute_force};
    let (lo, hi) = mesh.bounds().unwrap();
    let extent = (0..3).map(|a| hi[a] - lo[a]).fold(0.0, f32::max);
    let mut hit_count = 0;
    for (i, ray) in rays.iter().enumerate() {
        let expected = closest_hit_brute_force(&mesh.positions, &mesh.triangles, ray);
        let got = closest[i];
        hit_count += (expected.triangle != MISS) as usize;
        let same = got.triangle == expected.triangle
            || (got.triangle != MISS
                && expected.triangle != MISS
                && same_distance(
                    ray,
                    (got.t, expected.t),
                    incidence(mesh, ray, expected.triangle),
                    extent,
                ))
            || grazes(mesh, ray, got.triangle)
            || grazes(mesh, ray, expected.triangle);
        assert!(
            same,
            "{label}: ray {i} {ray:?}: GPU {got:?}, brute force {expected:?}"
        );
        if got.triangle == expected.triangle
            && got.triangle != MISS
            && !grazes(mesh, ray, got.triangle)
        {
            // The same triangle: the same point, up to the conditioning of a grazing ray, for
            // which the GPU's division in the shear (SPIR-V allows 2.5 ulp) moves t and the
            // weights by more than rounding (3e-5 relative seen on an H200).
            let close = (got.t - expected.t).abs() <= 1e-3 * expected.t.abs();
            assert!(close, "{label}: ray {i} t: GPU {got:?}, CPU {expected:?}");
            // The weights name the same point on the triangle: compared in world space, as a
            // needle-shaped triangle turns a tiny error across it into a large one in a weight,
            // within 1e-3 of the triangle's size or 2e-5 of the coordinates' magnitude (the
            // scale of single-precision rounding: a ray from 200 units away onto a triangle
            // 0.02 across moved its hit point by 2.5e-4 on an H200).
            let [a, b, c] =
                mesh.triangles[got.triangle as usize].map(|i| mesh.positions[i as usize]);
            let point = |h: &canopy::geom::ray::Hit| -> [f32; 3] {
                std::array::from_fn(|k| (1.0 - h.u - h.v) * a[k] + h.u * b[k] + h.v * c[k])
            };
            let (p, q) = (point(&got), point(&expected));
            let edge = [(a, b), (b, c), (c, a)]
                .iter()
                .map(|(x, y)| (0..3).map(|k| (x[k] - y[k]).abs()).fold(0.0, f32::max))
                .fold(0.0, f32::max);
            let apart = (0..3).map(|k| (p[k] - q[k]).abs()).fold(0.0, f32::max);
            let magnitude = p
                .iter()
                .chain(&ray.origin)
                .fold(0.0, |m: f32, x| m.max(x.abs()));
            assert!(
                apart <= 1e-3 * edge + 2e-5 * magnitude,
                "{label}: ray {i} hit points {p:?} vs {q:?}: GPU {got:?}, CPU {expected:?}"
            );
        }
        let occluded = any_hit_brute_force(&mesh.positions, &mesh.triangles, ray);
        // Occlusion agrees, unless the deciding triangle is grazed.
        let any_hit = any[i].triangle != MISS;
        assert!(
            any_hit == occluded
                || grazes(mesh, ray, any[i].triangle)
                || grazes(mesh, ray, expected.triangle),
            "{label}: ray {i} any-hit: GPU {:?}, brute force occluded: {occluded}",
            any[i]
        );
    }
    assert!(
        hit_count * 4 > rays.len(),
        "{label}: too few rays hit ({hit_count})"
    );
}

/// `count` rays lying in the plane z = 0, from a circle of radius 5 towards its centre (in a
/// flat scene they graze every triangle's plane and every box's flat face).
pub fn rays_in_plane_z0(count: usize) -> Vec<canopy::geom::ray::Ray> {
    (0..count)
        .map(|i| {
            let a = i as f32 * 0.031;
            canopy::geom::ray::Ray {
                origin: [-5.0 * a.cos(), -5.0 * a.sin(), 0.0],
                tmin: 0.0,
                direction: [a.cos(), a.sin(), 0.0],
                tmax: f32::INFINITY,
            }
        })
        .collect()
}

/// 27 unit cubes on a 3x3x3 grid of spacing 2, and rays along +x lying in their faces and
/// between them: every box and split plane is met edge-on.
pub fn cube_grid() -> (canopy::scene::Mesh, Vec<canopy::geom::ray::Ray>) {
    let mut cubes = canopy::scene::Mesh::default();
    for i in 0..27 {
        let corner = [
            (i % 3) as f32 * 2.0,
            (i / 3 % 3) as f32 * 2.0,
            (i / 9) as f32 * 2.0,
        ];
        cubes.append(&canopy::scene::shapes::cube(corner, 1.0));
    }
    let rays = (0..300)
        .map(|i| {
            let (y, z) = ((i % 6) as f32, (i / 6 % 6) as f32 + 0.5 * (i % 2) as f32);
            canopy::geom::ray::Ray {
                origin: [-1.0, y, z],
                tmin: 0.0,
                direction: [1.0, 0.0, 0.0],
                tmax: f32::INFINITY,
            }
        })
        .collect();
    (cubes, rays)
}

/// A file of the test data in the repository (`tests/data`; its README names each file's
/// source and licence).
pub fn test_data(relative: &str) -> std::path::PathBuf {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(relative);
    assert!(
        path.exists(),
        "{} is missing from tests/data",
        path.display()
    );
    path
}

/// A mesh on the device, as builders and kd-tree traversal read it (an empty mesh gets
/// one-element buffers).
pub struct DeviceMesh {
    pub positions: canopy::vk::Buffer,
    pub triangles: canopy::vk::Buffer,
    pub count: u32,
}

impl DeviceMesh {
    pub fn new(ctx: &canopy::vk::Context, mesh: &canopy::scene::Mesh) -> Self {
        // An empty triangle list still needs a buffer.
        let triangles: &[[u32; 3]] = if mesh.triangles.is_empty() {
            &[[0; 3]]
        } else {
            &mesh.triangles
        };
        let positions: &[[f32; 3]] = if mesh.positions.is_empty() {
            &[[0.0; 3]]
        } else {
            &mesh.positions
        };
        Self {
            positions: ctx.create_buffer_with("positions", positions).unwrap(),
            triangles: ctx.create_buffer_with("triangles", triangles).unwrap(),
            count: mesh.triangle_count() as u32,
        }
    }

    pub fn input(&self) -> canopy::geom::TriangleInput<'_> {
        canopy::geom::TriangleInput::whole(&self.positions, &self.triangles, self.count)
    }
}

/// Kd-tree builder lists far too small for any real tree: the first build overflows and the
/// lists grow.
pub fn cramped_kd_params() -> KdBuildParams {
    KdBuildParams {
        record_factor: 0.05,
        node_factor: 0.05,
        leaf_factor: 0.05,
        small_record_factor: 0.05,
        small_root_factor: 0.05,
        ..KdBuildParams::default()
    }
}

/// `count` triangles nested inside each other, each 0.3% larger than the last: clustering
/// merges them one at a time into a chain far taller than binary traversal's stack.
pub fn nested_triangles(count: u32) -> canopy::scene::Mesh {
    let mut mesh = canopy::scene::Mesh {
        positions: Vec::new(),
        triangles: Vec::new(),
        normals: Vec::new(),
    };
    let mut size = 1e-3f32;
    for i in 0..count {
        mesh.positions.extend([
            [-size, -size, 0.0],
            [size, -size, 0.0],
            [0.0, size, 0.1 * size],
        ]);
        mesh.triangles.push([3 * i, 3 * i + 1, 3 * i + 2]);
        size *= 1.003;
    }
    mesh
}

/// An LBVH structure built over `mesh` with `params`, waited for.
pub fn lbvh_over(
    ctx: &canopy::vk::Context,
    params: canopy::accel::bvh::lbvh::LbvhParams,
    mesh: &DeviceMesh,
) -> canopy::accel::bvh::lbvh::LbvhStructure {
    use canopy::accel::RayStructure;
    let mut structure =
        canopy::accel::bvh::lbvh::LbvhStructure::new(ctx, params, mesh.count.max(1)).unwrap();
    canopy::accel::submit_until_complete(ctx, &mut structure, |rec, s| {
        s.record_build(rec, &mesh.input(), 0)
    })
    .unwrap();
    structure
}
