// SPDX-License-Identifier: GPL-2.0

//! The lookup tables of the CM: local comm ID → CEP, (remote comm ID, remote CA GUID) → CEP,
//! and the listeners.
//!
//! Every table is sharded: a lookup on the receive or connect path locks one shard of
//! [`SHARDS`], chosen by hashing its key, never a lock shared by all connections. Listeners
//! with an exact service ID are sharded by it, in a tree of groups by network namespace and
//! service ID, each group with its listeners scoped by address
//! ([`crate::proto::listen_scope`]); listeners with a partial mask sit in one list that is
//! only locked while such a listener exists. Listeners of different namespaces never meet.
//!
//! A shard lock comes after a CEP's in the lock order ([`crate::cep`]): lookups clone the `Arc`
//! and drop the shard lock before locking the CEP, and no code holds two shard locks at once.

use crate::{
    cep::Cep,
    proto::{
        listen_scope::{
            match_order,
            IpAddr,
            ListenScope,
            ScopeConflict,
            Slot, //
        },
        service_id::{
            ListenConflict,
            ServiceRange, //
        },
    },
    sharded::{
        Sharded,
        SHARDS, //
    },
    shim::{
        self,
        NetId, //
    },
    users::Opener,
};
use kernel::{
    alloc::Flags,
    new_spinlock,
    prelude::*,
    rbtree::{
        RBTree,
        RBTreeNodeReservation, //
    },
    sync::{
        atomic::{
            Atomic,
            Relaxed, //
        },
        Arc, SpinLock,
    },
    task::Kuid,
};

/// A listener: REQs whose service ID is in `range`, and whose address `scope` takes, arriving
/// on a GID of network namespace `cep.net`, go to `cep`, of user `uid`.
struct Listener {
    range: ServiceRange,
    scope: ListenScope,
    uid: Kuid,
    cep: Arc<Cep>,
}

/// The listeners of one exact service ID: one per address, per family's wildcard, and one
/// unscoped (the slots of [`ListenScope`]).
///
/// # Invariants
///
/// Never empty while in a table: the listen that empties it removes it.
struct ListenGroup {
    addrs: RBTree<IpAddr, Listener>,
    /// IPv4's wildcard, then IPv6's.
    wildcards: [Option<Listener>; 2],
    unscoped: Option<Listener>,
}

/// The exact listeners of a shard, by network namespace and service ID: each namespace has
/// its own.
type ListenTree = RBTree<(NetId, u64), ListenGroup>;

/// Room for an exact listen in the tables, allocated where sleeping is allowed, before any
/// lock is taken: its service ID's group, and its address's node.
pub(crate) struct ListenRoom {
    group: RBTreeNodeReservation<(NetId, u64), ListenGroup>,
    addr: RBTreeNodeReservation<IpAddr, Listener>,
}

impl ListenRoom {
    /// Room for one listen.
    pub(crate) fn new() -> Result<Self> {
        Ok(Self {
            group: RBTreeNodeReservation::new(GFP_KERNEL)?,
            addr: RBTreeNodeReservation::new(GFP_KERNEL)?,
        })
    }
}

/// Where a request's service ID and address lead ([`Tables::find_listener`]).
pub(crate) enum ListenerFor {
    /// To this listener.
    Found(Arc<Cep>),
    /// The service ID has listeners, none of them for the request's address.
    NoAddress,
    /// No one listens on the service ID.
    Unknown,
}

impl ListenGroup {
    fn new() -> Self {
        Self {
            addrs: RBTree::new(),
            wildcards: [None, None],
            unscoped: None,
        }
    }

    fn iter(&self) -> impl Iterator<Item = &Listener> {
        // `Iterator::chain` by name: pin-init's `Init` has a `chain` too.
        let scoped = Iterator::chain(self.addrs.values(), self.wildcards.iter().flatten());
        Iterator::chain(scoped, self.unscoped.iter())
    }

    fn is_empty(&self) -> bool {
        self.iter().next().is_none()
    }

    fn get(&self, slot: Slot) -> Option<&Listener> {
        match slot {
            Slot::Unscoped => self.unscoped.as_ref(),
            Slot::Wildcard(v6) => self.wildcards[usize::from(v6)].as_ref(),
            Slot::Addr(a) => self.addrs.get(&a),
        }
    }

