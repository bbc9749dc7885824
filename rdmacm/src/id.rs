//! An `rdma_cm_id`: the application's view (`public`), the CEP behind it in its channel's
//! `/dev/cepm`, and what the library keeps about it (addresses, the resolved route, options,
//! and the count of events read but not yet acknowledged).
//!
//! # Invariants
//!
//! `public` is the first field, so that the application's `struct rdma_cm_id *` points to the
//! whole [`Id`]. `public.channel` is the channel whose file holds CEP `handle` and whose map
//! has this ID under it, for as long as the ID is alive.
//!
//! # Sharing with the application
//!
//! The application reads `public` through its pointer whenever it likes, and writes `context`.
//! So the library never holds a Rust reference to an [`Id`] that would claim it alone: calls
//! get an `&Id`, the library's own state is behind a lock, and `public` is in an `UnsafeCell`,
//! copied out by [`Id::public`] and changed by [`Id::update`]. librdmacm's contract gives the
//! rest: the application does not make two calls on one ID at once, nor read a field that a
//! call on the ID is changing. The library changes `public` only in calls on the ID, in the
//! thread reading events on an ID the application does not have yet (a CONNECT_REQUEST's),
//! or, for an address resolution, in the thread that finishes it, before the event that
//! reports it: as librdmacm fills in what the resolution found only when it reports it.

use core::ffi::c_int;
use std::{
    cell::UnsafeCell,
    net::{IpAddr, SocketAddr},
    ptr,
    sync::{
        atomic::{AtomicBool, AtomicU32, Ordering},
        Arc, Condvar, Mutex, MutexGuard,
    },
};

use crate::{
    channel::Channel,
    live, multicast,
    resolve::{address::Resolved, pending::Ticket},
    sys,
};

/// Where an ID is in its life, as far as the library's own checks go (the CEP's state in the
/// kernel has the last word).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Created, or bound.
    Idle,
    /// `rdma_resolve_addr` returned; its result is not in yet.
    AddrQuery,
    /// `rdma_resolve_addr` succeeded.
    AddrResolved,
    /// `rdma_resolve_route` succeeded: ready to connect.
    RouteResolved,
    /// Listening.
    Listening,
    /// The REQ (or SIDR_REQ) was sent.
    Connecting,
    /// Born from a CONNECT_REQUEST, not yet accepted or rejected.
    Requested,
    /// The REP was sent, or the connection is up.
    Connected,
    /// Disconnected, rejected or unreachable: only destroy is left.
    Done,
}

/// What [`rdma_set_option`](crate::api::options) sets.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Options {
    /// `RDMA_OPTION_ID_TOS`: the traffic class of the path.
    pub(crate) tos: Option<u8>,
    /// `RDMA_OPTION_ID_REUSEADDR`.
    pub(crate) reuse_addr: bool,
    /// `RDMA_OPTION_ID_AFONLY`, if set: else rdma_cm's default ([`Options::af_only_for`]).
    pub(crate) af_only: Option<bool>,
    /// `RDMA_OPTION_ID_ACK_TIMEOUT`: the QP's local ACK timeout, overriding the path's.
    pub(crate) ack_timeout: Option<u8>,
}

impl Options {
    /// Whether a wildcard bound to `addr` takes requests of its own family only: as set, else
    /// rdma_cm's default (`rdma_bind_addr_dst` in drivers/infiniband/core/cma.c): IPv4 always,
    /// IPv6 as the `net.ipv6.bindv6only` sysctl says.
    pub(crate) fn af_only_for(&self, addr: std::net::IpAddr) -> bool {
        self.af_only.unwrap_or_else(|| {
            addr.is_ipv4()
                || std::fs::read_to_string("/proc/sys/net/ipv6/bindv6only")
                    .is_ok_and(|v| v.trim() == "1")
        })
    }
}

