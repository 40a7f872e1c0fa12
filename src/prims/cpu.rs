//! CPU references of the GPU primitives, written for clarity over speed.

use crate::prims::reduce::ReduceOp;

use crate::geom::aabb::Aabb;

/// Reduction of u32 values (sums wrap modulo 2^32).
pub fn reduce_u32(values: &[u32], op: ReduceOp) -> u32 {
    match op {
        ReduceOp::Add => values.iter().fold(0u32, |a, &b| a.wrapping_add(b)),
        ReduceOp::Min => values.iter().copied().min().unwrap_or(u32::MAX),
        ReduceOp::Max => values.iter().copied().max().unwrap_or(0),
    }
}

/// Reduction of f32 values (sums in f64, so the GPU's order may differ by rounding).
pub fn reduce_f32(values: &[f32], op: ReduceOp) -> f32 {
    match op {
        ReduceOp::Add => values.iter().map(|&v| v as f64).sum::<f64>() as f32,
        ReduceOp::Min => values.iter().copied().fold(f32::INFINITY, f32::min),
        ReduceOp::Max => values.iter().copied().fold(f32::NEG_INFINITY, f32::max),
    }
}

/// Union of boxes.
pub fn aabb_union(boxes: &[Aabb]) -> Aabb {
    boxes.iter().fold(Aabb::EMPTY, |a, b| a.union(b))
}

/// Exclusive (or inclusive) prefix sums, wrapping modulo 2^32.
pub fn scan_u32(values: &[u32], inclusive: bool) -> Vec<u32> {
    let mut sum = 0u32;
    values
        .iter()
        .map(|&v| {
            let before = sum;
            sum = sum.wrapping_add(v);
            if inclusive { sum } else { before }
        })
        .collect()
}

/// Stable sort of (key, value) pairs by key: the reference for the radix sort.
pub fn sort_pairs<K: Ord + Copy>(keys: &[K], values: &[u32]) -> (Vec<K>, Vec<u32>) {
    let mut pairs: Vec<(K, u32)> = keys.iter().copied().zip(values.iter().copied()).collect();
    pairs.sort_by_key(|p| p.0);
    pairs.into_iter().unzip()
}

/// Stable stream compaction: the `values` (or, when `None`, the indices) whose flag is nonzero,
/// in their original order; the number kept is the length.
pub fn compact_u32(values: Option<&[u32]>, flags: &[u32]) -> Vec<u32> {
    flags
        .iter()
        .enumerate()
        .filter(|(_, f)| **f != 0)
        .map(|(i, _)| values.map_or(i as u32, |v| v[i]))
        .collect()
}

/// Segmented reduction of u32 values: `out[ids[i]]` combined with `values[i]` for every `i`
/// with `ids[i] < segments` (others ignored), starting from the identity (sums wrap).
pub fn segmented_reduce_u32(
    values: &[u32],
    ids: &[u32],
    segments: usize,
    op: ReduceOp,
) -> Vec<u32> {
    let identity = reduce_u32(&[], op);
    let mut out = vec![identity; segments];
    for (&v, &id) in values.iter().zip(ids) {
        if let Some(o) = out.get_mut(id as usize) {
            *o = reduce_u32(&[*o, v], op);
        }
    }
    out
}

/// Segmented reduction of f32 values, as [`segmented_reduce_u32`]. Sums are accumulated in f64
/// (the GPU's order may differ by rounding); min and max follow the order of
/// [`crate::prims::segmented_reduce::encode_ordered`] (-0 below +0, NaNs by sign beyond the
/// infinities), exactly as the GPU does. Empty segments are 0, +inf or -inf.
pub fn segmented_reduce_f32(
    values: &[f32],
    ids: &[u32],
    segments: usize,
    op: ReduceOp,
) -> Vec<f32> {
    use crate::prims::segmented_reduce::{decode_ordered, encode_ordered};
    match op {
        ReduceOp::Add => {
            let mut sums = vec![0f64; segments];
            for (&v, &id) in values.iter().zip(ids) {
                if let Some(s) = sums.get_mut(id as usize) {
                    *s += v as f64;
                }
            }
            sums.into_iter().map(|s| s as f32).collect()
        }
        ReduceOp::Min | ReduceOp::Max => {
            let encoded: Vec<u32> = values.iter().map(|&v| encode_ordered(v)).collect();
            let mut out = vec![encode_ordered(reduce_f32(&[], op)); segments];
            for (&e, &id) in encoded.iter().zip(ids) {
                if let Some(o) = out.get_mut(id as usize) {
                    *o = reduce_u32(&[*o, e], op);
                }
            }
            out.into_iter().map(decode_ordered).collect()
        }
    }
}

/// Multi-split reference: elements grouped by bin, stable, and the start of each bin
/// (`bins + 1` entries, the last the number of elements with an id below `bins`).
pub fn multisplit(bin_ids: &[u32], values: &[u32], bins: u32) -> (Vec<u32>, Vec<u32>, Vec<u32>) {
    let (ids, vals) = sort_pairs(bin_ids, values);
    let mut starts = vec![0u32; bins as usize + 1];
    for &id in bin_ids.iter().filter(|&&id| id < bins) {
        starts[id as usize + 1] += 1;
    }
    for b in 1..starts.len() {
        starts[b] += starts[b - 1];
    }
    (ids, vals, starts)
}
