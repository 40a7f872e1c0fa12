//! Scenes: triangle meshes stored as structure of arrays, their loaders (OBJ, PLY, glTF),
//! materials and lights, and the procedural default scene.

pub mod animated;
pub mod default_scene;
pub mod e57;
pub mod environment;
pub mod gltf_loader;
mod gltf_source;
pub mod las;
pub mod material;
pub mod mesh;
pub mod obj;
pub mod offset_cloud;
pub mod pcd;
pub mod ply;
pub mod rig;
pub mod scans;
pub mod shapes;
mod tangents;
pub mod texture;

pub use environment::Environment;
pub use gltf_source::AssetAccess;
pub use material::{AlphaMode, GpuLight, Light, Material, MaterialKind};
pub use mesh::{Framing, MaterialMesh, Mesh, Placements, SceneError};
pub use texture::{Texture, TextureRef};
