//! The ports' GID tables, through libibverbs' `ibv_query_gid_table` (one call a device, the
//! valid entries only): which device, port and GID index stand for an IP address on a netdev,
//! as the kernel's `rdma_cm` finds them (`rdma_find_gid_by_port`, through the route's netdev).
//! Kept between calls, each entry checked before it is used ([`super::gid_cache`]).

use std::{ffi::CStr, net::IpAddr};

use super::gid_cache::GidCache;
use crate::{device, sys};

/// Room for the valid entries of one device's ports. The kernel takes the array's length in a
/// 16-bit attribute field: 1024 entries of 32 bytes fit, 4096 do not (`EINVAL`).
const MAX_ENTRIES: usize = 1024;

/// A GID type, as `gid_attrs/types` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum GidType {
    /// IB or RoCE v1.
    IbOrRoceV1,
    /// RoCE v2: what cepm speaks on RoCE ports.
    RoceV2,
}

impl GidType {
    /// The type of a libibverbs entry.
    fn of(e: &sys::ibv_gid_entry) -> Self {
        if e.gid_type == sys::IBV_GID_TYPE_ROCE_V2 {
            Self::RoceV2
        } else {
            Self::IbOrRoceV1
        }
    }
}

/// One entry of a port's GID table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct GidEntry {
    /// RDMA device name.
    pub(crate) device: String,
    /// Port number.
    pub(crate) port: u8,
    /// Index in the port's table.
    pub(crate) index: u8,
    /// The GID.
    pub(crate) gid: [u8; 16],
    /// Its type.
    pub(crate) kind: GidType,
    /// The netdev it belongs to (RoCE).
    pub(crate) netdev: String,
    /// That netdev's index.
    pub(crate) ifindex: u32,
}

/// The GID that stands for `ip` in RoCE v2: the address itself for IPv6, IPv4-mapped for IPv4.
pub(crate) fn gid_of(ip: IpAddr) -> [u8; 16] {
    match ip {
        IpAddr::V4(v4) => v4.to_ipv6_mapped().octets(),
        IpAddr::V6(v6) => v6.octets(),
    }
}

/// The name of the netdev with index `ifindex`.
fn netdev_name(ifindex: u32) -> Option<String> {
    let mut name = [0 as libc::c_char; libc::IF_NAMESIZE];
    // SAFETY: `name` has room for IF_NAMESIZE bytes, as if_indextoname needs.
    let got = unsafe { libc::if_indextoname(ifindex, name.as_mut_ptr()) };
    if got.is_null() {
        return None;
    }
    // SAFETY: On success, if_indextoname wrote a C string into `name`.
    Some(
        unsafe { CStr::from_ptr(name.as_ptr()) }
            .to_string_lossy()
            .into_owned(),
    )
}

/// Every RoCE entry (one with a netdev) of every port of every device.
fn scan() -> Vec<GidEntry> {
    let mut entries = Vec::new();
    let Ok(devices) = device::all() else {
        return entries;
    };
    let mut raw = vec![sys::ibv_gid_entry::default(); MAX_ENTRIES];
    for (name, context) in devices {
        // SAFETY: `context` is open; `raw` has room for MAX_ENTRIES entries of the size given.
        let n = unsafe {
            sys::_ibv_query_gid_table(
                context,
                raw.as_mut_ptr(),
                raw.len(),
                0,
                core::mem::size_of::<sys::ibv_gid_entry>(),
            )
        };
        if n < 0 {
            crate::debug!(
                "{name}: ibv_query_gid_table: {}",
                std::io::Error::last_os_error()
            );
        }
        for e in raw.iter().take(usize::try_from(n).unwrap_or(0)) {
            crate::debug!(
                "{name} port {} GID {}: type {} ifindex {}",
                e.port_num,
                e.gid_index,
                e.gid_type,
                e.ndev_ifindex
            );
            let Some(netdev) = (e.ndev_ifindex != 0)
                .then(|| netdev_name(e.ndev_ifindex))
                .flatten()
            else {
                continue;
            };
            // SAFETY: A GID is 16 plain bytes in every member of its union.
            let gid = unsafe { e.gid.raw };
            entries.push(GidEntry {
                device: name.clone(),
                port: e.port_num as u8,
                index: e.gid_index as u8,
                gid,
                kind: GidType::of(e),
                netdev,
                ifindex: e.ndev_ifindex,
            });
        }
    }
    entries
}

