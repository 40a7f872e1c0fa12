//! The `canopy build` and `canopy bench` commands on the meshes in tests/data: every structure
//! over a mesh file, the work counters printed and written as JSON, and clear errors for a
//! missing file and a structure rays cannot go through.

use crate::common;

use common::files::{TempFolder, canopy};
use serde_json::Value;
use std::path::PathBuf;
use std::process::Output;

fn data(path: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(path)
        .display()
        .to_string()
}

fn stdout(output: &Output) -> String {
    assert!(
        output.status.success(),
        "canopy failed: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// A path for a JSON file `name` in a temporary folder of its own (removed when the folder is
/// dropped).
fn json_file(name: &str) -> (TempFolder, PathBuf) {
    let folder = TempFolder::new(name);
    let path = folder.0.join(name);
    (folder, path)
}

fn read_json(path: &PathBuf) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("the JSON was written"))
        .expect("valid JSON")
}

fn u64_at(value: &Value, pointer: &str) -> u64 {
    value
        .pointer(pointer)
        .and_then(Value::as_u64)
        .unwrap_or_else(|| panic!("{pointer} in {value}"))
}

fn f64_at(value: &Value, pointer: &str) -> f64 {
    value
        .pointer(pointer)
        .and_then(Value::as_f64)
        .unwrap_or_else(|| panic!("{pointer} in {value}"))
}

#[test]
fn build_makes_a_kd_tree_of_a_mesh_file() {
    let bunny = data("meshes/bunny_small.obj");
    let out = stdout(&canopy(&[
        "build",
        "--structure",
        "kdtree",
        &bunny,
        "--rays",
        "32",
    ]));
    assert!(
        out.contains("kdtree over bunny_small.obj (3674 triangles"),
        "{out}"
    );
    for line in [
        "  work ",
        "  memory ",
        "  tree ",
        "  rays ",
        "  reference ",
        "work counters",
    ] {
        assert!(out.contains(line), "no '{line}' in {out}");
    }
}

#[test]
fn bench_kdtree_of_a_mesh_writes_the_counters_of_every_structure() {
    let (_folder, path) = json_file("bench_kdtree.json");
    let bunny = data("meshes/bunny_small.obj");
    let out = stdout(&canopy(&[
        "bench",
        "kdtree",
        "--mesh",
        &bunny,
        "--structure",
        "lbvh,kdtree,octree",
        "--repeats",
        "1",
        "--rays",
        "32",
        "--json",
        path.to_str().unwrap(),
    ]));
    assert!(out.contains("wrote "), "{out}");
    let json = read_json(&path);
    assert_eq!(json["command"], "bench kdtree");
    assert!(json["device"]["name"].is_string());
    let reports = json["reports"].as_array().unwrap();
    let names: Vec<&str> = reports
        .iter()
        .map(|r| r["structure"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["lbvh", "kdtree", "octree"]);
    for r in reports {
        assert_eq!(r["mesh"], "bunny_small.obj");
        let dispatches = u64_at(r, "/work/dispatches");
        let with_work = u64_at(r, "/work/dispatches_with_work");
        assert!(0 < with_work && with_work <= dispatches, "{r}");
        assert!(u64_at(r, "/work/barriers") > 0);
        assert!(u64_at(r, "/memory/tree_bytes") > 0);
        assert!(u64_at(r, "/memory/peak_bytes") >= u64_at(r, "/memory/tree_bytes"));
        assert!(u64_at(r, "/tree/depth") > 0);
        assert!(f64_at(r, "/build/median_ms") > 0.0);
        if r["structure"] == "octree" {
            assert_eq!(r["traversal"].as_array().unwrap().len(), 0);
            continue;
        }
        assert!(f64_at(r, "/tree/sah_cost") > 1.0);
        let traversal = r["traversal"].as_array().unwrap();
        let kinds: Vec<&str> = traversal
            .iter()
            .map(|t| t["rays"].as_str().unwrap())
            .collect();
        assert_eq!(kinds, ["camera", "shadow", "reflected"]);
        for t in traversal {
            assert!(u64_at(t, "/work/rays") > 0, "{t}");
            assert!(f64_at(t, "/work/mean_nodes") > 0.0, "{t}");
            assert!(u64_at(t, "/work/max_nodes") as f64 >= f64_at(t, "/work/mean_nodes"));
            assert!(f64_at(t, "/work/mean_primitives") > 0.0, "{t}");
        }
        assert!(f64_at(r, "/reference/sah_ratio") > 0.9);
    }
    assert_eq!(u64_at(&reports[2], "/primitives"), 1839);
}

#[test]
fn bench_render_of_a_mesh_writes_the_work_of_a_frame() {
    let (_folder, path) = json_file("bench_render.json");
    let torus = data("meshes/torus.obj");
    stdout(&canopy(&[
        "bench",
        "render",
        "--mesh",
        &torus,
        "--size",
        "32x24",
        "--repeats",
        "1",
        "--structure",
        "kdtree",
        "--json",
        path.to_str().unwrap(),
    ]));
    let json = read_json(&path);
    let frame = &json["reports"][0];
    assert_eq!(frame["structure"], "kdtree");
    assert_eq!(u64_at(frame, "/triangles"), 968 + 2);
    assert!(u64_at(frame, "/work/dispatches_with_work") <= u64_at(frame, "/work/dispatches"));
    assert_eq!(u64_at(frame, "/camera_rays/0/work/rays"), 32 * 24);
    assert!(f64_at(frame, "/camera_rays/0/work/mean_nodes") > 0.0);
}

#[test]
fn an_octree_of_a_point_cloud_is_built_and_the_lbvh_refused() {
    let scan = data("points/bun090.ply");
    let out = stdout(&canopy(&["build", "--structure", "octree", &scan]));
    assert!(out.contains("octree over bun090.ply (0 triangles"), "{out}");
    let refused = canopy(&["build", "--structure", "lbvh", &scan]);
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("bun090.ply has no triangles: the lbvh is built over triangles"),
        "{stderr}"
    );
}

