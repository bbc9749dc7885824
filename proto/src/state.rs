//! The connection state machine as a pure function: `(Cep, Event) -> (Cep, actions)`.
//!
//! It knows nothing about tables, locks, MAD buffers or time: the module looks messages
//! up (by comm IDs, remote QPN, service ID), feeds the result here as an [`Event`], and
//! carries out the returned [`Action`]s in order. Semantics follow Linux `ib_cm`
//! (`drivers/infiniband/core/cm.c`, cited per rule); the additions are:
//!
//! - [`State::RepPrepared`] and [`State::RepPreparedMraSent`] for the prepare/send split of
//!   the REP (OFW `PRE_REP`/`PRE_REP_MRA_SENT`), so QP attributes are right before the REP
//!   is sent;
//! - a `claimed` flag: a CEP born from a listen is unclaimed until userspace retrieves it;
//!   meanwhile only [`Event::Claim`] and [`Event::Destroy`] are legal local calls, and its
//!   events are queued by the module, not lost;
//! - [`State::Destroyed`], terminal, so "destroy twice" is an error, not a silent change.
//!
//! Local calls that are not legal in a state return [`IllegalCall`] and change nothing.
//! Received messages and timer expiries that do not fit the state are dropped (`Ok` with no
//! state change), as Linux does: they race with local calls by nature.
//!
//! Where cepm deliberately differs from Linux:
//! - `SendRej` in a state with a retried MAD outstanding (REQ or REP) also cancels it;
//!   `cm_send_rej_locked` (`drivers/infiniband/core/cm.c`) leaves it to time out.
//! - Destroying a CEP that Linux would put in timewait first ends it at once: the timewait
//!   work of a destroyed Linux id finds nothing (`cm_timewait_handler` in `cm.c`), so no
//!   timer is kept.

use super::msg_code::MessageCode;
use super::rej::reason;
use super::sidr_rep::status;

/// Connection states: Linux's `enum ib_cm_state` (`include/rdma/ib_cm.h`) plus cepm's.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum State {
    /// Not connected; a fresh or finished CEP.
    Idle,
    /// Listening on a service ID.
    Listen,
    /// REQ sent, awaiting REP/REJ/MRA (REQ retried).
    ReqSent,
    /// REQ received, not answered yet.
    ReqRcvd,
    /// REQ received and MRA armed: a duplicate REQ is answered with MRA(REQ).
    MraReqSent,
    /// REQ sent and MRA(REQ) received: the REQ timeout was extended once.
    MraReqRcvd,
    /// REP sent, awaiting RTU (REP retried).
    RepSent,
    /// REP received, RTU not sent yet.
    RepRcvd,
    /// REP received and MRA armed: a duplicate REP is answered with MRA(REP).
    MraRepSent,
    /// REP sent and MRA(REP) received.
    MraRepRcvd,
    /// Connected.
    Established,
    /// DREQ sent, awaiting DREP (DREQ retried).
    DreqSent,
    /// DREQ received, DREP not sent yet.
    DreqRcvd,
    /// Quarantine after a disconnect or a stale-connection REJ.
    Timewait,
    /// SIDR_REQ sent (retried).
    SidrReqSent,
    /// SIDR_REQ received, not answered yet.
    SidrReqRcvd,
    /// cepm: REQ received and REP formatted, not sent (`PREPARE_REP`).
    RepPrepared,
    /// cepm: as [`State::RepPrepared`] with MRA(REQ) armed.
    RepPreparedMraSent,
    /// cepm: destroyed; terminal.
    Destroyed,
}

impl State {
    /// Every state, for tables and tests.
    pub const ALL: [State; 19] = [
        State::Idle,
        State::Listen,
        State::ReqSent,
        State::ReqRcvd,
        State::MraReqSent,
        State::MraReqRcvd,
        State::RepSent,
        State::RepRcvd,
        State::MraRepSent,
        State::MraRepRcvd,
        State::Established,
        State::DreqSent,
        State::DreqRcvd,
        State::Timewait,
        State::SidrReqSent,
        State::SidrReqRcvd,
        State::RepPrepared,
        State::RepPreparedMraSent,
        State::Destroyed,
    ];

