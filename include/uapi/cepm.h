/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause) */
/*
 * cepm: userspace ABI of the /dev/cepm character device.
 *
 * This header is the single definition of the ABI: the kernel module's Rust
 * declarations and the userspace crate's are both generated from it with
 * bindgen, so neither side can drift from it.
 *
 * Rules: fixed-size types only, explicit padding, 64-bit user pointers as
 * __aligned_u64, and reserved fields that must be zero on input.
 */
#ifndef _UAPI_CEPM_H
#define _UAPI_CEPM_H

#include <linux/types.h>
#include <linux/ioctl.h>

/* Bumped on any incompatible change to this file. */
#define CEPM_ABI_VERSION 2

#define CEPM_IOC_MAGIC 0xCE

/* Same as IB_DEVICE_NAME_MAX in <rdma/ib_user_verbs.h>. */
#define CEPM_DEVICE_NAME_MAX 64

/*
 * Received CM MADs are counted per attribute ID.  CM attribute IDs are all
 * below 0x20 (ClassPortInfo 0x0001, REQ 0x0010 ... APR 0x001A), so the
 * counter array is indexed by the attribute ID itself; anything else is
 * counted in rx_other_attr.
 */
#define CEPM_ATTR_SLOTS 32

/* struct cepm_port_info.flags */
#define CEPM_PORT_ROCE (1U << 0) /* RoCE link layer (else InfiniBand) */

/* One port on which cepm owns the CM management class (0x07, version 2). */
struct cepm_port_info {
	char dev_name[CEPM_DEVICE_NAME_MAX]; /* NUL-terminated */
	__u32 port_num;
	__u32 flags;                         /* CEPM_PORT_* */
	__u64 rx_by_attr[CEPM_ATTR_SLOTS];   /* received CM MADs, by attribute ID */
	__u64 rx_other_attr;                 /* received, attribute ID >= CEPM_ATTR_SLOTS */
	__u64 rx_malformed;                  /* shorter than a MAD header */
	__u64 rx_invalid;                    /* not a valid CM message (dropped) */
	__u64 tx_by_attr[CEPM_ATTR_SLOTS];   /* CM MADs posted, by attribute ID */
	__u64 tx_errors;                     /* sends that could not be posted */
};

/*
 * CEPM_IOC_QUERY: ABI version and the managed ports.
 *
 * In:  ports points to an array of port_capacity entries (may be 0 with
 *      ports == 0 to ask for the count only); reserved must be 0.
 * Out: abi_version, num_ports = ports managed right now.  The first
 *      min(num_ports, port_capacity) entries are filled in.
 */
struct cepm_query {
	__u32 abi_version;
	__u32 num_ports;
	__u32 port_capacity;
	__u32 reserved;
	__aligned_u64 ports; /* struct cepm_port_info * */
};

#define CEPM_IOC_QUERY _IOWR(CEPM_IOC_MAGIC, 0x80, struct cepm_query)

#endif /* _UAPI_CEPM_H */
