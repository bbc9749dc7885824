//! Which CEP a REJ is for: every combination of reason, MessageRejected and LocalCommID,
//! against both kinds of CEP, written from Linux's `cm_acquire_rejected_id` and
//! `cm_acquire_id` (a CEP takes a REJ only if the REJ's LocalCommID is its peer's comm ID,
//! which is 0 until the peer has named one) with the one tightening cepm makes: a REJ that
//! does not reject a REQ must name the peer, so LocalCommID 0 is never enough there.

use cepm_proto::msg_code::MessageCode;
use cepm_proto::pdata::PrivateData;
use cepm_proto::rej::Rej;
use cepm_proto::rej_match::RejTarget;

const OURS: u32 = 0x1111_2222;
const PEER: u32 = 0x3333_4444;
const PEER_GUID: u64 = 0x0002_c903_00aa_bbcc;

fn rej(local: u32, rejected: MessageCode, reason: u16, ari: &[u8]) -> Rej {
    Rej {
        local_comm_id: local,
        remote_comm_id: OURS,
        message_rejected: rejected,
        reason,
        ari: PrivateData::new(ari).unwrap(),
        private_data: PrivateData::empty(),
    }
}

/// The CEPs a REJ may be offered to: one that has not heard from its peer (REQ_SENT) and
/// one that has (anything from REP_RCVD or REQ_RCVD on, ESTABLISHED included).
const KNOWS_NOTHING: Option<u32> = None;
const KNOWS_PEER: Option<u32> = Some(PEER);

#[test]
fn a_rej_of_our_req_is_taken_only_before_the_peer_is_known() {
    for local in [0, PEER, 0xdead_beef] {
        let t = rej(local, MessageCode::Req, 28, &[]).target();
        assert_eq!(
            t,
            RejTarget::Local {
                local_comm_id: OURS,
                peer_comm_id: None
            }
        );
        assert!(
            t.accepted_by(KNOWS_NOTHING),
            "REQ_SENT takes it (local {local:#x})"
        );
        assert!(
            !t.accepted_by(KNOWS_PEER),
            "a known peer refuses it (local {local:#x})"
        );
    }
}

#[test]
fn any_other_rej_must_name_the_known_peer() {
    for rejected in [MessageCode::Rep, MessageCode::Other] {
        let spoofed = rej(0, rejected, 28, &[]).target();
        assert!(
            !spoofed.accepted_by(KNOWS_PEER),
            "{rejected:?}: LocalCommID 0 is a spoof"
        );
        assert!(
            !spoofed.accepted_by(KNOWS_NOTHING),
            "{rejected:?}: nor before the REP"
        );
        let wrong = rej(PEER ^ 1, rejected, 28, &[]).target();
        assert!(
            !wrong.accepted_by(KNOWS_PEER),
            "{rejected:?}: another peer's ID"
        );
        let genuine = rej(PEER, rejected, 28, &[]).target();
        assert!(
            genuine.accepted_by(KNOWS_PEER),
            "{rejected:?}: the peer itself"
        );
    }
}

#[test]
fn a_timeout_rej_is_found_by_the_rejectors_ca_guid_and_comm_id() {
    for rejected in [MessageCode::Req, MessageCode::Rep, MessageCode::Other] {
        let t = rej(PEER, rejected, 4, &PEER_GUID.to_be_bytes()).target();
        assert_eq!(
            t,
            RejTarget::Peer {
                comm_id: PEER,
                ca_guid: PEER_GUID
            }
        );
        assert!(t.accepted_by(KNOWS_PEER));
    }
    // Only the first 8 bytes of a longer ARI are the GUID.
    let mut long = [0xeeu8; 20];
    long[..8].copy_from_slice(&PEER_GUID.to_be_bytes());
    let t = rej(PEER, MessageCode::Other, 4, &long).target();
    assert_eq!(
        t,
        RejTarget::Peer {
            comm_id: PEER,
            ca_guid: PEER_GUID
        }
    );
    // A short ARI reads as zero-padded, as Linux reads the raw field.
    let t = rej(PEER, MessageCode::Other, 4, &[0x12, 0x34]).target();
    assert_eq!(
        t,
        RejTarget::Peer {
            comm_id: PEER,
            ca_guid: 0x1234_0000_0000_0000
        }
    );
}
