/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The one definition of cepm's Rust <-> C boundary.
 *
 * The C side, the shim, holds what Rust cannot call or declare itself: static
 * inlines and macros (rdma_cap_ib_cm, rdma_start_port, alloc_workqueue, ...),
 * structs with bitfields and unions (ib_mad_reg_req, ib_mad_recv_wc,
 * rdma_ah_attr), and the static registrations (the ib_client, the misc device,
 * the module parameters, debugfs).  It is split by concern, one section of
 * this header each:
 *   cepm_params.c     module parameters, and whom a caller's use counts against
 *   cepm_client.c     the ib_client, and what cepm reads of a device
 *   cepm_mad.c        MAD agents, the MADs they send and receive, address handles
 *   cepm_chardev.c    /dev/cepm
 *   cepm_workqueue.c  the module's workqueue, delayed work
 *   cepm_hash.c       keyed hashing for the sharded tables
 *   cepm_fault.c      fault points for tests (CONFIG_FAULT_INJECTION_DEBUG_FS)
 * The Rust side implements the callbacks typed by the cepm_*_fn typedefs.
 * Kbuild runs bindgen on this file with the kernel's own bindgen flags, so
 * rust/shim.rs sees exactly these declarations (its module `bindings`), and
 * rust/shim/glue.rs checks its callback definitions against the typedefs at
 * compile time.
 *
 * The decisions are Rust's, but for a few that the shim makes because they
 * fall where no Rust runs yet, or need what the kernel crate does not offer:
 * - Which received MADs wait for the MAC their answer goes to, and how many
 *   (cepm_mad.c): a REQ, DREQ or SIDR_REQ whose answer's next hop the
 *   neighbour table does not know yet goes on from one of its agent's own
 *   workers, at most CEPM_UNRESOLVED_MAX at a time a port; more are dropped.
 *   The MAD layer's receive handler, which every MAD of the port goes
 *   through, must not wait; only C can keep an ib_mad_recv_wc past it; and
 *   the route and neighbour lookups are static inlines.
 * - Whose per-user limits a task counts against, and in which user namespace
 *   its capabilities count (cepm_params.c): the kernel crate exposes neither
 *   user namespaces nor ns_capable_noaudit.
 * - The module parameters' defaults (cepm_params.c): the kernel crate's own
 *   parameters get no sysfs file.
 * - /dev/cepm's mode, 0600 (cepm_chardev.c): the misc device is a C struct.
 *
 * RDMA objects cross the boundary only as opaque pointers.
 */
#ifndef CEPM_SHIM_H
#define CEPM_SHIM_H

#include <linux/types.h>

struct file;
struct poll_table_struct;
struct workqueue_struct;
struct ib_ah;
struct ib_device;
struct net;
struct ib_mad_agent;
struct ib_mad_recv_wc;
struct ib_mad_send_buf;

/* ---- Callbacks implemented in Rust, called from C ---- */

/*
 * The ib_client callbacks get the context given to cepm_shim_client_register.
 * ib_client.add: non-zero skips the device (ib_core then never calls remove).
 */
typedef int cepm_add_device_fn(void *client_ctx, struct ib_device *device);
/* ib_client.remove: must stop all use of the device before returning. */
typedef void cepm_remove_device_fn(void *client_ctx, struct ib_device *device);
/* ib_client.rename: the device (which add took) has a new name. */
typedef void cepm_rename_device_fn(void *client_ctx, struct ib_device *device);

cepm_add_device_fn cepm_rust_add_device;
cepm_remove_device_fn cepm_rust_remove_device;
cepm_rename_device_fn cepm_rust_rename_device;

/*
 * The callbacks of a MAD agent, given to cepm_shim_agent_register with their
 * context (port_ctx).
 *
 * A MAD arrived for the agent registered with port_ctx.  recv and the buffer
 * are only valid during the call (recv can be passed to
 * cepm_shim_recv_reply_ah and cepm_shim_recv_reply_info).  Runs in process
 * context (the MAD CQ's workqueue), no locks held: it may sleep.
 */
typedef void cepm_recv_mad_fn(void *port_ctx, struct ib_mad_agent *agent,
			      struct ib_mad_recv_wc *recv, const u8 *mad, size_t len);
/*
 * A MAD posted with cepm_shim_send_mad() is finished: sent (0), out of retries
 * (-ETIMEDOUT), cancelled (-ECANCELED) or failed (-EIO).  The send buffer is
 * freed right after this returns (its AH may be released here, as Linux's
 * cm_free_msg does).  Process context.
 */
typedef void cepm_send_done_fn(void *port_ctx, void *msg_ctx, int status);

/*
 * /dev/cepm file operations.  open gets the context given to
 * cepm_shim_chardev_register and returns the file's context (or an ERR_PTR),
 * which every other call gets back; release runs once, after the last other
 * call.  All run in process context.
 */
