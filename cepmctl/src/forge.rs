//! The MADs `cepmctl send-mad` sends: a well-formed template of every CM attribute with
//! chosen fields overridden, so that a test can play a hostile or buggy peer.
//!
//! Values the protocol encoder refuses on purpose (QPN 0, the reserved message code 3, a
//! reserved transport type, an additional-information length over 72) are written into the
//! encoded MAD afterwards, at the field positions `cepm_proto` defines.

use cepm::AttrId;
use cepm_proto::{
    apr::{self, Apr},
    class_port_info::ClassPortInfo,
    cm_mad::{CmMad, CmMsg},
    cma_hdr::{CmaAddrs, CmaHdr},
    drep::Drep,
    dreq::{self, Dreq},
    lap::{self, Lap},
    mad::{MadHeader, BASE_VERSION, CM_CLASS_VERSION, MAD_SIZE, METHOD_GET},
    mra::{self, Mra},
    msg_code::MessageCode,
    path::{CmPath, Gid},
    pdata::{AdditionalInfo, PrivateData, INFO_SIZE},
    rej::{self, Rej},
    rep::{self, Rep},
    req::{self, Req, Transport},
    rtu::Rtu,
    sidr_rep::{self, SidrRep},
    sidr_req::SidrReq,
    wire::Field,
};

/// Service ID of a template REQ (RDMA CM TCP port 20000).
pub(crate) const DEFAULT_SERVICE_ID: u64 = 0x0000_0000_0106_4e20;
/// Service ID of a template SIDR_REQ / SIDR_REP (RDMA CM UDP port 20000).
pub(crate) const DEFAULT_SIDR_SERVICE_ID: u64 = 0x0000_0000_0111_4e20;
/// Sender's comm ID (SIDR: request ID) of the first template message.
pub(crate) const DEFAULT_COMM_ID: u32 = 0x1234_5678;
/// QPN in the templates.
const TEMPLATE_QPN: u32 = 0x00_1234;
/// Starting PSN in the templates.
const TEMPLATE_PSN: u32 = 0x00_5678;
/// Q_Key of a template SIDR_REP (serve-ud's default).
const TEMPLATE_SIDR_QKEY: u32 = 0x1111_1111;

/// Every attribute but ClassPortInfo, which leads `AttrId::ALL` (ascending attribute IDs).
const CM_MESSAGES: &[AttrId] = AttrId::ALL.split_at(1).1;
const _: () = assert!(matches!(AttrId::ALL[0], AttrId::ClassPortInfo));
/// The attributes with a RemoteCommID.
const WITH_REMOTE_COMM_ID: &[AttrId] = &[
    AttrId::Mra,
    AttrId::Rej,
    AttrId::Rep,
    AttrId::Rtu,
    AttrId::Dreq,
    AttrId::Drep,
    AttrId::Lap,
    AttrId::Apr,
];
/// The attributes with a 72-byte additional-information block and its length.
const WITH_INFO: &[AttrId] = &[AttrId::Rej, AttrId::SidrRep, AttrId::Apr];

/// Whether `attr` has a RemoteCommID field (`--remote-comm-id` applies to it).
pub(crate) fn takes_remote_comm_id(attr: AttrId) -> bool {
    WITH_REMOTE_COMM_ID.contains(&attr)
}

/// REQ transport for `--transport`: one the protocol encodes, or a raw TransportServiceType.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TransportArg {
    /// RC, UC or XRC.
    Known(Transport),
    /// TransportServiceType 2 or 3 written raw (ExtendedTransportType stays 0).
    Raw(u8),
}

/// Bytes given in hex on the command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct HexBytes(pub Vec<u8>);

