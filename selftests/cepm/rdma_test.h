/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the selftests' small rdma_cm programs share: each reports a failed call
 * as perror does and exits 1, and the asynchronous ones start alike, from an
 * ADDRESS PORT TEXT command line.
 */
#ifndef CEPM_RDMA_TEST_H
#define CEPM_RDMA_TEST_H

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <rdma/rdma_cma.h>

static inline int fail(const char *what)
{
	perror(what);
	return 1;
}

/* The next event on @channel, which must be @expected: 0, or 1 after saying why not. */
static inline int expect_event(struct rdma_event_channel *channel,
			       enum rdma_cm_event_type expected, struct rdma_cm_event **event)
{
	if (rdma_get_cm_event(channel, event))
		return fail("rdma_get_cm_event");
	if ((*event)->event != expected) {
		fprintf(stderr, "%s: %s (status %d), not %s\n", program_invocation_short_name,
			rdma_event_str((*event)->event), (*event)->status, rdma_event_str(expected));
		return 1;
	}
	return 0;
}

/*
 * A CM-only active side's end of its connection, once CONNECT_RESPONSE is read: the RTU
 * (rdma_establish), then a disconnect and its DISCONNECTED event.  0, or 1 after saying why
 * not.
 */
static inline int establish_and_disconnect(struct rdma_event_channel *channel,
					   struct rdma_cm_id *id)
{
	struct rdma_cm_event *event;

	if (rdma_establish(id))
		return fail("rdma_establish");
	if (rdma_disconnect(id))
		return fail("rdma_disconnect");
	if (expect_event(channel, RDMA_CM_EVENT_DISCONNECTED, &event))
		return 1;
	rdma_ack_cm_event(event);
	return 0;
}

/*
 * The GID an address maps to on RoCE (an IPv4 address as ::ffff:a.b.c.d), in @gid: 0, or 1
 * for a family that has none (@gid is then zero).
 */
static inline int gid_of(const struct sockaddr *sa, union ibv_gid *gid)
{
	memset(gid, 0, sizeof(*gid));
	if (sa->sa_family == AF_INET) {
		gid->raw[10] = 0xff;
		gid->raw[11] = 0xff;
		memcpy(&gid->raw[12], &((const struct sockaddr_in *)sa)->sin_addr, 4);
		return 0;
	}
	if (sa->sa_family == AF_INET6) {
		memcpy(gid->raw, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
		return 0;
	}
	return 1;
}

/*
 * Checks for "ADDRESS PORT TEXT [RETRY_COUNT RNR_RETRY_COUNT]", resolves ADDRESS
 * and PORT into *addr (freed by the caller), and makes an event channel with one
 * TCP port space ID on it.  0, or the exit status for main: 2 for a wrong
 * command line, 1 otherwise.  retry_counts() reads the optional pair.
 */
static inline int open_tcp_id(int argc, char **argv, struct addrinfo **addr,
			      struct rdma_event_channel **channel, struct rdma_cm_id **id)
{
	if (argc != 4 && argc != 6) {
		fprintf(stderr, "usage: %s ADDRESS PORT TEXT [RETRY_COUNT RNR_RETRY_COUNT]\n",
			argv[0]);
		return 2;
	}
	if (getaddrinfo(argv[1], argv[2], NULL, addr))
		return fail("getaddrinfo");
	*channel = rdma_create_event_channel();
	if (!*channel)
		return fail("rdma_create_event_channel");
	if (rdma_create_id(*channel, id, NULL, RDMA_PS_TCP))
		return fail("rdma_create_id");
	return 0;
}

/*
 * Binds @id to @addr (freed here), listens with a backlog of 1, says "listening" on stdout,
 * and waits on @channel for the first event, which must be a CONNECT_REQUEST, into *event:
 * 0, or 1 after saying why not.
 */
static inline int listen_for_request(struct rdma_event_channel *channel, struct rdma_cm_id *id,
				     struct addrinfo *addr, struct rdma_cm_event **event)
{
	if (rdma_bind_addr(id, addr->ai_addr))
		return fail("rdma_bind_addr");
	freeaddrinfo(addr);
	if (rdma_listen(id, 1))
		return fail("rdma_listen");
	printf("listening\n");
	fflush(stdout);
	if (rdma_get_cm_event(channel, event))
		return fail("rdma_get_cm_event");
	if ((*event)->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
		fprintf(stderr, "unexpected event %s (status %d)\n", rdma_event_str((*event)->event),
			(*event)->status);
		return 1;
	}
	return 0;
}

/*
 * The REQ's retry counts of the command line (0 to 7 each), into *retry and
 * *rnr: 1 if given, 0 if not (the two are left alone then).
 */
static inline int retry_counts(int argc, char **argv, unsigned int *retry, unsigned int *rnr)
{
	if (argc != 6)
		return 0;
	*retry = (unsigned int)atoi(argv[4]) & 7;
	*rnr = (unsigned int)atoi(argv[5]) & 7;
	return 1;
}

/*
 * Re-executes the program, once, with glibc's allocator poisoning every block freed at once
 * (no thread cache to hold it unpoisoned), so that a library that reads freed memory reads
 * garbage: 0 once that is so (it says so), or the exit status for main if the exec failed.
 */
static inline int poison_freed_memory(char **argv)
{
	if (!getenv("CEPM_POISONED")) {
		const char *more = getenv("GLIBC_TUNABLES");
		char tunables[512];

		snprintf(tunables, sizeof(tunables), "%s%sglibc.malloc.tcache_count=0:glibc.malloc.perturb=165",
			 more ? more : "", more ? ":" : "");
		setenv("GLIBC_TUNABLES", tunables, 1);
		setenv("CEPM_POISONED", "1", 1);
		execv("/proc/self/exe", argv);
		return fail("execv");
	}
	printf("freed memory poisoned: GLIBC_TUNABLES=%s\n", getenv("GLIBC_TUNABLES"));
	return 0;
}

/* The system call thread @tid of this process is in (/proc), or -1. */
static inline long syscall_of(int tid)
{
	char path[64];
	long nr = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", tid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%ld", &nr) != 1)
		nr = -1;
	fclose(f);
	return nr;
}

#ifdef RDMA_VERBS_H
/*
 * rdma_server's side of its exchange with rdma_client, before the connection: @len bytes of
 * @buf registered into *mr, a receive posted for them (on the ID's SRQ if it has one), and
 * the request on @id accepted.  0, or 1 after saying which call failed.
 */
static inline int post_recv_and_accept(struct rdma_cm_id *id, void *buf, size_t len,
				       struct ibv_mr **mr)
{
	*mr = rdma_reg_msgs(id, buf, len);
	if (!*mr)
		return fail("rdma_reg_msgs");
	if (rdma_post_recv(id, NULL, buf, len, *mr))
		return fail("rdma_post_recv");
	if (rdma_accept(id, NULL))
		return fail("rdma_accept");
	return 0;
}

/*
 * ... and once the message has come: the same @len bytes of @buf (registered as @mr) sent
 * back, and the send's completion taken.  0, or 1 after saying what failed.
 */
static inline int send_back(struct rdma_cm_id *id, void *buf, size_t len, struct ibv_mr *mr)
{
	struct ibv_wc wc;
	int n;

	if (rdma_post_send(id, NULL, buf, len, mr, 0))
		return fail("rdma_post_send");
	while ((n = rdma_get_send_comp(id, &wc)) == 0)
		;
	if (n < 0 || wc.status != IBV_WC_SUCCESS) {
		fprintf(stderr, "the reply did not complete\n");
		return 1;
	}
	return 0;
}
#endif

#endif
