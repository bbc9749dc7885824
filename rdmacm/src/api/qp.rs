//! QPs: `rdma_create_qp`, `rdma_create_qp_ex` and `rdma_destroy_qp`, as librdmacm makes them:
//! with the ID's completion queues (made here when the caller gives none) and in INIT (a
//! connected QP) or RTS (UD), through `ibv_create_qp_ex`, so that the extended attributes (XRC
//! domains, send-ops flags, ...) reach the provider, which says what it cannot do.

use core::{ffi::c_int, ptr};

use super::{ece, ids::id_of};
use crate::{
    errno,
    id::{Id, Phase},
    qp::{self, Depths},
    sys, verbs_ex,
};

/// One direction's completion queue: the caller's, the ID's, or a new one with its own
/// completion channel (kept in the ID, destroyed with the QP). A queue of no entries gets
/// none, as librdmacm's `ucma_create_cqs` makes none: an XRC send QP has no receive queue, and
/// the provider, not a CQ of 0 entries, then says whether it takes the QP.
fn completion_queue(
    verbs: *mut sys::ibv_context,
    given: *mut sys::ibv_cq,
    ids: &mut *mut sys::ibv_cq,
    channel: &mut *mut sys::ibv_comp_channel,
    entries: u32,
    id: *mut sys::rdma_cm_id,
) -> Result<*mut sys::ibv_cq, c_int> {
    if !given.is_null() {
        if !ids.is_null() && *ids != given {
            return Err(libc::EINVAL);
        }
        return Ok(given);
    }
    if !ids.is_null() {
        return Ok(*ids);
    }
    if entries == 0 {
        return Ok(ptr::null_mut());
    }
    // SAFETY: `verbs` is the ID's open context.
    let comp = unsafe { sys::ibv_create_comp_channel(verbs) };
    if comp.is_null() {
        return Err(errno::last_or(libc::ENOMEM));
    }
    // SAFETY: As above; the CQ's context is the ID, as librdmacm's helpers expect.
    let cq = unsafe { sys::ibv_create_cq(verbs, entries as c_int, id.cast(), comp, 0) };
    if cq.is_null() {
        // SAFETY: Made above, used by nothing.
        unsafe { sys::ibv_destroy_comp_channel(comp) };
        return Err(errno::last_or(libc::ENOMEM));
    }
    *ids = cq;
    *channel = comp;
    Ok(cq)
}

/// The ID's receive completion queue, made with `entries` entries if it has none (an XRC
/// SRQ's, as librdmacm's `ucma_create_cqs` makes it).
pub(crate) fn recv_cq(this: &Id, entries: u32) -> Result<*mut sys::ibv_cq, c_int> {
    let idp = this.as_public();
    this.update(|public| {
        completion_queue(
            public.verbs,
            core::ptr::null_mut(),
            &mut public.recv_cq,
            &mut public.recv_cq_channel,
            entries,
            idp,
        )
    })
}

/// Destroys the CQs (and their channels) the ID made.
pub(crate) fn destroy_id_cqs(this: &Id) {
    this.update(destroy_cqs);
}

/// Destroys the CQs (and their channels) the ID made.
fn destroy_cqs(id: &mut sys::rdma_cm_id) {
    // SAFETY: Each CQ and channel here was made by completion_queue and is used by no QP any
    // more; the send CQ may be the receive CQ.
    unsafe {
        if !id.recv_cq.is_null() {
            sys::ibv_destroy_cq(id.recv_cq);
        }
        if !id.send_cq.is_null() && id.send_cq != id.recv_cq {
            sys::ibv_destroy_cq(id.send_cq);
        }
        if !id.recv_cq_channel.is_null() {
            sys::ibv_destroy_comp_channel(id.recv_cq_channel);
        }
        if !id.send_cq_channel.is_null() && id.send_cq_channel != id.recv_cq_channel {
            sys::ibv_destroy_comp_channel(id.send_cq_channel);
        }
    }
    id.recv_cq = ptr::null_mut();
    id.send_cq = ptr::null_mut();
    id.recv_cq_channel = ptr::null_mut();
    id.send_cq_channel = ptr::null_mut();
}

