//! The CPU reference of the BIH: a binned-SAH builder with the GPU builder's parameters and
//! arithmetic (bins over the centroid bounds, in f32; children and clip nodes priced by the
//! regions rays reach them in), the traversal with interval clipping (closest and any hit,
//! counting its work as the GPU traversal will), and the checker of a tree's invariants with
//! its size, shape and SAH cost.

use super::{BihNode, BihParams, BihTree};
use crate::accel::TreeShape;
use crate::geom::aabb::{Bounds, EMPTY_BOUNDS, centroid, surface_area, triangle_bounds, union};
use crate::geom::ray::{BOX_T_SLACK, Hit, Query, Ray, RayWork, slab, test_leaf};

/// The bin of centroid coordinate `c` among `bins` bins over `[lo, lo + extent]`, as the GPU
/// computes it: `floor((c - lo) · (bins / extent))`, clamped to the last bin.
pub fn bin_of(c: f32, lo: f32, scale: f32, bins: u32) -> u32 {
    (((c - lo) * scale).max(0.0) as u32).min(bins - 1)
}

/// The best binned-SAH split of a node: its axis, the number of bins on the left, and its
/// cost relative to the area of the node's region.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BinnedSplit {
    /// The axis.
    pub axis: usize,
    /// Bins `0..left_bins` go left.
    pub left_bins: u32,
    /// `Ct + Ci · (A_L · n_L + A_R · n_R) / A`, each area a region's.
    pub cost: f64,
}

/// The region `region` with its sides on `axis` moved to `lo` and `hi`.
fn with_sides(region: &Bounds, axis: usize, (lo, hi): (f32, f32)) -> Bounds {
    let mut cut = *region;
    cut.0[axis] = lo;
    cut.1[axis] = hi;
    cut
}

/// The SAH cost of giving `count` primitives whose boxes span `tight` a clip node within
/// `region`: the cheapest axis on which `tight` is narrower than `region`, and
/// `Ct + Ci · n · A(clipped) / A(region)`. None when `tight` fills `region` on every axis.
pub fn best_clip(
    region: &Bounds,
    tight: &Bounds,
    count: usize,
    params: &BihParams,
) -> Option<(usize, f64)> {
    let area = surface_area(region).max(f64::MIN_POSITIVE);
    let mut best: Option<(usize, f64)> = None;
    for axis in 0..3 {
        if tight.0[axis] <= region.0[axis] && tight.1[axis] >= region.1[axis] {
            continue;
        }
        let clipped = with_sides(region, axis, (tight.0[axis], tight.1[axis]));
        let cost = params.traversal_cost as f64
            + params.intersection_cost as f64 * count as f64 * surface_area(&clipped) / area;
        if best.is_none_or(|(_, c)| cost < c) {
            best = Some((axis, cost));
        }
    }
    best
}

/// The best split of the primitives `boxes[i]` for `i` in `indices` (whose centroids span
/// `centroid_bounds`, in the node's `region`), or none when no plane separates them (all
/// centroids equal on every axis). A child's region is the node's with the split axis ending
/// at the left side's largest coordinate or starting at the right side's smallest.
pub fn best_binned_split(
    boxes: &[Bounds],
    indices: &[u32],
    centroid_bounds: &Bounds,
    region: &Bounds,
    params: &BihParams,
) -> Option<BinnedSplit> {
    let bins = params.bins as usize;
    let area = surface_area(region).max(f64::MIN_POSITIVE);
    let mut best: Option<BinnedSplit> = None;
    for axis in 0..3 {
        let (lo, hi) = (centroid_bounds.0[axis], centroid_bounds.1[axis]);
        let extent = hi - lo;
        if extent <= 0.0 || !extent.is_finite() {
            continue;
        }
        let scale = params.bins as f32 / extent;
        // Per bin: the count, and the smallest and largest coordinate of its boxes on the axis.
        let mut bin_spans = vec![(0u32, f32::INFINITY, f32::NEG_INFINITY); bins];
        for &i in indices {
            let b = &boxes[i as usize];
            let span = &mut bin_spans[bin_of(centroid(b)[axis], lo, scale, params.bins) as usize];
            *span = (span.0 + 1, span.1.min(b.0[axis]), span.2.max(b.1[axis]));
        }
        // Sweep from the right: the right side's count and smallest coordinate per candidate.
        let mut right = vec![(0u32, f32::INFINITY); bins];
        let mut running = (0u32, f32::INFINITY);
        for bin in (1..bins).rev() {
            running = (
                running.0 + bin_spans[bin].0,
                running.1.min(bin_spans[bin].1),
            );
            right[bin] = running;
        }
        let mut left = (0u32, f32::NEG_INFINITY);
        for split in 1..bins {
            let (count, _, hi) = bin_spans[split - 1];
            left = (left.0 + count, left.1.max(hi));
            let (n_right, right_min) = right[split];
            if left.0 == 0 || n_right == 0 {
                continue;
            }
            let left_region = with_sides(region, axis, (region.0[axis], left.1));
            let right_region = with_sides(region, axis, (right_min, region.1[axis]));
            let cost = params.traversal_cost as f64
                + params.intersection_cost as f64
                    * (surface_area(&left_region) * left.0 as f64
                        + surface_area(&right_region) * n_right as f64)
                    / area;
            if best.is_none_or(|b| cost < b.cost) {
                best = Some(BinnedSplit {
                    axis,
                    left_bins: split as u32,
                    cost,
                });
            }
        }
    }
    best
}

