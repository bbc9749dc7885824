// SPDX-License-Identifier: GPL-2.0

//! The lookup tables of the CM: local comm ID → CEP, (remote comm ID, remote CA GUID) → CEP,
//! and the listeners.
//!
//! Every table is sharded: a lookup on the receive or connect path locks one shard of
//! [`SHARDS`], chosen by hashing its key, never a lock shared by all connections. Listeners
//! with an exact service ID are sharded by it; listeners with a partial mask sit in one list
//! that is only locked while such a listener exists.
//!
//! Lock order: a CEP's lock may be held while taking a shard lock, never the reverse; lookups
//! clone the `Arc` and drop the shard lock before locking the CEP. No code holds two shard
//! locks at once.

use kernel::{
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
        Arc,
    },
};

use crate::{
    cep::Cep,
    shim, //
};

/// Shards per table.
pub(crate) const SHARDS: usize = 16;

/// Declares `SHARDS` global spinlocks holding `$ty` and a function that runs a closure on
/// shard `i` of them under its lock.
macro_rules! sharded {
    ($with:ident, $init:ident, $ty:ty, $empty:expr, [$($n:literal => $shard:ident),+ $(,)?]) => {
        $(
            kernel::sync::global_lock! {
                // SAFETY: `Tables::new` calls the init function in module init, before any user.
                unsafe(uninit) static $shard: SpinLock<$ty> = $empty;
            }
        )+

        /// Runs `f` on shard `i % SHARDS` under its lock.
        fn $with<R>(i: usize, f: impl FnOnce(&mut $ty) -> R) -> R {
            match i % SHARDS {
                $($n => f(&mut $shard.lock()),)+
                _ => unreachable!(),
            }
        }

        /// Initialises every shard's lock.
        ///
        /// # Safety
        ///
        /// Called once per module load, before any other use.
        unsafe fn $init() {
            // SAFETY: The function's safety requirements are `init`'s.
            unsafe { $($shard.init();)+ }
        }
    };
}

sharded!(with_local, init_local, Option<RBTree<u32, Arc<Cep>>>, None, [
    0 => LOCAL_0, 1 => LOCAL_1, 2 => LOCAL_2, 3 => LOCAL_3, 4 => LOCAL_4, 5 => LOCAL_5,
    6 => LOCAL_6, 7 => LOCAL_7, 8 => LOCAL_8, 9 => LOCAL_9, 10 => LOCAL_10, 11 => LOCAL_11,
    12 => LOCAL_12, 13 => LOCAL_13, 14 => LOCAL_14, 15 => LOCAL_15,
]);

// The peer tables ([`PeerTable`]) share one sharded index: its key names the table.
sharded!(with_remote, init_remote, PeerTree, None, [
    0 => REMOTE_0, 1 => REMOTE_1, 2 => REMOTE_2, 3 => REMOTE_3, 4 => REMOTE_4, 5 => REMOTE_5,
    6 => REMOTE_6, 7 => REMOTE_7, 8 => REMOTE_8, 9 => REMOTE_9, 10 => REMOTE_10, 11 => REMOTE_11,
    12 => REMOTE_12, 13 => REMOTE_13, 14 => REMOTE_14, 15 => REMOTE_15,
]);

/// A listener: REQs whose service ID matches `service_id` under `mask` go to `cep`.
struct Listener {
    service_id: u64,
    mask: u64,
    cep: Arc<Cep>,
}

sharded!(with_listeners, init_listeners, KVec<Listener>, KVec::new(), [
    0 => LISTEN_0, 1 => LISTEN_1, 2 => LISTEN_2, 3 => LISTEN_3, 4 => LISTEN_4, 5 => LISTEN_5,
    6 => LISTEN_6, 7 => LISTEN_7, 8 => LISTEN_8, 9 => LISTEN_9, 10 => LISTEN_10, 11 => LISTEN_11,
    12 => LISTEN_12, 13 => LISTEN_13, 14 => LISTEN_14, 15 => LISTEN_15,
]);

kernel::sync::global_lock! {
    // SAFETY: `Tables::new` initialises the lock in module init, before any user.
    unsafe(uninit) static MASKED_LISTENERS: SpinLock<KVec<Listener>> = KVec::new();
}

/// How many listeners have a partial mask: while 0, REQs never lock their list.
static MASKED_COUNT: Atomic<u32> = Atomic::new(0);

/// Comm IDs on the wire are a counter XORed with this, like Linux's `random_id_operand`, so
/// that they are not predictable across boots.
static ID_OPERAND: Atomic<u32> = Atomic::new(0);
static NEXT_ID: Atomic<u32> = Atomic::new(0);

