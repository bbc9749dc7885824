//! The IDs and event channels the library has made and not yet freed, by address: a call
//! given any other pointer fails with `EINVAL` instead of reading through it.
//!
//! librdmacm reads through whatever pointer it is given, and C applications do pass stale
//! ones: perftest 4.5-0.17 (Debian 12's), when a connection is rejected, retries with an ID
//! pointer read from an array it has freed, and destroys its event channel twice
//! (docs/rdmacm.md). Both crashed the application; here they are errors it can report.
//!
//! The check costs one lock of one of [`SHARDS`] shards, chosen by address, so that calls on
//! different objects seldom meet on a lock. It cannot tell a freed object from a new one made
//! at the same address, nor make a call on an object that another thread frees meanwhile safe:
//! librdmacm's contract still forbids both.

use std::{
    collections::{BTreeSet, VecDeque},
    sync::Mutex,
};

/// How many locks share the addresses: a power of two, as [`Live::shard`] picks one by the
/// top bits of a hash.
const SHARDS: usize = 16;
const _: () = assert!(SHARDS.is_power_of_two() && SHARDS > 1);

/// A set of live objects' addresses, and the last few that went.
pub(crate) struct Live {
    shards: [Mutex<BTreeSet<usize>>; SHARDS],
    gone: Mutex<VecDeque<usize>>,
}

/// How many of the retired addresses [`Live::went`] remembers.
const GONE: usize = 64;

/// The IDs: each [`Id`](crate::id::Id) from its making to its drop.
pub(crate) static IDS: Live = Live::new();

/// The event channels: each [`Channel`](crate::channel::Channel) from its opening to its drop.
pub(crate) static CHANNELS: Live = Live::new();

impl Live {
    const fn new() -> Self {
        Self {
            shards: [const { Mutex::new(BTreeSet::new()) }; SHARDS],
            gone: Mutex::new(VecDeque::new()),
        }
    }

    fn shard(&self, addr: usize) -> std::sync::MutexGuard<'_, BTreeSet<usize>> {
        // Heap addresses are 16-byte aligned: the bits above those, mixed (Fibonacci hashing),
        // pick the shard.
        let mixed = ((addr >> 4) as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let index = (mixed >> (u64::BITS - SHARDS.trailing_zeros())) as usize;
        self.shards[index].lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records the object at `p` as live.
    pub(crate) fn insert<T>(&self, p: *const T) {
        self.shard(p as usize).insert(p as usize);
    }

    /// The object at `p` is gone.
    pub(crate) fn remove<T>(&self, p: *const T) {
        self.shard(p as usize).remove(&(p as usize));
    }

    /// The object at `p` is gone, and [`Live::went`] remembers it (the one lock all share:
    /// for channels, not for every ID).
    pub(crate) fn retire<T>(&self, p: *const T) {
        self.remove(p);
        let mut gone = self.gone.lock().unwrap_or_else(|e| e.into_inner());
        if gone.len() == GONE {
            gone.pop_front();
        }
        gone.push_back(p as usize);
    }

    /// Whether `p` is not live but was one of the last [`GONE`] objects retired.
    pub(crate) fn went<T>(&self, p: *const T) -> bool {
        !self.contains(p)
            && self
                .gone
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .contains(&(p as usize))
    }

    /// Whether `p` is a live object's address.
    pub(crate) fn contains<T>(&self, p: *const T) -> bool {
        !p.is_null() && self.shard(p as usize).contains(&(p as usize))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_is_live_from_insert_to_remove() {
        let live = Live::new();
        let objects: Vec<Box<[u64; 4]>> = (0..1000).map(|i| Box::new([i; 4])).collect();
        for o in &objects {
            assert!(!live.contains(&**o));
            live.insert(&**o);
        }
        for (i, o) in objects.iter().enumerate() {
            assert!(live.contains(&**o));
            if i % 2 == 0 {
                live.retire(&**o);
            }
        }
        for (i, o) in objects.iter().enumerate() {
            assert_eq!(live.contains(&**o), i % 2 == 1);
            // An address inside a live object is not the object.
            assert!(!live.contains(o.as_ptr().wrapping_add(1)));
        }
        assert!(!live.contains(core::ptr::null::<u64>()));
        // The last GONE removed are remembered, the live ones and the older ones are not.
        assert!(live.went(&*objects[998]));
        assert!(!live.went(&*objects[999]));
        assert!(!live.went(&*objects[0]));
    }

    #[test]
    fn the_shards_share_the_addresses() {
        let live = Live::new();
        for addr in (0x5555_0000_0000_usize..).step_by(48).take(SHARDS * 64) {
            live.insert(addr as *const u8);
        }
        for shard in &live.shards {
            let n = shard.lock().unwrap().len();
            assert!(n > 16, "a shard holds {n} of {} addresses", SHARDS * 64);
        }
    }
}
