//! ConnectRequest (REQ, attribute 0x0010): IBTA vol. 1 table 106,
//! `include/rdma/ibta_vol1_c12.h` (`CM_REQ_*`).

use super::error::{DecodeError, EncodeError};
use super::mad::AttrId;
use super::path::{CmPath, REQ_ALTERNATE, REQ_PRIMARY};
use super::pdata::PrivateData;
use super::wire::{self, Bytes, Field, Mad};

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

/// REQ field positions (message-data offsets).
pub mod fields {
    use super::{Bytes, Field};

    /// LocalCommID.
    pub const LOCAL_COMM_ID: Field = Field::new("req.local_comm_id", 0, 0, 32);
    /// VendorID (ECE), 24 bits.
    pub const VENDOR_ID: Field = Field::new("req.vendor_id", 5, 0, 24);
    /// ServiceID.
    pub const SERVICE_ID: Field = Field::new("req.service_id", 8, 0, 64);
    /// LocalCAGUID.
    pub const LOCAL_CA_GUID: Field = Field::new("req.local_ca_guid", 16, 0, 64);
    /// LocalQKey.
    pub const LOCAL_QKEY: Field = Field::new("req.local_qkey", 28, 0, 32);
    /// LocalQPN.
    pub const LOCAL_QPN: Field = Field::new("req.local_qpn", 32, 0, 24);
    /// ResponderResources.
    pub const RESPONDER_RESOURCES: Field = Field::new("req.responder_resources", 35, 0, 8);
    /// LocalEECN.
    pub const LOCAL_EECN: Field = Field::new("req.local_eecn", 36, 0, 24);
    /// InitiatorDepth.
    pub const INITIATOR_DEPTH: Field = Field::new("req.initiator_depth", 39, 0, 8);
    /// RemoteEECN.
    pub const REMOTE_EECN: Field = Field::new("req.remote_eecn", 40, 0, 24);
    /// RemoteCMResponseTimeout.
    pub const REMOTE_CM_RESPONSE_TIMEOUT: Field =
        Field::new("req.remote_cm_response_timeout", 43, 0, 5);
    /// TransportServiceType.
    pub const TRANSPORT_TYPE: Field = Field::new("req.transport_type", 43, 5, 2);
    /// End-to-end flow control.
    pub const END_TO_END_FLOW_CONTROL: Field = Field::new("req.end_to_end_flow_control", 43, 7, 1);
    /// StartingPSN.
    pub const STARTING_PSN: Field = Field::new("req.starting_psn", 44, 0, 24);
    /// LocalCMResponseTimeout.
    pub const LOCAL_CM_RESPONSE_TIMEOUT: Field =
        Field::new("req.local_cm_response_timeout", 47, 0, 5);
    /// RetryCount.
    pub const RETRY_COUNT: Field = Field::new("req.retry_count", 47, 5, 3);
    /// PartitionKey.
    pub const PKEY: Field = Field::new("req.pkey", 48, 0, 16);
    /// PathPacketPayloadMTU.
    pub const PATH_MTU: Field = Field::new("req.path_mtu", 50, 0, 4);
    /// RDCExists.
    pub const RDC_EXISTS: Field = Field::new("req.rdc_exists", 50, 4, 1);
    /// RNRRetryCount.
    pub const RNR_RETRY_COUNT: Field = Field::new("req.rnr_retry_count", 50, 5, 3);
    /// MaxCMRetries.
    pub const MAX_CM_RETRIES: Field = Field::new("req.max_cm_retries", 51, 0, 4);
    /// SRQ.
    pub const SRQ: Field = Field::new("req.srq", 51, 4, 1);
    /// ExtendedTransportType.
    pub const EXTENDED_TRANSPORT_TYPE: Field = Field::new("req.extended_transport_type", 51, 5, 3);
    /// SAP supported (alternate path block, byte 139 bit 5).
    pub const SAP_SUPPORTED: Field = Field::new("req.sap_supported", 139, 5, 1);
    /// PrivateData.
    pub const PRIVATE_DATA: Bytes = Bytes::new(140, super::REQ_PRIVATE_DATA_SIZE);
}

