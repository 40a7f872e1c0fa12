//! The LBVH reference: Karras' binary radix tree over sorted Morton codes ("Maximizing
//! parallelism in the construction of BVHs, octrees, and k-d trees", HPG 2012, §3-§4),
//! bottom-up box fitting, tree statistics with the SAH cost, and the invariant checker used
//! on GPU-built trees.
//!
//! Trees are in the [`BvhNode`] format of [`crate::accel::bvh`]. Internal node `i` of the
//! radix tree is computed independently of all others by [`radix_node`], exactly as one GPU
//! thread does.

use crate::accel::TreeShape;
use crate::accel::bvh::{BvhNode, INVALID_CHILD, LEAF_BIT, NO_PARENT};
use crate::geom::aabb::{
    Bounds, EMPTY_BOUNDS, centroid, contains, surface_area, triangle_bounds, union,
};
use crate::geom::morton::MortonBits;

/// SAH cost of traversing an internal node.
pub const SAH_TRAVERSAL_COST: f64 = 1.0;
/// SAH cost of intersecting one primitive.
pub const SAH_INTERSECTION_COST: f64 = 1.0;

/// δ(i, j): -1 if `j` is outside `0..n`; the common prefix length of keys `i` and `j` in a
/// `key_bits`-bit key; for equal keys, `key_bits` plus the common prefix length of the 32-bit
/// indices (the key augmented with its index).
fn delta(keys: &[u64], key_bits: u32, i: i64, j: i64) -> i32 {
    if j < 0 || j >= keys.len() as i64 {
        return -1;
    }
    let (a, b) = (keys[i as usize], keys[j as usize]);
    if a == b {
        (key_bits + (i as u32 ^ j as u32).leading_zeros()) as i32
    } else {
        (a ^ b).leading_zeros() as i32 - (64 - key_bits) as i32
    }
}

/// One internal node of the radix tree: it covers keys `first..=last`, its left child covers
/// `first..=split` and its right child `split + 1..=last`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RadixNode {
    /// First key covered.
    pub first: u32,
    /// Last key covered.
    pub last: u32,
    /// Last key of the left child (γ).
    pub split: u32,
    /// δnode: the length of the keys' common prefix (beyond `key_bits` when all keys are
    /// equal and the indices decide).
    pub prefix_len: i32,
}

impl RadixNode {
    /// Left child reference: `LEAF_BIT | split` if it covers one key, else internal `split`.
    pub fn left(&self) -> u32 {
        if self.first == self.split {
            LEAF_BIT | self.split
        } else {
            self.split
        }
    }

    /// Right child reference: `LEAF_BIT | (split + 1)` if it covers one key, else internal
    /// `split + 1`.
    pub fn right(&self) -> u32 {
        if self.last == self.split + 1 {
            LEAF_BIT | (self.split + 1)
        } else {
            self.split + 1
        }
    }
}

/// Internal node `i` (`0..n-1`, `n >= 2`) of the radix tree over `keys` (sorted, values below
/// `2^key_bits`), following Figure 4 of the paper to the letter.
pub fn radix_node(keys: &[u64], key_bits: u32, i: usize) -> RadixNode {
    debug_assert!(keys.len() >= 2 && i + 1 < keys.len());
    let i = i as i64;
    let delta_i = |j: i64| delta(keys, key_bits, i, j);
    // Direction of the range; sorted keys never give a tie.
    let d: i64 = if delta_i(i + 1) > delta_i(i - 1) {
        1
    } else {
        -1
    };
    // Upper bound of the range's length, then the other end by binary search.
    let delta_min = delta_i(i - d);
    let mut l_max = 2i64;
    while delta_i(i + l_max * d) > delta_min {
        l_max *= 2;
    }
    let mut l = 0i64;
    let mut t = l_max / 2;
    while t >= 1 {
        if delta_i(i + (l + t) * d) > delta_min {
            l += t;
        }
        t /= 2;
    }
    let j = i + l * d;
    // The split by binary search with steps ceil(l/2), ceil(l/4), ..., 1.
    let delta_node = delta_i(j);
    let mut s = 0i64;
    let mut div = 2i64;
    loop {
        let t = (l + div - 1) / div;
        if delta_i(i + (s + t) * d) > delta_node {
            s += t;
        }
        if t == 1 {
            break;
        }
        div *= 2;
    }
    let gamma = i + s * d + d.min(0);
    RadixNode {
        first: i.min(j) as u32,
        last: i.max(j) as u32,
        split: gamma as u32,
        prefix_len: delta_node,
    }
}

