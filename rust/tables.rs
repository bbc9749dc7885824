// SPDX-License-Identifier: GPL-2.0

//! The lookup tables of the CM: local comm ID → CEP, (remote comm ID, remote CA GUID) → CEP,
//! and the listeners.
//!
//! Lock order: a CEP's lock may be held while taking a table lock, never the reverse; lookups
//! clone the `Arc` and drop the table lock before locking the CEP. Each table has one spinlock
//! for now (see `docs/design.md`: sharding is the next step).

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

kernel::sync::global_lock! {
    // SAFETY: `Tables::new` initialises the lock in module init, before any user.
    unsafe(uninit) static LOCAL_IDS: SpinLock<Option<RBTree<u32, Arc<Cep>>>> = None;
}

kernel::sync::global_lock! {
    // SAFETY: `Tables::new` initialises the lock in module init, before any user.
    unsafe(uninit) static REMOTE_IDS: SpinLock<Option<RBTree<(u32, u64), Arc<Cep>>>> = None;
}

/// A listener: REQs whose service ID matches `service_id` under `mask` go to `cep`.
struct Listener {
    service_id: u64,
    mask: u64,
    cep: Arc<Cep>,
}

kernel::sync::global_lock! {
    // SAFETY: `Tables::new` initialises the lock in module init, before any user.
    unsafe(uninit) static LISTENERS: SpinLock<KVec<Listener>> = KVec::new();
}

/// Comm IDs on the wire are a counter XORed with this, like Linux's `random_id_operand`, so
/// that they are not predictable across boots.
static ID_OPERAND: Atomic<u32> = Atomic::new(0);
static NEXT_ID: Atomic<u32> = Atomic::new(0);

/// Ownership of the tables for the lifetime of the module.
pub(crate) struct Tables(());

impl Tables {
    /// Initialises the (empty) tables; once per module load, before any CEP exists.
    pub(crate) fn new() -> Self {
        // SAFETY: Module init calls this once, before anything can use the tables.
        unsafe {
            LOCAL_IDS.init();
            REMOTE_IDS.init();
            LISTENERS.init();
        }
        ID_OPERAND.store(shim::random_u32(), Relaxed);
        Self(())
    }
}

impl Drop for Tables {
    fn drop(&mut self) {
        // Timewait works still queued run module code: let them finish first.
        crate::cep::wait_for_timewaits();
        // Every CEP is destroyed by now (files closed, devices removed); free what is left.
        let listeners = core::mem::take(&mut *LISTENERS.lock());
        let locals = LOCAL_IDS.lock().take();
        let remotes = REMOTE_IDS.lock().take();
        let leftover = listeners.len()
            + locals.map_or(0, |t| t.iter().count())
            + remotes.map_or(0, |t| t.iter().count());
        if leftover != 0 {
            pr_err!("{} table entries left at unload\n", leftover);
        }
    }
}

/// Gives `cep` a fresh local comm ID and makes it findable by it.
///
/// `make` builds the CEP for the chosen ID.
pub(crate) fn insert_new_local(make: impl FnOnce(u32) -> Result<Arc<Cep>>) -> Result<Arc<Cep>> {
    let reservation = RBTreeNodeReservation::new(GFP_KERNEL)?;
    let operand = ID_OPERAND.load(Relaxed);
    let mut table = LOCAL_IDS.lock();
    let tree = table.get_or_insert_with(RBTree::new);
    // Cyclic allocation: the next free value after the last one handed out.
    let id = loop {
        let id = NEXT_ID.fetch_add(1, Relaxed) ^ operand;
        if id != 0 && tree.get(&id).is_none() {
            break id;
        }
    };
    drop(table);
    let cep = make(id)?;
    let mut table = LOCAL_IDS.lock();
    let tree = table.get_or_insert_with(RBTree::new);
    tree.insert(reservation.into_node(id, cep.clone()));
    Ok(cep)
}

/// The CEP with local comm ID `id`.
pub(crate) fn find_local(id: u32) -> Option<Arc<Cep>> {
    LOCAL_IDS.lock().as_ref()?.get(&id).cloned()
}

/// How many CEPs exist (each has a local comm ID from creation to destruction).
pub(crate) fn count_local() -> usize {
    LOCAL_IDS.lock().as_ref().map_or(0, |t| t.iter().count())
}

/// Every CEP that exists now.
pub(crate) fn all_ceps() -> Result<KVec<Arc<Cep>>> {
    // Allocate outside the lock; CEPs created meanwhile are not in the snapshot.
    let mut out = KVec::with_capacity(count_local(), GFP_KERNEL)?;
    let table = LOCAL_IDS.lock();
    if let Some(tree) = table.as_ref() {
        for (_, cep) in tree.iter().take(out.capacity()) {
            out.push(cep.clone(), GFP_ATOMIC)?;
        }
    }
    Ok(out)
}

/// Forgets local comm ID `id`.
pub(crate) fn remove_local(id: u32) {
    let removed = LOCAL_IDS.lock().as_mut().and_then(|t| t.remove(&id));
    drop(removed);
}

/// Makes `cep` findable by its peer's (comm ID, CA GUID). Returns the CEP already there, if any
/// (a duplicate REQ), instead of inserting.
pub(crate) fn insert_remote(
    key: (u32, u64),
    cep: &Arc<Cep>,
    reservation: RBTreeNodeReservation<(u32, u64), Arc<Cep>>,
) -> Option<Arc<Cep>> {
    let mut table = REMOTE_IDS.lock();
    let tree = table.get_or_insert_with(RBTree::new);
    if let Some(existing) = tree.get(&key) {
        return Some(existing.clone());
    }
    tree.insert(reservation.into_node(key, cep.clone()));
    None
}

/// The CEP connected to the peer (comm ID, CA GUID), if any.
pub(crate) fn find_remote(key: (u32, u64)) -> Option<Arc<Cep>> {
    REMOTE_IDS.lock().as_ref()?.get(&key).cloned()
}

/// Forgets the peer key `key` if it still maps to `cep`.
pub(crate) fn remove_remote(key: (u32, u64), cep: &Cep) {
    let mut table = REMOTE_IDS.lock();
    let Some(tree) = table.as_mut() else {
        return;
    };
    if tree.get(&key).is_some_and(|c| core::ptr::eq(&**c, cep)) {
        let removed = tree.remove(&key);
        drop(table);
        drop(removed);
    }
}

/// Adds a listener; `EBUSY` if the same service ID and mask are already listened on.
pub(crate) fn add_listener(service_id: u64, mask: u64, cep: Arc<Cep>) -> Result {
    let mut listeners = LISTENERS.lock();
    if listeners.iter().any(|l| l.mask == mask && l.service_id & mask == service_id & mask) {
        return Err(EBUSY);
    }
    listeners.push(Listener { service_id, mask, cep }, GFP_ATOMIC)?;
    Ok(())
}

/// The listener for `service_id`, the most specific mask first.
pub(crate) fn find_listener(service_id: u64) -> Option<Arc<Cep>> {
    let listeners = LISTENERS.lock();
    listeners
        .iter()
        .filter(|l| service_id & l.mask == l.service_id & l.mask)
        .max_by_key(|l| l.mask.count_ones())
        .map(|l| l.cep.clone())
}

/// Removes `cep` from the listeners.
pub(crate) fn remove_listener(cep: &Cep) {
    let removed = {
        let mut listeners = LISTENERS.lock();
        let found = listeners.iter().position(|l| core::ptr::eq(&*l.cep, cep));
        found.and_then(|i| listeners.remove(i).ok())
    };
    drop(removed);
}
