// SPDX-License-Identifier: GPL-2.0

//! A connection endpoint (CEP): one side of one connection, or a listener.
//!
//! The protocol core decides every state change ([`state::transition`]); this file keeps what
//! the decision needs (peer, private data, owner) under the CEP's own spinlock and carries
//! out the resulting actions. Sends happen under that lock, as Linux's `cm_send_rej_locked`
//! does, so a send and the state it belongs to cannot be reordered.
//!
//! This file holds the CEP, its state under the lock, and what every kind of CEP shares:
//! applying a transition, carrying out its actions, sends, timewait and destroy. Its children
//! add the rest: [`kind`] (the kinds of CEP, each with its own fields: idle, listener,
//! connection, SIDR), then the calls of each kind, [`listen`] (listeners and their backlog),
//! [`connection`] (both sides of a connection), [`sidr`] (service ID resolution) and
//! [`request`] (what REQ and SIDR_REQ share), and [`abi`] (events, queries and private data as
//! userspace sees them).
//!
//! # Lock order
//!
//! The module's spinlocks nest in this order: a lock is taken only while holding none but
//! those above it. docs/design.md ("Locking") says what each one protects.
//!
//! 1. `Cep::inner`, a CEP's own lock. Never two at once. A lookup clones the CEP's `Arc` and
//!    lets go of the table before locking it; device removal takes the port's CEPs out under
//!    the port's lock, lets go of it, then locks each one.
//! 2. `Tables::masked_listeners`: listens, and REQs only while a masked listener exists.
//! 3. A shard of `Tables::local`, `peer` or `listeners`. Never two at once.
//! 4. `Monitors::files`, only while a file monitors.
//! 5. `CepmFile::inner`: the owner's file, or a monitoring one. Never two at once:
//!    `CEPM_IOC_MIGRATE` takes its two files' locks one after the other.
//! 6. `CmPort::agents`: every send, and the port's set of CEPs.
//! 7. `CmPort::sidr_answers`.
//!
//! Outside the order: the two mutexes, taken with no spinlock held: `Devices::list` (a port's
//! `device_name` lock nests under it, for a rename) and `Ports::inner` (nothing nests under
//! it; a CEP's destroy releases its port after its own lock); the shards of `Users::by_uid`, taken as a
//! file opens and as it goes; and the C shim's agent contexts. Nothing is taken under the last
//! two.

mod abi;
mod connection;
mod kind;
mod listen;
mod request;
mod sidr;

use kind::{
    Connection,
    Kind, //
};

use kernel::{
    alloc::Flags,
    impl_has_delayed_work,
    new_delayed_work,
    new_spinlock,
    prelude::*,
    rbtree::RBTreeNodeReservation,
    sync::{
        Arc,
        SpinLock, //
    },
    task::Kuid,
    time::msecs_to_jiffies,
    workqueue::{
        DelayedWork,
        WorkItem, //
    }, //
};

use crate::{
    context::Cm,
    file::{
        ring::Ring,
        CepmFile, //
    },
    port::CmPort,
    ports::PortKey,
    proto::{
        cm_mad::{
            CmMad,
            CmMsg, //
        },
        mad::{
            AttrId,
            MAD_SIZE, //
        },
        msg_code::MessageCode,
        rej::REJ_PRIVATE_DATA_SIZE,
        state::{
            self,
            Action,
            Event,
            Outgoing,
            State, //
        },
        timing::{
            self,
            RetryTimer, //
        }, //
    },
    shim::{
        AhInfo,
        NetId,
        OutstandingSend,
        SendOwner, //
    },
    tables::{
        PeerId,
        PeerTable, //
    },
    uapi,
    users::Charge, //
};

/// Who a CEP's events go to.
pub(crate) struct Owner {
    pub(crate) file: Arc<CepmFile>,
    pub(crate) handle: u32,
    pub(crate) context: u64,
}

/// The other side of a connection.
struct Peer {
    comm_id: u32,
    port: Arc<CmPort>,
    /// Where our MADs to the peer go (from the REQ's work completion for a passive CEP):
    /// each send makes an AH from it that lives as long as the send, so an idle CEP holds
    /// none. QP attributes read it too.
    ah_info: AhInfo,
}

/// What became of a request (REQ or SIDR_REQ) a listener spawns a CEP for.
pub(crate) enum Spawned {
    /// A new, unclaimed CEP for it.
    New(Arc<Cep>),
    /// It duplicates a request that already has a CEP: that one.
    Duplicate(Arc<Cep>),
    /// (REQ) Its QP is already connected (to `old`): a stale connection. The REQ gets REJ 10
    /// and `old` is disconnected.
    Stale(Arc<Cep>),
}

