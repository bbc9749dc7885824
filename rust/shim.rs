// SPDX-License-Identifier: GPL-2.0

//! The only module that talks to C: safe wrappers over the shim declared in `cepm_shim.h`
//! (RDMA devices, MAD agents, address handles, and the `/dev/cepm` file operations).
//!
//! The declarations are generated from that header by bindgen at build time (see `Kbuild`), and
//! the callbacks below are checked against its `cepm_*_fn` typedefs, so the two sides cannot
//! drift apart silently.

use core::marker::PhantomData;
use core::{
    ffi::c_void,
    ops::RangeInclusive,
    ptr::NonNull, //
};
use kernel::{
    error::{
        from_err_ptr,
        to_result, //
    },
    ffi::c_int,
    prelude::*,
    sync::Arc,
    types::ForeignOwnable,
};

use crate::{
    cep::Cep,
    file::CepmFile,
    port::CmPort,
    registry, //
};

/// Declarations generated from `cepm_shim.h`.
#[allow(
    dead_code,
    missing_docs,
    non_camel_case_types,
    non_upper_case_globals,
    unreachable_pub,
    clippy::all
)]
mod shim {
    use kernel::ffi;
    use pin_init::MaybeZeroable;

    include!("shim_bindings.rs");
}

// The callbacks C calls must have exactly the signatures the header declares.
const _: shim::cepm_add_device_fn = Some(cepm_rust_add_device);
const _: shim::cepm_remove_device_fn = Some(cepm_rust_remove_device);
const _: shim::cepm_rename_device_fn = Some(cepm_rust_rename_device);
const _: shim::cepm_recv_mad_fn = Some(cepm_rust_recv_mad);
const _: shim::cepm_send_done_fn = Some(cepm_rust_send_done);
const _: shim::cepm_open_fn = Some(cepm_rust_open);
const _: shim::cepm_release_fn = Some(cepm_rust_release);
const _: shim::cepm_ioctl_fn = Some(cepm_rust_ioctl);
const _: shim::cepm_read_fn = Some(cepm_rust_read);
const _: shim::cepm_poll_fn = Some(cepm_rust_poll);

/// Size of a MAD: CM messages are exactly one.
pub(crate) const MAD_SIZE: usize = 256;

/// Registration of cepm's `ib_client`.
///
/// # Invariants
///
/// The client is registered for as long as this value exists.
pub(crate) struct ClientRegistration(());

impl ClientRegistration {
    /// Registers the client; `add` runs at once for every existing RDMA device.
    pub(crate) fn new() -> Result<Self> {
        // SAFETY: No preconditions; the client is a static in the shim.
        to_result(unsafe { shim::cepm_shim_client_register() })?;
        // INVARIANT: registration succeeded.
        Ok(Self(()))
    }
}

impl Drop for ClientRegistration {
    fn drop(&mut self) {
        // SAFETY: By the type invariant the client is registered. Unregistering calls `remove`
        // for every device, which releases all of cepm's use of it.
        unsafe { shim::cepm_shim_client_unregister() };
    }
}

/// Registration of `/dev/cepm`.
///
/// # Invariants
///
/// The misc device is registered for as long as this value exists.
pub(crate) struct ChardevRegistration(());

impl ChardevRegistration {
    /// Creates `/dev/cepm` (mode 0600); its file operations call into [`CepmFile`].
    pub(crate) fn new() -> Result<Self> {
        // SAFETY: No preconditions; the misc device is a static in the shim.
        to_result(unsafe { shim::cepm_shim_chardev_register() })?;
        // INVARIANT: registration succeeded.
        Ok(Self(()))
    }
}

impl Drop for ChardevRegistration {
    fn drop(&mut self) {
        // SAFETY: Registered by the type invariant. Open files keep the module (and so the
        // code behind their file operations) alive through the fops' owner.
        unsafe { shim::cepm_shim_chardev_unregister() };
    }
}

