//! RDMA CM service IDs: `(port space << 16) | port` (`RDMA_IB_IP_PS_*` in
//! `include/rdma/rdma_cm.h`, `rdma_get_service_id` in `drivers/infiniband/core/cma.c`).

/// RDMA CM port spaces (`enum rdma_ucm_port_space` in `include/uapi/rdma/rdma_user_cm.h`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PortSpace {
    /// `RDMA_PS_IPOIB` (0x0002).
    Ipoib,
    /// `RDMA_PS_IB` (0x013F).
    Ib,
    /// `RDMA_PS_TCP` (0x0106): connected (REQ/REP).
    Tcp,
    /// `RDMA_PS_UDP` (0x0111): datagram (SIDR).
    Udp,
}

impl PortSpace {
    /// The 16-bit port-space value.
    pub const fn value(self) -> u16 {
        match self {
            Self::Ipoib => 0x0002,
            Self::Ib => 0x013F,
            Self::Tcp => 0x0106,
            Self::Udp => 0x0111,
        }
    }

    /// The port space with this value.
    pub const fn from_value(value: u16) -> Option<Self> {
        match value {
            0x0002 => Some(Self::Ipoib),
            0x013F => Some(Self::Ib),
            0x0106 => Some(Self::Tcp),
            0x0111 => Some(Self::Udp),
            _ => None,
        }
    }
}

/// Mask selecting the port space of an IP service ID (`RDMA_IB_IP_PS_MASK`).
pub const IP_PS_MASK: u64 = 0xFFFF_FFFF_FFFF_0000;
/// Prefix of every RDMA CM service ID (`IB_CMA_SERVICE_ID`).
pub const CMA_SERVICE_ID: u64 = 0x0000_0000_0100_0000;
/// Mask for [`CMA_SERVICE_ID`] (`IB_CMA_SERVICE_ID_MASK`).
pub const CMA_SERVICE_ID_MASK: u64 = 0xFFFF_FFFF_FF00_0000;
/// Ask the CM to assign a service ID (`IB_CM_ASSIGN_SERVICE_ID`).
pub const ASSIGN_SERVICE_ID: u64 = 0x0200_0000_0000_0000;
/// Mask of the top byte that marks CM-assigned IDs.
pub const ASSIGN_SERVICE_ID_MASK: u64 = 0xFF00_0000_0000_0000;

/// The service ID `rdma_cm` uses for `port` in `ps` (rping's 7174 in TCP is
/// `0x0000000001061C06`).
pub const fn ip_service_id(ps: PortSpace, port: u16) -> u64 {
    ((ps.value() as u64) << 16) | port as u64
}

/// Splits an IP service ID into port space and port; `None` if it is not one.
pub const fn parse_ip_service_id(sid: u64) -> Option<(PortSpace, u16)> {
    if sid >> 32 != 0 {
        return None;
    }
    match PortSpace::from_value((sid >> 16) as u16) {
        Some(ps) => Some((ps, sid as u16)),
        None => None,
    }
}

/// Whether `sid` is in the RDMA CM range (`0x00000000_01xxxxxx`).
pub const fn is_cma_service_id(sid: u64) -> bool {
    sid & CMA_SERVICE_ID_MASK == CMA_SERVICE_ID
}

/// Whether a listen on `sid` is acceptable: any ID except the CM-assigned range, where
/// only [`ASSIGN_SERVICE_ID`] itself is allowed (Linux returns `-EINVAL` otherwise,
/// `cm_init_listen` in `drivers/infiniband/core/cm.c`).
pub const fn listen_sid_valid(sid: u64) -> bool {
    sid & ASSIGN_SERVICE_ID_MASK != ASSIGN_SERVICE_ID || sid == ASSIGN_SERVICE_ID
}

/// Ports below this in an IP port space are privileged, as in `bind(2)` (`PROT_SOCK`).
pub const PRIVILEGED_PORTS: u16 = 1024;

/// The service IDs one listen takes: those equal to `id` under `mask`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServiceRange {
    /// The service ID listened on.
    pub id: u64,
    /// Which bits of a REQ's service ID must equal `id`'s (all ones: `id` alone).
    pub mask: u64,
}

/// Why one listen may not join another user's (docs/abi.md, "Privileges and limits").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListenConflict {
    /// The same range: whoever asks, `EBUSY`.
    Same,
    /// The new range is at least as specific as the other and overlaps it: it would take REQs
    /// from it. Refused to everyone.
    TakesOver,
    /// The new range is less specific and overlaps the other (a masked listen over it): only
    /// for `CAP_NET_ADMIN`; the other keeps its REQs.
    Covers,
}

impl ServiceRange {
    /// Whether some service ID is in both ranges.
    pub const fn overlaps(&self, other: &ServiceRange) -> bool {
        // The bits both masks fix must agree; every other bit is free in one of them.
        (self.id ^ other.id) & self.mask & other.mask == 0
    }

    /// How many bits the range fixes: a REQ goes to the overlapping listen that fixes most.
    pub const fn specificity(&self) -> u32 {
        self.mask.count_ones()
    }

    /// Whether the range includes a port below [`PRIVILEGED_PORTS`] of an IP port space.
    pub const fn includes_privileged_port(&self) -> bool {
        let spaces = [
            PortSpace::Ipoib,
            PortSpace::Ib,
            PortSpace::Tcp,
            PortSpace::Udp,
        ];
        let mut i = 0;
        while i < spaces.len() {
            let space = ServiceRange {
                id: ip_service_id(spaces[i], 0),
                mask: IP_PS_MASK,
            };
            // The port bits at or above 1024's must be zero for some member: those the mask
            // fixes must be zero in `id`; the free ones can be chosen zero.
            let high_port_bits = 0xFFFF & !(PRIVILEGED_PORTS as u64 - 1);
            if self.overlaps(&space) && self.id & self.mask & high_port_bits == 0 {
                return true;
            }
            i += 1;
        }
        false
    }

