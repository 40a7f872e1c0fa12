//! Sizing dispatches from counts that live on the GPU: a one-invocation kernel
//! (`glsl/prims/prepare_indirect.comp`) turns a u32 counter into a `VkDispatchIndirectCommand`.

use super::Groups;
use crate::shaders;
use crate::vk::Count;
use crate::vk::{Buffer, Context, MemoryKind, Pipeline, Recorder, Result};
use std::sync::Arc;

/// Bytes between argument slots (a `VkDispatchIndirectCommand` is 12 bytes).
pub const SLOT_BYTES: u64 = 16;

/// Push constants of `prepare_indirect.comp`.
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct PreparePush {
    /// Address of the u32 count.
    pub count_address: u64,
    /// Address of the dispatch arguments written.
    pub args_address: u64,
    /// Address of a u32 that receives a count clamped to `max_count` (0: none).
    pub overflow_address: u64,
    /// Elements each workgroup of the consumer handles.
    pub elements_per_group: u32,
    /// Smallest workgroup count written.
    pub min_groups: u32,
    /// Largest count the consumer's buffers hold.
    pub max_count: u32,
    /// The device's per-dimension workgroup count limit.
    pub max_groups_per_dim: u32,
}

/// A buffer of indirect dispatch argument slots and the kernel that fills them.
pub struct IndirectArgs {
    pipeline: Arc<Pipeline>,
    args: Buffer,
    slots: u32,
}

impl IndirectArgs {
    /// `slots` argument slots, named after their user.
    pub fn new(ctx: &Context, name: &str, slots: u32) -> Result<Self> {
        Ok(Self {
            pipeline: ctx.pipeline(
                &shaders::PRIMS_PREPARE_INDIRECT,
                32.min(ctx.caps().max_workgroup_size),
                &[],
            )?,
            args: ctx.create_buffer(
                &format!("{name} indirect args"),
                SLOT_BYTES * slots as u64,
                MemoryKind::Device,
            )?,
            slots,
        })
    }

    /// The argument buffer (slot `i` at byte `i * SLOT_BYTES`).
    pub fn buffer(&self) -> &Buffer {
        &self.args
    }

    /// Records the kernel writing slot `slot` for `ceil(count / elements_per_group)` groups
    /// (at least `min_groups`, folded into the device's grid), then the barrier that makes it
    /// visible to indirect dispatch. A device limit error when `max_count` elements would not
    /// fold into a grid.
    pub fn record(
        &self,
        rec: &mut Recorder,
        slot: u32,
        count_address: u64,
        max_count: u32,
        elements_per_group: u32,
        min_groups: u32,
    ) -> Result<()> {
        let sizing = (count_address, max_count, elements_per_group, min_groups);
        self.record_unfenced(rec, slot, sizing)?;
        rec.barrier_compute_to_indirect();
        Ok(())
    }

    /// As [`Self::record`] with `(count_address, max_count, elements_per_group, min_groups)`,
    /// without the barrier: for callers that size several dispatches, or overlap the sizing
    /// with other work, and then record [`Recorder::barrier_compute_to_indirect`] themselves.
    pub fn record_unfenced(
        &self,
        rec: &mut Recorder,
        slot: u32,
        (count_address, max_count, elements_per_group, min_groups): (u64, u32, u32, u32),
    ) -> Result<()> {
        assert!(slot < self.slots, "indirect slot {slot} of {}", self.slots);
        rec.context()
            .dispatch_grid(max_count.div_ceil(elements_per_group).max(min_groups))?;
        let push = PreparePush {
            count_address,
            args_address: self.args.address() + slot as u64 * SLOT_BYTES,
            overflow_address: 0,
            elements_per_group,
            min_groups,
            max_count,
            max_groups_per_dim: rec.context().caps().max_workgroup_count,
        };
        rec.dispatch(&self.pipeline, &push, 1)?;
        Ok(())
    }

    /// Sizes a dispatch over `count` elements: direct for host counts, else through slot `slot`.
    pub(crate) fn groups_for<'s>(
        &'s self,
        rec: &mut Recorder,
        slot: u32,
        count: &Count,
        elements_per_group: u32,
        min_groups: u32,
    ) -> Result<Groups<'s>> {
        Ok(match *count {
            Count::Host(n) => Groups::Direct(n.div_ceil(elements_per_group).max(min_groups)),
            Count::Device { max, .. } => {
                self.record(
                    rec,
                    slot,
                    count.push().0,
                    max,
                    elements_per_group,
                    min_groups,
                )?;
                Groups::Indirect(&self.args, slot as u64 * SLOT_BYTES)
            }
        })
    }
}
