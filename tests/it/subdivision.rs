//! Loop subdivision stencils: counts, numbering, watertightness, the Loop
//! rules on hand-computed cases, affine invariance, errors, and the
//! displacement noise.

use std::collections::HashMap;

use canopy::scene::animated::subdivision::{
    LoopSubdivision, MAX_LEVELS, Stencils, SubdivisionError, noise_height,
};
use glam::{Mat3, Vec3};

// ---------------------------------------------------------------------------
// Meshes and helpers.

struct Mesh {
    positions: Vec<[f32; 3]>,
    triangles: Vec<[u32; 3]>,
}

impl Mesh {
    fn vertex_count(&self) -> u32 {
        self.positions.len() as u32
    }

    fn subdivide(&self, levels: u32) -> LoopSubdivision {
        LoopSubdivision::new(&self.triangles, self.vertex_count(), levels).unwrap()
    }
}

/// The regular icosahedron, outward-facing counter-clockwise triangles.
fn icosahedron() -> Mesh {
    let t = (1.0 + 5.0f32.sqrt()) / 2.0;
    let positions = vec![
        [-1.0, t, 0.0],
        [1.0, t, 0.0],
        [-1.0, -t, 0.0],
        [1.0, -t, 0.0],
        [0.0, -1.0, t],
        [0.0, 1.0, t],
        [0.0, -1.0, -t],
        [0.0, 1.0, -t],
        [t, 0.0, -1.0],
        [t, 0.0, 1.0],
        [-t, 0.0, -1.0],
        [-t, 0.0, 1.0],
    ];
    let triangles = vec![
        [0, 11, 5],
        [0, 5, 1],
        [0, 1, 7],
        [0, 7, 10],
        [0, 10, 11],
        [1, 5, 9],
        [5, 11, 4],
        [11, 10, 2],
        [10, 7, 6],
        [7, 1, 8],
        [3, 9, 4],
        [3, 4, 2],
        [3, 2, 6],
        [3, 6, 8],
        [3, 8, 9],
        [4, 9, 5],
        [2, 4, 11],
        [6, 2, 10],
        [8, 6, 7],
        [9, 8, 1],
    ];
    Mesh {
        positions,
        triangles,
    }
}

/// The regular octahedron: vertices +x, -x, +y, -y, +z, -z; one
/// outward-facing triangle per octant.
fn octahedron() -> Mesh {
    let positions = vec![
        [1.0, 0.0, 0.0],
        [-1.0, 0.0, 0.0],
        [0.0, 1.0, 0.0],
        [0.0, -1.0, 0.0],
        [0.0, 0.0, 1.0],
        [0.0, 0.0, -1.0],
    ];
    let mut triangles = Vec::new();
    for sx in 0..2u32 {
        for sy in 0..2u32 {
            for sz in 0..2u32 {
                let (x, y, z) = (sx, 2 + sy, 4 + sz);
                // An odd number of negative axes mirrors the octant.
                if (sx + sy + sz) % 2 == 0 {
                    triangles.push([x, y, z]);
                } else {
                    triangles.push([x, z, y]);
                }
            }
        }
    }
    Mesh {
        positions,
        triangles,
    }
}

/// A `cells` x `cells` grid of split quads over the unit square in z = 0,
/// counter-clockwise seen from +z. Vertex `(i, j)` is `j * (cells + 1) + i`.
fn grid(cells: u32) -> Mesh {
    let n = cells + 1;
    let mut positions = Vec::new();
    for j in 0..n {
        for i in 0..n {
            positions.push([i as f32 / cells as f32, j as f32 / cells as f32, 0.0]);
        }
    }
    let mut triangles = Vec::new();
    for j in 0..cells {
        for i in 0..cells {
            let v = j * n + i;
            // Alternate the diagonal so that the grid has vertices of several
            // valences.
            if (i + j) % 2 == 0 {
                triangles.push([v, v + 1, v + n + 1]);
                triangles.push([v, v + n + 1, v + n]);
            } else {
                triangles.push([v, v + 1, v + n]);
                triangles.push([v + 1, v + n + 1, v + n]);
            }
        }
    }
    Mesh {
        positions,
        triangles,
    }
}

/// A closed torus of `nu` x `nv` split quads (`2 nu nv` triangles).
fn torus(nu: u32, nv: u32) -> Mesh {
    let mut positions = Vec::new();
    for i in 0..nu {
        let u = i as f32 / nu as f32 * std::f32::consts::TAU;
        for j in 0..nv {
            let v = j as f32 / nv as f32 * std::f32::consts::TAU;
            let r = 2.0 + 0.5 * v.cos();
            positions.push([r * u.cos(), r * u.sin(), 0.5 * v.sin()]);
        }
    }
    let index = |i: u32, j: u32| (i % nu) * nv + (j % nv);
    let mut triangles = Vec::new();
    for i in 0..nu {
        for j in 0..nv {
            let (a, b, c, d) = (
                index(i, j),
                index(i + 1, j),
                index(i + 1, j + 1),
                index(i, j + 1),
            );
            triangles.push([a, b, c]);
            triangles.push([a, c, d]);
        }
    }
    Mesh {
        positions,
        triangles,
    }
}

