//! Traversal work counters: the same rays traced through every structure of a mesh by the
//! counting variant of the tracing kernels ([`Tracer::record_counted`]), summarised as nodes
//! visited and primitives tested per ray ([`TraversalWork`]), and optionally timed on the fast
//! path ([`Tracer::record`]).
//!
//! The rays of a mesh ([`RaySets`]):
//! - **camera**: a square image of primary rays from a camera orbiting the mesh's bounding
//!   sphere (30° around, 20° up, 45° field of view, at 2.2 radii), closest hit;
//! - **shadow**: from each camera ray's hit towards the sun of the studio lights
//!   ([`presets::studio_lights`]), where the hit surface faces it, any hit;
//! - **reflected**: the mirror reflection of each camera ray at its hit, closest hit.
//!
//! Secondary rays leave the surface on the side the camera ray came from, offset as the
//! renderer's are ([`offset_origin`]: 10^-4 of the mesh's radius, then a few ulps). They are made on the host from the
//! camera rays' closest hits through the first structure traced; closest hits are exact, so
//! they are the same whichever structure found them, and every later structure traces the
//! very same rays.

use super::Result;
use super::harness::{Timing, time_runs};
use super::meshes::BenchMesh;
use crate::accel::native::NativeTracer;
use crate::accel::{CameraBatch, Traversable};
use crate::geom::PinholeView;
use crate::geom::morton::{MortonFrame, morton30};
use crate::geom::ray::{Hit, MISS, Query, Ray, RayWork, TraversalWork};
use crate::render::cpu::offset_origin;
use crate::render::{Camera, Light, presets};
use crate::trace::Tracer;
use crate::vk::{Buffer, Context, MemoryKind, Recorder};
use crate::vk::{Count, Slice};
use glam::Vec3;

/// Which rays of a [`RaySets`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RayKind {
    /// Primary rays, closest hit.
    Camera,
    /// Rays from the camera rays' hits towards the sun, any hit.
    Shadow,
    /// Mirror reflections of the camera rays at their hits, closest hit.
    Reflected,
}

impl RayKind {
    /// The query these rays make.
    pub fn query(self) -> Query {
        match self {
            RayKind::Shadow => Query::Any,
            RayKind::Camera | RayKind::Reflected => Query::Closest,
        }
    }

    /// `camera`, `shadow` or `reflected`.
    pub fn name(self) -> &'static str {
        match self {
            RayKind::Camera => "camera",
            RayKind::Shadow => "shadow",
            RayKind::Reflected => "reflected",
        }
    }
}

/// The traversal of one kind of rays through one structure.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct TraversalReport {
    /// Which rays.
    pub rays: RayKind,
    /// `closest` or `any`.
    pub query: &'static str,
    /// Rays that hit something.
    pub hits: u32,
    /// Nodes visited and primitives tested per ray (the counting kernel).
    pub work: TraversalWork,
    /// Device bytes those nodes and primitives hold, per ray (where the structure reads a
    /// fixed size per node, [`Traversable::fetch_bytes`]).
    pub bytes_per_ray: Option<f64>,
    /// GPU time of the fast path (when timed).
    pub time: Option<Timing>,
}

/// One kind of rays traced through the driver's structure with its ray-tracing pipeline
/// ([`NativeTracer`]): no work counts, only hits and time.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct NativeTrace {
    /// Which rays.
    pub rays: RayKind,
    /// `closest` or `any`.
    pub query: &'static str,
    /// How many.
    pub count: u32,
    /// Rays that hit something.
    pub hits: u32,
    /// GPU time.
    pub time: Timing,
}

/// A batch of rays on the device, with room for their hits and work counts.
pub struct RayBatch {
    kind: RayKind,
    /// The view camera rays were made for: structures with their own caster of camera rays
    /// (the screen grid) cast them through it.
    view: Option<PinholeView>,
    count: u32,
    rays: Buffer,
    hits: Buffer,
    work: Buffer,
}

impl RayBatch {
    /// Uploads `rays` of `kind`.
    pub fn new(ctx: &Context, kind: RayKind, rays: &[Ray]) -> Result<Self> {
        let n = rays.len().max(1) as u64;
        let device =
            |name: &str, bytes: u64| ctx.create_buffer(name, n * bytes, MemoryKind::Device);
        let buffer = if rays.is_empty() {
            device("bench rays", size_of::<Ray>() as u64)?
        } else {
            ctx.create_buffer_with("bench rays", rays)?
        };
        Ok(Self {
            kind,
            view: None,
            count: rays.len() as u32,
            rays: buffer,
            hits: device("bench hits", size_of::<Hit>() as u64)?,
            work: device("bench ray work", size_of::<RayWork>() as u64)?,
        })
    }

