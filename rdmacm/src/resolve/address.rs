//! `rdma_resolve_addr`'s work: from a destination (and perhaps a source) IP address to the RDMA
//! device, port and GID the connection starts at, and the next hop's MAC address.

use std::{
    fs, io,
    net::IpAddr,
    path::Path,
    time::{Duration, Instant},
};

use super::{gid_table, neighbour, netlink, route};

/// What an address resolution finds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Resolved {
    /// The RDMA device and port.
    pub(crate) device: String,
    /// Port number.
    pub(crate) port: u8,
    /// Our GID's index in the port's table.
    pub(crate) sgid_index: u8,
    /// Our address (the GID's).
    pub(crate) source: IpAddr,
    /// The peer's GID.
    pub(crate) dgid: [u8; 16],
    /// The next hop's MAC address.
    pub(crate) dmac: [u8; 6],
    /// The path MTU, as the IB enum (1: 256 ... 5: 4096).
    pub(crate) mtu: u8,
}

/// Whether a bound address names no device: the unspecified address, or a loopback one, which
/// rdma_cm binds as a wildcard too (`cma_any_addr` in `drivers/infiniband/core/cma.c`).
/// libfabric's verbs provider binds 127.0.0.1 this way to find its domain.
pub(crate) fn is_any_addr(ip: IpAddr) -> bool {
    ip.is_unspecified() || ip.is_loopback()
}

/// The largest IB MTU whose RoCE packets fit in a netdev MTU of `netdev_mtu` bytes, leaving
/// room for the GRH (or IP header), UDP, BTH, the largest extended header and the ICRC, as the
/// kernel's `iboe_get_mtu` does.
pub(crate) fn ib_mtu_for(netdev_mtu: u32) -> Option<u8> {
    const OVERHEAD: u32 = 40 + 8 + 12 + 4 + 28 + 4;
    let room = netdev_mtu.checked_sub(OVERHEAD)?;
    [(4096, 5), (2048, 4), (1024, 3), (512, 2), (256, 1)]
        .into_iter()
        .find(|(bytes, _)| room >= *bytes)
        .map(|(_, mtu)| mtu)
}

fn netdev_file(netdev: &str, file: &str) -> io::Result<String> {
    Ok(
        fs::read_to_string(Path::new("/sys/class/net").join(netdev).join(file))?
            .trim()
            .to_owned(),
    )
}

fn parse_mac(text: &str) -> Option<[u8; 6]> {
    let mut mac = [0u8; 6];
    let mut parts = text.split(':');
    for byte in &mut mac {
        *byte = u8::from_str_radix(parts.next()?, 16).ok()?;
    }
    parts.next().is_none().then_some(mac)
}

/// An address resolution under way: its route is known; [`Resolution::step`] does the rest.
pub(crate) struct Resolution {
    destination: IpAddr,
    source: Option<IpAddr>,
    route: route::Route,
    /// Our GID entry and the next hop's address being resolved, once the first step found
    /// them.
    next_hop: Option<(gid_table::GidEntry, neighbour::Probe)>,
    deadline: Instant,
    started: Instant,
}

/// Starts resolving `destination`, from `source` if given, within `timeout`, through the
/// interface `oif` if not 0 (an IPv6 link-local address's scope): the route lookup, whose
/// failure (`ENETUNREACH`, `EHOSTUNREACH`, ... as the routing table answers) is the caller's
/// own, as `rdma_resolve_ip` (drivers/infiniband/core/addr.c) returns `addr_resolve`'s route
/// errors from the call.
pub(crate) fn start(
    destination: IpAddr,
    source: Option<IpAddr>,
    oif: u32,
    timeout: Duration,
) -> io::Result<Resolution> {
    let started = Instant::now();
    netlink::follow_namespace();
    let route = route::lookup(destination, source, oif)?;
    crate::debug!("route to {destination}: {:?}", started.elapsed());
    Ok(Resolution {
        destination,
        source,
        route,
        next_hop: None,
        deadline: started + timeout,
        started,
    })
}

impl Resolution {
    /// When it times out.
    pub(crate) fn deadline(&self) -> Instant {
        self.deadline
    }

