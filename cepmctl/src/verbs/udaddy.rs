//! rdma-core's `udaddy` data protocol (`librdmacm/examples/udaddy.c`) over a UD QP, in both
//! roles, so that a UD service resolved (client) or answered (server) with SIDR by cepm
//! interoperates with an unmodified `udaddy`.
//!
//! Both sides' QPs accept Q_Key [`RDMA_UDP_QKEY`] (rdma_cm's default for `RDMA_PS_UDP`, which
//! the SIDR_REP must advertise) and post `count` receives of `size` + [`GRH_LEN`] bytes before
//! the SIDR exchange. Then:
//!
//! ```text
//! client                                                  server
//!   SIDR_REQ                               ───────────▶     (receives already posted)
//!                                          ◀───────────     SIDR_REP {QPN, Q_Key 0x01234567}
//!   count × SEND_WITH_IMM, imm = htobe32(own QPN),
//!   to SIDR_REP.QPN/Q_Key, AH from the path ───────────▶     count receives (GRH + data)
//!                                                           reply AH = ibv_create_ah_from_wc
//!                                                           (first receive + its GRH),
//!                                                           remote QPN = be32toh(imm)
//!   count receives (GRH + data)            ◀───────────     count × SEND_WITH_IMM, Q_Key 0x01234567
//! ```
//!
//! There is no disconnect. Datagram contents are not checked (udaddy sends whatever its buffer
//! holds); lengths, QP numbers and the immediate data are.
//!
//! Immediate data follows the convention of [`WorkCompletion::imm_data`] and
//! [`UdQp::post_send_ud`]: values are the application's (`udaddy`'s `qp_num`, its
//! `be32toh(wc->imm_data)`), never the network-order bits libibverbs stores.
//!
//! UD is unreliable: a lost datagram shows up as a timeout on the side waiting for it (udaddy
//! itself would wait forever).

use std::{
    fmt, io,
    time::{Duration, Instant},
};

use super::{
    fill_payload, AccessFlags, AddressHandle, InvalidAttr, MemoryRegion, Mtu, QpCaps, Role, UdDest,
    UdQp, WcOpcode, WorkCompletion, GRH_LEN, MAX_QPN,
};

/// The Q_Key rdma_cm gives UD QPs of the `RDMA_PS_UDP` port space (`RDMA_UDP_QKEY`,
/// `include/rdma/rdma_cm_ib.h`), which udaddy's QPs accept and a SIDR_REP must carry.
pub const RDMA_UDP_QKEY: u32 = 0x0123_4567;

/// udaddy's default message count (`-C`).
pub const DEFAULT_COUNT: u32 = 10;

/// udaddy's default message size (`-S`), in bytes.
pub const DEFAULT_SIZE: usize = 100;

/// The length of a receive buffer for `size`-byte datagrams: the [`GRH_LEN`]-byte GRH first,
/// then the datagram (`message_size + sizeof(struct ibv_grh)` in udaddy).
pub const fn recv_len(size: usize) -> usize {
    size.saturating_add(GRH_LEN)
}

/// The datagram bytes of a UD receive of `byte_len` bytes (GRH included) into a buffer for
/// `size`-byte datagrams: `byte_len` - [`GRH_LEN`], which must be in `0..=size`.
pub fn datagram_len(byte_len: u32, size: usize) -> Result<usize, InvalidAttr> {
    let len = byte_len as usize;
    if len < GRH_LEN || len > recv_len(size) {
        return Err(InvalidAttr::new(
            "byte_len",
            format!(
                "{byte_len} bytes received, expected {GRH_LEN}..={} ({GRH_LEN}-byte GRH + up to {size})",
                recv_len(size)
            ),
        ));
    }
    Ok(len - GRH_LEN)
}

/// Checks an exchange of `count` datagrams of `size` bytes on a QP with capacities `caps`
/// whose port runs at `active_mtu` (a UD message is one packet: udaddy's
/// `verify_test_params()` requires `size` <= the active MTU).
pub fn check_params(
    count: u32,
    size: usize,
    caps: &QpCaps,
    active_mtu: Option<Mtu>,
) -> Result<(), InvalidAttr> {
    if count == 0 {
        return Err(InvalidAttr::new("count", "at least one message is needed"));
    }
    if size == 0 {
        return Err(InvalidAttr::new("size", "messages must be at least 1 byte"));
    }
    if let Some(mtu) = active_mtu {
        if size > mtu.bytes() as usize {
            return Err(InvalidAttr::new(
                "size",
                format!("{size} bytes is above the port's active MTU {mtu}"),
            ));
        }
    }
    if u32::try_from(recv_len(size)).is_err() {
        return Err(InvalidAttr::new(
            "size",
            format!("{size} bytes is too large"),
        ));
    }
    if count > caps.max_recv_wr || count > caps.max_send_wr {
        return Err(InvalidAttr::new(
            "count",
            format!(
                "{count} messages need {count} send and {count} receive work requests; the QP has {} and {}",
                caps.max_send_wr, caps.max_recv_wr
            ),
        ));
    }
    Ok(())
}

