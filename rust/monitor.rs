// SPDX-License-Identifier: GPL-2.0

//! The event monitor behind `cepmctl events`: files that asked for `CEPM_IOC_MONITOR` get a
//! copy of every event any CEP delivers, with the CEP's comm IDs, service ID and new state.
//!
//! Lock order: a CEP's lock, then [`MONITORS`], then a monitoring file's lock. While no file
//! monitors, delivering an event takes no lock here ([`MONITOR_COUNT`] is 0): the hot path
//! pays one relaxed load.

use kernel::{
    prelude::*,
    sync::{
        atomic::{
            Atomic,
            Relaxed, //
        },
        Arc,
    },
    time::{
        Instant,
        Monotonic, //
    },
};

use crate::{
    file::CepmFile,
    uapi, //
};

kernel::sync::global_lock! {
    // SAFETY: `Monitors::new` initialises the lock in module init, before any user.
    unsafe(uninit) static MONITORS: SpinLock<KVec<Arc<CepmFile>>> = KVec::new();
}

/// How many files monitor: while 0, [`publish`] returns at once.
static MONITOR_COUNT: Atomic<u32> = Atomic::new(0);

/// Ownership of the monitor list for the lifetime of the module.
pub(crate) struct Monitors(());

impl Monitors {
    /// Initialises the (empty) list; once per module load, before any file is opened.
    pub(crate) fn new() -> Self {
        // SAFETY: Module init calls this once, before `/dev/cepm` exists.
        unsafe { MONITORS.init() };
        Self(())
    }
}

impl Drop for Monitors {
    fn drop(&mut self) {
        // Open files pin the module, so none is left; drop the list's memory regardless.
        drop(core::mem::take(&mut *MONITORS.lock()));
    }
}

/// Makes `file` a monitor.
pub(crate) fn add(file: Arc<CepmFile>) -> Result {
    let mut monitors = MONITORS.lock();
    monitors.push(file, GFP_ATOMIC)?;
    MONITOR_COUNT.store(monitors.len() as u32, Relaxed);
    Ok(())
}

/// Stops `file` monitoring (its release).
pub(crate) fn remove(file: &CepmFile) {
    let removed = {
        let mut monitors = MONITORS.lock();
        let found = monitors.iter().position(|f| core::ptr::eq(&**f, file));
        let removed = found.and_then(|i| monitors.remove(i).ok());
        MONITOR_COUNT.store(monitors.len() as u32, Relaxed);
        removed
    };
    // The last reference to a file may go here: outside the lock.
    drop(removed);
}

/// Copies the record `make` builds (timestamp still unset) to every monitor; called under the
/// CEP's lock. Without monitors, the record is never built.
pub(crate) fn publish(make: impl FnOnce() -> uapi::cepm_trace) {
    if MONITOR_COUNT.load(Relaxed) == 0 {
        return;
    }
    let record = make();
    let now = Instant::<Monotonic>::now();
    for file in MONITORS.lock().iter() {
        file.push_trace(record, now);
    }
}
