//! `cepmctl storm`: connection storms, CM only (no QP; made-up QPNs as in [`crate::many`]),
//! in which every connection meets a fate drawn from a seed, so that cepm sees destroys
//! racing the MADs on their way, files closed while events are being delivered, and whatever
//! else a storm brings (device removal, `kill -9`, a refused `rmmod`), driven by the
//! selftest `storms.sh`.
//!
//! The client keeps up to `parallel` connections in flight until `iterations` were
//! attempted. Each one either completes (REQ → REP → RTU, DREQ → DREP, destroyed right away
//! or after timewait), is destroyed right after CONNECT (racing the REP on its way), right
//! after REP_RECEIVED (no RTU), or right after the RTU (no disconnect), or is left alone for
//! the file's close at exit (at most `parallel` of them are kept: the oldest is destroyed
//! in whatever state it has reached when another is left).
//!
//! The server listens and gives each REQ a fate: accept (then DREP the client's DREQ),
//! reject (reason 28), destroy right after the claim, destroy right after sending the REP
//! (before the RTU), or leave it unclaimed for a while (at most `parallel` at once; they are
//! claimed with another fate when the listener goes quiet). It runs until `iterations` REQs
//! were seen, `timeout` passes without an event, or SIGTERM/SIGINT.
//!
//! The errnos these races legitimately produce (`EINVAL` for a CEP whose state moved on,
//! `EAGAIN` from a claim whose peer gave up, `ENODEV` from a CONNECT on a device being
//! removed, ...) and the failure events (REJ, timeouts, DEVICE_REMOVAL) are counted. Fatal,
//! returned as an error: an errno docs/abi.md's Errors table does not give the call (or one
//! that well-formed arguments cannot earn: `ENOTTY`, `EFAULT`, `E2BIG`), any error from
//! destroying a handle this file owns, an event for a handle it does not own (destroyed:
//! the ABI promises none arrives after DESTROY), an event the protocol does not allow in the
//! connection's state, and a client whose connections hear nothing for `timeout`.

use std::{
    collections::{BTreeMap, HashMap, VecDeque},
    fmt, io,
    os::fd::AsRawFd,
    sync::atomic::{AtomicBool, Ordering},
    time::{Duration, Instant},
};

use cepm::{
    event::{event_name, Event},
    sys, Cepm,
};

use crate::{
    connect::{connect_args, Config, Route},
    rng::Rng,
};

/// Which side of the storm this process plays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    /// Listens on the service ID and answers REQs.
    Server,
    /// Connects to the service ID.
    Client,
}

/// How a storm is driven.
#[derive(Clone, Debug)]
pub(crate) struct Options {
    /// Server or client.
    pub(crate) role: Role,
    /// The service ID listened on / connected to.
    pub(crate) service_id: u64,
    /// Client: connections to attempt. Server: stop after this many REQs (`None`: no limit).
    pub(crate) iterations: Option<u64>,
    /// Client: connections in flight at once. Server: REQs left unclaimed at once.
    pub(crate) parallel: u64,
    /// Seed of every choice.
    pub(crate) seed: u64,
    /// Client: the longest its connections may go without an event (else it has stalled).
    /// Server: it exits after this long without an event.
    pub(crate) timeout: Duration,
    /// Client: the local RDMA device, e.g. `rxe0`.
    pub(crate) device: String,
    /// Client: the local port.
    pub(crate) port: u8,
    /// Client: the peer's IPv4 address and next-hop MAC (`None`: this host).
    pub(crate) peer: Option<([u8; 4], [u8; 6])>,
    /// Client: REQ (and the server's REP) resends before the `*_ERROR` event.
    pub(crate) max_cm_retries: u8,
    /// Client: how long the peer may take to answer (IBTA exponent).
    pub(crate) cm_response_timeout: u8,
    /// Client: the path's packet lifetime (IBTA exponent).
    pub(crate) packet_life_time: u8,
    /// Client: print a progress line every this many connections started (0: never).
    pub(crate) progress: u64,
}

/// How long one wait for an event lasts before the loop looks around (signals, stalls, a
/// quiet listener with REQs left unclaimed).
const TICK: Duration = Duration::from_millis(100);

/// A client stops starting connections after this many CONNECTs in a row failed (with
/// errnos a storm tolerates): the device is going, or the path no longer fits it.
const MAX_CONNECT_FAILURES_IN_A_ROW: u32 = 1000;

/// Set by SIGTERM and SIGINT: the storm stops, prints its summary and closes the file with
/// whatever is in flight.
static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_stop_signal(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

fn install_stop_handler() {
    let handler = on_stop_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
    for sig in [libc::SIGTERM, libc::SIGINT] {
        // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
        unsafe { libc::signal(sig, handler) };
    }
}

/// The calls a storm makes, named as in docs/abi.md.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Call {
    Create,
    Connect,
    GetRequest,
    Reject,
    PrepareRep,
    SendRep,
    SendRtu,
    SendDreq,
    SendDrep,
    Read,
}

