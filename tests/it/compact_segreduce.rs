//! Stream compaction and segmented reduction against the CPU references at every checked size,
//! direct and indirect, plus edge cases (no or all flags kept, one segment, unsorted ids, runs,
//! ignored ids, special floats) and the errors for empty input.

use crate::common;

use canopy::prims::compact::{self, Compact};
use canopy::prims::cpu;
use canopy::prims::reduce::{ReduceOp, ScalarType};
use canopy::prims::segmented_reduce::{self, SegmentedReduce, decode_ordered};
use canopy::vk::{Buffer, Context, MemoryKind};
use canopy::vk::{Count, Slice};
use common::{Rng, assert_valid, context, sizes};

const SENTINEL: u32 = 0xdead_beef;

/// Runs a compaction; returns the whole output buffer (`flags.len()` + 4 elements, prefilled
/// with SENTINEL) and the kept count.
fn run_compact(
    ctx: &Context,
    compact: &Compact,
    values: Option<&[u32]>,
    flags: &[u32],
    indirect: bool,
) -> (Vec<u32>, u32) {
    let n = flags.len();
    let flags_buf = ctx.create_buffer_with("flags", flags).unwrap();
    let values_buf = values.map(|v| ctx.create_buffer_with("values", v).unwrap());
    let output = ctx
        .create_buffer_with("output", &vec![SENTINEL; n + 4])
        .unwrap();
    let kept = ctx.create_buffer_with("kept", &[SENTINEL]).unwrap();
    let count_buf = ctx.create_buffer_with("count", &[n as u32]).unwrap();
    ctx.submit_and_wait(|rec| {
        let count = common::count_of(&count_buf, n as u32, indirect);
        compact.record(
            rec,
            values_buf.as_ref().map(Slice::whole),
            Slice::whole(&flags_buf),
            Slice::whole(&output),
            Slice::whole(&kept),
            count,
        )
    })
    .unwrap();
    (
        ctx.download::<u32>(&output, 0, n + 4).unwrap(),
        ctx.download::<u32>(&kept, 0, 1).unwrap()[0],
    )
}

fn check_compact(
    ctx: &Context,
    compact: &Compact,
    values: Option<&[u32]>,
    flags: &[u32],
    what: &str,
) {
    let expected = cpu::compact_u32(values, flags);
    let mut results = Vec::new();
    for indirect in [false, true] {
        let (out, kept) = run_compact(ctx, compact, values, flags, indirect);
        assert_eq!(
            kept as usize,
            expected.len(),
            "{what} indirect={indirect}: kept count"
        );
        assert!(
            out[..expected.len()] == expected[..],
            "{what} indirect={indirect}: first mismatch at {:?}",
            out.iter().zip(&expected).position(|(a, b)| a != b)
        );
        assert!(
            out[expected.len()..].iter().all(|&v| v == SENTINEL),
            "{what} indirect={indirect}: wrote past the kept elements"
        );
        results.push((out, kept));
    }
    assert!(
        results[0] == results[1],
        "{what}: direct and indirect differ"
    );
}

#[test]
fn compact_matches_cpu() {
    let ctx = context();
    let mut rng = Rng::new(11);
    let compact = Compact::new(&ctx, 1_000_000).unwrap();
    for n in sizes(&ctx, compact::TILE) {
        // Keep probabilities of 1/2, 1/16 and 15/16; flags are arbitrary nonzero words.
        let density = [8u32, 1, 15][n as usize % 3];
        let flags: Vec<u32> = (0..n)
            .map(|_| {
                if rng.below(16) < density {
                    rng.next_u32() | 1 << rng.below(32)
                } else {
                    0
                }
            })
            .collect();
        let values = rng.u32s(n as usize);
        check_compact(
            &ctx,
            &compact,
            Some(&values),
            &flags,
            &format!("values n={n}"),
        );
        check_compact(&ctx, &compact, None, &flags, &format!("indices n={n}"));
    }
    assert_valid(&ctx);
}

