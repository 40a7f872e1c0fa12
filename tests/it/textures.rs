//! glTF textures as the loader reads them: images decoded (from a file beside the model or a
//! `data:` URI), samplers, `KHR_texture_transform`, both sets of texture coordinates and
//! emission; and the errors of bad texture input, each naming what is at fault. The renderer's
//! use of them is tested against the CPU renderer in `render.rs`.

use crate::common::files::TempFolder;
use canopy::scene::texture::{Filter, MipFilter, Sampler, Wrap};
use canopy::scene::{MaterialMesh, TextureRef};
use std::path::{Path, PathBuf};

/// A PNG of `width` x `height` RGBA8 texels, rows from the top.
pub fn png(width: u32, height: u32, rgba: &[u8]) -> Vec<u8> {
    let mut bytes = Vec::new();
    let mut encoder = png::Encoder::new(&mut bytes, width, height);
    encoder.set_color(png::ColorType::Rgba);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().unwrap();
    writer.write_image_data(rgba).unwrap();
    writer.finish().unwrap();
    bytes
}

/// An 8x8 checker of red and white texels, red at the top left.
pub fn checker_png() -> Vec<u8> {
    let rgba: Vec<u8> = (0..64)
        .flat_map(|i| {
            if (i % 8 + i / 8) % 2 == 0 {
                [220, 30, 20, 255]
            } else {
                [255, 255, 255, 255]
            }
        })
        .collect();
    png(8, 8, &rgba)
}

/// A 4x4 image of colours that all differ (sRGB).
pub fn colours_png() -> Vec<u8> {
    let rgba: Vec<u8> = (0..16u8)
        .flat_map(|i| [i * 16, 255 - i * 12, (i * 37) % 251, 255])
        .collect();
    png(4, 4, &rgba)
}

/// `bytes` as a base64 `data:` URI of media type `mime`.
pub fn data_uri(mime: &str, bytes: &[u8]) -> String {
    use base64::Engine;
    format!(
        "data:{mime};base64,{}",
        base64::engine::general_purpose::STANDARD.encode(bytes)
    )
}

/// What [`quad_gltf`] writes besides the square: the JSON of its one material and of the
/// file's textures, samplers and images, whether the square has `TEXCOORD_1`, and more
/// vertex attributes.
pub struct QuadLook<'a> {
    pub material: &'a str,
    pub textures: &'a str,
    pub samplers: &'a str,
    pub images: &'a str,
    pub second_set: bool,
    pub attributes: &'a [Attribute<'a>],
}

/// A vertex attribute of the square's four vertices.
pub struct Attribute<'a> {
    /// Its semantic, e.g. `TANGENT`.
    pub semantic: &'a str,
    /// Its accessor's type (`VEC4`) and component type (5126: float, 5121: unsigned byte).
    pub kind: &'a str,
    pub component: u32,
    /// Its four values' bytes.
    pub bytes: Vec<u8>,
}