/// A CEP a listener spawns for a request, before it exists: everything but its comm ID.
struct Spawn<'a> {
    port: &'a Arc<CmPort>,
    /// The network namespace of the GID the request arrived on.
    net: NetId,
    /// Where answers to the request go, read from its work completion.
    ah_info: AhInfo,
    sm: state::Cep,
    kind: Kind,
    /// The requester's key in `table` ([`PeerTable::CommId`] or [`PeerTable::SidrId`]); it
    /// also names the peer.
    table: PeerTable,
    key: PeerId,
    /// A REQ's (QPN, CA GUID): a connection that holds it already is stale.
    qpn_key: Option<PeerId>,
    service_id: u64,
    tid: u64,
}

/// What names a new CEP: its comm ID, and its network namespace.
struct CepId {
    local_id: u32,
    net: NetId,
}

/// What the user put in a REJ.
pub(crate) struct RejectArgs<'a> {
    pub(crate) reason: u16,
    pub(crate) ari: &'a [u8],
    pub(crate) pdata: &'a [u8],
}

/// The private data of the last message received (kept until the next one replaces it).
struct ReceivedPdata {
    attr: u16,
    len: u8,
    data: [u8; uapi::CEPM_PDATA_MAX as usize],
}

/// Most events a CEP keeps while unclaimed. One born from a listen raises at most two
/// before its claim (a REJ from the peer, then the device's removal), so this never fills;
/// if it did, the claimer would hear of the loss.
const PARKED_MAX: usize = 4;

/// Events raised while the CEP is unclaimed (born from a listen), kept for whoever claims it,
/// in room allocated with the CEP: parking never allocates, and a loss is counted, then
/// reported to the claimer's file (`EOVERFLOW`), never silent.
struct Parked {
    events: Ring<uapi::cepm_event>,
    lost: u32,
}

/// The fields of [`Cep`] protected by its lock: what every kind of CEP has, then its kind.
struct CepInner {
    sm: state::Cep,
    /// `None` while unclaimed (born from a listen) and after destroy.
    owner: Option<Owner>,
    service_id: u64,
    /// The key this CEP holds in the remote-ID table, or (SIDR) in the SIDR table, while its
    /// connection or request lives.
    remote_key: Option<(PeerTable, PeerId)>,
    peer: Option<Peer>,
    pdata: ReceivedPdata,
    /// Events raised while unclaimed, delivered when claimed.
    parked: Parked,
    /// The retried MAD in flight, if any, and how it is retried.
    msg: Option<OutstandingSend>,
    /// Why the last retried MAD failed (a positive errno): ETIMEDOUT when its retries ran
    /// out, EIO when the device could not send it. The *_ERROR events carry it.
    send_error: u32,
    send_seq: u64,
    retry: RetryTimer,
    /// The TID answers carry: that of the last request this CEP sent or took (Linux's
    /// `cm_id_priv->tid`); see [`AttrId::is_request`].
    tid: u64,
    /// What the CEP is for, with that kind's own fields.
    kind: Kind,
    /// The port it holds (`CEPM_IOC_BIND`), released by its destroy.
    bound: Option<PortKey>,
}

/// A connection endpoint.
#[pin_data]
pub(crate) struct Cep {
    /// The CM whose tables hold this CEP.
    cm: Arc<Cm>,
    /// Our comm ID on the wire; also the key of the local-ID table.
    pub(crate) local_id: u32,
    /// The network namespace it belongs to: its creator's file's, or for one a request
    /// spawned, that of the GID the request arrived on, which is its listener's.
    pub(crate) net: NetId,
    #[pin]
    inner: SpinLock<CepInner>,
    /// Fires at the end of timewait.
    #[pin]
    timewait: DelayedWork<Cep>,
}

impl_has_delayed_work! {
    impl HasDelayedWork<Self> for Cep { self.timewait }
}

/// Most REQs (and SIDR_REQs) a listener keeps waiting for `GET_REQUEST`, the `listen_backlog`
/// module parameter (at least 1); beyond it, new ones are dropped and the peers retry them, so
/// a flood of REQs cannot pin unbounded memory and AHs.
pub(crate) fn backlog() -> usize {
    crate::shim::params().listen_backlog.max(1) as usize
}

/// Longest timewait: the protocol's value comes from the peer's ACK timeout (up to
/// 4.096 µs · 2^31, about 2.4 hours); an owner should hear TIMEWAIT_EXIT within a bound.
const TIMEWAIT_MAX_MS: u32 = 30_000;

/// Timewait's end, on the CM's own workqueue. Destroy cancels a pending one and waits for a
/// running one ([`Cep::cancel_timewait`]), so no timewait work outlives its CEP's destroy;
/// the CM drains the queue as it goes at unload, which comes after every CEP's destroy.
impl WorkItem for Cep {
    type Pointer = Arc<Cep>;