/// With one poll per look-back window, tiles count the flags of predecessors that have not
/// published yet themselves (the fallback that keeps lavapipe correct under load), often.
#[test]
fn compact_lookback_fallback_matches_cpu() {
    let ctx = context();
    let mut rng = Rng::new(14);
    let compact = Compact::with_spin_limit(&ctx, 1_000_000, 1).unwrap();
    for n in sizes(&ctx, compact::TILE) {
        let flags: Vec<u32> = (0..n).map(|_| rng.below(3) % 2).collect();
        let values = rng.u32s(n as usize);
        check_compact(
            &ctx,
            &compact,
            Some(&values),
            &flags,
            &format!("values n={n}"),
        );
        check_compact(
            &ctx,
            &compact,
            None,
            &vec![1; n as usize],
            &format!("all n={n}"),
        );
    }
    assert_valid(&ctx);
}

#[test]
fn compact_all_or_nothing() {
    let ctx = context();
    let compact = Compact::new(&ctx, 1_000_000).unwrap();
    let mut rng = Rng::new(12);
    for n in [1, compact::TILE - 1, compact::TILE + 1, 100_000, 1_000_000] {
        let values = rng.u32s(n as usize);
        check_compact(
            &ctx,
            &compact,
            Some(&values),
            &vec![0; n as usize],
            &format!("none n={n}"),
        );
        check_compact(
            &ctx,
            &compact,
            Some(&values),
            &vec![1; n as usize],
            &format!("all n={n}"),
        );
        check_compact(
            &ctx,
            &compact,
            None,
            &vec![u32::MAX; n as usize],
            &format!("all indices n={n}"),
        );
    }
    assert_valid(&ctx);
}

#[test]
fn compact_device_counts() {
    let ctx = context();
    let compact = Compact::new(&ctx, 10_000).unwrap();
    let flags = vec![1u32; 10_000];
    let flags_buf = ctx.create_buffer_with("flags", &flags).unwrap();
    let output = ctx
        .create_buffer("output", 40_000, MemoryKind::Device)
        .unwrap();
    let kept = ctx.create_buffer_with("kept", &[7u32, 7]).unwrap();
    // Slot 0: a zero count (one group still writes a kept count of 0); slot 1: 20 000, above
    // the max of 5000 it is clamped to.
    let counts = ctx.create_buffer_with("counts", &[0u32, 20_000]).unwrap();
    ctx.submit_and_wait(|rec| {
        for (slot, max) in [(0u64, 100u32), (1, 5000)] {
            let count = Count::Device {
                buffer: &counts,
                offset: 4 * slot,
                max,
            };
            compact.record(
                rec,
                None,
                Slice::whole(&flags_buf),
                Slice::whole(&output),
                Slice::new(&kept, 4 * slot, 1),
                count,
            )?;
            rec.barrier_compute_to_compute();
        }
        Ok(())
    })
    .unwrap();
    assert_eq!(ctx.download::<u32>(&kept, 0, 2).unwrap(), [0, 5000]);
    assert_eq!(
        ctx.download::<u32>(&output, 0, 5000).unwrap(),
        (0..5000).collect::<Vec<u32>>()
    );
    assert_valid(&ctx);
}

/// A work-list pipeline in one submission: compact, then compact the result again with the
/// first kept count as a device count (the scratch is reused within one command buffer).
#[test]
fn compact_chained_in_one_submission() {
    let ctx = context();
    let mut rng = Rng::new(13);
    let n = 50_000usize;
    let compact = Compact::new(&ctx, n as u32).unwrap();
    let flags: Vec<u32> = (0..n).map(|_| rng.below(2)).collect();
    let values = rng.u32s(n);
    // Second-stage flags apply to the first stage's output positions.
    let flags2: Vec<u32> = (0..n).map(|_| rng.below(2)).collect();
    let bufs: Vec<Buffer> = [&flags, &values, &flags2]
        .iter()
        .map(|d| ctx.create_buffer_with("in", d).unwrap())
        .collect();
    let mid = ctx
        .create_buffer("mid", 4 * n as u64, MemoryKind::Device)
        .unwrap();
    let out = ctx
        .create_buffer("out", 4 * n as u64, MemoryKind::Device)
        .unwrap();
    let kept = ctx.create_buffer("kept", 8, MemoryKind::Device).unwrap();
    ctx.submit_and_wait(|rec| {
        compact.record(
            rec,
            Some(Slice::whole(&bufs[1])),
            Slice::whole(&bufs[0]),
            Slice::whole(&mid),
            Slice::new(&kept, 0, 1),
            Count::Host(n as u32),
        )?;
        rec.barrier_compute_to_compute();
        let count = Count::Device {
            buffer: &kept,
            offset: 0,
            max: n as u32,
        };
        compact.record(
            rec,
            Some(Slice::whole(&mid)),
            Slice::whole(&bufs[2]),
            Slice::whole(&out),
            Slice::new(&kept, 4, 1),
            count,
        )
    })
    .unwrap();
    let stage1 = cpu::compact_u32(Some(&values), &flags);
    let stage2 = cpu::compact_u32(Some(&stage1), &flags2[..stage1.len()]);
    let counts = ctx.download::<u32>(&kept, 0, 2).unwrap();
    assert_eq!(counts, [stage1.len() as u32, stage2.len() as u32]);
    assert_eq!(ctx.download::<u32>(&out, 0, stage2.len()).unwrap(), stage2);
    assert_valid(&ctx);
}

