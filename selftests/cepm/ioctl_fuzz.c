// SPDX-License-Identifier: GPL-2.0
/*
 * ioctl_fuzz: a structured, seed-reproducible fuzzer of /dev/cepm's ioctls, read() and poll().
 *
 *   ioctl_fuzz [--seed N] [--calls N] [--procs N] [--files N] [--verbose]
 *
 * Several processes open /dev/cepm a few times each and make random sequences of every ioctl
 * of include/uapi/cepm.h, read() and poll(), and close and reopen their files.  Arguments are
 * mostly well formed (own handles, service IDs from a small set, a path to rxe0's own RoCE v2
 * GID so that CONNECTs and SIDR_REQs meet the listeners of the same run), with mutations:
 * reserved fields, unknown flags, lengths over their limit, structs longer (zero or non-zero
 * tail) or shorter than their first version, wrong directions, unknown numbers, bad or
 * read-only argument pointers, bad array pointers and capacities.  Processes fork children
 * that share their files, kill some of them with SIGKILL at a random moment, and close files
 * that a child still uses.
 *
 * The judge: every call succeeds or fails with an errno that docs/abi.md (or the header's
 * comment for that call) documents for it; see calls[] below.  EFAULT, ENOTTY and E2BIG are
 * accepted only when the call was given what provokes them, and a call given something the
 * ABI forbids must fail.  No call may take longer than WATCHDOG_S.  At the end no CEP may be
 * left in the module.  These time bounds catch hangs; --time-scale N multiplies them all for a
 * slower kernel, as CEPM_LIMIT_SCALE does for the selftests' (KASAN's lane uses 25).  A
 * failure prints
 *   ioctl_fuzz: FAIL seed S proc P call K: <call> returned errno E (<strerror>)
 * with the argument bytes, and the process exits 1; so does the whole run.
 *
 * Replay: the seed is printed first.  A process's sequence depends only on its seed (the run's
 * seed and its index, or for a child the parent's draw) and on the results it got; with
 * several processes at once results depend on timing as well, so a replay follows the same
 * path as far as the kernel answers the same (--procs 1 keeps it closest).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cepm.h"
#include "roce_route.h"

#define DEV_PATH	"/dev/cepm"
#define RXE_DEV		"rxe0"
#define RXE_PORT	1

#define DEFAULT_CALLS	10000
#define DEFAULT_PROCS	4
#define DEFAULT_FILES	3
#define MAX_PROCS	64
#define MAX_FILES	16
#define MAX_CEPS	48	/* live handles tracked per file; CREATE beyond destroys */
#define MAX_STALE	16	/* destroyed handles kept to name again */
#define MAX_DOUBT	8	/* handles whose fate the kernel did not tell */
#define MAX_CHILDREN	3	/* live children per worker */
#define SEEN_HANDLES	8192	/* handles below this are checked for reuse */

/* Time bounds, each multiplied by --time-scale (TIME_S). */
#define WATCHDOG_S	5	/* no call of cepm may take longer */
#define BLOCK_READ_US	100000	/* a blocking read waits this long for an event */
#define POLL_MS_MAX	20
#define DRAIN_S		10	/* CEPs may linger this long after every file is closed */
#define STUCK_S		30	/* a process that finishes no call for this long hangs */
#define KILL_REAP_S	10	/* a SIGKILLed child must be gone by then */
#define MAIN_STUCK_S	(STUCK_S + 2 * KILL_REAP_S + 10)	/* after the workers' own verdict */
#define TIME_S(bound)	((bound) * opt.time_scale)
#define EXIT_STUCK	3	/* exit code of a process whose watchdog fired */

#define MUT_PCT		12	/* calls with a mutated field */
#define PATTERN		0xa5	/* fills memory the kernel must not write */

#define ARG_ROOM	(_IOC_SIZEMASK + 1)	/* the largest size an ioctl command can carry */
#define TAIL_CHECK	64	/* bytes after the argument checked for stray writes */
#define READ_ROOM	65536
#define PORTS_ROOM	16	/* struct cepm_port_info entries before the guard page */
#define LIST_ROOM	4096	/* struct cepm_cep_info entries before the guard page */

/* Service IDs in rdma_cm's TCP and UDP port spaces, few enough that requests meet listeners. */
#define SVC_CONN	0x0000000001060000ULL
#define SVC_SIDR	0x0000000001110000ULL
#define SVC_PORT	0xe700
#define N_SVC_CONN	6
#define N_SVC_SIDR	4

#define CM_ATTR_REQ	0x0010
#define CM_ATTR_APR	0x001a

/* Every call the fuzzer makes; the ioctls in the header's order. */
enum call_id {
	C_NONE,
	C_QUERY,
	C_CREATE,
	C_DESTROY,
	C_LISTEN,
	C_GET_REQUEST,
	C_REJECT,
	C_QUERY_CEP,
	C_GET_PRIVATE_DATA,
	C_CONNECT,
	C_PREPARE_REP,
	C_SEND_REP,
	C_SEND_RTU,
	C_INIT_QP_ATTR,
	C_SEND_DREQ,
	C_SEND_DREP,
	C_PREPARE_MRA,
	C_SIDR_REQ,
	C_SIDR_REP,
	C_LIST_CEPS,
	C_ESTABLISH,
	C_MONITOR,
	C_MIGRATE,
	C_POST_EVENT,
	C_BIND,
	C_BAD_CMD,	/* a command that is none of cepm's */
	C_READ,
	C_POLL,
	C_OPEN,
	C_CLOSE,
	NCALLS
};

/*
 * The errnos each call may fail with, from docs/abi.md's "Errors" table, which is the one
 * list (no other errno is accepted).  "[prov]": only when the call was given what provokes
 * it (PROV_* below), so that e.g. a well-formed call getting E2BIG or EFAULT is a failure.
 * The fuzzer is stricter than the table where it knows more: EMFILE (handles run out, a
 * debugfs knob, or a file's limit) cannot happen here, so it is not accepted; nor can the
 * errnos of "Privileges and limits" (EACCES, EADDRINUSE, EDQUOT): every process is root,
 * with every capability, and holds far less than the default limits (MAX_CEPS a file), but
 * for MONITOR's EDQUOT: a run's files (each worker's, and those its children reopen) may
 * outnumber max_monitors_per_user, 16; and but for the port rules, which bind root too.
 *
 *   every ioctl  EINVAL     bad argument, reserved != 0, a handle not ours, a call the
 *                           CEP's state does not allow
 *                EFAULT     [prov] bad pointer
 *                E2BIG      [prov] non-zero bytes past the struct
 *                ENOTTY     [prov] not cepm's command: unknown number, other direction,
 *                           shorter struct
 *                ENOMEM     out of memory (never here, but documented)
 *   LISTEN       EBUSY      a second identical listen
 *                EADDRINUSE, EADDRNOTAVAIL  its port (a bound CEP's, or the one an unbound CEP's
 *                           listen takes) is held by another CEP too
 *   BIND         EADDRINUSE, EADDRNOTAVAIL  another CEP holds the port
 *   CREATE       EBUSY      the file is a monitor
 *   GET_REQUEST  EAGAIN     no request pending
 *                EBUSY      the file is a monitor
 *   MONITOR      EBUSY      owns CEPs, or monitors
 *                EDQUOT     the user's files monitor max_monitors_per_user times already
 *   MIGRATE      EBUSY      the file is a monitor
 *                EBADF      [prov] fd is not open
 *   POST_EVENT   ENOSPC     the file's queue is full
 *   REJECT, CONNECT, PREPARE_REP, SEND_RTU, SEND_DREQ, SEND_DREP, SIDR_REQ, SIDR_REP
 *                E2BIG      [prov] a length over its limit (ari_len, info_len: EINVAL or
 *                           E2BIG)
 *   CONNECT, SIDR_REQ
 *                ENODEV     [prov] a device or port cepm does not manage
 *                EHOSTUNREACH, ENETUNREACH  the next hop toward the path's GID does not
 *                           resolve within a second, or no route leads there by rxe0's
 *                           netdev (a random GID)
 *   read         EINVAL     [prov] buffer below one record
 *                EAGAIN     [prov] O_NONBLOCK
 *                EOVERFLOW  [prov] an event file (not a monitor), once after a loss
 *                EFAULT     [prov] bad buffer
 *                EINTR      [prov] blocking file: our timer ends the wait (the only signal
 *                           that can reach a call)
 *   poll         none
 *
 * EINTR is accepted nowhere else: SIGALRM fires during an ioctl only after the watchdog's
 * time, and then fails the run.
 */
struct call_desc {
	const char *name;
	unsigned long cmd;
	int errnos[5];		/* always acceptable, 0-terminated */
};

static const struct call_desc calls[NCALLS] = {
	[C_NONE]		= { "none", 0, { 0 } },
	[C_QUERY]		= { "QUERY", CEPM_IOC_QUERY, { EINVAL } },
	[C_CREATE]		= { "CREATE", CEPM_IOC_CREATE, { EINVAL, EBUSY } },
	[C_DESTROY]		= { "DESTROY", CEPM_IOC_DESTROY, { EINVAL } },
	[C_LISTEN]		= { "LISTEN", CEPM_IOC_LISTEN,
				    { EINVAL, EBUSY, EADDRINUSE, EADDRNOTAVAIL } },
	[C_GET_REQUEST]		= { "GET_REQUEST", CEPM_IOC_GET_REQUEST,
				    { EINVAL, EAGAIN, EBUSY } },
	[C_REJECT]		= { "REJECT", CEPM_IOC_REJECT, { EINVAL } },
	[C_QUERY_CEP]		= { "QUERY_CEP", CEPM_IOC_QUERY_CEP, { EINVAL } },
	[C_GET_PRIVATE_DATA]	= { "GET_PRIVATE_DATA", CEPM_IOC_GET_PRIVATE_DATA, { EINVAL } },
	[C_CONNECT]		= { "CONNECT", CEPM_IOC_CONNECT, { EINVAL, EHOSTUNREACH, ENETUNREACH } },
	[C_PREPARE_REP]		= { "PREPARE_REP", CEPM_IOC_PREPARE_REP, { EINVAL } },
	[C_SEND_REP]		= { "SEND_REP", CEPM_IOC_SEND_REP, { EINVAL } },
	[C_SEND_RTU]		= { "SEND_RTU", CEPM_IOC_SEND_RTU, { EINVAL } },
	[C_INIT_QP_ATTR]	= { "INIT_QP_ATTR", CEPM_IOC_INIT_QP_ATTR, { EINVAL } },
	[C_SEND_DREQ]		= { "SEND_DREQ", CEPM_IOC_SEND_DREQ, { EINVAL } },
	[C_SEND_DREP]		= { "SEND_DREP", CEPM_IOC_SEND_DREP, { EINVAL } },
	[C_PREPARE_MRA]		= { "PREPARE_MRA", CEPM_IOC_PREPARE_MRA, { EINVAL } },
	[C_SIDR_REQ]		= { "SIDR_REQ", CEPM_IOC_SIDR_REQ, { EINVAL, EHOSTUNREACH, ENETUNREACH } },
	[C_SIDR_REP]		= { "SIDR_REP", CEPM_IOC_SIDR_REP, { EINVAL } },
	[C_LIST_CEPS]		= { "LIST_CEPS", CEPM_IOC_LIST_CEPS, { EINVAL } },
	[C_ESTABLISH]		= { "ESTABLISH", CEPM_IOC_ESTABLISH, { EINVAL } },
	[C_MONITOR]		= { "MONITOR", CEPM_IOC_MONITOR, { EINVAL, EBUSY, EDQUOT } },
	[C_MIGRATE]		= { "MIGRATE", CEPM_IOC_MIGRATE, { EINVAL, EBUSY } },
	[C_POST_EVENT]		= { "POST_EVENT", CEPM_IOC_POST_EVENT, { EINVAL, ENOSPC } },
	[C_BIND]		= { "BIND", CEPM_IOC_BIND, { EINVAL, EADDRINUSE, EADDRNOTAVAIL } },
	[C_BAD_CMD]		= { "unknown-ioctl", 0, { 0 } },
	[C_READ]		= { "read", 0, { 0 } },
	[C_POLL]		= { "poll", 0, { 0 } },
	[C_OPEN]		= { "open", 0, { 0 } },
	[C_CLOSE]		= { "close", 0, { 0 } },
};

/* Errnos a call's own arguments provoke. */
#define PROV_EFAULT	(1u << 0)
#define PROV_ENOTTY	(1u << 1)
#define PROV_E2BIG	(1u << 2)
#define PROV_EAGAIN	(1u << 3)
#define PROV_EOVERFLOW	(1u << 4)
#define PROV_EINVAL	(1u << 5)
#define PROV_EINTR	(1u << 6)
#define PROV_ENODEV	(1u << 7)
#define PROV_EBADF	(1u << 8)

static const struct {
	unsigned int bit;
	int err;
} provoked[] = {
	{ PROV_EFAULT, EFAULT }, { PROV_ENOTTY, ENOTTY }, { PROV_E2BIG, E2BIG },
	{ PROV_EAGAIN, EAGAIN }, { PROV_EOVERFLOW, EOVERFLOW }, { PROV_EINVAL, EINVAL },
	{ PROV_EINTR, EINTR }, { PROV_ENODEV, ENODEV }, { PROV_EBADF, EBADF },
};

/* What a CEP of ours is doing, as far as this process knows. */
enum role {
	R_IDLE = 1 << 0,
	R_LISTEN = 1 << 1,
	R_ACTIVE = 1 << 2,
	R_PASSIVE = 1 << 3,
	R_SIDR_ACTIVE = 1 << 4,
	R_SIDR_PASSIVE = 1 << 5,
	R_ANY = (1 << 6) - 1,
};

struct cep {
	uint32_t handle;
	uint8_t role;		/* enum role */
	uint8_t want;		/* enum call_id its last event asks for, or C_NONE */
	uint64_t ctx;		/* user_context its events must carry */
	uint64_t sid, mask;	/* a listener's service ID and mask (all ones for exact) */
	uint32_t events;	/* events read for it, for DESTROY's events_reported */
	uint32_t local_psn;	/* a claimed REQ's: the PSN its REP is to announce */
};

/*
 * One open /dev/cepm.  A file that was never open in another process is exact: this process
 * made every call on it, so its handles, contexts and event counts are known for sure.
 */
struct file {
	int fd;
	bool nonblock;
	bool monitor;		/* this process made it a monitor (only on exact files) */
	bool shared;		/* ever open in another process too */
	bool lost_reads;	/* a read faulted: events may have been taken unseen */
	int nceps, nstale, ndoubt;
	struct cep ceps[MAX_CEPS];
	uint32_t stale[MAX_STALE];
	uint32_t doubt[MAX_DOUBT];
	uint8_t seen[SEEN_HANDLES / 8];
};

struct child {
	pid_t pid;		/* 0: free */
	int slot;
	uint64_t budget;	/* calls it may make, taken from ours */
	uint64_t kill_at;	/* SIGKILL it once it has made this many calls; 0: never */
	char id[24];
};

/* This process. */
static struct {
	char id[24];		/* "2" for worker 2, "2.5" for its fifth child */
	int depth;
	int slot;		/* its entry in S->slot[] */
	uint64_t rng;
	uint64_t calls, budget;
	int nfiles;
	int worker;		/* index of the worker it is, or descends from */
	unsigned int nforked;
	bool failed;		/* a child failed: exit 1 at the end */
	struct file files[MAX_FILES];
	struct child kids[MAX_CHILDREN];
} P;

#define NSLOTS	(MAX_PROCS * (1 + MAX_CHILDREN) + 1)
#define MAIN_SLOT	(NSLOTS - 1)
#define ERRNO_SLOTS	136

/* Shared by every process of the run (MAP_SHARED): statistics and progress. */
struct shared {
	uint64_t calls;
	uint64_t count[NCALLS][ERRNO_SLOTS];	/* [call][0]: successes, [call][e]: errno e */
	uint64_t slowest_us[NCALLS];		/* the longest call of each kind (not blocking reads) */
	int32_t slowest_close_ceps;		/* the CEPs tracked in the slowest close's file, */
	int32_t slowest_close_shared;		/* and whether another process had it open too */
	struct {
		uint64_t calls;		/* calls begun by the process in this slot */
		int32_t call;		/* enum call_id of the last one begun */
		uint64_t began_us;	/* when it began (CLOCK_MONOTONIC) */
		uint64_t stuck_us;	/* how long it took, if the watchdog fired */
	} slot[NSLOTS];
};

static struct shared *S;

