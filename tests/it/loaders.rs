//! The mesh loaders (OBJ, PLY, glTF) on the real models in `tests/data`, whose triangle counts
//! and sources are listed in `tests/data/README.md`, and on small files written here to reach
//! every format feature and every error. Error tests check that the message names the file and
//! the line or element. The `Mesh` helpers (validation, bounds, normals, append, transform) are
//! tested last.

use crate::common;

use std::path::{Path, PathBuf};

use canopy::scene::animated::{MeshInput, OpenOptions};
use canopy::scene::{AssetAccess, Mesh, SceneError};
use common::files::glb;
use common::test_data;
use glam::{Mat4, Quat, Vec3};

/// A file in the temporary directory, removed when dropped.
struct TempFile(PathBuf);

impl TempFile {
    /// Writes `contents` to a file called `name` (made unique to this process).
    fn new(name: &str, contents: impl AsRef<[u8]>) -> Self {
        let path = std::env::temp_dir().join(format!("canopy-{}-{name}", std::process::id()));
        std::fs::write(&path, contents).expect("write a temporary file");
        Self(path)
    }

    fn load(&self) -> Result<Mesh, SceneError> {
        Mesh::load(&self.0)
    }

    /// Loads the file, expecting an error whose message names the file and holds every one
    /// of `fragments`; returns the error.
    fn load_error(&self, fragments: &[&str]) -> SceneError {
        let error = match self.load() {
            Ok(mesh) => panic!(
                "{} loaded ({} triangles) but should not",
                self.0.display(),
                mesh.triangle_count()
            ),
            Err(e) => e,
        };
        let message = error.to_string();
        let name = self.0.file_name().unwrap().to_string_lossy();
        assert!(message.contains(&*name), "'{message}' does not name {name}");
        for fragment in fragments {
            assert!(message.contains(fragment), "'{message}' lacks '{fragment}'");
        }
        error
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Checks the mesh's size, normals and bounds against what is expected of `file`.
fn check_model(file: &str, mesh: &Mesh, triangles: usize, normals: bool, extent: [f32; 3]) {
    assert_eq!(mesh.triangle_count(), triangles, "{file}: triangles");
    let expected_normals = if normals { mesh.vertex_count() } else { 0 };
    assert_eq!(mesh.normals.len(), expected_normals, "{file}: normals");
    assert_eq!(mesh.degenerate_triangle_count(), 0, "{file}: degenerate");
    let (min, max) = mesh.bounds().expect("a loaded mesh has vertices");
    let size = Vec3::from(max) - Vec3::from(min);
    assert!(
        size.abs_diff_eq(extent.into(), 0.01 * Vec3::from(extent).max_element()),
        "{file}: extent {size} rather than {extent:?}"
    );
}

// ---- the real models ----

#[test]
fn every_test_mesh_has_the_readme_triangle_count() {
    // (file, triangles as in the README, normals in the file, extent of the bounds)
    let models: [(&str, usize, bool, [f32; 3]); 5] = [
        ("bunny_small.obj", 3_674, false, [9.907, 9.658, 7.540]),
        // Its `fo` faces (a marker object) are not counted: see `obsolete_fo_*`.
        ("capsule.obj", 6_048, true, [0.6, 1.6, 0.6]),
        ("gear.obj", 3_840, false, [4.5984, 4.5984, 0.6]),
        ("spot.obj", 5_856, false, [0.9431, 1.6904, 1.7179]),
        ("torus.obj", 968, true, [2.7, 2.6725, 0.6929]),
    ];
    let mut listed: Vec<&str> = models.iter().map(|m| m.0).collect();
    listed.sort();
    let mut present: Vec<String> = std::fs::read_dir(test_data("meshes"))
        .expect("list tests/data/meshes")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    present.sort();
    assert_eq!(present, listed, "every test mesh is checked");

    for (file, triangles, normals, extent) in models {
        let mesh =
            Mesh::load(&test_data(&format!("meshes/{file}"))).unwrap_or_else(|e| panic!("{e}"));
        check_model(file, &mesh, triangles, normals, extent);
    }
}

#[test]
fn obsolete_fo_faces_are_skipped() {
    // capsule.obj also holds 720 `fo` quads (a marker object, CRLF lines like the rest); the
    // README counts only its `f` faces, and so does the reader.
    let path = test_data("meshes/capsule.obj");
    let text = std::fs::read_to_string(&path).unwrap();
    let fo = text.lines().filter(|l| l.starts_with("fo ")).count();
    assert_eq!(fo, 720);
    let mesh = Mesh::load(&path).unwrap();
    assert_eq!(mesh.triangle_count(), 6_048);
}

#[test]
fn every_test_gltf_loads_as_a_static_mesh() {
    // (file, triangles, normals, extent): all three are skinned and read in their bind pose.
    let models: [(&str, usize, bool, [f32; 3]); 3] = [
        // Its root node turns Z-up into Y-up: the man stands 1.51 along y.
        ("CesiumMan.glb", 4_672, true, [1.1383, 1.5066, 0.3120]),
        ("Fox.glb", 576, false, [25.185, 79.029, 154.72]),
        ("RiggedSimple.glb", 892, true, [2.0, 9.5507, 2.0]),
    ];
    for (file, triangles, normals, extent) in models {
        let mesh =
            Mesh::load(&test_data(&format!("gltf/{file}"))).unwrap_or_else(|e| panic!("{e}"));
        check_model(file, &mesh, triangles, normals, extent);
        assert!(
            mesh.normals
                .iter()
                .all(|&n| (Vec3::from(n).length() - 1.0).abs() < 1e-3),
            "{file}: normals are unit length"
        );
    }
}

#[test]
fn a_point_cloud_has_no_triangles() {
    let path = test_data("points/bun090.ply");
    let error = Mesh::load(&path).unwrap_err();
    assert!(matches!(error, SceneError::Empty { .. }), "{error}");
    assert!(error.to_string().contains("bun090.ply"), "{error}");
    let points = canopy::scene::ply::load(&path).unwrap();
    assert_eq!(points.vertex_count(), 30_379);
}

// ---- OBJ ----

#[test]
fn obj_faces_of_every_form_and_negative_indices() {
    let file = TempFile::new(
        "forms.obj",
        "# a unit square and a pentagon\n\
         mtllib x.mtl\no square\ng g1\ns 1\nusemtl m\n\
         v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0 1.0\n\
         vt 0 0\nvt 1 0\nvt 1 1\n\
         f 1/1 2/2 3/3 4/3\n\
         v 2 0 0\nv 3 0 0\nv 3 1 0 0.5 0.5 0.5\nv 2.5 2 0\nv 2 1 0\n\
         f -5 -4 -3 -2 \\\n  -1\n\
         f 1 3 4\n\
         p 1\nl 1 2\n",
    );
    let mesh = file.load().unwrap();
    assert_eq!(mesh.vertex_count(), 9);
    // The quad gives 2 triangles, the pentagon (continued on the next line) 3, the triangle 1.
    assert_eq!(
        mesh.triangles,
        [
            [0, 1, 2],
            [0, 2, 3],
            [4, 5, 6],
            [4, 6, 7],
            [4, 7, 8],
            [0, 2, 3]
        ]
    );
    assert!(mesh.normals.is_empty());
    assert_eq!(mesh.bounds(), Some(([0.0, 0.0, 0.0], [3.0, 2.0, 0.0])));
}

#[test]
fn obj_normals_are_kept_only_when_consistent() {
    let vertices = "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 1 1 0\nvn 0 0 1\nvn 0 0 -1\nvn 0 0 1\n";
    let consistent = TempFile::new(
        "normals-consistent.obj",
        format!("{vertices}f 1//1 2//1 3//1\nf 2/1/3 4/1/1 3/1/3\n"),
    );
    let mesh = consistent.load().unwrap();
    assert_eq!(mesh.normals, vec![[0.0, 0.0, 1.0]; 4]);

    // Vertex 2 gets two different normals.
    let conflicting = TempFile::new(
        "normals-conflicting.obj",
        format!("{vertices}f 1//1 2//1 3//1\nf 2//2 4//2 3//2\n"),
    );
    assert!(conflicting.load().unwrap().normals.is_empty());

    // The second face names no normals.
    let partial = TempFile::new(
        "normals-partial.obj",
        format!("{vertices}f 1//1 2//1 3//1\nf 2 4 3\n"),
    );
    assert!(partial.load().unwrap().normals.is_empty());
}

#[test]
fn obj_extension_is_case_insensitive() {
    let file = TempFile::new("upper.OBJ", "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n");
    assert_eq!(file.load().unwrap().triangle_count(), 1);
}

#[test]
fn obj_index_out_of_range_names_the_line() {
    let file = TempFile::new("out-of-range.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 99\n");
    file.load_error(&["line 4", "99", "out of range"]);
    let relative = TempFile::new(
        "relative-out-of-range.obj",
        "v 0 0 0\nv 1 0 0\nv 0 1 0\n\nf -1 -2 -4\n",
    );
    relative.load_error(&["line 5", "-4"]);
    let normal = TempFile::new(
        "normal-out-of-range.obj",
        "v 0 0 0\nv 1 0 0\nv 0 1 0\nvn 0 0 1\nf 1//1 2//1 3//2\n",
    );
    normal.load_error(&["line 5", "normal index 2"]);
}

#[test]
fn obj_index_zero_names_the_line() {
    let file = TempFile::new("zero.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 0 1 2\n");
    file.load_error(&["line 4", "index 0"]);
}

#[test]
fn obj_non_finite_vertex_names_the_line() {
    let file = TempFile::new("nan.obj", "v nan 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n");
    file.load_error(&["line 1", "not finite"]);
    let file = TempFile::new("inf.obj", "v 0 0 0\n# comment\nv 1 inf 0\n");
    file.load_error(&["line 3", "not finite"]);
}

#[test]
fn obj_bad_number_names_the_line() {
    let file = TempFile::new("bad-number.obj", "v 0 0 0\nv 1 abc 0\n");
    file.load_error(&["line 2", "'abc'"]);
    let short = TempFile::new("short-vertex.obj", "v 0 0\n");
    short.load_error(&["line 1", "three coordinates"]);
    let index = TempFile::new("bad-index.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 x\n");
    index.load_error(&["line 4", "'x'"]);
}

#[test]
fn obj_face_with_two_vertices_names_the_line() {
    let file = TempFile::new("two-vertices.obj", "v 0 0 0\nv 1 0 0\nf 1 2\n");
    file.load_error(&["line 3", "at least 3 vertices"]);
}

#[test]
fn obj_without_faces_is_empty() {
    let file = TempFile::new("empty.obj", "# nothing\n\nv 0 0 0\n");
    let error = file.load_error(&[]);
    assert!(matches!(error, SceneError::Empty { .. }), "{error}");
    let file = TempFile::new("zero-bytes.obj", "");
    assert!(matches!(file.load(), Err(SceneError::Empty { .. })));
}

#[test]
fn unknown_extension_is_refused() {
    let file = TempFile::new("mesh.stl", "solid x\n");
    let error = file.load_error(&["unknown format"]);
    assert!(matches!(error, SceneError::UnknownFormat { .. }), "{error}");
    let missing = Mesh::load(Path::new("/nonexistent/canopy-missing.obj")).unwrap_err();
    assert!(matches!(missing, SceneError::Io { .. }), "{missing}");
    assert!(missing.to_string().contains("canopy-missing.obj"));
}

// ---- PLY ----

/// An ASCII unit cube of six quads, with properties and elements the reader must read past.
const ASCII_CUBE: &str = "ply
format ascii 1.0
comment a unit cube
element vertex 8
property float x
property float y
property float z
property uchar red
property list uchar float uv
element face 6
property uchar flags
property list uchar int vertex_indices
property list uchar float texcoord
element edge 1
property int vertex1
property int vertex2
end_header
0 0 0 255 0
1 0 0 255 2 0.5 0.5
1 1 0 255 0
0 1 0 255 0
0 0 1 255 0
1 0 1 255 0
1 1 1 255 0
0 1 1 255 0
0 4 0 3 2 1 0
0 4 4 5 6 7 2 0 1
0 4 0 1 5 4 0
0 4 1 2 6 5 0
0 4 2 3 7 6 0
0 4 3 0 4 7 0
0 1
";

#[test]
fn ply_ascii_cube() {
    let file = TempFile::new("cube.ply", ASCII_CUBE);
    let mut mesh = file.load().unwrap();
    assert_eq!(mesh.vertex_count(), 8);
    assert_eq!(mesh.triangle_count(), 12);
    assert_eq!(&mesh.triangles[..2], &[[0, 3, 2], [0, 2, 1]]);
    assert!(mesh.normals.is_empty());
    assert_eq!(mesh.bounds(), Some(([0.0; 3], [1.0; 3])));
    // The faces wind outwards: the corner normals point away from the centre.
    mesh.compute_vertex_normals();
    for (p, n) in mesh.positions.iter().zip(&mesh.normals) {
        let outwards = Vec3::from(*p) - Vec3::splat(0.5);
        assert!(Vec3::from(*n).dot(outwards) > 0.0, "{p:?} {n:?}");
    }
}

/// One value of a binary PLY property.
#[derive(Clone, Copy)]
enum Value {
    I8(i8),
    U8(u8),
    I16(i16),
    U16(u16),
    I32(i32),
    U32(u32),
    F32(f32),
    F64(f64),
}

/// `values` in binary, in either byte order.
fn encode(values: &[Value], big_endian: bool) -> Vec<u8> {
    let mut out = Vec::new();
    for value in values {
        let mut bytes = match *value {
            Value::I8(v) => v.to_le_bytes().to_vec(),
            Value::U8(v) => v.to_le_bytes().to_vec(),
            Value::I16(v) => v.to_le_bytes().to_vec(),
            Value::U16(v) => v.to_le_bytes().to_vec(),
            Value::I32(v) => v.to_le_bytes().to_vec(),
            Value::U32(v) => v.to_le_bytes().to_vec(),
            Value::F32(v) => v.to_le_bytes().to_vec(),
            Value::F64(v) => v.to_le_bytes().to_vec(),
        };
        if big_endian {
            bytes.reverse();
        }
        out.extend(bytes);
    }
    out
}

/// A binary PLY of a square pyramid (4 triangles and a quad base) using every scalar type,
/// with an element before the vertices and unknown scalar and list properties throughout.
fn binary_pyramid(big_endian: bool) -> Vec<u8> {
    use Value::*;
    let format = if big_endian {
        "binary_big_endian"
    } else {
        "binary_little_endian"
    };
    let header = format!(
        "ply\nformat {format} 1.0\n\
         element material 2\nproperty char a\nproperty list uint short b\nproperty uint c\n\
         element vertex 5\nproperty double x\nproperty float y\nproperty int16 z\n\
         property float nx\nproperty float ny\nproperty float nz\nproperty list uchar uchar u\n\
         element face 5\nproperty list ushort uint vertex_index\nproperty int8 flags\n\
         property list int double weights\n\
         end_header\n"
    );
    let mut values = vec![
        I8(-1),
        U32(2),
        I16(-300),
        I16(7),
        U32(9),
        I8(3),
        U32(0),
        U32(70_000),
    ];
    let corners: [(f64, f32, i16); 5] = [
        (0.0, 0.0, 0),
        (2.0, 0.0, 0),
        (2.0, 2.0, 0),
        (0.0, 2.0, 0),
        (1.0, 1.0, 3),
    ];
    for (x, y, z) in corners {
        values.extend([F64(x), F32(y), I16(z), F32(0.0), F32(0.0), F32(1.0)]);
        values.extend([U8(2), U8(1), U8(2)]);
    }
    let faces: [&[u32]; 5] = [
        &[0, 3, 2, 1],
        &[0, 1, 4],
        &[1, 2, 4],
        &[2, 3, 4],
        &[3, 0, 4],
    ];
    for face in faces {
        values.push(U16(face.len() as u16));
        values.extend(face.iter().map(|&v| U32(v)));
        values.extend([I8(0), I32(1), F64(0.25)]);
    }
    [header.into_bytes(), encode(&values, big_endian)].concat()
}

#[test]
fn ply_binary_in_both_byte_orders() {
    let little = TempFile::new("pyramid-le.ply", binary_pyramid(false));
    let big = TempFile::new("pyramid-be.ply", binary_pyramid(true));
    let mesh = little.load().unwrap();
    assert_eq!(big.load().unwrap(), mesh);
    assert_eq!(mesh.vertex_count(), 5);
    assert_eq!(mesh.triangle_count(), 6);
    assert_eq!(
        mesh.triangles,
        [
            [0, 3, 2],
            [0, 2, 1],
            [0, 1, 4],
            [1, 2, 4],
            [2, 3, 4],
            [3, 0, 4]
        ]
    );
    assert_eq!(mesh.normals, vec![[0.0, 0.0, 1.0]; 5]);
    assert_eq!(mesh.bounds(), Some(([0.0; 3], [2.0, 2.0, 3.0])));
}

#[test]
fn ply_truncated_binary_names_the_element() {
    let bytes = binary_pyramid(false);
    // Cut inside the last face (its `weights` list), then inside the vertices.
    let truncated = TempFile::new("truncated-face.ply", &bytes[..bytes.len() - 4]);
    truncated.load_error(&["face 4", "ends before all 5 'face' elements"]);
    let header_len = bytes
        .windows(11)
        .position(|w| w == b"end_header\n")
        .unwrap()
        + 11;
    let material_len = 1 + 4 + 2 * 2 + 4 + 1 + 4 + 4;
    let vertex_len = 8 + 4 + 2 + 3 * 4 + 1 + 2;
    let cut = header_len + material_len + 2 * vertex_len + 5;
    let truncated = TempFile::new("truncated-vertex.ply", &bytes[..cut]);
    truncated.load_error(&["vertex 2", "ends before all 5 'vertex' elements"]);
}

#[test]
fn ply_bad_header_names_the_line() {
    let bad_type = ASCII_CUBE.replace("property float y", "property flot y");
    TempFile::new("bad-type.ply", bad_type).load_error(&["header line 6", "'flot'"]);
    let bad_magic = ASCII_CUBE.replacen("ply", "plx", 1);
    TempFile::new("bad-magic.ply", bad_magic).load_error(&["header line 1", "not a PLY"]);
    let bad_format = ASCII_CUBE.replace("format ascii 1.0", "format binary_middle_endian 1.0");
    TempFile::new("bad-format.ply", bad_format).load_error(&["header line 2", "format"]);
    let no_end = &ASCII_CUBE[..ASCII_CUBE.find("end_header").unwrap()];
    TempFile::new("no-end.ply", no_end).load_error(&["header line 17", "end_header"]);
    let no_z = ASCII_CUBE.replace("property float z\n", "");
    TempFile::new("no-z.ply", no_z).load_error(&["header line 4", "'z'"]);
    let no_indices = ASCII_CUBE.replace("vertex_indices", "corners");
    TempFile::new("no-indices.ply", no_indices).load_error(&["header line 10", "vertex_indices"]);
}

#[test]
fn ply_bad_body_names_the_element() {
    let out_of_range = ASCII_CUBE.replace("0 4 4 5 6 7", "0 4 4 5 6 8");
    TempFile::new("out-of-range.ply", out_of_range).load_error(&["face 1", "out of range"]);
    let bad_number = ASCII_CUBE.replace("1 1 1 255", "1 one 1 255");
    TempFile::new("bad-number.ply", bad_number).load_error(&["vertex 6", "'one'"]);
    let non_finite = ASCII_CUBE.replace("1 1 1 255", "1 nan 1 255");
    TempFile::new("non-finite.ply", non_finite).load_error(&["vertex 6", "non-finite"]);
    let two_corners = ASCII_CUBE.replace("0 4 3 0 4 7", "0 2 3 0");
    TempFile::new("two-corners.ply", two_corners).load_error(&["face 5", "at least 3"]);
    let short = &ASCII_CUBE[..ASCII_CUBE.find("0 4 2 3 7 6").unwrap()];
    TempFile::new("short.ply", short).load_error(&["face 4", "ends before"]);
}

#[test]
fn ply_triangle_strips_restart_and_alternate() {
    // Strip 0 1 2 3, restart, strip 4 5 6 6 7 8 whose repeated 6 joins two runs.
    let file = TempFile::new(
        "strips.ply",
        "ply\nformat ascii 1.0\nelement vertex 9\nproperty float x\nproperty float y\n\
         property float z\nelement tristrips 1\nproperty list int int vertex_indices\n\
         end_header\n\
         0 0 0\n0 1 0\n1 0 0\n1 1 0\n2 0 0\n2 1 0\n3 0 0\n3 1 0\n4 0 0\n\
         11 0 1 2 3 -1 4 5 6 6 7 8\n",
    );
    let mesh = file.load().unwrap();
    // Odd triangles swap their first two corners; (5, 6, 6) and (6, 6, 7) are left out, and
    // (6, 7, 8) is the fourth triangle of its strip, so it is swapped too.
    assert_eq!(mesh.triangles, [[0, 1, 2], [2, 1, 3], [4, 5, 6], [7, 6, 8]]);
    // The first strip keeps one winding: both triangles face -z.
    for &[a, b, c] in &mesh.triangles[..2] {
        let [a, b, c] = [a, b, c].map(|i| Vec3::from(mesh.positions[i as usize]));
        assert!((b - a).cross(c - a).z < 0.0);
    }
    let bad = TempFile::new(
        "strip-bad-index.ply",
        "ply\nformat ascii 1.0\nelement vertex 3\nproperty float x\nproperty float y\n\
         property float z\nelement tristrips 1\nproperty list int int vertex_indices\n\
         end_header\n0 0 0\n0 1 0\n1 0 0\n4 0 1 -2 2\n",
    );
    bad.load_error(&["tristrips 0", "-2"]);
}

// ---- glTF ----

/// Binary data of four positions (a unit square in xy), four +z normals, and the indices
/// `indices` as u16.
fn square_buffer(indices: &[u16]) -> Vec<u8> {
    let positions = [0.0f32, 0., 0., 1., 0., 0., 0., 1., 0., 1., 1., 0.];
    let normals = [0.0f32, 0., 1., 0., 0., 1., 0., 0., 1., 0., 0., 1.];
    let mut bin: Vec<u8> = bytemuck::cast_slice(&positions).to_vec();
    bin.extend(bytemuck::cast_slice(&normals));
    bin.extend(bytemuck::cast_slice(indices));
    bin
}

/// A GLB of one mesh (a triangle strip over the square, a line primitive, and a triangle list
/// of `indices`) instanced by two nodes: a child translated and mirrored in x under a parent
/// scaled by 2, and a second root with no transform.
fn square_glb(indices: &[u16]) -> Vec<u8> {
    let json = r#"{
        "asset": {"version": "2.0"},
        "scene": 0,
        "scenes": [{"nodes": [0, 2]}, {"nodes": []}],
        "nodes": [
            {"scale": [2, 2, 2], "children": [1]},
            {"translation": [10, 0, 0], "scale": [-1, 1, 1], "mesh": 0},
            {"mesh": 0}
        ],
        "meshes": [{"primitives": [
            {"attributes": {"POSITION": 0, "NORMAL": 1}, "mode": 5},
            {"attributes": {"POSITION": 0}, "mode": 1},
            {"attributes": {"POSITION": 0, "NORMAL": 1}, "indices": 2}
        ]}],
        "buffers": [{"byteLength": BIN_LENGTH}],
        "bufferViews": [
            {"buffer": 0, "byteOffset": 0, "byteLength": 48},
            {"buffer": 0, "byteOffset": 48, "byteLength": 48},
            {"buffer": 0, "byteOffset": 96, "byteLength": 6}
        ],
        "accessors": [
            {"bufferView": 0, "componentType": 5126, "count": 4, "type": "VEC3",
             "min": [0, 0, 0], "max": [1, 1, 0]},
            {"bufferView": 1, "componentType": 5126, "count": 4, "type": "VEC3"},
            {"bufferView": 2, "componentType": 5123, "count": 3, "type": "SCALAR"}
        ]
    }"#;
    glb(json, &square_buffer(indices))
}

#[test]
fn gltf_nodes_transforms_and_primitive_modes() {
    let file = TempFile::new("square.glb", square_glb(&[0, 1, 3]));
    let mesh = file.load().unwrap();
    // Per instance: the strip's 2 triangles and the list's 1; the lines are skipped.
    assert_eq!(mesh.triangle_count(), 6);
    assert_eq!(mesh.vertex_count(), 16);
    // The mirrored instance comes first: x -> 2 * (10 - x), and its triangles' winding is
    // reversed so that they still face +z, like their normals.
    assert_eq!(mesh.positions[1], [18.0, 0.0, 0.0]);
    assert_eq!(mesh.positions[3], [18.0, 2.0, 0.0]);
    assert_eq!(&mesh.triangles[..3], &[[0, 2, 1], [2, 3, 1], [4, 7, 5]]);
    // The plain instance follows.
    assert_eq!(mesh.positions[8], [0.0, 0.0, 0.0]);
    assert_eq!(
        &mesh.triangles[3..],
        &[[8, 9, 10], [10, 9, 11], [12, 13, 15]]
    );
    assert_eq!(mesh.normals, vec![[0.0, 0.0, 1.0]; 16]);
    // Every triangle faces the way its normals point.
    for &[a, b, c] in &mesh.triangles {
        let [a, b, c] = [a, b, c].map(|i| Vec3::from(mesh.positions[i as usize]));
        assert!((b - a).cross(c - a).z > 0.0);
    }
}

#[test]
fn gltf_index_out_of_range_names_the_accessor() {
    let file = TempFile::new("bad-index.glb", square_glb(&[0, 1, 4]));
    file.load_error(&["mesh 0 primitive 2 accessor 2", "index 2 is 4"]);
}

#[test]
fn gltf_parse_error_names_the_file() {
    let file = TempFile::new("broken.gltf", "{\"asset\": ");
    file.load_error(&["document"]);
}

/// A GLB of the square's triangle [0, 1, 3] five times, one primitive each, with the materials
/// `materials` (JSON) used by the first four primitives; the fifth has none.
fn materials_glb(materials: &str) -> Vec<u8> {
    let json = r#"{
        "asset": {"version": "2.0"},
        "extensionsUsed": ["KHR_materials_transmission", "KHR_materials_ior"],
        "scenes": [{"nodes": [0]}],
        "nodes": [{"mesh": 0}],
        "meshes": [{"primitives": [
            {"attributes": {"POSITION": 0, "NORMAL": 1}, "indices": 2, "material": 0},
            {"attributes": {"POSITION": 0, "NORMAL": 1}, "indices": 2, "material": 1},
            {"attributes": {"POSITION": 0, "NORMAL": 1}, "indices": 2, "material": 2},
            {"attributes": {"POSITION": 0, "NORMAL": 1}, "indices": 2, "material": 1},
            {"attributes": {"POSITION": 0, "NORMAL": 1}, "indices": 2}
        ]}],
        "materials": MATERIALS,
        "buffers": [{"byteLength": BIN_LENGTH}],
        "bufferViews": [
            {"buffer": 0, "byteOffset": 0, "byteLength": 48},
            {"buffer": 0, "byteOffset": 48, "byteLength": 48},
            {"buffer": 0, "byteOffset": 96, "byteLength": 6}
        ],
        "accessors": [
            {"bufferView": 0, "componentType": 5126, "count": 4, "type": "VEC3",
             "min": [0, 0, 0], "max": [1, 1, 0]},
            {"bufferView": 1, "componentType": 5126, "count": 4, "type": "VEC3"},
            {"bufferView": 2, "componentType": 5123, "count": 3, "type": "SCALAR"}
        ]
    }"#;
    glb(
        &json.replace("MATERIALS", materials),
        &square_buffer(&[0, 1, 3]),
    )
}

