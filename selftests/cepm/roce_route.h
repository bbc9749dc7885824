/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Where a CM request to this host goes over RoCE v2, read from sysfs: a port's first RoCE v2
 * GID that maps an IPv4 address, and the MAC of that GID's netdev as the next hop (as
 * cepmctl's roce_v2_ipv4_gid() and local_mac() find them).  Shared by the C selftests.
 */
#ifndef CEPM_SELFTEST_ROCE_ROUTE_H
#define CEPM_SELFTEST_ROCE_ROUTE_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* The first line of a sysfs file, without its newline; false (errno set) if unreadable. */
static inline bool read_line(const char *path, char *line, size_t size)
{
	FILE *f = fopen(path, "r");
	int err;
	bool ok;

	if (!f)
		return false;
	ok = fgets(line, size, f) != NULL;
	err = errno;
	fclose(f);
	errno = err;
	if (ok)
		line[strcspn(line, "\n")] = 0;
	return ok;
}

/* "fe80:0000:0000:0000:0000:0000:0000:0001", as sysfs writes a GID. */
static inline bool parse_gid(const char *s, uint8_t gid[16])
{
	unsigned int g[8];
	int i, n = 0;

	if (sscanf(s, "%4x:%4x:%4x:%4x:%4x:%4x:%4x:%4x%n", &g[0], &g[1], &g[2], &g[3], &g[4],
		   &g[5], &g[6], &g[7], &n) != 8 || s[n])
		return false;
	for (i = 0; i < 8; i++) {
		gid[2 * i] = g[i] >> 8;
		gid[2 * i + 1] = g[i] & 0xff;
	}
	return true;
}

static inline bool parse_mac(const char *s, uint8_t mac[6])
{
	unsigned int m[6];
	int i, n = 0;

	if (sscanf(s, "%2x:%2x:%2x:%2x:%2x:%2x%n", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5],
		   &n) != 6 || s[n])
		return false;
	for (i = 0; i < 6; i++)
		mac[i] = m[i];
	return true;
}

/*
 * Entry `i` of the GID table of port `port` of `dev`: 1 with the GID in gid if it is a
 * RoCE v2 GID, 0 if it is of another type or empty, -1 past the table's end.
 */
static inline int roce_v2_gid(const char *dev, int port, unsigned int i, uint8_t gid[16])
{
	char path[256], line[128];

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/%d/gid_attrs/types/%u", dev,
		 port, i);
	/* An empty entry cannot be read (EINVAL); past the table there is no file. */
	if (!read_line(path, line, sizeof(line)))
		return errno == ENOENT ? -1 : 0;
	if (strcmp(line, "RoCE v2"))
		return 0;
	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/%d/gids/%u", dev, port, i);
	return read_line(path, line, sizeof(line)) && parse_gid(line, gid);
}

/*
 * Port `port` of `dev`: its first RoCE v2 GID that maps an IPv4 address (into gid, its
 * index into *index) and its netdev's MAC (into mac, the netdev's name into ndev).  False if
 * there is none.
 */
static inline bool roce_v2_ipv4_route(const char *dev, int port, uint8_t gid[16], uint8_t mac[6],
				      unsigned int *index, char *ndev, size_t ndev_size)
{
	static const uint8_t v4_mapped[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	char path[256], line[128];
	unsigned int i;

	for (i = 0; i < 256; i++) {
		int found = roce_v2_gid(dev, port, i, gid);

		if (found < 0)
			break;
		if (!found || memcmp(gid, v4_mapped, sizeof(v4_mapped)))
			continue;
		snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/%d/gid_attrs/ndevs/%u",
			 dev, port, i);
		if (!read_line(path, ndev, ndev_size))
			continue;
		snprintf(path, sizeof(path), "/sys/class/net/%s/address", ndev);
		if (!read_line(path, line, sizeof(line)) || !parse_mac(line, mac))
			continue;
		*index = i;
		return true;
	}
	return false;
}

#endif
