//! Frame sinks: image sequences that a pipeline can trust.
//!
//! [`OutputNaming`] says where each frame goes: `frame_NNNN.png` in a folder, or a pattern
//! (`shots/shot_####.png`, `shots/shot_%04d.ppm`) holding the animation's frame number, in
//! the format its extension names ([`ImageFormat`]). [`ImageSequence`] encodes frames on worker
//! threads while the GPU renders the next ones. Every frame is written under a temporary name
//! beside its own and renamed to it only once complete, so a file with a frame's name is
//! always a whole frame: a full disk, a failed write or an interrupt leaves no partial file
//! (the temporary one is removed). The first failure is reported with the frame, the path and
//! the operating system's error, and the frames finished before it are kept.

mod openexr;

use crate::render::{ChannelEncoding, ChannelSource, ImageReadback, OutputChannel};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, mpsc};

/// A frame that could not be written.
#[derive(Debug, thiserror::Error)]
#[error("frame {frame}: cannot write {}: {source}", path.display())]
pub struct FrameWriteError {
    /// The frame number.
    pub frame: u32,
    /// The file it was to be written to.
    pub path: PathBuf,
    /// The operating system's error.
    pub source: std::io::Error,
}

/// The image formats frames are written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImageFormat {
    /// 8-bit RGBA PNG.
    Png,
    /// Binary 8-bit RGB PPM (P6): no compression, read by everything.
    Ppm,
    /// OpenEXR of the linear radiance (not clamped, not gamma-encoded), with the arbitrary
    /// output variables [`ExrOptions`] asks for as more channels.
    Exr,
}

impl ImageFormat {
    /// The format a file extension names (`png`, `ppm`; any case).
    pub fn from_extension(extension: &str) -> Option<Self> {
        match extension.to_ascii_lowercase().as_str() {
            "png" => Some(Self::Png),
            "ppm" => Some(Self::Ppm),
            "exr" => Some(Self::Exr),
            _ => None,
        }
    }

    /// Its usual file extension.
    pub fn extension(self) -> &'static str {
        match self {
            Self::Png => "png",
            Self::Ppm => "ppm",
            Self::Exr => "exr",
        }
    }
}

/// Where each frame is written: a folder's `frame_NNNN.<ext>`, or a pattern's file with the
/// frame's number in place of its `####` (as many digits as hashes, at least) or of its
/// `%d` / `%04d`, or one file (`still.png`: a name with an image extension and no frame
/// number, for a single frame).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutputNaming {
    folder: PathBuf,
    prefix: String,
    digits: usize,
    suffix: String,
    format: ImageFormat,
    /// One file, whatever the frame.
    single: bool,
}

impl OutputNaming {
    /// The naming `out` asks for: a pattern when its file name holds `#` or a `%d`, else a
    /// folder. The format is `format`, or the pattern's extension, or PNG; a pattern whose
    /// extension names another format than `format` (or none canopy writes) is an error.
    pub fn parse(out: &Path, format: Option<ImageFormat>) -> Result<Self, String> {
        let name = out.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let pattern = if let Some(start) = name.find('#') {
            let digits = name[start..].chars().take_while(|&c| c == '#').count();
            Some((start, digits, start + digits))
        } else if let Some(start) = name.find('%') {
            let rest = &name[start + 1..];
            let end = rest
                .find('d')
                .filter(|&d| rest[..d].chars().all(|c| c.is_ascii_digit()))
                .ok_or_else(|| {
                    format!(
                        "'{}': a frame number is %d or %0Nd (or ####)",
                        out.display()
                    )
                })?;
            let width = rest[..end].trim_start_matches('0');
            let digits = match width {
                "" => 1,
                width => width.parse().unwrap_or(usize::MAX),
            };
            Some((start, digits, start + 1 + end + 1))
        } else {
            None
        };
        if let Some((_, digits, _)) = pattern
            && digits > MAX_FRAME_DIGITS
        {
            return Err(format!(
                "'{}': a frame number of {digits} digits; at most {MAX_FRAME_DIGITS} (any frame \
                 number fits in {MAX_FRAME_DIGITS})",
                out.display()
            ));
        }
        // A name with an image extension and no frame number is one frame's file (unless it
        // is a folder already).
        let single = pattern.is_none()
            && !out.is_dir()
            && name.rsplit_once('.').is_some_and(|(stem, e)| {
                !stem.is_empty() && ImageFormat::from_extension(e).is_some()
            });
        let Some((start, digits, end)) = pattern.or(single.then_some((name.len(), 0, name.len())))
        else {
            let format = format.unwrap_or(ImageFormat::Png);
            return Ok(Self {
                folder: out.to_path_buf(),
                prefix: "frame_".into(),
                digits: 4,
                suffix: format!(".{}", format.extension()),
                format,
                single: false,
            });
        };
        let suffix = &name[end..];
        if suffix.contains(['#', '%']) {
            return Err(format!(
                "'{}': a pattern holds one frame number",
                out.display()
            ));
        }
        let named = (if single { name } else { suffix })
            .rsplit_once('.')
            .map(|(_, e)| ImageFormat::from_extension(e).ok_or(e));
        let format = match (named, format) {
            (Some(Ok(named)), Some(asked)) if named != asked => {
                return Err(format!(
                    "'{}' is a .{} file; --format asks for {}",
                    out.display(),
                    named.extension(),
                    asked.extension()
                ));
            }
            (Some(Ok(named)), _) => named,
            (Some(Err(other)), _) => {
                return Err(format!(
                    "'{}': canopy writes .png, .ppm and .exr frames, not .{other}",
                    out.display()
                ));
            }
            (None, asked) => asked.unwrap_or(ImageFormat::Png),
        };
        let folder = out.parent().filter(|p| !p.as_os_str().is_empty());
        Ok(Self {
            folder: folder.unwrap_or(Path::new(".")).to_path_buf(),
            prefix: name[..start].to_string(),
            digits,
            suffix: suffix.to_string(),
            format,
            single,
        })
    }

    /// The folder frames are written into.
    pub fn folder(&self) -> &Path {
        &self.folder
    }

    /// The format.
    pub fn format(&self) -> ImageFormat {
        self.format
    }

    /// Whether every frame goes to one file (a name without a frame number): for one frame.
    pub fn is_single_file(&self) -> bool {
        self.single
    }

    /// The frame whose file is named `name` (a name in [`Self::folder`]), if it is one.
    pub fn frame_of(&self, name: &str) -> Option<u32> {
        let number = name
            .strip_prefix(self.prefix.as_str())?
            .strip_suffix(self.suffix.as_str())?;
        if number.is_empty()
            || number.len() > MAX_FRAME_DIGITS
            || !number.bytes().all(|b| b.is_ascii_digit())
        {
            return None;
        }
        let frame: u32 = number.parse().ok()?;
        let digits = self.digits;
        (format!("{frame:0digits$}") == number).then_some(frame)
    }

    /// The file of frame `frame`.
    pub fn path(&self, frame: u32) -> PathBuf {
        if self.single {
            return self.folder.join(&self.prefix);
        }
        let digits = self.digits;
        self.folder
            .join(format!("{}{frame:0digits$}{}", self.prefix, self.suffix))
    }
}

/// The most digits a frame number's pattern may ask for: every `u32` frame fits in 10.
pub const MAX_FRAME_DIGITS: usize = 10;

/// A compositing channel group of an OpenEXR frame, from [`PixelAovs`](crate::render::PixelAovs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Aov {
    /// `Z`: distance along the camera's view axis (infinite for the sky).
    Depth,
    /// `N.X`, `N.Y`, `N.Z`: the shading normal.
    Normal,
    /// `albedo.R`, `albedo.G`, `albedo.B`: the surface colour the shading uses.
    Albedo,
    /// `P.X`, `P.Y`, `P.Z`: the world position.
    Position,
    /// `object_id`: the material index of the surface (32-bit integers; `u32::MAX` for the
    /// sky).
    ObjectId,
    /// `instance_id`: the instance of the surface, a glTF node's index or 0 for an OBJ or PLY
    /// file (32-bit integers; `u32::MAX` for the sky). The subject's instance table names
    /// them (`instances` on the `--stats` lines).
    InstanceId,
}

/// What an OpenEXR frame holds beside its `R`, `G`, `B`, `A` (the linear radiance, alpha the
/// coverage of the camera rays).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExrOptions {
    /// The output variables written as more channels.
    pub aovs: Vec<Aov>,
    /// 16-bit floats for the colour, normal and albedo channels (else 32-bit). Depth and
    /// position stay 32-bit floats: a half's 11 bits of precision would put depth steps of
    /// 1/1024 of the distance into a compositor's depth of field and fog, and positions far
    /// from the origin lose more. The object id is a 32-bit integer.
    pub half: bool,
    /// How the file's blocks are compressed.
    pub compression: ExrCompression,
}

