// SPDX-License-Identifier: GPL-2.0

//! The lookup tables of the CM: local comm ID → CEP, (remote comm ID, remote CA GUID) → CEP,
//! and the listeners.
//!
//! Every table is sharded: a lookup on the receive or connect path locks one shard of
//! [`SHARDS`], chosen by hashing its key, never a lock shared by all connections. Listeners
//! with an exact service ID are sharded by it; listeners with a partial mask sit in one list
//! that is only locked while such a listener exists.
//!
//! A shard lock comes after a CEP's in the lock order ([`crate::cep`]): lookups clone the `Arc`
//! and drop the shard lock before locking the CEP, and no code holds two shard locks at once.

use crate::{
    cep::Cep,
    proto::service_id::{
        ListenConflict,
        ServiceRange, //
    },
    sharded::{
        shard_of,
        Sharded,
        SHARDS, //
    },
    shim, //
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

/// A listener: REQs whose service ID is in `range` go to `cep`, of user `uid`.
struct Listener {
    range: ServiceRange,
    uid: Kuid,
    cep: Arc<Cep>,
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
    /// Listeners with an exact service ID, sharded by it.
    #[pin]
    listeners: Sharded<KVec<Listener>>,
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
            listeners <- Sharded::new(KVec::new),
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
        self.peer.with(
            shard_of(u64::from(id) ^ origin[0] ^ origin[1] ^ table as u64),
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

    /// Adds `cep`, of `owner`'s user, as a listener on `range`: `EBUSY` if the same range is
    /// listened on already, `EADDRINUSE` if it may not join another user's listener there
    /// (docs/abi.md, "Privileges and limits": a listen never takes REQs from another user's,
    /// and only `CAP_NET_ADMIN` covers one with a wider mask; `CEPM_IOC_LISTEN` refuses a
    /// masked listen without it before this, and the check here keeps the rule whole).
    ///
    /// No lock covers every listener. An exact listen checks its shard, then the masked ones
    /// if any exist; a masked listen counts itself in [`Tables::masked_count`] first, then
    /// checks every shard. An exact listen reads that count under its shard's lock, which the
    /// masked listen takes after counting itself, so of two racing listens one always sees the
    /// other.
    pub(crate) fn add_listener(
        &self,
        range: ServiceRange,
        owner: &Opener,
        cep: Arc<Cep>,
    ) -> Result {
        let refuse = |list: &KVec<Listener>| -> Result {
            for other in list.iter() {
                match range.conflict_with(&other.range) {
                    Some(ListenConflict::Same) => return Err(EBUSY),
                    None => {}
                    Some(_) if other.uid == owner.uid => {}
                    Some(ListenConflict::Covers) if owner.net_admin => {}
                    Some(ListenConflict::Covers | ListenConflict::TakesOver) => {
                        return Err(EADDRINUSE)
                    }
                }
            }
            Ok(())
        };
        let mut listener = Some(Listener {
            range,
            uid: owner.uid,
            cep,
        });
        let mut add = |list: &mut KVec<Listener>| -> Result {
            refuse(list)?;
            list.push(listener.take().ok_or(EINVAL)?, GFP_ATOMIC)?;
            Ok(())
        };
        if range.mask == u64::MAX {
            let shard = shard_of(range.id);
            let alone = self.listeners.with(shard, |list| {
                (self.masked_count.load(Relaxed) == 0).then(|| add(list))
            });
            if let Some(added) = alone {
                return added;
            }
            let masked = self.masked_listeners.lock();
            refuse(&masked)?;
            self.listeners.with(shard, add)
        } else {
            let mut masked = self.masked_listeners.lock();
            self.masked_count.fetch_add(1, Relaxed);
            let added = (0..SHARDS)
                .try_for_each(|i| self.listeners.with(i, |list| refuse(list)))
                .and_then(|()| add(&mut masked));
            if added.is_err() {
                self.masked_count.fetch_sub(1, Relaxed);
            }
            added
        }
    }

    /// The listener for `service_id`: an exact one first, else the masked one with the most
    /// specific mask.
    pub(crate) fn find_listener(&self, service_id: u64) -> Option<Arc<Cep>> {
        let exact = self.listeners.with(shard_of(service_id), |list| {
            list.iter()
                .find(|l| l.range.id == service_id)
                .map(|l| l.cep.clone())
        });
        if exact.is_some() || self.masked_count.load(Relaxed) == 0 {
            return exact;
        }
        let masked = self.masked_listeners.lock();
        masked
            .iter()
            .filter(|l| service_id & l.range.mask == l.range.id & l.range.mask)
            .max_by_key(|l| l.range.specificity())
            .map(|l| l.cep.clone())
    }

    /// Removes `cep` (listening on `range`) from the listeners.
    pub(crate) fn remove_listener(&self, cep: &Cep, range: ServiceRange) {
        let take = |list: &mut KVec<Listener>| {
            let found = list.iter().position(|l| core::ptr::eq(&*l.cep, cep));
            found.and_then(|i| list.remove(i).ok())
        };
        let removed = if range.mask == u64::MAX {
            self.listeners.with(shard_of(range.id), take)
        } else {
            let removed = take(&mut self.masked_listeners.lock());
            if removed.is_some() {
                self.masked_count.fetch_sub(1, Relaxed);
            }
            removed
        };
        drop(removed);
    }
}
