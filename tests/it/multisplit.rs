//! Multi-split against the CPU reference: one-, two- and three-level bin counts (including
//! Patidar's 128x128 tiles x 16 slabs), all elements in one bin, direct and indirect.

use crate::common;

use canopy::prims::cpu;
use canopy::prims::multisplit::Multisplit;
use canopy::vk::Slice;
use canopy::vk::{Context, MemoryKind};
use common::{Rng, assert_valid, context, sizes};

fn check(ctx: &Context, split: &Multisplit, bins: u32, ids: &[u32], indirect: bool) {
    let n = ids.len() as u32;
    let values: Vec<u32> = (0..n).collect();
    let (eids, evals, estarts) = cpu::multisplit(ids, &values, bins);
    let ids_buf = ctx.create_buffer_with("ids", ids).unwrap();
    let values_buf = ctx.create_buffer_with("values", &values).unwrap();
    let starts_buf = ctx
        .create_buffer("starts", 4 * (bins as u64 + 4), MemoryKind::Device)
        .unwrap();
    let count_buf = ctx.create_buffer_with("count", &[n]).unwrap();
    ctx.submit_and_wait(|rec| {
        let count = common::count_of(&count_buf, n, indirect);
        split.record(
            rec,
            Slice::whole(&ids_buf),
            Slice::whole(&values_buf),
            Slice::whole(&starts_buf),
            count,
        )
    })
    .unwrap();
    let gids: Vec<u32> = ctx.download(&ids_buf, 0, n as usize).unwrap();
    let gvals: Vec<u32> = ctx.download(&values_buf, 0, n as usize).unwrap();
    let gstarts: Vec<u32> = ctx.download(&starts_buf, 0, bins as usize + 1).unwrap();
    assert!(gids == eids, "bins={bins} n={n}: ids differ");
    assert!(
        gvals == evals,
        "bins={bins} n={n}: values (stability) differ"
    );
    assert!(gstarts == estarts, "bins={bins} n={n}: bin starts differ");
}

#[test]
fn multisplit_matches_cpu_at_one_two_and_three_levels() {
    let ctx = context();
    let mut rng = Rng::new(20);
    for bins in [1u32, 7, 256, 1000, 128 * 128 * 16] {
        let split = Multisplit::new(&ctx, bins, 1_000_000).unwrap();
        for n in sizes(&ctx, 4096)
            .into_iter()
            .filter(|&n| n <= 100_000 || bins == 1000)
        {
            let ids: Vec<u32> = (0..n).map(|_| rng.below(bins)).collect();
            check(&ctx, &split, bins, &ids, n % 2 == 0);
        }
    }
    assert_valid(&ctx);
}

#[test]
fn multisplit_levels_and_single_bin() {
    let ctx = context();
    assert_eq!(Multisplit::new(&ctx, 256, 10).unwrap().levels(), 1);
    assert_eq!(Multisplit::new(&ctx, 257, 10).unwrap().levels(), 2);
    assert_eq!(
        Multisplit::new(&ctx, 128 * 128 * 16, 10).unwrap().levels(),
        3
    );
    assert_eq!(Multisplit::new(&ctx, 1 << 25, 10).unwrap().levels(), 4);
    assert!(Multisplit::new(&ctx, 0, 10).is_err());
    let split = Multisplit::new(&ctx, 64, 50_000).unwrap();
    check(&ctx, &split, 64, &vec![63; 50_000], false);
    check(&ctx, &split, 64, &vec![0; 50_000], true);
    assert_valid(&ctx);
}

/// Under a pretended limit of 64 workgroups per dimension, the histogram and scatter passes
/// run in folded grids and match the CPU, direct and indirect.
#[test]
fn multisplit_folds_grids_beyond_the_device_limit() {
    let ctx = common::folding_context();
    let mut rng = Rng::new(34);
    let n = 300_000u32;
    let bins = 1000;
    let split = Multisplit::new(&ctx, bins, n).unwrap();
    let ids: Vec<u32> = (0..n).map(|_| rng.below(bins)).collect();
    for indirect in [false, true] {
        check(&ctx, &split, bins, &ids, indirect);
    }
    assert_valid(&ctx);
}
