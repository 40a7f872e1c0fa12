//! Point kd-trees and neighbour queries measured (`canopy bench knn`): for clouds of each
//! distribution and size, the GPU build (time per stage, work, memory) and every point's k
//! nearest neighbours for each k: the time of the starting radii (Alg. 7, where asked for) and
//! of the search, the work per query (range searches, nodes and points tested, against k), and
//! how far the starting and final radii lie from the true k-th neighbour's on a sample of
//! queries (brute force).
//!
//! Clouds, seeded: **uniform** in the unit cube; **clustered**: 32 tight clusters in it;
//! **surface**: evenly spread on the unit sphere (a Fibonacci lattice), as scans are.

use super::Result;
use super::harness::{Timing, count_work, time_runs};
use crate::accel::PointStructure;
use crate::accel::Structure;
use crate::accel::pointkd::PointKdParams;
use crate::accel::pointkd::build::PointKdBuilder;
use crate::accel::pointkd::build::PointKdStructure;
use crate::accel::pointkd::cpu::knn_brute_force;
use crate::accel::pointkd::knn::{
    Knn, KnnCounters, KnnFound, KnnOutput, KnnQueries, KnnSearch, UNBOUNDED,
};
use crate::accel::pointkd::radius::{RadiusEstimator, RadiusParams};
use crate::geom::PointInput;
use crate::points::PointNormals;
use crate::points::orient::NormalOrienter;
use crate::rng::Rng;
use crate::vk::{Context, MemoryKind, Slice, WorkCounts};

/// A kind of cloud.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Distribution {
    /// Uniform in the unit cube.
    Uniform,
    /// 32 tight clusters.
    Clustered,
    /// On the unit sphere.
    Surface,
}

impl Distribution {
    /// Every distribution.
    pub const ALL: [Distribution; 3] = [
        Distribution::Uniform,
        Distribution::Clustered,
        Distribution::Surface,
    ];

    /// `uniform`, `clustered` or `surface`.
    pub fn name(self) -> &'static str {
        match self {
            Distribution::Uniform => "uniform",
            Distribution::Clustered => "clustered",
            Distribution::Surface => "surface",
        }
    }

    /// `n` points of this distribution (seeded).
    pub fn points(self, n: u32) -> Vec<[f32; 3]> {
        let mut rng = Rng::new(n as u64 ^ 0x6b6e6e);
        match self {
            Distribution::Uniform => (0..n)
                .map(|_| std::array::from_fn(|_| rng.f32_in(0.0, 1.0)))
                .collect(),
            Distribution::Clustered => {
                let centres: Vec<[f32; 3]> = (0..32)
                    .map(|_| std::array::from_fn(|_| rng.f32_in(0.0, 1.0)))
                    .collect();
                (0..n)
                    .map(|i| {
                        let c = centres[i as usize % 32];
                        std::array::from_fn(|a| c[a] + rng.f32_in(-0.01, 0.01))
                    })
                    .collect()
            }
            Distribution::Surface => {
                let golden = std::f64::consts::PI * (3.0 - 5f64.sqrt());
                (0..n)
                    .map(|i| {
                        let y = 1.0 - 2.0 * (i as f64 + 0.5) / n as f64;
                        let r = (1.0 - y * y).sqrt();
                        let a = golden * i as f64;
                        [(r * a.cos()) as f32, y as f32, (r * a.sin()) as f32]
                    })
                    .collect()
            }
        }
    }
}

impl std::str::FromStr for Distribution {
    type Err = String;

    fn from_str(text: &str) -> std::result::Result<Self, String> {
        Distribution::ALL
            .into_iter()
            .find(|d| d.name() == text.trim())
            .ok_or_else(|| format!("'{text}': expected uniform, clustered or surface"))
    }
}

