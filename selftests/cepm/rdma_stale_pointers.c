// SPDX-License-Identifier: GPL-2.0
/*
 * cepm's librdmacm turns away pointers that are no live ID or event channel of its own with
 * EINVAL, where rdma-core's reads through them (docs/rdmacm.md, "Stale pointers"): perftest
 * 4.5-0.17's retry passes such pointers. Run over cepm's librdmacm only; rdma-core's would
 * crash, as it may. Each step prints a line; exits 0 if all hold.
 */
#include <errno.h>
#include <pthread.h>
#include <unistd.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include "rdma_test.h"

static int failed;
static int waiter_returned;

/* A CM thread's loop, once: the next event of @arg. */
static void *get_event(void *arg)
{
	struct rdma_cm_event *event;

	rdma_get_cm_event(arg, &event);
	__atomic_store_n(&waiter_returned, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

/* A call that must fail with -1 and EINVAL. */
static void einval(const char *what, int rc)
{
	int ok = rc == -1 && errno == EINVAL;

	printf("%s: %d, %s: %s\n", what, rc, strerror(errno), ok ? "ok" : "WRONG (want -1, EINVAL)");
	failed |= !ok;
}

int main(void)
{
	struct sockaddr_in dst = { .sin_family = AF_INET, .sin_port = htons(7), .sin_addr.s_addr = htonl(0x7f000001) };
	struct rdma_event_channel *channel = rdma_create_event_channel();
	struct rdma_event_channel *second = rdma_create_event_channel();
	struct rdma_cm_event *event;
	struct rdma_cm_id *id, *other;
	unsigned int ports;
	pthread_t waiter;
	int returned;
	/* What a freed array might hold where a pointer was: glibc's mangled tcache link. */
	struct rdma_cm_id *garbage = (struct rdma_cm_id *)(uintptr_t)0x5a5a5a5a5a5a5a50ULL;

	if (!channel || !second)
		return fail("rdma_create_event_channel");
	if (rdma_create_id(channel, &id, NULL, RDMA_PS_TCP) || rdma_create_id(channel, &other, NULL, RDMA_PS_TCP))
		return fail("rdma_create_id");
	if (rdma_destroy_id(id))
		return fail("rdma_destroy_id");
	einval("rdma_destroy_id of a destroyed ID", rdma_destroy_id(id));
	einval("rdma_resolve_addr on a destroyed ID",
	       rdma_resolve_addr(id, NULL, (struct sockaddr *)&dst, 100));
	einval("rdma_resolve_addr on a wild pointer",
	       rdma_resolve_addr(garbage, NULL, (struct sockaddr *)&dst, 100));
	einval("rdma_listen on a pointer into an ID", rdma_listen((struct rdma_cm_id *)((char *)other + 16), 1));
	ports = rdma_get_src_port(id) | rdma_get_dst_port(id);
	printf("rdma_get_src_port and rdma_get_dst_port of a destroyed ID: %u: %s\n", ports,
	       ports ? "WRONG (want 0)" : "ok");
	failed |= ports != 0;
	/* The live ID is untouched by all that: it moves to a second channel, and the first goes. */
	if (rdma_migrate_id(other, second))
		return fail("rdma_migrate_id");
	rdma_destroy_event_channel(channel);
	errno = 0;
	rdma_destroy_event_channel(channel);
	printf("rdma_destroy_event_channel of a destroyed channel: %s: %s\n", strerror(errno),
	       errno == EINVAL ? "ok" : "WRONG (want EINVAL)");
	failed |= errno != EINVAL;
	einval("rdma_get_cm_event on a wild pointer",
	       rdma_get_cm_event((struct rdma_event_channel *)garbage, &event));
	/*
	 * On a channel destroyed a moment ago the call waits for ever instead: rping of rdma-core
	 * 44 destroys its channel while its CM thread goes back for the next event, and exits
	 * with the error if it gets one (stop 35). The waiter must still be waiting in 300 ms.
	 */
	if (pthread_create(&waiter, NULL, get_event, channel))
		return fail("pthread_create");
	usleep(300000);
	returned = __atomic_load_n(&waiter_returned, __ATOMIC_SEQ_CST);
	printf("rdma_get_cm_event on a channel destroyed a moment ago: %s\n",
	       returned ? "WRONG (it returned, want it to wait)" : "still waiting: ok");
	failed |= returned;
	einval("rdma_create_id on a destroyed channel", rdma_create_id(channel, &id, NULL, RDMA_PS_TCP));
	einval("rdma_migrate_id to a destroyed channel", rdma_migrate_id(other, channel));
	if (rdma_destroy_id(other))
		return fail("rdma_destroy_id of the live ID");
	rdma_destroy_event_channel(second);
	printf("rdma_stale_pointers: end %d\n", failed);
	/* exit, not return: the waiter above never returns. */
	exit(failed);
}
