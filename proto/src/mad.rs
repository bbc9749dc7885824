//! The 24-byte MAD common header and the CM attribute IDs.
//!
//! Every CM message is a 256-byte MAD on QP1: this header, then 232 bytes of message data
//! (`include/rdma/ib_mad.h`, `struct ib_mad_hdr`). The module counts received CM MADs
//! per attribute with [`MadHeader::decode`] + [`AttrId::index`] before any further parsing.

use super::error::DecodeError;

/// Size of every CM MAD in bytes (`IB_MGMT_MAD_SIZE`).
pub const MAD_SIZE: usize = 256;
/// Size of the common MAD header.
pub const MAD_HEADER_SIZE: usize = 24;
/// Bytes of message data after the header.
pub const CM_DATA_SIZE: usize = MAD_SIZE - MAD_HEADER_SIZE;

/// MAD base version used by the CM (`IB_MGMT_BASE_VERSION`).
pub const BASE_VERSION: u8 = 1;
/// Management class of the Communication Manager (`IB_MGMT_CLASS_CM`).
pub const CM_MGMT_CLASS: u8 = 0x07;
/// CM class version (`IB_CM_CLASS_VERSION`, `drivers/infiniband/core/cm_msgs.h`).
pub const CM_CLASS_VERSION: u8 = 2;
/// Method Get, used only with ClassPortInfo.
pub const METHOD_GET: u8 = 0x01;
/// Method Set.
pub const METHOD_SET: u8 = 0x02;
/// Method Send: every CM message uses it.
pub const METHOD_SEND: u8 = 0x03;
/// Method GetResp, used only with ClassPortInfo.
pub const METHOD_GET_RESP: u8 = 0x81;

/// The CM attributes (IBTA vol. 1 table 104; `CM_*_ATTR_ID` in `include/rdma/ib_cm.h`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AttrId {
    /// ClassPortInfo (0x0001).
    ClassPortInfo,
    /// ConnectRequest (0x0010).
    Req,
    /// MessageReceiptAcknowledgement (0x0011).
    Mra,
    /// ConnectReject (0x0012).
    Rej,
    /// ConnectReply (0x0013).
    Rep,
    /// ReadyToUse (0x0014).
    Rtu,
    /// DisconnectRequest (0x0015).
    Dreq,
    /// DisconnectReply (0x0016).
    Drep,
    /// ServiceIDResolutionRequest (0x0017).
    SidrReq,
    /// ServiceIDResolutionResponse (0x0018).
    SidrRep,
    /// LoadAlternatePath (0x0019).
    Lap,
    /// AlternatePathResponse (0x001A).
    Apr,
}

impl AttrId {
    /// Number of attributes; [`AttrId::index`] is below this.
    pub const COUNT: usize = 12;

    /// All attributes in [`AttrId::index`] order (ascending attribute ID).
    pub const ALL: [AttrId; AttrId::COUNT] = [
        AttrId::ClassPortInfo,
        AttrId::Req,
        AttrId::Mra,
        AttrId::Rej,
        AttrId::Rep,
        AttrId::Rtu,
        AttrId::Dreq,
        AttrId::Drep,
        AttrId::SidrReq,
        AttrId::SidrRep,
        AttrId::Lap,
        AttrId::Apr,
    ];

    /// Maps a wire attribute ID (host order) to the attribute, `None` if it is not a CM one.
    pub const fn from_u16(id: u16) -> Option<Self> {
        Some(match id {
            0x0001 => Self::ClassPortInfo,
            0x0010 => Self::Req,
            0x0011 => Self::Mra,
            0x0012 => Self::Rej,
            0x0013 => Self::Rep,
            0x0014 => Self::Rtu,
            0x0015 => Self::Dreq,
            0x0016 => Self::Drep,
            0x0017 => Self::SidrReq,
            0x0018 => Self::SidrRep,
            0x0019 => Self::Lap,
            0x001A => Self::Apr,
            _ => return None,
        })
    }

    /// The wire attribute ID (host order).
    pub const fn to_u16(self) -> u16 {
        match self {
            Self::ClassPortInfo => 0x0001,
            Self::Req => 0x0010,
            Self::Mra => 0x0011,
            Self::Rej => 0x0012,
            Self::Rep => 0x0013,
            Self::Rtu => 0x0014,
            Self::Dreq => 0x0015,
            Self::Drep => 0x0016,
            Self::SidrReq => 0x0017,
            Self::SidrRep => 0x0018,
            Self::Lap => 0x0019,
            Self::Apr => 0x001A,
        }
    }

