//! Point kd-trees on the CPU: the VVH builder (the reference the GPU builder will be checked
//! against, and the builder of trees uploaded for the GPU queries until then), the tree's
//! invariant checker, and brute-force queries, the reference of every GPU query.

use super::{PointKdNode, PointKdParams, PointKdTree};

/// A box, low and high corners.
type Box3 = ([f32; 3], [f32; 3]);

/// The squared distance between `a` and `b`, summed x, y, z in that order (`distance2` in
/// `glsl/pointkd/format.glsl`, whose result it equals exactly).
pub fn distance2(a: [f32; 3], b: [f32; 3]) -> f32 {
    let d = [a[0] - b[0], a[1] - b[1], a[2] - b[2]];
    d[0] * d[0] + d[1] * d[1] + d[2] * d[2]
}

/// The `k` points nearest `q` (all of them when fewer), as (squared distance, index) sorted
/// by distance, then index.
pub fn knn_brute_force(points: &[[f32; 3]], q: [f32; 3], k: usize) -> Vec<(f32, u32)> {
    let mut all: Vec<(f32, u32)> = points
        .iter()
        .enumerate()
        .map(|(i, &p)| (distance2(p, q), i as u32))
        .collect();
    all.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    all.truncate(k);
    all
}

/// How many points lie at a squared distance below `r2` from `q`.
pub fn range_count_brute_force(points: &[[f32; 3]], q: [f32; 3], r2: f32) -> usize {
    points.iter().filter(|&&p| distance2(p, q) < r2).count()
}

fn bounds(points: &[[f32; 3]], ids: &[u32]) -> Box3 {
    let mut lo = [f32::INFINITY; 3];
    let mut hi = [f32::NEG_INFINITY; 3];
    for &i in ids {
        for a in 0..3 {
            lo[a] = lo[a].min(points[i as usize][a]);
            hi[a] = hi[a].max(points[i as usize][a]);
        }
    }
    (lo, hi)
}

/// The volume of `cell` grown by `r` on every side, in f32 in the order the GPU builder
/// computes it, so that both price splits alike.
fn grown_volume((lo, hi): Box3, r: f32) -> f32 {
    let side = |a: usize| (hi[a] - lo[a]) + 2.0 * r;
    side(0) * side(1) * side(2)
}

/// The radius of a sphere holding `k` of `count` points spread evenly over a box of these
/// extents (flat extents counted as a thousandth of the largest; 1 for no points or no
/// extent), in f32 as `glsl/pointkd/build.glsl` computes it.
pub fn density_radius(extents: [f32; 3], count: usize, k: u32) -> f32 {
    let largest = extents[0].max(extents[1]).max(extents[2]);
    if count == 0 || largest.is_nan() || largest <= 0.0 {
        return 1.0;
    }
    let sides = extents.map(|e| e.max(largest * 1e-3));
    let volume = sides[0] * sides[1] * sides[2];
    // (3 V k / (4 pi count))^(1/3), as products only, so the GPU computes the same bits.
    let sphere = volume * k.max(1) as f32 * (3.0 / (4.0 * std::f32::consts::PI));
    let root = inverse_cbrt(sphere);
    sphere * root * root * inverse_cbrt(count as f32)
}

/// `x^(-1/3)` for a positive normal `x`, by a bit-level first guess and four Newton steps of
/// products and sums only (`inverse_cbrt` in `glsl/pointkd/build.glsl`, bit for bit).
pub fn inverse_cbrt(x: f32) -> f32 {
    let mut y = f32::from_bits(0x54a2_fa8c - x.to_bits() / 3);
    for _ in 0..4 {
        y = y * (4.0 / 3.0 - x * (1.0 / 3.0) * y * y * y);
    }
    y
}

/// The tree's query radius `R`: the parameter, or the [`density_radius`] of the cloud's box
/// for `k_estimate` neighbours (as the GPU builder's `init.comp` estimates it).
pub fn query_radius(points: &[[f32; 3]], params: &PointKdParams) -> f32 {
    if let Some(r) = params.query_radius {
        return r;
    }
    let ids: Vec<u32> = (0..points.len() as u32).collect();
    let (lo, hi) = bounds(points, &ids);
    let extents: [f32; 3] = std::array::from_fn(|a| (hi[a] - lo[a]).max(0.0));
    density_radius(extents, points.len(), params.k_estimate)
}