typedef void *cepm_open_fn(void *chardev_ctx);
typedef void cepm_release_fn(void *file_ctx);
typedef long cepm_ioctl_fn(void *file_ctx, unsigned int cmd, unsigned long arg);
typedef ssize_t cepm_read_fn(void *file_ctx, unsigned long buf, size_t len, bool nonblock);
typedef unsigned int cepm_poll_fn(void *file_ctx, struct file *file,
				  struct poll_table_struct *wait);

cepm_open_fn cepm_rust_open;
cepm_release_fn cepm_rust_release;
cepm_ioctl_fn cepm_rust_ioctl;
cepm_read_fn cepm_rust_read;
cepm_poll_fn cepm_rust_poll;

/*
 * debugfs listen_shards: fills COUNTS with how many (namespace, service ID) pairs have exact
 * listeners in each of the listener table's N shards.  Process context.
 */
#define CEPM_LISTEN_SHARDS 16
typedef void cepm_listen_shards_fn(void *cm_ctx, u32 *counts, u32 n);

cepm_listen_shards_fn cepm_rust_listen_shards;

/* ---- Parameters and accounting (cepm_params.c) ---- */

/* The cepm.devices module parameter: NUL-terminated, constant after load. */
const char *cepm_shim_devices_param(void);
/* The numeric module parameters, constant after load. */
struct cepm_params {
	u32 event_queue_max;
	u32 timewait_ms;
	u32 inject_init_failure;
	u32 max_ceps_per_file;
	u32 max_ceps_per_user;
	u32 max_listens_per_file;
	u32 max_listens_per_user;
	u32 max_events_per_user;
	u32 listen_backlog;
	u32 max_monitors_per_user;
	u32 max_ports_per_user;
};
void cepm_shim_params(struct cepm_params *out);
/*
 * The current task's network namespace, referenced (NULL for an exiting task,
 * which has none): a file keeps the one it was opened in (docs/abi.md,
 * "Network namespaces") until cepm_shim_put_net.
 */
struct net *cepm_shim_current_net(void);
void cepm_shim_put_net(struct net *net);
/* The namespace's cookie: unique for the system's uptime, never reused. */
u64 cepm_shim_net_cookie(const struct net *net);
bool cepm_shim_net_is_initial(const struct net *net);
/* The ephemeral ports (ip_local_port_range) of network namespace net. */
void cepm_shim_local_port_range(const struct net *net, u16 *low, u16 *high);
/* The current task's capabilities that /dev/cepm asks about, in the initial user namespace. */
struct cepm_caps {
	bool net_admin;
	bool net_bind_service;
};
void cepm_shim_current_caps(struct cepm_caps *out);
/* The kuid whose limits the current task's files count against (docs/abi.md, "Privileges and
 * limits"): of the task's user namespace and those it lies in, the owner of the outermost one
 * that global root did not make; the task's euid if there is none. */
u32 cepm_shim_current_account(void);
/* Charges the __GFP_ACCOUNT slab object OBJ points into to the current task's memory cgroup. */
bool cepm_shim_charge_current(const void *obj);

/* ---- The ib_client and its devices (cepm_client.c) ---- */

/*
 * Register/unregister the "cepm" ib_client (may sleep); its callbacks get ctx
 * until it is unregistered.  -EBUSY while it is registered already.
 */
int cepm_shim_client_register(void *ctx);
void cepm_shim_client_unregister(void);

/*
 * Copies the device's name (NUL-terminated, truncated to len).  Stable only in
 * the client's add and rename callbacks.
 */
void cepm_shim_device_name(struct ib_device *device, char *buf, size_t len);
/* The device's node GUID (the CA GUID of CM messages), in host order. */
u64 cepm_shim_device_node_guid(struct ib_device *device);
/* The CA's local ACK delay exponent (for the REQ's local ACK timeout). */
u8 cepm_shim_device_ack_delay(struct ib_device *device);
/* rdma_dev_access_netns(): whether files of net may use the device at all. */
bool cepm_shim_device_in_net(struct ib_device *device, const struct net *net);
u32 cepm_shim_start_port(struct ib_device *device);
u32 cepm_shim_end_port(struct ib_device *device);
/* rdma_cap_ib_cm(): the port speaks the IB CM protocol (IB and RoCE). */
bool cepm_shim_port_has_ib_cm(struct ib_device *device, u32 port);
/* rdma_protocol_roce(), unless the pretend_ib fault point is set. */
bool cepm_shim_port_is_roce(struct ib_device *device, u32 port);

/* ---- MAD agents and address handles (cepm_mad.c) ---- */

