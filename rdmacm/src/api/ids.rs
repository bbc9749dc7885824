//! IDs, addresses and routes: `rdma_create_id`, `rdma_destroy_id`, `rdma_bind_addr`,
//! `rdma_resolve_addr`, `rdma_resolve_route`, `rdma_listen`, and the events
//! (`rdma_get_cm_event`, `rdma_ack_cm_event`).

use core::ffi::{c_int, c_void};
use std::{
    net::{IpAddr, SocketAddr},
    sync::Arc,
    time::Duration,
};

use cepm::sys as cepm_sys;
use cepm_proto::service_id::{ip_service_id, PortSpace};

use crate::{
    channel::{Channel, IdPtr},
    device, errno,
    event::{self, Event},
    id::{socket_addr, Id, Phase},
    live,
    resolve::{
        address::{self, Resolved},
        gid_table,
        pending::{self, Completion, Ticket},
    },
    route::{self, Route},
    sync, sys,
};

/// The port space of `ps`, if rdma_cm has it.
pub(crate) fn port_space(ps: sys::rdma_port_space) -> Option<PortSpace> {
    PortSpace::from_value(u16::try_from(ps).ok()?)
}

/// The ID behind `id`, or `EINVAL` for NULL or for any pointer that is not a live ID of this
/// library (one destroyed, or read from freed memory: see [`crate::live`]).
///
/// # Safety
///
/// No other thread frees the ID during the call (librdmacm's contract).
pub(crate) unsafe fn id_of<'a>(id: *mut sys::rdma_cm_id) -> Result<&'a Id, c_int> {
    // SAFETY: As the caller promises.
    unsafe { Id::of_app(id) }
}

/// `int rdma_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **id, void
/// *context, enum rdma_port_space ps)`. A NULL channel makes a synchronous ID, on a channel of
/// its own.
///
/// # Safety
///
/// `id` is valid for a write. (`channel` is checked, and held for the call: see [`crate::api`].)
#[no_mangle]
pub unsafe extern "C" fn rdma_create_id(
    channel: *mut sys::rdma_event_channel,
    id: *mut *mut sys::rdma_cm_id,
    context: *mut c_void,
    ps: sys::rdma_port_space,
) -> c_int {
    let qp_type = match ps {
        sys::RDMA_PS_UDP | sys::RDMA_PS_IPOIB => sys::IBV_QPT_UD,
        _ => sys::IBV_QPT_RC,
    };
    if id.is_null() {
        return errno::fail(libc::EINVAL);
    }
    match create_id(channel, context, ps, qp_type) {
        Ok(new) => {
            // SAFETY: The caller passes `id` valid for a write.
            unsafe { *id = new.cast() };
            0
        }
        Err(e) => errno::fail(e),
    }
}

/// A new ID on `channel`, or a synchronous one on a channel of its own when `channel` is NULL
/// (librdmacm's `rdma_create_id2`). `channel` is checked, and held for the call.
pub(crate) fn create_id(
    channel: *mut sys::rdma_event_channel,
    context: *mut c_void,
    ps: sys::rdma_port_space,
    qp_type: sys::ibv_qp_type,
) -> Result<*mut Id, c_int> {
    if port_space(ps).is_none() {
        return Err(libc::EINVAL);
    }
    let sync = channel.is_null();
    let channel = if sync {
        Box::into_raw(Channel::open(true).map_err(errno::of_io)?).cast()
    } else {
        channel
    };
    let chan = Channel::of_app(channel)?;
    let handle = match chan.cepm.create(0) {
        Ok(h) => h,
        Err(e) => {
            drop(chan);
            if sync {
                // SAFETY: Made above, known to no one else.
                let _ = unsafe { Channel::free(channel) };
            }
            return Err(errno::of_io(e));
        }
    };
    let new = Box::into_raw(Id::new(channel, handle, context, ps, qp_type, sync));
    if let Err(e) = chan.add(handle, new) {
        // The channel was destroyed meanwhile (a private one is ours, never closed).
        // SAFETY: Just made, known to no one else.
        drop(unsafe { Box::from_raw(new) });
        let _ = chan.cepm.destroy(handle);
        return Err(e);
    }
    Ok(new)
}

