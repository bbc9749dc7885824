//! ECE (Enhanced Connection Establishment): `rdma_set_local_ece`, `rdma_get_remote_ece` and
//! `rdma_reject_ece`, as rdma-core's `librdmacm/cma.c` has them. The REQ carries the active
//! side's vendor ID and options, the REP the vendor ID it received and the passive side's
//! options; cepm's module puts them in the messages' VendorID field and MAD attribute
//! modifier (ABI 7).
//!
//! Values set by the application count only for an ID without a QP of the library's: once
//! the library makes the QP, the QP's own ECE (`ibv_query_ece`) replaces them, and the
//! application cannot set them any more (`EINVAL`), as in librdmacm.

use core::ffi::{c_int, c_void};

use cepm::{sys as cepm_sys, Cepm};

use super::{connection::reject_with_reason, ids::id_of};
use crate::{errno, id::Id, sys};

/// `int rdma_set_local_ece(struct rdma_cm_id *id, struct ibv_ece *ece)`: the vendor ID and
/// options this side's REQ or REP is to carry. `EINVAL` for an ID with a QP, a NULL `ece`, a
/// vendor ID of 0 or a `comp_mask` that is not 0.
///
/// # Safety
///
/// `id` is not destroyed during the call (see [`crate::api`]); `ece` NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn rdma_set_local_ece(
    id: *mut sys::rdma_cm_id,
    ece: *mut sys::ibv_ece,
) -> c_int {
    // SAFETY: The caller's pointers, as documented.
    let (Ok(this), Some(ece)) = (unsafe { id_of(id) }, unsafe { ece.as_ref() }) else {
        return errno::fail(libc::EINVAL);
    };
    if !this.public().qp.is_null() || ece.vendor_id == 0 || ece.comp_mask != 0 {
        return errno::fail(libc::EINVAL);
    }
    let mut state = this.state();
    state.local_ece.vendor_id = ece.vendor_id;
    state.local_ece.options = ece.options;
    0
}

/// `int rdma_get_remote_ece(struct rdma_cm_id *id, struct ibv_ece *ece)`: the vendor ID and
/// options of the peer's REQ or REP (0 and 0 before either). `EINVAL` for an ID with a QP or
/// a NULL `ece`.
///
/// # Safety
///
/// `id` is not destroyed during the call (see [`crate::api`]); `ece` NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn rdma_get_remote_ece(
    id: *mut sys::rdma_cm_id,
    ece: *mut sys::ibv_ece,
) -> c_int {
    // SAFETY: The caller's pointers, as documented.
    let (Ok(this), Some(ece)) = (unsafe { id_of(id) }, unsafe { ece.as_mut() }) else {
        return errno::fail(libc::EINVAL);
    };
    if !this.public().qp.is_null() {
        return errno::fail(libc::EINVAL);
    }
    let remote = this.state().remote_ece;
    ece.vendor_id = remote.vendor_id;
    ece.options = remote.options;
    ece.comp_mask = 0;
    0
}

/// `int rdma_reject_ece(struct rdma_cm_id *id, const void *private_data, uint8_t
/// private_data_len)`: `rdma_reject` with REJ reason 35 (vendor option not supported), which
/// the peer sees as REJECTED with status 35.
///
/// # Safety
///
/// As `rdma_reject`'s.
#[no_mangle]
pub unsafe extern "C" fn rdma_reject_ece(
    id: *mut sys::rdma_cm_id,
    private_data: *const c_void,
    private_data_len: u8,
) -> c_int {
    let reason = cepm_sys::CEPM_REJ_VENDOR_OPTION_NOT_SUPPORTED as u16;
    // SAFETY: The caller's promises are rdma_reject's.
    unsafe { reject_with_reason(id, private_data, private_data_len, reason) }
}

