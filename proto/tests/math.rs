//! Timer math and QP attribute derivation.

#[path = "support/gen.rs"]
mod gen;

use cepm_proto::qp_attr::*;
use cepm_proto::req::{Req, Transport};
use cepm_proto::state::State;
use cepm_proto::timing::*;
use gen::Rng;

/// Linux's `cm_ack_timeout` transcribed with C `int` semantics, as an independent check.
fn linux_cm_ack_timeout(ca_ack_delay: u8, packet_life_time: u8) -> u8 {
    let delay = i32::from(ca_ack_delay);
    let mut ack = i32::from(packet_life_time) + 1;
    if ack >= delay {
        ack += i32::from(delay >= ack - 1);
    } else {
        ack = delay + i32::from(ack >= delay - 1);
    }
    ack.min(31) as u8
}

#[test]
fn ack_timeout_matches_linux_for_every_input() {
    for delay in 0..=u8::MAX {
        for plt in 0..=u8::MAX {
            let t = ack_timeout(delay, plt);
            assert_eq!(
                t,
                linux_cm_ack_timeout(delay, plt),
                "delay {delay} plt {plt}"
            );
            assert!(t <= 31);
            // It approximates 2·PLT + delay (in 4.096 µs units) within [2/3, 2]x when no
            // clamping happens.
            if delay <= 29 && plt <= 28 && t < 31 {
                let want = 2u64 * (1 << plt) + (1u64 << delay);
                let got = 1u64 << t;
                assert!(
                    3 * got >= 2 * want && got <= 2 * want,
                    "delay {delay} plt {plt} t {t}"
                );
            }
        }
    }
}

#[test]
fn time_units_are_monotonic_and_total() {
    let mut prev = 0;
    for t in 0..=u8::MAX {
        let ms = linux_ms(t);
        assert!(ms >= prev);
        prev = ms;
        assert_eq!(iba_time_ns(t), 4096u64 << t.min(31));
        // Linux's ms approximation stays within 0.5x..1.1x of the real time from t = 8 on.
        if (8..=31).contains(&t) {
            let real_us = iba_time_us(t);
            let approx_us = u64::from(ms) * 1000;
            assert!(
                approx_us <= real_us * 11 / 10 && approx_us * 2 >= real_us,
                "t {t}"
            );
        }
        assert!(iba_time_ms_ceil(t) * 1_000_000 >= iba_time_ns(t));
        assert_eq!(exponent_at_least_ns(iba_time_ns(t)), t.min(31));
    }
    for a in 0..=u8::MAX {
        for b in 0..=u8::MAX {
            let r = RetryTimer::req(a, b, b);
            assert!(r.budget_ms() >= u64::from(r.timeout_ms));
            let _ = r.after_mra(a, b).destroy_wait_ms();
            let _ = active_ack_timeout_after_rep(a, b);
            assert!(av_timeout_from_packet_life_time(a) <= 31);
        }
    }
}

#[test]
fn rdma_cm_defaults_on_rxe() {
    // Reference §0.5: REQ 16 × 4.608 s ≈ 74 s; REP 16 × 4.096 s ≈ 65 s; MRA ≈ 65.5 s;
    // timewait 512 ms with local ACK timeout 17.
    let req = RetryTimer::req(
        CMA_IBOE_PACKET_LIFETIME,
        CMA_CM_RESPONSE_TIMEOUT,
        CMA_MAX_CM_RETRIES,
    );
    assert_eq!(
        (req.timeout_ms, req.retries, req.budget_ms()),
        (4608, 15, 73_728)
    );
    let rep = RetryTimer::rep(CMA_CM_RESPONSE_TIMEOUT, CMA_MAX_CM_RETRIES);
    assert_eq!(rep.budget_ms(), 65_536);
    let ack = ack_timeout(15, CMA_IBOE_PACKET_LIFETIME);
    assert_eq!(ack, 17);
    assert_eq!(timewait_ms(ack), 512);
    assert_eq!(
        req.after_mra(MRA_SERVICE_TIMEOUT, ack).timeout_ms,
        65_536 + 512
    );
    assert_eq!(passive_packet_life_time(17), 16);
    assert_eq!(passive_packet_life_time(0), 0);
    assert_eq!(req.destroy_wait_ms(), 15 * 4608 * 5 / 4);
}

#[test]
fn both_sides_keep_the_reqs_pkey_and_their_packet_lifetime() {
    for seed in 0..500 {
        let mut r = Rng::new(seed);
        let req = gen::req(&mut r);
        let plt = (seed % 32) as u8;
        let active = Negotiated::active(&req, plt, 0, 1);
        let passive = Negotiated::passive(&req, 0, 1);
        assert_eq!((active.pkey, active.packet_life_time), (req.pkey, plt));
        assert_eq!(
            (passive.pkey, passive.packet_life_time),
            (
                req.pkey,
                passive_packet_life_time(req.primary_path.local_ack_timeout)
            )
        );
    }
}