/// A small deterministic generator for jitter and transforms.
struct Rng(u64);

impl Rng {
    fn next_f32(&mut self) -> f32 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 40) as f32) / (1u64 << 24) as f32
    }

    /// Uniform in `[-1, 1)`.
    fn signed(&mut self) -> f32 {
        self.next_f32() * 2.0 - 1.0
    }
}

fn edge_key(a: u32, b: u32) -> (u32, u32) {
    (a.min(b), a.max(b))
}

/// Triangles per undirected edge.
fn edge_triangle_counts(triangles: &[[u32; 3]]) -> HashMap<(u32, u32), u32> {
    let mut counts = HashMap::new();
    for t in triangles {
        for k in 0..3 {
            *counts.entry(edge_key(t[k], t[(k + 1) % 3])).or_insert(0) += 1;
        }
    }
    counts
}

/// Six times the signed volume enclosed by a closed mesh.
fn signed_volume(positions: &[[f32; 3]], triangles: &[[u32; 3]]) -> f32 {
    triangles
        .iter()
        .map(|t| {
            let [a, b, c] = t.map(|i| Vec3::from(positions[i as usize]));
            a.dot(b.cross(c))
        })
        .sum()
}

fn assert_close(actual: [f32; 3], expected: [f32; 3], tolerance: f32, what: &str) {
    for k in 0..3 {
        assert!(
            (actual[k] - expected[k]).abs() <= tolerance,
            "{what}: {actual:?} != {expected:?}"
        );
    }
}

fn rows_of(stencils: &Stencils) -> Vec<(Vec<u32>, Vec<f32>)> {
    (0..stencils.rows())
        .map(|i| {
            let (c, w) = stencils.row(i);
            (c.to_vec(), w.to_vec())
        })
        .collect()
}

/// Loop's beta, computed here independently of the module.
fn expected_beta(n: u32) -> f64 {
    let n = f64::from(n);
    let inner = 3.0 / 8.0 + (2.0 * std::f64::consts::PI / n).cos() / 4.0;
    (5.0 / 8.0 - inner * inner) / n
}

// ---------------------------------------------------------------------------
// Counts and numbering.

#[test]
fn control_meshes_are_closed_and_outward() {
    for mesh in [icosahedron(), octahedron()] {
        assert!(signed_volume(&mesh.positions, &mesh.triangles) > 0.0);
        let counts = edge_triangle_counts(&mesh.triangles);
        assert!(counts.values().all(|&c| c == 2));
    }
}

#[test]
fn counts_follow_euler_on_closed_meshes() {
    for (name, mesh) in [("icosahedron", icosahedron()), ("octahedron", octahedron())] {
        for levels in 0..=3 {
            let s = mesh.subdivide(levels);
            assert_eq!(s.levels.len(), levels as usize, "{name}");
            assert_eq!(s.vertex_counts.len(), levels as usize + 1, "{name}");
            assert_eq!(
                s.triangles.len(),
                mesh.triangles.len() * 4usize.pow(levels),
                "{name} level {levels}"
            );
            let mut faces = mesh.triangles.len() as u32;
            for k in 0..levels as usize {
                // Closed: every edge has two triangles, so E = 3F/2.
                let edges = 3 * faces / 2;
                assert_eq!(
                    s.vertex_counts[k + 1],
                    s.vertex_counts[k] + edges,
                    "{name} level {}",
                    k + 1
                );
                assert_eq!(s.levels[k].rows() as u32, s.vertex_counts[k + 1]);
                faces *= 4;
            }
            // Genus 0: V - E + F = 2.
            let v = i64::from(s.final_vertex_count());
            let f = s.triangles.len() as i64;
            assert_eq!(v - 3 * f / 2 + f, 2, "{name} level {levels}");
            assert_eq!(
                s.apply(&mesh.positions).len() as u32,
                s.final_vertex_count()
            );
        }
    }
}

#[test]
fn zero_levels_is_the_identity() {
    let mesh = icosahedron();
    let s = mesh.subdivide(0);
    assert!(s.levels.is_empty());
    assert_eq!(s.triangles, mesh.triangles);
    assert_eq!(s.vertex_counts, vec![12]);
    assert_eq!(s.final_vertex_count(), 12);
    assert_eq!(s.apply(&mesh.positions), mesh.positions);
    assert_eq!(s.control_triangle(7), 7);
}

