//! Textures: images decoded once from a model file, kept as 8-bit RGBA texels with their mip
//! levels and how they are sampled, and the sampling rule the renderer's kernels and its CPU
//! reference share (`sample_texture` in `glsl/common/shading.glsl`, [`Texture::sample`] here).
//!
//! On the device every texture of a scene lies in one buffer of texels (one u32 each, RGBA8
//! with red in the low byte, rows from the image's top; each texture's levels one after
//! another, level 0 first, then the textures one after another) and one table of
//! [`GpuTexture`] (first texel, width, height, sampling bits with the level count). Texels are
//! stored as the file encodes them; a material's base colour and emissive textures are
//! sRGB-encoded (glTF 2.0, 3.9.2), so the lookup decodes each texel to linear before
//! filtering.
//!
//! Sampling: texture coordinates (u right, v down the image, as glTF has them) are turned by
//! the reference's 2x3 transform (`KHR_texture_transform`), wrapped per axis (repeat, clamp to
//! the edge, or mirrored repeat) and read nearest or bilinear, at the level of detail the
//! caller gives: at or below 0 (magnified, or no footprint known) level 0 through the
//! magnification filter; above it (minified) through the minification filter, at the nearest
//! mip level or between the two nearest ([`MipFilter`]). The renderer gives camera rays' hits
//! the level of detail of their ray cone ([`Footprint`]); every other lookup reads level 0.
//!
//! Mip levels ([`Texture::with_mip_levels`]) halve each side down to one texel (a side of one
//! stays one). Each texel is the mean of the 2x2 texels of the level above, the last row or
//! column repeated where that level's side is odd; colour textures are averaged in linear
//! light and encoded back to sRGB, others byte by byte, alpha always linearly.

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

/// How a texture is read between texel centres within one level.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(u32)]
pub enum Filter {
    /// Bilinear between the four nearest texels (glTF's default where the file says nothing).
    #[default]
    Linear = 0,
    /// The nearest texel.
    Nearest = 1,
}

/// How a minified texture is read across mip levels (the mipmap part of glTF's
/// minification filter).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(u32)]
pub enum MipFilter {
    /// Level 0 only.
    None = 0,
    /// The nearest level.
    Nearest = 1,
    /// A blend of the two nearest levels (glTF files that name no minification filter get
    /// it: trilinear with [`Filter::Linear`]).
    #[default]
    Linear = 2,
}

/// How a texture is sampled.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sampler {
    /// Along u.
    pub wrap_u: Wrap,
    /// Along v.
    pub wrap_v: Wrap,
    /// Within a level where the texture is magnified (glTF's magnification filter).
    pub filter: Filter,
    /// Within a level where it is minified.
    pub min_filter: Filter,
    /// Across levels where it is minified.
    pub mip_filter: MipFilter,
}

impl Sampler {
    /// The sampler as the `sampling` bits of [`GpuTexture`]: wrap u in bits 0-1, wrap v in
    /// bits 2-3, the magnification filter in bit 4, the minification filter in bit 5, the
    /// mip filter in bits 6-7 (the level count follows in bits 8-11).
    pub fn bits(&self) -> u32 {
        self.wrap_u as u32
            | (self.wrap_v as u32) << 2
            | (self.filter as u32) << 4
            | (self.min_filter as u32) << 5
            | (self.mip_filter as u32) << 6
    }
}

/// An image decoded to 8-bit RGBA, with its mip levels, as the renderer samples it.
#[derive(Clone, Debug, PartialEq)]
pub struct Texture {
    /// Texels on a row of level 0.
    pub width: u32,
    /// Rows of level 0.
    pub height: u32,
    /// RGBA8 texels, red in the low byte, rows from the image's top: level 0, then each mip
    /// level in turn ([`level_size`]).
    pub texels: Vec<u32>,
    /// Levels in `texels`: 1 for the image alone, up to [`full_level_count`].
    pub levels: u32,
    /// How it is sampled.
    pub sampler: Sampler,
}