fn negotiate(seed: u64, transport: Transport) -> (Negotiated, Negotiated, u32, u32) {
    let mut r = Rng::new(seed);
    let mut req = gen::req(&mut r);
    req.transport = transport;
    let mut rep = gen::rep(&mut r);
    let passive_qpn = rep.local_qpn;
    let mut active = Negotiated::active(&req, 16, 0, 1);
    let sent = req.for_transport();
    let mut passive = Negotiated::passive(&sent, 0, 1);
    passive.apply_sent_rep(&rep);
    if transport == Transport::Xrc {
        rep = rep.for_xrc_target();
    }
    active.apply_received_rep(&rep);
    (active, passive, req.local_qpn, passive_qpn)
}

#[test]
fn both_sides_agree_on_psns_and_resources() {
    for seed in 0..500 {
        let (a, p, a_qpn, p_qpn) = negotiate(seed, Transport::Rc);
        let rtr = |n: &Negotiated| derive(State::Established, QpState::Rtr, n).unwrap();
        let rts = |n: &Negotiated| derive(State::Established, QpState::Rts, n).unwrap();
        // Each side's SQ starts where the other's RQ expects.
        assert_eq!(rts(&a).sq_psn, rtr(&p).rq_psn);
        assert_eq!(rts(&p).sq_psn, rtr(&a).rq_psn);
        // Each side's outstanding reads fit the other's responder resources.
        assert_eq!(rts(&a).max_rd_atomic, rtr(&p).max_dest_rd_atomic);
        assert_eq!(rts(&p).max_rd_atomic, rtr(&a).max_dest_rd_atomic);
        assert_eq!(rtr(&a).dest_qp_num, p_qpn);
        assert_eq!(rtr(&p).dest_qp_num, a_qpn);
        assert_eq!(rtr(&a).path_mtu, rtr(&p).path_mtu);
        assert_eq!(rts(&p).retry_cnt, rts(&a).retry_cnt);
    }
}

#[test]
fn masks_per_transport_follow_linux() {
    let (a, p, ..) = negotiate(1, Transport::Rc);
    let init = derive(State::ReqSent, QpState::Init, &a).unwrap();
    assert_eq!(
        init.mask,
        MASK_STATE | MASK_ACCESS_FLAGS | MASK_PKEY_INDEX | MASK_PORT
    );
    assert_eq!(init.qp_state, 1);
    let rtr = derive(State::RepRcvd, QpState::Rtr, &a).unwrap();
    assert_eq!(
        rtr.mask,
        MASK_STATE
            | MASK_AV
            | MASK_PATH_MTU
            | MASK_DEST_QPN
            | MASK_RQ_PSN
            | MASK_MAX_DEST_RD_ATOMIC
            | MASK_MIN_RNR_TIMER
    );
    let rts = derive(State::RepRcvd, QpState::Rts, &a).unwrap();
    assert_eq!(
        rts.mask,
        MASK_STATE
            | MASK_SQ_PSN
            | MASK_RETRY_CNT
            | MASK_RNR_RETRY
            | MASK_MAX_QP_RD_ATOMIC
            | MASK_TIMEOUT
    );
    assert_eq!(rts.timeout, a.ack_timeout);
    // Passive RTS before the REP: allowed ("Allow transition to RTS before sending REP").
    assert!(derive(State::ReqRcvd, QpState::Rts, &p).is_ok());

    let (ua, ..) = negotiate(2, Transport::Uc);
    assert_eq!(
        derive(State::RepRcvd, QpState::Rtr, &ua).unwrap().mask & MASK_MAX_DEST_RD_ATOMIC,
        0
    );
    assert_eq!(
        derive(State::RepRcvd, QpState::Rts, &ua).unwrap().mask,
        MASK_STATE | MASK_SQ_PSN
    );

    let (xa, xp, _, xp_qpn) = negotiate(3, Transport::Xrc);
    assert_eq!(xa.qp_type, QpType::XrcIni);
    assert_eq!(xp.qp_type, QpType::XrcTgt);
    assert_eq!(xa.remote_qpn, Some(xp_qpn));
    assert_eq!(
        derive(State::RepRcvd, QpState::Rtr, &xa).unwrap().mask & MASK_MAX_DEST_RD_ATOMIC,
        0
    );
    assert_eq!(
        derive(State::RepSent, QpState::Rts, &xp).unwrap().mask,
        MASK_STATE | MASK_SQ_PSN | MASK_TIMEOUT
    );
    assert_ne!(
        derive(State::RepSent, QpState::Rtr, &xp).unwrap().mask & MASK_MAX_DEST_RD_ATOMIC,
        0
    );
}

