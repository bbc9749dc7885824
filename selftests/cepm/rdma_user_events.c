// SPDX-License-Identifier: GPL-2.0
/*
 * librdmacm's RDMACM_1.4 calls, as rdma-core's librdmacm/cma.c has them:
 * rdma_write_cm_event queues a RDMA_CM_EVENT_USER event (status and
 * param.arg as given, in order; any other type is EINVAL), and
 * rdma_resolve_addrinfo resolves a name for an ID, completing by an
 * ADDRINFO_RESOLVED event, after which rdma_query_addrinfo hands the result
 * over once (ENOENT before and after; EBUSY for a second resolution while a
 * result waits).  Each event makes the channel's fd readable first.
 *
 * Debian 12's librdmacm (rdma-core 44) has no RDMACM_1.4: the calls are
 * looked up at run time, and the program says so and exits 4 without them.
 *
 * Usage: rdma_user_events ADDRESS PORT
 * Prints what it saw and "rdma_user_events: end 0" if all was as expected.
 */
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <arpa/inet.h>
#include "rdma_test.h"

/* RDMACM_1.4's event types and flags (a later <rdma/rdma_cma.h>). */
#define EVENT_ADDRINFO_RESOLVED (RDMA_CM_EVENT_TIMEWAIT_EXIT + 1)
#define EVENT_USER (RDMA_CM_EVENT_TIMEWAIT_EXIT + 3)
#define FLAG_SA 0x10

static int (*write_cm_event)(struct rdma_cm_id *, enum rdma_cm_event_type, int, uint64_t);
static int (*resolve_addrinfo)(struct rdma_cm_id *, const char *, const char *,
			       const struct rdma_addrinfo *);
static int (*query_addrinfo)(struct rdma_cm_id *, struct rdma_addrinfo **);

static int failed;

static void check(int ok, const char *what)
{
	printf("%s: %s\n", ok ? "ok" : "FAILED", what);
	if (!ok)
		failed = 1;
}

/* Whether @channel's fd is readable within a second. */
static int readable(struct rdma_event_channel *channel)
{
	struct pollfd p = { .fd = channel->fd, .events = POLLIN };

	return poll(&p, 1, 1000) == 1 && (p.revents & POLLIN);
}

/* The next event, which must be @type with @status: its param.arg in *arg (if not NULL). */
static void expect(struct rdma_event_channel *channel, int type, int status, uint64_t *arg,
		   const char *what)
{
	struct rdma_cm_event *event;
	char line[200];
	int ready = readable(channel);

	if (rdma_get_cm_event(channel, &event)) {
		perror("rdma_get_cm_event");
		check(0, what);
		return;
	}
	if (arg)
		memcpy(arg, &event->param, sizeof(*arg));
	snprintf(line, sizeof(line), "%s: %s, status %d, the fd readable before: %d", what,
		 rdma_event_str(event->event), event->status, ready);
	check(ready && (int)event->event == type && event->status == status, line);
	rdma_ack_cm_event(event);
}