/// The library's state of an ID, under its lock.
pub(crate) struct IdState {
    /// Where it is.
    pub(crate) phase: Phase,
    /// Events of this ID handed to the application.
    pub(crate) events_reported: u64,
    /// Of those, the ones acknowledged.
    pub(crate) events_acked: u64,
    /// The bound or resolved local address.
    pub(crate) local: Option<SocketAddr>,
    /// The address and port the module holds for it (`CEPM_IOC_BIND`, ABI 7), from
    /// `rdma_bind_addr`, or from `rdma_resolve_addr` or `rdma_listen` on an unbound ID.
    pub(crate) bound: Option<SocketAddr>,
    /// The peer's address.
    pub(crate) remote: Option<SocketAddr>,
    /// Address resolution's result: device, port, GIDs, next hop.
    pub(crate) resolved: Option<Resolved>,
    /// The ticket of the address resolution in flight, which the ID's destroy cancels.
    pub(crate) resolving: Option<Arc<Ticket>>,
    /// The depths a CONNECT_REQUEST asked for (responder resources, initiator depth), from the
    /// passive side's point of view.
    pub(crate) requested: (u8, u8),
    /// The receive PSN the module chose when it gave this ID its request (ABI 6): RTR gives
    /// it before `rdma_accept`, whose REP must announce it. `None` from an older module, or
    /// for an active ID: `rdma_accept` draws one then.
    pub(crate) local_psn: Option<u32>,
    /// Options set on it.
    pub(crate) options: Options,
    /// The ECE its REQ or REP is to carry (`rdma_set_local_ece`, or its QP's).
    pub(crate) local_ece: sys::ibv_ece,
    /// The ECE of the peer's REQ or REP (`rdma_get_remote_ece`).
    pub(crate) remote_ece: sys::ibv_ece,
    /// `rdma_resolve_addrinfo` was called, and `rdma_query_addrinfo` has not taken its result.
    pub(crate) resolving_ai: bool,
    /// That result (NULL until there is one); freed with the ID if never taken.
    pub(crate) resolved_ai: *mut sys::rdma_addrinfo,
    /// The arguments of the `USER` events `rdma_write_cm_event` queued, oldest first.
    pub(crate) user_args: std::collections::VecDeque<u64>,
    /// Processing a REP failed; the REJECTED or DISCONNECTED that follows is not reported.
    pub(crate) connect_error: bool,
    /// The peer's DREQ arrived: `rdma_disconnect` answers it with a DREP.
    pub(crate) peer_disconnected: bool,
    /// The path record `route.path_rec` points to, once the route is resolved.
    pub(crate) path: Option<Box<sys::ibv_sa_path_rec>>,
    /// A passive endpoint's QP attributes (`rdma_create_ep`): `rdma_get_request` gives each
    /// new ID a QP made with them.
    pub(crate) endpoint_qp: Option<sys::ibv_qp_init_attr>,
    /// Its multicast joins.
    pub(crate) groups: multicast::Groups,
}

/// An ID.
#[repr(C)]
pub(crate) struct Id {
    /// What the application sees (see "Sharing with the application" above).
    public: UnsafeCell<sys::rdma_cm_id>,
    /// Its CEP, in `public.channel`'s file; `rdma_migrate_id` changes it.
    handle: AtomicU32,
    /// Synchronous: calls that lead to an event wait for it, and keep it in `public.event`
    /// until the next such call (librdmacm's `ucma_complete`); `rdma_migrate_id` changes it.
    sync: AtomicBool,
    state: Mutex<IdState>,
    acked: Condvar,
}

impl Id {
    /// A new ID on `channel`, for CEP `handle`, not yet in the channel's map.
    pub(crate) fn new(
        channel: *mut sys::rdma_event_channel,
        handle: u32,
        context: *mut core::ffi::c_void,
        port_space: sys::rdma_port_space,
        qp_type: sys::ibv_qp_type,
        sync: bool,
    ) -> Box<Self> {
        let id = Box::new(Self {
            public: UnsafeCell::new(sys::rdma_cm_id {
                channel,
                context,
                ps: port_space,
                qp_type,
                ..Default::default()
            }),
            handle: AtomicU32::new(handle),
            sync: AtomicBool::new(sync),
            state: Mutex::new(IdState {
                phase: Phase::Idle,
                events_reported: 0,
                events_acked: 0,
                local: None,
                bound: None,
                remote: None,
                resolved: None,
                resolving: None,
                requested: (0, 0),
                local_psn: None,
                options: Options::default(),
                local_ece: sys::ibv_ece::default(),
                remote_ece: sys::ibv_ece::default(),
                resolving_ai: false,
                resolved_ai: core::ptr::null_mut(),
                user_args: std::collections::VecDeque::new(),
                connect_error: false,
                peer_disconnected: false,
                path: None,
                endpoint_qp: None,
                groups: multicast::Groups::default(),
            }),
            acked: Condvar::new(),
        });
        live::IDS.insert(&*id);
        id
    }

