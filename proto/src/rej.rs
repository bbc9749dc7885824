//! ConnectReject (REJ, attribute 0x0012): IBTA vol. 1 table 108.

use super::error::{DecodeError, EncodeError};
use super::mad::AttrId;
use super::msg_code::MessageCode;
use super::pdata::{AdditionalInfo, PrivateData, INFO_SIZE};
use super::wire::{self, Bytes, Field, Mad};

/// REJ private data capacity (`IB_CM_REJ_PRIVATE_DATA_SIZE`).
pub const REJ_PRIVATE_DATA_SIZE: usize = 148;

/// REJ reasons cepm generates or matches on (`enum ib_cm_rej_reason` in `include/rdma/ib_cm.h`).
pub mod reason {
    /// No QP available.
    pub const NO_QP: u16 = 1;
    /// No resources.
    pub const NO_RESOURCES: u16 = 3;
    /// Timeout; the ARI holds the rejector's CA GUID.
    pub const TIMEOUT: u16 = 4;
    /// Invalid communication ID.
    pub const INVALID_COMM_ID: u16 = 6;
    /// No listener for the service ID.
    pub const INVALID_SERVICE_ID: u16 = 8;
    /// Invalid transport type.
    pub const INVALID_TRANSPORT_TYPE: u16 = 9;
    /// Stale connection: the QPN (or comm ID) is still in use or in timewait.
    pub const STALE_CONN: u16 = 10;
    /// Invalid GID (passive route resolution failed).
    pub const INVALID_GID: u16 = 12;
    /// Consumer defined (`rdma_reject`, destroy before reply).
    pub const CONSUMER_DEFINED: u16 = 28;
    /// Invalid class version.
    pub const INVALID_CLASS_VERSION: u16 = 31;
}

/// REJ field positions (message-data offsets).
pub mod fields {
    use super::{Bytes, Field};

    /// LocalCommID (0 when rejecting a REQ before a local ID exists).
    pub const LOCAL_COMM_ID: Field = Field::new("rej.local_comm_id", 0, 0, 32);
    /// RemoteCommID.
    pub const REMOTE_COMM_ID: Field = Field::new("rej.remote_comm_id", 4, 0, 32);
    /// MessageRejected.
    pub const MESSAGE_REJECTED: Field = Field::new("rej.message_rejected", 8, 0, 2);
    /// RejectedInfoLength (ARI length), 7 bits.
    pub const REJECTED_INFO_LENGTH: Field = Field::new("rej.rejected_info_length", 9, 0, 7);
    /// Reason.
    pub const REASON: Field = Field::new("rej.reason", 10, 0, 16);
    /// Additional rejection information.
    pub const ARI: Bytes = Bytes::new(12, super::INFO_SIZE);
    /// PrivateData.
    pub const PRIVATE_DATA: Bytes = Bytes::new(84, super::REJ_PRIVATE_DATA_SIZE);
}

/// A REJ, fields in host order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Rej {
    /// Sender's communication ID (0 if it has none yet).
    pub local_comm_id: u32,
    /// Receiver's communication ID.
    pub remote_comm_id: u32,
    /// The message being rejected.
    pub message_rejected: MessageCode,
    /// Reason code (see [`reason`]).
    pub reason: u16,
    /// Additional rejection information, at most 72 bytes.
    pub ari: AdditionalInfo,
    /// Private data.
    pub private_data: PrivateData<REJ_PRIVATE_DATA_SIZE>,
}

impl Rej {
    /// Reads a REJ from a whole MAD.
    ///
    /// # Errors
    ///
    /// [`DecodeError::Truncated`], [`DecodeError::ReservedMessageCode`], or
    /// [`DecodeError::InfoTooLong`] if RejectedInfoLength exceeds 72 (Linux passes it on
    /// unclamped, `cm_format_rej_event` in `drivers/infiniband/core/cm.c`; cepm refuses it).
    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        use fields::*;
        let mad = wire::as_mad(bytes)?;
        let ari_len = REJECTED_INFO_LENGTH.get_u8(mad);
        if usize::from(ari_len) > INFO_SIZE {
            return Err(DecodeError::InfoTooLong(AttrId::Rej, ari_len));
        }
        Ok(Self {
            local_comm_id: LOCAL_COMM_ID.get_u32(mad),
            remote_comm_id: REMOTE_COMM_ID.get_u32(mad),
            message_rejected: MessageCode::from_wire(AttrId::Rej, MESSAGE_REJECTED.get_u8(mad))?,
            reason: REASON.get_u16(mad),
            ari: PrivateData::from_prefix(&ARI.read(mad), ari_len.into()),
            private_data: PrivateData::from_array(PRIVATE_DATA.read(mad)),
        })
    }

    /// Writes the REJ into the message data of `mad`; the header is left alone.
    ///
    /// # Errors
    ///
    /// None in practice: every field is full width or bounded by its type.
    pub fn encode(&self, mad: &mut Mad) -> Result<(), EncodeError> {
        use fields::*;
        wire::clear_data(mad);
        LOCAL_COMM_ID.set(mad, self.local_comm_id.into())?;
        REMOTE_COMM_ID.set(mad, self.remote_comm_id.into())?;
        MESSAGE_REJECTED.set(mad, self.message_rejected.to_u8().into())?;
        REJECTED_INFO_LENGTH.set(mad, self.ari.len() as u64)?;
        REASON.set(mad, self.reason.into())?;
        ARI.write(mad, self.ari.as_bytes())?;
        PRIVATE_DATA.write(mad, self.private_data.as_bytes())
    }
}
