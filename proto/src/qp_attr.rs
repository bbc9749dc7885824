//! QP attributes derived from the CM exchange, for INIT, RTR and RTS on both sides
//! (`ib_cm_init_qp_attr`, `drivers/infiniband/core/cm.c`).
//!
//! PSN convention (what interoperates with Linux): a message's StartingPSN is the PSN the
//! *sender's receive queue* expects. So the active side has `rq_psn = REQ.StartingPSN` and
//! `sq_psn = REP.StartingPSN`, and the passive side the reverse (`ib_send_cm_req`,
//! `cm_req_handler`, `ib_send_cm_rep`, `cm_rep_handler` in `cm.c`). Each side's responder
//! resources are the peer's initiator depth and vice versa (`cm_format_req_event`,
//! `cm_req_handler`, `cm_rep_handler` in `cm.c`).
//!
//! The address vector itself (GIDs, DMAC, hop limit) is the module's business; this file
//! produces the scalar attributes and the mask bits, with the values of
//! `enum ib_qp_attr_mask` (`include/rdma/ib_verbs.h`).

use super::rep::Rep;
use super::req::{Req, Transport};
use super::state::State;
use super::timing;

/// `IB_QP_STATE`.
pub const MASK_STATE: u32 = 1;
/// `IB_QP_ACCESS_FLAGS`.
pub const MASK_ACCESS_FLAGS: u32 = 1 << 3;
/// `IB_QP_PKEY_INDEX`.
pub const MASK_PKEY_INDEX: u32 = 1 << 4;
/// `IB_QP_PORT`.
pub const MASK_PORT: u32 = 1 << 5;
/// `IB_QP_AV`.
pub const MASK_AV: u32 = 1 << 7;
/// `IB_QP_PATH_MTU`.
pub const MASK_PATH_MTU: u32 = 1 << 8;
/// `IB_QP_TIMEOUT`.
pub const MASK_TIMEOUT: u32 = 1 << 9;
/// `IB_QP_RETRY_CNT`.
pub const MASK_RETRY_CNT: u32 = 1 << 10;
/// `IB_QP_RNR_RETRY`.
pub const MASK_RNR_RETRY: u32 = 1 << 11;
/// `IB_QP_RQ_PSN`.
pub const MASK_RQ_PSN: u32 = 1 << 12;
/// `IB_QP_MAX_QP_RD_ATOMIC`.
pub const MASK_MAX_QP_RD_ATOMIC: u32 = 1 << 13;
/// `IB_QP_ALT_PATH`.
pub const MASK_ALT_PATH: u32 = 1 << 14;
/// `IB_QP_MIN_RNR_TIMER`.
pub const MASK_MIN_RNR_TIMER: u32 = 1 << 15;
/// `IB_QP_SQ_PSN`.
pub const MASK_SQ_PSN: u32 = 1 << 16;
/// `IB_QP_MAX_DEST_RD_ATOMIC`.
pub const MASK_MAX_DEST_RD_ATOMIC: u32 = 1 << 17;
/// `IB_QP_PATH_MIG_STATE`.
pub const MASK_PATH_MIG_STATE: u32 = 1 << 18;
/// `IB_QP_DEST_QPN`.
pub const MASK_DEST_QPN: u32 = 1 << 20;

/// `IB_ACCESS_REMOTE_WRITE`.
pub const ACCESS_REMOTE_WRITE: u32 = 1 << 1;
/// `IB_ACCESS_REMOTE_READ`.
pub const ACCESS_REMOTE_READ: u32 = 1 << 2;
/// `IB_ACCESS_REMOTE_ATOMIC`.
pub const ACCESS_REMOTE_ATOMIC: u32 = 1 << 3;
/// `IB_ACCESS_FLUSH_GLOBAL`.
pub const ACCESS_FLUSH_GLOBAL: u32 = 1 << 8;
/// `IB_ACCESS_FLUSH_PERSISTENT`.
pub const ACCESS_FLUSH_PERSISTENT: u32 = 1 << 9;

/// `IB_MIG_REARM`.
pub const MIG_REARM: u8 = 1;

/// QP type of the local QP.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum QpType {
    /// Reliable connected.
    Rc,
    /// Unreliable connected.
    Uc,
    /// XRC initiator (active side of an XRC REQ).
    XrcIni,
    /// XRC target (passive side of an XRC REQ).
    XrcTgt,
}

