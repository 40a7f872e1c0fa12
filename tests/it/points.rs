//! Point-cloud modelling (seed 000 §6): the GPU's PCA normals and densities against the CPU's
//! double-precision PCA on a real scan and on samples of a sphere, the orientation making every
//! normal of a closed surface point outwards, the PLY output read back, and bad clouds.

use crate::common;

use canopy::geom::PointInput;
use canopy::points::cpu::{orient_normals, pca_normal};
use canopy::points::{analyse, normal_columns, write_ply};
use canopy::scene::Mesh;
use common::{Rng, assert_valid, context};

/// Points on the unit sphere around `centre`, evenly spread (a Fibonacci lattice).
fn sphere(n: usize, centre: [f32; 3]) -> Vec<[f32; 3]> {
    let golden = std::f64::consts::PI * (3.0 - 5f64.sqrt());
    (0..n)
        .map(|i| {
            let y = 1.0 - 2.0 * (i as f64 + 0.5) / n as f64;
            let r = (1.0 - y * y).sqrt();
            let a = golden * i as f64;
            [
                centre[0] + (r * a.cos()) as f32,
                centre[1] + y as f32,
                centre[2] + (r * a.sin()) as f32,
            ]
        })
        .collect()
}

/// The GPU normals equal the CPU's PCA of the same neighbours (up to sign) where the smallest
/// eigenvalue is well separated, and the densities equal `k / r_k²`.
fn assert_matches_cpu(points: &[[f32; 3]], k: u32, label: &str) -> canopy::points::CloudAnalysis {
    let ctx = context();
    let result = analyse(&ctx, points, k).unwrap();
    assert_valid(&ctx);
    let mut compared = 0;
    for (i, p) in points.iter().enumerate() {
        let ids = &result.neighbours[i * k as usize..][..k as usize];
        let neighbours: Vec<[f32; 3]> = ids.iter().map(|&j| points[j as usize]).collect();
        let (normal, values) = pca_normal(&neighbours);
        let r2 = canopy::accel::pointkd::cpu::distance2(*neighbours.last().unwrap(), *p);
        let density = k as f32 / r2;
        let got = result.densities[i];
        assert!(
            (got - density).abs() <= 1e-5 * density,
            "{label}: point {i}: density {got}, CPU {density}"
        );
        if values[0] < 0.2 * values[1] {
            let n = result.normals[i];
            let cos: f64 = (0..3).map(|a| n[a] as f64 * normal[a]).sum::<f64>().abs();
            let angle = cos.min(1.0).acos();
            assert!(
                angle < 1e-3,
                "{label}: point {i}: normal {n:?}, CPU {normal:?}"
            );
            compared += 1;
        }
    }
    assert!(
        compared * 2 > points.len(),
        "{label}: only {compared} well separated"
    );
    result
}

#[test]
fn normals_and_densities_match_the_cpu_on_a_scan() {
    let points = Mesh::load_points(&common::test_data("meshes/bunny_small.obj")).unwrap();
    assert_matches_cpu(&points, 16, "bunny_small");
}

#[test]
fn a_closed_surface_is_oriented_outwards() {
    let centre = [3.0, -1.0, 2.0];
    let points = sphere(4000, centre);
    let result = assert_matches_cpu(&points, 12, "sphere");
    for (i, (p, n)) in points.iter().zip(&result.normals).enumerate() {
        let outward: f32 = (0..3).map(|a| (p[a] - centre[a]) * n[a]).sum();
        assert!(
            outward > 0.9,
            "point {i} at {p:?}: normal {n:?} points inwards"
        );
    }
    // Randomly flipped normals come back oriented.
    let mut normals = result.normals.clone();
    let mut rng = Rng::new(81);
    for n in normals.iter_mut() {
        if rng.below(2) == 0 {
            *n = n.map(|x| -x);
        }
    }
    orient_normals(&points, &result.neighbours, 12, &mut normals);
    assert_eq!(normals, result.normals);
}

