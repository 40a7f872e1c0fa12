//! Point kd-trees (seed 000 §5.1-5.2): the CPU VVH builder's invariants on uniform, clustered,
//! duplicate-heavy, planar and thin clouds and a floor at zero, and on bad input; the GPU
//! builder's trees equal to the CPU's (its kernels never divide); and the GPU neighbour queries
//! (Alg. 6's histogram search and the nearest-first walk) against brute force, exactly: the
//! same indices and the same squared distances in the same order, for k from 1 to 64 and
//! beyond the point count, from starting radii far too small and far too large, range queries,
//! and query counts that fold the dispatch grid.

use crate::common;

use canopy::accel::pointkd::build::PointKdBuilder;
use canopy::accel::pointkd::cpu::{self, check, knn_brute_force, range_count_brute_force};
use canopy::accel::pointkd::knn::{
    Knn, KnnCounters, KnnFound, KnnOutput, KnnQueries, KnnSearch, MAX_K, PointKdTreeGpu, UNBOUNDED,
};
use canopy::accel::pointkd::radius::{RadiusEstimator, RadiusParams};
use canopy::accel::pointkd::{PointKdParams, PointKdTree};
use canopy::vk::{Context, Count, MemoryKind, Slice};
use common::{Rng, assert_valid, context, folding_context};

fn uniform(rng: &mut Rng, n: usize) -> Vec<[f32; 3]> {
    (0..n)
        .map(|_| {
            [
                rng.f32_in(0.0, 1.0),
                rng.f32_in(0.0, 1.0),
                rng.f32_in(0.0, 1.0),
            ]
        })
        .collect()
}

/// Points in a few tight clusters far apart.
fn clustered(rng: &mut Rng, n: usize) -> Vec<[f32; 3]> {
    let centres: Vec<[f32; 3]> = (0..5)
        .map(|_| {
            [
                rng.f32_in(0.0, 1.0) * 100.0,
                rng.f32_in(0.0, 1.0) * 100.0,
                rng.f32_in(0.0, 1.0) * 100.0,
            ]
        })
        .collect();
    (0..n)
        .map(|i| {
            let c = centres[i % centres.len()];
            [
                c[0] + rng.f32_in(0.0, 1.0) * 0.1,
                c[1] + rng.f32_in(0.0, 1.0) * 0.1,
                c[2] + rng.f32_in(0.0, 1.0) * 0.1,
            ]
        })
        .collect()
}

/// Each of a few points many times over.
fn duplicates(rng: &mut Rng, n: usize) -> Vec<[f32; 3]> {
    let distinct = uniform(rng, 7);
    (0..n).map(|i| distinct[i % 7]).collect()
}

/// Points on the plane z = 0.5.
fn planar(rng: &mut Rng, n: usize) -> Vec<[f32; 3]> {
    (0..n)
        .map(|_| [rng.f32_in(0.0, 1.0), rng.f32_in(0.0, 1.0), 0.5])
        .collect()
}

/// Points on the plane y = -0.6 as a renderer's hit points land on it: their heights
/// consecutive floats, the lower two where x < 0 and the upper two elsewhere, so that nodes
/// leave their cell a few ulps of empty space above or below.
fn thin(rng: &mut Rng, n: usize) -> Vec<[f32; 3]> {
    let heights = [-0.600_000_1, -0.6, -0.599_999_96];
    (0..n)
        .map(|_| {
            let x = rng.f32_in(-3.0, 3.0);
            let y = heights[rng.below(2) as usize + (x >= 0.0) as usize];
            [x, y, rng.f32_in(-3.0, 3.0)]
        })
        .collect()
}

/// Points on the floor z = 0 (where x < 0.5) beside points above it: nodes of the floor's
/// points leave their cell empty above, and the cut just above them lies next to zero, where
/// the next float is subnormal (a device that flushes subnormals compares with zero there).
fn floor(rng: &mut Rng, n: usize) -> Vec<[f32; 3]> {
    (0..n)
        .map(|_| {
            let x = rng.f32_in(0.0, 1.0);
            let z = if x < 0.5 { 0.0 } else { rng.f32_in(0.0, 1.0) };
            [x, rng.f32_in(0.0, 1.0), z]
        })
        .collect()
}