/// How OpenEXR frames are compressed (every method is lossless). Blocks of one file are
/// compressed on all cores.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum ExrCompression {
    /// None: the largest files, the least CPU.
    None,
    /// Run-length, one scan line per block: almost as fast as none, smaller where areas are
    /// flat.
    #[default]
    Rle,
    /// Zip, one scan line per block.
    Zips,
    /// Zip, 16 scan lines per block: smaller, slower.
    Zip,
    /// Wavelet and Huffman, in 256x256 tiles: the smallest for noisy images, the slowest.
    Piz,
}

impl ExrCompression {
    /// canopy's own scan-line compression of this method, or `None` for PIZ, which the `exr`
    /// crate writes.
    fn scan_lines(self) -> Option<openexr::Compression> {
        use openexr::Compression;
        match self {
            Self::None => Some(Compression::None),
            Self::Rle => Some(Compression::Rle),
            Self::Zips => Some(Compression::Zips),
            Self::Zip => Some(Compression::Zip),
            Self::Piz => None,
        }
    }
}

/// How hard PNG frames are compressed: the trade of file size against encoding time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "cli", derive(clap::ValueEnum))]
pub enum PngCompression {
    /// The `png` crate's fast deflate (fdeflate, tuned for PNG): several times faster than
    /// `Default` for files a little larger.
    #[default]
    Fast,
    /// Balanced zlib deflate.
    Default,
    /// The smallest files, for much more encoding time.
    Best,
}

impl ExrOptions {
    /// The file's channels, in the order the renderer converts them (the file lists them
    /// sorted by name, as OpenEXR asks).
    pub fn channels(&self) -> Vec<OutputChannel> {
        use ChannelSource::*;
        let colour = match self.half {
            true => ChannelEncoding::F16,
            false => ChannelEncoding::F32,
        };
        let mut channels: Vec<OutputChannel> = [Red, Green, Blue, Coverage]
            .map(|source| OutputChannel::new(source, colour))
            .into();
        for aov in &self.aovs {
            let (sources, encoding): (&[ChannelSource], _) = match aov {
                Aov::Depth => (&[Depth], ChannelEncoding::F32),
                Aov::Normal => (&[NormalX, NormalY, NormalZ], colour),
                Aov::Albedo => (&[AlbedoRed, AlbedoGreen, AlbedoBlue], colour),
                Aov::Position => (&[PositionX, PositionY, PositionZ], ChannelEncoding::F32),
                Aov::ObjectId => (&[ObjectId], ChannelEncoding::U32),
                Aov::InstanceId => (&[InstanceId], ChannelEncoding::U32),
            };
            channels.extend(sources.iter().map(|&s| OutputChannel::new(s, encoding)));
        }
        channels
    }
}

/// How PNG frames are encoded beyond 8-bit opaque RGBA.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PngOptions {
    /// 16 bits per channel, encoded from the linear radiance.
    pub sixteen_bit: bool,
    /// Alpha is the coverage of the camera rays: 0 where they see the sky.
    pub transparent: bool,
    /// How hard the frames are compressed.
    pub compression: PngCompression,
}

impl PngOptions {
    /// The channels the renderer converts for these frames beside its 8-bit image: red, green
    /// and blue as 16-bit display values for 16-bit frames, and the coverage for transparent
    /// ones.
    pub fn channels(self) -> Vec<OutputChannel> {
        use ChannelSource::*;
        let mut sources = Vec::new();
        if self.sixteen_bit {
            sources.extend([Red, Green, Blue]);
        }
        if self.transparent {
            sources.push(Coverage);
        }
        let display = |source| OutputChannel::new(source, ChannelEncoding::Display16);
        sources.into_iter().map(display).collect()
    }
}

/// What each format needs the renderer to convert beside its 8-bit image
/// ([`Renderer::set_output_channels`](crate::render::Renderer::set_output_channels)).
pub fn output_channels(
    format: ImageFormat,
    png: PngOptions,
    exr: &ExrOptions,
) -> Vec<OutputChannel> {
    match format {
        ImageFormat::Png => png.channels(),
        ImageFormat::Ppm => Vec::new(),
        ImageFormat::Exr => exr.channels(),
    }
}

/// A frame as the writers take it.
#[derive(Clone, Debug)]
pub enum FrameImage {
    /// RGBA8 pixels, rows from the top (PNG, PPM).
    Rgba8(Vec<u8>),
    /// The file's channels as the renderer converted them, each a plane of one value per
    /// pixel, rows from the top (16-bit PNG: red, green, blue and perhaps the coverage as
    /// display values; OpenEXR), and text attributes for the file's header (OpenEXR).
    Channels {
        /// Each channel and its plane.
        planes: Vec<(OutputChannel, Vec<u8>)>,
        /// `(name, value)` pairs: the frame's camera, time, canopy's version.
        attributes: Vec<(String, String)>,
    },
}

impl FrameImage {
    /// What `readback` holds in the form `format` is written from (the renderer's
    /// [`output_channels`] for it must be set).
    pub fn of(
        readback: &ImageReadback,
        format: ImageFormat,
        png: PngOptions,
        attributes: Vec<(String, String)>,
    ) -> Option<Self> {
        Some(match format {
            _ if format == ImageFormat::Exr || png.sixteen_bit => Self::Channels {
                planes: (readback.channels())
                    .map(|(c, plane)| (c, plane.to_vec()))
                    .collect(),
                attributes,
            },
            ImageFormat::Png if png.transparent => {
                let (channel, coverage) = readback.channels().next()?;
                if channel.source != ChannelSource::Coverage {
                    return None;
                }
                let mut rgba = readback.rgba8().to_vec();
                for (pixel, a) in rgba.chunks_exact_mut(4).zip(coverage.chunks_exact(2)) {
                    pixel[3] = a[0];
                }
                Self::Rgba8(rgba)
            }
            _ => Self::Rgba8(readback.rgba8().to_vec()),
        })
    }
}

/// Writes an RGBA8 image as a PNG at `path`, through a temporary file in the same folder that is
/// renamed over `path` once complete (and removed on any failure); see
/// [`crate::atomic_file`].
pub fn write_png_atomically(
    path: &Path,
    width: u32,
    height: u32,
    rgba: &[u8],
) -> std::io::Result<()> {
    crate::atomic_file::write_atomically_with(path, |file| {
        let pixels = PngPixels::Eight(rgba);
        write_png(file, (width, height), pixels, PngCompression::Fast)
    })
}

/// Writes `image` in `format` at `path` through a temporary file beside it, created
/// exclusively under a random name, renamed over `path` once complete and synced (and removed
/// on any failure); see [`crate::atomic_file`]. Returns the file's size in bytes.
pub fn write_atomically(
    path: &Path,
    format: ImageFormat,
    options: &WriterOptions,
    (width, height): (u32, u32),
    image: &FrameImage,
) -> std::io::Result<u64> {
    use std::io::Seek;
    let (png, exr) = (options.png.compression, &options.exr);
    let mut bytes = 0;
    crate::atomic_file::write_atomically_with(path, |file| {
        encode(file, format, (width, height), image, (png, exr))?;
        bytes = file.stream_position()?;
        Ok(())
    })?;
    Ok(bytes)
}

/// Encodes `image` into `file` as `format`.
fn encode(
    file: &mut std::fs::File,
    format: ImageFormat,
    (width, height): (u32, u32),
    image: &FrameImage,
    (png, exr): (PngCompression, &ExrOptions),
) -> std::io::Result<()> {
    match (format, image) {
        (ImageFormat::Png, FrameImage::Rgba8(rgba)) => {
            write_png(file, (width, height), PngPixels::Eight(rgba), png)
        }
        (ImageFormat::Png, FrameImage::Channels { planes, .. }) => {
            let rgba = interleave_display16(planes)?;
            write_png(file, (width, height), PngPixels::Sixteen(&rgba), png)
        }
        (ImageFormat::Ppm, FrameImage::Rgba8(rgba)) => write_ppm(file, width, height, rgba),
        (ImageFormat::Exr, FrameImage::Channels { planes, attributes }) => {
            write_exr(file, (width, height), planes, attributes, exr)
        }
        _ => Err(std::io::Error::other(format!(
            "a {} frame cannot be written from this image",
            format.extension()
        ))),
    }
}