/// Builds the binned-SAH BIH of `triangles` over `positions`. A node becomes a leaf when it
/// holds at most `max_leaf` primitives, at `max_depth`, or when the SAH prices the leaf
/// (`Ci · n`) no higher than the best split and the best clip node (none when no plane
/// separates its centroids and its primitives fill its region). A clip node is made when it
/// is cheaper than both, except right below another clip node. Primitives are partitioned in
/// place (not stable: a two-pointer swap, as the GPU may order them any way).
pub fn build_bih(positions: &[[f32; 3]], triangles: &[[u32; 3]], params: &BihParams) -> BihTree {
    let boxes = triangle_bounds(positions, triangles);
    let bounds = boxes.iter().fold(EMPTY_BOUNDS, |a, b| union(&a, b));
    let mut indices: Vec<u32> = (0..triangles.len() as u32).collect();
    let mut nodes = vec![BihNode::leaf(0, 0)];
    if triangles.is_empty() {
        return BihTree {
            nodes,
            leaf_primitives: indices,
            bounds,
        };
    }
    let mut pending = vec![Pending {
        node: 0,
        first: 0,
        count: triangles.len(),
        depth: 0,
        region: bounds,
        below_clip: false,
    }];
    while let Some(task) = pending.pop() {
        let Pending {
            node,
            first,
            count,
            depth,
            region,
            ..
        } = task;
        let range = &mut indices[first..first + count];
        let tight = range
            .iter()
            .fold(EMPTY_BOUNDS, |b, &i| union(&b, &boxes[i as usize]));
        let centroid_bounds = range.iter().fold(EMPTY_BOUNDS, |b, &i| {
            let c = centroid(&boxes[i as usize]);
            union(&b, &(c, c))
        });
        let may_split = count > params.max_leaf as usize && depth < params.max_depth;
        let leaf_cost = params.intersection_cost as f64 * count as f64;
        let split = may_split
            .then(|| best_binned_split(&boxes, range, &centroid_bounds, &region, params))
            .flatten()
            .filter(|s| s.cost < leaf_cost);
        let clip = (may_split && params.clip_nodes && !task.below_clip)
            .then(|| best_clip(&region, &tight, count, params))
            .flatten()
            .filter(|&(_, cost)| cost < split.map_or(leaf_cost, |s| s.cost));
        if let Some((axis, _)) = clip {
            let child = nodes.len();
            nodes.push(BihNode::leaf(0, 0));
            let planes = (tight.0[axis], tight.1[axis]);
            nodes[node] = BihNode::clip(axis, child as u32, [planes.0, planes.1]);
            pending.push(Pending {
                node: child,
                depth: depth + 1,
                region: with_sides(&region, axis, planes),
                below_clip: true,
                ..task
            });
            continue;
        }
        let Some(split) = split else {
            nodes[node] = BihNode::leaf(first as u32, count as u32);
            continue;
        };
        let axis = split.axis;
        let lo = centroid_bounds.0[axis];
        let scale = params.bins as f32 / (centroid_bounds.1[axis] - lo);
        let goes_left = |i: u32| {
            bin_of(centroid(&boxes[i as usize])[axis], lo, scale, params.bins) < split.left_bins
        };
        let (mut a, mut b) = (0, range.len());
        while a < b {
            if goes_left(range[a]) {
                a += 1;
            } else {
                b -= 1;
                range.swap(a, b);
            }
        }
        let left_max = range[..a]
            .iter()
            .map(|&i| boxes[i as usize].1[axis])
            .fold(f32::NEG_INFINITY, f32::max);
        let right_min = range[a..]
            .iter()
            .map(|&i| boxes[i as usize].0[axis])
            .fold(f32::INFINITY, f32::min);
        let left = nodes.len();
        nodes.extend([BihNode::leaf(0, 0); 2]);
        nodes[node] = BihNode::split(axis, left as u32, [left_max, right_min]);
        pending.push(Pending {
            node: left + 1,
            first: first + a,
            count: count - a,
            depth: depth + 1,
            region: with_sides(&region, axis, (right_min, region.1[axis])),
            below_clip: false,
        });
        pending.push(Pending {
            node: left,
            first,
            count: a,
            depth: depth + 1,
            region: with_sides(&region, axis, (region.0[axis], left_max)),
            below_clip: false,
        });
    }
    BihTree {
        nodes,
        leaf_primitives: indices,
        bounds,
    }
}

