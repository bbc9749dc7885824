//! RDMA verbs through libibverbs: reliable-connected (RC) queue pairs driven through
//! INIT → RTR → RTS by explicit attributes, and a ping-pong that moves and verifies real data.
//! That is all `cepmctl connect`/`accept` need; rdma-core's own tools cover the rest over cepm's
//! librdmacm. Why this is not the `sideway` crate: `docs/verbs.md`.
//!
//! The attributes ([`RtrAttr`], [`RtsAttr`], [`AhAttr`]) are plain values so that they can come
//! from anywhere: from the connection manager (the scalars map one to one onto what cepm's
//! `PREPARE_REP`/`INIT_QP_ATTR` return) or, in [`loopback`], from the other end of a QP pair on
//! the same port.
//!
//! # Ownership
//!
//! ```text
//! Device ◀── ProtectionDomain ◀── MemoryRegion
//!    ▲               ▲
//!    └─ CompletionQueue ◀── RcQp ──▶ (its ProtectionDomain)
//! ```
//!
//! Each arrow is an `Arc`: an object keeps what it was created from alive, so the verbs
//! objects are destroyed in the only order libibverbs accepts (QP before its CQ and PD, MR
//! before its PD, everything before the device context) whatever order the caller drops the
//! handles in.
//!
//! # Threads
//!
//! libibverbs objects are safe for multi-threaded access ("By default all verbs objects are safe
//! for multi-threaded access", `ibv_alloc_td(3)`), so every handle here is `Send` and `Sync`.
//! [`CompletionQueue::wait`] should have one caller at a time per CQ: a second waiter is safe but
//! may see the first one consume its completion and time out.
//!
//! The C side is `csrc/verbs_shim.{h,c}`: libibverbs' data path is static inline functions, so
//! it is reached through small wrappers whose Rust declarations bindgen generates (`build.rs`).

pub(crate) mod loopback;

use std::{
    alloc::{self, Layout},
    ffi::{CStr, CString},
    fmt, io,
    ops::BitOr,
    os::fd::RawFd,
    ptr::NonNull,
    str::FromStr,
    sync::{
        atomic::{AtomicU8, Ordering},
        Arc,
    },
    time::{Duration, Instant},
};

use cepm::psn::MAX_PSN;

use crate::bindings::verbs as ffi;

/// The largest QP number: QPNs, like PSNs, are 24-bit numbers.
pub(crate) const MAX_QPN: u32 = 0x00ff_ffff;
/// An error number from the shim (0 means success) as an `io::Result`.
fn errno_result(rc: i32, what: &str) -> io::Result<()> {
    if rc == 0 {
        Ok(())
    } else {
        let e = io::Error::from_raw_os_error(rc);
        Err(io::Error::new(e.kind(), format!("{what}: {e}")))
    }
}

/// A pointer returned by the shim, or the errno it set.
fn non_null<T>(p: *mut T, what: &str) -> io::Result<NonNull<T>> {
    NonNull::new(p).ok_or_else(|| {
        let e = io::Error::last_os_error();
        io::Error::new(e.kind(), format!("{what}: {e}"))
    })
}

// ---------------------------------------------------------------------------------------------
// Plain values: MTU, access flags, states, attributes and their validation.
// ---------------------------------------------------------------------------------------------

/// An InfiniBand path MTU (`enum ibv_mtu`), the payload size of one packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Mtu {
    /// 256 bytes (`IBV_MTU_256` = 1).
    Mtu256,
    /// 512 bytes (`IBV_MTU_512` = 2).
    Mtu512,
    /// 1024 bytes (`IBV_MTU_1024` = 3).
    Mtu1024,
    /// 2048 bytes (`IBV_MTU_2048` = 4).
    Mtu2048,
    /// 4096 bytes (`IBV_MTU_4096` = 5).
    Mtu4096,
}

impl Mtu {
    /// Every MTU, smallest first.
    pub(crate) const ALL: [Mtu; 5] = [
        Mtu::Mtu256,
        Mtu::Mtu512,
        Mtu::Mtu1024,
        Mtu::Mtu2048,
        Mtu::Mtu4096,
    ];

    /// The MTU in bytes.
    pub(crate) const fn bytes(self) -> u32 {
        match self {
            Mtu::Mtu256 => 256,
            Mtu::Mtu512 => 512,
            Mtu::Mtu1024 => 1024,
            Mtu::Mtu2048 => 2048,
            Mtu::Mtu4096 => 4096,
        }
    }

    /// The MTU of exactly `bytes` bytes.
    pub(crate) fn from_bytes(bytes: u32) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.bytes() == bytes)
    }

    /// The `enum ibv_mtu` value, which is also the wire encoding the CM uses (REQ PathMTU).
    pub(crate) const fn to_raw(self) -> u32 {
        match self {
            Mtu::Mtu256 => ffi::CEPM_VERBS_MTU_256,
            Mtu::Mtu512 => ffi::CEPM_VERBS_MTU_512,
            Mtu::Mtu1024 => ffi::CEPM_VERBS_MTU_1024,
            Mtu::Mtu2048 => ffi::CEPM_VERBS_MTU_2048,
            Mtu::Mtu4096 => ffi::CEPM_VERBS_MTU_4096,
        }
    }

    /// The MTU an `enum ibv_mtu` value (1..=5) names.
    pub(crate) fn from_raw(raw: u32) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.to_raw() == raw)
    }
}

impl fmt::Display for Mtu {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.bytes())
    }
}

impl FromStr for Mtu {
    type Err = String;

    /// Parses a size in bytes: `256`, `512`, `1024`, `2048` or `4096`.
    fn from_str(s: &str) -> Result<Self, String> {
        s.parse()
            .ok()
            .and_then(Mtu::from_bytes)
            .ok_or_else(|| format!("'{s}' is not an IB MTU (256, 512, 1024, 2048 or 4096)"))
    }
}

/// Memory and QP access rights (`enum ibv_access_flags`, the subset cepm uses).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct AccessFlags(u32);

impl AccessFlags {
    /// No access beyond local reads (the device may always read local memory to send it).
    pub(crate) const NONE: Self = Self(0);
    /// The device may write the memory (receive buffers need it).
    pub(crate) const LOCAL_WRITE: Self = Self(ffi::CEPM_VERBS_ACCESS_LOCAL_WRITE);
    /// A peer may RDMA-write the memory / to this QP.
    pub(crate) const REMOTE_WRITE: Self = Self(ffi::CEPM_VERBS_ACCESS_REMOTE_WRITE);
    /// A peer may RDMA-read the memory / through this QP.
    pub(crate) const REMOTE_READ: Self = Self(ffi::CEPM_VERBS_ACCESS_REMOTE_READ);
    /// A peer may perform atomics on the memory / through this QP.
    pub(crate) const REMOTE_ATOMIC: Self = Self(ffi::CEPM_VERBS_ACCESS_REMOTE_ATOMIC);

    /// The flags among `bits` that this type knows (others are dropped).
    pub(crate) const fn from_bits_truncate(bits: u32) -> Self {
        let known = Self::LOCAL_WRITE.0
            | Self::REMOTE_WRITE.0
            | Self::REMOTE_READ.0
            | Self::REMOTE_ATOMIC.0;
        Self(bits & known)
    }

    /// The `ibv_access_flags` bits.
    pub(crate) const fn bits(self) -> u32 {
        self.0
    }
}

impl BitOr for AccessFlags {
    type Output = Self;

    fn bitor(self, rhs: Self) -> Self {
        Self(self.0 | rhs.0)
    }
}

/// The state of a port (`enum ibv_port_state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum PortState {
    /// Link down.
    Down,
    /// Link up, not configured by a subnet manager yet.
    Init,
    /// Configured, not yet active.
    Armed,
    /// Up and able to carry traffic.
    Active,
    /// Any other value (`IBV_PORT_NOP`, `IBV_PORT_ACTIVE_DEFER`, or unknown).
    Other(u32),
}

impl PortState {
    fn from_raw(raw: u32) -> Self {
        match raw {
            ffi::CEPM_VERBS_PORT_DOWN => PortState::Down,
            ffi::CEPM_VERBS_PORT_INIT => PortState::Init,
            ffi::CEPM_VERBS_PORT_ARMED => PortState::Armed,
            ffi::CEPM_VERBS_PORT_ACTIVE => PortState::Active,
            other => PortState::Other(other),
        }
    }
}

/// A port's link layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum LinkLayer {
    /// InfiniBand (also reported as "unspecified" by old providers).
    InfiniBand,
    /// Ethernet: RoCE, where every address vector must carry a GRH.
    Ethernet,
}

