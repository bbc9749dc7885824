//! One rtnetlink request and its answers, through the netlink crates of the rust-netlink
//! project (`netlink-sys` for the socket, `netlink-packet-route` for the messages).

use std::{io, os::fd::AsRawFd, time::Duration};

use netlink_packet_core::{NetlinkHeader, NetlinkMessage, NetlinkPayload, NLM_F_REQUEST};
use netlink_packet_route::RouteNetlinkMessage;
use netlink_sys::{protocols::NETLINK_ROUTE, Socket, SocketAddr};

/// Sends `message` with `flags` (besides `NLM_F_REQUEST`) and returns the messages the kernel
/// answers with, up to its `NLMSG_DONE` or its one answer. A netlink error is an `io::Error`
/// with its errno.
pub(crate) fn request(
    message: RouteNetlinkMessage,
    flags: u16,
) -> io::Result<Vec<RouteNetlinkMessage>> {
    let mut socket = Socket::new(NETLINK_ROUTE)?;
    socket.bind_auto()?;
    socket.connect(&SocketAddr::new(0, 0))?;
    let mut header = NetlinkHeader::default();
    header.flags = NLM_F_REQUEST | flags;
    let mut request = NetlinkMessage::new(header, NetlinkPayload::from(message));
    request.finalize();
    let mut buf = vec![0; request.header.length as usize];
    request.serialize(&mut buf);
    socket.send(&buf, 0)?;

    let dump = flags & netlink_packet_core::NLM_F_DUMP == netlink_packet_core::NLM_F_DUMP;
    let mut answers = Vec::new();
    let mut receive = vec![0u8; 32 * 1024];
    loop {
        let size = socket.recv(&mut &mut receive[..], 0)?;
        let mut offset = 0;
        while offset < size {
            let message =
                NetlinkMessage::<RouteNetlinkMessage>::deserialize(&receive[offset..size])
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
            let length = message.header.length as usize;
            match message.payload {
                NetlinkPayload::Done(_) => return Ok(answers),
                NetlinkPayload::Error(e) => {
                    return match e.code {
                        Some(code) => Err(io::Error::from_raw_os_error(-code.get())),
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
            if length == 0 {
                break;
            }
            offset += length;
        }
    }
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

    /// Waits until a notification arrives, or `timeout` passes (`false`). What arrived is
    /// discarded: the caller looks again at what it is waiting for. An overrun (`ENOBUFS`),
    /// which loses notifications, counts as one.
    pub(crate) fn wait(&self, timeout: Duration) -> io::Result<bool> {
        let mut pollfd = libc::pollfd {
            fd: self.socket.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = c_int_millis(timeout);
        // SAFETY: One valid pollfd, for the duration of the call.
        match unsafe { libc::poll(&mut pollfd, 1, ms) } {
            0 => return Ok(false),
            n if n < 0 => {
                let e = io::Error::last_os_error();
                return if e.kind() == io::ErrorKind::Interrupted {
                    Ok(true)
                } else {
                    Err(e)
                };
            }
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
