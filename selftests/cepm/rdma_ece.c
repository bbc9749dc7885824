// SPDX-License-Identifier: GPL-2.0
/*
 * ECE (Enhanced Connection Establishment) end to end, as librdmacm offers it:
 * rdma_set_local_ece before the connection, rdma_get_remote_ece after the
 * peer's REQ or REP, and rdma_reject_ece, which the peer sees as REJECTED with
 * status 35 (IB_CM_REJ_VENDOR_OPTION_NOT_SUPPORTED).  The IDs have no QP of
 * librdmacm's (the QP numbers in the parameters stand for an application's
 * own, as rdma_connect(3) allows), so that the values set are the ones sent:
 * librdmacm takes a QP's ECE from the device instead, and rxe has none.
 *
 * librdmacm's rules (rdma_set_local_ece and rdma_get_remote_ece in rdma-core's
 * librdmacm/cma.c): a NULL ece, a vendor ID of 0 and a nonzero comp_mask are
 * EINVAL.  The REQ carries the client's vendor ID and options (the MAD's
 * attribute modifier); the REP carries the vendor ID it received and the
 * server's options.
 *
 * Usage: rdma_ece server ADDRESS PORT | rdma_ece client ADDRESS PORT
 * The server accepts one connection, checks the REQ's ECE, then rejects the
 * next request with rdma_reject_ece; the client connects, checks the REP's
 * ECE, disconnects, and connects again to be rejected.  Each prints what it
 * saw and "rdma_ece: end 0" if all of it was as expected; exit 1 otherwise.
 */
#include <errno.h>
#include <string.h>
#include "rdma_test.h"

#define VENDOR 0x0015b3
#define CLIENT_OPTIONS 0x12345678
#define SERVER_OPTIONS 0x0badcafe
#define OTHER_VENDOR 0x00abcd

static int failed;

static void check(int ok, const char *what)
{
	printf("%s: %s\n", ok ? "ok" : "FAILED", what);
	if (!ok)
		failed = 1;
}

/* rdma_get_remote_ece on @id, checked against @vendor and @options. */
static void check_remote(struct rdma_cm_id *id, uint32_t vendor, uint32_t options,
			 const char *what)
{
	struct ibv_ece ece = { .comp_mask = 0xff };
	char line[160];
	int ret;

	ret = rdma_get_remote_ece(id, &ece);
	snprintf(line, sizeof(line), "%s: rdma_get_remote_ece %d (%s), vendor_id %#x, options %#x, comp_mask %#x",
		 what, ret, ret ? strerror(errno) : "-", ece.vendor_id, ece.options, ece.comp_mask);
	check(!ret && ece.vendor_id == vendor && ece.options == options && !ece.comp_mask, line);
}

/* rdma_set_local_ece on @id with @vendor and @options. */
static int set_local(struct rdma_cm_id *id, uint32_t vendor, uint32_t options)
{
	struct ibv_ece ece = { .vendor_id = vendor, .options = options };

	if (rdma_set_local_ece(id, &ece))
		return fail("rdma_set_local_ece");
	return 0;
}

/* What librdmacm refuses with EINVAL, on an ID that has no QP. */
static void check_refusals(struct rdma_cm_id *id)
{
	struct ibv_ece zero_vendor = { .vendor_id = 0, .options = 1 };
	struct ibv_ece with_mask = { .vendor_id = VENDOR, .comp_mask = 1 };
	int ret;

	errno = 0;
	ret = rdma_set_local_ece(id, NULL);
	check(ret == -1 && errno == EINVAL, "rdma_set_local_ece(NULL): EINVAL");
	errno = 0;
	ret = rdma_set_local_ece(id, &zero_vendor);
	check(ret == -1 && errno == EINVAL, "rdma_set_local_ece(vendor_id 0): EINVAL");
	errno = 0;
	ret = rdma_set_local_ece(id, &with_mask);
	check(ret == -1 && errno == EINVAL, "rdma_set_local_ece(comp_mask 1): EINVAL");
	errno = 0;
	ret = rdma_get_remote_ece(id, NULL);
	check(ret == -1 && errno == EINVAL, "rdma_get_remote_ece(NULL): EINVAL");
}

static int server(struct rdma_event_channel *channel, struct rdma_cm_id *listen_id,
		  struct addrinfo *addr)
{
	struct rdma_conn_param param = { .responder_resources = 1, .initiator_depth = 1,
					 .rnr_retry_count = 7, .qp_num = 0x4343 };
	struct rdma_cm_event *event;
	struct rdma_cm_id *id;