/* Options, and what every process inherits. */
static struct {
	uint64_t seed, calls;
	int procs, files;
	unsigned int time_scale;
	bool late_reads;	/* a blocking read starts after its timer's first expiry */
	bool verbose;
} opt = { 0, DEFAULT_CALLS, DEFAULT_PROCS, DEFAULT_FILES, 1, false, false };

/* Memory the calls point into: guard pages behind buffers, a read-only page, a hole. */
static struct {
	size_t page;
	uint8_t *arg, *arg_guard;
	uint8_t *ro;
	uint8_t *rbuf, *rbuf_guard;
	uint8_t *ports_guard;
	uint8_t *list_guard;
	uintptr_t hole;		/* munmap()ed: see hole() */
} M;

/* rxe0 port 1's RoCE v2 IPv4 GID: CONNECT and SIDR_REQ to it come back to this host. */
static struct {
	bool found;
	uint8_t gid[16];
	uint8_t index;
	uint8_t mac[6];
} G;

/* The watchdog.  Only volatile sig_atomic_t objects are touched by the handler. */
static volatile sig_atomic_t wd_may_block;	/* a blocking read: each expiry interrupts */
static volatile sig_atomic_t wd_is_main;

/* One ioctl as it is made. */
enum arg_kind { ARG_OK, ARG_BAD, ARG_STRADDLE, ARG_RO };

struct icall {
	enum call_id id;
	struct file *f;
	size_t len;		/* the struct's size */
	size_t size;		/* the size field of the command used */
	unsigned long cmd;	/* 0 until chosen */
	enum arg_kind kind;
	void *arg;
	unsigned int prov;	/* PROV_* */
	bool must_fail;		/* given something the ABI forbids */
	bool must_succeed;	/* well formed, on a CEP this process surely owns */
	const char *why;	/* what must make it fail */
	const char *note;	/* what else is unusual about it */
	int other_fd;		/* an fd a mutation opened for the call, or -1 */
	int ret, err;
	union {
		uint8_t b[ARG_ROOM];
		struct cepm_query query;
		struct cepm_create create;
		struct cepm_destroy destroy;
		struct cepm_listen listen;
		struct cepm_get_request get_request;
		struct cepm_reject reject;
		struct cepm_cep_info cep_info;
		struct cepm_private_data private_data;
		struct cepm_connect connect;
		struct cepm_accept accept;
		struct cepm_send_rep send_rep;
		struct cepm_send_pdata send_pdata;
		struct cepm_qp_attr qp_attr;
		struct cepm_prepare_mra prepare_mra;
		struct cepm_sidr_req sidr_req;
		struct cepm_sidr_rep sidr_rep;
		struct cepm_list list;
		struct cepm_establish establish;
		struct cepm_monitor monitor;
		struct cepm_migrate migrate;
		struct cepm_post_event post_event;
		struct cepm_bind bind;
	} u;
};

static struct icall IC;	/* one call at a time per process; too big for the stack */

/* ------------------------------------------------------------------------------------- */
/* PRNG: splitmix64 to seed, xorshift64* to draw.                                         */

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void seed_rng(uint64_t seed, uint64_t index)
{
	uint64_t x = seed ^ (index * 0xd1b54a32d192ed03ULL);

	P.rng = splitmix64(&x);
	if (!P.rng)	/* xorshift's one fixed point */
		P.rng = 1;
}

static uint64_t rnd64(void)
{
	uint64_t x = P.rng;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	P.rng = x;
	return x * 0x2545f4914f6cdd1dULL;
}

/* Uniform in [0, n), n >= 1 (0 gives 0). */
static uint32_t rnd(uint32_t n)
{
	return (uint32_t)(((rnd64() >> 32) * (uint64_t)n) >> 32);
}

static bool chance(unsigned int percent)
{
	return rnd(100) < percent;
}

static uint32_t nonzero32(void)
{
	return 1 + rnd(UINT32_MAX);
}

static uint8_t nonzero8(void)
{
	return 1 + rnd(255);
}

static void fill_random(void *p, size_t n)
{
	uint8_t *b = p;
	size_t i;

	for (i = 0; i < n; i++)
		b[i] = (uint8_t)rnd64();
}

/* ------------------------------------------------------------------------------------- */
/* Reporting.                                                                             */

static const char *errno_name(int e)
{
	switch (e) {
	case EINVAL: return "EINVAL";
	case E2BIG: return "E2BIG";
	case EFAULT: return "EFAULT";
	case EBUSY: return "EBUSY";
	case EAGAIN: return "EAGAIN";
	case ENOTTY: return "ENOTTY";
	case EOVERFLOW: return "EOVERFLOW";
	case EINTR: return "EINTR";
	case ENODEV: return "ENODEV";
	case ENOMEM: return "ENOMEM";
	case ENOENT: return "ENOENT";
	case EIO: return "EIO";
	case EBADF: return "EBADF";
	case EMFILE: return "EMFILE";
	case ENOTCONN: return "ENOTCONN";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	case ETIMEDOUT: return "ETIMEDOUT";
	case EPERM: return "EPERM";
	case EADDRINUSE: return "EADDRINUSE";
	case EADDRNOTAVAIL: return "EADDRNOTAVAIL";
	case EHOSTUNREACH: return "EHOSTUNREACH";
	case ENETUNREACH: return "ENETUNREACH";
	}
	return NULL;
}

static void kill_kids(void);

/* Ends this process after a failure: its children go too, so that none outlives the run. */
static void __attribute__((noreturn)) die(void)
{
	kill_kids();
	fflush(stdout);
	exit(1);
}

/* "ioctl_fuzz: FAIL seed S proc P call K: " and the message. */
static void __attribute__((format(printf, 1, 2))) fail_line(const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	printf("ioctl_fuzz: FAIL seed %" PRIu64 " proc %s call %" PRIu64 ": %s\n",
	       opt.seed, P.id, P.calls, msg);
}

static void hex_dump(const char *what, const uint8_t *b, size_t n)
{
	size_t i, shown = n > 1024 ? 1024 : n;

	printf("ioctl_fuzz:   %s (%zu bytes%s):", what, n, shown < n ? ", first 1024" : "");
	for (i = 0; i < shown; i++)
		printf("%s%02x", i % 32 ? " " : "\nioctl_fuzz:     ", b[i]);
	printf("\n");
}

/* The argument of a failed ioctl: the command, where it pointed, the bytes as built. */
static void dump_call(const struct icall *c)
{
	static const char *const kinds[] = { "ok", "bad pointer", "runs into a guard page",
					     "read-only page" };
	size_t n = c->size > c->len ? c->size : c->len;

	printf("ioctl_fuzz:   cmd %#lx (dir %lu nr %#lx size %lu), arg %p (%s), fd %d%s%s\n",
	       c->cmd, (unsigned long)_IOC_DIR(c->cmd), (unsigned long)_IOC_NR(c->cmd),
	       (unsigned long)_IOC_SIZE(c->cmd), c->arg, kinds[c->kind], c->f ? c->f->fd : -1,
	       c->f && c->f->shared ? ", shared file" : "",
	       c->f && c->f->monitor ? ", monitor" : "");
	if (c->why)
		printf("ioctl_fuzz:   mutation: %s\n", c->why);
	if (c->note)
		printf("ioctl_fuzz:   also: %s\n", c->note);
	hex_dump("struct", c->u.b, n);
}

/* A call failed with an errno the ABI does not allow it. */
static void __attribute__((noreturn)) fail_errno(const struct icall *c, const char *note)
{
	fail_line("%s returned errno %d (%s)%s%s", calls[c->id].name, c->err, strerror(c->err),
		  note ? ": " : "", note ? note : "");
	dump_call(c);
	die();
}

static void __attribute__((noreturn, format(printf, 2, 3)))
fail_call(const struct icall *c, const char *fmt, ...)
{
	char msg[384];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fail_line("%s %s", calls[c->id].name, msg);
	dump_call(c);
	die();
}

/* ------------------------------------------------------------------------------------- */
/* Watchdog and accounting.                                                               */

static uint64_t monotonic_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000 + t.tv_nsec / 1000;
}

/*
 * SIGALRM: a blocking read's timer expires every BLOCK_READ_US, and the expiry that meets it
 * blocked is the EINTR that ends it (no SA_RESTART).  Not the first one only: a process that
 * was not scheduled in time takes the first expiry before the read has begun (--late-reads
 * makes that happen).  Past the watchdog's time it fails like any other call.  The
 * handler runs when the call returns to us, so it notes how long the call took (clock_gettime
 * is async-signal-safe); the parent reads that and which call it was from the shared slot and
 * reports it (printf is not).
 */
static void on_alarm(int sig)
{
	static const char msg[] = "ioctl_fuzz: FAIL: a QUERY of the main process did not return "
				  "within the watchdog's time\n";

	uint64_t took = monotonic_us() - S->slot[P.slot].began_us;

	(void)sig;
	if (wd_may_block && took < (uint64_t)TIME_S(WATCHDOG_S) * 1000000)
		return;
	S->slot[P.slot].stuck_us = took;
	if (wd_is_main && write(STDOUT_FILENO, msg, sizeof(msg) - 1) < 0)
		_exit(1);
	_exit(wd_is_main ? 1 : EXIT_STUCK);
}

static void call_begin(enum call_id id, bool may_block)
{
	struct itimerval t = { { 0, 0 }, { 0, 0 } };

	P.calls++;
	S->slot[P.slot].calls = P.calls;
	S->slot[P.slot].call = id;
	S->slot[P.slot].began_us = monotonic_us();
	wd_may_block = may_block;
	if (may_block)
		t.it_value.tv_usec = t.it_interval.tv_usec = BLOCK_READ_US;
	else
		t.it_value.tv_sec = TIME_S(WATCHDOG_S);
	setitimer(ITIMER_REAL, &t, NULL);
}

/*
 * --late-reads: what a slow kernel does to a process now and then, deterministically: it is
 * not scheduled between arming its timer and entering the call, so the first expiry comes
 * before the call blocks.  (The sleep ends at that expiry.)
 */
static void late_start(void)
{
	struct timespec ts = { 0, 2 * BLOCK_READ_US * 1000 };

	nanosleep(&ts, NULL);
}

/* Ends the call begun; true if it is now the slowest of its kind. */
static bool call_end(void)
{
	static const struct itimerval off;
	int id = S->slot[P.slot].call;
	uint64_t took, seen;
	bool slowest = false;

	setitimer(ITIMER_REAL, &off, NULL);
	if (!wd_may_block) {
		took = monotonic_us() - S->slot[P.slot].began_us;
		seen = __atomic_load_n(&S->slowest_us[id], __ATOMIC_RELAXED);
		while (took > seen && !(slowest = __atomic_compare_exchange_n(&S->slowest_us[id],
									      &seen, took, true,
									      __ATOMIC_RELAXED,
									      __ATOMIC_RELAXED)))
			;
	}
	wd_may_block = 0;
	return slowest;
}

static void count(enum call_id id, int ret, int err)
{
	int slot = ret < 0 ? err : 0;

	if (slot < 0 || slot >= ERRNO_SLOTS)
		slot = ERRNO_SLOTS - 1;
	__atomic_fetch_add(&S->calls, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&S->count[id][slot], 1, __ATOMIC_RELAXED);
	if (opt.verbose)
		printf("ioctl_fuzz: proc %s call %" PRIu64 ": %s -> %s%s\n", P.id, P.calls,
		       calls[id].name, ret < 0 ? "errno " : "ok",
		       ret < 0 ? (errno_name(err) ? errno_name(err) : "?") : "");
}

static bool errno_allowed(enum call_id id, unsigned int prov, int err)
{
	const int *e;
	size_t i;

	for (e = calls[id].errnos; *e; e++)
		if (*e == err)
			return true;
	/* Documented for every ioctl (and open): the kernel may run out of memory. */
	if (err == ENOMEM && ((id >= C_QUERY && id <= C_BIND) || id == C_OPEN))
		return true;
	for (i = 0; i < sizeof(provoked) / sizeof(provoked[0]); i++)
		if ((prov & provoked[i].bit) && provoked[i].err == err)
			return true;
	return false;
}

/* ------------------------------------------------------------------------------------- */
/* Files and the CEPs this process knows of.                                              */

static struct cep *find_cep(struct file *f, uint32_t handle)
{
	int i;

	for (i = 0; i < f->nceps; i++)
		if (f->ceps[i].handle == handle)
			return &f->ceps[i];
	return NULL;
}

static bool in_list(const uint32_t *list, int n, uint32_t handle)
{
	int i;

	for (i = 0; i < n; i++)
		if (list[i] == handle)
			return true;
	return false;
}

static void push_list(uint32_t *list, int *n, int max, uint32_t handle)
{
	if (*n < max) {
		list[(*n)++] = handle;
		return;
	}
	list[rnd(max)] = handle;
}

/* A handle the kernel gave out on this file: it must never be given out again. */
static bool seen_before(struct file *f, uint32_t handle)
{
	uint8_t bit;

	if (handle >= SEEN_HANDLES)
		return false;
	bit = 1u << (handle % 8);
	if (f->seen[handle / 8] & bit)
		return true;
	f->seen[handle / 8] |= bit;
	return false;
}

static struct cep *add_cep(struct file *f, uint32_t handle, uint64_t ctx, uint8_t role)
{
	struct cep *c;

	if (f->nceps == MAX_CEPS)	/* callers make room first; stay safe anyway */
		return NULL;
	c = &f->ceps[f->nceps++];
	memset(c, 0, sizeof(*c));
	c->handle = handle;
	c->ctx = ctx;
	c->role = role;
	return c;
}

/* Forgets a CEP: stale (surely destroyed) or doubtful (the kernel did not say). */
static void drop_cep(struct file *f, uint32_t handle, bool doubtful)
{
	struct cep *c = find_cep(f, handle);

	if (!c)
		return;
	*c = f->ceps[--f->nceps];
	if (doubtful)
		push_list(f->doubt, &f->ndoubt, MAX_DOUBT, handle);
	else
		push_list(f->stale, &f->nstale, MAX_STALE, handle);
}

static struct file *random_file(void)
{
	return &P.files[rnd(P.nfiles)];
}

static uint32_t random_handle(void)
{
	switch (rnd(5)) {
	case 0:
		return 0;
	case 1:
		return UINT32_MAX;
	case 2:
		return 1 + rnd(64);
	case 3:
		return 1u << rnd(32);
	}
	return (uint32_t)rnd64();
}

/* A live CEP of f in one of roles, else any live one; NULL if f has none. */
static struct cep *pick_own(struct file *f, unsigned int roles)
{
	int i, start, n = f->nceps;

	if (!n)
		return NULL;
	start = rnd(n);
	for (i = 0; i < n; i++) {
		struct cep *c = &f->ceps[(start + i) % n];

		if (c->role & roles)
			return c;
	}
	return chance(50) ? &f->ceps[start] : NULL;
}

/*
 * The handle a call names: the target if reacting to an event; else mostly one of f's CEPs
 * in a fitting role, sometimes one of another file's (a stranger here, unless the numbers
 * happen to match), a destroyed one, or a made-up one.
 */
static uint32_t choose_handle(struct file *f, struct cep *target, unsigned int roles)
{
	unsigned int r = rnd(100);
	struct cep *c;

	if (target)
		return target->handle;
	if (r < 76 && (c = pick_own(f, roles)))
		return c->handle;
	if (r < 84) {
		struct file *o = random_file();

		if (o->nceps)
			return o->ceps[rnd(o->nceps)].handle;
	}
	if (r < 92 && f->nstale)
		return f->stale[rnd(f->nstale)];
	return random_handle();
}

/* ------------------------------------------------------------------------------------- */
/* Making an ioctl.                                                                       */

static struct icall *icall_new(enum call_id id, struct file *f)
{
	struct icall *c = &IC;

	memset(c, 0, sizeof(*c));
	c->id = id;
	c->f = f;
	c->len = _IOC_SIZE(calls[id].cmd);
	c->other_fd = -1;
	return c;
}

/* The call was given something the ABI forbids: it must fail (with one of prov, or EINVAL). */
static void definite(struct icall *c, unsigned int prov, const char *why)
{
	c->must_fail = true;
	c->must_succeed = false;
	c->prov |= prov;
	if (!c->why)
		c->why = why;
}

/* The call was given something unusual that the ABI does not pin down. */
static void maybe(struct icall *c, unsigned int prov, const char *what)
{
	c->must_succeed = false;
	c->prov |= prov;
	if (!c->note)
		c->note = what;
}

/*
 * Two pages that munmap() left unmapped.  Nothing maps memory after setup in a plain build,
 * but an allocator (or a sanitizer's) may reuse the range: mincore() says ENOMEM only for
 * unmapped memory, else a new hole is made.
 */
