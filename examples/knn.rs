//! k-nearest-neighbour queries as a library call: a point cloud (a PLY or OBJ file's vertices,
//! or a seeded random cloud), its VVH point kd-tree built on the GPU and each point's k nearest
//! neighbours found on the GPU (one nearest-first walk per point), both in one recorded
//! command buffer, checked against brute force on a sample, with the GPU time of each.
//!
//! `cargo run --release --example knn -- [CLOUD|POINTS] [K]` (a file, or that many random
//! points in the unit cube; defaults: 20,000 random points, k = 16); exits non-zero on a wrong
//! answer or a validation error.

use canopy::accel::PointStructure;
use canopy::accel::pointkd::PointKdParams;
use canopy::accel::pointkd::build::PointKdStructure;
use canopy::accel::pointkd::cpu::knn_brute_force;
use canopy::accel::pointkd::knn::{Knn, KnnFound, KnnOutput, KnnQueries, UNBOUNDED};
use canopy::geom::PointInput;
use canopy::rng::Rng;
use canopy::scene::Mesh;
use canopy::vk::{Context, ContextOptions, MemoryKind, Profiler, Slice, Validation};
use std::error::Error;

fn main() -> Result<(), Box<dyn Error>> {
    let mut args = std::env::args().skip(1);
    let cloud = args.next().unwrap_or("20000".into());
    let points: Vec<[f32; 3]> = match cloud.parse::<u32>() {
        Ok(count) => {
            let mut rng = Rng::new(1);
            (0..count)
                .map(|_| std::array::from_fn(|_| rng.f32_in(0.0, 1.0)))
                .collect()
        }
        Err(_) => Mesh::load_points(cloud.as_ref())?,
    };
    let k: u32 = args.next().map_or(Ok(16), |k| k.parse())?;
    let ctx = Context::new(&ContextOptions {
        validation: Validation::IfAvailable,
        ..ContextOptions::default()
    })?;

    let params = PointKdParams {
        k_estimate: k,
        ..PointKdParams::default()
    };
    let n = points.len() as u32;
    let positions = ctx.create_buffer_with("points", &points)?;
    let mut tree = PointKdStructure::new(&ctx, params, n)?;
    let input = PointInput {
        positions: Slice::whole(&positions),
        count: n,
    };
    let slots = n as u64 * k as u64;
    let ids = ctx.create_buffer("neighbours", slots * 4, MemoryKind::Device)?;
    let distances = ctx.create_buffer("distances", slots * 4, MemoryKind::Device)?;
    let found = ctx.create_buffer("found", n as u64 * 8, MemoryKind::Device)?;
    let knn = Knn::new(&ctx, 2)?;
    let output = KnnOutput {
        ids: Slice::whole(&ids),
        distances2: Slice::whole(&distances),
        found: Slice::<KnnFound>::whole(&found),
        counters: None,
    };
    // The tree's build, then every point's k nearest (the tree's own points as queries, run in
    // its leaf order, each search bounded by its own list), in one command buffer.
    let mut profiler = Profiler::new(&ctx, 64)?;
    ctx.submit_profiled(&mut profiler, |rec| {
        rec.begin_stage("build");
        tree.record_build(rec, &input, 0)?;
        rec.end_stage();
        let queries = KnnQueries {
            radius: UNBOUNDED,
            ..KnnQueries::every_point(tree.tree(), None)
        };
        knn.record(rec, tree.tree(), &queries, k, &output)
    })?;
    let build_ms = profiler.stage_ms("build")?.unwrap_or(0.0);
    let ms = profiler.stage_ms("knn")?.unwrap_or(0.0);

    // Every 97th answer against brute force.
    let got_ids: Vec<u32> = ctx.download(&ids, 0, slots as usize)?;
    let got_d2: Vec<f32> = ctx.download(&distances, 0, slots as usize)?;
    let mut wrong = 0;
    for i in (0..points.len()).step_by(97) {
        let expected = knn_brute_force(&points, points[i], k as usize);
        for (j, &(d2, id)) in expected.iter().enumerate() {
            let at = i * k as usize + j;
            wrong += (got_ids[at] != id || got_d2[at] != d2) as usize;
        }
    }
    println!(
        "{n} points, {} tree nodes built in {build_ms:.3} ms; {n} queries of k = {k} on {}: \
         search {ms:.3} ms (GPU); {wrong} differing from brute force",
        tree.status().node_count,
        ctx.caps().name
    );
    ctx.check_validation()?;
    if wrong > 0 {
        return Err(format!("{wrong} neighbours differ from brute force").into());
    }
    Ok(())
}
