// SPDX-License-Identifier: GPL-2.0
/*
 * Thin C shim between cepm's Rust code and the RDMA core.  Only what Rust
 * cannot call directly lives here: static inlines (rdma_cap_ib_cm,
 * rdma_start_port, ...), structs with bitfields and unions (ib_mad_reg_req,
 * ib_mad_recv_wc) and the static ib_client.  No policy: every decision is
 * made in Rust.  The prototypes are in cepm_shim.h.
 */
#include <linux/atomic.h>
#include <linux/capability.h>
#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/err.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/poll.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/user_namespace.h>
#include <linux/workqueue.h>
#include <net/dst.h>
#include <net/ip6_route.h>
#include <net/neighbour.h>
#include <net/route.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_mad.h>
#include <rdma/ib_verbs.h>

#include "cepm_shim.h"
#include "../include/uapi/cepm.h"

/*
 * cepm.devices: the RDMA devices cepm manages, comma-separated; empty (the
 * default) for all.  Read-only once loaded, so the Rust side may read it
 * without locking.  Devices left out stay free for ib_cm.
 */
static char cepm_devices[256];
module_param_string(devices, cepm_devices, sizeof(cepm_devices), 0444);
MODULE_PARM_DESC(devices, "RDMA devices to manage, comma-separated (default: all)");

const char *cepm_shim_devices_param(void)
{
	return cepm_devices;
}

/*
 * The other parameters live here too, not in Rust's module! macro: the 7.3
 * kernel crate gives its parameters no sysfs file, so neither users nor the
 * selftests' baseline could read them.  Rust reads them through
 * cepm_shim_params(); they are read-only once loaded.
 */
static unsigned int cepm_event_queue_max = CEPM_EVENT_QUEUE_MAX;
module_param_named(event_queue_max, cepm_event_queue_max, uint, 0444);
MODULE_PARM_DESC(event_queue_max,
		 "Events that may wait on one /dev/cepm file (default CEPM_EVENT_QUEUE_MAX, 4096; 1 to 65536); more are lost and read() says EOVERFLOW");

static unsigned int cepm_timewait_ms;
module_param_named(timewait_ms, cepm_timewait_ms, uint, 0444);
MODULE_PARM_DESC(timewait_ms,
		 "Timewait length in ms; 0 (default) follows the protocol (the QP's local ACK timeout)");

static unsigned int cepm_inject_init_failure;
module_param_named(inject_init_failure, cepm_inject_init_failure, uint, 0444);
MODULE_PARM_DESC(inject_init_failure,
		 "For tests: make one step of module init fail with ENOMEM (1: the ib_client registration, 2: the /dev/cepm registration); 0 (default): none");

/* What one file and one user may hold (docs/abi.md, "Privileges and limits"). */
static unsigned int cepm_max_ceps_per_file = 65536;
module_param_named(max_ceps_per_file, cepm_max_ceps_per_file, uint, 0444);
MODULE_PARM_DESC(max_ceps_per_file, "CEPs one /dev/cepm file may own (default 65536); more: EMFILE");

static unsigned int cepm_max_ceps_per_user = 262144;
module_param_named(max_ceps_per_user, cepm_max_ceps_per_user, uint, 0444);
MODULE_PARM_DESC(max_ceps_per_user, "CEPs one user's files may own together (default 262144); more: EDQUOT");

static unsigned int cepm_max_listens_per_file = 256;
module_param_named(max_listens_per_file, cepm_max_listens_per_file, uint, 0444);
MODULE_PARM_DESC(max_listens_per_file, "Listening CEPs of one file (default 256); more: EMFILE");

static unsigned int cepm_max_listens_per_user = 1024;
module_param_named(max_listens_per_user, cepm_max_listens_per_user, uint, 0444);
MODULE_PARM_DESC(max_listens_per_user, "Listening CEPs of one user (default 1024); more: EDQUOT");

static unsigned int cepm_listen_backlog = 1024;
module_param_named(listen_backlog, cepm_listen_backlog, uint, 0444);
MODULE_PARM_DESC(listen_backlog,
		 "REQs and SIDR_REQs one listener holds unclaimed (default 1024; 0 counts as 1); more are dropped, and their senders retry");

static unsigned int cepm_max_events_per_user = 262144;
module_param_named(max_events_per_user, cepm_max_events_per_user, uint, 0444);
MODULE_PARM_DESC(max_events_per_user,
		 "Events queued on one user's files together (default 262144); more are lost and read() says EOVERFLOW");

static unsigned int cepm_max_monitors_per_user = 16;
module_param_named(max_monitors_per_user, cepm_max_monitors_per_user, uint, 0444);
MODULE_PARM_DESC(max_monitors_per_user,
		 "Files of one user that monitor (CEPM_IOC_MONITOR) at once (default 16); more: EDQUOT");