/// 16-bit PNG pixels, big-endian RGBA, from the red, green, blue and (when transparent)
/// coverage planes of 16-bit display values (opaque without the coverage).
fn interleave_display16(planes: &[(OutputChannel, Vec<u8>)]) -> std::io::Result<Vec<u8>> {
    use ChannelSource::*;
    let plane = |source: ChannelSource| {
        let wanted = OutputChannel::new(source, ChannelEncoding::Display16);
        planes
            .iter()
            .find(|(c, _)| *c == wanted)
            .map(|(_, p)| p.as_slice())
    };
    let (Some(r), Some(g), Some(b)) = (plane(Red), plane(Green), plane(Blue)) else {
        return Err(std::io::Error::other(
            "a 16-bit PNG needs red, green and blue as 16-bit display values",
        ));
    };
    let opaque = vec![0xff; r.len()];
    let a = plane(Coverage).unwrap_or(&opaque);
    let mut rgba = Vec::with_capacity(4 * r.len());
    for (((r, g), b), a) in r
        .chunks_exact(2)
        .zip(g.chunks_exact(2))
        .zip(b.chunks_exact(2))
        .zip(a.chunks_exact(2))
    {
        rgba.extend_from_slice(&[r[0], r[1], g[0], g[1], b[0], b[1], a[0], a[1]]);
    }
    Ok(rgba)
}

/// A single-part OpenEXR file of the renderer's channels (the linear radiance `R`, `G`, `B`,
/// `A` the coverage, and the AOVs in the names compositors read: `Z`, `N.X`, `albedo.R`,
/// `P.X`, `object_id`), each in the precision it was converted to, with `attributes` in its
/// header; compressed as `options` says.
fn write_exr(
    file: &mut std::fs::File,
    size: (u32, u32),
    planes: &[(OutputChannel, Vec<u8>)],
    attributes: &[(String, String)],
    options: &ExrOptions,
) -> std::io::Result<()> {
    let channels = planes
        .iter()
        .map(|(channel, plane)| {
            let samples = match channel.encoding {
                ChannelEncoding::F32 => openexr::SampleType::F32,
                ChannelEncoding::U32 => openexr::SampleType::U32,
                ChannelEncoding::F16 => openexr::SampleType::F16,
                ChannelEncoding::Display16 => {
                    return Err(std::io::Error::other(
                        "OpenEXR holds linear values, not display values",
                    ));
                }
            };
            Ok(openexr::Channel {
                name: channel.source.exr_name(),
                samples,
                plane,
            })
        })
        .collect::<std::io::Result<Vec<_>>>()?;
    let mut out = std::io::BufWriter::new(file);
    match options.compression.scan_lines() {
        Some(compression) => openexr::write(&mut out, size, &channels, attributes, compression)?,
        None => write_exr_piz(&mut out, size, &channels, attributes)?,
    }
    out.flush()
}

/// [`write_exr`] with PIZ compression, through the `exr` crate, in 256x256 tiles.
fn write_exr_piz(
    out: &mut (impl Write + std::io::Seek),
    (width, height): (u32, u32),
    channels: &[openexr::Channel],
    attributes: &[(String, String)],
) -> std::io::Result<()> {
    use exr::prelude::*;
    let channels: Vec<AnyChannel<FlatSamples>> = channels
        .iter()
        .map(|channel| {
            let samples = match channel.samples {
                openexr::SampleType::F32 => {
                    FlatSamples::F32(bytemuck::pod_collect_to_vec(channel.plane))
                }
                openexr::SampleType::U32 => {
                    FlatSamples::U32(bytemuck::pod_collect_to_vec(channel.plane))
                }
                openexr::SampleType::F16 => FlatSamples::F16(
                    channel
                        .plane
                        .chunks_exact(2)
                        .map(|h| f16::from_bits(u16::from_le_bytes([h[0], h[1]])))
                        .collect(),
                ),
            };
            AnyChannel::new(channel.name, samples)
        })
        .collect();
    let mut layer_attributes = LayerAttributes::default();
    for (name, value) in attributes {
        layer_attributes.other.insert(
            Text::from(name.as_str()),
            AttributeValue::Text(Text::from(value.as_str())),
        );
    }
    let encoding = Encoding {
        compression: Compression::PIZ,
        blocks: Blocks::Tiles(Vec2(256, 256)),
        // Tiles may be written as they finish.
        line_order: LineOrder::Unspecified,
    };
    let layer = Layer::new(
        (width as usize, height as usize),
        layer_attributes,
        encoding,
        AnyChannels::sort(SmallVec::from_vec(channels)),
    );
    Image::from_layer(layer)
        .write()
        .to_buffered(out)
        .map_err(std::io::Error::other)
}

fn write_ppm(
    file: &mut std::fs::File,
    width: u32,
    height: u32,
    rgba: &[u8],
) -> std::io::Result<()> {
    let mut file = std::io::BufWriter::new(file);
    write!(file, "P6\n{width} {height}\n255\n")?;
    for pixel in rgba.chunks_exact(4) {
        file.write_all(&pixel[..3])?;
    }
    file.flush()
}

/// RGBA pixels of 8 or 16 bits per channel.
enum PngPixels<'a> {
    Eight(&'a [u8]),
    /// Big-endian, as PNG stores them.
    Sixteen(&'a [u8]),
}

/// A PNG of the pixels, tagged (`sRGB`) with the transfer function the renderer encodes them
/// with.
fn write_png(
    file: &mut std::fs::File,
    (width, height): (u32, u32),
    pixels: PngPixels,
    compression: PngCompression,
) -> std::io::Result<()> {
    let mut file = std::io::BufWriter::new(file);
    let mut encoder = png::Encoder::new(&mut file, width, height);
    encoder.set_color(png::ColorType::Rgba);
    encoder.set_compression(match compression {
        PngCompression::Fast => png::Compression::Fast,
        PngCompression::Default => png::Compression::Balanced,
        PngCompression::Best => png::Compression::High,
    });
    encoder.set_source_srgb(png::SrgbRenderingIntent::Perceptual);
    let bytes = match pixels {
        PngPixels::Eight(rgba) => {
            encoder.set_depth(png::BitDepth::Eight);
            rgba
        }
        PngPixels::Sixteen(rgba) => {
            encoder.set_depth(png::BitDepth::Sixteen);
            rgba
        }
    };
    let mut writer = encoder.write_header().map_err(std::io::Error::other)?;
    writer
        .write_image_data(bytes)
        .map_err(std::io::Error::other)?;
    writer.finish().map_err(std::io::Error::other)?;
    file.flush()
}

type Job = (u32, FrameImage);

/// How an [`ImageSequence`] encodes its frames, and with how many threads and how much
/// memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriterOptions {
    /// PNG frames' depth, alpha and compression.
    pub png: PngOptions,
    /// OpenEXR frames' channels, precision and compression.
    pub exr: ExrOptions,
    /// Encoder threads: by default one per CPU core.
    pub threads: usize,
    /// The most bytes frames may hold between the renderer and their files (waiting in the
    /// queue or being encoded); by default [`WriterOptions::DEFAULT_MEMORY`].
    pub memory: u64,
}

impl WriterOptions {
    /// 1 GiB: the frames of a 1080p run with every OpenEXR channel at 32 bits (134 MB each)
    /// stay under it with three encoders (two with PIZ).
    pub const DEFAULT_MEMORY: u64 = 1 << 30;

    /// How many encoder threads frames of `format` and `size` get: `threads`, fewer where
    /// their frames would pass `memory`. With `w` encoders, at most `w` frames wait in the
    /// queue, `w` are encoded and one is being handed over. An encoder holds its frame, and
    /// where it makes the file's bytes whole before writing them (PNG, OpenEXR with PIZ)
    /// about the frame's size again: `(3w + 1)` frames' bytes, or `(2w + 1)` for OpenEXR
    /// scan lines, which are written as they are compressed.
    pub fn writers(&self, format: ImageFormat, (width, height): (u32, u32)) -> usize {
        let channels = output_channels(format, self.png, &self.exr);
        let per_pixel = 4 + channels
            .iter()
            .map(|c| c.encoding.bytes_per_pixel() as u64)
            .sum::<u64>();
        let frame = (width as u64 * height as u64 * per_pixel).max(1);
        let streams = format == ImageFormat::Exr && self.exr.compression.scan_lines().is_some();
        let frames_per_encoder = if streams { 2 } else { 3 };
        let fit = (self.memory / frame).saturating_sub(1) / frames_per_encoder;
        (fit as usize).clamp(1, self.threads.max(1))
    }
}

impl Default for WriterOptions {
    fn default() -> Self {
        Self {
            png: PngOptions::default(),
            exr: ExrOptions::default(),
            threads: std::thread::available_parallelism().map_or(2, |n| n.get()),
            memory: Self::DEFAULT_MEMORY,
        }
    }
}

