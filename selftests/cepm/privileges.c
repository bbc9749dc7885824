// SPDX-License-Identifier: GPL-2.0
/*
 * privileges: the /dev/cepm calls of privileges.sh, one sequence per run.  The script runs it
 * as different users (setpriv) and so checks docs/abi.md's "Privileges and limits"; this
 * program only makes the calls and compares their outcome with what it is told to expect.
 * Through include/uapi/cepm.h only.
 *
 *   privileges listen SERVICE_ID MASK --expect E [--context U64] [--addr A [--afonly]] [--hold]
 *       CREATE, then LISTEN on SERVICE_ID under MASK (passed as given: 0 means exact); with
 *       --addr, scoped by address A (IPv4 or IPv6; 0.0.0.0 or :: is a wildcard).
 *   privileges create N --expect E [--files F] [--wait-go] [--hold] [--send req|sidr]
 *                     [--response-timeout T]
 *       CREATE in F files (default 1) in turn until N CEPs exist or one fails.  --send: then
 *       each CEP sends a REQ (CONNECT) or a SIDR_REQ (SIDR_REQ) to this host's own RoCE v2
 *       IPv4 GID on rxe0, service 0x0000000001063000, with 15 retries 4 s apart (with
 *       --response-timeout, a REQ's remote CM response timeout is T, 0..31, instead of 20); with
 *       --wait-go, the sends (not the creates) wait for the go.
 *   privileges listens N --expect E [--files F] [--base SERVICE_ID] [--hold]
 *       in F files in turn, CREATE and LISTEN exactly on BASE + i for i < N
 *       (default BASE 0x0000000001062000: TCP port 0x2000).
 *   privileges migrate N --expect E [--listening] [--others M] [--drop-to UID]
 *                      [--across-ns PID:N:UID] [--wait-go] [--hold]
 *       file 2 CREATEs N CEPs (with --listening, each LISTENs on BASE + i), file 1 CREATEs
 *       M more and then one (which LISTENs on BASE + N), and MIGRATEs that one to file 2;
 *       the CEP must be in exactly one of the files afterwards: file 2 if it moved, file 1
 *       if not.  --drop-to: run as root; file 2 is opened as root, then the process becomes
 *       UID (setresuid) and opens file 1, so that the move goes to another user's file.
 *       --across-ns: run as root; file 2 is opened with effective uid and gid UID, then the
 *       process enters the user namespace of process PID as its uid and gid N and opens
 *       file 1, so that the move goes between two accounts (of one uid, when N there is UID).
 *       --wait-go: the MIGRATE waits for the go (the script fills the listener's backlog
 *       meanwhile); the requests waiting before and after the move are logged.  --hold: once
 *       it moved, file 1 is closed and file 2 held.
 *   privileges list [--expect-own N] [--expect-other N] [--min-other N] [--want-service ID]
 *       LIST_CEPS: entries with a handle are this file's own, those without are others'.
 *       N may be "any".  Always fails if another file's CEP shows a user_context.
 *   privileges query [--expect-ceps N] [--min-ceps N] [--expect-traffic yes|no]
 *       QUERY: its num_ceps, and whether any managed port's counters show traffic (any
 *       received or sent MAD counted).
 *   privileges monitor [--count N] [--timeout-ms T] [--hold]
 *       MONITOR, then read records until N of them, T ms without one, or (--hold) stdin's
 *       EOF; each record is one "trace SERVICE_ID ..." line.
 *   privileges monitors N --expect E [--hold]
 *       N files (at most 64), each made a monitor in turn until one MONITOR fails.
 *   privileges connect-sgid INDEX --expect E [--device DEV] [--wait-event MS]
 *       CREATE, CONNECT from GID INDEX of DEV (default rxe0) port 1 to this host's own
 *       RoCE v2 IPv4 GID (no one listens on service 0x0000000001063000: a REJ comes back),
 *       then DESTROY.  --wait-event: after a successful CONNECT, an event must arrive within
 *       MS ms (read before the DESTROY).
 *   privileges prepare-reps N --expect E [--wait-go] [--hold] [--mra-timeout T]
 *       a listener on service 0x0000000001063100 in one file, N CEPs of a second file each
 *       CONNECT to it (this host's own RoCE v2 IPv4 GID on rxe0, QPN 0x1000 + i), and the
 *       listener's file claims every REQ; then (with --wait-go, after the go) PREPARE_REP
 *       for each, or with --mra-timeout, PREPARE_MRA with CEPM_MRA_SEND_NOW and service
 *       timeout T (0..31): each REQ's try then waits that long for its answer.
 *       With --claims-after-go, the go comes once every REQ waits in the listener's backlog,
 *       and the calls after it are the N GET_REQUESTs alone (no PREPARE_REP).
 *
 * E is "ok" or an errno name (EACCES, EADDRINUSE, EBUSY, EDQUOT, EINVAL, EMFILE, ...), and
 * applies to the call the command is about: LISTEN, the first CREATE that fails, the first
 * CREATE or LISTEN that fails, CONNECT, MIGRATE, the first MONITOR that fails, the first
 * PREPARE_REP (or, with --claims-after-go, GET_REQUEST) that fails.  Exit status: 0 when the
 * outcome is the expected one, 1 when not, 2 when the run did not get that far (usage, opening
 * /dev/cepm, a call that only sets up): a setup failure never passes for an expected errno.
 *
 * Output: lines starting with "# " are for the log, each outcome among them.  The others are
 * for the script: "ready" (--hold: what the run made is held until stdin reaches EOF, or a
 * signal), "waiting" (--wait-go: the creates start once a line arrives on stdin), "trace".
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "cepm.h"
#include "roce_route.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define MAX_FILES 64
#define MAX_CREATES 100000 /* create --send */
#define ANY (-1L)

