//! ConnectReply (REP, attribute 0x0013): IBTA vol. 1 table 110.

use super::error::{DecodeError, EncodeError};
use super::mad::AttrId;
use super::message::cm_message;
use super::pdata::PrivateData;
use super::wire::Mad;

/// REP private data capacity (`IB_CM_REP_PRIVATE_DATA_SIZE`).
pub const REP_PRIVATE_DATA_SIZE: usize = 196;

cm_message! {
    /// A REP, fields in host order.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Hash)]
    pub struct Rep("rep") {
        /// LocalCommID.
        LOCAL_COMM_ID @ bits(0, 0, 32)
            /// Sender's communication ID.
            => local_comm_id: u32;
        /// RemoteCommID.
        REMOTE_COMM_ID @ bits(4, 0, 32)
            /// Receiver's communication ID (the REQ's LocalCommID).
            => remote_comm_id: u32;
        /// LocalQKey.
        LOCAL_QKEY @ bits(8, 0, 32)
            /// Sender's Q_Key.
            => local_qkey: u32;
        /// LocalQPN.
        LOCAL_QPN @ bits(12, 0, 24)
            /// Sender's QPN, 24 bits (0 for an XRC target, which uses `local_eecn`).
            => local_qpn: u32;
        /// VendorID bits 23..16.
        VENDOR_ID_H(vendor_id_h) @ bits(15, 0, 8) = |m| u64::from(m.vendor_id >> 16);
        /// LocalEECN (XRC target: the QPN).
        LOCAL_EECN @ bits(16, 0, 24)
            /// Sender's EECN, 24 bits (XRC target: its QPN).
            => local_eecn: u32;
        /// VendorID bits 15..8.
        VENDOR_ID_M(vendor_id_m) @ bits(19, 0, 8) = |m| u64::from((m.vendor_id >> 8) & 0xff);
        /// StartingPSN.
        STARTING_PSN @ bits(20, 0, 24)
            /// PSN the sender's receive queue expects first, 24 bits.
            => starting_psn: u32;
        /// VendorID bits 7..0.
        VENDOR_ID_L(vendor_id_l) @ bits(23, 0, 8) = |m| u64::from(m.vendor_id & 0xff);
        /// ECE vendor ID, 24 bits, split over three bytes on the wire.
        => vendor_id: u32 = |w| (VENDOR_ID_H.get_u32(w) << 16)
            | (VENDOR_ID_M.get_u32(w) << 8)
            | VENDOR_ID_L.get_u32(w);
        /// ResponderResources.
        RESPONDER_RESOURCES @ bits(24, 0, 8)
            /// Responder resources the sender offers.
            => responder_resources: u8;
        /// InitiatorDepth.
        INITIATOR_DEPTH @ bits(25, 0, 8)
            /// Initiator depth the sender wants.
            => initiator_depth: u8;
        /// TargetACKDelay.
        TARGET_ACK_DELAY @ bits(26, 0, 5)
            /// Sender CA's ACK delay, 5-bit exponent.
            => target_ack_delay: u8;
        /// FailoverAccepted.
        FAILOVER_ACCEPTED @ bits(26, 5, 2)
            /// Failover accepted, 2 bits.
            => failover_accepted: u8;
        /// End-to-end flow control.
        END_TO_END_FLOW_CONTROL @ bits(26, 7, 1)
            /// End-to-end flow control.
            => end_to_end_flow_control: bool;
        /// RNRRetryCount.
        RNR_RETRY_COUNT @ bits(27, 0, 3)
            /// RNR retry count the receiver must use, 3 bits.
            => rnr_retry_count: u8;
        /// SRQ.
        SRQ @ bits(27, 3, 1)
            /// The sender uses an SRQ.
            => srq: bool;
        /// LocalCAGUID.
        LOCAL_CA_GUID @ bits(28, 0, 64)
            /// Sender's CA GUID.
            => local_ca_guid: u64;
        /// PrivateData.
        PRIVATE_DATA @ bytes(36, REP_PRIVATE_DATA_SIZE)
            /// Private data.
            => private_data: PrivateData<REP_PRIVATE_DATA_SIZE>;
    }

    /// Reads a REP from a whole MAD.
    ///
    /// # Errors
    ///
    /// [`DecodeError::Truncated`], or [`DecodeError::ZeroQpn`] if both LocalQPN and
    /// LocalEECN are 0 (no QP to talk to).
    fn decode(validate = Self::validate_wire);

    /// Writes the REP into the message data of `mad`; the header is left alone.
    ///
    /// # Errors
    ///
    /// [`EncodeError::FieldOutOfRange`] for a value wider than its field, or if both the
    /// QPN and the EECN are 0.
    fn encode(validate = Self::validate);
}

impl Rep {
    /// The REP of an XRC target (`cm_format_rep`, `cm.c`): its QPN moves to LocalEECN,
    /// LocalQPN is 0, the SRQ bit is set (a target QP receives through an XRC SRQ), and it
    /// announces no initiator depth or end-to-end flow control (it sends nothing).
    #[must_use]
    pub fn for_xrc_target(mut self) -> Self {
        self.local_eecn = self.local_qpn;
        self.local_qpn = 0;
        self.srq = true;
        self.initiator_depth = 0;
        self.end_to_end_flow_control = false;
        self
    }

    /// The QPN the REP names: LocalEECN for an XRC initiator, whose target puts its QPN
    /// there, LocalQPN otherwise (`cm_format_rep_event`, `cm.c`).
    pub fn sender_qpn(&self, xrc_initiator: bool) -> u32 {
        if xrc_initiator {
            self.local_eecn
        } else {
            self.local_qpn
        }
    }

    /// A REP names a QP by its QPN or, for an XRC target, by its EECN.
    fn validate_wire(mad: &Mad) -> Result<(), DecodeError> {
        if fields::LOCAL_QPN.get(mad) == 0 && fields::LOCAL_EECN.get(mad) == 0 {
            return Err(DecodeError::ZeroQpn(AttrId::Rep));
        }
        Ok(())
    }

    /// The same rule on encode, and a vendor ID that fits its three bytes.
    fn validate(&self) -> Result<(), EncodeError> {
        if self.local_qpn == 0 && self.local_eecn == 0 {
            return Err(EncodeError::FieldOutOfRange(fields::LOCAL_QPN.name));
        }
        if self.vendor_id > 0x00ff_ffff {
            return Err(EncodeError::FieldOutOfRange("rep.vendor_id"));
        }
        Ok(())
    }
}