/// What to measure.
#[derive(Clone, Debug)]
pub struct KnnConfig {
    /// Cloud sizes.
    pub sizes: Vec<u32>,
    /// Neighbours per query.
    pub ks: Vec<u32>,
    /// Cloud kinds.
    pub distributions: Vec<Distribution>,
    /// Timed runs (after a warm-up); the median is reported.
    pub repeats: u32,
    /// Queries whose final radius is compared with brute force's k-th distance.
    pub sampled: u32,
    /// How the trees are built.
    pub tree: PointKdParams,
    /// Neighbours for the point-cloud modelling measured after the queries (normals, density
    /// and orientation), or none.
    pub modelling_k: Option<u32>,
    /// How the k nearest are searched.
    pub search: KnnSearch,
    /// Whether the queries start from Alg. 7's radii (else unbounded: [`UNBOUNDED`]).
    pub starting_radii: bool,
}

/// Point-cloud modelling of a cloud (seed 000 §6) after its k nearest: normals and density,
/// and the orientation.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ModellingReport {
    /// Neighbours per point.
    pub k: u32,
    /// GPU time (`points: normals and density`, `points: orientation`).
    pub time: Timing,
    /// Borůvka rounds that joined components.
    pub rounds: usize,
    /// Edges of the spanning forest.
    pub forest_edges: u64,
}

/// Every point's k nearest, for one k.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct KnnQueryReport {
    /// Neighbours per query.
    pub k: u32,
    /// Queries (every point).
    pub queries: u32,
    /// GPU time: the starting radii when asked for (`knn: node radii`, `knn: starting radii`)
    /// and the search (`knn`).
    pub time: Timing,
    /// Nodes whose k-th radius the starting radii needed (PRECOMPUTERADIUS's queries).
    pub node_queries: u32,
    /// The work of the node queries.
    pub node_work: KnnCounters,
    /// The work of the queries.
    pub work: KnnCounters,
    /// The starting radius over the true k-th neighbour's distance, mean over the sampled
    /// queries whose k-th neighbour is not at distance 0 (none for k = 1: a point is its own
    /// nearest; none without starting radii).
    pub r0_over_rk: Option<f64>,
    /// The final search radius over the true k-th neighbour's distance, likewise.
    pub final_over_rk: Option<f64>,
    /// [`KnnFound::within`] per query, likewise (at least k: the points within the final
    /// radius, or for the nearest-first search the neighbours found).
    pub found_per_query: Option<f64>,
}

/// One cloud: its build and its queries.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct KnnReport {
    /// The cloud's kind.
    pub distribution: Distribution,
    /// Its points.
    pub points: u32,
    /// The most device memory alive at once for this cloud: its positions (12 bytes a
    /// point), the tree and its builder, the neighbour lists of the largest k (8 bytes a
    /// neighbour: index and squared distance), the normals and the orientation's scratch.
    pub peak_device_bytes: u64,
    /// GPU build time, per stage.
    pub build: Timing,
    /// Work of one build.
    pub work: WorkCounts,
    /// Tree bytes.
    pub tree_bytes: u64,
    /// Nodes of the tree.
    pub nodes: u32,
    /// The queries, per k.
    pub queries: Vec<KnnQueryReport>,
    /// Normals, density and orientation, when measured.
    pub modelling: Option<ModellingReport>,
}

