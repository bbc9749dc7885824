//! DisconnectRequest (DREQ, attribute 0x0015): IBTA vol. 1 table 112.

use super::message::cm_message;
use super::pdata::PrivateData;

/// DREQ private data capacity (`IB_CM_DREQ_PRIVATE_DATA_SIZE`).
pub const DREQ_PRIVATE_DATA_SIZE: usize = 220;

cm_message! {
    /// A DREQ, fields in host order.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct Dreq("dreq") {
        /// LocalCommID.
        LOCAL_COMM_ID @ bits(0, 0, 32)
            /// Sender's communication ID.
            => local_comm_id: u32;
        /// RemoteCommID.
        REMOTE_COMM_ID @ bits(4, 0, 32)
            /// Receiver's communication ID.
            => remote_comm_id: u32;
        /// RemoteQPN/EECN.
        REMOTE_QPN @ bits(8, 0, 24)
            /// The receiver's QPN (checked against the local QPN,
            /// `cm_dreq_handler` in `drivers/infiniband/core/cm.c`), 24 bits, never 0.
            => remote_qpn: u32, nonzero;
        /// PrivateData.
        PRIVATE_DATA @ bytes(12, DREQ_PRIVATE_DATA_SIZE)
            /// Private data.
            => private_data: PrivateData<DREQ_PRIVATE_DATA_SIZE>;
    }

    /// Reads a DREQ from a whole MAD.
    ///
    /// # Errors
    ///
    /// [`DecodeError::Truncated`], or [`DecodeError::ZeroQpn`] for RemoteQPN 0.
    ///
    /// [`DecodeError::Truncated`]: super::error::DecodeError::Truncated
    /// [`DecodeError::ZeroQpn`]: super::error::DecodeError::ZeroQpn
    fn decode;

    /// Writes the DREQ into the message data of `mad`; the header is left alone.
    ///
    /// # Errors
    ///
    /// [`EncodeError::FieldOutOfRange`](super::error::EncodeError::FieldOutOfRange) for a
    /// QPN of 0 or wider than 24 bits.
    fn encode;
}
