// SPDX-License-Identifier: GPL-2.0

//! RDMA abstractions over the shim: an RDMA device between its `add` and `remove` callbacks,
//! MAD agents (registered, attached to their port, and lent to senders only under the port's
//! lock), address handles, retried sends in flight, and received MADs.

use core::marker::PhantomData;
use core::{
    ffi::c_void,
    ops::RangeInclusive,
    ptr::NonNull, //
};
use kernel::{
    alloc::Flags,
    error::{
        from_err_ptr,
        to_result, //
    },
    prelude::*,
    sync::Arc,
    types::ForeignOwnable,
};

use super::{
    bindings,
    Net,
    NetId,
    MAD_SIZE, //
};
use crate::cep::Cep;

/// The flags for what a send allocates and keeps: its context, which holds the AH made for it
/// (here), and the MAD layer's buffer (the shim). Charged to the memory cgroup of the task that sends
/// (docs/abi.md, "Privileges and limits"): in a user's ioctl that user; in the MAD layer's
/// work or a timer nobody's, since no user's task runs there. `GFP_ATOMIC` unless `may_sleep`.
/// The kernel crate names `__GFP_ACCOUNT` only inside `GFP_KERNEL_ACCOUNT`.
fn send_alloc_flags(may_sleep: bool) -> Flags {
    if may_sleep {
        GFP_KERNEL_ACCOUNT
    } else {
        GFP_ATOMIC | (GFP_KERNEL_ACCOUNT & !GFP_KERNEL)
    }
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
    pub(super) ptr: NonNull<bindings::ib_device>,
}

// SAFETY: The shim functions called through `IbDevice`'s safe methods only read immutable
// device attributes (port range, capabilities) or take the device's own locks, so any thread
// may call them. The name, which a rename rewrites, is read only by the `unsafe` `name`, whose
// callers hold renames off.
unsafe impl Send for IbDevice {}
// SAFETY: See `Send`; `&IbDevice` offers nothing that needs exclusive access.
unsafe impl Sync for IbDevice {}

impl IbDevice {
    /// Whether this value wraps the C device `ptr`.
    pub(crate) fn is(&self, ptr: *mut c_void) -> bool {
        self.ptr.as_ptr().cast::<c_void>() == ptr
    }

    /// The C pointer, to compare with [`IbDevice::is`].
    pub(crate) fn as_ptr(&self) -> *mut bindings::ib_device {
        self.ptr.as_ptr()
    }

    /// The device's name.
    ///
    /// # Safety
    ///
    /// The device cannot be renamed during the call: the caller runs inside the client's
    /// `add` or `rename` callback, where ib_core holds `devices_rwsem` (a rename rewrites the
    /// name in place, and a read racing it could see half of each). The registry keeps what
    /// these callbacks read.
    pub(super) unsafe fn name(&self) -> DeviceName {
        let mut name = [0u8; 64];
        // SAFETY: The device is valid by the type invariant, the buffer's length is passed, and
        // by the function's safety requirements the name is not being replaced.
        unsafe {
            bindings::cepm_shim_device_name(self.ptr.as_ptr(), name.as_mut_ptr(), name.len())
        };
        name
    }

    /// The device's node GUID: the CA GUID in CM messages.
    pub(crate) fn node_guid(&self) -> u64 {
        // SAFETY: The device is valid by the type invariant.
        unsafe { bindings::cepm_shim_device_node_guid(self.ptr.as_ptr()) }
    }

    /// The CA's local ACK delay exponent.
    pub(crate) fn ack_delay(&self) -> u8 {
        // SAFETY: The device is valid by the type invariant.
        unsafe { bindings::cepm_shim_device_ack_delay(self.ptr.as_ptr()) }
    }

    /// Whether files of `net` may use the device at all: always in the shared RDMA netns
    /// mode, only in the device's own namespace in the exclusive one.
    pub(crate) fn usable_in(&self, net: &Net) -> bool {
        // SAFETY: The device is valid by the type invariant, the namespace by `Net`'s.
        unsafe { bindings::cepm_shim_device_in_net(self.ptr.as_ptr(), net.as_ptr()) }
    }

    /// The device's port numbers.
    pub(crate) fn ports(&self) -> RangeInclusive<u32> {
        // SAFETY: The device is valid by the type invariant.
        let (start, end) = unsafe {
            (
                bindings::cepm_shim_start_port(self.ptr.as_ptr()),
                bindings::cepm_shim_end_port(self.ptr.as_ptr()),
            )
        };
        start..=end
    }

