// SPDX-License-Identifier: GPL-2.0
/*
 * Keyed hashing: the kernel's SipHash (include/linux/siphash.h) under a key
 * drawn at random, so that no peer or user can pick table keys that land in one
 * shard.
 */
#include <linux/random.h>
#include <linux/siphash.h>

#include "cepm_shim.h"

void cepm_shim_hash_key_init(struct cepm_hash_key *key)
{
	get_random_bytes(key, sizeof(*key));
}

u64 cepm_shim_hash_u64(const struct cepm_hash_key *key, u64 value)
{
	const siphash_key_t sip = { { key->k0, key->k1 } };

	return siphash_1u64(value, &sip);
}

u64 cepm_shim_hash_3u64(const struct cepm_hash_key *key, u64 a, u64 b, u64 c)
{
	const siphash_key_t sip = { { key->k0, key->k1 } };

	return siphash_3u64(a, b, c, &sip);
}