/// What [`Device::query_port`] reports about a port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PortAttr {
    /// The port state.
    pub(crate) state: PortState,
    /// The largest MTU the port supports (`None` if the provider reports an unknown value).
    pub(crate) max_mtu: Option<Mtu>,
    /// The MTU the port runs at now; a path MTU cannot exceed it.
    pub(crate) active_mtu: Option<Mtu>,
    /// Number of GID table entries.
    pub(crate) gid_tbl_len: u32,
    /// Largest message the port can send, in bytes.
    pub(crate) max_msg_sz: u32,
    /// Number of P_Key table entries.
    pub(crate) pkey_tbl_len: u16,
    /// The port's LID (0 on RoCE).
    pub(crate) lid: u16,
    /// The link layer.
    pub(crate) link_layer: LinkLayer,
}

impl PortAttr {
    fn from_raw(raw: &ffi::cepm_verbs_port_attr) -> Self {
        Self {
            state: PortState::from_raw(raw.state),
            max_mtu: Mtu::from_raw(raw.max_mtu),
            active_mtu: Mtu::from_raw(raw.active_mtu),
            gid_tbl_len: u32::try_from(raw.gid_tbl_len).unwrap_or(0),
            max_msg_sz: raw.max_msg_sz,
            pkey_tbl_len: raw.pkey_tbl_len,
            lid: raw.lid,
            link_layer: if u32::from(raw.link_layer) == ffi::CEPM_VERBS_LINK_LAYER_ETHERNET {
                LinkLayer::Ethernet
            } else {
                LinkLayer::InfiniBand
            },
        }
    }
}

/// The state of a queue pair (`enum ibv_qp_state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum QpState {
    /// Reset: just created.
    Reset,
    /// Initialized: bound to a port, receives may be posted.
    Init,
    /// Ready to receive.
    Rtr,
    /// Ready to send.
    Rts,
    /// Send queue drained.
    Sqd,
    /// Send queue error.
    Sqe,
    /// Error: every outstanding work request is flushed.
    Err,
    /// Any other value.
    Unknown(u32),
}

impl QpState {
    fn from_raw(raw: u32) -> Self {
        match raw {
            ffi::CEPM_VERBS_QPS_RESET => QpState::Reset,
            ffi::CEPM_VERBS_QPS_INIT => QpState::Init,
            ffi::CEPM_VERBS_QPS_RTR => QpState::Rtr,
            ffi::CEPM_VERBS_QPS_RTS => QpState::Rts,
            ffi::CEPM_VERBS_QPS_SQD => QpState::Sqd,
            ffi::CEPM_VERBS_QPS_SQE => QpState::Sqe,
            ffi::CEPM_VERBS_QPS_ERR => QpState::Err,
            other => QpState::Unknown(other),
        }
    }
}

/// An attribute that is out of range, or inconsistent with the port it is used on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct InvalidAttr {
    /// The attribute, e.g. `rq_psn` or `ah.flow_label`.
    pub(crate) field: &'static str,
    /// What is wrong with it.
    pub(crate) reason: String,
}

impl InvalidAttr {
    fn new(field: &'static str, reason: impl Into<String>) -> Self {
        Self {
            field,
            reason: reason.into(),
        }
    }
}

impl fmt::Display for InvalidAttr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid {}: {}", self.field, self.reason)
    }
}

impl std::error::Error for InvalidAttr {}

impl From<InvalidAttr> for io::Error {
    fn from(e: InvalidAttr) -> Self {
        io::Error::new(io::ErrorKind::InvalidInput, e)
    }
}

/// Checks that `value` is at most `max`.
fn at_most(field: &'static str, value: u32, max: u32) -> Result<(), InvalidAttr> {
    if value <= max {
        Ok(())
    } else {
        Err(InvalidAttr::new(
            field,
            format!("{value:#x} is above the maximum {max:#x}"),
        ))
    }
}

/// The address vector of a connection's primary path (`struct ibv_ah_attr`): where the QP's
/// packets go and how they are routed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct AhAttr {
    /// Destination GID (for RoCE v2 over IPv4, `::ffff:a.b.c.d`).
    pub(crate) dgid: [u8; 16],
    /// Index of the source GID in the port's GID table; on RoCE it also selects RoCE v1/v2.
    pub(crate) sgid_index: u8,
    /// Hop limit of the GRH (the IP TTL on RoCE v2).
    pub(crate) hop_limit: u8,
    /// Traffic class of the GRH (the IP DSCP/ECN byte on RoCE v2).
    pub(crate) traffic_class: u8,
    /// 20-bit flow label of the GRH (also seeds the UDP source port on RoCE v2).
    pub(crate) flow_label: u32,
    /// Service level, 0..=15.
    pub(crate) sl: u8,
    /// Local port number (1-based); must be the port the QP was bound to in [`RcQp::to_init`].
    pub(crate) port: u8,
    /// Destination LID (InfiniBand only; 0 on RoCE).
    pub(crate) dlid: u16,
    /// Source path bits (InfiniBand LMC; 0 on RoCE).
    pub(crate) src_path_bits: u8,
    /// Static rate (`enum ibv_rate`, 0 for the port's rate).
    pub(crate) static_rate: u8,
    /// Whether packets carry a GRH (`is_global`); always true on RoCE.
    pub(crate) global: bool,
}

impl AhAttr {
    /// A RoCE address vector to `dgid` from GID `sgid_index` of `port`: GRH with hop limit 64,
    /// traffic class, flow label and SL 0.
    pub(crate) fn roce(dgid: [u8; 16], sgid_index: u8, port: u8) -> Self {
        Self {
            dgid,
            sgid_index,
            hop_limit: 64,
            traffic_class: 0,
            flow_label: 0,
            sl: 0,
            port,
            dlid: 0,
            src_path_bits: 0,
            static_rate: 0,
            global: true,
        }
    }

    /// Checks the ranges that do not depend on the port.
    pub(crate) fn validate(&self) -> Result<(), InvalidAttr> {
        if self.port == 0 {
            return Err(InvalidAttr::new("ah.port", "port numbers start at 1"));
        }
        at_most("ah.flow_label", self.flow_label, 0x000f_ffff)?;
        at_most("ah.sl", self.sl.into(), 15)?;
        at_most("ah.src_path_bits", self.src_path_bits.into(), 0x7f)?;
        if !self.global && !(1..0xc000).contains(&self.dlid) {
            return Err(InvalidAttr::new(
                "ah.dlid",
                "a path without GRH needs a unicast DLID (0x0001..=0xbfff)",
            ));
        }
        Ok(())
    }

    /// Checks the vector against the port it will be used on.
    pub(crate) fn validate_for_port(&self, port: &PortAttr) -> Result<(), InvalidAttr> {
        self.validate()?;
        if port.link_layer == LinkLayer::Ethernet && !self.global {
            return Err(InvalidAttr::new(
                "ah.global",
                "RoCE address vectors must carry a GRH",
            ));
        }
        if self.global && u32::from(self.sgid_index) >= port.gid_tbl_len {
            return Err(InvalidAttr::new(
                "ah.sgid_index",
                format!(
                    "{} is beyond the port's GID table ({} entries)",
                    self.sgid_index, port.gid_tbl_len
                ),
            ));
        }
        Ok(())
    }

    fn to_raw(self) -> ffi::cepm_verbs_ah {
        ffi::cepm_verbs_ah {
            dgid: self.dgid,
            flow_label: self.flow_label,
            dlid: self.dlid,
            sgid_index: self.sgid_index,
            hop_limit: self.hop_limit,
            traffic_class: self.traffic_class,
            sl: self.sl,
            src_path_bits: self.src_path_bits,
            static_rate: self.static_rate,
            is_global: u8::from(self.global),
            port_num: self.port,
            reserved: [0; 2],
        }
    }
}

/// The attributes of the INIT → RTR transition of an RC QP: the remote end and the receive side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RtrAttr {
    /// The remote QP number (24 bits; not 0 or 1, the special QPs).
    pub(crate) dest_qpn: u32,
    /// The first PSN this QP's receive queue expects: the peer's `sq_psn` (24 bits).
    pub(crate) rq_psn: u32,
    /// The path MTU; at most the port's active MTU.
    pub(crate) path_mtu: Mtu,
    /// RDMA read/atomic requests this QP accepts at once as a responder.
    pub(crate) max_dest_rd_atomic: u8,
    /// The RNR NAK timer code (0..=31) this QP advertises when no receive is posted.
    pub(crate) min_rnr_timer: u8,
    /// The primary path.
    pub(crate) ah: AhAttr,
}