    /// Whether `port` speaks the IB CM protocol (InfiniBand or RoCE, not iWARP).
    pub(crate) fn port_has_ib_cm(&self, port: u32) -> bool {
        // SAFETY: The device is valid by the type invariant; the shim checks nothing else.
        unsafe { bindings::cepm_shim_port_has_ib_cm(self.ptr.as_ptr(), port) }
    }

    /// Whether `port` runs RoCE.
    pub(crate) fn port_is_roce(&self, port: u32) -> bool {
        // SAFETY: The device is valid by the type invariant.
        unsafe { bindings::cepm_shim_port_is_roce(self.ptr.as_ptr(), port) }
    }
}

/// A registered MAD agent, as the port it serves keeps it while attached. Neither `Copy` nor
/// `Clone`: the only way to use it is [`AttachedAgent::get`] under the port's lock.
///
/// # Invariants
///
/// The agent is registered for as long as the [`MadHandler`] holding this value has it
/// attached: [`MadAgent`] attaches it after registration and detaches it (under the handler's
/// lock) before unregistering.
pub(crate) struct AttachedAgent(NonNull<bindings::ib_mad_agent>);

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
pub(crate) struct AgentRef<'a>(
    NonNull<bindings::ib_mad_agent>,
    PhantomData<&'a AttachedAgent>,
);

impl AgentRef<'_> {
    /// The high 32 bits of the TIDs of this agent's requests.
    pub(crate) fn hi_tid(&self) -> u32 {
        // SAFETY: The agent is registered by the type invariant.
        unsafe { bindings::cepm_shim_agent_hi_tid(self.0.as_ptr()) }
    }

    /// Sends `mad` once to the peer `to` describes, through an AH made for this send alone
    /// (it goes when the send completes). `may_sleep` is false under a spinlock.
    pub(crate) fn send_once(&self, to: &AhInfo, mad: &[u8; MAD_SIZE], may_sleep: bool) -> Result {
        let ah = self.create_ah(to)?;
        // SAFETY: The agent is registered by the type invariant.
        unsafe { post_mad(self.0, ah, mad, 0, 0, None, may_sleep) }.map(|_| ())
    }

    /// Sends `mad` to the peer `to` describes, resent every `timeout_ms` up to `retries`
    /// times until cancelled, through an AH made for this send alone; `owner` hears the
    /// outcome through [`Cep::send_done`]. Callable under a spinlock.
    pub(crate) fn send_retried(
        &self,
        to: &AhInfo,
        mad: &[u8; MAD_SIZE],
        timeout_ms: u32,
        retries: u8,
        owner: SendOwner,
    ) -> Result<OutstandingSend> {
        let ah = self.create_ah(to)?;
        let seq = owner.seq;
        // SAFETY: The agent is registered by the type invariant.
        let buf = unsafe { post_mad(self.0, ah, mad, timeout_ms, retries, Some(owner), false) }?;
        // INVARIANT: the buffer was just posted; `owner`'s CEP keeps the value until its
        // `send_done` for `seq`, which the shim calls before freeing the buffer.
        Ok(OutstandingSend { buf, seq })
    }

    /// Whether an AH to the peer `info` describes can be made on the agent's port now: the
    /// check a user's request gets before its first send. Callable under a spinlock.
    pub(crate) fn check_reachable(&self, info: &AhInfo) -> Result {
        self.create_ah(info).map(drop)
    }

    /// Our GID at `index` on the agent's port.
    pub(crate) fn gid(&self, index: u8) -> Result<[u8; 16]> {
        let mut gid = [0u8; 16];
        // SAFETY: The agent is registered by the type invariant; `gid` has room for 16 bytes.
        to_result(unsafe {
            bindings::cepm_shim_query_gid(self.0.as_ptr(), index, gid.as_mut_ptr())
        })?;
        Ok(gid)
    }

    /// Our GID at `index` on the agent's port, if it is of the type cepm speaks there (RoCE
    /// v2 on a RoCE port, IB on an IB port), with the network namespace that owns it: the
    /// source of a path a user gives. `EINVAL` if the port has no GID there, or one of
    /// another type; `ENETUNREACH` if its namespace may not use the device.
    pub(crate) fn source_gid(&self, index: u8) -> Result<([u8; 16], NetId)> {
        let mut gid = [0u8; 16];
        let mut cookie = 0;
        // SAFETY: The agent is registered by the type invariant; `gid` has room for 16 bytes
        // and `cookie` is writable.
        to_result(unsafe {
            bindings::cepm_shim_query_source_gid(
                self.0.as_ptr(),
                index,
                gid.as_mut_ptr(),
                &mut cookie,
            )
        })?;
        Ok((gid, NetId::from_cookie(cookie)))
    }

    /// The MAC of the next hop from our GID at `sgid_index` to `dgid`, from the routes and
    /// neighbour table of the GID's namespace, written to `mac`, which a port without MACs
    /// (IB) leaves alone. `EAGAIN`, its resolution started, while the neighbour table does not
    /// know it; `ENETUNREACH` without a route by the GID's netdev, or for a netdev that is not
    /// Ethernet. Never sleeps.
    pub(crate) fn next_hop_mac(
        &self,
        sgid_index: u8,
        dgid: &[u8; 16],
        mac: &mut [u8; 6],
    ) -> Result {
        // SAFETY: The agent is registered by the type invariant; `dgid` is 16 readable bytes
        // and `mac` has room for 6.
        to_result(unsafe {
            bindings::cepm_shim_next_hop_mac(
                self.0.as_ptr(),
                sgid_index,
                dgid.as_ptr(),
                mac.as_mut_ptr(),
            )
        })
    }

    /// The network namespace that owns `gid` (of any GID type) on the agent's port: `ENOENT`
    /// if the port has no such GID, `ENETUNREACH` if its namespace may not use the device.
    pub(crate) fn gid_net(&self, gid: &[u8; 16]) -> Result<NetId> {
        let mut cookie = 0;
        // SAFETY: The agent is registered by the type invariant; `gid` is 16 readable bytes
        // and `cookie` is writable.
        to_result(unsafe {
            bindings::cepm_shim_gid_net(self.0.as_ptr(), gid.as_ptr(), &mut cookie)
        })?;
        Ok(NetId::from_cookie(cookie))
    }

    /// The network namespace that owns our GID at `index`, as [`Self::gid_net`].
    pub(crate) fn gid_index_net(&self, index: u8) -> Result<NetId> {
        let mut cookie = 0;
        // SAFETY: The agent is registered by the type invariant; `cookie` is writable.
        to_result(unsafe {
            bindings::cepm_shim_gid_index_net(self.0.as_ptr(), index, &mut cookie)
        })?;
        Ok(NetId::from_cookie(cookie))
    }

    /// An address handle on the agent's port for the peer `info` describes, for one send.
    /// Never sleeps.
    fn create_ah(&self, info: &AhInfo) -> Result<AddressHandle> {
        // SAFETY: The agent is registered by the type invariant; `info` is readable.
        let ah = from_err_ptr(unsafe { bindings::cepm_shim_create_ah(self.0.as_ptr(), info) })?;
        let ptr = NonNull::new(ah).ok_or(EINVAL)?;
        // INVARIANT: `rdma_create_ah` returned a new AH that only we reference.
        Ok(AddressHandle { ptr })
    }
}

