//! Table-driven test of every (state, event) pair of the connection state machine.
//!
//! `ROWS` is the specification, written from the Linux `cm.c` handlers (see
//! `shared/reference/cm-protocol.md` §1.3/§1.5) independently of `state.rs`. Every pair not
//! in the table must be rejected if it is a local call and ignored otherwise.

use cepm_proto::msg_code::MessageCode;
use cepm_proto::state::{
    stateless_reply, transition, Action, Action::*, Cep, Event, IllegalCall, Outgoing, State,
    State::*, StatelessReply, Unmatched, UserEvent, MAX_ACTIONS,
};

const R: u16 = 28; // consumer defined
const STALE: u16 = 10;

fn rej(reason: u16, rejected: MessageCode, zero_local_id: bool) -> Action {
    Send(Outgoing::Rej {
        reason,
        rejected,
        zero_local_id,
        ari_ca_guid: false,
    })
}

const TIMEOUT_REJ: Action = Send(Outgoing::Rej {
    reason: 4,
    rejected: MessageCode::Other,
    zero_local_id: false,
    ari_ca_guid: true,
});

/// Every event, with representative parameters.
fn events() -> Vec<Event> {
    let mut v = vec![
        Event::Listen,
        Event::SendReq,
        Event::PrepareMra,
        Event::SendMra,
        Event::PrepareRep,
        Event::SendRep,
        Event::SendRtu,
        Event::SendRej { reason: R },
        Event::SendDreq,
        Event::SendDrep,
        Event::Establish,
        Event::SendSidrReq,
        Event::SendSidrRep { status: 0 },
        Event::Destroy { retry_later: false },
        Event::Destroy { retry_later: true },
        Event::RxReq,
        Event::RxDupReq,
        Event::RxRej { reason: R },
        Event::RxRej { reason: STALE },
        Event::RxRep,
        Event::RxRtu,
        Event::RxDreq { qpn_matches: true },
        Event::RxDreq { qpn_matches: false },
        Event::RxDrep,
        Event::RxLap,
        Event::RxApr,
        Event::RxSidrReq,
        Event::RxSidrRep,
        Event::StaleConnection,
        Event::SendTimeout,
        Event::TimewaitExpired,
    ];
    for code in [MessageCode::Req, MessageCode::Rep, MessageCode::Other] {
        v.push(Event::RxMra(code));
    }
    v
}

struct Row {
    from: &'static [State],
    event: Event,
    to: State,
    actions: Vec<Action>,
}

fn row(from: &'static [State], event: Event, to: State, actions: &[Action]) -> Row {
    Row {
        from,
        event,
        to,
        actions: actions.to_vec(),
    }
}