/// Measures every cloud of `config`, handing each report to `each` as it is made.
pub fn measure(
    ctx: &Context,
    config: &KnnConfig,
    mut each: impl FnMut(&KnnReport),
) -> Result<Vec<KnnReport>> {
    let knn = Knn::new(ctx, 2)?.with_search(config.search);
    let normals = PointNormals::new(ctx)?;
    let mut reports = Vec::new();
    for &distribution in &config.distributions {
        for &n in &config.sizes {
            let points = distribution.points(n);
            let before = ctx.device_memory().live;
            ctx.reset_peak_memory();
            let positions = ctx.create_buffer_with("bench cloud", &points)?;
            let mut structure = PointKdStructure::new(ctx, config.tree, n)?;
            let input = PointInput {
                positions: Slice::whole(&positions),
                count: n,
            };
            let build = time_runs(
                ctx,
                config.repeats,
                |_| Ok(()),
                |rec| structure.record_build(rec, &input, 0),
            )?;
            let work = count_work(ctx, |rec| structure.record_build(rec, &input, 0))?;
            let mut queries = Vec::new();
            let largest = config.ks.iter().chain(&config.modelling_k).copied().max();
            let largest = largest.unwrap_or(1) as u64;
            let modelled = ctx.create_buffer("bench normals", n as u64 * 16, MemoryKind::Device)?;
            let orienter = NormalOrienter::new(ctx, n)?;
            let ids = ctx.create_buffer("bench ids", n as u64 * largest * 4, MemoryKind::Device)?;
            let d2 = ctx.create_buffer("bench d2", n as u64 * largest * 4, MemoryKind::Device)?;
            let found = ctx.create_buffer("bench found", n as u64 * 8, MemoryKind::Device)?;
            let radii = ctx.create_buffer("bench r0", n as u64 * 4, MemoryKind::Device)?;
            let counters = ctx.create_buffer("bench knn counters", 64, MemoryKind::Device)?;
            let estimator = match config.starting_radii {
                true => Some(RadiusEstimator::new(
                    ctx,
                    RadiusParams::default(),
                    PointKdBuilder::max_nodes(n, config.tree.large_node),
                )?),
                false => None,
            };
            for &k in &config.ks {
                let tree = structure.tree();
                let q = match config.starting_radii {
                    true => KnnQueries::every_point(tree, Some(Slice::whole(&radii))),
                    false => KnnQueries {
                        radius: UNBOUNDED,
                        ..KnnQueries::every_point(tree, None)
                    },
                };
                let out = KnnOutput {
                    ids: Slice::new(&ids, 0, n as u64 * k as u64),
                    distances2: Slice::new(&d2, 0, n as u64 * k as u64),
                    found: Slice::<KnnFound>::whole(&found),
                    counters: None,
                };
                let search = |rec: &mut crate::vk::Recorder,
                              counted: Option<(Slice<KnnCounters>, Slice<KnnCounters>)>|
                 -> crate::vk::Result<()> {
                    if let Some(estimator) = &estimator {
                        estimator.record_precompute(rec, &knn, tree, k, counted.map(|c| c.0))?;
                        estimator.record_estimate(rec, tree, &q)?;
                    }
                    let out = KnnOutput {
                        counters: counted.map(|c| c.1),
                        ..out
                    };
                    knn.record(rec, tree, &q, k, &out)
                };
                let time = time_runs(ctx, config.repeats, |_| Ok(()), |rec| search(rec, None))?;
                ctx.submit_and_wait(|rec| {
                    rec.fill(&counters, 0, 64, 0);
                    rec.barrier_transfer_to_compute();
                    let halves = (Slice::new(&counters, 0, 1), Slice::new(&counters, 32, 1));
                    search(rec, Some(halves))
                })?;
                let counted: Vec<KnnCounters> = ctx.download(&counters, 0, 2)?;
                let node_queries: u32 = match &estimator {
                    Some(estimator) => ctx.download(estimator.chosen_count(), 0, 1)?[0],
                    None => 0,
                };
                let starts: Option<Vec<f32>> = match config.starting_radii {
                    true => Some(ctx.download(&radii, 0, n as usize)?),
                    false => None,
                };
                let answers: Vec<KnnFound> = ctx.download(&found, 0, n as usize)?;
                let step = (n / config.sampled.max(1)).max(1) as usize;
                let (mut r0_ratio, mut final_ratio, mut within, mut m) = (0.0, 0.0, 0.0, 0);
                for i in (0..n as usize).step_by(step) {
                    let nearest = knn_brute_force(&points, points[i], k as usize);
                    let rk = nearest.last().map_or(0.0, |l| l.0.sqrt()) as f64;
                    if rk > 0.0 {
                        if let Some(starts) = &starts {
                            r0_ratio += starts[i] as f64 / rk;
                        }
                        final_ratio += answers[i].radius as f64 / rk;
                        within += answers[i].within as f64;
                        m += 1;
                    }
                }
                let mean = |sum: f64| (m > 0).then(|| sum / m as f64);
                queries.push(KnnQueryReport {
                    k,
                    queries: n,
                    time,
                    node_queries,
                    node_work: counted[0],
                    work: counted[1],
                    r0_over_rk: starts.and(mean(r0_ratio)),
                    final_over_rk: mean(final_ratio),
                    found_per_query: mean(within),
                });
            }
            let modelling = match config.modelling_k {
                Some(k) => {
                    let out = KnnOutput {
                        ids: Slice::new(&ids, 0, n as u64 * k as u64),
                        distances2: Slice::new(&d2, 0, n as u64 * k as u64),
                        found: Slice::<KnnFound>::whole(&found),
                        counters: None,
                    };
                    let tree = structure.tree();
                    let q = KnnQueries::every_point(tree, None);
                    ctx.submit_and_wait(|rec| knn.record(rec, tree, &q, k, &out))?;
                    let cloud = PointInput {
                        positions: Slice::whole(&positions),
                        count: n,
                    };
                    let time = time_runs(
                        ctx,
                        config.repeats,
                        |_| Ok(()),
                        |rec| {
                            normals.record(rec, &cloud, &out, k, Slice::whole(&modelled))?;
                            // As `analyse` does, the orientation's edge weights overwrite
                            // the distances (later runs' densities read weights: the same
                            // work, wrong values, unused).
                            let weights = Slice::new(&d2, 0, n as u64 * k as u64);
                            orienter.record(
                                rec,
                                &cloud,
                                out.ids,
                                k,
                                Slice::whole(&modelled),
                                weights,
                            )
                        },
                    )?;
                    let stats = orienter.stats(ctx)?;
                    Some(ModellingReport {
                        k,
                        time,
                        rounds: stats.rounds(),
                        forest_edges: stats.forest_edges(),
                    })
                }
                None => None,
            };
            let report = KnnReport {
                distribution,
                points: n,
                peak_device_bytes: ctx.device_memory().peak - before,
                build,
                work,
                tree_bytes: structure.tree_bytes(),
                nodes: structure.status().node_count,
                queries,
                modelling,
            };
            each(&report);
            reports.push(report);
        }
    }
    Ok(reports)
}

