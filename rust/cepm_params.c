// SPDX-License-Identifier: GPL-2.0
/*
 * The module parameters, and whom a caller's use of cepm counts against: its
 * capabilities, its account (whose per-user limits apply) and its memory
 * cgroup.
 */
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/nsproxy.h>
#include <linux/slab.h>
#include <linux/user_namespace.h>
#include <net/ip.h>
#include <net/net_namespace.h>

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
static struct cepm_params cepm_params = {
	.event_queue_max = CEPM_EVENT_QUEUE_MAX,
	/* What one file and one user may hold (docs/abi.md, "Privileges and limits"). */
	.max_ceps_per_file = 65536,
	.max_ceps_per_user = 262144,
	.max_listens_per_file = 256,
	.max_listens_per_user = 1024,
	.max_events_per_user = 262144,
	.listen_backlog = 1024,
	.max_monitors_per_user = 16,
	.max_ports_per_user = 16384,
};

/* The read-only parameter cepm.NAME, stored in cepm_params.NAME. */
#define cepm_param(name, desc)						\
	module_param_named(name, cepm_params.name, uint, 0444);		\
	MODULE_PARM_DESC(name, desc)

cepm_param(event_queue_max,
	   "Events that may wait on one /dev/cepm file (default CEPM_EVENT_QUEUE_MAX, 4096; 1 to 65536); more are lost and read() says EOVERFLOW");
cepm_param(timewait_ms,
	   "Timewait length in ms; 0 (default) follows the protocol (the QP's local ACK timeout)");
cepm_param(inject_init_failure,
	   "For tests: make one step of module init fail with ENOMEM (1: the ib_client registration, 2: the /dev/cepm registration); 0 (default): none");
cepm_param(max_ceps_per_file, "CEPs one /dev/cepm file may own (default 65536); more: EMFILE");
cepm_param(max_ceps_per_user,
	   "CEPs one user's files may own together (default 262144); more: EDQUOT");
cepm_param(max_listens_per_file, "Listening CEPs of one file (default 256); more: EMFILE");
cepm_param(max_listens_per_user, "Listening CEPs of one user (default 1024); more: EDQUOT");
cepm_param(listen_backlog,
	   "REQs and SIDR_REQs one listener holds unclaimed (default 1024; 0 counts as 1); more are dropped, and their senders retry");
cepm_param(max_events_per_user,
	   "Events queued on one user's files together (default 262144); more are lost and read() says EOVERFLOW");
cepm_param(max_monitors_per_user,
	   "Files of one user that monitor (CEPM_IOC_MONITOR) at once (default 16); more: EDQUOT");
cepm_param(max_ports_per_user,
	   "Ports of rdma_cm's port spaces one user's CEPs hold at once (CEPM_IOC_BIND; default 16384); more: EDQUOT");

struct net *cepm_shim_current_net(void)
{
	/* An exiting task has let go of its namespaces already. */
	return current->nsproxy ? get_net(current->nsproxy->net_ns) : NULL;
}

void cepm_shim_put_net(struct net *net)
{
	put_net(net);
}

u64 cepm_shim_net_cookie(const struct net *net)
{
	return net->net_cookie;
}

bool cepm_shim_net_is_initial(const struct net *net)
{
	return net_eq(net, &init_net);
}

void cepm_shim_local_port_range(const struct net *net, u16 *low, u16 *high)
{
	int lo, hi;

	inet_get_local_port_range(net, &lo, &hi);
	*low = clamp(lo, 1, 65535);
	*high = clamp(hi, *low, 65535);
}

void cepm_shim_params(struct cepm_params *out)
{
	*out = cepm_params;
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