//! `cepmctl`: command-line access to cepm.

use std::process::ExitCode;

use cepm::{cep, event, sys, AttrId, Cepm, PortInfo};
use clap::{Parser, Subcommand};

mod bindings;
mod connect;
mod forge;
mod frame;
mod fuzz_mad;
mod many;
mod rng;
mod sidr;
mod storm;
mod umad;
mod verbs;

/// Inspect and drive cepm, the InfiniBand/RoCE connection manager (/dev/cepm).
#[derive(Parser)]
#[command(version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print the module's ABI version.
    Abi,
    /// Connect to a service through cepm (REQ/REP/RTU), move an RC QP to RTS with the
    /// attributes cepm derives, and run a verified ping-pong as the client. The peer is this
    /// host's own GID unless --peer-ip/--peer-mac name another.
    Connect {
        /// Service ID (RDMA CM TCP port space: 0x0000000001060000 | port).
        #[arg(long, value_parser = parse_u64)]
        service_id: u64,
        #[command(flatten)]
        common: ConnectArgs,
    },
    /// Resolve a UD service ID (SIDR): print the QPN and Q_Key that serve it.
    Resolve {
        /// Service ID (RDMA CM UDP port space: 0x0000000001110000 | port).
        #[arg(long, value_parser = parse_u64)]
        service_id: u64,
        #[command(flatten)]
        common: ConnectArgs,
    },
    /// Answer SIDR_REQs for a UD service ID with a QPN and Q_Key.
    ServeUd {
        /// Service ID to listen on.
        #[arg(long, value_parser = parse_u64)]
        service_id: u64,
        /// QPN to answer with.
        #[arg(long, value_parser = parse_u32)]
        qpn: u32,
        /// Q_Key to answer with.
        #[arg(long, value_parser = parse_u32, default_value = "0x11111111")]
        qkey: u32,
        /// SIDR_REP status (0 success, 2 reject).
        #[arg(long, default_value_t = 0)]
        status: u8,
        /// How many SIDR_REQs to answer.
        #[arg(long, default_value_t = 1)]
        answers: u64,
        #[command(flatten)]
        common: ConnectArgs,
    },
    /// Accept one connection on a service ID and answer the ping-pong as the server.
    Accept {
        /// Service ID to listen on.
        #[arg(long, value_parser = parse_u64)]
        service_id: u64,
        #[command(flatten)]
        common: ConnectArgs,
    },
    /// Listen on a service ID and reject each REQ (with --reason and --reject-data; a SIDR_REQ
    /// gets a SIDR_REP with status reject), printing it and the events as they arrive.
    #[command(visible_alias = "reject")]
    Serve(ServeArgs),
    /// List the managed ports with their receive counters.
    Ports,
    /// List every connection endpoint in the module (all processes) with its state.
    List,
    /// Print every event of every connection endpoint in the module as it happens (all
    /// processes; the file becomes a monitor, see CEPM_IOC_MONITOR).
    Events {
        /// Stop after this many events.
        #[arg(long)]
        count: Option<u64>,
        /// Stop after this many milliseconds without an event (0: never).
        #[arg(long, default_value_t = 0)]
        timeout_ms: u64,
    },
    /// Print how many MADs with one attribute a port has received, or how many it dropped as
    /// malformed (no MAD header, or cut short) or invalid (not a valid CM message).
    RxCount {
        /// RDMA device, e.g. rxe0.
        device: String,
        /// Port number.
        port: u32,
        /// Attribute: a name (REQ, SIDR_REQ, ...) or an ID (0x10); or "malformed" or "invalid".
        #[arg(value_parser = parse_received)]
        what: Received,
    },
    /// Print how many MADs with one attribute a port has sent.
    TxCount {
        /// RDMA device, e.g. rxe0.
        device: String,
        /// Port number.
        port: u32,
        /// Attribute: a name (REQ, SIDR_REQ, ...) or an ID (0x10).
        #[arg(value_parser = parse_attr)]
        attr: AttrId,
    },
    /// Send CM MADs to a port's own RoCE v2 GID (or another host's, --to-gid) through ib_umad,
    /// so that they reach cepm's agent as if a peer had sent them. The body is all zero unless --valid (or any field
    /// option, which implies it) is given; then it is a well-formed message of the attribute
    /// with the fields chosen, or a hostile one where a field gets a value cepm must refuse.
    /// ClassPortInfo goes as a Get, every other attribute as a Send.
    SendMad {
        /// RDMA device, e.g. rxe0.
        device: String,
        /// Port number.
        port: u32,
        /// Attribute: a name (REQ, SIDR_REQ, ...) or an ID (0x10).
        #[arg(value_parser = parse_attr)]
        attr: AttrId,
        /// How many to send.
        #[arg(long, default_value_t = 1)]
        count: u32,
        /// Print each MAD sent, in hex, with what cepm's decoder makes of it.
        #[arg(long)]
        verbose: bool,
        /// Send to this GID (IPv6 notation, e.g. ::ffff:10.77.0.2), another host's, instead
        /// of the port's own: its answers then cross the wire [default: the port's own]
        #[arg(long)]
        to_gid: Option<std::net::Ipv6Addr>,
        /// Send from this RoCE v2 GID of the port (IPv6 notation), e.g. one of its netdev's
        /// IPv6 addresses [default: the port's first IPv4 GID]
        #[arg(long)]
        from_gid: Option<std::net::Ipv6Addr>,
        #[command(flatten)]
        forge: forge::Fields,
    },
    /// Listen on each of --service-ids, all in one /dev/cepm file, say "holding N listens",
    /// and keep them for --hold-ms (or until killed).
    HoldListens {
        /// The service IDs, comma-separated.
        #[arg(long, value_delimiter = ',', value_parser = parse_u64, required = true)]
        service_ids: Vec<u64>,
        /// How long to keep them.
        #[arg(long, default_value_t = 60_000)]
        hold_ms: u64,
    },
    /// A peer without a CM: send a CM MAD (built as send-mad builds it) as a raw RoCE v2 frame
    /// written to NETDEV through an AF_PACKET socket (needs CAP_NET_RAW), to QP1 of the host
    /// whose IPv4 address is --to. Its MAC must be in the neighbour table. Unlike the MAD
    /// layer, a frame can carry a MAD cut short (--cut-at).
    SendFrame {
        /// The netdev to write the frame to, e.g. veth1, whose other end is the receiver's.
        netdev: String,
        /// Attribute: a name (REQ, SIDR_REQ, ...) or an ID (0x10).
        #[arg(value_parser = parse_attr)]
        attr: AttrId,
        /// The receiver's IPv4 address, which its RoCE v2 GID maps.
        #[arg(long)]
        to: std::net::Ipv4Addr,
        /// The source IPv4 address the frame claims.
        #[arg(long)]
        from: std::net::Ipv4Addr,
        /// Send only the MAD's first N bytes (1 to 256).
        #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u16).range(1..=256))]
        cut_at: u16,
        #[command(flatten)]
        forge: forge::Fields,
    },
    /// A hostile peer: send a stream of CM MADs to another host's cepm (--to-gid), from
    /// DEVICE's port through ib_umad, reproducible by seed. Half are well-formed messages of
    /// every kind with random fields; the rest have flipped body bytes, a broken header or a
    /// body cut short, or an attribute cepm does not know; some are sent twice, and they are
    /// reordered in windows of four. Prints the number sent and the rate.
    FuzzMad {
        /// RDMA device to send from, e.g. rxe1.
        device: String,
        /// Port number.
        port: u32,
        /// The victim's GID, in IPv6 notation (e.g. ::ffff:10.77.0.1).
        #[arg(long)]
        to_gid: std::net::Ipv6Addr,
        /// Seed of the stream: the same seed sends the same MADs.
        #[arg(long, value_parser = parse_u64)]
        seed: u64,
        /// How many MADs to make (duplicates are sent on top).
        #[arg(long, default_value_t = 10_000)]
        count: u64,
        /// Comm IDs of live connections to aim at, comma-separated (harvested by the caller,
        /// e.g. from `cepmctl list`).
        #[arg(long, value_delimiter = ',', value_parser = parse_u32)]
        comm_ids: Vec<u32>,
        /// QPNs of live connections' ends to aim at, comma-separated.
        #[arg(long, value_delimiter = ',', value_parser = parse_u32)]
        qpns: Vec<u32>,
        /// GIDs of the hosts to aim at, comma-separated, in IPv6 notation.
        #[arg(long, value_delimiter = ',')]
        gids: Vec<std::net::Ipv6Addr>,
        /// Service IDs its REQs and SIDR_REQs ask for, comma-separated.
        #[arg(long, value_delimiter = ',', value_parser = parse_u64, required = true)]
        service_ids: Vec<u64>,
    },
    /// A connection storm, CM only (no QP): the client keeps --parallel connections in
    /// flight until --iterations were attempted, each with a fate drawn from --seed (complete,
    /// destroyed right after CONNECT, after REP_RECEIVED or after the RTU, or left for the
    /// file's close at exit); the server answers each REQ with a fate of its own (accept,
    /// reject with reason 28, destroy after the claim or after the REP, leave unclaimed).
    /// Races' errnos and failure events are counted; an errno docs/abi.md does not allow, an
    /// event for a destroyed CEP or one the protocol forbids, or a stall exits 1. Prints a
    /// summary; SIGTERM ends a run with it.
    Storm {
        /// Which side this process plays.
        #[arg(long, value_enum)]
        role: StormRole,
        /// Service ID to listen on / connect to.
        #[arg(long, value_parser = parse_u64)]
        service_id: u64,
        /// client: connections to attempt [default: 1000]; server: stop after this many REQs
        /// [default: no limit].
        #[arg(long)]
        iterations: Option<u64>,
        /// client: connections in flight at once; server: REQs left unclaimed at once.
        #[arg(long, default_value_t = 16)]
        parallel: u64,
        /// Seed of every choice: the same seed makes the same choices.
        #[arg(long, value_parser = parse_u64, default_value = "1")]
        seed: u64,
        /// client: give up (exit 1) when the connections in flight hear nothing this long;
        /// server: exit after this long without an event.
        #[arg(long, default_value_t = 30_000)]
        timeout_ms: u64,
        /// client: RDMA device.
        #[arg(long, default_value = "rxe0")]
        device: String,
        /// client: port.
        #[arg(long, default_value_t = 1)]
        port: u8,
        /// client: the peer's IPv4 address (default: this host, over the port's own GID).
        #[arg(long, requires = "peer_mac")]
        peer_ip: Option<std::net::Ipv4Addr>,
        /// client: the MAC of the peer's netdev (next hop).
        #[arg(long, requires = "peer_ip", value_parser = parse_mac)]
        peer_mac: Option<[u8; 6]>,
        /// client: how often a REQ (and the server's REP) is resent before the *_ERROR event.
        #[arg(long, default_value_t = 8)]
        max_cm_retries: u8,
        /// client: how long the peer may take to answer, IBTA exponent (16: about 270 ms).
        #[arg(long, default_value_t = 16)]
        cm_response_timeout: u8,
        /// client: the path's packet lifetime, IBTA exponent (also sets timewait's length).
        #[arg(long, default_value_t = 8)]
        packet_life_time: u8,
        /// client: print "storm: progress N started" every N connections (0: never).
        #[arg(long, default_value_t = 100)]
        progress: u64,
    },
    /// Verbs self-test (for tests): two RC QPs on one port, connected to each other by hand,
    /// run a ping-pong whose every message is verified. Exits non-zero on any mismatch.
    #[command(hide = true)]
    VerbsSelftest {
        /// RDMA device, e.g. rxe0.
        #[arg(long)]
        device: String,
        /// Port number.
        #[arg(long, default_value_t = 1)]
        port: u8,
        /// Round trips.
        #[arg(long, default_value_t = 100)]
        iterations: u64,
        /// Bytes per message.
        #[arg(long, default_value_t = 4096)]
        size: usize,
        /// Path MTU in bytes (256..4096); default: the port's active MTU.
        #[arg(long)]
        mtu: Option<verbs::Mtu>,
        /// Milliseconds to wait for any one completion.
        #[arg(long, default_value_t = 10_000)]
        timeout_ms: u64,
        /// Fault injection: the server corrupts its echo in this iteration (the run must fail).
        #[arg(long)]
        corrupt_echo_at: Option<u64>,
    },
}