    /// Name for traces and debugfs (Linux's `IB_CM_*` spelling where one exists).
    pub const fn name(self) -> &'static str {
        match self {
            Self::Idle => "IDLE",
            Self::Listen => "LISTEN",
            Self::ReqSent => "REQ_SENT",
            Self::ReqRcvd => "REQ_RCVD",
            Self::MraReqSent => "MRA_REQ_SENT",
            Self::MraReqRcvd => "MRA_REQ_RCVD",
            Self::RepSent => "REP_SENT",
            Self::RepRcvd => "REP_RCVD",
            Self::MraRepSent => "MRA_REP_SENT",
            Self::MraRepRcvd => "MRA_REP_RCVD",
            Self::Established => "ESTABLISHED",
            Self::DreqSent => "DREQ_SENT",
            Self::DreqRcvd => "DREQ_RCVD",
            Self::Timewait => "TIMEWAIT",
            Self::SidrReqSent => "SIDR_REQ_SENT",
            Self::SidrReqRcvd => "SIDR_REQ_RCVD",
            Self::RepPrepared => "REP_PREPARED",
            Self::RepPreparedMraSent => "REP_PREPARED_MRA_SENT",
            Self::Destroyed => "DESTROYED",
        }
    }

    /// Whether a retried MAD (REQ, REP, DREQ, SIDR_REQ) is outstanding in this state, i.e.
    /// the send timer is armed.
    pub const fn has_send_timer(self) -> bool {
        matches!(
            self,
            Self::ReqSent
                | Self::MraReqRcvd
                | Self::RepSent
                | Self::MraRepRcvd
                | Self::DreqSent
                | Self::SidrReqSent
        )
    }

    /// Whether the timewait timer is armed in this state.
    pub const fn has_timewait_timer(self) -> bool {
        matches!(self, Self::Timewait)
    }

    /// Whether the CEP has a peer and a QP, so `init_qp_attr(INIT)` is allowed
    /// (`cm_init_qp_init_attr` in `drivers/infiniband/core/cm.c`).
    pub const fn allows_qp_init(self) -> bool {
        matches!(
            self,
            Self::ReqSent
                | Self::MraReqRcvd
                | Self::ReqRcvd
                | Self::MraReqSent
                | Self::RepPrepared
                | Self::RepPreparedMraSent
                | Self::RepRcvd
                | Self::MraRepSent
                | Self::RepSent
                | Self::MraRepRcvd
                | Self::Established
        )
    }

    /// Whether RTR and RTS attributes are available: the peer's QPN and PSN are known
    /// (`cm_init_qp_rtr_attr`, `cm_init_qp_rts_attr` in `drivers/infiniband/core/cm.c`).
    pub const fn allows_qp_rtr_rts(self) -> bool {
        self.allows_qp_init() && !matches!(self, Self::ReqSent | Self::MraReqRcvd)
    }
}

/// The state of one CEP as the transition function sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Cep {
    /// Connection state.
    pub state: State,
    /// Whether a user owns the CEP. CEPs born from a listen start unclaimed.
    pub claimed: bool,
}

impl Cep {
    /// A CEP created by a user: idle and claimed.
    pub const fn new() -> Self {
        Self {
            state: State::Idle,
            claimed: true,
        }
    }

    /// The CEP a listener spawns for a new REQ ([`Action::SpawnConnection`]): REQ_RCVD,
    /// unclaimed, with the REQ event queued for whoever claims it. Linux publishes the new
    /// id only right before queueing this event (`cm_finalize_id`).
    pub fn spawned_from_req() -> (Self, Actions) {
        let mut actions = Actions::new();
        actions.push(Action::Deliver(UserEvent::ReqReceived));
        (
            Self {
                state: State::ReqRcvd,
                claimed: false,
            },
            actions,
        )
    }

    /// The CEP a listener spawns for a SIDR_REQ ([`Action::SpawnSidr`]).
    pub fn spawned_from_sidr_req() -> (Self, Actions) {
        let mut actions = Actions::new();
        actions.push(Action::Deliver(UserEvent::SidrReqReceived));
        (
            Self {
                state: State::SidrReqRcvd,
                claimed: false,
            },
            actions,
        )
    }
}

impl Default for Cep {
    fn default() -> Self {
        Self::new()
    }
}

