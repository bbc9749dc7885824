//! librdmacm's error convention: a call that fails returns -1 (or NULL) and sets `errno`.

use core::ffi::c_int;

/// Sets the calling thread's `errno`.
pub(crate) fn set(errno: c_int) {
    // SAFETY: `__errno_location` returns the calling thread's `errno`, valid for the thread's
    // lifetime.
    unsafe { *libc::__errno_location() = errno };
}

/// The calling thread's `errno`.
pub(crate) fn get() -> c_int {
    // SAFETY: As in `set`.
    unsafe { *libc::__errno_location() }
}

/// The `errno` a failed libc or libibverbs call left, or `fallback` when it left none.
pub(crate) fn last_or(fallback: c_int) -> c_int {
    match get() {
        0 => fallback,
        errno => errno,
    }
}

/// The errno of a failed I/O call (`EIO` if it carries none).
pub(crate) fn of_io(e: std::io::Error) -> c_int {
    e.raw_os_error().unwrap_or(libc::EIO)
}

/// Fails the way librdmacm's calls fail: `errno` set, -1 returned.
pub(crate) fn fail(errno: c_int) -> c_int {
    set(errno);
    -1
}

/// 0 on `Ok`, -1 with `errno` set on `Err`.
pub(crate) fn status(result: Result<(), c_int>) -> c_int {
    match result {
        Ok(()) => 0,
        Err(errno) => fail(errno),
    }
}
