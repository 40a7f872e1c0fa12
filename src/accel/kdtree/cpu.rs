//! The SAH k-d tree reference: the offline builder that canopy's GPU k-d tree builder is to be
//! measured against, its ray traversal, and the checker for any tree in the format of
//! [`super`] ([`KdTree`]).
//!
//! # Build
//!
//! [`build_sah_kdtree`] follows Wald and Havran, "On building fast kd-Trees for Ray Tracing, and
//! on doing that in O(N log N)" (IEEE Symposium on Interactive Ray Tracing 2006): greedy
//! top-down splits of least SAH cost ([`KdParams`]) among "perfect split" candidates, the
//! bounds along each axis of each triangle clipped to the node's box, with the triangles lying
//! in the plane put on the cheaper side. A triangle that straddles the plane goes to both
//! children. Each node keeps its candidates as events (a triangle's clipped bounds start, end,
//! or the triangle lies in the plane) sorted by axis, position and kind, so a node's best plane
//! is found in one sweep. The events of a triangle on one side of the plane go to that child as
//! they are and stay sorted; only the triangles straddling the plane are clipped again to each
//! child's box, and their new events are sorted and merged in. Events are sorted once, at the
//! root: the build is O(n log n).
//!
//! Clipping is Sutherland–Hodgman in f64, and the bounds of the clipped polygon are rounded
//! outwards to f32, so a triangle is kept in every child its polygon reaches into. A triangle
//! whose polygon only touches a child's box (one lying on the far side, ending exactly at the
//! plane) is not put in it. Zero-area triangles are treated like the others: never hit by a
//! ray, they are harmless in the leaves their box touches.
//!
//! # Traversal
//!
//! [`trace_kdtree`] (which also counts its work; [`closest_hit_kdtree`] and [`any_hit_kdtree`]
//! call it) is the stack-based traversal of Zhou et al., "Real-Time KD-Tree Construction on
//! Graphics Hardware" (SIGGRAPH Asia 2008) §4: the ray is clipped to the scene box, each
//! internal node sends it to its near child (the side it is on before the plane) for
//! `[tmin, t_split]` and pushes the far child for `[t_split, tmax]`, and once a leaf gives a
//! hit no farther than the leaf's exit distance, the nodes left on the stack start beyond it
//! and are dropped. A ray parallel to a plane goes to its origin's side, to both sides when
//! the origin is on the plane. Decisions are widened by the slab test's rounding slack, so
//! that no node holding the closest hit (or a tie of smaller index) is skipped: the results
//! are those of
//! [`closest_hit_brute_force`](crate::geom::ray::closest_hit_brute_force) and
//! [`any_hit_brute_force`](crate::geom::ray::any_hit_brute_force).

use super::{KdNode, KdParams, KdTree};
use crate::accel::TreeShape;
use crate::geom::aabb::{Bounds, EMPTY_BOUNDS, surface_area, triangle_bounds, union};
use crate::geom::ray::Query;
use crate::geom::ray::{BOX_T_SLACK, Hit, Ray, RayWork, slab, test_leaf};

/// The two halves of `b` cut at `pos` along `axis`: `[left, right]`.
fn split_box(b: &Bounds, axis: usize, pos: f32) -> [Bounds; 2] {
    let (mut left, mut right) = (*b, *b);
    left.1[axis] = pos;
    right.0[axis] = pos;
    [left, right]
}

/// A box in f64, `(min, max)`.
type Box64 = ([f64; 3], [f64; 3]);

/// `b` in f64 (exactly).
fn box64(b: &Bounds) -> Box64 {
    (b.0.map(f64::from), b.1.map(f64::from))
}

/// The vertices of `triangle` in f64.
fn vertices64(positions: &[[f32; 3]], triangle: [u32; 3]) -> [[f64; 3]; 3] {
    triangle.map(|v| positions[v as usize].map(f64::from))
}

/// Room for the vertices of a clipped polygon. Clipping a convex polygon to a plane adds at
/// most one vertex, so a triangle has at most 8 before the last of the six planes.
const POLYGON_CAPACITY: usize = 16;

/// The bounds of triangle `v` clipped to the closed box `b` (Sutherland–Hodgman against those
/// of its six planes that cut the polygon), or `None` if nothing of it is left (as when
/// `min > max` along an axis). The result lies in `b`. Should rounding ever make the polygon
/// so ragged that a plane could overflow the vertex buffer, clipping stops there: the bounds
/// are then a superset.
fn clipped_bounds(v: &[[f64; 3]; 3], b: &Box64) -> Option<Box64> {
    let mut buffers = [[[0.0; 3]; POLYGON_CAPACITY]; 2];
    buffers[0][..3].copy_from_slice(v);
    let (mut len, mut current) = (3, 0);
    let planes = (0..3).flat_map(|axis| [(axis, b.0[axis], true), (axis, b.1[axis], false)]);
    for (axis, bound, keep_above) in planes {
        let inside = |p: &[f64; 3]| {
            if keep_above {
                p[axis] >= bound
            } else {
                p[axis] <= bound
            }
        };
        let [first, second] = &mut buffers;
        let (polygon, clipped) = if current == 0 {
            (&first[..len], second)
        } else {
            (&second[..len], first)
        };
        let kept = polygon.iter().filter(|p| inside(p)).count();
        if kept == 0 {
            return None;
        }
        if kept == len {
            continue;
        }
        if 2 * len > POLYGON_CAPACITY {
            break;
        }
        let mut out = 0;
        let mut p = polygon[len - 1];
        for &q in polygon {
            if inside(&p) != inside(&q) {
                let s = (bound - p[axis]) / (q[axis] - p[axis]);
                clipped[out] = std::array::from_fn(|k| {
                    if k == axis {
                        bound
                    } else {
                        p[k] + s * (q[k] - p[k])
                    }
                });
                out += 1;
            }
            if inside(&q) {
                clipped[out] = q;
                out += 1;
            }
            p = q;
        }
        len = out;
        current = 1 - current;
    }
    let hull = buffers[current][..len]
        .iter()
        .fold((b.1, b.0), |(lo, hi), p| {
            (
                std::array::from_fn(|k| lo[k].min(p[k])),
                std::array::from_fn(|k| hi[k].max(p[k])),
            )
        });
    Some((
        std::array::from_fn(|k| hull.0[k].max(b.0[k])),
        std::array::from_fn(|k| hull.1[k].min(b.1[k])),
    ))
}

/// `b` rounded outwards to f32.
fn round_outward(b: &Box64) -> Bounds {
    let down = |x: f64| {
        let f = x as f32;
        if f as f64 > x { f.next_down() } else { f }
    };
    let up = |x: f64| {
        let f = x as f32;
        if (f as f64) < x { f.next_up() } else { f }
    };
    (b.0.map(down), b.1.map(up))
}

/// Event kind: a triangle's clipped bounds end here. Ends sort first at a position.
const END: u64 = 0;
/// Event kind: the triangle lies in this plane.
const PLANAR: u64 = 1;
/// Event kind: a triangle's clipped bounds start here.
const START: u64 = 2;

/// A split candidate of one triangle along one axis.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Event {
    /// `axis << 34 | position << 2 | kind`, the position as its order-preserving bits, so that
    /// events sort by axis, position, then kind.
    key: u64,
    /// The triangle.
    triangle: u32,
}

impl Event {
    /// The event of `kind` at `pos` along `axis` (-0 counted as +0).
    fn new(axis: usize, pos: f32, kind: u64, triangle: u32) -> Self {
        let bits = (pos + 0.0).to_bits();
        let ordered = if bits >> 31 == 1 {
            !bits
        } else {
            bits | 1 << 31
        };
        Self {
            key: (axis as u64) << 34 | (ordered as u64) << 2 | kind,
            triangle,
        }
    }

