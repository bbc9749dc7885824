// SPDX-License-Identifier: GPL-2.0

//! The ports of rdma_cm's port spaces that CEPs hold (`CEPM_IOC_BIND`), as the kernel's rdma_cm
//! keeps its `rdma_bind_list`s (drivers/infiniband/core/cma.c): each port held has its owners,
//! and [`crate::proto::port_rules`] says who may join them.
//!
//! BIND, LISTEN and DESTROY run in process context, so one mutex guards the table, as cma.c's
//! `lock` does; it is never taken under a spinlock (a CEP's destroy releases its port after
//! its own lock).

use kernel::{
    new_mutex,
    prelude::*,
    rbtree::RBTree,
    sync::Mutex, //
};

use crate::{
    proto::{
        listen_scope::IpAddr,
        port_rules::{
            self,
            PortOwner,
            Refusal, //
        },
    },
    shim::{
        self,
        Net,
        NetId, //
    },
};

/// A port of a port space, in a network namespace: each namespace has its own ports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct PortKey {
    pub(crate) net: NetId,
    pub(crate) ps: u16,
    pub(crate) port: u16,
}

/// The fields of [`Ports`] under its mutex.
struct PortsInner {
    /// Each port held, with its owners (never empty).
    held: RBTree<PortKey, KVec<PortOwner>>,
    /// The port chosen for port 0 last, which the next choice skips (`cma_alloc_any_port`).
    last_used: u16,
}

/// The ports held, owned by the CM.
#[pin_data]
pub(crate) struct Ports {
    #[pin]
    inner: Mutex<PortsInner>,
}

fn errno(refusal: Refusal) -> Error {
    match refusal {
        Refusal::InUse => EADDRINUSE,
        Refusal::NotAvailable => EADDRNOTAVAIL,
    }
}

impl PortsInner {
    /// Makes `owner` an owner of `key`'s port: a new list if no one holds it. A CEP holds a
    /// port once (`EINVAL`): two BINDs of one CEP racing each other must not both join, since
    /// the loser's release would take the winner's entry with its own.
    fn join(&mut self, key: PortKey, owner: PortOwner) -> Result {
        if let Some(owners) = self.held.get_mut(&key) {
            if owners.iter().any(|o| o.id == owner.id) {
                return Err(EINVAL);
            }
            owners.push(owner, GFP_KERNEL)?;
            return Ok(());
        }
        let mut owners = KVec::with_capacity(1, GFP_KERNEL)?;
        owners.push(owner, GFP_KERNEL)?;
        self.held.try_create_and_insert(key, owners, GFP_KERNEL)?;
        Ok(())
    }

    fn owner_mut(&mut self, key: &PortKey, id: u32) -> Option<&mut PortOwner> {
        self.held.get_mut(key)?.iter_mut().find(|o| o.id == id)
    }
}

impl Ports {
    /// No port held.
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            inner <- new_mutex!(PortsInner { held: RBTree::new(), last_used: 0 }, "Ports::inner"),
        })
    }

    /// Makes `owner` an owner of port `port` of `ps` in namespace `ns`, by `cma_check_port`'s
    /// rules with its own REUSEADDR; port 0 chooses one of the namespace's
    /// `ip_local_port_range` by `cma_alloc_any_port`'s (`EADDRNOTAVAIL` if none is left).
    /// Returns the port held.
    pub(crate) fn bind(&self, ns: &Net, ps: u16, port: u16, owner: PortOwner) -> Result<u16> {
        let net = ns.id();
        let mut inner = self.inner.lock();
        if port != 0 {
            let key = PortKey { net, ps, port };
            if let Some(owners) = inner.held.get(&key) {
                port_rules::check_port(owners.iter(), &owner, owner.reuseaddr).map_err(errno)?;
            }
            inner.join(key, owner)?;
            return Ok(port);
        }
        let (low, high) = ns.local_port_range();
        let span = u32::from(high.saturating_sub(low)) + 1;
        let start = low.saturating_add((shim::random_u32() % span) as u16);
        let last_used = inner.last_used;
        for candidate in port_rules::candidates(low, high, start, last_used) {
            let key = PortKey {
                net,
                ps,
                port: candidate,
            };
            let free = inner
                .held
                .get(&key)
                .is_none_or(|owners| port_rules::is_unique(owners.iter(), &owner));
            if free {
                inner.join(key, owner)?;
                inner.last_used = candidate;
                return Ok(candidate);
            }
        }
        Err(EADDRNOTAVAIL)
    }

    /// Whether `id` holds `key` with the address `src` (and its family).
    pub(crate) fn holds_with(&self, key: &PortKey, id: u32, src: &IpAddr) -> bool {
        let mut inner = self.inner.lock();
        inner.owner_mut(key, id).is_some_and(|o| o.src == *src)
    }

    /// How `id` holds `key`, if it does.
    pub(crate) fn owner(&self, key: &PortKey, id: u32) -> Option<PortOwner> {
        self.inner.lock().owner_mut(key, id).copied()
    }

    /// `rdma_set_reuseaddr` on a bound ID: `id` shares `key` with owners that set it too.
    pub(crate) fn set_reuseaddr(&self, key: &PortKey, id: u32) -> Result {
        let mut inner = self.inner.lock();
        inner.owner_mut(key, id).ok_or(EINVAL)?.reuseaddr = true;
        Ok(())
    }

    /// `rdma_listen`'s check of a bound ID: if `id` holds `key` with REUSEADDR, its port must
    /// be its own without it (`EADDRINUSE`, `EADDRNOTAVAIL`), and it keeps the port alone from
    /// now on (its REUSEADDR goes).
    pub(crate) fn claim_for_listen(&self, key: &PortKey, id: u32) -> Result {
        let mut inner = self.inner.lock();
        let owners = inner.held.get_mut(key).ok_or(EINVAL)?;
        let me = *owners.iter().find(|o| o.id == id).ok_or(EINVAL)?;
        if me.reuseaddr {
            port_rules::check_port(owners.iter(), &me, false).map_err(errno)?;
            if let Some(o) = owners.iter_mut().find(|o| o.id == id) {
                o.reuseaddr = false;
            }
        }
        Ok(())
    }

    /// `id` no longer holds `key`; the port is free once no one does.
    pub(crate) fn release(&self, key: &PortKey, id: u32) {
        let mut inner = self.inner.lock();
        let Some(owners) = inner.held.get_mut(key) else {
            return;
        };
        owners.retain(|o| o.id != id);
        let empty = owners.is_empty();
        if empty {
            // Freed after the unlock: nothing frees under the lock that need not.
            let gone = inner.held.remove(key);
            drop(inner);
            drop(gone);
        }
    }

    /// How many ports are held (for the unload check).
    pub(crate) fn count(&self) -> usize {
        self.inner.lock().held.iter().count()
    }
}
