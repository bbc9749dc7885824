// SPDX-License-Identifier: GPL-2.0
/*
 * rdma_destroy_id of a listener while the thread in rdma_get_cm_event is turning the REQ it
 * read for that listener into a CONNECT_REQUEST: librdmacm allows it (the destroy waits until
 * the events of the ID handed out are acknowledged), and the thread must not read the freed
 * listener. The window is made deterministic by this program's own ioctl, which the library's
 * calls reach before glibc's (-rdynamic): once armed, it holds the reading thread right after
 * the listener's CEPM_IOC_GET_REQUEST has claimed the REQ, until the destroy is under way.
 * Freed memory is poisoned (GLIBC_TUNABLES), so a library that frees the listener under the
 * reader hangs on a poisoned lock there, or crashes.
 *
 * Usage: rdma_listener_race ADDRESS PORT (ADDRESS: one of this host's RoCE addresses); the
 * program connects to its own listener. Prints each step; exits 0 if all hold. cepm's
 * librdmacm only: CEPM_IOC_GET_REQUEST is cepm's.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdarg.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <cepm.h>
#include "rdma_test.h"

static sem_t in_window, go;
static int armed;

/* Every ioctl of the process, the library's included: the real one, then the hold. */
int ioctl(int fd, unsigned long request, ...)
{
	static int (*real)(int, unsigned long, ...);
	va_list ap;
	void *arg;
	int rc;

	va_start(ap, request);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (!real)
		real = (int (*)(int, unsigned long, ...))dlsym(RTLD_NEXT, "ioctl");
	rc = real(fd, request, arg);
	if (request == CEPM_IOC_GET_REQUEST && rc == 0 && __atomic_exchange_n(&armed, 0, __ATOMIC_SEQ_CST)) {
		sem_post(&in_window);
		sem_wait(&go);
	}
	return rc;
}

struct call {
	pthread_t thread;
	pid_t tid;
	int rc, err, done;
	struct rdma_event_channel *channel;
	struct rdma_cm_id *id;
	struct rdma_cm_event *event;
};

