// SPDX-License-Identifier: GPL-2.0

//! The CM receive path, Linux's `cm_recv_handler` (drivers/infiniband/core/cm.c): validate a
//! MAD with the protocol core, match it to a CEP, answer it.
//!
//! - A REQ goes to the listener of its service ID and address, which spawns an unclaimed CEP
//!   for it; a duplicate REQ goes to the CEP it duplicates.
//! - A REJ goes to the CEP it names, if it names that CEP's peer too (`proto::rej_match`).
//! - Whatever matches nothing gets the stateless answer Linux gives
//!   (`proto::state::stateless_reply`): a REQ for an unknown service is rejected with reason 8
//!   (`cm_match_req` through `cm_issue_rej`, drivers/infiniband/core/cm.c), one whose service
//!   has listeners, none for its address, with reason 28 (rdma_cm's `cma_ib_req_handler`
//!   failing), and a DREQ for unknown comm IDs gets a DREP (`cm_issue_drep`).

use kernel::{
    prelude::*,
    sync::Arc, //
};

use crate::{
    cep::{
        Cep,
        Spawned, //
    },
    port::CmPort,
    proto::{
        cm_mad::{
            CmMad,
            CmMsg, //
        },
        drep::Drep,
        error::DecodeError,
        listen_scope::req_destination,
        mad::MadHeader,
        msg_code::MessageCode,
        pdata::PrivateData,
        rej::Rej,
        rej_match::RejTarget,
        req::Req,
        sidr_rep::SidrRep,
        state::{
            stateless_reply,
            StatelessReply,
            Unmatched, //
        },
    },
    shim::{
        AhInfo,
        ReceivedMad,
        MAD_SIZE, //
    },
    tables::{
        ListenerFor,
        PeerId,
        PeerTable,
        Tables, //
    },
};

/// Handles one received MAD (already counted) on `port`. Runs in the MAD layer's receive
/// context: process context, may sleep.
pub(crate) fn mad_received(port: &Arc<CmPort>, mad: &ReceivedMad<'_>) {
    let mut to = ReplyTo { mad, info: None };
    let received = match CmMad::decode(mad.bytes()) {
        Ok(received) => received,
        Err(e) => {
            // A MAD cut short is counted as malformed, when it is received (`CmPort`).
            if !matches!(e, DecodeError::Truncated(_)) {
                port.count_invalid();
            }
            // A REQ for a transport we do not serve, or with QPN 0, is answered (REJ 9)
            // rather than dropped: the peer would retry it for minutes.
            if let (Some(comm_id), Ok(header)) = (
                Req::invalid_transport(mad.bytes(), &e),
                MadHeader::decode(mad.bytes()),
            ) {
                if let Some(rej) = rej_req(comm_id, Unmatched::ReqInvalidTransport, &[]) {
                    to.send(port, header.tid, rej);
                }
            }
            return;
        }
    };
    // `None`: a CEP took it; otherwise why nothing did, for the stateless answer.
    let routed = |found: bool, why: Unmatched| if found { None } else { Some(why) };
    let tid = received.header.tid;
    let tables = &port.cm().tables;
    let unmatched = match &received.msg {
        CmMsg::Req(req) => req_received(port, &mut to, req, tid, received.header.attr_mod),
        CmMsg::SidrReq(sreq) => sidr_req_received(port, &mut to, sreq, tid),
        CmMsg::Dreq(dreq) => routed(
            tables
                .find_local(dreq.remote_comm_id)
                .is_some_and(|cep| cep.dreq_received(dreq, tid)),
            Unmatched::Dreq,
        ),
        CmMsg::Rej(rej) => routed(rej_received(tables, rej), Unmatched::Other),
        CmMsg::Rep(rep) => to_local_cep(tables, rep.remote_comm_id, |c| {
            c.rep_received(rep, received.header.attr_mod)
        }),
        CmMsg::Rtu(rtu) => to_local_cep(tables, rtu.remote_comm_id, |c| c.rtu_received(rtu)),
        CmMsg::SidrRep(rep) => to_local_cep(tables, rep.request_id, |c| c.sidr_rep_received(rep)),
        CmMsg::Mra(mra) => to_local_cep(tables, mra.remote_comm_id, |c| c.mra_received(mra)),
        CmMsg::Drep(drep) => to_local_cep(tables, drep.remote_comm_id, |c| c.drep_received(drep)),
        _ => Some(Unmatched::Other),
    };
    let Some(why) = unmatched else {
        return;
    };
    let Some(answer) = stateless_answer(&received.msg, why) else {
        return;
    };
    to.send(port, tid, answer);
}

