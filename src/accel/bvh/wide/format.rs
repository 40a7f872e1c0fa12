//! The compressed 8-wide node (`struct WideNode` in `glsl/bvh/wide_format.glsl`) and its box
//! quantization, shared by the collapse's CPU reference and traversal's CPU mirror.
//!
//! A node stores the box of each of up to [`WIDTH`] children in 8 bits per plane, relative to
//! a frame: the node's own box corner `origin` and, per axis, a power-of-two step `2^e` with
//! `origin + 255 · 2^e` at or past the box's far side. A child's plane `q` decodes to
//! `origin + q · 2^e` (one rounding, no fused multiply-add), and every child's decoded box
//! contains its true box. Children take slots `0..count` in order; a slot is an internal
//! child (its bit in the internal mask) or a one-triangle leaf (its bit in the leaf mask).
//! The internal children of a node are consecutive nodes from `child_base`, in slot order; its
//! leaves are consecutive triangles from `triangle_base`, in slot order.

use crate::geom::aabb::Bounds;

/// Children per node.
pub const WIDTH: usize = 8;
/// The smallest step exponent: boxes thinner than `255 · 2^-100` still quantize exactly.
pub const MIN_STEP_EXPONENT: i32 = -100;
/// The largest step exponent (keeps `2^-e` a normal float).
pub const MAX_STEP_EXPONENT: i32 = 126;

/// One node: frame, child and triangle bases, slot masks and quantized child boxes. 80 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct WideNode {
    /// The frame's origin: the node box's smallest corner.
    pub origin: [f32; 3],
    /// Per axis the step exponent biased by 127 (bytes 0, 1, 2), and the internal-slot mask
    /// (byte 3).
    pub exponents_internal: u32,
    /// The node index of the first internal child.
    pub child_base: u32,
    /// The triangle index of the first leaf child.
    pub triangle_base: u32,
    /// The leaf-slot mask (low byte).
    pub leaf_mask: u32,
    /// Triangles below the node.
    pub leaf_count: u32,
    /// Quantized planes, a byte per slot: low x, low y, low z, high x, high y, high z, each
    /// eight bytes (two words) in slot order.
    pub planes: [u32; 12],
}

const _: () = assert!(std::mem::size_of::<WideNode>() == 80);

/// `2^e` for `e` in the normal range.
pub fn pow2(e: i32) -> f32 {
    debug_assert!((-126..=127).contains(&e));
    f32::from_bits(((e + 127) as u32) << 23)
}

/// The plane `q` of a frame axis with origin `origin` and step `step`.
pub fn decode(origin: f32, step: f32, q: u32) -> f32 {
    origin + q as f32 * step
}

/// The step exponent of an axis spanning `lo..=hi`: the smallest (from
/// [`MIN_STEP_EXPONENT`]) whose plane 255 decodes at or past `hi`.
pub fn step_exponent(lo: f32, hi: f32) -> i32 {
    let extent = hi - lo;
    let mut e = if extent >= pow2(MIN_STEP_EXPONENT) {
        // 255 · 2^(E - 7) < 2^(E + 1), so the first guess is at most one short.
        ((extent.to_bits() >> 23) & 0xff) as i32 - 127 - 7
    } else {
        MIN_STEP_EXPONENT
    };
    e = e.clamp(MIN_STEP_EXPONENT, MAX_STEP_EXPONENT);
    while e < MAX_STEP_EXPONENT && decode(lo, pow2(e), 255) < hi {
        e += 1;
    }
    e
}

/// The largest plane at or below `x`.
pub fn quantize_low(origin: f32, e: i32, x: f32) -> u32 {
    let step = pow2(e);
    let mut q = ((x - origin) * pow2(-e)).floor().clamp(0.0, 255.0) as u32;
    while q > 0 && decode(origin, step, q) > x {
        q -= 1;
    }
    q
}

/// The smallest plane at or above `x`.
pub fn quantize_high(origin: f32, e: i32, x: f32) -> u32 {
    let step = pow2(e);
    let mut q = ((x - origin) * pow2(-e)).ceil().clamp(0.0, 255.0) as u32;
    while q < 255 && decode(origin, step, q) < x {
        q += 1;
    }
    q
}

/// A child of a node being encoded.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Slot {
    /// An internal child and its box.
    Internal(Bounds),
    /// A one-triangle leaf and its box.
    Leaf(Bounds),
}

