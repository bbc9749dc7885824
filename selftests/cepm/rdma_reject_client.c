// SPDX-License-Identifier: GPL-2.0
/*
 * An rdma_cm client that expects to be turned down with private data: it
 * connects (through rdma_resolve_addr, rdma_resolve_route and rdma_connect,
 * without a QP of librdmacm's: the QP number in the parameters stands for an
 * application's own, as rdma_connect(3) allows) and checks that the answer is RDMA_CM_EVENT_REJECTED with
 * status 28 (Consumer Reject) and private data that begins with TEXT, as
 * rdma_reject_server sends.  None of rdma-core's example tools prints a
 * reject's private data.
 *
 * Usage: rdma_reject_client ADDRESS PORT TEXT [RETRY_COUNT RNR_RETRY_COUNT]
 * (the REQ's retry counts, 7 and 7 by default)
 * Prints the event, its status and its private data; exits 0 if they match.
 */
#include <stdlib.h>
#include <string.h>
#include "rdma_test.h"

/* The next event, which must be of type @expected. */
static int expect(struct rdma_event_channel *channel, enum rdma_cm_event_type expected,
		  struct rdma_cm_event **event)
{
	if (rdma_get_cm_event(channel, event))
		return fail("rdma_get_cm_event");
	if ((*event)->event == expected)
		return 0;
	fprintf(stderr, "unexpected event %s (status %d)\n", rdma_event_str((*event)->event),
		(*event)->status);
	return 1;
}

int main(int argc, char **argv)
{
	struct rdma_conn_param param = { .responder_resources = 1, .initiator_depth = 1,
					 .retry_count = 7, .rnr_retry_count = 7, .qp_num = 0x4242 };
	struct rdma_event_channel *channel;
	struct rdma_cm_event *event;
	struct rdma_cm_id *id;
	struct addrinfo *addr;
	unsigned int retry, rnr;
	size_t want;
	int ok, ret;

	ret = open_tcp_id(argc, argv, &addr, &channel, &id);
	if (ret)
		return ret;
	if (retry_counts(argc, argv, &retry, &rnr)) {
		param.retry_count = (uint8_t)retry;
		param.rnr_retry_count = (uint8_t)rnr;
	}
	if (rdma_resolve_addr(id, NULL, addr->ai_addr, 2000))
		return fail("rdma_resolve_addr");
	freeaddrinfo(addr);
	if (expect(channel, RDMA_CM_EVENT_ADDR_RESOLVED, &event))
		return 1;
	rdma_ack_cm_event(event);
	if (rdma_resolve_route(id, 2000))
		return fail("rdma_resolve_route");
	if (expect(channel, RDMA_CM_EVENT_ROUTE_RESOLVED, &event))
		return 1;
	rdma_ack_cm_event(event);
	if (rdma_connect(id, &param))
		return fail("rdma_connect");
	if (expect(channel, RDMA_CM_EVENT_REJECTED, &event))
		return 1;
	want = strlen(argv[3]);
	printf("%s, status %d, %u bytes of private data: %.*s\n", rdma_event_str(event->event),
	       event->status, event->param.conn.private_data_len,
	       (int)event->param.conn.private_data_len,
	       event->param.conn.private_data ? (const char *)event->param.conn.private_data : "");
	ok = event->status == 28 && event->param.conn.private_data &&
	     event->param.conn.private_data_len >= want &&
	     !memcmp(event->param.conn.private_data, argv[3], want);
	rdma_ack_cm_event(event);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(channel);
	return ok ? 0 : 1;
}
