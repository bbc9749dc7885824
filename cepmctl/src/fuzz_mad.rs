//! `cepmctl fuzz-mad`: a hostile peer that sends cepm a stream of CM MADs, reproducible by
//! seed, through `ib_umad` on another host's port (the peer namespace's rxe1 in the tests),
//! so that cepm sees the traffic exactly as a peer's.
//!
//! Each MAD starts from one of the 12 CM messages, ClassPortInfo or an attribute cepm does
//! not know, well formed by `send-mad`'s templates (`forge.rs`) with random fields: TIDs,
//! service IDs from a given set, and comm IDs, QPNs and GIDs either random or harvested from
//! live connections (`--comm-ids`, `--qpns`, `--gids`). Then it is sent as it is, or damaged: bytes of the body
//! flipped, a header field broken (versions, class, method, status, attribute), or the body
//! cut short (a zero tail). Some are sent twice, and a window of them is reordered.

use std::{io, time::Instant};

use cepm::AttrId;

use crate::{
    forge::{self, Fields},
    rng::Rng,
    umad::{self, MAD_SIZE},
};

/// How the fuzzer is driven.
pub(crate) struct Config {
    pub(crate) device: String,
    pub(crate) port: u32,
    /// The victim's GID.
    pub(crate) to: [u8; 16],
    pub(crate) seed: u64,
    pub(crate) count: u64,
    /// Comm IDs (and SIDR request IDs) of live connections to aim at.
    pub(crate) comm_ids: Vec<u32>,
    /// QPNs of live connections' ends.
    pub(crate) qpns: Vec<u32>,
    /// GIDs of the hosts with live connections.
    pub(crate) gids: Vec<[u8; 16]>,
    /// Service IDs its REQs and SIDR_REQs ask for.
    pub(crate) service_ids: Vec<u64>,
}

/// Attribute IDs cepm does not serve: it must count and drop them.
const UNKNOWN_ATTRS: [u16; 5] = [0x0000, 0x0009, 0x001a, 0x0100, 0xffff];

/// What happened to each MAD, for the summary.
#[derive(Default)]
struct Tally {
    sent: u64,
    /// Refused by the sender's own MAD layer (`EINVAL` from `ib_umad`).
    refused: u64,
    well_formed: u64,
    body_flipped: u64,
    header_broken: u64,
    cut_short: u64,
    unknown_attr: u64,
    duplicates: u64,
    /// Fields filled with a harvested comm ID, QPN or GID.
    harvested: u64,
}

/// One of `harvested` 40 times in 100 when there are any, else `random`'s.
fn harvested<T: Copy>(
    rng: &mut Rng,
    harvested: &[T],
    tally: &mut Tally,
    random: impl FnOnce(&mut Rng) -> T,
) -> T {
    if rng.chance(40) {
        if let Some(&value) = rng.pick(harvested) {
            tally.harvested += 1;
            return value;
        }
    }
    random(rng)
}

fn comm_id(rng: &mut Rng, cfg: &Config, tally: &mut Tally) -> u32 {
    harvested(rng, &cfg.comm_ids, tally, |rng| rng.next_u64() as u32)
}

/// A 24-bit QPN (0 included: cepm must refuse it).
fn qpn(rng: &mut Rng, cfg: &Config, tally: &mut Tally) -> u32 {
    harvested(rng, &cfg.qpns, tally, |rng| rng.below(1 << 24) as u32)
}

/// A GID: a harvested host's, or random bytes.
fn gid(rng: &mut Rng, cfg: &Config, tally: &mut Tally) -> [u8; 16] {
    harvested(rng, &cfg.gids, tally, |rng| {
        let mut gid = [0u8; 16];
        gid[..8].copy_from_slice(&rng.next_u64().to_be_bytes());
        gid[8..].copy_from_slice(&rng.next_u64().to_be_bytes());
        gid
    })
}

/// A well-formed MAD of `attr` with random fields.
fn template(rng: &mut Rng, cfg: &Config, attr: AttrId, tally: &mut Tally) -> [u8; MAD_SIZE] {
    let mut fields = Fields {
        valid: true,
        tid: Some(rng.next_u64()),
        ..Default::default()
    };
    if attr != AttrId::ClassPortInfo {
        fields.local_comm_id = Some(comm_id(rng, cfg, tally));
    }
    if forge::takes_remote_comm_id(attr) {
        fields.remote_comm_id = Some(comm_id(rng, cfg, tally));
    }
    if matches!(attr, AttrId::Req | AttrId::SidrReq) {
        fields.service_id = rng.pick(&cfg.service_ids).copied();
    }
    if matches!(attr, AttrId::Req | AttrId::Rep | AttrId::Dreq) {
        fields.qpn = Some(qpn(rng, cfg, tally));
    }
    // The REQ's primary path names the receiver's GID: the real one half the time.
    if attr == AttrId::Req && rng.chance(50) {
        fields.remote_gid = Some(gid(rng, cfg, tally).into());
    }
    if attr == AttrId::Rej {
        fields.reason = Some(rng.below(40) as u16);
        fields.msg_rejected = Some(rng.below(4) as u8);
        // A GID in the ARI, as REJ 12's (and a timeout REJ's CA GUID, in its first 8 bytes).
        if rng.chance(30) {
            fields.ari = Some(forge::HexBytes(gid(rng, cfg, tally).to_vec()));
        }
    }
    // Every field set applies to `attr` and fits; an all-zero MAD is still fair input.
    fields.mad(attr, 0, &cfg.to).unwrap_or([0; MAD_SIZE])
}