/// The shard of a 64-bit key (service IDs, peer keys): fold all its bits.
fn shard_of(key: u64) -> usize {
    let folded = key ^ (key >> 32);
    let folded = folded ^ (folded >> 16);
    (folded ^ (folded >> 8)) as usize
}

/// Ownership of the tables for the lifetime of the module.
pub(crate) struct Tables(());

impl Tables {
    /// Initialises the (empty) tables; once per module load, before any CEP exists.
    pub(crate) fn new() -> Self {
        // SAFETY: Module init calls this once, before anything can use the tables.
        unsafe {
            init_local();
            init_remote();
            init_listeners();
            MASKED_LISTENERS.init();
        }
        ID_OPERAND.store(shim::random_u32(), Relaxed);
        Self(())
    }
}

impl Drop for Tables {
    fn drop(&mut self) {
        // No timewait work is left: each CEP's destroy cancelled or waited out its own.
        // Every CEP is destroyed by now (files closed, devices removed); free what is left.
        let mut leftover = 0;
        for i in 0..SHARDS {
            leftover += with_local(i, |t| t.take().map_or(0, |t| t.iter().count()));
            leftover += with_remote(i, |t| t.take().map_or(0, |t| t.iter().count()));
            leftover += with_listeners(i, |l| core::mem::take(l).len());
        }
        leftover += core::mem::take(&mut *MASKED_LISTENERS.lock()).len();
        if leftover != 0 {
            pr_err!("{} table entries left at unload\n", leftover);
        }
    }
}

/// Gives a new CEP a fresh local comm ID and makes it findable by it; `make` builds the CEP
/// for the chosen ID.
pub(crate) fn insert_new_local(make: impl FnOnce(u32) -> Result<Arc<Cep>>) -> Result<Arc<Cep>> {
    let reservation = RBTreeNodeReservation::new(GFP_KERNEL)?;
    let operand = ID_OPERAND.load(Relaxed);
    // Cyclic allocation: the next value of the counter, skipping IDs still in use (after a
    // wrap) and 0. Distinct counter values give distinct IDs, so no two callers pick the same.
    let id = loop {
        let id = NEXT_ID.fetch_add(1, Relaxed) ^ operand;
        if id != 0
            && with_local(id as usize, |t| {
                t.as_ref().is_none_or(|t| t.get(&id).is_none())
            })
        {
            break id;
        }
    };
    let cep = make(id)?;
    with_local(id as usize, |t| {
        t.get_or_insert_with(RBTree::new)
            .insert(reservation.into_node(id, cep.clone()))
    });
    Ok(cep)
}

/// The CEP with local comm ID `id`.
pub(crate) fn find_local(id: u32) -> Option<Arc<Cep>> {
    with_local(id as usize, |t| t.as_ref()?.get(&id).cloned())
}

/// How many CEPs exist (each has a local comm ID from creation to destruction).
pub(crate) fn count_local() -> usize {
    (0..SHARDS)
        .map(|i| with_local(i, |t| t.as_ref().map_or(0, |t| t.iter().count())))
        .sum()
}

