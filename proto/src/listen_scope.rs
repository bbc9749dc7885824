//! Listens scoped by address: several listeners on one service ID, each for an IP address or
//! a family's wildcard, as rdma_cm's IDs bound to one port are (`cma_find_listener` and
//! `cma_match_private_data` in `drivers/infiniband/core/cma.c`).
//!
//! A request goes to the first of these that listens on its service ID:
//! 1. the listener on the request's destination address;
//! 2. the wildcard of the destination's family;
//! 3. the other family's wildcard, unless it has AFONLY;
//! 4. the unscoped listener (a listen that names no address).
//!
//! The destination is the `cma_hdr`'s when the service ID is an rdma_cm IP port space and its
//! header decodes, else the GID the request's path leads to ([`req_destination`]). A loopback
//! address listens as its family's wildcard, as `cma_any_addr` counts it one.

use super::{
    cma_hdr::{
        CmaAddrs,
        CmaHdr, //
    },
    service_id::parse_ip_service_id,
};

/// An IP address, as a listen, a bind or a request names it, in network order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum IpAddr {
    /// IPv4.
    V4([u8; 4]),
    /// IPv6.
    V6([u8; 16]),
}

impl IpAddr {
    /// Whether it is IPv6.
    pub const fn is_v6(&self) -> bool {
        matches!(self, Self::V6(_))
    }

    /// Whether rdma_cm takes it for a wildcard: the zero address or loopback
    /// (`cma_any_addr`: `cma_zero_addr` or `cma_loopback_addr`).
    pub fn is_any(&self) -> bool {
        match self {
            Self::V4(a) => a[0] == 0 || a[0] == 127,
            Self::V6(a) => a[..15] == [0; 15] && a[15] <= 1,
        }
    }

    /// The address a RoCE GID stands for: `::ffff:a.b.c.d` is IPv4 (`rdma_gid2ip`).
    pub fn from_gid(gid: &[u8; 16]) -> Self {
        if gid[..10] == [0; 10] && gid[10..12] == [0xff, 0xff] {
            Self::V4([gid[12], gid[13], gid[14], gid[15]])
        } else {
            Self::V6(*gid)
        }
    }

    /// The 16 bytes of a listen's or a bind's address: `None` for IPv4 with bytes before its
    /// last four, which must be zero, as in `cma_hdr`.
    pub fn checked_slot(v6: bool, addr: &[u8; 16]) -> Option<Self> {
        (v6 || addr[..12] == [0; 12]).then(|| Self::from_slot(v6, addr))
    }

    /// `addr` as the 16 bytes of a `cma_hdr` slot or a listen's address: IPv4 in the last 4.
    pub fn from_slot(v6: bool, addr: &[u8; 16]) -> Self {
        if v6 {
            Self::V6(*addr)
        } else {
            Self::V4([addr[12], addr[13], addr[14], addr[15]])
        }
    }
}

/// The IPv4 unspecified address, what an owner of a port names when it names none.
impl Default for IpAddr {
    fn default() -> Self {
        Self::V4([0; 4])
    }
}

/// What a listen takes, of the requests for its service ID.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ListenScope {
    /// Every request: a listen that names no address.
    Unscoped,
    /// Requests to any address of its family; of either family unless `afonly`.
    Wildcard {
        /// IPv6 (else IPv4).
        v6: bool,
        /// It takes no request of the other family.
        afonly: bool,
    },
    /// Requests to this address only.
    Addr(IpAddr),
}

/// Where a listener sits in its service ID's group: two listeners in one slot are one too many.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Slot {
    /// The unscoped listener.
    Unscoped,
    /// A family's wildcard (IPv6 if true).
    Wildcard(bool),
    /// An address.
    Addr(IpAddr),
}

/// Why a listen may not join the listeners of its service ID.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScopeConflict {
    /// Another listener holds its slot (`EBUSY`).
    Same,
    /// It would take requests that reach the other listener now (`EADDRINUSE` for another
    /// user's).
    TakesOver,
}

