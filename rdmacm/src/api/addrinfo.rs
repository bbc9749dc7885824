//! `rdma_getaddrinfo` and `rdma_freeaddrinfo`: names and services to RDMA addresses, through
//! the C library's `getaddrinfo`, as librdmacm does without ibacm.
//!
//! Only the IP families: `AF_IB` hints (`RAI_FAMILY` with `AF_IB`) fail with `EAFNOSUPPORT`,
//! since cepm speaks RoCE, where an address is an IP address. `ai_route` and `ai_connect` stay
//! NULL: routes are resolved per ID by `rdma_resolve_route`.

use core::{
    ffi::{c_char, c_int},
    mem::size_of,
    ptr,
};

use crate::{errno, sys};

/// The socket type and protocol that stand for an RDMA QP type and port space in a
/// `getaddrinfo` query.
fn socket_hints(qp_type: sys::ibv_qp_type, port_space: sys::rdma_port_space) -> (c_int, c_int) {
    let socktype = match qp_type {
        sys::IBV_QPT_RC | sys::IBV_QPT_UC | sys::IBV_QPT_XRC_SEND | sys::IBV_QPT_XRC_RECV => {
            libc::SOCK_STREAM
        }
        sys::IBV_QPT_UD => libc::SOCK_DGRAM,
        _ => 0,
    };
    let protocol = match port_space {
        sys::RDMA_PS_TCP => libc::IPPROTO_TCP,
        sys::RDMA_PS_UDP | sys::RDMA_PS_IPOIB => libc::IPPROTO_UDP,
        sys::RDMA_PS_IB if socktype == libc::SOCK_STREAM => libc::IPPROTO_TCP,
        sys::RDMA_PS_IB if socktype == libc::SOCK_DGRAM => libc::IPPROTO_UDP,
        _ => 0,
    };
    (socktype, protocol)
}

/// The QP type and port space a `getaddrinfo` answer stands for, where the hints leave them
/// open (0).
fn rdma_kind(
    hints: &sys::rdma_addrinfo,
    socktype: c_int,
    protocol: c_int,
) -> (sys::ibv_qp_type, sys::rdma_port_space) {
    let qp_type = match (hints.ai_qp_type, socktype) {
        (0, libc::SOCK_STREAM) => sys::IBV_QPT_RC as c_int,
        (0, libc::SOCK_DGRAM) => sys::IBV_QPT_UD as c_int,
        (given, _) => given,
    };
    let port_space = match (hints.ai_port_space, protocol) {
        (0, libc::IPPROTO_TCP) => sys::RDMA_PS_TCP as c_int,
        (0, libc::IPPROTO_UDP) => sys::RDMA_PS_UDP as c_int,
        (given, _) => given,
    };
    (
        qp_type as sys::ibv_qp_type,
        port_space as sys::rdma_port_space,
    )
}

/// A `malloc`ed copy of `len` bytes at `src`, which `rdma_freeaddrinfo` frees.
///
/// # Safety
///
/// `src` is valid for reads of `len` bytes.
unsafe fn malloc_copy<T>(src: *const T, len: usize) -> Result<*mut T, c_int> {
    // SAFETY: Any size may be asked of malloc.
    let dst = unsafe { libc::malloc(len.max(1)) }.cast::<T>();
    if dst.is_null() {
        return Err(libc::ENOMEM);
    }
    // SAFETY: `dst` was just allocated with `len` bytes; the caller vouches for `src`.
    unsafe { ptr::copy_nonoverlapping(src.cast::<u8>(), dst.cast::<u8>(), len) };
    Ok(dst)
}