/// Builds the VVH point kd-tree of `points` (see the module's documentation). Errors name the
/// first point that is not finite, or parameters out of range.
pub fn build(points: &[[f32; 3]], params: &PointKdParams) -> Result<PointKdTree, String> {
    if let Some(i) = points.iter().position(|p| p.iter().any(|x| !x.is_finite())) {
        return Err(format!("point {i} is not finite: {:?}", points[i]));
    }
    if points.len() >= 1 << 30 {
        return Err(format!("{} points: at most 2^30", points.len()));
    }
    if params.max_depth > super::MAX_DEPTH || params.max_leaf == 0 {
        return Err(format!(
            "depth limit {} (at most {}) and leaf size {} (at least 1)",
            params.max_depth,
            super::MAX_DEPTH,
            params.max_leaf
        ));
    }
    let radius = query_radius(points, params);
    if !(radius.is_finite() && radius > 0.0) {
        return Err(format!("query radius {radius}: a positive number"));
    }
    let mut ids: Vec<u32> = (0..points.len() as u32).collect();
    let root = bounds(points, &ids);
    let mut builder = Builder {
        points,
        params,
        radius,
        nodes: Vec::new(),
    };
    builder.nodes.push(PointKdNode::default());
    builder.node(0, &mut ids, (0, root, 0), None);
    Ok(PointKdTree {
        nodes: builder.nodes,
        point_ids: ids,
        query_radius: radius,
    })
}

struct Builder<'a> {
    points: &'a [[f32; 3]],
    params: &'a PointKdParams,
    radius: f32,
    nodes: Vec<PointKdNode>,
}

