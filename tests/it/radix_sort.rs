//! Key-value radix sort against a stable CPU sort: random, all-equal, sorted, reverse-sorted
//! keys, full 64-bit keys and the Morton codes' 30 and 63 bits (digits of 8 bits by default, of
//! 9 and 10 bits tuned, some straddling a u64 key's words) at every checked size, direct and
//! indirect, in place and indexed.

use crate::common;

use canopy::prims::cpu;
use canopy::prims::radix_sort::{KeyType, RadixSort, SortTuning};
use canopy::vk::Context;
use canopy::vk::{Count, Slice};
use common::{Rng, assert_valid, context, sizes};

/// How a test records the sort.
#[derive(Clone, Copy, Debug)]
enum Mode {
    /// `record`, host count.
    Direct,
    /// `record`, the count read on the GPU.
    Indirect,
    /// `record_indexed`: keys copied to `unsorted_keys`, values their indices.
    Indexed,
}

const MODES: [Mode; 3] = [Mode::Direct, Mode::Indirect, Mode::Indexed];

/// Sorts on the GPU; returns (key words, values).
fn gpu_sort(
    ctx: &Context,
    sort: &RadixSort,
    key_words: &[u32],
    values: &[u32],
    mode: Mode,
) -> (Vec<u32>, Vec<u32>) {
    let n = values.len() as u32;
    let source = ctx.create_buffer_with("source keys", key_words).unwrap();
    let keys_buf = ctx.create_buffer_with("keys", key_words).unwrap();
    let values_buf = ctx.create_buffer_with("values", values).unwrap();
    let count_buf = ctx.create_buffer_with("count", &[n]).unwrap();
    ctx.submit_and_wait(|rec| {
        let keys = Slice::whole(&keys_buf);
        let values = Slice::whole(&values_buf);
        match mode {
            Mode::Direct | Mode::Indirect => {
                let count = common::count_of(&count_buf, n, matches!(mode, Mode::Indirect));
                sort.record(rec, keys, values, count)
            }
            Mode::Indexed => {
                let unsorted = sort.unsorted_keys(keys);
                rec.copy_buffer(&source, 0, unsorted.buffer, unsorted.offset, source.size());
                rec.barrier_transfer_to_compute();
                sort.record_indexed(rec, keys, values, Count::Host(n))
            }
        }
    })
    .unwrap();
    (
        ctx.download(&keys_buf, 0, key_words.len()).unwrap(),
        ctx.download(&values_buf, 0, values.len()).unwrap(),
    )
}

/// Sorts `keys` (with their indices as values) in every mode against the CPU's stable sort
/// of the keys' low `sort.key_bits()` bits.
fn check_u32(ctx: &Context, sort: &RadixSort, keys: &[u32], label: &str) {
    let values: Vec<u32> = (0..keys.len() as u32).collect();
    let mask = u32::MAX >> (32 - sort.key_bits());
    let low: Vec<u32> = keys.iter().map(|k| k & mask).collect();
    let (_, ev) = cpu::sort_pairs(&low, &values);
    let ek: Vec<u32> = ev.iter().map(|&i| keys[i as usize]).collect();
    for mode in MODES {
        let (gk, gv) = gpu_sort(ctx, sort, keys, &values, mode);
        assert!(
            gk == ek,
            "{label} n={} {mode:?}: keys differ at {:?}",
            keys.len(),
            gk.iter().zip(&ek).position(|(a, b)| a != b)
        );
        assert!(
            gv == ev,
            "{label} n={} {mode:?}: values (stability) differ",
            keys.len()
        );
    }
}

/// A sorter whose digits may be up to `max_digit_bits` wide.
fn wide(
    ctx: &Context,
    key_type: KeyType,
    bits: u32,
    capacity: u32,
    max_digit_bits: u32,
) -> RadixSort {
    let tuning = SortTuning {
        max_digit_bits,
        ..Default::default()
    };
    RadixSort::tuned(ctx, key_type, bits, capacity, tuning).unwrap()
}

