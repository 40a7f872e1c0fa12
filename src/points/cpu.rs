//! Point-cloud modelling on the CPU: the reference of the GPU normals and densities (PCA of
//! the k nearest neighbours, cyclic Jacobi in double precision), and the orientation of
//! normals by a minimum spanning tree over the neighbour graph (Hoppe et al. 1992).

/// A symmetric 3x3 matrix's eigenvalues and eigenvectors (columns of the second), by cyclic
/// Jacobi rotations until the off-diagonal vanishes.
pub fn symmetric_eigen(mut a: [[f64; 3]; 3]) -> ([f64; 3], [[f64; 3]; 3]) {
    let mut v = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]];
    for _ in 0..32 {
        let off = a[0][1].abs() + a[0][2].abs() + a[1][2].abs();
        if off == 0.0 {
            break;
        }
        for (p, q) in [(0, 1), (0, 2), (1, 2)] {
            if a[p][q] == 0.0 {
                continue;
            }
            let theta = (a[q][q] - a[p][p]) / (2.0 * a[p][q]);
            let t = if theta == 0.0 {
                1.0
            } else {
                theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt())
            };
            let c = 1.0 / (t * t + 1.0).sqrt();
            let s = t * c;
            // J has J[p][p] = J[q][q] = c, J[p][q] = s, J[q][p] = -s (row, column).
            let mut j = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]];
            j[p][p] = c;
            j[q][q] = c;
            j[p][q] = s;
            j[q][p] = -s;
            a = multiply(&multiply(&transpose(&j), &a), &j);
            v = multiply(&v, &j);
        }
    }
    ([a[0][0], a[1][1], a[2][2]], v)
}

fn multiply(a: &[[f64; 3]; 3], b: &[[f64; 3]; 3]) -> [[f64; 3]; 3] {
    std::array::from_fn(|r| std::array::from_fn(|c| (0..3).map(|k| a[r][k] * b[k][c]).sum()))
}

fn transpose(a: &[[f64; 3]; 3]) -> [[f64; 3]; 3] {
    std::array::from_fn(|r| std::array::from_fn(|c| a[c][r]))
}

/// The PCA of `neighbours` (points): the unit normal (eigenvector of the smallest eigenvalue
/// of their covariance, zero for fewer than three) and the eigenvalues, ascending.
pub fn pca_normal(neighbours: &[[f32; 3]]) -> ([f64; 3], [f64; 3]) {
    let m = neighbours.len();
    if m < 3 {
        return ([0.0; 3], [0.0; 3]);
    }
    let centre: [f64; 3] =
        std::array::from_fn(|a| neighbours.iter().map(|p| p[a] as f64).sum::<f64>() / m as f64);
    let mut cov = [[0.0; 3]; 3];
    for p in neighbours {
        let d: [f64; 3] = std::array::from_fn(|a| p[a] as f64 - centre[a]);
        for r in 0..3 {
            for c in 0..3 {
                cov[r][c] += d[r] * d[c] / m as f64;
            }
        }
    }
    let (values, vectors) = symmetric_eigen(cov);
    let mut order = [0, 1, 2];
    order.sort_by(|&x, &y| values[x].total_cmp(&values[y]));
    let normal: [f64; 3] = std::array::from_fn(|r| vectors[r][order[0]]);
    let length = normal.iter().map(|x| x * x).sum::<f64>().sqrt();
    (normal.map(|x| x / length), order.map(|i| values[i]))
}

/// The weight of the edge between the normal `a` at `pa` and the normal `b` at `pb`, and
/// whether the normals point away from each other, in f32 as `glsl/points/orient.comp`
/// computes them. The normals are compared without their components along the edge
/// `d = pb - pa`: `s = a . b - (a . d)(b . d) / (d . d)` (plain `a . b` where the points
/// coincide). Across a curved or thin part the normals turn along the edge, so the plain
/// `a . b` (Hoppe et al. 1992) falls towards 0 there while `s` stays large; `s` is the mean of
/// Hoppe's measure and König and Gumhold's (2009), which mirrors one normal across the plane
/// halfway between the points and alone does worse at sharp creases. The weight is `1 - |s|`
/// (at least 0) and the normals point away where `s < 0`. Swapping the ends gives the same
/// edge.
pub fn edge_weight(pa: [f32; 3], a: [f32; 3], pb: [f32; 3], b: [f32; 3]) -> (f32, bool) {
    let dot = |x: [f32; 3], y: [f32; 3]| x[0] * y[0] + x[1] * y[1] + x[2] * y[2];
    let d = [pb[0] - pa[0], pb[1] - pa[1], pb[2] - pa[2]];
    let dd = dot(d, d);
    let mut s = dot(a, b);
    if dd > 0.0 {
        s -= dot(a, d) * dot(b, d) / dd;
    }
    let w = 1.0 - s.abs();
    (if w <= 0.0 { 0.0 } else { w }, s < 0.0)
}

/// What an orientation did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Orientation {
    /// Normals flipped.
    pub flipped: usize,
    /// Edges of the spanning forest.
    pub forest_edges: usize,
}