/// A node the CPU builder has yet to write: its run of primitives, depth and region.
#[derive(Clone, Copy)]
struct Pending {
    node: usize,
    first: usize,
    count: usize,
    depth: u32,
    region: Bounds,
    below_clip: bool,
}

/// The parameter interval of the child of a clip node on `axis` between `planes`, for the ray
/// part `[t0, t1]` (empty when `start > end`), widened by [`BOX_T_SLACK`]; a ray parallel to
/// the axis keeps its part when its origin lies between the planes.
pub fn clip_interval(
    ray: &Ray,
    inv_dir: [f32; 3],
    axis: usize,
    planes: [f32; 2],
    (t0, t1): (f32, f32),
) -> (f32, f32) {
    let origin = ray.origin[axis];
    let t_a = (planes[0] - origin) * inv_dir[axis];
    let t_b = (planes[1] - origin) * inv_dir[axis];
    if !t_a.is_finite() || !t_b.is_finite() || ray.direction[axis] == 0.0 {
        return if planes[0] <= origin && origin <= planes[1] {
            (t0, t1)
        } else {
            (f32::INFINITY, f32::NEG_INFINITY)
        };
    }
    let (near, far) = (t_a.min(t_b), t_a.max(t_b));
    (
        t0.max(near - near.abs() * BOX_T_SLACK),
        t1.min(far + far.abs() * BOX_T_SLACK),
    )
}

/// The parameter intervals of the two children of an internal node splitting on `axis` at
/// `clip`, for the ray part `[t0, t1]`: `(left, right)`, each empty when `start > end`.
/// Widened by [`BOX_T_SLACK`] so that rounding never culls a child holding a hit; a ray
/// parallel to the axis goes to the children whose interval holds its origin.
pub fn child_intervals(
    ray: &Ray,
    inv_dir: [f32; 3],
    axis: usize,
    clip: [f32; 2],
    (t0, t1): (f32, f32),
) -> ((f32, f32), (f32, f32)) {
    let (origin, direction) = (ray.origin[axis], ray.direction[axis]);
    let empty = (f32::INFINITY, f32::NEG_INFINITY);
    let t_left = (clip[0] - origin) * inv_dir[axis];
    let t_right = (clip[1] - origin) * inv_dir[axis];
    if !t_left.is_finite() || !t_right.is_finite() || direction == 0.0 {
        let left = if origin <= clip[0] { (t0, t1) } else { empty };
        let right = if origin >= clip[1] { (t0, t1) } else { empty };
        return (left, right);
    }
    let (left_slack, right_slack) = (t_left.abs() * BOX_T_SLACK, t_right.abs() * BOX_T_SLACK);
    if direction > 0.0 {
        // In the left child while the coordinate is at most clip[0], in the right from clip[1].
        (
            (t0, t1.min(t_left + left_slack)),
            (t0.max(t_right - right_slack), t1),
        )
    } else {
        (
            (t0.max(t_left - left_slack), t1),
            (t0, t1.min(t_right + right_slack)),
        )
    }
}

