//! Property and scenario tests of the state machine: random event sequences keep the
//! timers consistent with the states and always end with every timer cancelled; two CEPs
//! wired back to back complete the Linux scenarios of reference §6.

use cepm_proto::msg_code::MessageCode;
use cepm_proto::state::{transition, Action, Cep, Event, Outgoing, State, UserEvent};
use proptest::prelude::*;

/// One CEP plus the timers its actions armed.
#[derive(Debug, Clone, Copy)]
struct Sim {
    cep: Cep,
    send_armed: bool,
    timewait_armed: bool,
}

impl Sim {
    fn new(cep: Cep) -> Self {
        Self {
            cep,
            send_armed: false,
            timewait_armed: false,
        }
    }

    /// Applies `event`, checks every rule, returns the actions.
    fn step(&mut self, event: Event) -> Result<Vec<Action>, TestCaseError> {
        // A timer event from an armed timer consumes it; otherwise it is a stale one.
        if event == Event::SendTimeout && self.send_armed {
            self.send_armed = false;
        }
        if event == Event::TimewaitExpired && self.timewait_armed {
            self.timewait_armed = false;
        }
        let before = self.cep;
        match transition(self.cep, event) {
            Err(e) => {
                prop_assert!(event.is_local_call(), "{:?} rejected a non-local event", e);
                prop_assert_eq!(e.state, before.state);
                Ok(vec![])
            }
            Ok(t) => {
                for a in t.actions.as_slice() {
                    match a {
                        Action::SendRetried(_) => {
                            prop_assert!(!self.send_armed, "second retried send in {:?}", before);
                            self.send_armed = true;
                        }
                        Action::CancelSend => {
                            prop_assert!(
                                self.send_armed,
                                "cancel without send: {:?} {:?}",
                                before,
                                event
                            );
                            self.send_armed = false;
                        }
                        Action::ExtendSend => prop_assert!(self.send_armed),
                        Action::ArmTimewait => {
                            prop_assert!(!self.timewait_armed);
                            self.timewait_armed = true;
                        }
                        Action::CancelTimewait => {
                            prop_assert!(self.timewait_armed);
                            self.timewait_armed = false;
                        }
                        _ => {}
                    }
                }
                self.cep = t.next;
                prop_assert_eq!(
                    self.send_armed,
                    self.cep.state.has_send_timer(),
                    "{:?} --{:?}--> {:?}",
                    before,
                    event,
                    self.cep
                );
                prop_assert_eq!(self.timewait_armed, self.cep.state.has_timewait_timer());
                if before.state == State::Destroyed {
                    prop_assert_eq!(self.cep.state, State::Destroyed);
                }
                Ok(t.actions.as_slice().to_vec())
            }
        }
    }
}