/// Fills `rai` from `getaddrinfo(node, service)` under `hints`: its first answer, as
/// librdmacm takes it. `Err` holds either `getaddrinfo`'s own (EAI_*) code, returned as it is,
/// or an errno.
///
/// # Safety
///
/// `node` and `service` are NULL or C strings; `rai` is zeroed and owned by the caller.
unsafe fn from_getaddrinfo(
    node: *const c_char,
    service: *const c_char,
    hints: Option<&sys::rdma_addrinfo>,
    rai: &mut sys::rdma_addrinfo,
) -> Result<(), Failure> {
    let none = sys::rdma_addrinfo::default();
    let rdma_hints = hints.unwrap_or(&none);
    // SAFETY: An all-zero addrinfo is valid ("no hints" in every field).
    let mut ai_hints: libc::addrinfo = unsafe { core::mem::zeroed() };
    if hints.is_some() {
        if rdma_hints.ai_flags & sys::RAI_PASSIVE as c_int != 0 {
            ai_hints.ai_flags |= libc::AI_PASSIVE;
        }
        if rdma_hints.ai_flags & sys::RAI_NUMERICHOST as c_int != 0 {
            ai_hints.ai_flags |= libc::AI_NUMERICHOST;
        }
        ai_hints.ai_family = rdma_hints.ai_family;
        (ai_hints.ai_socktype, ai_hints.ai_protocol) = socket_hints(
            rdma_hints.ai_qp_type as sys::ibv_qp_type,
            rdma_hints.ai_port_space as sys::rdma_port_space,
        );
    }
    let mut answers: *mut libc::addrinfo = ptr::null_mut();
    // SAFETY: The caller vouches for `node` and `service`; `ai_hints` and `answers` are ours.
    let rc = unsafe {
        libc::getaddrinfo(
            node,
            service,
            if hints.is_some() {
                &ai_hints
            } else {
                ptr::null()
            },
            &mut answers,
        )
    };
    if rc != 0 {
        return Err(Failure::Gai(rc));
    }
    // SAFETY: getaddrinfo succeeded: `answers` heads a non-empty list it allocated.
    let first = unsafe { &*answers };
    let filled = fill_from_answer(rdma_hints, first, rai);
    // SAFETY: `answers` came from getaddrinfo and is freed once, after its last use.
    unsafe { libc::freeaddrinfo(answers) };
    filled.map_err(Failure::Errno)
}

/// `rai`'s fields from one `getaddrinfo` answer.
fn fill_from_answer(
    hints: &sys::rdma_addrinfo,
    answer: &libc::addrinfo,
    rai: &mut sys::rdma_addrinfo,
) -> Result<(), c_int> {
    let (qp_type, port_space) = rdma_kind(hints, answer.ai_socktype, answer.ai_protocol);
    rai.ai_qp_type = qp_type as c_int;
    rai.ai_port_space = port_space as c_int;
    rai.ai_family = answer.ai_family;
    let passive = answer.ai_flags & libc::AI_PASSIVE != 0;
    let canonname = if answer.ai_canonname.is_null() {
        ptr::null_mut()
    } else {
        // SAFETY: getaddrinfo's canonical name is a C string.
        let copy = unsafe { libc::strdup(answer.ai_canonname) };
        if copy.is_null() {
            return Err(libc::ENOMEM);
        }
        copy
    };
    // SAFETY: getaddrinfo's address is `ai_addrlen` bytes long.
    let addr = unsafe { malloc_copy(answer.ai_addr, answer.ai_addrlen as usize) }?;
    if passive {
        rai.ai_flags = sys::RAI_PASSIVE as c_int;
        rai.ai_src_canonname = canonname;
        rai.ai_src_addr = addr.cast();
        rai.ai_src_len = answer.ai_addrlen;
    } else {
        rai.ai_dst_canonname = canonname;
        rai.ai_dst_addr = addr.cast();
        rai.ai_dst_len = answer.ai_addrlen;
    }
    Ok(())
}

/// How `rdma_getaddrinfo` fails.
enum Failure {
    /// `getaddrinfo`'s code, returned as librdmacm returns it.
    Gai(c_int),
    /// -1 with this errno.
    Errno(c_int),
}

