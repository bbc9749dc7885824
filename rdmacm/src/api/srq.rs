//! Shared receive queues: `rdma_create_srq`, `rdma_create_srq_ex` and `rdma_destroy_srq`. The
//! ID keeps its SRQ in `id->srq`, where `rdma_create_qp` and the connect and accept calls find
//! it. The attributes go to `ibv_create_srq_ex`, whose provider says what it cannot do (XRC on
//! rxe: `EOPNOTSUPP`, from the XRC domain it cannot open).

use core::ffi::c_int;

use super::{ids::id_of, qp};
use crate::{errno, id::Id, sys, verbs_ex};

/// Makes the ID's SRQ from `attr`, as librdmacm's `rdma_create_srq_ex`: the ID's PD when
/// `attr` names none, and for XRC the device's XRC domain and a completion queue of the ID's
/// where `attr` has none (all given back in `attr`, with the limits the device granted).
fn create_srq(this: &Id, attr: &mut sys::ibv_srq_init_attr_ex) -> Result<(), c_int> {
    if attr.comp_mask & sys::IBV_SRQ_INIT_ATTR_TYPE == 0 {
        return Err(libc::EINVAL);
    }
    let public = this.public();
    if !public.srq.is_null() || public.verbs.is_null() {
        return Err(libc::EINVAL);
    }
    if attr.comp_mask & sys::IBV_SRQ_INIT_ATTR_PD == 0 || attr.pd.is_null() {
        attr.pd = public.pd;
        attr.comp_mask |= sys::IBV_SRQ_INIT_ATTR_PD;
    }
    // SAFETY: A PD the caller passes is alive; the ID's is.
    if attr.pd.is_null() || unsafe { (*attr.pd).context } != public.verbs {
        return Err(libc::EINVAL);
    }
    let mut made_cq = false;
    if attr.srq_type == sys::IBV_SRQT_XRC {
        if attr.comp_mask & sys::IBV_SRQ_INIT_ATTR_XRCD == 0 || attr.xrcd.is_null() {
            // SAFETY: The ID's context is one of the library's devices, open for good.
            attr.xrcd = unsafe { verbs_ex::device_xrcd(public.verbs) }?;
        }
        if attr.comp_mask & sys::IBV_SRQ_INIT_ATTR_CQ == 0 || attr.cq.is_null() {
            made_cq = public.recv_cq.is_null();
            attr.cq = qp::recv_cq(this, attr.attr.max_wr)?;
        }
        attr.comp_mask |= sys::IBV_SRQ_INIT_ATTR_XRCD | sys::IBV_SRQ_INIT_ATTR_CQ;
    }
    // SAFETY: The ID's live context; `attr` is valid, its objects of that context.
    let srq = unsafe { verbs_ex::create_srq_ex(public.verbs, attr) };
    if srq.is_null() {
        let e = errno::last_or(libc::ENOMEM);
        if made_cq {
            qp::destroy_id_cqs(this);
        }
        return Err(e);
    }
    this.update(|public| {
        if public.pd.is_null() {
            public.pd = attr.pd;
        }
        public.srq = srq;
    });
    Ok(())
}

/// `int rdma_create_srq_ex(struct rdma_cm_id *id, struct ibv_srq_init_attr_ex *attr)`: `attr`
/// must name its type (`IBV_SRQ_INIT_ATTR_TYPE`, else `EINVAL`); `ibv_create_srq_ex` with what
/// the ID supplies (see [`create_srq`]). `EINVAL` when the ID has an SRQ already or no device
/// yet; otherwise the provider's errno.
///
/// # Safety
///
/// `id` is not destroyed during the call (see [`crate::api`]); `attr` valid, its pointers
/// live objects of the ID's device.
#[no_mangle]
pub unsafe extern "C" fn rdma_create_srq_ex(
    id: *mut sys::rdma_cm_id,
    attr: *mut sys::ibv_srq_init_attr_ex,
) -> c_int {
    // SAFETY: The caller's pointers, as documented.
    let (Ok(this), Some(attr)) = (unsafe { id_of(id) }, unsafe { attr.as_mut() }) else {
        return errno::fail(libc::EINVAL);
    };
    errno::status(create_srq(this, attr))
}

/// `int rdma_create_srq(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_srq_init_attr
/// *attr)`: an SRQ on `pd` (the ID's if NULL), XRC for an XRC receive ID and basic otherwise,
/// as librdmacm's; the limits the device granted are written back to `attr`.
///
/// # Safety
///
/// `id` is not destroyed during the call (see [`crate::api`]); `pd` NULL or alive; `attr` valid.
#[no_mangle]
pub unsafe extern "C" fn rdma_create_srq(
    id: *mut sys::rdma_cm_id,
    pd: *mut sys::ibv_pd,
    attr: *mut sys::ibv_srq_init_attr,
) -> c_int {
    // SAFETY: The caller's pointers, as documented.
    let (Ok(this), Some(attr)) = (unsafe { id_of(id) }, unsafe { attr.as_mut() }) else {
        return errno::fail(libc::EINVAL);
    };
    let srq_type = if this.public().qp_type == sys::IBV_QPT_XRC_RECV {
        sys::IBV_SRQT_XRC
    } else {
        sys::IBV_SRQT_BASIC
    };
    let mut ex = sys::ibv_srq_init_attr_ex {
        srq_context: attr.srq_context,
        attr: attr.attr,
        comp_mask: sys::IBV_SRQ_INIT_ATTR_TYPE | sys::IBV_SRQ_INIT_ATTR_PD,
        srq_type,
        pd,
        // SAFETY: The rest (XRC domain, CQ, tag matching) is plain data or pointers, for
        // which all zeroes (NULL) is valid.
        ..unsafe { core::mem::zeroed() }
    };
    let rc = errno::status(create_srq(this, &mut ex));
    attr.attr = ex.attr;
    rc
}

/// `void rdma_destroy_srq(struct rdma_cm_id *id)`: the ID's SRQ. One that a QP still uses
/// cannot be destroyed (`ibv_destroy_srq` says `EBUSY`): it stays the ID's, so that destroying
/// the QP first and then the SRQ again works, where librdmacm would forget it.
///
/// # Safety
///
/// `id` is not destroyed during the call (see [`crate::api`]).
#[no_mangle]
pub unsafe extern "C" fn rdma_destroy_srq(id: *mut sys::rdma_cm_id) {
    // SAFETY: No one destroys the ID during the call (the caller's promise).
    let Ok(this) = (unsafe { id_of(id) }) else {
        return;
    };
    destroy_srq(this);
}

/// Destroys the ID's SRQ, if it has one and no QP uses it any more.
pub(crate) fn destroy_srq(this: &Id) {
    let srq = this.public().srq;
    if srq.is_null() {
        return;
    }
    // SAFETY: The ID's SRQ, made by create_srq; it is destroyed at most once, as it is
    // forgotten only when this succeeds.
    let rc = unsafe { sys::ibv_destroy_srq(srq) };
    if rc == 0 {
        this.update(|p| p.srq = core::ptr::null_mut());
    } else {
        crate::debug!("rdma_destroy_srq: errno {rc}: still in use");
    }
}
