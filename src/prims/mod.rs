//! GPU primitives: the building blocks every structure builder records.
//!
//! Each primitive is an object created once for a maximum element count (it owns its scratch
//! memory, sized then; see each type's `SCRATCH_BYTES_PER_ELEMENT`) and recorded any number of
//! times into a [`Recorder`]. Element counts are either known on the host
//! ([`Count::Host`]) or produced by earlier GPU work ([`Count::Device`]), and they read and
//! write typed views of buffers ([`crate::vk::Slice`]); in the latter case the
//! primitive sizes its dispatches on the GPU with [`indirect::IndirectArgs`] and the CPU never
//! reads the count. Every kernel is subgroup-size agnostic and has a CPU reference in
//! [`cpu`].

pub mod compact;
pub mod cpu;
pub mod indirect;
pub mod multisplit;
pub mod radix_sort;
pub mod reduce;
pub mod scan;
pub mod segmented_reduce;

use crate::vk::{Buffer, Context, Count, Error, Recorder, Result};

/// Default invocations per workgroup of the primitives.
pub const WORKGROUP_SIZE: u32 = 256;

/// Checks a count against a primitive's capacity: zero and oversized host counts are errors.
pub(crate) fn check_count(what: &str, count: &Count, capacity: u32) -> Result<()> {
    if let Count::Host(0) = count {
        return Err(Error::InvalidInput(format!("{what}: zero-length input")));
    }
    if count.max() > capacity {
        return Err(Error::InvalidInput(format!(
            "{what}: {} elements exceed the capacity of {capacity} this primitive was created for",
            count.max()
        )));
    }
    Ok(())
}

/// The scratch of a single-pass kernel with decoupled look-back over `tiles` tiles
/// (`glsl/common/lookback.glsl`): a ticket, a count of the tiles finished and one 8-byte
/// descriptor per tile. It is zero when created, and every use leaves it zero (its last tile
/// resets it), so no fill runs between uses.
pub(crate) fn lookback_scratch(ctx: &Context, name: &str, tiles: u32) -> Result<Buffer> {
    ctx.create_buffer_with(name, &vec![0u32; 2 + 2 * tiles.max(1) as usize])
}

/// How a dispatch is sized: known when it is recorded, or written on the GPU by
/// [`indirect::IndirectArgs`] from a count that lives there.
#[derive(Clone, Copy, Debug)]
pub enum Groups<'a> {
    /// This many workgroups.
    Direct(u32),
    /// A `VkDispatchIndirectCommand` in this buffer at this byte offset.
    Indirect(&'a Buffer, u64),
}

impl Recorder<'_> {
    pub(crate) fn dispatch_groups<P: bytemuck::Pod>(
        &mut self,
        pipeline: &crate::vk::Pipeline,
        push: &P,
        groups: &Groups,
    ) -> Result<()> {
        match *groups {
            Groups::Direct(n) => self.dispatch(pipeline, push, n),
            Groups::Indirect(buffer, offset) => {
                self.dispatch_indirect(pipeline, push, buffer, offset);
                Ok(())
            }
        }
    }
}
