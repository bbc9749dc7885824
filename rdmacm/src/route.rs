//! The route of a resolved ID: what cepm's CONNECT and SIDR_REQ take from address and route
//! resolution, and rdma_cm's header for the request's private data.

use core::ffi::c_int;
use std::net::{IpAddr, SocketAddr};

use cepm::{device_name, sys as cepm_sys};
use cepm_proto::cma_hdr::{CmaAddrs, CmaHdr, CMA_HDR_SIZE};

use crate::{
    api::ids::ROCE_PACKET_LIFETIME,
    id::{Id, Phase},
    resolve::{address::Resolved, gid_table},
};

/// Where a resolved ID connects from and to.
pub(crate) struct Route {
    /// Address resolution's result.
    pub(crate) resolved: Resolved,
    /// Our address and port.
    pub(crate) local: SocketAddr,
    /// The peer's.
    pub(crate) remote: SocketAddr,
    /// The traffic class (`RDMA_OPTION_ID_TOS`).
    pub(crate) tos: u8,
}

impl Route {
    /// The route of `this`, once `rdma_resolve_route` succeeded (`EINVAL` before).
    pub(crate) fn of(this: &Id) -> Result<Self, c_int> {
        let state = this.state();
        let (Phase::RouteResolved, Some(resolved), Some(local), Some(remote)) = (
            state.phase,
            state.resolved.clone(),
            state.local,
            state.remote,
        ) else {
            return Err(libc::EINVAL);
        };
        Ok(Self {
            resolved,
            local,
            remote,
            tos: state.options.tos.unwrap_or(0),
        })
    }

    /// The path cepm sends on.
    pub(crate) fn path(&self) -> cepm_sys::cepm_path_rec {
        cepm_sys::cepm_path_rec {
            dgid: self.resolved.dgid,
            dmac: self.resolved.dmac,
            sgid_index: self.resolved.sgid_index,
            hop_limit: 64,
            traffic_class: self.tos,
            mtu: self.resolved.mtu,
            packet_life_time: ROCE_PACKET_LIFETIME,
            ..Default::default()
        }
    }

    /// The device's name, as cepm takes it.
    pub(crate) fn dev_name(&self) -> [core::ffi::c_char; device_name::DEVICE_NAME_MAX] {
        device_name::encode(&self.resolved.device)
    }

    /// rdma_cm's header for a REQ or SIDR_REQ on this route.
    pub(crate) fn cma_hdr(&self) -> [u8; CMA_HDR_SIZE] {
        let addrs = match (self.local.ip(), self.remote.ip()) {
            (IpAddr::V4(s), IpAddr::V4(d)) => CmaAddrs::V4 {
                src: s.octets(),
                dst: d.octets(),
            },
            (s, d) => CmaAddrs::V6 {
                src: gid_table::gid_of(s),
                dst: gid_table::gid_of(d),
            },
        };
        CmaHdr {
            src_port: self.local.port(),
            addrs,
        }
        .encode()
    }
}
