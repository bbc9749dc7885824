//! Events: what `rdma_get_cm_event` hands out, made from cepm's events (and from the
//! library's own, for address and route resolution), as librdmacm makes them from the kernel's
//! `rdma_cm` (`rdma_get_cm_event` in rdma-core's `librdmacm/cma.c`).
//!
//! # Invariants
//!
//! `public` is the first field of [`Event`], so that the application's `struct rdma_cm_event *`
//! points to the whole event. `public.param`'s private data, when not NULL, points into
//! `pdata`, which lives as long as the event: until `rdma_ack_cm_event`.

use std::{
    cell::Cell,
    net::{IpAddr, SocketAddr},
    os::fd::AsRawFd,
    sync::Arc,
};

use cepm::{event::Event as CepmEvent, sys as cepm_sys};
use cepm_proto::{
    cma_hdr::{CmaAddrs, CmaHdr, CMA_HDR_SIZE},
    service_id::parse_ip_service_id,
};

use crate::{
    api::ece,
    channel::{Channel, IdPtr},
    device,
    id::{Id, Phase},
    multicast::{self, Group},
    qp::{self, Depths},
    resolve::address,
    route, sys, ud,
};

/// Private data lengths an application sees, as the kernel's `rdma_cm` reports them: each
/// message's whole field, less the `cma_hdr` where there is one.
pub(crate) const REQ_USER_PDATA: usize = 92 - CMA_HDR_SIZE;
/// See [`REQ_USER_PDATA`].
pub(crate) const REP_PDATA: usize = 196;
/// See [`REQ_USER_PDATA`].
pub(crate) const REJ_PDATA: usize = 148;

/// The event types librdmacm's RDMACM_1.4 adds after `TIMEWAIT_EXIT` (rdma-core's later
/// `<rdma/rdma_cma.h>`): `rdma_resolve_addrinfo`'s outcome, and `rdma_write_cm_event`'s.
pub(crate) const RDMA_CM_EVENT_ADDRINFO_RESOLVED: sys::rdma_cm_event_type =
    sys::RDMA_CM_EVENT_TIMEWAIT_EXIT + 1;
/// See [`RDMA_CM_EVENT_ADDRINFO_RESOLVED`].
pub(crate) const RDMA_CM_EVENT_ADDRINFO_ERROR: sys::rdma_cm_event_type =
    sys::RDMA_CM_EVENT_TIMEWAIT_EXIT + 2;
/// See [`RDMA_CM_EVENT_ADDRINFO_RESOLVED`].
pub(crate) const RDMA_CM_EVENT_USER: sys::rdma_cm_event_type = sys::RDMA_CM_EVENT_TIMEWAIT_EXIT + 3;

/// An event handed to the application.
#[repr(C)]
pub(crate) struct Event {
    /// What the application sees.
    pub(crate) public: sys::rdma_cm_event,
    /// The ID whose count its acknowledgement goes to: the listener's for CONNECT_REQUEST.
    pub(crate) owner: *mut Id,
    /// Its private data.
    pdata: [u8; 256],
    /// The multicast join it reports, whose leave waits for its acknowledgement.
    pub(crate) group: Option<Arc<Group>>,
    /// The `errno` that `rdma_get_cm_event` leaves behind with it (0: none), as librdmacm
    /// leaves one where making the event failed (`rdma_seterrno`).
    pub(crate) errno: i32,
}

impl Event {
    /// A new event of `kind` for `id`, without parameters.
    pub(crate) fn new(id: *mut Id, kind: sys::rdma_cm_event_type, status: i32) -> Box<Self> {
        Box::new(Self {
            public: sys::rdma_cm_event {
                id: id.cast(),
                event: kind,
                status,
                ..Default::default()
            },
            owner: id,
            pdata: [0; 256],
            group: None,
            errno: 0,
        })
    }

    /// Copies `data`, padded with zeros to `len` bytes, into the event's own buffer, which
    /// lives until the acknowledgement: where it is, and the length.
    fn keep_pdata(&mut self, data: &[u8], len: usize) -> (*const core::ffi::c_void, u8) {
        let len = len.min(self.pdata.len());
        let n = data.len().min(len);
        self.pdata[..n].copy_from_slice(&data[..n]);
        (self.pdata.as_ptr().cast(), len as u8)
    }

