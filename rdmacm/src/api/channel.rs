//! Event channels: `rdma_create_event_channel` and `rdma_destroy_event_channel`.
//!
//! A channel is an open `/dev/cepm`: its `fd` is the file whose events the channel's IDs
//! receive, so that an application may poll it, or make it non-blocking, as with librdmacm.

use crate::{channel::Channel, errno, sys};

/// `struct rdma_event_channel *rdma_create_event_channel(void)`: NULL with `errno` set (e.g.
/// `ENOENT` when cepm is not loaded) on failure.
#[no_mangle]
pub extern "C" fn rdma_create_event_channel() -> *mut sys::rdma_event_channel {
    match Channel::open(false) {
        Ok(channel) => Box::into_raw(channel).cast(),
        Err(e) => {
            errno::set(errno::of_io(e));
            core::ptr::null_mut()
        }
    }
}

/// `void rdma_destroy_event_channel(struct rdma_event_channel *channel)`: closes the file.
/// As with librdmacm, every ID on the channel must have been destroyed first; a channel that
/// still has IDs is left open (their events would have nowhere to go), with `errno` `EBUSY`.
/// A pointer that is no live channel (NULL, or one destroyed already) is left alone, with
/// `errno` `EINVAL`.
///
/// # Safety
///
/// `channel` is not used afterwards, and no other thread uses it meanwhile.
#[no_mangle]
pub unsafe extern "C" fn rdma_destroy_event_channel(channel: *mut sys::rdma_event_channel) {
    // SAFETY: As the caller promises.
    match unsafe { Channel::of_app(channel) } {
        Err(e) => {
            errno::set(e);
            return;
        }
        Ok(live) if live.has_ids() => {
            errno::set(libc::EBUSY);
            return;
        }
        Ok(_) => {}
    }
    // SAFETY: The caller gives the channel up; it came from Box::into_raw.
    drop(unsafe { Box::from_raw(channel.cast::<Channel>()) });
}