/// `/sys/kernel/debug/cepm`: fault injection for tests (drop the next N received MADs of an
/// attribute, as a lossy wire would). Best effort: without debugfs there is none.
pub(crate) struct FaultInjection(());

impl FaultInjection {
    pub(crate) fn new() -> Self {
        // SAFETY: No preconditions; debugfs failures are tolerated by the shim.
        unsafe { shim::cepm_shim_debugfs_create() };
        Self(())
    }
}

impl Drop for FaultInjection {
    fn drop(&mut self) {
        // SAFETY: Created in `new`; removing it stops new writes, and the receive path only
        // reads the shim's own static variables.
        unsafe { shim::cepm_shim_debugfs_remove() };
    }
}

/// Fault injection: sleeps for debugfs's `destroy_delay_ms` (0, no sleep, unless a test set
/// it). Process context only.
pub(crate) fn fault_destroy_delay() {
    // SAFETY: No preconditions beyond process context, which the caller guarantees.
    unsafe { shim::cepm_shim_fault_destroy_delay() };
}

/// Fault injection: whether this handle reservation is to fail (debugfs's
/// `fail_handle_count`, 0 unless a test set it).
pub(crate) fn fault_fail_handle() -> bool {
    // SAFETY: No preconditions: it only counts down an atomic of the shim's.
    unsafe { shim::cepm_shim_fault_fail_handle() }
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
    unsafe { shim::cepm_shim_cancel_delayed_work_sync(work) }
}

/// The `devices` module parameter: the RDMA devices to manage, comma-separated (empty: all).
pub(crate) fn devices_param() -> &'static CStr {
    // SAFETY: The shim returns a static NUL-terminated buffer that is read-only once the
    // module is loaded (mode 0444, no setter runs after load).
    unsafe { CStr::from_char_ptr(shim::cepm_shim_devices_param()) }
}

/// A random 32-bit value.
pub(crate) fn random_u32() -> u32 {
    // SAFETY: No preconditions.
    unsafe { shim::cepm_shim_random_u32() }
}

/// The name of an RDMA device, as a NUL-terminated byte array.
pub(crate) type DeviceName = [u8; 64];

/// An RDMA device that cepm's `ib_client` has been told about.
///
/// # Invariants
///
/// `ptr` points at an `ib_device` for which the client's `add` callback ran and whose `remove`
/// callback has not returned yet. Values are only created in `add`, and the registry drops them
/// inside `remove`.
pub(crate) struct IbDevice {
    ptr: NonNull<shim::ib_device>,
}

// SAFETY: The shim functions called through `IbDevice` only read immutable device attributes
// (port range, capabilities) or take the device's own locks, so any thread may call them.
unsafe impl Send for IbDevice {}
// SAFETY: See `Send`; `&IbDevice` offers nothing that needs exclusive access.
unsafe impl Sync for IbDevice {}

impl IbDevice {
    /// Whether this value wraps the C device `ptr`.
    pub(crate) fn is(&self, ptr: *mut c_void) -> bool {
        self.ptr.as_ptr().cast::<c_void>() == ptr
    }

    /// The C pointer, to compare with [`IbDevice::is`].
    pub(crate) fn as_ptr(&self) -> *mut shim::ib_device {
        self.ptr.as_ptr()
    }

    /// The device's name. Devices can be renamed while registered: this is only read in the
    /// client's `add` and `rename` callbacks, where ib_core holds the rename lock
    /// (`devices_rwsem`); the registry keeps what it read.
    pub(crate) fn name(&self) -> DeviceName {
        let mut name = [0u8; 64];
        // SAFETY: The device is valid by the type invariant, and the buffer's length is passed.
        unsafe { shim::cepm_shim_device_name(self.ptr.as_ptr(), name.as_mut_ptr(), name.len()) };
        name
    }