/// A REQ, fields in host order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Hash)]
pub struct Req {
    /// Sender's communication ID.
    pub local_comm_id: u32,
    /// ECE vendor ID, 24 bits.
    pub vendor_id: u32,
    /// Service ID (see [`super::service_id`]).
    pub service_id: u64,
    /// Sender's CA GUID.
    pub local_ca_guid: u64,
    /// Sender's Q_Key (0 for RC).
    pub local_qkey: u32,
    /// Sender's QPN, 24 bits, never 0.
    pub local_qpn: u32,
    /// RDMA read/atomic resources the sender offers as responder.
    pub responder_resources: u8,
    /// Sender's EECN, 24 bits (RD only).
    pub local_eecn: u32,
    /// RDMA read/atomic depth the sender wants as initiator.
    pub initiator_depth: u8,
    /// Remote EECN, 24 bits (RD only).
    pub remote_eecn: u32,
    /// How long the receiver may take to answer, 5-bit exponent.
    pub remote_cm_response_timeout: u8,
    /// Transport service.
    pub transport: Transport,
    /// End-to-end flow control.
    pub end_to_end_flow_control: bool,
    /// PSN the sender's receive queue expects first, 24 bits.
    pub starting_psn: u32,
    /// How long the sender takes to answer, 5-bit exponent.
    pub local_cm_response_timeout: u8,
    /// Transport retry count, 3 bits.
    pub retry_count: u8,
    /// P_Key.
    pub pkey: u16,
    /// Path MTU enum, 4 bits.
    pub path_mtu: u8,
    /// RDC exists (RD only).
    pub rdc_exists: bool,
    /// RNR retry count, 3 bits.
    pub rnr_retry_count: u8,
    /// Maximum CM retries, 4 bits.
    pub max_cm_retries: u8,
    /// The sender uses an SRQ.
    pub srq: bool,
    /// Primary path.
    pub primary_path: CmPath,
    /// Alternate path (all zero: none).
    pub alternate_path: CmPath,
    /// Symmetric alternate path supported.
    pub sap_supported: bool,
    /// Private data (RDMA CM puts its 36-byte `cma_hdr` first).
    pub private_data: PrivateData<REQ_PRIVATE_DATA_SIZE>,
}

impl Req {
    /// Reads a REQ from a whole MAD (the header is not checked; see
    /// [`super::cm_mad::CmMad::decode`]).
    ///
    /// # Errors
    ///
    /// [`DecodeError::Truncated`] for fewer than 256 bytes, [`DecodeError::ZeroQpn`] for a
    /// LocalQPN of 0, [`DecodeError::ReservedTransport`] for RD or an unknown extended type.
    pub fn decode(bytes: &[u8]) -> Result<Self, DecodeError> {
        use fields::*;
        let mad = wire::as_mad(bytes)?;
        let transport = Transport::from_wire(
            TRANSPORT_TYPE.get_u8(mad),
            EXTENDED_TRANSPORT_TYPE.get_u8(mad),
        )?;
        let local_qpn = LOCAL_QPN.get_u32(mad);
        if local_qpn == 0 {
            return Err(DecodeError::ZeroQpn(AttrId::Req));
        }
        Ok(Self {
            local_comm_id: LOCAL_COMM_ID.get_u32(mad),
            vendor_id: VENDOR_ID.get_u32(mad),
            service_id: SERVICE_ID.get(mad),
            local_ca_guid: LOCAL_CA_GUID.get(mad),
            local_qkey: LOCAL_QKEY.get_u32(mad),
            local_qpn,
            responder_resources: RESPONDER_RESOURCES.get_u8(mad),
            local_eecn: LOCAL_EECN.get_u32(mad),
            initiator_depth: INITIATOR_DEPTH.get_u8(mad),
            remote_eecn: REMOTE_EECN.get_u32(mad),
            remote_cm_response_timeout: REMOTE_CM_RESPONSE_TIMEOUT.get_u8(mad),
            transport,
            end_to_end_flow_control: END_TO_END_FLOW_CONTROL.get_bool(mad),
            starting_psn: STARTING_PSN.get_u32(mad),
            local_cm_response_timeout: LOCAL_CM_RESPONSE_TIMEOUT.get_u8(mad),
            retry_count: RETRY_COUNT.get_u8(mad),
            pkey: PKEY.get_u16(mad),
            path_mtu: PATH_MTU.get_u8(mad),
            rdc_exists: RDC_EXISTS.get_bool(mad),
            rnr_retry_count: RNR_RETRY_COUNT.get_u8(mad),
            max_cm_retries: MAX_CM_RETRIES.get_u8(mad),
            srq: SRQ.get_bool(mad),
            primary_path: CmPath::decode(mad, &REQ_PRIMARY),
            alternate_path: CmPath::decode(mad, &REQ_ALTERNATE),
            sap_supported: SAP_SUPPORTED.get_bool(mad),
            private_data: PrivateData::from_array(PRIVATE_DATA.read(mad)),
        })
    }