impl Call {
    fn name(self) -> &'static str {
        match self {
            Call::Create => "CREATE",
            Call::Connect => "CONNECT",
            Call::GetRequest => "GET_REQUEST",
            Call::Reject => "REJECT",
            Call::PrepareRep => "PREPARE_REP",
            Call::SendRep => "SEND_REP",
            Call::SendRtu => "SEND_RTU",
            Call::SendDreq => "SEND_DREQ",
            Call::SendDrep => "SEND_DREP",
            Call::Read => "read",
        }
    }

    /// The errnos a storm may meet from this call and count: those docs/abi.md's Errors
    /// table gives it, but for the ones well-formed arguments cannot earn (`ENOTTY`,
    /// `EFAULT`, `E2BIG`, and `EINVAL` from CREATE, whose only input is a context) and
    /// `EBUSY` (monitors only). `EAGAIN` from `read`: the file is `O_NONBLOCK`.
    fn tolerated(self) -> &'static [i32] {
        use libc::{EAGAIN, EDQUOT, EINTR, EINVAL, EMFILE, ENODEV, ENOMEM, EOVERFLOW};
        match self {
            Call::Create => &[EMFILE, EDQUOT, ENOMEM],
            Call::Connect => &[EINVAL, ENODEV, ENOMEM],
            Call::GetRequest => &[EAGAIN, EINVAL, EMFILE, EDQUOT, ENOMEM],
            Call::Reject
            | Call::PrepareRep
            | Call::SendRep
            | Call::SendRtu
            | Call::SendDreq
            | Call::SendDrep => &[EINVAL, ENOMEM],
            Call::Read => &[EOVERFLOW, EINTR, EAGAIN],
        }
    }
}

/// The symbolic name of an errno a storm can meet.
fn errno_name(errno: i32) -> String {
    let name = match errno {
        libc::EPERM => "EPERM",
        libc::ENOENT => "ENOENT",
        libc::EINTR => "EINTR",
        libc::EIO => "EIO",
        libc::EBADF => "EBADF",
        libc::EAGAIN => "EAGAIN",
        libc::ENOMEM => "ENOMEM",
        libc::EACCES => "EACCES",
        libc::EFAULT => "EFAULT",
        libc::EBUSY => "EBUSY",
        libc::ENODEV => "ENODEV",
        libc::EINVAL => "EINVAL",
        libc::EMFILE => "EMFILE",
        libc::ENOTTY => "ENOTTY",
        libc::E2BIG => "E2BIG",
        libc::ENOTCONN => "ENOTCONN",
        libc::ETIMEDOUT => "ETIMEDOUT",
        libc::EADDRINUSE => "EADDRINUSE",
        libc::EDQUOT => "EDQUOT",
        libc::EOVERFLOW => "EOVERFLOW",
        _ => return format!("errno {errno}"),
    };
    name.to_string()
}

/// What one side counted, beyond its own outcome counters: the errnos it tolerated and the
/// events it read.
#[derive(Default)]
struct Tally {
    errors: BTreeMap<(Call, i32), u64>,
    events: BTreeMap<u32, u64>,
}

impl Tally {
    /// Counts `e` from `call` if a storm may meet it; else the fatal error to return.
    fn tolerate(&mut self, call: Call, e: io::Error) -> io::Result<()> {
        match e.raw_os_error() {
            Some(errno) if call.tolerated().contains(&errno) => {
                *self.errors.entry((call, errno)).or_default() += 1;
                Ok(())
            }
            Some(errno) => Err(io::Error::other(format!(
                "{} failed with {} ({e}): not an errno a storm may get from it (docs/abi.md, Errors)",
                call.name(),
                errno_name(errno)
            ))),
            None => Err(io::Error::other(format!("{} failed: {e}", call.name()))),
        }
    }

    fn event(&mut self, ev: &Event) {
        *self.events.entry(ev.kind).or_default() += 1;
    }
}

impl fmt::Display for Tally {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let errors: Vec<String> = self
            .errors
            .iter()
            .map(|(&(call, errno), n)| format!("{}/{}={n}", call.name(), errno_name(errno)))
            .collect();
        let events: Vec<String> = self
            .events
            .iter()
            .map(|(&kind, n)| format!("{}={n}", event_name(kind)))
            .collect();
        let or_none = |v: Vec<String>| {
            if v.is_empty() {
                "none".to_string()
            } else {
                v.join(" ")
            }
        };
        write!(
            f,
            "tolerated errors: {}; events: {}",
            or_none(errors),
            or_none(events)
        )
    }
}

