//! The path block shared by REQ (primary and alternate path) and LAP (alternate path).
//!
//! REQ and LAP carry the same path fields in two different arrangements
//! (IBTA vol. 1 tables 106 and 115; `include/rdma/ibta_vol1_c12.h`), so the fields live in
//! one [`CmPath`] and the arrangement in a [`PathLayout`].

use super::error::EncodeError;
use super::wire::{Bytes, Field, Mad};

/// A 16-byte GID, network order.
pub type Gid = [u8; 16];

/// One path as carried in a CM message, fields in host order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Hash)]
pub struct CmPath {
    /// Local port LID (0xFFFF, permissive, on RoCE).
    pub local_lid: u16,
    /// Remote port LID.
    pub remote_lid: u16,
    /// Local port GID (RoCEv2: the sender's IP as a GID).
    pub local_gid: Gid,
    /// Remote port GID.
    pub remote_gid: Gid,
    /// Flow label, 20 bits.
    pub flow_label: u32,
    /// Packet rate (IBTA rate enum), 6 bits.
    pub packet_rate: u8,
    /// Traffic class.
    pub traffic_class: u8,
    /// Hop limit.
    pub hop_limit: u8,
    /// Service level, 4 bits.
    pub sl: u8,
    /// Subnet-local flag.
    pub subnet_local: bool,
    /// Local ACK timeout exponent, 5 bits (4.096 µs·2^t).
    pub local_ack_timeout: u8,
}

/// Where each [`CmPath`] field sits in a message.
#[derive(Clone, Copy, Debug)]
pub struct PathLayout {
    /// Local port LID.
    pub local_lid: Field,
    /// Remote port LID.
    pub remote_lid: Field,
    /// Local port GID.
    pub local_gid: Bytes,
    /// Remote port GID.
    pub remote_gid: Bytes,
    /// Flow label.
    pub flow_label: Field,
    /// Packet rate.
    pub packet_rate: Field,
    /// Traffic class.
    pub traffic_class: Field,
    /// Hop limit.
    pub hop_limit: Field,
    /// Service level.
    pub sl: Field,
    /// Subnet-local flag.
    pub subnet_local: Field,
    /// Local ACK timeout.
    pub local_ack_timeout: Field,
}

/// REQ layout: 44 bytes at `base` (52 primary, 96 alternate).
const fn req_layout(base: usize, primary: bool) -> PathLayout {
    let (lid_l, lid_r, fl, rate, tc, hop, sl, sub, lat) = if primary {
        (
            "req.primary.local_lid",
            "req.primary.remote_lid",
            "req.primary.flow_label",
            "req.primary.packet_rate",
            "req.primary.traffic_class",
            "req.primary.hop_limit",
            "req.primary.sl",
            "req.primary.subnet_local",
            "req.primary.local_ack_timeout",
        )
    } else {
        (
            "req.alternate.local_lid",
            "req.alternate.remote_lid",
            "req.alternate.flow_label",
            "req.alternate.packet_rate",
            "req.alternate.traffic_class",
            "req.alternate.hop_limit",
            "req.alternate.sl",
            "req.alternate.subnet_local",
            "req.alternate.local_ack_timeout",
        )
    };
    PathLayout {
        local_lid: Field::new(lid_l, base, 0, 16),
        remote_lid: Field::new(lid_r, base + 2, 0, 16),
        local_gid: Bytes::new(base + 4, 16),
        remote_gid: Bytes::new(base + 20, 16),
        flow_label: Field::new(fl, base + 36, 0, 20),
        packet_rate: Field::new(rate, base + 39, 2, 6),
        traffic_class: Field::new(tc, base + 40, 0, 8),
        hop_limit: Field::new(hop, base + 41, 0, 8),
        sl: Field::new(sl, base + 42, 0, 4),
        subnet_local: Field::new(sub, base + 42, 4, 1),
        local_ack_timeout: Field::new(lat, base + 43, 0, 5),
    }
}