/// What an XRC initiator's REQ and an XRC target's REP leave out or move (`cm_format_req`,
/// `cm_format_rep`): the other transports' messages are left as they are.
#[test]
fn xrc_messages_as_linux_formats_them() {
    let mut r = Rng::new(7);
    let mut req = gen::req(&mut r);
    req.responder_resources = 4;
    req.retry_count = 5;
    req.rnr_retry_count = 6;
    req.srq = true;
    // (transport, responder resources, retry count, RNR retry count, SRQ) sent.
    let table = [
        (Transport::Rc, 4, 5, 6, true),
        (Transport::Uc, 4, 5, 6, true),
        (Transport::Xrc, 0, 0, 0, false),
    ];
    for (transport, rr, retry, rnr, srq) in table {
        let sent = Req { transport, ..req }.for_transport();
        let got = (
            sent.responder_resources,
            sent.retry_count,
            sent.rnr_retry_count,
            sent.srq,
        );
        assert_eq!(got, (rr, retry, rnr, srq), "{transport:?}");
        assert_eq!(sent.local_qpn, req.local_qpn);
        assert_eq!(sent.initiator_depth, req.initiator_depth);
    }

    let mut rep = gen::rep(&mut r);
    rep.local_qpn = 0x00a1c2;
    rep.local_eecn = 0;
    rep.initiator_depth = 3;
    rep.end_to_end_flow_control = true;
    rep.srq = false;
    let tgt = rep.for_xrc_target();
    assert_eq!((tgt.local_qpn, tgt.local_eecn), (0, 0x00a1c2));
    assert_eq!(
        (tgt.initiator_depth, tgt.end_to_end_flow_control, tgt.srq),
        (0, false, true)
    );
    assert_eq!(tgt.responder_resources, rep.responder_resources);
    assert_eq!(tgt.starting_psn, rep.starting_psn);
    // The initiator reads the QPN where its target put it; anyone else reads LocalQPN.
    assert_eq!(tgt.sender_qpn(true), 0x00a1c2);
    assert_eq!(rep.sender_qpn(false), 0x00a1c2);
    assert_eq!(tgt.sender_qpn(false), 0);
}

/// The XRC roles' masks in full: an initiator's RTR has no responder resources or RNR timer,
/// a target's RTS no retry counts or initiator depth (`cm_init_qp_rtr_attr`,
/// `cm_init_qp_rts_attr`); INIT is the same for both.
#[test]
fn xrc_masks_per_role() {
    let (xa, xp, ..) = negotiate(5, Transport::Xrc);
    let init = MASK_STATE | MASK_ACCESS_FLAGS | MASK_PKEY_INDEX | MASK_PORT;
    let rtr = MASK_STATE | MASK_AV | MASK_PATH_MTU | MASK_DEST_QPN | MASK_RQ_PSN;
    let rts = MASK_STATE | MASK_SQ_PSN | MASK_TIMEOUT;
    // (negotiated, state, [INIT, RTR, RTS] masks)
    let table = [
        (
            &xa,
            State::RepRcvd,
            [
                init,
                rtr,
                rts | MASK_RETRY_CNT | MASK_RNR_RETRY | MASK_MAX_QP_RD_ATOMIC,
            ],
        ),
        (
            &xp,
            State::ReqRcvd,
            [
                init,
                rtr | MASK_MAX_DEST_RD_ATOMIC | MASK_MIN_RNR_TIMER,
                rts,
            ],
        ),
    ];
    for (n, state, masks) in table {
        for (target, mask) in [QpState::Init, QpState::Rtr, QpState::Rts]
            .into_iter()
            .zip(masks)
        {
            let got = derive(state, target, n).unwrap().mask;
            assert_eq!(got, mask, "{:?} {target:?}: {got:#x}", n.qp_type);
        }
    }
    // The numbers cep_xrc.sh checks on the wire's far side, through INIT_QP_ATTR.
    assert_eq!(rtr, 0x10_1181);
    assert_eq!(
        rts | MASK_RETRY_CNT | MASK_RNR_RETRY | MASK_MAX_QP_RD_ATOMIC,
        0x1_2e01
    );
}