    fn run(this: Arc<Cep>) {
        this.timewait_expired();
    }
}

/// Cuts every CEP off `port`, whose device is being removed: their peers go now and their
/// owners get `DEVICE_REMOVAL`. The agents are already unregistered, which completed every
/// send and destroyed its AH. The port knows every CEP whose peer it reaches (each was
/// recorded when its peer was attached), and none can be attached there from now on.
pub(crate) fn release_port(port: &CmPort) {
    let Some(users) = port.release_users() else {
        return;
    };
    for (_, cep) in users.iter() {
        cep.device_removed(port);
    }
}

impl Cep {
    /// A new CEP with a fresh local comm ID, findable by it. A user's CEP is charged, its
    /// node in the local table too, to the user's memory cgroup. One a peer's REQ spawns is
    /// allocated by the MAD layer's work, where `__GFP_ACCOUNT` charges no cgroup: it is
    /// charged to no one until claimed ([`Cep::claim`] charges it to the claimer), though
    /// counted against its listener's limits meanwhile (`kind::Pending`; a listener holds at
    /// most backlog() of them).
    fn insert_new(
        cm: &Arc<Cm>,
        net: NetId,
        sm: state::Cep,
        kind: Kind,
        owner: Option<Owner>,
    ) -> Result<Arc<Self>> {
        let gfp = GFP_KERNEL_ACCOUNT;
        cm.tables.insert_new_local(gfp, |local_id| {
            let id = CepId { local_id, net };
            Self::new(cm.clone(), id, sm, kind, owner, gfp)
        })
    }

    /// The CEP [`Cep::insert_new`] makes, allocated with `gfp`.
    fn new(
        cm: Arc<Cm>,
        CepId { local_id, net }: CepId,
        sm: state::Cep,
        kind: Kind,
        owner: Option<Owner>,
        gfp: Flags,
    ) -> Result<Arc<Self>> {
        // Only a CEP without an owner (born from a listen) parks events.
        let parked = Parked {
            events: match owner {
                Some(_) => Ring::empty(),
                None => Ring::with_capacity(PARKED_MAX)?,
            },
            lost: 0,
        };
        Arc::pin_init(
            pin_init!(Self {
                cm,
                local_id,
                net,
                timewait <- new_delayed_work!("Cep::timewait"),
                inner <- new_spinlock!(CepInner {
                    sm,
                    owner,
                    service_id: 0,
                    remote_key: None,
                    peer: None,
                    pdata: ReceivedPdata { attr: 0, len: 0, data: [0; uapi::CEPM_PDATA_MAX as usize] },
                    parked,
                    msg: None,
                    kind,
                    send_error: ETIMEDOUT.to_errno().unsigned_abs(),
                    send_seq: 0,
                    retry: RetryTimer { timeout_ms: 0, retries: 0 },
                    tid: 0,
                    bound: None,
                }, "Cep::inner"),
            }),
            gfp,
        )
    }

    /// The user of the file that owns this CEP (`None`: nobody owns it yet, or any more).
    pub(crate) fn owner_uid(&self) -> Option<Kuid> {
        self.inner.lock().owner.as_ref().map(|o| o.file.uid())
    }

    /// A new idle CEP of `cm`, owned by `owner`, in its file's network namespace.
    pub(crate) fn create(cm: &Arc<Cm>, owner: Owner) -> Result<Arc<Self>> {
        let net = owner.file.net().id();
        Self::insert_new(cm, net, state::Cep::new(), Kind::Idle, Some(owner))
    }

    /// Applies `event`; on success runs the actions and returns the new state.
    fn apply(
        self: &Arc<Self>,
        inner: &mut CepInner,
        event: Event,
        rej: Option<&RejectArgs<'_>>,
    ) -> Result<State> {
        let checked = inner.check(event)?;
        Ok(self.commit(inner, checked, rej))
    }

    /// Carries out a transition [`CepInner::check`] allowed, under the same lock guard: the
    /// new state, then each action in order; a return to IDLE forgets the peer's keys.
    /// Returns the new state. The one place a CEP's state changes.
    fn commit(
        self: &Arc<Self>,
        inner: &mut CepInner,
        checked: Checked,
        rej: Option<&RejectArgs<'_>>,
    ) -> State {
        let Checked(t) = checked;
        let before = inner.sm.state;
        inner.sm = t.next;
        for action in t.actions.as_slice() {
            self.run(inner, *action, rej);
        }
        if inner.sm.state == State::Idle && before != State::Idle {
            // Back to idle (a REJ, a send that ran out of retries, the end of timewait): the
            // connection is over, and its peer's IDs and QP may be used by a new one
            // (`cm_reset_to_idle`; the QPN went already if it passed through timewait).
            self.forget_peer_keys(inner);
        }
        inner.sm.state
    }