void cepm_shim_params(struct cepm_params *out)
{
	out->event_queue_max = cepm_event_queue_max;
	out->timewait_ms = cepm_timewait_ms;
	out->inject_init_failure = cepm_inject_init_failure;
	out->max_ceps_per_file = cepm_max_ceps_per_file;
	out->max_ceps_per_user = cepm_max_ceps_per_user;
	out->max_listens_per_file = cepm_max_listens_per_file;
	out->max_listens_per_user = cepm_max_listens_per_user;
	out->max_monitors_per_user = cepm_max_monitors_per_user;
	out->max_events_per_user = cepm_max_events_per_user;
	out->listen_backlog = cepm_listen_backlog;
}

void cepm_shim_current_caps(struct cepm_caps *out)
{
	/* noaudit: every open asks, and a user without them is no event worth a log line. */
	out->net_admin = ns_capable_noaudit(&init_user_ns, CAP_NET_ADMIN);
	out->net_bind_service = ns_capable_noaudit(&init_user_ns, CAP_NET_BIND_SERVICE);
}

/*
 * A user's namespaces count against that user's limits: with the subordinate uids a login user
 * is given (/etc/subuid), each uid mapped into its namespaces would otherwise be a user with
 * limits of its own, as the kernel's ucounts charge each level of the chain for the same
 * reason.  The outermost owner holds at least what any level below it does, so charging it
 * alone is enough.  A namespace global root made (a container's) is not charged to root: root
 * hands those uids out as it hands out login uids, as enforced_nproc_rlimit exempts them.
 * Only the task's own credentials are read: they cannot change under it, and each namespace
 * holds its parent, whose owner and parent never change.
 */
u32 cepm_shim_current_account(void)
{
	const struct cred *cred = current_cred();
	const struct user_namespace *ns;
	kuid_t account = cred->euid;

	/* Innermost first: the last owner that is not root is the outermost one. */
	for (ns = cred->user_ns; ns != &init_user_ns; ns = ns->parent)
		if (!uid_eq(ns->owner, GLOBAL_ROOT_UID))
			account = ns->owner;
	return __kuid_val(account);
}

/*
 * A CEP that a peer's REQ spawns is allocated by the MAD layer's work, where no memory cgroup
 * can be charged; it is charged to the task that claims it, as __sk_charge charges a socket
 * born of a SYN to the task that accepts it.  Only memory allocated with __GFP_ACCOUNT can be
 * charged after the fact (kmem_cache_charge); any address inside such a slab object names it
 * (SLUB finds the object by its index in its slab).  Anything else is left alone.  Atomic:
 * called under the CEP's lock; an atomic charge goes over the cgroup's limit rather than fail.
 */
bool cepm_shim_charge_current(const void *obj)
{
	if (!obj || !virt_addr_valid(obj) || !folio_test_slab(virt_to_folio(obj)))
		return false;
	return kmem_cache_charge((void *)obj, GFP_ATOMIC);
}

/*
 * The Rust context of the ib_client callbacks: ib_client.add gets no pointer
 * of the client's, so it is kept here, set before registration.
 */
static void *cepm_client_ctx;

static int cepm_client_add(struct ib_device *device)
{
	return cepm_rust_add_device(cepm_client_ctx, device);
}

static void cepm_client_remove(struct ib_device *device, void *client_data)
{
	cepm_rust_remove_device(cepm_client_ctx, device);
}

static void cepm_client_rename(struct ib_device *device, void *client_data)
{
	cepm_rust_rename_device(cepm_client_ctx, device);
}

static struct ib_client cepm_client = {
	.name = "cepm",
	.add = cepm_client_add,
	.remove = cepm_client_remove,
	.rename = cepm_client_rename,
};

int cepm_shim_client_register(void *ctx)
{
	int ret;

	/* One client, one context: a second registration would overwrite the first's. */
	if (cepm_client_ctx)
		return -EBUSY;
	cepm_client_ctx = ctx;
	ret = ib_register_client(&cepm_client);
	if (ret)
		cepm_client_ctx = NULL;
	return ret;
}

void cepm_shim_client_unregister(void)
{
	ib_unregister_client(&cepm_client);
	cepm_client_ctx = NULL;
}

/*
 * ib_device.name, not dev_name(): a rename frees the string dev_name() points
 * at, while name is an array in the device.  ib_device_rename writes it under
 * devices_rwsem, which ib_core holds around the add and rename callbacks, the
 * only places cepm reads it.
 */
void cepm_shim_device_name(struct ib_device *device, char *buf, size_t len)
{
	strscpy(buf, device->name, len);
}

u64 cepm_shim_device_node_guid(struct ib_device *device)
{
	return be64_to_cpu(device->node_guid);
}

