// SPDX-License-Identifier: GPL-2.0
/*
 * MAD agents and address handles: cepm's GSI agents for the CM class, the
 * MADs they receive (with the hand-off of those whose answer's MAC is not
 * known yet) and send, and the address handles and GIDs their answers use.
 */
#include <linux/err.h>
#include <linux/etherdevice.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/workqueue.h>
#include <net/dst.h>
#include <net/ip6_route.h>
#include <net/neighbour.h>
#include <net/route.h>
#include <rdma/ib_addr.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_cm.h>
#include <rdma/ib_mad.h>
#include <rdma/ib_verbs.h>

#include "cepm_shim.h"

/*
 * The CM class version Linux's ib_cm speaks (IB_CM_CLASS_VERSION, private to
 * drivers/infiniband/core/cm_msgs.h).
 */
#define CEPM_CM_CLASS_VERSION 2

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

/*
 * How many bytes of the MAD arrived.  ib_mad's mad_len is the size of its receive buffer, not
 * what came in it: the receive's byte count is, less the room for the GRH that every UD
 * receive starts with (ib_mad_recv_done, drivers/infiniband/core/mad.c, sets the one and
 * leaves the other in the work completion).
 */
static size_t cepm_received_len(const struct ib_mad_recv_wc *recv_wc)
{
	u32 len = recv_wc->wc->byte_len;

	if (len < sizeof(struct ib_grh))
		return 0;
	return min_t(size_t, len - sizeof(struct ib_grh), recv_wc->mad_len);
}

