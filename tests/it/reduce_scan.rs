//! Reductions and prefix sums against the CPU reference at every checked size, direct and
//! indirect, plus the errors for empty and oversized input.

use crate::common;

use canopy::geom::aabb::Aabb;
use canopy::prims::cpu;
use canopy::prims::reduce::{Reduce, ReduceOp, ScalarType};
use canopy::prims::scan::{Scan, ScanKind, TILE};
use canopy::vk::{Context, MemoryKind};
use canopy::vk::{Count, Slice};
use common::{Rng, assert_valid, context, sizes};

fn run_reduce_u32(ctx: &Context, reduce: &Reduce, values: &[u32], indirect: bool) -> u32 {
    let input = ctx.create_buffer_with("input", values).unwrap();
    let output = ctx.create_buffer("output", 16, MemoryKind::Device).unwrap();
    let count_buf = ctx
        .create_buffer_with("count", &[values.len() as u32])
        .unwrap();
    ctx.submit_and_wait(|rec| {
        let count = if indirect {
            Count::Device {
                buffer: &count_buf,
                offset: 0,
                max: values.len() as u32,
            }
        } else {
            Count::Host(values.len() as u32)
        };
        reduce.record(
            rec,
            Slice::<u32>::whole(&input),
            Slice::whole(&output),
            count,
        )
    })
    .unwrap();
    ctx.download::<u32>(&output, 0, 1).unwrap()[0]
}

#[test]
fn reduce_u32_matches_cpu() {
    let ctx = context();
    let mut rng = Rng::new(1);
    for op in [ReduceOp::Add, ReduceOp::Min, ReduceOp::Max] {
        let reduce = Reduce::new(&ctx, op, ScalarType::U32, 1_000_000).unwrap();
        for n in sizes(&ctx, 4096) {
            let values = rng.u32s(n as usize);
            let expected = cpu::reduce_u32(&values, op);
            for indirect in [false, true] {
                let got = run_reduce_u32(&ctx, &reduce, &values, indirect);
                assert_eq!(got, expected, "{op:?} n={n} indirect={indirect}");
            }
        }
    }
    assert_valid(&ctx);
}

#[test]
fn reduce_f32_matches_cpu() {
    let ctx = context();
    let mut rng = Rng::new(2);
    for op in [ReduceOp::Add, ReduceOp::Min, ReduceOp::Max] {
        let reduce = Reduce::new(&ctx, op, ScalarType::F32, 1_000_000).unwrap();
        for n in sizes(&ctx, 4096) {
            let values: Vec<f32> = (0..n).map(|_| rng.f32_in(-1000.0, 1000.0)).collect();
            let expected = cpu::reduce_f32(&values, op);
            let bits: Vec<u32> = bytemuck::cast_slice(&values).to_vec();
            let got = f32::from_bits(run_reduce_u32(&ctx, &reduce, &bits, n % 2 == 0));
            let tolerance = if op == ReduceOp::Add {
                1e-3 * (n as f32).sqrt() * 1000.0 * 1e-3 + 1e-2
            } else {
                0.0
            };
            assert!(
                (got - expected).abs() <= tolerance,
                "{op:?} n={n}: {got} vs {expected}"
            );
        }
    }
    assert_valid(&ctx);
}

#[test]
fn reduce_aabb_matches_cpu() {
    let ctx = context();
    let mut rng = Rng::new(3);
    let reduce = Reduce::aabb_union(&ctx, 1_000_000).unwrap();
    for n in sizes(&ctx, 2048) {
        let boxes: Vec<Aabb> = (0..n)
            .map(|_| {
                let lo: [f32; 3] = std::array::from_fn(|_| rng.f32_in(-100.0, 100.0));
                Aabb::new(lo, std::array::from_fn(|i| lo[i] + rng.f32_in(0.0, 5.0)))
            })
            .collect();
        let input = ctx.create_buffer_with("boxes", &boxes).unwrap();
        let output = ctx.create_buffer("union", 32, MemoryKind::Device).unwrap();
        ctx.submit_and_wait(|rec| {
            reduce.record(
                rec,
                Slice::<Aabb>::whole(&input),
                Slice::whole(&output),
                Count::Host(n),
            )
        })
        .unwrap();
        let got = ctx.download::<Aabb>(&output, 0, 1).unwrap()[0];
        assert_eq!(got, cpu::aabb_union(&boxes), "n={n}");
    }
    assert_valid(&ctx);
}