/// Writes `name` in `folder`: a glTF file of a unit square in the xy plane facing +z, its
/// `TEXCOORD_0` the image's corners (v down, so the image stands upright) and its
/// `TEXCOORD_1`, when asked for, the same turned half a turn; with the material, textures,
/// samplers and images `look` gives. Returns its path.
pub fn quad_gltf(folder: &Path, name: &str, look: &QuadLook) -> PathBuf {
    let positions: [[f32; 3]; 4] = [[0., 0., 0.], [1., 0., 0.], [1., 1., 0.], [0., 1., 0.]];
    let normals = [[0f32, 0., 1.]; 4];
    let texcoords_0: [[f32; 2]; 4] = [[0., 1.], [1., 1.], [1., 0.], [0., 0.]];
    let texcoords_1 = texcoords_0.map(|[u, v]| [1.0 - u, 1.0 - v]);
    let indices: [u16; 6] = [0, 1, 2, 0, 2, 3];
    let mut buffer: Vec<u8> = Vec::new();
    buffer.extend_from_slice(bytemuck::cast_slice(&positions));
    buffer.extend_from_slice(bytemuck::cast_slice(&normals));
    buffer.extend_from_slice(bytemuck::cast_slice(&texcoords_0));
    buffer.extend_from_slice(bytemuck::cast_slice(&texcoords_1));
    buffer.extend_from_slice(bytemuck::cast_slice(&indices));
    let second = if look.second_set {
        r#", "TEXCOORD_1": 3"#
    } else {
        ""
    };
    let (mut attributes, mut views, mut accessors) = (String::new(), String::new(), String::new());
    for (k, extra) in look.attributes.iter().enumerate() {
        attributes += &format!(r#", "{}": {}"#, extra.semantic, 5 + k);
        views += &format!(
            r#", {{"buffer": 0, "byteOffset": {}, "byteLength": {}}}"#,
            buffer.len(),
            extra.bytes.len()
        );
        let normalized = if extra.component == 5126 {
            ""
        } else {
            r#", "normalized": true"#
        };
        accessors += &format!(
            r#", {{"bufferView": {}, "componentType": {}, "count": 4, "type": "{}"{normalized}}}"#,
            5 + k,
            extra.component,
            extra.kind
        );
        buffer.extend_from_slice(&extra.bytes);
        buffer.resize(buffer.len().next_multiple_of(4), 0);
    }
    let json = format!(
        r#"{{
        "asset": {{"version": "2.0"}},
        "extensionsUsed": ["KHR_texture_transform", "KHR_materials_emissive_strength"],
        "scenes": [{{"nodes": [0]}}],
        "nodes": [{{"mesh": 0}}],
        "meshes": [{{"primitives": [{{
            "attributes": {{"POSITION": 0, "NORMAL": 1, "TEXCOORD_0": 2{second}{attributes}}},
            "indices": 4, "material": 0}}]}}],
        "materials": [{material}],
        "textures": {textures},
        "samplers": {samplers},
        "images": {images},
        "buffers": [{{"byteLength": {length}, "uri": "{uri}"}}],
        "bufferViews": [
            {{"buffer": 0, "byteOffset": 0, "byteLength": 48}},
            {{"buffer": 0, "byteOffset": 48, "byteLength": 48}},
            {{"buffer": 0, "byteOffset": 96, "byteLength": 32}},
            {{"buffer": 0, "byteOffset": 128, "byteLength": 32}},
            {{"buffer": 0, "byteOffset": 160, "byteLength": 12}}{views}
        ],
        "accessors": [
            {{"bufferView": 0, "componentType": 5126, "count": 4, "type": "VEC3",
              "min": [0, 0, 0], "max": [1, 1, 0]}},
            {{"bufferView": 1, "componentType": 5126, "count": 4, "type": "VEC3"}},
            {{"bufferView": 2, "componentType": 5126, "count": 4, "type": "VEC2"}},
            {{"bufferView": 3, "componentType": 5126, "count": 4, "type": "VEC2"}},
            {{"bufferView": 4, "componentType": 5123, "count": 6, "type": "SCALAR"}}{accessors}
        ]
    }}"#,
        material = look.material,
        textures = look.textures,
        samplers = look.samplers,
        images = look.images,
        length = buffer.len(),
        uri = data_uri("application/octet-stream", &buffer),
    );
    let path = folder.join(name);
    std::fs::write(&path, json).unwrap();
    path
}

/// The model of the texture tests: the checker (a file beside the model, read nearest and
/// repeated, scaled twice and offset by a quarter) as base colour through `TEXCOORD_0`, and
/// the colours (a `data:` URI, bilinear, clamped) as emission through `TEXCOORD_1`, emissive
/// factor 0.5 at strength 0.6. Returns its path.
pub fn textured_quad(folder: &Path) -> PathBuf {
    std::fs::write(folder.join("checker.png"), checker_png()).unwrap();
    let images = format!(
        r#"[{{"uri": "checker.png"}}, {{"uri": "{}", "name": "colours"}}]"#,
        data_uri("image/png", &colours_png())
    );
    quad_gltf(
        folder,
        "quad.gltf",
        &QuadLook {
            material: r#"{
                "pbrMetallicRoughness": {"baseColorFactor": [1, 1, 0.5, 1],
                    "baseColorTexture": {"index": 0, "extensions": {"KHR_texture_transform":
                        {"offset": [0.25, 0], "scale": [2, 2]}}}},
                "emissiveFactor": [0.5, 0.5, 0.5],
                "emissiveTexture": {"index": 1, "texCoord": 1},
                "extensions": {"KHR_materials_emissive_strength": {"emissiveStrength": 0.6}}}"#,
            textures: r#"[{"source": 0, "sampler": 0}, {"source": 1, "sampler": 1}]"#,
            samplers: r#"[{"magFilter": 9728, "wrapS": 10497, "wrapT": 10497},
                          {"magFilter": 9729, "minFilter": 9984, "wrapS": 33071,
                           "wrapT": 33648}]"#,
            images: &images,
            second_set: true,
            attributes: &[],
        },
    )
}

