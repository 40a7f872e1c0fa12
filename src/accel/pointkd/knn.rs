//! Neighbour queries on the GPU through a point kd-tree (`glsl/pointkd/knn.comp`, seed 000
//! Alg. 6): k nearest neighbours, the nearest neighbour (k = 1) and fixed-radius range queries,
//! recordable into any command buffer, with query counts on the host or the device.
//!
//! Every query writes its `k` nearest indices and squared distances, sorted by squared distance
//! then index (the same order as [`super::cpu::knn_brute_force`], so answers are exact and
//! deterministic; squared distances are compared, not distances, so no square root rounds
//! them), `u32::MAX` and infinity past the points it found (k larger than the point count
//! returns every point), and a [`KnnFound`]: how many points lie within its final radius, and
//! that radius (the k-th neighbour's distance, narrowed to within the histogram's resolution).

use super::{MAX_DEPTH, PointKdNode, PointKdTree};
use crate::geom::ray::MISS;
use crate::prims::{WORKGROUP_SIZE, check_count};
use crate::shaders;
use crate::vk::{Buffer, Context, Count, Error, MemoryKind, Pipeline, Recorder, Result, Slice};
use std::sync::Arc;

/// The most neighbours one query returns (`K_MAX` in `knn.comp`).
pub const MAX_K: u32 = 64;

/// Push constants of `knn.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct KnnPush {
    /// Nodes.
    pub nodes_address: u64,
    /// Leaf entries (position, index bits).
    pub entries_address: u64,
    /// Query positions.
    pub queries_address: u64,
    /// Starting radius per query, or 0.
    pub radii_address: u64,
    /// Out: indices.
    pub ids_address: u64,
    /// Out: squared distances.
    pub distances_address: u64,
    /// Out: [`KnnFound`] per query.
    pub found_address: u64,
    /// Device query count, or 0.
    pub count_address: u64,
    /// Host query count.
    pub host_count: u32,
    /// Neighbours per query.
    pub k: u32,
    /// Starting radius when there is no radius per query.
    pub radius: f32,
    /// Bound of the search radius.
    pub max_radius: f32,
    /// Histogram iterations.
    pub niter: u32,
    /// Points in the tree.
    pub point_count: u32,
}

/// What a query found besides its neighbours (8 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct KnnFound {
    /// Points within `radius` (at least the neighbours returned).
    pub within: u32,
    /// The final search radius.
    pub radius: f32,
}

/// A point kd-tree on the device: its nodes and its leaf entries (each point's position and
/// index, in leaf order, so a leaf's points are read together).
pub struct PointKdTreeGpu {
    /// Nodes, the root first.
    pub nodes: Buffer,
    /// Leaf entries: `[x, y, z, index bits]`.
    pub entries: Buffer,
    point_count: u32,
    capacity: u32,
}

impl PointKdTreeGpu {
    /// Room for a tree over up to `capacity` points, for [`super::build::PointKdBuilder`]
    /// with `large_node` as its `T`.
    pub fn new(ctx: &Context, capacity: u32, large_node: u32) -> Result<Self> {
        let nodes = super::build::PointKdBuilder::max_nodes(capacity, large_node) as u64;
        Ok(Self {
            nodes: ctx.create_buffer("point kd-tree nodes", nodes * 32, MemoryKind::Device)?,
            entries: ctx.create_buffer(
                "point kd-tree entries",
                capacity.max(1) as u64 * 16,
                MemoryKind::Device,
            )?,
            point_count: 0,
            capacity,
        })
    }

    /// The most points it holds.
    pub fn capacity(&self) -> u32 {
        self.capacity
    }

    pub(super) fn set_point_count(&mut self, count: u32) {
        self.point_count = count;
    }

    /// The tree read back: its first `node_count` nodes (the builder's status says how many)
    /// and its entries' point indices.
    pub fn download(&self, ctx: &Context, node_count: u32) -> Result<PointKdTree> {
        let entries: Vec<[f32; 4]> = ctx.download(&self.entries, 0, self.point_count as usize)?;
        Ok(PointKdTree {
            nodes: ctx.download(&self.nodes, 0, node_count as usize)?,
            point_ids: entries.iter().map(|e| e[3].to_bits()).collect(),
        })
    }

    /// Uploads `tree`, built over `points`. Trees deeper than [`MAX_DEPTH`] are refused.
    pub fn upload(ctx: &Context, tree: &PointKdTree, points: &[[f32; 3]]) -> Result<Self> {
        if tree.point_ids.len() != points.len() {
            return Err(Error::InvalidInput(format!(
                "a point kd-tree of {} points over {} points",
                tree.point_ids.len(),
                points.len()
            )));
        }
        let depth = super::cpu::check(points, tree)
            .map_err(Error::InvalidInput)?
            .depth;
        if depth > MAX_DEPTH {
            return Err(Error::InvalidInput(format!(
                "point kd-tree of depth {depth}: queries walk at most {MAX_DEPTH}"
            )));
        }
        let mut entries: Vec<[f32; 4]> = tree
            .point_ids
            .iter()
            .map(|&i| {
                let p = points[i as usize];
                [p[0], p[1], p[2], f32::from_bits(i)]
            })
            .collect();
        if entries.is_empty() {
            entries.push([0.0, 0.0, 0.0, f32::from_bits(MISS)]);
        }
        let nodes: &[PointKdNode] = &tree.nodes;
        Ok(Self {
            nodes: ctx.create_buffer_with("point kd-tree nodes", nodes)?,
            entries: ctx.create_buffer_with("point kd-tree entries", &entries)?,
            point_count: points.len() as u32,
            capacity: points.len() as u32,
        })
    }

