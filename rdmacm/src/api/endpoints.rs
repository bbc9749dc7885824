//! Endpoints, librdmacm's synchronous shorthand: `rdma_create_ep`, `rdma_destroy_ep` and
//! `rdma_get_request`. An endpoint is a synchronous ID (see [`crate::sync`]) that
//! `rdma_create_ep` binds (passive) or resolves, with a QP (active).

use core::{ffi::c_int, ptr};

use super::{
    ids::{
        create_id, id_of, rdma_ack_cm_event, rdma_bind_addr, rdma_destroy_id, rdma_resolve_addr,
        rdma_resolve_route,
    },
    qp::{create_qp, rdma_destroy_qp},
    srq::rdma_destroy_srq,
};
use crate::{errno, event::Event, id::Id, sync, sys};

/// How long `rdma_create_ep` gives address and route resolution, as librdmacm does.
const RESOLVE_TIMEOUT_MS: c_int = 2000;

/// `int rdma_create_ep(struct rdma_cm_id **id, struct rdma_addrinfo *res, struct ibv_pd *pd,
/// struct ibv_qp_init_attr *qp_init_attr)`: a synchronous ID for `res`. Passive
/// (`RAI_PASSIVE`): bound to `ai_src_addr`, and `qp_init_attr` kept for the QPs of the IDs
/// `rdma_get_request` gives. Active: the address and the route resolved, and a QP made with
/// `qp_init_attr` if given. `ai_connect` (private data to prepend) is not supported:
/// `EOPNOTSUPP`; `ai_route` is not used, the route is resolved.
///
/// # Safety
///
/// `id` is valid for a write; `res` a valid `rdma_addrinfo`; `pd` NULL or alive;
/// `qp_init_attr` NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn rdma_create_ep(
    id: *mut *mut sys::rdma_cm_id,
    res: *mut sys::rdma_addrinfo,
    pd: *mut sys::ibv_pd,
    qp_init_attr: *mut sys::ibv_qp_init_attr,
) -> c_int {
    // SAFETY: The caller's pointers, as documented.
    let Some(res) = (unsafe { res.as_ref() }) else {
        return errno::fail(libc::EINVAL);
    };
    if id.is_null() {
        return errno::fail(libc::EINVAL);
    }
    if res.ai_connect_len != 0 {
        return errno::fail(libc::EOPNOTSUPP);
    }
    let qp_type = res.ai_qp_type as sys::ibv_qp_type;
    // A NULL channel: a synchronous ID on a channel of its own.
    let new = match create_id(
        ptr::null_mut(),
        ptr::null_mut(),
        res.ai_port_space as _,
        qp_type,
    ) {
        Ok(new) => new,
        Err(e) => return errno::fail(e),
    };
    // SAFETY: Just made, and the application's pointers as documented.
    let made = unsafe { set_up(new, res, pd, qp_init_attr.as_mut()) };
    if let Err(e) = made {
        crate::debug!("rdma_create_ep: errno {e}");
        // SAFETY: Made above, not handed out.
        unsafe { rdma_destroy_ep(new.cast()) };
        return errno::fail(e);
    }
    // SAFETY: The caller passes `id` valid for a write.
    unsafe { *id = new.cast() };
    0
}

/// The steps of `rdma_create_ep` after the ID is made.
///
/// # Safety
///
/// `new` is a live ID; `res` and `pd` as for [`rdma_create_ep`].
unsafe fn set_up(
    new: *mut Id,
    res: &sys::rdma_addrinfo,
    pd: *mut sys::ibv_pd,
    qp_init_attr: Option<&mut sys::ibv_qp_init_attr>,
) -> Result<(), c_int> {
    let errno_of = |rc: c_int| if rc == 0 { Ok(()) } else { Err(errno::get()) };
    let public: *mut sys::rdma_cm_id = new.cast();
    if res.ai_flags & sys::RAI_PASSIVE as c_int != 0 {
        // SAFETY: A live ID, and the caller's address.
        errno_of(unsafe { rdma_bind_addr(public, res.ai_src_addr) })?;
        // SAFETY: A live ID, not yet shared.
        let this = unsafe { &*new };
        if !pd.is_null() {
            this.update(|p| p.pd = pd);
        }
        if let Some(attr) = qp_init_attr {
            let mut kept = *attr;
            kept.qp_type = res.ai_qp_type as sys::ibv_qp_type;
            this.state().endpoint_qp = Some(kept);
        }
        return Ok(());
    }
    // SAFETY: As above; each call waits for its event (a synchronous ID).
    errno_of(unsafe {
        rdma_resolve_addr(public, res.ai_src_addr, res.ai_dst_addr, RESOLVE_TIMEOUT_MS)
    })?;
    // SAFETY: As above.
    errno_of(unsafe { rdma_resolve_route(public, RESOLVE_TIMEOUT_MS) })?;
    if let Some(attr) = qp_init_attr {
        attr.qp_type = res.ai_qp_type as sys::ibv_qp_type;
        // SAFETY: A live ID.
        create_qp(unsafe { &*new }, pd, attr)?;
    }
    Ok(())
}