#[test]
fn refined_closed_meshes_stay_watertight() {
    for mesh in [icosahedron(), octahedron()] {
        for levels in 1..=3 {
            let s = mesh.subdivide(levels);
            let mut directed: HashMap<(u32, u32), u32> = HashMap::new();
            for t in &s.triangles {
                assert!(t[0] != t[1] && t[1] != t[2] && t[2] != t[0], "{t:?}");
                for k in 0..3 {
                    *directed.entry((t[k], t[(k + 1) % 3])).or_insert(0) += 1;
                }
            }
            for (&(a, b), &count) in &directed {
                assert_eq!(count, 1, "directed edge ({a}, {b}) used {count} times");
                assert_eq!(
                    directed.get(&(b, a)),
                    Some(&1),
                    "edge ({a}, {b}) has no opposite half"
                );
            }
            let counts = edge_triangle_counts(&s.triangles);
            assert!(counts.values().all(|&c| c == 2));

            let mut used = vec![false; s.final_vertex_count() as usize];
            for t in &s.triangles {
                for &i in t {
                    used[i as usize] = true;
                }
            }
            assert!(used.iter().all(|&u| u), "unused vertex at level {levels}");

            // Still outward-facing after moving the vertices.
            let refined = s.apply(&mesh.positions);
            assert!(signed_volume(&refined, &s.triangles) > 0.0);
        }
    }
}

#[test]
fn children_follow_the_documented_numbering() {
    let mesh = icosahedron();
    let s = mesh.subdivide(2);
    let one = mesh.subdivide(1);
    for (parents, children, v_count) in [
        (&mesh.triangles, &one.triangles, 12u32),
        (&one.triangles, &s.triangles, one.final_vertex_count()),
    ] {
        // Odd vertices are numbered by first appearance of their edge.
        let mut seen: HashMap<(u32, u32), u32> = HashMap::new();
        for (t, parent) in parents.iter().enumerate() {
            let [a, b, c] = *parent;
            let child = &children[4 * t..4 * t + 4];
            let (ab, bc, ca) = (child[0][1], child[1][2], child[0][2]);
            assert_eq!(child[0], [a, ab, ca]);
            assert_eq!(child[1], [ab, b, bc]);
            assert_eq!(child[2], [ca, bc, c]);
            assert_eq!(child[3], [ab, bc, ca]);
            for ((p, q), odd) in [((a, b), ab), ((b, c), bc), ((c, a), ca)] {
                let next = v_count + seen.len() as u32;
                let id = *seen.entry(edge_key(p, q)).or_insert(next);
                assert_eq!(odd, id, "edge ({p}, {q}) of triangle {t}");
            }
        }
    }
    assert_eq!(s.control_triangle(0), 0);
    assert_eq!(s.control_triangle(15), 0);
    assert_eq!(s.control_triangle(16), 1);
    assert_eq!(s.control_triangle(319), 19);
}

// ---------------------------------------------------------------------------
// Hand-computed first levels of open meshes.

#[test]
fn single_triangle_first_level() {
    let triangles = [[0, 1, 2]];
    let control = [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]];
    let s = LoopSubdivision::new(&triangles, 3, 1).unwrap();
    assert_eq!(s.vertex_counts, vec![3, 6]);
    assert_eq!(
        s.triangles,
        vec![[0, 3, 5], [3, 1, 4], [5, 4, 2], [3, 4, 5]]
    );
    // Every corner has two boundary edges: 3/4 v + 1/8 of the two others.
    // Every edge is a boundary edge: midpoints.
    let expected = [
        [0.125, 0.125, 0.0],
        [0.75, 0.125, 0.0],
        [0.125, 0.75, 0.0],
        [0.5, 0.0, 0.0],
        [0.5, 0.5, 0.0],
        [0.0, 0.5, 0.0],
    ];
    let refined = s.apply(&control);
    for (i, (&a, &e)) in refined.iter().zip(&expected).enumerate() {
        assert_close(a, e, 1e-7, &format!("vertex {i}"));
    }
    assert_eq!(
        rows_of(&s.levels[0]),
        vec![
            (vec![0, 1, 2], vec![0.75, 0.125, 0.125]),
            (vec![1, 0, 2], vec![0.75, 0.125, 0.125]),
            (vec![2, 0, 1], vec![0.75, 0.125, 0.125]),
            (vec![0, 1], vec![0.5, 0.5]),
            (vec![1, 2], vec![0.5, 0.5]),
            (vec![0, 2], vec![0.5, 0.5]),
        ]
    );
}

