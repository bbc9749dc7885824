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
/// `errno` `EINVAL`. A thread waiting in `rdma_get_cm_event` on the channel meanwhile keeps
/// waiting, as over rdma-core's blocked read (a signal ends the wait of the thread reading
/// the file); the channel is freed when the last call in it returns. A call that would put
/// an ID on it meanwhile (`rdma_create_id`, `rdma_migrate_id`) fails with `EINVAL`.
///
/// # Safety
///
/// `channel` is not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn rdma_destroy_event_channel(channel: *mut sys::rdma_event_channel) {
    if let Err(e) = Channel::of_app(channel).and_then(|live| live.close()) {
        return errno::set(e);
    }
    // SAFETY: Closed above, by this call alone (a second close fails): no ID is or will be on
    // it, and the caller uses it no more.
    let _ = unsafe { Channel::free(channel) };
}
