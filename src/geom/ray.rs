//! Rays and hits as the GPU stores them ([`Ray`], [`Hit`], [`RayWork`]), the watertight
//! ray/triangle test, the slab test and brute-force queries: the reference every structure's
//! traversal is checked against.
//!
//! The triangle test is Woop, Benthin and Wald's watertight test ("Watertight Ray/Triangle
//! Intersection", JCGT 2(1), 2013): rays that pass exactly through a shared edge or vertex
//! hit at least one of the triangles sharing it, so closed meshes never let a ray through.
//! GPU kernels (`glsl/common/ray.glsl`) mirror [`intersect_triangle`] operation for operation,
//! in the same order, with the arithmetic marked `precise` so that the shader compiler neither
//! fuses nor reorders it; they skip the f64 fallback (shaderFloat64 is optional) and their
//! divisions may round differently (SPIR-V allows 2.5 ulp), so hits agree up to rounding.
//!
//! Closest-hit queries break ties in `t` by the smallest triangle index, so a structure's
//! traversal returns exactly the brute-force [`Hit`].

use crate::geom::aabb::Bounds;

/// The triangle id of a [`Hit`] that hit nothing.
pub const MISS: u32 = u32::MAX;

/// A ray as the GPU reads it: hits count only for `tmin < t < tmax`. 32 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Ray {
    /// Origin.
    pub origin: [f32; 3],
    /// Nearest distance counted, in units of `direction`.
    pub tmin: f32,
    /// Direction (need not be normalised).
    pub direction: [f32; 3],
    /// Farthest distance counted.
    pub tmax: f32,
}

/// A ray's hit: distance, triangle ([`MISS`] for none, then `t == tmax`) and the
/// barycentric weights `u` of the triangle's second vertex and `v` of its third, so the hit
/// point is `(1 - u - v) a + u b + v c`. 16 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Hit {
    /// Distance along the ray.
    pub t: f32,
    /// Triangle id, or [`MISS`].
    pub triangle: u32,
    /// Weight of the second vertex.
    pub u: f32,
    /// Weight of the third vertex.
    pub v: f32,
}

/// The work of one ray's traversal, as the counting kernels write it (`RayWork` in
/// `glsl/common/ray.glsl`). 8 bytes.
///
/// - Through a BVH, `nodes_visited` counts the internal nodes whose two child boxes were
///   tested: the root (always, when the tree has primitives) and each inner child entered
///   from its parent or popped from the stack; `primitives_tested` counts the leaves whose box
///   was entered, one ray/triangle test each.
/// - Through a kd-tree, `nodes_visited` counts the nodes the traversal reads, internal and
///   leaf (0 for a ray that misses the scene box); `primitives_tested` counts the
///   ray/triangle tests run in the leaves reached, a triangle in two of them counted twice.
///
/// An any-hit query walks as a closest-hit one until its first hit and stops there, so it
/// counts no more than the closest-hit query, and the same for a ray that hits nothing.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct RayWork {
    /// Nodes visited.
    pub nodes_visited: u32,
    /// Ray/triangle tests run.
    pub primitives_tested: u32,
}

/// The work of a batch of rays: the mean and largest [`RayWork`] counts per ray, stable
/// across devices, so a change to a builder or to traversal can be judged without timing it.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct TraversalWork {
    /// Rays counted.
    pub rays: usize,
    /// Mean nodes visited per ray (0 without rays).
    pub mean_nodes: f64,
    /// Most nodes visited by one ray.
    pub max_nodes: u32,
    /// Mean ray/triangle tests per ray (0 without rays).
    pub mean_primitives: f64,
    /// Most ray/triangle tests of one ray.
    pub max_primitives: u32,
    /// Nodes per ray of a subgroup running in lockstep: the mean, over each
    /// [`LOCKSTEP_RAYS`] consecutive rays, of the most nodes one of them visits. A subgroup
    /// walks as long as its longest walk, so `mean_nodes / lockstep_nodes` is the share of
    /// its lanes kept busy.
    pub lockstep_nodes: f64,
    /// Ray/triangle tests per ray of a subgroup running in lockstep, as [`Self::lockstep_nodes`].
    pub lockstep_primitives: f64,
}