    /// Points in the tree.
    pub fn point_count(&self) -> u32 {
        self.point_count
    }
}

/// Query points and where each query's search starts.
#[derive(Clone, Copy, Debug)]
pub struct KnnQueries<'a> {
    /// Query positions.
    pub points: Slice<'a, [f32; 3]>,
    /// How many.
    pub count: Count<'a>,
    /// A starting radius per query (from [`super::cpu::query_radius`] or a previous search);
    /// `None`: `radius` for every query.
    pub radii: Option<Slice<'a, f32>>,
    /// The starting radius when there is none per query. Too small a radius is doubled until
    /// it holds k points; too large a one costs time, not exactness.
    pub radius: f32,
}

/// Where the answers go: `k` entries per query in `ids` and `distances2`, one [`KnnFound`]
/// per query in `found`.
#[derive(Clone, Copy, Debug)]
pub struct KnnOutput<'a> {
    /// Neighbour indices.
    pub ids: Slice<'a, u32>,
    /// Their squared distances.
    pub distances2: Slice<'a, f32>,
    /// Points within the final radius, and the radius.
    pub found: Slice<'a, KnnFound>,
}

/// The neighbour-query kernel.
pub struct Knn {
    /// The kernel specialised for lists of 8, 16, 32 and 64 neighbours: a query keeps its
    /// list in private memory, which the smaller sizes keep in registers.
    pipelines: Vec<(u32, Arc<Pipeline>)>,
    /// Histogram iterations (the paper: 2).
    iterations: u32,
}

impl Knn {
    /// The queries of Alg. 6 with `iterations` histogram passes (the paper's `niter`: 2).
    pub fn new(ctx: &Context, iterations: u32) -> Result<Self> {
        Ok(Self {
            pipelines: [8, 16, 32, MAX_K]
                .into_iter()
                .map(|size| {
                    let pipeline =
                        ctx.pipeline(&shaders::POINTKD_KNN, WORKGROUP_SIZE, &[("K_MAX", size)])?;
                    Ok((size, pipeline))
                })
                .collect::<Result<_>>()?,
            iterations,
        })
    }

    /// Records the `k` nearest neighbours (1 to [`MAX_K`]) of every query.
    pub fn record(
        &self,
        rec: &mut Recorder,
        tree: &PointKdTreeGpu,
        queries: &KnnQueries,
        k: u32,
        out: &KnnOutput,
    ) -> Result<()> {
        let usable = queries.radius.is_finite() && queries.radius > 0.0;
        if !usable && queries.radii.is_none() {
            return Err(Error::InvalidInput(format!(
                "starting radius {}: a finite positive number",
                queries.radius
            )));
        }
        self.record_search(rec, tree, queries, (k, f32::INFINITY, self.iterations), out)
    }

    /// Records fixed-radius range queries: every point within `radius` of each query, the
    /// nearest `most` of them returned (1 to [`MAX_K`]) and all of them counted in
    /// [`KnnFound::within`].
    pub fn record_range(
        &self,
        rec: &mut Recorder,
        tree: &PointKdTreeGpu,
        queries: &KnnQueries,
        (radius, most): (f32, u32),
        out: &KnnOutput,
    ) -> Result<()> {
        if !(radius >= 0.0 && radius.is_finite()) {
            return Err(Error::InvalidInput(format!(
                "range query of radius {radius}: a finite radius of at least 0"
            )));
        }
        let queries = KnnQueries {
            radii: None,
            radius,
            ..*queries
        };
        self.record_search(rec, tree, &queries, (most, radius, 0), out)
    }

    fn record_search(
        &self,
        rec: &mut Recorder,
        tree: &PointKdTreeGpu,
        queries: &KnnQueries,
        (k, max_radius, niter): (u32, f32, u32),
        out: &KnnOutput,
    ) -> Result<()> {
        if !(1..=MAX_K).contains(&k) {
            return Err(Error::InvalidInput(format!(
                "{k} neighbours per query: 1 to {MAX_K}"
            )));
        }
        check_count("knn", &queries.count, u32::MAX / MAX_K)?;
        let n = queries.count.max() as u64;
        queries.points.check("knn queries", n, 4)?;
        if let Some(radii) = &queries.radii {
            radii.check("knn radii", n, 4)?;
        }
        out.ids.check("knn ids", n * k as u64, 4)?;
        out.distances2.check("knn distances", n * k as u64, 4)?;
        out.found.check("knn found", n, 8)?;
        let (count_address, host_count) = queries.count.push();
        let push = KnnPush {
            nodes_address: tree.nodes.address(),
            entries_address: tree.entries.address(),
            queries_address: queries.points.address(),
            radii_address: queries.radii.as_ref().map_or(0, |r| r.address()),
            ids_address: out.ids.address(),
            distances_address: out.distances2.address(),
            found_address: out.found.address(),
            count_address,
            host_count,
            k,
            radius: queries.radius,
            max_radius,
            niter,
            point_count: tree.point_count,
        };
        rec.begin_stage("knn");
        // Device counts over-launch to their bound: invocations past the count return at once.
        let groups = queries.count.max().div_ceil(WORKGROUP_SIZE);
        let (_, pipeline) = self
            .pipelines
            .iter()
            .find(|(size, _)| *size >= k)
            .expect("a list size holds every k up to MAX_K");
        rec.dispatch(pipeline, &push, groups)?;
        rec.barrier_compute_to_compute();
        rec.end_stage();
        Ok(())
    }
}