    /// [`Event::keep_pdata`], as the private data of a connected event's parameters.
    fn set_conn_pdata(&mut self, data: &[u8], len: usize) {
        let (at, len) = self.keep_pdata(data, len);
        let conn = self.conn();
        conn.private_data = at;
        conn.private_data_len = len;
    }

    /// [`Event::keep_pdata`], as the private data of a UD event's parameters.
    fn set_ud_pdata(&mut self, data: &[u8], len: usize) {
        let (at, len) = self.keep_pdata(data, len);
        let ud = self.ud();
        ud.private_data = at;
        ud.private_data_len = len;
    }

    fn ud(&mut self) -> &mut sys::rdma_ud_param {
        // SAFETY: `ud` is the member of the parameter union UD events use.
        unsafe { &mut self.public.param.ud }
    }

    /// The connection parameters of the peer's REQ or REP, `params`, and its QPN, as rdma_cm
    /// reports them to this side (`cma_set_req_event_data`, `cma_set_rep_event_data`), from
    /// ib_cm's event, which swaps the depths (`cm_format_req_event`, `cm_format_rep_event`):
    /// the peer's initiator depth is what this side must be able to respond to.
    fn set_peer_params(&mut self, params: &cepm_sys::cepm_conn_params, qp_num: u32) {
        let conn = self.conn();
        conn.responder_resources = params.initiator_depth;
        conn.initiator_depth = params.responder_resources;
        conn.flow_control = params.flow_control;
        conn.retry_count = params.retry_count;
        conn.rnr_retry_count = params.rnr_retry_count;
        conn.srq = params.srq;
        conn.qp_num = qp_num;
    }

    fn conn(&mut self) -> &mut sys::rdma_conn_param {
        // SAFETY: `conn` is the member of the parameter union connected events use.
        unsafe { &mut self.public.param.conn }
    }
}

/// The next event of `channel` (`for_id`: the next of that ID, which a synchronous call waits
/// for): `Err(errno)` as `rdma_get_cm_event` fails (`EAGAIN` when the file is non-blocking and
/// nothing waits, `EINTR`, ...).
pub(crate) fn next(channel: &Channel, for_id: Option<*mut Id>) -> Result<Box<Event>, i32> {
    // The ID whose event the last read translated, pinned (Channel::find_pinned) until that
    // event is handed out or left waiting, where a destroy of the ID finds it.
    let pinned: Cell<Option<*mut Id>> = Cell::new(None);
    let unpin = || {
        if let Some(id) = pinned.take() {
            // SAFETY: A pinned ID is alive: its destroy waits for this.
            unsafe { &*id }.event_acked();
        }
    };
    let event = channel.next_event(
        |e| for_id.is_none_or(|id| e.owner == id),
        || {
            unpin(); // what the previous read gave waits by now
            if !channel.wait_readable()? {
                return Ok(None); // woken for a posted event
            }
            let raw = channel.cepm.read_event().map_err(crate::errno::of_io)?;
            let Some(IdPtr(id)) = channel.find_pinned(raw.handle) else {
                return Ok(None); // its ID is gone
            };
            pinned.set(Some(id));
            // SAFETY: Pinned: alive until unpinned.
            Ok(translate(channel, unsafe { &mut *id }, raw))
        },
    );
    // Counted for its owner by now (Channel::next_event), the pin can go.
    unpin();
    if let Ok(Some(group)) = event.as_ref().map(|e| &e.group) {
        group.reported();
    }
    event
}

/// Drops a queued event that will not be handed out: its ID is being destroyed. The new ID
/// of a CONNECT_REQUEST goes with it (and its CEP's destroy rejects the REQ).
pub(crate) fn discard(channel: &Channel, event: Box<Event>) {
    let new: *mut Id = event.public.id.cast();
    if event.public.event != sys::RDMA_CM_EVENT_CONNECT_REQUEST || new == event.owner {
        return;
    }
    // SAFETY: The new ID of a CONNECT_REQUEST not handed out is the application's only
    // through this event.
    let new = unsafe { Box::from_raw(new) };
    let _ = channel.cepm.destroy(new.handle());
    channel.detach(&new, drop);
}