#[test]
fn two_triangle_quad_first_level() {
    let triangles = [[0, 1, 2], [0, 2, 3]];
    let control = [
        [0.0, 0.0, 0.0],
        [2.0, 0.0, 0.0],
        [3.0, 2.0, 1.0],
        [0.0, 1.0, 0.0],
    ];
    let s = LoopSubdivision::new(&triangles, 4, 1).unwrap();
    assert_eq!(s.vertex_counts, vec![4, 9]);
    assert_eq!(
        s.triangles,
        vec![
            [0, 4, 6],
            [4, 1, 5],
            [6, 5, 2],
            [4, 5, 6],
            [0, 6, 8],
            [6, 2, 7],
            [8, 7, 3],
            [6, 7, 8],
        ]
    );
    let expected = [
        // Corners: 3/4 v + 1/8 of the two boundary neighbours (vertices 0
        // and 2 also have the interior diagonal, which does not count).
        [0.25, 0.125, 0.0],
        [1.875, 0.25, 0.125],
        [2.5, 1.625, 0.75],
        [0.375, 1.0, 0.125],
        // Edge (0, 1), boundary.
        [1.0, 0.0, 0.0],
        // Edge (1, 2), boundary.
        [2.5, 1.0, 0.5],
        // Edge (2, 0), interior: 3/8 (v0 + v2) + 1/8 (v1 + v3).
        [1.375, 0.875, 0.375],
        // Edge (2, 3), boundary.
        [1.5, 1.5, 0.5],
        // Edge (3, 0), boundary.
        [0.0, 0.5, 0.0],
    ];
    let refined = s.apply(&control);
    assert_eq!(refined.len(), expected.len());
    for (i, (&a, &e)) in refined.iter().zip(&expected).enumerate() {
        assert_close(a, e, 1e-6, &format!("vertex {i}"));
    }
    let (columns, weights) = s.levels[0].row(6);
    assert_eq!(columns, &[0, 2, 1, 3]);
    assert_eq!(weights, &[0.375, 0.375, 0.125, 0.125]);
}

#[test]
fn grid_boundary_stays_on_the_boundary_curve() {
    let cells = 6;
    let h = 1.0 / cells as f32;
    let mesh = grid(cells);
    let s = mesh.subdivide(3);
    let refined = s.apply(&mesh.positions);
    let counts = edge_triangle_counts(&s.triangles);
    let mut boundary = vec![false; refined.len()];
    for (&(a, b), &c) in &counts {
        assert!(c == 1 || c == 2);
        if c == 1 {
            boundary[a as usize] = true;
            boundary[b as usize] = true;
        }
    }
    let boundary_count = boundary.iter().filter(|&&b| b).count();
    // The boundary polygon has 4 * cells edges, doubled at each level.
    assert_eq!(boundary_count, 4 * cells as usize * 8);

    for (i, p) in refined.iter().enumerate().filter(|&(i, _)| boundary[i]) {
        let [x, y, z] = *p;
        assert_eq!(z, 0.0);
        assert!((-1e-6..=1.0 + 1e-6).contains(&x) && (-1e-6..=1.0 + 1e-6).contains(&y));
        let on_side =
            x.abs() < 1e-6 || (x - 1.0).abs() < 1e-6 || y.abs() < 1e-6 || (y - 1.0).abs() < 1e-6;
        // The cubic B-spline of the square leaves the sides only within one
        // control edge of a corner, where it rounds the corner.
        let near = |c: f32| c < h + 1e-6 || c > 1.0 - h - 1e-6;
        assert!(
            on_side || (near(x) && near(y)),
            "boundary vertex {i} at {p:?} leaves the boundary"
        );
    }

    // The boundary curve depends on the boundary polygon only: moving the
    // interior control vertices leaves every refined boundary vertex where
    // it is.
    let mut rng = Rng(7);
    let n = cells + 1;
    let mut moved = mesh.positions.clone();
    for j in 1..cells {
        for i in 1..cells {
            let p = &mut moved[(j * n + i) as usize];
            p[0] += 0.3 * h * rng.signed();
            p[1] += 0.3 * h * rng.signed();
            p[2] += rng.signed();
        }
    }
    let refined_moved = s.apply(&moved);
    let mut interior_changed = false;
    for i in 0..refined.len() {
        if boundary[i] {
            assert_eq!(refined[i], refined_moved[i], "boundary vertex {i}");
        } else {
            interior_changed |= refined[i] != refined_moved[i];
        }
    }
    assert!(interior_changed);
}

#[test]
fn non_manifold_edge_is_a_crease() {
    // Three triangles share edge (0, 1).
    let triangles = [[0, 1, 2], [1, 0, 3], [0, 1, 4]];
    let control = [
        [0.0, 0.0, 0.0],
        [1.0, 0.0, 0.0],
        [0.5, 1.0, 0.0],
        [0.5, -1.0, 0.0],
        [0.5, 0.0, 1.0],
    ];
    let s = LoopSubdivision::new(&triangles, 5, 1).unwrap();
    let refined = s.apply(&control);
    // Vertices 0 and 1 have four boundary edges each: they stay.
    assert_eq!(refined[0], control[0]);
    assert_eq!(refined[1], control[1]);
    // Vertex 2 has two boundary edges, to 0 and 1.
    assert_close(refined[2], [0.5, 0.75, 0.0], 1e-7, "vertex 2");
    // Edge (0, 1) is the first odd vertex: its midpoint.
    assert_eq!(s.levels[0].row(5), (&[0u32, 1][..], &[0.5f32, 0.5][..]));
    assert_close(refined[5], [0.5, 0.0, 0.0], 0.0, "edge (0, 1)");
}

