//! `rdma_write_cm_event`: an event of the application's own on an ID's channel, as
//! rdma-core's `librdmacm/cma.c` has it (RDMACM_1.4).

use core::ffi::c_int;

use super::ids::id_of;
use crate::{errno, event::RDMA_CM_EVENT_USER, sys};

/// `int rdma_write_cm_event(struct rdma_cm_id *id, enum rdma_cm_event_type event, int status,
/// uint64_t arg)`: queues a `RDMA_CM_EVENT_USER` event with `status` and `param.arg` for `id`,
/// behind its other events (`CEPM_IOC_POST_EVENT`). `EINVAL` for any other event type;
/// `ENOSPC` if the channel's file has no room for it.
///
/// # Safety
///
/// `id` is not destroyed during the call (see [`crate::api`]).
#[no_mangle]
pub unsafe extern "C" fn rdma_write_cm_event(
    id: *mut sys::rdma_cm_id,
    event: sys::rdma_cm_event_type,
    status: c_int,
    arg: u64,
) -> c_int {
    // SAFETY: No one destroys the ID during the call (the caller's promise).
    let Ok(this) = (unsafe { id_of(id) }) else {
        return errno::fail(libc::EINVAL);
    };
    if event != RDMA_CM_EVENT_USER {
        return errno::fail(libc::EINVAL);
    }
    // The ID's lock orders the arguments as the events: each event takes the oldest.
    let mut state = this.state();
    state.user_args.push_back(arg);
    let code = cepm::sys::CEPM_EVENT_USER_FIRST + RDMA_CM_EVENT_USER;
    // The status travels as its bits.
    match this
        .channel()
        .cepm
        .post_event(this.handle(), code, status as u32)
    {
        Ok(()) => 0,
        Err(e) => {
            state.user_args.pop_back();
            errno::fail(errno::of_io(e))
        }
    }
}
