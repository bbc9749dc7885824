//! Connections: `rdma_connect`, `rdma_accept`, `rdma_reject`, `rdma_disconnect`,
//! `rdma_establish`, `rdma_notify`, `rdma_init_qp_attr`, `rdma_set_option`.

use core::ffi::{c_int, c_void};

use cepm::sys as cepm_sys;
use cepm_proto::{cma_hdr::CMA_HDR_SIZE, service_id::ip_service_id};

use super::{
    ece,
    ids::{id_of, port_space},
};
use crate::{
    device, errno,
    event::{REJ_PDATA, REP_PDATA, REQ_USER_PDATA},
    id::{Id, Phase},
    qp::{self, Depths},
    route::Route,
    sync, sys, ud,
};

/// rdma_cm's CM response timeout (`CMA_CM_RESPONSE_TIMEOUT`), an IBTA exponent: 4 s.
const CM_RESPONSE_TIMEOUT: u8 = 20;
/// rdma_cm's CM retries (`CMA_MAX_CM_RETRIES`).
const MAX_CM_RETRIES: u8 = 15;

/// The environment variable `name` as a number up to `max`, else `default`.
fn env_knob(name: &str, max: u8, default: u8) -> u8 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n <= max)
        .unwrap_or(default)
}

/// How often a REQ or SIDR_REQ is resent before the peer counts as unreachable: rdma_cm's 15,
/// or `CEPM_RDMACM_CM_RETRIES` (0 to 15; read once), which rdma_cm does not have. With 15, an
/// unanswered REQ takes more than a minute to give `UNREACHABLE`.
pub(crate) fn max_cm_retries() -> u8 {
    static RETRIES: std::sync::OnceLock<u8> = std::sync::OnceLock::new();
    *RETRIES.get_or_init(|| env_knob("CEPM_RDMACM_CM_RETRIES", MAX_CM_RETRIES, MAX_CM_RETRIES))
}

/// The CM response timeout of a REQ or SIDR_REQ (an IBTA exponent): rdma_cm's 20, or
/// `CEPM_RDMACM_CM_RESPONSE_TIMEOUT` (0 to 31; read once), which rdma_cm does not have either.
/// A test of an unreachable peer uses 17 to wait about 1 s for each try instead of 4.6 s.
pub(crate) fn cm_response_timeout() -> u8 {
    static TIMEOUT: std::sync::OnceLock<u8> = std::sync::OnceLock::new();
    *TIMEOUT.get_or_init(|| env_knob("CEPM_RDMACM_CM_RESPONSE_TIMEOUT", 31, CM_RESPONSE_TIMEOUT))
}

/// The private data of `param` (none for a NULL `param`), `EINVAL` if longer than `max`.
///
/// # Safety
///
/// `param` is NULL or valid, its private data valid for its length.
unsafe fn user_pdata(param: Option<&sys::rdma_conn_param>, max: usize) -> Result<&[u8], c_int> {
    let Some(p) = param.filter(|p| !p.private_data.is_null() && p.private_data_len > 0) else {
        return Ok(&[]);
    };
    let len = usize::from(p.private_data_len);
    if len > max {
        return Err(libc::EINVAL);
    }
    // SAFETY: The caller vouches for `len` bytes at `private_data`.
    Ok(unsafe { core::slice::from_raw_parts(p.private_data.cast::<u8>(), len) })
}

/// A depth the application asked for, against the device's limit: 0xFF (or no parameters)
/// means the device's limit, or `fallback` capped by it; more than the limit is `EINVAL` in
/// the TCP port space, as librdmacm checks (`ucma_valid_param`).
fn negotiate(asked: Option<u8>, limit: u8, fallback: Option<u8>, tcp: bool) -> Result<u8, c_int> {
    match asked {
        None | Some(0xff) => Ok(fallback.map_or(limit, |f| f.min(limit))),
        Some(v) if tcp && v > limit => Err(libc::EINVAL),
        Some(v) => Ok(v),
    }
}

/// The QPN and SRQ flag a REQ or REP names: the ID's QP's, or (without one) the parameters'.
/// `EINVAL` for QPN 0, which cepm never sends (the kernel's rdma_cm would).
fn local_qp(
    qp: *mut sys::ibv_qp,
    param: Option<&sys::rdma_conn_param>,
) -> Result<(u32, u8), c_int> {
    let (qpn, srq) = if qp.is_null() {
        param.map_or((0, 0), |p| (p.qp_num, p.srq))
    } else {
        // SAFETY: The ID's QP is alive while the ID has it.
        let q = unsafe { &*qp };
        (q.qp_num, u8::from(!q.srq.is_null()))
    };
    if qpn == 0 {
        return Err(libc::EINVAL);
    }
    Ok((qpn, srq))
}

