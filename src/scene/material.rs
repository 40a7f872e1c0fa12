//! What surfaces and lights are: materials (diffuse, mirror, glass; metallic and rough,
//! textured, normal-mapped and emissive) and lights (sun, point), as the loaders read them and as the renderer's kernels read them
//! (`glsl/common/shading.glsl`).

use glam::Vec3;

use super::texture::TextureRef;

/// How a surface scatters light ([`Material::kind`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum MaterialKind {
    /// Lambertian: lit by the lights (shadow rays) and the ambient term, and blended by
    /// [`Material::metallic`] with a metal: the reflected ray traced, weighted by the colour
    /// (see [`Material::roughness`]). The diffuse part's albedo is the colour times one minus
    /// the metallic value.
    Diffuse = 0,
    /// A mirror: the reflected ray is traced, weighted by the reflectance colour (see
    /// [`Material::roughness`]).
    Mirror = 1,
    /// A clear dielectric: reflected and refracted rays weighted by the Fresnel reflectance.
    Glass = 2,
}

/// Whether a surface is whole or cut away where its alpha is low ([`Material::alpha_mode`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum AlphaMode {
    /// Whole, whatever its alpha.
    Opaque = 0,
    /// Cut away where its alpha is below [`Material::alpha_cutoff`]: camera, secondary and
    /// shadow rays pass through there, in every structure's traversal.
    Mask = 1,
}

/// A surface's material (`Material` in `glsl/common/shading.glsl`). 224 bytes.
///
/// Make one with [`Material::diffuse`], [`Material::checker`], [`Material::mirror`] or
/// [`Material::glass`], then texture it, make it glow, metallic or bumpy with
/// [`Material::with_base_colour`], [`Material::with_emission`], [`Material::with_metal`] and
/// [`Material::with_normal_map`]; [`crate::render::SceneGpu`] rejects invalid ones
/// ([`Material::validate`]).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Material {
    /// Linear RGB: the diffuse albedo, the mirror's reflectance, or the glass's tint (the
    /// fraction of each channel a refracted ray keeps at each refraction); times the base
    /// colour texture where there is one.
    pub colour: [f32; 3],
    /// When above zero, the colour halves on alternate squares of this size on the xz plane.
    pub checker_scale: f32,
    /// Linear RGB radiance the surface emits towards every ray that hits it (any kind), times
    /// the emissive texture where there is one.
    pub emission: [f32; 3],
    /// A [`MaterialKind`] as u32.
    pub kind: u32,
    /// Glass: the index of refraction inside (outside is air, 1). Unused by other kinds.
    pub ior: f32,
    /// An [`AlphaMode`] as u32.
    pub alpha_mode: u32,
    /// [`AlphaMode::Mask`]: the alpha below which the surface is cut away.
    pub alpha_cutoff: f32,
    /// The surface's alpha (coverage), times the base colour texture's alpha.
    pub alpha: f32,
    /// The texture `colour` is multiplied by (its RGB, sRGB-encoded), or none.
    pub base_colour_texture: TextureRef,
    /// The texture `emission` is multiplied by (its RGB, sRGB-encoded), or none.
    pub emissive_texture: TextureRef,
    /// [`MaterialKind::Diffuse`]: how much of it is metal, 0 to 1, times the blue channel of
    /// `metallic_roughness_texture`. Unused by other kinds.
    pub metallic: f32,
    /// Diffuse (its metallic part) and mirror: how rough the reflection is, 0 (a mirror) to 1,
    /// times the green channel of `metallic_roughness_texture`. With more than one sample per
    /// pixel each sample's reflected direction is the mirror direction moved towards a
    /// cosine-weighted direction about the shading normal by roughness squared (not a
    /// microfacet model: no Fresnel term, no shadowing); with one, the mirror direction.
    pub roughness: f32,
    /// How far the normal texture bends the normal: its tangent-space x and y are scaled by
    /// it (glTF's `normalTexture.scale`).
    pub normal_scale: f32,
    /// How much the occlusion texture darkens, 0 to 1 (glTF's `occlusionTexture.strength`):
    /// the ambient term is scaled by `1 + strength (r - 1)` with `r` the texture's red.
    pub occlusion_strength: f32,
    /// The tangent-space normal texture (linear RGB, each channel `2 c - 1`), or none; read
    /// with the scene's vertex tangents.
    pub normal_texture: TextureRef,
    /// The texture `roughness` (green) and `metallic` (blue) are multiplied by (linear), or
    /// none.
    pub metallic_roughness_texture: TextureRef,
    /// The ambient occlusion texture (linear; its red channel), or none. It darkens only the
    /// ambient term, the light no ray traces; with sky light (`RenderParams::sky_light`) the
    /// sky's occlusion is traced and the texture is not read.
    pub occlusion_texture: TextureRef,
}

