/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the selftests' multicast programs share: checks that print "ok" or "FAIL" and count
 * the failures, whether a group has a member here, and short naps.
 */
#ifndef CEPM_MULTICAST_TEST_H
#define CEPM_MULTICAST_TEST_H

#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static int failures;

static inline void check(int ok, const char *what)
{
	printf("%s: %s\n", ok ? "ok" : "FAIL", what);
	failures += !ok;
}

/* Whether some netdev of this namespace is a member of @group (/proc/net/igmp's hex). */
static inline int member(struct in_addr group)
{
	char want[16], line[256];
	FILE *f = fopen("/proc/net/igmp", "r");
	int found = 0;

	if (!f)
		return -1;
	snprintf(want, sizeof(want), "%08X", group.s_addr);
	while (fgets(line, sizeof(line), f))
		if (line[0] == '\t' && strstr(line, want))
			found = 1;
	fclose(f);
	return found;
}

static inline void nap_ms(long ms)
{
	struct timespec ts = { ms / 1000, ms % 1000 * 1000000 };

	nanosleep(&ts, NULL);
}

#endif
