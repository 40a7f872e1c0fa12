//! One suite over every structure, as Embree's `verify` runs each test over every mode. For
//! each kind of `StructureKind::ALL` a module below runs the same modes:
//! - random soups from one triangle to thousands;
//! - adversarial scenes (identical, flat, nested, huge among tiny, far-apart clusters, a grid
//!   of cubes met edge-on);
//! - degenerate and duplicate triangles ([`degenerate`]);
//! - rays at the edges of the traversal's arithmetic ([`edge_rays`]);
//! - empty input;
//! - every dispatch grid folded past a pretended device limit;
//! - bad parameters, named in the error.
//!
//! The LBVH runs them twice: as built (binary) and collapsed into its 8-wide layout, whose
//! traversal is a kernel of its own.
//!
//! Each mode builds the structure as `canopy render` does (`StructureKind::create`, a screen
//! grid over a camera's view), checks the tree against the mesh with the structure's own
//! checker, and traces closest and any hits against brute force wherever rays go through it.
//! What only one structure has (a tree against its CPU reference builder, SAH quality,
//! overflow and regrowth, the default scene's size) stays in that structure's module.

mod degenerate;
mod edge_rays;

use crate::common::{
    DeviceMesh, Rng, assert_hits_match_brute_force, assert_valid, context, cube_grid,
    folding_context, nested_triangles, random_mesh, random_rays, rays_in_plane_z0, trace,
};
use canopy::accel::bvh::lbvh::BvhLayout;
use canopy::accel::{
    BuildParams, HostMesh, Structure, StructureKind, StructureSize, TreeShape,
    submit_until_complete,
};
use canopy::geom::ray::{MISS, Query, Ray};
use canopy::render::Camera;
use canopy::scene::Mesh;
use canopy::vk::Context;
use glam::Vec3;
use std::fmt;

/// A structure as the suite builds it: its kind, and for the LBVH the layout rays read.
#[derive(Clone, Copy, Debug)]
pub struct Subject {
    kind: StructureKind,
    layout: BvhLayout,
}

impl Subject {
    const fn of(kind: StructureKind) -> Self {
        Self {
            kind,
            layout: BvhLayout::Binary,
        }
    }

    const fn wide(kind: StructureKind) -> Self {
        Self {
            kind,
            layout: BvhLayout::Wide,
        }
    }

    /// The default parameters, with this layout.
    fn params(&self) -> BuildParams {
        let mut params = BuildParams::default();
        params.lbvh.layout = self.layout;
        params
    }
}

impl fmt::Display for Subject {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self.layout {
            BvhLayout::Binary => write!(f, "{}", self.kind),
            BvhLayout::Wide => write!(f, "{} (8-wide)", self.kind),
        }
    }
}

/// The size `create` allocates for to hold `mesh`.
fn size_of(mesh: &Mesh) -> StructureSize {
    StructureSize {
        triangles: mesh.triangle_count() as u32,
        vertices: mesh.vertex_count() as u32,
    }
}

/// A mesh, rays through it, and the camera the screen grid is built for.
pub struct Scene {
    pub mesh: Mesh,
    pub rays: Vec<Ray>,
    pub camera: Camera,
    pub label: String,
}

impl Scene {
    /// `mesh` and `rays`, seen by a camera that sees all of the mesh.
    fn new(label: &str, mesh: Mesh, rays: Vec<Ray>) -> Self {
        let (lo, hi) = mesh.bounds().unwrap_or(([0.0; 3], [0.0; 3]));
        let (lo, hi) = (Vec3::from(lo), Vec3::from(hi));
        let radius = ((hi - lo).length() * 0.5).max(1e-3);
        let camera = Camera::orbit((lo + hi) * 0.5, 2.5 * radius, 30.0, 20.0, 45.0);
        Self {
            mesh,
            rays,
            camera,
            label: label.into(),
        }
    }
}

