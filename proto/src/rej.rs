//! ConnectReject (REJ, attribute 0x0012): IBTA vol. 1 table 108.

use super::message::cm_message;
use super::msg_code::MessageCode;
use super::pdata::{AdditionalInfo, PrivateData, INFO_SIZE};

/// REJ private data capacity (`IB_CM_REJ_PRIVATE_DATA_SIZE`).
pub const REJ_PRIVATE_DATA_SIZE: usize = 148;

/// REJ reasons cepm generates or matches on (`enum ib_cm_rej_reason` in `include/rdma/ib_cm.h`).
pub mod reason {
    /// No QP available.
    pub const NO_QP: u16 = 1;
    /// No resources.
    pub const NO_RESOURCES: u16 = 3;
    /// Timeout; the ARI holds the rejector's CA GUID.
    pub const TIMEOUT: u16 = 4;
    /// Invalid communication ID.
    pub const INVALID_COMM_ID: u16 = 6;
    /// No listener for the service ID.
    pub const INVALID_SERVICE_ID: u16 = 8;
    /// Invalid transport type.
    pub const INVALID_TRANSPORT_TYPE: u16 = 9;
    /// Stale connection: the QPN (or comm ID) is still in use or in timewait.
    pub const STALE_CONN: u16 = 10;
    /// Invalid GID (passive route resolution failed).
    pub const INVALID_GID: u16 = 12;
    /// Consumer defined (`rdma_reject`, destroy before reply).
    pub const CONSUMER_DEFINED: u16 = 28;
    /// Invalid class version.
    pub const INVALID_CLASS_VERSION: u16 = 31;
}

cm_message! {
    /// A REJ, fields in host order.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct Rej("rej") {
        /// LocalCommID (0 when rejecting a REQ before a local ID exists).
        LOCAL_COMM_ID @ bits(0, 0, 32)
            /// Sender's communication ID (0 if it has none yet).
            => local_comm_id: u32;
        /// RemoteCommID.
        REMOTE_COMM_ID @ bits(4, 0, 32)
            /// Receiver's communication ID.
            => remote_comm_id: u32;
        /// MessageRejected.
        MESSAGE_REJECTED(message_rejected) @ bits(8, 0, 2)
            = |m| u64::from(m.message_rejected.to_u8());
        /// The message being rejected. The reserved value 3 reads as OTHER: the REJ is still
        /// the peer's word on the connection, and dropping it would leave the peer retrying.
        => message_rejected: MessageCode = |w| MessageCode::from_wire_or_other(
            MESSAGE_REJECTED.get_u8(w),
        );
        /// RejectedInfoLength (ARI length), 7 bits.
        REJECTED_INFO_LENGTH(rejected_info_length) @ bits(9, 0, 7) = |m| m.ari.len() as u64;
        /// Reason.
        REASON @ bits(10, 0, 16)
            /// Reason code (see [`reason`]).
            => reason: u16;
        /// Additional rejection information.
        ARI @ bytes(12, INFO_SIZE)
            /// Additional rejection information, at most 72 bytes.
            => ari: AdditionalInfo, len REJECTED_INFO_LENGTH clamped;
        /// PrivateData.
        PRIVATE_DATA @ bytes(84, REJ_PRIVATE_DATA_SIZE)
            /// Private data.
            => private_data: PrivateData<REJ_PRIVATE_DATA_SIZE>;
    }

    /// Reads a REJ from a whole MAD.
    ///
    /// # Errors
    ///
    /// [`DecodeError::Truncated`] only. A RejectedInfoLength over 72 is clamped to 72
    /// (Linux passes it on unclamped, `cm_format_rej_event` in
    /// `drivers/infiniband/core/cm.c`), and MessageRejected 3 (reserved) reads as OTHER.
    ///
    /// [`DecodeError::Truncated`]: super::error::DecodeError::Truncated
    fn decode;

    /// Writes the REJ into the message data of `mad`; the header is left alone.
    ///
    /// # Errors
    ///
    /// None in practice: every field is full width or bounded by its type.
    fn encode;
}
