//! The deformation strength field of point-cloud editing (seed 000 §6, after Pauly et al.
//! 2003): each point of a cloud gets a strength from 0 to 1 by its distances to the active
//! handle and to the static handles (a handle is a set of points; a point's distance to it is
//! to its nearest point). As the paper does it, two point kd-trees are built, one over the
//! active handle and one over the static handles, and every point's nearest neighbour is found
//! in each (one nearest-first walk per point); `glsl/points/strength.comp` turns the two distances
//! into `t = beta(d_s / (d_s + d_a))`, `beta(x) = x² (3 - 2x)`. Rebuilding when the user
//! changes the handles is one recording of [`DeformationField::record`].

use crate::accel::PointStructure;
use crate::accel::pointkd::PointKdParams;
use crate::accel::pointkd::build::PointKdStructure;
use crate::accel::pointkd::knn::{Knn, KnnOutput, KnnQueries, UNBOUNDED};
use crate::geom::PointInput;
use crate::prims::WORKGROUP_SIZE;
use crate::shaders;
use crate::vk::{Buffer, Context, Count, Error, MemoryKind, Pipeline, Recorder, Result, Slice};
use std::sync::Arc;

/// Push constants of `strength.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct StrengthPush {
    /// Squared distance per point to the active handle.
    pub active_address: u64,
    /// Squared distance per point to the static handles, or 0.
    pub static_address: u64,
    /// Out: strength per point.
    pub out_address: u64,
    /// Points.
    pub count: u32,
    /// Padding.
    pub pad: u32,
}

/// The deformation strength of clouds of up to a given size with handles of up to a given
/// size.
pub struct DeformationField {
    knn: Knn,
    handles: [PointKdStructure; 2],
    strength: Arc<Pipeline>,
    capacity: u32,
    ids: Buffer,
    distances: [Buffer; 2],
    found: Buffer,
}

impl DeformationField {
    /// Room for clouds of up to `points` points and each handle tree (the active handle, the
    /// static handles) of up to `handle_points`.
    pub fn new(ctx: &Context, points: u32, handle_points: u32) -> Result<Self> {
        let n = points.max(1) as u64;
        let device = |name: &str, bytes: u64| ctx.create_buffer(name, bytes, MemoryKind::Device);
        let params = PointKdParams::default();
        let handle = || PointKdStructure::new(ctx, params, handle_points.max(1));
        Ok(Self {
            knn: Knn::new(ctx, 2)?,
            handles: [handle()?, handle()?],
            strength: ctx.pipeline(&shaders::POINTS_STRENGTH, WORKGROUP_SIZE, &[])?,
            capacity: points,
            ids: device("strength nearest", n * 4)?,
            distances: [
                device("strength to the active handle", n * 4)?,
                device("strength to the static handles", n * 4)?,
            ],
            found: device("strength found", n * 8)?,
        })
    }

    /// Records the strength of each of the `cloud`'s points into `out`: the handle trees are
    /// built over `active` (at least one point) and `fixed` (the static handles; none: every
    /// point is as far from them as can be, so only the active handle's distance is used and
    /// the strength is 1), then every point's nearest neighbour in each.
    pub fn record(
        &mut self,
        rec: &mut Recorder,
        cloud: &PointInput,
        active: &PointInput,
        fixed: Option<&PointInput>,
        out: Slice<f32>,
    ) -> Result<()> {
        let (positions, count) = (cloud.positions, cloud.count);
        if count > self.capacity || active.count == 0 {
            return Err(Error::InvalidInput(format!(
                "deformation strength of {count} points (at most {}) from an active handle of {} \
                 (at least 1)",
                self.capacity, active.count
            )));
        }
        positions.check("strength positions", count as u64, 4)?;
        out.check("strength out", count as u64, 4)?;
        let queries = KnnQueries {
            points: Some(positions),
            count: Count::Host(count),
            radii: None,
            radius: UNBOUNDED,
        };
        let handles = [Some(active), fixed];
        for (side, handle) in handles.iter().enumerate() {
            let Some(handle) = handle else { continue };
            if handle.count == 0 {
                continue;
            }
            let structure = &mut self.handles[side];
            rec.begin_stage("points: handle tree");
            structure.record_build(rec, handle, 0)?;
            rec.end_stage();
            let tree = structure.tree();
            let nearest = KnnOutput {
                ids: Slice::whole(&self.ids),
                distances2: Slice::whole(&self.distances[side]),
                found: Slice::whole(&self.found),
                counters: None,
            };
            self.knn.record(rec, tree, &queries, 1, &nearest)?;
        }
        let has_static = fixed.is_some_and(|f| f.count > 0);
        let push = StrengthPush {
            active_address: self.distances[0].address(),
            static_address: if has_static {
                self.distances[1].address()
            } else {
                0
            },
            out_address: out.address(),
            count,
            pad: 0,
        };
        rec.begin_stage("points: deformation strength");
        rec.dispatch(&self.strength, &push, count.div_ceil(WORKGROUP_SIZE))?;
        rec.barrier_compute_to_compute();
        rec.end_stage();
        Ok(())
    }
}

/// The deformation strength of every point of `points`, the handles given as indices into it
/// (`active` at least one; `fixed` the static handles, possibly none), in one submission.
pub fn deformation_strength(
    ctx: &Context,
    points: &[[f32; 3]],
    active: &[u32],
    fixed: &[u32],
) -> Result<Vec<f32>> {
    if points.is_empty() {
        return Err(Error::InvalidInput("an empty point cloud".into()));
    }
    if let Some(&i) = active
        .iter()
        .chain(fixed)
        .find(|&&i| i as usize >= points.len())
    {
        return Err(Error::InvalidInput(format!(
            "handle point {i} of a cloud of {} points",
            points.len()
        )));
    }
    if let Some(i) = points.iter().position(|p| p.iter().any(|x| !x.is_finite())) {
        return Err(Error::InvalidInput(format!(
            "point {i} is not finite: {:?}",
            points[i]
        )));
    }
    let gather = |ids: &[u32]| -> Vec<[f32; 3]> {
        let mut chosen: Vec<[f32; 3]> = ids.iter().map(|&i| points[i as usize]).collect();
        // A buffer needs a byte; an empty handle is counted 0.
        if chosen.is_empty() {
            chosen.push([0.0; 3]);
        }
        chosen
    };
    let n = points.len() as u32;
    let largest = active.len().max(fixed.len()) as u32;
    let mut field = DeformationField::new(ctx, n, largest)?;
    let cloud = ctx.create_buffer_with("strength cloud", points)?;
    let active_points = ctx.create_buffer_with("active handle", &gather(active))?;
    let fixed_points = ctx.create_buffer_with("static handles", &gather(fixed))?;
    let strength = ctx.create_buffer("strength", n.max(1) as u64 * 4, MemoryKind::Device)?;
    let active_input = PointInput {
        positions: Slice::whole(&active_points),
        count: active.len() as u32,
    };
    let fixed_input = PointInput {
        positions: Slice::whole(&fixed_points),
        count: fixed.len() as u32,
    };
    ctx.submit_and_wait(|rec| {
        field.record(
            rec,
            &PointInput {
                positions: Slice::whole(&cloud),
                count: n,
            },
            &active_input,
            Some(&fixed_input),
            Slice::whole(&strength),
        )
    })?;
    ctx.download(&strength, 0, points.len())
}