/// Target QP state of a derivation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum QpState {
    /// INIT (`IB_QPS_INIT` = 1).
    Init,
    /// RTR (`IB_QPS_RTR` = 2).
    Rtr,
    /// RTS (`IB_QPS_RTS` = 3).
    Rts,
}

impl QpState {
    /// `enum ib_qp_state` value.
    pub const fn to_ib(self) -> u8 {
        match self {
            Self::Init => 1,
            Self::Rtr => 2,
            Self::Rts => 3,
        }
    }
}

/// Why attributes cannot be derived.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum QpAttrError {
    /// The CEP's state does not allow this QP state (Linux `-EINVAL`).
    WrongState(State),
    /// The PSN or peer QPN this QP state needs is not known yet (active RTR before the REP
    /// arrives, passive RTR before the request is claimed).
    NotNegotiated,
    /// A REP that would announce another receive PSN than the one RTR was given with: the
    /// peer's first packets would be out of sequence.
    PsnGivenOut,
}

/// PSNs are 24 bits wide.
pub const PSN_MASK: u32 = 0xff_ffff;

/// What the CM has negotiated for one connection, from this side's point of view.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Negotiated {
    /// Local QP type.
    pub qp_type: QpType,
    /// Peer QPN (RTR `dest_qp_num`), once known.
    pub remote_qpn: Option<u32>,
    /// PSN our send queue starts at, once known.
    pub sq_psn: Option<u32>,
    /// PSN our receive queue expects, once known.
    pub rq_psn: Option<u32>,
    /// RDMA read/atomic requests we accept as responder (RTR `max_dest_rd_atomic`).
    pub responder_resources: u8,
    /// RDMA read/atomic requests we issue (RTS `max_rd_atomic`).
    pub initiator_depth: u8,
    /// Transport retry count.
    pub retry_count: u8,
    /// RNR retry count.
    pub rnr_retry_count: u8,
    /// Path MTU enum.
    pub path_mtu: u8,
    /// Local ACK timeout exponent (`av.timeout`): QP `timeout` and timewait.
    pub ack_timeout: u8,
    /// P_Key index of the port.
    pub pkey_index: u16,
    /// The connection's P_Key: the REQ's PartitionKey.
    pub pkey: u16,
    /// The primary path's packet lifetime (IBTA exponent): the caller's on the active side,
    /// the REQ's LocalAckTimeout − 1 on the passive side.
    pub packet_life_time: u8,
    /// Port number.
    pub port_num: u8,
    /// Whether an alternate path is loaded.
    pub has_alternate_path: bool,
    /// Whether the device supports FLUSH (adds the FLUSH access flags).
    pub device_supports_flush: bool,
    /// Whether RTR attributes, and with them `rq_psn`, were given out: the REP must then
    /// announce that PSN.
    pub rq_psn_given_out: bool,
}

impl Negotiated {
    /// The active side after sending `req` on a path with `packet_life_time`
    /// (`ib_send_cm_req`, `cm.c`).
    pub fn active(req: &Req, packet_life_time: u8, pkey_index: u16, port_num: u8) -> Self {
        Self {
            qp_type: match req.transport {
                Transport::Rc => QpType::Rc,
                Transport::Uc => QpType::Uc,
                Transport::Xrc => QpType::XrcIni,
            },
            remote_qpn: None,
            sq_psn: None,
            rq_psn: Some(req.starting_psn),
            responder_resources: req.responder_resources,
            initiator_depth: req.initiator_depth,
            retry_count: req.retry_count,
            rnr_retry_count: 0,
            path_mtu: req.path_mtu,
            ack_timeout: timing::av_timeout_from_packet_life_time(packet_life_time),
            pkey_index,
            pkey: req.pkey,
            packet_life_time,
            port_num,
            has_alternate_path: false,
            device_supports_flush: false,
            rq_psn_given_out: false,
        }
    }

