//! Point-cloud modelling (seed 000 §6) over the point kd-tree's neighbour queries
//! ([`crate::accel::pointkd`]), all on the GPU: per point, its k nearest neighbours, its PCA
//! normal and its density `k / r_k²` ([`PointNormals`], `glsl/points/normals.comp`), the
//! normals oriented consistently by a minimum spanning forest over the neighbour graph
//! ([`orient::NormalOrienter`]), and the result written as PLY ([`write_ply`]). [`analyse`]
//! runs the whole job on a cloud. [`deform`] computes the deformation strength field of
//! editing from handle point sets; [`cpu`] holds the references.

pub mod cpu;
pub mod deform;
pub mod orient;

use crate::accel::PointStructure;
use crate::accel::pointkd::PointKdParams;
use crate::accel::pointkd::build::PointKdStructure;
use crate::accel::pointkd::knn::{Knn, KnnFound, KnnOutput, KnnQueries, UNBOUNDED};
use crate::geom::PointInput;
use crate::prims::WORKGROUP_SIZE;
use crate::shaders;
use crate::vk::{Context, Error, MemoryKind, Pipeline, Profiler, Recorder, Result, Slice};
use orient::{NormalOrienter, OrientStats};
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

/// Push constants of `normals.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct NormalsPush {
    /// Positions.
    pub positions_address: u64,
    /// k neighbour indices per point.
    pub ids_address: u64,
    /// k squared distances per point.
    pub distances_address: u64,
    /// Out: normal and density per point.
    pub out_address: u64,
    /// Points.
    pub count: u32,
    /// Neighbours per point.
    pub k: u32,
}

/// The normals-and-density kernel.
pub struct PointNormals {
    pipeline: Arc<Pipeline>,
}

impl PointNormals {
    /// The kernel.
    pub fn new(ctx: &Context) -> Result<Self> {
        Ok(Self {
            pipeline: ctx.pipeline(&shaders::POINTS_NORMALS, WORKGROUP_SIZE, &[])?,
        })
    }

    /// Records, for each point of `cloud`, its normal and density from its `k` neighbours in
    /// `neighbours` (a [`Knn`] answer for the same points) into `out`.
    pub fn record(
        &self,
        rec: &mut Recorder,
        cloud: &PointInput,
        neighbours: &KnnOutput,
        k: u32,
        out: Slice<[f32; 4]>,
    ) -> Result<()> {
        let (positions, count) = (cloud.positions, cloud.count);
        positions.check("normals positions", count as u64, 4)?;
        neighbours
            .ids
            .check("normals neighbours", count as u64 * k as u64, 4)?;
        neighbours
            .distances2
            .check("normals distances", count as u64 * k as u64, 4)?;
        out.check("normals out", count as u64, 16)?;
        let push = NormalsPush {
            positions_address: positions.address(),
            ids_address: neighbours.ids.address(),
            distances_address: neighbours.distances2.address(),
            out_address: out.address(),
            count,
            k,
        };
        rec.begin_stage("points: normals and density");
        rec.dispatch(&self.pipeline, &push, count.div_ceil(WORKGROUP_SIZE))?;
        rec.barrier_compute_to_compute();
        rec.end_stage();
        Ok(())
    }
}

/// A cloud analysed: per point its oriented normal and density, and what it took.
#[derive(Clone, Debug)]
pub struct CloudAnalysis {
    /// Unit normals (zero where a point has fewer than three distinct neighbours).
    pub normals: Vec<[f32; 3]>,
    /// `k / r_k²` per point, in the cloud's units (0 for a point with no other point near;
    /// infinite only where the value is beyond single precision, in a cloud about 1e-19
    /// across).
    pub densities: Vec<f32>,
    /// The neighbour indices, `k` per point (`u32::MAX` past the last found). Copies of one
    /// position share the neighbours of its first copy, which are other positions.
    pub neighbours: Vec<u32>,
    /// The cloud's distinct positions: each is analysed once, and its copies take its normal
    /// and density.
    pub distinct: usize,
    /// What the orientation did.
    pub orientation: OrientStats,
    /// GPU time per stage ([`ANALYSIS_STAGES`]).
    pub stages: Vec<(String, f64)>,
}

