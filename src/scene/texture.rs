//! Textures: images decoded once from a model file, kept as 8-bit RGBA texels with how they
//! are sampled, and the sampling rule the renderer's kernels and its CPU reference share
//! (`sample_texture` in `glsl/common/shading.glsl`, [`Texture::sample`] here).
//!
//! On the device every texture of a scene lies in one buffer of texels (one u32 each, RGBA8
//! with red in the low byte, rows from the image's top, textures one after another) and one
//! table of [`GpuTexture`] (first texel, width, height, sampling bits). Texels are stored as the
//! file encodes them; a material's base colour and emissive textures are sRGB-encoded (glTF
//! 2.0, 3.9.2), so the lookup decodes each texel to linear before filtering.
//!
//! Sampling: texture coordinates (u right, v down the image, as glTF has them) are turned by
//! the reference's 2x3 transform (`KHR_texture_transform`), wrapped per axis (repeat, clamp to
//! the edge, or mirrored repeat) and read at the image's full resolution, nearest or
//! bilinear. Mip levels are not made: far from the camera a texture is point-sampled at full
//! resolution, which aliases where several texels fall in a pixel.

use std::io::Cursor;

/// The most texels on a side of a decoded image.
pub const MAX_TEXTURE_SIDE: u32 = 16_384;

/// The most bytes a decoded image may take per byte of its encoded file (PNG's deflate packs
/// at most about 1,032 bytes into one; a flat baseline JPEG a few hundred), plus
/// [`DECODED_BYTES_FLOOR`].
pub const DECODED_BYTES_PER_ENCODED_BYTE: u64 = 2_048;

/// Decoded bytes every image may take whatever its encoded size.
pub const DECODED_BYTES_FLOOR: u64 = 1 << 20;

/// How texture coordinates outside [0, 1] map into the image, per axis (glTF's sampler
/// `wrapS` and `wrapT`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(u32)]
pub enum Wrap {
    /// The image repeats (glTF's default).
    #[default]
    Repeat = 0,
    /// The edge texels extend outward.
    ClampToEdge = 1,
    /// The image repeats, every other copy mirrored.
    MirroredRepeat = 2,
}

/// How a texture is read between texel centres (glTF's magnification filter).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(u32)]
pub enum Filter {
    /// Bilinear between the four nearest texels (glTF's default where the file says nothing).
    #[default]
    Linear = 0,
    /// The nearest texel.
    Nearest = 1,
}

/// How a texture is sampled.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sampler {
    /// Along u.
    pub wrap_u: Wrap,
    /// Along v.
    pub wrap_v: Wrap,
    /// Between texel centres.
    pub filter: Filter,
}

impl Sampler {
    /// The sampler as the `sampling` bits of [`GpuTexture`]: wrap u in bits 0-1, wrap v in
    /// bits 2-3, the filter in bit 4.
    pub fn bits(&self) -> u32 {
        self.wrap_u as u32 | (self.wrap_v as u32) << 2 | (self.filter as u32) << 4
    }
}

/// An image decoded to 8-bit RGBA, as the renderer samples it.
#[derive(Clone, Debug, PartialEq)]
pub struct Texture {
    /// Texels on a row.
    pub width: u32,
    /// Rows.
    pub height: u32,
    /// RGBA8 texels, red in the low byte, rows from the image's top.
    pub texels: Vec<u32>,
    /// How it is sampled.
    pub sampler: Sampler,
}

/// A texture in the device's table (`Texture` in `glsl/common/shading.glsl`). 16 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct GpuTexture {
    /// Index of its first texel in the scene's texel buffer.
    pub first_texel: u32,
    /// Width.
    pub width: u32,
    /// Height.
    pub height: u32,
    /// [`Sampler::bits`].
    pub sampling: u32,
}

