//! The screen grid's GPU build and [`GridStructure`], the grid with the LBVH that traces
//! every ray other than the camera's.
//!
//! One build, each step a dispatch and a profiler stage:
//! 1. **grid: project** (`glsl/grid/project.comp`): tile range, nearest depth and reference
//!    count per triangle; the frame's depth range and references needed;
//! 2. **grid: scan**: the reference counts' exclusive scan (where each triangle's references go);
//! 3. **grid: references** (`references.comp`, sized on the GPU): a bin id and triangle per
//!    reference;
//! 4. **multisplit: bin sizes**, **multisplit: reorder**: the references ordered by bin
//!    (tile-major, slabs front to back), three 6-bit split levels for the paper's
//!    128 x 128 tiles x 16 slabs, and each bin's start.
//!
//! Then the frame's [`GridFrame`] is copied to the slot's host-visible status, from which
//! [`Structure::grow_if_overflowed`] learns whether the references fitted.

use super::cpu::{self, CpuGrid};
use super::{GridFrame, GridParams, tiles_of};
use crate::accel::bvh::lbvh::{LbvhParams, LbvhStructure};
use crate::accel::{
    CameraBatch, CameraCaster, HostMesh, RayStructure, Structure, StructureKind, Traversable,
    TraversalBatch, TreeShape,
};
use crate::geom::{PinholeView, TriangleInput};
use crate::prims::indirect::IndirectArgs;
use crate::prims::multisplit::Multisplit;
use crate::prims::scan::{Scan, ScanKind};
use crate::prims::{Groups, WORKGROUP_SIZE};
use crate::shaders;
use crate::vk::{Buffer, Context, Count, Error, MemoryKind, Pipeline, Recorder, Result, Slice};
use std::sync::Arc;

/// Push constants of `project.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct ProjectPush {
    /// Vertex positions.
    pub positions_address: u64,
    /// Triangles.
    pub triangles_address: u64,
    /// Out: a [`super::GridTriangle`] per triangle.
    pub grid_triangles_address: u64,
    /// Out: references per triangle, then 0.
    pub counts_address: u64,
    /// The [`GridFrame`], updated atomically.
    pub frame_address: u64,
    /// Eye.
    pub origin: [f32; 3],
    /// Triangles.
    pub count: u32,
    /// View direction.
    pub forward: [f32; 3],
    /// Image width.
    pub width: u32,
    /// `right / |right|²`.
    pub right_inverse: [f32; 3],
    /// Image height.
    pub height: u32,
    /// `up / |up|²`.
    pub up_inverse: [f32; 3],
    /// Tile side in pixels.
    pub tile_size: u32,
    /// Near plane depth.
    pub near: f32,
    /// Padding.
    pub pad: u32,
}

/// Push constants of `references.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct ReferencesPush {
    /// [`super::GridTriangle`] per triangle.
    pub grid_triangles_address: u64,
    /// Exclusive scan of the reference counts, then the total.
    pub offsets_address: u64,
    /// The [`GridFrame`].
    pub frame_address: u64,
    /// Out: bin per reference.
    pub bin_ids_address: u64,
    /// Out: triangle per reference.
    pub triangle_ids_address: u64,
    /// Triangles.
    pub count: u32,
    /// References that fit.
    pub capacity: u32,
    /// Tile columns.
    pub tiles_x: u32,
    /// Slabs per tile.
    pub slabs: u32,
}