    /// Takes this CEP out of the tables keyed by its peer.
    fn forget_peer_keys(&self, inner: &mut CepInner) {
        if let Some((table, key)) = inner.remote_key.take() {
            self.cm.tables.remove_peer(table, key, self);
        }
        self.forget_peer_qpn(inner);
    }

    /// Takes this connection out of the remote-QPN table: the peer's QP may be used by
    /// another connection from now on.
    fn forget_peer_qpn(&self, inner: &mut CepInner) {
        if let Some(key) = inner
            .kind
            .connection_mut()
            .and_then(|c| c.remote_qpn_key.take())
        {
            self.cm.tables.remove_peer(PeerTable::Qpn, key, self);
        }
    }

    /// Carries out one action of a transition.
    fn run(self: &Arc<Self>, inner: &mut CepInner, action: Action, rej: Option<&RejectArgs<'_>>) {
        match action {
            Action::Send(out) => self.send_once_as_asked(inner, out, rej),
            Action::SendRetried(out) => self.send_retried_as_asked(inner, out),
            Action::Deliver(event) => self.deliver(inner, event),
            Action::ArmTimewait => self.enter_timewait(inner),
            Action::ExtendSend => inner.extend_send_after_mra(),
            // Lazy: the queued work finds the CEP out of timewait and does nothing.
            Action::CancelTimewait => {}
            Action::CancelSend => inner.cancel_send(),
            Action::StopListening => self.stop_listening(inner),
            Action::CountDuplicate => inner.count_duplicate(),
            // A listener's spawns: `recv::req_received` makes the new CEP (it needs the MAD),
            // and `offer`, which the rule allowed, has put it in the backlog before it
            // commits.
            Action::SpawnConnection | Action::SpawnSidr => {}
        }
    }

    /// Builds the message `out` that an [`Action::Send`] asks for and sends it once; `rej` is
    /// what the user put in a REJ, if the user asked for it.
    fn send_once_as_asked(
        &self,
        inner: &mut CepInner,
        out: Outgoing,
        rej: Option<&RejectArgs<'_>>,
    ) {
        let msg = match out {
            Outgoing::Rej {
                reason,
                rejected,
                zero_local_id,
                ari_ca_guid,
            } => self.rej_msg(inner, reason, rejected, zero_local_id, ari_ca_guid, rej),
            Outgoing::Rtu => self.rtu_msg(inner),
            Outgoing::Dreq => self.dreq_msg(inner),
            Outgoing::Drep => self.drep_msg(inner),
            Outgoing::MraReq => self.mra_msg(inner, MessageCode::Req),
            Outgoing::MraRep => self.mra_msg(inner, MessageCode::Rep),
            Outgoing::SidrRep { status } => inner.remembered_sidr_rep(status),
            Outgoing::Req | Outgoing::Rep | Outgoing::SidrReq => {
                return self.unpaired(Action::Send(out));
            }
        };
        self.send_once(inner, msg);
    }

    /// Builds the message `out` that an [`Action::SendRetried`] asks for and sends it, retried
    /// until answered.
    fn send_retried_as_asked(self: &Arc<Self>, inner: &mut CepInner, out: Outgoing) {
        let msg = match out {
            Outgoing::Req => inner.take_prepared_req(),
            Outgoing::Rep => inner.prepared_rep(),
            Outgoing::Dreq => self.dreq_msg(inner),
            Outgoing::SidrReq => inner.take_prepared_sidr_req(),
            Outgoing::Rtu
            | Outgoing::Drep
            | Outgoing::MraReq
            | Outgoing::MraRep
            | Outgoing::SidrRep { .. }
            | Outgoing::Rej { .. } => return self.unpaired(Action::SendRetried(out)),
        };
        self.send_retried(inner, msg);
    }

    /// A pairing of send and message that no transition asks for (proto's state_table test
    /// `sends_pair_messages_as_the_module_expects`): nothing to carry out.
    fn unpaired(&self, action: Action) {
        pr_err!(
            "cep {:#x}: the protocol core asked for {:?}\n",
            self.local_id,
            action
        );
    }

    /// Whether `msg`, which a local call is about to prepare, can be encoded: `EINVAL` if a
    /// field is out of range (a QPN of 0 or over 24 bits, ...), checked before any state
    /// changes.
    fn check_encodable(msg: CmMsg) -> Result {
        msg.encode(&mut [0u8; MAD_SIZE]).map_err(|_| EINVAL)
    }

