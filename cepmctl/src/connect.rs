//! A real RC connection set up through cepm: the active side sends a REQ, the passive side
//! claims it, both move their QP INIT → RTR → RTS with the attributes cepm derives, and a
//! verified ping-pong runs over the QPs. What `cepmctl connect` and `cepmctl accept` do.

use std::{fs, io, time::Duration};

use cepm_proto::cma_hdr::{CmaAddrs, CmaHdr, CMA_HDR_SIZE};

use cepm::{
    cep::state_name,
    device_name,
    event::{event_name, Event},
    psn::random_psn,
    sys, Cepm,
};

use crate::{
    umad,
    verbs::{
        AccessFlags, AhAttr, CompletionQueue, Device, Mtu, PingPong, PingPongConfig,
        ProtectionDomain, QpCaps, RcQp, Role, RtrAttr, RtsAttr, Stats,
    },
};

/// What both sides need to know.
#[derive(Clone, Debug)]
pub(crate) struct Config {
    /// Local RDMA device, e.g. `rxe0`.
    pub(crate) device: String,
    /// Local port.
    pub(crate) port: u8,
    /// Service ID to connect to / listen on.
    pub(crate) service_id: u64,
    /// Ping-pong round trips (0: connect only).
    pub(crate) iterations: u64,
    /// Bytes per ping-pong message.
    pub(crate) size: usize,
    /// How long to wait for each CM event and each completion.
    pub(crate) timeout: Duration,
    /// CM only: no QP is created (a made-up QPN goes in the REQ/REP) and no data moves.
    pub(crate) cm_only: bool,
    /// CM only: the QPN to announce instead of the process's own (`cm_only_qpn`).
    pub(crate) cm_only_qpn: Option<u32>,
    /// Once established, wait for this many events (e.g. `DEVICE_REMOVAL`) instead of
    /// disconnecting; 0: disconnect.
    pub(crate) hold: u32,
    /// Active side: the peer's IPv4 address and next-hop MAC; `None` for this host
    /// (loopback to the port's own GID).
    pub(crate) peer: Option<([u8; 4], [u8; 6])>,
    /// Active side: REQ resends before REQ_ERROR.
    pub(crate) max_cm_retries: u8,
    /// Active side: how long the peer may take to answer (IBTA exponent).
    pub(crate) cm_response_timeout: u8,
    /// Active side: the path's packet lifetime (IBTA exponent).
    pub(crate) packet_life_time: u8,
    /// Arm an MRA for the message to answer (passive: the REQ; active: the REP).
    pub(crate) mra: bool,
    /// Passive side: send that MRA at once instead of on the peer's retry.
    pub(crate) mra_now: bool,
    /// The MRA's service timeout (IBTA exponent) instead of the kernel's 24.
    pub(crate) mra_timeout: Option<u8>,
    /// Passive side: leave the REQ unclaimed this long (a slow accept).
    pub(crate) claim_delay: Duration,
    /// Wait this long before answering (passive: the REQ, a slow server; active: the REP,
    /// a slow client).
    pub(crate) answer_delay: Duration,
    /// Active side: the RTU's private data.
    pub(crate) rtu_data: Vec<u8>,
    /// Passive side: send the DREQ once established instead of waiting for the active side's
    /// (which always sends one: both at once make the DREQs cross).
    pub(crate) disconnect: bool,
    /// Passive side: establish the connection right after sending the REP (what a server
    /// does on `IB_EVENT_COMM_EST`), instead of waiting for the RTU.
    pub(crate) establish_early: bool,
    /// Speak to the stock `rdma_cm`: the REQ's private data starts with a `cma_hdr` (active),
    /// and a REQ without a valid one is rejected with reason 28 as Linux does (passive).
    pub(crate) rdma_cm: bool,
    /// Active side with `rdma_cm`: the `cma_hdr` version byte (0; anything else is refused by
    /// the peer).
    pub(crate) cma_version: u8,
    /// CM only: an XRC connection (active: an XRC initiator; passive: an XRC target).
    pub(crate) xrc: bool,
}