/// The radix tree over `sorted_keys` (`key_bits` 32 for widened u32 keys, or 64) with zero
/// boxes, parents and leaf counts set. One key gives the one-primitive tree (its right child
/// [`INVALID_CHILD`] with the empty box), no keys an empty Vec.
pub fn build_radix_tree(sorted_keys: &[u64], key_bits: u32) -> Vec<BvhNode> {
    debug_assert!(key_bits == 32 || key_bits == 64);
    let n = sorted_keys.len();
    let zero = bytemuck::Zeroable::zeroed();
    match n {
        0 => Vec::new(),
        1 => vec![BvhNode {
            left: LEAF_BIT,
            right: INVALID_CHILD,
            right_min: EMPTY_BOUNDS.0,
            right_max: EMPTY_BOUNDS.1,
            parent: NO_PARENT,
            leaf_count: 1,
            ..zero
        }],
        _ => {
            let mut nodes: Vec<BvhNode> = (0..n - 1)
                .map(|i| {
                    let r = radix_node(sorted_keys, key_bits, i);
                    BvhNode {
                        left: r.left(),
                        right: r.right(),
                        parent: NO_PARENT,
                        leaf_count: r.last - r.first + 1,
                        ..zero
                    }
                })
                .collect();
            for i in 0..n - 1 {
                for child in [nodes[i].left, nodes[i].right] {
                    if child & LEAF_BIT == 0 {
                        nodes[child as usize].parent = i as u32;
                    }
                }
            }
            nodes
        }
    }
}

/// The number of internal nodes of a tree over `leaves` leaves: `leaves - 1`, except that one
/// leaf still has its (one-primitive) root.
pub fn internal_node_count(leaves: usize) -> usize {
    match leaves {
        0 => 0,
        1 => 1,
        n => n - 1,
    }
}

/// The two child references of a node.
fn children(node: &BvhNode) -> [u32; 2] {
    [node.left, node.right]
}

/// The box a node stores for its left (0) or right (1) child.
fn child_bounds(node: &BvhNode, side: usize) -> Bounds {
    if side == 0 {
        (node.left_min, node.left_max)
    } else {
        (node.right_min, node.right_max)
    }
}

/// The box of an internal node: the union of its children's boxes.
fn node_bounds(node: &BvhNode) -> Bounds {
    union(&child_bounds(node, 0), &child_bounds(node, 1))
}

/// Internal nodes of a valid tree with parents before children (root first).
pub(crate) fn top_down_order(nodes: &[BvhNode]) -> Vec<usize> {
    let mut order = Vec::with_capacity(nodes.len());
    if !nodes.is_empty() {
        order.push(0);
    }
    let mut next = 0;
    while next < order.len() {
        for c in children(&nodes[order[next]]) {
            if c & LEAF_BIT == 0 {
                order.push(c as usize);
            }
        }
        next += 1;
    }
    order
}

/// Stores in every node the boxes of its children, bottom-up: leaf `k`'s box is
/// `leaf_boxes[k]`, an internal child's box the union of its own two child boxes.
pub fn fit_boxes(nodes: &mut [BvhNode], leaf_boxes: &[Bounds]) {
    for &i in top_down_order(nodes).iter().rev() {
        let node = nodes[i];
        let [left, right] = children(&node).map(|c| {
            if c == INVALID_CHILD {
                EMPTY_BOUNDS
            } else if c & LEAF_BIT != 0 {
                leaf_boxes[(c & !LEAF_BIT) as usize]
            } else {
                node_bounds(&nodes[c as usize])
            }
        });
        let node = &mut nodes[i];
        (node.left_min, node.left_max) = left;
        (node.right_min, node.right_max) = right;
    }
}

