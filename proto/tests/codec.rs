//! Wire codec tests: round trips for all 12 attributes, hostile input, bounds.

#[path = "support/gen.rs"]
mod gen;

use cepm_proto::cm_mad::{CmMad, CmMsg};
use cepm_proto::error::{DecodeError, EncodeError};
use cepm_proto::mad::{AttrId, MadHeader, MAD_SIZE, METHOD_GET, METHOD_SEND};
use cepm_proto::pdata::PrivateData;
use cepm_proto::{apr, drep, dreq, lap, mra, msg_code, rej, rep, req, rtu, sidr_rep, sidr_req};
use gen::Rng;
use proptest::prelude::*;

fn encode(mad: &CmMad) -> [u8; MAD_SIZE] {
    let mut buf = [0xA5u8; MAD_SIZE];
    mad.encode(&mut buf)
        .expect("generator produces encodable messages");
    buf
}

fn valid(attr: AttrId, seed: u64) -> [u8; MAD_SIZE] {
    encode(&gen::cm_mad_of(&mut Rng::new(seed), attr))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// decode(encode(m)) == m for every attribute, and encode is a pure function of m
    /// (the 0xA5 garbage in the buffer never leaks through: reserved bits are zero).
    #[test]
    fn every_attribute_round_trips(seed in any::<u64>()) {
        for attr in AttrId::ALL {
            let mad = gen::cm_mad_of(&mut Rng::new(seed), attr);
            let bytes = encode(&mad);
            let mut clean = [0u8; MAD_SIZE];
            mad.encode(&mut clean).unwrap();
            prop_assert_eq!(&bytes[..], &clean[..]);
            prop_assert_eq!(CmMad::decode(&bytes), Ok(mad));
        }
    }

    /// Hostile bytes never panic; whatever decodes re-encodes to bytes that decode to the
    /// same value (the decoder keeps nothing it cannot write back).
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        if let Ok(mad) = CmMad::decode(&bytes) {
            let again = encode(&mad);
            prop_assert_eq!(CmMad::decode(&again), Ok(mad));
        }
        for attr in AttrId::ALL {
            let _ = CmMsg::decode_as(attr, &bytes);
        }
        let _ = cepm_proto::cma_hdr::CmaHdr::decode(&bytes);
    }

    /// Flipping any single byte of a valid MAD never panics the decoder.
    #[test]
    fn single_byte_corruption_never_panics(seed in any::<u64>(), pos in 0usize..MAD_SIZE, val in any::<u8>()) {
        let mut bytes = encode(&gen::cm_mad(&mut Rng::new(seed)));
        bytes[pos] = val;
        let _ = CmMad::decode(&bytes);
    }
}

#[test]
fn truncated_mads_are_errors_for_every_length() {
    for attr in AttrId::ALL {
        let bytes = valid(attr, 7);
        for len in 0..MAD_SIZE {
            assert_eq!(
                CmMad::decode(&bytes[..len]),
                Err(DecodeError::Truncated(len))
            );
            assert_eq!(
                CmMsg::decode_as(attr, &bytes[..len]),
                Err(DecodeError::Truncated(len))
            );
        }
        // Longer buffers are fine: the excess is ignored.
        let mut long = bytes.to_vec();
        long.extend_from_slice(&[0xff; 16]);
        assert!(CmMad::decode(&long).is_ok());
    }
}

#[test]
fn header_rules() {
    let base = valid(AttrId::Req, 1);
    let cases: [(usize, u8, DecodeError); 5] = [
        (0, 2, DecodeError::BadBaseVersion(2)),
        (1, 0x04, DecodeError::NotCmClass(0x04)),
        (2, 1, DecodeError::BadClassVersion(1)),
        (2, 3, DecodeError::BadClassVersion(3)),
        (3, METHOD_GET, DecodeError::BadMethod(METHOD_GET)),
    ];
    for (pos, val, err) in cases {
        let mut b = base;
        b[pos] = val;
        assert_eq!(CmMad::decode(&b), Err(err), "byte {pos} = {val}");
    }
    for method in [0x00, 0x01, 0x02, 0x05, 0x06, 0x07, 0x81, 0x83] {
        let mut b = base;
        b[3] = method;
        assert_eq!(CmMad::decode(&b), Err(DecodeError::BadMethod(method)));
    }
    // ClassPortInfo travels as Get/GetResp, not SEND.
    let mut cpi = valid(AttrId::ClassPortInfo, 1);
    cpi[3] = METHOD_SEND;
    assert_eq!(
        CmMad::decode(&cpi),
        Err(DecodeError::BadMethod(METHOD_SEND))
    );
    for attr in (0u16..=0xffff)
        .filter(|a| AttrId::from_u16(*a).is_none())
        .step_by(97)
    {
        let mut b = base;
        b[16..18].copy_from_slice(&attr.to_be_bytes());
        assert_eq!(CmMad::decode(&b), Err(DecodeError::UnknownAttribute(attr)));
    }
    for attr in [0x0000, 0x0002, 0x000f, 0x001b, 0x0020, 0xffff] {
        let mut b = base;
        b[16..18].copy_from_slice(&u16::to_be_bytes(attr));
        assert_eq!(CmMad::decode(&b), Err(DecodeError::UnknownAttribute(attr)));
    }
}

