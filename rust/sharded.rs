// SPDX-License-Identifier: GPL-2.0

//! A table split into spinlocked shards, so that no lookup takes a lock shared by every
//! connection (or every user).

use kernel::{
    new_spinlock,
    prelude::*,
    sync::SpinLock, //
};
use pin_init::pin_init_array_from_fn;

/// Shards per table.
pub(crate) const SHARDS: usize = 16;

/// One table split into [`SHARDS`] spinlocks, each holding a `T`. All shards of every
/// `Sharded` share one lock class: no code holds two at once, and lockdep would say so.
#[pin_data]
pub(crate) struct Sharded<T> {
    #[pin]
    shards: [SpinLock<T>; SHARDS],
}

impl<T> Sharded<T> {
    /// `SHARDS` shards, each initialised by `empty`.
    pub(crate) fn new(empty: impl Fn() -> T) -> impl PinInit<Self, Error> {
        try_pin_init!(Self {
            shards <- pin_init_array_from_fn(|_| new_spinlock!(empty(), "Sharded::shard")),
        }? Error)
    }
}

impl<T: Unpin> Sharded<T> {
    /// Runs `f` on shard `i % SHARDS` under its lock.
    pub(crate) fn with<R>(&self, i: usize, f: impl FnOnce(&mut T) -> R) -> R {
        f(&mut self.shards[i % SHARDS].lock())
    }
}

/// The shard of a 64-bit key (service IDs, peer keys, uids): fold all its bits.
pub(crate) fn shard_of(key: u64) -> usize {
    let folded = key ^ (key >> 32);
    let folded = folded ^ (folded >> 16);
    (folded ^ (folded >> 8)) as usize
}
