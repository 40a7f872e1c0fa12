//! The looks `canopy render` and the benchmarks share: a sun and a point light placed around a
//! subject, clay, mirror and glass materials, a checkered ground, and the default scene's
//! buffers and camera.

use super::{Camera, FrameSource, GpuLight, Light, Material, SceneGpu, ShadingParams, Surfaces};
use crate::scene::Texture;
use crate::scene::animated::files::FileStream;
use crate::scene::animated::normals::{self, SurfaceNormals};
use crate::scene::animated::skin::Skinner;
use crate::scene::animated::subdivide::Subdivider;
use crate::scene::animated::subdivision::{LoopSubdivision, MAX_NOISE_HEIGHT, noise_height};
use crate::scene::animated::{AnimatedMesh, Displacement, FrameTime, MeshInput, VertexSource};
use crate::scene::default_scene::{
    DefaultScene, GLASS_MATERIAL, GROUND_MATERIAL, MIRROR_MATERIAL, TORUS_MATERIAL,
};
use crate::scene::{Framing, MaterialMesh, Mesh, Placements, SceneError, shapes};
use crate::vk::{Context, Error, Recorder, Result};
use glam::{Mat4, Quat, Vec3};

/// Centre of the default scene's subject (the torus and the spheres beside it).
pub const DEFAULT_SCENE_CENTRE: Vec3 = Vec3::new(0.0, 0.4, 0.0);
/// Radius of a sphere holding the default scene's torus and spheres in every frame.
pub const DEFAULT_SCENE_RADIUS: f32 = 2.6;

/// How fast the camera circles the default scene, in degrees per second.
pub const DEFAULT_SCENE_ORBIT: f32 = 8.0;

/// Ambient light and shadow-ray offset for a subject of `radius`.
pub fn shading(radius: f32) -> ShadingParams {
    ShadingParams {
        ambient: 0.12,
        surface_offset: radius * 1e-4,
    }
}

/// A sun from above and to the side, and a point light above the subject whose irradiance
/// there is about that of the sun.
pub fn studio_lights(centre: Vec3, radius: f32) -> Vec<Light> {
    vec![
        Light::Directional {
            direction: Vec3::new(-0.4, -1.0, -0.3),
            intensity: Vec3::new(0.85, 0.8, 0.7),
        },
        Light::Point {
            position: centre + Vec3::new(1.5, 2.0, 1.2) * radius,
            intensity: Vec3::splat(2.0 * radius * radius),
        },
    ]
}

/// A warm clay colour for the subject.
pub fn clay() -> Material {
    Material::diffuse([0.8, 0.55, 0.3])
}

/// A light grey ground, checkered with squares of side `square`.
pub fn checker_ground(square: f32) -> Material {
    Material::checker([0.75, 0.75, 0.72], square)
}

/// A slightly tinted mirror.
pub fn mirror() -> Material {
    Material::mirror([0.9, 0.9, 0.92])
}

/// Clear glass (index of refraction 1.5) with a faint blue-green tint.
pub fn glass() -> Material {
    Material::glass(1.5, [0.96, 0.99, 0.98])
}

/// The device buffers of the default scene: its topology, clay torus, checkered ground, mirror
/// and glass spheres, and studio lights; the vertices are written every frame by
/// [`DefaultScene::record`].
pub fn default_scene_gpu(ctx: &Context, scene: &DefaultScene) -> Result<SceneGpu> {
    let (topology, triangle_materials) = scene.topology();
    const {
        assert!(
            TORUS_MATERIAL == 0
                && GROUND_MATERIAL == 1
                && MIRROR_MATERIAL == 2
                && GLASS_MATERIAL == 3
        )
    };
    let materials = [clay(), checker_ground(0.5), mirror(), glass()];
    SceneGpu::allocate(
        ctx,
        scene.vertex_count(),
        &topology,
        &Surfaces {
            // Each object has a material of its own: the material is the instance.
            triangle_instances: &triangle_materials,
            ..Surfaces::untextured(&triangle_materials, &materials)
        },
        &default_scene_lights(0.0),
    )
}

/// The names of the default scene's instances, by id: its objects, each of which has the
/// material of the same index.
pub const DEFAULT_SCENE_INSTANCES: [&str; 4] = ["torus", "ground", "mirror sphere", "glass sphere"];