/// Where answers to a received MAD go. Its reply address is read from the work completion at
/// most once: by the first path that needs it (a REQ's or SIDR_REQ's routing), and then taken
/// by the answer too.
struct ReplyTo<'a, 'b> {
    mad: &'a ReceivedMad<'b>,
    info: Option<AhInfo>,
}

impl ReplyTo<'_, '_> {
    /// The sender's reply address. May sleep.
    fn info(&mut self) -> Result<AhInfo> {
        if let Some(info) = self.info {
            return Ok(info);
        }
        let info = self.mad.reply_info()?;
        self.info = Some(info);
        Ok(info)
    }

    /// Sends `answer` once back to the sender, with the request's TID `tid`, as Linux's
    /// response MADs carry it.
    fn send(&self, port: &CmPort, tid: u64, answer: CmMsg) {
        let Some(buf) = encode_answer(port, tid, answer) else {
            return;
        };
        if let Some(info) = &self.info {
            port.send_once(info, &buf, answer.attr());
            return;
        }
        match self.mad.reply(&buf) {
            Ok(()) => port.count_tx(answer.attr()),
            Err(_) => port.count_tx_error(),
        }
    }
}

/// `answer` as a MAD with the TID `tid` of the request it answers; `None`, counted as a send
/// error, if it cannot be encoded.
fn encode_answer(port: &CmPort, tid: u64, answer: CmMsg) -> Option<[u8; MAD_SIZE]> {
    let mut buf = [0u8; MAD_SIZE];
    if CmMad::new(tid, 0, answer).encode(&mut buf).is_err() {
        port.count_tx_error();
        return None;
    }
    Some(buf)
}

/// Hands a message to the CEP whose comm ID is `local_id`, our comm ID in it; `None` if there
/// is one, which decides what to do with it, else why it gets a stateless answer.
fn to_local_cep(tables: &Tables, local_id: u32, take: impl FnOnce(&Arc<Cep>)) -> Option<Unmatched> {
    let Some(cep) = tables.find_local(local_id) else {
        return Some(Unmatched::Other);
    };
    take(&cep);
    None
}

/// Hands a REJ to the CEP it is for ([`RejTarget`]); whether one took it.
fn rej_received(tables: &Tables, rej: &Rej) -> bool {
    let target = rej.target();
    let cep = match target {
        RejTarget::Peer { comm_id, ca_guid } => {
            tables.find_peer(PeerTable::CommId, PeerId::by_guid(comm_id, ca_guid))
        }
        RejTarget::Local { local_comm_id, .. } => tables.find_local(local_comm_id),
    };
    cep.is_some_and(|cep| cep.rej_received(rej, target))
}

/// Routes a REQ (with TID `tid` and attribute modifier `attr_mod`) to its listener; otherwise
/// says why it gets a stateless answer.
fn req_received(
    port: &Arc<CmPort>,
    to: &mut ReplyTo<'_, '_>,
    req: &Req,
    tid: u64,
    attr_mod: u32,
) -> Option<Unmatched> {
    let tables = &port.cm().tables;
    if let Some(cep) = tables.find_peer(
        PeerTable::CommId,
        PeerId::by_guid(req.local_comm_id, req.local_ca_guid),
    ) {
        cep.duplicate_req();
        return None;
    }
    // Allocation failures drop the REQ: the peer retries it (Linux does the same).
    let Ok(info) = to.info() else {
        return None;
    };
    // The GID the REQ arrived on names the network namespace whose listeners it is for, as
    // rdma_cm's `cma_ib_req_handler` finds them (`roce_get_net_dev_by_cm_event`); one whose
    // namespace may not use the device has none.
    let Ok(net) = port.gid_index_net(info.sgid_index) else {
        return Some(Unmatched::ReqNoListener);
    };
    // The primary path must lead to a GID of that namespace on this port: else REJ 12, our
    // GID 0 in the ARI. A peer cannot so reach another namespace's listeners by naming its
    // GID.
    if port.gid_net(&req.primary_path.remote_gid).ok() != Some(net) {
        let ari = port.gid(0).unwrap_or_default();
        if let Some(rej) = rej_req(req.local_comm_id, Unmatched::ReqInvalidGid, &ari) {
            to.send(port, tid, rej);
        }
        return None;
    }
    let dst = req_destination(
        req.service_id,
        req.private_data.as_bytes(),
        Some(&req.primary_path.remote_gid),
    );
    let listener = match tables.find_listener(net, req.service_id, dst) {
        ListenerFor::Found(listener) => listener,
        ListenerFor::NoAddress => return Some(Unmatched::ReqNoAddress),
        ListenerFor::Unknown => return Some(Unmatched::ReqNoListener),
    };
    let cep = match Cep::spawn_from_req(port, info, (req, net), tid, attr_mod) {
        Ok(Spawned::New(cep)) => cep,
        // Answered inside (a duplicate), or nothing to do until the peer retries.
        Ok(Spawned::Duplicate(existing)) => {
            existing.duplicate_req();
            return None;
        }
        Err(_) => return None,
        // REJ 10 to the new REQ (stateless: no CEP holds it) and disconnect the old one.
        Ok(Spawned::Stale(old)) => {
            old.stale();
            return Some(Unmatched::ReqStale);
        }
    };
    offer_or_drop(&listener, cep, false);
    None
}