/// Something that happens to a CEP.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Event {
    /// Local: listen on a service ID.
    Listen,
    /// Local: send a REQ.
    SendReq,
    /// Local: arm an MRA for the received REQ or REP (`ib_prepare_cm_mra`; nothing is sent
    /// until a duplicate arrives, `drivers/infiniband/core/cm.c`). Again once armed: a no-op
    /// (cepm arms one itself while a REQ waits unclaimed).
    PrepareMra,
    /// Local: send an MRA for the received REQ or REP now (what `ib_send_cm_mra` did before
    /// Linux 6.x made MRAs lazy), and keep it armed for the message's retries.
    SendMra,
    /// Local: format the REP and fix its PSN and resources, without sending.
    PrepareRep,
    /// Local: send the (prepared or not) REP.
    SendRep,
    /// Local: send the RTU.
    SendRtu,
    /// Local: reject with a reason.
    SendRej {
        /// REJ reason code.
        reason: u16,
    },
    /// Local: disconnect.
    SendDreq,
    /// Local: answer a DREQ.
    SendDrep,
    /// Local: the QP saw traffic before the RTU (`ib_cm_notify(IB_EVENT_COMM_EST)`).
    Establish,
    /// Local: send a SIDR_REQ.
    SendSidrReq,
    /// Local: answer a SIDR_REQ.
    SendSidrRep {
        /// SIDR_REP status.
        status: u8,
    },
    /// Local: userspace takes ownership of an unclaimed CEP.
    Claim,
    /// Local: destroy the CEP.
    Destroy {
        /// Linux `-ENOMEM` semantics in REQ_RCVD: drop silently so the peer retries
        /// (`cm_destroy_id` in `drivers/infiniband/core/cm.c`). cepm also drops a SIDR_REQ so
        /// when its listener's backlog is full: a SIDR_REP with status
        /// REJECT would be final (Linux has no backlog, and rejects on every destroy).
        retry_later: bool,
    },
    /// Received a REQ (routed to a listener).
    RxReq,
    /// Received a REQ whose (comm ID, CA GUID) matches this CEP's peer.
    RxDupReq,
    /// Received an MRA for the given message.
    RxMra(MessageCode),
    /// Received a REJ matched to this CEP.
    RxRej {
        /// REJ reason code.
        reason: u16,
    },
    /// Received a REP matched to this CEP (first or duplicate: the state tells).
    RxRep,
    /// Received an RTU.
    RxRtu,
    /// Received a DREQ for this CEP's comm IDs.
    RxDreq {
        /// Whether DREQ.RemoteQPN equals our local QPN (`cm_dreq_handler` in `cm.c`).
        qpn_matches: bool,
    },
    /// Received a DREP.
    RxDrep,
    /// Received a LAP (ignored on RoCE).
    RxLap,
    /// Received an APR (ignored on RoCE).
    RxApr,
    /// Received a SIDR_REQ (routed to a listener).
    RxSidrReq,
    /// Received a SIDR_REP.
    RxSidrRep,
    /// The module saw a new REQ or REP reuse this connection's remote QPN + CA GUID
    /// (`cm_match_req`, `cm_rep_handler` in `drivers/infiniband/core/cm.c`): disconnect it.
    StaleConnection,
    /// The outstanding retried MAD ran out of retries, or the device failed to send it.
    SendTimeout,
    /// The timewait timer fired.
    TimewaitExpired,
}

impl Event {
    /// Whether this is a call by the local user (as opposed to the network or a timer).
    pub const fn is_local_call(self) -> bool {
        matches!(
            self,
            Self::Listen
                | Self::SendReq
                | Self::PrepareMra
                | Self::SendMra
                | Self::PrepareRep
                | Self::SendRep
                | Self::SendRtu
                | Self::SendRej { .. }
                | Self::SendDreq
                | Self::SendDrep
                | Self::Establish
                | Self::SendSidrReq
                | Self::SendSidrRep { .. }
                | Self::Claim
                | Self::Destroy { .. }
        )
    }
}

/// A message the module must build and send.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Outgoing {
    /// REQ.
    Req,
    /// REP (the prepared one if any).
    Rep,
    /// RTU, with the private data cached for duplicate REPs.
    Rtu,
    /// DREQ.
    Dreq,
    /// DREP, with the private data cached for duplicate DREQs.
    Drep,
    /// MRA(REQ) with service timeout 24 (`CM_MRA_SETTING`).
    MraReq,
    /// MRA(REP).
    MraRep,
    /// SIDR_REQ.
    SidrReq,
    /// SIDR_REP.
    SidrRep {
        /// Status to send.
        status: u8,
    },
    /// REJ.
    Rej {
        /// Reason code.
        reason: u16,
        /// MsgRejected, derived from the state like `cm_format_rej` (`cm.c`).
        rejected: MessageCode,
        /// Put 0 in LocalCommID (REJ of a REQ before any reply, `cm_format_rej` in `cm.c`).
        zero_local_id: bool,
        /// Put the local CA GUID in the ARI (reason TIMEOUT on destroy, `cm_destroy_id` in `cm.c`).
        ari_ca_guid: bool,
    },
}