u8 cepm_shim_device_ack_delay(struct ib_device *device)
{
	return device->attrs.local_ca_ack_delay;
}

u32 cepm_shim_start_port(struct ib_device *device)
{
	return rdma_start_port(device);
}

u32 cepm_shim_end_port(struct ib_device *device)
{
	return rdma_end_port(device);
}

bool cepm_shim_port_has_ib_cm(struct ib_device *device, u32 port)
{
	return rdma_cap_ib_cm(device, port);
}

/*
 * Fault injection for tests, in debugfs (root only): the next drop_rx_count
 * received CM MADs whose attribute ID is drop_rx_attr (0: any) are dropped
 * before cepm sees them, as if the wire had lost them.  rx_dropped counts
 * them.  This is how the selftests lose exactly one RTU or one DREQ on
 * loopback, where no qdisc sits between the two ends.
 *
 * destroy_delay_ms makes every CEP destroy sleep that long after it has let
 * go of the CEP's lock and before it frees what it took out (the peer and its
 * address handle among them): it holds that window open so that a test can
 * remove the device in it.
 *
 * listen_delay_ms makes every CEPM_IOC_LISTEN sleep that long after it has
 * found its CEP by handle and before it takes the CEP's lock: the window in
 * which a CEPM_IOC_MIGRATE may move the CEP to another file.  listen_delayed
 * counts the LISTENs that entered it, so that a test knows when one is there.
 *
 * request_delay_ms makes every CEPM_IOC_CONNECT and CEPM_IOC_SIDR_REQ sleep
 * that long after it has found its port and before it uses it: the window in
 * which the port's device may go.  request_delayed counts the calls that
 * entered it.
 *
 * The next fail_handle_count handle reservations on a /dev/cepm file fail
 * with EMFILE, as if the file's handle numbers had run out.
 *
 * The next fail_backlog_push_count requests (REQ or SIDR_REQ) offered to a
 * listener fail to join its backlog as if the atomic allocation that makes
 * room there had failed.
 *
 * While pretend_ib is set, devices added are taken for native InfiniBand
 * ones (the VM has only RoCE and iWARP devices).
 */
static struct dentry *cepm_debugfs;
static u32 cepm_destroy_delay_ms;
static u32 cepm_listen_delay_ms;
static atomic_t cepm_listen_delayed = ATOMIC_INIT(0);
static u32 cepm_request_delay_ms;
static atomic_t cepm_request_delayed = ATOMIC_INIT(0);
static u16 cepm_drop_rx_attr;
static atomic_t cepm_drop_rx_count = ATOMIC_INIT(0);
static atomic_t cepm_rx_dropped = ATOMIC_INIT(0);
static atomic_t cepm_fail_handle_count = ATOMIC_INIT(0);
static atomic_t cepm_fail_backlog_push_count = ATOMIC_INIT(0);
static bool cepm_pretend_ib;

/* pretend_ib: a RoCE port passes for native InfiniBand. */
bool cepm_shim_port_is_roce(struct ib_device *device, u32 port)
{
	return rdma_protocol_roce(device, port) && !READ_ONCE(cepm_pretend_ib);
}

static bool cepm_fault_drop_rx(const struct ib_mad_recv_wc *recv_wc)
{
	u16 attr = READ_ONCE(cepm_drop_rx_attr);

	if (!atomic_read(&cepm_drop_rx_count))
		return false;
	if (attr && be16_to_cpu(recv_wc->recv_buf.mad->mad_hdr.attr_id) != attr)
		return false;
	if (atomic_dec_if_positive(&cepm_drop_rx_count) < 0)
		return false;
	atomic_inc(&cepm_rx_dropped);
	return true;
}

void cepm_shim_debugfs_create(void)
{
	/* Best effort, like all of debugfs: no directory, no fault injection. */
	cepm_debugfs = debugfs_create_dir("cepm", NULL);
	debugfs_create_x16("drop_rx_attr", 0600, cepm_debugfs, &cepm_drop_rx_attr);
	debugfs_create_atomic_t("drop_rx_count", 0600, cepm_debugfs, &cepm_drop_rx_count);
	debugfs_create_atomic_t("rx_dropped", 0400, cepm_debugfs, &cepm_rx_dropped);
	debugfs_create_u32("destroy_delay_ms", 0600, cepm_debugfs, &cepm_destroy_delay_ms);
	debugfs_create_u32("listen_delay_ms", 0600, cepm_debugfs, &cepm_listen_delay_ms);
	debugfs_create_atomic_t("listen_delayed", 0400, cepm_debugfs, &cepm_listen_delayed);
	debugfs_create_u32("request_delay_ms", 0600, cepm_debugfs, &cepm_request_delay_ms);
	debugfs_create_atomic_t("request_delayed", 0400, cepm_debugfs, &cepm_request_delayed);
	debugfs_create_atomic_t("fail_handle_count", 0600, cepm_debugfs, &cepm_fail_handle_count);
	debugfs_create_atomic_t("fail_backlog_push_count", 0600, cepm_debugfs,
				&cepm_fail_backlog_push_count);
	debugfs_create_bool("pretend_ib", 0600, cepm_debugfs, &cepm_pretend_ib);
}

