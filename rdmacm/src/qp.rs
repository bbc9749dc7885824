//! Moving an ID's QP through its states, as librdmacm does: INIT when it is created, then RTR
//! and RTS with the values the CM exchange settled (cepm's `INIT_QP_ATTR`), ERR when the
//! connection fails or ends.

use core::ffi::c_int;

use cepm::{sys as cepm_sys, Cepm};

use crate::sys;

/// The Q_Key of rdma_cm's UD port spaces (`RDMA_UDP_QKEY`).
pub(crate) const UDP_QKEY: u32 = sys::RDMA_UDP_QKEY;

/// Applies `attr` under `mask` to `qp`: 0 or the verbs errno.
fn modify(qp: *mut sys::ibv_qp, attr: &mut sys::ibv_qp_attr, mask: u32) -> Result<(), c_int> {
    // SAFETY: `qp` is a live QP of the ID; `attr` is ours for the call.
    match unsafe { sys::ibv_modify_qp(qp, attr, mask as c_int) } {
        0 => Ok(()),
        e => Err(e),
    }
}

/// An IB address vector from a cepm path record.
fn ah_attr(path: &cepm_sys::cepm_path_rec, port: u8) -> sys::ibv_ah_attr {
    let mut ah = sys::ibv_ah_attr {
        sl: path.sl,
        is_global: 1,
        port_num: port,
        ..Default::default()
    };
    ah.grh.dgid.raw = path.dgid;
    ah.grh.flow_label = path.flow_label;
    ah.grh.sgid_index = path.sgid_index;
    ah.grh.hop_limit = path.hop_limit;
    ah.grh.traffic_class = path.traffic_class;
    ah
}

/// The verbs attributes of cepm's answer to `INIT_QP_ATTR` for a QP on `port`, and their mask.
/// (cepm names the port in INIT's answer only; the address vector of RTR needs it too.)
pub(crate) fn from_cepm(
    attr: &cepm_sys::cepm_qp_attr,
    state: sys::ibv_qp_state,
    port: u8,
) -> (sys::ibv_qp_attr, u32) {
    let qp_attr = sys::ibv_qp_attr {
        qp_state: state,
        qp_access_flags: attr.qp_access_flags,
        dest_qp_num: attr.dest_qp_num,
        rq_psn: attr.rq_psn,
        sq_psn: attr.sq_psn,
        pkey_index: attr.pkey_index,
        port_num: attr.port_num,
        path_mtu: sys::ibv_mtu::from(attr.path_mtu),
        max_dest_rd_atomic: attr.max_dest_rd_atomic,
        max_rd_atomic: attr.max_rd_atomic,
        min_rnr_timer: attr.min_rnr_timer,
        timeout: attr.timeout,
        retry_cnt: attr.retry_cnt,
        rnr_retry: attr.rnr_retry,
        ah_attr: ah_attr(&attr.ah, port),
        ..Default::default()
    };
    (qp_attr, attr.attr_mask | sys::IBV_QP_STATE)
}

/// Moves `qp`, on `port`, to `state` with the attributes cepm gives CEP `handle` for it; `max_rd` and
/// `max_dest_rd`, where given, override the depths (what the application asked for), and
/// `ack_timeout` the local ACK timeout (`RDMA_OPTION_ID_ACK_TIMEOUT`).
pub(crate) fn to_state(
    cepm: &Cepm,
    handle: u32,
    qp: *mut sys::ibv_qp,
    port: u8,
    state: sys::ibv_qp_state,
    depths: Depths,
) -> Result<(), c_int> {
    let cepm_state = match state {
        sys::IBV_QPS_INIT => cepm_sys::CEPM_QPS_INIT,
        sys::IBV_QPS_RTR => cepm_sys::CEPM_QPS_RTR,
        _ => cepm_sys::CEPM_QPS_RTS,
    };
    let answer = cepm
        .qp_attr(handle, cepm_state)
        .map_err(|e| e.raw_os_error().unwrap_or(libc::EINVAL))?;
    let (mut attr, mask) = from_cepm(&answer, state, port);
    if let Some(d) = depths.max_dest_rd_atomic {
        attr.max_dest_rd_atomic = d;
    }
    if let Some(d) = depths.max_rd_atomic {
        attr.max_rd_atomic = d;
    }
    if let Some(t) = depths.ack_timeout {
        attr.timeout = t;
    }
    modify(qp, &mut attr, mask).inspect_err(|e| crate::debug!("modify_qp to {state}: errno {e}"))
}

