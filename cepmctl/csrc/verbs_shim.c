// SPDX-License-Identifier: GPL-2.0
/*
 * Thin wrappers over libibverbs for cepmctl/src/verbs.rs; see verbs_shim.h.  No policy here:
 * each function is one verb with its attribute struct filled from flat arguments.
 */
#include <errno.h>
#include <string.h>
#include <infiniband/verbs.h>

#include "verbs_shim.h"

/* Every constant of the header is the libibverbs value it names. */
#define SAME(ours, theirs) _Static_assert((ours) == (theirs), #ours " != " #theirs)
SAME(CEPM_VERBS_MTU_256, IBV_MTU_256);
SAME(CEPM_VERBS_MTU_512, IBV_MTU_512);
SAME(CEPM_VERBS_MTU_1024, IBV_MTU_1024);
SAME(CEPM_VERBS_MTU_2048, IBV_MTU_2048);
SAME(CEPM_VERBS_MTU_4096, IBV_MTU_4096);
SAME(CEPM_VERBS_ACCESS_LOCAL_WRITE, IBV_ACCESS_LOCAL_WRITE);
SAME(CEPM_VERBS_ACCESS_REMOTE_WRITE, IBV_ACCESS_REMOTE_WRITE);
SAME(CEPM_VERBS_ACCESS_REMOTE_READ, IBV_ACCESS_REMOTE_READ);
SAME(CEPM_VERBS_ACCESS_REMOTE_ATOMIC, IBV_ACCESS_REMOTE_ATOMIC);
SAME(CEPM_VERBS_PORT_NOP, IBV_PORT_NOP);
SAME(CEPM_VERBS_PORT_DOWN, IBV_PORT_DOWN);
SAME(CEPM_VERBS_PORT_INIT, IBV_PORT_INIT);
SAME(CEPM_VERBS_PORT_ARMED, IBV_PORT_ARMED);
SAME(CEPM_VERBS_PORT_ACTIVE, IBV_PORT_ACTIVE);
SAME(CEPM_VERBS_PORT_ACTIVE_DEFER, IBV_PORT_ACTIVE_DEFER);
SAME(CEPM_VERBS_LINK_LAYER_UNSPECIFIED, IBV_LINK_LAYER_UNSPECIFIED);
SAME(CEPM_VERBS_LINK_LAYER_INFINIBAND, IBV_LINK_LAYER_INFINIBAND);
SAME(CEPM_VERBS_LINK_LAYER_ETHERNET, IBV_LINK_LAYER_ETHERNET);
SAME(CEPM_VERBS_QPS_RESET, IBV_QPS_RESET);
SAME(CEPM_VERBS_QPS_INIT, IBV_QPS_INIT);
SAME(CEPM_VERBS_QPS_RTR, IBV_QPS_RTR);
SAME(CEPM_VERBS_QPS_RTS, IBV_QPS_RTS);
SAME(CEPM_VERBS_QPS_SQD, IBV_QPS_SQD);
SAME(CEPM_VERBS_QPS_SQE, IBV_QPS_SQE);
SAME(CEPM_VERBS_QPS_ERR, IBV_QPS_ERR);
SAME(CEPM_VERBS_QPS_UNKNOWN, IBV_QPS_UNKNOWN);
SAME(CEPM_VERBS_WC_SUCCESS, IBV_WC_SUCCESS);
SAME(CEPM_VERBS_WC_WR_FLUSH_ERR, IBV_WC_WR_FLUSH_ERR);
SAME(CEPM_VERBS_WC_SEND, IBV_WC_SEND);
SAME(CEPM_VERBS_WC_RDMA_WRITE, IBV_WC_RDMA_WRITE);
SAME(CEPM_VERBS_WC_RDMA_READ, IBV_WC_RDMA_READ);
SAME(CEPM_VERBS_WC_RECV, IBV_WC_RECV);
SAME(sizeof(((struct cepm_verbs_ah *)0)->dgid), sizeof(union ibv_gid));

/*
 * libibverbs reports errors three ways: a positive errno (modify_qp, post_*, dealloc_pd, ...),
 * -1 with errno set (close_device, query_qp on some providers), or a negative errno.
 */
static int to_errno(int rc)
{
	if (rc == 0)
		return 0;
	if (rc > 0)
		return rc;
	if (rc == -1)
		return errno ? errno : EIO;
	return -rc;
}

struct ibv_context *cepm_verbs_open_device(const char *name)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	int i, n, err = ENODEV;

	list = ibv_get_device_list(&n);
	if (!list)
		return NULL;
	for (i = 0; i < n; i++) {
		if (strcmp(ibv_get_device_name(list[i]), name) == 0) {
			ctx = ibv_open_device(list[i]);
			err = ctx ? 0 : (errno ? errno : EIO);
			break;
		}
	}
	/* Contexts opened from the list stay valid after it is freed. */
	ibv_free_device_list(list);
	errno = err;
	return ctx;
}

