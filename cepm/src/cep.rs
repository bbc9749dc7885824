//! Connection endpoints (CEPs) through `/dev/cepm`: create, listen, claim REQs, connect,
//! accept, reject, disconnect, the QP attributes of each transition, query and destroy.

use std::{io, os::fd::AsRawFd};

use crate::{sys, Cepm};

/// A REQ as the passive side sees it (`struct cepm_req_info`).
#[derive(Clone, Debug)]
pub struct ReqInfo {
    /// Service ID the REQ asked for.
    pub service_id: u64,
    /// The active side's CA GUID.
    pub remote_ca_guid: u64,
    /// The active side's comm ID.
    pub remote_comm_id: u32,
    /// The active side's QPN.
    pub remote_qpn: u32,
    /// The PSN the active side's receive queue expects first.
    pub starting_psn: u32,
    /// Responder resources offered.
    pub responder_resources: u8,
    /// Initiator depth wanted.
    pub initiator_depth: u8,
    /// Path MTU (IB enum).
    pub path_mtu: u8,
    /// Transport retries the active side asks for (0..7).
    pub retry_count: u8,
    /// RNR retries the active side asks for (0..7; 7: for ever).
    pub rnr_retry_count: u8,
    /// Whether this is a SIDR_REQ (then `remote_comm_id` is its request ID).
    pub sidr: u8,
    /// The REQ's transport (`CEPM_TRANSPORT_*`): with XRC this side is an XRC target.
    pub transport: u8,
    /// Device and port the REQ arrived on.
    pub device: String,
    /// Port number.
    pub port: u8,
    /// The REQ's private data (always the full 92 bytes: the wire carries no length).
    pub private_data: Vec<u8>,
    /// This side's receive PSN, chosen by the claim: RTR gives it before the REP is
    /// prepared, and the REP must then announce it. ABI 6; 0 from an older module, which
    /// takes the REP's PSN from its caller.
    pub local_psn: u32,
    /// Whether the REQ asks for end-to-end flow control (ABI 8; 0 from an older module).
    pub flow_control: u8,
    /// Whether the active side receives through an SRQ.
    pub srq: u8,
    /// The REQ's primary path as this side sees it (ABI 8; zero from an older module, and
    /// for a SIDR_REQ).
    pub path: sys::cepm_path_rec,
}

impl ReqInfo {
    fn from_sys(g: &sys::cepm_get_request) -> Self {
        let r = &g.req;
        Self {
            service_id: r.service_id,
            remote_ca_guid: r.remote_ca_guid,
            remote_comm_id: r.remote_comm_id,
            remote_qpn: r.remote_qpn,
            starting_psn: r.starting_psn,
            responder_resources: r.responder_resources,
            initiator_depth: r.initiator_depth,
            path_mtu: r.path_mtu,
            retry_count: r.retry_count,
            rnr_retry_count: r.rnr_retry_count,
            sidr: r.sidr,
            transport: r.transport,
            device: crate::device_name::decode(&r.dev_name),
            port: r.port_num,
            private_data: r.pdata[..usize::from(r.pdata_len).min(r.pdata.len())].to_vec(),
            local_psn: g.local_psn,
            flow_control: r.flow_control,
            srq: r.srq,
            path: g.path,
        }
    }
}

/// What the CEP's last message received said (`CEPM_IOC_GET_PRIVATE_DATA`).
#[derive(Clone, Debug, Default)]
pub struct Received {
    /// The message's attribute ID (0: none yet).
    pub attr_id: u16,
    /// Its private data.
    pub private_data: Vec<u8>,
    /// The peer's ECE from its REQ or REP: `(vendor_id, attr_mod)` (ABI 7; 0 and 0 before
    /// either, and from a module without ECE).
    pub ece: (u32, u32),
    /// The connection parameters of the peer's REQ or REP, each as the message carries it
    /// (ABI 8; zero from an older module).
    pub params: sys::cepm_conn_params,
}

