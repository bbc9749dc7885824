//! Fuzz the MAD decoders: hostile bytes must never panic (overflow checks are on), and
//! whatever decodes must re-encode to bytes that decode to the same value.
#![no_main]

use cepm_proto::cm_mad::{CmMad, CmMsg};
use cepm_proto::cma_hdr::CmaHdr;
use cepm_proto::mad::{AttrId, MadHeader, MAD_SIZE};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(h) = MadHeader::decode(data) {
        let _ = h.validate_cm();
    }
    for attr in AttrId::ALL {
        let _ = CmMsg::decode_as(attr, data);
    }
    let _ = CmaHdr::decode(data);
    if let Ok(mad) = CmMad::decode(data) {
        let mut buf = [0u8; MAD_SIZE];
        mad.encode(&mut buf)
            .expect("a decoded MAD always re-encodes");
        assert_eq!(
            CmMad::decode(&buf),
            Ok(mad),
            "decode(encode(decode(x))) != decode(x)"
        );
        // Only reserved bits may differ from the input.
        if let CmMsg::Req(req) = mad.msg {
            let _ = CmaHdr::decode(req.private_data.as_bytes());
        }
    }
});