/// Push constants of `cast.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct CastPush {
    /// Ray per pixel.
    pub rays_address: u64,
    /// Out: hit per pixel.
    pub hits_address: u64,
    /// Out: work per pixel (counting kernel), else 0.
    pub work_address: u64,
    /// Bin starts.
    pub bin_starts_address: u64,
    /// Triangle per reference.
    pub triangle_ids_address: u64,
    /// Vertex positions.
    pub positions_address: u64,
    /// Triangles.
    pub triangles_address: u64,
    /// The [`GridFrame`].
    pub frame_address: u64,
    /// View direction.
    pub forward: [f32; 3],
    /// Image width.
    pub width: u32,
    /// Image height.
    pub height: u32,
    /// Tile columns.
    pub tiles_x: u32,
    /// Tiles.
    pub tiles: u32,
    /// Slabs per tile.
    pub slabs: u32,
    /// Tile side in pixels.
    pub tile_size: u32,
    /// Padding.
    pub pad: u32,
    /// The scene's appearance buffer where materials cut out, 0 for none.
    pub cutouts_address: u64,
}

const FRAME_BYTES: u64 = std::mem::size_of::<GridFrame>() as u64;

/// The bins of one view's image and the references sorted into them.
struct Bins {
    view: PinholeView,
    tiles: (u32, u32),
    capacity: u32,
    bin_ids: Buffer,
    triangle_ids: Buffer,
    bin_starts: Buffer,
    multisplit: Multisplit,
}

impl Bins {
    fn new(
        ctx: &Context,
        view: PinholeView,
        tiles: (u32, u32),
        slabs: u32,
        capacity: u32,
    ) -> Result<Self> {
        let bins = tiles.0 * tiles.1 * slabs;
        let capacity = capacity.max(1);
        Ok(Self {
            view,
            tiles,
            capacity,
            bin_ids: ctx.create_buffer("grid bin ids", capacity as u64 * 4, MemoryKind::Device)?,
            triangle_ids: ctx.create_buffer(
                "grid references",
                capacity as u64 * 4,
                MemoryKind::Device,
            )?,
            bin_starts: ctx.create_buffer(
                "grid bin starts",
                (bins as u64 + 1) * 4,
                MemoryKind::Device,
            )?,
            multisplit: Multisplit::new(ctx, bins, capacity)?,
        })
    }

    fn bins(&self, slabs: u32) -> u32 {
        self.tiles.0 * self.tiles.1 * slabs
    }
}

/// The screen grid over up to `capacity` triangles, with the LBVH every other ray goes
/// through, and one build status per slot.
pub struct GridStructure {
    params: GridParams,
    capacity: u32,
    lbvh: LbvhStructure,
    project: Arc<Pipeline>,
    references: Arc<Pipeline>,
    scan: Scan,
    indirect: IndirectArgs,
    grid_triangles: Buffer,
    counts: Buffer,
    offsets: Buffer,
    frame: Buffer,
    bins: Option<Bins>,
    status: Vec<Buffer>,
}

impl GridStructure {
    /// A grid shaped by `params` over up to `triangles` triangles, its LBVH built with `lbvh`,
    /// with `slots` builds in flight. Its bins are sized by [`RayStructure::set_view`].
    pub fn new(
        ctx: &Context,
        params: GridParams,
        lbvh: LbvhParams,
        triangles: u32,
        slots: usize,
    ) -> Result<Self> {
        let caps = ctx.caps();
        params.check(caps.max_workgroup_size, caps.subgroup_size)?;
        let per_triangle = (triangles as u64 + 1).next_multiple_of(4) * 4;
        // The caster's pipelines are made as casts ask for them (cached by the context); this
        // one fails early where the device cannot run a tile's workgroup.
        cast_pipeline(ctx, &params, false, false)?;
        Ok(Self {
            params,
            capacity: triangles,
            lbvh: LbvhStructure::new(ctx, lbvh, triangles)?,
            project: ctx.pipeline(&shaders::GRID_PROJECT, WORKGROUP_SIZE, &[])?,
            references: ctx.pipeline(&shaders::GRID_REFERENCES, WORKGROUP_SIZE, &[])?,
            scan: Scan::new(ctx, ScanKind::Exclusive, triangles + 1)?,
            indirect: IndirectArgs::new(ctx, "grid", 1)?,
            grid_triangles: ctx.create_buffer(
                "grid triangles",
                triangles.max(1) as u64 * 16,
                MemoryKind::Device,
            )?,
            counts: ctx.create_buffer("grid reference counts", per_triangle, MemoryKind::Device)?,
            offsets: ctx.create_buffer(
                "grid reference offsets",
                per_triangle,
                MemoryKind::Device,
            )?,
            frame: ctx.create_buffer("grid frame", FRAME_BYTES, MemoryKind::Device)?,
            bins: None,
            status: (0..slots.max(1))
                .map(|_| ctx.create_buffer("grid build status", FRAME_BYTES, MemoryKind::Readback))
                .collect::<Result<_>>()?,
        })
    }