/// The share of a mesh's vertices (merged by position) whose oriented normal from `analyse`
/// (k = 16) points to the same side as the mesh's own vertex normal (the area-weighted sum of
/// its faces' normals, as wound).
fn orientation_agreement(relative: &str) -> f64 {
    let mesh = Mesh::load(&common::test_data(relative)).unwrap();
    let mut index = std::collections::HashMap::new();
    let mut points: Vec<[f32; 3]> = Vec::new();
    let merged: Vec<usize> = mesh
        .positions
        .iter()
        .map(|p| {
            *index.entry(p.map(f32::to_bits)).or_insert_with(|| {
                points.push(*p);
                points.len() - 1
            })
        })
        .collect();
    let mut reference = vec![[0f64; 3]; points.len()];
    for t in &mesh.triangles {
        let [a, b, c] = t.map(|v| mesh.positions[v as usize].map(f64::from));
        let (e, f) = (
            [0, 1, 2].map(|i| b[i] - a[i]),
            [0, 1, 2].map(|i| c[i] - a[i]),
        );
        let normal = [
            e[1] * f[2] - e[2] * f[1],
            e[2] * f[0] - e[0] * f[2],
            e[0] * f[1] - e[1] * f[0],
        ];
        for &v in t {
            let r = &mut reference[merged[v as usize]];
            (0..3).for_each(|i| r[i] += normal[i]);
        }
    }
    let ctx = context();
    let result = analyse(&ctx, &points, 16).unwrap();
    assert_valid(&ctx);
    let agree = result
        .normals
        .iter()
        .zip(&reference)
        .filter(|(n, r)| (0..3).map(|i| n[i] as f64 * r[i]).sum::<f64>() > 0.0)
        .count();
    agree as f64 / points.len() as f64
}

/// Orientation quality: on the vertices of meshes, canopy's normals agree with the meshes' own
/// at least as often as Open3D 0.20's `orient_normals_consistent_tangent_plane(16)` (Hoppe's
/// minimum spanning tree over the same 16 nearest) on the same points, measured by
/// `tools/orientation-vs-open3d.py` (BENCHMARKS.md, "Normal orientation against Open3D").
#[test]
fn normals_are_oriented_as_well_as_open3d_orients_them() {
    for (relative, open3d) in [
        ("meshes/bunny_small.obj", 0.9619),
        ("meshes/spot.obj", 1.0),
        ("meshes/capsule.obj", 1.0),
        ("meshes/torus.obj", 1.0),
    ] {
        let canopy = orientation_agreement(relative);
        assert!(
            canopy >= open3d,
            "{relative}: {canopy:.4} of the normals agree with the mesh's, Open3D {open3d}"
        );
    }
}

/// `points` scaled by `scale` and moved by `offset`.
fn placed(points: &[[f32; 3]], scale: f64, offset: [f64; 3]) -> Vec<[f32; 3]> {
    points
        .iter()
        .map(|p| std::array::from_fn(|a| (p[a] as f64 * scale + offset[a]) as f32))
        .collect()
}