/* The outcomes a caller may name in --expect, and how the log names the others. */
static const struct {
	const char *name;
	int err;
} errnos[] = {
	{ "ok", 0 },		  { "EPERM", EPERM },	    { "ENOENT", ENOENT },
	{ "EINTR", EINTR },	  { "EIO", EIO },	    { "E2BIG", E2BIG },
	{ "EBADF", EBADF },	  { "EAGAIN", EAGAIN },	    { "ENOMEM", ENOMEM },
	{ "EACCES", EACCES },	  { "EFAULT", EFAULT },	    { "EBUSY", EBUSY },
	{ "EEXIST", EEXIST },	  { "ENODEV", ENODEV },	    { "EINVAL", EINVAL },
	{ "ENFILE", ENFILE },	  { "EMFILE", EMFILE },	    { "ENOTTY", ENOTTY },
	{ "ENOSPC", ENOSPC },	  { "ERANGE", ERANGE },	    { "EOVERFLOW", EOVERFLOW },
	{ "EOPNOTSUPP", EOPNOTSUPP }, { "EADDRINUSE", EADDRINUSE }, { "ETIMEDOUT", ETIMEDOUT },
	{ "EDQUOT", EDQUOT },
};

static const char *errno_name(int err)
{
	static char unknown[32];
	size_t i;

	for (i = 0; i < ARRAY_SIZE(errnos); i++)
		if (errnos[i].err == err)
			return errnos[i].name;
	snprintf(unknown, sizeof(unknown), "errno %d", err);
	return unknown;
}

struct opts {
	const char *pos[2];
	int npos;
	bool have_expect;
	int expect;
	bool hold;
	bool listening;
	const char *addr;
	bool afonly;
	bool wait_go;
	bool claims_after_go;
	__u64 context;
	unsigned long files;
	__u64 base;
	long expect_own;
	long expect_other;
	long min_other;
	bool have_want_service;
	__u64 want_service;
	unsigned long count;
	long timeout_ms;
	const char *device;
	long wait_event_ms;
	const char *send;
	unsigned long response_timeout;
	long mra_timeout;
	unsigned long others;
	long drop_to;
	long ns_pid;
	unsigned long ns_uid;
	unsigned long ns_outside_uid;
	long expect_ceps;
	long min_ceps;
	const char *expect_traffic;
};

static void usage(void)
{
	fputs("usage: privileges listen SERVICE_ID MASK --expect E [--context U64] [--addr A [--afonly]]\n"
	      "                  [--hold]\n"
	      "       privileges create N --expect E [--files F] [--wait-go] [--hold]\n"
	      "                         [--send req|sidr] [--response-timeout T]\n"
	      "       privileges listens N --expect E [--files F] [--base SERVICE_ID] [--hold]\n"
	      "       privileges list [--expect-own N|any] [--expect-other N|any] [--min-other N]\n"
	      "                       [--want-service ID]\n"
	      "       privileges query [--expect-ceps N] [--min-ceps N] [--expect-traffic yes|no]\n"
	      "       privileges monitor [--count N] [--timeout-ms T] [--hold]\n"
	      "       privileges migrate N --expect E [--listening] [--others M] [--drop-to UID]\n"
	      "                          [--across-ns PID:N:UID]\n"
	      "                          [--wait-go] [--hold]\n"
	      "       privileges connect-sgid INDEX --expect E [--device DEV] [--wait-event MS]\n"
	      "       privileges prepare-reps N --expect E [--wait-go] [--hold] [--mra-timeout T]\n"
	      "                                [--claims-after-go]\n"
	      "E: ok or an errno name (EACCES, EADDRINUSE, EBUSY, EDQUOT, EINVAL, EMFILE, ...)\n",
	      stderr);
	exit(2);
}

/* The run cannot check what it was asked to: say why, exit 2. */
static void __attribute__((noreturn, format(printf, 1, 2))) setup_failed(const char *fmt, ...)
{
	va_list ap;

	printf("# privileges: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	exit(2);
}

static __u64 parse_u64(const char *what, const char *s)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end || s[0] == '-') {
		fprintf(stderr, "privileges: %s: '%s' is not a number\n", what, s);
		usage();
	}
	return v;
}

static long parse_count_or_any(const char *what, const char *s)
{
	__u64 v;

	if (!strcmp(s, "any"))
		return ANY;
	v = parse_u64(what, s);
	if (v > 0x7fffffff)
		usage();
	return (long)v;
}

static int parse_expect(const char *s)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(errnos); i++)
		if (!strcmp(errnos[i].name, s))
			return errnos[i].err;
	fprintf(stderr, "privileges: --expect %s: neither ok nor an errno name it knows\n", s);
	usage();
	return 0;
}