/// Makes the ID's QP (see [`rdma_create_qp_ex`]), as librdmacm's `rdma_create_qp_ex`: the
/// ID's PD unless `attr` names one of the ID's device, the device's XRC domain for an XRC
/// receive ID that names none, the ID's CQs and SRQ where `attr` has none; `attr` gets them.
fn create_qp_ex(this: &Id, attr: &mut sys::ibv_qp_init_attr_ex) -> Result<(), c_int> {
    let idp = this.as_public();
    let public = this.public();
    if !public.qp.is_null() || public.verbs.is_null() {
        return Err(libc::EINVAL);
    }
    if attr.comp_mask & sys::IBV_QP_INIT_ATTR_PD == 0 || attr.pd.is_null() {
        attr.comp_mask |= sys::IBV_QP_INIT_ATTR_PD;
        attr.pd = public.pd;
    }
    let pd = attr.pd;
    // SAFETY: A PD the caller passes is alive.
    if pd.is_null() || unsafe { (*pd).context } != public.verbs {
        return Err(libc::EINVAL);
    }
    if public.qp_type == sys::IBV_QPT_XRC_RECV
        && (attr.comp_mask & sys::IBV_QP_INIT_ATTR_XRCD == 0 || attr.xrcd.is_null())
    {
        // SAFETY: The ID's context is one of the library's devices, open for good.
        attr.xrcd = unsafe { verbs_ex::device_xrcd(public.verbs) }?;
        attr.comp_mask |= sys::IBV_QP_INIT_ATTR_XRCD;
    }
    let made_here = public.send_cq.is_null() && public.recv_cq.is_null();
    let queues = this.update(|public| {
        let send = completion_queue(
            public.verbs,
            attr.send_cq,
            &mut public.send_cq,
            &mut public.send_cq_channel,
            attr.cap.max_send_wr,
            idp,
        )?;
        let recv = completion_queue(
            public.verbs,
            attr.recv_cq,
            &mut public.recv_cq,
            &mut public.recv_cq_channel,
            attr.cap.max_recv_wr,
            idp,
        )?;
        Ok((send, recv))
    });
    let (send, recv) = match queues {
        Ok(q) => q,
        Err(e) => {
            crate::debug!("rdma_create_qp: completion queues: errno {e}");
            if made_here {
                this.update(destroy_cqs);
            }
            return Err(e);
        }
    };
    attr.send_cq = send;
    attr.recv_cq = recv;
    if attr.srq.is_null() {
        attr.srq = this.public().srq;
    }
    // SAFETY: The ID's live context; `attr` is valid, its PD and CQs of that context.
    let qp = unsafe { verbs_ex::create_qp_ex(public.verbs, attr) };
    if qp.is_null() {
        let e = errno::last_or(libc::ENOMEM);
        if made_here {
            this.update(destroy_cqs);
        }
        return Err(e);
    }
    if let Err(e) = ece::init_qp(this, qp) {
        // SAFETY: Made above, used by nothing else.
        unsafe { sys::ibv_destroy_qp(qp) };
        if made_here {
            this.update(destroy_cqs);
        }
        return Err(e);
    }
    let port = public.port_num;
    let passive = this.state().phase == Phase::Requested;
    let ready = if this.public().qp_type == sys::IBV_QPT_UD {
        qp::init_ud(qp, port)
    } else if passive {
        // The REQ settled the access rights already.
        qp::to_state(
            &this.channel().cepm,
            this.handle(),
            qp,
            port,
            sys::IBV_QPS_INIT,
            Depths::default(),
        )
    } else {
        qp::init_connected(qp, port)
    }
    .and_then(|()| ece::settle_qp(this, qp));
    if let Err(e) = ready {
        crate::debug!("rdma_create_qp: to INIT (or RTS for UD): errno {e}");
        // SAFETY: Made above, used by nothing else.
        unsafe { sys::ibv_destroy_qp(qp) };
        if made_here {
            this.update(destroy_cqs);
        }
        return Err(e);
    }
    this.update(|p| {
        p.qp = qp;
        // SAFETY: The QP just made, alive.
        p.pd = unsafe { (*qp).pd };
    });
    Ok(())
}

