//! rdma-core's `rping` data protocol (`librdmacm/examples/rping.c`) over an RC QP, in both roles,
//! so that a QP connected by cepm interoperates with unmodified `rping -s` and `rping -c`.
//!
//! Every SEND is exactly 16 bytes, a big-endian [`RdmaInfo`] `{ u64 buf; u32 rkey; u32 size }`,
//! and each side keeps exactly one 16-byte receive posted (posted by [`Rping::new`], before the
//! connection is made, and re-posted as soon as each receive completes). One ping:
//!
//! ```text
//! client                                         server
//!   fill start_buf ("rdma-ping-N: " + ASCII, NUL)
//!   SEND {start_buf, rkey, size}  ───────────▶     RECV
//!                                 ◀── READ ───     RDMA READ size bytes into rdma_buf
//!   RECV                          ◀───────────     SEND "go ahead" (16 zero bytes)
//!   SEND {rdma_buf, rkey, size}   ───────────▶     RECV
//!                                 ◀── WRITE ──     RDMA WRITE strlen(rdma_buf) + 1 bytes
//!   RECV                          ◀───────────     SEND "go ahead"
//!   check rdma_buf == start_buf (like rping -V)
//! ```
//!
//! The client disconnects after its last ping; the server runs until then (see
//! [`Rping::run_server`] for how it learns that).
//!
//! Requirements on the QP, which the caller sets up: the client's QP must grant
//! `REMOTE_READ | REMOTE_WRITE` (its buffers are read and written by the server) and have
//! `max_dest_rd_atomic >= 1`; the server's QP must have `max_rd_atomic >= 1` (it issues the
//! READs). The connection manager's `responder_resources`/`initiator_depth` of 1 give both.

use std::{
    fmt, io,
    time::{Duration, Instant},
};

use super::{
    AccessFlags, CompletionError, MemoryRegion, RcQp, RdmaOp, RemoteBuf, Role, WcOpcode,
    WorkCompletion,
};

/// Length of every rping message: `sizeof(struct rping_rdma_info)`.
pub const INFO_LEN: usize = 16;

/// The smallest buffer size rping accepts (`-S`): `RPING_MIN_BUFSIZE` =
/// `sizeof(stringify(INT_MAX)) + sizeof(RPING_MSG_FMT)` = 11 + 15.
pub const MIN_SIZE: usize = 26;

/// The largest buffer size rping accepts (`-S`): `RPING_BUFSIZE - 1`.
pub const MAX_SIZE: usize = 64 * 1024 - 1;

/// rping's default buffer size (`cb->size = 64`).
pub const DEFAULT_SIZE: usize = 64;

/// The message rping sends: where a buffer is and how long it is (`struct rping_rdma_info`,
/// every field big-endian on the wire).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct RdmaInfo {
    /// The buffer's address in the sender's memory.
    pub buf: u64,
    /// The remote key of the buffer's memory region.
    pub rkey: u32,
    /// The buffer's length in bytes (the sender's `-S`).
    pub size: u32,
}

impl RdmaInfo {
    /// The 16 bytes on the wire.
    pub fn encode(&self) -> [u8; INFO_LEN] {
        let mut b = [0u8; INFO_LEN];
        b[..8].copy_from_slice(&self.buf.to_be_bytes());
        b[8..12].copy_from_slice(&self.rkey.to_be_bytes());
        b[12..].copy_from_slice(&self.size.to_be_bytes());
        b
    }

    /// Decodes a message, which must be exactly [`INFO_LEN`] bytes (rping rejects any other
    /// length).
    pub fn decode(bytes: &[u8]) -> Option<Self> {
        let b: &[u8; INFO_LEN] = bytes.try_into().ok()?;
        let (buf, rest) = b.split_at(8);
        let (rkey, size) = rest.split_at(4);
        Some(Self {
            buf: u64::from_be_bytes(buf.try_into().ok()?),
            rkey: u32::from_be_bytes(rkey.try_into().ok()?),
            size: u32::from_be_bytes(size.try_into().ok()?),
        })
    }