/// Builds `subject` over the scene's mesh with its parameters, created for `capacity`
/// (a screen grid over the camera's 96x64 view), checks the tree against the mesh with its
/// checker, and, where rays go through the structure, traces the rays (closest and any hit)
/// against brute force. Returns the tree's shape.
fn check(ctx: &Context, subject: Subject, capacity: StructureSize, scene: &Scene) -> TreeShape {
    let kind = subject.kind;
    let (mesh, label) = (&scene.mesh, &scene.label);
    let device = DeviceMesh::new(ctx, mesh);
    let input = device.input();
    let mut structure = kind
        .create(ctx, &subject.params(), capacity, 1)
        .unwrap_or_else(|e| panic!("{subject} {label}: {e}"));
    structure.set_view(ctx, &scene.camera.view(96, 64)).unwrap();
    submit_until_complete(ctx, &mut structure, |rec, s| {
        s.record_build(rec, &input, mesh.vertex_count() as u32, 0)
    })
    .unwrap_or_else(|e| panic!("{subject} {label}: {e}"));
    let host = HostMesh {
        positions: &mesh.positions,
        triangles: &mesh.triangles,
    };
    let shape = structure
        .describe(ctx, 0, host)
        .unwrap()
        .unwrap_or_else(|e| panic!("{subject} {label}: {e}"));
    if kind.traceable() {
        let structure = structure.into_rays().unwrap();
        let traversable = structure.traversable(&input);
        let closest = trace(ctx, traversable.as_ref(), &scene.rays, Query::Closest);
        let any = trace(ctx, traversable.as_ref(), &scene.rays, Query::Any);
        if mesh.triangles.is_empty() {
            let hit = closest.iter().chain(&any).find(|h| h.triangle != MISS);
            assert!(
                hit.is_none(),
                "{subject} {label}: {hit:?} in an empty scene"
            );
        } else {
            let label = format!("{subject} {label}");
            assert_hits_match_brute_force(mesh, &scene.rays, &closest, &any, &label);
        }
    }
    shape
}

/// [`check`] for a structure created for the scene's own size: the tree references
/// something.
fn check_built(ctx: &Context, subject: Subject, scene: &Scene) {
    let shape = check(ctx, subject, size_of(&scene.mesh), scene);
    assert!(shape.references > 0, "{subject} {}: {shape:?}", scene.label);
}

/// [`check_built`] on a context of its own.
fn check_scene(subject: Subject, scene: Scene) {
    let ctx = context();
    check_built(&ctx, subject, &scene);
    assert_valid(&ctx);
}

fn random_soups(subject: Subject) {
    let ctx = context();
    let mut rng = Rng::new(70 + subject.kind as u64);
    for n in [1, 2, 37, 300, 2500] {
        let mesh = random_mesh(&mut rng, n, 2.0, 0.4);
        let rays = random_rays(&mut rng, &mesh, 600);
        check_built(
            &ctx,
            subject,
            &Scene::new(&format!("{n} random triangles"), mesh, rays),
        );
    }
    assert_valid(&ctx);
}

/// Scenes that break naive builders: every triangle identical (every key and box equal), a
/// flat scene with rays lying in its plane, triangles nested in each other (clustering's
/// tallest chain), a huge triangle among tiny ones, two clusters a million units apart, and a
/// grid of cubes with rays along their faces.
fn adversarial_scenes(subject: Subject) {
    let ctx = context();
    let mut rng = Rng::new(80);
    let one = random_mesh(&mut rng, 1, 1.0, 1.0);
    let identical = Mesh {
        positions: one.positions.clone(),
        triangles: vec![[0, 1, 2]; 1500],
        normals: Vec::new(),
    };
    let mut flat = random_mesh(&mut rng, 1500, 5.0, 0.5);
    flat.positions.iter_mut().for_each(|p| p[2] = 0.0);
    let nested = nested_triangles(150);
    let mut huge_among_tiny = random_mesh(&mut rng, 1000, 1.0, 1e-3);
    huge_among_tiny.positions[..3].copy_from_slice(&[
        [-1e4, -1e4, 0.5],
        [1e4, -1e4, 0.5],
        [0.0, 1e4, 0.5],
    ]);
    let mut clusters = random_mesh(&mut rng, 1000, 1.0, 0.05);
    clusters.positions[1500..]
        .iter_mut()
        .for_each(|p| p[0] += 1e6);
    let (cubes, cube_rays) = cube_grid();
    for (mesh, extra, label) in [
        (identical, Vec::new(), "identical triangles"),
        (flat, rays_in_plane_z0(300), "flat"),
        (nested, Vec::new(), "nested triangles"),
        (huge_among_tiny, Vec::new(), "huge among tiny"),
        (clusters, Vec::new(), "two far clusters"),
        (cubes, cube_rays, "cube grid"),
    ] {
        let mut rays = random_rays(&mut rng, &mesh, 600);
        rays.extend(extra);
        check_built(&ctx, subject, &Scene::new(label, mesh, rays));
    }
    assert_valid(&ctx);
}

/// A structure created for a scene builds this frame's empty one: it references nothing, and
/// every ray through it misses. Creating one for nothing at all is refused, by name.
fn empty_input(subject: Subject) {
    let ctx = context();
    let mut rng = Rng::new(90);
    let somewhere = random_mesh(&mut rng, 50, 1.0, 0.5);
    let rays = random_rays(&mut rng, &somewhere, 200);
    let empty = Scene {
        camera: Scene::new("", somewhere, Vec::new()).camera,
        ..Scene::new("empty", Mesh::default(), rays)
    };
    let capacity = StructureSize {
        triangles: 50,
        vertices: 150,
    };
    let shape = check(&ctx, subject, capacity, &empty);
    assert_eq!(shape.references, 0, "{subject} empty: {shape:?}");
    let nothing = subject
        .kind
        .create(&ctx, &subject.params(), size_of(&empty.mesh), 1);
    let error = nothing.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(error.contains("nothing to build"), "{subject}: '{error}'");
    assert_valid(&ctx);
}