/// Seconds the default scene's point light takes to circle it once.
pub const DEFAULT_SCENE_LIGHT_PERIOD: f32 = 12.0;

/// The default scene's lights at `time` seconds: [`studio_lights`], the point light circling
/// the scene at its height once every [`DEFAULT_SCENE_LIGHT_PERIOD`] seconds, so the shadows
/// and the glass sphere's caustic move.
pub fn default_scene_lights(time: f32) -> Vec<Light> {
    let mut lights = studio_lights(DEFAULT_SCENE_CENTRE, DEFAULT_SCENE_RADIUS);
    if let Some(Light::Point { position, .. }) = lights.get_mut(1) {
        let offset = *position - DEFAULT_SCENE_CENTRE;
        let turn = time / DEFAULT_SCENE_LIGHT_PERIOD * std::f32::consts::TAU;
        let (sin, cos) = turn.sin_cos();
        let turned = Vec3::new(
            offset.x * cos - offset.z * sin,
            offset.y,
            offset.x * sin + offset.z * cos,
        );
        *position = DEFAULT_SCENE_CENTRE + turned;
    }
    lights
}

/// A camera orbiting a subject of `radius` around `centre` over `time` seconds, far enough for
/// the subject to fill about the frame's height at `aspect` = width / height.
pub fn orbit_camera(
    centre: Vec3,
    radius: f32,
    time: f32,
    aspect: f32,
    degrees_per_second: f32,
) -> Camera {
    let fov: f32 = 40.0;
    let distance = 1.1 * radius / ((fov.to_radians() * 0.5).tan() * aspect.min(1.0));
    Camera::orbit(
        centre,
        distance,
        35.0 + degrees_per_second * time,
        28.0,
        fov,
    )
}

/// How far below a mesh file's lowest point its ground lies, as a fraction of the mesh's
/// radius: ten times the shadow rays' offset ([`shading`]), far enough that no camera or shadow
/// ray confuses the two, too little to see the mesh float.
pub const GROUND_GAP: f32 = 1e-3;

/// How fast the camera circles a mesh file's scene, in degrees per second.
pub const MESH_SCENE_ORBIT: f32 = 15.0;

/// Which normals shade a mesh file's surface.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MeshShading {
    /// The file's vertex normals where it has them, else flat.
    #[default]
    Auto,
    /// Each triangle's own normal: hard edges everywhere (the file's normals are ignored).
    Flat,
    /// Area-weighted averages of the adjacent triangles' normals at every vertex (the file's
    /// normals are ignored).
    Smooth,
}

/// How a mesh file is stood up and shaded (`canopy render --up --shading`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MeshLook {
    /// The file's direction that points up (turned to +y, canopy's and glTF's up): `Vec3::Z`
    /// for a z-up model.
    pub up: Vec3,
    /// Which normals shade it.
    pub shading: MeshShading,
}

impl Default for MeshLook {
    /// Up is +y, the file's normals where it has them.
    fn default() -> Self {
        Self {
            up: Vec3::Y,
            shading: MeshShading::Auto,
        }
    }
}

/// A mesh file's scene on the host: the mesh over a checkered ground square under the studio
/// lights, with the file's materials (glTF), or clay for a file without any, and the ground's
/// material after them.
///
/// The mesh is first [fitted into the unit sphere](crate::scene::Mesh::fit_unit_sphere)
/// (centred on the origin, half-diagonal 1), so a model far from the origin or at any scale
/// renders as it would at the origin in units of its size; before that it is turned so that
/// [`MeshLook::up`] points up. The ground lies [`GROUND_GAP`] below the mesh's lowest point,
/// so a flat-bottomed mesh never coincides with it.
pub struct MeshStage {
    /// The fitted mesh and, after its triangles, the ground's two.
    pub mesh: Mesh,
    /// Index into `materials` of each triangle.
    pub triangle_materials: Vec<u32>,
    /// Index into `instances` of each triangle.
    pub triangle_instances: Vec<u32>,
    /// The file's instances ([`MaterialMesh::instances`]; one without a name for a sequence),
    /// then the ground, named [`GROUND_INSTANCE`].
    pub instances: Vec<Option<String>>,
    /// The file's materials (or clay), then the ground's.
    pub materials: Vec<Material>,
    /// Texture coordinates of each vertex (the ground's zero); empty without textures.
    pub texcoords: Vec<[f32; 4]>,
    /// The textures the materials read.
    pub textures: Vec<Texture>,
    /// Tangent of each vertex (the ground's zero); empty without normal textures.
    pub tangents: Vec<[f32; 4]>,
    /// Colour of each vertex (the ground's white); empty without vertex colours.
    pub colours: Vec<[f32; 4]>,
    /// The studio lights around the mesh.
    pub lights: Vec<Light>,
    /// The meshes `mesh` copies out and where (the file's, then the ground once), when the
    /// file places a mesh more than once ([`MaterialMesh::placements`]).
    pub placements: Option<Box<Placements>>,
    /// Centre of the fitted mesh's bounding box.
    pub centre: Vec3,
    /// Half the diagonal of the fitted mesh's bounding box (1, or less for a flat mesh).
    pub radius: f32,
}