/// Checks a remote QP number for use as a UD destination (24 bits; not the SMI/GSI QPs 0 and 1).
fn check_remote_qpn(qpn: u32, what: &'static str) -> Result<(), InvalidAttr> {
    if !(2..=MAX_QPN).contains(&qpn) {
        return Err(InvalidAttr::new(
            what,
            format!("{qpn:#x} is not a UD QP number (2..={MAX_QPN:#x})"),
        ));
    }
    Ok(())
}

/// What one end of a udaddy exchange did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stats {
    /// This end's role: the client sends first, the server answers.
    pub role: Role,
    /// Datagrams sent (and completed).
    pub sent: u32,
    /// Datagrams received.
    pub received: u32,
    /// Datagram bytes sent.
    pub bytes_sent: u64,
    /// Datagram bytes received, GRHs not counted.
    pub bytes_received: u64,
    /// The peer's QP number: from the SIDR_REP (client) or the immediate data (server).
    pub remote_qpn: u32,
    /// The Q_Key this end's datagrams carried.
    pub remote_qkey: u32,
    /// Time from the start of the run to the last completion.
    pub elapsed: Duration,
}

impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "udaddy {}: sent {} datagrams ({} bytes), received {} ({} bytes) with QP {} (Q_Key {:#x}) in {:.3} s",
            self.role,
            self.sent,
            self.bytes_sent,
            self.received,
            self.bytes_received,
            self.remote_qpn,
            self.remote_qkey,
            self.elapsed.as_secs_f64()
        )
    }
}

/// Bit set in the `wr_id` of sends, to tell their completions from receives'.
const SEND_WR: u64 = 1 << 63;

/// One end of a udaddy exchange on a UD QP: `count` receive buffers (posted by
/// [`UdExchange::new`]) and a send buffer, all registered in the QP's PD.
///
/// Create it once the QP is in RTS ([`UdQp::to_rts`] with [`RDMA_UDP_QKEY`]) and before the
/// SIDR exchange: the server's peer starts sending as soon as it has the SIDR_REP, and a UD
/// datagram that meets an empty receive queue is dropped. The CQ needs room for `2 × count`
/// completions. Then call [`UdExchange::run_client`] or [`UdExchange::run_server`], once.
///
/// Keep it until the QP is done with (destroyed or moved to ERR) if a run failed: work requests
/// may still use its buffers and address handle. Dropping it deregisters the buffers, which
/// makes any such request fail harmlessly.
pub struct UdExchange<'q> {
    qp: &'q UdQp,
    port: u8,
    count: u32,
    size: usize,
    /// One buffer per posted receive, indexed by `wr_id`; each is read only after its
    /// completion and never re-posted.
    recvs: Vec<MemoryRegion>,
    /// What every SEND carries (never written after `new`).
    send: MemoryRegion,
    /// Receive completions taken.
    received: u32,
    /// Sends posted.
    posted: u32,
    /// Send completions taken.
    sent: u32,
    bytes_received: u64,
    /// The first receive's completion (the server answers its sender).
    first: Option<WorkCompletion>,
    /// Where sends go; kept so that the address handle outlives them.
    dest: Option<UdDest>,
    /// The QP datagrams must come from, once known.
    expect_src: Option<u32>,
    started: bool,
}