/// `void rdma_destroy_ep(struct rdma_cm_id *id)`: its QP (and the CQs made for it), its SRQ,
/// then the ID.
///
/// # Safety
///
/// `id` is not used afterwards, nor destroyed during the call (see [`crate::api`]).
#[no_mangle]
pub unsafe extern "C" fn rdma_destroy_ep(id: *mut sys::rdma_cm_id) {
    // SAFETY: No one destroys the ID during the call (the caller's promise).
    unsafe {
        rdma_destroy_qp(id);
        rdma_destroy_srq(id);
        rdma_destroy_id(id);
    }
}

/// `int rdma_get_request(struct rdma_cm_id *listen, struct rdma_cm_id **id)`: waits for the
/// next connection request on a synchronous listener, and gives its new ID, synchronous too,
/// with the CONNECT_REQUEST kept in `(*id)->event` and, for a passive endpoint, a QP. `EINVAL`
/// for an asynchronous listener. A failure (`ECONNREFUSED` for a REJECTED, the errno of
/// another event's status, `EINVAL` for another event) keeps the event in `listen->event`.
///
/// # Safety
///
/// `listen` is not destroyed during the call (see [`crate::api`]); `id` valid for a write.
#[no_mangle]
pub unsafe extern "C" fn rdma_get_request(
    listen: *mut sys::rdma_cm_id,
    id: *mut *mut sys::rdma_cm_id,
) -> c_int {
    // SAFETY: No one destroys the ID during the call (the caller's promise).
    let Ok(listener) = (unsafe { id_of(listen) }) else {
        return errno::fail(libc::EINVAL);
    };
    if !listener.is_sync() || id.is_null() {
        return errno::fail(libc::EINVAL);
    }
    // SAFETY: The caller passes `id` valid for a write.
    errno::status(get_request(listener).map(|new| unsafe { *id = new.cast() }))
}

fn get_request(listener: &Id) -> Result<*mut Id, c_int> {
    sync::ack_kept(listener);
    let listener_ptr = listener.as_ptr();
    let mut event = crate::event::next(listener.channel(), Some(listener_ptr))?;
    if event.public.status != 0 || event.public.event != sys::RDMA_CM_EVENT_CONNECT_REQUEST {
        sync::keep(listener, event)?;
        return Err(libc::EINVAL);
    }
    let new: *mut Id = event.public.id.cast();
    // SAFETY: The event's new ID is alive, and the application's only through this event.
    let new_ref = unsafe { &*new };
    let endpoint_qp = listener.state().endpoint_qp;
    if let Some(mut attr) = endpoint_qp {
        if let Err(e) = create_qp(new_ref, listener.public().pd, &mut attr) {
            // The request goes: its ID's destroy rejects it.
            // SAFETY: An event of ours, not handed out; the new ID is the application's
            // through nothing else.
            unsafe {
                rdma_ack_cm_event(Box::into_raw(event).cast());
                rdma_destroy_id(new.cast());
            }
            return Err(e);
        }
    }
    // As librdmacm's: synchronous, like its listener, on a channel of its own.
    // SAFETY: The new ID is alive and ours alone; no thread takes events for it yet.
    if let Err(e) = unsafe { super::migrate::migrate(new_ref, core::ptr::null_mut()) } {
        // SAFETY: As above, for the error of create_qp.
        unsafe {
            rdma_ack_cm_event(Box::into_raw(event).cast());
            rdma_destroy_id(new.cast());
        }
        return Err(e);
    }
    // The new ID keeps the event now: its acknowledgement counts for it, not the listener.
    take_over(&mut event, listener, new_ref);
    new_ref.update(|p| p.event = Box::into_raw(event).cast());
    Ok(new)
}

/// Moves `event`'s acknowledgement from `from`'s count to `to`'s.
fn take_over(event: &mut Event, from: &Id, to: &Id) {
    event.owner = to.as_ptr();
    to.event_reported();
    from.event_acked();
}