    /// The ID behind an application's pointer, if it is a live ID of this library (`EINVAL`
    /// for NULL, for one destroyed, or for any other pointer: see [`crate::live`]).
    ///
    /// # Safety
    ///
    /// No other thread frees the ID during the call (librdmacm's contract).
    pub(crate) unsafe fn of_app<'a>(id: *mut sys::rdma_cm_id) -> Result<&'a Id, c_int> {
        let id = id.cast::<Id>();
        if !live::IDS.contains(id) {
            return Err(libc::EINVAL);
        }
        // SAFETY: A live ID (checked), which stays so for the call (the caller's promise);
        // `public` is its first field, so the application's pointer is the ID's.
        Ok(unsafe { &*id })
    }

    /// The ID as a raw pointer, to name it (in a channel's map, as an event's owner) and to reach
    /// it shared again. The ID is freed only through the pointer it was made with.
    pub(crate) fn as_ptr(&self) -> *mut Id {
        ptr::from_ref(self).cast_mut()
    }

    /// Its CEP's handle in its channel's file.
    pub(crate) fn handle(&self) -> u32 {
        self.handle.load(Ordering::Acquire)
    }

    /// Whether it is synchronous (see `sync`).
    pub(crate) fn is_sync(&self) -> bool {
        self.sync.load(Ordering::Acquire)
    }

    /// After `rdma_migrate_id`: its CEP's handle in the new channel's file, and whether it is
    /// synchronous there.
    pub(crate) fn moved(&self, handle: u32, sync: bool) {
        self.handle.store(handle, Ordering::Release);
        self.sync.store(sync, Ordering::Release);
    }

    /// The application's pointer to this ID: what `rdma_create_id` hands out and events name.
    pub(crate) fn as_public(&self) -> *mut sys::rdma_cm_id {
        self.public.get()
    }

    /// A copy of the application's view.
    pub(crate) fn public(&self) -> sys::rdma_cm_id {
        // SAFETY: `public` is initialised, and nothing changes it meanwhile (see "Sharing with
        // the application"); the copy is taken without making a reference.
        unsafe { self.public.get().read() }
    }

    /// Changes the application's view: `change` has it for the length of the call.
    pub(crate) fn update<R>(&self, change: impl FnOnce(&mut sys::rdma_cm_id) -> R) -> R {
        // SAFETY: No other reference to `public` exists: the library makes none outside this
        // call, and no one else reads or writes it meanwhile (see "Sharing with the
        // application").
        change(unsafe { &mut *self.public.get() })
    }

    /// The channel the ID is on.
    pub(crate) fn channel(&self) -> &Channel {
        // SAFETY: By the type invariant, `public.channel` is the live channel of this ID.
        unsafe { Channel::from_public(self.public().channel) }
    }

    /// Its state, locked.
    pub(crate) fn state(&self) -> MutexGuard<'_, IdState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Counts one more event handed out.
    pub(crate) fn event_reported(&self) {
        self.state().events_reported += 1;
    }

    /// Counts one event acknowledged, and wakes a destroy waiting for it.
    pub(crate) fn event_acked(&self) {
        self.state().events_acked += 1;
        self.acked.notify_all();
    }