impl<'q> UdExchange<'q> {
    /// Prepares an exchange of `count` datagrams of `size` bytes each way on `qp` (in RTS) and
    /// posts its `count` receives of `size` + [`GRH_LEN`] bytes.
    pub fn new(qp: &'q UdQp, count: u32, size: usize) -> io::Result<Self> {
        let port = qp.port().ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidInput, "move the UD QP to RTS first")
        })?;
        let port_attr = qp.device().query_port(port)?;
        check_params(count, size, &qp.caps(), port_attr.active_mtu)?;
        let mut send = MemoryRegion::new(qp.pd(), size, AccessFlags::NONE)?;
        fill_payload(send.as_mut_slice(), 0);
        let mut recvs = Vec::with_capacity(count as usize);
        for i in 0..count {
            let mr = MemoryRegion::new(qp.pd(), recv_len(size), AccessFlags::LOCAL_WRITE)?;
            // SAFETY: `mr` is kept in `recvs` and read only after its receive's completion has
            // been taken (`account`); it is dropped with `self`, after the QP stops using it or
            // with the request flushed (deregistration stops device access).
            unsafe { qp.post_recv(&mr, u64::from(i)) }?;
            recvs.push(mr);
        }
        Ok(Self {
            qp,
            port,
            count,
            size,
            recvs,
            send,
            received: 0,
            posted: 0,
            sent: 0,
            bytes_received: 0,
            first: None,
            dest: None,
            expect_src: None,
            started: false,
        })
    }

    /// The QP's number: what a client's SEND_WITH_IMM carries as immediate data.
    pub fn local_qpn(&self) -> u32 {
        self.qp.qp_num()
    }

    fn start(&mut self) -> io::Result<()> {
        if std::mem::replace(&mut self.started, true) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a udaddy exchange runs once",
            ));
        }
        Ok(())
    }

    /// Takes one completion of this QP and accounts for it.
    fn account(&mut self, timeout: Duration) -> io::Result<()> {
        let wc = self.qp.cq().wait(timeout)?;
        if wc.qp_num != self.qp.qp_num() {
            return Err(io::Error::other(format!(
                "completion for QP {} on UD QP {}'s CQ",
                wc.qp_num,
                self.qp.qp_num()
            )));
        }
        let wc = wc.check()?;
        match wc.opcode {
            WcOpcode::Recv
                if self.received < self.count && wc.wr_id == u64::from(self.received) =>
            {
                let len = datagram_len(wc.byte_len, self.size).map_err(|e| {
                    io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("datagram {} from QP {}: {e}", self.received, wc.src_qp),
                    )
                })?;
                if let Some(src) = self.expect_src.filter(|&src| src != wc.src_qp) {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!(
                            "datagram {} came from QP {}, expected QP {src}",
                            self.received, wc.src_qp
                        ),
                    ));
                }
                self.received += 1;
                self.bytes_received += len as u64;
                self.first.get_or_insert(wc);
            }
            WcOpcode::Send
                if self.sent < self.posted && wc.wr_id == SEND_WR | u64::from(self.sent) =>
            {
                self.sent += 1;
            }
            _ => {
                return Err(io::Error::other(format!(
                    "unexpected completion {wc:?} ({} of {} received, {} of {} sends completed)",
                    self.received, self.count, self.sent, self.posted
                )))
            }
        }
        Ok(())
    }

    /// Posts the `count` SEND_WITH_IMMs, immediate data = this QP's number, to `dest`.
    fn post_sends(&mut self, dest: UdDest) -> io::Result<()> {
        let dest = self.dest.insert(dest);
        for i in 0..self.count {
            // SAFETY: the send buffer is never written after `new`, so the device may read it for
            // as many sends as are outstanding; `self.dest` keeps the address handle alive as
            // long as `self`, which the caller keeps while sends may be outstanding (see the
            // type's documentation), and a successful run waits for every send's completion.
            unsafe {
                self.qp.post_send_ud(
                    &self.send,
                    self.size,
                    dest,
                    Some(self.qp.qp_num()),
                    SEND_WR | u64::from(i),
                    true,
                )
            }?;
            self.posted += 1;
        }
        Ok(())
    }

    fn stats(&self, role: Role, start: Instant) -> Stats {
        let dest = self.dest.as_ref();
        Stats {
            role,
            sent: self.sent,
            received: self.received,
            bytes_sent: u64::from(self.sent) * self.size as u64,
            bytes_received: self.bytes_received,
            remote_qpn: dest.map_or(0, |d| d.remote_qpn),
            remote_qkey: dest.map_or(0, |d| d.remote_qkey),
            elapsed: start.elapsed(),
        }
    }

    /// The udaddy client's side, once the SIDR_REP has arrived: sends `count` SEND_WITH_IMMs
    /// carrying this QP's number to `remote_qpn` / `remote_qkey` (the SIDR_REP's QPN and Q_Key)
    /// through `ah` (built from the path: the server's GID, our source GID index, hop limit 64,
    /// [`super::AhAttr::roce`]), then waits for the `count` replies, which must come from
    /// `remote_qpn`. Unlike udaddy, sends are signaled and their completions awaited.
    ///
    /// `timeout` bounds the wait for each completion.
    pub fn run_client(
        &mut self,
        ah: &AddressHandle,
        remote_qpn: u32,
        remote_qkey: u32,
        timeout: Duration,
    ) -> io::Result<Stats> {
        check_remote_qpn(remote_qpn, "remote_qpn")?;
        self.start()?;
        let start = Instant::now();
        self.expect_src = Some(remote_qpn);
        self.post_sends(UdDest {
            ah: ah.clone(),
            remote_qpn,
            remote_qkey,
        })?;
        while self.sent < self.count || self.received < self.count {
            self.account(timeout)?;
        }
        Ok(self.stats(Role::Client, start))
    }

    /// The udaddy server's side, once the SIDR_REP (QPN = this QP, Q_Key [`RDMA_UDP_QKEY`]) is
    /// on its way: waits for the client's `count` datagrams, then answers its sender, learnt as
    /// udaddy does: the address handle from the first receive and its GRH
    /// (`ibv_create_ah_from_wc`), the QP number from its immediate data (`be32toh(imm_data)`,
    /// which must match the completion's source QP), the Q_Key this QP's own. The `count`
    /// SEND_WITH_IMM replies carry this QP's number; their completions are awaited.
    ///
    /// `timeout` bounds the wait for each completion.
    pub fn run_server(&mut self, timeout: Duration) -> io::Result<Stats> {
        self.start()?;
        let start = Instant::now();
        while self.received < self.count {
            self.account(timeout)?;
            if let Some(first) = self.first.filter(|_| self.expect_src.is_none()) {
                // Later datagrams must come from the same client.
                self.expect_src = Some(first.src_qp);
            }
        }
        let Some(first) = self.first else {
            return Err(io::Error::other("no datagram received"));
        };
        let remote_qpn = first.imm_data.ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "the first datagram (from QP {}) carries no immediate data (udaddy sends its QPN)",
                    first.src_qp
                ),
            )
        })?;
        if remote_qpn != first.src_qp {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "the immediate data names QP {remote_qpn:#x} but the datagram came from QP {:#x} (byte order?)",
                    first.src_qp
                ),
            ));
        }
        check_remote_qpn(remote_qpn, "imm_data")?;
        let remote_qkey = self
            .qp
            .qkey()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "the UD QP has no Q_Key"))?;
        let index = usize::try_from(first.wr_id)
            .ok()
            .filter(|&i| i < self.recvs.len());
        let grh = index
            .map(|i| &self.recvs[i].as_slice()[..GRH_LEN])
            .ok_or_else(|| io::Error::other("bad wr_id"))?;
        let ah = AddressHandle::from_completion(self.qp.pd(), self.port, &first, grh)?;
        self.post_sends(UdDest {
            ah,
            remote_qpn,
            remote_qkey,
        })?;
        while self.sent < self.count {
            self.account(timeout)?;
        }
        Ok(self.stats(Role::Server, start))
    }

    /// The udaddy client in one call, for when the SIDR_REP has already arrived (the client's
    /// receives only need to be posted before its first send): [`UdExchange::new`] then
    /// [`UdExchange::run_client`]. There is no server counterpart: the server's receives must be
    /// posted before its SIDR_REP goes out.
    pub fn client(
        qp: &'q UdQp,
        ah: &AddressHandle,
        remote_qpn: u32,
        remote_qkey: u32,
        count: u32,
        size: usize,
        timeout: Duration,
    ) -> io::Result<Stats> {
        UdExchange::new(qp, count, size)?.run_client(ah, remote_qpn, remote_qkey, timeout)
    }
}

