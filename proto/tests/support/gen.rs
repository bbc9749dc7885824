//! Deterministic random CM messages for tests, oracles, the fuzzer's seed corpus and the
//! benchmark. Shared by `#[path]` includes, so not every user needs every function.
#![allow(dead_code)]

use cepm_proto::apr::Apr;
use cepm_proto::class_port_info::ClassPortInfo;
use cepm_proto::cm_mad::{CmMad, CmMsg};
use cepm_proto::drep::Drep;
use cepm_proto::dreq::Dreq;
use cepm_proto::lap::Lap;
use cepm_proto::mad::{AttrId, METHOD_GET, METHOD_GET_RESP};
use cepm_proto::mra::Mra;
use cepm_proto::msg_code::MessageCode;
use cepm_proto::path::CmPath;
use cepm_proto::pdata::PrivateData;
use cepm_proto::rej::Rej;
use cepm_proto::rep::Rep;
use cepm_proto::req::{Req, Transport};
use cepm_proto::rtu::Rtu;
use cepm_proto::sidr_rep::SidrRep;
use cepm_proto::sidr_req::SidrReq;

/// SplitMix64: tiny, seedable, good enough to spread bits over every field.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Self(seed)
    }
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// A value of `n` random bits, 1..=64.
    pub(crate) fn bits(&mut self, n: u32) -> u64 {
        self.next_u64() >> (64 - n)
    }
    pub(crate) fn b(&mut self, n: u32) -> u8 {
        self.bits(n) as u8
    }
    pub(crate) fn h(&mut self) -> u16 {
        self.bits(16) as u16
    }
    pub(crate) fn w(&mut self, n: u32) -> u32 {
        self.bits(n) as u32
    }
    pub(crate) fn flag(&mut self) -> bool {
        self.bits(1) == 1
    }
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
    pub(crate) fn nonzero(&mut self, n: u32) -> u32 {
        loop {
            let v = self.w(n);
            if v != 0 {
                return v;
            }
        }
    }
    pub(crate) fn array<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0u8; N];
        for b in out.iter_mut() {
            *b = self.b(8);
        }
        out
    }
    /// Full-length private data (what decode returns: the wire has no length).
    pub(crate) fn pdata<const N: usize>(&mut self) -> PrivateData<N> {
        PrivateData::from_array(self.array())
    }
    /// Additional information with a random length 0..=72 (the length is on the wire).
    pub(crate) fn info(&mut self) -> PrivateData<72> {
        let len = self.below(73) as usize;
        PrivateData::from_prefix(&self.array(), len)
    }
    pub(crate) fn code(&mut self) -> MessageCode {
        match self.below(3) {
            0 => MessageCode::Req,
            1 => MessageCode::Rep,
            _ => MessageCode::Other,
        }
    }
}

pub(crate) fn path(r: &mut Rng) -> CmPath {
    CmPath {
        local_lid: r.h(),
        remote_lid: r.h(),
        local_gid: r.array(),
        remote_gid: r.array(),
        flow_label: r.w(20),
        packet_rate: r.b(6),
        traffic_class: r.b(8),
        hop_limit: r.b(8),
        sl: r.b(4),
        subnet_local: r.flag(),
        local_ack_timeout: r.b(5),
    }
}

pub(crate) fn req(r: &mut Rng) -> Req {
    Req {
        local_comm_id: r.w(32),
        vendor_id: r.w(24),
        service_id: r.next_u64(),
        local_ca_guid: r.next_u64(),
        local_qkey: r.w(32),
        local_qpn: r.nonzero(24),
        responder_resources: r.b(8),
        local_eecn: r.w(24),
        initiator_depth: r.b(8),
        remote_eecn: r.w(24),
        remote_cm_response_timeout: r.b(5),
        transport: match r.below(3) {
            0 => Transport::Rc,
            1 => Transport::Uc,
            _ => Transport::Xrc,
        },
        end_to_end_flow_control: r.flag(),
        starting_psn: r.w(24),
        local_cm_response_timeout: r.b(5),
        retry_count: r.b(3),
        pkey: r.h(),
        path_mtu: r.b(4),
        rdc_exists: r.flag(),
        rnr_retry_count: r.b(3),
        max_cm_retries: r.b(4),
        srq: r.flag(),
        primary_path: path(r),
        alternate_path: path(r),
        sap_supported: r.flag(),
        private_data: r.pdata(),
    }
}

pub(crate) fn mra(r: &mut Rng) -> Mra {
    Mra {
        local_comm_id: r.w(32),
        remote_comm_id: r.w(32),
        message_mraed: r.code(),
        service_timeout: r.b(5),
        private_data: r.pdata(),
    }
}

pub(crate) fn rej(r: &mut Rng) -> Rej {
    Rej {
        local_comm_id: r.w(32),
        remote_comm_id: r.w(32),
        message_rejected: r.code(),
        reason: r.h(),
        ari: r.info(),
        private_data: r.pdata(),
    }
}