    /// The device's node GUID: the CA GUID in CM messages.
    pub(crate) fn node_guid(&self) -> u64 {
        // SAFETY: The device is valid by the type invariant.
        unsafe { shim::cepm_shim_device_node_guid(self.ptr.as_ptr()) }
    }

    /// The CA's local ACK delay exponent.
    pub(crate) fn ack_delay(&self) -> u8 {
        // SAFETY: The device is valid by the type invariant.
        unsafe { shim::cepm_shim_device_ack_delay(self.ptr.as_ptr()) }
    }

    /// The device's port numbers.
    pub(crate) fn ports(&self) -> RangeInclusive<u32> {
        // SAFETY: The device is valid by the type invariant.
        let (start, end) = unsafe {
            (
                shim::cepm_shim_start_port(self.ptr.as_ptr()),
                shim::cepm_shim_end_port(self.ptr.as_ptr()),
            )
        };
        start..=end
    }

    /// Whether `port` speaks the IB CM protocol (InfiniBand or RoCE, not iWARP).
    pub(crate) fn port_has_ib_cm(&self, port: u32) -> bool {
        // SAFETY: The device is valid by the type invariant; the shim checks nothing else.
        unsafe { shim::cepm_shim_port_has_ib_cm(self.ptr.as_ptr(), port) }
    }

    /// Whether `port` runs RoCE.
    pub(crate) fn port_is_roce(&self, port: u32) -> bool {
        // SAFETY: The device is valid by the type invariant.
        unsafe { shim::cepm_shim_port_is_roce(self.ptr.as_ptr(), port) }
    }
}

/// A registered MAD agent, as the port it serves keeps it while attached. Neither `Copy` nor
/// `Clone`: the only way to use it is [`AttachedAgent::get`] under the port's lock.
///
/// # Invariants
///
/// The agent is registered for as long as the [`CmPort`] holding this value has it attached:
/// [`MadAgent`] attaches it after registration and detaches it (under the port's lock)
/// before unregistering.
pub(crate) struct AttachedAgent(NonNull<shim::ib_mad_agent>);

// SAFETY: Posting sends on a registered agent is allowed from any thread.
unsafe impl Send for AttachedAgent {}
// SAFETY: See `Send`.
unsafe impl Sync for AttachedAgent {}

impl AttachedAgent {
    /// The agent, for as long as `self` is borrowed (in practice: the port's lock guard).
    pub(crate) fn get(&self) -> AgentRef<'_> {
        AgentRef(self.0, PhantomData)
    }
}

/// A registered MAD agent, borrowed from the port's lock guard: it cannot outlive the lock,
/// so it cannot outlive the registration.
///
/// # Invariants
///
/// The agent is registered for as long as `'a` lasts (the [`AttachedAgent`] it came from is
/// attached to its port, and detaching it needs the lock the borrow holds).
pub(crate) struct AgentRef<'a>(NonNull<shim::ib_mad_agent>, PhantomData<&'a AttachedAgent>);