/// Destroys a CEP this file owns: that may not fail, whatever state the CEP is in.
fn destroy(cepm: &Cepm, handle: u32) -> io::Result<()> {
    cepm.destroy(handle).map(drop).map_err(|e| {
        io::Error::other(format!(
            "DESTROY of handle {handle}, which this file owns, failed: {} ({e})",
            e.raw_os_error().map_or_else(|| "?".to_string(), errno_name)
        ))
    })
}

/// The next event, or `None` after [`TICK`] (or a tolerated `read` error: counted).
fn next_event(cepm: &Cepm, tally: &mut Tally) -> io::Result<Option<Event>> {
    match cepm.next_event(Some(TICK)) {
        Ok(ev) => Ok(ev),
        Err(e) => tally.tolerate(Call::Read, e).map(|()| None),
    }
}

/// Reads never block: a queued event can go away between `poll()` and `read()` (a
/// REQ_RECEIVED whose request was claimed), and the storm must not hang on it.
fn set_nonblocking(cepm: &Cepm) -> io::Result<()> {
    let fd = cepm.as_raw_fd();
    // SAFETY: F_GETFL on a descriptor this process owns has no memory effects.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: F_SETFL on a descriptor this process owns has no memory effects.
    if unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The error for an event the protocol does not allow where it came.
fn unexpected(who: &str, ev: &Event, state: &str) -> io::Error {
    io::Error::other(format!(
        "{who}: unexpected event {} (status {}) on handle {} in {state}",
        event_name(ev.kind),
        ev.status,
        ev.handle
    ))
}

/// The error for an event on a handle this file does not own (or destroyed).
fn stray(who: &str, ev: &Event) -> io::Error {
    io::Error::other(format!(
        "{who}: event {} (status {}) for handle {}, which this file does not own: no event may \
         arrive for a destroyed CEP",
        event_name(ev.kind),
        ev.status,
        ev.handle
    ))
}

fn flush() {
    let _ = io::Write::flush(&mut io::stdout());
}

/// Runs one side of a storm; prints its summary (also when it fails).
pub(crate) fn run(opts: &Options) -> io::Result<()> {
    install_stop_handler();
    match opts.role {
        Role::Client => {
            let mut c = Client::new(opts);
            let result = c.run();
            if c.began.is_some() {
                c.print_summary();
            }
            result
        }
        Role::Server => {
            let mut s = Server::new(opts);
            let result = s.run();
            if s.began.is_some() {
                s.print_summary();
            }
            result
        }
    }
}

/// What a client does with one connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ClientFate {
    /// REQ → REP → RTU, DREQ → DREP; destroyed right away, or once timewait is over.
    Complete { wait_timewait: bool },
    /// Destroyed right after CONNECT, racing the REP on its way.
    DestroyAfterConnect,
    /// Destroyed on REP_RECEIVED, without an RTU.
    DestroyAfterRep,
    /// Destroyed right after the RTU, without a disconnect.
    DestroyAfterRtu,
    /// Left alone for the file's close.
    Leave,
}

fn client_fate(rng: &mut Rng) -> ClientFate {
    match rng.below(100) {
        0..=39 => ClientFate::Complete {
            wait_timewait: rng.chance(25),
        },
        40..=54 => ClientFate::DestroyAfterConnect,
        55..=69 => ClientFate::DestroyAfterRep,
        70..=84 => ClientFate::DestroyAfterRtu,
        _ => ClientFate::Leave,
    }
}

/// Where a client's connection stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ClientState {
    ReqSent,
    DreqSent,
    Timewait,
}

struct ClientConn {
    fate: ClientFate,
    state: ClientState,
}

/// Made-up QPNs, one per connection end, drawn from the seed: the client's from
/// 0x100000..0x800000, the server's from 0x800000..0x1000000, so that the two ends of a
/// loopback connection never share one (two live connections from one QP of a CA make the
/// older one stale).
fn client_qpn(rng: &mut Rng) -> u32 {
    0x10_0000 + rng.below(0x70_0000) as u32
}

fn server_qpn(rng: &mut Rng) -> u32 {
    0x80_0000 + rng.below(0x80_0000) as u32
}

fn psn(rng: &mut Rng) -> u32 {
    rng.next_u64() as u32 & 0x00ff_ffff
}

#[derive(Default)]
struct ClientCounts {
    started: u64,
    completed: u64,
    destroyed_early: u64,
    rejected: u64,
    rejected_by_consumer: u64,
    timed_out: u64,
    device_removals: u64,
    disconnected_by_peer: u64,
    failed_calls: u64,
    left_then_destroyed: u64,
    waited_timewait: u64,
}

