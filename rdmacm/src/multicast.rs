//! Multicast groups on RoCE v2, joined as the kernel's `rdma_cm` joins them on RoCE
//! (`cma_iboe_join_multicast`, `cma_iboe_set_mgid`, `cma_make_mc_event` and `destroy_mc` in
//! drivers/infiniband/core/cma.c) and completed as librdmacm completes them
//! (`ucma_process_join`, `rdma_leave_multicast` in rdma-core's librdmacm/cma.c).
//!
//! RoCE has no SA: a join is local. The netdev behind the ID's GID becomes a member of the
//! group (IGMP), so that the IP stack accepts the group's packets for rxe and a switch
//! forwards them; the kernel does that with `ip_mc_inc_group`, the library with a socket of
//! the process that holds the membership (`IP_ADD_MEMBERSHIP`) until the leave. The
//! `MULTICAST_JOIN` event carries the attributes of an address handle to the group (its MGID,
//! the IPv4-mapped group address on RoCE v2), QPN 0xFFFFFF and rdma_cm's Q_Key; when the
//! application reads it, the ID's QP (if any) is attached to the group, as librdmacm does.
//! A send-only join takes no membership and attaches nothing.
//!
//! # Invariants
//!
//! A [`Group`]'s counts only grow, and `acked <= reported`: each event of the group handed
//! out is counted once in each, at its handout and at its acknowledgement.

use core::ffi::{c_int, c_void};
use std::{
    collections::VecDeque,
    net::{IpAddr, Ipv4Addr, SocketAddr},
    os::fd::{FromRawFd, OwnedFd},
    sync::{Arc, Condvar, Mutex, MutexGuard},
};

use cepm::sys as cepm_sys;

use crate::{
    event::Event,
    id::{Id, Phase},
    qp::UDP_QKEY,
    resolve::gid_table,
    sys,
};

/// The QPN of a multicast destination.
const MULTICAST_QPN: u32 = 0xff_ffff;
/// The hop limit of a RoCE v2 IPv4 group's address handle (`IPV6_DEFAULT_HOPLIMIT`, which
/// `cma_iboe_join_multicast` sets).
const HOP_LIMIT: u8 = 64;
/// The kernel's `ENOTSUPP`, which `cma_iboe_join_multicast` returns for an IPv6 group on RoCE
/// v2, and which reaches userspace as is.
const KERNEL_ENOTSUPP: c_int = 524;

/// The MGID of IPv4 group `group` on RoCE v2: its IPv4-mapped IPv6 address
/// (`cma_iboe_set_mgid` for `IB_GID_TYPE_ROCE_UDP_ENCAP`).
pub(crate) fn mgid(group: Ipv4Addr) -> [u8; 16] {
    group.to_ipv6_mapped().octets()
}

/// One join of an ID.
pub(crate) struct Group {
    /// The address joined, as the application gave it: what `rdma_leave_multicast` names.
    addr: SocketAddr,
    /// The application's context, which the group's events carry as their private data.
    context: usize,
    /// Joined as a send-only full member.
    send_only: bool,
    /// What an address handle to the group needs.
    ah_attr: sys::ibv_ah_attr,
    state: Mutex<GroupState>,
    acked: Condvar,
}

struct GroupState {
    /// Events of the group handed out.
    reported: u64,
    /// Of those, the ones acknowledged.
    acked: u64,
    /// The group was left: its events not yet made are dropped.
    left: bool,
    /// The ID's QP is attached to the group.
    attached: bool,
    /// The socket that holds the netdev's membership of the group (none when send-only).
    membership: Option<OwnedFd>,
}

impl Group {
    fn state(&self) -> MutexGuard<'_, GroupState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Counts an event of the group handed out.
    pub(crate) fn reported(&self) {
        self.state().reported += 1;
    }

    /// Counts an event of the group acknowledged, and wakes a leave waiting for it.
    pub(crate) fn acked(&self) {
        self.state().acked += 1;
        self.acked.notify_all();
    }
}

/// An ID's joins.
#[derive(Default)]
pub(crate) struct Groups {
    /// Joined and not left, the latest last.
    joined: Vec<Arc<Group>>,
    /// The groups whose `MULTICAST_JOIN` waits in the channel's file, in the order posted:
    /// each such event read takes the first.
    posted: VecDeque<Arc<Group>>,
}

/// Whether rdma_cm's event `kind` is a multicast one.
pub(crate) fn is_multicast(kind: sys::rdma_cm_event_type) -> bool {
    kind == sys::RDMA_CM_EVENT_MULTICAST_JOIN || kind == sys::RDMA_CM_EVENT_MULTICAST_ERROR
}

