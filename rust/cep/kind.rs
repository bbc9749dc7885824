// SPDX-License-Identifier: GPL-2.0

//! What a CEP is for, with the fields only that kind of CEP has. A CEP starts [`Kind::Idle`]
//! (created by userspace) or as the kind its listener spawned; leaving IDLE by `LISTEN`,
//! `CONNECT` or `SIDR_REQ` makes it a fresh [`Listener`], [`Connection`] or [`Sidr`].
//! A connection back in IDLE (after a REJ or the end of timewait) keeps its kind, so that
//! what it learnt stays readable, until the next of those calls replaces it.

use kernel::{
    prelude::*,
    sync::Arc, //
};

use crate::{
    proto::{
        listen_scope::ListenScope,
        mad::AttrId,
        qp_attr::Negotiated,
        rep::Rep,
        req::Req,
        sidr_rep::SidrRep,
        sidr_req::SidrReq, //
    },
    tables::PeerId,
    uapi,
    users::UserCharge, //
};

use super::Cep;

/// A CEP's kind, and its own fields.
// A connection is the large kind (its outgoing private data), and unboxed on purpose: a CEP
// lives in one allocation (its `Arc`), and boxing would add a second one, and a failure path,
// to every connection's setup, to spare listeners and SIDR CEPs, which are few.
#[allow(clippy::large_enum_variant)]
pub(super) enum Kind {
    /// Created, not yet listening, connecting or requesting.
    Idle,
    Listener(Listener),
    Connection(Connection),
    Sidr(Sidr),
}

/// A listener's fields.
pub(super) struct Listener {
    /// The mask its service ID is matched under.
    pub(super) mask: u64,
    /// The requests' addresses it takes.
    pub(super) scope: ListenScope,
    /// REQs (or SIDR_REQs) not claimed yet, oldest first, at most [`super::backlog`].
    pub(super) pending: KVec<Pending>,
}

/// A CEP a REQ (or SIDR_REQ) spawned, in its listener's backlog until claimed.
pub(super) struct Pending {
    pub(super) cep: Arc<Cep>,
    /// The CEP counted against the listener's user, as one it owns: unclaimed, it is charged
    /// to no memory cgroup, and a user's own REQs would otherwise pin a CEP for every place in
    /// every backlog it holds. Given back when the CEP leaves the backlog (claimed, the claim
    /// counts it anew).
    pub(super) _counted: UserCharge,
}

/// The fields of either side of a connection.
pub(super) struct Connection {
    /// Passive side: the REQ as the user will see it.
    pub(super) req: Option<KBox<uapi::cepm_req_info>>,
    /// Passive side: the REQ's primary path as this side sees it (`GET_REQUEST`).
    pub(super) req_path: uapi::cepm_path_rec,
    /// The key this CEP holds in the remote-QPN table while its connection is live.
    pub(super) remote_qpn_key: Option<PeerId>,
    /// QP parameters agreed so far (from the REQ and REP).
    pub(super) negotiated: Option<Negotiated>,
    /// Messages waiting for the transition that sends them.
    pub(super) req_msg: Option<KBox<Req>>,
    pub(super) rep_msg: Option<KBox<Rep>>,
    /// The user's private data for the RTU, DREQ or DREP it came with, and for nothing else
    /// (a DREQ sent by destroy must not carry the RTU's).
    pub(super) out_pdata: OutPdata,
    /// Our QPN, as the REQ or REP told the peer (a DREQ must name it).
    pub(super) local_qpn: u32,
    /// Reason of the last REJ received.
    pub(super) last_rej_reason: u16,
    /// Service timeout of the last MRA received (IBTA exponent).
    pub(super) mra_service_timeout: u8,
    /// Service timeout of the MRAs we send: Linux's `CM_MRA_SETTING` (24, about 69 s)
    /// unless the owner chose another (`CEPM_IOC_PREPARE_MRA`).
    pub(super) mra_timeout_out: u8,
    /// The MAD attribute modifier of our REQ or REP: its ECE options (the VendorID is in the
    /// message itself).
    pub(super) ece_attr_mod: u32,
    /// The peer's ECE, from its REQ or REP.
    pub(super) remote_ece: Ece,
    /// The connection parameters of the peer's REQ or REP (`GET_PRIVATE_DATA`).
    pub(super) remote_params: uapi::cepm_conn_params,
}

