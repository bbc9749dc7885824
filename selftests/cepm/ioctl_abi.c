// SPDX-License-Identifier: GPL-2.0
/*
 * The /dev/cepm ABI from C, through include/uapi/cepm.h only: a C user sees the same
 * contract as the Rust crate, and bad arguments get clear errnos.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "cepm.h"
#include "roce_route.h"

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

TEST_F(cepm, cep_count_follows_create_destroy_and_close)
{
	struct cepm_query q = { 0 };
	struct cepm_create c = { 0 };
	struct cepm_destroy d = { 0 };
	int other = open("/dev/cepm", O_RDWR);
	__u32 before;

	ASSERT_GE(other, 0);
	ASSERT_EQ(0, ioctl(self->fd, CEPM_IOC_QUERY, &q));
	before = q.num_ceps;
	ASSERT_EQ(0, ioctl(self->fd, CEPM_IOC_CREATE, &c));
	ASSERT_EQ(0, ioctl(other, CEPM_IOC_CREATE, &c));
	ASSERT_EQ(0, ioctl(other, CEPM_IOC_CREATE, &c));
	ASSERT_EQ(0, ioctl(self->fd, CEPM_IOC_QUERY, &q));
	EXPECT_EQ(before + 3, q.num_ceps);
	d.handle = c.handle;
	ASSERT_EQ(0, ioctl(other, CEPM_IOC_DESTROY, &d));
	close(other); /* destroys the other one */
	ASSERT_EQ(0, ioctl(self->fd, CEPM_IOC_QUERY, &q));
	EXPECT_EQ(before + 1, q.num_ceps);
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

static int create_cep(int fd, __u64 context)
{
	struct cepm_create c = { .user_context = context };

	if (ioctl(fd, CEPM_IOC_CREATE, &c))
		return -1;
	return c.handle;
}

/*
 * LIST_CEPS of more CEPs than one kmalloc may hold (4 MiB of struct cepm_cep_info: 74,899),
 * as root's `cepmctl list` meets on a busy host: the whole list, with this file's handles, and
 * no kernel warning (dmesg_clean.sh judges the log).  Two files: one may own 65,536.
 */
TEST_F_TIMEOUT(cepm, list_more_ceps_than_a_kmalloc_holds, 600)
{
	enum { PER_FILE = 37500, TOTAL = 2 * PER_FILE };
	struct cepm_list list = { .capacity = TOTAL + 64 };
	struct cepm_cep_info *infos;
	int other, i, ours = 0, theirs = 0;

	other = open("/dev/cepm", O_RDWR);
	ASSERT_GE(other, 0);
	for (i = 0; i < PER_FILE; i++) {
		ASSERT_GT(create_cep(self->fd, 0x11), 0) TH_LOG("CREATE %d: %s", i, strerror(errno));
		ASSERT_GT(create_cep(other, 0x22), 0) TH_LOG("CREATE %d: %s", i, strerror(errno));
	}
	infos = calloc(list.capacity, sizeof(*infos));
	ASSERT_NE(NULL, infos);
	list.ceps = (uintptr_t)infos;
	ASSERT_EQ(0, ioctl(self->fd, CEPM_IOC_LIST_CEPS, &list)) TH_LOG("LIST_CEPS: %s", strerror(errno));
	ASSERT_GE(list.count, TOTAL);
	for (i = 0; i < (int)list.count && i < (int)list.capacity; i++) {
		if (infos[i].user_context == 0x11 && infos[i].handle != 0)
			ours++;
		else if (infos[i].user_context == 0 && infos[i].handle == 0)
			theirs++;
	}
	/* This file's CEPs with their handles and contexts, the other's with neither. */
	EXPECT_EQ(PER_FILE, ours);
	EXPECT_GE(theirs, PER_FILE);
	free(infos);
	close(other);
}

TEST_F(cepm, create_query_destroy)
{
	struct cepm_cep_info info = { 0 };
	struct cepm_destroy d = { 0 };
	int h = create_cep(self->fd, 0x1234);

	ASSERT_GT(h, 0);
	info.handle = h;
	ASSERT_EQ(0, ioctl(self->fd, CEPM_IOC_QUERY_CEP, &info));
	EXPECT_EQ(CEPM_STATE_IDLE, info.state);
	EXPECT_EQ(0x1234, info.user_context);
	EXPECT_NE(0, info.local_comm_id);
	d.handle = h;
	ASSERT_EQ(0, ioctl(self->fd, CEPM_IOC_DESTROY, &d));
	EXPECT_EQ(0, d.events_reported);
	/* The handle is gone, and never reused. */
	EXPECT_EQ(-1, ioctl(self->fd, CEPM_IOC_QUERY_CEP, &info));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, ioctl(self->fd, CEPM_IOC_DESTROY, &d));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_NE(h, create_cep(self->fd, 0));
}

/* ESTABLISH only fits a passive connection waiting for its RTU; nothing changes otherwise. */
TEST_F(cepm, establish_needs_a_sent_rep)
{
	struct cepm_cep_info info = { 0 };
	struct cepm_establish e = { 0 };
	int h = create_cep(self->fd, 0);

	ASSERT_GT(h, 0);
	e.handle = h;
	EXPECT_EQ(-1, ioctl(self->fd, CEPM_IOC_ESTABLISH, &e));
	EXPECT_EQ(EINVAL, errno);
	e.reserved = 1;
	EXPECT_EQ(-1, ioctl(self->fd, CEPM_IOC_ESTABLISH, &e));
	EXPECT_EQ(EINVAL, errno);
	e.reserved = 0;
	e.handle = h + 1000;
	EXPECT_EQ(-1, ioctl(self->fd, CEPM_IOC_ESTABLISH, &e));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, ioctl(self->fd, CEPM_IOC_ESTABLISH, NULL));
	EXPECT_EQ(EFAULT, errno);
	info.handle = h;
	ASSERT_EQ(0, ioctl(self->fd, CEPM_IOC_QUERY_CEP, &info));
	EXPECT_EQ(CEPM_STATE_IDLE, info.state);
}

/* PREPARE_MRA refuses unknown flags, a service timeout over 31 or without its flag, and
 * reserved bits; and a CEP with no REQ or REP to answer. */
TEST_F(cepm, prepare_mra_arguments)
{
	struct cepm_prepare_mra m = { 0 };
	int h = create_cep(self->fd, 0);

	ASSERT_GT(h, 0);
	m.handle = h;
	m.flags = 0x80;
	EXPECT_EQ(-1, ioctl(self->fd, CEPM_IOC_PREPARE_MRA, &m));
	EXPECT_EQ(EINVAL, errno);
	m.flags = CEPM_MRA_SERVICE_TIMEOUT;
	m.service_timeout = 32;
	EXPECT_EQ(-1, ioctl(self->fd, CEPM_IOC_PREPARE_MRA, &m));
	EXPECT_EQ(EINVAL, errno);
	m.flags = 0;
	m.service_timeout = 20;
	EXPECT_EQ(-1, ioctl(self->fd, CEPM_IOC_PREPARE_MRA, &m));
	EXPECT_EQ(EINVAL, errno);
	m.service_timeout = 0;
	m.reserved = 1;
	EXPECT_EQ(-1, ioctl(self->fd, CEPM_IOC_PREPARE_MRA, &m));
	EXPECT_EQ(EINVAL, errno);
	/* Well-formed, but an idle CEP has nothing to answer. */
	m.reserved = 0;
	m.flags = CEPM_MRA_SEND_NOW | CEPM_MRA_SERVICE_TIMEOUT;
	m.service_timeout = 20;
	EXPECT_EQ(-1, ioctl(self->fd, CEPM_IOC_PREPARE_MRA, &m));
	EXPECT_EQ(EINVAL, errno);
}

/* A monitor owns no CEP, reads trace records, and rejects bad requests. */
TEST_F(cepm, monitor_rules)
{
	struct cepm_monitor m = { 0 };
	struct cepm_trace t;
	int other = open("/dev/cepm", O_RDWR | O_NONBLOCK);

	ASSERT_GE(other, 0);
	/* A file that owns a CEP cannot monitor. */
	ASSERT_GT(create_cep(self->fd, 0), 0);
	EXPECT_EQ(-1, ioctl(self->fd, CEPM_IOC_MONITOR, &m));
	EXPECT_EQ(EBUSY, errno);
	m.flags = 1;
	EXPECT_EQ(-1, ioctl(other, CEPM_IOC_MONITOR, &m));
	EXPECT_EQ(EINVAL, errno);
	m.flags = 0;
	m.reserved = 1;
	EXPECT_EQ(-1, ioctl(other, CEPM_IOC_MONITOR, &m));
	EXPECT_EQ(EINVAL, errno);
	m.reserved = 0;
	ASSERT_EQ(0, ioctl(other, CEPM_IOC_MONITOR, &m));
	/* Once, and then no CEP. */
	EXPECT_EQ(-1, ioctl(other, CEPM_IOC_MONITOR, &m));
	EXPECT_EQ(EBUSY, errno);
	EXPECT_EQ(-1, create_cep(other, 0));
	EXPECT_EQ(EBUSY, errno);
	/* Records, not events: a buffer smaller than one record is refused. */
	EXPECT_EQ(-1, read(other, &t, sizeof(struct cepm_event)));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, read(other, &t, sizeof(t)));
	EXPECT_EQ(EAGAIN, errno);
	close(other);
}

/*
 * At the user's monitor limit (max_monitors_per_user, 16 by default), a file that monitors
 * already, or owns a CEP, still gets EBUSY for a second MONITOR, as docs/abi.md says; a new
 * file gets EDQUOT.
 */
TEST_F(cepm, monitor_limit_keeps_ebusy)
{
	struct cepm_monitor m = { 0 };
	int files[16], extra = open("/dev/cepm", O_RDWR | O_NONBLOCK);
	unsigned int i;

	ASSERT_GE(extra, 0);
	for (i = 0; i < 16; i++) {
		files[i] = open("/dev/cepm", O_RDWR | O_NONBLOCK);
		ASSERT_GE(files[i], 0);
		ASSERT_EQ(0, ioctl(files[i], CEPM_IOC_MONITOR, &m)) TH_LOG("monitor %u: %s", i + 1, strerror(errno));
	}
	EXPECT_EQ(-1, ioctl(files[0], CEPM_IOC_MONITOR, &m));
	EXPECT_EQ(EBUSY, errno);
	ASSERT_GT(create_cep(self->fd, 0), 0);
	EXPECT_EQ(-1, ioctl(self->fd, CEPM_IOC_MONITOR, &m));
	EXPECT_EQ(EBUSY, errno);
	EXPECT_EQ(-1, ioctl(extra, CEPM_IOC_MONITOR, &m));
	EXPECT_EQ(EDQUOT, errno);
	/* Closing one gives its place back. */
	close(files[0]);
	EXPECT_EQ(0, ioctl(extra, CEPM_IOC_MONITOR, &m));
	for (i = 1; i < 16; i++)
		close(files[i]);
	close(extra);
}

TEST_F(cepm, create_rejects_reserved_bits)
{
	struct cepm_create c = { .reserved = 1 };

	EXPECT_EQ(-1, ioctl(self->fd, CEPM_IOC_CREATE, &c));
	EXPECT_EQ(EINVAL, errno);
}

TEST_F(cepm, handles_are_per_file)
{
	struct cepm_cep_info info = { 0 };
	int other = open("/dev/cepm", O_RDWR);
	int h;

	ASSERT_GE(other, 0);
	h = create_cep(other, 7);
	ASSERT_GT(h, 0);
	info.handle = h;
	/* This file has no CEP with that handle, whatever another file has. */
	EXPECT_EQ(-1, ioctl(self->fd, CEPM_IOC_QUERY_CEP, &info));
	EXPECT_EQ(EINVAL, errno);
	close(other);
}

