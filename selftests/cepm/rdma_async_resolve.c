// SPDX-License-Identifier: GPL-2.0
/*
 * rdma_resolve_addr is asynchronous, as librdmacm's over the kernel's rdma_cm (whose
 * rdma_resolve_ip queues the request and completes it by callback): checked on whichever
 * librdmacm runs this, so that the stock stack is the oracle.
 *   1. COUNT IDs on one channel, each resolved from this one thread toward REACHABLE: every
 *      call returns, then every ID gets its ADDR_RESOLVED. The calls' longest and median
 *      durations are printed as figures; the only bound is one second a call, half the
 *      resolution's timeout, which a call that waits for its result can exceed.
 *   2. Toward UNANSWERED, an address on the link that answers no ARP, with a 2 s timeout: the
 *      call returns 0 while its result does not exist yet (a non-blocking rdma_get_cm_event
 *      right after it says EAGAIN), and ADDR_ERROR arrives later. A second ID resolved the
 *      same way and destroyed at once gets no event.
 *   3. Toward UNROUTABLE, an address the routing table refuses: the call itself fails, as
 *      rdma_resolve_ip's route lookup fails it, and no event comes.
 *   4. A synchronous ID (no channel): the call waits for its result, as librdmacm's does:
 *      0 toward REACHABLE, -1 toward UNANSWERED (with a 500 ms timeout).
 *
 * Usage: rdma_async_resolve REACHABLE UNANSWERED UNROUTABLE COUNT. Prints each step; exits 0
 * if all hold.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <time.h>
#include "rdma_test.h"

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int by_value(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return (x > y) - (x < y);
}

static struct sockaddr *address(const char *text)
{
	struct addrinfo hints = { .ai_flags = AI_NUMERICHOST }, *ai;

	if (getaddrinfo(text, NULL, &hints, &ai)) {
		fprintf(stderr, "getaddrinfo %s failed\n", text);
		exit(2);
	}
	return ai->ai_addr;
}

/* Whether @channel's fd becomes readable within @ms. */
static int readable(struct rdma_event_channel *channel, int ms)
{
	struct pollfd pfd = { .fd = channel->fd, .events = POLLIN };

	return poll(&pfd, 1, ms) == 1 && (pfd.revents & POLLIN);
}

/* The next event of non-blocking @channel within @ms, or NULL (errno set). */
static struct rdma_cm_event *next_event(struct rdma_event_channel *channel, int ms)
{
	struct rdma_cm_event *event;
	long long deadline = now_ns() + ms * 1000000LL;

	for (;;) {
		if (!rdma_get_cm_event(channel, &event))
			return event;
		if (errno != EAGAIN || now_ns() >= deadline)
			return NULL;
		readable(channel, 10);
	}
}

static int many(struct sockaddr *dst, int count)
{
	struct rdma_event_channel *channel = rdma_create_event_channel();
	struct rdma_cm_id **ids = calloc(count, sizeof(*ids));
	long long *took = calloc(count, sizeof(*took));
	char *seen = calloc(count, 1);
	int i, resolved = 0, ok;

	if (!channel || !ids || !took || !seen)
		return fail("setup");
	for (i = 0; i < count; i++) {
		if (rdma_create_id(channel, &ids[i], &seen[i], RDMA_PS_TCP))
			return fail("rdma_create_id");
	}
	for (i = 0; i < count; i++) {
		long long start = now_ns();

		if (rdma_resolve_addr(ids[i], NULL, dst, 2000))
			return fail("rdma_resolve_addr");
		took[i] = now_ns() - start;
	}
	while (resolved < count) {
		struct rdma_cm_event *event;
		char *mark;

		if (rdma_get_cm_event(channel, &event))
			return fail("rdma_get_cm_event");
		mark = event->id->context;
		if (event->event != RDMA_CM_EVENT_ADDR_RESOLVED || event->status || *mark) {
			printf("FAIL: %s, status %d, for ID %ld%s\n", rdma_event_str(event->event),
			       event->status, (long)(mark - seen), *mark ? " again" : "");
			return 1;
		}
		*mark = 1;
		resolved++;
		rdma_ack_cm_event(event);
	}
	qsort(took, count, sizeof(*took), by_value);
	ok = took[count - 1] < 1000000000LL;
	printf("%s: %d IDs resolved from one thread, each with its ADDR_RESOLVED; call durations: median %lld us, longest %lld us\n",
	       ok ? "ok" : "FAIL", count, took[count / 2] / 1000, took[count - 1] / 1000);
	for (i = 0; i < count; i++)
		rdma_destroy_id(ids[i]);
	rdma_destroy_event_channel(channel);
	return !ok;
}