/// The event the application sees for cepm's `raw` on `id`, if any.
fn translate(channel: &Channel, id: &Id, raw: CepmEvent) -> Option<Box<Event>> {
    let idp = id.as_ptr();
    let kind = raw.kind;
    let status = raw.status as i32;
    match kind {
        cepm_sys::CEPM_EVENT_REQ_RECEIVED | cepm_sys::CEPM_EVENT_SIDR_REQ_RECEIVED => {
            connect_request(channel, id)
        }
        cepm_sys::CEPM_EVENT_REP_RECEIVED => Some(connect_response(channel, id)),
        cepm_sys::CEPM_EVENT_SIDR_REP_RECEIVED => Some(sidr_reply(channel, id)),
        cepm_sys::CEPM_EVENT_ESTABLISHED => {
            id.state().phase = Phase::Connected;
            Some(Event::new(idp, sys::RDMA_CM_EVENT_ESTABLISHED, 0))
        }
        cepm_sys::CEPM_EVENT_REJ_RECEIVED => {
            let mut state = id.state();
            state.phase = Phase::Done;
            if state.connect_error {
                return None;
            }
            drop(state);
            let _ = qp::to_error(id.public().qp.cast());
            let mut event = Event::new(idp, sys::RDMA_CM_EVENT_REJECTED, status);
            let pdata = channel
                .cepm
                .private_data(id.handle())
                .map(|(_, d)| d)
                .unwrap_or_default();
            event.set_conn_pdata(&pdata, REJ_PDATA);
            Some(event)
        }
        cepm_sys::CEPM_EVENT_REQ_ERROR
        | cepm_sys::CEPM_EVENT_REP_ERROR
        | cepm_sys::CEPM_EVENT_SIDR_REQ_ERROR => {
            id.state().phase = Phase::Done;
            Some(Event::new(idp, sys::RDMA_CM_EVENT_UNREACHABLE, -status))
        }
        cepm_sys::CEPM_EVENT_DREQ_RECEIVED
        | cepm_sys::CEPM_EVENT_DREP_RECEIVED
        | cepm_sys::CEPM_EVENT_DREQ_ERROR => {
            let mut state = id.state();
            state.phase = Phase::Done;
            state.peer_disconnected |= kind == cepm_sys::CEPM_EVENT_DREQ_RECEIVED;
            if state.connect_error {
                return None;
            }
            let status = if kind == cepm_sys::CEPM_EVENT_DREQ_ERROR {
                -status
            } else {
                0
            };
            Some(Event::new(idp, sys::RDMA_CM_EVENT_DISCONNECTED, status))
        }
        // Made by the library (`Channel::post_made`): the code is rdma_cm's event.
        cepm_sys::CEPM_EVENT_USER_FIRST..=cepm_sys::CEPM_EVENT_USER_LAST => {
            let kind = kind - cepm_sys::CEPM_EVENT_USER_FIRST;
            if multicast::is_multicast(kind) {
                return multicast::posted_event(id);
            }
            let mut event = Event::new(idp, kind, status);
            if kind == RDMA_CM_EVENT_USER {
                // `param.arg` (a later header's third member of the union) is its first 8
                // bytes.
                let arg = id.state().user_args.pop_front().unwrap_or(0);
                // SAFETY: The union is at least 8 bytes long and aligned for a pointer.
                unsafe {
                    core::ptr::from_mut(&mut event.public.param)
                        .cast::<u64>()
                        .write(arg)
                };
            }
            Some(event)
        }
        cepm_sys::CEPM_EVENT_TIMEWAIT_EXIT => {
            Some(Event::new(idp, sys::RDMA_CM_EVENT_TIMEWAIT_EXIT, 0))
        }
        cepm_sys::CEPM_EVENT_DEVICE_REMOVAL => {
            id.state().phase = Phase::Done;
            Some(Event::new(idp, sys::RDMA_CM_EVENT_DEVICE_REMOVAL, 0))
        }
        // The peer needs more time: the kernel already extended ours.
        cepm_sys::CEPM_EVENT_MRA_RECEIVED => None,
        _ => None,
    }
}