    /// The camera rays of `view`, one per pixel, row-major: cast through the structure's own
    /// caster of camera rays where it has one (the screen grid built for `view`).
    pub fn camera(ctx: &Context, view: &PinholeView) -> Result<Self> {
        let rays: Vec<Ray> = (0..view.pixels() as u32)
            .map(|i| view.primary_ray(i % view.width, i / view.width))
            .collect();
        let mut batch = Self::new(ctx, RayKind::Camera, &rays)?;
        batch.view = Some(*view);
        Ok(batch)
    }

    /// Rays in the batch.
    pub fn len(&self) -> u32 {
        self.count
    }

    /// Whether the batch has no rays.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Traces the rays through `structure` with the counting kernel for `query`, and with
    /// `repeats` > 0 times the fast path too; returns the report and the hits. Camera rays go
    /// through the structure's own caster when it has one ([`Traversable::camera_caster`]).
    pub fn trace(
        &self,
        ctx: &Context,
        tracer: &Tracer,
        structure: &dyn Traversable,
        query: Query,
        repeats: u32,
    ) -> Result<(TraversalReport, Vec<Hit>)> {
        let count = Count::Host(self.count);
        let (rays, hits) = (Slice::whole(&self.rays), Slice::whole(&self.hits));
        let work = Slice::whole(&self.work);
        let caster = match (self.view, structure.camera_caster()) {
            (Some(view), Some(caster)) if query == Query::Closest => Some((view, caster)),
            _ => None,
        };
        let record = |rec: &mut Recorder, work: Option<Slice<RayWork>>| match caster {
            Some((view, caster)) => {
                let batch = CameraBatch {
                    view,
                    rays,
                    hits,
                    work,
                    cutouts: None,
                };
                caster.record_cast(rec, &batch)
            }
            None => match work {
                Some(work) => tracer.record_counted(rec, structure, query, rays, hits, work, count),
                None => tracer.record(rec, structure, query, rays, hits, count),
            },
        };
        ctx.submit_and_wait(|rec| record(rec, Some(work)))?;
        let n = self.count as usize;
        let work: Vec<RayWork> = ctx.download(&self.work, 0, n)?;
        let hit_list: Vec<Hit> = ctx.download(&self.hits, 0, n)?;
        let time = (repeats > 0 && n > 0)
            .then(|| time_runs(ctx, repeats, |_| Ok(()), |rec| record(rec, None)))
            .transpose()?;
        let work = TraversalWork::from_counts(&work);
        let bytes_per_ray = structure.fetch_bytes().map(|bytes| {
            bytes.node as f64 * work.mean_nodes + bytes.primitive as f64 * work.mean_primitives
        });
        let report = TraversalReport {
            rays: self.kind,
            query: query_name(query),
            hits: hit_list.iter().filter(|h| h.triangle != MISS).count() as u32,
            work,
            bytes_per_ray,
            time,
        };
        Ok((report, hit_list))
    }
}

impl RayBatch {
    /// Traces the rays with the driver's ray-tracing pipeline for `query` (the tracer's top
    /// level built), timed over `repeats` runs; `None` for an empty batch.
    pub fn trace_native(
        &self,
        ctx: &Context,
        tracer: &NativeTracer,
        query: Query,
        repeats: u32,
    ) -> Result<Option<NativeTrace>> {
        if self.count == 0 {
            return Ok(None);
        }
        let (rays, hits) = (Slice::whole(&self.rays), Slice::whole(&self.hits));
        let record = |rec: &mut Recorder| tracer.record_trace(rec, query, rays, hits, self.count);
        ctx.submit_and_wait(record)?;
        let hit_list: Vec<Hit> = ctx.download(&self.hits, 0, self.count as usize)?;
        let time = time_runs(ctx, repeats, |_| Ok(()), record)?;
        Ok(Some(NativeTrace {
            rays: self.kind,
            query: query_name(query),
            count: self.count,
            hits: hit_list.iter().filter(|h| h.triangle != MISS).count() as u32,
            time,
        }))
    }
}

/// `closest` or `any`.
fn query_name(query: Query) -> &'static str {
    match query {
        Query::Closest => "closest",
        Query::Any => "any",
    }
}

/// The rays traced through every structure of one mesh.
pub struct RaySets {
    batches: Vec<RayBatch>,
    /// Direction towards the sun.
    to_light: Vec3,
    /// How far secondary rays start off the surface.
    offset: f32,
    /// Order the secondary rays by direction octant and origin instead of by pixel.
    sorted_secondary: bool,
}

