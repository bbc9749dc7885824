//! An event channel: one open `/dev/cepm`, the IDs whose CEPs live in it, and the events
//! waiting to be handed out: made in userspace (address and route resolution), or read from
//! the file for an ID other than the one a synchronous call waits for.
//!
//! One thread at a time reads the file ([`handout`]); the others wait for what waits to
//! change. So a synchronous call that waits for its own ID's event (`rdma_accept`,
//! `rdma_get_request`, ...) never takes another ID's: it leaves it for its owner.
//!
//! # Invariants
//!
//! `public` is the first field, so that the `struct rdma_event_channel *` an application holds
//! is a pointer to the whole [`Channel`]. Every ID in `ids` is alive: an ID leaves the map
//! before it is freed, and its queued events leave the queue before that.

use core::ffi::c_int;
use std::{
    collections::{BTreeMap, VecDeque},
    io,
    os::fd::{AsFd, AsRawFd},
    sync::Mutex,
};

use cepm::Cepm;

use crate::{
    event::Event,
    id::Id,
    live::{self, Call},
    sys,
    wakeup::Wakeup,
};

mod handout;

use handout::Handout;

/// The IDs on a channel, by their CEP's handle, and whether the channel is closed: destroyed,
/// it takes no new ID.
#[derive(Default)]
struct Ids {
    map: BTreeMap<u32, IdPtr>,
    closed: bool,
}

/// An ID as the channel's map holds it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct IdPtr(pub(crate) *mut Id);

// SAFETY: An `Id` is shared between the application's threads as librdmacm's are; its mutable
// state is behind its own lock.
unsafe impl Send for IdPtr {}

/// An event channel.
#[repr(C)]
pub(crate) struct Channel {
    /// What the application sees; `fd` is `cepm`'s.
    pub(crate) public: sys::rdma_event_channel,
    /// The open `/dev/cepm`.
    pub(crate) cepm: Cepm,
    /// Made by `rdma_create_id` for a synchronous ID (and shared with the IDs its listens
    /// give): freed with the last of its IDs, never by the application.
    pub(crate) private: bool,
    /// The IDs on this channel.
    ids: Mutex<Ids>,
    /// The events waiting to be handed out.
    waiting: Handout<Box<Event>>,
    /// Wakes the thread reading the file when an event is queued.
    wake: Wakeup,
}

impl Channel {
    /// Opens `/dev/cepm` for a new channel (`private`: for synchronous IDs).
    pub(crate) fn open(private: bool) -> io::Result<Box<Self>> {
        let cepm = Cepm::open()?;
        let wake = Wakeup::new()?;
        let channel = Box::new(Self {
            public: sys::rdma_event_channel {
                fd: cepm.as_raw_fd(),
            },
            cepm,
            private,
            ids: Mutex::new(Ids::default()),
            waiting: Handout::new(),
            wake,
        });
        live::CHANNELS.insert(&*channel);
        Ok(channel)
    }

    /// The channel behind an application's pointer, if it is a live channel of this library
    /// (`EINVAL` for NULL, for one destroyed, or for any other pointer: see [`crate::live`]),
    /// held for a call: a destroy meanwhile frees it only once the call is over.
    pub(crate) fn of_app(channel: *mut sys::rdma_event_channel) -> Result<Call<Channel>, c_int> {
        live::CHANNELS
            .enter(channel.cast::<Channel>())
            .ok_or(libc::EINVAL)
    }

    /// Frees a channel made by [`Channel::open`] (through `Box::into_raw`): now, or when the
    /// last call in it returns. `EINVAL` if it is no live channel, or one freed already.
    ///
    /// # Safety
    ///
    /// `channel` is not used afterwards, except by the calls in progress, and no ID is or will
    /// be on it: it was closed ([`Channel::close`]), or it is a private channel whose last ID
    /// has left.
    pub(crate) unsafe fn free(channel: *mut sys::rdma_event_channel) -> Result<(), c_int> {
        // SAFETY: As the caller promises.
        unsafe { live::CHANNELS.release(channel.cast::<Channel>()) }.map_err(|()| libc::EINVAL)
    }