/// An event for the CEP's owner (Linux `enum ib_cm_event_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UserEvent {
    /// A REQ arrived (on a CEP spawned from a listen).
    ReqReceived,
    /// The REQ ran out of retries.
    ReqError,
    /// A REP arrived.
    RepReceived,
    /// The REP ran out of retries.
    RepError,
    /// An RTU arrived.
    RtuReceived,
    /// `Establish` was called before the RTU.
    UserEstablished,
    /// A DREQ arrived.
    DreqReceived,
    /// The DREQ ran out of retries.
    DreqError,
    /// A DREP arrived.
    DrepReceived,
    /// A REJ arrived.
    RejReceived,
    /// An MRA arrived.
    MraReceived,
    /// A SIDR_REQ arrived (on a CEP spawned from a listen).
    SidrReqReceived,
    /// A SIDR_REP arrived.
    SidrRepReceived,
    /// The SIDR_REQ ran out of retries.
    SidrReqError,
    /// Timewait is over.
    TimewaitExit,
}

/// One thing the module must do, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// Send once (not retried).
    Send(Outgoing),
    /// Send with retries: arms the send timer ([`super::timing`] gives timeout and count).
    SendRetried(Outgoing),
    /// Cancel the outstanding retried MAD (`ib_cancel_mad`); disarms the send timer.
    CancelSend,
    /// Stretch the outstanding MAD's timeout after an MRA (`ib_modify_mad`,
    /// called from `cm_mra_handler` in `drivers/infiniband/core/cm.c`).
    ExtendSend,
    /// Enter timewait: arm the timewait timer.
    ArmTimewait,
    /// Disarm the timewait timer.
    CancelTimewait,
    /// Queue an event for the owner (or, while unclaimed, for whoever claims the CEP).
    Deliver(UserEvent),
    /// Remove the CEP from the listen table.
    StopListening,
    /// Create a CEP with [`Cep::spawned_from_req`] for the REQ just received.
    SpawnConnection,
    /// Create a CEP with [`Cep::spawned_from_sidr_req`] for the SIDR_REQ just received.
    SpawnSidr,
    /// Count the received message as a duplicate (Linux `cm_rx_duplicates`).
    CountDuplicate,
}

/// Most actions one transition can produce.
pub const MAX_ACTIONS: usize = 4;

/// A short, ordered list of actions; no allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Actions {
    len: usize,
    items: [Action; MAX_ACTIONS],
}

impl Actions {
    /// No actions.
    pub const fn new() -> Self {
        Self {
            len: 0,
            items: [Action::CountDuplicate; MAX_ACTIONS],
        }
    }

    /// Appends an action. Every transition is tested to stay within [`MAX_ACTIONS`]; an
    /// extra action would be dropped (and trips a debug assertion) rather than panic.
    pub fn push(&mut self, action: Action) {
        debug_assert!(
            self.len < MAX_ACTIONS,
            "transition produced too many actions"
        );
        if let Some(slot) = self.items.get_mut(self.len) {
            *slot = action;
            self.len += 1;
        }
    }

    /// The actions, in order.
    pub fn as_slice(&self) -> &[Action] {
        self.items.get(..self.len).unwrap_or(&[])
    }

    /// Number of actions.
    pub const fn len(&self) -> usize {
        self.len
    }

    /// Whether there is nothing to do.
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Default for Actions {
    fn default() -> Self {
        Self::new()
    }
}

/// The result of a legal event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Transition {
    /// The CEP after the event.
    pub next: Cep,
    /// What to do, in order.
    pub actions: Actions,
}

/// A local call that is not allowed in the CEP's state (maps to `-EINVAL`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct IllegalCall {
    /// The state at the time of the call.
    pub state: State,
    /// The call.
    pub event: Event,
}

/// Builds a transition to `state` with `actions`, keeping the claim.
fn go(cep: Cep, state: State, actions: &[Action]) -> Transition {
    let mut list = Actions::new();
    for action in actions {
        list.push(*action);
    }
    Transition {
        next: Cep { state, ..cep },
        actions: list,
    }
}

/// Drops the event: no change, nothing to do.
fn ignore(cep: Cep) -> Transition {
    go(cep, cep.state, &[])
}