/// The view of the camera rays of a `side` x `side` image framing `mesh` (30° around, 20°
/// up, 45° field of view, at 2.2 radii of its bounding sphere).
pub fn camera_view(mesh: &BenchMesh, side: u32) -> PinholeView {
    let (centre, radius) = mesh.bounding_sphere();
    Camera::orbit(centre, radius * 2.2, 30.0, 20.0, 45.0).view(side, side)
}

impl RaySets {
    /// Camera rays of a `side` x `side` image framing `mesh` ([`camera_view`]); the secondary
    /// rays follow from the first [`Self::trace`], in pixel order or (`sorted_secondary`) by
    /// direction octant, then by the Morton code of their origin.
    pub fn new(ctx: &Context, mesh: &BenchMesh, side: u32, sorted_secondary: bool) -> Result<Self> {
        let (centre, radius) = mesh.bounding_sphere();
        let camera = RayBatch::camera(ctx, &camera_view(mesh, side))?;
        let sun = presets::studio_lights(centre, radius)
            .into_iter()
            .find_map(|light| match light {
                Light::Directional { direction, .. } => Some(-direction.normalize()),
                Light::Point { .. } => None,
            })
            .unwrap_or(Vec3::Y);
        Ok(Self {
            batches: vec![camera],
            to_light: sun,
            offset: presets::shading(radius).surface_offset,
            sorted_secondary,
        })
    }

    /// Traces every batch through `structure` (over `mesh`) with the counting kernels, and
    /// with `repeats` > 0 times the fast path too. The first call makes the secondary rays
    /// from the camera rays' hits.
    pub fn trace(
        &mut self,
        ctx: &Context,
        tracer: &Tracer,
        mesh: &BenchMesh,
        structure: &dyn Traversable,
        repeats: u32,
    ) -> Result<Vec<TraversalReport>> {
        let mut reports = Vec::new();
        let mut index = 0;
        while let Some(batch) = self.batches.get(index) {
            let (report, hits) =
                batch.trace(ctx, tracer, structure, batch.kind.query(), repeats)?;
            reports.push(report);
            if batch.kind == RayKind::Camera && self.batches.len() == 1 {
                let camera: Vec<Ray> = ctx.download(&batch.rays, 0, batch.count as usize)?;
                let (shadow, reflected) = self.secondary_rays(mesh, &camera, &hits);
                self.batches
                    .push(RayBatch::new(ctx, RayKind::Shadow, &shadow)?);
                self.batches
                    .push(RayBatch::new(ctx, RayKind::Reflected, &reflected)?);
            }
            index += 1;
        }
        Ok(reports)
    }

    /// Every batch (those made so far: trace through a structure first) through the driver's
    /// ray tracing, timed over `repeats` runs.
    pub fn trace_native(
        &self,
        ctx: &Context,
        tracer: &NativeTracer,
        repeats: u32,
    ) -> Result<Vec<NativeTrace>> {
        let mut traces = Vec::new();
        for batch in &self.batches {
            traces.extend(batch.trace_native(ctx, tracer, batch.kind.query(), repeats)?);
        }
        Ok(traces)
    }

    /// The shadow and reflected rays of the camera rays' hits.
    fn secondary_rays(
        &self,
        mesh: &BenchMesh,
        camera: &[Ray],
        hits: &[Hit],
    ) -> (Vec<Ray>, Vec<Ray>) {
        let (mut shadow, mut reflected) = (Vec::new(), Vec::new());
        let vertex = |i: u32| Vec3::from(mesh.host.positions[i as usize]);
        for (ray, hit) in camera.iter().zip(hits).filter(|(_, h)| h.triangle != MISS) {
            let [a, b, c] = mesh.host.triangles[hit.triangle as usize].map(vertex);
            let direction = Vec3::from(ray.direction);
            let mut normal = (b - a).cross(c - a).normalize_or_zero();
            if normal.dot(direction) > 0.0 {
                normal = -normal;
            }
            let origin = offset_origin(
                Vec3::from(ray.origin) + direction * hit.t,
                normal,
                self.offset,
            );
            let ray_to = |direction: Vec3| Ray {
                origin: origin.to_array(),
                tmin: 0.0,
                direction: direction.to_array(),
                tmax: f32::INFINITY,
            };
            if normal.dot(self.to_light) > 0.0 {
                shadow.push(ray_to(self.to_light));
            }
            reflected.push(ray_to(direction - 2.0 * direction.dot(normal) * normal));
        }
        if self.sorted_secondary {
            let frame = MortonFrame::from_points(&mesh.host.positions, 10);
            let key = |ray: &Ray| {
                let octant = (0..3).fold(0, |o, k| o | ((ray.direction[k] < 0.0) as u32) << k);
                (octant, morton30(frame.quantize(ray.origin, 10)))
            };
            shadow.sort_by_key(key);
            reflected.sort_by_key(key);
        }
        (shadow, reflected)
    }
}
