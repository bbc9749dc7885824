//! Service ID Resolution (SIDR) through cepm: a UD client asks which QPN and Q_Key serve a
//! service ID; a UD server answers. What `cepmctl resolve` and `cepmctl serve-ud` do.

use std::io;

use cepm_proto::cma_hdr::CMA_HDR_SIZE;

use crate::{
    cep::event_name,
    connect::{cma_hdr, read_cma_hdr, Config, Route, Trace},
    sys,
    verbs::{
        udaddy::{Stats, UdExchange, RDMA_UDP_QKEY},
        AddressHandle, AhAttr, CompletionQueue, Device, ProtectionDomain, QpCaps, UdQp,
    },
    Cepm,
};

/// What a resolution returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Resolution {
    /// SIDR_REP status (0: success).
    pub status: u32,
    /// The service's QPN.
    pub qpn: u32,
    /// The service's Q_Key.
    pub qkey: u32,
}

/// Sends a SIDR_REQ for `config.service_id` and waits for the answer.
pub fn resolve(config: &Config) -> io::Result<Resolution> {
    resolve_on(&Route::new(config)?, config)
}

fn resolve_on(route: &Route, config: &Config) -> io::Result<Resolution> {
    let cepm = Cepm::open()?;
    let handle = cepm.create(0x51d2)?;
    let mut req = sys::cepm_sidr_req {
        service_id: config.service_id,
        handle,
        port_num: config.port.into(),
        dev_name: route.dev_name,
        path: route.path,
        cm_response_timeout: config.cm_response_timeout,
        max_cm_retries: config.max_cm_retries,
        ..Default::default()
    };
    if config.rdma_cm {
        req.pdata[..CMA_HDR_SIZE].copy_from_slice(&cma_hdr(config, route, handle)?);
        req.pdata_len = CMA_HDR_SIZE as u8;
    }
    cepm.sidr_req(&req)?;
    let ev = cepm.expect_event(config.timeout)?;
    if ev.kind != sys::CEPM_EVENT_SIDR_REP_RECEIVED {
        cepm.destroy(handle)?;
        return Err(io::Error::other(format!(
            "got {} (status {})",
            event_name(ev.kind),
            ev.status
        )));
    }
    let info = cepm.query_cep(handle)?;
    cepm.destroy(handle)?;
    Ok(Resolution {
        status: info.sidr_status,
        qpn: info.remote_qpn,
        qkey: info.remote_qkey,
    })
}

/// Answers `count` SIDR_REQs for `config.service_id` with `status`, `qpn` and `qkey`.
pub fn serve(config: &Config, count: u64, status: u8, qpn: u32, qkey: u32) -> io::Result<u64> {
    let cepm = Cepm::open()?;
    let listener = cepm.create(0)?;
    cepm.listen(listener, config.service_id, u64::MAX)?;
    println!("serve-ud: listening on service {:#018x}", config.service_id);
    std::io::Write::flush(&mut std::io::stdout())?;
    let mut answered = 0;
    while answered < count {
        let ev = cepm.expect_event(config.timeout)?;
        if ev.kind != sys::CEPM_EVENT_SIDR_REQ_RECEIVED {
            return Err(io::Error::other(format!(
                "unexpected event {}",
                event_name(ev.kind)
            )));
        }
        let (handle, req) = cepm.get_request(listener, 0)?;
        if req.sidr != 1 {
            return Err(io::Error::other("a REQ on a UD service".to_string()));
        }
        println!(
            "serve-ud: SIDR_REQ {:#x} for {:#018x}",
            req.remote_comm_id, req.service_id
        );
        let rep = sys::cepm_sidr_rep {
            handle,
            qpn,
            qkey,
            status,
            ..Default::default()
        };
        cepm.sidr_rep(&rep)?;
        cepm.destroy(handle)?;
        answered += 1;
    }
    cepm.destroy(listener)?;
    Ok(answered)
}

/// A UD QP in RTS with rdma_cm's Q_Key, and `count` receives of `size` bytes posted: one end
/// of a udaddy exchange.
struct UdEnd {
    _device: Device,
    pd: ProtectionDomain,
    qp: UdQp,
}