impl RtrAttr {
    /// Checks the ranges that do not depend on the port.
    pub(crate) fn validate(&self) -> Result<(), InvalidAttr> {
        at_most("dest_qpn", self.dest_qpn, MAX_QPN)?;
        if self.dest_qpn < 2 {
            return Err(InvalidAttr::new(
                "dest_qpn",
                "QPs 0 and 1 are the SMI and GSI, not RC QPs",
            ));
        }
        at_most("rq_psn", self.rq_psn, MAX_PSN)?;
        at_most("min_rnr_timer", self.min_rnr_timer.into(), 31)?;
        self.ah.validate()
    }

    /// Checks the attributes against the port the QP is bound to.
    pub(crate) fn validate_for_port(&self, port: &PortAttr) -> Result<(), InvalidAttr> {
        self.validate()?;
        self.ah.validate_for_port(port)?;
        match port.active_mtu {
            Some(active) if self.path_mtu > active => Err(InvalidAttr::new(
                "path_mtu",
                format!("{} is above the port's active MTU {active}", self.path_mtu),
            )),
            _ => Ok(()),
        }
    }

    fn to_raw(self) -> ffi::cepm_verbs_rtr {
        ffi::cepm_verbs_rtr {
            ah: self.ah.to_raw(),
            dest_qpn: self.dest_qpn,
            rq_psn: self.rq_psn,
            path_mtu: self.path_mtu.to_raw(),
            max_dest_rd_atomic: self.max_dest_rd_atomic,
            min_rnr_timer: self.min_rnr_timer,
            reserved: [0; 2],
        }
    }
}

/// The attributes of the RTR → RTS transition of an RC QP: the send side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RtsAttr {
    /// The first PSN this QP sends with: the peer's `rq_psn` (24 bits).
    pub(crate) sq_psn: u32,
    /// The local ACK timeout exponent (0..=31): 4.096 µs × 2^timeout, 0 meaning infinite.
    pub(crate) timeout: u8,
    /// Transport retries before the QP fails (0..=7).
    pub(crate) retry_cnt: u8,
    /// RNR retries before the QP fails (0..=7, 7 meaning infinite).
    pub(crate) rnr_retry: u8,
    /// RDMA read/atomic requests this QP may have outstanding as an initiator.
    pub(crate) max_rd_atomic: u8,
}

impl RtsAttr {
    /// Checks the ranges.
    pub(crate) fn validate(&self) -> Result<(), InvalidAttr> {
        at_most("sq_psn", self.sq_psn, MAX_PSN)?;
        at_most("timeout", self.timeout.into(), 31)?;
        at_most("retry_cnt", self.retry_cnt.into(), 7)?;
        at_most("rnr_retry", self.rnr_retry.into(), 7)
    }

    fn to_raw(self) -> ffi::cepm_verbs_rts {
        ffi::cepm_verbs_rts {
            sq_psn: self.sq_psn,
            timeout: self.timeout,
            retry_cnt: self.retry_cnt,
            rnr_retry: self.rnr_retry,
            max_rd_atomic: self.max_rd_atomic,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Device, PD, CQ, MR, QP.
// ---------------------------------------------------------------------------------------------

/// An open device context (`struct ibv_context`).
struct Context {
    ptr: NonNull<ffi::ibv_context>,
    name: String,
}

// SAFETY: libibverbs objects may be used from any thread and concurrently (ibv_alloc_td(3):
// "By default all verbs objects are safe for multi-threaded access"); `name` is plain data.
unsafe impl Send for Context {}
// SAFETY: As for `Send`: every use through `&Context` is a thread-safe verb.
unsafe impl Sync for Context {}

impl Drop for Context {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from `cepm_verbs_open_device` and is closed only here. Every object
        // created from it holds an `Arc<Context>`, so none is left.
        let _ = unsafe { ffi::cepm_verbs_close_device(self.ptr.as_ptr()) };
    }
}

/// An open RDMA device, e.g. `rxe0` (its `/dev/infiniband/uverbsN`, through libibverbs).
#[derive(Clone)]
pub(crate) struct Device {
    ctx: Arc<Context>,
}

impl Device {
    /// Opens the RDMA device called `name`.
    pub(crate) fn open(name: &str) -> io::Result<Self> {
        let c_name = CString::new(name)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in device name"))?;
        // SAFETY: `c_name` is a NUL-terminated string that outlives the call.
        let ptr = unsafe { ffi::cepm_verbs_open_device(c_name.as_ptr()) };
        let ptr = NonNull::new(ptr).ok_or_else(|| {
            let e = io::Error::last_os_error();
            let hint = if matches!(e.raw_os_error(), Some(libc::ENODEV | libc::ENOSYS)) {
                " (is ib_uverbs loaded and the device's libibverbs provider installed?)"
            } else {
                ""
            };
            io::Error::new(
                e.kind(),
                format!("cannot open RDMA device {name}: {e}{hint}"),
            )
        })?;
        Ok(Self {
            ctx: Arc::new(Context {
                ptr,
                name: name.to_owned(),
            }),
        })
    }

    /// The attributes of port `port` (1-based).
    pub(crate) fn query_port(&self, port: u8) -> io::Result<PortAttr> {
        let mut raw = ffi::cepm_verbs_port_attr::default();
        // SAFETY: the context is open (we hold it) and `raw` is a writable struct for the call.
        let rc = unsafe { ffi::cepm_verbs_query_port(self.ctx.ptr.as_ptr(), port, &mut raw) };
        errno_result(
            rc,
            &format!("ibv_query_port({} port {port})", self.ctx.name),
        )?;
        Ok(PortAttr::from_raw(&raw))
    }
}

/// A protection domain's state, shared by everything created in it.
struct PdInner {
    ptr: NonNull<ffi::ibv_pd>,
    ctx: Arc<Context>,
}

// SAFETY: See `Context`: verbs objects are thread-safe.
unsafe impl Send for PdInner {}
// SAFETY: See `Context`: verbs objects are thread-safe.
unsafe impl Sync for PdInner {}

impl Drop for PdInner {
    fn drop(&mut self) {
        // SAFETY: `ptr` came from `cepm_verbs_alloc_pd` and is freed only here; every MR and QP
        // of the PD holds an `Arc<PdInner>`, so none is left. `ctx` is still open.
        let _ = unsafe { ffi::cepm_verbs_dealloc_pd(self.ptr.as_ptr()) };
    }
}

/// A protection domain (`struct ibv_pd`): QPs may use only memory regions of their own PD.
#[derive(Clone)]
pub(crate) struct ProtectionDomain {
    inner: Arc<PdInner>,
}

impl ProtectionDomain {
    /// Allocates a protection domain on `device`.
    pub(crate) fn new(device: &Device) -> io::Result<Self> {
        // SAFETY: the context is open for the call (we hold it).
        let ptr = unsafe { ffi::cepm_verbs_alloc_pd(device.ctx.ptr.as_ptr()) };
        let ptr = non_null(ptr, "ibv_alloc_pd")?;
        Ok(Self {
            inner: Arc::new(PdInner {
                ptr,
                ctx: Arc::clone(&device.ctx),
            }),
        })
    }
}

/// A completion queue's state: the CQ and its own completion channel.
struct CqInner {
    cq: NonNull<ffi::ibv_cq>,
    channel: NonNull<ffi::ibv_comp_channel>,
    fd: RawFd,
    _ctx: Arc<Context>,
}

// SAFETY: See `Context`: verbs objects are thread-safe.
unsafe impl Send for CqInner {}
// SAFETY: See `Context`: verbs objects are thread-safe.
unsafe impl Sync for CqInner {}

impl Drop for CqInner {
    fn drop(&mut self) {
        // SAFETY: `cq` and `channel` came from the shim and are destroyed only here, the CQ first
        // (it uses the channel). Every QP on the CQ holds an `Arc<CqInner>`, so none is left,
        // and every event read from the channel was acknowledged (`consume_cq_event`), so
        // `ibv_destroy_cq` does not wait.
        unsafe {
            let _ = ffi::cepm_verbs_destroy_cq(self.cq.as_ptr());
            let _ = ffi::cepm_verbs_destroy_comp_channel(self.channel.as_ptr());
        }
    }
}

/// How a work request completed (`struct ibv_wc`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct WorkCompletion {
    /// The `wr_id` the request was posted with.
    pub(crate) wr_id: u64,
    /// `enum ibv_wc_status`: 0 for success.
    pub(crate) status: u32,
    /// What completed; undefined unless the status is success.
    pub(crate) opcode: WcOpcode,
    /// Received bytes (receive completions).
    pub(crate) byte_len: u32,
    /// The local QP the request belonged to.
    pub(crate) qp_num: u32,
    /// Provider-specific error detail.
    pub(crate) vendor_err: u32,
}

/// The kind of a completed work request (`enum ibv_wc_opcode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WcOpcode {
    /// A SEND.
    Send,
    /// A receive.
    Recv,
    /// An RDMA READ this QP initiated.
    RdmaRead,
    /// An RDMA WRITE this QP initiated.
    RdmaWrite,
    /// Anything else (atomics, ...), with its `ibv_wc_opcode` value.
    Other(u32),
}