int main(int argc, char **argv)
{
	struct rdma_addrinfo hints = { .ai_qp_type = IBV_QPT_RC, .ai_port_space = RDMA_PS_TCP,
				       .ai_flags = RAI_NUMERICHOST };
	struct rdma_event_channel *channel;
	struct rdma_addrinfo *ai = NULL;
	struct rdma_cm_id *id;
	uint64_t arg = 0;
	char line[200];
	int ret;

	if (argc != 3) {
		fprintf(stderr, "usage: %s ADDRESS PORT\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	write_cm_event = dlsym(RTLD_DEFAULT, "rdma_write_cm_event");
	resolve_addrinfo = dlsym(RTLD_DEFAULT, "rdma_resolve_addrinfo");
	query_addrinfo = dlsym(RTLD_DEFAULT, "rdma_query_addrinfo");
	if (!write_cm_event || !resolve_addrinfo || !query_addrinfo) {
		printf("rdma_user_events: this librdmacm has no RDMACM_1.4\n");
		return 4;
	}
	channel = rdma_create_event_channel();
	if (!channel)
		return fail("rdma_create_event_channel");
	if (rdma_create_id(channel, &id, NULL, RDMA_PS_TCP))
		return fail("rdma_create_id");

	check(!strcmp(rdma_event_str(EVENT_USER), "RDMA_CM_EVENT_USER") &&
	      !strcmp(rdma_event_str(EVENT_ADDRINFO_RESOLVED), "RDMA_CM_EVENT_ADDRINFO_RESOLVED"),
	      "rdma_event_str names RDMACM_1.4's events");
	errno = 0;
	ret = write_cm_event(id, RDMA_CM_EVENT_ADDR_RESOLVED, 0, 1);
	check(ret == -1 && errno == EINVAL, "rdma_write_cm_event(ADDR_RESOLVED): EINVAL");
	if (write_cm_event(id, EVENT_USER, -5, 0x1122334455667788ULL) ||
	    write_cm_event(id, EVENT_USER, 7, 42))
		return fail("rdma_write_cm_event");
	expect(channel, EVENT_USER, -5, &arg, "first user event");
	check(arg == 0x1122334455667788ULL, "... its arg is 0x1122334455667788");
	expect(channel, EVENT_USER, 7, &arg, "second user event");
	check(arg == 42, "... its arg is 42");

	errno = 0;
	ret = query_addrinfo(id, &ai);
	check(ret == -1 && errno == ENOENT, "rdma_query_addrinfo before any resolution: ENOENT");
	errno = 0;
	ret = query_addrinfo(id, NULL);
	check(ret == -1 && errno == EINVAL, "rdma_query_addrinfo(NULL): EINVAL");
	hints.ai_flags |= FLAG_SA;
	errno = 0;
	ret = resolve_addrinfo(id, NULL, argv[2], &hints);
	snprintf(line, sizeof(line), "rdma_resolve_addrinfo(RAI_SA) fails on RoCE: %d (%s)", ret,
		 strerror(errno));
	check(ret == -1 && errno == EOPNOTSUPP, line);
	hints.ai_flags &= ~FLAG_SA;
	if (resolve_addrinfo(id, argv[1], argv[2], &hints))
		return fail("rdma_resolve_addrinfo");
	errno = 0;
	ret = resolve_addrinfo(id, argv[1], argv[2], &hints);
	check(ret == -1 && errno == EBUSY, "a second rdma_resolve_addrinfo while one waits: EBUSY");
	expect(channel, EVENT_ADDRINFO_RESOLVED, 0, NULL, "resolution");
	if (query_addrinfo(id, &ai))
		return fail("rdma_query_addrinfo");
	{
		const struct sockaddr_in *dst = (const struct sockaddr_in *)ai->ai_dst_addr;
		char text[INET_ADDRSTRLEN] = "?";

		if (dst && dst->sin_family == AF_INET)
			inet_ntop(AF_INET, &dst->sin_addr, text, sizeof(text));
		snprintf(line, sizeof(line), "the result: %s port %u", text,
			 dst ? ntohs(dst->sin_port) : 0);
		check(dst && !strcmp(text, argv[1]) && ntohs(dst->sin_port) == atoi(argv[2]), line);
	}
	rdma_freeaddrinfo(ai);
	errno = 0;
	ret = query_addrinfo(id, &ai);
	check(ret == -1 && errno == ENOENT, "rdma_query_addrinfo once the result is taken: ENOENT");
	/* A result nobody takes goes with the ID. */
	if (resolve_addrinfo(id, argv[1], argv[2], &hints))
		return fail("rdma_resolve_addrinfo");
	expect(channel, EVENT_ADDRINFO_RESOLVED, 0, NULL, "a second resolution, left untaken");
	if (rdma_destroy_id(id))
		return fail("rdma_destroy_id");
	rdma_destroy_event_channel(channel);
	printf("rdma_user_events: end %d\n", failed);
	return failed;
}