/// A BVH in the [`BvhNode`] format: leaf `k` holds primitive `leaf_primitives[k]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Lbvh {
    /// Internal nodes, root at 0.
    pub nodes: Vec<BvhNode>,
    /// The primitive of each leaf.
    pub leaf_primitives: Vec<u32>,
}

/// A mesh's leaves in Morton order: the Morton codes of the triangles' box centroids sorted
/// stably with their triangles (equal codes keep triangle order), and each leaf's box.
pub struct MortonLeaves {
    /// The sorted codes (widened to u64).
    pub keys: Vec<u64>,
    /// The triangle of each leaf.
    pub leaf_primitives: Vec<u32>,
    /// The box of each leaf.
    pub leaf_boxes: Vec<Bounds>,
}

impl MortonLeaves {
    /// The leaves of a triangle mesh with `bits`-bit codes.
    pub fn of(positions: &[[f32; 3]], triangles: &[[u32; 3]], bits: MortonBits) -> Self {
        let bounds = triangle_bounds(positions, triangles);
        let centroids: Vec<[f32; 3]> = bounds.iter().map(centroid).collect();
        let (codes, _) = bits.point_codes(&centroids);
        let mut pairs: Vec<(u64, u32)> = codes.into_iter().zip(0..).collect();
        // Indices are distinct and ascending, so sorting the pairs is the stable sort by code.
        pairs.sort_unstable();
        let (keys, leaf_primitives): (Vec<u64>, Vec<u32>) = pairs.into_iter().unzip();
        let leaf_boxes = leaf_primitives
            .iter()
            .map(|&p| bounds[p as usize])
            .collect();
        Self {
            keys,
            leaf_primitives,
            leaf_boxes,
        }
    }
}

/// The LBVH of a triangle mesh: its [`MortonLeaves`], the radix tree and its boxes.
pub fn build_lbvh(positions: &[[f32; 3]], triangles: &[[u32; 3]], bits: MortonBits) -> Lbvh {
    let leaves = MortonLeaves::of(positions, triangles, bits);
    let mut nodes = build_radix_tree(&leaves.keys, bits.key_bits());
    fit_boxes(&mut nodes, &leaves.leaf_boxes);
    Lbvh {
        nodes,
        leaf_primitives: leaves.leaf_primitives,
    }
}

/// Size, depth and SAH cost of a tree.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TreeStats {
    /// Internal nodes reached from the root.
    pub internal_nodes: usize,
    /// Leaves reached from the root.
    pub leaves: usize,
    /// The most internal nodes above any leaf (the root is at depth 0).
    pub depth: u32,
    /// Σ over internal nodes of SA(node)/SA(root) · [`SAH_TRAVERSAL_COST`] plus Σ over leaves
    /// of SA(leaf)/SA(root) · [`SAH_INTERSECTION_COST`] (one primitive per leaf).
    pub sah_cost: f64,
}

impl TreeStats {
    /// The tree's shape as reports show it.
    pub fn shape(&self) -> TreeShape {
        TreeShape {
            nodes: (self.internal_nodes + self.leaves) as u64,
            leaves: self.leaves as u64,
            depth: self.depth,
            references: self.leaves as u64,
            sah_cost: Some(self.sah_cost),
            sah_model: Some(format!(
                "Ct {SAH_TRAVERSAL_COST}, Ci {SAH_INTERSECTION_COST}, one triangle per leaf"
            )),
            nodes_per_level: Vec::new(),
            in_view: None,
        }
    }
}