/*
 * Registers a GSI agent for the CM class (version 2), method SEND, whose
 * callbacks are recv(port_ctx, ...) and send_done(port_ctx, ...).  Returns an
 * ERR_PTR on failure, e.g. -EINVAL when another CM (ib_cm) owns the class.
 * With send_only, the agent registers no class and no receive handler: it
 * only sends, and the MAD layer's flow control for solicited MADs (which
 * needs a receive handler) never queues its sends.  cepm sends every MAD that
 * waits for an answer through it.  May sleep.
 */
struct ib_mad_agent *cepm_shim_agent_register(struct ib_device *device, u32 port,
					      bool send_only, void *port_ctx,
					      cepm_recv_mad_fn *recv,
					      cepm_send_done_fn *send_done);
/* Waits for running handlers; no callback runs after it returns.  May sleep. */
void cepm_shim_agent_unregister(struct ib_mad_agent *agent);
/* The agent's high 32 TID bits (requests carry them, as Linux's cm_form_tid). */
u32 cepm_shim_agent_hi_tid(struct ib_mad_agent *agent);

/* What an address handle points at (RoCE: GRH fields and next-hop MAC). */
struct cepm_ah_info {
	u8 dgid[16];
	u8 dmac[6];
	u8 sgid_index;
	u8 hop_limit;
	u32 flow_label;
	u8 traffic_class;
	u8 sl;
	u8 port_num;
	u8 reserved;
};

/*
 * An address handle that answers the sender of recv (GRH and all, so RoCE
 * works), from inside cepm_rust_recv_mad only.  ERR_PTR on failure.  May sleep.
 */
struct ib_ah *cepm_shim_recv_reply_ah(struct ib_mad_agent *agent,
				      struct ib_mad_recv_wc *recv);
/*
 * Where an answer to the sender of recv goes, without making an AH for it
 * (cepm_shim_create_ah makes one from it for each send).  From inside
 * cepm_rust_recv_mad only.  May sleep.
 */
int cepm_shim_recv_reply_info(struct ib_mad_agent *agent, struct ib_mad_recv_wc *recv,
			      struct cepm_ah_info *info);

/*
 * An address handle for a peer given by its GID (with a GRH, as RoCE needs)
 * on the agent's port.  Atomic context is fine.  ERR_PTR on failure.
 */
struct ib_ah *cepm_shim_create_ah(struct ib_mad_agent *agent, const struct cepm_ah_info *info);
/* Our GID at index on the agent's port. */
int cepm_shim_query_gid(struct ib_mad_agent *agent, u8 index, u8 *gid);
/*
 * The next three give the network namespace that owns a GID of the agent's
 * port, as the cookie of cepm_shim_net_cookie: its netdev's (the device's
 * for a GID without one); -ENETUNREACH if that namespace may not use the
 * device (the exclusive RDMA netns mode).
 *
 * The GID at index, if it is of the type cepm speaks on the port (RoCE v2,
 * or IB; -EINVAL if not), and its namespace.
 */
int cepm_shim_query_source_gid(struct ib_mad_agent *agent, u8 index, u8 *gid, u64 *net);
/* The namespace of gid (16 bytes, of any type); -ENOENT if the port has no such GID. */
int cepm_shim_gid_net(struct ib_mad_agent *agent, const u8 *gid, u64 *net);
/* The namespace of the GID at index. */
int cepm_shim_gid_index_net(struct ib_mad_agent *agent, u8 index, u64 *net);
/*
 * The MAC of the next hop from our GID at sgid_index to dgid (16 bytes), as
 * the RDMA core's address resolution finds it: a route leaving by the GID's
 * netdev, in its namespace, and that route's neighbour entry; this host's own
 * address is the netdev's own MAC.  Never waits: -EAGAIN, with the
 * resolution started, while the neighbour table does not know it yet;
 * -ENETUNREACH without a route by that netdev, or for a netdev that is not
 * Ethernet.  mac is zeroed on failure; on an IB port, 0 with mac untouched.
 */
int cepm_shim_next_hop_mac(struct ib_mad_agent *agent, u8 sgid_index, const u8 *dgid, u8 *mac);
/* Destroys an AH no send uses any more.  Atomic context is fine. */
void cepm_shim_destroy_ah(struct ib_ah *ah);

/*
 * Posts a copy of the 256-byte MAD to the GSI QP behind ah.  A non-zero
 * timeout_ms keeps it outstanding and resends it up to retries times until
 * cancelled.  cepm_rust_send_done(port_ctx, msg_ctx, ...) runs exactly once
 * if and only if this returns a send buffer (not an ERR_PTR).  The buffer may
 * only be passed to cepm_shim_cancel_mad() until then.  may_sleep selects
 * GFP_KERNEL over GFP_ATOMIC.
 */