/// The stages of [`analyse`], as its profile names them.
pub const ANALYSIS_STAGES: [&str; 4] = [
    "point kd-tree build",
    "knn",
    "points: normals and density",
    "points: orientation",
];

/// The device buffers [`analyse`] works in for `n` points at `k` neighbours.
struct AnalysisBuffers {
    positions: crate::vk::Buffer,
    structure: PointKdStructure,
    ids: crate::vk::Buffer,
    distances: crate::vk::Buffer,
    found: crate::vk::Buffer,
    results: crate::vk::Buffer,
    orienter: NormalOrienter,
}

impl AnalysisBuffers {
    fn new(ctx: &Context, n: u32, k: u32) -> Result<Self> {
        let params = PointKdParams {
            k_estimate: k,
            ..PointKdParams::default()
        };
        let slots = n as u64 * k as u64;
        let device = |name: &str, bytes: u64| ctx.create_buffer(name, bytes, MemoryKind::Device);
        Ok(Self {
            positions: device("cloud positions", n.max(1) as u64 * 12)?,
            structure: PointKdStructure::new(ctx, params, n)?,
            ids: device("cloud neighbours", slots * 4)?,
            distances: device("cloud distances", slots * 4)?,
            found: device("cloud found", n as u64 * 8)?,
            results: device("cloud normals", n as u64 * 16)?,
            orienter: NormalOrienter::new(ctx, n)?,
        })
    }
}

/// Points of the probe allocations [`check_device_memory`] measures.
const PROBE_POINTS: u32 = 4096;

/// Whether [`analyse`] of `n` points at `k` neighbours fits the device's memory, before any
/// of it is allocated: the analysis's device bytes grow linearly with the points, so two small
/// allocations of its buffers (4,096 points and twice as many, freed at once) give the
/// bytes per point and the fixed part. A cloud that cannot fit is refused with how many points
/// would: canopy does not tile a cloud across several analyses (split it and analyse the
/// parts, or use a device with more memory). At k = 16 an analysis takes about 390 bytes a
/// point: 100 million points need about 39 GB, within an 80 GB H100.
pub fn check_device_memory(ctx: &Context, n: u64, k: u32) -> Result<()> {
    let held = |count: u32| -> Result<u64> {
        let before = ctx.device_memory().live;
        let buffers = AnalysisBuffers::new(ctx, count, k)?;
        let bytes = ctx.device_memory().live - before;
        drop(buffers);
        Ok(bytes)
    };
    let (small, large) = (held(PROBE_POINTS)?, held(2 * PROBE_POINTS)?);
    let per_point = large.saturating_sub(small) as f64 / PROBE_POINTS as f64;
    let fixed = (small as f64 - per_point * PROBE_POINTS as f64).max(0.0);
    let needed = fixed + per_point * n as f64;
    let device = ctx.caps().device_local_bytes as f64;
    if needed <= device && n <= u32::MAX as u64 {
        return Ok(());
    }
    let fit = (((device - fixed) / per_point.max(1.0)).max(0.0) as u64).min(u32::MAX as u64);
    let gib = |bytes: f64| bytes / (1u64 << 30) as f64;
    Err(Error::InvalidInput(format!(
        "{n} points at k = {k} need about {:.1} GiB of device memory ({per_point:.0} bytes a \
         point); the device has {:.1} GiB: at most {fit} points fit (split the cloud)",
        gib(needed),
        gib(device)
    )))
}

