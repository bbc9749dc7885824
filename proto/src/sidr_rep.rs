//! ServiceIDResolutionResponse (SIDR_REP, attribute 0x0018): IBTA vol. 1 table 120.

use super::error::{DecodeError, EncodeError};
use super::mad::AttrId;
use super::pdata::{AdditionalInfo, PrivateData, INFO_SIZE};
use super::wire::{self, Bytes, Field, Mad};

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

/// SIDR_REP field positions (message-data offsets).
pub mod fields {
    use super::{Bytes, Field};

    /// RequestID.
    pub const REQUEST_ID: Field = Field::new("sidr_rep.request_id", 0, 0, 32);
    /// Status.
    pub const STATUS: Field = Field::new("sidr_rep.status", 4, 0, 8);
    /// AdditionalInfoLength.
    pub const ADDITIONAL_INFO_LENGTH: Field =
        Field::new("sidr_rep.additional_info_length", 5, 0, 8);
    /// VendorID bits 23..8 (a 16-bit field).
    pub const VENDOR_ID_H: Field = Field::new("sidr_rep.vendor_id_h", 6, 0, 16);
    /// QPN.
    pub const QPN: Field = Field::new("sidr_rep.qpn", 8, 0, 24);
    /// VendorID bits 7..0.
    pub const VENDOR_ID_L: Field = Field::new("sidr_rep.vendor_id_l", 11, 0, 8);
    /// ServiceID.
    pub const SERVICE_ID: Field = Field::new("sidr_rep.service_id", 12, 0, 64);
    /// Q_Key.
    pub const QKEY: Field = Field::new("sidr_rep.qkey", 20, 0, 32);
    /// AdditionalInfo.
    pub const ADDITIONAL_INFO: Bytes = Bytes::new(24, super::INFO_SIZE);
    /// PrivateData.
    pub const PRIVATE_DATA: Bytes = Bytes::new(96, super::SIDR_REP_PRIVATE_DATA_SIZE);
}

/// A SIDR_REP, fields in host order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Hash)]
pub struct SidrRep {
    /// The SIDR_REQ's RequestID.
    pub request_id: u32,
    /// Status (see [`status`]).
    pub status: u8,
    /// ECE vendor ID, 24 bits: 16 bits at byte 6 and 8 bits at byte 11. (Linux masks the
    /// high part to 8 bits when sending, `cm_format_sidr_rep` in `drivers/infiniband/core/cm.c`.)
    pub vendor_id: u32,
    /// The service's UD QPN, 24 bits; never 0 when `status` is success.
    pub qpn: u32,
    /// Service ID.
    pub service_id: u64,
    /// The service's Q_Key.
    pub qkey: u32,
    /// Additional information, at most 72 bytes.
    pub additional_info: AdditionalInfo,
    /// Private data.
    pub private_data: PrivateData<SIDR_REP_PRIVATE_DATA_SIZE>,
}

impl SidrRep {
    /// Reads a SIDR_REP from a whole MAD.
    ///
    /// # Errors
    ///
    /// [`DecodeError::Truncated`], [`DecodeError::InfoTooLong`] for an
    /// AdditionalInfoLength over 72, or [`DecodeError::ZeroQpn`] for QPN 0 with status
    /// success.
    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        use fields::*;
        let mad = wire::as_mad(bytes)?;
        let info_len = ADDITIONAL_INFO_LENGTH.get_u8(mad);
        if usize::from(info_len) > INFO_SIZE {
            return Err(DecodeError::InfoTooLong(AttrId::SidrRep, info_len));
        }
        let status = STATUS.get_u8(mad);
        let qpn = QPN.get_u32(mad);
        if status == status::SUCCESS && qpn == 0 {
            return Err(DecodeError::ZeroQpn(AttrId::SidrRep));
        }
        Ok(Self {
            request_id: REQUEST_ID.get_u32(mad),
            status,
            vendor_id: (VENDOR_ID_H.get_u32(mad) << 8) | VENDOR_ID_L.get_u32(mad),
            qpn,
            service_id: SERVICE_ID.get(mad),
            qkey: QKEY.get_u32(mad),
            additional_info: PrivateData::from_prefix(&ADDITIONAL_INFO.read(mad), info_len.into()),
            private_data: PrivateData::from_array(PRIVATE_DATA.read(mad)),
        })
    }

    /// Writes the SIDR_REP into the message data of `mad`; the header is left alone.
    ///
    /// # Errors
    ///
    /// [`EncodeError::FieldOutOfRange`] for a value wider than its field, or QPN 0 with
    /// status success.
    pub fn encode(&self, mad: &mut Mad) -> Result<(), EncodeError> {
        use fields::*;
        if self.status == status::SUCCESS && self.qpn == 0 {
            return Err(EncodeError::FieldOutOfRange(QPN.name));
        }
        if self.vendor_id > 0x00ff_ffff {
            return Err(EncodeError::FieldOutOfRange("sidr_rep.vendor_id"));
        }
        wire::clear_data(mad);
        REQUEST_ID.set(mad, self.request_id.into())?;
        STATUS.set(mad, self.status.into())?;
        ADDITIONAL_INFO_LENGTH.set(mad, self.additional_info.len() as u64)?;
        VENDOR_ID_H.set(mad, u64::from(self.vendor_id >> 8))?;
        QPN.set(mad, self.qpn.into())?;
        VENDOR_ID_L.set(mad, u64::from(self.vendor_id & 0xff))?;
        SERVICE_ID.set(mad, self.service_id)?;
        QKEY.set(mad, self.qkey.into())?;
        ADDITIONAL_INFO.write(mad, self.additional_info.as_bytes())?;
        PRIVATE_DATA.write(mad, self.private_data.as_bytes())
    }
}