/// The most levels a `width` x `height` texture has: one more than the times its longer
/// side halves before it reaches one texel (a 256x64 texture has 9).
pub fn full_level_count(width: u32, height: u32) -> u32 {
    32 - width.max(height).max(1).leading_zeros()
}

/// Width and height of `level` of a `width` x `height` texture: each side halved, rounded
/// down, `level` times, and at least one.
pub fn level_size(width: u32, height: u32, level: u32) -> (u32, u32) {
    ((width >> level).max(1), (height >> level).max(1))
}

/// Texels in the first `levels` levels of a `width` x `height` texture.
pub fn texel_count(width: u32, height: u32, levels: u32) -> u64 {
    (0..levels)
        .map(|k| {
            let (w, h) = level_size(width, height, k);
            w as u64 * h as u64
        })
        .sum()
}

/// Where a ray cone's footprint falls on a triangle, as a texture's level of detail is
/// chosen from it (Akenine-Moller et al., "Texture Level of Detail Strategies for Real-Time
/// Ray Tracing", Ray Tracing Gems, 2019): per set of texture coordinates, the base-2
/// logarithm of the footprint's width in units of the coordinates. A texture of `w` x `h`
/// texels read through a transform of determinant `det` then has the level of detail
/// `base + 0.5 log2(|det| w h)` ([`Footprint::level_of_detail`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Footprint {
    /// Per set (`TEXCOORD_0`, `TEXCOORD_1`); minus infinity: no footprint (level 0).
    pub base: [f32; 2],
}

impl Footprint {
    /// No footprint: every lookup reads level 0.
    pub const NONE: Self = Self {
        base: [f32::NEG_INFINITY; 2],
    };

    /// The footprint of a cone `width` wide where it meets a triangle whose unit normal makes
    /// cosine `cosine` with the ray, the triangle of twice the area `world_area` in the world
    /// and twice `texcoord_area` in each set's texture coordinates (`texture_footprint` in
    /// shading.glsl).
    pub fn of_cone(width: f32, cosine: f32, world_area: f32, texcoord_area: [f32; 2]) -> Self {
        let across = (width / cosine.abs()).log2();
        Self {
            base: texcoord_area.map(|a| across + 0.5 * (a / world_area).log2()),
        }
    }

    /// The level of detail of `texture` read through `reference` (`sample_texture` in
    /// shading.glsl): at or below 0 level 0 is magnified; NaN where the footprint is
    /// degenerate, which reads level 0 too.
    pub fn level_of_detail(&self, reference: &TextureRef, texture: &Texture) -> f32 {
        let [tu, tv] = [reference.transform_u, reference.transform_v];
        let det = (tu[0] * tv[1] - tu[1] * tv[0]).abs();
        let texels = texture.width as f32 * texture.height as f32;
        self.base[usize::from(reference.texcoord_set == 1)] + 0.5 * (det * texels).log2()
    }
}

