//! What cepm's librdmacm does not offer, each with a clear errno (docs/rdmacm.md lists them):
//!
//! - rsockets (`rsocket`, `rbind`, ..., `riowrite`): `ENOSYS`, except `rpoll`, which is
//!   `poll(2)` since no file can be an rsocket here.

use core::ffi::{c_int, c_void};

use libc::{msghdr, nfds_t, off_t, pollfd, size_t, sockaddr, socklen_t, ssize_t};

use crate::errno;

/// Exported functions that only fail, with `$errno`, whatever their arguments.
macro_rules! failing {
    ($errno:expr => $($(#[$doc:meta])* fn $name:ident($($arg:ident: $ty:ty),*) -> $ret:ty;)*) => {
        $(
            $(#[$doc])*
            #[no_mangle]
            pub extern "C" fn $name($(_: $ty),*) -> $ret {
                errno::fail($errno) as $ret
            }
        )*
    };
}

failing! { libc::ENOSYS =>
    /// `rsocket`: rsockets are not supported.
    fn rsocket(domain: c_int, kind: c_int, protocol: c_int) -> c_int;
    /// `rbind`: rsockets are not supported.
    fn rbind(socket: c_int, addr: *const sockaddr, len: socklen_t) -> c_int;
    /// `rlisten`: rsockets are not supported.
    fn rlisten(socket: c_int, backlog: c_int) -> c_int;
    /// `raccept`: rsockets are not supported.
    fn raccept(socket: c_int, addr: *mut sockaddr, len: *mut socklen_t) -> c_int;
    /// `rconnect`: rsockets are not supported.
    fn rconnect(socket: c_int, addr: *const sockaddr, len: socklen_t) -> c_int;
    /// `rshutdown`: rsockets are not supported.
    fn rshutdown(socket: c_int, how: c_int) -> c_int;
    /// `rclose`: rsockets are not supported.
    fn rclose(socket: c_int) -> c_int;
    /// `rrecv`: rsockets are not supported.
    fn rrecv(socket: c_int, buf: *mut c_void, len: size_t, flags: c_int) -> ssize_t;
    /// `rrecvfrom`: rsockets are not supported.
    fn rrecvfrom(socket: c_int, buf: *mut c_void, len: size_t, flags: c_int, from: *mut sockaddr, fromlen: *mut socklen_t) -> ssize_t;
    /// `rrecvmsg`: rsockets are not supported.
    fn rrecvmsg(socket: c_int, msg: *mut msghdr, flags: c_int) -> ssize_t;
    /// `rsend`: rsockets are not supported.
    fn rsend(socket: c_int, buf: *const c_void, len: size_t, flags: c_int) -> ssize_t;
    /// `rsendto`: rsockets are not supported.
    fn rsendto(socket: c_int, buf: *const c_void, len: size_t, flags: c_int, to: *const sockaddr, tolen: socklen_t) -> ssize_t;
    /// `rsendmsg`: rsockets are not supported.
    fn rsendmsg(socket: c_int, msg: *const msghdr, flags: c_int) -> ssize_t;
    /// `rread`: rsockets are not supported.
    fn rread(socket: c_int, buf: *mut c_void, count: size_t) -> ssize_t;
    /// `rreadv`: rsockets are not supported.
    fn rreadv(socket: c_int, iov: *const libc::iovec, iovcnt: c_int) -> ssize_t;
    /// `rwrite`: rsockets are not supported.
    fn rwrite(socket: c_int, buf: *const c_void, count: size_t) -> ssize_t;
    /// `rwritev`: rsockets are not supported.
    fn rwritev(socket: c_int, iov: *const libc::iovec, iovcnt: c_int) -> ssize_t;
    /// `rselect`: rsockets are not supported.
    fn rselect(nfds: c_int, readfds: *mut libc::fd_set, writefds: *mut libc::fd_set, exceptfds: *mut libc::fd_set, timeout: *mut libc::timeval) -> c_int;
    /// `rgetpeername`: rsockets are not supported.
    fn rgetpeername(socket: c_int, addr: *mut sockaddr, len: *mut socklen_t) -> c_int;
    /// `rgetsockname`: rsockets are not supported.
    fn rgetsockname(socket: c_int, addr: *mut sockaddr, len: *mut socklen_t) -> c_int;
    /// `rsetsockopt`: rsockets are not supported.
    fn rsetsockopt(socket: c_int, level: c_int, name: c_int, value: *const c_void, len: socklen_t) -> c_int;
    /// `rgetsockopt`: rsockets are not supported.
    fn rgetsockopt(socket: c_int, level: c_int, name: c_int, value: *mut c_void, len: *mut socklen_t) -> c_int;
    /// `rfcntl` (variadic in C; no argument after `cmd` is read): rsockets are not supported.
    fn rfcntl(socket: c_int, cmd: c_int) -> c_int;
    /// `riomap`: rsockets are not supported.
    fn riomap(socket: c_int, buf: *mut c_void, len: size_t, prot: c_int, flags: c_int, offset: off_t) -> off_t;
    /// `riounmap`: rsockets are not supported.
    fn riounmap(socket: c_int, buf: *mut c_void, len: size_t) -> c_int;
}

/// `riowrite`: rsockets are not supported. Its `size_t` result carries -1 as `SIZE_MAX`.
#[no_mangle]
pub extern "C" fn riowrite(
    _socket: c_int,
    _buf: *const c_void,
    _count: size_t,
    _offset: off_t,
    _flags: c_int,
) -> size_t {
    errno::fail(libc::ENOSYS) as size_t
}

/// `int rpoll(struct pollfd *fds, nfds_t nfds, int timeout)`: `poll(2)`, since no file can be
/// an rsocket here.
///
/// # Safety
///
/// As `poll(2)`'s: `fds` is valid for `nfds` entries.
#[no_mangle]
pub unsafe extern "C" fn rpoll(fds: *mut pollfd, nfds: nfds_t, timeout: c_int) -> c_int {
    // SAFETY: The caller passes what poll(2) needs.
    unsafe { libc::poll(fds, nfds, timeout) }
}
