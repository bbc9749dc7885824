//! LoadAlternatePath (LAP, attribute 0x0019): IBTA vol. 1 table 115.
//!
//! Linux stopped sending LAP in v5.6 and ignores it on RoCE (`cm_lap_handler` in
//! `drivers/infiniband/core/cm.c`); cepm decodes it so it can count and drop it.

use super::error::{DecodeError, EncodeError};
use super::mad::AttrId;
use super::path::{CmPath, LAP_ALTERNATE};
use super::pdata::PrivateData;
use super::wire::{self, Bytes, Field, Mad};

/// LAP private data capacity (`IB_CM_LAP_PRIVATE_DATA_SIZE`).
pub const LAP_PRIVATE_DATA_SIZE: usize = 168;

/// LAP field positions (message-data offsets).
pub mod fields {
    use super::{Bytes, Field};

    /// LocalCommID.
    pub const LOCAL_COMM_ID: Field = Field::new("lap.local_comm_id", 0, 0, 32);
    /// RemoteCommID.
    pub const REMOTE_COMM_ID: Field = Field::new("lap.remote_comm_id", 4, 0, 32);
    /// RemoteQPN/EECN.
    pub const REMOTE_QPN: Field = Field::new("lap.remote_qpn", 12, 0, 24);
    /// RemoteCMResponseTimeout.
    pub const REMOTE_CM_RESPONSE_TIMEOUT: Field =
        Field::new("lap.remote_cm_response_timeout", 15, 0, 5);
    /// PrivateData.
    pub const PRIVATE_DATA: Bytes = Bytes::new(64, super::LAP_PRIVATE_DATA_SIZE);
}

/// A LAP, fields in host order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Lap {
    /// Sender's communication ID.
    pub local_comm_id: u32,
    /// Receiver's communication ID.
    pub remote_comm_id: u32,
    /// Receiver's QPN, 24 bits, never 0.
    pub remote_qpn: u32,
    /// How long the receiver may take to answer, 5-bit exponent.
    pub remote_cm_response_timeout: u8,
    /// The proposed alternate path.
    pub alternate_path: CmPath,
    /// Private data.
    pub private_data: PrivateData<LAP_PRIVATE_DATA_SIZE>,
}

impl Lap {
    /// Reads a LAP from a whole MAD.
    ///
    /// # Errors
    ///
    /// [`DecodeError::Truncated`], or [`DecodeError::ZeroQpn`] for RemoteQPN 0.
    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        use fields::*;
        let mad = wire::as_mad(bytes)?;
        let remote_qpn = REMOTE_QPN.get_u32(mad);
        if remote_qpn == 0 {
            return Err(DecodeError::ZeroQpn(AttrId::Lap));
        }
        Ok(Self {
            local_comm_id: LOCAL_COMM_ID.get_u32(mad),
            remote_comm_id: REMOTE_COMM_ID.get_u32(mad),
            remote_qpn,
            remote_cm_response_timeout: REMOTE_CM_RESPONSE_TIMEOUT.get_u8(mad),
            alternate_path: CmPath::decode(mad, &LAP_ALTERNATE),
            private_data: PrivateData::from_array(PRIVATE_DATA.read(mad)),
        })
    }

    /// Writes the LAP into the message data of `mad`; the header is left alone.
    ///
    /// # Errors
    ///
    /// [`EncodeError::FieldOutOfRange`] for a value wider than its field or a QPN of 0.
    pub fn encode(&self, mad: &mut Mad) -> Result<(), EncodeError> {
        use fields::*;
        if self.remote_qpn == 0 {
            return Err(EncodeError::FieldOutOfRange(REMOTE_QPN.name));
        }
        wire::clear_data(mad);
        LOCAL_COMM_ID.set(mad, self.local_comm_id.into())?;
        REMOTE_COMM_ID.set(mad, self.remote_comm_id.into())?;
        REMOTE_QPN.set(mad, self.remote_qpn.into())?;
        REMOTE_CM_RESPONSE_TIMEOUT.set(mad, self.remote_cm_response_timeout.into())?;
        self.alternate_path.encode(mad, &LAP_ALTERNATE)?;
        PRIVATE_DATA.write(mad, self.private_data.as_bytes())
    }
}
