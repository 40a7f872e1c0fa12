//! Axis-aligned boxes: [`Aabb`] as the GPU stores it, and the `(min, max)` [`Bounds`] the CPU
//! references compute with (union, surface area, containment, triangle boxes, centroids).

/// An axis-aligned box as the GPU stores it (`struct Aabb` in the kernels): 32 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Aabb {
    /// Smallest corner.
    pub min: [f32; 3],
    /// Padding (16-byte alignment of `max`).
    pub pad0: u32,
    /// Largest corner.
    pub max: [f32; 3],
    /// Padding (32-byte size).
    pub pad1: u32,
}

impl Aabb {
    /// The empty box, identity of the union.
    pub const EMPTY: Aabb = Aabb {
        min: [f32::INFINITY; 3],
        pad0: 0,
        max: [f32::NEG_INFINITY; 3],
        pad1: 0,
    };

    /// The box from two corners.
    pub fn new(min: [f32; 3], max: [f32; 3]) -> Self {
        Self {
            min,
            pad0: 0,
            max,
            pad1: 0,
        }
    }

    /// The smallest box holding both.
    pub fn union(&self, other: &Aabb) -> Aabb {
        Aabb::new(
            std::array::from_fn(|i| self.min[i].min(other.min[i])),
            std::array::from_fn(|i| self.max[i].max(other.max[i])),
        )
    }
}

/// An axis-aligned box as `(min, max)`.
pub type Bounds = ([f32; 3], [f32; 3]);

/// The empty box (`min = +inf`, `max = -inf`), identity of [`union`].
pub const EMPTY_BOUNDS: Bounds = ([f32::INFINITY; 3], [f32::NEG_INFINITY; 3]);

/// Componentwise union of two boxes (`f32::min` / `f32::max`).
pub fn union(a: &Bounds, b: &Bounds) -> Bounds {
    (
        std::array::from_fn(|k| a.0[k].min(b.0[k])),
        std::array::from_fn(|k| a.1[k].max(b.1[k])),
    )
}

/// Surface area `2(xy + yz + zx)` in f64; 0 for an empty box (any `max < min`).
pub fn surface_area(b: &Bounds) -> f64 {
    let e: [f64; 3] = std::array::from_fn(|k| b.1[k] as f64 - b.0[k] as f64);
    if e.iter().any(|&x| x < 0.0) {
        0.0
    } else {
        2.0 * (e[0] * e[1] + e[1] * e[2] + e[2] * e[0])
    }
}

/// Whether `outer` contains `inner` (closed boxes, exact comparisons; false with NaNs).
pub fn contains(outer: &Bounds, inner: &Bounds) -> bool {
    (0..3).all(|k| outer.0[k] <= inner.0[k] && inner.1[k] <= outer.1[k])
}

/// Per-triangle boxes: the componentwise min and max of the three vertices.
pub fn triangle_bounds(positions: &[[f32; 3]], triangles: &[[u32; 3]]) -> Vec<Bounds> {
    triangles
        .iter()
        .map(|t| {
            let [a, b, c] = t.map(|v| positions[v as usize]);
            (
                std::array::from_fn(|k| a[k].min(b[k]).min(c[k])),
                std::array::from_fn(|k| a[k].max(b[k]).max(c[k])),
            )
        })
        .collect()
}

/// The centroid of a box, `(min + max) * 0.5` per component.
pub fn centroid(b: &Bounds) -> [f32; 3] {
    std::array::from_fn(|k| (b.0[k] + b.1[k]) * 0.5)
}
