//! One rtnetlink request and its answers, through the netlink crates of the rust-netlink
//! project (`netlink-sys` for the socket, `netlink-packet-route` for the messages).

use std::io;

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
