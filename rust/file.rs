// SPDX-License-Identifier: GPL-2.0

//! An open `/dev/cepm`: its CEP handles, its event queue, and the ioctls.
//!
//! Handles name CEPs only within this file, so a process can never reach another's CEP. The
//! file lock is never held while a CEP lock is taken (CEPs deliver events into the file under
//! their own lock; the lock order is in [`crate::cep`]).

use core::mem::size_of;
use kernel::{
    fs::File,
    new_spinlock,
    prelude::*,
    rbtree::{
        RBTree,
        RBTreeNodeReservation, //
    },
    sync::{
        poll::{
            PollCondVarBox,
            PollTable, //
        },
        Arc, SpinLock,
    },
    time::{
        Instant,
        Monotonic, //
    },
    transmute::AsBytes,
    uaccess::{
        UserPtr,
        UserSlice, //
    },
};

mod bind;
mod event_queue;
mod ioctl_arg;
mod migrate;
pub(crate) mod ring;

use event_queue::EventQueue;
use ioctl_arg::{
    IoctlArg,
    KnownIoctl, //
};
use ring::Ring;

/// Every ioctl, as the header numbers it for its struct's size today (see [`ioctl_arg`]).
/// A struct that grows keeps its entry, with the size of its first version.
const KNOWN_IOCTLS: [KnownIoctl; 24] = [
    KnownIoctl::new(uapi::CEPM_IOCTL_QUERY),
    KnownIoctl::new(uapi::CEPM_IOCTL_CREATE),
    KnownIoctl::new(uapi::CEPM_IOCTL_DESTROY),
    // ABI 7 added the address scope.
    KnownIoctl::grown(
        uapi::CEPM_IOCTL_LISTEN,
        core::mem::offset_of!(uapi::cepm_listen, addr),
    ),
    // ABI 6 added `local_psn`.
    KnownIoctl::grown(
        uapi::CEPM_IOCTL_GET_REQUEST,
        core::mem::offset_of!(uapi::cepm_get_request, local_psn),
    ),
    KnownIoctl::new(uapi::CEPM_IOCTL_REJECT),
    KnownIoctl::new(uapi::CEPM_IOCTL_QUERY_CEP),
    // ABI 7 added the ECE fields of these three.
    KnownIoctl::grown(
        uapi::CEPM_IOCTL_GET_PRIVATE_DATA,
        core::mem::offset_of!(uapi::cepm_private_data, ece_vendor_id),
    ),
    KnownIoctl::grown(
        uapi::CEPM_IOCTL_CONNECT,
        core::mem::offset_of!(uapi::cepm_connect, ece_vendor_id),
    ),
    KnownIoctl::grown(
        uapi::CEPM_IOCTL_PREPARE_REP,
        core::mem::offset_of!(uapi::cepm_accept, ece_vendor_id),
    ),
    KnownIoctl::new(uapi::CEPM_IOCTL_SEND_REP),
    KnownIoctl::new(uapi::CEPM_IOCTL_SEND_RTU),
    KnownIoctl::new(uapi::CEPM_IOCTL_INIT_QP_ATTR),
    KnownIoctl::new(uapi::CEPM_IOCTL_SEND_DREQ),
    KnownIoctl::new(uapi::CEPM_IOCTL_SEND_DREP),
    KnownIoctl::new(uapi::CEPM_IOCTL_PREPARE_MRA),
    KnownIoctl::new(uapi::CEPM_IOCTL_SIDR_REQ),
    KnownIoctl::new(uapi::CEPM_IOCTL_SIDR_REP),
    KnownIoctl::new(uapi::CEPM_IOCTL_LIST_CEPS),
    KnownIoctl::new(uapi::CEPM_IOCTL_ESTABLISH),
    KnownIoctl::new(uapi::CEPM_IOCTL_MONITOR),
    KnownIoctl::new(uapi::CEPM_IOCTL_MIGRATE),
    KnownIoctl::new(uapi::CEPM_IOCTL_POST_EVENT),
    KnownIoctl::new(uapi::CEPM_IOCTL_BIND),
];

use crate::{
    cep::{
        Cep,
        Owner,
        RejectArgs,
        REJ_PDATA_MAX, //
    },
    context::Cm,
    port::CmPort,
    ports::PortKey,
    proto::{
        listen_scope::{
            IpAddr,
            ListenScope, //
        },
        service_id::{
            parse_ip_service_id,
            ServiceRange, //
        },
    },
    shim::{
        self,
        Net,
        NetId, //
    },
    uapi::{
        self,
        cepm_port_info,
        cepm_query, //
    },
    users::{
        Charge,
        Opener,
        Resource,
        Usage,
        UserCharge, //
    },
};

/// One CEP as this file knows it.
struct Handle {
    cep: Arc<Cep>,
    /// Events for this CEP read so far (reported by destroy).
    events_reported: u32,
    /// The CEP, counted against the file and its user while the handle exists.
    _counted: Charge,
    /// Its listen, counted likewise once it listens.
    listen: Option<Charge>,
    /// Its port, counted likewise once it holds one (`CEPM_IOC_BIND`).
    port: Option<Charge>,
}

/// A handle number, the room to file it under and its charge, taken where sleeping is
/// allowed: [`CepmFile::fill_handle`] attaches the CEP.
struct ReservedHandle {
    id: u32,
    node: RBTreeNodeReservation<u32, Handle>,
    counted: Charge,
}

