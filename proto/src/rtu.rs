//! ReadyToUse (RTU, attribute 0x0014): IBTA vol. 1 table 111.

use super::error::{DecodeError, EncodeError};
use super::pdata::PrivateData;
use super::wire::{self, Bytes, Field, Mad};

/// RTU private data capacity (`IB_CM_RTU_PRIVATE_DATA_SIZE`).
pub const RTU_PRIVATE_DATA_SIZE: usize = 224;

/// RTU field positions (message-data offsets).
pub mod fields {
    use super::{Bytes, Field};

    /// LocalCommID.
    pub const LOCAL_COMM_ID: Field = Field::new("rtu.local_comm_id", 0, 0, 32);
    /// RemoteCommID.
    pub const REMOTE_COMM_ID: Field = Field::new("rtu.remote_comm_id", 4, 0, 32);
    /// PrivateData.
    pub const PRIVATE_DATA: Bytes = Bytes::new(8, super::RTU_PRIVATE_DATA_SIZE);
}

/// an RTU, fields in host order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Rtu {
    /// Sender's communication ID.
    pub local_comm_id: u32,
    /// Receiver's communication ID.
    pub remote_comm_id: u32,
    /// Private data.
    pub private_data: PrivateData<RTU_PRIVATE_DATA_SIZE>,
}

impl Rtu {
    /// Reads an RTU from a whole MAD.
    ///
    /// # Errors
    ///
    /// [`DecodeError::Truncated`] for fewer than 256 bytes.
    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        use fields::*;
        let mad = wire::as_mad(bytes)?;
        Ok(Self {
            local_comm_id: LOCAL_COMM_ID.get_u32(mad),
            remote_comm_id: REMOTE_COMM_ID.get_u32(mad),
            private_data: PrivateData::from_array(PRIVATE_DATA.read(mad)),
        })
    }

    /// Writes an RTU into the message data of `mad`; the header is left alone.
    ///
    /// # Errors
    ///
    /// None in practice: every field is full width or bounded by its type.
    pub fn encode(&self, mad: &mut Mad) -> Result<(), EncodeError> {
        use fields::*;
        wire::clear_data(mad);
        LOCAL_COMM_ID.set(mad, self.local_comm_id.into())?;
        REMOTE_COMM_ID.set(mad, self.remote_comm_id.into())?;
        PRIVATE_DATA.write(mad, self.private_data.as_bytes())
    }
}
