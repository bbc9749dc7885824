// SPDX-License-Identifier: GPL-2.0

//! `CEPM_IOC_MIGRATE`: a CEP moves from another open `/dev/cepm` to this one with the events
//! queued for it and not read yet, as `rdma_migrate_id` moves an ID to another event channel.
//!
//! The move happens under the CEP's lock, so that the CEP raises no event meanwhile, and takes
//! the two files' locks one after the other, never both (CEP → file stays the only order):
//! 1. the new handle is filed here, which also keeps this file from becoming a monitor;
//! 2. the old handle and its events leave the other file;
//! 3. the events are queued here, under the new handle, in their order.
//!
//! Only the first step can fail, before anything has changed. What may sleep or fail (the new
//! handle's number, room and charges, and room for the events in transit) is taken
//! beforehand; if the CEP turns out to need more (it started listening, or has more events
//! queued), the call takes more and tries again, at most twice: the second time with room
//! for all the other file can queue.
//!
//! A move between two files of one account (one user, with the uids of its user namespaces)
//! holds both files' charges for a while, so the account's limits get a slack of one for it;
//! they hold again once the old handle goes. A listener does not move to another user's file
//! (`EPERM`): the listener table knows each listen's user, and the rules on overlapping
//! service IDs are per user. No CEP moves to a file of another network namespace (`EXDEV`).

use kernel::{
    prelude::*,
    sync::Arc, //
};

use super::{
    ring::Ring,
    CepmFile,
    Handle,
    IoctlArg,
    ReservedHandle, //
};
use crate::{
    cep::Cep,
    shim::{
        self,
        CepmFd, //
    },
    uapi,
    users::{
        Charge,
        Resource, //
    },
};

/// What a move takes before the CEP's lock, where it may sleep or fail. What the move leaves
/// unused is dropped after the lock: the room in transit may be vmalloc'ed.
struct Prepared {
    handle: Option<ReservedHandle>,
    /// The listen's charge here, if the CEP listens.
    listen: Option<Charge>,
    /// The port's charge here, if the CEP holds one.
    port: Option<Charge>,
    /// Room for the CEP's events on their way.
    transit: Ring<uapi::cepm_event>,
}

/// What the move under the CEP's lock came to.
enum Step {
    /// Moved, under `handle` here; `old` is the other file's handle, to drop after the locks.
    Moved {
        handle: u32,
        events_reported: u32,
        old: Option<Handle>,
    },
    /// The CEP needs more than was prepared: it listens or holds a port now, or has more
    /// events queued.
    Retry {
        listen: bool,
        bound: bool,
        events: usize,
    },
    /// Refused before anything changed.
    Refused(Error),
}

impl CepmFile {
    pub(super) fn migrate(self: &Arc<Self>, arg: IoctlArg) -> Result {
        let mut req: uapi::cepm_migrate = arg.read()?;
        if req.reserved != [0; 2] {
            return Err(EINVAL);
        }
        let source = CepmFd::get(req.fd)?;
        let from = source.cepm_file();
        if core::ptr::eq(&*from, &**self) {
            let inner = self.inner.lock();
            let handle = inner.handles.get(&req.handle).ok_or(EINVAL)?;
            req.new_handle = req.handle;
            req.events_reported = handle.events_reported;
            drop(inner);
            return arg.write(&req);
        }
        let cep = from.cep(req.handle)?;
        // A CEP stays in its network namespace, whose tables hold its port and listen.
        if cep.net != self.net().id() {
            return Err(EXDEV);
        }
        let same_account = self.opener.shares_limits_with(&from.opener);
        let mut listen = cep.is_listener();
        let mut bound = cep.bound_port((&from, req.handle))?.is_some();
        let mut events = from.queued_for(req.handle);
        let mut tries = 0;
        loop {
            if tries == 3 {
                return Err(EAGAIN);
            }
            tries += 1;
            let mut prepared = self.prepare_move(listen, bound, events, same_account)?;
            let step = cep.change_owner(&from, req.handle, |listening, holds_port| {
                self.move_locked(
                    &from,
                    req.handle,
                    &cep,
                    &mut prepared,
                    (listening, holds_port),
                )
            })?;
            drop(prepared);
            match step {
                Step::Moved {
                    handle,
                    events_reported,
                    old,
                } => {
                    drop(old);
                    req.new_handle = handle;
                    req.events_reported = events_reported;
                    break;
                }
                Step::Retry {
                    listen: now_listening,
                    bound: now_bound,
                    events: now_queued,
                } => {
                    listen = now_listening;
                    bound = now_bound;
                    // Events keep coming: room for all the other file can hold this time.
                    events = now_queued.max(from.inner.lock().events.capacity());
                }
                Step::Refused(e) => return Err(e),
            }
        }
        let written = arg.write(&req);
        // The caller cannot learn the new handle: as for CREATE, the CEP must not outlive the
        // call.
        if written.is_err() {
            self.forget(&cep, req.new_handle);
        }
        written
    }

