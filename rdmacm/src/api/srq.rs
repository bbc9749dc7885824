//! Shared receive queues: `rdma_create_srq`, `rdma_create_srq_ex` and `rdma_destroy_srq`. The
//! ID keeps its SRQ in `id->srq`, where `rdma_create_qp` and the connect and accept calls find
//! it. Basic SRQs only: rxe has no XRC, and this library no `IBV_QPT_XRC_RECV` IDs.

use core::ffi::c_int;

use super::ids::id_of;
use crate::{errno, id::Id, sys};

/// The attributes a basic SRQ is made from: what `ibv_create_srq` can express.
const BASIC_ATTRS: u32 = sys::IBV_SRQ_INIT_ATTR_TYPE | sys::IBV_SRQ_INIT_ATTR_PD;

/// Makes the ID's SRQ from `attr`: the ID's PD when `attr` names none (given back in `attr`),
/// and the limits the device granted written back to `attr.attr`.
fn create_srq(this: &Id, attr: &mut sys::ibv_srq_init_attr_ex) -> Result<(), c_int> {
    if attr.comp_mask & sys::IBV_SRQ_INIT_ATTR_TYPE == 0 {
        return Err(libc::EINVAL);
    }
    if attr.comp_mask & !BASIC_ATTRS != 0 || attr.srq_type != sys::IBV_SRQT_BASIC {
        crate::debug!("rdma_create_srq_ex: only basic SRQs (no XRC, no extra attributes)");
        return Err(libc::EOPNOTSUPP);
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
    let mut basic = sys::ibv_srq_init_attr {
        srq_context: attr.srq_context,
        attr: attr.attr,
    };
    // SAFETY: `attr.pd` is a live PD of the ID's device; `basic` is valid for the call.
    let srq = unsafe { sys::ibv_create_srq(attr.pd, &mut basic) };
    if srq.is_null() {
        return Err(errno::last_or(libc::ENOMEM));
    }
    attr.attr = basic.attr;
    this.update(|public| {
        if public.pd.is_null() {
            public.pd = attr.pd;
        }
        public.srq = srq;
    });
    Ok(())
}

/// `int rdma_create_srq_ex(struct rdma_cm_id *id, struct ibv_srq_init_attr_ex *attr)`: `attr`
/// must name its type (`IBV_SRQ_INIT_ATTR_TYPE`, else `EINVAL`); a basic SRQ, on the ID's PD
/// unless `attr` gives one. `EOPNOTSUPP` for XRC and the other extended attributes; `EINVAL`
/// when the ID has an SRQ already or no device yet.
///
/// # Safety
///
/// `id` is not destroyed during the call (see [`crate::api`]); `attr` valid.
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
/// *attr)`: a basic SRQ on `pd` (the ID's PD if NULL); the limits the device granted are
/// written back to `attr`.
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
    if this.public().qp_type == sys::IBV_QPT_XRC_RECV {
        return errno::fail(libc::EOPNOTSUPP);
    }
    let mut ex = sys::ibv_srq_init_attr_ex {
        srq_context: attr.srq_context,
        attr: attr.attr,
        comp_mask: BASIC_ATTRS,
        srq_type: sys::IBV_SRQT_BASIC,
        pd,
        // SAFETY: The rest (XRC domain, CQ, tag matching) is plain data or pointers, for
        // which all zeroes (NULL) is valid; none of it is read for a basic SRQ.
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