    /// The listener a request for `dst` goes to, in [`match_order`].
    fn find(&self, dst: Option<IpAddr>) -> Option<&Listener> {
        match_order(dst).find_map(|(slot, dual_only)| {
            self.get(slot).filter(|l| {
                !dual_only || !matches!(l.scope, ListenScope::Wildcard { afonly: true, .. })
            })
        })
    }

    /// Puts `listener` in its slot, which is free; an address takes its node from `room`.
    fn put(&mut self, listener: Listener, room: RBTreeNodeReservation<IpAddr, Listener>) {
        match listener.scope.slot() {
            Slot::Unscoped => self.unscoped = Some(listener),
            Slot::Wildcard(v6) => self.wildcards[usize::from(v6)] = Some(listener),
            Slot::Addr(a) => drop(self.addrs.insert(room.into_node(a, listener))),
        }
    }

    /// Takes `cep` out of `slot`, if it is there.
    fn take(&mut self, slot: Slot, cep: &Cep) -> Option<Listener> {
        let is_cep = |l: &Listener| core::ptr::eq(&*l.cep, cep);
        let held = |o: &mut Option<Listener>| {
            if o.as_ref().is_some_and(is_cep) {
                o.take()
            } else {
                None
            }
        };
        match slot {
            Slot::Unscoped => held(&mut self.unscoped),
            Slot::Wildcard(v6) => held(&mut self.wildcards[usize::from(v6)]),
            Slot::Addr(a) if self.addrs.get(&a).is_some_and(is_cep) => self.addrs.remove(&a),
            Slot::Addr(_) => None,
        }
    }
}

/// The CM's lookup tables, owned by its [`crate::context::Cm`].
#[pin_data]
pub(crate) struct Tables {
    /// Local comm ID → CEP: every CEP, from creation to destruction.
    #[pin]
    local: Sharded<Option<RBTree<u32, Arc<Cep>>>>,
    /// The peer tables ([`PeerTable`]) share one index: its key names the table.
    #[pin]
    peer: Sharded<PeerTree>,
    /// Listeners with an exact service ID, sharded by it, in groups by network namespace and
    /// service ID.
    #[pin]
    listeners: Sharded<ListenTree>,
    /// Listeners with a partial mask: one list, only locked while such a listener exists. Its
    /// lock also orders the listens that must look at both kinds (see
    /// [`Tables::add_listener`]); it is taken before a shard's, never after.
    #[pin]
    masked_listeners: SpinLock<KVec<Listener>>,
    /// How many listeners have a partial mask, or are being added: while 0, REQs never lock
    /// their list, and an exact listen needs only its shard.
    masked_count: Atomic<u32>,
    /// Comm IDs on the wire are a counter XORed with this, like Linux's `random_id_operand`,
    /// so that they are not predictable across loads.
    id_operand: u32,
    next_id: Atomic<u32>,
}

impl Tables {
    /// Empty tables.
    pub(crate) fn new() -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            local <- Sharded::new(|| None),
            peer <- Sharded::new(|| None),
            listeners <- Sharded::new(RBTree::new),
            masked_listeners <- new_spinlock!(KVec::new(), "Tables::masked_listeners"),
            masked_count: Atomic::new(0),
            id_operand: shim::random_u32(),
            next_id: Atomic::new(0),
        }? Error)
    }
}

impl Tables {
    /// Gives a new CEP a fresh local comm ID and makes it findable by it; `make` builds the
    /// CEP for the chosen ID. Its table node is allocated with `gfp`: the CEP's own flags
    /// ([`Cep::insert_new`]).
    pub(crate) fn insert_new_local(
        &self,
        gfp: Flags,
        make: impl FnOnce(u32) -> Result<Arc<Cep>>,
    ) -> Result<Arc<Cep>> {
        let reservation = RBTreeNodeReservation::new(gfp)?;
        // Cyclic allocation: the next value of the counter, skipping IDs still in use (after
        // a wrap) and 0. Distinct counter values give distinct IDs, so no two callers pick
        // the same.
        let id = loop {
            let id = self.next_id.fetch_add(1, Relaxed) ^ self.id_operand;
            if id != 0
                && self.local.with(id as usize, |t| {
                    t.as_ref().is_none_or(|t| t.get(&id).is_none())
                })
            {
                break id;
            }
        };
        let cep = make(id)?;
        self.local.with(id as usize, |t| {
            t.get_or_insert_with(RBTree::new)
                .insert(reservation.into_node(id, cep.clone()))
        });
        Ok(cep)
    }