/// `cepmctl storm --role`.
#[derive(Clone, Copy, clap::ValueEnum)]
enum StormRole {
    /// Listen and answer REQs.
    Server,
    /// Connect.
    Client,
}

fn parse_u64(s: &str) -> Result<u64, String> {
    let parsed = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => s.parse(),
    };
    parsed.map_err(|e| format!("'{s}': {e}"))
}

/// Options shared by `connect` and `accept`.
#[derive(clap::Args)]
struct ConnectArgs {
    /// RDMA device.
    #[arg(long, default_value = "rxe0")]
    device: String,
    /// Port.
    #[arg(long, default_value_t = 1)]
    port: u8,
    /// Ping-pong round trips (0: connect only).
    #[arg(long, default_value_t = 10)]
    iterations: u64,
    /// Bytes per message.
    #[arg(long, default_value_t = 4096)]
    size: usize,
    /// Milliseconds to wait for each event or completion.
    #[arg(long, default_value_t = 20_000)]
    timeout_ms: u64,
    /// CM only: no QP, no data (a made-up QPN goes on the wire: one per process and side).
    #[arg(long)]
    cm_only: bool,
    /// With --cm-only: the QPN to announce instead of the process's own.  Two processes that
    /// announce the same one are one QP to the peer, whose CM then finds the older
    /// connection stale.
    #[arg(long, requires = "cm_only", value_parser = parse_qpn)]
    qpn: Option<u32>,
    /// Once established, wait for the next event instead of disconnecting.
    #[arg(long)]
    hold: bool,
    /// With --hold: wait for this many events (each within --timeout-ms) before destroying
    /// the CEP; e.g. 2 keeps it past DEVICE_REMOVAL.
    #[arg(long, requires = "hold", default_value_t = 1)]
    hold_events: u32,
    /// CM only, event driven: this many connections (connect and disconnect each) instead of
    /// one; `accept` answers until that many have disconnected.
    #[arg(long)]
    count: Option<u64>,
    /// With --count: all connections first, then all disconnects, timed per phase with
    /// setup-latency percentiles (connect: like rdma-core's cmtime, what `make bench` runs;
    /// accept: like a ucmatose server, which disconnects once all are established).
    #[arg(long, requires = "count")]
    phases: bool,
    /// connect --count: connections in flight at once.
    #[arg(long, default_value_t = 1)]
    parallel: u64,
    /// connect: how often the REQ is resent before REQ_ERROR (at most 15).
    #[arg(long, default_value_t = 15)]
    max_cm_retries: u8,
    /// connect: how long the peer may take to answer, IBTA exponent (4.096 µs · 2^n).
    #[arg(long, default_value_t = 20)]
    cm_response_timeout: u8,
    /// connect: the path's packet lifetime, IBTA exponent.
    #[arg(long, default_value_t = 16)]
    packet_life_time: u8,
    /// Arm an MRA for the message to answer: accept, the REQ; connect, the REP.
    #[arg(long)]
    mra: bool,
    /// accept: send the MRA for the REQ at once instead of on the client's retry.
    #[arg(long)]
    mra_now: bool,
    /// With --mra/--mra-now: the MRA's service timeout (IBTA exponent, 0..31) instead of the
    /// kernel's 24.
    #[arg(long)]
    mra_timeout: Option<u8>,
    /// accept: leave the REQ unclaimed this many milliseconds (a slow accept; the kernel
    /// answers the client's retries with MRAs meanwhile).
    #[arg(long, default_value_t = 0)]
    claim_delay_ms: u64,
    /// Wait this many milliseconds before answering: accept, the REQ (a slow server);
    /// connect, the REP (a slow client, as rdma_cm under load).
    #[arg(long, default_value_t = 0)]
    answer_delay_ms: u64,
    /// connect: the RTU's private data, as text.
    #[arg(long, default_value = "")]
    rtu_data: String,
    /// accept: once established, send the DREQ instead of waiting for the client's (whose
    /// own DREQ then crosses it).
    #[arg(long, conflicts_with = "hold")]
    disconnect: bool,
    /// accept: establish right after sending the REP, as on IB_EVENT_COMM_EST (the QP heard
    /// from the client first), instead of waiting for the RTU.
    #[arg(long)]
    establish_early: bool,
    /// Interoperate with the stock rdma_cm: a cma_hdr leads the REQ's private data
    /// (connect, needs --peer-ip), and is required in the REQ (accept: else REJ 28).
    #[arg(long)]
    rdma_cm: bool,
    /// With --cm-only: an XRC connection (connect: an XRC initiator; accept: an XRC target,
    /// refusing other REQs with REJ 9).  rxe has no XRC QPs, so no data moves; both print the
    /// QP attribute masks cepm gives out.
    #[arg(long, requires = "cm_only")]
    xrc: bool,
    /// connect --rdma-cm: the cma_hdr version byte (rdma_cm refuses anything but 0).
    #[arg(long, default_value_t = 0)]
    cma_version: u8,
    /// connect: the peer's IPv4 address (default: this host, over the port's own GID).
    #[arg(long, requires = "peer_mac")]
    peer_ip: Option<std::net::Ipv4Addr>,
    /// connect: the MAC of the peer's netdev (next hop), e.g. 02:00:00:00:00:02.
    #[arg(long, requires = "peer_ip", value_parser = parse_mac)]
    peer_mac: Option<[u8; 6]>,
}

