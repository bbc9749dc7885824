//! Address resolutions under way, followed by one thread of the process, so that
//! `rdma_resolve_addr` returns at once and its result comes as an event: as the kernel's
//! `rdma_resolve_ip` (drivers/infiniband/core/addr.c) queues a request that `process_one_req`
//! looks at again on every neighbour change and at its timeout, and completes by callback.
//! The thread keeps a subscription to neighbour changes while it has requests, and looks at
//! each request again whenever one comes, a new request arrives, the nearest timeout passes,
//! or [`RECHECK`] does.
//!
//! A request's [`Ticket`] decides between its completion and its cancel (the ID's destroy):
//! whichever comes first runs, and a cancel returns only once no completion is running, so
//! that nothing touches a destroyed ID or posts an event for it.

use std::{
    io,
    os::fd::AsFd,
    sync::{Arc, Mutex, MutexGuard, PoisonError},
    thread,
    time::{Duration, Instant},
};

use super::{
    address::{Resolution, Resolved},
    netlink::Notifications,
};
use crate::wakeup::Wakeup;

/// The longest wait between two looks at a next hop, in case a change went unannounced.
const RECHECK: Duration = Duration::from_millis(100);

/// One resolution's claim on what its completion changes: used by the completion or by a
/// cancel, whichever comes first.
pub(crate) struct Ticket {
    /// Neither has come yet.
    open: Mutex<bool>,
}

impl Ticket {
    /// An open ticket.
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Self {
            open: Mutex::new(true),
        })
    }

    fn open(&self) -> MutexGuard<'_, bool> {
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether neither the completion nor a cancel has come.
    pub(crate) fn is_open(&self) -> bool {
        *self.open()
    }

    /// Runs `complete` unless a cancel came first, and closes the ticket. A cancel meanwhile
    /// waits until `complete` returns.
    pub(crate) fn redeem(&self, complete: impl FnOnce()) {
        let mut open = self.open();
        if *open {
            *open = false;
            complete();
        }
    }

    /// Closes the ticket: once this returns, its completion has run or never will.
    pub(crate) fn cancel(&self) {
        *self.open() = false;
    }

    /// Keeps the completion from running until the result is dropped (it waits for one under
    /// way), so that it sees what it changes before or after a change, never in the middle.
    pub(crate) fn hold(&self) -> Held<'_> {
        Held { _open: self.open() }
    }
}

/// A [`Ticket`] held: see [`Ticket::hold`].
pub(crate) struct Held<'a> {
    _open: MutexGuard<'a, bool>,
}

/// What a finished resolution is handed to.
pub(crate) type Completion = Box<dyn FnOnce(io::Result<Resolved>) + Send>;

/// A resolution the thread follows.
struct Request {
    resolution: Resolution,
    ticket: Arc<Ticket>,
    complete: Completion,
}

/// The requests handed to the thread and not yet taken, and what wakes it.
struct Queue {
    incoming: Mutex<Vec<Request>>,
    wake: Wakeup,
}

impl Queue {
    fn new() -> io::Result<Self> {
        Ok(Self {
            incoming: Mutex::new(Vec::new()),
            wake: Wakeup::new()?,
        })
    }

