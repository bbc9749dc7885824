//! An event channel: one open `/dev/cepm`, the IDs whose CEPs live in it, and the events made
//! in userspace (address and route resolution) waiting to be read.
//!
//! # Invariants
//!
//! `public` is the first field, so that the `struct rdma_event_channel *` an application holds
//! is a pointer to the whole [`Channel`]. Every ID in `ids` is alive: an ID leaves the map
//! before it is freed.

use std::{
    collections::{BTreeMap, VecDeque},
    io,
    os::fd::{AsRawFd, FromRawFd, OwnedFd},
    sync::Mutex,
};

use cepm::Cepm;

use crate::{id::Id, sys};

/// An ID as the channel's map holds it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct IdPtr(pub(crate) *mut Id);

// SAFETY: An `Id` is shared between the application's threads as librdmacm's are; its mutable
// state is behind its own lock.
unsafe impl Send for IdPtr {}

/// An event made in userspace, for an ID of this channel.
pub(crate) struct LocalEvent {
    /// The ID.
    pub(crate) id: IdPtr,
    /// `RDMA_CM_EVENT_*`.
    pub(crate) kind: sys::rdma_cm_event_type,
    /// Its status (0, or a negative errno).
    pub(crate) status: i32,
}

/// An event channel.
#[repr(C)]
pub(crate) struct Channel {
    /// What the application sees; `fd` is `cepm`'s.
    pub(crate) public: sys::rdma_event_channel,
    /// The open `/dev/cepm`.
    pub(crate) cepm: Cepm,
    /// The IDs on this channel, by their CEP's handle.
    ids: Mutex<BTreeMap<u32, IdPtr>>,
    /// Events made in userspace, oldest first.
    local: Mutex<VecDeque<LocalEvent>>,
    /// An eventfd that wakes a reader blocked on the file when a local event is queued.
    wake: OwnedFd,
}

impl Channel {
    /// Opens `/dev/cepm` for a new channel.
    pub(crate) fn open() -> io::Result<Box<Self>> {
        let cepm = Cepm::open()?;
        // SAFETY: eventfd takes no pointers.
        let wake = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if wake < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: A new descriptor, ours alone.
        let wake = unsafe { OwnedFd::from_raw_fd(wake) };
        Ok(Box::new(Self {
            public: sys::rdma_event_channel {
                fd: cepm.as_raw_fd(),
            },
            cepm,
            ids: Mutex::new(BTreeMap::new()),
            local: Mutex::new(VecDeque::new()),
            wake,
        }))
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

    /// Records `id` as the owner of CEP `handle`.
    pub(crate) fn add(&self, handle: u32, id: *mut Id) {
        self.ids
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(handle, IdPtr(id));
    }

    /// Forgets CEP `handle`'s ID, before it is freed.
    pub(crate) fn remove(&self, handle: u32) {
        self.ids
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&handle);
    }

    /// The ID that owns CEP `handle`, if it is still alive.
    pub(crate) fn find(&self, handle: u32) -> Option<IdPtr> {
        self.ids
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&handle)
            .copied()
    }

    /// Queues an event made in userspace, and wakes a reader waiting for the file.
    pub(crate) fn post_local(&self, event: LocalEvent) {
        self.local
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push_back(event);
        let one = 1u64.to_ne_bytes();
        // SAFETY: Writes 8 bytes from `one` to our eventfd; a full counter (EAGAIN) already
        // wakes the reader.
        unsafe { libc::write(self.wake.as_raw_fd(), one.as_ptr().cast(), one.len()) };
    }

    /// Waits until the file has an event (`Ok(true)`) or a local event was queued
    /// (`Ok(false)`). A non-blocking file does not wait: its read says `EAGAIN` itself.
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
                fd: self.wake.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // SAFETY: Two valid pollfds for the duration of the call.
        if unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) } < 0 {
            return Err(io::Error::last_os_error()
                .raw_os_error()
                .unwrap_or(libc::EINTR));
        }
        if fds[1].revents != 0 {
            let mut count = [0u8; 8];
            // SAFETY: Reads the counter into `count`, resetting it.
            unsafe {
                libc::read(
                    self.wake.as_raw_fd(),
                    count.as_mut_ptr().cast(),
                    count.len(),
                )
            };
            return Ok(false);
        }
        Ok(true)
    }

    /// The oldest event made in userspace, if any.
    pub(crate) fn take_local(&self) -> Option<LocalEvent> {
        self.local
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop_front()
    }

    /// Drops the userspace events of an ID being destroyed.
    pub(crate) fn drop_local_of(&self, id: *mut Id) {
        self.local
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|e| e.id.0 != id);
    }

    /// Whether IDs are still on the channel.
    pub(crate) fn has_ids(&self) -> bool {
        !self
            .ids
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_empty()
    }
}