/// Traces `ray` through `tree` (built over `triangles`) for `query`, counting the work: each
/// node the loop reads, and each ray/triangle test. Children are visited near first, the far
/// one's interval kept on a stack; a subtree starting beyond the best hit is dropped.
pub fn trace_bih(
    positions: &[[f32; 3]],
    triangles: &[[u32; 3]],
    tree: &BihTree,
    ray: &Ray,
    query: Query,
) -> (Hit, RayWork) {
    let mut best = Hit::miss(ray);
    let mut work = RayWork::default();
    if tree.leaf_primitives.is_empty() {
        return (best, work);
    }
    let inv_dir = ray.direction.map(|d| 1.0 / d);
    let (near, far) = slab(ray.origin, inv_dir, &tree.bounds);
    let (t0, t1) = (near.max(ray.tmin), far.min(ray.tmax));
    if t0 > t1 {
        return (best, work);
    }
    let mut stack = vec![(0usize, t0, t1)];
    while let Some((mut index, mut t0, mut t1)) = stack.pop() {
        if t0 > best.t + best.t.abs() * BOX_T_SLACK {
            continue;
        }
        loop {
            work.nodes_visited += 1;
            let node = tree.nodes[index];
            if node.is_leaf() {
                let first = node.first_primitive() as usize;
                let ids = &tree.leaf_primitives[first..first + node.primitive_count() as usize];
                let mesh = (positions, triangles);
                if let Some(hit) = test_leaf(mesh, ids, ray, query, &mut best, &mut work) {
                    return (hit, work);
                }
                break;
            }
            if node.is_clip() {
                (t0, t1) = clip_interval(ray, inv_dir, node.axis(), node.clip, (t0, t1));
                if t0 > t1 {
                    break;
                }
                index = node.first_child() as usize;
                continue;
            }
            let left = node.first_child() as usize;
            let (l, r) = child_intervals(ray, inv_dir, node.axis(), node.clip, (t0, t1));
            let ((near, near_span), (far, far_span)) = if ray.direction[node.axis()] >= 0.0 {
                ((left, l), (left + 1, r))
            } else {
                ((left + 1, r), (left, l))
            };
            let (near_open, far_open) = (near_span.0 <= near_span.1, far_span.0 <= far_span.1);
            if far_open {
                if !near_open {
                    (index, t0, t1) = (far, far_span.0, far_span.1);
                    continue;
                }
                stack.push((far, far_span.0, far_span.1));
            }
            if !near_open {
                break;
            }
            (index, t0, t1) = (near, near_span.0, near_span.1);
        }
    }
    (best, work)
}

/// Size, shape and SAH cost of a BIH.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct BihStats {
    /// All nodes reached from the root.
    pub nodes: usize,
    /// Leaves.
    pub leaves: usize,
    /// Clip nodes.
    pub clips: usize,
    /// The most internal nodes above any leaf.
    pub depth: u32,
    /// The most primitives in one leaf.
    pub max_leaf_size: usize,
    /// Primitive references in the leaves: every primitive once.
    pub references: usize,
    /// Σ over internal nodes of A(region)/A(root) · `Ct` plus Σ over leaves of
    /// A(region)/A(root) · `Ci` · primitives, a node's region being the scene box cut by its
    /// ancestors' planes: what a ray must cross to reach it (a root of zero area counts as
    /// area 1).
    pub sah_cost: f64,
}

impl BihStats {
    /// The tree's shape as reports show it, its SAH cost being that of `params`.
    pub fn shape(&self, params: &BihParams) -> TreeShape {
        TreeShape {
            nodes: self.nodes as u64,
            leaves: self.leaves as u64,
            depth: self.depth,
            references: self.references as u64,
            sah_cost: Some(self.sah_cost),
            sah_model: Some(format!(
                "Ct {}, Ci {} per triangle, node regions",
                params.traversal_cost, params.intersection_cost
            )),
            nodes_per_level: Vec::new(),
            in_view: None,
        }
    }
}

/// The children of an internal node, each with its region within `region`: a split's two,
/// a clip node's one.
fn children(node: &BihNode, region: &Bounds) -> Vec<(usize, Bounds)> {
    let (axis, first) = (node.axis(), node.first_child() as usize);
    let (lo, hi) = (region.0[axis], region.1[axis]);
    if node.is_clip() {
        let planes = (node.clip[0].max(lo), node.clip[1].min(hi));
        return vec![(first, with_sides(region, axis, planes))];
    }
    vec![
        (first, with_sides(region, axis, (lo, node.clip[0].min(hi)))),
        (
            first + 1,
            with_sides(region, axis, (node.clip[1].max(lo), hi)),
        ),
    ]
}

