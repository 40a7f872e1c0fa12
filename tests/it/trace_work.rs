//! Work counters of ray casting (`Tracer::record_counted`, `COUNT_WORK` in
//! `glsl/bvh/trace.comp`, `glsl/bvh/wide_trace.comp`, `glsl/kdtree/trace.comp` and the BIH's):
//! the counting kernels return exactly the hits of the fast path; their per-ray counts (nodes
//! visited, primitives tested) keep invariants that hold on every ray (any-hit counts a prefix
//! of closest-hit but in the 8-wide tree, a hit needs a test, a ray missing the kd-tree's scene
//! box reads nothing) and equal those of the CPU traversals that walk the same trees the same
//! way (`accel::bvh::traverse::trace_bvh`, `accel::bvh::wide::cpu::trace_wide`,
//! `accel::kdtree::cpu::trace_kdtree`, ...) on all but a few random rays. For the GPU LBVH and
//! its 8-wide collapse, a kd-tree and a BIH, closest-hit and any-hit, at 0, 1, a few hundred
//! and a few thousand rays, with device and host ray counts, and on rays lying in cube faces.

use crate::common;

use canopy::accel::Traversable;
use canopy::accel::bih::cpu::{build_bih, trace_bih};
use canopy::accel::bih::trace::BihTreeGpu;
use canopy::accel::bih::{BihParams, BihTree};
use canopy::accel::bvh::Bvh;
use canopy::accel::bvh::cpu::Lbvh;
use canopy::accel::bvh::lbvh::{LbvhBuilder, LbvhParams};
use canopy::accel::bvh::traverse::trace_bvh;
use canopy::accel::bvh::wide::cpu::{WideTree, trace_wide};
use canopy::accel::bvh::wide::{Collapser, WideBvh};
use canopy::accel::kdtree::KdTreeGpu;
use canopy::accel::kdtree::cpu::{build_sah_kdtree, trace_kdtree};
use canopy::accel::kdtree::{KdParams, KdTree};
use canopy::geom::ray::BOX_T_SLACK;
use canopy::geom::ray::{Hit, LOCKSTEP_RAYS, Query, Ray, RayWork, TraversalWork};
use canopy::scene::Mesh;
use canopy::trace::Tracer;
use canopy::vk::Slice;
use canopy::vk::{Context, MemoryKind};
use common::{
    DeviceMesh, Rng, assert_valid, context, count_of, cube_grid, random_mesh, random_rays, trace,
};

/// The structures over one mesh, each on the device and on the host: the GPU LBVH and its
/// 8-wide collapse and the same trees read back, the CPU SAH kd-tree and the CPU binned-SAH
/// BIH and the same trees uploaded.
struct Structures {
    device: DeviceMesh,
    bvh: Bvh,
    lbvh: Lbvh,
    wide: WideBvh,
    wide_tree: WideTree,
    kd_tree: KdTree,
    kd_tree_gpu: KdTreeGpu,
    bih: BihTree,
    bih_gpu: BihTreeGpu,
}

impl Structures {
    fn new(ctx: &Context, mesh: &Mesh) -> Self {
        let device = DeviceMesh::new(ctx, mesh);
        let builder = LbvhBuilder::new(ctx, LbvhParams::default(), device.count).unwrap();
        let mut bvh = Bvh::new(ctx, device.count).unwrap();
        let collapser = Collapser::new(ctx, device.count).unwrap();
        let mut wide = WideBvh::new(ctx, device.count).unwrap();
        ctx.submit_and_wait(|rec| {
            builder.record(rec, &device.input(), &mut bvh)?;
            collapser.record(rec, &bvh, &mut wide)
        })
        .unwrap();
        let (nodes, leaf_primitives) = bvh.download(ctx).unwrap();
        let wide_tree = wide.download(ctx).unwrap();
        assert_valid(ctx);
        let kd_tree = build_sah_kdtree(&mesh.positions, &mesh.triangles, &KdParams::default());
        let kd_tree_gpu = KdTreeGpu::upload(ctx, &kd_tree).unwrap();
        let bih = build_bih(&mesh.positions, &mesh.triangles, &BihParams::default());
        let bih_gpu = BihTreeGpu::upload(ctx, &bih).unwrap();
        Self {
            device,
            bvh,
            lbvh: Lbvh {
                nodes,
                leaf_primitives,
            },
            wide,
            wide_tree,
            kd_tree,
            kd_tree_gpu,
            bih,
            bih_gpu,
        }
    }

