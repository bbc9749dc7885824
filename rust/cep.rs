// SPDX-License-Identifier: GPL-2.0

//! A connection endpoint (CEP): one side of one connection, or a listener.
//!
//! The protocol core decides every state change ([`state::transition`]); this file keeps what
//! the decision needs (peer, private data, owner) under the CEP's own spinlock and carries
//! out the resulting actions. Sends happen under that lock, as Linux's `cm_send_rej_locked`
//! does, so a send and the state it belongs to cannot be reordered.
//!
//! Lock order: CEP → tables, CEP → owner file. Never a CEP lock while holding a file or table
//! lock, and never two CEP locks at once.

use kernel::{
    impl_has_delayed_work, new_delayed_work, new_spinlock,
    prelude::*,
    rbtree::RBTreeNodeReservation,
    sync::{
        Arc,
        SpinLock, //
    },
    time::msecs_to_jiffies,
    workqueue::{
        self,
        DelayedWork,
        WorkItem, //
    },
};

use crate::{
    file::CepmFile,
    monitor,
    port::CmPort,
    proto::{
        cm_mad::{
            CmMad,
            CmMsg, //
        },
        drep::Drep,
        dreq::Dreq,
        mad::{
            AttrId,
            MAD_SIZE, //
        },
        mra::Mra,
        msg_code::MessageCode,
        path::CmPath,
        pdata::PrivateData,
        qp_attr::{
            self,
            Negotiated,
            QpState, //
        },
        rej::{
            Rej,
            REJ_PRIVATE_DATA_SIZE, //
        },
        rej_match::RejTarget,
        rep::Rep,
        req::{
            Req,
            Transport, //
        },
        rtu::Rtu,
        sidr_rep::SidrRep,
        sidr_req::SidrReq,
        state::{
            self,
            Action,
            Event,
            Outgoing,
            State,
            UserEvent, //
        },
        timing::{
            self,
            RetryTimer, //
        },
    },
    shim::{
        AddressHandle,
        AhInfo,
        OutstandingSend,
        SendOwner, //
    },
    tables::{
        self,
        PeerTable, //
    },
    uapi, //
};

/// Who a CEP's events go to.
pub(crate) struct Owner {
    pub(crate) file: Arc<CepmFile>,
    pub(crate) handle: u32,
    pub(crate) context: u64,
}

/// The other side of a connection.
struct Peer {
    comm_id: u32,
    ca_guid: u64,
    port: Arc<CmPort>,
    /// Where our MADs to the peer go (from the REQ's GRH for a passive CEP).
    ah: Arc<AddressHandle>,
    /// What `ah` points at, read when it was made: QP attributes need it, and nothing may
    /// touch the AH outside the CEP lock (device removal takes it away under that lock).
    ah_info: AhInfo,
}

/// What became of a REQ offered to a listener.
pub(crate) enum Spawned {
    /// A new, unclaimed CEP for it.
    New(Arc<Cep>),
    /// It duplicates a REQ that already has a CEP (which has handled the duplicate).
    Duplicate,
    /// Its QP is already connected (to `old`): a stale connection. The REQ gets REJ 10 and
    /// `old` is disconnected.
    Stale(Arc<Cep>),
}

/// The private data the user gave for one outgoing message.
struct OutPdata {
    /// The message it is for; `None` before any.
    attr: Option<AttrId>,
    len: usize,
    data: [u8; uapi::CEPM_PDATA_MAX as usize],
}

impl OutPdata {
    fn set(&mut self, attr: AttrId, pdata: &[u8]) {
        let len = pdata.len().min(self.data.len());
        self.data[..len].copy_from_slice(&pdata[..len]);
        self.len = len;
        self.attr = Some(attr);
    }

    /// The private data for a message `attr`: empty unless the user gave it for that one
    /// (a resent RTU keeps its own).
    fn for_msg(&self, attr: AttrId) -> &[u8] {
        if self.attr != Some(attr) {
            return &[];
        }
        self.data.get(..self.len).unwrap_or(&[])
    }
}

/// What the user put in a REJ.
pub(crate) struct RejectArgs<'a> {
    pub(crate) reason: u16,
    pub(crate) ari: &'a [u8],
    pub(crate) pdata: &'a [u8],
}

/// The private data of the last message received (kept until the next one replaces it).
struct ReceivedPdata {
    attr: u16,
    len: u8,
    data: [u8; uapi::CEPM_PDATA_MAX as usize],
}

/// The fields of [`Cep`] protected by its lock.
struct CepInner {
    sm: state::Cep,
    /// `None` while unclaimed (born from a listen) and after destroy.
    owner: Option<Owner>,
    service_id: u64,
    /// Listeners: the mask their service ID is matched under.
    listen_mask: u64,
    /// The key this CEP holds in the remote-ID table, or (SIDR) in the SIDR table, while its
    /// connection or request lives.
    remote_key: Option<(PeerTable, (u32, u64))>,
    /// The key this CEP holds in the remote-QPN table while its connection is live.
    remote_qpn_key: Option<(u32, u64)>,
    peer: Option<Peer>,
    /// Listener: REQs not claimed yet, oldest first.
    pending: KVec<Arc<Cep>>,
    /// Passive side: the REQ as the user will see it.
    req: Option<KBox<uapi::cepm_req_info>>,
    pdata: ReceivedPdata,
    /// Reason of the last REJ received.
    last_rej_reason: u16,
    /// Events raised while unclaimed, delivered when claimed.
    parked_events: KVec<uapi::cepm_event>,
    /// QP parameters agreed so far (from the REQ and REP).
    negotiated: Option<Negotiated>,
    /// Messages waiting for the transition that sends them.
    req_msg: Option<KBox<Req>>,
    rep_msg: Option<KBox<Rep>>,
    /// The user's private data for the RTU, DREQ or DREP it came with, and for nothing else
    /// (a DREQ sent by destroy must not carry the RTU's).
    out_pdata: OutPdata,
    /// Our QPN, as the REQ or REP told the peer (a DREQ must name it).
    local_qpn: u32,
    /// The retried MAD in flight, if any, and how it is retried.
    msg: Option<OutstandingSend>,
    /// Service timeout of the last MRA received (IBTA exponent).
    mra_service_timeout: u8,
    /// Service timeout of the MRAs we send: Linux's `CM_MRA_SETTING` (24, about 69 s)
    /// unless the owner chose another (`CEPM_IOC_PREPARE_MRA`).
    mra_timeout_out: u8,
    /// SIDR: the request to send, the answer to send, and what the answer we got said.
    sidr_req_msg: Option<KBox<SidrReq>>,
    sidr_rep_msg: Option<KBox<SidrRep>>,
    remote_qkey: u32,
    sidr_qpn: u32,
    sidr_status: u8,
    /// Why the last retried MAD failed (a positive errno): ETIMEDOUT when its retries ran
    /// out, EIO when the device could not send it. The *_ERROR events carry it.
    send_error: u32,
    send_seq: u64,
    retry: RetryTimer,
    /// The TID answers carry: that of the last request this CEP sent or took (Linux's
    /// `cm_id_priv->tid`); see [`AttrId::is_request`].
    tid: u64,
}

/// A connection endpoint.
#[pin_data]
pub(crate) struct Cep {
    /// Our comm ID on the wire; also the key of the local-ID table.
    pub(crate) local_id: u32,
    #[pin]
    inner: SpinLock<CepInner>,
    /// Fires at the end of timewait.
    #[pin]
    timewait: DelayedWork<Cep>,
}

impl_has_delayed_work! {
    impl HasDelayedWork<Self> for Cep { self.timewait }
}

/// Most REQs a listener keeps waiting for `GET_REQUEST`; beyond it, new REQs are dropped and
/// the peers retry them, so a flood of REQs cannot pin unbounded memory and AHs.
pub(crate) const BACKLOG: usize = 1024;

/// Longest timewait: the protocol's value comes from the peer's ACK timeout (up to
/// 4.096 µs · 2^31, about 2.4 hours); an owner should hear TIMEWAIT_EXIT within a bound.
const TIMEWAIT_MAX_MS: u32 = 30_000;

