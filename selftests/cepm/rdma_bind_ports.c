// SPDX-License-Identifier: GPL-2.0
/*
 * rdma_bind_addr reserves its port, as the kernel's rdma_cm does (cma.c's
 * cma_get_port, cma_check_port and cma_alloc_any_port): one line per case,
 * "case: result", the result an errno name, 0, or what became of a port.
 * rdmacm_ports.sh runs it over cepm, rdmacm_stock.sh on the stock stack too,
 * and the two outputs must be equal.
 *
 * Usage: rdma_bind_ports ADDRESS PORT (ADDRESS: one of this host's RoCE
 * addresses; PORT to PORT + 2 free on it). Runs as root: one case drops to
 * uid 65534 in a child.  Exits 0 after the last case, whatever the results
 * (the caller compares them), 1 if the program itself cannot go on.
 *
 * rdma_bind_ports --binds N ADDRESS: N IDs bind ADDRESS:0 and hold their
 * ports; prints "N bound", or "bind K: ERRNO" for the first that fails.
 */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/wait.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include "rdma_test.h"

static struct rdma_event_channel *channel;
static struct sockaddr_in addr;
static int base_port;

static const char *errno_name(int rc, int err)
{
	static char other[32];

	if (rc == 0)
		return "0";
	switch (err) {
	case EADDRINUSE: return "EADDRINUSE";
	case EADDRNOTAVAIL: return "EADDRNOTAVAIL";
	case EACCES: return "EACCES";
	case EINVAL: return "EINVAL";
	case EDQUOT: return "EDQUOT";
	}
	snprintf(other, sizeof(other), "errno %d", err);
	return other;
}

static struct rdma_cm_id *new_id(void)
{
	struct rdma_cm_id *id;

	if (rdma_create_id(channel, &id, NULL, RDMA_PS_TCP)) {
		perror("rdma_create_id");
		exit(1);
	}
	return id;
}

/* Binds @id to @ip (network order) and @port, with REUSEADDR first if @reuse: the result. */
static const char *bind_to(struct rdma_cm_id *id, in_addr_t ip, int port, int reuse)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = ip,
				   .sin_port = htons(port) };
	int one = 1, rc;

	if (reuse && rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, &one,
				     sizeof(one)))
		return errno_name(-1, errno);
	rc = rdma_bind_addr(id, (struct sockaddr *)&sin);
	return errno_name(rc, errno);
}

/* Binds @id to [::] and @port, with AFONLY set to @afonly first: the result. */
static const char *bind6_to(struct rdma_cm_id *id, int port, int afonly)
{
	struct sockaddr_in6 sin6 = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_ANY_INIT,
				     .sin6_port = htons(port) };
	int rc;

	if (rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY, &afonly, sizeof(afonly)))
		return errno_name(-1, errno);
	rc = rdma_bind_addr(id, (struct sockaddr *)&sin6);
	return errno_name(rc, errno);
}

static const char *listen_on(struct rdma_cm_id *id)
{
	int rc = rdma_listen(id, 4);

	return errno_name(rc, errno);
}

/* Whether @port is in this namespace's ip_local_port_range. */
static int ephemeral(int port)
{
	FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
	int low = 0, high = 0;

	if (!f || fscanf(f, "%d %d", &low, &high) != 2) {
		perror("ip_local_port_range");
		exit(1);
	}
	fclose(f);
	return port >= low && port <= high;
}

static void port_result(const char *what, int port)
{
	if (ephemeral(port))
		printf("%s: ephemeral\n", what);
	else
		printf("%s: port %d\n", what, port);
}

/* The result of binding A:@port in a child process, as uid 65534 if @drop: its exit status names it. */
static const char *in_child(int port, int drop)
{
	static const char *const names[] = { "0", "EADDRINUSE", "EADDRNOTAVAIL", "EACCES",
					     "EINVAL", "other" };
	int status;
	pid_t pid = fork();

	if (pid < 0) {
		perror("fork");
		exit(1);
	}
	if (pid == 0) {
		const char *r;
		unsigned int i;

		if (drop && (setgid(65534) || setuid(65534)))
			_exit(10);
		/* Its own channel: a file this process opens. */
		channel = rdma_create_event_channel();
		if (!channel)
			_exit(11);
		r = bind_to(new_id(), addr.sin_addr.s_addr, port, 0);
		for (i = 0; i < 5; i++)
			if (!strcmp(r, names[i]))
				_exit(i);
		_exit(5);
	}
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return "no exit status";
	if (WEXITSTATUS(status) > 5) {
		static char failed[32];

		snprintf(failed, sizeof(failed), "the child failed (%d)", WEXITSTATUS(status));
		return failed;
	}
	return names[WEXITSTATUS(status)];
}