impl std::fmt::Display for KnnReport {
    /// The build line, then a line per k.
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        writeln!(
            f,
            "{} {} points: build {:.4} ms ({} nodes, {:.2} MiB; {})",
            self.distribution.name(),
            self.points,
            self.build.median_ms,
            self.nodes,
            self.tree_bytes as f64 / (1 << 20) as f64,
            self.work
        )?;
        writeln!(
            f,
            "  peak device memory {:.1} MiB: {:.1} bytes a point beyond its 12",
            self.peak_device_bytes as f64 / (1 << 20) as f64,
            self.peak_device_bytes as f64 / self.points.max(1) as f64 - 12.0
        )?;
        let ratio = |x: Option<f64>| x.map_or("-".into(), |x| format!("{x:.3}"));
        if let Some(m) = &self.modelling {
            writeln!(
                f,
                "  modelling, k {}: normals and density {:.4} ms, orientation {:.4} ms ({} rounds, \
                 {} forest edges, {} trees)",
                m.k,
                m.time.stage_ms("points: normals and density"),
                m.time.stage_ms("points: orientation"),
                m.rounds,
                m.forest_edges,
                self.points as u64 - m.forest_edges
            )?;
        }
        for q in &self.queries {
            let per_query = |x: u64| x as f64 / q.work.queries.max(1) as f64;
            writeln!(
                f,
                "  k {:>2}: {} queries {:.4} ms (starting radii {:.4} ms, search {:.4} ms) = {:.1} M \
                 queries/s; r0 / r_k {}, final / r_k {}, points within {}",
                q.k,
                q.queries,
                q.time.median_ms,
                q.time.stage_ms("knn: starting radii"),
                q.time.stage_ms("knn"),
                q.queries as f64 / q.time.median_ms * 1e-3,
                ratio(q.r0_over_rk),
                ratio(q.final_over_rk),
                ratio(q.found_per_query)
            )?;
            writeln!(
                f,
                "        per query: {:.2} range searches, {:.1} nodes, {:.1} points tested \
                 ({:.2} k); {} node queries ({:.3} per point), {:.1} points tested each",
                per_query(q.work.range_searches),
                per_query(q.work.nodes_tested),
                per_query(q.work.points_tested),
                per_query(q.work.points_tested) / q.k as f64,
                q.node_queries,
                q.node_queries as f64 / q.queries.max(1) as f64,
                q.node_work.points_tested as f64 / q.node_work.queries.max(1) as f64,
            )?;
        }
        Ok(())
    }
}