fn ud_end(config: &Config, count: u32) -> io::Result<UdEnd> {
    let device = Device::open(&config.device)?;
    let pd = ProtectionDomain::new(&device)?;
    let caps = QpCaps {
        max_send_wr: count.max(1),
        max_recv_wr: count.max(1),
        ..QpCaps::default()
    };
    let cq = CompletionQueue::new(&device, 2 * caps.max_send_wr + 2 * caps.max_recv_wr)?;
    let qp = UdQp::create(&pd, &cq, caps)?;
    qp.to_rts(config.port, 0, RDMA_UDP_QKEY)?;
    Ok(UdEnd {
        _device: device,
        pd,
        qp,
    })
}

/// rdma-core `udaddy`'s client: resolve the service (SIDR, with a `cma_hdr` if
/// `config.rdma_cm`), then send `count` messages of `config.size` bytes carrying our QPN as
/// immediate data and receive the server's `count` replies.
pub fn udaddy_client(config: &Config, count: u32) -> io::Result<Stats> {
    let mut trace = Trace::new("resolve");
    let end = ud_end(config, count)?;
    let mut exchange = UdExchange::new(&end.qp, count, config.size)?;
    let route = Route::new(config)?;
    let r = resolve_on(&route, config)?;
    trace.push(format!(
        "SIDR_REP status {}, QPN {:#x}, Q_Key {:#x}",
        r.status, r.qpn, r.qkey
    ));
    if r.status != sys::CEPM_SIDR_SUCCESS {
        return Err(io::Error::other(format!(
            "the service was not resolved (SIDR status {})",
            r.status
        )));
    }
    let ah = AddressHandle::new(
        &end.pd,
        &AhAttr::roce(route.path.dgid, route.path.sgid_index, config.port),
    )?;
    let stats = exchange.run_client(&ah, r.qpn, r.qkey, config.timeout)?;
    trace.push(format!("{stats}"));
    Ok(stats)
}

/// rdma-core `udaddy`'s server: answer one SIDR_REQ with our UD QP and rdma_cm's Q_Key, then
/// receive `count` messages and send `count` replies to the QPN they carry.
pub fn udaddy_server(config: &Config, count: u32) -> io::Result<Stats> {
    let mut trace = Trace::new("serve-ud");
    let end = ud_end(config, count)?;
    let mut exchange = UdExchange::new(&end.qp, count, config.size)?;
    let cepm = Cepm::open()?;
    let listener = cepm.create(0)?;
    cepm.listen(listener, config.service_id, u64::MAX)?;
    trace.push(format!("listening on service {:#018x}", config.service_id));
    let ev = cepm.expect_event(config.timeout)?;
    if ev.kind != sys::CEPM_EVENT_SIDR_REQ_RECEIVED {
        return Err(io::Error::other(format!(
            "unexpected event {}",
            event_name(ev.kind)
        )));
    }
    let (handle, req) = cepm.get_request(listener, 0)?;
    let mut status = sys::CEPM_SIDR_SUCCESS as u8;
    // A bad cma_hdr gets what the passive rdma_cm answers when its handler fails
    // (`cm_destroy_id` in `drivers/infiniband/core/cm.c`).
    if config.rdma_cm && !read_cma_hdr(&req.private_data, &mut trace) {
        status = sys::CEPM_SIDR_REJECT as u8;
    }
    let rep = sys::cepm_sidr_rep {
        handle,
        qpn: exchange.local_qpn(),
        qkey: RDMA_UDP_QKEY,
        status,
        ..Default::default()
    };
    cepm.sidr_rep(&rep)?;
    cepm.destroy(handle)?;
    cepm.destroy(listener)?;
    trace.push(format!(
        "SIDR_REP sent: status {status}, QPN {:#x}, Q_Key {RDMA_UDP_QKEY:#x}",
        rep.qpn
    ));
    if status != sys::CEPM_SIDR_SUCCESS as u8 {
        return Err(io::Error::other("rejected the SIDR_REQ"));
    }
    let stats = exchange.run_server(config.timeout)?;
    trace.push(format!("{stats}"));
    Ok(stats)
}