static void parse_option(struct opts *o, const char *name, const char *value)
{
	if (!strcmp(name, "--expect")) {
		o->expect = parse_expect(value);
		o->have_expect = true;
	} else if (!strcmp(name, "--context")) {
		o->context = parse_u64(name, value);
	} else if (!strcmp(name, "--addr")) {
		o->addr = value;
	} else if (!strcmp(name, "--files")) {
		o->files = parse_u64(name, value);
		if (o->files < 1 || o->files > MAX_FILES)
			usage();
	} else if (!strcmp(name, "--base")) {
		o->base = parse_u64(name, value);
	} else if (!strcmp(name, "--expect-own")) {
		o->expect_own = parse_count_or_any(name, value);
	} else if (!strcmp(name, "--expect-other")) {
		o->expect_other = parse_count_or_any(name, value);
	} else if (!strcmp(name, "--expect-ceps")) {
		o->expect_ceps = parse_count_or_any(name, value);
	} else if (!strcmp(name, "--min-ceps")) {
		o->min_ceps = parse_count_or_any(name, value);
	} else if (!strcmp(name, "--expect-traffic")) {
		if (strcmp(value, "yes") && strcmp(value, "no"))
			usage();
		o->expect_traffic = value;
	} else if (!strcmp(name, "--min-other")) {
		o->min_other = parse_count_or_any(name, value);
	} else if (!strcmp(name, "--want-service")) {
		o->want_service = parse_u64(name, value);
		o->have_want_service = true;
	} else if (!strcmp(name, "--count")) {
		o->count = parse_u64(name, value);
	} else if (!strcmp(name, "--timeout-ms")) {
		o->timeout_ms = parse_u64(name, value);
	} else if (!strcmp(name, "--device")) {
		o->device = value;
	} else if (!strcmp(name, "--others")) {
		o->others = parse_u64(name, value);
	} else if (!strcmp(name, "--drop-to")) {
		o->drop_to = (long)parse_u64(name, value);
	} else if (!strcmp(name, "--across-ns")) {
		if (sscanf(value, "%ld:%lu:%lu", &o->ns_pid, &o->ns_uid, &o->ns_outside_uid) != 3 ||
		    o->ns_pid <= 0)
			usage();
	} else if (!strcmp(name, "--wait-event")) {
		o->wait_event_ms = parse_u64(name, value);
	} else if (!strcmp(name, "--mra-timeout")) {
		o->mra_timeout = (long)parse_u64(name, value);
		if (o->mra_timeout > 31)
			usage();
	} else if (!strcmp(name, "--response-timeout")) {
		o->response_timeout = parse_u64(name, value);
		if (o->response_timeout > 31)
			usage();
	} else if (!strcmp(name, "--send")) {
		if (strcmp(value, "req") && strcmp(value, "sidr"))
			usage();
		o->send = value;
	} else {
		fprintf(stderr, "privileges: unknown option %s\n", name);
		usage();
	}
}

static int open_cepm(int flags)
{
	int fd = open("/dev/cepm", O_RDWR | O_CLOEXEC | flags);

	if (fd < 0)
		setup_failed("open /dev/cepm as uid %u: %s (%s)", geteuid(), errno_name(errno),
			     strerror(errno));
	return fd;
}

/* An ioctl's outcome: 0 or its errno. */
static int call(int fd, unsigned long request, void *arg)
{
	return ioctl(fd, request, arg) ? errno : 0;
}

static int create_cep(int fd, __u64 context, __u32 *handle)
{
	struct cepm_create c;
	int err;

	memset(&c, 0, sizeof(c));
	c.user_context = context;
	err = call(fd, CEPM_IOC_CREATE, &c);
	*handle = c.handle;
	return err;
}

static int listen_scoped(int fd, __u32 handle, __u64 service_id, __u64 mask,
			 const struct opts *o)
{
	struct cepm_listen l;

	memset(&l, 0, sizeof(l));
	l.handle = handle;
	l.service_id = service_id;
	l.service_mask = mask;
	if (o && o->addr) {
		l.flags = o->afonly ? CEPM_LISTEN_AFONLY : 0;
		if (inet_pton(AF_INET, o->addr, &l.addr[12]) == 1) {
			l.scope = CEPM_LISTEN_IPV4;
		} else if (inet_pton(AF_INET6, o->addr, l.addr) == 1) {
			l.scope = CEPM_LISTEN_IPV6;
		} else {
			fprintf(stderr, "privileges: --addr %s: no IP address\n", o->addr);
			usage();
		}
	}
	return call(fd, CEPM_IOC_LISTEN, &l);
}

static int listen_on(int fd, __u32 handle, __u64 service_id, __u64 mask)
{
	return listen_scoped(fd, handle, service_id, mask, NULL);
}

/* The outcome of WHAT against the expectation, in the log; 0 when they agree. */
static int verdict(const char *what, int got, int want)
{
	printf("# uid %u: %s: %s", geteuid(), what, errno_name(got));
	printf(" (expected %s)\n", errno_name(want));
	return got == want ? 0 : 1;
}

/* --hold: say "ready", then keep everything (the open files) until stdin's EOF or a signal. */
static void hold_until_eof(void)
{
	char buf[256];

	printf("ready\n");
	fflush(stdout);
	while (read(STDIN_FILENO, buf, sizeof(buf)) > 0)
		;
}

/* --wait-go: say "waiting", then go on once a line (or anything) arrives on stdin. */
static void wait_go(void)
{
	char c;

	printf("waiting\n");
	fflush(stdout);
	if (read(STDIN_FILENO, &c, 1) != 1)
		setup_failed("stdin closed before the go");
}

static void open_files(const struct opts *o, int *fds)
{
	unsigned long i;

	for (i = 0; i < o->files; i++)
		fds[i] = open_cepm(0);
}

static int cmd_listen(const struct opts *o)
{
	__u64 id = parse_u64("SERVICE_ID", o->pos[0]), mask = parse_u64("MASK", o->pos[1]);
	int fd = open_cepm(0), err, rc;
	char what[128];
	__u32 handle;

	err = create_cep(fd, o->context, &handle);
	if (err)
		setup_failed("CREATE before the LISTEN: %s", errno_name(err));
	err = listen_scoped(fd, handle, id, mask, o);
	snprintf(what, sizeof(what), "LISTEN on 0x%016llx mask 0x%016llx%s%s%s",
		 (unsigned long long)id, (unsigned long long)mask, o->addr ? " for " : "",
		 o->addr ? o->addr : "", o->afonly ? " (AFONLY)" : "");
	rc = verdict(what, err, o->expect);
	if (rc == 0 && err == 0 && o->hold)
		hold_until_eof();
	return rc;
}

/*
 * Where the REQ goes: this host's own first RoCE v2 GID that maps an IPv4 address, and the
 * MAC of its netdev as the next hop, as cepmctl connects in loopback (connect.rs's Route):
 * rxe loops the REQ back and cepm, with no listener, answers it with a REJ.
 */