/// What writes one frame's file: the frame, its path and its image; returns the bytes written.
pub type FrameWriter =
    dyn Fn(u32, &Path, &FrameImage) -> std::io::Result<u64> + Send + Sync + 'static;

/// A frame an [`ImageSequence`] wrote.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WrittenFrame {
    /// The frame's number.
    pub frame: u32,
    /// Its file's size.
    pub bytes: u64,
    /// Seconds its encoder took to encode and write it.
    pub encode_s: f64,
}

/// Frames of one size written as [`OutputNaming`] says by worker threads, fed through a
/// bounded queue. The writers run in parallel, one frame each; a frame that fails (or whose
/// writer panics) is reported by [`finish`](Self::finish) with its number and path, never
/// lost silently.
pub struct ImageSequence {
    naming: OutputNaming,
    queue: Option<mpsc::SyncSender<Job>>,
    workers: Vec<std::thread::JoinHandle<()>>,
    outcomes: mpsc::Receiver<Result<WrittenFrame, FrameWriteError>>,
    /// Frames queued, to tell when a worker vanished without a word.
    submitted: Vec<u32>,
    written: Vec<WrittenFrame>,
    /// How many of `written` [`ImageSequence::take_written`] has handed out.
    taken: usize,
    failure: Option<FrameWriteError>,
}

impl ImageSequence {
    /// Writers of `width` x `height` PNG frames into `folder` (which must exist) as
    /// `frame_NNNN.png`, one thread per CPU core.
    pub fn new(folder: &Path, width: u32, height: u32) -> Self {
        let naming = OutputNaming::parse(folder, None).expect("a folder is a naming");
        Self::named(naming, WriterOptions::default(), width, height)
    }

    /// Writers of `width` x `height` frames named as `naming` says (its folder must exist)
    /// and encoded as `options` says, as many as its thread count and memory allow
    /// ([`WriterOptions::writers`]).
    pub fn named(naming: OutputNaming, options: WriterOptions, width: u32, height: u32) -> Self {
        let format = naming.format();
        let threads = options.writers(format, (width, height));
        let writer = move |_frame: u32, path: &Path, image: &FrameImage| {
            write_atomically(path, format, &options, (width, height), image)
        };
        Self::with_writer(naming, threads, Arc::new(writer))
    }

    /// `threads` workers that write each frame with `writer` at the path `naming` gives it.
    pub fn with_writer(naming: OutputNaming, threads: usize, writer: Arc<FrameWriter>) -> Self {
        let threads = threads.max(1);
        let (queue, jobs) = mpsc::sync_channel::<Job>(threads);
        let (report, outcomes) = mpsc::channel();
        let jobs = Arc::new(Mutex::new(jobs));
        let workers = (0..threads)
            .map(|_| {
                let (jobs, report, naming) = (jobs.clone(), report.clone(), naming.clone());
                let writer = writer.clone();
                std::thread::spawn(move || {
                    loop {
                        // The lock is held only to take a job: the frames encode in parallel.
                        let job = jobs
                            .lock()
                            .unwrap_or_else(std::sync::PoisonError::into_inner)
                            .recv();
                        let Ok((frame, image)) = job else { return };
                        let path = naming.path(frame);
                        let started = std::time::Instant::now();
                        let written =
                            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                                writer(frame, &path, &image)
                            }))
                            .unwrap_or_else(|panic| {
                                let what = panic
                                    .downcast_ref::<&str>()
                                    .map(|s| s.to_string())
                                    .or_else(|| panic.downcast_ref::<String>().cloned())
                                    .unwrap_or_else(|| "no message".into());
                                Err(std::io::Error::other(format!(
                                    "the writer panicked: {what}"
                                )))
                            });
                        let outcome = written
                            .map(|bytes| WrittenFrame {
                                frame,
                                bytes,
                                encode_s: started.elapsed().as_secs_f64(),
                            })
                            .map_err(|source| FrameWriteError {
                                frame,
                                path,
                                source,
                            });
                        if report.send(outcome).is_err() {
                            return;
                        }
                    }
                })
            })
            .collect();
        Self {
            naming,
            queue: Some(queue),
            workers,
            outcomes,
            submitted: Vec::new(),
            written: Vec::new(),
            taken: 0,
            failure: None,
        }
    }

    /// Where the frames go.
    pub fn naming(&self) -> &OutputNaming {
        &self.naming
    }

    fn collect(&mut self) {
        while let Ok(outcome) = self.outcomes.try_recv() {
            self.record(outcome);
        }
    }

    fn record(&mut self, outcome: Result<WrittenFrame, FrameWriteError>) {
        match outcome {
            Ok(written) => self.written.push(written),
            Err(e) => {
                if self.failure.is_none() {
                    self.failure = Some(e);
                }
            }
        }
    }

    /// Frames written so far, and frames queued or being encoded (their backlog).
    pub fn progress(&mut self) -> (usize, usize) {
        self.collect();
        let written = self.written.len();
        (written, self.submitted.len().saturating_sub(written))
    }

    /// The frames written since the last call, in the order they were written.
    pub fn take_written(&mut self) -> Vec<WrittenFrame> {
        self.collect();
        let new = self.written[self.taken..].to_vec();
        self.taken = self.written.len();
        new
    }

    /// Whether a frame has failed to be written so far (the render should stop).
    pub fn failed(&mut self) -> bool {
        self.collect();
        self.failure.is_some()
    }

    /// Queues frame `frame` (RGBA8 pixels); waits while the queue is full.
    pub fn submit(&mut self, frame: u32, pixels: Vec<u8>) {
        self.submit_image(frame, FrameImage::Rgba8(pixels));
    }

    /// Queues frame `frame`; waits while the queue is full.
    pub fn submit_image(&mut self, frame: u32, pixels: FrameImage) {
        let queue = self.queue.as_ref().expect("open until finish");
        self.submitted.push(frame);
        // A send fails only when every worker has stopped; `finish` then reports the frame.
        let _ = queue.send((frame, pixels));
    }

    /// Waits until every queued frame is written or has failed. Returns the frames written,
    /// in frame order, and the first failure (a frame no writer reported on is one).
    pub fn finish(mut self) -> (Vec<WrittenFrame>, Option<FrameWriteError>) {
        drop(self.queue.take());
        let mut panicked = false;
        for worker in std::mem::take(&mut self.workers) {
            panicked |= worker.join().is_err();
        }
        self.collect();
        self.written.sort_unstable_by_key(|w| w.frame);
        if self.failure.is_none() {
            let lost = (self.submitted.iter())
                .find(|&&f| self.written.binary_search_by_key(&f, |w| w.frame).is_err());
            if let Some(&frame) = lost {
                let why = match panicked {
                    true => "its writer thread panicked",
                    false => "no writer took it",
                };
                self.failure = Some(FrameWriteError {
                    frame,
                    path: self.naming.path(frame),
                    source: std::io::Error::other(why),
                });
            }
        }
        (std::mem::take(&mut self.written), self.failure.take())
    }
}

impl Drop for ImageSequence {
    /// Dropped unfinished (an error elsewhere): the queued frames are still written, so that
    /// none is cut off by the process ending.
    fn drop(&mut self) {
        drop(self.queue.take());
        for worker in self.workers.drain(..) {
            let _ = worker.join();
        }
    }
}

/// The codecs [`VideoEncoder`] asks ffmpeg for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VideoCodec {
    /// H.264 (libx264), 8-bit 4:2:0: plays everywhere.
    H264,
    /// H.265 (libx265), 8-bit 4:2:0: smaller at the same quality.
    Hevc,
    /// Apple ProRes 422 HQ (prores_ks), 10-bit: for editing.
    ProRes,
    /// FFV1, lossless RGB: for archiving and further processing.
    Ffv1,
}

impl VideoCodec {
    /// ffmpeg's encoder and output options; `crf` for the codecs with a quality scale.
    fn ffmpeg_options(self, crf: u32) -> Vec<String> {
        let strings = |options: &[&str]| options.iter().map(|o| o.to_string()).collect::<Vec<_>>();
        // 4:2:0 needs even sizes: pad odd ones by a row or column.
        let even = "pad=ceil(iw/2)*2:ceil(ih/2)*2";
        let mut options = match self {
            Self::H264 => strings(&["-c:v", "libx264", "-pix_fmt", "yuv420p", "-vf", even]),
            Self::Hevc => strings(&["-c:v", "libx265", "-pix_fmt", "yuv420p", "-vf", even]),
            Self::ProRes => strings(&[
                "-c:v",
                "prores_ks",
                "-profile:v",
                "3",
                "-pix_fmt",
                "yuv422p10le",
                "-vf",
                even,
            ]),
            Self::Ffv1 => strings(&["-c:v", "ffv1", "-level", "3", "-pix_fmt", "bgr0"]),
        };
        if matches!(self, Self::H264 | Self::Hevc) {
            options.extend(["-crf".to_string(), crf.to_string()]);
        }
        options
    }
}