struct Client<'o> {
    opts: &'o Options,
    rng: Rng,
    counts: ClientCounts,
    tally: Tally,
    conns: HashMap<u32, ClientConn>,
    left: VecDeque<u32>,
    /// No new connection is started: the device went, CREATE failed, or a signal came.
    stopping: Option<&'static str>,
    /// When the storm began (set up: the file open, the route found).
    began: Option<Instant>,
    /// CONNECTs that failed since the last that did not.
    connect_failures_in_a_row: u32,
}

impl<'o> Client<'o> {
    fn new(opts: &'o Options) -> Self {
        Self {
            opts,
            rng: Rng::new(opts.seed),
            counts: ClientCounts::default(),
            tally: Tally::default(),
            conns: HashMap::new(),
            left: VecDeque::new(),
            stopping: None,
            began: None,
            connect_failures_in_a_row: 0,
        }
    }

    fn config(&self) -> Config {
        let o = self.opts;
        Config {
            device: o.device.clone(),
            port: o.port,
            service_id: o.service_id,
            iterations: 0,
            size: 0,
            timeout: o.timeout,
            cm_only: true,
            cm_only_qpn: None,
            hold: 0,
            peer: o.peer,
            max_cm_retries: o.max_cm_retries,
            cm_response_timeout: o.cm_response_timeout,
            packet_life_time: o.packet_life_time,
            mra: false,
            mra_now: false,
            mra_timeout: None,
            claim_delay: Duration::ZERO,
            answer_delay: Duration::ZERO,
            rtu_data: Vec::new(),
            disconnect: false,
            establish_early: false,
            rdma_cm: false,
            cma_version: 0,
            xrc: false,
        }
    }

    fn run(&mut self) -> io::Result<()> {
        let config = self.config();
        let cepm = Cepm::open()?;
        set_nonblocking(&cepm)?;
        let route = Route::new(&config)?;
        let iterations = self.opts.iterations.unwrap_or(1000);
        let parallel = self.opts.parallel.max(1);
        println!(
            "storm: client on {} port {}, service {:#018x}, {iterations} iterations, {parallel} in flight, seed {}",
            self.opts.device, self.opts.port, self.opts.service_id, self.opts.seed
        );
        flush();
        self.began = Some(Instant::now());
        // The last event read or connection started: a stall is a long time without either.
        let mut last_event = Instant::now();
        loop {
            if STOP.load(Ordering::Relaxed) {
                self.stopping = Some("signal");
                break;
            }
            while self.stopping.is_none()
                && self.counts.started < iterations
                && (self.conns.len() as u64) < parallel
            {
                self.start_one(&cepm, &config, &route)?;
                last_event = Instant::now();
            }
            if self.conns.is_empty()
                && (self.stopping.is_some() || self.counts.started >= iterations)
            {
                break;
            }
            match next_event(&cepm, &mut self.tally)? {
                Some(ev) => {
                    last_event = Instant::now();
                    self.tally.event(&ev);
                    self.on_event(&cepm, &ev)?;
                }
                None if !self.conns.is_empty() && last_event.elapsed() > self.opts.timeout => {
                    return Err(io::Error::other(format!(
                        "stalled: {} connection(s) in flight heard nothing for {} ms",
                        self.conns.len(),
                        self.opts.timeout.as_millis()
                    )));
                }
                None => {}
            }
        }
        // What is left (the Leave fate, or everything after a signal) goes with the file.
        Ok(())
    }

    fn start_one(&mut self, cepm: &Cepm, config: &Config, route: &Route) -> io::Result<()> {
        let n = self.counts.started;
        self.counts.started += 1;
        let fate = client_fate(&mut self.rng);
        let (qpn, psn) = (client_qpn(&mut self.rng), psn(&mut self.rng));
        if self.opts.progress != 0 && self.counts.started.is_multiple_of(self.opts.progress) {
            println!("storm: progress {} started", self.counts.started);
            flush();
        }
        let handle = match cepm.create(n) {
            Ok(h) => h,
            Err(e) => {
                self.tally.tolerate(Call::Create, e)?;
                self.counts.failed_calls += 1;
                self.stopping = Some("CREATE failed");
                return Ok(());
            }
        };
        if let Err(e) = cepm.connect(&connect_args(config, handle, route, qpn, psn, b"")?) {
            let gone = e.raw_os_error() == Some(libc::ENODEV);
            self.tally.tolerate(Call::Connect, e)?;
            self.counts.failed_calls += 1;
            destroy(cepm, handle)?;
            self.connect_failures_in_a_row += 1;
            if gone {
                self.stopping = Some("device removed (CONNECT: ENODEV)");
            } else if self.connect_failures_in_a_row >= MAX_CONNECT_FAILURES_IN_A_ROW {
                self.stopping = Some("CONNECT keeps failing");
            }
            return Ok(());
        }
        self.connect_failures_in_a_row = 0;
        match fate {
            ClientFate::DestroyAfterConnect => {
                destroy(cepm, handle)?;
                self.counts.destroyed_early += 1;
            }
            ClientFate::Leave => {
                self.left.push_back(handle);
                if self.left.len() as u64 > self.opts.parallel.max(1) {
                    if let Some(oldest) = self.left.pop_front() {
                        destroy(cepm, oldest)?;
                        self.counts.left_then_destroyed += 1;
                    }
                }
            }
            _ => {
                self.conns.insert(
                    handle,
                    ClientConn {
                        fate,
                        state: ClientState::ReqSent,
                    },
                );
            }
        }
        Ok(())
    }