#[test]
fn reserved_transport_types() {
    let base = valid(AttrId::Req, 3);
    // TransportServiceType is bits 5..7 of data byte 43, ExtendedTransportType bits 5..8 of 51.
    for transport in 0u8..4 {
        for extended in 0u8..8 {
            let mut b = base;
            b[24 + 43] = (b[24 + 43] & !0x06) | (transport << 1);
            b[24 + 51] = (b[24 + 51] & !0x07) | extended;
            let ok = matches!((transport, extended), (0, _) | (1, _) | (3, 1));
            let got = req::Req::decode(&b);
            if ok {
                assert!(got.is_ok(), "{transport}/{extended}");
            } else {
                assert_eq!(
                    got,
                    Err(DecodeError::ReservedTransport {
                        transport,
                        extended
                    })
                );
            }
        }
    }
}

#[test]
fn zero_qpn_where_forbidden() {
    let mut r = Rng::new(11);
    let mut b = [0u8; MAD_SIZE];

    let mut m = gen::req(&mut r);
    m.local_qpn = 0;
    assert_eq!(
        m.encode(&mut b),
        Err(EncodeError::FieldOutOfRange("req.local_qpn"))
    );
    let mut ok = valid(AttrId::Req, 5);
    ok[24 + 32..24 + 35].fill(0);
    assert_eq!(
        req::Req::decode(&ok),
        Err(DecodeError::ZeroQpn(AttrId::Req))
    );

    let mut ok = valid(AttrId::Rep, 5);
    ok[24 + 12..24 + 15].fill(0);
    let eecn_zero = u32::from_be_bytes([0, ok[24 + 16], ok[24 + 17], ok[24 + 18]]) == 0;
    assert_eq!(rep::Rep::decode(&ok).is_err(), eecn_zero);
    ok[24 + 16..24 + 19].fill(0);
    assert_eq!(
        rep::Rep::decode(&ok),
        Err(DecodeError::ZeroQpn(AttrId::Rep))
    );

    let mut ok = valid(AttrId::Dreq, 5);
    ok[24 + 8..24 + 11].fill(0);
    assert_eq!(
        dreq::Dreq::decode(&ok),
        Err(DecodeError::ZeroQpn(AttrId::Dreq))
    );

    let mut ok = valid(AttrId::Lap, 5);
    ok[24 + 12..24 + 15].fill(0);
    assert_eq!(
        lap::Lap::decode(&ok),
        Err(DecodeError::ZeroQpn(AttrId::Lap))
    );

    let mut m = gen::sidr_rep(&mut r);
    m.status = sidr_rep::status::SUCCESS;
    m.qpn = 0;
    assert!(m.encode(&mut b).is_err());
    m.status = sidr_rep::status::UNSUPPORTED;
    m.encode(&mut b).unwrap();
    assert_eq!(sidr_rep::SidrRep::decode(&b), Ok(m));
    b[24 + 4] = 0;
    assert_eq!(
        sidr_rep::SidrRep::decode(&b),
        Err(DecodeError::ZeroQpn(AttrId::SidrRep))
    );
}

/// REJ and APR: an info length over the 72-byte block is clamped, so that the peer's REJ or
/// APR is still heard (dropping it leaves the peer retrying); SIDR_REP still refuses it.
#[test]
fn info_lengths_over_72_are_clamped_in_rej_and_apr_and_errors_in_sidr_rep() {
    for len in 0u8..=127 {
        let mut b = valid(AttrId::Rej, 9);
        b[24 + 9] = (len << 1) | (b[24 + 9] & 1);
        let rej = rej::Rej::decode(&b).unwrap();
        let kept = usize::from(len).min(72);
        assert_eq!(rej.ari.len(), kept, "RejectedInfoLength {len}");
        assert_eq!(rej.ari.as_bytes(), &b[24 + 12..24 + 12 + kept]);
    }
    for len in 0u8..=255 {
        let mut b = valid(AttrId::Apr, 9);
        b[24 + 8] = len;
        let mut s = valid(AttrId::SidrRep, 9);
        s[24 + 5] = len;
        let apr = apr::Apr::decode(&b).unwrap();
        let kept = usize::from(len).min(72);
        assert_eq!(
            apr.additional_info.len(),
            kept,
            "AdditionalInfoLength {len}"
        );
        assert_eq!(apr.additional_info.as_bytes(), &b[24 + 12..24 + 12 + kept]);
        if len <= 72 {
            assert_eq!(
                sidr_rep::SidrRep::decode(&s).unwrap().additional_info.len(),
                usize::from(len)
            );
        } else {
            assert_eq!(
                sidr_rep::SidrRep::decode(&s),
                Err(DecodeError::InfoTooLong(AttrId::SidrRep, len))
            );
        }
    }
}