/// `int rdma_destroy_id(struct rdma_cm_id *id)`: ends the CEP (its unread events with it),
/// then waits until every event of the ID handed out has been acknowledged, as librdmacm does.
/// A synchronous ID's last event is acknowledged first; its channel goes with the last ID on
/// it.
///
/// # Safety
///
/// `id` is not used afterwards, nor destroyed during the call (see [`crate::api`]).
#[no_mangle]
pub unsafe extern "C" fn rdma_destroy_id(id: *mut sys::rdma_cm_id) -> c_int {
    // SAFETY: No one destroys the ID during the call (the caller's promise).
    let Ok(this) = (unsafe { id_of(id) }) else {
        return errno::fail(libc::EINVAL);
    };
    // The pointer it was made with (`public` is its first field): the one to free it by.
    let idp: *mut Id = id.cast();
    let channel_ptr = this.public().channel;
    // Held to the end: once the ID has left it, the application may destroy the channel.
    let Ok(channel) = Channel::of_app(channel_ptr) else {
        return errno::fail(libc::EINVAL);
    };
    // First, so that no resolution touches the ID or posts an event for its handle (which a
    // new CEP may get) from here on.
    let resolving = this.state().resolving.take();
    if let Some(ticket) = resolving {
        ticket.cancel();
    }
    if let Err(e) = channel.cepm.destroy(this.handle()) {
        return errno::fail(errno::of_io(e));
    }
    sync::ack_kept(this);
    channel.detach(this, |event| event::discard(&channel, event));
    // SAFETY: Out of every table, with no event left that names it: ours to free.
    drop(unsafe { Box::from_raw(idp) });
    if channel.private && channel.is_empty() {
        // SAFETY: A private channel belongs to its IDs, and this was the last.
        let _ = unsafe { Channel::free(channel_ptr) };
    }
    0
}

/// The RDMA device and port that have a RoCE v2 GID for `ip`, on any netdev.
fn device_of(ip: IpAddr) -> Result<(device::Device, u8), c_int> {
    let gid = gid_table::gid_of(ip);
    let entry = gid_table::find(|e| e.kind == gid_table::GidType::RoceV2 && e.gid == gid)
        .ok_or(libc::EADDRNOTAVAIL)?;
    Ok((device::by_name(&entry.device)?, entry.port))
}

/// Binds `this` to the device behind `ip`.
fn attach_device(this: &Id, ip: IpAddr) -> Result<(), c_int> {
    let (dev, port) = device_of(ip)?;
    this.update(|p| {
        p.verbs = dev.context;
        p.pd = dev.pd;
        p.port_num = port;
    });
    Ok(())
}

/// Reserves `addr`'s port in the module for `this` (port 0: one the module chooses), as
/// `rdma_bind_addr` does in the kernel's rdma_cm, with the ID's REUSEADDR and AFONLY; `dst`
/// for an active ID. Records and returns the address held.
pub(crate) fn reserve_port(
    this: &Id,
    addr: SocketAddr,
    dst: Option<SocketAddr>,
) -> Result<SocketAddr, c_int> {
    let ps = port_space(this.public().ps).ok_or(libc::EINVAL)?;
    let options = this.state().options;
    let mut flags = 0;
    if options.reuse_addr {
        flags |= cepm_sys::CEPM_BIND_REUSEADDR as u8;
    }
    if options.af_only_for(addr.ip()) {
        flags |= cepm_sys::CEPM_BIND_AFONLY as u8;
    }
    let port = this
        .channel()
        .cepm
        .bind(this.handle(), ps.value(), addr, flags, dst)
        .map_err(errno::of_io)?;
    // The address as given, its IPv6 scope and flow label kept, on the port held.
    let mut held = addr;
    held.set_port(port);
    this.state().bound = Some(held);
    Ok(held)
}

