// SPDX-License-Identifier: GPL-2.0

//! Fault points for tests: the knobs in `/sys/kernel/debug/cepm/` (`cepm_fault.c` describes
//! each) and the hooks that obey them.
//!
//! The shim builds them, as the kernel builds its own `fail_*` points, only with
//! `CONFIG_FAULT_INJECTION_DEBUG_FS`. Without it the shim declares none of its `fault`
//! functions, and every hook here is an empty function: it fails nothing and waits for
//! nothing.

use core::ffi::c_void;
use kernel::{
    sync::Arc,
    types::ForeignOwnable, //
};

use crate::context::Cm;

/// `/sys/kernel/debug/cepm/` while this value lives. Best effort: without debugfs there are no
/// knobs, and the hooks do what they do with all knobs at 0.
///
/// # Invariants
///
/// `cm` is the foreign form of an `Arc<Cm>` reference, owned by this value, which the
/// directory's `listen_shards` file reads until the directory is removed in `drop`.
pub(crate) struct FaultInjection {
    cm: *mut c_void,
}

// SAFETY: `cm` stands for an `Arc<Cm>`, which is `Send` and `Sync`; the value only gives it back.
unsafe impl Send for FaultInjection {}
// SAFETY: See `Send`; `&FaultInjection` offers nothing.
unsafe impl Sync for FaultInjection {}

impl FaultInjection {
    /// The knobs, and `listen_shards`, which reads `cm`'s listener table.
    pub(crate) fn new(cm: Arc<Cm>) -> Self {
        let cm = cm.into_foreign();
        #[cfg(CONFIG_FAULT_INJECTION_DEBUG_FS)]
        {
            // SAFETY: `cm` stays valid until `drop` has removed the directory, by the type
            // invariant; the shim tolerates debugfs failures.
            unsafe { super::bindings::cepm_shim_fault_create(cm) };
        }
        // INVARIANT: `cm` came from `into_foreign` above.
        Self { cm }
    }
}

impl Drop for FaultInjection {
    fn drop(&mut self) {
        #[cfg(CONFIG_FAULT_INJECTION_DEBUG_FS)]
        {
            // SAFETY: Created in `new`; removing it stops new writes, waits for the readers of
            // `listen_shards`, and the hooks only read the shim's own static variables.
            unsafe { super::bindings::cepm_shim_fault_remove() };
        }
        // SAFETY: By the type invariant `cm` came from `into_foreign`, and with the directory
        // gone nothing reads it any more.
        drop(unsafe { Arc::<Cm>::from_foreign(self.cm) });
    }
}

/// Sleeps for `destroy_delay_ms` (0, no sleep, unless a test set it). Process context only.
pub(crate) fn fault_destroy_delay() {
    #[cfg(CONFIG_FAULT_INJECTION_DEBUG_FS)]
    {
        // SAFETY: No preconditions beyond process context, which the caller guarantees.
        unsafe { super::bindings::cepm_shim_fault_destroy_delay() };
    }
}

/// Sleeps for `listen_delay_ms` (0, no sleep, unless a test set it), counting the sleep in
/// `listen_delayed`. Process context only.
pub(crate) fn fault_listen_delay() {
    #[cfg(CONFIG_FAULT_INJECTION_DEBUG_FS)]
    {
        // SAFETY: No preconditions beyond process context, which the caller guarantees.
        unsafe { super::bindings::cepm_shim_fault_listen_delay() };
    }
}

/// Sleeps for `request_delay_ms` (0, no sleep, unless a test set it), counting the sleep in
/// `request_delayed`. Process context only.
pub(crate) fn fault_request_delay() {
    #[cfg(CONFIG_FAULT_INJECTION_DEBUG_FS)]
    {
        // SAFETY: No preconditions beyond process context, which the caller guarantees.
        unsafe { super::bindings::cepm_shim_fault_request_delay() };
    }
}

/// Sleeps for `port_release_delay_ms` (0, no sleep, unless a test set it), counting the sleep
/// in `port_release_delayed`. Process context only.
pub(crate) fn fault_port_release_delay() {
    #[cfg(CONFIG_FAULT_INJECTION_DEBUG_FS)]
    {
        // SAFETY: No preconditions beyond process context, which the caller guarantees.
        unsafe { super::bindings::cepm_shim_fault_port_release_delay() };
    }
}

/// Whether this handle reservation is to fail (`fail_handle_count`, 0 unless a test set it).
pub(crate) fn fault_fail_handle() -> bool {
    #[cfg(CONFIG_FAULT_INJECTION_DEBUG_FS)]
    {
        // SAFETY: No preconditions: it only counts down an atomic of the shim's.
        unsafe { super::bindings::cepm_shim_fault_fail_handle() }
    }
    #[cfg(not(CONFIG_FAULT_INJECTION_DEBUG_FS))]
    false
}

/// Whether this push onto a listener's backlog is to fail as a failed atomic allocation would
/// (`fail_backlog_push_count`, 0 unless a test set it).
pub(crate) fn fault_fail_backlog_push() -> bool {
    #[cfg(CONFIG_FAULT_INJECTION_DEBUG_FS)]
    {
        // SAFETY: No preconditions: it only counts down an atomic of the shim's.
        unsafe { super::bindings::cepm_shim_fault_fail_backlog_push() }
    }
    #[cfg(not(CONFIG_FAULT_INJECTION_DEBUG_FS))]
    false
}

/// Whether this device is to fail to join the device list as a failed allocation would
/// (`fail_device_list_count`, 0 unless a test set it).
pub(crate) fn fault_fail_device_list() -> bool {
    #[cfg(CONFIG_FAULT_INJECTION_DEBUG_FS)]
    {
        // SAFETY: No preconditions: it only counts down an atomic of the shim's.
        unsafe { super::bindings::cepm_shim_fault_fail_device_list() }
    }
    #[cfg(not(CONFIG_FAULT_INJECTION_DEBUG_FS))]
    false
}