/// The QPN a CM-only connection announces: any non-zero 24-bit value will do, but a second
/// live connection from the same QP of a CA makes the first one stale (the peer's CM rejects
/// it with reason 10).  So each process has its own, from its PID (below 2^22 on Linux), and
/// the two sides take different ranges, for the two ends of a loopback connection:
/// active 0x400000..0x800000, passive 0x800000..0xc00000.
pub(crate) fn cm_only_qpn(passive: bool, pid: u32) -> u32 {
    let side = if passive { 0x80_0000 } else { 0x40_0000 };
    side | (pid & 0x3f_ffff)
}

impl Config {
    /// The QPN a CM-only connection announces on this side: `cm_only_qpn` if one was given,
    /// else this process's own.
    fn made_up_qpn(&self, passive: bool) -> u32 {
        self.cm_only_qpn
            .unwrap_or_else(|| cm_only_qpn(passive, std::process::id()))
    }
}

/// What one side saw (the CM exchange was printed as it happened).
pub(crate) struct Outcome {
    /// The ping-pong's statistics, if it ran.
    pub(crate) stats: Option<Stats>,
}

/// The CM exchange as it happens: each step is printed at once, for scripts that wait on them.
pub(crate) struct Trace {
    who: &'static str,
}

impl Trace {
    pub(crate) fn new(who: &'static str) -> Self {
        Self { who }
    }

    pub(crate) fn push(&mut self, line: String) {
        println!("{}: {line}", self.who);
        let _ = std::io::Write::flush(&mut std::io::stdout());
    }

    /// Records an event: its name, CEP and status.
    fn event(&mut self, ev: &Event) {
        self.push(format!(
            "event {} on CEP {} (status {})",
            event_name(ev.kind),
            ev.handle,
            ev.status
        ));
    }
}

/// The MAC of the netdev behind GID `index` of the port: the next hop when the peer is this
/// host (loopback), which is all the CLI supports without address resolution.
pub(crate) fn local_mac(device: &str, port: u8, index: u8) -> io::Result<[u8; 6]> {
    let ndev = fs::read_to_string(format!(
        "/sys/class/infiniband/{device}/ports/{port}/gid_attrs/ndevs/{index}"
    ))?;
    let text = fs::read_to_string(format!("/sys/class/net/{}/address", ndev.trim()))?;
    let mut mac = [0u8; 6];
    let mut parts = text.trim().split(':');
    for b in mac.iter_mut() {
        *b = parts
            .next()
            .and_then(|p| u8::from_str_radix(p, 16).ok())
            .ok_or_else(|| io::Error::other(format!("bad MAC address '{}'", text.trim())))?;
    }
    Ok(mac)
}

/// Where a connection or resolution from `config` goes: the local device name (for the
/// ABI's `dev_name`) and the path to the peer (this host's own GID unless `config.peer`).
pub(crate) struct Route {
    pub(crate) dev_name: [std::ffi::c_char; device_name::DEVICE_NAME_MAX],
    pub(crate) path: sys::cepm_path_rec,
    /// Our IPv4 address, from the RoCE v2 GID the path starts at.
    pub(crate) ipv4: Option<[u8; 4]>,
}