impl Builder<'_> {
    /// Writes node `index`: the subtree of `ids` (entries from `first`) within `cell` at
    /// `depth`, its children allocated as a pair after the nodes so far. `small_radius` is the
    /// radius small nodes below a small node are priced for.
    fn node(
        &mut self,
        index: usize,
        ids: &mut [u32],
        (first, cell, depth): (u32, Box3, u32),
        small_radius: Option<f32>,
    ) {
        let n = ids.len() as u32;
        let tight = bounds(self.points, ids);
        self.nodes[index] = PointKdNode::leaf(first, n, tight);
        if n <= self.params.max_leaf || depth >= self.params.max_depth || tight.0 == tight.1 {
            return;
        }
        let mut small_radius = small_radius;
        let split = if n > self.params.large_node {
            self.large_split(tight, cell)
        } else {
            let radius = *small_radius.get_or_insert_with(|| self.small_radius(cell, n));
            self.small_split(ids, cell, radius)
        };
        let Some((axis, x)) = split else {
            return;
        };
        // Points below the split go left, keeping their order.
        let below = |&i: &u32| self.points[i as usize][axis] < x;
        ids.sort_by_key(|i| !below(i));
        let left = ids.partition_point(below);
        let (mut left_cell, mut right_cell) = (cell, cell);
        left_cell.1[axis] = x;
        right_cell.0[axis] = x;
        let (left_ids, right_ids) = ids.split_at_mut(left);
        let children = self.nodes.len();
        self.nodes.extend([PointKdNode::default(); 2]);
        self.nodes[index] = PointKdNode::split(axis, x, children as u32, tight);
        let below = (first, left_cell, depth + 1);
        self.node(children, left_ids, below, small_radius);
        let above = (first + left as u32, right_cell, depth + 1);
        self.node(children + 1, right_ids, above, small_radius);
    }

    /// The radius a small node (the first of at most `T` points on its path) and its subtree
    /// are priced for: `R` when it was given, else the [`density_radius`] of its own cell and
    /// points, so that dense clusters and sparse regions each get their own.
    fn small_radius(&self, cell: Box3, count: u32) -> f32 {
        if self.params.query_radius.is_some() {
            return self.radius;
        }
        let extents = std::array::from_fn(|a| (cell.1[a] - cell.0[a]).max(0.0));
        density_radius(extents, count as usize, self.params.k_estimate)
    }

    /// A large node's split: the empty part of its cell cut off when it exceeds the empty-space
    /// fraction on some side (the largest such part), else the spatial median of its points'
    /// box on its longest axis. Fractions are compared as products (`a / b > c / d` as
    /// `a d > c b`): Vulkan lets a GPU round a division by up to 2.5 ulps but a product only
    /// correctly, so the GPU builder decides alike on every device.
    fn large_split(&self, (lo, hi): Box3, cell: Box3) -> Option<(usize, f32)> {
        // (empty part, extent, axis, plane)
        let mut best: Option<(f32, f32, usize, f32)> = None;
        for a in 0..3 {
            let extent = cell.1[a] - cell.0[a];
            // Below the points the cut is at their low side; above them just past their high
            // side (a cut at it would keep them all left), which must still lie inside the
            // cell, or it would cut nothing off (a flat box in a cell a few ulps wide), level
            // after level.
            let above = next_up_normal(hi[a]);
            let sides = [
                (lo[a] - cell.0[a], lo[a], true),
                (cell.1[a] - hi[a], above, above < cell.1[a]),
            ];
            for (empty, plane, inside) in sides {
                if empty > self.params.empty_space * extent
                    && best.is_none_or(|b| empty * b.1 > b.0 * extent)
                    && inside
                {
                    best = Some((empty, extent, a, plane));
                }
            }
        }
        if let Some((_, _, axis, plane)) = best {
            return Some((axis, plane));
        }
        let axis = (0..3)
            .max_by(|&a, &b| (hi[a] - lo[a]).total_cmp(&(hi[b] - lo[b])))
            .unwrap();
        let middle = lo[axis] + (hi[axis] - lo[axis]) * 0.5;
        // A box one ulp wide has no plane strictly inside, and a subnormal middle (a box
        // within 1e-38 of zero) is none on a device that flushes subnormals: split at its top.
        let inside = middle > lo[axis] && !middle.is_subnormal();
        Some((axis, if inside { middle } else { hi[axis] }))
    }

    /// A small node's split of least VVH cost among its points' coordinates, when it costs less
    /// than testing all its points. The cost `Cts + (n_L V_L + n_R V_R) / V` is compared
    /// without its division, whose rounding Vulkan leaves to the device: a split beats a leaf
    /// of `n` points when `n_L V_L + n_R V_R < (n - Cts) V`, and the least of those sums wins.
    fn small_split(&self, ids: &[u32], cell: Box3, radius: f32) -> Option<(usize, f32)> {
        let parent = grown_volume(cell, radius);
        let n = ids.len();
        let mut best = ((n as f32 - self.params.traversal_cost) * parent, None);
        for axis in 0..3 {
            let mut coords: Vec<f32> = ids.iter().map(|&i| self.points[i as usize][axis]).collect();
            coords.sort_by(f32::total_cmp);
            for left in 1..n {
                let x = coords[left];
                if x == coords[left - 1] {
                    continue;
                }
                let (mut l, mut r) = (cell, cell);
                l.1[axis] = x;
                r.0[axis] = x;
                let weighted = left as f32 * grown_volume(l, radius)
                    + (n - left) as f32 * grown_volume(r, radius);
                if weighted < best.0 {
                    best = (weighted, Some((axis, x)));
                }
            }
        }
        best.1
    }
}

/// The least float above `x` that is zero or normal (`next_up_normal` in
/// `glsl/pointkd/build.glsl`): the next float, or, where that is subnormal (`x` zero or the
/// least normal's negative), the least positive normal or zero. A device that flushes
/// subnormals to zero (NVIDIA's) compares a point at zero with a plane at the least subnormal
/// as with zero, and would send it right.
fn next_up_normal(x: f32) -> f32 {
    let up = x.next_up();
    if !up.is_subnormal() {
        up
    } else if up > 0.0 {
        f32::MIN_POSITIVE
    } else {
        0.0
    }
}

/// What a checked tree holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct PointKdStats {
    /// Nodes.
    pub nodes: u64,
    /// Leaves.
    pub leaves: u64,
    /// The deepest leaf's level.
    pub depth: u32,
    /// The most points in a leaf.
    pub largest_leaf: u32,
}