    /// The grid's shape.
    pub fn params(&self) -> GridParams {
        self.params
    }

    /// The view the bins are sized for (the last [`RayStructure::set_view`]).
    pub fn view(&self) -> Option<PinholeView> {
        self.bins.as_ref().map(|b| b.view)
    }

    /// References the bins hold room for.
    pub fn reference_capacity(&self) -> u32 {
        self.bins.as_ref().map_or(0, |b| b.capacity)
    }

    /// The build status of `slot` (once its submission has completed).
    pub fn status(&self, slot: usize) -> GridFrame {
        let bytes = self.status[slot]
            .mapped()
            .expect("status buffers are mapped");
        bytemuck::pod_read_unaligned(&bytes[..FRAME_BYTES as usize])
    }

    /// The grid the last build wrote, read back (after its submission completed).
    pub fn download(&self, ctx: &Context) -> Result<CpuGrid> {
        let bins = self.built_bins()?;
        let frame: GridFrame = ctx.download(&self.frame, 0, 1)?[0];
        let slabs = self.params.slabs;
        let count = bins.bins(slabs) as usize + 1;
        Ok(CpuGrid {
            tiles: [bins.tiles.0, bins.tiles.1],
            slabs,
            frame,
            bin_starts: ctx.download(&bins.bin_starts, 0, count)?,
            triangle_ids: ctx.download(&bins.triangle_ids, 0, frame.references as usize)?,
        })
    }

    fn built_bins(&self) -> Result<&Bins> {
        self.bins.as_ref().ok_or_else(|| {
            Error::InvalidInput(
                "the screen grid is built for a view: set_view before building it".into(),
            )
        })
    }

    fn record_grid(&self, rec: &mut Recorder, input: &TriangleInput, slot: usize) -> Result<()> {
        let bins = self.built_bins()?;
        let view = bins.view;
        let count = input.count;
        if count > self.capacity {
            return Err(Error::InvalidInput(format!(
                "grid build over {count} triangles: made for at most {}",
                self.capacity
            )));
        }
        let (right_inverse, up_inverse) = view.inverse_basis().map_err(Error::InvalidInput)?;
        rec.begin_stage("grid: project");
        rec.barrier_compute_to_transfer();
        rec.update_buffer(&self.frame, 0, &[GridFrame::EMPTY]);
        rec.barrier_transfer_to_compute();
        let push = ProjectPush {
            positions_address: input.positions.address(),
            triangles_address: input.triangles.address(),
            grid_triangles_address: self.grid_triangles.address(),
            counts_address: self.counts.address(),
            frame_address: self.frame.address(),
            origin: view.origin,
            count,
            forward: view.forward,
            width: view.width,
            right_inverse,
            height: view.height,
            up_inverse,
            tile_size: self.params.tile_size,
            near: self.params.near,
            pad: 0,
        };
        rec.dispatch(&self.project, &push, (count + 1).div_ceil(WORKGROUP_SIZE))?;
        rec.barrier_compute_to_compute();
        rec.end_stage();

        rec.begin_stage("grid: scan");
        let counts = Slice::new(&self.counts, 0, count as u64 + 1);
        let offsets = Slice::new(&self.offsets, 0, count as u64 + 1);
        self.scan
            .record(rec, counts, offsets, Count::Host(count + 1))?;
        rec.barrier_compute_to_compute();
        rec.end_stage();

        rec.begin_stage("grid: references");
        let total_address = self.offsets.address() + count as u64 * 4;
        self.indirect
            .record(rec, 0, total_address, bins.capacity, WORKGROUP_SIZE, 1)?;
        let push = ReferencesPush {
            grid_triangles_address: self.grid_triangles.address(),
            offsets_address: self.offsets.address(),
            frame_address: self.frame.address(),
            bin_ids_address: bins.bin_ids.address(),
            triangle_ids_address: bins.triangle_ids.address(),
            count,
            capacity: bins.capacity,
            tiles_x: bins.tiles.0,
            slabs: self.params.slabs,
        };
        rec.dispatch_indirect(&self.references, &push, self.indirect.buffer(), 0);
        rec.barrier_compute_to_compute();
        rec.end_stage();

        let references = Count::Device {
            buffer: &self.frame,
            offset: std::mem::offset_of!(GridFrame, references) as u64,
            max: bins.capacity,
        };
        bins.multisplit.record(
            rec,
            Slice::new(&bins.bin_ids, 0, bins.capacity as u64),
            Slice::new(&bins.triangle_ids, 0, bins.capacity as u64),
            Slice::whole(&bins.bin_starts),
            references,
        )?;
        rec.barrier_compute_to_transfer();
        rec.copy_buffer(&self.frame, 0, &self.status[slot], 0, FRAME_BYTES);
        rec.barrier_transfer_to_host();
        rec.barrier_compute_to_compute();
        Ok(())
    }