impl AgentRef<'_> {
    /// The high 32 bits of the TIDs of this agent's requests.
    pub(crate) fn hi_tid(&self) -> u32 {
        // SAFETY: The agent is registered by the type invariant.
        unsafe { shim::cepm_shim_agent_hi_tid(self.0.as_ptr()) }
    }

    /// Sends `mad` once to `ah`. `may_sleep` is false under a spinlock.
    pub(crate) fn send_once(
        &self,
        ah: &Arc<AddressHandle>,
        mad: &[u8; MAD_SIZE],
        may_sleep: bool,
    ) -> Result {
        // SAFETY: The agent is registered by the type invariant.
        unsafe { post_mad(self.0, ah.clone(), mad, 0, 0, None, may_sleep) }.map(|_| ())
    }

    /// Sends `mad` to `ah`, resent every `timeout_ms` up to `retries` times until cancelled;
    /// `owner` hears the outcome through [`Cep::send_done`]. Callable under a spinlock.
    pub(crate) fn send_retried(
        &self,
        ah: &Arc<AddressHandle>,
        mad: &[u8; MAD_SIZE],
        timeout_ms: u32,
        retries: u8,
        owner: SendOwner,
    ) -> Result<OutstandingSend> {
        let seq = owner.seq;
        // SAFETY: The agent is registered by the type invariant.
        let buf = unsafe {
            post_mad(
                self.0,
                ah.clone(),
                mad,
                timeout_ms,
                retries,
                Some(owner),
                false,
            )
        }?;
        // INVARIANT: the buffer was just posted; `owner`'s CEP keeps the value until its
        // `send_done` for `seq`, which the shim calls before freeing the buffer.
        Ok(OutstandingSend { buf, seq })
    }

    /// Our GID at `index` on the agent's port.
    pub(crate) fn gid(&self, index: u8) -> Result<[u8; 16]> {
        let mut gid = [0u8; 16];
        // SAFETY: The agent is registered by the type invariant; `gid` has room for 16 bytes.
        to_result(unsafe { shim::cepm_shim_query_gid(self.0.as_ptr(), index, gid.as_mut_ptr()) })?;
        Ok(gid)
    }

    /// Whether the agent's port has `gid` in its GID table (of any GID type).
    pub(crate) fn has_gid(&self, gid: &[u8; 16]) -> bool {
        // SAFETY: The agent is registered by the type invariant; `gid` is 16 readable bytes.
        unsafe { shim::cepm_shim_agent_has_gid(self.0.as_ptr(), gid.as_ptr()) }
    }

    /// An address handle on the agent's port for the peer `info` describes. Callable under a
    /// spinlock.
    pub(crate) fn create_ah(&self, info: &AhInfo) -> Result<Arc<AddressHandle>> {
        // SAFETY: The agent is registered by the type invariant; `info` is readable.
        let ah = from_err_ptr(unsafe { shim::cepm_shim_create_ah(self.0.as_ptr(), info) })?;
        let ptr = NonNull::new(ah).ok_or(EINVAL)?;
        // INVARIANT: `rdma_create_ah` returned a new AH that only we reference.
        Ok(Arc::new(AddressHandle { ptr }, GFP_ATOMIC)?)
    }
}

/// A CM MAD agent (class 0x07, version 2, method SEND) on one port.
///
/// # Invariants
///
/// `agent` is registered and attached to the port behind `port`, a reference obtained from
/// [`Arc::into_foreign`], owned by this value and released after unregistration.
pub(crate) struct MadAgent {
    agent: NonNull<shim::ib_mad_agent>,
    port: *mut c_void,
    role: AgentRole,
}

// SAFETY: Unregistering an agent is allowed from any thread.
unsafe impl Send for MadAgent {}
// SAFETY: `&MadAgent` gives no access to the agent.
unsafe impl Sync for MadAgent {}

/// What a port's agent is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AgentRole {
    /// Owns the CM class: receives every CM MAD, sends all but REPs.
    Cm,
    /// Send-only, for REPs: the MAD layer's flow control on the main agent's outstanding
    /// requests (REQs, DREQs) can then never hold a REP back, so mutual connect storms cannot
    /// deadlock (Linux's `rep_agent`, 2025).
    Rep,
}

