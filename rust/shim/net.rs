// SPDX-License-Identifier: GPL-2.0

//! Network namespaces: the one a file was opened in ([`Net`]), and how the tables name one
//! ([`NetId`]). docs/abi.md, "Network namespaces", says what a namespace scopes.

use core::ptr::NonNull;
use kernel::prelude::*;

use super::bindings;

/// A network namespace as the tables key it: its cookie, unique for the system's uptime and
/// never reused, so a key outliving its namespace names no other.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct NetId(u64);

impl NetId {
    /// The namespace whose cookie the shim gave as `cookie`.
    pub(super) fn from_cookie(cookie: u64) -> Self {
        Self(cookie)
    }
}

/// A reference to the network namespace of the task that made it.
///
/// # Invariants
///
/// `ptr` holds a reference to a `struct net`, taken by `cepm_shim_current_net` and dropped
/// by [`Net`]'s drop.
pub(crate) struct Net {
    ptr: NonNull<bindings::net>,
    id: NetId,
    initial: bool,
}

// SAFETY: A namespace reference may be used and dropped from any thread.
unsafe impl Send for Net {}
// SAFETY: `&Net` only reads what does not change for the namespace's life.
unsafe impl Sync for Net {}

impl Net {
    /// The current task's network namespace; `ESRCH` for a task that is exiting, which has
    /// none left.
    pub(crate) fn current() -> Result<Self> {
        // SAFETY: Callable from any task; a namespace it returns is referenced.
        let raw = unsafe { bindings::cepm_shim_current_net() };
        let ptr = NonNull::new(raw).ok_or(ESRCH)?;
        // SAFETY: `ptr` is a referenced namespace.
        let (cookie, initial) = unsafe {
            (
                bindings::cepm_shim_net_cookie(ptr.as_ptr()),
                bindings::cepm_shim_net_is_initial(ptr.as_ptr()),
            )
        };
        // INVARIANT: `cepm_shim_current_net` took a reference.
        Ok(Self {
            ptr,
            id: NetId(cookie),
            initial,
        })
    }

    /// This namespace as the tables key it.
    pub(crate) fn id(&self) -> NetId {
        self.id
    }

    /// Whether this is the initial namespace, the host's.
    pub(crate) fn is_initial(&self) -> bool {
        self.initial
    }

    /// The ephemeral ports (`ip_local_port_range`), `low <= high`.
    pub(crate) fn local_port_range(&self) -> (u16, u16) {
        let (mut low, mut high) = (0, 0);
        // SAFETY: The namespace is referenced by the type invariant; both outputs are
        // writable.
        unsafe { bindings::cepm_shim_local_port_range(self.ptr.as_ptr(), &mut low, &mut high) };
        (low, high)
    }

    pub(super) fn as_ptr(&self) -> *mut bindings::net {
        self.ptr.as_ptr()
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        // SAFETY: The reference is ours by the type invariant, and dropped only here.
        unsafe { bindings::cepm_shim_put_net(self.ptr.as_ptr()) };
    }
}
