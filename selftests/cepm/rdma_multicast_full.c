// SPDX-License-Identifier: GPL-2.0
/*
 * A multicast join whose QP the device cannot attach: librdmacm attaches an ID's QP to the
 * group when the application reads MULTICAST_JOIN (ucma_process_join in rdma-core's
 * librdmacm/cma.c), and if ibv_attach_mcast fails, the event is MULTICAST_ERROR instead.  rxe
 * attaches at most max_mcast_qp_attach QPs to one group (rxe_attach_mcast in
 * drivers/infiniband/sw/rxe/rxe_mcast.c: ENOMEM past it), so one more UD ID with a QP,
 * joined to the same group, gets that error.
 *
 * On whichever librdmacm runs this (rdma-core's over the kernel's rdma_cm, or cepm's through
 * LD_LIBRARY_PATH): max_mcast_qp_attach + 1 UD IDs, each resolved from SOURCE to GROUP, with
 * a UD QP, joined to GROUP one after the other, each join's event read before the next join:
 *   1. the first max_mcast_qp_attach events are MULTICAST_JOIN, status 0;
 *   2. the last is MULTICAST_ERROR for the last ID, with a negative status and the join's
 *      context as private data (its status, errno and param.ud are printed, to compare);
 *   3. rdma_leave_multicast of every join (the failed one's too) returns 0, and then no
 *      netdev is a member of GROUP (/proc/net/igmp);
 *   4. every QP and ID is destroyed without error.
 * Lines starting "= " are the results that do not depend on the stack's own numbers (IDs,
 * QPNs): a test compares them between the stock stack and cepm's.
 *
 * Usage: rdma_multicast_full SOURCE GROUP (IPv4 addresses). Exits 0 if all hold.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>
#include <time.h>
#include "rdma_test.h"
#include "multicast_test.h"

/* A UD ID on @channel, resolved from @src to @grp, with a UD QP: 0, or 1 after saying why not. */
static int make_id(struct rdma_event_channel *channel, struct sockaddr_in *src,
		   struct sockaddr_in *grp, struct rdma_cm_id **id)
{
	struct ibv_qp_init_attr qp_attr = { .qp_type = IBV_QPT_UD };
	struct rdma_cm_event *event;
	int ok;

	if (rdma_create_id(channel, id, NULL, RDMA_PS_UDP))
		return fail("rdma_create_id");
	if (rdma_resolve_addr(*id, (struct sockaddr *)src, (struct sockaddr *)grp, 2000))
		return fail("rdma_resolve_addr");
	if (rdma_get_cm_event(channel, &event))
		return fail("rdma_get_cm_event");
	ok = event->event == RDMA_CM_EVENT_ADDR_RESOLVED && event->status == 0 && event->id == *id;
	if (!ok)
		fprintf(stderr, "rdma_multicast_full: %s, status %d, not ADDR_RESOLVED\n",
			rdma_event_str(event->event), event->status);
	rdma_ack_cm_event(event);
	if (!ok)
		return 1;
	qp_attr.cap.max_send_wr = qp_attr.cap.max_recv_wr = 1;
	qp_attr.cap.max_send_sge = qp_attr.cap.max_recv_sge = 1;
	if (rdma_create_qp(*id, NULL, &qp_attr))
		return fail("rdma_create_qp");
	return 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_in src = { .sin_family = AF_INET }, grp = { .sin_family = AF_INET };
	struct ibv_device_attr dev_attr;
	struct rdma_event_channel *channel;
	struct rdma_cm_event *event;
	struct rdma_cm_id **ids;
	int limit, n, i, joins = 0, ret, err, last_ok = 0;
	char line[200];