impl Route {
    pub(crate) fn new(config: &Config) -> io::Result<Self> {
        let gid = umad::roce_v2_ipv4_gid(&config.device, config.port.into())?;
        let dev_name = device_name::encode(&config.device);
        let mut path = sys::cepm_path_rec::default();
        match config.peer {
            Some((ip, mac)) => {
                path.dgid[10..12].copy_from_slice(&[0xff, 0xff]);
                path.dgid[12..].copy_from_slice(&ip);
                path.dmac = mac;
            }
            None => {
                path.dgid = gid.raw;
                path.dmac = local_mac(&config.device, config.port, gid.index)?;
            }
        }
        path.sgid_index = gid.index;
        path.hop_limit = 64;
        path.mtu = 3; // 1024: what rxe runs on a 1500-byte netdev
        path.packet_life_time = config.packet_life_time;
        let ipv4 = (gid.raw[..10] == [0; 10] && gid.raw[10..12] == [0xff, 0xff])
            .then(|| [gid.raw[12], gid.raw[13], gid.raw[14], gid.raw[15]]);
        Ok(Self {
            dev_name,
            path,
            ipv4,
        })
    }
}

/// The `cma_hdr` an `rdma_cm` peer expects at the start of a REQ's or SIDR_REQ's private
/// data, from our address on `route` to `config.peer`, with `config.cma_version`.
pub(crate) fn cma_hdr(
    config: &Config,
    route: &Route,
    handle: u32,
) -> io::Result<[u8; CMA_HDR_SIZE]> {
    let (Some((dst, _)), Some(src)) = (config.peer, route.ipv4) else {
        return Err(io::Error::other(
            "--rdma-cm needs --peer-ip and an IPv4 RoCE v2 GID",
        ));
    };
    // Any source port will do: the passive side only reports it. Take one from the
    // ephemeral range, distinct per process and connection.
    let src_port = 49152 + ((std::process::id() as u16 ^ handle as u16) & 0x3fff);
    let mut hdr = CmaHdr {
        src_port,
        addrs: CmaAddrs::V4 { src, dst },
    }
    .encode();
    hdr[0] = config.cma_version;
    Ok(hdr)
}

/// The REQ `config` asks for, from QP `qpn` starting at PSN `psn`, along `route`, with
/// `pdata` after the `cma_hdr` (if `config.rdma_cm`).
pub(crate) fn connect_args(
    config: &Config,
    handle: u32,
    route: &Route,
    qpn: u32,
    psn: u32,
    pdata: &[u8],
) -> io::Result<sys::cepm_connect> {
    let mut req = sys::cepm_connect {
        service_id: config.service_id,
        handle,
        port_num: config.port.into(),
        dev_name: route.dev_name,
        path: route.path,
        local_qpn: qpn,
        starting_psn: psn,
        responder_resources: 1,
        initiator_depth: 1,
        remote_cm_response_timeout: config.cm_response_timeout,
        local_cm_response_timeout: config.cm_response_timeout,
        retry_count: 7,
        rnr_retry_count: 7,
        max_cm_retries: config.max_cm_retries,
        qp_type: if config.xrc {
            sys::CEPM_TRANSPORT_XRC
        } else {
            sys::CEPM_TRANSPORT_RC
        } as u8,
        ..Default::default()
    };
    let mut len = 0;
    if config.rdma_cm {
        req.pdata[..CMA_HDR_SIZE].copy_from_slice(&cma_hdr(config, route, handle)?);
        len = CMA_HDR_SIZE;
    }
    let end = len + pdata.len();
    req.pdata
        .get_mut(len..end)
        .ok_or_else(|| io::Error::other("REQ private data too long"))?
        .copy_from_slice(pdata);
    req.pdata_len = end as u8;
    Ok(req)
}

/// Verbs objects of one side.
struct Qp {
    _device: Device,
    qp: RcQp,
}

fn create_qp(config: &Config) -> io::Result<Qp> {
    let dev = Device::open(&config.device)?;
    let pd = ProtectionDomain::new(&dev)?;
    let caps = QpCaps::default();
    let cq = CompletionQueue::new(&dev, caps.max_send_wr + caps.max_recv_wr)?;
    let qp = RcQp::create(&pd, &cq, caps)?;
    Ok(Qp { _device: dev, qp })
}