    /// The buffer as a target of RDMA requests.
    pub fn remote(&self) -> RemoteBuf {
        RemoteBuf {
            addr: self.buf,
            rkey: self.rkey,
        }
    }
}

/// Fills `buf` with what the rping client puts in its `start_buf` for ping `ping` (counted from 0
/// on each connection): `snprintf(buf, size, "rdma-ping-%d: ", ping)`, then ASCII from
/// `'A' + ping % 58` upwards, wrapping after `'z'` to `'A'`, and a NUL in the last byte.
pub fn fill_ping(buf: &mut [u8], ping: u64) {
    let size = buf.len();
    if size == 0 {
        return;
    }
    let prefix = format!("rdma-ping-{ping}: ");
    // snprintf writes at most size - 1 characters (the NUL goes in the last byte below).
    let n = prefix.len().min(size - 1);
    buf[..n].copy_from_slice(&prefix.as_bytes()[..n]);
    if prefix.len() < size {
        // `start` begins at 65 and steps once per ping through 65..=122.
        let mut c = b'A' + (ping % 58) as u8;
        for b in &mut buf[prefix.len()..] {
            *b = c;
            c = if c >= b'z' { b'A' } else { c + 1 };
        }
    }
    buf[size - 1] = 0;
}

/// The length of the NUL-terminated string at the start of `data`, NUL included
/// (`strlen(data) + 1`), or all of `data` if it holds no NUL.
pub fn c_string_len(data: &[u8]) -> usize {
    data.iter()
        .position(|&b| b == 0)
        .map_or(data.len(), |n| n + 1)
}

/// The first offset where `got` differs from `expected`, if any (lengths are compared too: a
/// length difference is reported at the shorter length).
fn first_difference(got: &[u8], expected: &[u8]) -> Option<usize> {
    let shorter = got.len().min(expected.len());
    got.iter()
        .zip(expected)
        .position(|(a, b)| a != b)
        .or((got.len() != expected.len()).then_some(shorter))
}

/// What one end of an rping session did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RpingStats {
    /// This end's role.
    pub role: Role,
    /// Completed pings.
    pub pings: u64,
    /// This end's buffer size (`-S`).
    pub size: usize,
    /// Bytes this end fetched with RDMA READ (server only; 0 on the client).
    pub bytes_read: u64,
    /// Bytes this end stored with RDMA WRITE (server only; 0 on the client).
    pub bytes_written: u64,
    /// Bytes checked: on the client, the echoed buffer against the one sent (like `rping -V`);
    /// on the server, the data read against rping's pattern (unless disabled with
    /// [`Rping::check_pattern`]).
    pub bytes_verified: u64,
    /// From the start of the run to the last ping's end (client) or the stop (server).
    pub elapsed: Duration,
}

impl fmt::Display for RpingStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let secs = self.elapsed.as_secs_f64();
        write!(
            f,
            "rping {}: {} pings x {} bytes, RDMA read {} bytes, RDMA written {} bytes, verified {} bytes in {:.3} s",
            self.role, self.pings, self.size, self.bytes_read, self.bytes_written, self.bytes_verified, secs
        )
    }
}

/// The kinds of work request, in the top bits of their `wr_id`s; the rest is a sequence number
/// per kind, so that completions are checked to arrive once each and in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Recv = 0,
    Send = 1,
    Read = 2,
    Write = 3,
}

impl Kind {
    const ALL: [Kind; 4] = [Kind::Recv, Kind::Send, Kind::Read, Kind::Write];
    const SHIFT: u32 = 60;

    fn wr_id(self, seq: u64) -> u64 {
        (self as u64) << Self::SHIFT | seq
    }

    /// The kind and sequence number of a `wr_id` this module made.
    fn of(wr_id: u64) -> Option<(Kind, u64)> {
        let kind = *Self::ALL.get(usize::try_from(wr_id >> Self::SHIFT).ok()?)?;
        Some((kind, wr_id & ((1 << Self::SHIFT) - 1)))
    }

