//! Work counters of a recording that need no GPU timer (DESIGN.md rule 8): dispatches recorded,
//! dispatches that did work and barriers. They are the same on every device, so they judge a
//! change where no GPU is at hand.
//!
//! Direct dispatches are known at recording (an empty one is not recorded at all). Whether an
//! indirect dispatch did work is known only on the GPU: with a census attached, the recorder
//! copies each indirect dispatch's arguments into host memory right after the dispatch (with
//! the barriers that copy needs, which the census does not count), and
//! [`WorkCensus::counts`] reads them once the submission has completed. The copies change
//! the timing, so a census belongs to counting runs, not to timed ones.

use super::buffer::{Buffer, MemoryKind};
use super::context::Context;
use super::error::Result;

/// Bytes of one saved `VkDispatchIndirectCommand` slot.
const SLOT_BYTES: u64 = 16;

/// What one recording did, as counted by a [`WorkCensus`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct WorkCounts {
    /// Dispatches recorded (direct and indirect).
    pub dispatches: u32,
    /// Of those, indirect dispatches.
    pub indirect_dispatches: u32,
    /// Dispatches that ran at least one workgroup (`None` when more indirect dispatches were
    /// recorded than the census holds).
    pub dispatches_with_work: Option<u32>,
    /// Pipeline barriers recorded (those of the census itself excluded).
    pub barriers: u32,
}

/// Counts the work of one recording at a time; reused across recordings.
pub struct WorkCensus {
    readback: Buffer,
    capacity: u32,
    dispatches: u32,
    barriers: u32,
    /// Indirect dispatches recorded, saved or not.
    indirect: u32,
}

impl WorkCensus {
    /// A census that saves the arguments of up to `max_indirect` indirect dispatches.
    pub fn new(ctx: &Context, max_indirect: u32) -> Result<Self> {
        Ok(Self {
            readback: ctx.create_buffer(
                "work census indirect arguments",
                SLOT_BYTES * max_indirect.max(1) as u64,
                MemoryKind::Readback,
            )?,
            capacity: max_indirect,
            dispatches: 0,
            barriers: 0,
            indirect: 0,
        })
    }

    pub(crate) fn reset(&mut self) {
        self.dispatches = 0;
        self.barriers = 0;
        self.indirect = 0;
    }

    pub(crate) fn count_dispatch(&mut self) {
        self.dispatches += 1;
    }

    pub(crate) fn count_barrier(&mut self) {
        self.barriers += 1;
    }

    /// Counts an indirect dispatch; returns the readback buffer and offset its arguments are
    /// to be copied to, if there is room.
    pub(crate) fn count_indirect(&mut self) -> Option<(&Buffer, u64)> {
        self.dispatches += 1;
        let slot = self.indirect;
        self.indirect += 1;
        (slot < self.capacity).then_some((&self.readback, slot as u64 * SLOT_BYTES))
    }

    /// The counts of the last recording; valid once its submission has completed.
    pub fn counts(&self) -> WorkCounts {
        let saved = self.indirect.min(self.capacity) as usize;
        let bytes = self.readback.mapped().expect("readback buffers are mapped");
        let args: &[[u32; 4]] = bytemuck::cast_slice(&bytes[..saved * SLOT_BYTES as usize]);
        let empty_indirect = args.iter().filter(|a| a[..3].contains(&0)).count() as u32;
        WorkCounts {
            dispatches: self.dispatches,
            indirect_dispatches: self.indirect,
            dispatches_with_work: (self.indirect <= self.capacity)
                .then(|| self.dispatches - empty_indirect),
            barriers: self.barriers,
        }
    }
}
