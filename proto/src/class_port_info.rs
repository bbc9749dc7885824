//! ClassPortInfo (attribute 0x0001) of the CM class: IBTA vol. 1 table 126,
//! `struct ib_class_port_info` (`include/rdma/ib_mad.h`).
//!
//! Linux has no CM handler for it: a Get is answered by the MAD layer with status
//! "unsupported" (`generate_unmatched_resp` in `drivers/infiniband/core/mad.c`). cepm can
//! decode and build one.

use super::error::{DecodeError, EncodeError};
use super::path::Gid;
use super::wire::{self, Bytes, Field, Mad};

/// ClassPortInfo field positions (offsets after the MAD header).
pub mod fields {
    use super::{Bytes, Field};

    /// BaseVersion.
    pub const BASE_VERSION: Field = Field::new("cpi.base_version", 0, 0, 8);
    /// ClassVersion.
    pub const CLASS_VERSION: Field = Field::new("cpi.class_version", 1, 0, 8);
    /// CapabilityMask.
    pub const CAPABILITY_MASK: Field = Field::new("cpi.capability_mask", 2, 0, 16);
    /// CapabilityMask2, 27 bits.
    pub const CAP_MASK2: Field = Field::new("cpi.cap_mask2", 4, 0, 27);
    /// RespTimeValue, 5 bits.
    pub const RESP_TIME: Field = Field::new("cpi.resp_time", 7, 3, 5);
    /// RedirectGID.
    pub const REDIRECT_GID: Bytes = Bytes::new(8, 16);
    /// RedirectTC.
    pub const REDIRECT_TC: Field = Field::new("cpi.redirect_tc", 24, 0, 8);
    /// RedirectSL.
    pub const REDIRECT_SL: Field = Field::new("cpi.redirect_sl", 25, 0, 4);
    /// RedirectFL.
    pub const REDIRECT_FL: Field = Field::new("cpi.redirect_fl", 25, 4, 20);
    /// RedirectLID.
    pub const REDIRECT_LID: Field = Field::new("cpi.redirect_lid", 28, 0, 16);
    /// RedirectP_Key.
    pub const REDIRECT_PKEY: Field = Field::new("cpi.redirect_pkey", 30, 0, 16);
    /// RedirectQP (the byte before it is reserved).
    pub const REDIRECT_QP: Field = Field::new("cpi.redirect_qp", 33, 0, 24);
    /// RedirectQ_Key.
    pub const REDIRECT_QKEY: Field = Field::new("cpi.redirect_qkey", 36, 0, 32);
    /// TrapGID.
    pub const TRAP_GID: Bytes = Bytes::new(40, 16);
    /// TrapTC.
    pub const TRAP_TC: Field = Field::new("cpi.trap_tc", 56, 0, 8);
    /// TrapSL.
    pub const TRAP_SL: Field = Field::new("cpi.trap_sl", 57, 0, 4);
    /// TrapFL.
    pub const TRAP_FL: Field = Field::new("cpi.trap_fl", 57, 4, 20);
    /// TrapLID.
    pub const TRAP_LID: Field = Field::new("cpi.trap_lid", 60, 0, 16);
    /// TrapP_Key.
    pub const TRAP_PKEY: Field = Field::new("cpi.trap_pkey", 62, 0, 16);
    /// TrapHL.
    pub const TRAP_HOP_LIMIT: Field = Field::new("cpi.trap_hop_limit", 64, 0, 8);
    /// TrapQP.
    pub const TRAP_QP: Field = Field::new("cpi.trap_qp", 65, 0, 24);
    /// TrapQ_Key.
    pub const TRAP_QKEY: Field = Field::new("cpi.trap_qkey", 68, 0, 32);
}

/// ClassPortInfo, fields in host order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Hash)]
pub struct ClassPortInfo {
    /// Base version of the class's MADs.
    pub base_version: u8,
    /// Class version.
    pub class_version: u8,
    /// Capability mask.
    pub capability_mask: u16,
    /// Capability mask 2, 27 bits.
    pub cap_mask2: u32,
    /// Response time value, 5-bit exponent.
    pub resp_time: u8,
    /// Redirect GID.
    pub redirect_gid: Gid,
    /// Redirect traffic class.
    pub redirect_tc: u8,
    /// Redirect SL, 4 bits.
    pub redirect_sl: u8,
    /// Redirect flow label, 20 bits.
    pub redirect_fl: u32,
    /// Redirect LID.
    pub redirect_lid: u16,
    /// Redirect P_Key.
    pub redirect_pkey: u16,
    /// Redirect QP, 24 bits.
    pub redirect_qp: u32,
    /// Redirect Q_Key.
    pub redirect_qkey: u32,
    /// Trap GID.
    pub trap_gid: Gid,
    /// Trap traffic class.
    pub trap_tc: u8,
    /// Trap SL, 4 bits.
    pub trap_sl: u8,
    /// Trap flow label, 20 bits.
    pub trap_fl: u32,
    /// Trap LID.
    pub trap_lid: u16,
    /// Trap P_Key.
    pub trap_pkey: u16,
    /// Trap hop limit.
    pub trap_hop_limit: u8,
    /// Trap QP, 24 bits.
    pub trap_qp: u32,
    /// Trap Q_Key.
    pub trap_qkey: u32,
}