impl ListenScope {
    /// The scope of a listen on `addr`: a wildcard if rdma_cm takes `addr` for one.
    pub fn of(addr: IpAddr, afonly: bool) -> Self {
        if addr.is_any() {
            Self::Wildcard {
                v6: addr.is_v6(),
                afonly,
            }
        } else {
            Self::Addr(addr)
        }
    }

    /// Its slot.
    pub const fn slot(&self) -> Slot {
        match *self {
            Self::Unscoped => Slot::Unscoped,
            Self::Wildcard { v6, .. } => Slot::Wildcard(v6),
            Self::Addr(a) => Slot::Addr(a),
        }
    }

    /// Where a request for `dst` finds this listener in the matching order (0 first); `None`
    /// if it does not take it. A request with no destination only reaches an unscoped one.
    pub fn rank(&self, dst: Option<IpAddr>) -> Option<u8> {
        match (*self, dst) {
            (Self::Unscoped, _) => Some(3),
            (_, None) => None,
            (Self::Addr(a), Some(d)) => (a == d).then_some(0),
            (Self::Wildcard { v6, .. }, Some(d)) if d.is_v6() == v6 => Some(1),
            (Self::Wildcard { afonly, .. }, Some(_)) => (!afonly).then_some(2),
        }
    }

    /// Whether a listen of this scope may join a service ID where `existing` listens:
    /// `None`, or why not. Covering a more specific listener is allowed, since it keeps its
    /// requests.
    pub fn conflict_with(&self, existing: &Self) -> Option<ScopeConflict> {
        if self.slot() == existing.slot() {
            return Some(ScopeConflict::Same);
        }
        // A destination of every kind either listener tells apart: each one's address, and
        // an address of each family that neither names.
        let named = |s: &Self| match s {
            Self::Addr(a) => Some(*a),
            _ => None,
        };
        let other_v4 = [[192, 0, 2, 1], [192, 0, 2, 2], [192, 0, 2, 3]]
            .map(IpAddr::V4)
            .into_iter()
            .find(|a| Some(*a) != named(self) && Some(*a) != named(existing));
        let mut v6 = [0u8; 16];
        v6[..4].copy_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
        let other_v6 = (1..4)
            .map(|i| {
                v6[15] = i;
                IpAddr::V6(v6)
            })
            .find(|a| Some(*a) != named(self) && Some(*a) != named(existing));
        let takes = [named(self), named(existing), other_v4, other_v6]
            .into_iter()
            .flatten()
            .any(
                |dst| match (self.rank(Some(dst)), existing.rank(Some(dst))) {
                    (Some(new), Some(old)) => new < old,
                    _ => false,
                },
            );
        takes.then_some(ScopeConflict::TakesOver)
    }
}

/// The order in which a request for `dst` tries a service ID's listeners (see the module
/// docs): the slot, and for the other family's wildcard, that it must not have AFONLY.
pub fn match_order(dst: Option<IpAddr>) -> impl Iterator<Item = (Slot, bool)> {
    let scoped = dst.map(|d| {
        [
            (Slot::Addr(d), false),
            (Slot::Wildcard(d.is_v6()), false),
            (Slot::Wildcard(!d.is_v6()), true),
        ]
    });
    scoped
        .into_iter()
        .flatten()
        .chain(core::iter::once((Slot::Unscoped, false)))
}

