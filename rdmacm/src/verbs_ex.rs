//! libibverbs' extended calls that `<infiniband/verbs.h>` defines inline, so that no symbol of
//! the library carries them: `ibv_create_qp_ex`, `ibv_create_srq_ex` and `ibv_open_xrcd`, as
//! the header has them. Each reaches the provider's operation through the `verbs_context` the
//! device context is embedded in (`verbs_get_ctx_op`), and fails with `EOPNOTSUPP` where the
//! provider has none.

use core::{ffi::c_int, mem::offset_of, ptr};
use std::sync::Mutex;

use crate::{errno, sys};

/// The `verbs_context` around `ctx`, if the provider made an extended one
/// (`verbs_get_ctx`): its `abi_compat` says so.
///
/// # Safety
///
/// `ctx` is a live device context.
unsafe fn verbs_ctx<'a>(ctx: *mut sys::ibv_context) -> Option<&'a sys::verbs_context> {
    // SAFETY: The caller passes a live context.
    if unsafe { (*ctx).abi_compat } as usize != usize::MAX {
        return None;
    }
    // SAFETY: An extended context is the last field of its verbs_context (the header's
    // container_of), which lives as long as the context.
    Some(unsafe {
        &*ctx
            .byte_sub(offset_of!(sys::verbs_context, context))
            .cast::<sys::verbs_context>()
    })
}

/// Whether the provider's `verbs_context` is long enough to have the operation at `offset`
/// (the header's `verbs_get_ctx_op`: the struct grows at its front).
fn has_op(v: &sys::verbs_context, offset: usize) -> bool {
    v.sz >= core::mem::size_of::<sys::verbs_context>() - offset
}

/// `ibv_create_qp_ex`: a QP from `attr`, through `ibv_create_qp` when it names no more than a
/// PD; NULL with `errno` set on failure.
///
/// # Safety
///
/// `ctx` is a live device context; `attr` is valid, its pointers live objects of `ctx`.
pub(crate) unsafe fn create_qp_ex(
    ctx: *mut sys::ibv_context,
    attr: &mut sys::ibv_qp_init_attr_ex,
) -> *mut sys::ibv_qp {
    if attr.comp_mask == sys::IBV_QP_INIT_ATTR_PD {
        // SAFETY: `ibv_qp_init_attr` is the start of `ibv_qp_init_attr_ex`, as the header
        // casts it.
        return unsafe { sys::ibv_create_qp(attr.pd, ptr::from_mut(attr).cast()) };
    }
    // SAFETY: The caller passes a live context.
    let op = unsafe { verbs_ctx(ctx) }
        .filter(|v| has_op(v, offset_of!(sys::verbs_context, create_qp_ex)))
        .and_then(|v| v.create_qp_ex);
    match op {
        // SAFETY: The provider's own operation, with the caller's valid arguments.
        Some(create) => unsafe { create(ctx, attr) },
        None => {
            errno::set(libc::EOPNOTSUPP);
            ptr::null_mut()
        }
    }
}

/// `ibv_create_srq_ex`: an SRQ from `attr`, through `ibv_create_srq` for a basic one on a PD;
/// NULL with `errno` set on failure.
///
/// # Safety
///
/// As [`create_qp_ex`]'s.
pub(crate) unsafe fn create_srq_ex(
    ctx: *mut sys::ibv_context,
    attr: &mut sys::ibv_srq_init_attr_ex,
) -> *mut sys::ibv_srq {
    let mask = attr.comp_mask;
    let basic_mask = sys::IBV_SRQ_INIT_ATTR_PD | sys::IBV_SRQ_INIT_ATTR_TYPE;
    if mask & !basic_mask == 0
        && mask & sys::IBV_SRQ_INIT_ATTR_PD != 0
        && (mask & sys::IBV_SRQ_INIT_ATTR_TYPE == 0 || attr.srq_type == sys::IBV_SRQT_BASIC)
    {
        // SAFETY: `ibv_srq_init_attr` is the start of `ibv_srq_init_attr_ex`, as the header
        // casts it.
        return unsafe { sys::ibv_create_srq(attr.pd, ptr::from_mut(attr).cast()) };
    }
    // SAFETY: The caller passes a live context.
    let op = unsafe { verbs_ctx(ctx) }
        .filter(|v| has_op(v, offset_of!(sys::verbs_context, create_srq_ex)))
        .and_then(|v| v.create_srq_ex);
    match op {
        // SAFETY: The provider's own operation, with the caller's valid arguments.
        Some(create) => unsafe { create(ctx, attr) },
        None => {
            errno::set(libc::EOPNOTSUPP);
            ptr::null_mut()
        }
    }
}

/// The XRC domains opened for devices, by context: one each, for the life of the process, as
/// librdmacm keeps one per device (`ucma_get_xrcd`).
static XRCDS: Mutex<Vec<(usize, usize)>> = Mutex::new(Vec::new());

/// The device's XRC domain, opened on first use (`ibv_open_xrcd` with no file, `O_CREAT`), or
/// the provider's errno.
///
/// # Safety
///
/// `ctx` is a live device context of the library's (open for the life of the process).
pub(crate) unsafe fn device_xrcd(ctx: *mut sys::ibv_context) -> Result<*mut sys::ibv_xrcd, c_int> {
    let mut xrcds = XRCDS.lock().map_err(|_| libc::EIO)?;
    if let Some(&(_, xrcd)) = xrcds.iter().find(|(c, _)| *c == ctx as usize) {
        return Ok(xrcd as *mut sys::ibv_xrcd);
    }
    let mut attr = sys::ibv_xrcd_init_attr {
        comp_mask: sys::IBV_XRCD_INIT_ATTR_FD | sys::IBV_XRCD_INIT_ATTR_OFLAGS,
        fd: -1,
        oflags: libc::O_CREAT,
    };
    // SAFETY: The caller passes a live context.
    let op = unsafe { verbs_ctx(ctx) }
        .filter(|v| has_op(v, offset_of!(sys::verbs_context, open_xrcd)))
        .and_then(|v| v.open_xrcd);
    let Some(open) = op else {
        return Err(libc::EOPNOTSUPP);
    };
    errno::set(0);
    // SAFETY: The provider's own operation; `attr` is ours for the call.
    let xrcd = unsafe { open(ctx, &mut attr) };
    if xrcd.is_null() {
        return Err(errno::last_or(libc::EOPNOTSUPP));
    }
    xrcds.push((ctx as usize, xrcd as usize));
    Ok(xrcd)
}