#[test]
fn reserved_message_codes() {
    // A REJ's MessageRejected 3 reads as OTHER: the REJ is still the peer's word.
    let mut b = valid(AttrId::Rej, 2);
    b[24 + 8] |= 0xc0;
    let rej = rej::Rej::decode(&b).unwrap();
    assert_eq!(rej.message_rejected, msg_code::MessageCode::Other);
    assert_eq!(
        rej,
        rej::Rej::decode(&valid(AttrId::Rej, 2))
            .map(|r| rej::Rej {
                message_rejected: msg_code::MessageCode::Other,
                ..r
            })
            .unwrap()
    );
    let mut b = valid(AttrId::Mra, 2);
    b[24 + 8] |= 0xc0;
    assert_eq!(
        mra::Mra::decode(&b),
        Err(DecodeError::ReservedMessageCode(AttrId::Mra, 3))
    );
}

#[test]
fn private_data_capacities_match_linux() {
    // enum ib_cm_data_size in include/rdma/ib_cm.h.
    assert_eq!(req::REQ_PRIVATE_DATA_SIZE, 92);
    assert_eq!(mra::MRA_PRIVATE_DATA_SIZE, 222);
    assert_eq!(rej::REJ_PRIVATE_DATA_SIZE, 148);
    assert_eq!(rep::REP_PRIVATE_DATA_SIZE, 196);
    assert_eq!(rtu::RTU_PRIVATE_DATA_SIZE, 224);
    assert_eq!(dreq::DREQ_PRIVATE_DATA_SIZE, 220);
    assert_eq!(drep::DREP_PRIVATE_DATA_SIZE, 224);
    assert_eq!(lap::LAP_PRIVATE_DATA_SIZE, 168);
    assert_eq!(apr::APR_PRIVATE_DATA_SIZE, 148);
    assert_eq!(sidr_req::SIDR_REQ_PRIVATE_DATA_SIZE, 216);
    assert_eq!(sidr_rep::SIDR_REP_PRIVATE_DATA_SIZE, 136);
    assert_eq!(cepm_proto::pdata::INFO_SIZE, 72);
}

#[test]
fn private_data_boundaries_and_padding() {
    fn check<const N: usize>() {
        assert!(PrivateData::<N>::new(&vec![1; N]).is_ok());
        assert_eq!(
            PrivateData::<N>::new(&vec![1; N + 1]),
            Err(EncodeError::TooLong { len: N + 1, max: N })
        );
        assert!(PrivateData::<N>::new(&[]).unwrap().is_empty());
    }
    check::<92>();
    check::<196>();
    check::<224>();
    check::<220>();
    check::<148>();
    check::<222>();
    check::<168>();
    check::<216>();
    check::<136>();
    check::<72>();

    // Short data goes out zero-padded and comes back full length.
    let mut m = gen::rep(&mut Rng::new(4));
    m.private_data = PrivateData::new(&[7, 8, 9]).unwrap();
    let mut b = [0xffu8; MAD_SIZE];
    m.encode(&mut b).unwrap();
    let back = rep::Rep::decode(&b).unwrap();
    assert_eq!(back.private_data.len(), 196);
    assert_eq!(&back.private_data.as_bytes()[..3], &[7, 8, 9]);
    assert!(back.private_data.as_bytes()[3..].iter().all(|&x| x == 0));
}

#[test]
fn encode_rejects_values_wider_than_fields() {
    let mut b = [0u8; MAD_SIZE];
    let mut r = Rng::new(1);
    let base = gen::req(&mut r);
    let bad: [(req::Req, &str); 6] = [
        (
            req::Req {
                local_qpn: 1 << 24,
                ..base
            },
            "req.local_qpn",
        ),
        (
            req::Req {
                starting_psn: 1 << 24,
                ..base
            },
            "req.starting_psn",
        ),
        (
            req::Req {
                retry_count: 8,
                ..base
            },
            "req.retry_count",
        ),
        (
            req::Req {
                max_cm_retries: 16,
                ..base
            },
            "req.max_cm_retries",
        ),
        (
            req::Req {
                local_cm_response_timeout: 32,
                ..base
            },
            "req.local_cm_response_timeout",
        ),
        (
            req::Req {
                vendor_id: 1 << 24,
                ..base
            },
            "req.vendor_id",
        ),
    ];
    for (m, field) in bad {
        assert_eq!(m.encode(&mut b), Err(EncodeError::FieldOutOfRange(field)));
    }
    let mut p = base;
    p.primary_path.flow_label = 1 << 20;
    assert_eq!(
        p.encode(&mut b),
        Err(EncodeError::FieldOutOfRange("req.primary.flow_label"))
    );
    let m = mra::Mra {
        service_timeout: 32,
        ..gen::mra(&mut r)
    };
    assert!(m.encode(&mut b).is_err());
    let m = rep::Rep {
        vendor_id: 1 << 24,
        ..gen::rep(&mut r)
    };
    assert!(m.encode(&mut b).is_err());
}