/// What a MAD agent calls into: the owner of the port it serves (cepm's `CmPort`). The agent
/// holds an `Arc` of it while registered.
///
/// # Safety
///
/// [`AgentRef`] (which senders use) relies on the implementor to keep the
/// [`AttachedAgent`] it is given by [`MadHandler::attach_agent`] only until it is given
/// `None` for that role, which the agent does before it unregisters, and to lend it out only
/// under a lock that `attach_agent` also takes, so that no send can still use it then.
pub(crate) unsafe trait MadHandler: Send + Sync + Sized + 'static {
    /// Makes `agent` the sender for `role` (after registration), or none (`None`, before
    /// unregistration: no send may start through it any more).
    fn attach_agent(&self, role: AgentRole, agent: Option<AttachedAgent>);

    /// A MAD arrived. Process context (the MAD layer's worker for the port): may sleep.
    fn mad_received(self: &Arc<Self>, mad: &ReceivedMad<'_>);

    /// A send through the agent finished with `status`: 0, or a negative errno
    /// (`ETIMEDOUT` out of retries, `ECANCELED`, `EIO`). Its [`SendOwner`], if any, has been
    /// told already.
    fn send_done(&self, status: c_int);
}

/// A CM MAD agent (class 0x07, version 2, method SEND) on one port, feeding `H`.
///
/// # Invariants
///
/// `agent` is registered with [`Self::RECV`] and [`Self::SEND_DONE`] as its callbacks and
/// attached to the handler behind `handler`, a reference obtained from
/// [`Arc::into_foreign`], owned by this value and released after unregistration.
pub(crate) struct MadAgent<H: MadHandler> {
    agent: NonNull<bindings::ib_mad_agent>,
    handler: *mut c_void,
    role: AgentRole,
    _handler: PhantomData<Arc<H>>,
}