    /// Why a listen on `self` may not join one on `existing` of another user, if it may not.
    pub const fn conflict_with(&self, existing: &ServiceRange) -> Option<ListenConflict> {
        if self.mask == existing.mask && self.id & self.mask == existing.id & existing.mask {
            Some(ListenConflict::Same)
        } else if !self.overlaps(existing) {
            None
        } else if self.specificity() >= existing.specificity() {
            Some(ListenConflict::TakesOver)
        } else {
            Some(ListenConflict::Covers)
        }
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::vec::Vec;

    /// The ranges of every (id, mask) over the low `BITS` bits, the rest fixed at zero.
    fn small_ranges<const BITS: u32>() -> impl Iterator<Item = ServiceRange> {
        let high = !0u64 << BITS;
        (0..1u64 << BITS).flat_map(move |id| {
            (0..1u64 << BITS).map(move |mask| ServiceRange {
                id,
                mask: high | mask,
            })
        })
    }

    /// The members of a range over the low `BITS` bits, by enumeration: the oracle.
    fn members<const BITS: u32>(r: &ServiceRange) -> impl Iterator<Item = u64> + '_ {
        (0..1u64 << BITS).filter(move |s| s & r.mask == r.id & r.mask)
    }

    #[test]
    fn overlap_is_a_shared_member_exhaustively() {
        let ranges: Vec<_> = small_ranges::<4>().collect();
        for a in &ranges {
            for b in &ranges {
                let shared = members::<4>(a).any(|s| members::<4>(b).any(|t| s == t));
                assert_eq!(a.overlaps(b), shared, "{a:x?} {b:x?}");
            }
        }
    }

    #[test]
    fn conflicts_exhaustively() {
        let ranges: Vec<_> = small_ranges::<3>().collect();
        for a in &ranges {
            for b in &ranges {
                let mut ma: Vec<u64> = members::<3>(a).collect();
                let mut mb: Vec<u64> = members::<3>(b).collect();
                ma.sort();
                mb.sort();
                let shared = ma.iter().any(|s| mb.contains(s));
                let expected = if a.mask == b.mask && ma == mb {
                    Some(ListenConflict::Same)
                } else if !shared {
                    None
                } else if ma.len() <= mb.len() {
                    // Fewer members: at least as specific.
                    Some(ListenConflict::TakesOver)
                } else {
                    Some(ListenConflict::Covers)
                };
                assert_eq!(a.conflict_with(b), expected, "{a:x?} {b:x?}");
            }
        }
    }

    #[test]
    fn privileged_ports_by_enumeration() {
        // Ranges inside one port space's 16 port bits, against every port in it.
        let masks = [
            0xFFFF, 0xFF00, 0xFC00, 0xF800, 0x0400, 0x8000, 0x0001, 0x0000, 0xFFFE,
        ];
        let ids = [
            0x0000, 0x0050, 0x03FF, 0x0400, 0x1389, 0x8000, 0xFFFF, 0x0401, 0x13FF,
        ];
        for ps in [
            PortSpace::Ipoib,
            PortSpace::Ib,
            PortSpace::Tcp,
            PortSpace::Udp,
        ] {
            for &m in &masks {
                for &p in &ids {
                    let r = ServiceRange {
                        id: ip_service_id(ps, p),
                        mask: IP_PS_MASK | m,
                    };
                    let expected = (0..PRIVILEGED_PORTS).any(|q| q & m as u16 == p & m as u16);
                    assert_eq!(r.includes_privileged_port(), expected, "{r:x?}");
                }
            }
        }
    }

    #[test]
    fn privileged_ports_across_spaces() {
        let tcp80 = ip_service_id(PortSpace::Tcp, 80);
        let exact = |id| ServiceRange { id, mask: !0 };
        assert!(exact(tcp80).includes_privileged_port());
        assert!(exact(ip_service_id(PortSpace::Udp, 53)).includes_privileged_port());
        assert!(!exact(ip_service_id(PortSpace::Tcp, 5001)).includes_privileged_port());
        // Not an IP port space: no port is privileged.
        assert!(!exact(0x0107_0050).includes_privileged_port());
        assert!(!exact(0x1_0106_0050).includes_privileged_port());
        // A mask that frees the port-space bits reaches TCP port 80 from elsewhere.
        let wide = ServiceRange {
            id: 0x0107_0050,
            mask: !0xFF_0000,
        };
        assert!(wide.includes_privileged_port());
        // Everything.
        assert!(ServiceRange { id: 0, mask: 0 }.includes_privileged_port());
    }

    #[test]
    fn rping_and_udp_ids() {
        assert_eq!(ip_service_id(PortSpace::Tcp, 7174), 0x0000_0000_0106_1C06);
        assert_eq!(ip_service_id(PortSpace::Udp, 0x1234), 0x0000_0000_0111_1234);
        assert_eq!(
            parse_ip_service_id(0x0106_1C06),
            Some((PortSpace::Tcp, 7174))
        );
        assert_eq!(parse_ip_service_id(0x0107_1C06), None);
        assert_eq!(parse_ip_service_id(0x1_0106_1C06), None);
        assert!(is_cma_service_id(0x0106_1C06));
        assert!(!is_cma_service_id(0x0206_1C06));
        assert!(listen_sid_valid(ASSIGN_SERVICE_ID));
        assert!(!listen_sid_valid(ASSIGN_SERVICE_ID | 5));
        assert!(listen_sid_valid(0x0106_1C06));
    }
}
