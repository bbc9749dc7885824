// SPDX-License-Identifier: GPL-2.0

//! Service ID resolution: the SIDR_REQ a CEP sends, the CEP spawned for one received, and
//! the SIDR_REP either way.

use kernel::{
    prelude::*,
    rbtree::RBTreeNodeReservation,
    sync::Arc, //
};

use crate::{
    port::CmPort,
    proto::{
        cm_mad::CmMsg,
        mad::{
            AttrId,
            MAD_SIZE, //
        },
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
    shim::AhInfo,
    tables::{
        PeerId,
        PeerTable, //
    },
    uapi, //
};

use super::connection::{
    ah_info,
    source_gid_error, //
};
use super::{
    kind::Sidr,
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
        let info = ah_info(path, &port)?;
        port.source_gid(path.sgid_index).map_err(source_gid_error)?;
        let pdata = args.pdata.get(..usize::from(args.pdata_len)).ok_or(E2BIG)?;
        let req = KBox::new(
            SidrReq {
                request_id: self.local_id,
                pkey: if path.pkey == 0 { 0xffff } else { path.pkey },
                service_id: args.service_id,
                private_data: PrivateData::new(pdata).map_err(|_| E2BIG)?,
            },
            GFP_KERNEL_ACCOUNT,
        )?;
        let node = RBTreeNodeReservation::new(GFP_KERNEL_ACCOUNT)?;
        let mut inner = self.inner.lock();
        let checked = inner.attach_first_peer(self, Event::SendSidrReq, port, info, node)?;
        inner.service_id = args.service_id;
        inner.retry = RetryTimer::req(
            path.packet_life_time,
            args.cm_response_timeout,
            args.max_cm_retries,
        );
        // A request from scratch, whatever this CEP was before.
        inner.kind = Kind::Sidr(Sidr {
            req_msg: Some(req),
            ..Sidr::default()
        });
        self.commit(&mut inner, checked, None);
        Ok(())
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
        CmMsg::SidrRep(*rep)
            .encode(&mut [0u8; MAD_SIZE])
            .map_err(|_| EINVAL)?;
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
    /// `ah_info` says where answers to it go.
    pub(crate) fn spawn_from_sidr_req(
        port: &Arc<CmPort>,
        ah_info: AhInfo,
        sreq: &SidrReq,
        tid: u64,
    ) -> Result<Spawned> {
        // Accounted, so that its claimer can be charged for it (`Cep::claim`).
        let mut info = KBox::new(uapi::cepm_req_info::default(), GFP_KERNEL_ACCOUNT)?;
        info.service_id = sreq.service_id;
        info.remote_comm_id = sreq.request_id;
        info.port_num = u8::try_from(port.num()).unwrap_or(0);
        info.sidr = 1;
        let pdata = sreq.private_data.as_bytes();
        let len = pdata.len().min(info.pdata.len());
        info.pdata[..len].copy_from_slice(&pdata[..len]);
        info.pdata_len = u8::try_from(len).unwrap_or(0);
        for (dst, src) in info.dev_name.iter_mut().zip(port.device_name().iter()) {
            *dst = *src;
        }
        let (sm, _actions) = state::Cep::spawned_from_sidr_req();
        let spawn = Spawn {
            port,
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