#[test]
fn bvh_quality_chooses_the_tree_and_is_refused_where_no_bvh_is_built() {
    let mesh = data("meshes/gear.obj");
    let [fast, high, best] = ["fast", "high", "best"].map(|quality| {
        let out = stdout(&canopy(&[
            "build",
            "--structure",
            "lbvh",
            "--bvh-quality",
            quality,
            &mesh,
        ]));
        assert!(
            out.contains(&format!("lbvh, {quality} binary BVH over gear.obj")),
            "{out}"
        );
        let sah = out.split("SAH cost ").nth(1).expect("an SAH cost");
        sah.split_whitespace()
            .next()
            .unwrap()
            .parse::<f64>()
            .unwrap()
    });
    for (name, better) in [("high", high), ("best", best)] {
        assert!(
            better < 0.95 * fast,
            "SAH cost {better} ({name}) against {fast} (fast)"
        );
    }
    let refused = canopy(&[
        "build",
        "--structure",
        "kdtree",
        "--bvh-quality",
        "high",
        &mesh,
    ]);
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("--bvh-quality"), "{stderr}");
}

/// The camera rays' nodes and bytes per ray on the `rays` line of a `build` report.
fn camera_rays(out: &str) -> (f64, f64) {
    let line = out
        .lines()
        .find(|l| l.contains("camera") && l.contains("nodes/ray"))
        .unwrap_or_else(|| panic!("no camera rays in {out}"));
    let after = |key: &str| -> f64 {
        let rest = line.split(key).nth(1).expect(key);
        let number = rest.split_whitespace().next().unwrap();
        number.trim_end_matches(';').parse().unwrap()
    };
    (after("nodes/ray"), after("bytes/ray"))
}

