//! k-nearest-neighbour queries as a library call: a point cloud (a PLY or OBJ file's vertices,
//! or a seeded random cloud), its VVH point kd-tree, and every point's k nearest neighbours
//! found on the GPU (seed 000 Alg. 6) in one recorded command buffer, checked against brute
//! force on a sample, with the GPU time of the queries.
//!
//! `cargo run --release --example knn -- [CLOUD] [K]` (defaults: 20,000 random points, k = 16);
//! exits non-zero on a wrong answer or a validation error.

use canopy::accel::pointkd::PointKdParams;
use canopy::accel::pointkd::cpu::{build, knn_brute_force, query_radius};
use canopy::accel::pointkd::knn::{Knn, KnnFound, KnnOutput, KnnQueries, PointKdTreeGpu};
use canopy::rng::Rng;
use canopy::scene::Mesh;
use canopy::vk::{Context, ContextOptions, Count, MemoryKind, Profiler, Slice, Validation};
use std::error::Error;

fn main() -> Result<(), Box<dyn Error>> {
    let mut args = std::env::args().skip(1);
    let points = match args.next() {
        Some(path) => Mesh::load_points(path.as_ref())?,
        None => {
            let mut rng = Rng::new(1);
            (0..20_000)
                .map(|_| std::array::from_fn(|_| rng.f32_in(0.0, 1.0)))
                .collect()
        }
    };
    let k: u32 = args.next().map_or(Ok(16), |k| k.parse())?;
    let ctx = Context::new(&ContextOptions {
        validation: Validation::IfAvailable,
        ..ContextOptions::default()
    })?;

    // The tree, built on the CPU and uploaded.
    let params = PointKdParams {
        k_estimate: k,
        ..PointKdParams::default()
    };
    let tree = build(&points, &params)?;
    let gpu_tree = PointKdTreeGpu::upload(&ctx, &tree, &points)?;

    // Every point queries its k nearest.
    let n = points.len() as u32;
    let positions = ctx.create_buffer_with("points", &points)?;
    let slots = n as u64 * k as u64;
    let ids = ctx.create_buffer("neighbours", slots * 4, MemoryKind::Device)?;
    let distances = ctx.create_buffer("distances", slots * 4, MemoryKind::Device)?;
    let found = ctx.create_buffer("found", n as u64 * 8, MemoryKind::Device)?;
    let knn = Knn::new(&ctx, 2)?;
    let queries = KnnQueries {
        points: Slice::whole(&positions),
        count: Count::Host(n),
        radii: None,
        radius: query_radius(&points, &params),
    };
    let output = KnnOutput {
        ids: Slice::whole(&ids),
        distances2: Slice::whole(&distances),
        found: Slice::<KnnFound>::whole(&found),
    };
    let mut profiler = Profiler::new(&ctx, 4)?;
    ctx.submit_profiled(&mut profiler, |rec| {
        knn.record(rec, &gpu_tree, &queries, k, &output)
    })?;
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
        "{n} points, {} tree nodes; {n} queries of k = {k} on {}: {ms:.3} ms (GPU); \
         {wrong} differing from brute force",
        tree.nodes.len(),
        ctx.caps().name
    );
    ctx.check_validation()?;
    if wrong > 0 {
        return Err(format!("{wrong} neighbours differ from brute force").into());
    }
    Ok(())
}
