//! Loop subdivision topology, built once on the CPU, applied every frame.
//!
//! An animated control mesh is refined by Loop subdivision (Loop 1987; used
//! for animated meshes as in Zhou et al. 2008, §4). The connectivity never
//! changes from frame to frame, so each level is precomputed as a sparse
//! matrix ([`Stencils`], compressed rows): new vertex `i` is
//! `sum(weights[j] * old[columns[j]])` for `j` in
//! `row_offsets[i]..row_offsets[i + 1]`. The GPU kernel evaluates the levels
//! one after the other; [`Stencils::apply`] is its CPU reference.
//!
//! # Numbering
//!
//! At every level the new vertices are the old vertices first, at the same
//! indices ("even" vertices, repositioned), then one new "odd" vertex per
//! undirected edge, numbered in order of first appearance when walking the
//! triangles in order and, within a triangle `[v0, v1, v2]`, its edges
//! `(v0, v1)`, `(v1, v2)`, `(v2, v0)`.
//!
//! Triangle `t = [a, b, c]` with edge vertices `ab`, `bc`, `ca` becomes the
//! four triangles `4t..4t + 4`:
//! `[a, ab, ca]`, `[ab, b, bc]`, `[ca, bc, c]`, `[ab, bc, ca]`, all with the
//! parent's orientation. After `N` levels, final triangle `t` therefore lies in
//! control triangle `t >> (2 * N)` (see [`LoopSubdivision::control_triangle`]).
//!
//! # Rules
//!
//! Edges are undirected; each edge counts the (non-degenerate) triangles that
//! use it. An edge with exactly two triangles is *interior*; any other count
//! (one, or three and more for a non-manifold edge) makes it a *boundary*
//! (crease) edge.
//!
//! * Odd vertex of an interior edge `(a, b)` whose two triangles have the
//!   opposite vertices `c` and `d`: `3/8 (a + b) + 1/8 (c + d)`.
//! * Odd vertex of a boundary edge: `1/2 (a + b)`.
//! * Even vertex `v` without boundary edges, with `n` distinct neighbours:
//!   `(1 - n beta) v + beta * sum(neighbours)`, with Loop's original
//!   `beta = (5/8 - (3/8 + 1/4 cos(2 pi / n))^2) / n` (`1/16` for `n = 6`).
//! * Even vertex with exactly two boundary edges, whose other ends are `b0`
//!   and `b1`: `3/4 v + 1/8 (b0 + b1)`. The boundary is thus refined as a
//!   cubic B-spline curve of the boundary polygon alone; corners of the
//!   boundary polygon (say, of a square patch) are rounded like any other
//!   boundary vertex.
//! * Even vertex with one, or three and more, boundary edges (a dangling or
//!   non-manifold vertex): stays where it is.
//! * A vertex used by no triangle (or by degenerate ones only) stays where it
//!   is.
//!
//! # Degenerate triangles
//!
//! A triangle with a repeated index has no area and takes no part in the
//! rules: it counts for no edge, gives no opposite vertex and makes no
//! neighbours. It is still subdivided, so that the numbering of triangles
//! holds. Its edges between distinct vertices get odd vertices like any other
//! edge (if no proper triangle uses such an edge, the odd vertex is the
//! midpoint); a "self edge" `(a, a)` is no edge: it gets no odd vertex, and
//! its edge vertex in the four children is `a` itself. The children of a
//! degenerate triangle are thus degenerate too, and stay out of the rules at
//! every later level.
//!
//! Within a row, the columns come in a fixed order: for an even vertex, the
//! vertex itself then its stencil neighbours in ascending order; for an odd
//! vertex, the edge's ends in ascending order, then (interior edge) the two
//! opposite vertices in ascending order, a column appearing twice (the same
//! triangle listed twice) being merged into one entry. Weights are computed
//! in `f64` and stored as `f32`; each row sums to 1 within `f32` rounding.

/// The most levels [`LoopSubdivision::new`] accepts: each level multiplies
/// the triangle count by 4.
pub const MAX_LEVELS: u32 = 4;

/// Marks a triangle side whose two ends are the same vertex (no edge).
const NO_EDGE: u32 = u32::MAX;