fn rows() -> Vec<Row> {
    use MessageCode::{Other, Rep as MRep, Req as MReq};
    let d = |e| Deliver(e);
    let destroy = Event::Destroy { retry_later: false };
    let destroy_retry = Event::Destroy { retry_later: true };
    let mut rows = vec![
        // Active connect.
        row(&[Idle], Event::Listen, Listen, &[]),
        row(
            &[Idle],
            Event::SendReq,
            ReqSent,
            &[SendRetried(Outgoing::Req)],
        ),
        row(
            &[ReqSent],
            Event::RxMra(MReq),
            MraReqRcvd,
            &[ExtendSend, d(UserEvent::MraReceived)],
        ),
        // "Stay" rows: target Idle with no actions is a marker expanded per state below.
        row(
            &[MraReqRcvd, MraRepRcvd],
            Event::RxMra(MReq),
            State::Idle,
            &[],
        ),
        row(
            &[ReqSent, MraReqRcvd],
            Event::RxRep,
            RepRcvd,
            &[CancelSend, d(UserEvent::RepReceived)],
        ),
        // Retries exhausted: REJ 4 with our CA GUID, so that the peer can find and end its
        // side at once (`cm_acquire_rejected_id`), then the error to the owner.
        row(
            &[ReqSent, MraReqRcvd],
            Event::SendTimeout,
            Idle,
            &[TIMEOUT_REJ, d(UserEvent::ReqError)],
        ),
        // An MRA for the REP: armed (sent on the REP's retry) or sent at once; either again
        // once armed (a new service timeout for the next).
        row(&[RepRcvd, MraRepSent], Event::PrepareMra, MraRepSent, &[]),
        row(
            &[RepRcvd, MraRepSent],
            Event::SendMra,
            MraRepSent,
            &[Send(Outgoing::MraRep)],
        ),
        row(
            &[RepRcvd, MraRepSent],
            Event::SendRtu,
            Established,
            &[Send(Outgoing::Rtu)],
        ),
        row(
            &[Established],
            Event::RxRep,
            Established,
            &[CountDuplicate, Send(Outgoing::Rtu)],
        ),
        row(
            &[MraRepSent],
            Event::RxRep,
            MraRepSent,
            &[CountDuplicate, Send(Outgoing::MraRep)],
        ),
        row(&[RepRcvd], Event::RxRep, RepRcvd, &[CountDuplicate]),
        // Passive connect.
        row(&[Listen], Event::RxReq, Listen, &[SpawnConnection]),
        row(&[Listen], Event::RxSidrReq, Listen, &[SpawnSidr]),
        // An MRA for the REQ, as for the REP above. cepm arms one itself while the REQ waits
        // unclaimed, so the owner's own PrepareMra may find it armed already.
        row(&[ReqRcvd, MraReqSent], Event::PrepareMra, MraReqSent, &[]),
        row(
            &[RepPrepared, RepPreparedMraSent],
            Event::PrepareMra,
            RepPreparedMraSent,
            &[],
        ),
        row(
            &[ReqRcvd, MraReqSent],
            Event::SendMra,
            MraReqSent,
            &[Send(Outgoing::MraReq)],
        ),
        row(
            &[RepPrepared, RepPreparedMraSent],
            Event::SendMra,
            RepPreparedMraSent,
            &[Send(Outgoing::MraReq)],
        ),
        row(&[ReqRcvd, RepPrepared], Event::PrepareRep, RepPrepared, &[]),
        row(
            &[MraReqSent, RepPreparedMraSent],
            Event::PrepareRep,
            RepPreparedMraSent,
            &[],
        ),
        row(
            &[ReqRcvd, MraReqSent, RepPrepared, RepPreparedMraSent],
            Event::SendRep,
            RepSent,
            &[SendRetried(Outgoing::Rep)],
        ),
        row(
            &[RepSent],
            Event::RxMra(MRep),
            MraRepRcvd,
            &[ExtendSend, d(UserEvent::MraReceived)],
        ),
        row(
            &[RepSent, MraRepRcvd],
            Event::RxRtu,
            Established,
            &[CancelSend, d(UserEvent::RtuReceived)],
        ),
        row(
            &[Established, DreqSent, DreqRcvd, Timewait],
            Event::RxRtu,
            State::Idle,
            &[],
        ), // fixed below
        row(
            &[RepSent, MraRepRcvd],
            Event::Establish,
            Established,
            &[CancelSend, d(UserEvent::UserEstablished)],
        ),
        row(
            &[RepSent, MraRepRcvd],
            Event::SendTimeout,
            Idle,
            &[TIMEOUT_REJ, d(UserEvent::RepError)],
        ),
        // Duplicate REQs (cm_dup_req_handler) and OFW-style stale REJ in timewait.
        row(
            &[MraReqSent, RepPreparedMraSent],
            Event::RxDupReq,
            State::Idle,
            &[],
        ), // fixed below
        row(
            &[Timewait],
            Event::RxDupReq,
            Timewait,
            &[CountDuplicate, rej(STALE, Other, false)],
        ),
        // Local REJ.
        row(
            &[ReqSent, MraReqRcvd],
            Event::SendRej { reason: R },
            Idle,
            &[CancelSend, rej(R, Other, false)],
        ),
        row(
            &[ReqRcvd, RepPrepared],
            Event::SendRej { reason: R },
            Idle,
            &[rej(R, MReq, true)],
        ),
        row(
            &[MraReqSent, RepPreparedMraSent],
            Event::SendRej { reason: R },
            Idle,
            &[rej(R, MReq, false)],
        ),
        row(
            &[RepRcvd, MraRepSent],
            Event::SendRej { reason: R },
            Idle,
            &[rej(R, MRep, false)],
        ),
        row(
            &[RepSent, MraRepRcvd],
            Event::SendRej { reason: R },
            Timewait,
            &[CancelSend, ArmTimewait, rej(R, Other, false)],
        ),
        // Received REJ.
        row(
            &[ReqSent, MraReqRcvd, RepSent, MraRepRcvd],
            Event::RxRej { reason: R },
            Idle,
            &[CancelSend, d(UserEvent::RejReceived)],
        ),
        row(
            &[ReqSent, MraReqRcvd, RepSent, MraRepRcvd],
            Event::RxRej { reason: STALE },
            Timewait,
            &[CancelSend, ArmTimewait, d(UserEvent::RejReceived)],
        ),
        row(
            &[ReqRcvd, MraReqSent, RepPrepared, RepPreparedMraSent],
            Event::RxRej { reason: R },
            Idle,
            &[d(UserEvent::RejReceived)],
        ),
        row(
            &[ReqRcvd, MraReqSent, RepPrepared, RepPreparedMraSent],
            Event::RxRej { reason: STALE },
            Timewait,
            &[ArmTimewait, d(UserEvent::RejReceived)],
        ),
        // Disconnect.
        row(
            &[Established],
            Event::SendDreq,
            DreqSent,
            &[SendRetried(Outgoing::Dreq)],
        ),
        row(
            &[Established],
            Event::StaleConnection,
            DreqSent,
            &[SendRetried(Outgoing::Dreq)],
        ),
        row(
            &[RepSent, MraRepRcvd, DreqSent],
            Event::RxDreq { qpn_matches: true },
            DreqRcvd,
            &[CancelSend, d(UserEvent::DreqReceived)],
        ),
        row(
            &[Established],
            Event::RxDreq { qpn_matches: true },
            DreqRcvd,
            &[d(UserEvent::DreqReceived)],
        ),
        row(
            &[Timewait],
            Event::RxDreq { qpn_matches: true },
            Timewait,
            &[CountDuplicate, Send(Outgoing::Drep)],
        ),
        row(
            &[DreqRcvd],
            Event::RxDreq { qpn_matches: true },
            DreqRcvd,
            &[CountDuplicate],
        ),
        row(
            &[DreqRcvd],
            Event::SendDrep,
            Timewait,
            &[ArmTimewait, Send(Outgoing::Drep)],
        ),
        row(
            &[DreqSent],
            Event::RxDrep,
            Timewait,
            &[CancelSend, ArmTimewait, d(UserEvent::DrepReceived)],
        ),
        row(
            &[DreqRcvd],
            Event::RxDrep,
            Timewait,
            &[ArmTimewait, d(UserEvent::DrepReceived)],
        ),
        row(
            &[DreqSent],
            Event::SendTimeout,
            Timewait,
            &[ArmTimewait, d(UserEvent::DreqError)],
        ),
        row(
            &[Timewait],
            Event::TimewaitExpired,
            Idle,
            &[d(UserEvent::TimewaitExit)],
        ),
        // SIDR.
        row(
            &[Idle],
            Event::SendSidrReq,
            SidrReqSent,
            &[SendRetried(Outgoing::SidrReq)],
        ),
        row(
            &[SidrReqSent],
            Event::RxSidrRep,
            Idle,
            &[CancelSend, d(UserEvent::SidrRepReceived)],
        ),
        row(
            &[SidrReqSent],
            Event::SendTimeout,
            Idle,
            &[d(UserEvent::SidrReqError)],
        ),
        row(
            &[SidrReqRcvd],
            Event::SendSidrRep { status: 0 },
            Idle,
            &[Send(Outgoing::SidrRep { status: 0 })],
        ),
        // Destroy, by state (cm_destroy_id).
        row(&[Idle], destroy, Destroyed, &[]),
        row(&[Idle], destroy_retry, Destroyed, &[]),
        row(&[Listen], destroy, Destroyed, &[StopListening]),
        row(&[Listen], destroy_retry, Destroyed, &[StopListening]),
        row(&[SidrReqSent], destroy, Destroyed, &[CancelSend]),
        row(&[SidrReqSent], destroy_retry, Destroyed, &[CancelSend]),
        row(
            &[SidrReqRcvd],
            destroy,
            Destroyed,
            &[Send(Outgoing::SidrRep { status: 2 })],
        ),
        // A SIDR_REQ that found the backlog full or memory short: dropped, and retried.
        row(&[SidrReqRcvd], destroy_retry, Destroyed, &[]),
        row(
            &[ReqSent, MraReqRcvd],
            destroy,
            Destroyed,
            &[CancelSend, TIMEOUT_REJ],
        ),
        row(
            &[ReqSent, MraReqRcvd],
            destroy_retry,
            Destroyed,
            &[CancelSend, TIMEOUT_REJ],
        ),
        row(
            &[ReqRcvd, RepPrepared],
            destroy,
            Destroyed,
            &[rej(R, MReq, true)],
        ),
        row(&[ReqRcvd, RepPrepared], destroy_retry, Destroyed, &[]),
        row(
            &[MraReqSent, RepPreparedMraSent],
            destroy,
            Destroyed,
            &[rej(R, MReq, false)],
        ),
        row(
            &[MraReqSent, RepPreparedMraSent],
            destroy_retry,
            Destroyed,
            &[rej(R, MReq, false)],
        ),
        row(
            &[RepRcvd, MraRepSent],
            destroy,
            Destroyed,
            &[rej(R, MRep, false)],
        ),
        row(
            &[RepRcvd, MraRepSent],
            destroy_retry,
            Destroyed,
            &[rej(R, MRep, false)],
        ),
        row(
            &[RepSent, MraRepRcvd],
            destroy,
            Destroyed,
            &[CancelSend, rej(R, Other, false)],
        ),
        row(
            &[RepSent, MraRepRcvd],
            destroy_retry,
            Destroyed,
            &[CancelSend, rej(R, Other, false)],
        ),
        row(&[Established], destroy, Destroyed, &[Send(Outgoing::Dreq)]),
        row(
            &[Established],
            destroy_retry,
            Destroyed,
            &[Send(Outgoing::Dreq)],
        ),
        row(&[DreqSent], destroy, Destroyed, &[CancelSend]),
        row(&[DreqSent], destroy_retry, Destroyed, &[CancelSend]),
        row(&[DreqRcvd], destroy, Destroyed, &[Send(Outgoing::Drep)]),
        row(
            &[DreqRcvd],
            destroy_retry,
            Destroyed,
            &[Send(Outgoing::Drep)],
        ),
        row(&[Timewait], destroy, Destroyed, &[CancelTimewait]),
        row(&[Timewait], destroy_retry, Destroyed, &[CancelTimewait]),
    ];
    // Rows whose target is "stay where you are" are expanded per state here.
    let mut out = Vec::new();
    for r in rows.drain(..) {
        let stay = r.to == State::Idle && r.actions.is_empty() && !matches!(r.event, Event::Listen);
        if !stay {
            out.push(r);
            continue;
        }
        for s in r.from {
            let actions = match r.event {
                Event::RxDupReq => vec![CountDuplicate, Send(Outgoing::MraReq)],
                _ => vec![CountDuplicate],
            };
            out.push(Row {
                from: std::slice::from_ref(leak(*s)),
                event: r.event,
                to: *s,
                actions,
            });
        }
    }
    // Duplicate REQs count everywhere else; duplicate MRAs count in MRA_*_RCVD.
    for s in State::ALL {
        if !matches!(s, MraReqSent | RepPreparedMraSent | Timewait | Destroyed) {
            out.push(Row {
                from: std::slice::from_ref(leak(s)),
                event: Event::RxDupReq,
                to: s,
                actions: vec![CountDuplicate],
            });
        }
    }
    for code in [MessageCode::Rep, MessageCode::Other] {
        for s in [MraReqRcvd, MraRepRcvd] {
            out.push(Row {
                from: std::slice::from_ref(leak(s)),
                event: Event::RxMra(code),
                to: s,
                actions: vec![CountDuplicate],
            });
        }
    }
    // REJ in DREQ_SENT / REP_RCVD / ESTABLISHED: timewait whatever the reason.
    for reason in [R, STALE] {
        out.push(row(
            &[DreqSent],
            Event::RxRej { reason },
            Timewait,
            &[CancelSend, ArmTimewait, d(UserEvent::RejReceived)],
        ));
        out.push(row(
            &[RepRcvd, MraRepSent, Established],
            Event::RxRej { reason },
            Timewait,
            &[ArmTimewait, d(UserEvent::RejReceived)],
        ));
    }
    out
}