/// A REJ as Linux formats it in `state` (`cm_format_rej` in `cm.c`).
fn rej_from(state: State, reason: u16) -> Outgoing {
    let (rejected, zero_local_id) = match state {
        State::ReqRcvd | State::RepPrepared => (MessageCode::Req, true),
        State::MraReqSent | State::RepPreparedMraSent => (MessageCode::Req, false),
        State::RepRcvd | State::MraRepSent => (MessageCode::Rep, false),
        _ => (MessageCode::Other, false),
    };
    Outgoing::Rej {
        reason,
        rejected,
        zero_local_id,
        ari_ca_guid: false,
    }
}

/// A REJ with reason 4 (Timeout) and our CA GUID as its ARI: what a side that gives up on
/// an unanswered REQ or REP sends, so that the peer can find its CEP by our IDs.
const TIMEOUT_REJ: Action = Action::Send(Outgoing::Rej {
    reason: reason::TIMEOUT,
    rejected: MessageCode::Other,
    zero_local_id: false,
    ari_ca_guid: true,
});

/// Applies `event` to `cep`.
///
/// # Errors
///
/// [`IllegalCall`] for a local call the state does not allow, for any local call on a
/// destroyed CEP, for local calls other than `Claim`/`Destroy` on an unclaimed CEP, and for
/// `Claim` on a claimed one. The CEP is then unchanged.
pub fn transition(cep: Cep, event: Event) -> Result<Transition, IllegalCall> {
    use Action::*;
    use State::*;

    let illegal = Err(IllegalCall {
        state: cep.state,
        event,
    });
    let s = cep.state;

    if s == Destroyed {
        return if event.is_local_call() {
            illegal
        } else {
            Ok(ignore(cep))
        };
    }
    if event.is_local_call()
        && !cep.claimed
        && !matches!(event, Event::Claim | Event::Destroy { .. })
    {
        return illegal;
    }

    let t = match event {
        Event::Claim => {
            if cep.claimed {
                return illegal;
            }
            Transition {
                next: Cep {
                    claimed: true,
                    ..cep
                },
                actions: Actions::new(),
            }
        }
        Event::Listen => match s {
            Idle => go(cep, Listen, &[]),
            _ => return illegal,
        },
        Event::SendReq => match s {
            Idle => go(cep, ReqSent, &[SendRetried(Outgoing::Req)]),
            _ => return illegal,
        },
        Event::SendSidrReq => match s {
            Idle => go(cep, SidrReqSent, &[SendRetried(Outgoing::SidrReq)]),
            _ => return illegal,
        },
        // ib_prepare_cm_mra in cm.c: only arms the MRA; no MAD leaves now.
        Event::PrepareMra => match s {
            ReqRcvd | MraReqSent => go(cep, MraReqSent, &[]),
            RepPrepared | RepPreparedMraSent => go(cep, RepPreparedMraSent, &[]),
            RepRcvd | MraRepSent => go(cep, MraRepSent, &[]),
            _ => return illegal,
        },
        Event::SendMra => match s {
            ReqRcvd | MraReqSent => go(cep, MraReqSent, &[Send(Outgoing::MraReq)]),
            RepPrepared | RepPreparedMraSent => {
                go(cep, RepPreparedMraSent, &[Send(Outgoing::MraReq)])
            }
            RepRcvd | MraRepSent => go(cep, MraRepSent, &[Send(Outgoing::MraRep)]),
            _ => return illegal,
        },
        Event::PrepareRep => match s {
            ReqRcvd | RepPrepared => go(cep, RepPrepared, &[]),
            MraReqSent | RepPreparedMraSent => go(cep, RepPreparedMraSent, &[]),
            _ => return illegal,
        },
        // ib_send_cm_rep in cm.c: REP only from REQ_RCVD / MRA_REQ_SENT (+ prepared forms).
        Event::SendRep => match s {
            ReqRcvd | MraReqSent | RepPrepared | RepPreparedMraSent => {
                go(cep, RepSent, &[SendRetried(Outgoing::Rep)])
            }
            _ => return illegal,
        },
        // ib_send_cm_rtu in cm.c.
        Event::SendRtu => match s {
            RepRcvd | MraRepSent => go(cep, Established, &[Send(Outgoing::Rtu)]),
            _ => return illegal,
        },
        // cm_send_rej_locked in cm.c.
        Event::SendRej { reason } => match s {
            ReqSent | MraReqRcvd => go(cep, Idle, &[CancelSend, Send(rej_from(s, reason))]),
            ReqRcvd | MraReqSent | RepPrepared | RepPreparedMraSent | RepRcvd | MraRepSent => {
                go(cep, Idle, &[Send(rej_from(s, reason))])
            }
            RepSent | MraRepRcvd => go(
                cep,
                Timewait,
                &[CancelSend, ArmTimewait, Send(rej_from(s, reason))],
            ),
            _ => return illegal,
        },
        // ib_send_cm_dreq in cm.c.
        Event::SendDreq => match s {
            Established => go(cep, DreqSent, &[SendRetried(Outgoing::Dreq)]),
            _ => return illegal,
        },
        // ib_send_cm_drep → cm_send_drep_locked in cm.c: timewait first, then the DREP.
        Event::SendDrep => match s {
            DreqRcvd => go(cep, Timewait, &[ArmTimewait, Send(Outgoing::Drep)]),
            _ => return illegal,
        },
        // cm_establish in cm.c, then cm_establish_handler cancels the REP.
        Event::Establish => match s {
            RepSent | MraRepRcvd => go(
                cep,
                Established,
                &[CancelSend, Deliver(UserEvent::UserEstablished)],
            ),
            _ => return illegal,
        },
        // cm_send_sidr_rep_locked in cm.c.
        Event::SendSidrRep { status } => match s {
            SidrReqRcvd => go(cep, Idle, &[Send(Outgoing::SidrRep { status })]),
            _ => return illegal,
        },
        // cm_destroy_id in cm.c.
        Event::Destroy { retry_later } => match s {
            Idle => go(cep, Destroyed, &[]),
            Listen => go(cep, Destroyed, &[StopListening]),
            SidrReqSent => go(cep, Destroyed, &[CancelSend]),
            SidrReqRcvd if retry_later => go(cep, Destroyed, &[]),
            SidrReqRcvd => go(
                cep,
                Destroyed,
                &[Send(Outgoing::SidrRep {
                    status: status::REJECT,
                })],
            ),
            ReqSent | MraReqRcvd => go(cep, Destroyed, &[CancelSend, TIMEOUT_REJ]),
            ReqRcvd | RepPrepared if retry_later => go(cep, Destroyed, &[]),
            ReqRcvd | RepPrepared | MraReqSent | RepPreparedMraSent | RepRcvd | MraRepSent => go(
                cep,
                Destroyed,
                &[Send(rej_from(s, reason::CONSUMER_DEFINED))],
            ),
            RepSent | MraRepRcvd => go(
                cep,
                Destroyed,
                &[CancelSend, Send(rej_from(s, reason::CONSUMER_DEFINED))],
            ),
            // cm_issue_dreq: one unretried DREQ (cm.c).
            Established => go(cep, Destroyed, &[Send(Outgoing::Dreq)]),
            DreqSent => go(cep, Destroyed, &[CancelSend]),
            DreqRcvd => go(cep, Destroyed, &[Send(Outgoing::Drep)]),
            Timewait => go(cep, Destroyed, &[CancelTimewait]),
            Destroyed => return illegal,
        },
        Event::RxReq => match s {
            Listen => go(cep, Listen, &[SpawnConnection]),
            _ => ignore(cep),
        },
        Event::RxSidrReq => match s {
            Listen => go(cep, Listen, &[SpawnSidr]),
            _ => ignore(cep),
        },
        // cm_dup_req_handler in cm.c. TIMEWAIT is reachable in cepm because CEPs
        // stay findable during timewait (OFW behaviour): answer REJ STALE_CONN.
        Event::RxDupReq => match s {
            MraReqSent | RepPreparedMraSent => {
                go(cep, s, &[CountDuplicate, Send(Outgoing::MraReq)])
            }
            // A REQ waiting unclaimed in a listener's backlog: its retry gets an MRA, as
            // rdma_cm arms one for every REQ it queues (`cma_ib_req_handler`), so that a
            // slow accept does not lose the peer.
            ReqRcvd if !cep.claimed => go(cep, s, &[CountDuplicate, Send(Outgoing::MraReq)]),
            Timewait => go(
                cep,
                s,
                &[CountDuplicate, Send(rej_from(s, reason::STALE_CONN))],
            ),
            _ => go(cep, s, &[CountDuplicate]),
        },
        // cm_mra_handler in cm.c.
        Event::RxMra(code) => match (s, code) {
            (ReqSent, MessageCode::Req) => go(
                cep,
                MraReqRcvd,
                &[ExtendSend, Deliver(UserEvent::MraReceived)],
            ),
            (RepSent, MessageCode::Rep) => go(
                cep,
                MraRepRcvd,
                &[ExtendSend, Deliver(UserEvent::MraReceived)],
            ),
            (MraReqRcvd | MraRepRcvd, _) => go(cep, s, &[CountDuplicate]),
            _ => ignore(cep),
        },
        // cm_rej_handler in cm.c: STALE_CONN sends the rejected side to timewait.
        Event::RxRej { reason } => {
            let after = if reason == reason::STALE_CONN {
                Timewait
            } else {
                Idle
            };
            let enter = if after == Timewait {
                Some(ArmTimewait)
            } else {
                None
            };
            let deliver = Deliver(UserEvent::RejReceived);
            match (s, enter) {
                (ReqSent | MraReqRcvd | RepSent | MraRepRcvd, Some(tw)) => {
                    go(cep, after, &[CancelSend, tw, deliver])
                }
                (ReqSent | MraReqRcvd | RepSent | MraRepRcvd, None) => {
                    go(cep, after, &[CancelSend, deliver])
                }
                (ReqRcvd | MraReqSent | RepPrepared | RepPreparedMraSent, Some(tw)) => {
                    go(cep, after, &[tw, deliver])
                }
                (ReqRcvd | MraReqSent | RepPrepared | RepPreparedMraSent, None) => {
                    go(cep, after, &[deliver])
                }
                (DreqSent, _) => go(cep, Timewait, &[CancelSend, ArmTimewait, deliver]),
                (RepRcvd | MraRepSent | Established, _) => {
                    go(cep, Timewait, &[ArmTimewait, deliver])
                }
                _ => ignore(cep),
            }
        }
        // cm_rep_handler and cm_dup_rep_handler in cm.c.
        Event::RxRep => match s {
            ReqSent | MraReqRcvd => {
                go(cep, RepRcvd, &[CancelSend, Deliver(UserEvent::RepReceived)])
            }
            Established => go(cep, s, &[CountDuplicate, Send(Outgoing::Rtu)]),
            MraRepSent => go(cep, s, &[CountDuplicate, Send(Outgoing::MraRep)]),
            RepRcvd => go(cep, s, &[CountDuplicate]),
            _ => ignore(cep),
        },
        // cm_rtu_handler in cm.c.
        Event::RxRtu => match s {
            RepSent | MraRepRcvd => go(
                cep,
                Established,
                &[CancelSend, Deliver(UserEvent::RtuReceived)],
            ),
            Established | DreqSent | DreqRcvd | Timewait => go(cep, s, &[CountDuplicate]),
            _ => ignore(cep),
        },
        // cm_dreq_handler in cm.c: crossing DREQs end in DREQ_RCVD on both sides.
        Event::RxDreq { qpn_matches } => match s {
            _ if !qpn_matches => ignore(cep),
            RepSent | MraRepRcvd | DreqSent => go(
                cep,
                DreqRcvd,
                &[CancelSend, Deliver(UserEvent::DreqReceived)],
            ),
            Established => go(cep, DreqRcvd, &[Deliver(UserEvent::DreqReceived)]),
            Timewait => go(cep, s, &[CountDuplicate, Send(Outgoing::Drep)]),
            DreqRcvd => go(cep, s, &[CountDuplicate]),
            _ => ignore(cep),
        },
        // cm_drep_handler in cm.c.
        Event::RxDrep => match s {
            DreqSent => go(
                cep,
                Timewait,
                &[CancelSend, ArmTimewait, Deliver(UserEvent::DrepReceived)],
            ),
            DreqRcvd => go(
                cep,
                Timewait,
                &[ArmTimewait, Deliver(UserEvent::DrepReceived)],
            ),
            _ => ignore(cep),
        },
        // Alternate paths are not used on RoCE; Linux returns early (cm_lap_handler and
        // cm_apr_handler in cm.c).
        Event::RxLap | Event::RxApr => ignore(cep),
        // cm_sidr_rep_handler.
        Event::RxSidrRep => match s {
            SidrReqSent => go(
                cep,
                Idle,
                &[CancelSend, Deliver(UserEvent::SidrRepReceived)],
            ),
            _ => ignore(cep),
        },
        // cm_match_req / cm_rep_handler call ib_send_cm_dreq on the old connection, which
        // only acts in ESTABLISHED.
        Event::StaleConnection => match s {
            Established => go(cep, DreqSent, &[SendRetried(Outgoing::Dreq)]),
            _ => ignore(cep),
        },
        // cm_process_send_error in cm.c. The send is already gone: no cancel. A REQ or REP
        // out of retries is also rejected with reason 4 and our CA GUID,
        // which Linux does not send here but matches (cm_acquire_rejected_id): the peer
        // ends its side at once instead of waiting out its own timers.
        Event::SendTimeout => match s {
            ReqSent | MraReqRcvd => go(cep, Idle, &[TIMEOUT_REJ, Deliver(UserEvent::ReqError)]),
            RepSent | MraRepRcvd => go(cep, Idle, &[TIMEOUT_REJ, Deliver(UserEvent::RepError)]),
            DreqSent => go(cep, Timewait, &[ArmTimewait, Deliver(UserEvent::DreqError)]),
            SidrReqSent => go(cep, Idle, &[Deliver(UserEvent::SidrReqError)]),
            _ => ignore(cep),
        },
        // cm_timewait_handler in cm.c.
        Event::TimewaitExpired => match s {
            Timewait => go(cep, Idle, &[Deliver(UserEvent::TimewaitExit)]),
            _ => ignore(cep),
        },
    };
    Ok(t)
}

