//! The front door: blocking calls for one-off work, each a build or a query submitted and waited
//! for, with the answers read back.
//!
//! ```no_run
//! use canopy::{Accel, Context, ContextOptions, Mesh, PointCloud, Ray, StructureKind};
//!
//! # fn main() -> canopy::vk::Result<()> {
//! let ctx = Context::new(&ContextOptions::default())?;
//! let mesh = Mesh {
//!     positions: vec![[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]],
//!     triangles: vec![[0, 1, 2]],
//!     normals: Vec::new(),
//! };
//! let bvh = Accel::build(&ctx, StructureKind::Lbvh, &mesh)?;
//! let ray = Ray {
//!     origin: [0.2, 0.2, -1.0],
//!     tmin: 0.0,
//!     direction: [0.0, 0.0, 1.0],
//!     tmax: f32::INFINITY,
//! };
//! let hits = bvh.intersect(&[ray])?; // hits[0].t == 1.0, hits[0].triangle == 0
//! let blocked = bvh.occluded(&[ray])?; // [true]
//!
//! let cloud = PointCloud::build(&ctx, &mesh.positions)?;
//! let nearest = cloud.knn(&[[0.9, 0.1, 0.0]], 2)?; // vertex 1, then vertex 0
//! # let _ = (hits, blocked, nearest);
//! # Ok(())
//! # }
//! ```
//!
//! Applications that build every frame, keep several builds in flight or record into their own
//! command buffers use the recorded path these calls are made of: [`crate::accel`]'s structures
//! ([`StructureKind::create`]), [`crate::trace::Tracer`] and [`crate::accel::pointkd::knn`].

use crate::accel::pointkd::PointKdParams;
use crate::accel::pointkd::build::PointKdStructure;
use crate::accel::pointkd::knn::{Knn, KnnFound, KnnOutput, KnnQueries, MAX_K, UNBOUNDED};
use crate::accel::{
    BuildParams, PointStructure, RayStructure, StructureKind, StructureSize, submit_until_complete,
};
use crate::geom::ray::{Hit, MISS, Query, Ray};
use crate::geom::{PointInput, TriangleInput};
use crate::scene::Mesh;
use crate::trace::Tracer;
use crate::vk::{Buffer, Context, Count, Error, MemoryKind, Result, Slice};

/// An acceleration structure over a mesh's triangles, built once on the GPU, that rays are
/// traced through with blocking calls.
pub struct Accel<'c> {
    ctx: &'c Context,
    structure: Box<dyn RayStructure>,
    positions: Buffer,
    triangles: Buffer,
    triangle_count: u32,
    tracer: Tracer,
}

impl<'c> Accel<'c> {
    /// Builds `kind` over `mesh` with the default parameters and waits for it. `kind` must
    /// trace arbitrary rays: every triangle structure but the screen grid, which is built
    /// for one view's camera rays. A mesh with no triangles builds a structure every ray
    /// misses. Refused: indices past the last vertex, coordinates that are not finite.
    pub fn build(ctx: &'c Context, kind: StructureKind, mesh: &Mesh) -> Result<Self> {
        if !kind.traceable() || kind.needs_view() {
            return Err(Error::InvalidInput(format!(
                "{kind}: not a structure arbitrary rays are traced through (one of {})",
                traceable_kinds()
            )));
        }
        check_mesh(mesh)?;
        // Buffers of one element where the mesh has none: a build over no triangles.
        let positions = match mesh.positions.is_empty() {
            true => &[[0.0; 3]][..],
            false => &mesh.positions[..],
        };
        let triangles = match mesh.triangles.is_empty() {
            true => &[[0; 3]][..],
            false => &mesh.triangles[..],
        };
        let positions = ctx.create_buffer_with("accel positions", positions)?;
        let triangles = ctx.create_buffer_with("accel triangles", triangles)?;
        let triangle_count = mesh.triangles.len() as u32;
        let size = StructureSize {
            triangles: triangle_count.max(1),
            vertices: (mesh.positions.len() as u32).max(1),
        };
        let mut structure = kind
            .create(ctx, &BuildParams::default(), size, 1)?
            .into_rays()?;
        let input = TriangleInput::whole(&positions, &triangles, triangle_count);
        submit_until_complete(ctx, structure.as_mut(), |rec, s| {
            s.record_build(rec, &input, 0)
        })?;
        Ok(Self {
            ctx,
            structure,
            tracer: Tracer::new(ctx)?,
            positions,
            triangles,
            triangle_count,
        })
    }