fn build(points: &[[f32; 3]], label: &str) -> PointKdTree {
    let tree =
        cpu::build(points, &PointKdParams::default()).unwrap_or_else(|e| panic!("{label}: {e}"));
    let stats = check(points, &tree).unwrap_or_else(|e| panic!("{label}: {e}"));
    assert!(stats.depth <= 60, "{label}: depth {}", stats.depth);
    tree
}

/// The GPU's answers to `queries`, searched by `search`: ids, squared distances and what each
/// found; `range`: a range query of that radius, or (negative) a k-nearest search bounded by
/// minus it.
fn gpu_knn(
    ctx: &Context,
    (tree, search): (&PointKdTreeGpu, KnnSearch),
    queries: &[[f32; 3]],
    k: u32,
    radius: f32,
    range: Option<f32>,
) -> (Vec<u32>, Vec<f32>, Vec<KnnFound>) {
    let n = queries.len();
    let points = ctx.create_buffer_with("queries", queries).unwrap();
    let count = ctx.create_buffer_with("query count", &[n as u32]).unwrap();
    let slots = (n * k as usize) as u64;
    let ids = ctx
        .create_buffer("ids", slots * 4, MemoryKind::Device)
        .unwrap();
    let distances = ctx
        .create_buffer("distances", slots * 4, MemoryKind::Device)
        .unwrap();
    let found = ctx
        .create_buffer("found", n as u64 * 8, MemoryKind::Device)
        .unwrap();
    let knn = Knn::new(ctx, 2).unwrap().with_search(search);
    let q = KnnQueries {
        points: Some(Slice::whole(&points)),
        count: Count::Device {
            buffer: &count,
            offset: 0,
            max: n as u32,
        },
        radii: None,
        radius,
    };
    let out = KnnOutput {
        ids: Slice::whole(&ids),
        distances2: Slice::whole(&distances),
        found: Slice::whole(&found),
        counters: None,
    };
    ctx.submit_and_wait(|rec| match range {
        None => knn.record(rec, tree, &q, k, &out),
        Some(r) if r < 0.0 => knn.record_bounded(rec, tree, &q, k, -r, &out),
        Some(r) => knn.record_range(rec, tree, &q, r, k, &out),
    })
    .unwrap();
    (
        ctx.download(&ids, 0, n * k as usize).unwrap(),
        ctx.download(&distances, 0, n * k as usize).unwrap(),
        ctx.download(&found, 0, n).unwrap(),
    )
}

/// Asserts that query `i`'s answers (`k` slots per query in `ids` and `d2`) begin with brute
/// force's `k` nearest to `q`, the same squared distances and indices in the same order;
/// returns those.
fn assert_nearest(
    points: &[[f32; 3]],
    (i, q): (usize, [f32; 3]),
    k: usize,
    (ids, d2): (&[u32], &[f32]),
    label: &str,
) -> Vec<(f32, u32)> {
    let expected = knn_brute_force(points, q, k);
    for (j, want) in expected.iter().enumerate() {
        let got = (d2[i * k + j], ids[i * k + j]);
        assert_eq!(got, *want, "{label}: query {i} neighbour {j}");
    }
    expected
}

/// The GPU's k nearest equal brute force's for every query, by either search.
fn assert_knn(
    ctx: &Context,
    points: &[[f32; 3]],
    queries: &[[f32; 3]],
    k: u32,
    radius: f32,
    label: &str,
) {
    let tree = PointKdTreeGpu::upload(ctx, &build(points, label), points).unwrap();
    for search in KnnSearch::ALL {
        let label = format!("{label}, {}", search.name());
        assert_knn_by(
            points,
            queries,
            k,
            &label,
            gpu_knn(ctx, (&tree, search), queries, k, radius, None),
        );
    }
}