    /// The active side after receiving `rep` (`cm_rep_handler`, `cm.c`).
    pub fn apply_received_rep(&mut self, rep: &Rep) {
        self.remote_qpn = Some(rep.sender_qpn(self.qp_type == QpType::XrcIni));
        self.initiator_depth = rep.responder_resources;
        self.responder_resources = rep.initiator_depth;
        self.sq_psn = Some(rep.starting_psn);
        self.rnr_retry_count = rep.rnr_retry_count;
        self.ack_timeout =
            timing::active_ack_timeout_after_rep(rep.target_ack_delay, self.ack_timeout);
    }

    /// The passive side after receiving `req` (`cm_req_handler`, `cm.c`); the AV
    /// timeout is `PLT + 1` with `PLT = LocalAckTimeout − 1` (`cm_format_paths_from_req`).
    pub fn passive(req: &Req, pkey_index: u16, port_num: u8) -> Self {
        let plt = timing::passive_packet_life_time(req.primary_path.local_ack_timeout);
        Self {
            qp_type: match req.transport {
                Transport::Rc => QpType::Rc,
                Transport::Uc => QpType::Uc,
                Transport::Xrc => QpType::XrcTgt,
            },
            remote_qpn: Some(req.local_qpn),
            sq_psn: Some(req.starting_psn),
            rq_psn: None,
            responder_resources: req.initiator_depth,
            initiator_depth: req.responder_resources,
            retry_count: req.retry_count,
            rnr_retry_count: req.rnr_retry_count,
            path_mtu: req.path_mtu,
            ack_timeout: timing::av_timeout_from_packet_life_time(plt),
            pkey_index,
            pkey: req.pkey,
            packet_life_time: plt,
            port_num,
            has_alternate_path: false,
            device_supports_flush: false,
            rq_psn_given_out: false,
        }
    }

    /// The passive side once its request is claimed: our RQ PSN is `psn` (its low 24 bits)
    /// from then on, so that RTR and RTS can be derived before the REP is prepared, as
    /// `cm.c` allows in REQ_RCVD. rdma_cm draws that PSN when it makes the ID (`seq_num` in
    /// `__rdma_create_id`, `cma.c`), puts it in RTR (`rdma_init_qp_attr`) and announces it
    /// in the REP (`cma_accept_ib`).
    pub fn choose_rq_psn(&mut self, psn: u32) {
        self.rq_psn = Some(psn & PSN_MASK);
    }

    /// Derives the attributes for `target` as [`derive()`] does, and records that RTR's
    /// receive PSN was given out.
    ///
    /// # Errors
    ///
    /// Those of [`derive()`].
    pub fn give_out(&mut self, state: State, target: QpState) -> Result<QpAttr, QpAttrError> {
        let a = derive(state, target, self)?;
        if target == QpState::Rtr {
            self.rq_psn_given_out = true;
        }
        Ok(a)
    }

    /// Whether a REP may announce `starting_psn`: any PSN (it becomes our RQ PSN,
    /// [`Self::apply_sent_rep`]) until RTR's is given out, and only that one after.
    ///
    /// # Errors
    ///
    /// [`QpAttrError::PsnGivenOut`] for another PSN than the one RTR was given with.
    pub fn check_rep_psn(&self, starting_psn: u32) -> Result<(), QpAttrError> {
        match self.rq_psn {
            Some(psn) if self.rq_psn_given_out && psn != starting_psn => {
                Err(QpAttrError::PsnGivenOut)
            }
            _ => Ok(()),
        }
    }

    /// The passive side once its REP is prepared or sent (`ib_send_cm_rep`,
    /// `cm.c`): our RQ PSN and the resources we settled on.
    pub fn apply_sent_rep(&mut self, rep: &Rep) {
        self.rq_psn = Some(rep.starting_psn);
        self.initiator_depth = rep.initiator_depth;
        self.responder_resources = rep.responder_resources;
    }
}