/// `int rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)`: sends the
/// REQ, with the `cma_hdr` and then the application's private data (at most 56 bytes).
///
/// # Safety
///
/// `id` is not destroyed during the call (see [`crate::api`]); `conn_param` NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn rdma_connect(
    id: *mut sys::rdma_cm_id,
    conn_param: *mut sys::rdma_conn_param,
) -> c_int {
    // SAFETY: The caller's pointers, as documented.
    let (Ok(this), param) = (unsafe { id_of(id) }, unsafe { conn_param.as_ref() }) else {
        return errno::fail(libc::EINVAL);
    };
    let connected = connect(this, param).and_then(|()| sync::complete(this));
    errno::status(connected.inspect_err(|e| crate::debug!("rdma_connect: errno {e}")))
}

fn connect(this: &Id, param: Option<&sys::rdma_conn_param>) -> Result<(), c_int> {
    let public = this.public();
    let ps = port_space(public.ps).ok_or(libc::EINVAL)?;
    let route = Route::of(this)?;
    if public.qp_type == sys::IBV_QPT_UD {
        // SAFETY: The caller vouched for `conn_param`.
        let pdata = unsafe { user_pdata(param, ud::SIDR_REQ_USER_PDATA) }?;
        return ud::resolve(this, ps, &route, pdata);
    }
    let tcp = public.ps == sys::RDMA_PS_TCP;
    let qp: *mut sys::ibv_qp = public.qp;
    if tcp && qp.is_null() && param.is_none() {
        return Err(libc::EINVAL);
    }
    // The REQ names the ID's QP type, as `cma_connect_ib` sends it: an XRC send ID is the
    // initiator of an XRC connection; a receive ID (a target) sends no REQ, as
    // `cm_validate_req_param` in drivers/infiniband/core/cm.c refuses it.
    let transport = match public.qp_type {
        sys::IBV_QPT_UC => cepm_sys::CEPM_TRANSPORT_UC,
        sys::IBV_QPT_XRC_SEND => cepm_sys::CEPM_TRANSPORT_XRC,
        sys::IBV_QPT_XRC_RECV => return Err(libc::EINVAL),
        _ => cepm_sys::CEPM_TRANSPORT_RC,
    };
    let resolved = &route.resolved;
    let dev = device::by_name(&resolved.device)?;
    let responder_resources = negotiate(
        param.map(|p| p.responder_resources),
        dev.max_responder_resources,
        None,
        tcp,
    )?;
    let initiator_depth = negotiate(
        param.map(|p| p.initiator_depth),
        dev.max_initiator_depth,
        None,
        tcp,
    )?;
    let (qpn, srq) = local_qp(qp, param)?;
    let header = route.cma_hdr();
    let cepm = &this.channel().cepm;
    let local_ece = this.state().local_ece;
    let (ece_vendor_id, ece_attr_mod) = ece::to_send(cepm, local_ece.vendor_id, local_ece.options);
    // SAFETY: The caller vouched for `conn_param`.
    let pdata = unsafe { user_pdata(param, REQ_USER_PDATA) }?;
    let mut args = cepm_sys::cepm_connect {
        service_id: ip_service_id(ps, route.remote.port()),
        handle: this.handle(),
        port_num: u32::from(resolved.port),
        local_qpn: qpn,
        starting_psn: cepm::psn::random_psn().map_err(errno::of_io)?,
        responder_resources,
        initiator_depth,
        remote_cm_response_timeout: cm_response_timeout(),
        local_cm_response_timeout: cm_response_timeout(),
        retry_count: param.map_or(7, |p| p.retry_count.min(7)),
        rnr_retry_count: param.map_or(7, |p| p.rnr_retry_count.min(7)),
        max_cm_retries: max_cm_retries(),
        srq,
        flow_control: flow_control(cepm, param),
        qp_type: transport as u8,
        pdata_len: (CMA_HDR_SIZE + pdata.len()) as u8,
        ece_vendor_id,
        ece_attr_mod,
        ..Default::default()
    };
    args.dev_name = route.dev_name();
    args.path = route.path();
    args.pdata[..CMA_HDR_SIZE].copy_from_slice(&header);
    args.pdata[CMA_HDR_SIZE..CMA_HDR_SIZE + pdata.len()].copy_from_slice(pdata);
    cepm.connect(&args).map_err(errno::of_io)?;
    this.state().phase = Phase::Connecting;
    Ok(())
}

