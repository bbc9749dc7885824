// SPDX-License-Identifier: GPL-2.0
/*
 * late_listen.so, for LD_PRELOAD into an rdma_cm server: with CEPM_LATE_LISTEN=N:MS in the
 * environment, the process's Nth rdma_listen starts MS milliseconds late, and then calls the
 * librdmacm that follows in the search order (cepm's or rdma-core's).
 *
 * It opens, at will, the window that perftest -R leaves by its design: the server listens
 * for its data connection (its second rdma_listen) only after the handshake on the first,
 * and a client that connects before that is rejected with reason 8 (invalid service ID),
 * which sends perftest's client down its retry path.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <rdma/rdma_cma.h>

int rdma_listen(struct rdma_cm_id *id, int backlog)
{
	static int calls;
	int (*next)(struct rdma_cm_id *, int) = (int (*)(struct rdma_cm_id *, int))dlsym(RTLD_NEXT, "rdma_listen");
	const char *spec = getenv("CEPM_LATE_LISTEN");
	int nth, ms;

	if (!next) {
		fprintf(stderr, "late_listen: no rdma_listen after this library\n");
		abort();
	}
	if (spec && sscanf(spec, "%d:%d", &nth, &ms) == 2 && ++calls == nth) {
		struct timespec delay = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };

		fprintf(stderr, "late_listen: rdma_listen %d starts %d ms late\n", nth, ms);
		nanosleep(&delay, NULL);
	}
	return next(id, backlog);
}