static void *get_event(void *arg)
{
	struct call *c = arg;

	__atomic_store_n(&c->tid, (pid_t)syscall(SYS_gettid), __ATOMIC_SEQ_CST);
	c->rc = rdma_get_cm_event(c->channel, &c->event);
	c->err = errno;
	__atomic_store_n(&c->done, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

static void *destroy_id(void *arg)
{
	struct call *c = arg;

	__atomic_store_n(&c->tid, (pid_t)syscall(SYS_gettid), __ATOMIC_SEQ_CST);
	c->rc = rdma_destroy_id(c->id);
	c->err = errno;
	__atomic_store_n(&c->done, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

static int done(struct call *c)
{
	return __atomic_load_n(&c->done, __ATOMIC_SEQ_CST);
}

/* Joins @c within 10 s: 0 if it returned. */
static int join(struct call *c)
{
	struct timespec deadline;

	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += 10;
	return pthread_clockjoin_np(c->thread, NULL, CLOCK_MONOTONIC, &deadline);
}

/* The next event of @channel, which must be @expected. */
static int expect(struct rdma_event_channel *channel, enum rdma_cm_event_type expected)
{
	struct rdma_cm_event *event;
	int ok;

	if (rdma_get_cm_event(channel, &event))
		return fail("rdma_get_cm_event");
	ok = event->event == expected;
	if (!ok)
		printf("client: %s, want %s\n", rdma_event_str(event->event), rdma_event_str(expected));
	rdma_ack_cm_event(event);
	return !ok;
}

int main(int argc, char **argv)
{
	struct rdma_conn_param param = { .qp_num = 0x123, .responder_resources = 1,
					 .initiator_depth = 1, .retry_count = 7 };
	struct rdma_event_channel *lchannel, *cchannel;
	struct rdma_cm_id *listener, *client;
	static struct call reader, destroyer;
	struct addrinfo *addr;
	struct timespec deadline;
	int failed = 0, ok, i;

	if (argc != 3) {
		fprintf(stderr, "usage: %s ADDRESS PORT\n", argv[0]);
		return 2;
	}
	failed = poison_freed_memory(argv);
	if (failed)
		return failed;
	if (sem_init(&in_window, 0, 0) || sem_init(&go, 0, 0))
		return fail("sem_init");
	if (getaddrinfo(argv[1], argv[2], NULL, &addr))
		return fail("getaddrinfo");
	lchannel = rdma_create_event_channel();
	cchannel = rdma_create_event_channel();
	if (!lchannel || !cchannel)
		return fail("rdma_create_event_channel");
	if (rdma_create_id(lchannel, &listener, NULL, RDMA_PS_TCP) ||
	    rdma_create_id(cchannel, &client, NULL, RDMA_PS_TCP))
		return fail("rdma_create_id");
	if (rdma_bind_addr(listener, addr->ai_addr) || rdma_listen(listener, 1))
		return fail("rdma_bind_addr or rdma_listen");
	/* The listener's CM thread, and the REQ it is to read. */
	reader.channel = lchannel;
	if (pthread_create(&reader.thread, NULL, get_event, &reader))
		return fail("pthread_create");
	__atomic_store_n(&armed, 1, __ATOMIC_SEQ_CST);
	if (rdma_resolve_addr(client, NULL, addr->ai_addr, 5000) || expect(cchannel, RDMA_CM_EVENT_ADDR_RESOLVED) ||
	    rdma_resolve_route(client, 5000) || expect(cchannel, RDMA_CM_EVENT_ROUTE_RESOLVED) ||
	    rdma_connect(client, &param))
		return fail("the client's resolve and connect");
	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += 30;
	if (sem_clockwait(&in_window, CLOCK_MONOTONIC, &deadline))
		return fail("the reader never claimed the REQ (sem_clockwait)");
	printf("the reader has claimed the REQ for the listener, and is held\n");
	/* The destroy, until it returns or waits (20 s at most); then the reader goes on. */
	destroyer.id = listener;
	if (pthread_create(&destroyer.thread, NULL, destroy_id, &destroyer))
		return fail("pthread_create");
	for (i = 0; i < 20000 && !done(&destroyer) &&
		    !(__atomic_load_n(&destroyer.tid, __ATOMIC_SEQ_CST) && syscall_of(destroyer.tid) == SYS_futex); i++)
		usleep(1000);
	printf("rdma_destroy_id of the listener meanwhile: %s\n",
	       done(&destroyer) ? "returned at once" : "waits");
	sem_post(&go);
	if (join(&reader)) {
		printf("the reader did not return in 10 s: WRONG (it read the freed listener?)\n");
		return 1;
	}
	ok = reader.rc == 0 && reader.event->event == RDMA_CM_EVENT_CONNECT_REQUEST &&
	     reader.event->listen_id == listener;
	printf("the reader: %d, %s, %s: %s\n", reader.rc, reader.rc ? strerror(reader.err) : rdma_event_str(reader.event->event),
	       !reader.rc && reader.event->listen_id == listener ? "the listener's" : "not the listener's",
	       ok ? "ok" : "WRONG (want the CONNECT_REQUEST of the listener)");
	failed |= !ok;
	if (reader.rc == 0) {
		struct rdma_cm_id *conn = reader.event->id;

		printf("rdma_destroy_id of the listener, with its event not yet acknowledged: %s\n",
		       done(&destroyer) ? "WRONG (it returned)" : "still waits: ok");
		failed |= done(&destroyer);
		rdma_reject(conn, NULL, 0);
		rdma_ack_cm_event(reader.event);
		rdma_destroy_id(conn);
	}
	ok = !join(&destroyer) && destroyer.rc == 0;
	printf("rdma_destroy_id of the listener, the event acknowledged: %d: %s\n", destroyer.rc,
	       ok ? "ok" : "WRONG (want 0 within 10 s)");
	failed |= !ok;
	/* The client hears the REJ; then both ends go. */
	failed |= expect(cchannel, RDMA_CM_EVENT_REJECTED);
	rdma_destroy_id(client);
	rdma_destroy_event_channel(cchannel);
	rdma_destroy_event_channel(lchannel);
	freeaddrinfo(addr);
	printf("rdma_listener_race: end %d\n", failed);
	return failed;
}