/// Events that may wait in one file: one that finds the queue full is lost, and the next
/// `read` after the queue has drained says so (`EOVERFLOW`), so none is lost silently. The
/// `event_queue_max` module parameter (default `CEPM_EVENT_QUEUE_MAX`), within 1..=65536.
fn event_queue_max() -> usize {
    let max = crate::shim::params().event_queue_max;
    usize::try_from(max.clamp(1, 65536)).unwrap_or(uapi::CEPM_EVENT_QUEUE_MAX as usize)
}

/// The fields of [`CepmFile`] protected by its lock.
struct FileInner {
    /// The file's CEPs by handle.
    handles: RBTree<u32, Handle>,
    next_handle: u32,
    /// Room allocated with the first handle ([`CepmFile::reserve_handle`]).
    events: EventQueue,
    /// Events lost since the last `read` (the queue was full).
    events_lost: u32,
    /// Set by release: no handle or event is added afterwards.
    closed: bool,
    /// Set by `CEPM_IOC_MONITOR`: the file reads trace records, and owns no CEP.
    monitor: Option<MonitorQueue>,
}

impl FileInner {
    /// `EBUSY` if the file monitors already or owns a CEP: it cannot become a monitor.
    fn may_monitor(&self) -> Result {
        if self.monitor.is_some() || !self.handles.is_empty() {
            return Err(EBUSY);
        }
        Ok(())
    }

    /// Files `cep` under the reserved handle, with its listen's and its port's charges if it
    /// has them: `EBADF`
    /// once the file is closed, `EBUSY` if it monitors (it may have become a monitor since the
    /// handle was reserved). Never allocates.
    fn add_handle(
        &mut self,
        reserved: ReservedHandle,
        cep: Arc<Cep>,
        (listen, port): (Option<Charge>, Option<Charge>),
    ) -> Result {
        if self.closed {
            return Err(EBADF);
        }
        if self.monitor.is_some() {
            return Err(EBUSY);
        }
        let ReservedHandle { id, node, counted } = reserved;
        self.handles.insert(node.into_node(
            id,
            Handle {
                cep,
                events_reported: 0,
                _counted: counted,
                listen,
                port,
            },
        ));
        Ok(())
    }
}

/// A monitoring file's records.
struct MonitorQueue {
    /// This monitor, counted against the file's user (`max_monitors_per_user`).
    _counted: UserCharge,
    started: Instant<Monotonic>,
    /// At most `CEPM_MONITOR_QUEUE_MAX` records, room allocated when monitoring starts.
    traces: Ring<uapi::cepm_trace>,
    /// Records dropped since the last one queued (the queue was full).
    lost: u32,
}

/// An open `/dev/cepm`.
#[pin_data]
pub(crate) struct CepmFile {
    /// The CM the file's CEPs belong to.
    cm: Arc<Cm>,
    /// Whose file it is.
    opener: Opener,
    /// What the file holds, against the per-file limits.
    usage: Arc<Usage>,
    #[pin]
    inner: SpinLock<FileInner>,
    /// Signalled when an event is queued. Boxed, so that it is freed after an RCU grace
    /// period (epoll may look at it until then) rather than waiting for one, as a
    /// `PollCondVar` in the file would in every close.
    readable: PollCondVarBox,
}

const POLLIN: u32 = kernel::bindings::POLLIN | kernel::bindings::POLLRDNORM;

impl CepmFile {
    /// A new, empty file state, on `cm`.
    pub(crate) fn open(cm: Arc<Cm>) -> Result<Arc<Self>> {
        let opener = Opener::current(&cm)?;
        let events = EventQueue::new(opener.user.clone());
        let readable = PollCondVarBox::new(c"CepmFile::readable", kernel::static_lock_class!())?;
        Arc::pin_init(
            try_pin_init!(Self {
                cm,
                opener,
                usage: Usage::new()?,
                inner <- new_spinlock!(FileInner {
                    handles: RBTree::new(),
                    next_handle: 1,
                    events,
                    events_lost: 0,
                    closed: false,
                    monitor: None,
                }, "CepmFile::inner"),
                readable,
            }),
            GFP_KERNEL_ACCOUNT,
        )
    }

    /// The user whose file this is.
    pub(crate) fn uid(&self) -> kernel::task::Kuid {
        self.opener.uid
    }

    /// The network namespace the file was opened in.
    pub(crate) fn net(&self) -> &Net {
        &self.opener.net
    }

    /// The last close: destroy every CEP this file owns, or stop monitoring.
    pub(crate) fn release(self: Arc<Self>) {
        let (handles, monitoring) = {
            let mut inner = self.inner.lock();
            inner.closed = true;
            inner.events.clear();
            (
                core::mem::replace(&mut inner.handles, RBTree::new()),
                inner.monitor.is_some(),
            )
        };
        if monitoring {
            self.cm.monitors.remove(&self);
            // Off the list, it gets nothing more: its queue and its count go now, after the
            // unlock (freeing the queue may sleep).
            let queue = self.inner.lock().monitor.take();
            drop(queue);
        }
        for (&id, handle) in handles.iter() {
            // Only this file names them now: MIGRATE holds the file it moves a CEP from open,
            // so none moves during the last close.
            let _ = handle.cep.destroy_by(&self, id);
        }
    }

    /// Queues `event`; called by CEPs under their lock. Never allocates: a full queue
    /// counts the event as lost, which the next `read` reports.
    pub(crate) fn push_event(&self, event: uapi::cepm_event) {
        let _ = self.queue_event(event, true);
    }