#[test]
fn gltf_materials_map_to_diffuse_mirror_and_glass() {
    use canopy::render::{Material, MaterialKind};
    use canopy::scene::{MaterialMesh, TextureRef};
    let file = TempFile::new(
        "materials.glb",
        materials_glb(
            r#"[
            {"pbrMetallicRoughness": {"baseColorFactor": [0.2, 0.4, 0.6, 1],
                                      "metallicFactor": 0.0}},
            {"pbrMetallicRoughness": {"baseColorFactor": [0.9, 0.8, 0.7, 1],
                                      "metallicFactor": 1.0, "roughnessFactor": 0.0}},
            {"pbrMetallicRoughness": {"baseColorFactor": [0.9, 1.0, 0.95, 1]},
             "extensions": {"KHR_materials_transmission": {"transmissionFactor": 1.0},
                            "KHR_materials_ior": {"ior": 1.33}}}
        ]"#,
        ),
    );
    let loaded = MaterialMesh::load(&file.0).unwrap();
    assert_eq!(loaded.mesh.triangle_count(), 5);
    // Materials in order of first use; a primitive without one gets white diffuse. The
    // diffuse one keeps glTF's default roughness, 1.
    assert_eq!(loaded.triangle_materials, [0, 1, 2, 1, 3]);
    assert_eq!(
        loaded.materials,
        [
            Material::diffuse([0.2, 0.4, 0.6]).with_metal(0.0, 1.0, TextureRef::NONE),
            Material::mirror([0.9, 0.8, 0.7]),
            Material::glass(1.33, [0.9, 1.0, 0.95]),
            Material::diffuse([1.0, 1.0, 1.0]),
        ]
    );
    assert_eq!(loaded.materials[2].kind(), Some(MaterialKind::Glass));

    // Rough metal is diffuse, all metal; transmission without KHR_materials_ior is glass of
    // index 1.5.
    let file = TempFile::new(
        "materials2.glb",
        materials_glb(
            r#"[
            {"pbrMetallicRoughness": {"metallicFactor": 1.0, "roughnessFactor": 0.5}},
            {"extensions": {"KHR_materials_transmission": {"transmissionFactor": 0.9}}},
            {}
        ]"#,
        ),
    );
    let loaded = MaterialMesh::load(&file.0).unwrap();
    assert_eq!(
        loaded.materials[0],
        Material::diffuse([1.0; 3]).with_metal(1.0, 0.5, TextureRef::NONE)
    );
    assert_eq!(loaded.materials[1], Material::glass(1.5, [1.0; 3]));

    // A file without materials yields none (the caller picks); OBJ files have none either.
    let plain = TempFile::new("plain.glb", square_glb(&[0, 1, 3]));
    let loaded = MaterialMesh::load(&plain.0).unwrap();
    assert!(loaded.materials.is_empty() && loaded.triangle_materials.is_empty());
}

