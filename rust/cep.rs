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
    new_spinlock,
    prelude::*,
    rbtree::RBTreeNodeReservation,
    sync::{
        Arc,
        SpinLock, //
    },
};

use crate::{
    file::CepmFile,
    port::CmPort,
    proto::{
        cm_mad::{
            CmMad,
            CmMsg, //
        },
        mad::{
            AttrId,
            MAD_SIZE, //
        },
        msg_code::MessageCode,
        pdata::PrivateData,
        rej::{
            Rej,
            REJ_PRIVATE_DATA_SIZE, //
        },
        req::{
            Req,
            Transport, //
        },
        state::{
            self,
            Action,
            Event,
            Outgoing,
            State,
            UserEvent, //
        },
    },
    shim::AddressHandle,
    tables,
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
}

/// A connection endpoint.
#[pin_data]
pub(crate) struct Cep {
    /// Our comm ID on the wire; also the key of the local-ID table.
    pub(crate) local_id: u32,
    #[pin]
    inner: SpinLock<CepInner>,
}

impl Cep {
    fn new(local_id: u32, sm: state::Cep, owner: Option<Owner>) -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(Self {
                local_id,
                inner <- new_spinlock!(CepInner {
                    sm,
                    owner,
                    service_id: 0,
                    peer: None,
                    pending: KVec::new(),
                    req: None,
                    pdata: ReceivedPdata { attr: 0, len: 0, data: [0; uapi::CEPM_PDATA_MAX as usize] },
                    last_rej_reason: 0,
                    parked_events: KVec::new(),
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
    fn apply(&self, inner: &mut CepInner, event: Event, rej: Option<&RejectArgs<'_>>) -> Result<State> {
        let t = state::transition(inner.sm, event).map_err(|_| EINVAL)?;
        inner.sm = t.next;
        for action in t.actions.as_slice() {
            self.run(inner, *action, rej);
        }
        Ok(inner.sm.state)
    }

    /// Carries out one action of a transition.
    fn run(&self, inner: &mut CepInner, action: Action, rej: Option<&RejectArgs<'_>>) {
        match action {
            Action::Send(Outgoing::Rej {
                reason,
                rejected,
                zero_local_id,
                ari_ca_guid,
            }) => self.send_rej(inner, reason, rejected, zero_local_id, ari_ca_guid, rej),
            Action::Deliver(event) => self.deliver(inner, event),
            Action::StopListening => tables::remove_listener(self),
            Action::CountDuplicate => {
                if let Some(peer) = &inner.peer {
                    peer.port.count_duplicate();
                }
            }
            other => pr_warn!("cep {:#x}: action {:?} is not supported yet\n", self.local_id, other),
        }
    }

    /// Queues `event` for the owner (or parks it until the CEP is claimed).
    fn deliver(&self, inner: &mut CepInner, event: UserEvent) {
        let (kind, status) = match event {
            UserEvent::RejReceived => (uapi::CEPM_EVENT_REJ_RECEIVED, u32::from(inner.last_rej_reason)),
            other => {
                pr_warn!("cep {:#x}: event {:?} has no ABI yet\n", self.local_id, other);
                return;
            }
        };
        let mut ev = uapi::cepm_event { event: kind, status, ..Default::default() };
        match &inner.owner {
            Some(owner) => {
                ev.handle = owner.handle;
                ev.user_context = owner.context;
                owner.file.push_event(ev);
            }
            None => {
                // Kept for whoever claims the CEP; lost only if memory is short.
                let _ = inner.parked_events.push(ev, GFP_ATOMIC);
            }
        }
    }

    /// Sends a REJ to the peer: the user's reason, ARI and private data, or the protocol's.
    fn send_rej(
        &self,
        inner: &CepInner,
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
        let mut mad = [0u8; MAD_SIZE];
        if CmMad::new(peer.port.tid(self.local_id), 0, msg).encode(&mut mad).is_err() {
            peer.port.count_tx_error();
            return;
        }
        peer.port.send_once(&peer.ah, &mad, AttrId::Rej);
    }

    /// Starts listening on `service_id` under `mask`.
    pub(crate) fn listen(self: &Arc<Self>, service_id: u64, mask: u64) -> Result {
        let mut inner = self.inner.lock();
        let t = state::transition(inner.sm, Event::Listen).map_err(|_| EINVAL)?;
        tables::add_listener(service_id, mask, self.clone())?;
        inner.sm = t.next;
        inner.service_id = service_id;
        Ok(())
    }

    /// The CEP a listener spawns for a new REQ: unclaimed, in REQ_RCVD, findable by its
    /// peer's IDs. `None` if the REQ duplicates a connection that already exists, which then
    /// gets the duplicate instead.
    pub(crate) fn spawn_from_req(
        port: &Arc<CmPort>,
        ah: Arc<AddressHandle>,
        req: &Req,
        device_name: &[u8],
    ) -> Result<Option<Arc<Self>>> {
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
            Transport::Rc => 0,
            Transport::Uc => 1,
            Transport::Xrc => 3,
        };
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

        let reservation = RBTreeNodeReservation::new(GFP_KERNEL)?;
        let (sm, actions) = state::Cep::spawned_from_req();
        let cep = tables::insert_new_local(|id| Self::new(id, sm, None))?;
        let key = (req.local_comm_id, req.local_ca_guid);
        if let Some(existing) = tables::insert_remote(key, &cep, reservation) {
            tables::remove_local(cep.local_id);
            existing.duplicate_req();
            return Ok(None);
        }
        {
            let mut inner = cep.inner.lock();
            inner.service_id = req.service_id;
            inner.peer = Some(Peer {
                comm_id: req.local_comm_id,
                ca_guid: req.local_ca_guid,
                port: port.clone(),
                ah,
            });
            inner.set_pdata(AttrId::Req, req.private_data.as_bytes());
            inner.req = Some(info);
            for action in actions.as_slice() {
                // The REQ event itself goes to the listener (`offer`), not to the new CEP.
                if *action != Action::Deliver(UserEvent::ReqReceived) {
                    cep.run(&mut inner, *action, None);
                }
            }
        }
        Ok(Some(cep))
    }

    /// Hands a spawned CEP to this listener; it waits there until claimed. Fails if this CEP
    /// is no longer listening.
    pub(crate) fn offer(&self, child: Arc<Cep>) -> Result {
        let mut inner = self.inner.lock();
        if inner.sm.state != State::Listen {
            return Err(ENOTCONN);
        }
        let Some(owner) = &inner.owner else {
            return Err(ENOTCONN);
        };
        let ev = uapi::cepm_event {
            event: uapi::CEPM_EVENT_REQ_RECEIVED,
            handle: owner.handle,
            user_context: owner.context,
            ..Default::default()
        };
        inner.pending.push(child, GFP_ATOMIC)?;
        if let Some(owner) = &inner.owner {
            owner.file.push_event(ev);
        }
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
    pub(crate) fn reject(&self, args: &RejectArgs<'_>) -> Result {
        let mut inner = self.inner.lock();
        self.apply(&mut inner, Event::SendRej { reason: args.reason }, Some(args))?;
        Ok(())
    }

    /// A REJ for this CEP arrived.
    pub(crate) fn rej_received(&self, rej: &Rej) {
        let mut inner = self.inner.lock();
        // LocalCommID 0 is allowed: a REJ of a REQ may come before the peer has an ID.
        let from_peer = inner.peer.as_ref().is_some_and(|p| rej.local_comm_id == 0 || p.comm_id == rej.local_comm_id);
        if !from_peer {
            return;
        }
        inner.set_pdata(AttrId::Rej, rej.private_data.as_bytes());
        inner.last_rej_reason = rej.reason;
        let _ = self.apply(&mut inner, Event::RxRej { reason: rej.reason }, None);
    }

    /// A duplicate of the REQ that created this CEP arrived.
    pub(crate) fn duplicate_req(&self) {
        let mut inner = self.inner.lock();
        let _ = self.apply(&mut inner, Event::RxDupReq, None);
    }

    /// Ends the CEP as its state requires; afterwards no event for it is queued anywhere and
    /// none can arrive. Pending REQs of a listener are rejected.
    pub(crate) fn destroy(&self) {
        let (pending, peer_key) = {
            let mut inner = self.inner.lock();
            let _ = self.apply(&mut inner, Event::Destroy { retry_later: false }, None);
            inner.owner = None;
            inner.parked_events.clear();
            let peer_key = inner.peer.as_ref().map(|p| (p.comm_id, p.ca_guid));
            (core::mem::take(&mut inner.pending), peer_key)
        };
        tables::remove_local(self.local_id);
        if let Some(key) = peer_key {
            tables::remove_remote(key, self);
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
    fn set_pdata(&mut self, attr: AttrId, data: &[u8]) {
        let len = data.len().min(self.pdata.data.len());
        self.pdata.data = [0; uapi::CEPM_PDATA_MAX as usize];
        self.pdata.data[..len].copy_from_slice(&data[..len]);
        self.pdata.attr = attr.to_u16();
        self.pdata.len = u8::try_from(len).unwrap_or(u8::MAX);
    }
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
