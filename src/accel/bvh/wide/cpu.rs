//! The CPU reference of the collapse of a binary BVH into an 8-wide one ([`collapse`]), the
//! CPU mirror of its traversal ([`trace_wide`]), and the checks the tests apply to the
//! GPU's trees ([`check_wide_invariants`], [`same_wide_tree`]).
//!
//! **Which binary nodes become wide nodes** (top down, greedy by size, as Embree widens its
//! trees). A wide node made from binary node `x` starts with `x`'s two children as its slots;
//! while it has fewer than [`WIDTH`] slots and one of them is an internal node, the internal
//! slot of the largest box (by the sum of its sides, the first on ties) is replaced by its two
//! children, the left one in its place and the right one in the next free slot. The internal slots
//! left become wide nodes of their own, made the same way. Big boxes, which most rays enter,
//! are opened first, so a ray crosses fewer levels. A node with fewer than [`WIDTH`] children
//! has only leaves, so a tree over `n` triangles has at most `4n / 7 + 1` nodes
//! ([`wide_node_capacity`]). The GPU makes the nodes in one dispatch, each from its binary
//! node alone, as a queue of nodes (`glsl/bvh/collapse.comp`).
//!
//! The layout here is breadth first; the GPU's comes from its atomic counters and differs
//! from run to run, so trees are compared by their shape from the root down
//! ([`same_wide_tree`]).

use super::format::{Slot, WIDTH, WideChild, WideNode, pow2};
use crate::accel::bvh::cpu::Lbvh;
use crate::accel::bvh::{BvhNode, INVALID_CHILD, LEAF_BIT};
use crate::geom::aabb::{Bounds, EMPTY_BOUNDS, contains, union};
use crate::geom::ray::{Hit, Query, Ray, RayWork, slab, test_leaf, widened};
use std::collections::VecDeque;

/// An 8-wide BVH on the host.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WideTree {
    /// Nodes, the root at 0 (none for an empty tree).
    pub nodes: Vec<WideNode>,
    /// The primitive of each leaf, in the tree's triangle order.
    pub leaf_primitives: Vec<u32>,
}

/// The most wide nodes a tree over `triangles` triangles has (at least 1): with `f` nodes of
/// [`WIDTH`] children and `p` of only leaves (at least two each), the `f + p - 1` internal
/// slots sit in the full nodes and the leaves number at least `p + 7f + 1`.
pub fn wide_node_capacity(triangles: u32) -> u32 {
    (4 * triangles.max(1) as u64 / 7 + 1) as u32
}

fn is_internal(child: u32) -> bool {
    child != INVALID_CHILD && child & LEAF_BIT == 0
}

fn children(node: &BvhNode) -> impl Iterator<Item = (u32, Bounds)> {
    [
        (node.left, (node.left_min, node.left_max)),
        (node.right, (node.right_min, node.right_max)),
    ]
    .into_iter()
    .filter(|(c, _)| *c != INVALID_CHILD)
}

/// The sum of a box's sides, in the kernel's order of operations: subtractions and additions
/// only, which every device rounds alike (a product summed may be fused on one and not on
/// another).
fn half_perimeter(b: &Bounds) -> f32 {
    let d: [f32; 3] = std::array::from_fn(|k| b.1[k] - b.0[k]);
    d[0] + d[1] + d[2]
}

/// The children of the wide node made from binary node `x`, with their boxes, by the greedy
/// expansion of the module documentation.
pub fn expand(nodes: &[BvhNode], x: usize) -> Vec<(u32, Bounds)> {
    let mut slots: Vec<(u32, Bounds)> = children(&nodes[x]).collect();
    while slots.len() < WIDTH {
        let mut widest: Option<(usize, f32)> = None;
        for (j, (c, b)) in slots.iter().enumerate() {
            let size = half_perimeter(b);
            if is_internal(*c) && widest.is_none_or(|(_, largest)| size > largest) {
                widest = Some((j, size));
            }
        }
        let Some((j, _)) = widest else { break };
        let opened = &nodes[slots[j].0 as usize];
        slots[j] = (opened.left, (opened.left_min, opened.left_max));
        slots.push((opened.right, (opened.right_min, opened.right_max)));
    }
    slots
}