    /// The axis.
    fn axis(&self) -> usize {
        (self.key >> 34) as usize
    }

    /// The position along the axis.
    fn pos(&self) -> f32 {
        let ordered = (self.key >> 2) as u32;
        f32::from_bits(if ordered >> 31 == 1 {
            ordered & !(1 << 31)
        } else {
            !ordered
        })
    }

    /// [`END`], [`PLANAR`] or [`START`].
    fn kind(&self) -> u64 {
        self.key & 3
    }

    /// The plane, axis and position: equal for events at the same candidate.
    fn plane(&self) -> u64 {
        self.key >> 2
    }

    /// Whether this is the one event that stands for its triangle: its first along x.
    fn opens(&self) -> bool {
        self.axis() == 0 && self.kind() != END
    }
}

/// Appends the events of a triangle whose clipped bounds are `b`.
fn push_events(events: &mut Vec<Event>, b: &Bounds, triangle: u32) {
    for axis in 0..3 {
        if b.0[axis] == b.1[axis] {
            events.push(Event::new(axis, b.0[axis], PLANAR, triangle));
        } else {
            events.push(Event::new(axis, b.0[axis], START, triangle));
            events.push(Event::new(axis, b.1[axis], END, triangle));
        }
    }
}

/// Merges two sorted event lists.
fn merge(a: Vec<Event>, b: Vec<Event>) -> Vec<Event> {
    if b.is_empty() {
        return a;
    }
    let mut merged = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        if b[j] < a[i] {
            merged.push(b[j]);
            j += 1;
        } else {
            merged.push(a[i]);
            i += 1;
        }
    }
    merged.extend_from_slice(&a[i..]);
    merged.extend_from_slice(&b[j..]);
    merged
}

/// A chosen split plane.
#[derive(Clone, Copy, Debug)]
struct Split {
    /// The axis.
    axis: usize,
    /// The position along it.
    pos: f32,
    /// Whether the triangles lying in the plane go left (else right).
    planar_left: bool,
}

/// A node still to be made.
struct Pending {
    /// Its triangles' events, sorted.
    events: Vec<Event>,
    /// Its number of triangles.
    count: usize,
    /// Its box.
    bounds: Bounds,
    /// Its depth (root 0).
    depth: u32,
    /// For a right child, its parent and the parent's split.
    right_of: Option<(usize, Split)>,
}

/// Side bits of a triangle at a split: left, right or both.
const LEFT: u8 = 1;
/// See [`LEFT`].
const RIGHT: u8 = 2;
/// See [`LEFT`].
const BOTH: u8 = LEFT | RIGHT;

/// The build's state.
struct Builder<'a> {
    /// The mesh's vertices.
    positions: &'a [[f32; 3]],
    /// The mesh's triangles.
    triangles: &'a [[u32; 3]],
    /// The cost model.
    params: &'a KdParams,
    /// Nodes at this depth are leaves.
    max_depth: u32,
    /// Per triangle, the side of the split being made ([`LEFT`], [`RIGHT`], [`BOTH`]).
    side: Vec<u8>,
    /// The nodes made so far, in preorder.
    nodes: Vec<KdNode>,
    /// The triangles of the leaves made so far.
    leaf_triangles: Vec<u32>,
}

/// The SAH k-d tree of a triangle mesh (see the [module documentation](self)): O(n log n),
/// events sorted once and kept sorted down the tree.
///
/// A node becomes a leaf when it holds at most one triangle, is at
/// [`KdParams::depth_limit`], has a box of zero area, or when no split costs less than
/// `Ci · N`. Candidates on an axis along which the node's box is flat are not considered.
/// Ties in cost go to the lower axis, then the lower position, then planar triangles on the
/// left. Positions must be finite. Without triangles the tree is one empty leaf with
/// [`EMPTY_BOUNDS`].
pub fn build_sah_kdtree(
    positions: &[[f32; 3]],
    triangles: &[[u32; 3]],
    params: &KdParams,
) -> KdTree {
    let boxes = triangle_bounds(positions, triangles);
    let bounds = boxes.iter().fold(EMPTY_BOUNDS, |a, b| union(&a, b));
    let mut events = Vec::with_capacity(6 * boxes.len());
    for (b, triangle) in boxes.iter().zip(0..) {
        push_events(&mut events, b, triangle);
    }
    events.sort_unstable();
    let mut builder = Builder {
        positions,
        triangles,
        params,
        max_depth: params.depth_limit(triangles.len()),
        side: vec![BOTH; triangles.len()],
        nodes: Vec::new(),
        leaf_triangles: Vec::new(),
    };
    builder.build(Pending {
        events,
        count: triangles.len(),
        bounds,
        depth: 0,
        right_of: None,
    });
    KdTree {
        bounds,
        nodes: builder.nodes,
        leaf_triangles: builder.leaf_triangles,
    }
}

impl Builder<'_> {
    /// Makes the subtree of `root`, nodes in preorder.
    fn build(&mut self, root: Pending) {
        let mut stack = vec![root];
        while let Some(node) = stack.pop() {
            let index = self.nodes.len();
            if let Some((parent, split)) = node.right_of {
                self.nodes[parent] = KdNode::internal(split.axis, split.pos, index as u32);
            }
            let split = if node.count <= 1 || node.depth >= self.max_depth {
                None
            } else {
                self.best_split(&node.events, node.count, &node.bounds)
            };
            let Some(split) = split else {
                let first = self.leaf_triangles.len();
                let triangles = node.events.iter().filter(|e| e.opens());
                self.leaf_triangles.extend(triangles.map(|e| e.triangle));
                self.leaf_triangles[first..].sort_unstable();
                self.nodes
                    .push(KdNode::leaf(first as u32, node.count as u32));
                continue;
            };
            // The right child index is set when the right child is made.
            self.nodes.push(KdNode::internal(split.axis, split.pos, 0));
            let boxes = split_box(&node.bounds, split.axis, split.pos);
            let [left, right] = self.split_events(node.events, &boxes, &split);
            for (side, (events, count)) in [(1, right), (0, left)] {
                stack.push(Pending {
                    events,
                    count,
                    bounds: boxes[side],
                    depth: node.depth + 1,
                    right_of: (side == 1).then_some((index, split)),
                });
            }
        }
    }

    /// The split of least cost below `Ci · count` of a node with box `b` and `events`, by one
    /// sweep over the events: per axis, the triangles entirely left of, in, and right of each
    /// candidate plane are counted as the events pass.
    fn best_split(&self, events: &[Event], count: usize, b: &Bounds) -> Option<Split> {
        let area = surface_area(b);
        if area <= 0.0 {
            return None;
        }
        let e: [f64; 3] = std::array::from_fn(|k| b.1[k] as f64 - b.0[k] as f64);
        let inv_area = 1.0 / area;
        // The area of a child `width` wide along `axis`, over the node's.
        let child_ratio = |axis: usize, width: f64| {
            let (j, k) = ((axis + 1) % 3, (axis + 2) % 3);
            2.0 * (width * (e[j] + e[k]) + e[j] * e[k]) * inv_area
        };
        let mut best_cost = self.params.intersection_cost as f64 * count as f64;
        let mut best = None;
        let (mut left, mut right) = ([0; 3], [count; 3]);
        let mut i = 0;
        while i < events.len() {
            let (plane, axis, pos) = (events[i].plane(), events[i].axis(), events[i].pos());
            let mut kinds = [0; 3];
            while i < events.len() && events[i].plane() == plane {
                kinds[events[i].kind() as usize] += 1;
                i += 1;
            }
            let planar = kinds[PLANAR as usize];
            right[axis] -= planar + kinds[END as usize];
            if b.0[axis] < b.1[axis] {
                let ratios = [
                    child_ratio(axis, pos as f64 - b.0[axis] as f64),
                    child_ratio(axis, b.1[axis] as f64 - pos as f64),
                ];
                let volume = [pos > b.0[axis], pos < b.1[axis]];
                let sides = if planar > 0 { 2 } else { 1 };
                for planar_left in [true, false].into_iter().take(sides) {
                    let counts = if planar_left {
                        [left[axis] + planar, right[axis]]
                    } else {
                        [left[axis], right[axis] + planar]
                    };
                    let cost = self.params.split_cost(ratios, counts, volume);
                    if cost < best_cost {
                        best_cost = cost;
                        best = Some(Split {
                            axis,
                            pos,
                            planar_left,
                        });
                    }
                }
            }
            left[axis] += planar + kinds[START as usize];
        }
        best
    }

    /// Divides a node's events between its children (`boxes`, split at `split`): the events of
    /// a triangle on one side go to that child unchanged; a triangle on both sides is clipped
    /// to each child's box and gets new events there, unless nothing of it is left in it.
    /// Returns each child's sorted events and triangle count.
    fn split_events(
        &mut self,
        events: Vec<Event>,
        boxes: &[Bounds; 2],
        split: &Split,
    ) -> [(Vec<Event>, usize); 2] {
        for e in events.iter().filter(|e| e.opens()) {
            self.side[e.triangle as usize] = BOTH;
        }
        for e in events.iter().filter(|e| e.axis() == split.axis) {
            let pos = e.pos();
            self.side[e.triangle as usize] = match e.kind() {
                END if pos <= split.pos => LEFT,
                START if pos >= split.pos => RIGHT,
                PLANAR if pos < split.pos || (pos == split.pos && split.planar_left) => LEFT,
                PLANAR => RIGHT,
                _ => continue,
            };
        }
        let child_boxes = boxes.map(|b| box64(&b));
        let mut kept: [Vec<Event>; 2] = Default::default();
        let mut clipped: [Vec<Event>; 2] = Default::default();
        let mut counts = [0; 2];
        for e in events {
            let side = self.side[e.triangle as usize];
            if side != BOTH {
                let child = (side == RIGHT) as usize;
                counts[child] += e.opens() as usize;
                kept[child].push(e);
            } else if e.opens() {
                let v = vertices64(self.positions, self.triangles[e.triangle as usize]);
                for child in 0..2 {
                    if let Some(b) = clipped_bounds(&v, &child_boxes[child]) {
                        push_events(&mut clipped[child], &round_outward(&b), e.triangle);
                        counts[child] += 1;
                    }
                }
            }
        }
        let [kept_left, kept_right] = kept;
        let [mut clipped_left, mut clipped_right] = clipped;
        clipped_left.sort_unstable();
        clipped_right.sort_unstable();
        [
            (merge(kept_left, clipped_left), counts[0]),
            (merge(kept_right, clipped_right), counts[1]),
        ]
    }
}