#[test]
fn passes_and_digits_follow_the_key_bits() {
    let ctx = context();
    for (key_type, bits, max_digit, passes, digit) in [
        (KeyType::U32, 32, 8, 4, 8),
        (KeyType::U32, 30, 8, 4, 8),
        (KeyType::U32, 18, 8, 3, 6),
        (KeyType::U32, 1, 8, 1, 1),
        (KeyType::U64, 63, 8, 8, 8),
        (KeyType::U32, 30, 10, 3, 10),
        (KeyType::U32, 18, 10, 2, 9),
        (KeyType::U64, 63, 10, 7, 9),
        (KeyType::U64, 64, 10, 7, 10),
    ] {
        let sort = wide(&ctx, key_type, bits, 1000, max_digit);
        assert_eq!(
            (sort.passes(), sort.digit_bits()),
            (passes, digit),
            "{bits}-bit keys, digits of up to {max_digit} bits"
        );
    }
    assert_eq!(
        RadixSort::new(&ctx, KeyType::U32, 30, 1000)
            .unwrap()
            .passes(),
        4
    );
    assert!(RadixSort::new(&ctx, KeyType::U32, 33, 1000).is_err());
    assert!(RadixSort::new(&ctx, KeyType::U64, 0, 1000).is_err());
    for max_digit_bits in [0, 11] {
        let tuning = SortTuning {
            max_digit_bits,
            ..Default::default()
        };
        assert!(RadixSort::tuned(&ctx, KeyType::U32, 32, 1000, tuning).is_err());
    }
}

#[test]
fn sorts_u32_pairs_like_a_stable_cpu_sort() {
    let ctx = context();
    let sort = RadixSort::new(&ctx, KeyType::U32, 32, 1_000_000).unwrap();
    let mut rng = Rng::new(10);
    for n in sizes(&ctx, sort.tile_size()) {
        check_u32(&ctx, &sort, &rng.u32s(n as usize), "random");
        // Few distinct keys: long runs of equal digits stress ranking and stability.
        let few: Vec<u32> = (0..n).map(|_| rng.below(4) << 16).collect();
        check_u32(&ctx, &sort, &few, "few distinct");
    }
    assert_valid(&ctx);
}

/// 30-bit Morton codes in four passes of 8-bit digits, and tuned in three of 10 bits; the
/// two bits above are ignored.
#[test]
fn sorts_30_bit_codes_in_four_or_three_passes() {
    let ctx = context();
    let mut rng = Rng::new(13);
    for sort in [
        RadixSort::new(&ctx, KeyType::U32, 30, 1_000_000).unwrap(),
        wide(&ctx, KeyType::U32, 30, 1_000_000, 10),
    ] {
        for n in sizes(&ctx, sort.tile_size()) {
            let codes: Vec<u32> = (0..n).map(|_| rng.below(1 << 30)).collect();
            check_u32(&ctx, &sort, &codes, "codes");
            let marked: Vec<u32> = (0..n).map(|_| rng.next_u32()).collect();
            check_u32(&ctx, &sort, &marked, "high bits set");
            let few: Vec<u32> = (0..n).map(|_| rng.below(3) << 20 | 1023).collect();
            check_u32(&ctx, &sort, &few, "few distinct");
        }
    }
    assert_valid(&ctx);
}

#[test]
fn sorts_adversarial_u32_orders() {
    let ctx = context();
    let n = 100_000u32;
    for (bits, max_digit) in [(32, 8), (30, 8), (30, 10)] {
        let sort = wide(&ctx, KeyType::U32, bits, n, max_digit);
        check_u32(&ctx, &sort, &vec![0xdead_beef; n as usize], "all equal");
        check_u32(&ctx, &sort, &(0..n).collect::<Vec<_>>(), "sorted");
        check_u32(&ctx, &sort, &(0..n).rev().collect::<Vec<_>>(), "reverse");
        check_u32(
            &ctx,
            &sort,
            &(0..n).map(|i| u32::MAX - (i % 7)).collect::<Vec<_>>(),
            "top values",
        );
    }
    assert_valid(&ctx);
}

/// Full 64-bit keys and 63-bit codes in passes of 8 bits, and tuned in seven of 10 and of 9:
/// those digits straddle the two words of a key.
#[test]
fn sorts_u64_pairs_using_all_their_bits() {
    let ctx = context();
    let mut rng = Rng::new(11);
    for (bits, max_digit) in [(64, 8), (63, 8), (64, 10), (63, 10)] {
        let sort = wide(&ctx, KeyType::U64, bits, 1_000_000, max_digit);
        let mask = u64::MAX >> (64 - bits);
        for n in sizes(&ctx, sort.tile_size()) {
            // Keys differing only in high bits, only in the bits around the word boundary,
            // only in low bits, and fully random.
            let keys: Vec<u64> = (0..n)
                .map(|i| match i % 4 {
                    0 => rng.next_u64() & mask,
                    1 => (rng.below(3) as u64) << (bits - 2) | 5,
                    2 => (rng.below(64) as u64) << 29,
                    _ => rng.below(3) as u64,
                })
                .collect();
            let values: Vec<u32> = (0..n).collect();
            let (ek, ev) = cpu::sort_pairs(&keys, &values);
            let words: Vec<u32> = bytemuck::cast_slice(&keys).to_vec();
            for mode in MODES {
                let (gk, gv) = gpu_sort(&ctx, &sort, &words, &values, mode);
                let gk: Vec<u64> = bytemuck::pod_collect_to_vec(&gk);
                assert!(
                    gk == ek,
                    "{bits}-bit n={n} {mode:?}: keys differ at {:?}",
                    gk.iter().zip(&ek).position(|(a, b)| a != b)
                );
                assert!(gv == ev, "{bits}-bit n={n} {mode:?}: values differ");
            }
        }
    }
    assert_valid(&ctx);
}

