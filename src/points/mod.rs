//! Point-cloud modelling (seed 000 §6) over the point kd-tree's neighbour queries
//! ([`crate::accel::pointkd`]): per point, its k nearest neighbours, its PCA normal and its
//! density `k / r_k²` on the GPU ([`PointNormals`], `glsl/points/normals.comp`), the normals
//! oriented consistently by a minimum spanning tree over the neighbour graph
//! ([`cpu::orient_normals`], on the CPU), and the result written as PLY ([`write_ply`]).
//! [`analyse`] runs the whole job on a cloud.
//!
//! The tree is built on the GPU ([`crate::accel::pointkd::build`]); the orientation runs on the
//! CPU until its GPU version lands.

pub mod cpu;

use crate::accel::PointStructure;
use crate::accel::pointkd::PointKdParams;
use crate::accel::pointkd::build::PointKdStructure;
use crate::accel::pointkd::cpu::query_radius;
use crate::accel::pointkd::knn::{Knn, KnnFound, KnnOutput, KnnQueries};
use crate::geom::PointInput;
use crate::prims::WORKGROUP_SIZE;
use crate::shaders;
use crate::vk::{Context, Count, Error, MemoryKind, Pipeline, Profiler, Recorder, Result, Slice};
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

    /// Records, for each of `count` points of `positions`, its normal and density from its `k`
    /// neighbours in `neighbours` (a [`Knn`] answer for the same points) into `out`.
    pub fn record(
        &self,
        rec: &mut Recorder,
        positions: Slice<[f32; 3]>,
        count: u32,
        (neighbours, k): (&KnnOutput, u32),
        out: Slice<[f32; 4]>,
    ) -> Result<()> {
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
    /// `k / r_k²` per point.
    pub densities: Vec<f32>,
    /// The neighbour indices, `k` per point.
    pub neighbours: Vec<u32>,
    /// Normals flipped by the orientation.
    pub flipped: usize,
    /// GPU time per stage (`point kd-tree build`, `knn`, `points: normals and density`).
    pub stages: Vec<(String, f64)>,
    /// CPU seconds of the orientation.
    pub orientation_seconds: f64,
}

/// Analyses `points`: the tree, every point's `k` nearest neighbours, normals and densities
/// (GPU), the orientation (CPU).
pub fn analyse(ctx: &Context, points: &[[f32; 3]], k: u32) -> Result<CloudAnalysis> {
    if points.is_empty() {
        return Err(Error::InvalidInput("an empty point cloud".into()));
    }
    if let Some(i) = points.iter().position(|p| p.iter().any(|x| !x.is_finite())) {
        return Err(Error::InvalidInput(format!(
            "point {i} is not finite: {:?}",
            points[i]
        )));
    }
    let params = PointKdParams {
        k_estimate: k,
        ..PointKdParams::default()
    };
    let radius = query_radius(points, &params);
    let n = points.len() as u32;
    let positions = ctx.create_buffer_with("cloud positions", points)?;
    let mut structure = PointKdStructure::new(ctx, params, n)?;
    let slots = n as u64 * k as u64;
    let ids = ctx.create_buffer("cloud neighbours", slots * 4, MemoryKind::Device)?;
    let distances = ctx.create_buffer("cloud distances", slots * 4, MemoryKind::Device)?;
    let found = ctx.create_buffer("cloud found", n as u64 * 8, MemoryKind::Device)?;
    let results = ctx.create_buffer("cloud normals", n as u64 * 16, MemoryKind::Device)?;
    let (knn, normals) = (Knn::new(ctx, 2)?, PointNormals::new(ctx)?);
    let output = KnnOutput {
        ids: Slice::whole(&ids),
        distances2: Slice::whole(&distances),
        found: Slice::<KnnFound>::whole(&found),
    };
    let queries = KnnQueries {
        points: Slice::whole(&positions),
        count: Count::Host(n),
        radii: None,
        radius,
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
        knn.record(rec, structure.tree(), &queries, k, &output)?;
        normals.record(
            rec,
            Slice::whole(&positions),
            n,
            (&output, k),
            Slice::whole(&results),
        )
    })?;
    if structure.status().overflow != 0 {
        return Err(Error::InvalidInput(format!(
            "the point kd-tree build outgrew its lists: {:?}",
            structure.status()
        )));
    }
    let stages = ["point kd-tree build", "knn", "points: normals and density"]
        .iter()
        .filter_map(|&s| Some((s.to_string(), profiler.stage_ms(s).ok()??)))
        .collect();
    let neighbours: Vec<u32> = ctx.download(&ids, 0, slots as usize)?;
    let packed: Vec<[f32; 4]> = ctx.download(&results, 0, n as usize)?;
    let mut normals: Vec<[f32; 3]> = packed.iter().map(|r| [r[0], r[1], r[2]]).collect();
    let densities = packed.iter().map(|r| r[3]).collect();
    let started = std::time::Instant::now();
    let lists: Vec<Vec<u32>> = neighbours.chunks(k as usize).map(<[u32]>::to_vec).collect();
    let flipped = cpu::orient_normals(points, &lists, &mut normals);
    Ok(CloudAnalysis {
        normals,
        densities,
        neighbours,
        flipped,
        stages,
        orientation_seconds: started.elapsed().as_secs_f64(),
    })
}

/// Writes `points` with their normals and densities as a binary little-endian PLY
/// (`x y z nx ny nz density`, floats), atomically (a partial file never has the final name).
pub fn write_ply(
    path: &Path,
    points: &[[f32; 3]],
    normals: &[[f32; 3]],
    densities: &[f32],
) -> std::io::Result<()> {
    let partial = path.with_extension("ply.partial");
    {
        let mut file = std::io::BufWriter::new(std::fs::File::create(&partial)?);
        write!(
            file,
            "ply\nformat binary_little_endian 1.0\ncomment canopy points normals\nelement vertex {}\n\
             property float x\nproperty float y\nproperty float z\nproperty float nx\n\
             property float ny\nproperty float nz\nproperty float density\nend_header\n",
            points.len()
        )?;
        for ((p, n), d) in points.iter().zip(normals).zip(densities) {
            for x in p.iter().chain(n).chain(std::iter::once(d)) {
                file.write_all(&x.to_le_bytes())?;
            }
        }
        file.flush()?;
    }
    std::fs::rename(&partial, path)
}