/// Takes a connected `qp` through INIT (again: the CM exchange settled its access rights), RTR
/// and RTS with the attributes cepm gives CEP `handle`, and `depths`' overrides; on failure the
/// QP goes to ERR.
pub(crate) fn to_rts(
    cepm: &Cepm,
    handle: u32,
    qp: *mut sys::ibv_qp,
    port: u8,
    depths: Depths,
) -> Result<(), c_int> {
    // Each override is of a field of one state only: the other states' masks leave it out.
    let moved = [sys::IBV_QPS_INIT, sys::IBV_QPS_RTR, sys::IBV_QPS_RTS]
        .into_iter()
        .try_for_each(|state| to_state(cepm, handle, qp, port, state, depths));
    if moved.is_err() {
        let _ = to_error(qp);
    }
    moved
}

/// What the application or its options override in the attributes cepm gives.
#[derive(Clone, Copy, Default)]
pub(crate) struct Depths {
    /// RTR: responder resources.
    pub(crate) max_dest_rd_atomic: Option<u8>,
    /// RTS: initiator depth.
    pub(crate) max_rd_atomic: Option<u8>,
    /// RTS: local ACK timeout.
    pub(crate) ack_timeout: Option<u8>,
}

/// A connected QP to INIT before any CM exchange: the port, P_Key index 0, and no remote
/// access yet (the exchange grants it at RTR), as librdmacm's `ucma_init_conn_qp` leaves it.
pub(crate) fn init_connected(qp: *mut sys::ibv_qp, port: u8) -> Result<(), c_int> {
    let mut attr = sys::ibv_qp_attr {
        qp_state: sys::IBV_QPS_INIT,
        port_num: port,
        ..Default::default()
    };
    modify(
        qp,
        &mut attr,
        sys::IBV_QP_STATE | sys::IBV_QP_PKEY_INDEX | sys::IBV_QP_PORT | sys::IBV_QP_ACCESS_FLAGS,
    )
}

/// A UD QP all the way to RTS, as librdmacm's `ucma_init_ud_qp` takes it: INIT with the port
/// and rdma_cm's Q_Key, RTR, then RTS with PSN 0.
pub(crate) fn init_ud(qp: *mut sys::ibv_qp, port: u8) -> Result<(), c_int> {
    let mut attr = sys::ibv_qp_attr {
        qp_state: sys::IBV_QPS_INIT,
        port_num: port,
        qkey: UDP_QKEY,
        ..Default::default()
    };
    modify(
        qp,
        &mut attr,
        sys::IBV_QP_STATE | sys::IBV_QP_PKEY_INDEX | sys::IBV_QP_PORT | sys::IBV_QP_QKEY,
    )?;
    let mut attr = sys::ibv_qp_attr {
        qp_state: sys::IBV_QPS_RTR,
        ..Default::default()
    };
    modify(qp, &mut attr, sys::IBV_QP_STATE)?;
    let mut attr = sys::ibv_qp_attr {
        qp_state: sys::IBV_QPS_RTS,
        sq_psn: 0,
        ..Default::default()
    };
    modify(qp, &mut attr, sys::IBV_QP_STATE | sys::IBV_QP_SQ_PSN)
}

/// `qp` to ERR (no QP: nothing to do).
pub(crate) fn to_error(qp: *mut sys::ibv_qp) -> Result<(), c_int> {
    if qp.is_null() {
        return Ok(());
    }
    let mut attr = sys::ibv_qp_attr {
        qp_state: sys::IBV_QPS_ERR,
        ..Default::default()
    };
    modify(qp, &mut attr, sys::IBV_QP_STATE)
}