/// Segment ids of `n` elements over `segments` segments in one of the layouts tested.
#[derive(Clone, Copy, Debug)]
enum Layout {
    /// Independent uniform ids.
    Random,
    /// Runs of 1..=300 equal ids, each run a random id (so ids repeat in separate runs).
    Runs,
    /// Sorted runs (as triangles grouped by node), with run lengths 1..=300.
    Sorted,
    /// Every element in one segment.
    Single,
}

fn make_ids(rng: &mut Rng, n: usize, segments: u32, layout: Layout) -> Vec<u32> {
    match layout {
        Layout::Random => (0..n).map(|_| rng.below(segments)).collect(),
        Layout::Single => vec![segments / 2; n],
        Layout::Runs | Layout::Sorted => {
            let mut ids = Vec::with_capacity(n);
            let mut next = 0;
            while ids.len() < n {
                let len = (1 + rng.below(300) as usize).min(n - ids.len());
                let id = match layout {
                    Layout::Runs => rng.below(segments),
                    _ => {
                        next = (next + rng.below(3)).min(segments - 1);
                        next
                    }
                };
                ids.extend(std::iter::repeat_n(id, len));
            }
            ids
        }
    }
}

/// Runs a segmented reduction of raw 32-bit `values` (init, reduce, decode); returns the output.
fn run_segreduce(
    ctx: &Context,
    reduce: &SegmentedReduce,
    values: &[u32],
    ids: &[u32],
    segments: u32,
    indirect: bool,
) -> Vec<u32> {
    let n = values.len() as u32;
    let values_buf = ctx.create_buffer_with("values", values).unwrap();
    let ids_buf = ctx.create_buffer_with("ids", ids).unwrap();
    let output = ctx
        .create_buffer("output", 4 * segments as u64, MemoryKind::Device)
        .unwrap();
    let count_buf = ctx.create_buffer_with("count", &[n]).unwrap();
    ctx.submit_and_wait(|rec| {
        let count = common::count_of(&count_buf, n, indirect);
        let out = Slice::<u32>::whole(&output);
        reduce.record_init(rec, out, segments)?;
        reduce.record(
            rec,
            Slice::whole(&values_buf),
            Slice::whole(&ids_buf),
            out,
            segments,
            count,
        )?;
        reduce.record_decode(rec, out, segments)
    })
    .unwrap();
    ctx.download::<u32>(&output, 0, segments as usize).unwrap()
}

const LAYOUTS: [Layout; 4] = [Layout::Random, Layout::Runs, Layout::Sorted, Layout::Single];
const OPS: [ReduceOp; 3] = [ReduceOp::Add, ReduceOp::Min, ReduceOp::Max];

