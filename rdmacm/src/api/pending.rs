//! librdmacm's calls that this library does not implement yet: each fails with `ENOSYS`, so
//! that an application linked against librdmacm loads and gets a clear error. docs/rdmacm.md
//! tracks them; each moves to its own file as it is implemented (issue 12).

use core::ffi::c_int;

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

pending! {
    rdma_migrate_id(Id, *mut sys::rdma_event_channel) -> c_int = -1;
}