#[test]
fn unused_vertices_stay() {
    let triangles = [[0, 1, 2]];
    let control = [
        [0.0, 0.0, 0.0],
        [1.0, 0.0, 0.0],
        [0.0, 1.0, 0.0],
        [5.0, 6.0, 7.0],
    ];
    let s = LoopSubdivision::new(&triangles, 4, 2).unwrap();
    assert_eq!(s.vertex_counts, vec![4, 7, 16]);
    assert_eq!(s.levels[0].row(3), (&[3u32][..], &[1.0f32][..]));
    assert_eq!(s.apply(&control)[3], [5.0, 6.0, 7.0]);
}

#[test]
fn degenerate_triangles_do_not_panic_and_stay_degenerate() {
    let triangles = [
        [0, 1, 2],
        [0, 0, 1], // a repeated index
        [3, 3, 3], // a point
        [1, 0, 2], // the first triangle, flipped
        [0, 1, 2], // the first triangle again
        [2, 4, 2], // an edge used twice by one triangle
        [1, 3, 2],
    ];
    let control = [
        [0.0, 0.0, 0.0],
        [1.0, 0.0, 0.0],
        [0.0, 1.0, 0.0],
        [1.0, 1.0, 0.5],
        [2.0, 2.0, 2.0],
    ];
    for levels in 0..=3 {
        let s = LoopSubdivision::new(&triangles, 5, levels).unwrap();
        let block = 4usize.pow(levels);
        assert_eq!(s.triangles.len(), triangles.len() * block);
        for (t, tri) in s.triangles.iter().enumerate() {
            let degenerate = tri[0] == tri[1] || tri[1] == tri[2] || tri[2] == tri[0];
            let parent_degenerate = matches!(t / block, 1 | 2 | 5);
            assert_eq!(degenerate, parent_degenerate, "triangle {t} {tri:?}");
            assert!(tri.iter().all(|&i| i < s.final_vertex_count()));
        }
        for stencils in &s.levels {
            for i in 0..stencils.rows() {
                let (_, w) = stencils.row(i);
                assert!((w.iter().sum::<f32>() - 1.0).abs() < 1e-6);
            }
        }
        let refined = s.apply(&control);
        assert!(refined.iter().flatten().all(|c| c.is_finite()));
        // Vertex 4 is only in a degenerate triangle: it stays.
        assert_eq!(refined[4], control[4]);
    }
    // Self edges get no odd vertex: the distinct edges are (0,1), (1,2),
    // (2,0), (2,4), (1,3), (3,2).
    let s = LoopSubdivision::new(&triangles, 5, 1).unwrap();
    assert_eq!(s.vertex_counts, vec![5, 11]);
    // Edge (2, 4), the fourth, has no proper triangle: its odd vertex is the
    // midpoint.
    let refined = s.apply(&control);
    assert_close(refined[8], [1.0, 1.5, 1.0], 1e-7, "edge (2, 4)");
}

#[test]
fn triangle_listed_twice_merges_the_opposite_vertex() {
    // Every edge has two (identical) triangles: interior, with the same
    // opposite vertex twice.
    let triangles = [[0, 1, 2], [0, 1, 2]];
    let s = LoopSubdivision::new(&triangles, 3, 1).unwrap();
    assert_eq!(s.vertex_counts, vec![3, 6]);
    assert_eq!(
        s.levels[0].row(3),
        (&[0u32, 1, 2][..], &[0.375f32, 0.375, 0.25][..])
    );
    // The corners are interior vertices of valence 2.
    let (columns, weights) = s.levels[0].row(0);
    assert_eq!(columns, &[0, 1, 2]);
    let beta = expected_beta(2);
    assert!((f64::from(weights[1]) - beta).abs() < 1e-7);
    assert!((f64::from(weights[0]) - (1.0 - 2.0 * beta)).abs() < 1e-7);
}

// ---------------------------------------------------------------------------
// Interior rules.

