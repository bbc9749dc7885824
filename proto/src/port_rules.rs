//! Who may hold a port of an rdma_cm port space together, as the kernel's rdma_cm decides it
//! at `rdma_bind_addr` (drivers/infiniband/core/cma.c): `cma_check_port` for a port asked for
//! by number, `cma_port_is_unique` and `cma_alloc_any_port` for port 0, and `rdma_listen`'s
//! second check without REUSEADDR. The module keeps the owners of each port; these rules say
//! whether one more may join them.

use super::listen_scope::IpAddr;

/// One holder of a port, or one that asks to become one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct PortOwner {
    /// Who it is (the module's local comm ID): an owner never conflicts with itself.
    pub id: u32,
    /// The address it binds to.
    pub src: IpAddr,
    /// Where it connects to, for an active CEP; the wildcard for none.
    pub dst: IpAddr,
    /// The port it connects to; 0 for none.
    pub dst_port: u16,
    /// `RDMA_OPTION_ID_REUSEADDR`: shares the port with owners that set it too.
    pub reuseaddr: bool,
    /// `RDMA_OPTION_ID_AFONLY`: an owner of the other family does not conflict, if both
    /// set it.
    pub afonly: bool,
    /// It holds the port for a LISTEN on a CEP that never bound, as `rdma_listen` binds an
    /// unbound ID first. Two such owners do not conflict here: the module's listen table
    /// tells their listens apart, by scope and user, as it did before ports were held.
    pub listen_only: bool,
}

/// Why an owner may not join a port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// `EADDRINUSE`: another owner binds the same address.
    InUse,
    /// `EADDRNOTAVAIL`: a wildcard meets another owner (or no port is left to choose).
    NotAvailable,
}

/// `cma_check_port`: whether `new` may join `owners` on a port it asked for by number.
/// `reuseaddr` is `new`'s own at a bind, and false for `rdma_listen`'s second check.
pub fn check_port<'a>(
    owners: impl IntoIterator<Item = &'a PortOwner>,
    new: &PortOwner,
    reuseaddr: bool,
) -> Result<(), Refusal> {
    for cur in owners {
        if cur.id == new.id || (reuseaddr && cur.reuseaddr) || (new.listen_only && cur.listen_only)
        {
            continue;
        }
        if new.afonly && cur.afonly && new.src.is_v6() != cur.src.is_v6() {
            continue;
        }
        if new.src.is_any() || cur.src.is_any() {
            return Err(Refusal::NotAvailable);
        }
        if new.src == cur.src {
            return Err(Refusal::InUse);
        }
    }
    Ok(())
}

/// `cma_port_is_unique`: whether `new` may share a port chosen for it with `owners`, each
/// pair told apart by a known destination port, source address or destination address.
pub fn is_unique<'a>(owners: impl IntoIterator<Item = &'a PortOwner>, new: &PortOwner) -> bool {
    owners.into_iter().all(|cur| {
        cur.id == new.id
            || (new.dst_port != 0 && cur.dst_port != 0 && new.dst_port != cur.dst_port)
            || (!new.src.is_any() && !cur.src.is_any() && new.src != cur.src)
            || (!new.dst.is_any() && !cur.dst.is_any() && new.dst != cur.dst)
    })
}