/// The rays of one subgroup in [`TraversalWork`]'s lockstep figures: 32, NVIDIA's warp.
/// Consecutive rays share a subgroup, as the kernels assign them.
pub const LOCKSTEP_RAYS: usize = 32;

impl TraversalWork {
    /// The summary of per-ray counts, as [`crate::trace::Tracer::record_counted`] writes them.
    pub fn from_counts(counts: &[RayWork]) -> Self {
        let (mut nodes, mut primitives) = (0u64, 0u64);
        let mut work = Self {
            rays: counts.len(),
            ..Self::default()
        };
        for c in counts {
            nodes += u64::from(c.nodes_visited);
            primitives += u64::from(c.primitives_tested);
            work.max_nodes = work.max_nodes.max(c.nodes_visited);
            work.max_primitives = work.max_primitives.max(c.primitives_tested);
        }
        let (mut lockstep_nodes, mut lockstep_primitives) = (0u64, 0u64);
        for group in counts.chunks(LOCKSTEP_RAYS) {
            let longest = |count: fn(&RayWork) -> u32| group.iter().map(count).max();
            let lanes = group.len() as u64;
            lockstep_nodes += lanes * u64::from(longest(|c| c.nodes_visited).unwrap_or(0));
            lockstep_primitives += lanes * u64::from(longest(|c| c.primitives_tested).unwrap_or(0));
        }
        if !counts.is_empty() {
            let rays = counts.len() as f64;
            work.mean_nodes = nodes as f64 / rays;
            work.mean_primitives = primitives as f64 / rays;
            work.lockstep_nodes = lockstep_nodes as f64 / rays;
            work.lockstep_primitives = lockstep_primitives as f64 / rays;
        }
        work
    }
}

/// What a query asks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Query {
    /// The nearest hit.
    Closest,
    /// Any hit (occlusion): the first found, not necessarily the nearest.
    Any,
}

impl Hit {
    /// The miss of `ray`.
    pub fn miss(ray: &Ray) -> Self {
        Self {
            t: ray.tmax,
            triangle: MISS,
            u: 0.0,
            v: 0.0,
        }
    }

    /// Whether a triangle was hit.
    pub fn is_hit(&self) -> bool {
        self.triangle != MISS
    }

    /// Whether `self` comes before `other`: smaller `t`, then smaller triangle index.
    pub(crate) fn precedes(&self, other: &Hit) -> bool {
        self.t < other.t || (self.t == other.t && self.triangle < other.triangle)
    }
}

/// The watertight test of `ray` against triangle `(a, b, c)`: `Some((t, u, v))` with
/// `tmin < t < tmax`, `u` and `v` the weights of `b` and `c`.
///
/// The vertices are translated by `-origin` and sheared so that the ray runs along +z: `kz`
/// is the axis of largest `|direction|` (ties to the later axis: z over y over x),
/// `kx = (kz + 1) % 3`, `ky = (kx + 1) % 3`, `kx` and `ky` swapped if `direction[kz] < 0`;
/// `Sx = d[kx] / d[kz]`, `Sy = d[ky] / d[kz]`, `Sz = 1 / d[kz]`. With `A = a - origin`,
/// `Ax = A[kx] - Sx · A[kz]`, `Ay = A[ky] - Sy · A[kz]` (likewise `B`, `C`), the edge functions
/// are `U = Cx · By - Cy · Bx` (edge b-c, opposite a), `V = Ax · Cy - Ay · Cx` (edge c-a,
/// opposite b) and `W = Bx · Ay - By · Ax` (edge a-b, opposite c). If any of them is exactly
/// 0, all three are recomputed from the same f32 inputs in f64 and rounded to f32. The ray
/// misses if they have mixed signs (some < 0 and some > 0) or if `det = U + V + W` is 0
/// (degenerate triangles are never hit). Otherwise, with `Az = Sz · A[kz]` (likewise `Bz`,
/// `Cz`), `T = U · Az + V · Bz + W · Cz` (left to right), `t = T / det`, `u = V / det`,
/// `v = W / det`.
pub fn intersect_triangle(
    ray: &Ray,
    a: [f32; 3],
    b: [f32; 3],
    c: [f32; 3],
) -> Option<(f32, f32, f32)> {
    Shear::new(ray).intersect(ray, a, b, c)
}