/// `int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr)`: a specific address
/// binds the ID to the RDMA device that has it (`EADDRNOTAVAIL` if none has); a wildcard to
/// none yet. The module reserves the port by rdma_cm's rules (`EADDRINUSE`, `EADDRNOTAVAIL`,
/// `EACCES` below 1024), choosing one for port 0, which `rdma_get_src_port` then gives. From
/// a module older than ABI 7, nothing is reserved, and port 0 is given a port at
/// `rdma_listen` or `rdma_resolve_addr`.
///
/// # Safety
///
/// `id` is not destroyed during the call (see [`crate::api`]); `addr` NULL or a socket address.
#[no_mangle]
pub unsafe extern "C" fn rdma_bind_addr(
    id: *mut sys::rdma_cm_id,
    addr: *mut sys::sockaddr,
) -> c_int {
    // SAFETY: The caller's pointers, as documented.
    let (this, addr) = match unsafe { (id_of(id), socket_addr(addr)) } {
        (Ok(this), Ok(addr)) => (this, addr),
        _ => return errno::fail(libc::EINVAL),
    };
    if this.state().phase != Phase::Idle || this.state().local.is_some() {
        return errno::fail(libc::EINVAL);
    }
    if scope_of(addr) == Some(0) {
        // A link-local address names its link by its scope (`cma_check_linklocal`).
        return errno::fail(libc::EINVAL);
    }
    if !address::is_any_addr(addr.ip()) {
        if let Err(e) = attach_device(this, addr.ip()) {
            return errno::fail(e);
        }
    }
    let addr = if crate::abi::binds_ports(&this.channel().cepm) {
        match reserve_port(this, addr, None) {
            Ok(held) => held,
            Err(e) => return errno::fail(e),
        }
    } else {
        addr
    };
    this.set_address(true, addr);
    this.state().local = Some(addr);
    0
}

/// An ephemeral port, for an ID bound to port 0: the active side's only shows in the
/// `cma_hdr`; a listener's is tried until one is free.
fn ephemeral_port() -> u16 {
    let r = cepm::psn::random_psn().unwrap_or(0x5eed);
    32768 + (r % 28232) as u16
}

/// `int rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src_addr, struct sockaddr
/// *dst_addr, int timeout_ms)`: returns at once, and `ADDR_RESOLVED` or `ADDR_ERROR` (with the
/// negative errno) comes on the ID's channel, as over the kernel's `rdma_cm`. The call itself
/// fails where the kernel's does, before any request is queued (`rdma_resolve_addr` and its
/// `resolve_prepare_src` in drivers/infiniband/core/cma.c, `rdma_resolve_ip` in addr.c):
/// `EINVAL` for a bad address or state (a resolution in flight included) or a source of
/// another family, a source with no RDMA device as `rdma_bind_addr` refuses it
/// (`EADDRNOTAVAIL`), and the routing table's answer when it has no route (`ENETUNREACH`,
/// `EHOSTUNREACH`, ...). The rest (the GID tables, the next hop's address, its timeout) is
/// the event's. A synchronous ID's call waits for that event, as librdmacm's does.
///
/// # Safety
///
/// `id` is not destroyed during the call (see [`crate::api`]); the addresses NULL (`src_addr`
/// only) or socket addresses.
#[no_mangle]
pub unsafe extern "C" fn rdma_resolve_addr(
    id: *mut sys::rdma_cm_id,
    src_addr: *mut sys::sockaddr,
    dst_addr: *mut sys::sockaddr,
    timeout_ms: c_int,
) -> c_int {
    // SAFETY: The caller's pointers, as documented.
    let (this, dst) = match unsafe { (id_of(id), socket_addr(dst_addr)) } {
        (Ok(this), Ok(dst)) => (this, dst),
        _ => return errno::fail(libc::EINVAL),
    };
    let given = if src_addr.is_null() {
        None
    } else {
        // SAFETY: As above.
        match unsafe { socket_addr(src_addr) } {
            Ok(src) => Some(src),
            Err(e) => return errno::fail(e),
        }
    };
    let timeout = Duration::from_millis(u64::try_from(timeout_ms.max(1)).unwrap_or(1));
    errno::status(resolve_addr(this, given, dst, timeout).and_then(|()| sync::complete(this)))
}

/// The scope ID of an IPv6 link-local address (`None` for any other address).
fn scope_of(addr: SocketAddr) -> Option<u32> {
    match addr {
        SocketAddr::V6(v6) if v6.ip().is_unicast_link_local() => Some(v6.scope_id()),
        _ => None,
    }
}

