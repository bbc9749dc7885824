//! Synchronous IDs (made on a NULL channel, or by `rdma_create_ep`): each call that leads to an
//! event waits for that ID's next event and keeps it in `public.event`, unacknowledged, until
//! the ID's next such call or its destroy; as librdmacm's `ucma_complete`.

use core::{ffi::c_int, ptr};

use crate::{api::ids::rdma_ack_cm_event, event, id::Id, sys};

/// For a synchronous ID: acknowledges the event it kept, waits for its next one and keeps
/// it. That event's failure is the call's: `ECONNREFUSED` for `REJECTED`, else the errno of
/// its status. An asynchronous ID returns at once.
pub(crate) fn complete(id: &Id) -> Result<(), c_int> {
    if !id.is_sync() {
        return Ok(());
    }
    ack_kept(id);
    let idp = id.as_ptr();
    let event = event::next(id.channel(), Some(idp))?;
    keep(id, event)
}

/// Keeps `event` in the ID's `event` field, and gives its failure as [`complete`] does.
pub(crate) fn keep(id: &Id, event: Box<event::Event>) -> Result<(), c_int> {
    let (kind, status) = (event.public.event, event.public.status);
    id.update(|p| p.event = Box::into_raw(event).cast());
    match status {
        0 => Ok(()),
        _ if kind == sys::RDMA_CM_EVENT_REJECTED => Err(libc::ECONNREFUSED),
        s => Err(s.saturating_abs()),
    }
}

/// Acknowledges the event a synchronous ID kept, if any.
pub(crate) fn ack_kept(id: &Id) {
    let kept = id.update(|p| core::mem::replace(&mut p.event, ptr::null_mut()));
    if !kept.is_null() {
        // SAFETY: A kept event came from event::next and was not acknowledged yet.
        unsafe { rdma_ack_cm_event(kept) };
    }
}
