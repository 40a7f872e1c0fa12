//! Command recording: dispatches (direct and indirect), named barriers, copies and fills,
//! timestamp stages, and blocking submission for canopy's own device.

use super::buffer::Buffer;
use super::census::WorkCensus;
use super::context::Context;
use super::error::{Error, Result, VkContext};
use super::pipeline::{PUSH_CONSTANT_BYTES, Pipeline};
use super::profiler::Profiler;
use ash::vk;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// How long a blocking submission may run before canopy reports the GPU as hung, unless
/// [`Context::set_fence_timeout`] or `CANOPY_FENCE_TIMEOUT` says otherwise.
pub const SUBMIT_TIMEOUT: Duration = Duration::from_secs(120);

/// A fence timeout as `--fence-timeout` and `CANOPY_FENCE_TIMEOUT` take it: seconds (`2.5`),
/// or `0` or `none` for no limit (`None`).
pub fn parse_fence_timeout(text: &str) -> std::result::Result<Option<Duration>, String> {
    let text = text.trim();
    if text.eq_ignore_ascii_case("none") {
        return Ok(None);
    }
    match text.parse::<f64>() {
        Ok(0.0) => Ok(None),
        Ok(s) if s.is_finite() && s > 0.0 && s < 1e9 => Ok(Some(Duration::from_secs_f64(s))),
        _ => Err(format!(
            "'{text}': expected seconds (a positive number), or 0 or none for no limit"
        )),
    }
}

/// Folds `groups` workgroups into a grid of at most `max_per_dim` per dimension: `[groups, 1,
/// 1]` when it fits, else `x = max_per_dim` and as many rows `y` (then layers `z`) as needed.
/// Kernels flatten it back with `flat_workgroup_id()` (glsl/common/prelude.glsl, the same
/// folding as `dispatch_grid` in glsl/common/dispatch.glsl) and skip the few groups past the
/// end. `None` when even a 3D grid cannot hold them. Example: 70,000 groups with a limit of
/// 65,535 -> `[65535, 2, 1]`; with a limit of 64 -> `[64, 64, 18]`.
pub fn grid_for(groups: u32, max_per_dim: u32) -> Option<[u32; 3]> {
    let max = max_per_dim.max(1) as u64;
    let groups = groups as u64;
    let x = groups.min(max);
    if x == 0 {
        return Some([0, 1, 1]);
    }
    let y = groups.div_ceil(x).min(max);
    let z = groups.div_ceil(x * y);
    (z <= max).then_some([x as u32, y as u32, z as u32])
}

impl Context {
    /// The folded grid of `groups` workgroups on this device ([`grid_for`]), or the device
    /// limit error naming what needed it.
    pub fn dispatch_grid(&self, groups: u32) -> Result<[u32; 3]> {
        let caps = self.caps();
        grid_for(groups, caps.max_workgroup_count).ok_or_else(|| Error::DeviceLimit {
            device: caps.name.clone(),
            limit: "workgroups per dispatch (maxComputeWorkGroupCount cubed)",
            allowed: (caps.max_workgroup_count as u64).pow(3),
            needed: groups as u64,
        })
    }
}

/// Records one global memory barrier from `src` (stages, accesses) to `dst`.
fn record_memory_barrier(
    device: &ash::Device,
    cmd: vk::CommandBuffer,
    src: (vk::PipelineStageFlags2, vk::AccessFlags2),
    dst: (vk::PipelineStageFlags2, vk::AccessFlags2),
) {
    let barrier = [vk::MemoryBarrier2::default()
        .src_stage_mask(src.0)
        .src_access_mask(src.1)
        .dst_stage_mask(dst.0)
        .dst_access_mask(dst.1)];
    let info = vk::DependencyInfo::default().memory_barriers(&barrier);
    unsafe { device.cmd_pipeline_barrier2(cmd, &info) };
}

