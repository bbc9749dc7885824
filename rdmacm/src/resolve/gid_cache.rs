//! The GID tables as last scanned, kept between calls. Scanning every device's table costs a
//! verbs call a device and a netdev-name lookup an entry; `rdma_bind_addr` and
//! `rdma_resolve_addr` each need one entry. So the entries stay cached, and an entry found in
//! the cache is handed out only once the kernel has confirmed it (one query of that entry):
//! a caller never gets an entry that was gone when it asked. Anything not found, or found but
//! no longer current, is looked up in a fresh scan, which replaces the cache.
//!
//! Generic over the entry, its scan and its check, so that the rule is tested without devices.

use std::sync::Mutex;

/// Entries of type `E`, or none until the first scan.
pub(crate) struct GidCache<E> {
    entries: Mutex<Option<Vec<E>>>,
}

impl<E: Clone> GidCache<E> {
    /// Empty: the first lookup scans.
    pub(crate) const fn new() -> Self {
        Self {
            entries: Mutex::new(None),
        }
    }

    /// The first entry `wanted` accepts: from the cache if `current` confirms it, else from a
    /// fresh `scan` (which then replaces the cache), or `None` if that has none either.
    pub(crate) fn find(
        &self,
        wanted: impl Fn(&E) -> bool,
        scan: impl FnOnce() -> Vec<E>,
        current: impl FnOnce(&E) -> bool,
    ) -> Option<E> {
        let cached = self
            .lock()
            .as_ref()
            .and_then(|entries| entries.iter().find(|e| wanted(e)).cloned());
        // The check runs without the lock: it is a call into the kernel.
        if let Some(entry) = cached {
            if current(&entry) {
                return Some(entry);
            }
        }
        let fresh = scan();
        let found = fresh.iter().find(|e| wanted(e)).cloned();
        *self.lock() = Some(fresh);
        found
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Vec<E>>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    /// (name, value) pairs: `wanted` looks for a name, `current` compares the value with
    /// what "the kernel" has now.
    type Entry = (&'static str, u32);

    #[test]
    fn the_first_lookup_scans_and_later_ones_only_check() {
        let cache = GidCache::<Entry>::new();
        let scans = Cell::new(0);
        let scan = || {
            scans.set(scans.get() + 1);
            vec![("a", 1), ("b", 2)]
        };
        let checks = Cell::new(0);
        let current = |_: &Entry| {
            checks.set(checks.get() + 1);
            true
        };
        assert_eq!(cache.find(|e| e.0 == "b", scan, current), Some(("b", 2)));
        assert_eq!((scans.get(), checks.get()), (1, 0));
        for _ in 0..3 {
            assert_eq!(
                cache.find(|e| e.0 == "a", || unreachable!("no scan"), current),
                Some(("a", 1))
            );
        }
        assert_eq!((scans.get(), checks.get()), (1, 3));
    }

    #[test]
    fn an_entry_that_changed_is_looked_up_again() {
        let cache = GidCache::<Entry>::new();
        cache.find(|_| true, || vec![("a", 1)], |_| true);
        // "a" is now 2 in the kernel: the check fails, the scan finds the new value.
        let found = cache.find(|e| e.0 == "a", || vec![("a", 2)], |e| e.1 == 2);
        assert_eq!(found, Some(("a", 2)));
        // And the cache holds the new scan.
        let again = cache.find(|e| e.0 == "a", || unreachable!("no scan"), |e| e.1 == 2);
        assert_eq!(again, Some(("a", 2)));
    }

    #[test]
    fn an_entry_that_went_is_not_handed_out() {
        let cache = GidCache::<Entry>::new();
        cache.find(|_| true, || vec![("a", 1), ("b", 2)], |_| true);
        let found = cache.find(|e| e.0 == "a", || vec![("b", 2)], |_| false);
        assert_eq!(found, None);
    }

    #[test]
    fn what_the_cache_lacks_comes_from_a_fresh_scan() {
        let cache = GidCache::<Entry>::new();
        cache.find(|_| true, || vec![("a", 1)], |_| true);
        let found = cache.find(
            |e| e.0 == "new",
            || vec![("a", 1), ("new", 3)],
            |_| unreachable!("nothing cached to check"),
        );
        assert_eq!(found, Some(("new", 3)));
    }
}
