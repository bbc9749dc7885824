// SPDX-License-Identifier: GPL-2.0

//! Listeners: listening on a service ID, the backlog of REQs and SIDR_REQs offered to it
//! (each a CEP spawned for the request), and the claim that gives one to the caller.

use kernel::{
    prelude::*,
    sync::Arc, //
};

use crate::{
    file::{
        ring::Ring,
        CepmFile, //
    },
    ports::PortKey,
    proto::listen_scope::ListenScope,
    proto::service_id::ServiceRange,
    proto::state::{
        Action,
        Event,
        State,
        UserEvent, //
    },
    shim,
    tables::ListenRoom,
    uapi,
    users::Opener, //
};

use super::{
    backlog, //
    kind::{
        Listener,
        Pending, //
    },
    Cep,
    CepInner,
    Kind,
    Owner,
};

impl Cep {
    /// Whether the CEP listens now.
    pub(crate) fn is_listener(&self) -> bool {
        self.inner.lock().kind.listener().is_some()
    }

    /// Starts listening on `range` for the requests `scope` takes, for `opener`'s user, if
    /// `file` names the CEP `handle` and it holds `bound` (`EINVAL` if it has moved or its
    /// port changed meanwhile); then `listening` runs under the CEP's lock, so that the
    /// listen is counted where the CEP is before it can move (`CEPM_IOC_MIGRATE`).
    pub(crate) fn listen(
        self: &Arc<Self>,
        (range, scope): (ServiceRange, ListenScope),
        opener: &Opener,
        (file, handle): (&CepmFile, u32),
        bound: Option<PortKey>,
        listening: impl FnOnce(),
    ) -> Result {
        // Allocated here, where sleeping is allowed: the tables take it under their locks.
        let room = if range.mask == u64::MAX {
            Some(ListenRoom::new()?)
        } else {
            None
        };
        let mut inner = self.inner.lock();
        inner.owner_named(file, handle).ok_or(EINVAL)?;
        // The port the caller settled for this listen, unlocked: another call on the CEP may
        // have given it back or taken one since.
        if inner.bound != bound {
            return Err(EINVAL);
        }
        let checked = inner.check(Event::Listen)?;
        self.cm
            .tables
            .add_listener((range, scope), opener, self.clone(), room)?;
        inner.service_id = range.id;
        inner.kind = Kind::Listener(Listener::new(range.mask, scope));
        self.commit(&mut inner, checked, None);
        listening();
        Ok(())
    }

    /// Hands a spawned CEP to this listener; it waits there until claimed. Fails if this CEP
    /// is no longer listening (`ENOTCONN`), or already has [`backlog`] REQs waiting, or its
    /// owner's user holds as many CEPs as it may (`EBUSY`), or the backlog's room could not be
    /// allocated (`ENOMEM`, atomically, under the listener's lock; debugfs's
    /// `fail_backlog_push_count` fails it for tests).
    pub(crate) fn offer(self: &Arc<Self>, child: Arc<Cep>, sidr: bool) -> Result {
        let mut inner = self.inner.lock();
        // The listener's rule for a REQ (SIDR_REQ): it spawns a CEP, or the listener takes
        // none (not listening any more).
        let (event, spawn, offered) = if sidr {
            (
                Event::RxSidrReq,
                Action::SpawnSidr,
                UserEvent::SidrReqReceived,
            )
        } else {
            (
                Event::RxReq,
                Action::SpawnConnection,
                UserEvent::ReqReceived,
            )
        };
        let checked = inner.check(event).map_err(|_| ENOTCONN)?;
        if !checked.asks_for(spawn) || inner.owner.is_none() {
            return Err(ENOTCONN);
        }
        let full = inner
            .kind
            .listener()
            .is_some_and(|l| l.pending.len() >= backlog());
        if full {
            return Err(EBUSY);
        }
        let counted = match &inner.owner {
            Some(owner) => owner.file.count_pending().map_err(|_| EBUSY)?,
            None => return Err(ENOTCONN),
        };
        let listener = inner.kind.listener_mut().ok_or(ENOTCONN)?;
        // The spawn itself: the new CEP joins the backlog, and the owner hears of it.
        let pending = Pending {
            cep: child,
            _counted: counted,
        };
        if crate::shim::fault_fail_backlog_push() {
            return Err(ENOMEM);
        }
        listener.pending.push(pending, GFP_ATOMIC)?;
        self.deliver(&mut inner, offered);
        self.commit(&mut inner, checked, None);
        Ok(())
    }

