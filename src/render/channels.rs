//! A frame's file channels, converted on the GPU (`glsl/render/channels.comp`): the renderer
//! writes each channel a file holds (the radiance, its coverage, and what the camera rays hit)
//! as a plane in the file's own encoding, so a frame's readback carries the file's bytes: 8
//! bytes a pixel for a 16-bit PNG or half RGBA, not the 72 of the radiance sums and every
//! [`PixelAovs`]. This module holds the channels' names and the CPU reference of the
//! conversion ([`encode_plane`]).

use super::PixelAovs;

/// The most channels one frame holds.
pub const MAX_CHANNELS: usize = 16;

/// What a channel is made from (`source` in `channels.comp`).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ChannelSource {
    /// Linear radiance, red.
    Red,
    /// Linear radiance, green.
    Green,
    /// Linear radiance, blue.
    Blue,
    /// 1 where the camera ray hit, 0 for the sky.
    Coverage,
    /// Distance along the camera's view axis (infinite for the sky).
    Depth,
    /// The shading normal, x.
    NormalX,
    /// The shading normal, y.
    NormalY,
    /// The shading normal, z.
    NormalZ,
    /// The albedo, red.
    AlbedoRed,
    /// The albedo, green.
    AlbedoGreen,
    /// The albedo, blue.
    AlbedoBlue,
    /// The world position, x.
    PositionX,
    /// The world position, y.
    PositionY,
    /// The world position, z.
    PositionZ,
    /// The hit triangle's material index (`u32::MAX` for the sky).
    ObjectId,
    /// The hit triangle's instance (`u32::MAX` for the sky).
    InstanceId,
}

impl ChannelSource {
    /// Every source, in the order of their numbers.
    pub const ALL: [ChannelSource; 16] = {
        use ChannelSource::*;
        [
            Red,
            Green,
            Blue,
            Coverage,
            Depth,
            NormalX,
            NormalY,
            NormalZ,
            AlbedoRed,
            AlbedoGreen,
            AlbedoBlue,
            PositionX,
            PositionY,
            PositionZ,
            ObjectId,
            InstanceId,
        ]
    };

    /// Whether it is the radiance (else what the camera rays hit, [`PixelAovs`]).
    pub fn is_radiance(self) -> bool {
        matches!(self, Self::Red | Self::Green | Self::Blue)
    }

    /// The channel's name in an OpenEXR file.
    pub fn exr_name(self) -> &'static str {
        use ChannelSource::*;
        match self {
            Red => "R",
            Green => "G",
            Blue => "B",
            Coverage => "A",
            Depth => "Z",
            NormalX => "N.X",
            NormalY => "N.Y",
            NormalZ => "N.Z",
            AlbedoRed => "albedo.R",
            AlbedoGreen => "albedo.G",
            AlbedoBlue => "albedo.B",
            PositionX => "P.X",
            PositionY => "P.Y",
            PositionZ => "P.Z",
            ObjectId => "object_id",
            InstanceId => "instance_id",
        }
    }

    /// Its value for a pixel of linear `radiance` whose camera ray hit `aovs` (the object and
    /// instance ids as their bits).
    pub fn value(self, radiance: [f32; 3], aovs: &PixelAovs) -> f32 {
        use ChannelSource::*;
        match self {
            Red => radiance[0],
            Green => radiance[1],
            Blue => radiance[2],
            Coverage => aovs.coverage,
            Depth => aovs.depth,
            NormalX | NormalY | NormalZ => aovs.normal[self as usize - NormalX as usize],
            AlbedoRed | AlbedoGreen | AlbedoBlue => aovs.albedo[self as usize - AlbedoRed as usize],
            PositionX | PositionY | PositionZ => aovs.position[self as usize - PositionX as usize],
            ObjectId => f32::from_bits(aovs.object_id),
            InstanceId => f32::from_bits(aovs.instance_id),
        }
    }
}