#[test]
fn gltf_glass_casts_caustics() {
    // Every primitive glass: `canopy render --caustics` aims photons at it from the stage's
    // lights and stores those it refracts onto the ground below.
    let glass = r#"{"pbrMetallicRoughness": {"baseColorFactor": [1, 1, 1, 1]},
        "extensions": {"KHR_materials_transmission": {"transmissionFactor": 1.0}}}"#;
    let file = TempFile::new(
        "glass.glb",
        materials_glb(&format!("[{glass}, {glass}, {glass}]")),
    );
    let output = common::files::canopy(&[
        "render",
        "--mesh",
        file.0.to_str().unwrap(),
        "--caustics",
        "--photons",
        "4000",
        "--frames",
        "0..1",
        "--size",
        "32x24",
        "--no-write",
        "-q",
    ]);
    let printed = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{printed}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stored: u32 = printed
        .split(" stored")
        .next()
        .and_then(|before| before.rsplit(", ").next())
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no photon counts in {printed}"));
    assert!(stored > 0, "{printed}");
}

#[test]
fn gltf_material_out_of_range_names_the_material() {
    let file = TempFile::new(
        "bad-material.glb",
        materials_glb(
            r#"[
            {},
            {"extensions": {"KHR_materials_transmission": {"transmissionFactor": 1.0},
                            "KHR_materials_ior": {"ior": -2.0}}},
            {}
        ]"#,
        ),
    );
    file.load_error(&["material 1", "index of refraction -2"]);
}