/// What `CEPM_IOC_QUERY_CEP` (and `CEPM_IOC_LIST_CEPS`) report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CepInfo {
    /// The caller's handle for it (0 in a list: owned by another file, or unclaimed).
    pub handle: u32,
    /// State, as `CEPM_STATE_*`; see [`state_name`].
    pub state: u32,
    /// The context given at create or claim.
    pub user_context: u64,
    /// Service ID (listeners and passive CEPs).
    pub service_id: u64,
    /// Our comm ID on the wire.
    pub local_comm_id: u32,
    /// The peer's comm ID (0: no peer).
    pub remote_comm_id: u32,
    /// Listeners: REQs waiting to be claimed.
    pub pending_requests: u32,
    /// The peer's QPN (after REQ/REP, or from a SIDR_REP).
    pub remote_qpn: u32,
    /// The peer's Q_Key (from a SIDR_REP).
    pub remote_qkey: u32,
    /// The status of the SIDR_REP received.
    pub sidr_status: u32,
}

/// Whether a CEP in `state` has no request or connection left to answer: never started, or
/// ended (by either side) and in or past its timewait.
pub fn request_is_over(state: u32) -> bool {
    state == sys::CEPM_STATE_IDLE || state == sys::CEPM_STATE_TIMEWAIT
}

/// The name of a `CEPM_STATE_*` value.
pub fn state_name(state: u32) -> &'static str {
    const NAMES: [&str; 19] = [
        "IDLE",
        "LISTEN",
        "REQ_SENT",
        "REQ_RCVD",
        "MRA_REQ_SENT",
        "MRA_REQ_RCVD",
        "REP_SENT",
        "REP_RCVD",
        "MRA_REP_SENT",
        "MRA_REP_RCVD",
        "ESTABLISHED",
        "DREQ_SENT",
        "DREQ_RCVD",
        "TIMEWAIT",
        "SIDR_REQ_SENT",
        "SIDR_REQ_RCVD",
        "REP_PREPARED",
        "REP_PREPARED_MRA_SENT",
        "DESTROYED",
    ];
    NAMES.get(state as usize).copied().unwrap_or("?")
}

fn invalid(msg: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg.to_string())
}

impl Cepm {
    /// A new idle CEP; its events carry `context`. Returns its handle.
    pub fn create(&self, context: u64) -> io::Result<u32> {
        let mut c = sys::cepm_create {
            user_context: context,
            ..Default::default()
        };
        self.ioctl(sys::CEPM_IOCTL_CREATE, &mut c)?;
        Ok(c.handle)
    }

    /// Destroys a CEP; returns how many of its events were read.
    pub fn destroy(&self, handle: u32) -> io::Result<u32> {
        let mut d = sys::cepm_destroy {
            handle,
            ..Default::default()
        };
        self.ioctl(sys::CEPM_IOCTL_DESTROY, &mut d)?;
        Ok(d.events_reported)
    }

    /// Moves the CEP that `from` names `handle` to this file, with its unread events (ABI 5):
    /// its handle here, and how many of its events were read so far.
    pub fn migrate(&self, from: &Cepm, handle: u32) -> io::Result<(u32, u32)> {
        let mut m = sys::cepm_migrate {
            fd: from.as_raw_fd(),
            handle,
            ..Default::default()
        };
        self.ioctl(sys::CEPM_IOCTL_MIGRATE, &mut m)?;
        Ok((m.new_handle, m.events_reported))
    }

    /// Reserves port `port` of port space `ps` (0: one the module chooses) on `addr` for
    /// idle CEP `handle`, as `rdma_bind_addr` does, with `CEPM_BIND_*` `flags`; `dst`, for an
    /// active CEP, lets it share an ephemeral port with others that go elsewhere. Returns the
    /// port held. A second call on a bound CEP may only add `CEPM_BIND_REUSEADDR`.
    pub fn bind(
        &self,
        handle: u32,
        ps: u16,
        addr: std::net::SocketAddr,
        flags: u8,
        dst: Option<std::net::SocketAddr>,
    ) -> io::Result<u16> {
        let mut b = sys::cepm_bind {
            handle,
            port_space: ps,
            port: addr.port(),
            family: if addr.is_ipv4() { 4 } else { 6 },
            flags,
            addr: addr_bytes(addr.ip()),
            ..Default::default()
        };
        if let Some(dst) = dst {
            b.dst_addr = addr_bytes(dst.ip());
            b.dst_port = dst.port();
        }
        self.ioctl(sys::CEPM_IOCTL_BIND, &mut b)?;
        Ok(b.port)
    }