/// What a recording is observed with: stage timestamps, work counters, or neither.
#[derive(Default)]
pub struct Instruments<'a> {
    /// Writes stage timestamps (reset when recording starts).
    pub profiler: Option<&'a mut Profiler>,
    /// Counts dispatches, dispatches that did work and barriers (reset when recording starts).
    pub census: Option<&'a mut WorkCensus>,
}

/// Records canopy's work into a command buffer: canopy's own, or one an application passes.
pub struct Recorder<'a> {
    ctx: &'a Context,
    cmd: vk::CommandBuffer,
    profiler: Option<&'a mut Profiler>,
    census: Option<&'a mut WorkCensus>,
}

impl<'a> Recorder<'a> {
    /// Records into `cmd`, a command buffer in the recording state (the embedding path).
    pub fn new(ctx: &'a Context, cmd: vk::CommandBuffer) -> Self {
        Self::instrumented(ctx, cmd, Instruments::default())
    }

    /// Records into `cmd` and writes stage timestamps into `profiler` (reset here).
    pub fn with_profiler(
        ctx: &'a Context,
        cmd: vk::CommandBuffer,
        profiler: &'a mut Profiler,
    ) -> Self {
        Self::instrumented(
            ctx,
            cmd,
            Instruments {
                profiler: Some(profiler),
                census: None,
            },
        )
    }

    /// Records into `cmd` observed by `instruments` (each reset here).
    pub fn instrumented(
        ctx: &'a Context,
        cmd: vk::CommandBuffer,
        instruments: Instruments<'a>,
    ) -> Self {
        let Instruments {
            mut profiler,
            mut census,
        } = instruments;
        if let Some(p) = profiler.as_deref_mut() {
            p.reset(ctx, cmd);
        }
        if let Some(c) = census.as_deref_mut() {
            c.reset();
        }
        Self {
            ctx,
            cmd,
            profiler,
            census,
        }
    }