/// Attributes for `ib_modify_qp`: set fields are meaningful where `mask` says so.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct QpAttr {
    /// `IB_QP_*` mask bits.
    pub mask: u32,
    /// Target state (`enum ib_qp_state`).
    pub qp_state: u8,
    /// `IB_ACCESS_*` flags (INIT).
    pub access_flags: u32,
    /// P_Key index (INIT).
    pub pkey_index: u16,
    /// Port number (INIT).
    pub port_num: u8,
    /// Path MTU (RTR).
    pub path_mtu: u8,
    /// Destination QPN (RTR).
    pub dest_qp_num: u32,
    /// Receive PSN (RTR).
    pub rq_psn: u32,
    /// Responder resources (RTR, RC/XRC target).
    pub max_dest_rd_atomic: u8,
    /// Minimum RNR NAK timer (RTR): 0, i.e. 655.36 ms, as Linux.
    pub min_rnr_timer: u8,
    /// Send PSN (RTS).
    pub sq_psn: u32,
    /// Transport retry count (RTS).
    pub retry_cnt: u8,
    /// RNR retry count (RTS).
    pub rnr_retry: u8,
    /// Initiator depth (RTS).
    pub max_rd_atomic: u8,
    /// Local ACK timeout exponent (RTS).
    pub timeout: u8,
    /// Path migration state (RTS with an alternate path).
    pub path_mig_state: u8,
}

/// Derives the attributes that move the QP to `target` while the CEP is in `state`.
///
/// # Errors
///
/// [`QpAttrError::WrongState`] where Linux returns `-EINVAL`; [`QpAttrError::NotNegotiated`]
/// for RTR/RTS before the needed PSN/QPN is known.
pub fn derive(state: State, target: QpState, n: &Negotiated) -> Result<QpAttr, QpAttrError> {
    let allowed = match target {
        QpState::Init => state.allows_qp_init(),
        QpState::Rtr | QpState::Rts => state.allows_qp_rtr_rts(),
    };
    if !allowed {
        return Err(QpAttrError::WrongState(state));
    }
    let mut a = QpAttr {
        qp_state: target.to_ib(),
        ..QpAttr::default()
    };
    match target {
        // cm_init_qp_init_attr in cm.c.
        QpState::Init => {
            a.mask = MASK_STATE | MASK_ACCESS_FLAGS | MASK_PKEY_INDEX | MASK_PORT;
            a.access_flags = ACCESS_REMOTE_WRITE;
            if n.responder_resources > 0 {
                a.access_flags |= ACCESS_REMOTE_READ | ACCESS_REMOTE_ATOMIC;
                if n.device_supports_flush {
                    a.access_flags |= ACCESS_FLUSH_GLOBAL | ACCESS_FLUSH_PERSISTENT;
                }
            }
            a.pkey_index = n.pkey_index;
            a.port_num = n.port_num;
        }
        // cm_init_qp_rtr_attr in cm.c.
        QpState::Rtr => {
            let (Some(dest), Some(rq_psn)) = (n.remote_qpn, n.rq_psn) else {
                return Err(QpAttrError::NotNegotiated);
            };
            a.mask = MASK_STATE | MASK_AV | MASK_PATH_MTU | MASK_DEST_QPN | MASK_RQ_PSN;
            a.path_mtu = n.path_mtu;
            a.dest_qp_num = dest;
            a.rq_psn = rq_psn;
            if matches!(n.qp_type, QpType::Rc | QpType::XrcTgt) {
                a.mask |= MASK_MAX_DEST_RD_ATOMIC | MASK_MIN_RNR_TIMER;
                a.max_dest_rd_atomic = n.responder_resources;
                a.min_rnr_timer = 0;
            }
            if n.has_alternate_path {
                a.mask |= MASK_ALT_PATH;
            }
        }
        // cm_init_qp_rts_attr in cm.c.
        QpState::Rts => {
            let Some(sq_psn) = n.sq_psn else {
                return Err(QpAttrError::NotNegotiated);
            };
            a.mask = MASK_STATE | MASK_SQ_PSN;
            a.sq_psn = sq_psn;
            if matches!(n.qp_type, QpType::Rc | QpType::XrcIni) {
                a.mask |= MASK_RETRY_CNT | MASK_RNR_RETRY | MASK_MAX_QP_RD_ATOMIC;
                a.retry_cnt = n.retry_count;
                a.rnr_retry = n.rnr_retry_count;
                a.max_rd_atomic = n.initiator_depth;
            }
            if n.qp_type != QpType::Uc {
                a.mask |= MASK_TIMEOUT;
                a.timeout = n.ack_timeout;
            }
            if n.has_alternate_path {
                a.mask |= MASK_PATH_MIG_STATE;
                a.path_mig_state = MIG_REARM;
            }
        }
    }
    Ok(a)
}