/*
 * Cancels the delayed work whose work_struct is @work and waits for a running
 * instance to finish; true if it was pending (its queued reference is then the
 * caller's to drop).  The Rust workqueue abstraction has no cancel.
 */
bool cepm_shim_cancel_delayed_work_sync(void *work)
{
	return cancel_delayed_work_sync(to_delayed_work(work));
}

/*
 * The Rust workqueue abstraction has no alloc_workqueue (a varargs macro).
 * Unbound: timewait's end has no CPU to stay on (and 7.3 warns unless a
 * workqueue says which it is).
 */
struct workqueue_struct *cepm_shim_alloc_workqueue(const char *name)
{
	return alloc_workqueue("%s", WQ_UNBOUND, 0, name);
}

void cepm_shim_fault_destroy_delay(void)
{
	u32 ms = READ_ONCE(cepm_destroy_delay_ms);

	if (ms)
		msleep(ms);
}

static void cepm_fault_delay(u32 ms, atomic_t *entered)
{
	if (ms) {
		atomic_inc(entered);
		msleep(ms);
	}
}

void cepm_shim_fault_listen_delay(void)
{
	cepm_fault_delay(READ_ONCE(cepm_listen_delay_ms), &cepm_listen_delayed);
}

void cepm_shim_fault_request_delay(void)
{
	cepm_fault_delay(READ_ONCE(cepm_request_delay_ms), &cepm_request_delayed);
}

bool cepm_shim_fault_fail_handle(void)
{
	return atomic_dec_if_positive(&cepm_fail_handle_count) >= 0;
}

bool cepm_shim_fault_fail_backlog_push(void)
{
	return atomic_dec_if_positive(&cepm_fail_backlog_push_count) >= 0;
}

void cepm_shim_debugfs_remove(void)
{
	debugfs_remove(cepm_debugfs);
}

/* The network header type of a RoCE MAD, as the driver reports it or as its header shows. */
static enum rdma_network_type cepm_roce_net_type(const struct ib_wc *wc, const struct ib_grh *grh)
{
	if (wc->wc_flags & IB_WC_WITH_NETWORK_HDR_TYPE)
		return wc->network_hdr_type;
	if (ib_get_rdma_header_version((const union rdma_network_hdr *)grh) == 4)
		return RDMA_NETWORK_IPV4;
	return grh->next_hdr == IPPROTO_UDP ? RDMA_NETWORK_IPV6 : RDMA_NETWORK_ROCE_V1;
}

/* The route from OURS to THEIRS in NDEV's namespace, leaving by NDEV; NULL if there is none. */
static struct dst_entry *cepm_route(struct net_device *ndev, const union ib_gid *ours,
				    const union ib_gid *theirs)
{
	const struct in6_addr *daddr = (const struct in6_addr *)theirs->raw;
	const struct in6_addr *saddr = (const struct in6_addr *)ours->raw;

	if (ipv6_addr_v4mapped(daddr)) {
		struct rtable *rt = ip_route_output(dev_net(ndev), daddr->s6_addr32[3],
						    saddr->s6_addr32[3], 0, ndev->ifindex,
						    RT_SCOPE_UNIVERSE);

		return IS_ERR(rt) ? NULL : &rt->dst;
	}
#if IS_ENABLED(CONFIG_IPV6)
	{
		struct flowi6 fl6 = {
			.daddr = *daddr,
			.saddr = *saddr,
			.flowi6_oif = ndev->ifindex,
		};
		struct dst_entry *dst = ip6_route_output(dev_net(ndev), NULL, &fl6);

		if (!dst->error)
			return dst;
		dst_release(dst);
	}
#endif
	return NULL;
}

/*
 * Whether the MAC an answer to RECV would go to is not known yet, looked up without waiting the
 * way the RDMA core's address resolution looks it up (a route leaving by the GID's netdev, and
 * its next hop's neighbour entry); if so, its resolution is started.  Anything this cannot
 * judge counts as known: ib_init_ah_attr_from_wc decides, as without this.
 */
