// SPDX-License-Identifier: GPL-2.0

//! Keyed hashing: the kernel's SipHash under a key drawn at random (`cepm_hash.c`).

use super::bindings;

/// A SipHash key drawn at random: whoever picks the keys of a table cannot predict where
/// [`HashKey::hash`] sends them.
pub(crate) struct HashKey(bindings::cepm_hash_key);

impl HashKey {
    /// A new key from the kernel's random pool.
    pub(crate) fn random() -> Self {
        let mut key = bindings::cepm_hash_key { k0: 0, k1: 0 };
        // SAFETY: `key` is valid for writes for the duration of the call.
        unsafe { bindings::cepm_shim_hash_key_init(&mut key) };
        Self(key)
    }

    /// SipHash-2-4 of `value` under this key.
    pub(crate) fn hash(&self, value: u64) -> u64 {
        // SAFETY: `self.0` is valid for reads for the duration of the call.
        unsafe { bindings::cepm_shim_hash_u64(&self.0, value) }
    }

    /// SipHash-2-4 of the three words of `values` under this key: each word counts on its
    /// own, so no choice of one cancels another.
    pub(crate) fn hash3(&self, values: [u64; 3]) -> u64 {
        let [a, b, c] = values;
        // SAFETY: `self.0` is valid for reads for the duration of the call.
        unsafe { bindings::cepm_shim_hash_3u64(&self.0, a, b, c) }
    }
}