#[test]
fn segmented_reduce_u32_matches_cpu() {
    let ctx = context();
    let mut rng = Rng::new(21);
    for op in OPS {
        let reduce = SegmentedReduce::new(&ctx, op, ScalarType::U32, 1_000_000).unwrap();
        for (case, n) in sizes(&ctx, segmented_reduce::TILE).into_iter().enumerate() {
            let layout = LAYOUTS[case % 4];
            let segments = [1000, 7, 1 + n / 10][case % 3];
            let ids = make_ids(&mut rng, n as usize, segments, layout);
            // Small values for add keep sums meaningful; full range elsewhere (and wrap-around).
            let values: Vec<u32> = if op == ReduceOp::Add && case % 2 == 0 {
                (0..n).map(|_| rng.below(1000)).collect()
            } else {
                rng.u32s(n as usize)
            };
            let expected = cpu::segmented_reduce_u32(&values, &ids, segments as usize, op);
            let direct = run_segreduce(&ctx, &reduce, &values, &ids, segments, false);
            assert!(
                direct == expected,
                "{op:?} {layout:?} n={n} segments={segments}: first mismatch at {:?}",
                direct.iter().zip(&expected).position(|(a, b)| a != b)
            );
            let indirect = run_segreduce(&ctx, &reduce, &values, &ids, segments, true);
            assert!(
                indirect == direct,
                "{op:?} {layout:?} n={n}: indirect differs from direct"
            );
        }
    }
    assert_valid(&ctx);
}

#[test]
fn segmented_reduce_layouts_at_large_size() {
    let ctx = context();
    let mut rng = Rng::new(22);
    let n = 1_000_000;
    for op in OPS {
        let reduce = SegmentedReduce::new(&ctx, op, ScalarType::U32, n).unwrap();
        for layout in LAYOUTS {
            let segments = 5000;
            let ids = make_ids(&mut rng, n as usize, segments, layout);
            let values: Vec<u32> = (0..n).map(|_| rng.below(1 << 20)).collect();
            let expected = cpu::segmented_reduce_u32(&values, &ids, segments as usize, op);
            for indirect in [false, true] {
                let got = run_segreduce(&ctx, &reduce, &values, &ids, segments, indirect);
                assert!(
                    got == expected,
                    "{op:?} {layout:?} indirect={indirect}: first mismatch at {:?}",
                    got.iter().zip(&expected).position(|(a, b)| a != b)
                );
            }
        }
    }
    assert_valid(&ctx);
}

#[test]
fn segmented_reduce_f32_matches_cpu() {
    let ctx = context();
    let mut rng = Rng::new(23);
    for op in OPS {
        let reduce = SegmentedReduce::new(&ctx, op, ScalarType::F32, 1_000_000).unwrap();
        assert_eq!(reduce.output_is_encoded(), op != ReduceOp::Add);
        for (case, n) in sizes(&ctx, segmented_reduce::TILE).into_iter().enumerate() {
            let layout = LAYOUTS[case % 4];
            let segments = [1000, 7, 1 + n / 10][case % 3];
            let ids = make_ids(&mut rng, n as usize, segments, layout);
            let values: Vec<f32> = (0..n).map(|_| rng.f32_in(-1000.0, 1000.0)).collect();
            let bits: Vec<u32> = bytemuck::cast_slice(&values).to_vec();
            let expected = cpu::segmented_reduce_f32(&values, &ids, segments as usize, op);
            // Per-segment sums of magnitudes bound the rounding of sums in any order.
            let mut magnitude = vec![0f64; segments as usize];
            for (&v, &id) in values.iter().zip(&ids) {
                magnitude[id as usize] += v.abs() as f64;
            }
            for indirect in [false, true] {
                let got = run_segreduce(&ctx, &reduce, &bits, &ids, segments, indirect);
                for (s, (&g, &e)) in got.iter().zip(&expected).enumerate() {
                    let g = f32::from_bits(g);
                    let ok = if op == ReduceOp::Add {
                        ((g - e).abs() as f64) <= 1e-5 * magnitude[s] + 1e-3
                    } else {
                        g.to_bits() == e.to_bits()
                    };
                    assert!(
                        ok,
                        "{op:?} {layout:?} n={n} indirect={indirect} segment {s}: {g} vs {e}"
                    );
                }
            }
        }
    }
    assert_valid(&ctx);
}

