// SPDX-License-Identifier: GPL-2.0
/*
 * ah_linger.so, for LD_PRELOAD into a datagram sender (rdmacm_multicast.sh's mckey -s, over
 * cepm's librdmacm or rdma-core's): ibv_destroy_ah waits CEPM_AH_LINGER_MS milliseconds
 * (default 2000) before it destroys the address handle, then calls the libibverbs that
 * follows in the search order.
 *
 * mckey posts its datagrams unsignaled and destroys its address handle, then its QP, as soon
 * as they are posted. rxe's send task finds a UD work request's address handle by its number
 * when it gets to it (rxe_get_av), and fails the work request, and with it the QP, once the
 * handle is gone: under TCG most datagrams never leave, whatever the CM. The wait lets the
 * send queue empty first, so that the receiver's count measures the join.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <dlfcn.h>
#include <infiniband/verbs.h>

int ibv_destroy_ah(struct ibv_ah *ah)
{
	static int (*next)(struct ibv_ah *);
	const char *ms = getenv("CEPM_AH_LINGER_MS");
	long wait = ms ? strtol(ms, NULL, 10) : 2000;
	struct timespec ts = { wait / 1000, wait % 1000 * 1000000 };

	if (!next)
		next = (int (*)(struct ibv_ah *))dlsym(RTLD_NEXT, "ibv_destroy_ah");
	if (!next) {
		fprintf(stderr, "ah_linger: no ibv_destroy_ah after this library\n");
		abort();
	}
	while (nanosleep(&ts, &ts))
		;
	return next(ah);
}