/// The ports `cma_alloc_any_port` tries for port 0, in order: from `start` up to `high`, then
/// from `low`, each of `low..=high` once, but `last_used`, the port chosen last time. `start`
/// outside the range starts at `low`.
pub fn candidates(low: u16, high: u16, start: u16, last_used: u16) -> impl Iterator<Item = u16> {
    let (low, high) = if low <= high {
        (low, high)
    } else {
        (high, low)
    };
    let start = if (low..=high).contains(&start) {
        start
    } else {
        low
    };
    (start..=high)
        .chain(low..start)
        .filter(move |&p| p != last_used)
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: IpAddr = IpAddr::V4([10, 0, 0, 1]);
    const B: IpAddr = IpAddr::V4([10, 0, 0, 2]);
    const ANY4: IpAddr = IpAddr::V4([0, 0, 0, 0]);
    const LO4: IpAddr = IpAddr::V4([127, 0, 0, 1]);
    const ANY6: IpAddr = IpAddr::V6([0; 16]);
    const A6: IpAddr = IpAddr::V6([0xfd, 0x77, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);

    fn owner(id: u32, src: IpAddr, reuseaddr: bool, afonly: bool) -> PortOwner {
        PortOwner {
            id,
            src,
            reuseaddr,
            afonly,
            ..Default::default()
        }
    }

    #[test]
    fn wildcards() {
        for (addr, any) in [
            (ANY4, true),
            (LO4, true),
            (IpAddr::V4([0, 1, 2, 3]), true),
            (A, false),
            (ANY6, true),
            (
                IpAddr::V6([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]),
                true,
            ),
            (A6, false),
            // A v4-mapped address is IPv6, and specific.
            (
                IpAddr::V6([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1]),
                false,
            ),
        ] {
            assert_eq!(addr.is_any(), any, "{addr:?}");
        }
    }

    /// cma_check_port, case by case: (held, asked, the asker's reuseaddr) → result.
    #[test]
    fn check_port_table() {
        use Refusal::*;
        let cases: [(PortOwner, PortOwner, bool, Result<(), Refusal>); 14] = [
            // Two equal specific addresses.
            (
                owner(1, A, false, true),
                owner(2, A, false, true),
                false,
                Err(InUse),
            ),
            // Distinct specific addresses share.
            (
                owner(1, A, false, true),
                owner(2, B, false, true),
                false,
                Ok(()),
            ),
            // A wildcard on either side.
            (
                owner(1, A, false, true),
                owner(2, ANY4, false, true),
                false,
                Err(NotAvailable),
            ),
            (
                owner(1, ANY4, false, true),
                owner(2, A, false, true),
                false,
                Err(NotAvailable),
            ),
            // Loopback counts as a wildcard.
            (
                owner(1, LO4, false, true),
                owner(2, A, false, true),
                false,
                Err(NotAvailable),
            ),
            // Both REUSEADDR share, even a wildcard.
            (
                owner(1, A, true, true),
                owner(2, A, true, true),
                true,
                Ok(()),
            ),
            (
                owner(1, ANY4, true, true),
                owner(2, A, true, true),
                true,
                Ok(()),
            ),
            // One side only does not.
            (
                owner(1, A, true, true),
                owner(2, A, false, true),
                false,
                Err(InUse),
            ),
            (
                owner(1, A, false, true),
                owner(2, A, true, true),
                true,
                Err(InUse),
            ),
            // rdma_listen's check: the asker's REUSEADDR is not counted.
            (
                owner(1, A, true, true),
                owner(2, A, true, true),
                false,
                Err(InUse),
            ),
            // Families apart if both are AFONLY.
            (
                owner(1, ANY4, false, true),
                owner(2, ANY6, false, true),
                false,
                Ok(()),
            ),
            (
                owner(1, ANY4, false, true),
                owner(2, ANY6, false, false),
                false,
                Err(NotAvailable),
            ),
            // Specific addresses of two families differ.
            (
                owner(1, A, false, false),
                owner(2, A6, false, false),
                false,
                Ok(()),
            ),
            // An owner never conflicts with itself.
            (
                owner(1, A, false, true),
                owner(1, A, false, true),
                false,
                Ok(()),
            ),
        ];
        for (i, (held, asked, reuse, want)) in cases.iter().enumerate() {
            assert_eq!(check_port([held], asked, *reuse), *want, "case {i}");
        }
        // Listen-only owners leave each other to the listen table, and no one else.
        let listening = |id, src| PortOwner {
            listen_only: true,
            ..owner(id, src, false, false)
        };
        assert_eq!(
            check_port([&listening(1, ANY4)], &listening(2, A), false),
            Ok(())
        );
        assert_eq!(
            check_port([&listening(1, A)], &listening(2, A), false),
            Ok(())
        );
        assert_eq!(
            check_port([&listening(1, ANY4)], &owner(2, A, true, false), true),
            Err(NotAvailable)
        );
        assert_eq!(
            check_port([&owner(1, A, true, false)], &listening(2, A), false),
            Err(InUse)
        );
        assert_eq!(
            check_port([&owner(1, A, false, false)], &listening(2, ANY4), false),
            Err(NotAvailable)
        );
        // The first conflict decides.
        let held = [owner(1, A, false, true), owner(2, ANY4, false, true)];
        assert_eq!(
            check_port(&held, &owner(3, A, false, true), false),
            Err(InUse)
        );
    }

    /// cma_port_is_unique: (held, asked) → shares.
    #[test]
    fn is_unique_table() {
        let active = |id, src, dst, dst_port| PortOwner {
            id,
            src,
            dst,
            dst_port,
            ..Default::default()
        };
        let cases = [
            // Two passive wildcards: nothing tells them apart.
            (active(1, ANY4, ANY4, 0), active(2, ANY4, ANY4, 0), false),
            // Other destination ports.
            (active(1, ANY4, B, 80), active(2, ANY4, B, 81), true),
            // The same destination port and address, no source address.
            (active(1, ANY4, B, 80), active(2, ANY4, B, 80), false),
            // Other source addresses.
            (active(1, A, ANY4, 0), active(2, B, ANY4, 0), true),
            // Other destination addresses.
            (active(1, ANY4, A, 80), active(2, ANY4, B, 80), true),
            // An unknown destination port on one side: addresses decide.
            (active(1, ANY4, B, 0), active(2, ANY4, B, 80), false),
            // Itself.
            (active(1, A, B, 80), active(1, A, B, 80), true),
        ];
        for (i, (held, asked, want)) in cases.iter().enumerate() {
            assert_eq!(is_unique([held], asked), *want, "case {i}");
        }
    }

    #[test]
    fn candidates_walk_the_range_once() {
        let walk = |low, high, start, last| {
            let mut out = [0u16; 8];
            let mut n = 0;
            for p in candidates(low, high, start, last) {
                out[n] = p;
                n += 1;
            }
            (out, n)
        };
        assert_eq!(walk(10, 14, 12, 0), ([12, 13, 14, 10, 11, 0, 0, 0], 5));
        assert_eq!(walk(10, 14, 12, 13), ([12, 14, 10, 11, 0, 0, 0, 0], 4));
        assert_eq!(walk(10, 14, 99, 0), ([10, 11, 12, 13, 14, 0, 0, 0], 5));
        assert_eq!(walk(10, 10, 10, 0), ([10, 0, 0, 0, 0, 0, 0, 0], 1));
        assert_eq!(walk(10, 10, 10, 10), ([0; 8], 0));
        // Up to 65535 without overflow.
        assert_eq!(
            walk(65534, 65535, 65535, 0),
            ([65535, 65534, 0, 0, 0, 0, 0, 0], 2)
        );
    }
}