static uintptr_t hole(void)
{
	unsigned char vec[2];
	void *p;

	if (mincore((void *)M.hole, 2 * M.page, vec) && errno == ENOMEM)
		return M.hole;
	p = mmap(NULL, 2 * M.page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED || munmap(p, 2 * M.page)) {
		perror("ioctl_fuzz: making an unmapped hole");
		die();
	}
	M.hole = (uintptr_t)p;
	return M.hole;
}

static void *bad_pointer(void)
{
	switch (rnd(7)) {
	case 0:
		return NULL;
	case 1:
		return (void *)1;
	case 2:
		return (void *)hole();
	case 3:
		return (void *)(hole() + rnd(M.page));
	case 4:
		return M.arg_guard;		/* mapped, PROT_NONE */
	case 5:
		return (void *)0xffff880000000000UL;	/* the kernel's half */
	}
	return (void *)(uintptr_t)0x0000800000000000ULL;	/* just past user space */
}

static size_t grown_size(size_t len)
{
	unsigned int r = rnd(100);

	if (r < 70)
		return len + 8 * (1 + rnd(8));
	if (r < 95)
		return len + 1 + rnd(4096);
	return _IOC_SIZEMASK;
}

/*
 * The size in its first ABI version of call id's struct, len bytes now: GET_REQUEST's grew by
 * local_psn (6), CONNECT's, PREPARE_REP's and GET_PRIVATE_DATA's by their ECE fields (7).
 */
static size_t first_size(enum call_id id, size_t len)
{
	switch (id) {
	case C_GET_REQUEST:
		return offsetof(struct cepm_get_request, local_psn);
	case C_CONNECT:
		return offsetof(struct cepm_connect, ece_vendor_id);
	case C_PREPARE_REP:
		return offsetof(struct cepm_accept, ece_vendor_id);
	case C_GET_PRIVATE_DATA:
		return offsetof(struct cepm_private_data, ece_vendor_id);
	case C_LISTEN:
		return offsetof(struct cepm_listen, addr);
	default:
		return len;
	}
}

/* first_size of call c. */
static size_t first_len(const struct icall *c)
{
	return first_size(c->id, c->len);
}

/* Mutations of the command and the argument pointer, common to every ioctl. */
static void mutate_frame(struct icall *c)
{
	unsigned long cmd = calls[c->id].cmd;
	unsigned int dir = _IOC_DIR(cmd), r = rnd(1000);

	c->size = c->len;
	c->kind = ARG_OK;
	if (r < 30) {
		c->size = grown_size(c->len);	/* a newer header: zero tail, served */
	} else if (r < 50) {
		c->size = grown_size(c->len);
		c->u.b[c->len + rnd(c->size - c->len)] = nonzero8();
		definite(c, PROV_E2BIG, "non-zero bytes past the struct");
	} else if (r < 65) {
		c->size = rnd(first_len(c));
		definite(c, PROV_ENOTTY, "a struct shorter than its first version");
	} else if (r < 75) {
		dir = (dir + 1 + rnd(3)) % 4;
		definite(c, PROV_ENOTTY, "the wrong direction");
	} else if (r < 95) {
		c->kind = ARG_BAD;
		definite(c, PROV_EFAULT, "an argument pointer the kernel cannot read");
	} else if (r < 105) {
		c->kind = ARG_STRADDLE;
		definite(c, PROV_EFAULT, "an argument that runs into an unmapped page");
	} else if (r < 125 && c->len <= M.page) {
		c->kind = ARG_RO;
		/* Only a call that writes its struct back notices. */
		if (dir & _IOC_READ)
			definite(c, PROV_EFAULT, "a read-only argument the call writes back");
	}
	c->cmd = _IOC(dir, _IOC_TYPE(cmd), _IOC_NR(cmd), c->size);
}

static void set_ro(int prot)
{
	if (mprotect(M.ro, M.page, prot)) {
		perror("ioctl_fuzz: mprotect");
		die();
	}
}

/* Puts the struct where the argument points. */
static void place(struct icall *c)
{
	size_t keep;

	switch (c->kind) {
	case ARG_OK:	/* followed by a pattern the kernel must leave alone */
		c->arg = M.arg;
		memcpy(M.arg, c->u.b, c->size);
		memset(M.arg + c->size, PATTERN, TAIL_CHECK);
		break;
	case ARG_STRADDLE:
		keep = rnd(c->size);
		c->arg = M.arg_guard - keep;
		memcpy(c->arg, c->u.b, keep);
		break;
	case ARG_RO:
		set_ro(PROT_READ | PROT_WRITE);
		memcpy(M.ro, c->u.b, c->size);
		set_ro(PROT_READ);
		c->arg = M.ro;
		break;
	case ARG_BAD:
		c->arg = bad_pointer();
		break;
	}
}

static bool tail_intact(const struct icall *c)
{
	size_t i;

	for (i = 0; i < TAIL_CHECK; i++)
		if (M.arg[c->size + i] != PATTERN)
			return false;
	return true;
}

/* Checks a finished ioctl against the ABI; fails the process if it broke it. */
static void judge(struct icall *c)
{
	if (c->ret != 0 && c->ret != -1)
		fail_call(c, "returned %d, neither 0 nor -1", c->ret);
	if (c->kind == ARG_OK && !tail_intact(c))
		fail_call(c, "wrote past the %zu bytes its command says the struct has", c->size);
	if (c->prov & PROV_ENOTTY) {
		/* Not a command of cepm's: nothing may be read, done or written. */
		if (c->ret == 0)
			fail_call(c, "succeeded despite %s", c->why);
		if (c->err != ENOTTY)
			fail_errno(c, "expected ENOTTY, the command is not cepm's");
		if (c->kind == ARG_OK && memcmp(M.arg, c->u.b, c->size))
			fail_call(c, "changed its argument although the command is not cepm's");
		return;
	}
	if (c->kind == ARG_BAD || c->kind == ARG_STRADDLE) {
		if (c->ret == 0)
			fail_call(c, "succeeded despite %s", c->why);
		if (c->err != EFAULT)
			fail_errno(c, "expected EFAULT, the argument cannot be read");
		return;
	}
	if (c->ret == 0) {
		if (c->must_fail)
			fail_call(c, "succeeded despite %s", c->why);
		return;
	}
	if (c->must_succeed)
		fail_errno(c, "a well-formed call that docs/abi.md lets fail in no way");
	if (!errno_allowed(c->id, c->prov, c->err))
		fail_errno(c, "not an errno docs/abi.md documents for this call");
}

/* Makes the ioctl (mutating its frame unless the command is chosen); 0 or the errno. */
static int run(struct icall *c)
{
	if (!c->cmd)
		mutate_frame(c);
	place(c);
	call_begin(c->id, false);
	c->ret = ioctl(c->f->fd, c->cmd, c->arg);
	c->err = c->ret < 0 ? errno : 0;
	call_end();
	count(c->id, c->ret, c->err);
	judge(c);
	if (c->other_fd >= 0)
		close(c->other_fd);
	return c->ret ? c->err : 0;
}

/* The struct as the kernel left it (only after a success, when the argument was ours). */
static void result(const struct icall *c, void *out, size_t len)
{
	memcpy(out, c->kind == ARG_RO ? M.ro : M.arg, len);
}

/* ------------------------------------------------------------------------------------- */
/* Building blocks of arguments.                                                          */

static uint64_t pick_service(bool sidr)
{
	unsigned int r = rnd(100);

	if (r < 8)
		return rnd64();
	if (r < 12)	/* the other kind's: a REQ to a SIDR listener, or the reverse */
		sidr = !sidr;
	if (sidr)
		return SVC_SIDR | (SVC_PORT + rnd(N_SVC_SIDR));
	return SVC_CONN | (SVC_PORT + rnd(N_SVC_CONN));
}

static uint64_t pick_mask(void)
{
	unsigned int r = rnd(100);

	if (r < 75)
		return 0;		/* exact */
	if (r < 85)
		return ~0xffULL;	/* the whole set */
	if (r < 90)
		return ~0ULL;		/* exact, spelt out */
	if (r < 95)
		return 1ULL << rnd(64);
	return rnd64();
}

static uint32_t qpn24(void)
{
	return 1 + rnd(0xffffff);
}

static uint8_t pdata_len(unsigned int max)
{
	if (chance(15))
		return max;	/* at the limit: legal */
	return rnd(max + 1);
}

/* A length over its limit, at most the u8 field's 255. */
static uint8_t over(unsigned int max)
{
	return max + 1 + rnd(255 - max);
}

static void good_path(struct cepm_path_rec *p)
{
	memset(p, 0, sizeof(*p));
	if (G.found && chance(92)) {
		memcpy(p->dgid, G.gid, 16);
	} else {
		/*
		 * Nobody there: 10.77.0.98, the runner's silent peer (selftests/baseline.sh),
		 * whose fixed neighbour entry takes the request, which goes unanswered; now and
		 * then 10.77.0.97, which no neighbour entry resolves (a second's wait, then
		 * EHOSTUNREACH).
		 */
		static const uint8_t nobody[16] = { [10] = 0xff, [11] = 0xff, 10, 77, 0, 98 };

		memcpy(p->dgid, nobody, 16);
		if (chance(10))
			p->dgid[15] = 97;
	}
	memcpy(p->dmac, G.mac, 6);
	p->sgid_index = G.index;
	p->hop_limit = chance(90) ? 64 : (uint8_t)rnd(256);
	p->flow_label = rnd(1u << 20);
	p->traffic_class = chance(80) ? 0 : (uint8_t)rnd(256);
	p->sl = rnd(16);
	p->mtu = chance(80) ? 3 : 1 + rnd(5);
	p->packet_life_time = rnd(15);	/* short retries and timewait */
	p->pkey = chance(70) ? 0 : chance(70) ? 0xffff : (uint16_t)rnd(65536);
}

/* ------------------------------------------------------------------------------------- */
/* Mutations.                                                                             */

/*
 * Each ioctl has a table of what may be wrong with its struct, and mutate() applies one entry
 * of it to a call now and then.  An entry changes up to MAX_CHANGES fields, or applies one
 * entry of a nested table to a field that is itself a struct (a path); it says whether the
 * ABI forbids the result (the call must fail) or leaves it open, and which errnos it may
 * provoke.  Every change draws from the PRNG in a fixed order, so that a seed replays the
 * same mutations.
 */

/* How a change makes its value. */
enum gen {
	G_NONE,		/* no value: an entry's unused change, or a change without alt */
	G_CONST,	/* a */
	G_RANGE,	/* a + rnd(b): one of [a, a + b) */
	G_RAND,		/* rnd64() | a, cut to the field's size */
	G_BIT,		/* a << rnd(b) */
	G_PAST,		/* bound + 1 + rnd(a): past the room the call has (mutate()'s bound) */
	G_OVER,		/* over(bound): a u8 length over the call's limit (mutate()'s bound) */
	G_BAD_POINTER,	/* bad_pointer() */
	G_BYTES,	/* random bytes over the whole field */
	G_DEVICE,	/* a device name other than rxe0's, or one with no NUL at all */
	G_PORT,		/* rxe0's port half the time, else a made-up one */
	G_OTHER_SGID,	/* a source GID index the port does not have */
	G_OTHER_FD,	/* an open fd of a file that is not /dev/cepm (closed after the call) */
};

struct gen_value {
	uint8_t gen;	/* enum gen */
	uint64_t a, b;
};

enum change_mode { CH_SET, CH_OR, CH_CLEAR };

/* One field's change: to v, or with alt, chance(50) ? v : alt. */
struct change {
	uint16_t off;		/* the field's offset in the struct */
	uint16_t size;		/* its size, or one element's */
	uint16_t count;		/* its elements: if more than one, one chosen at random changes */
	uint8_t mode;		/* enum change_mode: the value replaces, is or-ed in, or cleared */
	struct gen_value v, alt;
};

#define MAX_CHANGES	4

struct mutations;

struct mutation {
	const char *why;		/* for definite() or maybe() */
	bool must_fail;			/* the ABI forbids it: definite(), else maybe() */
	unsigned int prov;		/* PROV_*: what it may provoke besides EINVAL */
	struct change change[MAX_CHANGES];	/* in order; the first with size 0 ends them */
	const struct mutations *nested;	/* instead: one of these, in change[0]'s field */
};

struct mutations {
	const struct mutation *m;
	unsigned int n;
};

#define TABLE(a)	{ a, sizeof(a) / sizeof((a)[0]) }

/* Fields of struct T. */
#define FIELD(T, f)	.off = offsetof(T, f), .size = sizeof(((T *)0)->f), .count = 1
#define ELEMENT(T, f)	.off = offsetof(T, f), .size = sizeof(((T *)0)->f[0]), \
			.count = sizeof(((T *)0)->f) / sizeof(((T *)0)->f[0])
#define FROM_TO(T, from, to)	.off = offsetof(T, from), \
				.size = offsetof(T, to) - offsetof(T, from), .count = 1

/* Changes. */
#define SET(T, f, val)		{ FIELD(T, f), .mode = CH_SET, .v = val }
#define EITHER(T, f, val, other) { FIELD(T, f), .mode = CH_SET, .v = val, .alt = other }
#define SET_ONE_OF(T, f, val)	{ ELEMENT(T, f), .mode = CH_SET, .v = val }
#define OR_IN(T, f, val)	{ FIELD(T, f), .mode = CH_OR, .v = val }
#define CLEAR(T, f, val)	{ FIELD(T, f), .mode = CH_CLEAR, .v = val }
#define FILL(T, f)		{ FIELD(T, f), .mode = CH_SET, .v = GEN(G_BYTES) }
/* The fields from `from` up to, not including, `to`. */
#define FILL_FROM_TO(T, from, to) { FROM_TO(T, from, to), .mode = CH_SET, .v = GEN(G_BYTES) }

/* Values. */
#define GEN(g)		{ g, 0, 0 }
#define CONST(x)	{ G_CONST, (uint64_t)(x), 0 }
#define RANGE(lo, n)	{ G_RANGE, (lo), (n) }
#define RAND(bits)	{ G_RAND, (bits), 0 }
#define BIT(base, n)	{ G_BIT, (base), (n) }
#define PAST(n)		{ G_PAST, (n), 0 }
#define NONZERO8	RANGE(1, UINT8_MAX)
#define NONZERO16	RANGE(1, UINT16_MAX)
#define NONZERO32	RANGE(1, UINT32_MAX)
/* A u8 length over max: over(max). */
#define OVER(max)	RANGE((max) + 1, 255 - (max))

/* Entries. */
#define MUST_FAIL(prov, why, ...)	{ why, true, prov, { __VA_ARGS__ }, NULL }
#define MAY_FAIL(prov, why, ...)	{ why, false, prov, { __VA_ARGS__ }, NULL }
#define NESTED(T, f, table)		{ NULL, false, 0, { { FIELD(T, f) } }, &table }

/* One thing wrong with a path, as the header lists them: EINVAL. */
static const struct mutation path_mutation[] = {
	MUST_FAIL(0, "a path MTU outside 1..5",
		  EITHER(struct cepm_path_rec, mtu, CONST(0), RANGE(6, 250))),
	MUST_FAIL(0, "a flow label of 2^20 or more",
		  SET(struct cepm_path_rec, flow_label, RANGE(1u << 20, UINT32_MAX - (1u << 20)))),
	MUST_FAIL(0, "an SL of 16 or more", SET(struct cepm_path_rec, sl, RANGE(16, 240))),
	MUST_FAIL(0, "a packet lifetime of 32 or more",
		  SET(struct cepm_path_rec, packet_life_time, RANGE(32, 224))),
	MUST_FAIL(0, "a non-zero reserved byte in the path",
		  SET_ONE_OF(struct cepm_path_rec, reserved, NONZERO8)),
	MUST_FAIL(0, "a source GID index the port does not have",
		  SET(struct cepm_path_rec, sgid_index, GEN(G_OTHER_SGID))),
};
static const struct mutations path_mutations = TABLE(path_mutation);

static uint64_t load(const uint8_t *field, size_t size)
{
	uint8_t u8;
	uint16_t u16;
	uint32_t u32;
	uint64_t u64;

	switch (size) {
	case 1: memcpy(&u8, field, 1); return u8;
	case 2: memcpy(&u16, field, 2); return u16;
	case 4: memcpy(&u32, field, 4); return u32;
	}
	memcpy(&u64, field, 8);
	return u64;
}

static void store(uint8_t *field, size_t size, uint64_t x)
{
	uint8_t u8 = x;
	uint16_t u16 = x;
	uint32_t u32 = x;

	switch (size) {
	case 1: memcpy(field, &u8, 1); return;
	case 2: memcpy(field, &u16, 2); return;
	case 4: memcpy(field, &u32, 4); return;
	}
	memcpy(field, &x, 8);
}