// ---- Mesh ----

/// A unit square in xy of two triangles facing +z.
fn square() -> Mesh {
    Mesh {
        positions: vec![[0., 0., 0.], [1., 0., 0.], [1., 1., 0.], [0., 1., 0.]],
        normals: Vec::new(),
        triangles: vec![[0, 1, 2], [0, 2, 3]],
    }
}

#[test]
fn validate_names_the_vertex_or_triangle() {
    let path = Path::new("memory.obj");
    let message = |mesh: &Mesh| mesh.validate(path).unwrap_err().to_string();

    let mut mesh = square();
    mesh.positions[2][1] = f32::INFINITY;
    assert!(
        message(&mesh).contains("memory.obj:vertex 2"),
        "{}",
        message(&mesh)
    );

    let mut mesh = square();
    mesh.triangles[1] = [0, 2, 4];
    assert!(
        message(&mesh).contains("memory.obj:triangle 1"),
        "{}",
        message(&mesh)
    );

    let mut mesh = square();
    mesh.normals = vec![[0., 0., 1.]; 3];
    assert!(message(&mesh).contains("normals"), "{}", message(&mesh));

    let mesh = Mesh::default();
    assert!(matches!(mesh.validate(path), Err(SceneError::Empty { .. })));
    assert_eq!(mesh.bounds(), None);
}

