//! How `canopy render` frames a mesh file: the ground never coincides with a flat-bottomed
//! mesh, a model renders the same far from the origin and at any scale that `f32` holds, and
//! a mesh with no area is refused with a clear error (and `canopy build` prints no NaN).

use crate::common;

use std::path::Path;

use canopy::geom::ray::closest_hit_brute_force;
use canopy::render::presets::{MESH_SCENE_ORBIT, MeshLook, MeshShading, MeshStage, orbit_camera};
use canopy::scene::{MaterialMesh, Mesh};
use common::files::{TempFolder, canopy, read_png};
use glam::DVec3;

const WIDTH: u32 = 64;
const HEIGHT: u32 = 48;

/// Writes `mesh` as OBJ text to `path`, every coordinate in the shortest form that reads back
/// as the same `f32`.
fn write_obj(mesh: &Mesh, path: &Path) {
    let mut text = String::new();
    for p in &mesh.positions {
        text += &format!("v {:?} {:?} {:?}\n", p[0], p[1], p[2]);
    }
    for t in &mesh.triangles {
        text += &format!("f {} {} {}\n", t[0] + 1, t[1] + 1, t[2] + 1);
    }
    std::fs::write(path, text).unwrap();
}

/// `mesh` with every position mapped by `f` in `f64` and rounded to `f32`.
fn mapped(mesh: &Mesh, f: impl Fn(DVec3) -> DVec3) -> Mesh {
    Mesh {
        positions: mesh
            .positions
            .iter()
            .map(|&p| f(glam::Vec3::from(p).as_dvec3()).as_vec3().into())
            .collect(),
        normals: Vec::new(),
        triangles: mesh.triangles.clone(),
    }
}

/// Renders frame 0 of `mesh_file` at WIDTH x HEIGHT into `out` and returns its RGBA pixels.
fn render_frame(mesh_file: &Path, out: &Path) -> Vec<u8> {
    let size = format!("{WIDTH}x{HEIGHT}");
    let output = canopy(&[
        "render",
        "--quiet",
        "--mesh",
        mesh_file.to_str().unwrap(),
        "--size",
        &size,
        "--frames",
        "0..1",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let (width, height, pixels) = read_png(&out.join("frame_0000.png")).unwrap();
    assert_eq!((width, height), (WIDTH, HEIGHT));
    pixels
}

/// Pixels of `a` and `b` with a channel more than 2 apart.
fn pixels_off(a: &[u8], b: &[u8]) -> usize {
    a.chunks(4)
        .zip(b.chunks(4))
        .filter(|(p, q)| p.iter().zip(*q).any(|(x, y)| x.abs_diff(*y) > 2))
        .count()
}

fn torus() -> Mesh {
    Mesh::load(Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/meshes/torus.obj"
    )))
    .unwrap()
}

/// A single flat quad at y = 0 (its lowest point is its whole surface): every camera ray that
/// meets the quad must see the quad, not the ground under it.
#[test]
fn a_flat_mesh_never_coincides_with_the_ground() {
    let quad = Mesh {
        positions: vec![
            [-1.0, 0.0, -1.0],
            [1.0, 0.0, -1.0],
            [1.0, 0.0, 1.0],
            [-1.0, 0.0, 1.0],
        ],
        normals: Vec::new(),
        triangles: vec![[0, 2, 1], [0, 3, 2]],
    };
    let stage = MeshStage::new(
        MaterialMesh {
            mesh: quad.clone(),
            ..MaterialMesh::default()
        },
        &MeshLook::default(),
    );
    let ground_y = stage.mesh.positions.last().unwrap()[1];
    assert!(ground_y < 0.0, "the ground is at {ground_y}");
    let quad_triangles = &stage.mesh.triangles[..2];
    let (width, height) = (160, 90);
    let mut on_quad = 0;
    for time in [0.0, 3.0, 7.0] {
        let camera = orbit_camera(
            stage.centre,
            stage.radius,
            time,
            width as f32 / height as f32,
            MESH_SCENE_ORBIT,
        );
        for pixel in 0..width * height {
            let ray = camera.primary_ray(pixel % width, pixel / width, width, height);
            if !closest_hit_brute_force(&stage.mesh.positions, quad_triangles, &ray).is_hit() {
                continue;
            }
            on_quad += 1;
            let hit = closest_hit_brute_force(&stage.mesh.positions, &stage.mesh.triangles, &ray);
            assert!(
                hit.triangle < 2,
                "time {time}, pixel {pixel}: the ground (triangle {}) shows through the quad",
                hit.triangle
            );
        }
    }
    assert!(
        on_quad > 1000,
        "the quad is hardly in view: {on_quad} pixels"
    );
}