/* A value for a scalar field. */
static uint64_t make_value(struct icall *c, const struct gen_value *v, uint32_t bound)
{
	int fd;

	switch (v->gen) {
	case G_RANGE:
		return v->a + rnd(v->b);
	case G_RAND:
		return rnd64() | v->a;
	case G_BIT:
		return v->a << rnd(v->b);
	case G_PAST:
		return bound + 1 + rnd(v->a);
	case G_OVER:
		return over(bound);
	case G_BAD_POINTER:
		return (uintptr_t)bad_pointer();
	case G_PORT:	/* rxe1 port 1 may well be managed too */
		return chance(50) ? RXE_PORT : rnd(4) == 0 ? rnd64() : rnd(4);
	case G_OTHER_SGID:
		return G.index == 255 ? 254 : 255;
	case G_OTHER_FD:
		fd = open("/dev/null", O_RDONLY);
		c->other_fd = fd;
		if (fd < 0)
			c->prov |= PROV_EBADF;
		return (uint32_t)fd;
	}
	return v->a;	/* G_CONST */
}

/* A device name other than rxe0's (or rxe0's own, on another port), or none. */
static void other_device(char *name)
{
	static const char *const names[] = { "rxe1", "rxe9", "", "mlx5_0", RXE_DEV };

	memset(name, 0, CEPM_DEVICE_NAME_MAX);
	if (chance(20)) {	/* no NUL at all */
		memset(name, 'x', CEPM_DEVICE_NAME_MAX);
	} else {
		strcpy(name, names[rnd(5)]);
	}
}

static void apply_change(struct icall *c, uint8_t *base, const struct change *ch, uint32_t bound)
{
	const struct gen_value *v = &ch->v;
	uint8_t *field = base + ch->off;
	uint64_t x;

	if (ch->alt.gen != G_NONE && !chance(50))
		v = &ch->alt;
	if (ch->count > 1)
		field += ch->size * rnd(ch->count);
	switch (v->gen) {
	case G_BYTES:
		fill_random(field, ch->size);
		return;
	case G_DEVICE:
		other_device((char *)field);
		return;
	}
	x = make_value(c, v, bound);
	if (ch->mode == CH_OR)
		x |= load(field, ch->size);
	else if (ch->mode == CH_CLEAR)
		x = load(field, ch->size) & ~x;
	store(field, ch->size, x);
}

/* Applies one entry of table, the seed's choice, to c's struct at offset base. */
static void mutate_at(struct icall *c, const struct mutations *table, size_t base, uint32_t bound)
{
	const struct mutation *m = &table->m[table->n > 1 ? rnd(table->n) : 0];
	unsigned int i;

	if (m->nested) {
		mutate_at(c, m->nested, base + m->change[0].off, bound);
		return;
	}
	for (i = 0; i < MAX_CHANGES && m->change[i].size; i++)
		apply_change(c, c->u.b + base, &m->change[i], bound);
	if (m->must_fail)
		definite(c, m->prov, m->why);
	else
		maybe(c, m->prov, m->why);
}

/*
 * MUT_PCT calls in 100 get one entry of table.  bound is what G_PAST and G_OVER count from:
 * the room the call's array has, or the limit of its length field.
 */
static void mutate(struct icall *c, const struct mutations *table, uint32_t bound)
{
	if (chance(MUT_PCT))
		mutate_at(c, table, 0, bound);
}

/* ------------------------------------------------------------------------------------- */
/* The ioctls.  Each builds its struct, mutates one field now and then, runs, and learns. */

static void check_ports(struct icall *c, const struct cepm_query *q, uint8_t *ports,
			unsigned int room)
{
	unsigned int i, filled = q->num_ports < q->port_capacity ? q->num_ports : q->port_capacity;
	struct cepm_port_info pi;

	if (q->abi_version != CEPM_ABI_VERSION)
		fail_call(c, "says ABI version %u, the header %u", q->abi_version,
			  CEPM_ABI_VERSION);
	if (q->num_ports < 1)
		fail_call(c, "says no port is managed; rxe0 port 1 is");
	if (q->ports != (uintptr_t)ports || filled > room)
		return;
	for (i = 0; i < filled; i++) {
		memcpy(&pi, ports + i * sizeof(pi), sizeof(pi));
		if (!memchr(pi.dev_name, 0, sizeof(pi.dev_name)) || !pi.port_num)
			fail_call(c, "filled port entry %u with no NUL-terminated name or port", i);
	}
	for (i = 0; filled < room && i < sizeof(pi); i++)
		if (ports[filled * sizeof(pi) + i] != PATTERN)
			fail_call(c, "wrote port entry %u past min(num_ports, capacity)", filled);
}

static const struct mutation query_mutation[] = {
	MUST_FAIL(0, "reserved != 0", SET(struct cepm_query, reserved, NONZERO32)),
	MUST_FAIL(0, "reserved2 != 0", SET(struct cepm_query, reserved2, NONZERO32)),
	/* rxe0 is managed: there is a port to write */
	MUST_FAIL(PROV_EFAULT, "a ports pointer the kernel cannot write",
		  SET(struct cepm_query, ports, GEN(G_BAD_POINTER)),
		  SET(struct cepm_query, port_capacity, RANGE(1, 8))),
	/* only num_ports entries are written: fits unless room is short */
	MAY_FAIL(PROV_EFAULT, "port_capacity past the ports array",
		 EITHER(struct cepm_query, port_capacity, CONST(UINT32_MAX), PAST(1000))),
	/* the count only, with a pointer that must not be used */
	MAY_FAIL(PROV_EFAULT, "a bad ports pointer with port_capacity 0",
		 SET(struct cepm_query, port_capacity, CONST(0)),
		 SET(struct cepm_query, ports, GEN(G_BAD_POINTER))),
	/* output fields hold garbage on input */
	MAY_FAIL(0, "garbage in output fields",
		 SET(struct cepm_query, abi_version, NONZERO32),
		 SET(struct cepm_query, num_ports, NONZERO32),
		 SET(struct cepm_query, num_ceps, NONZERO32)),
};
static const struct mutations query_mutations = TABLE(query_mutation);

static void op_query(struct file *f)
{
	struct icall *c = icall_new(C_QUERY, f);
	struct cepm_query *q = &c->u.query, out;
	unsigned int room = rnd(PORTS_ROOM + 1);
	uint8_t *ports = M.ports_guard - room * sizeof(struct cepm_port_info);

	q->port_capacity = chance(20) ? 0 : room;
	q->ports = q->port_capacity || chance(50) ? (uintptr_t)ports : 0;
	c->must_succeed = true;
	mutate(c, &query_mutations, room);
	memset(ports, PATTERN, room * sizeof(struct cepm_port_info));
	if (run(c))
		return;
	result(c, &out, sizeof(out));
	check_ports(c, &out, ports, room);
}

static void new_handle_checks(struct icall *c, uint32_t handle)
{
	if (!handle)
		fail_call(c, "succeeded with handle 0");
	if (seen_before(c->f, handle))
		fail_call(c, "gave out handle %u again on the same open file", handle);
}

static void op_destroy(struct file *f, struct cep *t);

static const struct mutation create_mutation[] = {
	MUST_FAIL(0, "reserved != 0", SET(struct cepm_create, reserved, NONZERO32)),
	MAY_FAIL(0, "garbage in the output field handle", SET(struct cepm_create, handle, NONZERO32)),
};
static const struct mutations create_mutations = TABLE(create_mutation);

static void op_create(struct file *f)
{
	struct icall *c;
	struct cepm_create out;

	if (f->nceps == MAX_CEPS) {	/* no room to track another */
		op_destroy(f, NULL);
		return;
	}
	c = icall_new(C_CREATE, f);
	c->u.create.user_context = rnd64();
	c->must_succeed = !f->shared && !f->monitor;
	if (f->monitor && !f->shared)
		definite(c, 0, "a CEP on a monitor");
	mutate(c, &create_mutations, 0);
	if (run(c))
		return;
	result(c, &out, sizeof(out));
	new_handle_checks(c, out.handle);
	add_cep(f, out.handle, c->u.create.user_context, R_IDLE);
}

static const struct mutation destroy_mutation[] = {
	MAY_FAIL(0, "garbage in the output field events_reported",
		 SET(struct cepm_destroy, events_reported, NONZERO32)),
};
static const struct mutations destroy_mutations = TABLE(destroy_mutation);

static void op_destroy(struct file *f, struct cep *t)
{
	struct icall *c = icall_new(C_DESTROY, f);
	uint32_t h = choose_handle(f, t, R_ANY);
	struct cep *mine = find_cep(f, h);
	uint32_t read_events = mine ? mine->events : 0;
	struct cepm_destroy out;
	int err;

	c->u.destroy.handle = h;
	c->must_succeed = mine && !f->shared;
	mutate(c, &destroy_mutations, 0);
	err = run(c);
	if (err == EFAULT && c->kind == ARG_RO) {
		drop_cep(f, h, true);	/* read, perhaps destroyed, not written back */
		return;
	}
	if (err)
		return;
	result(c, &out, sizeof(out));
	if (mine && !f->shared && !f->lost_reads && out.events_reported != read_events)
		fail_call(c, "reported %u events read for handle %u; this process read %u",
			  out.events_reported, h, read_events);
	if (mine)
		drop_cep(f, h, false);
}

static const struct mutation listen_mutation[] = {
	MUST_FAIL(0, "reserved != 0", SET(struct cepm_listen, reserved, NONZERO32)),
};
static const struct mutations listen_mutations = TABLE(listen_mutation);

static void op_listen(struct file *f, struct cep *t)
{
	struct icall *c = icall_new(C_LISTEN, f);
	struct cepm_listen *l = &c->u.listen;
	struct cep *mine;

	l->handle = choose_handle(f, t, R_IDLE);
	l->service_id = pick_service(chance(30));
	l->service_mask = pick_mask();
	mutate(c, &listen_mutations, 0);
	if (run(c))
		return;
	mine = find_cep(f, l->handle);
	if (mine) {
		mine->role = R_LISTEN;
		mine->sid = l->service_id;
		mine->mask = l->service_mask ? l->service_mask : ~0ULL;
	}
}

/* What a freshly claimed request asks for next. */
static uint8_t next_for_request(bool sidr)
{
	unsigned int r = rnd(100);

	if (sidr)
		return r < 80 ? C_SIDR_REP : r < 90 ? C_DESTROY : C_GET_PRIVATE_DATA;
	if (r < 60)
		return C_PREPARE_REP;
	if (r < 75)
		return C_REJECT;
	if (r < 90)
		return C_PREPARE_MRA;
	return C_GET_PRIVATE_DATA;
}

static void check_request(struct icall *c, const struct cepm_get_request *g,
			  const struct cep *listener)
{
	const struct cepm_req_info *r = &g->req;

	if (r->sidr > 1)
		fail_call(c, "returned req.sidr = %u", r->sidr);
	if (!memchr(r->dev_name, 0, sizeof(r->dev_name)))
		fail_call(c, "returned a device name without NUL");
	if (g->local_psn >> 24 || (r->sidr && g->local_psn))
		fail_call(c, "returned local_psn %#x for a %s", g->local_psn,
			  r->sidr ? "SIDR_REQ (0 expected)" : "REQ (24 bits expected)");
	if (r->flow_control > 1 || (r->sidr && r->flow_control))
		fail_call(c, "returned flow_control %u for a %s", r->flow_control,
			  r->sidr ? "SIDR_REQ (0 expected)" : "REQ (0 or 1 expected)");
	if (!r->sidr && r->pdata_len != CEPM_REQ_PDATA_MAX)
		fail_call(c, "returned pdata_len %u; a REQ's is always %u", r->pdata_len,
			  CEPM_REQ_PDATA_MAX);
	if (listener && listener->role == R_LISTEN && !c->f->shared &&
	    (r->service_id & listener->mask) != (listener->sid & listener->mask))
		fail_call(c, "handed out service ID %#llx to a listener on %#llx mask %#llx",
			  (unsigned long long)r->service_id, (unsigned long long)listener->sid,
			  (unsigned long long)listener->mask);
}

static const struct mutation get_request_mutation[] = {
	MAY_FAIL(0, "garbage in output fields handle or req",
		 SET(struct cepm_get_request, handle, NONZERO32)),
	MAY_FAIL(0, "garbage in output fields handle or req", FILL(struct cepm_get_request, req)),
	MUST_FAIL(0, "local_psn != 0", SET(struct cepm_get_request, local_psn, NONZERO32)),
	MUST_FAIL(0, "reserved != 0", SET(struct cepm_get_request, reserved, NONZERO32)),
	MUST_FAIL(0, "garbage in output field path", FILL(struct cepm_get_request, path)),
	MUST_FAIL(0, "reserved2 != 0", SET_ONE_OF(struct cepm_get_request, reserved2, NONZERO8)),
};
static const struct mutations get_request_mutations = TABLE(get_request_mutation);

static void op_get_request(struct file *f, struct cep *t)
{
	struct cepm_get_request *g, out;
	struct cep *listener, *claimed;
	struct icall *c;
	bool sidr;

	if (f->nceps == MAX_CEPS) {	/* no room to track what it would claim */
		op_destroy(f, NULL);
		return;
	}
	c = icall_new(C_GET_REQUEST, f);
	g = &c->u.get_request;
	g->listen_handle = choose_handle(f, t, R_LISTEN);
	g->user_context = rnd64();
	mutate(c, &get_request_mutations, 0);
	if (run(c))
		return;
	result(c, &out, sizeof(out));
	listener = find_cep(f, g->listen_handle);
	new_handle_checks(c, out.handle);
	check_request(c, &out, listener);
	sidr = out.req.sidr;
	if (listener && chance(50))
		listener->want = C_GET_REQUEST;	/* there may be more */
	claimed = add_cep(f, out.handle, g->user_context, sidr ? R_SIDR_PASSIVE : R_PASSIVE);
	if (claimed) {
		claimed->want = next_for_request(sidr);
		claimed->local_psn = out.local_psn;
	}
}

/* The header says only "<= CEPM_REJ_ARI_MAX" for ari_len: EINVAL or E2BIG. */
static const struct mutation reject_mutation[] = {
	MUST_FAIL(PROV_E2BIG, "ari_len over CEPM_REJ_ARI_MAX",
		  SET(struct cepm_reject, ari_len, OVER(CEPM_REJ_ARI_MAX))),
	MUST_FAIL(PROV_E2BIG, "pdata_len over CEPM_REJ_PDATA_MAX",
		  SET(struct cepm_reject, pdata_len, OVER(CEPM_REJ_PDATA_MAX))),
};
static const struct mutations reject_mutations = TABLE(reject_mutation);

static void op_reject(struct file *f, struct cep *t)
{
	static const uint16_t reasons[] = { CEPM_REJ_CONSUMER_DEFINED, CEPM_REJ_TIMEOUT,
					    CEPM_REJ_INVALID_SERVICE_ID, CEPM_REJ_STALE_CONN };
	struct icall *c = icall_new(C_REJECT, f);
	struct cepm_reject *r = &c->u.reject;
	struct cep *mine;

	r->handle = choose_handle(f, t, R_PASSIVE | R_ACTIVE);
	r->reason = chance(90) ? reasons[rnd(4)] : (uint16_t)rnd(65536);
	r->ari_len = pdata_len(CEPM_REJ_ARI_MAX);
	r->pdata_len = pdata_len(CEPM_REJ_PDATA_MAX);
	fill_random(r->ari, sizeof(r->ari));
	fill_random(r->pdata, sizeof(r->pdata));
	mutate(c, &reject_mutations, 0);
	if (run(c))
		return;
	mine = find_cep(f, r->handle);
	if (mine) {
		mine->role = R_IDLE;
		mine->want = chance(50) ? C_DESTROY : C_NONE;
	}
}

static const struct mutation query_cep_mutation[] = {
	MUST_FAIL(0, "reserved != 0", SET(struct cepm_cep_info, reserved, NONZERO32)),
	MUST_FAIL(0, "reserved2 != 0", SET(struct cepm_cep_info, reserved2, NONZERO32)),
	/* output fields hold garbage on input */
	MAY_FAIL(0, "garbage in output fields", FILL_FROM_TO(struct cepm_cep_info, state, reserved)),
};
static const struct mutations query_cep_mutations = TABLE(query_cep_mutation);

