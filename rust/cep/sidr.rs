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
    shim::AddressHandle,
    tables::{
        self,
        PeerTable, //
    },
    uapi, //
};

use super::connection::ah_info;
use super::{
    Cep, //
    Peer,
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
        let checked = inner.attach_first_peer(self, Event::SendSidrReq, port, info, node)?;
        inner.service_id = args.service_id;
        inner.retry = RetryTimer::req(
            path.packet_life_time,
            args.cm_response_timeout,
            args.max_cm_retries,
        );
        inner.sidr_req_msg = Some(req);
        self.commit(&mut inner, checked, None);
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
        let checked = inner.check(Event::SendSidrRep {
            status: args.status,
        })?;
        inner.sidr_rep_msg = Some(rep);
        self.commit(&mut inner, checked, None);
        Ok(())
    }

    /// The CEP a listener spawns for a SIDR_REQ: unclaimed, in SIDR_REQ_RCVD, findable by the
    /// requester's (request ID, GID) so that retries are recognised.
    pub(crate) fn spawn_from_sidr_req(
        port: &Arc<CmPort>,
        ah: Arc<AddressHandle>,
        sreq: &SidrReq,
        tid: u64,
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
        for (dst, src) in info.dev_name.iter_mut().zip(port.device_name().iter()) {
            *dst = *src;
        }
        let key = tables::sidr_key(sreq.request_id, &ah_info.dgid);
        let reservation = RBTreeNodeReservation::new(GFP_KERNEL)?;
        let user_node = RBTreeNodeReservation::new(GFP_KERNEL)?;
        let (sm, _actions) = state::Cep::spawned_from_sidr_req();
        let tables = &port.cm().tables;
        let cep = tables.insert_new_local(|id| Self::new(port.cm().clone(), id, sm, None))?;
        if tables
            .insert_peer(PeerTable::SidrId, key, &cep, reservation)
            .is_some()
        {
            // A retry of a SIDR_REQ already waiting: the first one will be answered.
            tables.remove_local(cep.local_id);
            return Ok(None);
        }
        let mut inner = cep.inner.lock();
        if let Err(e) = port.adopt_user(&cep, user_node) {
            drop(inner);
            tables.remove_peer(PeerTable::SidrId, key, &cep);
            tables.remove_local(cep.local_id);
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
}