	if (argc != 3 || inet_pton(AF_INET, argv[1], &src.sin_addr) != 1 ||
	    inet_pton(AF_INET, argv[2], &grp.sin_addr) != 1) {
		fprintf(stderr, "usage: %s SOURCE GROUP\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	channel = rdma_create_event_channel();
	if (!channel)
		return fail("rdma_create_event_channel");
	ids = calloc(1, sizeof(*ids));
	if (!ids)
		return fail("calloc");
	if (make_id(channel, &src, &grp, &ids[0]))
		return 1;
	if (ibv_query_device(ids[0]->verbs, &dev_attr))
		return fail("ibv_query_device");
	limit = dev_attr.max_mcast_qp_attach;
	printf("%s: max_mcast_qp_attach %d\n", ibv_get_device_name(ids[0]->verbs->device), limit);
	/* A device without a small limit cannot make the error: nothing to check. */
	if (limit < 1 || limit > 1024) {
		fprintf(stderr, "rdma_multicast_full: max_mcast_qp_attach %d is no usable limit\n",
			limit);
		return 1;
	}
	n = limit + 1;
	ids = realloc(ids, n * sizeof(*ids));
	if (!ids)
		return fail("realloc");

	for (i = 0; i < n; i++) {
		if (i && make_id(channel, &src, &grp, &ids[i]))
			return 1;
		if (rdma_join_multicast(ids[i], (struct sockaddr *)&grp, (void *)(uintptr_t)(i + 1)))
			return fail("rdma_join_multicast");
		/* librdmacm leaves the failed attach's errno behind a successful call. */
		errno = 0;
		if (rdma_get_cm_event(channel, &event))
			return fail("rdma_get_cm_event");
		err = errno;
		if (i < limit) {
			if (event->event == RDMA_CM_EVENT_MULTICAST_JOIN && event->status == 0 &&
			    event->id == ids[i])
				joins++;
			else
				printf("join %d: %s, status %d\n", i + 1, rdma_event_str(event->event),
				       event->status);
		} else {
			printf("= join %d of %d: %s, status %d, errno %d\n", i + 1, n,
			       rdma_event_str(event->event), event->status, err);
			printf("= its param.ud: qp_num %#x, qkey %#x, ah_attr.is_global %d\n",
			       event->param.ud.qp_num, event->param.ud.qkey,
			       event->param.ud.ah_attr.is_global);
			last_ok = event->event == RDMA_CM_EVENT_MULTICAST_ERROR && event->status < 0 &&
				  event->id == ids[i];
			check(event->param.ud.private_data == (void *)(uintptr_t)(i + 1),
			      "... its private data is the join's context");
		}
		rdma_ack_cm_event(event);
	}
	printf("= MULTICAST_JOIN, status 0, for %d of the first %d joins\n", joins, limit);
	snprintf(line, sizeof(line), "the first %d joins (max_mcast_qp_attach): %d MULTICAST_JOIN, status 0",
		 limit, joins);
	check(joins == limit, line);
	check(last_ok, "join max_mcast_qp_attach + 1: MULTICAST_ERROR for its ID, a negative status");

	for (i = 0, ret = 0; i < n; i++) {
		errno = 0;
		if (rdma_leave_multicast(ids[i], (struct sockaddr *)&grp)) {
			printf("= leave %d: -1, errno %d (%s)\n", i + 1, errno, strerror(errno));
			ret = 1;
		}
	}
	printf("= leaves: %s\n", ret ? "some failed" : "all 0");
	check(!ret, "every join left: rdma_leave_multicast 0");
	for (i = 0; i < 50 && member(grp.sin_addr); i++)
		nap_ms(100);
	ret = member(grp.sin_addr);
	printf("= a member of GROUP once all have left: %d\n", ret);
	check(ret == 0, "all left: no netdev is a member of GROUP");

	for (i = 0, ret = 0; i < n; i++) {
		rdma_destroy_qp(ids[i]);
		if (rdma_destroy_id(ids[i])) {
			printf("= rdma_destroy_id %d: %s\n", i + 1, strerror(errno));
			ret = 1;
		}
	}
	printf("= destroys: %s\n", ret ? "some failed" : "all 0");
	check(!ret, "every QP and ID destroyed");
	rdma_destroy_event_channel(channel);
	free(ids);
	printf("rdma_multicast_full: end %d\n", failures);
	return failures != 0;
}
