//! Many CM-only connections at once, event driven: what the scale tests and the benchmark
//! run. The active side keeps up to `parallel` connections in flight (REQ → REP → RTU →
//! DREQ → DREP) until `count` have completed; the passive side answers whatever arrives
//! (claim, REP; DREP on DREQ) until `count` connections have been disconnected.

use std::{
    collections::HashSet,
    io,
    time::{Duration, Instant},
};

use cepm::{
    cep::state_name,
    event::{event_name, Event},
    psn::random_psn,
    sys, Cepm,
};

use crate::connect::{connect_args, Config, Route};

/// What a run measured.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Totals {
    /// Connections that went through connect and disconnect.
    pub(crate) completed: u64,
    /// Connections that failed (REJ, timeouts).
    pub(crate) failed: u64,
    /// Wall time of the whole run.
    pub(crate) elapsed: Duration,
}

/// Made-up QPNs: each connection's ends get their own (a QP already connected would make
/// the older connection stale), active from 0x100000 up, passive from 0x200000 up.
fn qpn(base: u32, n: u64) -> u32 {
    base | (n as u32 & 0x0f_ffff)
}

/// Says which connection failed and how (the event, its status, the CEP's comm IDs and
/// state), so that a rare failure under loss can be told apart from another.
fn report_failure(who: &str, cepm: &Cepm, ev: &Event) {
    let info = cepm.query_cep(ev.handle);
    let (ids, state) = info.map_or((String::new(), "?"), |i| {
        (
            format!(" {:#x}/{:#x}", i.local_comm_id, i.remote_comm_id),
            state_name(i.state),
        )
    });
    println!(
        "{who}: CEP {}{ids} failed: {} (status {}) in {state}",
        ev.handle,
        event_name(ev.kind),
        ev.status
    );
}

/// The next event that moves a connection on. An MRA only says that the peer needs longer
/// (the kernel has already extended the retry timer by its service timeout): rdma_cm arms
/// one for every REQ and REP it receives and sends it when that message is retried, so a
/// loaded peer sends them routinely. They are skipped.
fn next_event(cepm: &Cepm, timeout: Duration) -> io::Result<Event> {
    loop {
        let ev = cepm.expect_event(timeout)?;
        if ev.kind != sys::CEPM_EVENT_MRA_RECEIVED {
            return Ok(ev);
        }
    }
}

/// The error for an event neither side of a run expects.
fn unexpected(ev: &Event) -> io::Error {
    io::Error::other(format!(
        "unexpected event {} on CEP {}",
        event_name(ev.kind),
        ev.handle
    ))
}

/// The active side: `count` connections, at most `parallel` at a time.
pub(crate) fn active(config: &Config, count: u64, parallel: u64) -> io::Result<Totals> {
    let cepm = Cepm::open()?;
    let route = Route::new(config)?;
    let start = Instant::now();
    let (mut started, mut completed, mut failed) = (0u64, 0u64, 0u64);
    let mut in_flight: HashSet<u32> = HashSet::new();
    while completed + failed < count {
        while started < count && (in_flight.len() as u64) < parallel {
            let handle = cepm.create(started)?;
            cepm.connect(&connect_args(
                config,
                handle,
                &route,
                qpn(0x10_0000, started),
                random_psn()?,
                b"",
            )?)?;
            in_flight.insert(handle);
            started += 1;
        }
        let ev = next_event(&cepm, config.timeout)?;
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
                report_failure("connect", &cepm, &ev);
                cepm.destroy(ev.handle)?;
                in_flight.remove(&ev.handle);
                failed += 1;
            }
            _ => return Err(unexpected(&ev)),
        }
    }
    Ok(Totals {
        completed,
        failed,
        elapsed: start.elapsed(),
    })
}

