//! `rdma_migrate_id`: an ID moves to another event channel, its CEP to that channel's
//! `/dev/cepm` (`CEPM_IOC_MIGRATE`), as librdmacm moves it with the kernel's `rdma_cm`
//! (`rdma_migrate_id` in rdma-core's `librdmacm/cma.c`).

use core::ffi::c_int;

use crate::{
    api::ids::id_of, channel::Channel, errno, id::Id, resolve::pending::Ticket, sync, sys,
};

/// `int rdma_migrate_id(struct rdma_cm_id *id, struct rdma_event_channel *channel)`: the ID's
/// events, the unread ones included, come through `channel` from now on. A NULL `channel`
/// makes the ID synchronous, on a channel of its own (`EINVAL` if it is synchronous
/// already). As librdmacm's, it returns once every event of the ID handed out has been
/// acknowledged; a synchronous ID's kept event is acknowledged first, and its old channel
/// goes with its last ID.
///
/// # Safety
///
/// `id` is not destroyed during the call (see [`crate::api`]; `channel` is checked, and held
/// for the call). No other thread uses the ID, or takes events from its old channel, during
/// the call.
#[no_mangle]
pub unsafe extern "C" fn rdma_migrate_id(
    id: *mut sys::rdma_cm_id,
    channel: *mut sys::rdma_event_channel,
) -> c_int {
    // SAFETY: No one destroys the ID during the call (the caller's promise).
    let Ok(this) = (unsafe { id_of(id) }) else {
        return errno::fail(libc::EINVAL);
    };
    // SAFETY: As the caller vouches.
    errno::status(unsafe { migrate(this, channel) })
}

/// See [`rdma_migrate_id`].
///
/// # Safety
///
/// As for [`rdma_migrate_id`].
pub(crate) unsafe fn migrate(
    this: &Id,
    channel: *mut sys::rdma_event_channel,
) -> Result<(), c_int> {
    let to_private = channel.is_null();
    if to_private && this.is_sync() {
        return Err(libc::EINVAL);
    }
    let old_ptr = this.public().channel;
    if channel == old_ptr {
        return Ok(());
    }
    // The application's channel, held for the call.
    let mut target = None;
    let new_ptr: *mut sys::rdma_event_channel = if to_private {
        Box::into_raw(Channel::open(true).map_err(errno::of_io)?).cast()
    } else {
        target = Some(Channel::of_app(channel)?);
        channel
    };
    // The ID's channel, held to the end: its events for the ID move once the last reader that
    // found the ID there is done.
    let old = Channel::of_app(old_ptr)?;
    // SAFETY: The caller's channel (held above), or the one just made.
    let new = unsafe { Channel::from_public(new_ptr) };
    let idp = this.as_ptr();
    // An address resolution in flight completes before the move or after it, through the
    // channel and handle the ID has then, never in the middle.
    let resolving = this.state().resolving.clone();
    let held = resolving.as_deref().map(Ticket::hold);
    let handle = match new.adopt(&old, idp, this.handle()) {
        Ok(handle) => handle,
        Err(e) => {
            if to_private {
                // SAFETY: Made above, known to no one else.
                let _ = unsafe { Channel::free(new_ptr) };
            }
            return Err(errno::of_io(e));
        }
    };
    if this.is_sync() {
        sync::ack_kept(this);
    }
    let last = old.remove(this.handle());
    // INVARIANT: the new channel's file holds the CEP under `handle`, and its map has the ID.
    this.moved(handle, to_private);
    this.update(|p| p.channel = new_ptr);
    drop(held);
    // A reader of the old channel that found the ID before it left (Channel::find_pinned)
    // is done once the acknowledgements are in; what it left waiting there follows the ID.
    this.wait_for_acks();
    for event in old.take_events_of(idp) {
        new.post(event);
    }
    if last && old.private {
        // SAFETY: A private channel belongs to its IDs, and this was the last (freed when
        // `old` goes).
        let _ = unsafe { Channel::free(old_ptr) };
    }
    drop(old);
    drop(target);
    Ok(())
}
