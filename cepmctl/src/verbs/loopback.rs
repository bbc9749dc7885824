//! A self-test of the verbs layer without a connection manager: two RC QPs on one port are
//! connected to each other by hand (each the other's destination, addressed to the port's own
//! RoCE v2 GID) and run a verified ping-pong, one end per thread.
//!
//! The attributes are built exactly as the CM will hand them out (QPN, PSNs, path MTU, address
//! vector), so this exercises the same INIT → RTR → RTS path a CM-driven connection takes.

use std::{io, thread, time::Duration};

use super::{
    AccessFlags, AhAttr, CompletionError, CompletionQueue, Device, Mtu, PingPong, PingPongConfig,
    ProtectionDomain, QpCaps, QpState, RcQp, Role, RtrAttr, RtsAttr, Stats,
};
use crate::umad::{self, Gid};

/// The client's first send PSN: 16 packets below the 24-bit wrap, so that any run of more than
/// a few messages crosses it.
pub(crate) const CLIENT_SQ_PSN: u32 = 0x00ff_fff0;
/// The server's first send PSN.
pub(crate) const SERVER_SQ_PSN: u32 = 0x0012_3456;

/// What to run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Config {
    /// RDMA device, e.g. `rxe0`.
    pub(crate) device: String,
    /// Port number.
    pub(crate) port: u8,
    /// Round trips.
    pub(crate) iterations: u64,
    /// Bytes per message.
    pub(crate) size: usize,
    /// Path MTU; `None` for the port's active MTU.
    pub(crate) mtu: Option<Mtu>,
    /// How long to wait for any one completion.
    pub(crate) timeout: Duration,
    /// Fault injection: the server corrupts its echo in this iteration.
    pub(crate) corrupt_echo_at: Option<u64>,
}

/// What a successful run did.
#[derive(Clone, Debug)]
pub(crate) struct Report {
    /// The GID both QPs are addressed to.
    pub(crate) gid: Gid,
    /// The path MTU used.
    pub(crate) mtu: Mtu,
    /// The client's QP number.
    pub(crate) client_qpn: u32,
    /// The server's QP number.
    pub(crate) server_qpn: u32,
    /// The client's statistics (it verified every echo).
    pub(crate) client: Stats,
    /// The server's statistics (it verified every message).
    pub(crate) server: Stats,
}

/// The RTR attributes for a QP whose peer is `peer_qpn`, sending from `peer_sq_psn`.
fn rtr(peer_qpn: u32, peer_sq_psn: u32, mtu: Mtu, gid: &Gid, port: u8) -> RtrAttr {
    RtrAttr {
        dest_qpn: peer_qpn,
        rq_psn: peer_sq_psn,
        path_mtu: mtu,
        max_dest_rd_atomic: 1,
        min_rnr_timer: 12,
        ah: AhAttr::roce(gid.raw, gid.index, port),
    }
}

/// The RTS attributes for a QP sending from `sq_psn`: 67 ms ACK timeout, 7 retries, infinite
/// RNR retries.
fn rts(sq_psn: u32) -> RtsAttr {
    RtsAttr {
        sq_psn,
        timeout: 14,
        retry_cnt: 7,
        rnr_retry: 7,
        max_rd_atomic: 1,
    }
}

/// `result` with `who: ` in front of its error message.
fn context<T>(who: &str, result: io::Result<T>) -> io::Result<T> {
    result.map_err(|e| io::Error::new(e.kind(), format!("{who}: {e}")))
}

