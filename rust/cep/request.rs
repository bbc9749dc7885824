// SPDX-License-Identifier: GPL-2.0

//! What a REQ and a SIDR_REQ share: on the active side, where the request goes and how a CEP
//! sends its first one; on the passive side, the request as the user of a listener sees it.

use kernel::{
    prelude::*,
    rbtree::RBTreeNodeReservation,
    sync::Arc,
    time::{
        delay::fsleep,
        Delta, //
    },
};

use crate::{
    port::CmPort,
    proto::{
        state::Event,
        timing::RetryTimer, //
    },
    shim::{
        AhInfo,
        NetId, //
    },
    uapi, //
};

use super::{
    Cep,
    Kind, //
};

/// Where a request along a caller's path goes from a port.
pub(super) struct Route {
    /// The peer's address.
    pub(super) ah_info: AhInfo,
    /// Our GID the request comes from.
    pub(super) local_gid: [u8; 16],
    /// The P_Key the request carries: the path's, or the default one for none.
    pub(super) pkey: u16,
}

impl Route {
    /// The route `path` describes from `port`, for a CEP of network namespace `net`:
    /// `ENODEV` if the device is going away, else `EINVAL` if the port lacks the path's
    /// source GID, `EADDRNOTAVAIL` if that GID belongs to another namespace. The path's MAC
    /// is not used: the next hop's is looked up ([`next_hop_mac`]). May sleep.
    pub(super) fn new(path: &uapi::cepm_path_rec, port: &CmPort, net: NetId) -> Result<Self> {
        let mut ah_info = AhInfo {
            dgid: path.dgid,
            dmac: path.dmac,
            sgid_index: path.sgid_index,
            hop_limit: path.hop_limit,
            flow_label: path.flow_label,
            traffic_class: path.traffic_class,
            sl: path.sl,
            port_num: u8::try_from(port.num()).map_err(|_| EINVAL)?,
            reserved: 0,
        };
        let (local_gid, gid_net) = port.source_gid(path.sgid_index).map_err(source_gid_error)?;
        if gid_net != net {
            return Err(EADDRNOTAVAIL);
        }
        next_hop_mac(port, &mut ah_info)?;
        Ok(Self {
            ah_info,
            local_gid,
            pkey: if path.pkey == 0 { 0xffff } else { path.pkey },
        })
    }
}

/// How long a request waits for the MAC of its next hop, as `ib_resolve_eth_dmac` waits for
/// the RDMA core's address resolution when a user makes an address handle.
const NEXT_HOP_WAIT: Delta = Delta::from_millis(1000);
/// How often it looks again meanwhile.
const NEXT_HOP_POLL: Delta = Delta::from_millis(10);

/// Puts the MAC of the next hop to `ah_info.dgid` in `ah_info.dmac`, from the neighbour table
/// of the source GID's namespace, as the kernel's user address handles get theirs
/// (`rdma_create_user_ah`): a caller's MAC would let it aim CM MADs at any L2 address. Waits
/// up to [`NEXT_HOP_WAIT`] for the neighbour's resolution: `EHOSTUNREACH` if it does not come,
/// `ENETUNREACH` if no route by the source GID's netdev leads there, `EINVAL` for a broadcast
/// or multicast next hop. May sleep.
fn next_hop_mac(port: &CmPort, ah_info: &mut AhInfo) -> Result {
    let mut waited = Delta::ZERO;
    loop {
        match port.next_hop_mac(ah_info.sgid_index, &ah_info.dgid, &mut ah_info.dmac) {
            Err(e) if e == EAGAIN && waited < NEXT_HOP_WAIT => {
                fsleep(NEXT_HOP_POLL);
                waited += NEXT_HOP_POLL;
            }
            Err(e) if e == EAGAIN => return Err(EHOSTUNREACH),
            Err(e) => return Err(e),
            // A CM exchange is unicast (the multicast bit is the first octet's lowest).
            Ok(()) if ah_info.dmac[0] & 1 != 0 => return Err(EINVAL),
            Ok(()) => return Ok(()),
        }
    }
}

/// Why a caller's source GID cannot be used: the device going away (`ENODEV`), a GID whose
/// namespace may not use the device (`EADDRNOTAVAIL`, as one of another namespace), else a
/// GID the port lacks, or not of the type the port speaks, which is the caller's mistake
/// (`EINVAL`).
fn source_gid_error(e: Error) -> Error {
    if e == ENODEV {
        ENODEV
    } else if e == ENETUNREACH {
        EADDRNOTAVAIL
    } else {
        EINVAL
    }
}

/// The first request of a CEP that never had a peer, ready to go: the local call `event`
/// (REQ or SIDR_REQ), and what the CEP becomes with it.
pub(super) struct FirstRequest {
    pub(super) event: Event,
    pub(super) service_id: u64,
    pub(super) retry: RetryTimer,
    /// The kind the CEP becomes, with the message to send in it.
    pub(super) kind: Kind,
}

impl Cep {
    /// Sends `request` to the peer at `ah_info` through `port`: ties the CEP to that peer and
    /// commits the transition, whose actions send the message. Nothing changes if the call is
    /// not legal now or the device is going away.
    pub(super) fn send_first_request(
        self: &Arc<Self>,
        port: Arc<CmPort>,
        ah_info: AhInfo,
        request: FirstRequest,
    ) -> Result {
        let node = RBTreeNodeReservation::new(GFP_KERNEL_ACCOUNT)?;
        let mut inner = self.inner.lock();
        let checked = inner.attach_first_peer(self, request.event, port, ah_info, node)?;
        inner.service_id = request.service_id;
        inner.retry = request.retry;
        // A connection or request from scratch, whatever this CEP was before.
        inner.kind = request.kind;
        self.commit(&mut inner, checked, None);
        Ok(())
    }
}

/// The request a listener's CEP is spawned for, as the user will see it (`GET_REQUEST`): what
/// a REQ and a SIDR_REQ share, received on `port` from the peer's `remote_comm_id`; the caller
/// fills in the rest. Accounted, so that its claimer can be charged for it (`Cep::claim`).
pub(super) fn request_info(
    port: &CmPort,
    service_id: u64,
    remote_comm_id: u32,
    pdata: &[u8],
) -> Result<KBox<uapi::cepm_req_info>> {
    let mut info = KBox::new(uapi::cepm_req_info::default(), GFP_KERNEL_ACCOUNT)?;
    info.service_id = service_id;
    info.remote_comm_id = remote_comm_id;
    info.port_num = u8::try_from(port.num()).unwrap_or(0);
    let len = pdata.len().min(info.pdata.len());
    info.pdata[..len].copy_from_slice(&pdata[..len]);
    info.pdata_len = u8::try_from(len).unwrap_or(0);
    for (dst, src) in info.dev_name.iter_mut().zip(port.device_name().iter()) {
        *dst = *src;
    }
    Ok(info)
}