/// The hit of `query` for `ray` by traversing `tree` (built over `triangles`; see the
/// [module documentation](self)), and the traversal's work counted as
/// `glsl/kdtree/trace.comp` counts it (see [`RayWork`]): each node the loop reads, and
/// each ray/triangle test in a leaf.
///
/// The walk is the kernel's, near child first and the far one pushed, but its decisions are
/// widened by the slab test's rounding slack (the ray's interval in the scene box, whether
/// the plane falls within the node's interval, whether a pushed node starts beyond the
/// closest hit), and a ray starting on a plane inside the scene box visits both of its sides;
/// the kernel decides these exactly. So rays that pass within rounding of a plane or a face of
/// the scene box may visit more here.
pub fn trace_kdtree(
    positions: &[[f32; 3]],
    triangles: &[[u32; 3]],
    tree: &KdTree,
    ray: &Ray,
    query: Query,
) -> (Hit, RayWork) {
    let mut best = Hit::miss(ray);
    let inv_dir = ray.direction.map(|d| 1.0 / d);
    let (near, far) = slab(ray.origin, inv_dir, &tree.bounds);
    let (t0, t1) = (near.max(ray.tmin), far.min(ray.tmax));
    let mut work = RayWork::default();
    if t0 > t1 {
        return (best, work);
    }
    let mut stack = vec![(0, t0, t1)];
    while let Some((mut index, t0, mut t1)) = stack.pop() {
        // Nodes are pushed far before near, so once a leaf's best hit is no farther than its
        // exit distance, every node left starts beyond it and is dropped here; except after a
        // ray lying in a split plane, whose two children share one interval. Nodes starting
        // within rounding of the best hit are kept: they may hold a tie of smaller index.
        if t0 > best.t + best.t.abs() * BOX_T_SLACK {
            continue;
        }
        loop {
            work.nodes_visited += 1;
            let node = tree.nodes[index];
            if node.is_leaf() {
                let first = node.first_triangle() as usize;
                let ids = &tree.leaf_triangles[first..first + node.triangle_count() as usize];
                let mesh = (positions, triangles);
                if let Some(hit) = test_leaf(mesh, ids, ray, query, &mut best, &mut work) {
                    return (hit, work);
                }
                break;
            }
            let axis = node.axis();
            let (split, origin) = (node.split(), ray.origin[axis]);
            let (left, right) = (index + 1, node.right_child() as usize);
            let t_split = (split - origin) * inv_dir[axis];
            if !t_split.is_finite() {
                // Parallel to the plane (or so nearly that 1 / d overflows): the origin's side,
                // both if the origin is on the plane.
                index = if origin < split {
                    left
                } else if origin > split {
                    right
                } else {
                    stack.push((right, t0, t1));
                    left
                };
                continue;
            }
            // The ray is on the near side before t_split.
            let (near, far) = if ray.direction[axis] > 0.0 {
                (left, right)
            } else {
                (right, left)
            };
            // Both children are visited when the plane is within rounding of [t0, t1].
            let slack = t_split.abs() * BOX_T_SLACK;
            match (t0 <= t_split + slack, t_split - slack <= t1) {
                (true, true) => {
                    stack.push((far, t0.max(t_split), t1));
                    index = near;
                    t1 = t1.min(t_split);
                }
                (true, false) => index = near,
                (false, true) => index = far,
                (false, false) => break,
            }
        }
    }
    (best, work)
}

/// The closest hit of `ray` by traversing `tree` (built over `triangles`): that of
/// [`closest_hit_brute_force`](crate::geom::ray::closest_hit_brute_force) (ties in `t` to
/// the smallest triangle index). Exit distances are rounded, so a different triangle at a `t`
/// within rounding of the brute-force one is possible in principle; the tests allow a
/// relative 1e-5 for it and have not met it.
pub fn closest_hit_kdtree(
    positions: &[[f32; 3]],
    triangles: &[[u32; 3]],
    tree: &KdTree,
    ray: &Ray,
) -> Hit {
    trace_kdtree(positions, triangles, tree, ray, Query::Closest).0
}

/// Whether `ray` hits any triangle, by traversing `tree`: exactly
/// [`any_hit_brute_force`](crate::geom::ray::any_hit_brute_force).
pub fn any_hit_kdtree(
    positions: &[[f32; 3]],
    triangles: &[[u32; 3]],
    tree: &KdTree,
    ray: &Ray,
) -> bool {
    trace_kdtree(positions, triangles, tree, ray, Query::Any)
        .0
        .is_hit()
}

/// Size, shape and SAH cost of a k-d tree.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct KdStats {
    /// All nodes.
    pub nodes: usize,
    /// Leaves.
    pub leaves: usize,
    /// Leaves without triangles.
    pub empty_leaves: usize,
    /// The most internal nodes above any leaf (a lone root leaf: 0).
    pub depth: u32,
    /// Triangle references of all leaves: triangles straddling planes count once per leaf.
    pub triangle_references: usize,
    /// The most triangles in one leaf.
    pub max_leaf_size: usize,
    /// Σ over internal nodes of SA(node)/SA(root) · `Ct` plus Σ over leaves of
    /// SA(leaf)/SA(root) · `Ci` · triangles (no empty bonus: the expected cost of a ray
    /// through the tree). A root of zero area counts as area 1.
    pub sah_cost: f64,
}

