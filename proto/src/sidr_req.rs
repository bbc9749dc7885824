//! ServiceIDResolutionRequest (SIDR_REQ, attribute 0x0017): IBTA vol. 1 table 119.

use super::error::{DecodeError, EncodeError};
use super::pdata::PrivateData;
use super::wire::{self, Bytes, Field, Mad};

/// SIDR_REQ private data capacity (`IB_CM_SIDR_REQ_PRIVATE_DATA_SIZE`).
pub const SIDR_REQ_PRIVATE_DATA_SIZE: usize = 216;

/// SIDR_REQ field positions (message-data offsets).
pub mod fields {
    use super::{Bytes, Field};

    /// RequestID.
    pub const REQUEST_ID: Field = Field::new("sidr_req.request_id", 0, 0, 32);
    /// PartitionKey.
    pub const PKEY: Field = Field::new("sidr_req.pkey", 4, 0, 16);
    /// ServiceID.
    pub const SERVICE_ID: Field = Field::new("sidr_req.service_id", 8, 0, 64);
    /// PrivateData.
    pub const PRIVATE_DATA: Bytes = Bytes::new(16, super::SIDR_REQ_PRIVATE_DATA_SIZE);
}

/// A SIDR_REQ, fields in host order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SidrReq {
    /// Requester's ID (Linux: its local comm ID).
    pub request_id: u32,
    /// P_Key.
    pub pkey: u16,
    /// Service ID (RDMA CM UDP: `0x0000000001110000 | port`).
    pub service_id: u64,
    /// Private data (RDMA CM puts its 36-byte `cma_hdr` first).
    pub private_data: PrivateData<SIDR_REQ_PRIVATE_DATA_SIZE>,
}

impl SidrReq {
    /// Reads a SIDR_REQ from a whole MAD.
    ///
    /// # Errors
    ///
    /// [`DecodeError::Truncated`] for fewer than 256 bytes.
    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        use fields::*;
        let mad = wire::as_mad(bytes)?;
        Ok(Self {
            request_id: REQUEST_ID.get_u32(mad),
            pkey: PKEY.get_u16(mad),
            service_id: SERVICE_ID.get(mad),
            private_data: PrivateData::from_array(PRIVATE_DATA.read(mad)),
        })
    }

    /// Writes the SIDR_REQ into the message data of `mad`; the header is left alone.
    ///
    /// # Errors
    ///
    /// None in practice: every field is full width or bounded by its type.
    pub fn encode(&self, mad: &mut Mad) -> Result<(), EncodeError> {
        use fields::*;
        wire::clear_data(mad);
        REQUEST_ID.set(mad, self.request_id.into())?;
        PKEY.set(mad, self.pkey.into())?;
        SERVICE_ID.set(mad, self.service_id)?;
        PRIVATE_DATA.write(mad, self.private_data.as_bytes())
    }
}