/// `int rdma_getaddrinfo(const char *node, const char *service, const struct rdma_addrinfo
/// *hints, struct rdma_addrinfo **res)`.
///
/// # Safety
///
/// As librdmacm's: `node` and `service` are NULL or C strings, `hints` is NULL or valid,
/// `res` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn rdma_getaddrinfo(
    node: *const c_char,
    service: *const c_char,
    hints: *const sys::rdma_addrinfo,
    res: *mut *mut sys::rdma_addrinfo,
) -> c_int {
    // SAFETY: The caller passes NULL or a valid rdma_addrinfo.
    let hints = unsafe { hints.as_ref() };
    if (node.is_null() && service.is_null() && hints.is_none()) || res.is_null() {
        return errno::fail(libc::EINVAL);
    }
    if let Some(h) = hints {
        if h.ai_flags & sys::RAI_FAMILY as c_int != 0 && h.ai_family == sys::AF_IB as c_int {
            return errno::fail(libc::EAFNOSUPPORT);
        }
    }
    // SAFETY: calloc of one rdma_addrinfo, all zero: a valid, empty one.
    let rai =
        unsafe { libc::calloc(1, size_of::<sys::rdma_addrinfo>()) }.cast::<sys::rdma_addrinfo>();
    if rai.is_null() {
        return errno::fail(libc::ENOMEM);
    }
    // SAFETY: Just allocated and zeroed, so ours alone.
    let r = unsafe { &mut *rai };
    let filled = if !node.is_null() || !service.is_null() {
        // SAFETY: The caller vouches for the strings; `r` is zeroed and ours.
        unsafe { from_getaddrinfo(node, service, hints, r) }
    } else {
        // No name to look up: the hints are the answer.
        let h = hints.unwrap_or(&sys::rdma_addrinfo::default()).to_owned();
        r.ai_flags = h.ai_flags;
        r.ai_family = h.ai_family;
        r.ai_qp_type = h.ai_qp_type;
        r.ai_port_space = h.ai_port_space;
        copy_hint_addr(
            h.ai_dst_addr,
            h.ai_dst_len,
            &mut r.ai_dst_addr,
            &mut r.ai_dst_len,
        )
        .map_err(Failure::Errno)
    };
    // A source address in the hints goes with the answer, if it has none.
    let filled = filled.and_then(|()| match hints {
        Some(h) if r.ai_src_len == 0 => copy_hint_addr(
            h.ai_src_addr,
            h.ai_src_len,
            &mut r.ai_src_addr,
            &mut r.ai_src_len,
        )
        .map_err(Failure::Errno),
        _ => Ok(()),
    });
    match filled {
        Ok(()) => {
            // SAFETY: The caller passes `res` valid for a write.
            unsafe { *res = rai };
            0
        }
        Err(failure) => {
            // SAFETY: `rai` is ours, filled only with what rdma_freeaddrinfo frees.
            unsafe { rdma_freeaddrinfo(rai) };
            match failure {
                Failure::Gai(code) => code,
                Failure::Errno(e) => errno::fail(e),
            }
        }
    }
}

/// A copy of a hint's address, if it has one.
fn copy_hint_addr(
    src: *const sys::sockaddr,
    len: libc::socklen_t,
    dst: &mut *mut sys::sockaddr,
    dst_len: &mut libc::socklen_t,
) -> Result<(), c_int> {
    if len == 0 || src.is_null() {
        return Ok(());
    }
    // SAFETY: The hints' address is `len` bytes long, as rdma_getaddrinfo's contract says.
    *dst = unsafe { malloc_copy(src, len as usize) }?.cast();
    *dst_len = len;
    Ok(())
}