// SAFETY: Unregistering an agent is allowed from any thread; the handler is `Send + Sync`.
unsafe impl<H: MadHandler> Send for MadAgent<H> {}
// SAFETY: `&MadAgent` gives no access to the agent or the handler.
unsafe impl<H: MadHandler> Sync for MadAgent<H> {}

/// What a port's agent is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AgentRole {
    /// Owns the CM class: receives every CM MAD, and sends those that wait for no answer (REJ,
    /// RTU, MRA, DREP, SIDR_REP, and every stateless answer).
    Cm,
    /// Registers no class (no receive handler), so the MAD layer's flow control for solicited
    /// MADs leaves it alone: an agent that receives may have `recv_queue_size / 4` (128) MADs
    /// waiting for answers, and queues the rest behind them, untimed, in one queue for all of
    /// the port's users (`ib_register_mad_agent`, `mad_is_for_backlog` in
    /// drivers/infiniband/core/mad.c). Sends every MAD that waits for an answer (REQ, REP, DREQ,
    /// SIDR_REQ), so that no user's or peer's unanswered ones, however long their tries (up to
    /// 2.3 hours, lengthened in place by an MRA), hold anyone else's back; REPs first went here
    /// so that requests could never hold one back (Linux's `rep_agent`, 2025).
    SendOnly,
}

impl<H: MadHandler> MadAgent<H> {
    /// The callbacks C calls, checked against the header's typedefs.
    const RECV: bindings::cepm_recv_mad_fn = Some(Self::recv_callback);
    const SEND_DONE: bindings::cepm_send_done_fn = Some(Self::send_done_callback);

    /// Registers the agent; for [`AgentRole::Cm`], its received MADs go to
    /// [`MadHandler::mad_received`] of `handler`.
    ///
    /// Fails with `EINVAL` when another CM (the in-tree `ib_cm`) already owns the class.
    pub(crate) fn register(
        device: &IbDevice,
        port_num: u32,
        handler: Arc<H>,
        role: AgentRole,
    ) -> Result<Self> {
        let ctx = handler.into_foreign();
        // SAFETY: The device is valid by its type invariant; `ctx` stays valid until we call
        // `from_foreign` on it below or in `drop`, and the callbacks expect an `Arc<H>`'s.
        let agent = from_err_ptr(unsafe {
            bindings::cepm_shim_agent_register(
                device.ptr.as_ptr(),
                port_num,
                role == AgentRole::SendOnly,
                ctx,
                Self::RECV,
                Self::SEND_DONE,
            )
        });
        match agent.ok().and_then(NonNull::new) {
            Some(agent) => {
                // SAFETY: `ctx` came from `into_foreign` above and is owned by the new value.
                let handler = unsafe { <Arc<H> as ForeignOwnable>::borrow(ctx) };
                // INVARIANT: registered just now; detached in `drop` before unregistering.
                handler.attach_agent(role, Some(AttachedAgent(agent)));
                // INVARIANT: The agent is registered with `ctx` as its handler's context.
                Ok(Self {
                    agent,
                    handler: ctx,
                    role,
                    _handler: PhantomData,
                })
            }
            None => {
                // SAFETY: `ctx` came from `into_foreign` above and no agent uses it.
                drop(unsafe { Arc::<H>::from_foreign(ctx) });
                Err(agent.err().unwrap_or(ENOMEM))
            }
        }
    }

    /// The agent's receive callback.
    ///
    /// # Safety
    ///
    /// `ctx` is the handler context of `agent`, a `MadAgent<H>` that is still registered;
    /// `recv` is the receive completion being handled and `mad` points at `len` readable
    /// bytes, both for the duration of the call.
    unsafe extern "C" fn recv_callback(
        ctx: *mut c_void,
        agent: *mut bindings::ib_mad_agent,
        recv: *mut bindings::ib_mad_recv_wc,
        mad: *const u8,
        len: usize,
    ) {
        // SAFETY: By the function's safety requirements `ctx` came from `Arc::into_foreign` and
        // is not released before the agent is unregistered, which waits for this call.
        let handler = unsafe { <Arc<H> as ForeignOwnable>::borrow(ctx) };
        let (Some(agent), Some(recv)) = (NonNull::new(agent), NonNull::new(recv)) else {
            return;
        };
        let bytes = if mad.is_null() {
            &[][..]
        } else {
            // SAFETY: By the function's safety requirements `mad` is valid for `len` bytes.
            unsafe { core::slice::from_raw_parts(mad, len) }
        };
        // INVARIANT: `agent` and `recv` are valid for the duration of this call, which
        // outlives `received`.
        let received = ReceivedMad { agent, recv, bytes };
        Arc::from(handler).mad_received(&received);
    }

