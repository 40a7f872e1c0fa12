//! Headless batch use: load a mesh, build every structure canopy has over it on the GPU, check
//! and describe each tree, and render one image through every structure rays can be traced
//! through.
//!
//! `cargo run --release --example batch -- [MESH] [OUT_FOLDER]` (defaults:
//! `tests/data/meshes/torus.obj`, `target/batch`).

use canopy::accel::{
    BuildParams, HostMesh, Structure, StructureKind, StructureSize, submit_until_complete,
};
use canopy::export::write_png_atomically;
use canopy::render::FrameSource;
use canopy::render::presets::{MeshLook, Subject};
use canopy::scene::MaterialMesh;
use canopy::sequence::{Flow, FrameSequence, SequenceConfig};
use canopy::vk::{Context, ContextOptions, Validation};
use std::error::Error;
use std::path::PathBuf;

fn main() -> Result<(), Box<dyn Error>> {
    let mut args = std::env::args().skip(1);
    let mesh = PathBuf::from(args.next().unwrap_or("tests/data/meshes/torus.obj".into()));
    let out = PathBuf::from(args.next().unwrap_or("target/batch".into()));
    std::fs::create_dir_all(&out)?;

    // The validation layer where it is installed: a validation error fails the example.
    let ctx = Context::new(&ContextOptions {
        validation: Validation::IfAvailable,
        ..ContextOptions::default()
    })?;
    let loaded = MaterialMesh::load(&mesh)?;
    let subject = Subject::mesh(&ctx, loaded, &MeshLook::default())?;
    let scene = &subject.scene;
    println!(
        "{}: {} triangles on {}",
        mesh.display(),
        scene.triangle_count,
        ctx.caps().name
    );
    // The scene as staged on the device (fitted, with its ground), to check the trees against.
    let positions: Vec<[f32; 3]> =
        ctx.download(&scene.positions, 0, scene.vertex_count as usize)?;
    let triangles: Vec<[u32; 3]> =
        ctx.download(&scene.triangles, 0, scene.triangle_count as usize)?;

    // The first frame's view: the screen grid is built for it.
    let defaults = SequenceConfig::default();
    let aspect = defaults.width as f32 / defaults.height as f32;
    let view = subject
        .camera(0.0, aspect)
        .view(defaults.width, defaults.height);
    for kind in StructureKind::ALL {
        // Build it once (growing its lists if the mesh needs more) and check it.
        let size = StructureSize {
            triangles: scene.triangle_count,
            vertices: scene.vertex_count,
        };
        let mut structure = kind.create(&ctx, &BuildParams::default(), size, 1)?;
        structure.set_view(&ctx, &view)?;
        let input = scene.input();
        submit_until_complete(&ctx, &mut structure, |rec, s| {
            s.record_build(rec, &input, scene.vertex_count, 0)
        })?;
        let mesh = HostMesh {
            positions: &positions,
            triangles: &triangles,
        };
        let shape = structure.describe(&ctx, 0, mesh)??;
        println!(
            "  {kind:<7} {} nodes, {} leaves, depth {}",
            shape.nodes, shape.leaves, shape.depth
        );
        if !kind.traceable() {
            continue;
        }
        // Render a frame through it.
        let config = SequenceConfig {
            structure: kind,
            ..SequenceConfig::default()
        };
        let (width, height) = (config.width, config.height);
        let mut frames = FrameSequence::new(&ctx, &subject, config)?;
        let path = out.join(format!("{kind}.png"));
        frames.render(&[0], |finished| {
            write_png_atomically(&path, width, height, finished.image.rgba8())?;
            Ok::<_, Box<dyn Error>>(Flow::Continue)
        })?;
        println!("          rendered {}", path.display());
    }
    ctx.check_validation()?;
    Ok(())
}
