//! Neighbour queries on the GPU through a point kd-tree: k nearest neighbours, the nearest
//! neighbour (k = 1) and fixed-radius range queries, recordable into any command buffer, with
//! query counts on the host or the device. k nearest are found by one nearest-first walk per
//! query (`glsl/pointkd/knn_nearest.comp`, the default [`KnnSearch`]) or by seed 000's Alg. 6
//! (`glsl/pointkd/knn.comp`: histogram passes, then a gathering range search); radii and range
//! queries are Alg. 6's.
//!
//! Every query writes its `k` nearest indices and squared distances, sorted by squared distance
//! then index (the same order as [`super::cpu::knn_brute_force`], so answers are exact and
//! deterministic; squared distances are compared, not distances, so no square root rounds
//! them), `u32::MAX` and infinity past the points it found (k larger than the point count
//! returns every point), and a [`KnnFound`]: its final radius (at least the k-th neighbour's
//! distance: that distance rounded up for the nearest-first walk, within the histogram's
//! resolution of it for Alg. 6) and how many points it counted within it.

use super::{MAX_DEPTH, PointKdNode, PointKdTree};
use crate::geom::ray::MISS;
use crate::prims::{WORKGROUP_SIZE, check_count};
use crate::shaders;
use crate::vk::{
    Buffer, Context, Count, Error, Kernel, MemoryKind, Pipeline, Recorder, Result, Slice,
};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

/// The most neighbours one query returns (`K_MAX` in `knn.comp`).
pub const MAX_K: u32 = 64;

/// A starting radius that bounds nothing ([`KnnQueries::radius`]): the start of a
/// [`KnnSearch::NearestFirst`] search, whose list bounds its walk once it holds k points (a
/// tighter start, such as Alg. 7's radii, saves it no work worth their cost).
pub const UNBOUNDED: f32 = f32::MAX;

/// Push constants of `knn.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct KnnPush {
    /// Nodes.
    pub nodes_address: u64,
    /// The tree's [`PointKdHeader`].
    pub header_address: u64,
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
    /// [`KnnCounters`] to add to, or 0.
    pub counters_address: u64,
    /// Host query count.
    pub host_count: u32,
    /// Neighbours per query.
    pub k: u32,
    /// Starting radius when there is no radius per query (0: the tree's `R`).
    pub radius: f32,
    /// Bound of the search radius.
    pub max_radius: f32,
    /// Histogram iterations.
    pub niter: u32,
    /// Padding.
    pub pad: u32,
}

/// What a query found besides its neighbours (8 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct KnnFound {
    /// Points within `radius` (at least the neighbours returned): every one for Alg. 6's
    /// searches, the neighbours returned for [`KnnSearch::NearestFirst`].
    pub within: u32,
    /// The final search radius.
    pub radius: f32,
}

/// The work a batch of queries did, added up on the device (zero the buffer first).
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable, serde::Serialize,
)]
pub struct KnnCounters {
    /// Queries answered.
    pub queries: u64,
    /// Range searches walked (counting, histogram and gathering passes, and the doublings of
    /// a starting radius too small).
    pub range_searches: u64,
    /// Nodes whose box a search tested.
    pub nodes_tested: u64,
    /// Points whose distance a search computed.
    pub points_tested: u64,
}

/// A point kd-tree's header on the device (`PointKdHeader` in `glsl/pointkd/format.glsl`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct PointKdHeader {
    /// Nodes in the tree.
    pub node_count: u32,
    /// The query radius `R` its VVH priced.
    pub query_radius: f32,
    /// Points in the tree.
    pub point_count: u32,
    /// Padding.
    pub pad: u32,
}

/// Where [`PointKdHeader::point_count`] lies in the header.
const POINT_COUNT_OFFSET: u64 = std::mem::offset_of!(PointKdHeader, point_count) as u64;