impl MeshStage {
    /// The stage for `loaded`, stood up and shaded as `look` says.
    pub fn new(loaded: MaterialMesh, look: &MeshLook) -> Self {
        let up = look.up.normalize_or(Vec3::Y);
        let mut loaded = loaded;
        if up != Vec3::Y {
            loaded.transform(Mat4::from_quat(Quat::from_rotation_arc(up, Vec3::Y)));
        }
        let framing = loaded.mesh.fit_unit_sphere();
        if let Some(placements) = &mut loaded.placements {
            placements.transform(
                Mat4::from_scale(Vec3::splat(framing.scale as f32))
                    * Mat4::from_translation(-framing.centre.as_vec3()),
            );
        }
        let (lo, hi) = loaded.mesh.bounds().unwrap_or_default();
        let has_normals = loaded.mesh.normals.len() == loaded.mesh.positions.len();
        match look.shading {
            MeshShading::Auto if has_normals => {}
            MeshShading::Auto | MeshShading::Flat => loaded.mesh.flatten_normals(),
            MeshShading::Smooth => loaded.mesh.compute_vertex_normals(),
        }
        Self::assemble(loaded, (Vec3::from(lo), Vec3::from(hi)))
    }

    /// The stage's buffers on the device.
    pub fn upload(&self, ctx: &Context) -> Result<SceneGpu> {
        SceneGpu::from_mesh(ctx, &self.mesh, &self.surfaces(), &self.lights)
    }

    /// What the stage's surfaces are made of.
    pub fn surfaces(&self) -> Surfaces<'_> {
        Surfaces {
            triangle_materials: &self.triangle_materials,
            triangle_instances: &self.triangle_instances,
            materials: &self.materials,
            texcoords: &self.texcoords,
            textures: &self.textures,
            tangents: &self.tangents,
            colours: &self.colours,
        }
    }

    /// The stage of a mesh already placed and shaded, whose frames all lie in the box
    /// `(lo, hi)`: clay for a mesh without materials, the ground below the box.
    fn assemble(loaded: MaterialMesh, (lo, hi): (Vec3, Vec3)) -> Self {
        let mut mesh = loaded.mesh;
        let centre = (lo + hi) * 0.5;
        let radius = ((hi - lo).length() * 0.5).max(f32::MIN_POSITIVE);
        let mut materials = loaded.materials;
        let mut triangle_materials = loaded.triangle_materials;
        if materials.is_empty() {
            materials.push(clay());
            triangle_materials = vec![0; mesh.triangle_count()];
        }
        let ground_material = materials.len() as u32;
        materials.push(checker_ground(radius * 0.25));
        let mut triangle_instances = loaded.triangle_instances;
        triangle_instances.resize(mesh.triangle_count(), 0);
        let mut instances = loaded.instances;
        if instances.is_empty() {
            instances.push(None);
        }
        triangle_instances.extend([instances.len() as u32; 2]);
        instances.push(Some(GROUND_INSTANCE.into()));
        let ground_height = lo.y - GROUND_GAP * radius;
        let ground = shapes::ground_square([centre.x, ground_height, centre.z], radius * 3.0);
        let vertices = mesh.positions.len() + ground.positions.len();
        let extended = |mut values: Vec<[f32; 4]>, fill: [f32; 4]| {
            if !values.is_empty() {
                values.resize(vertices, fill);
            }
            values
        };
        let texcoords = extended(loaded.texcoords, [0.0; 4]);
        let tangents = extended(loaded.tangents, [0.0; 4]);
        let colours = extended(loaded.colours, [1.0; 4]);
        mesh.append(&ground);
        triangle_materials.extend([ground_material; 2]);
        let placements = loaded.placements.map(|mut placements| {
            placements
                .copies
                .push((placements.meshes.len() as u32, Mat4::IDENTITY));
            placements.meshes.push(ground);
            placements
        });
        Self {
            mesh,
            triangle_materials,
            triangle_instances,
            instances,
            materials,
            texcoords,
            textures: loaded.textures,
            tangents,
            colours,
            lights: studio_lights(centre, radius),
            placements,
            centre,
            radius,
        }
    }
}