impl MadAgent {
    /// Registers the agent; for [`AgentRole::Cm`], its received MADs go to
    /// [`CmPort::mad_received`] on `port`.
    ///
    /// Fails with `EINVAL` when another CM (the in-tree `ib_cm`) already owns the class.
    pub(crate) fn register(device: &IbDevice, port: Arc<CmPort>, role: AgentRole) -> Result<Self> {
        let port_num = port.num();
        let ctx = port.into_foreign();
        // SAFETY: The device is valid by its type invariant; `ctx` stays valid until we call
        // `from_foreign` on it below or in `drop`.
        let agent = from_err_ptr(unsafe {
            shim::cepm_shim_agent_register(
                device.ptr.as_ptr(),
                port_num,
                ctx,
                role == AgentRole::Rep,
            )
        });
        match agent.ok().and_then(NonNull::new) {
            Some(agent) => {
                // SAFETY: `ctx` came from `into_foreign` above and is owned by the new value.
                let port = unsafe { <Arc<CmPort> as ForeignOwnable>::borrow(ctx) };
                // INVARIANT: registered just now; detached in `drop` before unregistering.
                port.attach_agent(role, AttachedAgent(agent));
                // INVARIANT: The agent is registered with `ctx` as its context.
                Ok(Self {
                    agent,
                    port: ctx,
                    role,
                })
            }
            None => {
                // SAFETY: `ctx` came from `into_foreign` above and no agent uses it.
                drop(unsafe { Arc::<CmPort>::from_foreign(ctx) });
                Err(agent.err().unwrap_or(ENOMEM))
            }
        }
    }
}

impl Drop for MadAgent {
    fn drop(&mut self) {
        // SAFETY: `port` is live until `from_foreign` below, by the type invariant.
        let port = unsafe { <Arc<CmPort> as ForeignOwnable>::borrow(self.port) };
        // No new send can start once the port has no agent.
        port.detach_agent(self.role);
        // SAFETY: The agent is registered by the type invariant; unregistering flushes its
        // sends and waits until no handler runs, so nothing uses the context afterwards.
        unsafe { shim::cepm_shim_agent_unregister(self.agent.as_ptr()) };
        // SAFETY: By the type invariant `port` came from `Arc::into_foreign` and is owned by us.
        drop(unsafe { Arc::<CmPort>::from_foreign(self.port) });
    }
}

/// An address handle: where a MAD goes (for RoCE, GIDs and the rest of the GRH).
///
/// # Invariants
///
/// `ptr` is a live AH owned by this value.
pub(crate) struct AddressHandle {
    ptr: NonNull<shim::ib_ah>,
}

// SAFETY: Destroying an AH is allowed from any thread, in any context.
unsafe impl Send for AddressHandle {}
// SAFETY: `&AddressHandle` only lends the pointer to the MAD layer, which shares AHs freely.
unsafe impl Sync for AddressHandle {}

impl Drop for AddressHandle {
    fn drop(&mut self) {
        // SAFETY: By the type invariant the AH is live and ours; every send using it holds an
        // `Arc` to it, so none is pending.
        unsafe { shim::cepm_shim_destroy_ah(self.ptr.as_ptr()) };
    }
}

/// Where an address handle points: the shim's `struct cepm_ah_info`.
pub(crate) type AhInfo = shim::cepm_ah_info;

impl AddressHandle {
    /// What the AH points at.
    pub(crate) fn info(&self) -> Result<AhInfo> {
        let mut info = AhInfo::default();
        // SAFETY: The AH is live by the type invariant and `info` is writable.
        to_result(unsafe { shim::cepm_shim_query_ah(self.ptr.as_ptr(), &mut info) })?;
        Ok(info)
    }
}

/// The CEP waiting for a retried send's outcome, and which of its sends this is.
pub(crate) struct SendOwner {
    pub(crate) cep: Arc<Cep>,
    pub(crate) seq: u64,
}

/// What the MAD layer holds while a MAD is in flight: it keeps the AH alive and knows whom to
/// tell about the outcome.
struct InFlight {
    _ah: Arc<AddressHandle>,
    owner: Option<SendOwner>,
}

/// A retried MAD still in flight, which its owner may cancel.
///
/// # Invariants
///
/// `buf` is a send buffer the MAD layer has not freed. Only [`AgentRef::send_retried`] creates
/// values, and it hands them to the [`SendOwner`]'s CEP, which drops the value no later than in
/// its `send_done` for `seq`, which runs before the MAD layer frees the buffer.
pub(crate) struct OutstandingSend {
    buf: NonNull<shim::ib_mad_send_buf>,
    seq: u64,
}