    fn opcode(self) -> WcOpcode {
        match self {
            Kind::Recv => WcOpcode::Recv,
            Kind::Send => WcOpcode::Send,
            Kind::Read => WcOpcode::RdmaRead,
            Kind::Write => WcOpcode::RdmaWrite,
        }
    }
}

/// Posted and completed work requests, per [`Kind`].
#[derive(Clone, Copy, Debug, Default)]
struct Counts {
    posted: [u64; 4],
    done: [u64; 4],
}

impl Counts {
    fn done(&self, kind: Kind) -> u64 {
        self.done[kind as usize]
    }

    fn outstanding(&self, kind: Kind) -> u64 {
        self.posted[kind as usize] - self.done[kind as usize]
    }
}

/// What taking one completion gave.
enum Step {
    /// A work request of this kind completed successfully.
    Done,
    /// A work request was flushed: the QP is in the error state (the peer disconnected and the
    /// caller moved the QP to ERR).
    Flushed(WorkCompletion),
    /// The caller's stop condition holds.
    Stopped,
}

/// A stop condition of [`Rping::run_server_until`].
type StopFn<'s> = dyn FnMut() -> io::Result<bool> + 's;

/// What [`Rping::on_data`] calls.
type Observer<'q> = Box<dyn FnMut(u64, &[u8]) + 'q>;

/// How often [`Rping::run_server_until`] asks its stop condition while no completion arrives.
pub const STOP_POLL: Duration = Duration::from_millis(20);

/// One end of rping's data protocol on an RC QP: its buffers (registered in the QP's PD) and its
/// one outstanding receive.
///
/// Create it while the QP is in INIT or later and before the peer can send (for the client,
/// before the connection is established; for the server, before it is accepted): the first
/// receive is posted here. Then call [`Rping::run_client`] or [`Rping::run_server`] (or
/// [`Rping::run_server_until`]) once the QP is in RTS.
///
/// Dropping it deregisters the buffers; a receive still posted then fails (or was flushed) when
/// the QP is torn down, which is harmless.
///
/// The peer may access the two RDMA buffers whenever it holds their keys. An rping peer does so
/// only between an advertisement and its "go ahead", and this end reads or writes them only
/// outside those windows; a misbehaving peer can only make the data wrong, which the checks
/// report.
pub struct Rping<'q> {
    qp: &'q RcQp,
    size: usize,
    /// The one posted receive's buffer.
    recv: MemoryRegion,
    /// What SENDs carry (never written on the server: its "go ahead" is 16 zero bytes).
    send: MemoryRegion,
    /// The client's echo target and the server's READ target / WRITE source.
    rdma: MemoryRegion,
    /// The client's ping data, which the server reads.
    start: MemoryRegion,
    counts: Counts,
    /// The last message received.
    last_info: Option<RdmaInfo>,
    check_pattern: bool,
    observer: Option<Observer<'q>>,
}