    /// Queues `event` made in userspace (`CEPM_IOC_POST_EVENT`), under its CEP's lock as
    /// [`CepmFile::push_event`]: `ENOSPC` instead of a loss if there is no room for it.
    pub(crate) fn try_push_event(&self, event: uapi::cepm_event) -> Result {
        self.queue_event(event, false)
    }

    /// Queues `event` if its handle is still this file's (`EINVAL`); `ENOSPC` if the queue or
    /// the user's share of events is full, a loss the next `read` reports if `count_loss`.
    fn queue_event(&self, event: uapi::cepm_event, count_loss: bool) -> Result {
        let mut inner = self.inner.lock();
        if inner.closed || inner.handles.get(&event.handle).is_none() {
            return Err(EINVAL);
        }
        let queued = inner
            .events
            .push(event, shim::params().max_events_per_user)
            .map_err(|()| ENOSPC);
        if queued.is_err() {
            if !count_loss {
                return queued;
            }
            inner.events_lost = inner.events_lost.saturating_add(1);
        }
        drop(inner);
        self.readable.notify_all();
        queued
    }

    /// `lost` events for `handle` were lost before they reached this file (a parked CEP's
    /// room was full): the next `read` after the queue drains says so (`EOVERFLOW`).
    pub(crate) fn note_lost(&self, handle: u32, lost: u32) {
        let mut inner = self.inner.lock();
        if lost == 0 || inner.closed || inner.handles.get(&handle).is_none() {
            return;
        }
        inner.events_lost = inner.events_lost.saturating_add(lost);
        drop(inner);
        self.readable.notify_all();
    }

    /// A request of listener `handle` was claimed, and `still_pending` wait: if more
    /// `REQ_RECEIVED`s are queued for it than requests wait (the caller claimed before it
    /// read), the oldest is stale and goes.
    /// Called by the listener under its own lock (CEP → file, the usual order), so that no
    /// request can be offered between the two counts.
    pub(crate) fn purge_claimed_req(&self, handle: u32, still_pending: usize) {
        let is_req = |ev: &uapi::cepm_event| {
            ev.handle == handle
                && matches!(
                    ev.event,
                    uapi::CEPM_EVENT_REQ_RECEIVED | uapi::CEPM_EVENT_SIDR_REQ_RECEIVED
                )
        };
        let mut inner = self.inner.lock();
        if inner.events.count(is_req) > still_pending {
            inner.events.remove_first(is_req);
        }
    }

    /// Queues a monitor's copy of an event that happened at `now`; called under the CEP's
    /// lock and the monitor list's.
    /// Only CEPs the monitor sees ([`Opener::sees`]): `net` is the CEP's network namespace,
    /// `owner` the user of its file (`None`: not claimed yet).
    pub(crate) fn push_trace(
        &self,
        mut record: uapi::cepm_trace,
        now: Instant<Monotonic>,
        (net, owner): (NetId, Option<kernel::task::Kuid>),
    ) {
        if !self.opener.sees(net, owner) {
            return;
        }
        let mut inner = self.inner.lock();
        let Some(m) = inner.monitor.as_mut() else {
            return;
        };
        record.timestamp_ns = (now - m.started).as_nanos().try_into().unwrap_or(0);
        record.lost = m.lost;
        if m.traces.push(record).is_ok() {
            m.lost = 0;
            drop(inner);
            self.readable.notify_all();
        } else {
            m.lost = m.lost.saturating_add(1);
        }
    }

    /// `read`: as many whole events as fit in `len` bytes, waiting for one unless `nonblock`.
    /// A monitor reads trace records instead.
    pub(crate) fn read(&self, buf: UserPtr, len: usize, nonblock: bool) -> Result<usize> {
        if self.inner.lock().monitor.is_some() {
            return self.read_records(
                buf,
                len,
                nonblock,
                |inner| inner.monitor.as_ref().map(|_| ()).ok_or(EINVAL),
                |inner| inner.monitor.as_ref().map_or(0, |m| m.traces.len()),
                |inner| inner.monitor.as_mut()?.traces.pop(),
            );
        }
        self.read_records(
            buf,
            len,
            nonblock,
            |inner| {
                // Lost events are reported once the queue has drained, in their place.
                if inner.events.is_empty() && inner.events_lost > 0 {
                    inner.events_lost = 0;
                    return Err(EOVERFLOW);
                }
                Ok(())
            },
            |inner| inner.events.len(),
            |inner| {
                let ev = inner.events.pop()?;
                if let Some(h) = inner.handles.get_mut(&ev.handle) {
                    h.events_reported = h.events_reported.saturating_add(1);
                }
                Some(ev)
            },
        )
    }

