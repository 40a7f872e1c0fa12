//! Point-cloud modelling on the CPU: the reference of the GPU normals and densities (PCA of
//! the k nearest neighbours, cyclic Jacobi in double precision), and the orientation of
//! normals by a minimum spanning tree over the neighbour graph (Hoppe et al. 1992).

use std::collections::BinaryHeap;

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

/// Orients `normals` consistently (Hoppe et al. 1992): over the graph joining each point to its
/// neighbours (`neighbours[i]`, `u32::MAX` for none), weighted `1 - |n_i . n_j|`, a minimum
/// spanning forest is grown by Prim's algorithm from the highest point of each component (its
/// normal turned to point up, +y), and each normal is flipped to agree with its parent's.
/// Returns the number of normals flipped.
pub fn orient_normals(
    points: &[[f32; 3]],
    neighbours: &[Vec<u32>],
    normals: &mut [[f32; 3]],
) -> usize {
    let n = points.len();
    let dot = |a: [f32; 3], b: [f32; 3]| a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
    // Symmetric adjacency: an edge wherever either point lists the other.
    let mut adjacency: Vec<Vec<u32>> = neighbours.to_vec();
    for (i, list) in neighbours.iter().enumerate() {
        for &j in list.iter().filter(|&&j| j != u32::MAX && j as usize != i) {
            adjacency[j as usize].push(i as u32);
        }
    }
    let mut done = vec![false; n];
    let mut flipped = 0;
    let mut by_height: Vec<u32> = (0..n as u32).collect();
    by_height.sort_by(|&a, &b| points[b as usize][1].total_cmp(&points[a as usize][1]));
    for &root in &by_height {
        if done[root as usize] {
            continue;
        }
        if normals[root as usize][1] < 0.0 {
            normals[root as usize] = normals[root as usize].map(|x| -x);
            flipped += 1;
        }
        // Max-heap on the negated weight: the lightest edge first (weights in [0, 1]).
        let mut heap = BinaryHeap::new();
        let push = |heap: &mut BinaryHeap<(i64, u32, u32)>, from: u32, normals: &[[f32; 3]]| {
            for &to in &adjacency[from as usize] {
                if to != u32::MAX {
                    let w = 1.0 - dot(normals[from as usize], normals[to as usize]).abs();
                    heap.push((-((w as f64 * 1e9) as i64), to, from));
                }
            }
        };
        done[root as usize] = true;
        push(&mut heap, root, normals);
        while let Some((_, to, from)) = heap.pop() {
            if done[to as usize] {
                continue;
            }
            done[to as usize] = true;
            if dot(normals[to as usize], normals[from as usize]) < 0.0 {
                normals[to as usize] = normals[to as usize].map(|x| -x);
                flipped += 1;
            }
            push(&mut heap, to, normals);
        }
    }
    flipped
}
