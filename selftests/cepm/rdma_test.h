/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the selftests' small rdma_cm programs share: each reports a failed call
 * as perror does and exits 1, and the asynchronous ones start alike, from an
 * ADDRESS PORT TEXT command line.
 */
#ifndef CEPM_RDMA_TEST_H
#define CEPM_RDMA_TEST_H

#include <netdb.h>
#include <stdio.h>
#include <rdma/rdma_cma.h>

static inline int fail(const char *what)
{
	perror(what);
	return 1;
}

/*
 * Checks for "ADDRESS PORT TEXT", resolves ADDRESS and PORT into *addr (freed
 * by the caller), and makes an event channel with one TCP port space ID on it.
 * 0, or the exit status for main: 2 for a wrong command line, 1 otherwise.
 */
static inline int open_tcp_id(int argc, char **argv, struct addrinfo **addr,
			      struct rdma_event_channel **channel, struct rdma_cm_id **id)
{
	if (argc != 4) {
		fprintf(stderr, "usage: %s ADDRESS PORT TEXT\n", argv[0]);
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

#endif