/// What to send for a message that matched no CEP.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StatelessReply {
    /// Drop it.
    Drop,
    /// REJ with this reason, MsgRejected = REQ, RemoteCommID = the REQ's LocalCommID and
    /// LocalCommID 0 (`cm_issue_rej` in `cm.c`, copies REQ bytes 4..8 there, which
    /// are 0 unless ECE is used).
    RejReq(u16),
    /// REJ with this reason, MsgRejected = REP, the REP's comm IDs swapped.
    RejRep(u16),
    /// DREP with the DREQ's comm IDs swapped (`cm_issue_drep` in cm.c).
    Drep,
    /// SIDR_REP with this status.
    SidrRep(u8),
}

/// Why a received message found no CEP.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Unmatched {
    /// REQ for a service ID nobody listens on (`cm_match_req` in `cm.c`: REJ 8).
    ReqNoListener,
    /// REQ for a transport this CM does not serve (RD or reserved), or with QPN 0: REJ 9
    /// ([`super::req::Req::invalid_transport`]).
    ReqInvalidTransport,
    /// REQ whose primary path names a GID the receiving port does not have (`cm_req_handler`
    /// in `cm.c`, when `cm_init_av_by_path` fails: REJ 12, the port's GID 0 in the ARI).
    ReqInvalidGid,
    /// REQ reusing the remote QPN + CA GUID of a live connection (`cm_match_req` in `cm.c`: REJ 10;
    /// the old connection gets [`Event::StaleConnection`]).
    ReqStale,
    /// REP reusing a live connection's remote QPN + CA GUID (`cm_rep_handler` in `cm.c`:
    /// REJ 10 with MsgRejected = REP; the old connection gets [`Event::StaleConnection`], the
    /// CEP that sent the REQ stays as it is).
    RepStale,
    /// DREQ for unknown comm IDs.
    Dreq,
    /// REQ for a service ID that has listeners, none of them for the request's address
    /// ([`super::listen_scope`]): REJ 28, as rdma_cm's `cma_ib_req_handler` fails and
    /// `cm_destroy_id` rejects the request in REQ_RCVD with `IB_CM_REJ_CONSUMER_DEFINED`.
    ReqNoAddress,
    /// SIDR_REQ for a service ID nobody listens on (status 1).
    SidrReqNoListener,
    /// SIDR_REQ for a service ID whose listeners take none of the request's address: status 2
    /// (REJECT), as `cm_destroy_id` answers one in SIDR_REQ_RCVD.
    SidrReqNoAddress,
    /// Any other message for unknown comm IDs.
    Other,
}

/// The stateless answer Linux gives to a message that matched no CEP.
pub const fn stateless_reply(why: Unmatched) -> StatelessReply {
    match why {
        Unmatched::ReqNoListener => StatelessReply::RejReq(reason::INVALID_SERVICE_ID),
        Unmatched::ReqInvalidTransport => StatelessReply::RejReq(reason::INVALID_TRANSPORT_TYPE),
        Unmatched::ReqInvalidGid => StatelessReply::RejReq(reason::INVALID_GID),
        Unmatched::ReqStale => StatelessReply::RejReq(reason::STALE_CONN),
        Unmatched::RepStale => StatelessReply::RejRep(reason::STALE_CONN),
        Unmatched::Dreq => StatelessReply::Drep,
        Unmatched::ReqNoAddress => StatelessReply::RejReq(reason::CONSUMER_DEFINED),
        Unmatched::SidrReqNoListener => StatelessReply::SidrRep(status::UNSUPPORTED),
        Unmatched::SidrReqNoAddress => StatelessReply::SidrRep(status::REJECT),
        Unmatched::Other => StatelessReply::Drop,
    }
}