fn parse_mac(s: &str) -> Result<[u8; 6], String> {
    let mut mac = [0u8; 6];
    let mut parts = s.split(':');
    for b in mac.iter_mut() {
        *b = parts
            .next()
            .and_then(|p| u8::from_str_radix(p, 16).ok())
            .ok_or_else(|| format!("bad MAC '{s}'"))?;
    }
    if parts.next().is_some() {
        return Err(format!("bad MAC '{s}'"));
    }
    Ok(mac)
}

impl ConnectArgs {
    fn config(self, service_id: u64) -> connect::Config {
        connect::Config {
            device: self.device,
            port: self.port,
            service_id,
            iterations: self.iterations,
            size: self.size,
            timeout: std::time::Duration::from_millis(self.timeout_ms),
            cm_only: self.cm_only,
            cm_only_qpn: self.qpn,
            hold: if self.hold { self.hold_events } else { 0 },
            peer: self
                .peer_ip
                .zip(self.peer_mac)
                .map(|(ip, mac)| (ip.octets(), mac)),
            max_cm_retries: self.max_cm_retries,
            cm_response_timeout: self.cm_response_timeout,
            packet_life_time: self.packet_life_time,
            mra: self.mra,
            answer_delay: std::time::Duration::from_millis(self.answer_delay_ms),
            mra_now: self.mra_now,
            mra_timeout: self.mra_timeout,
            claim_delay: std::time::Duration::from_millis(self.claim_delay_ms),
            rtu_data: self.rtu_data.into_bytes(),
            disconnect: self.disconnect,
            establish_early: self.establish_early,
            rdma_cm: self.rdma_cm,
            cma_version: self.cma_version,
            xrc: self.xrc,
        }
    }
}

