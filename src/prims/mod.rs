//! GPU primitives: the building blocks every structure builder records.
//!
//! Each primitive is an object created once for a maximum element count (it owns its scratch
//! memory, sized then; see each type's `SCRATCH_BYTES_PER_ELEMENT`) and recorded any number of
//! times into a [`Recorder`]. Element counts are either known on the host
//! ([`Count::Host`]) or produced by earlier GPU work ([`Count::Device`]); in the latter case the
//! primitive sizes its dispatches on the GPU with [`indirect::IndirectArgs`] and the CPU never
//! reads the count. Every kernel is subgroup-size agnostic and has a CPU reference in
//! [`crate::cpu::prims`].

pub mod compact;
pub mod indirect;
pub mod multisplit;
pub mod radix_sort;
pub mod reduce;
pub mod scan;
pub mod segmented_reduce;

use crate::vk::{Buffer, Error, Recorder, Result};

/// Default invocations per workgroup of the primitives.
pub const WORKGROUP_SIZE: u32 = 256;

/// How many elements a primitive works on.
#[derive(Clone, Copy, Debug)]
pub enum Count<'a> {
    /// Known on the host when recording.
    Host(u32),
    /// A u32 in device memory written by earlier GPU work, at most `max`.
    Device {
        /// Buffer holding the count.
        buffer: &'a Buffer,
        /// Byte offset of the count.
        offset: u64,
        /// Upper bound the caller guarantees; larger counts are clamped to it.
        max: u32,
    },
}

impl Count<'_> {
    /// The largest count this may be.
    pub fn max(&self) -> u32 {
        match *self {
            Count::Host(n) => n,
            Count::Device { max, .. } => max,
        }
    }

    /// (device address of the count or 0, host count) as kernels take them.
    pub(crate) fn push(&self) -> (u64, u32) {
        match *self {
            Count::Host(n) => (0, n),
            Count::Device { buffer, offset, .. } => (buffer.address() + offset, 0),
        }
    }
}

/// A typed view of part of a device buffer: `len` elements of `T` from byte `offset`.
#[derive(Debug)]
pub struct Slice<'a, T> {
    /// The buffer.
    pub buffer: &'a Buffer,
    /// Byte offset of the first element.
    pub offset: u64,
    /// Elements available.
    pub len: u64,
    marker: std::marker::PhantomData<T>,
}

impl<T> Clone for Slice<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Slice<'_, T> {}

impl<'a, T> Slice<'a, T> {
    /// The whole buffer as elements of `T`.
    pub fn whole(buffer: &'a Buffer) -> Self {
        Self::new(buffer, 0, buffer.size() / std::mem::size_of::<T>() as u64)
    }

    /// `len` elements from byte `offset`.
    pub fn new(buffer: &'a Buffer, offset: u64, len: u64) -> Self {
        Self {
            buffer,
            offset,
            len,
            marker: std::marker::PhantomData,
        }
    }

    /// Device address of the first element.
    pub fn address(&self) -> u64 {
        self.buffer.address() + self.offset
    }

    /// Errors unless the slice lies inside its buffer, holds `needed` elements, and starts at a
    /// multiple of `align` bytes.
    pub(crate) fn check(&self, what: &str, needed: u64, align: u64) -> Result<()> {
        let bytes = self.len * std::mem::size_of::<T>() as u64;
        if self.offset + bytes > self.buffer.size() {
            return Err(Error::InvalidInput(format!(
                "{what}: slice of {} elements at {} overruns '{}' ({} bytes)",
                self.len,
                self.offset,
                self.buffer.name(),
                self.buffer.size()
            )));
        }
        if needed > self.len {
            return Err(Error::InvalidInput(format!(
                "{what}: {needed} elements do not fit in a slice of {} ('{}')",
                self.len,
                self.buffer.name()
            )));
        }
        if !self.address().is_multiple_of(align) {
            return Err(Error::InvalidInput(format!(
                "{what}: '{}' at offset {} is not {align}-byte aligned",
                self.buffer.name(),
                self.offset
            )));
        }
        Ok(())
    }
}

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

/// How a primitive's dispatch is sized.
pub(crate) enum Groups<'a> {
    Direct(u32),
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
