// SPDX-License-Identifier: GPL-2.0

//! Service ID resolution: the SIDR_REQ a CEP sends, the CEP spawned for one received, and
//! the SIDR_REP either way.

use kernel::{
    prelude::*,
    sync::Arc, //
};

use crate::{
    port::CmPort,
    proto::{
        cm_mad::CmMsg,
        mad::AttrId,
        pdata::PrivateData,
        sidr_rep::SidrRep,
        sidr_req::SidrReq,
        state::{
            self,
            Event,
            State, //
        },
        timing::RetryTimer, //
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
    kind::Sidr,
    request::{
        request_info,
        FirstRequest,
        Route, //
    },
    Cep,
    CepInner,
    Kind,
    Spawn,
    Spawned, //
};

impl Cep {
    /// Sends a SIDR_REQ for `args.service_id` from `port`.
    pub(crate) fn sidr_req(
        self: &Arc<Self>,
        port: Arc<CmPort>,
        args: &uapi::cepm_sidr_req,
    ) -> Result {
        let path = &args.path;
        let route = Route::new(path, &port, self.net)?;
        let pdata = args.pdata.get(..usize::from(args.pdata_len)).ok_or(E2BIG)?;
        let req = KBox::new(
            SidrReq {
                request_id: self.local_id,
                pkey: route.pkey,
                service_id: args.service_id,
                private_data: PrivateData::new(pdata).map_err(|_| E2BIG)?,
            },
            GFP_KERNEL_ACCOUNT,
        )?;
        let request = FirstRequest {
            event: Event::SendSidrReq,
            service_id: args.service_id,
            retry: RetryTimer::req(
                path.packet_life_time,
                args.cm_response_timeout,
                args.max_cm_retries,
            ),
            kind: Kind::Sidr(Sidr {
                req_msg: Some(req),
                ..Sidr::default()
            }),
        };
        self.send_first_request(port, route.ah_info, request)
    }

    /// The answer to our SIDR_REQ arrived.
    pub(crate) fn sidr_rep_received(self: &Arc<Self>, rep: &SidrRep) {
        let mut inner = self.inner.lock();
        if inner.sm.state != State::SidrReqSent {
            return;
        }
        if let Some(s) = inner.kind.sidr_mut() {
            s.status = rep.status;
            s.qpn = rep.qpn;
            s.qkey = rep.qkey;
        }
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
            GFP_KERNEL_ACCOUNT,
        )?;
        Self::check_encodable(CmMsg::SidrRep(*rep))?;
        let mut inner = self.inner.lock();
        let checked = inner.check(Event::SendSidrRep {
            status: args.status,
        })?;
        inner.kind.sidr_mut().ok_or(EINVAL)?.rep_msg = Some(rep);
        self.commit(&mut inner, checked, None);
        Ok(())
    }

    /// The CEP a listener spawns for a SIDR_REQ: unclaimed, in SIDR_REQ_RCVD, findable by the
    /// requester's (request ID, GID) so that retries are recognised ([`Cep::spawn`]).
    /// `ah_info` says where answers to it go; `net` is the namespace of the GID it arrived
    /// on.
    pub(crate) fn spawn_from_sidr_req(
        port: &Arc<CmPort>,
        ah_info: AhInfo,
        (sreq, net): (&SidrReq, NetId),
        tid: u64,
    ) -> Result<Spawned> {
        let pdata = sreq.private_data.as_bytes();
        let mut info = request_info(port, sreq.service_id, sreq.request_id, pdata)?;
        info.sidr = 1;
        let (sm, _actions) = state::Cep::spawned_from_sidr_req();
        let spawn = Spawn {
            port,
            net,
            key: PeerId::by_gid(sreq.request_id, &ah_info.dgid),
            ah_info,
            sm,
            kind: Kind::Sidr(Sidr {
                req: Some(info),
                ..Sidr::default()
            }),
            table: PeerTable::SidrId,
            qpn_key: None,
            service_id: sreq.service_id,
            tid,
        };
        Self::spawn(spawn, |_, inner| inner.set_pdata(AttrId::SidrReq, pdata))
    }
}

impl CepInner {
    /// The SIDR_REQ [`Cep::sidr_req`] prepared, taken out of the request to be sent.
    pub(super) fn take_prepared_sidr_req(&mut self) -> Option<CmMsg> {
        self.kind
            .sidr_mut()
            .and_then(|s| s.req_msg.take())
            .map(|m| CmMsg::SidrReq(*m))
    }

    /// The SIDR_REP that answers the peer's SIDR_REQ with `status`: the user's answer, or
    /// (destroy of an unanswered SIDR_REQ) a bare status. The port remembers it for the
    /// request's retries, should this answer be lost.
    pub(super) fn remembered_sidr_rep(&self, status: u8) -> Option<CmMsg> {
        let peer = self.peer.as_ref()?;
        let mut rep = self
            .kind
            .sidr()
            .and_then(|s| s.rep_msg.as_deref())
            .copied()
            .unwrap_or_default();
        rep.request_id = peer.comm_id;
        rep.status = status;
        rep.service_id = self.service_id;
        peer.port
            .remember_sidr_answer(PeerId::by_gid(peer.comm_id, &peer.ah_info.dgid), rep);
        Some(CmMsg::SidrRep(rep))
    }
}
