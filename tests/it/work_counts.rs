//! Work counters of a recording (`WorkCensus`): dispatches recorded, dispatches that did work
//! (indirect ones read back from the GPU) and barriers, which later changes are judged by when
//! no GPU timer is at hand.

use crate::common;

use canopy::accel::kdtree::build::{KdBuildParams, KdTreeBuilder};
use canopy::bench::harness::count_work;
use canopy::geom::ray::{Hit, Query, Ray};
use canopy::trace::Tracer;
use canopy::vk::{Count, Slice};
use canopy::vk::{Instruments, MemoryKind, WorkCensus};
use common::{DeviceMesh, Rng, assert_valid, context, random_mesh};

#[test]
fn an_indirect_dispatch_of_nothing_is_counted_as_recorded_but_idle() {
    let ctx = context();
    let tracer = Tracer::new(&ctx).unwrap();
    let mesh = random_mesh(&mut Rng::new(40), 100, 3.0, 0.5);
    let tree = canopy::accel::kdtree::cpu::build_sah_kdtree(
        &mesh.positions,
        &mesh.triangles,
        &Default::default(),
    );
    let tree = canopy::accel::kdtree::KdTreeGpu::upload(&ctx, &tree).unwrap();
    let device = DeviceMesh::new(&ctx, &mesh);
    let rays = ctx
        .create_buffer_with("rays", &[Ray::default(); 4])
        .unwrap();
    let hits = ctx
        .create_buffer("hits", 4 * size_of::<Hit>() as u64, MemoryKind::Device)
        .unwrap();
    let mut census = WorkCensus::new(&ctx, 16).unwrap();
    for (rays_traced, with_work) in [(0u32, 1u32), (3, 2)] {
        let count = ctx.create_buffer_with("count", &[rays_traced]).unwrap();
        let instruments = Instruments {
            census: Some(&mut census),
            ..Default::default()
        };
        ctx.submit_instrumented(instruments, |rec| {
            let input = device.input();
            let structure = tree.over(&input);
            let count = Count::Device {
                buffer: &count,
                offset: 0,
                max: 4,
            };
            tracer.record(
                rec,
                &structure,
                Query::Closest,
                Slice::whole(&rays),
                Slice::whole(&hits),
                count,
            )
        })
        .unwrap()
        .wait()
        .unwrap();
        let counts = census.counts();
        // The one-invocation kernel sizing the trace, then the trace itself.
        assert_eq!(counts.dispatches, 2, "{counts:?}");
        assert_eq!(counts.indirect_dispatches, 1, "{counts:?}");
        assert_eq!(counts.dispatches_with_work, Some(with_work), "{counts:?}");
        assert_eq!(counts.barriers, 1, "{counts:?}");
    }
    assert_valid(&ctx);
}

#[test]
fn a_kd_tree_build_counts_its_recorded_levels_and_the_ones_that_ran() {
    let ctx = context();
    let mesh = random_mesh(&mut Rng::new(41), 5000, 3.0, 0.3);
    let n = mesh.triangle_count() as u32;
    let device = DeviceMesh::new(&ctx, &mesh);
    let input = device.input();
    let builder = KdTreeBuilder::new(&ctx, KdBuildParams::default(), n).unwrap();
    let tree = builder.allocate_tree(&ctx).unwrap();
    let status = builder.status_readback(&ctx).unwrap();
    let counts = count_work(&ctx, |rec| builder.record(rec, &input, &tree, &status)).unwrap();
    assert!(status.overflow().is_none());
    assert_eq!(counts.dispatches, builder.dispatches(n), "{counts:?}");
    let with_work = counts.dispatches_with_work.unwrap();
    // Levels past the tree's depth are recorded but dispatch nothing; the first levels of
    // both stages and the output always run.
    assert!(with_work < counts.dispatches, "{counts:?}");
    assert!(with_work >= 1 + 4 + 1 + 3, "{counts:?}");
    assert!(counts.barriers >= counts.dispatches, "{counts:?}");
    assert_valid(&ctx);
}

#[test]
fn device_memory_is_counted_live_and_at_its_peak() {
    let ctx = context();
    let before = ctx.device_memory();
    ctx.reset_peak_memory();
    let a = ctx.create_buffer("a", 1 << 20, MemoryKind::Device).unwrap();
    let b = ctx.create_buffer("b", 3 << 20, MemoryKind::Device).unwrap();
    let _host = ctx
        .create_buffer("host", 1 << 20, MemoryKind::Readback)
        .unwrap();
    assert_eq!(ctx.device_memory().live, before.live + (4 << 20));
    drop(b);
    drop(a);
    let after = ctx.device_memory();
    assert_eq!(after.live, before.live);
    assert_eq!(after.peak, before.live + (4 << 20));
}

/// The LBVH build records bounds, Morton codes, the sort's three dispatches per pass (four
/// passes of 8 bits for 30-bit codes, eight for 63-bit ones) and the climb, with one barrier
/// after each and no fill between the sort's passes.
#[test]
fn an_lbvh_build_sorts_its_codes_without_fills() {
    use canopy::accel::bvh::Bvh;
    use canopy::accel::bvh::lbvh::{LbvhBuilder, LbvhParams};
    use canopy::geom::morton::MortonBits;
    let ctx = context();
    let mesh = random_mesh(&mut Rng::new(42), 20_000, 3.0, 0.3);
    let n = mesh.triangle_count() as u32;
    let device = DeviceMesh::new(&ctx, &mesh);
    let input = device.input();
    for (morton_bits, passes) in [(MortonBits::Bits30, 4), (MortonBits::Bits63, 8)] {
        let params = LbvhParams {
            morton_bits,
            ..Default::default()
        };
        let builder = LbvhBuilder::new(&ctx, params, n).unwrap();
        let mut bvh = Bvh::new(&ctx, n).unwrap();
        let counts = count_work(&ctx, |rec| builder.record(rec, &input, &mut bvh)).unwrap();
        let dispatches = 3 + 3 * passes;
        assert_eq!(counts.dispatches, dispatches, "{morton_bits:?}: {counts:?}");
        assert_eq!(counts.dispatches_with_work, Some(dispatches), "{counts:?}");
        // One barrier after each dispatch (the scan's own one after each upsweep).
        assert_eq!(counts.barriers, dispatches, "{counts:?}");
    }
    assert_valid(&ctx);
}
