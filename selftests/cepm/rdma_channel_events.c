// SPDX-License-Identifier: GPL-2.0
/*
 * What librdmacm promises of an event channel's fd, checked on whichever librdmacm runs this
 * (rdma-core's over the kernel's rdma_cm, or cepm's through LD_LIBRARY_PATH), so that the
 * stock stack is the oracle:
 *   1. rdma_resolve_addr's ADDR_RESOLVED makes the channel's fd readable (poll(2)) before
 *      any rdma_get_cm_event: applications that poll the fd themselves see it;
 *   2. rdma_migrate_id of an ID whose event is still unread: the event comes through the new
 *      channel, whose fd is readable, and the old channel's fd is not;
 *   3. ROUTE_RESOLVED then arrives on the new channel, readable likewise.
 *
 * Usage: rdma_channel_events ADDRESS PORT TEXT (ADDRESS: one of this host's RoCE addresses;
 * TEXT is not used). Prints each step; exits 0 if all hold.
 */
#include <poll.h>
#include <string.h>
#include "rdma_test.h"

/* Whether @channel's fd becomes readable within @ms. */
static int readable(struct rdma_event_channel *channel, int ms)
{
	struct pollfd pfd = { .fd = channel->fd, .events = POLLIN };

	return poll(&pfd, 1, ms) == 1 && (pfd.revents & POLLIN);
}

/* Takes the next event of @channel, which must be @expected for @id. */
static int expect(struct rdma_event_channel *channel, struct rdma_cm_id *id,
		  enum rdma_cm_event_type expected)
{
	struct rdma_cm_event *event;
	int ok;

	if (rdma_get_cm_event(channel, &event))
		return fail("rdma_get_cm_event");
	ok = event->event == expected && event->id == id && event->status == 0;
	printf("%s: %s, status %d, %s ID\n", ok ? "ok" : "FAIL", rdma_event_str(event->event),
	       event->status, event->id == id ? "its" : "another");
	rdma_ack_cm_event(event);
	return !ok;
}

int main(int argc, char **argv)
{
	struct rdma_event_channel *channel, *other;
	struct rdma_cm_id *id;
	struct addrinfo *addr;
	int ret = open_tcp_id(argc, argv, &addr, &channel, &id);

	if (ret)
		return ret;
	other = rdma_create_event_channel();
	if (!other)
		return fail("rdma_create_event_channel");
	if (rdma_resolve_addr(id, NULL, addr->ai_addr, 2000))
		return fail("rdma_resolve_addr");
	if (!readable(channel, 5000)) {
		printf("FAIL: ADDR_RESOLVED did not make the channel's fd readable\n");
		return 1;
	}
	printf("ok: the channel's fd is readable after rdma_resolve_addr\n");
	if (rdma_migrate_id(id, other))
		return fail("rdma_migrate_id");
	if (readable(channel, 0)) {
		printf("FAIL: the old channel is still readable after rdma_migrate_id\n");
		return 1;
	}
	if (!readable(other, 5000)) {
		printf("FAIL: the new channel is not readable after rdma_migrate_id\n");
		return 1;
	}
	printf("ok: after rdma_migrate_id the new channel is readable, the old one is not\n");
	if (expect(other, id, RDMA_CM_EVENT_ADDR_RESOLVED))
		return 1;
	if (rdma_resolve_route(id, 2000))
		return fail("rdma_resolve_route");
	if (!readable(other, 5000)) {
		printf("FAIL: ROUTE_RESOLVED did not make the new channel's fd readable\n");
		return 1;
	}
	if (expect(other, id, RDMA_CM_EVENT_ROUTE_RESOLVED))
		return 1;
	if (rdma_destroy_id(id))
		return fail("rdma_destroy_id");
	rdma_destroy_event_channel(other);
	rdma_destroy_event_channel(channel);
	freeaddrinfo(addr);
	printf("rdma_channel_events: end 0\n");
	return 0;
}