    fn incoming(&self) -> MutexGuard<'_, Vec<Request>> {
        self.incoming.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The process's queue, and the process that started its thread: a child after a fork,
/// which has no such thread, starts its own.
static QUEUE: Mutex<Option<(u32, Arc<Queue>)>> = Mutex::new(None);

/// Hands `resolution` to the process's resolving thread (started by the first request), which
/// calls `complete` with its result unless `ticket` is cancelled first.
pub(crate) fn submit(
    resolution: Resolution,
    ticket: Arc<Ticket>,
    complete: Completion,
) -> io::Result<()> {
    let queue = {
        let mut kept = QUEUE.lock().unwrap_or_else(PoisonError::into_inner);
        let pid = std::process::id();
        match kept.as_ref() {
            Some((owner, queue)) if *owner == pid => Arc::clone(queue),
            _ => {
                let queue = Arc::new(Queue::new()?);
                let theirs = Arc::clone(&queue);
                thread::Builder::new()
                    .name("cepm-resolve".into())
                    .spawn(move || follow(&theirs))?;
                *kept = Some((pid, Arc::clone(&queue)));
                queue
            }
        }
    };
    let mut incoming = queue.incoming();
    incoming.push(Request {
        resolution,
        ticket,
        complete,
    });
    // The thread clears its wake-up before it takes the requests, so the first request after
    // a take wakes it, and those behind it in a burst need not (a system call each).
    if incoming.len() == 1 {
        queue.wake.wake();
    }
    Ok(())
}

/// The resolving thread: looks at each request until it finishes or its ticket closes.
fn follow(queue: &Queue) {
    let mut requests: Vec<Request> = Vec::new();
    let mut changes: Option<Notifications> = None;
    loop {
        queue.wake.reset();
        requests.append(&mut queue.incoming());
        if requests.is_empty() {
            // Nothing to follow: no notification is worth hearing.
            changes = None;
            queue.wake.sleep(None);
            continue;
        }
        // Joined before the looks that follow, so that no change after them goes unheard.
        if changes.is_none() {
            changes = Notifications::subscribe(libc::RTNLGRP_NEIGH).ok();
        }
        requests = requests.into_iter().filter_map(step).collect();
        let Some(nearest) = requests.iter().map(|r| r.resolution.deadline()).min() else {
            continue;
        };
        let wait = nearest
            .saturating_duration_since(Instant::now())
            .min(RECHECK);
        match &changes {
            // Any neighbour's change wakes it; the next looks tell whose it was.
            Some(changes) => {
                let _ = changes.wait(queue.wake.as_fd(), wait);
            }
            None => queue.wake.sleep(Some(wait)),
        }
    }
}

/// One look at `request`: kept while its next hop is being resolved; completed, or dropped
/// once cancelled, otherwise.
fn step(mut request: Request) -> Option<Request> {
    if !request.ticket.is_open() {
        return None;
    }
    let Some(outcome) = request.resolution.step() else {
        return Some(request);
    };
    let Request {
        ticket, complete, ..
    } = request;
    ticket.redeem(|| complete(outcome));
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::{net::IpAddr, sync::mpsc};

    fn loopback() -> IpAddr {
        "127.0.0.1".parse().unwrap()
    }

    #[test]
    fn a_ticket_runs_its_completion_once() {
        let ticket = Ticket::new();
        let mut runs = 0;
        ticket.redeem(|| runs += 1);
        ticket.redeem(|| runs += 1);
        assert_eq!(runs, 1);
        assert!(!ticket.is_open());
    }

    #[test]
    fn a_cancelled_ticket_runs_nothing() {
        let ticket = Ticket::new();
        ticket.cancel();
        ticket.redeem(|| panic!("cancelled"));
    }

    #[test]
    fn a_cancel_waits_for_a_running_completion() {
        let ticket = Ticket::new();
        let (started, running) = mpsc::channel();
        let (finish, finishing) = mpsc::channel::<()>();
        let completer = {
            let ticket = Arc::clone(&ticket);
            thread::spawn(move || {
                ticket.redeem(|| {
                    started.send(()).unwrap();
                    finishing.recv().unwrap();
                })
            })
        };
        running.recv().unwrap();
        let canceller = {
            let ticket = Arc::clone(&ticket);
            thread::spawn(move || ticket.cancel())
        };
        thread::sleep(Duration::from_millis(20));
        assert!(
            !canceller.is_finished(),
            "the cancel returned mid-completion"
        );
        finish.send(()).unwrap();
        completer.join().unwrap();
        canceller.join().unwrap();
    }

    #[test]
    fn a_held_ticket_keeps_its_completion_waiting() {
        let ticket = Ticket::new();
        let held = ticket.hold();
        let completer = {
            let ticket = Arc::clone(&ticket);
            thread::spawn(move || {
                let mut ran = false;
                ticket.redeem(|| ran = true);
                ran
            })
        };
        thread::sleep(Duration::from_millis(20));
        assert!(!completer.is_finished(), "completed while held");
        drop(held);
        assert!(completer.join().unwrap());
    }

    /// A resolution toward this host's loopback address, which has no RoCE GID: it finishes
    /// at its first look, with `EADDRNOTAVAIL`.
    fn no_gid() -> Resolution {
        super::super::address::start(loopback(), None, 0, Duration::from_secs(1)).unwrap()
    }

    #[test]
    fn the_thread_completes_what_it_is_given() {
        let (done, results) = mpsc::channel();
        for _ in 0..3 {
            let done = done.clone();
            let complete: Completion = Box::new(move |r| done.send(r.map(|_| ())).unwrap());
            submit(no_gid(), Ticket::new(), complete).unwrap();
        }
        for _ in 0..3 {
            let got = results.recv_timeout(Duration::from_secs(10)).unwrap();
            assert_eq!(got.unwrap_err().raw_os_error(), Some(libc::EADDRNOTAVAIL));
        }
    }

    #[test]
    fn the_thread_drops_a_cancelled_request() {
        let ticket = Ticket::new();
        ticket.cancel();
        let complete: Completion = Box::new(|_| panic!("cancelled before it was followed"));
        submit(no_gid(), ticket, complete).unwrap();
        // A request after it is completed: the thread went past the cancelled one.
        let (done, results) = mpsc::channel();
        let complete: Completion = Box::new(move |r| done.send(r.is_err()).unwrap());
        submit(no_gid(), Ticket::new(), complete).unwrap();
        assert_eq!(results.recv_timeout(Duration::from_secs(10)), Ok(true));
    }
}