/// What a material reads from one texture (`TextureRef` in `glsl/common/shading.glsl`): which
/// texture, through which set of texture coordinates and which transform. 32 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct TextureRef {
    /// First row of the 2x3 transform of the texture coordinates: u' = r.x u + r.y v + r.z.
    pub transform_u: [f32; 3],
    /// Index of the texture in the scene's, or [`TextureRef::NO_TEXTURE`].
    pub texture: u32,
    /// Second row: v' = r.x u + r.y v + r.z.
    pub transform_v: [f32; 3],
    /// The set of texture coordinates read: 0 (`TEXCOORD_0`) or 1 (`TEXCOORD_1`).
    pub texcoord_set: u32,
}

impl TextureRef {
    /// [`TextureRef::texture`] of a material that reads no texture.
    pub const NO_TEXTURE: u32 = u32::MAX;

    /// No texture.
    pub const NONE: Self = Self {
        transform_u: [1.0, 0.0, 0.0],
        texture: Self::NO_TEXTURE,
        transform_v: [0.0, 1.0, 0.0],
        texcoord_set: 0,
    };

    /// Texture `texture` read through `texcoord_set` with no transform.
    pub fn new(texture: u32, texcoord_set: u32) -> Self {
        Self {
            texture,
            texcoord_set,
            ..Self::NONE
        }
    }

    /// Whether it reads a texture.
    pub fn is_some(&self) -> bool {
        self.texture != Self::NO_TEXTURE
    }

    /// `KHR_texture_transform`'s offset, rotation (radians, counter-clockwise as the
    /// extension has it) and scale, applied in that extension's order: scale, then rotate,
    /// then translate.
    pub fn with_transform(self, offset: [f32; 2], rotation: f32, scale: [f32; 2]) -> Self {
        let (sin, cos) = rotation.sin_cos();
        Self {
            transform_u: [cos * scale[0], sin * scale[1], offset[0]],
            transform_v: [-sin * scale[0], cos * scale[1], offset[1]],
            ..self
        }
    }

    /// The texture coordinates this reference reads from a vertex's `[u0, v0, u1, v1]`,
    /// transformed.
    pub fn coordinates(&self, texcoords: [f32; 4]) -> [f32; 2] {
        let [u, v] = if self.texcoord_set == 1 {
            [texcoords[2], texcoords[3]]
        } else {
            [texcoords[0], texcoords[1]]
        };
        let row = |r: [f32; 3]| r[0] * u + r[1] * v + r[2];
        [row(self.transform_u), row(self.transform_v)]
    }

    /// Errors unless the transform is finite and the set is 0 or 1.
    pub fn validate(&self) -> Result<(), String> {
        if self.texcoord_set > 1 {
            return Err(format!(
                "texture coordinate set {} (TEXCOORD_0 and TEXCOORD_1 are read)",
                self.texcoord_set
            ));
        }
        if !self
            .transform_u
            .iter()
            .chain(&self.transform_v)
            .all(|c| c.is_finite())
        {
            return Err("the texture transform is not finite".into());
        }
        Ok(())
    }
}