/// RTR attributes from cepm's; the AH is on `port`, the port the QP was bound to at INIT.
fn rtr_attr(a: &sys::cepm_qp_attr, port: u8) -> io::Result<RtrAttr> {
    let mtu = Mtu::from_raw(a.path_mtu.into())
        .ok_or_else(|| io::Error::other("cepm returned no path MTU"))?;
    Ok(RtrAttr {
        dest_qpn: a.dest_qp_num,
        rq_psn: a.rq_psn,
        path_mtu: mtu,
        max_dest_rd_atomic: a.max_dest_rd_atomic,
        min_rnr_timer: a.min_rnr_timer,
        ah: AhAttr {
            hop_limit: a.ah.hop_limit,
            traffic_class: a.ah.traffic_class,
            flow_label: a.ah.flow_label,
            sl: a.ah.sl,
            ..AhAttr::roce(a.ah.dgid, a.ah.sgid_index, port)
        },
    })
}

fn rts_attr(a: &sys::cepm_qp_attr) -> RtsAttr {
    RtsAttr {
        sq_psn: a.sq_psn,
        timeout: a.timeout,
        retry_cnt: a.retry_cnt,
        rnr_retry: a.rnr_retry,
        max_rd_atomic: a.max_rd_atomic,
    }
}

/// What moves over the QP once connected: receives are posted when it is made, in INIT. It
/// is kept until the connection is over: the device may still use its buffers.
enum Traffic<'q> {
    PingPong(Option<PingPong<'q>>),
}

/// Moves the QP (if any) to INIT and then RTR with cepm's attributes, posting the traffic's
/// receives in between; returns the traffic and the RTR attributes.
fn to_rtr<'q>(
    cepm: &Cepm,
    handle: u32,
    qp: Option<&'q Qp>,
    config: &Config,
) -> io::Result<(Option<Traffic<'q>>, sys::cepm_qp_attr)> {
    let pp = match qp {
        Some(qp) => {
            to_init(cepm, handle, &qp.qp)?;
            Some(Traffic::PingPong(Some(PingPong::new(&qp.qp, config.size)?)))
        }
        None => None,
    };
    let rtr = cepm.qp_attr(handle, sys::CEPM_QPS_RTR)?;
    if let Some(qp) = qp {
        qp.qp.to_rtr(&rtr_attr(&rtr, config.port)?)?;
    }
    Ok((pp, rtr))
}

/// Moves the QP to INIT with cepm's attributes.
fn to_init(cepm: &Cepm, handle: u32, qp: &RcQp) -> io::Result<()> {
    let a = cepm.qp_attr(handle, sys::CEPM_QPS_INIT)?;
    qp.to_init(
        a.port_num,
        a.pkey_index,
        AccessFlags::from_bits_truncate(a.qp_access_flags),
    )
}

/// With `--xrc`, prints the `IB_QP_*` masks of INIT, RTR and RTS that cepm gives out for
/// this side's role (they are what an XRC QP would be modified with).
fn trace_xrc_masks(cepm: &Cepm, handle: u32, config: &Config, trace: &mut Trace) -> io::Result<()> {
    if !config.xrc {
        return Ok(());
    }
    let mask = |state| cepm.qp_attr(handle, state).map(|a| a.attr_mask);
    trace.push(format!(
        "QP attribute masks: INIT {:#x}, RTR {:#x}, RTS {:#x}",
        mask(sys::CEPM_QPS_INIT)?,
        mask(sys::CEPM_QPS_RTR)?,
        mask(sys::CEPM_QPS_RTS)?
    ));
    Ok(())
}