impl WorkCompletion {
    fn from_raw(raw: &ffi::cepm_verbs_wc) -> Self {
        Self {
            wr_id: raw.wr_id,
            status: raw.status,
            opcode: match raw.opcode {
                ffi::CEPM_VERBS_WC_SEND => WcOpcode::Send,
                ffi::CEPM_VERBS_WC_RECV => WcOpcode::Recv,
                ffi::CEPM_VERBS_WC_RDMA_READ => WcOpcode::RdmaRead,
                ffi::CEPM_VERBS_WC_RDMA_WRITE => WcOpcode::RdmaWrite,
                other => WcOpcode::Other(other),
            },
            byte_len: raw.byte_len,
            qp_num: raw.qp_num,
            vendor_err: raw.vendor_err,
        }
    }

    /// Whether the request succeeded.
    pub(crate) fn is_success(&self) -> bool {
        self.status == ffi::CEPM_VERBS_WC_SUCCESS
    }

    /// Whether the request was flushed because its QP went to the error state.
    pub(crate) fn is_flushed(&self) -> bool {
        self.status == ffi::CEPM_VERBS_WC_WR_FLUSH_ERR
    }

    /// libibverbs' description of the status (`ibv_wc_status_str`).
    pub(crate) fn status_str(&self) -> String {
        // SAFETY: ibv_wc_status_str accepts any value and returns a static NUL-terminated string
        // ("unknown" for values it does not know).
        let s = unsafe { CStr::from_ptr(ffi::cepm_verbs_wc_status_str(self.status)) };
        s.to_string_lossy().into_owned()
    }

    /// The completion, or a [`CompletionError`] (as an `io::Error`) describing its failure.
    pub(crate) fn check(self) -> io::Result<Self> {
        if self.is_success() {
            Ok(self)
        } else {
            Err(io::Error::other(CompletionError(self)))
        }
    }
}

/// A work request that completed in error; [`CompletionError::of`] finds it in an `io::Error`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CompletionError(pub WorkCompletion);

impl CompletionError {
    /// The failed completion behind `e`, if that is what `e` is.
    pub(crate) fn of(e: &io::Error) -> Option<&WorkCompletion> {
        e.get_ref()
            .and_then(|inner| inner.downcast_ref::<CompletionError>())
            .map(|c| &c.0)
    }
}

impl fmt::Display for CompletionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let wc = &self.0;
        // The opcode of a failed completion is undefined (ibv_poll_cq(3)): not shown.
        write!(
            f,
            "work request {} on QP {} failed: {} (status {}, vendor error {:#x})",
            wc.wr_id,
            wc.qp_num,
            wc.status_str(),
            wc.status,
            wc.vendor_err
        )
    }
}

impl std::error::Error for CompletionError {}

/// A completion queue (`struct ibv_cq`) with its own completion channel, so that
/// [`CompletionQueue::wait`] sleeps instead of spinning.
#[derive(Clone)]
pub(crate) struct CompletionQueue {
    inner: Arc<CqInner>,
}

impl CompletionQueue {
    /// Creates a CQ with room for at least `capacity` completions.
    pub(crate) fn new(device: &Device, capacity: u32) -> io::Result<Self> {
        let ctx = device.ctx.ptr.as_ptr();
        let cqe = i32::try_from(capacity.max(1))
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "CQ too large"))?;
        // SAFETY: the context is open for the call (we hold it).
        let channel = non_null(
            unsafe { ffi::cepm_verbs_create_comp_channel(ctx) },
            "ibv_create_comp_channel",
        )?;
        // SAFETY: `channel` was just created and is valid.
        let fd = unsafe { ffi::cepm_verbs_comp_channel_fd(channel.as_ptr()) };
        // A readable channel can still be empty if the event was taken by another waiter: make
        // reads fail with EAGAIN rather than block.
        // SAFETY: `fd` is the channel's open file descriptor; F_GETFL/F_SETFL take no pointer.
        let nonblock = unsafe {
            let flags = libc::fcntl(fd, libc::F_GETFL);
            flags >= 0 && libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) == 0
        };
        // SAFETY: the context is open and `channel` belongs to it.
        let cq = unsafe { ffi::cepm_verbs_create_cq(ctx, cqe, channel.as_ptr()) };
        let cq = match (nonblock, NonNull::new(cq)) {
            (true, Some(cq)) => cq,
            (nonblock, cq) => {
                let e = io::Error::last_os_error();
                // SAFETY: the CQ (if any) and the channel were created above, nothing else uses
                // them, and they are destroyed once, the CQ first.
                unsafe {
                    if let Some(cq) = cq {
                        ffi::cepm_verbs_destroy_cq(cq.as_ptr());
                    }
                    ffi::cepm_verbs_destroy_comp_channel(channel.as_ptr());
                }
                let what = if nonblock {
                    "ibv_create_cq"
                } else {
                    "fcntl(O_NONBLOCK) on the completion channel"
                };
                return Err(io::Error::new(e.kind(), format!("{what}: {e}")));
            }
        };
        Ok(Self {
            inner: Arc::new(CqInner {
                cq,
                channel,
                fd,
                _ctx: Arc::clone(&device.ctx),
            }),
        })
    }

    /// Takes one completion if there is one, without waiting.
    pub(crate) fn poll(&self) -> io::Result<Option<WorkCompletion>> {
        let mut wc = ffi::cepm_verbs_wc::default();
        // SAFETY: the CQ is alive (we hold it) and `wc` has room for the one entry asked for.
        let n = unsafe { ffi::cepm_verbs_poll_cq(self.inner.cq.as_ptr(), 1, &mut wc) };
        match n {
            0 => Ok(None),
            1 => Ok(Some(WorkCompletion::from_raw(&wc))),
            n => Err(io::Error::other(format!("ibv_poll_cq failed ({n})"))),
        }
    }

    /// Takes the next completion, sleeping on the completion channel until one arrives; fails
    /// with [`io::ErrorKind::TimedOut`] after `timeout`.
    pub(crate) fn wait(&self, timeout: Duration) -> io::Result<WorkCompletion> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(wc) = self.poll()? {
                return Ok(wc);
            }
            // SAFETY: the CQ is alive (we hold it).
            let rc = unsafe { ffi::cepm_verbs_req_notify_cq(self.inner.cq.as_ptr()) };
            errno_result(rc, "ibv_req_notify_cq")?;
            // A completion that arrived before the CQ was armed raises no event: poll again.
            if let Some(wc) = self.poll()? {
                return Ok(wc);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("no completion within {} ms", timeout.as_millis()),
                ));
            }
            let ms = i32::try_from(left.as_millis() + 1).unwrap_or(i32::MAX);
            let mut pfd = libc::pollfd {
                fd: self.inner.fd,
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: `pfd` is one valid pollfd for the duration of the call.
            let rc = unsafe { libc::poll(&mut pfd, 1, ms) };
            if rc < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            if rc > 0 {
                // SAFETY: the channel is alive (we hold the CQ that owns it).
                match unsafe { ffi::cepm_verbs_consume_cq_event(self.inner.channel.as_ptr()) } {
                    0 | libc::EAGAIN => {}
                    e => errno_result(e, "ibv_get_cq_event")?,
                }
            }
        }
    }
}

/// A registered memory region (`struct ibv_mr`) over a zeroed, page-aligned buffer it owns.
///
/// The buffer lives exactly as long as the registration: it is freed only after
/// `ibv_dereg_mr`, which guarantees the device no longer accesses it.
pub(crate) struct MemoryRegion {
    mr: NonNull<ffi::ibv_mr>,
    buf: NonNull<u8>,
    layout: Layout,
    lkey: u32,
    pd: Arc<PdInner>,
}

// SAFETY: The region owns its buffer (like a `Box<[u8]>`) and the MR handle is thread-safe
// (see `Context`).
unsafe impl Send for MemoryRegion {}
// SAFETY: `&MemoryRegion` gives read-only access to the buffer; writes need `&mut`.
unsafe impl Sync for MemoryRegion {}

/// Alignment of region buffers: a page, so that no two regions share a pinned page.
const MR_ALIGN: usize = 4096;