    /// The MAD carrying `msg` to the peer; `None` (counted as a send error) if a field is out
    /// of range. A request gets a TID of this CEP's own and makes it the exchange's; an
    /// answer gets the exchange's.
    fn encode_for(&self, inner: &mut CepInner, msg: CmMsg) -> Option<[u8; MAD_SIZE]> {
        let peer = inner.peer.as_ref()?;
        if msg.attr().is_request() {
            inner.tid = peer.port.tid(self.local_id);
        }
        // A REQ or REP carries its ECE options in the attribute modifier (Linux's
        // `cm_format_mad_ece_hdr`); every other message has 0 there.
        let attr_mod = match msg {
            CmMsg::Req(_) | CmMsg::Rep(_) => inner.kind.connection().map_or(0, |c| c.ece_attr_mod),
            _ => 0,
        };
        let mut mad = [0u8; MAD_SIZE];
        if CmMad::new(inner.tid, attr_mod, msg)
            .encode(&mut mad)
            .is_err()
        {
            peer.port.count_tx_error();
            return None;
        }
        Some(mad)
    }

    /// Sends `msg` to the peer once.
    fn send_once(&self, inner: &mut CepInner, msg: Option<CmMsg>) {
        let Some(msg) = msg else {
            return;
        };
        let Some(mad) = self.encode_for(inner, msg) else {
            return;
        };
        if let Some(peer) = &inner.peer {
            peer.port.send_once(&peer.ah_info, &mad, msg.attr());
        }
    }

    /// Enters timewait: the peer's QP may be reused from now on (Linux's `cm_enter_timewait`
    /// calls `cm_cleanup_timewait`), and the timer starts.
    fn enter_timewait(self: &Arc<Self>, inner: &mut CepInner) {
        self.forget_peer_qpn(inner);
        self.arm_timewait(inner);
    }

    /// Starts timewait: the module parameter's length, or the protocol's (the QP's local ACK
    /// timeout, `cm_enter_timewait` in drivers/infiniband/core/cm.c).
    fn arm_timewait(self: &Arc<Self>, inner: &CepInner) {
        let ms = match crate::shim::params().timewait_ms {
            0 => timing::timewait_ms(inner.kind.negotiated().map_or(14, |n| n.ack_timeout)),
            ms => ms,
        }
        .min(TIMEWAIT_MAX_MS);
        // Already queued (timewait re-entered before the last one fired): that work ends it,
        // and the clone comes back to be dropped.
        let _ = self
            .cm
            .workqueue
            .enqueue_delayed(self.clone(), msecs_to_jiffies(ms));
    }

    /// Stops this CEP's timewait work (destroy): a pending one is cancelled, a running one
    /// waited for. Sleeps; no lock may be held.
    fn cancel_timewait(self: &Arc<Self>) {
        // SAFETY: `self.timewait` is initialised and lives as long as this `Arc`'s allocation.
        let work = unsafe { DelayedWork::raw_as_work(&self.timewait) };
        // SAFETY: `work` is the `work_struct` of `self.timewait`'s `delayed_work`; we are in
        // process context (destroy) and hold no lock.
        if unsafe { crate::shim::cancel_delayed_work_sync(work.cast()) } {
            // SAFETY: The work was pending: `arm_timewait` queued it with a clone of this
            // `Arc`, leaked with `Arc::into_raw`; cancelling it gave that reference back.
            drop(unsafe { Arc::from_raw(Arc::as_ptr(self)) });
        }
    }

    /// Timewait is over.
    fn timewait_expired(self: &Arc<Self>) {
        let mut inner = self.inner.lock();
        let _ = self.apply(&mut inner, Event::TimewaitExpired, None);
    }

    /// Sends `msg` to the peer, retried with the CEP's retry timer until answered.
    fn send_retried(self: &Arc<Self>, inner: &mut CepInner, msg: Option<CmMsg>) {
        let Some(msg) = msg else {
            return;
        };
        if inner.peer.is_none() {
            // Its device is gone: nothing can answer, so fail as a send that could not be
            // made (a DREQ goes to timewait) rather than wait for nothing.
            inner.send_error = EIO.to_errno().unsigned_abs();
            let _ = self.apply(inner, Event::SendTimeout, None);
            return;
        }
        let Some(mad) = self.encode_for(inner, msg) else {
            return;
        };
        let Some(peer) = &inner.peer else {
            return;
        };
        let attr = msg.attr();
        inner.send_seq = inner.send_seq.wrapping_add(1);
        let owner = SendOwner {
            cep: self.clone(),
            seq: inner.send_seq,
        };
        match peer
            .port
            .send_retried(&peer.ah_info, &mad, attr, inner.retry, owner)
        {
            Ok(sent) => inner.msg = Some(sent),
            // Nothing will ever answer: fail now as if every retry had run out, so the owner
            // gets its *_ERROR event instead of waiting forever.
            Err(_) => {
                inner.send_error = ETIMEDOUT.to_errno().unsigned_abs();
                let _ = self.apply(inner, Event::SendTimeout, None);
            }
        }
    }