/// Timewait's end. Destroy cancels a pending one and waits for a running one
/// ([`Cep::cancel_timewait`]), so no timewait work outlives its CEP's destroy, and module
/// unload, which comes after every CEP's destroy, has none to wait for.
impl WorkItem for Cep {
    type Pointer = Arc<Cep>;

    fn run(this: Arc<Cep>) {
        this.timewait_expired();
    }
}

/// Cuts every CEP off `port`, whose device is being removed: their address handles go now
/// and their owners get `DEVICE_REMOVAL`. The agents are already unregistered. The port
/// knows every CEP with an AH on it (each was recorded when its AH was made), and none can
/// be made there from now on.
pub(crate) fn release_port(port: &CmPort) {
    let Some(users) = port.release_users() else {
        return;
    };
    for (_, cep) in users.iter() {
        cep.device_removed(port);
    }
}

impl Cep {
    fn new(local_id: u32, sm: state::Cep, owner: Option<Owner>) -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(Self {
                local_id,
                timewait <- new_delayed_work!("Cep::timewait"),
                inner <- new_spinlock!(CepInner {
                    sm,
                    owner,
                    service_id: 0,
                    listen_mask: u64::MAX,
                    remote_key: None,
                    remote_qpn_key: None,
                    peer: None,
                    pending: KVec::new(),
                    req: None,
                    pdata: ReceivedPdata { attr: 0, len: 0, data: [0; uapi::CEPM_PDATA_MAX as usize] },
                    last_rej_reason: 0,
                    parked_events: KVec::new(),
                    negotiated: None,
                    req_msg: None,
                    rep_msg: None,
                    out_pdata: OutPdata {
                        attr: None,
                        len: 0,
                        data: [0; uapi::CEPM_PDATA_MAX as usize],
                    },
                    local_qpn: 0,
                    msg: None,
                    mra_service_timeout: 0,
                    mra_timeout_out: 24,
                    sidr_req_msg: None,
                    sidr_rep_msg: None,
                    remote_qkey: 0,
                    sidr_qpn: 0,
                    sidr_status: 0,
                    send_error: ETIMEDOUT.to_errno().unsigned_abs(),
                    send_seq: 0,
                    retry: RetryTimer { timeout_ms: 0, retries: 0 },
                    tid: 0,
                }, "Cep::inner"),
            }),
            GFP_KERNEL,
        )
    }

    /// A new idle CEP owned by `owner`.
    pub(crate) fn create(owner: Owner) -> Result<Arc<Self>> {
        tables::insert_new_local(|id| Self::new(id, state::Cep::new(), Some(owner)))
    }

    /// Applies `event`; on success runs the actions and returns the new state.
    fn apply(
        self: &Arc<Self>,
        inner: &mut CepInner,
        event: Event,
        rej: Option<&RejectArgs<'_>>,
    ) -> Result<State> {
        let t = state::transition(inner.sm, event).map_err(|_| EINVAL)?;
        let before = inner.sm.state;
        inner.sm = t.next;
        for action in t.actions.as_slice() {
            self.run(inner, *action, rej);
        }
        if inner.sm.state == State::Idle && before != State::Idle {
            // Back to idle (a REJ, a send that ran out of retries, the end of timewait): the
            // connection is over, and its peer's IDs and QP may be used by a new one
            // (`cm_reset_to_idle`; the QPN went already if it passed through timewait).
            self.forget_peer_keys(inner);
        }
        Ok(inner.sm.state)
    }

    /// Takes this CEP out of the tables keyed by its peer.
    fn forget_peer_keys(&self, inner: &mut CepInner) {
        if let Some((table, key)) = inner.remote_key.take() {
            tables::remove_peer(table, key, self);
        }
        if let Some(key) = inner.remote_qpn_key.take() {
            tables::remove_peer(PeerTable::Qpn, key, self);
        }
    }

    /// Carries out one action of a transition.
    fn run(self: &Arc<Self>, inner: &mut CepInner, action: Action, rej: Option<&RejectArgs<'_>>) {
        match action {
            Action::Send(Outgoing::Rej {
                reason,
                rejected,
                zero_local_id,
                ari_ca_guid,
            }) => self.send_rej(inner, reason, rejected, zero_local_id, ari_ca_guid, rej),
            Action::Deliver(event) => self.deliver(inner, event),
            Action::SendRetried(Outgoing::Req) => {
                let msg = inner.req_msg.take().map(|m| CmMsg::Req(*m));
                self.send_retried(inner, msg);
            }
            Action::SendRetried(Outgoing::Rep) => {
                let msg = inner.rep_msg.as_deref().map(|m| CmMsg::Rep(*m));
                self.send_retried(inner, msg);
            }
            // RTU and DREP carry the same fields: the comm IDs and the user's private data.
            Action::Send(out @ (Outgoing::Rtu | Outgoing::Drep)) => {
                let msg = inner.peer.as_ref().map(|p| {
                    let (local_comm_id, remote_comm_id) = (self.local_id, p.comm_id);
                    let attr = if out == Outgoing::Rtu {
                        AttrId::Rtu
                    } else {
                        AttrId::Drep
                    };
                    let private_data = PrivateData::new(inner.out_pdata.for_msg(attr))
                        .unwrap_or(PrivateData::empty());
                    if out == Outgoing::Rtu {
                        CmMsg::Rtu(Rtu {
                            local_comm_id,
                            remote_comm_id,
                            private_data,
                        })
                    } else {
                        CmMsg::Drep(Drep {
                            local_comm_id,
                            remote_comm_id,
                            private_data,
                        })
                    }
                });
                self.send_once(inner, msg);
            }
            Action::Send(Outgoing::Dreq) => {
                let msg = self.dreq(inner);
                self.send_once(inner, msg);
            }
            Action::SendRetried(Outgoing::Dreq) => {
                let msg = self.dreq(inner);
                self.send_retried(inner, msg);
            }
            Action::ArmTimewait => {
                // The QP may be reused from now on (Linux: `cm_cleanup_timewait` on entry).
                if let Some(key) = inner.remote_qpn_key.take() {
                    tables::remove_peer(PeerTable::Qpn, key, self);
                }
                self.arm_timewait(inner);
            }
            Action::SendRetried(Outgoing::SidrReq) => {
                let msg = inner.sidr_req_msg.take().map(|m| CmMsg::SidrReq(*m));
                self.send_retried(inner, msg);
            }
            Action::Send(Outgoing::SidrRep { status }) => {
                // The user's answer, or (destroy of an unanswered SIDR_REQ) a bare status.
                let Some(peer) = &inner.peer else {
                    return;
                };
                let mut rep = inner.sidr_rep_msg.as_deref().copied().unwrap_or_default();
                rep.request_id = peer.comm_id;
                rep.status = status;
                rep.service_id = inner.service_id;
                // For the request's retries, should this answer be lost.
                peer.port
                    .remember_sidr_answer((peer.comm_id, peer.ca_guid), rep);
                self.send_once(inner, Some(CmMsg::SidrRep(rep)));
            }
            Action::Send(Outgoing::MraReq) => self.send_mra(inner, MessageCode::Req),
            Action::Send(Outgoing::MraRep) => self.send_mra(inner, MessageCode::Rep),
            // The MRA's time, plus the path's: `cm_mra_handler` in drivers/infiniband/core/cm.c.
            Action::ExtendSend => {
                let av_timeout = inner.negotiated.as_ref().map_or(0, |n| n.ack_timeout);
                let timeout = inner
                    .retry
                    .after_mra(inner.mra_service_timeout, av_timeout)
                    .timeout_ms;
                if let Some(msg) = &inner.msg {
                    let _ = msg.extend(timeout);
                }
            }
            // Lazy: the queued work finds the CEP out of timewait and does nothing.
            Action::CancelTimewait => {}
            Action::CancelSend => {
                if let Some(msg) = inner.msg.take() {
                    msg.cancel();
                }
            }
            Action::StopListening => {
                tables::remove_listener(self, inner.service_id, inner.listen_mask)
            }
            Action::CountDuplicate => {
                if let Some(peer) = &inner.peer {
                    peer.port.count_duplicate();
                }
            }
            // A listener's spawns: `cm::req_received` makes the new CEP (it needs the MAD),
            // and `offer` asks the listener's rule whether it takes it; `apply` never sees
            // these.
            Action::SpawnConnection | Action::SpawnSidr => {}
            // Pairings no transition asks for (proto's state_table test
            // `sends_pair_messages_as_the_module_expects`): nothing to carry out.
            Action::Send(Outgoing::Req | Outgoing::Rep | Outgoing::SidrReq)
            | Action::SendRetried(
                Outgoing::Rtu
                | Outgoing::Drep
                | Outgoing::MraReq
                | Outgoing::MraRep
                | Outgoing::SidrRep { .. }
                | Outgoing::Rej { .. },
            ) => pr_err!(
                "cep {:#x}: the protocol core asked for {:?}\n",
                self.local_id,
                action
            ),
        }
    }

    /// Queues `event` for the owner (or parks it until the CEP is claimed).
    fn deliver(&self, inner: &mut CepInner, event: UserEvent) {
        let (kind, status) = match event {
            UserEvent::RejReceived => (
                uapi::CEPM_EVENT_REJ_RECEIVED,
                u32::from(inner.last_rej_reason),
            ),
            UserEvent::RepReceived => (uapi::CEPM_EVENT_REP_RECEIVED, 0),
            UserEvent::RtuReceived | UserEvent::UserEstablished => {
                (uapi::CEPM_EVENT_ESTABLISHED, 0)
            }
            UserEvent::ReqError => (uapi::CEPM_EVENT_REQ_ERROR, inner.send_error),
            UserEvent::RepError => (uapi::CEPM_EVENT_REP_ERROR, inner.send_error),
            UserEvent::DreqReceived => (uapi::CEPM_EVENT_DREQ_RECEIVED, 0),
            UserEvent::DrepReceived => (uapi::CEPM_EVENT_DREP_RECEIVED, 0),
            UserEvent::DreqError => (uapi::CEPM_EVENT_DREQ_ERROR, inner.send_error),
            UserEvent::TimewaitExit => (uapi::CEPM_EVENT_TIMEWAIT_EXIT, 0),
            UserEvent::MraReceived => (
                uapi::CEPM_EVENT_MRA_RECEIVED,
                u32::from(inner.mra_service_timeout),
            ),
            UserEvent::SidrRepReceived => (
                uapi::CEPM_EVENT_SIDR_REP_RECEIVED,
                u32::from(inner.sidr_status),
            ),
            UserEvent::SidrReqError => (uapi::CEPM_EVENT_SIDR_REQ_ERROR, inner.send_error),
            // On a listener, for the CEP it was offered (`offer`).
            UserEvent::ReqReceived => (uapi::CEPM_EVENT_REQ_RECEIVED, 0),
            UserEvent::SidrReqReceived => (uapi::CEPM_EVENT_SIDR_REQ_RECEIVED, 0),
        };
        inner.deliver_raw(
            self.local_id,
            uapi::cepm_event {
                event: kind,
                status,
                ..Default::default()
            },
        );
    }

    /// The MAD carrying `msg` to the peer; `None` (counted as a send error) if a field is out
    /// of range. A request gets a TID of this CEP's own and makes it the exchange's; an
    /// answer gets the exchange's.
    fn encode_for(&self, inner: &mut CepInner, msg: CmMsg) -> Option<[u8; MAD_SIZE]> {
        let peer = inner.peer.as_ref()?;
        if msg.attr().is_request() {
            inner.tid = peer.port.tid(self.local_id);
        }
        let mut mad = [0u8; MAD_SIZE];
        if CmMad::new(inner.tid, 0, msg).encode(&mut mad).is_err() {
            peer.port.count_tx_error();
            return None;
        }
        Some(mad)
    }

    /// Sends `msg` to the peer once.
    fn send_once(&self, inner: &mut CepInner, msg: Option<CmMsg>) {
        let Some(msg) = msg else {
            return;
        };
        let Some(mad) = self.encode_for(inner, msg) else {
            return;
        };
        if let Some(peer) = &inner.peer {
            peer.port.send_once(&peer.ah, &mad, msg.attr());
        }
    }

    /// Sends an MRA for the peer's `what` (REQ or REP) with the CEP's service timeout.
    fn send_mra(&self, inner: &mut CepInner, what: MessageCode) {
        let msg = inner.peer.as_ref().map(|p| {
            CmMsg::Mra(Mra {
                local_comm_id: self.local_id,
                remote_comm_id: p.comm_id,
                message_mraed: what,
                service_timeout: inner.mra_timeout_out,
                private_data: PrivateData::empty(),
            })
        });
        self.send_once(inner, msg);
    }

    /// The DREQ for this connection: it names the peer's QP.
    fn dreq(&self, inner: &CepInner) -> Option<CmMsg> {
        let peer = inner.peer.as_ref()?;
        let remote_qpn = inner.negotiated.as_ref()?.remote_qpn?;
        let pdata = inner.out_pdata.for_msg(AttrId::Dreq);
        Some(CmMsg::Dreq(Dreq {
            local_comm_id: self.local_id,
            remote_comm_id: peer.comm_id,
            remote_qpn,
            private_data: PrivateData::new(pdata.get(..pdata.len().min(220)).unwrap_or(&[]))
                .unwrap_or(PrivateData::empty()),
        }))
    }

    /// Starts timewait: the module parameter's length, or the protocol's (the QP's local ACK
    /// timeout, `cm_enter_timewait` in drivers/infiniband/core/cm.c).
    fn arm_timewait(self: &Arc<Self>, inner: &CepInner) {
        let ms = match crate::module_parameters::timewait_ms.value() {
            0 => timing::timewait_ms(inner.negotiated.as_ref().map_or(14, |n| n.ack_timeout)),
            ms => ms,
        }
        .min(TIMEWAIT_MAX_MS);
        // Already queued (timewait re-entered before the last one fired): that work ends it,
        // and the clone comes back to be dropped.
        let _ = workqueue::system().enqueue_delayed(self.clone(), msecs_to_jiffies(ms));
    }

    /// Stops this CEP's timewait work (destroy): a pending one is cancelled, a running one
    /// waited for. Sleeps; no lock may be held.
    fn cancel_timewait(self: &Arc<Self>) {
        // SAFETY: `self.timewait` is initialised and lives as long as this `Arc`'s allocation.
        let work = unsafe { DelayedWork::raw_as_work(&self.timewait) };
        // SAFETY: `work` is the `work_struct` of `self.timewait`'s `delayed_work`; we are in
        // process context (destroy) and hold no lock.
        if unsafe { crate::shim::cancel_delayed_work_sync(work.cast()) } {
            // SAFETY: The work was pending: `arm_timewait` queued it with a clone of this
            // `Arc`, leaked with `Arc::into_raw`; cancelling it gave that reference back.
            drop(unsafe { Arc::from_raw(Arc::as_ptr(self)) });
        }
    }

    /// Timewait is over.
    fn timewait_expired(self: &Arc<Self>) {
        let mut inner = self.inner.lock();
        let _ = self.apply(&mut inner, Event::TimewaitExpired, None);
    }

    /// Sends `msg` to the peer, retried with the CEP's retry timer until answered.
    fn send_retried(self: &Arc<Self>, inner: &mut CepInner, msg: Option<CmMsg>) {
        let Some(msg) = msg else {
            return;
        };
        let Some(mad) = self.encode_for(inner, msg) else {
            return;
        };
        let Some(peer) = &inner.peer else {
            return;
        };
        let attr = msg.attr();
        inner.send_seq = inner.send_seq.wrapping_add(1);
        let owner = SendOwner {
            cep: self.clone(),
            seq: inner.send_seq,
        };
        let retry = inner.retry;
        match peer
            .port
            .send_retried(&peer.ah, &mad, attr, retry.timeout_ms, retry.retries, owner)
        {
            Ok(sent) => inner.msg = Some(sent),
            // Nothing will ever answer: fail now as if every retry had run out, so the owner
            // gets its *_ERROR event instead of waiting forever.
            Err(_) => {
                inner.send_error = ETIMEDOUT.to_errno().unsigned_abs();
                let _ = self.apply(inner, Event::SendTimeout, None);
            }
        }
    }

    /// The MAD layer is done with send `seq` of this CEP: answered (cancelled), sent, out of
    /// retries, or failed. Any failure ends the exchange, as in Linux (`cm_process_send_error`
    /// in drivers/infiniband/core/cm.c). The in-tree MAD layer retries a failed
    /// transmit of a retried MAD and reports ETIMEDOUT when its retries run out; any other
    /// error (EIO to the owner) is a fallback, so that the CEP never waits for a send nobody
    /// retries. A flush is a cancel (ours, or the agent going away with the device).
    pub(crate) fn send_done(self: &Arc<Self>, seq: u64, status: i32) {
        let mut inner = self.inner.lock();
        if inner.msg.as_ref().is_none_or(|m| m.seq() != seq) {
            return;
        }
        inner.msg = None;
        if status != 0 && status != ECANCELED.to_errno() {
            let why = if status == ETIMEDOUT.to_errno() {
                ETIMEDOUT
            } else {
                EIO
            };
            inner.send_error = why.to_errno().unsigned_abs();
            let _ = self.apply(&mut inner, Event::SendTimeout, None);
        }
    }

    /// Sends a REJ to the peer: the user's reason, ARI and private data, or the protocol's.
    fn send_rej(
        &self,
        inner: &mut CepInner,
        reason: u16,
        rejected: MessageCode,
        zero_local_id: bool,
        ari_ca_guid: bool,
        args: Option<&RejectArgs<'_>>,
    ) {
        let Some(peer) = &inner.peer else {
            return;
        };
        let mut ari = PrivateData::empty();
        let mut pdata = PrivateData::empty();
        if ari_ca_guid {
            ari = PrivateData::new(&peer.port.ca_guid().to_be_bytes()).unwrap_or(ari);
        }
        if let Some(args) = args {
            ari = PrivateData::new(args.ari).unwrap_or(ari);
            pdata = PrivateData::new(args.pdata).unwrap_or(pdata);
        }
        let msg = CmMsg::Rej(Rej {
            local_comm_id: if zero_local_id { 0 } else { self.local_id },
            remote_comm_id: peer.comm_id,
            message_rejected: rejected,
            reason,
            ari,
            private_data: pdata,
        });
        self.send_once(inner, Some(msg));
    }

    /// Starts listening on `service_id` under `mask`.
    pub(crate) fn listen(self: &Arc<Self>, service_id: u64, mask: u64) -> Result {
        let mut inner = self.inner.lock();
        let t = state::transition(inner.sm, Event::Listen).map_err(|_| EINVAL)?;
        tables::add_listener(service_id, mask, self.clone())?;
        inner.sm = t.next;
        inner.service_id = service_id;
        inner.listen_mask = mask;
        Ok(())
    }

    /// The CEP a listener spawns for a new REQ: unclaimed, in REQ_RCVD, findable by its
    /// peer's IDs. `None` if the REQ duplicates a connection that already exists, which then
    /// gets the duplicate instead.
    pub(crate) fn spawn_from_req(
        port: &Arc<CmPort>,
        ah: Arc<AddressHandle>,
        req: &Req,
        tid: u64,
        device_name: &[u8],
    ) -> Result<Spawned> {
        let mut info = KBox::new(uapi::cepm_req_info::default(), GFP_KERNEL)?;
        info.service_id = req.service_id;
        info.remote_ca_guid = req.local_ca_guid;
        info.remote_comm_id = req.local_comm_id;
        info.remote_qpn = req.local_qpn;
        info.starting_psn = req.starting_psn;
        info.responder_resources = req.responder_resources;
        info.initiator_depth = req.initiator_depth;
        info.path_mtu = req.path_mtu;
        info.transport = match req.transport {
            Transport::Rc => uapi::CEPM_TRANSPORT_RC,
            Transport::Uc => uapi::CEPM_TRANSPORT_UC,
            // Answered with REJ 9 before any CEP is made (`cm::req_received`).
            Transport::Xrc => return Err(EINVAL),
        } as u8;
        info.remote_cm_response_timeout = req.remote_cm_response_timeout;
        info.local_cm_response_timeout = req.local_cm_response_timeout;
        info.retry_count = req.retry_count;
        info.rnr_retry_count = req.rnr_retry_count;
        info.max_cm_retries = req.max_cm_retries;
        info.srq = req.srq.into();
        info.port_num = u8::try_from(port.num()).unwrap_or(0);
        info.pdata_len = uapi::CEPM_REQ_PDATA_MAX as u8;
        let pdata = req.private_data.as_bytes();
        let len = pdata.len().min(info.pdata.len());
        info.pdata[..len].copy_from_slice(&pdata[..len]);
        for (dst, src) in info.dev_name.iter_mut().zip(device_name.iter()) {
            *dst = *src;
        }

        let ah_info = ah.info()?;
        let reservation = RBTreeNodeReservation::new(GFP_KERNEL)?;
        let qpn_reservation = RBTreeNodeReservation::new(GFP_KERNEL)?;
        let user_node = RBTreeNodeReservation::new(GFP_KERNEL)?;
        let (sm, actions) = state::Cep::spawned_from_req();
        let cep = tables::insert_new_local(|id| Self::new(id, sm, None))?;
        let key = (req.local_comm_id, req.local_ca_guid);
        if let Some(existing) = tables::insert_peer(PeerTable::CommId, key, &cep, reservation) {
            tables::remove_local(cep.local_id);
            existing.duplicate_req();
            return Ok(Spawned::Duplicate);
        }
        let qpn_key = (req.local_qpn, req.local_ca_guid);
        if let Some(old) = tables::insert_peer(PeerTable::Qpn, qpn_key, &cep, qpn_reservation) {
            tables::remove_peer(PeerTable::CommId, key, &cep);
            tables::remove_local(cep.local_id);
            return Ok(Spawned::Stale(old));
        }
        {
            let mut inner = cep.inner.lock();
            if let Err(e) = port.adopt_user(&cep, user_node) {
                // The device is going away: nothing of this REQ may stay.
                drop(inner);
                tables::remove_peer(PeerTable::Qpn, qpn_key, &cep);
                tables::remove_peer(PeerTable::CommId, key, &cep);
                tables::remove_local(cep.local_id);
                return Err(e);
            }
            inner.service_id = req.service_id;
            inner.peer = Some(Peer {
                comm_id: req.local_comm_id,
                ca_guid: req.local_ca_guid,
                port: port.clone(),
                ah,
                ah_info,
            });
            inner.remote_key = Some((PeerTable::CommId, key));
            inner.tid = tid;
            inner.remote_qpn_key = Some(qpn_key);
            inner.set_pdata(AttrId::Req, req.private_data.as_bytes());
            inner.negotiated = Some(Negotiated::passive(
                req,
                0,
                u8::try_from(port.num()).unwrap_or(0),
            ));
            inner.retry = RetryTimer::rep(req.local_cm_response_timeout, req.max_cm_retries);
            inner.req = Some(info);
            for action in actions.as_slice() {
                // The REQ event itself goes to the listener (`offer`), not to the new CEP.
                if *action != Action::Deliver(UserEvent::ReqReceived) {
                    cep.run(&mut inner, *action, None);
                }
            }
        }
        Ok(Spawned::New(cep))
    }

    /// Hands a spawned CEP to this listener; it waits there until claimed. Fails if this CEP
    /// is no longer listening (`ENOTCONN`) or already has [`BACKLOG`] REQs waiting (`EBUSY`).
    pub(crate) fn offer(&self, child: Arc<Cep>, sidr: bool) -> Result {
        let mut inner = self.inner.lock();
        // The listener's rule for a REQ (SIDR_REQ): it spawns a CEP, or the listener takes
        // none (not listening any more).
        let (event, spawn, offered) = if sidr {
            (
                Event::RxSidrReq,
                Action::SpawnSidr,
                UserEvent::SidrReqReceived,
            )
        } else {
            (
                Event::RxReq,
                Action::SpawnConnection,
                UserEvent::ReqReceived,
            )
        };
        let admitted =
            state::transition(inner.sm, event).is_ok_and(|t| t.actions.as_slice().contains(&spawn));
        if !admitted || inner.owner.is_none() {
            return Err(ENOTCONN);
        }
        if inner.pending.len() >= BACKLOG {
            return Err(EBUSY);
        }
        inner.pending.push(child, GFP_ATOMIC)?;
        self.deliver(&mut inner, offered);
        Ok(())
    }

    /// Takes the oldest pending REQ off this listener.
    pub(crate) fn take_pending(&self) -> Result<Arc<Cep>> {
        let mut inner = self.inner.lock();
        if inner.sm.state != State::Listen {
            return Err(EINVAL);
        }
        if inner.pending.is_empty() {
            return Err(EAGAIN);
        }
        inner.pending.remove(0).map_err(|_| EAGAIN)
    }

    /// Gives an unclaimed CEP to `owner`; returns the REQ it was born from. Events raised
    /// while it was parked are delivered now, in order.
    pub(crate) fn claim(&self, owner: Owner) -> Result<uapi::cepm_req_info> {
        let mut inner = self.inner.lock();
        let t = state::transition(inner.sm, Event::Claim).map_err(|_| EINVAL)?;
        let req = inner.req.as_deref().copied().ok_or(EINVAL)?;
        inner.sm = t.next;
        for mut ev in core::mem::take(&mut inner.parked_events) {
            ev.handle = owner.handle;
            ev.user_context = owner.context;
            owner.file.push_event(ev);
        }
        inner.owner = Some(owner);
        Ok(req)
    }

    /// The user rejects the connection.
    pub(crate) fn reject(self: &Arc<Self>, args: &RejectArgs<'_>) -> Result {
        let mut inner = self.inner.lock();
        self.apply(
            &mut inner,
            Event::SendRej {
                reason: args.reason,
            },
            Some(args),
        )?;
        Ok(())
    }

    /// A REJ for this CEP arrived.
    /// `target` is how it was found; it is taken only if it names this CEP's peer as the
    /// CEP knows it (a spoofed LocalCommID 0 does not), and whether it was is returned.
    pub(crate) fn rej_received(self: &Arc<Self>, rej: &Rej, target: RejTarget) -> bool {
        let mut inner = self.inner.lock();
        let Some(peer) = inner.peer.as_ref() else {
            return false;
        };
        let known_peer = (peer.comm_id != 0).then_some(peer.comm_id);
        if !target.accepted_by(known_peer) {
            return false;
        }
        inner.set_pdata(AttrId::Rej, rej.private_data.as_bytes());
        inner.last_rej_reason = rej.reason;
        let _ = self.apply(&mut inner, Event::RxRej { reason: rej.reason }, None);
        true
    }

    /// Sends a REQ for the connection `args` describes, from `port`.
    pub(crate) fn connect(
        self: &Arc<Self>,
        port: Arc<CmPort>,
        args: &uapi::cepm_connect,
    ) -> Result {
        let path = &args.path;
        let info = ah_info(path, &port)?;
        // A source GID the port lacks is the caller's mistake.
        let local_gid = port.gid(path.sgid_index).map_err(|_| EINVAL)?;
        let req = KBox::new(
            Req {
                local_comm_id: self.local_id,
                service_id: args.service_id,
                local_ca_guid: port.ca_guid(),
                local_qpn: args.local_qpn,
                responder_resources: args.responder_resources,
                initiator_depth: args.initiator_depth,
                remote_cm_response_timeout: args.remote_cm_response_timeout,
                transport: if u32::from(args.qp_type) == uapi::CEPM_TRANSPORT_UC {
                    Transport::Uc
                } else {
                    Transport::Rc
                },
                starting_psn: args.starting_psn,
                local_cm_response_timeout: args.local_cm_response_timeout,
                retry_count: args.retry_count,
                pkey: if path.pkey == 0 { 0xffff } else { path.pkey },
                path_mtu: path.mtu,
                rnr_retry_count: args.rnr_retry_count,
                max_cm_retries: args.max_cm_retries,
                srq: args.srq != 0,
                primary_path: CmPath {
                    local_gid,
                    remote_gid: path.dgid,
                    flow_label: path.flow_label,
                    traffic_class: path.traffic_class,
                    hop_limit: path.hop_limit,
                    sl: path.sl,
                    subnet_local: path.hop_limit <= 1,
                    local_ack_timeout: timing::ack_timeout(port.ack_delay(), path.packet_life_time),
                    ..Default::default()
                },
                private_data: PrivateData::new(
                    args.pdata.get(..usize::from(args.pdata_len)).ok_or(E2BIG)?,
                )
                .map_err(|_| E2BIG)?,
                ..Default::default()
            },
            GFP_KERNEL,
        )?;
        // Encoding refuses out-of-range values (QPN 0 or over 24 bits, ...): check before any
        // state changes.
        CmMsg::Req(*req)
            .encode(&mut [0u8; MAD_SIZE])
            .map_err(|_| EINVAL)?;
        let negotiated = Negotiated::active(&req, path.packet_life_time, 0, info.port_num);
        let node = RBTreeNodeReservation::new(GFP_KERNEL)?;
        let mut inner = self.inner.lock();
        inner.attach_first_peer(self, Event::SendReq, port, info, node)?;
        inner.service_id = args.service_id;
        inner.local_qpn = args.local_qpn;
        inner.negotiated = Some(negotiated);
        inner.retry = RetryTimer::req(
            path.packet_life_time,
            args.remote_cm_response_timeout,
            args.max_cm_retries,
        );
        inner.req_msg = Some(req);
        self.apply(&mut inner, Event::SendReq, None)?;
        Ok(())
    }

    /// A REP for this CEP's REQ arrived.
    pub(crate) fn rep_received(self: &Arc<Self>, rep: &Rep) {
        let (Ok(reservation), Ok(qpn_reservation)) = (
            RBTreeNodeReservation::new(GFP_KERNEL),
            RBTreeNodeReservation::new(GFP_KERNEL),
        ) else {
            return; // Dropped: the peer resends the REP.
        };
        let mut inner = self.inner.lock();
        if !matches!(inner.sm.state, State::ReqSent | State::MraReqRcvd) {
            // Duplicates and strays: the state machine decides (e.g. resend the RTU).
            let _ = self.apply(&mut inner, Event::RxRep, None);
            return;
        }
        // From now on the peer's (comm ID, CA GUID) finds this CEP (a timeout REJ needs it).
        // Another connection holding them already makes this REP a duplicate: dropped, as
        // `cm_rep_handler` drops it when `cm_insert_remote_id` fails.
        let key = (rep.local_comm_id, rep.local_ca_guid);
        if tables::insert_peer(PeerTable::CommId, key, self, reservation).is_some() {
            return;
        }
        let qpn_key = (rep.local_qpn, rep.local_ca_guid);
        if let Some(old) = tables::insert_peer(PeerTable::Qpn, qpn_key, self, qpn_reservation) {
            tables::remove_peer(PeerTable::CommId, key, self);
            // The peer's QP is already connected to `old`: REJ 10 the REP, disconnect `old`;
            // this CEP stays as it is (`cm_rep_handler`'s stale-connection check).
            let rej = CmMsg::Rej(Rej {
                local_comm_id: self.local_id,
                remote_comm_id: rep.local_comm_id,
                message_rejected: MessageCode::Rep,
                reason: crate::proto::rej::reason::STALE_CONN,
                ari: PrivateData::empty(),
                private_data: PrivateData::empty(),
            });
            self.send_once(&mut inner, Some(rej));
            drop(inner);
            old.stale();
            return;
        }
        inner.remote_key = Some((PeerTable::CommId, key));
        inner.remote_qpn_key = Some(qpn_key);
        if let Some(peer) = inner.peer.as_mut() {
            peer.comm_id = rep.local_comm_id;
            peer.ca_guid = rep.local_ca_guid;
        }
        if let Some(n) = inner.negotiated.as_mut() {
            n.apply_received_rep(rep);
        }
        inner.set_pdata(AttrId::Rep, rep.private_data.as_bytes());
        let _ = self.apply(&mut inner, Event::RxRep, None);
    }

    /// An RTU for this CEP's REP arrived.
    pub(crate) fn rtu_received(self: &Arc<Self>, rtu: &Rtu) {
        let mut inner = self.inner.lock();
        if inner
            .peer
            .as_ref()
            .is_none_or(|p| p.comm_id != rtu.local_comm_id)
        {
            return;
        }
        inner.set_pdata(AttrId::Rtu, rtu.private_data.as_bytes());
        let _ = self.apply(&mut inner, Event::RxRtu, None);
    }

    /// Formats the REP for a claimed REQ without sending it.
    pub(crate) fn prepare_rep(self: &Arc<Self>, args: &uapi::cepm_accept) -> Result {
        let pdata = args.pdata.get(..usize::from(args.pdata_len)).ok_or(E2BIG)?;
        let private_data = PrivateData::new(pdata).map_err(|_| E2BIG)?;
        let mut inner = self.inner.lock();
        let peer = inner.peer.as_ref().ok_or(EINVAL)?;
        let rep = Rep {
            local_comm_id: self.local_id,
            remote_comm_id: peer.comm_id,
            local_qpn: args.local_qpn,
            starting_psn: args.starting_psn,
            responder_resources: args.responder_resources,
            initiator_depth: args.initiator_depth,
            // The device's, as Linux's `cm_format_rep` (drivers/infiniband/core/cm.c) sends it.
            target_ack_delay: peer.port.ack_delay(),
            rnr_retry_count: args.rnr_retry_count,
            srq: args.srq != 0,
            local_ca_guid: peer.port.ca_guid(),
            private_data,
            ..Default::default()
        };
        CmMsg::Rep(rep)
            .encode(&mut [0u8; MAD_SIZE])
            .map_err(|_| EINVAL)?;
        state::transition(inner.sm, Event::PrepareRep).map_err(|_| EINVAL)?;
        inner.rep_msg = Some(KBox::new(rep, GFP_ATOMIC)?);
        inner.local_qpn = args.local_qpn;
        if let Some(n) = inner.negotiated.as_mut() {
            n.apply_sent_rep(&rep);
        }
        self.apply(&mut inner, Event::PrepareRep, None)?;
        Ok(())
    }

    /// Sends the prepared REP.
    pub(crate) fn send_rep(self: &Arc<Self>) -> Result {
        let mut inner = self.inner.lock();
        if inner.rep_msg.is_none() {
            return Err(EINVAL);
        }
        self.apply(&mut inner, Event::SendRep, None)?;
        Ok(())
    }

    /// Sends the RTU (active side, after the REP).
    pub(crate) fn send_rtu(self: &Arc<Self>, pdata: &[u8]) -> Result {
        if pdata.len() > uapi::CEPM_PDATA_MAX as usize {
            return Err(E2BIG);
        }
        self.send_with_pdata(Event::SendRtu, AttrId::Rtu, pdata)
    }

    /// Disconnects: sends a DREQ (retried).
    pub(crate) fn send_dreq(self: &Arc<Self>, pdata: &[u8]) -> Result {
        if pdata.len() > uapi::CEPM_DREQ_PDATA_MAX as usize {
            return Err(E2BIG);
        }
        self.send_with_pdata(Event::SendDreq, AttrId::Dreq, pdata)
    }

    /// Answers a DREQ.
    pub(crate) fn send_drep(self: &Arc<Self>, pdata: &[u8]) -> Result {
        self.send_with_pdata(Event::SendDrep, AttrId::Drep, pdata)
    }

    /// The passive QP heard from the peer before the RTU did (`IB_EVENT_COMM_EST`): established
    /// now, the REP's retries cancelled, as Linux does in `cm_establish`
    /// (drivers/infiniband/core/cm.c, reached from `ib_cm_notify`).
    pub(crate) fn establish(self: &Arc<Self>) -> Result {
        let mut inner = self.inner.lock();
        if inner.peer.is_none() {
            return Err(EINVAL);
        }
        self.apply(&mut inner, Event::Establish, None).map(|_| ())
    }

    /// A local call whose message (`attr`) carries just `pdata`.
    fn send_with_pdata(self: &Arc<Self>, event: Event, attr: AttrId, pdata: &[u8]) -> Result {
        let mut inner = self.inner.lock();
        if inner.peer.is_none() {
            return Err(EINVAL);
        }
        state::transition(inner.sm, event).map_err(|_| EINVAL)?;
        inner.out_pdata.set(attr, pdata);
        self.apply(&mut inner, event, None)?;
        Ok(())
    }

    /// The device of `port` is going away: forget the peer if it is reached through it.
    fn device_removed(&self, port: &CmPort) {
        let mut inner = self.inner.lock();
        if !inner
            .peer
            .as_ref()
            .is_some_and(|p| core::ptr::eq(&*p.port, port))
        {
            return;
        }
        // The agent's unregistration flushed our send already; the AH goes with the peer.
        inner.msg = None;
        inner.peer = None;
        let ev = uapi::cepm_event {
            event: uapi::CEPM_EVENT_DEVICE_REMOVAL,
            ..Default::default()
        };
        inner.deliver_raw(self.local_id, ev);
    }

    /// Sends a SIDR_REQ for `args.service_id` from `port`.
    pub(crate) fn sidr_req(
        self: &Arc<Self>,
        port: Arc<CmPort>,
        args: &uapi::cepm_sidr_req,
    ) -> Result {
        let path = &args.path;
        let info = ah_info(path, &port)?;
        port.gid(path.sgid_index).map_err(|_| EINVAL)?;
        let pdata = args.pdata.get(..usize::from(args.pdata_len)).ok_or(E2BIG)?;
        let req = KBox::new(
            SidrReq {
                request_id: self.local_id,
                pkey: if path.pkey == 0 { 0xffff } else { path.pkey },
                service_id: args.service_id,
                private_data: PrivateData::new(pdata).map_err(|_| E2BIG)?,
            },
            GFP_KERNEL,
        )?;
        let node = RBTreeNodeReservation::new(GFP_KERNEL)?;
        let mut inner = self.inner.lock();
        inner.attach_first_peer(self, Event::SendSidrReq, port, info, node)?;
        inner.service_id = args.service_id;
        inner.retry = RetryTimer::req(
            path.packet_life_time,
            args.cm_response_timeout,
            args.max_cm_retries,
        );
        inner.sidr_req_msg = Some(req);
        self.apply(&mut inner, Event::SendSidrReq, None)?;
        Ok(())
    }

    /// The answer to our SIDR_REQ arrived.
    pub(crate) fn sidr_rep_received(self: &Arc<Self>, rep: &SidrRep) {
        let mut inner = self.inner.lock();
        if inner.sm.state != State::SidrReqSent {
            return;
        }
        inner.sidr_status = rep.status;
        inner.sidr_qpn = rep.qpn;
        inner.remote_qkey = rep.qkey;
        inner.set_pdata(AttrId::SidrRep, rep.private_data.as_bytes());
        let _ = self.apply(&mut inner, Event::RxSidrRep, None);
    }

    /// Answers a claimed SIDR_REQ.
    pub(crate) fn sidr_rep(self: &Arc<Self>, args: &uapi::cepm_sidr_rep) -> Result {
        let info = args.info.get(..usize::from(args.info_len)).ok_or(E2BIG)?;
        let pdata = args.pdata.get(..usize::from(args.pdata_len)).ok_or(E2BIG)?;
        let rep = KBox::new(
            SidrRep {
                status: args.status,
                qpn: args.qpn,
                qkey: args.qkey,
                additional_info: PrivateData::new(info).map_err(|_| E2BIG)?,
                private_data: PrivateData::new(pdata).map_err(|_| E2BIG)?,
                ..Default::default()
            },
            GFP_KERNEL,
        )?;
        CmMsg::SidrRep(*rep)
            .encode(&mut [0u8; MAD_SIZE])
            .map_err(|_| EINVAL)?;
        let mut inner = self.inner.lock();
        state::transition(
            inner.sm,
            Event::SendSidrRep {
                status: args.status,
            },
        )
        .map_err(|_| EINVAL)?;
        inner.sidr_rep_msg = Some(rep);
        self.apply(
            &mut inner,
            Event::SendSidrRep {
                status: args.status,
            },
            None,
        )?;
        Ok(())
    }

    /// The CEP a listener spawns for a SIDR_REQ: unclaimed, in SIDR_REQ_RCVD, findable by the
    /// requester's (request ID, GID) so that retries are recognised.
    pub(crate) fn spawn_from_sidr_req(
        port: &Arc<CmPort>,
        ah: Arc<AddressHandle>,
        sreq: &SidrReq,
        tid: u64,
        device_name: &[u8],
    ) -> Result<Option<Arc<Self>>> {
        let ah_info = ah.info()?;
        let mut info = KBox::new(uapi::cepm_req_info::default(), GFP_KERNEL)?;
        info.service_id = sreq.service_id;
        info.remote_comm_id = sreq.request_id;
        info.port_num = u8::try_from(port.num()).unwrap_or(0);
        info.sidr = 1;
        let pdata = sreq.private_data.as_bytes();
        let len = pdata.len().min(info.pdata.len());
        info.pdata[..len].copy_from_slice(&pdata[..len]);
        info.pdata_len = u8::try_from(len).unwrap_or(0);
        for (dst, src) in info.dev_name.iter_mut().zip(device_name.iter()) {
            *dst = *src;
        }
        let key = tables::sidr_key(sreq.request_id, &ah_info.dgid);
        let reservation = RBTreeNodeReservation::new(GFP_KERNEL)?;
        let user_node = RBTreeNodeReservation::new(GFP_KERNEL)?;
        let (sm, _actions) = state::Cep::spawned_from_sidr_req();
        let cep = tables::insert_new_local(|id| Self::new(id, sm, None))?;
        if tables::insert_peer(PeerTable::SidrId, key, &cep, reservation).is_some() {
            // A retry of a SIDR_REQ already waiting: the first one will be answered.
            tables::remove_local(cep.local_id);
            return Ok(None);
        }
        let mut inner = cep.inner.lock();
        if let Err(e) = port.adopt_user(&cep, user_node) {
            drop(inner);
            tables::remove_peer(PeerTable::SidrId, key, &cep);
            tables::remove_local(cep.local_id);
            return Err(e);
        }
        inner.service_id = sreq.service_id;
        inner.peer = Some(Peer {
            comm_id: sreq.request_id,
            ca_guid: key.1,
            port: port.clone(),
            ah,
            ah_info,
        });
        inner.remote_key = Some((PeerTable::SidrId, key));
        inner.tid = tid;
        inner.set_pdata(AttrId::SidrReq, pdata);
        inner.req = Some(info);
        drop(inner);
        Ok(Some(cep))
    }

    /// Arms an MRA for the REQ or REP just received (sent on its duplicate), and sends it
    /// at once with `send_now`; `service_timeout` replaces Linux's 24 for this MRA and the
    /// later ones. Nothing changes if the call is not legal now.
    pub(crate) fn prepare_mra(
        self: &Arc<Self>,
        send_now: bool,
        service_timeout: Option<u8>,
    ) -> Result {
        let event = if send_now {
            Event::SendMra
        } else {
            Event::PrepareMra
        };
        let mut inner = self.inner.lock();
        state::transition(inner.sm, event).map_err(|_| EINVAL)?;
        if let Some(timeout) = service_timeout {
            inner.mra_timeout_out = timeout;
        }
        self.apply(&mut inner, event, None)?;
        Ok(())
    }

    /// An MRA for our REQ or REP arrived.
    pub(crate) fn mra_received(self: &Arc<Self>, mra: &Mra) {
        let mut inner = self.inner.lock();
        // Before the REP we do not know the peer's comm ID: any is fine, as for a REJ.
        let from_peer = inner
            .peer
            .as_ref()
            .is_some_and(|p| p.comm_id == 0 || p.comm_id == mra.local_comm_id);
        if !from_peer {
            return;
        }
        inner.mra_service_timeout = mra.service_timeout;
        inner.set_pdata(AttrId::Mra, mra.private_data.as_bytes());
        let _ = self.apply(&mut inner, Event::RxMra(mra.message_mraed), None);
    }

    /// A DREQ for this connection arrived.
    pub(crate) fn dreq_received(self: &Arc<Self>, dreq: &Dreq, tid: u64) {
        let mut inner = self.inner.lock();
        if inner
            .peer
            .as_ref()
            .is_none_or(|p| p.comm_id != dreq.local_comm_id)
        {
            return;
        }
        // The DREP answers this DREQ.
        inner.tid = tid;
        let qpn_matches = dreq.remote_qpn == inner.local_qpn;
        if qpn_matches {
            inner.set_pdata(AttrId::Dreq, dreq.private_data.as_bytes());
        }
        let _ = self.apply(&mut inner, Event::RxDreq { qpn_matches }, None);
    }

    /// A DREP for this connection arrived.
    pub(crate) fn drep_received(self: &Arc<Self>, drep: &Drep) {
        let mut inner = self.inner.lock();
        if inner
            .peer
            .as_ref()
            .is_none_or(|p| p.comm_id != drep.local_comm_id)
        {
            return;
        }
        inner.set_pdata(AttrId::Drep, drep.private_data.as_bytes());
        let _ = self.apply(&mut inner, Event::RxDrep, None);
    }

    /// The attributes that move the connection's QP to `args.qp_state`.
    pub(crate) fn qp_attr(&self, args: &mut uapi::cepm_qp_attr) -> Result {
        let target = match args.qp_state {
            uapi::CEPM_QPS_INIT => QpState::Init,
            uapi::CEPM_QPS_RTR => QpState::Rtr,
            uapi::CEPM_QPS_RTS => QpState::Rts,
            _ => return Err(EINVAL),
        };
        let inner = self.inner.lock();
        let negotiated = inner.negotiated.as_ref().ok_or(EINVAL)?;
        let a = qp_attr::derive(inner.sm.state, target, negotiated).map_err(|_| EINVAL)?;
        let info = inner.peer.as_ref().ok_or(EINVAL)?.ah_info;
        drop(inner);
        args.attr_mask = a.mask;
        args.qp_access_flags = a.access_flags;
        args.dest_qp_num = a.dest_qp_num;
        args.rq_psn = a.rq_psn;
        args.sq_psn = a.sq_psn;
        args.pkey_index = a.pkey_index;
        args.port_num = a.port_num;
        args.path_mtu = a.path_mtu;
        args.max_dest_rd_atomic = a.max_dest_rd_atomic;
        args.max_rd_atomic = a.max_rd_atomic;
        args.min_rnr_timer = a.min_rnr_timer;
        args.timeout = a.timeout;
        args.retry_cnt = a.retry_cnt;
        args.rnr_retry = a.rnr_retry;
        args.ah.dgid = info.dgid;
        args.ah.dmac = info.dmac;
        args.ah.sgid_index = info.sgid_index;
        args.ah.hop_limit = info.hop_limit;
        args.ah.flow_label = info.flow_label;
        args.ah.traffic_class = info.traffic_class;
        args.ah.sl = info.sl;
        args.ah.mtu = a.path_mtu;
        Ok(())
    }

    /// A new connection reuses this one's peer QP: this one is stale, disconnect it.
    pub(crate) fn stale(self: &Arc<Self>) {
        let mut inner = self.inner.lock();
        let _ = self.apply(&mut inner, Event::StaleConnection, None);
    }

    /// A duplicate of the REQ that created this CEP arrived.
    pub(crate) fn duplicate_req(self: &Arc<Self>) {
        let mut inner = self.inner.lock();
        let _ = self.apply(&mut inner, Event::RxDupReq, None);
    }

    /// Ends the CEP as its state requires; afterwards no event for it is queued anywhere and
    /// none can arrive. Pending REQs of a listener are rejected.
    pub(crate) fn destroy(self: &Arc<Self>) {
        self.destroy_with(false);
    }

    /// Destroys a CEP spawned for a REQ that cannot be taken now, without answering: the
    /// peer retries the REQ.
    pub(crate) fn destroy_silently(self: &Arc<Self>) {
        self.destroy_with(true);
    }

    /// Destroy; `retry_later` drops a pending REQ silently so that the peer retries it (Linux's
    /// `-ENOMEM` semantics in `cm_destroy_id`, drivers/infiniband/core/cm.c).
    fn destroy_with(self: &Arc<Self>, retry_later: bool) {
        let (pending, remote_key, remote_qpn_key, messages) = {
            let mut inner = self.inner.lock();
            let _ = self.apply(&mut inner, Event::Destroy { retry_later }, None);
            inner.owner = None;
            inner.parked_events.clear();
            // The peer and its AH go now, under the lock, not with the last reference (a
            // queued timewait work may hold that past the device's removal) nor after the
            // unlock (device removal would not wait for it): removal either took this CEP
            // from the port's users and waits for this lock, or finds it gone.
            if let Some(peer) = inner.peer.take() {
                peer.port.forget_user(self);
                drop(peer);
            }
            (
                core::mem::take(&mut inner.pending),
                inner.remote_key.take(),
                inner.remote_qpn_key.take(),
                (inner.req_msg.take(), inner.rep_msg.take()),
            )
        };
        crate::shim::fault_destroy_delay();
        drop(messages);
        self.cancel_timewait();
        tables::remove_local(self.local_id);
        if let Some((table, key)) = remote_key {
            tables::remove_peer(table, key, self);
        }
        if let Some(key) = remote_qpn_key {
            tables::remove_peer(PeerTable::Qpn, key, self);
        }
        for child in pending {
            child.destroy();
        }
    }

    /// The ABI description of this CEP; `handle` is the caller's name for it.
    pub(crate) fn info(&self, handle: u32) -> uapi::cepm_cep_info {
        let inner = self.inner.lock();
        uapi::cepm_cep_info {
            handle,
            state: state_to_abi(inner.sm.state),
            user_context: inner.owner.as_ref().map_or(0, |o| o.context),
            service_id: inner.service_id,
            local_comm_id: self.local_id,
            remote_comm_id: inner.peer.as_ref().map_or(0, |p| p.comm_id),
            pending_requests: u32::try_from(inner.pending.len()).unwrap_or(u32::MAX),
            reserved: 0,
            remote_qpn: inner
                .negotiated
                .as_ref()
                .and_then(|n| n.remote_qpn)
                .unwrap_or(inner.sidr_qpn),
            remote_qkey: inner.remote_qkey,
            sidr_status: inner.sidr_status.into(),
            reserved2: 0,
        }
    }

    /// The private data of the last message received.
    pub(crate) fn private_data(&self, out: &mut uapi::cepm_private_data) {
        let inner = self.inner.lock();
        out.attr_id = inner.pdata.attr;
        out.len = inner.pdata.len;
        out.data = inner.pdata.data;
    }
}

