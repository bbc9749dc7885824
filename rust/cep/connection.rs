// SPDX-License-Identifier: GPL-2.0

//! Connections: the active side's REQ, the passive side's CEP spawned from a REQ, and
//! every later exchange (REP, RTU, MRA, REJ, DREQ, DREP), with the QP attributes they
//! settle.

use kernel::{
    prelude::*,
    rbtree::RBTreeNodeReservation,
    sync::Arc, //
};

use crate::{
    port::CmPort,
    proto::{
        cm_mad::CmMsg,
        drep::Drep,
        dreq::Dreq,
        mad::AttrId,
        mra::Mra,
        msg_code::MessageCode,
        path::CmPath,
        pdata::PrivateData,
        qp_attr::{
            Negotiated,
            QpState,
            QpType, //
        },
        rej::Rej,
        rej_match::RejTarget,
        rep::Rep,
        req::{
            Req,
            Transport, //
        },
        rtu::Rtu,
        state::{
            self,
            Action,
            Event,
            State,
            UserEvent, //
        },
        timing::{
            self,
            RetryTimer, //
        }, //
    },
    shim::{
        AhInfo,
        NetId, //
    },
    tables::{
        PeerId,
        PeerTable, //
    },
    uapi, //
};

use super::{
    kind::Ece,
    request::{
        request_info,
        FirstRequest,
        Route, //
    },
    Cep, //
    CepInner,
    Connection,
    Kind,
    RejectArgs,
    Spawn,
    Spawned,
};

impl Cep {
    /// The CEP a listener spawns for a new REQ, whose MAD had the attribute modifier
    /// `attr_mod`, in the network namespace `net` of the GID it arrived on: unclaimed, in
    /// REQ_RCVD, findable by its peer's IDs ([`Cep::spawn`]).
    pub(crate) fn spawn_from_req(
        port: &Arc<CmPort>,
        ah_info: AhInfo,
        (req, net): (&Req, NetId),
        tid: u64,
        attr_mod: u32,
    ) -> Result<Spawned> {
        let pdata = req.private_data.as_bytes();
        let mut info = request_info(port, req.service_id, req.local_comm_id, pdata)?;
        info.remote_ca_guid = req.local_ca_guid;
        info.remote_qpn = req.local_qpn;
        info.starting_psn = req.starting_psn;
        info.responder_resources = req.responder_resources;
        info.initiator_depth = req.initiator_depth;
        info.path_mtu = req.path_mtu;
        info.transport = match req.transport {
            Transport::Rc => uapi::CEPM_TRANSPORT_RC,
            Transport::Uc => uapi::CEPM_TRANSPORT_UC,
            Transport::Xrc => uapi::CEPM_TRANSPORT_XRC,
        } as u8;
        info.remote_cm_response_timeout = req.remote_cm_response_timeout;
        info.local_cm_response_timeout = req.local_cm_response_timeout;
        info.retry_count = req.retry_count;
        info.rnr_retry_count = req.rnr_retry_count;
        info.max_cm_retries = req.max_cm_retries;
        info.srq = req.srq.into();
        info.flow_control = req.end_to_end_flow_control.into();
        // A REQ's private data field has a fixed size: the user gets all of it.
        info.pdata_len = uapi::CEPM_REQ_PDATA_MAX as u8;
        let req_path = received_path(req, &ah_info);

        let (sm, actions) = state::Cep::spawned_from_req();
        let connection = Connection {
            req: Some(info),
            negotiated: Some(Negotiated::passive(
                req,
                0,
                u8::try_from(port.num()).unwrap_or(0),
            )),
            req_path,
            remote_ece: Ece {
                vendor_id: req.vendor_id,
                attr_mod,
            },
            remote_params: uapi::cepm_conn_params {
                responder_resources: req.responder_resources,
                initiator_depth: req.initiator_depth,
                flow_control: req.end_to_end_flow_control.into(),
                retry_count: req.retry_count,
                rnr_retry_count: req.rnr_retry_count,
                srq: req.srq.into(),
                reserved: [0; 2],
            },
            ..Connection::new()
        };
        let spawn = Spawn {
            port,
            net,
            ah_info,
            sm,
            kind: Kind::Connection(connection),
            table: PeerTable::CommId,
            key: PeerId::by_guid(req.local_comm_id, req.local_ca_guid),
            qpn_key: Some(PeerId::by_guid(req.local_qpn, req.local_ca_guid)),
            service_id: req.service_id,
            tid,
        };
        Self::spawn(spawn, |cep, inner| {
            inner.set_pdata(AttrId::Req, req.private_data.as_bytes());
            inner.retry = RetryTimer::rep(req.local_cm_response_timeout, req.max_cm_retries);
            for action in actions.as_slice() {
                // The REQ event itself goes to the listener (`offer`), not to the new CEP.
                if *action != Action::Deliver(UserEvent::ReqReceived) {
                    cep.run(inner, *action, None);
                }
            }
        })
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
        let event = Event::RxRej { reason: rej.reason };
        let received = Received::answer(AttrId::Rej, rej.private_data.as_bytes());
        self.take_received(&mut inner, event, received, |inner| {
            if let Some(c) = inner.kind.connection_mut() {
                c.last_rej_reason = rej.reason;
            }
        });
        true
    }