    /// Goes as far as it can without waiting: `None` while the next hop's address is being
    /// resolved, else the result. The errnos are those `RDMA_CM_EVENT_ADDR_ERROR` reports:
    /// `EADDRNOTAVAIL` when no RDMA port has a RoCE v2 GID for the source address on the
    /// route's netdev, `EHOSTUNREACH`/`ETIMEDOUT` when the next hop does not answer, `ENODEV`
    /// if the route's netdev goes away.
    pub(crate) fn step(&mut self) -> Option<io::Result<Resolved>> {
        let not_available = || io::Error::from_raw_os_error(libc::EADDRNOTAVAIL);
        let destination = self.destination;
        let (entry, dmac) = if self.route.local {
            // This host: the packets loop back through the port whose GID is the
            // destination's, to the MAC of its own netdev.
            let found = || {
                let peer = gid_table::find(|e| {
                    e.kind == gid_table::GidType::RoceV2 && e.gid == gid_table::gid_of(destination)
                })
                .ok_or_else(not_available)?;
                let ours = gid_table::find(|e| {
                    gid_table::is_roce_v2_for(e, self.source.unwrap_or(destination), peer.ifindex)
                })
                .ok_or_else(not_available)?;
                let mac = parse_mac(&netdev_file(&peer.netdev, "address")?)
                    .ok_or_else(|| io::Error::from_raw_os_error(libc::EINVAL))?;
                Ok((ours, mac))
            };
            match found() {
                Ok(found) => found,
                Err(e) => return Some(Err(e)),
            }
        } else {
            if self.next_hop.is_none() {
                let route = &self.route;
                let found = route.source.ok_or_else(not_available).and_then(|from| {
                    let ours =
                        gid_table::find(|e| gid_table::is_roce_v2_for(e, from, route.ifindex))
                            .ok_or_else(not_available)?;
                    let hop = route.next_hop(destination);
                    Ok((ours, neighbour::Probe::new(route.ifindex, hop, Some(from))))
                });
                match found {
                    Ok(found) => self.next_hop = Some(found),
                    Err(e) => return Some(Err(e)),
                }
            }
            let (entry, probe) = self.next_hop.as_mut()?;
            match probe.look() {
                Ok(Some(mac)) => (entry.clone(), mac),
                Ok(None) if Instant::now() >= self.deadline => {
                    return Some(Err(io::Error::from_raw_os_error(libc::ETIMEDOUT)))
                }
                Ok(None) => return None,
                Err(e) => return Some(Err(e)),
            }
        };
        Some(self.finish(entry, dmac))
    }

    fn finish(&self, entry: gid_table::GidEntry, dmac: [u8; 6]) -> io::Result<Resolved> {
        let netdev_mtu = netlink::netdev_mtu(&entry.netdev)?;
        // Where the time goes (cmtime's "resolve addr" step is this).
        crate::debug!(
            "resolved {}: {:?} after the route lookup began",
            self.destination,
            self.started.elapsed()
        );
        Ok(Resolved {
            device: entry.device,
            port: entry.port,
            sgid_index: entry.index,
            source: self
                .source
                .or(self.route.source)
                .unwrap_or(self.destination),
            dgid: gid_table::gid_of(self.destination),
            dmac,
            mtu: ib_mtu_for(netdev_mtu)
                .ok_or_else(|| io::Error::from_raw_os_error(libc::EINVAL))?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_and_unspecified_addresses_bind_no_device() {
        for any in ["0.0.0.0", "::", "127.0.0.1", "127.1.2.3", "::1"] {
            assert!(is_any_addr(any.parse().unwrap()), "{any}");
        }
        for specific in ["10.77.0.1", "fe80::1", "::ffff:127.0.0.1", "224.0.0.1"] {
            assert!(!is_any_addr(specific.parse().unwrap()), "{specific}");
        }
    }

    #[test]
    fn netdev_mtus_map_as_the_kernel_maps_them() {
        assert_eq!(ib_mtu_for(1500), Some(3)); // rxe on an ordinary netdev: 1024
        assert_eq!(ib_mtu_for(9000), Some(5));
        assert_eq!(ib_mtu_for(2048 + 96), Some(4));
        assert_eq!(ib_mtu_for(2048 + 95), Some(3));
        assert_eq!(ib_mtu_for(256 + 96), Some(1));
        assert_eq!(ib_mtu_for(256 + 95), None);
        assert_eq!(ib_mtu_for(0), None);
    }

    #[test]
    fn macs_parse_as_sysfs_prints_them() {
        assert_eq!(
            parse_mac("02:24:13:c5:51:8f"),
            Some([0x02, 0x24, 0x13, 0xc5, 0x51, 0x8f])
        );
        assert_eq!(parse_mac("02:24:13:c5:51"), None);
        assert_eq!(parse_mac("02:24:13:c5:51:8f:00"), None);
    }
}