/// Every CEP that exists now (a snapshot: CEPs created or destroyed meanwhile may or may not
/// be in it, but none that lives throughout is missing).
pub(crate) fn all_ceps() -> Result<KVec<Arc<Cep>>> {
    let mut room = count_local();
    loop {
        // Sized outside the shard locks; if CEPs were created meanwhile and do not fit, try
        // again with more room rather than leave some out.
        let mut out = KVec::with_capacity(room + room / 4 + 8, GFP_KERNEL)?;
        let mut complete = true;
        for i in 0..SHARDS {
            with_local(i, |t| {
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
pub(crate) fn remove_local(id: u32) {
    let removed = with_local(id as usize, |t| t.as_mut().and_then(|t| t.remove(&id)));
    drop(removed);
}

/// The tables keyed by a peer: (comm ID, CA GUID) finds the CEP a duplicate REQ belongs
/// to; (QPN, CA GUID) finds a live connection a new one would make stale (`cm_match_req` in
/// drivers/infiniband/core/cm.c); (request ID, GUID) finds the CEP a duplicate SIDR_REQ
/// belongs to (`cm_insert_remote_sidr`), apart from the REQs, whose IDs it may share.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum PeerTable {
    /// (remote comm ID, remote CA GUID).
    CommId,
    /// (remote QPN, remote CA GUID).
    Qpn,
    /// (SIDR request ID, the low half of the requester's GID: a SIDR_REQ has no CA GUID).
    SidrId,
}

/// The key of a SIDR_REQ with ID `request_id` from the port with GID `requester_gid`: a
/// SIDR_REQ has no CA GUID, so the interface-ID half of the requester's GID stands in.
pub(crate) fn sidr_key(request_id: u32, requester_gid: &[u8; 16]) -> (u32, u64) {
    let mut guid = [0u8; 8];
    guid.copy_from_slice(&requester_gid[8..]);
    (request_id, u64::from_be_bytes(guid))
}

/// A key of the peer index: the table, and the peer's (ID, GUID) in it.
type PeerKey = (PeerTable, (u32, u64));
type PeerTree = Option<RBTree<PeerKey, Arc<Cep>>>;

/// Room for one entry of a peer table, taken where allocating is allowed.
pub(crate) type PeerReservation = RBTreeNodeReservation<PeerKey, Arc<Cep>>;

/// Runs `f` on the shard of the index that holds `key`, under its lock.
fn with_peer<R>(key: PeerKey, f: impl FnOnce(&mut PeerTree) -> R) -> R {
    let (table, (id, guid)) = key;
    with_remote(shard_of(u64::from(id) ^ guid ^ table as u64), f)
}

/// Makes `cep` findable in `table` by `key`. Returns the CEP already there, if any (a
/// duplicate REQ, or a stale connection), instead of inserting.
pub(crate) fn insert_peer(
    table: PeerTable,
    key: (u32, u64),
    cep: &Arc<Cep>,
    reservation: PeerReservation,
) -> Option<Arc<Cep>> {
    let key = (table, key);
    with_peer(key, |t| {
        let tree = t.get_or_insert_with(RBTree::new);
        if let Some(existing) = tree.get(&key) {
            return Some(existing.clone());
        }
        tree.insert(reservation.into_node(key, cep.clone()));
        None
    })
}

/// The CEP `table` has for `key`, if any.
pub(crate) fn find_peer(table: PeerTable, key: (u32, u64)) -> Option<Arc<Cep>> {
    let key = (table, key);
    with_peer(key, |t| t.as_ref()?.get(&key).cloned())
}

/// Forgets `key` in `table` if it still maps to `cep`.
pub(crate) fn remove_peer(table: PeerTable, key: (u32, u64), cep: &Cep) {
    let key = (table, key);
    let removed = with_peer(key, |t| {
        let tree = t.as_mut()?;
        if tree.get(&key).is_some_and(|c| core::ptr::eq(&**c, cep)) {
            tree.remove(&key)
        } else {
            None
        }
    });
    drop(removed);
}

/// Adds a listener; `EBUSY` if the same service ID and mask are already listened on.
pub(crate) fn add_listener(service_id: u64, mask: u64, cep: Arc<Cep>) -> Result {
    let listener = Listener {
        service_id,
        mask,
        cep,
    };
    let add = |list: &mut KVec<Listener>| {
        if list
            .iter()
            .any(|l| l.mask == mask && l.service_id & mask == service_id & mask)
        {
            return Err(EBUSY);
        }
        list.push(listener, GFP_ATOMIC)?;
        Ok(())
    };
    if mask == u64::MAX {
        with_listeners(shard_of(service_id), add)
    } else {
        add(&mut MASKED_LISTENERS.lock())?;
        MASKED_COUNT.fetch_add(1, Relaxed);
        Ok(())
    }
}

/// The listener for `service_id`: an exact one first, else the masked one with the most
/// specific mask.
pub(crate) fn find_listener(service_id: u64) -> Option<Arc<Cep>> {
    let exact = with_listeners(shard_of(service_id), |list| {
        list.iter()
            .find(|l| l.service_id == service_id)
            .map(|l| l.cep.clone())
    });
    if exact.is_some() || MASKED_COUNT.load(Relaxed) == 0 {
        return exact;
    }
    let masked = MASKED_LISTENERS.lock();
    masked
        .iter()
        .filter(|l| service_id & l.mask == l.service_id & l.mask)
        .max_by_key(|l| l.mask.count_ones())
        .map(|l| l.cep.clone())
}

/// Removes `cep` (listening on `service_id` under `mask`) from the listeners.
pub(crate) fn remove_listener(cep: &Cep, service_id: u64, mask: u64) {
    let take = |list: &mut KVec<Listener>| {
        let found = list.iter().position(|l| core::ptr::eq(&*l.cep, cep));
        found.and_then(|i| list.remove(i).ok())
    };
    let removed = if mask == u64::MAX {
        with_listeners(shard_of(service_id), take)
    } else {
        let removed = take(&mut MASKED_LISTENERS.lock());
        if removed.is_some() {
            MASKED_COUNT.fetch_sub(1, Relaxed);
        }
        removed
    };
    drop(removed);
}
