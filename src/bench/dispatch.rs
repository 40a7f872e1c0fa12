//! The fixed costs under every GPU build and trace (`canopy bench dispatch`): what one
//! dependent dispatch and its barrier cost, the device-local copy bandwidth, and the fraction
//! of it a BVH traversal's node reads reach.
//!
//! - **Dispatch chains**: `chain` dispatches of an empty kernel (`glsl/bench/empty.comp`) in
//!   one command buffer, each followed by a compute->compute barrier (as a build's dependent
//!   steps are) or with none between them (the dispatches free to overlap), with one workgroup
//!   each or with enough to fill the GPU. The time of a chain over its length is the fixed cost
//!   of a dispatch. Each chain is also recorded under a [`WorkCensus`](crate::vk::WorkCensus)
//!   (dispatches and barriers recorded) and run once with the kernel counting its workgroups,
//!   so a report says what was really run.
//! - **Copy bandwidth**: `vkCmdCopyBuffer` of a large device-local buffer, and the compute
//!   copy (`glsl/prims/copy.comp`) with 16 bytes per invocation (one `uvec4` load and store)
//!   and with 64 (four of them, `canopy bench prims`' yardstick); bytes read + written per
//!   second. The copy is checked at both ends of the buffer.
//! - **Node reads**: an LBVH over the default scene and the rays of [`RaySets`] (camera rays,
//!   their shadow and reflected rays) traced through it, timed; the nodes each ray visits
//!   (the counting kernel) times the bytes of a node ([`Traversable::fetch_bytes`](crate::accel::Traversable::fetch_bytes)) times rays
//!   per second is the traversal's node-read bandwidth, set against the compute copy's.
//!
//! Every time is the median of timed runs after a warm-up, from GPU timestamps
//! ([`time_runs`]).

use super::harness::{Timing, count_work, time_runs};
use super::meshes::BenchMesh;
use super::traversal::{RayKind, RaySets, camera_view};
use super::{Error, Result};
use crate::accel::{AnyStructure, BuildParams, StructureKind, StructureSize};
use crate::accel::{Structure, submit_until_complete};
use crate::shaders;
use crate::trace::Tracer;
use crate::vk::{Buffer, Context, MemoryKind, Pipeline, Recorder, WorkCounts};

/// Invocations per workgroup of the empty kernel and the compute copy.
const WORKGROUP_SIZE: u32 = 256;

/// The word the copy's source is filled with, checked at both ends of the destination.
const COPY_PATTERN: u32 = 0x5eed_c0de;

/// What is measured.
#[derive(Clone, Debug)]
pub struct DispatchConfig {
    /// Dispatches in each chain.
    pub chain: u32,
    /// Workgroups per dispatch of the wide chains (of 256 invocations).
    pub wide_groups: u32,
    /// Bytes of the copies (rounded down to 16 bytes; at most a quarter of the device-local
    /// memory).
    pub copy_bytes: u64,
    /// Timed runs of each measurement after a warm-up (at least 1); the median is reported.
    pub repeats: u32,
    /// Triangles of the default scene's torus the LBVH is built over (0: no traversal).
    pub triangles: u64,
    /// Side of the square image of camera rays traced through it.
    pub ray_side: u32,
}

impl Default for DispatchConfig {
    /// Chains of 100 dispatches of 1 and of 2048 workgroups (512K invocations: twice what
    /// the 132 multiprocessors of an H100 or H200 hold at once), 1 GiB copies, 15 runs, an
    /// LBVH over the 1M-triangle default scene traced by 1024x1024 camera rays and their
    /// shadow and reflected rays.
    fn default() -> Self {
        Self {
            chain: 100,
            wide_groups: 2048,
            copy_bytes: 1 << 30,
            repeats: 15,
            triangles: 1_000_000,
            ray_side: 1024,
        }
    }
}

/// One chain of empty dispatches.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ChainReport {
    /// Dispatches in the chain.
    pub length: u32,
    /// Workgroups per dispatch.
    pub groups: u32,
    /// Invocations per workgroup.
    pub workgroup_size: u32,
    /// Whether a compute->compute barrier follows each dispatch.
    pub barriers: bool,
    /// Dispatches and barriers recorded in one chain (the census).
    pub work: WorkCounts,
    /// Workgroups that ran in one chain, as the kernel counted them.
    pub workgroups_run: u64,
    /// GPU time of the chain.
    pub time: Timing,
    /// The chain's median time, in µs.
    pub total_us: f64,
    /// The same per dispatch, in µs.
    pub per_dispatch_us: f64,
}