/// `void rdma_freeaddrinfo(struct rdma_addrinfo *res)`: the list and all it points to.
///
/// # Safety
///
/// `res` is NULL or a list from [`rdma_getaddrinfo`], not freed before.
#[no_mangle]
pub unsafe extern "C" fn rdma_freeaddrinfo(mut res: *mut sys::rdma_addrinfo) {
    while !res.is_null() {
        // SAFETY: Each entry came from rdma_getaddrinfo, every pointer in it from malloc (or
        // NULL), and the caller gives the list up.
        unsafe {
            let rai = &*res;
            let next = rai.ai_next;
            libc::free(rai.ai_connect);
            libc::free(rai.ai_route.cast());
            libc::free(rai.ai_src_canonname.cast());
            libc::free(rai.ai_dst_canonname.cast());
            libc::free(rai.ai_src_addr.cast());
            libc::free(rai.ai_dst_addr.cast());
            libc::free(res.cast());
            res = next;
        }
    }
}

/// `RAI_SA` and `RAI_DNS` of librdmacm's RDMACM_1.4 (rdma-core's later `<rdma/rdma_cma.h>`):
/// resolve through the InfiniBand SA, or through DNS; not both.
const RAI_SA: c_int = 0x10;
/// See [`RAI_SA`].
const RAI_DNS: c_int = 0x20;

/// `int rdma_resolve_addrinfo(struct rdma_cm_id *id, const char *node, const char *service,
/// const struct rdma_addrinfo *hints)`: [`rdma_getaddrinfo`] for `id`, whose result
/// `rdma_query_addrinfo` takes once the ID's `ADDRINFO_RESOLVED` event is out, as librdmacm's
/// DNS path does it (`resolve_ai_dns` in rdma-core's `librdmacm/cma.c`). `EBUSY` while a
/// result waits; `RAI_SA` (a service record from the InfiniBand SA, which RoCE has not) is
/// `EOPNOTSUPP`, as is `RAI_SA` with `RAI_DNS` in librdmacm. A failed lookup fails the call.
///
/// # Safety
///
/// `id` is not destroyed during the call (see [`crate::api`]); `node`, `service` and `hints`
/// as [`rdma_getaddrinfo`]'s.
#[no_mangle]
pub unsafe extern "C" fn rdma_resolve_addrinfo(
    id: *mut sys::rdma_cm_id,
    node: *const c_char,
    service: *const c_char,
    hints: *const sys::rdma_addrinfo,
) -> c_int {
    // SAFETY: No one destroys the ID during the call (the caller's promise).
    let Ok(this) = (unsafe { super::ids::id_of(id) }) else {
        return errno::fail(libc::EINVAL);
    };
    // SAFETY: The caller passes NULL or a valid rdma_addrinfo.
    let flags = unsafe { hints.as_ref() }.map_or(0, |h| h.ai_flags);
    if flags & RAI_SA != 0 {
        return errno::fail(libc::EOPNOTSUPP);
    }
    {
        let mut state = this.state();
        if state.resolving_ai {
            return errno::fail(libc::EBUSY);
        }
        state.resolving_ai = true;
    }
    // Our rdma_getaddrinfo knows no RAI_DNS: DNS is its only way.
    // SAFETY: As above.
    let plain = unsafe { hints.as_ref() }.map(|h| {
        let mut h = *h;
        h.ai_flags &= !RAI_DNS;
        h
    });
    let mut res = ptr::null_mut();
    let hints_ptr: *const sys::rdma_addrinfo = match &plain {
        Some(h) => h,
        None => ptr::null(),
    };
    // SAFETY: The caller's strings; `hints_ptr` NULL or a copy of the caller's hints.
    let ret = unsafe { rdma_getaddrinfo(node, service, hints_ptr, &mut res) };
    if ret != 0 {
        let e = errno::last_or(libc::ENOENT);
        this.state().resolving_ai = false;
        return errno::fail(e);
    }
    this.state().resolved_ai = res;
    this.channel().post_made(
        this.as_ptr(),
        this.handle(),
        crate::event::RDMA_CM_EVENT_ADDRINFO_RESOLVED,
        0,
    );
    errno::status(crate::sync::complete(this))
}