pub(crate) fn rep(r: &mut Rng) -> Rep {
    Rep {
        local_comm_id: r.w(32),
        remote_comm_id: r.w(32),
        local_qkey: r.w(32),
        local_qpn: r.nonzero(24),
        local_eecn: r.w(24),
        starting_psn: r.w(24),
        vendor_id: r.w(24),
        responder_resources: r.b(8),
        initiator_depth: r.b(8),
        target_ack_delay: r.b(5),
        failover_accepted: r.b(2),
        end_to_end_flow_control: r.flag(),
        rnr_retry_count: r.b(3),
        srq: r.flag(),
        local_ca_guid: r.next_u64(),
        private_data: r.pdata(),
    }
}

pub(crate) fn rtu(r: &mut Rng) -> Rtu {
    Rtu {
        local_comm_id: r.w(32),
        remote_comm_id: r.w(32),
        private_data: r.pdata(),
    }
}

pub(crate) fn dreq(r: &mut Rng) -> Dreq {
    Dreq {
        local_comm_id: r.w(32),
        remote_comm_id: r.w(32),
        remote_qpn: r.nonzero(24),
        private_data: r.pdata(),
    }
}

pub(crate) fn drep(r: &mut Rng) -> Drep {
    Drep {
        local_comm_id: r.w(32),
        remote_comm_id: r.w(32),
        private_data: r.pdata(),
    }
}

pub(crate) fn lap(r: &mut Rng) -> Lap {
    Lap {
        local_comm_id: r.w(32),
        remote_comm_id: r.w(32),
        remote_qpn: r.nonzero(24),
        remote_cm_response_timeout: r.b(5),
        alternate_path: path(r),
        private_data: r.pdata(),
    }
}

pub(crate) fn apr(r: &mut Rng) -> Apr {
    Apr {
        local_comm_id: r.w(32),
        remote_comm_id: r.w(32),
        ap_status: r.b(8),
        additional_info: r.info(),
        private_data: r.pdata(),
    }
}

pub(crate) fn sidr_req(r: &mut Rng) -> SidrReq {
    SidrReq {
        request_id: r.w(32),
        pkey: r.h(),
        service_id: r.next_u64(),
        private_data: r.pdata(),
    }
}

pub(crate) fn sidr_rep(r: &mut Rng) -> SidrRep {
    let status = r.b(3);
    SidrRep {
        request_id: r.w(32),
        status,
        vendor_id: r.w(24),
        qpn: if status == 0 { r.nonzero(24) } else { r.w(24) },
        service_id: r.next_u64(),
        qkey: r.w(32),
        additional_info: r.info(),
        private_data: r.pdata(),
    }
}

pub(crate) fn class_port_info(r: &mut Rng) -> ClassPortInfo {
    ClassPortInfo {
        base_version: r.b(8),
        class_version: r.b(8),
        capability_mask: r.h(),
        cap_mask2: r.w(27),
        resp_time: r.b(5),
        redirect_gid: r.array(),
        redirect_tc: r.b(8),
        redirect_sl: r.b(4),
        redirect_fl: r.w(20),
        redirect_lid: r.h(),
        redirect_pkey: r.h(),
        redirect_qp: r.w(24),
        redirect_qkey: r.w(32),
        trap_gid: r.array(),
        trap_tc: r.b(8),
        trap_sl: r.b(4),
        trap_fl: r.w(20),
        trap_lid: r.h(),
        trap_pkey: r.h(),
        trap_hop_limit: r.b(8),
        trap_qp: r.w(24),
        trap_qkey: r.w(32),
    }
}

/// A random message of attribute `attr`.
pub(crate) fn msg(r: &mut Rng, attr: AttrId) -> CmMsg {
    match attr {
        AttrId::ClassPortInfo => CmMsg::ClassPortInfo(class_port_info(r)),
        AttrId::Req => CmMsg::Req(req(r)),
        AttrId::Mra => CmMsg::Mra(mra(r)),
        AttrId::Rej => CmMsg::Rej(rej(r)),
        AttrId::Rep => CmMsg::Rep(rep(r)),
        AttrId::Rtu => CmMsg::Rtu(rtu(r)),
        AttrId::Dreq => CmMsg::Dreq(dreq(r)),
        AttrId::Drep => CmMsg::Drep(drep(r)),
        AttrId::SidrReq => CmMsg::SidrReq(sidr_req(r)),
        AttrId::SidrRep => CmMsg::SidrRep(sidr_rep(r)),
        AttrId::Lap => CmMsg::Lap(lap(r)),
        AttrId::Apr => CmMsg::Apr(apr(r)),
    }
}

/// A random valid CM MAD of attribute `attr` (ClassPortInfo as Get or GetResp).
pub(crate) fn cm_mad_of(r: &mut Rng, attr: AttrId) -> CmMad {
    let mut mad = CmMad::new(r.next_u64(), r.w(32), msg(r, attr));
    if attr == AttrId::ClassPortInfo {
        mad.header.method = if r.flag() {
            METHOD_GET
        } else {
            METHOD_GET_RESP
        };
    }
    mad.header.status = r.h();
    mad.header.class_specific = r.h();
    mad.header.reserved = r.h();
    mad
}

/// A random valid CM MAD of any attribute.
pub(crate) fn cm_mad(r: &mut Rng) -> CmMad {
    let attr = AttrId::ALL[r.below(AttrId::COUNT as u64) as usize];
    cm_mad_of(r, attr)
}