#[test]
fn reduce_of_zero_device_count_is_identity() {
    let ctx = context();
    let reduce = Reduce::new(&ctx, ReduceOp::Min, ScalarType::U32, 100).unwrap();
    let input = ctx.create_buffer_with("input", &[5u32, 6]).unwrap();
    let output = ctx.create_buffer_with("output", &[7u32]).unwrap();
    let zero = ctx.create_buffer_with("count", &[0u32]).unwrap();
    ctx.submit_and_wait(|rec| {
        let count = Count::Device {
            buffer: &zero,
            offset: 0,
            max: 2,
        };
        reduce.record(
            rec,
            Slice::<u32>::whole(&input),
            Slice::whole(&output),
            count,
        )
    })
    .unwrap();
    assert_eq!(ctx.download::<u32>(&output, 0, 1).unwrap()[0], u32::MAX);
    assert_valid(&ctx);
}

fn run_scan(ctx: &Context, scan: &Scan, values: &[u32], indirect: bool) -> Vec<u32> {
    let input = ctx.create_buffer_with("input", values).unwrap();
    let output = ctx
        .create_buffer("output", 4 * values.len() as u64, MemoryKind::Device)
        .unwrap();
    let count_buf = ctx
        .create_buffer_with("count", &[values.len() as u32])
        .unwrap();
    let out = &output;
    ctx.submit_and_wait(|rec| {
        let count = if indirect {
            Count::Device {
                buffer: &count_buf,
                offset: 0,
                max: values.len() as u32,
            }
        } else {
            Count::Host(values.len() as u32)
        };
        scan.record(rec, Slice::whole(&input), Slice::whole(out), count)
    })
    .unwrap();
    ctx.download::<u32>(out, 0, values.len()).unwrap()
}

#[test]
fn scan_matches_cpu() {
    let ctx = context();
    let mut rng = Rng::new(4);
    for kind in [ScanKind::Exclusive, ScanKind::Inclusive] {
        let scan = Scan::new(&ctx, kind, 1_000_000).unwrap();
        for n in sizes(&ctx, TILE) {
            // Small values keep partial sums meaningful; large ones exercise wrap-around.
            let values: Vec<u32> = if n % 2 == 0 {
                rng.u32s(n as usize)
            } else {
                (0..n).map(|_| rng.below(100)).collect()
            };
            let expected = cpu::scan_u32(&values, kind == ScanKind::Inclusive);
            for indirect in [false, true] {
                let got = run_scan(&ctx, &scan, &values, indirect);
                assert!(
                    got == expected,
                    "{kind:?} n={n} indirect={indirect}: first mismatch at {:?}",
                    got.iter().zip(&expected).position(|(a, b)| a != b)
                );
            }
        }
    }
    assert_valid(&ctx);
}

