//! DisconnectRequest (DREQ, attribute 0x0015): IBTA vol. 1 table 112.

use super::error::{DecodeError, EncodeError};
use super::mad::AttrId;
use super::pdata::PrivateData;
use super::wire::{self, Bytes, Field, Mad};

/// DREQ private data capacity (`IB_CM_DREQ_PRIVATE_DATA_SIZE`).
pub const DREQ_PRIVATE_DATA_SIZE: usize = 220;

/// DREQ field positions (message-data offsets).
pub mod fields {
    use super::{Bytes, Field};

    /// LocalCommID.
    pub const LOCAL_COMM_ID: Field = Field::new("dreq.local_comm_id", 0, 0, 32);
    /// RemoteCommID.
    pub const REMOTE_COMM_ID: Field = Field::new("dreq.remote_comm_id", 4, 0, 32);
    /// RemoteQPN/EECN.
    pub const REMOTE_QPN: Field = Field::new("dreq.remote_qpn", 8, 0, 24);
    /// PrivateData.
    pub const PRIVATE_DATA: Bytes = Bytes::new(12, super::DREQ_PRIVATE_DATA_SIZE);
}

/// A DREQ, fields in host order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Dreq {
    /// Sender's communication ID.
    pub local_comm_id: u32,
    /// Receiver's communication ID.
    pub remote_comm_id: u32,
    /// The receiver's QPN (checked against the local QPN,
    /// `cm_dreq_handler` in `drivers/infiniband/core/cm.c`), 24 bits, never 0.
    pub remote_qpn: u32,
    /// Private data.
    pub private_data: PrivateData<DREQ_PRIVATE_DATA_SIZE>,
}

impl Dreq {
    /// Reads a DREQ from a whole MAD.
    ///
    /// # Errors
    ///
    /// [`DecodeError::Truncated`], or [`DecodeError::ZeroQpn`] for RemoteQPN 0.
    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        use fields::*;
        let mad = wire::as_mad(bytes)?;
        let remote_qpn = REMOTE_QPN.get_u32(mad);
        if remote_qpn == 0 {
            return Err(DecodeError::ZeroQpn(AttrId::Dreq));
        }
        Ok(Self {
            local_comm_id: LOCAL_COMM_ID.get_u32(mad),
            remote_comm_id: REMOTE_COMM_ID.get_u32(mad),
            remote_qpn,
            private_data: PrivateData::from_array(PRIVATE_DATA.read(mad)),
        })
    }

    /// Writes the DREQ into the message data of `mad`; the header is left alone.
    ///
    /// # Errors
    ///
    /// [`EncodeError::FieldOutOfRange`] for a QPN of 0 or wider than 24 bits.
    pub fn encode(&self, mad: &mut Mad) -> Result<(), EncodeError> {
        use fields::*;
        if self.remote_qpn == 0 {
            return Err(EncodeError::FieldOutOfRange(REMOTE_QPN.name));
        }
        wire::clear_data(mad);
        LOCAL_COMM_ID.set(mad, self.local_comm_id.into())?;
        REMOTE_COMM_ID.set(mad, self.remote_comm_id.into())?;
        REMOTE_QPN.set(mad, self.remote_qpn.into())?;
        PRIVATE_DATA.write(mad, self.private_data.as_bytes())
    }
}
