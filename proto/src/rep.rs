//! ConnectReply (REP, attribute 0x0013): IBTA vol. 1 table 110.

use super::error::{DecodeError, EncodeError};
use super::mad::AttrId;
use super::pdata::PrivateData;
use super::wire::{self, Bytes, Field, Mad};

/// REP private data capacity (`IB_CM_REP_PRIVATE_DATA_SIZE`).
pub const REP_PRIVATE_DATA_SIZE: usize = 196;

/// REP field positions (message-data offsets).
pub mod fields {
    use super::{Bytes, Field};

    /// LocalCommID.
    pub const LOCAL_COMM_ID: Field = Field::new("rep.local_comm_id", 0, 0, 32);
    /// RemoteCommID.
    pub const REMOTE_COMM_ID: Field = Field::new("rep.remote_comm_id", 4, 0, 32);
    /// LocalQKey.
    pub const LOCAL_QKEY: Field = Field::new("rep.local_qkey", 8, 0, 32);
    /// LocalQPN.
    pub const LOCAL_QPN: Field = Field::new("rep.local_qpn", 12, 0, 24);
    /// VendorID bits 23..16.
    pub const VENDOR_ID_H: Field = Field::new("rep.vendor_id_h", 15, 0, 8);
    /// LocalEECN (XRC target: the QPN).
    pub const LOCAL_EECN: Field = Field::new("rep.local_eecn", 16, 0, 24);
    /// VendorID bits 15..8.
    pub const VENDOR_ID_M: Field = Field::new("rep.vendor_id_m", 19, 0, 8);
    /// StartingPSN.
    pub const STARTING_PSN: Field = Field::new("rep.starting_psn", 20, 0, 24);
    /// VendorID bits 7..0.
    pub const VENDOR_ID_L: Field = Field::new("rep.vendor_id_l", 23, 0, 8);
    /// ResponderResources.
    pub const RESPONDER_RESOURCES: Field = Field::new("rep.responder_resources", 24, 0, 8);
    /// InitiatorDepth.
    pub const INITIATOR_DEPTH: Field = Field::new("rep.initiator_depth", 25, 0, 8);
    /// TargetACKDelay.
    pub const TARGET_ACK_DELAY: Field = Field::new("rep.target_ack_delay", 26, 0, 5);
    /// FailoverAccepted.
    pub const FAILOVER_ACCEPTED: Field = Field::new("rep.failover_accepted", 26, 5, 2);
    /// End-to-end flow control.
    pub const END_TO_END_FLOW_CONTROL: Field = Field::new("rep.end_to_end_flow_control", 26, 7, 1);
    /// RNRRetryCount.
    pub const RNR_RETRY_COUNT: Field = Field::new("rep.rnr_retry_count", 27, 0, 3);
    /// SRQ.
    pub const SRQ: Field = Field::new("rep.srq", 27, 3, 1);
    /// LocalCAGUID.
    pub const LOCAL_CA_GUID: Field = Field::new("rep.local_ca_guid", 28, 0, 64);
    /// PrivateData.
    pub const PRIVATE_DATA: Bytes = Bytes::new(36, super::REP_PRIVATE_DATA_SIZE);
}

/// A REP, fields in host order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Hash)]
pub struct Rep {
    /// Sender's communication ID.
    pub local_comm_id: u32,
    /// Receiver's communication ID (the REQ's LocalCommID).
    pub remote_comm_id: u32,
    /// Sender's Q_Key.
    pub local_qkey: u32,
    /// Sender's QPN, 24 bits (0 for an XRC target, which uses `local_eecn`).
    pub local_qpn: u32,
    /// Sender's EECN, 24 bits (XRC target: its QPN).
    pub local_eecn: u32,
    /// PSN the sender's receive queue expects first, 24 bits.
    pub starting_psn: u32,
    /// ECE vendor ID, 24 bits, split over three bytes on the wire.
    pub vendor_id: u32,
    /// Responder resources the sender offers.
    pub responder_resources: u8,
    /// Initiator depth the sender wants.
    pub initiator_depth: u8,
    /// Sender CA's ACK delay, 5-bit exponent.
    pub target_ack_delay: u8,
    /// Failover accepted, 2 bits.
    pub failover_accepted: u8,
    /// End-to-end flow control.
    pub end_to_end_flow_control: bool,
    /// RNR retry count the receiver must use, 3 bits.
    pub rnr_retry_count: u8,
    /// The sender uses an SRQ.
    pub srq: bool,
    /// Sender's CA GUID.
    pub local_ca_guid: u64,
    /// Private data.
    pub private_data: PrivateData<REP_PRIVATE_DATA_SIZE>,
}