/// The name of the ground's instance on a [`MeshStage`] (its id is the one after the file's).
pub const GROUND_INSTANCE: &str = "ground";

/// How a subject moves from frame to frame.
pub enum Motion {
    /// A mesh that does not move.
    Still,
    /// The default scene: its deforming torus and circling point light.
    DefaultScene(DefaultScene),
    /// A mesh file's animation, made on the GPU every frame.
    Mesh(Box<AnimatedMesh>),
}

/// How an animated mesh file is refined every frame (`canopy render --subdivide --displace`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Refinement {
    /// Levels of Loop subdivision, 0 to
    /// [`MAX_LEVELS`](crate::scene::animated::subdivision::MAX_LEVELS).
    pub levels: u32,
    /// Displacement along the normals by procedural noise, as a fraction of the mesh's radius;
    /// none for a smooth surface.
    pub displace: Option<f32>,
}

/// Features per unit of the fitted mesh's radius of the displacement's noise.
pub const DISPLACEMENT_FREQUENCY: f32 = 6.0;

/// Changes to every frame's camera (`canopy render --camera-eye --camera-target --fov`), in
/// the subject's space (a mesh file's is fitted into the unit sphere).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CameraOverrides {
    /// The eye.
    pub eye: Option<Vec3>,
    /// The point looked at.
    pub target: Option<Vec3>,
    /// The vertical field of view in degrees.
    pub fov_degrees: Option<f32>,
}

impl CameraOverrides {
    /// `camera` with the overridden parts replaced.
    pub fn apply(&self, mut camera: Camera) -> Camera {
        camera.position = self.eye.unwrap_or(camera.position);
        camera.target = self.target.unwrap_or(camera.target);
        camera.fov_y_degrees = self.fov_degrees.unwrap_or(camera.fov_y_degrees);
        camera
    }
}

/// What a renderer shows: a scene's device buffers, and how each frame updates and views
/// them (`canopy render`, `canopy bench render`): canopy's own [`FrameSource`].
pub struct Subject {
    /// The device buffers.
    pub scene: SceneGpu,
    /// How it moves.
    pub motion: Motion,
    /// Centre of the subject (of all its frames).
    pub centre: Vec3,
    /// Radius of a sphere around the subject (in all its frames).
    pub radius: f32,
    /// The glTF camera the frames are seen through (its node and vertical field of view in
    /// radians), instead of the orbit.
    pub gltf_camera: Option<(usize, f32)>,
    /// Changes to every frame's camera.
    pub camera_overrides: CameraOverrides,
    /// The name of each instance, by the id the `instance_id` channel holds.
    pub instances: Vec<Option<String>>,
    /// The meshes a still mesh file's scene copies out and where, when it places a mesh more
    /// than once ([`MeshStage::placements`]).
    pub placements: Option<Box<Placements>>,
}

impl Subject {
    /// The animated default scene with about `triangles` triangles in its torus.
    pub fn default_scene(ctx: &Context, triangles: u64) -> Result<Self> {
        let scene = DefaultScene::new(ctx, triangles)?;
        Ok(Self {
            scene: default_scene_gpu(ctx, &scene)?,
            motion: Motion::DefaultScene(scene),
            centre: DEFAULT_SCENE_CENTRE,
            radius: DEFAULT_SCENE_RADIUS,
            gltf_camera: None,
            camera_overrides: CameraOverrides::default(),
            instances: DEFAULT_SCENE_INSTANCES.map(|n| Some(n.into())).to_vec(),
            placements: None,
        })
    }

