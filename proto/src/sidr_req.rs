//! ServiceIDResolutionRequest (SIDR_REQ, attribute 0x0017): IBTA vol. 1 table 119.

use super::message::cm_message;
use super::pdata::PrivateData;

/// SIDR_REQ private data capacity (`IB_CM_SIDR_REQ_PRIVATE_DATA_SIZE`).
pub const SIDR_REQ_PRIVATE_DATA_SIZE: usize = 216;

cm_message! {
    /// A SIDR_REQ, fields in host order.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
    pub struct SidrReq("sidr_req") {
        /// RequestID.
        REQUEST_ID @ bits(0, 0, 32)
            /// Requester's ID (Linux: its local comm ID).
            => request_id: u32;
        /// PartitionKey.
        PKEY @ bits(4, 0, 16)
            /// P_Key.
            => pkey: u16;
        /// ServiceID.
        SERVICE_ID @ bits(8, 0, 64)
            /// Service ID (RDMA CM UDP: `0x0000000001110000 | port`).
            => service_id: u64;
        /// PrivateData.
        PRIVATE_DATA @ bytes(16, SIDR_REQ_PRIVATE_DATA_SIZE)
            /// Private data (RDMA CM puts its 36-byte `cma_hdr` first).
            => private_data: PrivateData<SIDR_REQ_PRIVATE_DATA_SIZE>;
    }

    /// Reads a SIDR_REQ from a whole MAD.
    ///
    /// # Errors
    ///
    /// [`DecodeError::Truncated`](super::error::DecodeError::Truncated) for fewer than
    /// 256 bytes.
    fn decode;

    /// Writes the SIDR_REQ into the message data of `mad`; the header is left alone.
    ///
    /// # Errors
    ///
    /// None in practice: every field is full width or bounded by its type.
    fn encode;
}
