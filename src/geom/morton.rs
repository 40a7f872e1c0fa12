//! The Morton frame and Morton codes: the first steps of every Morton-ordered build (LBVH,
//! octree, k-d tree).
//!
//! A point is quantized in a [`MortonFrame`] to `bits` bits per axis and its three coordinates
//! are bit-interleaved with x in the most significant position of each triple: bit `k` of x,
//! y and z lands at bit `3k + 2`, `3k + 1` and `3k` of the code. 30-bit codes use 10 bits per
//! axis (a `u32`), 63-bit codes 21 bits per axis (a `u64`). The GPU kernels compute the same
//! f32 formula in the same order without fused multiply-adds; their division for the grid
//! scale may round differently (SPIR-V allows 2.5 ulp), moving points that lie within that of
//! a cell boundary into the next cell.

use super::aabb::{EMPTY_BOUNDS, union};

/// Maps points into the integer grid of a Morton code: `q = floor((p - origin) * scale)`,
/// clamped to `[0, 2^bits - 1]`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MortonFrame {
    /// Smallest corner of the quantized region.
    pub origin: [f32; 3],
    /// Grid cells per unit length along each axis (0 along a flat axis).
    pub scale: [f32; 3],
}

impl MortonFrame {
    /// The frame of the region `lo..hi` with `bits` bits per axis: `origin = lo` and
    /// `scale = 2^bits / (hi - lo)`, or 0 where `hi - lo` is not positive.
    pub fn new(lo: [f32; 3], hi: [f32; 3], bits: u32) -> Self {
        let cells = (1u64 << bits) as f32;
        Self {
            origin: lo,
            scale: std::array::from_fn(|k| {
                let extent = hi[k] - lo[k];
                if extent > 0.0 { cells / extent } else { 0.0 }
            }),
        }
    }

    /// The frame of the bounds of `points` (`f32::min` / `f32::max`); of the origin alone when
    /// there are no points.
    pub fn from_points(points: &[[f32; 3]], bits: u32) -> Self {
        if points.is_empty() {
            return Self::new([0.0; 3], [0.0; 3], bits);
        }
        let (lo, hi) = points
            .iter()
            .fold(EMPTY_BOUNDS, |b, p| union(&b, &(*p, *p)));
        Self::new(lo, hi, bits)
    }

    /// Grid coordinates of `p` with `bits` bits per axis.
    pub fn quantize(&self, p: [f32; 3], bits: u32) -> [u32; 3] {
        let max = ((1u64 << bits) - 1) as f32;
        std::array::from_fn(|k| {
            ((p[k] - self.origin[k]) * self.scale[k])
                .floor()
                .clamp(0.0, max) as u32
        })
    }
}

/// The number of Morton bits per axis and the key width they are sorted in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MortonBits {
    /// 10 bits per axis, 30-bit codes in 32-bit keys: the fastest sort, enough for most
    /// scenes.
    #[default]
    Bits30,
    /// 21 bits per axis, 63-bit codes in 64-bit keys: for detail tiny against the extent.
    Bits63,
}

impl MortonBits {
    /// Bits per axis: 10 or 21.
    pub const fn per_axis(self) -> u32 {
        match self {
            Self::Bits30 => 10,
            Self::Bits63 => 21,
        }
    }

    /// Significant bits of a code: 30 or 63 (what a radix sort of the codes orders by).
    pub const fn code_bits(self) -> u32 {
        3 * self.per_axis()
    }

    /// Width of the sort key holding the code: 32 or 64.
    pub const fn key_bits(self) -> u32 {
        match self {
            Self::Bits30 => 32,
            Self::Bits63 => 64,
        }
    }

    /// The codes of `points` (widened to u64) in their [`MortonFrame::from_points`] frame.
    pub fn point_codes(self, points: &[[f32; 3]]) -> (Vec<u64>, MortonFrame) {
        encode_points(points, self.per_axis(), morton63)
    }
}

/// Spreads the low 21 bits of `x` so that bit `k` lands at bit `3k`.
fn spread_bits(x: u64) -> u64 {
    let mut x = x & 0x1f_ffff;
    x = (x | (x << 32)) & 0x001f_0000_0000_ffff;
    x = (x | (x << 16)) & 0x001f_0000_ff00_00ff;
    x = (x | (x << 8)) & 0x100f_00f0_0f00_f00f;
    x = (x | (x << 4)) & 0x10c3_0c30_c30c_30c3;
    (x | (x << 2)) & 0x1249_2492_4924_9249
}

/// Inverse of [`spread_bits`]: gathers bits `0, 3, 6, ...` of `x` into its low 21 bits.
fn compact_bits(x: u64) -> u64 {
    let mut x = x & 0x1249_2492_4924_9249;
    x = (x ^ (x >> 2)) & 0x10c3_0c30_c30c_30c3;
    x = (x ^ (x >> 4)) & 0x100f_00f0_0f00_f00f;
    x = (x ^ (x >> 8)) & 0x001f_0000_ff00_00ff;
    x = (x ^ (x >> 16)) & 0x001f_0000_0000_ffff;
    (x ^ (x >> 32)) & 0x1f_ffff
}

/// The 63-bit Morton code of grid coordinates (their low 21 bits).
pub fn morton63(q: [u32; 3]) -> u64 {
    (spread_bits(q[0] as u64) << 2) | (spread_bits(q[1] as u64) << 1) | spread_bits(q[2] as u64)
}