    /// The LBVH, its wide tree, the kd-tree, the BIH: what the GPU traces and the CPU
    /// reference it must match.
    fn pairs(&self) -> [(Box<dyn Traversable + '_>, Reference<'_>); 4] {
        let input = self.device.input();
        let (kd, bih) = (self.kd_tree_gpu.over(&input), self.bih_gpu.over(&input));
        [
            (Box::new(&self.bvh), Reference::Bvh(&self.lbvh)),
            (Box::new(&self.wide), Reference::Wide(&self.wide_tree)),
            (Box::new(kd), Reference::KdTree(&self.kd_tree)),
            (Box::new(bih), Reference::Bih(&self.bih)),
        ]
    }
}

/// `query` for `rays` by the counting kernels: the hits and each ray's work. The ray count is
/// read from device memory when `indirect`.
fn trace_counted(
    ctx: &Context,
    tracer: &Tracer,
    structure: &dyn Traversable,
    rays: &[Ray],
    query: Query,
    indirect: bool,
) -> (Vec<Hit>, Vec<RayWork>) {
    // Buffers hold at least one element: an empty batch still needs addresses.
    let room = rays.len().max(1);
    let mut padded = rays.to_vec();
    padded.resize(room, Ray::default());
    let ray_buffer = ctx.create_buffer_with("rays", &padded).unwrap();
    let hit_bytes = (room * std::mem::size_of::<Hit>()) as u64;
    let hits = ctx
        .create_buffer("hits", hit_bytes, MemoryKind::Device)
        .unwrap();
    let work_bytes = (room * std::mem::size_of::<RayWork>()) as u64;
    let work = ctx
        .create_buffer("work", work_bytes, MemoryKind::Device)
        .unwrap();
    let n = rays.len() as u32;
    let count_buffer = ctx.create_buffer_with("ray count", &[n]).unwrap();
    ctx.submit_and_wait(|rec| {
        tracer.record_counted(
            rec,
            structure,
            query,
            Slice::whole(&ray_buffer),
            Slice::whole(&hits),
            Slice::whole(&work),
            count_of(&count_buffer, n, indirect),
        )
    })
    .unwrap();
    assert_valid(ctx);
    (
        ctx.download(&hits, 0, rays.len()).unwrap(),
        ctx.download(&work, 0, rays.len()).unwrap(),
    )
}

