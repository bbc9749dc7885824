//! ReadyToUse (RTU, attribute 0x0014): IBTA vol. 1 table 111.

use super::message::cm_message;
use super::pdata::PrivateData;

/// RTU private data capacity (`IB_CM_RTU_PRIVATE_DATA_SIZE`).
pub const RTU_PRIVATE_DATA_SIZE: usize = 224;

cm_message! {
    /// an RTU, fields in host order.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct Rtu("rtu") {
        /// LocalCommID.
        LOCAL_COMM_ID @ bits(0, 0, 32)
            /// Sender's communication ID.
            => local_comm_id: u32;
        /// RemoteCommID.
        REMOTE_COMM_ID @ bits(4, 0, 32)
            /// Receiver's communication ID.
            => remote_comm_id: u32;
        /// PrivateData.
        PRIVATE_DATA @ bytes(8, RTU_PRIVATE_DATA_SIZE)
            /// Private data.
            => private_data: PrivateData<RTU_PRIVATE_DATA_SIZE>;
    }

    /// Reads an RTU from a whole MAD.
    ///
    /// # Errors
    ///
    /// [`DecodeError::Truncated`](super::error::DecodeError::Truncated) for fewer than
    /// 256 bytes.
    fn decode;

    /// Writes an RTU into the message data of `mad`; the header is left alone.
    ///
    /// # Errors
    ///
    /// None in practice: every field is full width or bounded by its type.
    fn encode;
}