#[test]
fn degenerate_triangles_are_kept_and_counted() {
    let mut mesh = square();
    mesh.positions.push([2., 2., 0.]);
    mesh.triangles.extend([[0, 0, 1], [0, 2, 4]]);
    mesh.validate(Path::new("memory.obj")).unwrap();
    assert_eq!(mesh.degenerate_triangle_count(), 2);
    assert_eq!(square().degenerate_triangle_count(), 0);
}

#[test]
fn vertex_normals_are_area_weighted() {
    let mut mesh = Mesh {
        positions: vec![
            [0., 0., 0.],
            [4., 0., 0.],
            [0., 4., 0.],
            [0., 0., 1.],
            [7., 7., 7.],
        ],
        normals: Vec::new(),
        // A big triangle facing +z, a small one facing -y sharing an edge, a degenerate one,
        // and vertex 4 in no triangle with area.
        triangles: vec![[0, 1, 2], [0, 1, 3], [4, 4, 0]],
    };
    mesh.compute_vertex_normals();
    let n: Vec<Vec3> = mesh.normals.iter().map(|&n| n.into()).collect();
    let expected0 = Vec3::new(0., -2., 8.).normalize();
    assert!(n[0].abs_diff_eq(expected0, 1e-6), "{}", n[0]);
    assert!(n[1].abs_diff_eq(expected0, 1e-6), "{}", n[1]);
    assert_eq!(n[2], Vec3::Z);
    assert_eq!(n[3], Vec3::NEG_Y);
    assert_eq!(n[4], Vec3::Z);
}

#[test]
fn append_offsets_indices_and_keeps_normals_only_when_both_have_them() {
    let mut with_normals = square();
    with_normals.compute_vertex_normals();

    let mut mesh = Mesh::default();
    mesh.append(&with_normals);
    assert_eq!(mesh, with_normals);
    mesh.append(&with_normals);
    assert_eq!(mesh.vertex_count(), 8);
    assert_eq!(mesh.normals.len(), 8);
    assert_eq!(mesh.triangles[2..], [[4, 5, 6], [4, 6, 7]]);

    mesh.append(&square());
    assert_eq!(mesh.triangle_count(), 6);
    assert!(mesh.normals.is_empty());
    mesh.append(&with_normals);
    assert!(mesh.normals.is_empty());
}

#[test]
fn transformed_moves_points_and_normals() {
    let mut tilted = Mesh {
        positions: vec![[1., 0., 0.], [0., 1., 0.], [0., 0., 1.]],
        normals: Vec::new(),
        triangles: vec![[0, 1, 2]],
    };
    tilted.compute_vertex_normals();
    let m = Mat4::from_scale_rotation_translation(
        Vec3::new(2., 1., 1.),
        Quat::from_rotation_z(std::f32::consts::FRAC_PI_2),
        Vec3::new(0., 0., 5.),
    );
    let moved = tilted.transformed(m);
    assert!(Vec3::from(moved.positions[0]).abs_diff_eq(Vec3::new(0., 2., 5.), 1e-6));
    assert_eq!(moved.triangles, tilted.triangles);
    // The normal stays perpendicular to the moved triangle, with unit length.
    let [a, b, c] = [0, 1, 2].map(|i| Vec3::from(moved.positions[i]));
    let face = (b - a).cross(c - a).normalize();
    for n in &moved.normals {
        assert!(Vec3::from(*n).abs_diff_eq(face, 1e-6), "{n:?} {face}");
    }

    // A mirror reverses the winding so the triangle still faces along its normal.
    let mirrored = tilted.transformed(Mat4::from_scale(Vec3::new(-1., 1., 1.)));
    assert_eq!(mirrored.triangles, [[0, 2, 1]]);
    let [a, b, c] = [0, 2, 1].map(|i| Vec3::from(mirrored.positions[i]));
    let face = (b - a).cross(c - a).normalize();
    assert!(Vec3::from(mirrored.normals[0]).abs_diff_eq(face, 1e-6));
}

#[test]
fn a_gltf_with_a_missing_buffer_file_names_the_buffer() {
    let json = r#"{"asset": {"version": "2.0"},
        "buffers": [{"uri": "canopy-missing-buffer.bin", "byteLength": 48}]}"#;
    let file = TempFile::new("missing-buffer.gltf", json);
    file.load_error(&["buffer 0", "canopy-missing-buffer.bin", "No such file"]);
}

#[test]
fn an_empty_or_truncated_glb_says_it_is_truncated_and_where() {
    TempFile::new("empty.glb", b"").load_error(&["truncated", "0 bytes", "header"]);
    let whole = square_glb(&[0, 1, 3]);
    let cut = TempFile::new("cut.glb", &whole[..whole.len() - 10]);
    cut.load_error(&[
        "truncated",
        &format!("declares {} bytes", whole.len()),
        "10 bytes early",
    ]);
}

#[test]
fn binary_data_named_obj_is_not_obj_text() {
    let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
    png.extend_from_slice(&[0u8; 64]);
    TempFile::new("picture.obj", png).load_error(&["not OBJ text"]);
    // A binary file with no line break at all: refused without reading it all into a line.
    let long = vec![b'x'; (1 << 20) + 10];
    TempFile::new("one-long-line.obj", long).load_error(&["line 1", "not OBJ text"]);
}

#[test]
fn folders_and_devices_are_not_mesh_files() {
    let folder = std::env::temp_dir().join(format!("canopy-{}-folder.obj", std::process::id()));
    std::fs::create_dir_all(&folder).unwrap();
    let error = Mesh::load(&folder).unwrap_err().to_string();
    std::fs::remove_dir(&folder).unwrap();
    assert!(error.contains("a folder, not a mesh file"), "{error}");
    if std::path::Path::new("/dev/zero").exists() {
        // /dev/zero has no .obj name; a link to it with one is what a user would pass.
        let link = std::env::temp_dir().join(format!("canopy-{}-zero.obj", std::process::id()));
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
        let error = Mesh::load(&link).unwrap_err().to_string();
        std::fs::remove_file(&link).unwrap();
        assert!(error.contains("a device, pipe or socket"), "{error}");
    }
}

