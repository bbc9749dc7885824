//! Micro-benchmark (not a test): encode and decode per CM attribute, and state-machine
//! transitions per second. Run with `cargo bench -p cepm-proto`; results go to
//! `docs/protocol-core.md` by hand. Single thread, best of several rounds.
// Host-only reporting code: the no-float rule is for what the kernel compiles (src/).
#![allow(clippy::float_arithmetic)]

#[path = "../tests/support/gen.rs"]
mod gen;

use std::hint::black_box;
use std::time::Instant;

use cepm_proto::cm_mad::CmMad;
use cepm_proto::mad::{AttrId, MadHeader, MAD_SIZE};
use cepm_proto::msg_code::MessageCode;
use cepm_proto::state::{transition, Cep, Event};
use gen::Rng;

const ROUNDS: usize = 5;

/// Best-of-ROUNDS nanoseconds per iteration of `f`, run `iters` times per round.
fn bench(iters: u64, mut f: impl FnMut()) -> f64 {
    let mut best = f64::MAX;
    for _ in 0..ROUNDS {
        let start = Instant::now();
        for _ in 0..iters {
            f();
        }
        let ns = start.elapsed().as_nanos() as f64 / iters as f64;
        best = best.min(ns);
    }
    best
}

fn main() {
    let iters = std::env::var("CEPM_BENCH_ITERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(200_000);
    println!("| attribute | encode ns/op | decode ns/op (CmMad::decode) | header + AttrId ns/op |");
    println!("|---|---:|---:|---:|");
    for attr in AttrId::ALL {
        let mads: Vec<CmMad> = (0..64)
            .map(|i| gen::cm_mad_of(&mut Rng::new(i), attr))
            .collect();
        let wires: Vec<[u8; MAD_SIZE]> = mads
            .iter()
            .map(|m| {
                let mut b = [0u8; MAD_SIZE];
                m.encode(&mut b).expect("encodable");
                b
            })
            .collect();
        let mut i = 0usize;
        let mut buf = [0u8; MAD_SIZE];
        let enc = bench(iters, || {
            i = (i + 1) & 63;
            black_box(&mads[i])
                .encode(black_box(&mut buf))
                .expect("encodable");
        });
        let dec = bench(iters, || {
            i = (i + 1) & 63;
            black_box(CmMad::decode(black_box(&wires[i])).expect("decodable"));
        });
        let hdr = bench(iters, || {
            i = (i + 1) & 63;
            let h = MadHeader::decode(black_box(&wires[i])).expect("24 bytes");
            black_box(h.validate_cm().map(AttrId::index).ok());
        });
        println!("| {} | {enc:.1} | {dec:.1} | {hdr:.1} |", attr.name());
    }

    // One full active + passive lifetime: 22 transitions per loop.
    let script: [(bool, Event); 11] = [
        (true, Event::SendReq),
        (true, Event::RxMra(MessageCode::Req)),
        (false, Event::PrepareRep),
        (false, Event::SendRep),
        (true, Event::RxRep),
        (true, Event::SendRtu),
        (false, Event::RxRtu),
        (true, Event::SendDreq),
        (false, Event::RxDreq { qpn_matches: true }),
        (false, Event::SendDrep),
        (true, Event::RxDrep),
    ];
    let tail: [(bool, Event); 2] = [
        (true, Event::TimewaitExpired),
        (false, Event::TimewaitExpired),
    ];
    let per_loop = (script.len() + tail.len() + 2) as f64;
    let ns = bench(iters / 4, || {
        let mut a = Cep::new();
        let mut b = Cep::spawned_from_req().0;
        b = transition(b, Event::Claim).expect("claim").next;
        for (active, ev) in script.iter().chain(tail.iter()) {
            let cep = if *active { &mut a } else { &mut b };
            *cep = transition(*cep, black_box(*ev)).expect("legal").next;
        }
        a = transition(a, Event::Destroy { retry_later: false })
            .expect("destroy")
            .next;
        b = transition(b, Event::Destroy { retry_later: false })
            .expect("destroy")
            .next;
        black_box((a, b));
    });
    let per_transition = ns / per_loop;
    println!();
    println!(
        "state machine: {per_transition:.1} ns/transition, {:.1} M transitions/s ({} per connection lifetime, both sides)",
        1e3 / per_transition,
        per_loop
    );
}
