//! CPU references of the GPU primitives, written for clarity over speed.

use crate::prims::reduce::{Aabb, ReduceOp};

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