fn print_totals(who: &str, t: &many::Totals, parallel: u64) {
    let ms = t.elapsed.as_secs_f64() * 1e3;
    let per = if t.completed == 0 {
        0.0
    } else {
        ms / t.completed as f64
    };
    println!(
        "{who}: {} connected and disconnected, {} failed, {parallel} in flight, {ms:.0} ms ({per:.2} ms per connection)",
        t.completed, t.failed
    );
}

/// A phased run, one line a phase; the benchmark parses these.
fn print_phases(p: &many::Phases, parallel: u64) {
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    let n = p.setup.len() as f64;
    let rate = if p.connect.is_zero() {
        0.0
    } else {
        n / p.connect.as_secs_f64()
    };
    let q = |x| p.setup_quantile(x).map_or(0.0, ms);
    println!(
        "connect phase: {} established, {} failed, {parallel} REQs in flight, {:.1} ms, {rate:.1} connections/s, setup p50 {:.2} ms p99 {:.2} ms",
        p.setup.len(),
        p.failed,
        ms(p.connect),
        q(0.5),
        q(0.99)
    );
    println!(
        "disconnect phase: {} disconnected, {:.1} ms",
        p.completed,
        ms(p.disconnect)
    );
}

/// The ping-pong's result (the CM trace was printed as it happened).
fn print_outcome(who: &str, outcome: &connect::Outcome) {
    if let Some(stats) = &outcome.stats {
        println!("{who}: {stats}");
    }
}