/// What `send-mad` puts in each MAD. Every option but --valid implies --valid.
#[derive(clap::Args, Clone, Debug, Default)]
pub(crate) struct Fields {
    /// Send a well-formed message of the attribute (any of the 12) instead of a header with
    /// an all-zero body. Implied by every option below.
    #[arg(long)]
    pub(crate) valid: bool,
    /// MAD header TID of the first message (the Nth of --count gets TID+N) [default: 0].
    #[arg(long, value_parser = crate::parse_u64)]
    pub(crate) tid: Option<u64>,
    /// Sender's comm ID (SIDR_REQ/SIDR_REP: the request ID) of the first message; the Nth of
    /// --count gets ID+N [default: 0x12345678].
    #[arg(long, visible_alias = "comm-id", value_parser = crate::parse_u32)]
    pub(crate) local_comm_id: Option<u32>,
    /// Receiver's comm ID (MRA, REJ, REP, RTU, DREQ, DREP, LAP, APR) [default: the sender's
    /// comm ID with every bit flipped].
    #[arg(long, value_parser = crate::parse_u32)]
    pub(crate) remote_comm_id: Option<u32>,
    /// REJ MessageRejected / MRA MessageMRAed: REQ, REP, OTHER or 0..3 (3 is reserved and
    /// written raw) [default: REQ].
    #[arg(long, value_parser = parse_msg_code)]
    pub(crate) msg_rejected: Option<u8>,
    /// REJ reason [default: 28, consumer defined].
    #[arg(long, value_parser = parse_u16)]
    pub(crate) reason: Option<u16>,
    /// REJ ARI, APR or SIDR_REP additional information, as hex bytes (e.g. 0011223344556677),
    /// at most 72 [default: none].
    #[arg(long, value_parser = parse_hex)]
    pub(crate) ari: Option<HexBytes>,
    /// REJ, APR or SIDR_REP: write this raw additional-information length after encoding,
    /// whatever --ari holds (REJ's field is 7 bits, the others 8; over 72 is invalid).
    #[arg(long, value_parser = parse_u8)]
    pub(crate) ari_len: Option<u8>,
    /// REQ/REP local QPN, DREQ/LAP remote QPN, SIDR_REP QPN; 24 bits, 0 is written raw
    /// [default: 0x1234].
    #[arg(long, value_parser = crate::parse_u32)]
    pub(crate) qpn: Option<u32>,
    /// REQ/REP local CA GUID [default: 0].
    #[arg(long, value_parser = crate::parse_u64)]
    pub(crate) ca_guid: Option<u64>,
    /// Service ID of a REQ, SIDR_REQ or SIDR_REP [default: 0x0000000001064e20 for REQ,
    /// 0x0000000001114e20 for SIDR].
    #[arg(long, value_parser = crate::parse_u64)]
    pub(crate) service_id: Option<u64>,
    /// MRA service timeout, 5-bit exponent [default: 24].
    #[arg(long, value_parser = parse_u8)]
    pub(crate) service_timeout: Option<u8>,
    /// SIDR_REP status / APR AP status [default: 0].
    #[arg(long, value_parser = parse_u8)]
    pub(crate) status: Option<u8>,
    /// Q_Key of a SIDR_REP, REP or REQ [default: 0x11111111 for SIDR_REP, else 0].
    #[arg(long, value_parser = crate::parse_u32)]
    pub(crate) qkey: Option<u32>,
    /// REQ/REP starting PSN, 24 bits [default: 0x5678].
    #[arg(long, value_parser = crate::parse_u32)]
    pub(crate) starting_psn: Option<u32>,
    /// REQ transport: rc, uc, xrc, or a raw TransportServiceType 0..3 (2 and 3 are written
    /// raw with ExtendedTransportType 0, which is reserved; xrc is 3 with 1) [default: rc].
    #[arg(long, value_parser = parse_transport)]
    pub(crate) transport: Option<TransportArg>,
    /// Private data, as text (every attribute but ClassPortInfo) [default: none].
    #[arg(long)]
    pub(crate) private_data: Option<String>,
    /// REQ primary path's remote GID, the receiver's, in IPv6 notation (e.g. ::ffff:10.77.0.9)
    /// [default: the GID the MAD is sent to, as a real peer's REQ has it].
    #[arg(long)]
    pub(crate) remote_gid: Option<std::net::Ipv6Addr>,
    /// REQ/SIDR_REQ: put an rdma_cm `cma_hdr` with this destination address (and the
    /// source 10.77.0.99 or fd77::99, port 1) ahead of --private-data [default: none].
    #[arg(long)]
    pub(crate) cma_dst: Option<std::net::IpAddr>,
}

fn parse_u8(s: &str) -> Result<u8, String> {
    u8::try_from(crate::parse_u64(s)?).map_err(|e| format!("'{s}': {e}"))
}

fn parse_u16(s: &str) -> Result<u16, String> {
    u16::try_from(crate::parse_u64(s)?).map_err(|e| format!("'{s}': {e}"))
}

/// REQ, REP, OTHER (any case) or 0..3.
fn parse_msg_code(s: &str) -> Result<u8, String> {
    let named = [MessageCode::Req, MessageCode::Rep, MessageCode::Other]
        .into_iter()
        .find(|c| format!("{c:?}").eq_ignore_ascii_case(s));
    match named {
        Some(c) => Ok(c.to_u8()),
        None => match crate::parse_u64(s) {
            Ok(n @ 0..=3) => Ok(n as u8),
            _ => Err(format!("'{s}': want REQ, REP, OTHER or 0..3")),
        },
    }
}

/// Hex digit pairs, optionally after 0x; at most 72 bytes.
fn parse_hex(s: &str) -> Result<HexBytes, String> {
    let digits = s
        .strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .unwrap_or(s);
    if !digits.len().is_multiple_of(2) {
        return Err(format!("'{s}': odd number of hex digits"));
    }
    let bytes = (0..digits.len())
        .step_by(2)
        .map(|i| {
            digits
                .get(i..i + 2)
                .and_then(|pair| u8::from_str_radix(pair, 16).ok())
                .ok_or_else(|| format!("'{s}': not hex bytes"))
        })
        .collect::<Result<Vec<u8>, String>>()?;
    if bytes.len() > INFO_SIZE {
        return Err(format!(
            "'{s}': {} bytes, at most {INFO_SIZE} fit",
            bytes.len()
        ));
    }
    Ok(HexBytes(bytes))
}

/// rc, uc, xrc (any case) or 0..3.
fn parse_transport(s: &str) -> Result<TransportArg, String> {
    Ok(match s.to_ascii_lowercase().as_str() {
        "rc" | "0" => TransportArg::Known(Transport::Rc),
        "uc" | "1" => TransportArg::Known(Transport::Uc),
        "xrc" => TransportArg::Known(Transport::Xrc),
        "2" => TransportArg::Raw(2),
        "3" => TransportArg::Raw(3),
        _ => return Err(format!("'{s}': want rc, uc, xrc or 0..3")),
    })
}

/// A value written into the encoded MAD, for the option named.
struct Patch {
    option: &'static str,
    field: Field,
    value: u64,
}

impl Fields {
    /// Whether the body is a message rather than all zero.
    pub(crate) fn is_valid(&self) -> bool {
        self.valid || !self.given().is_empty()
    }

