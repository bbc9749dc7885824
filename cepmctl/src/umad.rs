//! Sending raw CM MADs through the kernel's user MAD interface (`ib_umad`).
//!
//! cepm owns the CM class on its ports, so a userspace agent cannot *receive* CM MADs there, but
//! a send-only agent can still emit them. Sent to the port's own GID, they loop back through
//! the MAD layer and reach cepm's agent exactly as a peer's would: this is how tests put CM
//! traffic, well-formed or hostile, on a port without a second CM.

use std::{
    fs::{self, File, OpenOptions},
    io::{self, Write},
    mem::size_of,
    os::fd::AsRawFd,
    path::Path,
};

use crate::bindings::umad as sys;

/// The GSI queue pair, where every CM MAD goes.
pub(crate) const GSI_QPN: u32 = 1;
/// The well-known GSI Q_Key (IBTA vol. 1, 10.2.5).
pub(crate) const GSI_QKEY: u32 = 0x8001_0000;
/// Size of a MAD.
pub(crate) const MAD_SIZE: usize = 256;

/// A GID table entry of a port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Gid {
    /// Index in the port's GID table.
    pub(crate) index: u8,
    /// The GID.
    pub(crate) raw: [u8; 16],
}

/// Parses a GID as sysfs prints it: eight colon-separated groups of four hex digits.
pub(crate) fn parse_gid(s: &str) -> Option<[u8; 16]> {
    let mut raw = [0u8; 16];
    let mut groups = s.trim().split(':');
    for pair in raw.chunks_exact_mut(2) {
        let group = groups.next()?;
        if group.len() != 4 {
            return None;
        }
        pair.copy_from_slice(&u16::from_str_radix(group, 16).ok()?.to_be_bytes());
    }
    groups.next().is_none().then_some(raw)
}

/// The port's first RoCE v2 GID that `wanted` accepts.
fn first_roce_v2_gid(device: &str, port: u32, wanted: impl Fn(&[u8; 16]) -> bool) -> Option<Gid> {
    let base = format!("/sys/class/infiniband/{device}/ports/{port}");
    // The table has one file per entry; an empty entry fails to read (EINVAL), and the
    // entries after it may be in use.
    let entries = fs::read_dir(format!("{base}/gids")).map_or(0, |d| d.count());
    for index in (0..entries).filter_map(|i| u8::try_from(i).ok()) {
        let Ok(kind) = fs::read_to_string(format!("{base}/gid_attrs/types/{index}")) else {
            continue;
        };
        if kind.trim() != "RoCE v2" {
            continue;
        }
        let Some(raw) = fs::read_to_string(format!("{base}/gids/{index}"))
            .ok()
            .and_then(|s| parse_gid(&s))
        else {
            continue;
        };
        if wanted(&raw) {
            return Some(Gid { index, raw });
        }
    }
    None
}

/// The port's first RoCE v2 GID that maps an IPv4 address (`::ffff:a.b.c.d`).
pub(crate) fn roce_v2_ipv4_gid(device: &str, port: u32) -> io::Result<Gid> {
    first_roce_v2_gid(device, port, |raw| {
        raw[..12] == [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff]
    })
    .ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::NotFound,
            format!(
                "{device} port {port} has no RoCE v2 IPv4 GID (does its netdev have an IPv4 address?)"
            ),
        )
    })
}

/// The port's RoCE v2 GID `gid` (an IPv6 address of its netdev, or a mapped IPv4 one).
pub(crate) fn roce_v2_gid(device: &str, port: u32, gid: std::net::Ipv6Addr) -> io::Result<Gid> {
    first_roce_v2_gid(device, port, |raw| *raw == gid.octets()).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::NotFound,
            format!("{device} port {port} has no RoCE v2 GID {gid}"),
        )
    })
}

