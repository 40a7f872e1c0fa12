//! Scenes: triangle meshes stored as structure of arrays, their loaders (OBJ, PLY, glTF), and
//! the procedural default scene.

pub mod default_scene;
pub mod gltf_loader;
pub mod mesh;
pub mod obj;
pub mod ply;
pub mod shapes;

pub use mesh::{Framing, MaterialMesh, Mesh, SceneError};