/// The 8-wide tree of a binary BVH, laid out breadth first.
pub fn collapse(bvh: &Lbvh) -> WideTree {
    let mut tree = WideTree::default();
    if bvh.leaf_primitives.is_empty() {
        return tree;
    }
    tree.nodes.push(bytemuck::Zeroable::zeroed());
    let mut queue = VecDeque::from([(0usize, 0usize)]);
    while let Some((x, w)) = queue.pop_front() {
        let expanded = expand(&bvh.nodes, x);
        let internal = expanded.iter().filter(|(c, _)| is_internal(*c)).count();
        let child_base = if internal > 0 { tree.nodes.len() } else { 0 };
        let triangle_base = if internal < expanded.len() {
            tree.leaf_primitives.len()
        } else {
            0
        };
        tree.nodes
            .resize(tree.nodes.len() + internal, bytemuck::Zeroable::zeroed());
        let mut slots = Vec::with_capacity(expanded.len());
        let mut next_child = child_base;
        for &(c, b) in &expanded {
            if is_internal(c) {
                queue.push_back((c as usize, next_child));
                next_child += 1;
                slots.push(Slot::Internal(b));
            } else {
                tree.leaf_primitives
                    .push(bvh.leaf_primitives[(c & !LEAF_BIT) as usize]);
                slots.push(Slot::Leaf(b));
            }
        }
        tree.nodes[w] = WideNode::encode(
            &slots,
            child_base as u32,
            triangle_base as u32,
            bvh.nodes[x].leaf_count,
        );
    }
    tree
}

/// Shape and traversal bounds of a valid wide tree ([`check_wide_invariants`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct WideStats {
    /// Nodes reached from the root.
    pub nodes: u32,
    /// Nodes on the longest path from the root down (0 for an empty tree).
    pub height: u32,
    /// The most entries traversal's stack can hold for this tree: at a node with `k`
    /// internal children, `k` pushed, one of them popped at once ([`stack_need`]).
    pub stack_need: u32,
    /// Mean children per node.
    pub mean_children: f64,
}

/// The most stack entries a traversal of the subtree at `w` can hold, and its height: a node
/// with `k > 0` internal children pushes them all and pops the nearest, so
/// `need = max(k, k - 1 + max over children of need)`; 0 without internal children.
pub fn stack_need(nodes: &[WideNode], w: u32) -> (u32, u32) {
    let node = &nodes[w as usize];
    let mut need = 0;
    let mut height = 0;
    let mut internal = 0;
    for j in 0..node.slot_count() {
        if let Some(WideChild::Node(c)) = node.child(j) {
            internal += 1;
            let (n, h) = stack_need(nodes, c);
            need = need.max(n);
            height = height.max(h);
        }
    }
    let need = if internal == 0 {
        0
    } else {
        internal.max(internal - 1 + need)
    };
    (need, height + 1)
}

