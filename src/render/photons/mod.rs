//! GPU photon mapping of caustics (seed 000 §5.3; Jensen 2001), rebuilt every frame: photons
//! traced from the scene's lights through any [`Traversable`] structure, the caustic photons
//! stored, their point kd-tree built and their starting radii precomputed
//! ([`crate::accel::pointkd`]), then radiance gathered at the renderer's diffuse hits by the
//! k nearest photons.
//!
//! [`PhotonMap::record_photons`], each step a dispatch (`glsl/photons/trace.comp`):
//! 1. **photons: emit**: the bounds of every mirror and glass material and the sphere about
//!    their centre reaching every vertex (the projection map: photons are emitted only towards
//!    specular objects' bounding spheres), each (light,
//!    target) pair's power towards its sphere, the photons split between the pairs in
//!    proportion (each carrying its pair's power over its photon count, in the renderer's
//!    units: a point light's intensity times solid angle, a directional light's irradiance
//!    times area), and each photon's ray, uniform over the cone or the disc.
//! 2. **photons: bounce b**, for b in `0..=bounces`: the photons' closest hits ([`Tracer`]), then
//!    each one stored at a diffuse surface after at least one specular event, reflected by
//!    mirrors, reflected or refracted by glass by a random draw against the Fresnel reflectance
//!    (total internal reflection reflecting), or ended by a miss.
//! 3. **photons: tree**: the point kd-tree over the stored photons, counted on the device, and
//!    PRECOMPUTERADIUS for `k`.
//!
//! [`PhotonMap::record_gather`] (**photons: gather**): a k-nearest search bounded by
//! [`PhotonParams::max_radius`] (the nearest-first walk, started from that bound or, with
//! [`PhotonParams::estimated_radii`], from ESTIMATERADIUS) gives each gather point its radius;
//! then `glsl/photons/estimate.comp` adds the cone-filtered power of the photons within it.
//!
//! Random numbers are hashes of the frame's seed, the photon and the draw
//! (`glsl/common/random.glsl`), so a frame's photons are reproducible and [`cpu`] traces the
//! same ones.

pub mod cpu;

use super::{BounceCounters, RayList, RayPayload, SceneGpu, SceneRefs};
use crate::accel::pointkd::PointKdParams;
use crate::accel::pointkd::build::PointKdBuilder;
use crate::accel::pointkd::knn::{Knn, KnnFound, KnnQueries, PointKdTreeGpu};
use crate::accel::pointkd::radius::{RadiusEstimator, RadiusParams};
use crate::accel::{Traversable, TraversalBatch};
use crate::geom::ray::Query;
use crate::prims::WORKGROUP_SIZE;
use crate::shaders;
use crate::trace::Tracer;
use crate::vk::{Buffer, Context, Count, Error, MemoryKind, Pipeline, Recorder, Result, Slice};
use std::sync::Arc;

/// The most (light, target) pairs photons are split between (`MAX_EMITTERS`).
pub const MAX_EMITTERS: u32 = 64;
/// The most materials a photon map's scene may have (each may be a target).
pub const MAX_MATERIALS: u32 = 256;
/// The most specular bounces a photon makes.
pub const MAX_PHOTON_BOUNCES: u32 = 16;

/// How caustics are made.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PhotonParams {
    /// Photons emitted per frame.
    pub photons: u32,
    /// The most specular bounces of a photon (the champagne glass needs 6).
    pub bounces: u32,
    /// Photons per radiance estimate.
    pub k: u32,
    /// The largest gather radius, in world units: where fewer than `k` photons lie within it,
    /// those are used (Jensen's maximum search radius).
    pub max_radius: f32,
    /// Seed of the photons' random numbers (each frame adds its index).
    pub seed: u32,
    /// Start each gather's search from its Alg. 7 estimate (node queries precomputed after
    /// every tree build, as seed 000 does), else from `max_radius` (the default). The answers
    /// are the same. The estimates kept Alg. 6's histogram passes small where photons crowd;
    /// the nearest-first walk keeps itself small (once it holds k photons their distance
    /// bounds it), so they now cost more than they save: a 1080p caustics frame of the
    /// default scene takes 12.0 ms with them and 10.4 ms without on an H200.
    pub estimated_radii: bool,
}

impl PhotonParams {
    /// 200,000 photons, 6 bounces, k = 50, the seed 1, and `max_radius` (searches starting
    /// from it).
    pub fn with_max_radius(max_radius: f32) -> Self {
        Self {
            photons: 200_000,
            bounces: 6,
            k: 50,
            max_radius,
            seed: 1,
            estimated_radii: false,
        }
    }
}

