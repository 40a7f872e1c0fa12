//! `canopy bench dispatch` at tiny sizes under the validation layer: the chains record and run
//! the dispatches, barriers and workgroups they say, the copies are checked and timed, and
//! the LBVH's node reads come out of the same run; the command writes them as JSON.

use crate::common;

use canopy::bench::dispatch::{DispatchConfig, run};
use canopy::bench::{RayKind, Timing};
use common::files::{TempFolder, canopy};
use common::{assert_valid, folding_context};

fn timed(time: &Timing, repeats: u32) {
    assert_eq!(time.runs, repeats, "{time:?}");
    assert!(
        time.median_ms > 0.0 && time.median_ms.is_finite(),
        "{time:?}"
    );
}

/// Chains of 7 dispatches, the wide ones of 100 workgroups (folded into 2D grids by the
/// 64-per-dimension limit the context pretends), a 1 MiB copy, an LBVH over a few thousand
/// triangles traced by 12x12 camera rays.
#[test]
fn dispatch_chains_copies_and_node_reads_are_measured_and_counted() {
    let ctx = folding_context();
    let config = DispatchConfig {
        chain: 7,
        wide_groups: 100,
        copy_bytes: (1 << 20) + 8,
        repeats: 2,
        triangles: 1000,
        ray_side: 12,
    };
    let mut parts = 0;
    let report = run(&ctx, &config, |_| parts += 1).unwrap();
    assert_valid(&ctx);
    assert_eq!(parts, 6, "the copy, four chains, the node reads");

    // The copy: rounded down to 16 bytes, vkCmdCopyBuffer and both compute copies timed.
    let copy = &report.copy;
    assert_eq!(copy.bytes, 1 << 20);
    timed(&copy.cmd_copy, 2);
    assert!(copy.cmd_copy_bytes_per_s > 0.0);
    let per_invocation: Vec<u32> = copy
        .compute
        .iter()
        .map(|c| c.bytes_per_invocation)
        .collect();
    assert_eq!(per_invocation, [16, 64]);
    for c in &copy.compute {
        timed(&c.time, 2);
        let expected = 2.0 * copy.bytes as f64 / (c.time.median_ms * 1e-3);
        assert!((c.bytes_per_s - expected).abs() <= 1e-9 * expected, "{c:?}");
    }

    // The chains: one workgroup then the wide ones, each with and without barriers, every
    // dispatch recorded and run.
    let shapes: Vec<(u32, bool)> = report
        .chains
        .iter()
        .map(|c| (c.groups, c.barriers))
        .collect();
    assert_eq!(shapes, [(1, true), (1, false), (100, true), (100, false)]);
    for chain in &report.chains {
        assert_eq!(chain.length, 7);
        assert_eq!(chain.work.dispatches, 7, "{chain:?}");
        assert_eq!(chain.work.indirect_dispatches, 0, "{chain:?}");
        assert_eq!(chain.work.dispatches_with_work, Some(7), "{chain:?}");
        assert_eq!(chain.work.barriers, if chain.barriers { 7 } else { 0 });
        assert_eq!(chain.workgroups_run, 7 * chain.groups as u64, "{chain:?}");
        timed(&chain.time, 2);
        assert!((chain.total_us - chain.time.median_ms * 1e3).abs() < 1e-9);
        assert!((chain.per_dispatch_us * 7.0 - chain.total_us).abs() < 1e-9);
    }

    // The node reads: camera, shadow and reflected rays, each timed, with the bytes of the
    // nodes they visit per second set against the 16-byte compute copy.
    let reads = report
        .node_reads
        .as_ref()
        .expect("triangles were asked for");
    assert!(reads.triangles > 1000 && reads.tree_bytes > 0, "{reads:?}");
    assert!(
        reads.node_bytes > 0 && reads.primitive_bytes > 0,
        "{reads:?}"
    );
    let kinds: Vec<RayKind> = reads.rays.iter().map(|r| r.rays).collect();
    assert_eq!(
        kinds,
        [RayKind::Camera, RayKind::Shadow, RayKind::Reflected]
    );
    assert_eq!(reads.rays[0].count, 144);
    for row in &reads.rays {
        timed(&row.time, 2);
        assert!(row.nodes_per_ray >= 1.0, "{row:?}");
        let rays_per_s = row.count as f64 / (row.time.median_ms * 1e-3);
        assert!((row.rays_per_s - rays_per_s).abs() <= 1e-9 * rays_per_s);
        let nodes = row.nodes_per_ray * reads.node_bytes as f64 * rays_per_s;
        assert!(
            (row.node_bytes_per_s - nodes).abs() <= 1e-9 * nodes,
            "{row:?}"
        );
        assert!(row.fetched_bytes_per_s >= row.node_bytes_per_s);
        let fraction = nodes / copy.compute[0].bytes_per_s;
        assert!((row.node_fraction_of_copy - fraction).abs() <= 1e-9 * fraction);
    }
}

/// The command prints every part and writes the report as JSON; 0 triangles skips the
/// traversal, and an empty chain is refused.
#[test]
fn bench_dispatch_writes_json() {
    let folder = TempFolder::new("dispatch");
    let json = folder.0.join("dispatch.json");
    let output = canopy(&[
        "bench",
        "dispatch",
        "--chain",
        "5",
        "--wide-groups",
        "3",
        "--copy-mib",
        "1",
        "--repeats",
        "1",
        "--triangles",
        "0",
        "--json",
        json.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("vkCmdCopyBuffer"), "{stdout}");
    assert!(
        stdout.contains("5 empty dispatches x 3 workgroups, with barriers"),
        "{stdout}"
    );
    assert!(!stdout.contains("node reads"), "{stdout}");
    let value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(value["command"], "bench dispatch");
    let chains = value["reports"]["chains"].as_array().unwrap();
    assert_eq!(chains.len(), 4);
    assert_eq!(chains[2]["workgroups_run"], 15);
    assert!(chains[0]["per_dispatch_us"].as_f64().unwrap() > 0.0);
    assert!(value["reports"]["node_reads"].is_null());

    let refused = canopy(&["bench", "dispatch", "--chain", "0"]);
    assert_eq!(refused.status.code(), Some(2));
}