/// Analyses `points` on the GPU in one submission: the tree, every point's `k` nearest
/// neighbours, normals and densities, and the orientation.
///
/// The result does not depend on the cloud's place or units: the GPU works on the cloud
/// centred on its bounding box and scaled to it (so coordinates around 1e6, or a cloud a
/// micrometre across, give the normals a unit-sized cloud gives), and the densities are
/// computed in the cloud's own units from its positions, in double precision. Points at one
/// position (duplicates) are analysed once, from their distinct neighbours: every copy gets
/// that normal and a finite density, where copies used to see only each other.
pub fn analyse(ctx: &Context, cloud: &[[f32; 3]], k: u32) -> Result<CloudAnalysis> {
    let points = cloud;
    if points.is_empty() {
        return Err(Error::InvalidInput("an empty point cloud".into()));
    }
    if let Some(i) = points.iter().position(|p| p.iter().any(|x| !x.is_finite())) {
        return Err(Error::InvalidInput(format!(
            "point {i} is not finite: {:?}",
            points[i]
        )));
    }
    let (distinct, copy_of) = distinct_positions(cloud);
    let points = &distinct[..];
    check_device_memory(ctx, points.len() as u64, k)?;
    let n = points.len() as u32;
    let AnalysisBuffers {
        positions,
        mut structure,
        ids,
        distances,
        found,
        results,
        orienter,
    } = AnalysisBuffers::new(ctx, n, k)?;
    ctx.upload(&positions, 0, &normalised(points))?;
    let slots = n as u64 * k as u64;
    let knn = Knn::new(ctx, 2)?;
    let normals = PointNormals::new(ctx)?;
    let output = KnnOutput {
        ids: Slice::whole(&ids),
        distances2: Slice::whole(&distances),
        found: Slice::<KnnFound>::whole(&found),
        counters: None,
    };
    let input = PointInput {
        positions: Slice::whole(&positions),
        count: n,
    };
    let mut profiler = Profiler::new(ctx, 64)?;
    ctx.submit_profiled(&mut profiler, |rec| {
        rec.begin_stage("point kd-tree build");
        structure.record_build(rec, &input, 0)?;
        rec.end_stage();
        let tree = structure.tree();
        let queries = KnnQueries {
            radius: UNBOUNDED,
            ..KnnQueries::every_point(tree, None)
        };
        knn.record(rec, tree, &queries, k, &output)?;
        let cloud = PointInput {
            positions: Slice::whole(&positions),
            count: n,
        };
        normals.record(rec, &cloud, &output, k, Slice::whole(&results))?;
        // The distances are read by the normals only: the orientation's edge weights take
        // their place.
        let weights = Slice::whole(&distances);
        orienter.record(
            rec,
            &cloud,
            Slice::whole(&ids),
            k,
            Slice::whole(&results),
            weights,
        )
    })?;
    if structure.status().overflow != 0 {
        return Err(Error::InvalidInput(format!(
            "the point kd-tree build outgrew its lists: {:?}",
            structure.status()
        )));
    }
    let stages = ANALYSIS_STAGES
        .iter()
        .filter_map(|&s| Some((s.to_string(), profiler.stage_ms(s).ok()??)))
        .collect();
    let packed: Vec<[f32; 4]> = ctx.download(&results, 0, n as usize)?;
    let ids: Vec<u32> = ctx.download(&ids, 0, slots as usize)?;
    let k = k as usize;
    // k / r_k², from the positions as given (the GPU's is in the normalised units).
    let densities: Vec<f32> = (0..points.len())
        .map(|i| {
            let found = &ids[i * k..][..k];
            let m = found.iter().take_while(|&&j| j != u32::MAX).count();
            let r2: f64 = match m.checked_sub(1).map(|last| points[found[last] as usize]) {
                Some(far) => (0..3)
                    .map(|a| (far[a] as f64 - points[i][a] as f64).powi(2))
                    .sum(),
                None => 0.0,
            };
            if r2 > 0.0 {
                (m as f64 / r2) as f32
            } else {
                0.0
            }
        })
        .collect();
    let normals: Vec<[f32; 3]> = packed.iter().map(|r| [r[0], r[1], r[2]]).collect();
    let orientation = orienter.stats(ctx)?;
    let Some(copy_of) = copy_of else {
        return Ok(CloudAnalysis {
            normals,
            densities,
            neighbours: ids,
            distinct: points.len(),
            orientation,
            stages,
        });
    };
    // Each copy as its distinct position; neighbours named by their first copies.
    let first: Vec<u32> = {
        let mut first = vec![u32::MAX; points.len()];
        for (i, &d) in copy_of.iter().enumerate().rev() {
            first[d as usize] = i as u32;
        }
        first
    };
    Ok(CloudAnalysis {
        normals: copy_of.iter().map(|&d| normals[d as usize]).collect(),
        densities: copy_of.iter().map(|&d| densities[d as usize]).collect(),
        neighbours: copy_of
            .iter()
            .flat_map(|&d| {
                ids[d as usize * k..][..k]
                    .iter()
                    .map(|&j| if j == u32::MAX { j } else { first[j as usize] })
            })
            .collect(),
        distinct: points.len(),
        orientation,
        stages,
    })
}