impl Rep {
    /// Reads a REP from a whole MAD.
    ///
    /// # Errors
    ///
    /// [`DecodeError::Truncated`], or [`DecodeError::ZeroQpn`] if both LocalQPN and
    /// LocalEECN are 0 (no QP to talk to).
    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        use fields::*;
        let mad = wire::as_mad(bytes)?;
        let local_qpn = LOCAL_QPN.get_u32(mad);
        let local_eecn = LOCAL_EECN.get_u32(mad);
        if local_qpn == 0 && local_eecn == 0 {
            return Err(DecodeError::ZeroQpn(AttrId::Rep));
        }
        let vendor_id = (VENDOR_ID_H.get_u32(mad) << 16)
            | (VENDOR_ID_M.get_u32(mad) << 8)
            | VENDOR_ID_L.get_u32(mad);
        Ok(Self {
            local_comm_id: LOCAL_COMM_ID.get_u32(mad),
            remote_comm_id: REMOTE_COMM_ID.get_u32(mad),
            local_qkey: LOCAL_QKEY.get_u32(mad),
            local_qpn,
            local_eecn,
            starting_psn: STARTING_PSN.get_u32(mad),
            vendor_id,
            responder_resources: RESPONDER_RESOURCES.get_u8(mad),
            initiator_depth: INITIATOR_DEPTH.get_u8(mad),
            target_ack_delay: TARGET_ACK_DELAY.get_u8(mad),
            failover_accepted: FAILOVER_ACCEPTED.get_u8(mad),
            end_to_end_flow_control: END_TO_END_FLOW_CONTROL.get_bool(mad),
            rnr_retry_count: RNR_RETRY_COUNT.get_u8(mad),
            srq: SRQ.get_bool(mad),
            local_ca_guid: LOCAL_CA_GUID.get(mad),
            private_data: PrivateData::from_array(PRIVATE_DATA.read(mad)),
        })
    }

    /// Writes the REP into the message data of `mad`; the header is left alone.
    ///
    /// # Errors
    ///
    /// [`EncodeError::FieldOutOfRange`] for a value wider than its field, or if both the
    /// QPN and the EECN are 0.
    pub fn encode(&self, mad: &mut Mad) -> Result<(), EncodeError> {
        use fields::*;
        if self.local_qpn == 0 && self.local_eecn == 0 {
            return Err(EncodeError::FieldOutOfRange(LOCAL_QPN.name));
        }
        if self.vendor_id > 0x00ff_ffff {
            return Err(EncodeError::FieldOutOfRange("rep.vendor_id"));
        }
        wire::clear_data(mad);
        LOCAL_COMM_ID.set(mad, self.local_comm_id.into())?;
        REMOTE_COMM_ID.set(mad, self.remote_comm_id.into())?;
        LOCAL_QKEY.set(mad, self.local_qkey.into())?;
        LOCAL_QPN.set(mad, self.local_qpn.into())?;
        VENDOR_ID_H.set(mad, u64::from(self.vendor_id >> 16))?;
        LOCAL_EECN.set(mad, self.local_eecn.into())?;
        VENDOR_ID_M.set(mad, u64::from((self.vendor_id >> 8) & 0xff))?;
        STARTING_PSN.set(mad, self.starting_psn.into())?;
        VENDOR_ID_L.set(mad, u64::from(self.vendor_id & 0xff))?;
        RESPONDER_RESOURCES.set(mad, self.responder_resources.into())?;
        INITIATOR_DEPTH.set(mad, self.initiator_depth.into())?;
        TARGET_ACK_DELAY.set(mad, self.target_ack_delay.into())?;
        FAILOVER_ACCEPTED.set(mad, self.failover_accepted.into())?;
        END_TO_END_FLOW_CONTROL.set_bool(mad, self.end_to_end_flow_control);
        RNR_RETRY_COUNT.set(mad, self.rnr_retry_count.into())?;
        SRQ.set_bool(mad, self.srq);
        LOCAL_CA_GUID.set(mad, self.local_ca_guid)?;
        PRIVATE_DATA.write(mad, self.private_data.as_bytes())
    }
}
