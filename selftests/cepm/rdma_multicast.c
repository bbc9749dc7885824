// SPDX-License-Identifier: GPL-2.0
/*
 * What librdmacm promises of a multicast join on RoCE v2, checked on whichever librdmacm runs
 * this (rdma-core's over the kernel's rdma_cm, or cepm's through LD_LIBRARY_PATH), so that the
 * stock stack is the oracle. On a UD ID resolved from SOURCE to GROUP, with a QP:
 *   1. rdma_leave_multicast of a group not joined: EADDRNOTAVAIL;
 *   2. rdma_join_multicast_ex with an unknown comp_mask bit: EOPNOTSUPP; without join flags,
 *      or with unknown ones: EINVAL;
 *   3. rdma_join_multicast of an IPv6 group: ENOTSUPP (524), as rdma_cm on RoCE v2;
 *   4. rdma_join_multicast of GROUP: MULTICAST_JOIN, status 0, with the join's context as
 *      private data, QPN 0xFFFFFF, RDMA_UDP_QKEY, and an address handle's attributes: global,
 *      the MGID ::ffff:GROUP, hop limit 64, and the SGID index of SOURCE's GID;
 *   5. while joined, the ID's netdev is a member of GROUP (/proc/net/igmp);
 *   6. rdma_leave_multicast does not return while the join's event is unacknowledged, and
 *      returns 0 once it is; then the netdev is no member of GROUP.
 *
 * Usage: rdma_multicast SOURCE GROUP (IPv4 addresses). Prints each step; exits 0 if all hold.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <time.h>
#include "rdma_test.h"
#include "multicast_test.h"

#define KERNEL_ENOTSUPP 524

struct leave {
	struct rdma_cm_id *id;
	struct sockaddr *group;
	int ret, err, done;
};

static void *leave_thread(void *arg)
{
	struct leave *l = arg;

	l->ret = rdma_leave_multicast(l->id, l->group);
	l->err = errno;
	__atomic_store_n(&l->done, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

int main(int argc, char **argv)
{
	struct sockaddr_in src = { .sin_family = AF_INET }, grp = { .sin_family = AF_INET };
	struct sockaddr_in6 grp6 = { .sin6_family = AF_INET6 };
	struct rdma_cm_join_mc_attr_ex attr = { 0 };
	struct ibv_qp_init_attr qp_attr = { 0 };
	struct rdma_event_channel *channel;
	struct rdma_cm_event *event;
	struct rdma_cm_id *id;
	struct leave l = { 0 };
	pthread_t thread;
	union ibv_gid sgid, mgid = { 0 };
	void *context = (void *)0x5eed;
	int ret, i;

	if (argc != 3 || inet_pton(AF_INET, argv[1], &src.sin_addr) != 1 ||
	    inet_pton(AF_INET, argv[2], &grp.sin_addr) != 1) {
		fprintf(stderr, "usage: %s SOURCE GROUP\n", argv[0]);
		return 2;
	}
	inet_pton(AF_INET6, "ff0e::4d", &grp6.sin6_addr);
	channel = rdma_create_event_channel();
	if (!channel)
		return fail("rdma_create_event_channel");
	if (rdma_create_id(channel, &id, NULL, RDMA_PS_UDP))
		return fail("rdma_create_id");
	if (rdma_resolve_addr(id, (struct sockaddr *)&src, (struct sockaddr *)&grp, 2000))
		return fail("rdma_resolve_addr");
	if (rdma_get_cm_event(channel, &event))
		return fail("rdma_get_cm_event");
	ret = event->event == RDMA_CM_EVENT_ADDR_RESOLVED && event->status == 0;
	printf("%s: %s, status %d\n", ret ? "ok" : "FAIL", rdma_event_str(event->event),
	       event->status);
	rdma_ack_cm_event(event);
	if (!ret)
		return 1;
	qp_attr.qp_type = IBV_QPT_UD;
	qp_attr.cap.max_send_wr = qp_attr.cap.max_recv_wr = 1;
	qp_attr.cap.max_send_sge = qp_attr.cap.max_recv_sge = 1;
	if (rdma_create_qp(id, NULL, &qp_attr))
		return fail("rdma_create_qp");

	errno = 0;
	ret = rdma_leave_multicast(id, (struct sockaddr *)&grp);
	check(ret == -1 && errno == EADDRNOTAVAIL, "leave before any join: EADDRNOTAVAIL");
	attr.addr = (struct sockaddr *)&grp;
	attr.comp_mask = RDMA_CM_JOIN_MC_ATTR_RESERVED;
	errno = 0;
	ret = rdma_join_multicast_ex(id, &attr, context);
	check(ret == -1 && errno == EOPNOTSUPP, "join_ex with an unknown comp_mask bit: EOPNOTSUPP");
	attr.comp_mask = RDMA_CM_JOIN_MC_ATTR_ADDRESS;
	errno = 0;
	ret = rdma_join_multicast_ex(id, &attr, context);
	check(ret == -1 && errno == EINVAL, "join_ex without join flags: EINVAL");
	attr.comp_mask |= RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS;
	attr.join_flags = RDMA_MC_JOIN_FLAG_RESERVED;
	errno = 0;
	ret = rdma_join_multicast_ex(id, &attr, context);
	check(ret == -1 && errno == EINVAL, "join_ex with unknown join flags: EINVAL");
	errno = 0;
	ret = rdma_join_multicast(id, (struct sockaddr *)&grp6, context);
	check(ret == -1 && errno == KERNEL_ENOTSUPP, "join of an IPv6 group: ENOTSUPP (524)");

	if (rdma_join_multicast(id, (struct sockaddr *)&grp, context))
		return fail("rdma_join_multicast");
	if (rdma_get_cm_event(channel, &event))
		return fail("rdma_get_cm_event");
	printf("%s, status %d\n", rdma_event_str(event->event), event->status);
	check(event->event == RDMA_CM_EVENT_MULTICAST_JOIN && event->status == 0 &&
	      event->id == id, "MULTICAST_JOIN for the ID, status 0");
	check(event->param.ud.private_data == context, "... its private data is the context");
	check(event->param.ud.qp_num == 0xffffff, "... QPN 0xFFFFFF");
	check(event->param.ud.qkey == RDMA_UDP_QKEY, "... Q_Key RDMA_UDP_QKEY");
	mgid.raw[10] = mgid.raw[11] = 0xff;
	memcpy(&mgid.raw[12], &grp.sin_addr, 4);
	check(event->param.ud.ah_attr.is_global &&
	      !memcmp(&event->param.ud.ah_attr.grh.dgid, &mgid, sizeof(mgid)),
	      "... global, the MGID ::ffff:GROUP");
	check(event->param.ud.ah_attr.grh.hop_limit == 64, "... hop limit 64");
	check(event->param.ud.ah_attr.port_num == id->port_num, "... the ID's port");
	ret = ibv_query_gid(id->verbs, id->port_num, event->param.ud.ah_attr.grh.sgid_index,
			    &sgid);
	check(!ret && !memcmp(&sgid.raw[12], &src.sin_addr, 4) && sgid.raw[10] == 0xff &&
	      sgid.raw[11] == 0xff, "... the SGID index of SOURCE's GID");
	check(member(grp.sin_addr) == 1, "joined: a netdev is a member of GROUP");

	l.id = id;
	l.group = (struct sockaddr *)&grp;
	pthread_create(&thread, NULL, leave_thread, &l);
	for (i = 0; i < 5; i++)
		nap_ms(100);
	check(!__atomic_load_n(&l.done, __ATOMIC_SEQ_CST),
	      "leave waits while the join's event is unacknowledged");
	rdma_ack_cm_event(event);
	pthread_join(thread, NULL);
	errno = l.err;
	check(l.ret == 0, "... and returns 0 once it is acknowledged");
	for (i = 0; i < 50 && member(grp.sin_addr); i++)
		nap_ms(100);
	check(member(grp.sin_addr) == 0, "left: no netdev is a member of GROUP");

	rdma_destroy_qp(id);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(channel);
	printf("rdma_multicast: end %d\n", failures);
	return failures != 0;
}