impl MemoryRegion {
    /// Allocates `len` zeroed bytes (`len` > 0) and registers them in `pd` with `access`.
    pub(crate) fn new(pd: &ProtectionDomain, len: usize, access: AccessFlags) -> io::Result<Self> {
        if len == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "cannot register an empty memory region",
            ));
        }
        let layout = Layout::from_size_align(len, MR_ALIGN)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "memory region too large"))?;
        // SAFETY: `layout` has a non-zero size.
        let buf = NonNull::new(unsafe { alloc::alloc_zeroed(layout) })
            .ok_or(io::ErrorKind::OutOfMemory)?;
        // SAFETY: the PD is alive (we hold it) and `buf` points at `len` bytes we own, which stay
        // allocated until after the region is deregistered (`Drop`).
        let mr = unsafe {
            ffi::cepm_verbs_reg_mr(
                pd.inner.ptr.as_ptr(),
                buf.as_ptr().cast(),
                len as u64,
                access.bits(),
            )
        };
        let Some(mr) = NonNull::new(mr) else {
            let e = io::Error::last_os_error();
            // SAFETY: `buf` was allocated above with `layout` and was never registered.
            unsafe { alloc::dealloc(buf.as_ptr(), layout) };
            return Err(io::Error::new(
                e.kind(),
                format!("ibv_reg_mr({len} bytes): {e}"),
            ));
        };
        // SAFETY: `mr` is a registered region.
        let lkey = unsafe { ffi::cepm_verbs_mr_lkey(mr.as_ptr()) };
        Ok(Self {
            mr,
            buf,
            layout,
            lkey,
            pd: Arc::clone(&pd.inner),
        })
    }

    /// The buffer's length in bytes.
    pub(crate) fn len(&self) -> usize {
        self.layout.size()
    }

    /// The buffer.
    pub(crate) fn as_slice(&self) -> &[u8] {
        // SAFETY: `buf` is `len` initialised (zeroed at allocation) bytes we own; see the
        // contract of `RcQp::post_recv` for device writes.
        unsafe { std::slice::from_raw_parts(self.buf.as_ptr(), self.len()) }
    }

    /// The buffer, writable.
    pub(crate) fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: As for `as_slice`, and `&mut self` makes this the only reference.
        unsafe { std::slice::from_raw_parts_mut(self.buf.as_ptr(), self.len()) }
    }
}

impl Drop for MemoryRegion {
    fn drop(&mut self) {
        // SAFETY: `mr` is deregistered only here; after `ibv_dereg_mr` the device no longer
        // accesses the buffer (a request still naming it completes in error), so the buffer,
        // allocated with `layout`, can be freed. The PD outlives both (`self.pd`).
        unsafe {
            let _ = ffi::cepm_verbs_dereg_mr(self.mr.as_ptr());
            alloc::dealloc(self.buf.as_ptr(), self.layout);
        }
    }
}

/// The capacities of a QP's queues (`struct ibv_qp_cap`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct QpCaps {
    /// Outstanding send work requests.
    pub(crate) max_send_wr: u32,
    /// Outstanding receive work requests.
    pub(crate) max_recv_wr: u32,
    /// Scatter/gather entries per send request.
    pub(crate) max_send_sge: u32,
    /// Scatter/gather entries per receive request.
    pub(crate) max_recv_sge: u32,
    /// Bytes of inline data per send request.
    pub(crate) max_inline_data: u32,
}

impl Default for QpCaps {
    /// 16 sends and 16 receives of one SGE each, no inline data.
    fn default() -> Self {
        Self {
            max_send_wr: 16,
            max_recv_wr: 16,
            max_send_sge: 1,
            max_recv_sge: 1,
            max_inline_data: 0,
        }
    }
}

/// A reliable-connected queue pair (`IBV_QPT_RC`) whose sends and receives complete on one CQ,
/// with its number, the port it is bound to, and the CQ and PD it uses.
///
/// Created in RESET; [`RcQp::to_init`], [`RcQp::to_rtr`] and [`RcQp::to_rts`] connect it with
/// attributes supplied by the caller (the connection manager, or [`loopback`]).
pub(crate) struct RcQp {
    qp: NonNull<ffi::ibv_qp>,
    qpn: u32,
    /// The port the QP was bound to on its way to INIT, 0 before.
    port: AtomicU8,
    cq: CompletionQueue,
    pd: ProtectionDomain,
}

// SAFETY: See `Context`: verbs objects are thread-safe; `port` is atomic.
unsafe impl Send for RcQp {}
// SAFETY: See `Context`: every method is a thread-safe verb or touches only atomics.
unsafe impl Sync for RcQp {}

impl Drop for RcQp {
    fn drop(&mut self) {
        // SAFETY: `qp` is destroyed only here, before `self.cq` and `self.pd` release the CQ and
        // PD it uses (fields drop after `drop` returns).
        let _ = unsafe { ffi::cepm_verbs_destroy_qp(self.qp.as_ptr()) };
    }
}