    /// Listens on `service_id` under `mask` (`u64::MAX`: exact).
    pub fn listen(&self, handle: u32, service_id: u64, mask: u64) -> io::Result<()> {
        let mut l = sys::cepm_listen {
            handle,
            service_id,
            service_mask: mask,
            ..Default::default()
        };
        self.ioctl(sys::CEPM_IOCTL_LISTEN, &mut l)
    }

    /// Listens on the exact `service_id`, of an rdma_cm IP port space, for the requests to
    /// `addr` (ABI 7): the unspecified address of a family is its wildcard, which with
    /// `afonly` takes no request of the other family.
    pub fn listen_on_addr(
        &self,
        handle: u32,
        service_id: u64,
        addr: std::net::IpAddr,
        afonly: bool,
    ) -> io::Result<()> {
        let mut l = sys::cepm_listen {
            handle,
            service_id,
            service_mask: u64::MAX,
            flags: if afonly {
                sys::CEPM_LISTEN_AFONLY as u8
            } else {
                0
            },
            ..Default::default()
        };
        l.scope = if addr.is_ipv4() {
            sys::CEPM_LISTEN_IPV4
        } else {
            sys::CEPM_LISTEN_IPV6
        } as u8;
        l.addr = addr_bytes(addr);
        self.ioctl(sys::CEPM_IOCTL_LISTEN, &mut l)
    }

    /// Claims the oldest REQ pending on `listener`: the new CEP's handle and the REQ.
    pub fn get_request(&self, listener: u32, context: u64) -> io::Result<(u32, ReqInfo)> {
        let mut g = sys::cepm_get_request {
            listen_handle: listener,
            user_context: context,
            ..Default::default()
        };
        self.ioctl(sys::CEPM_IOCTL_GET_REQUEST, &mut g)?;
        Ok((g.handle, ReqInfo::from_sys(&g)))
    }

    /// Rejects the connection with `reason`, additional information and private data.
    pub fn reject(&self, handle: u32, reason: u16, ari: &[u8], pdata: &[u8]) -> io::Result<()> {
        let mut r = sys::cepm_reject {
            handle,
            reason,
            ..Default::default()
        };
        r.ari_len = u8::try_from(ari.len()).map_err(|_| invalid("ARI too long"))?;
        r.pdata_len = u8::try_from(pdata.len()).map_err(|_| invalid("private data too long"))?;
        r.ari
            .get_mut(..ari.len())
            .ok_or_else(|| invalid("ARI too long"))?
            .copy_from_slice(ari);
        r.pdata
            .get_mut(..pdata.len())
            .ok_or_else(|| invalid("private data too long"))?
            .copy_from_slice(pdata);
        self.ioctl(sys::CEPM_IOCTL_REJECT, &mut r)
    }

    /// What the CEP is and where it stands.
    pub fn query_cep(&self, handle: u32) -> io::Result<CepInfo> {
        let mut i = sys::cepm_cep_info {
            handle,
            ..Default::default()
        };
        self.ioctl(sys::CEPM_IOCTL_QUERY_CEP, &mut i)?;
        Ok(CepInfo::from_sys(&i))
    }

    /// Every CEP in the module (a diagnostic view: all processes, and unclaimed CEPs).
    pub fn list_ceps(&self) -> io::Result<Vec<CepInfo>> {
        let mut capacity = 0usize;
        loop {
            let mut raw = vec![sys::cepm_cep_info::default(); capacity];
            let mut l = sys::cepm_list {
                capacity: u32::try_from(capacity).map_err(|_| invalid("too many CEPs"))?,
                ceps: if capacity == 0 {
                    0
                } else {
                    raw.as_mut_ptr() as u64
                },
                ..Default::default()
            };
            self.ioctl(sys::CEPM_IOCTL_LIST_CEPS, &mut l)?;
            // CEPs come and go between calls: retry until the answer fits.
            if l.count as usize <= capacity {
                raw.truncate(l.count as usize);
                return Ok(raw.iter().map(CepInfo::from_sys).collect());
            }
            capacity = l.count as usize;
        }
    }

