// SPDX-License-Identifier: GPL-2.0

//! The CM receive path: validate a MAD with the protocol core, match it to a CEP, answer it.
//!
//! - A REQ goes to the listener of its service ID, which spawns an unclaimed CEP for it; a
//!   duplicate REQ goes to the CEP it duplicates.
//! - A REJ goes to the CEP whose local comm ID it names.
//! - Whatever matches nothing gets the stateless answer Linux gives
//!   (`proto::state::stateless_reply`): a REQ for an unknown service is rejected with reason 8
//!   (`drivers/infiniband/core/cm.c:2050-2057`, `cm_issue_rej` `cm.c:1607-1645`) and a DREQ
//!   for unknown comm IDs gets a DREP (`cm_issue_drep`, `cm.c:2811-2840`).

use kernel::{
    prelude::*,
    sync::Arc, //
};

use crate::{
    cep::Cep,
    port::CmPort,
    proto::{
        cm_mad::{
            CmMad,
            CmMsg, //
        },
        drep::Drep,
        msg_code::MessageCode,
        pdata::PrivateData,
        rej::Rej,
        sidr_rep::SidrRep,
        state::{
            stateless_reply,
            StatelessReply,
            Unmatched, //
        },
    },
    shim::{
        ReceivedMad,
        MAD_SIZE, //
    },
    tables, //
};

/// Handles one received MAD (already counted) on `port`. Runs in the MAD layer's receive
/// context: process context, may sleep.
pub(crate) fn mad_received(port: &Arc<CmPort>, mad: &ReceivedMad<'_>) {
    let Ok(received) = CmMad::decode(mad.bytes()) else {
        port.count_invalid();
        return;
    };
    let matched = match &received.msg {
        CmMsg::Req(req) => req_received(port, mad, req),
        CmMsg::Rej(rej) => tables::find_local(rej.remote_comm_id).map(|cep| cep.rej_received(rej)).is_some(),
        CmMsg::Rep(rep) => tables::find_local(rep.remote_comm_id).map(|cep| cep.rep_received(rep)).is_some(),
        CmMsg::Rtu(rtu) => tables::find_local(rtu.remote_comm_id).map(|cep| cep.rtu_received(rtu)).is_some(),
        CmMsg::Dreq(dreq) => tables::find_local(dreq.remote_comm_id).map(|cep| cep.dreq_received(dreq)).is_some(),
        CmMsg::SidrReq(sreq) => sidr_req_received(port, mad, sreq),
        CmMsg::SidrRep(rep) => tables::find_local(rep.request_id).map(|cep| cep.sidr_rep_received(rep)).is_some(),
        CmMsg::Mra(mra) => tables::find_local(mra.remote_comm_id).map(|cep| cep.mra_received(mra)).is_some(),
        CmMsg::Drep(drep) => tables::find_local(drep.remote_comm_id).map(|cep| cep.drep_received(drep)).is_some(),
        _ => false,
    };
    if matched {
        return;
    }
    let Some(answer) = stateless_answer(&received.msg) else {
        return;
    };
    let mut buf = [0u8; MAD_SIZE];
    // Answers carry the request's TID, as Linux's response MADs do.
    let reply = CmMad::new(received.header.tid, 0, answer);
    if reply.encode(&mut buf).is_err() {
        port.count_tx_error();
        return;
    }
    match mad.reply(&buf) {
        Ok(()) => port.count_tx(answer.attr()),
        Err(_) => port.count_tx_error(),
    }
}

/// Routes a REQ to its listener; false if nobody listens on its service ID.
fn req_received(port: &Arc<CmPort>, mad: &ReceivedMad<'_>, req: &crate::proto::req::Req) -> bool {
    if let Some(cep) = tables::find_remote((req.local_comm_id, req.local_ca_guid)) {
        cep.duplicate_req();
        return true;
    }
    let Some(listener) = tables::find_listener(req.service_id) else {
        return false;
    };
    // Allocation failures drop the REQ: the peer retries it (Linux does the same).
    let Ok(ah) = mad.reply_ah() else {
        return true;
    };
    let device = port.device_name();
    let Ok(Some(cep)) = Cep::spawn_from_req(port, ah, req, &device) else {
        return true;
    };
    match listener.offer(cep.clone(), false) {
        Ok(()) => {}
        // A full backlog: drop the REQ; the peer retries it.
        Err(e) if e == EBUSY => cep.destroy_silently(),
        // The listener went away meanwhile: the new CEP rejects the REQ as it is destroyed.
        Err(_) => cep.destroy(),
    }
    true
}

/// Routes a SIDR_REQ to its listener; false if nobody listens on its service ID.
fn sidr_req_received(port: &Arc<CmPort>, mad: &ReceivedMad<'_>, sreq: &crate::proto::sidr_req::SidrReq) -> bool {
    let Some(listener) = tables::find_listener(sreq.service_id) else {
        return false;
    };
    let Ok(ah) = mad.reply_ah() else {
        return true;
    };
    let device = port.device_name();
    let Ok(Some(cep)) = Cep::spawn_from_sidr_req(port, ah, sreq, &device) else {
        return true;
    };
    match listener.offer(cep.clone(), true) {
        Ok(()) => {}
        Err(e) if e == EBUSY => cep.destroy_silently(),
        // The destroy answers the SIDR_REQ with status REJECT.
        Err(_) => cep.destroy(),
    }
    true
}

/// The answer to a message that matched no connection endpoint, if any.
fn stateless_answer(msg: &CmMsg) -> Option<CmMsg> {
    let why = match msg {
        CmMsg::Req(_) => Unmatched::ReqNoListener,
        CmMsg::Dreq(_) => Unmatched::Dreq,
        CmMsg::SidrReq(_) => Unmatched::SidrReqNoListener,
        _ => Unmatched::Other,
    };
    match (stateless_reply(why), msg) {
        (StatelessReply::RejReq(reason), CmMsg::Req(req)) => Some(CmMsg::Rej(Rej {
            local_comm_id: 0,
            remote_comm_id: req.local_comm_id,
            message_rejected: MessageCode::Req,
            reason,
            ari: PrivateData::empty(),
            private_data: PrivateData::empty(),
        })),
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