static bool cepm_reply_mac_unknown(struct ib_mad_agent *agent, struct ib_mad_recv_wc *recv)
{
	const struct ib_grh *grh = recv->recv_buf.grh;
	const struct ib_gid_attr *gid_attr;
	enum rdma_network_type net_type;
	union ib_gid theirs, ours;
	struct net_device *ndev;
	struct dst_entry *dst;
	struct neighbour *n;
	bool unknown = false;

	if (!rdma_protocol_roce(agent->device, agent->port_num) || !grh ||
	    !(recv->wc->wc_flags & IB_WC_GRH))
		return false;
	net_type = cepm_roce_net_type(recv->wc, grh);
	if (ib_get_gids_from_rdma_hdr((const union rdma_network_hdr *)grh, net_type, &theirs,
				      &ours))
		return false;
	/* A RoCE v1 peer's link-local GID holds its MAC: no IP stack is asked. */
	if (net_type == RDMA_NETWORK_ROCE_V1 && rdma_link_local_addr((struct in6_addr *)theirs.raw))
		return false;
	gid_attr = rdma_find_gid_by_port(agent->device, &ours, ib_network_to_gid_type(net_type),
					 agent->port_num, NULL);
	if (IS_ERR(gid_attr))
		return false;
	rcu_read_lock();
	ndev = rdma_read_gid_attr_ndev_rcu(gid_attr);
	dst = IS_ERR(ndev) ? NULL : cepm_route(ndev, &ours, &theirs);
	/* To one of this host's own addresses: the answer goes to the netdev's own MAC. */
	if (dst && !(dst->dev->flags & IFF_LOOPBACK)) {
		const void *daddr = ipv6_addr_v4mapped((struct in6_addr *)theirs.raw) ?
			(const void *)&theirs.raw[12] : (const void *)theirs.raw;

		n = dst_neigh_lookup(dst, daddr);
		/* No entry (a full table): the RDMA core's resolution would wait its second too. */
		if (!n) {
			unknown = true;
		} else {
			if (!(READ_ONCE(n->nud_state) & NUD_VALID)) {
				neigh_event_send(n, NULL);
				unknown = true;
			}
			neigh_release(n);
		}
	}
	dst_release(dst);
	rcu_read_unlock();
	rdma_put_gid_attr(gid_attr);
	return unknown;
}

/*
 * MADs whose answer's MAC is not known yet, handled away from the MAD layer's receive handler
 * (which every MAD of the port goes through), where finding that MAC may wait a second: at
 * most this many at a time on a port, each on a worker of the agent's own workqueue.  More are
 * dropped, and answered when their senders retry; a peer that sends from addresses no one
 * answers for can hold these workers, and no one else's MADs.  Linux's CM handles every MAD on
 * its ib_cm workqueue, one at a time on each CPU, and the same wait holds them all back.
 */
#define CEPM_UNRESOLVED_MAX 16

/* An agent's context: the Rust handler's, its callbacks, and its MADs handled later. */
struct cepm_agent_ctx {
	void *ctx;
	cepm_recv_mad_fn *recv;
	cepm_send_done_fn *send_done;
	/* NULL for a send-only agent. */
	struct workqueue_struct *unresolved_wq;
	/* Guards the two below against the agent's unregistration. */
	spinlock_t lock;
	unsigned int unresolved;
	bool closing;
};

/* A received MAD kept for the agent's workqueue (ib_free_recv_mad once handled). */
struct cepm_unresolved_mad {
	struct work_struct work;
	struct ib_mad_agent *agent;
	struct ib_mad_recv_wc *recv_wc;
};

static void cepm_agent_handle(struct ib_mad_agent *agent, struct ib_mad_recv_wc *recv_wc)
{
	struct cepm_agent_ctx *actx = agent->context;

	/* CM MADs are never RMPP: one 256-byte segment. */
	actx->recv(actx->ctx, agent, recv_wc, (const u8 *)recv_wc->recv_buf.mad,
		   recv_wc->mad_len);
	ib_free_recv_mad(recv_wc);
}

static void cepm_unresolved_work(struct work_struct *work)
{
	struct cepm_unresolved_mad *um = container_of(work, struct cepm_unresolved_mad, work);
	struct ib_mad_agent *agent = um->agent;
	struct cepm_agent_ctx *actx = agent->context;

	cepm_agent_handle(agent, um->recv_wc);
	kfree(um);
	spin_lock(&actx->lock);
	actx->unresolved--;
	spin_unlock(&actx->lock);
}

/* Hands RECV_WC to the agent's workqueue; false if it has no room or is closing. */
static bool cepm_defer_unresolved(struct ib_mad_agent *agent, struct ib_mad_recv_wc *recv_wc)
{
	struct cepm_agent_ctx *actx = agent->context;
	struct cepm_unresolved_mad *um;
	bool queued = false;

	um = kmalloc(sizeof(*um), GFP_KERNEL);
	if (!um)
		return false;
	INIT_WORK(&um->work, cepm_unresolved_work);
	um->agent = agent;
	um->recv_wc = recv_wc;
	spin_lock(&actx->lock);
	if (!actx->closing && actx->unresolved < CEPM_UNRESOLVED_MAX) {
		actx->unresolved++;
		queued = queue_work(actx->unresolved_wq, &um->work);
	}
	spin_unlock(&actx->lock);
	if (!queued)
		kfree(um);
	return queued;
}

