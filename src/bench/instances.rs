//! Two levels ([`crate::accel::bvh::instances`]): the top tree's rebuild over many instances
//! of a few meshes, and rays traced through both levels beside the same scene flattened into
//! one mesh under one LBVH.
//!
//! The scene is a seeded field of rocks: `meshes` UV spheres of `rings` bands, each bumped by
//! its own waves, placed `instances` times with random rotations, scales from 0.5 to 1.5 and
//! positions in a cube whose volume grows with the count. The mesh trees are built once,
//! untimed. Timed (GPU timestamps, median of `repeats` runs after a warm-up):
//! - **top**: [`TwoLevelBvh::record_build`], the instances' boxes and the LBVH over them;
//! - **flattened build**: the fast LBVH over the flattened scene, for scale;
//! - **traversal**: the camera, shadow and reflected rays of [`RaySets`] (made from the
//!   flattened scene's hits) through the flattened LBVH and through the two levels, the same
//!   rays; the two levels' time over the flattened tree's is the cost of the second level.

use super::harness::{Timing, time_runs};
use super::meshes::BenchMesh;
use super::traversal::{RaySets, TraversalReport};
use super::{Error, Result};
use crate::accel::bvh::instances::{Instance, TwoLevelBvh};
use crate::accel::bvh::lbvh::{LbvhParams, LbvhStructure};
use crate::accel::{RayStructure, submit_until_complete};
use crate::rng::Rng;
use crate::scene::Mesh;
use crate::scene::shapes::uv_sphere;
use crate::trace::Tracer;
use crate::vk::{Buffer, Context};

/// What is measured.
#[derive(Clone, Debug)]
pub struct InstancesConfig {
    /// Instances placed.
    pub instances: u32,
    /// Distinct meshes they place.
    pub meshes: u32,
    /// Latitude bands of each mesh's sphere (4 r (r - 1) triangles).
    pub rings: u32,
    /// Camera rays of an N x N image (with their shadow and reflected rays).
    pub ray_side: u32,
    /// Timed runs of each measurement after a warm-up (at least 1).
    pub repeats: u32,
}

impl Default for InstancesConfig {
    /// 10,000 instances of 100 meshes of 960 triangles: 9.6M triangles flattened.
    fn default() -> Self {
        Self {
            instances: 10_000,
            meshes: 100,
            rings: 16,
            ray_side: 1024,
            repeats: 15,
        }
    }
}

/// One kind of rays through both trees.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct InstancesTrace {
    /// Through the flattened scene's LBVH.
    pub flattened: TraversalReport,
    /// Through the two levels.
    pub two_level: TraversalReport,
    /// The two levels' time over the flattened tree's (None untimed).
    pub time_ratio: Option<f64>,
}

/// The figures of `canopy bench instances`.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct InstancesReport {
    /// Instances placed.
    pub instances: u32,
    /// Distinct meshes.
    pub meshes: u32,
    /// Triangles of the meshes, each counted once.
    pub mesh_triangles: u64,
    /// Triangles of the flattened scene.
    pub triangles: u64,
    /// The top tree's rebuild, with its stages.
    pub top_build: Timing,
    /// The flattened scene's LBVH build.
    pub flattened_build: Timing,
    /// Camera, shadow and reflected rays.
    pub traversal: Vec<InstancesTrace>,
}

/// The field of rocks of `config`: its meshes and instances.
pub fn rock_field(config: &InstancesConfig) -> (Vec<Mesh>, Vec<Instance>) {
    let mut rng = Rng::new(7);
    let meshes = (0..config.meshes)
        .map(|_| {
            let mut rock = uv_sphere([0.0; 3], 1.0, config.rings);
            let waves: [f32; 3] = std::array::from_fn(|_| rng.f32_in(1.0, 4.0));
            let phase = rng.f32_in(0.0, std::f32::consts::TAU);
            for p in &mut rock.positions {
                let bump = 1.0
                    + 0.2 * (waves[0] * p[0] + phase).sin() * (waves[1] * p[1]).cos()
                    + 0.1 * (waves[2] * p[2]).sin();
                *p = p.map(|x| x * bump);
            }
            rock
        })
        .collect();
    let side = 4.0 * (config.instances as f32).cbrt();
    let instances = (0..config.instances)
        .map(|i| {
            let (s, c) = rng.f32_in(0.0, std::f32::consts::TAU).sin_cos();
            let (t, d) = rng.f32_in(-1.0, 1.0).asin().sin_cos();
            let scale = rng.f32_in(0.5, 1.5);
            // A turn about y, then a tilt about x, scaled, then moved.
            let rotation = [[c, 0.0, s], [s * t, d, -c * t], [-s * d, t, c * d]];
            let at: [f32; 3] = std::array::from_fn(|_| rng.f32_in(0.0, side));
            let transform = std::array::from_fn(|r| {
                [
                    rotation[r][0] * scale,
                    rotation[r][1] * scale,
                    rotation[r][2] * scale,
                    at[r],
                ]
            });
            Instance::new(i % config.meshes, transform)
        })
        .collect();
    (meshes, instances)
}