    /// Short name as used in traces and Linux sysfs counters.
    pub const fn name(self) -> &'static str {
        match self {
            Self::ClassPortInfo => "ClassPortInfo",
            Self::Req => "REQ",
            Self::Mra => "MRA",
            Self::Rej => "REJ",
            Self::Rep => "REP",
            Self::Rtu => "RTU",
            Self::Dreq => "DREQ",
            Self::Drep => "DREP",
            Self::SidrReq => "SIDR_REQ",
            Self::SidrRep => "SIDR_REP",
            Self::Lap => "LAP",
            Self::Apr => "APR",
        }
    }

    /// Whether a message of this attribute opens an exchange (a request) rather than
    /// answering one. A request carries a TID of its sender's; an answer carries the TID of
    /// the request it answers, as Linux's CM keeps it in `cm_id_priv->tid` (set by
    /// `cm_form_tid` when it sends a request, and from the MAD when it takes one). The REP,
    /// RTU, MRA and REJ answer the REQ; the DREP the DREQ; the SIDR_REP the SIDR_REQ; the
    /// APR the LAP.
    pub const fn is_request(self) -> bool {
        match self {
            Self::Req | Self::Dreq | Self::SidrReq | Self::Lap => true,
            Self::ClassPortInfo
            | Self::Mra
            | Self::Rej
            | Self::Rep
            | Self::Rtu
            | Self::Drep
            | Self::SidrRep
            | Self::Apr => false,
        }
    }

    /// Dense index `0..AttrId::COUNT`, for per-attribute counter arrays.
    pub const fn index(self) -> usize {
        match self {
            Self::ClassPortInfo => 0,
            Self::Req => 1,
            Self::Mra => 2,
            Self::Rej => 3,
            Self::Rep => 4,
            Self::Rtu => 5,
            Self::Dreq => 6,
            Self::Drep => 7,
            Self::SidrReq => 8,
            Self::SidrRep => 9,
            Self::Lap => 10,
            Self::Apr => 11,
        }
    }

    /// Whether this is a CM protocol message (sent with method SEND), i.e. not ClassPortInfo.
    pub const fn is_cm_message(self) -> bool {
        !matches!(self, Self::ClassPortInfo)
    }
}

/// The MAD common header, fields in host order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Hash)]
pub struct MadHeader {
    /// Base version (1).
    pub base_version: u8,
    /// Management class (0x07 for the CM).
    pub mgmt_class: u8,
    /// Class version (2 for the CM).
    pub class_version: u8,
    /// Method (SEND for CM messages).
    pub method: u8,
    /// Status (0 on CM messages).
    pub status: u16,
    /// Class-specific field (0 for the CM).
    pub class_specific: u16,
    /// Transaction ID. Linux puts `(agent hi_tid << 32) | local comm ID` in requests and
    /// copies the request's TID into responses (`cm_form_tid`, `cm_format_mad_hdr` in
    /// `drivers/infiniband/core/cm.c`).
    pub tid: u64,
    /// Attribute ID, raw; see [`AttrId::from_u16`].
    pub attr_id: u16,
    /// Reserved 16 bits after the attribute ID.
    pub reserved: u16,
    /// Attribute modifier; the CM carries the ECE `attr_mod` here.
    pub attr_mod: u32,
}

impl MadHeader {
    /// Header for an outgoing CM message: base 1, class 0x07, version 2, method SEND.
    pub const fn cm(attr: AttrId, tid: u64, attr_mod: u32) -> Self {
        Self {
            base_version: BASE_VERSION,
            mgmt_class: CM_MGMT_CLASS,
            class_version: CM_CLASS_VERSION,
            method: METHOD_SEND,
            status: 0,
            class_specific: 0,
            tid,
            attr_id: attr.to_u16(),
            reserved: 0,
            attr_mod,
        }
    }

    /// Reads the header from the first 24 bytes of `mad`. Checks only the length: use
    /// [`MadHeader::validate_cm`] to accept it as a CM MAD.
    ///
    /// # Errors
    ///
    /// [`DecodeError::Truncated`] if `mad` is shorter than [`MAD_HEADER_SIZE`].
    pub fn decode(mad: &[u8]) -> Result<Self, DecodeError> {
        let h: [u8; MAD_HEADER_SIZE] = mad
            .get(..MAD_HEADER_SIZE)
            .and_then(|s| s.try_into().ok())
            .ok_or(DecodeError::Truncated(mad.len()))?;
        Ok(Self {
            base_version: h[0],
            mgmt_class: h[1],
            class_version: h[2],
            method: h[3],
            status: u16::from_be_bytes([h[4], h[5]]),
            class_specific: u16::from_be_bytes([h[6], h[7]]),
            tid: u64::from_be_bytes([h[8], h[9], h[10], h[11], h[12], h[13], h[14], h[15]]),
            attr_id: u16::from_be_bytes([h[16], h[17]]),
            reserved: u16::from_be_bytes([h[18], h[19]]),
            attr_mod: u32::from_be_bytes([h[20], h[21], h[22], h[23]]),
        })
    }