static void cepm_agent_handle(struct ib_mad_agent *agent, struct ib_mad_recv_wc *recv_wc)
{
	struct cepm_agent_ctx *actx = agent->context;

	/* CM MADs are never RMPP: one 256-byte segment, or less if it came cut short. */
	actx->recv(actx->ctx, agent, recv_wc, (const u8 *)recv_wc->recv_buf.mad,
		   cepm_received_len(recv_wc));
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
	switch (recv_wc->recv_buf.mad->mad_hdr.attr_id) {
	case CM_REQ_ATTR_ID:
	case CM_DREQ_ATTR_ID:
	case CM_SIDR_REQ_ATTR_ID:
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
	struct cepm_agent_ctx *actx = agent->context;
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
	actx->send_done(actx->ctx, msg_ctx, status);
	ib_free_send_mad(send_wc->send_buf);
}

struct ib_mad_agent *cepm_shim_agent_register(struct ib_device *device, u32 port,
					      bool send_only, void *port_ctx,
					      cepm_recv_mad_fn *recv,
					      cepm_send_done_fn *send_done)
{
	struct ib_mad_reg_req req = {
		.mgmt_class = IB_MGMT_CLASS_CM,
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

/*
 * The cookie of the network namespace that owns attr: its netdev's, as
 * rdma_cm's cma_validate_port decides, or the device's for a GID without one.
 * -ENETUNREACH if that namespace may not use the device (the exclusive RDMA
 * netns mode).
 */
static int cepm_gid_attr_net(const struct ib_gid_attr *attr, u64 *cookie)
{
	struct net_device *ndev;
	const struct net *net;
	int ret = -ENETUNREACH;

	rcu_read_lock();
	ndev = rdma_read_gid_attr_ndev_rcu(attr);
	net = IS_ERR(ndev) ? read_pnet(&attr->device->coredev.rdma_net) : dev_net(ndev);
	if (rdma_dev_access_netns(attr->device, net)) {
		*cookie = net->net_cookie;
		ret = 0;
	}
	rcu_read_unlock();
	return ret;
}

int cepm_shim_query_source_gid(struct ib_mad_agent *agent, u8 index, u8 *gid, u64 *net)
{
	enum ib_gid_type spoken = rdma_protocol_roce(agent->device, agent->port_num) ?
		IB_GID_TYPE_ROCE_UDP_ENCAP : IB_GID_TYPE_IB;
	const struct ib_gid_attr *attr = rdma_get_gid_attr(agent->device, agent->port_num, index);
	int ret;

	if (IS_ERR(attr))
		return PTR_ERR(attr);
	ret = attr->gid_type == spoken ? cepm_gid_attr_net(attr, net) : -EINVAL;
	if (!ret)
		memcpy(gid, attr->gid.raw, sizeof(attr->gid.raw));
	rdma_put_gid_attr(attr);
	return ret;
}

int cepm_shim_gid_net(struct ib_mad_agent *agent, const u8 *gid, u64 *net)
{
	/* IB_GID_TYPE_ROCE is IB_GID_TYPE_IB: these two cover RoCE v1, v2 and IB. */
	static const enum ib_gid_type types[] = { IB_GID_TYPE_IB, IB_GID_TYPE_ROCE_UDP_ENCAP };
	const struct ib_gid_attr *attr;
	int i, ret;

	for (i = 0; i < ARRAY_SIZE(types); i++) {
		attr = rdma_find_gid_by_port(agent->device, (const union ib_gid *)gid, types[i],
					     agent->port_num, NULL);
		if (!IS_ERR(attr)) {
			ret = cepm_gid_attr_net(attr, net);
			rdma_put_gid_attr(attr);
			return ret;
		}
	}
	return -ENOENT;
}

int cepm_shim_gid_index_net(struct ib_mad_agent *agent, u8 index, u64 *net)
{
	const struct ib_gid_attr *attr = rdma_get_gid_attr(agent->device, agent->port_num, index);
	int ret;

	if (IS_ERR(attr))
		return PTR_ERR(attr);
	ret = cepm_gid_attr_net(attr, net);
	rdma_put_gid_attr(attr);
	return ret;
}

/* Whether DST leads to one of this host's own addresses (addr.c's is_dst_local). */
static bool cepm_dst_local(const struct dst_entry *dst)
{
	if (dst->ops->family == AF_INET)
		return dst_rtable(dst)->rt_type == RTN_LOCAL;
#if IS_ENABLED(CONFIG_IPV6)
	if (dst->ops->family == AF_INET6)
		return dst_rt6_info(dst)->rt6i_flags & RTF_LOCAL;
#endif
	return false;
}

int cepm_shim_next_hop_mac(struct ib_mad_agent *agent, u8 sgid_index, const u8 *dgid, u8 *mac)
{
	const struct ib_gid_attr *attr;
	u8 ha[MAX_ADDR_LEN];
	struct net_device *ndev;
	struct dst_entry *dst;
	union ib_gid theirs;
	struct neighbour *n;
	int ret = -ENETUNREACH;

	if (!rdma_protocol_roce(agent->device, agent->port_num))
		return 0;
	/* Nothing of the caller's may survive a failure. */
	eth_zero_addr(mac);
	attr = rdma_get_gid_attr(agent->device, agent->port_num, sgid_index);
	if (IS_ERR(attr))
		return PTR_ERR(attr);
	memcpy(theirs.raw, dgid, sizeof(theirs.raw));
	rcu_read_lock();
	ndev = rdma_read_gid_attr_ndev_rcu(attr);
	dst = IS_ERR(ndev) || ndev->addr_len != ETH_ALEN ? NULL :
		cepm_route(ndev, &attr->gid, &theirs);
	if (dst && cepm_dst_local(dst)) {
		/* One of this host's own addresses: the GID's netdev takes it. */
		ether_addr_copy(mac, ndev->dev_addr);
		ret = 0;
	} else if (dst && dst->dev == ndev) {
		const void *daddr = ipv6_addr_v4mapped((struct in6_addr *)theirs.raw) ?
			(const void *)&theirs.raw[12] : (const void *)theirs.raw;

		n = dst_neigh_lookup(dst, daddr);
		/* No entry (a full table) is as yet unknown: the caller asks again. */
		ret = -EAGAIN;
		if (n) {
			if (READ_ONCE(n->nud_state) & NUD_VALID) {
				neigh_ha_snapshot(ha, n, ndev);
				ether_addr_copy(mac, ha);
				ret = 0;
			} else {
				neigh_event_send(n, NULL);
			}
			neigh_release(n);
		}
	}
	/* Otherwise no route, or one that leaves by another netdev than the GID's. */
	dst_release(dst);
	rcu_read_unlock();
	rdma_put_gid_attr(attr);
	return ret;
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