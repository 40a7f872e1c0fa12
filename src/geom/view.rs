//! A pinhole view: an eye, its ray basis and an image size, the frame of every structure built
//! in screen space (the screen grid of [`crate::accel::grid`]) and of the renderer's camera
//! rays, which [`PinholeView::sample_ray`] makes as `glsl/render/camera_rays.comp` does.

use super::ray::Ray;

/// An eye and the basis its rays are made from: the ray through normalised image coordinates
/// (x, y) in [-1, 1]² (y up) has direction `forward + x right + y up`; pixel (px, py), rows
/// from the top, is at x = (px + 0.5) / width * 2 - 1, y = 1 - (py + 0.5) / height * 2.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PinholeView {
    /// Eye position.
    pub origin: [f32; 3],
    /// Unit view direction.
    pub forward: [f32; 3],
    /// Right, orthogonal to `forward`, scaled by the half-width of the view at distance 1.
    pub right: [f32; 3],
    /// Up, orthogonal to both, scaled by the half-height of the view at distance 1.
    pub up: [f32; 3],
    /// Image width in pixels.
    pub width: u32,
    /// Image height in pixels.
    pub height: u32,
}

/// Where sample `sample` of `samples` falls in pixel `pixel` (row-major from the top-left),
/// in [0, 1)² from the pixel's top-left corner (`sample_offset` in
/// `glsl/render/camera_rays.comp`): the centre for one sample; else the pixel is cut into
/// m x m strata, m = ceil(sqrt(samples)), sample s takes stratum s (row-major), and a point
/// in it is chosen by a hash of the pixel and the sample, so every device and thread count
/// makes the same samples. A box filter: every sample of a pixel weighs the same.
pub fn sample_offset(pixel: u32, sample: u32, samples: u32) -> [f32; 2] {
    if samples <= 1 {
        return [0.5, 0.5];
    }
    let strata = (samples as f32).sqrt().ceil() as u32;
    let strata = if strata * strata < samples {
        strata + 1
    } else {
        strata
    };
    let hash = sample_hash(pixel.wrapping_mul(0x9e37_79b9) ^ sample);
    let (sx, sy) = (sample % strata, sample / strata % strata);
    [
        (sx as f32 + unit_float(hash)) / strata as f32,
        (sy as f32 + unit_float(sample_hash(hash))) / strata as f32,
    ]
}

/// A 32-bit integer hash (`sample_hash` in `glsl/common/sampling.glsl`; Chris Wellons'
/// "lowbias32").
pub fn sample_hash(mut x: u32) -> u32 {
    x ^= x >> 16;
    x = x.wrapping_mul(0x7feb_352d);
    x ^= x >> 15;
    x = x.wrapping_mul(0x846c_a68b);
    x ^ (x >> 16)
}

/// The top 24 bits of `hash` as a float in [0, 1), exactly (`unit_float` in
/// `glsl/common/sampling.glsl`).
pub fn unit_float(hash: u32) -> f32 {
    (hash >> 8) as f32 * (1.0 / 16_777_216.0)
}

impl PinholeView {
    /// The primary ray through the centre of pixel (`x`, `y`).
    pub fn primary_ray(&self, x: u32, y: u32) -> Ray {
        self.sample_ray(x, y, 0, 1)
    }

    /// The primary ray of sample `sample` of `samples` in pixel (`x`, `y`) ([`sample_offset`]).
    pub fn sample_ray(&self, x: u32, y: u32, sample: u32, samples: u32) -> Ray {
        let [ox, oy] = sample_offset(y * self.width + x, sample, samples);
        let u = (x as f32 + ox) / self.width as f32 * 2.0 - 1.0;
        let v = 1.0 - (y as f32 + oy) / self.height as f32 * 2.0;
        Ray {
            origin: self.origin,
            tmin: 0.0,
            direction: std::array::from_fn(|k| {
                self.forward[k] + u * self.right[k] + v * self.up[k]
            }),
            tmax: f32::INFINITY,
        }
    }

    /// How far apart the camera rays of neighbouring pixels are per unit of their `t`: the
    /// spacing of their directions, one pixel of the image plane at distance 1. A camera ray's
    /// cone is `t` times this wide where it hits (the renderer's texture level of detail).
    pub fn ray_spacing(&self) -> f32 {
        let up = self.up.iter().map(|x| x * x).sum::<f32>().sqrt();
        2.0 * up / self.height as f32
    }

    /// Pixels in the image.
    pub fn pixels(&self) -> u64 {
        self.width as u64 * self.height as u64
    }

    /// `right` and `up` divided by their squared lengths: the dot product of a point's offset
    /// from the eye with them, over its depth along `forward`, gives its normalised image
    /// coordinates. Errors on an empty image or a basis that is not finite and non-zero.
    pub fn inverse_basis(&self) -> Result<([f32; 3], [f32; 3]), String> {
        let scaled = |v: [f32; 3]| -> Option<[f32; 3]> {
            let length2 = v.iter().map(|x| x * x).sum::<f32>();
            (length2.is_finite() && length2 > 0.0).then(|| v.map(|x| x / length2))
        };
        let finite = self
            .origin
            .iter()
            .chain(&self.forward)
            .all(|x| x.is_finite());
        match (scaled(self.right), scaled(self.up)) {
            (Some(r), Some(u)) if finite && self.width > 0 && self.height > 0 => Ok((r, u)),
            _ => Err(format!("degenerate view {self:?}")),
        }
    }
}