    /// Sends a REQ for the connection `args` describes, from `port`.
    pub(crate) fn connect(
        self: &Arc<Self>,
        port: Arc<CmPort>,
        args: &uapi::cepm_connect,
    ) -> Result {
        let path = &args.path;
        let route = Route::new(path, &port, self.net)?;
        let mut req = KBox::new(
            Req {
                local_comm_id: self.local_id,
                service_id: args.service_id,
                local_ca_guid: port.ca_guid(),
                local_qpn: args.local_qpn,
                responder_resources: args.responder_resources,
                initiator_depth: args.initiator_depth,
                remote_cm_response_timeout: args.remote_cm_response_timeout,
                transport: match u32::from(args.qp_type) {
                    uapi::CEPM_TRANSPORT_UC => Transport::Uc,
                    uapi::CEPM_TRANSPORT_XRC => Transport::Xrc,
                    _ => Transport::Rc,
                },
                starting_psn: args.starting_psn,
                local_cm_response_timeout: args.local_cm_response_timeout,
                retry_count: args.retry_count,
                pkey: route.pkey,
                path_mtu: path.mtu,
                rnr_retry_count: args.rnr_retry_count,
                max_cm_retries: args.max_cm_retries,
                srq: args.srq != 0,
                end_to_end_flow_control: args.flow_control != 0,
                primary_path: CmPath {
                    local_gid: route.local_gid,
                    remote_gid: path.dgid,
                    flow_label: path.flow_label,
                    traffic_class: path.traffic_class,
                    hop_limit: path.hop_limit,
                    sl: path.sl,
                    local_ack_timeout: timing::ack_timeout(port.ack_delay(), path.packet_life_time),
                    ..Default::default()
                }
                .with_roce_lids(),
                private_data: PrivateData::new(
                    args.pdata.get(..usize::from(args.pdata_len)).ok_or(E2BIG)?,
                )
                .map_err(|_| E2BIG)?,
                vendor_id: args.ece_vendor_id,
                ..Default::default()
            },
            GFP_KERNEL_ACCOUNT,
        )?;
        // The QP keeps what the user asked for (`ib_send_cm_req` keeps its parameters), the
        // REQ only what its transport sends.
        let negotiated = Negotiated::active(&req, path.packet_life_time, 0, route.ah_info.port_num);
        *req = req.for_transport();
        Self::check_encodable(CmMsg::Req(*req))?;
        let request = FirstRequest {
            event: Event::SendReq,
            service_id: args.service_id,
            retry: RetryTimer::req(
                path.packet_life_time,
                args.remote_cm_response_timeout,
                args.max_cm_retries,
            ),
            kind: Kind::Connection(Connection {
                local_qpn: args.local_qpn,
                negotiated: Some(negotiated),
                req_msg: Some(req),
                ece_attr_mod: args.ece_attr_mod,
                ..Connection::new()
            }),
        };
        self.send_first_request(port, route.ah_info, request)
    }