/// The interface the ID is bound to, as rdma_cm binds it (`bound_dev_if` in
/// drivers/infiniband/core/cma.c), and so where the route lookup leaves: a specific source's,
/// if it is link-local (`cma_check_linklocal`), else, with no specific source, a link-local
/// destination's (`cma_bind_addr`). 0 for none. `EINVAL` for a link-local source without a
/// scope.
fn scope_interface(src: Option<SocketAddr>, dst: SocketAddr) -> Result<u32, c_int> {
    match src.filter(|s| !address::is_any_addr(s.ip())) {
        Some(src) => match scope_of(src) {
            Some(0) => Err(libc::EINVAL),
            scope => Ok(scope.unwrap_or(0)),
        },
        None => Ok(scope_of(dst).unwrap_or(0)),
    }
}

/// [`rdma_resolve_addr`]'s checks and route lookup, in the call; the rest is handed to the
/// process's resolving thread.
fn resolve_addr(
    this: &Id,
    given: Option<SocketAddr>,
    dst: SocketAddr,
    timeout: Duration,
) -> Result<(), c_int> {
    let (before, bound) = {
        let state = this.state();
        (state.phase, state.local)
    };
    if !matches!(before, Phase::Idle | Phase::AddrResolved) {
        return Err(libc::EINVAL);
    }
    if let Some(src) = given {
        if src.is_ipv4() != dst.is_ipv4() {
            return Err(libc::EINVAL);
        }
        if bound.is_none() && !address::is_any_addr(src.ip()) {
            attach_device(this, src.ip())?;
        }
    }
    let mut src = given.or(bound);
    // An active ID holds its port too (`resolve_prepare_src` in cma.c binds it): the source
    // given, or the wildcard of the destination's family, with the destination, so that IDs
    // going elsewhere may share the port.
    if this.state().bound.is_none() && crate::abi::binds_ports(&this.channel().cepm) {
        let wildcard = SocketAddr::new(
            if dst.is_ipv4() {
                IpAddr::from([0u8; 4])
            } else {
                IpAddr::from([0u8; 16])
            },
            0,
        );
        let held = reserve_port(this, src.unwrap_or(wildcard), Some(dst))?;
        src = Some(held);
    }
    let source = src.map(|s| s.ip()).filter(|ip| !address::is_any_addr(*ip));
    let oif = scope_interface(src, dst)?;
    let resolution = address::start(dst.ip(), source, oif, timeout).map_err(errno::of_io)?;
    this.set_address(false, dst);
    let ticket = Ticket::new();
    {
        let mut state = this.state();
        state.phase = Phase::AddrQuery;
        state.resolving = Some(Arc::clone(&ticket));
    }
    let idp = IdPtr(this.as_ptr());
    let complete: Completion = Box::new(move |outcome| {
        let idp = idp;
        // SAFETY: The ticket was open when this began: the ID's destroy, which cancels it
        // before anything else, has not begun, and waits for this to return.
        addr_resolved(unsafe { &*idp.0 }, before, dst, src, outcome);
    });
    pending::submit(resolution, ticket, complete).map_err(|e| {
        let mut state = this.state();
        state.phase = before;
        state.resolving = None;
        errno::of_io(e)
    })
}

/// An address resolution of `this` (in phase `before` when it began, from `src` if bound or
/// given) finished: records what it found, and queues `ADDR_RESOLVED`, or `ADDR_ERROR` with the ID back in `before`.
fn addr_resolved(
    this: &Id,
    before: Phase,
    dst: SocketAddr,
    src: Option<SocketAddr>,
    outcome: std::io::Result<Resolved>,
) {
    let outcome = outcome.map_err(errno::of_io).and_then(|r| {
        let dev = device::by_name(&r.device)?;
        Ok((r, dev))
    });
    let (kind, status) = match outcome {
        Ok((resolved, dev)) => {
            this.update(|p| {
                p.verbs = dev.context;
                p.pd = dev.pd;
                p.port_num = resolved.port;
            });
            // The source as bound or given (an IPv6 one's scope and flow label with it), if it
            // is the address resolution chose; on its port, or an ephemeral one.
            let mut local = src
                .filter(|s| s.ip() == resolved.source)
                .unwrap_or_else(|| SocketAddr::new(resolved.source, 0));
            local.set_port(
                src.map(|s| s.port())
                    .filter(|p| *p != 0)
                    .unwrap_or_else(ephemeral_port),
            );
            this.set_address(true, local);
            route::set_ib_gids(this, local.ip(), dst.ip());
            let mut state = this.state();
            state.local = Some(local);
            state.remote = Some(dst);
            state.resolved = Some(resolved);
            state.phase = Phase::AddrResolved;
            state.resolving = None;
            (sys::RDMA_CM_EVENT_ADDR_RESOLVED, 0)
        }
        Err(e) => {
            let mut state = this.state();
            state.phase = before;
            state.resolving = None;
            (sys::RDMA_CM_EVENT_ADDR_ERROR, -e)
        }
    };
    this.channel()
        .post_made(this.as_ptr(), this.handle(), kind, status);
}