impl CepInner {
    /// Ties a CEP that never had a peer to the one `info` describes, for the local call
    /// `event` (REQ or SIDR_REQ), which must be legal now; nothing changes on error.
    ///
    /// The AH is made under the CEP lock, and the port records this CEP as its user under its
    /// own: device removal has then either released the port already (`ENODEV`) or will find
    /// this CEP there and release the AH before the device goes.
    fn attach_first_peer(
        &mut self,
        cep: &Arc<Cep>,
        event: Event,
        port: Arc<CmPort>,
        info: AhInfo,
        node: RBTreeNodeReservation<u32, Arc<Cep>>,
    ) -> Result {
        state::transition(self.sm, event).map_err(|_| EINVAL)?;
        if self.peer.is_some() || self.remote_key.is_some() {
            return Err(EINVAL);
        }
        let ah = port.create_ah(cep, &info, node)?;
        self.peer = Some(Peer {
            comm_id: 0,
            ca_guid: 0,
            port,
            ah,
            ah_info: info,
        });
        Ok(())
    }

    /// Queues `ev` for the owner, or parks it until the CEP is claimed.
    /// Delivers `ev` of the CEP with comm ID `local_id` to its owner (or parks it), with a
    /// copy to the monitors.
    fn deliver_raw(&mut self, local_id: u32, mut ev: uapi::cepm_event) {
        monitor::publish(|| uapi::cepm_trace {
            service_id: self.service_id,
            local_comm_id: local_id,
            remote_comm_id: self.peer.as_ref().map_or(0, |p| p.comm_id),
            event: ev.event,
            status: ev.status,
            state: state_to_abi(self.sm.state),
            ..Default::default()
        });
        match &self.owner {
            Some(owner) => {
                ev.handle = owner.handle;
                ev.user_context = owner.context;
                owner.file.push_event(ev);
            }
            None => {
                // Kept for whoever claims the CEP; lost only if memory is short.
                let _ = self.parked_events.push(ev, GFP_ATOMIC);
            }
        }
    }