/// Checks that `tree` is a valid 8-wide BVH over primitives with boxes
/// `leaf_boxes_by_primitive`: every node reached exactly once from the root, with 2 to
/// [`WIDTH`] children (1 in a one-triangle tree) and its leaf count; every primitive in
/// exactly one leaf; at most [`wide_node_capacity`] nodes; and every child's decoded box
/// containing the boxes of all triangles below it. Returns its [`WideStats`], or the first
/// fault found.
pub fn check_wide_invariants(
    tree: &WideTree,
    leaf_boxes_by_primitive: &[Bounds],
) -> Result<WideStats, String> {
    let n = leaf_boxes_by_primitive.len();
    if tree.leaf_primitives.len() != n {
        return Err(format!(
            "{} leaves for {n} primitives",
            tree.leaf_primitives.len()
        ));
    }
    if n == 0 {
        return Ok(WideStats::default());
    }
    let mut seen = vec![false; n];
    for (k, &p) in tree.leaf_primitives.iter().enumerate() {
        match seen.get_mut(p as usize) {
            None => return Err(format!("leaf {k} holds primitive {p}, not below {n}")),
            Some(true) => return Err(format!("primitive {p} is in two leaves")),
            Some(s) => *s = true,
        }
    }
    let capacity = wide_node_capacity(n as u32) as usize;
    if tree.nodes.len() > capacity {
        return Err(format!("{} nodes, more than {capacity}", tree.nodes.len()));
    }
    let mut reached = vec![false; tree.nodes.len()];
    let mut leaf_used = vec![false; n];
    let mut children_total = 0usize;
    // The true box and leaf count of node `w`'s subtree, checking it on the way.
    fn visit(
        w: u32,
        tree: &WideTree,
        boxes: &[Bounds],
        reached: &mut [bool],
        leaf_used: &mut [bool],
        children_total: &mut usize,
    ) -> Result<(Bounds, u32), String> {
        let node = tree
            .nodes
            .get(w as usize)
            .ok_or(format!("node {w} is past the tree"))?;
        if std::mem::replace(&mut reached[w as usize], true) {
            return Err(format!("node {w} is reached twice"));
        }
        let count = node.slot_count();
        let least = if tree.leaf_primitives.len() == 1 {
            1
        } else {
            2
        };
        if count < least || (node.internal_mask() | node.leaf_mask) != (1 << count) - 1 {
            return Err(format!(
                "node {w} has slots {:#x} and {:#x}",
                node.internal_mask(),
                node.leaf_mask
            ));
        }
        *children_total += count;
        let mut total = EMPTY_BOUNDS;
        let mut leaves = 0;
        for j in 0..count {
            let (below, count_below) = match node.child(j).expect("slot in use") {
                WideChild::Node(c) => visit(c, tree, boxes, reached, leaf_used, children_total)?,
                WideChild::Triangle(t) => {
                    let used = leaf_used
                        .get_mut(t as usize)
                        .ok_or(format!("node {w} slot {j}: triangle {t} is past the tree"))?;
                    if std::mem::replace(used, true) {
                        return Err(format!("triangle {t} is in two slots"));
                    }
                    (boxes[tree.leaf_primitives[t as usize] as usize], 1)
                }
            };
            if !contains(&node.slot_bounds(j), &below) {
                return Err(format!(
                    "node {w} slot {j}: box {:?} does not contain {below:?}",
                    node.slot_bounds(j)
                ));
            }
            total = union(&total, &below);
            leaves += count_below;
        }
        if leaves != node.leaf_count {
            return Err(format!(
                "node {w}: {leaves} triangles below, {} recorded",
                node.leaf_count
            ));
        }
        Ok((total, leaves))
    }
    visit(
        0,
        tree,
        leaf_boxes_by_primitive,
        &mut reached,
        &mut leaf_used,
        &mut children_total,
    )?;
    if let Some(w) = reached.iter().position(|&r| !r) {
        return Err(format!("node {w} is not reached from the root"));
    }
    let (stack_need, height) = stack_need(&tree.nodes, 0);
    Ok(WideStats {
        nodes: tree.nodes.len() as u32,
        height,
        stack_need,
        mean_children: children_total as f64 / tree.nodes.len() as f64,
    })
}

/// Whether two wide trees have the same shape from the roots down, whatever their layout: the
/// same frames, masks, quantized boxes and leaf counts node by node, and the same primitive
/// in every leaf slot. Returns the first difference found.
pub fn same_wide_tree(a: &WideTree, b: &WideTree) -> Result<(), String> {
    if a.nodes.is_empty() || b.nodes.is_empty() {
        return if a.nodes.len() == b.nodes.len() {
            Ok(())
        } else {
            Err(format!("{} against {} nodes", a.nodes.len(), b.nodes.len()))
        };
    }
    // Origins compare as numbers: where a box's lower corner is zero, the GPU's min may keep
    // 0.0 and the CPU's -0.0 (a mesh's vertices hold both), and either decodes the same planes.
    let shape = |n: &WideNode| {
        (
            n.origin,
            n.exponents_internal,
            n.leaf_mask,
            n.leaf_count,
            n.planes,
        )
    };
    let mut pairs = vec![(0u32, 0u32)];
    while let Some((i, j)) = pairs.pop() {
        let (x, y) = (&a.nodes[i as usize], &b.nodes[j as usize]);
        if shape(x) != shape(y) {
            return Err(format!("nodes {i} and {j}: {x:?} against {y:?}"));
        }
        for s in 0..x.slot_count() {
            match (x.child(s), y.child(s)) {
                (Some(WideChild::Node(c)), Some(WideChild::Node(d))) => pairs.push((c, d)),
                (Some(WideChild::Triangle(c)), Some(WideChild::Triangle(d))) => {
                    let (p, q) = (a.leaf_primitives[c as usize], b.leaf_primitives[d as usize]);
                    if p != q {
                        return Err(format!(
                            "nodes {i} and {j} slot {s}: primitive {p} against {q}"
                        ));
                    }
                }
                _ => unreachable!("equal masks"),
            }
        }
    }
    Ok(())
}