/// How a channel's values are stored (`encoding` in `channels.comp`).
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ChannelEncoding {
    /// 32-bit float, little-endian.
    F32,
    /// 16-bit float (IEEE half), little-endian.
    F16,
    /// 32-bit unsigned integer, little-endian: the object and instance ids only.
    U32,
    /// 16-bit display value, big-endian as PNG stores it: the radiance clamped to [0, 1] and
    /// sRGB-encoded, any other source clamped to [0, 1]; scaled to 65535.
    Display16,
}

impl ChannelEncoding {
    /// Bytes a pixel takes.
    pub fn bytes_per_pixel(self) -> usize {
        match self {
            Self::F32 | Self::U32 => 4,
            Self::F16 | Self::Display16 => 2,
        }
    }

    /// Bytes a plane of `pixels` values takes in a readback: padded to whole 4-byte words.
    pub fn plane_bytes(self, pixels: usize) -> usize {
        (pixels * self.bytes_per_pixel()).next_multiple_of(4)
    }

    /// `value` of `source` in this encoding (its `bytes_per_pixel` bytes, as the GPU writes
    /// them).
    pub fn encode(self, source: ChannelSource, value: f32) -> [u8; 4] {
        match self {
            Self::F32 | Self::U32 => value.to_bits().to_le_bytes(),
            Self::F16 => {
                let [a, b] = half::f16::from_f32(value).to_bits().to_le_bytes();
                [a, b, 0, 0]
            }
            Self::Display16 => {
                let clamped = value.clamp(0.0, 1.0);
                let display = match source.is_radiance() {
                    true => srgb_encode(clamped),
                    false => clamped,
                };
                let [a, b] = ((display * 65535.0).round() as u16).to_be_bytes();
                [a, b, 0, 0]
            }
        }
    }
}

/// One channel of a frame's file: what it is made from and how it is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct OutputChannel {
    /// What it holds.
    pub source: ChannelSource,
    /// How.
    pub encoding: ChannelEncoding,
}

impl OutputChannel {
    /// `source` stored as `encoding`.
    pub fn new(source: ChannelSource, encoding: ChannelEncoding) -> Self {
        Self { source, encoding }
    }

    /// An error unless the encoding suits the source: the object and instance ids only as
    /// 32-bit integers, and integers only for them.
    pub fn check(self) -> Result<(), String> {
        let id = matches!(
            self.source,
            ChannelSource::ObjectId | ChannelSource::InstanceId
        );
        if id != (self.encoding == ChannelEncoding::U32) {
            return Err(format!(
                "{:?} as {:?}: the object and instance ids are stored as U32, and only they",
                self.source, self.encoding
            ));
        }
        Ok(())
    }

    /// The word `channels.comp` reads: the source, and the encoding above it.
    pub(crate) fn packed(self) -> u32 {
        self.source as u32 | (self.encoding as u32) << 8
    }
}

/// The sRGB transfer function (IEC 61966-2-1), linear [0, 1] to encoded [0, 1]; the resolve's
/// 8-bit image and the 16-bit display channels use it (`glsl/common/srgb.glsl`).
pub fn srgb_encode(linear: f32) -> f32 {
    if linear <= 0.003_130_8 {
        12.92 * linear
    } else {
        1.055 * linear.powf(1.0 / 2.4) - 0.055
    }
}

/// The plane `channels.comp` writes for `channel` from every pixel's linear `radiance` and
/// `aovs` (the CPU reference): `channel.encoding.plane_bytes(pixels)` bytes.
pub fn encode_plane(channel: OutputChannel, radiance: &[[f32; 3]], aovs: &[PixelAovs]) -> Vec<u8> {
    let width = channel.encoding.bytes_per_pixel();
    let mut plane = Vec::with_capacity(channel.encoding.plane_bytes(radiance.len()));
    for (rgb, a) in radiance.iter().zip(aovs) {
        let value = channel.source.value(*rgb, a);
        plane.extend_from_slice(&channel.encoding.encode(channel.source, value)[..width]);
    }
    plane.resize(channel.encoding.plane_bytes(radiance.len()), 0);
    plane
}
