// SPDX-License-Identifier: GPL-2.0
/*
 * A server that readies its QP before it accepts, as UCX's rdmacm transport
 * and SPDK's mlx5_dv provider do: on CONNECT_REQUEST it reads the RTR
 * attributes of the request's ID (rdma_init_qp_attr: the address UCX takes
 * its peer's GID and path MTU from), then moves a QP it made itself with
 * ibv_create_qp, not rdma_create_qp, through INIT, RTR and RTS with
 * rdma_init_qp_attr and ibv_modify_qp, and only then calls rdma_accept with
 * that QP's number.  The REP must announce the receive PSN the QP went to RTR
 * with: if it does not, the client's first SEND is out of sequence and the
 * exchange fails.  The client is rdma-core's rdma_client, unmodified: one
 * 16-byte message each way.
 *
 * Usage: rdma_qp_before_accept ADDRESS PORT
 * Prints "listening" once it listens; exits 0 after one exchange, 1 on any
 * failure (the failed call first, as perror prints it).
 */
#include <string.h>
#include <time.h>
#include <infiniband/verbs.h>
#include "rdma_test.h"

#define MSG_LEN 16
/*
 * How long the server waits for a completion, in 10 ms naps: longer than the selftests' own
 * bound on a tool (timeout 120), which then stops a server hung on a lost ACK as it stops
 * rdma_server, with the status lib.sh's rxe_lost_ack looks for.
 */
#define COMPLETION_NAPS 15000

static int complain(const char *what)
{
	fprintf(stderr, "rdma_qp_before_accept: %s\n", what);
	return 1;
}

/* Moves @qp to @state with the attributes rdma_init_qp_attr gives @id for it. */
static int move_qp(struct rdma_cm_id *id, struct ibv_qp *qp, enum ibv_qp_state state,
		   const char *what, struct ibv_qp_attr *attr)
{
	int mask;

	memset(attr, 0, sizeof(*attr));
	attr->qp_state = state;
	if (rdma_init_qp_attr(id, attr, &mask))
		return fail(what);
	if (ibv_modify_qp(qp, attr, mask)) {
		fprintf(stderr, "ibv_modify_qp to %s: %s\n", what + strlen("rdma_init_qp_attr "),
			strerror(errno));
		return 1;
	}
	return 0;
}

