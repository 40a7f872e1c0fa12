//! Environment light: an equirectangular high-dynamic-range image of the light arriving from
//! every direction, read from a Radiance `.hdr` or an OpenEXR `.exr` file, with an intensity
//! and a turn about the vertical axis. The renderer shows it where rays leave the scene (the
//! background, reflections, refractions) and, when asked, lights diffuse surfaces with it
//! through sampled occlusion rays (`sky_radiance` in `glsl/common/shading.glsl`,
//! [`Environment::radiance`] here).
//!
//! Mapping: a unit direction d, first turned by -rotation about +y, is read at
//! u = 0.5 + atan2(d.x, -d.z) / 2π (so -z, the default camera's view, is the image's middle
//! column, and u grows towards +x) and v = acos(d.y) / π (the top row straight up), bilinear
//! between texel centres, repeating in u and clamped in v.

use std::path::Path;

use glam::Vec3;

use super::SceneError;
use super::gltf_source::guarded;
use super::texture::{
    DECODED_BYTES_FLOOR, DECODED_BYTES_PER_ENCODED_BYTE, MAX_TEXTURE_SIDE, Wrap, wrap_texel,
};

/// The largest environment file read.
pub const MAX_ENVIRONMENT_FILE_BYTES: u64 = 1 << 30;

/// An environment map as the renderer samples it.
#[derive(Clone, Debug, PartialEq)]
pub struct Environment {
    /// Texels on a row (all the way round).
    pub width: u32,
    /// Rows, from straight up to straight down.
    pub height: u32,
    /// Linear RGB radiance per texel, rows from the top.
    pub texels: Vec<[f32; 3]>,
    /// What the texels are multiplied by.
    pub intensity: f32,
    /// The map's turn about +y, in degrees (counter-clockwise seen from above).
    pub rotation_degrees: f32,
}

impl Environment {
    /// Reads `path` (`.hdr` or `.exr`, by its extension) at intensity 1 and no rotation. Its
    /// texels may take at most [`DECODED_BYTES_PER_ENCODED_BYTE`] times the file's size plus
    /// [`DECODED_BYTES_FLOOR`], and [`MAX_TEXTURE_SIDE`] on a side; every value must be
    /// finite and non-negative.
    pub fn load(path: &Path) -> Result<Self, SceneError> {
        let bytes = read_bounded(path)?;
        let extension = path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        let decoded = match extension.as_deref() {
            Some("hdr") => guarded(path, "image", || decode_hdr(&bytes))?,
            Some("exr") => guarded(path, "image", || decode_exr(&bytes))?,
            _ => {
                return Err(SceneError::malformed(
                    path,
                    "file name",
                    "an environment is a Radiance .hdr or an OpenEXR .exr file",
                ));
            }
        };
        let (width, height, texels) =
            decoded.map_err(|e| SceneError::malformed(path, "image", e))?;
        if let Some(t) = texels
            .iter()
            .position(|c| c.iter().any(|v| !v.is_finite() || *v < 0.0))
        {
            return Err(SceneError::malformed(
                path,
                format!("texel {t}"),
                format!("{:?} is not finite and non-negative", texels[t]),
            ));
        }
        Ok(Self {
            width,
            height,
            texels,
            intensity: 1.0,
            rotation_degrees: 0.0,
        })
    }

    /// The radiance arriving from direction `d` (need not be unit), as `sky_radiance` reads
    /// it (see the module docs).
    pub fn radiance(&self, d: Vec3) -> Vec3 {
        let [u, v] = self.coordinates(d);
        let x = u * self.width as f32 - 0.5;
        let y = v * self.height as f32 - 0.5;
        let (x0, y0) = (x.floor(), y.floor());
        let (fx, fy) = (x - x0, y - y0);
        let texel = |x: i32, y: i32| {
            let x = wrap_texel(x, self.width, Wrap::Repeat);
            let y = wrap_texel(y, self.height, Wrap::ClampToEdge);
            Vec3::from(self.texels[(y * self.width + x) as usize])
        };
        let (x0, y0) = (x0 as i32, y0 as i32);
        // GLSL's mix(a, b, t) = a (1 - t) + b t.
        let mix = |a: Vec3, b: Vec3, t: f32| a * (1.0 - t) + b * t;
        let top = mix(texel(x0, y0), texel(x0 + 1, y0), fx);
        let bottom = mix(texel(x0, y0 + 1), texel(x0 + 1, y0 + 1), fx);
        mix(top, bottom, fy) * self.intensity
    }

    /// Where direction `d` falls in the image, in [0, 1]², before filtering.
    pub fn coordinates(&self, d: Vec3) -> [f32; 2] {
        let d = d.normalize();
        let (sin, cos) = self.rotation_degrees.to_radians().sin_cos();
        // Turned by -rotation about +y.
        let x = d.x * cos - d.z * sin;
        let z = d.x * sin + d.z * cos;
        let u = 0.5 + x.atan2(-z) * (0.5 / std::f32::consts::PI);
        let v = d.y.clamp(-1.0, 1.0).acos() * (1.0 / std::f32::consts::PI);
        [u, v]
    }

