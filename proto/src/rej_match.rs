//! Which connection endpoint a received REJ is for.
//!
//! A REJ names its target in one of three ways, as Linux's `cm_acquire_rejected_id`
//! (drivers/infiniband/core/cm.c) reads it:
//!
//! - reason 4 (Timeout): the rejector gave up on us before it knew our comm ID, so its ARI
//!   carries its CA GUID and the REJ is matched by the rejector's (comm ID, CA GUID), the key
//!   of the remote-ID table;
//! - MessageRejected = REQ: the rejector answers our REQ, and may have no comm ID of its own
//!   (a stateless REJ carries 0). Only a CEP that does not know its peer's comm ID yet
//!   (REQ_SENT, MRA_REQ_RCVD) can take it;
//! - otherwise the REJ must come from the peer we know: its LocalCommID is that peer's comm ID.
//!
//! The last two rules are what stop one spoofed REJ (LocalCommID 0, the right RemoteCommID)
//! from tearing down an established connection.

use super::{msg_code::MessageCode, rej::reason, rej::Rej};

/// Where a REJ is looked up, and what the CEP found must know of its peer to take it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RejTarget {
    /// A timeout REJ: the CEP whose peer is this (comm ID, CA GUID).
    Peer {
        /// The rejector's comm ID (the REJ's LocalCommID).
        comm_id: u32,
        /// The rejector's CA GUID (the first 8 bytes of the ARI).
        ca_guid: u64,
    },
    /// The CEP with our comm ID `local_comm_id` (the REJ's RemoteCommID), provided its peer's
    /// comm ID is `peer_comm_id` (`None`: it must not know one yet).
    Local {
        /// Our comm ID, as the REJ names it.
        local_comm_id: u32,
        /// The peer comm ID the CEP must have.
        peer_comm_id: Option<u32>,
    },
}

impl RejTarget {
    /// Whether a CEP found by [`RejTarget::Local`] takes the REJ; `known_peer` is the peer's
    /// comm ID as the CEP knows it (`None` before any message of the peer's named one).
    /// A CEP found by [`RejTarget::Peer`] was found by its peer's IDs and always takes it.
    pub fn accepted_by(&self, known_peer: Option<u32>) -> bool {
        match *self {
            Self::Peer { .. } => true,
            Self::Local { peer_comm_id, .. } => peer_comm_id == known_peer,
        }
    }
}

impl Rej {
    /// Where this REJ is looked up (see the module docs).
    pub fn target(&self) -> RejTarget {
        if self.reason == reason::TIMEOUT {
            // Linux reads the first 8 bytes of the ARI field whatever its length says; a
            // shorter ARI reads as zeros here, which matches no peer.
            let mut guid = [0u8; 8];
            let ari = self.ari.as_bytes();
            let n = ari.len().min(guid.len());
            guid[..n].copy_from_slice(&ari[..n]);
            return RejTarget::Peer {
                comm_id: self.local_comm_id,
                ca_guid: u64::from_be_bytes(guid),
            };
        }
        let peer_comm_id = match self.message_rejected {
            MessageCode::Req => None,
            _ => Some(self.local_comm_id),
        };
        RejTarget::Local {
            local_comm_id: self.remote_comm_id,
            peer_comm_id,
        }
    }
}