/// One level's stencils, a sparse matrix in compressed rows: new vertex `i`
/// is `sum(weights[j] * old[columns[j]])` for `j` in
/// `row_offsets[i]..row_offsets[i + 1]`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Stencils {
    /// Start of each row in `columns` and `weights`, plus the total at the end
    /// (`rows() + 1` entries, the first 0).
    pub row_offsets: Vec<u32>,
    /// The old vertex of each entry.
    pub columns: Vec<u32>,
    /// The weight of each entry; the weights of a row sum to 1.
    pub weights: Vec<f32>,
}

impl Stencils {
    /// The number of new vertices (rows).
    pub fn rows(&self) -> usize {
        self.row_offsets.len().saturating_sub(1)
    }

    /// The columns and weights of row `i` (new vertex `i`).
    ///
    /// # Panics
    ///
    /// If `i >= self.rows()`.
    pub fn row(&self, i: usize) -> (&[u32], &[f32]) {
        let range = self.row_offsets[i] as usize..self.row_offsets[i + 1] as usize;
        (&self.columns[range.clone()], &self.weights[range])
    }

    /// The CPU reference of the GPU kernel: every new vertex is the weighted
    /// sum of its row, accumulated in `f32` in row order, starting from zero.
    ///
    /// # Panics
    ///
    /// If a column is out of range of `old` (`old` must hold the previous
    /// level's vertices).
    pub fn apply<const N: usize>(&self, old: &[[f32; N]]) -> Vec<[f32; N]> {
        (0..self.rows())
            .map(|i| {
                let (columns, weights) = self.row(i);
                let mut sum = [0.0f32; N];
                for (&column, &weight) in columns.iter().zip(weights) {
                    for (s, p) in sum.iter_mut().zip(old[column as usize]) {
                        *s += weight * p;
                    }
                }
                sum
            })
            .collect()
    }
}

/// Why a [`LoopSubdivision`] could not be built.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SubdivisionError {
    /// A triangle uses a vertex index `>= vertex_count`.
    IndexOutOfRange {
        /// The triangle's position in the input.
        triangle: usize,
        /// The offending index.
        index: u32,
        /// The number of control vertices.
        vertex_count: u32,
    },
    /// More than [`MAX_LEVELS`] levels were asked for.
    TooManyLevels {
        /// The levels asked for.
        levels: u32,
    },
    /// A count of the refined mesh does not fit in `u32`.
    TooLarge {
        /// The level (1-based) at which the count overflows.
        level: u32,
        /// What overflows (`"vertices"`, `"triangles"`, `"stencil entries"`).
        what: &'static str,
        /// The count that does not fit.
        count: u64,
    },
}

impl std::fmt::Display for SubdivisionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SubdivisionError::IndexOutOfRange {
                triangle,
                index,
                vertex_count,
            } => write!(
                f,
                "loop subdivision: triangle {triangle} uses vertex {index}, \
                 but the mesh has {vertex_count} vertices"
            ),
            SubdivisionError::TooManyLevels { levels } => write!(
                f,
                "loop subdivision: {levels} levels asked for, at most {MAX_LEVELS} supported"
            ),
            SubdivisionError::TooLarge { level, what, count } => write!(
                f,
                "loop subdivision: level {level} would have {count} {what}, over the u32 range"
            ),
        }
    }
}

impl std::error::Error for SubdivisionError {}

/// The stencils of every level of a Loop subdivision and the final triangles.
#[derive(Clone, Debug, PartialEq)]
pub struct LoopSubdivision {
    /// One matrix per level; level `k` maps `vertex_counts[k]` vertices to
    /// `vertex_counts[k + 1]`.
    pub levels: Vec<Stencils>,
    /// The triangles of the final level, numbered as in the module docs.
    pub triangles: Vec<[u32; 3]>,
    /// The control vertex count, then the count after each level.
    pub vertex_counts: Vec<u32>,
}

