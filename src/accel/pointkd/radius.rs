//! Starting radii for neighbour queries (seed 000 Appendix A, Alg. 7): an Alg. 6 search that
//! starts from a radius close above the k-th neighbour's distance counts few points and never
//! has to double, so a good `r0` per query is most of a fast histogram search (the photon
//! gathers' radii, [`super::knn::KnnSearch::Histogram`]). The nearest-first search bounds its
//! walk by its own list and gains too little from them to pay for them.
//!
//! [`RadiusEstimator::record_precompute`] (PRECOMPUTERADIUS, once per tree and `k`) chooses
//! the top nodes of a work list, with their descendants down to `levels` levels, and finds the
//! k-th neighbour radius `R_i` of each one's box centre `C_i` by the search itself (from a
//! radius short of it, from the node's box and point count).
//! [`RadiusEstimator::record_estimate`] (ESTIMATERADIUS) then gives each query `q` the least `|q - C_i| + R_i` over the chosen nodes on its path from the
//! root: the ball about `C_i` holds k points and lies inside the ball of that radius about
//! `q`, so the estimate is never below the k-th neighbour's distance, for any query. Every
//! path to a leaf with points meets a chosen node (a leaf too large to be a top node is chosen
//! alone), and a path whose side of a split is empty (an empty-space cut, where queries away
//! from the cloud often go) takes the other side, so every query gets an estimate.
//!
//! The paper's top nodes are those below `alpha R` across (`alpha` 0.5) under a parent that is
//! not, with `R` a conservative radius from the least density that matters. canopy chooses by
//! point count instead, the nodes of at most [`RadiusParams::top_points`] points under a
//! parent of more: a count follows the local density, where one radius for the whole cloud
//! chooses whole clusters of a clustered cloud (and nearly every node of a uniform one when
//! `R` is the mean density's).

use super::knn::{Knn, KnnCounters, KnnQueries, PointKdTreeGpu};
use crate::prims::WORKGROUP_SIZE;
use crate::shaders;
use crate::vk::{Buffer, Context, Count, Error, MemoryKind, Pipeline, Recorder, Result, Slice};
use std::sync::Arc;

/// Push constants of `radius_select.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct RadiusSelectPush {
    /// Nodes.
    pub nodes_address: u64,
    /// The tree's header.
    pub header_address: u64,
    /// Out: chosen nodes' centres.
    pub centres_address: u64,
    /// Out: chosen nodes' indices.
    pub chosen_address: u64,
    /// Out: how many were chosen.
    pub count_address: u64,
    /// Out: chosen nodes' starting radii.
    pub radii_address: u64,
    /// [`RadiusParams::top_points`].
    pub top_points: u32,
    /// [`RadiusParams::levels`].
    pub levels: u32,
    /// Neighbours per query.
    pub k: u32,
    /// Padding.
    pub pad: u32,
}

/// Push constants of `radius_store.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct RadiusStorePush {
    /// Chosen nodes' indices.
    pub chosen_address: u64,
    /// Their [`super::knn::KnnFound`].
    pub found_address: u64,
    /// Out: `R_i` per node.
    pub radii_address: u64,
    /// How many were chosen.
    pub count_address: u64,
}

/// Push constants of `radius_estimate.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct RadiusEstimatePush {
    /// Nodes.
    pub nodes_address: u64,
    /// The tree's header.
    pub header_address: u64,
    /// `R_i` per node.
    pub node_radii_address: u64,
    /// The tree's entries.
    pub entries_address: u64,
    /// Query positions, or 0: the tree's points.
    pub queries_address: u64,
    /// Out: `r0` per query.
    pub radii_address: u64,
    /// Device query count, or 0.
    pub count_address: u64,
    /// Host query count.
    pub host_count: u32,
    /// Padding to 8 bytes.
    pub pad: u32,
}

/// Which nodes PRECOMPUTERADIUS queries.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RadiusParams {
    /// The most points of a top node (under a parent of more); `None`: `4k`, at least 64.
    pub top_points: Option<u32>,
    /// Levels chosen from each top node down, itself included (1 to 4; the paper's `nlevel`).
    pub levels: u32,
}

impl Default for RadiusParams {
    /// Top nodes of up to `4k` points (at least 64) and 3 levels (the paper's `nlevel`): the
    /// deepest chosen nodes hold about `k / 2` points, small enough that a point lies close to
    /// their centre, large enough that there are about 2 node queries per `k` points
    /// (`canopy bench knn` reports both the estimates and the node queries).
    fn default() -> Self {
        Self {
            top_points: None,
            levels: 3,
        }
    }
}

/// PRECOMPUTERADIUS and ESTIMATERADIUS for trees of up to a given number of nodes.
pub struct RadiusEstimator {
    params: RadiusParams,
    select: Arc<Pipeline>,
    store: Arc<Pipeline>,
    estimate: Arc<Pipeline>,
    node_capacity: u32,
    centres: Buffer,
    starts: Buffer,
    chosen: Buffer,
    count: Buffer,
    found: Buffer,
    node_radii: Buffer,
}