#[test]
fn segmented_reduce_f32_special_values() {
    let ctx = context();
    let values = [
        0.0f32,
        -0.0,
        1.5,
        -2.5,
        f32::INFINITY,
        f32::NEG_INFINITY,
        3.0,
        -0.0,
        0.0,
        7.0,
    ];
    let ids = [0u32, 0, 1, 1, 2, 2, 3, 3, 4, 4];
    let bits: Vec<u32> = bytemuck::cast_slice(&values).to_vec();
    for op in [ReduceOp::Min, ReduceOp::Max] {
        let reduce = SegmentedReduce::new(&ctx, op, ScalarType::F32, 100).unwrap();
        // Segment 5 is empty: it decodes to the identity, +inf for min and -inf for max.
        let got: Vec<f32> = run_segreduce(&ctx, &reduce, &bits, &ids, 6, false)
            .into_iter()
            .map(f32::from_bits)
            .collect();
        let expected = cpu::segmented_reduce_f32(&values, &ids, 6, op);
        assert_eq!(
            got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            expected.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            "{op:?}"
        );
        let want = if op == ReduceOp::Min {
            [-0.0, -2.5, f32::NEG_INFINITY, -0.0, 0.0, f32::INFINITY]
        } else {
            [0.0, 1.5, f32::INFINITY, 3.0, 7.0, f32::NEG_INFINITY]
        };
        assert_eq!(
            got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            want.map(f32::to_bits),
            "{op:?}"
        );
    }
    for v in [
        0.0f32,
        -0.0,
        1.0,
        -1.0,
        f32::MIN_POSITIVE,
        f32::MAX,
        f32::NAN,
        -f32::NAN,
        f32::INFINITY,
    ] {
        assert_eq!(
            decode_ordered(segmented_reduce::encode_ordered(v)).to_bits(),
            v.to_bits()
        );
    }
    assert_valid(&ctx);
}

/// Ids at or above the segment count are ignored; accumulating two recordings into one output
/// equals one recording over both inputs; a zero device count leaves the output as it was.
#[test]
fn segmented_reduce_ignored_ids_accumulation_and_zero_count() {
    let ctx = context();
    let mut rng = Rng::new(24);
    let n = 30_000usize;
    let segments = 100;
    let ids: Vec<u32> = (0..n)
        .map(|_| {
            if rng.below(4) == 0 {
                segments + rng.below(10)
            } else {
                rng.below(segments)
            }
        })
        .collect();
    let values: Vec<u32> = (0..n).map(|_| rng.below(1000)).collect();
    let reduce = SegmentedReduce::new(&ctx, ReduceOp::Add, ScalarType::U32, n as u32).unwrap();
    let values_buf = ctx.create_buffer_with("values", &values).unwrap();
    let ids_buf = ctx.create_buffer_with("ids", &ids).unwrap();
    let output = ctx
        .create_buffer("output", 4 * segments as u64, MemoryKind::Device)
        .unwrap();
    let zero = ctx.create_buffer_with("zero", &[0u32]).unwrap();
    let half = n / 2;
    ctx.submit_and_wait(|rec| {
        let out = Slice::<u32>::whole(&output);
        reduce.record_init(rec, out, segments)?;
        let first = |len: usize| Slice::new(&values_buf, 0, len as u64);
        reduce.record(
            rec,
            first(half),
            Slice::new(&ids_buf, 0, half as u64),
            out,
            segments,
            Count::Host(half as u32),
        )?;
        let rest = (n - half) as u64;
        reduce.record(
            rec,
            Slice::new(&values_buf, 4 * half as u64, rest),
            Slice::new(&ids_buf, 4 * half as u64, rest),
            out,
            segments,
            Count::Host(rest as u32),
        )?;
        let count = Count::Device {
            buffer: &zero,
            offset: 0,
            max: n as u32,
        };
        reduce.record(
            rec,
            Slice::whole(&values_buf),
            Slice::whole(&ids_buf),
            out,
            segments,
            count,
        )
    })
    .unwrap();
    let expected = cpu::segmented_reduce_u32(&values, &ids, segments as usize, ReduceOp::Add);
    assert_eq!(
        ctx.download::<u32>(&output, 0, segments as usize).unwrap(),
        expected
    );
    assert_valid(&ctx);
}

