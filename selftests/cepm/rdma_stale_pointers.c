// SPDX-License-Identifier: GPL-2.0
/*
 * cepm's librdmacm turns away pointers that are no live ID or event channel of its own with
 * EINVAL, where rdma-core's reads through them (docs/rdmacm.md, "Stale pointers"): perftest
 * 4.5-0.17's retry passes such pointers. Run over cepm's librdmacm only; rdma-core's would
 * crash, as it may. Each step prints a line; exits 0 if all hold.
 */
#include <errno.h>
#include <fcntl.h>
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

/* A CM thread's loop, once: the next event of its channel. */
struct waiter {
	struct rdma_event_channel *channel;
	pthread_t thread;
	pid_t tid;
	int rc, err;
	int returned;
};

static void *get_event(void *arg)
{
	struct waiter *w = arg;
	struct rdma_cm_event *event;

	__atomic_store_n(&w->tid, (pid_t)syscall(SYS_gettid), __ATOMIC_SEQ_CST);
	w->rc = rdma_get_cm_event(w->channel, &event);
	w->err = errno;
	__atomic_store_n(&w->returned, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

static int start_waiter(struct waiter *w, struct rdma_event_channel *channel)
{
	w->channel = channel;
	return pthread_create(&w->thread, NULL, get_event, w);
}

static int returned(struct waiter *w)
{
	return __atomic_load_n(&w->returned, __ATOMIC_SEQ_CST);
}

static void on_signal(int sig)
{
	(void)sig;
}

/* Signals the waiter, which must return -1 with EINTR within 10 s. */
static void interrupt(struct waiter *w, const char *what)
{
	struct timespec deadline;
	int ok;

	pthread_kill(w->thread, SIGUSR1);
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += 10;
	if (pthread_clockjoin_np(w->thread, NULL, CLOCK_MONOTONIC, &deadline)) {
		printf("%s, then a signal: it did not return in 10 s: WRONG (want -1, EINTR)\n", what);
		failed = 1;
		return;
	}
	ok = w->rc == -1 && w->err == EINTR;
	printf("%s, then a signal: %d, %s: %s\n", what, w->rc, strerror(w->err), ok ? "ok" : "WRONG (want -1, EINTR)");
	failed |= !ok;
}

/* Whether @w's thread is blocked in poll or ppoll. */
static int in_poll(struct waiter *w)
{
	pid_t tid = __atomic_load_n(&w->tid, __ATOMIC_SEQ_CST);

	return tid && (syscall_of(tid) == SYS_poll || syscall_of(tid) == SYS_ppoll);
}

/*
 * The channel stays alive until the last call in it returns: a thread already waiting in
 * rdma_get_cm_event when another destroys the channel keeps waiting, as over rdma-core's
 * blocked read, and a signal then ends its wait with EINTR, as on a live channel; only then
 * is the channel freed, its file closed. Freed memory is poisoned (main), so a library that
 * freed the channel under the waiter reads garbage there: it hangs on a poisoned lock, or
 * crashes.
 */
static void destroy_under_a_waiter(void)
{
	static struct waiter w;
	int fd, i, closed;

	w.channel = rdma_create_event_channel();
	if (!w.channel || start_waiter(&w, w.channel)) {
		failed = fail("rdma_create_event_channel or pthread_create");
		return;
	}
	fd = w.channel->fd;
	/* Until the waiter is blocked in the call's poll (20 s at most). */
	for (i = 0; i < 20000 && !in_poll(&w); i++)
		usleep(1000);
	errno = 0;
	rdma_destroy_event_channel(w.channel);
	printf("rdma_destroy_event_channel while a thread waits in rdma_get_cm_event on it: %s, %s\n",
	       strerror(errno), returned(&w) ? "WRONG (the waiter returned)" : "the waiter still waits: ok");
	failed |= errno != 0 || returned(&w);
	interrupt(&w, "... the waiter");
	closed = fcntl(fd, F_GETFD) == -1 && errno == EBADF;
	printf("... the channel's file once the waiter has returned: %s\n", closed ? "closed: ok" : "WRONG (open)");
	failed |= !closed;
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
	struct sigaction sa = { .sa_handler = on_signal };
	struct sockaddr_in dst = { .sin_family = AF_INET, .sin_port = htons(7), .sin_addr.s_addr = htonl(0x7f000001) };
	struct rdma_event_channel *channel, *second;
	struct rdma_cm_event *event;
	struct rdma_cm_id *id, *other;
	unsigned int ports;
	static struct waiter moment_ago;
	/* What a freed array might hold where a pointer was: glibc's mangled tcache link. */
	struct rdma_cm_id *garbage = (struct rdma_cm_id *)(uintptr_t)0x5a5a5a5a5a5a5a50ULL;

	failed = poison_freed_memory(argv);
	if (failed)
		return failed;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGUSR1, &sa, NULL))
		return fail("sigaction");
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
	 * with the error if it gets one. The waiter must still be waiting in 300 ms.
	 */
	if (start_waiter(&moment_ago, channel))
		return fail("pthread_create");
	usleep(300000);
	printf("rdma_get_cm_event on a channel destroyed a moment ago: %s\n",
	       returned(&moment_ago) ? "WRONG (it returned, want it to wait)" : "still waiting: ok");
	failed |= returned(&moment_ago);
	interrupt(&moment_ago, "... that call");
	einval("rdma_create_id on a destroyed channel", rdma_create_id(channel, &id, NULL, RDMA_PS_TCP));
	einval("rdma_migrate_id to a destroyed channel", rdma_migrate_id(other, channel));
	if (rdma_destroy_id(other))
		return fail("rdma_destroy_id of the live ID");
	rdma_destroy_event_channel(second);
	destroy_under_a_waiter();
	printf("rdma_stale_pointers: end %d\n", failed);
	return failed;
}