    /// Waits until every event handed out has been acknowledged.
    pub(crate) fn wait_for_acks(&self) {
        let mut state = self.state();
        while state.events_acked < state.events_reported {
            state = self.acked.wait(state).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Writes `addr` into `route.addr`'s source (or destination) slot.
    pub(crate) fn set_address(&self, local: bool, addr: SocketAddr) {
        let storage = socket_storage(addr);
        // Both slots are unions of plain socket address types over a sockaddr_storage:
        // writing the storage member writes them all.
        self.update(|public| {
            if local {
                public.route.addr.__bindgen_anon_1.src_storage = storage;
            } else {
                public.route.addr.__bindgen_anon_2.dst_storage = storage;
            }
        });
    }
}

/// A socket address as C has it.
pub(crate) fn socket_storage(addr: SocketAddr) -> sys::sockaddr_storage {
    let mut storage = sys::sockaddr_storage::default();
    let base: *mut sys::sockaddr_storage = &mut storage;
    match addr {
        SocketAddr::V4(v4) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: v4.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from_ne_bytes(v4.ip().octets()),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: A sockaddr_storage is large and aligned enough for a sockaddr_in.
            unsafe { base.cast::<libc::sockaddr_in>().write(sin) };
        }
        SocketAddr::V6(v6) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: v6.port().to_be(),
                sin6_flowinfo: v6.flowinfo(),
                sin6_addr: libc::in6_addr {
                    s6_addr: v6.ip().octets(),
                },
                sin6_scope_id: v6.scope_id(),
            };
            // SAFETY: As above, for a sockaddr_in6.
            unsafe { base.cast::<libc::sockaddr_in6>().write(sin6) };
        }
    }
    storage
}

/// The socket address at `addr`, if it is IPv4 or IPv6 (`EINVAL` otherwise, as librdmacm's
/// `ucma_addrlen` refuses it).
///
/// # Safety
///
/// `addr` is NULL or points to a socket address as long as its family says.
pub(crate) unsafe fn socket_addr(addr: *const sys::sockaddr) -> Result<SocketAddr, i32> {
    if addr.is_null() {
        return Err(libc::EINVAL);
    }
    // SAFETY: The caller vouches for a socket address; its family is its first field.
    let family = c_int_of(unsafe { (*addr).sa_family });
    match family {
        libc::AF_INET => {
            // SAFETY: An AF_INET address is a sockaddr_in.
            let sin = unsafe { &*addr.cast::<libc::sockaddr_in>() };
            Ok(SocketAddr::new(
                IpAddr::from(sin.sin_addr.s_addr.to_ne_bytes()),
                u16::from_be(sin.sin_port),
            ))
        }
        libc::AF_INET6 => {
            // SAFETY: An AF_INET6 address is a sockaddr_in6.
            let sin6 = unsafe { &*addr.cast::<libc::sockaddr_in6>() };
            Ok(SocketAddr::V6(std::net::SocketAddrV6::new(
                sin6.sin6_addr.s6_addr.into(),
                u16::from_be(sin6.sin6_port),
                sin6.sin6_flowinfo,
                sin6.sin6_scope_id,
            )))
        }
        _ => Err(libc::EINVAL),
    }
}

fn c_int_of(family: sys::sa_family_t) -> i32 {
    i32::from(family)
}

impl Drop for Id {
    fn drop(&mut self) {
        live::IDS.remove(self);
        let ai = core::mem::replace(&mut self.state().resolved_ai, core::ptr::null_mut());
        // SAFETY: A result of rdma_getaddrinfo that no one took: the ID's alone.
        unsafe { crate::api::addrinfo::rdma_freeaddrinfo(ai) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn socket_addresses_go_to_c_and_back() {
        for text in [
            "10.77.0.1:7471",
            "[fe80::24:13ff:fec5:518f]:80",
            "0.0.0.0:0",
        ] {
            let addr: SocketAddr = text.parse().unwrap();
            let storage = socket_storage(addr);
            // SAFETY: A sockaddr_storage holds the address just written.
            let back = unsafe { socket_addr((&storage as *const sys::sockaddr_storage).cast()) };
            assert_eq!(back, Ok(addr));
        }
        let unix = sys::sockaddr_storage {
            ss_family: libc::AF_UNIX as sys::sa_family_t,
            ..Default::default()
        };
        // SAFETY: As above.
        let got = unsafe { socket_addr((&unix as *const sys::sockaddr_storage).cast()) };
        assert_eq!(got, Err(libc::EINVAL));
        // SAFETY: NULL is allowed.
        assert_eq!(unsafe { socket_addr(core::ptr::null()) }, Err(libc::EINVAL));
    }
}