/// Checks `tree` against the mesh it was built over and returns its statistics under the
/// costs of `params`: every node reached once from the root with its children after it and
/// in range, no clip node right below another, every primitive in exactly one leaf, each
/// child's primitives within its planes (a split's left child's boxes end at most at
/// `clip[0]`, its right child's start at least at `clip[1]`; a clip node's child's lie between
/// its planes), and the scene box holding every triangle. The error names the first broken
/// invariant.
pub fn check_bih(
    positions: &[[f32; 3]],
    triangles: &[[u32; 3]],
    tree: &BihTree,
    params: &BihParams,
) -> Result<BihStats, String> {
    let boxes = triangle_bounds(positions, triangles);
    let n = triangles.len();
    if tree.leaf_primitives.len() != n {
        return Err(format!(
            "{} leaf entries for {n} primitives",
            tree.leaf_primitives.len()
        ));
    }
    let mut seen = vec![false; n];
    let mut reached = vec![false; tree.nodes.len()];
    let mut stats = BihStats::default();
    let scene = boxes.iter().fold(EMPTY_BOUNDS, |a, b| union(&a, b));
    if scene != tree.bounds && n > 0 {
        return Err(format!("scene box {:?}, expected {scene:?}", tree.bounds));
    }
    let root_area = match surface_area(&scene) {
        a if a > 0.0 => a,
        _ => 1.0,
    };
    // Top-down: (node, depth, region); the visiting order, parents before children.
    let mut order = Vec::new();
    let mut stack = vec![(0usize, 0u32, scene)];
    while let Some((index, depth, region)) = stack.pop() {
        let node = tree
            .nodes
            .get(index)
            .ok_or(format!("node {index} out of range"))?;
        if std::mem::replace(&mut reached[index], true) {
            return Err(format!("node {index} reached twice"));
        }
        order.push(index);
        let area = surface_area(&region) / root_area;
        if !node.is_leaf() {
            stats.sah_cost += area * params.traversal_cost as f64;
            stats.clips += node.is_clip() as usize;
            for (child, child_region) in children(node, &region) {
                let below = tree.nodes.get(child);
                if child <= index || below.is_none() {
                    return Err(format!("node {index}: child {child} out of order"));
                }
                if node.is_clip() && below.is_some_and(BihNode::is_clip) {
                    return Err(format!("clip node {index} above clip node {child}"));
                }
                stack.push((child, depth + 1, child_region));
            }
            continue;
        }
        stats.leaves += 1;
        stats.depth = stats.depth.max(depth);
        let (first, count) = (
            node.first_primitive() as usize,
            node.primitive_count() as usize,
        );
        stats.max_leaf_size = stats.max_leaf_size.max(count);
        stats.sah_cost += area * params.intersection_cost as f64 * count as f64;
        let entries = tree
            .leaf_primitives
            .get(first..first + count)
            .ok_or(format!(
                "leaf {index}: entries {first}..{} out of range",
                first + count
            ))?;
        for &p in entries {
            let slot = seen
                .get_mut(p as usize)
                .ok_or(format!("leaf {index}: primitive {p} out of range"))?;
            if std::mem::replace(slot, true) {
                return Err(format!("primitive {p} in two leaves"));
            }
        }
    }
    stats.nodes = order.len();
    stats.references = n;
    if let Some(p) = seen.iter().position(|&s| !s) {
        return Err(format!("primitive {p} in no leaf"));
    }
    // Bottom-up: each node's box and primitive count, checking the planes.
    let mut node_boxes = vec![(EMPTY_BOUNDS, 0usize); tree.nodes.len()];
    for &index in order.iter().rev() {
        let node = tree.nodes[index];
        if node.is_leaf() {
            let first = node.first_primitive() as usize;
            let entries = &tree.leaf_primitives[first..first + node.primitive_count() as usize];
            let b = entries
                .iter()
                .fold(EMPTY_BOUNDS, |b, &p| union(&b, &boxes[p as usize]));
            node_boxes[index] = (b, entries.len());
            continue;
        }
        let (axis, first) = (node.axis(), node.first_child() as usize);
        if node.is_clip() {
            let (b, count) = node_boxes[first];
            if count == 0 || b.0[axis] < node.clip[0] || b.1[axis] > node.clip[1] {
                return Err(format!(
                    "clip node {index}: its child spans {}..{} on axis {axis}, planes {:?}",
                    b.0[axis], b.1[axis], node.clip
                ));
            }
            node_boxes[index] = (b, count);
            continue;
        }
        let ((lb, ln), (rb, rn)) = (node_boxes[first], node_boxes[first + 1]);
        if ln == 0 || rn == 0 {
            return Err(format!("node {index}: an empty child"));
        }
        if lb.1[axis] > node.clip[0] || rb.0[axis] < node.clip[1] {
            return Err(format!(
                "node {index}: children span {}..{} and {}..{} on axis {axis}, planes {:?}",
                lb.0[axis], lb.1[axis], rb.0[axis], rb.1[axis], node.clip
            ));
        }
        node_boxes[index] = (union(&lb, &rb), ln + rn);
    }
    Ok(stats)
}