/*
 * Whether cepm may answer RECV_WC at the address it came from (a stateless answer, or a new
 * CEP's peer): a REQ, DREQ or SIDR_REQ.  Answers to the others go to a CEP's peer, whose MAC
 * is known, or nowhere.
 */
static bool cepm_answered_from_wc(const struct ib_mad_recv_wc *recv_wc)
{
	/* The CM attribute IDs of REQ, DREQ and SIDR_REQ (proto/src/mad.rs, AttrId). */
	switch (be16_to_cpu(recv_wc->recv_buf.mad->mad_hdr.attr_id)) {
	case 0x0010:
	case 0x0015:
	case 0x0017:
		return true;
	default:
		return false;
	}
}

static void cepm_agent_recv(struct ib_mad_agent *agent,
			    struct ib_mad_send_buf *send_buf,
			    struct ib_mad_recv_wc *recv_wc)
{
	if (cepm_fault_drop_rx(recv_wc)) {
		ib_free_recv_mad(recv_wc);
		return;
	}
	if (cepm_answered_from_wc(recv_wc) && cepm_reply_mac_unknown(agent, recv_wc)) {
		if (!cepm_defer_unresolved(agent, recv_wc))
			ib_free_recv_mad(recv_wc);
		return;
	}
	cepm_agent_handle(agent, recv_wc);
}

static void cepm_agent_send_done(struct ib_mad_agent *agent,
				 struct ib_mad_send_wc *send_wc)
{
	void *msg_ctx = send_wc->send_buf->context[0];
	int status;

	switch (send_wc->status) {
	case IB_WC_SUCCESS:
		status = 0;
		break;
	case IB_WC_RESP_TIMEOUT_ERR:
		status = -ETIMEDOUT;
		break;
	case IB_WC_WR_FLUSH_ERR:
		status = -ECANCELED;
		break;
	default:
		status = -EIO;
		break;
	}
	/*
	 * Rust first: whoever may still cancel this buffer learns under its own
	 * lock that it is done, before the buffer goes.
	 */
	struct cepm_agent_ctx *actx = agent->context;

	actx->send_done(actx->ctx, msg_ctx, status);
	ib_free_send_mad(send_wc->send_buf);
}

struct ib_mad_agent *cepm_shim_agent_register(struct ib_device *device, u32 port,
					      bool send_only, void *port_ctx,
					      cepm_recv_mad_fn *recv,
					      cepm_send_done_fn *send_done)
{
	struct ib_mad_reg_req req = {
		.mgmt_class = CEPM_MGMT_CLASS_CM,
		.mgmt_class_version = CEPM_CM_CLASS_VERSION,
	};
	struct cepm_agent_ctx *actx;
	struct ib_mad_agent *agent;

	actx = kzalloc(sizeof(*actx), GFP_KERNEL);
	if (!actx)
		return ERR_PTR(-ENOMEM);
	actx->ctx = port_ctx;
	actx->recv = recv;
	actx->send_done = send_done;
	spin_lock_init(&actx->lock);
	if (!send_only) {
		/* One name for all: a device's name could take it past WQ_NAME_LEN. */
		actx->unresolved_wq = alloc_workqueue("cepm_unresolved", WQ_UNBOUND,
						     CEPM_UNRESOLVED_MAX);
		if (!actx->unresolved_wq) {
			kfree(actx);
			return ERR_PTR(-ENOMEM);
		}
	}
	if (send_only) {
		agent = ib_register_mad_agent(device, port, IB_QPT_GSI, NULL, 0,
					      cepm_agent_send_done, NULL, actx, 0);
	} else {
		set_bit(IB_MGMT_METHOD_SEND, req.method_mask);
		agent = ib_register_mad_agent(device, port, IB_QPT_GSI, &req, 0,
					      cepm_agent_send_done, cepm_agent_recv,
					      actx, 0);
	}
	if (IS_ERR(agent)) {
		if (actx->unresolved_wq)
			destroy_workqueue(actx->unresolved_wq);
		kfree(actx);
	}
	return agent;
}