static void own_roce_v2_address(const char *dev, __u8 dgid[16], __u8 dmac[6], unsigned int *index)
{
	char ndev[64];

	if (!roce_v2_ipv4_route(dev, 1, dgid, dmac, index, ndev, sizeof(ndev)))
		setup_failed("%s port 1 has no RoCE v2 IPv4 GID", dev);
	printf("# to %s port 1 GID %u (::ffff:%u.%u.%u.%u on %s, MAC %02x:%02x:%02x:%02x:%02x:%02x)\n",
	       dev, *index, dgid[12], dgid[13], dgid[14], dgid[15], ndev, dmac[0], dmac[1], dmac[2],
	       dmac[3], dmac[4], dmac[5]);
}

/* Where connect_to() and sidr_request_to() send, unless told: TCP port 0x3000, no listener. */
#define NOBODYS_SERVICE 0x0000000001063000ULL

/*
 * CONNECT HANDLE from GID SGID_INDEX of DEV port 1 to DGID (the MAC DMAC), service
 * SERVICE_ID, as QPN QPN would.
 */
static int connect_to(int fd, __u32 handle, const char *dev, unsigned int sgid_index,
		      const __u8 dgid[16], const __u8 dmac[6], __u8 max_cm_retries,
		      __u8 response_timeout, __u64 service_id, __u32 qpn)
{
	struct cepm_connect c;

	memset(&c, 0, sizeof(c));
	c.service_id = service_id;
	c.handle = handle;
	c.port_num = 1;
	snprintf(c.dev_name, sizeof(c.dev_name), "%s", dev);
	memcpy(c.path.dgid, dgid, 16);
	memcpy(c.path.dmac, dmac, 6);
	c.path.sgid_index = sgid_index;
	c.path.hop_limit = 64;
	c.path.mtu = 3; /* 1024 */
	c.path.packet_life_time = 14;
	c.path.pkey = 0;
	c.local_qpn = qpn;
	c.starting_psn = 1;
	c.responder_resources = 1;
	c.initiator_depth = 1;
	c.remote_cm_response_timeout = response_timeout; /* 20: 4 s */
	c.local_cm_response_timeout = 20;
	c.retry_count = 7;
	c.rnr_retry_count = 7;
	c.max_cm_retries = max_cm_retries;
	c.qp_type = CEPM_TRANSPORT_RC;
	return call(fd, CEPM_IOC_CONNECT, &c);
}

/* SIDR_REQ from HANDLE, to where connect_to() connects, waiting 4 s between its retries. */
static int sidr_request_to(int fd, __u32 handle, const char *dev, unsigned int sgid_index,
			   const __u8 dgid[16], const __u8 dmac[6], __u8 max_cm_retries)
{
	struct cepm_sidr_req r;

	memset(&r, 0, sizeof(r));
	r.service_id = NOBODYS_SERVICE;
	r.handle = handle;
	r.port_num = 1;
	snprintf(r.dev_name, sizeof(r.dev_name), "%s", dev);
	memcpy(r.path.dgid, dgid, 16);
	memcpy(r.path.dmac, dmac, 6);
	r.path.sgid_index = sgid_index;
	r.path.hop_limit = 64;
	r.path.mtu = 3;
	r.path.packet_life_time = 14;
	r.cm_response_timeout = 20;
	r.max_cm_retries = max_cm_retries;
	return call(fd, CEPM_IOC_SIDR_REQ, &r);
}

static int cmd_create(const struct opts *o)
{
	unsigned long n = parse_u64("N", o->pos[0]), k, sent = 0;
	int fds[MAX_FILES], err = 0, rc;
	static __u32 handles[MAX_CREATES];
	unsigned int gid_index;
	__u8 gid[16], mac[6];
	char what[128];

	if (o->send) {
		if (n > MAX_CREATES)
			usage();
		own_roce_v2_address("rxe0", gid, mac, &gid_index);
	}
	open_files(o, fds);
	if (o->wait_go && !o->send)
		wait_go();
	for (k = 0; k < n; k++) {
		err = create_cep(fds[k % o->files], k, &handles[o->send ? k : 0]);
		if (err)
			break;
	}
	printf("# created %lu of %lu CEPs in %lu file(s)\n", k, n, o->files);
	if (err)
		snprintf(what, sizeof(what), "CREATE of CEP %lu (file %lu)", k + 1,
			 k % o->files + 1);
	else
		snprintf(what, sizeof(what), "%lu CREATEs", n);
	rc = verdict(what, err, o->expect);
	if (rc == 0 && o->send) {
		if (o->wait_go)
			wait_go();
		for (; sent < k; sent++) {
			int fd = fds[sent % o->files];

			err = !strcmp(o->send, "req") ?
				      connect_to(fd, handles[sent], "rxe0", gid_index, gid, mac, 15,
						 o->response_timeout, NOBODYS_SERVICE, 0x123) :
				      sidr_request_to(fd, handles[sent], "rxe0", gid_index, gid, mac, 15);
			if (err)
				setup_failed("%s of CEP %lu: %s", !strcmp(o->send, "req") ? "CONNECT" :
				             "SIDR_REQ", sent + 1, errno_name(err));
		}
		printf("# %lu CEPs sent a %s\n", sent, !strcmp(o->send, "req") ? "REQ" : "SIDR_REQ");
	}
	if (rc == 0 && o->hold)
		hold_until_eof();
	return rc;
}