#[test]
fn a_textured_gltf_reads_its_images_samplers_transforms_and_emission() {
    let folder = TempFolder::new("textured-quad");
    let loaded = MaterialMesh::load(&textured_quad(&folder.0)).unwrap();
    assert_eq!(loaded.textures.len(), 2);
    let (checker, colours) = (&loaded.textures[0], &loaded.textures[1]);
    assert_eq!((checker.width, checker.height), (8, 8));
    assert_eq!(checker.texels[0].to_le_bytes(), [220, 30, 20, 255]);
    assert_eq!(checker.texels[1].to_le_bytes(), [255; 4]);
    assert_eq!(
        checker.sampler,
        Sampler {
            wrap_u: Wrap::Repeat,
            wrap_v: Wrap::Repeat,
            filter: Filter::Nearest,
            min_filter: Filter::Linear,
            mip_filter: MipFilter::Linear,
        }
    );
    // Its mip levels, 4x4, 2x2 and 1x1, follow; each texel of the base colour (sRGB) checker
    // is the mean of two red and two white texels in linear light.
    assert_eq!((checker.levels, checker.texels.len()), (4, 64 + 16 + 4 + 1));
    let mean = checker.texels[64].to_le_bytes();
    let expected = [238, 189, 188, 255];
    assert!(
        (0..4).all(|k| mean[k].abs_diff(expected[k]) <= 1),
        "{mean:?} against {expected:?}"
    );
    assert_eq!((colours.width, colours.height), (4, 4));
    assert_eq!(colours.texels[5].to_le_bytes(), [80, 195, 185, 255]);
    assert_eq!(
        colours.sampler,
        Sampler {
            wrap_u: Wrap::ClampToEdge,
            wrap_v: Wrap::MirroredRepeat,
            filter: Filter::Linear,
            min_filter: Filter::Nearest,
            mip_filter: MipFilter::Nearest,
        }
    );

    let material = loaded.materials[0];
    assert_eq!(material.colour, [1.0, 1.0, 0.5]);
    assert_eq!(material.emission, [0.3, 0.3, 0.3]);
    assert_eq!(
        material.base_colour_texture,
        TextureRef::new(0, 0).with_transform([0.25, 0.0], 0.0, [2.0, 2.0])
    );
    assert_eq!(material.emissive_texture, TextureRef::new(1, 1));
    // The square's corner at the origin has TEXCOORD_0 (0, 1) and TEXCOORD_1 (1, 0); the
    // transform scales, then offsets.
    assert_eq!(loaded.texcoords[0], [0.0, 1.0, 1.0, 0.0]);
    assert_eq!(
        material
            .base_colour_texture
            .coordinates(loaded.texcoords[0]),
        [0.25, 2.0]
    );
}

#[test]
fn alpha_modes_read_as_cutouts() {
    use canopy::scene::AlphaMode;
    let folder = TempFolder::new("alpha-modes");
    std::fs::write(folder.0.join("checker.png"), checker_png()).unwrap();
    for (mode, cutoff, expected) in [
        (
            r#""alphaMode": "MASK", "alphaCutoff": 0.3,"#,
            0.3,
            AlphaMode::Mask,
        ),
        (r#""alphaMode": "BLEND","#, 0.5, AlphaMode::Mask),
        (r#""alphaMode": "OPAQUE","#, 0.5, AlphaMode::Opaque),
        ("", 0.5, AlphaMode::Opaque),
    ] {
        let material = format!(
            r#"{{{mode} "pbrMetallicRoughness": {{"baseColorFactor": [1, 1, 1, 0.8],
                "baseColorTexture": {{"index": 0}}}}}}"#
        );
        let path = quad_gltf(
            &folder.0,
            "alpha.gltf",
            &QuadLook {
                material: &material,
                textures: r#"[{"source": 0}]"#,
                samplers: "[]",
                images: r#"[{"uri": "checker.png"}]"#,
                second_set: false,
                attributes: &[],
            },
        );
        let m = MaterialMesh::load(&path).unwrap().materials[0];
        assert_eq!(m.alpha_mode, expected as u32, "{mode}");
        if expected == AlphaMode::Mask {
            assert_eq!((m.alpha, m.alpha_cutoff), (0.8, cutoff), "{mode}");
        }
    }
}