    /// The MAD layer is done with send `seq` of this CEP: answered (cancelled), sent, out of
    /// retries, or failed. Any failure ends the exchange, as in Linux (`cm_process_send_error`
    /// in drivers/infiniband/core/cm.c). The in-tree MAD layer retries a failed
    /// transmit of a retried MAD and reports ETIMEDOUT when its retries run out; any other
    /// error (EIO to the owner) is a fallback, so that the CEP never waits for a send nobody
    /// retries. A flush is a cancel (ours, or the agent going away with the device).
    pub(crate) fn send_done(self: &Arc<Self>, seq: u64, status: i32) {
        let mut inner = self.inner.lock();
        if inner.msg.as_ref().is_none_or(|m| m.seq() != seq) {
            return;
        }
        inner.msg = None;
        if status != 0 && status != ECANCELED.to_errno() {
            let why = if status == ETIMEDOUT.to_errno() {
                ETIMEDOUT
            } else {
                EIO
            };
            inner.send_error = why.to_errno().unsigned_abs();
            let _ = self.apply(&mut inner, Event::SendTimeout, None);
        }
    }

    /// The device of `port` is going away: forget the peer if it is reached through it, and
    /// the keys that named it (the peer's comm ID, QPN or SIDR request): a request from the
    /// same peer once the device is back is a new one, not a duplicate or a stale connection
    /// of this CEP, which could only be destroyed.
    fn device_removed(&self, port: &CmPort) {
        let mut inner = self.inner.lock();
        if !inner
            .peer
            .as_ref()
            .is_some_and(|p| core::ptr::eq(&*p.port, port))
        {
            return;
        }
        // The agent's unregistration flushed our send, and its AH, already.
        inner.msg = None;
        inner.peer = None;
        self.forget_peer_keys(&mut inner);
        let ev = uapi::cepm_event {
            event: uapi::CEPM_EVENT_DEVICE_REMOVAL,
            ..Default::default()
        };
        inner.deliver_raw(self, ev);
    }

    /// Ends the CEP as its state requires; afterwards no event for it is queued anywhere and
    /// none can arrive. Pending REQs of a listener are rejected.
    pub(crate) fn destroy(self: &Arc<Self>) {
        // Without an owner to check, it cannot fail.
        let _ = self.destroy_with(false, None);
    }

    /// [`Cep::destroy`] for `file`, which names it `handle`: `EINVAL`, and the CEP stays, if it
    /// has moved to another owner meanwhile (`CEPM_IOC_MIGRATE`). Destroying it again is not
    /// an error.
    pub(crate) fn destroy_by(self: &Arc<Self>, file: &CepmFile, handle: u32) -> Result {
        self.destroy_with(false, Some((file, handle)))
    }

    /// Destroys a CEP spawned for a REQ that cannot be taken now, without answering: the
    /// peer retries the REQ.
    pub(crate) fn destroy_silently(self: &Arc<Self>) {
        let _ = self.destroy_with(true, None);
    }

    /// Destroy; `retry_later` drops a pending REQ silently so that the peer retries it (Linux's
    /// `-ENOMEM` semantics in `cm_destroy_id`, drivers/infiniband/core/cm.c). With `owned_by`,
    /// only if that file's handle still names the CEP (or nothing does: destroyed already).
    fn destroy_with(
        self: &Arc<Self>,
        retry_later: bool,
        owned_by: Option<(&CepmFile, u32)>,
    ) -> Result {
        let (remote_key, kind, bound) = {
            let mut inner = self.inner.lock();
            if let (Some((file, handle)), Some(owner)) = (owned_by, &inner.owner) {
                if !owner.is(file, handle) {
                    return Err(EINVAL);
                }
            }
            let _ = self.apply(&mut inner, Event::Destroy { retry_later }, None);
            inner.owner = None;
            inner.parked.events.clear();
            // The peer goes now, under the lock, not with the last reference (a queued
            // timewait work may hold that past the device's removal) nor after the unlock
            // (device removal would not wait for it): removal either took this CEP from the
            // port's users and waits for this lock, or finds it gone.
            if let Some(peer) = inner.peer.take() {
                peer.port.forget_user(self);
                drop(peer);
            }
            // What the kind holds (a listener's backlog, a connection's QPN key and
            // messages) is dealt with below, outside the lock.
            (
                inner.remote_key.take(),
                core::mem::replace(&mut inner.kind, Kind::Idle),
                inner.bound.take(),
            )
        };
        // The port is free once this CEP is out of the listener table (above, by the destroy
        // event): after the CEP's lock, since the table's mutex is never taken under it.
        if let Some(key) = bound {
            self.cm.ports.release(&key, self.local_id);
        }
        crate::shim::fault_destroy_delay();
        self.cancel_timewait();
        self.cm.tables.remove_local(self.local_id);
        if let Some((table, key)) = remote_key {
            self.cm.tables.remove_peer(table, key, self);
        }
        match kind {
            Kind::Connection(Connection {
                remote_qpn_key: Some(key),
                ..
            }) => self.cm.tables.remove_peer(PeerTable::Qpn, key, self),
            Kind::Listener(listener) => {
                for child in listener.pending {
                    child.cep.destroy();
                }
            }
            Kind::Idle | Kind::Connection(_) | Kind::Sidr(_) => {}
        }
        Ok(())
    }
}