static int cmd_listens(const struct opts *o)
{
	unsigned long n = parse_u64("N", o->pos[0]), k;
	int fds[MAX_FILES], err = 0, rc;
	char what[128];
	__u32 handle;

	open_files(o, fds);
	snprintf(what, sizeof(what), "%lu listens", n);
	for (k = 0; k < n; k++) {
		int fd = fds[k % o->files];

		err = create_cep(fd, k, &handle);
		if (err) {
			snprintf(what, sizeof(what), "CREATE for listen %lu (file %lu)", k + 1,
				 k % o->files + 1);
			break;
		}
		err = listen_on(fd, handle, o->base + k, ~0ULL);
		if (err) {
			snprintf(what, sizeof(what), "LISTEN %lu on 0x%016llx (file %lu)", k + 1,
				 (unsigned long long)(o->base + k), k % o->files + 1);
			break;
		}
	}
	printf("# listening on %lu of %lu service IDs from 0x%016llx in %lu file(s)\n", k, n,
	       (unsigned long long)o->base, o->files);
	rc = verdict(what, err, o->expect);
	if (rc == 0 && o->hold)
		hold_until_eof();
	return rc;
}

/* Root again (from the saved ids), then uid and gid UID of the user namespace of process PID. */
static void enter_user_ns(long pid, unsigned long uid)
{
	char path[64];
	int ns;

	if (setresuid(-1, 0, -1) || setresgid(-1, 0, -1))
		setup_failed("becoming root again: %s", strerror(errno));
	snprintf(path, sizeof(path), "/proc/%ld/ns/user", pid);
	ns = open(path, O_RDONLY | O_CLOEXEC);
	if (ns < 0 || setns(ns, CLONE_NEWUSER))
		setup_failed("entering %s: %s", path, strerror(errno));
	close(ns);
	if (setgroups(0, NULL) || setresgid(uid, uid, uid) || setresuid(uid, uid, uid))
		setup_failed("becoming uid %lu of %s: %s", uid, path, strerror(errno));
}

static int cmd_migrate(const struct opts *o)
{
	unsigned long n = parse_u64("N", o->pos[0]), k;
	struct cepm_migrate m = { 0 };
	struct cepm_cep_info in_from = { 0 }, in_to = { 0 };
	int fds[2], err, rc, from_has, to_has;
	__u32 handle;
	char what[96];

	if (n > MAX_CREATES || (o->ns_pid > 0 && o->drop_to >= 0))
		usage();
	/* Only the effective ids: the saved ones stay root's, to enter the namespace with. */
	if (o->ns_pid > 0 && (setresgid(-1, o->ns_outside_uid, -1) ||
			      setresuid(-1, o->ns_outside_uid, -1)))
		setup_failed("becoming uid %lu: %s", o->ns_outside_uid, strerror(errno));
	fds[1] = open_cepm(O_RDWR);
	if (o->ns_pid > 0)
		enter_user_ns(o->ns_pid, o->ns_uid);
	if (o->drop_to >= 0 && (setgroups(0, NULL) || setresgid(o->drop_to, o->drop_to, o->drop_to) ||
				setresuid(o->drop_to, o->drop_to, o->drop_to)))
		setup_failed("becoming uid %ld: %s", o->drop_to, strerror(errno));
	fds[0] = open_cepm(O_RDWR);
	for (k = 0; k < o->others; k++)
		if ((err = create_cep(fds[0], n + 1 + k, &handle)))
			setup_failed("extra CEP %lu of file 1: %s", k + 1, errno_name(err));
	for (k = 0; k < n; k++) {
		err = create_cep(fds[1], k, &handle);
		if (!err && o->listening)
			err = listen_on(fds[1], handle, o->base + k, 0);
		if (err)
			setup_failed("CEP %lu of file 2: %s", k + 1, errno_name(err));
	}
	err = create_cep(fds[0], n, &handle);
	if (!err && o->listening)
		err = listen_on(fds[0], handle, o->base + n, 0);
	if (err)
		setup_failed("the CEP of file 1: %s", errno_name(err));
	if (o->wait_go) {
		wait_go();
		in_from.handle = handle;
		err = call(fds[0], CEPM_IOC_QUERY_CEP, &in_from);
		if (err)
			setup_failed("QUERY_CEP before the MIGRATE: %s", errno_name(err));
		printf("# before the move: %u request(s) waiting in file 1\n",
		       in_from.pending_requests);
	}
	m.fd = fds[0];
	m.handle = handle;
	err = call(fds[1], CEPM_IOC_MIGRATE, &m);
	snprintf(what, sizeof(what), "MIGRATE of a %s CEP to a file with %lu", o->listening ?
		 "listening" : "new", n);
	rc = verdict(what, err, o->expect);
	in_from.handle = handle;
	in_to.handle = m.new_handle;
	from_has = call(fds[0], CEPM_IOC_QUERY_CEP, &in_from) == 0;
	to_has = !err && call(fds[1], CEPM_IOC_QUERY_CEP, &in_to) == 0;
	printf("# the CEP is in file 1: %s, in file 2: %s\n", from_has ? "yes" : "no",
	       to_has ? "yes" : "no");
	if (from_has != (err != 0) || to_has != (err == 0)) {
		printf("# ... not where it should be\n");
		rc = 1;
	}
	if (rc == 0 && o->listening && (err ? in_from.state : in_to.state) != CEPM_STATE_LISTEN) {
		printf("# ... and no longer listens\n");
		rc = 1;
	}
	if (rc == 0 && to_has && o->wait_go)
		printf("# after the move: %u request(s) waiting in file 2\n", in_to.pending_requests);
	if (rc == 0 && to_has && o->hold) {
		close(fds[0]);
		hold_until_eof();
	}
	return rc;
}

static bool count_matches(const char *what, unsigned long got, long want)
{
	if (want == ANY || got == (unsigned long)want)
		return true;
	printf("# %s: %lu, expected %ld\n", what, got, want);
	return false;
}