/// rdma_cm's packet lifetime on RoCE (`CMA_IBOE_PACKET_LIFETIME`), an IBTA exponent.
pub(crate) const ROCE_PACKET_LIFETIME: u8 = 16;

/// `int rdma_resolve_route(struct rdma_cm_id *id, int timeout_ms)`: on RoCE the route is what
/// address resolution found; fills `route.path_rec` (one path) and queues `ROUTE_RESOLVED`.
/// `EINVAL` before the address is resolved.
///
/// # Safety
///
/// `id` is not destroyed during the call (see [`crate::api`]).
#[no_mangle]
pub unsafe extern "C" fn rdma_resolve_route(id: *mut sys::rdma_cm_id, _timeout_ms: c_int) -> c_int {
    // SAFETY: No one destroys the ID during the call (the caller's promise).
    let Ok(this) = (unsafe { id_of(id) }) else {
        return errno::fail(libc::EINVAL);
    };
    let idp = this.as_ptr();
    let mut state = this.state();
    let (Phase::AddrResolved | Phase::RouteResolved, Some(resolved), Some(local), Some(remote)) = (
        state.phase,
        state.resolved.clone(),
        state.local,
        state.remote,
    ) else {
        return errno::fail(libc::EINVAL);
    };
    let route = Route {
        resolved,
        local,
        remote,
        tos: state.options.tos.unwrap_or(0),
    };
    state.phase = Phase::RouteResolved;
    drop(state);
    route::set_path(this, route.path_record());
    this.channel()
        .post_made(idp, this.handle(), sys::RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
    errno::status(sync::complete(this))
}

/// `int rdma_listen(struct rdma_cm_id *id, int backlog)`: listens on the service ID of the
/// bound port in the ID's port space (an ephemeral one for port 0), for the requests to the
/// bound address (0.0.0.0 if unbound, as rdma_cm binds it). The backlog is cepm's (1024 a
/// listener); `backlog` is not used.
///
/// # Safety
///
/// `id` is not destroyed during the call (see [`crate::api`]).
#[no_mangle]
pub unsafe extern "C" fn rdma_listen(id: *mut sys::rdma_cm_id, _backlog: c_int) -> c_int {
    // SAFETY: No one destroys the ID during the call (the caller's promise).
    let Ok(this) = (unsafe { id_of(id) }) else {
        return errno::fail(libc::EINVAL);
    };
    let Some(ps) = port_space(this.public().ps) else {
        return errno::fail(libc::EINVAL);
    };
    if this.state().phase != Phase::Idle {
        return errno::fail(libc::EINVAL);
    }
    if crate::abi::binds_ports(&this.channel().cepm) {
        return errno::status(listen_bound(this, ps));
    }
    let bound = this
        .state()
        .local
        .unwrap_or_else(|| SocketAddr::new(IpAddr::from([0u8; 4]), 0));
    let channel = this.channel();
    let mut port = bound.port();
    let mut tries = 0;
    loop {
        let chosen = if port == 0 { ephemeral_port() } else { port };
        let listened = channel
            .cepm
            .listen(this.handle(), ip_service_id(ps, chosen), 0);
        match listened {
            Ok(()) => {
                port = chosen;
                break;
            }
            Err(e)
                if bound.port() == 0
                    && tries < 64
                    && matches!(e.raw_os_error(), Some(libc::EBUSY | libc::EADDRINUSE)) =>
            {
                tries += 1;
            }
            Err(e) => {
                return errno::fail(match e.raw_os_error() {
                    Some(libc::EBUSY) => libc::EADDRINUSE,
                    other => other.unwrap_or(libc::EIO),
                })
            }
        }
    }
    let local = SocketAddr::new(bound.ip(), port);
    this.set_address(true, local);
    let mut state = this.state();
    state.local = Some(local);
    state.phase = Phase::Listening;
    0
}

/// [`rdma_listen`] with a module that reserves ports (ABI 7): an unbound ID binds
/// `0.0.0.0:0` first, as cma.c's `rdma_listen` does; then it listens on its port's service ID,
/// which the module takes only if the ID may hold the port alone (`EADDRINUSE`,
/// `EADDRNOTAVAIL`, even with REUSEADDR on both).
fn listen_bound(this: &Id, ps: PortSpace) -> Result<(), c_int> {
    let bound = this.state().bound;
    let held = match bound {
        Some(held) => held,
        None => {
            let held = reserve_port(this, SocketAddr::new(IpAddr::from([0u8; 4]), 0), None)?;
            this.set_address(true, held);
            this.state().local = Some(held);
            held
        }
    };
    // Scoped by the bound address, as rdma_cm matches a request to the IDs bound to its port
    // (`cma_find_listener`): several IDs may listen on one port, each for its own address.
    let options = this.state().options;
    this.channel()
        .cepm
        .listen_on_addr(
            this.handle(),
            ip_service_id(ps, held.port()),
            held.ip(),
            options.af_only_for(held.ip()),
        )
        .map_err(|e| match e.raw_os_error() {
            Some(libc::EBUSY) => libc::EADDRINUSE,
            other => other.unwrap_or(libc::EIO),
        })?;
    this.state().phase = Phase::Listening;
    Ok(())
}

/// `int rdma_get_cm_event(struct rdma_event_channel *channel, struct rdma_cm_event
/// **event)`: the next event, waiting for it unless the channel's file is non-blocking
/// (`EAGAIN`).
///
/// A thread that asks a channel destroyed a moment ago (one of the last 64 to go) waits until
/// a signal (`EINTR`), as it would had it been waiting already: rping of rdma-core 44 (Debian
/// 12's) destroys its channel while its CM thread goes back for the next event, and would exit
/// with the error instead of with its result. Any other pointer that is no live channel gets
/// `EINVAL`.
///
/// # Safety
///
/// `event` valid for a write. (`channel` is checked, and held for the call: see [`crate::api`].)
#[no_mangle]
pub unsafe extern "C" fn rdma_get_cm_event(
    channel: *mut sys::rdma_event_channel,
    event: *mut *mut sys::rdma_cm_event,
) -> c_int {
    if event.is_null() {
        return errno::fail(libc::EINVAL);
    }
    // Held for the call: a destroy meanwhile frees the channel only after it.
    let live_channel = match Channel::of_app(channel) {
        Ok(live_channel) => live_channel,
        Err(_) if live::CHANNELS.went(channel.cast::<Channel>()) => {
            // As a thread waiting in the file does: until a signal.
            // SAFETY: pause takes nothing.
            while unsafe { libc::pause() } != -1 {}
            return errno::fail(libc::EINTR);
        }
        Err(e) => return errno::fail(e),
    };
    let next = event::next(&live_channel, None);
    // Before errno is set: the channel's last call frees it (and closes its files) here.
    drop(live_channel);
    match next {
        Ok(e) => {
            if e.errno != 0 {
                errno::set(e.errno);
            }
            // SAFETY: The caller passes `event` valid for a write.
            unsafe { *event = Box::into_raw(e).cast() };
            0
        }
        Err(e) => errno::fail(e),
    }
}

/// `int rdma_ack_cm_event(struct rdma_cm_event *event)`: frees the event and its private
/// data, and counts it acknowledged for its ID (the listener, for CONNECT_REQUEST).
///
/// # Safety
///
/// `event` came from [`rdma_get_cm_event`] and is not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn rdma_ack_cm_event(event: *mut sys::rdma_cm_event) -> c_int {
    if event.is_null() {
        return errno::fail(libc::EINVAL);
    }
    // SAFETY: The caller gives up an event of ours, from Box::into_raw.
    let event = unsafe { Box::from_raw(event.cast::<Event>()) };
    if let Some(group) = &event.group {
        group.acked();
    }
    // SAFETY: The owner is alive: its destroy waits for this acknowledgement.
    unsafe { &*event.owner }.event_acked();
    0
}