TEST_F(cepm, listen_twice_is_ebusy)
{
	struct cepm_listen l = { .service_id = 0x0000000001060000ULL | 50001 };
	struct cepm_cep_info info = { 0 };
	int a = create_cep(self->fd, 1), b = create_cep(self->fd, 2);

	ASSERT_GT(a, 0);
	ASSERT_GT(b, 0);
	l.handle = a;
	ASSERT_EQ(0, ioctl(self->fd, CEPM_IOC_LISTEN, &l));
	l.handle = b;
	EXPECT_EQ(-1, ioctl(self->fd, CEPM_IOC_LISTEN, &l));
	EXPECT_EQ(EBUSY, errno);
	/* ... and nothing changed for b. */
	info.handle = b;
	ASSERT_EQ(0, ioctl(self->fd, CEPM_IOC_QUERY_CEP, &info));
	EXPECT_EQ(CEPM_STATE_IDLE, info.state);
	info.handle = a;
	ASSERT_EQ(0, ioctl(self->fd, CEPM_IOC_QUERY_CEP, &info));
	EXPECT_EQ(CEPM_STATE_LISTEN, info.state);
	/* A listener cannot listen again. */
	l.handle = a;
	l.service_id++;
	EXPECT_EQ(-1, ioctl(self->fd, CEPM_IOC_LISTEN, &l));
	EXPECT_EQ(EINVAL, errno);
}

TEST_F(cepm, masked_listens)
{
	struct cepm_listen l = { .service_id = 0x0000000001060000ULL | 0x5100,
				 .service_mask = ~0xffULL };
	int a = create_cep(self->fd, 1), b = create_cep(self->fd, 2), c = create_cep(self->fd, 3);

	ASSERT_GT(c, 0);
	l.handle = a;
	ASSERT_EQ(0, ioctl(self->fd, CEPM_IOC_LISTEN, &l));
	/* The same range again: EBUSY, whatever the low bits say. */
	l.handle = b;
	l.service_id |= 0x42;
	EXPECT_EQ(-1, ioctl(self->fd, CEPM_IOC_LISTEN, &l));
	EXPECT_EQ(EBUSY, errno);
	/* An exact service ID inside the range is a different listen. */
	l.handle = c;
	l.service_mask = 0;
	EXPECT_EQ(0, ioctl(self->fd, CEPM_IOC_LISTEN, &l));
}

/*
 * A listen scoped by an address (ABI 7): one service ID takes a listener per address and one
 * per family's wildcard; the same address twice is EBUSY; a scope needs an exact service ID
 * of an rdma_cm IP port space, a known scope and flags, and zero reserved bytes (EINVAL).
 */
TEST_F(cepm, listen_scoped_by_address)
{
	struct cepm_listen s = { .service_id = 0x0000000001060000ULL | 50010,
				 .scope = CEPM_LISTEN_IPV4, .addr = { [12] = 10, 77, 0, 1 } };
	const size_t first = offsetof(struct cepm_listen, addr);
	int h[8];

	for (int i = 0; i < 8; i++) {
		h[i] = create_cep(self->fd, i);
		ASSERT_GT(h[i], 0);
	}
	s.handle = h[0];
	ASSERT_EQ(0, ioctl(self->fd, CEPM_IOC_LISTEN, &s)) TH_LOG("%s", strerror(errno));
	s.handle = h[1];
	EXPECT_EQ(-1, ioctl(self->fd, CEPM_IOC_LISTEN, &s));
	EXPECT_EQ(EBUSY, errno);
	/* Another address, and the family's wildcard, are other listens. */
	s.addr[15] = 3;
	EXPECT_EQ(0, ioctl(self->fd, CEPM_IOC_LISTEN, &s));
	memset(s.addr, 0, sizeof(s.addr));
	s.handle = h[2];
	EXPECT_EQ(0, ioctl(self->fd, CEPM_IOC_LISTEN, &s));
	/* So is an unscoped one, the first version's (24 bytes). */
	ASSERT_EQ(24, first);
	s.handle = h[3];
	EXPECT_EQ(0, ioctl(self->fd, _IOC(_IOC_WRITE, CEPM_IOC_MAGIC, _IOC_NR(CEPM_IOC_LISTEN), first),
			   &s));
	s.handle = h[4];
	s.addr[15] = 9;
	s.service_mask = ~0xffULL;
	EXPECT_EQ(-1, ioctl(self->fd, CEPM_IOC_LISTEN, &s)) TH_LOG("a masked scoped listen");
	EXPECT_EQ(EINVAL, errno);
	s.service_mask = 0;
	s.service_id = 0x0000000001070050ULL;
	EXPECT_EQ(-1, ioctl(self->fd, CEPM_IOC_LISTEN, &s)) TH_LOG("no IP port space");
	EXPECT_EQ(EINVAL, errno);
	s.service_id = 0x0000000001060000ULL | 50011;
	s.scope = CEPM_LISTEN_IPV6 + 1;
	EXPECT_EQ(-1, ioctl(self->fd, CEPM_IOC_LISTEN, &s)) TH_LOG("scope 3");
	EXPECT_EQ(EINVAL, errno);
	s.scope = CEPM_LISTEN_IPV4;
	s.flags = CEPM_LISTEN_AFONLY << 1;
	EXPECT_EQ(-1, ioctl(self->fd, CEPM_IOC_LISTEN, &s)) TH_LOG("flags 2");
	EXPECT_EQ(EINVAL, errno);
	s.flags = 0;
	s.reserved2[5] = 1;
	EXPECT_EQ(-1, ioctl(self->fd, CEPM_IOC_LISTEN, &s)) TH_LOG("reserved2");
	EXPECT_EQ(EINVAL, errno);
	s.reserved2[5] = 0;
	/* An unscoped listen with an address is no listen either. */
	s.scope = CEPM_LISTEN_UNSCOPED;
	EXPECT_EQ(-1, ioctl(self->fd, CEPM_IOC_LISTEN, &s)) TH_LOG("unscoped, with an address");
	EXPECT_EQ(EINVAL, errno);
	s.scope = CEPM_LISTEN_IPV4;
	EXPECT_EQ(0, ioctl(self->fd, CEPM_IOC_LISTEN, &s));
}

TEST_F(cepm, get_request_without_request)
{
	struct cepm_listen l = { .service_id = 0x0000000001060000ULL | 50002 };
	struct cepm_get_request g = { 0 };
	int a = create_cep(self->fd, 1);

	ASSERT_GT(a, 0);
	g.listen_handle = a;
	/* Not a listener yet. */
	EXPECT_EQ(-1, ioctl(self->fd, CEPM_IOC_GET_REQUEST, &g));
	EXPECT_EQ(EINVAL, errno);
	l.handle = a;
	ASSERT_EQ(0, ioctl(self->fd, CEPM_IOC_LISTEN, &l));
	EXPECT_EQ(-1, ioctl(self->fd, CEPM_IOC_GET_REQUEST, &g));
	EXPECT_EQ(EAGAIN, errno);
	/* The reserved bytes of its output part must be zero on input too (docs/abi.md). */
	g.req.reserved[1] = 1;
	EXPECT_EQ(-1, ioctl(self->fd, CEPM_IOC_GET_REQUEST, &g));
	EXPECT_EQ(EINVAL, errno);
	g.req.reserved[1] = 0;
	g.req.flow_control = 1;
	EXPECT_EQ(-1, ioctl(self->fd, CEPM_IOC_GET_REQUEST, &g));
	EXPECT_EQ(EINVAL, errno);
	g.req.flow_control = 0;
	g.path.hop_limit = 1;
	EXPECT_EQ(-1, ioctl(self->fd, CEPM_IOC_GET_REQUEST, &g));
	EXPECT_EQ(EINVAL, errno);
	g.path.hop_limit = 0;
	g.local_psn = 1;
	EXPECT_EQ(-1, ioctl(self->fd, CEPM_IOC_GET_REQUEST, &g));
	EXPECT_EQ(EINVAL, errno);
	g.local_psn = 0;
	g.reserved = 1;
	EXPECT_EQ(-1, ioctl(self->fd, CEPM_IOC_GET_REQUEST, &g));
	EXPECT_EQ(EINVAL, errno);
}

TEST_F(cepm, reject_private_data_limits)
{
	struct cepm_reject r = { .reason = CEPM_REJ_CONSUMER_DEFINED };
	int h = create_cep(self->fd, 1);

	ASSERT_GT(h, 0);
	r.handle = h;
	r.pdata_len = CEPM_REJ_PDATA_MAX + 1;
	EXPECT_EQ(-1, ioctl(self->fd, CEPM_IOC_REJECT, &r));
	EXPECT_EQ(E2BIG, errno);
	r.pdata_len = 0;
	r.ari_len = CEPM_REJ_ARI_MAX + 1;
	EXPECT_EQ(-1, ioctl(self->fd, CEPM_IOC_REJECT, &r));
	EXPECT_EQ(E2BIG, errno);
	/* Within the limits, an idle CEP still has nothing to reject. */
	r.ari_len = 0;
	r.pdata_len = CEPM_REJ_PDATA_MAX;
	EXPECT_EQ(-1, ioctl(self->fd, CEPM_IOC_REJECT, &r));
	EXPECT_EQ(EINVAL, errno);
}

TEST_F(cepm, no_events_yet)
{
	struct cepm_event ev;
	struct pollfd p = { .fd = self->fd, .events = POLLIN };
	int flags = fcntl(self->fd, F_GETFL);

	ASSERT_EQ(0, fcntl(self->fd, F_SETFL, flags | O_NONBLOCK));
	EXPECT_EQ(-1, read(self->fd, &ev, sizeof(ev)));
	EXPECT_EQ(EAGAIN, errno);
	EXPECT_EQ(-1, read(self->fd, &ev, sizeof(ev) - 1));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, poll(&p, 1, 0));
}

/*
 * CONNECT and SIDR_REQ take a path and check it the same way: an MTU the IB enum has
 * (1..5), a 20-bit flow label, an SL below 16, a 5-bit packet lifetime, a source GID the
 * port has, and zero reserved bytes.  The good path (rxe0's GID 0 towards a made-up
 * neighbour) is taken by both, so each bad one fails for its own field.
 */
static struct cepm_path_rec good_path(void)
{
	struct cepm_path_rec p = {
		.dgid = { 0xfe, 0x80, [15] = 1 },
		.dmac = { 0x02, 0, 0, 0, 0, 1 },
		.sgid_index = 0,
		.hop_limit = 64,
		.mtu = 3,
		.packet_life_time = 14,
	};
	return p;
}

static int connect_on(int fd, int handle, struct cepm_path_rec path)
{
	struct cepm_connect c = {
		.service_id = 0x1064e79,
		.handle = handle,
		.port_num = 1,
		.path = path,
		.local_qpn = 0x1234,
		.remote_cm_response_timeout = 16,
		.local_cm_response_timeout = 16,
		.max_cm_retries = 0,
	};

	strcpy(c.dev_name, "rxe0");
	return ioctl(fd, CEPM_IOC_CONNECT, &c);
}

static int sidr_req_on(int fd, int handle, struct cepm_path_rec path)
{
	struct cepm_sidr_req r = {
		.service_id = 0x1114e79,
		.handle = handle,
		.port_num = 1,
		.path = path,
		.cm_response_timeout = 16,
		.max_cm_retries = 0,
	};

	strcpy(r.dev_name, "rxe0");
	return ioctl(fd, CEPM_IOC_SIDR_REQ, &r);
}