/// The end-to-end flow control bit of a REQ or REP: the parameter's low bit, as the kernel's
/// `IBA_SET` masks it into the message (`cm_format_req`, `cm_format_rep`), where the module
/// sends it (ABI 8).
fn flow_control(cepm: &cepm::Cepm, param: Option<&sys::rdma_conn_param>) -> u8 {
    if crate::abi::carries_conn_params(cepm) {
        param.map_or(0, |p| p.flow_control & 1)
    } else {
        0
    }
}

/// `int rdma_accept(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)`: with a QP,
/// moves it to RTR and RTS before the REP leaves (cepm's PREPARE_REP, then SEND_REP).
///
/// # Safety
///
/// `id` is not destroyed during the call (see [`crate::api`]); `conn_param` NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn rdma_accept(
    id: *mut sys::rdma_cm_id,
    conn_param: *mut sys::rdma_conn_param,
) -> c_int {
    // SAFETY: The caller's pointers, as documented.
    let (Ok(this), param) = (unsafe { id_of(id) }, unsafe { conn_param.as_ref() }) else {
        return errno::fail(libc::EINVAL);
    };
    // A UD ID's SIDR_REP leads to no event: nothing to wait for.
    let is_ud = this.public().qp_type == sys::IBV_QPT_UD;
    let accepted =
        accept(this, param).and_then(|()| if is_ud { Ok(()) } else { sync::complete(this) });
    errno::status(accepted.inspect_err(|e| crate::debug!("rdma_accept: errno {e}")))
}

fn accept(this: &Id, param: Option<&sys::rdma_conn_param>) -> Result<(), c_int> {
    let public = this.public();
    if public.qp_type == sys::IBV_QPT_UD {
        // SAFETY: The caller vouched for `conn_param`.
        let pdata = unsafe { user_pdata(param, ud::SIDR_REP_PDATA) }?;
        return ud::accept(this, param.map(|p| p.qp_num), pdata);
    }
    let tcp = public.ps == sys::RDMA_PS_TCP;
    let qp: *mut sys::ibv_qp = public.qp;
    if qp.is_null() && param.is_none() {
        return Err(libc::EINVAL);
    }
    let state = this.state();
    if state.phase != Phase::Requested || public.verbs.is_null() {
        return Err(libc::EINVAL);
    }
    let (requested_resources, requested_depth) = state.requested;
    let ack_timeout = state.options.ack_timeout;
    let local_psn = state.local_psn;
    // The REP returns the vendor ID it received, with this side's options.
    let ece = (state.remote_ece.vendor_id, state.local_ece.options);
    drop(state);
    // The device the REQ came in on.
    // SAFETY: `verbs` is a context of an opened device.
    let name =
        unsafe { core::ffi::CStr::from_ptr(sys::ibv_get_device_name((*public.verbs).device)) }
            .to_string_lossy()
            .into_owned();
    let dev = device::by_name(&name)?;
    let responder_resources = negotiate(
        param.map(|p| p.responder_resources),
        dev.max_responder_resources,
        Some(requested_resources),
        tcp,
    )?;
    let initiator_depth = negotiate(
        param.map(|p| p.initiator_depth),
        dev.max_initiator_depth,
        Some(requested_depth),
        tcp,
    )?;
    let (qpn, srq) = local_qp(qp, param)?;
    // SAFETY: The caller vouched for `conn_param`.
    let pdata = unsafe { user_pdata(param, REP_PDATA) }?;
    let cepm = &this.channel().cepm;
    let (ece_vendor_id, ece_attr_mod) = ece::to_send(cepm, ece.0, ece.1);
    let mut args = cepm_sys::cepm_accept {
        handle: this.handle(),
        local_qpn: qpn,
        // The PSN RTR gave, when the module chose it: the QP may be there already.
        starting_psn: match local_psn {
            Some(psn) => psn,
            None => cepm::psn::random_psn().map_err(errno::of_io)?,
        },
        responder_resources,
        initiator_depth,
        rnr_retry_count: param.map_or(7, |p| p.rnr_retry_count.min(7)),
        srq,
        flow_control: flow_control(cepm, param),
        pdata_len: pdata.len() as u8,
        ece_vendor_id,
        ece_attr_mod,
        ..Default::default()
    };
    args.pdata[..pdata.len()].copy_from_slice(pdata);
    let port = public.port_num;
    cepm.prepare_rep(&args).map_err(errno::of_io)?;
    if !qp.is_null() {
        let depths = Depths {
            max_dest_rd_atomic: Some(responder_resources),
            max_rd_atomic: Some(initiator_depth),
            ack_timeout,
        };
        qp::to_rts(cepm, this.handle(), qp, port, depths)?;
    }
    if let Err(e) = cepm.send_rep(this.handle()) {
        let _ = qp::to_error(qp);
        return Err(errno::of_io(e));
    }
    this.state().phase = Phase::Connected;
    Ok(())
}