#[test]
fn normals_do_not_depend_on_the_clouds_place_or_units() {
    let ctx = context();
    let mut rng = Rng::new(7);
    // A sphere, and a wavy sheet.
    let sheet: Vec<[f32; 3]> = (0..3000)
        .map(|_| {
            let (x, z) = (rng.f32_in(-1.0, 1.0), rng.f32_in(-1.0, 1.0));
            [x, 0.1 * (3.0 * x).sin(), z]
        })
        .collect();
    for (cloud, label) in [(sphere(3000, [0.0; 3]), "sphere"), (sheet, "sheet")] {
        let unit = analyse(&ctx, &cloud, 12).unwrap();
        // At 1e20 and 1e-22, single-precision squares overflow and underflow: the GPU's
        // neighbours and covariances held garbage before the cloud was normalised.
        for (scale, offset) in [
            (1e6, [3e6, -2e6, 1e6]),
            (1e-4, [2e-4, 1e-4, -3e-4]),
            (1e20, [3e20, 0.0, 0.0]),
            (1e-22, [0.0; 3]),
        ] {
            let moved = placed(&cloud, scale, offset);
            let result = analyse(&ctx, &moved, 12).unwrap();
            for i in 0..cloud.len() {
                let (a, b) = (unit.normals[i], result.normals[i]);
                let cos: f32 = (0..3).map(|c| a[c] * b[c]).sum();
                assert!(
                    cos > 0.999,
                    "{label} at scale {scale}: point {i}: normal {b:?}, at unit scale {a:?}"
                );
                let expected = unit.densities[i] as f64 / (scale * scale);
                let got = result.densities[i] as f64;
                if expected > f32::MAX as f64 {
                    // Beyond single precision's range: the densities' column says so.
                    assert_eq!(got, f64::INFINITY);
                    continue;
                }
                assert!(
                    (got - expected).abs() <= 1e-2 * expected,
                    "{label} at scale {scale}: point {i}: density {got}, expected {expected}"
                );
            }
        }
    }
    assert_valid(&ctx);
}

#[test]
fn duplicate_points_get_finite_densities_and_the_normal_of_their_place() {
    let ctx = context();
    let centre = [0.0; 3];
    let mut points = sphere(2000, centre);
    // Twenty copies of point 5: more than k, so that its neighbours were only its copies.
    points.extend(std::iter::repeat_n(points[5], 20));
    let result = analyse(&ctx, &points, 8).unwrap();
    assert_eq!(result.distinct, 2000);
    assert!(
        result.densities.iter().all(|d| d.is_finite() && *d > 0.0),
        "{:?}",
        result
            .densities
            .iter()
            .find(|d| !d.is_finite() || **d <= 0.0)
    );
    for (i, p) in points.iter().enumerate() {
        let n = result.normals[i];
        let outward: f32 = (0..3).map(|a| (p[a] - centre[a]) * n[a]).sum();
        assert!(outward > 0.9, "point {i} at {p:?}: normal {n:?}");
    }
    for copy in 2000..points.len() {
        assert_eq!(result.normals[copy], result.normals[5]);
        assert_eq!(result.densities[copy], result.densities[5]);
        let ids = &result.neighbours[copy * 8..][..8];
        assert!(
            ids.iter()
                .all(|&j| points[j as usize] != points[5] || j == 5),
            "{ids:?}"
        );
    }
    assert_valid(&ctx);
}

#[test]
fn the_ply_reads_back() {
    let points = sphere(200, [0.0; 3]);
    let ctx = context();
    let result = analyse(&ctx, &points, 8).unwrap();
    let dir = common::files::TempFolder::new("points-ply");
    let path = dir.0.join("out.ply");
    write_ply(&path, &points, [0.0; 3], &normal_columns(&result)).unwrap();
    let back = Mesh::load_points(&path).unwrap();
    assert_eq!(back, points);
    let bytes = std::fs::read(&path).unwrap();
    let header = String::from_utf8_lossy(&bytes[..300]);
    assert!(header.contains("property float nx") && header.contains("property float density"));
    assert_eq!(dir.names(), vec!["out.ply".to_string()]);
}

#[test]
fn bad_clouds_are_named() {
    let ctx = context();
    assert!(
        analyse(&ctx, &[], 8)
            .unwrap_err()
            .to_string()
            .contains("empty")
    );
    let err = analyse(&ctx, &[[0.0, f32::NAN, 0.0], [1.0; 3]], 8).unwrap_err();
    assert!(err.to_string().contains("point 0"), "{err}");
    // One point, and all points equal: no normal, no other point near (density 0), nothing
    // fails.
    let one = analyse(&ctx, &[[1.0, 2.0, 3.0]], 4).unwrap();
    assert_eq!(one.normals, vec![[0.0; 3]]);
    assert_eq!(one.densities, vec![0.0]);
    let same = analyse(&ctx, &[[1.0; 3]; 50], 8).unwrap();
    assert!(same.densities.iter().all(|&d| d == 0.0));
    assert!(same.normals.iter().all(|&n| n == [0.0; 3]));
    assert_eq!(same.distinct, 1);
    assert_valid(&ctx);
}