// ---- glTF as untrusted input ----

/// Three float positions of one triangle.
fn triangle_bin() -> Vec<u8> {
    bytemuck::cast_slice(&[0.0f32, 0., 0., 1., 0., 0., 0., 1., 0.]).to_vec()
}

/// A one-triangle glTF document over `buffer` (its JSON), with `view` and `accessor` added to
/// the fields of bufferView 0 and accessor 0 (the positions), and POSITION naming accessor
/// `position`.
fn triangle_json(buffer: &str, view: &str, accessor: &str, position: usize) -> String {
    format!(
        r#"{{"asset": {{"version": "2.0"}}, "scene": 0, "scenes": [{{"nodes": [0]}}],
        "nodes": [{{"mesh": 0}}],
        "meshes": [{{"primitives": [{{"attributes": {{"POSITION": {position}}}}}]}}],
        "buffers": [{buffer}],
        "bufferViews": [{{"buffer": 0, "byteLength": 36 {view}}}],
        "accessors": [{{"bufferView": 0, "componentType": 5126, "count": 3, "type": "VEC3",
            "min": [0, 0, 0], "max": [1, 1, 0] {accessor}}}]}}"#
    )
}

/// A GLB of [`triangle_json`] over its own binary chunk.
fn triangle_glb(view: &str, accessor: &str, position: usize) -> Vec<u8> {
    let json = triangle_json(r#"{"byteLength": BIN_LENGTH}"#, view, accessor, position);
    glb(&json, &triangle_bin())
}

#[test]
fn gltf_stride_smaller_than_an_element_is_an_error() {
    TempFile::new(
        "short-stride.glb",
        triangle_glb(r#", "byteStride": 4"#, "", 0),
    )
    .load_error(&[
        "accessor 0",
        "byteStride 4 is smaller than its 12-byte elements",
    ]);
    TempFile::new(
        "huge-stride.glb",
        triangle_glb(r#", "byteStride": 4096"#, "", 0),
    )
    .load_error(&["byteStride"]);
}

#[test]
fn gltf_accessor_index_out_of_range_is_an_error() {
    TempFile::new("no-accessor.glb", triangle_glb("", "", 7)).load_error(&["document"]);
}

#[test]
fn gltf_sparse_accessor_claiming_billions_of_elements_is_an_error() {
    // No bufferView: zeros, with 1 element replaced; the count claims 24 GB of positions.
    let json = r#"{"asset": {"version": "2.0"}, "scenes": [{"nodes": [0]}],
        "nodes": [{"mesh": 0}],
        "meshes": [{"primitives": [{"attributes": {"POSITION": 0}}]}],
        "buffers": [{"byteLength": BIN_LENGTH}],
        "bufferViews": [{"buffer": 0, "byteLength": 36}, {"buffer": 0, "byteLength": 4}],
        "accessors": [{"componentType": 5126, "count": 2000000000, "type": "VEC3",
            "min": [0, 0, 0], "max": [1, 1, 0],
            "sparse": {"count": 1, "indices": {"bufferView": 1, "componentType": 5125},
                       "values": {"bufferView": 0}}}]}"#;
    TempFile::new("sparse-claim.glb", glb(json, &triangle_bin()))
        .load_error(&["accessor 0", "claims 2000000000 elements of 12 bytes"]);
    // A sparse part reaching past its views.
    let json = json
        .replace("2000000000", "3")
        .replace(r#""count": 1,"#, r#""count": 3,"#);
    TempFile::new("sparse-past-view.glb", glb(&json, &triangle_bin())).load_error(&[
        "accessor 0",
        "sparse indices end at byte 12 of a 4-byte bufferView",
    ]);
}

/// A folder holding `model.gltf` whose one buffer has the URI `uri` (36 bytes declared).
fn external_buffer_model(name: &str, uri: &str) -> (common::files::TempFolder, PathBuf) {
    let folder = common::files::TempFolder::new(name);
    let model = folder.0.join("model.gltf");
    let buffer = format!(r#"{{"uri": "{uri}", "byteLength": 36}}"#);
    std::fs::write(&model, triangle_json(&buffer, "", "", 0)).unwrap();
    (folder, model)
}

/// The error of opening `model` with its buffers read from where `assets` allows.
fn open_error(model: &Path, assets: AssetAccess) -> String {
    let options = OpenOptions {
        assets,
        ..OpenOptions::default()
    };
    match MeshInput::open(model, &options) {
        Ok(_) => panic!("{} opened but should not", model.display()),
        Err(e) => e.to_string(),
    }
}

#[test]
fn gltf_buffer_uri_that_is_not_utf8_is_an_error() {
    let (_folder, model) = external_buffer_model("uri-not-utf8", "%FF%FE.bin");
    let error = open_error(&model, AssetAccess::ModelFolder);
    assert!(
        error.contains("buffer 0") && error.contains("not UTF-8"),
        "{error}"
    );
}

#[test]
fn gltf_buffers_outside_the_model_folder_are_refused_unless_allowed() {
    let outside = TempFile::new("outside-buffer.bin", triangle_bin());
    let outside_name = outside.0.file_name().unwrap().to_str().unwrap().to_string();
    let absolute = outside.0.to_str().unwrap().to_string();
    for (name, uri) in [
        ("uri-climbs", format!("../{outside_name}")),
        ("uri-absolute", absolute.clone()),
        ("uri-file-scheme", format!("file://{absolute}")),
    ] {
        let (_folder, model) = external_buffer_model(name, &uri);
        let error = open_error(&model, AssetAccess::ModelFolder);
        assert!(
            error.contains("buffer 0")
                && (error.contains("outside the model's folder") || error.contains("scheme")),
            "{uri}: {error}"
        );
        assert!(!error.contains('\0'), "the error echoes no file bytes");
        let options = OpenOptions {
            assets: AssetAccess::Anywhere,
            ..OpenOptions::default()
        };
        let opened = MeshInput::open(&model, &options).unwrap();
        assert_eq!(
            opened.triangles().len(),
            1,
            "{uri} with AssetAccess::Anywhere"
        );
    }
    // A link inside the folder that leads out of it.
    let (folder, model) = external_buffer_model("uri-link-out", "inside.bin");
    std::os::unix::fs::symlink(&outside.0, folder.0.join("inside.bin")).unwrap();
    let error = open_error(&model, AssetAccess::ModelFolder);
    assert!(error.contains("outside the model's folder"), "{error}");
    // A buffer file in the folder (and one in a subfolder) is read.
    let (folder, model) = external_buffer_model("uri-inside", "parts/tri%20angle.bin");
    std::fs::create_dir(folder.0.join("parts")).unwrap();
    std::fs::write(folder.0.join("parts/tri angle.bin"), triangle_bin()).unwrap();
    let opened = MeshInput::open(&model, &OpenOptions::default()).unwrap();
    assert_eq!(opened.triangles().len(), 1);
}

#[test]
fn gltf_buffers_must_be_regular_files_of_their_declared_length() {
    // A device is endless: refused before reading, even where any file may be read.
    let (_folder, model) = external_buffer_model("uri-device", "/dev/zero");
    let error = open_error(&model, AssetAccess::Anywhere);
    assert!(error.contains("not a regular file"), "{error}");
    // A pipe nobody writes to would block forever.
    let (folder, model) = external_buffer_model("uri-fifo", "pipe.bin");
    let fifo = std::ffi::CString::new(folder.0.join("pipe.bin").to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
    let (sender, receiver) = std::sync::mpsc::channel();
    let opening = model.clone();
    std::thread::spawn(move || sender.send(open_error(&opening, AssetAccess::ModelFolder)));
    let error = receiver
        .recv_timeout(std::time::Duration::from_secs(30))
        .expect("opening a model whose buffer is a pipe returns");
    assert!(error.contains("not a regular file"), "{error}");
    // A file shorter than the buffer's byteLength.
    let (folder, model) = external_buffer_model("uri-short", "short.bin");
    std::fs::write(folder.0.join("short.bin"), &triangle_bin()[..20]).unwrap();
    let error = open_error(&model, AssetAccess::ModelFolder);
    assert!(
        error.contains("declares 36 bytes") && error.contains("holds 20"),
        "{error}"
    );
}

/// A GLB of the triangle animated by one translation channel of `times` key times and
/// `values` (float VEC3 outputs, as many as `values.len() / 3`).
fn animated_triangle(times: &[f32], values: &[f32]) -> Vec<u8> {
    let mut bin = triangle_bin();
    let times_at = bin.len();
    bin.extend(bytemuck::cast_slice(times));
    let values_at = bin.len();
    bin.extend(bytemuck::cast_slice(values));
    let json = format!(
        r#"{{"asset": {{"version": "2.0"}}, "scenes": [{{"nodes": [0]}}],
        "nodes": [{{"mesh": 0}}],
        "meshes": [{{"primitives": [{{"attributes": {{"POSITION": 0}}}}]}}],
        "buffers": [{{"byteLength": BIN_LENGTH}}],
        "bufferViews": [{{"buffer": 0, "byteLength": 36}},
            {{"buffer": 0, "byteOffset": {times_at}, "byteLength": {}}},
            {{"buffer": 0, "byteOffset": {values_at}, "byteLength": {}}}],
        "accessors": [{{"bufferView": 0, "componentType": 5126, "count": 3, "type": "VEC3",
                "min": [0, 0, 0], "max": [1, 1, 0]}},
            {{"bufferView": 1, "componentType": 5126, "count": {}, "type": "SCALAR",
                "min": [0], "max": [9]}},
            {{"bufferView": 2, "componentType": 5126, "count": {}, "type": "VEC3"}}],
        "animations": [{{"samplers": [{{"input": 1, "output": 2}}],
            "channels": [{{"sampler": 0, "target": {{"node": 0, "path": "translation"}}}}]}}]}}"#,
        times.len() * 4,
        values.len() * 4,
        times.len(),
        values.len() / 3
    );
    glb(&json, &bin)
}

#[test]
fn gltf_animation_outputs_must_match_their_keys_and_be_finite() {
    let open = |name: &str, bytes: Vec<u8>| {
        let file = TempFile::new(name, bytes);
        canopy::scene::rig::Rig::load(&file.0).map(|rig| rig.clips.len())
    };
    assert_eq!(
        open(
            "moves.glb",
            animated_triangle(&[0., 1.], &[0., 0., 0., 1., 0., 0.])
        )
        .unwrap(),
        1
    );
    // Three key times, one translation.
    let error = open(
        "few-outputs.glb",
        animated_triangle(&[0., 1., 2.], &[0., 0., 1.]),
    )
    .unwrap_err()
    .to_string();
    assert!(
        error.contains("animation 0 channel 0") && error.contains("3 key values for 3 key times"),
        "{error}"
    );
    // An infinite key would pose the mesh nowhere.
    let error = open(
        "infinite-key.glb",
        animated_triangle(&[0., 1.], &[0., 0., 0., f32::INFINITY, 0., 0.]),
    )
    .unwrap_err()
    .to_string();
    assert!(
        error.contains("animation 0 channel 0") && error.contains("not finite"),
        "{error}"
    );
}

#[test]
fn a_static_gltf_of_many_nodes_is_still() {
    // More nodes than the animated path poses (each would need a matrix of its own).
    let nodes = 70_000;
    let json = format!(
        r#"{{"asset": {{"version": "2.0"}}, "scenes": [{{"nodes": [{}]}}],
        "nodes": [{}],
        "meshes": [{{"primitives": [{{"attributes": {{"POSITION": 0}}}}]}}],
        "buffers": [{{"byteLength": BIN_LENGTH}}],
        "bufferViews": [{{"buffer": 0, "byteLength": 36}}],
        "accessors": [{{"bufferView": 0, "componentType": 5126, "count": 3, "type": "VEC3",
            "min": [0, 0, 0], "max": [1, 1, 0]}}]}}"#,
        (0..nodes)
            .map(|n| n.to_string())
            .collect::<Vec<_>>()
            .join(","),
        vec![r#"{"mesh": 0}"#; nodes].join(",")
    );
    let file = TempFile::new("many-nodes.glb", glb(&json, &triangle_bin()));
    match MeshInput::open(&file.0, &OpenOptions::default()).unwrap() {
        MeshInput::Still(still) => assert_eq!(still.mesh.triangle_count(), nodes),
        _ => panic!("a glTF file without animations is still"),
    }
}

/// Each triangle of a glTF file keeps the node it came from (its index in the file), and
/// every node is named, in a skinned file's rest pose too; an OBJ file is one instance, named
/// after the file.
#[test]
fn triangles_keep_their_instances() {
    use canopy::scene::MaterialMesh;
    let gltf = TempFile::new("two-squares.glb", common::files::two_squares_glb());
    let loaded = MaterialMesh::load(&gltf.0).unwrap();
    assert_eq!(loaded.triangle_instances, [1, 1, 2, 2]);
    let names: Vec<Option<&str>> = loaded.instances.iter().map(|n| n.as_deref()).collect();
    assert_eq!(names, [Some("root"), Some("left"), Some("right")]);
    let obj = TempFile::new("triangle.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n");
    let loaded = MaterialMesh::load(&obj.0).unwrap();
    assert!(loaded.triangle_instances.is_empty());
    let name = obj.0.file_name().unwrap().to_string_lossy().into_owned();
    assert_eq!(loaded.instances, [Some(name)]);
    // A skinned file's rest pose keeps the same instances as its static mesh.
    let cesium = test_data("gltf/CesiumMan.glb");
    let rest = canopy::scene::rig::Rig::load(&cesium).unwrap().rest;
    let still = MaterialMesh::load(&cesium).unwrap();
    assert_eq!(rest.triangle_instances.len(), rest.mesh.triangle_count());
    assert_eq!(rest.triangle_instances, still.triangle_instances);
    assert_eq!(rest.instances, still.instances);
}

/// A GLB of a mesh of `triangles` copies of one triangle, placed by node 0 (moved by +10 in x)
/// through `EXT_mesh_gpu_instancing`, whose `attributes` JSON and extra accessors (from index
/// 1, over buffer views from index 1 given in `views`) are given; `data` opens the binary
/// chunk, the triangles follow it.
fn instanced_glb(
    triangles: usize,
    attributes: &str,
    accessors: &str,
    views: &str,
    data: &[u8],
) -> Vec<u8> {
    let triangle: [[f32; 3]; 3] = [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]];
    let mut bin = data.to_vec();
    bin.resize(bin.len().next_multiple_of(4), 0);
    let offset = bin.len();
    for _ in 0..triangles {
        bin.extend_from_slice(bytemuck::cast_slice(&triangle));
    }
    let json = format!(
        r#"{{
        "asset": {{"version": "2.0"}},
        "extensionsUsed": ["EXT_mesh_gpu_instancing"],
        "extensionsRequired": ["EXT_mesh_gpu_instancing"],
        "scene": 0,
        "scenes": [{{"nodes": [0]}}],
        "nodes": [{{"mesh": 0, "translation": [10, 0, 0],
                    "extensions": {{"EXT_mesh_gpu_instancing": {{"attributes": {attributes}}}}}}}],
        "meshes": [{{"primitives": [{{"attributes": {{"POSITION": 0}}}}]}}],
        "buffers": [{{"byteLength": BIN_LENGTH}}],
        "bufferViews": [{{"buffer": 0, "byteOffset": {offset}, "byteLength": {}}}{views}],
        "accessors": [
            {{"bufferView": 0, "componentType": 5126, "count": {}, "type": "VEC3",
             "min": [0, 0, 0], "max": [1, 1, 0]}}{accessors}
        ]
    }}"#,
        36 * triangles,
        3 * triangles
    );
    glb(&json, &bin)
}