/// One compute copy.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct ComputeCopy {
    /// Bytes each invocation copies (16-byte loads and stores).
    pub bytes_per_invocation: u32,
    /// GPU time of the copy.
    pub time: Timing,
    /// Bytes read + written per second.
    pub bytes_per_s: f64,
}

/// The device-local copy bandwidth.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct CopyReport {
    /// Bytes copied.
    pub bytes: u64,
    /// `vkCmdCopyBuffer`'s time.
    pub cmd_copy: Timing,
    /// `vkCmdCopyBuffer`'s bytes read + written per second.
    pub cmd_copy_bytes_per_s: f64,
    /// The compute copies, 16 bytes per invocation first.
    pub compute: Vec<ComputeCopy>,
}

impl CopyReport {
    /// The compute copy of 16 bytes per invocation, bytes read + written per second.
    pub fn compute_bytes_per_s(&self) -> f64 {
        self.compute.first().map_or(0.0, |c| c.bytes_per_s)
    }
}

/// One kind of rays traced through the LBVH: the bytes its nodes read per second.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct NodeReadRow {
    /// Which rays.
    pub rays: RayKind,
    /// How many.
    pub count: u32,
    /// Nodes visited per ray (the counting kernel).
    pub nodes_per_ray: f64,
    /// Triangles tested per ray.
    pub primitives_per_ray: f64,
    /// GPU time of the trace (the fast kernel, no counting).
    pub time: Timing,
    /// Rays per second.
    pub rays_per_s: f64,
    /// Node bytes read per second: nodes per ray x bytes per node x rays per second.
    pub node_bytes_per_s: f64,
    /// Node and leaf-triangle bytes read per second.
    pub fetched_bytes_per_s: f64,
    /// Node bytes per second over the compute copy's bytes read + written per second.
    pub node_fraction_of_copy: f64,
}

/// The LBVH's node reads.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct NodeReadReport {
    /// Triangles of the default scene.
    pub triangles: u32,
    /// Bytes of the tree (nodes and leaf triangles).
    pub tree_bytes: u64,
    /// Bytes a node visit reads.
    pub node_bytes: u32,
    /// Bytes a triangle test reads.
    pub primitive_bytes: u32,
    /// Camera, shadow and reflected rays.
    pub rays: Vec<NodeReadRow>,
}

/// `canopy bench dispatch`.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct DispatchReport {
    /// Timed runs per measurement.
    pub repeats: u32,
    /// The copy bandwidth.
    pub copy: CopyReport,
    /// The chains: one workgroup with and without barriers, then the wide ones.
    pub chains: Vec<ChainReport>,
    /// The traversal's node reads (none with 0 triangles).
    pub node_reads: Option<NodeReadReport>,
}

/// The empty kernel's push constants (`glsl/bench/empty.comp`).
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct EmptyPush {
    /// A `u32` counter of the workgroups run, or 0: count nothing.
    pub counter_address: u64,
    /// Workgroups asked for (a folded grid holds a few more, which count nothing).
    pub group_count: u32,
    /// Padding to 8 bytes.
    pub pad: u32,
}

/// The compute copy's push constants (`glsl/prims/copy.comp`).
#[repr(C)]
#[derive(Clone, Copy, bytemuck::Pod, bytemuck::Zeroable)]
struct CopyPush {
    src_address: u64,
    dst_address: u64,
    vector_count: u32,
    pad: u32,
}

/// Runs the measurements, handing each part to `on_part` as it is done (for printing).
pub fn run(
    ctx: &Context,
    config: &DispatchConfig,
    mut on_part: impl FnMut(Part),
) -> Result<DispatchReport> {
    if config.chain == 0 || config.wide_groups == 0 || config.ray_side == 0 {
        return Err(Error::Invalid(
            "the chain, its workgroups and the rays need at least 1 each".into(),
        ));
    }
    let repeats = config.repeats.max(1);
    // The copy first: it also brings the GPU's clocks up for the chains.
    let copy = copy_bandwidth(ctx, config.copy_bytes, repeats)?;
    on_part(Part::Copy(&copy));
    let mut chains = Vec::new();
    for groups in [1, config.wide_groups] {
        for barriers in [true, false] {
            let chain = dispatch_chain(ctx, config.chain, groups, barriers, repeats)?;
            on_part(Part::Chain(&chain));
            chains.push(chain);
        }
    }
    let node_reads = (config.triangles > 0)
        .then(|| node_reads(ctx, config, repeats, copy.compute_bytes_per_s()))
        .transpose()?;
    if let Some(reads) = &node_reads {
        on_part(Part::NodeReads(reads));
    }
    Ok(DispatchReport {
        repeats,
        copy,
        chains,
        node_reads,
    })
}