int cepm_verbs_close_device(struct ibv_context *ctx)
{
	return to_errno(ibv_close_device(ctx));
}

int cepm_verbs_query_port(struct ibv_context *ctx, uint8_t port, struct cepm_verbs_port_attr *out)
{
	struct ibv_port_attr attr;
	int rc;

	memset(&attr, 0, sizeof(attr));
	rc = to_errno(ibv_query_port(ctx, port, &attr));
	if (rc)
		return rc;
	memset(out, 0, sizeof(*out));
	out->state = attr.state;
	out->max_mtu = attr.max_mtu;
	out->active_mtu = attr.active_mtu;
	out->gid_tbl_len = attr.gid_tbl_len;
	out->max_msg_sz = attr.max_msg_sz;
	out->pkey_tbl_len = attr.pkey_tbl_len;
	out->lid = attr.lid;
	out->link_layer = attr.link_layer;
	return 0;
}

struct ibv_pd *cepm_verbs_alloc_pd(struct ibv_context *ctx)
{
	return ibv_alloc_pd(ctx);
}

int cepm_verbs_dealloc_pd(struct ibv_pd *pd)
{
	return to_errno(ibv_dealloc_pd(pd));
}

struct ibv_comp_channel *cepm_verbs_create_comp_channel(struct ibv_context *ctx)
{
	return ibv_create_comp_channel(ctx);
}

int cepm_verbs_comp_channel_fd(const struct ibv_comp_channel *channel)
{
	return channel->fd;
}

int cepm_verbs_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	return to_errno(ibv_destroy_comp_channel(channel));
}

struct ibv_cq *cepm_verbs_create_cq(struct ibv_context *ctx, int cqe, struct ibv_comp_channel *channel)
{
	return ibv_create_cq(ctx, cqe, NULL, channel, 0);
}

int cepm_verbs_destroy_cq(struct ibv_cq *cq)
{
	return to_errno(ibv_destroy_cq(cq));
}

int cepm_verbs_req_notify_cq(struct ibv_cq *cq)
{
	return to_errno(ibv_req_notify_cq(cq, 0));
}

int cepm_verbs_consume_cq_event(struct ibv_comp_channel *channel)
{
	struct ibv_cq *cq;
	void *cq_context;

	if (ibv_get_cq_event(channel, &cq, &cq_context))
		return errno ? errno : EIO;
	ibv_ack_cq_events(cq, 1);
	return 0;
}

int cepm_verbs_poll_cq(struct ibv_cq *cq, int n, struct cepm_verbs_wc *wc)
{
	struct ibv_wc raw[16];
	int i, got;

	if (n > (int)(sizeof(raw) / sizeof(raw[0])))
		n = sizeof(raw) / sizeof(raw[0]);
	got = ibv_poll_cq(cq, n, raw);
	for (i = 0; i < got; i++) {
		memset(&wc[i], 0, sizeof(wc[i]));
		wc[i].wr_id = raw[i].wr_id;
		wc[i].status = raw[i].status;
		wc[i].opcode = raw[i].opcode;
		wc[i].vendor_err = raw[i].vendor_err;
		wc[i].byte_len = raw[i].byte_len;
		wc[i].qp_num = raw[i].qp_num;
	}
	return got;
}

const char *cepm_verbs_wc_status_str(uint32_t status)
{
	return ibv_wc_status_str((enum ibv_wc_status)status);
}

struct ibv_mr *cepm_verbs_reg_mr(struct ibv_pd *pd, void *addr, uint64_t length, uint32_t access)
{
	return ibv_reg_mr(pd, addr, length, (int)access);
}

uint32_t cepm_verbs_mr_lkey(const struct ibv_mr *mr)
{
	return mr->lkey;
}

int cepm_verbs_dereg_mr(struct ibv_mr *mr)
{
	return to_errno(ibv_dereg_mr(mr));
}

struct ibv_qp *cepm_verbs_create_rc_qp(struct ibv_pd *pd, struct ibv_cq *cq, struct cepm_verbs_qp_caps *caps)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp *qp;

	memset(&init, 0, sizeof(init));
	init.send_cq = cq;
	init.recv_cq = cq;
	init.qp_type = IBV_QPT_RC;
	init.sq_sig_all = 0;
	init.cap.max_send_wr = caps->max_send_wr;
	init.cap.max_recv_wr = caps->max_recv_wr;
	init.cap.max_send_sge = caps->max_send_sge;
	init.cap.max_recv_sge = caps->max_recv_sge;
	init.cap.max_inline_data = caps->max_inline_data;
	qp = ibv_create_qp(pd, &init);
	if (!qp)
		return NULL;
	/* ibv_create_qp updates init.cap with the capacities actually granted. */
	caps->max_send_wr = init.cap.max_send_wr;
	caps->max_recv_wr = init.cap.max_recv_wr;
	caps->max_send_sge = init.cap.max_send_sge;
	caps->max_recv_sge = init.cap.max_recv_sge;
	caps->max_inline_data = init.cap.max_inline_data;
	return qp;
}

