//! ClassPortInfo (attribute 0x0001) of the CM class: IBTA vol. 1 table 126,
//! `struct ib_class_port_info` (`include/rdma/ib_mad.h`).
//!
//! Linux has no CM handler for it: a Get is answered by the MAD layer with status
//! "unsupported" (`generate_unmatched_resp` in `drivers/infiniband/core/mad.c`). cepm can
//! decode and build one.

use super::message::cm_message;
use super::path::Gid;

cm_message! {
    /// ClassPortInfo, fields in host order.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Hash)]
    pub struct ClassPortInfo("cpi") {
        /// BaseVersion.
        BASE_VERSION @ bits(0, 0, 8)
            /// Base version of the class's MADs.
            => base_version: u8;
        /// ClassVersion.
        CLASS_VERSION @ bits(1, 0, 8)
            /// Class version.
            => class_version: u8;
        /// CapabilityMask.
        CAPABILITY_MASK @ bits(2, 0, 16)
            /// Capability mask.
            => capability_mask: u16;
        /// CapabilityMask2, 27 bits.
        CAP_MASK2 @ bits(4, 0, 27)
            /// Capability mask 2, 27 bits.
            => cap_mask2: u32;
        /// RespTimeValue, 5 bits.
        RESP_TIME @ bits(7, 3, 5)
            /// Response time value, 5-bit exponent.
            => resp_time: u8;
        /// RedirectGID.
        REDIRECT_GID @ bytes(8, 16)
            /// Redirect GID.
            => redirect_gid: Gid;
        /// RedirectTC.
        REDIRECT_TC @ bits(24, 0, 8)
            /// Redirect traffic class.
            => redirect_tc: u8;
        /// RedirectSL.
        REDIRECT_SL @ bits(25, 0, 4)
            /// Redirect SL, 4 bits.
            => redirect_sl: u8;
        /// RedirectFL.
        REDIRECT_FL @ bits(25, 4, 20)
            /// Redirect flow label, 20 bits.
            => redirect_fl: u32;
        /// RedirectLID.
        REDIRECT_LID @ bits(28, 0, 16)
            /// Redirect LID.
            => redirect_lid: u16;
        /// RedirectP_Key.
        REDIRECT_PKEY @ bits(30, 0, 16)
            /// Redirect P_Key.
            => redirect_pkey: u16;
        /// RedirectQP (the byte before it is reserved).
        REDIRECT_QP @ bits(33, 0, 24)
            /// Redirect QP, 24 bits.
            => redirect_qp: u32;
        /// RedirectQ_Key.
        REDIRECT_QKEY @ bits(36, 0, 32)
            /// Redirect Q_Key.
            => redirect_qkey: u32;
        /// TrapGID.
        TRAP_GID @ bytes(40, 16)
            /// Trap GID.
            => trap_gid: Gid;
        /// TrapTC.
        TRAP_TC @ bits(56, 0, 8)
            /// Trap traffic class.
            => trap_tc: u8;
        /// TrapSL.
        TRAP_SL @ bits(57, 0, 4)
            /// Trap SL, 4 bits.
            => trap_sl: u8;
        /// TrapFL.
        TRAP_FL @ bits(57, 4, 20)
            /// Trap flow label, 20 bits.
            => trap_fl: u32;
        /// TrapLID.
        TRAP_LID @ bits(60, 0, 16)
            /// Trap LID.
            => trap_lid: u16;
        /// TrapP_Key.
        TRAP_PKEY @ bits(62, 0, 16)
            /// Trap P_Key.
            => trap_pkey: u16;
        /// TrapHL.
        TRAP_HOP_LIMIT @ bits(64, 0, 8)
            /// Trap hop limit.
            => trap_hop_limit: u8;
        /// TrapQP.
        TRAP_QP @ bits(65, 0, 24)
            /// Trap QP, 24 bits.
            => trap_qp: u32;
        /// TrapQ_Key.
        TRAP_QKEY @ bits(68, 0, 32)
            /// Trap Q_Key.
            => trap_qkey: u32;
    }

    /// Reads ClassPortInfo from a whole MAD.
    ///
    /// # Errors
    ///
    /// [`DecodeError::Truncated`](super::error::DecodeError::Truncated) for fewer than
    /// 256 bytes.
    fn decode;

    /// Writes ClassPortInfo after the MAD header of `mad`; the header is left alone.
    ///
    /// # Errors
    ///
    /// [`EncodeError::FieldOutOfRange`](super::error::EncodeError::FieldOutOfRange) for a
    /// value wider than its field.
    fn encode;
}