/// A REQ arrived on listener `listener`: claims it, makes the new ID and its CONNECT_REQUEST.
/// A REQ that is not rdma_cm's for this listener is rejected and dropped.
fn connect_request(channel: &Channel, listener: &Id) -> Option<Box<Event>> {
    let (handle, info) = channel.cepm.get_request(listener.handle(), 0).ok()?;
    let sidr = info.sidr == 1;
    let refuse = |reason: u16| {
        crate::debug!(
            "REQ for {:#x} (SIDR: {sidr}) refused with reason {reason}",
            info.service_id
        );
        let _ = if sidr {
            // A SIDR_REQ is answered with a SIDR_REP, never a REJ.
            let status = cepm_sys::CEPM_SIDR_REJECT as u8;
            channel.cepm.sidr_rep(&cepm_sys::cepm_sidr_rep {
                handle,
                status,
                ..Default::default()
            })
        } else {
            channel.cepm.reject(handle, reason, &[], &[])
        };
        let _ = channel.cepm.destroy(handle);
        None
    };
    // A listener takes the requests of its own QP type, as rdma_cm's
    // `cma_ib_check_req_qp_type` does (drivers/infiniband/core/cma.c): SIDR_REQs for UD, REQs
    // of its transport otherwise (RC, UC, XRC for an XRC receive ID), and every request for
    // QP type 0, which only the IB port space leaves as given (`ucma_get_qp_type` makes
    // the TCP space's RC and the UDP and IPoIB spaces' UD). A SIDR_REQ for another answers
    // REJECT, a REQ gets the reject this library always gave (REJ 8) if the listener is UD,
    // else the consumer's (REJ 28), as rdma_cm's handler's error gives.
    let listens_for = match listener.public().ps {
        sys::RDMA_PS_TCP => Some(sys::IBV_QPT_RC),
        sys::RDMA_PS_UDP | sys::RDMA_PS_IPOIB => Some(sys::IBV_QPT_UD),
        _ => Some(listener.public().qp_type).filter(|t| *t != 0),
    };
    let requested = match (sidr, u32::from(info.transport)) {
        (true, _) => sys::IBV_QPT_UD,
        (false, cepm_sys::CEPM_TRANSPORT_UC) => sys::IBV_QPT_UC,
        (false, cepm_sys::CEPM_TRANSPORT_XRC) => sys::IBV_QPT_XRC_RECV,
        (false, _) => sys::IBV_QPT_RC,
    };
    match listens_for {
        Some(t) if t != requested && (sidr || t == sys::IBV_QPT_UD) => {
            return refuse(cepm_sys::CEPM_REJ_INVALID_SERVICE_ID as u16)
        }
        Some(t) if t != requested => return refuse(cepm_sys::CEPM_REJ_CONSUMER_DEFINED as u16),
        _ => {}
    }
    let Ok(hdr) = CmaHdr::decode(&info.private_data) else {
        return refuse(cepm_sys::CEPM_REJ_CONSUMER_DEFINED as u16);
    };
    let (listen_local, af_only) = {
        let state = listener.state();
        (state.local, state.options.af_only.unwrap_or(false))
    };
    let port = parse_ip_service_id(info.service_id).map_or(0, |(_, port)| port);
    let (src, dst) = match hdr.addrs {
        CmaAddrs::V4 { src, dst } => (IpAddr::from(src), IpAddr::from(dst)),
        CmaAddrs::V6 { src, dst } => (IpAddr::from(src), IpAddr::from(dst)),
    };
    // A listener on a given address takes only the REQs for it; one on a wildcard of one
    // family takes the other family's too unless AFONLY says otherwise. A module that scopes
    // listens has sent this listener only those.
    if let Some(local) = listen_local.filter(|_| !crate::abi::binds_ports(&channel.cepm)) {
        let wildcard = address::is_any_addr(local.ip());
        let family_ok = !af_only || local.is_ipv4() == dst.is_ipv4();
        if (!wildcard && local.ip() != dst) || !family_ok {
            return refuse(cepm_sys::CEPM_REJ_INVALID_SERVICE_ID as u16);
        }
    }
    let Ok(dev) = device::by_name(&info.device) else {
        return refuse(cepm_sys::CEPM_REJ_CONSUMER_DEFINED as u16);
    };
    let new = Box::into_raw(Id::new(
        listener.public().channel,
        handle,
        listener.public().context,
        listener.public().ps,
        listener.public().qp_type,
        // A synchronous listener's `rdma_get_request` makes it synchronous, on a channel of
        // its own.
        false,
    ));
    // SAFETY: Just made, ours alone until it is in the map.
    let new_ref = unsafe { &*new };
    new_ref.update(|p| {
        p.verbs = dev.context;
        p.pd = dev.pd;
        p.port_num = info.port;
    });
    let local = SocketAddr::new(dst, port);
    let remote = SocketAddr::new(src, hdr.src_port);
    new_ref.set_address(true, local);
    new_ref.set_address(false, remote);
    route::set_ib_gids(new_ref, local.ip(), remote.ip());
    if !sidr && crate::abi::carries_conn_params(&channel.cepm) {
        route::set_path(new_ref, route::received_path(&info.path, local.ip()));
    }
    {
        let mut state = new_ref.state();
        state.phase = Phase::Requested;
        state.local = Some(local);
        state.remote = Some(remote);
        // The peer's initiator depth is what we must be able to respond to, and the
        // other way round.
        state.requested = (info.initiator_depth, info.responder_resources);
        state.local_psn = crate::abi::chooses_psn(&channel.cepm).then_some(info.local_psn);
        state.remote_ece = ece::remote_of(&channel.cepm, handle);
    }
    if channel.add(handle, new).is_err() {
        // The channel was destroyed meanwhile, its listener with it.
        // SAFETY: Just made, and in no table: ours alone.
        drop(unsafe { Box::from_raw(new) });
        return refuse(cepm_sys::CEPM_REJ_CONSUMER_DEFINED as u16);
    }
    let mut event = Event::new(new, sys::RDMA_CM_EVENT_CONNECT_REQUEST, 0);
    event.owner = listener.as_ptr();
    event.public.listen_id = listener.as_public();
    if sidr {
        // Its private data is longer than GET_REQUEST's copy: the whole of it.
        let pdata = channel
            .cepm
            .private_data(handle)
            .map(|(_, d)| d)
            .unwrap_or_default();
        event.set_ud_pdata(
            pdata.get(CMA_HDR_SIZE..).unwrap_or_default(),
            ud::SIDR_REQ_USER_PDATA,
        );
        return Some(event);
    }
    // An MRA armed for the request, as rdma_cm arms one for every REQ it passes up
    // (`cma_ib_req_handler`, `ib_prepare_cm_mra`): a retry of the REQ then gets it, while the
    // application takes its time to accept.
    let _ = channel.cepm.prepare_mra(handle);
    event.set_conn_pdata(
        info.private_data.get(CMA_HDR_SIZE..).unwrap_or_default(),
        REQ_USER_PDATA,
    );
    let req = cepm_sys::cepm_conn_params {
        responder_resources: info.responder_resources,
        initiator_depth: info.initiator_depth,
        flow_control: info.flow_control,
        retry_count: info.retry_count,
        rnr_retry_count: info.rnr_retry_count,
        srq: info.srq,
        reserved: [0; 2],
    };
    event.set_peer_params(&req, info.remote_qpn);
    Some(event)
}

