// SPDX-License-Identifier: GPL-2.0

//! A bounded first-in, first-out queue whose room is allocated once, where sleeping is
//! allowed: pushing (under a CEP's lock, or the monitor list's) never allocates, and taking
//! the oldest record is O(1).

use kernel::{
    alloc::KVVec,
    prelude::*, //
};

/// At most `capacity` records, oldest first.
///
/// # Invariants
///
/// `slots` never grows past its allocated capacity; the `len` records start at `head` and
/// wrap around the end of `slots`; `head < slots.capacity()` unless the capacity is 0.
pub(crate) struct Ring<T: Copy> {
    slots: KVVec<T>,
    head: usize,
    len: usize,
}

impl<T: Copy> Ring<T> {
    /// An empty queue with no room: [`Ring::with_capacity`] makes one that can hold records.
    pub(crate) const fn empty() -> Self {
        Self {
            slots: KVVec::new(),
            head: 0,
            len: 0,
        }
    }

    /// An empty queue with room for `capacity` records, allocated now (may sleep).
    pub(crate) fn with_capacity(capacity: usize) -> Result<Self> {
        Ok(Self {
            // Charged to the caller: only a caller's call makes one.
            slots: KVVec::with_capacity(capacity, GFP_KERNEL_ACCOUNT)?,
            head: 0,
            len: 0,
        })
    }

    /// Whether room was allocated (a queue made by [`Ring::empty`] has none).
    pub(crate) fn has_room(&self) -> bool {
        self.slots.capacity() > 0
    }

    /// How many records it can hold.
    pub(crate) fn capacity(&self) -> usize {
        self.slots.capacity()
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Appends `record`; gives it back if the queue is full. Never allocates.
    pub(crate) fn push(&mut self, record: T) -> core::result::Result<(), T> {
        let capacity = self.slots.capacity();
        if self.len == capacity {
            return Err(record);
        }
        let tail = self.wrap(self.head + self.len);
        if tail == self.slots.len() {
            // Filling the allocation for the first time: within its capacity.
            self.slots.push_within_capacity(record).map_err(|e| e.0)?;
        } else {
            let slot = self.slots.get_mut(tail).ok_or(record)?;
            *slot = record;
        }
        self.len += 1;
        Ok(())
    }

    /// Takes the oldest record. O(1).
    pub(crate) fn pop(&mut self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        let record = *self.slots.get(self.head)?;
        self.head = self.wrap(self.head + 1);
        self.len -= 1;
        Some(record)
    }

    /// Keeps only the records `keep` accepts, in order. O(len); for purges, not the hot path.
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(&T) -> bool) {
        let mut kept = 0;
        for i in 0..self.len {
            let Some(&record) = self.slots.get(self.wrap(self.head + i)) else {
                break;
            };
            if keep(&record) {
                let at = self.wrap(self.head + kept);
                if let Some(slot) = self.slots.get_mut(at) {
                    *slot = record;
                }
                kept += 1;
            }
        }
        self.len = kept;
    }

    /// How many records `matches` accepts. O(len).
    pub(crate) fn count(&self, matches: impl Fn(&T) -> bool) -> usize {
        (0..self.len)
            .filter_map(|i| self.slots.get(self.wrap(self.head + i)))
            .filter(|record| matches(record))
            .count()
    }

    /// Removes the oldest record `matches` accepts, if any. O(len).
    pub(crate) fn remove_first(&mut self, matches: impl Fn(&T) -> bool) -> bool {
        let mut found = false;
        self.retain(|record| {
            if !found && matches(record) {
                found = true;
                return false;
            }
            true
        });
        found
    }

    /// Index `i` of the ring, wrapped around its room (no division that could panic: a ring
    /// without room holds no record to index).
    fn wrap(&self, i: usize) -> usize {
        i.checked_rem(self.slots.capacity()).unwrap_or(0)
    }

    /// Drops every record; the room stays.
    pub(crate) fn clear(&mut self) {
        self.head = 0;
        self.len = 0;
    }
}