    /// Ends a connection: destroyed, forgotten.
    fn end(&mut self, cepm: &Cepm, handle: u32) -> io::Result<()> {
        self.conns.remove(&handle);
        destroy(cepm, handle)
    }

    /// A call on a connection: on a tolerated error it is counted and the connection ended
    /// (`Ok(false)`).
    fn call(
        &mut self,
        cepm: &Cepm,
        handle: u32,
        what: Call,
        result: io::Result<()>,
    ) -> io::Result<bool> {
        match result {
            Ok(()) => Ok(true),
            Err(e) => {
                self.tally.tolerate(what, e)?;
                self.counts.failed_calls += 1;
                self.end(cepm, handle)?;
                Ok(false)
            }
        }
    }

    fn on_event(&mut self, cepm: &Cepm, ev: &Event) -> io::Result<()> {
        let h = ev.handle;
        if self.left.contains(&h) {
            // Left for the close: whatever happens to it is not answered.
            return Ok(());
        }
        let Some(conn) = self.conns.get(&h) else {
            return Err(stray("client", ev));
        };
        let (fate, state) = (conn.fate, conn.state);
        match ev.kind {
            // The peer needs longer (a REQ waiting unclaimed): the kernel extended the timer.
            sys::CEPM_EVENT_MRA_RECEIVED => {}
            sys::CEPM_EVENT_REP_RECEIVED if state == ClientState::ReqSent => match fate {
                ClientFate::DestroyAfterRep => {
                    self.end(cepm, h)?;
                    self.counts.destroyed_early += 1;
                }
                ClientFate::DestroyAfterRtu => {
                    if self.call(cepm, h, Call::SendRtu, cepm.send_rtu(h, b""))? {
                        self.end(cepm, h)?;
                        self.counts.destroyed_early += 1;
                    }
                }
                ClientFate::Complete { .. } => {
                    if self.call(cepm, h, Call::SendRtu, cepm.send_rtu(h, b""))?
                        && self.call(cepm, h, Call::SendDreq, cepm.send_dreq(h, b""))?
                    {
                        if let Some(c) = self.conns.get_mut(&h) {
                            c.state = ClientState::DreqSent;
                        }
                    }
                }
                ClientFate::DestroyAfterConnect | ClientFate::Leave => {
                    return Err(unexpected("client", ev, "a CEP it destroyed or left"));
                }
            },
            sys::CEPM_EVENT_DREP_RECEIVED if state == ClientState::DreqSent => {
                self.counts.completed += 1;
                if matches!(
                    fate,
                    ClientFate::Complete {
                        wait_timewait: true
                    }
                ) {
                    if let Some(c) = self.conns.get_mut(&h) {
                        c.state = ClientState::Timewait;
                    }
                } else {
                    self.end(cepm, h)?;
                }
            }
            // Timewait is over: the one we waited for, or one a REJ (stale connection) began.
            sys::CEPM_EVENT_TIMEWAIT_EXIT => {
                if state == ClientState::Timewait {
                    self.counts.waited_timewait += 1;
                }
                self.end(cepm, h)?;
            }
            // The peer disconnects: crossing our DREQ (a clean end), or on its own (its file
            // closed, or a stale connection).
            sys::CEPM_EVENT_DREQ_RECEIVED => {
                if state == ClientState::DreqSent {
                    self.counts.completed += 1;
                } else {
                    self.counts.disconnected_by_peer += 1;
                }
                if self.call(cepm, h, Call::SendDrep, cepm.send_drep(h, b""))? {
                    self.end(cepm, h)?;
                }
            }
            sys::CEPM_EVENT_REJ_RECEIVED => {
                self.counts.rejected += 1;
                if ev.status == sys::CEPM_REJ_CONSUMER_DEFINED {
                    self.counts.rejected_by_consumer += 1;
                }
                self.end(cepm, h)?;
            }
            sys::CEPM_EVENT_REQ_ERROR | sys::CEPM_EVENT_DREQ_ERROR => {
                self.counts.timed_out += 1;
                self.end(cepm, h)?;
            }
            sys::CEPM_EVENT_DEVICE_REMOVAL => {
                self.counts.device_removals += 1;
                self.stopping
                    .get_or_insert("device removed (DEVICE_REMOVAL)");
                self.end(cepm, h)?;
            }
            _ => {
                let state = format!("{state:?} (fate {fate:?})");
                return Err(unexpected("client", ev, &state));
            }
        }
        Ok(())
    }