/// Why a video could not be made.
#[derive(Debug, thiserror::Error)]
pub enum VideoError {
    /// ffmpeg is not installed.
    #[error(
        "ffmpeg is not on the PATH, and --video needs it: install it (Debian/Ubuntu: apt install ffmpeg, or tools/setup.sh)"
    )]
    NoFfmpeg,
    /// ffmpeg could not be started or fed.
    #[error("ffmpeg: {0}")]
    Io(#[from] std::io::Error),
    /// ffmpeg failed; its last lines.
    #[error("ffmpeg failed ({status}) making {}:\n{last_lines}", path.display())]
    Failed {
        /// The video.
        path: PathBuf,
        /// Its exit status.
        status: String,
        /// The last lines it printed.
        last_lines: String,
    },
}

/// Frames piped to `ffmpeg` as raw RGBA, encoded into one video as they come: memory stays
/// that of one frame, whatever the length. The video is written into a temporary file created
/// exclusively beside it (see [`crate::atomic_file`]; on Linux ffmpeg gets the open file
/// itself, never a name to follow) and renamed to its own when ffmpeg has finished it, so a
/// file with its name is a whole video. ffmpeg stopping early (a bad codec for the container,
/// a full disk) is an error with its last lines, never a signal that ends the process.
pub struct VideoEncoder {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    /// ffmpeg's stderr, read on a thread so that it never blocks ffmpeg.
    log: Option<std::thread::JoinHandle<String>>,
    path: PathBuf,
    /// Removed when dropped unless renamed to `path`.
    temporary: Option<tempfile::NamedTempFile>,
    frames: u32,
}

impl VideoEncoder {
    /// Starts ffmpeg encoding `width` x `height` frames at `fps` with `codec` (and `crf`
    /// where it has a quality scale) into `path`; its container follows the extension
    /// (`.mp4`, `.mov`, `.mkv`). ffmpeg is the one on the `PATH`.
    pub fn new(
        path: &Path,
        (width, height): (u32, u32),
        fps: f32,
        codec: VideoCodec,
        crf: u32,
    ) -> Result<Self, VideoError> {
        let temporary = crate::atomic_file::create_temporary(path).map_err(|e| {
            VideoError::Io(std::io::Error::new(
                e.kind(),
                format!("cannot create a file beside {}: {e}", path.display()),
            ))
        })?;
        let extension = path.extension().and_then(|e| e.to_str()).unwrap_or("mp4");
        let mut command = std::process::Command::new("ffmpeg");
        let output = hand_over(&mut command, temporary.as_file())
            .unwrap_or_else(|| temporary.path().to_path_buf());
        command
            .args(["-hide_banner", "-loglevel", "error", "-y", "-f", "rawvideo"])
            .args(["-pix_fmt", "rgba", "-s", &format!("{width}x{height}")])
            .args(["-framerate", &fps.to_string(), "-i", "-"])
            .args(codec.ffmpeg_options(crf))
            .args(["-f", ffmpeg_format(extension)])
            .arg(output)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped());
        let mut child = match command.spawn() {
            Ok(child) => child,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(VideoError::NoFfmpeg),
            Err(e) => return Err(e.into()),
        };
        let mut stderr = child.stderr.take().expect("piped");
        let log = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = std::io::Read::read_to_string(&mut stderr, &mut text);
            text
        });
        Ok(Self {
            stdin: child.stdin.take(),
            child,
            log: Some(log),
            path: path.to_path_buf(),
            temporary: Some(temporary),
            frames: 0,
        })
    }

    /// The ffmpeg process's id.
    pub fn process_id(&self) -> u32 {
        self.child.id()
    }

    /// The temporary file the video is written into until [`Self::finish`] renames it.
    pub fn temporary_path(&self) -> Option<&Path> {
        self.temporary.as_ref().map(|t| t.path())
    }

    /// Frames sent so far.
    pub fn frames(&self) -> u32 {
        self.frames
    }

    /// Sends one frame's RGBA8 pixels (waits while ffmpeg is behind). ffmpeg having stopped
    /// is an error with its last lines (the temporary video is then removed).
    pub fn submit(&mut self, rgba: &[u8]) -> Result<(), VideoError> {
        let stdin = self.stdin.as_mut().expect("open until finish");
        if let Err(e) = write_without_sigpipe(stdin, rgba) {
            // ffmpeg has stopped: its own error says why.
            return Err(match self.stop() {
                Ok((status, last_lines)) => VideoError::Failed {
                    path: self.path.clone(),
                    status: if status.success() {
                        format!(
                            "{status}, but it stopped reading after {} frames",
                            self.frames
                        )
                    } else {
                        status.to_string()
                    },
                    last_lines,
                },
                Err(_) => VideoError::Io(e),
            });
        }
        self.frames += 1;
        Ok(())
    }

    /// Closes the stream and waits for ffmpeg to finish the video, then gives it its name.
    pub fn finish(mut self) -> Result<PathBuf, VideoError> {
        let (status, last_lines) = self.stop()?;
        if !status.success() {
            return Err(VideoError::Failed {
                path: self.path.clone(),
                status: status.to_string(),
                last_lines,
            });
        }
        let temporary = self.temporary.take().expect("kept until finish");
        match crate::atomic_file::persist(temporary, &self.path) {
            Ok(()) => Ok(self.path.clone()),
            Err(crate::atomic_file::PersistFailure::Removed) => {
                Err(VideoError::Io(std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    format!("the temporary file of {} was removed", self.path.display()),
                )))
            }
            Err(crate::atomic_file::PersistFailure::Other(e)) => Err(VideoError::Io(e)),
        }
    }

    /// Ends the stream and waits for ffmpeg: its exit status and last lines. A failed video's
    /// temporary file is removed.
    fn stop(&mut self) -> std::io::Result<(std::process::ExitStatus, String)> {
        drop(self.stdin.take());
        let status = self.child.wait();
        let log = self
            .log
            .take()
            .map(|l| l.join().unwrap_or_default())
            .unwrap_or_default();
        if !status.as_ref().is_ok_and(|s| s.success()) {
            drop(self.temporary.take());
        }
        let lines: Vec<&str> = log.lines().collect();
        let last_lines = lines[lines.len().saturating_sub(8)..].join("\n");
        Ok((status?, last_lines))
    }
}

impl Drop for VideoEncoder {
    /// A video dropped unfinished (an error elsewhere) is abandoned: ffmpeg is stopped and
    /// its temporary file removed.
    fn drop(&mut self) {
        if self.stdin.take().is_some() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        drop(self.temporary.take());
    }
}

/// Makes `file` the child's descriptor 3 and returns the name the child opens it by
/// (`/proc/self/fd/3`), so that ffmpeg writes the very file canopy created and never follows
/// a name someone could replace; `None` where there is no such name (the path is used).
#[cfg(target_os = "linux")]
fn hand_over(command: &mut std::process::Command, file: &std::fs::File) -> Option<PathBuf> {
    use std::os::fd::AsRawFd;
    use std::os::unix::process::CommandExt;
    if !Path::new("/proc/self/fd").is_dir() {
        return None;
    }
    let fd = file.as_raw_fd();
    // SAFETY: between fork and exec, only async-signal-safe calls (dup2, fcntl) on a
    // descriptor that stays open in the parent for the child's start.
    unsafe {
        command.pre_exec(move || {
            if fd == 3 {
                // dup2 to itself keeps close-on-exec: clear it instead.
                let flags = libc::fcntl(3, libc::F_GETFD);
                if flags < 0 || libc::fcntl(3, libc::F_SETFD, flags & !libc::FD_CLOEXEC) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            } else if libc::dup2(fd, 3) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    Some(PathBuf::from("/proc/self/fd/3"))
}

#[cfg(not(target_os = "linux"))]
fn hand_over(_: &mut std::process::Command, _: &std::fs::File) -> Option<PathBuf> {
    None
}

/// `out.write_all(bytes)`, a closed pipe returning `BrokenPipe` even where SIGPIPE ends the
/// process (the `canopy` command keeps its default for its own output): SIGPIPE is blocked
/// on this thread for the write, and the one the write raised is taken before it is unblocked.
#[cfg(target_os = "linux")]
fn write_without_sigpipe(out: &mut impl Write, bytes: &[u8]) -> std::io::Result<()> {
    // SAFETY: signal-mask calls on this thread's own mask, with sets initialised by
    // sigemptyset before use.
    unsafe {
        let mut pipe: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut pipe);
        libc::sigaddset(&mut pipe, libc::SIGPIPE);
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::pthread_sigmask(libc::SIG_BLOCK, &pipe, &mut old);
        let mut pending: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut pending);
        libc::sigpending(&mut pending);
        let was_pending = libc::sigismember(&pending, libc::SIGPIPE) == 1;
        let written = out.write_all(bytes);
        if !was_pending
            && written
                .as_ref()
                .is_err_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
        {
            let now = libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            while libc::sigtimedwait(&pipe, std::ptr::null_mut(), &now) < 0
                && std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
            {}
        }
        libc::pthread_sigmask(libc::SIG_SETMASK, &old, std::ptr::null_mut());
        written
    }
}

#[cfg(not(target_os = "linux"))]
fn write_without_sigpipe(out: &mut impl Write, bytes: &[u8]) -> std::io::Result<()> {
    out.write_all(bytes)
}

/// ffmpeg's muxer for a file extension (the temporary file's own says nothing).
fn ffmpeg_format(extension: &str) -> &'static str {
    match extension.to_ascii_lowercase().as_str() {
        "mov" => "mov",
        "mkv" => "matroska",
        "avi" => "avi",
        "webm" => "webm",
        _ => "mp4",
    }
}