impl Material {
    /// A diffuse surface of albedo `albedo`.
    pub fn diffuse(albedo: [f32; 3]) -> Self {
        Self::checker(albedo, 0.0)
    }

    /// A diffuse surface whose albedo halves on alternate squares of side `square` (0: none).
    pub fn checker(albedo: [f32; 3], square: f32) -> Self {
        Material {
            colour: albedo,
            checker_scale: square,
            emission: [0.0; 3],
            kind: MaterialKind::Diffuse as u32,
            ior: 1.0,
            alpha_mode: AlphaMode::Opaque as u32,
            alpha_cutoff: 0.5,
            alpha: 1.0,
            base_colour_texture: TextureRef::NONE,
            emissive_texture: TextureRef::NONE,
            metallic: 0.0,
            roughness: 0.0,
            normal_scale: 1.0,
            occlusion_strength: 1.0,
            normal_texture: TextureRef::NONE,
            metallic_roughness_texture: TextureRef::NONE,
            occlusion_texture: TextureRef::NONE,
        }
    }

    /// A mirror reflecting the fraction `reflectance` of each channel.
    pub fn mirror(reflectance: [f32; 3]) -> Self {
        Material {
            kind: MaterialKind::Mirror as u32,
            ..Self::diffuse(reflectance)
        }
    }

    /// Glass of index of refraction `ior`, keeping the fraction `tint` of each channel at every
    /// refraction (`[1.0; 3]`: clear).
    pub fn glass(ior: f32, tint: [f32; 3]) -> Self {
        Material {
            kind: MaterialKind::Glass as u32,
            ior,
            ..Self::diffuse(tint)
        }
    }

    /// This material with its colour multiplied by `texture`.
    pub fn with_base_colour(self, texture: TextureRef) -> Self {
        Material {
            base_colour_texture: texture,
            ..self
        }
    }

    /// This material emitting `radiance`, times `texture` where it is some.
    pub fn with_emission(self, radiance: [f32; 3], texture: TextureRef) -> Self {
        Material {
            emission: radiance,
            emissive_texture: texture,
            ..self
        }
    }

    /// This material `metallic` metal (0 to 1) of `roughness` (0 to 1), both times `texture`
    /// where it is some (blue: metallic, green: roughness).
    pub fn with_metal(self, metallic: f32, roughness: f32, texture: TextureRef) -> Self {
        Material {
            metallic,
            roughness,
            metallic_roughness_texture: texture,
            ..self
        }
    }

    /// This material with its normals bent by the tangent-space normal texture `texture`,
    /// scaled by `scale` (none: flat).
    pub fn with_normal_map(self, texture: TextureRef, scale: f32) -> Self {
        Material {
            normal_texture: texture,
            normal_scale: scale,
            ..self
        }
    }

    /// This material with its ambient term darkened by the red channel of `texture`, by
    /// `strength` (0 to 1; none: no occlusion).
    pub fn with_occlusion(self, texture: TextureRef, strength: f32) -> Self {
        Material {
            occlusion_texture: texture,
            occlusion_strength: strength,
            ..self
        }
    }

    /// This material cut away where its alpha (times the base colour texture's) is below
    /// `cutoff` (glTF's `alphaMode` `MASK`): rays of every kind pass through there.
    pub fn with_cutout(self, alpha: f32, cutoff: f32) -> Self {
        Material {
            alpha_mode: AlphaMode::Mask as u32,
            alpha,
            alpha_cutoff: cutoff,
            ..self
        }
    }

    /// Whether it cuts parts of its surface away.
    pub fn cuts_out(&self) -> bool {
        self.alpha_mode == AlphaMode::Mask as u32
    }

    /// The kind, or `None` for an unknown value.
    pub fn kind(&self) -> Option<MaterialKind> {
        match self.kind {
            0 => Some(MaterialKind::Diffuse),
            1 => Some(MaterialKind::Mirror),
            2 => Some(MaterialKind::Glass),
            _ => None,
        }
    }