    /// The CEP with local comm ID `id`.
    pub(crate) fn find_local(&self, id: u32) -> Option<Arc<Cep>> {
        self.local
            .with(id as usize, |t| t.as_ref()?.get(&id).cloned())
    }

    /// How many CEPs exist (each has a local comm ID from creation to destruction).
    pub(crate) fn count_local(&self) -> usize {
        (0..SHARDS)
            .map(|i| {
                self.local
                    .with(i, |t| t.as_ref().map_or(0, |t| t.iter().count()))
            })
            .sum()
    }

    /// Every CEP that exists now (a snapshot: CEPs created or destroyed meanwhile may or may
    /// not be in it, but none that lives throughout is missing).
    pub(crate) fn all_ceps(&self) -> Result<KVVec<Arc<Cep>>> {
        let mut room = self.count_local();
        loop {
            // Sized outside the shard locks; if CEPs were created meanwhile and do not fit,
            // try again with more room rather than leave some out. Virtually contiguous if
            // need be: a busy host has more CEPs than one kmalloc holds.
            let mut out = KVVec::with_capacity(room + room / 4 + 8, GFP_KERNEL)?;
            let mut complete = true;
            for i in 0..SHARDS {
                self.local.with(i, |t| {
                    for (_, cep) in t.iter().flat_map(|t| t.iter()) {
                        if out.push_within_capacity(cep.clone()).is_err() {
                            complete = false;
                            break;
                        }
                    }
                });
                if !complete {
                    break;
                }
            }
            if complete {
                return Ok(out);
            }
            room = out.capacity().saturating_mul(2);
        }
    }

    /// Forgets local comm ID `id`.
    pub(crate) fn remove_local(&self, id: u32) {
        let removed = self
            .local
            .with(id as usize, |t| t.as_mut().and_then(|t| t.remove(&id)));
        drop(removed);
    }
}

/// The tables keyed by a peer: (comm ID, CA GUID) finds the CEP a duplicate REQ belongs
/// to; (QPN, CA GUID) finds a live connection a new one would make stale (`cm_match_req` in
/// drivers/infiniband/core/cm.c); (request ID, GID) finds the CEP a duplicate SIDR_REQ
/// belongs to (`cm_insert_remote_sidr`), apart from the REQs, whose IDs it may share.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum PeerTable {
    /// (remote comm ID, remote CA GUID).
    CommId,
    /// (remote QPN, remote CA GUID).
    Qpn,
    /// (SIDR request ID, the requester's GID: a SIDR_REQ has no CA GUID).
    SidrId,
}

/// An ID a peer chose (a comm ID, a QPN or a SIDR request ID), with the peer that chose it:
/// its CA GUID or, for a SIDR_REQ, which carries none, its whole GID. Half a GID would not
/// do: hosts on different subnets may share an interface ID (`::1`), and a hostile peer can
/// pick its address to share a victim's. (Linux's `cm_insert_remote_sidr` keys the
/// requester's LID, which RoCE does not have: there, the request ID alone.)
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct PeerId {
    id: u32,
    /// The CA GUID in the low word, or the GID's two halves, in network order.
    origin: [u64; 2],
}

impl PeerId {
    /// `id`, chosen by the CA with GUID `ca_guid`.
    pub(crate) fn by_guid(id: u32, ca_guid: u64) -> Self {
        Self {
            id,
            origin: [0, ca_guid],
        }
    }

    /// The SIDR request `request_id` from the port with GID `requester_gid`.
    pub(crate) fn by_gid(request_id: u32, requester_gid: &[u8; 16]) -> Self {
        let half = |h: &[u8]| {
            let mut word = [0u8; 8];
            word.copy_from_slice(h);
            u64::from_be_bytes(word)
        };
        Self {
            id: request_id,
            origin: [half(&requester_gid[..8]), half(&requester_gid[8..])],
        }
    }

    /// The ID the peer chose.
    pub(crate) fn id(&self) -> u32 {
        self.id
    }
}

/// A key of the peer index: the table, and the peer's ID in it.
type PeerKey = (PeerTable, PeerId);
type PeerTree = Option<RBTree<PeerKey, Arc<Cep>>>;

/// Room for one entry of a peer table, taken where allocating is allowed.
pub(crate) type PeerReservation = RBTreeNodeReservation<PeerKey, Arc<Cep>>;