impl<'q> Rping<'q> {
    /// Prepares an rping end with `size`-byte buffers ([`MIN_SIZE`]..=[`MAX_SIZE`], rping's `-S`)
    /// on `qp`, which must be in INIT or later, and posts its first receive.
    pub fn new(qp: &'q RcQp, size: usize) -> io::Result<Self> {
        if qp.port().is_none() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "move the QP to INIT first",
            ));
        }
        if !(MIN_SIZE..=MAX_SIZE).contains(&size) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("rping size {size} is outside rping's range {MIN_SIZE}..={MAX_SIZE}"),
            ));
        }
        let remote =
            AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_READ | AccessFlags::REMOTE_WRITE;
        let mut rping = Self {
            qp,
            size,
            recv: MemoryRegion::new(qp.pd(), INFO_LEN, AccessFlags::LOCAL_WRITE)?,
            send: MemoryRegion::new(qp.pd(), INFO_LEN, AccessFlags::NONE)?,
            rdma: MemoryRegion::new(qp.pd(), size, remote)?,
            start: MemoryRegion::new(qp.pd(), size, remote)?,
            counts: Counts::default(),
            last_info: None,
            check_pattern: true,
            observer: None,
        };
        rping.post_recv()?;
        Ok(rping)
    }

    /// Whether the server checks the data it reads against the rping client's pattern
    /// ([`fill_ping`]) and fails on a mismatch (default: yes). The stock client always sends
    /// that pattern; turn this off to serve a client that sends something else.
    pub fn check_pattern(mut self, on: bool) -> Self {
        self.check_pattern = on;
        self
    }

    /// Calls `f` with the ping number and its data (up to and excluding the NUL) once per ping:
    /// on the client the echoed data (`rping -v`'s "ping data"), on the server the data read
    /// ("server ping data").
    pub fn on_data(mut self, f: impl FnMut(u64, &[u8]) + 'q) -> Self {
        self.observer = Some(Box::new(f));
        self
    }

    /// This end's buffer size.
    pub fn size(&self) -> usize {
        self.size
    }

    fn post_recv(&mut self) -> io::Result<()> {
        let seq = self.counts.posted[Kind::Recv as usize];
        // SAFETY: `recv` is read only in `take`, after this receive's completion, and then
        // re-posted; a posted receive is never outstanding when it is read. If `self` is
        // dropped with it posted, deregistration stops device access before the buffer is freed.
        unsafe { self.qp.post_recv(&self.recv, Kind::Recv.wr_id(seq)) }?;
        self.counts.posted[Kind::Recv as usize] += 1;
        Ok(())
    }

    /// Posts a signaled SEND of `send`'s 16 bytes.
    fn post_send(&mut self) -> io::Result<()> {
        let seq = self.counts.posted[Kind::Send as usize];
        // SAFETY: the client writes `send` only with no SEND outstanding (it waits for each
        // SEND's completion, `send_info`); the server never writes it.
        unsafe {
            self.qp
                .post_send(&self.send, INFO_LEN, Kind::Send.wr_id(seq), true)
        }?;
        self.counts.posted[Kind::Send as usize] += 1;
        Ok(())
    }

    /// Posts a signaled RDMA READ into / WRITE from the first `len` bytes of `rdma`.
    fn post_rdma(&mut self, op: RdmaOp, len: usize, remote: RemoteBuf) -> io::Result<()> {
        let kind = match op {
            RdmaOp::Read => Kind::Read,
            RdmaOp::Write => Kind::Write,
        };
        let seq = self.counts.posted[kind as usize];
        // SAFETY: only the server posts these, one at a time, and it waits for each one's
        // completion before touching `rdma` again (`serve_one`).
        unsafe {
            self.qp
                .post_rdma(op, &self.rdma, len, remote, kind.wr_id(seq), true)
        }?;
        self.counts.posted[kind as usize] += 1;
        Ok(())
    }

    /// Accounts for one completion of this QP.
    fn take(&mut self, wc: WorkCompletion) -> io::Result<Step> {
        let unexpected =
            |why: &str| io::Error::other(format!("rping: unexpected completion {wc:?}: {why}"));
        if wc.qp_num != self.qp.qp_num() {
            return Err(unexpected(&format!("not QP {}'s", self.qp.qp_num())));
        }
        let Some((kind, seq)) = Kind::of(wc.wr_id) else {
            return Err(unexpected("not a work request of this rping"));
        };
        if self.counts.outstanding(kind) == 0 || seq != self.counts.done(kind) {
            return Err(unexpected(&format!("out of order ({:?})", self.counts)));
        }
        if wc.is_flushed() {
            self.counts.done[kind as usize] += 1;
            return Ok(Step::Flushed(wc));
        }
        let wc = wc.check()?;
        if wc.opcode != kind.opcode() {
            return Err(unexpected(&format!("posted as {kind:?}")));
        }
        self.counts.done[kind as usize] += 1;
        if kind == Kind::Recv {
            if wc.byte_len as usize != INFO_LEN {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "rping: received {} bytes, every rping message is {INFO_LEN}",
                        wc.byte_len
                    ),
                ));
            }
            self.last_info = RdmaInfo::decode(&self.recv.as_slice()[..INFO_LEN]);
            // As rping does: the next message may follow as soon as the peer has our answer.
            self.post_recv()?;
        }
        Ok(Step::Done)
    }

    /// Takes the next completion, waiting at most `timeout`; with `stop`, asks it whenever no
    /// completion is pending (and at least every [`STOP_POLL`]).
    fn next(&mut self, timeout: Duration, stop: &mut Option<&mut StopFn<'_>>) -> io::Result<Step> {
        let deadline = Instant::now() + timeout;
        let cq = self.qp.cq();
        loop {
            if let Some(wc) = cq.poll()? {
                return self.take(wc);
            }
            if let Some(stop) = stop.as_mut() {
                if stop()? {
                    return Ok(Step::Stopped);
                }
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!(
                        "rping: no completion within {} ms ({:?})",
                        timeout.as_millis(),
                        self.counts
                    ),
                ));
            }
            let slice = if stop.is_some() {
                left.min(STOP_POLL)
            } else {
                left
            };
            match cq.wait(slice) {
                Ok(wc) => return self.take(wc),
                Err(e) if e.kind() == io::ErrorKind::TimedOut => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Takes completions until `done(counts)`; a receive beyond `recvs` is a protocol error.
    /// Returns `Ok(None)` when done, or the flush / stop that came first.
    fn wait(
        &mut self,
        timeout: Duration,
        recvs: u64,
        stop: &mut Option<&mut StopFn<'_>>,
        done: impl Fn(&Counts) -> bool,
    ) -> io::Result<Option<Step>> {
        while !done(&self.counts) {
            match self.next(timeout, stop)? {
                Step::Done => {}
                other => return Ok(Some(other)),
            }
            if self.counts.done(Kind::Recv) > recvs {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "rping: message {} arrived before its turn",
                        self.counts.done(Kind::Recv)
                    ),
                ));
            }
        }
        Ok(None)
    }

    /// The message just received.
    fn received(&mut self) -> io::Result<RdmaInfo> {
        self.last_info
            .take()
            .ok_or_else(|| io::Error::other("rping: no message received"))
    }

    /// Client: SENDs `info` and waits for its completion and for the server's answer (the
    /// `recvs`-th message).
    fn send_info(&mut self, info: RdmaInfo, recvs: u64, timeout: Duration) -> io::Result<()> {
        // The previous SEND completed (every call waits for its own), so the buffer is ours.
        self.send.as_mut_slice()[..INFO_LEN].copy_from_slice(&info.encode());
        self.post_send()?;
        let sends = self.counts.posted[Kind::Send as usize];
        match self.wait(timeout, recvs, &mut None, |c| {
            c.done(Kind::Send) == sends && c.done(Kind::Recv) == recvs
        })? {
            None => {
                self.received()?;
                Ok(())
            }
            Some(Step::Flushed(wc)) => Err(io::Error::other(CompletionError(wc))),
            Some(Step::Stopped) => Err(io::Error::other("rping: stopped")),
            Some(Step::Done) => unreachable!("wait returns only flushes and stops"),
        }
    }

    /// Runs the client side: `count` pings (none if 0), each advertising `start_buf` for the
    /// server to RDMA-READ and `rdma_buf` for it to RDMA-WRITE back, then checking that the
    /// echo equals what was sent (as `rping -V` does). `timeout` bounds the wait for any one
    /// completion. Any failed or unexpected completion, a message that is not 16 bytes, or a
    /// mismatch ends it with an error. The caller disconnects afterwards (as `rping -c` does
    /// after `-C` pings); the receive left posted is flushed then.
    pub fn run_client(mut self, count: u64, timeout: Duration) -> io::Result<RpingStats> {
        let start_time = Instant::now();
        let size = self.size;
        let wire_size = u32::try_from(size).expect("MAX_SIZE fits in u32");
        let mut verified = 0;
        for ping in 0..count {
            // The server's READ of the previous ping completed before its first "go ahead".
            fill_ping(&mut self.start.as_mut_slice()[..size], ping);
            let start = RdmaInfo {
                buf: self.start.addr(),
                rkey: self.start.rkey(),
                size: wire_size,
            };
            self.send_info(start, 2 * ping + 1, timeout)?;
            // Nothing writes rdma_buf before it is advertised: clear it, so that an echo that
            // never arrives cannot pass for one.
            self.rdma.as_mut_slice().fill(0);
            let sink = RdmaInfo {
                buf: self.rdma.addr(),
                rkey: self.rdma.rkey(),
                size: wire_size,
            };
            self.send_info(sink, 2 * ping + 2, timeout)?;
            // The server's WRITE completed before its second "go ahead", which we have.
            let (sent, echoed) = (
                &self.start.as_slice()[..size],
                &self.rdma.as_slice()[..size],
            );
            if let Some(at) = first_difference(echoed, sent) {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "rping ping {ping}: data mismatch at byte {at}: sent {:#04x}, echoed {:#04x}",
                        sent[at], echoed[at]
                    ),
                ));
            }
            verified += size as u64;
            if let Some(f) = self.observer.as_mut() {
                f(ping, &echoed[..c_string_len(echoed) - 1]);
            }
        }
        Ok(RpingStats {
            role: Role::Client,
            pings: count,
            size,
            bytes_read: 0,
            bytes_written: 0,
            bytes_verified: verified,
            elapsed: start_time.elapsed(),
        })
    }

    /// Runs the server side until the client is gone, which this end learns from its receive
    /// being flushed: run it on one thread, watch for the client's DREQ on another, and move
    /// the QP to ERR ([`QueuePair::to_error`](super::QueuePair::to_error)) when it arrives (as librdmacm does before its DREP);
    /// this returns then. Use [`Rping::run_server_until`] to stay on one thread.
    ///
    /// `timeout` bounds the wait for any one completion, including the wait for the next ping
    /// or the flush. A flush between pings ends the run with `Ok`; in the middle of a ping it is
    /// an error, like any failed or unexpected completion, a message that is not 16 bytes, a
    /// client buffer larger than this end's, or (unless disabled with [`Rping::check_pattern`])
    /// data that is not rping's.
    pub fn run_server(self, timeout: Duration) -> io::Result<RpingStats> {
        self.serve(timeout, None)
    }

    /// As [`Rping::run_server`], but also ends (with `Ok`, between pings) as soon as `stop`
    /// returns true. `stop` is called whenever no completion is pending, at least every
    /// [`STOP_POLL`] while waiting, so that a single thread can check the connection manager
    /// for the client's DREQ, e.g. with a non-blocking event read. Completions already queued
    /// are taken before `stop` is asked, so a ping that has arrived is served first. If `stop`
    /// returns true in the middle of a ping, the run fails: the client left mid-ping. An error
    /// from `stop` ends the run with that error.
    pub fn run_server_until(
        self,
        timeout: Duration,
        mut stop: impl FnMut() -> io::Result<bool>,
    ) -> io::Result<RpingStats> {
        self.serve(timeout, Some(&mut stop))
    }

    fn serve(
        mut self,
        timeout: Duration,
        mut stop: Option<&mut StopFn<'_>>,
    ) -> io::Result<RpingStats> {
        let start_time = Instant::now();
        let mut stats = RpingStats {
            role: Role::Server,
            pings: 0,
            size: self.size,
            bytes_read: 0,
            bytes_written: 0,
            bytes_verified: 0,
            elapsed: Duration::ZERO,
        };
        loop {
            let ping = stats.pings;
            // Between pings: the client's next start_buf advertisement, or the end.
            let want = 2 * ping + 1;
            if self
                .wait(timeout, want, &mut stop, |c| c.done(Kind::Recv) == want)?
                .is_some()
            {
                stats.elapsed = start_time.elapsed();
                return Ok(stats);
            }
            self.serve_one(ping, timeout, &mut stop, &mut stats)?;
            stats.pings += 1;
        }
    }

    /// Serves ping `ping`, whose first message has arrived.
    fn serve_one(
        &mut self,
        ping: u64,
        timeout: Duration,
        stop: &mut Option<&mut StopFn<'_>>,
        stats: &mut RpingStats,
    ) -> io::Result<()> {
        let mid_ping = |step: Step| match step {
            Step::Flushed(wc) => io::Error::new(
                io::ErrorKind::ConnectionAborted,
                format!(
                    "rping ping {ping}: the QP was flushed in the middle of the ping ({})",
                    wc.status_str()
                ),
            ),
            _ => io::Error::new(
                io::ErrorKind::ConnectionAborted,
                format!("rping ping {ping}: stopped (client gone) in the middle of the ping"),
            ),
        };
        let source = self.received()?;
        let len = source.size as usize;
        if len == 0 || len > self.size {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "rping ping {ping}: the client's buffer is {len} bytes, this end's {} (use a size >= the client's)",
                    self.size
                ),
            ));
        }
        self.post_rdma(RdmaOp::Read, len, source.remote())?;
        let reads = self.counts.posted[Kind::Read as usize];
        let recvs = 2 * ping + 1;
        if let Some(step) = self.wait(timeout, recvs, stop, |c| c.done(Kind::Read) == reads)? {
            return Err(mid_ping(step));
        }
        stats.bytes_read += len as u64;
        // The READ completed: the data is ours until the WRITE below is posted.
        let data = &self.rdma.as_slice()[..len];
        if self.check_pattern {
            let mut expected = vec![0u8; len];
            fill_ping(&mut expected, ping);
            if let Some(at) = first_difference(data, &expected) {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "rping ping {ping}: the data read is not rping's at byte {at}: expected {:#04x}, got {:#04x}",
                        expected[at], data[at]
                    ),
                ));
            }
            stats.bytes_verified += len as u64;
        }
        // rping writes back strlen(rdma_buf) + 1 bytes; bounded here by what was read.
        let echo_len = c_string_len(data);
        if let Some(f) = self.observer.as_mut() {
            f(
                ping,
                &data[..echo_len - usize::from(data[echo_len - 1] == 0)],
            );
        }
        // "Go ahead": 16 zero bytes, never written on this side.
        self.post_send()?;
        let recvs = 2 * ping + 2;
        if let Some(step) = self.wait(timeout, recvs, stop, |c| c.done(Kind::Recv) == recvs)? {
            return Err(mid_ping(step));
        }
        let sink = self.received()?;
        if (sink.size as usize) < echo_len {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "rping ping {ping}: the client's echo buffer is {} bytes, the echo {echo_len}",
                    sink.size
                ),
            ));
        }
        self.post_rdma(RdmaOp::Write, echo_len, sink.remote())?;
        let writes = self.counts.posted[Kind::Write as usize];
        if let Some(step) = self.wait(timeout, recvs, stop, |c| c.done(Kind::Write) == writes)? {
            return Err(mid_ping(step));
        }
        stats.bytes_written += echo_len as u64;
        // "Go ahead" again; its completion is taken while waiting for the next ping.
        self.post_send()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_is_sixteen_big_endian_bytes() {
        let info = RdmaInfo {
            buf: 0x0102_0304_0506_0708,
            rkey: 0x0a0b_0c0d,
            size: 64,
        };
        let wire = info.encode();
        assert_eq!(
            wire,
            [1, 2, 3, 4, 5, 6, 7, 8, 0x0a, 0x0b, 0x0c, 0x0d, 0, 0, 0, 64]
        );
        assert_eq!(RdmaInfo::decode(&wire), Some(info));
        assert_eq!(
            info.remote(),
            RemoteBuf {
                addr: 0x0102_0304_0506_0708,
                rkey: 0x0a0b_0c0d
            }
        );
        let max = RdmaInfo {
            buf: u64::MAX,
            rkey: u32::MAX,
            size: u32::MAX,
        };
        assert_eq!(RdmaInfo::decode(&max.encode()), Some(max));
        // The stock server's "go ahead" is all zeros.
        assert_eq!(RdmaInfo::decode(&[0; 16]), Some(RdmaInfo::default()));
    }

    #[test]
    fn info_of_any_other_length_is_rejected() {
        assert_eq!(RdmaInfo::decode(&[0; 15]), None);
        assert_eq!(RdmaInfo::decode(&[0; 17]), None);
        assert_eq!(RdmaInfo::decode(&[]), None);
    }

    fn ping(size: usize, n: u64) -> Vec<u8> {
        let mut buf = vec![0xffu8; size];
        fill_ping(&mut buf, n);
        buf
    }

    #[test]
    fn ping_data_is_rpings_start_buf() {
        // rping -S 26 (the minimum), ping 0: 13 prefix bytes, 'A'.., NUL in the last byte.
        assert_eq!(ping(26, 0), b"rdma-ping-0: ABCDEFGHIJKL\0");
        // Each ping starts one letter later.
        assert_eq!(ping(26, 1), b"rdma-ping-1: BCDEFGHIJKLM\0");
        // The run goes through the ASCII between 'Z' and 'a' and wraps after 'z' to 'A'.
        assert_eq!(ping(30, 25), b"rdma-ping-25: Z[\\]^_`abcdefgh\0");
        assert_eq!(ping(26, 57), b"rdma-ping-57: zABCDEFGHIJ\0");
        // The starting letter repeats every 58 pings.
        assert_eq!(&ping(64, 58)[14..63], &ping(64, 0)[13..62]);
    }

    #[test]
    fn ping_data_matches_rping_for_the_default_size() {
        // rping_test_client with cb->size = 64, ping 3, written out by hand.
        let mut expected = b"rdma-ping-3: ".to_vec();
        let mut c = b'D';
        while expected.len() < 63 {
            expected.push(c);
            c = if c == b'z' { b'A' } else { c + 1 };
        }
        expected.push(0);
        assert_eq!(ping(DEFAULT_SIZE, 3), expected);
        // Exactly one NUL, at the end: the server echoes strlen + 1 = all 64 bytes.
        assert_eq!(c_string_len(&ping(DEFAULT_SIZE, 3)), DEFAULT_SIZE);
        assert_eq!(c_string_len(&ping(MAX_SIZE, 123_456)), MAX_SIZE);
    }

    #[test]
    fn a_prefix_longer_than_the_buffer_is_truncated_like_snprintf() {
        // Only with pings beyond C's INT_MAX, which rping itself never reaches.
        let buf = ping(MIN_SIZE, u64::MAX);
        assert_eq!(
            &buf[..MIN_SIZE - 1],
            &b"rdma-ping-18446744073709551615: "[..MIN_SIZE - 1]
        );
        assert_eq!(buf[MIN_SIZE - 1], 0);
        assert_eq!(ping(1, 0), [0]);
        fill_ping(&mut [], 0);
    }

    #[test]
    fn c_strings_are_measured_with_their_nul() {
        assert_eq!(c_string_len(b"ab\0cd"), 3);
        assert_eq!(c_string_len(b"\0"), 1);
        assert_eq!(c_string_len(b"abc"), 3);
        assert_eq!(c_string_len(b""), 0);
    }

    #[test]
    fn differences_are_located() {
        assert_eq!(first_difference(b"abc", b"abc"), None);
        assert_eq!(first_difference(b"abd", b"abc"), Some(2));
        assert_eq!(first_difference(b"ab", b"abc"), Some(2));
        assert_eq!(first_difference(b"abc", b"ab"), Some(2));
    }

    #[test]
    fn wr_ids_carry_kind_and_sequence() {
        for kind in Kind::ALL {
            assert_eq!(Kind::of(kind.wr_id(0)), Some((kind, 0)));
            assert_eq!(
                Kind::of(kind.wr_id((1 << 60) - 1)),
                Some((kind, (1 << 60) - 1))
            );
        }
        assert_eq!(Kind::of(4 << 60), None);
        assert_eq!(Kind::Read.opcode(), WcOpcode::RdmaRead);
        assert_eq!(Kind::Write.opcode(), WcOpcode::RdmaWrite);
    }

    #[test]
    fn sizes_are_rpings() {
        // sizeof("2147483647") + sizeof("rdma-ping-%d: ")
        assert_eq!(
            MIN_SIZE,
            "2147483647".len() + 1 + "rdma-ping-%d: ".len() + 1
        );
        assert_eq!(MAX_SIZE, 65535);
    }
}