/// What one structure is checked against.
enum Reference<'a> {
    Bvh(&'a Lbvh),
    Wide(&'a WideTree),
    KdTree(&'a KdTree),
    Bih(&'a BihTree),
}

impl Reference<'_> {
    /// The CPU traversal's hit and work.
    fn trace(&self, mesh: &Mesh, ray: &Ray, query: Query) -> (Hit, RayWork) {
        let (p, t) = (&mesh.positions, &mesh.triangles);
        match self {
            Reference::Bvh(bvh) => trace_bvh(p, t, bvh, ray, query),
            Reference::Wide(tree) => trace_wide(p, t, tree, ray, query),
            Reference::KdTree(tree) => trace_kdtree(p, t, tree, ray, query),
            Reference::Bih(tree) => trace_bih(p, t, tree, ray, query),
        }
    }
}

/// Whether `ray` enters the box `(lo, hi)` within `[tmin, tmax]`: `Some(true)` or
/// `Some(false)`, or `None` when that is within rounding (a few times the slab test's slack).
fn enters_box(ray: &Ray, (lo, hi): ([f32; 3], [f32; 3])) -> Option<bool> {
    let (mut near, mut far) = (ray.tmin, ray.tmax);
    for k in 0..3 {
        let inv = 1.0 / ray.direction[k];
        let (a, b) = ((lo[k] - ray.origin[k]) * inv, (hi[k] - ray.origin[k]) * inv);
        if a.is_nan() || b.is_nan() {
            continue;
        }
        near = near.max(a.min(b));
        far = far.min(a.max(b));
    }
    let slack = 4.0 * BOX_T_SLACK * near.abs().max(far.abs());
    ((near - far).abs() > slack).then_some(near < far)
}

/// What [`check`] saw.
struct Seen {
    /// The closest-hit and any-hit summaries.
    work: [TraversalWork; 2],
    /// Rays that clearly miss the scene box, for a kd-tree.
    outside: usize,
}

/// Traces `rays` with both queries through the fast and the counting kernels, and checks:
/// hits equal between them; invariants that hold on every ray; per-ray counts equal those of
/// the CPU traversal of the same tree on all but `max_differing` rays, and no smaller on the
/// CPU on all but a few.
#[allow(clippy::too_many_arguments)]
fn check(
    ctx: &Context,
    tracer: &Tracer,
    mesh: &Mesh,
    structure: &dyn Traversable,
    reference: &Reference,
    rays: &[Ray],
    max_differing: usize,
    label: &str,
) -> Seen {
    let [closest, any] = [Query::Closest, Query::Any].map(|query| {
        let fast = trace(ctx, structure, rays, query);
        let (hits, work) = trace_counted(ctx, tracer, structure, rays, query, false);
        assert_eq!(hits, fast, "{label} {query:?}: counting changed the hits");
        (hits, work)
    });
    let (mut differ, mut fewer_on_cpu, mut outside) = (0, 0, 0);
    for (i, ray) in rays.iter().enumerate() {
        let [(hit, closest_work), (any_hit, any_work)] =
            [&closest, &any].map(|(h, w)| (h[i], w[i]));
        let what = format!("{label}: ray {i} {ray:?}: closest {closest_work:?}, any {any_work:?}");

        // Until its first hit an any-hit query walks exactly as a closest-hit one, then stops:
        // its counts are a prefix of the closest-hit ones, and the same where nothing is hit.
        // The 8-wide tree's any-hit queries walk in slot order instead of nearest first, so
        // only the latter holds there: a ray that hits nothing enters the same boxes either way.
        assert!(
            matches!(reference, Reference::Wide(_))
                || (any_work.nodes_visited <= closest_work.nodes_visited
                    && any_work.primitives_tested <= closest_work.primitives_tested),
            "{what}"
        );
        assert_eq!(hit.is_hit(), any_hit.is_hit(), "{what}");
        if !hit.is_hit() {
            assert_eq!(any_work, closest_work, "{what}");
        }
        for (h, w) in [(hit, closest_work), (any_hit, any_work)] {
            // A hit needs a triangle test, and a test needs a node.
            assert!(!h.is_hit() || w.primitives_tested >= 1, "{what}");
            assert!(w.primitives_tested == 0 || w.nodes_visited >= 1, "{what}");
        }
        match reference {
            Reference::Bvh(bvh) => {
                // The root is always visited; each node tests at most its two leaves.
                assert!(closest_work.nodes_visited >= 1, "{what}");
                assert!(
                    closest_work.nodes_visited as usize <= bvh.nodes.len()
                        && closest_work.primitives_tested <= 2 * closest_work.nodes_visited,
                    "{what}"
                );
            }
            Reference::Wide(tree) => {
                // The root is always read; each node tests at most its eight leaves.
                assert!(closest_work.nodes_visited >= 1, "{what}");
                assert!(
                    closest_work.nodes_visited as usize <= tree.nodes.len()
                        && closest_work.primitives_tested <= 8 * closest_work.nodes_visited,
                    "{what}"
                );
            }
            Reference::KdTree(_) | Reference::Bih(_) => {
                let (node_count, bounds) = match reference {
                    Reference::KdTree(tree) => (tree.nodes.len(), tree.bounds),
                    Reference::Bih(tree) => (tree.nodes.len(), tree.bounds),
                    Reference::Bvh(_) | Reference::Wide(_) => unreachable!(),
                };
                assert!(closest_work.nodes_visited as usize <= node_count, "{what}");
                // Nothing is read for a ray that misses the scene box, everything else visits
                // the root.
                match enters_box(ray, bounds) {
                    Some(false) => {
                        outside += 1;
                        assert_eq!(closest_work, RayWork::default(), "{what}");
                    }
                    Some(true) => assert!(closest_work.nodes_visited >= 1, "{what}"),
                    None => {}
                }
            }
        }
        // The CPU traversal of the same tree, in the same order.
        let mut same = true;
        for (query, gpu) in [(Query::Closest, closest_work), (Query::Any, any_work)] {
            let (_, cpu) = reference.trace(mesh, ray, query);
            if cpu != gpu {
                same = false;
                let on_cpu = cpu.nodes_visited + cpu.primitives_tested;
                fewer_on_cpu += (on_cpu < gpu.nodes_visited + gpu.primitives_tested) as usize;
            }
        }
        differ += !same as usize;
    }
    // The CPU traversals widen their box and plane decisions by BOX_T_SLACK (2^-16 relative)
    // and keep nodes starting at the closest hit's distance (for ties of smaller index), so as
    // never to miss a hit; the kernels widen a box's exit by 2 ulp only and drop those nodes.
    // A ray passing that close to a box face or a split plane, or meeting a box that starts
    // where its hit lies, does a little more work on the CPU (seen on lavapipe: 12 and 4 of
    // the 3000 random rays through the LBVH and the kd-tree, 1 to 7 nodes more each; most of
    // the rays lying in cube faces), never less.
    println!(
        "{label}: {differ} of {} rays counted differently on the CPU (at most {max_differing} \
         allowed), {outside} outside the scene box",
        rays.len()
    );
    assert!(
        differ <= max_differing,
        "{label}: {differ} of {} rays counted differently on the CPU",
        rays.len()
    );
    assert!(
        fewer_on_cpu * 200 <= rays.len(),
        "{label}: {fewer_on_cpu} rays counted less work on the CPU"
    );
    Seen {
        work: [closest.1, any.1].map(|w| TraversalWork::from_counts(&w)),
        outside,
    }
}

#[test]
fn counts_match_the_cpu_traversals_on_a_random_mesh() {
    let ctx = context();
    let tracer = Tracer::new(&ctx).unwrap();
    let mut rng = Rng::new(31);
    let mesh = random_mesh(&mut rng, 3000, 10.0, 0.5);
    let rays = random_rays(&mut rng, &mesh, 3000);
    // Rays counted differently on the CPU, near ties only: at most 2%.
    let max_differing = rays.len() / 50;

    let structures = Structures::new(&ctx, &mesh);
    let [lbvh, wide, kd, bih] = structures.pairs();
    let lbvh = check(
        &ctx,
        &tracer,
        &mesh,
        lbvh.0.as_ref(),
        &lbvh.1,
        &rays,
        max_differing,
        "LBVH",
    );
    let wide = check(
        &ctx,
        &tracer,
        &mesh,
        wide.0.as_ref(),
        &wide.1,
        &rays,
        max_differing,
        "8-wide BVH",
    );
    let kd = check(
        &ctx,
        &tracer,
        &mesh,
        kd.0.as_ref(),
        &kd.1,
        &rays,
        max_differing,
        "kd-tree",
    );
    let bih = check(
        &ctx,
        &tracer,
        &mesh,
        bih.0.as_ref(),
        &bih.1,
        &rays,
        max_differing,
        "BIH",
    );
    assert!(
        kd.outside > 0 && bih.outside > 0,
        "no ray misses the scene box"
    );

    let summaries = [
        ("LBVH", lbvh.work),
        ("8-wide BVH", wide.work),
        ("SAH kd-tree", kd.work),
        ("BIH", bih.work),
    ];
    for (label, [closest, any]) in summaries {
        println!("{label}, 3000 random triangles, closest hit: {closest:?}");
        println!("{label}, 3000 random triangles, any hit: {any:?}");
        assert_eq!((closest.rays, any.rays), (3000, 3000));
        assert!(any.mean_nodes <= closest.mean_nodes, "{label}");
        assert!(any.mean_primitives <= closest.mean_primitives, "{label}");
        // Far less than brute force, and more than nothing.
        assert!(closest.mean_primitives < 300.0, "{label}: {closest:?}");
        assert!(closest.mean_nodes >= 1.0, "{label}: {closest:?}");
    }
}

#[test]
fn counts_on_rays_along_box_faces_and_split_planes() {
    // Rays lying in cube faces meet every box and plane edge-on, and boxes and leaves start
    // exactly where the hits lie: the CPU traversals' widened decisions and kept ties make
    // most of them count more there, so the counts are not compared, only the hits and the
    // invariants checked.
    let ctx = context();
    let tracer = Tracer::new(&ctx).unwrap();
    let (mesh, rays) = cube_grid();
    let structures = Structures::new(&ctx, &mesh);
    for ((structure, reference), label) in structures.pairs().into_iter().zip([
        "cubes, LBVH",
        "cubes, 8-wide BVH",
        "cubes, kd-tree",
        "cubes, BIH",
    ]) {
        let seen = check(
            &ctx,
            &tracer,
            &mesh,
            structure.as_ref(),
            &reference,
            &rays,
            rays.len(),
            label,
        );
        assert!(seen.work[0].mean_primitives >= 1.0, "{label}");
    }
}

#[test]
fn empty_single_and_device_counted_batches() {
    let ctx = context();
    let tracer = Tracer::new(&ctx).unwrap();
    let mut rng = Rng::new(41);
    let mesh = random_mesh(&mut rng, 500, 2.0, 0.3);
    let structures = Structures::new(&ctx, &mesh);
    let rays = random_rays(&mut rng, &mesh, 300);
    for (structure, reference) in structures.pairs() {
        for query in [Query::Closest, Query::Any] {
            // No rays: nothing written, nothing read.
            let (hits, work) = trace_counted(&ctx, &tracer, structure.as_ref(), &[], query, true);
            assert!(hits.is_empty() && work.is_empty());
            // One ray aimed at a triangle's centre: hit, and counted as on the CPU.
            let [a, b, c] = mesh.triangles[7].map(|v| mesh.positions[v as usize]);
            let target: [f32; 3] = std::array::from_fn(|k| (a[k] + b[k] + c[k]) / 3.0);
            let ray = Ray {
                origin: [5.0, 4.0, 3.0],
                tmin: 0.0,
                direction: std::array::from_fn(|k| target[k] - [5.0, 4.0, 3.0][k]),
                tmax: f32::INFINITY,
            };
            let (hits, work) =
                trace_counted(&ctx, &tracer, structure.as_ref(), &[ray], query, false);
            assert!(hits[0].is_hit());
            assert_eq!(work[0], reference.trace(&mesh, &ray, query).1, "{query:?}");
            // A device count gives what a host count gives.
            let host = trace_counted(&ctx, &tracer, structure.as_ref(), &rays, query, false);
            let indirect = trace_counted(&ctx, &tracer, structure.as_ref(), &rays, query, true);
            assert_eq!(host, indirect, "{query:?}");
        }
    }
}

#[test]
fn work_summary() {
    assert_eq!(TraversalWork::from_counts(&[]), TraversalWork::default());
    let counts = [(3, 1), (5, 4), (1, 0), (7, 3)].map(|(n, p)| RayWork {
        nodes_visited: n,
        primitives_tested: p,
    });
    assert_eq!(
        TraversalWork::from_counts(&counts),
        TraversalWork {
            rays: 4,
            mean_nodes: 4.0,
            max_nodes: 7,
            mean_primitives: 2.0,
            max_primitives: 4,
            lockstep_nodes: 7.0,
            lockstep_primitives: 4.0,
        }
    );
    // Each subgroup of consecutive rays weighs its own longest walk by its lanes.
    let mut counts = vec![RayWork::default(); LOCKSTEP_RAYS + 2];
    counts[1].nodes_visited = 10;
    counts[LOCKSTEP_RAYS + 1].primitives_tested = 4;
    let work = TraversalWork::from_counts(&counts);
    let rays = (LOCKSTEP_RAYS + 2) as f64;
    assert_eq!(work.lockstep_nodes, 10.0 * LOCKSTEP_RAYS as f64 / rays);
    assert_eq!(work.lockstep_primitives, 4.0 * 2.0 / rays);
}
