//! The link-layer address of a next hop, from the neighbour cache (`RTM_GETNEIGH`); when the
//! cache has none yet, a datagram to the next hop makes the kernel resolve it (ARP or ND), as
//! the kernel's `rdma_cm` does with `neigh_event_send`. The cache is looked at again whenever
//! it changes (an `RTNLGRP_NEIGH` notification), as `rdma_cm` waits for its netevent.

use std::{
    io,
    net::{IpAddr, SocketAddr, UdpSocket},
    time::{Duration, Instant},
};

use netlink_packet_core::NLM_F_DUMP;
use netlink_packet_route::{
    neighbour::{NeighbourAddress, NeighbourAttribute, NeighbourMessage, NeighbourState},
    AddressFamily, RouteNetlinkMessage,
};

use super::netlink;

/// The discard port: what the probe datagram is sent to, if it is ever delivered.
const DISCARD_PORT: u16 = 9;

/// The longest wait between two looks at the cache, in case a change went unannounced.
const RECHECK: Duration = Duration::from_millis(100);

/// A cache entry's state, as far as resolution goes.
#[derive(Debug, PartialEq, Eq)]
enum Entry {
    /// Usable: the address is known.
    Known([u8; 6]),
    /// Being resolved.
    Pending,
    /// Resolution failed (`FAILED`): the host does not answer.
    Failed,
    /// No entry.
    Missing,
}

fn lookup(ifindex: u32, ip: IpAddr) -> io::Result<Entry> {
    let mut message = NeighbourMessage::default();
    message.header.family = if ip.is_ipv4() {
        AddressFamily::Inet
    } else {
        AddressFamily::Inet6
    };
    let answers = netlink::request(RouteNetlinkMessage::GetNeighbour(message), NLM_F_DUMP)?;
    for answer in answers {
        let RouteNetlinkMessage::NewNeighbour(entry) = answer else {
            continue;
        };
        if entry.header.ifindex != ifindex {
            continue;
        }
        let mut destination = None;
        let mut mac = None;
        for attribute in &entry.attributes {
            match attribute {
                NeighbourAttribute::Destination(NeighbourAddress::Inet(a)) => {
                    destination = Some(IpAddr::V4(*a))
                }
                NeighbourAttribute::Destination(NeighbourAddress::Inet6(a)) => {
                    destination = Some(IpAddr::V6(*a))
                }
                NeighbourAttribute::LinkLayerAddress(bytes) => {
                    mac = <[u8; 6]>::try_from(bytes.as_slice()).ok()
                }
                _ => {}
            }
        }
        if destination != Some(ip) {
            continue;
        }
        return Ok(match (entry.header.state, mac) {
            (NeighbourState::Failed, _) => Entry::Failed,
            (NeighbourState::Incomplete | NeighbourState::None, _) => Entry::Pending,
            (_, Some(mac)) => Entry::Known(mac),
            (_, None) => Entry::Pending,
        });
    }
    Ok(Entry::Missing)
}

/// Makes the kernel resolve `ip` by sending it an empty datagram from `source`.
fn provoke(ip: IpAddr, source: Option<IpAddr>) -> io::Result<()> {
    let bind: SocketAddr = match (source, ip) {
        (Some(s), _) => (s, 0).into(),
        (None, IpAddr::V4(_)) => ([0u8; 4], 0).into(),
        (None, IpAddr::V6(_)) => ([0u16; 8], 0).into(),
    };
    let socket = UdpSocket::bind(bind)?;
    // Refused or unreachable later is fine: the resolution has started.
    let _ = socket.send_to(&[], (ip, DISCARD_PORT));
    Ok(())
}

/// The MAC address of `ip`, a next hop on interface `ifindex`, within `timeout`:
/// `EHOSTUNREACH` if it does not answer, `ETIMEDOUT` if the time runs out first.
pub(crate) fn resolve(
    ifindex: u32,
    ip: IpAddr,
    source: Option<IpAddr>,
    timeout: Duration,
) -> io::Result<[u8; 6]> {
    let deadline = Instant::now() + timeout;
    // Joined before the first look, so that no change after it goes unheard.
    let changes = netlink::Notifications::subscribe(libc::RTNLGRP_NEIGH)?;
    let mut provoked = false;
    loop {
        match lookup(ifindex, ip)? {
            Entry::Known(mac) => return Ok(mac),
            Entry::Failed if provoked => {
                return Err(io::Error::from_raw_os_error(libc::EHOSTUNREACH))
            }
            Entry::Missing | Entry::Failed if !provoked => {
                provoke(ip, source)?;
                provoked = true;
            }
            _ => {}
        }
        let now = Instant::now();
        if now >= deadline {
            return Err(io::Error::from_raw_os_error(libc::ETIMEDOUT));
        }
        // Any entry's change wakes this up; the next look tells whether it was ours.
        changes.wait((deadline - now).min(RECHECK))?;
    }
}