/// The passive side: answer until `count` connections have been disconnected.
pub(crate) fn passive(config: &Config, count: u64) -> io::Result<Totals> {
    let cepm = Cepm::open()?;
    let listener = cepm.create(0)?;
    cepm.listen(listener, config.service_id, u64::MAX)?;
    println!("accept: listening on service {:#018x}", config.service_id);
    std::io::Write::flush(&mut std::io::stdout())?;
    let start = Instant::now();
    let (mut completed, mut failed, mut accepted) = (0u64, 0u64, 0u64);
    while completed + failed < count {
        let ev = next_event(&cepm, config.timeout)?;
        match ev.kind {
            sys::CEPM_EVENT_REQ_RECEIVED => {
                let (handle, _) = cepm.get_request(listener, 0)?;
                let rep = sys::cepm_accept {
                    handle,
                    local_qpn: qpn(0x20_0000, accepted),
                    starting_psn: random_psn()?,
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
                report_failure("accept", &cepm, &ev);
                cepm.destroy(ev.handle)?;
                failed += 1;
            }
            _ => return Err(unexpected(&ev)),
        }
    }
    cepm.destroy(listener)?;
    Ok(Totals {
        completed,
        failed,
        elapsed: start.elapsed(),
    })
}

/// What a phased run measured: all connections set up first, then all torn down, the way
/// rdma-core's `cmtime` times them.
#[derive(Clone, Debug)]
pub(crate) struct Phases {
    /// Connections established, then disconnected.
    pub(crate) completed: u64,
    /// Connections that failed in either phase.
    pub(crate) failed: u64,
    /// From the first REQ to the last RTU.
    pub(crate) connect: Duration,
    /// From the first DREQ to the last DREP.
    pub(crate) disconnect: Duration,
    /// Each established connection's setup time, REQ sent to RTU sent, sorted.
    pub(crate) setup: Vec<Duration>,
}

impl Phases {
    /// The `q`-quantile (0..=1) of the setup times, nearest rank.
    pub(crate) fn setup_quantile(&self, q: f64) -> Option<Duration> {
        let n = self.setup.len();
        if n == 0 {
            return None;
        }
        let rank = ((q * n as f64).ceil() as usize).clamp(1, n);
        Some(self.setup[rank - 1])
    }
}

/// The active side in two phases, like `cmtime`: `count` connections with at most `parallel`
/// REQs outstanding, each established (RTU sent) as its REP arrives; once all are up, every
/// one gets its DREQ at once and the run waits for the DREPs.
pub(crate) fn active_phased(config: &Config, count: u64, parallel: u64) -> io::Result<Phases> {
    let cepm = Cepm::open()?;
    let route = Route::new(config)?;
    let mut sent_at = std::collections::HashMap::new();
    let mut established = Vec::new();
    let mut setup = Vec::with_capacity(count as usize);
    let (mut started, mut failed) = (0u64, 0u64);
    let start = Instant::now();
    while (established.len() as u64) + failed < count {
        while started < count && (sent_at.len() as u64) < parallel {
            let handle = cepm.create(started)?;
            cepm.connect(&connect_args(
                config,
                handle,
                &route,
                qpn(0x10_0000, started),
                random_psn()?,
                b"",
            )?)?;
            sent_at.insert(handle, Instant::now());
            started += 1;
        }
        let ev = next_event(&cepm, config.timeout)?;
        let Some(t0) = sent_at.remove(&ev.handle) else {
            return Err(unexpected(&ev));
        };
        match ev.kind {
            sys::CEPM_EVENT_REP_RECEIVED => {
                cepm.send_rtu(ev.handle, b"")?;
                setup.push(t0.elapsed());
                established.push(ev.handle);
            }
            sys::CEPM_EVENT_REJ_RECEIVED | sys::CEPM_EVENT_REQ_ERROR => {
                cepm.destroy(ev.handle)?;
                failed += 1;
            }
            _ => return Err(unexpected(&ev)),
        }
    }
    let connect = start.elapsed();
    let start = Instant::now();
    for &handle in &established {
        send_dreq_unless_crossed(&cepm, handle)?;
    }
    let (completed, dfailed) = await_disconnects(&cepm, &established, config)?;
    setup.sort();
    Ok(Phases {
        completed,
        failed: failed + dfailed,
        connect,
        disconnect: start.elapsed(),
        setup,
    })
}

/// Sends a DREQ, unless the peer's DREQ came first: its DREQ_RECEIVED then waits in the
/// queue for [`await_disconnects`].
fn send_dreq_unless_crossed(cepm: &Cepm, handle: u32) -> io::Result<()> {
    match cepm.send_dreq(handle, b"") {
        Err(_) if cepm.query_cep(handle)?.state == sys::CEPM_STATE_DREQ_RCVD => Ok(()),
        other => other,
    }
}

/// Waits until every connection in `handles`, whose DREQs went out, is disconnected: by the
/// peer's DREP, or by the peer's own DREQ crossing ours (answered with a DREP). Destroys
/// each; returns how many disconnected cleanly and how many timed out.
fn await_disconnects(cepm: &Cepm, handles: &[u32], config: &Config) -> io::Result<(u64, u64)> {
    let mut open: HashSet<u32> = handles.iter().copied().collect();
    let (mut completed, mut failed) = (0, 0);
    while !open.is_empty() {
        let ev = next_event(cepm, config.timeout)?;
        if !open.remove(&ev.handle) {
            return Err(unexpected(&ev));
        }
        match ev.kind {
            sys::CEPM_EVENT_DREP_RECEIVED => completed += 1,
            sys::CEPM_EVENT_DREQ_RECEIVED => {
                // Crossing DREQs: ours may already have its DREP (then TIMEWAIT, no DREP due).
                let _ = cepm.send_drep(ev.handle, b"");
                completed += 1;
            }
            sys::CEPM_EVENT_DREQ_ERROR => failed += 1,
            _ => return Err(unexpected(&ev)),
        }
        cepm.destroy(ev.handle)?;
    }
    Ok((completed, failed))
}

/// The passive side in two phases, the way `ucmatose` serves: accept `count` connections,
/// and once all are established, disconnect them all (DREQ) and wait for the DREPs.
pub(crate) fn passive_phased(config: &Config, count: u64) -> io::Result<Phases> {
    let cepm = Cepm::open()?;
    let listener = cepm.create(0)?;
    cepm.listen(listener, config.service_id, u64::MAX)?;
    println!("accept: listening on service {:#018x}", config.service_id);
    std::io::Write::flush(&mut std::io::stdout())?;
    let mut claimed = std::collections::HashMap::new();
    let mut established = Vec::new();
    let mut setup = Vec::with_capacity(count as usize);
    let mut failed = 0u64;
    let mut start = None;
    while (established.len() as u64) + failed < count {
        let ev = next_event(&cepm, config.timeout)?;
        match ev.kind {
            sys::CEPM_EVENT_REQ_RECEIVED => {
                let t0 = Instant::now();
                start.get_or_insert(t0);
                let (handle, _) = cepm.get_request(listener, 0)?;
                let n = claimed.len() as u64 + established.len() as u64 + failed;
                let rep = sys::cepm_accept {
                    handle,
                    local_qpn: qpn(0x20_0000, n),
                    starting_psn: random_psn()?,
                    responder_resources: 1,
                    initiator_depth: 1,
                    rnr_retry_count: 7,
                    ..Default::default()
                };
                cepm.prepare_rep(&rep)?;
                cepm.send_rep(handle)?;
                claimed.insert(handle, t0);
            }
            sys::CEPM_EVENT_ESTABLISHED => {
                let t0 = claimed.remove(&ev.handle).ok_or_else(|| unexpected(&ev))?;
                setup.push(t0.elapsed());
                established.push(ev.handle);
            }
            sys::CEPM_EVENT_REJ_RECEIVED | sys::CEPM_EVENT_REP_ERROR => {
                claimed.remove(&ev.handle);
                cepm.destroy(ev.handle)?;
                failed += 1;
            }
            _ => return Err(unexpected(&ev)),
        }
    }
    let connect = start.map_or(Duration::ZERO, |t| t.elapsed());
    let start = Instant::now();
    for &handle in &established {
        send_dreq_unless_crossed(&cepm, handle)?;
    }
    let (completed, dfailed) = await_disconnects(&cepm, &established, config)?;
    cepm.destroy(listener)?;
    setup.sort();
    Ok(Phases {
        completed,
        failed: failed + dfailed,
        connect,
        disconnect: start.elapsed(),
        setup,
    })
}
