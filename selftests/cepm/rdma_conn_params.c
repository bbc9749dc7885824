// SPDX-License-Identifier: GPL-2.0
/*
 * What rdma_cm tells each end of a connection: the connection parameters of
 * CONNECT_REQUEST, CONNECT_RESPONSE and ESTABLISHED, and an ID's
 * route.addr.addr.ibaddr and route.path_rec once its address or route is
 * resolved and on the passive side's new ID.  No QP is made on either end,
 * so each side picks every parameter it sends (librdmacm's CM-only
 * connection, completed with rdma_establish), and the values differ both
 * ways: a field the library drops or swaps shows.
 *
 * The output is compared with what the same program prints over the stock
 * stack (rdmacm_fidelity.sh), so it names GIDs by the address they map to
 * ("src", "dst", "zero") rather than by value: the ends' addresses differ
 * between runs.
 *
 * With "xrc", the connection is an XRC one, as rdma-core's rdma_xserver and
 * rdma_xclient make it but without a QP, which rxe cannot make: each end is
 * an endpoint of rdma_create_ep in the IB port space, an XRC receive ID on
 * the server and an XRC send ID on the client, moved to an event channel.
 * The REQ then names an XRC initiator, and the REP carries the server's QPN
 * as an XRC target's (cm_format_req and cm_format_rep in
 * drivers/infiniband/core/cm.c).
 *
 * With "ib", the endpoint is an RC one of rdma_create_ep in the IB port space:
 * an "ib" client's REQ to an "xrc" server is of the wrong transport, which
 * rdma_cm's listener refuses (cma_ib_check_req_qp_type).  With "uc", a UC
 * one, whose REQ names UC (cma_connect_ib sends the ID's QP type).  With
 * "any", a server of QP type 0, which that check lets every request through.
 *
 * Usage: rdma_conn_params server|client ADDRESS PORT [xrc|ib|uc|any]
 * The server prints "listening" once it listens.  Exits 0 after one
 * connection and its disconnect, or once a client is rejected (it prints the
 * REJECTED event's parameters); 1 on any other failure (the failed call
 * first).
 */
#include <arpa/inet.h>
#include <string.h>
#include "rdma_test.h"

/* The active side's parameters, and the passive side's: each field differs. */
static const struct rdma_conn_param client_param = {
	.responder_resources = 3,
	.initiator_depth = 2,
	.flow_control = 1,
	.retry_count = 5,
	.rnr_retry_count = 6,
	.srq = 1,
	.qp_num = 0x123456,
};
static const struct rdma_conn_param server_param = {
	.responder_resources = 1,
	.initiator_depth = 4,
	.flow_control = 0,
	.retry_count = 3,
	.rnr_retry_count = 2,
	.srq = 0,
	.qp_num = 0x654321,
};

/*
 * @gid by the address of @id it maps to, else in hex.  A source GID is looked for among the
 * local addresses first, a destination GID among the peer's, so that a connection within one
 * host, whose two addresses are one, prints as one between two.
 */
static void print_gid(const char *name, struct rdma_cm_id *id, const union ibv_gid *gid)
{
	static const union ibv_gid zero;
	const char *first = name[0] == 's' ? "src" : "dst";
	const char *second = name[0] == 's' ? "dst" : "src";
	union ibv_gid a, b;
	int i;

	printf(" %s=", name);
	if (name[0] != 's') {
		gid_of(rdma_get_peer_addr(id), &a);
		gid_of(rdma_get_local_addr(id), &b);
	} else {
		gid_of(rdma_get_local_addr(id), &a);
		gid_of(rdma_get_peer_addr(id), &b);
	}
	if (!memcmp(gid, &zero, sizeof(zero))) {
		printf("zero");
	} else if (!memcmp(gid, &a, sizeof(a))) {
		printf("%s", first);
	} else if (!memcmp(gid, &b, sizeof(b))) {
		printf("%s", second);
	} else {
		for (i = 0; i < 16; i++)
			printf("%02x", gid->raw[i]);
	}
}

static void print_conn(const char *what, const struct rdma_cm_event *event)
{
	const struct rdma_conn_param *p = &event->param.conn;

	printf("%s: status %d responder_resources %u initiator_depth %u flow_control %u "
	       "retry_count %u rnr_retry_count %u srq %u qp_num %#x private_data_len %u\n",
	       what, event->status, p->responder_resources, p->initiator_depth, p->flow_control,
	       p->retry_count, p->rnr_retry_count, p->srq, p->qp_num, p->private_data_len);
}