/// `int rdma_query_addrinfo(struct rdma_cm_id *id, struct rdma_addrinfo **info)`: the result
/// of `rdma_resolve_addrinfo`, handed over (the caller frees it with `rdma_freeaddrinfo`).
/// `EINVAL` for a NULL argument, `ENOENT` when no result waits.
///
/// # Safety
///
/// `id` is not destroyed during the call (see [`crate::api`]); `info` NULL or valid for a
/// write.
#[no_mangle]
pub unsafe extern "C" fn rdma_query_addrinfo(
    id: *mut sys::rdma_cm_id,
    info: *mut *mut sys::rdma_addrinfo,
) -> c_int {
    // SAFETY: No one destroys the ID during the call (the caller's promise).
    let Ok(this) = (unsafe { super::ids::id_of(id) }) else {
        return errno::fail(libc::EINVAL);
    };
    if info.is_null() {
        return errno::fail(libc::EINVAL);
    }
    let mut state = this.state();
    if !state.resolving_ai || state.resolved_ai.is_null() {
        return errno::fail(libc::ENOENT);
    }
    // SAFETY: The caller passes `info` valid for a write.
    unsafe { *info = core::mem::replace(&mut state.resolved_ai, ptr::null_mut()) };
    state.resolving_ai = false;
    0
}

#[cfg(test)]
mod tests {
    use core::ffi::CStr;

    use super::*;

    /// The one answer of a numeric query, freed after `check` looked at it.
    fn query(
        node: Option<&CStr>,
        service: Option<&CStr>,
        hints: Option<&sys::rdma_addrinfo>,
        check: impl FnOnce(&sys::rdma_addrinfo),
    ) {
        let mut res = ptr::null_mut();
        // SAFETY: C strings or NULL, hints NULL or valid, `res` ours.
        let rc = unsafe {
            rdma_getaddrinfo(
                node.map_or(ptr::null(), CStr::as_ptr),
                service.map_or(ptr::null(), CStr::as_ptr),
                hints.map_or(ptr::null(), |h| h as *const _),
                &mut res,
            )
        };
        assert_eq!(rc, 0);
        // SAFETY: rdma_getaddrinfo succeeded.
        let rai = unsafe { &*res };
        assert!(rai.ai_next.is_null());
        check(rai);
        // SAFETY: The list came from rdma_getaddrinfo.
        unsafe { rdma_freeaddrinfo(res) };
    }

    fn sockaddr_in(addr: *const sys::sockaddr, len: libc::socklen_t) -> libc::sockaddr_in {
        assert_eq!(len as usize, size_of::<libc::sockaddr_in>());
        // SAFETY: An AF_INET address of the right length.
        unsafe { *addr.cast::<libc::sockaddr_in>() }
    }

    #[test]
    fn an_active_tcp_query_gives_the_destination() {
        let hints = sys::rdma_addrinfo {
            ai_port_space: sys::RDMA_PS_TCP as c_int,
            ai_flags: sys::RAI_NUMERICHOST as c_int,
            ..Default::default()
        };
        query(Some(c"10.77.0.2"), Some(c"7471"), Some(&hints), |rai| {
            assert_eq!(rai.ai_family, libc::AF_INET);
            assert_eq!(rai.ai_qp_type, sys::IBV_QPT_RC as c_int);
            assert_eq!(rai.ai_port_space, sys::RDMA_PS_TCP as c_int);
            assert_eq!(rai.ai_flags & sys::RAI_PASSIVE as c_int, 0);
            assert!(rai.ai_src_addr.is_null() && rai.ai_src_len == 0);
            let dst = sockaddr_in(rai.ai_dst_addr, rai.ai_dst_len);
            assert_eq!(u16::from_be(dst.sin_port), 7471);
            assert_eq!(dst.sin_addr.s_addr.to_ne_bytes(), [10, 77, 0, 2]);
        });
    }