/// The netdev membership of `group` on interface `ifindex`, held by a socket of its own.
fn take_membership(group: Ipv4Addr, ifindex: u32) -> Result<OwnedFd, c_int> {
    // SAFETY: socket(2) takes no pointer.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(crate::errno::last_or(libc::ENOMEM));
    }
    // SAFETY: A descriptor just opened, ours alone.
    let socket = unsafe { OwnedFd::from_raw_fd(fd) };
    let mreq = libc::ip_mreqn {
        imr_multiaddr: libc::in_addr {
            s_addr: u32::from_ne_bytes(group.octets()),
        },
        imr_address: libc::in_addr { s_addr: 0 },
        imr_ifindex: ifindex as c_int,
    };
    // SAFETY: `mreq` is an ip_mreqn of the length given, alive for the call.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            libc::IPPROTO_IP,
            libc::IP_ADD_MEMBERSHIP,
            core::ptr::from_ref(&mreq).cast::<c_void>(),
            core::mem::size_of::<libc::ip_mreqn>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(crate::errno::last_or(libc::EINVAL));
    }
    Ok(socket)
}

/// `rdma_join_multicast_ex`'s work: joins `addr` for `this`, and queues its
/// `MULTICAST_JOIN`. As `rdma_join_multicast` refuses it: `EINVAL` unless the ID is UD and
/// bound to a device or has its address resolved, or for the unspecified address;
/// `ENOTSUPP` (524) for an IPv6 group, which rdma_cm does not join on RoCE v2; `ENODEV` when
/// the ID's GID has no netdev any more; the membership's own errors (`EINVAL` for an address
/// that is no group's).
pub(crate) fn join(
    this: &Id,
    addr: SocketAddr,
    send_only: bool,
    context: *mut c_void,
) -> Result<(), c_int> {
    let public = this.public();
    if public.qp_type != sys::IBV_QPT_UD || addr.ip().is_unspecified() {
        return Err(libc::EINVAL);
    }
    let source = {
        let state = this.state();
        let bound = state.phase == Phase::Idle && !public.verbs.is_null();
        match state.local {
            Some(local) if bound || state.phase == Phase::AddrResolved => local.ip(),
            _ => return Err(libc::EINVAL),
        }
    };
    let IpAddr::V4(group) = addr.ip() else {
        return Err(KERNEL_ENOTSUPP);
    };
    let gid = gid_table::gid_of(source);
    let port = public.port_num;
    let entry =
        gid_table::find(|e| e.kind == gid_table::GidType::RoceV2 && e.gid == gid && e.port == port)
            .ok_or(libc::ENODEV)?;
    let membership = if send_only {
        None
    } else {
        Some(take_membership(group, entry.ifindex)?)
    };
    let ah_attr = sys::ibv_ah_attr {
        grh: sys::ibv_global_route {
            dgid: sys::ibv_gid { raw: mgid(group) },
            sgid_index: entry.index,
            hop_limit: HOP_LIMIT,
            ..Default::default()
        },
        is_global: 1,
        port_num: port,
        ..Default::default()
    };
    let group = Arc::new(Group {
        addr,
        context: context as usize,
        send_only,
        ah_attr,
        state: Mutex::new(GroupState {
            reported: 0,
            acked: 0,
            left: false,
            attached: false,
            membership,
        }),
        acked: Condvar::new(),
    });
    {
        let mut state = this.state();
        state.groups.joined.push(Arc::clone(&group));
        state.groups.posted.push_back(Arc::clone(&group));
    }
    post(this, group);
    Ok(())
}

/// Queues `group`'s `MULTICAST_JOIN` for `this` in the channel's file, behind the CEP's own
/// events (as `Channel::post_made`), or, if the file has no room, in the library.
fn post(this: &Id, group: Arc<Group>) {
    let channel = this.channel();
    let code = cepm_sys::CEPM_EVENT_USER_FIRST + sys::RDMA_CM_EVENT_MULTICAST_JOIN;
    if channel.cepm.post_event(this.handle(), code, 0).is_ok() {
        return;
    }
    {
        let mut state = this.state();
        let posted = &mut state.groups.posted;
        if let Some(at) = posted.iter().rposition(|g| Arc::ptr_eq(g, &group)) {
            posted.remove(at);
        }
    }
    if let Some(event) = make(this, &group) {
        channel.post(event);
    }
}