/// A REP arrived for `id`'s REQ. With a QP, librdmacm moves it to RTR and RTS and sends the
/// RTU itself, and the application sees ESTABLISHED; without one, CONNECT_RESPONSE, and the
/// application calls `rdma_establish`.
fn connect_response(channel: &Channel, id: &Id) -> Box<Event> {
    let idp = id.as_ptr();
    let received = channel.cepm.received(id.handle()).unwrap_or_default();
    let remote_qpn = channel
        .cepm
        .query_cep(id.handle())
        .map_or(0, |i| i.remote_qpn);
    let remote_ece = ece::remote_of(&channel.cepm, id.handle());
    // What the kernel's rdma_cm reports of a REP (`cma_set_rep_event_data` in
    // drivers/infiniband/core/cma.c): its parameters, with no retry count (the module
    // reports 0).
    let rep_event = |kind| {
        let mut event = Event::new(idp, kind, 0);
        event.set_conn_pdata(&received.private_data, REP_PDATA);
        event.set_peer_params(&received.params, remote_qpn);
        event
    };
    let qp: *mut sys::ibv_qp = id.public().qp;
    if qp.is_null() {
        // Likewise for the REP (`cma_ib_handler`): the application sends the RTU when it
        // calls `rdma_establish`, and a retry of the REP meanwhile gets an MRA.
        let _ = channel.cepm.prepare_mra(id.handle());
        id.state().remote_ece = remote_ece;
        return rep_event(sys::RDMA_CM_EVENT_CONNECT_RESPONSE);
    }
    let ack_timeout = id.state().options.ack_timeout;
    let port = id.public().port_num;
    let depths = Depths {
        ack_timeout,
        ..Depths::default()
    };
    let moved = ece::take_rep(id, qp, remote_ece)
        .and_then(|()| qp::to_rts(&channel.cepm, id.handle(), qp, port, depths))
        .and_then(|()| {
            channel
                .cepm
                .send_rtu(id.handle(), &[])
                .map_err(crate::errno::of_io)
        });
    if moved.is_err() {
        let _ = qp::to_error(qp);
        let mut state = id.state();
        state.connect_error = true;
        state.phase = Phase::Done;
        return Event::new(idp, sys::RDMA_CM_EVENT_CONNECT_ERROR, -1);
    }
    id.state().phase = Phase::Connected;
    rep_event(sys::RDMA_CM_EVENT_ESTABLISHED)
}