void cepm_shim_agent_unregister(struct ib_mad_agent *agent)
{
	struct cepm_agent_ctx *actx = agent->context;

	/*
	 * The MADs handed to the workqueue use the agent: they are handled first, while it is
	 * registered, and no more are handed over (the receive handler may still run until the
	 * agent is unregistered).
	 */
	if (actx->unresolved_wq) {
		spin_lock(&actx->lock);
		actx->closing = true;
		spin_unlock(&actx->lock);
		flush_workqueue(actx->unresolved_wq);
	}
	/* Waits for running handlers: none uses actx afterwards. */
	ib_unregister_mad_agent(agent);
	if (actx->unresolved_wq)
		destroy_workqueue(actx->unresolved_wq);
	kfree(actx);
}

u32 cepm_shim_agent_hi_tid(struct ib_mad_agent *agent)
{
	return agent->hi_tid;
}

struct ib_ah *cepm_shim_recv_reply_ah(struct ib_mad_agent *agent,
				      struct ib_mad_recv_wc *recv)
{
	return ib_create_ah_from_wc(agent->qp->pd, recv->wc, recv->recv_buf.grh,
				    agent->port_num);
}

/* What attr points at, as cepm_ah_info (RoCE: GRH fields and next-hop MAC). */
static void cepm_ah_info_from_attr(const struct rdma_ah_attr *attr, struct cepm_ah_info *info)
{
	const struct ib_global_route *grh;

	memset(info, 0, sizeof(*info));
	info->sl = rdma_ah_get_sl(attr);
	info->port_num = rdma_ah_get_port_num(attr);
	if (rdma_ah_get_ah_flags(attr) & IB_AH_GRH) {
		grh = rdma_ah_read_grh(attr);
		memcpy(info->dgid, grh->dgid.raw, sizeof(info->dgid));
		info->sgid_index = grh->sgid_index;
		info->hop_limit = grh->hop_limit;
		info->flow_label = grh->flow_label;
		info->traffic_class = grh->traffic_class;
	}
	if (attr->type == RDMA_AH_ATTR_TYPE_ROCE)
		memcpy(info->dmac, attr->roce.dmac, ETH_ALEN);
}

int cepm_shim_recv_reply_info(struct ib_mad_agent *agent, struct ib_mad_recv_wc *recv,
			      struct cepm_ah_info *info)
{
	struct rdma_ah_attr attr;
	int ret;

	ret = ib_init_ah_attr_from_wc(agent->device, agent->port_num, recv->wc,
				      recv->recv_buf.grh, &attr);
	if (ret)
		return ret;
	cepm_ah_info_from_attr(&attr, info);
	rdma_destroy_ah_attr(&attr);
	return 0;
}

struct ib_ah *cepm_shim_create_ah(struct ib_mad_agent *agent, const struct cepm_ah_info *info)
{
	struct rdma_ah_attr attr = {};
	union ib_gid dgid;

	attr.type = rdma_ah_find_type(agent->device, agent->port_num);
	rdma_ah_set_port_num(&attr, agent->port_num);
	rdma_ah_set_sl(&attr, info->sl);
	memcpy(dgid.raw, info->dgid, sizeof(dgid.raw));
	rdma_ah_set_grh(&attr, &dgid, info->flow_label, info->sgid_index,
			info->hop_limit, info->traffic_class);
	if (attr.type == RDMA_AH_ATTR_TYPE_ROCE)
		memcpy(attr.roce.dmac, info->dmac, ETH_ALEN);
	return rdma_create_ah(agent->qp->pd, &attr, 0);
}

int cepm_shim_query_gid(struct ib_mad_agent *agent, u8 index, u8 *gid)
{
	union ib_gid g;
	int ret = rdma_query_gid(agent->device, agent->port_num, index, &g);

	if (!ret)
		memcpy(gid, g.raw, sizeof(g.raw));
	return ret;
}

int cepm_shim_query_source_gid(struct ib_mad_agent *agent, u8 index, u8 *gid)
{
	enum ib_gid_type spoken = rdma_protocol_roce(agent->device, agent->port_num) ?
		IB_GID_TYPE_ROCE_UDP_ENCAP : IB_GID_TYPE_IB;
	const struct ib_gid_attr *attr = rdma_get_gid_attr(agent->device, agent->port_num, index);
	int ret = 0;

	if (IS_ERR(attr))
		return PTR_ERR(attr);
	if (attr->gid_type == spoken)
		memcpy(gid, attr->gid.raw, sizeof(attr->gid.raw));
	else
		ret = -EINVAL;
	rdma_put_gid_attr(attr);
	return ret;
}

bool cepm_shim_agent_has_gid(struct ib_mad_agent *agent, const u8 *gid)
{
	/* IB_GID_TYPE_ROCE is IB_GID_TYPE_IB: these two cover RoCE v1, v2 and IB. */
	static const enum ib_gid_type types[] = { IB_GID_TYPE_IB, IB_GID_TYPE_ROCE_UDP_ENCAP };
	const struct ib_gid_attr *attr;
	int i;

	for (i = 0; i < ARRAY_SIZE(types); i++) {
		attr = rdma_find_gid_by_port(agent->device, (const union ib_gid *)gid, types[i],
					     agent->port_num, NULL);
		if (!IS_ERR(attr)) {
			rdma_put_gid_attr(attr);
			return true;
		}
	}
	return false;
}

