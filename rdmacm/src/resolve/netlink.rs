//! rtnetlink requests and their answers over one kept socket a process (which also answers
//! `SIOCGIFMTU`), and subscriptions to notifications, through the netlink crates of the
//! rust-netlink project (`netlink-sys` for the sockets, `netlink-packet-route` for the
//! messages).

use std::{
    io,
    os::fd::{AsRawFd, BorrowedFd},
    sync::{Mutex, PoisonError},
    time::Duration,
};

use netlink_packet_core::{
    NetlinkBuffer, NetlinkHeader, NetlinkMessage, NetlinkPayload, NLM_F_REQUEST,
};
use netlink_packet_route::RouteNetlinkMessage;
use netlink_sys::{protocols::NETLINK_ROUTE, Socket, SocketAddr};

/// The process's socket for requests, kept between them: a resolution makes two or three, and
/// a socket's making and closing cost five system calls, as many as the request itself.
/// Made again in a child after a fork (it must not read its parent's answers), after a
/// failure that may have left answers unread, and when a resolution starts in another
/// network namespace than the socket's ([`follow_namespace`]).
static REQUESTS: Mutex<Option<RequestSocket>> = Mutex::new(None);

/// The request socket and whose it is.
struct RequestSocket {
    socket: Socket,
    /// The process that made it.
    pid: u32,
    /// The network namespace it was made in (`None`: unknown, so kept for one resolution).
    namespace: Option<(u64, u64)>,
    /// The sequence number of the last request: an answer with another is stale, and skipped.
    sequence: u32,
}

/// Why a request failed.
enum Failure {
    /// The kernel answered with an error: the socket is ready for the next request.
    Answered(io::Error),
    /// The socket failed, or an answer could not be read: answers may be left in it.
    Socket(io::Error),
}

impl RequestSocket {
    fn open(pid: u32) -> io::Result<Self> {
        let mut socket = Socket::new(NETLINK_ROUTE)?;
        socket.bind_auto()?;
        socket.connect(&SocketAddr::new(0, 0))?;
        Ok(Self {
            socket,
            pid,
            namespace: current_namespace(),
            sequence: 0,
        })
    }

    /// Sends `message` and collects its answers.
    fn exchange(
        &mut self,
        message: RouteNetlinkMessage,
        flags: u16,
    ) -> Result<Vec<RouteNetlinkMessage>, Failure> {
        self.sequence = self.sequence.wrapping_add(1);
        let mut header = NetlinkHeader::default();
        header.flags = NLM_F_REQUEST | flags;
        header.sequence_number = self.sequence;
        let mut request = NetlinkMessage::new(header, NetlinkPayload::from(message));
        request.finalize();
        let mut buf = vec![0; request.header.length as usize];
        request.serialize(&mut buf);
        self.socket.send(&buf, 0).map_err(Failure::Socket)?;

        let dump = flags & netlink_packet_core::NLM_F_DUMP == netlink_packet_core::NLM_F_DUMP;
        let mut answers = Vec::new();
        let mut receive = vec![0u8; 32 * 1024];
        loop {
            let size = self
                .socket
                .recv(&mut &mut receive[..], 0)
                .map_err(Failure::Socket)?;
            let invalid = |e: &dyn ToString| {
                Failure::Socket(io::Error::new(io::ErrorKind::InvalidData, e.to_string()))
            };
            let mut offset = 0;
            while offset < size {
                let bytes = &receive[offset..size];
                let header = NetlinkBuffer::new_checked(bytes).map_err(|e| invalid(&e))?;
                let length = header.length() as usize;
                // Messages in one datagram start at 4-byte boundaries (NLMSG_ALIGN).
                offset += length.next_multiple_of(4);
                // A stale answer is skipped before it is parsed: it is not this caller's.
                if header.sequence_number() != self.sequence {
                    continue;
                }
                let message = NetlinkMessage::<RouteNetlinkMessage>::deserialize(&bytes[..length])
                    .map_err(|e| invalid(&e))?;
                match message.payload {
                    NetlinkPayload::Done(_) => return Ok(answers),
                    NetlinkPayload::Error(e) => {
                        return match e.code {
                            Some(code) => {
                                Err(Failure::Answered(io::Error::from_raw_os_error(-code.get())))
                            }
                            None => Ok(answers), // an acknowledgement
                        };
                    }
                    NetlinkPayload::InnerMessage(inner) => {
                        answers.push(inner);
                        if !dump {
                            return Ok(answers);
                        }
                    }
                    _ => {}
                }
            }
        }
    }
}

/// The network namespace this thread is in: the device and inode of its `ns/net` (`None`
/// without procfs).
fn current_namespace() -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let ns = std::fs::metadata("/proc/thread-self/ns/net").ok()?;
    Some((ns.dev(), ns.ino()))
}

/// Called as a resolution starts: forgets the kept socket if this thread is no longer in its
/// network namespace (or that cannot be told), so that routes, neighbours and MTUs come from
/// the caller's namespace, as they did when each request had a socket of its own. One
/// `statx` a resolution.
pub(crate) fn follow_namespace() {
    let mut kept = REQUESTS.lock().unwrap_or_else(PoisonError::into_inner);
    if kept
        .as_ref()
        .is_some_and(|s| s.namespace.is_none() || s.namespace != current_namespace())
    {
        *kept = None;
    }
}

