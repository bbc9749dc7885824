// SPDX-License-Identifier: GPL-2.0

//! The event monitor behind `cepmctl events`: files that asked for `CEPM_IOC_MONITOR` get a
//! copy of every event any CEP delivers, with the CEP's comm IDs, service ID and new state.
//!
//! The monitor list's lock comes after a CEP's and before a monitoring file's in the lock order
//! ([`crate::cep`]). While no file monitors, delivering an event takes no lock here (the count
//! is 0): the hot path pays one relaxed load.

use kernel::{
    new_spinlock,
    prelude::*,
    sync::{
        atomic::{
            Atomic,
            Relaxed, //
        },
        Arc, SpinLock,
    },
    task::Kuid,
    time::{
        Instant,
        Monotonic, //
    },
};

use crate::{
    file::CepmFile,
    shim::NetId,
    uapi, //
};

/// The files that monitor, owned by the CM's [`crate::context::Cm`].
#[pin_data]
pub(crate) struct Monitors {
    #[pin]
    files: SpinLock<KVec<Arc<CepmFile>>>,
    /// How many files monitor: while 0, [`Monitors::publish`] returns at once.
    count: Atomic<u32>,
}

impl Monitors {
    /// No monitor yet.
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            files <- new_spinlock!(KVec::new(), "Monitors::files"),
            count: Atomic::new(0),
        })
    }

    /// How many files monitor.
    pub(crate) fn count(&self) -> u32 {
        self.count.load(Relaxed)
    }

    /// Makes `file` a monitor.
    pub(crate) fn add(&self, file: Arc<CepmFile>) -> Result {
        let mut files = self.files.lock();
        files.push(file, GFP_ATOMIC)?;
        self.count.store(files.len() as u32, Relaxed);
        Ok(())
    }

    /// Stops `file` monitoring (its release).
    pub(crate) fn remove(&self, file: &CepmFile) {
        let removed = {
            let mut files = self.files.lock();
            let found = files.iter().position(|f| core::ptr::eq(&**f, file));
            let removed = found.and_then(|i| files.remove(i).ok());
            self.count.store(files.len() as u32, Relaxed);
            removed
        };
        // The last reference to a file may go here: outside the lock.
        drop(removed);
    }

    /// Copies the record `make` builds (timestamp still unset) to every monitor that may see
    /// a CEP of network namespace `net` and `owner`'s user; called under the CEP's lock.
    /// Without monitors, the record is never built.
    pub(crate) fn publish(
        &self,
        (net, owner): (NetId, Option<Kuid>),
        make: impl FnOnce() -> uapi::cepm_trace,
    ) {
        if self.count.load(Relaxed) == 0 {
            return;
        }
        let record = make();
        let now = Instant::<Monotonic>::now();
        for file in self.files.lock().iter() {
            file.push_trace(record, now, (net, owner));
        }
    }
}