/// One scan recorded many times into one command buffer, large and small counts in turn: each
/// use leaves its look-back scratch zero for the next, with no fill between.
#[test]
fn scans_back_to_back_leave_their_scratch_ready() {
    let ctx = context();
    let mut rng = Rng::new(5);
    let capacity = 300_000u32;
    let scan = Scan::new(&ctx, ScanKind::Exclusive, capacity).unwrap();
    let counts = [capacity, 1, TILE + 1, capacity - 7, 5 * TILE, capacity];
    let inputs: Vec<Vec<u32>> = counts
        .iter()
        .map(|&n| (0..n).map(|_| rng.below(1000)).collect())
        .collect();
    let input_bufs: Vec<_> = inputs
        .iter()
        .map(|v| ctx.create_buffer_with("input", v).unwrap())
        .collect();
    let output_bufs: Vec<_> = inputs
        .iter()
        .map(|v| {
            ctx.create_buffer("output", 4 * v.len() as u64, MemoryKind::Device)
                .unwrap()
        })
        .collect();
    let count_buf = ctx.create_buffer_with("counts", &counts).unwrap();
    ctx.submit_and_wait(|rec| {
        for (i, (input, output)) in input_bufs.iter().zip(&output_bufs).enumerate() {
            let count = if i % 2 == 0 {
                Count::Host(counts[i])
            } else {
                Count::Device {
                    buffer: &count_buf,
                    offset: 4 * i as u64,
                    max: counts[i],
                }
            };
            scan.record(rec, Slice::whole(input), Slice::whole(output), count)?;
        }
        Ok(())
    })
    .unwrap();
    for (i, values) in inputs.iter().enumerate() {
        let got = ctx
            .download::<u32>(&output_bufs[i], 0, values.len())
            .unwrap();
        assert!(
            got == cpu::scan_u32(values, false),
            "scan {i} of {} elements differs",
            values.len()
        );
    }
    assert_valid(&ctx);
}

#[test]
fn zero_length_and_oversized_input_are_errors() {
    let ctx = context();
    let scan = Scan::new(&ctx, ScanKind::Exclusive, 100).unwrap();
    let buf = ctx.create_buffer("b", 4096, MemoryKind::Device).unwrap();
    let small = ctx.create_buffer("small", 64, MemoryKind::Device).unwrap();
    let r = ctx.submit_and_wait(|rec| {
        scan.record(rec, Slice::whole(&buf), Slice::whole(&buf), Count::Host(0))
    });
    assert!(r.unwrap_err().to_string().contains("zero-length"));
    let r = ctx.submit_and_wait(|rec| {
        scan.record(
            rec,
            Slice::whole(&buf),
            Slice::whole(&buf),
            Count::Host(101),
        )
    });
    assert!(r.unwrap_err().to_string().contains("capacity"));
    let r = ctx.submit_and_wait(|rec| {
        scan.record(
            rec,
            Slice::whole(&small),
            Slice::whole(&buf),
            Count::Host(50),
        )
    });
    assert!(r.unwrap_err().to_string().contains("do not fit"));
    assert!(ctx.create_buffer("empty", 0, MemoryKind::Device).is_err());
    let r = ctx.submit_and_wait(|rec| {
        scan.record(rec, Slice::whole(&buf), Slice::whole(&buf), Count::Host(50))
    });
    assert!(r.unwrap_err().to_string().contains("overlap"));
    assert_valid(&ctx);
}

/// Under a pretended limit of 64 workgroups per dimension, tiles beyond it run in a folded
/// grid (direct and indirect) and give the CPU's answers.
#[test]
fn scan_and_reduce_fold_grids_beyond_the_device_limit() {
    let ctx = common::folding_context();
    let mut rng = Rng::new(31);
    let n = 300_000;
    let values: Vec<u32> = (0..n).map(|_| rng.below(1000)).collect();
    let reduce = Reduce::new(&ctx, ReduceOp::Add, ScalarType::U32, n).unwrap();
    let scan = Scan::new(&ctx, ScanKind::Exclusive, n).unwrap();
    assert!(
        n.div_ceil(TILE) > common::FOLDING_LIMIT,
        "the scan must need a folded grid"
    );
    let expected_sum = cpu::reduce_u32(&values, ReduceOp::Add);
    let expected_scan = cpu::scan_u32(&values, false);
    for indirect in [false, true] {
        assert_eq!(
            run_reduce_u32(&ctx, &reduce, &values, indirect),
            expected_sum,
            "reduce indirect={indirect}"
        );
        assert!(
            run_scan(&ctx, &scan, &values, indirect) == expected_scan,
            "scan indirect={indirect}"
        );
    }
    assert_valid(&ctx);
}