/// Waits for event `want`; MRAs on the way are traced and waited past.
fn wait_for(cepm: &Cepm, want: u32, timeout: Duration, trace: &mut Trace) -> io::Result<()> {
    let mut ev = cepm.expect_event(timeout)?;
    while ev.kind == sys::CEPM_EVENT_MRA_RECEIVED && want != ev.kind {
        trace.push(format!(
            "event MRA_RECEIVED on CEP {} (service timeout {})",
            ev.handle, ev.status
        ));
        ev = cepm.expect_event(timeout)?;
    }
    trace.event(&ev);
    if ev.kind != want {
        // A REJ's private data is the peer's explanation: show it.
        let pdata = match ev.kind {
            sys::CEPM_EVENT_REJ_RECEIVED => cepm
                .private_data(ev.handle)
                .map(|(_, d)| d)
                .unwrap_or_default(),
            _ => Vec::new(),
        };
        let text = String::from_utf8_lossy(&pdata);
        return Err(io::Error::other(format!(
            "expected {}, got {} (status {}), {} bytes of private data {:?}",
            event_name(want),
            event_name(ev.kind),
            ev.status,
            pdata.len(),
            text.trim_end_matches('\0')
        )));
    }
    Ok(())
}

/// With `hold`, waits for that many events and records each; the caller then destroys the
/// CEP.
fn hold(cepm: &Cepm, config: &Config, trace: &mut Trace) -> io::Result<bool> {
    if config.hold == 0 {
        return Ok(false);
    }
    for _ in 0..config.hold {
        let ev = cepm.expect_event(config.timeout)?;
        trace.event(&ev);
    }
    Ok(true)
}

fn run_traffic(
    qp: &RcQp,
    traffic: &mut Traffic<'_>,
    role: Role,
    config: &Config,
) -> io::Result<Option<Stats>> {
    let Traffic::PingPong(pp) = traffic;
    if config.iterations == 0 {
        return Ok(None);
    }
    let cfg = PingPongConfig {
        iterations: config.iterations,
        timeout: config.timeout,
        corrupt_echo_at: None,
    };
    let pp = pp
        .take()
        .ok_or_else(|| io::Error::other("the ping-pong ran already"))?;
    pp.run(role, &cfg).map(Some).inspect_err(|_| {
        let _ = qp.to_error();
    })
}

/// The active side: REQ, REP, QP to RTS, RTU, ping-pong as the client.
pub(crate) fn active(config: &Config) -> io::Result<Outcome> {
    let mut trace = Trace::new("connect");
    let cepm = Cepm::open()?;
    let qp = if config.cm_only {
        None
    } else {
        Some(create_qp(config)?)
    };
    let qpn = qp
        .as_ref()
        .map_or_else(|| config.made_up_qpn(false), |q| q.qp.qp_num());
    let handle = cepm.create(0xac71_0000)?;
    let route = Route::new(config)?;
    let req = connect_args(
        config,
        handle,
        &route,
        qpn,
        random_psn()?,
        b"cepmctl connect",
    )?;
    cepm.connect(&req)?;
    trace.push(format!(
        "REQ sent from QP {qpn:#x} on {} to service {:#018x} at GID {}",
        config.device,
        config.service_id,
        crate::verbs::loopback::format_gid(&req.path.dgid)
    ));
    wait_for(
        &cepm,
        sys::CEPM_EVENT_REP_RECEIVED,
        config.timeout,
        &mut trace,
    )?;
    let (attr, pdata) = cepm.private_data(handle)?;
    trace.push(format!(
        "REP private data ({} bytes, attribute {attr:#x}): {:?}",
        pdata.len(),
        String::from_utf8_lossy(&pdata).trim_end_matches('\0')
    ));
    // A slow client, as rdma_cm is under load: the server's REP retries meet the MRA.
    if config.mra {
        cepm.prepare_mra(handle)?;
        trace.push("MRA armed for the REP".to_string());
    }
    if !config.answer_delay.is_zero() {
        trace.push(format!(
            "sending the RTU in {} ms",
            config.answer_delay.as_millis()
        ));
        std::thread::sleep(config.answer_delay);
    }
    let (pp, rtr) = to_rtr(&cepm, handle, qp.as_ref(), config)?;
    let rts = cepm.qp_attr(handle, sys::CEPM_QPS_RTS)?;
    if let Some(qp) = &qp {
        qp.qp.to_rts(&rts_attr(&rts))?;
    }
    trace.push(format!(
        "QP {qpn:#x} in RTS, connected to QP {:#x} (send PSN {:#x}, receive PSN {:#x}, ACK timeout {}, retries {}, RNR retries {})",
        rtr.dest_qp_num, rts.sq_psn, rtr.rq_psn, rts.timeout, rts.retry_cnt, rts.rnr_retry
    ));
    trace_xrc_masks(&cepm, handle, config, &mut trace)?;
    cepm.send_rtu(handle, &config.rtu_data)?;
    let info = cepm.query_cep(handle)?;
    trace.push(format!(
        "RTU sent; CEP {} in {}",
        handle,
        state_name(info.state)
    ));
    trace.push(format!(
        "comm IDs: ours {:#x}, the peer's {:#x}",
        info.local_comm_id, info.remote_comm_id
    ));
    let mut traffic = pp;
    let stats = match (&qp, traffic.as_mut()) {
        (Some(qp), Some(t)) => run_traffic(&qp.qp, t, Role::Client, config)?,
        _ => None,
    };
    if hold(&cepm, config, &mut trace)? {
        cepm.destroy(handle)?;
        return Ok(Outcome { stats });
    }
    disconnect(&cepm, handle, config, &mut trace)?;
    cepm.destroy(handle)?;
    Ok(Outcome { stats })
}