    /// The body of `read` for either kind of record: fails with what `check` says, or waits
    /// (unless `nonblock`) until `queued` is non-zero; then takes as many records with `take`
    /// as fit in `len` bytes, a few at a time, and copies each few out after dropping the
    /// lock, since copying may fault and sleep. Never allocates.
    fn read_records<T: AsBytes + Copy + Default>(
        &self,
        buf: UserPtr,
        len: usize,
        nonblock: bool,
        mut check: impl FnMut(&mut FileInner) -> Result,
        queued: impl Fn(&FileInner) -> usize,
        mut take: impl FnMut(&mut FileInner) -> Option<T>,
    ) -> Result<usize> {
        const BATCH: usize = 8;
        let size = size_of::<T>();
        let max = len / size;
        if max == 0 {
            return Err(EINVAL);
        }
        let mut out = UserSlice::new(buf, max * size).writer();
        let mut inner = self.inner.lock();
        loop {
            check(&mut inner)?;
            if queued(&inner) > 0 {
                break;
            }
            if nonblock {
                return Err(EAGAIN);
            }
            if self.readable.wait_interruptible(&mut inner) {
                return Err(ERESTARTSYS);
            }
        }
        let mut done = 0;
        loop {
            let mut batch = [T::default(); BATCH];
            let mut n = 0;
            while n < BATCH && done + n < max {
                let Some(record) = take(&mut inner) else {
                    break;
                };
                if let Some(slot) = batch.get_mut(n) {
                    *slot = record;
                }
                n += 1;
            }
            drop(inner);
            for record in batch.iter().take(n) {
                out.write(record)?;
            }
            done += n;
            if n < BATCH || done == max {
                return Ok(done * size);
            }
            inner = self.inner.lock();
        }
    }

    /// `poll`: readable when an event is queued.
    pub(crate) fn poll(&self, file: &File, table: PollTable<'_>) -> u32 {
        table.register_wait(file, &self.readable);
        let inner = self.inner.lock();
        let empty = match &inner.monitor {
            Some(m) => m.traces.is_empty(),
            // A loss to report makes the file readable too (`read` says `EOVERFLOW`).
            None => inner.events.is_empty() && inner.events_lost == 0,
        };
        if empty {
            0
        } else {
            POLLIN
        }
    }

    /// Dispatches an ioctl.
    pub(crate) fn ioctl(self: &Arc<Self>, cmd: u32, arg: usize) -> Result {
        let (cmd, arg) =
            ioctl_arg::find(cmd, UserPtr::from_addr(arg), &KNOWN_IOCTLS).ok_or(ENOTTY)?;
        match cmd {
            uapi::CEPM_IOCTL_QUERY => self.query(arg),
            uapi::CEPM_IOCTL_CREATE => self.create(arg),
            uapi::CEPM_IOCTL_DESTROY => self.destroy(arg),
            uapi::CEPM_IOCTL_LISTEN => self.listen(arg),
            uapi::CEPM_IOCTL_GET_REQUEST => self.get_request(arg),
            uapi::CEPM_IOCTL_REJECT => self.reject(arg),
            uapi::CEPM_IOCTL_QUERY_CEP => self.query_cep(arg),
            uapi::CEPM_IOCTL_GET_PRIVATE_DATA => self.get_private_data(arg),
            uapi::CEPM_IOCTL_CONNECT => self.connect(arg),
            uapi::CEPM_IOCTL_PREPARE_REP => self.prepare_rep(arg),
            uapi::CEPM_IOCTL_SEND_REP => self.send_rep(arg),
            uapi::CEPM_IOCTL_SEND_RTU => self.send_pdata_msg(arg, |cep, pdata| cep.send_rtu(pdata)),
            uapi::CEPM_IOCTL_INIT_QP_ATTR => self.init_qp_attr(arg),
            uapi::CEPM_IOCTL_SEND_DREQ => {
                self.send_pdata_msg(arg, |cep, pdata| cep.send_dreq(pdata))
            }
            uapi::CEPM_IOCTL_PREPARE_MRA => self.prepare_mra(arg),
            uapi::CEPM_IOCTL_LIST_CEPS => self.list_ceps(arg),
            uapi::CEPM_IOCTL_SIDR_REQ => self.sidr_req(arg),
            uapi::CEPM_IOCTL_SIDR_REP => self.sidr_rep(arg),
            uapi::CEPM_IOCTL_SEND_DREP => {
                self.send_pdata_msg(arg, |cep, pdata| cep.send_drep(pdata))
            }
            uapi::CEPM_IOCTL_ESTABLISH => self.establish(arg),
            uapi::CEPM_IOCTL_MONITOR => self.start_monitor(arg),
            uapi::CEPM_IOCTL_MIGRATE => self.migrate(arg),
            uapi::CEPM_IOCTL_POST_EVENT => self.post_event(arg),
            uapi::CEPM_IOCTL_BIND => self.bind(arg),
            _ => Err(ENOTTY),
        }
    }

    /// The CEP named `handle` on this file.
    fn cep(&self, handle: u32) -> Result<Arc<Cep>> {
        let inner = self.inner.lock();
        inner
            .handles
            .get(&handle)
            .map(|h| h.cep.clone())
            .ok_or(EINVAL)
    }

    fn create(self: &Arc<Self>, arg: IoctlArg) -> Result {
        let mut req: uapi::cepm_create = arg.read()?;
        if req.reserved != 0 {
            return Err(EINVAL);
        }
        // The handle must exist before the CEP can raise events, so reserve its number first.
        let reserved = self.reserve_handle()?;
        let handle = reserved.id;
        let owner = Owner {
            file: self.clone(),
            handle,
            context: req.user_context,
        };
        let cep = Cep::create(&self.cm, owner)?;
        self.fill_handle(reserved, cep.clone())?;
        req.handle = handle;
        if let Err(e) = arg.write(&req) {
            self.forget(&cep, handle);
            return Err(e);
        }
        Ok(())
    }

    /// Takes the next handle number, the room to file it under and the CEP's charge against
    /// the limits; `fill_handle` attaches the CEP. The file's event queue gets its room with
    /// the first handle. May sleep.
    fn reserve_handle(&self) -> Result<ReservedHandle> {
        self.reserve_handle_over(0, 0)
    }