/// `instances` of `meshes` copied out in instance order, transformed.
pub fn flatten(meshes: &[Mesh], instances: &[Instance]) -> Mesh {
    let mut flat = Mesh::default();
    for instance in instances {
        let mesh = &meshes[instance.mesh as usize];
        let base = flat.positions.len() as u32;
        let m = &instance.transform;
        flat.positions.extend(mesh.positions.iter().map(|p| {
            std::array::from_fn(|r| m[r][0] * p[0] + m[r][1] * p[1] + m[r][2] * p[2] + m[r][3])
        }));
        flat.triangles
            .extend(mesh.triangles.iter().map(|t| t.map(|v| base + v)));
    }
    flat
}

/// Runs the measurement of `config`.
pub fn run(ctx: &Context, config: &InstancesConfig) -> Result<InstancesReport> {
    if config.instances == 0 || config.meshes == 0 || config.ray_side == 0 {
        return Err(Error::Invalid(
            "instances, meshes and rays need at least 1".into(),
        ));
    }
    let (meshes, instances) = rock_field(config);
    let mut mesh_trees = Vec::with_capacity(meshes.len());
    let mut mesh_buffers: Vec<(Buffer, Buffer)> = Vec::with_capacity(meshes.len());
    for mesh in &meshes {
        let positions = ctx.create_buffer_with("rock positions", &mesh.positions)?;
        let triangles = ctx.create_buffer_with("rock triangles", &mesh.triangles)?;
        let count = mesh.triangle_count() as u32;
        let input = crate::geom::TriangleInput::whole(&positions, &triangles, count);
        let mut tree = LbvhStructure::new(ctx, LbvhParams::default(), count)?;
        submit_until_complete(ctx, &mut tree, |rec, t| t.record_build(rec, &input, 0))?;
        mesh_trees.push(tree);
        mesh_buffers.push((positions, triangles));
    }
    let trees: Vec<_> = mesh_trees.iter().map(LbvhStructure::bvh).collect();
    let mut two_level = TwoLevelBvh::new(ctx, config.instances)?;
    let top_build = time_runs(
        ctx,
        config.repeats,
        |_| Ok(()),
        |rec| two_level.record_build(rec, &trees, &instances),
    )?;
    ctx.submit_and_wait(|rec| two_level.record_build(rec, &trees, &instances))?;

    let flat = BenchMesh::from_mesh(ctx, "flattened rock field", flatten(&meshes, &instances))?;
    let mut flat_tree = LbvhStructure::new(ctx, LbvhParams::default(), flat.triangle_count())?;
    let flattened_build = time_runs(
        ctx,
        config.repeats,
        |_| Ok(()),
        |rec| flat_tree.record_build(rec, &flat.input(), 0),
    )?;
    submit_until_complete(ctx, &mut flat_tree, |rec, t| {
        t.record_build(rec, &flat.input(), 0)
    })?;
    let tracer = Tracer::new(ctx)?;
    let mut sets = RaySets::new(ctx, &flat, config.ray_side, false)?;
    let flattened = sets.trace(ctx, &tracer, &flat, flat_tree.bvh(), config.repeats)?;
    let through_two = sets.trace(ctx, &tracer, &flat, &two_level, config.repeats)?;
    let traversal = flattened
        .into_iter()
        .zip(through_two)
        .map(|(flattened, two_level)| InstancesTrace {
            time_ratio: flattened
                .time
                .as_ref()
                .zip(two_level.time.as_ref())
                .map(|(f, t)| t.median_ms / f.median_ms),
            flattened,
            two_level,
        })
        .collect();
    Ok(InstancesReport {
        instances: config.instances,
        meshes: config.meshes,
        mesh_triangles: meshes.iter().map(|m| m.triangle_count() as u64).sum(),
        triangles: flat.triangle_count() as u64,
        top_build,
        flattened_build,
        traversal,
    })
}