/* Open MPI's step: bind 0.0.0.0:0, read the port, listen, and a client connects to it. */
static void open_mpi_step(void)
{
	struct rdma_conn_param param = { .qp_num = 0x123, .responder_resources = 1,
					 .initiator_depth = 1, .retry_count = 7 };
	struct rdma_event_channel *cchannel = rdma_create_event_channel();
	struct rdma_cm_id *server = new_id(), *client;
	struct sockaddr_in to = addr;
	struct rdma_cm_event *event;
	const char *got = "no event";
	int port;

	bind_to(server, htonl(INADDR_ANY), 0, 0);
	port = ntohs(rdma_get_src_port(server));
	port_result("open mpi: rdma_get_src_port after bind", port);
	printf("open mpi: listen: %s\n", listen_on(server));
	to.sin_port = htons(port);
	if (!cchannel || rdma_create_id(cchannel, &client, NULL, RDMA_PS_TCP)) {
		perror("client");
		exit(1);
	}
	if (rdma_resolve_addr(client, NULL, (struct sockaddr *)&to, 5000) ||
	    rdma_get_cm_event(cchannel, &event)) {
		perror("rdma_resolve_addr");
		exit(1);
	}
	rdma_ack_cm_event(event);
	if (rdma_resolve_route(client, 5000) || rdma_get_cm_event(cchannel, &event)) {
		perror("rdma_resolve_route");
		exit(1);
	}
	rdma_ack_cm_event(event);
	if (rdma_connect(client, &param)) {
		perror("rdma_connect");
		exit(1);
	}
	/* The server hears the request (and rejects it), within 10 s. */
	if (poll(&(struct pollfd){ .fd = channel->fd, .events = POLLIN }, 1, 10000) == 1 &&
	    !rdma_get_cm_event(channel, &event)) {
		got = rdma_event_str(event->event);
		if (event->event == RDMA_CM_EVENT_CONNECT_REQUEST)
			rdma_reject(event->id, NULL, 0);
		rdma_ack_cm_event(event);
	}
	printf("open mpi: the server's event: %s\n", got);
	if (poll(&(struct pollfd){ .fd = cchannel->fd, .events = POLLIN }, 1, 30000) == 1 &&
	    !rdma_get_cm_event(cchannel, &event)) {
		printf("open mpi: the client's event: %s\n", rdma_event_str(event->event));
		rdma_ack_cm_event(event);
	}
	rdma_destroy_id(client);
	rdma_destroy_id(server);
	rdma_destroy_event_channel(cchannel);
}

/* Two new IDs, *@a and *@b, bind A:P one after the other, with REUSEADDR if @reuse. */
static void bind_twice(in_addr_t ip, int reuse, struct rdma_cm_id **a, struct rdma_cm_id **b)
{
	*a = new_id();
	*b = new_id();
	printf("bind A:P%s: %s\n", reuse ? " with REUSEADDR" : "",
	       bind_to(*a, ip, base_port, reuse));
	printf("bind A:P again%s: %s\n", reuse ? " with REUSEADDR" : ", no REUSEADDR",
	       bind_to(*b, ip, base_port, reuse));
}

static int parse_addr(const char *text)
{
	addr.sin_family = AF_INET;
	if (inet_pton(AF_INET, text, &addr.sin_addr) != 1) {
		fprintf(stderr, "%s: not an IPv4 address\n", text);
		return 1;
	}
	return 0;
}

/* @n IDs bind @text:0, each holding its port until the exit. */
static int binds(int n, const char *text)
{
	const char *r;
	int i;

	if (parse_addr(text))
		return 2;
	channel = rdma_create_event_channel();
	if (!channel)
		return fail("rdma_create_event_channel");
	for (i = 1; i <= n; i++) {
		r = bind_to(new_id(), addr.sin_addr.s_addr, 0, 0);
		if (strcmp(r, "0")) {
			printf("bind %d: %s\n", i, r);
			return 0;
		}
	}
	printf("%d bound\n", n);
	return 0;
}