/// The distinct positions of `points` in the order they first appear, and for each point the
/// index of its position among them (`None` when all are distinct).
fn distinct_positions(points: &[[f32; 3]]) -> (Vec<[f32; 3]>, Option<Vec<u32>>) {
    // -0.0 and 0.0 are one position.
    let key = |p: &[f32; 3]| p.map(|x| (x + 0.0).to_bits());
    let mut index = std::collections::HashMap::with_capacity(points.len());
    let mut distinct = Vec::with_capacity(points.len());
    let copy_of: Vec<u32> = points
        .iter()
        .map(|p| {
            *index.entry(key(p)).or_insert_with(|| {
                distinct.push(*p);
                distinct.len() as u32 - 1
            })
        })
        .collect();
    let copies = (distinct.len() < points.len()).then_some(copy_of);
    (distinct, copies)
}

/// `points` moved and scaled so that their bounding box is centred on the origin with its
/// longest side 2 (neighbours, covariances and eigenvectors are then computed in single
/// precision at the same relative accuracy whatever the cloud's place and units).
fn normalised(points: &[[f32; 3]]) -> Vec<[f32; 3]> {
    let mut lo = [f64::INFINITY; 3];
    let mut hi = [f64::NEG_INFINITY; 3];
    for p in points {
        for a in 0..3 {
            lo[a] = lo[a].min(p[a] as f64);
            hi[a] = hi[a].max(p[a] as f64);
        }
    }
    let centre: [f64; 3] = std::array::from_fn(|a| 0.5 * (lo[a] + hi[a]));
    let half = (0..3).map(|a| 0.5 * (hi[a] - lo[a])).fold(0.0, f64::max);
    let scale = if half > 0.0 { 1.0 / half } else { 1.0 };
    points
        .iter()
        .map(|p| std::array::from_fn(|a| ((p[a] as f64 - centre[a]) * scale) as f32))
        .collect()
}

/// Per-point float properties to write beside the positions: each a PLY property name and a
/// value per point.
pub type PlyColumns<'a> = [(&'a str, Vec<f32>)];

/// The columns `nx ny nz density` of an analysis.
pub fn normal_columns(analysis: &CloudAnalysis) -> Vec<(&'static str, Vec<f32>)> {
    let axis = |a: usize| analysis.normals.iter().map(|n| n[a]).collect();
    vec![
        ("nx", axis(0)),
        ("ny", axis(1)),
        ("nz", axis(2)),
        ("density", analysis.densities.clone()),
    ]
}

/// Writes `points` as a binary little-endian PLY (`x y z` and then each of `columns`, floats),
/// atomically (a partial file never has the final name; see [`crate::atomic_file`]). Points
/// relative to a non-zero `origin` (a georeferenced cloud's: [`crate::scene::las`]) are
/// written as they are, and a `comment origin X Y Z` line names it.
pub fn write_ply(
    path: &Path,
    points: &[[f32; 3]],
    origin: [f64; 3],
    columns: &PlyColumns,
) -> std::io::Result<()> {
    if let Some((name, values)) = columns.iter().find(|(_, v)| v.len() != points.len()) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!(
                "{} values of {name} for {} points",
                values.len(),
                points.len()
            ),
        ));
    }
    crate::atomic_file::write_atomically_with(path, |file| {
        let mut file = std::io::BufWriter::new(file);
        writeln!(
            file,
            "ply\nformat binary_little_endian 1.0\ncomment canopy points"
        )?;
        if origin != [0.0; 3] {
            let [x, y, z] = origin;
            writeln!(
                file,
                "comment origin {x} {y} {z} (x, y and z are relative to it)"
            )?;
        }
        write!(
            file,
            "element vertex {}\nproperty float x\nproperty float y\nproperty float z\n",
            points.len()
        )?;
        for (name, _) in columns {
            writeln!(file, "property float {name}")?;
        }
        writeln!(file, "end_header")?;
        for (i, p) in points.iter().enumerate() {
            let values = columns.iter().map(|(_, column)| &column[i]);
            for x in p.iter().chain(values) {
                file.write_all(&x.to_le_bytes())?;
            }
        }
        file.flush()
    })
}