/// Orients `normals` consistently (Hoppe et al. 1992): over the graph joining each point to its
/// `k` neighbours (`neighbours`, `k` per point, `u32::MAX` for none), edges weighted by
/// [`edge_weight`] and ordered by (weight, `v * k + slot`), the minimum spanning forest (by
/// Kruskal's algorithm, the one `glsl/points/orient.comp` grows by Borůvka's) carries each
/// point's sign relative to its tree: across an edge the signs differ where the normals point
/// away from each other. Each tree's overall sign is chosen at its extreme points along x, y
/// and z (then the lowest index): of these six, the one whose normal lies nearest its axis
/// (along which the tree is not flat) is turned away from the tree (+axis at the highest,
/// -axis at the lowest), as a closed surface's outward normal is there.
pub fn orient_normals(
    points: &[[f32; 3]],
    neighbours: &[u32],
    k: usize,
    normals: &mut [[f32; 3]],
) -> Orientation {
    let n = points.len();
    let mut edges: Vec<(u32, u32)> = Vec::new();
    for (edge, &u) in neighbours.iter().enumerate() {
        let v = edge / k;
        if u != u32::MAX && u as usize != v {
            let (w, _) = edge_weight(
                points[v],
                normals[v],
                points[u as usize],
                normals[u as usize],
            );
            edges.push((w.to_bits(), edge as u32));
        }
    }
    edges.sort_unstable();
    // Union-find with each point's parity relative to its parent.
    let mut parent: Vec<u32> = (0..n as u32).collect();
    let mut parity = vec![false; n];
    fn find(parent: &mut [u32], parity: &mut [bool], x: u32) -> (u32, bool) {
        let (mut root, mut total) = (x, false);
        while parent[root as usize] != root {
            total ^= parity[root as usize];
            root = parent[root as usize];
        }
        // Path compression: each point on the way to the root hangs from it directly.
        let (mut at, mut below) = (x, total);
        while parent[at as usize] != root && at != root {
            let (up, own) = (parent[at as usize], parity[at as usize]);
            parent[at as usize] = root;
            parity[at as usize] = below;
            below ^= own;
            at = up;
        }
        (root, total)
    }
    let mut forest_edges = 0;
    for &(_, edge) in &edges {
        let (v, u) = (edge / k as u32, neighbours[edge as usize]);
        let (rv, pv) = find(&mut parent, &mut parity, v);
        let (ru, pu) = find(&mut parent, &mut parity, u);
        if rv != ru {
            let (v, u) = (v as usize, u as usize);
            let (_, away) = edge_weight(points[v], normals[v], points[u], normals[u]);
            parent[ru as usize] = rv;
            parity[ru as usize] = away ^ pv ^ pu;
            forest_edges += 1;
        }
    }
    let signs: Vec<(u32, bool)> = (0..n as u32)
        .map(|v| find(&mut parent, &mut parity, v))
        .collect();
    // Each tree's sign, from its extreme points along x, y and z: the one whose normal lies
    // nearest its axis (the first on a tie) points away from the tree.
    let mut decided: Vec<(f32, bool)> = vec![(-1.0, false); n];
    for axis in 0..3 {
        // Highest and lowest point of each tree (then the lowest index).
        let mut extremes: Vec<Option<(u32, u32)>> = vec![None; n];
        for v in 0..n {
            let x = points[v][axis];
            let slot = &mut extremes[signs[v].0 as usize];
            let (top, bottom) = slot.get_or_insert((v as u32, v as u32));
            if x > points[*top as usize][axis] {
                *top = v as u32;
            }
            if x < points[*bottom as usize][axis] {
                *bottom = v as u32;
            }
        }
        for (root, extreme) in extremes.iter().enumerate() {
            // A tree flat across the axis has no outside along it.
            let Some((top, bottom)) = *extreme else {
                continue;
            };
            if points[top as usize][axis] <= points[bottom as usize][axis] {
                continue;
            }
            let (best, flip) = &mut decided[root];
            for (point, outward) in [(top, 1.0), (bottom, -1.0)] {
                let along = normals[point as usize][axis];
                if along.abs() > *best {
                    *best = along.abs();
                    *flip = signs[point as usize].1 ^ (along * outward < 0.0);
                }
            }
        }
    }
    // Flip only after every decision read the normals as they were.
    let flips: Vec<bool> = (0..n)
        .map(|v| signs[v].1 ^ decided[signs[v].0 as usize].1)
        .collect();
    let mut flipped = 0;
    for (normal, flip) in normals.iter_mut().zip(flips) {
        if flip {
            *normal = normal.map(|x| -x);
            flipped += 1;
        }
    }
    Orientation {
        flipped,
        forest_edges,
    }
}

/// The deformation strength of each point (`glsl/points/strength.comp`): from its distances
/// `d_a` to the nearest point of `active` and `d_s` to the nearest of `fixed` (none: infinitely
/// far), `beta(d_s / (d_s + d_a))` with `beta(x) = x² (3 - 2x)`; 0 where `d_s` is 0.
pub fn deformation_strength(points: &[[f32; 3]], active: &[u32], fixed: &[u32]) -> Vec<f32> {
    let nearest = |p: [f32; 3], handle: &[u32]| {
        handle
            .iter()
            .map(|&i| crate::accel::pointkd::cpu::distance2(p, points[i as usize]))
            .fold(f32::INFINITY, f32::min)
            .sqrt()
    };
    points
        .iter()
        .map(|&p| {
            let (to_active, to_static) = (nearest(p, active), nearest(p, fixed));
            let x = if to_static == f32::INFINITY {
                1.0
            } else if to_static > 0.0 {
                to_static / (to_static + to_active)
            } else {
                0.0
            };
            x * x * (3.0 - 2.0 * x)
        })
        .collect()
}