static int cmd_list(const struct opts *o)
{
	unsigned long own = 0, other = 0, shown_context = 0, n, i;
	struct cepm_cep_info *infos;
	bool found_service = false, ok;
	struct cepm_list l;
	int fd = open_cepm(0), err;
	__u32 capacity;

	memset(&l, 0, sizeof(l));
	err = call(fd, CEPM_IOC_LIST_CEPS, &l);
	if (err)
		setup_failed("LIST_CEPS (count only): %s", errno_name(err));
	/* Room for some more, should CEPs appear between the two calls. */
	capacity = l.count + 64;
	infos = calloc(capacity, sizeof(*infos));
	if (!infos)
		setup_failed("out of memory");
	memset(&l, 0, sizeof(l));
	l.capacity = capacity;
	l.ceps = (uintptr_t)infos;
	err = call(fd, CEPM_IOC_LIST_CEPS, &l);
	if (err)
		setup_failed("LIST_CEPS: %s", errno_name(err));
	n = l.count < capacity ? l.count : capacity;
	for (i = 0; i < n; i++) {
		const struct cepm_cep_info *c = &infos[i];

		if (i < 32)
			printf("# cep %lu: handle %u state %u service 0x%016llx context 0x%llx\n",
			       i, c->handle, c->state, (unsigned long long)c->service_id,
			       (unsigned long long)c->user_context);
		if (c->handle) {
			own++;
		} else {
			other++;
			if (c->user_context) {
				printf("# cep %lu (another file's) shows user_context 0x%llx\n", i,
				       (unsigned long long)c->user_context);
				shown_context++;
			}
		}
		if (o->have_want_service && c->service_id == o->want_service)
			found_service = true;
	}
	printf("# uid %u: LIST_CEPS: count %u, %lu own, %lu of other files\n", geteuid(), l.count,
	       own, other);
	ok = shown_context == 0;
	ok &= count_matches("own CEPs", own, o->expect_own);
	ok &= count_matches("other files' CEPs", other, o->expect_other);
	if (o->min_other != ANY && other < (unsigned long)o->min_other) {
		printf("# other files' CEPs: %lu, expected at least %ld\n", other, o->min_other);
		ok = false;
	}
	if (o->have_want_service && !found_service) {
		printf("# no CEP with service ID 0x%016llx listed\n",
		       (unsigned long long)o->want_service);
		ok = false;
	}
	free(infos);
	return ok ? 0 : 1;
}

/* QUERY, as the caller sees it: how many CEPs, and whether the ports' counters show traffic. */
static int cmd_query(const struct opts *o)
{
	struct cepm_port_info ports[16];
	struct cepm_query q = { .port_capacity = 16, .ports = (uintptr_t)ports };
	unsigned long traffic = 0, i, n;
	int fd = open_cepm(0), err, a;
	bool ok;

	memset(ports, 0, sizeof(ports));
	err = call(fd, CEPM_IOC_QUERY, &q);
	if (err)
		setup_failed("QUERY: %s", errno_name(err));
	n = q.num_ports < 16 ? q.num_ports : 16;
	for (i = 0; i < n; i++) {
		const struct cepm_port_info *p = &ports[i];

		for (a = 0; a < CEPM_ATTR_SLOTS; a++)
			traffic += p->rx_by_attr[a] + p->tx_by_attr[a];
		traffic += p->rx_other_attr + p->rx_malformed + p->rx_invalid + p->rx_duplicates +
			   p->tx_errors;
	}
	printf("# uid %u: QUERY: %u CEP(s), %u port(s), %lu MAD(s) counted\n", geteuid(),
	       q.num_ceps, q.num_ports, traffic);
	ok = count_matches("CEPs", q.num_ceps, o->expect_ceps);
	if (o->min_ceps != ANY && q.num_ceps < (unsigned long)o->min_ceps) {
		printf("# CEPs: %u, expected at least %ld\n", q.num_ceps, o->min_ceps);
		ok = false;
	}
	if (o->expect_traffic && (traffic > 0) != !strcmp(o->expect_traffic, "yes")) {
		printf("# counters: %lu MADs, expected %s\n", traffic,
		       traffic ? "none" : "some");
		ok = false;
	}
	return ok ? 0 : 1;
}

/* Every record queued now (the file is O_NONBLOCK), one "trace" line each. */
static unsigned long read_records(int fd)
{
	struct cepm_trace t[32];
	unsigned long records = 0;
	ssize_t got;
	size_t i;

	for (;;) {
		got = read(fd, t, sizeof(t));
		if (got < 0 && errno == EAGAIN)
			return records;
		if (got < 0)
			setup_failed("read of the monitor: %s", errno_name(errno));
		if (got == 0)
			return records;
		for (i = 0; i < (size_t)got / sizeof(t[0]); i++) {
			printf("trace 0x%016llx event %u status %u state %u lost %u\n",
			       (unsigned long long)t[i].service_id, t[i].event, t[i].status,
			       t[i].state, t[i].lost);
			records++;
		}
	}
}

static int cmd_monitor(const struct opts *o)
{
	int fd = open_cepm(O_NONBLOCK), err;
	unsigned long records = 0;
	struct cepm_monitor m;
	struct pollfd p[2];
	bool eof = false;
	char buf[256];

	memset(&m, 0, sizeof(m));
	err = call(fd, CEPM_IOC_MONITOR, &m);
	if (err)
		setup_failed("MONITOR: %s", errno_name(err));
	printf("ready\n");
	fflush(stdout);
	memset(p, 0, sizeof(p));
	p[0].fd = fd;
	p[0].events = POLLIN;
	p[1].fd = STDIN_FILENO;
	p[1].events = POLLIN;
	while (!eof && (!o->count || records < o->count)) {
		int ready = poll(p, o->hold ? 2 : 1, o->timeout_ms);

		if (ready < 0 && errno == EINTR)
			break;
		if (ready < 0)
			setup_failed("poll: %s", errno_name(errno));
		if (ready == 0)
			break; /* timeout_ms without a record */
		if (p[0].revents & (POLLERR | POLLHUP | POLLNVAL))
			setup_failed("poll of the monitor: revents %#x", p[0].revents);
		if (o->hold && p[1].revents)
			eof = read(STDIN_FILENO, buf, sizeof(buf)) <= 0;
		/* At EOF too: what was queued before it counts. */
		if ((p[0].revents & POLLIN) || eof)
			records += read_records(fd);
	}
	printf("# uid %u: records %lu\n", geteuid(), records);
	return 0;
}