    fn print_summary(&self) {
        let c = &self.counts;
        let secs = self.began.map_or(0.0, |t| t.elapsed().as_secs_f64());
        println!(
            "storm: {} iterations, {} completed, {} destroyed early, {} rejected, {} left to close, {secs:.1} s, {:.0}/s",
            c.started,
            c.completed,
            c.destroyed_early + c.left_then_destroyed,
            c.rejected,
            self.left.len(),
            c.started as f64 / secs.max(1e-9)
        );
        println!(
            "storm: client details: {} rejected by the server (28), {} timed out, {} device removals, {} disconnected by the peer, {} failed calls, {} left then destroyed, {} waited out timewait, {} still in flight at exit",
            c.rejected_by_consumer,
            c.timed_out,
            c.device_removals,
            c.disconnected_by_peer,
            c.failed_calls,
            c.left_then_destroyed,
            c.waited_timewait,
            self.conns.len()
        );
        println!("storm: client {}", self.tally);
        if let Some(why) = self.stopping {
            println!("storm: client stopped early: {why}");
        }
        flush();
    }
}

/// What a server does with one REQ.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum ServerFate {
    /// REP; then ESTABLISHED, and DREP for the client's DREQ.
    Accept,
    /// REJ, consumer defined (28).
    Reject,
    /// Destroyed right after the claim.
    DestroyAfterClaim,
    /// Destroyed right after SEND_REP, before the RTU.
    DestroyAfterRep,
    /// Not claimed for now.
    LeaveUnclaimed,
}

fn server_fate(rng: &mut Rng) -> ServerFate {
    match rng.below(100) {
        0..=49 => ServerFate::Accept,
        50..=64 => ServerFate::Reject,
        65..=76 => ServerFate::DestroyAfterClaim,
        77..=89 => ServerFate::DestroyAfterRep,
        _ => ServerFate::LeaveUnclaimed,
    }
}