/*
 * A path's flow label: "ports" if it is rdma_cm's hash of the connection's UDP ports
 * (cma_get_roce_udp_flow_label, drivers/infiniband/core/cma.c: the active side's port times
 * 31 plus the passive side's), which changes with the active side's ephemeral port.  Only its
 * 20 bits: librdmacm's ucma_convert_path hands the path record's RawTraffic and reserved bits
 * up with it, and on RoCE the kernel fills those from a union with the MAC.
 */
static void print_flow_label(struct rdma_cm_id *id, uint32_t be_label, int passive)
{
	uint32_t label = ntohl(be_label) & 0xfffff;
	uint32_t local = ntohs(rdma_get_src_port(id)), peer = ntohs(rdma_get_dst_port(id));
	uint32_t active_port = passive ? peer : local, passive_port = passive ? local : peer;

	if (label == ((active_port * 31 + passive_port) & 0xfffff))
		printf(" flow_label ports");
	else
		printf(" flow_label %#x", label);
}

static void print_route(const char *what, struct rdma_cm_id *id, int passive)
{
	const struct rdma_ib_addr *ib = &id->route.addr.addr.ibaddr;
	int i;

	printf("%s ibaddr:", what);
	print_gid("sgid", id, &ib->sgid);
	print_gid("dgid", id, &ib->dgid);
	printf(" pkey %#x\n", ntohs(ib->pkey));
	printf("%s paths: %d\n", what, id->route.num_paths);
	for (i = 0; i < id->route.num_paths; i++) {
		const struct ibv_sa_path_rec *p = &id->route.path_rec[i];

		printf("%s path %d:", what, i);
		print_gid("sgid", id, &p->sgid);
		print_gid("dgid", id, &p->dgid);
		print_flow_label(id, p->flow_label, passive);
		printf(" hop_limit %u traffic_class %u reversible %u numb_path %u preference %#x "
		       "pkey %#x sl %u mtu %u/%u rate %u/%u packet_life_time %u/%u\n",
		       p->hop_limit, p->traffic_class, p->reversible, p->numb_path, p->preference,
		       ntohs(p->pkey), p->sl, p->mtu_selector, p->mtu,
		       p->rate_selector, p->rate, p->packet_life_time_selector,
		       p->packet_life_time);
	}
}

/* Serves one connection on @listener, bound to @addr unless it is bound already (NULL). */
static int serve(struct rdma_event_channel *channel, struct rdma_cm_id *listener,
		 struct addrinfo *addr)
{
	struct rdma_conn_param accept = server_param;
	struct rdma_cm_event *event;
	struct rdma_cm_id *id;

	if (addr && rdma_bind_addr(listener, addr->ai_addr))
		return fail("rdma_bind_addr");
	if (rdma_listen(listener, 1))
		return fail("rdma_listen");
	printf("listening\n");
	if (expect_event(channel, RDMA_CM_EVENT_CONNECT_REQUEST, &event))
		return 1;
	id = event->id;
	print_conn("request", event);
	print_route("request", id, 1);
	rdma_ack_cm_event(event);
	if (rdma_accept(id, &accept))
		return fail("rdma_accept");
	if (expect_event(channel, RDMA_CM_EVENT_ESTABLISHED, &event))
		return 1;
	print_conn("established", event);
	rdma_ack_cm_event(event);
	if (expect_event(channel, RDMA_CM_EVENT_DISCONNECTED, &event))
		return 1;
	rdma_ack_cm_event(event);
	rdma_destroy_id(id);
	return 0;
}

/* Connects @id to @addr, or, with NULL, on the route it has resolved already. */
static int connect_to(struct rdma_event_channel *channel, struct rdma_cm_id *id,
		      struct addrinfo *addr)
{
	struct rdma_conn_param connect = client_param;
	struct rdma_cm_event *event;