    #[test]
    fn a_passive_query_gives_the_source() {
        let hints = sys::rdma_addrinfo {
            ai_flags: sys::RAI_PASSIVE as c_int,
            ai_family: libc::AF_INET,
            ai_port_space: sys::RDMA_PS_TCP as c_int,
            ..Default::default()
        };
        query(None, Some(c"7471"), Some(&hints), |rai| {
            assert_eq!(rai.ai_flags, sys::RAI_PASSIVE as c_int);
            assert!(rai.ai_dst_addr.is_null());
            let src = sockaddr_in(rai.ai_src_addr, rai.ai_src_len);
            assert_eq!(u16::from_be(src.sin_port), 7471);
            assert_eq!(src.sin_addr.s_addr, 0); // INADDR_ANY
        });
    }

    #[test]
    fn a_udp_port_space_asks_for_datagrams_and_gives_ud() {
        let hints = sys::rdma_addrinfo {
            ai_port_space: sys::RDMA_PS_UDP as c_int,
            ..Default::default()
        };
        query(Some(c"::1"), Some(c"7174"), Some(&hints), |rai| {
            assert_eq!(rai.ai_family, libc::AF_INET6);
            assert_eq!(rai.ai_qp_type, sys::IBV_QPT_UD as c_int);
            assert_eq!(rai.ai_port_space, sys::RDMA_PS_UDP as c_int);
            assert_eq!(rai.ai_dst_len as usize, size_of::<libc::sockaddr_in6>());
        });
    }

    #[test]
    fn hints_without_a_name_are_the_answer() {
        let dst = libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: 7471u16.to_be(),
            sin_addr: libc::in_addr {
                s_addr: u32::from_ne_bytes([10, 77, 0, 2]),
            },
            sin_zero: [0; 8],
        };
        let hints = sys::rdma_addrinfo {
            ai_family: libc::AF_INET,
            ai_qp_type: sys::IBV_QPT_RC as c_int,
            ai_port_space: sys::RDMA_PS_IB as c_int,
            ai_dst_len: size_of::<libc::sockaddr_in>() as libc::socklen_t,
            ai_dst_addr: (&dst as *const libc::sockaddr_in).cast_mut().cast(),
            ..Default::default()
        };
        query(None, None, Some(&hints), |rai| {
            assert_eq!(rai.ai_port_space, sys::RDMA_PS_IB as c_int);
            assert_ne!(
                rai.ai_dst_addr.cast_const(),
                hints.ai_dst_addr.cast_const(),
                "a copy"
            );
            let copy = sockaddr_in(rai.ai_dst_addr, rai.ai_dst_len);
            assert_eq!(copy.sin_port, dst.sin_port);
            assert_eq!(copy.sin_addr.s_addr, dst.sin_addr.s_addr);
        });
    }

    #[test]
    fn failures_follow_librdmacm() {
        let mut res = ptr::null_mut();
        // SAFETY: NULL strings and hints, `res` ours.
        let rc = unsafe { rdma_getaddrinfo(ptr::null(), ptr::null(), ptr::null(), &mut res) };
        assert_eq!(
            (rc, std::io::Error::last_os_error().raw_os_error()),
            (-1, Some(libc::EINVAL))
        );
        let numeric = sys::rdma_addrinfo {
            ai_flags: sys::RAI_NUMERICHOST as c_int,
            ..Default::default()
        };
        // SAFETY: As above, with valid hints.
        let rc = unsafe {
            rdma_getaddrinfo(c"not-an-address".as_ptr(), ptr::null(), &numeric, &mut res)
        };
        assert_eq!(rc, libc::EAI_NONAME, "getaddrinfo's code, as it is");
        let ib = sys::rdma_addrinfo {
            ai_flags: sys::RAI_FAMILY as c_int,
            ai_family: sys::AF_IB as c_int,
            ..Default::default()
        };
        // SAFETY: As above.
        let rc = unsafe { rdma_getaddrinfo(c"::1".as_ptr(), ptr::null(), &ib, &mut res) };
        assert_eq!(
            (rc, std::io::Error::last_os_error().raw_os_error()),
            (-1, Some(libc::EAFNOSUPPORT))
        );
        assert!(res.is_null(), "nothing is returned on failure");
    }
}
