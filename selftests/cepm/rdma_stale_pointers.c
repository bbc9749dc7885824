// SPDX-License-Identifier: GPL-2.0
/*
 * cepm's librdmacm turns away pointers that are no live ID or event channel of its own with
 * EINVAL, where rdma-core's reads through them (docs/rdmacm.md, "Stale pointers"): perftest
 * 4.5-0.17's retry passes such pointers. Run over cepm's librdmacm only; rdma-core's would
 * crash, as it may. Each step prints a line; exits 0 if all hold.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
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

/* A thread blocked in rdma_get_cm_event while another destroys its channel. */
static struct {
	struct rdma_event_channel *channel;
	pid_t tid;
	int rc, err;
	int returned;
} blocked;

static void *get_event_blocked(void *arg)
{
	struct rdma_cm_event *event;

	(void)arg;
	__atomic_store_n(&blocked.tid, (pid_t)syscall(SYS_gettid), __ATOMIC_SEQ_CST);
	blocked.rc = rdma_get_cm_event(blocked.channel, &event);
	blocked.err = errno;
	__atomic_store_n(&blocked.returned, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

static void on_signal(int sig)
{
	(void)sig;
}

/* Whether thread @tid sleeps (its state in /proc is S): inside the call, waiting. */
static int sleeping(pid_t tid)
{
	char path[64], buf[256], *state;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	state = strrchr(buf, ')');
	return state && state[1] == ' ' && state[2] == 'S';
}

/*
 * The channel stays alive until the last call in it returns: a thread already waiting in
 * rdma_get_cm_event when another destroys the channel keeps waiting, as over rdma-core's
 * blocked read, and a signal then ends its wait with EINTR, as on a live channel. Freed
 * memory is poisoned (main's GLIBC_TUNABLES), so a library that freed the channel under the
 * waiter reads garbage there: it hangs on a poisoned lock, or crashes.
 */
static int destroy_under_a_waiter(void)
{
	struct sigaction sa = { .sa_handler = on_signal };
	struct timespec deadline;
	pthread_t waiter;
	int ok, i;

	blocked.channel = rdma_create_event_channel();
	if (!blocked.channel)
		return fail("rdma_create_event_channel");
	sigemptyset(&sa.sa_mask);
	/* No SA_RESTART: the wait ends with EINTR. */
	if (sigaction(SIGUSR1, &sa, NULL))
		return fail("sigaction");
	if (pthread_create(&waiter, NULL, get_event_blocked, NULL))
		return fail("pthread_create");
	/* Until the waiter sleeps in the call (60 s at most). */
	for (i = 0; i < 60000 && !(__atomic_load_n(&blocked.tid, __ATOMIC_SEQ_CST) && sleeping(blocked.tid)); i++)
		usleep(1000);
	rdma_destroy_event_channel(blocked.channel);
	printf("rdma_destroy_event_channel while a thread waits in rdma_get_cm_event on it: %s\n",
	       __atomic_load_n(&blocked.returned, __ATOMIC_SEQ_CST) ? "WRONG (the waiter returned)" : "ok, it still waits");
	pthread_kill(waiter, SIGUSR1);
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += 10;
	if (pthread_timedjoin_np(waiter, NULL, &deadline)) {
		printf("... a signal to the waiter: it did not return in 10 s: WRONG (want -1, EINTR)\n");
		return 1;
	}
	ok = blocked.rc == -1 && blocked.err == EINTR;
	printf("... a signal to the waiter: %d, %s: %s\n", blocked.rc, strerror(blocked.err),
	       ok ? "ok" : "WRONG (want -1, EINTR)");
	return !ok;
}

/* A call that must fail with -1 and EINVAL. */
static void einval(const char *what, int rc)
{
	int ok = rc == -1 && errno == EINVAL;

	printf("%s: %d, %s: %s\n", what, rc, strerror(errno), ok ? "ok" : "WRONG (want -1, EINVAL)");
	failed |= !ok;
}

int main(int argc, char **argv)
{
	struct sockaddr_in dst = { .sin_family = AF_INET, .sin_port = htons(7), .sin_addr.s_addr = htonl(0x7f000001) };
	struct rdma_event_channel *channel, *second;
	struct rdma_cm_event *event;
	struct rdma_cm_id *id, *other;
	unsigned int ports;
	pthread_t waiter;
	int returned;
	/* What a freed array might hold where a pointer was: glibc's mangled tcache link. */
	struct rdma_cm_id *garbage = (struct rdma_cm_id *)(uintptr_t)0x5a5a5a5a5a5a5a50ULL;

	/* Every block freed is poisoned at once (no thread cache to hold it unpoisoned). */
	if (argc == 1 && !getenv("GLIBC_TUNABLES")) {
		setenv("GLIBC_TUNABLES", "glibc.malloc.tcache_count=0:glibc.malloc.perturb=165", 1);
		execv("/proc/self/exe", argv);
		return fail("execv");
	}
	channel = rdma_create_event_channel();
	second = rdma_create_event_channel();
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
	failed |= destroy_under_a_waiter();
	printf("rdma_stale_pointers: end %d\n", failed);
	/* exit, not return: the waiter above never returns. */
	exit(failed);
}
