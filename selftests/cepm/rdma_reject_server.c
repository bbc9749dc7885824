// SPDX-License-Identifier: GPL-2.0
/*
 * A stock rdma_cm server that turns down its first connection request with
 * private data: rdma_reject(3) with the text given on the command line, which
 * the passive rdma_cm sends as REJ reason 28 (Consumer Reject).  None of
 * rdma-core's example tools rejects with private data, so interop_stock.sh
 * uses this to check that a cepm user gets the stock peer's reason and data.
 *
 * With RETRY_COUNT and RNR_RETRY_COUNT, the request must carry them (the
 * CONNECT_REQUEST's parameters give the REQ's fields, as the kernel's rdma_cm
 * passes them up); rdmacm tests ask rdma_reject_client for 5 and 6, not
 * librdmacm's usual 7.
 *
 * Usage: rdma_reject_server ADDRESS PORT TEXT [RETRY_COUNT RNR_RETRY_COUNT]
 * Prints "listening" once it listens; exits 0 after rejecting one request
 * (that carried those counts, if given: it rejects it either way).
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
	unsigned int retry, rnr;
	int ret, counts_ok = 1;

	ret = open_tcp_id(argc, argv, &addr, &channel, &listen_id);
	if (ret)
		return ret;
	if (listen_for_request(channel, listen_id, addr, &event))
		return 1;
	conn_id = event->id;
	printf("CONNECT_REQUEST: retry_count %u, rnr_retry_count %u\n",
	       event->param.conn.retry_count, event->param.conn.rnr_retry_count);
	if (retry_counts(argc, argv, &retry, &rnr) &&
	    (event->param.conn.retry_count != retry || event->param.conn.rnr_retry_count != rnr)) {
		printf("... but the client asked for %u and %u\n", retry, rnr);
		counts_ok = 0;
	}
	ret = rdma_reject(conn_id, argv[3], (uint8_t)strlen(argv[3]));
	if (ret)
		return fail("rdma_reject");
	printf("rejected one request\n");
	/* Destroying an ID waits until its events are acknowledged. */
	rdma_ack_cm_event(event);
	rdma_destroy_id(conn_id);
	rdma_destroy_id(listen_id);
	rdma_destroy_event_channel(channel);
	return counts_ok ? 0 : 1;
}