void cepm_shim_destroy_ah(struct ib_ah *ah)
{
	rdma_destroy_ah(ah, 0);
}

struct ib_mad_send_buf *cepm_shim_send_mad(struct ib_mad_agent *agent, struct ib_ah *ah,
					   u16 pkey_index, const u8 *mad, int timeout_ms,
					   int retries, void *msg_ctx, bool may_sleep)
{
	struct ib_mad_send_buf *buf;
	int ret;

	/*
	 * Charged to the sending task's memory cgroup, as the rest of the send is
	 * (send_alloc_flags() in shim/rdma.rs): a retried send keeps this buffer.
	 */
	buf = ib_create_send_mad(agent, 1 /* GSI QP */, pkey_index, 0,
				 IB_MGMT_MAD_HDR, IB_MGMT_MAD_DATA,
				 may_sleep ? GFP_KERNEL_ACCOUNT : GFP_ATOMIC | __GFP_ACCOUNT,
				 IB_MGMT_BASE_VERSION);
	if (IS_ERR(buf))
		return buf;
	memcpy(buf->mad, mad, sizeof(struct ib_mad));
	buf->ah = ah;
	buf->timeout_ms = timeout_ms;
	buf->retries = retries;
	buf->context[0] = msg_ctx;
	ret = ib_post_send_mad(buf, NULL);
	if (ret) {
		ib_free_send_mad(buf);
		return ERR_PTR(ret);
	}
	return buf;
}

void cepm_shim_cancel_mad(struct ib_mad_send_buf *send_buf)
{
	ib_cancel_mad(send_buf);
}

int cepm_shim_modify_mad(struct ib_mad_send_buf *send_buf, u32 timeout_ms)
{
	return ib_modify_mad(send_buf, timeout_ms);
}

/* The misc device, and the Rust context its open callback gets. */
struct cepm_chardev {
	struct miscdevice misc;
	void *ctx;
};

static int cepm_fop_open(struct inode *inode, struct file *file)
{
	/* misc_open() put the miscdevice in private_data. */
	struct cepm_chardev *chardev =
		container_of(file->private_data, struct cepm_chardev, misc);
	void *ctx = cepm_rust_open(chardev->ctx);

	if (IS_ERR(ctx))
		return PTR_ERR(ctx);
	file->private_data = ctx;
	return nonseekable_open(inode, file);
}

static int cepm_fop_release(struct inode *inode, struct file *file)
{
	cepm_rust_release(file->private_data);
	return 0;
}

static long cepm_fop_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	return cepm_rust_ioctl(file->private_data, cmd, arg);
}

static ssize_t cepm_fop_read(struct file *file, char __user *buf, size_t len, loff_t *pos)
{
	return cepm_rust_read(file->private_data, (unsigned long)buf, len,
			      file->f_flags & O_NONBLOCK);
}

static __poll_t cepm_fop_poll(struct file *file, struct poll_table_struct *wait)
{
	return (__force __poll_t)cepm_rust_poll(file->private_data, file, wait);
}

static const struct file_operations cepm_fops = {
	.owner = THIS_MODULE,
	.open = cepm_fop_open,
	.release = cepm_fop_release,
	.unlocked_ioctl = cepm_fop_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.read = cepm_fop_read,
	.poll = cepm_fop_poll,
};

void *cepm_shim_get_file_ctx(int fd, struct file **filp)
{
	struct file *file = fget(fd);

	if (!file)
		return ERR_PTR(-EBADF);
	/* Only our own files have a context of ours in private_data. */
	if (file->f_op != &cepm_fops) {
		fput(file);
		return ERR_PTR(-EINVAL);
	}
	*filp = file;
	return file->private_data;
}

void cepm_shim_put_file(struct file *filp)
{
	fput(filp);
}

static struct cepm_chardev cepm_chardev = {
	.misc = {
		.minor = MISC_DYNAMIC_MINOR,
		.name = "cepm",
		.fops = &cepm_fops,
		.mode = 0600,
	},
};

int cepm_shim_chardev_register(void *ctx)
{
	int ret;

	/* One device, one context, as for the client. */
	if (cepm_chardev.ctx)
		return -EBUSY;
	cepm_chardev.ctx = ctx;
	ret = misc_register(&cepm_chardev.misc);
	if (ret)
		cepm_chardev.ctx = NULL;
	return ret;
}

void cepm_shim_chardev_unregister(void)
{
	misc_deregister(&cepm_chardev.misc);
	cepm_chardev.ctx = NULL;
}