/// The points a frame gathers caustics at: one per diffuse hit of its camera rays.
#[derive(Clone, Copy, Debug)]
pub struct GatherPoints<'a> {
    /// Where each gathers.
    pub positions: Slice<'a, [f32; 3]>,
    /// The weight each adds with, and its pixel.
    pub payloads: Slice<'a, RayPayload>,
    /// How many (counted on the device).
    pub count: Count<'a>,
}

/// Scratch of a gather: a radius and a [`KnnFound`] per gather point.
#[derive(Clone, Copy, Debug)]
pub struct GatherScratch<'a> {
    /// Radii.
    pub radii: Slice<'a, f32>,
    /// Neighbours found.
    pub found: Slice<'a, KnnFound>,
}

/// Push constants of every step of `glsl/photons/trace.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct PhotonPush {
    /// The scene's buffers.
    pub scene: SceneRefs,
    /// Lights.
    pub lights_address: u64,
    /// [`PhotonCounters`], emitters, targets.
    pub state_address: u64,
    /// This bounce's [`BounceCounters`].
    pub counters_address: u64,
    /// This bounce's photon list.
    pub list_address: u64,
    /// The next bounce's photon list.
    pub next_list_address: u64,
    /// Out: stored photons' positions.
    pub stored_address: u64,
    /// Out: stored photons' powers.
    pub powers_address: u64,
    /// Triangles.
    pub triangle_count: u32,
    /// Lights.
    pub light_count: u32,
    /// Materials.
    pub material_count: u32,
    /// Photons per frame.
    pub photon_count: u32,
    /// The bounce.
    pub bounce: u32,
    /// 1: scattered photons go on.
    pub spawn: u32,
    /// The frame's seed.
    pub seed: u32,
    /// Offset of new ray origins off surfaces.
    pub surface_offset: f32,
}

/// Push constants of `glsl/photons/estimate.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct EstimatePush {
    /// The photon tree's nodes.
    pub nodes_address: u64,
    /// Its entries.
    pub entries_address: u64,
    /// Stored photons' powers.
    pub powers_address: u64,
    /// Gather positions.
    pub positions_address: u64,
    /// Gather payloads.
    pub payloads_address: u64,
    /// [`KnnFound`] per gather.
    pub found_address: u64,
    /// Gathers.
    pub count_address: u64,
    /// The pixels' radiance sums.
    pub radiance_address: u64,
    /// The most gathers.
    pub capacity: u32,
    /// Padding.
    pub pad: u32,
}

/// A frame's photon counts (`PhotonCounters` in `glsl/photons/photons.glsl`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct PhotonCounters {
    /// (light, target) pairs with photons.
    pub emitters: u32,
    /// Photons emitted.
    pub emitted: u32,
    /// Photons stored.
    pub stored: u32,
    /// Padding.
    pub pad: u32,
}

/// Photons from one light towards one target (`PhotonEmitter`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct PhotonEmitter {
    /// The target's bounding sphere's centre.
    pub centre: [f32; 3],
    /// Its radius.
    pub radius: f32,
    /// Each photon's power.
    pub power: [f32; 3],
    /// The light.
    pub light: u32,
    /// Its first photon.
    pub first: u32,
    /// Its photons.
    pub count: u32,
    /// Cosine of a point light's cone (-1: every direction).
    pub cos_max: f32,
    /// How far up a directional light's direction its photons start.
    pub back: f32,
}

/// A target's box as keys, and its bounding sphere's radius (`PhotonTarget`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct PhotonTarget {
    /// The low corner's inverted order-preserving keys.
    pub lo: [u32; 3],
    /// Padding.
    pub pad: u32,
    /// The high corner's order-preserving keys.
    pub hi: [u32; 3],
    /// The radius of the sphere about the box's centre reaching every vertex, as bits.
    pub radius_bits: u32,
}

/// What a frame's photons did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PhotonStats {
    /// The counts.
    pub counters: PhotonCounters,
    /// Photons going on after each bounce (scattered by a mirror or glass).
    pub scattered: Vec<u32>,
}

const STATE_BYTES: u64 = 16 + MAX_EMITTERS as u64 * 48 + (MAX_MATERIALS as u64 + 1) * 32;
const COUNTER_BYTES: u64 = std::mem::size_of::<BounceCounters>() as u64;

/// The steps of `trace.comp`, in its `STEP` order.
const TARGETS: usize = 0;
const SPHERES: usize = 1;
const PLAN: usize = 2;
const EMIT: usize = 3;
const SCATTER: usize = 4;

/// The photon map of a frame, reusable every frame.
pub struct PhotonMap {
    params: PhotonParams,
    steps: Vec<Arc<Pipeline>>,
    estimate: Arc<Pipeline>,
    tracer: Tracer,
    lists: [RayList; 2],
    state: Buffer,
    counters: Buffer,
    stored: Buffer,
    powers: Buffer,
    builder: PointKdBuilder,
    tree: PointKdTreeGpu,
    estimator: RadiusEstimator,
    knn: Knn,
}