/// Asserts the answers `(ids, d2, found)` to `queries` are brute force's k nearest.
fn assert_knn_by(
    points: &[[f32; 3]],
    queries: &[[f32; 3]],
    k: u32,
    label: &str,
    (ids, d2, found): (Vec<u32>, Vec<f32>, Vec<KnnFound>),
) {
    for (i, &q) in queries.iter().enumerate() {
        let expected = knn_brute_force(points, q, k as usize);
        let k = k as usize;
        for j in 0..k {
            let got = (d2[i * k + j], ids[i * k + j]);
            let want = expected
                .get(j)
                .copied()
                .unwrap_or((f32::INFINITY, u32::MAX));
            assert!(
                got.0.to_bits() == want.0.to_bits() && got.1 == want.1,
                "{label}, k {k}: query {i} neighbour {j}: GPU {got:?}, brute force {want:?}"
            );
        }
        assert!(
            found[i].within as usize >= expected.len(),
            "{label}: query {i} {:?}",
            found[i]
        );
        if let Some(last) = expected.last() {
            assert!(
                found[i].radius * found[i].radius >= last.0,
                "{label}: query {i}: radius {:?} short of {last:?}",
                found[i]
            );
        }
    }
}

#[test]
fn trees_keep_their_invariants_and_bad_input_is_named() {
    let mut rng = Rng::new(71);
    for n in [0, 1, 2, 3, 31, 33, 1000, 20_000] {
        for (name, points) in [
            ("uniform", uniform(&mut rng, n)),
            ("clustered", clustered(&mut rng, n)),
            ("duplicates", duplicates(&mut rng, n)),
            ("planar", planar(&mut rng, n)),
            ("thin", thin(&mut rng, n)),
            ("floor", floor(&mut rng, n)),
        ] {
            let tree = build(&points, &format!("{name} {n}"));
            assert_eq!(tree.point_ids.len(), n);
            // Leaves of distinct points stay small: no run of empty-space cuts to the depth
            // limit (a cut past a flat box that cuts nothing off).
            if name != "duplicates" {
                let stats = check(&points, &tree).unwrap();
                assert!(stats.largest_leaf <= 32, "{name} {n}: {stats:?}");
            }
        }
    }
    let mut bad = uniform(&mut rng, 10);
    bad[4][1] = f32::NAN;
    let err = cpu::build(&bad, &PointKdParams::default()).unwrap_err();
    assert!(err.contains("point 4"), "{err}");
    bad[4][1] = f32::INFINITY;
    assert!(cpu::build(&bad, &PointKdParams::default()).is_err());
    let params = PointKdParams {
        max_depth: 65,
        ..PointKdParams::default()
    };
    assert!(cpu::build(&uniform(&mut rng, 10), &params).is_err());
    let params = PointKdParams {
        query_radius: Some(-1.0),
        ..PointKdParams::default()
    };
    assert!(cpu::build(&uniform(&mut rng, 10), &params).is_err());
}

#[test]
fn knn_equals_brute_force_on_every_kind_of_cloud() {
    let ctx = context();
    let mut rng = Rng::new(72);
    for (name, points) in [
        ("uniform", uniform(&mut rng, 3000)),
        ("clustered", clustered(&mut rng, 3000)),
        ("duplicates", duplicates(&mut rng, 500)),
        ("planar", planar(&mut rng, 3000)),
        ("thin", thin(&mut rng, 3000)),
    ] {
        let mut queries = uniform(&mut rng, 150);
        queries.extend(points.iter().step_by(37).copied());
        for k in [1, 2, 8, 16, 40, 50, MAX_K] {
            assert_knn(&ctx, &points, &queries, k, 0.05, name);
        }
    }
    assert_valid(&ctx);
}

