//! Service ID Resolution (SIDR) through cepm: a UD client asks which QPN and Q_Key serve a
//! service ID; a UD server answers. What `cepmctl resolve` and `cepmctl serve-ud` do.

use std::io;

use cepm_proto::cma_hdr::CMA_HDR_SIZE;

use cepm::{event::event_name, sys, Cepm};

use crate::connect::{cma_hdr, Config, Route};

/// What a resolution returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Resolution {
    /// SIDR_REP status (0: success).
    pub(crate) status: u32,
    /// The service's QPN.
    pub(crate) qpn: u32,
    /// The service's Q_Key.
    pub(crate) qkey: u32,
}

/// Sends a SIDR_REQ for `config.service_id` and waits for the answer.
pub(crate) fn resolve(config: &Config) -> io::Result<Resolution> {
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
pub(crate) fn serve(
    config: &Config,
    count: u64,
    status: u8,
    qpn: u32,
    qkey: u32,
) -> io::Result<u64> {
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
