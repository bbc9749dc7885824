//! Events: what `/dev/cepm` reports about a file's own CEPs (an [`Event`] per read), or, on a
//! monitor, about every CEP in the module (a [`TraceRecord`] per read). The calls that wait do
//! so with `poll(2)` on the file, which a caller can as well put in its own event loop
//! (`Cepm` is `AsRawFd`) and then read with [`Cepm::read_event`].

use std::{io, time::Duration};

use crate::{sys, Cepm};

/// An event read from `/dev/cepm`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    /// `CEPM_EVENT_*`; see [`event_name`].
    pub kind: u32,
    /// The CEP it is about.
    pub handle: u32,
    /// That CEP's context.
    pub user_context: u64,
    /// Event-specific: the REJ reason for `CEPM_EVENT_REJ_RECEIVED`.
    pub status: u32,
}

/// A monitor's copy of one event (`struct cepm_trace`), from any CEP in the module.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceRecord {
    /// When, since the monitor started.
    pub timestamp: Duration,
    /// The CEP's service ID (listeners: the one they listen on).
    pub service_id: u64,
    /// The CEP's local comm ID.
    pub local_comm_id: u32,
    /// The peer's comm ID, 0 while unknown.
    pub remote_comm_id: u32,
    /// `CEPM_EVENT_*`.
    pub kind: u32,
    /// As in [`Event::status`].
    pub status: u32,
    /// `CEPM_STATE_*` after the event.
    pub state: u32,
    /// Records the kernel dropped just before this one (the monitor's queue was full).
    pub lost: u32,
}

impl Event {
    fn from_sys(ev: &sys::cepm_event) -> Self {
        Self {
            kind: ev.event,
            handle: ev.handle,
            user_context: ev.user_context,
            status: ev.status,
        }
    }
}

/// The name of a `CEPM_EVENT_*` value.
pub fn event_name(kind: u32) -> &'static str {
    match kind {
        sys::CEPM_EVENT_REQ_RECEIVED => "REQ_RECEIVED",
        sys::CEPM_EVENT_REJ_RECEIVED => "REJ_RECEIVED",
        sys::CEPM_EVENT_REP_RECEIVED => "REP_RECEIVED",
        sys::CEPM_EVENT_ESTABLISHED => "ESTABLISHED",
        sys::CEPM_EVENT_REQ_ERROR => "REQ_ERROR",
        sys::CEPM_EVENT_REP_ERROR => "REP_ERROR",
        sys::CEPM_EVENT_DREQ_RECEIVED => "DREQ_RECEIVED",
        sys::CEPM_EVENT_DREP_RECEIVED => "DREP_RECEIVED",
        sys::CEPM_EVENT_DREQ_ERROR => "DREQ_ERROR",
        sys::CEPM_EVENT_TIMEWAIT_EXIT => "TIMEWAIT_EXIT",
        sys::CEPM_EVENT_DEVICE_REMOVAL => "DEVICE_REMOVAL",
        sys::CEPM_EVENT_MRA_RECEIVED => "MRA_RECEIVED",
        sys::CEPM_EVENT_SIDR_REQ_RECEIVED => "SIDR_REQ_RECEIVED",
        sys::CEPM_EVENT_SIDR_REP_RECEIVED => "SIDR_REP_RECEIVED",
        sys::CEPM_EVENT_SIDR_REQ_ERROR => "SIDR_REQ_ERROR",
        _ => "?",
    }
}

impl Cepm {
    /// Queues an event made in userspace for `handle` (ABI 5): `kind` within
    /// `CEPM_EVENT_USER_FIRST..=CEPM_EVENT_USER_LAST`. `ENOSPC` if the queue is full.
    pub fn post_event(&self, handle: u32, kind: u32, status: u32) -> io::Result<()> {
        let mut p = sys::cepm_post_event {
            handle,
            event: kind,
            status,
            ..Default::default()
        };
        self.ioctl(sys::CEPM_IOCTL_POST_EVENT, &mut p)
    }

    /// Waits for the next event, failing with `TimedOut` after `timeout`.
    pub fn expect_event(&self, timeout: Duration) -> io::Result<Event> {
        self.next_event(Some(timeout))?
            .ok_or_else(|| io::Error::new(io::ErrorKind::TimedOut, "no event before the timeout"))
    }

    /// The next event, waiting at most `timeout` (`None`: forever). `Ok(None)` on timeout.
    pub fn next_event(&self, timeout: Option<Duration>) -> io::Result<Option<Event>> {
        if !self.wait_readable(timeout)? {
            return Ok(None);
        }
        let ev: sys::cepm_event = self.read_record()?;
        Ok(Some(Event::from_sys(&ev)))
    }

    /// The next event, as the file's flags say: waiting for one, or `EAGAIN` under
    /// `O_NONBLOCK` when none is queued.
    pub fn read_event(&self) -> io::Result<Event> {
        let ev: sys::cepm_event = self.read_record()?;
        Ok(Event::from_sys(&ev))
    }

    /// Whether an event is waiting to be read (without reading it).
    pub fn event_pending(&self) -> io::Result<bool> {
        self.wait_readable(Some(Duration::ZERO))
    }

    /// Makes this file a monitor: from now on it reads [`TraceRecord`]s (every event of every
    /// CEP in the module) with [`Cepm::next_trace`], and can own no CEP.
    pub fn monitor(&self) -> io::Result<()> {
        let mut a = sys::cepm_monitor::default();
        self.ioctl(sys::CEPM_IOCTL_MONITOR, &mut a)
    }

    /// A monitor's next record, waiting at most `timeout` (`None`: forever); `Ok(None)` on
    /// timeout.
    pub fn next_trace(&self, timeout: Option<Duration>) -> io::Result<Option<TraceRecord>> {
        if !self.wait_readable(timeout)? {
            return Ok(None);
        }
        let t: sys::cepm_trace = self.read_record()?;
        Ok(Some(TraceRecord {
            timestamp: Duration::from_nanos(t.timestamp_ns),
            service_id: t.service_id,
            local_comm_id: t.local_comm_id,
            remote_comm_id: t.remote_comm_id,
            kind: t.event,
            status: t.status,
            state: t.state,
            lost: t.lost,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_names_follow_the_abi_numbering() {
        assert_eq!(event_name(sys::CEPM_EVENT_REQ_RECEIVED), "REQ_RECEIVED");
        assert_eq!(event_name(sys::CEPM_EVENT_TIMEWAIT_EXIT), "TIMEWAIT_EXIT");
        assert_eq!(event_name(sys::CEPM_EVENT_SIDR_REQ_ERROR), "SIDR_REQ_ERROR");
        assert_eq!(event_name(sys::CEPM_EVENT_USER_FIRST), "?");
    }

    #[test]
    fn abi_structs_have_the_sizes_the_kernel_asserts() {
        assert_eq!(std::mem::size_of::<sys::cepm_event>(), 24);
    }
}