/// A SIDR_REP answered `id`'s SIDR_REQ: `ESTABLISHED` with what an address handle to the
/// peer needs, or why not (see [`ud::Reply`]).
fn sidr_reply(channel: &Channel, id: &Id) -> Box<Event> {
    let idp = id.as_ptr();
    let info = channel.cepm.query_cep(id.handle()).ok();
    let reply = info.map_or(ud::Reply::Refused(cepm_sys::CEPM_SIDR_REJECT as i32), |i| {
        ud::Reply::of(i.sidr_status, i.remote_qpn, i.remote_qkey)
    });
    let pdata = channel
        .cepm
        .private_data(id.handle())
        .map(|(_, d)| d)
        .unwrap_or_default();
    let mut state = id.state();
    let mut event = match reply {
        ud::Reply::Established { qpn, qkey } => {
            state.phase = Phase::Connected;
            let mut event = Event::new(idp, sys::RDMA_CM_EVENT_ESTABLISHED, 0);
            let ud = event.ud();
            ud.qp_num = qpn;
            ud.qkey = qkey;
            if let Some(resolved) = &state.resolved {
                let tos = state.options.tos.unwrap_or(0);
                ud.ah_attr = ud::ah_attr(resolved, tos, id.public().port_num);
            }
            event
        }
        ud::Reply::Refused(status) => {
            state.phase = Phase::Done;
            Event::new(idp, sys::RDMA_CM_EVENT_UNREACHABLE, status)
        }
        ud::Reply::WrongQkey => {
            state.phase = Phase::Done;
            Event::new(idp, sys::RDMA_CM_EVENT_ADDR_ERROR, -libc::EINVAL)
        }
    };
    event.set_ud_pdata(&pdata, ud::SIDR_REP_PDATA);
    event
}

/// Whether `fd` was opened (or set) non-blocking.
pub(crate) fn nonblocking(fd: &impl AsRawFd) -> bool {
    // SAFETY: F_GETFL on a descriptor we hold reads its flags.
    let flags = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) };
    flags >= 0 && flags & libc::O_NONBLOCK != 0
}