    /// Counts a CEP waiting in the backlog of a listener this file owns against its user, as
    /// a CEP the user owned: `EDQUOT` when the user holds its limit. The user, not the file:
    /// the listener may move to another of the user's files with its backlog. Never sleeps:
    /// the listener's lock is held, in the MAD handler.
    pub(crate) fn count_pending(&self) -> Result<UserCharge> {
        UserCharge::take(
            &self.opener,
            Resource::Ceps,
            shim::params().max_ceps_per_user,
        )
    }

    /// [`CepmFile::reserve_handle`], letting the file go `file_slack` CEPs over its limit and
    /// the user `user_slack` (a move between two of the user's files, or a claim of a request
    /// the listener's backlog counts, holds two charges for a while).
    fn reserve_handle_over(&self, file_slack: u32, user_slack: u32) -> Result<ReservedHandle> {
        let params = shim::params();
        let counted = Charge::take(
            &self.usage,
            &self.opener,
            Resource::Ceps,
            params.max_ceps_per_file.saturating_add(file_slack),
            params.max_ceps_per_user.saturating_add(user_slack),
        )?;
        let node = RBTreeNodeReservation::new(GFP_KERNEL_ACCOUNT)?;
        let mut room = None;
        if !self.inner.lock().events.has_room() {
            room = Some(Ring::with_capacity(event_queue_max())?);
        }
        let mut inner = self.inner.lock();
        if inner.closed {
            return Err(EBADF);
        }
        if inner.monitor.is_some() {
            return Err(EBUSY);
        }
        if crate::shim::fault_fail_handle() {
            return Err(EMFILE);
        }
        let id = inner.next_handle;
        inner.next_handle = id.checked_add(1).ok_or(EMFILE)?;
        let unused = room.take().and_then(|fresh| inner.events.give_room(fresh));
        // On every path the guard goes before the room (declared later, it is dropped first),
        // so room left unused (an error, or another call gave the file its queue meanwhile)
        // is never freed under the lock, where freeing a vmalloc'ed queue could sleep.
        drop(inner);
        drop(unused);
        Ok(ReservedHandle { id, node, counted })
    }

    /// Attaches `cep` to the reserved handle; on failure the CEP is destroyed.
    fn fill_handle(&self, reserved: ReservedHandle, cep: Arc<Cep>) -> Result {
        let added = self
            .inner
            .lock()
            .add_handle(reserved, cep.clone(), (None, None));
        if added.is_err() {
            cep.destroy();
        }
        added
    }

    /// Forgets `handle` and its queued events; returns its CEP and the events read for it.
    /// Its charges are given back.
    fn remove_handle(&self, handle: u32) -> Option<(Arc<Cep>, u32)> {
        let removed = {
            let mut inner = self.inner.lock();
            let h = inner.handles.remove(&handle)?;
            inner.events.retain(|ev| ev.handle != handle);
            h
        };
        Some((removed.cep.clone(), removed.events_reported))
    }

    /// The count of the port the CEP this file names `handle` holds, taken out of its handle
    /// as the CEP lets go of the port ([`Cep::clear_bound`], under the CEP's lock).
    pub(crate) fn take_port_charge(&self, handle: u32) -> Option<Charge> {
        self.inner.lock().handles.get_mut(&handle)?.port.take()
    }

    /// Destroys `cep`, which this file names `handle`, and forgets the handle: for a CEP made
    /// in a call that then failed, so that it does not outlive the call.
    fn forget(&self, cep: &Arc<Cep>, handle: u32) {
        // Destroy first, as `destroy` does: no event can then follow the purge. If the CEP
        // has moved to another file meanwhile, it stays there, and the handle is gone already.
        if cep.destroy_by(self, handle).is_ok() {
            self.remove_handle(handle);
        }
    }

    fn destroy(&self, arg: IoctlArg) -> Result {
        let mut req: uapi::cepm_destroy = arg.read()?;
        let cep = self.cep(req.handle)?;
        // Destroy first: afterwards the CEP raises no event, so none can slip in after the
        // handle's queue is purged. A CEP that has moved to another file is not ours to end.
        cep.destroy_by(self, req.handle)?;
        let (_, reported) = self.remove_handle(req.handle).ok_or(EINVAL)?;
        req.events_reported = reported;
        arg.write(&req)
    }

    /// `CEPM_IOC_POST_EVENT`: an event made in userspace, queued behind the CEP's own.
    fn post_event(&self, arg: IoctlArg) -> Result {
        let req: uapi::cepm_post_event = arg.read()?;
        if req.reserved != 0
            || !(uapi::CEPM_EVENT_USER_FIRST..=uapi::CEPM_EVENT_USER_LAST).contains(&req.event)
        {
            return Err(EINVAL);
        }
        self.cep(req.handle)?
            .post_user_event(self, req.handle, req.event, req.status)
    }