    /// A mesh file's [`MeshStage`] on the device.
    pub fn mesh(ctx: &Context, loaded: MaterialMesh, look: &MeshLook) -> Result<Self> {
        let stage = MeshStage::new(loaded, look);
        let scene = stage.upload(ctx)?;
        Ok(Self {
            scene,
            motion: Motion::Still,
            centre: stage.centre,
            radius: stage.radius,
            gltf_camera: None,
            camera_overrides: CameraOverrides::default(),
            instances: stage.instances,
            placements: stage.placements,
        })
    }

    /// An animated mesh file on a stage like [`MeshStage`]'s, framed over all its frames
    /// (`input`'s bounds: the mesh is placed so that the box of every frame fits the unit
    /// sphere), its vertices made on the GPU every frame: posed, or streamed from its files,
    /// then refined as `refinement` says. `slots` is the most frames in flight a sequence may
    /// keep of it (the sequence's staging buffers: [`FrameSource::max_frames_in_flight`]).
    pub fn animated(
        ctx: &Context,
        input: MeshInput,
        look: &MeshLook,
        refinement: Refinement,
        slots: usize,
    ) -> Result<Self> {
        let scene_error = |e: SceneError| Error::InvalidInput(e.to_string());
        let up = Mat4::from_quat(Quat::from_rotation_arc(
            look.up.normalize_or(Vec3::Y),
            Vec3::Y,
        ));
        let (lo, hi) = input.bounds(up).map_err(scene_error)?;
        let framing = Framing::of_box(lo, hi);
        let (centre, scale) = (framing.centre.as_vec3(), framing.scale as f32);
        let root = Mat4::from_scale(Vec3::splat(scale)) * Mat4::from_translation(-centre) * up;
        let (lo, hi) = ((lo - centre) * scale, (hi - centre) * scale);

        let control: Vec<[f32; 3]> = input
            .first_positions()
            .iter()
            .map(|&p| root.transform_point3(Vec3::from(p)).to_array())
            .collect();
        let subdivision =
            LoopSubdivision::new(input.triangles(), control.len() as u32, refinement.levels)
                .map_err(|e| Error::InvalidInput(format!("subdividing the mesh: {e}")))?;
        let refined = subdivision.apply(&control);
        let triangles = subdivision.triangles.clone();
        let bare = MaterialMesh::default();
        let dressed = input.dressed().unwrap_or(&bare);
        let shift = 2 * refinement.levels;
        let smoothed = |values: &Vec<[f32; 4]>| {
            if values.is_empty() {
                Vec::new()
            } else {
                subdivision.apply(values)
            }
        };
        // Each refined triangle keeps what its control triangle had.
        let refined_triangles = |values: &Vec<u32>| -> Vec<u32> {
            (0..subdivision.triangles.len())
                .filter(|_| !values.is_empty())
                .map(|t| values[t >> shift])
                .collect()
        };
        let mut loaded = MaterialMesh {
            mesh: Mesh {
                positions: refined.clone(),
                normals: vec![[0.0; 3]; refined.len()],
                triangles,
            },
            triangle_materials: refined_triangles(&dressed.triangle_materials),
            materials: dressed.materials.clone(),
            triangle_instances: refined_triangles(&dressed.triangle_instances),
            instances: dressed.instances.clone(),
            // Smoothed like the positions where the levels refine them: a seam's vertices are
            // split in the file, so each side keeps its own coordinates.
            texcoords: smoothed(&dressed.texcoords),
            textures: dressed.textures.clone(),
            tangents: Vec::new(),
            colours: smoothed(&dressed.colours),
            placements: None,
        };
        // The vertices move on the GPU; their tangents would not.
        loaded.drop_normal_textures();
        let surface = SurfaceNormals::new(ctx, &refined, &loaded.mesh.triangles)?;
        let smooth = look.shading != MeshShading::Flat;
        if smooth {
            let rings = normals::rings(&refined, &loaded.mesh.triangles);
            loaded.mesh.normals =
                normals::ring_normals(&refined, &loaded.mesh.triangles, (&rings.0, &rings.1));
        }
        let displacement = match refinement.displace {
            Some(amount) => {
                let heights: Vec<f32> = refined
                    .iter()
                    .map(|&p| noise_height(p, DISPLACEMENT_FREQUENCY))
                    .collect();
                Some(Displacement {
                    heights: ctx.create_buffer_with("displacement heights", &heights)?,
                    amount,
                })
            }
            None => None,
        };
        // The ground lies below the lowest point of every frame, displaced as far as it goes.
        let sink = refinement
            .displace
            .map_or(0.0, |a| a.abs() * MAX_NOISE_HEIGHT);
        let stage = MeshStage::assemble(loaded, (lo - Vec3::Y * sink, hi));
        let scene = stage.upload(ctx)?;
        let subdivider = Subdivider::new(ctx, &subdivision)?;
        let source = match input {
            MeshInput::Still(_) => {
                VertexSource::Still(ctx.create_buffer_with("still control positions", &control)?)
            }
            MeshInput::Rig(rig, at) => {
                VertexSource::Skinned(Box::new(Skinner::new(ctx, *rig, at, root)?))
            }
            MeshInput::Files {
                files,
                first,
                looping,
            } => VertexSource::Files(FileStream::new(ctx, files, &first, root, looping, slots)?),
        };
        let animated =
            AnimatedMesh::new(ctx, source, Some(subdivider), displacement, surface, smooth)?;
        Ok(Self {
            scene,
            motion: Motion::Mesh(Box::new(animated)),
            centre: stage.centre,
            radius: stage.radius,
            gltf_camera: None,
            camera_overrides: CameraOverrides::default(),
            instances: stage.instances,
            placements: None,
        })
    }
}

