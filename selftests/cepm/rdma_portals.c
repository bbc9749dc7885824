// SPDX-License-Identifier: GPL-2.0
/*
 * A server with several portals on one port, as SPDK's NVMe-oF target has
 * (nvmf_rdma_listen): one rdma_cm ID bound to each address, all listening on
 * the same port, on one event channel.  Each request is answered on the
 * portal whose address the client dialled, which prints
 * "portal ADDRESS: request from PEER"; the server accepts it and makes
 * rdma_server's exchange with rdma-core's unmodified rdma_client (one 16-byte
 * message each way), then disconnects.
 *
 * Usage: rdma_portals COUNT PORT ADDRESS[+afonly]...
 * "+afonly" sets RDMA_OPTION_ID_AFONLY on that portal's ID before its bind
 * (an IPv6 wildcard then takes no IPv4 request).  Prints "listening" once
 * every portal listens; exits 0 after COUNT exchanges, 1 on any failure (the
 * failed call first, as perror prints it).
 */
#include <arpa/inet.h>
#include <poll.h>
#include <string.h>
#include <rdma/rdma_verbs.h>
#include "rdma_test.h"

#define MSG_LEN 16
#define MAX_PORTALS 8

static int complain(const char *what)
{
	fprintf(stderr, "rdma_portals: %s\n", what);
	return 1;
}

/*
 * Waits on @channel for @expected on @id, acknowledging it: 0, or 1 after
 * saying why not.  Events of other IDs (a request too early) fail.
 */
static int wait_event(struct rdma_event_channel *channel, struct rdma_cm_id *id,
		      enum rdma_cm_event_type expected)
{
	struct rdma_cm_event *event;
	int ok;

	if (rdma_get_cm_event(channel, &event))
		return fail("rdma_get_cm_event");
	ok = event->id == id && event->event == expected;
	if (!ok)
		fprintf(stderr, "rdma_portals: %s (status %d), not %s\n",
			rdma_event_str(event->event), event->status, rdma_event_str(expected));
	rdma_ack_cm_event(event);
	return !ok;
}

/*
 * Waits for the reply's send completion or for @id's DISCONNECTED, whichever comes first: 0
 * for a successful completion, 2 for DISCONNECTED (taken off @channel), 1 after saying what
 * failed (any other event included).  rdma_client disconnects once its receive completes,
 * and rxe may then never acknowledge the reply (docs/interop.md, "rxe's lost ACK"): its
 * sender retransmits for ever, and would never answer the client's DREQ, which stock ib_cm
 * leaves to the server's disconnect.  Whether the client had the reply, its "end 0" says.
 */
static int await_reply(struct rdma_event_channel *channel, struct rdma_cm_id *id)
{
	struct pollfd cm = { .fd = channel->fd, .events = POLLIN };
	struct ibv_wc wc;
	int n;

	for (;;) {
		n = ibv_poll_cq(id->send_cq, 1, &wc);
		if (n < 0)
			return fail("ibv_poll_cq");
		if (n == 1)
			return wc.status == IBV_WC_SUCCESS ? 0 : complain("the reply did not complete");
		n = poll(&cm, 1, 10);
		if (n < 0)
			return fail("poll");
		if (n == 1)
			return wait_event(channel, id, RDMA_CM_EVENT_DISCONNECTED) ? 1 : 2;
	}
}