/// Frame numbers as ranges for a report: `0-3, 7, 9-10`.
pub fn frame_ranges(frames: &[u32]) -> String {
    let mut ranges: Vec<(u32, u32)> = Vec::new();
    for &f in frames {
        match ranges.last_mut() {
            Some((_, last)) if *last + 1 == f => *last = f,
            _ => ranges.push((f, f)),
        }
    }
    let text: Vec<String> = ranges
        .iter()
        .map(|&(a, b)| {
            if a == b {
                a.to_string()
            } else {
                format!("{a}-{b}")
            }
        })
        .collect();
    if text.is_empty() {
        "none".into()
    } else {
        text.join(", ")
    }
}

/// The frames a list names, ascending and each once: `3` (one frame), `a..b` (b excluded),
/// `a..=b`, either with `:step` (`0..240:2`), or a comma-separated list of those
/// (`1,5,9..12`). The set is a description, never a list of every frame: `0..4294967295` is
/// parsed, counted, sharded and iterated at once, in memory of the order of the list's items.
pub fn parse_frames(text: &str) -> Result<FrameSet, String> {
    let mut runs = Vec::new();
    for item in text.split(',') {
        let item = item.trim();
        let (range, step) = match item.split_once(':') {
            Some((range, step)) => match step.trim().parse::<u32>() {
                Ok(step) if step > 0 => (range, step),
                _ => {
                    return Err(format!(
                        "'{item}': the step after ':' is a whole number from 1"
                    ));
                }
            },
            None => (item, 1),
        };
        let number = |s: &str| {
            s.trim()
                .parse::<u32>()
                .map_err(|e| format!("'{s}' in '{item}': {e}"))
        };
        let (first, end) = if let Some((a, b)) = range.split_once("..=") {
            let last = number(b)?;
            let end = last
                .checked_add(1)
                .ok_or_else(|| format!("'{item}': the last frame is too large"))?;
            (number(a)?, end)
        } else if let Some((a, b)) = range.split_once("..") {
            (number(a)?, number(b)?)
        } else if item.contains(':') {
            return Err(format!("'{item}': a step needs a range (a..b:step)"));
        } else {
            let frame = number(range)?;
            let end = frame
                .checked_add(1)
                .ok_or_else(|| format!("'{item}': the frame is too large"))?;
            (frame, end)
        };
        if first >= end {
            return Err(format!("'{item}': no frames"));
        }
        // The last frame of the run, so that its end is exact.
        let last = first as u64 + (end as u64 - 1 - first as u64) / step as u64 * step as u64;
        runs.push((first as u64, last + 1, step as u64));
    }
    FrameSet::of_runs(&runs).map_err(|e| format!("'{text}': {e}"))
}

/// The longest period [`FrameSet`] combines overlapping stepped ranges into.
const MAX_FRAME_PERIOD: u64 = 1 << 20;

/// A stretch `[start, end)` of frames in which the frames are `start + offset` for each of
/// `offsets` (ascending, below `period`), repeated every `period` frames.
#[derive(Clone, Debug, PartialEq, Eq)]
struct FrameSegment {
    start: u64,
    end: u64,
    period: u64,
    offsets: Vec<u64>,
    /// Frames in the segments before this one.
    before: u64,
}

impl FrameSegment {
    fn len(&self) -> u64 {
        let span = self.end - self.start;
        let partial = self
            .offsets
            .iter()
            .filter(|&&o| o < span % self.period)
            .count();
        span / self.period * self.offsets.len() as u64 + partial as u64
    }

    /// The frame of rank `rank` within the segment.
    fn nth(&self, rank: u64) -> u64 {
        let per = self.offsets.len() as u64;
        self.start + rank / per * self.period + self.offsets[(rank % per) as usize]
    }

    /// The rank of `frame` within the segment, if it is one of its frames.
    fn rank(&self, frame: u64) -> Option<u64> {
        if !(self.start..self.end).contains(&frame) {
            return None;
        }
        let at = frame - self.start;
        let index = self.offsets.binary_search(&(at % self.period)).ok()?;
        Some(at / self.period * self.offsets.len() as u64 + index as u64)
    }
}

/// A set of frame numbers ([`parse_frames`]), ascending: ranges with steps and single frames,
/// or a shard of those ([`Shard::of`]). It is counted, iterated, indexed and asked whether it
/// holds a frame without ever listing its frames, so any range costs the same.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FrameSet {
    segments: std::sync::Arc<Vec<FrameSegment>>,
    /// The frames of the ranges, before any shard.
    total: u64,
    /// The ranks (among all the ranges' frames) this set holds: `first + i * stride` for
    /// `i < len`.
    first: u64,
    stride: u64,
    len: u64,
}

impl FrameSet {
    /// The union of `runs` (`(first, end, step)`: `first`, `first + step`, ... below `end`).
    fn of_runs(runs: &[(u64, u64, u64)]) -> Result<Self, String> {
        let mut bounds: Vec<u64> = runs.iter().flat_map(|r| [r.0, r.1]).collect();
        bounds.sort_unstable();
        bounds.dedup();
        let mut order: Vec<usize> = (0..runs.len()).collect();
        order.sort_by_key(|&r| runs[r].0);
        let mut segments: Vec<FrameSegment> = Vec::new();
        let (mut next, mut active): (usize, Vec<usize>) = (0, Vec::new());
        let mut total = 0;
        for pair in bounds.windows(2) {
            let (start, end) = (pair[0], pair[1]);
            while next < order.len() && runs[order[next]].0 <= start {
                active.push(order[next]);
                next += 1;
            }
            active.retain(|&r| runs[r].1 > start);
            if active.is_empty() {
                continue;
            }
            let mut period = 1u64;
            for &r in &active {
                let step = runs[r].2;
                period = period / gcd(period, step) * step;
                if period > MAX_FRAME_PERIOD {
                    break;
                }
            }
            // Steps too unlike to combine into one period: the stretch itself is the period
            // when it is short enough.
            let period = if period <= MAX_FRAME_PERIOD {
                period
            } else if end - start <= MAX_FRAME_PERIOD {
                end - start
            } else {
                return Err(format!(
                    "ranges of steps that combine into a period of more than {MAX_FRAME_PERIOD}                      frames overlap over {} frames; list them in fewer overlapping ranges",
                    end - start
                ));
            };
            let mut offsets: Vec<u64> = Vec::new();
            for &r in &active {
                let (first, step) = (runs[r].0, runs[r].2);
                // The run's first frame at or after `start`.
                let from = first + (start - first).div_ceil(step) * step;
                let mut offset = from - start;
                while offset < period {
                    offsets.push(offset);
                    offset += step;
                }
            }
            offsets.sort_unstable();
            offsets.dedup();
            let segment = FrameSegment {
                start,
                end,
                period,
                offsets,
                before: total,
            };
            let len = segment.len();
            if len > 0 {
                total += len;
                segments.push(segment);
            }
        }
        Ok(Self {
            segments: std::sync::Arc::new(segments),
            total,
            first: 0,
            stride: 1,
            len: total,
        })
    }

    /// The frames of the set.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the set holds no frame.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The `index`-th frame (0-based, ascending).
    pub fn get(&self, index: u64) -> Option<u32> {
        if index >= self.len {
            return None;
        }
        let rank = self.first + index * self.stride;
        let at = self.segments.partition_point(|s| s.before <= rank) - 1;
        let segment = &self.segments[at];
        Some(segment.nth(rank - segment.before) as u32)
    }