fn leak(s: State) -> &'static State {
    Box::leak(Box::new(s))
}

fn claimed(state: State) -> Cep {
    Cep {
        state,
        claimed: true,
    }
}

#[test]
fn every_state_event_pair_matches_the_table() {
    let rows = rows();
    let mut checked = 0;
    let mut by_table = 0;
    for state in State::ALL {
        for event in events() {
            let matching: Vec<&Row> = rows
                .iter()
                .filter(|r| r.event == event && r.from.contains(&state))
                .collect();
            assert!(
                matching.len() <= 1,
                "{state:?} {event:?}: {} rows",
                matching.len()
            );
            let got = transition(claimed(state), event);
            checked += 1;
            if state == Destroyed {
                if event.is_local_call() {
                    assert_eq!(got, Err(IllegalCall { state, event }));
                } else {
                    let t = got.unwrap();
                    assert_eq!((t.next.state, t.actions.len()), (Destroyed, 0), "{event:?}");
                }
                continue;
            }
            match matching.first() {
                Some(r) => {
                    by_table += 1;
                    let t = got.unwrap_or_else(|e| panic!("{state:?} {event:?}: {e:?}"));
                    assert_eq!(t.next, claimed(r.to), "{state:?} {event:?}");
                    assert_eq!(t.actions.as_slice(), &r.actions[..], "{state:?} {event:?}");
                }
                None if event.is_local_call() && event != Event::Claim => {
                    assert_eq!(
                        got,
                        Err(IllegalCall { state, event }),
                        "{state:?} {event:?}"
                    );
                }
                None => {
                    let t = got.unwrap_or_else(|e| panic!("{state:?} {event:?}: {e:?}"));
                    assert_eq!(
                        t.next,
                        claimed(state),
                        "{state:?} {event:?} must be ignored"
                    );
                    assert!(t.actions.is_empty(), "{state:?} {event:?}: {:?}", t.actions);
                }
            }
        }
    }
    // Every row is reachable (no dead spec).
    for r in &rows {
        for s in r.from {
            assert!(State::ALL.contains(s));
        }
    }
    println!(
        "state table: {checked} (state, event) pairs checked, {by_table} by explicit rows, {} rows",
        rows.len()
    );
    assert_eq!(checked, State::ALL.len() * events().len());
}

