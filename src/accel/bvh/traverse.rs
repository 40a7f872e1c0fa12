//! The CPU reference of BVH traversal: [`trace_bvh`] walks a BVH as
//! `glsl/bvh/trace.comp` does and counts its work the same way; closest-hit queries
//! return exactly the brute-force hit of [`crate::geom::ray`].

use super::cpu::Lbvh;
use super::{INVALID_CHILD, LEAF_BIT};
use crate::geom::ray::{Hit, Query, Ray, RayWork, Shear, hit_triangle, slab};

/// The hit of `query` for `ray` by traversing `bvh` (built over `triangles`), and the
/// traversal's work counted as `glsl/bvh/trace.comp` counts it (see [`RayWork`]).
///
/// The walk is the kernel's: at each node both children's boxes are tested against the
/// closest hit so far, the leaves among the children entered are intersected at once (left,
/// then right), and of two inner children entered the nearer is visited next (by entry
/// distance clipped to `tmin`, the left one on ties) while the other is pushed with its entry
/// distance, to be popped only if that is no farther than the closest hit then. Closest-hit queries return exactly
/// [`closest_hit_brute_force`](crate::geom::ray::closest_hit_brute_force); any-hit queries return the first hit found.
///
/// The counts equal the kernel's unless a decision falls within rounding: boxes here are
/// widened by [`BOX_T_SLACK`](crate::geom::ray::BOX_T_SLACK) and nodes at the closest hit's distance are kept (for ties of
/// smaller index), where the kernel widens a box's exit by 2 ulp and drops them, so a ray
/// that grazes a box may visit more here.
pub fn trace_bvh(
    positions: &[[f32; 3]],
    triangles: &[[u32; 3]],
    bvh: &Lbvh,
    ray: &Ray,
    query: Query,
) -> (Hit, RayWork) {
    trace_bvh_solid(positions, triangles, bvh, ray, query, &|_| true)
}

/// [`trace_bvh`] where a candidate hit counts only when `solid` says so (else the walk goes
/// on past it): the reference of the kernels' cut-outs (`glsl/common/cutout.glsl`).
pub fn trace_bvh_solid(
    positions: &[[f32; 3]],
    triangles: &[[u32; 3]],
    bvh: &Lbvh,
    ray: &Ray,
    query: Query,
    solid: &dyn Fn(&Hit) -> bool,
) -> (Hit, RayWork) {
    let mut best = Hit::miss(ray);
    let mut work = RayWork::default();
    if bvh.nodes.is_empty() {
        return (best, work);
    }
    let shear = Shear::new(ray);
    let inv_dir = ray.direction.map(|d| 1.0 / d);
    let mut stack: Vec<(u32, f32)> = Vec::new();
    let mut next = Some(0u32);
    while let Some(index) = next {
        work.nodes_visited += 1;
        let node = &bvh.nodes[index as usize];
        let entered = [
            (node.left, (node.left_min, node.left_max)),
            (node.right, (node.right_min, node.right_max)),
        ]
        .map(|(c, b)| {
            // The box's interval clipped to [tmin, the closest hit so far].
            let (near, far) = slab(ray.origin, inv_dir, &b);
            let near = near.max(ray.tmin);
            (c != INVALID_CHILD && near <= far.min(best.t)).then_some((c, near))
        });
        let leaf = |&(child, _): &(u32, f32)| child & LEAF_BIT != 0;
        for (child, _) in entered.iter().flatten().filter(|e| leaf(e)) {
            work.primitives_tested += 1;
            let index = bvh.leaf_primitives[(child & !LEAF_BIT) as usize];
            if let Some(hit) =
                hit_triangle(&shear, ray, positions, triangles[index as usize], index)
                    .filter(|hit| solid(hit))
            {
                if query == Query::Any {
                    return (hit, work);
                }
                if hit.precedes(&best) {
                    best = hit;
                }
            }
        }
        next = match entered.map(|e| e.filter(|e| !leaf(e))) {
            [Some(l), Some(r)] => {
                let (first, second) = if l.1 <= r.1 { (l, r) } else { (r, l) };
                stack.push(second);
                Some(first.0)
            }
            [Some((child, _)), None] | [None, Some((child, _))] => Some(child),
            [None, None] => std::iter::from_fn(|| stack.pop())
                .find(|&(_, near)| near <= best.t)
                .map(|(child, _)| child),
        };
    }
    (best, work)
}