/// The 30-bit Morton code of grid coordinates (their low 10 bits).
pub fn morton30(q: [u32; 3]) -> u32 {
    morton63(q.map(|c| c & 0x3ff)) as u32
}

/// The grid coordinates of a 63-bit (or, widened, 30-bit) Morton code.
pub fn morton_decode(code: u64) -> [u32; 3] {
    [2, 1, 0].map(|shift| compact_bits(code >> shift) as u32)
}

/// Quantizes `points` in their frame with `bits` per axis and encodes each.
pub(crate) fn encode_points<K>(
    points: &[[f32; 3]],
    bits: u32,
    encode: impl Fn([u32; 3]) -> K,
) -> (Vec<K>, MortonFrame) {
    let frame = MortonFrame::from_points(points, bits);
    let codes = points
        .iter()
        .map(|&p| encode(frame.quantize(p, bits)))
        .collect();
    (codes, frame)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geom::aabb::{centroid, triangle_bounds};
    use crate::rng::Rng;

    /// Bit `k` of axis `a` to bit `3k + 2 - a`, one bit at a time.
    fn naive_morton(q: [u32; 3], bits: u32) -> u64 {
        let mut code = 0u64;
        for k in 0..bits {
            for (a, &c) in q.iter().enumerate() {
                code |= ((c as u64 >> k) & 1) << (3 * k + 2 - a as u32);
            }
        }
        code
    }

    #[test]
    fn morton_matches_naive_interleave() {
        let mut rng = Rng::new(1);
        for _ in 0..10_000 {
            let q = [rng.next_u32(), rng.next_u32(), rng.next_u32()];
            let q21 = q.map(|c| c & 0x1f_ffff);
            let q10 = q.map(|c| c & 0x3ff);
            assert_eq!(morton63(q), naive_morton(q21, 21));
            assert_eq!(morton30(q) as u64, naive_morton(q10, 10));
            assert_eq!(morton_decode(morton63(q)), q21);
            assert_eq!(morton_decode(morton30(q) as u64), q10);
        }
        assert_eq!(morton30([1023; 3]), (1 << 30) - 1);
        assert_eq!(morton63([(1 << 21) - 1; 3]), (1 << 63) - 1);
        assert_eq!(morton30([1, 0, 0]), 4);
        assert_eq!(morton30([0, 1, 0]), 2);
        assert_eq!(morton30([0, 0, 1]), 1);
    }

    #[test]
    fn quantize_covers_the_grid_and_clamps() {
        let frame = MortonFrame::new([0.0, -1.0, 5.0], [1.0, 1.0, 5.0], 10);
        assert_eq!(frame.scale, [1024.0, 512.0, 0.0]);
        assert_eq!(frame.quantize([0.0, -1.0, 5.0], 10), [0, 0, 0]);
        assert_eq!(frame.quantize([1.0, 1.0, 7.0], 10), [1023, 1023, 0]);
        assert_eq!(frame.quantize([0.5, 0.0, 5.0], 10), [512, 512, 0]);
        assert_eq!(frame.quantize([-3.0, 9.0, 5.0], 10), [0, 1023, 0]);
        assert_eq!(frame.quantize([f32::NAN, 0.0, 5.0], 10)[0], 0);
    }

    #[test]
    fn triangle_codes_use_the_centroid_frame() {
        let positions = [
            [0.0, 0.0, 0.0],
            [2.0, 0.0, 0.0],
            [0.0, 2.0, 0.0],
            [4.0, 4.0, 4.0],
            [6.0, 4.0, 4.0],
            [4.0, 6.0, 4.0],
        ];
        let triangles = [[0, 1, 2], [3, 4, 5]];
        assert_eq!(
            triangle_bounds(&positions, &triangles),
            vec![([0.0; 3], [2.0, 2.0, 0.0]), ([4.0; 3], [6.0, 6.0, 4.0])]
        );
        let centroids: Vec<[f32; 3]> = triangle_bounds(&positions, &triangles)
            .iter()
            .map(centroid)
            .collect();
        let (codes, frame) = MortonBits::Bits30.point_codes(&centroids);
        assert_eq!(frame.origin, [1.0, 1.0, 0.0]);
        assert_eq!(frame.scale, [256.0, 256.0, 256.0]);
        assert_eq!(codes, vec![0, (1 << 30) - 1]);
        let (codes, _) = MortonBits::Bits63.point_codes(&centroids);
        assert_eq!(codes, vec![0, (1 << 63) - 1]);
    }

    #[test]
    fn point_codes_agree_across_widths() {
        let mut rng = Rng::new(2);
        let points: Vec<[f32; 3]> = (0..1000)
            .map(|_| std::array::from_fn(|_| rng.f32_in(-10.0, 10.0)))
            .collect();
        let (c30, f30) = MortonBits::Bits30.point_codes(&points);
        let (c63, f63) = MortonBits::Bits63.point_codes(&points);
        assert_eq!(f30.origin, f63.origin);
        assert_eq!(f63.scale.map(|s| s / 2048.0), f30.scale);
        for (&a, &b) in c30.iter().zip(&c63) {
            // The scales differ by 2^11 exactly, so the coarse cells are the fine cells >> 11.
            assert_eq!(morton_decode(a), morton_decode(b).map(|q| q >> 11));
        }
        assert!(MortonBits::Bits30.point_codes(&[]).0.is_empty());
    }
}