/// An `rdma_cm` peer's REQ starts with a `cma_hdr`; without a valid one it is rejected with
/// reason 28 (Consumer Reject), as the passive `rdma_cm` does (`cma_ib_req_handler` fails,
/// `cm_destroy_id` in `drivers/infiniband/core/cm.c`).
fn check_cma_hdr(cepm: &Cepm, handle: u32, pdata: &[u8], trace: &mut Trace) -> io::Result<()> {
    if read_cma_hdr(pdata, trace) {
        return Ok(());
    }
    cepm.reject(handle, 28, b"", b"")?;
    trace.push("REQ rejected (28)".to_string());
    Err(io::Error::other("the REQ carries no valid cma_hdr"))
}

/// Reads the `cma_hdr` at the start of a REQ's or SIDR_REQ's private data and traces the
/// peer it names (or why it is bad); whether it is valid.
pub(crate) fn read_cma_hdr(pdata: &[u8], trace: &mut Trace) -> bool {
    match CmaHdr::decode(pdata) {
        Ok(hdr) => {
            if let CmaAddrs::V4 { src, dst } = hdr.addrs {
                trace.push(format!(
                    "rdma_cm peer {}:{} to {}",
                    std::net::Ipv4Addr::from(src),
                    hdr.src_port,
                    std::net::Ipv4Addr::from(dst)
                ));
            }
            true
        }
        Err(e) => {
            trace.push(format!("bad cma_hdr: {e:?}"));
            false
        }
    }
}

/// The peer disconnects: answers its DREQ and waits out timewait.
fn answer_dreq(cepm: &Cepm, handle: u32, config: &Config, trace: &mut Trace) -> io::Result<()> {
    wait_for(cepm, sys::CEPM_EVENT_DREQ_RECEIVED, config.timeout, trace)?;
    let (_, pdata) = cepm.private_data(handle)?;
    trace.push(format!(
        "DREQ private data {:?}",
        String::from_utf8_lossy(&pdata).trim_end_matches('\0')
    ));
    cepm.send_drep(handle, b"")?;
    trace.push("DREP sent".to_string());
    wait_for(cepm, sys::CEPM_EVENT_TIMEWAIT_EXIT, config.timeout, trace)?;
    trace.push(format!(
        "CEP {} in {}",
        handle,
        state_name(cepm.query_cep(handle)?.state)
    ));
    Ok(())
}