static int cmd_monitors(const struct opts *o)
{
	unsigned long n = parse_u64("N", o->pos[0]), k;
	struct cepm_monitor m;
	int fds[MAX_FILES], err = 0, rc;
	char what[64];

	if (n > MAX_FILES)
		setup_failed("at most %d monitors", MAX_FILES);
	snprintf(what, sizeof(what), "%lu monitors", n);
	for (k = 0; k < n; k++) {
		fds[k] = open_cepm(O_NONBLOCK);
		memset(&m, 0, sizeof(m));
		err = call(fds[k], CEPM_IOC_MONITOR, &m);
		if (err) {
			snprintf(what, sizeof(what), "MONITOR %lu", k + 1);
			break;
		}
	}
	printf("# %lu of %lu files monitor\n", k, n);
	rc = verdict(what, err, o->expect);
	if (rc == 0 && o->hold)
		hold_until_eof();
	return rc;
}

static int cmd_connect_sgid(const struct opts *o)
{
	__u64 index = parse_u64("INDEX", o->pos[0]);
	const char *dev = o->device ? o->device : "rxe0";
	struct cepm_destroy d;
	unsigned int dgid_index;
	__u8 dgid[16], dmac[6];
	int fd, err, rc;
	char what[64];
	__u32 handle;

	if (index > 255)
		usage();
	own_roce_v2_address(dev, dgid, dmac, &dgid_index);
	fd = open_cepm(0);
	err = create_cep(fd, 0, &handle);
	if (err)
		setup_failed("CREATE before the CONNECT: %s", errno_name(err));
	err = connect_to(fd, handle, dev, index, dgid, dmac, 3, 20, NOBODYS_SERVICE, 0x123);
	snprintf(what, sizeof(what), "CONNECT from GID index %u", (unsigned int)index);
	rc = verdict(what, err, o->expect);
	if (!err && o->wait_event_ms >= 0) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		struct cepm_event ev;

		if (poll(&p, 1, o->wait_event_ms) != 1) {
			printf("# no event within %ld ms\n", o->wait_event_ms);
			rc = rc ? rc : 1;
		} else if (read(fd, &ev, sizeof(ev)) != sizeof(ev)) {
			printf("# read of the event: %s\n", errno_name(errno));
			rc = rc ? rc : 1;
		} else {
			printf("# event %u status %u\n", ev.event, ev.status);
		}
	}
	memset(&d, 0, sizeof(d));
	d.handle = handle;
	err = call(fd, CEPM_IOC_DESTROY, &d);
	if (err)
		setup_failed("DESTROY after the CONNECT: %s", errno_name(err));
	return rc;
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/* The service prepare-reps listens on, and connects to: TCP port 0x3100. */
#define OWN_SERVICE 0x0000000001063100ULL

/* GET_REQUEST on LISTENER: the next REQ waiting in its backlog, its handle in *HANDLE. */
static int get_request(int fd, __u32 listener, __u32 *handle)
{
	struct cepm_get_request g;
	int err;

	memset(&g, 0, sizeof(g));
	g.listen_handle = listener;
	err = call(fd, CEPM_IOC_GET_REQUEST, &g);
	if (!err)
		*handle = g.handle;
	return err;
}

/* Read the listener's events until N REQ_RECEIVEDs (30 s at most between two events). */
static void await_reqs(int listener_fd, unsigned long n, double started)
{
	unsigned long seen = 0;

	while (seen < n) {
		struct pollfd p = { .fd = listener_fd, .events = POLLIN };
		struct cepm_event ev;

		if (poll(&p, 1, 30000) != 1)
			setup_failed("%lu of %lu REQs received, then none for 30 s", seen, n);
		if (read(listener_fd, &ev, sizeof(ev)) != sizeof(ev))
			setup_failed("read: %s", errno_name(errno));
		if (ev.event == CEPM_EVENT_REQ_RECEIVED)
			seen++;
	}
	printf("# %lu REQs waiting in the backlog, %.1f s in\n", seen, now_s() - started);
}

/*
 * prepare-reps --claims-after-go: the N REQs wait in the listener's backlog; after the go,
 * the GET_REQUESTs the verdict is about.
 */
static int claims_after_go(const struct opts *o, int listener_fd, __u32 listener,
			   unsigned long n, double started)
{
	unsigned long k;
	char what[64];
	__u32 handle;
	int err = 0, rc;

	await_reqs(listener_fd, n, started);
	wait_go();
	for (k = 0; k < n && !err; k++)
		err = get_request(listener_fd, listener, &handle);
	if (err)
		snprintf(what, sizeof(what), "GET_REQUEST %lu", k);
	else
		snprintf(what, sizeof(what), "%lu GET_REQUESTs", n);
	rc = verdict(what, err, o->expect);
	if (rc == 0 && o->hold)
		hold_until_eof();
	return rc;
}

/*
 * prepare-reps: N REQs from one file to a listener of another, both ours, on rxe0; every
 * one claimed; then (after the go) a PREPARE_REP for each, the calls the verdict is about.
 */