TEST_F(cepm, connect_and_sidr_req_check_the_path)
{
	static const char *const names[] = { "MTU 0", "MTU 6", "flow label 2^20", "SL 16",
					     "packet lifetime 32", "reserved byte", "no such GID" };
	int (*const sends[])(int, int, struct cepm_path_rec) = { connect_on, sidr_req_on };
	struct cepm_destroy d = { 0 };

	for (int s = 0; s < 2; s++) {
		const char *what = s ? "SIDR_REQ" : "CONNECT";

		for (int bad = 0; bad < 7; bad++) {
			struct cepm_path_rec p = good_path();
			int h = create_cep(self->fd, 0);

			ASSERT_GT(h, 0);
			switch (bad) {
			case 0: p.mtu = 0; break;
			case 1: p.mtu = 6; break;
			case 2: p.flow_label = 1 << 20; break;
			case 3: p.sl = 16; break;
			case 4: p.packet_life_time = 32; break;
			case 5: p.reserved[1] = 1; break;
			case 6: p.sgid_index = 255; break;
			}
			EXPECT_EQ(-1, sends[s](self->fd, h, p)) TH_LOG("%s took a path with %s", what, names[bad]);
			EXPECT_EQ(EINVAL, errno) TH_LOG("%s, path with %s", what, names[bad]);
			d.handle = h;
			ASSERT_EQ(0, ioctl(self->fd, CEPM_IOC_DESTROY, &d));
		}
		d.handle = create_cep(self->fd, 0);
		ASSERT_GT(d.handle, 0);
		if (s) {
			/* A CM response timeout is a 5-bit exponent: 32 is out of range. */
			struct cepm_sidr_req r = { .service_id = 0x1114e79, .handle = d.handle,
						   .port_num = 1, .path = good_path(),
						   .cm_response_timeout = 32 };

			strcpy(r.dev_name, "rxe0");
			EXPECT_EQ(-1, ioctl(self->fd, CEPM_IOC_SIDR_REQ, &r))
				TH_LOG("SIDR_REQ took a CM response timeout of 32");
			EXPECT_EQ(EINVAL, errno);
		}
		EXPECT_EQ(0, sends[s](self->fd, d.handle, good_path()))
			TH_LOG("%s refused the good path: %s", what, strerror(errno));
		ASSERT_EQ(0, ioctl(self->fd, CEPM_IOC_DESTROY, &d));
	}
}

/*
 * INIT_QP_ATTR writes the whole address it returns: ah.pkey and ah.packet_life_time are the
 * connection's (the REQ's P_Key, 0 in the path meaning 0xffff, and the path's packet
 * lifetime), not what the caller left in them.
 */
TEST_F(cepm, init_qp_attr_returns_the_connections_address)
{
	struct cepm_connect c = {
		.service_id = 0x1064e7a,
		.port_num = 1,
		.path = good_path(),
		.local_qpn = 0x1234,
		/* Retried for minutes: still REQ_SENT when asked. */
		.remote_cm_response_timeout = 20,
		.local_cm_response_timeout = 20,
		.max_cm_retries = 15,
	};
	struct cepm_qp_attr q = { .qp_state = CEPM_QPS_INIT };
	struct cepm_destroy d = { 0 };

	strcpy(c.dev_name, "rxe0");
	d.handle = c.handle = create_cep(self->fd, 0);
	ASSERT_GT(c.handle, 0);
	ASSERT_EQ(0, ioctl(self->fd, CEPM_IOC_CONNECT, &c)) TH_LOG("CONNECT: %s", strerror(errno));
	q.handle = c.handle;
	q.ah.pkey = 0x1234;
	q.ah.packet_life_time = 31;
	ASSERT_EQ(0, ioctl(self->fd, CEPM_IOC_INIT_QP_ATTR, &q)) TH_LOG("INIT_QP_ATTR: %s", strerror(errno));
	EXPECT_EQ(0xffff, q.ah.pkey);
	EXPECT_EQ(14, q.ah.packet_life_time);
	EXPECT_EQ(3, q.ah.mtu);
	EXPECT_EQ(0, memcmp(q.ah.dgid, c.path.dgid, sizeof(q.ah.dgid)));
	ASSERT_EQ(0, ioctl(self->fd, CEPM_IOC_DESTROY, &d));
}

/*
 * A path from rxe0's IPv4 RoCE v2 GID to 10.77.0.HOST, with dmac DMAC: the neighbour table
 * of the guest (selftests/baseline.sh) has 10.77.0.98 as a silent peer, and no entry that
 * answers for 10.77.0.97.
 */
static bool ipv4_path(struct cepm_path_rec *p, int host, const __u8 dmac[6])
{
	__u8 gid[16], mac[6];
	unsigned int index;
	char ndev[32];

	if (!roce_v2_ipv4_route("rxe0", 1, gid, mac, &index, ndev, sizeof(ndev)))
		return false;
	*p = good_path();
	memcpy(p->dgid, gid, sizeof(p->dgid));
	p->dgid[15] = host;
	memcpy(p->dmac, dmac, 6);
	p->sgid_index = index;
	return true;
}

static const __u8 broadcast_mac[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

/*
 * A CONNECT's MAC is the next hop's, from the neighbour table, not the caller's: the
 * caller's would aim CM MADs at any L2 address (docs/abi.md, "Paths").  A broadcast MAC
 * given for 10.77.0.98 becomes that neighbour's, as INIT_QP_ATTR shows it.
 */
TEST_F(cepm, connect_takes_the_next_hops_mac)
{
	static const __u8 silent_peer_mac[6] = { 0x02, 0, 0, 0, 0, 0x98 };
	struct cepm_connect c = {
		.service_id = 0x1064e7b,
		.port_num = 1,
		.local_qpn = 0x1234,
		.remote_cm_response_timeout = 20,
		.local_cm_response_timeout = 20,
		.max_cm_retries = 15,
	};
	struct cepm_qp_attr q = { .qp_state = CEPM_QPS_INIT };
	struct cepm_destroy d = { 0 };

	ASSERT_TRUE(ipv4_path(&c.path, 98, broadcast_mac)) TH_LOG("rxe0 has no IPv4 RoCE v2 GID");
	strcpy(c.dev_name, "rxe0");
	d.handle = c.handle = create_cep(self->fd, 0);
	ASSERT_GT(c.handle, 0);
	ASSERT_EQ(0, ioctl(self->fd, CEPM_IOC_CONNECT, &c)) TH_LOG("CONNECT: %s", strerror(errno));
	q.handle = c.handle;
	ASSERT_EQ(0, ioctl(self->fd, CEPM_IOC_INIT_QP_ATTR, &q)) TH_LOG("INIT_QP_ATTR: %s", strerror(errno));
	EXPECT_EQ(0, memcmp(q.ah.dmac, silent_peer_mac, 6))
		TH_LOG("the path's MAC is %02x:%02x:%02x:%02x:%02x:%02x", q.ah.dmac[0], q.ah.dmac[1],
		       q.ah.dmac[2], q.ah.dmac[3], q.ah.dmac[4], q.ah.dmac[5]);
	ASSERT_EQ(0, ioctl(self->fd, CEPM_IOC_DESTROY, &d));
}

/*
 * A next hop the neighbour table cannot resolve within the second a CONNECT waits is
 * EHOSTUNREACH, and a broadcast one EINVAL: neither sends a REQ.  The caller's MAC is
 * unicast, so that only the one looked up can be broadcast.
 */
TEST_F(cepm, connect_needs_a_unicast_next_hop)
{
	static const __u8 unicast_mac[6] = { 0x02, 0, 0, 0, 0, 0x42 };
	static const struct {
		int host;
		int err;
	} cases[] = { { 97, EHOSTUNREACH }, { 255, EINVAL } };
	struct cepm_path_rec p;
	struct cepm_destroy d = { 0 };
	unsigned int i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ASSERT_TRUE(ipv4_path(&p, cases[i].host, unicast_mac));
		d.handle = create_cep(self->fd, 0);
		ASSERT_GT(d.handle, 0);
		EXPECT_EQ(-1, connect_on(self->fd, d.handle, p)) TH_LOG("10.77.0.%d: CONNECT taken", cases[i].host);
		EXPECT_EQ(cases[i].err, errno) TH_LOG("10.77.0.%d: %s", cases[i].host, strerror(errno));
		ASSERT_EQ(0, ioctl(self->fd, CEPM_IOC_DESTROY, &d));
	}
}

/*
 * An IPv6 route from a given source address may leave by another netdev than the one it
 * names (ip6_route_output is strict about the interface only for link-local and multicast
 * destinations): here fd79::/64, by a dummy netdev, whose neighbour fd79::2 is known.  A
 * request from rxe0's GID fd77::1 cannot use that neighbour's MAC, which is on another
 * link: ENETUNREACH.  The addresses and the dummy netdev go with the fixture.
 */
FIXTURE(other_netdev) {
	int fd;
	unsigned int index;	/* of rxe0's RoCE v2 GID fd77::1 */
};

static const __u8 gid_fd77_1[16] = { 0xfd, 0x77, [15] = 1 };

/* The index of rxe0's RoCE v2 GID equal to GID, or -1. */
static int rxe0_roce_v2_gid_index(const __u8 gid[16])
{
	__u8 g[16];
	int i, found;

	for (i = 0; i < 256; i++) {
		found = roce_v2_gid("rxe0", 1, i, g);
		if (found < 0)
			break;
		if (found && !memcmp(g, gid, 16))
			return i;
	}
	return -1;
}

FIXTURE_SETUP(other_netdev)
{
	int i, index = -1;

	self->fd = open("/dev/cepm", O_RDWR);
	ASSERT_GE(self->fd, 0) TH_LOG("open /dev/cepm: %s", strerror(errno));
	/* What a run stopped before its teardown left goes first. */
	ASSERT_EQ(0, system("ip link del cepm_other 2>/dev/null; "
			    "ip -6 addr replace fd77::1/64 dev veth0 nodad && "
			    "ip link add cepm_other type dummy && ip link set cepm_other up && "
			    "ip -6 addr add fd79::1/64 dev cepm_other nodad && "
			    "ip -6 neigh replace fd79::2 lladdr 02:00:00:00:00:79 dev cepm_other nud permanent"));
	for (i = 0; i < 200 && index < 0; i++) {
		index = rxe0_roce_v2_gid_index(gid_fd77_1);
		if (index < 0)
			usleep(100 * 1000);
	}
	ASSERT_GE(index, 0) TH_LOG("rxe0 has no RoCE v2 GID for fd77::1 after 20 s");
	self->index = index;
}

FIXTURE_TEARDOWN(other_netdev)
{
	close(self->fd);
	if (system("ip link del cepm_other 2>/dev/null; ip -6 addr del fd77::1/64 dev veth0 2>/dev/null"))
		TH_LOG("could not remove the dummy netdev or fd77::1");
}

TEST_F(other_netdev, connect_by_another_netdev_is_enetunreach)
{
	static const __u8 dgid[16] = { 0xfd, 0x79, [15] = 2 };
	struct cepm_path_rec p = good_path();
	struct cepm_destroy d = { 0 };

	memcpy(p.dgid, dgid, 16);
	p.sgid_index = self->index;
	d.handle = create_cep(self->fd, 0);
	ASSERT_GT(d.handle, 0);
	EXPECT_EQ(-1, connect_on(self->fd, d.handle, p)) TH_LOG("CONNECT to fd79::2 taken");
	EXPECT_EQ(ENETUNREACH, errno) TH_LOG("%s", strerror(errno));
	ASSERT_EQ(0, ioctl(self->fd, CEPM_IOC_DESTROY, &d));
}

/* QUERY_CEP refuses a non-zero reserved field, either of its two. */
TEST_F(cepm, query_cep_reserved_fields)
{
	struct cepm_cep_info info = { 0 };
	struct cepm_destroy d = { 0 };
	int h = create_cep(self->fd, 0);

	ASSERT_GT(h, 0);
	info.handle = h;
	ASSERT_EQ(0, ioctl(self->fd, CEPM_IOC_QUERY_CEP, &info));
	memset(&info, 0, sizeof(info));
	info.handle = h;
	info.reserved = 1;
	EXPECT_EQ(-1, ioctl(self->fd, CEPM_IOC_QUERY_CEP, &info));
	EXPECT_EQ(EINVAL, errno);
	memset(&info, 0, sizeof(info));
	info.handle = h;
	info.reserved2 = 1;
	EXPECT_EQ(-1, ioctl(self->fd, CEPM_IOC_QUERY_CEP, &info)) TH_LOG("reserved2 = 1 was taken");
	EXPECT_EQ(EINVAL, errno);
	d.handle = h;
	ASSERT_EQ(0, ioctl(self->fd, CEPM_IOC_DESTROY, &d));
}

/*
 * A struct can grow without a new ioctl number.  The kernel finds the call by its type,
 * number and direction; the size field says how big the caller's struct is, as DRM's
 * ioctls take it.  A longer struct is served if the bytes the kernel does not know are
 * zero (E2BIG if not).  A struct shorter than the first ABI version's is no version at
 * all: no command of ours (ENOTTY, as unknown_ioctl expects), and nothing is written.
 */