    /// The agent's send completion callback.
    ///
    /// # Safety
    ///
    /// `ctx` is as in [`Self::recv_callback`]; `msg_ctx` is the context [`post_mad`] gave the
    /// MAD layer for this send, passed back once.
    unsafe extern "C" fn send_done_callback(ctx: *mut c_void, msg_ctx: *mut c_void, status: c_int) {
        // SAFETY: The MAD layer returns the context `post_mad` made with `into_foreign`,
        // exactly once.
        let in_flight = unsafe { KBox::<InFlight>::from_foreign(msg_ctx) };
        if let Some(owner) = &in_flight.owner {
            owner.cep.send_done(owner.seq, status);
        }
        drop(in_flight);
        // SAFETY: As in `recv_callback`: the agent is registered while its callbacks run.
        let handler = unsafe { <Arc<H> as ForeignOwnable>::borrow(ctx) };
        handler.send_done(status);
    }
}

impl<H: MadHandler> Drop for MadAgent<H> {
    fn drop(&mut self) {
        // SAFETY: `handler` is live until `from_foreign` below, by the type invariant.
        let handler = unsafe { <Arc<H> as ForeignOwnable>::borrow(self.handler) };
        // No new send can start once the handler has no agent.
        handler.attach_agent(self.role, None);
        // SAFETY: The agent is registered by the type invariant; unregistering flushes its
        // sends and waits until no callback runs, so nothing uses the context afterwards.
        unsafe { bindings::cepm_shim_agent_unregister(self.agent.as_ptr()) };
        // SAFETY: By the type invariant `handler` came from `Arc::into_foreign` and is ours.
        drop(unsafe { Arc::<H>::from_foreign(self.handler) });
    }
}

/// An address handle: where a MAD goes (for RoCE, GIDs and the rest of the GRH). Made for one
/// send and held by it alone ([`InFlight`]), as Linux's CM does (`cm_alloc_msg`,
/// `cm_free_msg`): a device has few (rxe: 32,767), so nothing may keep one while no MAD is
/// outstanding, and the MAD layer completes every send before its agent is unregistered,
/// so none outlives its device.
///
/// # Invariants
///
/// `ptr` is a live AH owned by this value.
pub(super) struct AddressHandle {
    ptr: NonNull<bindings::ib_ah>,
}

// SAFETY: Destroying an AH is allowed from any thread, in any context.
unsafe impl Send for AddressHandle {}

impl Drop for AddressHandle {
    fn drop(&mut self) {
        // SAFETY: By the type invariant the AH is live and ours; the one send that used it
        // holds it (in its `InFlight`) until it completes, so none is pending.
        unsafe { bindings::cepm_shim_destroy_ah(self.ptr.as_ptr()) };
    }
}

/// Where an address handle points: the shim's `struct cepm_ah_info`.
pub(crate) type AhInfo = bindings::cepm_ah_info;

/// The CEP waiting for a retried send's outcome, and which of its sends this is.
pub(crate) struct SendOwner {
    pub(crate) cep: Arc<Cep>,
    pub(crate) seq: u64,
}

/// What the MAD layer holds while a MAD is in flight: it keeps the AH alive and knows whom to
/// tell about the outcome.
pub(super) struct InFlight {
    _ah: AddressHandle,
    pub(super) owner: Option<SendOwner>,
}

/// A retried MAD in flight, which its owner may cancel or give more time.
///
/// The MAD layer frees the buffer once the send's completion has run, and that completion is
/// the [`SendOwner`]'s `send_done` for `seq`, which takes the owner's lock and drops the value
/// held in the owner's slot. A value is thus known to name a live buffer only while its owner's
/// lock is held with the value still in, or just taken from, that slot: hence the `unsafe` on
/// [`OutstandingSend::cancel`] and [`OutstandingSend::extend`].
///
/// # Invariants
///
/// `buf` is a send buffer of the MAD layer, for the send numbered `seq` of its owner. Only
/// [`AgentRef::send_retried`] creates values, and it hands them to the [`SendOwner`]'s CEP.
pub(crate) struct OutstandingSend {
    buf: NonNull<bindings::ib_mad_send_buf>,
    seq: u64,
}

