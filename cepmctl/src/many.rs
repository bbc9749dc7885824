//! Many CM-only connections at once, event driven: what the scale tests and the benchmark
//! run. The active side keeps up to `parallel` connections in flight (REQ → REP → RTU →
//! DREQ → DREP) until `count` have completed; the passive side answers whatever arrives
//! (claim, REP; DREP on DREQ) until `count` connections have been disconnected.

use std::{
    collections::HashSet,
    io,
    time::{Duration, Instant},
};

use crate::{
    connect::{connect_args, Config, Route},
    sys, Cepm,
};

/// What a run measured.
#[derive(Clone, Copy, Debug)]
pub struct Totals {
    /// Connections that went through connect and disconnect.
    pub completed: u64,
    /// Connections that failed (REJ, timeouts).
    pub failed: u64,
    /// Wall time of the whole run.
    pub elapsed: Duration,
}

/// Made-up QPNs: each connection's ends get their own (a QP already connected would make
/// the older connection stale), active from 0x100000 up, passive from 0x200000 up.
fn qpn(base: u32, n: u64) -> u32 {
    base | (n as u32 & 0x0f_ffff)
}

/// The error for an event neither side of a run expects.
fn unexpected(ev: &crate::cep::Event) -> io::Error {
    io::Error::other(format!("unexpected event {} on CEP {}", crate::cep::event_name(ev.kind), ev.handle))
}

/// The active side: `count` connections, at most `parallel` at a time.
pub fn active(config: &Config, count: u64, parallel: u64) -> io::Result<Totals> {
    let cepm = Cepm::open()?;
    let route = Route::new(config)?;
    let start = Instant::now();
    let (mut started, mut completed, mut failed) = (0u64, 0u64, 0u64);
    let mut in_flight: HashSet<u32> = HashSet::new();
    while completed + failed < count {
        while started < count && (in_flight.len() as u64) < parallel {
            let handle = cepm.create(started)?;
            cepm.connect(&connect_args(config, handle, &route, qpn(0x10_0000, started), 1, b"")?)?;
            in_flight.insert(handle);
            started += 1;
        }
        let ev = cepm.expect_event(config.timeout)?;
        match ev.kind {
            sys::CEPM_EVENT_REP_RECEIVED => {
                cepm.send_rtu(ev.handle, b"")?;
                cepm.send_dreq(ev.handle, b"")?;
            }
            // Destroy right after the DREP: timewait then ends in the kernel on its own.
            sys::CEPM_EVENT_DREP_RECEIVED => {
                cepm.destroy(ev.handle)?;
                in_flight.remove(&ev.handle);
                completed += 1;
            }
            sys::CEPM_EVENT_REJ_RECEIVED
            | sys::CEPM_EVENT_REQ_ERROR
            | sys::CEPM_EVENT_DREQ_ERROR => {
                cepm.destroy(ev.handle)?;
                in_flight.remove(&ev.handle);
                failed += 1;
            }
            _ => return Err(unexpected(&ev)),
        }
    }
    Ok(Totals { completed, failed, elapsed: start.elapsed() })
}

/// The passive side: answer until `count` connections have been disconnected.
pub fn passive(config: &Config, count: u64) -> io::Result<Totals> {
    let cepm = Cepm::open()?;
    let listener = cepm.create(0)?;
    cepm.listen(listener, config.service_id, u64::MAX)?;
    println!("accept: listening on service {:#018x}", config.service_id);
    std::io::Write::flush(&mut std::io::stdout())?;
    let start = Instant::now();
    let (mut completed, mut failed, mut accepted) = (0u64, 0u64, 0u64);
    while completed + failed < count {
        let ev = cepm.expect_event(config.timeout)?;
        match ev.kind {
            sys::CEPM_EVENT_REQ_RECEIVED => {
                let (handle, _) = cepm.get_request(listener, 0)?;
                let rep = sys::cepm_accept {
                    handle,
                    local_qpn: qpn(0x20_0000, accepted),
                    starting_psn: 2,
                    ..Default::default()
                };
                accepted += 1;
                cepm.prepare_rep(&rep)?;
                cepm.send_rep(handle)?;
            }
            sys::CEPM_EVENT_ESTABLISHED => {}
            sys::CEPM_EVENT_DREQ_RECEIVED => {
                cepm.send_drep(ev.handle, b"")?;
                cepm.destroy(ev.handle)?;
                completed += 1;
            }
            sys::CEPM_EVENT_REJ_RECEIVED | sys::CEPM_EVENT_REP_ERROR => {
                cepm.destroy(ev.handle)?;
                failed += 1;
            }
            _ => return Err(unexpected(&ev)),
        }
    }
    cepm.destroy(listener)?;
    Ok(Totals { completed, failed, elapsed: start.elapsed() })
}