/// `int rdma_reject(struct rdma_cm_id *id, const void *private_data, uint8_t
/// private_data_len)`: a REJ with the consumer-defined reason (28) and the private data
/// (at most 148 bytes).
///
/// # Safety
///
/// `id` is not destroyed during the call (see [`crate::api`]); `private_data` valid for
/// `private_data_len` bytes, or NULL.
#[no_mangle]
pub unsafe extern "C" fn rdma_reject(
    id: *mut sys::rdma_cm_id,
    private_data: *const c_void,
    private_data_len: u8,
) -> c_int {
    let reason = cepm_sys::CEPM_REJ_CONSUMER_DEFINED as u16;
    // SAFETY: The caller's promises.
    unsafe { reject_with_reason(id, private_data, private_data_len, reason) }
}

/// `rdma_reject` with REJ reason `reason` (a UD ID's SIDR_REP has no reason: REJECT).
///
/// # Safety
///
/// As `rdma_reject`'s.
pub(crate) unsafe fn reject_with_reason(
    id: *mut sys::rdma_cm_id,
    private_data: *const c_void,
    private_data_len: u8,
    reason: u16,
) -> c_int {
    // SAFETY: No one destroys the ID during the call (the caller's promise).
    let Ok(this) = (unsafe { id_of(id) }) else {
        return errno::fail(libc::EINVAL);
    };
    let len = usize::from(private_data_len);
    let is_ud = this.public().qp_type == sys::IBV_QPT_UD;
    if len > if is_ud { ud::SIDR_REP_PDATA } else { REJ_PDATA } {
        return errno::fail(libc::EINVAL);
    }
    let pdata = if private_data.is_null() || len == 0 {
        &[][..]
    } else {
        // SAFETY: The caller vouches for `len` bytes.
        unsafe { core::slice::from_raw_parts(private_data.cast::<u8>(), len) }
    };
    if is_ud {
        return errno::status(ud::reject(this, pdata));
    }
    match this
        .channel()
        .cepm
        .reject(this.handle(), reason, &[], pdata)
    {
        Ok(()) => {
            this.state().phase = Phase::Done;
            0
        }
        Err(e) => errno::fail(errno::of_io(e)),
    }
}

/// `int rdma_disconnect(struct rdma_cm_id *id)`: the QP to ERR, then a DREQ, or the DREP that
/// answers the peer's DREQ.
///
/// # Safety
///
/// `id` is not destroyed during the call (see [`crate::api`]).
#[no_mangle]
pub unsafe extern "C" fn rdma_disconnect(id: *mut sys::rdma_cm_id) -> c_int {
    // SAFETY: No one destroys the ID during the call (the caller's promise).
    let Ok(this) = (unsafe { id_of(id) }) else {
        return errno::fail(libc::EINVAL);
    };
    if this.public().verbs.is_null() {
        return errno::fail(libc::EINVAL);
    }
    if let Err(e) = qp::to_error(this.public().qp) {
        return errno::fail(e);
    }
    // A DREQ not read yet (a synchronous ID reads none between its calls) is answered too:
    // when the DREQ cannot be sent, the DREP is, as the kernel's rdma_disconnect does.
    let answer = this.state().peer_disconnected;
    let cepm = &this.channel().cepm;
    let sent = if answer {
        cepm.send_drep(this.handle(), &[])
    } else {
        cepm.send_dreq(this.handle(), &[])
            .or_else(|e| cepm.send_drep(this.handle(), &[]).map_err(|_| e))
    };
    if let Err(e) = sent {
        return errno::fail(errno::of_io(e));
    }
    errno::status(sync::complete(this))
}