impl RcQp {
    /// Creates an RC QP in `pd` whose send and receive completions go to `cq`, with at least
    /// `caps`.
    pub(crate) fn create(
        pd: &ProtectionDomain,
        cq: &CompletionQueue,
        caps: QpCaps,
    ) -> io::Result<Self> {
        if !Arc::ptr_eq(&pd.inner.ctx, &cq.inner._ctx) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the PD and the CQ belong to different devices",
            ));
        }
        let mut raw = ffi::cepm_verbs_qp_caps {
            max_send_wr: caps.max_send_wr,
            max_recv_wr: caps.max_recv_wr,
            max_send_sge: caps.max_send_sge,
            max_recv_sge: caps.max_recv_sge,
            max_inline_data: caps.max_inline_data,
        };
        let (pd_ptr, cq_ptr) = (pd.inner.ptr.as_ptr(), cq.inner.cq.as_ptr());
        // SAFETY: the PD and CQ are alive (we hold them) and on the same device; `raw` is
        // readable and writable for the call.
        let qp = unsafe { ffi::cepm_verbs_create_rc_qp(pd_ptr, cq_ptr, &mut raw) };
        let qp = non_null(qp, "ibv_create_qp(RC)")?;
        // SAFETY: `qp` was just created.
        let qpn = unsafe { ffi::cepm_verbs_qp_num(qp.as_ptr()) };
        Ok(Self {
            qp,
            qpn,
            port: AtomicU8::new(0),
            cq: cq.clone(),
            pd: pd.clone(),
        })
    }

    fn raw(&self) -> *mut ffi::ibv_qp {
        self.qp.as_ptr()
    }

    /// The QP number, which the peer needs (as its `dest_qpn`, or in a SIDR_REP).
    pub(crate) fn qp_num(&self) -> u32 {
        self.qpn
    }

    /// The port the QP was bound to on its way to INIT, if it got there.
    pub(crate) fn port(&self) -> Option<u8> {
        Some(self.port.load(Ordering::Acquire)).filter(|&p| p != 0)
    }

    /// The CQ the QP's completions go to.
    pub(crate) fn cq(&self) -> &CompletionQueue {
        &self.cq
    }

    /// The QP's protection domain.
    pub(crate) fn pd(&self) -> &ProtectionDomain {
        &self.pd
    }

    /// The current state, as the device reports it.
    pub(crate) fn state(&self) -> io::Result<QpState> {
        let mut raw = 0u32;
        // SAFETY: the QP is alive and `raw` is writable for the call.
        let rc = unsafe { ffi::cepm_verbs_query_qp_state(self.raw(), &mut raw) };
        errno_result(rc, "ibv_query_qp")?;
        Ok(QpState::from_raw(raw))
    }

    fn device(&self) -> Device {
        Device {
            ctx: Arc::clone(&self.pd.inner.ctx),
        }
    }

    /// Checks `port` and `pkey_index` against the device before the move to INIT.
    fn check_port(&self, port: u8, pkey_index: u16) -> io::Result<()> {
        if port == 0 {
            return Err(InvalidAttr::new("port", "port numbers start at 1").into());
        }
        let port_attr = self.device().query_port(port)?;
        if pkey_index >= port_attr.pkey_tbl_len {
            return Err(InvalidAttr::new(
                "pkey_index",
                format!(
                    "{pkey_index} is beyond the port's P_Key table ({} entries)",
                    port_attr.pkey_tbl_len
                ),
            )
            .into());
        }
        Ok(())
    }

    /// Any state → ERR: every outstanding work request completes with a flush error, which
    /// wakes whoever waits on the CQ (used to abort a transfer, and before disconnecting).
    pub(crate) fn to_error(&self) -> io::Result<()> {
        // SAFETY: the QP is alive.
        let rc = unsafe { ffi::cepm_verbs_modify_qp_err(self.raw()) };
        errno_result(rc, &format!("QP {} to ERR", self.qpn))
    }

    fn check_mr(&self, mr: &MemoryRegion, len: usize) -> io::Result<u32> {
        check_mr(&self.pd, mr, len)
    }

    /// RESET → INIT: binds the QP to `port` and P_Key `pkey_index`, granting peers `access`
    /// (remote read/write/atomic; SEND/RECV need none).
    pub(crate) fn to_init(&self, port: u8, pkey_index: u16, access: AccessFlags) -> io::Result<()> {
        self.check_port(port, pkey_index)?;
        // SAFETY: the QP is alive; the shim only reads its scalar arguments.
        let rc =
            unsafe { ffi::cepm_verbs_modify_qp_init(self.raw(), port, pkey_index, access.bits()) };
        errno_result(rc, &format!("QP {} to INIT", self.qpn))?;
        self.port.store(port, Ordering::Release);
        Ok(())
    }

    /// INIT → RTR with `attr`, checked first against the port the QP is bound to.
    pub(crate) fn to_rtr(&self, attr: &RtrAttr) -> io::Result<()> {
        let port = self
            .port()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "to_rtr before to_init"))?;
        if attr.ah.port != port {
            return Err(InvalidAttr::new(
                "ah.port",
                format!("{} is not the QP's port {port}", attr.ah.port),
            )
            .into());
        }
        attr.validate_for_port(&self.device().query_port(port)?)?;
        let raw = attr.to_raw();
        // SAFETY: the QP is alive and `raw` is readable for the call.
        let rc = unsafe { ffi::cepm_verbs_modify_qp_rtr(self.raw(), &raw) };
        errno_result(rc, &format!("QP {} to RTR", self.qpn))
    }

    /// RTR → RTS with `attr`.
    pub(crate) fn to_rts(&self, attr: &RtsAttr) -> io::Result<()> {
        attr.validate()?;
        let raw = attr.to_raw();
        // SAFETY: the QP is alive and `raw` is readable for the call.
        let rc = unsafe { ffi::cepm_verbs_modify_qp_rts(self.raw(), &raw) };
        errno_result(rc, &format!("QP {} to RTS", self.qpn))
    }

    /// Posts a SEND of the first `len` bytes of `mr`, with `wr_id`; `signaled` asks for a
    /// completion on success (failures always complete).
    ///
    /// # Safety
    ///
    /// The device reads the bytes asynchronously: until the request's completion has been
    /// polled (or the QP is destroyed), the caller must not modify them, which Rust cannot
    /// check because `mr` is only borrowed for the call.
    pub(crate) unsafe fn post_send(
        &self,
        mr: &MemoryRegion,
        len: usize,
        wr_id: u64,
        signaled: bool,
    ) -> io::Result<()> {
        let len = self.check_mr(mr, len)?;
        // SAFETY: the QP is alive, the buffer is `len` bytes of a region registered in the QP's
        // PD, and the caller keeps it unmodified until the completion.
        let rc = unsafe {
            ffi::cepm_verbs_post_send(
                self.raw(),
                wr_id,
                mr.buf.as_ptr().cast(),
                len,
                mr.lkey,
                i32::from(signaled),
            )
        };
        errno_result(rc, &format!("ibv_post_send on QP {}", self.qpn))
    }

    /// Posts a receive into the whole of `mr`, with `wr_id`.
    ///
    /// # Safety
    ///
    /// The device writes the buffer asynchronously: until the request's completion has been
    /// polled (or the QP is destroyed, or `mr` dropped), the caller must not read or write it,
    /// which Rust cannot check because `mr` is only borrowed for the call.
    pub(crate) unsafe fn post_recv(&self, mr: &MemoryRegion, wr_id: u64) -> io::Result<()> {
        let len = self.check_mr(mr, mr.len())?;
        // SAFETY: the QP is alive, the buffer is a region registered in the QP's PD, and the
        // caller leaves it alone until the completion.
        let rc = unsafe {
            ffi::cepm_verbs_post_recv(self.raw(), wr_id, mr.buf.as_ptr().cast(), len, mr.lkey)
        };
        errno_result(rc, &format!("ibv_post_recv on QP {}", self.qpn))
    }
}

/// Checks that `mr` belongs to `pd` and has `len` bytes, and returns `len` as a work request
/// length.
fn check_mr(pd: &ProtectionDomain, mr: &MemoryRegion, len: usize) -> io::Result<u32> {
    if !Arc::ptr_eq(&mr.pd, &pd.inner) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "memory region of another protection domain",
        ));
    }
    if len > mr.len() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "length beyond the memory region",
        ));
    }
    u32::try_from(len)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "message longer than 4 GiB"))
}

// ---------------------------------------------------------------------------------------------
// Ping-pong.
// ---------------------------------------------------------------------------------------------

/// Which end of a ping-pong a QP is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Role {
    /// Sends each message, then waits for the echo and verifies it.
    Client,
    /// Verifies each message and echoes it back.
    Server,
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Role::Client => "client",
            Role::Server => "server",
        })
    }
}

/// How a ping-pong runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PingPongConfig {
    /// Round trips.
    pub(crate) iterations: u64,
    /// How long to wait for any one completion before giving up.
    pub(crate) timeout: Duration,
    /// Fault injection for tests: the server flips one byte of its echo in this iteration, so
    /// the client must report a mismatch.
    pub(crate) corrupt_echo_at: Option<u64>,
}

/// What a ping-pong did, from one end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stats {
    /// This end's role.
    pub(crate) role: Role,
    /// Completed round trips.
    pub(crate) iterations: u64,
    /// Bytes per message.
    pub(crate) size: usize,
    /// Payload bytes sent.
    pub(crate) bytes_sent: u64,
    /// Payload bytes received.
    pub(crate) bytes_received: u64,
    /// Received payload bytes checked against the expected pattern.
    pub(crate) bytes_verified: u64,
    /// Time from the first send (client) or the start of waiting (server) to the last completion.
    pub(crate) elapsed: Duration,
}

impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let secs = self.elapsed.as_secs_f64();
        let rtt_us = if self.iterations == 0 {
            0.0
        } else {
            secs * 1e6 / self.iterations as f64
        };
        write!(
            f,
            "{}: {} iterations x {} bytes, sent {} bytes, received {} bytes, verified {} bytes in {:.3} s ({:.1} us/round trip)",
            self.role, self.iterations, self.size, self.bytes_sent, self.bytes_received, self.bytes_verified, secs, rtt_us
        )
    }
}

/// The byte at `offset` of the message of iteration `iteration`: a pattern that differs between
/// iterations and along the message, so that stale, shifted or mixed-up data is caught.
pub(crate) fn payload_byte(iteration: u64, offset: usize) -> u8 {
    let mut x = iteration.wrapping_mul(0x9e37_79b9_7f4a_7c15)
        ^ (offset as u64).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 31;
    x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
    (x >> 56) as u8
}

/// Fills `buf` with the message of `iteration`.
pub(crate) fn fill_payload(buf: &mut [u8], iteration: u64) {
    for (offset, b) in buf.iter_mut().enumerate() {
        *b = payload_byte(iteration, offset);
    }
}

/// A received byte that is not what the sender wrote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Mismatch {
    /// Offset in the message.
    pub(crate) offset: usize,
    /// What the pattern has there.
    pub(crate) expected: u8,
    /// What arrived.
    pub(crate) got: u8,
}

/// The first byte of `buf` that differs from the message of `iteration`, if any.
pub(crate) fn check_payload(buf: &[u8], iteration: u64) -> Option<Mismatch> {
    buf.iter().enumerate().find_map(|(offset, &got)| {
        let expected = payload_byte(iteration, offset);
        (got != expected).then_some(Mismatch {
            offset,
            expected,
            got,
        })
    })
}

/// Checks a ping-pong message size against the port's largest message.
pub(crate) fn check_message_size(size: usize, max_msg_sz: u32) -> Result<(), InvalidAttr> {
    if size == 0 {
        return Err(InvalidAttr::new("size", "messages must be at least 1 byte"));
    }
    if size > PingPong::MAX_SIZE {
        return Err(InvalidAttr::new(
            "size",
            format!(
                "{size} bytes is above the {} byte limit",
                PingPong::MAX_SIZE
            ),
        ));
    }
    if u64::try_from(size).unwrap_or(u64::MAX) > u64::from(max_msg_sz) {
        return Err(InvalidAttr::new(
            "size",
            format!("{size} bytes is above the port's largest message ({max_msg_sz})"),
        ));
    }
    Ok(())
}

/// Completion bookkeeping of one end of a ping-pong.
#[derive(Clone, Copy, Debug, Default)]
struct Progress {
    sends_posted: u64,
    sends_done: u64,
    recvs_done: u64,
    recv_posted: bool,
    last_recv_len: u32,
}