	if (listen_for_request(channel, listen_id, addr, &event))
		return 1;
	id = event->id;
	rdma_ack_cm_event(event);
	check_remote(id, VENDOR, CLIENT_OPTIONS, "REQ");
	/* The REP returns the vendor ID it was given, whatever ours is. */
	if (set_local(id, OTHER_VENDOR, SERVER_OPTIONS))
		return 1;
	if (rdma_accept(id, &param))
		return fail("rdma_accept");
	if (expect_event(channel, RDMA_CM_EVENT_ESTABLISHED, &event))
		return 1;
	rdma_ack_cm_event(event);
	if (expect_event(channel, RDMA_CM_EVENT_DISCONNECTED, &event))
		return 1;
	rdma_ack_cm_event(event);
	rdma_disconnect(id);
	rdma_destroy_id(id);

	if (expect_event(channel, RDMA_CM_EVENT_CONNECT_REQUEST, &event))
		return 1;
	id = event->id;
	rdma_ack_cm_event(event);
	check_remote(id, VENDOR, CLIENT_OPTIONS, "second REQ");
	if (rdma_reject_ece(id, "ece", 3))
		return fail("rdma_reject_ece");
	printf("rejected the second request with rdma_reject_ece\n");
	rdma_destroy_id(id);
	return 0;
}

/* Resolves @id's address and route to @addr. */
static int resolve(struct rdma_event_channel *channel, struct rdma_cm_id *id,
		   struct addrinfo *addr)
{
	struct rdma_cm_event *event;

	if (rdma_resolve_addr(id, NULL, addr->ai_addr, 2000))
		return fail("rdma_resolve_addr");
	if (expect_event(channel, RDMA_CM_EVENT_ADDR_RESOLVED, &event))
		return 1;
	rdma_ack_cm_event(event);
	if (rdma_resolve_route(id, 2000))
		return fail("rdma_resolve_route");
	if (expect_event(channel, RDMA_CM_EVENT_ROUTE_RESOLVED, &event))
		return 1;
	rdma_ack_cm_event(event);
	return 0;
}

static int client(struct rdma_event_channel *channel, struct rdma_cm_id *id,
		  struct addrinfo *addr)
{
	struct rdma_conn_param param = { .responder_resources = 1, .initiator_depth = 1,
					 .retry_count = 7, .rnr_retry_count = 7,
					 .qp_num = 0x4242 };
	struct rdma_cm_event *event;
	int ret;

	check_refusals(id);
	if (resolve(channel, id, addr))
		return 1;
	if (set_local(id, VENDOR, CLIENT_OPTIONS))
		return 1;
	check_remote(id, 0, 0, "before the REP");
	if (rdma_connect(id, &param))
		return fail("rdma_connect");
	if (expect_event(channel, RDMA_CM_EVENT_CONNECT_RESPONSE, &event))
		return 1;
	rdma_ack_cm_event(event);
	check_remote(id, VENDOR, SERVER_OPTIONS, "REP");
	if (establish_and_disconnect(channel, id))
		return 1;
	rdma_destroy_id(id);

	if (rdma_create_id(channel, &id, NULL, RDMA_PS_TCP))
		return fail("rdma_create_id");
	if (resolve(channel, id, addr))
		return 1;
	if (set_local(id, VENDOR, CLIENT_OPTIONS))
		return 1;
	if (rdma_connect(id, &param))
		return fail("rdma_connect");
	if (expect_event(channel, RDMA_CM_EVENT_REJECTED, &event))
		return 1;
	ret = event->status;
	printf("REJECTED, status %d, %u bytes of private data\n", ret,
	       event->param.conn.private_data_len);
	check(ret == 35, "the second connection: REJECTED with status 35");
	check(event->param.conn.private_data && event->param.conn.private_data_len >= 3 &&
	      !memcmp(event->param.conn.private_data, "ece", 3),
	      "... with the private data rdma_reject_ece gave");
	rdma_ack_cm_event(event);
	rdma_destroy_id(id);
	return 0;
}

int main(int argc, char **argv)
{
	struct rdma_event_channel *channel;
	struct rdma_cm_id *id;
	struct addrinfo *addr;
	int is_server, ret;

	if (argc != 4 || (strcmp(argv[1], "server") && strcmp(argv[1], "client"))) {
		fprintf(stderr, "usage: %s server|client ADDRESS PORT\n", argv[0]);
		return 2;
	}
	is_server = !strcmp(argv[1], "server");
	setvbuf(stdout, NULL, _IOLBF, 0);
	/* open_tcp_id reads ADDRESS PORT TEXT: the mode stands in for TEXT. */
	{
		char *args[] = { argv[0], argv[2], argv[3], argv[1], NULL };

		ret = open_tcp_id(4, args, &addr, &channel, &id);
	}
	if (ret)
		return ret;
	ret = is_server ? server(channel, id, addr) : client(channel, id, addr);
	if (ret)
		return ret;
	printf("rdma_ece: end %d\n", failed);
	return failed;
}
