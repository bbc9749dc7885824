// SPDX-License-Identifier: GPL-2.0

//! A CEP as the ABI shows it: its events (`struct cepm_event`, queued to the owner's file or
//! parked until the CEP is claimed), `CEPM_IOC_QUERY_CEP` and `CEPM_IOC_GET_PRIVATE_DATA`.

use crate::{
    proto::{
        state::{
            State,
            UserEvent, //
        }, //
    },
    uapi, //
};

use kernel::{
    prelude::*,
    sync::Arc, //
};

use super::{
    Cep, //
    CepInner,
    Kind,
    Owner,
};
use crate::file::CepmFile;

impl Cep {
    /// Queues `event` for the owner (or parks it until the CEP is claimed).
    pub(super) fn deliver(&self, inner: &mut CepInner, event: UserEvent) {
        let (kind, status) = match event {
            UserEvent::RejReceived => (
                uapi::CEPM_EVENT_REJ_RECEIVED,
                inner
                    .kind
                    .connection()
                    .map_or(0, |c| c.last_rej_reason.into()),
            ),
            UserEvent::RepReceived => (uapi::CEPM_EVENT_REP_RECEIVED, 0),
            UserEvent::RtuReceived | UserEvent::UserEstablished => {
                (uapi::CEPM_EVENT_ESTABLISHED, 0)
            }
            UserEvent::ReqError => (uapi::CEPM_EVENT_REQ_ERROR, inner.send_error),
            UserEvent::RepError => (uapi::CEPM_EVENT_REP_ERROR, inner.send_error),
            UserEvent::DreqReceived => (uapi::CEPM_EVENT_DREQ_RECEIVED, 0),
            UserEvent::DrepReceived => (uapi::CEPM_EVENT_DREP_RECEIVED, 0),
            UserEvent::DreqError => (uapi::CEPM_EVENT_DREQ_ERROR, inner.send_error),
            UserEvent::TimewaitExit => (uapi::CEPM_EVENT_TIMEWAIT_EXIT, 0),
            UserEvent::MraReceived => (
                uapi::CEPM_EVENT_MRA_RECEIVED,
                inner
                    .kind
                    .connection()
                    .map_or(0, |c| c.mra_service_timeout.into()),
            ),
            UserEvent::SidrRepReceived => (
                uapi::CEPM_EVENT_SIDR_REP_RECEIVED,
                inner.kind.sidr().map_or(0, |s| s.status.into()),
            ),
            UserEvent::SidrReqError => (uapi::CEPM_EVENT_SIDR_REQ_ERROR, inner.send_error),
            // On a listener, for the CEP it was offered (`offer`).
            UserEvent::ReqReceived => (uapi::CEPM_EVENT_REQ_RECEIVED, 0),
            UserEvent::SidrReqReceived => (uapi::CEPM_EVENT_SIDR_REQ_RECEIVED, 0),
        };
        inner.deliver_raw(
            self,
            uapi::cepm_event {
                event: kind,
                status,
                ..Default::default()
            },
        );
    }

    /// The ABI description of this CEP; `handle` is the caller's name for it.
    pub(crate) fn info(&self, handle: u32) -> uapi::cepm_cep_info {
        self.describe(&self.inner.lock(), handle)
    }

    /// The ABI description of this CEP as `file` sees it in a list: with its handle and
    /// `user_context` if `file` owns it, else with neither (a CEP's `user_context` is only ever
    /// its own file's to see). The owner is read under the CEP's lock, not looked for among
    /// the file's handles: a list is then linear in its length.
    pub(crate) fn info_for(&self, file: &CepmFile) -> uapi::cepm_cep_info {
        let inner = self.inner.lock();
        match inner
            .owner
            .as_ref()
            .filter(|o| core::ptr::eq(&*o.file, file))
        {
            Some(owner) => self.describe(&inner, owner.handle),
            None => uapi::cepm_cep_info {
                user_context: 0,
                ..self.describe(&inner, 0)
            },
        }
    }

    fn describe(&self, inner: &CepInner, handle: u32) -> uapi::cepm_cep_info {
        uapi::cepm_cep_info {
            handle,
            state: state_to_abi(inner.sm.state),
            user_context: inner.owner.as_ref().map_or(0, |o| o.context),
            service_id: inner.service_id,
            local_comm_id: self.local_id,
            remote_comm_id: inner.peer.as_ref().map_or(0, |p| p.comm_id),
            pending_requests: inner
                .kind
                .listener()
                .map_or(0, |l| u32::try_from(l.pending.len()).unwrap_or(u32::MAX)),
            reserved: 0,
            remote_qpn: match &inner.kind {
                Kind::Connection(c) => c.negotiated.as_ref().and_then(|n| n.remote_qpn),
                Kind::Sidr(s) => Some(s.qpn),
                Kind::Idle | Kind::Listener(_) => None,
            }
            .unwrap_or(0),
            remote_qkey: inner.kind.sidr().map_or(0, |s| s.qkey),
            sidr_status: inner.kind.sidr().map_or(0, |s| s.status.into()),
            reserved2: 0,
        }
    }

    /// The private data of the last message received, and the peer's ECE and connection
    /// parameters.
    pub(crate) fn private_data(&self, out: &mut uapi::cepm_private_data) {
        let inner = self.inner.lock();
        out.attr_id = inner.pdata.attr;
        out.len = inner.pdata.len;
        out.data = inner.pdata.data;
        if let Some(c) = inner.kind.connection() {
            out.ece_vendor_id = c.remote_ece.vendor_id;
            out.ece_attr_mod = c.remote_ece.attr_mod;
            out.peer = c.remote_params;
        }
    }
}