impl Texture {
    /// Decodes a PNG or JPEG image (by its first bytes), refusing one wider or higher than
    /// [`MAX_TEXTURE_SIDE`] or whose texels would take more than
    /// [`DECODED_BYTES_PER_ENCODED_BYTE`] times its encoded size plus [`DECODED_BYTES_FLOOR`]
    /// (the decoder's own buffer, up to 8 bytes a texel for 16-bit RGBA, may take twice that).
    pub fn decode(encoded: &[u8], sampler: Sampler) -> Result<Self, String> {
        let reader = || {
            image::ImageReader::new(Cursor::new(encoded))
                .with_guessed_format()
                .map_err(|e| e.to_string())
        };
        match reader()?.format() {
            Some(image::ImageFormat::Png | image::ImageFormat::Jpeg) => {}
            Some(other) => return Err(format!("a {other:?} image, not PNG or JPEG")),
            None => return Err("not a PNG or JPEG image".into()),
        }
        let allowed = (encoded.len() as u64)
            .saturating_mul(DECODED_BYTES_PER_ENCODED_BYTE)
            .saturating_add(DECODED_BYTES_FLOOR);
        let (width, height) = reader()?.into_dimensions().map_err(|e| e.to_string())?;
        let bytes = width as u64 * height as u64 * 4;
        if width > MAX_TEXTURE_SIDE || height > MAX_TEXTURE_SIDE || bytes > allowed {
            return Err(format!(
                "{width}x{height} texels ({bytes} bytes) are more than canopy decodes from {} \
                 bytes of image (at most {MAX_TEXTURE_SIDE} on a side and {allowed} bytes)",
                encoded.len()
            ));
        }
        let mut limits = image::Limits::default();
        limits.max_image_width = Some(MAX_TEXTURE_SIDE);
        limits.max_image_height = Some(MAX_TEXTURE_SIDE);
        limits.max_alloc = Some(allowed.saturating_mul(2));
        let mut reader = reader()?;
        reader.limits(limits);
        let image = reader.decode().map_err(|e| e.to_string())?.into_rgba8();
        let (width, height) = image.dimensions();
        if width == 0 || height == 0 {
            return Err("the image has no texels".into());
        }
        let texels = image.pixels().map(|p| u32::from_le_bytes(p.0)).collect();
        Ok(Self {
            width,
            height,
            texels,
            sampler,
        })
    }

    /// The linear RGBA this texture gives at texture coordinates `uv` (`sample_texture`):
    /// wrapped, then the nearest texel or the bilinear blend of the four nearest, each
    /// decoded from sRGB when `srgb` (alpha is always linear).
    pub fn sample(&self, uv: [f32; 2], srgb: bool) -> [f32; 4] {
        let texel = |x: i32, y: i32| -> [f32; 4] {
            let x = wrap_texel(x, self.width, self.sampler.wrap_u);
            let y = wrap_texel(y, self.height, self.sampler.wrap_v);
            let bytes = self.texels[(y * self.width + x) as usize].to_le_bytes();
            let channel = |b: u8| b as f32 / 255.0;
            let colour = |b: u8| {
                if srgb {
                    srgb_decode(channel(b))
                } else {
                    channel(b)
                }
            };
            [
                colour(bytes[0]),
                colour(bytes[1]),
                colour(bytes[2]),
                channel(bytes[3]),
            ]
        };
        let u = wrapped_coordinate(uv[0], self.sampler.wrap_u) * self.width as f32;
        let v = wrapped_coordinate(uv[1], self.sampler.wrap_v) * self.height as f32;
        if self.sampler.filter == Filter::Nearest {
            return texel(u.floor() as i32, v.floor() as i32);
        }
        let (u, v) = (u - 0.5, v - 0.5);
        let (x, y) = (u.floor(), v.floor());
        let (fu, fv) = (u - x, v - y);
        let (x, y) = (x as i32, y as i32);
        let [a, b, c, d] = [
            texel(x, y),
            texel(x + 1, y),
            texel(x, y + 1),
            texel(x + 1, y + 1),
        ];
        // GLSL's mix(x, y, t) = x (1 - t) + y t.
        let mix = |x: f32, y: f32, t: f32| x * (1.0 - t) + y * t;
        std::array::from_fn(|k| mix(mix(a[k], b[k], fu), mix(c[k], d[k], fu), fv))
    }
}

/// The sRGB transfer function's inverse (IEC 61966-2-1), encoded [0, 1] to linear, as colour
/// texels are read (`srgb_decode` in `glsl/common/srgb.glsl`).
pub fn srgb_decode(encoded: f32) -> f32 {
    if encoded <= 0.040_45 {
        encoded / 12.92
    } else {
        ((encoded + 0.055) / 1.055).powf(2.4)
    }
}

/// `wrapped_coordinate` of shading.glsl: a texture coordinate brought into [0, 1] (repeat,
/// clamp) or [0, 2] (mirrored repeat, one period) before it is scaled to texels, so that no
/// texel index overflows whatever the coordinate.
fn wrapped_coordinate(c: f32, wrap: Wrap) -> f32 {
    match wrap {
        Wrap::Repeat => c - c.floor(),
        Wrap::ClampToEdge => c.clamp(0.0, 1.0),
        Wrap::MirroredRepeat => c - 2.0 * (c * 0.5).floor(),
    }
}

