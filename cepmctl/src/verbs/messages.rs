//! A batch exchange of SEND/RECV messages, the data pattern of rdma-core's `ucmatose` and
//! `rdma_server`/`rdma_client`: every receive is posted up front (before the REQ or REP, since
//! the stock tools' QPs may run with RNR retry 0), then one side sends its batch and the other
//! answers with its own. Contents are not checked: the stock tools send whatever their buffer
//! holds.

use std::{
    io,
    time::{Duration, Instant},
};

use super::{AccessFlags, MemoryRegion, RcQp, WcOpcode};

/// Receives and sends of one batch exchange.
pub struct Messages<'q> {
    qp: &'q RcQp,
    size: usize,
    count: u32,
    // One buffer per posted receive (the device may fill them concurrently), held until the
    // exchange is over; their contents are not looked at.
    _recvs: Vec<MemoryRegion>,
    send: MemoryRegion,
    received: u32,
    sent: u32,
}

/// What an exchange moved.
#[derive(Clone, Copy, Debug)]
pub struct Exchanged {
    /// Messages received.
    pub received: u32,
    /// Messages sent.
    pub sent: u32,
    /// Bytes received.
    pub bytes_received: u64,
    /// How long the exchange took.
    pub elapsed: Duration,
}

/// Bit set in the `wr_id` of sends, to tell their completions from receives'.
const SEND_WR: u64 = 1 << 63;

impl<'q> Messages<'q> {
    /// Posts `count` receives of `size` bytes on `qp`, which must be in INIT or later with room
    /// for `count` receives.
    pub fn new(qp: &'q RcQp, count: u32, size: usize) -> io::Result<Self> {
        let send = MemoryRegion::new(qp.pd(), size, AccessFlags::NONE)?;
        let mut recvs = Vec::with_capacity(count as usize);
        for i in 0..count {
            let mr = MemoryRegion::new(qp.pd(), size, AccessFlags::LOCAL_WRITE)?;
            // SAFETY: `mr` is kept in `recvs` and never accessed while its receive may be
            // outstanding: only its completion is looked at, and it is dropped with `self`,
            // after the QP stops using it or with the request flushed.
            unsafe { qp.post_recv(&mr, u64::from(i)) }?;
            recvs.push(mr);
        }
        Ok(Self {
            qp,
            size,
            count,
            _recvs: recvs,
            send,
            received: 0,
            sent: 0,
        })
    }

    /// Takes one completion and counts it; returns the bytes of a receive.
    fn account(&mut self, timeout: Duration) -> io::Result<u64> {
        let wc = self
            .qp
            .cq()
            .wait(timeout)
            .map_err(|e| self.with_progress(e))?
            .check()?;
        match wc.opcode {
            WcOpcode::Recv
                if wc.wr_id == u64::from(self.received) && self.received < self.count =>
            {
                self.received += 1;
                Ok(u64::from(wc.byte_len))
            }
            WcOpcode::Send if wc.wr_id == SEND_WR | u64::from(self.sent) => {
                self.sent += 1;
                Ok(0)
            }
            _ => Err(io::Error::other(format!(
                "unexpected completion {wc:?} ({} of {} received, {} sent)",
                self.received, self.count, self.sent
            ))),
        }
    }

    /// `e` with how far the exchange got and the QP's state, so that a stall can be told
    /// apart from a QP the device moved to the error state.
    fn with_progress(&self, e: io::Error) -> io::Error {
        let state = self
            .qp
            .state()
            .map_or_else(|q| format!("unknown ({q})"), |s| format!("{s:?}"));
        io::Error::new(
            e.kind(),
            format!(
                "{e} ({} of {} received, {} sends completed, QP in {state})",
                self.received, self.count, self.sent
            ),
        )
    }

    /// Runs the exchange: with `send_first`, `count` sends (waiting for their completions)
    /// then `count` receives; otherwise `count` receives, then `count` sends whose completions
    /// are not waited for, as the stock tools' answering side does: its peer may disconnect
    /// (and stop acknowledging) as soon as it has the last message.
    ///
    /// Keep `self` until the QP is done with (disconnected or destroyed): sends not waited for
    /// may still be reading its buffer.
    pub fn run(&mut self, send_first: bool, timeout: Duration) -> io::Result<Exchanged> {
        let start = Instant::now();
        let mut bytes = 0;
        if !send_first {
            while self.received < self.count {
                bytes += self.account(timeout)?;
            }
        }
        for i in 0..self.count {
            // SAFETY: the send buffer is never written after `new`, so the device may read it
            // for as many sends as are outstanding.
            unsafe {
                self.qp
                    .post_send(&self.send, self.size, SEND_WR | u64::from(i), true)
            }?;
        }
        let posted = self.count;
        if send_first {
            while self.sent < posted {
                bytes += self.account(timeout)?;
            }
        }
        while self.received < self.count {
            bytes += self.account(timeout)?;
        }
        self.sent = posted;
        Ok(Exchanged {
            received: self.received,
            sent: self.sent,
            bytes_received: bytes,
            elapsed: start.elapsed(),
        })
    }
}
