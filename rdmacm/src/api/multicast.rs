//! Multicast: `rdma_join_multicast`, `rdma_join_multicast_ex` and `rdma_leave_multicast`, on
//! RoCE v2 as the kernel's `rdma_cm` joins groups there ([`crate::multicast`]). The calls check
//! their arguments as librdmacm's do (`rdma_join_multicast_ex`, `rdma_join_multicast`,
//! `rdma_leave_multicast` in rdma-core's librdmacm/cma.c).

use core::ffi::{c_int, c_void};

use crate::{api::ids::id_of, errno, id::socket_addr, multicast, sync, sys};

/// Joins the group at `addr` for `id` ([`multicast::join`]), and for a synchronous ID waits
/// for the join's event; `EINVAL` for an ID or address that is none.
///
/// # Safety
///
/// As [`rdma_join_multicast`].
unsafe fn join(
    id: *mut sys::rdma_cm_id,
    addr: *const sys::sockaddr,
    send_only: bool,
    context: *mut c_void,
) -> c_int {
    // SAFETY: The caller's pointers, as documented.
    let (this, addr) = match unsafe { (id_of(id), socket_addr(addr)) } {
        (Ok(this), Ok(addr)) => (this, addr),
        _ => return errno::fail(libc::EINVAL),
    };
    let joined = multicast::join(this, addr, send_only, context);
    errno::status(joined.and_then(|()| sync::complete(this)))
}

/// `int rdma_join_multicast(struct rdma_cm_id *id, struct sockaddr *addr, void *context)`:
/// joins `addr` as a full member; `MULTICAST_JOIN` (or `MULTICAST_ERROR`) follows on the ID's
/// channel, its `param.ud.private_data` being `context`. A synchronous ID's call waits for it.
///
/// # Safety
///
/// `id` is not destroyed during the call (see [`crate::api`]); `addr` NULL or a socket address.
#[no_mangle]
pub unsafe extern "C" fn rdma_join_multicast(
    id: *mut sys::rdma_cm_id,
    addr: *mut sys::sockaddr,
    context: *mut c_void,
) -> c_int {
    // SAFETY: The caller's pointers, as documented.
    unsafe { join(id, addr, false, context) }
}

/// `int rdma_join_multicast_ex(struct rdma_cm_id *id, struct rdma_cm_join_mc_attr_ex
/// *mc_join_attr, void *context)`: as [`rdma_join_multicast`], with the join flags: a
/// send-only full member takes no membership and its QP is not attached. `EOPNOTSUPP` for
/// an unknown `comp_mask` bit; `EINVAL` without the address, or without join flags, or for
/// unknown ones.
///
/// # Safety
///
/// As [`rdma_join_multicast`]; `mc_join_attr` NULL or valid for a read, its address a socket
/// address.
#[no_mangle]
pub unsafe extern "C" fn rdma_join_multicast_ex(
    id: *mut sys::rdma_cm_id,
    mc_join_attr: *mut sys::rdma_cm_join_mc_attr_ex,
    context: *mut c_void,
) -> c_int {
    // SAFETY: The caller passes NULL or an attribute struct valid for a read.
    let Some(attr) = (unsafe { mc_join_attr.as_ref() }) else {
        return errno::fail(libc::EINVAL);
    };
    if attr.comp_mask >= sys::RDMA_CM_JOIN_MC_ATTR_RESERVED {
        return errno::fail(libc::EOPNOTSUPP);
    }
    if attr.comp_mask & sys::RDMA_CM_JOIN_MC_ATTR_ADDRESS == 0
        || attr.comp_mask & sys::RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS == 0
        || attr.join_flags >= sys::RDMA_MC_JOIN_FLAG_RESERVED
    {
        return errno::fail(libc::EINVAL);
    }
    let send_only = attr.join_flags == sys::RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER;
    // SAFETY: The caller's pointers, as documented.
    unsafe { join(id, attr.addr, send_only, context) }
}

/// `int rdma_leave_multicast(struct rdma_cm_id *id, struct sockaddr *addr)`: leaves a group
/// joined on the ID (`EADDRNOTAVAIL` if none is at `addr`): its QP is detached, the
/// membership dropped, and the call returns once the join's events handed out are
/// acknowledged.
///
/// # Safety
///
/// `id` is not destroyed during the call (see [`crate::api`]); `addr` NULL or a socket address.
#[no_mangle]
pub unsafe extern "C" fn rdma_leave_multicast(
    id: *mut sys::rdma_cm_id,
    addr: *mut sys::sockaddr,
) -> c_int {
    // SAFETY: The caller's pointers, as documented.
    match unsafe { (id_of(id), socket_addr(addr)) } {
        (Ok(this), Ok(addr)) => errno::status(multicast::leave(this, addr)),
        _ => errno::fail(libc::EINVAL),
    }
}
