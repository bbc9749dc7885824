//! librdmacm's calls that this library does not implement yet: each fails with `ENOSYS`, so
//! that an application linked against librdmacm loads and gets a clear error. docs/rdmacm.md
//! tracks them; each moves to its own file as it is implemented (issue 12).

use core::ffi::{c_int, c_void};

use crate::{errno, sys};

/// Exported functions that fail with `ENOSYS` for now, returning -1 or NULL.
macro_rules! pending {
    ($($name:ident($($ty:ty),*) -> $ret:ty = $fail:expr;)*) => {
        $(
            #[doc = concat!("`", stringify!($name), "`: not implemented yet, `ENOSYS`.")]
            #[no_mangle]
            pub extern "C" fn $name($(_: $ty),*) -> $ret {
                errno::set(libc::ENOSYS);
                $fail
            }
        )*
    };
}

type Id = *mut sys::rdma_cm_id;
type Param = *mut sys::rdma_conn_param;

pending! {
    rdma_create_id(*mut sys::rdma_event_channel, *mut Id, *mut c_void, sys::rdma_port_space) -> c_int = -1;
    rdma_destroy_id(Id) -> c_int = -1;
    rdma_bind_addr(Id, *mut sys::sockaddr) -> c_int = -1;
    rdma_resolve_addr(Id, *mut sys::sockaddr, *mut sys::sockaddr, c_int) -> c_int = -1;
    rdma_resolve_route(Id, c_int) -> c_int = -1;
    rdma_create_qp(Id, *mut sys::ibv_pd, *mut sys::ibv_qp_init_attr) -> c_int = -1;
    rdma_create_qp_ex(Id, *mut sys::ibv_qp_init_attr_ex) -> c_int = -1;
    rdma_destroy_qp(Id) -> () = ();
    rdma_connect(Id, Param) -> c_int = -1;
    rdma_listen(Id, c_int) -> c_int = -1;
    rdma_accept(Id, Param) -> c_int = -1;
    rdma_reject(Id, *const c_void, u8) -> c_int = -1;
    rdma_notify(Id, sys::ibv_event_type) -> c_int = -1;
    rdma_disconnect(Id) -> c_int = -1;
    rdma_establish(Id) -> c_int = -1;
    rdma_init_qp_attr(Id, *mut sys::ibv_qp_attr, *mut c_int) -> c_int = -1;
    rdma_get_cm_event(*mut sys::rdma_event_channel, *mut *mut sys::rdma_cm_event) -> c_int = -1;
    rdma_ack_cm_event(*mut sys::rdma_cm_event) -> c_int = -1;
    rdma_set_option(Id, c_int, c_int, *mut c_void, usize) -> c_int = -1;
    rdma_migrate_id(Id, *mut sys::rdma_event_channel) -> c_int = -1;
    rdma_get_request(Id, *mut Id) -> c_int = -1;
    rdma_create_ep(*mut Id, *mut sys::rdma_addrinfo, *mut sys::ibv_pd, *mut sys::ibv_qp_init_attr) -> c_int = -1;
    rdma_destroy_ep(Id) -> () = ();
    rdma_create_srq(Id, *mut sys::ibv_pd, *mut sys::ibv_srq_init_attr) -> c_int = -1;
    rdma_create_srq_ex(Id, *mut sys::ibv_srq_init_attr_ex) -> c_int = -1;
    rdma_destroy_srq(Id) -> () = ();
}
