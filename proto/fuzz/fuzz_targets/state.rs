//! Fuzz the state machine: random event sequences against a listener and the CEPs it
//! spawns. Timers armed by actions must always match the states, no transition may
//! produce more actions than fit, and destroying everything must leave no timer armed.
#![no_main]

use cepm_proto::msg_code::MessageCode;
use cepm_proto::state::{transition, Action, Cep, Event, State};
use libfuzzer_sys::fuzz_target;

#[derive(Clone, Copy)]
struct Sim {
    cep: Cep,
    send: bool,
    timewait: bool,
}

fn event(b: u8, p: u8) -> Event {
    let code = [MessageCode::Req, MessageCode::Rep, MessageCode::Other][usize::from(p % 3)];
    match b % 32 {
        0 => Event::Listen,
        1 => Event::SendReq,
        2 => Event::PrepareMra,
        3 => Event::PrepareRep,
        4 => Event::SendRep,
        5 => Event::SendRtu,
        6 => Event::SendRej {
            reason: u16::from(p),
        },
        7 => Event::SendDreq,
        8 => Event::SendDrep,
        9 => Event::Establish,
        10 => Event::SendSidrReq,
        11 => Event::SendSidrRep { status: p },
        12 => Event::Claim,
        13 => Event::Destroy {
            retry_later: p & 1 == 1,
        },
        14 => Event::RxReq,
        15 => Event::RxDupReq,
        16 => Event::RxMra(code),
        17 => Event::RxRej {
            reason: if p & 1 == 1 { 10 } else { u16::from(p) },
        },
        18 => Event::RxRep,
        19 => Event::RxRtu,
        20 => Event::RxDreq {
            qpn_matches: p & 1 == 1,
        },
        21 => Event::RxDrep,
        22 => Event::RxLap,
        23 => Event::RxApr,
        24 => Event::RxSidrReq,
        25 => Event::RxSidrRep,
        26 => Event::StaleConnection,
        27 => Event::SendTimeout,
        28 => Event::SendMra,
        _ => Event::TimewaitExpired,
    }
}

fn step(sim: &mut Sim, ev: Event, spawned: &mut Vec<Sim>) {
    if ev == Event::SendTimeout && sim.send {
        sim.send = false;
    }
    if ev == Event::TimewaitExpired && sim.timewait {
        sim.timewait = false;
    }
    let before = sim.cep;
    match transition(sim.cep, ev) {
        Err(e) => {
            assert!(ev.is_local_call());
            assert_eq!(e.state, before.state);
        }
        Ok(t) => {
            for a in t.actions.as_slice() {
                match a {
                    Action::SendRetried(_) => {
                        assert!(!sim.send);
                        sim.send = true;
                    }
                    Action::CancelSend => {
                        assert!(sim.send);
                        sim.send = false;
                    }
                    Action::ExtendSend => assert!(sim.send),
                    Action::ArmTimewait => {
                        assert!(!sim.timewait);
                        sim.timewait = true;
                    }
                    Action::CancelTimewait => {
                        assert!(sim.timewait);
                        sim.timewait = false;
                    }
                    Action::SpawnConnection => spawned.push(Sim {
                        cep: Cep::spawned_from_req().0,
                        send: false,
                        timewait: false,
                    }),
                    Action::SpawnSidr => spawned.push(Sim {
                        cep: Cep::spawned_from_sidr_req().0,
                        send: false,
                        timewait: false,
                    }),
                    _ => {}
                }
            }
            sim.cep = t.next;
            assert_eq!(
                sim.send,
                sim.cep.state.has_send_timer(),
                "{before:?} {ev:?}"
            );
            assert_eq!(
                sim.timewait,
                sim.cep.state.has_timewait_timer(),
                "{before:?} {ev:?}"
            );
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let mut ceps = vec![Sim {
        cep: Cep::new(),
        send: false,
        timewait: false,
    }];
    for chunk in data.chunks(3) {
        let [target, b, p] = [0, 1, 2].map(|i| chunk.get(i).copied().unwrap_or(0));
        let i = usize::from(target) % ceps.len();
        let mut spawned = Vec::new();
        let mut sim = ceps[i];
        step(&mut sim, event(b, p), &mut spawned);
        ceps[i] = sim;
        if ceps.len() < 16 {
            ceps.extend(spawned);
        }
    }
    for sim in &mut ceps {
        if sim.cep.state != State::Destroyed {
            let mut none = Vec::new();
            step(sim, Event::Destroy { retry_later: false }, &mut none);
        }
        assert!(!sim.send && !sim.timewait);
    }
});