static void op_query_cep(struct file *f, struct cep *t)
{
	struct icall *c = icall_new(C_QUERY_CEP, f);
	struct cepm_cep_info *q = &c->u.cep_info, out;
	struct cep *mine;

	q->handle = choose_handle(f, t, R_ANY);
	mine = find_cep(f, q->handle);
	c->must_succeed = mine && !f->shared;
	mutate(c, &query_cep_mutations, 0);
	if (run(c))
		return;
	result(c, &out, sizeof(out));
	if (out.state > CEPM_STATE_DESTROYED)
		fail_call(c, "returned state %u", out.state);
	if (mine && !f->shared && out.user_context != mine->ctx)
		fail_call(c, "returned user_context %#llx for handle %u, set to %#llx",
			  (unsigned long long)out.user_context, q->handle,
			  (unsigned long long)mine->ctx);
}

static const struct mutation get_private_data_mutation[] = {
	MUST_FAIL(0, "reserved != 0", SET(struct cepm_private_data, reserved, NONZERO8)),
	MUST_FAIL(0, "ece_vendor_id != 0", SET(struct cepm_private_data, ece_vendor_id, NONZERO32)),
	MUST_FAIL(0, "ece_attr_mod != 0", SET(struct cepm_private_data, ece_attr_mod, NONZERO32)),
	MUST_FAIL(0, "garbage in output field peer", FILL(struct cepm_private_data, peer)),
	MAY_FAIL(0, "garbage in output fields",
		 SET(struct cepm_private_data, attr_id, RANGE(0, 65536)),
		 SET(struct cepm_private_data, len, RANGE(0, 256)),
		 FILL(struct cepm_private_data, data)),
};
static const struct mutations get_private_data_mutations = TABLE(get_private_data_mutation);

static void op_get_private_data(struct file *f, struct cep *t)
{
	struct icall *c = icall_new(C_GET_PRIVATE_DATA, f);
	struct cepm_private_data *p = &c->u.private_data, out;

	p->handle = choose_handle(f, t, R_ANY);
	c->must_succeed = find_cep(f, p->handle) && !f->shared;
	mutate(c, &get_private_data_mutations, 0);
	if (run(c))
		return;
	result(c, &out, sizeof(out));
	if (out.len > CEPM_PDATA_MAX)
		fail_call(c, "returned len %u over CEPM_PDATA_MAX", out.len);
	if (out.attr_id && (out.attr_id < CM_ATTR_REQ || out.attr_id > CM_ATTR_APR))
		fail_call(c, "returned attr_id %#x, no CM message", out.attr_id);
	if (!out.attr_id && out.len)
		fail_call(c, "returned len %u with no message received", out.len);
	if (out.ece_vendor_id >> 24)
		fail_call(c, "returned ece_vendor_id %#x, over 24 bits", out.ece_vendor_id);
}

static void connect_fields(struct cepm_connect *k, uint32_t handle)
{
	uint32_t t;

	k->service_id = pick_service(false);
	k->handle = handle;
	k->port_num = RXE_PORT;
	strcpy(k->dev_name, RXE_DEV);
	good_path(&k->path);
	k->local_qpn = qpn24();
	k->starting_psn = rnd(1u << 24);
	k->responder_resources = rnd(17);
	k->initiator_depth = rnd(17);
	k->remote_cm_response_timeout = 14 + rnd(4);
	k->local_cm_response_timeout = 14 + rnd(4);
	k->retry_count = rnd(8);
	k->rnr_retry_count = rnd(8);
	k->max_cm_retries = rnd(4);
	k->srq = rnd(2);
	t = rnd(100);
	k->qp_type = t < 85 ? CEPM_TRANSPORT_RC : t < 93 ? CEPM_TRANSPORT_UC : CEPM_TRANSPORT_XRC;
	k->pdata_len = pdata_len(CEPM_REQ_PDATA_MAX);
	fill_random(k->pdata, sizeof(k->pdata));
	if (chance(30)) {
		k->ece_vendor_id = rnd(1u << 24);
		k->ece_attr_mod = rnd(1u << 31) << 1 | rnd(2);
	}
}

/* What CONNECT and SIDR_REQ (struct T) can get wrong alike: the path, the retries, the port. */
#define BROKEN_PATH(T)		NESTED(T, path, path_mutations)
#define TOO_MANY_RETRIES(T)	MUST_FAIL(0, "max_cm_retries over 15", \
					  SET(T, max_cm_retries, RANGE(16, 240)))
#define ANOTHER_PORT(T)		MAY_FAIL(PROV_ENODEV, "another device or port", \
					 SET(T, dev_name, GEN(G_DEVICE)), \
					 SET(T, port_num, GEN(G_PORT)))

static const struct mutation connect_mutation[] = {
	MUST_FAIL(0, "reserved != 0", SET(struct cepm_connect, reserved, NONZERO8)),
	MUST_FAIL(0, "reserved2 != 0", SET_ONE_OF(struct cepm_connect, reserved2, NONZERO8)),
	MUST_FAIL(0, "flow_control over 1", SET(struct cepm_connect, flow_control, RANGE(2, 254))),
	MUST_FAIL(PROV_E2BIG, "pdata_len over CEPM_REQ_PDATA_MAX",
		  SET(struct cepm_connect, pdata_len, OVER(CEPM_REQ_PDATA_MAX))),
	BROKEN_PATH(struct cepm_connect),
	MUST_FAIL(0, "a qp_type that is neither RC, UC nor XRC",
		  SET(struct cepm_connect, qp_type, RANGE(3, 253))),
	TOO_MANY_RETRIES(struct cepm_connect),
	ANOTHER_PORT(struct cepm_connect),
	MUST_FAIL(0, "ece_vendor_id over 24 bits",
		  SET(struct cepm_connect, ece_vendor_id, RANGE(1u << 24, UINT32_MAX - (1u << 24)))),
	MAY_FAIL(0, "a QPN or PSN out of 24 bits",
		 EITHER(struct cepm_connect, local_qpn, CONST(0),
			RANGE(1u << 24, UINT32_MAX - (1u << 24))),
		 SET(struct cepm_connect, starting_psn, RAND(0))),
	MAY_FAIL(0, "timeouts or retry counts out of range",
		 SET(struct cepm_connect, remote_cm_response_timeout, RANGE(0, 256)),
		 SET(struct cepm_connect, local_cm_response_timeout, RANGE(0, 256)),
		 SET(struct cepm_connect, retry_count, RANGE(0, 256)),
		 SET(struct cepm_connect, rnr_retry_count, RANGE(0, 256))),
	MAY_FAIL(0, "a random destination GID and MAC",
		 FILL(struct cepm_connect, path.dgid), FILL(struct cepm_connect, path.dmac)),
};
static const struct mutations connect_mutations = TABLE(connect_mutation);

static void op_connect(struct file *f, struct cep *t)
{
	struct icall *c = icall_new(C_CONNECT, f);
	struct cepm_connect *k = &c->u.connect;
	struct cep *mine;

	connect_fields(k, choose_handle(f, t, R_IDLE));
	mutate(c, &connect_mutations, 0);
	if (run(c))
		return;
	mine = find_cep(f, k->handle);
	if (mine)
		mine->role = R_ACTIVE;
}

static const struct mutation sidr_req_mutation[] = {
	MUST_FAIL(0, "reserved != 0", SET(struct cepm_sidr_req, reserved, NONZERO8)),
	MUST_FAIL(PROV_E2BIG, "pdata_len over CEPM_SIDR_REQ_PDATA_MAX",
		  SET(struct cepm_sidr_req, pdata_len, OVER(CEPM_SIDR_REQ_PDATA_MAX))),
	BROKEN_PATH(struct cepm_sidr_req),
	TOO_MANY_RETRIES(struct cepm_sidr_req),
	ANOTHER_PORT(struct cepm_sidr_req),
	MAY_FAIL(0, "a CM response timeout out of range",
		 SET(struct cepm_sidr_req, cm_response_timeout, RANGE(0, 256))),
};
static const struct mutations sidr_req_mutations = TABLE(sidr_req_mutation);

static void op_sidr_req(struct file *f, struct cep *t)
{
	struct icall *c = icall_new(C_SIDR_REQ, f);
	struct cepm_sidr_req *s = &c->u.sidr_req;
	struct cep *mine;

	s->service_id = pick_service(true);
	s->handle = choose_handle(f, t, R_IDLE);
	s->port_num = RXE_PORT;
	strcpy(s->dev_name, RXE_DEV);
	good_path(&s->path);
	s->cm_response_timeout = 14 + rnd(4);
	s->max_cm_retries = rnd(4);
	s->pdata_len = pdata_len(CEPM_SIDR_REQ_PDATA_MAX);
	fill_random(s->pdata, sizeof(s->pdata));
	mutate(c, &sidr_req_mutations, 0);
	if (run(c))
		return;
	mine = find_cep(f, s->handle);
	if (mine)
		mine->role = R_SIDR_ACTIVE;
}

static const struct mutation prepare_rep_mutation[] = {
	MUST_FAIL(0, "reserved_ack_delay != 0",
		  SET(struct cepm_accept, reserved_ack_delay, NONZERO8)),
	MUST_FAIL(0, "reserved != 0", SET(struct cepm_accept, reserved, NONZERO8)),
	MUST_FAIL(0, "flow_control over 1", SET(struct cepm_accept, flow_control, RANGE(2, 254))),
	MUST_FAIL(PROV_E2BIG, "pdata_len over CEPM_REP_PDATA_MAX",
		  SET(struct cepm_accept, pdata_len, OVER(CEPM_REP_PDATA_MAX))),
	MAY_FAIL(0, "a QPN or PSN out of 24 bits",
		 EITHER(struct cepm_accept, local_qpn, CONST(0), RAND(1u << 24)),
		 SET(struct cepm_accept, starting_psn, RAND(0))),
	MUST_FAIL(0, "ece_vendor_id over 24 bits",
		  SET(struct cepm_accept, ece_vendor_id, RANGE(1u << 24, UINT32_MAX - (1u << 24)))),
};
static const struct mutations prepare_rep_mutations = TABLE(prepare_rep_mutation);

static void op_prepare_rep(struct file *f, struct cep *t)
{
	struct icall *c = icall_new(C_PREPARE_REP, f);
	struct cepm_accept *a = &c->u.accept;
	struct cep *mine;

	a->handle = choose_handle(f, t, R_PASSIVE);
	mine = find_cep(f, a->handle);
	a->local_qpn = qpn24();
	/* Mostly the PSN the claim chose: another one is refused once RTR has given it. */
	a->starting_psn = mine && chance(70) ? mine->local_psn : rnd(1u << 24);
	a->responder_resources = rnd(17);
	a->initiator_depth = rnd(17);
	a->rnr_retry_count = rnd(8);
	a->srq = rnd(2);
	a->pdata_len = pdata_len(CEPM_REP_PDATA_MAX);
	fill_random(a->pdata, sizeof(a->pdata));
	if (chance(30)) {
		a->ece_vendor_id = rnd(1u << 24);
		a->ece_attr_mod = rnd(1u << 31) << 1 | rnd(2);
	}
	mutate(c, &prepare_rep_mutations, 0);
	if (run(c))
		return;
	mine = find_cep(f, a->handle);
	if (mine)
		mine->want = chance(70) ? C_SEND_REP : chance(70) ? C_INIT_QP_ATTR : C_DESTROY;
}

/* SEND_REP's, also ESTABLISH's: the two structs have the same layout. */
static const struct mutation handle_only_mutation[] = {
	MUST_FAIL(0, "reserved != 0", SET(struct cepm_send_rep, reserved, NONZERO32)),
};
static const struct mutations handle_only_mutations = TABLE(handle_only_mutation);

/* SEND_REP and ESTABLISH: a handle and a reserved word. */
static void op_handle_only(enum call_id id, struct file *f, struct cep *t)
{
	struct icall *c = icall_new(id, f);
	struct cepm_send_rep *s = &c->u.send_rep;	/* same layout as cepm_establish */
	struct cep *mine;

	s->handle = choose_handle(f, t, R_PASSIVE);
	mutate(c, &handle_only_mutations, 0);
	if (run(c))
		return;
	mine = find_cep(f, s->handle);
	if (mine && id == C_SEND_REP && chance(10))
		mine->want = C_ESTABLISH;	/* as if the QP heard the peer first */
}

static const struct mutation send_pdata_mutation[] = {
	MUST_FAIL(0, "reserved != 0", SET_ONE_OF(struct cepm_send_pdata, reserved, NONZERO8)),
	MUST_FAIL(PROV_E2BIG, "pdata_len over the message's limit",
		  SET(struct cepm_send_pdata, pdata_len, GEN(G_OVER))),
};
static const struct mutations send_pdata_mutations = TABLE(send_pdata_mutation);

/* SEND_RTU, SEND_DREQ, SEND_DREP: a handle and private data up to the message's limit. */
static void op_send_pdata(enum call_id id, struct file *f, struct cep *t)
{
	unsigned int max = id == C_SEND_DREQ ? CEPM_DREQ_PDATA_MAX : CEPM_PDATA_MAX;
	struct icall *c = icall_new(id, f);
	struct cepm_send_pdata *s = &c->u.send_pdata;
	struct cep *mine;

	s->handle = choose_handle(f, t, id == C_SEND_RTU ? R_ACTIVE : R_ACTIVE | R_PASSIVE);
	s->pdata_len = pdata_len(max);
	fill_random(s->pdata, sizeof(s->pdata));
	mutate(c, &send_pdata_mutations, max);
	if (run(c))
		return;
	mine = find_cep(f, s->handle);
	if (mine && id == C_SEND_RTU && chance(20))
		mine->want = C_SEND_DREQ;
}

static const struct mutation init_qp_attr_mutation[] = {
	MUST_FAIL(0, "reserved != 0", SET_ONE_OF(struct cepm_qp_attr, reserved, NONZERO8)),
	MAY_FAIL(0, "a qp_state out of range",
		 EITHER(struct cepm_qp_attr, qp_state, RANGE(0, 8), RAND(0))),
	/* in the output address: the header does not say */
	MAY_FAIL(0, "a non-zero reserved byte in the output path",
		 SET_ONE_OF(struct cepm_qp_attr, ah.reserved, NONZERO8)),
	MAY_FAIL(0, "garbage in output fields",
		 FILL_FROM_TO(struct cepm_qp_attr, attr_mask, reserved)),
};
static const struct mutations init_qp_attr_mutations = TABLE(init_qp_attr_mutation);

static void op_init_qp_attr(struct file *f, struct cep *t)
{
	struct icall *c = icall_new(C_INIT_QP_ATTR, f);
	struct cepm_qp_attr *q = &c->u.qp_attr;
	struct cep *mine;

	q->handle = choose_handle(f, t, R_ACTIVE | R_PASSIVE);
	q->qp_state = CEPM_QPS_INIT + rnd(3);
	mutate(c, &init_qp_attr_mutations, 0);
	if (run(c))
		return;
	mine = find_cep(f, q->handle);
	if (mine && chance(50))
		mine->want = mine->role == R_ACTIVE ? C_SEND_RTU : C_SEND_REP;
}

static const struct mutation prepare_mra_mutation[] = {
	MUST_FAIL(0, "an unknown flag", OR_IN(struct cepm_prepare_mra, flags, BIT(4, 6))),
	MUST_FAIL(0, "a service timeout over 31",
		  OR_IN(struct cepm_prepare_mra, flags, CONST(CEPM_MRA_SERVICE_TIMEOUT)),
		  SET(struct cepm_prepare_mra, service_timeout, RANGE(32, 224))),
	MUST_FAIL(0, "a service timeout without its flag",
		  CLEAR(struct cepm_prepare_mra, flags, CONST(CEPM_MRA_SERVICE_TIMEOUT)),
		  SET(struct cepm_prepare_mra, service_timeout, RANGE(1, 31))),
	MUST_FAIL(0, "reserved != 0", SET(struct cepm_prepare_mra, reserved, NONZERO16)),
};
static const struct mutations prepare_mra_mutations = TABLE(prepare_mra_mutation);

static void op_prepare_mra(struct file *f, struct cep *t)
{
	struct icall *c = icall_new(C_PREPARE_MRA, f);
	struct cepm_prepare_mra *m = &c->u.prepare_mra;

	m->handle = choose_handle(f, t, R_PASSIVE | R_ACTIVE);
	m->flags = rnd(4);
	if (m->flags & CEPM_MRA_SERVICE_TIMEOUT)
		m->service_timeout = rnd(32);
	mutate(c, &prepare_mra_mutations, 0);
	run(c);
}