/// `int rdma_establish(struct rdma_cm_id *id)`: after CONNECT_RESPONSE, for an application
/// that moved its own QP, sends the RTU. `EINVAL` for an ID with a QP of this library's.
///
/// # Safety
///
/// `id` is not destroyed during the call (see [`crate::api`]).
#[no_mangle]
pub unsafe extern "C" fn rdma_establish(id: *mut sys::rdma_cm_id) -> c_int {
    // SAFETY: No one destroys the ID during the call (the caller's promise).
    let Ok(this) = (unsafe { id_of(id) }) else {
        return errno::fail(libc::EINVAL);
    };
    if !this.public().qp.is_null() {
        return errno::fail(libc::EINVAL);
    }
    match this.channel().cepm.send_rtu(this.handle(), &[]) {
        Ok(()) => {
            this.state().phase = Phase::Connected;
            0
        }
        Err(e) => errno::fail(errno::of_io(e)),
    }
}

/// `int rdma_notify(struct rdma_cm_id *id, enum ibv_event_type event)`: `IBV_EVENT_COMM_EST`
/// (the QP received before the RTU) establishes the connection (cepm's ESTABLISH); other
/// events need nothing.
///
/// # Safety
///
/// `id` is not destroyed during the call (see [`crate::api`]).
#[no_mangle]
pub unsafe extern "C" fn rdma_notify(
    id: *mut sys::rdma_cm_id,
    event: sys::ibv_event_type,
) -> c_int {
    // SAFETY: No one destroys the ID during the call (the caller's promise).
    let Ok(this) = (unsafe { id_of(id) }) else {
        return errno::fail(libc::EINVAL);
    };
    if this.public().verbs.is_null() {
        return errno::fail(libc::EINVAL);
    }
    if event != sys::IBV_EVENT_COMM_EST {
        return 0;
    }
    match this.channel().cepm.establish(this.handle()) {
        Ok(()) => 0,
        Err(e) => errno::fail(errno::of_io(e)),
    }
}

/// `int rdma_init_qp_attr(struct rdma_cm_id *id, struct ibv_qp_attr *qp_attr, int
/// *qp_attr_mask)`: the attributes for `qp_attr->qp_state`, from the CM exchange. Before any
/// (an active ID not yet connected), INIT is the port with P_Key index 0 and no remote access.
///
/// # Safety
///
/// `id` is not destroyed during the call (see [`crate::api`]); `qp_attr` and `qp_attr_mask` valid.
#[no_mangle]
pub unsafe extern "C" fn rdma_init_qp_attr(
    id: *mut sys::rdma_cm_id,
    qp_attr: *mut sys::ibv_qp_attr,
    qp_attr_mask: *mut c_int,
) -> c_int {
    // SAFETY: The caller's pointers, as documented.
    let (Ok(this), Some(attr), false) = (
        unsafe { id_of(id) },
        unsafe { qp_attr.as_mut() },
        qp_attr_mask.is_null(),
    ) else {
        return errno::fail(libc::EINVAL);
    };
    if this.public().verbs.is_null() {
        return errno::fail(libc::EINVAL);
    }
    let state = attr.qp_state;
    let before_exchange = matches!(
        this.state().phase,
        Phase::Idle | Phase::AddrResolved | Phase::RouteResolved
    );
    let (out, mask) = if state == sys::IBV_QPS_INIT && before_exchange {
        (
            sys::ibv_qp_attr {
                qp_state: state,
                port_num: this.public().port_num,
                ..Default::default()
            },
            sys::IBV_QP_STATE
                | sys::IBV_QP_PKEY_INDEX
                | sys::IBV_QP_PORT
                | sys::IBV_QP_ACCESS_FLAGS,
        )
    } else {
        let cepm_state = match state {
            sys::IBV_QPS_INIT => cepm_sys::CEPM_QPS_INIT,
            sys::IBV_QPS_RTR => cepm_sys::CEPM_QPS_RTR,
            sys::IBV_QPS_RTS => cepm_sys::CEPM_QPS_RTS,
            _ => return errno::fail(libc::EINVAL),
        };
        match this.channel().cepm.qp_attr(this.handle(), cepm_state) {
            Ok(a) => {
                let (mut out, mask) = qp::from_cepm(&a, state, this.public().port_num);
                if let Some(t) = this
                    .state()
                    .options
                    .ack_timeout
                    .filter(|_| state == sys::IBV_QPS_RTS)
                {
                    out.timeout = t;
                }
                (out, mask)
            }
            Err(e) => return errno::fail(errno::of_io(e)),
        }
    };
    *attr = out;
    // SAFETY: Checked non-NULL above; the caller passes it valid.
    unsafe { *qp_attr_mask = mask as c_int };
    0
}

