//! DisconnectReply (DREP, attribute 0x0016): IBTA vol. 1 table 113.

use super::message::cm_message;
use super::pdata::PrivateData;

/// DREP private data capacity (`IB_CM_DREP_PRIVATE_DATA_SIZE`).
pub const DREP_PRIVATE_DATA_SIZE: usize = 224;

cm_message! {
    /// a DREP, fields in host order.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct Drep("drep") {
        /// LocalCommID.
        LOCAL_COMM_ID @ bits(0, 0, 32)
            /// Sender's communication ID.
            => local_comm_id: u32;
        /// RemoteCommID.
        REMOTE_COMM_ID @ bits(4, 0, 32)
            /// Receiver's communication ID.
            => remote_comm_id: u32;
        /// PrivateData.
        PRIVATE_DATA @ bytes(8, DREP_PRIVATE_DATA_SIZE)
            /// Private data.
            => private_data: PrivateData<DREP_PRIVATE_DATA_SIZE>;
    }

    /// Reads a DREP from a whole MAD.
    ///
    /// # Errors
    ///
    /// [`DecodeError::Truncated`](super::error::DecodeError::Truncated) for fewer than
    /// 256 bytes.
    fn decode;

    /// Writes a DREP into the message data of `mad`; the header is left alone.
    ///
    /// # Errors
    ///
    /// None in practice: every field is full width or bounded by its type.
    fn encode;
}