    /// Whether the set holds `frame`.
    pub fn contains(&self, frame: u32) -> bool {
        let frame = frame as u64;
        let at = self.segments.partition_point(|s| s.start <= frame);
        let Some(rank) = at
            .checked_sub(1)
            .and_then(|at| Some(self.segments[at].before + self.segments[at].rank(frame)?))
        else {
            return false;
        };
        rank >= self.first
            && (rank - self.first).is_multiple_of(self.stride)
            && (rank - self.first) / self.stride < self.len
    }

    /// The frames, ascending.
    pub fn iter(&self) -> impl Iterator<Item = u32> + Send + '_ {
        (0..self.len).map_while(|i| self.get(i))
    }

    /// The frames, ascending, owning the set (for a render that pulls them one at a time).
    pub fn into_iter_owned(self) -> impl Iterator<Item = u32> + Send + 'static {
        (0..self.len).map_while(move |i| self.get(i))
    }

    /// The frames at `index`, `index + count`, ... of this set.
    fn every(&self, index: u64, count: u64) -> Self {
        Self {
            first: self.first + index * self.stride,
            stride: self.stride * count,
            len: self.len.saturating_sub(index).div_ceil(count),
            ..self.clone()
        }
    }

    /// The frames `from..to` (indices) of this set.
    fn part(&self, from: u64, to: u64) -> Self {
        Self {
            first: self.first + from * self.stride,
            len: to - from,
            ..self.clone()
        }
    }

    /// The ranges' frames before any shard.
    pub fn total(&self) -> u64 {
        self.total
    }
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// How `--shard` splits frames among machines.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ShardMode {
    /// Every `count`-th frame from the `index`-th (0-based) of the list: frame `f` of `0..n`
    /// goes to shard `f mod count`.
    #[default]
    Interleaved,
    /// Contiguous blocks of the list, as even as they can be, in order.
    Block,
}

/// One part of a frame list split among machines or processes (`canopy render --shard
/// INDEX/COUNT --shard-mode MODE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    /// This part, from 0; below `count`.
    pub index: u32,
    /// The number of parts.
    pub count: u32,
    /// How the frames are dealt to the parts.
    pub mode: ShardMode,
}

impl Shard {
    /// The whole list: part 0 of 1.
    pub const WHOLE: Shard = Shard {
        index: 0,
        count: 1,
        mode: ShardMode::Interleaved,
    };

