// SPDX-License-Identifier: GPL-2.0
/*
 * rdma_create_qp_ex and rdma_create_srq_ex with extended attributes, which
 * librdmacm hands to ibv_create_qp_ex and ibv_create_srq_ex (rdma-core's
 * librdmacm/cma.c): a client of rdma-core's rdma_server, unmodified, whose
 * QP is made with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS (and the ID's PD, which
 * rdma_create_qp_ex fills in), so that its one 16-byte message goes out
 * through the extended send API (ibv_wr_start, ibv_wr_send, ibv_wr_complete);
 * the server's reply comes back through the receive queue.  Before that, an
 * XRC SRQ on the same ID must fail with the provider's errno, EOPNOTSUPP on
 * rxe, which has no XRC domains, as librdmacm's does (its ibv_open_xrcd
 * fails).
 *
 * Usage: rdma_qp_ex ADDRESS PORT
 * Prints what it saw and "rdma_qp_ex: end 0" after the exchange; exits 1 on
 * any failure (the failed call first, as perror prints it).
 */
#include <errno.h>
#include <string.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_verbs.h>
#include "rdma_test.h"

#define MSG_LEN 16

int main(int argc, char **argv)
{
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP }, *res;
	struct ibv_srq_init_attr_ex srq = {
		.comp_mask = IBV_SRQ_INIT_ATTR_TYPE,
		.srq_type = IBV_SRQT_XRC,
		.attr = { .max_wr = 4, .max_sge = 1 },
	};
	struct ibv_qp_init_attr_ex attr = {
		.comp_mask = IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.send_ops_flags = IBV_QP_EX_WITH_SEND,
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
		.sq_sig_all = 1,
	};
	uint8_t send_msg[MSG_LEN] = "rdma_qp_ex", recv_msg[MSG_LEN];
	struct ibv_mr *send_mr, *recv_mr;
	struct rdma_cm_id *id;
	struct ibv_qp_ex *qpx;
	struct ibv_wc wc;
	int ret;

	if (argc != 3) {
		fprintf(stderr, "usage: %s ADDRESS PORT\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (rdma_getaddrinfo(argv[1], argv[2], &hints, &res))
		return fail("rdma_getaddrinfo");
	if (rdma_create_ep(&id, res, NULL, NULL))
		return fail("rdma_create_ep");
	rdma_freeaddrinfo(res);

	errno = 0;
	ret = rdma_create_srq_ex(id, &srq);
	printf("rdma_create_srq_ex(XRC): %d (%s)\n", ret, strerror(errno));
	if (ret != -1 || errno != EOPNOTSUPP) {
		fprintf(stderr, "rdma_qp_ex: an XRC SRQ on rxe must fail with EOPNOTSUPP\n");
		return 1;
	}

	if (rdma_create_qp_ex(id, &attr))
		return fail("rdma_create_qp_ex");
	printf("rdma_create_qp_ex: QP %u, comp_mask %#x (the PD filled in: %d)\n", id->qp->qp_num,
	       attr.comp_mask, attr.pd == id->pd && (attr.comp_mask & IBV_QP_INIT_ATTR_PD));
	qpx = ibv_qp_to_qp_ex(id->qp);
	if (!qpx) {
		fprintf(stderr, "rdma_qp_ex: the QP has no ibv_qp_ex\n");
		return 1;
	}
	send_mr = rdma_reg_msgs(id, send_msg, MSG_LEN);
	recv_mr = rdma_reg_msgs(id, recv_msg, MSG_LEN);
	if (!send_mr || !recv_mr)
		return fail("rdma_reg_msgs");
	if (rdma_post_recv(id, NULL, recv_msg, MSG_LEN, recv_mr))
		return fail("rdma_post_recv");
	if (rdma_connect(id, NULL))
		return fail("rdma_connect");

	ibv_wr_start(qpx);
	qpx->wr_id = 1;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(qpx);
	ibv_wr_set_sge(qpx, send_mr->lkey, (uintptr_t)send_msg, MSG_LEN);
	ret = ibv_wr_complete(qpx);
	if (ret) {
		errno = ret;
		return fail("ibv_wr_complete");
	}
	if (rdma_get_send_comp(id, &wc) <= 0)
		return fail("rdma_get_send_comp");
	if (wc.status != IBV_WC_SUCCESS || wc.wr_id != 1) {
		fprintf(stderr, "rdma_qp_ex: send completion %s, wr_id %lu\n",
			ibv_wc_status_str(wc.status), (unsigned long)wc.wr_id);
		return 1;
	}
	printf("sent %d bytes with ibv_wr_send\n", MSG_LEN);
	if (rdma_get_recv_comp(id, &wc) <= 0)
		return fail("rdma_get_recv_comp");
	if (wc.status != IBV_WC_SUCCESS) {
		fprintf(stderr, "rdma_qp_ex: receive completion %s\n", ibv_wc_status_str(wc.status));
		return 1;
	}
	printf("received %u bytes\n", wc.byte_len);
	rdma_disconnect(id);
	rdma_dereg_mr(send_mr);
	rdma_dereg_mr(recv_mr);
	rdma_destroy_ep(id);
	printf("rdma_qp_ex: end 0\n");
	return 0;
}
