//! SplitMix64: a small, seeded, reproducible generator for test and benchmark input; and the
//! counter-based random numbers the GPU kernels draw ([`random_unit`]).

/// SplitMix64 state.
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// The next 32 random bits.
    pub fn next_u32(&mut self) -> u32 {
        (self.next_u64() >> 32) as u32
    }

    /// Uniform in `0..n`.
    pub fn below(&mut self, n: u32) -> u32 {
        ((self.next_u32() as u64 * n as u64) >> 32) as u32
    }

    /// Uniform in `[lo, hi)`.
    pub fn f32_in(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * (self.next_u32() >> 8) as f32 / (1u32 << 24) as f32
    }

    /// `n` random u32.
    pub fn u32s(&mut self, n: usize) -> Vec<u32> {
        (0..n).map(|_| self.next_u32()).collect()
    }
}

/// PCG's output permutation as a hash (`pcg_hash` in `glsl/common/random.glsl`).
pub fn pcg_hash(v: u32) -> u32 {
    let state = v.wrapping_mul(747_796_405).wrapping_add(2_891_336_453);
    let word = ((state >> ((state >> 28) + 4)) ^ state).wrapping_mul(277_803_737);
    (word >> 22) ^ word
}

/// A uniform number in [0, 1), 24 bits, for draw `draw` of stream `stream` under `seed`:
/// `random_unit` of `glsl/common/random.glsl`, bit for bit.
pub fn random_unit(seed: u32, stream: u32, draw: u32) -> f32 {
    let h = pcg_hash(seed ^ pcg_hash(stream ^ pcg_hash(draw)));
    (h >> 8) as f32 * (1.0 / 16_777_216.0)
}