impl Cep {
    /// The port the CEP holds, if `file` names it `handle` (`EINVAL` if not).
    pub(crate) fn bound_port(&self, (file, handle): (&CepmFile, u32)) -> Result<Option<PortKey>> {
        let inner = self.inner.lock();
        inner.owner_named(file, handle).ok_or(EINVAL)?;
        Ok(inner.bound)
    }

    /// Records that the CEP holds `key`, if `file` names it `handle` and it is idle and holds
    /// no port yet (`EINVAL` if not); then `bound` runs under the CEP's lock, so that the port
    /// is counted where the CEP is before it can move (`CEPM_IOC_MIGRATE`).
    pub(crate) fn set_bound(
        &self,
        key: PortKey,
        (file, handle): (&CepmFile, u32),
        bound: impl FnOnce(),
    ) -> Result {
        let mut inner = self.inner.lock();
        inner.owner_named(file, handle).ok_or(EINVAL)?;
        if inner.bound.is_some()
            || inner.sm.state != State::Idle
            || !matches!(inner.kind, Kind::Idle)
        {
            return Err(EINVAL);
        }
        inner.bound = Some(key);
        bound();
        Ok(())
    }

    /// Forgets that the CEP holds `key`, if it still does and is idle (`EINVAL` if not), in
    /// whichever file owns it now (a MIGRATE may have moved it): returns the port's count,
    /// taken from its owner's handle under the CEP's lock, for the caller to drop.
    pub(crate) fn clear_bound(&self, key: PortKey) -> Result<Option<Charge>> {
        let mut inner = self.inner.lock();
        if inner.bound != Some(key)
            || inner.sm.state != State::Idle
            || !matches!(inner.kind, Kind::Idle)
        {
            return Err(EINVAL);
        }
        inner.bound = None;
        Ok(inner
            .owner
            .as_ref()
            .and_then(|o| o.file.take_port_charge(o.handle)))
    }

    /// Whether the CEP is idle and holds no port: it may bind.
    pub(crate) fn may_bind(&self) -> bool {
        let inner = self.inner.lock();
        inner.bound.is_none() && inner.sm.state == State::Idle && matches!(inner.kind, Kind::Idle)
    }
}

impl Cep {
    /// Makes the CEP `spawn` describes, findable by its comm ID and its requester's keys and
    /// recorded as a user of the port, then runs `finish` on it under its lock. If the request
    /// is a duplicate or stale, or the device is going away, nothing of the new CEP stays in a
    /// table. The one place a listener's CEPs are born (REQ and SIDR_REQ alike).
    fn spawn(spawn: Spawn<'_>, finish: impl FnOnce(&Arc<Cep>, &mut CepInner)) -> Result<Spawned> {
        let peer_reservation = RBTreeNodeReservation::new(GFP_KERNEL)?;
        let qpn_reservation = match spawn.qpn_key {
            Some(_) => Some(RBTreeNodeReservation::new(GFP_KERNEL)?),
            None => None,
        };
        let user_node = RBTreeNodeReservation::new(GFP_KERNEL)?;
        let port = spawn.port;
        let tables = &port.cm().tables;
        let (table, key, qpn_key) = (spawn.table, spawn.key, spawn.qpn_key);
        let cep = Self::insert_new(port.cm(), spawn.net, spawn.sm, spawn.kind, None)?;
        // Unwinds the insertions made so far, newest first.
        let unwind = |qpn: bool, peer: bool| {
            if let (true, Some(qpn_key)) = (qpn, qpn_key) {
                tables.remove_peer(PeerTable::Qpn, qpn_key, &cep);
            }
            if peer {
                tables.remove_peer(table, key, &cep);
            }
            tables.remove_local(cep.local_id);
        };
        if let Some(existing) = tables.insert_peer(table, key, &cep, peer_reservation) {
            unwind(false, false);
            return Ok(Spawned::Duplicate(existing));
        }
        if let (Some(qpn_key), Some(reservation)) = (qpn_key, qpn_reservation) {
            if let Some(old) = tables.insert_peer(PeerTable::Qpn, qpn_key, &cep, reservation) {
                unwind(false, true);
                return Ok(Spawned::Stale(old));
            }
        }
        let mut inner = cep.inner.lock();
        if let Err(e) = port.adopt_user(&cep, user_node) {
            // The device is going away: nothing of this request may stay.
            drop(inner);
            unwind(true, true);
            return Err(e);
        }
        inner.service_id = spawn.service_id;
        inner.peer = Some(Peer {
            comm_id: key.id(),
            port: port.clone(),
            ah_info: spawn.ah_info,
        });
        inner.remote_key = Some((table, key));
        inner.tid = spawn.tid;
        if let (Some(qpn_key), Some(c)) = (qpn_key, inner.kind.connection_mut()) {
            c.remote_qpn_key = Some(qpn_key);
        }
        finish(&cep, &mut inner);
        drop(inner);
        Ok(Spawned::New(cep))
    }
}

