// SPDX-License-Identifier: GPL-2.0
/*
 * cm_clock.so, for LD_PRELOAD into an rdma_cm tool (over cepm's librdmacm or rdma-core's):
 * says on stderr when the process's rdma_listen calls were done and when its rdma_connect
 * calls started (CLOCK_MONOTONIC, one clock for every namespace of the guest), and when
 * rdma_get_cm_event handed it a REJECTED event:
 *   cm_clock: listen N done SECONDS
 *   cm_clock: connect N start SECONDS
 *   cm_clock: rejected status S SECONDS
 * so that a test can tell perftest -R's early client, rejected with status 8 because it
 * connected before its server's second rdma_listen (the data listener, made only after the
 * handshake on the first), from a CM that rejects a REQ it should have taken (lib.sh,
 * again_if_void). Each call then goes to the librdmacm that follows in the search order.
 *
 * With CEPM_LATE_LISTEN=N:MS in the environment, the Nth rdma_listen starts MS milliseconds
 * late: the early client's window, opened at will (rdmacm_tools check 11). With
 * CEPM_LATE_ACCEPT=MS, every rdma_accept starts MS milliseconds late, as an application slow
 * to accept a request it has taken (rdmacm_failures.sh, the MRA armed for it):
 *   cm_clock: accept N starts MS ms late
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <rdma/rdma_cma.h>

/* The next library's @name, or abort. */
static void *next_symbol(const char *name)
{
	void *sym = dlsym(RTLD_NEXT, name);

	if (!sym) {
		fprintf(stderr, "cm_clock: no %s after this library\n", name);
		abort();
	}
	return sym;
}

/* "cm_clock: CALL N WHEN SECONDS" on stderr. */
static void say(const char *call, int n, const char *when)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	fprintf(stderr, "cm_clock: %s %d %s %ld.%09ld\n", call, n, when, (long)now.tv_sec, now.tv_nsec);
}

int rdma_listen(struct rdma_cm_id *id, int backlog)
{
	static int calls;
	int (*next)(struct rdma_cm_id *, int) = (int (*)(struct rdma_cm_id *, int))next_symbol("rdma_listen");
	const char *spec = getenv("CEPM_LATE_LISTEN");
	int nth, ms, rc, n = __atomic_add_fetch(&calls, 1, __ATOMIC_SEQ_CST);

	if (spec && sscanf(spec, "%d:%d", &nth, &ms) == 2 && n == nth) {
		struct timespec delay = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };

		fprintf(stderr, "cm_clock: rdma_listen %d starts %d ms late\n", nth, ms);
		nanosleep(&delay, NULL);
	}
	rc = next(id, backlog);
	if (rc == 0)
		say("listen", n, "done");
	return rc;
}

int rdma_accept(struct rdma_cm_id *id, struct rdma_conn_param *param)
{
	static int calls;
	int (*next)(struct rdma_cm_id *, struct rdma_conn_param *) =
		(int (*)(struct rdma_cm_id *, struct rdma_conn_param *))next_symbol("rdma_accept");
	const char *spec = getenv("CEPM_LATE_ACCEPT");
	int ms, n = __atomic_add_fetch(&calls, 1, __ATOMIC_SEQ_CST);

	if (spec && sscanf(spec, "%d", &ms) == 1 && ms > 0) {
		struct timespec delay = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };

		fprintf(stderr, "cm_clock: accept %d starts %d ms late\n", n, ms);
		nanosleep(&delay, NULL);
	}
	return next(id, param);
}

int rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *param)
{
	static int calls;
	int (*next)(struct rdma_cm_id *, struct rdma_conn_param *) =
		(int (*)(struct rdma_cm_id *, struct rdma_conn_param *))next_symbol("rdma_connect");

	say("connect", __atomic_add_fetch(&calls, 1, __ATOMIC_SEQ_CST), "start");
	return next(id, param);
}

int rdma_get_cm_event(struct rdma_event_channel *channel, struct rdma_cm_event **event)
{
	int (*next)(struct rdma_event_channel *, struct rdma_cm_event **) =
		(int (*)(struct rdma_event_channel *, struct rdma_cm_event **))next_symbol("rdma_get_cm_event");
	int rc = next(channel, event);

	if (rc == 0 && (*event)->event == RDMA_CM_EVENT_REJECTED) {
		struct timespec now;

		clock_gettime(CLOCK_MONOTONIC, &now);
		fprintf(stderr, "cm_clock: rejected status %d %ld.%09ld\n", (*event)->status, (long)now.tv_sec,
			now.tv_nsec);
	}
	return rc;
}
