//! AlternatePathResponse (APR, attribute 0x001A): IBTA vol. 1 table 116.
//!
//! Like LAP, ignored on RoCE by Linux (`cm_apr_handler` in `drivers/infiniband/core/cm.c`).

use super::message::cm_message;
use super::pdata::{AdditionalInfo, PrivateData, INFO_SIZE};

/// APR private data capacity (`IB_CM_APR_PRIVATE_DATA_SIZE`).
pub const APR_PRIVATE_DATA_SIZE: usize = 148;

cm_message! {
    /// An APR, fields in host order.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct Apr("apr") {
        /// LocalCommID.
        LOCAL_COMM_ID @ bits(0, 0, 32)
            /// Sender's communication ID.
            => local_comm_id: u32;
        /// RemoteCommID.
        REMOTE_COMM_ID @ bits(4, 0, 32)
            /// Receiver's communication ID.
            => remote_comm_id: u32;
        /// AdditionalInfoLength.
        ADDITIONAL_INFO_LENGTH(additional_info_length) @ bits(8, 0, 8)
            = |m| m.additional_info.len() as u64;
        /// APStatus.
        AP_STATUS @ bits(9, 0, 8)
            /// AP status (`enum ib_cm_apr_status`, 0 = success).
            => ap_status: u8;
        /// AdditionalInfo.
        ADDITIONAL_INFO @ bytes(12, INFO_SIZE)
            /// Additional information, at most 72 bytes.
            => additional_info: AdditionalInfo, len ADDITIONAL_INFO_LENGTH clamped;
        /// PrivateData.
        PRIVATE_DATA @ bytes(84, APR_PRIVATE_DATA_SIZE)
            /// Private data.
            => private_data: PrivateData<APR_PRIVATE_DATA_SIZE>;
    }

    /// Reads an APR from a whole MAD.
    ///
    /// # Errors
    ///
    /// [`DecodeError::Truncated`], or [`DecodeError::InfoTooLong`] for
    /// AdditionalInfoLength over 72.
    ///
    /// [`DecodeError::Truncated`]: super::error::DecodeError::Truncated
    /// [`DecodeError::InfoTooLong`]: super::error::DecodeError::InfoTooLong
    fn decode;

    /// Writes the APR into the message data of `mad`; the header is left alone.
    ///
    /// # Errors
    ///
    /// None in practice: every field is full width or bounded by its type.
    fn encode;
}