/// The address a request is for, which picks its listener: the `cma_hdr`'s destination when
/// `service_id` is an rdma_cm IP port space and `private_data` starts with a header that
/// decodes, else the address of `path_gid`, the GID its path leads to on this side (`None`
/// for a SIDR_REQ, whose only address is in its header).
pub fn req_destination(
    service_id: u64,
    private_data: &[u8],
    path_gid: Option<&[u8; 16]>,
) -> Option<IpAddr> {
    let hdr = parse_ip_service_id(service_id).and_then(|_| CmaHdr::decode(private_data).ok());
    match hdr.map(|h| h.addrs) {
        Some(CmaAddrs::V4 { dst, .. }) => Some(IpAddr::V4(dst)),
        Some(CmaAddrs::V6 { dst, .. }) => Some(IpAddr::V6(dst)),
        None => path_gid.map(IpAddr::from_gid),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: IpAddr = IpAddr::V4([10, 77, 0, 1]);
    const B: IpAddr = IpAddr::V4([10, 77, 0, 3]);
    const C6: IpAddr = IpAddr::V6([0xfd, 0x77, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
    const W4: ListenScope = ListenScope::Wildcard {
        v6: false,
        afonly: false,
    };
    const W4_ONLY: ListenScope = ListenScope::Wildcard {
        v6: false,
        afonly: true,
    };
    const W6: ListenScope = ListenScope::Wildcard {
        v6: true,
        afonly: false,
    };
    const W6_ONLY: ListenScope = ListenScope::Wildcard {
        v6: true,
        afonly: true,
    };
    const U: ListenScope = ListenScope::Unscoped;

    /// `cma_match_private_data`, transcribed: a wildcard without AFONLY takes everything;
    /// otherwise the family must be the header's, and an address must be its destination.
    fn cma_matches(scope: ListenScope, dst: IpAddr) -> bool {
        match scope {
            ListenScope::Unscoped => true,
            ListenScope::Wildcard { afonly: false, .. } => true,
            ListenScope::Wildcard { v6, afonly: true } => v6 == dst.is_v6(),
            ListenScope::Addr(a) => a == dst,
        }
    }

    #[test]
    fn wildcards_are_cma_any_addr_and_loopback() {
        // `cma_any_addr` is `ipv4_is_zeronet` (0.0.0.0/8) for IPv4, and `cma_loopback_addr`
        // 127.0.0.0/8; IPv6 `::` and `::1`. The port table uses the same test.
        for (a, any) in [
            ([0, 0, 0, 0], true),
            ([0, 1, 2, 3], true),
            ([127, 0, 0, 1], true),
            ([127, 9, 9, 9], true),
            ([10, 0, 0, 0], false),
            ([1, 0, 0, 0], false),
        ] {
            assert_eq!(IpAddr::V4(a).is_any(), any, "{a:?}");
        }
        let mut v6 = [0u8; 16];
        assert!(IpAddr::V6(v6).is_any());
        v6[15] = 1;
        assert!(IpAddr::V6(v6).is_any());
        v6[15] = 2;
        assert!(!IpAddr::V6(v6).is_any());
    }

    #[test]
    fn rank_agrees_with_cma_match_private_data() {
        let scopes = [
            U,
            W4,
            W4_ONLY,
            W6,
            W6_ONLY,
            ListenScope::Addr(A),
            ListenScope::Addr(C6),
        ];
        for scope in scopes {
            for dst in [A, B, C6] {
                assert_eq!(
                    scope.rank(Some(dst)).is_some(),
                    cma_matches(scope, dst),
                    "{scope:?} for {dst:?}"
                );
            }
        }
    }

    #[test]
    fn the_order_is_address_family_wildcard_other_wildcard_unscoped() {
        let order: [Option<u8>; 5] = [
            ListenScope::Addr(A).rank(Some(A)),
            W4.rank(Some(A)),
            W6.rank(Some(A)),
            U.rank(Some(A)),
            W6_ONLY.rank(Some(A)),
        ];
        assert_eq!(order, [Some(0), Some(1), Some(2), Some(3), None]);
        let slots: [(Slot, bool); 4] = {
            let mut it = match_order(Some(C6));
            core::array::from_fn(|_| it.next().unwrap())
        };
        assert_eq!(
            slots,
            [
                (Slot::Addr(C6), false),
                (Slot::Wildcard(true), false),
                (Slot::Wildcard(false), true),
                (Slot::Unscoped, false)
            ]
        );
        let mut none = match_order(None);
        assert_eq!(none.next(), Some((Slot::Unscoped, false)));
        assert_eq!(none.next(), None);
        assert_eq!(ListenScope::Addr(A).rank(None), None);
        assert_eq!(W4.rank(None), None);
    }

    #[test]
    fn loopback_and_zero_listen_as_wildcards() {
        for (addr, wild) in [
            (IpAddr::V4([0; 4]), true),
            (IpAddr::V4([127, 0, 0, 1]), true),
            (IpAddr::V4([127, 9, 9, 9]), true),
            (A, false),
            (IpAddr::V6([0; 16]), true),
            (
                IpAddr::V6(core::array::from_fn(|i| u8::from(i == 15))),
                true,
            ),
            (C6, false),
        ] {
            let expect = if wild {
                ListenScope::Wildcard {
                    v6: addr.is_v6(),
                    afonly: true,
                }
            } else {
                ListenScope::Addr(addr)
            };
            assert_eq!(ListenScope::of(addr, true), expect, "{addr:?}");
        }
    }

    #[test]
    fn conflicts() {
        use ScopeConflict::{
            Same,
            TakesOver, //
        };
        let a = ListenScope::Addr(A);
        let b = ListenScope::Addr(B);
        let c6 = ListenScope::Addr(C6);
        // (new, existing, conflict)
        let table: &[(ListenScope, ListenScope, Option<ScopeConflict>)] = &[
            (a, a, Some(Same)),
            (W4, W4_ONLY, Some(Same)),
            (U, U, Some(Same)),
            (a, b, None),
            (a, c6, None),
            // An address under a wildcard or an unscoped listener takes its requests.
            (a, W4, Some(TakesOver)),
            (a, W4_ONLY, Some(TakesOver)),
            (a, W6, Some(TakesOver)),
            (a, W6_ONLY, None),
            (a, U, Some(TakesOver)),
            (W4, U, Some(TakesOver)),
            (W6_ONLY, U, Some(TakesOver)),
            // A v6 wildcard takes the v6 requests of a dual-stack v4 one.
            (W6, W4, Some(TakesOver)),
            (W6_ONLY, W4, Some(TakesOver)),
            (W6, W4_ONLY, None),
            (W6_ONLY, W4_ONLY, None),
            // Covering a more specific listener is allowed.
            (W4, a, None),
            (W6, a, None),
            (U, a, None),
            (U, W4, None),
            (U, W6_ONLY, None),
        ];
        for &(new, existing, want) in table {
            assert_eq!(
                new.conflict_with(&existing),
                want,
                "{new:?} over {existing:?}"
            );
        }
    }

    #[test]
    fn destination_from_the_header_else_the_path() {
        let sid = 0x0000_0000_0106_4e21;
        let hdr = |addrs| CmaHdr { src_port: 1, addrs }.encode();
        let v4 = hdr(CmaAddrs::V4 {
            src: [10, 77, 0, 2],
            dst: [10, 77, 0, 3],
        });
        let gid: [u8; 16] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 77, 0, 1];
        assert_eq!(req_destination(sid, &v4, Some(&gid)), Some(B));
        let IpAddr::V6(c6) = C6 else { unreachable!() };
        let v6 = hdr(CmaAddrs::V6 { src: c6, dst: c6 });
        assert_eq!(req_destination(sid, &v6, None), Some(C6));
        // No header, a bad one, or no IP port space: the path's GID, v4-mapped as IPv4.
        assert_eq!(req_destination(sid, &[], Some(&gid)), Some(A));
        let mut bad = v4;
        bad[0] = 1;
        assert_eq!(req_destination(sid, &bad, Some(&gid)), Some(A));
        assert_eq!(req_destination(0x1234, &v4, Some(&gid)), Some(A));
        assert_eq!(req_destination(sid, &[], Some(&c6)), Some(C6));
        assert_eq!(req_destination(sid, &[], None), None);
    }
}