impl Tables {
    /// Runs `f` on the shard of the index that holds `key`, under its lock.
    fn with_peer<R>(&self, key: PeerKey, f: impl FnOnce(&mut PeerTree) -> R) -> R {
        let (table, PeerId { id, origin }) = key;
        self.peer.with_key3(
            [u64::from(id) | (table as u64) << 32, origin[0], origin[1]],
            f,
        )
    }

    /// Makes `cep` findable in `table` by `key`. Returns the CEP already there, if any (a
    /// duplicate REQ, or a stale connection), instead of inserting.
    pub(crate) fn insert_peer(
        &self,
        table: PeerTable,
        key: PeerId,
        cep: &Arc<Cep>,
        reservation: PeerReservation,
    ) -> Option<Arc<Cep>> {
        let key = (table, key);
        self.with_peer(key, |t| {
            let tree = t.get_or_insert_with(RBTree::new);
            if let Some(existing) = tree.get(&key) {
                return Some(existing.clone());
            }
            tree.insert(reservation.into_node(key, cep.clone()));
            None
        })
    }

    /// The CEP `table` has for `key`, if any.
    pub(crate) fn find_peer(&self, table: PeerTable, key: PeerId) -> Option<Arc<Cep>> {
        let key = (table, key);
        self.with_peer(key, |t| t.as_ref()?.get(&key).cloned())
    }

    /// Forgets `key` in `table` if it still maps to `cep`.
    pub(crate) fn remove_peer(&self, table: PeerTable, key: PeerId, cep: &Cep) {
        let key = (table, key);
        let removed = self.with_peer(key, |t| {
            let tree = t.as_mut()?;
            if tree.get(&key).is_some_and(|c| core::ptr::eq(&**c, cep)) {
                tree.remove(&key)
            } else {
                None
            }
        });
        drop(removed);
    }

    /// Writes how many (namespace, service ID) pairs have exact listeners in each shard of the
    /// listener table into `counts`, one per shard (debugfs `listen_shards`); the rest of
    /// `counts` gets 0.
    pub(crate) fn listen_shard_counts(&self, counts: &mut [u32]) {
        for (i, count) in counts.iter_mut().enumerate() {
            *count = if i < SHARDS {
                self.listeners
                    .with(i, |t| u32::try_from(t.iter().count()).unwrap_or(u32::MAX))
            } else {
                0
            };
        }
    }

    /// Adds `cep`, of `owner`'s user, as a listener on `range` for the requests `scope` takes
    /// in the CEP's network namespace (an exact listen takes its node from `room`): `EBUSY` if
    /// another listener of that namespace holds its slot already (the same range, and for an
    /// exact one the same scope), `EADDRINUSE` if it
    /// may not join another user's listener there (docs/abi.md, "Privileges and limits": a
    /// listen never takes REQs from another user's, and only `CAP_NET_ADMIN` covers one with
    /// a wider mask; `CEPM_IOC_LISTEN` refuses a masked listen without it before this, and
    /// the check here keeps the rule whole).
    ///
    /// No lock covers every listener. An exact listen checks its shard, then the masked ones
    /// if any exist; a masked listen counts itself in [`Tables::masked_count`] first, then
    /// checks every shard. An exact listen reads that count under its shard's lock, which the
    /// masked listen takes after counting itself, so of two racing listens one always sees the
    /// other.
    pub(crate) fn add_listener(
        &self,
        (range, scope): (ServiceRange, ListenScope),
        owner: &Opener,
        cep: Arc<Cep>,
        room: Option<ListenRoom>,
    ) -> Result {
        let net = cep.net;
        // Between listeners of different masks: the rules of `ServiceRange`. Listeners of
        // different namespaces never meet.
        let refuse = |other: &Listener| -> Result {
            if other.cep.net != net {
                return Ok(());
            }
            match range.conflict_with(&other.range) {
                Some(ListenConflict::Same) => Err(EBUSY),
                None => Ok(()),
                Some(_) if other.uid == owner.uid => Ok(()),
                Some(ListenConflict::Covers) if owner.net_admin => Ok(()),
                Some(ListenConflict::Covers | ListenConflict::TakesOver) => Err(EADDRINUSE),
            }
        };
        let mut listener = Some(Listener {
            range,
            scope,
            uid: owner.uid,
            cep,
        });
        if range.mask == u64::MAX {
            let mut room = room;
            let mut join = |t: &mut ListenTree| -> Result {
                let (listener, room) = listener.take().zip(room.take()).ok_or(EINVAL)?;
                join_group(t, listener, room, owner)
            };
            let shard = self.listeners.shard_of(range.id);
            let alone = self.listeners.with(shard, |t| {
                (self.masked_count.load(Relaxed) == 0).then(|| join(t))
            });
            if let Some(added) = alone {
                return added;
            }
            let masked = self.masked_listeners.lock();
            masked.iter().try_for_each(refuse)?;
            self.listeners.with(shard, join)
        } else {
            let mut masked = self.masked_listeners.lock();
            self.masked_count.fetch_add(1, Relaxed);
            let added = (0..SHARDS)
                .try_for_each(|i| {
                    self.listeners.with(i, |t| {
                        for group in t.values() {
                            for other in group.iter() {
                                refuse(other)?;
                            }
                        }
                        Ok(())
                    })
                })
                .and_then(|()| masked.iter().try_for_each(refuse))
                .and_then(|()| {
                    masked.push(listener.take().ok_or(EINVAL)?, GFP_ATOMIC)?;
                    Ok(())
                });
            if added.is_err() {
                self.masked_count.fetch_sub(1, Relaxed);
            }
            added
        }
    }