int main(int argc, char **argv)
{
	struct rdma_cm_id *a, *b;
	int zero = 0, rc, port_a, port_b;
	in_addr_t ip;
	const char *r;

	if (argc == 4 && !strcmp(argv[1], "--binds"))
		return binds(atoi(argv[2]), argv[3]);
	if (argc != 3) {
		fprintf(stderr, "usage: %s ADDRESS PORT | --binds N ADDRESS\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (parse_addr(argv[1]))
		return 2;
	ip = addr.sin_addr.s_addr;
	base_port = atoi(argv[2]);
	channel = rdma_create_event_channel();
	if (!channel)
		return fail("rdma_create_event_channel");

	a = new_id();
	r = bind_to(a, htonl(INADDR_ANY), 0, 0);
	port_a = ntohs(rdma_get_src_port(a));
	printf("bind 0.0.0.0:0: %s\n", r);
	port_result("bind 0.0.0.0:0: rdma_get_src_port", port_a);
	b = new_id();
	bind_to(b, htonl(INADDR_ANY), 0, 0);
	port_b = ntohs(rdma_get_src_port(b));
	printf("a second bind 0.0.0.0:0: %s\n",
	       port_a && port_b && port_a != port_b ? "another port" : "the same port");
	rdma_destroy_id(a);
	rdma_destroy_id(b);

	bind_twice(ip, 0, &a, &b);
	rdma_destroy_id(a);
	rdma_destroy_id(b);

	bind_twice(ip, 1, &a, &b);
	printf("listen on the first while the second holds A:P: %s\n", listen_on(a));
	rdma_destroy_id(b);
	printf("listen on the first alone: %s\n", listen_on(a));
	b = new_id();
	printf("bind 0.0.0.0:P while A:P listens: %s\n", bind_to(b, htonl(INADDR_ANY), base_port, 0));
	rdma_destroy_id(b);
	b = new_id();
	printf("bind A:P with REUSEADDR while A:P listens: %s\n", bind_to(b, ip, base_port, 1));
	rdma_destroy_id(b);
	printf("bind A:P in another process while A:P listens: %s\n", in_child(base_port, 0));
	rdma_destroy_id(a);
	printf("bind A:P in another process after the destroy: %s\n", in_child(base_port, 0));
	printf("bind A:1000 as uid 65534: %s\n", in_child(1000, 1));

	a = new_id();
	printf("destroy, then bind A:P again: %s\n", bind_to(a, ip, base_port, 0));
	rc = rdma_set_option(a, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, &zero, sizeof(zero));
	printf("clear REUSEADDR after the bind: %s\n", errno_name(rc, errno));
	rdma_destroy_id(a);

	a = new_id();
	printf("bind A:P+1: %s\n", bind_to(a, ip, base_port + 1, 0));
	printf("listen A:P+1: %s\n", listen_on(a));
	b = new_id();
	printf("listen on an unbound ID: %s\n", listen_on(b));
	port_b = ntohs(rdma_get_src_port(b));
	port_result("listen on an unbound ID: rdma_get_src_port", port_b);
	rdma_destroy_id(b);
	rdma_destroy_id(a);

	/* An IPv4 ID is AFONLY; an IPv6 one only if asked (net.ipv6.bindv6only is 0). */
	a = new_id();
	printf("bind 0.0.0.0:P+2: %s\n", bind_to(a, htonl(INADDR_ANY), base_port + 2, 0));
	b = new_id();
	printf("bind [::]:P+2 without AFONLY: %s\n", bind6_to(b, base_port + 2, 0));
	rdma_destroy_id(b);
	b = new_id();
	printf("bind [::]:P+2 with AFONLY: %s\n", bind6_to(b, base_port + 2, 1));
	rc = rdma_set_option(b, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY, &zero, sizeof(zero));
	printf("AFONLY cleared on a bound ID: %s\n", errno_name(rc, errno));
	rdma_destroy_id(b);
	rdma_destroy_id(a);

	open_mpi_step();
	rdma_destroy_event_channel(channel);
	printf("rdma_bind_ports: end\n");
	return 0;
}
