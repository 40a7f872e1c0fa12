//! Scenes: triangle meshes stored as structure of arrays, their loaders (OBJ, PLY, glTF), and
//! the procedural default scene.

pub mod default_scene;
pub mod mesh;

pub use mesh::{Mesh, SceneError};