/// A fate for a REQ claimed late (one that was left unclaimed).
fn claimed_fate(rng: &mut Rng) -> ServerFate {
    loop {
        let f = server_fate(rng);
        if f != ServerFate::LeaveUnclaimed {
            return f;
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ServerState {
    RepSent,
    Established,
}

#[derive(Default)]
struct ServerCounts {
    reqs: u64,
    claimed: u64,
    accepted: u64,
    established: u64,
    disconnected: u64,
    rejected: u64,
    destroyed_early: u64,
    left_unclaimed: u64,
    rejected_by_peer: u64,
    timed_out: u64,
    device_removals: u64,
    failed_calls: u64,
}

struct Server<'o> {
    opts: &'o Options,
    rng: Rng,
    counts: ServerCounts,
    tally: Tally,
    conns: HashMap<u32, ServerState>,
    /// REQs seen and not claimed yet, as far as this side knows (their peers may have given
    /// up since).
    backlog: u64,
    /// When the storm began (listening).
    began: Option<Instant>,
    ended_by: &'static str,
}

impl<'o> Server<'o> {
    fn new(opts: &'o Options) -> Self {
        Self {
            opts,
            rng: Rng::new(opts.seed),
            counts: ServerCounts::default(),
            tally: Tally::default(),
            conns: HashMap::new(),
            backlog: 0,
            began: None,
            ended_by: "?",
        }
    }

    fn run(&mut self) -> io::Result<()> {
        let cepm = Cepm::open()?;
        set_nonblocking(&cepm)?;
        let listener = cepm.create(0)?;
        cepm.listen(listener, self.opts.service_id, u64::MAX)?;
        println!(
            "storm: server listening on service {:#018x}, seed {}",
            self.opts.service_id, self.opts.seed
        );
        flush();
        self.began = Some(Instant::now());
        let mut last_event = Instant::now();
        loop {
            if STOP.load(Ordering::Relaxed) {
                self.ended_by = "signal";
                break;
            }
            if self.opts.iterations.is_some_and(|n| self.counts.reqs >= n) {
                self.ended_by = "iterations";
                break;
            }
            match next_event(&cepm, &mut self.tally)? {
                Some(ev) => {
                    last_event = Instant::now();
                    self.tally.event(&ev);
                    if ev.handle == listener {
                        self.on_listener_event(&cepm, listener, &ev)?;
                    } else {
                        self.on_event(&cepm, &ev)?;
                    }
                }
                None if last_event.elapsed() > self.opts.timeout => {
                    self.ended_by = "timeout";
                    break;
                }
                // Quiet: whatever waits unclaimed is claimed now (until EAGAIN), so that its
                // client is not kept waiting by the MRAs the backlog sends.
                None => while self.claim(&cepm, listener, None)? {},
            }
        }
        // Everything still in flight, the listener and its backlog go with the file.
        Ok(())
    }

    fn on_listener_event(&mut self, cepm: &Cepm, listener: u32, ev: &Event) -> io::Result<()> {
        if ev.kind != sys::CEPM_EVENT_REQ_RECEIVED {
            return Err(unexpected("server", ev, "LISTEN"));
        }
        self.counts.reqs += 1;
        self.backlog += 1;
        let fate = server_fate(&mut self.rng);
        if fate == ServerFate::LeaveUnclaimed && self.backlog <= self.opts.parallel.max(1) {
            self.counts.left_unclaimed += 1;
            return Ok(());
        }
        let fate = if fate == ServerFate::LeaveUnclaimed {
            claimed_fate(&mut self.rng)
        } else {
            fate
        };
        // The oldest REQ waiting is claimed: one left before, if any.
        self.claim(cepm, listener, Some(fate)).map(drop)
    }

    /// Claims the oldest REQ waiting on the listener and gives it `fate` (`None`: one drawn
    /// for a REQ left unclaimed, and `EAGAIN`, nothing left to drain, is not counted);
    /// `false` if none could be claimed (`EAGAIN`: none waits, e.g. the peers of those left
    /// gave up).
    fn claim(&mut self, cepm: &Cepm, listener: u32, fate: Option<ServerFate>) -> io::Result<bool> {
        let context = self.counts.claimed;
        let handle = match cepm.get_request(listener, context) {
            Ok((handle, _)) => handle,
            Err(e) => {
                self.backlog = 0;
                if fate.is_none() && e.raw_os_error() == Some(libc::EAGAIN) {
                    return Ok(false);
                }
                self.tally.tolerate(Call::GetRequest, e)?;
                self.counts.failed_calls += 1;
                return Ok(false);
            }
        };
        let fate = fate.unwrap_or_else(|| claimed_fate(&mut self.rng));
        self.backlog = self.backlog.saturating_sub(1);
        self.counts.claimed += 1;
        match fate {
            ServerFate::Reject => {
                let r = cepm.reject(handle, sys::CEPM_REJ_CONSUMER_DEFINED as u16, &[], &[]);
                if let Err(e) = r {
                    self.tally.tolerate(Call::Reject, e)?;
                    self.counts.failed_calls += 1;
                } else {
                    self.counts.rejected += 1;
                }
                destroy(cepm, handle)?;
            }
            ServerFate::DestroyAfterClaim => {
                destroy(cepm, handle)?;
                self.counts.destroyed_early += 1;
            }
            ServerFate::Accept | ServerFate::DestroyAfterRep => {
                let rep = sys::cepm_accept {
                    handle,
                    local_qpn: server_qpn(&mut self.rng),
                    starting_psn: psn(&mut self.rng),
                    responder_resources: 1,
                    initiator_depth: 1,
                    rnr_retry_count: 7,
                    ..Default::default()
                };
                let sent = match cepm.prepare_rep(&rep) {
                    Err(e) => Err((Call::PrepareRep, e)),
                    Ok(()) => cepm.send_rep(handle).map_err(|e| (Call::SendRep, e)),
                };
                if let Err((call, e)) = sent {
                    self.tally.tolerate(call, e)?;
                    self.counts.failed_calls += 1;
                    destroy(cepm, handle)?;
                } else if fate == ServerFate::DestroyAfterRep {
                    destroy(cepm, handle)?;
                    self.counts.destroyed_early += 1;
                } else {
                    self.counts.accepted += 1;
                    self.conns.insert(handle, ServerState::RepSent);
                }
            }
            ServerFate::LeaveUnclaimed => unreachable!("a claimed REQ has another fate"),
        }
        Ok(true)
    }

    fn end(&mut self, cepm: &Cepm, handle: u32) -> io::Result<()> {
        self.conns.remove(&handle);
        destroy(cepm, handle)
    }

    fn on_event(&mut self, cepm: &Cepm, ev: &Event) -> io::Result<()> {
        let h = ev.handle;
        let Some(&state) = self.conns.get(&h) else {
            return Err(stray("server", ev));
        };
        match ev.kind {
            sys::CEPM_EVENT_MRA_RECEIVED => {}
            sys::CEPM_EVENT_ESTABLISHED if state == ServerState::RepSent => {
                self.counts.established += 1;
                self.conns.insert(h, ServerState::Established);
            }
            sys::CEPM_EVENT_DREQ_RECEIVED => {
                match cepm.send_drep(h, b"") {
                    Ok(()) => self.counts.disconnected += 1,
                    Err(e) => {
                        self.tally.tolerate(Call::SendDrep, e)?;
                        self.counts.failed_calls += 1;
                    }
                }
                self.end(cepm, h)?;
            }
            sys::CEPM_EVENT_REJ_RECEIVED => {
                self.counts.rejected_by_peer += 1;
                self.end(cepm, h)?;
            }
            sys::CEPM_EVENT_REP_ERROR | sys::CEPM_EVENT_DREQ_ERROR => {
                self.counts.timed_out += 1;
                self.end(cepm, h)?;
            }
            sys::CEPM_EVENT_DEVICE_REMOVAL => {
                self.counts.device_removals += 1;
                self.end(cepm, h)?;
            }
            sys::CEPM_EVENT_TIMEWAIT_EXIT => self.end(cepm, h)?,
            _ => return Err(unexpected("server", ev, &format!("{state:?}"))),
        }
        Ok(())
    }

    fn print_summary(&self) {
        let c = &self.counts;
        let secs = self.began.map_or(0.0, |t| t.elapsed().as_secs_f64());
        println!(
            "storm: server: {} REQs, {} accepted, {} established, {} disconnected, {} rejected, {} destroyed early, {} left unclaimed, {secs:.1} s, {:.0}/s",
            c.reqs,
            c.accepted,
            c.established,
            c.disconnected,
            c.rejected,
            c.destroyed_early,
            c.left_unclaimed,
            c.reqs as f64 / secs.max(1e-9)
        );
        println!(
            "storm: server details: {} claimed, {} rejected by the client, {} timed out, {} device removals, {} failed calls, {} connections and {} unclaimed REQs left to close, ended by {}",
            c.claimed,
            c.rejected_by_peer,
            c.timed_out,
            c.device_removals,
            c.failed_calls,
            self.conns.len(),
            self.backlog,
            self.ended_by
        );
        println!("storm: server {}", self.tally);
        flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seed_replays() {
        let (mut a, mut b) = (Rng::new(7), Rng::new(7));
        let xs: Vec<u64> = (0..16).map(|_| a.next_u64()).collect();
        let ys: Vec<u64> = (0..16).map(|_| b.next_u64()).collect();
        assert_eq!(xs, ys);
        let mut c = Rng::new(8);
        assert_ne!(xs, (0..16).map(|_| c.next_u64()).collect::<Vec<_>>());
        // splitmix64's reference value for seed 0.
        assert_eq!(Rng::new(0).next_u64(), 0xe220_a839_7b1d_cdaf);
    }

    #[test]
    fn every_fate_is_drawn() {
        let mut rng = Rng::new(1);
        let mut client = std::collections::HashSet::new();
        let mut server = std::collections::HashSet::new();
        for _ in 0..1000 {
            client.insert(format!("{:?}", client_fate(&mut rng)));
            server.insert(server_fate(&mut rng));
            assert_ne!(claimed_fate(&mut rng), ServerFate::LeaveUnclaimed);
        }
        assert_eq!(client.len(), 6, "{client:?}");
        assert_eq!(server.len(), 5);
    }

    #[test]
    fn made_up_qpns_of_the_two_sides_never_meet() {
        let mut rng = Rng::new(3);
        for _ in 0..10_000 {
            let (c, s) = (client_qpn(&mut rng), server_qpn(&mut rng));
            assert!((0x10_0000..0x80_0000).contains(&c));
            assert!((0x80_0000..0x100_0000).contains(&s));
            assert!(psn(&mut rng) <= 0xff_ffff);
        }
    }

    #[test]
    fn only_errnos_a_race_can_earn_are_tolerated() {
        let mut t = Tally::default();
        let err = io::Error::from_raw_os_error;
        assert!(t.tolerate(Call::SendRtu, err(libc::EINVAL)).is_ok());
        assert!(t.tolerate(Call::Connect, err(libc::ENODEV)).is_ok());
        assert!(t.tolerate(Call::GetRequest, err(libc::EAGAIN)).is_ok());
        assert!(t.tolerate(Call::Read, err(libc::EOVERFLOW)).is_ok());
        // Not in the table for the call, or not earned by well-formed arguments.
        assert!(t.tolerate(Call::SendRtu, err(libc::ENODEV)).is_err());
        assert!(t.tolerate(Call::Create, err(libc::EINVAL)).is_err());
        assert!(t.tolerate(Call::Connect, err(libc::EFAULT)).is_err());
        assert!(t.tolerate(Call::Reject, err(libc::ENOTTY)).is_err());
        assert!(t.tolerate(Call::SendRep, err(libc::EIO)).is_err());
        assert_eq!(t.errors.values().sum::<u64>(), 4);
        assert_eq!(
            t.to_string(),
            "tolerated errors: CONNECT/ENODEV=1 GET_REQUEST/EAGAIN=1 SEND_RTU/EINVAL=1 read/EOVERFLOW=1; events: none"
        );
    }
}