#[test]
fn canopy_points_normals_writes_the_cloud_with_its_normals() {
    let scan = common::test_data("points/bun090.ply");
    let dir = common::files::TempFolder::new("points-cli");
    let out = dir.0.join("scan_normals.ply");
    let output = common::files::canopy(&[
        "points",
        "normals",
        scan.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "-k",
        "10",
        "--profile",
    ]);
    let printed = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{printed}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        printed.contains("k = 10") && printed.contains("knn"),
        "{printed}"
    );
    let points = Mesh::load_points(&scan).unwrap();
    assert_eq!(Mesh::load_points(&out).unwrap(), points);
    let missing = common::files::canopy(&["points", "normals", "no/such/cloud.ply"]);
    assert!(!missing.status.success());
    let refused = common::files::canopy(&["points", "normals", scan.to_str().unwrap(), "-k", "65"]);
    assert!(!refused.status.success());
}

#[test]
fn aligned_scans_merge_as_their_conf_says() {
    use canopy::scene::scans::load_aligned_scans;
    let dir = common::files::TempFolder::new("points-conf");
    let scan = common::test_data("points/bun090.ply");
    std::fs::copy(&scan, dir.0.join("a.ply")).unwrap();
    // The scan as is, then turned 90 degrees about y and moved by (1, 2, 3); a third listed
    // scan is missing.
    let half = std::f64::consts::FRAC_1_SQRT_2;
    let conf = format!(
        "camera 0 0 0 0 0 0 1\nbmesh a.ply 0 0 0 0 0 0 1\nbmesh a.ply 1 2 3 0 {half} 0 {half}\nbmesh gone.ply 0 0 0 0 0 0 1\n"
    );
    std::fs::write(dir.0.join("scans.conf"), conf).unwrap();
    let merged = load_aligned_scans(&dir.0.join("scans.conf")).unwrap();
    let points = Mesh::load_points(&scan).unwrap();
    let n = points.len();
    assert_eq!(merged.points.len(), 2 * n);
    assert_eq!(&merged.points[..n], &points[..]);
    for (p, q) in points.iter().zip(&merged.points[n..]) {
        // (x, y, z) turned about y by 90 degrees: (z, y, -x).
        let expected = [p[2] + 1.0, p[1] + 2.0, -p[0] + 3.0];
        assert!(
            (0..3).all(|a| (q[a] - expected[a]).abs() < 1e-5),
            "{p:?} -> {q:?}"
        );
    }
    assert_eq!(merged.missing, vec![dir.0.join("gone.ply")]);
    // A malformed line names its number; a rotation that is not a unit quaternion is refused.
    std::fs::write(dir.0.join("bad.conf"), "bmesh a.ply 0 0 zero 0 0 0 1\n").unwrap();
    let err = load_aligned_scans(&dir.0.join("bad.conf"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("line 1"), "{err}");
    std::fs::write(dir.0.join("bad.conf"), "bmesh a.ply 0 0 0 0 0 0 2\n").unwrap();
    assert!(load_aligned_scans(&dir.0.join("bad.conf")).is_err());
    std::fs::write(dir.0.join("bad.conf"), "bmesh gone.ply 0 0 0 0 0 0 1\n").unwrap();
    assert!(load_aligned_scans(&dir.0.join("bad.conf")).is_err());
}

/// A cloud of `n` random points, each with `k` random neighbours (some missing, some itself),
/// and unit normals: random ones, or from three directions so that edge weights tie often.
fn random_graph(
    rng: &mut Rng,
    (n, k): (usize, usize),
    tied: bool,
) -> (Vec<[f32; 3]>, Vec<u32>, Vec<[f32; 4]>) {
    let points = (0..n)
        .map(|_| std::array::from_fn(|_| rng.f32_in(-1.0, 1.0)))
        .collect();
    let ids = (0..n * k)
        .map(|slot| match rng.below(20) {
            0 => u32::MAX,
            1 => (slot / k) as u32,
            _ => rng.below(n as u32),
        })
        .collect();
    let directions = [[0.0, 1.0, 0.0], [0.6, -0.8, 0.0], [0.0, 0.0, -1.0]];
    let normals = (0..n)
        .map(|_| {
            let d: [f32; 3] = if tied {
                directions[rng.below(3) as usize]
            } else {
                let v: [f32; 3] = std::array::from_fn(|_| rng.f32_in(-1.0, 1.0));
                let length = v.iter().map(|x| x * x).sum::<f32>().sqrt();
                v.map(|x| x / length)
            };
            [d[0], d[1], d[2], 1.0]
        })
        .collect();
    (points, ids, normals)
}

#[test]
fn gpu_orientation_equals_kruskal() {
    use canopy::points::orient::NormalOrienter;
    use canopy::vk::{MemoryKind, Slice};
    // Past 64 workgroups per dimension, the grids fold.
    let ctx = common::folding_context();
    let mut rng = Rng::new(82);
    for (n, k, tied) in [
        (1, 1, false),
        (2, 1, false),
        (100, 4, false),
        (100, 4, true),
        (5000, 12, false),
        (5000, 3, true),
        (20_000, 1, false),
    ] {
        let label = format!("{n} points, k {k}, tied {tied}");
        let (points, ids, normals) = random_graph(&mut rng, (n, k), tied);
        let positions = ctx.create_buffer_with("positions", &points).unwrap();
        let neighbours = ctx.create_buffer_with("ids", &ids).unwrap();
        let oriented = ctx.create_buffer_with("normals", &normals).unwrap();
        let orienter = NormalOrienter::new(&ctx, n as u32).unwrap();
        let weights = ctx
            .create_buffer("edge weights", (n * k) as u64 * 4, MemoryKind::Device)
            .unwrap();
        ctx.submit_and_wait(|rec| {
            orienter.record(
                rec,
                &PointInput {
                    positions: Slice::whole(&positions),
                    count: n as u32,
                },
                Slice::whole(&neighbours),
                k as u32,
                Slice::whole(&oriented),
                Slice::whole(&weights),
            )
        })
        .unwrap();
        let gpu: Vec<[f32; 4]> = ctx.download(&oriented, 0, n).unwrap();
        let stats = orienter.stats(&ctx).unwrap();
        let mut cpu: Vec<[f32; 3]> = normals.iter().map(|v| [v[0], v[1], v[2]]).collect();
        let summary = orient_normals(&points, &ids, k, &mut cpu);
        for (i, (g, c)) in gpu.iter().zip(&cpu).enumerate() {
            assert_eq!([g[0], g[1], g[2]], *c, "{label}: point {i}");
            assert_eq!(g[3], 1.0, "{label}: point {i}'s density kept");
        }
        assert_eq!(stats.flipped as usize, summary.flipped, "{label}");
        assert_eq!(
            stats.forest_edges() as usize,
            summary.forest_edges,
            "{label}"
        );
        assert!(
            stats.rounds() <= 1 + n.ilog2() as usize,
            "{label}: {stats:?}"
        );
    }
    common::assert_valid(&ctx);
}

#[test]
fn deformation_strength_matches_the_cpu() {
    use canopy::points::cpu::deformation_strength as cpu_strength;
    use canopy::points::deform::deformation_strength;
    let ctx = context();
    let points = sphere(3000, [0.5, 0.0, -2.0]);
    let by_height = |test: &dyn Fn(f32) -> bool| -> Vec<u32> {
        (0..points.len() as u32)
            .filter(|&i| test(points[i as usize][1]))
            .collect()
    };
    let top = by_height(&|y| y > 0.8);
    let bottom = by_height(&|y| y < -0.5);
    let belt = by_height(&|y| y.abs() < 0.05);
    for (label, active, fixed) in [
        ("top against bottom", &top, &bottom),
        ("top alone", &top, &vec![]),
        (
            "belt against top and bottom",
            &belt,
            &[top.clone(), bottom.clone()].concat(),
        ),
        (
            "every point active, the top static too",
            &(0..3000).collect(),
            &top,
        ),
    ] {
        let gpu = deformation_strength(&ctx, &points, active, fixed).unwrap();
        let cpu = cpu_strength(&points, active, fixed);
        for (i, (g, c)) in gpu.iter().zip(&cpu).enumerate() {
            assert!(
                (g - c).abs() <= 1e-5,
                "{label}: point {i}: GPU {g}, CPU {c}"
            );
        }
        for &i in active.iter().filter(|i| !fixed.contains(i)) {
            assert_eq!(gpu[i as usize], 1.0, "{label}: active point {i}");
        }
        for &i in fixed {
            assert_eq!(gpu[i as usize], 0.0, "{label}: static point {i}");
        }
    }
    // Bad handles.
    assert!(deformation_strength(&ctx, &points, &[], &top).is_err());
    assert!(deformation_strength(&ctx, &points, &[3000], &[]).is_err());
    assert!(deformation_strength(&ctx, &[], &[0], &[]).is_err());
    assert_valid(&ctx);
}

#[test]
fn canopy_points_strength_writes_the_field() {
    let scan = common::test_data("points/bun090.ply");
    let points = Mesh::load_points(&scan).unwrap();
    let top = points.iter().map(|p| p[1]).fold(f32::MIN, f32::max);
    let dir = common::files::TempFolder::new("points-strength");
    let out = dir.0.join("strength.ply");
    let active = format!("-1,{},-1,1,1,1", top - 0.02);
    let output = common::files::canopy(&[
        "points",
        "strength",
        scan.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--active-box",
        &active,
        "--static-box",
        "-1,-1,-1,1,0.06,1",
    ]);
    let printed = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{printed}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(printed.contains("in the active handle"), "{printed}");
    assert_eq!(Mesh::load_points(&out).unwrap(), points);
    let bytes = std::fs::read(&out).unwrap();
    assert!(String::from_utf8_lossy(&bytes[..300]).contains("property float strength"));
    // A box holding no point, and a malformed one.
    for bad in ["5,5,5,6,6,6", "1,2,3"] {
        let refused = common::files::canopy(&[
            "points",
            "strength",
            scan.to_str().unwrap(),
            "--active-box",
            bad,
        ]);
        assert!(!refused.status.success(), "{bad} accepted");
    }
}

#[test]
fn a_cloud_the_device_cannot_hold_is_refused_with_the_count_that_fits() {
    let ctx = context();
    canopy::points::check_device_memory(&ctx, 100_000, 16).unwrap();
    // No point takes less than a byte: as many points as the device has bytes cannot fit.
    let device = ctx.caps().device_local_bytes;
    let error = canopy::points::check_device_memory(&ctx, device, 16)
        .unwrap_err()
        .to_string();
    println!("{error}");
    let fit: u64 = error
        .split("at most ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|count| count.parse().ok())
        .unwrap_or_else(|| panic!("no count in: {error}"));
    assert!(
        error.contains(&format!("{device} points at k = 16 need about")),
        "{error}"
    );
    // The count that fits is at the edge: it passes, a tenth more does not (past u32 points,
    // whatever the device holds, a cloud is refused too).
    canopy::points::check_device_memory(&ctx, fit, 16).unwrap();
    assert!(canopy::points::check_device_memory(&ctx, fit + fit / 10 + 1, 16).is_err());
    assert!(canopy::points::check_device_memory(&ctx, 1 << 33, 1).is_err());
    assert_valid(&ctx);
}