    /// The context recorded for.
    pub fn context(&self) -> &'a Context {
        self.ctx
    }

    /// The command buffer recorded into.
    pub fn command_buffer(&self) -> vk::CommandBuffer {
        self.cmd
    }

    fn device(&self) -> &ash::Device {
        &self.ctx.shared.device
    }

    fn bind<P: bytemuck::Pod>(&self, pipeline: &Pipeline, push: &P) {
        let bytes = bytemuck::bytes_of(push);
        assert!(
            bytes.len() as u32 <= PUSH_CONSTANT_BYTES,
            "push constants of {} exceed {PUSH_CONSTANT_BYTES} bytes",
            pipeline.name
        );
        unsafe {
            self.device()
                .cmd_bind_pipeline(self.cmd, vk::PipelineBindPoint::COMPUTE, pipeline.raw);
            if !bytes.is_empty() {
                self.device().cmd_push_constants(
                    self.cmd,
                    pipeline.layout,
                    vk::ShaderStageFlags::COMPUTE,
                    0,
                    bytes,
                );
            }
        }
    }

    /// Dispatches `groups` workgroups, folded into a 2D or 3D grid when above the device's
    /// per-dimension limit; an error when even that cannot hold them.
    pub fn dispatch<P: bytemuck::Pod>(
        &mut self,
        pipeline: &Pipeline,
        push: &P,
        groups: u32,
    ) -> Result<()> {
        if groups == 0 {
            return Ok(());
        }
        let [x, y, z] = self.ctx.dispatch_grid(groups)?;
        self.bind(pipeline, push);
        unsafe { self.device().cmd_dispatch(self.cmd, x, y, z) };
        if let Some(census) = self.census.as_deref_mut() {
            census.count_dispatch();
        }
        Ok(())
    }

    /// Dispatches with the `VkDispatchIndirectCommand` at `offset` in `args`, written on the GPU
    /// (see `prims::indirect`).
    pub fn dispatch_indirect<P: bytemuck::Pod>(
        &mut self,
        pipeline: &Pipeline,
        push: &P,
        args: &Buffer,
        offset: u64,
    ) {
        self.bind(pipeline, push);
        unsafe {
            self.device()
                .cmd_dispatch_indirect(self.cmd, args.raw(), offset)
        };
        self.save_indirect_args(args, offset);
    }

    /// Records `body` so that its dispatches are skipped on the GPU when the `u32` at `offset`
    /// in `predicate` is zero as the GPU reaches them, where the device can
    /// ([`DeviceCaps::conditional_rendering`](super::DeviceCaps::conditional_rendering)): a
    /// GPU-driven loop's rounds past its last non-empty one then cost no dispatch. Elsewhere,
    /// and while a census counts the work (it reads every indirect dispatch's arguments), the
    /// dispatches run as recorded, so `body` must be right either way (an empty round
    /// dispatching zero workgroups). Barriers and copies in `body` always run. The predicate's
    /// writer must be ordered before with [`Self::barrier_compute_to_indirect`].
    pub fn skip_if_zero<T>(
        &mut self,
        predicate: &Buffer,
        offset: u64,
        body: impl FnOnce(&mut Self) -> Result<T>,
    ) -> Result<T> {
        let conditional = match (&self.ctx.shared.conditional_rendering, &self.census) {
            (Some(conditional), None) => conditional.clone(),
            _ => return body(self),
        };
        let begin = vk::ConditionalRenderingBeginInfoEXT::default()
            .buffer(predicate.raw())
            .offset(offset);
        unsafe { (conditional.fp().cmd_begin_conditional_rendering_ext)(self.cmd, &begin) };
        let result = body(self);
        unsafe { (conditional.fp().cmd_end_conditional_rendering_ext)(self.cmd) };
        result
    }

    /// With a census: copies the arguments an indirect dispatch read to host memory, after the
    /// compute writes that produced them and before any later write to them.
    fn save_indirect_args(&mut self, args: &Buffer, offset: u64) {
        let Some(census) = self.census.as_deref_mut() else {
            return;
        };
        let Some((saved, saved_offset)) = census.count_indirect() else {
            return;
        };
        let (saved, cmd, device) = (saved.raw(), self.cmd, &self.ctx.shared.device);
        let barrier = |src, dst| record_memory_barrier(device, cmd, src, dst);
        barrier(
            Self::COMPUTE_WRITE,
            (
                vk::PipelineStageFlags2::ALL_TRANSFER,
                vk::AccessFlags2::TRANSFER_READ,
            ),
        );
        let region = [vk::BufferCopy::default()
            .src_offset(offset)
            .dst_offset(saved_offset)
            .size(12)];
        unsafe { device.cmd_copy_buffer(cmd, args.raw(), saved, &region) };
        barrier(
            (
                vk::PipelineStageFlags2::ALL_TRANSFER,
                vk::AccessFlags2::TRANSFER_READ,
            ),
            (
                vk::PipelineStageFlags2::COMPUTE_SHADER | vk::PipelineStageFlags2::ALL_TRANSFER,
                vk::AccessFlags2::SHADER_STORAGE_WRITE | vk::AccessFlags2::TRANSFER_WRITE,
            ),
        );
    }

    fn memory_barrier(
        &mut self,
        src: (vk::PipelineStageFlags2, vk::AccessFlags2),
        dst: (vk::PipelineStageFlags2, vk::AccessFlags2),
    ) {
        record_memory_barrier(self.device(), self.cmd, src, dst);
        if let Some(census) = self.census.as_deref_mut() {
            census.count_barrier();
        }
    }

    const COMPUTE_WRITE: (vk::PipelineStageFlags2, vk::AccessFlags2) = (
        vk::PipelineStageFlags2::COMPUTE_SHADER,
        vk::AccessFlags2::SHADER_STORAGE_WRITE,
    );
    const COMPUTE_READ_WRITE: (vk::PipelineStageFlags2, vk::AccessFlags2) = (
        vk::PipelineStageFlags2::COMPUTE_SHADER,
        vk::AccessFlags2::from_raw(
            vk::AccessFlags2::SHADER_STORAGE_READ.as_raw()
                | vk::AccessFlags2::SHADER_STORAGE_WRITE.as_raw(),
        ),
    );
    const TRANSFER_WRITE: (vk::PipelineStageFlags2, vk::AccessFlags2) = (
        vk::PipelineStageFlags2::ALL_TRANSFER,
        vk::AccessFlags2::TRANSFER_WRITE,
    );
    const TRANSFER_READ_WRITE: (vk::PipelineStageFlags2, vk::AccessFlags2) = (
        vk::PipelineStageFlags2::ALL_TRANSFER,
        vk::AccessFlags2::from_raw(
            vk::AccessFlags2::TRANSFER_READ.as_raw() | vk::AccessFlags2::TRANSFER_WRITE.as_raw(),
        ),
    );

    /// Transfer writes (a copy into a readback buffer) become visible to host reads after
    /// the submission's fence.
    pub fn barrier_transfer_to_host(&mut self) {
        self.memory_barrier(
            Self::TRANSFER_WRITE,
            (vk::PipelineStageFlags2::HOST, vk::AccessFlags2::HOST_READ),
        );
    }

    /// Compute writes become visible to later compute reads and writes.
    pub fn barrier_compute_to_compute(&mut self) {
        self.memory_barrier(Self::COMPUTE_WRITE, Self::COMPUTE_READ_WRITE);
    }

    /// Compute writes become visible to later compute reads and writes, and to host reads
    /// after the submission's fence (a status written straight into a readback buffer).
    pub fn barrier_compute_to_compute_and_host(&mut self) {
        let (compute, compute_access) = Self::COMPUTE_READ_WRITE;
        self.memory_barrier(
            Self::COMPUTE_WRITE,
            (
                compute | vk::PipelineStageFlags2::HOST,
                compute_access | vk::AccessFlags2::HOST_READ,
            ),
        );
    }

    /// Compute writes become visible to later indirect-argument reads (and predicates of
    /// [`Self::skip_if_zero`]) and compute work.
    pub fn barrier_compute_to_indirect(&mut self) {
        let (mut stages, mut access) = (
            vk::PipelineStageFlags2::DRAW_INDIRECT | vk::PipelineStageFlags2::COMPUTE_SHADER,
            vk::AccessFlags2::INDIRECT_COMMAND_READ
                | vk::AccessFlags2::SHADER_STORAGE_READ
                | vk::AccessFlags2::SHADER_STORAGE_WRITE,
        );
        if self.ctx.caps().conditional_rendering {
            stages |= vk::PipelineStageFlags2::CONDITIONAL_RENDERING_EXT;
            access |= vk::AccessFlags2::CONDITIONAL_RENDERING_READ_EXT;
        }
        self.memory_barrier(Self::COMPUTE_WRITE, (stages, access));
    }

    /// Transfer writes (fills, copies, uploads) become visible to compute.
    pub fn barrier_transfer_to_compute(&mut self) {
        self.memory_barrier(Self::TRANSFER_WRITE, Self::COMPUTE_READ_WRITE);
    }

    /// Everything recorded before, in this or earlier submissions, happens before everything
    /// recorded after: for work that reuses the buffers of a submission still in flight.
    pub fn barrier_after_earlier_work(&mut self) {
        let all = vk::PipelineStageFlags2::ALL_COMMANDS;
        self.memory_barrier(
            (all, vk::AccessFlags2::MEMORY_WRITE),
            (
                all,
                vk::AccessFlags2::MEMORY_READ | vk::AccessFlags2::MEMORY_WRITE,
            ),
        );
    }

    /// Compute writes become visible to transfers (readback copies), and transfers wait for
    /// compute reads of the buffers they overwrite.
    pub fn barrier_compute_to_transfer(&mut self) {
        self.memory_barrier(
            (
                vk::PipelineStageFlags2::COMPUTE_SHADER,
                vk::AccessFlags2::SHADER_STORAGE_WRITE | vk::AccessFlags2::SHADER_STORAGE_READ,
            ),
            Self::TRANSFER_READ_WRITE,
        );
    }

    /// Fills `size` bytes at `offset` (multiples of 4) with a repeated 32-bit `value`.
    pub fn fill(&mut self, buffer: &Buffer, offset: u64, size: u64, value: u32) {
        if size > 0 {
            unsafe {
                self.device()
                    .cmd_fill_buffer(self.cmd, buffer.raw(), offset, size, value)
            };
        }
    }

    /// Writes `data` (at most 65536 bytes, a multiple of 4) at `offset` (a multiple of 4)
    /// in the command stream: ordered with the recorded work like a transfer.
    pub fn update_buffer<T: bytemuck::Pod>(&mut self, buffer: &Buffer, offset: u64, data: &[T]) {
        let bytes: &[u8] = bytemuck::cast_slice(data);
        assert!(bytes.len() <= 65536 && bytes.len().is_multiple_of(4) && offset.is_multiple_of(4));
        if !bytes.is_empty() {
            unsafe {
                self.device()
                    .cmd_update_buffer(self.cmd, buffer.raw(), offset, bytes)
            };
        }
    }

    /// Copies `size` bytes between buffers.
    pub fn copy_buffer(
        &mut self,
        src: &Buffer,
        src_offset: u64,
        dst: &Buffer,
        dst_offset: u64,
        size: u64,
    ) {
        if size == 0 {
            return;
        }
        let region = [vk::BufferCopy::default()
            .src_offset(src_offset)
            .dst_offset(dst_offset)
            .size(size)];
        unsafe {
            self.device()
                .cmd_copy_buffer(self.cmd, src.raw(), dst.raw(), &region)
        };
    }

    /// Starts a named timestamp stage (no-op without a profiler).
    pub fn begin_stage(&mut self, name: &str) {
        if let Some(p) = self.profiler.as_deref_mut() {
            p.begin(self.ctx, self.cmd, name);
        }
    }

    /// Ends the innermost open stage.
    pub fn end_stage(&mut self) {
        if let Some(p) = self.profiler.as_deref_mut() {
            p.end(self.ctx, self.cmd);
        }
    }
}

