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

#[cfg(test)]
mod tests {
    use super::*;

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