/* The header says only "<= CEPM_REJ_ARI_MAX" for info_len: EINVAL or E2BIG. */
static const struct mutation sidr_rep_mutation[] = {
	MUST_FAIL(0, "reserved != 0", SET(struct cepm_sidr_rep, reserved, NONZERO8)),
	MUST_FAIL(PROV_E2BIG, "info_len over CEPM_REJ_ARI_MAX",
		  SET(struct cepm_sidr_rep, info_len, OVER(CEPM_REJ_ARI_MAX))),
	MUST_FAIL(PROV_E2BIG, "pdata_len over CEPM_SIDR_REP_PDATA_MAX",
		  SET(struct cepm_sidr_rep, pdata_len, OVER(CEPM_SIDR_REP_PDATA_MAX))),
	MAY_FAIL(0, "a status or QPN out of range",
		 SET(struct cepm_sidr_rep, status, RANGE(0, 256)),
		 SET(struct cepm_sidr_rep, qpn, RAND(0))),
};
static const struct mutations sidr_rep_mutations = TABLE(sidr_rep_mutation);

static void op_sidr_rep(struct file *f, struct cep *t)
{
	struct icall *c = icall_new(C_SIDR_REP, f);
	struct cepm_sidr_rep *s = &c->u.sidr_rep;
	struct cep *mine;

	s->handle = choose_handle(f, t, R_SIDR_PASSIVE);
	s->qpn = qpn24();
	s->qkey = (uint32_t)rnd64();
	s->status = rnd(3);
	s->info_len = pdata_len(CEPM_REJ_ARI_MAX);
	s->pdata_len = pdata_len(CEPM_SIDR_REP_PDATA_MAX);
	fill_random(s->info, sizeof(s->info));
	fill_random(s->pdata, sizeof(s->pdata));
	mutate(c, &sidr_rep_mutations, 0);
	if (run(c))
		return;
	mine = find_cep(f, s->handle);
	if (mine) {
		mine->role = R_IDLE;
		mine->want = chance(50) ? C_DESTROY : C_NONE;
	}
}

/* LIST_CEPS on an exact file: its own CEPs carry their handles, and only they. */
static void check_list_handles(struct icall *c, const uint8_t *ceps, uint32_t filled,
			       bool complete)
{
	struct file *f = c->f;
	struct cepm_cep_info ci;
	uint32_t i;
	int j;

	for (i = 0; i < filled; i++) {
		memcpy(&ci, ceps + i * sizeof(ci), sizeof(ci));
		if (ci.state > CEPM_STATE_DESTROYED)
			fail_call(c, "listed a CEP in state %u", ci.state);
		if (f->shared || !ci.handle)
			continue;
		if (!find_cep(f, ci.handle) && !in_list(f->doubt, f->ndoubt, ci.handle))
			fail_call(c, "listed handle %u, which this file does not own", ci.handle);
	}
	for (j = 0; complete && !f->shared && j < f->nceps; j++) {
		for (i = 0; i < filled; i++) {
			memcpy(&ci, ceps + i * sizeof(ci), sizeof(ci));
			if (ci.handle == f->ceps[j].handle)
				break;
		}
		if (i == filled)
			fail_call(c, "did not list this file's handle %u", f->ceps[j].handle);
	}
}

static const struct mutation list_ceps_mutation[] = {
	/* there may be no CEP at all to write */
	MAY_FAIL(PROV_EFAULT, "a bad ceps pointer",
		 SET(struct cepm_list, ceps, GEN(G_BAD_POINTER)),
		 SET(struct cepm_list, capacity, RANGE(1, 64))),
	MAY_FAIL(PROV_EFAULT, "capacity past the ceps array",
		 EITHER(struct cepm_list, capacity, CONST(UINT32_MAX), PAST(100000))),
	MAY_FAIL(PROV_EFAULT, "a bad ceps pointer with capacity 0",
		 SET(struct cepm_list, capacity, CONST(0)),
		 SET(struct cepm_list, ceps, GEN(G_BAD_POINTER))),
	MAY_FAIL(0, "garbage in the output field count", SET(struct cepm_list, count, NONZERO32)),
};
static const struct mutations list_ceps_mutations = TABLE(list_ceps_mutation);

static void op_list_ceps(struct file *f)
{
	struct icall *c = icall_new(C_LIST_CEPS, f);
	struct cepm_list *l = &c->u.list, out;
	unsigned int room = chance(5) ? LIST_ROOM : rnd(65);
	uint8_t *ceps = M.list_guard - room * sizeof(struct cepm_cep_info);
	uint32_t filled;
	size_t i;

	l->capacity = room;
	l->ceps = room || chance(50) ? (uintptr_t)ceps : 0;
	c->must_succeed = true;
	mutate(c, &list_ceps_mutations, room);
	memset(ceps, PATTERN, room * sizeof(struct cepm_cep_info));
	if (run(c))
		return;
	result(c, &out, sizeof(out));
	if (out.ceps != (uintptr_t)ceps)
		return;
	filled = out.count < out.capacity ? out.count : out.capacity;
	if (filled > room)
		return;
	check_list_handles(c, ceps, filled, out.capacity >= out.count);
	for (i = 0; filled < room && i < sizeof(struct cepm_cep_info); i++)
		if (ceps[filled * sizeof(struct cepm_cep_info) + i] != PATTERN)
			fail_call(c, "wrote entry %u past min(count, capacity)", filled);
}

static const struct mutation monitor_mutation[] = {
	MUST_FAIL(0, "flags != 0", SET(struct cepm_monitor, flags, NONZERO32)),
	MUST_FAIL(0, "reserved != 0", SET(struct cepm_monitor, reserved, NONZERO32)),
};
static const struct mutations monitor_mutations = TABLE(monitor_mutation);

static void op_monitor(struct file *f)
{
	struct icall *c = icall_new(C_MONITOR, f);
	bool broken = chance(MUT_PCT) || f->shared;

	/*
	 * Only a file no other process has may become a monitor: its reads then return trace
	 * records, which a process that did not make it one would take for events.
	 */
	if (!f->shared) {
		c->must_succeed = !f->monitor && !f->nceps && !f->ndoubt;
		if (f->monitor)
			definite(c, 0, "a second MONITOR");
		else if (f->nceps)
			definite(c, 0, "MONITOR on a file that owns CEPs");
	}
	if (broken)
		mutate_at(c, &monitor_mutations, 0, 0);
	if (run(c))
		return;
	f->monitor = true;
}

/*
 * MIGRATE to f of a CEP of another of our files (or of f's own: nothing moves), with
 * mutations: an fd that is not open or not /dev/cepm, reserved bits.  The model moves the CEP
 * with its context, role, what it waits for and its count of events read; events for its old
 * handle on an exact file then fail the run, as events for a destroyed CEP do.
 */
static const struct mutation migrate_mutation[] = {
	MUST_FAIL(0, "reserved != 0", SET_ONE_OF(struct cepm_migrate, reserved, NONZERO32)),
	MUST_FAIL(PROV_EBADF, "fd is not open",
		  EITHER(struct cepm_migrate, fd, CONST(-1), RANGE(1000, 1000))),
	MUST_FAIL(0, "fd is not /dev/cepm", SET(struct cepm_migrate, fd, GEN(G_OTHER_FD))),
	MAY_FAIL(0, "garbage in the output fields",
		 SET(struct cepm_migrate, new_handle, NONZERO32),
		 SET(struct cepm_migrate, events_reported, NONZERO32)),
};
static const struct mutations migrate_mutations = TABLE(migrate_mutation);

static void op_migrate(struct file *f, struct cep *t)
{
	struct icall *c = icall_new(C_MIGRATE, f);
	struct cepm_migrate *m = &c->u.migrate;
	struct file *from = t ? f : random_file();
	uint32_t h = choose_handle(from, t, R_ANY);
	struct cep *mine = find_cep(from, h), moved;
	struct cepm_migrate out;
	int err;

	if (f->nceps == MAX_CEPS) {	/* no room to track another */
		op_destroy(f, NULL);
		return;
	}
	m->fd = from->fd;
	m->handle = h;
	c->must_succeed = mine && !from->shared && !f->shared && !f->monitor;
	if (f->monitor && !f->shared)
		definite(c, 0, "a CEP moving to a monitor");
	mutate(c, &migrate_mutations, 0);
	err = run(c);
	if (err == EFAULT && c->kind == ARG_RO && from != f) {
		drop_cep(from, h, true);	/* perhaps moved, then destroyed unnamed */
		return;
	}
	if (err)
		return;
	result(c, &out, sizeof(out));
	if (from == f) {
		if (out.new_handle != h)
			fail_call(c, "moved handle %u within its own file to %u", h, out.new_handle);
		return;
	}
	new_handle_checks(c, out.new_handle);
	if (!mine) {
		/* Not one we know (another process's, or doubtful): its events are not ours to judge. */
		push_list(f->doubt, &f->ndoubt, MAX_DOUBT, out.new_handle);
		return;
	}
	if (!from->shared && !from->lost_reads && out.events_reported != mine->events)
		fail_call(c, "reported %u events read for handle %u; this process read %u",
			  out.events_reported, h, mine->events);
	moved = *mine;
	drop_cep(from, h, false);
	mine = add_cep(f, out.new_handle, moved.ctx, moved.role);
	if (!mine)
		return;
	*mine = moved;
	mine->handle = out.new_handle;
	mine->events = out.events_reported;
}

static const struct mutation post_event_mutation[] = {
	MUST_FAIL(0, "reserved != 0", SET(struct cepm_post_event, reserved, NONZERO32)),
	MUST_FAIL(0, "an event code below the user range",
		  SET(struct cepm_post_event, event, RANGE(0, CEPM_EVENT_USER_FIRST))),
	MUST_FAIL(0, "an event code above the user range",
		  SET(struct cepm_post_event, event,
		      RANGE(CEPM_EVENT_USER_LAST + 1, UINT32_MAX - CEPM_EVENT_USER_LAST))),
};
static const struct mutations post_event_mutations = TABLE(post_event_mutation);

/* POST_EVENT: a code of the user range, with mutations (the module's codes, past the range). */
static void op_post_event(struct file *f, struct cep *t)
{
	struct icall *c = icall_new(C_POST_EVENT, f);
	struct cepm_post_event *p = &c->u.post_event;

	p->handle = choose_handle(f, t, R_ANY);
	p->event = CEPM_EVENT_USER_FIRST + rnd(CEPM_EVENT_USER_LAST - CEPM_EVENT_USER_FIRST + 1);
	p->status = nonzero32();
	mutate(c, &post_event_mutations, 0);
	run(c);
}

static const struct mutation bind_mutation[] = {
	MUST_FAIL(0, "reserved != 0", SET(struct cepm_bind, reserved, NONZERO16)),
	MUST_FAIL(0, "reserved2 != 0", SET_ONE_OF(struct cepm_bind, reserved2, NONZERO8)),
	MUST_FAIL(0, "an unknown flag", OR_IN(struct cepm_bind, flags, BIT(4, 6))),
	MUST_FAIL(0, "a family but 4 and 6", SET(struct cepm_bind, family, RANGE(7, 249))),
	MUST_FAIL(0, "a port space rdma_cm does not have",
		  SET(struct cepm_bind, port_space, RANGE(0x0200, 0x1000))),
};
static const struct mutations bind_mutations = TABLE(bind_mutation);

/*
 * BIND: an rdma_cm port space, a port of the fuzzed services or port 0, IPv4 or IPv6, a
 * wildcard, loopback or another address, the flags in any mix, a destination or none.  The
 * port rules refuse root as anyone (EADDRINUSE, EADDRNOTAVAIL); a port below 1024 is root's.
 */
static void op_bind(struct file *f, struct cep *t)
{
	static const uint16_t spaces[] = { 0x0002, 0x0106, 0x0111, 0x013F };
	struct icall *c = icall_new(C_BIND, f);
	struct cepm_bind *b = &c->u.bind;

	b->handle = choose_handle(f, t, R_ANY);
	b->port_space = spaces[rnd(4)];
	b->port = chance(30) ? 0 : SVC_PORT + rnd(N_SVC_CONN);
	b->family = chance(70) ? 4 : 6;
	b->flags = rnd(4);
	switch (rnd(3)) {
	case 0:
		break;
	case 1:
		b->addr[b->family == 4 ? 12 : 15] = b->family == 4 ? 127 : 1;
		break;
	default:
		fill_random(b->family == 4 ? &b->addr[12] : b->addr, b->family == 4 ? 4 : 16);
	}
	if (chance(30)) {
		fill_random(b->family == 4 ? &b->dst_addr[12] : b->dst_addr,
			    b->family == 4 ? 4 : 16);
		b->dst_port = rnd(65536);
	}
	mutate(c, &bind_mutations, 0);
	run(c);
}

/* A command that is none of cepm's: only ENOTTY, and the argument is left alone. */
static void op_bad_cmd(struct file *f)
{
	struct icall *c = icall_new(C_BAD_CMD, f);
	enum call_id id = C_QUERY + rnd(C_BIND - C_QUERY + 1);
	unsigned long known = calls[id].cmd;
	unsigned int dir = _IOC_DIR(known), nr = _IOC_NR(known), size = _IOC_SIZE(known);
	unsigned int type = CEPM_IOC_MAGIC;

	switch (rnd(4)) {
	case 0:	/* a number cepm does not have */
		nr = chance(50) ? rnd(_IOC_NR(CEPM_IOC_QUERY)) :
			_IOC_NR(CEPM_IOC_BIND) + 1 + rnd(0xff - _IOC_NR(CEPM_IOC_BIND));
		dir = rnd(4);
		size = rnd(ARG_ROOM);
		break;
	case 1:
		dir = (dir + 1 + rnd(3)) % 4;
		break;
	case 2:	/* shorter than the struct's first version */
		size = rnd(first_size(id, size));
		break;
	default:	/* another, unregistered, magic */
		type = CEPM_IOC_MAGIC + 1;
	}
	c->cmd = _IOC(dir, type, nr, size);
	c->size = size;
	c->len = 0;
	fill_random(c->u.b, size < 512 ? size : 512);
	c->kind = chance(80) ? ARG_OK : ARG_BAD;
	definite(c, PROV_ENOTTY, "a command that is not cepm's");
	run(c);
}

/* ------------------------------------------------------------------------------------- */
/* read() and poll().                                                                     */

/* What the last event of a CEP of ours asks for next. */
static void learn_event(struct cep *c, uint32_t event)
{
	switch (event) {
	case CEPM_EVENT_REQ_RECEIVED:
	case CEPM_EVENT_SIDR_REQ_RECEIVED:
		c->want = C_GET_REQUEST;
		break;
	case CEPM_EVENT_REP_RECEIVED:
		c->want = chance(70) ? C_SEND_RTU : chance(50) ? C_INIT_QP_ATTR : C_REJECT;
		break;
	case CEPM_EVENT_ESTABLISHED:
		c->want = chance(30) ? C_SEND_DREQ : C_QUERY_CEP;
		break;
	case CEPM_EVENT_DREQ_RECEIVED:
		c->want = chance(85) ? C_SEND_DREP : C_DESTROY;
		break;
	case CEPM_EVENT_REJ_RECEIVED:
	case CEPM_EVENT_REQ_ERROR:
	case CEPM_EVENT_REP_ERROR:
	case CEPM_EVENT_SIDR_REQ_ERROR:
	case CEPM_EVENT_SIDR_REP_RECEIVED:
	case CEPM_EVENT_TIMEWAIT_EXIT:
		c->role = R_IDLE;	/* idle again: it may connect anew */
		c->want = chance(40) ? C_DESTROY : chance(50) ? C_GET_PRIVATE_DATA : C_NONE;
		break;
	case CEPM_EVENT_DEVICE_REMOVAL:
		c->want = C_DESTROY;
		break;
	default:	/* MRA, DREP, DREQ_ERROR: wait for what follows */
		break;
	}
}

static void __attribute__((noreturn, format(printf, 3, 4)))
fail_record(const uint8_t *rec, size_t size, const char *fmt, ...)
{
	char msg[384];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fail_line("read %s", msg);
	hex_dump("record", rec, size);
	die();
}