uint32_t cepm_verbs_qp_num(const struct ibv_qp *qp)
{
	return qp->qp_num;
}

int cepm_verbs_destroy_qp(struct ibv_qp *qp)
{
	return to_errno(ibv_destroy_qp(qp));
}

int cepm_verbs_query_qp_state(struct ibv_qp *qp, uint32_t *state)
{
	struct ibv_qp_attr attr;
	struct ibv_qp_init_attr init;
	int rc;

	memset(&attr, 0, sizeof(attr));
	rc = to_errno(ibv_query_qp(qp, &attr, IBV_QP_STATE, &init));
	if (rc == 0)
		*state = attr.qp_state;
	return rc;
}

int cepm_verbs_modify_qp_init(struct ibv_qp *qp, uint8_t port, uint16_t pkey_index, uint32_t access)
{
	struct ibv_qp_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_INIT;
	attr.port_num = port;
	attr.pkey_index = pkey_index;
	attr.qp_access_flags = access;
	return to_errno(ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					     IBV_QP_ACCESS_FLAGS));
}

static void to_ah_attr(const struct cepm_verbs_ah *ah, struct ibv_ah_attr *out)
{
	memcpy(out->grh.dgid.raw, ah->dgid, sizeof(out->grh.dgid.raw));
	out->grh.flow_label = ah->flow_label;
	out->grh.sgid_index = ah->sgid_index;
	out->grh.hop_limit = ah->hop_limit;
	out->grh.traffic_class = ah->traffic_class;
	out->dlid = ah->dlid;
	out->sl = ah->sl;
	out->src_path_bits = ah->src_path_bits;
	out->static_rate = ah->static_rate;
	out->is_global = ah->is_global;
	out->port_num = ah->port_num;
}

int cepm_verbs_modify_qp_rtr(struct ibv_qp *qp, const struct cepm_verbs_rtr *rtr)
{
	struct ibv_qp_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_RTR;
	attr.path_mtu = (enum ibv_mtu)rtr->path_mtu;
	attr.dest_qp_num = rtr->dest_qpn;
	attr.rq_psn = rtr->rq_psn;
	attr.max_dest_rd_atomic = rtr->max_dest_rd_atomic;
	attr.min_rnr_timer = rtr->min_rnr_timer;
	to_ah_attr(&rtr->ah, &attr.ah_attr);
	return to_errno(ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
					     IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					     IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER));
}

int cepm_verbs_modify_qp_rts(struct ibv_qp *qp, const struct cepm_verbs_rts *rts)
{
	struct ibv_qp_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_RTS;
	attr.sq_psn = rts->sq_psn;
	attr.timeout = rts->timeout;
	attr.retry_cnt = rts->retry_cnt;
	attr.rnr_retry = rts->rnr_retry;
	attr.max_rd_atomic = rts->max_rd_atomic;
	return to_errno(ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
					     IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
					     IBV_QP_MAX_QP_RD_ATOMIC));
}

int cepm_verbs_modify_qp_err(struct ibv_qp *qp)
{
	struct ibv_qp_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_ERR;
	return to_errno(ibv_modify_qp(qp, &attr, IBV_QP_STATE));
}

/* A one-SGE send work request on `sge`, but for its opcode and opcode-specific fields. */
static void init_send_wr(struct ibv_send_wr *wr, struct ibv_sge *sge, uint64_t wr_id, int signaled)
{
	memset(wr, 0, sizeof(*wr));
	wr->wr_id = wr_id;
	wr->sg_list = sge;
	wr->num_sge = 1;
	wr->send_flags = signaled ? IBV_SEND_SIGNALED : 0;
}

int cepm_verbs_post_send(struct ibv_qp *qp, uint64_t wr_id, const void *addr, uint32_t length,
			 uint32_t lkey, int signaled)
{
	struct ibv_sge sge = { .addr = (uintptr_t)addr, .length = length, .lkey = lkey };
	struct ibv_send_wr wr, *bad;

	init_send_wr(&wr, &sge, wr_id, signaled);
	wr.opcode = IBV_WR_SEND;
	return to_errno(ibv_post_send(qp, &wr, &bad));
}

int cepm_verbs_post_recv(struct ibv_qp *qp, uint64_t wr_id, void *addr, uint32_t length, uint32_t lkey)
{
	struct ibv_sge sge = { .addr = (uintptr_t)addr, .length = length, .lkey = lkey };
	struct ibv_recv_wr wr, *bad;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	return to_errno(ibv_post_recv(qp, &wr, &bad));
}
