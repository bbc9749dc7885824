//! The IDs and event channels the library has made and not yet released, by address: a call
//! given any other pointer fails with `EINVAL` instead of reading through it.
//!
//! librdmacm reads through whatever pointer it is given, and C applications do pass stale
//! ones: perftest 4.5-0.17 (Debian 12's), when a connection is rejected, retries with an ID
//! pointer read from an array it has freed, and destroys its event channel twice
//! (docs/rdmacm.md). Both crashed the application; here they are errors it can report.
//!
//! The check costs one lock of one of [`SHARDS`] shards, chosen by address, so that calls on
//! different objects seldom meet on a lock. A call on an event channel holds it ([`Call`]): a
//! thread waiting in `rdma_get_cm_event` when another destroys the channel keeps a channel to
//! wait in, as it keeps its file over rdma-core's. The check cannot tell a freed object from a
//! new one made at the same address, which librdmacm's contract still forbids.

use core::{marker::PhantomData, ops::Deref};
use std::{
    collections::{BTreeMap, VecDeque},
    sync::{Mutex, MutexGuard},
};

use crate::{channel::Channel, id::Id};

/// How many locks share the addresses: a power of two, as [`Live::shard`] picks one by the
/// top bits of a hash.
const SHARDS: usize = 16;
const _: () = assert!(SHARDS.is_power_of_two() && SHARDS > 1);

/// What a shard knows of an object.
#[derive(Default)]
struct Entry {
    /// Calls in progress on it ([`Live::enter`]).
    calls: usize,
    /// Released while calls were in progress: the last of them frees it.
    released: bool,
}

/// A set of live objects of type `T` by address, the calls in progress on each, and the last
/// few objects that went. The objects are shared between the application's threads as
/// librdmacm's are, each with its own locks, and not checked `Sync` (their events and ID maps
/// hold raw pointers): a [`Call`] stays on its thread.
///
/// # Invariants
///
/// An address in a shard is that of a `T` that came from `Box::into_raw` (or is still in its
/// `Box`, being made or dropped), and is allocated while its entry is there.
pub(crate) struct Live<T> {
    shards: [Mutex<BTreeMap<usize, Entry>>; SHARDS],
    gone: Mutex<VecDeque<usize>>,
    _objects: PhantomData<fn(T)>,
}

/// How many of the released addresses [`Live::went`] remembers.
const GONE: usize = 64;

/// The IDs: each [`Id`] from its making to its drop.
pub(crate) static IDS: Live<Id> = Live::new();

/// The event channels: each [`Channel`] from its opening until it is released and no call is
/// left in it.
pub(crate) static CHANNELS: Live<Channel> = Live::new();

impl<T: 'static> Live<T> {
    const fn new() -> Self {
        Self {
            shards: [const { Mutex::new(BTreeMap::new()) }; SHARDS],
            gone: Mutex::new(VecDeque::new()),
            _objects: PhantomData,
        }
    }

    fn shard(&self, addr: usize) -> MutexGuard<'_, BTreeMap<usize, Entry>> {
        // Heap addresses are 16-byte aligned: the bits above those, mixed (Fibonacci hashing),
        // pick the shard.
        let mixed = ((addr >> 4) as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let index = (mixed >> (u64::BITS - SHARDS.trailing_zeros())) as usize;
        self.shards[index].lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records the object at `p`, in its `Box` or just out of it, as live.
    pub(crate) fn insert(&self, p: *const T) {
        self.shard(p as usize).insert(p as usize, Entry::default());
    }

    /// The object at `p` is being dropped: forgets it, if it is still known.
    pub(crate) fn remove(&self, p: *const T) {
        self.shard(p as usize).remove(&(p as usize));
    }

    /// Whether `p` is a live object's address, not yet released.
    pub(crate) fn contains(&self, p: *const T) -> bool {
        !p.is_null()
            && self
                .shard(p as usize)
                .get(&(p as usize))
                .is_some_and(|e| !e.released)
    }

    /// A call on the live object at `p`: it stays allocated until the [`Call`] drops, even if
    /// it is released meanwhile. `None` if `p` is no live object, or one released.
    pub(crate) fn enter(&'static self, p: *const T) -> Option<Call<T>> {
        if p.is_null() {
            return None;
        }
        let mut shard = self.shard(p as usize);
        let entry = shard.get_mut(&(p as usize)).filter(|e| !e.released)?;
        entry.calls += 1;
        Some(Call {
            live: self,
            object: p,
        })
    }

    /// Releases the object at `p`: frees it now, or, with calls in progress on it, when the
    /// last of them returns. [`Live::went`] remembers it. `Err` if `p` is no live object (or
    /// one released already), which is left alone.
    ///
    /// # Safety
    ///
    /// No pointer to the object is used afterwards except through [`Call`]s made before.
    pub(crate) unsafe fn release(&self, p: *mut T) -> Result<(), ()> {
        let mut shard = self.shard(p as usize);
        let entry = shard
            .get_mut(&(p as usize))
            .filter(|e| !e.released)
            .ok_or(())?;
        let free_now = entry.calls == 0;
        if free_now {
            shard.remove(&(p as usize));
        } else {
            entry.released = true;
        }
        // Before the shard's lock goes: a call that finds the object gone finds it here.
        self.remember(p as usize);
        drop(shard);
        if free_now {
            // SAFETY: From Box::into_raw (the type's invariant), out of the set, no call in
            // progress, and the caller uses it no more.
            drop(unsafe { Box::from_raw(p) });
        }
        Ok(())
    }

    fn remember(&self, addr: usize) {
        let mut gone = self.gone.lock().unwrap_or_else(|e| e.into_inner());
        if gone.len() == GONE {
            gone.pop_front();
        }
        gone.push_back(addr);
    }

    /// Whether `p` is not live but was one of the last [`GONE`] objects released.
    pub(crate) fn went(&self, p: *const T) -> bool {
        !self.contains(p)
            && self
                .gone
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .contains(&(p as usize))
    }
}

