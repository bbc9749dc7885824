// SPDX-License-Identifier: GPL-2.0

//! A file's queue of events, counted against its user as well as bounded per file: an event
//! that would take the user past `max_events_per_user` is lost, as one that finds the file's
//! queue full is.

use kernel::{
    prelude::*,
    sync::Arc, //
};

use super::ring::Ring;
use crate::{
    uapi::cepm_event,
    users::{
        Resource,
        Usage, //
    },
};

/// The events waiting on one file.
///
/// # Invariants
///
/// `user` counts every event in `ring` (and no other of this queue's).
pub(super) struct EventQueue {
    ring: Ring<cepm_event>,
    user: Arc<Usage>,
}

impl EventQueue {
    /// An empty queue without room (see [`EventQueue::give_room`]), counted against `user`.
    pub(super) fn new(user: Arc<Usage>) -> Self {
        // INVARIANT: no event, none counted.
        Self {
            ring: Ring::empty(),
            user,
        }
    }

    /// Whether the queue has room yet.
    pub(super) fn has_room(&self) -> bool {
        self.ring.has_room()
    }

    /// Gives the queue its room, allocated where sleeping is allowed; called while it holds
    /// no event. Returns `room` back if the queue has room already.
    pub(super) fn give_room(&mut self, room: Ring<cepm_event>) -> Option<Ring<cepm_event>> {
        if self.ring.has_room() || !self.ring.is_empty() {
            return Some(room);
        }
        self.ring = room;
        None
    }

    /// The most events it can hold.
    pub(super) fn capacity(&self) -> usize {
        self.ring.capacity()
    }

    pub(super) fn len(&self) -> usize {
        self.ring.len()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.ring.is_empty()
    }

    pub(super) fn count(&self, matches: impl Fn(&cepm_event) -> bool) -> usize {
        self.ring.count(matches)
    }

    /// Queues `event`, unless the file's queue is full or its user has `user_limit` events
    /// queued: then it is lost (`Err`). Never allocates.
    pub(super) fn push(&mut self, event: cepm_event, user_limit: u32) -> Result<(), ()> {
        if !self.user.try_take(Resource::Events, user_limit) {
            return Err(());
        }
        if self.ring.push(event).is_err() {
            self.user.give_back(Resource::Events, 1);
            return Err(());
        }
        Ok(())
    }

    /// The oldest event.
    pub(super) fn pop(&mut self) -> Option<cepm_event> {
        let event = self.ring.pop()?;
        self.user.give_back(Resource::Events, 1);
        Some(event)
    }

    /// Keeps only the events `keep` accepts.
    pub(super) fn retain(&mut self, keep: impl FnMut(&cepm_event) -> bool) {
        let before = self.ring.len();
        self.ring.retain(keep);
        self.give_back_since(before);
    }

    /// Removes the oldest event `matches` accepts, if any.
    pub(super) fn remove_first(&mut self, matches: impl Fn(&cepm_event) -> bool) -> bool {
        let before = self.ring.len();
        let found = self.ring.remove_first(matches);
        self.give_back_since(before);
        found
    }

    /// Moves the events `matches` accepts to `out`, oldest first, as far as `out` has room;
    /// the others stay, in their order. Never allocates.
    pub(super) fn move_out(
        &mut self,
        matches: impl Fn(&cepm_event) -> bool,
        out: &mut Ring<cepm_event>,
    ) {
        let before = self.ring.len();
        self.ring
            .retain(|ev| !matches(ev) || out.push(*ev).is_err());
        self.give_back_since(before);
    }

    /// Drops every event; the room stays.
    pub(super) fn clear(&mut self) {
        let before = self.ring.len();
        self.ring.clear();
        self.give_back_since(before);
    }

    /// Gives back to the user the events removed since the queue held `before`.
    fn give_back_since(&self, before: usize) {
        let removed = before.saturating_sub(self.ring.len());
        self.user
            .give_back(Resource::Events, u32::try_from(removed).unwrap_or(u32::MAX));
    }
}

impl Drop for EventQueue {
    fn drop(&mut self) {
        self.clear();
    }
}