/// The `/dev/infiniband/umadN` node serving `device` port `port`.
pub(crate) fn umad_path(device: &str, port: u32) -> io::Result<String> {
    let class = Path::new("/sys/class/infiniband_mad");
    for entry in fs::read_dir(class)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.starts_with("umad") {
            continue;
        }
        let read = |f: &str| fs::read_to_string(entry.path().join(f)).map(|s| s.trim().to_owned());
        if read("ibdev")? == device && read("port")? == port.to_string() {
            return Ok(format!("/dev/infiniband/{name}"));
        }
    }
    Err(io::Error::new(
        io::ErrorKind::NotFound,
        format!("no umad device for {device} port {port} (is ib_umad loaded?)"),
    ))
}

/// A send-only user MAD agent on one port.
pub(crate) struct SendAgent {
    file: File,
    agent_id: u32,
}

impl SendAgent {
    /// Opens the port's umad device and registers a send-only GSI agent on it.
    pub(crate) fn open(device: &str, port: u32) -> io::Result<Self> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(umad_path(device, port)?)?;
        // SAFETY: IB_USER_MAD_ENABLE_PKEY takes no argument.
        if unsafe {
            libc::ioctl(
                file.as_raw_fd(),
                libc::c_ulong::from(sys::CEPM_UMAD_ENABLE_PKEY),
            )
        } < 0
        {
            return Err(io::Error::last_os_error());
        }
        // Class 0 registers no methods: the agent can send but receives nothing.
        let mut req = sys::ib_user_mad_reg_req {
            qpn: GSI_QPN as u8,
            ..Default::default()
        };
        // SAFETY: `req` is a valid `ib_user_mad_reg_req` that the kernel reads and updates.
        if unsafe {
            libc::ioctl(
                file.as_raw_fd(),
                libc::c_ulong::from(sys::CEPM_UMAD_REGISTER_AGENT),
                &mut req,
            )
        } < 0
        {
            return Err(io::Error::last_os_error());
        }
        Ok(Self {
            file,
            agent_id: req.id,
        })
    }

    /// Sends `mad` to the GSI QP of the port owning `dest_gid`, using source GID `sgid_index`.
    /// No response is awaited.
    pub(crate) fn send(
        &mut self,
        sgid_index: u8,
        dest_gid: [u8; 16],
        mad: &[u8; MAD_SIZE],
    ) -> io::Result<()> {
        let hdr = sys::ib_user_mad_hdr {
            id: self.agent_id,
            length: u32::try_from(size_of::<sys::ib_user_mad_hdr>() + MAD_SIZE).unwrap_or(u32::MAX),
            qpn: GSI_QPN.to_be(),
            qkey: GSI_QKEY.to_be(),
            grh_present: 1,
            gid_index: sgid_index,
            hop_limit: 64,
            gid: dest_gid,
            ..Default::default()
        };
        let mut buf = Vec::with_capacity(size_of::<sys::ib_user_mad_hdr>() + MAD_SIZE);
        buf.extend_from_slice(hdr_bytes(&hdr));
        buf.extend_from_slice(mad);
        self.file.write_all(&buf)
    }
}

/// The bytes of a `ib_user_mad_hdr`, a plain C struct of integers without padding.
fn hdr_bytes(hdr: &sys::ib_user_mad_hdr) -> &[u8] {
    const _: () = assert!(size_of::<sys::ib_user_mad_hdr>() == 64);
    // SAFETY: The struct is `repr(C)`, made only of integers and integer arrays, and has no
    // padding (64 bytes of fields, asserted above), so all its bytes are initialised.
    unsafe {
        std::slice::from_raw_parts(
            (hdr as *const sys::ib_user_mad_hdr).cast::<u8>(),
            size_of::<sys::ib_user_mad_hdr>(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gids_parse_as_sysfs_prints_them() {
        let gid = parse_gid("0000:0000:0000:0000:0000:ffff:0a4d:0001\n").unwrap();
        assert_eq!(&gid[10..], &[0xff, 0xff, 10, 77, 0, 1]);
        assert_eq!(parse_gid("fe80:0000:0000:0000:0000:0000:0000"), None);
        assert_eq!(
            parse_gid("fe80:0000:0000:0000:0000:0000:0000:0000:0000"),
            None
        );
        assert_eq!(parse_gid("fe80:0000:0000:0000:0000:0000:0000:zzzz"), None);
    }
}
