// SPDX-License-Identifier: GPL-2.0

//! The only module that talks to C: safe wrappers over the shim declared in `cepm_shim.h`, and
//! over the few kernel functions the kernel crate does not wrap.
//!
//! The shim's declarations are generated from that header by bindgen at build time (see
//! `Kbuild`) into the module `bindings`. This file holds them, the registrations (the
//! `ib_client`, `/dev/cepm`) and the module's small C services; its children hold the rest:
//! - [`rdma`]: RDMA abstractions: devices, MAD agents generic over a [`MadHandler`] (their
//!   callbacks with them) and borrowed from their port's lock, address handles, sends in
//!   flight, received MADs;
//! - `glue`: the `#[no_mangle]` entry points C calls (ib_client, file operations);
//! - `net`: network namespaces, as files hold them and the tables key them;
//! - `fault`: the fault points for tests, in debugfs, which are no-ops without
//!   `CONFIG_FAULT_INJECTION_DEBUG_FS`.
//!
//! Every callback C calls is checked against its `cepm_*_fn` typedef, so the two sides cannot
//! drift apart silently.

use core::{
    ffi::c_void,
    ptr::NonNull, //
};
use kernel::{
    error::to_result,
    prelude::*,
    sync::Arc,
    task::Kuid,
    types::ForeignOwnable,
    workqueue::Queue, //
};

use crate::context::Cm;

mod fault;
mod glue;
mod hash;
mod net;
mod rdma;

pub(crate) use fault::{
    fault_destroy_delay,
    fault_fail_backlog_push,
    fault_fail_device_list,
    fault_fail_handle,
    fault_listen_delay,
    fault_port_release_delay,
    fault_request_delay,
    FaultInjection, //
};

pub(crate) use hash::HashKey;
pub(crate) use net::{
    Net,
    NetId, //
};
pub(crate) use rdma::{
    AgentRef,
    AgentRole,
    AhInfo,
    AttachedAgent,
    DeviceName,
    IbDevice,
    MadAgent,
    MadHandler,
    OutstandingSend,
    ReceivedMad,
    SendOwner, //
};

/// The shim's declarations, generated from `cepm_shim.h` by bindgen.
#[allow(
    dead_code,
    missing_docs,
    non_camel_case_types,
    non_upper_case_globals,
    unreachable_pub,
    clippy::all
)]
mod bindings {
    use kernel::ffi;
    use pin_init::MaybeZeroable;

    include!(concat!(env!("CEPM_OBJTREE"), "/rust/shim_bindings.rs"));
}

/// Size of a MAD: CM messages are exactly one.
pub(crate) const MAD_SIZE: usize = 256;

/// One of the shim's two registrations whose C callbacks get the CM: the `ib_client`
/// ([`CmRegistration::client`]) and `/dev/cepm` ([`CmRegistration::chardev`]).
///
/// # Invariants
///
/// Registered for as long as this value exists, with `cm` as the callbacks' context: an
/// `Arc<Cm>` leaked with `into_foreign`, taken back in the drop after `unregister`, which
/// waits out every callback.
pub(crate) struct CmRegistration {
    cm: *mut c_void,
    unregister: unsafe extern "C" fn(),
}

// SAFETY: The pointer is an `Arc<Cm>`'s, which is `Send`; unregistering works from any thread.
unsafe impl Send for CmRegistration {}
// SAFETY: Shared references give no access to the pointer.
unsafe impl Sync for CmRegistration {}

impl CmRegistration {
    /// Registers the `ib_client` for `cm`; `add` runs at once for every existing RDMA device.
    pub(crate) fn client(cm: Arc<Cm>) -> Result<Self> {
        // SAFETY: The shim's client hands its callbacks the context until
        // `cepm_shim_client_unregister` returns (which calls `remove` for every device), keeps
        // no use of it when registration fails, and refuses (EBUSY, leaving the first
        // registration's context alone) a second registration while one exists.
        unsafe {
            Self::new(
                cm,
                bindings::cepm_shim_client_register,
                bindings::cepm_shim_client_unregister,
            )
        }
    }