impl Context {
    /// Records with `record` into a fresh command buffer, submits it and waits, reporting a
    /// GPU that does not finish within [`SUBMIT_TIMEOUT`] as an error.
    pub fn submit_and_wait(&self, record: impl FnOnce(&mut Recorder) -> Result<()>) -> Result<()> {
        self.submit_inner(None, record)
    }

    /// As [`Context::submit_and_wait`], with stage timestamps written into `profiler`.
    pub fn submit_profiled(
        &self,
        profiler: &mut Profiler,
        record: impl FnOnce(&mut Recorder) -> Result<()>,
    ) -> Result<()> {
        self.submit_inner(Some(profiler), record)?;
        Ok(())
    }

    fn submit_inner(
        &self,
        profiler: Option<&mut Profiler>,
        record: impl FnOnce(&mut Recorder) -> Result<()>,
    ) -> Result<()> {
        self.submit(profiler, record)?.wait()
    }

    /// Records with `record` into a fresh command buffer (stage timestamps into `profiler`, if
    /// given) and submits it without waiting: the CPU can prepare the next submission while
    /// the GPU runs this one. Submissions run in queue order; work that reuses buffers of an
    /// earlier submission starts with the barriers that order it after that one.
    pub fn submit(
        &self,
        profiler: Option<&mut Profiler>,
        record: impl FnOnce(&mut Recorder) -> Result<()>,
    ) -> Result<Submission> {
        self.submit_instrumented(
            Instruments {
                profiler,
                census: None,
            },
            record,
        )
    }