/// A transition the protocol core allowed in the CEP's state when it was asked, not carried
/// out yet: the caller prepares what the actions need, then hands it to [`Cep::commit`] under
/// the same lock guard. Not `Copy` or `Clone`: it is carried out once, or dropped.
#[must_use = "a checked transition does nothing until committed"]
struct Checked(state::Transition);

impl Checked {
    /// Whether carrying it out includes `action`.
    fn asks_for(&self, action: Action) -> bool {
        self.0.actions.as_slice().contains(&action)
    }

    /// Whether carrying it out sends a message or hands the owner an event: whether a
    /// received request is taken (or answered again), not ignored.
    fn acts_on_it(&self) -> bool {
        self.0
            .actions
            .as_slice()
            .iter()
            .any(|a| matches!(a, Action::Send(_) | Action::Deliver(_)))
    }

    /// Whether carrying it out hands the owner an event. A received message that does not
    /// leaves the CEP's private data, which the owner reads for its last event, as it was.
    fn delivers(&self) -> bool {
        self.0
            .actions
            .as_slice()
            .iter()
            .any(|a| matches!(a, Action::Deliver(_)))
    }
}

impl CepInner {
    /// Whether a message whose sender's comm ID is `comm_id` comes from this CEP's peer.
    fn is_from_peer(&self, comm_id: u32) -> bool {
        self.peer.as_ref().is_some_and(|p| p.comm_id == comm_id)
    }

    /// Asks the protocol core whether `event` is legal now; `EINVAL` if it is not. Nothing
    /// changes until [`Cep::commit`].
    fn check(&self, event: Event) -> Result<Checked> {
        state::transition(self.sm, event)
            .map(Checked)
            .map_err(|_| EINVAL)
    }

    /// Ties a CEP that never had a peer to the one `info` describes, for the local call
    /// `event` (REQ or SIDR_REQ), which must be legal now; nothing changes on error. Returns
    /// the checked transition, for the caller to commit once the message is in place.
    ///
    /// The port records this CEP as its user under its own lock, taken inside the CEP's:
    /// device removal has then either released the port already (`ENODEV`) or will find this
    /// CEP there and cut it off.
    fn attach_first_peer(
        &mut self,
        cep: &Arc<Cep>,
        event: Event,
        port: Arc<CmPort>,
        info: AhInfo,
        node: RBTreeNodeReservation<u32, Arc<Cep>>,
    ) -> Result<Checked> {
        let checked = self.check(event)?;
        if self.peer.is_some() || self.remote_key.is_some() {
            return Err(EINVAL);
        }
        port.attach_user(cep, &info, node)?;
        self.peer = Some(Peer {
            comm_id: 0,
            port,
            ah_info: info,
        });
        Ok(checked)
    }

    /// Stops resending the retried MAD in flight, if any.
    fn cancel_send(&mut self) {
        if let Some(msg) = self.msg.take() {
            // SAFETY: `self` is a CEP's `inner`, reached only through its lock, which is held
            // since `msg` left its slot.
            unsafe { msg.cancel() };
        }
    }

    /// Counts the message just received as a duplicate, on the port of its peer.
    fn count_duplicate(&self) {
        if let Some(peer) = &self.peer {
            peer.port.count_duplicate();
        }
    }

    fn set_pdata(&mut self, attr: AttrId, data: &[u8]) {
        let len = data.len().min(self.pdata.data.len());
        self.pdata.data = [0; uapi::CEPM_PDATA_MAX as usize];
        self.pdata.data[..len].copy_from_slice(&data[..len]);
        self.pdata.attr = attr.to_u16();
        self.pdata.len = u8::try_from(len).unwrap_or(u8::MAX);
    }
}

/// Largest REJ private data, for ioctl validation.
pub(crate) const REJ_PDATA_MAX: usize = REJ_PRIVATE_DATA_SIZE;