/// The hit of `query` for `ray` through `tree` (over `triangles`), and the work counted as
/// `glsl/bvh/wide_trace.comp` counts it: one node visited per node read, one primitive
/// tested per leaf slot whose box was entered.
///
/// The walk is the kernel's: at a node every child's box is tested against the closest hit
/// so far (in ray space, one multiply-add per plane, as the kernel does; by the decoded box's
/// slab test for rays with a zero direction component); for closest-hit queries the nearest
/// internal child entered (the lower slot on ties) is kept and the others are pushed with their
/// entry distances in slot order, for any-hit queries every internal child entered is pushed
/// so that the lowest slot is on top (depth first in slot order); then the leaves entered are
/// intersected in slot order. The next node is the nearest child kept, else the top of the
/// stack, whichever first is no farther than the closest hit then.
/// Conventions at rounding are those of
/// [`trace_bvh`](crate::accel::bvh::traverse::trace_bvh).
pub fn trace_wide(
    positions: &[[f32; 3]],
    triangles: &[[u32; 3]],
    tree: &WideTree,
    ray: &Ray,
    query: Query,
) -> (Hit, RayWork) {
    let mut best = Hit::miss(ray);
    let mut work = RayWork::default();
    if tree.nodes.is_empty() {
        return (best, work);
    }
    let inv_dir = ray.direction.map(|d| 1.0 / d);
    let parallel = ray.direction.contains(&0.0);
    let mut stack: Vec<(u32, f32)> = Vec::new();
    let mut next = Some(0u32);
    while let Some(index) = next {
        work.nodes_visited += 1;
        let node = &tree.nodes[index as usize];
        let frame = (!parallel).then(|| RayFrame::new(node, ray, inv_dir));
        let pushed_from = stack.len();
        let mut nearest: Option<(u32, f32)> = None;
        let mut leaves_entered = Vec::new();
        for j in 0..node.slot_count() {
            let (near, far) = match &frame {
                Some(frame) => frame.interval(node, j),
                None => slab(ray.origin, inv_dir, &node.slot_bounds(j)),
            };
            let near = near.max(ray.tmin);
            if near > far.min(best.t) {
                continue;
            }
            match node.child(j).expect("slot in use") {
                WideChild::Triangle(t) => leaves_entered.push(tree.leaf_primitives[t as usize]),
                // Any hit: depth first in slot order (each child below the node's earlier
                // ones, so the lowest slot is on top).
                WideChild::Node(c) if query == Query::Any => stack.insert(pushed_from, (c, near)),
                // Closest hit: the nearest so far is kept, the others pushed in slot order.
                WideChild::Node(c) => match nearest {
                    Some((_, nearest_t)) if near >= nearest_t => stack.push((c, near)),
                    _ => stack.extend(nearest.replace((c, near))),
                },
            }
        }
        let mesh = (positions, triangles);
        if let Some(hit) = test_leaf(mesh, &leaves_entered, ray, query, &mut best, &mut work) {
            return (hit, work);
        }
        next = nearest
            .into_iter()
            .chain(std::iter::from_fn(|| stack.pop()))
            .find(|&(_, near)| near <= best.t)
            .map(|(c, _)| c);
    }
    (best, work)
}

/// A node's planes in ray space, as `glsl/bvh/wide_trace.comp` computes them for rays with no
/// zero direction component: plane `q` of axis `k` at `q · scale[k] + offset[k]` (one fused
/// multiply-add), the interval on axis `k` widened by `slack[k]` (2^-20 of the largest
/// magnitude involved on that axis, in ray units).
struct RayFrame {
    scale: [f32; 3],
    offset: [f32; 3],
    slack: [f32; 3],
}

impl RayFrame {
    fn new(node: &WideNode, ray: &Ray, inv_dir: [f32; 3]) -> Self {
        let step: [f32; 3] = std::array::from_fn(|k| pow2(node.step_exponent(k)));
        Self {
            scale: std::array::from_fn(|k| step[k] * inv_dir[k]),
            offset: std::array::from_fn(|k| (node.origin[k] - ray.origin[k]) * inv_dir[k]),
            slack: std::array::from_fn(|k| {
                let magnitude = node.origin[k].abs() + ray.origin[k].abs() + 255.0 * step[k];
                magnitude * inv_dir[k].abs() / 1_048_576.0
            }),
        }
    }

    /// Slot `j`'s interval along the ray, each axis widened by its slack, then widened as
    /// [`slab`] widens.
    fn interval(&self, node: &WideNode, j: usize) -> (f32, f32) {
        let (lo, hi) = node.slot_planes(j);
        let (mut near, mut far) = (f32::NEG_INFINITY, f32::INFINITY);
        for k in 0..3 {
            let t_lo = (lo[k] as f32).mul_add(self.scale[k], self.offset[k]);
            let t_hi = (hi[k] as f32).mul_add(self.scale[k], self.offset[k]);
            near = near.max(t_lo.min(t_hi) - self.slack[k]);
            far = far.min(t_lo.max(t_hi) + self.slack[k]);
        }
        widened(near, far)
    }
}