TEST_F(cepm, structs_can_grow)
{
	struct {
		struct cepm_create c;
		__u64 future;
	} longer = { .c.user_context = 7 };
	unsigned long create_longer = _IOC(_IOC_READ | _IOC_WRITE, CEPM_IOC_MAGIC,
					   _IOC_NR(CEPM_IOC_CREATE), sizeof(longer));
	struct cepm_cep_info info = { 0 };
	unsigned long query_shorter = _IOC(_IOC_READ | _IOC_WRITE, CEPM_IOC_MAGIC,
					   _IOC_NR(CEPM_IOC_QUERY_CEP),
					   offsetof(struct cepm_cep_info, reserved2));
	struct cepm_destroy d = { 0 };

	ASSERT_EQ(0, ioctl(self->fd, create_longer, &longer))
		TH_LOG("CREATE with 8 more (zero) bytes: %s", strerror(errno));
	ASSERT_GT(longer.c.handle, 0);
	info.handle = longer.c.handle;
	EXPECT_EQ(-1, ioctl(self->fd, query_shorter, &info));
	EXPECT_EQ(ENOTTY, errno);
	EXPECT_EQ(0, info.state);
	EXPECT_EQ(0, info.user_context);
	d.handle = longer.c.handle;
	ASSERT_EQ(0, ioctl(self->fd, CEPM_IOC_DESTROY, &d));

	longer.future = 1;
	EXPECT_EQ(-1, ioctl(self->fd, create_longer, &longer));
	EXPECT_EQ(E2BIG, errno);
	/* Another direction is another call. */
	EXPECT_EQ(-1, ioctl(self->fd, _IOC(_IOC_WRITE, CEPM_IOC_MAGIC, _IOC_NR(CEPM_IOC_CREATE),
					   sizeof(struct cepm_create)), &longer.c));
	EXPECT_EQ(ENOTTY, errno);
}

/*
 * The bound the module was loaded with: CEPM_EVENT_QUEUE_MAX unless the caller, which loaded
 * it with another event_queue_max, says so in $CEPM_EVENT_QUEUE_MAX (event_queue.sh).
 */
static int event_queue_max(void)
{
	const char *env = getenv("CEPM_EVENT_QUEUE_MAX");

	return env ? atoi(env) : CEPM_EVENT_QUEUE_MAX;
}

/*
 * The event queue is bounded and loses nothing silently: max + 4 SIDR_REQs to a neighbour
 * that does not answer (one try each) give max + 4 SIDR_REQ_ERRORs, unread; max are read,
 * then read() says EOVERFLOW once, then EAGAIN.  Thousands of MADs take minutes under TCG,
 * so event_queue.sh runs this with the module loaded with event_queue_max=16.
 */
TEST_F_TIMEOUT(cepm, full_event_queue_says_overflow, 300)
{
	const int max = event_queue_max(), n = max + 4;
	static int handles[65536 + 4];
	struct cepm_event ev;
	int idle = 0, read_ok = 0;

	if (max > 64)
		SKIP(return, "event_queue_max is %d: event_queue.sh runs this with 16", max);

	for (int i = 0; i < n; i++) {
		struct cepm_path_rec p = good_path();

		handles[i] = create_cep(self->fd, i);
		ASSERT_GT(handles[i], 0);
		p.packet_life_time = 0;
		ASSERT_EQ(0, sidr_req_on(self->fd, handles[i], p)) TH_LOG("SIDR_REQ %d: %s", i, strerror(errno));
	}
	/* Each fails after one try of a few ms: wait until every CEP is idle again. */
	for (int round = 0; round < 600 && idle < n; round++) {
		idle = 0;
		for (int i = 0; i < n; i++) {
			struct cepm_cep_info info = { .handle = handles[i] };

			ASSERT_EQ(0, ioctl(self->fd, CEPM_IOC_QUERY_CEP, &info));
			idle += info.state == CEPM_STATE_IDLE;
		}
		if (idle < n)
			usleep(100000);
	}
	ASSERT_EQ(n, idle) TH_LOG("only %d of %d SIDR_REQs have failed", idle, n);
	ASSERT_EQ(0, fcntl(self->fd, F_SETFL, fcntl(self->fd, F_GETFL) | O_NONBLOCK));
	while (read(self->fd, &ev, sizeof(ev)) == sizeof(ev)) {
		EXPECT_EQ(CEPM_EVENT_SIDR_REQ_ERROR, ev.event);
		read_ok++;
	}
	EXPECT_EQ(max, read_ok);
	EXPECT_EQ(EOVERFLOW, errno);
	EXPECT_EQ(-1, read(self->fd, &ev, sizeof(ev)));
	EXPECT_EQ(EAGAIN, errno);
}

/*
 * A REQ_RECEIVED whose request was claimed before it was read is not left behind, and one
 * already read takes no other with it.  Two REQs (cepmctl send-mad, rxe0 loopback) for a
 * listener: one event read, both claimed, nothing more to read; again, neither read.  Each
 * REQ comes from its own QP: a second REQ from the same QP would be a stale connection.
 */
static void send_req(const char *service, unsigned int comm_id)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "%s/target/release/cepmctl send-mad rxe0 1 REQ --service-id %s "
		 "--comm-id %#x --qpn %#x", getenv("CEPM_ROOT"), service, comm_id, 0x100 + (comm_id & 0xff));
	if (system(cmd))
		fprintf(stderr, "# %s failed\n", cmd);
}

static int pending_requests(int fd, int listener)
{
	struct cepm_cep_info info = { .handle = listener };

	return ioctl(fd, CEPM_IOC_QUERY_CEP, &info) ? -1 : (int)info.pending_requests;
}

/* The listener's pending requests once at least @n wait, or after 10 s. */
static int wait_pending(int fd, int listener, int n)
{
	for (int i = 0; i < 200 && pending_requests(fd, listener) < n; i++)
		usleep(50000);
	return pending_requests(fd, listener);
}

TEST_F_TIMEOUT(cepm, claimed_requests_leave_no_stale_events, 120)
{
	struct cepm_listen l = { .service_id = 0x1064e7e };
	struct cepm_event ev;

	ASSERT_NE(NULL, getenv("CEPM_ROOT"));
	l.handle = create_cep(self->fd, 0);
	ASSERT_GT(l.handle, 0);
	ASSERT_EQ(0, ioctl(self->fd, CEPM_IOC_LISTEN, &l));
	ASSERT_EQ(0, fcntl(self->fd, F_SETFL, fcntl(self->fd, F_GETFL) | O_NONBLOCK));
	for (int read_first = 1; read_first >= 0; read_first--) {
		send_req("0x0000000001064e7e", 0xc1a10000 + 2 * read_first);
		send_req("0x0000000001064e7e", 0xc1a10001 + 2 * read_first);
		ASSERT_EQ(2, wait_pending(self->fd, l.handle, 2));
		if (read_first) {
			ASSERT_EQ(sizeof(ev), read(self->fd, &ev, sizeof(ev)));
			EXPECT_EQ(CEPM_EVENT_REQ_RECEIVED, ev.event);
		}
		for (int i = 0; i < 2; i++) {
			struct cepm_get_request g = { .listen_handle = l.handle };
			struct cepm_reject r = { .reason = 28 };

			ASSERT_EQ(0, ioctl(self->fd, CEPM_IOC_GET_REQUEST, &g)) TH_LOG("%s", strerror(errno));
			r.handle = g.handle;
			EXPECT_EQ(0, ioctl(self->fd, CEPM_IOC_REJECT, &r));
		}
		/* Only the REJ's own events could follow, and a REJ sent raises none. */
		EXPECT_EQ(-1, read(self->fd, &ev, sizeof(ev))) TH_LOG("left: event %u", ev.event);
		EXPECT_EQ(EAGAIN, errno);
	}
}

/*
 * A claimed request has QP attributes for INIT, RTR and RTS before its REP is prepared, as
 * cm.c gives them in REQ_RCVD (cm_init_qp_init_attr, cm_init_qp_rtr_attr and
 * cm_init_qp_rts_attr): what UCX's and SPDK's servers ask before rdma_accept. RTR's receive
 * PSN is the one the REP must announce, so PREPARE_REP refuses another (EINVAL) and takes it.
 */
TEST_F_TIMEOUT(cepm, qp_attributes_before_the_rep, 60)
{
	const __u32 mask_rq_psn = 1 << 12, mask_sq_psn = 1 << 16; /* IB_QP_RQ_PSN, IB_QP_SQ_PSN */
	struct cepm_listen l = { .service_id = 0x1064e80 };
	struct cepm_get_request g = { 0 };
	struct cepm_accept a = { .local_qpn = 0x4321, .rnr_retry_count = 7 };
	struct cepm_destroy d = { 0 };
	struct cepm_qp_attr q;
	__u32 rq_psn = 0;

	ASSERT_NE(NULL, getenv("CEPM_ROOT"));
	l.handle = create_cep(self->fd, 0);
	ASSERT_GT(l.handle, 0);
	ASSERT_EQ(0, ioctl(self->fd, CEPM_IOC_LISTEN, &l));
	send_req("0x0000000001064e80", 0xc1a300b0);
	ASSERT_EQ(1, wait_pending(self->fd, l.handle, 1));
	g.listen_handle = l.handle;
	ASSERT_EQ(0, ioctl(self->fd, CEPM_IOC_GET_REQUEST, &g)) TH_LOG("%s", strerror(errno));
	for (__u32 state = CEPM_QPS_INIT; state <= CEPM_QPS_RTS; state++) {
		memset(&q, 0, sizeof(q));
		q.handle = g.handle;
		q.qp_state = state;
		ASSERT_EQ(0, ioctl(self->fd, CEPM_IOC_INIT_QP_ATTR, &q))
			TH_LOG("INIT_QP_ATTR %u on a claimed REQ: %s", state, strerror(errno));
		if (state == CEPM_QPS_RTR) {
			EXPECT_TRUE(q.attr_mask & mask_rq_psn);
			EXPECT_EQ(g.req.remote_qpn, q.dest_qp_num);
			EXPECT_EQ(0, q.rq_psn >> 24);
			EXPECT_EQ(g.local_psn, q.rq_psn) TH_LOG("RTR's PSN is not the claim's");
			rq_psn = q.rq_psn;
		} else if (state == CEPM_QPS_RTS) {
			EXPECT_TRUE(q.attr_mask & mask_sq_psn);
			EXPECT_EQ(g.req.starting_psn, q.sq_psn);
		}
	}
	a.handle = g.handle;
	a.starting_psn = (rq_psn + 1) & 0xffffff;
	EXPECT_EQ(-1, ioctl(self->fd, CEPM_IOC_PREPARE_REP, &a))
		TH_LOG("PREPARE_REP took PSN %u after RTR gave %u", a.starting_psn, rq_psn);
	EXPECT_EQ(EINVAL, errno);
	a.starting_psn = rq_psn;
	EXPECT_EQ(0, ioctl(self->fd, CEPM_IOC_PREPARE_REP, &a)) TH_LOG("%s", strerror(errno));
	memset(&q, 0, sizeof(q));
	q.handle = g.handle;
	q.qp_state = CEPM_QPS_RTR;
	ASSERT_EQ(0, ioctl(self->fd, CEPM_IOC_INIT_QP_ATTR, &q));
	EXPECT_EQ(rq_psn, q.rq_psn);
	d.handle = g.handle;
	EXPECT_EQ(0, ioctl(self->fd, CEPM_IOC_DESTROY, &d));
	d.handle = l.handle;
	EXPECT_EQ(0, ioctl(self->fd, CEPM_IOC_DESTROY, &d));
}

/*
 * GET_REQUEST's struct grew by local_psn in ABI 6: its first version, which ends before it,
 * is still served (EAGAIN with nothing pending, not ENOTTY), and the module writes nothing
 * past it; one byte shorter is no command of ours.
 */