#[test]
fn knn_beyond_the_point_count_and_from_any_starting_radius() {
    let ctx = context();
    let mut rng = Rng::new(73);
    let queries = uniform(&mut rng, 100);
    // k above the point count: every point, then MISS.
    assert_knn(
        &ctx,
        &uniform(&mut rng, 5),
        &queries,
        8,
        0.1,
        "5 points, k 8",
    );
    assert_knn(&ctx, &uniform(&mut rng, 1), &queries, 3, 0.1, "1 point");
    assert_knn(&ctx, &[], &queries, 4, 0.1, "no points");
    let points = uniform(&mut rng, 2000);
    assert_knn(&ctx, &points, &queries, 16, 1e-6, "radius far too small");
    assert_knn(&ctx, &points, &queries, 16, 100.0, "radius far too large");
    assert_knn(&ctx, &points, &queries, 16, UNBOUNDED, "unbounded");
    assert_knn(
        &ctx,
        &duplicates(&mut rng, 300),
        &queries,
        64,
        0.0001,
        "all at a few places",
    );
    assert_valid(&ctx);
}

#[test]
fn range_queries_count_and_return_the_nearest_inside() {
    let ctx = context();
    let mut rng = Rng::new(74);
    let points = clustered(&mut rng, 4000);
    let tree = PointKdTreeGpu::upload(&ctx, &build(&points, "range"), &points).unwrap();
    let mut queries = uniform(&mut rng, 50);
    queries.extend(points.iter().step_by(97).copied());
    for (radius, most) in [(0.02, 8), (0.05, 64), (0.0, 4), (1000.0, 10)] {
        let searched = (&tree, KnnSearch::default());
        let (ids, d2, found) = gpu_knn(&ctx, searched, &queries, most, radius, Some(radius));
        for (i, &q) in queries.iter().enumerate() {
            let inside = range_count_brute_force(&points, q, radius * radius);
            assert_eq!(
                found[i].within as usize, inside,
                "radius {radius}: query {i}"
            );
            let expected = knn_brute_force(&points, q, (most as usize).min(inside));
            for (j, want) in expected.iter().enumerate() {
                let got = (d2[i * most as usize + j], ids[i * most as usize + j]);
                assert_eq!(got, *want, "radius {radius}: query {i} neighbour {j}");
            }
            if expected.len() < most as usize {
                assert_eq!(ids[i * most as usize + expected.len()], u32::MAX);
            }
        }
    }
    assert_valid(&ctx);
}

/// Alg. 7's starting radii for `queries` (`None`: every point of the tree, by
/// [`KnnQueries::every_point`]) and the search from them: each query's radius at least its
/// k-th neighbour's distance, and every answer still brute force's. Returns the chosen nodes
/// and the queries' work counters.
fn assert_estimated_radii(
    ctx: &Context,
    (points, tree, search): (&[[f32; 3]], &PointKdTreeGpu, KnnSearch),
    queries: Option<&[[f32; 3]]>,
    k: u32,
    label: &str,
) -> (u32, KnnCounters) {
    let targets = queries.unwrap_or(points);
    let n = targets.len().max(1);
    let positions = ctx.create_buffer_with("queries", targets).unwrap();
    let device = |name: &str, bytes: u64| ctx.create_buffer(name, bytes, MemoryKind::Device);
    let radii = device("radii", n as u64 * 4).unwrap();
    let ids = device("ids", n as u64 * k as u64 * 4).unwrap();
    let distances = device("distances", n as u64 * k as u64 * 4).unwrap();
    let found = device("found", n as u64 * 8).unwrap();
    let counters = ctx
        .create_buffer_with("counters", &[KnnCounters::default(); 2])
        .unwrap();
    let knn = Knn::new(ctx, 2).unwrap().with_search(search);
    let capacity = PointKdBuilder::max_nodes(points.len() as u32, 32);
    let estimator = RadiusEstimator::new(ctx, RadiusParams::default(), capacity).unwrap();
    let out = KnnOutput {
        ids: Slice::whole(&ids),
        distances2: Slice::whole(&distances),
        found: Slice::whole(&found),
        counters: Some(Slice::new(&counters, 32, 1)),
    };
    let q = match queries {
        Some(queries) => KnnQueries {
            points: Some(Slice::whole(&positions)),
            count: Count::Host(queries.len() as u32),
            radii: Some(Slice::whole(&radii)),
            radius: 0.0,
        },
        None => KnnQueries::every_point(tree, Some(Slice::whole(&radii))),
    };
    ctx.submit_and_wait(|rec| {
        let precompute_counters = Some(Slice::new(&counters, 0, 1));
        estimator.record_precompute(rec, &knn, tree, k, precompute_counters)?;
        estimator.record_estimate(rec, tree, &q)?;
        knn.record(rec, tree, &q, k, &out)
    })
    .unwrap();
    let n = targets.len();
    let r0: Vec<f32> = ctx.download(&radii, 0, n).unwrap();
    let got_ids: Vec<u32> = ctx.download(&ids, 0, n * k as usize).unwrap();
    let got_d2: Vec<f32> = ctx.download(&distances, 0, n * k as usize).unwrap();
    for (i, &q) in targets.iter().enumerate() {
        let answers = (&got_ids[..], &got_d2[..]);
        let label = format!("{label}, k {k}");
        let expected = assert_nearest(points, (i, q), k as usize, answers, &label);
        if let Some(last) = expected.last() {
            assert!(
                r0[i] >= last.0.sqrt(),
                "{label}: query {i}'s starting radius {} short of {}",
                r0[i],
                last.0.sqrt()
            );
        }
    }
    let chosen: u32 = ctx.download(estimator.chosen_count(), 0, 1).unwrap()[0];
    let counted: Vec<KnnCounters> = ctx.download(&counters, 0, 2).unwrap();
    assert_eq!(counted[0].queries, chosen as u64, "{label}: node queries");
    (chosen, counted[1])
}