#[test]
fn access_flags_and_state_rules() {
    let (mut a, ..) = negotiate(4, Transport::Rc);
    a.responder_resources = 0;
    assert_eq!(
        derive(State::Established, QpState::Init, &a)
            .unwrap()
            .access_flags,
        ACCESS_REMOTE_WRITE
    );
    a.responder_resources = 1;
    a.device_supports_flush = true;
    assert_eq!(
        derive(State::Established, QpState::Init, &a)
            .unwrap()
            .access_flags,
        ACCESS_REMOTE_WRITE
            | ACCESS_REMOTE_READ
            | ACCESS_REMOTE_ATOMIC
            | ACCESS_FLUSH_GLOBAL
            | ACCESS_FLUSH_PERSISTENT
    );
    a.has_alternate_path = true;
    let rts = derive(State::Established, QpState::Rts, &a).unwrap();
    assert_eq!(
        (rts.mask & MASK_PATH_MIG_STATE != 0, rts.path_mig_state),
        (true, MIG_REARM)
    );
    for state in State::ALL {
        for target in [QpState::Init, QpState::Rtr, QpState::Rts] {
            let ok = derive(state, target, &a).is_ok();
            let want = match target {
                QpState::Init => state.allows_qp_init(),
                _ => state.allows_qp_rtr_rts(),
            };
            assert_eq!(ok, want, "{state:?} {target:?}");
        }
    }
    // Active RTR before the REP, passive RTR before the request is claimed: not negotiated.
    let mut r = Rng::new(9);
    let req = gen::req(&mut r);
    let active = Negotiated::active(&req, 16, 0, 1);
    assert_eq!(
        derive(State::Established, QpState::Rtr, &active),
        Err(QpAttrError::NotNegotiated)
    );
    let mut passive = Negotiated::passive(&req, 0, 1);
    assert_eq!(
        derive(State::ReqRcvd, QpState::Rtr, &passive),
        Err(QpAttrError::NotNegotiated)
    );
    assert_eq!(
        derive(State::Idle, QpState::Init, &passive),
        Err(QpAttrError::WrongState(State::Idle))
    );
    // Claimed: INIT, RTR and RTS before the REP is prepared, as cm.c allows in REQ_RCVD.
    passive.choose_rq_psn(0x0123_4567);
    for target in [QpState::Init, QpState::Rtr, QpState::Rts] {
        assert!(
            derive(State::ReqRcvd, target, &passive).is_ok(),
            "{target:?}"
        );
    }
    let rtr = derive(State::ReqRcvd, QpState::Rtr, &passive).unwrap();
    assert_eq!((rtr.rq_psn, rtr.dest_qp_num), (0x23_4567, req.local_qpn));
    assert_eq!(
        derive(State::ReqRcvd, QpState::Rts, &passive)
            .unwrap()
            .sq_psn,
        req.starting_psn
    );
}

/// The PSN a REP may announce, by whether RTR was given out and which PSN the REP carries:
/// any until RTR's receive PSN is given out, that one only after.
#[test]
fn rep_psn_after_rtr_given_out() {
    let mut r = Rng::new(10);
    let req = gen::req(&mut r);
    let chosen = 0x00ab_cdef;
    // (targets given out before PREPARE_REP, the REP's PSN, allowed)
    let table: &[(&[QpState], u32, bool)] = &[
        (&[], chosen, true),
        (&[], chosen + 1, true),
        (&[QpState::Init], chosen + 1, true),
        (&[QpState::Init, QpState::Rts], 0, true),
        (&[QpState::Rtr], chosen, true),
        (&[QpState::Rtr], chosen + 1, false),
        (&[QpState::Rtr], 0, false),
        (&[QpState::Init, QpState::Rtr, QpState::Rts], chosen, true),
        (
            &[QpState::Init, QpState::Rtr, QpState::Rts],
            chosen ^ 1,
            false,
        ),
    ];
    for &(given, psn, allowed) in table {
        let mut n = Negotiated::passive(&req, 0, 1);
        n.choose_rq_psn(chosen);
        for &target in given {
            assert!(n.give_out(State::ReqRcvd, target).is_ok(), "{target:?}");
        }
        let want = if allowed {
            Ok(())
        } else {
            Err(QpAttrError::PsnGivenOut)
        };
        assert_eq!(
            n.check_rep_psn(psn),
            want,
            "{given:?} then a REP with {psn:#x}"
        );
    }
    // A failed derivation gives nothing out; the REP's PSN, once sent, is the RQ PSN.
    let mut n = Negotiated::passive(&req, 0, 1);
    assert_eq!(
        n.give_out(State::ReqRcvd, QpState::Rtr),
        Err(QpAttrError::NotNegotiated)
    );
    assert!(!n.rq_psn_given_out);
    n.choose_rq_psn(chosen);
    assert_eq!(
        n.give_out(State::Idle, QpState::Rtr),
        Err(QpAttrError::WrongState(State::Idle))
    );
    assert_eq!(n.check_rep_psn(chosen + 1), Ok(()));
    let mut rep = gen::rep(&mut r);
    rep.starting_psn = chosen + 1;
    n.apply_sent_rep(&rep);
    assert_eq!(
        n.give_out(State::RepSent, QpState::Rtr).unwrap().rq_psn,
        chosen + 1
    );
}
