// SPDX-License-Identifier: GPL-2.0
/*
 * rdma-core's rdma_server exchange (one 16-byte message each way, with the
 * unmodified rdma_client), but the server's receive is posted on a shared
 * receive queue that rdma_create_srq(3) gave the connection's ID, and its QP,
 * made after, must take that SRQ by itself.  None of rdma-core's example tools
 * uses rdma_create_srq; the selftests run this over cepm's library and over
 * the stock librdmacm.
 *
 * Usage: rdma_srq_server ADDRESS PORT
 * Prints "listening" once it listens; exits 0 after one exchange.
 */
#include <string.h>
#include <rdma/rdma_verbs.h>
#include "rdma_test.h"

#define MSG_LEN 16

static int complain(const char *what)
{
	fprintf(stderr, "rdma_srq_server: %s\n", what);
	return 1;
}

int main(int argc, char **argv)
{
	struct rdma_addrinfo hints = { .ai_flags = RAI_PASSIVE, .ai_port_space = RDMA_PS_TCP };
	struct ibv_srq_init_attr srq_attr = { .attr = { .max_wr = 4, .max_sge = 1 } };
	struct ibv_qp_init_attr qp_attr = {
		.cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
		.sq_sig_all = 1,
	};
	struct rdma_cm_id *listen_id, *id;
	struct rdma_addrinfo *res;
	struct ibv_mr *mr;
	struct ibv_wc wc;
	char buf[MSG_LEN];
	int n;

	if (argc != 3) {
		fprintf(stderr, "usage: %s ADDRESS PORT\n", argv[0]);
		return 2;
	}
	if (rdma_getaddrinfo(argv[1], argv[2], &hints, &res))
		return fail("rdma_getaddrinfo");
	if (rdma_create_ep(&listen_id, res, NULL, NULL))
		return fail("rdma_create_ep");
	rdma_freeaddrinfo(res);
	if (rdma_listen(listen_id, 1))
		return fail("rdma_listen");
	printf("listening\n");
	fflush(stdout);

	if (rdma_get_request(listen_id, &id))
		return fail("rdma_get_request");
	if (rdma_create_srq(id, NULL, &srq_attr))
		return fail("rdma_create_srq");
	if (!id->srq || srq_attr.attr.max_wr < 4)
		return complain("rdma_create_srq gave the ID no SRQ of 4 entries");
	if (rdma_create_qp(id, NULL, &qp_attr))
		return fail("rdma_create_qp");
	if (id->qp->srq != id->srq || qp_attr.srq != id->srq)
		return complain("the QP does not take the ID's SRQ");

	/* With id->srq set, rdma_post_recv posts on the SRQ. */
	if (post_recv_and_accept(id, buf, sizeof(buf), &mr))
		return 1;

	while ((n = rdma_get_recv_comp(id, &wc)) == 0)
		;
	if (n < 0)
		return fail("rdma_get_recv_comp");
	if (wc.status != IBV_WC_SUCCESS || wc.qp_num != id->qp->qp_num)
		return complain("the receive did not complete on the connection's QP");
	printf("received %u bytes through the SRQ\n", wc.byte_len);

	if (send_back(id, buf, sizeof(buf), mr))
		return 1;

	rdma_disconnect(id);
	rdma_dereg_mr(mr);
	/* The QP, then the SRQ, then the ID. */
	rdma_destroy_ep(id);
	rdma_destroy_ep(listen_id);
	printf("rdma_srq_server: end 0\n");
	return 0;
}