    /// The options given, each with the attributes it applies to (None: all of them).
    fn given(&self) -> Vec<(&'static str, Option<&'static [AttrId]>)> {
        let options: [(&'static str, bool, Option<&'static [AttrId]>); 18] = [
            ("--tid", self.tid.is_some(), None),
            (
                "--local-comm-id",
                self.local_comm_id.is_some(),
                Some(CM_MESSAGES),
            ),
            (
                "--remote-comm-id",
                self.remote_comm_id.is_some(),
                Some(WITH_REMOTE_COMM_ID),
            ),
            (
                "--msg-rejected",
                self.msg_rejected.is_some(),
                Some(&[AttrId::Rej, AttrId::Mra]),
            ),
            ("--reason", self.reason.is_some(), Some(&[AttrId::Rej])),
            ("--ari", self.ari.is_some(), Some(WITH_INFO)),
            ("--ari-len", self.ari_len.is_some(), Some(WITH_INFO)),
            (
                "--qpn",
                self.qpn.is_some(),
                Some(&[
                    AttrId::Req,
                    AttrId::Rep,
                    AttrId::Dreq,
                    AttrId::Lap,
                    AttrId::SidrRep,
                ]),
            ),
            (
                "--ca-guid",
                self.ca_guid.is_some(),
                Some(&[AttrId::Req, AttrId::Rep]),
            ),
            (
                "--service-id",
                self.service_id.is_some(),
                Some(&[AttrId::Req, AttrId::SidrReq, AttrId::SidrRep]),
            ),
            (
                "--service-timeout",
                self.service_timeout.is_some(),
                Some(&[AttrId::Mra]),
            ),
            (
                "--status",
                self.status.is_some(),
                Some(&[AttrId::SidrRep, AttrId::Apr]),
            ),
            (
                "--qkey",
                self.qkey.is_some(),
                Some(&[AttrId::Req, AttrId::Rep, AttrId::SidrRep]),
            ),
            (
                "--starting-psn",
                self.starting_psn.is_some(),
                Some(&[AttrId::Req, AttrId::Rep]),
            ),
            (
                "--transport",
                self.transport.is_some(),
                Some(&[AttrId::Req]),
            ),
            (
                "--private-data",
                self.private_data.is_some(),
                Some(CM_MESSAGES),
            ),
            (
                "--remote-gid",
                self.remote_gid.is_some(),
                Some(&[AttrId::Req]),
            ),
            (
                "--cma-dst",
                self.cma_dst.is_some(),
                Some(&[AttrId::Req, AttrId::SidrReq]),
            ),
        ];
        options
            .into_iter()
            .filter(|&(_, given, _)| given)
            .map(|(name, _, attrs)| (name, attrs))
            .collect()
    }

    /// Refuses an option that does not apply to `attr`.
    fn check(&self, attr: AttrId) -> Result<(), String> {
        for (option, attrs) in self.given() {
            let Some(attrs) = attrs else { continue };
            if !attrs.contains(&attr) {
                let names: Vec<&str> = attrs.iter().map(|a| a.name()).collect();
                return Err(format!(
                    "{option} does not apply to {} (only to {})",
                    attr.name(),
                    names.join(", ")
                ));
            }
        }
        Ok(())
    }

    /// The `i`th MAD (from 0) of attribute `attr` to send.
    ///
    /// # Errors
    ///
    /// An option that does not apply to `attr`, or a value that does not fit its field.
    /// `to` is the GID the MAD goes to (and comes from: send-mad loops back), which a REQ's
    /// primary path names on both ends unless --remote-gid says otherwise.
    pub(crate) fn mad(&self, attr: AttrId, i: u32, to: &Gid) -> Result<[u8; MAD_SIZE], String> {
        let tid = self.tid.unwrap_or(0).wrapping_add(u64::from(i));
        let mut mad = [0u8; MAD_SIZE];
        if !self.is_valid() {
            MadHeader::cm(attr, tid, 0).encode(&mut mad);
            return Ok(mad);
        }
        self.check(attr)?;
        let comm_id = self
            .local_comm_id
            .unwrap_or(DEFAULT_COMM_ID)
            .wrapping_add(i);
        let mut patches = Vec::new();
        let mut cm = CmMad::new(tid, 0, self.message(attr, comm_id, to, &mut patches)?);
        if attr == AttrId::ClassPortInfo {
            cm.header.method = METHOD_GET;
        }
        cm.encode(&mut mad)
            .map_err(|e| format!("cannot encode {}: {e}", attr.name()))?;
        for p in patches {
            p.field.set(&mut mad, p.value).map_err(|_| {
                format!(
                    "{} {}: does not fit {} (at most {})",
                    p.option,
                    p.value,
                    p.field.name,
                    p.field.max()
                )
            })?;
        }
        Ok(mad)
    }

