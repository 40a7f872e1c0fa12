//! The screen grid (Patidar & Narayanan 2008, seed 001): a screen-space structure rebuilt for
//! every frame, for the rays that share one centre of projection (a pinhole camera's).
//!
//! The image is cut into tiles of `tile_size` x `tile_size` pixels and each tile's depth range
//! into `slabs` slabs. Each triangle is projected through the view ([`PinholeView`]), clipped
//! at the near plane, and referenced in every tile its image bounds may cover (bounds widened
//! by a rounding margin, so no pixel whose ray hits it is left out), in the slab of its
//! nearest depth within the frame's depth range. The references are ordered by bin id
//! `tile * slabs + slab` with the multi-split the paper introduced
//! ([`crate::prims::multisplit`]): a tile's slabs are contiguous, front to back.
//!
//! A tile's rays are cast by one workgroup (`glsl/grid/cast.comp`): slab by slab, each slab's triangles
//! loaded in batches into shared memory; a ray is done once its closest hit lies in front of
//! the next slab, and the workgroup stops when all its rays are done.
//!
//! Build ([`build`]), one dispatch each: project (tile ranges, depth range and references
//! needed, reduced per subgroup), scan of the reference counts, references (bin ids), the
//! multi-split into bins. [`cpu`] is the reference of both the binning and the cast.
//!
//! Memory: the references are sized for [`GridParams::references_per_triangle`] per
//! triangle; a frame needing more grows them after its submission
//! ([`crate::accel::Structure::grow_if_overflowed`]) and is rendered again.

pub mod build;
pub mod cpu;

use crate::geom::PinholeView;
use crate::vk::{Error, Result};

/// The grid's shape.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GridParams {
    /// Tile side in pixels (the paper: 8). A tile is one workgroup of `tile_size²` rays, so
    /// `tile_size²` must be a multiple of the subgroup size and within the device's workgroup
    /// size.
    pub tile_size: u32,
    /// Depth slabs per tile (the paper: 16), 1 to 256.
    pub slabs: u32,
    /// The near plane's depth along the view direction, in world units: the grid sees nothing
    /// nearer (as a rasterizer's near plane; rays through other structures do).
    pub near: f32,
    /// References first allocated per triangle (more are allocated when a frame needs them).
    pub references_per_triangle: f32,
}

impl Default for GridParams {
    /// Tiles of 8 x 8 pixels, 16 slabs (the paper's), near plane at 10^-4, 2 references
    /// per triangle to start with.
    fn default() -> Self {
        Self {
            tile_size: 8,
            slabs: 16,
            near: 1e-4,
            references_per_triangle: 2.0,
        }
    }
}

impl GridParams {
    /// Checks the parameters (the tile size against the device's workgroup limits).
    pub fn check(&self, max_workgroup_size: u32, subgroup_size: u32) -> Result<()> {
        let invocations = self.tile_size as u64 * self.tile_size as u64;
        if self.tile_size == 0
            || invocations > max_workgroup_size as u64
            || !invocations.is_multiple_of(subgroup_size as u64)
        {
            return Err(Error::InvalidInput(format!(
                "grid tiles of {0}x{0} pixels: a tile is one workgroup, so the pixels must be \
                 a multiple of the subgroup size ({subgroup_size}) and at most \
                 {max_workgroup_size}",
                self.tile_size
            )));
        }
        if !(1..=256).contains(&self.slabs) {
            return Err(Error::InvalidInput(format!(
                "{} grid slabs: 1 to 256",
                self.slabs
            )));
        }
        if !(self.near.is_finite() && self.near > 0.0) {
            return Err(Error::InvalidInput(format!(
                "grid near plane at {}: a positive depth",
                self.near
            )));
        }
        if !(self.references_per_triangle.is_finite() && self.references_per_triangle > 0.0) {
            return Err(Error::InvalidInput(format!(
                "{} grid references per triangle: a positive number",
                self.references_per_triangle
            )));
        }
        Ok(())
    }
}