#[test]
fn starting_radii_never_fall_short_and_keep_the_search_exact() {
    let ctx = context();
    let mut rng = Rng::new(79);
    for (name, points) in [
        ("uniform", uniform(&mut rng, 4000)),
        ("clustered", clustered(&mut rng, 4000)),
        ("duplicates", duplicates(&mut rng, 600)),
        ("planar", planar(&mut rng, 4000)),
        ("one point", uniform(&mut rng, 1)),
    ] {
        let tree = PointKdTreeGpu::upload(&ctx, &build(&points, name), &points).unwrap();
        // Points of the cloud, and others anywhere around it.
        let mut queries: Vec<[f32; 3]> = points.iter().step_by(3).copied().collect();
        queries.extend(
            uniform(&mut rng, 100)
                .iter()
                .map(|q| q.map(|x| 4.0 * x - 1.5)),
        );
        for (k, search) in [1, 8, 16, 50]
            .into_iter()
            .flat_map(|k| KnnSearch::ALL.map(|s| (k, s)))
        {
            let cloud = (&points[..], &tree, search);
            let name = format!("{name}, {}", search.name());
            let (chosen, work) = assert_estimated_radii(&ctx, cloud, Some(&queries), k, &name);
            let n = queries.len() as u64;
            assert_eq!(work.queries, n, "{name}: queries counted");
            match search {
                // One walk, a second only where a radius on the k-th distance holds k - 1.
                KnnSearch::NearestFirst => {
                    assert!(
                        (n..=2 * n).contains(&work.range_searches),
                        "{name}: {work:?}"
                    )
                }
                // The histogram passes and the gather at least.
                KnnSearch::Histogram => assert!(work.range_searches >= 3 * n, "{name}: {work:?}"),
            }
            let wanted = (k as u64).min(points.len() as u64);
            assert!(work.points_tested >= wanted * n, "{name}: {work:?}");
            assert!(work.nodes_tested >= work.range_searches, "{name}: {work:?}");
            // At most 7 per top node (3 levels), top nodes of up to 4k points (at least 64)
            // holding more than half that in a tree that splits near the middle.
            let bound = (14 * points.len() as u32 / (4 * k).max(64)).max(1);
            assert!(chosen <= bound, "{name}, k {k}: {chosen} node queries");
            // Every point as a query, in the tree's leaf order.
            let label = format!("{name}, every point");
            let (_, work) = assert_estimated_radii(&ctx, cloud, None, k, &label);
            assert_eq!(work.queries, points.len() as u64, "{label}");
        }
    }
    assert_valid(&ctx);
}