#[test]
fn an_offset_moves_the_texture() {
    // Offset by half the checker's 8 texels' period of two: every texel's colour swaps.
    let folder = TempFolder::new("texture-offset");
    let loaded = MaterialMesh::load(&textured_quad(&folder.0)).unwrap();
    let checker = &loaded.textures[0];
    let plain = TextureRef::new(0, 0);
    let moved = plain.with_transform([1.0 / 8.0, 0.0], 0.0, [1.0, 1.0]);
    let whole_turn = plain.with_transform([1.0, -3.0], 0.0, [1.0, 1.0]);
    for k in 0..8 {
        let uv = [(k as f32 + 0.5) / 8.0, 0.5 / 8.0];
        let at = |r: TextureRef| {
            checker.sample(
                r.coordinates([uv[0], uv[1], 0.0, 0.0]),
                f32::NEG_INFINITY,
                true,
            )
        };
        assert_ne!(at(plain), at(moved), "texel {k}");
        assert_eq!(
            at(moved),
            at(TextureRef::new(0, 0).with_transform([-1.0 / 8.0, 0.0], 0.0, [1.0, 1.0]))
        );
        assert_eq!(at(plain), at(whole_turn), "texel {k}");
    }
}

/// The error loading `path`, which must not load, with each of `fragments` in it.
fn load_error(path: &Path, fragments: &[&str]) {
    let message = match MaterialMesh::load(path) {
        Ok(_) => panic!("{} loaded but should not", path.display()),
        Err(e) => e.to_string(),
    };
    for fragment in fragments {
        assert!(message.contains(fragment), "'{message}' lacks '{fragment}'");
    }
}

/// The square with its base colour from image 0, `images` (JSON), through `TEXCOORD_<set>`.
fn base_colour_quad(
    folder: &Path,
    name: &str,
    images: &str,
    set: u32,
    second_set: bool,
) -> PathBuf {
    let material = format!(
        r#"{{"pbrMetallicRoughness": {{"baseColorTexture": {{"index": 0, "texCoord": {set}}}}}}}"#
    );
    quad_gltf(
        folder,
        name,
        &QuadLook {
            material: &material,
            textures: r#"[{"source": 0}]"#,
            samplers: "[]",
            images,
            second_set,
            attributes: &[],
        },
    )
}

