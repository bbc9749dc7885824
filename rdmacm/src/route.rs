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
    sys,
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
            hop_limit: HOP_LIMIT,
            flow_label: self.flow_label(),
            traffic_class: self.tos,
            mtu: self.resolved.mtu,
            packet_life_time: ROCE_PACKET_LIFETIME,
            ..Default::default()
        }
    }

    /// The path as `route.path_rec` shows it, as rdma_cm's `cma_resolve_iboe_route`
    /// (`drivers/infiniband/core/cma.c`) makes it on RoCE: the port's own rate, P_Key 0xffff.
    pub(crate) fn path_record(&self) -> sys::ibv_sa_path_rec {
        let mut rec = sys::ibv_sa_path_rec {
            flow_label: self.flow_label().to_be(),
            hop_limit: HOP_LIMIT,
            traffic_class: self.tos,
            reversible: 1,
            numb_path: 1,
            pkey: 0xffffu16.to_be(),
            mtu_selector: EXACTLY,
            mtu: self.resolved.mtu,
            rate_selector: EXACTLY,
            rate: 0, // IB_RATE_PORT_CURRENT
            packet_life_time_selector: EXACTLY,
            packet_life_time: ROCE_PACKET_LIFETIME,
            preference: PATH_PREFERENCE,
            ..Default::default()
        };
        rec.dgid.raw = self.resolved.dgid;
        rec.sgid.raw = gid_table::gid_of(self.resolved.source);
        rec
    }

    /// The flow label of a RoCE v2 path, as rdma_cm's `cma_get_roce_udp_flow_label` chooses
    /// it: an IPv6 source's own, else a hash of the two ports, which spreads connections
    /// between two hosts over the UDP source ports RoCE v2 derives from it.
    fn flow_label(&self) -> u32 {
        const FLOW_LABEL_MASK: u32 = 0xf_ffff;
        let own = match self.local {
            SocketAddr::V6(v6) => u32::from_be(v6.flowinfo()) & FLOW_LABEL_MASK,
            SocketAddr::V4(_) => 0,
        };
        if own != 0 {
            return own;
        }
        (u32::from(self.local.port()) * 31 + u32::from(self.remote.port())) & FLOW_LABEL_MASK
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

/// A path record's selector for "exactly this value" (`IB_SA_EQ`).
pub(crate) const EXACTLY: u8 = 2;

/// The preference librdmacm gives every path the kernel hands it: the path's flags,
/// `IB_PATH_GMP | IB_PATH_PRIMARY | IB_PATH_BIDIRECTIONAL` (`ucma_query_path` in
/// drivers/infiniband/core/ucma.c sets them, and rdma-core's `ucma_convert_path` copies them).
const PATH_PREFERENCE: u8 = 0x2b;

/// The hop limit of a RoCE path: IP's default TTL, which rdma_cm takes from the route
/// (`addr->dev_addr.hoplimit`, set from `ip4_dst_hoplimit`).
const HOP_LIMIT: u8 = 64;

/// Sets `route.addr.addr.ibaddr`'s GIDs from the ID's addresses, as rdma_cm's
/// `rdma_read_gids` gives them on RoCE (`drivers/infiniband/core/cma.c`): each address's GID.
pub(crate) fn set_ib_gids(this: &Id, local: IpAddr, remote: IpAddr) {
    let ib = sys::rdma_ib_addr {
        sgid: sys::ibv_gid {
            raw: gid_table::gid_of(local),
        },
        dgid: sys::ibv_gid {
            raw: gid_table::gid_of(remote),
        },
        // RoCE has no P_Key there: rdma_cm reads it from the netdev's broadcast address
        // (`ib_addr_get_pkey`), whose bytes 8 and 9 are 0 on Ethernet.
        pkey: 0,
    };
    // Writing the only member of the union writes all of it.
    this.update(|p| p.route.addr.addr = sys::rdma_addr__bindgen_ty_3 { ibaddr: ib });
}

/// Makes `path` the ID's one path, `route.path_rec`, kept until the ID is destroyed (or the
/// route resolved again).
pub(crate) fn set_path(this: &Id, path: sys::ibv_sa_path_rec) {
    let mut path = Box::new(path);
    let raw: *mut sys::ibv_sa_path_rec = &mut *path;
    // The record the application may hold stays until the new one is in place.
    let old = this.state().path.replace(path);
    this.update(|p| {
        p.route.path_rec = raw;
        p.route.num_paths = 1;
    });
    drop(old);
}

/// The path record of a request's primary path (`path`, as the module gives it: seen from
/// this side), for the passive ID to `local`, as librdmacm reads it from the kernel
/// (`ucma_query_path` and `ucma_convert_path` in rdma-core's `librdmacm/cma.c`, of the path
/// `cm_format_paths_from_req` makes).
pub(crate) fn received_path(path: &cepm_sys::cepm_path_rec, local: IpAddr) -> sys::ibv_sa_path_rec {
    let mut rec = sys::ibv_sa_path_rec {
        flow_label: path.flow_label.to_be(),
        hop_limit: path.hop_limit,
        traffic_class: path.traffic_class,
        reversible: 1,
        numb_path: 1,
        pkey: path.pkey.to_be(),
        sl: path.sl,
        mtu_selector: EXACTLY,
        mtu: path.mtu,
        rate_selector: EXACTLY,
        packet_life_time_selector: EXACTLY,
        packet_life_time: path.packet_life_time,
        preference: PATH_PREFERENCE,
        ..Default::default()
    };
    rec.dgid.raw = path.dgid;
    rec.sgid.raw = gid_table::gid_of(local);
    rec
}