struct ib_mad_send_buf *cepm_shim_send_mad(struct ib_mad_agent *agent, struct ib_ah *ah,
					   u16 pkey_index, const u8 *mad, int timeout_ms,
					   int retries, void *msg_ctx, bool may_sleep);
/* Stops resending; the send then completes with -ECANCELED (or has already). */
void cepm_shim_cancel_mad(struct ib_mad_send_buf *send_buf);
/* Gives an outstanding send a new timeout (after an MRA); 0 if it is still outstanding. */
int cepm_shim_modify_mad(struct ib_mad_send_buf *send_buf, u32 timeout_ms);

/* ---- /dev/cepm (cepm_chardev.c) ---- */

/*
 * Registers /dev/cepm (misc device, mode 0600) with the file operations
 * above; its open callback gets ctx until it is unregistered.  -EBUSY while
 * it is registered already.
 */
int cepm_shim_chardev_register(void *ctx);
void cepm_shim_chardev_unregister(void);
/*
 * The context cepm_rust_open() gave another open /dev/cepm, the file fd
 * names, which stays open until cepm_shim_put_file(*filp): ERR_PTR(-EBADF)
 * if fd is not open, ERR_PTR(-EINVAL) if it is not a /dev/cepm file.
 */
void *cepm_shim_get_file_ctx(int fd, struct file **filp);
void cepm_shim_put_file(struct file *filp);

/* ---- Workqueues (cepm_workqueue.c) ---- */

/* A workqueue of our own (alloc_workqueue), or NULL; destroy_workqueue() drains it. */
struct workqueue_struct *cepm_shim_alloc_workqueue(const char *name);
bool cepm_shim_cancel_delayed_work_sync(void *work);

/* ---- Keyed hashing (cepm_hash.c) ---- */

/* A SipHash key. */
struct cepm_hash_key {
	u64 k0;
	u64 k1;
};

/* Fills KEY with random bytes.  Any context. */
void cepm_shim_hash_key_init(struct cepm_hash_key *key);
/* SipHash-2-4 of VALUE under KEY (siphash_1u64).  Any context. */
u64 cepm_shim_hash_u64(const struct cepm_hash_key *key, u64 value);
/* SipHash-2-4 of A, B and C under KEY (siphash_3u64).  Any context. */
u64 cepm_shim_hash_3u64(const struct cepm_hash_key *key, u64 a, u64 b, u64 c);

/* ---- Fault points for tests (cepm_fault.c) ---- */

/*
 * /sys/kernel/debug/cepm/: knobs that make cepm drop, fail or wait on purpose
 * (cepm_fault.c describes each).  Built, as the kernel's own fail_* points
 * are (include/linux/fault-inject.h), only with
 * CONFIG_FAULT_INJECTION_DEBUG_FS.  Without it the hooks the shim calls
 * itself are the static inline no-ops below, and rust/shim/fault.rs calls
 * none of the others.
 */
#ifdef CONFIG_FAULT_INJECTION_DEBUG_FS
/*
 * The knobs, and listen_shards, which reads CM_CTX (the CM's context) through
 * cepm_rust_listen_shards until cepm_shim_fault_remove returns.
 */
void cepm_shim_fault_create(void *cm_ctx);
void cepm_shim_fault_remove(void);
/* Sleeps for destroy_delay_ms.  Process context. */
void cepm_shim_fault_destroy_delay(void);
/* LISTEN's window between finding its CEP and locking it (listen_delay_ms).  Process context. */
void cepm_shim_fault_listen_delay(void);
/* CONNECT's and SIDR_REQ's window between finding their port and using it (request_delay_ms). */
void cepm_shim_fault_request_delay(void);
/* A managed port's release, before its agents go (port_release_delay_ms).  Process context. */
void cepm_shim_fault_port_release_delay(void);
/* Whether this handle reservation is to fail (fail_handle_count). */
bool cepm_shim_fault_fail_handle(void);
/* Whether this push onto a listener's backlog is to fail (fail_backlog_push_count). */
bool cepm_shim_fault_fail_backlog_push(void);
/* Whether this device is to fail to join the device list (fail_device_list_count). */
bool cepm_shim_fault_fail_device_list(void);

/* The shim's own: whether to drop this received MAD (drop_rx_count, drop_rx_attr). */
bool cepm_fault_drop_rx(const struct ib_mad_recv_wc *recv_wc);
/* Whether a RoCE port is to pass for native InfiniBand (pretend_ib). */
bool cepm_fault_pretend_ib(void);
#else
static inline bool cepm_fault_drop_rx(const struct ib_mad_recv_wc *recv_wc)
{
	return false;
}

static inline bool cepm_fault_pretend_ib(void)
{
	return false;
}
#endif /* CONFIG_FAULT_INJECTION_DEBUG_FS */

#endif /* CEPM_SHIM_H */
