// SPDX-License-Identifier: GPL-2.0
/*
 * rdma_get_devices before and after a device is added: librdmacm syncs its
 * device list with libibverbs' on every call (sync_devices_list in rdma-core's
 * librdmacm/cma.c), so a device added while the process runs is listed by the
 * next call.
 *
 * Usage: rdma_devices FILE
 * Prints "first: N NAME..." from a first call, waits (up to 60 s) until FILE
 * exists, then prints "then: N NAME..." from a second.  Exits 0, or 1 if a
 * call fails or FILE never comes.
 */
#include <string.h>
#include <sys/stat.h>
#include "rdma_test.h"

/* Prints @what, then the count and the name of every device rdma_get_devices gives. */
static int list(const char *what)
{
	struct ibv_context **devices;
	int n, i;

	devices = rdma_get_devices(&n);
	if (!devices)
		return fail("rdma_get_devices");
	printf("%s: %d", what, n);
	for (i = 0; i < n; i++)
		printf(" %s", ibv_get_device_name(devices[i]->device));
	printf("\n");
	rdma_free_devices(devices);
	return 0;
}

int main(int argc, char **argv)
{
	struct stat st;
	int i;

	if (argc != 2) {
		fprintf(stderr, "usage: %s FILE\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (list("first"))
		return 1;
	for (i = 0; stat(argv[1], &st); i++) {
		if (i == 600) {
			fprintf(stderr, "rdma_devices: %s never came\n", argv[1]);
			return 1;
		}
		usleep(100000);
	}
	return list("then");
}