/// A point kd-tree on the device: its nodes, its leaf entries (each point's position and
/// index, in leaf order, so a leaf's points are read together) and its header.
pub struct PointKdTreeGpu {
    /// Nodes, the root first.
    pub nodes: Buffer,
    /// Leaf entries: `[x, y, z, index bits]`.
    pub entries: Buffer,
    /// A [`PointKdHeader`], written by the build.
    pub header: Buffer,
    /// The last build's point count (its bound when counted on the device): set by the
    /// build's recording, which takes the tree shared.
    point_count: AtomicU32,
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
            header: ctx.create_buffer(
                "point kd-tree header",
                std::mem::size_of::<PointKdHeader>() as u64,
                MemoryKind::Device,
            )?,
            point_count: AtomicU32::new(0),
            capacity,
        })
    }

    /// The most points it holds.
    pub fn capacity(&self) -> u32 {
        self.capacity
    }

    pub(super) fn set_point_count(&self, count: u32) {
        self.point_count.store(count, Ordering::Relaxed);
    }

    /// The tree's point count on the device (its header's): the count of every-point queries.
    pub fn device_point_count(&self) -> Count<'_> {
        Count::Device {
            buffer: &self.header,
            offset: POINT_COUNT_OFFSET,
            max: self.point_count(),
        }
    }

    /// The tree read back: its nodes, its entries' point indices and its `R`.
    pub fn download(&self, ctx: &Context) -> Result<PointKdTree> {
        let header: PointKdHeader = ctx.download(&self.header, 0, 1)?[0];
        let points = header.point_count as usize;
        let entries: Vec<[f32; 4]> = ctx.download(&self.entries, 0, points)?;
        Ok(PointKdTree {
            nodes: ctx.download(&self.nodes, 0, header.node_count as usize)?,
            point_ids: entries.iter().map(|e| e[3].to_bits()).collect(),
            query_radius: header.query_radius,
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
        let header = PointKdHeader {
            node_count: nodes.len() as u32,
            query_radius: tree.query_radius,
            point_count: points.len() as u32,
            pad: 0,
        };
        Ok(Self {
            nodes: ctx.create_buffer_with("point kd-tree nodes", nodes)?,
            entries: ctx.create_buffer_with("point kd-tree entries", &entries)?,
            header: ctx.create_buffer_with("point kd-tree header", &[header])?,
            point_count: AtomicU32::new(points.len() as u32),
            capacity: points.len() as u32,
        })
    }

    /// Points in the tree (for a build over a count on the device, that count's bound).
    pub fn point_count(&self) -> u32 {
        self.point_count.load(Ordering::Relaxed)
    }
}

/// Query points and where each query's search starts.
#[derive(Clone, Copy, Debug)]
pub struct KnnQueries<'a> {
    /// Query positions; `None`: every point of the tree, answered at its index (the queries
    /// run in the tree's leaf order, so neighbouring invocations walk neighbouring paths; see
    /// [`Self::every_point`]).
    pub points: Option<Slice<'a, [f32; 3]>>,
    /// How many (for every point, [`PointKdTreeGpu::device_point_count`]).
    pub count: Count<'a>,
    /// A starting radius per query (per point index for every point; from
    /// [`super::radius::RadiusEstimator`] or a previous search); `None`: `radius` for every
    /// query.
    pub radii: Option<Slice<'a, f32>>,
    /// The starting radius when there is none per query; 0: the tree's `R` (the radius its
    /// VVH priced, [`PointKdHeader::query_radius`]); [`UNBOUNDED`]: none. Too small a radius
    /// is doubled until it holds k points (Alg. 6), or the walk runs again unbounded
    /// ([`KnnSearch::NearestFirst`]); too large a one costs time, not exactness.
    pub radius: f32,
}

impl<'a> KnnQueries<'a> {
    /// Every point of `tree` as a query, starting from `radii` (by point index) or the tree's
    /// `R`.
    pub fn every_point(tree: &'a PointKdTreeGpu, radii: Option<Slice<'a, f32>>) -> Self {
        Self {
            points: None,
            count: tree.device_point_count(),
            radii,
            radius: 0.0,
        }
    }

    /// Checks the queries against `tree`; returns the query positions' address (0 for every
    /// point).
    pub(super) fn check(&self, tree: &PointKdTreeGpu, what: &str) -> Result<u64> {
        let n = self.count.max() as u64;
        if let Some(radii) = &self.radii {
            radii.check(&format!("{what} radii"), n, 4)?;
        }
        match &self.points {
            Some(points) => {
                points.check(&format!("{what} queries"), n, 4)?;
                Ok(points.address())
            }
            None => match self.count {
                Count::Device { buffer, offset, .. }
                    if buffer.raw() == tree.header.raw() && offset == POINT_COUNT_OFFSET =>
                {
                    Ok(0)
                }
                _ => Err(Error::InvalidInput(format!(
                    "{what}: every point of the tree is counted by its header \
                     (KnnQueries::every_point), not {:?}",
                    self.count.max()
                ))),
            },
        }
    }
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
    /// Where to add the work done, if anywhere.
    pub counters: Option<Slice<'a, KnnCounters>>,
}

/// A starting radius must be finite and at least 0 (0: the tree's `R`).
fn check_starting_radius(queries: &KnnQueries) -> Result<()> {
    if queries.radius.is_finite() && queries.radius >= 0.0 {
        return Ok(());
    }
    Err(Error::InvalidInput(format!(
        "starting radius {}: a finite number of at least 0 (0: the tree's R)",
        queries.radius
    )))
}

