// SPDX-License-Identifier: GPL-2.0

//! An ioctl's argument, which may be a newer or an older version of the struct the kernel
//! knows: the struct can grow without a new ioctl number.
//!
//! A call is found by its type, number and direction ([`canonical`]); the size field of the
//! caller's command says how big its struct is, as DRM's ioctls take it (`drm_ioctl`):
//! - longer than the kernel's: served if every byte the kernel does not know is zero, else
//!   `E2BIG` (the rule of `copy_struct_from_user`); only the kernel's bytes are written back;
//! - shorter than the kernel's but no shorter than the first ABI version's: the fields it
//!   lacks read as zero, and only its bytes are written back;
//! - shorter still: no ioctl of ours (`ENOTTY`).

use core::mem::size_of;
use kernel::{
    prelude::*,
    transmute::{
        AsBytes,
        FromBytes, //
    },
    uaccess::{
        UserPtr,
        UserSlice, //
    },
};

/// An ioctl as the kernel knows it: its command for today's struct, and the size of the
/// struct's first ABI version, the smallest a caller may pass.
pub(super) struct KnownIoctl {
    pub(super) cmd: u32,
    pub(super) first_size: usize,
}

impl KnownIoctl {
    /// An ioctl whose struct has not grown since the first ABI version.
    pub(super) const fn new(cmd: u32) -> Self {
        Self::grown(cmd, kernel::ioctl::_IOC_SIZE(cmd))
    }

    /// An ioctl whose struct was `first_size` bytes in its first ABI version.
    pub(super) const fn grown(cmd: u32, first_size: usize) -> Self {
        Self { cmd, first_size }
    }
}

/// The ioctl among `known` with the type, number and direction of `cmd` and a size no
/// smaller than its struct's first version, and the caller's argument at `ptr`.
pub(super) fn find(cmd: u32, ptr: UserPtr, known: &[KnownIoctl]) -> Option<(u32, IoctlArg)> {
    use kernel::ioctl::{
        _IOC_DIR,
        _IOC_NR,
        _IOC_SIZE,
        _IOC_TYPE, //
    };
    let k = known.iter().find(|k| {
        _IOC_TYPE(k.cmd) == _IOC_TYPE(cmd)
            && _IOC_NR(k.cmd) == _IOC_NR(cmd)
            && _IOC_DIR(k.cmd) == _IOC_DIR(cmd)
            && _IOC_SIZE(cmd) >= k.first_size
    })?;
    Some((
        k.cmd,
        IoctlArg {
            ptr,
            size: _IOC_SIZE(cmd),
        },
    ))
}

/// `size` bytes at `ptr` in the caller's memory: its version of the argument struct.
#[derive(Clone, Copy)]
pub(crate) struct IoctlArg {
    ptr: UserPtr,
    size: usize,
}

impl IoctlArg {
    /// The caller's struct as a `T`: fields it lacks are zero; `E2BIG` if it has non-zero
    /// bytes beyond `T`.
    pub(crate) fn read<T: FromBytes + AsBytes + Default>(&self) -> Result<T> {
        let mut value = T::default();
        let known = self.size.min(size_of::<T>());
        let mut reader = UserSlice::new(self.ptr, self.size).reader();
        let bytes = value.as_bytes_mut();
        // `Default` on these bindgen structs is all zeroes: start from that, take the prefix.
        bytes.fill(0);
        reader.read_slice(bytes.get_mut(..known).ok_or(EINVAL)?)?;
        let mut chunk = [0u8; 64];
        while !reader.is_empty() {
            let n = reader.len().min(chunk.len());
            let part = chunk.get_mut(..n).ok_or(EINVAL)?;
            reader.read_slice(part)?;
            if part.iter().any(|&b| b != 0) {
                return Err(E2BIG);
            }
        }
        Ok(value)
    }

    /// Writes `value` back, as much of it as the caller's struct holds.
    pub(crate) fn write<T: AsBytes>(&self, value: &T) -> Result {
        let bytes = value.as_bytes();
        let known = self.size.min(bytes.len());
        UserSlice::new(self.ptr, self.size)
            .writer()
            .write_slice(bytes.get(..known).ok_or(EINVAL)?)
    }
}