/// A call in progress on a live object (see [`Live::enter`]): the object is allocated as long
/// as this is.
pub(crate) struct Call<T: 'static> {
    live: &'static Live<T>,
    object: *const T,
}

impl<T: 'static> Deref for Call<T> {
    type Target = T;

    fn deref(&self) -> &T {
        // SAFETY: Allocated while this call is in progress (Live::release waits for it).
        unsafe { &*self.object }
    }
}

impl<T: 'static> Drop for Call<T> {
    fn drop(&mut self) {
        let addr = self.object as usize;
        let mut shard = self.live.shard(addr);
        let Some(entry) = shard.get_mut(&addr) else {
            return;
        };
        entry.calls -= 1;
        if entry.released && entry.calls == 0 {
            shard.remove(&addr);
            drop(shard);
            // SAFETY: Released while this call was in progress, the last: ours to free. From
            // Box::into_raw (the type's invariant), and out of the set.
            drop(unsafe { Box::from_raw(self.object.cast_mut()) });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// An object that counts its drops in a counter of its test's own.
    struct Counted([u64; 4], &'static AtomicUsize);

    impl Drop for Counted {
        fn drop(&mut self) {
            self.1.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn new_live<T: 'static>() -> &'static Live<T> {
        Box::leak(Box::new(Live::new()))
    }

    #[test]
    fn an_address_is_live_from_insert_to_release() {
        let live = new_live::<[u64; 4]>();
        let objects: Vec<*mut [u64; 4]> =
            (0..1000).map(|i| Box::into_raw(Box::new([i; 4]))).collect();
        for &o in &objects {
            assert!(!live.contains(o));
            live.insert(o);
        }
        for (i, &o) in objects.iter().enumerate() {
            assert!(live.contains(o));
            if i % 2 == 0 {
                // SAFETY: Ours, from Box::into_raw, not used afterwards.
                assert_eq!(unsafe { live.release(o) }, Ok(()));
            }
        }
        for (i, &o) in objects.iter().enumerate() {
            assert_eq!(live.contains(o), i % 2 == 1);
            assert_eq!(live.enter(o).is_some(), i % 2 == 1);
            // An address inside a live object is not the object.
            assert!(!live.contains(o.cast::<u64>().wrapping_add(1).cast()));
        }
        assert!(!live.contains(core::ptr::null()));
        assert!(live.enter(core::ptr::null()).is_none());
        // The last GONE released are remembered, the live ones and the older ones are not.
        assert!(live.went(objects[998]));
        assert!(!live.went(objects[999]));
        assert!(!live.went(objects[0]));
        // A second release of one released is refused, and frees nothing.
        // SAFETY: Refused: nothing is freed.
        assert_eq!(unsafe { live.release(objects[998]) }, Err(()));
        for &o in objects.iter().skip(1).step_by(2) {
            // SAFETY: Ours, from Box::into_raw, not used afterwards.
            assert_eq!(unsafe { live.release(o) }, Ok(()));
        }
    }

    #[test]
    fn an_object_released_during_calls_is_freed_by_the_last() {
        static DROPS: AtomicUsize = AtomicUsize::new(0);
        let live = new_live::<Counted>();
        let o = Box::into_raw(Box::new(Counted([7; 4], &DROPS)));
        live.insert(o);
        let first = live.enter(o).unwrap();
        let second = live.enter(o).unwrap();
        // SAFETY: Ours; only the calls use it afterwards.
        assert_eq!(unsafe { live.release(o) }, Ok(()));
        // Released: no new call, and it went; but the calls still read it.
        assert!(!live.contains(o) && live.enter(o).is_none() && live.went(o));
        assert_eq!(first.0, [7; 4]);
        drop(first);
        assert_eq!(second.0, [7; 4]);
        assert_eq!(DROPS.load(Ordering::SeqCst), 0);
        drop(second);
        assert_eq!(DROPS.load(Ordering::SeqCst), 1);
        assert!(live.went(o));
        // SAFETY: Refused: nothing is freed.
        assert_eq!(unsafe { live.release(o) }, Err(()));
    }

    #[test]
    fn an_object_released_with_no_call_is_freed_at_once() {
        static DROPS: AtomicUsize = AtomicUsize::new(0);
        let live = new_live::<Counted>();
        let o = Box::into_raw(Box::new(Counted([1; 4], &DROPS)));
        live.insert(o);
        drop(live.enter(o).unwrap());
        // SAFETY: Ours, not used afterwards.
        assert_eq!(unsafe { live.release(o) }, Ok(()));
        assert_eq!(DROPS.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn the_shards_share_the_addresses() {
        let live = new_live::<u8>();
        for addr in (0x5555_0000_0000_usize..).step_by(48).take(SHARDS * 64) {
            live.insert(addr as *const u8);
        }
        for shard in &live.shards {
            let n = shard.lock().unwrap().len();
            assert!(n > 16, "a shard holds {n} of {} addresses", SHARDS * 64);
        }
    }
}