impl PhotonMap {
    /// A photon map of `params`.
    pub fn new(ctx: &Context, params: PhotonParams) -> Result<Self> {
        let max_k = crate::accel::pointkd::knn::MAX_K;
        if params.photons == 0
            || params.photons > 1 << 26
            || params.bounces == 0
            || params.bounces > MAX_PHOTON_BOUNCES
            || !(1..=max_k).contains(&params.k)
            || !(params.max_radius > 0.0 && params.max_radius.is_finite())
        {
            return Err(Error::InvalidInput(format!(
                "photons: {} photons (1 to 2^26), {} bounces (1 to {MAX_PHOTON_BOUNCES}), k {} \
                 (1 to {max_k}), largest gather radius {} (a positive number)",
                params.photons, params.bounces, params.k, params.max_radius
            )));
        }
        let n = params.photons;
        let device = |name: &str, bytes: u64| ctx.create_buffer(name, bytes, MemoryKind::Device);

        let tree_params = PointKdParams {
            k_estimate: params.k,
            ..PointKdParams::default()
        };
        Ok(Self {
            params,
            steps: (0..=SCATTER as u32)
                .map(|step| {
                    ctx.pipeline(&shaders::PHOTONS_TRACE, WORKGROUP_SIZE, &[("STEP", step)])
                })
                .collect::<Result<_>>()?,
            estimate: ctx.pipeline(&shaders::PHOTONS_ESTIMATE, WORKGROUP_SIZE, &[])?,
            tracer: Tracer::new(ctx)?,
            lists: [
                RayList::new(ctx, "photon list 0", n)?,
                RayList::new(ctx, "photon list 1", n)?,
            ],
            state: device("photon state", STATE_BYTES)?,
            counters: device(
                "photon bounce counters",
                (params.bounces + 1) as u64 * COUNTER_BYTES,
            )?,
            stored: device("stored photons", n as u64 * 12)?,
            powers: device("stored photon powers", n as u64 * 12)?,
            builder: PointKdBuilder::new(ctx, tree_params, n)?,
            tree: PointKdTreeGpu::new(ctx, n, tree_params.large_node)?,
            // Only the top nodes are queried: photons crowd into caustics, where the nodes
            // below a top node hold few photons in tiny boxes and their k-nearest searches
            // from the box centres cost most of the frame (1080p default scene on an H200:
            // 44-45 ms of node queries with 3 levels, 4.4 ms with 1; the frame 58-62 -> 30 ms,
            // docs/lab/2026-11-27-photon-node-levels.md).
            estimator: RadiusEstimator::new(
                ctx,
                RadiusParams {
                    levels: 1,
                    ..RadiusParams::default()
                },
                PointKdBuilder::max_nodes(n, tree_params.large_node),
            )?,
            knn: Knn::new(ctx, 2)?,
        })
    }

    /// How it makes caustics.
    pub fn params(&self) -> PhotonParams {
        self.params
    }

    /// The photon tree of the last frame.
    pub fn tree(&self) -> &PointKdTreeGpu {
        &self.tree
    }

    /// The stored photons' positions and powers (`[f32; 3]` each), the count in
    /// [`PhotonStats`].
    pub fn stored(&self) -> (&Buffer, &Buffer) {
        (&self.stored, &self.powers)
    }