#[test]
fn bad_texture_input_is_named() {
    let folder = TempFolder::new("bad-textures");
    let dir = &folder.0;
    std::fs::write(dir.join("checker.png"), checker_png()).unwrap();
    let ok = base_colour_quad(dir, "ok.gltf", r#"[{"uri": "checker.png"}]"#, 0, false);
    assert!(MaterialMesh::load(&ok).is_ok());

    let missing = base_colour_quad(dir, "missing.gltf", r#"[{"uri": "gone.png"}]"#, 0, false);
    load_error(
        &missing,
        &["missing.gltf", "material 0", "image 0", "gone.png"],
    );

    std::fs::write(dir.join("garbage.png"), b"\x89PNG\r\n\x1a\n but not really").unwrap();
    let garbage = base_colour_quad(
        dir,
        "garbage.gltf",
        r#"[{"uri": "garbage.png", "name": "bark"}]"#,
        0,
        false,
    );
    load_error(&garbage, &["garbage.gltf", "material 0", "image 0 'bark'"]);

    let truncated = &checker_png()[..40];
    let images = format!(r#"[{{"uri": "{}"}}]"#, data_uri("image/png", truncated));
    let cut = base_colour_quad(dir, "cut.gltf", &images, 0, false);
    load_error(&cut, &["cut.gltf", "material 0", "image 0"]);

    let outside = base_colour_quad(
        dir,
        "outside.gltf",
        r#"[{"uri": "../checker.png"}]"#,
        0,
        false,
    );
    load_error(
        &outside,
        &["outside.gltf", "image 0", "outside the model's folder"],
    );

    let lacking = base_colour_quad(dir, "lacking.gltf", r#"[{"uri": "checker.png"}]"#, 1, false);
    load_error(
        &lacking,
        &[
            "lacking.gltf",
            "mesh 0 primitive 0",
            "material 0",
            "TEXCOORD_1",
        ],
    );

    let beyond = base_colour_quad(dir, "beyond.gltf", r#"[{"uri": "checker.png"}]"#, 2, true);
    load_error(
        &beyond,
        &["beyond.gltf", "material 0", "texture coordinate set 2"],
    );
}

#[test]
fn a_huge_image_in_a_small_file_is_refused() {
    // 4,096 x 4,096 texels of one grey compress to a few tens of kilobytes; as RGBA8 they
    // take 64 MiB, more than 2,048 bytes per byte of the file.
    let folder = TempFolder::new("huge-texture");
    let side = 4096u32;
    let mut bytes = Vec::new();
    let mut encoder = png::Encoder::new(&mut bytes, side, side);
    encoder.set_color(png::ColorType::Grayscale);
    let mut writer = encoder.write_header().unwrap();
    writer
        .write_image_data(&vec![0u8; (side * side) as usize])
        .unwrap();
    writer.finish().unwrap();
    assert!(bytes.len() < 64 << 10, "{} bytes", bytes.len());
    std::fs::write(folder.0.join("huge.png"), &bytes).unwrap();
    let path = base_colour_quad(&folder.0, "huge.gltf", r#"[{"uri": "huge.png"}]"#, 0, false);
    load_error(&path, &["huge.gltf", "image 0", "4096x4096"]);
}

/// `environment` written as a Radiance `.hdr` file at `path`.
fn write_hdr(path: &Path, width: u32, height: u32, texels: &[[f32; 3]]) {
    let file = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let pixels: Vec<image::Rgb<f32>> = texels.iter().map(|&t| image::Rgb(t)).collect();
    image::codecs::hdr::HdrEncoder::new(file)
        .encode(&pixels, width as usize, height as usize)
        .unwrap();
}

#[test]
fn environments_read_from_hdr_and_exr_and_map_directions() {
    use canopy::scene::Environment;
    use glam::Vec3;
    let folder = TempFolder::new("environments");
    // 8 x 4 texels, each a distinct colour; powers of two survive RGBE exactly.
    let texels: Vec<[f32; 3]> = (0..32)
        .map(|i| [(i % 8) as f32, (i / 8) as f32, 0.5])
        .collect();
    let hdr = folder.0.join("sky.hdr");
    write_hdr(&hdr, 8, 4, &texels);
    let read = Environment::load(&hdr).unwrap();
    assert_eq!((read.width, read.height), (8, 4));
    assert_eq!(read.texels, texels);
    assert_eq!((read.intensity, read.rotation_degrees), (1.0, 0.0));

    let exr = folder.0.join("sky.exr");
    exr::prelude::write_rgb_file(&exr, 8, 4, |x, y| {
        let t = texels[y * 8 + x];
        (t[0], t[1], t[2])
    })
    .unwrap();
    assert_eq!(Environment::load(&exr).unwrap().texels, texels);

    // Straight up reads the top row, straight down the bottom one; -z the middle column, +x
    // three quarters across; a turn of 90 degrees brings +x's column to -z.
    let [_, v] = read.coordinates(Vec3::Y);
    assert_eq!(v, 0.0);
    assert_eq!(read.coordinates(Vec3::NEG_Y)[1], 1.0);
    assert_eq!(read.coordinates(Vec3::NEG_Z), [0.5, 0.5]);
    assert_eq!(read.coordinates(Vec3::X), [0.75, 0.5]);
    let turned = Environment {
        rotation_degrees: 90.0,
        ..read.clone()
    };
    let [u, _] = turned.coordinates(Vec3::NEG_Z);
    assert!((u - 0.75).abs() < 1e-6, "{u}");
    // Between texel centres the map is bilinear, and the intensity scales it.
    let bright = Environment {
        intensity: 2.0,
        ..read.clone()
    };
    assert_eq!(
        bright.radiance(Vec3::NEG_Z),
        read.radiance(Vec3::NEG_Z) * 2.0
    );
}

#[test]
fn bad_environments_are_named() {
    use canopy::scene::Environment;
    let folder = TempFolder::new("bad-environments");
    let error = |name: &str, bytes: &[u8], fragments: &[&str]| {
        let path = folder.0.join(name);
        std::fs::write(&path, bytes).unwrap();
        let message = Environment::load(&path).unwrap_err().to_string();
        assert!(message.contains(name), "'{message}' does not name {name}");
        for fragment in fragments {
            assert!(message.contains(fragment), "'{message}' lacks '{fragment}'");
        }
    };
    error("garbage.hdr", b"#?RADIANCE\nnot really", &[]);
    error("garbage.exr", b"v/1\x01 not an exr", &[]);
    error("sky.png", &checker_png(), &[".hdr", ".exr"]);
    // A header claiming 16,000 x 16,000 texels in a few bytes.
    error(
        "huge.hdr",
        b"#?RADIANCE\nFORMAT=32-bit_rle_rgbe\n\n-Y 16000 +X 16000\n\x01\x01\x01\x80",
        &["16000x16000"],
    );
    // RGBE holds only finite, non-negative values; OpenEXR holds any.
    for (name, bad) in [("nan.exr", f32::NAN), ("negative.exr", -1.0)] {
        let path = folder.0.join(name);
        exr::prelude::write_rgb_file(&path, 2, 1, |x, _| {
            (1.0, if x == 1 { bad } else { 0.0 }, 0.0)
        })
        .unwrap();
        let message = Environment::load(&path).unwrap_err().to_string();
        assert!(
            message.contains(name) && message.contains("texel 1"),
            "{message}"
        );
    }
}

/// A 4x4 normal texture: columns bent alternately to -x and +x (by about 37 degrees), rows
/// alternately a little to +y.
pub fn bumps_png() -> Vec<u8> {
    let rgba: Vec<u8> = (0..16)
        .flat_map(|i| {
            let x = if i % 2 == 0 { 52 } else { 204 };
            let y = if (i / 4) % 2 == 0 { 128 } else { 160 };
            [x, y, 230, 255]
        })
        .collect();
    png(4, 4, &rgba)
}

/// A 4x4 metallic-roughness texture: metal (blue) on alternate texels, roughness (green) 1.
pub fn metal_png() -> Vec<u8> {
    let rgba: Vec<u8> = (0..16)
        .flat_map(|i| {
            let metal = if (i % 4 + i / 4) % 2 == 0 { 255 } else { 0 };
            [0, 255, metal, 255]
        })
        .collect();
    png(4, 4, &rgba)
}

/// The square's four vertices' `TANGENT`s, all `tangent`.
pub fn tangent_attribute(tangent: [f32; 4]) -> Attribute<'static> {
    Attribute {
        semantic: "TANGENT",
        kind: "VEC4",
        component: 5126,
        bytes: bytemuck::cast_slice(&[tangent; 4]).to_vec(),
    }
}

/// The square with the checker as base colour, the bumps (`bumps.png`, written here) as its
/// normal texture at `scale`, and `pbr` (JSON members) added to its `pbrMetallicRoughness`,
/// where texture 2 is the metallic-roughness texture [`metal_png`]; with `attributes`.
pub fn normal_mapped_quad(
    folder: &Path,
    name: &str,
    scale: f32,
    pbr: &str,
    attributes: &[Attribute],
) -> PathBuf {
    std::fs::write(folder.join("checker.png"), checker_png()).unwrap();
    std::fs::write(folder.join("bumps.png"), bumps_png()).unwrap();
    std::fs::write(folder.join("metal.png"), metal_png()).unwrap();
    let material = format!(
        r#"{{"pbrMetallicRoughness": {{"baseColorTexture": {{"index": 0}}{pbr}}},
            "normalTexture": {{"index": 1, "scale": {scale}}}}}"#
    );
    let images = r#"[{"uri": "checker.png"}, {"uri": "bumps.png"}, {"uri": "metal.png"}]"#;
    quad_gltf(
        folder,
        name,
        &QuadLook {
            material: &material,
            textures: r#"[{"source": 0, "sampler": 0}, {"source": 1, "sampler": 0},
                          {"source": 2, "sampler": 0}]"#,
            samplers: r#"[{"magFilter": 9728}]"#,
            images,
            second_set: false,
            attributes,
        },
    )
}

#[test]
fn normal_and_metallic_roughness_textures_and_vertex_colours_are_read() {
    let folder = TempFolder::new("pbr-quad");
    let colours: [[u8; 4]; 4] = [
        [255, 0, 0, 255],
        [0, 255, 0, 255],
        [0, 0, 255, 255],
        [255; 4],
    ];
    let path = normal_mapped_quad(
        &folder.0,
        "pbr.gltf",
        0.7,
        r#", "metallicFactor": 0.8, "roughnessFactor": 0.6,
            "metallicRoughnessTexture": {"index": 2}"#,
        &[Attribute {
            semantic: "COLOR_0",
            kind: "VEC4",
            component: 5121,
            bytes: colours.as_flattened().to_vec(),
        }],
    );
    let loaded = MaterialMesh::load(&path).unwrap();
    let m = loaded.materials[0];
    assert_eq!((m.metallic, m.roughness, m.normal_scale), (0.8, 0.6, 0.7));
    // Textures in the order the material reads them: base colour, metal, normals.
    assert_eq!(m.metallic_roughness_texture, TextureRef::new(1, 0));
    assert_eq!(m.normal_texture, TextureRef::new(2, 0));
    assert_eq!(m.kind(), Some(canopy::scene::MaterialKind::Diffuse));
    assert_eq!(loaded.textures.len(), 3);
    assert_eq!(loaded.colours[0], [1.0, 0.0, 0.0, 1.0]);
    assert_eq!(loaded.colours[3], [1.0; 4]);
    // The tangents MikkTSpace makes for the upright square: +x, glTF's handedness.
    assert_eq!(loaded.tangents.len(), 4);
    for t in &loaded.tangents {
        assert!((glam::Vec4::from(*t) - glam::Vec4::new(1.0, 0.0, 0.0, 1.0)).length() < 1e-6);
    }
    // Without textures, the factors alone and no tangents.
    let mut bare = loaded.clone();
    bare.drop_textures();
    assert!(bare.tangents.is_empty() && !bare.materials[0].normal_texture.is_some());
    assert_eq!(bare.materials[0].metallic, 0.8);
}

#[test]
fn an_occlusion_texture_is_read_with_its_strength_and_transform() {
    let folder = TempFolder::new("occlusion-quad");
    std::fs::write(folder.0.join("checker.png"), checker_png()).unwrap();
    std::fs::write(folder.0.join("metal.png"), metal_png()).unwrap();
    let look = |name: &str, material: &str| {
        quad_gltf(
            &folder.0,
            name,
            &QuadLook {
                material,
                textures: r#"[{"source": 0, "sampler": 0}, {"source": 1, "sampler": 0}]"#,
                samplers: r#"[{"magFilter": 9728}]"#,
                images: r#"[{"uri": "checker.png"}, {"uri": "metal.png"}]"#,
                second_set: false,
                attributes: &[],
            },
        )
    };
    let quad = |name: &str, occlusion: &str| {
        let material = format!(
            r#"{{"pbrMetallicRoughness": {{"baseColorTexture": {{"index": 0}}}},
                "occlusionTexture": {{"index": 1{occlusion}}}}}"#
        );
        look(name, &material)
    };
    let m = MaterialMesh::load(&quad("half.gltf", r#", "strength": 0.5"#))
        .unwrap()
        .materials[0];
    assert_eq!(m.occlusion_texture, TextureRef::new(1, 0));
    assert_eq!(m.occlusion_strength, 0.5);
    let m = MaterialMesh::load(&quad("full.gltf", ""))
        .unwrap()
        .materials[0];
    assert_eq!(m.occlusion_strength, 1.0, "glTF's default strength");
    let mut bare = MaterialMesh::load(&quad("bare.gltf", "")).unwrap();
    bare.drop_textures();
    assert!(!bare.materials[0].occlusion_texture.is_some());
    load_error(
        &quad("bad.gltf", r#", "strength": 1.5"#),
        &["bad.gltf", "occlusion strength 1.5"],
    );
    // KHR_texture_transform, which the gltf crate leaves as JSON on occlusion textures.
    let transform = |name: &str, transform: &str| {
        let extension = format!(r#", "extensions": {{"KHR_texture_transform": {transform}}}"#);
        quad(name, &extension)
    };
    let path = transform(
        "moved.gltf",
        r#"{"offset": [0.5, 0.25], "rotation": 0.5, "scale": [2, 3]}"#,
    );
    let m = MaterialMesh::load(&path).unwrap().materials[0];
    let expected = TextureRef::new(1, 0).with_transform([0.5, 0.25], 0.5, [2.0, 3.0]);
    assert_eq!(m.occlusion_texture, expected);
    let m = MaterialMesh::load(&transform("empty.gltf", "{}"))
        .unwrap()
        .materials[0];
    assert_eq!(m.occlusion_texture, TextureRef::new(1, 0), "the defaults");
    for (name, bad, field) in [
        (
            "offset.gltf",
            r#"{"offset": [1]}"#,
            "'offset' is not two numbers",
        ),
        (
            "rotation.gltf",
            r#"{"rotation": "half"}"#,
            "'rotation' is not a number",
        ),
        ("set.gltf", r#"{"texCoord": 2}"#, "texture coordinate set 2"),
        ("huge.gltf", r#"{"scale": [1e39, 1]}"#, "not finite"),
        ("number.gltf", "2", "is not an object"),
    ] {
        load_error(&transform(name, bad), &[name, "occlusion texture", field]);
    }
    // The same JSON on a normal texture.
    let normal = look(
        "normal.gltf",
        r#"{"normalTexture": {"index": 1, "extensions":
            {"KHR_texture_transform": {"offset": [0.5, 0], "texCoord": 0}}}}"#,
    );
    let m = MaterialMesh::load(&normal).unwrap().materials[0];
    // Its only texture, the first decoded.
    let expected = TextureRef::new(0, 0).with_transform([0.5, 0.0], 0.0, [1.0, 1.0]);
    assert_eq!(m.normal_texture, expected);
}

#[test]
fn tangents_from_the_file_and_generated_agree_on_an_upright_square() {
    let folder = TempFolder::new("tangents");
    let generated = MaterialMesh::load(&normal_mapped_quad(
        &folder.0,
        "generated.gltf",
        1.0,
        "",
        &[],
    ))
    .unwrap();
    let from_file = MaterialMesh::load(&normal_mapped_quad(
        &folder.0,
        "file.gltf",
        1.0,
        "",
        &[tangent_attribute([1.0, 0.0, 0.0, 1.0])],
    ))
    .unwrap();
    assert_eq!(from_file.tangents, vec![[1.0, 0.0, 0.0, 1.0]; 4]);
    for (g, f) in generated.tangents.iter().zip(&from_file.tangents) {
        assert!(
            (glam::Vec4::from(*g) - glam::Vec4::from(*f)).length() < 1e-6,
            "{g:?} {f:?}"
        );
    }
    // A file's tangents that say otherwise are the ones read.
    let other = MaterialMesh::load(&normal_mapped_quad(
        &folder.0,
        "other.gltf",
        1.0,
        "",
        &[tangent_attribute([0.0, 1.0, 0.0, -1.0])],
    ))
    .unwrap();
    assert_eq!(other.tangents[2], [0.0, 1.0, 0.0, -1.0]);
}

#[test]
fn bad_normal_map_input_is_named() {
    let folder = TempFolder::new("bad-normal-maps");
    let dir = &folder.0;
    // The normal texture is texture 1; with only texture 0 it indexes past the end.
    std::fs::write(dir.join("checker.png"), checker_png()).unwrap();
    let material = r#"{"normalTexture": {"index": 1}}"#;
    let path = quad_gltf(
        dir,
        "past.gltf",
        &QuadLook {
            material,
            textures: r#"[{"source": 0}]"#,
            samplers: "[]",
            images: r#"[{"uri": "checker.png"}]"#,
            second_set: false,
            attributes: &[],
        },
    );
    load_error(&path, &["past.gltf", "materials[0].normalTexture"]);

    let flat = Attribute {
        semantic: "TANGENT",
        kind: "VEC3",
        component: 5126,
        bytes: bytemuck::cast_slice(&[[1f32, 0.0, 0.0]; 4]).to_vec(),
    };
    let path = normal_mapped_quad(dir, "vec3.gltf", 1.0, "", &[flat]);
    load_error(
        &path,
        &[
            "vec3.gltf",
            "mesh 0 primitive 0",
            "TANGENT",
            "Vec3",
            "expected F32 Vec4",
        ],
    );

    let nan = tangent_attribute([f32::NAN, 0.0, 0.0, 1.0]);
    let path = normal_mapped_quad(dir, "nan.gltf", 1.0, "", &[nan]);
    load_error(
        &path,
        &["nan.gltf", "mesh 0 primitive 0", "TANGENT", "non-finite"],
    );

    let path = normal_mapped_quad(dir, "scale.gltf", f32::MAX, "", &[]);
    assert!(MaterialMesh::load(&path).is_ok(), "a large scale is finite");
}
