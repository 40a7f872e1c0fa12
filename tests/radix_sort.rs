//! Key-value radix sort against a stable CPU sort: random, all-equal, sorted, reverse-sorted
//! and full 64-bit keys at every checked size, direct and indirect.

mod common;

use canopy::prims::cpu;
use canopy::prims::radix_sort::{KeyType, RadixSort};
use canopy::vk::Context;
use canopy::vk::{Count, Slice};
use common::{Rng, assert_valid, context, sizes};

/// Sorts on the GPU; returns (key words, values).
fn gpu_sort(
    ctx: &Context,
    sort: &RadixSort,
    key_words: &[u32],
    values: &[u32],
    bits: u32,
    indirect: bool,
) -> (Vec<u32>, Vec<u32>) {
    let n = values.len() as u32;
    let keys_buf = ctx.create_buffer_with("keys", key_words).unwrap();
    let values_buf = ctx.create_buffer_with("values", values).unwrap();
    let count_buf = ctx.create_buffer_with("count", &[n]).unwrap();
    ctx.submit_and_wait(|rec| {
        let count = common::count_of(&count_buf, n, indirect);
        sort.record(
            rec,
            Slice::whole(&keys_buf),
            Slice::whole(&values_buf),
            count,
            bits,
        )
    })
    .unwrap();
    (
        ctx.download(&keys_buf, 0, key_words.len()).unwrap(),
        ctx.download(&values_buf, 0, values.len()).unwrap(),
    )
}

fn check_u32(ctx: &Context, sort: &RadixSort, keys: &[u32], label: &str) {
    let values: Vec<u32> = (0..keys.len() as u32).collect();
    let (ek, ev) = cpu::sort_pairs(keys, &values);
    for indirect in [false, true] {
        let (gk, gv) = gpu_sort(ctx, sort, keys, &values, 32, indirect);
        assert!(
            gk == ek,
            "{label} n={} indirect={indirect}: keys differ at {:?}",
            keys.len(),
            gk.iter().zip(&ek).position(|(a, b)| a != b)
        );
        assert!(
            gv == ev,
            "{label} n={} indirect={indirect}: values (stability) differ",
            keys.len()
        );
    }
}

#[test]
fn sorts_u32_pairs_like_a_stable_cpu_sort() {
    let ctx = context();
    let sort = RadixSort::new(&ctx, KeyType::U32, 1_000_000).unwrap();
    let mut rng = Rng::new(10);
    for n in sizes(&ctx, sort.tile_size()) {
        check_u32(&ctx, &sort, &rng.u32s(n as usize), "random");
        // Few distinct keys: long runs of equal digits stress ranking and stability.
        let few: Vec<u32> = (0..n).map(|_| rng.below(4) << 16).collect();
        check_u32(&ctx, &sort, &few, "few distinct");
    }
    assert_valid(&ctx);
}

#[test]
fn sorts_adversarial_u32_orders() {
    let ctx = context();
    let sort = RadixSort::new(&ctx, KeyType::U32, 100_000).unwrap();
    let n = 100_000u32;
    check_u32(&ctx, &sort, &vec![0xdead_beef; n as usize], "all equal");
    check_u32(&ctx, &sort, &(0..n).collect::<Vec<_>>(), "sorted");
    check_u32(&ctx, &sort, &(0..n).rev().collect::<Vec<_>>(), "reverse");
    check_u32(
        &ctx,
        &sort,
        &(0..n).map(|i| u32::MAX - (i % 7)).collect::<Vec<_>>(),
        "top values",
    );
    assert_valid(&ctx);
}

#[test]
fn sorts_u64_pairs_using_all_64_bits() {
    let ctx = context();
    let sort = RadixSort::new(&ctx, KeyType::U64, 1_000_000).unwrap();
    let mut rng = Rng::new(11);
    for n in sizes(&ctx, sort.tile_size()) {
        // Keys differing only in high bits, only in low bits, and fully random.
        let keys: Vec<u64> = (0..n)
            .map(|i| match i % 3 {
                0 => rng.next_u64(),
                1 => (rng.below(3) as u64) << 62 | 5,
                _ => rng.below(3) as u64,
            })
            .collect();
        let values: Vec<u32> = (0..n).collect();
        let (ek, ev) = cpu::sort_pairs(&keys, &values);
        let words: Vec<u32> = bytemuck::cast_slice(&keys).to_vec();
        let (gk, gv) = gpu_sort(&ctx, &sort, &words, &values, 64, n % 2 == 1);
        let gk: Vec<u64> = bytemuck::pod_collect_to_vec(&gk);
        assert!(
            gk == ek,
            "u64 n={n}: keys differ at {:?}",
            gk.iter().zip(&ek).position(|(a, b)| a != b)
        );
        assert!(gv == ev, "u64 n={n}: values differ");
    }
    assert_valid(&ctx);
}

#[test]
fn partial_key_bits_sort_low_digits_only() {
    let ctx = context();
    let sort = RadixSort::new(&ctx, KeyType::U32, 10_000).unwrap();
    let mut rng = Rng::new(12);
    let keys: Vec<u32> = (0..10_000).map(|_| rng.below(1 << 10)).collect();
    let values: Vec<u32> = (0..10_000).collect();
    let (ek, ev) = cpu::sort_pairs(&keys, &values);
    let (gk, gv) = gpu_sort(&ctx, &sort, &keys, &values, 10, false);
    assert_eq!(gk, ek);
    assert_eq!(gv, ev);
    assert_valid(&ctx);
}

#[test]
fn sort_rejects_bad_sizes() {
    let ctx = context();
    assert!(RadixSort::new(&ctx, KeyType::U32, 0).is_err());
    let sort = RadixSort::new(&ctx, KeyType::U32, 10).unwrap();
    let keys = ctx.create_buffer_with("keys", &[1u32; 8]).unwrap();
    let r = ctx.submit_and_wait(|rec| {
        sort.record(
            rec,
            Slice::whole(&keys),
            Slice::whole(&keys),
            Count::Host(9),
            32,
        )
    });
    assert!(r.is_err());
    let r = ctx.submit_and_wait(|rec| {
        sort.record(
            rec,
            Slice::whole(&keys),
            Slice::whole(&keys),
            Count::Host(0),
            32,
        )
    });
    assert!(r.is_err());
    assert_valid(&ctx);
}

/// Under a pretended limit of 64 workgroups per dimension, the sort's tiles run in a folded
/// grid (direct and indirect) and still sort stably.
#[test]
fn sorts_with_grids_folded_beyond_the_device_limit() {
    let ctx = common::folding_context();
    let n = 300_000;
    let sort = RadixSort::new(&ctx, KeyType::U32, n).unwrap();
    assert!(n.div_ceil(sort.tile_size()) > common::FOLDING_LIMIT);
    let keys = Rng::new(32).u32s(n as usize);
    check_u32(&ctx, &sort, &keys, "folded");
    assert_valid(&ctx);
}