    /// As [`Context::submit`], observed by `instruments` (stage timestamps, work counters).
    pub fn submit_instrumented(
        &self,
        instruments: Instruments,
        record: impl FnOnce(&mut Recorder) -> Result<()>,
    ) -> Result<Submission> {
        let device = &self.shared.device;
        let pool = self.shared.command_pool.lock().unwrap();
        let cmd = unsafe {
            device.allocate_command_buffers(
                &vk::CommandBufferAllocateInfo::default()
                    .command_pool(*pool)
                    .level(vk::CommandBufferLevel::PRIMARY)
                    .command_buffer_count(1),
            )
        }
        .call("vkAllocateCommandBuffers")?[0];
        let fence = unsafe { device.create_fence(&vk::FenceCreateInfo::default(), None) }
            .call("vkCreateFence")?;
        unsafe {
            device.begin_command_buffer(
                cmd,
                &vk::CommandBufferBeginInfo::default()
                    .flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT),
            )
        }
        .call("vkBeginCommandBuffer")?;
        let mut rec = Recorder::instrumented(self, cmd, instruments);
        let recorded = record(&mut rec);
        unsafe { device.end_command_buffer(cmd) }.call("vkEndCommandBuffer")?;
        let submitted = recorded.and_then(|()| {
            let cmds = [cmd];
            let submit = [vk::SubmitInfo::default().command_buffers(&cmds)];
            unsafe { device.queue_submit(self.shared.queue, &submit, fence) }.call("vkQueueSubmit")
        });
        if let Err(e) = submitted {
            unsafe {
                device.free_command_buffers(*pool, &[cmd]);
                device.destroy_fence(fence, None);
            }
            return Err(e);
        }
        Ok(Submission {
            ctx: self.clone(),
            cmd,
            fence,
            pending: true,
        })
    }
}

