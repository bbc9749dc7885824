//! ConnectRequest (REQ, attribute 0x0010): IBTA vol. 1 table 106,
//! `include/rdma/ibta_vol1_c12.h` (`CM_REQ_*`).

use super::error::{DecodeError, EncodeError};
use super::mad::AttrId;
use super::message::cm_message;
use super::path::{CmPath, REQ_ALTERNATE, REQ_PRIMARY};
use super::pdata::PrivateData;
use super::wire::Mad;

/// REQ private data capacity (`IB_CM_REQ_PRIVATE_DATA_SIZE`).
pub const REQ_PRIVATE_DATA_SIZE: usize = 92;

/// Transport service of the requested connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Transport {
    /// Reliable Connected (TransportServiceType 0).
    #[default]
    Rc,
    /// Unreliable Connected (1).
    Uc,
    /// XRC (TransportServiceType 3 with ExtendedTransportType 1).
    Xrc,
}

impl Transport {
    /// (TransportServiceType, ExtendedTransportType) as Linux writes them
    /// (`cm_req_set_qp_type`, `drivers/infiniband/core/cm_msgs.h`).
    pub const fn to_wire(self) -> (u8, u8) {
        match self {
            Self::Rc => (0, 0),
            Self::Uc => (1, 0),
            Self::Xrc => (3, 1),
        }
    }

    /// Parses the pair as Linux does (`cm_req_get_qp_type`, `cm_msgs.h`): the
    /// extended type only matters for type 3.
    ///
    /// # Errors
    ///
    /// [`DecodeError::ReservedTransport`] for RD (2), which Linux does not implement, and
    /// for type 3 with an extended type other than XRC.
    pub const fn from_wire(transport: u8, extended: u8) -> Result<Self, DecodeError> {
        match (transport, extended) {
            (0, _) => Ok(Self::Rc),
            (1, _) => Ok(Self::Uc),
            (3, 1) => Ok(Self::Xrc),
            _ => Err(DecodeError::ReservedTransport {
                transport,
                extended,
            }),
        }
    }
}