impl LoopSubdivision {
    /// Builds `levels` levels (0 to [`MAX_LEVELS`]) of Loop subdivision of a
    /// mesh of `vertex_count` vertices. With 0 levels there are no stencils
    /// and the triangles are the input's.
    ///
    /// # Errors
    ///
    /// A triangle with an index `>= vertex_count`, more than [`MAX_LEVELS`]
    /// levels, or a vertex, triangle or stencil entry count over the `u32`
    /// range.
    pub fn new(
        triangles: &[[u32; 3]],
        vertex_count: u32,
        levels: u32,
    ) -> Result<Self, SubdivisionError> {
        if levels > MAX_LEVELS {
            return Err(SubdivisionError::TooManyLevels { levels });
        }
        if let Some((triangle, &index)) = triangles
            .iter()
            .enumerate()
            .find_map(|(t, tri)| tri.iter().find(|&&i| i >= vertex_count).map(|i| (t, i)))
        {
            return Err(SubdivisionError::IndexOutOfRange {
                triangle,
                index,
                vertex_count,
            });
        }
        for level in 1..=levels {
            let count = triangles.len() as u64 * 4u64.pow(level);
            if count > u64::from(u32::MAX) {
                return Err(SubdivisionError::TooLarge {
                    level,
                    what: "triangles",
                    count,
                });
            }
        }

        let mut result = LoopSubdivision {
            levels: Vec::with_capacity(levels as usize),
            triangles: triangles.to_vec(),
            vertex_counts: vec![vertex_count],
        };
        for level in 1..=levels {
            let old_count = *result.vertex_counts.last().unwrap_or(&vertex_count);
            let (stencils, refined, new_count) =
                subdivide_level(&result.triangles, old_count, level)?;
            result.levels.push(stencils);
            result.triangles = refined;
            result.vertex_counts.push(new_count);
        }
        Ok(result)
    }

    /// Evaluates all levels on the CPU, from the control positions (or any other values
    /// per control vertex, such as texture coordinates) to the final ones.
    ///
    /// # Panics
    ///
    /// If `control.len()` is not the control vertex count.
    pub fn apply<const N: usize>(&self, control: &[[f32; N]]) -> Vec<[f32; N]> {
        assert_eq!(
            control.len(),
            self.vertex_counts[0] as usize,
            "loop subdivision: control positions do not match the control vertex count"
        );
        let mut positions = control.to_vec();
        for stencils in &self.levels {
            positions = stencils.apply(&positions);
        }
        positions
    }

    /// The vertex count after the last level (the control count with 0
    /// levels).
    pub fn final_vertex_count(&self) -> u32 {
        self.vertex_counts.last().copied().unwrap_or(0)
    }

    /// The control triangle that final triangle `triangle` descends from
    /// (`triangle / 4^levels`).
    pub fn control_triangle(&self, triangle: usize) -> usize {
        triangle >> (2 * self.levels.len())
    }
}

/// One undirected edge `lo < hi` and the proper triangles on it.
#[derive(Clone, Copy)]
struct Edge {
    lo: u32,
    hi: u32,
    /// Non-degenerate triangles using the edge.
    triangles: u32,
    /// The opposite vertices of the first two of those triangles.
    opposite: [u32; 2],
}

/// The number of distinct undirected edges (sides between two distinct
/// vertices) of `triangles`.
fn distinct_edge_count(triangles: &[[u32; 3]]) -> usize {
    let mut keys: Vec<u64> = triangles
        .iter()
        .flat_map(|t| [(t[0], t[1]), (t[1], t[2]), (t[2], t[0])])
        .filter(|(a, b)| a != b)
        .map(|(a, b)| (u64::from(a.min(b)) << 32) | u64::from(a.max(b)))
        .collect();
    keys.sort_unstable();
    keys.dedup();
    keys.len()
}

fn is_degenerate(t: &[u32; 3]) -> bool {
    t[0] == t[1] || t[1] == t[2] || t[2] == t[0]
}

/// Loop's weight of each neighbour of an interior vertex of valence `n`.
fn loop_beta(n: usize) -> f64 {
    let n = n as f64;
    let c = 0.375 + 0.25 * (2.0 * std::f64::consts::PI / n).cos();
    (0.625 - c * c) / n
}

/// Appends `(column, weight)` to the current row.
fn push_entry(stencils: &mut Stencils, column: u32, weight: f64) {
    stencils.columns.push(column);
    stencils.weights.push(weight as f32);
}