/// Runs `f` on the process's request socket, made first if this process has none.
fn with_socket<T>(f: impl FnOnce(&mut RequestSocket) -> Result<T, Failure>) -> io::Result<T> {
    let mut kept = REQUESTS.lock().unwrap_or_else(PoisonError::into_inner);
    let pid = std::process::id();
    let socket = match kept.take() {
        Some(s) if s.pid == pid => kept.insert(s),
        // A parent's socket is closed here only in the child; the parent keeps its own.
        _ => kept.insert(RequestSocket::open(pid)?),
    };
    match f(socket) {
        Ok(value) => Ok(value),
        Err(Failure::Answered(e)) => Err(e),
        Err(Failure::Socket(e)) => {
            *kept = None;
            Err(e)
        }
    }
}

/// Sends `message` with `flags` (besides `NLM_F_REQUEST`) and returns the messages the kernel
/// answers with, up to its `NLMSG_DONE` or its one answer. A netlink error is an `io::Error`
/// with its errno.
pub(crate) fn request(
    message: RouteNetlinkMessage,
    flags: u16,
) -> io::Result<Vec<RouteNetlinkMessage>> {
    with_socket(|s| s.exchange(message, flags))
}

/// The MTU of netdev `name`, through the request socket (`SIOCGIFMTU`, one system call where
/// sysfs's file takes five).
pub(crate) fn netdev_mtu(name: &str) -> io::Result<u32> {
    // SAFETY: ifreq is plain data; all zeroes is a valid value.
    let mut ifr: libc::ifreq = unsafe { core::mem::zeroed() };
    let bytes = name.as_bytes();
    if bytes.is_empty() || bytes.len() >= ifr.ifr_name.len() || bytes.contains(&0) {
        return Err(io::Error::from_raw_os_error(libc::ENODEV));
    }
    for (to, from) in ifr.ifr_name.iter_mut().zip(bytes) {
        *to = *from as libc::c_char;
    }
    with_socket(|s| {
        // SAFETY: `ifr` is a valid ifreq with a NUL-terminated name, for the call's duration.
        let rc = unsafe { libc::ioctl(s.socket.as_raw_fd(), libc::SIOCGIFMTU, &mut ifr) };
        if rc != 0 {
            return Err(Failure::Answered(io::Error::last_os_error()));
        }
        // SAFETY: SIOCGIFMTU filled in the MTU member of the union.
        let mtu = unsafe { ifr.ifr_ifru.ifru_mtu };
        u32::try_from(mtu)
            .map_err(|_| Failure::Answered(io::Error::from_raw_os_error(libc::EINVAL)))
    })
}

/// A socket that hears the kernel's rtnetlink notifications of one group (`RTNLGRP_*`).
pub(crate) struct Notifications {
    socket: Socket,
}

impl Notifications {
    /// Joins `group`. Whatever changes after this returns is heard.
    pub(crate) fn subscribe(group: u32) -> io::Result<Self> {
        let mut socket = Socket::new(NETLINK_ROUTE)?;
        socket.bind_auto()?;
        socket.add_membership(group)?;
        socket.set_non_blocking(true)?;
        Ok(Self { socket })
    }

    /// Waits until a notification arrives (`true`), `also` becomes readable, or `timeout`
    /// passes. What arrived is discarded: the caller looks again at what it is waiting for. An
    /// overrun (`ENOBUFS`), which loses notifications, counts as one. `also` is left as it is.
    pub(crate) fn wait(&self, also: BorrowedFd<'_>, timeout: Duration) -> io::Result<bool> {
        let mut fds = [
            libc::pollfd {
                fd: self.socket.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: also.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        let ms = c_int_millis(timeout);
        // SAFETY: Two valid pollfds, for the duration of the call.
        match unsafe { libc::poll(fds.as_mut_ptr(), 2, ms) } {
            0 => return Ok(false),
            n if n < 0 => {
                let e = io::Error::last_os_error();
                return if e.kind() == io::ErrorKind::Interrupted {
                    Ok(true)
                } else {
                    Err(e)
                };
            }
            _ if fds[0].revents == 0 => return Ok(false),
            _ => {}
        }
        let mut buf = [0u8; 8192];
        loop {
            match self.socket.recv(&mut &mut buf[..], 0) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(true),
                Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {}
                Err(e) => return Err(e),
            }
        }
    }
}

/// `timeout` in whole milliseconds for poll(2), rounded up so that a short wait is not a
/// busy one, and capped at its largest.
fn c_int_millis(timeout: Duration) -> libc::c_int {
    let ms = timeout.as_micros().div_ceil(1000);
    libc::c_int::try_from(ms).unwrap_or(libc::c_int::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_loopbacks_mtu() {
        let sysfs: u32 = std::fs::read_to_string("/sys/class/net/lo/mtu")
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert_eq!(netdev_mtu("lo").unwrap(), sysfs);
        assert_eq!(
            netdev_mtu("no-such-netdev").unwrap_err().raw_os_error(),
            Some(libc::ENODEV)
        );
        assert_eq!(
            netdev_mtu("a-name-too-long-for-ifreq")
                .unwrap_err()
                .raw_os_error(),
            Some(libc::ENODEV)
        );
    }

    #[test]
    fn one_socket_serves_every_request_in_its_namespace() {
        let fd = |s: &mut RequestSocket| Ok(s.socket.as_raw_fd());
        let first = with_socket(fd).unwrap();
        assert!(netdev_mtu("lo").is_ok());
        follow_namespace();
        assert_eq!(with_socket(fd).unwrap(), first);
        assert!(with_socket(|s| Ok(s.namespace)).unwrap().is_some());
    }

    #[test]
    fn poll_timeouts_round_up_and_saturate() {
        assert_eq!(c_int_millis(Duration::ZERO), 0);
        assert_eq!(c_int_millis(Duration::from_micros(1)), 1);
        assert_eq!(c_int_millis(Duration::from_millis(250)), 250);
        assert_eq!(
            c_int_millis(Duration::from_secs(u64::MAX)),
            libc::c_int::MAX
        );
    }
}