    /// The environment as the device reads it (`EnvironmentHead` in
    /// `glsl/common/shading.glsl`), its texels at `texels_address`.
    pub fn head(&self, texels_address: u64) -> GpuEnvironment {
        let (sin, cos) = self.rotation_degrees.to_radians().sin_cos();
        GpuEnvironment {
            texels: texels_address,
            width: self.width,
            height: self.height,
            intensity: self.intensity,
            rotation_cos: cos,
            rotation_sin: sin,
            pad: 0,
        }
    }
}

/// An environment as the device reads it: where its texels are, its size, intensity and turn
/// (`Environment` in `glsl/common/shading.glsl`; texels 0 for none: the procedural sky). 32
/// bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct GpuEnvironment {
    /// Address of the RGB f32 texels, or 0.
    pub texels: u64,
    /// Width.
    pub width: u32,
    /// Height.
    pub height: u32,
    /// Intensity.
    pub intensity: f32,
    /// Cosine of the turn.
    pub rotation_cos: f32,
    /// Sine of the turn.
    pub rotation_sin: f32,
    /// Padding.
    pub pad: u32,
}

/// The file's bytes: a regular file of at most [`MAX_ENVIRONMENT_FILE_BYTES`].
fn read_bounded(path: &Path) -> Result<Vec<u8>, SceneError> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(|e| SceneError::io(path, e))?;
    let metadata = file.metadata().map_err(|e| SceneError::io(path, e))?;
    if !metadata.is_file() {
        return Err(SceneError::malformed(path, "file", "not a regular file"));
    }
    let mut bytes = Vec::new();
    file.take(MAX_ENVIRONMENT_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| SceneError::io(path, e))?;
    if bytes.len() as u64 > MAX_ENVIRONMENT_FILE_BYTES {
        return Err(SceneError::malformed(
            path,
            "file",
            format!("larger than {MAX_ENVIRONMENT_FILE_BYTES} bytes"),
        ));
    }
    Ok(bytes)
}

/// Errors unless a `width` x `height` image of RGB f32 fits the bound for `encoded` bytes.
fn check_size(width: usize, height: usize, encoded: usize) -> Result<(), String> {
    let allowed = (encoded as u64)
        .saturating_mul(DECODED_BYTES_PER_ENCODED_BYTE)
        .saturating_add(DECODED_BYTES_FLOOR);
    let bytes = width as u64 * height as u64 * 12;
    if width == 0 || height == 0 {
        return Err("the image has no texels".into());
    }
    if width > MAX_TEXTURE_SIDE as usize || height > MAX_TEXTURE_SIDE as usize || bytes > allowed {
        return Err(format!(
            "{width}x{height} texels ({bytes} bytes as RGB f32) are more than canopy reads from \
             {encoded} bytes (at most {MAX_TEXTURE_SIDE} on a side and {allowed} bytes)"
        ));
    }
    Ok(())
}

type Decoded = Result<(u32, u32, Vec<[f32; 3]>), String>;

fn decode_hdr(bytes: &[u8]) -> Decoded {
    let reader =
        || image::ImageReader::with_format(std::io::Cursor::new(bytes), image::ImageFormat::Hdr);
    let (width, height) = reader().into_dimensions().map_err(|e| e.to_string())?;
    check_size(width as usize, height as usize, bytes.len())?;
    let image = reader().decode().map_err(|e| e.to_string())?.into_rgb32f();
    let texels = image.pixels().map(|p| p.0).collect();
    Ok((width, height, texels))
}

#[cfg(feature = "png")]
fn decode_exr(bytes: &[u8]) -> Decoded {
    use exr::prelude::*;
    let meta = exr::meta::MetaData::read_from_buffered(std::io::Cursor::new(bytes), false)
        .map_err(|e| e.to_string())?;
    let header = meta.headers.first().ok_or("the file has no layer")?;
    let size = header.layer_size;
    check_size(size.width(), size.height(), bytes.len())?;
    let image = read()
        .no_deep_data()
        .largest_resolution_level()
        .rgba_channels(
            |resolution, _| vec![[0.0f32; 3]; resolution.width() * resolution.height()],
            move |texels: &mut Vec<[f32; 3]>, position, (r, g, b, _a): (f32, f32, f32, f32)| {
                // The layer's size was checked above; a layer of another size is not read.
                let width = size.width();
                if let Some(texel) = texels.get_mut(position.y() * width + position.x()) {
                    *texel = [r, g, b];
                }
            },
        )
        .first_valid_layer()
        .all_attributes()
        .from_buffered(std::io::Cursor::new(bytes))
        .map_err(|e| e.to_string())?;
    let layer = image.layer_data;
    if layer.size != size {
        return Err("its first RGB layer is not the size of its first header".into());
    }
    Ok((
        size.width() as u32,
        size.height() as u32,
        layer.channel_data.pixels,
    ))
}

#[cfg(not(feature = "png"))]
fn decode_exr(_: &[u8]) -> Decoded {
    Err("this build of canopy reads no OpenEXR files (its `png` feature is off)".into())
}