/// A part of the report, as it is measured.
pub enum Part<'a> {
    /// The copy bandwidth.
    Copy(&'a CopyReport),
    /// One chain.
    Chain(&'a ChainReport),
    /// The traversal's node reads.
    NodeReads(&'a NodeReadReport),
}

/// Records `length` dispatches of `groups` workgroups of the empty kernel, each followed by a
/// compute->compute barrier when `barriers`.
fn record_chain(
    rec: &mut Recorder,
    pipeline: &Pipeline,
    push: &EmptyPush,
    (length, groups, barriers): (u32, u32, bool),
) -> crate::vk::Result<()> {
    for _ in 0..length {
        rec.dispatch(pipeline, push, groups)?;
        if barriers {
            rec.barrier_compute_to_compute();
        }
    }
    Ok(())
}

/// Times a chain, counts its work and the workgroups it runs.
fn dispatch_chain(
    ctx: &Context,
    length: u32,
    groups: u32,
    barriers: bool,
    repeats: u32,
) -> Result<ChainReport> {
    let pipeline = ctx.pipeline(&shaders::BENCH_EMPTY, WORKGROUP_SIZE, &[])?;
    let shape = (length, groups, barriers);
    let silent = EmptyPush {
        counter_address: 0,
        group_count: groups,
        pad: 0,
    };
    let time = time_runs(
        ctx,
        repeats,
        |_| Ok(()),
        |rec| record_chain(rec, &pipeline, &silent, shape),
    )?;
    let work = count_work(ctx, |rec| record_chain(rec, &pipeline, &silent, shape))?;
    let counter = ctx.create_buffer("bench workgroups run", 4, MemoryKind::Device)?;
    let counting = EmptyPush {
        counter_address: counter.address(),
        ..silent
    };
    ctx.submit_and_wait(|rec| {
        rec.fill(&counter, 0, 4, 0);
        rec.barrier_transfer_to_compute();
        record_chain(rec, &pipeline, &counting, shape)?;
        rec.barrier_compute_to_transfer();
        Ok(())
    })?;
    let workgroups_run = ctx.download::<u32>(&counter, 0, 1)?[0] as u64;
    let total_us = time.median_ms * 1e3;
    Ok(ChainReport {
        length,
        groups,
        workgroup_size: WORKGROUP_SIZE,
        barriers,
        work,
        workgroups_run,
        time,
        total_us,
        per_dispatch_us: total_us / length as f64,
    })
}

/// The copy bandwidths over `bytes` (rounded down to 16 bytes, at most a quarter of the
/// device-local memory), the compute copies checked at both ends.
fn copy_bandwidth(ctx: &Context, bytes: u64, repeats: u32) -> Result<CopyReport> {
    let bytes = bytes.min(ctx.caps().device_local_bytes / 4) & !15;
    if bytes == 0 {
        return Err(Error::Invalid("a copy of less than 16 bytes".into()));
    }
    let src = ctx.create_buffer("bench copy source", bytes, MemoryKind::Device)?;
    let dst = ctx.create_buffer("bench copy destination", bytes, MemoryKind::Device)?;
    ctx.submit_and_wait(|rec| {
        rec.fill(&src, 0, bytes, COPY_PATTERN);
        rec.barrier_transfer_to_compute();
        Ok(())
    })?;
    let per_second = |t: &Timing| 2.0 * bytes as f64 / (t.median_ms * 1e-3);
    let mut compute = Vec::new();
    for vectors_per_invocation in [1u32, 4] {
        ctx.submit_and_wait(|rec| {
            rec.fill(&dst, 0, bytes, 0);
            rec.barrier_transfer_to_compute();
            Ok(())
        })?;
        let time = compute_copy(ctx, &src, &dst, bytes, vectors_per_invocation, repeats)?;
        check_copy(ctx, &dst, bytes)?;
        compute.push(ComputeCopy {
            bytes_per_invocation: 16 * vectors_per_invocation,
            bytes_per_s: per_second(&time),
            time,
        });
    }
    let cmd_copy = time_runs(
        ctx,
        repeats,
        |_| Ok(()),
        |rec| {
            rec.copy_buffer(&src, 0, &dst, 0, bytes);
            rec.barrier_transfer_to_compute();
            Ok(())
        },
    )?;
    Ok(CopyReport {
        bytes,
        cmd_copy_bytes_per_s: per_second(&cmd_copy),
        cmd_copy,
        compute,
    })
}

/// Times `copy.comp` over `bytes`, `vectors_per_invocation` 16-byte vectors per invocation.
fn compute_copy(
    ctx: &Context,
    src: &Buffer,
    dst: &Buffer,
    bytes: u64,
    vectors_per_invocation: u32,
    repeats: u32,
) -> Result<Timing> {
    let pipeline = ctx.pipeline(
        &shaders::PRIMS_COPY,
        WORKGROUP_SIZE,
        &[("VECTORS_PER_INVOCATION", vectors_per_invocation)],
    )?;
    let vectors = u32::try_from(bytes / 16)
        .map_err(|_| Error::Invalid(format!("a copy of {bytes} bytes: 64 GiB at most")))?;
    let push = CopyPush {
        src_address: src.address(),
        dst_address: dst.address(),
        vector_count: vectors,
        pad: 0,
    };
    let groups = vectors.div_ceil(WORKGROUP_SIZE * vectors_per_invocation);
    Ok(time_runs(
        ctx,
        repeats,
        |_| Ok(()),
        |rec| {
            rec.dispatch(&pipeline, &push, groups)?;
            Ok(())
        },
    )?)
}

/// Checks the first and last 16 bytes of a copy's destination hold the source's pattern.
fn check_copy(ctx: &Context, dst: &Buffer, bytes: u64) -> Result<()> {
    // The copies' writes made visible to the readback (a barrier's first scope holds the
    // submissions before it).
    ctx.submit_and_wait(|rec| {
        rec.barrier_compute_to_transfer();
        Ok(())
    })?;
    for offset in [0, bytes - 16] {
        let words: Vec<u32> = ctx.download(dst, offset, 4)?;
        if words != [COPY_PATTERN; 4] {
            return Err(Error::Invalid(format!(
                "the compute copy wrote {words:x?} at byte {offset}, not the source's words"
            )));
        }
    }
    Ok(())
}

/// Builds the LBVH over the default scene and traces its rays, timed.
fn node_reads(
    ctx: &Context,
    config: &DispatchConfig,
    repeats: u32,
    copy_bytes_per_s: f64,
) -> Result<NodeReadReport> {
    let mesh = BenchMesh::default_scene(ctx, config.triangles)?;
    let size = StructureSize {
        triangles: mesh.triangle_count(),
        vertices: mesh.vertex_count(),
    };
    let mut built = StructureKind::Lbvh.create(ctx, &BuildParams::default(), size, 1)?;
    built.set_view(ctx, &camera_view(&mesh, config.ray_side))?;
    let (input, vertices) = (mesh.input(), mesh.vertex_count());
    submit_until_complete(ctx, &mut built, |rec, built| {
        built.record_build(rec, &input, vertices, 0)
    })?;
    let AnyStructure::Rays(structure) = &built else {
        return Err(Error::Invalid("the LBVH is built over triangles".into()));
    };
    let tree_bytes = built.tree_bytes();
    let traversable = structure.traversable(&input);
    let fetch = traversable
        .fetch_bytes()
        .ok_or_else(|| Error::Invalid("the LBVH's traversal reads no fixed node size".into()))?;
    let tracer = Tracer::new(ctx)?;
    let mut sets = RaySets::new(ctx, &mesh, config.ray_side, false)?;
    let traced = sets.trace(ctx, &tracer, &mesh, traversable.as_ref(), repeats)?;
    let rows = traced
        .into_iter()
        .filter_map(|report| {
            let time = report.time?;
            let work = report.work;
            let rays_per_s = work.rays as f64 / (time.median_ms * 1e-3);
            let node_bytes_per_s = work.mean_nodes * fetch.node as f64 * rays_per_s;
            let fetched_bytes_per_s =
                node_bytes_per_s + work.mean_primitives * fetch.primitive as f64 * rays_per_s;
            Some(NodeReadRow {
                rays: report.rays,
                count: work.rays as u32,
                nodes_per_ray: work.mean_nodes,
                primitives_per_ray: work.mean_primitives,
                time,
                rays_per_s,
                node_bytes_per_s,
                fetched_bytes_per_s,
                node_fraction_of_copy: node_bytes_per_s / copy_bytes_per_s,
            })
        })
        .collect();
    Ok(NodeReadReport {
        triangles: mesh.triangle_count(),
        tree_bytes,
        node_bytes: fetch.node,
        primitive_bytes: fetch.primitive,
        rays: rows,
    })
}