/// Where one dispatch of `knn.comp` writes: neighbour lists (or none: radii only), what each
/// query found, the work counters; and the profile stage it is timed as.
struct Answers<'a> {
    lists: Option<(Slice<'a, u32>, Slice<'a, f32>)>,
    found: Slice<'a, KnnFound>,
    counters: Option<Slice<'a, KnnCounters>>,
    stage: &'a str,
}

/// How [`Knn::record`] and [`Knn::record_bounded`] find each query's k nearest. Both give
/// the same neighbours (exact, in the same order); they differ in time and in
/// [`KnnFound`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum KnnSearch {
    /// One walk per query, the nearer child first, bounded by the list's k-th distance once
    /// it is full (`knn_nearest.comp`). [`KnnFound::within`] is the neighbours found and
    /// [`KnnFound::radius`] the k-th one's distance (rounded up).
    #[default]
    NearestFirst,
    /// Seed 000's Alg. 6 (`knn.comp`): histogram passes narrow the starting radius to the k-th
    /// neighbour's, and a range search gathers the list. [`KnnFound::within`] counts every
    /// point within the narrowed radius.
    Histogram,
}

impl KnnSearch {
    /// Both searches.
    pub const ALL: [KnnSearch; 2] = [KnnSearch::NearestFirst, KnnSearch::Histogram];

    /// `nearest-first` or `histogram`.
    pub fn name(self) -> &'static str {
        match self {
            KnnSearch::NearestFirst => "nearest-first",
            KnnSearch::Histogram => "histogram",
        }
    }
}

impl std::str::FromStr for KnnSearch {
    type Err = String;

    fn from_str(text: &str) -> std::result::Result<Self, String> {
        KnnSearch::ALL
            .into_iter()
            .find(|s| s.name() == text.trim())
            .ok_or_else(|| format!("'{text}': expected nearest-first or histogram"))
    }
}

/// A kernel specialised for lists of 8, 16, 32 and 64 neighbours: a query keeps its list in
/// private memory, as small as k allows.
struct ListSizes(Vec<(u32, Arc<Pipeline>)>);

impl ListSizes {
    fn new(ctx: &Context, kernel: &Kernel) -> Result<Self> {
        let sizes = [8, 16, 32, MAX_K].into_iter().map(|size| {
            let pipeline = ctx.pipeline(kernel, WORKGROUP_SIZE, &[("K_MAX", size)])?;
            Ok((size, pipeline))
        });
        Ok(Self(sizes.collect::<Result<_>>()?))
    }

    /// The smallest list that holds `k`.
    fn holding(&self, k: u32) -> &Pipeline {
        let (_, pipeline) = self
            .0
            .iter()
            .find(|(size, _)| *size >= k)
            .expect("a list size holds every k up to MAX_K");
        pipeline
    }
}

/// The neighbour-query kernels.
pub struct Knn {
    /// Alg. 6 (`knn.comp`): radii, range queries, and lists under [`KnnSearch::Histogram`].
    histogram: ListSizes,
    /// Lists under [`KnnSearch::NearestFirst`] (`knn_nearest.comp`).
    nearest: ListSizes,
    /// Histogram iterations (the paper: 2).
    iterations: u32,
    /// How lists are searched.
    search: KnnSearch,
}

impl Knn {
    /// The queries with `iterations` histogram passes (the paper's `niter`: 2) where Alg. 6
    /// runs (radii, and lists under [`KnnSearch::Histogram`]); lists by the default
    /// [`KnnSearch`].
    pub fn new(ctx: &Context, iterations: u32) -> Result<Self> {
        Ok(Self {
            histogram: ListSizes::new(ctx, &shaders::POINTKD_KNN)?,
            nearest: ListSizes::new(ctx, &shaders::POINTKD_KNN_NEAREST)?,
            iterations,
            search: KnnSearch::default(),
        })
    }

    /// The same kernels, lists searched by `search`.
    pub fn with_search(self, search: KnnSearch) -> Self {
        Self { search, ..self }
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
        check_starting_radius(queries)?;
        let limits = (k, f32::INFINITY, self.iterations);
        self.record_search(rec, tree, queries, limits, out, self.lists())
    }

    /// Records the `k` nearest neighbours of every query within `max_radius` (a photon gather):
    /// as [`Self::record`], but the search radius never grows past `max_radius`, and a query
    /// with fewer than `k` points within it returns those.
    pub fn record_bounded(
        &self,
        rec: &mut Recorder,
        tree: &PointKdTreeGpu,
        queries: &KnnQueries,
        k: u32,
        max_radius: f32,
        out: &KnnOutput,
    ) -> Result<()> {
        check_starting_radius(queries)?;
        if !(max_radius > 0.0 && max_radius.is_finite()) {
            return Err(Error::InvalidInput(format!(
                "search radius bound {max_radius}: a finite positive number"
            )));
        }
        let limits = (k, max_radius, self.iterations);
        self.record_search(rec, tree, queries, limits, out, self.lists())
    }