impl FrameSource for Subject {
    fn scene(&self) -> &SceneGpu {
        &self.scene
    }

    fn instances(&self) -> &[Option<String>] {
        &self.instances
    }

    fn placements(&self) -> Option<&Placements> {
        self.placements.as_deref()
    }

    /// The default scene's deformation and its lights ([`default_scene_lights`]), a mesh
    /// file's animation; nothing for a still mesh.
    fn record_frame(&self, rec: &mut Recorder, at: FrameTime) -> Result<()> {
        match &self.motion {
            Motion::DefaultScene(animation) => {
                let lights: Vec<GpuLight> = default_scene_lights(at.seconds)
                    .into_iter()
                    .map(GpuLight::from)
                    .collect();
                rec.barrier_compute_to_transfer();
                rec.update_buffer(&self.scene.lights, 0, &lights);
                rec.barrier_transfer_to_compute();
                animation.record(rec, &self.scene.positions, &self.scene.normals, at.seconds)
            }
            Motion::Mesh(animated) => animated.record(
                rec,
                at,
                &self.scene.positions,
                &self.scene.triangles,
                &self.scene.normals,
            ),
            Motion::Still => Ok(()),
        }
    }

    /// Orbiting the default scene at [`DEFAULT_SCENE_ORBIT`], a mesh at [`MESH_SCENE_ORBIT`],
    /// or the glTF camera chosen; then [`Subject::camera_overrides`].
    fn camera(&self, time: f32, aspect: f32) -> Camera {
        let degrees_per_second = match self.motion {
            Motion::DefaultScene(_) => DEFAULT_SCENE_ORBIT,
            _ => MESH_SCENE_ORBIT,
        };
        let camera = match (self.gltf_camera, &self.motion) {
            (Some((node, yfov)), Motion::Mesh(animated)) => match animated.source() {
                VertexSource::Skinned(skinner) => {
                    let (world, _) = skinner.rig().world_transforms(skinner.clip(), time);
                    let placed = skinner.root() * world[node];
                    Camera {
                        position: placed.transform_point3(Vec3::ZERO),
                        target: placed.transform_point3(Vec3::NEG_Z),
                        up: placed.transform_vector3(Vec3::Y),
                        fov_y_degrees: yfov.to_degrees(),
                    }
                }
                _ => orbit_camera(self.centre, self.radius, time, aspect, degrees_per_second),
            },
            _ => orbit_camera(self.centre, self.radius, time, aspect, degrees_per_second),
        };
        self.camera_overrides.apply(camera)
    }

    /// [`shading`] for the subject's radius.
    fn shading(&self) -> ShadingParams {
        shading(self.radius)
    }

    /// A sequence streamed from files: its staging buffers.
    fn max_frames_in_flight(&self) -> Option<usize> {
        match &self.motion {
            Motion::Mesh(animated) => match animated.source() {
                VertexSource::Files(stream) => Some(stream.slots()),
                _ => None,
            },
            _ => None,
        }
    }
}