/// Statistics of a valid tree over `leaf_count` leaves (see [`check_invariants`]); nodes past
/// the tree's own (a larger buffer read back from the GPU) are ignored. The root box is the
/// union of node 0's child boxes; a root of zero area counts as area 1.
pub fn tree_stats(nodes: &[BvhNode], leaf_count: usize) -> TreeStats {
    let mut stats = TreeStats::default();
    if leaf_count == 0 {
        return stats;
    }
    let nodes = &nodes[..internal_node_count(leaf_count)];
    let root_area = surface_area(&node_bounds(&nodes[0]));
    let root_area = if root_area > 0.0 { root_area } else { 1.0 };
    let mut stack = vec![(0usize, 0u32)];
    while let Some((i, depth)) = stack.pop() {
        let node = &nodes[i];
        stats.internal_nodes += 1;
        stats.sah_cost += surface_area(&node_bounds(node)) / root_area * SAH_TRAVERSAL_COST;
        for (side, c) in children(node).into_iter().enumerate() {
            if c == INVALID_CHILD {
                continue;
            }
            if c & LEAF_BIT != 0 {
                stats.leaves += 1;
                stats.depth = stats.depth.max(depth + 1);
                stats.sah_cost +=
                    surface_area(&child_bounds(node, side)) / root_area * SAH_INTERSECTION_COST;
            } else {
                stack.push((c as usize, depth + 1));
            }
        }
    }
    stats
}

/// Whether two trees over the same leaves have the same shape up to the numbering of their
/// internal nodes: from the roots down, the same leaves in the same child slots, the same
/// child boxes and the same leaf counts. Returns the first difference found.
pub fn same_tree(a: &[BvhNode], b: &[BvhNode]) -> Result<(), String> {
    if a.is_empty() || b.is_empty() {
        return if a.is_empty() == b.is_empty() {
            Ok(())
        } else {
            Err(format!("{} against {} internal nodes", a.len(), b.len()))
        };
    }
    let mut pairs = vec![(0usize, 0usize)];
    while let Some((i, j)) = pairs.pop() {
        let (x, y) = (&a[i], &b[j]);
        if x.leaf_count != y.leaf_count {
            return Err(format!(
                "nodes {i} and {j}: {} against {} leaves",
                x.leaf_count, y.leaf_count
            ));
        }
        for (side, (cx, cy)) in children(x).into_iter().zip(children(y)).enumerate() {
            let name = ["left", "right"][side];
            if child_bounds(x, side) != child_bounds(y, side) {
                return Err(format!(
                    "nodes {i} and {j}: {name} boxes {:?} against {:?}",
                    child_bounds(x, side),
                    child_bounds(y, side)
                ));
            }
            let internal = |c: u32| c != INVALID_CHILD && c & LEAF_BIT == 0;
            match (internal(cx), internal(cy)) {
                (true, true) => pairs.push((cx as usize, cy as usize)),
                (false, false) if cx == cy => {}
                _ => {
                    return Err(format!(
                        "nodes {i} and {j}: {name} children {cx:#x} against {cy:#x}"
                    ));
                }
            }
        }
    }
    Ok(())
}