/// The closest hit of `ray` by traversing `bvh` (built over `triangles`): exactly
/// [`closest_hit_brute_force`](crate::geom::ray::closest_hit_brute_force).
pub fn closest_hit_bvh(
    positions: &[[f32; 3]],
    triangles: &[[u32; 3]],
    bvh: &Lbvh,
    ray: &Ray,
) -> Hit {
    trace_bvh(positions, triangles, bvh, ray, Query::Closest).0
}

/// Whether `ray` hits any triangle, by traversing `bvh`: exactly [`any_hit_brute_force`](crate::geom::ray::any_hit_brute_force).
pub fn any_hit_bvh(positions: &[[f32; 3]], triangles: &[[u32; 3]], bvh: &Lbvh, ray: &Ray) -> bool {
    trace_bvh(positions, triangles, bvh, ray, Query::Any)
        .0
        .is_hit()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::accel::bvh::cpu::build_lbvh;
    use crate::accel::bvh::cpu::tests::Soup;
    use crate::accel::bvh::sah::build_sah_bvh;
    use crate::geom::aabb::Bounds;
    use crate::geom::morton::MortonBits;
    use crate::geom::ray::{
        MISS, any_hit_brute_force, closest_hit_brute_force, intersect_triangle, slab,
    };
    use crate::rng::Rng;

    fn ray(origin: [f32; 3], direction: [f32; 3]) -> Ray {
        Ray {
            origin,
            tmin: 0.0,
            direction,
            tmax: f32::INFINITY,
        }
    }

    fn sub(a: [f32; 3], b: [f32; 3]) -> [f32; 3] {
        std::array::from_fn(|k| a[k] - b[k])
    }

    fn lerp(a: [f32; 3], b: [f32; 3], s: f32) -> [f32; 3] {
        std::array::from_fn(|k| a[k] + (b[k] - a[k]) * s)
    }

    fn random_point(rng: &mut Rng, lo: f32, hi: f32) -> [f32; 3] {
        std::array::from_fn(|_| rng.f32_in(lo, hi))
    }

    /// The brute-force answer, checked against both BVHs, with its hit point checked.
    fn cast(positions: &[[f32; 3]], triangles: &[[u32; 3]], bvhs: &[Lbvh], ray: &Ray) -> Hit {
        let hit = closest_hit_brute_force(positions, triangles, ray);
        let any = any_hit_brute_force(positions, triangles, ray);
        assert_eq!(any, hit.is_hit());
        for bvh in bvhs {
            assert_eq!(
                closest_hit_bvh(positions, triangles, bvh, ray),
                hit,
                "{ray:?}"
            );
            assert_eq!(any_hit_bvh(positions, triangles, bvh, ray), any, "{ray:?}");
        }
        if hit.is_hit() {
            let [a, b, c] = triangles[hit.triangle as usize].map(|v| positions[v as usize]);
            let w = [1.0 - hit.u - hit.v, hit.u, hit.v];
            assert!(
                w.iter().all(|&x| (-1e-4..=1.0 + 1e-4).contains(&x)),
                "{hit:?}"
            );
            for k in 0..3 {
                let on_triangle = w[0] * a[k] + w[1] * b[k] + w[2] * c[k];
                let on_ray = ray.origin[k] + hit.t * ray.direction[k];
                assert!((on_triangle - on_ray).abs() < 1e-3, "{hit:?} {ray:?}");
            }
        }
        hit
    }

    fn bvhs(positions: &[[f32; 3]], triangles: &[[u32; 3]]) -> Vec<Lbvh> {
        vec![
            build_lbvh(positions, triangles, MortonBits::Bits30),
            build_lbvh(positions, triangles, MortonBits::Bits63),
            build_sah_bvh(positions, triangles),
        ]
    }

    #[test]
    fn single_triangle_conventions() {
        let (a, b, c) = ([0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]);
        let mut r = ray([0.25, 0.5, 2.0], [0.0, 0.0, -1.0]);
        assert_eq!(intersect_triangle(&r, a, b, c), Some((2.0, 0.25, 0.5)));
        // Both windings, from both sides.
        assert_eq!(intersect_triangle(&r, a, c, b), Some((2.0, 0.5, 0.25)));
        r.origin[2] = -2.0;
        r.direction[2] = 1.0;
        assert_eq!(intersect_triangle(&r, a, b, c), Some((2.0, 0.25, 0.5)));
        // tmin < t < tmax, exclusive.
        r.tmax = 2.0;
        assert_eq!(intersect_triangle(&r, a, b, c), None);
        r.tmax = 3.0;
        r.tmin = 2.0;
        assert_eq!(intersect_triangle(&r, a, b, c), None);
        // Vertices and edges are hit; degenerate triangles and parallel rays are not.
        let down = |x: f32, y: f32| ray([x, y, 1.0], [0.0, 0.0, -1.0]);
        assert_eq!(
            intersect_triangle(&down(0.0, 0.0), a, b, c),
            Some((1.0, 0.0, 0.0))
        );
        assert_eq!(
            intersect_triangle(&down(0.5, 0.5), a, b, c),
            Some((1.0, 0.5, 0.5))
        );
        assert_eq!(
            intersect_triangle(&down(0.5, 0.0), a, b, [2.0, 0.0, 0.0]),
            None
        );
        assert_eq!(
            intersect_triangle(&ray([-1.0, 0.1, 0.0], [1.0, 0.0, 0.0]), a, b, c),
            None
        );
        let miss = Hit::miss(&down(5.0, 5.0));
        assert_eq!((miss.t, miss.triangle), (f32::INFINITY, MISS));
        assert_eq!(
            closest_hit_brute_force(&[a, b, c], &[[0, 1, 2]], &down(5.0, 5.0)),
            miss
        );
    }

    #[test]
    fn bvh_traversal_equals_brute_force() {
        let mut soup = Soup::random(1500, 21);
        // Duplicates of earlier triangles: ties in t go to the smaller index.
        for i in 0..100 {
            let tri = soup.triangles[i * 7];
            soup.triangles.push(tri);
        }
        let (p, t) = (&soup.positions, &soup.triangles);
        let bvhs = bvhs(p, t);
        let mut rng = Rng::new(22);
        let mut hits = 0;
        for i in 0..3000 {
            let origin = random_point(&mut rng, -0.5, 1.5);
            let mut direction = sub(random_point(&mut rng, 0.0, 1.0), origin);
            // Some rays run along axes or planes, with zero (and negative zero) components.
            match i % 5 {
                0 => direction[rng.below(3) as usize] = 0.0,
                1 => {
                    let keep = rng.below(3) as usize;
                    for k in (0..3).filter(|&k| k != keep) {
                        direction[k] = if rng.below(2) == 0 { 0.0 } else { -0.0 };
                    }
                }
                _ => {}
            }
            let mut r = ray(origin, direction);
            if i % 3 == 0 {
                r.tmin = rng.f32_in(0.0, 0.5);
                r.tmax = r.tmin + rng.f32_in(0.0, 1.0);
            }
            hits += cast(p, t, &bvhs, &r).is_hit() as u32;
        }
        assert!(hits > 1000, "{hits} hits");
        // Duplicates are hit by their first copy.
        let r = ray(
            [0.0; 3],
            sub(lerp(p[0], lerp(p[1], p[2], 0.5), 0.5), [0.0; 3]),
        );
        let hit = closest_hit_brute_force(p, t, &r);
        assert!(hit.is_hit() && hit.triangle < 1500);
    }

    #[test]
    fn rays_through_shared_edges_and_vertices_of_a_fan_hit() {
        let mut rng = Rng::new(23);
        for _ in 0..20 {
            // A gently sloped height field around the center (angular gaps below 180°), so that
            // from every origin above or below, rays cross it rather than graze a fold.
            let m = 4 + rng.below(9);
            let center = [
                rng.f32_in(-1.0, 1.0),
                rng.f32_in(-1.0, 1.0),
                rng.f32_in(-0.1, 0.1),
            ];
            let mut positions = vec![center];
            for j in 0..m {
                let angle = (j as f32 + rng.f32_in(0.0, 0.5)) * std::f32::consts::TAU / m as f32;
                let radius = rng.f32_in(0.5, 2.0);
                positions.push([
                    center[0] + radius * angle.cos(),
                    center[1] + radius * angle.sin(),
                    center[2] + rng.f32_in(-0.1, 0.1),
                ]);
            }
            let triangles: Vec<[u32; 3]> = (0..m).map(|j| [0, 1 + j, 1 + (j + 1) % m]).collect();
            let bvhs = bvhs(&positions, &triangles);
            for _ in 0..200 {
                let mut origin = random_point(&mut rng, -3.0, 3.0);
                origin[2] = if rng.below(2) == 0 { 4.0 } else { -4.0 };
                let spoke = 1 + rng.below(m) as usize;
                let target = match rng.below(3) {
                    0 => center,
                    1 => lerp(center, positions[spoke], rng.f32_in(0.0, 0.9)),
                    _ => lerp(center, positions[spoke], 0.5),
                };
                let hit = cast(
                    &positions,
                    &triangles,
                    &bvhs,
                    &ray(origin, sub(target, origin)),
                );
                assert!(
                    hit.is_hit(),
                    "a ray at {target:?} from {origin:?} passed through the fan"
                );
            }
        }
    }

    /// The surface of the cube [-1, 1]^3, each face an n × n grid of quads split in two,
    /// vertices shared between faces, interior grid vertices jittered.
    fn subdivided_cube(n: u32, rng: &mut Rng) -> (Vec<[f32; 3]>, Vec<[u32; 3]>) {
        let mut index = std::collections::HashMap::new();
        let mut positions = Vec::new();
        let mut triangles = Vec::new();
        let mut vertex = |g: [u32; 3], rng: &mut Rng| {
            *index.entry(g).or_insert_with(|| {
                let boundary = g.iter().filter(|&&c| c == 0 || c == n).count();
                let jitter = if boundary == 1 { 0.3 / n as f32 } else { 0.0 };
                let mut p = g.map(|c| 2.0 * c as f32 / n as f32 - 1.0);
                for (k, x) in p.iter_mut().enumerate() {
                    if g[k] != 0 && g[k] != n {
                        *x += rng.f32_in(-jitter, jitter);
                    }
                }
                positions.push(p);
                positions.len() as u32 - 1
            })
        };
        for axis in 0..3 {
            for side in [0, n] {
                for i in 0..n {
                    for j in 0..n {
                        let corner = |di: u32, dj: u32| {
                            let mut g = [0; 3];
                            g[axis] = side;
                            g[(axis + 1) % 3] = i + di;
                            g[(axis + 2) % 3] = j + dj;
                            g
                        };
                        let q = [corner(0, 0), corner(1, 0), corner(1, 1), corner(0, 1)]
                            .map(|g| vertex(g, rng));
                        triangles.push([q[0], q[1], q[2]]);
                        triangles.push([q[0], q[2], q[3]]);
                    }
                }
            }
        }
        (positions, triangles)
    }

    #[test]
    fn closed_mesh_lets_no_ray_out() {
        let mut rng = Rng::new(24);
        let (positions, triangles) = subdivided_cube(8, &mut rng);
        assert_eq!(triangles.len(), 6 * 8 * 8 * 2);
        let bvhs = bvhs(&positions, &triangles);
        for i in 0..3000 {
            let origin = random_point(&mut rng, -0.9, 0.9);
            let direction = match i % 3 {
                0 => sub(
                    positions[rng.below(positions.len() as u32) as usize],
                    origin,
                ),
                1 => {
                    let [a, b, _] = triangles[rng.below(triangles.len() as u32) as usize];
                    sub(
                        lerp(
                            positions[a as usize],
                            positions[b as usize],
                            rng.f32_in(0.0, 1.0),
                        ),
                        origin,
                    )
                }
                _ => random_point(&mut rng, -1.0, 1.0),
            };
            let hit = cast(&positions, &triangles, &bvhs, &ray(origin, direction));
            assert!(
                hit.is_hit(),
                "ray {i} from {origin:?} along {direction:?} left the cube"
            );
        }
    }

    #[test]
    fn slab_handles_zero_directions_and_empty_boxes() {
        let b: Bounds = ([0.0; 3], [1.0; 3]);
        let inv = |d: [f32; 3]| d.map(|x| 1.0 / x);
        // Along +x from the plane y = 0 of the box: the y and z slabs do not bound t.
        let (near, far) = slab([-1.0, 0.0, 0.5], inv([1.0, 0.0, -0.0]), &b);
        assert!((0.99..=1.0).contains(&near) && (2.0..2.01).contains(&far));
        // Parallel to a slab but outside it.
        let (near, far) = slab([-1.0, 1.5, 0.5], inv([1.0, 0.0, 0.0]), &b);
        assert!(near > far);
        let (near, far) = slab(
            [0.5; 3],
            inv([1.0, -2.0, 0.5]),
            &crate::geom::aabb::EMPTY_BOUNDS,
        );
        assert_eq!((near, far), (f32::INFINITY, f32::NEG_INFINITY));
    }
}