TEST_F(cepm, get_request_first_version_is_served)
{
	const size_t first = offsetof(struct cepm_get_request, local_psn);
	struct cepm_listen l = { .service_id = 0x1064e81 };
	struct cepm_get_request g;

	ASSERT_EQ(216, first);
	ASSERT_EQ(264, sizeof(g));
	l.handle = create_cep(self->fd, 0);
	ASSERT_GT(l.handle, 0);
	ASSERT_EQ(0, ioctl(self->fd, CEPM_IOC_LISTEN, &l));
	memset(&g, 0, sizeof(g));
	g.listen_handle = l.handle;
	EXPECT_EQ(-1, ioctl(self->fd, _IOC(_IOC_READ | _IOC_WRITE, CEPM_IOC_MAGIC,
					   _IOC_NR(CEPM_IOC_GET_REQUEST), first), &g));
	EXPECT_EQ(EAGAIN, errno);
	EXPECT_EQ(-1, ioctl(self->fd, _IOC(_IOC_READ | _IOC_WRITE, CEPM_IOC_MAGIC,
					   _IOC_NR(CEPM_IOC_GET_REQUEST), first - 1), &g));
	EXPECT_EQ(ENOTTY, errno);

	send_req("0x0000000001064e81", 0xc1a300c0);
	ASSERT_EQ(1, wait_pending(self->fd, l.handle, 1));
	g.local_psn = 0xa5a5a5a5;
	g.reserved = 0x5a5a5a5a;
	ASSERT_EQ(0, ioctl(self->fd, _IOC(_IOC_READ | _IOC_WRITE, CEPM_IOC_MAGIC,
					  _IOC_NR(CEPM_IOC_GET_REQUEST), first), &g))
		TH_LOG("%s", strerror(errno));
	EXPECT_GT(g.handle, 0);
	EXPECT_EQ(0xa5a5a5a5, g.local_psn);
	EXPECT_EQ(0x5a5a5a5a, g.reserved);
}

/*
 * ABI 8: GET_REQUEST grew by the REQ's path, which an ABI 7 caller (224 bytes) does without;
 * the path is the forged REQ's turned round (its sender's GID, this port's own, as the
 * destination; its MTU, hop limit and P_Key; its local ACK timeout 14 less one), and the
 * REQ's flow control bit and the REP's parameters may not be set on input.
 */
TEST_F(cepm, conn_params_grew_in_abi_8)
{
	const size_t abi7 = offsetof(struct cepm_get_request, path);
	struct cepm_listen l = { .service_id = 0x1064e82 };
	struct cepm_private_data p = { 0 };
	struct cepm_accept a = { .local_qpn = 0x1234, .flow_control = 2 };
	struct cepm_get_request g;
	__u8 own_gid[16] = { [10] = 0xff, [11] = 0xff, 10, 77, 0, 1 };

	ASSERT_EQ(224, abi7);
	ASSERT_EQ(240, offsetof(struct cepm_private_data, peer));
	l.handle = create_cep(self->fd, 0);
	ASSERT_GT(l.handle, 0);
	ASSERT_EQ(0, ioctl(self->fd, CEPM_IOC_LISTEN, &l));
	send_req("0x0000000001064e82", 0xc1a300c1);
	send_req("0x0000000001064e82", 0xc1a300c2);
	ASSERT_EQ(2, wait_pending(self->fd, l.handle, 2));

	memset(&g, 0, sizeof(g));
	g.listen_handle = l.handle;
	ASSERT_EQ(0, ioctl(self->fd, _IOC(_IOC_READ | _IOC_WRITE, CEPM_IOC_MAGIC,
					  _IOC_NR(CEPM_IOC_GET_REQUEST), abi7), &g))
		TH_LOG("%s", strerror(errno));
	EXPECT_GT(g.handle, 0);
	EXPECT_EQ(0, g.path.mtu);

	memset(&g, 0, sizeof(g));
	g.listen_handle = l.handle;
	ASSERT_EQ(0, ioctl(self->fd, CEPM_IOC_GET_REQUEST, &g)) TH_LOG("%s", strerror(errno));
	EXPECT_EQ(0, memcmp(own_gid, g.path.dgid, sizeof(own_gid)));
	EXPECT_EQ(3, g.path.mtu);
	EXPECT_EQ(64, g.path.hop_limit);
	EXPECT_EQ(0xffff, g.path.pkey);
	EXPECT_EQ(13, g.path.packet_life_time);
	EXPECT_EQ(0, g.req.flow_control);

	/* The REQ's parameters, as it carried them (the forged one's retry counts are 7). */
	p.handle = g.handle;
	ASSERT_EQ(0, ioctl(self->fd, CEPM_IOC_GET_PRIVATE_DATA, &p)) TH_LOG("%s", strerror(errno));
	EXPECT_EQ(7, p.peer.retry_count);
	EXPECT_EQ(7, p.peer.rnr_retry_count);
	p.peer.srq = 1;
	EXPECT_EQ(-1, ioctl(self->fd, CEPM_IOC_GET_PRIVATE_DATA, &p));
	EXPECT_EQ(EINVAL, errno);

	/* A flow control bit that is not a bit. */
	a.handle = g.handle;
	EXPECT_EQ(-1, ioctl(self->fd, CEPM_IOC_PREPARE_REP, &a));
	EXPECT_EQ(EINVAL, errno);
}

/*
 * CONNECT, PREPARE_REP and GET_PRIVATE_DATA grew by their ECE fields in ABI 7: their first
 * versions, which end before them, are still served; a vendor ID over 24 bits is EINVAL, and
 * so are ECE output fields that are not 0 on input.
 */
TEST_F(cepm, ece_fields_grew_in_abi_7)
{
	const size_t connect_first = offsetof(struct cepm_connect, ece_vendor_id);
	const size_t accept_first = offsetof(struct cepm_accept, ece_vendor_id);
	const size_t pdata_first = offsetof(struct cepm_private_data, ece_vendor_id);
	struct cepm_connect c = {
		.service_id = 0x1064e7b,
		.port_num = 1,
		.path = good_path(),
		.local_qpn = 0x1234,
		.remote_cm_response_timeout = 20,
		.local_cm_response_timeout = 20,
		.max_cm_retries = 15,
		.ece_vendor_id = 0x1000000,
	};
	struct cepm_accept a = { .local_qpn = 0x1234 };
	struct cepm_private_data p = { 0 };
	struct cepm_destroy d = { 0 };

	ASSERT_EQ(232, connect_first);
	ASSERT_EQ(240, sizeof(c));
	ASSERT_EQ(216, accept_first);
	ASSERT_EQ(224, sizeof(a));
	ASSERT_EQ(232, pdata_first);
	ASSERT_EQ(248, sizeof(p));
	strcpy(c.dev_name, "rxe0");
	d.handle = c.handle = create_cep(self->fd, 0);
	ASSERT_GT(c.handle, 0);
	EXPECT_EQ(-1, ioctl(self->fd, CEPM_IOC_CONNECT, &c));
	EXPECT_EQ(EINVAL, errno);
	p.handle = c.handle;
	p.ece_attr_mod = 1;
	EXPECT_EQ(-1, ioctl(self->fd, CEPM_IOC_GET_PRIVATE_DATA, &p));
	EXPECT_EQ(EINVAL, errno);
	p.ece_attr_mod = 0;
	EXPECT_EQ(0, ioctl(self->fd, CEPM_IOC_GET_PRIVATE_DATA, &p)) TH_LOG("%s", strerror(errno));
	EXPECT_EQ(0, ioctl(self->fd, _IOC(_IOC_READ | _IOC_WRITE, CEPM_IOC_MAGIC,
					  _IOC_NR(CEPM_IOC_GET_PRIVATE_DATA), pdata_first), &p))
		TH_LOG("%s", strerror(errno));
	c.ece_vendor_id = 0xffffff;
	c.ece_attr_mod = 0xffffffff;
	EXPECT_EQ(0, ioctl(self->fd, _IOC(_IOC_WRITE, CEPM_IOC_MAGIC, _IOC_NR(CEPM_IOC_CONNECT),
					  connect_first), &c))
		TH_LOG("CONNECT, first version: %s", strerror(errno));
	/* Served, and refused for the state (no claimed REQ), not taken for another call. */
	a.handle = c.handle;
	EXPECT_EQ(-1, ioctl(self->fd, _IOC(_IOC_WRITE, CEPM_IOC_MAGIC,
					   _IOC_NR(CEPM_IOC_PREPARE_REP), accept_first), &a));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, ioctl(self->fd, _IOC(_IOC_WRITE, CEPM_IOC_MAGIC,
					   _IOC_NR(CEPM_IOC_PREPARE_REP), accept_first - 1), &a));
	EXPECT_EQ(ENOTTY, errno);
	ASSERT_EQ(0, ioctl(self->fd, CEPM_IOC_DESTROY, &d));
}

/* POST_EVENT on fd for handle: 0, or the errno. */
static int post_event(int fd, int handle, __u32 event, __u32 status)
{
	struct cepm_post_event p = { .handle = handle, .event = event, .status = status };

	return ioctl(fd, CEPM_IOC_POST_EVENT, &p) ? errno : 0;
}

/* MIGRATE of from's handle to to: the new handle, or -errno. */
static int migrate(int to, int from, int handle, __u32 *events_reported)
{
	struct cepm_migrate m = { .fd = from, .handle = handle };

	if (ioctl(to, CEPM_IOC_MIGRATE, &m))
		return -errno;
	if (events_reported)
		*events_reported = m.events_reported;
	return m.new_handle;
}

/* A userspace event is read like the module's, with the CEP's handle and context. */
TEST_F(cepm, post_event_is_read_and_polled)
{
	struct pollfd pfd = { .fd = self->fd, .events = POLLIN };
	struct cepm_destroy d = { 0 };
	struct cepm_event ev;
	int h = create_cep(self->fd, 0xc0ffee);

	ASSERT_GT(h, 0);
	ASSERT_EQ(0, fcntl(self->fd, F_SETFL, fcntl(self->fd, F_GETFL) | O_NONBLOCK));
	EXPECT_EQ(0, poll(&pfd, 1, 0));
	ASSERT_EQ(0, post_event(self->fd, h, CEPM_EVENT_USER_FIRST + 3, 113));
	ASSERT_EQ(1, poll(&pfd, 1, 0));
	EXPECT_EQ(POLLIN, pfd.revents & POLLIN);
	ASSERT_EQ(sizeof(ev), read(self->fd, &ev, sizeof(ev)));
	EXPECT_EQ(CEPM_EVENT_USER_FIRST + 3, ev.event);
	EXPECT_EQ(h, ev.handle);
	EXPECT_EQ(0xc0ffee, ev.user_context);
	EXPECT_EQ(113, ev.status);
	EXPECT_EQ(0, ev.reserved);
	/* A posted event goes with its CEP, and counts as reported once read. */
	ASSERT_EQ(0, post_event(self->fd, h, CEPM_EVENT_USER_LAST, 0));
	d.handle = h;
	ASSERT_EQ(0, ioctl(self->fd, CEPM_IOC_DESTROY, &d));
	EXPECT_EQ(1, d.events_reported);
	EXPECT_EQ(-1, read(self->fd, &ev, sizeof(ev)));
	EXPECT_EQ(EAGAIN, errno);
}

/*
 * A tracefs kprobe on synchronize_rcu that counts this process's calls: grace_probe_start
 * is -1 if tracing is not there (not root, no tracefs, no kprobe events).
 */
#define TRACEFS "/sys/kernel/tracing/"
#define GRACE_PROBE "cepm_abi_grace_period"

static int write_tracefs(const char *file, const char *text, int flags)
{
	char path[128];
	int fd, ok;

	snprintf(path, sizeof(path), TRACEFS "%s", file);
	fd = open(path, O_WRONLY | flags);
	if (fd < 0)
		return -1;
	ok = write(fd, text, strlen(text)) == (ssize_t)strlen(text);
	close(fd);
	return ok ? 0 : -1;
}