impl RadiusEstimator {
    /// An estimator for trees of up to `node_capacity` nodes
    /// ([`super::build::PointKdBuilder::max_nodes`]).
    pub fn new(ctx: &Context, params: RadiusParams, node_capacity: u32) -> Result<Self> {
        if params.top_points == Some(0) || !(1..=4).contains(&params.levels) {
            return Err(Error::InvalidInput(format!(
                "starting radii: top nodes of {:?} points (at least 1) and {} levels (1 to 4)",
                params.top_points, params.levels
            )));
        }
        let n = node_capacity.max(1) as u64;
        let device = |name: &str, bytes: u64| ctx.create_buffer(name, bytes, MemoryKind::Device);
        Ok(Self {
            params,
            select: ctx.pipeline(&shaders::POINTKD_RADIUS_SELECT, WORKGROUP_SIZE, &[])?,
            store: ctx.pipeline(&shaders::POINTKD_RADIUS_STORE, WORKGROUP_SIZE, &[])?,
            estimate: ctx.pipeline(&shaders::POINTKD_RADIUS_ESTIMATE, WORKGROUP_SIZE, &[])?,
            node_capacity: n as u32,
            centres: device("radius node centres", n * 12)?,
            starts: device("radius node starting radii", n * 4)?,
            chosen: device("radius chosen nodes", n * 4)?,
            count: device("radius chosen count", 4)?,
            found: device("radius node found", n * 8)?,
            node_radii: device("radius per node", n * 4)?,
        })
    }

    /// The buffer holding how many nodes the last precompute chose (one `u32`).
    pub fn chosen_count(&self) -> &Buffer {
        &self.count
    }

    /// Records PRECOMPUTERADIUS for `k` neighbours over `tree` (after its build), the node
    /// queries answered by `knn` (their work added to `counters` when given).
    pub fn record_precompute(
        &self,
        rec: &mut Recorder,
        knn: &Knn,
        tree: &PointKdTreeGpu,
        k: u32,
        counters: Option<Slice<KnnCounters>>,
    ) -> Result<()> {
        if tree.nodes.size() > self.node_capacity as u64 * 32 {
            return Err(Error::InvalidInput(format!(
                "starting radii for a tree of up to {} nodes: the estimator holds {}",
                tree.nodes.size() / 32,
                self.node_capacity
            )));
        }
        rec.begin_stage("knn: node radii");
        rec.barrier_compute_to_transfer();
        rec.fill(&self.count, 0, 4, 0);
        rec.fill(
            &self.node_radii,
            0,
            self.node_radii.size(),
            f32::INFINITY.to_bits(),
        );
        rec.barrier_transfer_to_compute();
        let groups = self.node_capacity.div_ceil(WORKGROUP_SIZE);
        let select = RadiusSelectPush {
            nodes_address: tree.nodes.address(),
            header_address: tree.header.address(),
            centres_address: self.centres.address(),
            chosen_address: self.chosen.address(),
            count_address: self.count.address(),
            radii_address: self.starts.address(),
            top_points: self.params.top_points.unwrap_or((4 * k).max(64)),
            levels: self.params.levels,
            k,
            pad: 0,
        };
        rec.dispatch(&self.select, &select, groups)?;
        rec.barrier_compute_to_compute();
        let queries = KnnQueries {
            points: Some(Slice::whole(&self.centres)),
            count: Count::Device {
                buffer: &self.count,
                offset: 0,
                max: self.node_capacity,
            },
            radii: Some(Slice::whole(&self.starts)),
            radius: 0.0,
        };
        let found = Slice::whole(&self.found);
        knn.record_radii(rec, tree, &queries, (k, f32::INFINITY), (found, counters))?;
        let store = RadiusStorePush {
            chosen_address: self.chosen.address(),
            found_address: self.found.address(),
            radii_address: self.node_radii.address(),
            count_address: self.count.address(),
        };
        rec.dispatch(&self.store, &store, groups)?;
        rec.barrier_compute_to_compute();
        rec.end_stage();
        Ok(())
    }

    /// Records ESTIMATERADIUS: a starting radius for each of `queries` into their `radii`
    /// (which must be given), from the last precompute over the same tree.
    pub fn record_estimate(
        &self,
        rec: &mut Recorder,
        tree: &PointKdTreeGpu,
        queries: &KnnQueries,
    ) -> Result<()> {
        crate::prims::check_count("starting radii", &queries.count, u32::MAX)?;
        let queries_address = queries.check(tree, "starting radii")?;
        let Some(radii) = &queries.radii else {
            return Err(Error::InvalidInput(
                "starting radii: the queries have no radii to write".into(),
            ));
        };
        let count = queries.count;
        let (count_address, host_count) = count.push();
        let push = RadiusEstimatePush {
            nodes_address: tree.nodes.address(),
            header_address: tree.header.address(),
            node_radii_address: self.node_radii.address(),
            entries_address: tree.entries.address(),
            queries_address,
            radii_address: radii.address(),
            count_address,
            host_count,
            pad: 0,
        };
        rec.begin_stage("knn: starting radii");
        rec.dispatch(&self.estimate, &push, count.max().div_ceil(WORKGROUP_SIZE))?;
        rec.barrier_compute_to_compute();
        rec.end_stage();
        Ok(())
    }
}