    /// This part of `frames`; every frame is in exactly one part. Nothing is listed: the part
    /// is a description too.
    pub fn of(&self, frames: &FrameSet) -> FrameSet {
        let (index, count) = (self.index as u64, self.count.max(1) as u64);
        match self.mode {
            ShardMode::Interleaved => frames.every(index, count),
            ShardMode::Block => {
                let len = frames.len() as u128;
                let start = (len * index as u128 / count as u128) as u64;
                let end = (len * (index as u128 + 1) / count as u128) as u64;
                frames.part(start, end)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(frames: &FrameSet) -> Vec<u32> {
        frames.iter().collect()
    }

    fn frames(text: &str) -> Vec<u32> {
        list(&parse_frames(text).unwrap())
    }

    #[test]
    fn frame_lists_ranges_steps_and_single_frames() {
        assert_eq!(frames("3"), vec![3]);
        assert_eq!(frames("2..5"), vec![2, 3, 4]);
        assert_eq!(frames("2..=5"), vec![2, 3, 4, 5]);
        assert_eq!(frames("0..10:3"), vec![0, 3, 6, 9]);
        assert_eq!(frames("0..=9:3"), vec![0, 3, 6, 9]);
        assert_eq!(frames("1, 5,9..12,4,5"), vec![1, 4, 5, 9, 10, 11]);
        // Overlapping stepped ranges, each frame once.
        let mixed = "0..40:3,1..30:4,10..=20,17,35..50:6";
        let mut expected: Vec<u32> = (0..40)
            .step_by(3)
            .chain((1..30).step_by(4))
            .chain(10..=20)
            .chain([17])
            .chain((35..50).step_by(6))
            .collect();
        expected.sort_unstable();
        expected.dedup();
        let set = parse_frames(mixed).unwrap();
        assert_eq!(list(&set), expected);
        assert_eq!(set.len(), expected.len() as u64);
        for f in 0..60 {
            assert_eq!(set.contains(f), expected.contains(&f), "{f}");
        }
        for bad in [
            "",
            "5..5",
            "a..3",
            "3..1",
            "0..4:0",
            "3:2",
            "1,,2",
            "0..=4294967295",
            "4294967295",
        ] {
            assert!(parse_frames(bad).is_err(), "{bad:?} parsed");
        }
    }

    #[test]
    fn shards_hold_every_frame_exactly_once() {
        for text in ["0..12", "0..240", "3,7,20..31:2", "5"] {
            let frames = parse_frames(text).unwrap();
            for count in 1..=7 {
                for mode in [ShardMode::Interleaved, ShardMode::Block] {
                    let mut all: Vec<u32> = (0..count)
                        .flat_map(|index| list(&Shard { index, count, mode }.of(&frames)))
                        .collect();
                    all.sort_unstable();
                    assert_eq!(all, list(&frames), "{count} shards, {mode:?}");
                    let sizes: Vec<u64> = (0..count)
                        .map(|index| Shard { index, count, mode }.of(&frames).len())
                        .collect();
                    let (lo, hi) = (sizes.iter().min(), sizes.iter().max());
                    assert!(hi.unwrap() - lo.unwrap() <= 1, "{sizes:?}");
                    for index in 0..count {
                        let part = Shard { index, count, mode }.of(&frames);
                        assert_eq!(part.len(), list(&part).len() as u64);
                        for f in list(&frames) {
                            assert_eq!(part.contains(f), list(&part).contains(&f));
                        }
                    }
                }
            }
        }
        // Interleaved: frame f of 0..n in shard f mod N; block: contiguous.
        let frames = parse_frames("0..12").unwrap();
        assert_eq!(
            list(
                &Shard {
                    index: 1,
                    count: 4,
                    mode: ShardMode::Interleaved
                }
                .of(&frames)
            ),
            vec![1, 5, 9]
        );
        assert_eq!(
            list(
                &Shard {
                    index: 1,
                    count: 4,
                    mode: ShardMode::Block
                }
                .of(&frames)
            ),
            vec![3, 4, 5]
        );
    }

    /// Writers that write with `writer` into a naming of `out/frame_NNNN.png`.
    fn sequence(threads: usize, writer: Arc<FrameWriter>) -> ImageSequence {
        let naming = OutputNaming::parse(Path::new("out"), None).unwrap();
        ImageSequence::with_writer(naming, threads, writer)
    }

    fn image() -> FrameImage {
        FrameImage::Rgba8(vec![0; 4])
    }

    /// The writers encode frames at the same time: a slow write of one frame does not hold
    /// the others back.
    #[test]
    fn writers_run_in_parallel() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let (now, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let (n, m) = (now.clone(), most.clone());
        let slow = move |frame: u32, _: &Path, _: &FrameImage| {
            let running = n.fetch_add(1, Ordering::SeqCst) + 1;
            m.fetch_max(running, Ordering::SeqCst);
            std::thread::sleep(std::time::Duration::from_millis(60));
            n.fetch_sub(1, Ordering::SeqCst);
            Ok(1000 + frame as u64)
        };
        let mut writers = sequence(4, Arc::new(slow));
        let started = std::time::Instant::now();
        for frame in 0..8 {
            writers.submit_image(frame, image());
        }
        let (written, failure) = writers.finish();
        assert!(failure.is_none(), "{failure:?}");
        let frames: Vec<u32> = written.iter().map(|w| w.frame).collect();
        assert_eq!(frames, (0..8).collect::<Vec<_>>());
        // Each frame's bytes as its writer said, and at least the writer's time to encode.
        assert!(
            (written.iter()).all(|w| w.bytes == 1000 + w.frame as u64 && w.encode_s >= 0.06),
            "{written:?}"
        );
        let most = most.load(Ordering::SeqCst);
        assert!(most >= 2, "at most {most} frame written at a time");
        // One at a time would take 8 x 60 ms.
        assert!(
            started.elapsed().as_millis() < 400,
            "{:?}",
            started.elapsed()
        );
    }

    /// A frame whose write fails, or whose writer panics, is the run's failure, named by its
    /// frame and path; the other frames are still written.
    #[test]
    fn a_failed_or_panicking_writer_is_reported_with_its_frame() {
        for (bad, message) in [(3, "disk on fire"), (5, "the writer panicked: boom")] {
            let writer = move |frame: u32, _: &Path, _: &FrameImage| match frame {
                3 if bad == 3 => Err(std::io::Error::other("disk on fire")),
                5 if bad == 5 => panic!("boom"),
                _ => Ok(0),
            };
            let mut writers = sequence(2, Arc::new(writer));
            for frame in 0..10 {
                writers.submit_image(frame, image());
            }
            let (written, failure) = writers.finish();
            let failure = failure.expect("the failure is reported");
            assert_eq!(failure.frame, bad);
            assert_eq!(failure.path, Path::new(&format!("out/frame_{bad:04}.png")));
            let text = failure.to_string();
            assert!(text.contains(message) && text.contains("frame"), "{text}");
            let expected: Vec<u32> = (0..10).filter(|&f| f != bad).collect();
            let frames: Vec<u32> = written.iter().map(|w| w.frame).collect();
            assert_eq!(frames, expected, "the other frames are written");
        }
    }

    #[test]
    fn outputs_name_frames_by_folder_or_pattern() {
        let folder = OutputNaming::parse(Path::new("out"), None).unwrap();
        assert_eq!(folder.path(42), Path::new("out/frame_0042.png"));
        let ppm = OutputNaming::parse(Path::new("out"), Some(ImageFormat::Ppm)).unwrap();
        assert_eq!(ppm.path(7), Path::new("out/frame_0007.ppm"));
        let hashes = OutputNaming::parse(Path::new("shots/shot_###.ppm"), None).unwrap();
        assert_eq!(hashes.path(5), Path::new("shots/shot_005.ppm"));
        assert_eq!(hashes.path(12345), Path::new("shots/shot_12345.ppm"));
        assert_eq!(hashes.format(), ImageFormat::Ppm);
        assert_eq!(hashes.folder(), Path::new("shots"));
        let printf = OutputNaming::parse(Path::new("a_%04d.png"), None).unwrap();
        assert_eq!(printf.path(3), Path::new("./a_0003.png"));
        let plain = OutputNaming::parse(Path::new("b/%d_beauty.png"), None).unwrap();
        assert_eq!(plain.path(3), Path::new("b/3_beauty.png"));
        for (bad, message) in [
            ("x_####.tiff", "not .tiff"),
            ("x_%4s.png", "%d or %0Nd"),
            ("x_##_##.png", "one frame number"),
            ("x_%70000d.png", "at most 10"),
            ("x_%0999999999999999999999d.png", "at most 10"),
            ("x_###########.png", "at most 10"),
        ] {
            let error = OutputNaming::parse(Path::new(bad), None).unwrap_err();
            assert!(error.contains(message), "{bad}: {error}");
        }
        let conflict = OutputNaming::parse(Path::new("x_##.png"), Some(ImageFormat::Ppm));
        assert!(conflict.unwrap_err().contains("--format asks for ppm"));
        // A file name without a frame number is one frame's file, not a folder.
        let single = OutputNaming::parse(Path::new("stills/single.exr"), None).unwrap();
        assert!(single.is_single_file());
        assert_eq!(single.format(), ImageFormat::Exr);
        assert_eq!(single.path(7), Path::new("stills/single.exr"));
        assert_eq!(single.folder(), Path::new("stills"));
        let conflict = OutputNaming::parse(Path::new("single.png"), Some(ImageFormat::Exr));
        assert!(conflict.unwrap_err().contains("--format asks for exr"));
        assert!(!folder.is_single_file() && !hashes.is_single_file());
    }

    /// Encoders are as many as the threads asked for, fewer where frames in flight would pass
    /// the memory bound, and never none.
    #[test]
    fn writers_keep_frames_in_flight_within_the_memory_bound() {
        let hd = (1920, 1080);
        let options = |threads, exr: ExrOptions| WriterOptions {
            threads,
            exr,
            ..WriterOptions::default()
        };
        let every_aov = ExrOptions {
            aovs: vec![
                Aov::Depth,
                Aov::Normal,
                Aov::Albedo,
                Aov::Position,
                Aov::ObjectId,
            ],
            ..ExrOptions::default()
        };
        // 8-bit PNG: 8.3 MB a frame, 16 encoders fit.
        assert_eq!(
            options(16, ExrOptions::default()).writers(ImageFormat::Png, hd),
            16
        );
        // f32 RGBA with every AOV: 64 bytes a pixel, 133 MB a frame: (2w + 1) frames in 1 GiB
        // for scan lines, written as they are compressed; (3w + 1) for PIZ.
        let frame = 1920 * 1080 * 64;
        let all = options(16, every_aov.clone());
        let writers = all.writers(ImageFormat::Exr, hd) as u64;
        assert_eq!(writers, 3);
        assert!((2 * writers + 1) * frame <= WriterOptions::DEFAULT_MEMORY);
        let mut piz = options(16, every_aov);
        piz.exr.compression = ExrCompression::Piz;
        let writers = piz.writers(ImageFormat::Exr, hd) as u64;
        assert_eq!(writers, 2);
        assert!((3 * writers + 1) * frame <= WriterOptions::DEFAULT_MEMORY);
        let tight = WriterOptions { memory: 1, ..all };
        assert_eq!(tight.writers(ImageFormat::Exr, hd), 1);
        assert_eq!(
            options(3, ExrOptions::default()).writers(ImageFormat::Exr, (64, 64)),
            3
        );
    }

    /// Every OpenEXR compression writes channels of every encoding, and the header's text
    /// attributes, that read back equal: blocks that compress (the flat top rows) and blocks
    /// stored raw (the noisy ones), over several batches of lines and a last zip block of 12
    /// lines.
    #[test]
    fn exr_frames_read_back_equal_under_every_compression() {
        use crate::render::{ChannelEncoding::*, ChannelSource::*};
        let (width, height) = (37, 300);
        let pixels = width * height;
        let mut rng = crate::rng::Rng::new(5);
        let floats: Vec<f32> = (0..pixels)
            .map(|i| match i / width < 100 {
                true => (i / width) as f32 * 0.25,
                false => rng.f32_in(-4.0, 4.0),
            })
            .collect();
        let halves: Vec<u8> = floats
            .iter()
            .flat_map(|&v| half::f16::from_f32(v).to_bits().to_le_bytes())
            .collect();
        let ids: Vec<u32> = (0..pixels).map(|_| rng.below(7)).collect();
        let planes = vec![
            (OutputChannel::new(Red, F16), halves),
            (
                OutputChannel::new(Depth, F32),
                bytemuck::cast_slice(&floats).to_vec(),
            ),
            (
                OutputChannel::new(ObjectId, U32),
                bytemuck::cast_slice(&ids).to_vec(),
            ),
        ];
        let attributes = vec![
            ("canopy:frame".to_string(), "3".to_string()),
            (
                "canopy:an_attribute_named_at_length".to_string(),
                "long".to_string(),
            ),
        ];
        let image = FrameImage::Channels {
            planes,
            attributes: attributes.clone(),
        };
        let mut sizes = Vec::new();
        let folder = tempfile::tempdir().unwrap();
        for compression in [
            ExrCompression::None,
            ExrCompression::Rle,
            ExrCompression::Zips,
            ExrCompression::Zip,
            ExrCompression::Piz,
        ] {
            let path = folder.path().join(format!("{compression:?}.exr"));
            let options = WriterOptions {
                exr: ExrOptions {
                    compression,
                    ..ExrOptions::default()
                },
                ..WriterOptions::default()
            };
            let size = (width as u32, height as u32);
            write_atomically(&path, ImageFormat::Exr, &options, size, &image).unwrap();
            let read = exr::prelude::read_all_flat_layers_from_file(&path).unwrap();
            let channels = &read.layer_data[0].channel_data.list;
            let named = |name: &str| {
                let channel = channels.iter().find(|c| c.name == *name).unwrap();
                channel.sample_data.values_as_f32().collect::<Vec<f32>>()
            };
            let rounded: Vec<f32> = floats
                .iter()
                .map(|&v| half::f16::from_f32(v).to_f32())
                .collect();
            assert_eq!(named("R"), rounded, "{compression:?}");
            assert_eq!(named("Z"), floats, "{compression:?}");
            let id = named("object_id")
                .iter()
                .map(|&v| v as u32)
                .collect::<Vec<_>>();
            assert_eq!(id, ids, "{compression:?}");
            let header = &read.layer_data[0].attributes.other;
            for (name, value) in &attributes {
                let text = exr::prelude::Text::from(name.as_str());
                let read = header.get(&text).map(|value| format!("{value:?}"));
                assert!(read.unwrap().contains(value), "{compression:?} {name}");
            }
            sizes.push(std::fs::metadata(&path).unwrap().len());
        }
        // Run-length and zip blocks of the flat rows are smaller than the raw ones.
        assert!(sizes[1..].iter().all(|&size| size < sizes[0]), "{sizes:?}");
    }
}
