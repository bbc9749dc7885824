//! The link-layer address of a next hop, from the neighbour cache (`RTM_GETNEIGH`); when the
//! cache has none yet, a datagram to the next hop makes the kernel resolve it (ARP or ND), as
//! the kernel's `rdma_cm` does with `neigh_event_send`. Whoever follows a [`Probe`] looks again
//! whenever the cache changes (an `RTNLGRP_NEIGH` notification), as `rdma_cm` waits for its
//! netevent: see [`super::pending`].

use std::{
    io,
    net::{IpAddr, SocketAddr, SocketAddrV6, UdpSocket},
};

use netlink_packet_route::{
    neighbour::{NeighbourAddress, NeighbourAttribute, NeighbourMessage, NeighbourState},
    AddressFamily, RouteNetlinkMessage,
};

use super::netlink;

/// The discard port: what the probe datagram is sent to, if it is ever delivered.
const DISCARD_PORT: u16 = 9;

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

/// The cache's entry for `ip` on interface `ifindex` (one `RTM_GETNEIGH` for it, not a dump
/// of the whole cache, which on a large fabric holds thousands).
fn lookup(ifindex: u32, ip: IpAddr) -> io::Result<Entry> {
    let mut message = NeighbourMessage::default();
    message.header.family = if ip.is_ipv4() {
        AddressFamily::Inet
    } else {
        AddressFamily::Inet6
    };
    message.header.ifindex = ifindex;
    message
        .attributes
        .push(NeighbourAttribute::Destination(match ip {
            IpAddr::V4(a) => NeighbourAddress::Inet(a),
            IpAddr::V6(a) => NeighbourAddress::Inet6(a),
        }));
    let answers = match netlink::request(RouteNetlinkMessage::GetNeighbour(message), 0) {
        Ok(answers) => answers,
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(Entry::Missing),
        Err(e) => return Err(e),
    };
    let Some(RouteNetlinkMessage::NewNeighbour(entry)) = answers.into_iter().next() else {
        return Ok(Entry::Missing);
    };
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
    if entry.header.ifindex != ifindex || destination != Some(ip) {
        return Ok(Entry::Missing);
    }
    Ok(match (entry.header.state, mac) {
        (NeighbourState::Failed, _) => Entry::Failed,
        (NeighbourState::Incomplete | NeighbourState::None, _) => Entry::Pending,
        (_, Some(mac)) => Entry::Known(mac),
        (_, None) => Entry::Pending,
    })
}

/// Makes the kernel resolve `ip`, a next hop on interface `ifindex`, by sending it an empty
/// datagram from `source`. An IPv6 link-local address names the interface as its scope, which
/// both ends of the datagram need (`bind` and `sendto` refuse a link-local address without
/// one).
fn provoke(ip: IpAddr, source: Option<IpAddr>, ifindex: u32) -> io::Result<()> {
    let scoped = |ip: IpAddr, port: u16| -> SocketAddr {
        match ip {
            IpAddr::V6(v6) if v6.is_unicast_link_local() => {
                SocketAddrV6::new(v6, port, 0, ifindex).into()
            }
            _ => (ip, port).into(),
        }
    };
    let bind = match (source, ip) {
        (Some(s), _) => scoped(s, 0),
        (None, IpAddr::V4(_)) => ([0u8; 4], 0).into(),
        (None, IpAddr::V6(_)) => ([0u16; 8], 0).into(),
    };
    let socket = UdpSocket::bind(bind)?;
    // Refused or unreachable later is fine: the resolution has started.
    let _ = socket.send_to(&[], scoped(ip, DISCARD_PORT));
    Ok(())
}

/// A next hop's link-layer address being resolved: each [`Probe::look`] asks the cache once,
/// without waiting, so that one thread can follow many resolutions (the kernel's `addr.c`
/// keeps a list of requests and looks at each again on every neighbour change).
pub(crate) struct Probe {
    ifindex: u32,
    ip: IpAddr,
    source: Option<IpAddr>,
    /// A datagram has made the kernel resolve `ip`: a `FAILED` entry after that is an answer.
    provoked: bool,
}

impl Probe {
    /// Resolves `ip`, a next hop on interface `ifindex`, from `source` if given.
    pub(crate) fn new(ifindex: u32, ip: IpAddr, source: Option<IpAddr>) -> Self {
        Self {
            ifindex,
            ip,
            source,
            provoked: false,
        }
    }

    /// The MAC address if the cache has it, `None` while it is being resolved (the first look
    /// that finds no entry, or a failed one, makes the kernel resolve it, as `rdma_cm`'s
    /// `neigh_event_send` does), `EHOSTUNREACH` once a resolution this probe started failed.
    pub(crate) fn look(&mut self) -> io::Result<Option<[u8; 6]>> {
        match lookup(self.ifindex, self.ip)? {
            Entry::Known(mac) => Ok(Some(mac)),
            Entry::Failed if self.provoked => Err(io::Error::from_raw_os_error(libc::EHOSTUNREACH)),
            Entry::Missing | Entry::Failed if !self.provoked => {
                provoke(self.ip, self.source, self.ifindex)?;
                self.provoked = true;
                Ok(None)
            }
            _ => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lo() -> u32 {
        // SAFETY: A C string.
        unsafe { libc::if_nametoindex(c"lo".as_ptr()) }
    }

    #[test]
    fn no_entry_is_missing_not_an_error() {
        // The loopback resolves nothing: its cache stays empty.
        assert_eq!(
            lookup(lo(), "127.0.0.1".parse().unwrap()).unwrap(),
            Entry::Missing
        );
        assert_eq!(
            lookup(lo(), "::1".parse().unwrap()).unwrap(),
            Entry::Missing
        );
    }

    #[test]
    fn an_interface_that_is_not_there_is_an_error() {
        let e = lookup(u32::MAX, "127.0.0.1".parse().unwrap()).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENODEV));
    }
}