/// REQ primary path, message bytes 52..96.
pub const REQ_PRIMARY: PathLayout = req_layout(52, true);
/// REQ alternate path, message bytes 96..140.
pub const REQ_ALTERNATE: PathLayout = req_layout(96, false);
/// LAP alternate path, message bytes 20..64 (traffic class and packet rate swap places
/// compared with REQ).
pub const LAP_ALTERNATE: PathLayout = PathLayout {
    local_lid: Field::new("lap.alternate.local_lid", 20, 0, 16),
    remote_lid: Field::new("lap.alternate.remote_lid", 22, 0, 16),
    local_gid: Bytes::new(24, 16),
    remote_gid: Bytes::new(40, 16),
    flow_label: Field::new("lap.alternate.flow_label", 56, 0, 20),
    traffic_class: Field::new("lap.alternate.traffic_class", 59, 0, 8),
    hop_limit: Field::new("lap.alternate.hop_limit", 60, 0, 8),
    packet_rate: Field::new("lap.alternate.packet_rate", 61, 2, 6),
    sl: Field::new("lap.alternate.sl", 62, 0, 4),
    subnet_local: Field::new("lap.alternate.subnet_local", 62, 4, 1),
    local_ack_timeout: Field::new("lap.alternate.local_ack_timeout", 63, 0, 5),
};

/// The permissive LID, which a RoCE REQ names as both ports' LIDs on a path of more than one
/// hop.
pub const PERMISSIVE_LID: u16 = 0xffff;

impl CmPath {
    /// This RoCE path with its LIDs and SubnetLocal bit as Linux's `cm_format_req`
    /// (drivers/infiniband/core/cm.c) sets them from its hop limit: beyond one hop, the
    /// permissive LID both ways and not subnet-local; within one, the path's own LIDs, of
    /// which RoCE has none (0), and subnet-local.
    #[must_use]
    pub fn with_roce_lids(mut self) -> Self {
        let local = self.hop_limit <= 1;
        let lid = if local { 0 } else { PERMISSIVE_LID };
        self.local_lid = lid;
        self.remote_lid = lid;
        self.subnet_local = local;
        self
    }

    /// Whether the block is all zero, i.e. "no alternate path".
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// Reads a path block.
    pub fn decode(mad: &Mad, layout: &PathLayout) -> Self {
        Self {
            local_lid: layout.local_lid.get_u16(mad),
            remote_lid: layout.remote_lid.get_u16(mad),
            local_gid: layout.local_gid.read(mad),
            remote_gid: layout.remote_gid.read(mad),
            flow_label: layout.flow_label.get_u32(mad),
            packet_rate: layout.packet_rate.get_u8(mad),
            traffic_class: layout.traffic_class.get_u8(mad),
            hop_limit: layout.hop_limit.get_u8(mad),
            sl: layout.sl.get_u8(mad),
            subnet_local: layout.subnet_local.get_bool(mad),
            local_ack_timeout: layout.local_ack_timeout.get_u8(mad),
        }
    }

    /// Writes a path block (the message data must already be zeroed).
    ///
    /// # Errors
    ///
    /// [`EncodeError::FieldOutOfRange`] for a flow label, rate, SL or timeout too wide.
    pub fn encode(&self, mad: &mut Mad, layout: &PathLayout) -> Result<(), EncodeError> {
        layout.local_lid.set(mad, self.local_lid.into())?;
        layout.remote_lid.set(mad, self.remote_lid.into())?;
        layout.local_gid.write(mad, &self.local_gid)?;
        layout.remote_gid.write(mad, &self.remote_gid)?;
        layout.flow_label.set(mad, self.flow_label.into())?;
        layout.packet_rate.set(mad, self.packet_rate.into())?;
        layout.traffic_class.set(mad, self.traffic_class.into())?;
        layout.hop_limit.set(mad, self.hop_limit.into())?;
        layout.sl.set(mad, self.sl.into())?;
        layout.subnet_local.set_bool(mad, self.subnet_local);
        layout
            .local_ack_timeout
            .set(mad, self.local_ack_timeout.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roce_lids_follow_the_hop_limit_as_cm_format_req_sets_them() {
        for (hop_limit, lid, subnet_local) in [
            (0, 0, true),
            (1, 0, true),
            (2, PERMISSIVE_LID, false),
            (64, PERMISSIVE_LID, false),
            (255, PERMISSIVE_LID, false),
        ] {
            let path = CmPath {
                hop_limit,
                ..Default::default()
            }
            .with_roce_lids();
            assert_eq!(
                (path.local_lid, path.remote_lid, path.subnet_local),
                (lid, lid, subnet_local),
                "hop limit {hop_limit}"
            );
        }
    }
}