/// One end of a ping-pong over an RC QP: a send and a receive buffer registered in the QP's PD,
/// with one receive always posted ahead of the peer's next message.
///
/// Create both ends while their QPs are in INIT (or later), before the peer can send: the first
/// receive is posted here, so no message meets an empty receive queue.
pub(crate) struct PingPong<'q> {
    qp: &'q RcQp,
    size: usize,
    send: MemoryRegion,
    recv: MemoryRegion,
    progress: Progress,
}

impl<'q> PingPong<'q> {
    /// Largest message size accepted, 1 GiB.
    pub(crate) const MAX_SIZE: usize = 1 << 30;

    /// Prepares a ping-pong of `size`-byte messages on `qp`, which must be in INIT or later,
    /// and posts the first receive.
    pub(crate) fn new(qp: &'q RcQp, size: usize) -> io::Result<Self> {
        let port = qp.port().ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidInput, "move the QP to INIT first")
        })?;
        check_message_size(size, qp.device().query_port(port)?.max_msg_sz)?;
        let send = MemoryRegion::new(qp.pd(), size, AccessFlags::NONE)?;
        let recv = MemoryRegion::new(qp.pd(), size, AccessFlags::LOCAL_WRITE)?;
        let mut pp = Self {
            qp,
            size,
            send,
            recv,
            progress: Progress::default(),
        };
        pp.post_recv()?;
        Ok(pp)
    }

    fn post_recv(&mut self) -> io::Result<()> {
        // SAFETY: `recv` is not touched again until `account` has seen this receive complete
        // (`recv_posted` goes false), and it is dropped only after the QP no longer uses it or
        // with the QP's request flushed (deregistration stops device access).
        unsafe { self.qp.post_recv(&self.recv, self.progress.recvs_done) }?;
        self.progress.recv_posted = true;
        Ok(())
    }

    fn post_send(&mut self, iteration: u64) -> io::Result<()> {
        // SAFETY: `send` is written again only after this send's completion (`sends_done`
        // catches up with `sends_posted`): see `run`.
        unsafe { self.qp.post_send(&self.send, self.size, iteration, true) }?;
        self.progress.sends_posted += 1;
        Ok(())
    }

    /// Takes one completion of this QP and accounts for it.
    fn account(&mut self, timeout: Duration) -> io::Result<()> {
        let wc = self.qp.cq().wait(timeout)?;
        if wc.qp_num != self.qp.qp_num() {
            return Err(io::Error::other(format!(
                "completion for QP {} on QP {}'s CQ",
                wc.qp_num,
                self.qp.qp_num()
            )));
        }
        let wc = wc.check()?;
        let p = &mut self.progress;
        match wc.opcode {
            WcOpcode::Send if p.sends_done < p.sends_posted && wc.wr_id == p.sends_done => {
                p.sends_done += 1
            }
            WcOpcode::Recv if p.recv_posted && wc.wr_id == p.recvs_done => {
                p.recv_posted = false;
                p.recvs_done += 1;
                p.last_recv_len = wc.byte_len;
            }
            _ => {
                return Err(io::Error::other(format!(
                    "unexpected completion {wc:?} (state {p:?})"
                )))
            }
        }
        Ok(())
    }

    /// Accounts for completions until `done` holds.
    fn wait_until(
        &mut self,
        timeout: Duration,
        done: impl Fn(&Progress) -> bool,
    ) -> io::Result<()> {
        while !done(&self.progress) {
            self.account(timeout)?;
        }
        Ok(())
    }

    /// Checks the message just received as that of `iteration`.
    fn verify_received(&self, iteration: u64, what: &str) -> io::Result<()> {
        let len = self.progress.last_recv_len as usize;
        if len != self.size {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "{what} {iteration}: received {len} bytes, expected {}",
                    self.size
                ),
            ));
        }
        match check_payload(&self.recv.as_slice()[..self.size], iteration) {
            None => Ok(()),
            Some(m) => Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "payload mismatch in {what} {iteration} at byte {}: expected {:#04x}, got {:#04x}",
                    m.offset, m.expected, m.got
                ),
            )),
        }
    }

    /// Runs the ping-pong as `role` and returns its statistics. Any payload mismatch, short
    /// message, failed or unexpected completion, or timeout ends it with an error.
    pub(crate) fn run(mut self, role: Role, config: &PingPongConfig) -> io::Result<Stats> {
        let n = config.iterations;
        let size = self.size as u64;
        let start = Instant::now();
        for i in 0..n {
            match role {
                Role::Client => {
                    // The previous send completed (below), so the buffer is ours again.
                    let len = self.size;
                    fill_payload(&mut self.send.as_mut_slice()[..len], i);
                    self.post_send(i)?;
                    self.wait_until(config.timeout, |p| {
                        p.sends_done == i + 1 && p.recvs_done == i + 1
                    })?;
                    self.verify_received(i, "echo")?;
                }
                Role::Server => {
                    // Wait for message i and for the echo of i - 1 to have left the send buffer.
                    self.wait_until(config.timeout, |p| {
                        p.recvs_done == i + 1 && p.sends_done == i
                    })?;
                    self.verify_received(i, "message")?;
                    let len = self.size;
                    let (recv, send) = (&self.recv, &mut self.send);
                    send.as_mut_slice()[..len].copy_from_slice(&recv.as_slice()[..len]);
                    if config.corrupt_echo_at == Some(i) {
                        send.as_mut_slice()[len / 2] ^= 0x20;
                    }
                }
            }
            // The next message may arrive as soon as the peer has this one: receive first.
            if i + 1 < n {
                self.post_recv()?;
            }
            if role == Role::Server {
                self.post_send(i)?;
            }
        }
        self.wait_until(config.timeout, |p| p.sends_done == p.sends_posted)?;
        let bytes = n * size;
        Ok(Stats {
            role,
            iterations: n,
            size: self.size,
            bytes_sent: bytes,
            bytes_received: bytes,
            bytes_verified: bytes,
            elapsed: start.elapsed(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mtu_converts_between_bytes_and_the_ibv_enum() {
        let raw: Vec<u32> = Mtu::ALL.iter().map(|m| m.to_raw()).collect();
        assert_eq!(raw, [1, 2, 3, 4, 5]);
        for m in Mtu::ALL {
            assert_eq!(Mtu::from_raw(m.to_raw()), Some(m));
            assert_eq!(Mtu::from_bytes(m.bytes()), Some(m));
            assert_eq!(m.to_string().parse::<Mtu>(), Ok(m));
        }
        assert_eq!(Mtu::from_raw(0), None);
        assert_eq!(Mtu::from_raw(6), None);
        assert_eq!(Mtu::from_bytes(1500), None);
        assert!("9000".parse::<Mtu>().is_err());
        assert!("x".parse::<Mtu>().is_err());
        assert!(Mtu::Mtu256 < Mtu::Mtu4096);
    }

    #[test]
    fn access_flags_combine() {
        let f = AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_READ;
        assert_eq!(f.bits(), 1 | 4);
        assert_eq!(AccessFlags::default(), AccessFlags::NONE);
    }

    fn roce_port() -> PortAttr {
        PortAttr {
            state: PortState::Active,
            max_mtu: Some(Mtu::Mtu4096),
            active_mtu: Some(Mtu::Mtu1024),
            gid_tbl_len: 16,
            max_msg_sz: 0x8000_0000,
            pkey_tbl_len: 1,
            lid: 0,
            link_layer: LinkLayer::Ethernet,
        }
    }

    fn rtr() -> RtrAttr {
        let mut dgid = [0u8; 16];
        dgid[10..].copy_from_slice(&[0xff, 0xff, 10, 77, 0, 1]);
        RtrAttr {
            dest_qpn: 17,
            rq_psn: MAX_PSN,
            path_mtu: Mtu::Mtu1024,
            max_dest_rd_atomic: 1,
            min_rnr_timer: 12,
            ah: AhAttr::roce(dgid, 1, 1),
        }
    }

    fn field(r: Result<(), InvalidAttr>) -> &'static str {
        r.expect_err("should be rejected").field
    }

    #[test]
    fn rtr_attributes_are_range_checked() {
        let port = roce_port();
        assert_eq!(rtr().validate_for_port(&port), Ok(()));
        assert_eq!(
            field(
                RtrAttr {
                    dest_qpn: 1,
                    ..rtr()
                }
                .validate()
            ),
            "dest_qpn"
        );
        assert_eq!(
            field(
                RtrAttr {
                    dest_qpn: MAX_QPN + 1,
                    ..rtr()
                }
                .validate()
            ),
            "dest_qpn"
        );
        assert_eq!(
            field(
                RtrAttr {
                    rq_psn: MAX_PSN + 1,
                    ..rtr()
                }
                .validate()
            ),
            "rq_psn"
        );
        assert_eq!(
            field(
                RtrAttr {
                    min_rnr_timer: 32,
                    ..rtr()
                }
                .validate()
            ),
            "min_rnr_timer"
        );
        let ah = |f: fn(&mut AhAttr)| {
            let mut a = rtr();
            f(&mut a.ah);
            a
        };
        assert_eq!(field(ah(|a| a.port = 0).validate()), "ah.port");
        assert_eq!(
            field(ah(|a| a.flow_label = 0x10_0000).validate()),
            "ah.flow_label"
        );
        assert_eq!(ah(|a| a.flow_label = 0xf_ffff).validate(), Ok(()));
        assert_eq!(field(ah(|a| a.sl = 16).validate()), "ah.sl");
        assert_eq!(
            field(ah(|a| a.src_path_bits = 0x80).validate()),
            "ah.src_path_bits"
        );
        // Without a GRH the DLID must be a unicast LID.
        assert_eq!(field(ah(|a| a.global = false).validate()), "ah.dlid");
        assert_eq!(
            field(ah(|a| (a.global, a.dlid) = (false, 0xc000)).validate()),
            "ah.dlid"
        );
        assert_eq!(ah(|a| (a.global, a.dlid) = (false, 5)).validate(), Ok(()));
    }

    #[test]
    fn rtr_attributes_are_checked_against_the_port() {
        let port = roce_port();
        // RoCE needs a GRH even with a valid DLID.
        let mut no_grh = rtr();
        (no_grh.ah.global, no_grh.ah.dlid) = (false, 5);
        assert_eq!(field(no_grh.validate_for_port(&port)), "ah.global");
        let ib = PortAttr {
            link_layer: LinkLayer::InfiniBand,
            lid: 3,
            ..port
        };
        assert_eq!(no_grh.validate_for_port(&ib), Ok(()));
        // The source GID must exist; the path MTU cannot exceed the port's.
        let mut bad_gid = rtr();
        bad_gid.ah.sgid_index = 16;
        assert_eq!(field(bad_gid.validate_for_port(&port)), "ah.sgid_index");
        assert_eq!(
            field(
                RtrAttr {
                    path_mtu: Mtu::Mtu2048,
                    ..rtr()
                }
                .validate_for_port(&port)
            ),
            "path_mtu"
        );
        assert_eq!(
            RtrAttr {
                path_mtu: Mtu::Mtu256,
                ..rtr()
            }
            .validate_for_port(&port),
            Ok(())
        );
        let unknown_mtu = PortAttr {
            active_mtu: None,
            ..port
        };
        assert_eq!(
            RtrAttr {
                path_mtu: Mtu::Mtu4096,
                ..rtr()
            }
            .validate_for_port(&unknown_mtu),
            Ok(())
        );
    }

    #[test]
    fn rts_attributes_are_range_checked() {
        let rts = RtsAttr {
            sq_psn: MAX_PSN,
            timeout: 31,
            retry_cnt: 7,
            rnr_retry: 7,
            max_rd_atomic: 1,
        };
        assert_eq!(rts.validate(), Ok(()));
        assert_eq!(
            field(
                RtsAttr {
                    sq_psn: MAX_PSN + 1,
                    ..rts
                }
                .validate()
            ),
            "sq_psn"
        );
        assert_eq!(field(RtsAttr { timeout: 32, ..rts }.validate()), "timeout");
        assert_eq!(
            field(
                RtsAttr {
                    retry_cnt: 8,
                    ..rts
                }
                .validate()
            ),
            "retry_cnt"
        );
        assert_eq!(
            field(
                RtsAttr {
                    rnr_retry: 8,
                    ..rts
                }
                .validate()
            ),
            "rnr_retry"
        );
    }

    #[test]
    fn invalid_attributes_become_invalid_input_errors() {
        let e: io::Error = InvalidAttr::new("rq_psn", "too big").into();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        assert_eq!(e.to_string(), "invalid rq_psn: too big");
    }

    #[test]
    fn attributes_reach_the_shim_structs_field_by_field() {
        let a = rtr();
        let raw = a.to_raw();
        assert_eq!((raw.dest_qpn, raw.rq_psn, raw.path_mtu), (17, MAX_PSN, 3));
        assert_eq!((raw.max_dest_rd_atomic, raw.min_rnr_timer), (1, 12));
        assert_eq!(raw.ah.dgid, a.ah.dgid);
        assert_eq!(
            (
                raw.ah.sgid_index,
                raw.ah.hop_limit,
                raw.ah.is_global,
                raw.ah.port_num
            ),
            (1, 64, 1, 1)
        );
        let rts = RtsAttr {
            sq_psn: 5,
            timeout: 14,
            retry_cnt: 7,
            rnr_retry: 6,
            max_rd_atomic: 2,
        }
        .to_raw();
        assert_eq!(
            (
                rts.sq_psn,
                rts.timeout,
                rts.retry_cnt,
                rts.rnr_retry,
                rts.max_rd_atomic
            ),
            (5, 14, 7, 6, 2)
        );
    }

    #[test]
    fn payloads_differ_between_iterations_and_offsets() {
        let mut a = vec![0u8; 4096];
        let mut b = vec![0u8; 4096];
        fill_payload(&mut a, 0);
        fill_payload(&mut b, 1);
        assert_ne!(a, b);
        assert_eq!(check_payload(&a, 0), None);
        assert!(check_payload(&a, 1).is_some());
        // Not a constant or short-period fill: a shifted copy does not verify either.
        assert!(check_payload(&a[1..], 0).is_some());
        let distinct: std::collections::HashSet<u8> = a.iter().copied().collect();
        assert!(
            distinct.len() > 200,
            "{} distinct byte values",
            distinct.len()
        );
    }

    #[test]
    fn a_flipped_byte_is_reported_where_it_is() {
        let mut buf = vec![0u8; 1000];
        fill_payload(&mut buf, 42);
        buf[500] ^= 0x20;
        let m = check_payload(&buf, 42).unwrap();
        assert_eq!(m.offset, 500);
        assert_eq!(m.got, m.expected ^ 0x20);
    }

    #[test]
    fn message_sizes_are_checked() {
        assert_eq!(check_message_size(1, 4096), Ok(()));
        assert_eq!(check_message_size(4096, 4096), Ok(()));
        assert_eq!(field(check_message_size(0, 4096)), "size");
        assert_eq!(field(check_message_size(4097, 4096)), "size");
        assert_eq!(
            field(check_message_size(PingPong::MAX_SIZE + 1, u32::MAX)),
            "size"
        );
    }

    #[test]
    fn work_completions_decode_and_describe_failures() {
        let raw = ffi::cepm_verbs_wc {
            wr_id: 7,
            status: 0,
            opcode: 128,
            byte_len: 64,
            qp_num: 17,
            ..Default::default()
        };
        let wc = WorkCompletion::from_raw(&raw);
        assert_eq!(
            (wc.opcode, wc.byte_len, wc.qp_num),
            (WcOpcode::Recv, 64, 17)
        );
        assert!(wc.check().is_ok());
        let flushed = WorkCompletion {
            status: 5,
            opcode: WcOpcode::Send,
            ..wc
        };
        assert!(flushed.is_flushed());
        let e = flushed.check().unwrap_err();
        assert_eq!(CompletionError::of(&e), Some(&flushed));
        assert!(e.to_string().contains("Flush"), "{e}");
        assert_eq!(CompletionError::of(&io::Error::other("x")), None);
        assert_eq!(
            WorkCompletion::from_raw(&ffi::cepm_verbs_wc { opcode: 0, ..raw }).opcode,
            WcOpcode::Send
        );
        assert_eq!(
            WorkCompletion::from_raw(&ffi::cepm_verbs_wc { opcode: 1, ..raw }).opcode,
            WcOpcode::RdmaWrite
        );
        assert_eq!(
            WorkCompletion::from_raw(&ffi::cepm_verbs_wc { opcode: 2, ..raw }).opcode,
            WcOpcode::RdmaRead
        );
        assert_eq!(
            WorkCompletion::from_raw(&ffi::cepm_verbs_wc { opcode: 3, ..raw }).opcode,
            WcOpcode::Other(3)
        );
    }

    #[test]
    fn opening_a_missing_device_fails_cleanly() {
        // Works with or without RDMA devices on the host: the name never exists.
        let e = Device::open("cepm-no-such-device")
            .err()
            .expect("no such device");
        assert!(e.to_string().contains("cepm-no-such-device"), "{e}");
    }
}