    /// What the last message the CEP received said: its private data, and the peer's ECE and
    /// connection parameters.
    pub fn received(&self, handle: u32) -> io::Result<Received> {
        let mut p = sys::cepm_private_data {
            handle,
            ..Default::default()
        };
        self.ioctl(sys::CEPM_IOCTL_GET_PRIVATE_DATA, &mut p)?;
        Ok(Received {
            attr_id: p.attr_id,
            private_data: p.data[..usize::from(p.len).min(p.data.len())].to_vec(),
            ece: (p.ece_vendor_id, p.ece_attr_mod),
            params: p.peer,
        })
    }

    /// The private data of the last message the CEP received, with that message's attribute ID.
    pub fn private_data(&self, handle: u32) -> io::Result<(u16, Vec<u8>)> {
        self.received(handle).map(|r| (r.attr_id, r.private_data))
    }

    /// The peer's ECE from its REQ or REP: `(vendor_id, attr_mod)`, 0 and 0 before either
    /// (ABI 7; a module without ECE reports 0 and 0 too).
    pub fn remote_ece(&self, handle: u32) -> io::Result<(u32, u32)> {
        self.received(handle).map(|r| r.ece)
    }

    /// Sends a REQ (`args.handle` names the CEP).
    pub fn connect(&self, args: &sys::cepm_connect) -> io::Result<()> {
        let mut a = *args;
        self.ioctl(sys::CEPM_IOCTL_CONNECT, &mut a)
    }

    /// Fixes the REP's QPN, PSN and resources without sending it.
    pub fn prepare_rep(&self, args: &sys::cepm_accept) -> io::Result<()> {
        let mut a = *args;
        self.ioctl(sys::CEPM_IOCTL_PREPARE_REP, &mut a)
    }

    /// Sends a SIDR_REQ (`args.handle` names the CEP).
    pub fn sidr_req(&self, args: &sys::cepm_sidr_req) -> io::Result<()> {
        let mut a = *args;
        self.ioctl(sys::CEPM_IOCTL_SIDR_REQ, &mut a)
    }

    /// Answers a claimed SIDR_REQ.
    pub fn sidr_rep(&self, args: &sys::cepm_sidr_rep) -> io::Result<()> {
        let mut a = *args;
        self.ioctl(sys::CEPM_IOCTL_SIDR_REP, &mut a)
    }

    /// Arms an MRA for the REQ or REP just received: the peer's retry of it is answered with
    /// an MRA, so the peer waits longer.
    pub fn prepare_mra(&self, handle: u32) -> io::Result<()> {
        self.mra(handle, false, None)
    }

    /// Arms an MRA for the REQ or REP just received and, with `send_now`, sends it at once;
    /// `service_timeout` (an IBTA exponent) replaces the kernel's 24.
    pub fn mra(&self, handle: u32, send_now: bool, service_timeout: Option<u8>) -> io::Result<()> {
        let mut flags = 0;
        if send_now {
            flags |= sys::CEPM_MRA_SEND_NOW;
        }
        if service_timeout.is_some() {
            flags |= sys::CEPM_MRA_SERVICE_TIMEOUT;
        }
        let mut a = sys::cepm_prepare_mra {
            handle,
            flags: flags as u8,
            service_timeout: service_timeout.unwrap_or(0),
            reserved: 0,
        };
        self.ioctl(sys::CEPM_IOCTL_PREPARE_MRA, &mut a)
    }

    /// Sends the prepared REP.
    pub fn send_rep(&self, handle: u32) -> io::Result<()> {
        let mut a = sys::cepm_send_rep {
            handle,
            reserved: 0,
        };
        self.ioctl(sys::CEPM_IOCTL_SEND_REP, &mut a)
    }

    /// The QP heard from the peer before the RTU arrived (`IB_EVENT_COMM_EST`, or a first
    /// receive completion): the connection is established now and `ESTABLISHED` follows.
    pub fn establish(&self, handle: u32) -> io::Result<()> {
        let mut a = sys::cepm_establish {
            handle,
            reserved: 0,
        };
        self.ioctl(sys::CEPM_IOCTL_ESTABLISH, &mut a)
    }