/// One level: the stencils, the refined triangles and the new vertex count.
fn subdivide_level(
    triangles: &[[u32; 3]],
    vertex_count: u32,
    level: u32,
) -> Result<(Stencils, Vec<[u32; 3]>, u32), SubdivisionError> {
    let v_count = vertex_count as usize;
    let overflow = |count: u64| SubdivisionError::TooLarge {
        level,
        what: "vertices",
        count,
    };
    // The edge search below takes memory in proportion to the vertex count:
    // rule out a doomed level first when the edges could overflow it.
    if u64::from(vertex_count) + 3 * triangles.len() as u64 > u64::from(u32::MAX) {
        let count = u64::from(vertex_count) + distinct_edge_count(triangles) as u64;
        if count > u64::from(u32::MAX) {
            return Err(overflow(count));
        }
    }

    // Edges in order of first appearance, and each triangle's three edges.
    // An edge is searched among the edges found so far at its "home" end,
    // the end with fewer triangle sides (the lower index on a tie):
    // `slots[starts[v]..filled[v]]` holds the other ends and the edges of
    // home vertex `v`. Homing edges at the lighter end keeps the searches
    // short around vertices of high valence (the centre of a fan).
    let mut sides = vec![0u32; v_count];
    for t in triangles {
        for k in 0..3 {
            let (a, b) = (t[k], t[(k + 1) % 3]);
            if a != b {
                sides[a as usize] += 1;
                sides[b as usize] += 1;
            }
        }
    }
    let home = |a: u32, b: u32| {
        if (sides[a as usize], a) < (sides[b as usize], b) {
            a
        } else {
            b
        }
    };
    let mut starts = vec![0u32; v_count + 1];
    for t in triangles {
        for k in 0..3 {
            let (a, b) = (t[k], t[(k + 1) % 3]);
            if a != b {
                starts[home(a, b) as usize + 1] += 1;
            }
        }
    }
    for v in 0..v_count {
        starts[v + 1] += starts[v];
    }
    let mut filled: Vec<u32> = starts[..v_count].to_vec();
    let mut slots = vec![(0u32, 0u32); starts[v_count] as usize];
    let mut edges: Vec<Edge> = Vec::with_capacity(triangles.len() * 3 / 2 + 16);
    let mut triangle_edges: Vec<[u32; 3]> = Vec::with_capacity(triangles.len());
    for tri in triangles {
        let proper = !is_degenerate(tri);
        let mut ids = [NO_EDGE; 3];
        for (k, id) in ids.iter_mut().enumerate() {
            let (a, b, opposite) = (tri[k], tri[(k + 1) % 3], tri[(k + 2) % 3]);
            if a == b {
                continue;
            }
            let at = home(a, b);
            let other = a ^ b ^ at;
            let bucket = starts[at as usize] as usize..filled[at as usize] as usize;
            let e = match slots[bucket].iter().find(|&&(v, _)| v == other) {
                Some(&(_, e)) => e,
                None => {
                    let e = edges.len() as u32;
                    slots[filled[at as usize] as usize] = (other, e);
                    filled[at as usize] += 1;
                    edges.push(Edge {
                        lo: a.min(b),
                        hi: a.max(b),
                        triangles: 0,
                        opposite: [NO_EDGE; 2],
                    });
                    e
                }
            };
            if proper {
                let edge = &mut edges[e as usize];
                if edge.triangles < 2 {
                    edge.opposite[edge.triangles as usize] = opposite;
                }
                edge.triangles = edge.triangles.saturating_add(1);
            }
            *id = e;
        }
        triangle_edges.push(ids);
    }
    drop((sides, starts, filled, slots));

    let new_count = u64::from(vertex_count) + edges.len() as u64;
    if new_count > u64::from(u32::MAX) {
        return Err(overflow(new_count));
    }

    // Per-vertex neighbours over the edges of proper triangles, as
    // (neighbour, edge) sorted by neighbour, in compressed rows.
    let mut offsets = vec![0u32; v_count + 1];
    for edge in edges.iter().filter(|e| e.triangles > 0) {
        offsets[edge.lo as usize + 1] += 1;
        offsets[edge.hi as usize + 1] += 1;
    }
    for v in 0..v_count {
        offsets[v + 1] += offsets[v];
    }
    let mut fill: Vec<u32> = offsets[..v_count].to_vec();
    let mut neighbours = vec![(0u32, 0u32); offsets[v_count] as usize];
    for (e, edge) in edges.iter().enumerate().filter(|(_, e)| e.triangles > 0) {
        for (v, other) in [(edge.lo, edge.hi), (edge.hi, edge.lo)] {
            let slot = &mut fill[v as usize];
            neighbours[*slot as usize] = (other, e as u32);
            *slot += 1;
        }
    }
    drop(fill);

    let mut stencils = Stencils {
        row_offsets: Vec::with_capacity(new_count as usize + 1),
        columns: Vec::with_capacity(v_count * 7 + edges.len() * 4),
        weights: Vec::with_capacity(v_count * 7 + edges.len() * 4),
    };
    stencils.row_offsets.push(0);
    let close_row = |stencils: &mut Stencils| -> Result<(), SubdivisionError> {
        let count = stencils.columns.len() as u64;
        if count > u64::from(u32::MAX) {
            return Err(SubdivisionError::TooLarge {
                level,
                what: "stencil entries",
                count,
            });
        }
        stencils.row_offsets.push(count as u32);
        Ok(())
    };

    // Even vertices.
    for v in 0..v_count {
        let ring = &mut neighbours[offsets[v] as usize..offsets[v + 1] as usize];
        ring.sort_unstable_by_key(|&(other, _)| other);
        let boundary = ring
            .iter()
            .filter(|&&(_, e)| edges[e as usize].triangles != 2)
            .count();
        if ring.is_empty() {
            push_entry(&mut stencils, v as u32, 1.0);
        } else if boundary == 0 {
            let beta = loop_beta(ring.len());
            push_entry(&mut stencils, v as u32, 1.0 - ring.len() as f64 * beta);
            for &(other, _) in ring.iter() {
                push_entry(&mut stencils, other, beta);
            }
        } else if boundary == 2 {
            push_entry(&mut stencils, v as u32, 0.75);
            for &(other, e) in ring.iter() {
                if edges[e as usize].triangles != 2 {
                    push_entry(&mut stencils, other, 0.125);
                }
            }
        } else {
            push_entry(&mut stencils, v as u32, 1.0);
        }
        close_row(&mut stencils)?;
    }

    // Odd vertices. Even rows have distinct columns: the ring holds each neighbour once
    // and never the vertex itself (a self edge is no edge). In odd rows, the
    // opposite vertices of proper triangles differ from the edge's ends, but
    // are the same vertex when a triangle is listed twice.
    for edge in &edges {
        if edge.triangles == 2 {
            let [c, d] = edge.opposite;
            push_entry(&mut stencils, edge.lo, 0.375);
            push_entry(&mut stencils, edge.hi, 0.375);
            if c == d {
                push_entry(&mut stencils, c, 0.25);
            } else {
                push_entry(&mut stencils, c.min(d), 0.125);
                push_entry(&mut stencils, c.max(d), 0.125);
            }
        } else {
            push_entry(&mut stencils, edge.lo, 0.5);
            push_entry(&mut stencils, edge.hi, 0.5);
        }
        close_row(&mut stencils)?;
    }

    // Four children per triangle.
    let mut refined = Vec::with_capacity(triangles.len() * 4);
    for (tri, ids) in triangles.iter().zip(&triangle_edges) {
        let [a, b, c] = *tri;
        let edge_vertex = |k: usize| match ids[k] {
            NO_EDGE => tri[k],
            e => vertex_count + e,
        };
        let (ab, bc, ca) = (edge_vertex(0), edge_vertex(1), edge_vertex(2));
        refined.push([a, ab, ca]);
        refined.push([ab, b, bc]);
        refined.push([ca, bc, c]);
        refined.push([ab, bc, ca]);
    }

    Ok((stencils, refined, new_count as u32))
}

