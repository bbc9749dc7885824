//! Writes the fuzzer's seed corpus: a few valid MADs of every CM attribute (as our encoder
//! produces them) plus event scripts for the state-machine target.
//!
//! usage: `fuzz_seeds DECODE_DIR STATE_DIR`

#[path = "../tests/support/gen.rs"]
mod gen;

use std::path::Path;
use std::process::ExitCode;

use cepm_proto::mad::{AttrId, MAD_SIZE};
use gen::Rng;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let (Some(decode), Some(state)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: fuzz_seeds DECODE_DIR STATE_DIR");
        return ExitCode::from(2);
    };
    let write = |dir: &str, name: String, bytes: &[u8]| {
        std::fs::create_dir_all(dir).and_then(|()| std::fs::write(Path::new(dir).join(name), bytes))
    };
    for attr in AttrId::ALL {
        for i in 0..2u64 {
            let mad = gen::cm_mad_of(&mut Rng::new(0x5eed + i), attr);
            let mut buf = [0u8; MAD_SIZE];
            if mad.encode(&mut buf).is_err() {
                return ExitCode::FAILURE;
            }
            if write(decode, format!("seed-{}-{i}", attr.name()), &buf).is_err() {
                eprintln!("fuzz_seeds: cannot write to {decode}");
                return ExitCode::FAILURE;
            }
        }
    }
    // (target, event, parameter) triples; see fuzz_targets/state.rs for the event codes.
    let scripts: [(&str, &[u8]); 3] = [
        // Listen, REQ arrives, claim the child, prepare + send REP, RTU, DREQ, DREP, timewait.
        (
            "passive",
            &[
                0, 0, 0, 0, 14, 0, 1, 12, 0, 1, 3, 0, 1, 4, 0, 1, 19, 0, 1, 20, 1, 1, 8, 0, 1, 29,
                0,
            ],
        ),
        // REQ, MRA, REP, RTU, crossing DREQs, DREP.
        (
            "active",
            &[
                0, 1, 0, 0, 16, 0, 0, 18, 0, 0, 5, 0, 0, 7, 0, 0, 20, 1, 0, 21, 0, 0, 29, 0,
            ],
        ),
        // SIDR both ways and timeouts.
        (
            "sidr",
            &[
                0, 10, 0, 0, 27, 0, 0, 10, 0, 0, 25, 0, 0, 0, 0, 0, 24, 0, 1, 11, 0,
            ],
        ),
    ];
    for (name, bytes) in scripts {
        if write(state, format!("seed-{name}"), bytes).is_err() {
            eprintln!("fuzz_seeds: cannot write to {state}");
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}