/// The tiles of a view: columns, rows; an error when the view or the grid does not fit the
/// tile coordinates (16 bits each) or the bin ids (32 bits).
pub fn tiles_of(view: &PinholeView, params: &GridParams) -> Result<(u32, u32)> {
    view.inverse_basis().map_err(Error::InvalidInput)?;
    let columns = view.width.div_ceil(params.tile_size);
    let rows = view.height.div_ceil(params.tile_size);
    let bins = columns as u64 * rows as u64 * params.slabs as u64;
    if columns > 1 << 16 || rows > 1 << 16 || bins >= u32::MAX as u64 {
        return Err(Error::InvalidInput(format!(
            "a {}x{} view in tiles of {} pixels with {} slabs: too many bins",
            view.width, view.height, params.tile_size, params.slabs
        )));
    }
    Ok((columns, rows))
}

/// What one build found (`GridFrame` in `glsl/grid/format.glsl`), 24 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct GridFrame {
    /// References the frame's triangles need.
    pub needed: u64,
    /// Bits of the nearest depth of any triangle in view.
    pub z_min_bits: u32,
    /// Bits of the farthest nearest-depth of any triangle in view.
    pub z_max_bits: u32,
    /// References written (`needed` when it fit the capacity, else 0).
    pub references: u32,
    /// Padding.
    pub pad: u32,
}

const _: () = assert!(std::mem::size_of::<GridFrame>() == 24);

impl GridFrame {
    /// The frame before a build: no references, an empty depth range.
    pub const EMPTY: GridFrame = GridFrame {
        needed: 0,
        z_min_bits: 0x7f80_0000,
        z_max_bits: 0,
        references: 0,
        pad: 0,
    };

    /// The depth range of the triangles in view (min > max when none).
    pub fn depth_range(&self) -> (f32, f32) {
        (
            f32::from_bits(self.z_min_bits),
            f32::from_bits(self.z_max_bits),
        )
    }

    /// Whether `depth` lies at or behind the front of slab `s` (1 <= s <= slabs), the depth
    /// `s / slabs` of the way through the depth range: `s (z_max - z_min) <= slabs (depth -
    /// z_min)`, with products, differences and a comparison only (`behind_slab_front` in
    /// `glsl/grid/format.glsl`). Vulkan rounds each of those correctly on every device, but
    /// may round a division by 2.5 ulps, so a quotient would place depths near a slab's front
    /// differently on the GPU. Never for an empty or single-depth range; holding for `s`, it
    /// holds for every smaller `s`.
    pub fn behind_slab_front(&self, slabs: u32, s: u32, depth: f32) -> bool {
        let (z_min, z_max) = self.depth_range();
        let range = z_max - z_min;
        range > 0.0 && s as f32 * range <= (depth - z_min) * slabs as f32
    }

    /// The slab of `depth` among `slabs`: the last one whose front it lies at or behind (0
    /// when none), by bisection as `slab_of` in `glsl/grid/format.glsl`. It never decreases
    /// with depth.
    pub fn slab_of(&self, slabs: u32, depth: f32) -> u32 {
        let (mut lo, mut hi) = (0, slabs - 1);
        while lo < hi {
            let mid = (lo + hi).div_ceil(2);
            if self.behind_slab_front(slabs, mid, depth) {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        lo
    }
}

/// A triangle in view (`GridTriangle` in `glsl/grid/format.glsl`), 16 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct GridTriangle {
    /// First tile, x | y << 16.
    pub tiles_lo: u32,
    /// Last tile (inclusive), x | y << 16.
    pub tiles_hi: u32,
    /// Nearest depth (clipped to the near plane).
    pub depth: f32,
    /// Padding.
    pub pad: u32,
}

const _: () = assert!(std::mem::size_of::<GridTriangle>() == 16);