    /// The closest hit of each ray (`triangle` [`MISS`] where it hits nothing).
    pub fn intersect(&self, rays: &[Ray]) -> Result<Vec<Hit>> {
        self.trace(rays, Query::Closest)
    }

    /// Whether each ray hits anything between its `tmin` and `tmax` (shadow rays).
    pub fn occluded(&self, rays: &[Ray]) -> Result<Vec<bool>> {
        let hits = self.trace(rays, Query::Any)?;
        Ok(hits.iter().map(|h| h.triangle != MISS).collect())
    }

    fn trace(&self, rays: &[Ray], query: Query) -> Result<Vec<Hit>> {
        if rays.is_empty() {
            return Ok(Vec::new());
        }
        let count = u32::try_from(rays.len())
            .map_err(|_| Error::InvalidInput(format!("{} rays: at most 2^32 - 1", rays.len())))?;
        let ctx = self.ctx;
        let ray_buffer = ctx.create_buffer_with("accel rays", rays)?;
        let hit_bytes = rays.len() as u64 * std::mem::size_of::<Hit>() as u64;
        let hits = ctx.create_buffer("accel hits", hit_bytes, MemoryKind::Device)?;
        let input = TriangleInput::whole(&self.positions, &self.triangles, self.triangle_count);
        let tree = self.structure.traversable(&input);
        ctx.submit_and_wait(|rec| {
            let (rays, hits) = (Slice::whole(&ray_buffer), Slice::whole(&hits));
            (self.tracer).record(rec, tree.as_ref(), query, rays, hits, Count::Host(count))
        })?;
        ctx.download(&hits, 0, rays.len())
    }
}

/// A point cloud's VVH point kd-tree ([`crate::accel::pointkd`]), built once on the GPU, that
/// neighbour queries run through with blocking calls.
pub struct PointCloud<'c> {
    ctx: &'c Context,
    points: Vec<[f32; 3]>,
    positions: Buffer,
    tree: PointKdStructure,
    knn: Knn,
}

/// The `k` nearest points of each query, nearest first.
#[derive(Clone, Debug, PartialEq)]
pub struct Neighbours {
    /// Neighbours per query.
    pub k: usize,
    /// `k` point indices per query; [`MISS`] past the last found, where the cloud has fewer
    /// than `k` points.
    pub ids: Vec<u32>,
    /// Their squared distances, `k` per query (infinite past the last found).
    pub distances2: Vec<f32>,
}

impl Neighbours {
    /// The indices of query `query`'s neighbours found, nearest first.
    pub fn of(&self, query: usize) -> &[u32] {
        let all = &self.ids[query * self.k..(query + 1) * self.k];
        let found = all.iter().position(|&id| id == MISS).unwrap_or(self.k);
        &all[..found]
    }
}

impl<'c> PointCloud<'c> {
    /// Builds the point kd-tree over `points` and waits for it. Refused: no points,
    /// coordinates that are not finite, 2^29 points or more.
    pub fn build(ctx: &'c Context, points: &[[f32; 3]]) -> Result<Self> {
        if points.is_empty() {
            return Err(Error::InvalidInput("an empty point cloud".into()));
        }
        check_finite(points, "point")?;
        let count = u32::try_from(points.len())
            .map_err(|_| Error::InvalidInput(format!("{} points: too many", points.len())))?;
        let positions = ctx.create_buffer_with("cloud points", points)?;
        let mut tree = PointKdStructure::new(ctx, PointKdParams::default(), count)?;
        let input = PointInput {
            positions: Slice::whole(&positions),
            count,
        };
        submit_until_complete(ctx, &mut tree, |rec, tree| {
            tree.record_build(rec, &input, 0)
        })?;
        Ok(Self {
            ctx,
            points: points.to_vec(),
            positions,
            tree,
            knn: Knn::new(ctx, 2)?,
        })
    }