fn parse_u32(s: &str) -> Result<u32, String> {
    u32::try_from(parse_u64(s)?).map_err(|e| format!("'{s}': {e}"))
}

fn parse_qpn(s: &str) -> Result<u32, String> {
    let qpn = parse_u32(s)?;
    if (1..=0xff_ffff).contains(&qpn) {
        Ok(qpn)
    } else {
        Err(format!("'{s}': a QPN is a non-zero 24-bit number"))
    }
}

/// Parses an attribute given by name (`REQ`, `SIDR_REQ`, ...) or number (`0x10`, `16`).
fn parse_attr(s: &str) -> Result<AttrId, String> {
    let by_name = AttrId::ALL
        .iter()
        .copied()
        .find(|a| a.name().eq_ignore_ascii_case(s));
    by_name
        .or_else(|| {
            let n = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
                Some(hex) => u16::from_str_radix(hex, 16).ok()?,
                None => s.parse().ok()?,
            };
            AttrId::from_u16(n)
        })
        .ok_or_else(|| format!("unknown CM attribute '{s}'"))
}

/// What `rx-count` counts: MADs of one attribute, or those dropped for their form.
#[derive(Clone, Copy, Debug)]
enum Received {
    Attr(AttrId),
    Malformed,
    Invalid,
}

fn parse_received(s: &str) -> Result<Received, String> {
    match s {
        "malformed" => Ok(Received::Malformed),
        "invalid" => Ok(Received::Invalid),
        _ => parse_attr(s).map(Received::Attr),
    }
}

/// "REQ=1 DREQ=2", or "none", for the non-zero counts of `count`.
fn attr_counts(count: impl Fn(AttrId) -> u64) -> String {
    let counts: Vec<String> = AttrId::ALL
        .iter()
        .filter(|&&a| count(a) != 0)
        .map(|&a| format!("{}={}", a.name(), count(a)))
        .collect();
    if counts.is_empty() {
        "none".to_string()
    } else {
        counts.join(" ")
    }
}

fn print_port(p: &PortInfo) {
    let link = if p.roce { "RoCE" } else { "InfiniBand" };
    println!("{} port {} ({link})", p.device, p.port);
    println!("  received: {}", attr_counts(|a| p.rx(a)));
    if p.rx_other_attr != 0 || p.rx_malformed != 0 || p.rx_invalid != 0 {
        println!(
            "  other attribute: {}, malformed: {}, invalid: {}",
            p.rx_other_attr, p.rx_malformed, p.rx_invalid
        );
    }
    if p.rx_duplicates != 0 {
        println!("  duplicates: {}", p.rx_duplicates);
    }
    println!("  sent: {}", attr_counts(|a| p.tx(a)));
    if p.tx_errors != 0 {
        println!("  send errors: {}", p.tx_errors);
    }
}

/// What `cepmctl serve` is asked to do.
#[derive(clap::Args)]
struct ServeArgs {
    /// Service ID to listen on (RDMA CM TCP port space: 0x0000000001060000 | port).
    #[arg(long, value_parser = parse_u64)]
    service_id: u64,
    /// Stop after this many REQs and SIDR_REQs.
    #[arg(long, default_value_t = 1)]
    count: u32,
    /// REJ reason (28: consumer defined).
    #[arg(long, default_value_t = 28)]
    reason: u16,
    /// REJ private data, as text.
    #[arg(long, default_value = "")]
    reject_data: String,
    /// Leave each REQ unclaimed and exit when it arrives: closing the listener must
    /// reject it.
    #[arg(long)]
    leave_unclaimed: bool,
    /// Keep each rejected CEP (in IDLE) until exit instead of destroying it at once.
    #[arg(long, conflicts_with = "leave_unclaimed")]
    keep_rejected: bool,
    /// Before rejecting the first REQ claimed, wait for the next event on its CEP: a
    /// test's peer ends the request first (a timeout REJ), as a hostile one may at any
    /// moment.
    #[arg(long, conflicts_with = "leave_unclaimed")]
    first_awaits_peer_event: bool,
    /// Leave the first REQ unclaimed until the peer has ended it (a timeout REJ): until
    /// cepm's CEP list shows no CEP of the service still in the request, as a slow server
    /// may find it when it gets round to claiming.
    #[arg(long, conflicts_with = "leave_unclaimed")]
    first_claims_after_peer_ends: bool,
    /// Give up after this many milliseconds without an event.
    #[arg(long, default_value_t = 30_000)]
    timeout_ms: u64,
    /// Listen only for the REQs to this address (0.0.0.0 or :: is the family's wildcard).
    #[arg(long)]
    addr: Option<std::net::IpAddr>,
    /// With --addr, a wildcard takes no REQ of the other family.
    #[arg(long, requires = "addr")]
    afonly: bool,
}

