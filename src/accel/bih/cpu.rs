//! The CPU reference of the BIH: a binned-SAH builder with the GPU builder's parameters and
//! arithmetic (bins over the centroid bounds, in f32), the traversal with interval clipping
//! (closest and any hit, counting its work as the GPU traversal will), and the checker of a
//! tree's invariants with its size, shape and SAH cost.

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
/// cost relative to the node's area.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BinnedSplit {
    /// The axis.
    pub axis: usize,
    /// Bins `0..left_bins` go left.
    pub left_bins: u32,
    /// `Ct + Ci · (A_L · n_L + A_R · n_R) / A`.
    pub cost: f64,
}

/// The best split of the primitives `boxes[i]` for `i` in `indices` (whose centroids span
/// `centroid_bounds` and whose boxes span `node_bounds`), or none when no plane separates
/// them (all centroids equal on every axis).
pub fn best_binned_split(
    boxes: &[Bounds],
    indices: &[u32],
    (centroid_bounds, node_bounds): (&Bounds, &Bounds),
    params: &BihParams,
) -> Option<BinnedSplit> {
    let bins = params.bins as usize;
    let area = surface_area(node_bounds).max(f64::MIN_POSITIVE);
    let mut best: Option<BinnedSplit> = None;
    for axis in 0..3 {
        let (lo, hi) = (centroid_bounds.0[axis], centroid_bounds.1[axis]);
        let extent = hi - lo;
        if extent <= 0.0 || !extent.is_finite() {
            continue;
        }
        let scale = params.bins as f32 / extent;
        let mut counts = vec![0u32; bins];
        let mut bin_bounds = vec![EMPTY_BOUNDS; bins];
        for &i in indices {
            let b = &boxes[i as usize];
            let bin = bin_of(centroid(b)[axis], lo, scale, params.bins) as usize;
            counts[bin] += 1;
            bin_bounds[bin] = union(&bin_bounds[bin], b);
        }
        // Sweep from the right: the right side's count and box for each candidate.
        let mut right = vec![(0u32, EMPTY_BOUNDS); bins];
        let mut running = (0u32, EMPTY_BOUNDS);
        for bin in (1..bins).rev() {
            running = (running.0 + counts[bin], union(&running.1, &bin_bounds[bin]));
            right[bin] = running;
        }
        let mut left = (0u32, EMPTY_BOUNDS);
        for split in 1..bins {
            left = (
                left.0 + counts[split - 1],
                union(&left.1, &bin_bounds[split - 1]),
            );
            let (n_right, right_box) = right[split];
            if left.0 == 0 || n_right == 0 {
                continue;
            }
            let cost = params.traversal_cost as f64
                + params.intersection_cost as f64
                    * (surface_area(&left.1) * left.0 as f64
                        + surface_area(&right_box) * n_right as f64)
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
/// holds at most `max_leaf` primitives, at `max_depth`, when no plane separates its centroids,
/// or when the SAH prices the leaf (`Ci · n`) no higher than the best split. Primitives are partitioned
/// in place (not stable: a two-pointer swap, as the GPU may order them any way).
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
    // (node, first, count, depth)
    let mut pending = vec![(0usize, 0usize, triangles.len(), 0u32)];
    while let Some((node, first, count, depth)) = pending.pop() {
        let range = &mut indices[first..first + count];
        let node_bounds = range
            .iter()
            .fold(EMPTY_BOUNDS, |b, &i| union(&b, &boxes[i as usize]));
        let centroid_bounds = range.iter().fold(EMPTY_BOUNDS, |b, &i| {
            let c = centroid(&boxes[i as usize]);
            union(&b, &(c, c))
        });
        let split = (count > params.max_leaf as usize && depth < params.max_depth)
            .then(|| best_binned_split(&boxes, range, (&centroid_bounds, &node_bounds), params))
            .flatten()
            .filter(|s| s.cost < params.intersection_cost as f64 * count as f64);
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
        nodes[node] = BihNode::internal(axis, left as u32, [left_max, right_min]);
        pending.push((left + 1, first + a, count - a, depth + 1));
        pending.push((left, first, a, depth + 1));
    }
    BihTree {
        nodes,
        leaf_primitives: indices,
        bounds,
    }
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
            let left = node.left_child() as usize;
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
    /// The most internal nodes above any leaf.
    pub depth: u32,
    /// The most primitives in one leaf.
    pub max_leaf_size: usize,
    /// Primitive references in the leaves: every primitive once.
    pub references: usize,
    /// Σ over internal nodes of SA(node)/SA(root) · `Ct` plus Σ over leaves of
    /// SA(leaf)/SA(root) · `Ci` · primitives, each node's box the union of its primitives'
    /// (a root of zero area counts as area 1).
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
                "Ct {}, Ci {} per triangle",
                params.traversal_cost, params.intersection_cost
            )),
            nodes_per_level: Vec::new(),
        }
    }
}

/// Checks `tree` against the mesh it was built over and returns its statistics under the
/// costs of `params`: every node reached once from the root with its children in range,
/// every primitive in exactly one leaf, each child's primitives within its side's plane
/// (the left child's boxes end at most at `clip[0]`, the right child's start at least at
/// `clip[1]`), and the scene box holding every triangle. The error names the first broken
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
    // (node, depth); returns the primitives under each node as a list, bottom-up.
    let mut order = Vec::new();
    let mut stack = vec![(0usize, 0u32)];
    while let Some((index, depth)) = stack.pop() {
        let node = tree
            .nodes
            .get(index)
            .ok_or(format!("node {index} out of range"))?;
        if std::mem::replace(&mut reached[index], true) {
            return Err(format!("node {index} reached twice"));
        }
        order.push(index);
        if node.is_leaf() {
            stats.leaves += 1;
            stats.depth = stats.depth.max(depth);
            let (first, count) = (
                node.first_primitive() as usize,
                node.primitive_count() as usize,
            );
            stats.max_leaf_size = stats.max_leaf_size.max(count);
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
        } else {
            let left = node.left_child() as usize;
            if left + 1 >= tree.nodes.len() || left <= index {
                return Err(format!(
                    "node {index}: children {left}, {} out of order",
                    left + 1
                ));
            }
            stack.push((left, depth + 1));
            stack.push((left + 1, depth + 1));
        }
    }
    stats.nodes = order.len();
    stats.references = n;
    if let Some(p) = seen.iter().position(|&s| !s) {
        return Err(format!("primitive {p} in no leaf"));
    }
    // Boxes bottom-up (children are pushed after their parent), checking the planes.
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
            stats.sah_cost += surface_area(&b) / root_area
                * params.intersection_cost as f64
                * entries.len() as f64;
            continue;
        }
        let (axis, left) = (node.axis(), node.left_child() as usize);
        let ((lb, ln), (rb, rn)) = (node_boxes[left], node_boxes[left + 1]);
        if ln == 0 || rn == 0 {
            return Err(format!("node {index}: an empty child"));
        }
        if lb.1[axis] > node.clip[0] || rb.0[axis] < node.clip[1] {
            return Err(format!(
                "node {index}: children span {}..{} and {}..{} on axis {axis}, planes {:?}",
                lb.0[axis], lb.1[axis], rb.0[axis], rb.1[axis], node.clip
            ));
        }
        let b = union(&lb, &rb);
        node_boxes[index] = (b, ln + rn);
        stats.sah_cost += surface_area(&b) / root_area * params.traversal_cost as f64;
    }
    Ok(stats)
}
