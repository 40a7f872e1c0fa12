//! The front door (`canopy::quick`): its blocking calls answer as the recorded path and brute
//! force do, through every structure they accept, and refuse what they cannot build.

use crate::common::{self, assert_hits_match_brute_force, random_mesh, random_rays};
use canopy::accel::pointkd::cpu::knn_brute_force;
use canopy::rng::Rng;
use canopy::{Accel, MISS, Mesh, PointCloud, Ray, StructureKind};

/// The structures `Accel` builds: every one arbitrary rays are traced through.
fn accepted() -> Vec<StructureKind> {
    (StructureKind::ALL.into_iter())
        .filter(|k| k.traceable() && !k.needs_view())
        .collect()
}

#[test]
fn accel_hits_match_brute_force_through_every_structure() {
    let ctx = common::context();
    let mut rng = Rng::new(7);
    let mesh = random_mesh(&mut rng, 600, 1.0, 0.15);
    let rays = random_rays(&mut rng, &mesh, 2000);
    let kinds = accepted();
    assert!(kinds.len() >= 3, "{kinds:?}");
    for kind in kinds {
        let accel = Accel::build(&ctx, kind, &mesh).unwrap();
        let closest = accel.intersect(&rays).unwrap();
        let occluded = accel.occluded(&rays).unwrap();
        // Occlusion as any-hit answers for the brute-force check, named by the closest hit's
        // triangle where there is one.
        let any: Vec<_> = (occluded.iter().zip(&closest))
            .map(|(&blocked, hit)| canopy::Hit {
                triangle: match (blocked, hit.triangle) {
                    (false, _) => MISS,
                    (true, MISS) => 0,
                    (true, triangle) => triangle,
                },
                ..*hit
            })
            .collect();
        assert_hits_match_brute_force(&mesh, &rays, &closest, &any, &format!("{kind}"));
        assert!(accel.intersect(&[]).unwrap().is_empty());
    }
}

#[test]
fn accel_over_no_triangles_is_missed_by_every_ray() {
    let ctx = common::context();
    let empty = Mesh {
        positions: Vec::new(),
        triangles: Vec::new(),
        normals: Vec::new(),
    };
    let ray = Ray {
        origin: [0.0; 3],
        tmin: 0.0,
        direction: [1.0, 0.0, 0.0],
        tmax: f32::INFINITY,
    };
    for kind in accepted() {
        let accel = Accel::build(&ctx, kind, &empty).unwrap();
        assert_eq!(accel.intersect(&[ray]).unwrap()[0].triangle, MISS, "{kind}");
        assert_eq!(accel.occluded(&[ray]).unwrap(), vec![false], "{kind}");
    }
}

#[test]
fn accel_refuses_what_it_cannot_build() {
    let ctx = common::context();
    let mut rng = Rng::new(3);
    let mesh = random_mesh(&mut rng, 10, 1.0, 0.2);
    for kind in [
        StructureKind::Grid,
        StructureKind::PointKd,
        StructureKind::Octree,
    ] {
        let error = Accel::build(&ctx, kind, &mesh).err().unwrap().to_string();
        assert!(
            error.contains(kind.name()) && error.contains("lbvh"),
            "{error}"
        );
    }
    let mut past_the_end = mesh.clone();
    past_the_end.triangles[4] = [0, 1, 30];
    let error = Accel::build(&ctx, StructureKind::Lbvh, &past_the_end)
        .err()
        .unwrap();
    assert!(error.to_string().contains("triangle 4"), "{error}");
    let mut not_finite = mesh.clone();
    not_finite.positions[5][1] = f32::NAN;
    let error = Accel::build(&ctx, StructureKind::Bih, &not_finite)
        .err()
        .unwrap();
    assert!(error.to_string().contains("vertex 5"), "{error}");
}

#[test]
fn point_cloud_neighbours_match_brute_force() {
    let ctx = common::context();
    let mut rng = Rng::new(11);
    // Clustered, with duplicates: ties are ordered by index, as brute force orders them.
    let mut points: Vec<[f32; 3]> = (0..3000)
        .map(|i| {
            let centre = [(i % 5) as f32, 0.0, 0.0];
            std::array::from_fn(|a| centre[a] + rng.f32_in(-0.05, 0.05))
        })
        .collect();
    points.extend_from_within(0..200);
    let queries: Vec<[f32; 3]> = (0..500)
        .map(|_| std::array::from_fn(|_| rng.f32_in(-0.5, 4.5)))
        .chain(points[..100].iter().copied())
        .collect();
    let cloud = PointCloud::build(&ctx, &points).unwrap();
    for k in [1, 16, 64] {
        let found = cloud.knn(&queries, k).unwrap();
        for (q, &query) in queries.iter().enumerate() {
            let expected = knn_brute_force(&points, query, k as usize);
            let ids: Vec<u32> = expected.iter().map(|&(_, id)| id).collect();
            assert_eq!(found.of(q), &ids[..], "k {k}, query {q}");
            let d2 = &found.distances2[q * k as usize..][..k as usize];
            assert!(
                d2.iter().zip(&expected).all(|(&g, &(e, _))| g == e),
                "k {k}, query {q}"
            );
        }
    }
    // Fewer points than k: every point, then nothing.
    let few = PointCloud::build(&ctx, &points[..5]).unwrap();
    let found = few.knn(&[[0.0; 3]], 8).unwrap();
    assert_eq!(found.of(0).len(), 5);
    assert_eq!(found.ids[5..], [MISS; 3]);
    assert!(cloud.knn(&queries, 0).is_err() && cloud.knn(&queries, 65).is_err());
    assert!(cloud.knn(&[[f32::INFINITY, 0.0, 0.0]], 4).is_err());
    assert!(PointCloud::build(&ctx, &[]).is_err());
}

#[test]
fn point_cloud_normals_are_a_spheres_radii_oriented_alike() {
    let ctx = common::context();
    let mut rng = Rng::new(5);
    let points: Vec<[f32; 3]> = (0..2000)
        .map(|_| {
            loop {
                let p: [f32; 3] = std::array::from_fn(|_| rng.f32_in(-1.0, 1.0));
                let length = p.iter().map(|x| x * x).sum::<f32>().sqrt();
                if (0.1..=1.0).contains(&length) {
                    break p.map(|x| x / length);
                }
            }
        })
        .collect();
    let normals = PointCloud::build(&ctx, &points)
        .unwrap()
        .normals(12)
        .unwrap();
    let dots: Vec<f32> = (points.iter().zip(&normals))
        .map(|(p, n)| p.iter().zip(n).map(|(a, b)| a * b).sum())
        .collect();
    assert!(
        dots.iter().all(|d| d.abs() > 0.95),
        "a normal off the radius"
    );
    let outward = dots.iter().filter(|&&d| d > 0.0).count();
    assert!(
        outward == 0 || outward == points.len(),
        "{outward} of {} normals point out",
        points.len()
    );
}
