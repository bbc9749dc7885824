//! Event channels: `rdma_create_event_channel` and `rdma_destroy_event_channel`.
//!
//! A channel is an open `/dev/cepm`: its `fd` is the file whose events the channel's IDs
//! receive, so that an application may poll it, or make it non-blocking, as with librdmacm.

use core::{ffi::c_int, mem::size_of};

use crate::{errno, sys};

/// The character device every channel opens.
const DEVICE: &core::ffi::CStr = c"/dev/cepm";

/// `struct rdma_event_channel *rdma_create_event_channel(void)`: NULL with `errno` set (e.g.
/// `ENOENT` when cepm is not loaded) on failure.
#[no_mangle]
pub extern "C" fn rdma_create_event_channel() -> *mut sys::rdma_event_channel {
    // SAFETY: `DEVICE` is a C string.
    let fd = unsafe { libc::open(DEVICE.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
    if fd < 0 {
        return core::ptr::null_mut(); // errno is open's.
    }
    // SAFETY: malloc of one channel; checked below.
    let channel = unsafe { libc::malloc(size_of::<sys::rdma_event_channel>()) }
        .cast::<sys::rdma_event_channel>();
    if channel.is_null() {
        // SAFETY: `fd` is ours, opened above.
        unsafe { libc::close(fd) };
        errno::set(libc::ENOMEM);
        return channel;
    }
    // SAFETY: `channel` was just allocated for one rdma_event_channel.
    unsafe { channel.write(sys::rdma_event_channel { fd }) };
    channel
}

/// `void rdma_destroy_event_channel(struct rdma_event_channel *channel)`: closes the file.
/// As with librdmacm, every ID on the channel must have been destroyed first.
///
/// # Safety
///
/// `channel` came from [`rdma_create_event_channel`] and is not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn rdma_destroy_event_channel(channel: *mut sys::rdma_event_channel) {
    if channel.is_null() {
        return;
    }
    // SAFETY: The caller gives up a channel of ours: its fd is open, the memory malloc'd.
    unsafe {
        let fd: c_int = (*channel).fd;
        libc::close(fd);
        libc::free(channel.cast());
    }
}