/* rdma_server's exchange on the requested @id, then the disconnect: 0, or 1. */
static int serve(struct rdma_event_channel *channel, struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr qp_attr = {
		.cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
		.sq_sig_all = 1,
	};
	char buf[MSG_LEN];
	struct ibv_mr *mr;
	struct ibv_wc wc;
	int n;

	if (rdma_create_qp(id, NULL, &qp_attr))
		return fail("rdma_create_qp");
	if (post_recv_and_accept(id, buf, sizeof(buf), &mr) ||
	    wait_event(channel, id, RDMA_CM_EVENT_ESTABLISHED))
		return 1;
	/* Each step said on stderr, unbuffered: a server stopped in a hang says where it was. */
	fprintf(stderr, "rdma_portals: established\n");
	while ((n = rdma_get_recv_comp(id, &wc)) == 0)
		;
	if (n < 0 || wc.status != IBV_WC_SUCCESS)
		return complain("the receive did not complete");
	fprintf(stderr, "rdma_portals: received\n");
	if (rdma_post_send(id, NULL, buf, sizeof(buf), mr, 0))
		return fail("rdma_post_send");
	n = await_reply(channel, id);
	if (n == 1)
		return 1;
	fprintf(stderr, "rdma_portals: %s\n", n ? "disconnected before the reply's ACK" : "sent");
	/*
	 * Our disconnect moves the QP to the error state, which ends a retransmission, and
	 * answers the client's DREQ, or sends ours, whose answer DISCONNECTED then says.
	 */
	rdma_disconnect(id);
	if (n == 0 && wait_event(channel, id, RDMA_CM_EVENT_DISCONNECTED))
		return 1;
	rdma_destroy_qp(id);
	rdma_dereg_mr(mr);
	rdma_destroy_id(id);
	return 0;
}

/* @sa's address as text, in @buf. */
static const char *addr_text(const struct sockaddr *sa, char *buf, socklen_t len)
{
	const void *a = sa->sa_family == AF_INET6 ? (const void *)&((const struct sockaddr_in6 *)sa)->sin6_addr
						  : (const void *)&((const struct sockaddr_in *)sa)->sin_addr;

	return inet_ntop(sa->sa_family, a, buf, len) ? buf : "?";
}

int main(int argc, char **argv)
{
	struct addrinfo hints = { .ai_flags = AI_PASSIVE | AI_NUMERICHOST };
	struct rdma_cm_id *portals[MAX_PORTALS];
	struct rdma_event_channel *channel;
	int count, n = argc - 3;

	if (argc < 4 || n > MAX_PORTALS) {
		fprintf(stderr, "usage: %s COUNT PORT ADDRESS[+afonly]... (at most %d)\n", argv[0],
			MAX_PORTALS);
		return 2;
	}
	count = atoi(argv[1]);
	channel = rdma_create_event_channel();
	if (!channel)
		return fail("rdma_create_event_channel");
	for (int i = 0; i < n; i++) {
		char *name = argv[3 + i], *plus = strchr(name, '+');
		struct addrinfo *addr;
		int one = 1;

		if (plus)
			*plus = '\0';
		if (getaddrinfo(name, argv[2], &hints, &addr))
			return fail("getaddrinfo");
		if (rdma_create_id(channel, &portals[i], NULL, RDMA_PS_TCP))
			return fail("rdma_create_id");
		if (plus && strcmp(plus + 1, "afonly") == 0 &&
		    rdma_set_option(portals[i], RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY, &one,
				    sizeof(one)))
			return fail("rdma_set_option AFONLY");
		if (rdma_bind_addr(portals[i], addr->ai_addr))
			return fail("rdma_bind_addr");
		freeaddrinfo(addr);
		if (rdma_listen(portals[i], 4))
			return fail("rdma_listen");
	}
	printf("listening\n");
	fflush(stdout);

	for (int done = 0; done < count; done++) {
		struct rdma_cm_event *event;
		struct rdma_cm_id *id;
		char peer[INET6_ADDRSTRLEN];
		int i;

		if (rdma_get_cm_event(channel, &event))
			return fail("rdma_get_cm_event");
		if (event->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
			fprintf(stderr, "rdma_portals: unexpected event %s (status %d)\n",
				rdma_event_str(event->event), event->status);
			return 1;
		}
		for (i = 0; i < n && portals[i] != event->listen_id; i++)
			;
		id = event->id;
		rdma_ack_cm_event(event);
		if (i == n)
			return complain("a request on no portal of ours");
		printf("portal %s: request from %s\n", argv[3 + i],
		       addr_text(rdma_get_peer_addr(id), peer, sizeof(peer)));
		fflush(stdout);
		if (serve(channel, id))
			return 1;
	}
	for (int i = 0; i < n; i++)
		rdma_destroy_id(portals[i]);
	rdma_destroy_event_channel(channel);
	printf("rdma_portals: end 0\n");
	return 0;
}