/// The event for a multicast event the library posted for `this` (see [`post`]): that of the
/// first group that waits for one, unless it was left meanwhile.
pub(crate) fn posted_event(this: &Id) -> Option<Box<Event>> {
    let group = this.state().groups.posted.pop_front()?;
    make(this, &group)
}

/// `group`'s `MULTICAST_JOIN` for `this`, once librdmacm's `ucma_process_join` has attached
/// the ID's QP (if any, and not for a send-only join): `MULTICAST_ERROR` if that fails, with
/// the join's parameters still, status -1 and `errno` the attach's error, as
/// `rdma_seterrno` makes it. `None` if the group was left.
fn make(this: &Id, group: &Arc<Group>) -> Option<Box<Event>> {
    let mut state = group.state();
    if state.left {
        return None;
    }
    let qp: *mut sys::ibv_qp = this.public().qp;
    let mut attach_error = 0;
    if !qp.is_null() && !group.send_only && !state.attached {
        let dgid = group.ah_attr.grh.dgid;
        // SAFETY: The ID's QP is alive while the ID has it; `dgid` lives for the call.
        let rc = unsafe { sys::ibv_attach_mcast(qp, &dgid, 0) };
        if rc == 0 {
            state.attached = true;
        } else {
            attach_error = rc;
        }
    }
    drop(state);
    let (kind, status) = if attach_error == 0 {
        (sys::RDMA_CM_EVENT_MULTICAST_JOIN, 0)
    } else {
        (sys::RDMA_CM_EVENT_MULTICAST_ERROR, -1)
    };
    let mut event = Event::new(this.as_ptr(), kind, status);
    event.errno = attach_error;
    event.group = Some(Arc::clone(group));
    // SAFETY: `ud` is the member of the parameter union multicast events use.
    let ud = unsafe { &mut event.public.param.ud };
    ud.private_data = group.context as *const c_void;
    ud.ah_attr = group.ah_attr;
    ud.qp_num = MULTICAST_QPN;
    ud.qkey = UDP_QKEY;
    Some(event)
}

/// `rdma_leave_multicast`'s work: the first join of `addr` on `this` ends (`EADDRNOTAVAIL` if
/// there is none): the QP leaves the group, the membership is dropped, its events not yet
/// read are dropped, and once every one handed out has been acknowledged, the call returns.
pub(crate) fn leave(this: &Id, addr: SocketAddr) -> Result<(), c_int> {
    let group = {
        let mut state = this.state();
        let joined = &mut state.groups.joined;
        let at = joined
            .iter()
            .position(|g| g.addr == addr)
            .ok_or(libc::EADDRNOTAVAIL)?;
        joined.remove(at)
    };
    let (attached, membership) = {
        let mut state = group.state();
        state.left = true;
        (state.attached, state.membership.take())
    };
    let qp: *mut sys::ibv_qp = this.public().qp;
    if attached && !qp.is_null() {
        let dgid = group.ah_attr.grh.dgid;
        // SAFETY: As in `make`. A failure leaves nothing to undo, as in librdmacm.
        let _ = unsafe { sys::ibv_detach_mcast(qp, &dgid, 0) };
    }
    drop(membership);
    // A synchronous ID keeps its last event until its next call: this is one.
    if this.is_sync() {
        crate::sync::ack_kept(this);
    }
    drop(
        this.channel()
            .take_events(|e| e.group.as_ref().is_some_and(|g| Arc::ptr_eq(g, &group))),
    );
    let mut state = group.state();
    while state.acked < state.reported {
        state = group.acked.wait(state).unwrap_or_else(|e| e.into_inner());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ipv4_groups_mgid_on_roce_v2_is_its_mapped_address() {
        for (group, want) in [
            ("239.77.0.1", "::ffff:239.77.0.1"),
            ("224.0.0.1", "::ffff:224.0.0.1"),
            ("255.255.255.255", "::ffff:255.255.255.255"),
        ] {
            let want: std::net::Ipv6Addr = want.parse().unwrap();
            assert_eq!(mgid(group.parse().unwrap()), want.octets(), "{group}");
        }
        let raw = mgid(Ipv4Addr::new(239, 1, 2, 3));
        assert_eq!(raw[..10], [0; 10]);
        assert_eq!(raw[10..], [0xff, 0xff, 239, 1, 2, 3]);
    }

    #[test]
    fn only_the_multicast_events_are_multicast() {
        assert!(is_multicast(sys::RDMA_CM_EVENT_MULTICAST_JOIN));
        assert!(is_multicast(sys::RDMA_CM_EVENT_MULTICAST_ERROR));
        assert!(!is_multicast(sys::RDMA_CM_EVENT_ADDR_RESOLVED));
    }
}