    fn listen(&self, arg: IoctlArg) -> Result {
        let req: uapi::cepm_listen = arg.read()?;
        if req.reserved != 0 || req.reserved2 != [0; 6] {
            return Err(EINVAL);
        }
        let range = ServiceRange {
            id: req.service_id,
            mask: if req.service_mask == 0 {
                u64::MAX
            } else {
                req.service_mask
            },
        };
        let scope = listen_scope(&req, range)?;
        if range.includes_privileged_port() && !self.opener.net_bind_service {
            return Err(EACCES);
        }
        // A masked listen claims every ID of its range no one listens on yet, ahead of their
        // later exact listens (docs/abi.md, "Privileges and limits"): not for every user.
        if range.mask != u64::MAX && !self.opener.net_admin {
            return Err(EPERM);
        }
        let cep = self.cep(req.handle)?;
        let port = self.listen_port(&cep, req.handle, &range, &scope)?;
        let listened = self.listen_as(&cep, req.handle, (range, scope), port.key);
        if let (Err(_), Some(key), true) = (&listened, port.key, port.taken) {
            self.give_back_port(&cep, key);
        }
        listened
    }

    /// LISTEN's second half, once its port is settled: counts the listen and makes `cep` a
    /// listener.
    fn listen_as(
        &self,
        cep: &Arc<Cep>,
        handle: u32,
        (range, scope): (ServiceRange, ListenScope),
        bound: Option<PortKey>,
    ) -> Result {
        // A test holds this window open: a MIGRATE may move the CEP before it is locked below.
        shim::fault_listen_delay();
        let params = shim::params();
        let counted = Charge::take(
            &self.usage,
            &self.opener,
            Resource::Listens,
            params.max_listens_per_file,
            params.max_listens_per_user,
        )?;
        // The charge joins the handle under the CEP's lock: the CEP is this file's then, and
        // cannot move before it is counted here.
        cep.listen((range, scope), &self.opener, (self, handle), bound, || {
            if let Some(handle) = self.inner.lock().handles.get_mut(&handle) {
                handle.listen = Some(counted);
            }
        })
    }

    fn get_request(self: &Arc<Self>, arg: IoctlArg) -> Result {
        let mut req: uapi::cepm_get_request = arg.read()?;
        // Output parts are zero on input, reserved bytes included.
        if [req.handle, req.local_psn, req.reserved] != [0; 3]
            || req.req.reserved != [0; 2]
            || req.req.flow_control != 0
            || req.reserved2 != [0; 4]
            || req.path.as_bytes().iter().any(|&b| b != 0)
        {
            return Err(EINVAL);
        }
        let listener = self.cep(req.listen_handle)?;
        loop {
            // The handle first: a REQ taken from the backlog must end up owned or destroyed,
            // and a handle number that goes unused costs nothing.
            // One over the user's limit for a moment: the request taken is counted against the
            // user by its listener's backlog until it is taken.
            let reserved = self.reserve_handle_over(0, 1)?;
            let handle = reserved.id;
            let child = listener.take_pending((self, req.listen_handle))?;
            let owner = Owner {
                file: self.clone(),
                handle,
                context: req.user_context,
            };
            self.fill_handle(reserved, child.clone())?;
            match child.claim(owner) {
                Ok(claimed) => {
                    req.handle = handle;
                    req.req = claimed.req;
                    req.local_psn = claimed.local_psn;
                    req.path = claimed.path;
                    let written = arg.write(&req);
                    // The caller cannot learn the handle: the CEP must not outlive the call.
                    if written.is_err() {
                        self.forget(&child, handle);
                    }
                    return written;
                }
                // The peer gave up while the REQ waited: forget it and try the next.
                Err(_) => self.forget(&child, handle),
            }
        }
    }

    fn reject(&self, arg: IoctlArg) -> Result {
        let req: uapi::cepm_reject = arg.read()?;
        let ari = req.ari.get(..usize::from(req.ari_len)).ok_or(E2BIG)?;
        let pdata = req.pdata.get(..usize::from(req.pdata_len)).ok_or(E2BIG)?;
        if pdata.len() > REJ_PDATA_MAX {
            return Err(E2BIG);
        }
        let cep = self.cep(req.handle)?;
        cep.reject(&RejectArgs {
            reason: req.reason,
            ari,
            pdata,
        })
    }

    fn connect(&self, arg: IoctlArg) -> Result {
        let req: uapi::cepm_connect = arg.read()?;
        if req.reserved != 0 || req.reserved2 != [0; 4] || req.flow_control > 1 {
            return Err(EINVAL);
        }
        if usize::from(req.pdata_len) > uapi::CEPM_REQ_PDATA_MAX as usize {
            return Err(E2BIG);
        }
        check_path(&req.path)?;
        if !matches!(
            u32::from(req.qp_type),
            uapi::CEPM_TRANSPORT_RC | uapi::CEPM_TRANSPORT_UC | uapi::CEPM_TRANSPORT_XRC
        ) || req.max_cm_retries > 15
        {
            return Err(EINVAL);
        }
        let cep = self.cep(req.handle)?;
        cep.connect(self.request_port(&req.dev_name, req.port_num)?, &req)
    }

    /// The managed port `num` of the device named `dev_name` that a request (REQ or SIDR_REQ)
    /// leaves from: `ENODEV` if there is none the file's network namespace may use.
    fn request_port(&self, dev_name: &[u8], num: u32) -> Result<Arc<CmPort>> {
        let port = self
            .cm
            .devices
            .find_port(dev_name, num, self.net())
            .ok_or(ENODEV)?;
        // For tests (debugfs's `request_delay_ms`): the device may go while the request holds
        // its port.
        shim::fault_request_delay();
        Ok(port)
    }

    fn prepare_rep(&self, arg: IoctlArg) -> Result {
        let req: uapi::cepm_accept = arg.read()?;
        if req.reserved != 0 || req.reserved_ack_delay != 0 || req.flow_control > 1 {
            return Err(EINVAL);
        }
        if usize::from(req.pdata_len) > uapi::CEPM_REP_PDATA_MAX as usize {
            return Err(E2BIG);
        }
        self.cep(req.handle)?.prepare_rep(&req)
    }

