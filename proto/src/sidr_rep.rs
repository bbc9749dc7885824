//! ServiceIDResolutionResponse (SIDR_REP, attribute 0x0018): IBTA vol. 1 table 120.

use super::error::{DecodeError, EncodeError};
use super::mad::AttrId;
use super::message::cm_message;
use super::pdata::{AdditionalInfo, PrivateData, INFO_SIZE};
use super::wire::Mad;

/// SIDR_REP private data capacity (`IB_CM_SIDR_REP_PRIVATE_DATA_SIZE`).
pub const SIDR_REP_PRIVATE_DATA_SIZE: usize = 136;

/// SIDR_REP status values (`enum ib_cm_sidr_status`, `include/rdma/ib_cm.h`).
pub mod status {
    /// The QP information is valid.
    pub const SUCCESS: u8 = 0;
    /// No such service.
    pub const UNSUPPORTED: u8 = 1;
    /// Rejected by the service.
    pub const REJECT: u8 = 2;
    /// No QP available.
    pub const NO_QP: u8 = 3;
    /// Redirect; the additional information says where.
    pub const REDIRECT: u8 = 4;
    /// Unsupported class version.
    pub const UNSUPPORTED_VERSION: u8 = 5;
}

cm_message! {
    /// A SIDR_REP, fields in host order.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Hash)]
    pub struct SidrRep("sidr_rep") {
        /// RequestID.
        REQUEST_ID @ bits(0, 0, 32)
            /// The SIDR_REQ's RequestID.
            => request_id: u32;
        /// Status.
        STATUS @ bits(4, 0, 8)
            /// Status (see [`status`]).
            => status: u8;
        /// AdditionalInfoLength.
        ADDITIONAL_INFO_LENGTH(additional_info_length) @ bits(5, 0, 8)
            = |m| m.additional_info.len() as u64;
        /// VendorID bits 23..8 (a 16-bit field).
        VENDOR_ID_H(vendor_id_h) @ bits(6, 0, 16) = |m| u64::from(m.vendor_id >> 8);
        /// ECE vendor ID, 24 bits: 16 bits at byte 6 and 8 bits at byte 11. (Linux masks
        /// the high part to 8 bits when sending, `cm_format_sidr_rep` in
        /// `drivers/infiniband/core/cm.c`.)
        => vendor_id: u32 = |w| (VENDOR_ID_H.get_u32(w) << 8) | VENDOR_ID_L.get_u32(w);
        /// QPN.
        QPN @ bits(8, 0, 24)
            /// The service's UD QPN, 24 bits; never 0 when `status` is success.
            => qpn: u32;
        /// VendorID bits 7..0.
        VENDOR_ID_L(vendor_id_l) @ bits(11, 0, 8) = |m| u64::from(m.vendor_id & 0xff);
        /// ServiceID.
        SERVICE_ID @ bits(12, 0, 64)
            /// Service ID.
            => service_id: u64;
        /// Q_Key.
        QKEY @ bits(20, 0, 32)
            /// The service's Q_Key.
            => qkey: u32;
        /// AdditionalInfo.
        ADDITIONAL_INFO @ bytes(24, INFO_SIZE)
            /// Additional information, at most 72 bytes.
            => additional_info: AdditionalInfo, len ADDITIONAL_INFO_LENGTH;
        /// PrivateData.
        PRIVATE_DATA @ bytes(96, SIDR_REP_PRIVATE_DATA_SIZE)
            /// Private data.
            => private_data: PrivateData<SIDR_REP_PRIVATE_DATA_SIZE>;
    }

    /// Reads a SIDR_REP from a whole MAD.
    ///
    /// # Errors
    ///
    /// [`DecodeError::Truncated`], [`DecodeError::InfoTooLong`] for an
    /// AdditionalInfoLength over 72, or [`DecodeError::ZeroQpn`] for QPN 0 with status
    /// success.
    fn decode(validate = Self::validate_wire);

    /// Writes the SIDR_REP into the message data of `mad`; the header is left alone.
    ///
    /// # Errors
    ///
    /// [`EncodeError::FieldOutOfRange`] for a value wider than its field, or QPN 0 with
    /// status success.
    fn encode(validate = Self::validate);
}

impl SidrRep {
    /// A successful SIDR_REP names a QP (checked after the info length).
    fn validate_wire(mad: &Mad) -> Result<(), DecodeError> {
        if fields::STATUS.get_u8(mad) == status::SUCCESS && fields::QPN.get(mad) == 0 {
            return Err(DecodeError::ZeroQpn(AttrId::SidrRep));
        }
        Ok(())
    }

    /// The same rule on encode, and a vendor ID that fits its 24 bits.
    fn validate(&self) -> Result<(), EncodeError> {
        if self.status == status::SUCCESS && self.qpn == 0 {
            return Err(EncodeError::FieldOutOfRange(fields::QPN.name));
        }
        if self.vendor_id > 0x00ff_ffff {
            return Err(EncodeError::FieldOutOfRange("sidr_rep.vendor_id"));
        }
        Ok(())
    }
}