    fn record_cast(
        &self,
        rec: &mut Recorder,
        input: &TriangleInput,
        batch: &CameraBatch,
    ) -> Result<()> {
        let bins = self.built_bins()?;
        if batch.view != bins.view {
            return Err(Error::InvalidInput(format!(
                "camera rays of {:?} cast through a grid built for {:?}",
                batch.view, bins.view
            )));
        }
        let pixels = batch.view.pixels();
        batch.rays.check("grid camera rays", pixels, 16)?;
        batch.hits.check("grid camera hits", pixels, 16)?;
        if let Some(work) = &batch.work {
            work.check("grid camera ray work", pixels, 8)?;
        }
        let tiles = bins.tiles.0 * bins.tiles.1;
        let push = CastPush {
            rays_address: batch.rays.address(),
            hits_address: batch.hits.address(),
            work_address: batch.work.as_ref().map_or(0, |w| w.address()),
            bin_starts_address: bins.bin_starts.address(),
            triangle_ids_address: bins.triangle_ids.address(),
            positions_address: input.positions.address(),
            triangles_address: input.triangles.address(),
            frame_address: self.frame.address(),
            forward: batch.view.forward,
            width: batch.view.width,
            height: batch.view.height,
            tiles_x: bins.tiles.0,
            tiles,
            slabs: self.params.slabs,
            tile_size: self.params.tile_size,
            pad: 0,
            cutouts_address: batch.cutouts.map_or(0, |b| b.address()),
        };
        let pipeline = cast_pipeline(
            rec.context(),
            &self.params,
            batch.work.is_some(),
            batch.cutouts.is_some(),
        )?;
        rec.dispatch(&pipeline, &push, tiles)?;
        Ok(())
    }
}

impl Structure for GridStructure {
    fn kind(&self) -> StructureKind {
        StructureKind::Grid
    }

    fn grow_if_overflowed(&mut self, ctx: &Context, slot: usize) -> Result<bool> {
        let needed = self.status(slot).needed;
        let Some(bins) = &self.bins else {
            return Ok(false);
        };
        if needed <= bins.capacity as u64 {
            return Ok(false);
        }
        let grown = needed + needed / 4;
        if grown > u32::MAX as u64 / 2 {
            return Err(Error::InvalidInput(format!(
                "the screen grid needs {needed} triangle references: more than 32-bit indices \
                 can sort (fewer triangles, a smaller image or larger tiles)"
            )));
        }
        log::info!("grid references grown from {} to {grown}", bins.capacity);
        let (view, tiles) = (bins.view, bins.tiles);
        self.bins = None;
        self.bins = Some(Bins::new(
            ctx,
            view,
            tiles,
            self.params.slabs,
            grown as u32,
        )?);
        Ok(true)
    }