/// With at most 64 workgroups allowed per dispatch dimension, every grid of a 20,000-triangle
/// build (and of tracing 5,000 rays) is folded into 2D or 3D where it exceeds the limit, and
/// the results are the same.
fn folded_grids(subject: Subject) {
    let ctx = folding_context();
    let mut rng = Rng::new(100);
    let mesh = random_mesh(&mut rng, 20_000, 3.0, 0.1);
    let rays = random_rays(&mut rng, &mesh, 5_000);
    check_built(&ctx, subject, &Scene::new("folded grids", mesh, rays));
    assert_valid(&ctx);
}

/// Parameters out of range, and the words the error names them by.
fn broken_parameters(subject: Subject) -> (BuildParams, &'static str) {
    let mut params = subject.params();
    let named = match subject.kind {
        StructureKind::Lbvh => {
            params.lbvh.climb_workgroup_size = 0;
            "climb workgroup size"
        }
        StructureKind::KdTree => {
            params.kdtree.small_threshold = 0;
            "kd-tree build parameters"
        }
        // The octree shares the LBVH's Morton codes, whose every width is valid: its
        // parameter out of range is the capacity below.
        StructureKind::Octree => "octree capacity",
        StructureKind::Bih => {
            params.bih.bins = 1;
            "BIH bins"
        }
        StructureKind::Grid => {
            params.grid.tile_size = 0;
            "grid tiles"
        }
        StructureKind::PointKd => {
            params.pointkd.max_leaf = 0;
            "leaf size"
        }
    };
    (params, named)
}

/// Parameters out of range are refused when the structure is created, with an error naming
/// them, and so is a size beyond what the structure's indices can address.
fn bad_parameters(subject: Subject) {
    let kind = subject.kind;
    let ctx = context();
    let size = StructureSize {
        triangles: 1000,
        vertices: 3000,
    };
    let (params, named) = broken_parameters(subject);
    let error = match kind {
        StructureKind::Octree => kind.create(
            &ctx,
            &params,
            StructureSize {
                vertices: 1 << 30,
                ..size
            },
            1,
        ),
        _ => kind.create(&ctx, &params, size, 1),
    }
    .err()
    .unwrap_or_else(|| panic!("{subject}: parameters out of range were accepted"))
    .to_string();
    assert!(
        error.contains(named),
        "{subject}: '{error}' does not name '{named}'"
    );
    assert!(kind.create(&ctx, &subject.params(), size, 1).is_ok());
    assert_valid(&ctx);
}

/// A module per structure, each running every mode above; the list must name every kind of
/// `StructureKind::ALL` in its order (a kind with several layouts once per layout), so a new
/// structure is not left out.
macro_rules! every_structure {
    ($($module:ident: $subject:expr),* $(,)?) => {
        $(mod $module {
            use super::*;
            const SUBJECT: Subject = $subject;

            #[test]
            fn random_soups() {
                super::random_soups(SUBJECT);
            }

            #[test]
            fn adversarial_scenes() {
                super::adversarial_scenes(SUBJECT);
            }

            #[test]
            fn degenerate_and_duplicate_triangles() {
                check_scene(SUBJECT, degenerate::scene());
            }

            #[test]
            fn edge_case_rays() {
                check_scene(SUBJECT, edge_rays::scene());
            }

            #[test]
            fn empty_input() {
                super::empty_input(SUBJECT);
            }

            #[test]
            fn folded_grids() {
                super::folded_grids(SUBJECT);
            }

            #[test]
            fn bad_parameters() {
                super::bad_parameters(SUBJECT);
            }
        })*

        #[test]
        fn the_suite_runs_over_every_structure() {
            let mut named = vec![$($subject.kind.name()),*];
            named.dedup();
            assert_eq!(named, StructureKind::ALL.map(|kind| kind.name()));
        }
    };
}

every_structure! {
    lbvh: Subject::of(StructureKind::Lbvh),
    lbvh_wide: Subject::wide(StructureKind::Lbvh),
    kdtree: Subject::of(StructureKind::KdTree),
    octree: Subject::of(StructureKind::Octree),
    bih: Subject::of(StructureKind::Bih),
    grid: Subject::of(StructureKind::Grid),
    pointkd: Subject::of(StructureKind::PointKd),
}