#[test]
fn zero_length_and_bad_input_are_errors() {
    let ctx = context();
    let compact = Compact::new(&ctx, 100).unwrap();
    let reduce = SegmentedReduce::new(&ctx, ReduceOp::Max, ScalarType::U32, 100).unwrap();
    let buf = ctx.create_buffer("b", 4096, MemoryKind::Device).unwrap();
    let other = ctx.create_buffer("o", 4096, MemoryKind::Device).unwrap();
    let kept = ctx.create_buffer("k", 4, MemoryKind::Device).unwrap();
    let s = Slice::<u32>::whole;
    let err = |r: canopy::vk::Result<()>| r.unwrap_err().to_string();

    let r = ctx.submit_and_wait(|rec| {
        compact.record(rec, None, s(&buf), s(&other), s(&kept), Count::Host(0))
    });
    assert!(err(r).contains("zero-length"));
    let r = ctx.submit_and_wait(|rec| {
        compact.record(rec, None, s(&buf), s(&other), s(&kept), Count::Host(101))
    });
    assert!(err(r).contains("capacity"));
    let r = ctx.submit_and_wait(|rec| {
        compact.record(
            rec,
            Some(s(&buf)),
            s(&other),
            s(&buf),
            s(&kept),
            Count::Host(50),
        )
    });
    assert!(err(r).contains("overlaps"));
    let r = ctx.submit_and_wait(|rec| {
        compact.record(
            rec,
            None,
            s(&buf),
            s(&other),
            Slice::new(&other, 0, 1),
            Count::Host(50),
        )
    });
    assert!(err(r).contains("overlaps"));

    let r = ctx
        .submit_and_wait(|rec| reduce.record(rec, s(&buf), s(&buf), s(&other), 10, Count::Host(0)));
    assert!(err(r).contains("zero-length"));
    let r = ctx
        .submit_and_wait(|rec| reduce.record(rec, s(&buf), s(&buf), s(&other), 0, Count::Host(10)));
    assert!(err(r).contains("zero segments"));
    let r = ctx.submit_and_wait(|rec| {
        reduce.record(rec, s(&buf), s(&other), s(&buf), 10, Count::Host(10))
    });
    assert!(err(r).contains("overlaps"));
    let r = ctx.submit_and_wait(|rec| reduce.record_init(rec, s(&kept), 2));
    assert!(err(r).contains("do not fit"));
    let r = ctx.submit_and_wait(|rec| {
        reduce.record(
            rec,
            Slice::<u64>::whole(&buf),
            s(&other),
            Slice::<u64>::whole(&kept),
            1,
            Count::Host(10),
        )
    });
    assert!(err(r).contains("u32 or f32"));
    assert_valid(&ctx);
}

/// Under a pretended limit of 64 workgroups per dimension, compaction and segmented
/// reduction run their tiles in folded grids (direct and indirect) and match the CPU.
#[test]
fn compact_and_segmented_reduce_fold_grids_beyond_the_device_limit() {
    let ctx = common::folding_context();
    let mut rng = Rng::new(33);
    let n = 300_000u32;
    assert!(n.div_ceil(compact::TILE) > common::FOLDING_LIMIT);
    assert!(n.div_ceil(segmented_reduce::TILE) > common::FOLDING_LIMIT);
    let compact = Compact::new(&ctx, n).unwrap();
    let flags: Vec<u32> = (0..n).map(|_| rng.below(2)).collect();
    let values = rng.u32s(n as usize);
    check_compact(&ctx, &compact, Some(&values), &flags, "folded compact");

    let reduce = SegmentedReduce::new(&ctx, ReduceOp::Add, ScalarType::U32, n).unwrap();
    let segments = 777;
    let ids = make_ids(&mut rng, n as usize, segments, Layout::Random);
    let small: Vec<u32> = (0..n).map(|_| rng.below(1000)).collect();
    let expected = cpu::segmented_reduce_u32(&small, &ids, segments as usize, ReduceOp::Add);
    for indirect in [false, true] {
        let got = run_segreduce(&ctx, &reduce, &small, &ids, segments, indirect);
        assert!(
            got == expected,
            "folded segmented reduce indirect={indirect}"
        );
    }
    assert_valid(&ctx);
}
