/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The Rust <-> libibverbs boundary of cepmctl (cepmctl/src/verbs.rs).
 *
 * libibverbs' data path (ibv_post_send, ibv_post_recv, ibv_poll_cq, ibv_req_notify_cq) is made
 * of static inline functions and its attribute structs are large, so Rust does not call
 * libibverbs directly: it calls these functions, which take flat arguments and the small
 * structs below.  The shim holds no policy.
 *
 * This header is deliberately self-contained (only <stdint.h>): build.rs runs bindgen on it to
 * produce the Rust declarations, and verbs_shim.c checks every constant and enum value here
 * against <infiniband/verbs.h> at compile time, so neither side can drift silently.
 *
 * Conventions: functions returning int return 0 or a positive errno value (except
 * cepm_verbs_poll_cq); functions returning a pointer return NULL and set errno on failure.
 */
#ifndef CEPM_VERBS_SHIM_H
#define CEPM_VERBS_SHIM_H

#include <stdint.h>

struct ibv_context;
struct ibv_comp_channel;
struct ibv_pd;
struct ibv_cq;
struct ibv_qp;
struct ibv_mr;
struct ibv_ah;

/* enum ibv_mtu */
#define CEPM_VERBS_MTU_256 1
#define CEPM_VERBS_MTU_512 2
#define CEPM_VERBS_MTU_1024 3
#define CEPM_VERBS_MTU_2048 4
#define CEPM_VERBS_MTU_4096 5

/* enum ibv_access_flags (the subset cepm uses) */
#define CEPM_VERBS_ACCESS_LOCAL_WRITE 0x1
#define CEPM_VERBS_ACCESS_REMOTE_WRITE 0x2
#define CEPM_VERBS_ACCESS_REMOTE_READ 0x4
#define CEPM_VERBS_ACCESS_REMOTE_ATOMIC 0x8

/* enum ibv_port_state */
#define CEPM_VERBS_PORT_NOP 0
#define CEPM_VERBS_PORT_DOWN 1
#define CEPM_VERBS_PORT_INIT 2
#define CEPM_VERBS_PORT_ARMED 3
#define CEPM_VERBS_PORT_ACTIVE 4
#define CEPM_VERBS_PORT_ACTIVE_DEFER 5

/* IBV_LINK_LAYER_* */
#define CEPM_VERBS_LINK_LAYER_UNSPECIFIED 0
#define CEPM_VERBS_LINK_LAYER_INFINIBAND 1
#define CEPM_VERBS_LINK_LAYER_ETHERNET 2

/* enum ibv_qp_state */
#define CEPM_VERBS_QPS_RESET 0
#define CEPM_VERBS_QPS_INIT 1
#define CEPM_VERBS_QPS_RTR 2
#define CEPM_VERBS_QPS_RTS 3
#define CEPM_VERBS_QPS_SQD 4
#define CEPM_VERBS_QPS_SQE 5
#define CEPM_VERBS_QPS_ERR 6
#define CEPM_VERBS_QPS_UNKNOWN 7

/* enum ibv_wc_status (success and the flush every teardown produces) and enum ibv_wc_opcode */
#define CEPM_VERBS_WC_SUCCESS 0
#define CEPM_VERBS_WC_WR_FLUSH_ERR 5
#define CEPM_VERBS_WC_SEND 0
#define CEPM_VERBS_WC_RDMA_WRITE 1
#define CEPM_VERBS_WC_RDMA_READ 2
#define CEPM_VERBS_WC_RECV 128

/* What ibv_query_port reports, the fields cepm uses. */
struct cepm_verbs_port_attr {
	uint32_t state;        /* CEPM_VERBS_PORT_* */
	uint32_t max_mtu;      /* CEPM_VERBS_MTU_* */
	uint32_t active_mtu;   /* CEPM_VERBS_MTU_* */
	int32_t gid_tbl_len;
	uint32_t max_msg_sz;
	uint16_t pkey_tbl_len;
	uint16_t lid;
	uint8_t link_layer;    /* CEPM_VERBS_LINK_LAYER_* */
	uint8_t reserved[3];
};

/* Queue pair capacities: requested on input, what the device granted on output. */
struct cepm_verbs_qp_caps {
	uint32_t max_send_wr;
	uint32_t max_recv_wr;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint32_t max_inline_data;
};

/* struct ibv_ah_attr with its struct ibv_global_route, flattened. */
struct cepm_verbs_ah {
	uint8_t dgid[16];
	uint32_t flow_label;
	uint16_t dlid;
	uint8_t sgid_index;
	uint8_t hop_limit;
	uint8_t traffic_class;
	uint8_t sl;
	uint8_t src_path_bits;
	uint8_t static_rate;
	uint8_t is_global;
	uint8_t port_num;
	uint8_t reserved[2];
};