/// A mesh tallest along z, as a z-up file would have it: `up = Z` stands it along y. Its
/// normals: flat without normals in the file (zero: the renderer shades with each triangle's
/// own), the file's when it has them, averaged with `Smooth`.
#[test]
fn a_mesh_is_stood_up_and_shaded_as_asked() {
    let tall = Mesh {
        positions: vec![
            [0.0, 0.0, 0.0],
            [1.0, 0.0, 0.0],
            [0.0, 0.0, 4.0],
            [0.0, 1.0, 0.0],
        ],
        normals: Vec::new(),
        triangles: vec![[0, 1, 2], [0, 3, 1]],
    };
    let mesh_of = |stage: &MeshStage| {
        let n = stage.mesh.positions.len() - 4;
        (
            stage.mesh.positions[..n].to_vec(),
            stage.mesh.normals[..n].to_vec(),
        )
    };
    let extent = |positions: &[[f32; 3]], axis: usize| {
        let values = positions.iter().map(|p| p[axis]);
        values.clone().fold(f32::MIN, f32::max) - values.fold(f32::MAX, f32::min)
    };
    let load = |mesh: &Mesh| MaterialMesh {
        mesh: mesh.clone(),
        ..MaterialMesh::default()
    };
    for (up, axis) in [
        (glam::Vec3::Z, 1),
        (glam::Vec3::Y, 2),
        (glam::Vec3::NEG_Z, 1),
    ] {
        let look = MeshLook {
            up,
            ..MeshLook::default()
        };
        let (positions, normals) = mesh_of(&MeshStage::new(load(&tall), &look));
        let tallest =
            (0..3).max_by(|&a, &b| extent(&positions, a).total_cmp(&extent(&positions, b)));
        assert_eq!(tallest, Some(axis), "up {up}: {positions:?}");
        assert!(
            normals.iter().all(|n| *n == [0.0; 3]),
            "not flat: {normals:?}"
        );
    }
    let smooth = MeshLook {
        shading: MeshShading::Smooth,
        ..MeshLook::default()
    };
    let (_, normals) = mesh_of(&MeshStage::new(load(&tall), &smooth));
    assert!(normals.iter().all(|n| glam::Vec3::from(*n).length() > 0.99));
    let mut with_normals = tall.clone();
    with_normals.normals = vec![[1.0, 0.0, 0.0]; tall.positions.len()];
    let (_, normals) = mesh_of(&MeshStage::new(load(&with_normals), &MeshLook::default()));
    assert!(normals.iter().all(|n| *n == [1.0, 0.0, 0.0]), "{normals:?}");
}

/// The torus moved to x = 1e4 and 1e6 and scaled by 1e-30 and 1e30 renders as it does where it
/// was modelled: each file is framed the same way, in units of its size. (At 1e6 its vertices
/// are rounded to 1/16: there it is compared with its own rounded shape moved back to the
/// origin.) `canopy build` of the scaled files reports finite costs.
#[test]
fn a_mesh_renders_the_same_far_from_the_origin_and_at_any_scale() {
    let folder = TempFolder::new("scales");
    let original = torus();
    let render = |mesh: &Mesh, name: &str| {
        let file = folder.0.join(format!("{name}.obj"));
        write_obj(mesh, &file);
        render_frame(&file, &folder.0.join(name))
    };
    let reference = render(&original, "reference");
    let lit = reference.chunks(4).filter(|p| p[0] > 40).count();
    assert!(
        lit > (WIDTH * HEIGHT / 4) as usize,
        "a dark reference frame"
    );
    let pixels = (WIDTH * HEIGHT) as usize;
    for (name, f) in [
        ("x1e4", DVec3::new(1e4, 0.0, 0.0)),
        ("x1e6", DVec3::new(1e6, 0.0, 0.0)),
    ] {
        let moved = mapped(&original, |p| p + f);
        let back = mapped(&moved, |p| p - f);
        let off = pixels_off(
            &render(&moved, name),
            &render(&back, &format!("{name}-back")),
        );
        assert!(off * 100 <= pixels, "{name}: {off} pixels differ");
    }
    for (name, scale) in [("scaled1e-30", 1e-30), ("scaled1e30", 1e30)] {
        let scaled = mapped(&original, |p| p * scale);
        let off = pixels_off(&render(&scaled, name), &reference);
        assert!(off * 100 <= pixels, "{name}: {off} pixels differ");
        let file = folder.0.join(format!("{name}.obj"));
        let built = canopy(&[
            "build",
            file.to_str().unwrap(),
            "--structure",
            "lbvh,kdtree,octree",
        ]);
        let text = String::from_utf8_lossy(&built.stdout);
        assert!(built.status.success(), "{name}: {text}");
        assert!(
            !text.contains("NaN") && !text.contains("inf"),
            "{name}: {text}"
        );
    }
}

/// Every vertex on one point, or all on one line: `render` and `build` refuse the file and
/// say why; nothing prints NaN.
#[test]
fn a_mesh_without_area_is_refused_with_the_reason() {
    let folder = TempFolder::new("no-area");
    let point = folder.0.join("point.obj");
    std::fs::write(&point, "v 1 2 3\nv 1 2 3\nv 1 2 3\nf 1 2 3\nf 3 2 1\n").unwrap();
    let line = folder.0.join("line.obj");
    std::fs::write(&line, "v 0 0 0\nv 1 1 1\nv 2 2 2\nf 1 2 3\n").unwrap();
    for file in [&point, &line] {
        let file = file.to_str().unwrap();
        let out = folder.0.join("out");
        for args in [
            vec![
                "render",
                "--mesh",
                file,
                "--frames",
                "0..1",
                "--out",
                out.to_str().unwrap(),
            ],
            vec!["build", file],
        ] {
            let output = canopy(&args);
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
            assert_eq!(output.status.code(), Some(2), "{args:?}: {text}");
            assert!(text.contains("zero area"), "{args:?}: {text}");
            assert!(!text.contains("NaN"), "{args:?}: {text}");
        }
    }
}