/// GPU work submitted by [`Context::submit`] and not yet waited for. Dropping it waits.
#[must_use = "wait for the submission (dropping it waits too, ignoring errors)"]
pub struct Submission {
    ctx: Context,
    cmd: vk::CommandBuffer,
    fence: vk::Fence,
    pending: bool,
}

impl Submission {
    /// Waits until the GPU has finished this work, reporting a GPU that does not finish within
    /// the context's fence timeout ([`Context::set_fence_timeout`], [`SUBMIT_TIMEOUT`] by
    /// default) as [`Error::GpuTimeout`]: the command buffer, and every object of the
    /// context from then on, is then kept (leaked), as the GPU may still use it.
    pub fn wait(mut self) -> Result<()> {
        self.finish()
    }

    fn finish(&mut self) -> Result<()> {
        if !self.pending {
            return Ok(());
        }
        self.pending = false;
        let device = self.ctx.device();
        let timeout = self.ctx.shared.fence_timeout.load(Ordering::Relaxed);
        let waited = match unsafe { device.wait_for_fences(&[self.fence], true, timeout) } {
            Ok(()) => Ok(()),
            Err(vk::Result::TIMEOUT) => {
                // The work may still run: nothing it uses may be destroyed, so the context
                // leaks its objects from now on (see Context::timed_out).
                self.ctx.shared.timed_out.store(true, Ordering::SeqCst);
                log::error!(
                    "GPU work did not finish within the fence timeout: the context's Vulkan \
                     objects are kept (leaked) from now on, as the GPU may still use them"
                );
                Err(Error::GpuTimeout {
                    seconds: Duration::from_nanos(timeout).as_secs_f64(),
                })
            }
            Err(result) => Err(Error::Vulkan {
                call: "vkWaitForFences",
                result,
            }),
        };
        if waited.is_ok() {
            let pool = self.ctx.shared.command_pool.lock().unwrap();
            unsafe {
                device.free_command_buffers(*pool, &[self.cmd]);
                device.destroy_fence(self.fence, None);
            }
        }
        waited
    }
}

impl Drop for Submission {
    fn drop(&mut self) {
        if let Err(e) = self.finish() {
            log::error!("a dropped submission failed: {e}");
        }
    }
}
