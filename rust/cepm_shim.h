/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The one definition of cepm's Rust <-> C boundary.
 *
 * cepm_shim.c implements the cepm_shim_* functions: thin wrappers over RDMA
 * core calls that are static inlines, macros, or take bitfield-heavy structs.
 * The Rust side implements the callbacks typed by the cepm_*_fn typedefs.
 * Kbuild runs bindgen on this file with the kernel's own bindgen flags, so
 * rust/rdma.rs sees exactly these declarations; it also checks its callback
 * definitions against the typedefs at compile time.
 *
 * RDMA objects cross the boundary only as opaque pointers.
 */
#ifndef CEPM_SHIM_H
#define CEPM_SHIM_H

#include <linux/types.h>

struct ib_device;
struct ib_mad_agent;

/* The CM management class, as Linux's ib_cm uses it (IBTA vol. 1, 12.6). */
#define CEPM_MGMT_CLASS_CM 0x07
#define CEPM_CM_CLASS_VERSION 2

/* ---- Callbacks implemented in Rust, called from C ---- */

/* ib_client.add: non-zero skips the device (ib_core then never calls remove). */
typedef int cepm_add_device_fn(struct ib_device *device);
/* ib_client.remove: must stop all use of the device before returning. */
typedef void cepm_remove_device_fn(struct ib_device *device);
/*
 * A MAD arrived for the agent registered with port_ctx.  The buffer is only
 * valid during the call.  Runs in process context (the MAD CQ's workqueue).
 */
typedef void cepm_recv_mad_fn(void *port_ctx, const u8 *mad, size_t len);

cepm_add_device_fn cepm_rust_add_device;
cepm_remove_device_fn cepm_rust_remove_device;
cepm_recv_mad_fn cepm_rust_recv_mad;

/* ---- C wrappers called from Rust ---- */

/* Register/unregister the "cepm" ib_client (may sleep). */
int cepm_shim_client_register(void);
void cepm_shim_client_unregister(void);

/* Copies the device's current name (NUL-terminated, truncated to len). */
void cepm_shim_device_name(struct ib_device *device, char *buf, size_t len);
u32 cepm_shim_start_port(struct ib_device *device);
u32 cepm_shim_end_port(struct ib_device *device);
/* rdma_cap_ib_cm(): the port speaks the IB CM protocol (IB and RoCE). */
bool cepm_shim_port_has_ib_cm(struct ib_device *device, u32 port);
/* rdma_protocol_roce(). */
bool cepm_shim_port_is_roce(struct ib_device *device, u32 port);

/*
 * Registers a GSI agent for CM class 0x07 version 2, method SEND, whose
 * receive callback is cepm_rust_recv_mad(port_ctx, ...).  Returns an
 * ERR_PTR on failure, e.g. -EINVAL when another CM (ib_cm) owns the class.
 * May sleep.
 */
struct ib_mad_agent *cepm_shim_agent_register(struct ib_device *device, u32 port,
					      void *port_ctx);
/* Waits for running handlers; no callback runs after it returns.  May sleep. */
void cepm_shim_agent_unregister(struct ib_mad_agent *agent);

#endif /* CEPM_SHIM_H */