    /// The channel behind an application's pointer.
    ///
    /// # Safety
    ///
    /// `channel` came from [`Channel::open`] through `Box::into_raw`, and is alive.
    pub(crate) unsafe fn from_public<'a>(channel: *mut sys::rdma_event_channel) -> &'a Channel {
        // SAFETY: `public` is the first field of the #[repr(C)] Channel the caller vouches for.
        unsafe { &*channel.cast::<Channel>() }
    }

    fn ids(&self) -> std::sync::MutexGuard<'_, Ids> {
        self.ids.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Closes the channel for its destroy: from now on it takes no ID (`EBUSY` if it has IDs,
    /// `EINVAL` if it is closed already). Checked and closed under one lock, so that no ID
    /// made meanwhile is left on a freed channel.
    pub(crate) fn close(&self) -> Result<(), c_int> {
        let mut ids = self.ids();
        if ids.closed {
            return Err(libc::EINVAL);
        }
        if !ids.map.is_empty() {
            return Err(libc::EBUSY);
        }
        ids.closed = true;
        Ok(())
    }

    /// Records `id` as the owner of CEP `handle`; `EINVAL` if the channel is closed.
    pub(crate) fn add(&self, handle: u32, id: *mut Id) -> Result<(), c_int> {
        let mut ids = self.ids();
        if ids.closed {
            return Err(libc::EINVAL);
        }
        ids.map.insert(handle, IdPtr(id));
        Ok(())
    }

    /// Forgets CEP `handle`'s ID, before it is freed: whether it was the channel's last.
    pub(crate) fn remove(&self, handle: u32) -> bool {
        let mut ids = self.ids();
        ids.map.remove(&handle);
        ids.map.is_empty()
    }

    /// Whether no ID is on the channel.
    pub(crate) fn is_empty(&self) -> bool {
        self.ids().map.is_empty()
    }

    /// The ID that owns CEP `handle`, if it is still alive, pinned for the event just read
    /// for it: counted as one event reported ([`Id::event_reported`]), so that its destroy,
    /// which waits for the acknowledgements, waits until [`Id::event_acked`] undoes that.
    /// Found and pinned under the map's lock, which its destroy takes to remove it: the destroy
    /// either waits for the pin or is never found.
    pub(crate) fn find_pinned(&self, handle: u32) -> Option<IdPtr> {
        let ids = self.ids();
        let found = ids.map.get(&handle).copied()?;
        // SAFETY: IDs in the map are alive (the invariant), and this one is in it until the
        // lock goes.
        unsafe { &*found.0 }.event_reported();
        Some(found)
    }

    /// Queues an event the library made (address and route resolution) for `id`, whose CEP is
    /// `handle`, in the channel's file behind the CEP's own (`CEPM_IOC_POST_EVENT`), so that
    /// an application polling the channel's `fd` sees it. If the file has no room for it, it
    /// waits in the library instead, where `rdma_get_cm_event` still finds it.
    pub(crate) fn post_made(
        &self,
        id: *mut Id,
        handle: u32,
        kind: sys::rdma_cm_event_type,
        status: i32,
    ) {
        let code = cepm::sys::CEPM_EVENT_USER_FIRST + kind;
        // The status (0 or a negative errno) travels as its bits.
        if self.cepm.post_event(handle, code, status as u32).is_err() {
            self.post(Event::new(id, kind, status));
        }
    }

    /// Moves `id`, whose CEP is `handle` in `from`'s file, to this channel
    /// (`CEPM_IOC_MIGRATE`): the CEP's unread events go with it in the kernel, and the events
    /// `from` read for it and has not handed out yet go here. Returns the CEP's handle here.
    /// This channel's map stays locked until the ID is in it under that handle, so that a
    /// thread reading this file meanwhile finds the ID for the events that moved. `EINVAL` if
    /// this channel is closed.
    pub(crate) fn adopt(&self, from: &Channel, id: *mut Id, handle: u32) -> io::Result<u32> {
        let mut ids = self.ids();
        if ids.closed {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        let (new_handle, _) = self.cepm.migrate(&from.cepm, handle)?;
        ids.map.insert(new_handle, IdPtr(id));
        drop(ids);
        for event in from.waiting.take(|e| e.owner == id) {
            self.post(event);
        }
        Ok(new_handle)
    }

    /// Leaves an event for its owner, and wakes the threads waiting for one (the one reading
    /// the file too).
    pub(crate) fn post(&self, event: Box<Event>) {
        self.waiting.post(event);
        self.wake.wake();
    }

    /// The next event that `wanted` accepts (see [`Handout::next`]); `read` waits for the
    /// file (see [`Channel::wait_readable`]) and reads and translates one of its events.
    pub(crate) fn next_event(
        &self,
        wanted: impl Fn(&Box<Event>) -> bool,
        read: impl FnMut() -> Result<Option<Box<Event>>, i32>,
    ) -> Result<Box<Event>, i32> {
        let nonblocking = crate::event::nonblocking(&self.cepm);
        // The owner's count, under the handout's lock: see Handout::next.
        self.waiting.next(
            wanted,
            |e| {
                // SAFETY: The owner is alive: its destroy takes its waiting events (this one
                // waits until then), and waits for those handed out to be acknowledged.
                unsafe { &*e.owner }.event_reported();
            },
            nonblocking,
            read,
        )
    }

    /// Waits until the file has an event (`Ok(true)`) or an event was posted (`Ok(false)`). A
    /// non-blocking file does not wait: its read says `EAGAIN` itself.
    pub(crate) fn wait_readable(&self) -> Result<bool, i32> {
        if crate::event::nonblocking(&self.cepm) {
            return Ok(true);
        }
        let mut fds = [
            libc::pollfd {
                fd: self.cepm.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: self.wake.as_fd().as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // SAFETY: Two valid pollfds for the duration of the call.
        if unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) } < 0 {
            return Err(crate::errno::last_or(libc::EINTR));
        }
        if fds[1].revents != 0 {
            self.wake.reset();
            return Ok(false);
        }
        Ok(true)
    }

    /// Takes the waiting events of an ID being destroyed: the ones it owns, and the ones that
    /// name it.
    pub(crate) fn take_events_of(&self, id: *mut Id) -> VecDeque<Box<Event>> {
        self.waiting
            .take(|e| e.owner == id || e.public.id == id.cast())
    }

    /// Takes the waiting events that `which` picks (a multicast join's, at its leave).
    pub(crate) fn take_events(&self, which: impl Fn(&Box<Event>) -> bool) -> VecDeque<Box<Event>> {
        self.waiting.take(which)
    }

    /// Takes `id`, whose CEP is destroyed, out of the channel before it is freed: its waiting
    /// events go to `each`, it leaves the map, and once every event handed out for it is
    /// acknowledged, and the one a reader found it for before it left (a pin,
    /// [`Channel::find_pinned`]) handed out or left waiting, what was left goes to `each` too.
    pub(crate) fn detach(&self, id: &Id, mut each: impl FnMut(Box<Event>)) {
        self.take_events_of(id.as_ptr())
            .into_iter()
            .for_each(&mut each);
        self.remove(id.handle());
        id.wait_for_acks();
        self.take_events_of(id.as_ptr()).into_iter().for_each(each);
    }
}

impl Drop for Channel {
    fn drop(&mut self) {
        // Every channel is freed through live::CHANNELS, which forgets it first.
        debug_assert!(!live::CHANNELS.contains(self));
        live::CHANNELS.remove(self);
    }
}