static int cmd_prepare_reps(const struct opts *o)
{
	unsigned long n = parse_u64("N", o->pos[0]), k, claimed = 0;
	static __u32 handles[MAX_CREATES];
	double started;
	int listener_fd, client_fd, err = 0, rc;
	unsigned int gid_index;
	__u32 listener, client;
	__u8 gid[16], mac[6];
	char what[128];

	if (n > MAX_CREATES)
		usage();
	own_roce_v2_address("rxe0", gid, mac, &gid_index);
	listener_fd = open_cepm(0);
	client_fd = open_cepm(0);
	err = create_cep(listener_fd, 0, &listener);
	if (!err)
		err = listen_on(listener_fd, listener, OWN_SERVICE, 0);
	if (err)
		setup_failed("the listener: %s", errno_name(err));
	started = now_s();
	for (k = 0; k < n; k++) {
		err = create_cep(client_fd, k, &client);
		/* A QPN each: one QP's second REQ would be a stale connection's. */
		if (!err)
			err = connect_to(client_fd, client, "rxe0", gid_index, gid, mac, 15, 20,
					 OWN_SERVICE, 0x1000 + k);
		if (err)
			setup_failed("CONNECT %lu: %s", k + 1, errno_name(err));
		/* Never 30 s silent: the script gives up on a helper that is. */
		if ((k + 1) % 250 == 0)
			printf("# %lu REQs sent so far, %.1f s in\n", k + 1, now_s() - started);
	}
	if (o->claims_after_go)
		return claims_after_go(o, listener_fd, listener, n, started);
	while (claimed < n) {
		struct pollfd p = { .fd = listener_fd, .events = POLLIN };
		struct cepm_event ev;

		if (poll(&p, 1, 30000) != 1)
			setup_failed("%lu of %lu REQs claimed, then none for 30 s", claimed, n);
		if (read(listener_fd, &ev, sizeof(ev)) != sizeof(ev))
			setup_failed("read: %s", errno_name(errno));
		if (ev.event != CEPM_EVENT_REQ_RECEIVED)
			continue;
		err = get_request(listener_fd, listener, &handles[claimed]);
		if (err)
			setup_failed("GET_REQUEST %lu: %s", claimed + 1, errno_name(err));
		claimed++;
		/* Never 30 s silent: the script gives up on a helper that is. */
		if (claimed % 250 == 0)
			printf("# %lu REQs claimed so far, %.1f s in\n", claimed, now_s() - started);
	}
	printf("# %lu REQs sent and claimed in %.1f s\n", claimed, now_s() - started);
	if (o->wait_go)
		wait_go();
	for (k = 0; k < n && o->mra_timeout >= 0; k++) {
		struct cepm_prepare_mra m = {
			.handle = handles[k],
			.flags = CEPM_MRA_SEND_NOW | CEPM_MRA_SERVICE_TIMEOUT,
			.service_timeout = o->mra_timeout,
		};

		err = call(listener_fd, CEPM_IOC_PREPARE_MRA, &m);
		if (err)
			break;
	}
	for (k = 0; k < n && o->mra_timeout < 0; k++) {
		struct cepm_accept a;

		memset(&a, 0, sizeof(a));
		a.handle = handles[k];
		a.local_qpn = 0x2000 + k;
		a.starting_psn = 1;
		a.responder_resources = 1;
		a.initiator_depth = 1;
		a.rnr_retry_count = 7;
		err = call(listener_fd, CEPM_IOC_PREPARE_REP, &a);
		if (err)
			break;
	}
	if (err)
		snprintf(what, sizeof(what), "%s of CEP %lu",
			 o->mra_timeout < 0 ? "PREPARE_REP" : "PREPARE_MRA", k + 1);
	else
		snprintf(what, sizeof(what), "%lu %s", n,
			 o->mra_timeout < 0 ? "PREPARE_REPs" : "PREPARE_MRAs");
	rc = verdict(what, err, o->expect);
	if (rc == 0 && o->hold)
		hold_until_eof();
	return rc;
}

int main(int argc, char **argv)
{
	const struct {
		const char *name;
		int (*run)(const struct opts *);
		int npos;
		bool needs_expect;
	} commands[] = {
		{ "listen", cmd_listen, 2, true },
		{ "create", cmd_create, 1, true },
		{ "listens", cmd_listens, 1, true },
		{ "list", cmd_list, 0, false },
		{ "query", cmd_query, 0, false },
		{ "monitor", cmd_monitor, 0, false },
		{ "monitors", cmd_monitors, 1, true },
		{ "connect-sgid", cmd_connect_sgid, 1, true },
		{ "migrate", cmd_migrate, 1, true },
		{ "prepare-reps", cmd_prepare_reps, 1, true },
	};
	struct opts o;
	size_t c;
	int i;

	/* Lines reach the script as they are written, through a pipe too. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	/*
	 * What the caller left open is not ours to hold: a holder that kept another holder's
	 * stdin open would keep that one from ever seeing its EOF.
	 */
	close_range(3, ~0U, 0);

	memset(&o, 0, sizeof(o));
	o.files = 1;
	o.base = 0x0000000001062000ULL;
	o.expect_own = ANY;
	o.expect_other = ANY;
	o.min_other = ANY;
	o.expect_ceps = ANY;
	o.min_ceps = ANY;
	o.timeout_ms = -1;
	o.wait_event_ms = -1;
	o.drop_to = -1;
	o.response_timeout = 20;
	o.mra_timeout = -1;
	if (argc < 2)
		usage();
	for (i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--hold"))
			o.hold = true;
		else if (!strcmp(argv[i], "--afonly"))
			o.afonly = true;
		else if (!strcmp(argv[i], "--listening"))
			o.listening = true;
		else if (!strcmp(argv[i], "--wait-go"))
			o.wait_go = true;
		else if (!strcmp(argv[i], "--claims-after-go"))
			o.claims_after_go = true;
		else if (!strncmp(argv[i], "--", 2) && i + 1 < argc) {
			parse_option(&o, argv[i], argv[i + 1]);
			i++;
		} else if (argv[i][0] != '-' && o.npos < 2)
			o.pos[o.npos++] = argv[i];
		else
			usage();
	}
	for (c = 0; c < ARRAY_SIZE(commands); c++) {
		if (strcmp(argv[1], commands[c].name))
			continue;
		if (o.npos != commands[c].npos || (commands[c].needs_expect && !o.have_expect))
			usage();
		return commands[c].run(&o);
	}
	usage();
	return 2;
}