#[test]
fn icosahedron_vertex_of_valence_five_follows_loop() {
    let mesh = icosahedron();
    let s = mesh.subdivide(1);
    let beta = expected_beta(5);
    for v in 0..12u32 {
        let mut ring: Vec<u32> = mesh
            .triangles
            .iter()
            .filter(|t| t.contains(&v))
            .flatten()
            .copied()
            .filter(|&i| i != v)
            .collect();
        ring.sort_unstable();
        ring.dedup();
        assert_eq!(ring.len(), 5);

        let (columns, weights) = s.levels[0].row(v as usize);
        let mut expected_columns = vec![v];
        expected_columns.extend(&ring);
        assert_eq!(columns, expected_columns.as_slice());
        assert!((f64::from(weights[0]) - (1.0 - 5.0 * beta)).abs() < 1e-7);
        for &w in &weights[1..] {
            assert!((f64::from(w) - beta).abs() < 1e-7);
        }

        let p = Vec3::from(mesh.positions[v as usize]);
        let sum: Vec3 = ring
            .iter()
            .map(|&i| Vec3::from(mesh.positions[i as usize]))
            .sum();
        let expected = p * (1.0 - 5.0 * beta as f32) + sum * beta as f32;
        let refined = s.apply(&mesh.positions);
        assert_close(refined[v as usize], expected.into(), 1e-6, "valence 5");
    }
    // beta(5) = (5/8 - (3/8 + cos(72°)/4)^2) / 5, about 0.0841.
    assert!((beta - 0.084_093_2).abs() < 1e-6);
}

#[test]
fn regular_vertex_has_beta_one_sixteenth() {
    assert!((expected_beta(6) - 1.0 / 16.0).abs() < 1e-15);
    let mesh = icosahedron();
    let s = mesh.subdivide(2);
    // The level-1 odd vertices (12..42) are regular: valence 6.
    for v in 12..42 {
        let (columns, weights) = s.levels[1].row(v);
        assert_eq!(columns.len(), 7);
        assert_eq!(columns[0], v as u32);
        assert!(columns[1..].windows(2).all(|w| w[0] < w[1]));
        assert_eq!(weights[0], 10.0 / 16.0);
        assert!(weights[1..].iter().all(|&w| w == 1.0 / 16.0));
    }
}

#[test]
fn interior_edge_uses_three_eighths_and_one_eighth() {
    let mesh = octahedron();
    let s = mesh.subdivide(1);
    let counts = edge_triangle_counts(&mesh.triangles);
    for row in 6..18 {
        let (columns, weights) = s.levels[0].row(row);
        assert_eq!(weights, &[0.375, 0.375, 0.125, 0.125]);
        assert!(columns[0] < columns[1] && columns[2] < columns[3]);
        assert!(counts.contains_key(&(columns[0], columns[1])));
        // The opposite vertices are the third vertices of the edge's two
        // triangles.
        let mut opposite: Vec<u32> = mesh
            .triangles
            .iter()
            .filter(|t| t.contains(&columns[0]) && t.contains(&columns[1]))
            .map(|t| {
                *t.iter()
                    .find(|&&i| i != columns[0] && i != columns[1])
                    .unwrap()
            })
            .collect();
        opposite.sort_unstable();
        assert_eq!(&columns[2..], opposite.as_slice());
    }
}

#[test]
fn high_valence_fan_centre_follows_loop() {
    // A disk of `n` triangles around vertex 0; rim vertices 1..=n.
    let n = 50_000u32;
    let triangles: Vec<[u32; 3]> = (0..n).map(|i| [0, 1 + i, 1 + (i + 1) % n]).collect();
    let s = LoopSubdivision::new(&triangles, n + 1, 2).unwrap();
    // Level 1: n spokes and n rim edges; level 2: 7n edges (a disk: V - E + F = 1).
    assert_eq!(s.vertex_counts, vec![n + 1, 3 * n + 1, 10 * n + 1]);
    let (columns, weights) = s.levels[0].row(0);
    assert_eq!(columns.len(), n as usize + 1);
    assert_eq!(columns[0], 0);
    assert!(columns[1..].iter().copied().eq(1..=n));
    let beta = expected_beta(n);
    assert!(
        weights[1..]
            .iter()
            .all(|&w| (f64::from(w) - beta).abs() < 1e-12)
    );
    assert!((f64::from(weights[0]) - (1.0 - f64::from(n) * beta)).abs() < 1e-6);
    // A rim vertex: two boundary edges (the rim), one interior spoke.
    let (columns, weights) = s.levels[0].row(1);
    assert_eq!(columns, &[1, 2, n]);
    assert_eq!(weights, &[0.75, 0.125, 0.125]);
}

// ---------------------------------------------------------------------------
// Geometric invariants.

#[test]
fn planar_mesh_stays_planar() {
    let cells = 8;
    let mut mesh = grid(cells);
    let mut rng = Rng(3);
    let h = 1.0 / cells as f32;
    let u = Vec3::new(1.0, 0.2, -0.4).normalize();
    let normal = u.cross(Vec3::new(0.1, 1.0, 0.3)).normalize();
    let v = normal.cross(u);
    let origin = Vec3::new(0.5, -1.0, 2.0);
    for p in &mut mesh.positions {
        let x = p[0] + 0.3 * h * rng.signed();
        let y = p[1] + 0.3 * h * rng.signed();
        *p = (origin + u * x + v * y).into();
    }
    let s = mesh.subdivide(3);
    let refined = s.apply(&mesh.positions);
    for (i, p) in refined.iter().enumerate() {
        let distance = (Vec3::from(*p) - origin).dot(normal);
        assert!(
            distance.abs() < 1e-5,
            "vertex {i} off the plane by {distance}"
        );
    }
}