#[test]
fn spot_check_linux_positions() {
    // From TOOLCHAIN.md's run of Linux's macros: comm ID at MAD 24, QPN at 56-58, retry
    // count in the low 3 bits of 71, local ACK timeout in the top 5 bits of 119.
    let mut m = gen::req(&mut Rng::new(2));
    m.local_comm_id = 0x1122_3344;
    m.local_qpn = 0xabcdef;
    m.retry_count = 5;
    m.primary_path.local_ack_timeout = 17;
    let mut b = [0u8; MAD_SIZE];
    m.encode(&mut b).unwrap();
    assert_eq!(&b[24..28], &[0x11, 0x22, 0x33, 0x44]);
    assert_eq!(&b[56..59], &[0xab, 0xcd, 0xef]);
    assert_eq!(b[71] & 7, 5);
    assert_eq!(b[119] >> 3, 17);
    let h = MadHeader::decode(&b).unwrap();
    assert_eq!(h.base_version, 0, "Req::encode leaves the header alone");
}

/// A REQ refused for what it asks (a transport this CM does not implement, a QPN 0) is
/// answered with REJ 9 to its sender's comm ID; a REQ refused for its form is not.
#[test]
fn refused_transports_and_qpn_0_name_the_comm_id_to_reject() {
    for seed in 0..64 {
        let good = valid(AttrId::Req, seed);
        let comm_id = req::Req::decode(&good).unwrap().local_comm_id;
        // TransportServiceType 2 (RD), and 3 with ExtendedTransportType other than XRC.
        for (transport, extended) in [(2u8, 0u8), (2, 1), (3, 0), (3, 2), (3, 7)] {
            let mut b = good;
            req::fields::TRANSPORT_TYPE
                .set(&mut b, transport.into())
                .unwrap();
            req::fields::EXTENDED_TRANSPORT_TYPE
                .set(&mut b, extended.into())
                .unwrap();
            let err = req::Req::decode(&b).unwrap_err();
            assert_eq!(
                err,
                DecodeError::ReservedTransport {
                    transport,
                    extended
                }
            );
            assert_eq!(req::Req::invalid_transport(&b, &err), Some(comm_id));
        }
        let mut b = good;
        b[24 + 32..24 + 35].fill(0);
        let err = req::Req::decode(&b).unwrap_err();
        assert_eq!(req::Req::invalid_transport(&b, &err), Some(comm_id));
    }
    // Other refusals are not this one's to answer.
    let short = [0u8; 100];
    assert_eq!(
        req::Req::invalid_transport(&short, &DecodeError::Truncated(100)),
        None
    );
    let b = valid(AttrId::Req, 1);
    assert_eq!(
        req::Req::invalid_transport(&b, &DecodeError::ZeroQpn(AttrId::Rep)),
        None
    );
    assert_eq!(
        req::Req::invalid_transport(&b, &DecodeError::BadClassVersion(1)),
        None
    );
}

/// Which messages open an exchange (and so carry their sender's TID) and which answer one
/// (and carry the TID of the request they answer), per attribute; as Linux's CM forms them:
/// `cm_form_tid` for REQ, DREQ, SIDR_REQ and LAP, `cm_id_priv->tid` for the rest.
#[test]
fn requests_and_answers() {
    let table = [
        (AttrId::ClassPortInfo, false),
        (AttrId::Req, true),
        (AttrId::Mra, false),
        (AttrId::Rej, false),
        (AttrId::Rep, false),
        (AttrId::Rtu, false),
        (AttrId::Dreq, true),
        (AttrId::Drep, false),
        (AttrId::SidrReq, true),
        (AttrId::SidrRep, false),
        (AttrId::Lap, true),
        (AttrId::Apr, false),
    ];
    assert_eq!(table.map(|(attr, _)| attr), AttrId::ALL);
    for (attr, request) in table {
        assert_eq!(attr.is_request(), request, "{}", attr.name());
    }
}
