//! The driver's BVH builder through `VK_KHR_acceleration_structure`: absent devices report it
//! as not available; present ones build a small mesh, timed, without validation errors, and
//! its ray-tracing pipeline finds the hits brute force finds.
//!
//! The tests take turns ([`one_at_a_time`]): on an H100 (driver 580, validation layer
//! 1.3.239) two of them building and tracing on two devices at once hung in 3 of 4 runs,
//! which never happened one at a time (12 runs) nor within one device (the benchmarks).

use crate::common;

use canopy::accel::native::NativeBlasBuilder;
use canopy::vk::{Error, MemoryKind, Profiler, Recorder, raw};
use common::{assert_valid, context};

/// Holds the driver's acceleration-structure work of this binary to one test at a time.
fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static DRIVER: std::sync::Mutex<()> = std::sync::Mutex::new(());
    DRIVER
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A `side` x `side` grid of quads in the z = 0 plane, two triangles each.
fn grid(side: u32) -> (Vec<[f32; 3]>, Vec<[u32; 3]>) {
    let row = side + 1;
    let positions = (0..row * row)
        .map(|i| [(i % row) as f32, (i / row) as f32, 0.0])
        .collect();
    let triangles = (0..side * side)
        .flat_map(|q| {
            let v = q / side * row + q % side;
            [[v, v + 1, v + row + 1], [v, v + row + 1, v + row]]
        })
        .collect();
    (positions, triangles)
}

#[test]
fn absent_extension_is_reported_as_not_available() {
    let _turn = one_at_a_time();
    let ctx = context();
    if ctx.caps().acceleration_structure {
        eprintln!(
            "{} has VK_KHR_acceleration_structure: skipped",
            ctx.caps().name
        );
        return;
    }
    assert!(NativeBlasBuilder::new(&ctx, 2, 4).unwrap().is_none());
    match ctx.create_buffer("blas", 256, MemoryKind::AccelerationStructure) {
        Err(Error::MissingFeature { what, .. }) => {
            assert!(what.contains("acceleration_structure"), "{what}")
        }
        other => panic!("expected a missing feature, got {other:?}"),
    }
    assert_valid(&ctx);
}

#[test]
fn builds_a_small_mesh_without_validation_errors() {
    let _turn = one_at_a_time();
    let ctx = context();
    if !ctx.caps().acceleration_structure {
        eprintln!(
            "{} lacks VK_KHR_acceleration_structure: skipped",
            ctx.caps().name
        );
        return;
    }
    let (positions, triangles) = grid(16);
    let (vertex_count, triangle_count) = (positions.len() as u32, triangles.len() as u32);
    let builder = NativeBlasBuilder::new(&ctx, triangle_count, vertex_count)
        .unwrap()
        .expect("the device has the extension");
    assert!(builder.bytes() > 0);
    let positions = ctx.create_buffer_with("positions", &positions).unwrap();
    let triangles = ctx.create_buffer_with("triangles", &triangles).unwrap();

    let mut profiler = Profiler::new(&ctx, 4).unwrap();
    ctx.submit_profiled(&mut profiler, |rec| {
        // A full build, then a rebuild over part of the mesh into the same structure.
        builder.record(rec, &positions, vertex_count, &triangles, triangle_count)?;
        builder.record(
            rec,
            &positions,
            vertex_count,
            &triangles,
            triangle_count / 2,
        )
    })
    .unwrap();
    let ms = profiler.stage_ms("native blas build").unwrap();
    assert!(ms.is_some_and(|ms| ms >= 0.0), "{ms:?}");

    // Beyond the capacity it was sized for is an error, found before anything is recorded.
    let mut rec = Recorder::new(&ctx, raw::CommandBuffer::null());
    let too_many = builder.record(
        &mut rec,
        &positions,
        vertex_count,
        &triangles,
        triangle_count + 1,
    );
    assert!(
        matches!(too_many, Err(Error::InvalidInput(_))),
        "{too_many:?}"
    );
    assert_valid(&ctx);
}

#[test]
fn the_driver_s_ray_tracing_matches_brute_force() {
    use canopy::accel::native::NativeTracer;
    use canopy::geom::ray::{Hit, Query};
    use canopy::vk::Slice;
    let _turn = one_at_a_time();
    let ctx = context();
    let mesh = common::random_mesh(&mut common::Rng::new(61), 2000, 2.0, 0.3);
    let (n, vertices) = (mesh.triangle_count() as u32, mesh.vertex_count() as u32);
    let Some(builder) = NativeBlasBuilder::new(&ctx, n, vertices).unwrap() else {
        eprintln!(
            "{} lacks VK_KHR_acceleration_structure: skipped",
            ctx.caps().name
        );
        return;
    };
    let Some(tracer) = NativeTracer::new(&ctx, &builder).unwrap() else {
        assert!(!ctx.caps().ray_tracing_pipeline);
        eprintln!("{} lacks a ray-tracing pipeline: skipped", ctx.caps().name);
        return;
    };
    let device = common::DeviceMesh::new(&ctx, &mesh);
    let rays = common::random_rays(&mut common::Rng::new(62), &mesh, 3000);
    let ray_buffer = ctx.create_buffer_with("rays", &rays).unwrap();
    let bytes = rays.len() as u64 * 16;
    let [closest, any] = [Query::Closest, Query::Any].map(|query| {
        let hits = ctx
            .create_buffer("hits", bytes, MemoryKind::Device)
            .unwrap();
        ctx.submit_and_wait(|rec| {
            builder.record(rec, &device.positions, vertices, &device.triangles, n)?;
            tracer.record_top_level(rec);
            let (r, h) = (Slice::whole(&ray_buffer), Slice::whole(&hits));
            tracer.record_trace(rec, query, r, h, rays.len() as u32)
        })
        .unwrap();
        ctx.download::<Hit>(&hits, 0, rays.len()).unwrap()
    });
    common::assert_hits_match_brute_force(&mesh, &rays, &closest, &any, "driver ray tracing");
    assert_valid(&ctx);
}