	if (addr) {
		if (rdma_resolve_addr(id, NULL, addr->ai_addr, 2000))
			return fail("rdma_resolve_addr");
		if (expect_event(channel, RDMA_CM_EVENT_ADDR_RESOLVED, &event))
			return 1;
		rdma_ack_cm_event(event);
		print_route("address", id, 0);
		if (rdma_resolve_route(id, 2000))
			return fail("rdma_resolve_route");
		if (expect_event(channel, RDMA_CM_EVENT_ROUTE_RESOLVED, &event))
			return 1;
		rdma_ack_cm_event(event);
	}
	print_route("route", id, 0);
	if (rdma_connect(id, &connect))
		return fail("rdma_connect");
	if (rdma_get_cm_event(channel, &event))
		return fail("rdma_get_cm_event");
	if (event->event == RDMA_CM_EVENT_REJECTED) {
		print_conn("rejected", event);
		rdma_ack_cm_event(event);
		return 0;
	}
	if (event->event != RDMA_CM_EVENT_CONNECT_RESPONSE) {
		fprintf(stderr, "rdma_conn_params: %s (status %d), not CONNECT_RESPONSE\n",
			rdma_event_str(event->event), event->status);
		return 1;
	}
	print_conn("response", event);
	rdma_ack_cm_event(event);
	return establish_and_disconnect(channel, id);
}

/*
 * An endpoint of QP type @qp_type in the IB port space for @server's side of ADDRESS:PORT
 * (bound, or resolved to it), on @channel: 0, or 1 after saying which call failed.
 */
static int ib_endpoint(int server, enum ibv_qp_type qp_type, const char *address,
		       const char *port, struct rdma_event_channel *channel, struct rdma_cm_id **id)
{
	struct rdma_addrinfo hints = {
		.ai_flags = server ? RAI_PASSIVE : 0,
		.ai_port_space = RDMA_PS_IB,
		.ai_qp_type = qp_type,
	};
	struct rdma_addrinfo *res;

	if (rdma_getaddrinfo(address, port, &hints, &res))
		return fail("rdma_getaddrinfo");
	/*
	 * rdma_getaddrinfo makes QP type 0 RC (a stream socket's): an application that fills in
	 * its own rdma_addrinfo can leave it 0, as this one does.
	 */
	res->ai_qp_type = qp_type;
	if (rdma_create_ep(id, res, NULL, NULL))
		return fail("rdma_create_ep");
	rdma_freeaddrinfo(res);
	if (rdma_migrate_id(*id, channel))
		return fail("rdma_migrate_id");
	return 0;
}

int main(int argc, char **argv)
{
	struct rdma_event_channel *channel;
	struct addrinfo *addr = NULL;
	struct rdma_cm_id *id;
	const char *mode = argc == 5 ? argv[4] : "";
	int server, ib, rc;
	enum ibv_qp_type qp_type;

	server = argc >= 4 && !strcmp(argv[1], "server");
	ib = 1;
	if (!strcmp(mode, "xrc"))
		qp_type = server ? IBV_QPT_XRC_RECV : IBV_QPT_XRC_SEND;
	else if (!strcmp(mode, "ib"))
		qp_type = IBV_QPT_RC;
	else if (!strcmp(mode, "uc"))
		qp_type = IBV_QPT_UC;
	else if (!strcmp(mode, "any"))
		qp_type = 0; /* IBV_QPT_RC is 2: 0 names no QP type */
	else
		ib = 0;
	if ((argc != 4 && !ib) || (argc != 4 && argc != 5) ||
	    (strcmp(argv[1], "server") && strcmp(argv[1], "client"))) {
		fprintf(stderr, "usage: %s server|client ADDRESS PORT [xrc|ib|uc|any]\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	channel = rdma_create_event_channel();
	if (!channel)
		return fail("rdma_create_event_channel");
	if (ib) {
		if (ib_endpoint(server, qp_type, argv[2], argv[3], channel, &id))
			return 1;
	} else {
		if (getaddrinfo(argv[2], argv[3], NULL, &addr))
			return fail("getaddrinfo");
		if (rdma_create_id(channel, &id, NULL, RDMA_PS_TCP))
			return fail("rdma_create_id");
	}
	rc = server ? serve(channel, id, addr) : connect_to(channel, id, addr);
	if (addr)
		freeaddrinfo(addr);
	if (rc)
		return rc;
	rdma_destroy_id(id);
	rdma_destroy_event_channel(channel);
	return 0;
}