#[test]
fn unclaimed_ceps_allow_only_claim_and_destroy() {
    for state in State::ALL {
        let cep = Cep {
            state,
            claimed: false,
        };
        for event in events() {
            let got = transition(cep, event);
            if state == Destroyed {
                continue;
            }
            match event {
                Event::Claim => {
                    let t = got.unwrap();
                    assert_eq!(
                        t.next,
                        Cep {
                            state,
                            claimed: true
                        }
                    );
                    assert!(t.actions.is_empty());
                }
                Event::Destroy { .. } => assert_eq!(got.unwrap().next.state, Destroyed),
                e if e.is_local_call() => assert_eq!(got, Err(IllegalCall { state, event })),
                // A REQ waiting unclaimed answers its retries with an MRA (rdma_cm's
                // automatic MRA for queued REQs); a claimed one leaves that to its owner.
                Event::RxDupReq if state == ReqRcvd => {
                    let t = got.unwrap();
                    assert_eq!(t.next, cep);
                    assert_eq!(
                        t.actions.as_slice(),
                        &[CountDuplicate, Send(Outgoing::MraReq)]
                    );
                }
                // The network still drives an unclaimed CEP; its events are queued.
                _ => assert_eq!(
                    got,
                    transition(claimed(state), event).map(|mut t| {
                        t.next.claimed = false;
                        t
                    })
                ),
            }
        }
        assert_eq!(
            transition(claimed(state), Event::Claim),
            Err(IllegalCall {
                state,
                event: Event::Claim
            })
        );
    }
}