/// Makes the ID's QP from basic attributes on `pd` (the ID's if NULL), as librdmacm's
/// `rdma_create_qp` does through `rdma_create_qp_ex`; `attr` gets the CQs, SRQ and
/// capabilities used.
pub(crate) fn create_qp(
    this: &Id,
    pd: *mut sys::ibv_pd,
    attr: &mut sys::ibv_qp_init_attr,
) -> Result<(), c_int> {
    let mut ex = sys::ibv_qp_init_attr_ex {
        qp_context: attr.qp_context,
        send_cq: attr.send_cq,
        recv_cq: attr.recv_cq,
        srq: attr.srq,
        cap: attr.cap,
        qp_type: attr.qp_type,
        sq_sig_all: attr.sq_sig_all,
        comp_mask: sys::IBV_QP_INIT_ATTR_PD,
        pd,
        ..Default::default()
    };
    let made = create_qp_ex(this, &mut ex);
    attr.send_cq = ex.send_cq;
    attr.recv_cq = ex.recv_cq;
    attr.srq = ex.srq;
    attr.cap = ex.cap;
    made
}

/// `int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_qp_init_attr
/// *qp_init_attr)`: `pd` NULL means the ID's device's shared PD; `qp_init_attr` gets the CQs
/// and the capabilities the device gave back.
///
/// # Safety
///
/// `id` is not destroyed during the call (see [`crate::api`]); `pd` NULL or alive;
/// `qp_init_attr` valid.
#[no_mangle]
pub unsafe extern "C" fn rdma_create_qp(
    id: *mut sys::rdma_cm_id,
    pd: *mut sys::ibv_pd,
    qp_init_attr: *mut sys::ibv_qp_init_attr,
) -> c_int {
    // SAFETY: The caller's pointers, as documented.
    let (Ok(this), Some(attr)) = (unsafe { id_of(id) }, unsafe { qp_init_attr.as_mut() }) else {
        return errno::fail(libc::EINVAL);
    };
    errno::status(create_qp(this, pd, attr))
}

/// `int rdma_create_qp_ex(struct rdma_cm_id *id, struct ibv_qp_init_attr_ex *qp_init_attr)`:
/// `ibv_create_qp_ex` with what the ID supplies (see [`create_qp`]), whatever else the
/// attributes ask: the provider refuses what it cannot do, with its own errno (`EOPNOTSUPP`
/// for XRC on rxe). `qp_init_attr` gets the PD, CQs, SRQ and capabilities used.
///
/// # Safety
///
/// `id` is not destroyed during the call (see [`crate::api`]); `qp_init_attr` valid, its
/// pointers live objects of the ID's device.
#[no_mangle]
pub unsafe extern "C" fn rdma_create_qp_ex(
    id: *mut sys::rdma_cm_id,
    qp_init_attr: *mut sys::ibv_qp_init_attr_ex,
) -> c_int {
    // SAFETY: The caller's pointers, as documented.
    let (Ok(this), Some(ex)) = (unsafe { id_of(id) }, unsafe { qp_init_attr.as_mut() }) else {
        return errno::fail(libc::EINVAL);
    };
    errno::status(create_qp_ex(this, ex))
}

/// `void rdma_destroy_qp(struct rdma_cm_id *id)`: the QP, and the CQs the ID made for it.
///
/// # Safety
///
/// `id` is not destroyed during the call (see [`crate::api`]).
#[no_mangle]
pub unsafe extern "C" fn rdma_destroy_qp(id: *mut sys::rdma_cm_id) {
    // SAFETY: No one destroys the ID during the call (the caller's promise).
    let Ok(this) = (unsafe { id_of(id) }) else {
        return;
    };
    let qp = this.update(|p| core::mem::replace(&mut p.qp, ptr::null_mut()));
    if !qp.is_null() {
        // SAFETY: The ID's QP, destroyed once: the ID no longer names it.
        unsafe { sys::ibv_destroy_qp(qp) };
    }
    this.update(destroy_cqs);
}