/// Checks `tree` over `points`: every point in exactly one leaf; each node's box is its points'
/// box; every point left of a split lies below it and every point right of it at or above it;
/// no split is subnormal (a device that flushes subnormals to zero would place points by zero);
/// children after their parent and in range; every node reached once. The error names the first broken invariant.
pub fn check(points: &[[f32; 3]], tree: &PointKdTree) -> Result<PointKdStats, String> {
    let mut seen = vec![false; points.len()];
    let mut stats = PointKdStats::default();
    if tree.point_ids.len() != points.len() {
        return Err(format!(
            "{} point entries for {} points",
            tree.point_ids.len(),
            points.len()
        ));
    }
    // (node, depth, entries it covers)
    let mut stack = vec![(0usize, 0u32)];
    let entries_of = |node: usize| -> Result<(u32, u32), String> {
        // A subtree's entries are contiguous: from its leftmost leaf to its rightmost.
        let (mut first, mut last) = (node, node);
        for _ in 0..=super::MAX_DEPTH {
            if tree.nodes[first].is_leaf() && tree.nodes[last].is_leaf() {
                let (a, b) = (&tree.nodes[first], &tree.nodes[last]);
                return Ok((a.word1, b.word1 + b.payload()));
            }
            let child = |at: usize, offset: usize| -> Result<usize, String> {
                if tree.nodes[at].is_leaf() {
                    return Ok(at);
                }
                let c = tree.nodes[at].payload() as usize + offset;
                if c <= at || c >= tree.nodes.len() {
                    return Err(format!("node {at}: children out of range"));
                }
                Ok(c)
            };
            first = child(first, 0)?;
            last = child(last, 1)?;
        }
        Err(format!("node {node}: deeper than {}", super::MAX_DEPTH))
    };
    if tree.nodes.is_empty() {
        return Err("no root".into());
    }
    while let Some((index, depth)) = stack.pop() {
        let node = tree.nodes[index];
        stats.nodes += 1;
        let (begin, end) = entries_of(index)?;
        if begin > end || end as usize > tree.point_ids.len() {
            return Err(format!("node {index}: entries {begin}..{end} out of range"));
        }
        let ids = &tree.point_ids[begin as usize..end as usize];
        if !ids.is_empty() && bounds(points, ids) != (node.lo, node.hi) {
            return Err(format!("node {index}: box is not its points' box"));
        }
        if node.is_leaf() {
            stats.leaves += 1;
            stats.depth = stats.depth.max(depth);
            stats.largest_leaf = stats.largest_leaf.max(node.payload());
            for &id in ids {
                let Some(slot) = seen.get_mut(id as usize) else {
                    return Err(format!("leaf {index}: point {id} out of range"));
                };
                if std::mem::replace(slot, true) {
                    return Err(format!("point {id} in two leaves"));
                }
            }
            continue;
        }
        let (axis, x, left) = (node.axis(), node.split_position(), node.payload() as usize);
        if x.is_subnormal() {
            return Err(format!("node {index}: split {x:e} is subnormal"));
        }
        if left <= index || left + 1 >= tree.nodes.len() {
            return Err(format!("node {index}: children {left} out of place"));
        }
        let (lb, le) = entries_of(left)?;
        let (rb, re) = entries_of(left + 1)?;
        if lb != begin || le != rb || re != end {
            return Err(format!("node {index}: children do not split its entries"));
        }
        let side = |range: (u32, u32), below: bool| {
            tree.point_ids[range.0 as usize..range.1 as usize]
                .iter()
                .all(|&i| (points[i as usize][axis] < x) == below)
        };
        if !side((lb, le), true) || !side((rb, re), false) {
            return Err(format!(
                "node {index}: a point on the wrong side of its split"
            ));
        }
        stack.push((left + 1, depth + 1));
        stack.push((left, depth + 1));
    }
    if stats.nodes != tree.nodes.len() as u64 {
        return Err(format!(
            "{} nodes reached of {}",
            stats.nodes,
            tree.nodes.len()
        ));
    }
    if let Some(missing) = seen.iter().position(|s| !s) {
        return Err(format!("point {missing} in no leaf"));
    }
    Ok(stats)
}