    /// The `k` nearest points (1 to [`MAX_K`]) of each of `queries`, exact: ties go to the
    /// lower index, as a brute-force search orders them.
    pub fn knn(&self, queries: &[[f32; 3]], k: u32) -> Result<Neighbours> {
        if !(1..=MAX_K).contains(&k) {
            return Err(Error::InvalidInput(format!(
                "k = {k}: 1 to {MAX_K} neighbours"
            )));
        }
        check_finite(queries, "query")?;
        let slots = queries.len() * k as usize;
        if queries.is_empty() {
            return Ok(Neighbours {
                k: k as usize,
                ids: Vec::new(),
                distances2: Vec::new(),
            });
        }
        let count = u32::try_from(queries.len())
            .map_err(|_| Error::InvalidInput(format!("{} queries: too many", queries.len())))?;
        let ctx = self.ctx;
        let query_buffer = ctx.create_buffer_with("knn queries", queries)?;
        let ids = ctx.create_buffer("knn ids", slots as u64 * 4, MemoryKind::Device)?;
        let distances = ctx.create_buffer("knn distances", slots as u64 * 4, MemoryKind::Device)?;
        let found_bytes = queries.len() as u64 * std::mem::size_of::<KnnFound>() as u64;
        let found = ctx.create_buffer("knn found", found_bytes, MemoryKind::Device)?;
        let output = KnnOutput {
            ids: Slice::whole(&ids),
            distances2: Slice::whole(&distances),
            found: Slice::whole(&found),
            counters: None,
        };
        let queries = KnnQueries {
            points: Some(Slice::whole(&query_buffer)),
            count: Count::Host(count),
            radii: None,
            radius: UNBOUNDED,
        };
        ctx.submit_and_wait(|rec| (self.knn).record(rec, self.tree.tree(), &queries, k, &output))?;
        Ok(Neighbours {
            k: k as usize,
            ids: ctx.download(&ids, 0, slots)?,
            distances2: ctx.download(&distances, 0, slots)?,
        })
    }

    /// Each point's unit normal, from a principal component analysis of its `k` nearest
    /// neighbours (3 to [`MAX_K`]), oriented consistently over the neighbour graph; zero
    /// where a point has fewer than three distinct neighbours. This is
    /// [`crate::points::analyse`], which builds a tree of its own over the cloud centred and
    /// scaled to unit size.
    pub fn normals(&self, k: u32) -> Result<Vec<[f32; 3]>> {
        Ok(crate::points::analyse(self.ctx, &self.points, k)?.normals)
    }

    /// The device buffer of the cloud's points (e.g. for recorded queries of one's own).
    pub fn positions(&self) -> &Buffer {
        &self.positions
    }
}

/// The structures [`Accel::build`] accepts, for its error.
fn traceable_kinds() -> String {
    let kinds: Vec<&str> = StructureKind::ALL
        .into_iter()
        .filter(|k| k.traceable() && !k.needs_view())
        .map(StructureKind::name)
        .collect();
    kinds.join(", ")
}

/// Refuses a mesh whose indices reach past its vertices or whose coordinates are not finite.
fn check_mesh(mesh: &Mesh) -> Result<()> {
    if let Some(v) = mesh.first_non_finite_vertex() {
        return Err(Error::InvalidInput(format!(
            "vertex {v}: coordinates {:?} are not all finite",
            mesh.positions[v]
        )));
    }
    match mesh.first_triangle_past_the_vertices() {
        Some(t) => Err(Error::InvalidInput(format!(
            "triangle {t}: indices {:?} reach past the last of {} vertices",
            mesh.triangles[t],
            mesh.positions.len()
        ))),
        None => Ok(()),
    }
}

fn check_finite(points: &[[f32; 3]], what: &str) -> Result<()> {
    match points.iter().position(|p| p.iter().any(|x| !x.is_finite())) {
        Some(i) => Err(Error::InvalidInput(format!(
            "{what} {i}: coordinates {:?} are not all finite",
            points[i]
        ))),
        None => Ok(()),
    }
}