    /// The listener of network namespace `net` for a request for `service_id` and address
    /// `dst` (see [`crate::proto::listen_scope`]): the exact listeners' in their matching
    /// order, else the masked one with the most specific mask.
    pub(crate) fn find_listener(
        &self,
        net: NetId,
        service_id: u64,
        dst: Option<IpAddr>,
    ) -> ListenerFor {
        let exact = self.listeners.with_key(service_id, |t| {
            t.get(&(net, service_id))
                .map(|g| g.find(dst).map(|l| l.cep.clone()))
        });
        let unmatched = match exact {
            Some(Some(cep)) => return ListenerFor::Found(cep),
            Some(None) => ListenerFor::NoAddress,
            None => ListenerFor::Unknown,
        };
        if self.masked_count.load(Relaxed) == 0 {
            return unmatched;
        }
        let masked = self.masked_listeners.lock();
        masked
            .iter()
            .filter(|l| l.cep.net == net && service_id & l.range.mask == l.range.id & l.range.mask)
            .max_by_key(|l| l.range.specificity())
            .map_or(unmatched, |l| ListenerFor::Found(l.cep.clone()))
    }

    /// Removes `cep` (listening on `range`, for `scope`) from the listeners.
    pub(crate) fn remove_listener(&self, cep: &Cep, (range, scope): (ServiceRange, ListenScope)) {
        if range.mask == u64::MAX {
            // Freed once the shard lock is let go, as the group it may have emptied.
            let key = (cep.net, range.id);
            let removed = self.listeners.with_key(range.id, |t| {
                let group = t.get_mut(&key)?;
                let listener = group.take(scope.slot(), cep)?;
                let emptied = if group.is_empty() {
                    t.remove(&key)
                } else {
                    None
                };
                Some((listener, emptied))
            });
            drop(removed);
        } else {
            let removed = {
                let mut masked = self.masked_listeners.lock();
                let found = masked.iter().position(|l| core::ptr::eq(&*l.cep, cep));
                found.and_then(|i| masked.remove(i).ok())
            };
            if removed.is_some() {
                self.masked_count.fetch_sub(1, Relaxed);
            }
            drop(removed);
        }
    }
}

/// Adds `listener` to its service ID's group in `t` (made from `room` if it is the first), if
/// the group's listeners allow it: `EBUSY` for a taken slot, `EADDRINUSE` if it would take
/// requests from another user's listener ([`ListenScope::conflict_with`]).
fn join_group(t: &mut ListenTree, listener: Listener, room: ListenRoom, owner: &Opener) -> Result {
    let id = (listener.cep.net, listener.range.id);
    match t.get(&id) {
        Some(group) => {
            for other in group.iter() {
                match listener.scope.conflict_with(&other.scope) {
                    Some(ScopeConflict::Same) => return Err(EBUSY),
                    None => {}
                    Some(ScopeConflict::TakesOver) if other.uid == owner.uid => {}
                    Some(ScopeConflict::TakesOver) => return Err(EADDRINUSE),
                }
            }
        }
        None => drop(t.insert(room.group.into_node(id, ListenGroup::new()))),
    }
    t.get_mut(&id).ok_or(EINVAL)?.put(listener, room.addr);
    Ok(())
}