/// ECE (Enhanced Connection Establishment) as a REQ or REP carries it: the VendorID field
/// and the MAD header's attribute modifier (`cm_format_req_event` and `cm_format_rep_event`
/// in drivers/infiniband/core/cm.c read them so).
#[derive(Clone, Copy, Default)]
pub(super) struct Ece {
    pub(super) vendor_id: u32,
    pub(super) attr_mod: u32,
}

/// The fields of service ID resolution, on either side.
#[derive(Default)]
pub(super) struct Sidr {
    /// Passive side: the SIDR_REQ as the user will see it.
    pub(super) req: Option<KBox<uapi::cepm_req_info>>,
    /// Active side: the request to send.
    pub(super) req_msg: Option<KBox<SidrReq>>,
    /// Passive side: the answer to send.
    pub(super) rep_msg: Option<KBox<SidrRep>>,
    /// Active side: what the answer said.
    pub(super) qpn: u32,
    pub(super) qkey: u32,
    pub(super) status: u8,
}

impl Listener {
    pub(super) fn new(mask: u64, scope: ListenScope) -> Self {
        Self {
            mask,
            scope,
            pending: KVec::new(),
        }
    }
}

impl Connection {
    /// A connection that has agreed nothing yet.
    pub(super) fn new() -> Self {
        Self {
            req: None,
            req_path: uapi::cepm_path_rec::default(),
            remote_qpn_key: None,
            negotiated: None,
            req_msg: None,
            rep_msg: None,
            out_pdata: OutPdata::new(),
            local_qpn: 0,
            last_rej_reason: 0,
            mra_service_timeout: 0,
            mra_timeout_out: 24,
            ece_attr_mod: 0,
            remote_ece: Ece::default(),
            remote_params: uapi::cepm_conn_params::default(),
        }
    }
}

impl Kind {
    pub(super) fn listener(&self) -> Option<&Listener> {
        match self {
            Kind::Listener(l) => Some(l),
            _ => None,
        }
    }

    pub(super) fn listener_mut(&mut self) -> Option<&mut Listener> {
        match self {
            Kind::Listener(l) => Some(l),
            _ => None,
        }
    }

    pub(super) fn connection(&self) -> Option<&Connection> {
        match self {
            Kind::Connection(c) => Some(c),
            _ => None,
        }
    }

    pub(super) fn connection_mut(&mut self) -> Option<&mut Connection> {
        match self {
            Kind::Connection(c) => Some(c),
            _ => None,
        }
    }

    pub(super) fn sidr(&self) -> Option<&Sidr> {
        match self {
            Kind::Sidr(s) => Some(s),
            _ => None,
        }
    }

    pub(super) fn sidr_mut(&mut self) -> Option<&mut Sidr> {
        match self {
            Kind::Sidr(s) => Some(s),
            _ => None,
        }
    }

    /// The request a passive CEP was born from, as the user will see it.
    pub(super) fn request_info(&self) -> Option<&uapi::cepm_req_info> {
        match self {
            Kind::Connection(c) => c.req.as_deref(),
            Kind::Sidr(s) => s.req.as_deref(),
            Kind::Idle | Kind::Listener(_) => None,
        }
    }

    /// The QP parameters of a connection, once agreed.
    pub(super) fn negotiated(&self) -> Option<&Negotiated> {
        self.connection()?.negotiated.as_ref()
    }

    pub(super) fn negotiated_mut(&mut self) -> Option<&mut Negotiated> {
        self.connection_mut()?.negotiated.as_mut()
    }
}

/// The private data the user gave for one outgoing message.
pub(super) struct OutPdata {
    /// The message it is for; `None` before any.
    attr: Option<AttrId>,
    len: usize,
    data: [u8; uapi::CEPM_PDATA_MAX as usize],
}

impl OutPdata {
    fn new() -> Self {
        Self {
            attr: None,
            len: 0,
            data: [0; uapi::CEPM_PDATA_MAX as usize],
        }
    }

    pub(super) fn set(&mut self, attr: AttrId, pdata: &[u8]) {
        let len = pdata.len().min(self.data.len());
        self.data[..len].copy_from_slice(&pdata[..len]);
        self.len = len;
        self.attr = Some(attr);
    }

    /// The private data for a message `attr`: empty unless the user gave it for that one
    /// (a resent RTU keeps its own).
    pub(super) fn for_msg(&self, attr: AttrId) -> &[u8] {
        if self.attr != Some(attr) {
            return &[];
        }
        self.data.get(..self.len).unwrap_or(&[])
    }
}