#[test]
fn bounded_searches_return_the_nearest_within_the_bound() {
    let ctx = context();
    let mut rng = Rng::new(83);
    let points = clustered(&mut rng, 3000);
    let tree = PointKdTreeGpu::upload(&ctx, &build(&points, "bounded"), &points).unwrap();
    let mut queries = uniform(&mut rng, 60)
        .iter()
        .map(|q| q.map(|x| 100.0 * x))
        .collect::<Vec<_>>();
    queries.extend(points.iter().step_by(101).copied());
    for ((bound, k), search) in [(0.01, 8), (0.05, 50), (3.0, 16)]
        .into_iter()
        .flat_map(|b| KnnSearch::ALL.map(|s| (b, s)))
    {
        let (ids, d2, found) = gpu_knn(&ctx, (&tree, search), &queries, k, 0.001, Some(-bound));
        for (i, &q) in queries.iter().enumerate() {
            let inside = range_count_brute_force(&points, q, bound * bound);
            let expected = knn_brute_force(&points, q, (k as usize).min(inside));
            for (j, want) in expected.iter().enumerate() {
                let got = (d2[i * k as usize + j], ids[i * k as usize + j]);
                assert_eq!(got, *want, "bound {bound}: query {i} neighbour {j}");
            }
            if expected.len() < k as usize {
                assert_eq!(
                    ids[i * k as usize + expected.len()],
                    u32::MAX,
                    "bound {bound}"
                );
            }
            assert!(found[i].radius <= bound, "bound {bound}: {:?}", found[i]);
        }
    }
    assert_valid(&ctx);
}

#[test]
fn many_queries_fold_the_dispatch_grid() {
    // 20,000 queries under a limit of 64 workgroups per dimension.
    let ctx = folding_context();
    let mut rng = Rng::new(75);
    let points = uniform(&mut rng, 50_000);
    let queries = uniform(&mut rng, 20_000);
    let tree = PointKdTreeGpu::upload(&ctx, &build(&points, "folded"), &points).unwrap();
    for search in KnnSearch::ALL {
        let (ids, d2, _) = gpu_knn(&ctx, (&tree, search), &queries, 8, 0.02, None);
        for (i, &q) in queries.iter().enumerate().step_by(7) {
            assert_nearest(&points, (i, q), 8, (&ids, &d2), search.name());
        }
    }
    assert_valid(&ctx);
}

#[test]
fn bad_queries_are_named() {
    let ctx = context();
    let points = uniform(&mut Rng::new(76), 100);
    let tree = PointKdTreeGpu::upload(&ctx, &build(&points, "bad"), &points).unwrap();
    let buffer = ctx.create_buffer("b", 4096, MemoryKind::Device).unwrap();
    let knn = Knn::new(&ctx, 2).unwrap();
    let found = ctx.create_buffer("f", 4096, MemoryKind::Device).unwrap();
    let out = KnnOutput {
        ids: Slice::whole(&buffer),
        distances2: Slice::whole(&buffer),
        found: Slice::whole(&found),
        counters: None,
    };
    let q = KnnQueries {
        points: Some(Slice::whole(&buffer)),
        count: Count::Host(10),
        radii: None,
        radius: 0.1,
    };
    for (k, radius) in [(0, 0.1), (MAX_K + 1, 0.1), (4, -1.0), (4, f32::NAN)] {
        let q = KnnQueries { radius, ..q };
        let err = ctx.submit_and_wait(|rec| knn.record(rec, &tree, &q, k, &out));
        assert!(err.is_err(), "k {k}, radius {radius} accepted");
    }
    for radius in [-1.0, f32::NAN, f32::INFINITY] {
        let err = ctx.submit_and_wait(|rec| knn.record_range(rec, &tree, &q, radius, 4, &out));
        assert!(err.is_err(), "range {radius} accepted");
    }
    // More answers than the output holds: 100 queries of 64 neighbours.
    let q = KnnQueries {
        count: Count::Host(100),
        ..q
    };
    let err = ctx
        .submit_and_wait(|rec| knn.record(rec, &tree, &q, 64, &out))
        .unwrap_err();
    assert!(err.to_string().contains("knn"), "{err}");
    // A tree over other points.
    let tree_cpu = build(&points, "bad");
    assert!(PointKdTreeGpu::upload(&ctx, &tree_cpu, &points[..50]).is_err());
    assert_valid(&ctx);
}