/// Checks that `nodes` and `leaf_primitives` form a valid BVH over primitives with boxes
/// `leaf_boxes_by_primitive`: every primitive in exactly one leaf, `n - 1` internal nodes
/// (1 for one primitive, then in the one-primitive format) each reached exactly once from
/// the root with consistent parent links and leaf counts, and every stored child box
/// containing the child's own box (exactly). Returns the tree's [`tree_stats`], or a message
/// naming the first node and child found wrong.
pub fn check_invariants(
    nodes: &[BvhNode],
    leaf_primitives: &[u32],
    leaf_boxes_by_primitive: &[Bounds],
) -> Result<TreeStats, String> {
    let n = leaf_boxes_by_primitive.len();
    if leaf_primitives.len() != n {
        return Err(format!(
            "{} leaves for {n} primitives",
            leaf_primitives.len()
        ));
    }
    let mut leaf_of = vec![None; n];
    for (k, &p) in leaf_primitives.iter().enumerate() {
        match leaf_of.get_mut(p as usize) {
            None => return Err(format!("leaf {k} holds primitive {p}, not below {n}")),
            Some(Some(other)) => {
                return Err(format!("primitive {p} is in leaves {other} and {k}"));
            }
            Some(slot) => *slot = Some(k),
        }
    }
    let internal = internal_node_count(n);
    if nodes.len() != internal {
        return Err(format!(
            "{} internal nodes for {n} primitives, expected {internal}",
            nodes.len()
        ));
    }
    if n == 0 {
        return Ok(TreeStats::default());
    }
    if nodes[0].parent != NO_PARENT {
        return Err(format!(
            "root: parent {} instead of NO_PARENT",
            nodes[0].parent
        ));
    }
    if n == 1 {
        let root = &nodes[0];
        if root.left != LEAF_BIT || root.right != INVALID_CHILD {
            return Err(format!(
                "one-primitive root: children {:#x}, {:#x} instead of LEAF_BIT | 0, INVALID_CHILD",
                root.left, root.right
            ));
        }
        if child_bounds(root, 1) != EMPTY_BOUNDS {
            return Err(format!(
                "one-primitive root: right box {:?} instead of the empty box",
                child_bounds(root, 1)
            ));
        }
    }

    // Reach every node from the root exactly once; `reached_from` names the parent.
    let mut node_reached_from = vec![None; internal];
    let mut leaf_reached_from = vec![None; n];
    let mut order = vec![0usize];
    let mut next = 0;
    while next < order.len() {
        let i = order[next];
        next += 1;
        for (side, c) in ["left", "right"].into_iter().zip(children(&nodes[i])) {
            if c == INVALID_CHILD {
                if n == 1 {
                    continue;
                }
                return Err(format!(
                    "node {i}: {side} child is INVALID_CHILD in a tree of {n} primitives"
                ));
            }
            if c & LEAF_BIT != 0 {
                let k = (c & !LEAF_BIT) as usize;
                match leaf_reached_from.get_mut(k) {
                    None => {
                        return Err(format!("node {i}: {side} child leaf {k}, not below {n}"));
                    }
                    Some(Some(p)) => {
                        return Err(format!(
                            "node {i}: {side} child leaf {k} is already a child of node {p}"
                        ));
                    }
                    Some(slot) => *slot = Some(i),
                }
            } else {
                let c = c as usize;
                if c == 0 {
                    return Err(format!("node {i}: {side} child is the root"));
                }
                match node_reached_from.get_mut(c) {
                    None => {
                        return Err(format!(
                            "node {i}: {side} child node {c}, not below {internal}"
                        ));
                    }
                    Some(Some(p)) => {
                        return Err(format!(
                            "node {i}: {side} child node {c} is already a child of node {p}"
                        ));
                    }
                    Some(slot) => *slot = Some(i),
                }
                if nodes[c].parent != i as u32 {
                    return Err(format!(
                        "node {c}: parent {} but it is the {side} child of node {i}",
                        nodes[c].parent
                    ));
                }
                order.push(c);
            }
        }
    }
    if let Some(c) = (1..internal).find(|&c| node_reached_from[c].is_none()) {
        return Err(format!("node {c} is not reached from the root"));
    }
    if let Some(k) = leaf_reached_from.iter().position(Option::is_none) {
        return Err(format!("leaf {k} is not reached from the root"));
    }

    // Leaf counts and boxes, children before parents.
    let mut leaves_below = vec![0u32; internal];
    for &i in order.iter().rev() {
        let node = &nodes[i];
        let mut count = 0;
        for (side, c) in children(node).into_iter().enumerate() {
            if c == INVALID_CHILD {
                continue;
            }
            let (own, what, leaves) = if c & LEAF_BIT != 0 {
                let k = (c & !LEAF_BIT) as usize;
                let p = leaf_primitives[k];
                (
                    leaf_boxes_by_primitive[p as usize],
                    format!("leaf {k} (primitive {p})"),
                    1,
                )
            } else {
                let c = c as usize;
                (node_bounds(&nodes[c]), format!("node {c}"), leaves_below[c])
            };
            let stored = child_bounds(node, side);
            if !contains(&stored, &own) {
                return Err(format!(
                    "node {i}: {} box {stored:?} does not contain the box {own:?} of {what}",
                    ["left", "right"][side]
                ));
            }
            count += leaves;
        }
        if node.leaf_count != count {
            return Err(format!(
                "node {i}: leaf_count {} but {count} leaves below it",
                node.leaf_count
            ));
        }
        leaves_below[i] = count;
    }
    Ok(tree_stats(nodes, n))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::rng::Rng;

    /// A triangle mesh with separate vertices.
    pub(crate) struct Soup {
        pub positions: Vec<[f32; 3]>,
        pub triangles: Vec<[u32; 3]>,
    }

    impl Soup {
        /// `n` triangles, each with vertex `corner(i)` and two more vertices within `size` of
        /// it along every axis.
        pub fn new(
            n: usize,
            seed: u64,
            size: f32,
            corner: impl Fn(usize, &mut Rng) -> [f32; 3],
        ) -> Self {
            let mut rng = Rng::new(seed);
            let mut positions = Vec::with_capacity(3 * n);
            for i in 0..n {
                let a = corner(i, &mut rng);
                positions.push(a);
                for _ in 0..2 {
                    positions.push(std::array::from_fn(|k| a[k] + rng.f32_in(-size, size)));
                }
            }
            let triangles = (0..n as u32)
                .map(|i| [3 * i, 3 * i + 1, 3 * i + 2])
                .collect();
            Self {
                positions,
                triangles,
            }
        }

        /// `n` random triangles of size up to 0.1 in the unit cube.
        pub fn random(n: usize, seed: u64) -> Self {
            Self::new(n, seed, 0.1, |_, rng| {
                std::array::from_fn(|_| rng.f32_in(0.0, 1.0))
            })
        }

        /// The triangles' boxes.
        pub fn bounds(&self) -> Vec<Bounds> {
            triangle_bounds(&self.positions, &self.triangles)
        }
    }

    /// Builds with both widths, checks the invariants and returns the stats (30, 63).
    fn check_lbvh(soup: &Soup) -> [TreeStats; 2] {
        [MortonBits::Bits30, MortonBits::Bits63].map(|bits| {
            let bvh = build_lbvh(&soup.positions, &soup.triangles, bits);
            let stats = check_invariants(&bvh.nodes, &bvh.leaf_primitives, &soup.bounds())
                .unwrap_or_else(|e| panic!("{bits:?}, {} triangles: {e}", soup.triangles.len()));
            let n = soup.triangles.len();
            assert_eq!(stats.leaves, n);
            assert_eq!(stats.internal_nodes, internal_node_count(n));
            stats
        })
    }

    fn ceil_log2(n: usize) -> u32 {
        n.next_power_of_two().trailing_zeros()
    }

    #[test]
    fn random_triangles_at_many_sizes() {
        for (seed, n) in [0usize, 1, 2, 3, 7, 8, 9, 255, 256, 257, 10_000]
            .into_iter()
            .enumerate()
        {
            let stats = check_lbvh(&Soup::random(n, seed as u64));
            if n >= 2 {
                for s in stats {
                    assert!(s.depth >= ceil_log2(n) && s.depth < 64, "{s:?}");
                    assert!(s.sah_cost >= 1.0, "{s:?}");
                }
            }
        }
    }

    #[test]
    fn identical_centroids_fall_back_to_indices() {
        for n in [2, 3, 5, 1000, 1024, 1025] {
            let soup = Soup::new(n, 7, 0.0, |_, _| [0.5, -2.0, 3.0]);
            for s in check_lbvh(&soup) {
                assert_eq!(s.depth, ceil_log2(n), "{n} triangles");
            }
            let bvh = build_lbvh(&soup.positions, &soup.triangles, MortonBits::Bits30);
            assert!(bvh.leaf_primitives.iter().copied().eq(0..n as u32));
        }
    }

    #[test]
    fn two_far_clusters_and_flat_scene() {
        let clusters = Soup::new(2000, 3, 1e-3, |i, rng| {
            let base = if i % 2 == 0 { 0.0 } else { 1e6 };
            std::array::from_fn(|_| base + rng.f32_in(0.0, 1.0))
        });
        for s in check_lbvh(&clusters) {
            assert!(s.depth < 64);
        }
        let mut flat = Soup::random(3000, 4);
        for p in &mut flat.positions {
            p[2] = 0.0;
        }
        check_lbvh(&flat);
    }

    #[test]
    fn one_triangle_tree() {
        let soup = Soup::random(1, 5);
        let bvh = build_lbvh(&soup.positions, &soup.triangles, MortonBits::Bits63);
        let root = bvh.nodes[0];
        assert_eq!((root.left, root.right), (LEAF_BIT, INVALID_CHILD));
        assert_eq!((root.left_min, root.left_max), soup.bounds()[0]);
        assert_eq!((root.parent, root.leaf_count), (NO_PARENT, 1));
        let stats = tree_stats(&bvh.nodes, 1);
        assert_eq!((stats.internal_nodes, stats.leaves, stats.depth), (1, 1, 1));
        assert_eq!(stats.sah_cost, 2.0);
    }

    /// The children of the node over `first..=last` by a linear scan: the left child ends at
    /// the last key sharing more than the range's common prefix with the first key.
    fn naive_split(keys: &[u64], key_bits: u32, first: usize, last: usize) -> usize {
        let common = delta(keys, key_bits, first as i64, last as i64);
        (first..last)
            .rev()
            .find(|&g| delta(keys, key_bits, first as i64, g as i64) > common)
            .unwrap()
    }

    #[test]
    fn radix_tree_matches_recursive_prefix_splits() {
        let mut rng = Rng::new(9);
        for (n, key_bits, range) in [(300, 32, 1 << 30), (300, 32, 16), (500, 64, u64::MAX)] {
            let mut keys: Vec<u64> = (0..n).map(|_| rng.next_u64() % range).collect();
            if key_bits == 32 {
                keys.iter_mut().for_each(|k| *k &= 0xffff_ffff);
            }
            keys.sort_unstable();
            let nodes = build_radix_tree(&keys, key_bits);
            let mut stack = vec![(0u32, 0usize, n - 1)];
            while let Some((i, first, last)) = stack.pop() {
                let node = nodes[i as usize];
                assert!(i as usize == first || i as usize == last);
                assert_eq!(node.leaf_count as usize, last - first + 1);
                let g = naive_split(&keys, key_bits, first, last);
                for (c, lo, hi) in [(node.left, first, g), (node.right, g + 1, last)] {
                    if lo == hi {
                        assert_eq!(c, LEAF_BIT | lo as u32);
                    } else {
                        assert_eq!(nodes[c as usize].parent, i);
                        stack.push((c, lo, hi));
                    }
                }
            }
        }
    }

    #[test]
    fn invariant_violations_are_named() {
        let soup = Soup::random(50, 11);
        let boxes = soup.bounds();
        let good = build_lbvh(&soup.positions, &soup.triangles, MortonBits::Bits30);
        let check = |f: &dyn Fn(&mut Lbvh)| {
            let mut bad = good.clone();
            f(&mut bad);
            check_invariants(&bad.nodes, &bad.leaf_primitives, &boxes).unwrap_err()
        };
        let leaf_parent = (0..49)
            .find(|&i| good.nodes[i].left & LEAF_BIT != 0)
            .unwrap();
        let msg = check(&|t| t.nodes[leaf_parent].left_max[1] -= 1e-3);
        assert!(
            msg.starts_with(&format!("node {leaf_parent}: left box")),
            "{msg}"
        );
        let msg = check(&|t| t.leaf_primitives.swap(3, 4));
        assert!(msg.contains("does not contain"), "{msg}");
        let msg = check(&|t| t.leaf_primitives[0] = t.leaf_primitives[1]);
        assert!(msg.contains("is in leaves 0 and 1"), "{msg}");
        let msg = check(&|t| t.nodes[0].leaf_count += 1);
        assert_eq!(msg, "node 0: leaf_count 51 but 50 leaves below it");
        let msg = check(&|t| t.nodes[0].right = t.nodes[0].left);
        assert!(msg.contains("node 0: right child"), "{msg}");
        let msg = check(&|t| {
            let c = t.nodes[0].left as usize;
            t.nodes[c].parent = 7;
        });
        assert!(
            msg.contains("parent 7 but it is the left child of node 0"),
            "{msg}"
        );
        let msg = check(&|t| t.nodes[5].right = INVALID_CHILD);
        assert_eq!(
            msg,
            "node 5: right child is INVALID_CHILD in a tree of 50 primitives"
        );
        let msg = check(&|t| t.nodes.truncate(48));
        assert_eq!(msg, "48 internal nodes for 50 primitives, expected 49");
    }
}