/// `cepmctl serve`: one listener, each REQ printed and rejected (a SIDR_REQ with a SIDR_REP).
fn serve(args: &ServeArgs) -> std::io::Result<()> {
    let &ServeArgs {
        service_id,
        count,
        reason,
        ref reject_data,
        leave_unclaimed,
        keep_rejected,
        first_awaits_peer_event,
        first_claims_after_peer_ends,
        timeout_ms,
        addr,
        afonly,
    } = args;
    let reject_data = reject_data.as_bytes();
    let cepm = Cepm::open()?;
    let listener = cepm.create(0)?;
    match addr {
        Some(addr) => cepm.listen_on_addr(listener, service_id, addr, afonly)?,
        None => cepm.listen(listener, service_id, u64::MAX)?,
    }
    println!("serve: listening on service ID {service_id:#018x}");
    let timeout = std::time::Duration::from_millis(timeout_ms);
    let mut served = 0;
    while served < count {
        let ev = cepm.expect_event(timeout)?;
        println!(
            "serve: event {} on handle {} (context {:#x}, status {})",
            event::event_name(ev.kind),
            ev.handle,
            ev.user_context,
            ev.status
        );
        if ev.kind != sys::CEPM_EVENT_REQ_RECEIVED && ev.kind != sys::CEPM_EVENT_SIDR_REQ_RECEIVED {
            continue;
        }
        if leave_unclaimed {
            println!("serve: leaving the REQ unclaimed and closing");
            return Ok(());
        }
        if first_claims_after_peer_ends && served == 0 {
            await_requests_over(&cepm, service_id, timeout)?;
            println!("serve: the peer has ended the first request; claiming it");
        }
        let (handle, req) = cepm.get_request(listener, 0x5e57_0000 + u64::from(served))?;
        let info = cepm.query_cep(handle)?;
        println!(
            "serve: REQ from comm ID {:#x} QPN {:#x} PSN {:#x} for {:#018x} on {} port {}, CEP {} in {}",
            req.remote_comm_id,
            req.remote_qpn,
            req.starting_psn,
            req.service_id,
            req.device,
            req.port,
            handle,
            cep::state_name(info.state)
        );
        // GET_REQUEST claims the oldest request, which need not be the one this event
        // announced: a SIDR_REQ is answered with a SIDR_REP, never a REJ (EINVAL).
        if req.sidr == 1 {
            cepm.sidr_rep(&sys::cepm_sidr_rep {
                handle,
                status: sys::CEPM_SIDR_REJECT as u8,
                ..Default::default()
            })?;
            println!("serve: answered the SIDR_REQ with status reject");
        } else {
            if first_awaits_peer_event && served == 0 {
                let ev = loop {
                    let ev = cepm.expect_event(timeout)?;
                    if ev.handle == handle {
                        break ev;
                    }
                };
                println!(
                    "serve: event {} on CEP {handle} (status {}) before the REJ",
                    event::event_name(ev.kind),
                    ev.status
                );
            }
            match cepm.reject(handle, reason, &[], reject_data) {
                Ok(()) => println!(
                    "serve: rejected with reason {reason} and {} bytes of private data",
                    reject_data.len()
                ),
                // The peer may end its request (a REJ, or a new REQ on its QP making this one
                // stale) before our REJ, even before the claim, and an ended request refuses
                // it. That needs evidence: the request is over, and either it ended after the
                // claim or the last message the CEP received is a REJ. Anything else, a CEP
                // handed over already IDLE for no reason among them, is still an error.
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                    let state = cepm.query_cep(handle)?.state;
                    let peer_rejected = cepm.private_data(handle)?.0 == AttrId::Rej.to_u16();
                    if !cep::request_is_over(state) || (state == info.state && !peer_rejected) {
                        return Err(e);
                    }
                    println!(
                        "serve: the peer ended the request first (CEP {handle} in {})",
                        cep::state_name(state)
                    );
                }
                Err(e) => return Err(e),
            }
        }
        if keep_rejected {
            println!(
                "serve: keeping CEP {handle} in {}",
                cep::state_name(cepm.query_cep(handle)?.state)
            );
        } else {
            cepm.destroy(handle)?;
        }
        served += 1;
    }
    cepm.destroy(listener)?;
    Ok(())
}

/// Returns once no CEP of `service_id` but its listener is still in a request: each has
/// ended (IDLE or TIMEWAIT) or is gone.
fn await_requests_over(
    cepm: &Cepm,
    service_id: u64,
    timeout: std::time::Duration,
) -> std::io::Result<()> {
    let deadline = std::time::Instant::now() + timeout;
    loop {
        let ceps = cepm.list_ceps()?;
        let in_request = ceps.iter().any(|c| {
            c.service_id == service_id
                && c.state != sys::CEPM_STATE_LISTEN
                && !cep::request_is_over(c.state)
        });
        if !in_request {
            return Ok(());
        }
        if std::time::Instant::now() >= deadline {
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "the peer did not end the request",
            ));
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

fn invalid_input(msg: String) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidInput, msg)
}