#[test]
fn bvh_layout_chooses_how_rays_read_the_tree_and_is_refused_where_no_bvh_is_built() {
    let mesh = data("meshes/gear.obj");
    let [binary, wide] = ["binary", "wide"].map(|layout| {
        let out = stdout(&canopy(&[
            "build",
            "--structure",
            "lbvh",
            "--bvh-layout",
            layout,
            &mesh,
        ]));
        assert!(
            out.contains(&format!("lbvh, fast {layout} BVH over gear.obj")),
            "{out}"
        );
        assert!(out.contains(", wide ") == (layout == "wide"), "{out}");
        camera_rays(&out)
    });
    // The same rays read under half the nodes and fewer bytes (BENCHMARKS.md has the figures).
    assert!(
        wide.0 < 0.5 * binary.0,
        "nodes per ray {wide:?} against {binary:?}"
    );
    assert!(
        wide.1 < binary.1,
        "bytes per ray {wide:?} against {binary:?}"
    );
    let refused = canopy(&[
        "build",
        "--structure",
        "kdtree",
        "--bvh-layout",
        "wide",
        &mesh,
    ]);
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("--bvh-layout"), "{stderr}");
}

#[test]
fn a_missing_mesh_file_is_a_clear_error() {
    for args in [
        &["build", "--structure", "kdtree", "no/such/mesh.obj"][..],
        &[
            "bench",
            "kdtree",
            "--mesh",
            "no/such/mesh.obj",
            "--repeats",
            "1",
        ],
        &[
            "bench",
            "lbvh",
            "--mesh",
            "no/such/mesh.obj",
            "--repeats",
            "1",
        ],
    ] {
        let output = canopy(args);
        assert_eq!(output.status.code(), Some(2), "bad input: {args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.starts_with("error: no/such/mesh.obj: No such file"),
            "{args:?}: {stderr}"
        );
    }
    let output = canopy(&["build"]);
    assert_eq!(output.status.code(), Some(2));
    let output = canopy(&["bench", "render", "--structure", "octree"]);
    assert_eq!(output.status.code(), Some(2), "clap refuses it");
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("rays cannot be traced through an octree")
    );
}

/// `bench prims --max-log2` bounds every size measured, the targets' too, unless a target is
/// named.
#[test]
fn bench_prims_keeps_within_max_log2() {
    let out = stdout(&canopy(&[
        "bench",
        "prims",
        "--max-log2",
        "12",
        "--repeats",
        "1",
        "--only",
        "sort",
    ]));
    assert!(out.contains("2^12"), "{out}");
    for larger in ["2^14", "2^25", "2^28"] {
        assert!(!out.contains(larger), "{larger} measured: {out}");
    }
    let named = stdout(&canopy(&[
        "bench",
        "prims",
        "--max-log2",
        "10",
        "--sort-target-log2",
        "11",
        "--repeats",
        "1",
        "--only",
        "sort",
    ]));
    assert!(named.contains("sort 2^11 u32 pairs"), "{named}");
}

/// Options the command would ignore are refused (exit 2) rather than silently dropped.
#[test]
fn options_that_would_be_ignored_are_refused() {
    let mesh = data("meshes/torus.obj");
    for args in [
        &["render", "--mesh", &mesh, "--triangles", "5000"][..],
        &["render", "--no-write", "--out", "elsewhere"],
        &["render", "--structure", "kdtree", "--morton-bits", "63"],
        &[
            "build",
            "--structure",
            "kdtree",
            "--morton-bits",
            "63",
            &mesh,
        ],
        &["bench", "kdtree", "--morton-bits", "63", "--mesh", &mesh],
    ] {
        let output = canopy(args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains("cannot be used with") || stderr.contains("uses none"),
            "{args:?}: {stderr}"
        );
    }
}

#[test]
fn bench_knn_measures_builds_and_queries() {
    let (_folder, json) = json_file("knn");
    let out = stdout(&canopy(&[
        "bench",
        "knn",
        "--points",
        "3000",
        "--k",
        "1,16",
        "--distribution",
        "surface",
        "--repeats",
        "1",
        "--sampled",
        "8",
        "--json",
        json.to_str().unwrap(),
    ]));
    assert!(out.contains("surface 3000 points: build"), "{out}");
    let report = read_json(&json);
    let queries = &report["reports"][0]["queries"];
    assert_eq!(queries[1]["k"], 16);
    let final_ratio = queries[1]["final_over_rk"].as_f64().unwrap();
    assert!((1.0..1.1).contains(&final_ratio), "{final_ratio}");
    assert!(queries[0]["final_over_rk"].is_null());
    let refused = canopy(&["bench", "knn", "--k", "65"]);
    assert!(!refused.status.success());
}