    /// A REP for this CEP's REQ arrived, in a MAD with the attribute modifier `attr_mod`.
    pub(crate) fn rep_received(self: &Arc<Self>, rep: &Rep, attr_mod: u32) {
        let (Ok(reservation), Ok(qpn_reservation)) = (
            RBTreeNodeReservation::new(GFP_KERNEL),
            RBTreeNodeReservation::new(GFP_KERNEL),
        ) else {
            return; // Dropped: the peer resends the REP.
        };
        let mut inner = self.inner.lock();
        if !matches!(inner.sm.state, State::ReqSent | State::MraReqRcvd) {
            // A duplicate is the peer's, found by both comm IDs (`cm_dup_rep_handler`); the
            // state machine decides what it gets (e.g. the RTU again). Anyone else's is a
            // stray.
            if inner.is_from_peer(rep.local_comm_id) {
                let _ = self.apply(&mut inner, Event::RxRep, None);
            }
            return;
        }
        // From now on the peer's (comm ID, CA GUID) finds this CEP (a timeout REJ needs it).
        // Another connection holding them already makes this REP a duplicate: dropped, as
        // `cm_rep_handler` drops it when `cm_insert_remote_id` fails.
        let key = PeerId::by_guid(rep.local_comm_id, rep.local_ca_guid);
        if self
            .cm
            .tables
            .insert_peer(PeerTable::CommId, key, self, reservation)
            .is_some()
        {
            return;
        }
        let xrc_initiator = inner
            .kind
            .connection()
            .and_then(|c| c.negotiated.as_ref())
            .is_some_and(|n| n.qp_type == QpType::XrcIni);
        let qpn_key = PeerId::by_guid(rep.sender_qpn(xrc_initiator), rep.local_ca_guid);
        if let Some(old) =
            self.cm
                .tables
                .insert_peer(PeerTable::Qpn, qpn_key, self, qpn_reservation)
        {
            self.cm.tables.remove_peer(PeerTable::CommId, key, self);
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
        if let Some(peer) = inner.peer.as_mut() {
            peer.comm_id = rep.local_comm_id;
        }
        if let Some(c) = inner.kind.connection_mut() {
            c.remote_qpn_key = Some(qpn_key);
            c.remote_ece = Ece {
                vendor_id: rep.vendor_id,
                attr_mod,
            };
            c.remote_params = uapi::cepm_conn_params {
                responder_resources: rep.responder_resources,
                initiator_depth: rep.initiator_depth,
                flow_control: rep.end_to_end_flow_control.into(),
                retry_count: 0,
                rnr_retry_count: rep.rnr_retry_count,
                srq: rep.srq.into(),
                reserved: [0; 2],
            };
            if let Some(n) = c.negotiated.as_mut() {
                n.apply_received_rep(rep);
            }
        }
        inner.set_pdata(AttrId::Rep, rep.private_data.as_bytes());
        let _ = self.apply(&mut inner, Event::RxRep, None);
    }

    /// An RTU for this CEP's REP arrived.
    pub(crate) fn rtu_received(self: &Arc<Self>, rtu: &Rtu) {
        let mut inner = self.inner.lock();
        if !inner.is_from_peer(rtu.local_comm_id) {
            return;
        }
        let received = Received::answer(AttrId::Rtu, rtu.private_data.as_bytes());
        self.take_received(&mut inner, Event::RxRtu, received, |_| {});
    }

    /// Formats the REP for a claimed REQ without sending it.
    pub(crate) fn prepare_rep(self: &Arc<Self>, args: &uapi::cepm_accept) -> Result {
        let pdata = args.pdata.get(..usize::from(args.pdata_len)).ok_or(E2BIG)?;
        let private_data = PrivateData::new(pdata).map_err(|_| E2BIG)?;
        // Allocated before the lock, so that it may sleep and is charged to the caller's memory
        // cgroup; filled in under it.
        let mut rep_msg = KBox::new(Rep::default(), GFP_KERNEL_ACCOUNT)?;
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
            end_to_end_flow_control: args.flow_control != 0,
            local_ca_guid: peer.port.ca_guid(),
            private_data,
            vendor_id: args.ece_vendor_id,
            ..Default::default()
        };
        Self::check_encodable(CmMsg::Rep(rep))?;
        let checked = inner.check(Event::PrepareRep)?;
        let c = inner.kind.connection_mut().ok_or(EINVAL)?;
        // A QP already taken to RTR expects the PSN it was given there.
        if let Some(n) = c.negotiated.as_ref() {
            n.check_rep_psn(rep.starting_psn).map_err(|_| EINVAL)?;
        }
        c.local_qpn = args.local_qpn;
        c.ece_attr_mod = args.ece_attr_mod;
        // The QP keeps the user's parameters (`ib_send_cm_rep`), the REP what an XRC target
        // sends.
        let mut xrc_target = false;
        if let Some(n) = c.negotiated.as_mut() {
            n.apply_sent_rep(&rep);
            xrc_target = n.qp_type == QpType::XrcTgt;
        }
        *rep_msg = if xrc_target {
            rep.for_xrc_target()
        } else {
            rep
        };
        c.rep_msg = Some(rep_msg);
        self.commit(&mut inner, checked, None);
        Ok(())
    }

