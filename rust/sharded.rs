// SPDX-License-Identifier: GPL-2.0

//! A table split into spinlocked shards, so that no lookup takes a lock shared by every
//! connection (or every user).

use kernel::{
    new_spinlock,
    prelude::*,
    sync::SpinLock, //
};
use pin_init::pin_init_array_from_fn;

use crate::shim::HashKey;

/// Shards per table.
pub(crate) const SHARDS: usize = 16;

/// One table split into [`SHARDS`] spinlocks, each holding a `T`. All shards of every
/// `Sharded` share one lock class: no code holds two at once, and lockdep would say so.
///
/// A key's shard is its hash under the table's own random key: service IDs, peers' comm IDs
/// and GIDs come from users and the wire, and whoever picks them cannot aim them all at one
/// shard, whose lock every lookup there takes.
#[pin_data]
pub(crate) struct Sharded<T> {
    #[pin]
    shards: [SpinLock<T>; SHARDS],
    key: HashKey,
}

impl<T> Sharded<T> {
    /// `SHARDS` shards, each initialised by `empty`, with a new random key.
    pub(crate) fn new(empty: impl Fn() -> T) -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            shards <- pin_init_array_from_fn(|_| new_spinlock!(empty(), "Sharded::shard")),
            key: HashKey::random(),
        }? Error)
    }

    /// The shard of a 64-bit key (a service ID, a uid).
    pub(crate) fn shard_of(&self, key: u64) -> usize {
        self.key.hash(key) as usize % SHARDS
    }
}

impl<T: Unpin> Sharded<T> {
    /// Runs `f` on shard `i % SHARDS` under its lock.
    pub(crate) fn with<R>(&self, i: usize, f: impl FnOnce(&mut T) -> R) -> R {
        f(&mut self.shards[i % SHARDS].lock())
    }

    /// Runs `f` under the lock of `key`'s shard ([`Sharded::shard_of`]).
    pub(crate) fn with_key<R>(&self, key: u64, f: impl FnOnce(&mut T) -> R) -> R {
        self.with(self.shard_of(key), f)
    }

    /// Runs `f` under the lock of the shard of a key of three words (a peer's), each hashed
    /// on its own: folding them first would let a peer that picks two of them cancel out
    /// the hash's key.
    pub(crate) fn with_key3<R>(&self, key: [u64; 3], f: impl FnOnce(&mut T) -> R) -> R {
        self.with(self.key.hash3(key) as usize % SHARDS, f)
    }
}
