//! What a frame sequence renders: a scene's device buffers, how each frame changes them, the
//! camera at a time and the shading ([`FrameSource`]). canopy's own subjects (the default
//! scene, mesh files, glTF animations, vertex-animation sequences:
//! [`presets::Subject`](super::presets::Subject)) are sources, and so is anything an
//! application implements it for.

use super::{Camera, SceneGpu, ShadingParams};
use crate::scene::Placements;
use crate::scene::animated::FrameTime;
use crate::vk::{Recorder, Result};

/// The frames a [`crate::sequence::FrameSequence`] (and so a render job) renders.
///
/// Each frame, the sequence records, into one submission: [`Self::record_frame`] (after a
/// barrier on every earlier submission's work), the structure's build over
/// [`Self::scene`]'s triangles, and the render through [`Self::camera`] with
/// [`Self::shading`]. The scene's sizes (triangles, vertices, lights) are read once, when the
/// sequence is made, and size its structure and renderer; the buffers' contents may change
/// every frame.
pub trait FrameSource {
    /// The scene's device buffers: what every frame builds over, traces and shades.
    fn scene(&self) -> &SceneGpu;

    /// Records into `rec` frame `at`'s changes to the scene's buffers (vertices, normals,
    /// lights; nothing for a scene that does not move), made visible to compute before it
    /// returns (e.g. `barrier_transfer_to_compute` after an upload), as the build reads them
    /// next.
    ///
    /// Frames recorded before may still be running on the GPU: host memory the recording
    /// writes for the GPU to read must be `at.slot`'s own ([`FrameTime::slot`] is below the
    /// sequence's frames in flight, and no frame in flight shares it). Writes into the
    /// command stream ([`Recorder::update_buffer`]) need no slot.
    fn record_frame(&self, rec: &mut Recorder, at: FrameTime) -> Result<()>;

    /// The camera at `time` seconds for an image of `aspect` = width / height.
    fn camera(&self, time: f32, aspect: f32) -> Camera;

    /// The ambient light and the offset of new rays off surfaces (scaled to the scene's size).
    fn shading(&self) -> ShadingParams;

    /// The most frames in flight the source can be recorded for: its slots of host memory
    /// ([`Self::record_frame`]). None (the default): any number. A sequence keeping more
    /// frames in flight is refused when it is made.
    fn max_frames_in_flight(&self) -> Option<usize> {
        None
    }

    /// The name of each instance, by the id the `instance_id` channel holds (`None` for an
    /// instance without a name); none (the default) where the source names none.
    fn instances(&self) -> &[Option<String>] {
        &[]
    }

    /// The meshes the scene's triangles copy out and where each copy goes, for a still scene
    /// that places a mesh more than once ([`crate::scene::MaterialMesh::placements`]):
    /// a sequence may trace it through two levels, building each mesh's tree once. None (the
    /// default): the scene is one mesh.
    fn placements(&self) -> Option<&Placements> {
        None
    }
}