/// The peer's ECE as the module reports it for CEP `handle` (0 and 0 from a module without
/// ECE).
pub(crate) fn remote_of(cepm: &Cepm, handle: u32) -> sys::ibv_ece {
    let (vendor_id, options) = if crate::abi::carries_ece(cepm) {
        cepm.remote_ece(handle).unwrap_or_default()
    } else {
        (0, 0)
    };
    sys::ibv_ece {
        vendor_id,
        options,
        comp_mask: 0,
    }
}

/// The ECE fields of a REQ or REP: `(vendor_id, attr_mod)`, 0 and 0 where the module has no
/// ECE (its struct is shorter: nonzero bytes past it are `E2BIG`).
pub(crate) fn to_send(cepm: &Cepm, vendor_id: u32, options: u32) -> (u32, u32) {
    if crate::abi::carries_ece(cepm) {
        (vendor_id, options)
    } else {
        (0, 0)
    }
}

/// A new QP's ECE, as librdmacm's `init_ece` takes it: the local ECE becomes the QP's (none
/// where the provider has no ECE, as rxe), and a passive ID hands the REQ's to the provider
/// (its options only if the vendors match).
pub(crate) fn init_qp(this: &Id, qp: *mut sys::ibv_qp) -> Result<(), c_int> {
    let mut ece = sys::ibv_ece::default();
    // SAFETY: `qp` is the live QP just made; `ece` is ours.
    let ret = unsafe { sys::ibv_query_ece(qp, &mut ece) };
    if ret != 0 && ret != libc::EOPNOTSUPP {
        return Err(ret);
    }
    let remote = {
        let mut state = this.state();
        state.local_ece = sys::ibv_ece {
            vendor_id: ece.vendor_id,
            options: ece.options,
            comp_mask: 0,
        };
        state.remote_ece
    };
    if remote.vendor_id == 0 {
        return Ok(());
    }
    let mut wanted = if remote.vendor_id == ece.vendor_id {
        remote
    } else {
        sys::ibv_ece {
            vendor_id: ece.vendor_id,
            options: 0,
            comp_mask: 0,
        }
    };
    // SAFETY: As above.
    let ret = unsafe { sys::ibv_set_ece(qp, &mut wanted) };
    if ret != 0 && ret != libc::EOPNOTSUPP {
        return Err(ret);
    }
    Ok(())
}

/// After a passive QP is initialised: the options the provider settled on become the REP's
/// (librdmacm's `set_local_ece`).
pub(crate) fn settle_qp(this: &Id, qp: *mut sys::ibv_qp) -> Result<(), c_int> {
    if this.state().remote_ece.vendor_id == 0 {
        return Ok(());
    }
    let mut ece = sys::ibv_ece::default();
    // SAFETY: `qp` is the ID's live QP; `ece` is ours.
    let ret = unsafe { sys::ibv_query_ece(qp, &mut ece) };
    if ret != 0 && ret != libc::EOPNOTSUPP {
        return Err(ret);
    }
    this.state().local_ece.options = ece.options;
    Ok(())
}

/// A REP with `remote` arrived for an ID whose QP the library moves on (librdmacm's
/// `ucma_process_conn_resp_ece`): a REP without ECE clears the QP's options, one from
/// another vendor fails the connection (`EINVAL`), and the provider is told what was agreed.
pub(crate) fn take_rep(this: &Id, qp: *mut sys::ibv_qp, remote: sys::ibv_ece) -> Result<(), c_int> {
    let local = this.state().local_ece;
    let mut agreed = if remote.vendor_id == 0 {
        sys::ibv_ece {
            vendor_id: local.vendor_id,
            options: 0,
            comp_mask: 0,
        }
    } else if remote.vendor_id != local.vendor_id {
        return Err(libc::EINVAL);
    } else {
        remote
    };
    this.state().remote_ece.vendor_id = remote.vendor_id;
    // SAFETY: `qp` is the ID's live QP; `agreed` is ours.
    let ret = unsafe { sys::ibv_set_ece(qp, &mut agreed) };
    if ret != 0 && ret != libc::EOPNOTSUPP {
        return Err(ret);
    }
    Ok(())
}