static int grace_probe_start(void)
{
	char pid[32];

	write_tracefs("kprobe_events", "-:" GRACE_PROBE "\n", O_APPEND);
	snprintf(pid, sizeof(pid), "%d\n", getpid());
	if (write_tracefs("kprobe_events", "p:" GRACE_PROBE " synchronize_rcu\n", O_APPEND) ||
	    write_tracefs("set_event_pid", pid, O_TRUNC) || write_tracefs("trace", "", O_TRUNC) ||
	    write_tracefs("events/kprobes/" GRACE_PROBE "/enable", "1\n", 0))
		return -1;
	return 0;
}

/* Stops the probe and gives how often it fired. */
static int grace_probe_stop(void)
{
	char line[512];
	int hits = 0;
	FILE *trace;

	write_tracefs("events/kprobes/" GRACE_PROBE "/enable", "0\n", 0);
	trace = fopen(TRACEFS "trace", "r");
	if (trace) {
		while (fgets(line, sizeof(line), trace))
			hits += strstr(line, GRACE_PROBE ":") != NULL;
		fclose(trace);
	}
	write_tracefs("set_event_pid", "", O_TRUNC);
	write_tracefs("kprobe_events", "-:" GRACE_PROBE "\n", O_APPEND);
	return hits;
}

static void note_signal(int sig)
{
	(void)sig;
}

/*
 * A read of fd that blocks until a signal ends it: its errno. A child signals every 50 ms,
 * so the read is interrupted however late it starts waiting.
 */
static int read_interrupted(int fd)
{
	struct sigaction sa = { .sa_handler = note_signal }, old;
	pid_t parent = getpid(), child;
	struct cepm_event ev;
	int err;

	sigaction(SIGUSR1, &sa, &old);
	child = fork();
	if (child == 0) {
		for (;;) {
			usleep(50000);
			kill(parent, SIGUSR1);
		}
	}
	err = read(fd, &ev, sizeof(ev)) < 0 ? errno : 0;
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	sigaction(SIGUSR1, &old, NULL);
	return err;
}

/* An open /dev/cepm, non-blocking; polled once if `polled` (nothing is queued: 0). */
static int open_for_close(struct __test_metadata *_metadata, bool polled)
{
	struct pollfd pfd = { .events = POLLIN };
	int fd = open("/dev/cepm", O_RDWR | O_NONBLOCK);

	EXPECT_LE(0, fd) TH_LOG("open /dev/cepm: %s", strerror(errno));
	if (fd >= 0 && polled) {
		pfd.fd = fd;
		EXPECT_EQ(0, poll(&pfd, 1, 0));
	}
	return fd;
}

/*
 * A close frees the file without waiting for an RCU grace period (many milliseconds, and
 * seconds on a loaded machine), whether or not the file was polled, waited on in epoll or
 * read with a wait: the wait queue goes with kfree_rcu.  EXPECT only between start and
 * stop, so that the probe never outlives the test.
 */
TEST(close_waits_for_no_grace_period)
{
	struct epoll_event ee = { .events = EPOLLIN };
	int fd, ep;

	if (grace_probe_start())
		SKIP(return, "no kprobe on synchronize_rcu (needs root and tracefs)");
	/* Never polled. */
	fd = open_for_close(_metadata, false);
	close(fd);
	/* Polled. */
	fd = open_for_close(_metadata, true);
	close(fd);
	/* In an epoll set, closed before the set. */
	fd = open_for_close(_metadata, true);
	ep = epoll_create1(0);
	EXPECT_LE(0, ep);
	EXPECT_EQ(0, epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ee));
	EXPECT_EQ(0, epoll_wait(ep, &ee, 1, 0));
	close(fd);
	close(ep);
	/* After a blocking read, which waits on the same queue until a signal ends it. */
	fd = open_for_close(_metadata, true);
	EXPECT_EQ(0, fcntl(fd, F_SETFL, 0));
	EXPECT_EQ(EINTR, read_interrupted(fd));
	close(fd);
	EXPECT_EQ(0, grace_probe_stop()) TH_LOG("closes of /dev/cepm waited for RCU");
}

TEST_F(cepm, post_event_arguments)
{
	struct cepm_post_event p = { .event = CEPM_EVENT_USER_FIRST };
	int other = open("/dev/cepm", O_RDWR);
	int h = create_cep(self->fd, 0);

	ASSERT_GE(other, 0);
	ASSERT_GT(h, 0);
	/* The module's own codes, and codes past the range, are not the caller's to post. */
	EXPECT_EQ(EINVAL, post_event(self->fd, h, CEPM_EVENT_REQ_RECEIVED, 0));
	EXPECT_EQ(EINVAL, post_event(self->fd, h, CEPM_EVENT_USER_FIRST - 1, 0));
	EXPECT_EQ(EINVAL, post_event(self->fd, h, CEPM_EVENT_USER_LAST + 1, 0));
	EXPECT_EQ(EINVAL, post_event(self->fd, h, 0, 0));
	/* Only for a CEP of this file. */
	EXPECT_EQ(EINVAL, post_event(self->fd, h + 1000, CEPM_EVENT_USER_FIRST, 0));
	EXPECT_EQ(EINVAL, post_event(other, h, CEPM_EVENT_USER_FIRST, 0));
	p.handle = h;
	p.reserved = 1;
	EXPECT_EQ(-1, ioctl(self->fd, CEPM_IOC_POST_EVENT, &p));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, ioctl(self->fd, CEPM_IOC_POST_EVENT, NULL));
	EXPECT_EQ(EFAULT, errno);
	close(other);
}

/*
 * A full queue refuses a posted event with ENOSPC: nothing is lost, and read() reports no
 * overflow.  Event_queue.sh runs this with event_queue_max=16; at the default, 4096 posts.
 */
TEST_F(cepm, post_event_full_queue_is_enospc)
{
	const int max = event_queue_max();
	struct cepm_event ev;
	int h = create_cep(self->fd, 0), posted = 0, read_ok = 0;

	ASSERT_GT(h, 0);
	while (posted <= max && post_event(self->fd, h, CEPM_EVENT_USER_FIRST, posted) == 0)
		posted++;
	/* The file's bound: the user's share (max_events_per_user, 262144) is far larger. */
	EXPECT_EQ(max, posted);
	EXPECT_EQ(ENOSPC, post_event(self->fd, h, CEPM_EVENT_USER_FIRST, 0));
	ASSERT_EQ(0, fcntl(self->fd, F_SETFL, fcntl(self->fd, F_GETFL) | O_NONBLOCK));
	while (read(self->fd, &ev, sizeof(ev)) == sizeof(ev)) {
		EXPECT_EQ(read_ok, ev.status);
		read_ok++;
	}
	EXPECT_EQ(EAGAIN, errno);
	EXPECT_EQ(posted, read_ok);
	EXPECT_EQ(0, post_event(self->fd, h, CEPM_EVENT_USER_FIRST, 0));
}

TEST_F(cepm, migrate_arguments)
{
	struct cepm_migrate m = { 0 };
	struct cepm_monitor mon = { 0 };
	struct cepm_cep_info info = { 0 };
	int other = open("/dev/cepm", O_RDWR), monitor = open("/dev/cepm", O_RDWR);
	int devnull = open("/dev/null", O_RDWR);
	int h = create_cep(self->fd, 0);
	__u32 reported = 7;

	ASSERT_GE(other, 0);
	ASSERT_GE(monitor, 0);
	ASSERT_GE(devnull, 0);
	ASSERT_GT(h, 0);
	EXPECT_EQ(-EBADF, migrate(other, -1, h, NULL));
	EXPECT_EQ(-EBADF, migrate(other, 1000, h, NULL));
	EXPECT_EQ(-EINVAL, migrate(other, devnull, h, NULL));
	EXPECT_EQ(-EINVAL, migrate(other, self->fd, h + 1000, NULL));
	/* A handle names a CEP in its own file only. */
	EXPECT_EQ(-EINVAL, migrate(self->fd, other, h, NULL));
	m.fd = self->fd;
	m.handle = h;
	m.reserved[1] = 1;
	EXPECT_EQ(-1, ioctl(other, CEPM_IOC_MIGRATE, &m));
	EXPECT_EQ(EINVAL, errno);
	ASSERT_EQ(0, ioctl(monitor, CEPM_IOC_MONITOR, &mon));
	EXPECT_EQ(-EBUSY, migrate(monitor, self->fd, h, NULL));
	EXPECT_EQ(-EINVAL, migrate(other, monitor, 1, NULL));
	/* To its own file: nothing moves. */
	EXPECT_EQ(h, migrate(self->fd, self->fd, h, &reported));
	EXPECT_EQ(0, reported);
	/* Every failure above left it where it was. */
	info.handle = h;
	EXPECT_EQ(0, ioctl(self->fd, CEPM_IOC_QUERY_CEP, &info));
	close(devnull);
	close(monitor);
	close(other);
}

/*
 * A listener moves with its unread events, in order, and what follows goes to the new file:
 * two REQs (cepmctl send-mad) and a posted event wait on the old file, one REQ_RECEIVED is
 * read there; after MIGRATE the old file has nothing and knows the handle no more, the new
 * one reads the rest under the new handle and context, claims both REQs, hears of a third
 * REQ, and DESTROY counts every event read in either file.
 */
TEST_F_TIMEOUT(cepm, migrate_moves_a_listener_and_its_events, 120)
{
	struct cepm_listen l = { .service_id = 0x1064e7f };
	struct cepm_get_request old_claim = { 0 };
	struct cepm_destroy d = { 0 };
	struct cepm_event ev;
	int to = open("/dev/cepm", O_RDWR | O_NONBLOCK), h;
	__u32 reported = 0;

	ASSERT_GE(to, 0);
	ASSERT_NE(NULL, getenv("CEPM_ROOT"));
	l.handle = create_cep(self->fd, 0x11);
	ASSERT_GT(l.handle, 0);
	ASSERT_EQ(0, ioctl(self->fd, CEPM_IOC_LISTEN, &l));
	ASSERT_EQ(0, fcntl(self->fd, F_SETFL, fcntl(self->fd, F_GETFL) | O_NONBLOCK));
	send_req("0x0000000001064e7f", 0xc1a200a0);
	send_req("0x0000000001064e7f", 0xc1a200a1);
	ASSERT_EQ(2, wait_pending(self->fd, l.handle, 2));
	ASSERT_EQ(0, post_event(self->fd, l.handle, CEPM_EVENT_USER_FIRST, 5));
	ASSERT_EQ(sizeof(ev), read(self->fd, &ev, sizeof(ev)));
	EXPECT_EQ(CEPM_EVENT_REQ_RECEIVED, ev.event);

	h = migrate(to, self->fd, l.handle, &reported);
	ASSERT_GT(h, 0) TH_LOG("MIGRATE: %s", strerror(-h));
	EXPECT_EQ(1, reported);
	EXPECT_EQ(-1, read(self->fd, &ev, sizeof(ev)));
	EXPECT_EQ(EAGAIN, errno);
	old_claim.listen_handle = l.handle;
	EXPECT_EQ(-1, ioctl(self->fd, CEPM_IOC_GET_REQUEST, &old_claim));
	EXPECT_EQ(EINVAL, errno);
	ASSERT_EQ(sizeof(ev), read(to, &ev, sizeof(ev)));
	EXPECT_EQ(CEPM_EVENT_REQ_RECEIVED, ev.event);
	EXPECT_EQ(h, ev.handle);
	EXPECT_EQ(0x11, ev.user_context);
	ASSERT_EQ(sizeof(ev), read(to, &ev, sizeof(ev)));
	EXPECT_EQ(CEPM_EVENT_USER_FIRST, ev.event);
	EXPECT_EQ(5, ev.status);
	EXPECT_EQ(-1, read(to, &ev, sizeof(ev)));
	EXPECT_EQ(EAGAIN, errno);
	EXPECT_EQ(2, pending_requests(to, h));
	for (int i = 0; i < 2; i++) {
		struct cepm_get_request g = { .listen_handle = h };
		struct cepm_reject r = { .reason = 28 };

		ASSERT_EQ(0, ioctl(to, CEPM_IOC_GET_REQUEST, &g)) TH_LOG("%s", strerror(errno));
		r.handle = g.handle;
		EXPECT_EQ(0, ioctl(to, CEPM_IOC_REJECT, &r));
	}
	send_req("0x0000000001064e7f", 0xc1a200a2);
	wait_pending(to, h, 1);
	ASSERT_EQ(sizeof(ev), read(to, &ev, sizeof(ev)));
	EXPECT_EQ(CEPM_EVENT_REQ_RECEIVED, ev.event);
	EXPECT_EQ(h, ev.handle);
	EXPECT_EQ(-1, read(self->fd, &ev, sizeof(ev)));
	EXPECT_EQ(EAGAIN, errno);
	/* The old handle destroys nothing now. */
	d.handle = l.handle;
	EXPECT_EQ(-1, ioctl(self->fd, CEPM_IOC_DESTROY, &d));
	EXPECT_EQ(EINVAL, errno);
	d.handle = h;
	ASSERT_EQ(0, ioctl(to, CEPM_IOC_DESTROY, &d));
	EXPECT_EQ(4, d.events_reported);
	close(to);
}

