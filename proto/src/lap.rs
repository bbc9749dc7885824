//! LoadAlternatePath (LAP, attribute 0x0019): IBTA vol. 1 table 115.
//!
//! Linux stopped sending LAP in v5.6 and ignores it on RoCE (`cm_lap_handler` in
//! `drivers/infiniband/core/cm.c`); cepm decodes it so it can count and drop it.

use super::message::cm_message;
use super::path::{CmPath, LAP_ALTERNATE};
use super::pdata::PrivateData;

/// LAP private data capacity (`IB_CM_LAP_PRIVATE_DATA_SIZE`).
pub const LAP_PRIVATE_DATA_SIZE: usize = 168;

cm_message! {
    /// A LAP, fields in host order.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct Lap("lap") {
        /// LocalCommID.
        LOCAL_COMM_ID @ bits(0, 0, 32)
            /// Sender's communication ID.
            => local_comm_id: u32;
        /// RemoteCommID.
        REMOTE_COMM_ID @ bits(4, 0, 32)
            /// Receiver's communication ID.
            => remote_comm_id: u32;
        /// RemoteQPN/EECN.
        REMOTE_QPN @ bits(12, 0, 24)
            /// Receiver's QPN, 24 bits, never 0.
            => remote_qpn: u32, nonzero;
        /// RemoteCMResponseTimeout.
        REMOTE_CM_RESPONSE_TIMEOUT @ bits(15, 0, 5)
            /// How long the receiver may take to answer, 5-bit exponent.
            => remote_cm_response_timeout: u8;
        @ layout(LAP_ALTERNATE)
            /// The proposed alternate path.
            => alternate_path: CmPath;
        /// PrivateData.
        PRIVATE_DATA @ bytes(64, LAP_PRIVATE_DATA_SIZE)
            /// Private data.
            => private_data: PrivateData<LAP_PRIVATE_DATA_SIZE>;
    }

    /// Reads a LAP from a whole MAD.
    ///
    /// # Errors
    ///
    /// [`DecodeError::Truncated`], or [`DecodeError::ZeroQpn`] for RemoteQPN 0.
    ///
    /// [`DecodeError::Truncated`]: super::error::DecodeError::Truncated
    /// [`DecodeError::ZeroQpn`]: super::error::DecodeError::ZeroQpn
    fn decode;

    /// Writes the LAP into the message data of `mad`; the header is left alone.
    ///
    /// # Errors
    ///
    /// [`EncodeError::FieldOutOfRange`](super::error::EncodeError::FieldOutOfRange) for a
    /// value wider than its field or a QPN of 0.
    fn encode;
}