    /// Takes this listener out of the listener tables: REQs for its service IDs find it no
    /// more.
    pub(super) fn stop_listening(&self, inner: &CepInner) {
        let listener = inner.kind.listener();
        let range = ServiceRange {
            id: inner.service_id,
            mask: listener.map_or(u64::MAX, |l| l.mask),
        };
        let scope = listener.map_or(ListenScope::Unscoped, |l| l.scope);
        self.cm.tables.remove_listener(self, (range, scope));
    }

    /// Takes the oldest pending REQ off this listener.
    pub(crate) fn take_pending(&self, (file, handle): (&CepmFile, u32)) -> Result<Arc<Cep>> {
        let mut inner = self.inner.lock();
        // Only for the file that names it (it may have moved since the caller found it).
        inner.owner_named(file, handle).ok_or(EINVAL)?;
        if inner.sm.state != State::Listen {
            return Err(EINVAL);
        }
        let listener = inner.kind.listener_mut().ok_or(EINVAL)?;
        if listener.pending.is_empty() {
            return Err(EAGAIN);
        }
        // Its count goes with it: the claim has counted it anew.
        let child = listener.pending.remove(0).map_err(|_| EAGAIN)?.cep;
        let still_pending = listener.pending.len();
        // Under this lock, which `offer` holds while it adds a request and its event, so that
        // the backlog and the owner's queued REQ_RECEIVEDs are compared as one state.
        if let Some(owner) = &inner.owner {
            owner.file.purge_claimed_req(owner.handle, still_pending);
        }
        Ok(child)
    }

    /// Gives an unclaimed CEP to `owner`; returns the REQ it was born from, and for a
    /// connection the receive PSN chosen now. Events raised while it was parked are
    /// delivered now, in order.
    pub(crate) fn claim(self: &Arc<Self>, owner: Owner) -> Result<Claimed> {
        let mut inner = self.inner.lock();
        let checked = inner.check(Event::Claim)?;
        let info = inner.kind.request_info().ok_or(EINVAL)?;
        let req = *info;
        let path = inner
            .kind
            .connection()
            .map_or_else(Default::default, |c| c.req_path);
        // Spawned by the MAD layer's work, the CEP and its request were charged to no one:
        // the claimer pays for them from now on, as accept(2) pays for a socket born of a
        // SYN (docs/abi.md, "Privileges and limits").
        shim::charge_to_current(info);
        shim::charge_to_current(&**self);
        // Chosen here, so that the owner can take its QP to RTR before it prepares the REP,
        // as UCX's and SPDK's servers do before rdma_accept.
        let local_psn = inner.kind.negotiated_mut().map_or(0, |n| {
            n.choose_rq_psn(shim::random_u32());
            n.rq_psn.unwrap_or(0)
        });
        self.commit(&mut inner, checked, None);
        while let Some(mut ev) = inner.parked.events.pop() {
            ev.handle = owner.handle;
            ev.user_context = owner.context;
            owner.file.push_event(ev);
        }
        owner
            .file
            .note_lost(owner.handle, core::mem::take(&mut inner.parked.lost));
        // Owned, the CEP queues its events on its owner's file: the parked ring has done its
        // work. Freed once the lock is let go.
        let parked = core::mem::replace(&mut inner.parked.events, Ring::empty());
        inner.owner = Some(owner);
        drop(inner);
        drop(parked);
        Ok(Claimed {
            req,
            local_psn,
            path,
        })
    }
}

/// A request just claimed: what [`Cep::claim`] hands to `CEPM_IOC_GET_REQUEST`.
pub(crate) struct Claimed {
    /// The request, as the user sees it.
    pub(crate) req: uapi::cepm_req_info,
    /// The receive PSN chosen for a connection (RTR's, and the REP's); 0 for a SIDR_REQ.
    pub(crate) local_psn: u32,
    /// The REQ's primary path as this side sees it; zero for a SIDR_REQ.
    pub(crate) path: uapi::cepm_path_rec,
}