impl KdStats {
    /// The tree's shape as reports show it, its SAH cost being that of `costs`.
    pub fn shape(&self, costs: &KdParams) -> TreeShape {
        TreeShape {
            nodes: self.nodes as u64,
            leaves: self.leaves as u64,
            depth: self.depth,
            references: self.triangle_references as u64,
            sah_cost: Some(self.sah_cost),
            sah_model: Some(format!(
                "Ct {}, Ci {} per triangle",
                costs.traversal_cost, costs.intersection_cost
            )),
            nodes_per_level: Vec::new(),
            in_view: None,
        }
    }
}

/// The statistics of `tree` under the cost constants of `params`.
///
/// # Panics
///
/// If the tree fails the structure part of [`check_kdtree`] (nodes in preorder, right
/// children after their left subtrees, splits inside their boxes).
pub fn kdtree_stats(tree: &KdTree, params: &KdParams) -> KdStats {
    let root_area = surface_area(&tree.bounds);
    let root_area = if root_area > 0.0 { root_area } else { 1.0 };
    let mut stats = KdStats::default();
    walk(tree, |_, node, b, depth| {
        stats.nodes += 1;
        let weight = surface_area(&b.closed) / root_area;
        if node.is_leaf() {
            let count = node.triangle_count() as usize;
            stats.leaves += 1;
            stats.empty_leaves += (count == 0) as usize;
            stats.depth = stats.depth.max(depth);
            stats.triangle_references += count;
            stats.max_leaf_size = stats.max_leaf_size.max(count);
            stats.sah_cost += weight * params.intersection_cost as f64 * count as f64;
        } else {
            stats.sah_cost += weight * params.traversal_cost as f64;
        }
        Ok(())
    })
    .unwrap_or_else(|e| panic!("kdtree_stats of an invalid tree: {e}"));
    stats
}

/// A node's box, closed, and its interior: the box with each face that is a split plane
/// moved inwards by the check's tolerance δ.
#[derive(Clone, Copy)]
struct NodeBox {
    /// The closed box.
    closed: Bounds,
    /// The interior.
    interior: Box64,
}

/// The check's tolerance δ: 2^-30 of the largest coordinate magnitude of the scene box
/// (0 for an empty box). Far below f32 resolution, far above the rounding of clipping in f64.
fn tolerance(b: &Bounds) -> f64 {
    if (0..3).any(|k| b.0[k] > b.1[k]) {
        return 0.0;
    }
    let magnitude = b.0.iter().chain(&b.1).fold(0.0f32, |m, x| m.max(x.abs()));
    magnitude as f64 / (1u64 << 30) as f64
}

/// Walks `tree` in preorder from the root, calling `visit` with each node's index, the node,
/// its box and depth, and checking the structure: the walk meets nodes in index order (the
/// left child right after its parent, the right child right after the left subtree) and all
/// of them; each split lies in its node's box. Stops at the first error, from the structure
/// or from `visit`.
fn walk(
    tree: &KdTree,
    mut visit: impl FnMut(usize, KdNode, &NodeBox, u32) -> Result<(), String>,
) -> Result<(), String> {
    let delta = tolerance(&tree.bounds);
    let root = NodeBox {
        closed: tree.bounds,
        interior: box64(&tree.bounds),
    };
    let mut stack = vec![(0, root, 0)];
    let mut next = 0;
    while let Some((index, b, depth)) = stack.pop() {
        if index != next {
            return Err(format!(
                "node {index} is reached where node {next} comes in preorder"
            ));
        }
        let Some(&node) = tree.nodes.get(index) else {
            return Err(format!(
                "the tree goes on past its {} nodes",
                tree.nodes.len()
            ));
        };
        next += 1;
        visit(index, node, &b, depth)?;
        if node.is_leaf() {
            continue;
        }
        let (axis, split, right) = (node.axis(), node.split(), node.right_child() as usize);
        if !(b.closed.0[axis] <= split && split <= b.closed.1[axis]) {
            return Err(format!(
                "node {index}: split {split} on axis {axis} outside its box {:?}",
                b.closed
            ));
        }
        if right <= index + 1 || right >= tree.nodes.len() {
            return Err(format!(
                "node {index}: right child {right} not in {}..{}",
                index + 2,
                tree.nodes.len()
            ));
        }
        let closed = split_box(&b.closed, axis, split);
        let (mut left_interior, mut right_interior) = (b.interior, b.interior);
        left_interior.1[axis] = split as f64 - delta;
        right_interior.0[axis] = split as f64 + delta;
        for (child, closed, interior) in [
            (right, closed[1], right_interior),
            (index + 1, closed[0], left_interior),
        ] {
            stack.push((child, NodeBox { closed, interior }, depth + 1));
        }
    }
    if next != tree.nodes.len() {
        return Err(format!("nodes {next}.. are not reached from the root"));
    }
    Ok(())
}

/// The leaves reached from the root through nodes whose box `enters` accepts.
fn leaves_entered(
    tree: &KdTree,
    boxes: &[NodeBox],
    enters: impl Fn(&NodeBox) -> bool,
) -> Vec<usize> {
    let mut leaves = Vec::new();
    let mut stack = vec![0];
    while let Some(index) = stack.pop() {
        if !enters(&boxes[index]) {
            continue;
        }
        let node = tree.nodes[index];
        if node.is_leaf() {
            leaves.push(index);
        } else {
            stack.extend([node.right_child() as usize, index + 1]);
        }
    }
    leaves
}

/// Points of triangle `v`: its vertices, edge midpoints, and the three points with
/// barycentric weights (1/2, 1/4, 1/4) in turn.
fn sample_points(v: &[[f64; 3]; 3]) -> [[f64; 3]; 9] {
    [
        [1.0, 0.0, 0.0],
        [0.0, 1.0, 0.0],
        [0.0, 0.0, 1.0],
        [0.5, 0.5, 0.0],
        [0.0, 0.5, 0.5],
        [0.5, 0.0, 0.5],
        [0.5, 0.25, 0.25],
        [0.25, 0.5, 0.25],
        [0.25, 0.25, 0.5],
    ]
    .map(|w| std::array::from_fn(|k| w[0] * v[0][k] + w[1] * v[1][k] + w[2] * v[2][k]))
}

