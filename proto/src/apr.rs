//! AlternatePathResponse (APR, attribute 0x001A): IBTA vol. 1 table 116.
//!
//! Like LAP, ignored on RoCE by Linux (`cm_apr_handler` in `drivers/infiniband/core/cm.c`).

use super::error::{DecodeError, EncodeError};
use super::mad::AttrId;
use super::pdata::{AdditionalInfo, PrivateData, INFO_SIZE};
use super::wire::{self, Bytes, Field, Mad};

/// APR private data capacity (`IB_CM_APR_PRIVATE_DATA_SIZE`).
pub const APR_PRIVATE_DATA_SIZE: usize = 148;

/// APR field positions (message-data offsets).
pub mod fields {
    use super::{Bytes, Field};

    /// LocalCommID.
    pub const LOCAL_COMM_ID: Field = Field::new("apr.local_comm_id", 0, 0, 32);
    /// RemoteCommID.
    pub const REMOTE_COMM_ID: Field = Field::new("apr.remote_comm_id", 4, 0, 32);
    /// AdditionalInfoLength.
    pub const ADDITIONAL_INFO_LENGTH: Field = Field::new("apr.additional_info_length", 8, 0, 8);
    /// APStatus.
    pub const AP_STATUS: Field = Field::new("apr.ap_status", 9, 0, 8);
    /// AdditionalInfo.
    pub const ADDITIONAL_INFO: Bytes = Bytes::new(12, super::INFO_SIZE);
    /// PrivateData.
    pub const PRIVATE_DATA: Bytes = Bytes::new(84, super::APR_PRIVATE_DATA_SIZE);
}

/// An APR, fields in host order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Apr {
    /// Sender's communication ID.
    pub local_comm_id: u32,
    /// Receiver's communication ID.
    pub remote_comm_id: u32,
    /// AP status (`enum ib_cm_apr_status`, 0 = success).
    pub ap_status: u8,
    /// Additional information, at most 72 bytes.
    pub additional_info: AdditionalInfo,
    /// Private data.
    pub private_data: PrivateData<APR_PRIVATE_DATA_SIZE>,
}

impl Apr {
    /// Reads an APR from a whole MAD.
    ///
    /// # Errors
    ///
    /// [`DecodeError::Truncated`], or [`DecodeError::InfoTooLong`] for
    /// AdditionalInfoLength over 72.
    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        use fields::*;
        let mad = wire::as_mad(bytes)?;
        let info_len = ADDITIONAL_INFO_LENGTH.get_u8(mad);
        if usize::from(info_len) > INFO_SIZE {
            return Err(DecodeError::InfoTooLong(AttrId::Apr, info_len));
        }
        Ok(Self {
            local_comm_id: LOCAL_COMM_ID.get_u32(mad),
            remote_comm_id: REMOTE_COMM_ID.get_u32(mad),
            ap_status: AP_STATUS.get_u8(mad),
            additional_info: PrivateData::from_prefix(&ADDITIONAL_INFO.read(mad), info_len.into()),
            private_data: PrivateData::from_array(PRIVATE_DATA.read(mad)),
        })
    }

    /// Writes the APR into the message data of `mad`; the header is left alone.
    ///
    /// # Errors
    ///
    /// None in practice: every field is full width or bounded by its type.
    pub fn encode(&self, mad: &mut Mad) -> Result<(), EncodeError> {
        use fields::*;
        wire::clear_data(mad);
        LOCAL_COMM_ID.set(mad, self.local_comm_id.into())?;
        REMOTE_COMM_ID.set(mad, self.remote_comm_id.into())?;
        ADDITIONAL_INFO_LENGTH.set(mad, self.additional_info.len() as u64)?;
        AP_STATUS.set(mad, self.ap_status.into())?;
        ADDITIONAL_INFO.write(mad, self.additional_info.as_bytes())?;
        PRIVATE_DATA.write(mad, self.private_data.as_bytes())
    }
}