#define CEPM_DEBUGFS "/sys/kernel/debug/cepm/"

/* A debugfs number of cepm's, or -1. */
static long debugfs_read(const char *name)
{
	char path[128], buf[32] = "";
	int fd, n;

	snprintf(path, sizeof(path), CEPM_DEBUGFS "%s", name);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	return n > 0 ? strtol(buf, NULL, 0) : -1;
}

static int debugfs_write(const char *name, long value)
{
	char path[128], buf[32];
	int fd, n, len;

	snprintf(path, sizeof(path), CEPM_DEBUGFS "%s", name);
	len = snprintf(buf, sizeof(buf), "%ld\n", value);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -errno;
	n = write(fd, buf, len);
	close(fd);
	return n == len ? 0 : -EIO;
}

/*
 * A LISTEN that has found its CEP by handle when a MIGRATE moves the CEP to another file, and
 * locks it only afterwards, must fail (the handle no longer names it) and leave nothing behind:
 * the CEP idle in its new file and the service ID free. debugfs's
 * listen_delay_ms holds LISTEN in that window, and listen_delayed says when one is in it.
 */
TEST_F_TIMEOUT(cepm, listen_racing_migrate_fails_and_leaves_nothing, 60)
{
	struct cepm_listen l = { .service_id = 0x0000000001060000ULL | 50007 };
	struct cepm_bind b = { .port_space = CEPM_PS_TCP, .port = 50007, .family = 4 };
	struct cepm_destroy d = { 0 };
	struct cepm_cep_info info = { 0 };
	int other = open("/dev/cepm", O_RDWR), h = create_cep(self->fd, 3), moved, status = 0;
	long entered;
	pid_t child;
	time_t deadline;

	if (debugfs_read("listen_delayed") < 0)
		SKIP(return, "no " CEPM_DEBUGFS "listen_delayed (debugfs not mounted?)");
	ASSERT_GE(other, 0);
	ASSERT_GT(h, 0);
	entered = debugfs_read("listen_delayed");
	ASSERT_EQ(0, debugfs_write("listen_delay_ms", 3000));
	l.handle = h;
	child = fork();
	if (child < 0)
		debugfs_write("listen_delay_ms", 0);
	ASSERT_GE(child, 0);
	if (child == 0)
		_exit(ioctl(self->fd, CEPM_IOC_LISTEN, &l) ? errno : 0);
	/* Until the child's LISTEN is in the window (the sleep it entered has begun). */
	deadline = time(NULL) + 30;
	while (debugfs_read("listen_delayed") == entered && time(NULL) < deadline)
		usleep(1000);
	debugfs_write("listen_delay_ms", 0);
	ASSERT_NE(entered, debugfs_read("listen_delayed")) TH_LOG("LISTEN never reached the window");
	moved = migrate(other, self->fd, h, NULL);
	ASSERT_GT(moved, 0) TH_LOG("MIGRATE during the LISTEN: %s", strerror(-moved));
	ASSERT_EQ(child, waitpid(child, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(EINVAL, WEXITSTATUS(status)) TH_LOG("the raced LISTEN returned %d", WEXITSTATUS(status));
	info.handle = moved;
	ASSERT_EQ(0, ioctl(other, CEPM_IOC_QUERY_CEP, &info));
	EXPECT_EQ(CEPM_STATE_IDLE, info.state);
	/* Nor its port: the raced LISTEN gave it back, wherever the CEP went. */
	b.handle = create_cep(self->fd, 0);
	EXPECT_EQ(0, ioctl(self->fd, CEPM_IOC_BIND, &b)) TH_LOG("BIND: %s", strerror(errno));
	d.handle = b.handle;
	EXPECT_EQ(0, ioctl(self->fd, CEPM_IOC_DESTROY, &d));
	/* Nothing holds the service ID, and the new file may listen on it. */
	l.handle = moved;
	EXPECT_EQ(0, ioctl(other, CEPM_IOC_LISTEN, &l)) TH_LOG("LISTEN after the move: %s", strerror(errno));
	close(other);
}

TEST_HARNESS_MAIN

/* BIND of @handle on @fd to 10.99.0.@host:@port (@host 0: the wildcard), TCP: 0 or the errno. */
static int bind_cep(int fd, int handle, int host, __u16 port, __u8 flags, __u16 *held)
{
	struct cepm_bind b = { .handle = handle, .port_space = CEPM_PS_TCP, .port = port,
			       .family = 4, .flags = flags };

	if (host) {
		b.addr[12] = 10;
		b.addr[13] = 99;
		b.addr[15] = host;
	}
	if (ioctl(fd, CEPM_IOC_BIND, &b))
		return errno;
	if (held)
		*held = b.port;
	return 0;
}

/* What BIND refuses before it looks at the port table. */
TEST_F(cepm, bind_arguments)
{
	struct cepm_bind b = { .port_space = CEPM_PS_TCP, .port = 47001, .family = 4 };
	int h = create_cep(self->fd, 0);

	ASSERT_GT(h, 0);
	b.handle = h;
	b.reserved = 1;
	EXPECT_EQ(-1, ioctl(self->fd, CEPM_IOC_BIND, &b));
	EXPECT_EQ(EINVAL, errno);
	b.reserved = 0;
	b.reserved2[9] = 1;
	EXPECT_EQ(-1, ioctl(self->fd, CEPM_IOC_BIND, &b));
	EXPECT_EQ(EINVAL, errno);
	b.reserved2[9] = 0;
	b.flags = 0x80;
	EXPECT_EQ(-1, ioctl(self->fd, CEPM_IOC_BIND, &b));
	EXPECT_EQ(EINVAL, errno);
	b.flags = 0;
	b.family = 5;
	EXPECT_EQ(-1, ioctl(self->fd, CEPM_IOC_BIND, &b));
	EXPECT_EQ(EINVAL, errno);
	b.family = 4;
	b.port_space = 0x0107;
	EXPECT_EQ(-1, ioctl(self->fd, CEPM_IOC_BIND, &b));
	EXPECT_EQ(EINVAL, errno);
	b.port_space = CEPM_PS_TCP;
	b.handle = h + 1000;
	EXPECT_EQ(-1, ioctl(self->fd, CEPM_IOC_BIND, &b));
	EXPECT_EQ(EINVAL, errno);
	/* An IPv4 address in the last four bytes only. */
	b.handle = h;
	b.addr[0] = 1;
	EXPECT_EQ(-1, ioctl(self->fd, CEPM_IOC_BIND, &b));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, ioctl(self->fd, CEPM_IOC_BIND, NULL));
	EXPECT_EQ(EFAULT, errno);
}

/*
 * rdma_cm's rules (cma.c, cma_check_port): two equal addresses are EADDRINUSE, a wildcard
 * next to an address EADDRNOTAVAIL, both REUSEADDR share; port 0 chooses; the port is free
 * again once its CEP goes, by DESTROY or by close.
 */
TEST_F(cepm, bind_reserves_the_port)
{
	int a = create_cep(self->fd, 0), b = create_cep(self->fd, 0), c = create_cep(self->fd, 0);
	int other = open("/dev/cepm", O_RDWR), o;
	struct cepm_destroy d = { 0 };
	__u16 held = 0, held2 = 0;

	ASSERT_GT(c, 0);
	ASSERT_GE(other, 0);
	EXPECT_EQ(0, bind_cep(self->fd, a, 1, 0, 0, &held));
	EXPECT_NE(0, held);
	EXPECT_EQ(0, bind_cep(self->fd, b, 1, 0, 0, &held2));
	EXPECT_NE(held, held2);
	/* A bound CEP takes no other port, address or space; REUSEADDR may be added. */
	EXPECT_EQ(EINVAL, bind_cep(self->fd, a, 1, held2, 0, NULL));
	EXPECT_EQ(EINVAL, bind_cep(self->fd, a, 2, held, 0, NULL));
	EXPECT_EQ(0, bind_cep(self->fd, a, 1, held, CEPM_BIND_REUSEADDR, NULL));
	/* Another CEP on a's port: the same address, the wildcard, another address. */
	EXPECT_EQ(EADDRINUSE, bind_cep(self->fd, c, 1, held, 0, NULL));
	EXPECT_EQ(EADDRNOTAVAIL, bind_cep(self->fd, c, 0, held, 0, NULL));
	EXPECT_EQ(0, bind_cep(self->fd, c, 2, held, 0, NULL));
	/* Freed by DESTROY. */
	d.handle = a;
	EXPECT_EQ(0, ioctl(self->fd, CEPM_IOC_DESTROY, &d));
	o = create_cep(other, 0);
	ASSERT_GT(o, 0);
	EXPECT_EQ(0, bind_cep(other, o, 1, held, 0, NULL));
	/* Freed by close. */
	close(other);
	a = create_cep(self->fd, 0);
	EXPECT_EQ(0, bind_cep(self->fd, a, 1, held, 0, NULL));
}

/* Both REUSEADDR share one address; LISTEN rechecks without it (cma.c, rdma_listen). */
TEST_F(cepm, bind_reuseaddr_and_listen)
{
	int a = create_cep(self->fd, 0), b = create_cep(self->fd, 0), c = create_cep(self->fd, 0);
	/* The listen's scope is the bind's: 10.99.0.1. */
	struct cepm_listen l = { .handle = a, .service_id = (0x0106ULL << 16) | 47002,
				 .scope = CEPM_LISTEN_IPV4, .addr = { [12] = 10, [13] = 99, [15] = 1 } };
	struct cepm_destroy d = { .handle = b };

	ASSERT_GT(c, 0);
	EXPECT_EQ(0, bind_cep(self->fd, a, 1, 47002, CEPM_BIND_REUSEADDR, NULL));
	EXPECT_EQ(0, bind_cep(self->fd, b, 1, 47002, CEPM_BIND_REUSEADDR, NULL));
	EXPECT_EQ(-1, ioctl(self->fd, CEPM_IOC_LISTEN, &l));
	EXPECT_EQ(EADDRINUSE, errno);
	EXPECT_EQ(0, ioctl(self->fd, CEPM_IOC_DESTROY, &d));
	/* Only the service ID of the binding. */
	l.service_id++;
	EXPECT_EQ(-1, ioctl(self->fd, CEPM_IOC_LISTEN, &l));
	EXPECT_EQ(EINVAL, errno);
	l.service_id--;
	EXPECT_EQ(0, ioctl(self->fd, CEPM_IOC_LISTEN, &l));
	/* The listener's REUSEADDR is gone: no one shares its address any more. */
	EXPECT_EQ(EADDRINUSE, bind_cep(self->fd, c, 1, 47002, CEPM_BIND_REUSEADDR, NULL));
	/* Nor can a listener add it again (rdma_set_reuseaddr). */
	EXPECT_EQ(EINVAL, bind_cep(self->fd, a, 1, 47002, CEPM_BIND_REUSEADDR, NULL));
}

/*
 * MIGRATE moves a bound CEP with its port: the port stays held after the file it came from
 * closes, and is free once the CEP is destroyed in its new file.
 */
TEST_F(cepm, migrate_moves_the_port)
{
	int from = open("/dev/cepm", O_RDWR), a, moved, c = create_cep(self->fd, 0);
	struct cepm_destroy d = { 0 };

	ASSERT_GE(from, 0);
	ASSERT_GT(c, 0);
	a = create_cep(from, 0);
	ASSERT_GT(a, 0);
	ASSERT_EQ(0, bind_cep(from, a, 1, 47004, 0, NULL));
	moved = migrate(self->fd, from, a, NULL);
	ASSERT_GT(moved, 0);
	close(from);
	EXPECT_EQ(EADDRINUSE, bind_cep(self->fd, c, 1, 47004, 0, NULL));
	/* Still bound where it is now: only REUSEADDR may be added. */
	EXPECT_EQ(EINVAL, bind_cep(self->fd, moved, 1, 47005, 0, NULL));
	d.handle = moved;
	EXPECT_EQ(0, ioctl(self->fd, CEPM_IOC_DESTROY, &d));
	EXPECT_EQ(0, bind_cep(self->fd, c, 1, 47004, 0, NULL));
}

/* BIND of @handle to 0.0.0.0:0 in the UDP space, toward 10.99.0.@dst:80 (0: no destination). */
static int bind_any_port(int fd, int handle, int dst, __u16 *held)
{
	struct cepm_bind b = { .handle = handle, .port_space = CEPM_PS_UDP, .family = 4 };

	if (dst) {
		b.dst_addr[12] = 10;
		b.dst_addr[13] = 99;
		b.dst_addr[15] = dst;
		b.dst_port = 80;
	}
	if (ioctl(fd, CEPM_IOC_BIND, &b))
		return errno;
	*held = b.port;
	return 0;
}

/*
 * Port 0 in an ephemeral range of two ports (cma.c, cma_alloc_any_port): each choice skips
 * the port chosen last; a port in use is shared by active CEPs with other destinations
 * (cma_port_is_unique), never by two toward one destination, nor by passive ones.
 */
TEST_F(cepm, bind_port_zero_shares_by_destination)
{
	const char *range = "/proc/sys/net/ipv4/ip_local_port_range";
	char saved[64] = "";
	int h[6], i, fd = open(range, O_RDWR);
	__u16 port[6] = { 0 };
	ssize_t n;

	ASSERT_GE(fd, 0);
	n = read(fd, saved, sizeof(saved) - 1);
	ASSERT_GT(n, 0);
	ASSERT_EQ(12, pwrite(fd, "47010 47011\n", 12, 0));
	for (i = 0; i < 6; i++)
		h[i] = create_cep(self->fd, 0);
	/* Toward .2, .3, .4 and .2 again, in turn on the two ports. */
	EXPECT_EQ(0, bind_any_port(self->fd, h[0], 2, &port[0]));
	EXPECT_EQ(0, bind_any_port(self->fd, h[1], 3, &port[1]));
	EXPECT_EQ(0, bind_any_port(self->fd, h[2], 4, &port[2]));
	EXPECT_EQ(0, bind_any_port(self->fd, h[3], 2, &port[3]));
	EXPECT_TRUE(port[0] == 47010 || port[0] == 47011);
	EXPECT_EQ(47010 + 47011 - port[0], port[1]);
	EXPECT_EQ(port[0], port[2]);
	EXPECT_EQ(port[1], port[3]);
	/* The next choice skips port[3]; port[0] holds a CEP toward .2 already. */
	EXPECT_EQ(EADDRNOTAVAIL, bind_any_port(self->fd, h[4], 2, &port[4]));
	/* A passive CEP shares with no one. */
	EXPECT_EQ(EADDRNOTAVAIL, bind_any_port(self->fd, h[5], 0, &port[5]));
	for (i = 0; i < 4; i++) {
		struct cepm_destroy d = { .handle = h[i] };

		EXPECT_EQ(0, ioctl(self->fd, CEPM_IOC_DESTROY, &d));
	}
	EXPECT_EQ(0, bind_any_port(self->fd, h[5], 0, &port[5]));
	EXPECT_TRUE(port[5] == 47010 || port[5] == 47011);
	EXPECT_EQ((ssize_t)strlen(saved), pwrite(fd, saved, strlen(saved), 0));
	close(fd);
}

/*
 * A bound CEP listens for the address and AFONLY it holds its port with, as rdma_cm's listen
 * is its bind (cma_match_private_data): no other address, no wider scope, no other AFONLY.
 */
TEST_F(cepm, bound_listen_keeps_the_bind_address)
{
	struct cepm_listen l = { .scope = CEPM_LISTEN_IPV4 };
	int h = create_cep(self->fd, 0), w = create_cep(self->fd, 0);
	__u16 held = 0, wheld = 0;

	ASSERT_GT(w, 0);
	ASSERT_EQ(0, bind_cep(self->fd, h, 1, 0, 0, &held));
	l.handle = h;
	l.service_id = ((__u64)CEPM_PS_TCP << 16) | held;
	l.addr[12] = 10;
	l.addr[13] = 99;
	l.addr[15] = 2;
	EXPECT_EQ(-1, ioctl(self->fd, CEPM_IOC_LISTEN, &l));
	EXPECT_EQ(EINVAL, errno);
	memset(l.addr, 0, sizeof(l.addr));
	EXPECT_EQ(-1, ioctl(self->fd, CEPM_IOC_LISTEN, &l));
	EXPECT_EQ(EINVAL, errno);
	/* Unscoped, it would take the requests of every address on the port. */
	l.scope = CEPM_LISTEN_UNSCOPED;
	EXPECT_EQ(-1, ioctl(self->fd, CEPM_IOC_LISTEN, &l));
	EXPECT_EQ(EINVAL, errno);
	l.scope = CEPM_LISTEN_IPV4;
	l.addr[12] = 10;
	l.addr[13] = 99;
	l.addr[15] = 1;
	EXPECT_EQ(0, ioctl(self->fd, CEPM_IOC_LISTEN, &l));

	/* A wildcard bound without AFONLY listens without it. */
	ASSERT_EQ(0, bind_cep(self->fd, w, 0, 0, 0, &wheld));
	memset(l.addr, 0, sizeof(l.addr));
	l.handle = w;
	l.service_id = ((__u64)CEPM_PS_TCP << 16) | wheld;
	l.flags = CEPM_LISTEN_AFONLY;
	EXPECT_EQ(-1, ioctl(self->fd, CEPM_IOC_LISTEN, &l));
	EXPECT_EQ(EINVAL, errno);
	l.flags = 0;
	EXPECT_EQ(0, ioctl(self->fd, CEPM_IOC_LISTEN, &l));
}

/* LISTEN of @handle on TCP port @port, for 10.99.0.@host (0: IPv4's wildcard; -1: unscoped). */
static int listen_tcp(int fd, int handle, int host, __u16 port)
{
	struct cepm_listen l = { .handle = handle, .service_id = ((__u64)CEPM_PS_TCP << 16) | port,
				 .scope = host < 0 ? CEPM_LISTEN_UNSCOPED : CEPM_LISTEN_IPV4 };

	if (host > 0) {
		l.addr[12] = 10;
		l.addr[13] = 99;
		l.addr[15] = host;
	}
	return ioctl(fd, CEPM_IOC_LISTEN, &l) ? errno : 0;
}

/*
 * A LISTEN on a CEP that never bound holds the port of its rdma_cm service ID, for its
 * address, as rdma_listen binds an unbound ID first: it cannot take a port that another CEP
 * holds by BIND, and a BIND cannot take its port. Listeners on one port are told apart by the
 * listen table as before (SPDK's portals listen on one port with several addresses).
 */
TEST_F(cepm, listen_holds_its_port)
{
	struct cepm_listen l = { .service_id = 0x1000000000047008ULL };
	int other = open("/dev/cepm", O_RDWR), b, r[4], i;
	struct cepm_destroy d = { 0 };

	ASSERT_GE(other, 0);
	b = create_cep(self->fd, 0);
	ASSERT_GT(b, 0);
	for (i = 0; i < 4; i++) {
		r[i] = create_cep(other, 0);
		ASSERT_GT(r[i], 0);
	}
	/* Port 47006 is bound to 10.99.0.1 by another file's CEP. */
	ASSERT_EQ(0, bind_cep(self->fd, b, 1, 47006, 0, NULL));
	EXPECT_EQ(EADDRINUSE, listen_tcp(other, r[0], 1, 47006));
	EXPECT_EQ(EADDRNOTAVAIL, listen_tcp(other, r[0], 0, 47006));
	EXPECT_EQ(EADDRNOTAVAIL, listen_tcp(other, r[0], -1, 47006));
	EXPECT_EQ(0, listen_tcp(other, r[0], 2, 47006));

	/* Port 47007 is listened on by its wildcard and by 10.99.0.3: no BIND takes it. */
	EXPECT_EQ(0, listen_tcp(other, r[1], 0, 47007));
	EXPECT_EQ(0, listen_tcp(other, r[2], 3, 47007));
	b = create_cep(self->fd, 0);
	ASSERT_GT(b, 0);
	EXPECT_EQ(EADDRNOTAVAIL, bind_cep(self->fd, b, 4, 47007, 0, NULL));
	/* A listener shares its port with no REUSEADDR binding. */
	EXPECT_EQ(EADDRNOTAVAIL, bind_cep(self->fd, b, 3, 47007, CEPM_BIND_REUSEADDR, NULL));
	/* Each listener's DESTROY frees its part of the port. */
	d.handle = r[1];
	EXPECT_EQ(0, ioctl(other, CEPM_IOC_DESTROY, &d));
	EXPECT_EQ(EADDRINUSE, bind_cep(self->fd, b, 3, 47007, 0, NULL));
	EXPECT_EQ(0, bind_cep(self->fd, b, 4, 47007, 0, NULL));

	/* A LISTEN that fails (the listen table's EBUSY) gives back the port it took. */
	b = create_cep(other, 0);
	ASSERT_GT(b, 0);
	EXPECT_EQ(EBUSY, listen_tcp(other, b, 2, 47006));
	d.handle = r[0];
	EXPECT_EQ(0, ioctl(other, CEPM_IOC_DESTROY, &d));
	b = create_cep(self->fd, 0);
	ASSERT_GT(b, 0);
	EXPECT_EQ(0, bind_cep(self->fd, b, 2, 47006, 0, NULL));
	d.handle = b;
	EXPECT_EQ(0, ioctl(self->fd, CEPM_IOC_DESTROY, &d));

	/* A service ID outside rdma_cm's port spaces holds no port. */
	l.handle = r[3];
	EXPECT_EQ(0, ioctl(other, CEPM_IOC_LISTEN, &l));
	/* The file's close frees every port its listeners held. */
	close(other);
	b = create_cep(self->fd, 0);
	ASSERT_GT(b, 0);
	EXPECT_EQ(0, bind_cep(self->fd, b, 2, 47006, 0, NULL));
	b = create_cep(self->fd, 0);
	ASSERT_GT(b, 0);
	EXPECT_EQ(0, bind_cep(self->fd, b, 3, 47007, 0, NULL));
}

/*
 * A BIND whose answer cannot be written back (EFAULT) holds nothing: the caller never learns
 * the port, as GET_REQUEST's caller never learns a handle it could not be given.
 */
TEST_F(cepm, bind_that_faults_holds_nothing)
{
	int a = create_cep(self->fd, 0), c = create_cep(self->fd, 0);
	struct cepm_bind *b;

	ASSERT_GT(c, 0);
	b = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, b);
	b->handle = a;
	b->port_space = CEPM_PS_TCP;
	b->port = 47009;
	b->family = 4;
	b->addr[12] = 10;
	b->addr[13] = 99;
	b->addr[15] = 1;
	ASSERT_EQ(0, mprotect(b, 4096, PROT_READ));
	EXPECT_EQ(-1, ioctl(self->fd, CEPM_IOC_BIND, b));
	EXPECT_EQ(EFAULT, errno);
	munmap(b, 4096);
	/* The port is free, and the CEP unbound. */
	EXPECT_EQ(0, bind_cep(self->fd, c, 1, 47009, 0, NULL));
	EXPECT_EQ(0, bind_cep(self->fd, a, 2, 47010, 0, NULL));
}