impl ClassPortInfo {
    /// Reads ClassPortInfo from a whole MAD.
    ///
    /// # Errors
    ///
    /// [`DecodeError::Truncated`] for fewer than 256 bytes.
    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        use fields::*;
        let mad = wire::as_mad(bytes)?;
        Ok(Self {
            base_version: BASE_VERSION.get_u8(mad),
            class_version: CLASS_VERSION.get_u8(mad),
            capability_mask: CAPABILITY_MASK.get_u16(mad),
            cap_mask2: CAP_MASK2.get_u32(mad),
            resp_time: RESP_TIME.get_u8(mad),
            redirect_gid: REDIRECT_GID.read(mad),
            redirect_tc: REDIRECT_TC.get_u8(mad),
            redirect_sl: REDIRECT_SL.get_u8(mad),
            redirect_fl: REDIRECT_FL.get_u32(mad),
            redirect_lid: REDIRECT_LID.get_u16(mad),
            redirect_pkey: REDIRECT_PKEY.get_u16(mad),
            redirect_qp: REDIRECT_QP.get_u32(mad),
            redirect_qkey: REDIRECT_QKEY.get_u32(mad),
            trap_gid: TRAP_GID.read(mad),
            trap_tc: TRAP_TC.get_u8(mad),
            trap_sl: TRAP_SL.get_u8(mad),
            trap_fl: TRAP_FL.get_u32(mad),
            trap_lid: TRAP_LID.get_u16(mad),
            trap_pkey: TRAP_PKEY.get_u16(mad),
            trap_hop_limit: TRAP_HOP_LIMIT.get_u8(mad),
            trap_qp: TRAP_QP.get_u32(mad),
            trap_qkey: TRAP_QKEY.get_u32(mad),
        })
    }

    /// Writes ClassPortInfo after the MAD header of `mad`; the header is left alone.
    ///
    /// # Errors
    ///
    /// [`EncodeError::FieldOutOfRange`] for a value wider than its field.
    pub fn encode(&self, mad: &mut Mad) -> Result<(), EncodeError> {
        use fields::*;
        wire::clear_data(mad);
        BASE_VERSION.set(mad, self.base_version.into())?;
        CLASS_VERSION.set(mad, self.class_version.into())?;
        CAPABILITY_MASK.set(mad, self.capability_mask.into())?;
        CAP_MASK2.set(mad, self.cap_mask2.into())?;
        RESP_TIME.set(mad, self.resp_time.into())?;
        REDIRECT_GID.write(mad, &self.redirect_gid)?;
        REDIRECT_TC.set(mad, self.redirect_tc.into())?;
        REDIRECT_SL.set(mad, self.redirect_sl.into())?;
        REDIRECT_FL.set(mad, self.redirect_fl.into())?;
        REDIRECT_LID.set(mad, self.redirect_lid.into())?;
        REDIRECT_PKEY.set(mad, self.redirect_pkey.into())?;
        REDIRECT_QP.set(mad, self.redirect_qp.into())?;
        REDIRECT_QKEY.set(mad, self.redirect_qkey.into())?;
        TRAP_GID.write(mad, &self.trap_gid)?;
        TRAP_TC.set(mad, self.trap_tc.into())?;
        TRAP_SL.set(mad, self.trap_sl.into())?;
        TRAP_FL.set(mad, self.trap_fl.into())?;
        TRAP_LID.set(mad, self.trap_lid.into())?;
        TRAP_PKEY.set(mad, self.trap_pkey.into())?;
        TRAP_HOP_LIMIT.set(mad, self.trap_hop_limit.into())?;
        TRAP_QP.set(mad, self.trap_qp.into())?;
        TRAP_QKEY.set(mad, self.trap_qkey.into())
    }
}