// SAFETY: Cancelling or modifying a send is allowed from any thread.
unsafe impl Send for OutstandingSend {}
// SAFETY: `&OutstandingSend` only allows `cancel` and `extend`, which the MAD layer serialises
// under its agent's lock.
unsafe impl Sync for OutstandingSend {}

impl OutstandingSend {
    /// Which send of its owner this is.
    pub(crate) fn seq(&self) -> u64 {
        self.seq
    }

    /// Stops resending; the completion then reports it as cancelled.
    ///
    /// # Safety
    ///
    /// The caller holds the lock of the owner, and `self` is in the owner's slot or was taken
    /// from it under this hold of the lock: the completion has not run, so the buffer is live.
    pub(crate) unsafe fn cancel(&self) {
        // SAFETY: The buffer is live (function safety requirement).
        unsafe { bindings::cepm_shim_cancel_mad(self.buf.as_ptr()) };
    }

    /// Waits `timeout_ms` for the answer from now on (the peer sent an MRA).
    ///
    /// # Safety
    ///
    /// As for [`OutstandingSend::cancel`].
    pub(crate) unsafe fn extend(&self, timeout_ms: u32) -> Result {
        // SAFETY: The buffer is live (function safety requirement).
        to_result(unsafe { bindings::cepm_shim_modify_mad(self.buf.as_ptr(), timeout_ms) })
    }
}

/// Posts `mad` through `agent` to `ah`; the AH lives until the send completes. A non-zero
/// `timeout_ms` keeps it outstanding, resent up to `retries` times.
///
/// # Safety
///
/// `agent` is a registered agent.
unsafe fn post_mad(
    agent: NonNull<bindings::ib_mad_agent>,
    ah: AddressHandle,
    mad: &[u8; MAD_SIZE],
    timeout_ms: u32,
    retries: u8,
    owner: Option<SendOwner>,
    may_sleep: bool,
) -> Result<NonNull<bindings::ib_mad_send_buf>> {
    let flags = send_alloc_flags(may_sleep);
    let ah_ptr = ah.ptr.as_ptr();
    let timeout = c_int::try_from(timeout_ms).map_err(|_| EINVAL)?;
    let ctx = KBox::new(InFlight { _ah: ah, owner }, flags)?.into_foreign();
    // SAFETY: `agent` is registered (function safety requirement), `ah_ptr` is kept alive by
    // `ctx`, which the MAD layer owns until the send completion callback, and `mad` is 256 bytes.
    let sent = from_err_ptr(unsafe {
        bindings::cepm_shim_send_mad(
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
    pub(super) agent: NonNull<bindings::ib_mad_agent>,
    pub(super) recv: NonNull<bindings::ib_mad_recv_wc>,
    pub(super) bytes: &'a [u8],
}

impl ReceivedMad<'_> {
    /// The MAD as received (256 bytes unless the sender was broken).
    pub(crate) fn bytes(&self) -> &[u8] {
        self.bytes
    }

    /// Sends `mad` once (no retries) back to the sender of this MAD. May sleep.
    pub(crate) fn reply(&self, mad: &[u8; MAD_SIZE]) -> Result {
        // SAFETY: Both pointers are valid during the callback by the type invariant.
        let ah = from_err_ptr(unsafe {
            bindings::cepm_shim_recv_reply_ah(self.agent.as_ptr(), self.recv.as_ptr())
        })?;
        let ptr = NonNull::new(ah).ok_or(EINVAL)?;
        // INVARIANT: `ib_create_ah_from_wc` returned a new AH that only we reference.
        let ah = AddressHandle { ptr };
        // SAFETY: The agent is registered: it is receiving this MAD.
        unsafe { post_mad(self.agent, ah, mad, 0, 0, None, true) }.map(|_| ())
    }

    /// Where answers to the sender of this MAD go, later too: each send makes its AH from
    /// it. May sleep.
    pub(crate) fn reply_info(&self) -> Result<AhInfo> {
        let mut info = AhInfo::default();
        // SAFETY: Both pointers are valid during the callback by the type invariant; `info`
        // is writable.
        to_result(unsafe {
            bindings::cepm_shim_recv_reply_info(self.agent.as_ptr(), self.recv.as_ptr(), &mut info)
        })?;
        Ok(info)
    }
}