static CACHE: GidCache<GidEntry> = GidCache::new();

/// The first RoCE entry of any port that `wanted` accepts, as the kernel has it now.
pub(crate) fn find(wanted: impl Fn(&GidEntry) -> bool) -> Option<GidEntry> {
    CACHE.find(wanted, scan, is_current)
}

/// Whether the device's table still has `entry` at its index: the same GID, of the same type,
/// on the same netdev.
fn is_current(entry: &GidEntry) -> bool {
    let Ok(dev) = device::by_name(&entry.device) else {
        return false;
    };
    let mut now = sys::ibv_gid_entry::default();
    // SAFETY: `dev.context` is open for the life of the process; `now` has room for one entry
    // of the size given.
    let rc = unsafe {
        sys::_ibv_query_gid_ex(
            dev.context,
            entry.port.into(),
            entry.index.into(),
            &mut now,
            0,
            core::mem::size_of::<sys::ibv_gid_entry>(),
        )
    };
    if rc != 0 {
        return false;
    }
    // SAFETY: A GID is 16 plain bytes in every member of its union.
    let gid = unsafe { now.gid.raw };
    gid == entry.gid && GidType::of(&now) == entry.kind && now.ndev_ifindex == entry.ifindex
}

/// Whether `e` is the RoCE v2 entry for `ip` on the netdev with index `ifindex`.
pub(crate) fn is_roce_v2_for(e: &GidEntry, ip: IpAddr, ifindex: u32) -> bool {
    e.kind == GidType::RoceV2 && e.gid == gid_of(ip) && e.ifindex == ifindex
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The RoCE v2 entry for `ip` on netdev `ifindex`: the first, by device, port and index.
    fn find_roce_v2(entries: &[GidEntry], ip: IpAddr, ifindex: u32) -> Option<&GidEntry> {
        entries.iter().find(|e| is_roce_v2_for(e, ip, ifindex))
    }

    /// An entry on netdev `vethN`, whose index is 10 + N.
    fn entry(device: &str, index: u8, gid: &str, kind: GidType, netdev: &str) -> GidEntry {
        let n: u32 = netdev.trim_start_matches("veth").parse().unwrap();
        GidEntry {
            device: device.into(),
            port: 1,
            index,
            gid: gid_of(gid.parse().unwrap()),
            kind,
            netdev: netdev.into(),
            ifindex: 10 + n,
        }
    }

    #[test]
    fn the_roce_v2_entry_of_the_address_on_its_netdev() {
        let entries = [
            entry(
                "rxe0",
                0,
                "fe80::24:13ff:fec5:518f",
                GidType::RoceV2,
                "veth0",
            ),
            entry("rxe0", 1, "10.77.0.1", GidType::IbOrRoceV1, "veth0"),
            entry("rxe0", 2, "10.77.0.1", GidType::RoceV2, "veth0"),
            entry("rxe1", 0, "10.77.0.2", GidType::RoceV2, "veth1"),
        ];
        let v4 = find_roce_v2(&entries, "10.77.0.1".parse().unwrap(), 10).unwrap();
        assert_eq!((v4.device.as_str(), v4.port, v4.index), ("rxe0", 1, 2));
        assert!(find_roce_v2(&entries, "10.77.0.1".parse().unwrap(), 11).is_none());
        let v6 = find_roce_v2(&entries, "fe80::24:13ff:fec5:518f".parse().unwrap(), 10).unwrap();
        assert_eq!(v6.index, 0);
        let other = find_roce_v2(&entries, "10.77.0.2".parse().unwrap(), 11).unwrap();
        assert_eq!(other.device, "rxe1");
    }

    #[test]
    fn ipv4_gids_are_ipv4_mapped() {
        assert_eq!(
            gid_of("10.77.0.1".parse().unwrap()),
            [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 77, 0, 1]
        );
        assert_eq!(gid_of("fe80::1".parse().unwrap())[..2], [0xfe, 0x80]);
    }
}