/// A texture in the device's table (`Texture` in `glsl/common/shading.glsl`). 16 bytes.
/// Level 0 starts at `first_texel`, each further level where the one before it ends.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct GpuTexture {
    /// Index of its first texel in the scene's texel buffer.
    pub first_texel: u32,
    /// Width.
    pub width: u32,
    /// Height.
    pub height: u32,
    /// [`Sampler::bits`], and the level count in bits 8-11.
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
            levels: 1,
            sampler,
        })
    }

    /// The texture with every mip level down to one texel made from its level 0 (see the
    /// module docs), colour averaged in linear light where `srgb`. They take at most a third
    /// of level 0's texels again. A texture whose texels do not fill its level 0 is returned
    /// as it is (uploading it reports the mismatch).
    pub fn with_mip_levels(mut self, srgb: bool) -> Self {
        let level_0 = self.width as usize * self.height as usize;
        if self.texels.len() < level_0 || level_0 == 0 {
            return self;
        }
        self.texels.truncate(level_0);
        let full = full_level_count(self.width, self.height);
        self.texels
            .reserve(texel_count(self.width, self.height, full) as usize - level_0);
        let linear = srgb.then(|| std::array::from_fn(|b| srgb_decode(b as f32 / 255.0)));
        let mut start = 0;
        for level in 1..full {
            let (w, h) = level_size(self.width, self.height, level - 1);
            let (half_w, half_h) = level_size(self.width, self.height, level);
            for y in 0..half_h {
                let rows = [2 * y, (2 * y + 1).min(h - 1)];
                for x in 0..half_w {
                    let columns = [2 * x, (2 * x + 1).min(w - 1)];
                    let texel =
                        |row: u32, column: u32| self.texels[start + (row * w + column) as usize];
                    let [[a, b], [c, d]] = rows.map(|row| columns.map(|column| texel(row, column)));
                    self.texels.push(mean_texel([a, b, c, d], linear.as_ref()));
                }
            }
            start += w as usize * h as usize;
        }
        self.levels = full;
        self
    }

    /// The linear RGBA this texture gives at texture coordinates `uv` and level of detail
    /// `lod` (`sample_texture`; [`Footprint::level_of_detail`], `f32::NEG_INFINITY` for
    /// level 0): the coordinates wrapped, then the nearest texel or the bilinear blend of the
    /// four nearest of the level or levels the filters choose, each texel decoded from sRGB
    /// when `srgb` (alpha is always linear).
    pub fn sample(&self, uv: [f32; 2], lod: f32, srgb: bool) -> [f32; 4] {
        // A NaN level of detail (a degenerate footprint) reads level 0 as well.
        if lod.is_nan() || lod <= 0.0 {
            return self.sample_level(0, uv, self.sampler.filter, srgb);
        }
        let filter = self.sampler.min_filter;
        let top = (self.levels - 1) as f32;
        match self.sampler.mip_filter {
            _ if self.levels == 1 => self.sample_level(0, uv, filter, srgb),
            MipFilter::None => self.sample_level(0, uv, filter, srgb),
            MipFilter::Nearest => {
                self.sample_level((lod + 0.5).floor().min(top) as u32, uv, filter, srgb)
            }
            MipFilter::Linear => {
                let lod = lod.min(top);
                let level = lod.floor();
                let fine = self.sample_level(level as u32, uv, filter, srgb);
                let coarse = self.sample_level((level + 1.0).min(top) as u32, uv, filter, srgb);
                std::array::from_fn(|k| mix(fine[k], coarse[k], lod - level))
            }
        }
    }

    /// `sample_level` of shading.glsl: level `level` read at `uv` through `filter`.
    fn sample_level(&self, level: u32, uv: [f32; 2], filter: Filter, srgb: bool) -> [f32; 4] {
        let (width, height) = level_size(self.width, self.height, level);
        let first = texel_count(self.width, self.height, level) as usize;
        let texel = |x: i32, y: i32| -> [f32; 4] {
            let x = wrap_texel(x, width, self.sampler.wrap_u);
            let y = wrap_texel(y, height, self.sampler.wrap_v);
            let bytes = self.texels[first + (y * width + x) as usize].to_le_bytes();
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
        let u = wrapped_coordinate(uv[0], self.sampler.wrap_u) * width as f32;
        let v = wrapped_coordinate(uv[1], self.sampler.wrap_v) * height as f32;
        if filter == Filter::Nearest {
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
        std::array::from_fn(|k| mix(mix(a[k], b[k], fu), mix(c[k], d[k], fu), fv))
    }
}

/// GLSL's mix(x, y, t) = x (1 - t) + y t.
fn mix(x: f32, y: f32, t: f32) -> f32 {
    x * (1.0 - t) + y * t
}

/// The mean of four RGBA8 texels, rounded to the nearest: colour in linear light (`linear`:
/// each sRGB byte decoded) and encoded back to sRGB, or without `linear` byte by byte; alpha
/// byte by byte.
fn mean_texel(quad: [u32; 4], linear: Option<&[f32; 256]>) -> u32 {
    let bytes = quad.map(u32::to_le_bytes);
    let mean: [u8; 4] = std::array::from_fn(|k| match linear {
        Some(decoded) if k < 3 => {
            let sum: f32 = bytes.iter().map(|b| decoded[b[k] as usize]).sum();
            (srgb_encode(sum * 0.25) * 255.0).round() as u8
        }
        _ => ((bytes.iter().map(|b| b[k] as u32).sum::<u32>() + 2) / 4) as u8,
    });
    u32::from_le_bytes(mean)
}

/// The sRGB transfer function (IEC 61966-2-1), linear [0, 1] to encoded.
fn srgb_encode(linear: f32) -> f32 {
    if linear <= 0.003_130_8 {
        linear * 12.92
    } else {
        1.055 * linear.powf(1.0 / 2.4) - 0.055
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
            levels: 1,
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
        assert_eq!(t.sample([0.25, 0.5], f32::NEG_INFINITY, false)[0], 0.0);
        assert_eq!(t.sample([0.75, 0.5], f32::NEG_INFINITY, false)[0], 1.0);
        assert_eq!(
            t.sample([1.25, 0.5], f32::NEG_INFINITY, false)[0],
            0.0,
            "repeat"
        );
        let mirrored = two_by_one(Sampler {
            wrap_u: Wrap::MirroredRepeat,
            ..nearest
        });
        assert_eq!(
            mirrored.sample([1.25, 0.5], f32::NEG_INFINITY, false)[0],
            1.0,
            "mirrored"
        );
        let clamped = two_by_one(Sampler {
            wrap_u: Wrap::ClampToEdge,
            ..nearest
        });
        assert_eq!(
            clamped.sample([7.0, 0.5], f32::NEG_INFINITY, false)[0],
            1.0,
            "clamped"
        );
        assert_eq!(
            clamped.sample([-1e30, 0.5], f32::NEG_INFINITY, false)[0],
            0.0,
            "clamped"
        );
    }

    #[test]
    fn linear_blends_between_texel_centres() {
        let t = two_by_one(Sampler {
            wrap_u: Wrap::ClampToEdge,
            ..Sampler::default()
        });
        assert_eq!(t.sample([0.5, 0.5], f32::NEG_INFINITY, false)[0], 0.5);
        assert_eq!(t.sample([0.25, 0.5], f32::NEG_INFINITY, false)[0], 0.0);
        assert_eq!(
            t.sample([0.0, 0.5], f32::NEG_INFINITY, false)[0],
            0.0,
            "clamped at the edge"
        );
        // sRGB 50% grey decodes to about 0.214 linear; the blend is of decoded values.
        let grey = Texture {
            width: 1,
            height: 1,
            texels: vec![0xff80_8080],
            levels: 1,
            sampler: Sampler::default(),
        };
        let linear = grey.sample([0.3, 0.9], f32::NEG_INFINITY, true);
        assert!((linear[0] - 0.2158).abs() < 1e-3, "{linear:?}");
        assert_eq!(linear[3], 1.0);
    }

    /// A `side` x `side` checker of black and white texels, nearest within a level.
    fn checker(side: u32, mip_filter: MipFilter) -> Texture {
        Texture {
            width: side,
            height: side,
            texels: (0..side * side)
                .map(|i| {
                    if (i % side + i / side).is_multiple_of(2) {
                        0xff00_0000
                    } else {
                        0xffff_ffff
                    }
                })
                .collect(),
            levels: 1,
            sampler: Sampler {
                filter: Filter::Nearest,
                min_filter: Filter::Nearest,
                mip_filter,
                ..Sampler::default()
            },
        }
    }

    #[test]
    fn mip_levels_halve_each_side_down_to_one_texel() {
        assert_eq!(full_level_count(1, 1), 1);
        assert_eq!(full_level_count(256, 64), 9);
        assert_eq!(full_level_count(5, 3), 3);
        assert_eq!(level_size(5, 3, 1), (2, 1));
        assert_eq!(level_size(5, 3, 2), (1, 1));
        assert_eq!(texel_count(5, 3, 3), 15 + 2 + 1);
        let t = checker(5, MipFilter::Linear).with_mip_levels(false);
        assert_eq!((t.levels, t.texels.len()), (3, 25 + 4 + 1));
        // Made twice, the levels are not made on top of the old ones.
        assert_eq!(t.clone().with_mip_levels(false), t);
    }

    #[test]
    fn mip_texels_are_means_in_linear_light_for_colour() {
        // Black and white average to 0.5 linear: 128 as bytes, 188 encoded as sRGB.
        let linear = checker(2, MipFilter::Linear).with_mip_levels(false);
        assert_eq!(linear.texels[4].to_le_bytes(), [128, 128, 128, 255]);
        let colour = checker(2, MipFilter::Linear).with_mip_levels(true);
        assert_eq!(colour.texels[4].to_le_bytes(), [188, 188, 188, 255]);
        // An odd side repeats its last column: (0 + 255 + 0 + 255) / 4 over the first two
        // columns of a 3-wide checker's rows 0 and 1.
        let odd = checker(3, MipFilter::Linear).with_mip_levels(false);
        assert_eq!(odd.texels[9].to_le_bytes()[0], 128);
    }

    #[test]
    fn the_level_of_detail_picks_and_blends_levels() {
        let t = checker(4, MipFilter::Linear).with_mip_levels(false);
        let at = |lod: f32| t.sample([0.1, 0.1], lod, false)[0];
        assert_eq!(at(f32::NEG_INFINITY), 0.0, "level 0, magnified");
        assert_eq!(at(f32::NAN), 0.0, "a degenerate footprint reads level 0");
        let grey = 128.0 / 255.0;
        assert_eq!(at(1.0), grey);
        assert_eq!(at(0.5), 0.5 * grey, "halfway between levels 0 and 1");
        assert_eq!(at(40.0), grey, "past the last level");
        let nearest = checker(4, MipFilter::Nearest).with_mip_levels(false);
        assert_eq!(nearest.sample([0.1, 0.1], 0.4, false)[0], 0.0);
        assert_eq!(nearest.sample([0.1, 0.1], 0.6, false)[0], grey);
        let none = checker(4, MipFilter::None).with_mip_levels(false);
        assert_eq!(none.sample([0.1, 0.1], 2.0, false)[0], 0.0);
    }

    #[test]
    fn a_footprint_of_one_texel_is_level_0() {
        // A unit square mapped to texture coordinates [0, 1]^2 (twice the area 1 on both),
        // met head-on by a cone 1/64 wide, on a 64x64 texture: one texel, level 0.
        let t = checker(64, MipFilter::Linear);
        let footprint = Footprint::of_cone(1.0 / 64.0, -1.0, 1.0, [1.0, 1.0]);
        let reference = TextureRef::new(0, 0);
        assert_eq!(footprint.level_of_detail(&reference, &t), 0.0);
        // Twice as wide, or met at 60 degrees: level 1. Scaled by 4 in the transform: level 2.
        let wide = Footprint::of_cone(2.0 / 64.0, 1.0, 1.0, [1.0, 1.0]);
        assert_eq!(wide.level_of_detail(&reference, &t), 1.0);
        let slanted = Footprint::of_cone(1.0 / 64.0, 0.5, 1.0, [1.0, 1.0]);
        assert_eq!(slanted.level_of_detail(&reference, &t), 1.0);
        let scaled = reference.with_transform([0.0, 0.0], 0.0, [4.0, 4.0]);
        assert_eq!(footprint.level_of_detail(&scaled, &t), 2.0);
        assert_eq!(
            Footprint::NONE.level_of_detail(&reference, &t),
            f32::NEG_INFINITY
        );
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