    /// Writes the header into the first 24 bytes of `mad`; the message data is untouched.
    pub fn encode(&self, mad: &mut [u8; MAD_SIZE]) {
        mad[0] = self.base_version;
        mad[1] = self.mgmt_class;
        mad[2] = self.class_version;
        mad[3] = self.method;
        mad[4..6].copy_from_slice(&self.status.to_be_bytes());
        mad[6..8].copy_from_slice(&self.class_specific.to_be_bytes());
        mad[8..16].copy_from_slice(&self.tid.to_be_bytes());
        mad[16..18].copy_from_slice(&self.attr_id.to_be_bytes());
        mad[18..20].copy_from_slice(&self.reserved.to_be_bytes());
        mad[20..24].copy_from_slice(&self.attr_mod.to_be_bytes());
    }

    /// The attribute, if the ID is a CM one (no other check).
    pub const fn attr(&self) -> Option<AttrId> {
        AttrId::from_u16(self.attr_id)
    }

    /// Accepts the header as a CM MAD and returns its attribute.
    ///
    /// Rules: base version 1, class 0x07, class version 2, a known attribute, method SEND
    /// for CM messages and Get/GetResp for ClassPortInfo (the MAD layer drops other CM
    /// methods, `validate_mad` in `drivers/infiniband/core/mad.c`). Status is not checked: Linux
    /// ignores it on CM messages.
    ///
    /// # Errors
    ///
    /// The first rule that fails, in the order above.
    pub fn validate_cm(&self) -> Result<AttrId, DecodeError> {
        if self.base_version != BASE_VERSION {
            return Err(DecodeError::BadBaseVersion(self.base_version));
        }
        if self.mgmt_class != CM_MGMT_CLASS {
            return Err(DecodeError::NotCmClass(self.mgmt_class));
        }
        if self.class_version != CM_CLASS_VERSION {
            return Err(DecodeError::BadClassVersion(self.class_version));
        }
        let attr = self
            .attr()
            .ok_or(DecodeError::UnknownAttribute(self.attr_id))?;
        let method_ok = if attr.is_cm_message() {
            self.method == METHOD_SEND
        } else {
            matches!(self.method, METHOD_GET | METHOD_GET_RESP)
        };
        if !method_ok {
            return Err(DecodeError::BadMethod(self.method));
        }
        Ok(attr)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attr_ids_are_dense_and_round_trip() {
        for (i, attr) in AttrId::ALL.iter().enumerate() {
            assert_eq!(attr.index(), i);
            assert_eq!(AttrId::from_u16(attr.to_u16()), Some(*attr));
        }
        for raw in 0..=u16::MAX {
            if let Some(attr) = AttrId::from_u16(raw) {
                assert_eq!(attr.to_u16(), raw);
            }
        }
    }

    #[test]
    fn header_round_trips_and_rejects_short_input() {
        let h = MadHeader::cm(AttrId::Rep, 0x0102_0304_0506_0708, 0xdead_beef);
        let mut mad = [0u8; MAD_SIZE];
        h.encode(&mut mad);
        assert_eq!(&mad[..4], &[1, 7, 2, 3]);
        assert_eq!(&mad[16..18], &[0x00, 0x13]);
        assert_eq!(MadHeader::decode(&mad), Ok(h));
        assert_eq!(h.validate_cm(), Ok(AttrId::Rep));
        assert_eq!(
            MadHeader::decode(&mad[..23]),
            Err(DecodeError::Truncated(23))
        );
    }

    #[test]
    fn validate_rejects_each_rule() {
        let good = MadHeader::cm(AttrId::Req, 1, 0);
        let cases = [
            (
                MadHeader {
                    base_version: 2,
                    ..good
                },
                DecodeError::BadBaseVersion(2),
            ),
            (
                MadHeader {
                    mgmt_class: 4,
                    ..good
                },
                DecodeError::NotCmClass(4),
            ),
            (
                MadHeader {
                    class_version: 1,
                    ..good
                },
                DecodeError::BadClassVersion(1),
            ),
            (
                MadHeader {
                    method: METHOD_GET,
                    ..good
                },
                DecodeError::BadMethod(METHOD_GET),
            ),
            (
                MadHeader {
                    attr_id: 0x1b,
                    ..good
                },
                DecodeError::UnknownAttribute(0x1b),
            ),
            (
                MadHeader { attr_id: 1, ..good },
                DecodeError::BadMethod(METHOD_SEND),
            ),
        ];
        for (hdr, err) in cases {
            assert_eq!(hdr.validate_cm(), Err(err));
        }
        let cpi = MadHeader {
            attr_id: 1,
            method: METHOD_GET,
            ..good
        };
        assert_eq!(cpi.validate_cm(), Ok(AttrId::ClassPortInfo));
    }
}