    fn send_rep(&self, arg: IoctlArg) -> Result {
        let req: uapi::cepm_send_rep = arg.read()?;
        if req.reserved != 0 {
            return Err(EINVAL);
        }
        self.cep(req.handle)?.send_rep()
    }

    fn start_monitor(self: &Arc<Self>, arg: IoctlArg) -> Result {
        let req: uapi::cepm_monitor = arg.read()?;
        if req.flags != 0 || req.reserved != 0 {
            return Err(EINVAL);
        }
        // A file that cannot monitor says so before any limit does (checked again below:
        // another call may make it busy meanwhile).
        self.inner.lock().may_monitor()?;
        // Every event walks the monitors, and each holds a queue of 4096 records.
        let counted = UserCharge::take(
            &self.opener,
            Resource::Monitors,
            crate::shim::params().max_monitors_per_user,
        )?;
        let traces = Ring::with_capacity(uapi::CEPM_MONITOR_QUEUE_MAX as usize)?;
        {
            let mut inner = self.inner.lock();
            inner.may_monitor()?;
            inner.monitor = Some(MonitorQueue {
                _counted: counted,
                started: Instant::now(),
                traces,
                lost: 0,
            });
        }
        let added = self.cm.monitors.add(self.clone());
        if added.is_err() {
            // Not on the list, so it would get nothing: the file is as it was. The queue goes
            // after the unlock (freeing it may sleep).
            let queue = self.inner.lock().monitor.take();
            drop(queue);
        }
        added
    }

    fn establish(&self, arg: IoctlArg) -> Result {
        let req: uapi::cepm_establish = arg.read()?;
        if req.reserved != 0 {
            return Err(EINVAL);
        }
        self.cep(req.handle)?.establish()
    }

    /// RTU, DREQ and DREP: a handle and private data.
    fn send_pdata_msg(
        &self,
        arg: IoctlArg,
        send: impl FnOnce(&Arc<Cep>, &[u8]) -> Result,
    ) -> Result {
        let req: uapi::cepm_send_pdata = arg.read()?;
        if req.reserved != [0; 3] {
            return Err(EINVAL);
        }
        let pdata = req.pdata.get(..usize::from(req.pdata_len)).ok_or(E2BIG)?;
        send(&self.cep(req.handle)?, pdata)
    }

    /// `CEPM_IOC_QUERY`: the ABI version and the managed ports the file's network namespace
    /// may use, with their counters, and the CEPs, as `LIST_CEPS` shows them: every user's,
    /// and the counters of every user's MADs, only to `CAP_NET_ADMIN`; to others their own
    /// CEPs and zeroed counters.
    fn query(&self, arg: IoctlArg) -> Result {
        let mut q: cepm_query = arg.read()?;
        if q.reserved != 0 || q.reserved2 != 0 {
            return Err(EINVAL);
        }
        let mut infos = self.cm.devices.port_infos(self.net())?;
        let sees_all = self.opener.sees_all();
        if !sees_all {
            infos.iter_mut().for_each(port_info_without_counters);
        }
        let filled = infos.len().min(q.port_capacity as usize);
        if filled > 0 {
            let ports = UserPtr::from_addr(usize::try_from(q.ports).map_err(|_| EFAULT)?);
            let len = filled
                .checked_mul(size_of::<cepm_port_info>())
                .ok_or(EINVAL)?;
            let mut out = UserSlice::new(ports, len).writer();
            for info in &infos[..filled] {
                out.write(info)?;
            }
        }
        let ceps = if self.opener.sees_every_net() {
            self.cm.tables.count_local()
        } else {
            let mut ceps = self.cm.tables.all_ceps()?;
            ceps.retain(|cep| self.opener.sees(cep.net, cep.owner_uid()));
            ceps.len()
        };
        q.abi_version = uapi::CEPM_ABI_VERSION;
        q.num_ports = u32::try_from(infos.len()).map_err(|_| EOVERFLOW)?;
        q.num_ceps = u32::try_from(ceps).unwrap_or(u32::MAX);
        arg.write(&q)
    }

    fn list_ceps(&self, arg: IoctlArg) -> Result {
        let mut req: uapi::cepm_list = arg.read()?;
        let mut ceps = self.cm.tables.all_ceps()?;
        // Other namespaces' and other users' CEPs only for CAP_NET_ADMIN.
        ceps.retain(|cep| self.opener.sees(cep.net, cep.owner_uid()));
        let filled = ceps.len().min(req.capacity as usize);
        if filled > 0 {
            let out = UserPtr::from_addr(usize::try_from(req.ceps).map_err(|_| EFAULT)?);
            let len = filled
                .checked_mul(size_of::<uapi::cepm_cep_info>())
                .ok_or(EINVAL)?;
            let mut out = UserSlice::new(out, len).writer();
            // Each record is copied out as it is made: no second list in the kernel, and no
            // lock held while copying, which may fault.
            for cep in ceps.iter().take(filled) {
                out.write(&cep.info_for(self))?;
            }
        }
        req.count = u32::try_from(ceps.len()).unwrap_or(u32::MAX);
        arg.write(&req)
    }

