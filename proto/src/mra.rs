//! MessageReceiptAcknowledgement (MRA, attribute 0x0011): IBTA vol. 1 table 107.

use super::error::{DecodeError, EncodeError};
use super::mad::AttrId;
use super::msg_code::MessageCode;
use super::pdata::PrivateData;
use super::wire::{self, Bytes, Field, Mad};

/// MRA private data capacity (`IB_CM_MRA_PRIVATE_DATA_SIZE`).
pub const MRA_PRIVATE_DATA_SIZE: usize = 222;

/// MRA field positions (message-data offsets).
pub mod fields {
    use super::{Bytes, Field};

    /// LocalCommID.
    pub const LOCAL_COMM_ID: Field = Field::new("mra.local_comm_id", 0, 0, 32);
    /// RemoteCommID.
    pub const REMOTE_COMM_ID: Field = Field::new("mra.remote_comm_id", 4, 0, 32);
    /// MessageMRAed.
    pub const MESSAGE_MRAED: Field = Field::new("mra.message_mraed", 8, 0, 2);
    /// ServiceTimeout.
    pub const SERVICE_TIMEOUT: Field = Field::new("mra.service_timeout", 9, 0, 5);
    /// PrivateData.
    pub const PRIVATE_DATA: Bytes = Bytes::new(10, super::MRA_PRIVATE_DATA_SIZE);
}

/// An MRA, fields in host order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Mra {
    /// Sender's communication ID.
    pub local_comm_id: u32,
    /// Receiver's communication ID.
    pub remote_comm_id: u32,
    /// The message being acknowledged.
    pub message_mraed: MessageCode,
    /// Extra time the sender needs, 5-bit exponent (Linux always sends 24).
    pub service_timeout: u8,
    /// Private data.
    pub private_data: PrivateData<MRA_PRIVATE_DATA_SIZE>,
}

impl Mra {
    /// Reads an MRA from a whole MAD.
    ///
    /// # Errors
    ///
    /// [`DecodeError::Truncated`], or [`DecodeError::ReservedMessageCode`] for MsgMRAed 3.
    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        use fields::*;
        let mad = wire::as_mad(bytes)?;
        Ok(Self {
            local_comm_id: LOCAL_COMM_ID.get_u32(mad),
            remote_comm_id: REMOTE_COMM_ID.get_u32(mad),
            message_mraed: MessageCode::from_wire(AttrId::Mra, MESSAGE_MRAED.get_u8(mad))?,
            service_timeout: SERVICE_TIMEOUT.get_u8(mad),
            private_data: PrivateData::from_array(PRIVATE_DATA.read(mad)),
        })
    }

    /// Writes the MRA into the message data of `mad`; the header is left alone.
    ///
    /// # Errors
    ///
    /// [`EncodeError::FieldOutOfRange`] for a service timeout above 31.
    pub fn encode(&self, mad: &mut Mad) -> Result<(), EncodeError> {
        use fields::*;
        wire::clear_data(mad);
        LOCAL_COMM_ID.set(mad, self.local_comm_id.into())?;
        REMOTE_COMM_ID.set(mad, self.remote_comm_id.into())?;
        MESSAGE_MRAED.set(mad, self.message_mraed.to_u8().into())?;
        SERVICE_TIMEOUT.set(mad, self.service_timeout.into())?;
        PRIVATE_DATA.write(mad, self.private_data.as_bytes())
    }
}