    /// Creates `/dev/cepm` (mode 0600) for `cm`; its file operations call into
    /// [`crate::file::CepmFile`].
    pub(crate) fn chardev(cm: Arc<Cm>) -> Result<Self> {
        // SAFETY: As for the client: `open` gets the context until
        // `cepm_shim_chardev_unregister` returns, none does after a failed registration, and a
        // second registration is refused. Open files keep the module (and so the code behind
        // their file operations) alive through the fops' owner, and hold their own
        // reference to the CM.
        unsafe {
            Self::new(
                cm,
                bindings::cepm_shim_chardev_register,
                bindings::cepm_shim_chardev_unregister,
            )
        }
    }

    /// Registers with `cm` as the context.
    ///
    /// # Safety
    ///
    /// `register` hands its argument to callbacks only until `unregister` returns, keeps no
    /// use of it when it fails, and fails while a registration of its own already exists.
    unsafe fn new(
        cm: Arc<Cm>,
        register: unsafe extern "C" fn(*mut c_void) -> c_int,
        unregister: unsafe extern "C" fn(),
    ) -> Result<Self> {
        let ptr = cm.into_foreign();
        // SAFETY: `ptr` stays valid until `unregister` (by the drop) or the failure below;
        // the rest is the caller's promise.
        if let Err(e) = to_result(unsafe { register(ptr) }) {
            // SAFETY: The registration failed, so no callback can use `ptr`.
            drop(unsafe { Arc::<Cm>::from_foreign(ptr) });
            return Err(e);
        }
        // INVARIANT: registered with `ptr`.
        Ok(Self {
            cm: ptr,
            unregister,
        })
    }
}

impl Drop for CmRegistration {
    fn drop(&mut self) {
        // SAFETY: Registered by the type invariant; `unregister` is its pair.
        unsafe { (self.unregister)() };
        // SAFETY: No callback runs after the unregistration, so the reference `new` leaked
        // is ours again.
        drop(unsafe { Arc::<Cm>::from_foreign(self.cm) });
    }
}

/// A workqueue of the module's own.
///
/// # Invariants
///
/// `ptr` is a workqueue from `alloc_workqueue`, destroyed only by the drop.
pub(crate) struct Workqueue {
    ptr: NonNull<bindings::workqueue_struct>,
}

// SAFETY: A workqueue may be used and destroyed from any thread.
unsafe impl Send for Workqueue {}
// SAFETY: Queueing on a workqueue is thread-safe.
unsafe impl Sync for Workqueue {}

impl Workqueue {
    /// A new workqueue called `name`.
    pub(crate) fn new(name: &CStr) -> Result<Self> {
        // SAFETY: `name` is NUL-terminated; alloc_workqueue copies it.
        let ptr = unsafe { bindings::cepm_shim_alloc_workqueue(name.as_char_ptr()) };
        // INVARIANT: a non-null result is a new workqueue.
        Ok(Self {
            ptr: NonNull::new(ptr).ok_or(ENOMEM)?,
        })
    }
}

impl core::ops::Deref for Workqueue {
    type Target = Queue;

    fn deref(&self) -> &Queue {
        // SAFETY: By the type invariant `ptr` is a valid workqueue until the drop, which
        // cannot happen while this borrow lives. The shim's opaque type and the kernel's are
        // the same C struct.
        unsafe { Queue::from_raw(self.ptr.as_ptr().cast()) }
    }
}

impl Drop for Workqueue {
    fn drop(&mut self) {
        // SAFETY: By the type invariant `ptr` is a live workqueue, destroyed only here;
        // destroy_workqueue drains it first, so no queued work is lost or left running.
        unsafe { kernel::bindings::destroy_workqueue(self.ptr.as_ptr().cast()) };
    }
}

/// Another open `/dev/cepm`, found by a descriptor the caller passed (`CEPM_IOC_MIGRATE`),
/// kept open while this value lives.
///
/// # Invariants
///
/// `file` is a counted reference to a `/dev/cepm` file, dropped only by the drop, and `ctx`
/// that file's context: an `Arc<CepmFile>` from `cepm_rust_open`, which the file's release
/// takes back only after its last reference has gone.
pub(crate) struct CepmFd {
    file: NonNull<bindings::file>,
    ctx: *mut c_void,
}