    fn set_pdata(&mut self, attr: AttrId, data: &[u8]) {
        let len = data.len().min(self.pdata.data.len());
        self.pdata.data = [0; uapi::CEPM_PDATA_MAX as usize];
        self.pdata.data[..len].copy_from_slice(&data[..len]);
        self.pdata.attr = attr.to_u16();
        self.pdata.len = u8::try_from(len).unwrap_or(u8::MAX);
    }
}

/// The address a caller's path describes, on `port`.
fn ah_info(path: &uapi::cepm_path_rec, port: &CmPort) -> Result<AhInfo> {
    Ok(AhInfo {
        dgid: path.dgid,
        dmac: path.dmac,
        sgid_index: path.sgid_index,
        hop_limit: path.hop_limit,
        flow_label: path.flow_label,
        traffic_class: path.traffic_class,
        sl: path.sl,
        port_num: u8::try_from(port.num()).map_err(|_| EINVAL)?,
        reserved: 0,
    })
}

/// The ABI's number for a state.
fn state_to_abi(s: State) -> u32 {
    match s {
        State::Idle => uapi::CEPM_STATE_IDLE,
        State::Listen => uapi::CEPM_STATE_LISTEN,
        State::ReqSent => uapi::CEPM_STATE_REQ_SENT,
        State::ReqRcvd => uapi::CEPM_STATE_REQ_RCVD,
        State::MraReqSent => uapi::CEPM_STATE_MRA_REQ_SENT,
        State::MraReqRcvd => uapi::CEPM_STATE_MRA_REQ_RCVD,
        State::RepSent => uapi::CEPM_STATE_REP_SENT,
        State::RepRcvd => uapi::CEPM_STATE_REP_RCVD,
        State::MraRepSent => uapi::CEPM_STATE_MRA_REP_SENT,
        State::MraRepRcvd => uapi::CEPM_STATE_MRA_REP_RCVD,
        State::Established => uapi::CEPM_STATE_ESTABLISHED,
        State::DreqSent => uapi::CEPM_STATE_DREQ_SENT,
        State::DreqRcvd => uapi::CEPM_STATE_DREQ_RCVD,
        State::Timewait => uapi::CEPM_STATE_TIMEWAIT,
        State::SidrReqSent => uapi::CEPM_STATE_SIDR_REQ_SENT,
        State::SidrReqRcvd => uapi::CEPM_STATE_SIDR_REQ_RCVD,
        State::RepPrepared => uapi::CEPM_STATE_REP_PREPARED,
        State::RepPreparedMraSent => uapi::CEPM_STATE_REP_PREPARED_MRA_SENT,
        State::Destroyed => uapi::CEPM_STATE_DESTROYED,
    }
}

/// Largest REJ private data, for ioctl validation.
pub(crate) const REJ_PDATA_MAX: usize = REJ_PRIVATE_DATA_SIZE;