/// `wrap_texel` of shading.glsl: texel index `i` (at most one texel past either end of its
/// wrapped range) brought into `0..size`.
pub(super) fn wrap_texel(i: i32, size: u32, wrap: Wrap) -> u32 {
    let size = size as i32;
    let wrapped = match wrap {
        Wrap::Repeat => i.rem_euclid(size),
        Wrap::ClampToEdge => i.clamp(0, size - 1),
        Wrap::MirroredRepeat => {
            let j = i.rem_euclid(2 * size);
            if j < size { j } else { 2 * size - 1 - j }
        }
    };
    wrapped as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two_by_one(sampler: Sampler) -> Texture {
        Texture {
            width: 2,
            height: 1,
            texels: vec![0xff00_0000, 0xffff_ffff],
            sampler,
        }
    }

    #[test]
    fn nearest_reads_the_texel_under_the_coordinate_and_wraps() {
        let nearest = Sampler {
            filter: Filter::Nearest,
            ..Sampler::default()
        };
        let t = two_by_one(nearest);
        assert_eq!(t.sample([0.25, 0.5], false)[0], 0.0);
        assert_eq!(t.sample([0.75, 0.5], false)[0], 1.0);
        assert_eq!(t.sample([1.25, 0.5], false)[0], 0.0, "repeat");
        let mirrored = two_by_one(Sampler {
            wrap_u: Wrap::MirroredRepeat,
            ..nearest
        });
        assert_eq!(mirrored.sample([1.25, 0.5], false)[0], 1.0, "mirrored");
        let clamped = two_by_one(Sampler {
            wrap_u: Wrap::ClampToEdge,
            ..nearest
        });
        assert_eq!(clamped.sample([7.0, 0.5], false)[0], 1.0, "clamped");
        assert_eq!(clamped.sample([-1e30, 0.5], false)[0], 0.0, "clamped");
    }

    #[test]
    fn linear_blends_between_texel_centres() {
        let t = two_by_one(Sampler {
            wrap_u: Wrap::ClampToEdge,
            ..Sampler::default()
        });
        assert_eq!(t.sample([0.5, 0.5], false)[0], 0.5);
        assert_eq!(t.sample([0.25, 0.5], false)[0], 0.0);
        assert_eq!(t.sample([0.0, 0.5], false)[0], 0.0, "clamped at the edge");
        // sRGB 50% grey decodes to about 0.214 linear; the blend is of decoded values.
        let grey = Texture {
            width: 1,
            height: 1,
            texels: vec![0xff80_8080],
            sampler: Sampler::default(),
        };
        let linear = grey.sample([0.3, 0.9], true);
        assert!((linear[0] - 0.2158).abs() < 1e-3, "{linear:?}");
        assert_eq!(linear[3], 1.0);
    }

    #[test]
    fn the_transform_scales_rotates_then_offsets() {
        let r = TextureRef::new(0, 0).with_transform([0.5, 0.25], 0.0, [2.0, 3.0]);
        assert_eq!(r.coordinates([1.0, 1.0, 9.0, 9.0]), [2.5, 3.25]);
        let quarter = TextureRef::new(0, 1).with_transform(
            [0.0, 0.0],
            std::f32::consts::FRAC_PI_2,
            [1.0, 1.0],
        );
        let [u, v] = quarter.coordinates([9.0, 9.0, 1.0, 0.0]);
        assert!(u.abs() < 1e-6 && (v + 1.0).abs() < 1e-6, "{u} {v}");
    }

    #[test]
    fn images_other_than_png_and_jpeg_and_garbage_are_refused() {
        let gif = b"GIF89a\x01\x00\x01\x00\x00\x00\x00;";
        assert!(Texture::decode(gif, Sampler::default()).is_err());
        assert!(Texture::decode(b"not an image", Sampler::default()).is_err());
    }
}