/// Hands `cep`, spawned for a REQ (a SIDR_REQ if `sidr`), to `listener`. A full backlog, or no
/// room in it (an atomic allocation failed), drops the request: its sender retries it, where
/// a REJ or a SIDR_REP REJECT would be final. A listener gone meanwhile: the new CEP answers
/// the request so as it is destroyed.
fn offer_or_drop(listener: &Arc<Cep>, cep: Arc<Cep>, sidr: bool) {
    match listener.offer(cep.clone(), sidr) {
        Ok(()) => {}
        Err(e) if e == EBUSY || e == ENOMEM => cep.destroy_silently(),
        Err(_) => cep.destroy(),
    }
}

/// Routes a SIDR_REQ (with TID `tid`) to its listener; otherwise says why it gets a
/// stateless answer.
fn sidr_req_received(
    port: &Arc<CmPort>,
    to: &mut ReplyTo<'_, '_>,
    sreq: &crate::proto::sidr_req::SidrReq,
    tid: u64,
) -> Option<Unmatched> {
    // Without the requester's address the request cannot be keyed: dropped, the requester
    // retries it.
    let Ok(info) = to.info() else {
        return None;
    };
    // A retry of a request answered lately: its answer was lost, so send it again.
    let key = PeerId::by_gid(sreq.request_id, &info.dgid);
    if let Some(rep) = port.sidr_answer(key, sreq.service_id) {
        port.count_duplicate();
        to.send(port, tid, CmMsg::SidrRep(rep));
        return None;
    }
    // The GID it arrived on names the network namespace whose listeners it is for.
    let net = match port.gid_index_net(info.sgid_index) {
        Ok(net) => net,
        Err(_) => return Some(Unmatched::SidrReqNoListener),
    };
    let dst = req_destination(sreq.service_id, sreq.private_data.as_bytes(), None);
    let listener = match port.cm().tables.find_listener(net, sreq.service_id, dst) {
        ListenerFor::Found(listener) => listener,
        ListenerFor::NoAddress => return Some(Unmatched::SidrReqNoAddress),
        ListenerFor::Unknown => return Some(Unmatched::SidrReqNoListener),
    };
    // A retry of a SIDR_REQ still waiting (a duplicate): the first one will be answered.
    let Ok(Spawned::New(cep)) = Cep::spawn_from_sidr_req(port, info, (sreq, net), tid) else {
        return None;
    };
    offer_or_drop(&listener, cep, true);
    None
}

/// The stateless REJ, with additional information `ari`, of a REQ from comm ID `comm_id`
/// that gets one because of `why` (`cm_issue_rej`: LocalCommID 0, MessageRejected REQ).
fn rej_req(comm_id: u32, why: Unmatched, ari: &[u8]) -> Option<CmMsg> {
    let StatelessReply::RejReq(reason) = stateless_reply(why) else {
        return None;
    };
    Some(CmMsg::Rej(Rej {
        local_comm_id: 0,
        remote_comm_id: comm_id,
        message_rejected: MessageCode::Req,
        reason,
        ari: PrivateData::new(ari).ok()?,
        private_data: PrivateData::empty(),
    }))
}

/// The answer to `msg`, which matched no connection endpoint because of `why`, if any.
fn stateless_answer(msg: &CmMsg, why: Unmatched) -> Option<CmMsg> {
    match (stateless_reply(why), msg) {
        (StatelessReply::RejReq(_), CmMsg::Req(req)) => rej_req(req.local_comm_id, why, &[]),
        (StatelessReply::SidrRep(status), CmMsg::SidrReq(sreq)) => Some(CmMsg::SidrRep(SidrRep {
            request_id: sreq.request_id,
            status,
            service_id: sreq.service_id,
            ..Default::default()
        })),
        (StatelessReply::Drep, CmMsg::Dreq(dreq)) => Some(CmMsg::Drep(Drep {
            local_comm_id: dreq.remote_comm_id,
            remote_comm_id: dreq.local_comm_id,
            private_data: PrivateData::empty(),
        })),
        _ => None,
    }
}
