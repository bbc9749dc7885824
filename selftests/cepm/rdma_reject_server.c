// SPDX-License-Identifier: GPL-2.0
/*
 * A stock rdma_cm server that turns down its first connection request with
 * private data: rdma_reject(3) with the text given on the command line, which
 * the passive rdma_cm sends as REJ reason 28 (Consumer Reject).  None of
 * rdma-core's example tools rejects with private data, so interop_stock.sh
 * uses this to check that a cepm user gets the stock peer's reason and data.
 *
 * Usage: rdma_reject_server ADDRESS PORT TEXT
 * Prints "listening" once it listens; exits 0 after rejecting one request.
 */
#include <stdlib.h>
#include <string.h>
#include "rdma_test.h"

int main(int argc, char **argv)
{
	struct rdma_event_channel *channel;
	struct rdma_cm_id *listen_id, *conn_id;
	struct rdma_cm_event *event;
	struct addrinfo *addr;
	int ret;

	ret = open_tcp_id(argc, argv, &addr, &channel, &listen_id);
	if (ret)
		return ret;
	if (rdma_bind_addr(listen_id, addr->ai_addr))
		return fail("rdma_bind_addr");
	freeaddrinfo(addr);
	if (rdma_listen(listen_id, 1))
		return fail("rdma_listen");
	printf("listening\n");
	fflush(stdout);

	if (rdma_get_cm_event(channel, &event))
		return fail("rdma_get_cm_event");
	if (event->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
		fprintf(stderr, "unexpected event %s\n", rdma_event_str(event->event));
		return 1;
	}
	conn_id = event->id;
	ret = rdma_reject(conn_id, argv[3], (uint8_t)strlen(argv[3]));
	if (ret)
		return fail("rdma_reject");
	printf("rejected one request\n");
	/* Destroying an ID waits until its events are acknowledged. */
	rdma_ack_cm_event(event);
	rdma_destroy_id(conn_id);
	rdma_destroy_id(listen_id);
	rdma_destroy_event_channel(channel);
	return 0;
}