/// Sends a DREQ and sees the connection through timewait. The peer answers with a DREP, or,
/// when its own DREQ crossed ours, its DREQ arrives here in DREQ_SENT and gets our DREP.
fn disconnect(cepm: &Cepm, handle: u32, config: &Config, trace: &mut Trace) -> io::Result<()> {
    if let Err(e) = cepm.send_dreq(handle, b"bye") {
        if cepm.query_cep(handle)?.state != sys::CEPM_STATE_DREQ_RCVD {
            return Err(e);
        }
        // The peer's DREQ came first (and waits in our event queue): answer it instead.
        trace.push("the peer disconnected first".to_string());
        return answer_dreq(cepm, handle, config, trace);
    }
    trace.push("DREQ sent".to_string());
    loop {
        let ev = cepm.expect_event(config.timeout)?;
        trace.event(&ev);
        match ev.kind {
            sys::CEPM_EVENT_DREP_RECEIVED => {}
            sys::CEPM_EVENT_DREQ_RECEIVED => {
                trace.push("DREQs crossed".to_string());
                // The peer's DREP to our DREQ may have moved us to TIMEWAIT meanwhile; then
                // no DREP is due any more.
                match cepm.send_drep(handle, b"") {
                    Ok(()) => trace.push("DREP sent".to_string()),
                    Err(_) if cepm.query_cep(handle)?.state == sys::CEPM_STATE_TIMEWAIT => {}
                    Err(e) => return Err(e),
                }
            }
            sys::CEPM_EVENT_TIMEWAIT_EXIT => break,
            other => {
                return Err(io::Error::other(format!(
                    "unexpected {} while disconnecting",
                    event_name(other)
                )))
            }
        }
    }
    trace.push(format!(
        "CEP {} in {}",
        handle,
        state_name(cepm.query_cep(handle)?.state)
    ));
    Ok(())
}