    /// How many events wait for `handle`.
    fn queued_for(&self, handle: u32) -> usize {
        self.inner.lock().events.count(|ev| ev.handle == handle)
    }

    /// Takes what the move needs here: a handle, a listen's charge if the CEP listens, a
    /// port's if it is `bound`, and room for `events` in transit; for a move within one
    /// account, one over its limits. May sleep.
    fn prepare_move(
        &self,
        listen: bool,
        bound: bool,
        events: usize,
        same_account: bool,
    ) -> Result<Prepared> {
        let slack = u32::from(same_account);
        let handle = self.reserve_handle_over(0, slack)?;
        let listen = if listen {
            let params = shim::params();
            Some(Charge::take(
                &self.usage,
                &self.opener,
                Resource::Listens,
                params.max_listens_per_file,
                params.max_listens_per_user.saturating_add(slack),
            )?)
        } else {
            None
        };
        let port = if bound {
            Some(Charge::take(
                &self.usage,
                &self.opener,
                Resource::Ports,
                u32::MAX,
                shim::params().max_ports_per_user.saturating_add(slack),
            )?)
        } else {
            None
        };
        Ok(Prepared {
            handle: Some(handle),
            listen,
            port,
            transit: Ring::with_capacity(events)?,
        })
    }

    /// The move itself, under `cep`'s lock: `from`'s handle `old` becomes one of this file's,
    /// with its events. Returns the new owner for [`Cep::change_owner`], if it moved.
    fn move_locked(
        self: &Arc<Self>,
        from: &CepmFile,
        old: u32,
        cep: &Arc<Cep>,
        prepared: &mut Prepared,
        (listening, bound): (bool, bool),
    ) -> (Option<(Arc<CepmFile>, u32)>, Step) {
        // Under the CEP's lock nothing adds events for it: only fewer can be queued now.
        let queued = from.queued_for(old);
        if queued > prepared.transit.capacity()
            || (listening && prepared.listen.is_none())
            || (bound && prepared.port.is_none())
        {
            return (
                None,
                Step::Retry {
                    listen: listening,
                    bound,
                    events: queued,
                },
            );
        }
        // A listener's backlog stays charged to the account it came from: it moves only
        // between files of one user, counted against one account.
        if listening
            && (self.opener.uid != from.opener.uid || !self.opener.shares_limits_with(&from.opener))
        {
            return (None, Step::Refused(EPERM));
        }
        let Some(reserved) = prepared.handle.take() else {
            return (None, Step::Refused(EINVAL));
        };
        let id = reserved.id;
        // 1. The new handle.
        let listen = if listening {
            prepared.listen.take()
        } else {
            None
        };
        let port = if bound { prepared.port.take() } else { None };
        if let Err(e) = self
            .inner
            .lock()
            .add_handle(reserved, cep.clone(), (listen, port))
        {
            return (None, Step::Refused(e));
        }
        // 2. Out of the other file. Its handle is there: only destroy (which first takes the
        // owner away under the CEP's lock, so `change_owner` refuses) or its release (which
        // waits for the reference we hold) remove it.
        let (old_handle, events_reported) = {
            let mut inner = from.inner.lock();
            let old_handle = inner.handles.remove(&old);
            inner
                .events
                .move_out(|ev| ev.handle == old, &mut prepared.transit);
            let reported = old_handle.as_ref().map_or(0, |h| h.events_reported);
            (old_handle, reported)
        };
        // 3. Queued here, in order, as any event is (one that finds no room is lost, and the
        // next read says so).
        if let Some(handle) = self.inner.lock().handles.get_mut(&id) {
            handle.events_reported = events_reported;
        }
        while let Some(mut ev) = prepared.transit.pop() {
            ev.handle = id;
            self.push_event(ev);
        }
        (
            Some((self.clone(), id)),
            Step::Moved {
                handle: id,
                events_reported,
                old: old_handle,
            },
        )
    }
}
