//! The route to an address (`RTM_GETROUTE`, as `ip route get` asks): the interface it leaves
//! by, the source address the kernel would pick, and the next hop.

use std::{io, net::IpAddr};

use netlink_packet_route::{
    route::{RouteAddress, RouteAttribute, RouteMessage, RouteType},
    AddressFamily, RouteNetlinkMessage,
};

use super::netlink;

/// Where packets to an address go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Route {
    /// The interface they leave by.
    pub(crate) ifindex: u32,
    /// The source address the kernel picks (or the one asked for).
    pub(crate) source: Option<IpAddr>,
    /// The gateway, if the destination is not on the link.
    pub(crate) gateway: Option<IpAddr>,
    /// The destination is one of this host's own addresses.
    pub(crate) local: bool,
}

impl Route {
    /// The next hop toward `destination`: the gateway, or the destination itself.
    pub(crate) fn next_hop(&self, destination: IpAddr) -> IpAddr {
        self.gateway.unwrap_or(destination)
    }
}

fn ip_of(address: &RouteAddress) -> Option<IpAddr> {
    match address {
        RouteAddress::Inet(a) => Some(IpAddr::V4(*a)),
        RouteAddress::Inet6(a) => Some(IpAddr::V6(*a)),
        _ => None,
    }
}

/// The route from `source` (any, if `None`) to `destination`, leaving by the interface
/// `oif` if it is not 0. `ENETUNREACH` (and the like, as the kernel answers) when there is
/// none.
pub(crate) fn lookup(destination: IpAddr, source: Option<IpAddr>, oif: u32) -> io::Result<Route> {
    let mut message = RouteMessage::default();
    let bits = if destination.is_ipv4() { 32 } else { 128 };
    message.header.address_family = if destination.is_ipv4() {
        AddressFamily::Inet
    } else {
        AddressFamily::Inet6
    };
    message.header.destination_prefix_length = bits;
    message
        .attributes
        .push(RouteAttribute::Destination(destination.into()));
    if let Some(source) = source.filter(|s| !s.is_unspecified()) {
        message.header.source_prefix_length = bits;
        message
            .attributes
            .push(RouteAttribute::Source(source.into()));
    }
    if oif != 0 {
        message.attributes.push(RouteAttribute::Oif(oif));
    }
    let answers = netlink::request(RouteNetlinkMessage::GetRoute(message), 0)?;
    let Some(RouteNetlinkMessage::NewRoute(answer)) = answers.into_iter().next() else {
        return Err(io::Error::from_raw_os_error(libc::ENETUNREACH));
    };
    let mut route = Route {
        ifindex: 0,
        source: None,
        gateway: None,
        local: answer.header.kind == RouteType::Local,
    };
    for attribute in &answer.attributes {
        match attribute {
            RouteAttribute::Oif(index) => route.ifindex = *index,
            RouteAttribute::PrefSource(a) => route.source = ip_of(a),
            RouteAttribute::Gateway(a) => route.gateway = ip_of(a),
            _ => {}
        }
    }
    if route.ifindex == 0 {
        return Err(io::Error::from_raw_os_error(libc::ENETUNREACH));
    }
    route.source = source.filter(|s| !s.is_unspecified()).or(route.source);
    Ok(route)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_hosts_own_address_is_local_and_leaves_by_lo() {
        let route = lookup("127.0.0.1".parse().unwrap(), None, 0).unwrap();
        assert!(route.local);
        // SAFETY: A C string.
        let lo = unsafe { libc::if_nametoindex(c"lo".as_ptr()) };
        assert_eq!(route.ifindex, lo);
        assert_eq!(route.source, Some("127.0.0.1".parse().unwrap()));
        assert_eq!(route.gateway, None);
    }

    #[test]
    fn a_source_asked_for_is_kept() {
        let route = lookup(
            "127.0.0.2".parse().unwrap(),
            Some("127.0.0.1".parse().unwrap()),
            0,
        )
        .unwrap();
        assert!(route.local);
        assert_eq!(route.source, Some("127.0.0.1".parse().unwrap()));
        assert_eq!(
            route.next_hop("127.0.0.2".parse().unwrap()),
            "127.0.0.2".parse::<IpAddr>().unwrap()
        );
    }
}