static void check_event(struct file *f, const uint8_t *rec)
{
	struct cepm_event ev;
	struct cep *c;

	memcpy(&ev, rec, sizeof(ev));
	if ((ev.event < CEPM_EVENT_REQ_RECEIVED || ev.event > CEPM_EVENT_SIDR_REQ_ERROR) &&
	    (ev.event < CEPM_EVENT_USER_FIRST || ev.event > CEPM_EVENT_USER_LAST))
		fail_record(rec, sizeof(ev), "an event of unknown type %u", ev.event);
	if (ev.reserved || !ev.handle)
		fail_record(rec, sizeof(ev), "an event with reserved %u, handle %u", ev.reserved,
			    ev.handle);
	if ((ev.event == CEPM_EVENT_REQ_ERROR || ev.event == CEPM_EVENT_REP_ERROR ||
	     ev.event == CEPM_EVENT_DREQ_ERROR || ev.event == CEPM_EVENT_SIDR_REQ_ERROR) &&
	    ev.status != ETIMEDOUT && ev.status != EIO)
		fail_record(rec, sizeof(ev), "an error event with status %u, not ETIMEDOUT or EIO",
			    ev.status);
	c = find_cep(f, ev.handle);
	if (f->shared) {
		if (c)
			learn_event(c, ev.event);
		return;
	}
	/* Exact file: destroyed handles raise nothing, and contexts are the ones we set. */
	if (!c && !in_list(f->doubt, f->ndoubt, ev.handle))
		fail_record(rec, sizeof(ev), "an event %u for handle %u, which this file does "
			    "not own", ev.event, ev.handle);
	if (!c)
		return;
	if (ev.user_context != c->ctx)
		fail_record(rec, sizeof(ev), "user_context %#llx for handle %u, set to %#llx",
			    (unsigned long long)ev.user_context, ev.handle,
			    (unsigned long long)c->ctx);
	c->events++;
	learn_event(c, ev.event);
}

static void check_trace(const uint8_t *rec)
{
	struct cepm_trace t;

	memcpy(&t, rec, sizeof(t));
	if (t.event < CEPM_EVENT_REQ_RECEIVED || t.event > CEPM_EVENT_SIDR_REQ_ERROR ||
	    t.state > CEPM_STATE_DESTROYED)
		fail_record(rec, sizeof(t), "a trace record with event %u, state %u", t.event,
			    t.state);
}

static size_t read_len(size_t rec)
{
	unsigned int r = rnd(100);

	if (r < 8)
		return 0;
	if (r < 18)
		return 1 + rnd(rec - 1);
	if (r < 55)
		return rec;
	if (r < 80)
		return rec * (2 + rnd(7));
	if (r < 92)
		return rec * (1 + rnd(8)) + 1 + rnd(rec - 1);
	return READ_ROOM;
}

static void __attribute__((noreturn))
fail_read(struct file *f, const char *why, ssize_t n, int err, size_t len, const void *buf)
{
	if (n < 0)
		fail_line("read returned errno %d (%s): %s", err, strerror(err), why);
	else
		fail_line("read returned %zd: %s", n, why);
	printf("ioctl_fuzz:   fd %d len %zu buf %p, %s, %s%s\n", f->fd, len, buf,
	       f->nonblock ? "O_NONBLOCK" : "blocking", f->monitor ? "monitor" : "events",
	       f->shared ? ", shared file" : "");
	die();
}

/* Which errnos this read may get; EINVAL below one record (either size if unknown). */
static unsigned int read_prov(const struct file *f, size_t len, bool bad_buf)
{
	size_t rec = f->monitor ? sizeof(struct cepm_trace) : sizeof(struct cepm_event);
	unsigned int prov = 0;

	if (len < rec)
		prov |= PROV_EINVAL;
	if (f->nonblock)
		prov |= PROV_EAGAIN;
	else
		prov |= PROV_EINTR;
	if (!f->monitor)
		prov |= PROV_EOVERFLOW;
	if (bad_buf)
		prov |= PROV_EFAULT;
	return prov;
}

static void check_read_data(struct file *f, size_t len, ssize_t n, const uint8_t *buf,
			    bool ours)
{
	size_t rec = f->monitor ? sizeof(struct cepm_trace) : sizeof(struct cepm_event);
	size_t i, end = len + 64 < READ_ROOM ? len + 64 : READ_ROOM;

	if (n == 0 || (size_t)n > len - len % rec || n % rec)
		fail_read(f, "not whole records within the buffer", n, 0, len, buf);
	if (!ours) {
		f->lost_reads = true;	/* records taken that we cannot look at */
		return;
	}
	for (i = n; i < end; i++)
		if (buf[i] != PATTERN)
			fail_read(f, "wrote past the records it returned", n, 0, len, buf);
	for (i = 0; i < (size_t)n; i += rec) {
		if (f->monitor)
			check_trace(buf + i);
		else
			check_event(f, buf + i);
	}
}

/*
 * One read().  must_have: poll() just said POLLIN on an exact file, so the read has a record
 * (or the loss report) and must not say EAGAIN or block.
 */
static void do_read(struct file *f, size_t len, bool must_have)
{
	unsigned int r = rnd(100);
	bool ours = true, bad = false;
	uint8_t *buf = M.rbuf;
	ssize_t n;
	int err;

	if (!must_have && r < 4) {
		buf = bad_pointer();
		ours = false;
		bad = true;
	} else if (!must_have && r < 7 && len) {	/* records run into the guard page */
		buf = M.rbuf_guard - rnd(len);
		ours = false;
		bad = true;
	}
	if (ours)
		memset(M.rbuf, PATTERN, len + 64 < READ_ROOM ? len + 64 : READ_ROOM);
	call_begin(C_READ, !f->nonblock && !must_have);
	if (opt.late_reads && !f->nonblock && !must_have)
		late_start();
	n = read(f->fd, buf, len);
	err = n < 0 ? errno : 0;
	call_end();
	count(C_READ, n < 0 ? -1 : 0, err);
	if (n >= 0) {
		check_read_data(f, len, n, buf, ours);
		return;
	}
	if (err == EFAULT)
		f->lost_reads = true;	/* records may have been taken and not copied */
	if (must_have && err != EOVERFLOW && !(err == EINVAL && len < sizeof(struct cepm_trace)))
		fail_read(f, "poll() said POLLIN on this file just before", n, err, len, buf);
	if (!errno_allowed(C_READ, read_prov(f, len, bad), err))
		fail_read(f, "not an errno docs/abi.md documents for read()", n, err, len, buf);
}

static void op_read(struct file *f)
{
	size_t rec = f->monitor ? sizeof(struct cepm_trace) : sizeof(struct cepm_event);

	do_read(f, read_len(rec), false);
}

static void op_poll(void)
{
	struct pollfd pfd[MAX_FILES];
	struct file *map[MAX_FILES];
	int i, n = 0, ready = 0, r, err, timeout = chance(50) ? 0 : 1 + rnd(POLL_MS_MAX);

	for (i = 0; i < P.nfiles; i++) {
		if (i && chance(40))
			continue;
		pfd[n].fd = P.files[i].fd;
		pfd[n].events = chance(80) ? POLLIN : POLLIN | POLLOUT | POLLPRI | POLLRDNORM;
		pfd[n].revents = 0;
		map[n++] = &P.files[i];
	}
	call_begin(C_POLL, false);
	r = poll(pfd, n, timeout);
	err = r < 0 ? errno : 0;
	call_end();
	count(C_POLL, r < 0 ? -1 : 0, err);
	if (r < 0) {
		fail_line("poll returned errno %d (%s): poll() has no documented error", err,
			  strerror(err));
		die();
	}
	for (i = 0; i < n; i++) {
		if (pfd[i].revents & ~(POLLIN | POLLRDNORM)) {
			fail_line("poll returned revents %#x on fd %d: only POLLIN is documented",
				  pfd[i].revents, pfd[i].fd);
			die();
		}
		ready += !!pfd[i].revents;
	}
	if (ready != r) {
		fail_line("poll returned %d with %d files ready", r, ready);
		die();
	}
	for (i = 0; i < n; i++)
		if ((pfd[i].revents & POLLIN) && !map[i]->shared && chance(70)) {
			do_read(map[i], READ_ROOM, true);
			break;
		}
}

/* ------------------------------------------------------------------------------------- */
/* Opening and closing.                                                                   */

static void open_file(struct file *f)
{
	int fd, err;

	memset(f, 0, sizeof(*f));
	f->nonblock = chance(80);
	call_begin(C_OPEN, false);
	fd = open(DEV_PATH, O_RDWR | (f->nonblock ? O_NONBLOCK : 0));
	err = fd < 0 ? errno : 0;
	call_end();
	count(C_OPEN, fd < 0 ? -1 : 0, err);
	if (fd < 0) {
		fail_line("open of %s returned errno %d (%s)", DEV_PATH, err, strerror(err));
		die();
	}
	f->fd = fd;
}

/* close() runs release, which destroys every CEP of the file unless another process has it. */
static void close_file(struct file *f)
{
	int r, err;

	call_begin(C_CLOSE, false);
	r = close(f->fd);
	err = r ? errno : 0;
	/* What the slowest close had to do: how many CEPs it destroyed, unless shared. */
	if (call_end()) {
		__atomic_store_n(&S->slowest_close_ceps, f->nceps, __ATOMIC_RELAXED);
		__atomic_store_n(&S->slowest_close_shared, f->shared, __ATOMIC_RELAXED);
	}
	count(C_CLOSE, r ? -1 : 0, err);
	if (r) {
		fail_line("close returned errno %d (%s)", err, strerror(err));
		die();
	}
	f->fd = -1;
}

static void op_reopen(struct file *f)
{
	close_file(f);
	open_file(f);
}

/* ------------------------------------------------------------------------------------- */
/* Children: forked mid-sequence with the files open, some killed at a random moment.     */

static void run_proc(void) __attribute__((noreturn));

/* A process whose calls stopped: the last call it began, from its shared slot. */
static void report_stuck(const char *id, int slot, const char *what, unsigned int secs)
{
	int call = S->slot[slot].call;
	uint64_t took = S->slot[slot].stuck_us;

	printf("ioctl_fuzz: FAIL seed %" PRIu64 " proc %s call %" PRIu64 ": %s %s %u s",
	       opt.seed, id, S->slot[slot].calls,
	       call >= 0 && call < NCALLS ? calls[call].name : "?", what, secs);
	if (took)
		printf(" (it returned after %" PRIu64 ".%03" PRIu64 " s)", took / 1000000,
		       took / 1000 % 1000);
	printf("\n");
}

/* How a child (or, for main, a worker) ended; false if that is a failure. */
static bool judge_exit(const char *id, int slot, int status, bool killed)
{
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return true;
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL && killed)
		return true;
	if (WIFEXITED(status) && WEXITSTATUS(status) == EXIT_STUCK)
		report_stuck(id, slot, "did not return within", TIME_S(WATCHDOG_S));
	else if (WIFSIGNALED(status))
		printf("ioctl_fuzz: FAIL seed %" PRIu64 " proc %s: killed by signal %d (%s)\n",
		       opt.seed, id, WTERMSIG(status), strsignal(WTERMSIG(status)));
	/* exit 1: it printed its own FAIL line */
	return false;
}

/* A child is gone: the calls it did not make go back to us. */
static void forget_kid(struct child *k)
{
	uint64_t made = S->slot[k->slot].calls;

	if (made < k->budget)
		P.budget += k->budget - made;
	k->pid = 0;
}

/* SIGKILLs a child and reaps it; one that is still there after KILL_REAP_S hangs in the
 * kernel (uninterruptibly) and is left behind. */
static void end_kid(struct child *k)
{
	struct timespec ts = { 0, 10 * 1000 * 1000 };
	int status = 0, waited_ms;

	if (opt.verbose)
		printf("ioctl_fuzz: proc %s call %" PRIu64 ": SIGKILL to proc %s at its call %"
		       PRIu64 "\n", P.id, P.calls, k->id, S->slot[k->slot].calls);
	kill(k->pid, SIGKILL);
	for (waited_ms = 0;; waited_ms += 10) {
		pid_t r = waitpid(k->pid, &status, WNOHANG);

		if (r == k->pid)
			break;
		if (r < 0 && errno != EINTR) {
			perror("ioctl_fuzz: waitpid");
			P.failed = true;
			forget_kid(k);
			return;
		}
		if (waited_ms >= TIME_S(KILL_REAP_S) * 1000) {
			report_stuck(k->id, k->slot, "(its last call) kept the process alive after "
				     "SIGKILL for", TIME_S(KILL_REAP_S));
			P.failed = true;
			forget_kid(k);
			return;
		}
		nanosleep(&ts, NULL);
	}
	if (!judge_exit(k->id, k->slot, status, true))
		P.failed = true;
	forget_kid(k);
}

static void kill_kids(void)
{
	int i;

	for (i = 0; i < MAX_CHILDREN; i++)
		if (P.kids[i].pid > 0)
			end_kid(&P.kids[i]);
}

/* Kills children whose moment has come, and collects those that finished. */
static void watch_kids(void)
{
	int i, status;

	for (i = 0; i < MAX_CHILDREN; i++) {
		struct child *k = &P.kids[i];

		if (k->pid <= 0)
			continue;
		if (k->kill_at && S->slot[k->slot].calls >= k->kill_at) {
			end_kid(k);
		} else if (waitpid(k->pid, &status, WNOHANG) == k->pid) {
			if (!judge_exit(k->id, k->slot, status, false))
				P.failed = true;
			forget_kid(k);
		}
	}
}

/*
 * Our calls are done: waits for the children to finish theirs (killing those whose moment
 * comes).  A child whose watchdog fires exits by itself; one that finishes no call for
 * STUCK_S is stuck where SIGALRM cannot reach it.
 */
static void wait_kids(void)
{
	struct timespec ts = { 0, 10 * 1000 * 1000 };
	uint64_t last[MAX_CHILDREN] = { 0 };
	int idle_ms[MAX_CHILDREN] = { 0 };
	int i, live;

	for (;;) {
		watch_kids();
		live = 0;
		for (i = 0; i < MAX_CHILDREN; i++) {
			struct child *k = &P.kids[i];

			if (k->pid <= 0)
				continue;
			live++;
			if (S->slot[k->slot].calls != last[i]) {
				last[i] = S->slot[k->slot].calls;
				idle_ms[i] = 0;
			} else if ((idle_ms[i] += 10) >= TIME_S(STUCK_S) * 1000) {
				report_stuck(k->id, k->slot, "(its last call) has not returned for",
					     TIME_S(STUCK_S));
				P.failed = true;
			}
		}
		if (!live || P.failed)
			break;
		nanosleep(&ts, NULL);
	}
	kill_kids();	/* after a failure */
}

static void become_child(struct child *k, uint64_t seed, uint64_t budget)
{
	int i;

	snprintf(P.id, sizeof(P.id), "%s", k->id);
	P.depth++;
	P.slot = k->slot;
	seed_rng(seed, 0);
	P.calls = 0;
	P.budget = budget;
	P.failed = false;
	memset(P.kids, 0, sizeof(P.kids));
	for (i = 0; i < P.nfiles; i++)
		P.files[i].shared = true;
}

static void op_fork(void)
{
	uint64_t left = P.budget - P.calls, budget, seed;
	struct child *k = NULL;
	pid_t pid;
	int i;

	for (i = 0; i < MAX_CHILDREN && !k; i++)
		if (!P.kids[i].pid)
			k = &P.kids[i];
	if (P.depth || !k || left < 200)
		return;
	seed = rnd64();
	budget = 50 + rnd(left / 3);
	P.budget -= budget;	/* the child's calls come out of ours */
	k->budget = budget;
	k->slot = P.slot + 1 + (int)(k - P.kids);
	k->kill_at = chance(50) ? 1 + rnd(budget) : 0;
	snprintf(k->id, sizeof(k->id), "%d.%u", P.worker, ++P.nforked);
	S->slot[k->slot].calls = 0;
	S->slot[k->slot].call = C_NONE;
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		perror("ioctl_fuzz: fork");
		return;
	}
	if (!pid) {
		become_child(k, seed, budget);
		run_proc();
	}
	k->pid = pid;
	if (opt.verbose)
		printf("ioctl_fuzz: proc %s call %" PRIu64 ": forked proc %s (%" PRIu64 " calls, "
		       "SIGKILL after %" PRIu64 ", 0: none)\n", P.id, P.calls, k->id, budget,
		       k->kill_at);
	for (i = 0; i < P.nfiles; i++)
		P.files[i].shared = true;
	/* Close a file the child is still using (its copy keeps the file alive). */
	if (chance(30))
		op_reopen(random_file());
}

/* ------------------------------------------------------------------------------------- */
/* The sequence.                                                                          */