    /// Records frame `frame`'s photons of `scene` traced through `structure` (built before,
    /// with its barrier), stored, and their tree built. `surface_offset` is the renderer's
    /// offset of new ray origins.
    pub fn record_photons(
        &self,
        rec: &mut Recorder,
        scene: &SceneGpu,
        structure: &dyn Traversable,
        surface_offset: f32,
        frame: u32,
    ) -> Result<()> {
        let materials = scene.material_count;
        if materials > MAX_MATERIALS {
            return Err(Error::InvalidInput(format!(
                "caustics in a scene of {materials} materials: at most {MAX_MATERIALS}"
            )));
        }
        let n = self.params.photons;
        let groups = n.div_ceil(WORKGROUP_SIZE);
        let mut push = PhotonPush {
            scene: scene.into(),
            lights_address: scene.lights.address(),
            state_address: self.state.address(),
            counters_address: self.counters.address(),
            list_address: self.lists[0].address(),
            next_list_address: self.lists[1].address(),
            stored_address: self.stored.address(),
            powers_address: self.powers.address(),
            triangle_count: scene.triangle_count,
            light_count: scene.light_count,
            material_count: materials,
            photon_count: n,
            bounce: 0,
            spawn: 1,
            seed: self.params.seed.wrapping_add(frame),
            surface_offset,
        };
        rec.begin_stage("photons: emit");
        rec.barrier_compute_to_transfer();
        rec.fill(&self.state, 0, STATE_BYTES, 0);
        rec.fill(&self.counters, 0, self.counters.size(), 0);
        rec.barrier_transfer_to_compute();
        let triangle_groups = scene.triangle_count.div_ceil(WORKGROUP_SIZE).max(1);
        rec.dispatch(&self.steps[TARGETS], &push, triangle_groups)?;
        rec.barrier_compute_to_compute();
        rec.dispatch(&self.steps[SPHERES], &push, triangle_groups)?;
        rec.barrier_compute_to_compute();
        rec.dispatch(&self.steps[PLAN], &push, 1)?;
        rec.barrier_compute_to_compute();
        rec.dispatch(&self.steps[EMIT], &push, groups)?;
        rec.barrier_compute_to_compute();
        rec.end_stage();
        for bounce in 0..=self.params.bounces {
            rec.begin_stage(&format!("photons: bounce {bounce}"));
            let list = &self.lists[bounce as usize % 2];
            let count = match bounce {
                0 => Count::Device {
                    buffer: &self.state,
                    offset: std::mem::offset_of!(PhotonCounters, emitted) as u64,
                    max: n,
                },
                _ => Count::Device {
                    buffer: &self.counters,
                    offset: (bounce - 1) as u64 * COUNTER_BYTES,
                    max: n,
                },
            };
            let batch = TraversalBatch {
                query: Query::Closest,
                rays: list.rays(),
                hits: list.hits(),
                work: None,
                count,
                cutouts: scene.cutouts(),
            };
            self.tracer.record_batch(rec, structure, &batch)?;
            rec.barrier_compute_to_compute();
            push.bounce = bounce;
            push.spawn = (bounce < self.params.bounces) as u32;
            push.counters_address = self.counters.address() + bounce as u64 * COUNTER_BYTES;
            push.list_address = list.address();
            push.next_list_address = self.lists[(bounce as usize + 1) % 2].address();
            rec.dispatch(&self.steps[SCATTER], &push, groups)?;
            rec.barrier_compute_to_compute();
            rec.end_stage();
        }
        rec.begin_stage("photons: tree");
        let stored = Count::Device {
            buffer: &self.state,
            offset: std::mem::offset_of!(PhotonCounters, stored) as u64,
            max: n,
        };
        let positions = Slice::new(&self.stored, 0, n as u64);
        self.builder
            .record_counted(rec, (positions, stored), &self.tree)?;
        if self.params.estimated_radii {
            self.estimator
                .record_precompute(rec, &self.knn, &self.tree, self.params.k, None)?;
        }
        rec.end_stage();
        Ok(())
    }

    /// Records the caustic radiance of `gathers` into `radiance` (three u64 fixed-point sums
    /// per pixel, the renderer's), using `scratch`.
    pub fn record_gather(
        &self,
        rec: &mut Recorder,
        gathers: &GatherPoints,
        scratch: &GatherScratch,
        radiance: &Buffer,
    ) -> Result<()> {
        let GatherPoints {
            positions,
            payloads,
            count,
        } = *gathers;
        let GatherScratch { radii, found } = *scratch;
        let n = count.max();
        payloads.check("photon gather payloads", n as u64, 16)?;
        let (count_address, _) = count.push();
        if count_address == 0 {
            return Err(Error::InvalidInput(
                "photon gathers are counted on the device".into(),
            ));
        }
        rec.begin_stage("photons: gather");
        let estimated = self.params.estimated_radii;
        let queries = KnnQueries {
            points: Some(positions),
            count,
            radii: estimated.then_some(radii),
            radius: if estimated {
                0.0
            } else {
                self.params.max_radius
            },
        };
        if estimated {
            self.estimator.record_estimate(rec, &self.tree, &queries)?;
        }
        let limits = (self.params.k, self.params.max_radius);
        self.knn
            .record_radii(rec, &self.tree, &queries, limits, (found, None))?;
        let push = EstimatePush {
            nodes_address: self.tree.nodes.address(),
            entries_address: self.tree.entries.address(),
            powers_address: self.powers.address(),
            positions_address: positions.address(),
            payloads_address: payloads.address(),
            found_address: found.address(),
            count_address,
            radiance_address: radiance.address(),
            capacity: n,
            pad: 0,
        };
        rec.dispatch(&self.estimate, &push, n.div_ceil(WORKGROUP_SIZE))?;
        rec.barrier_compute_to_compute();
        rec.end_stage();
        Ok(())
    }

    /// What the last frame's photons did (after its submission completed).
    pub fn stats(&self, ctx: &Context) -> Result<PhotonStats> {
        let counters: PhotonCounters = ctx.download(&self.state, 0, 1)?[0];
        let bounces: Vec<BounceCounters> =
            ctx.download(&self.counters, 0, self.params.bounces as usize + 1)?;
        Ok(PhotonStats {
            counters,
            scattered: bounces.iter().map(|b| b.appended_rays).collect(),
        })
    }
}