fn find_port(device: &str, port: u32) -> std::io::Result<PortInfo> {
    let q = Cepm::open()?.query()?;
    q.ports
        .into_iter()
        .find(|p| p.device == device && p.port == port)
        .ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!("{device} port {port} is not managed by cepm"),
            )
        })
}

fn run(cli: Cli) -> std::io::Result<()> {
    match cli.command {
        Command::Abi => println!("{}", Cepm::open()?.query()?.abi_version),
        Command::Events { count, timeout_ms } => {
            let cepm = Cepm::open()?;
            cepm.monitor()?;
            println!("events: monitoring");
            std::io::Write::flush(&mut std::io::stdout())?;
            let timeout = (timeout_ms != 0).then(|| std::time::Duration::from_millis(timeout_ms));
            let mut seen = 0;
            while count.is_none_or(|c| seen < c) {
                let Some(t) = cepm.next_trace(timeout)? else {
                    break;
                };
                if t.lost != 0 {
                    println!("events: {} event(s) lost (queue full)", t.lost);
                }
                println!(
                    "events: +{:.3} ms CEP {:#x} peer {:#x} service {:#x}: {} (status {}) -> {}",
                    t.timestamp.as_secs_f64() * 1e3,
                    t.local_comm_id,
                    t.remote_comm_id,
                    t.service_id,
                    event::event_name(t.kind),
                    t.status,
                    cep::state_name(t.state)
                );
                std::io::Write::flush(&mut std::io::stdout())?;
                seen += 1;
            }
        }
        Command::List => {
            let ceps = Cepm::open()?.list_ceps()?;
            println!("{} CEP(s)", ceps.len());
            println!(
                "{:>10}  {:<22} {:>18}  {:>10}  {:>8}  {:>7}",
                "comm ID", "state", "service ID", "peer ID", "peer QPN", "pending"
            );
            for c in &ceps {
                println!(
                    "{:>#10x}  {:<22} {:>#18x}  {:>#10x}  {:>#8x}  {:>7}",
                    c.local_comm_id,
                    cep::state_name(c.state),
                    c.service_id,
                    c.remote_comm_id,
                    c.remote_qpn,
                    c.pending_requests
                );
            }
        }
        Command::Connect { service_id, common } => match common.count {
            Some(count) if common.phases => {
                let parallel = common.parallel.max(1);
                let p = many::active_phased(&common.config(service_id), count, parallel)?;
                print_phases(&p, parallel);
                if p.failed != 0 {
                    return Err(std::io::Error::other(format!(
                        "{} connection(s) failed",
                        p.failed
                    )));
                }
            }
            Some(count) => {
                let parallel = common.parallel.max(1);
                let t = many::active(&common.config(service_id), count, parallel)?;
                print_totals("connect", &t, parallel);
                if t.failed != 0 {
                    return Err(std::io::Error::other(format!(
                        "{} connection(s) failed",
                        t.failed
                    )));
                }
            }
            None => print_outcome("connect", &connect::active(&common.config(service_id))?),
        },
        Command::Resolve { service_id, common } => {
            let r = sidr::resolve(&common.config(service_id))?;
            println!(
                "resolve: {service_id:#018x}: status {}, QPN {:#x}, Q_Key {:#x}",
                r.status, r.qpn, r.qkey
            );
        }
        Command::ServeUd {
            service_id,
            qpn,
            qkey,
            status,
            answers,
            common,
        } => {
            let n = sidr::serve(&common.config(service_id), answers, status, qpn, qkey)?;
            println!("serve-ud: answered {n} SIDR_REQ(s)");
        }
        Command::Accept { service_id, common } => match common.count {
            Some(count) if common.phases => {
                let p = many::passive_phased(&common.config(service_id), count)?;
                print_phases(&p, 1);
                if p.failed != 0 {
                    return Err(std::io::Error::other(format!(
                        "{} connection(s) failed",
                        p.failed
                    )));
                }
            }
            Some(count) => print_totals(
                "accept",
                &many::passive(&common.config(service_id), count)?,
                1,
            ),
            None => print_outcome("accept", &connect::passive(&common.config(service_id))?),
        },
        Command::Serve(args) => serve(&args)?,
        Command::Ports => {
            let q = Cepm::open()?.query()?;
            println!(
                "cepm ABI {}, {} managed port(s), {} CEP(s)",
                q.abi_version,
                q.ports.len(),
                q.num_ceps
            );
            q.ports.iter().for_each(print_port);
        }
        Command::RxCount { device, port, what } => {
            let p = find_port(&device, port)?;
            let count = match what {
                Received::Attr(attr) => p.rx(attr),
                Received::Malformed => p.rx_malformed,
                Received::Invalid => p.rx_invalid,
            };
            println!("{count}")
        }
        Command::TxCount { device, port, attr } => {
            println!("{}", find_port(&device, port)?.tx(attr))
        }
        Command::SendMad {
            device,
            port,
            attr,
            count,
            verbose,
            to_gid,
            from_gid,
            forge,
        } => {
            // Refuse bad options before touching the device.
            let gid = match from_gid {
                Some(from) => umad::roce_v2_gid(&device, port, from)?,
                None => umad::roce_v2_ipv4_gid(&device, port)?,
            };
            let to = to_gid.map_or(gid.raw, |g| g.octets());
            forge.mad(attr, 0, &to).map_err(invalid_input)?;
            let mut agent = umad::SendAgent::open(&device, port)?;
            for i in 0..count {
                let mad = forge.mad(attr, i, &to).map_err(invalid_input)?;
                agent.send(gid.index, to, &mad)?;
                if verbose {
                    println!(
                        "send-mad: sent {} {}/{count} to {device} port {port}, {}",
                        attr.name(),
                        i + 1,
                        forge::describe(&mad)
                    );
                }
            }
        }
        Command::HoldListens {
            service_ids,
            hold_ms,
        } => {
            let cepm = Cepm::open()?;
            for &service_id in &service_ids {
                let listener = cepm.create(0)?;
                cepm.listen(listener, service_id, u64::MAX)?;
            }
            println!("holding {} listens", service_ids.len());
            std::thread::sleep(std::time::Duration::from_millis(hold_ms));
        }
        Command::SendFrame {
            netdev,
            attr,
            to,
            from,
            cut_at,
            forge,
        } => {
            let mad = forge
                .mad(attr, 0, &to.to_ipv6_mapped().octets())
                .map_err(invalid_input)?;
            let route = frame::Route {
                src_mac: frame::netdev_mac(&netdev)?,
                dst_mac: frame::neighbour_mac(&netdev, to)?,
                src_ip: from,
                dst_ip: to,
            };
            let bytes = &mad[..usize::from(cut_at)];
            frame::FrameSocket::open(&netdev)?
                .send(&frame::roce_v2_frame(&route, 0, bytes), route.dst_mac)?;
            println!(
                "send-frame: sent {} bytes of a {} to {to} on {netdev}",
                bytes.len(),
                attr.name()
            );
        }
        Command::FuzzMad {
            device,
            port,
            to_gid,
            seed,
            count,
            comm_ids,
            qpns,
            gids,
            service_ids,
        } => fuzz_mad::run(&fuzz_mad::Config {
            device,
            port,
            to: to_gid.octets(),
            seed,
            count,
            comm_ids,
            qpns,
            gids: gids.iter().map(|g| g.octets()).collect(),
            service_ids,
        })?,
        Command::Storm {
            role,
            service_id,
            iterations,
            parallel,
            seed,
            timeout_ms,
            device,
            port,
            peer_ip,
            peer_mac,
            max_cm_retries,
            cm_response_timeout,
            packet_life_time,
            progress,
        } => {
            let opts = storm::Options {
                role: match role {
                    StormRole::Server => storm::Role::Server,
                    StormRole::Client => storm::Role::Client,
                },
                service_id,
                iterations,
                parallel,
                seed,
                timeout: std::time::Duration::from_millis(timeout_ms),
                device,
                port,
                peer: peer_ip.zip(peer_mac).map(|(ip, mac)| (ip.octets(), mac)),
                max_cm_retries,
                cm_response_timeout,
                packet_life_time,
                progress,
            };
            // A panic is a failure like any other: exit 1, after the panic message.
            std::panic::catch_unwind(|| storm::run(&opts))
                .map_err(|_| std::io::Error::other("storm: panicked"))??;
        }
        Command::VerbsSelftest {
            device,
            port,
            iterations,
            size,
            mtu,
            timeout_ms,
            corrupt_echo_at,
        } => {
            let timeout = std::time::Duration::from_millis(timeout_ms);
            verbs_selftest(&verbs::loopback::Config {
                device,
                port,
                iterations,
                size,
                mtu,
                timeout,
                corrupt_echo_at,
            })?;
        }
    }
    Ok(())
}

