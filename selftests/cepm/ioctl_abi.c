// SPDX-License-Identifier: GPL-2.0
/*
 * The /dev/cepm ABI from C, through include/uapi/cepm.h only: a C user sees the same
 * contract as the Rust crate, and bad arguments get clear errnos.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "cepm.h"

FIXTURE(cepm) {
	int fd;
};

FIXTURE_SETUP(cepm)
{
	self->fd = open("/dev/cepm", O_RDWR);
	ASSERT_GE(self->fd, 0) TH_LOG("open /dev/cepm: %s", strerror(errno));
}

FIXTURE_TEARDOWN(cepm)
{
	close(self->fd);
}

TEST_F(cepm, count_only_query)
{
	struct cepm_query q = { 0 };

	ASSERT_EQ(0, ioctl(self->fd, CEPM_IOC_QUERY, &q));
	EXPECT_EQ(CEPM_ABI_VERSION, q.abi_version);
	EXPECT_GE(q.num_ports, 1);
}

TEST_F(cepm, full_query_names_rxe0)
{
	struct cepm_port_info ports[8];
	struct cepm_query q = { .port_capacity = 8, .ports = (uintptr_t)ports };
	unsigned int i, found = 0;

	memset(ports, 0xa5, sizeof(ports));
	ASSERT_EQ(0, ioctl(self->fd, CEPM_IOC_QUERY, &q));
	ASSERT_LE(q.num_ports, 8);
	for (i = 0; i < q.num_ports; i++) {
		ASSERT_NE(NULL, memchr(ports[i].dev_name, 0, sizeof(ports[i].dev_name)));
		if (!strcmp(ports[i].dev_name, "rxe0") && ports[i].port_num == 1) {
			EXPECT_EQ(CEPM_PORT_ROCE, ports[i].flags & CEPM_PORT_ROCE);
			found++;
		}
	}
	EXPECT_EQ(1, found);
	/* Entries past num_ports are untouched. */
	EXPECT_EQ(0xa5, ((unsigned char *)&ports[q.num_ports])[0]);
}

TEST_F(cepm, capacity_smaller_than_ports)
{
	struct cepm_port_info port;
	struct cepm_query q = { .port_capacity = 0, .ports = (uintptr_t)&port };

	ASSERT_EQ(0, ioctl(self->fd, CEPM_IOC_QUERY, &q));
	EXPECT_GE(q.num_ports, 1);
}

TEST_F(cepm, reserved_must_be_zero)
{
	struct cepm_query q = { .reserved = 1 };

	EXPECT_EQ(-1, ioctl(self->fd, CEPM_IOC_QUERY, &q));
	EXPECT_EQ(EINVAL, errno);
}

TEST_F(cepm, bad_query_pointer)
{
	EXPECT_EQ(-1, ioctl(self->fd, CEPM_IOC_QUERY, (void *)8));
	EXPECT_EQ(EFAULT, errno);
}

TEST_F(cepm, bad_ports_pointer)
{
	struct cepm_query q = { .port_capacity = 4, .ports = 8 };

	EXPECT_EQ(-1, ioctl(self->fd, CEPM_IOC_QUERY, &q));
	EXPECT_EQ(EFAULT, errno);
}

TEST_F(cepm, unknown_ioctl)
{
	struct cepm_query q = { 0 };

	EXPECT_EQ(-1, ioctl(self->fd, _IOWR(CEPM_IOC_MAGIC, 0x7f, struct cepm_query), &q));
	EXPECT_EQ(ENOTTY, errno);
	/* The right number with the wrong size is a different command. */
	EXPECT_EQ(-1, ioctl(self->fd, _IOWR(CEPM_IOC_MAGIC, 0x80, __u64), &q));
	EXPECT_EQ(ENOTTY, errno);
}

TEST_HARNESS_MAIN
