//! `cargo bench --bench cpu`: criterion benchmarks of the CPU code that matters to a user's
//! wall clock: the mesh loaders (OBJ, PLY) and the CPU reference builders (LBVH, full-sweep
//! SAH BVH, full-SAH kd-tree, octree) over the meshes in tests/data.

use canopy::accel::bvh::cpu::build_lbvh;
use canopy::accel::bvh::sah::build_sah_bvh;
use canopy::accel::kdtree::KdParams;
use canopy::accel::kdtree::cpu::build_sah_kdtree;
use canopy::accel::octree::cpu::build_octree;
use canopy::geom::MortonBits;
use canopy::scene::Mesh;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use std::path::PathBuf;

fn data(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(path)
}

fn loaders(c: &mut Criterion) {
    let mut group = c.benchmark_group("load");
    for (name, path) in [
        ("obj capsule", "meshes/capsule.obj"),
        ("obj bunny_small", "meshes/bunny_small.obj"),
        ("ply bun090 points", "points/bun090.ply"),
    ] {
        let path = data(path);
        let bytes = std::fs::metadata(&path)
            .expect("tests/data is present")
            .len();
        group.throughput(Throughput::Bytes(bytes));
        if name.contains("points") {
            group.bench_function(name, |b| b.iter(|| Mesh::load_points(black_box(&path))));
        } else {
            group.bench_function(name, |b| b.iter(|| Mesh::load(black_box(&path))));
        }
    }
    group.finish();
}

fn builders(c: &mut Criterion) {
    let mesh = Mesh::load(&data("meshes/bunny_small.obj")).expect("tests/data is present");
    let (positions, triangles) = (&mesh.positions, &mesh.triangles);
    let mut group = c.benchmark_group("cpu build bunny_small");
    group.throughput(Throughput::Elements(triangles.len() as u64));
    group.sample_size(10);
    group.bench_function("lbvh", |b| {
        b.iter(|| build_lbvh(black_box(positions), triangles, MortonBits::Bits30))
    });
    group.bench_function("sah bvh", |b| {
        b.iter(|| build_sah_bvh(black_box(positions), triangles))
    });
    group.bench_function("sah kd-tree", |b| {
        b.iter(|| build_sah_kdtree(black_box(positions), triangles, &KdParams::default()))
    });
    group.bench_function("octree (vertices)", |b| {
        b.iter(|| build_octree(black_box(positions), 10))
    });
    group.finish();
}

criterion_group!(benches, loaders, builders);
criterion_main!(benches);