/// Checks that `tree` is a valid k-d tree over the mesh and returns its [`kdtree_stats`] under
/// the default [`KdParams`], or a message naming the first node, leaf or triangle found wrong.
///
/// - Structure: the nodes in preorder, each reached exactly once from the root, every right
///   child after its left subtree; every split inside its node's box.
/// - Leaves: entries in range, no triangle twice in a leaf, and every triangle in a leaf
///   with its bounding box touching the leaf's box grown by δ (a builder that splits small
///   nodes by triangle boxes without clipping, as the GPU builder's small-node stage does,
///   keeps triangles whose box reaches a leaf even where the triangle itself does not).
/// - Triangles: each inside the scene box, and in every leaf whose interior its polygon
///   reaches: the leaf's box with each face that is a split plane moved inwards by δ (2^-30 of
///   the scene's largest coordinate magnitude), so that a triangle only touching a leaf (ending
///   at, or lying in, one of its split planes) need not be in it. A triangle's vertices, edge
///   midpoints and three inner points each lie in the closed box of some leaf holding it,
///   so that a triangle lying in a split plane is on one side at least.
pub fn check_kdtree(
    positions: &[[f32; 3]],
    triangles: &[[u32; 3]],
    tree: &KdTree,
) -> Result<KdStats, String> {
    let scene = box64(&tree.bounds);
    let outside = |&(_, &triangle): &(u32, &[u32; 3])| {
        !vertices64(positions, triangle)
            .iter()
            .all(|p| contains_point(&scene, p))
    };
    if let Some((t, _)) = (0..).zip(triangles).find(outside) {
        return Err(format!(
            "triangle {t} is not inside the scene box {:?}",
            tree.bounds
        ));
    }
    let delta = tolerance(&tree.bounds);
    let mut boxes = Vec::with_capacity(tree.nodes.len());
    let mut members = vec![Vec::new(); tree.nodes.len()];
    walk(tree, |index, node, b, _| {
        // The walk meets the nodes in index order.
        boxes.push(*b);
        if !node.is_leaf() {
            return Ok(());
        }
        let first = node.first_triangle() as usize;
        let count = node.triangle_count() as usize;
        let Some(entries) = tree.leaf_triangles.get(first..first + count) else {
            return Err(format!(
                "leaf {index}: entries {first}..{} past the {} leaf triangles",
                first + count,
                tree.leaf_triangles.len()
            ));
        };
        let mut sorted = entries.to_vec();
        sorted.sort_unstable();
        if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
            return Err(format!("leaf {index} holds triangle {} twice", w[0]));
        }
        let (lo, hi) = box64(&b.closed);
        let grown = (lo.map(|x| x - delta), hi.map(|x| x + delta));
        for &t in &sorted {
            let Some(&triangle) = triangles.get(t as usize) else {
                return Err(format!(
                    "leaf {index} holds triangle {t}, not below {}",
                    triangles.len()
                ));
            };
            let v = vertices64(positions, triangle);
            let touches = (0..3).all(|k| {
                let lo = v.iter().map(|p| p[k]).fold(f64::INFINITY, f64::min);
                let hi = v.iter().map(|p| p[k]).fold(f64::NEG_INFINITY, f64::max);
                lo <= grown.1[k] && grown.0[k] <= hi
            });
            if !touches {
                return Err(format!(
                    "leaf {index} holds triangle {t}, whose box does not touch its box {:?}",
                    b.closed
                ));
            }
        }
        members[index] = sorted;
        Ok(())
    })?;
    let holds = |leaf: usize, t: u32| members[leaf].binary_search(&t).is_ok();
    for (t, &triangle) in (0..).zip(triangles) {
        let v = vertices64(positions, triangle);
        let touched = leaves_entered(tree, &boxes, |b| {
            clipped_bounds(&v, &box64(&b.closed)).is_some()
        });
        if let Some(leaf) = touched
            .into_iter()
            .find(|&leaf| !holds(leaf, t) && clipped_bounds(&v, &boxes[leaf].interior).is_some())
        {
            return Err(format!(
                "triangle {t} reaches into leaf {leaf} (box {:?}) but is not in it",
                boxes[leaf].closed
            ));
        }
        for p in sample_points(&v) {
            let around = leaves_entered(tree, &boxes, |b| contains_point(&box64(&b.closed), &p));
            if !around.into_iter().any(|leaf| holds(leaf, t)) {
                return Err(format!(
                    "triangle {t}: its point {p:?} is in no leaf holding it"
                ));
            }
        }
    }
    Ok(kdtree_stats(tree, &KdParams::default()))
}