// SAFETY: Cancelling a send is allowed from any thread.
unsafe impl Send for OutstandingSend {}
// SAFETY: `&OutstandingSend` only allows `cancel`, which the MAD layer serialises.
unsafe impl Sync for OutstandingSend {}

impl OutstandingSend {
    /// Which send of its owner this is.
    pub(crate) fn seq(&self) -> u64 {
        self.seq
    }

    /// Stops resending; the completion then reports it as cancelled (or has already come).
    pub(crate) fn cancel(&self) {
        // SAFETY: The buffer is not freed yet, by the type invariant.
        unsafe { shim::cepm_shim_cancel_mad(self.buf.as_ptr()) };
    }

    /// Waits `timeout_ms` for the answer from now on (the peer sent an MRA).
    pub(crate) fn extend(&self, timeout_ms: u32) -> Result {
        // SAFETY: The buffer is not freed yet, by the type invariant.
        to_result(unsafe { shim::cepm_shim_modify_mad(self.buf.as_ptr(), timeout_ms) })
    }
}

/// Posts `mad` through `agent` to `ah`; the AH lives until the send completes. A non-zero
/// `timeout_ms` keeps it outstanding, resent up to `retries` times.
///
/// # Safety
///
/// `agent` is a registered agent.
unsafe fn post_mad(
    agent: NonNull<shim::ib_mad_agent>,
    ah: Arc<AddressHandle>,
    mad: &[u8; MAD_SIZE],
    timeout_ms: u32,
    retries: u8,
    owner: Option<SendOwner>,
    may_sleep: bool,
) -> Result<NonNull<shim::ib_mad_send_buf>> {
    let flags = if may_sleep { GFP_KERNEL } else { GFP_ATOMIC };
    let ah_ptr = ah.ptr.as_ptr();
    let timeout = c_int::try_from(timeout_ms).map_err(|_| EINVAL)?;
    let ctx = KBox::new(InFlight { _ah: ah, owner }, flags)?.into_foreign();
    // SAFETY: `agent` is registered (function safety requirement), `ah_ptr` is kept alive by
    // `ctx`, which the MAD layer owns until `cepm_rust_send_done`, and `mad` is 256 bytes.
    let sent = from_err_ptr(unsafe {
        shim::cepm_shim_send_mad(
            agent.as_ptr(),
            ah_ptr,
            0,
            mad.as_ptr(),
            timeout,
            retries.into(),
            ctx,
            may_sleep,
        )
    });
    match sent.ok().and_then(NonNull::new) {
        Some(buf) => Ok(buf),
        None => {
            // SAFETY: The send was not posted, so `ctx` is still ours; it came from
            // `into_foreign`.
            drop(unsafe { KBox::<InFlight>::from_foreign(ctx) });
            Err(sent.err().unwrap_or(EINVAL))
        }
    }
}

/// A MAD being received: valid only inside the agent's receive callback.
///
/// # Invariants
///
/// `agent` is the registered agent that received `recv`, and `recv` is the MAD layer's receive
/// work completion, both valid for `'a`.
pub(crate) struct ReceivedMad<'a> {
    agent: NonNull<shim::ib_mad_agent>,
    recv: NonNull<shim::ib_mad_recv_wc>,
    bytes: &'a [u8],
}