/// `EXT_mesh_gpu_instancing`: each instance's translation, rotation (float or normalized
/// 16-bit) and scale places a copy of the node's mesh, after the node's own transform.
#[test]
fn gpu_instancing_places_a_copy_of_the_mesh_per_instance() {
    let translations: [[f32; 3]; 3] = [[0.0, 0.0, 0.0], [0.0, 5.0, 0.0], [0.0, 0.0, -3.0]];
    let quarter_turn = Quat::from_rotation_z(std::f32::consts::FRAC_PI_2);
    let rotations: [[f32; 4]; 3] = [
        [0.0, 0.0, 0.0, 1.0],
        quarter_turn.to_array(),
        [0.0, 0.0, 0.0, 1.0],
    ];
    let scales: [[f32; 3]; 3] = [[1.0; 3], [1.0; 3], [2.0, 2.0, 2.0]];
    let rotations_i16: Vec<[i16; 4]> = rotations
        .iter()
        .map(|q| q.map(|c| (c * 32767.0).round() as i16))
        .collect();
    let expected = |q: [f32; 4], i: usize| -> Vec<[f32; 3]> {
        let placement = Mat4::from_scale_rotation_translation(
            scales[i].into(),
            Quat::from_array(q),
            translations[i].into(),
        );
        let node = Mat4::from_translation(Vec3::new(10.0, 0.0, 0.0));
        [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]
            .iter()
            .map(|&p| (node * placement).transform_point3(p.into()).into())
            .collect()
    };
    for sixteen_bit in [false, true] {
        let mut data = bytemuck::cast_slice::<_, u8>(&translations).to_vec();
        data.extend_from_slice(bytemuck::cast_slice(&scales));
        let (rotation_type, rotation_bytes) = if sixteen_bit {
            data.extend_from_slice(bytemuck::cast_slice(&rotations_i16));
            (r#""componentType": 5122, "normalized": true"#, 24)
        } else {
            data.extend_from_slice(bytemuck::cast_slice(&rotations));
            (r#""componentType": 5126"#, 48)
        };
        let views = format!(
            r#", {{"buffer": 0, "byteOffset": 0, "byteLength": 36}},
                {{"buffer": 0, "byteOffset": 36, "byteLength": 36}},
                {{"buffer": 0, "byteOffset": 72, "byteLength": {rotation_bytes}}}"#
        );
        let accessors = format!(
            r#", {{"bufferView": 1, "componentType": 5126, "count": 3, "type": "VEC3"}},
                {{"bufferView": 2, "componentType": 5126, "count": 3, "type": "VEC3"}},
                {{"bufferView": 3, {rotation_type}, "count": 3, "type": "VEC4"}}"#
        );
        let attributes = r#"{"TRANSLATION": 1, "SCALE": 2, "ROTATION": 3}"#;
        let file = TempFile::new(
            "instanced.glb",
            instanced_glb(1, attributes, &accessors, &views, &data),
        );
        let mesh = Mesh::load(&file.0).unwrap();
        assert_eq!(mesh.triangle_count(), 3, "one copy per instance");
        // Animated through a rig, each copy's rest vertices are placed within the node,
        // whose own transform the rig poses.
        let rest = canopy::scene::rig::Rig::load(&file.0).unwrap().rest.mesh;
        let unmoved = Mat4::from_translation(Vec3::new(-10.0, 0.0, 0.0));
        let rest_of = |i: usize| -> Vec<[f32; 3]> {
            rest.triangles[i]
                .iter()
                .map(|&v| rest.positions[v as usize])
                .collect()
        };
        for i in 0..3 {
            let got: Vec<[f32; 3]> = mesh.triangles[i]
                .iter()
                .map(|&v| mesh.positions[v as usize])
                .collect();
            let q = if sixteen_bit {
                rotations_i16[i].map(|c| c as f32 / 32767.0)
            } else {
                rotations[i]
            };
            let in_node: Vec<[f32; 3]> = expected(q, i)
                .iter()
                .map(|&p| unmoved.transform_point3(p.into()).into())
                .collect();
            for (got, expected) in [(got, expected(q, i)), (rest_of(i), in_node)] {
                for (g, e) in got.iter().zip(&expected) {
                    for k in 0..3 {
                        assert!(
                            (g[k] - e[k]).abs() < 1e-4,
                            "16-bit {sixteen_bit}, instance {i}: {got:?}, expected {expected:?}"
                        );
                    }
                }
            }
        }
    }
}

/// Malformed `EXT_mesh_gpu_instancing`: each an error naming the node and what is wrong; a
/// node of too many instances, and a file placing more triangles than canopy reads, are
/// refused before any copy is made.
#[test]
fn malformed_gpu_instancing_is_named() {
    let translations: [[f32; 3]; 2] = [[0.0; 3], [f32::NAN, 0.0, 0.0]];
    let two = bytemuck::cast_slice::<_, u8>(&translations).to_vec();
    let view = r#", {"buffer": 0, "byteOffset": 0, "byteLength": 24}"#;
    let vec3 = r#", {"bufferView": 1, "componentType": 5126, "count": 2, "type": "VEC3"}"#;
    let one_vec3 = r#", {"bufferView": 1, "componentType": 5126, "count": 1, "type": "VEC3"}"#;
    let two_vec3 = r#", {"bufferView": 1, "componentType": 5126, "count": 1, "type": "VEC3"},
        {"bufferView": 1, "componentType": 5126, "count": 2, "type": "VEC3"}"#;
    let scalar = r#", {"bufferView": 1, "componentType": 5126, "count": 2, "type": "SCALAR"}"#;
    let cases: [(&str, &str, &str); 5] = [
        (
            r#"{"TRANSLATION": 1}"#,
            vec3,
            "instance 1: translation [NaN, 0.0, 0.0]",
        ),
        (r#"{"SCALE": 7}"#, vec3, "SCALE names no accessor (7)"),
        (
            r#"{"TRANSLATION": 1}"#,
            scalar,
            "TRANSLATION is F32 Scalar, expected Vec3",
        ),
        (
            r#"{"TRANSLATION": 1, "SCALE": 2}"#,
            two_vec3,
            "different counts of instances ([1, 2])",
        ),
        (
            r#"{}"#,
            one_vec3,
            "names none of TRANSLATION, ROTATION and SCALE",
        ),
    ];
    for (attributes, accessors, expected) in cases {
        let file = TempFile::new(
            "bad.glb",
            instanced_glb(1, attributes, accessors, view, &two),
        );
        let error = Mesh::load(&file.0).unwrap_err().to_string();
        assert!(
            error.contains("node 0 EXT_mesh_gpu_instancing") && error.contains(expected),
            "{error:?} should say {expected:?}"
        );
    }
    // Zeros for 2^20 + 1 instances of one triangle, then for 2^20 instances of 300 triangles:
    // 315 million triangles placed.
    let many = |count: usize, triangles: usize| {
        let data = vec![0u8; 12 * count];
        let view = format!(
            r#", {{"buffer": 0, "byteOffset": 0, "byteLength": {}}}"#,
            12 * count
        );
        let accessor = format!(
            r#", {{"bufferView": 1, "componentType": 5126, "count": {count}, "type": "VEC3"}}"#
        );
        TempFile::new(
            "many.glb",
            instanced_glb(triangles, r#"{"TRANSLATION": 1}"#, &accessor, &view, &data),
        )
    };
    let error = Mesh::load(&many((1 << 20) + 1, 1).0)
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("holds 1048577 instances, more than canopy reads (1048576)"),
        "{error}"
    );
    let error = Mesh::load(&many(1 << 20, 300).0).unwrap_err().to_string();
    assert!(
        error.contains("node 0")
            && error.contains("make 314572800 triangles, more than canopy reads (268435456)"),
        "{error}"
    );
}