/// Builds `points`' tree on the GPU and reads it back.
fn gpu_build(ctx: &Context, points: &[[f32; 3]], params: PointKdParams) -> PointKdTree {
    use canopy::geom::PointInput;
    let n = points.len() as u32;
    let data: &[[f32; 3]] = if points.is_empty() {
        &[[0.0; 3]]
    } else {
        points
    };
    let positions = ctx.create_buffer_with("points", data).unwrap();
    let tree = PointKdTreeGpu::new(ctx, n.max(1), params.large_node).unwrap();
    let builder = PointKdBuilder::new(ctx, params, n.max(1)).unwrap();
    let input = PointInput {
        positions: Slice::whole(&positions),
        count: n,
    };
    ctx.submit_and_wait(|rec| builder.record(rec, &input, &tree))
        .unwrap();
    let status = builder.status();
    assert_eq!(status.overflow, 0, "{status:?}");
    tree.download(ctx).unwrap()
}

/// The same tree up to node numbering and the order of points within a leaf.
fn assert_same_tree(cpu: &PointKdTree, gpu: &PointKdTree, label: &str) {
    let mut stack = vec![(0usize, 0usize)];
    while let Some((c, g)) = stack.pop() {
        let (a, b) = (cpu.nodes[c], gpu.nodes[g]);
        let fields = |n: &canopy::accel::pointkd::PointKdNode| (n.lo, n.hi, n.is_leaf(), n.word1);
        assert_eq!(
            fields(&a),
            fields(&b),
            "{label}: CPU node {c} {a:?}, GPU node {g} {b:?}"
        );
        if a.is_leaf() {
            assert_eq!(a.word0, b.word0, "{label}: leaf sizes");
            let run = |t: &PointKdTree, n: &canopy::accel::pointkd::PointKdNode| {
                let mut ids = t.point_ids[n.word1 as usize..][..n.payload() as usize].to_vec();
                ids.sort();
                ids
            };
            assert_eq!(run(cpu, &a), run(gpu, &b), "{label}: leaf {c} points");
        } else {
            assert_eq!(a.axis(), b.axis(), "{label}: node {c} axis");
            let (l, r) = (a.payload() as usize, b.payload() as usize);
            stack.push((l, r));
            stack.push((l + 1, r + 1));
        }
    }
    assert_eq!(cpu.nodes.len(), gpu.nodes.len(), "{label}: node counts");
    assert_eq!(cpu.query_radius, gpu.query_radius, "{label}: R");
}

/// The GPU builder decides with products, sums and comparisons only: its kernels hold no float
/// division, which Vulkan lets a device round by up to 2.5 ulps (lavapipe's is correctly
/// rounded, as the CPU builder's), so a division could build other trees on another device
/// than the CPU's, and only there.
#[test]
fn build_kernels_never_divide_floats() {
    const OP_FDIV: u32 = 136;
    for kernel in canopy::accel::pointkd::build::KERNELS {
        let module = common::spirv::Module::parse(kernel.spirv);
        assert!(
            !module.opcodes.contains(&OP_FDIV),
            "{} divides floats",
            kernel.name
        );
    }
}