    fn tree_bytes(&self) -> u64 {
        let bins = self
            .bins
            .as_ref()
            .map_or(0, |b| b.triangle_ids.size() + b.bin_starts.size());
        bins + self.frame.size() + self.lbvh.tree_bytes()
    }

    fn describe(
        &self,
        ctx: &Context,
        _slot: usize,
        mesh: HostMesh,
    ) -> Result<std::result::Result<TreeShape, String>> {
        let grid = self.download(ctx)?;
        let view = self.built_bins()?.view;
        let checked = cpu::check(mesh.positions, mesh.triangles, &view, &self.params, &grid);
        Ok(checked.map(|stats| TreeShape {
            nodes: stats.bins,
            leaves: stats.occupied_bins,
            depth: 0,
            references: stats.references,
            in_view: Some(stats.triangles_in_view),
            ..TreeShape::default()
        }))
    }
}

impl RayStructure for GridStructure {
    fn set_view(&mut self, ctx: &Context, view: &PinholeView) -> Result<()> {
        let tiles = tiles_of(view, &self.params)?;
        match &mut self.bins {
            Some(bins) if bins.tiles == tiles => bins.view = *view,
            _ => {
                let capacity = match &self.bins {
                    Some(bins) => bins.capacity,
                    None => {
                        let estimate =
                            self.capacity as f64 * self.params.references_per_triangle as f64;
                        estimate.min(u32::MAX as f64 / 2.0) as u32
                    }
                };
                self.bins = None;
                self.bins = Some(Bins::new(ctx, *view, tiles, self.params.slabs, capacity)?);
            }
        }
        Ok(())
    }

    fn record_build(
        &mut self,
        rec: &mut Recorder,
        input: &TriangleInput,
        slot: usize,
    ) -> Result<()> {
        self.built_bins()?;
        self.lbvh.record_build(rec, input, slot)?;
        self.record_grid(rec, input, slot)
    }

    fn traversable<'a>(&'a self, input: &TriangleInput<'a>) -> Box<dyn Traversable + 'a> {
        Box::new(GridTraversable {
            grid: self,
            lbvh: self.lbvh.traversable(input),
            input: *input,
        })
    }
}

/// `cast.comp`'s pipeline for tiles of `params`, counting work or not, passing through
/// cut-outs or not (its specialization constants `COUNT_WORK` and `CUTOUTS`).
fn cast_pipeline(
    ctx: &Context,
    params: &GridParams,
    counted: bool,
    cutouts: bool,
) -> Result<Arc<Pipeline>> {
    ctx.pipeline(
        &shaders::GRID_CAST,
        params.tile_size * params.tile_size,
        &[("COUNT_WORK", counted as u32), ("CUTOUTS", cutouts as u32)],
    )
}

/// The grid for camera rays, its LBVH for every other ray.
struct GridTraversable<'a> {
    grid: &'a GridStructure,
    lbvh: Box<dyn Traversable + 'a>,
    input: TriangleInput<'a>,
}

impl Traversable for GridTraversable<'_> {
    fn record_traversal(
        &self,
        rec: &mut Recorder,
        batch: &TraversalBatch,
        groups: &Groups,
    ) -> Result<()> {
        self.lbvh.record_traversal(rec, batch, groups)
    }

    fn camera_caster(&self) -> Option<&dyn CameraCaster> {
        Some(self)
    }
}

impl CameraCaster for GridTraversable<'_> {
    fn record_cast(&self, rec: &mut Recorder, batch: &CameraBatch) -> Result<()> {
        self.grid.record_cast(rec, &self.input, batch)
    }
}