/// The largest magnitude [`noise_height`] returns.
pub const MAX_NOISE_HEIGHT: f32 = 1.5;

/// A smooth procedural height in about `[-1, 1]` at `p`: four octaves of 3D
/// gradient noise (lacunarity 2, gain 1/2). `frequency` is the number of
/// features per unit length of the first octave. Deterministic and
/// C2-continuous in `p`; used to displace refined vertices along their
/// normals.
///
/// The octave sum, normalised by the sum of the amplitudes, stays within
/// about `±0.72` and is scaled by 1.35 to span about `[-1, 1]` (standard
/// deviation about 0.22). A single octave never exceeds about 1 in
/// magnitude, so the result always lies within `[-1.5, 1.5]`.
///
/// Non-finite inputs give an unspecified value (no panic).
pub fn noise_height(p: [f32; 3], frequency: f32) -> f32 {
    const OCTAVES: u32 = 4;
    // Brings the normalised octave sum (within about ±0.72) to about ±1.
    const SCALE: f32 = 1.35;
    // Offsets keep the lattices of the octaves from lining up (gradient noise
    // is 0 on its lattice points, the origin among them).
    const OFFSETS: [[f32; 3]; OCTAVES as usize] = [
        [0.137, 0.721, 0.419],
        [0.583, 0.262, 0.947],
        [0.311, 0.876, 0.054],
        [0.692, 0.448, 0.773],
    ];
    let mut sum = 0.0f32;
    let mut amplitude = 1.0f32;
    let mut total = 0.0f32;
    let mut scale = frequency;
    for (octave, offset) in OFFSETS.iter().enumerate() {
        let q = [
            p[0] * scale + offset[0],
            p[1] * scale + offset[1],
            p[2] * scale + offset[2],
        ];
        sum += amplitude * gradient_noise(q, octave as u32);
        total += amplitude;
        amplitude *= 0.5;
        scale *= 2.0;
    }
    SCALE * sum / total
}

