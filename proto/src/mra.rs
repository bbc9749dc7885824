//! MessageReceiptAcknowledgement (MRA, attribute 0x0011): IBTA vol. 1 table 107.

use super::message::cm_message;
use super::msg_code::MessageCode;
use super::pdata::PrivateData;

/// MRA private data capacity (`IB_CM_MRA_PRIVATE_DATA_SIZE`).
pub const MRA_PRIVATE_DATA_SIZE: usize = 222;

cm_message! {
    /// An MRA, fields in host order.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct Mra("mra") {
        /// LocalCommID.
        LOCAL_COMM_ID @ bits(0, 0, 32)
            /// Sender's communication ID.
            => local_comm_id: u32;
        /// RemoteCommID.
        REMOTE_COMM_ID @ bits(4, 0, 32)
            /// Receiver's communication ID.
            => remote_comm_id: u32;
        /// MessageMRAed.
        MESSAGE_MRAED @ bits(8, 0, 2)
            /// The message being acknowledged.
            => message_mraed: MessageCode;
        /// ServiceTimeout.
        SERVICE_TIMEOUT @ bits(9, 0, 5)
            /// Extra time the sender needs, 5-bit exponent (Linux always sends 24).
            => service_timeout: u8;
        /// PrivateData.
        PRIVATE_DATA @ bytes(10, MRA_PRIVATE_DATA_SIZE)
            /// Private data.
            => private_data: PrivateData<MRA_PRIVATE_DATA_SIZE>;
    }

    /// Reads an MRA from a whole MAD.
    ///
    /// # Errors
    ///
    /// [`DecodeError::Truncated`], or [`DecodeError::ReservedMessageCode`] for MsgMRAed 3.
    ///
    /// [`DecodeError::Truncated`]: super::error::DecodeError::Truncated
    /// [`DecodeError::ReservedMessageCode`]: super::error::DecodeError::ReservedMessageCode
    fn decode;

    /// Writes the MRA into the message data of `mad`; the header is left alone.
    ///
    /// # Errors
    ///
    /// [`EncodeError::FieldOutOfRange`](super::error::EncodeError::FieldOutOfRange) for a
    /// service timeout above 31.
    fn encode;
}
