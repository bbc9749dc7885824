//! UD IDs (`RDMA_PS_UDP`, `RDMA_PS_IPOIB`): rdma_cm's exchange over SIDR, as the kernel's
//! `rdma_cm` runs it (`cma_resolve_ib_udp`, `cma_sidr_rep_handler`, `cma_send_sidr_rep` in
//! drivers/infiniband/core/cma.c).
//!
//! - `rdma_connect` sends a SIDR_REQ with the `cma_hdr`; its SIDR_REP gives `ESTABLISHED`
//!   with the peer's QPN and Q_Key and the attributes of an address handle to it, or
//!   `UNREACHABLE` with the SIDR status, or `ADDR_ERROR` (`-EINVAL`) for another Q_Key.
//! - A SIDR_REQ on a UD listener is a `CONNECT_REQUEST` with `param.ud`.
//! - `rdma_accept` answers with a SIDR_REP (status 0, our QPN and rdma_cm's Q_Key), and
//!   `rdma_reject` with status 2 (rejected). The passive side gets no event after that.

use core::ffi::c_int;

use cepm::sys as cepm_sys;
use cepm_proto::{cma_hdr::CMA_HDR_SIZE, service_id::ip_service_id, service_id::PortSpace};

use crate::{
    id::{Id, Phase},
    qp::UDP_QKEY,
    route::Route,
    sys,
};

/// The private data an application may put in a SIDR_REQ: the message's 216 bytes less the
/// `cma_hdr`.
pub(crate) const SIDR_REQ_USER_PDATA: usize =
    cepm_sys::CEPM_SIDR_REQ_PDATA_MAX as usize - CMA_HDR_SIZE;
/// The private data of a SIDR_REP.
pub(crate) const SIDR_REP_PDATA: usize = cepm_sys::CEPM_SIDR_REP_PDATA_MAX as usize;

/// `rdma_connect` on a UD ID: the SIDR_REQ for the peer's port in `ps`.
pub(crate) fn resolve(this: &Id, ps: PortSpace, route: &Route, pdata: &[u8]) -> Result<(), c_int> {
    let mut args = cepm_sys::cepm_sidr_req {
        service_id: ip_service_id(ps, route.remote.port()),
        handle: this.handle(),
        port_num: u32::from(route.resolved.port),
        dev_name: route.dev_name(),
        path: route.path(),
        cm_response_timeout: crate::api::connection::cm_response_timeout(),
        max_cm_retries: crate::api::connection::max_cm_retries(),
        pdata_len: (CMA_HDR_SIZE + pdata.len()) as u8,
        ..Default::default()
    };
    args.pdata[..CMA_HDR_SIZE].copy_from_slice(&route.cma_hdr());
    args.pdata[CMA_HDR_SIZE..][..pdata.len()].copy_from_slice(pdata);
    this.channel()
        .cepm
        .sidr_req(&args)
        .map_err(crate::errno::of_io)?;
    this.state().phase = Phase::Connecting;
    Ok(())
}

/// `rdma_accept` on a UD ID born from a SIDR_REQ: a SIDR_REP with `qpn` (the ID's QP's, or
/// the one the parameters name; `EINVAL` if neither).
pub(crate) fn accept(this: &Id, param_qpn: Option<u32>, pdata: &[u8]) -> Result<(), c_int> {
    let qp: *mut sys::ibv_qp = this.public().qp;
    // SAFETY: The ID's QP, when it has one, is alive.
    let qpn = unsafe { qp.as_ref() }
        .map(|qp| qp.qp_num)
        .or(param_qpn)
        .filter(|&n| n != 0);
    let qpn = qpn.ok_or(libc::EINVAL)?;
    answer(this, cepm_sys::CEPM_SIDR_SUCCESS as u8, qpn, pdata)?;
    this.state().phase = Phase::Connected;
    Ok(())
}

/// `rdma_reject` on a UD ID born from a SIDR_REQ: a SIDR_REP with status "rejected".
pub(crate) fn reject(this: &Id, pdata: &[u8]) -> Result<(), c_int> {
    answer(this, cepm_sys::CEPM_SIDR_REJECT as u8, 0, pdata)?;
    this.state().phase = Phase::Done;
    Ok(())
}

fn answer(this: &Id, status: u8, qpn: u32, pdata: &[u8]) -> Result<(), c_int> {
    if this.state().phase != Phase::Requested {
        return Err(libc::EINVAL);
    }
    if pdata.len() > SIDR_REP_PDATA {
        return Err(libc::EINVAL);
    }
    let mut args = cepm_sys::cepm_sidr_rep {
        handle: this.handle(),
        qpn,
        qkey: UDP_QKEY,
        status,
        pdata_len: pdata.len() as u8,
        ..Default::default()
    };
    args.pdata[..pdata.len()].copy_from_slice(pdata);
    this.channel()
        .cepm
        .sidr_rep(&args)
        .map_err(crate::errno::of_io)
}

/// What a SIDR_REP means for the requester, as the kernel's `cma_sidr_rep_handler` decides.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Reply {
    /// `ESTABLISHED`: the peer's QPN and Q_Key.
    Established { qpn: u32, qkey: u32 },
    /// `UNREACHABLE`, with the SIDR status.
    Refused(i32),
    /// `ADDR_ERROR` (`-EINVAL`): the peer's Q_Key is not rdma_cm's.
    WrongQkey,
}

impl Reply {
    /// The reply for a SIDR_REP of `status`, `qpn` and `qkey`.
    pub(crate) fn of(status: u32, qpn: u32, qkey: u32) -> Self {
        if status != cepm_sys::CEPM_SIDR_SUCCESS {
            Self::Refused(status as i32)
        } else if qkey != UDP_QKEY {
            Self::WrongQkey
        } else {
            Self::Established { qpn, qkey }
        }
    }
}

/// The attributes of an address handle to the peer at the end of `route`.
pub(crate) fn ah_attr(
    route: &crate::resolve::address::Resolved,
    tos: u8,
    port: u8,
) -> sys::ibv_ah_attr {
    sys::ibv_ah_attr {
        grh: sys::ibv_global_route {
            dgid: sys::ibv_gid { raw: route.dgid },
            sgid_index: route.sgid_index,
            hop_limit: 64,
            traffic_class: tos,
            ..Default::default()
        },
        is_global: 1,
        port_num: port,
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sidr_rep_is_read_as_the_kernel_reads_it() {
        let ok = cepm_sys::CEPM_SIDR_SUCCESS;
        assert_eq!(
            Reply::of(ok, 0x42, UDP_QKEY),
            Reply::Established {
                qpn: 0x42,
                qkey: UDP_QKEY
            }
        );
        assert_eq!(Reply::of(ok, 0x42, 0x1234), Reply::WrongQkey);
        assert_eq!(
            Reply::of(cepm_sys::CEPM_SIDR_UNSUPPORTED, 0, 0),
            Reply::Refused(1)
        );
        assert_eq!(
            Reply::of(cepm_sys::CEPM_SIDR_REJECT, 0x42, UDP_QKEY),
            Reply::Refused(2)
        );
    }

    #[test]
    fn private_data_limits_are_the_messages_less_the_header() {
        assert_eq!(SIDR_REQ_USER_PDATA, 180);
        assert_eq!(SIDR_REP_PDATA, 136);
    }
}