    /// Sends the prepared REP.
    pub(crate) fn send_rep(self: &Arc<Self>) -> Result {
        let mut inner = self.inner.lock();
        if inner.kind.connection().is_none_or(|c| c.rep_msg.is_none()) {
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
    pub(super) fn send_with_pdata(
        self: &Arc<Self>,
        event: Event,
        attr: AttrId,
        pdata: &[u8],
    ) -> Result {
        let mut inner = self.inner.lock();
        if inner.peer.is_none() {
            return Err(EINVAL);
        }
        let checked = inner.check(event)?;
        inner
            .kind
            .connection_mut()
            .ok_or(EINVAL)?
            .out_pdata
            .set(attr, pdata);
        self.commit(&mut inner, checked, None);
        Ok(())
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
        let checked = inner.check(event)?;
        if let (Some(timeout), Some(c)) = (service_timeout, inner.kind.connection_mut()) {
            c.mra_timeout_out = timeout;
        }
        self.commit(&mut inner, checked, None);
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
        // The timeout extends the send only with the MRA the state takes (a duplicate in
        // MRA_REQ_RCVD or MRA_REP_RCVD changes nothing, as in `cm_mra_handler`).
        let event = Event::RxMra(mra.message_mraed);
        let received = Received::answer(AttrId::Mra, mra.private_data.as_bytes());
        self.take_received(&mut inner, event, received, |inner| {
            if let Some(c) = inner.kind.connection_mut() {
                c.mra_service_timeout = mra.service_timeout;
            }
        });
    }

    /// A DREQ for this connection arrived: whether it came from this CEP's peer, by its
    /// comm ID (a DREQ from anyone else gets the stateless DREP, as `cm_dreq_handler` answers
    /// one that `cm_acquire_id` does not find).
    pub(crate) fn dreq_received(self: &Arc<Self>, dreq: &Dreq, tid: u64) -> bool {
        let mut inner = self.inner.lock();
        if !inner.is_from_peer(dreq.local_comm_id) {
            return false;
        }
        let qpn_matches = inner
            .kind
            .connection()
            .is_some_and(|c| c.local_qpn == dreq.remote_qpn);
        // The DREP answers the DREQ with its TID. One the state ignores (for another QPN, or
        // before the connection is made) changes nothing, the TID its later answers carry
        // included, as `cm_dreq_handler` keeps only the TID of a DREQ it takes.
        let event = Event::RxDreq { qpn_matches };
        let received = Received::request(AttrId::Dreq, dreq.private_data.as_bytes(), tid);
        self.take_received(&mut inner, event, received, |_| {});
        true
    }

    /// A DREP for this connection arrived.
    pub(crate) fn drep_received(self: &Arc<Self>, drep: &Drep) {
        let mut inner = self.inner.lock();
        if !inner.is_from_peer(drep.local_comm_id) {
            return;
        }
        let received = Received::answer(AttrId::Drep, drep.private_data.as_bytes());
        self.take_received(&mut inner, Event::RxDrep, received, |_| {});
    }

    /// Takes a message from the peer that `event` describes, if the state allows it. Only a
    /// transition that hands the owner its event replaces what the owner reads for it: the
    /// private data, and what `keep` records of the message (a message the state ignores must
    /// not rewrite a REP's or REJ's data before it is read). A request's TID becomes the one
    /// our answers carry only if the transition acts on it (answers or delivers it).
    fn take_received(
        self: &Arc<Self>,
        inner: &mut CepInner,
        event: Event,
        received: Received<'_>,
        keep: impl FnOnce(&mut CepInner),
    ) {
        let Ok(checked) = inner.check(event) else {
            return;
        };
        if let Some(tid) = received.tid {
            if checked.acts_on_it() {
                inner.tid = tid;
            }
        }
        if checked.delivers() {
            inner.set_pdata(received.attr, received.pdata);
            keep(inner);
        }
        self.commit(inner, checked, None);
    }

    /// The attributes that move the connection's QP to `args.qp_state`.
    pub(crate) fn qp_attr(&self, args: &mut uapi::cepm_qp_attr) -> Result {
        let target = match args.qp_state {
            uapi::CEPM_QPS_INIT => QpState::Init,
            uapi::CEPM_QPS_RTR => QpState::Rtr,
            uapi::CEPM_QPS_RTS => QpState::Rts,
            _ => return Err(EINVAL),
        };
        let mut inner = self.inner.lock();
        let info = inner.peer.as_ref().ok_or(EINVAL)?.ah_info;
        let state = inner.sm.state;
        let negotiated = inner.kind.negotiated_mut().ok_or(EINVAL)?;
        // RTR's receive PSN, once given, is the one the REP must announce (`prepare_rep`).
        let a = negotiated.give_out(state, target).map_err(|_| EINVAL)?;
        let (path_mtu, packet_life_time, pkey) = (
            negotiated.path_mtu,
            negotiated.packet_life_time,
            negotiated.pkey,
        );
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
        // The whole address, whatever the target state: nothing the caller left in it stays.
        args.ah.mtu = path_mtu;
        args.ah.packet_life_time = packet_life_time;
        args.ah.pkey = pkey;
        Ok(())
    }

    /// A duplicate of the REQ that created this CEP arrived.
    pub(crate) fn duplicate_req(self: &Arc<Self>) {
        let mut inner = self.inner.lock();
        let _ = self.apply(&mut inner, Event::RxDupReq, None);
    }

    /// A new connection reuses this one's peer QP: this one is stale, disconnect it.
    pub(crate) fn stale(self: &Arc<Self>) {
        let mut inner = self.inner.lock();
        let _ = self.apply(&mut inner, Event::StaleConnection, None);
    }

    /// The REJ to the peer: the user's reason, ARI and private data (`args`), or the
    /// protocol's.
    pub(super) fn rej_msg(
        &self,
        inner: &CepInner,
        reason: u16,
        rejected: MessageCode,
        zero_local_id: bool,
        ari_ca_guid: bool,
        args: Option<&RejectArgs<'_>>,
    ) -> Option<CmMsg> {
        let peer = inner.peer.as_ref()?;
        let mut ari = PrivateData::empty();
        let mut pdata = PrivateData::empty();
        if ari_ca_guid {
            ari = PrivateData::new(&peer.port.ca_guid().to_be_bytes()).unwrap_or(ari);
        }
        if let Some(args) = args {
            ari = PrivateData::new(args.ari).unwrap_or(ari);
            pdata = PrivateData::new(args.pdata).unwrap_or(pdata);
        }
        Some(CmMsg::Rej(Rej {
            local_comm_id: if zero_local_id { 0 } else { self.local_id },
            remote_comm_id: peer.comm_id,
            message_rejected: rejected,
            reason,
            ari,
            private_data: pdata,
        }))
    }

    /// The MRA for the peer's `what` (REQ or REP), with the CEP's service timeout.
    pub(super) fn mra_msg(&self, inner: &CepInner, what: MessageCode) -> Option<CmMsg> {
        let peer = inner.peer.as_ref()?;
        Some(CmMsg::Mra(Mra {
            local_comm_id: self.local_id,
            remote_comm_id: peer.comm_id,
            message_mraed: what,
            service_timeout: inner.kind.connection().map_or(24, |c| c.mra_timeout_out),
            private_data: PrivateData::empty(),
        }))
    }

    /// The RTU that completes the connection, with the private data the user gave for it.
    pub(super) fn rtu_msg(&self, inner: &CepInner) -> Option<CmMsg> {
        Some(CmMsg::Rtu(Rtu {
            local_comm_id: self.local_id,
            remote_comm_id: inner.peer.as_ref()?.comm_id,
            private_data: inner.out_pdata(AttrId::Rtu),
        }))
    }

    /// The DREQ for this connection, with the private data the user gave for it: it names the
    /// peer's QP.
    pub(super) fn dreq_msg(&self, inner: &CepInner) -> Option<CmMsg> {
        let peer = inner.peer.as_ref()?;
        let connection = inner.kind.connection()?;
        let remote_qpn = connection.negotiated.as_ref()?.remote_qpn?;
        let pdata = connection.out_pdata.for_msg(AttrId::Dreq);
        Some(CmMsg::Dreq(Dreq {
            local_comm_id: self.local_id,
            remote_comm_id: peer.comm_id,
            remote_qpn,
            private_data: PrivateData::new(pdata.get(..pdata.len().min(220)).unwrap_or(&[]))
                .unwrap_or(PrivateData::empty()),
        }))
    }

    /// The DREP that answers the peer's DREQ, with the private data the user gave for it.
    pub(super) fn drep_msg(&self, inner: &CepInner) -> Option<CmMsg> {
        Some(CmMsg::Drep(Drep {
            local_comm_id: self.local_id,
            remote_comm_id: inner.peer.as_ref()?.comm_id,
            private_data: inner.out_pdata(AttrId::Drep),
        }))
    }
}

impl CepInner {
    /// The private data the user gave for the message `attr` (RTU or DREP), empty if none.
    fn out_pdata<const N: usize>(&self, attr: AttrId) -> PrivateData<N> {
        let pdata = self
            .kind
            .connection()
            .map_or(&[][..], |c| c.out_pdata.for_msg(attr));
        PrivateData::new(pdata).unwrap_or(PrivateData::empty())
    }

    /// The REQ [`Cep::connect`] prepared, taken out of the connection to be sent.
    pub(super) fn take_prepared_req(&mut self) -> Option<CmMsg> {
        self.kind
            .connection_mut()
            .and_then(|c| c.req_msg.take())
            .map(|m| CmMsg::Req(*m))
    }

    /// A copy of the REP [`Cep::prepare_rep`] prepared, which stays with the connection.
    pub(super) fn prepared_rep(&self) -> Option<CmMsg> {
        self.kind
            .connection()
            .and_then(|c| c.rep_msg.as_deref())
            .map(|m| CmMsg::Rep(*m))
    }

    /// Waits longer for the answer to the retried send after the peer's MRA: the MRA's time
    /// plus the path's (`cm_mra_handler` in drivers/infiniband/core/cm.c).
    pub(super) fn extend_send_after_mra(&self) {
        let av_timeout = self.kind.negotiated().map_or(0, |n| n.ack_timeout);
        let mra_timeout = self.kind.connection().map_or(0, |c| c.mra_service_timeout);
        let timeout = self.retry.after_mra(mra_timeout, av_timeout).timeout_ms;
        if let Some(msg) = &self.msg {
            // SAFETY: `self` is a CEP's `inner`, reached only through its lock, which is held,
            // and `msg` is in its slot.
            let _ = unsafe { msg.extend(timeout) };
        }
    }
}

/// A message from the peer, as [`Cep::take_received`] takes it.
struct Received<'a> {
    attr: AttrId,
    pdata: &'a [u8],
    /// A request's TID, which our answers to it carry.
    tid: Option<u64>,
}

impl<'a> Received<'a> {
    /// An answer to something we sent (or a message we do not answer).
    fn answer(attr: AttrId, pdata: &'a [u8]) -> Self {
        Self {
            attr,
            pdata,
            tid: None,
        }
    }

    /// A request we answer, with the TID of its MAD.
    fn request(attr: AttrId, pdata: &'a [u8], tid: u64) -> Self {
        Self {
            attr,
            pdata,
            tid: Some(tid),
        }
    }
}

/// A REQ's primary path as its receiver sees it, turned round as Linux's
/// `cm_format_paths_from_req` (drivers/infiniband/core/cm.c) does: the peer's GID is the
/// destination, and the packet lifetime is the REQ's local ACK timeout less one. The source
/// GID's index and the next hop's MAC are those of the REQ's arrival, `from`.
fn received_path(req: &Req, from: &AhInfo) -> uapi::cepm_path_rec {
    let path = &req.primary_path;
    uapi::cepm_path_rec {
        dgid: path.local_gid,
        dmac: from.dmac,
        sgid_index: from.sgid_index,
        hop_limit: path.hop_limit,
        flow_label: path.flow_label,
        traffic_class: path.traffic_class,
        sl: path.sl,
        mtu: req.path_mtu,
        packet_life_time: timing::passive_packet_life_time(path.local_ack_timeout),
        pkey: req.pkey,
        reserved: [0; 2],
    }
}