/// `int rdma_set_option(struct rdma_cm_id *id, int level, int optname, void *optval, size_t
/// optlen)`: `RDMA_OPTION_ID`'s TOS (1 byte), REUSEADDR and AFONLY (an int), ACK_TIMEOUT (1
/// byte); `EINVAL` for a wrong size, `ENOSYS` for another option (`RDMA_OPTION_IB_PATH`
/// included: on RoCE the route comes from address resolution), as the kernel answers.
///
/// # Safety
///
/// `id` is not destroyed during the call (see [`crate::api`]); `optval` valid for `optlen` bytes.
#[no_mangle]
pub unsafe extern "C" fn rdma_set_option(
    id: *mut sys::rdma_cm_id,
    level: c_int,
    optname: c_int,
    optval: *mut c_void,
    optlen: usize,
) -> c_int {
    // SAFETY: No one destroys the ID during the call (the caller's promise).
    let Ok(this) = (unsafe { id_of(id) }) else {
        return errno::fail(libc::EINVAL);
    };
    if level != sys::RDMA_OPTION_ID as c_int {
        return errno::fail(libc::ENOSYS);
    }
    let want = match optname as u32 {
        sys::RDMA_OPTION_ID_TOS | sys::RDMA_OPTION_ID_ACK_TIMEOUT => 1,
        sys::RDMA_OPTION_ID_REUSEADDR | sys::RDMA_OPTION_ID_AFONLY => core::mem::size_of::<c_int>(),
        _ => return errno::fail(libc::ENOSYS),
    };
    if optval.is_null() || optlen != want {
        return errno::fail(libc::EINVAL);
    }
    // SAFETY: `optval` holds `want` bytes, as checked against `optlen`.
    let (byte, int) = unsafe {
        (
            *optval.cast::<u8>(),
            if want == 1 {
                0
            } else {
                optval.cast::<c_int>().read_unaligned()
            },
        )
    };
    match optname as u32 {
        sys::RDMA_OPTION_ID_REUSEADDR => errno::status(set_reuseaddr(this, int != 0)),
        sys::RDMA_OPTION_ID_AFONLY => errno::status(set_afonly(this, int != 0)),
        name => {
            let mut state = this.state();
            if name == sys::RDMA_OPTION_ID_TOS {
                state.options.tos = Some(byte);
            } else {
                state.options.ack_timeout = Some(byte);
            }
            0
        }
    }
}

/// `RDMA_OPTION_ID_REUSEADDR`, as cma.c's `rdma_set_reuseaddr`: set in any state but
/// listening, and the port the module holds is shared from then on; cleared only before the
/// ID is bound (`EINVAL`).
fn set_reuseaddr(this: &Id, reuse: bool) -> Result<(), c_int> {
    let (phase, bound) = {
        let state = this.state();
        (state.phase, state.bound)
    };
    let idle = phase == Phase::Idle && bound.is_none();
    if !idle && (!reuse || phase == Phase::Listening) {
        return Err(libc::EINVAL);
    }
    if let (true, Some(held)) = (reuse, bound) {
        let ps = port_space(this.public().ps).ok_or(libc::EINVAL)?;
        this.channel()
            .cepm
            .bind(
                this.handle(),
                ps.value(),
                held,
                cepm_sys::CEPM_BIND_REUSEADDR as u8,
                None,
            )
            .map_err(errno::of_io)?;
    }
    this.state().options.reuse_addr = reuse;
    Ok(())
}

/// `RDMA_OPTION_ID_AFONLY`, as cma.c's `rdma_set_afonly`: only before the ID is more than
/// bound (`EINVAL`); it counts at the next bind.
fn set_afonly(this: &Id, af_only: bool) -> Result<(), c_int> {
    let mut state = this.state();
    if state.phase != Phase::Idle {
        return Err(libc::EINVAL);
    }
    state.options.af_only = Some(af_only);
    Ok(())
}