/// The per-ray constants of the watertight test.
pub(crate) struct Shear {
    /// The axes that become x, y and z.
    kx: usize,
    ky: usize,
    kz: usize,
    /// `d[kx] / d[kz]`, `d[ky] / d[kz]` and `1 / d[kz]`.
    sx: f32,
    sy: f32,
    sz: f32,
}

impl Shear {
    /// The constants of `ray`.
    pub(crate) fn new(ray: &Ray) -> Self {
        let d = ray.direction;
        let m = d.map(f32::abs);
        let kz = if m[0] > m[1] {
            if m[0] > m[2] { 0 } else { 2 }
        } else if m[1] > m[2] {
            1
        } else {
            2
        };
        let (mut kx, mut ky) = ((kz + 1) % 3, (kz + 2) % 3);
        if d[kz] < 0.0 {
            std::mem::swap(&mut kx, &mut ky);
        }
        Self {
            kx,
            ky,
            kz,
            sx: d[kx] / d[kz],
            sy: d[ky] / d[kz],
            sz: 1.0 / d[kz],
        }
    }

    /// [`intersect_triangle`] with these constants.
    pub(crate) fn intersect(
        &self,
        ray: &Ray,
        a: [f32; 3],
        b: [f32; 3],
        c: [f32; 3],
    ) -> Option<(f32, f32, f32)> {
        let (kx, ky, kz) = (self.kx, self.ky, self.kz);
        let [a, b, c] =
            [a, b, c].map(|p| -> [f32; 3] { std::array::from_fn(|k| p[k] - ray.origin[k]) });
        let sheared = |p: [f32; 3]| (p[kx] - self.sx * p[kz], p[ky] - self.sy * p[kz]);
        let ((ax, ay), (bx, by), (cx, cy)) = (sheared(a), sheared(b), sheared(c));
        let mut u = cx * by - cy * bx;
        let mut v = ax * cy - ay * cx;
        let mut w = bx * ay - by * ax;
        if u == 0.0 || v == 0.0 || w == 0.0 {
            let edge = |px: f32, py: f32, qx: f32, qy: f32| {
                (px as f64 * qy as f64 - py as f64 * qx as f64) as f32
            };
            u = edge(cx, cy, bx, by);
            v = edge(ax, ay, cx, cy);
            w = edge(bx, by, ax, ay);
        }
        if (u < 0.0 || v < 0.0 || w < 0.0) && (u > 0.0 || v > 0.0 || w > 0.0) {
            return None;
        }
        let det = u + v + w;
        if det == 0.0 {
            return None;
        }
        let (az, bz, cz) = (self.sz * a[kz], self.sz * b[kz], self.sz * c[kz]);
        let t = (u * az + v * bz + w * cz) / det;
        (t > ray.tmin && t < ray.tmax).then(|| (t, v / det, w / det))
    }
}

/// Tests `ray` against the triangles `ids` of one leaf, counting each test in `work`: for an
/// any-hit query the first hit is returned; otherwise `best` keeps the closest (ties to the
/// smaller index) and `None` is returned. The leaf loop of the CPU traversals of trees whose
/// leaves hold triangle ids.
pub(crate) fn test_leaf(
    (positions, triangles): (&[[f32; 3]], &[[u32; 3]]),
    ids: &[u32],
    ray: &Ray,
    query: Query,
    best: &mut Hit,
    work: &mut RayWork,
) -> Option<Hit> {
    for &triangle in ids {
        work.primitives_tested += 1;
        let [a, b, c] = triangles[triangle as usize].map(|v| positions[v as usize]);
        let Some((t, u, v)) = intersect_triangle(ray, a, b, c) else {
            continue;
        };
        let hit = Hit { t, triangle, u, v };
        if query == Query::Any {
            return Some(hit);
        }
        if hit.precedes(best) {
            *best = hit;
        }
    }
    None
}