static void do_op(enum call_id id, struct file *f, struct cep *t)
{
	switch (id) {
	case C_QUERY: op_query(f); break;
	case C_CREATE: op_create(f); break;
	case C_DESTROY: op_destroy(f, t); break;
	case C_LISTEN: op_listen(f, t); break;
	case C_GET_REQUEST: op_get_request(f, t); break;
	case C_REJECT: op_reject(f, t); break;
	case C_QUERY_CEP: op_query_cep(f, t); break;
	case C_GET_PRIVATE_DATA: op_get_private_data(f, t); break;
	case C_CONNECT: op_connect(f, t); break;
	case C_PREPARE_REP: op_prepare_rep(f, t); break;
	case C_SEND_REP: op_handle_only(C_SEND_REP, f, t); break;
	case C_SEND_RTU: op_send_pdata(C_SEND_RTU, f, t); break;
	case C_INIT_QP_ATTR: op_init_qp_attr(f, t); break;
	case C_SEND_DREQ: op_send_pdata(C_SEND_DREQ, f, t); break;
	case C_SEND_DREP: op_send_pdata(C_SEND_DREP, f, t); break;
	case C_PREPARE_MRA: op_prepare_mra(f, t); break;
	case C_SIDR_REQ: op_sidr_req(f, t); break;
	case C_SIDR_REP: op_sidr_rep(f, t); break;
	case C_LIST_CEPS: op_list_ceps(f); break;
	case C_ESTABLISH: op_handle_only(C_ESTABLISH, f, t); break;
	case C_MONITOR: op_monitor(f); break;
	case C_MIGRATE: op_migrate(f, t); break;
	case C_POST_EVENT: op_post_event(f, t); break;
	case C_BIND: op_bind(f, t); break;
	case C_BAD_CMD: op_bad_cmd(f); break;
	case C_READ: op_read(f); break;
	case C_POLL: op_poll(); break;
	case C_OPEN: case C_CLOSE: op_reopen(f); break;
	case C_NONE: case NCALLS: op_fork(); break;
	}
}

/* Answers an event read earlier: what moves connections along. */
static bool react(void)
{
	int i, j, fi = rnd(P.nfiles);

	for (i = 0; i < P.nfiles; i++) {
		struct file *f = &P.files[(fi + i) % P.nfiles];
		int n = f->nceps, start = n ? rnd(n) : 0;

		for (j = 0; j < n; j++) {
			struct cep *c = &f->ceps[(start + j) % n];
			uint8_t want = c->want;

			if (want == C_NONE)
				continue;
			c->want = C_NONE;
			do_op(want, f, c);
			return true;
		}
	}
	return false;
}

/* Relative weights of the random steps (per mille); C_NONE is a fork. */
static const struct {
	enum call_id id;
	unsigned int weight;
} steps[] = {
	{ C_QUERY, 25 }, { C_CREATE, 90 }, { C_DESTROY, 45 }, { C_LISTEN, 50 },
	{ C_GET_REQUEST, 35 }, { C_REJECT, 25 }, { C_QUERY_CEP, 45 },
	{ C_GET_PRIVATE_DATA, 25 }, { C_CONNECT, 70 }, { C_PREPARE_REP, 25 },
	{ C_SEND_REP, 25 }, { C_SEND_RTU, 25 }, { C_INIT_QP_ATTR, 30 }, { C_SEND_DREQ, 25 },
	{ C_SEND_DREP, 20 }, { C_PREPARE_MRA, 25 }, { C_SIDR_REQ, 40 }, { C_SIDR_REP, 20 },
	{ C_LIST_CEPS, 25 }, { C_ESTABLISH, 15 }, { C_MONITOR, 6 }, { C_MIGRATE, 20 },
	{ C_POST_EVENT, 20 }, { C_BIND, 20 }, { C_BAD_CMD, 15 },
	{ C_READ, 130 }, { C_POLL, 60 }, { C_CLOSE, 10 }, { C_NONE, 4 },
};

static enum call_id pick_step(void)
{
	unsigned int i, total = 0, r;

	for (i = 0; i < sizeof(steps) / sizeof(steps[0]); i++)
		total += steps[i].weight;
	r = rnd(total);
	for (i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		if (r < steps[i].weight)
			return steps[i].id;
		r -= steps[i].weight;
	}
	return C_QUERY;
}

/* The file a step works on; MONITOR prefers one that can become a monitor. */
static struct file *pick_file(enum call_id id)
{
	int i;

	if (id == C_MONITOR && chance(70))
		for (i = 0; i < P.nfiles; i++)
			if (!P.files[i].shared && !P.files[i].nceps && !P.files[i].monitor)
				return &P.files[i];
	return random_file();
}

static void step(void)
{
	enum call_id id;
	struct file *f;

	if (chance(35) && react())
		return;
	id = pick_step();
	f = pick_file(id);
	/* A blocking read with nothing queued costs BLOCK_READ_US: poll first, mostly. */
	if (id == C_READ && !f->nonblock && chance(75))
		id = C_POLL;
	do_op(id, f, NULL);
}

static void run_proc(void)
{
	int i;

	while (P.calls < P.budget) {
		watch_kids();
		step();
	}
	wait_kids();
	for (i = 0; i < P.nfiles; i++)
		close_file(&P.files[i]);
	fflush(stdout);
	exit(P.failed ? 1 : 0);
}

/* ------------------------------------------------------------------------------------- */
/* Setup: memory, rxe0's GID, signals.                                                    */

static size_t round_up(size_t n, size_t a)
{
	return (n + a - 1) / a * a;
}

/* Maps one region: buffers each followed by a PROT_NONE guard page, a page made read-only
 * around calls, and a hole that is unmapped (and stays so: nothing is mapped afterwards). */
static void setup_memory(void)
{
	size_t pg = sysconf(_SC_PAGESIZE);
	size_t arg = round_up(ARG_ROOM + TAIL_CHECK, pg), rbuf = round_up(READ_ROOM, pg);
	size_t ports = round_up(PORTS_ROOM * sizeof(struct cepm_port_info), pg);
	size_t list = round_up(LIST_ROOM * sizeof(struct cepm_cep_info), pg);
	size_t total = arg + pg + pg + rbuf + pg + ports + pg + list + pg;
	uint8_t *base = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			     -1, 0);
	void *hole;

	if (base == MAP_FAILED)
		goto fail;
	M.page = pg;
	M.arg = base;
	M.arg_guard = M.arg + arg;
	M.ro = M.arg_guard + pg;
	M.rbuf = M.ro + pg;
	M.rbuf_guard = M.rbuf + rbuf;
	M.ports_guard = M.rbuf_guard + pg + ports;
	M.list_guard = M.ports_guard + pg + list;
	if (mprotect(M.arg_guard, pg, PROT_NONE) || mprotect(M.rbuf_guard, pg, PROT_NONE) ||
	    mprotect(M.ports_guard, pg, PROT_NONE) || mprotect(M.list_guard, pg, PROT_NONE))
		goto fail;
	S = mmap(NULL, sizeof(*S), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	hole = mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (S == MAP_FAILED || hole == MAP_FAILED || munmap(hole, 2 * pg))
		goto fail;
	M.hole = (uintptr_t)hole;
	return;
fail:
	perror("ioctl_fuzz: setting up memory");
	exit(1);
}

/* rxe0 port 1's first RoCE v2 GID that maps an IPv4 address, and its netdev's MAC: the next
 * hop when the peer is this host. */
static void find_gid(void)
{
	char ndev[64];
	unsigned int index;

	if (!roce_v2_ipv4_route(RXE_DEV, RXE_PORT, G.gid, G.mac, &index, ndev, sizeof(ndev))) {
		printf("ioctl_fuzz: warning: no RoCE v2 IPv4 GID on %s port %d: requests will not "
		       "meet listeners\n", RXE_DEV, RXE_PORT);
		return;
	}
	G.index = index;
	G.found = true;
	printf("ioctl_fuzz: %s port %d GID %u ::ffff:%u.%u.%u.%u on %s\n", RXE_DEV, RXE_PORT,
	       index, G.gid[12], G.gid[13], G.gid[14], G.gid[15], ndev);
}

static void setup_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = 0;	/* no SA_RESTART: a blocking read must see EINTR */
	if (sigaction(SIGALRM, &sa, NULL)) {
		perror("ioctl_fuzz: sigaction");
		exit(1);
	}
}

/* ------------------------------------------------------------------------------------- */
/* The run: workers, the final check, the summary.                                        */

static void __attribute__((noreturn)) usage(void)
{
	fprintf(stderr, "usage: ioctl_fuzz [--seed N] [--calls N] [--procs N] [--files N] "
		"[--time-scale N] [--late-reads] [--verbose]\n");
	exit(2);
}

static uint64_t number(const char *s, uint64_t min, uint64_t max)
{
	char *end;
	unsigned long long v;

	if (!s)
		usage();
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || !*s || *end || v < min || v > max)
		usage();
	return v;
}

static void parse_args(int argc, char **argv)
{
	struct timespec now;
	bool seeded = false;
	int i;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seed")) {
			opt.seed = number(argv[++i], 0, UINT64_MAX);
			seeded = true;
		} else if (!strcmp(argv[i], "--calls")) {
			opt.calls = number(argv[++i], 0, UINT64_MAX / 2);
		} else if (!strcmp(argv[i], "--procs")) {
			opt.procs = number(argv[++i], 1, MAX_PROCS);
		} else if (!strcmp(argv[i], "--files")) {
			opt.files = number(argv[++i], 1, MAX_FILES);
		} else if (!strcmp(argv[i], "--time-scale")) {
			opt.time_scale = number(argv[++i], 1, 1000);
		} else if (!strcmp(argv[i], "--late-reads")) {
			opt.late_reads = true;
		} else if (!strcmp(argv[i], "--verbose")) {
			opt.verbose = true;
		} else {
			usage();
		}
	}
	if (!seeded) {
		clock_gettime(CLOCK_REALTIME, &now);
		opt.seed = (uint64_t)now.tv_sec * 1000000000ULL + now.tv_nsec;
	}
}

static pid_t start_worker(int index)
{
	pid_t pid;
	int i;

	fflush(stdout);
	pid = fork();
	if (pid)
		return pid;
	snprintf(P.id, sizeof(P.id), "%d", index);
	P.worker = index;
	P.slot = index * (1 + MAX_CHILDREN);
	P.nfiles = opt.files;
	P.budget = opt.calls / opt.procs + ((uint64_t)index < opt.calls % opt.procs);
	seed_rng(opt.seed, index + 1);
	for (i = 0; i < P.nfiles; i++)
		open_file(&P.files[i]);
	run_proc();
}

/* Waits for every worker; false if one failed or hangs. */
static bool wait_workers(const pid_t *pids)
{
	struct timespec ts = { 0, 20 * 1000 * 1000 };
	uint64_t last = S->calls;
	int i, live = opt.procs, status, idle_ms = 0;
	bool ok = true;
	bool done[MAX_PROCS] = { false };
	char id[24];

	while (live) {
		for (i = 0; i < opt.procs; i++) {
			if (done[i] || waitpid(pids[i], &status, WNOHANG) != pids[i])
				continue;
			done[i] = true;
			live--;
			snprintf(id, sizeof(id), "%d", i);
			ok &= judge_exit(id, i * (1 + MAX_CHILDREN), status, false);
		}
		if (S->calls != last) {
			last = S->calls;
			idle_ms = 0;
		} else if ((idle_ms += 20) >= TIME_S(MAIN_STUCK_S) * 1000) {
			printf("ioctl_fuzz: FAIL seed %" PRIu64 ": no call finished for %u s; %d "
			       "worker(s) hang\n", opt.seed, TIME_S(MAIN_STUCK_S), live);
			return false;
		}
		if (live)
			nanosleep(&ts, NULL);
	}
	return ok;
}

/* QUERY on a fresh file: the CEPs alive in the whole module. */
static int live_ceps(int fd, uint32_t *n)
{
	struct cepm_query q;
	int r, err;

	memset(&q, 0, sizeof(q));
	call_begin(C_QUERY, false);
	r = ioctl(fd, CEPM_IOC_QUERY, &q);
	err = r ? errno : 0;
	call_end();
	count(C_QUERY, r, err);
	*n = q.num_ceps;
	return r ? err : 0;
}

static void list_leftovers(int fd)
{
	static struct cepm_cep_info infos[64];
	struct cepm_list l = { .capacity = 64, .ceps = (uintptr_t)infos };
	uint32_t i;

	if (ioctl(fd, CEPM_IOC_LIST_CEPS, &l))
		return;
	for (i = 0; i < l.count && i < 64; i++)
		printf("ioctl_fuzz:   CEP comm ID %#x state %u service %#llx remote comm ID %#x "
		       "pending %u\n", infos[i].local_comm_id, infos[i].state,
		       (unsigned long long)infos[i].service_id, infos[i].remote_comm_id,
		       infos[i].pending_requests);
}

/* Every file is closed: within DRAIN_S (timewait) the module must hold no CEP. */
static bool ceps_drained(void)
{
	struct timespec ts = { 0, 100 * 1000 * 1000 };
	uint32_t n = 0;
	int i, err = 0, fd = open(DEV_PATH, O_RDWR);

	if (fd < 0) {
		printf("ioctl_fuzz: FAIL seed %" PRIu64 ": open of %s for the final check: %s\n",
		       opt.seed, DEV_PATH, strerror(errno));
		return false;
	}
	for (i = 0; i < (int)TIME_S(DRAIN_S) * 10; i++) {
		err = live_ceps(fd, &n);
		if (err || !n)
			break;
		nanosleep(&ts, NULL);
	}
	if (err)
		printf("ioctl_fuzz: FAIL seed %" PRIu64 ": final QUERY returned errno %d (%s)\n",
		       opt.seed, err, strerror(err));
	else if (n)
		printf("ioctl_fuzz: FAIL seed %" PRIu64 ": %u CEP(s) left %u s after every file "
		       "was closed\n", opt.seed, n, TIME_S(DRAIN_S));
	if (n)
		list_leftovers(fd);
	close(fd);
	return !err && !n;
}

/* The three slowest kinds of call, by their longest; the watchdog's margin shows here. */
static void slowest_calls(void)
{
	bool shown[NCALLS] = { false };
	int rank, id, top;

	printf("ioctl_fuzz: seed %" PRIu64 ": slowest calls (watchdog %u s):", opt.seed,
	       TIME_S(WATCHDOG_S));
	for (rank = 0; rank < 3; rank++) {
		top = -1;
		for (id = C_QUERY; id < NCALLS; id++)
			if (!shown[id] && (top < 0 || S->slowest_us[id] > S->slowest_us[top]))
				top = id;
		if (top < 0 || !S->slowest_us[top])
			break;
		shown[top] = true;
		printf(" %s %" PRIu64 " ms", calls[top].name, S->slowest_us[top] / 1000);
		if (top == C_CLOSE)
			printf(" (%d CEPs tracked%s)", S->slowest_close_ceps,
			       S->slowest_close_shared ? ", file shared" : "");
	}
	printf("\n");
}

static void summary(double secs)
{
	bool first = true;
	int id, e;

	printf("ioctl_fuzz: seed %" PRIu64 ": %" PRIu64 " calls in %.1f s (%.0f calls/s), "
	       "per-call errno counts", opt.seed, S->calls, secs,
	       secs > 0 ? S->calls / secs : 0.0);
	for (id = C_QUERY; id < NCALLS; id++) {
		bool any = false;

		for (e = 0; e < ERRNO_SLOTS; e++) {
			uint64_t n = S->count[id][e];

			if (!n)
				continue;
			if (!any)
				printf("%s%s ", first ? " " : "; ", calls[id].name);
			else
				printf(" ");
			any = true;
			first = false;
			if (!e)
				printf("ok=%" PRIu64, n);
			else if (errno_name(e))
				printf("%s=%" PRIu64, errno_name(e), n);
			else
				printf("E%d=%" PRIu64, e, n);
		}
	}
	printf("\n");
	slowest_calls();
}

static double now_s(void)
{
	return monotonic_us() / 1e6;
}

int main(int argc, char **argv)
{
	pid_t pids[MAX_PROCS];
	double start;
	uint32_t before = 0;
	bool ok;
	int i, fd;

	setvbuf(stdout, NULL, _IOLBF, 0);
	parse_args(argc, argv);
	printf("ioctl_fuzz: seed %" PRIu64 "\n", opt.seed);
	find_gid();
	setup_memory();
	setup_signals();
	snprintf(P.id, sizeof(P.id), "main");
	P.slot = MAIN_SLOT;
	wd_is_main = 1;
	fd = open(DEV_PATH, O_RDWR);
	if (fd < 0) {
		printf("ioctl_fuzz: cannot open %s: %s\n", DEV_PATH, strerror(errno));
		return 1;
	}
	i = live_ceps(fd, &before);
	if (i) {
		printf("ioctl_fuzz: cannot query %s: %s\n", DEV_PATH, strerror(i));
		return 1;
	}
	close(fd);
	if (before)
		printf("ioctl_fuzz: note: %u CEP(s) alive before the run\n", before);
	start = now_s();
	wd_is_main = 0;
	for (i = 0; i < opt.procs; i++) {
		pids[i] = start_worker(i);
		if (pids[i] < 0) {
			perror("ioctl_fuzz: fork");
			return 1;
		}
	}
	ok = wait_workers(pids);
	wd_is_main = 1;
	ok &= ceps_drained();
	summary(now_s() - start);
	return ok ? 0 : 1;
}