cm_message! {
    /// A REQ, fields in host order.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Hash)]
    pub struct Req("req") {
        /// LocalCommID.
        LOCAL_COMM_ID @ bits(0, 0, 32)
            /// Sender's communication ID.
            => local_comm_id: u32;
        /// VendorID (ECE), 24 bits.
        VENDOR_ID @ bits(5, 0, 24)
            /// ECE vendor ID, 24 bits.
            => vendor_id: u32;
        /// ServiceID.
        SERVICE_ID @ bits(8, 0, 64)
            /// Service ID (see [`super::service_id`]).
            => service_id: u64;
        /// LocalCAGUID.
        LOCAL_CA_GUID @ bits(16, 0, 64)
            /// Sender's CA GUID.
            => local_ca_guid: u64;
        /// LocalQKey.
        LOCAL_QKEY @ bits(28, 0, 32)
            /// Sender's Q_Key (0 for RC).
            => local_qkey: u32;
        /// LocalQPN.
        LOCAL_QPN @ bits(32, 0, 24)
            /// Sender's QPN, 24 bits, never 0.
            => local_qpn: u32;
        /// ResponderResources.
        RESPONDER_RESOURCES @ bits(35, 0, 8)
            /// RDMA read/atomic resources the sender offers as responder.
            => responder_resources: u8;
        /// LocalEECN.
        LOCAL_EECN @ bits(36, 0, 24)
            /// Sender's EECN, 24 bits (RD only).
            => local_eecn: u32;
        /// InitiatorDepth.
        INITIATOR_DEPTH @ bits(39, 0, 8)
            /// RDMA read/atomic depth the sender wants as initiator.
            => initiator_depth: u8;
        /// RemoteEECN.
        REMOTE_EECN @ bits(40, 0, 24)
            /// Remote EECN, 24 bits (RD only).
            => remote_eecn: u32;
        /// RemoteCMResponseTimeout.
        REMOTE_CM_RESPONSE_TIMEOUT @ bits(43, 0, 5)
            /// How long the receiver may take to answer, 5-bit exponent.
            => remote_cm_response_timeout: u8;
        /// TransportServiceType.
        TRANSPORT_TYPE(transport_type) @ bits(43, 5, 2)
            = |m| u64::from(m.transport.to_wire().0);
        /// Transport service.
        => transport: Transport = |w| Transport::from_wire(
            TRANSPORT_TYPE.get_u8(w),
            EXTENDED_TRANSPORT_TYPE.get_u8(w),
        )?;
        /// End-to-end flow control.
        END_TO_END_FLOW_CONTROL @ bits(43, 7, 1)
            /// End-to-end flow control.
            => end_to_end_flow_control: bool;
        /// StartingPSN.
        STARTING_PSN @ bits(44, 0, 24)
            /// PSN the sender's receive queue expects first, 24 bits.
            => starting_psn: u32;
        /// LocalCMResponseTimeout.
        LOCAL_CM_RESPONSE_TIMEOUT @ bits(47, 0, 5)
            /// How long the sender takes to answer, 5-bit exponent.
            => local_cm_response_timeout: u8;
        /// RetryCount.
        RETRY_COUNT @ bits(47, 5, 3)
            /// Transport retry count, 3 bits.
            => retry_count: u8;
        /// PartitionKey.
        PKEY @ bits(48, 0, 16)
            /// P_Key.
            => pkey: u16;
        /// PathPacketPayloadMTU.
        PATH_MTU @ bits(50, 0, 4)
            /// Path MTU enum, 4 bits.
            => path_mtu: u8;
        /// RDCExists.
        RDC_EXISTS @ bits(50, 4, 1)
            /// RDC exists (RD only).
            => rdc_exists: bool;
        /// RNRRetryCount.
        RNR_RETRY_COUNT @ bits(50, 5, 3)
            /// RNR retry count, 3 bits.
            => rnr_retry_count: u8;
        /// MaxCMRetries.
        MAX_CM_RETRIES @ bits(51, 0, 4)
            /// Maximum CM retries, 4 bits.
            => max_cm_retries: u8;
        /// SRQ.
        SRQ @ bits(51, 4, 1)
            /// The sender uses an SRQ.
            => srq: bool;
        /// ExtendedTransportType.
        EXTENDED_TRANSPORT_TYPE(extended_transport_type) @ bits(51, 5, 3)
            = |m| u64::from(m.transport.to_wire().1);
        @ layout(REQ_PRIMARY)
            /// Primary path.
            => primary_path: CmPath;
        @ layout(REQ_ALTERNATE)
            /// Alternate path (all zero: none).
            => alternate_path: CmPath;
        /// SAP supported (alternate path block, byte 139 bit 5).
        SAP_SUPPORTED @ bits(139, 5, 1)
            /// Symmetric alternate path supported.
            => sap_supported: bool;
        /// PrivateData.
        PRIVATE_DATA @ bytes(140, REQ_PRIVATE_DATA_SIZE)
            /// Private data (RDMA CM puts its 36-byte `cma_hdr` first).
            => private_data: PrivateData<REQ_PRIVATE_DATA_SIZE>;
    }

    /// Reads a REQ from a whole MAD (the header is not checked; see
    /// [`super::cm_mad::CmMad::decode`]).
    ///
    /// # Errors
    ///
    /// [`DecodeError::Truncated`] for fewer than 256 bytes, [`DecodeError::ZeroQpn`] for a
    /// LocalQPN of 0, [`DecodeError::ReservedTransport`] for RD or an unknown extended type.
    fn decode(validate = Self::validate_wire);

    /// Writes the REQ into the message data of `mad` (bytes 24..256, reserved bits zero);
    /// the MAD header is left alone.
    ///
    /// # Errors
    ///
    /// [`EncodeError::FieldOutOfRange`] if a value is wider than its field or the QPN is 0.
    /// The message data is then unspecified.
    fn encode(validate = Self::validate);
}

impl Req {
    /// The transport pair first, then a QPN that is not 0.
    fn validate_wire(mad: &Mad) -> Result<(), DecodeError> {
        Transport::from_wire(
            fields::TRANSPORT_TYPE.get_u8(mad),
            fields::EXTENDED_TRANSPORT_TYPE.get_u8(mad),
        )?;
        if fields::LOCAL_QPN.get(mad) == 0 {
            return Err(DecodeError::ZeroQpn(AttrId::Req));
        }
        Ok(())
    }

    /// The comm ID to answer when [`Req::decode`] refused `mad` with `err` for what the REQ
    /// asks for rather than for its form: a transport this CM does not implement or a QPN 0.
    /// Such a REQ is rejected with reason 9, Invalid Transport Type (the peer would
    /// otherwise retry it for minutes); `None` for any other error, which is dropped.
    pub fn invalid_transport(mad: &[u8], err: &DecodeError) -> Option<u32> {
        match err {
            DecodeError::ReservedTransport { .. } | DecodeError::ZeroQpn(AttrId::Req) => {
                Some(fields::LOCAL_COMM_ID.get_u32(super::wire::as_mad(mad).ok()?))
            }
            _ => None,
        }
    }

    /// The REQ as its transport has it sent (`cm_format_req`, `cm.c`): an XRC initiator
    /// has no receive queue and nothing to retry towards, so its REQ announces no responder
    /// resources, retry counts or SRQ. Other transports are left as they are.
    #[must_use]
    pub fn for_transport(mut self) -> Self {
        if self.transport == Transport::Xrc {
            self.responder_resources = 0;
            self.retry_count = 0;
            self.rnr_retry_count = 0;
            self.srq = false;
        }
        self
    }

    /// A QPN that is not 0, refused before the MAD is touched.
    fn validate(&self) -> Result<(), EncodeError> {
        if self.local_qpn == 0 {
            return Err(EncodeError::FieldOutOfRange(fields::LOCAL_QPN.name));
        }
        Ok(())
    }
}