    /// One of the private-data-only messages (`CEPM_IOCTL_SEND_RTU/DREQ/DREP`).
    fn send_pdata_msg(&self, cmd: u32, handle: u32, pdata: &[u8]) -> io::Result<()> {
        let mut a = sys::cepm_send_pdata {
            handle,
            ..Default::default()
        };
        a.pdata_len = u8::try_from(pdata.len()).map_err(|_| invalid("private data too long"))?;
        a.pdata
            .get_mut(..pdata.len())
            .ok_or_else(|| invalid("private data too long"))?
            .copy_from_slice(pdata);
        self.ioctl(cmd, &mut a)
    }

    /// Sends the RTU with `pdata` (active side, after REP_RECEIVED).
    pub fn send_rtu(&self, handle: u32, pdata: &[u8]) -> io::Result<()> {
        self.send_pdata_msg(sys::CEPM_IOCTL_SEND_RTU, handle, pdata)
    }

    /// Disconnects: sends a DREQ with `pdata`.
    pub fn send_dreq(&self, handle: u32, pdata: &[u8]) -> io::Result<()> {
        self.send_pdata_msg(sys::CEPM_IOCTL_SEND_DREQ, handle, pdata)
    }

    /// Answers a DREQ_RECEIVED with a DREP carrying `pdata`.
    pub fn send_drep(&self, handle: u32, pdata: &[u8]) -> io::Result<()> {
        self.send_pdata_msg(sys::CEPM_IOCTL_SEND_DREP, handle, pdata)
    }

    /// The attributes that move the connection's QP to `qp_state` (`CEPM_QPS_*`).
    pub fn qp_attr(&self, handle: u32, qp_state: u32) -> io::Result<sys::cepm_qp_attr> {
        let mut a = sys::cepm_qp_attr {
            handle,
            qp_state,
            ..Default::default()
        };
        self.ioctl(sys::CEPM_IOCTL_INIT_QP_ATTR, &mut a)?;
        Ok(a)
    }
}

impl CepInfo {
    fn from_sys(i: &sys::cepm_cep_info) -> Self {
        CepInfo {
            handle: i.handle,
            state: i.state,
            user_context: i.user_context,
            service_id: i.service_id,
            local_comm_id: i.local_comm_id,
            remote_comm_id: i.remote_comm_id,
            pending_requests: i.pending_requests,
            remote_qpn: i.remote_qpn,
            remote_qkey: i.remote_qkey,
            sidr_status: i.sidr_status,
        }
    }
}

/// An address as BIND and LISTEN take it: IPv4 in the last four bytes, as in `cma_hdr`.
fn addr_bytes(ip: std::net::IpAddr) -> [u8; 16] {
    match ip {
        std::net::IpAddr::V4(v4) => {
            let mut a = [0; 16];
            a[12..].copy_from_slice(&v4.octets());
            a
        }
        std::net::IpAddr::V6(v6) => v6.octets(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_names_follow_the_abi_numbering() {
        assert_eq!(state_name(sys::CEPM_STATE_IDLE), "IDLE");
        assert_eq!(state_name(sys::CEPM_STATE_LISTEN), "LISTEN");
        assert_eq!(state_name(sys::CEPM_STATE_REQ_RCVD), "REQ_RCVD");
        assert_eq!(state_name(sys::CEPM_STATE_ESTABLISHED), "ESTABLISHED");
        assert_eq!(state_name(sys::CEPM_STATE_DESTROYED), "DESTROYED");
        assert_eq!(state_name(sys::CEPM_STATE_DESTROYED + 1), "?");
    }

    #[test]
    fn abi_structs_have_the_sizes_the_kernel_asserts() {
        use std::mem::size_of;
        assert_eq!(size_of::<sys::cepm_req_info>(), 200);
        assert_eq!(size_of::<sys::cepm_get_request>(), 264);
        assert_eq!(size_of::<sys::cepm_listen>(), 48);
        assert_eq!(size_of::<sys::cepm_reject>(), 228);
        assert_eq!(size_of::<sys::cepm_private_data>(), 248);
        assert_eq!(size_of::<sys::cepm_conn_params>(), 8);
    }
}