/// Runs the self-test.
pub(crate) fn run(config: &Config) -> io::Result<Report> {
    let gid = umad::roce_v2_ipv4_gid(&config.device, config.port.into())?;
    let device = Device::open(&config.device)?;
    let port = device.query_port(config.port)?;
    let mtu = match (config.mtu, port.active_mtu) {
        (Some(mtu), _) => mtu,
        (None, Some(active)) => active,
        (None, None) => return Err(io::Error::other("the port reports no active MTU: pass one")),
    };

    let pd = ProtectionDomain::new(&device)?;
    let caps = QpCaps::default();
    // One CQ per QP: each end waits only for its own completions.
    let client_cq = CompletionQueue::new(&device, caps.max_send_wr + caps.max_recv_wr)?;
    let server_cq = CompletionQueue::new(&device, caps.max_send_wr + caps.max_recv_wr)?;
    let client = RcQp::create(&pd, &client_cq, caps)?;
    let server = RcQp::create(&pd, &server_cq, caps)?;

    for qp in [&client, &server] {
        qp.to_init(config.port, 0, AccessFlags::NONE)?;
    }
    // Both first receives are posted before either QP can send.
    let client_pp = context("client", PingPong::new(&client, config.size))?;
    let server_pp = context("server", PingPong::new(&server, config.size))?;
    context(
        "client",
        client.to_rtr(&rtr(server.qp_num(), SERVER_SQ_PSN, mtu, &gid, config.port)),
    )?;
    context(
        "server",
        server.to_rtr(&rtr(client.qp_num(), CLIENT_SQ_PSN, mtu, &gid, config.port)),
    )?;
    context("client", client.to_rts(&rts(CLIENT_SQ_PSN)))?;
    context("server", server.to_rts(&rts(SERVER_SQ_PSN)))?;
    for (who, qp) in [("client", &client), ("server", &server)] {
        let state = qp.state()?;
        if state != QpState::Rts {
            return Err(io::Error::other(format!(
                "{who}: QP {} is in {state:?} after to_rts",
                qp.qp_num()
            )));
        }
    }

    let pp_config = PingPongConfig {
        iterations: config.iterations,
        timeout: config.timeout,
        corrupt_echo_at: config.corrupt_echo_at,
    };
    // Whichever end fails moves the other end's QP to ERR, so that it stops waiting at once
    // (its posted requests are flushed) rather than at its timeout.
    let (client_result, server_result) = thread::scope(|s| {
        let server_thread = s.spawn(|| {
            let r = server_pp.run(Role::Server, &pp_config);
            if r.is_err() {
                let _ = client.to_error();
            }
            r
        });
        let c = client_pp.run(Role::Client, &pp_config);
        if c.is_err() {
            let _ = server.to_error();
        }
        let s = server_thread
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("server thread panicked")));
        (c, s)
    });
    // Report the failure that came first: the other end's error is usually its flush.
    match (client_result, server_result) {
        (Ok(client_stats), Ok(server_stats)) => Ok(Report {
            gid,
            mtu,
            client_qpn: client.qp_num(),
            server_qpn: server.qp_num(),
            client: client_stats,
            server: server_stats,
        }),
        (Err(c), Err(s)) if is_flush(&c) => Err(io::Error::new(
            s.kind(),
            format!("server: {s} (client: {c})"),
        )),
        (Err(c), Err(s)) => Err(io::Error::new(
            c.kind(),
            format!("client: {c} (server: {s})"),
        )),
        (Err(c), Ok(_)) => Err(io::Error::new(c.kind(), format!("client: {c}"))),
        (Ok(_), Err(s)) => Err(io::Error::new(s.kind(), format!("server: {s}"))),
    }
}

/// Whether `e` is a flushed completion, the symptom of the other end having failed first.
fn is_flush(e: &io::Error) -> bool {
    CompletionError::of(e).is_some_and(|wc| wc.is_flushed())
}

/// A GID as `ipv6` notation would print it, groups of four hex digits.
pub(crate) fn format_gid(raw: &[u8; 16]) -> String {
    raw.chunks_exact(2)
        .map(|p| format!("{:02x}{:02x}", p[0], p[1]))
        .collect::<Vec<_>>()
        .join(":")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_end_expects_the_psn_the_other_sends_from() {
        let gid = Gid {
            index: 1,
            raw: [0; 16],
        };
        let client_rtr = rtr(18, SERVER_SQ_PSN, Mtu::Mtu1024, &gid, 1);
        let server_rtr = rtr(17, CLIENT_SQ_PSN, Mtu::Mtu1024, &gid, 1);
        assert_eq!(client_rtr.rq_psn, rts(SERVER_SQ_PSN).sq_psn);
        assert_eq!(server_rtr.rq_psn, rts(CLIENT_SQ_PSN).sq_psn);
        assert_eq!(client_rtr.validate(), Ok(()));
        assert_eq!(rts(CLIENT_SQ_PSN).validate(), Ok(()));
        assert!(client_rtr.ah.global);
        assert_eq!(client_rtr.ah.sgid_index, 1);
    }

    #[test]
    fn gids_format_like_sysfs() {
        let mut raw = [0u8; 16];
        raw[10..].copy_from_slice(&[0xff, 0xff, 10, 77, 0, 1]);
        assert_eq!(format_gid(&raw), "0000:0000:0000:0000:0000:ffff:0a4d:0001");
        assert_eq!(umad::parse_gid(&format_gid(&raw)), Some(raw));
    }
}