#[test]
fn affine_maps_commute_with_subdivision() {
    let mut rng = Rng(11);
    let linear = Mat3::from_cols_array(&std::array::from_fn(|_| 1.5 * rng.signed()));
    let translation = Vec3::new(3.0 * rng.signed(), 3.0 * rng.signed(), 3.0 * rng.signed());
    let transform = |p: [f32; 3]| -> [f32; 3] { (linear * Vec3::from(p) + translation).into() };

    for (name, mut mesh, levels) in [
        ("icosahedron", icosahedron(), 3),
        ("octahedron", octahedron(), 2),
        ("grid", grid(5), 3),
    ] {
        for p in &mut mesh.positions {
            for c in p.iter_mut() {
                *c += 0.2 * rng.signed();
            }
        }
        let s = mesh.subdivide(levels);
        let moved: Vec<[f32; 3]> = mesh.positions.iter().map(|&p| transform(p)).collect();
        let a = s.apply(&moved);
        let b: Vec<[f32; 3]> = s
            .apply(&mesh.positions)
            .into_iter()
            .map(transform)
            .collect();
        for (i, (&p, &q)) in a.iter().zip(&b).enumerate() {
            assert_close(p, q, 1e-5, &format!("{name} vertex {i}"));
        }
    }
}

#[test]
fn rows_sum_to_one_in_a_fixed_order() {
    let single = Mesh {
        positions: vec![[0.0; 3]; 3],
        triangles: vec![[0, 1, 2]],
    };
    let meshes = [icosahedron(), octahedron(), grid(4), single];
    for mesh in meshes {
        let s = mesh.subdivide(3);
        for (level, stencils) in s.levels.iter().enumerate() {
            let old = s.vertex_counts[level];
            assert_eq!(stencils.row_offsets[0], 0);
            assert_eq!(
                *stencils.row_offsets.last().unwrap() as usize,
                stencils.columns.len()
            );
            assert_eq!(stencils.columns.len(), stencils.weights.len());
            assert!(stencils.row_offsets.windows(2).all(|w| w[0] < w[1]));
            for i in 0..stencils.rows() {
                let (columns, weights) = stencils.row(i);
                let sum: f64 = weights.iter().map(|&w| f64::from(w)).sum();
                assert!((sum - 1.0).abs() < 1e-6, "level {level} row {i}: {sum}");
                assert!(weights.iter().all(|&w| w > 0.0));
                assert!(columns.iter().all(|&c| c < old));
                if i < old as usize {
                    assert_eq!(columns[0], i as u32, "even row starts with itself");
                    assert!(columns[1..].windows(2).all(|w| w[0] < w[1]));
                } else {
                    assert!(columns[0] < columns[1]);
                }
            }
        }
        // Building twice gives the same matrices.
        assert_eq!(s, mesh.subdivide(3));
    }
}

// ---------------------------------------------------------------------------
// Errors.

#[test]
fn more_than_four_levels_are_rejected() {
    let mesh = icosahedron();
    assert_eq!(MAX_LEVELS, 4);
    let s = mesh.subdivide(4);
    assert_eq!(s.triangles.len(), 20 * 256);
    let error = LoopSubdivision::new(&mesh.triangles, 12, 5).unwrap_err();
    assert_eq!(error, SubdivisionError::TooManyLevels { levels: 5 });
    assert!(error.to_string().contains('5'));
}

#[test]
fn out_of_range_index_is_rejected_naming_the_triangle() {
    let triangles = [[0, 1, 2], [2, 1, 7]];
    let error = LoopSubdivision::new(&triangles, 4, 1).unwrap_err();
    assert_eq!(
        error,
        SubdivisionError::IndexOutOfRange {
            triangle: 1,
            index: 7,
            vertex_count: 4
        }
    );
    let message = error.to_string();
    assert!(message.contains("triangle 1"), "{message}");
    assert!(message.contains('7'), "{message}");
    // Also with no levels.
    assert!(LoopSubdivision::new(&triangles, 4, 0).is_err());
    assert!(LoopSubdivision::new(&triangles, 8, 0).is_ok());
}

#[test]
fn counts_over_u32_are_rejected() {
    let error = LoopSubdivision::new(&[[0, 1, 2]], u32::MAX - 1, 1).unwrap_err();
    assert!(matches!(
        error,
        SubdivisionError::TooLarge {
            level: 1,
            what: "vertices",
            ..
        }
    ));
    assert!(error.to_string().contains("u32"));
}