/// The hit of `ray` with triangle `index` of the mesh, if any.
pub(crate) fn hit_triangle(
    shear: &Shear,
    ray: &Ray,
    positions: &[[f32; 3]],
    triangle: [u32; 3],
    index: u32,
) -> Option<Hit> {
    let [a, b, c] = triangle.map(|v| positions[v as usize]);
    shear.intersect(ray, a, b, c).map(|(t, u, v)| Hit {
        t,
        triangle: index,
        u,
        v,
    })
}

/// Closest hit (or with `any`, the first hit found) over all triangles, one after another.
fn brute_force(positions: &[[f32; 3]], triangles: &[[u32; 3]], ray: &Ray, any: bool) -> Hit {
    let shear = Shear::new(ray);
    let mut best = Hit::miss(ray);
    for (tri, index) in triangles.iter().zip(0..) {
        if let Some(hit) = hit_triangle(&shear, ray, positions, *tri, index) {
            if any {
                return hit;
            }
            if hit.precedes(&best) {
                best = hit;
            }
        }
    }
    best
}

/// The closest hit of `ray` among all triangles (ties: the smallest triangle index).
pub fn closest_hit_brute_force(positions: &[[f32; 3]], triangles: &[[u32; 3]], ray: &Ray) -> Hit {
    brute_force(positions, triangles, ray, false)
}

/// Whether `ray` hits any triangle.
pub fn any_hit_brute_force(positions: &[[f32; 3]], triangles: &[[u32; 3]], ray: &Ray) -> bool {
    brute_force(positions, triangles, ray, true).is_hit()
}

/// Relative widening of a box's `[near, far]` interval, so that rounding in the slab test
/// and in the triangle test's `t` never culls a box holding a triangle the ray hits.
pub const BOX_T_SLACK: f32 = 1.0 / 65536.0;

/// The slab test of a ray (`inv_dir` = `1 / direction`) against a box, widened by
/// [`BOX_T_SLACK`]: `[near, far]`, empty (`near > far`) on a miss. Along each axis the near
/// plane is `min` (`max` when `inv_dir` is negative, including `1 / -0 = -inf`), so an
/// inverted (empty) box is never entered. A NaN plane distance (`0 · inf`: the origin on a
/// plane the ray runs in) does not bound the interval: the running max and min keep their
/// value when compared with NaN (`t > near ? t : near` on the GPU).
pub(crate) fn slab(origin: [f32; 3], inv_dir: [f32; 3], b: &Bounds) -> (f32, f32) {
    let mut near = f32::NEG_INFINITY;
    let mut far = f32::INFINITY;
    for k in 0..3 {
        let (lo, hi) = if inv_dir[k].is_sign_negative() {
            (b.1[k], b.0[k])
        } else {
            (b.0[k], b.1[k])
        };
        let t_near = (lo - origin[k]) * inv_dir[k];
        let t_far = (hi - origin[k]) * inv_dir[k];
        if t_near > near {
            near = t_near;
        }
        if t_far < far {
            far = t_far;
        }
    }
    widened(near, far)
}

/// `[near, far]` widened by [`BOX_T_SLACK`]: `near` moved down and `far` up, each relative
/// to its own size.
pub(crate) fn widened(near: f32, far: f32) -> (f32, f32) {
    let widen = |t: f32, up: bool| {
        t * if (t > 0.0) == up {
            1.0 + BOX_T_SLACK
        } else {
            1.0 - BOX_T_SLACK
        }
    };
    (widen(near, false), widen(far, true))
}