impl Cep {
    /// `CEPM_IOC_POST_EVENT`: queues an event made in userspace for the CEP's owner, which must
    /// be `file`'s `handle`, behind the CEP's own events (its lock orders them). Monitors get
    /// no copy: the module did not make it. `ENOSPC` if the owner's queue has no room for it.
    pub(crate) fn post_user_event(
        &self,
        file: &CepmFile,
        handle: u32,
        event: u32,
        status: u32,
    ) -> Result {
        let inner = self.inner.lock();
        let owner = inner.owner_named(file, handle).ok_or(EINVAL)?;
        owner.file.try_push_event(uapi::cepm_event {
            event,
            handle,
            user_context: owner.context,
            status,
            reserved: 0,
        })
    }

    /// Gives the CEP, which `from` names `handle`, a new owner, under its lock, so that it
    /// raises no event meanwhile (`CEPM_IOC_MIGRATE`). `mv`, told whether the CEP listens and
    /// whether it holds a port, moves
    /// what the files hold and names the new owner's file and handle, or leaves the CEP where
    /// it is (`None`); its result comes back either way. The context stays. `EINVAL` if `from`
    /// does not own the CEP by that handle (it was destroyed, or has moved).
    pub(crate) fn change_owner<T>(
        &self,
        from: &CepmFile,
        handle: u32,
        mv: impl FnOnce(bool, bool) -> (Option<(Arc<CepmFile>, u32)>, T),
    ) -> Result<T> {
        let mut inner = self.inner.lock();
        let listening = inner.kind.listener().is_some();
        let bound = inner.bound.is_some();
        let owner = inner
            .owner
            .as_mut()
            .filter(|o| o.is(from, handle))
            .ok_or(EINVAL)?;
        let (to, result) = mv(listening, bound);
        let old_file = to.map(|(file, handle)| {
            owner.handle = handle;
            core::mem::replace(&mut owner.file, file)
        });
        drop(inner);
        // Not the last reference (the caller holds the file open), but no file goes under a
        // CEP's lock.
        drop(old_file);
        Ok(result)
    }
}

impl Owner {
    /// Whether this is `file`'s `handle`.
    pub(super) fn is(&self, file: &CepmFile, handle: u32) -> bool {
        core::ptr::eq(&*self.file, file) && self.handle == handle
    }
}

impl CepInner {
    /// The owner, if it is `file`'s `handle` (not once the CEP is destroyed or has moved).
    pub(super) fn owner_named(&self, file: &CepmFile, handle: u32) -> Option<&Owner> {
        self.owner.as_ref().filter(|o| o.is(file, handle))
    }

    /// Delivers `ev` of `cep` (whose inner state this is) to its owner, or parks it until the
    /// CEP is claimed, with a copy to the monitors.
    pub(super) fn deliver_raw(&mut self, cep: &Cep, mut ev: uapi::cepm_event) {
        let owner = self.owner.as_ref().map(|o| o.file.uid());
        cep.cm
            .monitors
            .publish((cep.net, owner), || uapi::cepm_trace {
                service_id: self.service_id,
                local_comm_id: cep.local_id,
                remote_comm_id: self.peer.as_ref().map_or(0, |p| p.comm_id),
                event: ev.event,
                status: ev.status,
                state: state_to_abi(self.sm.state),
                ..Default::default()
            });
        match &self.owner {
            Some(owner) => {
                ev.handle = owner.handle;
                ev.user_context = owner.context;
                owner.file.push_event(ev);
            }
            None => {
                // Kept for whoever claims the CEP.
                if self.parked.events.push(ev).is_err() {
                    self.parked.lost = self.parked.lost.saturating_add(1);
                }
            }
        }
    }
}

/// The ABI's number for a state.
pub(super) fn state_to_abi(s: State) -> u32 {
    match s {
        State::Idle => uapi::CEPM_STATE_IDLE,
        State::Listen => uapi::CEPM_STATE_LISTEN,
        State::ReqSent => uapi::CEPM_STATE_REQ_SENT,
        State::ReqRcvd => uapi::CEPM_STATE_REQ_RCVD,
        State::MraReqSent => uapi::CEPM_STATE_MRA_REQ_SENT,
        State::MraReqRcvd => uapi::CEPM_STATE_MRA_REQ_RCVD,
        State::RepSent => uapi::CEPM_STATE_REP_SENT,
        State::RepRcvd => uapi::CEPM_STATE_REP_RCVD,
        State::MraRepSent => uapi::CEPM_STATE_MRA_REP_SENT,
        State::MraRepRcvd => uapi::CEPM_STATE_MRA_REP_RCVD,
        State::Established => uapi::CEPM_STATE_ESTABLISHED,
        State::DreqSent => uapi::CEPM_STATE_DREQ_SENT,
        State::DreqRcvd => uapi::CEPM_STATE_DREQ_RCVD,
        State::Timewait => uapi::CEPM_STATE_TIMEWAIT,
        State::SidrReqSent => uapi::CEPM_STATE_SIDR_REQ_SENT,
        State::SidrReqRcvd => uapi::CEPM_STATE_SIDR_REQ_RCVD,
        State::RepPrepared => uapi::CEPM_STATE_REP_PREPARED,
        State::RepPreparedMraSent => uapi::CEPM_STATE_REP_PREPARED_MRA_SENT,
        State::Destroyed => uapi::CEPM_STATE_DESTROYED,
    }
}