static int unanswered(struct sockaddr *dst)
{
	struct rdma_event_channel *channel = rdma_create_event_channel();
	struct rdma_cm_id *id, *gone;
	struct rdma_cm_event *event;
	long long start, took;
	int ok;

	if (!channel)
		return fail("rdma_create_event_channel");
	if (fcntl(channel->fd, F_SETFL, fcntl(channel->fd, F_GETFL) | O_NONBLOCK))
		return fail("fcntl");
	if (rdma_create_id(channel, &id, NULL, RDMA_PS_TCP) ||
	    rdma_create_id(channel, &gone, NULL, RDMA_PS_TCP))
		return fail("rdma_create_id");
	start = now_ns();
	if (rdma_resolve_addr(id, NULL, dst, 2000))
		return fail("rdma_resolve_addr");
	took = now_ns() - start;
	event = NULL;
	ok = rdma_get_cm_event(channel, &event) && errno == EAGAIN;
	printf("%s: toward an address that answers no ARP the call returned 0 in %lld us, before its result (rdma_get_cm_event right after: %s)\n",
	       ok ? "ok" : "FAIL", took / 1000,
	       event ? rdma_event_str(event->event) : strerror(errno));
	if (!ok)
		return 1;
	if (rdma_resolve_addr(gone, NULL, dst, 2000))
		return fail("rdma_resolve_addr");
	if (rdma_destroy_id(gone))
		return fail("rdma_destroy_id, resolution in flight");
	event = next_event(channel, 10000);
	if (!event)
		return fail("rdma_get_cm_event");
	ok = event->event == RDMA_CM_EVENT_ADDR_ERROR && event->status < 0 && event->id == id;
	printf("%s: then %s, status %d, for %s, %lld ms after the call\n", ok ? "ok" : "FAIL",
	       rdma_event_str(event->event), event->status,
	       event->id == id ? "its ID" : "another ID", (now_ns() - start) / 1000000);
	rdma_ack_cm_event(event);
	if (!ok)
		return 1;
	event = next_event(channel, 1000);
	ok = !event && errno == EAGAIN;
	printf("%s: the ID destroyed with its resolution in flight got no event%s%s\n",
	       ok ? "ok" : "FAIL", event ? ": " : "",
	       event ? rdma_event_str(event->event) : "");
	if (!ok)
		return 1;
	rdma_destroy_id(id);
	rdma_destroy_event_channel(channel);
	return 0;
}

static int unroutable(struct sockaddr *dst)
{
	struct rdma_event_channel *channel = rdma_create_event_channel();
	struct rdma_cm_event *event;
	struct rdma_cm_id *id;
	int ret, err, ok;

	if (!channel)
		return fail("rdma_create_event_channel");
	if (fcntl(channel->fd, F_SETFL, fcntl(channel->fd, F_GETFL) | O_NONBLOCK))
		return fail("fcntl");
	if (rdma_create_id(channel, &id, NULL, RDMA_PS_TCP))
		return fail("rdma_create_id");
	ret = rdma_resolve_addr(id, NULL, dst, 2000);
	err = errno;
	event = next_event(channel, 500);
	ok = ret == -1 && err && !event;
	printf("%s: toward an unroutable address the call returned %d (%s) and %s\n",
	       ok ? "ok" : "FAIL", ret, ret ? strerror(err) : "no error",
	       event ? rdma_event_str(event->event) : "no event came");
	if (event)
		rdma_ack_cm_event(event);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(channel);
	return !ok;
}

static int synchronous(struct sockaddr *reachable, struct sockaddr *nobody)
{
	struct rdma_cm_id *id, *other;
	int ret, err, ok;

	if (rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP) ||
	    rdma_create_id(NULL, &other, NULL, RDMA_PS_TCP))
		return fail("rdma_create_id");
	ret = rdma_resolve_addr(id, NULL, reachable, 2000);
	ok = ret == 0 && rdma_resolve_route(id, 2000) == 0;
	printf("%s: a synchronous ID: rdma_resolve_addr returned %d with its result, then rdma_resolve_route\n",
	       ok ? "ok" : "FAIL", ret);
	if (!ok)
		return 1;
	ret = rdma_resolve_addr(other, NULL, nobody, 500);
	err = errno;
	ok = ret == -1;
	printf("%s: a synchronous ID toward an address that answers no ARP: the call returned %d (%s)\n",
	       ok ? "ok" : "FAIL", ret, ret ? strerror(err) : "no error");
	rdma_destroy_id(id);
	rdma_destroy_id(other);
	return !ok;
}

int main(int argc, char **argv)
{
	int count;

	if (argc != 5) {
		fprintf(stderr, "usage: %s REACHABLE UNANSWERED UNROUTABLE COUNT\n", argv[0]);
		return 2;
	}
	count = atoi(argv[4]);
	if (count < 1)
		return 2;
	if (unanswered(address(argv[2])) || unroutable(address(argv[3])) ||
	    many(address(argv[1]), count) || synchronous(address(argv[1]), address(argv[2])))
		return 1;
	printf("rdma_async_resolve: end 0\n");
	return 0;
}
