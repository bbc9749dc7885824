//! The ports' GID tables, as sysfs shows them (`/sys/class/infiniband/DEV/ports/N/gids/I`, with
//! `gid_attrs/types/I` and `gid_attrs/ndevs/I`): which device, port and GID index stand for an
//! IP address on a netdev, as the kernel's `rdma_cm` finds them (`rdma_find_gid_by_port`,
//! through the netdev of the route).

use std::{
    fs,
    net::IpAddr,
    path::{Path, PathBuf},
};

/// Where the GID tables are.
pub(crate) const SYSFS: &str = "/sys/class/infiniband";

/// A GID type, as `gid_attrs/types` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum GidType {
    /// "IB/RoCE v1".
    IbOrRoceV1,
    /// "RoCE v2": what cepm speaks on RoCE ports.
    RoceV2,
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
}

/// The GID that stands for `ip` in RoCE v2: the address itself for IPv6, IPv4-mapped for IPv4.
pub(crate) fn gid_of(ip: IpAddr) -> [u8; 16] {
    match ip {
        IpAddr::V4(v4) => v4.to_ipv6_mapped().octets(),
        IpAddr::V6(v6) => v6.octets(),
    }
}

/// A GID as sysfs prints it: eight groups of four hex digits.
fn parse_gid(text: &str) -> Option<[u8; 16]> {
    let mut gid = [0u8; 16];
    let mut groups = text.trim().split(':');
    for pair in gid.chunks_exact_mut(2) {
        let group = groups.next().filter(|g| g.len() == 4)?;
        let value = u16::from_str_radix(group, 16).ok()?;
        pair.copy_from_slice(&value.to_be_bytes());
    }
    groups.next().is_none().then_some(gid)
}

fn read(path: PathBuf) -> Option<String> {
    fs::read_to_string(path).ok().map(|s| s.trim().to_owned())
}

/// Every RoCE entry (one with a netdev) of every port under `root` (normally [`SYSFS`]).
/// Unused entries (all-zero GIDs) and unreadable ones are left out.
pub(crate) fn scan(root: &Path) -> Vec<GidEntry> {
    let mut entries = Vec::new();
    let Ok(devices) = fs::read_dir(root) else {
        return entries;
    };
    for device in devices.flatten() {
        let name = device.file_name().to_string_lossy().into_owned();
        let Ok(ports) = fs::read_dir(device.path().join("ports")) else {
            continue;
        };
        for port in ports.flatten() {
            let Ok(port_num) = port.file_name().to_string_lossy().parse::<u8>() else {
                continue;
            };
            let Ok(gids) = fs::read_dir(port.path().join("gids")) else {
                continue;
            };
            for gid in gids.flatten() {
                let Ok(index) = gid.file_name().to_string_lossy().parse::<u8>() else {
                    continue;
                };
                let Some(value) = read(gid.path()).as_deref().and_then(parse_gid) else {
                    continue;
                };
                let attrs = port.path().join("gid_attrs");
                let (Some(kind), Some(netdev)) = (
                    read(attrs.join("types").join(index.to_string())),
                    read(attrs.join("ndevs").join(index.to_string())),
                ) else {
                    continue;
                };
                let kind = match kind.as_str() {
                    "RoCE v2" => GidType::RoceV2,
                    _ => GidType::IbOrRoceV1,
                };
                if value == [0; 16] {
                    continue;
                }
                entries.push(GidEntry {
                    device: name.clone(),
                    port: port_num,
                    index,
                    gid: value,
                    kind,
                    netdev,
                });
            }
        }
    }
    entries.sort_by(|a, b| (&a.device, a.port, a.index).cmp(&(&b.device, b.port, b.index)));
    entries
}

/// The RoCE v2 entry for `ip` on `netdev`: the first, by device, port and index.
pub(crate) fn find_roce_v2<'a>(
    entries: &'a [GidEntry],
    ip: IpAddr,
    netdev: &str,
) -> Option<&'a GidEntry> {
    let gid = gid_of(ip);
    entries
        .iter()
        .find(|e| e.kind == GidType::RoceV2 && e.gid == gid && e.netdev == netdev)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sysfs tree under a fresh directory: (device, port, index, gid, type, ndev) rows.
    fn tree(rows: &[(&str, u8, u8, &str, &str, &str)]) -> PathBuf {
        let root = std::env::temp_dir().join(format!(
            "cepm-gid-table-{}-{}",
            std::process::id(),
            rows.len()
        ));
        let _ = fs::remove_dir_all(&root);
        for (device, port, index, gid, kind, ndev) in rows {
            let port = root.join(device).join("ports").join(port.to_string());
            for (dir, text) in [
                ("gids", *gid),
                ("gid_attrs/types", *kind),
                ("gid_attrs/ndevs", *ndev),
            ] {
                fs::create_dir_all(port.join(dir)).unwrap();
                fs::write(port.join(dir).join(index.to_string()), format!("{text}\n")).unwrap();
            }
        }
        root
    }

    #[test]
    fn gids_parse_as_sysfs_prints_them() {
        assert_eq!(
            parse_gid("0000:0000:0000:0000:0000:ffff:0a4d:0001"),
            Some(gid_of("10.77.0.1".parse().unwrap()))
        );
        assert_eq!(
            parse_gid("fe80:0000:0000:0000:0024:13ff:fec5:518f").unwrap()[..2],
            [0xfe, 0x80]
        );
        assert_eq!(parse_gid("fe80::1"), None);
        assert_eq!(
            parse_gid("0000:0000:0000:0000:0000:ffff:0a4d:0001:0000"),
            None
        );
    }

    #[test]
    fn the_roce_v2_entry_of_the_address_on_its_netdev() {
        let root = tree(&[
            (
                "rxe0",
                1,
                0,
                "fe80:0000:0000:0000:0024:13ff:fec5:518f",
                "RoCE v2",
                "veth0",
            ),
            (
                "rxe0",
                1,
                1,
                "0000:0000:0000:0000:0000:ffff:0a4d:0001",
                "IB/RoCE v1",
                "veth0",
            ),
            (
                "rxe0",
                1,
                2,
                "0000:0000:0000:0000:0000:ffff:0a4d:0001",
                "RoCE v2",
                "veth0",
            ),
            (
                "rxe1",
                1,
                0,
                "0000:0000:0000:0000:0000:ffff:0a4d:0002",
                "RoCE v2",
                "veth1",
            ),
            (
                "rxe1",
                1,
                1,
                "0000:0000:0000:0000:0000:0000:0000:0000",
                "RoCE v2",
                "veth1",
            ),
        ]);
        let entries = scan(&root);
        assert_eq!(entries.len(), 4, "the unused entry is left out");
        let v4 = find_roce_v2(&entries, "10.77.0.1".parse().unwrap(), "veth0").unwrap();
        assert_eq!((v4.device.as_str(), v4.port, v4.index), ("rxe0", 1, 2));
        assert!(find_roce_v2(&entries, "10.77.0.1".parse().unwrap(), "veth1").is_none());
        let v6 = find_roce_v2(
            &entries,
            "fe80::24:13ff:fec5:518f".parse().unwrap(),
            "veth0",
        )
        .unwrap();
        assert_eq!(v6.index, 0);
        let other = find_roce_v2(&entries, "10.77.0.2".parse().unwrap(), "veth1").unwrap();
        assert_eq!(other.device, "rxe1");
        fs::remove_dir_all(root).unwrap();
    }
}