    fn sidr_req(&self, arg: IoctlArg) -> Result {
        let req: uapi::cepm_sidr_req = arg.read()?;
        if req.reserved != 0 {
            return Err(EINVAL);
        }
        check_path(&req.path)?;
        if usize::from(req.pdata_len) > uapi::CEPM_SIDR_REQ_PDATA_MAX as usize {
            return Err(E2BIG);
        }
        // The SIDR_REQ carries neither, so its encoding cannot refuse them as a REQ's does.
        if req.max_cm_retries > 15 || req.cm_response_timeout > 31 {
            return Err(EINVAL);
        }
        let cep = self.cep(req.handle)?;
        cep.sidr_req(self.request_port(&req.dev_name, req.port_num)?, &req)
    }

    fn sidr_rep(&self, arg: IoctlArg) -> Result {
        let req: uapi::cepm_sidr_rep = arg.read()?;
        if req.reserved != 0 {
            return Err(EINVAL);
        }
        if usize::from(req.pdata_len) > uapi::CEPM_SIDR_REP_PDATA_MAX as usize
            || usize::from(req.info_len) > uapi::CEPM_REJ_ARI_MAX as usize
        {
            return Err(E2BIG);
        }
        self.cep(req.handle)?.sidr_rep(&req)
    }

    fn prepare_mra(&self, arg: IoctlArg) -> Result {
        let req: uapi::cepm_prepare_mra = arg.read()?;
        const KNOWN: u8 = (uapi::CEPM_MRA_SEND_NOW | uapi::CEPM_MRA_SERVICE_TIMEOUT) as u8;
        let with_timeout = req.flags & uapi::CEPM_MRA_SERVICE_TIMEOUT as u8 != 0;
        if req.reserved != 0
            || req.flags & !KNOWN != 0
            || req.service_timeout > 31
            || (!with_timeout && req.service_timeout != 0)
        {
            return Err(EINVAL);
        }
        let send_now = req.flags & uapi::CEPM_MRA_SEND_NOW as u8 != 0;
        let timeout = with_timeout.then_some(req.service_timeout);
        self.cep(req.handle)?.prepare_mra(send_now, timeout)
    }

    fn init_qp_attr(&self, arg: IoctlArg) -> Result {
        let mut req: uapi::cepm_qp_attr = arg.read()?;
        if req.reserved != [0; 2] || req.ah.reserved != [0; 2] {
            return Err(EINVAL);
        }
        self.cep(req.handle)?.qp_attr(&mut req)?;
        arg.write(&req)
    }

    fn query_cep(&self, arg: IoctlArg) -> Result {
        let req: uapi::cepm_cep_info = arg.read()?;
        if req.reserved != 0 || req.reserved2 != 0 {
            return Err(EINVAL);
        }
        let info = self.cep(req.handle)?.info(req.handle);
        arg.write(&info)
    }

    fn get_private_data(&self, arg: IoctlArg) -> Result {
        let mut req: uapi::cepm_private_data = arg.read()?;
        if req.reserved != 0
            || [req.ece_vendor_id, req.ece_attr_mod] != [0; 2]
            || req.peer.as_bytes().iter().any(|&b| b != 0)
        {
            return Err(EINVAL);
        }
        self.cep(req.handle)?.private_data(&mut req);
        arg.write(&req)
    }
}

/// `info` as a port shows itself to a user who may not see every user's MADs: what it is,
/// and nothing it counted (all else zero, fields added later included).
fn port_info_without_counters(info: &mut cepm_port_info) {
    let mut shown: cepm_port_info = pin_init::zeroed();
    shown.dev_name = info.dev_name;
    shown.port_num = info.port_num;
    shown.flags = info.flags;
    *info = shown;
}

/// The checks a path from userspace passes before any CEP sees it (CONNECT and SIDR_REQ
/// alike; the port checks its source GID): an MTU of the IB enum, a 20-bit flow label, a
/// 4-bit SL, a 5-bit packet lifetime, and zero reserved bytes.
fn check_path(path: &uapi::cepm_path_rec) -> Result {
    if path.reserved != [0; 2]
        || !(1..=5).contains(&path.mtu)
        || path.flow_label >= 1 << 20
        || path.sl > 15
        || path.packet_life_time > 31
    {
        return Err(EINVAL);
    }
    Ok(())
}

/// The scope a LISTEN asks for: `EINVAL` for an unknown scope or flag, an unscoped listen
/// with an address or a flag, an IPv4 address with bytes before its last 4, or a scoped
/// listen under a mask or outside rdma_cm's IP port spaces (only their REQs carry a
/// `cma_hdr`).
fn listen_scope(req: &uapi::cepm_listen, range: ServiceRange) -> Result<ListenScope> {
    let afonly = match u32::from(req.flags) {
        0 => false,
        uapi::CEPM_LISTEN_AFONLY => true,
        _ => return Err(EINVAL),
    };
    let v6 = match u32::from(req.scope) {
        uapi::CEPM_LISTEN_UNSCOPED if req.addr == [0; 16] && !afonly => {
            return Ok(ListenScope::Unscoped)
        }
        uapi::CEPM_LISTEN_IPV4 => false,
        uapi::CEPM_LISTEN_IPV6 => true,
        _ => return Err(EINVAL),
    };
    let addr = IpAddr::checked_slot(v6, &req.addr).ok_or(EINVAL)?;
    if range.mask != u64::MAX || parse_ip_service_id(range.id).is_none() {
        return Err(EINVAL);
    }
    Ok(ListenScope::of(addr, afonly))
}