// ---------------------------------------------------------------------------
// Displacement noise.

fn sample_points(count: usize, seed: u64, extent: f32) -> Vec<[f32; 3]> {
    let mut rng = Rng(seed);
    (0..count)
        .map(|_| {
            [
                extent * rng.signed(),
                extent * rng.signed(),
                extent * rng.signed(),
            ]
        })
        .collect()
}

#[test]
fn noise_is_deterministic() {
    for p in sample_points(1000, 5, 10.0) {
        assert_eq!(noise_height(p, 1.7), noise_height(p, 1.7));
    }
    assert_eq!(
        noise_height([0.25, -3.5, 7.0], 2.0),
        noise_height([0.25, -3.5, 7.0], 2.0)
    );
}

#[test]
fn noise_is_bounded_and_not_constant() {
    let mut min = f32::MAX;
    let mut max = f32::MIN;
    let mut sum = 0.0f64;
    let mut sum_sq = 0.0f64;
    let points = sample_points(20_000, 9, 20.0);
    for frequency in [0.1, 1.0, 3.0, 17.0] {
        for &p in &points {
            let n = noise_height(p, frequency);
            assert!(n.is_finite());
            assert!((-1.5..=1.5).contains(&n), "{n} at {p:?}");
            min = min.min(n);
            max = max.max(n);
            sum += f64::from(n);
            sum_sq += f64::from(n) * f64::from(n);
        }
    }
    let count = (points.len() * 4) as f64;
    let mean = sum / count;
    let deviation = (sum_sq / count - mean * mean).sqrt();
    assert!(min < -0.3 && max > 0.3, "range [{min}, {max}]");
    assert!(mean.abs() < 0.05, "mean {mean}");
    assert!(deviation > 0.1, "deviation {deviation}");
    // The origin is no lattice zero of every octave.
    assert_ne!(noise_height([0.0; 3], 1.0), 0.0);
}

#[test]
fn noise_is_continuous() {
    for frequency in [0.5f32, 1.0, 4.0] {
        let step = 1e-4 / frequency;
        for p in sample_points(5_000, 13, 10.0) {
            let n = noise_height(p, frequency);
            for axis in 0..3 {
                let mut q = p;
                q[axis] += step;
                let m = noise_height(q, frequency);
                assert!(
                    (n - m).abs() < 2e-3,
                    "jump of {} at {p:?} along {axis}",
                    (n - m).abs()
                );
            }
        }
    }
}

#[test]
fn noise_frequency_scales_features() {
    // Twice the frequency is the same field at twice the coordinates.
    for p in sample_points(1000, 17, 3.0) {
        let a = noise_height(p, 2.0);
        let b = noise_height(p.map(|c| c * 2.0), 1.0);
        assert!((a - b).abs() < 1e-4, "{a} != {b}");
    }
}

// ---------------------------------------------------------------------------
// Build time (run with `cargo test --release -- --ignored --nocapture`).

#[test]
#[ignore = "timing"]
fn build_time_on_large_meshes() {
    for (nu, nv) in [(320, 320), (708, 708)] {
        let coherent = torus(nu, nv);
        // The same torus with its vertices numbered at random: no locality.
        let mut shuffled = torus(nu, nv);
        let mut order: Vec<u32> = (0..shuffled.vertex_count()).collect();
        let mut rng = Rng(23);
        for i in (1..order.len()).rev() {
            let j = ((rng.next_f32() * (i + 1) as f32) as usize).min(i);
            order.swap(i, j);
        }
        for t in &mut shuffled.triangles {
            *t = t.map(|i| order[i as usize]);
        }
        for p in &mut shuffled.positions {
            *p = [0.0; 3];
        }
        // A disk of as many triangles around a single vertex.
        let n = coherent.triangles.len() as u32;
        let fan = Mesh {
            positions: vec![[0.0; 3]; n as usize + 1],
            triangles: (0..n).map(|i| [0, 1 + i, 1 + (i + 1) % n]).collect(),
        };
        for (name, mesh) in [
            ("torus", &coherent),
            ("shuffled torus", &shuffled),
            ("fan", &fan),
        ] {
            for levels in 1..=2 {
                let start = std::time::Instant::now();
                let s = mesh.subdivide(levels);
                let build = start.elapsed();
                let start = std::time::Instant::now();
                let refined = s.apply(&mesh.positions);
                let apply = start.elapsed();
                println!(
                    "{name}, {} triangles, {levels} level(s): new {:.1} ms, apply {:.1} ms, \
                     {} vertices, {} triangles, {} stencil entries",
                    mesh.triangles.len(),
                    build.as_secs_f64() * 1e3,
                    apply.as_secs_f64() * 1e3,
                    refined.len(),
                    s.triangles.len(),
                    s.levels.iter().map(|l| l.columns.len()).sum::<usize>()
                );
            }
        }
    }
}