/// Whether the closed box `b` contains `p`.
fn contains_point(b: &Box64, p: &[f64; 3]) -> bool {
    (0..3).all(|k| b.0[k] <= p[k] && p[k] <= b.1[k])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accel::bvh::cpu::tests::Soup;
    use crate::geom::ray::{any_hit_brute_force, closest_hit_brute_force};
    use crate::rng::Rng;

    type Mesh = (Vec<[f32; 3]>, Vec<[u32; 3]>);

    fn scene_bounds(positions: &[[f32; 3]], triangles: &[[u32; 3]]) -> Bounds {
        triangle_bounds(positions, triangles)
            .iter()
            .fold(EMPTY_BOUNDS, |a, b| union(&a, b))
    }

    /// Builds with the default parameters and checks the tree.
    fn build_checked(positions: &[[f32; 3]], triangles: &[[u32; 3]]) -> (KdTree, KdStats) {
        let tree = build_sah_kdtree(positions, triangles, &KdParams::default());
        let stats = check_kdtree(positions, triangles, &tree)
            .unwrap_or_else(|e| panic!("{} triangles: {e}", triangles.len()));
        assert_eq!(stats, kdtree_stats(&tree, &KdParams::default()));
        assert_eq!(stats.triangle_references, tree.leaf_triangles.len());
        (tree, stats)
    }

    /// Rays from in and around the scene box: a quarter aimed inside triangles, a quarter at
    /// points of their edges, a quarter at their vertices, the rest in random directions; some
    /// with one or two zero (±0) direction components, some with a finite `[tmin, tmax]`.
    fn random_rays(mesh: &Mesh, count: usize, seed: u64) -> Vec<Ray> {
        let (positions, triangles) = mesh;
        let mut rng = Rng::new(seed);
        let (lo, hi) = scene_bounds(positions, triangles);
        let pad = 0.5 * (0..3).map(|k| hi[k] - lo[k]).fold(0.1, f32::max);
        (0..count)
            .map(|i| {
                let origin: [f32; 3] =
                    std::array::from_fn(|k| rng.f32_in(lo[k] - pad, hi[k] + pad));
                let triangle = triangles[rng.below(triangles.len() as u32) as usize];
                let [a, b, c] = triangle.map(|v| positions[v as usize]);
                let (x, y) = (rng.f32_in(0.0, 1.0), rng.f32_in(0.0, 1.0));
                let (x, y) = if x + y > 1.0 {
                    (1.0 - x, 1.0 - y)
                } else {
                    (x, y)
                };
                let mut w = match i % 4 {
                    0 => [1.0 - x - y, x, y],
                    1 => [1.0 - x, x, 0.0],
                    _ => [1.0, 0.0, 0.0],
                };
                w.rotate_left(rng.below(3) as usize);
                let mut direction: [f32; 3] = if i % 4 == 3 {
                    std::array::from_fn(|_| rng.f32_in(-1.0, 1.0))
                } else {
                    std::array::from_fn(|k| w[0] * a[k] + w[1] * b[k] + w[2] * c[k] - origin[k])
                };
                let keep = rng.below(3) as usize;
                for k in (0..3).filter(|&k| k != keep) {
                    match (i % 9, rng.below(2)) {
                        (0, 0) | (1, _) => direction[k] = [0.0, -0.0][rng.below(2) as usize],
                        _ => {}
                    }
                }
                let (tmin, tmax) = if i % 5 == 0 {
                    let tmin = rng.f32_in(0.0, 0.5);
                    (tmin, tmin + rng.f32_in(0.0, 1.0))
                } else {
                    (0.0, f32::INFINITY)
                };
                Ray {
                    origin,
                    tmin,
                    direction,
                    tmax,
                }
            })
            .collect()
    }

    /// Casts `rays` through `tree` and by brute force and checks that they agree (closest hits
    /// up to ties in `t` within 1e-5 relative); returns the number of hits.
    fn assert_traversal_matches(mesh: &Mesh, tree: &KdTree, rays: &[Ray]) -> usize {
        let (p, t) = mesh;
        let mut hits = 0;
        for ray in rays {
            let expected = closest_hit_brute_force(p, t, ray);
            let got = closest_hit_kdtree(p, t, tree, ray);
            let tie = got.is_hit()
                && expected.is_hit()
                && (got.t - expected.t).abs() <= 1e-5 * expected.t.abs();
            assert!(
                got == expected || tie,
                "{ray:?}: k-d tree {got:?}, brute force {expected:?}"
            );
            assert_eq!(
                any_hit_kdtree(p, t, tree, ray),
                any_hit_brute_force(p, t, ray),
                "{ray:?}"
            );
            hits += expected.is_hit() as usize;
        }
        hits
    }

    /// Builds, checks, and casts `rays` random rays; returns the stats and the hit count.
    fn build_and_cast(mesh: &Mesh, rays: usize, seed: u64) -> (KdStats, usize) {
        let (tree, stats) = build_checked(&mesh.0, &mesh.1);
        let hits = assert_traversal_matches(mesh, &tree, &random_rays(mesh, rays, seed));
        (stats, hits)
    }

    fn soup(n: usize, seed: u64) -> Mesh {
        let soup = Soup::random(n, seed);
        (soup.positions, soup.triangles)
    }

    /// `n` triangles with vertices on the grid of step 1/4 in [0, 2]³, each within 1/2 of
    /// its first vertex: many coincident candidates, triangles lying in grid planes, and
    /// zero-area ones.
    fn snapped_soup(n: usize, seed: u64) -> Mesh {
        let mut rng = Rng::new(seed);
        let mut positions = Vec::new();
        for _ in 0..n {
            let first: [u32; 3] = std::array::from_fn(|_| 2 + rng.below(5));
            for offset in [false, true, true] {
                positions.push(std::array::from_fn(|k| {
                    let jitter = if offset { rng.below(5) } else { 2 };
                    (first[k] + jitter - 2) as f32 * 0.25
                }));
            }
        }
        let triangles = (0..n as u32)
            .map(|i| [3 * i, 3 * i + 1, 3 * i + 2])
            .collect();
        (positions, triangles)
    }

    /// Unit cubes in about half the cells of an `m`³ grid, 12 triangles each with their own
    /// vertices: neighbours have coincident faces, all in planes a split may take. Returns
    /// the mesh and the filled cells' lower corners.
    fn cubes(m: u32, seed: u64) -> (Mesh, Vec<[f32; 3]>) {
        let mut rng = Rng::new(seed);
        let (mut positions, mut triangles, mut cells) = (Vec::new(), Vec::new(), Vec::new());
        for cell in 0..m * m * m {
            if rng.below(2) == 0 {
                continue;
            }
            let corner = [cell % m, cell / m % m, cell / (m * m)].map(|c| c as f32);
            cells.push(corner);
            let base = positions.len() as u32;
            let cube = crate::scene::shapes::cube(corner, 1.0);
            positions.extend(cube.positions);
            triangles.extend(cube.triangles.iter().map(|t| t.map(|v| base + v)));
        }
        ((positions, triangles), cells)
    }

    #[test]
    fn node_words_round_trip() {
        let node = KdNode::internal(2, -1.5, 12345);
        assert!(!node.is_leaf());
        assert_eq!(
            (node.axis(), node.split(), node.right_child()),
            (2, -1.5, 12345)
        );
        assert_eq!(node.word0, 2 | 12345 << 2);
        assert_eq!(node.word1, (-1.5f32).to_bits());
        let leaf = KdNode::leaf(77, KdNode::MAX_INDEX);
        assert!(leaf.is_leaf());
        assert_eq!(leaf.axis(), 3);
        assert_eq!(
            (leaf.first_triangle(), leaf.triangle_count()),
            (77, KdNode::MAX_INDEX)
        );
        assert_eq!(
            bytemuck::cast_slice::<KdNode, u32>(&[node, leaf]),
            [node.word0, node.word1, u32::MAX, 77]
        );
    }

    #[test]
    fn events_sort_by_axis_position_and_kind() {
        let positions = [-2.5, -0.0, 0.0, 1e-30, 3.0, f32::MAX];
        let distinct = [-2.5, 0.0, 1e-30, 3.0, f32::MAX];
        let mut events = Vec::new();
        for axis in (0..3).rev() {
            for &pos in positions.iter().rev() {
                for kind in [START, PLANAR, END] {
                    events.push(Event::new(axis, pos, kind, 0));
                }
            }
        }
        events.sort_unstable();
        let decoded: Vec<(usize, f32, u64)> = events
            .iter()
            .map(|e| (e.axis(), e.pos(), e.kind()))
            .collect();
        let mut expected = Vec::new();
        for axis in 0..3 {
            for pos in distinct {
                // -0 and +0 are one position.
                let repeat = if pos == 0.0 { 2 } else { 1 };
                for kind in [END, PLANAR, START] {
                    expected.extend(std::iter::repeat_n((axis, pos, kind), repeat));
                }
            }
        }
        assert_eq!(decoded, expected);
        assert!(decoded.iter().all(|e| e.1 != 0.0 || e.1.is_sign_positive()));
    }

    #[test]
    fn clipping_gives_the_polygon_bounds() {
        let v = [[0.0, 0.0, 0.0], [4.0, 0.0, 0.0], [0.0, 4.0, 0.0]];
        let clip = |lo: [f64; 3], hi: [f64; 3]| clipped_bounds(&v, &(lo, hi));
        assert_eq!(
            clip([1.0, 1.0, -1.0], [3.0, 3.0, 1.0]),
            Some(([1.0, 1.0, 0.0], [3.0, 3.0, 0.0]))
        );
        assert_eq!(
            clip([-1.0, 0.5, -1.0], [3.0, 3.0, 1.0]),
            Some(([0.0, 0.5, 0.0], [3.0, 3.0, 0.0]))
        );
        assert_eq!(clip([2.5, 2.5, -1.0], [3.0, 3.0, 1.0]), None);
        // Touching at a corner, and in a flat box.
        assert_eq!(
            clip([2.0, 2.0, -1.0], [3.0, 3.0, 1.0]),
            Some(([2.0, 2.0, 0.0], [2.0, 2.0, 0.0]))
        );
        assert!(clip([0.0; 3], [1.0, 1.0, 0.0]).is_some());
        assert_eq!(clip([0.0, 0.0, 0.5], [1.0, 1.0, 0.5]), None);
        assert_eq!(clip([1.0, 0.0, -1.0], [0.5, 1.0, 1.0]), None);
        // A zero-area triangle.
        let segment = [[0.0; 3], [2.0, 2.0, 2.0], [1.0, 1.0, 1.0]];
        assert_eq!(
            clipped_bounds(&segment, &([0.5; 3], [1.5, 3.0, 3.0])),
            Some(([0.5; 3], [1.5; 3]))
        );
        let third = ([1.0 / 3.0; 3], [1.0 / 3.0; 3]);
        let (lo, hi) = round_outward(&third);
        assert!((lo[0] as f64) < third.0[0] && third.0[0] < hi[0] as f64);
        assert_eq!(
            round_outward(&box64(&([0.5; 3], [2.0; 3]))),
            ([0.5; 3], [2.0; 3])
        );
    }

    #[test]
    fn empty_scene_is_one_empty_leaf() {
        let tree = build_sah_kdtree(&[], &[], &KdParams::default());
        assert_eq!(tree.bounds, EMPTY_BOUNDS);
        assert_eq!(tree.nodes, vec![KdNode::leaf(0, 0)]);
        assert!(tree.leaf_triangles.is_empty());
        let stats = check_kdtree(&[], &[], &tree).unwrap();
        assert_eq!((stats.nodes, stats.leaves, stats.empty_leaves), (1, 1, 1));
        assert_eq!((stats.depth, stats.sah_cost), (0, 0.0));
        let ray = Ray {
            origin: [0.0; 3],
            tmin: 0.0,
            direction: [1.0, 0.0, 0.0],
            tmax: f32::INFINITY,
        };
        assert!(!closest_hit_kdtree(&[], &[], &tree, &ray).is_hit());
        assert!(!any_hit_kdtree(&[], &[], &tree, &ray));
    }

    #[test]
    fn random_soups() {
        for (n, rays) in [
            (1, 3000),
            (2, 3000),
            (10, 3000),
            (1000, 3000),
            (20_000, 2000),
        ] {
            let mesh = soup(n, 40 + n as u64);
            let (stats, hits) = build_and_cast(&mesh, rays, n as u64);
            assert!(hits > rays / 10, "{n} triangles: {hits} hits");
            assert!(
                stats.depth <= KdParams::default().depth_limit(n),
                "{stats:?}"
            );
            assert!(stats.sah_cost <= 1.5 * n as f64, "{stats:?}");
        }
    }

    #[test]
    fn snapped_triangles_on_grid_planes() {
        let mesh = snapped_soup(2000, 50);
        let (stats, hits) = build_and_cast(&mesh, 3000, 51);
        assert!(stats.leaves > 100 && hits > 1000, "{stats:?}, {hits} hits");
    }

    #[test]
    fn coplanar_triangles() {
        let mut rng = Rng::new(60);
        // In the plane z = 1/2, and in a tilted plane.
        let planes: [fn(f32, f32) -> f32; 2] = [|_, _| 0.5, |x, y| 1.0 - 0.5 * x - 0.25 * y];
        for plane in planes {
            let mesh = Soup::new(1000, rng.next_u64(), 0.1, |_, rng| {
                let (x, y) = (rng.f32_in(0.0, 1.0), rng.f32_in(0.0, 1.0));
                [x, y, plane(x, y)]
            });
            let positions = mesh
                .positions
                .iter()
                .map(|&[x, y, _]| [x, y, plane(x, y)])
                .collect();
            let mesh = (positions, mesh.triangles);
            let (stats, hits) = build_and_cast(&mesh, 3000, rng.next_u64());
            assert!(stats.leaves > 100 && hits > 1000, "{stats:?}, {hits} hits");
        }
    }

    #[test]
    fn duplicate_triangles_hit_first_copy() {
        let (positions, mut triangles) = soup(500, 70);
        for copy in 0..2 {
            for i in 0..500 {
                triangles.push(triangles[(i * 7 + copy) % 500]);
            }
        }
        let mesh = (positions, triangles);
        let (tree, _) = build_checked(&mesh.0, &mesh.1);
        let rays = random_rays(&mesh, 3000, 71);
        assert!(assert_traversal_matches(&mesh, &tree, &rays) > 1000);
        for ray in &rays {
            let hit = closest_hit_kdtree(&mesh.0, &mesh.1, &tree, ray);
            assert!(!hit.is_hit() || hit.triangle < 500, "{hit:?}");
        }
    }

    #[test]
    fn huge_and_zero_area_triangles_among_tiny_ones() {
        let (mut positions, mut triangles) = soup(3000, 80);
        let mut rng = Rng::new(81);
        let mut add = |corners: [[f32; 3]; 3]| {
            let base = positions.len() as u32;
            positions.extend(corners);
            triangles.push([base, base + 1, base + 2]);
        };
        add([[-0.1, -0.1, 0.0], [1.1, 0.0, 0.5], [0.3, 1.1, 1.1]]);
        for _ in 0..100 {
            let a: [f32; 3] = std::array::from_fn(|_| rng.f32_in(0.0, 1.0));
            let b: [f32; 3] = std::array::from_fn(|k| a[k] + rng.f32_in(-0.1, 0.1));
            let mid: [f32; 3] = std::array::from_fn(|k| (a[k] + b[k]) * 0.5);
            add([a, a, a]);
            add([a, b, mid]);
            add([a, b, b]);
        }
        let mesh = (positions, triangles);
        let (stats, hits) = build_and_cast(&mesh, 4000, 82);
        assert!(hits > 1000, "{stats:?}, {hits} hits");
    }

    #[test]
    fn cube_meshes_touching_split_planes() {
        let (mesh, cells) = cubes(5, 90);
        let (tree, _) = build_checked(&mesh.0, &mesh.1);
        assert!(assert_traversal_matches(&mesh, &tree, &random_rays(&mesh, 4000, 91)) > 2000);
        // From inside a cube, every ray hits: nothing leaks through shared edges or faces
        // lying in split planes.
        let mut rng = Rng::new(92);
        let mut rays = Vec::new();
        for i in 0..3000 {
            let cell = cells[rng.below(cells.len() as u32) as usize];
            let origin: [f32; 3] = std::array::from_fn(|k| cell[k] + rng.f32_in(0.05, 0.95));
            let target: [f32; 3] = match i % 3 {
                // Cube corners and edge points.
                0 => std::array::from_fn(|k| cell[k] + rng.below(2) as f32),
                1 => {
                    let along = rng.below(3) as usize;
                    std::array::from_fn(|k| {
                        cell[k]
                            + if k == along {
                                rng.f32_in(0.0, 1.0)
                            } else {
                                rng.below(2) as f32
                            }
                    })
                }
                _ => std::array::from_fn(|k| origin[k] + rng.f32_in(-1.0, 1.0)),
            };
            rays.push(Ray {
                origin,
                tmin: 0.0,
                direction: std::array::from_fn(|k| target[k] - origin[k]),
                tmax: f32::INFINITY,
            });
        }
        assert_eq!(assert_traversal_matches(&mesh, &tree, &rays), rays.len());
    }

    #[test]
    fn rays_in_and_along_split_planes() {
        let mesh = snapped_soup(500, 100);
        let (tree, _) = build_checked(&mesh.0, &mesh.1);
        let internal: Vec<KdNode> = tree
            .nodes
            .iter()
            .filter(|n| !n.is_leaf())
            .copied()
            .collect();
        let mut rng = Rng::new(101);
        let rays: Vec<Ray> = (0..4000)
            .map(|i| {
                let node = internal[rng.below(internal.len() as u32) as usize];
                let axis = node.axis();
                let mut origin: [f32; 3] = std::array::from_fn(|_| rng.f32_in(-0.5, 2.5));
                origin[axis] = node.split();
                let mut direction: [f32; 3] = std::array::from_fn(|_| rng.f32_in(-1.0, 1.0));
                direction[axis] = [0.0, -0.0, direction[axis] * 1e-6, direction[axis]][i % 4];
                Ray {
                    origin,
                    tmin: 0.0,
                    direction,
                    tmax: f32::INFINITY,
                }
            })
            .collect();
        assert!(assert_traversal_matches(&mesh, &tree, &rays) > 1000);
    }

    #[test]
    fn depth_limit_and_leaf_rules() {
        let params = KdParams::default();
        let limits = [0, 1, 1024, 1 << 20].map(|n| params.depth_limit(n));
        assert_eq!(limits, [8, 8, 21, 34]);
        let (positions, triangles) = soup(500, 110);
        for max_depth in [0, 1, 4] {
            let params = KdParams {
                max_depth: Some(max_depth),
                ..params
            };
            let tree = build_sah_kdtree(&positions, &triangles, &params);
            let stats = check_kdtree(&positions, &triangles, &tree).unwrap();
            assert!(stats.depth <= max_depth, "{stats:?}");
            if max_depth == 0 {
                assert_eq!(tree.nodes, vec![KdNode::leaf(0, 500)]);
                assert_eq!(tree.leaf_triangles, (0..500).collect::<Vec<u32>>());
            }
        }
        // One triangle is a leaf; so is a node where no split beats Ci · N.
        let one = build_sah_kdtree(&positions, &triangles[..1], &params);
        assert_eq!(one.nodes, vec![KdNode::leaf(0, 1)]);
        let costly = KdParams {
            traversal_cost: 1000.0,
            ..params
        };
        let tree = build_sah_kdtree(&positions, &triangles, &costly);
        assert_eq!(tree.nodes.len(), 1);
    }

    #[test]
    fn root_split_is_the_cheapest_candidate() {
        let params = KdParams::default();
        for seed in 0..20 {
            let (positions, triangles) = snapped_soup(60, 120 + seed);
            let tree = build_sah_kdtree(&positions, &triangles, &params);
            let b = tree.bounds;
            let boxes = triangle_bounds(&positions, &triangles);
            // The cost of a candidate, counting each triangle's side directly.
            let cost = |axis: usize, pos: f32, planar_left: bool| {
                let mut counts = [0; 2];
                for t in &boxes {
                    let in_plane = t.0[axis] == pos && t.1[axis] == pos;
                    counts[0] += (t.0[axis] < pos || in_plane && planar_left) as usize;
                    counts[1] += (t.1[axis] > pos || in_plane && !planar_left) as usize;
                }
                let ratios = split_box(&b, axis, pos).map(|c| surface_area(&c) / surface_area(&b));
                let volume = [pos > b.0[axis], pos < b.1[axis]];
                params.split_cost(ratios, counts, volume)
            };
            let cheapest = (0..3)
                .flat_map(|axis| {
                    boxes
                        .iter()
                        .flat_map(move |t| [(axis, t.0[axis]), (axis, t.1[axis])])
                })
                .flat_map(|(axis, pos)| [true, false].map(|left| cost(axis, pos, left)))
                .fold(f64::INFINITY, f64::min);
            let root = tree.nodes[0];
            if root.is_leaf() {
                assert!(cheapest >= params.intersection_cost as f64 * 60.0);
            } else {
                let chosen = [true, false]
                    .map(|left| cost(root.axis(), root.split(), left))
                    .into_iter()
                    .fold(f64::INFINITY, f64::min);
                assert!(chosen <= cheapest * (1.0 + 1e-12), "{chosen} > {cheapest}");
            }
        }
    }

    /// A k-d tree split in the middle of each node's longest axis down to `leaf_size`
    /// triangles or the default depth limit, each child holding the triangles that touch it.
    fn median_split_tree(mesh: &Mesh, leaf_size: usize) -> KdTree {
        let (positions, triangles) = mesh;
        let max_depth = KdParams::default().depth_limit(triangles.len());
        let bounds = scene_bounds(positions, triangles);
        let mut tree = KdTree {
            bounds,
            nodes: Vec::new(),
            leaf_triangles: Vec::new(),
        };
        let all = (0..triangles.len() as u32).collect::<Vec<_>>();
        let mut stack = vec![(all, bounds, 0, None)];
        while let Some((members, b, depth, right_of)) = stack.pop() {
            let index = tree.nodes.len();
            if let Some(parent) = right_of {
                let p: KdNode = tree.nodes[parent];
                tree.nodes[parent] = KdNode::internal(p.axis(), p.split(), index as u32);
            }
            if members.len() <= leaf_size || depth == max_depth {
                let first = tree.leaf_triangles.len() as u32;
                tree.nodes.push(KdNode::leaf(first, members.len() as u32));
                tree.leaf_triangles.extend(members);
                continue;
            }
            let extent = |k: usize| b.1[k] - b.0[k];
            let axis = (0..3).fold(0, |a, k| if extent(k) > extent(a) { k } else { a });
            let split = (b.0[axis] + b.1[axis]) * 0.5;
            tree.nodes.push(KdNode::internal(axis, split, 0));
            let halves = split_box(&b, axis, split);
            for side in [1, 0] {
                let half = box64(&halves[side]);
                let touching = members.iter().copied().filter(|&t| {
                    clipped_bounds(&vertices64(positions, triangles[t as usize]), &half).is_some()
                });
                let parent = (side == 1).then_some(index);
                stack.push((touching.collect(), halves[side], depth + 1, parent));
            }
        }
        tree
    }

    #[test]
    fn sah_beats_median_splits_on_a_clustered_scene() {
        let mut rng = Rng::new(130);
        let centers: Vec<[f32; 3]> = (0..8)
            .map(|_| std::array::from_fn(|_| rng.f32_in(0.0, 10.0)))
            .collect();
        let soup = Soup::new(4000, 131, 0.05, |i, rng| {
            std::array::from_fn(|k| centers[i % 8][k] + rng.f32_in(-0.3, 0.3))
        });
        let mesh = (soup.positions, soup.triangles);
        let (sah_tree, sah) = build_checked(&mesh.0, &mesh.1);
        let median_tree = median_split_tree(&mesh, 4);
        let median = check_kdtree(&mesh.0, &mesh.1, &median_tree).unwrap();
        assert!(sah.sah_cost < 0.8 * median.sah_cost, "{sah:?}\n{median:?}");
        let rays = random_rays(&mesh, 2000, 132);
        assert_traversal_matches(&mesh, &sah_tree, &rays);
        assert_traversal_matches(&mesh, &median_tree, &rays);
    }

    #[test]
    fn check_rejects_broken_trees() {
        let (positions, triangles) = soup(300, 140);
        let tree = build_sah_kdtree(&positions, &triangles, &KdParams::default());
        check_kdtree(&positions, &triangles, &tree).unwrap();
        let broken = |edit: &dyn Fn(&mut KdTree)| {
            let mut tree = tree.clone();
            edit(&mut tree);
            check_kdtree(&positions, &triangles, &tree).unwrap_err()
        };
        let fullest = (0..tree.nodes.len())
            .filter(|&i| tree.nodes[i].is_leaf())
            .max_by_key(|&i| tree.nodes[i].triangle_count())
            .unwrap();
        let leaf = tree.nodes[fullest];
        let (first, count) = (leaf.first_triangle(), leaf.triangle_count());
        let err = broken(&|t| t.nodes[fullest] = KdNode::leaf(first, count - 1));
        assert!(err.contains("is not in it"), "{err}");
        // A triangle far from the leaf's first one in its place.
        let centroid = |t: u32| {
            let [a, b, c] = triangles[t as usize].map(|v| positions[v as usize]);
            std::array::from_fn::<f32, 3, _>(|k| a[k] + b[k] + c[k])
        };
        let here = centroid(tree.leaf_triangles[first as usize]);
        let distance = |t: &u32| {
            let p = centroid(*t);
            (0..3).map(|k| (p[k] - here[k]).powi(2)).sum::<f32>()
        };
        let far = (0..300)
            .max_by(|a, b| distance(a).total_cmp(&distance(b)))
            .unwrap();
        let err = broken(&|t| t.leaf_triangles[first as usize] = far);
        assert!(err.contains("does not touch its box"), "{err}");
        let err = broken(&|t| t.leaf_triangles[first as usize] = 300);
        assert!(err.contains("not below 300"), "{err}");
        let err = broken(&|t| t.nodes[fullest] = KdNode::leaf(u32::MAX - 4, count));
        assert!(err.contains("past the"), "{err}");
        let err = broken(&|t| {
            let e = t.leaf_triangles[first as usize];
            t.leaf_triangles[first as usize + 1] = e;
        });
        assert!(err.contains("twice"), "{err}");
        let root = tree.nodes[0];
        let (axis, right) = (root.axis(), root.right_child());
        let err = broken(&|t| t.nodes[0] = KdNode::internal(axis, t.bounds.1[axis] + 1.0, right));
        assert!(err.contains("outside its box"), "{err}");
        let err = broken(&|t| t.nodes[0] = KdNode::internal(axis, root.split(), right + 1));
        assert!(err.contains("comes in preorder"), "{err}");
        let err = broken(&|t| t.nodes[0] = KdNode::internal(axis, root.split(), 1));
        assert!(err.contains("not in 2.."), "{err}");
        let err = broken(&|t| t.nodes.push(KdNode::leaf(0, 0)));
        assert!(err.contains("not reached"), "{err}");
        let err = broken(&|t| t.nodes.clear());
        assert!(err.contains("past its 0 nodes"), "{err}");
        let err = broken(&|t| t.bounds.1[0] = 0.5);
        assert!(err.contains("scene box"), "{err}");
    }
}