#[cfg(test)]
mod tests {
    use super::super::{ffi, imm_from_ibv, imm_to_ibv};
    use super::*;

    #[test]
    fn the_qkey_is_rdma_cms() {
        assert_eq!(RDMA_UDP_QKEY, 0x0123_4567);
    }

    #[test]
    fn immediate_data_is_big_endian_on_the_wire() {
        // udaddy posts htobe32(qp_num): the bits in memory are the QPN's big-endian bytes.
        let qpn = 0x0012_3456;
        assert_eq!(imm_to_ibv(qpn).to_ne_bytes(), [0x00, 0x12, 0x34, 0x56]);
        assert_eq!(
            imm_from_ibv(u32::from_ne_bytes([0x00, 0x12, 0x34, 0x56])),
            qpn
        );
        assert_eq!(imm_from_ibv(imm_to_ibv(0xdead_beef)), 0xdead_beef);
        // The shim hands over ibv_wc.imm_data bit for bit; the completion reports the value.
        let raw = ffi::cepm_verbs_wc {
            opcode: ffi::CEPM_VERBS_WC_RECV,
            wc_flags: ffi::CEPM_VERBS_WC_WITH_IMM | ffi::CEPM_VERBS_WC_GRH,
            imm_data: u32::from_ne_bytes(qpn.to_be_bytes()),
            src_qp: qpn,
            byte_len: 140,
            ..Default::default()
        };
        let wc = WorkCompletion::from_raw(&raw);
        assert_eq!((wc.imm_data, wc.src_qp), (Some(qpn), qpn));
        assert!(wc.has_grh());
        // Without IBV_WC_WITH_IMM there is no immediate, whatever the field holds.
        let plain = WorkCompletion::from_raw(&ffi::cepm_verbs_wc {
            wc_flags: ffi::CEPM_VERBS_WC_GRH,
            ..raw
        });
        assert_eq!(plain.imm_data, None);
        // Back to struct ibv_wc (for ibv_create_ah_from_wc) unchanged.
        let back = wc.to_raw();
        assert_eq!(
            (back.imm_data, back.wc_flags, back.opcode, back.src_qp),
            (raw.imm_data, raw.wc_flags, 128, qpn)
        );
        assert_eq!(plain.to_raw().wc_flags, ffi::CEPM_VERBS_WC_GRH);
    }