    /// The textures it reads, named as errors name them.
    pub fn textures(&self) -> [(&'static str, TextureRef); 5] {
        [
            ("base colour texture", self.base_colour_texture),
            ("emissive texture", self.emissive_texture),
            ("normal texture", self.normal_texture),
            (
                "metallic-roughness texture",
                self.metallic_roughness_texture,
            ),
            ("occlusion texture", self.occlusion_texture),
        ]
    }

    /// This material with none of its textures: its factors alone.
    pub fn untextured(self) -> Self {
        self.with_base_colour(TextureRef::NONE)
            .with_emission(self.emission, TextureRef::NONE)
            .with_metal(self.metallic, self.roughness, TextureRef::NONE)
            .with_normal_map(TextureRef::NONE, self.normal_scale)
            .with_occlusion(TextureRef::NONE, self.occlusion_strength)
    }

    /// Errors unless the colour and the emission are finite and non-negative, the checker
    /// scale finite and non-negative, the metallic and roughness values and the occlusion
    /// strength in [0, 1], the normal scale finite, the kind known, a glass's index of
    /// refraction finite and positive, and each texture reference
    /// [valid](TextureRef::validate) (whether its texture exists is the scene's to check).
    pub fn validate(&self) -> std::result::Result<(), String> {
        if self.colour.iter().any(|c| !c.is_finite() || *c < 0.0) {
            return Err(format!(
                "colour {:?} is not finite and non-negative",
                self.colour
            ));
        }
        if self.emission.iter().any(|c| !c.is_finite() || *c < 0.0) {
            return Err(format!(
                "emission {:?} is not finite and non-negative",
                self.emission
            ));
        }
        if !self.checker_scale.is_finite() || self.checker_scale < 0.0 {
            return Err(format!(
                "checker scale {} is not finite and non-negative",
                self.checker_scale
            ));
        }
        if !((0.0..=1.0).contains(&self.metallic) && (0.0..=1.0).contains(&self.roughness)) {
            return Err(format!(
                "metallic {} and roughness {} must lie in [0, 1]",
                self.metallic, self.roughness
            ));
        }
        if !self.normal_scale.is_finite() {
            return Err(format!("normal scale {} is not finite", self.normal_scale));
        }
        if !(0.0..=1.0).contains(&self.occlusion_strength) {
            return Err(format!(
                "occlusion strength {} must lie in [0, 1]",
                self.occlusion_strength
            ));
        }
        for (name, texture) in self.textures() {
            texture.validate().map_err(|e| format!("{name}: {e}"))?;
        }
        if self.alpha_mode > AlphaMode::Mask as u32
            || !(self.alpha.is_finite() && self.alpha_cutoff.is_finite())
        {
            return Err(format!(
                "alpha mode {}, alpha {} and cutoff {}: a known mode and finite values",
                self.alpha_mode, self.alpha, self.alpha_cutoff
            ));
        }
        match self.kind() {
            None => Err(format!("unknown material kind {}", self.kind)),
            Some(MaterialKind::Glass) if !(self.ior.is_finite() && self.ior > 0.0) => Err(format!(
                "index of refraction {} is not finite and positive",
                self.ior
            )),
            Some(_) => Ok(()),
        }
    }
}

/// A light.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Light {
    /// Parallel light travelling along `direction`, e.g. the sun.
    Directional {
        /// Direction the light travels (need not be normalised).
        direction: Vec3,
        /// Irradiance (linear RGB).
        intensity: Vec3,
    },
    /// Light from a point, falling off with the square of the distance.
    Point {
        /// Position.
        position: Vec3,
        /// Intensity (linear RGB): irradiance at distance 1.
        intensity: Vec3,
    },
}

/// A light as the GPU reads it (`Light` in `glsl/common/shading.glsl`). 32 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct GpuLight {
    /// Direction travelled (directional) or position (point).
    pub vector: [f32; 3],
    /// 0: directional, 1: point.
    pub kind: u32,
    /// Irradiance or intensity.
    pub intensity: [f32; 3],
    /// Padding.
    pub pad: f32,
}

impl From<Light> for GpuLight {
    fn from(light: Light) -> Self {
        let (vector, kind, intensity) = match light {
            Light::Directional {
                direction,
                intensity,
            } => (direction, 0, intensity),
            Light::Point {
                position,
                intensity,
            } => (position, 1, intensity),
        };
        GpuLight {
            vector: vector.to_array(),
            kind,
            intensity: intensity.to_array(),
            pad: 0.0,
        }
    }
}