/* The INIT -> RTR transition of an RC QP. */
struct cepm_verbs_rtr {
	struct cepm_verbs_ah ah;
	uint32_t dest_qpn;
	uint32_t rq_psn;
	uint32_t path_mtu;     /* CEPM_VERBS_MTU_* */
	uint8_t max_dest_rd_atomic;
	uint8_t min_rnr_timer;
	uint8_t reserved[2];
};

/* The RTR -> RTS transition of an RC QP. */
struct cepm_verbs_rts {
	uint32_t sq_psn;
	uint8_t timeout;
	uint8_t retry_cnt;
	uint8_t rnr_retry;
	uint8_t max_rd_atomic;
};

/* The fields of struct ibv_wc that an RC QP's completions use. */
struct cepm_verbs_wc {
	uint64_t wr_id;
	uint32_t status;       /* CEPM_VERBS_WC_SUCCESS or another enum ibv_wc_status value */
	uint32_t opcode;       /* CEPM_VERBS_WC_SEND, CEPM_VERBS_WC_RECV, CEPM_VERBS_WC_RDMA_*, ... */
	uint32_t vendor_err;
	uint32_t byte_len;
	uint32_t qp_num;
	uint32_t reserved;
};

/* Devices: the one named `name` (ENODEV if there is none). */
struct ibv_context *cepm_verbs_open_device(const char *name);
int cepm_verbs_close_device(struct ibv_context *ctx);
int cepm_verbs_query_port(struct ibv_context *ctx, uint8_t port, struct cepm_verbs_port_attr *out);

/* Protection domains. */
struct ibv_pd *cepm_verbs_alloc_pd(struct ibv_context *ctx);
int cepm_verbs_dealloc_pd(struct ibv_pd *pd);

/* Completion channels and queues. */
struct ibv_comp_channel *cepm_verbs_create_comp_channel(struct ibv_context *ctx);
int cepm_verbs_comp_channel_fd(const struct ibv_comp_channel *channel);
int cepm_verbs_destroy_comp_channel(struct ibv_comp_channel *channel);
struct ibv_cq *cepm_verbs_create_cq(struct ibv_context *ctx, int cqe, struct ibv_comp_channel *channel);
int cepm_verbs_destroy_cq(struct ibv_cq *cq);
/* Arms the CQ for its next completion event. */
int cepm_verbs_req_notify_cq(struct ibv_cq *cq);
/* Reads one pending event from the channel (blocking if there is none) and acknowledges it. */
int cepm_verbs_consume_cq_event(struct ibv_comp_channel *channel);
/* Up to `n` completions into `wc`: their number, or a negative value on error. */
int cepm_verbs_poll_cq(struct ibv_cq *cq, int n, struct cepm_verbs_wc *wc);
const char *cepm_verbs_wc_status_str(uint32_t status);

/* Memory regions. */
struct ibv_mr *cepm_verbs_reg_mr(struct ibv_pd *pd, void *addr, uint64_t length, uint32_t access);
uint32_t cepm_verbs_mr_lkey(const struct ibv_mr *mr);
int cepm_verbs_dereg_mr(struct ibv_mr *mr);

/* RC queue pairs: one CQ for both directions; `caps` is updated with what was granted. */
struct ibv_qp *cepm_verbs_create_rc_qp(struct ibv_pd *pd, struct ibv_cq *cq, struct cepm_verbs_qp_caps *caps);
uint32_t cepm_verbs_qp_num(const struct ibv_qp *qp);
int cepm_verbs_destroy_qp(struct ibv_qp *qp);
int cepm_verbs_query_qp_state(struct ibv_qp *qp, uint32_t *state);
int cepm_verbs_modify_qp_init(struct ibv_qp *qp, uint8_t port, uint16_t pkey_index, uint32_t access);
int cepm_verbs_modify_qp_rtr(struct ibv_qp *qp, const struct cepm_verbs_rtr *attr);
int cepm_verbs_modify_qp_rts(struct ibv_qp *qp, const struct cepm_verbs_rts *attr);
int cepm_verbs_modify_qp_err(struct ibv_qp *qp);

/* One-SGE work requests: a signaled or unsignaled SEND, and a RECV. */
int cepm_verbs_post_send(struct ibv_qp *qp, uint64_t wr_id, const void *addr, uint32_t length,
			 uint32_t lkey, int signaled);
int cepm_verbs_post_recv(struct ibv_qp *qp, uint64_t wr_id, void *addr, uint32_t length, uint32_t lkey);

#endif /* CEPM_VERBS_SHIM_H */