/// The next MAD of the stream.
fn next_mad(rng: &mut Rng, cfg: &Config, tally: &mut Tally) -> [u8; MAD_SIZE] {
    if rng.chance(5) {
        // An attribute cepm does not know, on a well-formed CM header.
        tally.unknown_attr += 1;
        let mut mad = template(rng, cfg, AttrId::Rtu, tally);
        let attr = UNKNOWN_ATTRS[rng.below(UNKNOWN_ATTRS.len() as u64) as usize];
        mad[16..18].copy_from_slice(&attr.to_be_bytes());
        return mad;
    }
    let attr = AttrId::ALL[rng.below(AttrId::ALL.len() as u64) as usize];
    let mut mad = template(rng, cfg, attr, tally);
    match rng.below(10) {
        // Well formed (half of them), so that the state machines get deep.
        0..=4 => tally.well_formed += 1,
        5..=6 => {
            tally.body_flipped += 1;
            for _ in 0..=rng.below(8) {
                let at = 24 + rng.below(MAD_SIZE as u64 - 24) as usize;
                mad[at] ^= 1 << rng.below(8);
            }
        }
        7..=8 => {
            // Base version, class, class version, method, status or attribute ID.
            tally.header_broken += 1;
            let at = [0, 1, 2, 3, 4, 5, 16, 17][rng.below(8) as usize];
            mad[at] = rng.next_u64() as u8;
        }
        _ => {
            tally.cut_short += 1;
            let from = 24 + rng.below(MAD_SIZE as u64 - 24) as usize;
            mad[from..].fill(0);
        }
    }
    mad
}

/// How many MADs apart a long run prints its progress.
const PROGRESS_EVERY: u64 = 100_000;

/// Runs the fuzzer; prints its progress every [`PROGRESS_EVERY`] MADs and one summary line
/// with the rate.
pub(crate) fn run(cfg: &Config) -> io::Result<()> {
    let gid = umad::roce_v2_ipv4_gid(&cfg.device, cfg.port)?;
    // The second copy of a MAD sent twice goes through a second agent: ib_umad refuses a
    // request whose TID an earlier one of the same file still has outstanding
    // (`is_duplicate` in drivers/infiniband/core/user_mad.c), which would turn most
    // duplicates into local refusals, and more or fewer of them as timing goes.
    let mut agents = [
        umad::SendAgent::open(&cfg.device, cfg.port)?,
        umad::SendAgent::open(&cfg.device, cfg.port)?,
    ];
    let mut rng = Rng::new(cfg.seed);
    let mut tally = Tally::default();
    // A window of MADs sent in a shuffled order, as a reordering network would; each with
    // the agent that sends it.
    let mut window: Vec<([u8; MAD_SIZE], usize)> = Vec::with_capacity(5);
    let started = Instant::now();
    let mut made = 0;
    let mut next_progress = PROGRESS_EVERY;
    while made < cfg.count || !window.is_empty() {
        if made < cfg.count {
            let mad = next_mad(&mut rng, cfg, &mut tally);
            made += 1;
            if rng.chance(5) {
                tally.duplicates += 1;
                window.push((mad, 1));
            }
            window.push((mad, 0));
            if window.len() < 4 && made < cfg.count {
                continue;
            }
        }
        while !window.is_empty() {
            let (mad, agent) = window.swap_remove(rng.below(window.len() as u64) as usize);
            match agents[agent].send(gid.index, cfg.to, &mad) {
                Ok(()) => tally.sent += 1,
                // Our own ib_umad refused it (a request whose TID another of the same agent
                // still has outstanding: two random TIDs alike); it never left this host.
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => tally.refused += 1,
                Err(e) => return Err(e),
            }
        }
        // A long run (10⁶ MADs take about 45 minutes under KASAN) reports as it goes, so that
        // a run stopped at its time limit still says how far it got: one line for each
        // multiple of PROGRESS_EVERY below the count, once the MADs up to it have gone.
        if made >= next_progress && next_progress < cfg.count {
            let secs = started.elapsed().as_secs_f64();
            println!(
                "fuzz-mad: {next_progress} of {} MADs so far ({} sent with the duplicates) in {:.0} s ({:.0} sent/s)",
                cfg.count,
                tally.sent,
                secs,
                tally.sent as f64 / secs.max(1e-9)
            );
            next_progress += PROGRESS_EVERY;
        }
    }
    let secs = started.elapsed().as_secs_f64();
    println!(
        "fuzz-mad: seed {}: {} MADs sent in {:.1} s ({:.0} MADs/s), {} refused by our own MAD layer: {} well formed, {} with flipped body bytes, {} with a broken header, {} cut short, {} of unknown attributes, {} sent twice, {} harvested comm IDs, QPNs and GIDs used",
        cfg.seed,
        tally.sent,
        secs,
        tally.sent as f64 / secs.max(1e-9),
        tally.refused,
        tally.well_formed,
        tally.body_flipped,
        tally.header_broken,
        tally.cut_short,
        tally.unknown_attr,
        tally.duplicates,
        tally.harvested,
    );
    Ok(())
}