/// The passive side: listen, claim the REQ, prepare the REP, QP to RTR, REP, RTU, ping-pong
/// as the server.
pub(crate) fn passive(config: &Config) -> io::Result<Outcome> {
    let mut trace = Trace::new("accept");
    let cepm = Cepm::open()?;
    let listener = cepm.create(0)?;
    cepm.listen(listener, config.service_id, u64::MAX)?;
    // Scripts start the active side when they see this line.
    trace.push(format!("listening on service {:#018x}", config.service_id));
    wait_for(
        &cepm,
        sys::CEPM_EVENT_REQ_RECEIVED,
        config.timeout,
        &mut trace,
    )?;
    if !config.claim_delay.is_zero() {
        trace.push(format!(
            "claiming the REQ in {} ms",
            config.claim_delay.as_millis()
        ));
        std::thread::sleep(config.claim_delay);
    }
    let (handle, req) = cepm.get_request(listener, 0x5e55_0000)?;
    let transport = match u32::from(req.transport) {
        sys::CEPM_TRANSPORT_RC => "RC",
        sys::CEPM_TRANSPORT_UC => "UC",
        sys::CEPM_TRANSPORT_XRC => "XRC",
        _ => "unknown",
    };
    trace.push(format!(
        "REQ claimed as CEP {handle}: from QPN {:#x}, transport {transport}, private data {:?}",
        req.remote_qpn,
        String::from_utf8_lossy(&req.private_data).trim_end_matches('\0')
    ));
    // An XRC target takes only XRC REQs, as a QP of one type serves one transport.
    if config.xrc != (u32::from(req.transport) == sys::CEPM_TRANSPORT_XRC) {
        cepm.reject(handle, 9, &[], b"")?;
        return Err(io::Error::other(format!(
            "rejected the {transport} REQ with reason 9: accept{} takes {} REQs only",
            if config.xrc { " --xrc" } else { "" },
            if config.xrc { "XRC" } else { "RC and UC" }
        )));
    }
    if config.rdma_cm {
        check_cma_hdr(&cepm, handle, &req.private_data, &mut trace)?;
    }
    if config.mra || config.mra_now {
        cepm.mra(handle, config.mra_now, config.mra_timeout)?;
        let how = if config.mra_now { "sent" } else { "armed" };
        trace.push(format!("MRA {how} for the REQ"));
    }
    if !config.answer_delay.is_zero() {
        trace.push(format!(
            "answering in {} ms",
            config.answer_delay.as_millis()
        ));
        std::thread::sleep(config.answer_delay);
    }
    let qp = if config.cm_only {
        None
    } else {
        Some(create_qp(config)?)
    };
    let qpn = qp
        .as_ref()
        .map_or_else(|| config.made_up_qpn(true), |q| q.qp.qp_num());
    let mut rep = sys::cepm_accept {
        handle,
        local_qpn: qpn,
        starting_psn: random_psn()?,
        responder_resources: 1,
        initiator_depth: 1,
        rnr_retry_count: 7,
        ..Default::default()
    };
    let hello = b"cepmctl accept";
    rep.pdata[..hello.len()].copy_from_slice(hello);
    rep.pdata_len = hello.len() as u8;
    cepm.prepare_rep(&rep)?;
    // The prepare/send split: the QP is in RTR before the REP leaves.
    let (pp, _) = to_rtr(&cepm, handle, qp.as_ref(), config)?;
    trace_xrc_masks(&cepm, handle, config, &mut trace)?;
    trace.push(format!(
        "REP prepared; QP {qpn:#x} in RTR before the REP is sent"
    ));
    cepm.send_rep(handle)?;
    if config.establish_early {
        cepm.establish(handle)?;
        trace.push("established without waiting for the RTU".to_string());
    }
    wait_for(
        &cepm,
        sys::CEPM_EVENT_ESTABLISHED,
        config.timeout,
        &mut trace,
    )?;
    // Only with a QP: a CM-only peer may already be disconnecting, and RTS attributes are
    // not given out in DREQ_RCVD.
    if let Some(qp) = &qp {
        qp.qp
            .to_rts(&rts_attr(&cepm.qp_attr(handle, sys::CEPM_QPS_RTS)?))?;
    }
    trace.push(format!(
        "CEP {} in {}",
        handle,
        state_name(cepm.query_cep(handle)?.state)
    ));
    let mut traffic = pp;
    let stats = match (&qp, traffic.as_mut()) {
        (Some(qp), Some(t)) => run_traffic(&qp.qp, t, Role::Server, config)?,
        _ => None,
    };
    if hold(&cepm, config, &mut trace)? {
        cepm.destroy(handle)?;
        cepm.destroy(listener)?;
        return Ok(Outcome { stats });
    }
    if config.disconnect {
        disconnect(&cepm, handle, config, &mut trace)?;
        cepm.destroy(handle)?;
        cepm.destroy(listener)?;
        return Ok(Outcome { stats });
    }
    answer_dreq(&cepm, handle, config, &mut trace)?;
    cepm.destroy(handle)?;
    cepm.destroy(listener)?;
    Ok(Outcome { stats })
}

#[cfg(test)]
mod tests {
    use super::cm_only_qpn;

    #[test]
    fn cm_only_qpns_are_one_per_process_and_side() {
        // Every PID Linux can hand out (pid_max is at most 2^22).
        for pid in 1..0x40_0000u32 {
            let (active, passive) = (cm_only_qpn(false, pid), cm_only_qpn(true, pid));
            assert!(
                (0x40_0000..0x80_0000).contains(&active),
                "{pid}: {active:#x}"
            );
            assert!(
                (0x80_0000..0xc0_0000).contains(&passive),
                "{pid}: {passive:#x}"
            );
            // One QPN per process on each side: the low bits are the PID itself.
            assert_eq!(active & 0x3f_ffff, pid);
            assert_eq!(passive & 0x3f_ffff, pid);
        }
    }
}