    #[test]
    fn receive_buffers_have_room_for_the_grh() {
        assert_eq!(GRH_LEN, 40);
        assert_eq!(recv_len(DEFAULT_SIZE), 140);
        assert_eq!(datagram_len(140, 100), Ok(100));
        assert_eq!(datagram_len(40, 100), Ok(0));
        assert_eq!(datagram_len(41, 100), Ok(1));
        assert_eq!(datagram_len(141, 100).unwrap_err().field, "byte_len");
        assert_eq!(datagram_len(39, 100).unwrap_err().field, "byte_len");
    }

    #[test]
    fn parameters_are_checked() {
        let caps = QpCaps {
            max_send_wr: 10,
            max_recv_wr: 10,
            ..QpCaps::default()
        };
        let mtu = Some(Mtu::Mtu1024);
        assert_eq!(
            check_params(DEFAULT_COUNT, DEFAULT_SIZE, &caps, mtu),
            Ok(())
        );
        assert_eq!(check_params(10, 1024, &caps, mtu), Ok(()));
        assert_eq!(
            check_params(10, 1025, &caps, mtu).unwrap_err().field,
            "size"
        );
        assert_eq!(check_params(10, 4096, &caps, None), Ok(()));
        assert_eq!(check_params(10, 0, &caps, mtu).unwrap_err().field, "size");
        assert_eq!(
            check_params(10, usize::MAX, &caps, None).unwrap_err().field,
            "size"
        );
        assert_eq!(check_params(0, 100, &caps, mtu).unwrap_err().field, "count");
        assert_eq!(
            check_params(11, 100, &caps, mtu).unwrap_err().field,
            "count"
        );
        let few_sends = QpCaps {
            max_send_wr: 5,
            ..caps
        };
        assert_eq!(
            check_params(10, 100, &few_sends, mtu).unwrap_err().field,
            "count"
        );
    }

    #[test]
    fn remote_qpns_are_checked() {
        assert_eq!(check_remote_qpn(2, "remote_qpn"), Ok(()));
        assert_eq!(check_remote_qpn(MAX_QPN, "remote_qpn"), Ok(()));
        assert_eq!(
            check_remote_qpn(1, "remote_qpn").unwrap_err().field,
            "remote_qpn"
        );
        assert_eq!(
            check_remote_qpn(MAX_QPN + 1, "imm_data").unwrap_err().field,
            "imm_data"
        );
    }

    #[test]
    fn stats_describe_the_exchange() {
        let s = Stats {
            role: Role::Server,
            sent: 10,
            received: 10,
            bytes_sent: 1000,
            bytes_received: 1000,
            remote_qpn: 17,
            remote_qkey: RDMA_UDP_QKEY,
            elapsed: Duration::from_millis(5),
        };
        let text = s.to_string();
        assert!(
            text.contains("server") && text.contains("QP 17") && text.contains("0x1234567"),
            "{text}"
        );
    }
}