/* Waits for one completion on @cq, of the kind @what names: 0, or 1 after saying why not. */
static int one_completion(struct ibv_cq *cq, const char *what, struct ibv_wc *wc)
{
	struct timespec nap = { .tv_nsec = 10 * 1000 * 1000 };
	int n, naps = 0;

	while ((n = ibv_poll_cq(cq, 1, wc)) == 0 && naps++ < COMPLETION_NAPS)
		nanosleep(&nap, NULL);
	if (n < 0)
		return fail("ibv_poll_cq");
	if (n == 0) {
		fprintf(stderr, "rdma_qp_before_accept: no %s completion in %d s\n", what,
			COMPLETION_NAPS / 100);
		return 1;
	}
	if (wc->status != IBV_WC_SUCCESS) {
		fprintf(stderr, "rdma_qp_before_accept: %s completed with %s\n", what,
			ibv_wc_status_str(wc->status));
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct addrinfo hints = { .ai_flags = AI_PASSIVE }, *addr;
	struct ibv_qp_init_attr init = {
		.cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
		.sq_sig_all = 1,
	};
	struct rdma_conn_param param = { .retry_count = 7, .rnr_retry_count = 7 };
	struct rdma_event_channel *channel;
	struct rdma_cm_id *listen_id, *id;
	struct rdma_cm_event *event;
	struct ibv_recv_wr rwr = { 0 }, *bad_rwr;
	struct ibv_send_wr swr = { 0 }, *bad_swr;
	struct ibv_qp_attr attr;
	union ibv_gid peer_gid;
	char buf[MSG_LEN];
	struct ibv_sge sge;
	struct ibv_wc wc;
	struct ibv_mr *mr;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	int mask;

	if (argc != 3) {
		fprintf(stderr, "usage: %s ADDRESS PORT\n", argv[0]);
		return 2;
	}
	if (getaddrinfo(argv[1], argv[2], &hints, &addr))
		return fail("getaddrinfo");
	channel = rdma_create_event_channel();
	if (!channel)
		return fail("rdma_create_event_channel");
	if (rdma_create_id(channel, &listen_id, NULL, RDMA_PS_TCP))
		return fail("rdma_create_id");
	if (listen_for_request(channel, listen_id, addr, &event))
		return 1;
	id = event->id;

	/* What UCX reads from the request's ID before anything else (uct_rdmacm_cm_id_to_dev_addr). */
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_RTR;
	if (rdma_init_qp_attr(id, &attr, &mask))
		return fail("rdma_init_qp_attr RTR");
	if (gid_of(rdma_get_peer_addr(id), &peer_gid))
		return complain("the request's peer address is neither IPv4 nor IPv6");
	printf("request: is_global %u, path_mtu %d, dest_qp_num %u, rq_psn %u\n",
	       attr.ah_attr.is_global, attr.path_mtu, attr.dest_qp_num, attr.rq_psn);
	if (!attr.ah_attr.is_global || memcmp(&attr.ah_attr.grh.dgid, &peer_gid, sizeof(peer_gid)))
		return complain("the request's RTR address is not global, or not to the peer's GID");
	if (!attr.path_mtu)
		return complain("the request's RTR attributes have no path MTU");
	if (!(mask & IBV_QP_RQ_PSN) || !(mask & IBV_QP_DEST_QPN) || !(mask & IBV_QP_AV))
		return complain("the request's RTR mask lacks the RQ PSN, the peer's QPN or the address");
	if (!id->verbs || !id->pd)
		return complain("the request's ID has no device or no PD");

	/* A QP the ID does not know of (id->qp stays NULL), on the ID's PD. */
	cq = ibv_create_cq(id->verbs, 2, NULL, NULL, 0);
	if (!cq)
		return fail("ibv_create_cq");
	init.send_cq = cq;
	init.recv_cq = cq;
	qp = ibv_create_qp(id->pd, &init);
	if (!qp)
		return fail("ibv_create_qp");
	mr = ibv_reg_mr(id->pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	if (!mr)
		return fail("ibv_reg_mr");
	sge = (struct ibv_sge){ .addr = (uintptr_t)buf, .length = sizeof(buf), .lkey = mr->lkey };

	if (move_qp(id, qp, IBV_QPS_INIT, "rdma_init_qp_attr INIT", &attr))
		return 1;
	/* A receive is legal from INIT on; posted before the peer can send. */
	rwr.sg_list = &sge;
	rwr.num_sge = 1;
	if (ibv_post_recv(qp, &rwr, &bad_rwr))
		return fail("ibv_post_recv");
	if (move_qp(id, qp, IBV_QPS_RTR, "rdma_init_qp_attr RTR", &attr))
		return 1;
	printf("rtr rq_psn=%u max_dest_rd_atomic=%u\n", attr.rq_psn, attr.max_dest_rd_atomic);
	param.responder_resources = attr.max_dest_rd_atomic;
	if (move_qp(id, qp, IBV_QPS_RTS, "rdma_init_qp_attr RTS", &attr))
		return 1;
	printf("rts sq_psn=%u max_rd_atomic=%u\n", attr.sq_psn, attr.max_rd_atomic);
	param.initiator_depth = attr.max_rd_atomic;
	param.qp_num = qp->qp_num;

	if (rdma_accept(id, &param))
		return fail("rdma_accept");
	rdma_ack_cm_event(event);
	if (expect_event(channel, RDMA_CM_EVENT_ESTABLISHED, &event))
		return 1;
	rdma_ack_cm_event(event);

	if (one_completion(cq, "receive", &wc))
		return 1;
	if (wc.opcode != IBV_WC_RECV || wc.byte_len != MSG_LEN)
		return complain("the completion is not a receive of 16 bytes");
	printf("received %u bytes\n", wc.byte_len);
	swr.sg_list = &sge;
	swr.num_sge = 1;
	swr.opcode = IBV_WR_SEND;
	if (ibv_post_send(qp, &swr, &bad_swr))
		return fail("ibv_post_send");
	if (one_completion(cq, "send", &wc))
		return 1;

	rdma_disconnect(id);
	ibv_destroy_qp(qp);
	ibv_dereg_mr(mr);
	ibv_destroy_cq(cq);
	rdma_destroy_id(id);
	rdma_destroy_id(listen_id);
	rdma_destroy_event_channel(channel);
	printf("rdma_qp_before_accept: end 0\n");
	return 0;
}