fn verbs_selftest(config: &verbs::loopback::Config) -> std::io::Result<()> {
    use verbs::loopback;
    let r = loopback::run(config)?;
    println!(
        "verbs-selftest: {} port {} GID {} (index {}), MTU {}, QP {} <-> QP {}",
        config.device,
        config.port,
        loopback::format_gid(&r.gid.raw),
        r.gid.index,
        r.mtu,
        r.client_qpn,
        r.server_qpn
    );
    println!("verbs-selftest: {}", r.client);
    println!("verbs-selftest: {}", r.server);
    println!(
        "verbs-selftest: OK, {} bytes verified",
        r.client.bytes_verified + r.server.bytes_verified
    );
    Ok(())
}

fn main() -> ExitCode {
    // Die quietly on a closed pipe (`cepmctl ports | grep -q ...`), like C tools, instead of
    // panicking in println!.
    // SAFETY: Setting a signal disposition to SIG_DFL has no preconditions.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cepmctl: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attributes_parse_by_name_and_number() {
        for attr in AttrId::ALL {
            assert_eq!(parse_attr(attr.name()), Ok(attr));
            assert_eq!(parse_attr(&attr.to_u16().to_string()), Ok(attr));
            assert_eq!(parse_attr(&format!("{:#x}", attr.to_u16())), Ok(attr));
        }
        assert_eq!(parse_attr("req"), Ok(AttrId::Req));
        assert!(parse_attr("0x0002").is_err());
        assert!(parse_attr("bogus").is_err());
    }
}