#[test]
fn gpu_builds_the_cpu_tree() {
    let ctx = context();
    let mut rng = Rng::new(77);
    // R given, and R estimated (small nodes pricing for their own density).
    let given = PointKdParams {
        query_radius: Some(0.02),
        ..PointKdParams::default()
    };
    for (n, params) in [1, 2, 3, 33, 100, 5000, 40_000]
        .into_iter()
        .flat_map(|n| [(n, given), (n, PointKdParams::default())])
    {
        for (name, points) in [
            ("uniform", uniform(&mut rng, n)),
            ("clustered", clustered(&mut rng, n)),
            ("duplicates", duplicates(&mut rng, n)),
            ("planar", planar(&mut rng, n)),
            ("thin", thin(&mut rng, n)),
            ("floor", floor(&mut rng, n)),
        ] {
            let label = format!("{name} {n}");
            let gpu = gpu_build(&ctx, &points, params);
            check(&points, &gpu).unwrap_or_else(|e| panic!("{label}: GPU tree: {e}"));
            let cpu = cpu::build(&points, &params).unwrap();
            assert_same_tree(&cpu, &gpu, &label);
        }
    }
    assert_valid(&ctx);
}

#[test]
fn gpu_trees_answer_queries_and_fold_at_the_default_scene_size() {
    // 254,114 points (the default scene's size) under a limit of 64 workgroups per dimension,
    // R estimated on the GPU.
    let ctx = folding_context();
    let mut rng = Rng::new(78);
    let points = clustered(&mut rng, 254_114);
    let tree = gpu_build(&ctx, &points, PointKdParams::default());
    let stats = check(&points, &tree).unwrap();
    assert!(stats.leaves > 254_114 / 32, "{stats:?}");
    let gpu = PointKdTreeGpu::upload(&ctx, &tree, &points).unwrap();
    let queries: Vec<[f32; 3]> = points.iter().step_by(2003).copied().collect();
    let (ids, d2, _) = gpu_knn(&ctx, (&gpu, KnnSearch::default()), &queries, 16, 0.01, None);
    for (i, &q) in queries.iter().enumerate() {
        assert_nearest(&points, (i, q), 16, (&ids, &d2), "default scene size");
    }
    assert_valid(&ctx);
}

#[test]
fn a_point_count_on_the_device_builds_the_same_tree() {
    use canopy::vk::Count;
    let ctx = context();
    let mut rng = Rng::new(80);
    let params = PointKdParams::default();
    for (n, spare) in [(0usize, 5usize), (1, 0), (700, 300), (5000, 1)] {
        let points = clustered(&mut rng, n + spare);
        let positions = ctx.create_buffer_with("points", &points).unwrap();
        let count = ctx.create_buffer_with("count", &[n as u32]).unwrap();
        let capacity = (n + spare) as u32;
        let tree = PointKdTreeGpu::new(&ctx, capacity, params.large_node).unwrap();
        let builder = PointKdBuilder::new(&ctx, params, capacity).unwrap();
        let counted = Count::Device {
            buffer: &count,
            offset: 0,
            max: capacity,
        };
        ctx.submit_and_wait(|rec| {
            builder.record_counted(rec, (Slice::whole(&positions), counted), &tree)
        })
        .unwrap();
        let gpu = tree.download(&ctx).unwrap();
        let label = format!("{n} of {} points counted on the device", n + spare);
        assert_eq!(gpu.point_ids.len(), n, "{label}");
        let cpu = cpu::build(&points[..n], &params).unwrap();
        assert_same_tree(&cpu, &gpu, &label);
        // Every point's nearest is itself, counted by the header.
        if n > 0 {
            let knn = Knn::new(&ctx, 2).unwrap();
            let ids = ctx
                .create_buffer("ids", capacity as u64 * 4, MemoryKind::Device)
                .unwrap();
            let d2 = ctx
                .create_buffer("d2", capacity as u64 * 4, MemoryKind::Device)
                .unwrap();
            let found = ctx
                .create_buffer("found", capacity as u64 * 8, MemoryKind::Device)
                .unwrap();
            let out = KnnOutput {
                ids: Slice::whole(&ids),
                distances2: Slice::whole(&d2),
                found: Slice::whole(&found),
                counters: None,
            };
            let q = KnnQueries::every_point(&tree, None);
            ctx.submit_and_wait(|rec| knn.record(rec, &tree, &q, 1, &out))
                .unwrap();
            let d2: Vec<f32> = ctx.download(&d2, 0, n).unwrap();
            assert!(d2.iter().all(|&d| d == 0.0), "{label}");
        }
    }
    assert_valid(&ctx);
}
