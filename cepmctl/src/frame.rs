//! CM MADs sent as raw RoCE v2 frames: Ethernet, IPv4, UDP to port 4791, BTH, DETH, the MAD
//! (or the first bytes of it) and the ICRC, written to a netdev through an `AF_PACKET` socket.
//!
//! The MAD layer sends only whole MADs. A frame can carry any length, which is how a test puts
//! a MAD cut short on the wire: written to one end of a veth pair, it arrives at the other as a
//! peer's frame would, and the rxe device there checks it (ICRC, P_Key, Q_Key, destination GID)
//! and hands it to QP1.

use std::{
    ffi::CString,
    fs, io,
    mem::size_of,
    net::Ipv4Addr,
    os::fd::{AsRawFd, FromRawFd, OwnedFd},
};

use crate::umad::{GSI_QKEY, GSI_QPN};

/// RoCE v2's UDP destination port (IBTA Vol. 1 Annex A17).
const ROCE_V2_PORT: u16 = 4791;
/// The UDP source port of our frames: any in RoCE v2's 0xC000..=0xFFFF range will do.
const SOURCE_PORT: u16 = 0xc000;
/// BTH opcode of a UD SEND Only.
const UD_SEND_ONLY: u8 = 0x64;
/// The default P_Key, full member.
const DEFAULT_PKEY: u16 = 0xffff;

const ETH_LEN: usize = 14;
const IPV4_LEN: usize = 20;
const UDP_LEN: usize = 8;
const BTH_LEN: usize = 12;
const DETH_LEN: usize = 8;
const ICRC_LEN: usize = 4;

/// Where a frame goes and where it claims to come from.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Route {
    pub(crate) src_mac: [u8; 6],
    pub(crate) dst_mac: [u8; 6],
    pub(crate) src_ip: Ipv4Addr,
    pub(crate) dst_ip: Ipv4Addr,
}

/// The frame carrying `payload` (a MAD or the first bytes of one) to QP1 of `route`'s
/// destination with packet sequence number `psn`. The payload is padded to a multiple of four
/// bytes, as the BTH's pad count says.
pub(crate) fn roce_v2_frame(route: &Route, psn: u32, payload: &[u8]) -> Vec<u8> {
    let pad = (4 - payload.len() % 4) % 4;
    let udp_len = UDP_LEN + BTH_LEN + DETH_LEN + payload.len() + pad + ICRC_LEN;
    let ip_len = IPV4_LEN + udp_len;

    let mut ip = [0u8; IPV4_LEN];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&u16::try_from(ip_len).unwrap_or(u16::MAX).to_be_bytes());
    ip[6] = 0x40; // Don't Fragment, as rxe sends.
    ip[8] = 64;
    ip[9] = 17; // UDP
    ip[12..16].copy_from_slice(&route.src_ip.octets());
    ip[16..20].copy_from_slice(&route.dst_ip.octets());
    let checksum = ipv4_checksum(&ip);
    ip[10..12].copy_from_slice(&checksum.to_be_bytes());

    // A zero UDP checksum is "none" over IPv4; rxe sends the same.
    let mut udp = [0u8; UDP_LEN];
    udp[0..2].copy_from_slice(&SOURCE_PORT.to_be_bytes());
    udp[2..4].copy_from_slice(&ROCE_V2_PORT.to_be_bytes());
    udp[4..6].copy_from_slice(&u16::try_from(udp_len).unwrap_or(u16::MAX).to_be_bytes());

    let mut bth = [0u8; BTH_LEN];
    bth[0] = UD_SEND_ONLY;
    bth[1] = u8::try_from(pad).unwrap_or(0) << 4;
    bth[2..4].copy_from_slice(&DEFAULT_PKEY.to_be_bytes());
    bth[4..8].copy_from_slice(&GSI_QPN.to_be_bytes());
    bth[8..12].copy_from_slice(&(psn & 0x00ff_ffff).to_be_bytes());

    let mut rest = Vec::with_capacity(DETH_LEN + payload.len() + pad);
    rest.extend_from_slice(&GSI_QKEY.to_be_bytes());
    rest.extend_from_slice(&GSI_QPN.to_be_bytes());
    rest.extend_from_slice(payload);
    rest.resize(DETH_LEN + payload.len() + pad, 0);

    let icrc = icrc(&ip, &udp, &bth, &rest);
    let mut frame = Vec::with_capacity(ETH_LEN + ip_len);
    frame.extend_from_slice(&route.dst_mac);
    frame.extend_from_slice(&route.src_mac);
    frame.extend_from_slice(&0x0800u16.to_be_bytes());
    frame.extend_from_slice(&ip);
    frame.extend_from_slice(&udp);
    frame.extend_from_slice(&bth);
    frame.extend_from_slice(&rest);
    frame.extend_from_slice(&icrc.to_le_bytes());
    frame
}

/// The IPv4 header checksum (RFC 791) of `header`, whose checksum field is zero.
fn ipv4_checksum(header: &[u8; IPV4_LEN]) -> u16 {
    !ones_complement_sum(header)
}

