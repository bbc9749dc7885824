// SPDX-License-Identifier: GPL-2.0

//! Fault points for tests: the knobs in `/sys/kernel/debug/cepm/` (`cepm_fault.c` describes
//! each) and the hooks that obey them.
//!
//! The shim builds them, as the kernel builds its own `fail_*` points, only with
//! `CONFIG_FAULT_INJECTION_DEBUG_FS`. Without it the shim declares none of its `fault`
//! functions, and every hook here is an empty function: it fails nothing and waits for
//! nothing.

/// `/sys/kernel/debug/cepm/` while this value lives. Best effort: without debugfs there are no
/// knobs, and the hooks do what they do with all knobs at 0.
pub(crate) struct FaultInjection(());

impl FaultInjection {
    pub(crate) fn new() -> Self {
        #[cfg(CONFIG_FAULT_INJECTION_DEBUG_FS)]
        {
            // SAFETY: No preconditions; the shim tolerates debugfs failures.
            unsafe { super::bindings::cepm_shim_fault_create() };
        }
        Self(())
    }
}

impl Drop for FaultInjection {
    fn drop(&mut self) {
        #[cfg(CONFIG_FAULT_INJECTION_DEBUG_FS)]
        {
            // SAFETY: Created in `new`; removing it stops new writes, and the hooks only read
            // the shim's own static variables.
            unsafe { super::bindings::cepm_shim_fault_remove() };
        }
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