#[test]
fn spawned_ceps_start_unclaimed_with_their_event() {
    let (cep, actions) = Cep::spawned_from_req();
    assert_eq!(
        cep,
        Cep {
            state: ReqRcvd,
            claimed: false
        }
    );
    assert_eq!(actions.as_slice(), &[Deliver(UserEvent::ReqReceived)]);
    let (cep, actions) = Cep::spawned_from_sidr_req();
    assert_eq!(
        cep,
        Cep {
            state: SidrReqRcvd,
            claimed: false
        }
    );
    assert_eq!(actions.as_slice(), &[Deliver(UserEvent::SidrReqReceived)]);
    // Listener closes with an unclaimed CEP: REJ 28 (reference §6.14).
    let t = transition(
        cep_req_rcvd_unclaimed(),
        Event::Destroy { retry_later: false },
    )
    .unwrap();
    assert_eq!(t.actions.as_slice(), &[rej(R, MessageCode::Req, true)]);
}

fn cep_req_rcvd_unclaimed() -> Cep {
    Cep::spawned_from_req().0
}

#[test]
fn rej_reason_passes_through_and_action_lists_fit() {
    for reason in [1u16, 8, 28, 0xffff] {
        let t = transition(claimed(ReqRcvd), Event::SendRej { reason }).unwrap();
        assert_eq!(t.actions.as_slice(), &[rej(reason, MessageCode::Req, true)]);
    }
    for state in State::ALL {
        for event in events() {
            if let Ok(t) = transition(claimed(state), event) {
                assert!(t.actions.len() <= MAX_ACTIONS);
            }
        }
    }
}