impl Slot {
    /// The child's box.
    pub fn bounds(&self) -> &Bounds {
        match self {
            Slot::Internal(b) | Slot::Leaf(b) => b,
        }
    }
}

impl WideNode {
    /// The node over `slots` (1 to [`WIDTH`]), quantized in the frame of their union.
    pub fn encode(slots: &[Slot], child_base: u32, triangle_base: u32, leaf_count: u32) -> Self {
        assert!((1..=WIDTH).contains(&slots.len()), "{} slots", slots.len());
        let mut lo = [f32::INFINITY; 3];
        let mut hi = [f32::NEG_INFINITY; 3];
        for slot in slots {
            let b = slot.bounds();
            for k in 0..3 {
                lo[k] = lo[k].min(b.0[k]);
                hi[k] = hi[k].max(b.1[k]);
            }
        }
        let e: [i32; 3] = std::array::from_fn(|k| step_exponent(lo[k], hi[k]));
        let mut node = WideNode {
            origin: lo,
            exponents_internal: (0..3).map(|k| ((e[k] + 127) as u32) << (8 * k)).sum(),
            child_base,
            triangle_base,
            leaf_mask: 0,
            leaf_count,
            planes: [0; 12],
        };
        for (j, slot) in slots.iter().enumerate() {
            match slot {
                Slot::Internal(_) => node.exponents_internal |= 1 << (24 + j),
                Slot::Leaf(_) => node.leaf_mask |= 1 << j,
            }
            let b = slot.bounds();
            for k in 0..3 {
                node.set_plane(k, j, quantize_low(lo[k], e[k], b.0[k]));
                node.set_plane(3 + k, j, quantize_high(lo[k], e[k], b.1[k]));
            }
        }
        node
    }

    fn set_plane(&mut self, plane: usize, slot: usize, q: u32) {
        let word = 2 * plane + slot / 4;
        self.planes[word] |= q << (8 * (slot % 4));
    }

    fn plane(&self, plane: usize, slot: usize) -> u32 {
        (self.planes[2 * plane + slot / 4] >> (8 * (slot % 4))) & 0xff
    }

    /// The internal-slot mask.
    pub fn internal_mask(&self) -> u32 {
        self.exponents_internal >> 24
    }

    /// Children: the slots in use.
    pub fn slot_count(&self) -> usize {
        (self.internal_mask() | self.leaf_mask).count_ones() as usize
    }

    /// The step exponent of `axis`.
    pub fn step_exponent(&self, axis: usize) -> i32 {
        ((self.exponents_internal >> (8 * axis)) & 0xff) as i32 - 127
    }

    /// The quantized planes of slot `j`: low and high, per axis.
    pub fn slot_planes(&self, j: usize) -> ([u32; 3], [u32; 3]) {
        (
            std::array::from_fn(|k| self.plane(k, j)),
            std::array::from_fn(|k| self.plane(3 + k, j)),
        )
    }

    /// The decoded box of slot `j`: what traversal tests of rays with a zero direction
    /// component.
    pub fn slot_bounds(&self, j: usize) -> Bounds {
        let origin = self.origin;
        let step: [f32; 3] = std::array::from_fn(|k| pow2(self.step_exponent(k)));
        (
            std::array::from_fn(|k| decode(origin[k], step[k], self.plane(k, j))),
            std::array::from_fn(|k| decode(origin[k], step[k], self.plane(3 + k, j))),
        )
    }

    /// What slot `j` holds: the index of an internal child's node, or of a leaf's triangle
    /// (in the wide tree's triangle order); `None` for an empty slot.
    pub fn child(&self, j: usize) -> Option<WideChild> {
        let below = (1u32 << j) - 1;
        if self.internal_mask() >> j & 1 != 0 {
            Some(WideChild::Node(
                self.child_base + (self.internal_mask() & below).count_ones(),
            ))
        } else if self.leaf_mask >> j & 1 != 0 {
            Some(WideChild::Triangle(
                self.triangle_base + (self.leaf_mask & below).count_ones(),
            ))
        } else {
            None
        }
    }
}

/// A child of a [`WideNode`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WideChild {
    /// An internal node's index.
    Node(u32),
    /// A leaf's triangle index in the wide tree's order.
    Triangle(u32),
}