impl CepmFd {
    /// The `/dev/cepm` file `fd` names: `EBADF` if it is not open, `EINVAL` if it is another
    /// kind of file.
    pub(crate) fn get(fd: i32) -> Result<Self> {
        let mut file = core::ptr::null_mut();
        // SAFETY: `file` is a valid place for the shim to write to; any `fd` is checked there.
        let ctx = unsafe { bindings::cepm_shim_get_file_ctx(fd, &mut file) };
        let ctx = kernel::error::from_err_ptr(ctx)?;
        // INVARIANT: on success the shim took a reference to `file`, a /dev/cepm file whose
        // context is `ctx`.
        Ok(Self {
            file: NonNull::new(file).ok_or(EINVAL)?,
            ctx,
        })
    }

    /// The file's state.
    pub(crate) fn cepm_file(&self) -> kernel::sync::ArcBorrow<'_, crate::file::CepmFile> {
        // SAFETY: By the type invariant `ctx` is a live `Arc<CepmFile>` from `into_foreign`,
        // and it stays live while we hold the file's reference, which outlives this borrow.
        unsafe { <Arc<crate::file::CepmFile> as ForeignOwnable>::borrow(self.ctx) }
    }
}

impl Drop for CepmFd {
    fn drop(&mut self) {
        // SAFETY: By the type invariant we hold a reference to `file`, given back only here.
        unsafe { bindings::cepm_shim_put_file(self.file.as_ptr()) };
    }
}

/// Cancels the delayed work whose `work_struct` is `work` and waits until no instance of it
/// runs; whether it was pending.
///
/// # Safety
///
/// `work` points to the `work_struct` inside an initialised `delayed_work` that stays valid
/// for the call. The caller is in process context and holds no lock the work takes.
pub(crate) unsafe fn cancel_delayed_work_sync(work: *mut c_void) -> bool {
    // SAFETY: The caller's requirements are the C function's.
    unsafe { bindings::cepm_shim_cancel_delayed_work_sync(work) }
}

/// The `devices` module parameter: the RDMA devices to manage, comma-separated (empty: all).
pub(crate) fn devices_param() -> &'static CStr {
    // SAFETY: The shim returns a static NUL-terminated buffer that is read-only once the
    // module is loaded (mode 0444, no setter runs after load).
    unsafe { CStr::from_char_ptr(bindings::cepm_shim_devices_param()) }
}

/// The numeric module parameters (`cepm_params.c` declares them, so that they show in sysfs),
/// as loaded.
pub(crate) type Params = bindings::cepm_params;

/// The module parameters; they do not change once the module is loaded.
pub(crate) fn params() -> Params {
    let mut out = Params::default();
    // SAFETY: `out` is writable; the shim only copies its static values into it.
    unsafe { bindings::cepm_shim_params(&mut out) };
    out
}

/// The capabilities `/dev/cepm` asks about, as the current task has them in the initial user
/// namespace.
pub(crate) type Caps = bindings::cepm_caps;

/// The current task's [`Caps`].
pub(crate) fn current_caps() -> Caps {
    let mut out = Caps::default();
    // SAFETY: `out` is writable; the shim only writes its two fields.
    unsafe { bindings::cepm_shim_current_caps(&mut out) };
    out
}

/// The user whose limits the current task's files count against: of the task's user namespace
/// and those it lies in, the owner of the outermost one that global root did not make; the
/// task's effective uid if there is none (docs/abi.md, "Privileges and limits").
pub(crate) fn current_account() -> Kuid {
    // SAFETY: No preconditions: the shim reads the current task's own credentials.
    let val = unsafe { bindings::cepm_shim_current_account() };
    Kuid::from_raw(kernel::bindings::kuid_t { val })
}

/// Charges the memory `obj` lies in to the current task's memory cgroup, if it is a slab
/// object allocated with `__GFP_ACCOUNT` that no cgroup was charged for (one allocated by the
/// MAD layer's work); anything else is left as it is. Atomic: callable under a spinlock, and
/// the charge may take the cgroup over its limit rather than fail. Returns whether it charged.
pub(crate) fn charge_to_current<T>(obj: &T) -> bool {
    // SAFETY: `obj` is a live reference, so the address is mapped for the call; the shim
    // charges only an address the slab allocator owns, and leaves any other alone.
    unsafe { bindings::cepm_shim_charge_current(core::ptr::from_ref(obj).cast()) }
}

/// A random 32-bit value.
pub(crate) fn random_u32() -> u32 {
    // SAFETY: No preconditions.
    unsafe { kernel::bindings::get_random_u32() }
}