impl ReceivedMad<'_> {
    /// The MAD as received (256 bytes unless the sender was broken).
    pub(crate) fn bytes(&self) -> &[u8] {
        self.bytes
    }

    /// Sends `mad` once (no retries) back to the sender of this MAD. May sleep.
    pub(crate) fn reply(&self, mad: &[u8; MAD_SIZE]) -> Result {
        let ah = self.reply_ah()?;
        // SAFETY: The agent is registered: it is receiving this MAD.
        unsafe { post_mad(self.agent, ah, mad, 0, 0, None, true) }.map(|_| ())
    }

    /// An address handle for answering the sender later (it outlives this MAD). May sleep.
    pub(crate) fn reply_ah(&self) -> Result<Arc<AddressHandle>> {
        // SAFETY: Both pointers are valid during the callback by the type invariant.
        let ah = from_err_ptr(unsafe {
            shim::cepm_shim_recv_reply_ah(self.agent.as_ptr(), self.recv.as_ptr())
        })?;
        let ah = NonNull::new(ah).ok_or(EINVAL)?;
        // INVARIANT: `ib_create_ah_from_wc` returned a new AH that only we reference.
        Ok(Arc::new(AddressHandle { ptr: ah }, GFP_KERNEL)?)
    }
}

/// `ib_client.add`.
///
/// # Safety
///
/// `device` is a registered device; called only by the shim's client.
#[no_mangle]
unsafe extern "C" fn cepm_rust_add_device(device: *mut shim::ib_device) -> c_int {
    let Some(ptr) = NonNull::new(device) else {
        return EINVAL.to_errno();
    };
    // INVARIANT: We are in `add`; the registry drops the device in `remove` at the latest.
    match registry::add_device(IbDevice { ptr }) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// `ib_client.remove`.
///
/// # Safety
///
/// `device` was passed to a successful [`cepm_rust_add_device`]; called only by the shim.
#[no_mangle]
unsafe extern "C" fn cepm_rust_remove_device(device: *mut shim::ib_device) {
    registry::remove_device(device.cast());
}

/// `ib_client.rename`.
///
/// # Safety
///
/// `device` was passed to a successful [`cepm_rust_add_device`] and not yet to
/// [`cepm_rust_remove_device`]; called only by the shim.
#[no_mangle]
unsafe extern "C" fn cepm_rust_rename_device(device: *mut shim::ib_device) {
    let Some(ptr) = NonNull::new(device) else {
        return;
    };
    // INVARIANT: ib_core calls `rename` only for a device whose `add` succeeded, before its
    // `remove`; this value does not outlive the callback.
    registry::rename_device(&IbDevice { ptr });
}

/// An agent's receive handler.
///
/// # Safety
///
/// `port_ctx` is the context of `agent`, a [`MadAgent`] that is still registered; `recv` is the
/// receive completion being handled and `mad` points at `len` readable bytes, both for the
/// duration of the call.
#[no_mangle]
unsafe extern "C" fn cepm_rust_recv_mad(
    port_ctx: *mut c_void,
    agent: *mut shim::ib_mad_agent,
    recv: *mut shim::ib_mad_recv_wc,
    mad: *const u8,
    len: usize,
) {
    // SAFETY: By the function's safety requirements `port_ctx` came from `Arc::into_foreign` and
    // is not released before the agent is unregistered, which waits for this call.
    let port = unsafe { <Arc<CmPort> as ForeignOwnable>::borrow(port_ctx) };
    let (Some(agent), Some(recv)) = (NonNull::new(agent), NonNull::new(recv)) else {
        return;
    };
    let bytes = if mad.is_null() {
        &[][..]
    } else {
        // SAFETY: By the function's safety requirements `mad` is valid for `len` bytes.
        unsafe { core::slice::from_raw_parts(mad, len) }
    };
    // INVARIANT: `agent` and `recv` are valid for the duration of this call, which outlives
    // `received`.
    let received = ReceivedMad { agent, recv, bytes };
    Arc::from(port).mad_received(&received);
}

/// An agent's send completion handler.
///
/// # Safety
///
/// `msg_ctx` is the context [`post_mad`] gave the MAD layer for this send, passed back once.
#[no_mangle]
unsafe extern "C" fn cepm_rust_send_done(
    port_ctx: *mut c_void,
    msg_ctx: *mut c_void,
    status: c_int,
) {
    // SAFETY: The MAD layer returns the context `post_mad` made with `into_foreign`, exactly once.
    let in_flight = unsafe { KBox::<InFlight>::from_foreign(msg_ctx) };
    if let Some(owner) = &in_flight.owner {
        owner.cep.send_done(owner.seq, status);
    }
    drop(in_flight);
    // SAFETY: As in `cepm_rust_recv_mad`: the agent is registered while its handlers run.
    let port = unsafe { <Arc<CmPort> as ForeignOwnable>::borrow(port_ctx) };
    if status != 0 && status != ECANCELED.to_errno() {
        port.count_tx_error();
    }
}

/// `open` of `/dev/cepm`: the file's context, or an `ERR_PTR`.
#[no_mangle]
extern "C" fn cepm_rust_open() -> *mut c_void {
    match CepmFile::open() {
        Ok(file) => file.into_foreign(),
        Err(e) => e.to_ptr(),
    }
}

/// `release` of `/dev/cepm`.
///
/// # Safety
///
/// `ctx` came from [`cepm_rust_open`] and no other file operation runs or will run on it.
#[no_mangle]
unsafe extern "C" fn cepm_rust_release(ctx: *mut c_void) {
    // SAFETY: By the function's safety requirements we own the reference `open` made.
    let file = unsafe { Arc::<CepmFile>::from_foreign(ctx) };
    file.release();
}

/// `unlocked_ioctl` of `/dev/cepm`.
///
/// # Safety
///
/// `ctx` came from [`cepm_rust_open`] and is not released during the call.
#[no_mangle]
unsafe extern "C" fn cepm_rust_ioctl(ctx: *mut c_void, cmd: u32, arg: usize) -> isize {
    // SAFETY: By the function's safety requirements `ctx` is a live `Arc<CepmFile>`.
    let file = unsafe { Arc::<CepmFile>::borrow(ctx) };
    match Arc::from(file).ioctl(cmd, arg) {
        Ok(()) => 0,
        Err(e) => e.to_errno() as isize,
    }
}

/// `read` of `/dev/cepm`: whole `struct cepm_event` records.
///
/// # Safety
///
/// `ctx` came from [`cepm_rust_open`] and is not released during the call.
#[no_mangle]
unsafe extern "C" fn cepm_rust_read(
    ctx: *mut c_void,
    buf: usize,
    len: usize,
    nonblock: bool,
) -> isize {
    // SAFETY: By the function's safety requirements `ctx` is a live `Arc<CepmFile>`.
    let file = unsafe { Arc::<CepmFile>::borrow(ctx) };
    match file.read(kernel::uaccess::UserPtr::from_addr(buf), len, nonblock) {
        Ok(n) => isize::try_from(n).unwrap_or(isize::MAX),
        Err(e) => e.to_errno() as isize,
    }
}

/// `poll` of `/dev/cepm`.
///
/// # Safety
///
/// `ctx` came from [`cepm_rust_open`] and is not released during the call; `file` is the file
/// being polled and `wait` its poll table (possibly null), both valid during the call.
#[no_mangle]
unsafe extern "C" fn cepm_rust_poll(
    ctx: *mut c_void,
    file: *mut shim::file,
    wait: *mut shim::poll_table_struct,
) -> u32 {
    // SAFETY: By the function's safety requirements `ctx` is a live `Arc<CepmFile>`.
    let cepm_file = unsafe { Arc::<CepmFile>::borrow(ctx) };
    // SAFETY: `file` is valid during the call (function safety requirements); the opaque
    // bindgen type and the kernel's are the same C struct.
    let vfs_file =
        unsafe { kernel::fs::File::from_raw_file(file.cast::<kernel::bindings::file>()) };
    // SAFETY: `wait` is the poll table of this poll call, valid during it (or null, which
    // `PollTable` accepts).
    let table = unsafe { kernel::sync::poll::PollTable::from_raw(wait.cast()) };
    cepm_file.poll(vfs_file, table)
}