#[test]
fn stateless_replies() {
    assert_eq!(
        stateless_reply(Unmatched::ReqNoListener),
        StatelessReply::RejReq(8)
    );
    assert_eq!(
        stateless_reply(Unmatched::ReqStale),
        StatelessReply::RejReq(10)
    );
    assert_eq!(
        stateless_reply(Unmatched::RepStale),
        StatelessReply::RejRep(10)
    );
    assert_eq!(
        stateless_reply(Unmatched::ReqInvalidTransport),
        StatelessReply::RejReq(9)
    );
    assert_eq!(
        stateless_reply(Unmatched::ReqInvalidGid),
        StatelessReply::RejReq(12)
    );
    assert_eq!(
        stateless_reply(Unmatched::ReqNoAddress),
        StatelessReply::RejReq(28)
    );
    assert_eq!(stateless_reply(Unmatched::Dreq), StatelessReply::Drep);
    assert_eq!(
        stateless_reply(Unmatched::SidrReqNoAddress),
        StatelessReply::SidrRep(2)
    );
    assert_eq!(
        stateless_reply(Unmatched::SidrReqNoListener),
        StatelessReply::SidrRep(1)
    );
    assert_eq!(stateless_reply(Unmatched::Other), StatelessReply::Drop);
}

/// The pairings of a send and its message that transitions ask for: REQ, REP, DREQ and
/// SIDR_REQ retried; RTU, DREQ, DREP, MRA, SIDR_REP and REJ once. The kernel module carries
/// out exactly these (`Cep::run` in rust/cep.rs); any other pairing has no code there.
#[test]
fn sends_pair_messages_as_the_module_expects() {
    let once = |o: &Outgoing| {
        matches!(
            o,
            Outgoing::Rtu
                | Outgoing::Dreq
                | Outgoing::Drep
                | Outgoing::MraReq
                | Outgoing::MraRep
                | Outgoing::SidrRep { .. }
                | Outgoing::Rej { .. }
        )
    };
    let retried = |o: &Outgoing| {
        matches!(
            o,
            Outgoing::Req | Outgoing::Rep | Outgoing::Dreq | Outgoing::SidrReq
        )
    };
    let mut checked = 0;
    let mut check = |actions: &[Action]| {
        for a in actions {
            match a {
                Send(o) => assert!(once(o), "{a:?} is not sent once"),
                SendRetried(o) => assert!(retried(o), "{a:?} is not retried"),
                _ => {}
            }
            checked += 1;
        }
    };
    for state in State::ALL {
        for claimed in [false, true] {
            for event in events() {
                if let Ok(t) = transition(Cep { state, claimed }, event) {
                    check(t.actions.as_slice());
                }
            }
        }
    }
    check(Cep::spawned_from_req().1.as_slice());
    check(Cep::spawned_from_sidr_req().1.as_slice());
    assert!(checked > 100, "only {checked} actions seen");
}