    /// The template message of `attr` with the options applied; values the encoder refuses
    /// go to `patches`.
    fn message(
        &self,
        attr: AttrId,
        comm_id: u32,
        to: &Gid,
        patches: &mut Vec<Patch>,
    ) -> Result<CmMsg, String> {
        let remote_comm_id = self.remote_comm_id.unwrap_or(comm_id ^ 0xffff_ffff);
        let qpn = |field: Field, patches: &mut Vec<Patch>| match self.qpn {
            Some(0) => {
                patches.push(Patch {
                    option: "--qpn",
                    field,
                    value: 0,
                });
                TEMPLATE_QPN
            }
            Some(qpn) => qpn,
            None => TEMPLATE_QPN,
        };
        let code = |field: Field, patches: &mut Vec<Patch>| {
            let raw = self.msg_rejected.unwrap_or(MessageCode::Req.to_u8());
            MessageCode::from_wire(attr, raw).unwrap_or_else(|_| {
                patches.push(Patch {
                    option: "--msg-rejected",
                    field,
                    value: raw.into(),
                });
                MessageCode::Other
            })
        };
        let info = |field: Field, patches: &mut Vec<Patch>| -> Result<AdditionalInfo, String> {
            if let Some(len) = self.ari_len {
                patches.push(Patch {
                    option: "--ari-len",
                    field,
                    value: len.into(),
                });
            }
            let bytes = self.ari.as_ref().map_or(&[][..], |b| &b.0[..]);
            AdditionalInfo::new(bytes).map_err(|e| format!("--ari: {e}"))
        };
        let sidr_service_id = self.service_id.unwrap_or(DEFAULT_SIDR_SERVICE_ID);
        Ok(match attr {
            AttrId::ClassPortInfo => CmMsg::ClassPortInfo(ClassPortInfo {
                base_version: BASE_VERSION,
                class_version: CM_CLASS_VERSION,
                resp_time: 20,
                ..Default::default()
            }),
            AttrId::Req => {
                let transport = match self.transport {
                    Some(TransportArg::Known(t)) => t,
                    Some(TransportArg::Raw(raw)) => {
                        patches.push(Patch {
                            option: "--transport",
                            field: req::fields::TRANSPORT_TYPE,
                            value: raw.into(),
                        });
                        Transport::Rc
                    }
                    None => Transport::Rc,
                };
                CmMsg::Req(Req {
                    local_comm_id: comm_id,
                    service_id: self.service_id.unwrap_or(DEFAULT_SERVICE_ID),
                    local_ca_guid: self.ca_guid.unwrap_or(0),
                    local_qkey: self.qkey.unwrap_or(0),
                    local_qpn: qpn(req::fields::LOCAL_QPN, patches),
                    starting_psn: self.starting_psn.unwrap_or(TEMPLATE_PSN),
                    transport,
                    remote_cm_response_timeout: 20,
                    local_cm_response_timeout: 20,
                    retry_count: 7,
                    rnr_retry_count: 7,
                    max_cm_retries: 15,
                    pkey: 0xffff,
                    path_mtu: 3,
                    primary_path: CmPath {
                        local_lid: 0xffff,
                        remote_lid: 0xffff,
                        local_gid: *to,
                        remote_gid: self.remote_gid.map_or(*to, |g| g.octets()),
                        hop_limit: 64,
                        local_ack_timeout: 14,
                        ..Default::default()
                    },
                    private_data: self.private_data(attr)?,
                    ..Default::default()
                })
            }
            AttrId::Mra => CmMsg::Mra(Mra {
                local_comm_id: comm_id,
                remote_comm_id,
                message_mraed: code(mra::fields::MESSAGE_MRAED, patches),
                service_timeout: self.service_timeout.unwrap_or(24),
                private_data: self.private_data(attr)?,
            }),
            AttrId::Rej => CmMsg::Rej(Rej {
                local_comm_id: comm_id,
                remote_comm_id,
                message_rejected: code(rej::fields::MESSAGE_REJECTED, patches),
                reason: self.reason.unwrap_or(rej::reason::CONSUMER_DEFINED),
                ari: info(rej::fields::REJECTED_INFO_LENGTH, patches)?,
                private_data: self.private_data(attr)?,
            }),
            AttrId::Rep => CmMsg::Rep(Rep {
                local_comm_id: comm_id,
                remote_comm_id,
                local_qkey: self.qkey.unwrap_or(0),
                local_qpn: qpn(rep::fields::LOCAL_QPN, patches),
                starting_psn: self.starting_psn.unwrap_or(TEMPLATE_PSN),
                target_ack_delay: 15,
                rnr_retry_count: 7,
                local_ca_guid: self.ca_guid.unwrap_or(0),
                private_data: self.private_data(attr)?,
                ..Default::default()
            }),
            AttrId::Rtu => CmMsg::Rtu(Rtu {
                local_comm_id: comm_id,
                remote_comm_id,
                private_data: self.private_data(attr)?,
            }),
            AttrId::Dreq => CmMsg::Dreq(Dreq {
                local_comm_id: comm_id,
                remote_comm_id,
                remote_qpn: qpn(dreq::fields::REMOTE_QPN, patches),
                private_data: self.private_data(attr)?,
            }),
            AttrId::Drep => CmMsg::Drep(Drep {
                local_comm_id: comm_id,
                remote_comm_id,
                private_data: self.private_data(attr)?,
            }),
            AttrId::SidrReq => CmMsg::SidrReq(SidrReq {
                request_id: comm_id,
                pkey: 0xffff,
                service_id: sidr_service_id,
                private_data: self.private_data(attr)?,
            }),
            AttrId::SidrRep => CmMsg::SidrRep(SidrRep {
                request_id: comm_id,
                status: self.status.unwrap_or(sidr_rep::status::SUCCESS),
                vendor_id: 0,
                qpn: qpn(sidr_rep::fields::QPN, patches),
                service_id: sidr_service_id,
                qkey: self.qkey.unwrap_or(TEMPLATE_SIDR_QKEY),
                additional_info: info(sidr_rep::fields::ADDITIONAL_INFO_LENGTH, patches)?,
                private_data: self.private_data(attr)?,
            }),
            AttrId::Lap => CmMsg::Lap(Lap {
                local_comm_id: comm_id,
                remote_comm_id,
                remote_qpn: qpn(lap::fields::REMOTE_QPN, patches),
                remote_cm_response_timeout: 20,
                alternate_path: CmPath {
                    local_lid: 0xffff,
                    remote_lid: 0xffff,
                    hop_limit: 64,
                    local_ack_timeout: 14,
                    ..Default::default()
                },
                private_data: self.private_data(attr)?,
            }),
            AttrId::Apr => CmMsg::Apr(Apr {
                local_comm_id: comm_id,
                remote_comm_id,
                ap_status: self.status.unwrap_or(0),
                additional_info: info(apr::fields::ADDITIONAL_INFO_LENGTH, patches)?,
                private_data: self.private_data(attr)?,
            }),
        })
    }