/// Gradient noise on the unit lattice (Perlin's improved noise, hashed
/// gradients), in about `[-1, 1]`.
fn gradient_noise(q: [f32; 3], seed: u32) -> f32 {
    // The 12 cube-edge directions, 4 of them twice so that a 4-bit hash picks
    // one.
    const GRADIENTS: [[f32; 3]; 16] = [
        [1.0, 1.0, 0.0],
        [-1.0, 1.0, 0.0],
        [1.0, -1.0, 0.0],
        [-1.0, -1.0, 0.0],
        [1.0, 0.0, 1.0],
        [-1.0, 0.0, 1.0],
        [1.0, 0.0, -1.0],
        [-1.0, 0.0, -1.0],
        [0.0, 1.0, 1.0],
        [0.0, -1.0, 1.0],
        [0.0, 1.0, -1.0],
        [0.0, -1.0, -1.0],
        [1.0, 1.0, 0.0],
        [-1.0, 1.0, 0.0],
        [0.0, -1.0, 1.0],
        [0.0, -1.0, -1.0],
    ];
    let floor = [q[0].floor(), q[1].floor(), q[2].floor()];
    let cell = [floor[0] as i32, floor[1] as i32, floor[2] as i32];
    let f = [q[0] - floor[0], q[1] - floor[1], q[2] - floor[2]];
    let fade = |t: f32| t * t * t * (t * (t * 6.0 - 15.0) + 10.0);
    let u = [fade(f[0]), fade(f[1]), fade(f[2])];

    let corner = |dx: i32, dy: i32, dz: i32| {
        let h = lattice_hash(
            cell[0].wrapping_add(dx),
            cell[1].wrapping_add(dy),
            cell[2].wrapping_add(dz),
            seed,
        );
        let g = GRADIENTS[(h >> 28) as usize];
        g[0] * (f[0] - dx as f32) + g[1] * (f[1] - dy as f32) + g[2] * (f[2] - dz as f32)
    };
    let lerp = |a: f32, b: f32, t: f32| a + t * (b - a);
    let x00 = lerp(corner(0, 0, 0), corner(1, 0, 0), u[0]);
    let x10 = lerp(corner(0, 1, 0), corner(1, 1, 0), u[0]);
    let x01 = lerp(corner(0, 0, 1), corner(1, 0, 1), u[0]);
    let x11 = lerp(corner(0, 1, 1), corner(1, 1, 1), u[0]);
    lerp(lerp(x00, x10, u[1]), lerp(x01, x11, u[1]), u[2])
}

/// A well-mixed 32-bit hash of a lattice point and a seed.
fn lattice_hash(x: i32, y: i32, z: i32, seed: u32) -> u32 {
    let mut h = (x as u32).wrapping_mul(0x8da6_b343)
        ^ (y as u32).wrapping_mul(0xd816_3841)
        ^ (z as u32).wrapping_mul(0xcb1a_b31f)
        ^ seed.wrapping_mul(0x1656_67b1);
    h ^= h >> 16;
    h = h.wrapping_mul(0x7feb_352d);
    h ^= h >> 15;
    h = h.wrapping_mul(0x846c_a68b);
    h ^ (h >> 16)
}