/// The one's-complement sum of `bytes` as 16-bit big-endian words (RFC 1071).
fn ones_complement_sum(bytes: &[u8]) -> u16 {
    let mut sum: u32 = bytes
        .chunks_exact(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    u16::try_from(sum).unwrap_or(u16::MAX)
}

/// RoCE v2's invariant CRC (IBTA Vol. 1 Annex A17.3.3): CRC-32 over eight bytes of ones
/// standing for the LRH, the IP and UDP headers and the BTH with their variant fields (IPv4
/// TOS, TTL and checksum, the UDP checksum, the BTH's reserved byte) set to ones, then the rest
/// of the packet. rxe computes the same (`rxe_icrc_hdr`, drivers/infiniband/sw/rxe/rxe_icrc.c)
/// and keeps it in the frame least significant byte first.
fn icrc(ip: &[u8; IPV4_LEN], udp: &[u8; UDP_LEN], bth: &[u8; BTH_LEN], rest: &[u8]) -> u32 {
    let mut ip = *ip;
    ip[1] = 0xff;
    ip[8] = 0xff;
    ip[10..12].fill(0xff);
    let mut udp = *udp;
    udp[6..8].fill(0xff);
    let mut bth = *bth;
    bth[4] = 0xff;
    let mut crc = crc32fast::Hasher::new();
    for part in [&[0xffu8; 8][..], &ip, &udp, &bth, rest] {
        crc.update(part);
    }
    crc.finalize()
}

/// `netdev`'s MAC address, from sysfs.
pub(crate) fn netdev_mac(netdev: &str) -> io::Result<[u8; 6]> {
    let text = fs::read_to_string(format!("/sys/class/net/{netdev}/address"))?;
    crate::parse_mac(text.trim()).map_err(io::Error::other)
}

/// The MAC that this namespace's neighbour table has for `ip` on `netdev`.
pub(crate) fn neighbour_mac(netdev: &str, ip: Ipv4Addr) -> io::Result<[u8; 6]> {
    let table = fs::read_to_string("/proc/net/arp")?;
    // "IP address  HW type  Flags  HW address  Mask  Device"; flags 0x0 is an incomplete entry.
    table
        .lines()
        .skip(1)
        .map(|line| line.split_whitespace().collect::<Vec<_>>())
        .find(|f| f.len() == 6 && f[0] == ip.to_string() && f[2] != "0x0" && f[5] == netdev)
        .and_then(|f| crate::parse_mac(f[3]).ok())
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::NotFound,
                format!("no neighbour entry for {ip} on {netdev}"),
            )
        })
}

/// An `AF_PACKET` socket that writes whole Ethernet frames to one netdev.
pub(crate) struct FrameSocket {
    fd: OwnedFd,
    ifindex: i32,
}

impl FrameSocket {
    /// Opens it on `netdev` (needs `CAP_NET_RAW`). Protocol 0: it receives nothing.
    pub(crate) fn open(netdev: &str) -> io::Result<Self> {
        let name = CString::new(netdev).map_err(io::Error::other)?;
        // SAFETY: `name` is a valid NUL-terminated string for the duration of the call.
        let ifindex = unsafe { libc::if_nametoindex(name.as_ptr()) };
        let ifindex = i32::try_from(ifindex)
            .ok()
            .filter(|&i| i != 0)
            .ok_or_else(|| {
                io::Error::new(io::ErrorKind::NotFound, format!("no netdev {netdev}"))
            })?;
        // SAFETY: No pointers are passed.
        let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW, 0) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` is a socket just opened, owned by nothing else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(Self { fd, ifindex })
    }

    /// Writes `frame` (Ethernet header first) to the netdev, for `dst_mac`.
    pub(crate) fn send(&self, frame: &[u8], dst_mac: [u8; 6]) -> io::Result<()> {
        // SAFETY: An all-zero `sockaddr_ll` is a valid value of the plain C struct.
        let mut addr: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        addr.sll_family = libc::AF_PACKET as u16;
        addr.sll_ifindex = self.ifindex;
        addr.sll_halen = 6;
        addr.sll_addr[..6].copy_from_slice(&dst_mac);
        // SAFETY: `frame` is valid for its length and `addr` for the size passed.
        let sent = unsafe {
            libc::sendto(
                self.fd.as_raw_fd(),
                frame.as_ptr().cast(),
                frame.len(),
                0,
                (&raw const addr).cast(),
                size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        };
        match usize::try_from(sent) {
            Ok(n) if n == frame.len() => Ok(()),
            Ok(_) => Err(io::Error::other("short write of a frame")),
            Err(_) => Err(io::Error::last_os_error()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROUTE: Route = Route {
        src_mac: [2, 0, 0, 0, 0, 1],
        dst_mac: [2, 0, 0, 0, 0, 2],
        src_ip: Ipv4Addr::new(10, 77, 0, 9),
        dst_ip: Ipv4Addr::new(10, 77, 0, 1),
    };

    #[test]
    fn ipv4_header_sums_to_ones() {
        // With its checksum in place, a header's one's-complement sum is 0xffff (RFC 1071).
        let frame = roce_v2_frame(&ROUTE, 0, &[0u8; 256]);
        assert_eq!(
            ones_complement_sum(&frame[ETH_LEN..ETH_LEN + IPV4_LEN]),
            0xffff
        );
    }

    #[test]
    fn lengths_and_padding() {
        for (len, pad) in [(256, 0), (164, 0), (163, 1), (1, 3)] {
            let frame = roce_v2_frame(&ROUTE, 7, &vec![0xa5; len]);
            let payload = ETH_LEN + IPV4_LEN + UDP_LEN + BTH_LEN + DETH_LEN;
            assert_eq!(frame.len(), payload + len + pad + ICRC_LEN);
            assert_eq!(
                usize::from(frame[ETH_LEN + IPV4_LEN + UDP_LEN + 1] >> 4),
                pad
            );
            let udp_len = u16::from_be_bytes([frame[ETH_LEN + 24], frame[ETH_LEN + 25]]);
            assert_eq!(usize::from(udp_len), frame.len() - ETH_LEN - IPV4_LEN);
        }
    }
}