    /// Records the k-th neighbour's radius of every query (at most `max_radius`, where fewer
    /// lie within it) into `found`, with no neighbour list: the search of [`Self::record`]
    /// without its lists. Under [`KnnSearch::NearestFirst`] the radius is the k-th distance
    /// rounded up; under [`KnnSearch::Histogram`] a radius holding `k` points, within the
    /// histogram's resolution of the k-th distance (the last pass counts instead of
    /// gathering).
    pub fn record_radii(
        &self,
        rec: &mut Recorder,
        tree: &PointKdTreeGpu,
        queries: &KnnQueries,
        (k, max_radius): (u32, f32),
        (found, counters): (Slice<KnnFound>, Option<Slice<KnnCounters>>),
    ) -> Result<()> {
        check_starting_radius(queries)?;
        if max_radius.is_nan() || max_radius <= 0.0 {
            return Err(Error::InvalidInput(format!(
                "search radius bound {max_radius}: a positive number (or infinity)"
            )));
        }
        let answers = Answers {
            lists: None,
            found,
            counters,
            stage: "knn: radii",
        };
        let limits = (k, max_radius, self.iterations);
        self.record_pass(rec, tree, queries, limits, answers, self.lists())
    }

    /// Records fixed-radius range queries: every point within `radius` of each query, the
    /// nearest `most` of them returned (1 to [`MAX_K`]) and all of them counted in
    /// [`KnnFound::within`].
    pub fn record_range(
        &self,
        rec: &mut Recorder,
        tree: &PointKdTreeGpu,
        queries: &KnnQueries,
        radius: f32,
        most: u32,
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
        // The gathering range search of Alg. 6 alone.
        self.record_search(rec, tree, &queries, (most, radius, 0), out, &self.histogram)
    }

    fn record_search(
        &self,
        rec: &mut Recorder,
        tree: &PointKdTreeGpu,
        queries: &KnnQueries,
        limits: (u32, f32, u32),
        out: &KnnOutput,
        kernel: &ListSizes,
    ) -> Result<()> {
        let answers = Answers {
            lists: Some((out.ids, out.distances2)),
            found: out.found,
            counters: out.counters,
            stage: "knn",
        };
        self.record_pass(rec, tree, queries, limits, answers, kernel)
    }

    /// The kernel that searches k-nearest lists.
    fn lists(&self) -> &ListSizes {
        match self.search {
            KnnSearch::NearestFirst => &self.nearest,
            KnnSearch::Histogram => &self.histogram,
        }
    }

    /// One dispatch of `kernel`: neighbour lists when given, else radii only.
    fn record_pass(
        &self,
        rec: &mut Recorder,
        tree: &PointKdTreeGpu,
        queries: &KnnQueries,
        (k, max_radius, niter): (u32, f32, u32),
        Answers {
            lists,
            found,
            counters,
            stage,
        }: Answers,
        kernel: &ListSizes,
    ) -> Result<()> {
        if !(1..=MAX_K).contains(&k) {
            return Err(Error::InvalidInput(format!(
                "{k} neighbours per query: 1 to {MAX_K}"
            )));
        }
        // Each query's list starts at its index times k, in 32 bits.
        check_count("knn", &queries.count, u32::MAX / k)?;
        let n = queries.count.max() as u64;
        let queries_address = queries.check(tree, "knn")?;
        if let Some((ids, distances2)) = &lists {
            ids.check("knn ids", n * k as u64, 4)?;
            distances2.check("knn distances", n * k as u64, 4)?;
        }
        found.check("knn found", n, 8)?;
        if let Some(counters) = &counters {
            counters.check("knn counters", 1, 8)?;
        }
        let (count_address, host_count) = queries.count.push();
        let push = KnnPush {
            nodes_address: tree.nodes.address(),
            header_address: tree.header.address(),
            entries_address: tree.entries.address(),
            queries_address,
            radii_address: queries.radii.as_ref().map_or(0, |r| r.address()),
            ids_address: lists.as_ref().map_or(0, |(ids, _)| ids.address()),
            distances_address: lists.as_ref().map_or(0, |(_, d)| d.address()),
            found_address: found.address(),
            count_address,
            counters_address: counters.as_ref().map_or(0, |c| c.address()),
            host_count,
            k,
            radius: queries.radius,
            max_radius,
            niter,
            pad: 0,
        };
        rec.begin_stage(stage);
        // Device counts over-launch to their bound: invocations past the count return at once.
        let groups = queries.count.max().div_ceil(WORKGROUP_SIZE);
        rec.dispatch(kernel.holding(k), &push, groups)?;
        rec.barrier_compute_to_compute();
        rec.end_stage();
        Ok(())
    }
}