#[test]
fn partial_key_bits_sort_low_digits_only() {
    let ctx = context();
    let sort = wide(&ctx, KeyType::U32, 10, 10_000, 10);
    assert_eq!(sort.passes(), 1);
    let mut rng = Rng::new(12);
    let keys: Vec<u32> = (0..10_000).map(|_| rng.below(1 << 12)).collect();
    check_u32(&ctx, &sort, &keys, "10 of 12 bits");
    assert_valid(&ctx);
}

/// Sorts of different device counts under one capacity, back to back in one command buffer:
/// the table's columns past each count and the scan's scratch must be left as the next sort
/// needs them, with no fill between.
#[test]
fn consecutive_sorts_of_device_counts_need_no_fill() {
    let ctx = context();
    let capacity = 200_000u32;
    let mut rng = Rng::new(14);
    for (bits, max_digit) in [(32, 8), (30, 10)] {
        let sort = wide(&ctx, KeyType::U32, bits, capacity, max_digit);
        let counts = [capacity, 1, 70_001, sort.tile_size() + 3, 150_000];
        let keys: Vec<Vec<u32>> = counts
            .iter()
            .map(|&n| rng.u32s(capacity as usize)[..n as usize].to_vec())
            .collect();
        let padded = |k: &Vec<u32>| {
            let mut v = k.clone();
            v.resize(capacity as usize, u32::MAX);
            v
        };
        let key_bufs: Vec<_> = keys
            .iter()
            .map(|k| ctx.create_buffer_with("keys", &padded(k)).unwrap())
            .collect();
        let value_bufs: Vec<_> = keys
            .iter()
            .map(|_| {
                let v: Vec<u32> = (0..capacity).collect();
                ctx.create_buffer_with("values", &v).unwrap()
            })
            .collect();
        let count_buf = ctx.create_buffer_with("counts", &counts).unwrap();
        ctx.submit_and_wait(|rec| {
            for (i, (k, v)) in key_bufs.iter().zip(&value_bufs).enumerate() {
                let count = Count::Device {
                    buffer: &count_buf,
                    offset: 4 * i as u64,
                    max: capacity,
                };
                sort.record(rec, Slice::whole(k), Slice::whole(v), count)?;
                rec.barrier_compute_to_compute();
            }
            Ok(())
        })
        .unwrap();
        let mask = u32::MAX >> (32 - bits);
        for (i, k) in keys.iter().enumerate() {
            let n = k.len();
            let indices: Vec<u32> = (0..n as u32).collect();
            let low: Vec<u32> = k.iter().map(|x| x & mask).collect();
            let (_, ev) = cpu::sort_pairs(&low, &indices);
            let gv = ctx.download::<u32>(&value_bufs[i], 0, n).unwrap();
            assert!(gv == ev, "{bits}-bit sort {i} of {n} keys differs");
        }
    }
    assert_valid(&ctx);
}

#[test]
fn sort_rejects_bad_sizes() {
    let ctx = context();
    assert!(RadixSort::new(&ctx, KeyType::U32, 32, 0).is_err());
    let sort = RadixSort::new(&ctx, KeyType::U32, 32, 10).unwrap();
    let keys = ctx.create_buffer_with("keys", &[1u32; 8]).unwrap();
    for n in [9, 0] {
        let r = ctx.submit_and_wait(|rec| {
            sort.record(
                rec,
                Slice::whole(&keys),
                Slice::whole(&keys),
                Count::Host(n),
            )
        });
        assert!(r.is_err());
    }
    assert_valid(&ctx);
}

/// Under a pretended limit of 64 workgroups per dimension, the sort's tiles run in a folded
/// grid (direct and indirect) and still sort stably.
#[test]
fn sorts_with_grids_folded_beyond_the_device_limit() {
    let ctx = common::folding_context();
    let n = 300_000;
    for (bits, max_digit) in [(32, 8), (30, 10)] {
        let sort = wide(&ctx, KeyType::U32, bits, n, max_digit);
        assert!(n.div_ceil(sort.tile_size()) > common::FOLDING_LIMIT);
        let keys = Rng::new(32).u32s(n as usize);
        check_u32(&ctx, &sort, &keys, "folded");
    }
    assert_valid(&ctx);
}