    /// Writes the REQ into the message data of `mad` (bytes 24..256, reserved bits zero);
    /// the MAD header is left alone.
    ///
    /// # Errors
    ///
    /// [`EncodeError::FieldOutOfRange`] if a value is wider than its field or the QPN is 0.
    /// The message data is then unspecified.
    pub fn encode(&self, mad: &mut Mad) -> Result<(), EncodeError> {
        use fields::*;
        if self.local_qpn == 0 {
            return Err(EncodeError::FieldOutOfRange(LOCAL_QPN.name));
        }
        wire::clear_data(mad);
        let (transport, extended) = self.transport.to_wire();
        LOCAL_COMM_ID.set(mad, self.local_comm_id.into())?;
        VENDOR_ID.set(mad, self.vendor_id.into())?;
        SERVICE_ID.set(mad, self.service_id)?;
        LOCAL_CA_GUID.set(mad, self.local_ca_guid)?;
        LOCAL_QKEY.set(mad, self.local_qkey.into())?;
        LOCAL_QPN.set(mad, self.local_qpn.into())?;
        RESPONDER_RESOURCES.set(mad, self.responder_resources.into())?;
        LOCAL_EECN.set(mad, self.local_eecn.into())?;
        INITIATOR_DEPTH.set(mad, self.initiator_depth.into())?;
        REMOTE_EECN.set(mad, self.remote_eecn.into())?;
        REMOTE_CM_RESPONSE_TIMEOUT.set(mad, self.remote_cm_response_timeout.into())?;
        TRANSPORT_TYPE.set(mad, transport.into())?;
        END_TO_END_FLOW_CONTROL.set_bool(mad, self.end_to_end_flow_control);
        STARTING_PSN.set(mad, self.starting_psn.into())?;
        LOCAL_CM_RESPONSE_TIMEOUT.set(mad, self.local_cm_response_timeout.into())?;
        RETRY_COUNT.set(mad, self.retry_count.into())?;
        PKEY.set(mad, self.pkey.into())?;
        PATH_MTU.set(mad, self.path_mtu.into())?;
        RDC_EXISTS.set_bool(mad, self.rdc_exists);
        RNR_RETRY_COUNT.set(mad, self.rnr_retry_count.into())?;
        MAX_CM_RETRIES.set(mad, self.max_cm_retries.into())?;
        SRQ.set_bool(mad, self.srq);
        EXTENDED_TRANSPORT_TYPE.set(mad, extended.into())?;
        self.primary_path.encode(mad, &REQ_PRIMARY)?;
        self.alternate_path.encode(mad, &REQ_ALTERNATE)?;
        SAP_SUPPORTED.set_bool(mad, self.sap_supported);
        PRIVATE_DATA.write(mad, self.private_data.as_bytes())
    }
}
