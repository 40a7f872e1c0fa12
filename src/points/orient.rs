//! Consistent orientation of a cloud's normals on the GPU (`glsl/points/orient.comp`): the
//! minimum spanning forest of the neighbour graph (Hoppe et al. 1992) grown by Borůvka's
//! algorithm, each point's sign carried along as a parity relative to its component, so that
//! no walk over the finished trees is needed. [`super::cpu::orient_normals`] grows the same
//! forest by Kruskal's algorithm (edges are totally ordered, so the forest is unique) and is
//! the reference the GPU result equals exactly.

use crate::geom::PointInput;
use crate::prims::WORKGROUP_SIZE;
use crate::shaders;
use crate::vk::{Buffer, Context, Error, MemoryKind, Pipeline, Recorder, Result, Slice};
use std::sync::Arc;

/// Push constants of `orient.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct OrientPush {
    /// Positions.
    pub positions_address: u64,
    /// Normal and density per point, oriented in place.
    pub normals_address: u64,
    /// k neighbour indices per point.
    pub ids_address: u64,
    /// Each edge's weight bits, the sign bit set where its normals point away.
    pub weights_address: u64,
    /// Each point's component.
    pub component_address: u64,
    /// Each point's parity relative to its component.
    pub parity_address: u64,
    /// Each representative's hook.
    pub parent_address: u64,
    /// Each hook's parity (then each representative's flip).
    pub link_address: u64,
    /// Each representative's lightest edge.
    pub lightest_address: u64,
    /// Each representative's highest point along an axis.
    pub top_address: u64,
    /// [`OrientStats`].
    pub stats_address: u64,
    /// Points.
    pub count: u32,
    /// Neighbours per point.
    pub k: u32,
    /// The Borůvka round (the axis while choosing signs).
    pub round: u32,
    /// Padding.
    pub pad: u32,
}

/// The most Borůvka rounds (`MAX_ROUNDS`): each round at least halves the components that
/// still have edges, so 32 rounds join any cloud of fewer than 2^31 points.
pub const MAX_ROUNDS: usize = 32;

/// What an orientation did (`OrientStats` in `orient.comp`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct OrientStats {
    /// Forest edges added per round.
    pub hooks: [u32; MAX_ROUNDS],
    /// Normals flipped.
    pub flipped: u32,
    /// Padding.
    pub pad: u32,
}

impl OrientStats {
    /// Rounds that joined components.
    pub fn rounds(&self) -> usize {
        self.hooks.iter().filter(|&&h| h > 0).count()
    }

    /// Edges of the spanning forest.
    pub fn forest_edges(&self) -> u64 {
        self.hooks.iter().map(|&h| h as u64).sum()
    }
}

/// The steps of `orient.comp`, in its `STEP` order.
const INIT: usize = 0;
const WEIGHTS: usize = 1;
const EDGES: usize = 2;
const HOOK: usize = 3;
const CYCLES: usize = 4;
const FLATTEN: usize = 5;
const EXTREMES: usize = 6;
const SIGN: usize = 7;
const APPLY: usize = 8;

/// The orientation of clouds of up to a given number of points.
pub struct NormalOrienter {
    steps: Vec<Arc<Pipeline>>,
    capacity: u32,
    component: Buffer,
    parity: Buffer,
    parent: Buffer,
    link: Buffer,
    lightest: Buffer,
    top: Buffer,
    stats: Buffer,
}

impl NormalOrienter {
    /// Room for clouds of up to `capacity` points.
    pub fn new(ctx: &Context, capacity: u32) -> Result<Self> {
        let n = capacity.max(1) as u64;
        let device = |name: &str, bytes: u64| ctx.create_buffer(name, bytes, MemoryKind::Device);
        Ok(Self {
            steps: (0..=APPLY as u32)
                .map(|step| {
                    ctx.pipeline(&shaders::POINTS_ORIENT, WORKGROUP_SIZE, &[("STEP", step)])
                })
                .collect::<Result<_>>()?,
            capacity,
            component: device("orient components", n * 4)?,
            parity: device("orient parities", n * 4)?,
            parent: device("orient hooks", n * 4)?,
            link: device("orient hook parities", n * 4)?,
            lightest: device("orient lightest edges", n * 8)?,
            top: device("orient extreme points", n * 8)?,
            stats: ctx.create_buffer(
                "orient stats",
                std::mem::size_of::<OrientStats>() as u64,
                MemoryKind::Device,
            )?,
        })
    }

    /// Records the orientation of the normals (`[nx, ny, nz, density]` per point, turned in
    /// place) of the points of `cloud`, over the graph of their `k` neighbours each in `ids`.
    /// `edge_weights` is scratch of a word per neighbour slot (`count * k`), written before it
    /// is read: the k-nearest search's squared distances may serve once nothing else reads
    /// them.
    pub fn record(
        &self,
        rec: &mut Recorder,
        cloud: &PointInput,
        ids: Slice<u32>,
        k: u32,
        normals: Slice<[f32; 4]>,
        edge_weights: Slice<u32>,
    ) -> Result<()> {
        let (positions, count) = (cloud.positions, cloud.count);
        if count > self.capacity || count as u64 * k as u64 >= 1 << 32 || k == 0 {
            return Err(Error::InvalidInput(format!(
                "orienting {count} points of {k} neighbours: at most {} points, 1 or more \
                 neighbours, fewer than 2^32 edges",
                self.capacity
            )));
        }
        positions.check("orient positions", count as u64, 4)?;
        ids.check("orient neighbours", count as u64 * k as u64, 4)?;
        edge_weights.check("orient edge weights", count as u64 * k as u64, 4)?;
        normals.check("orient normals", count as u64, 16)?;
        let mut push = OrientPush {
            positions_address: positions.address(),
            normals_address: normals.address(),
            ids_address: ids.address(),
            weights_address: edge_weights.address(),
            component_address: self.component.address(),
            parity_address: self.parity.address(),
            parent_address: self.parent.address(),
            link_address: self.link.address(),
            lightest_address: self.lightest.address(),
            top_address: self.top.address(),
            stats_address: self.stats.address(),
            count,
            k,
            round: 0,
            pad: 0,
        };
        let groups = count.div_ceil(WORKGROUP_SIZE);
        rec.begin_stage("points: orientation");
        rec.barrier_compute_to_transfer();
        rec.fill(&self.stats, 0, self.stats.size(), 0);
        rec.barrier_transfer_to_compute();
        for step in [INIT, WEIGHTS] {
            rec.dispatch(&self.steps[step], &push, groups)?;
            rec.barrier_compute_to_compute();
        }
        // Enough rounds to join every component (each at least halves those with edges);
        // rounds after the last join return at once.
        let rounds = (u32::BITS - count.max(1).leading_zeros() + 1).min(MAX_ROUNDS as u32);
        for round in 0..rounds {
            push.round = round;
            for step in [EDGES, HOOK, CYCLES, FLATTEN] {
                rec.dispatch(&self.steps[step], &push, groups)?;
                rec.barrier_compute_to_compute();
            }
        }
        for axis in 0..3 {
            push.round = axis;
            for step in [EXTREMES, SIGN] {
                rec.dispatch(&self.steps[step], &push, groups)?;
                rec.barrier_compute_to_compute();
            }
        }
        rec.dispatch(&self.steps[APPLY], &push, groups)?;
        rec.barrier_compute_to_compute();
        rec.end_stage();
        Ok(())
    }

    /// What the last recorded orientation did (after its submission completed).
    pub fn stats(&self, ctx: &Context) -> Result<OrientStats> {
        Ok(ctx.download(&self.stats, 0, 1)?[0])
    }
}