    /// --private-data for a message whose field holds `N` bytes.
    fn private_data<const N: usize>(&self, attr: AttrId) -> Result<PrivateData<N>, String> {
        let text = self.private_data.as_deref().unwrap_or("");
        let mut bytes = Vec::new();
        if let Some(dst) = self.cma_dst {
            let addrs = match dst {
                std::net::IpAddr::V4(d) => CmaAddrs::V4 {
                    src: [10, 77, 0, 99],
                    dst: d.octets(),
                },
                std::net::IpAddr::V6(d) => CmaAddrs::V6 {
                    src: std::net::Ipv6Addr::new(0xfd77, 0, 0, 0, 0, 0, 0, 0x99).octets(),
                    dst: d.octets(),
                },
            };
            bytes.extend_from_slice(&CmaHdr { src_port: 1, addrs }.encode());
        }
        bytes.extend_from_slice(text.as_bytes());
        PrivateData::new(&bytes).map_err(|_| {
            format!(
                "--private-data: {} bytes, {} carries at most {N}",
                bytes.len(),
                attr.name()
            )
        })
    }
}

/// What cepm's decoder makes of `mad`, and the MAD in hex, for --verbose.
pub(crate) fn describe(mad: &[u8; MAD_SIZE]) -> String {
    let verdict = match CmMad::decode(mad) {
        Ok(m) => format!("a valid {}", m.msg.attr().name()),
        Err(e) => format!("invalid ({e})"),
    };
    let mut out = format!("decodes as {verdict}");
    for (i, line) in mad.chunks(16).enumerate() {
        let hex: Vec<String> = line.iter().map(|b| format!("{b:02x}")).collect();
        out.push_str(&format!("\n  {:03x}: {}", i * 16, hex.join(" ")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use cepm_proto::{error::DecodeError, mad::METHOD_SEND};
    use clap::Parser;

    /// The GID the tests' MADs go to: rxe0's RoCE v2 GID in the selftests' VM.
    const TO: Gid = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 77, 0, 1];

    #[test]
    fn req_primary_path_names_the_destination_unless_told() {
        let CmMsg::Req(req) = decode(&["REQ", "--valid"]).msg else {
            panic!("not a REQ");
        };
        assert_eq!(req.primary_path.local_gid, TO);
        assert_eq!(req.primary_path.remote_gid, TO);
        let CmMsg::Req(req) = decode(&["REQ", "--remote-gid", "::ffff:10.99.0.1"]).msg else {
            panic!("not a REQ");
        };
        assert_eq!(req.primary_path.local_gid, TO);
        assert_eq!(
            req.primary_path.remote_gid,
            [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 99, 0, 1]
        );
        assert!(build(&["REP", "--remote-gid", "::1"], 0).is_err());
    }

    /// `cepmctl send-mad rxe0 1 <args>` parsed: the attribute and the fields.
    fn parse(args: &[&str]) -> Result<(AttrId, Fields), String> {
        let argv = ["cepmctl", "send-mad", "rxe0", "1"]
            .iter()
            .chain(args)
            .copied();
        match crate::Cli::try_parse_from(argv).map_err(|e| e.to_string())? {
            crate::Cli {
                command: crate::Command::SendMad { attr, forge, .. },
            } => Ok((attr, forge)),
            _ => unreachable!("not send-mad"),
        }
    }

    /// The `i`th MAD of `send-mad rxe0 1 <args>`.
    fn build(args: &[&str], i: u32) -> Result<[u8; MAD_SIZE], String> {
        let (attr, forge) = parse(args)?;
        forge.mad(attr, i, &TO)
    }

    fn decode(args: &[&str]) -> CmMad {
        let mad = build(args, 0).unwrap();
        CmMad::decode(&mad).unwrap_or_else(|e| panic!("{args:?}: {e}"))
    }

    /// The sender's comm ID (SIDR: request ID) of a message.
    fn local_comm_id(msg: &CmMsg) -> Option<u32> {
        Some(match msg {
            CmMsg::ClassPortInfo(_) => return None,
            CmMsg::Req(m) => m.local_comm_id,
            CmMsg::Mra(m) => m.local_comm_id,
            CmMsg::Rej(m) => m.local_comm_id,
            CmMsg::Rep(m) => m.local_comm_id,
            CmMsg::Rtu(m) => m.local_comm_id,
            CmMsg::Dreq(m) => m.local_comm_id,
            CmMsg::Drep(m) => m.local_comm_id,
            CmMsg::SidrReq(m) => m.request_id,
            CmMsg::SidrRep(m) => m.request_id,
            CmMsg::Lap(m) => m.local_comm_id,
            CmMsg::Apr(m) => m.local_comm_id,
        })
    }

    /// The private data of a message, if it has any.
    fn private_data(msg: &CmMsg) -> Option<&[u8]> {
        Some(match msg {
            CmMsg::ClassPortInfo(_) => return None,
            CmMsg::Req(m) => m.private_data.as_bytes(),
            CmMsg::Mra(m) => m.private_data.as_bytes(),
            CmMsg::Rej(m) => m.private_data.as_bytes(),
            CmMsg::Rep(m) => m.private_data.as_bytes(),
            CmMsg::Rtu(m) => m.private_data.as_bytes(),
            CmMsg::Dreq(m) => m.private_data.as_bytes(),
            CmMsg::Drep(m) => m.private_data.as_bytes(),
            CmMsg::SidrReq(m) => m.private_data.as_bytes(),
            CmMsg::SidrRep(m) => m.private_data.as_bytes(),
            CmMsg::Lap(m) => m.private_data.as_bytes(),
            CmMsg::Apr(m) => m.private_data.as_bytes(),
        })
    }

    #[test]
    fn every_template_encodes_and_decodes() {
        for attr in AttrId::ALL {
            let name = attr.name();
            let m = decode(&[name, "--valid"]);
            assert_eq!(m.msg.attr(), attr);
            assert_eq!(m.header.tid, 0);
            let method = if attr == AttrId::ClassPortInfo {
                METHOD_GET
            } else {
                METHOD_SEND
            };
            assert_eq!(m.header.method, method, "{name}");
            if attr != AttrId::ClassPortInfo {
                assert_eq!(local_comm_id(&m.msg), Some(DEFAULT_COMM_ID), "{name}");
                let m = decode(&[name, "--valid", "--count", "2"]);
                assert_eq!(local_comm_id(&m.msg), Some(DEFAULT_COMM_ID), "{name}");
                let (attr, forge) = parse(&[name, "--local-comm-id", "0xabc"]).unwrap();
                let second = CmMad::decode(&forge.mad(attr, 1, &TO).unwrap()).unwrap();
                assert_eq!(local_comm_id(&second.msg), Some(0xabd), "{name}");
                assert_eq!(second.header.tid, 1, "{name}");
                let m = decode(&[name, "--private-data", "hello"]);
                assert_eq!(private_data(&m.msg).unwrap()[..5], *b"hello", "{name}");
            }
            let m = decode(&[name, "--tid", "0x1122334455667788"]);
            assert_eq!(m.msg.attr(), attr);
            assert_eq!(m.header.tid, 0x1122_3344_5566_7788, "{name}");
        }
    }

    #[test]
    fn tid_counts_up_from_the_given_one() {
        let mad = build(&["RTU", "--tid", "0x100", "--count", "3"], 2).unwrap();
        assert_eq!(&mad[8..16], &0x102u64.to_be_bytes());
        assert_eq!(CmMad::decode(&mad).unwrap().header.tid, 0x102);
        let mad = build(&["DREQ", "--tid", "0xffffffffffffffff"], 1).unwrap();
        assert_eq!(CmMad::decode(&mad).unwrap().header.tid, 0);
    }

    #[test]
    fn rej_overrides_land() {
        let m = decode(&[
            "REJ",
            "--local-comm-id",
            "0",
            "--remote-comm-id",
            "0x1234",
            "--msg-rejected",
            "REQ",
            "--reason",
            "4",
            "--ari",
            "0011223344556677",
            "--private-data",
            "no",
        ]);
        let CmMsg::Rej(rej) = m.msg else {
            panic!("{m:?}")
        };
        assert_eq!(rej.local_comm_id, 0);
        assert_eq!(rej.remote_comm_id, 0x1234);
        assert_eq!(rej.message_rejected, MessageCode::Req);
        assert_eq!(rej.reason, 4);
        assert_eq!(
            rej.ari.as_bytes(),
            &[0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77]
        );
        assert_eq!(&rej.private_data.as_bytes()[..3], b"no\0");
        let CmMsg::Rej(rej) = decode(&["REJ", "--msg-rejected", "rep"]).msg else {
            panic!()
        };
        assert_eq!(rej.message_rejected, MessageCode::Rep);
        assert_eq!(rej.remote_comm_id, DEFAULT_COMM_ID ^ 0xffff_ffff);
        assert_eq!(rej.reason, rej::reason::CONSUMER_DEFINED);
        assert!(rej.ari.is_empty());
    }

    #[test]
    fn raw_ari_length_and_reserved_message_code_are_written() {
        let mad = build(&["REJ", "--ari-len", "80"], 0).unwrap();
        assert_eq!(rej::fields::REJECTED_INFO_LENGTH.get(&mad), 80);
        assert_eq!(mad[24 + 9] >> 1, 80);
        // Clamped to the 72-byte block on decode.
        match CmMad::decode(&mad).map(|m| m.msg) {
            Ok(CmMsg::Rej(rej)) => assert_eq!(rej.ari.len(), 72),
            other => panic!("{other:?}"),
        }
        let err = build(&["REJ", "--ari-len", "200"], 0).unwrap_err();
        assert!(
            err.contains("--ari-len 200") && err.contains("127"),
            "{err}"
        );

        let mad = build(&["APR", "--ari", "aabb", "--ari-len", "200"], 0).unwrap();
        assert_eq!(apr::fields::ADDITIONAL_INFO_LENGTH.get(&mad), 200);
        assert_eq!(&mad[24 + 12..24 + 14], &[0xaa, 0xbb]);
        match CmMad::decode(&mad).map(|m| m.msg) {
            Ok(CmMsg::Apr(apr)) => assert_eq!(apr.additional_info.len(), 72),
            other => panic!("{other:?}"),
        }

        let mad = build(&["REJ", "--msg-rejected", "3", "--reason", "9"], 0).unwrap();
        assert_eq!(rej::fields::MESSAGE_REJECTED.get(&mad), 3);
        assert_eq!(mad[24 + 8] >> 6, 3);
        assert_eq!(rej::fields::REASON.get(&mad), 9);
        // Read as OTHER on decode.
        match CmMad::decode(&mad).map(|m| m.msg) {
            Ok(CmMsg::Rej(rej)) => assert_eq!(rej.message_rejected, MessageCode::Other),
            other => panic!("{other:?}"),
        }
        let mad = build(&["MRA", "--msg-rejected", "3"], 0).unwrap();
        assert_eq!(mra::fields::MESSAGE_MRAED.get(&mad), 3);
        assert_eq!(
            CmMad::decode(&mad),
            Err(DecodeError::ReservedMessageCode(AttrId::Mra, 3))
        );
    }

    #[test]
    fn mra_overrides_land() {
        let m = decode(&[
            "MRA",
            "--msg-rejected",
            "other",
            "--service-timeout",
            "7",
            "--remote-comm-id",
            "5",
        ]);
        let CmMsg::Mra(mra) = m.msg else {
            panic!("{m:?}")
        };
        assert_eq!(mra.message_mraed, MessageCode::Other);
        assert_eq!(mra.service_timeout, 7);
        assert_eq!(mra.remote_comm_id, 5);
        let err = build(&["MRA", "--service-timeout", "32"], 0).unwrap_err();
        assert!(err.contains("mra.service_timeout"), "{err}");
    }

    #[test]
    fn req_and_rep_overrides_land() {
        let m = decode(&[
            "REQ",
            "--qpn",
            "0xabcdef",
            "--ca-guid",
            "0x0002c90300001122",
            "--qkey",
            "5",
            "--starting-psn",
            "0x777",
            "--transport",
            "uc",
            "--service-id",
            "0x99",
        ]);
        let CmMsg::Req(req) = m.msg else {
            panic!("{m:?}")
        };
        assert_eq!(req.local_qpn, 0xab_cdef);
        assert_eq!(req.local_ca_guid, 0x0002_c903_0000_1122);
        assert_eq!(req.local_qkey, 5);
        assert_eq!(req.starting_psn, 0x777);
        assert_eq!(req.transport, Transport::Uc);
        assert_eq!(req.service_id, 0x99);
        let CmMsg::Req(req) = decode(&["REQ", "--transport", "XRC"]).msg else {
            panic!()
        };
        assert_eq!(req.transport, Transport::Xrc);

        let m = decode(&[
            "REP",
            "--qpn",
            "0x42",
            "--ca-guid",
            "7",
            "--qkey",
            "8",
            "--starting-psn",
            "9",
            "--remote-comm-id",
            "10",
        ]);
        let CmMsg::Rep(rep) = m.msg else {
            panic!("{m:?}")
        };
        assert_eq!(
            (
                rep.local_qpn,
                rep.local_ca_guid,
                rep.local_qkey,
                rep.starting_psn,
                rep.remote_comm_id
            ),
            (0x42, 7, 8, 9, 10)
        );
        let err = build(&["REQ", "--qpn", "0x1000000"], 0).unwrap_err();
        assert!(err.contains("req.local_qpn"), "{err}");
        let err = build(&["REP", "--starting-psn", "0x1000000"], 0).unwrap_err();
        assert!(err.contains("rep.starting_psn"), "{err}");
    }

    #[test]
    fn values_the_encoder_refuses_are_written_raw() {
        let mad = build(&["REQ", "--qpn", "0"], 0).unwrap();
        assert_eq!(req::fields::LOCAL_QPN.get(&mad), 0);
        assert_eq!(req::fields::STARTING_PSN.get(&mad), TEMPLATE_PSN.into());
        assert_eq!(CmMad::decode(&mad), Err(DecodeError::ZeroQpn(AttrId::Req)));
        let mad = build(&["REP", "--qpn", "0"], 0).unwrap();
        assert_eq!(CmMad::decode(&mad), Err(DecodeError::ZeroQpn(AttrId::Rep)));
        let mad = build(&["DREQ", "--qpn", "0"], 0).unwrap();
        assert_eq!(CmMad::decode(&mad), Err(DecodeError::ZeroQpn(AttrId::Dreq)));
        let mad = build(&["LAP", "--qpn", "0"], 0).unwrap();
        assert_eq!(CmMad::decode(&mad), Err(DecodeError::ZeroQpn(AttrId::Lap)));
        let mad = build(&["SIDR_REP", "--qpn", "0"], 0).unwrap();
        assert_eq!(
            CmMad::decode(&mad),
            Err(DecodeError::ZeroQpn(AttrId::SidrRep))
        );
        let CmMsg::SidrRep(rep) = decode(&["SIDR_REP", "--qpn", "0", "--status", "2"]).msg else {
            panic!()
        };
        assert_eq!((rep.qpn, rep.status), (0, 2));

        for (raw, extended) in [("2", 0), ("3", 0)] {
            let mad = build(&["REQ", "--transport", raw], 0).unwrap();
            let transport: u8 = raw.parse().unwrap();
            assert_eq!(req::fields::TRANSPORT_TYPE.get(&mad), transport.into());
            assert_eq!(
                CmMad::decode(&mad),
                Err(DecodeError::ReservedTransport {
                    transport,
                    extended
                })
            );
        }
    }

    #[test]
    fn other_messages_overrides_land() {
        let m = decode(&[
            "SIDR_REP",
            "--local-comm-id",
            "7",
            "--qpn",
            "9",
            "--qkey",
            "10",
            "--status",
            "4",
            "--service-id",
            "11",
            "--ari",
            "0xAABB",
        ]);
        let CmMsg::SidrRep(rep) = m.msg else {
            panic!("{m:?}")
        };
        assert_eq!(
            (
                rep.request_id,
                rep.qpn,
                rep.qkey,
                rep.status,
                rep.service_id
            ),
            (7, 9, 10, 4, 11)
        );
        assert_eq!(rep.additional_info.as_bytes(), &[0xaa, 0xbb]);

        let CmMsg::SidrReq(req) = decode(&["SIDR_REQ", "--comm-id", "5"]).msg else {
            panic!()
        };
        assert_eq!(
            (req.request_id, req.service_id),
            (5, DEFAULT_SIDR_SERVICE_ID)
        );

        let m = decode(&[
            "APR",
            "--status",
            "3",
            "--ari",
            "01",
            "--remote-comm-id",
            "6",
        ]);
        let CmMsg::Apr(apr) = m.msg else {
            panic!("{m:?}")
        };
        assert_eq!((apr.ap_status, apr.remote_comm_id), (3, 6));
        assert_eq!(apr.additional_info.as_bytes(), &[1]);

        let CmMsg::Dreq(dreq) = decode(&["DREQ", "--qpn", "0x42"]).msg else {
            panic!()
        };
        assert_eq!(dreq.remote_qpn, 0x42);
        let CmMsg::Lap(lap) = decode(&["LAP", "--qpn", "0x43", "--remote-comm-id", "1"]).msg else {
            panic!()
        };
        assert_eq!((lap.remote_qpn, lap.remote_comm_id), (0x43, 1));
        let CmMsg::Drep(drep) = decode(&["DREP", "--remote-comm-id", "2"]).msg else {
            panic!()
        };
        assert_eq!(drep.remote_comm_id, 2);
    }

    /// The REQ and DREQ that `--valid` builds, byte for byte: selftests (`cep_listen.sh`,
    /// `cep_rej_match.sh`) rely on their fields. The REQ names the destination GID in its
    /// primary path, as a real peer's does (a REQ whose path names a GID the port lacks is
    /// rejected with reason 12).
    #[test]
    fn valid_req_and_dreq_keep_their_bytes() {
        let expected_req = |comm_id: u32, service_id: u64| {
            let mut mad = [0u8; MAD_SIZE];
            let msg = CmMsg::Req(Req {
                local_comm_id: comm_id,
                service_id,
                local_qpn: 0x00_1234,
                starting_psn: 0x00_5678,
                remote_cm_response_timeout: 20,
                local_cm_response_timeout: 20,
                retry_count: 7,
                rnr_retry_count: 7,
                max_cm_retries: 15,
                pkey: 0xffff,
                path_mtu: 3,
                primary_path: CmPath {
                    local_lid: 0xffff,
                    remote_lid: 0xffff,
                    local_gid: TO,
                    remote_gid: TO,
                    hop_limit: 64,
                    local_ack_timeout: 14,
                    ..Default::default()
                },
                ..Default::default()
            });
            CmMad::new(0, 0, msg).encode(&mut mad).unwrap();
            mad
        };
        let args = [
            "REQ",
            "--valid",
            "--service-id",
            "0x0000000001064e21",
            "--comm-id",
            "0xabc00001",
        ];
        assert_eq!(
            build(&args, 0).unwrap(),
            expected_req(0xabc0_0001, 0x0106_4e21)
        );
        assert_eq!(
            build(&["REQ", "--valid"], 0).unwrap(),
            expected_req(0x1234_5678, 0x0106_4e20)
        );

        let mad = build(&["DREQ", "--valid", "--count", "2"], 1).unwrap();
        let mut expected = [0u8; MAD_SIZE];
        CmMad::new(
            1,
            0,
            CmMsg::Dreq(Dreq {
                local_comm_id: 0x1234_5679,
                remote_comm_id: 0x1234_5679 ^ 0xffff_ffff,
                remote_qpn: 0x00_1234,
                private_data: PrivateData::empty(),
            }),
        )
        .encode(&mut expected)
        .unwrap();
        assert_eq!(mad, expected);

        // Without --valid: the header alone, TID = the loop index.
        for attr in ["REQ", "DREQ", "SIDR_REQ"] {
            let mad = build(&[attr, "--count", "3"], 2).unwrap();
            let header = MadHeader::decode(&mad).unwrap();
            assert_eq!(header, MadHeader::cm(parse_attr(attr), 2, 0));
            assert!(mad[24..].iter().all(|&b| b == 0));
        }
    }

    fn parse_attr(name: &str) -> AttrId {
        crate::parse_attr(name).unwrap()
    }

    #[test]
    fn options_that_do_not_apply_are_refused() {
        for (args, option) in [
            (&["REQ", "--reason", "4"][..], "--reason"),
            (
                &["ClassPortInfo", "--local-comm-id", "1"],
                "--local-comm-id",
            ),
            (&["ClassPortInfo", "--private-data", "x"], "--private-data"),
            (&["DREQ", "--service-id", "5"], "--service-id"),
            (&["REQ", "--remote-comm-id", "5"], "--remote-comm-id"),
            (&["SIDR_REQ", "--qpn", "5"], "--qpn"),
            (&["RTU", "--ari", "00"], "--ari"),
            (&["REP", "--transport", "uc"], "--transport"),
            (&["APR", "--msg-rejected", "REQ"], "--msg-rejected"),
        ] {
            let err = build(args, 0).unwrap_err();
            assert!(err.starts_with(option), "{args:?}: {err}");
            assert!(err.contains("does not apply to"), "{args:?}: {err}");
            assert!(err.contains(args[0]), "{args:?}: {err}");
        }
    }

    #[test]
    fn bad_values_are_refused() {
        for args in [
            &["REJ", "--ari", "0"][..],
            &["REJ", "--ari", "zz"],
            &["REJ", "--msg-rejected", "4"],
            &["REJ", "--msg-rejected", "RTU"],
            &["REQ", "--transport", "rd"],
            &["REQ", "--transport", "4"],
            &["REJ", "--reason", "0x10000"],
            &["REQ", "--comm-id", "1", "--local-comm-id", "2"],
        ] {
            assert!(parse(args).is_err(), "{args:?}");
        }
        let ari = "00".repeat(73);
        let err = parse(&["REJ", "--ari", &ari]).unwrap_err();
        assert!(err.contains("at most 72"), "{err}");
        let m = decode(&["REJ", "--ari", &"ab".repeat(72)]);
        let CmMsg::Rej(rej) = m.msg else { panic!() };
        assert_eq!(rej.ari.len(), 72);

        let long = "x".repeat(93);
        let err = build(&["REQ", "--private-data", &long], 0).unwrap_err();
        assert!(err.contains("at most 92"), "{err}");
    }

    #[test]
    fn describe_tells_valid_from_invalid() {
        let mad = build(&["REJ", "--valid"], 0).unwrap();
        assert!(describe(&mad).starts_with("decodes as a valid REJ\n  000: 01 07 02 03"));
        let mad = build(&["REQ"], 0).unwrap();
        assert!(describe(&mad).starts_with("decodes as invalid (REQ: QPN 0)"));
    }
}