fn event_strategy() -> impl Strategy<Value = Event> {
    let code = prop_oneof![
        Just(MessageCode::Req),
        Just(MessageCode::Rep),
        Just(MessageCode::Other)
    ];
    prop_oneof![
        Just(Event::Listen),
        Just(Event::SendReq),
        Just(Event::PrepareMra),
        Just(Event::SendMra),
        Just(Event::PrepareRep),
        Just(Event::SendRep),
        Just(Event::SendRtu),
        any::<u16>().prop_map(|reason| Event::SendRej { reason }),
        Just(Event::SendDreq),
        Just(Event::SendDrep),
        Just(Event::Establish),
        Just(Event::SendSidrReq),
        (0u8..6).prop_map(|status| Event::SendSidrRep { status }),
        Just(Event::Claim),
        any::<bool>().prop_map(|retry_later| Event::Destroy { retry_later }),
        Just(Event::RxReq),
        Just(Event::RxDupReq),
        code.prop_map(Event::RxMra),
        prop_oneof![Just(10u16), Just(28u16), any::<u16>()]
            .prop_map(|reason| Event::RxRej { reason }),
        Just(Event::RxRep),
        Just(Event::RxRtu),
        any::<bool>().prop_map(|qpn_matches| Event::RxDreq { qpn_matches }),
        Just(Event::RxDrep),
        Just(Event::RxLap),
        Just(Event::RxApr),
        Just(Event::RxSidrReq),
        Just(Event::RxSidrRep),
        Just(Event::StaleConnection),
        Just(Event::SendTimeout),
        Just(Event::TimewaitExpired),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    /// Random events against a listener and everything it spawns: timers always match the
    /// states, and destroying everything leaves no timer armed.
    #[test]
    fn random_sequences_end_with_all_timers_cancelled(
        steps in proptest::collection::vec((0usize..8, event_strategy()), 1..200),
        start_listening in any::<bool>(),
    ) {
        let mut ceps = vec![Sim::new(Cep::new())];
        if start_listening {
            ceps[0].step(Event::Listen)?;
        }
        for (target, event) in steps {
            let i = target % ceps.len();
            for action in ceps[i].step(event)? {
                match action {
                    Action::SpawnConnection if ceps.len() < 8 => {
                        ceps.push(Sim::new(Cep::spawned_from_req().0));
                    }
                    Action::SpawnSidr if ceps.len() < 8 => {
                        ceps.push(Sim::new(Cep::spawned_from_sidr_req().0));
                    }
                    _ => {}
                }
            }
        }
        for sim in &mut ceps {
            if sim.cep.state != State::Destroyed {
                sim.step(Event::Destroy { retry_later: false })?;
            }
            prop_assert_eq!(sim.cep.state, State::Destroyed);
            prop_assert!(!sim.send_armed && !sim.timewait_armed, "{:?}", sim);
            // Destroyed is terminal: nothing revives it.
            prop_assert!(transition(sim.cep, Event::SendReq).is_err());
        }
    }
}

/// Two CEPs back to back: `Send` actions become `Rx` events on the other side.
struct Pair {
    a: Sim,
    b: Sim,
    /// Events delivered to users: (side, event).
    delivered: Vec<(char, UserEvent)>,
    /// Messages on the wire: (from, message).
    wire: Vec<(char, Outgoing)>,
}

impl Pair {
    fn new(a: Cep, b: Cep) -> Self {
        Self {
            a: Sim::new(a),
            b: Sim::new(b),
            delivered: vec![],
            wire: vec![],
        }
    }

    fn side(&mut self, who: char) -> &mut Sim {
        if who == 'a' {
            &mut self.a
        } else {
            &mut self.b
        }
    }

    /// Applies `event` on `who` and returns the messages it sent (not yet delivered).
    fn call(&mut self, who: char, event: Event) -> Vec<Outgoing> {
        let actions = self.side(who).step(event).unwrap();
        let mut sent = vec![];
        for a in actions {
            match a {
                Action::Send(m) | Action::SendRetried(m) => {
                    self.wire.push((who, m));
                    sent.push(m);
                }
                Action::Deliver(e) => self.delivered.push((who, e)),
                _ => {}
            }
        }
        sent
    }

    /// Delivers message `m` sent by `from` to the other side.
    fn deliver(&mut self, from: char, m: Outgoing) -> Vec<Outgoing> {
        let to = if from == 'a' { 'b' } else { 'a' };
        let event = match m {
            Outgoing::Req => Event::RxDupReq, // only used for duplicates in these scenarios
            Outgoing::Rep => Event::RxRep,
            Outgoing::Rtu => Event::RxRtu,
            Outgoing::Dreq => Event::RxDreq { qpn_matches: true },
            Outgoing::Drep => Event::RxDrep,
            Outgoing::MraReq => Event::RxMra(MessageCode::Req),
            Outgoing::MraRep => Event::RxMra(MessageCode::Rep),
            Outgoing::SidrReq => Event::RxSidrReq,
            Outgoing::SidrRep { .. } => Event::RxSidrRep,
            Outgoing::Rej { reason, .. } => Event::RxRej { reason },
        };
        self.call(to, event)
    }

    /// Delivers everything in flight until the wire is quiet.
    fn pump(&mut self, mut inflight: Vec<(char, Outgoing)>) {
        while let Some((from, m)) = inflight.pop() {
            let to = if from == 'a' { 'b' } else { 'a' };
            for reply in self.deliver(from, m) {
                inflight.push((to, reply));
            }
        }
    }

    fn states(&self) -> (State, State) {
        (self.a.cep.state, self.b.cep.state)
    }
}

/// Active `a` has sent its REQ, passive `b` was spawned by it and claimed.
fn connecting() -> Pair {
    let mut p = Pair::new(Cep::new(), Cep::spawned_from_req().0);
    p.call('b', Event::Claim);
    assert_eq!(p.call('a', Event::SendReq), vec![Outgoing::Req]);
    p
}

fn established() -> Pair {
    let mut p = connecting();
    p.call('b', Event::PrepareRep);
    let rep = p.call('b', Event::SendRep);
    p.pump(rep.into_iter().map(|m| ('b', m)).collect());
    assert_eq!(p.call('a', Event::SendRtu), vec![Outgoing::Rtu]);
    p.pump(vec![('a', Outgoing::Rtu)]);
    assert_eq!(p.states(), (State::Established, State::Established));
    p
}

#[test]
fn happy_path_and_disconnect() {
    let mut p = established();
    assert!(p.delivered.contains(&('a', UserEvent::RepReceived)));
    assert!(p.delivered.contains(&('b', UserEvent::RtuReceived)));
    let dreq = p.call('a', Event::SendDreq);
    p.pump(dreq.into_iter().map(|m| ('a', m)).collect());
    assert_eq!(p.states(), (State::DreqSent, State::DreqRcvd));
    let drep = p.call('b', Event::SendDrep);
    p.pump(drep.into_iter().map(|m| ('b', m)).collect());
    assert_eq!(p.states(), (State::Timewait, State::Timewait));
    p.call('a', Event::TimewaitExpired);
    p.call('b', Event::TimewaitExpired);
    assert_eq!(p.states(), (State::Idle, State::Idle));
    let exits = p
        .delivered
        .iter()
        .filter(|(_, e)| *e == UserEvent::TimewaitExit)
        .count();
    assert_eq!(exits, 2);
}

#[test]
fn crossing_dreqs_reach_timewait_without_errors() {
    // Reference §6.9: both disconnect at once.
    let mut p = established();
    let a = p.call('a', Event::SendDreq);
    let b = p.call('b', Event::SendDreq);
    assert_eq!(p.states(), (State::DreqSent, State::DreqSent));
    p.pump(
        a.into_iter()
            .map(|m| ('a', m))
            .chain(b.into_iter().map(|m| ('b', m)))
            .collect(),
    );
    assert_eq!(p.states(), (State::DreqRcvd, State::DreqRcvd));
    for who in ['a', 'b'] {
        let drep = p.call(who, Event::SendDrep);
        p.pump(drep.into_iter().map(|m| (who, m)).collect());
    }
    assert_eq!(p.states(), (State::Timewait, State::Timewait));
    assert!(!p.delivered.iter().any(|(_, e)| *e == UserEvent::DreqError));
    assert!(!p.a.send_armed && !p.b.send_armed);
}

#[test]
fn lost_rtu_is_recovered_by_rep_retry() {
    // Reference §6.8: the first RTU is lost; the REP is resent; the duplicate REP gets the
    // cached RTU.
    let mut p = connecting();
    let rep = p.call('b', Event::SendRep);
    p.pump(rep.iter().map(|m| ('b', *m)).collect());
    p.call('a', Event::SendRtu); // lost: not pumped
    assert_eq!(p.states(), (State::Established, State::RepSent));
    let resent = p.deliver('b', Outgoing::Rep);
    assert_eq!(resent, vec![Outgoing::Rtu]);
    p.pump(vec![('a', Outgoing::Rtu)]);
    assert_eq!(p.states(), (State::Established, State::Established));
}

#[test]
fn mra_extends_once_and_duplicate_req_gets_mra() {
    // Reference §6.5/6.6.
    let mut p = connecting();
    p.call('b', Event::PrepareMra);
    let reply = p.deliver('a', Outgoing::Req); // duplicate REQ
    assert_eq!(reply, vec![Outgoing::MraReq]);
    p.pump(vec![('b', Outgoing::MraReq)]);
    assert_eq!(p.a.cep.state, State::MraReqRcvd);
    // A second MRA does not extend again.
    let t = transition(p.a.cep, Event::RxMra(MessageCode::Req)).unwrap();
    assert!(!t.actions.as_slice().contains(&Action::ExtendSend));
    // Without a REP the REQ times out.
    p.call('a', Event::SendTimeout);
    assert_eq!(p.a.cep.state, State::Idle);
    assert!(p.delivered.contains(&('a', UserEvent::ReqError)));
}

#[test]
fn destroy_while_connecting_sends_timeout_rej() {
    // Reference §6.12.
    let mut p = connecting();
    let sent = p.call('a', Event::Destroy { retry_later: false });
    assert!(matches!(sent.as_slice(), [Outgoing::Rej { reason: 4, .. }]));
    p.pump(vec![('a', sent[0])]);
    assert_eq!(p.states(), (State::Destroyed, State::Idle));
    assert!(p.delivered.contains(&('b', UserEvent::RejReceived)));
}

#[test]
fn stale_connection_disconnects_the_old_one() {
    // Reference §6.7: a new REQ reuses the QPN of a live connection: the old one DREQs.
    let mut p = established();
    let sent = p.call('b', Event::StaleConnection);
    assert_eq!(sent, vec![Outgoing::Dreq]);
    // And a REJ STALE_CONN sends the rejected side to timewait.
    let mut q = connecting();
    q.call('b', Event::SendRej { reason: 10 });
    q.pump(vec![('b', *q.wire.last().map(|(_, m)| m).unwrap())]);
    assert_eq!(q.a.cep.state, State::Timewait);
}
