//! Typed views of device buffers ([`Slice`]) and element counts known on the host or produced
//! on the device ([`Count`]): how every kernel's input and output is named.

use super::buffer::Buffer;
use super::error::{Error, Result};

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
