/* SPDX-License-Identifier: ((GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause) */
/*
 * cepm: userspace ABI of the /dev/cepm character device.
 *
 * This header is the single definition of the ABI: the kernel module's Rust
 * declarations and the userspace crate's are both generated from it with
 * bindgen, so neither side can drift from it.
 *
 * Rules: fixed-size types only, explicit padding, 64-bit user pointers as
 * __aligned_u64, and reserved fields that must be zero on input.
 */
#ifndef _UAPI_CEPM_H
#define _UAPI_CEPM_H

#include <linux/types.h>
#include <linux/ioctl.h>

/*
 * Bumped on any incompatible change to this file, and when calls are added
 * or grow, so that userspace can tell what the module offers: 5 added
 * CEPM_IOC_MIGRATE and CEPM_IOC_POST_EVENT; 6 grew struct cepm_get_request
 * by local_psn (QP attributes for RTR before PREPARE_REP); 7 added
 * CEPM_IOC_BIND (rdma_cm's port reservation) and CEPM_TRANSPORT_XRC, grew
 * struct cepm_connect, struct cepm_accept and struct cepm_private_data by
 * the ECE fields (Enhanced Connection Establishment: REQ and REP VendorID
 * and the MAD's attribute modifier), and struct cepm_listen by an address
 * scope (several listeners on one service ID); 8 gave struct cepm_connect,
 * struct cepm_accept and struct cepm_req_info the end-to-end flow control
 * bit, grew struct cepm_get_request by the REQ's path and struct
 * cepm_private_data by the connection parameters of the peer's REQ or REP.
 */
#define CEPM_ABI_VERSION 8

#define CEPM_IOC_MAGIC 0xCE

/* Same as IB_DEVICE_NAME_MAX in <rdma/ib_user_verbs.h>. */
#define CEPM_DEVICE_NAME_MAX 64

/*
 * Received CM MADs are counted per attribute ID.  CM attribute IDs are all
 * below 0x20 (ClassPortInfo 0x0001, REQ 0x0010 ... APR 0x001A), so the
 * counter array is indexed by the attribute ID itself; anything else is
 * counted in rx_other_attr.
 */
#define CEPM_ATTR_SLOTS 32

/* struct cepm_port_info.flags */
#define CEPM_PORT_ROCE (1U << 0) /* RoCE link layer (else InfiniBand) */

/* One port on which cepm owns the CM management class (0x07, version 2). */
struct cepm_port_info {
	char dev_name[CEPM_DEVICE_NAME_MAX]; /* NUL-terminated */
	__u32 port_num;
	__u32 flags;                         /* CEPM_PORT_* */
	__u64 rx_by_attr[CEPM_ATTR_SLOTS];   /* received CM MADs, by attribute ID */
	__u64 rx_other_attr;                 /* received, attribute ID >= CEPM_ATTR_SLOTS */
	__u64 rx_malformed;                  /* shorter than a whole MAD */
	__u64 rx_invalid;                    /* a whole MAD, not a valid CM message (dropped) */
	__u64 rx_duplicates;                 /* duplicates of a message already handled */
	__u64 tx_by_attr[CEPM_ATTR_SLOTS];   /* CM MADs posted, by attribute ID */
	__u64 tx_errors;                     /* sends that could not be posted */
};

/*
 * CEPM_IOC_QUERY: ABI version and the managed ports.
 *
 * In:  ports points to an array of port_capacity entries (may be 0 with
 *      ports == 0 to ask for the count only); reserved must be 0.
 * Out: abi_version, num_ports = ports managed right now.  The first
 *      min(num_ports, port_capacity) entries are filled in.  num_ceps =
 *      connection endpoints alive in the whole module (all files, plus
 *      unclaimed ones), for leak checks.  Without CAP_NET_ADMIN, as for
 *      CEPM_IOC_LIST_CEPS, num_ceps counts only the caller's own CEPs and
 *      every port's counters read 0.
 */
struct cepm_query {
	__u32 abi_version;
	__u32 num_ports;
	__u32 port_capacity;
	__u32 reserved;
	__aligned_u64 ports; /* struct cepm_port_info * */
	__u32 num_ceps;
	__u32 reserved2;
};

#define CEPM_IOC_QUERY _IOWR(CEPM_IOC_MAGIC, 0x80, struct cepm_query)

/*
 * Connection endpoints (CEPs).
 *
 * A CEP is named by a handle that is only meaningful on the file that created
 * or claimed it: one process can never name another's CEP.  Handles are not
 * reused while the file stays open.  Every struct below has reserved fields
 * that must be zero; a bad argument gets EINVAL, E2BIG (private data over the
 * message's limit), EFAULT or EBUSY, and changes nothing.
 *
 * Events are read() from the file as struct cepm_event records (blocking, or
 * EAGAIN with O_NONBLOCK); poll() reports POLLIN when one is queued.
 */

/* Private data limits of the IBTA messages (vol. 1, 12.6). */
#define CEPM_REQ_PDATA_MAX 92
#define CEPM_REJ_PDATA_MAX 148
#define CEPM_REJ_ARI_MAX 72
#define CEPM_PDATA_MAX 224 /* the largest: RTU, DREP */

/* CEPM_IOC_CREATE: a new idle CEP owned by this file. */
struct cepm_create {
	__u64 user_context; /* in: returned in every event of this CEP */
	__u32 handle;       /* out */
	__u32 reserved;
};

/*
 * CEPM_IOC_DESTROY: ends the CEP as the protocol requires in its state (a
 * listener stops listening, a pending REQ is rejected, ...).  On return no
 * event for the handle is queued or can still arrive; events_reported counts
 * those already read.
 */
struct cepm_destroy {
	__u32 handle;
	__u32 events_reported; /* out */
};

/* struct cepm_listen.scope */
#define CEPM_LISTEN_UNSCOPED 0 /* every REQ of the service ID; addr and flags 0 */
#define CEPM_LISTEN_IPV4 1
#define CEPM_LISTEN_IPV6 2
/* struct cepm_listen.flags: a wildcard takes no REQ of the other family. */
#define CEPM_LISTEN_AFONLY (1U << 0)

/*
 * CEPM_IOC_LISTEN: accept REQs whose service ID matches id under mask.  A mask
 * (but 0 and all ones) needs CAP_NET_ADMIN: EPERM otherwise.
 *
 * A scoped listen (ABI 7; exact service IDs of rdma_cm's IP port spaces only)
 * takes the REQs whose destination address (the cma_hdr's, else the path's
 * GID) is addr; all zeros or a loopback address is the family's wildcard.
 * One service ID has at most one listener per address, per family's wildcard
 * and one unscoped; a REQ goes to its address's, else its family's wildcard,
 * else the other family's wildcard without CEPM_LISTEN_AFONLY, else the
 * unscoped one.  The first version of this struct ends at addr (24 bytes).
 */
struct cepm_listen {
	__u32 handle;
	__u32 reserved;
	__u64 service_id;
	__u64 service_mask; /* 0 means all ones (exact match) */
	__u8 addr[16];      /* IPv4 in the last 4 bytes, as in cma_hdr */
	__u8 scope;         /* CEPM_LISTEN_UNSCOPED, _IPV4 or _IPV6 */
	__u8 flags;         /* CEPM_LISTEN_AFONLY */
	__u8 reserved2[6];
};

/*
 * CEPM_IOC_BIND: reserves a port of an rdma_cm port space for an idle CEP, by
 * rdma_cm's rules (rdma_bind_addr): two IDs share a port only if both set
 * REUSEADDR, their addresses differ, or (both AFONLY) their families do; a
 * wildcard next to anything on the port is EADDRNOTAVAIL, two equal
 * addresses EADDRINUSE.  Port 0 chooses a free port of ip_local_port_range
 * (written back).  The reservation lasts as long as the CEP.  On a bound CEP
 * only REUSEADDR may be added (the same space, port and address).  dst_addr
 * and dst_port, all zero for none, let active CEPs with distinct destinations
 * share an ephemeral port.  Ports and port spaces in host order; addr and
 * dst_addr as in cma_hdr (IPv4 in the last 4 bytes), all zero a wildcard.
 */
struct cepm_bind {
	__u32 handle;
	__u16 port_space;   /* CEPM_PS_*: rdma_cm's RDMA_PS_* values */
	__u16 port;         /* in: 0 = choose one; out: the port held */
	__u8 family;        /* 4 or 6 */
	__u8 flags;         /* CEPM_BIND_* */
	__u16 reserved;
	__u8 addr[16];
	__u8 dst_addr[16];
	__u16 dst_port;
	__u8 reserved2[10];
};

#define CEPM_PS_IPOIB 0x0002
#define CEPM_PS_TCP 0x0106
#define CEPM_PS_UDP 0x0111
#define CEPM_PS_IB 0x013F

/* cepm_bind.flags */
#define CEPM_BIND_REUSEADDR 0x01
#define CEPM_BIND_AFONLY 0x02

/* Transport services: cepm_req_info.transport, cepm_connect.qp_type. */
#define CEPM_TRANSPORT_RC 0
#define CEPM_TRANSPORT_UC 1
#define CEPM_TRANSPORT_XRC 2 /* CONNECT: an XRC initiator; a REQ: for an XRC target */

/*
 * An address: where the peer's CM (and QP) is.  For RoCE v2, as rdma_cm
 * resolves it: the peer's GID, the next hop's MAC and our GID index.
 * CONNECT and SIDR_REQ check it alike: EINVAL unless mtu is 1..5,
 * flow_label < 2^20, sl < 16, packet_life_time < 32, sgid_index names a GID
 * the port has, and reserved is 0.
 */
struct cepm_path_rec {
	__u8 dgid[16];
	__u8 dmac[6];
	__u8 sgid_index;
	__u8 hop_limit;
	__u32 flow_label;
	__u8 traffic_class;
	__u8 sl;
	__u8 mtu;              /* IB MTU enum: 1 (256) .. 5 (4096) */
	__u8 packet_life_time; /* IBTA time exponent */
	__u16 pkey;            /* 0 means the default 0xffff */
	__u8 reserved[2];
};

/*
 * A REQ as the passive side sees it.  The new CEP is parked, unclaimed and
 * silent, until CEPM_IOC_GET_REQUEST hands it out with its owner and
 * context set in one step.
 */
struct cepm_req_info {
	__u64 service_id;
	__u64 remote_ca_guid;
	__u32 remote_comm_id;
	__u32 remote_qpn;
	__u32 starting_psn;
	__u8 responder_resources;
	__u8 initiator_depth;
	__u8 path_mtu;            /* IB MTU enum */
	__u8 transport;           /* CEPM_TRANSPORT_* */
	__u8 remote_cm_response_timeout;
	__u8 local_cm_response_timeout;
	__u8 retry_count;
	__u8 rnr_retry_count;
	__u8 max_cm_retries;
	__u8 srq;
	__u8 port_num;
	__u8 pdata_len;           /* always CEPM_REQ_PDATA_MAX: the wire has no length */
	__u8 pdata[CEPM_REQ_PDATA_MAX];
	char dev_name[CEPM_DEVICE_NAME_MAX];
	__u8 sidr;     /* 1: a SIDR_REQ (remote_comm_id is its request ID; the full
	                * 216 bytes of private data come from GET_PRIVATE_DATA) */
	__u8 flow_control; /* ABI 8: the REQ's end-to-end flow control bit */
	__u8 reserved[2];
};

/*
 * CEPM_IOC_GET_REQUEST: claim the oldest REQ pending on a listener (EAGAIN:
 * none).  The claim chooses this side's receive PSN, local_psn (ABI 6; the
 * struct's first version ends before it): CEPM_IOC_INIT_QP_ATTR's RTR gives
 * it before PREPARE_REP, and once RTR has given it, PREPARE_REP takes no
 * other starting_psn (EINVAL).  0 for a SIDR_REQ.
 *
 * path (ABI 8) is the REQ's primary path as this side sees it, as Linux's
 * cm_format_paths_from_req turns it round: dgid the peer's GID, sgid_index
 * the index of our GID the REQ arrived on, dmac the MAC it came from, the
 * REQ's flow label, hop limit, traffic class, SL, path MTU and P_Key, and
 * packet_life_time the REQ's local ACK timeout less one.  Zero for a
 * SIDR_REQ, which carries no path.
 */
struct cepm_get_request {
	__u32 listen_handle;  /* in */
	__u32 handle;         /* out: the new CEP, owned by this file */
	__u64 user_context;   /* in: for the new CEP's events */
	struct cepm_req_info req; /* out */
	__u32 local_psn;      /* out (ABI 6): the PSN the REP is to announce */
	__u32 reserved;
	struct cepm_path_rec path; /* out (ABI 8) */
	__u8 reserved2[4];
};

/* REJ reasons (IBTA vol. 1, table 112), the ones cepm sends or tests use. */
#define CEPM_REJ_TIMEOUT 4
#define CEPM_REJ_INVALID_SERVICE_ID 8
#define CEPM_REJ_STALE_CONN 10
#define CEPM_REJ_CONSUMER_DEFINED 28
#define CEPM_REJ_VENDOR_OPTION_NOT_SUPPORTED 35 /* librdmacm's rdma_reject_ece */

/* CEPM_IOC_REJECT: reject the connection (a claimed REQ, or a received REP). */
struct cepm_reject {
	__u32 handle;
	__u16 reason;
	__u8 ari_len;   /* <= CEPM_REJ_ARI_MAX */
	__u8 pdata_len; /* <= CEPM_REJ_PDATA_MAX, else E2BIG */
	__u8 ari[CEPM_REJ_ARI_MAX];
	__u8 pdata[CEPM_REJ_PDATA_MAX];
};

/* CEP states, as reported by CEPM_IOC_QUERY_CEP (Linux's ib_cm states plus cepm's). */
enum cepm_state {
	CEPM_STATE_IDLE,
	CEPM_STATE_LISTEN,
	CEPM_STATE_REQ_SENT,
	CEPM_STATE_REQ_RCVD,
	CEPM_STATE_MRA_REQ_SENT,
	CEPM_STATE_MRA_REQ_RCVD,
	CEPM_STATE_REP_SENT,
	CEPM_STATE_REP_RCVD,
	CEPM_STATE_MRA_REP_SENT,
	CEPM_STATE_MRA_REP_RCVD,
	CEPM_STATE_ESTABLISHED,
	CEPM_STATE_DREQ_SENT,
	CEPM_STATE_DREQ_RCVD,
	CEPM_STATE_TIMEWAIT,
	CEPM_STATE_SIDR_REQ_SENT,
	CEPM_STATE_SIDR_REQ_RCVD,
	CEPM_STATE_REP_PREPARED,
	CEPM_STATE_REP_PREPARED_MRA_SENT,
	CEPM_STATE_DESTROYED,
};

/* CEPM_IOC_QUERY_CEP: what a CEP is and where it stands. */
struct cepm_cep_info {
	__u32 handle;         /* in */
	__u32 state;          /* enum cepm_state */
	__u64 user_context;
	__u64 service_id;
	__u32 local_comm_id;
	__u32 remote_comm_id;
	__u32 pending_requests; /* listeners: REQs waiting for CEPM_IOC_GET_REQUEST */
	__u32 reserved;
	__u32 remote_qpn;       /* the peer's QPN (after REQ/REP, or a SIDR_REP) */
	__u32 remote_qkey;      /* the peer's Q_Key (after a SIDR_REP) */
	__u32 sidr_status;      /* the status of the SIDR_REP received */
	__u32 reserved2;
};

/*
 * CEPM_IOC_LIST_CEPS: every CEP in the module (all files, and unclaimed
 * ones), like CEPM_IOC_QUERY's ports: the first min(count, capacity) entries
 * of ceps are filled in.  handle is the caller's handle for CEPs it owns, 0
 * for the others.  For diagnostics (cepmctl list).  Without CAP_NET_ADMIN (at
 * open), only the CEPs of the caller's user are listed (and counted), and
 * user_context is 0 for every CEP the calling file does not own.
 */
struct cepm_list {
	__u32 count;    /* out */
	__u32 capacity; /* in */
	__aligned_u64 ceps; /* struct cepm_cep_info * */
};

/*
 * The connection parameters of a REQ or REP, each as the message carries it
 * (Linux's ib_cm swaps the first two for the receiver, in cm_format_req_event
 * and cm_format_rep_event: the peer's initiator depth is what the receiver
 * must be able to respond to).  retry_count is a REQ's alone (0 for a REP).
 */
struct cepm_conn_params {
	__u8 responder_resources;
	__u8 initiator_depth;
	__u8 flow_control;
	__u8 retry_count;
	__u8 rnr_retry_count;
	__u8 srq;
	__u8 reserved[2];
};

/*
 * CEPM_IOC_GET_PRIVATE_DATA: the private data of the last message received,
 * and (ABI 7; the struct's first version ends before them) the peer's ECE:
 * the VendorID and MAD attribute modifier of the REQ or REP it sent, 0 until
 * one arrives, and (ABI 8) that REQ's or REP's connection parameters.  These
 * must be 0 on input.
 */
struct cepm_private_data {
	__u32 handle;    /* in */
	__u16 attr_id;   /* out: the message it came in (0: none yet) */
	__u8 len;        /* out: that message's private data size */
	__u8 reserved;
	__u8 data[CEPM_PDATA_MAX];
	__u32 ece_vendor_id; /* out (ABI 7): 24 bits */
	__u32 ece_attr_mod;  /* out (ABI 7) */
	struct cepm_conn_params peer; /* out (ABI 8) */
};

/*
 * CEPM_IOC_CONNECT: send a REQ (retried until answered or out of retries).
 * ECE (ABI 7; the struct's first version ends before it): the REQ's VendorID
 * (24 bits, else EINVAL) and its MAD's attribute modifier, as Linux's
 * cm_format_req sends them; 0 and 0 for none.
 */
struct cepm_connect {
	__u64 service_id;
	__u32 handle;
	__u32 port_num;
	char dev_name[CEPM_DEVICE_NAME_MAX]; /* the local RDMA device */
	struct cepm_path_rec path;
	__u32 local_qpn;
	__u32 starting_psn;
	__u8 responder_resources;
	__u8 initiator_depth;
	__u8 remote_cm_response_timeout; /* IBTA exponents */
	__u8 local_cm_response_timeout;
	__u8 retry_count;
	__u8 rnr_retry_count;
	__u8 max_cm_retries;             /* <= 15 */
	__u8 srq;
	__u8 qp_type;                    /* CEPM_TRANSPORT_*, else EINVAL */
	__u8 pdata_len;                  /* <= CEPM_REQ_PDATA_MAX, else E2BIG */
	__u8 flow_control;               /* ABI 8: 0 or 1, else EINVAL */
	__u8 reserved;
	__u8 pdata[CEPM_REQ_PDATA_MAX];
	__u8 reserved2[4];
	__u32 ece_vendor_id; /* ABI 7 */
	__u32 ece_attr_mod;  /* ABI 7 */
};

#define CEPM_REP_PDATA_MAX 196

#define CEPM_SIDR_REQ_PDATA_MAX 216
#define CEPM_SIDR_REP_PDATA_MAX 136

/*
 * CEPM_IOC_SIDR_REQ: resolve a UD service (Service ID Resolution): send a
 * SIDR_REQ, retried until the SIDR_REP (SIDR_REP_RECEIVED; QUERY_CEP then has
 * the QPN, Q_Key and status).
 */
struct cepm_sidr_req {
	__u64 service_id;
	__u32 handle;
	__u32 port_num;
	char dev_name[CEPM_DEVICE_NAME_MAX];
	struct cepm_path_rec path;
	__u8 cm_response_timeout; /* IBTA exponent */
	__u8 max_cm_retries;      /* <= 15 */
	__u8 pdata_len;           /* <= CEPM_SIDR_REQ_PDATA_MAX, else E2BIG */
	__u8 reserved;
	__u8 pdata[CEPM_SIDR_REQ_PDATA_MAX];
};

/* SIDR_REP status values (IBTA vol. 1, table 119). */
#define CEPM_SIDR_SUCCESS 0
#define CEPM_SIDR_UNSUPPORTED 1 /* no listener for the service ID */
#define CEPM_SIDR_REJECT 2

/* CEPM_IOC_SIDR_REP: answer a claimed SIDR_REQ. */
struct cepm_sidr_rep {
	__u32 handle;
	__u32 qpn;
	__u32 qkey;
	__u8 status;    /* CEPM_SIDR_* */
	__u8 info_len;  /* <= CEPM_REJ_ARI_MAX */
	__u8 pdata_len; /* <= CEPM_SIDR_REP_PDATA_MAX, else E2BIG */
	__u8 reserved;
	__u8 info[CEPM_REJ_ARI_MAX];
	__u8 pdata[CEPM_SIDR_REP_PDATA_MAX];
};

/*
 * CEPM_IOC_PREPARE_REP: fix the REP's QPN, PSN and resources on a claimed
 * REQ without sending it, so the QP can go to RTR (CEPM_IOC_INIT_QP_ATTR)
 * before the REP leaves; CEPM_IOC_SEND_REP then sends it.  The REP's
 * TargetAckDelay is the device's local CA ACK delay, as in Linux (cm_format_rep
 * ignores the caller's); the field that once carried it is reserved.  ECE
 * (ABI 7; the struct's first version ends before it): the REP's VendorID (24
 * bits, else EINVAL) and its MAD's attribute modifier, as for CONNECT.
 */
struct cepm_accept {
	__u32 handle;
	__u32 local_qpn;
	__u32 starting_psn;
	__u8 responder_resources;
	__u8 initiator_depth;
	__u8 reserved_ack_delay; /* must be 0: the REP's TargetAckDelay is the device's */
	__u8 rnr_retry_count;
	__u8 srq;
	__u8 pdata_len; /* <= CEPM_REP_PDATA_MAX, else E2BIG */
	__u8 flow_control; /* ABI 8: 0 or 1, else EINVAL */
	__u8 reserved;
	__u8 pdata[CEPM_REP_PDATA_MAX];
	__u32 ece_vendor_id; /* ABI 7 */
	__u32 ece_attr_mod;  /* ABI 7 */
};

/* CEPM_IOC_SEND_REP. */
struct cepm_send_rep {
	__u32 handle;
	__u32 reserved;
};

/*
 * CEPM_IOC_ESTABLISH: the passive QP received the peer's first packet before
 * the RTU (the verbs event IB_EVENT_COMM_EST): the connection is established
 * as if the RTU had arrived, and ESTABLISHED is delivered.  Valid in
 * REP_SENT and MRA_REP_RCVD.
 */
struct cepm_establish {
	__u32 handle;
	__u32 reserved;
};

/*
 * CEPM_IOC_MONITOR: make this file a monitor, for tracing tools such as
 * "cepmctl events".  flags and reserved must be 0; the file must own no CEP
 * and cannot create one afterwards (EBUSY).  read() and poll() then deal in
 * struct cepm_trace records instead of events: a copy of every event any CEP
 * in the module delivers (to any file, or parked on an unclaimed CEP); without
 * CAP_NET_ADMIN (at open), only those of CEPs the caller's user owns.  At
 * most CEPM_MONITOR_QUEUE_MAX records wait; further ones are dropped and
 * counted in the next record's lost field.  A user's files may monitor
 * max_monitors_per_user (a module parameter, default 16) at once: EDQUOT.
 */
#define CEPM_MONITOR_QUEUE_MAX 4096

/*
 * At most CEPM_EVENT_QUEUE_MAX events wait on one file (the module parameter
 * event_queue_max changes that, for all files opened later).  An event that finds
 * the queue full is lost; the first read() after the queue has drained then
 * fails with EOVERFLOW (once), and poll() says the file is readable until it
 * has, so no event is lost silently.  A REQ_RECEIVED (or SIDR_REQ_RECEIVED)
 * whose request was claimed before it was read is dropped from the queue.
 */
#define CEPM_EVENT_QUEUE_MAX 4096

struct cepm_monitor {
	__u32 flags;
	__u32 reserved;
};

struct cepm_trace {
	__u64 timestamp_ns;   /* since CEPM_IOC_MONITOR (CLOCK_MONOTONIC) */
	__u64 service_id;
	__u32 local_comm_id;
	__u32 remote_comm_id; /* 0 while the peer is unknown */
	__u32 event;          /* enum cepm_event_type */
	__u32 status;         /* as in struct cepm_event */
	__u32 state;          /* enum cepm_state after the event */
	__u32 lost;           /* records dropped just before this one */
};

#define CEPM_DREQ_PDATA_MAX 220

/*
 * A message that carries only private data:
 * CEPM_IOC_SEND_RTU (after REP_RECEIVED and moving the QP to RTS; up to
 * CEPM_PDATA_MAX), CEPM_IOC_SEND_DREQ (disconnect; up to CEPM_DREQ_PDATA_MAX),
 * CEPM_IOC_SEND_DREP (answer a DREQ_RECEIVED; up to CEPM_PDATA_MAX).
 */
struct cepm_send_pdata {
	__u32 handle;
	__u8 pdata_len;
	__u8 reserved[3];
	__u8 pdata[CEPM_PDATA_MAX];
};

/*
 * CEPM_IOC_PREPARE_MRA: the answer to a received REQ or REP will take a while.
 * As Linux's ib_prepare_cm_mra, by default nothing is sent now: a duplicate of
 * the message (the peer's retry) is answered with an MRA, which makes the peer
 * wait longer instead of giving up.  Flags:
 *   CEPM_MRA_SEND_NOW         send the MRA at once too (as ib_send_cm_mra did);
 *   CEPM_MRA_SERVICE_TIMEOUT  service_timeout (an IBTA exponent, 0..31: the peer
 *                             waits 4.096 us * 2^service_timeout more) instead
 *                             of Linux's 24 (about 69 s), for this MRA and the
 *                             CEP's later ones.
 * Again once armed: re-arms, or resends with CEPM_MRA_SEND_NOW.  A REQ waiting
 * unclaimed in a listener's backlog answers its retries with an MRA by itself.
 * EINVAL for unknown flags, a service_timeout over 31 or without its flag, a
 * non-zero reserved field, or a CEP with no REQ or REP to answer.
 */
#define CEPM_MRA_SEND_NOW (1 << 0)
#define CEPM_MRA_SERVICE_TIMEOUT (1 << 1)

struct cepm_prepare_mra {
	__u32 handle;
	__u8 flags;
	__u8 service_timeout;
	__u16 reserved;
};

/* Target states of CEPM_IOC_INIT_QP_ATTR (enum ib_qp_state values). */
#define CEPM_QPS_INIT 1
#define CEPM_QPS_RTR 2
#define CEPM_QPS_RTS 3

/*
 * CEPM_IOC_INIT_QP_ATTR: the attributes that move the connection's QP to
 * qp_state, as ib_cm_init_qp_attr() computes them.  attr_mask holds the
 * IB_QP_* bits that are set; ah is the path of the connection, whole, for any
 * qp_state: its P_Key (0xffff for a path that gave 0), MTU and packet lifetime
 * included.
 */
struct cepm_qp_attr {
	__u32 handle;
	__u32 qp_state;       /* in: CEPM_QPS_* */
	__u32 attr_mask;      /* out, IB_QP_* */
	__u32 qp_access_flags;
	__u32 dest_qp_num;
	__u32 rq_psn;
	__u32 sq_psn;
	__u16 pkey_index;
	__u8 port_num;
	__u8 path_mtu;
	__u8 max_dest_rd_atomic;
	__u8 max_rd_atomic;
	__u8 min_rnr_timer;
	__u8 timeout;
	__u8 retry_cnt;
	__u8 rnr_retry;
	__u8 reserved[2];
	struct cepm_path_rec ah;
};

/*
 * CEPM_IOC_MIGRATE (ABI 5): move a CEP from another open /dev/cepm, fd, to
 * this file, as rdma_migrate_id() moves an ID to another event channel.  The
 * CEP's events queued there and not read yet move with it, in their order,
 * in one step: every later event comes here, none is lost, duplicated or
 * left behind.  Out: its new handle here, and events_reported, the events
 * read for it so far (the count DESTROY reports, which goes on counting).
 * The CEP is counted against this file and its user from now on (EMFILE,
 * EDQUOT); an event that finds this file's queue full is lost as any event
 * is (read() says EOVERFLOW).  Errors: EBADF, fd is not open; EINVAL, fd is
 * not a /dev/cepm file, or owns no CEP by that handle, or reserved is not 0;
 * EBUSY, this file is a monitor; EPERM, a listener to another user's file
 * (listens are per user); EAGAIN, the CEP kept needing more room than was
 * prepared (bounded, and not seen).  A move between two files of one user
 * may take the user one over its limits while it lasts.  When fd is this
 * file, nothing moves and new_handle is handle.
 */
struct cepm_migrate {
	__s32 fd;               /* in: the file the CEP is in */
	__u32 handle;           /* in: its handle there */
	__u32 new_handle;       /* out: its handle in this file */
	__u32 events_reported;  /* out */
	__u32 reserved[2];      /* in: 0 */
};

/*
 * CEPM_IOC_POST_EVENT (ABI 5): queue an event made in userspace for one of
 * this file's CEPs, behind the CEP's own events, so that a library that
 * resolves addresses itself makes its events readable, and poll()able, where
 * the module's are.  It is read as a struct cepm_event with this event code
 * and status, the handle and the CEP's user_context; it moves with the CEP
 * (MIGRATE) and goes with it (DESTROY).  Errors: EINVAL, no such handle, an
 * event code outside CEPM_EVENT_USER_FIRST..CEPM_EVENT_USER_LAST (the module
 * never uses those), or reserved not 0; ENOSPC, the file's queue is full or
 * its user has max_events_per_user queued.
 */
#define CEPM_EVENT_USER_FIRST 0x10000
#define CEPM_EVENT_USER_LAST 0x1ffff

struct cepm_post_event {
	__u32 handle;
	__u32 event;    /* CEPM_EVENT_USER_FIRST..CEPM_EVENT_USER_LAST */
	__u32 status;
	__u32 reserved;
};

#define CEPM_IOC_CREATE _IOWR(CEPM_IOC_MAGIC, 0x81, struct cepm_create)
#define CEPM_IOC_DESTROY _IOWR(CEPM_IOC_MAGIC, 0x82, struct cepm_destroy)
#define CEPM_IOC_LISTEN _IOW(CEPM_IOC_MAGIC, 0x83, struct cepm_listen)
#define CEPM_IOC_GET_REQUEST _IOWR(CEPM_IOC_MAGIC, 0x84, struct cepm_get_request)
#define CEPM_IOC_REJECT _IOW(CEPM_IOC_MAGIC, 0x85, struct cepm_reject)
#define CEPM_IOC_QUERY_CEP _IOWR(CEPM_IOC_MAGIC, 0x86, struct cepm_cep_info)
#define CEPM_IOC_GET_PRIVATE_DATA _IOWR(CEPM_IOC_MAGIC, 0x87, struct cepm_private_data)
#define CEPM_IOC_CONNECT _IOW(CEPM_IOC_MAGIC, 0x88, struct cepm_connect)
#define CEPM_IOC_PREPARE_REP _IOW(CEPM_IOC_MAGIC, 0x89, struct cepm_accept)
#define CEPM_IOC_SEND_REP _IOW(CEPM_IOC_MAGIC, 0x8a, struct cepm_send_rep)
#define CEPM_IOC_SEND_RTU _IOW(CEPM_IOC_MAGIC, 0x8b, struct cepm_send_pdata)
#define CEPM_IOC_INIT_QP_ATTR _IOWR(CEPM_IOC_MAGIC, 0x8c, struct cepm_qp_attr)
#define CEPM_IOC_SEND_DREQ _IOW(CEPM_IOC_MAGIC, 0x8d, struct cepm_send_pdata)
#define CEPM_IOC_SEND_DREP _IOW(CEPM_IOC_MAGIC, 0x8e, struct cepm_send_pdata)
#define CEPM_IOC_PREPARE_MRA _IOW(CEPM_IOC_MAGIC, 0x8f, struct cepm_prepare_mra)
#define CEPM_IOC_SIDR_REQ _IOW(CEPM_IOC_MAGIC, 0x90, struct cepm_sidr_req)
#define CEPM_IOC_SIDR_REP _IOW(CEPM_IOC_MAGIC, 0x91, struct cepm_sidr_rep)
#define CEPM_IOC_LIST_CEPS _IOWR(CEPM_IOC_MAGIC, 0x92, struct cepm_list)
#define CEPM_IOC_ESTABLISH _IOW(CEPM_IOC_MAGIC, 0x93, struct cepm_establish)
#define CEPM_IOC_MONITOR _IOW(CEPM_IOC_MAGIC, 0x94, struct cepm_monitor)
#define CEPM_IOC_MIGRATE _IOWR(CEPM_IOC_MAGIC, 0x95, struct cepm_migrate)
#define CEPM_IOC_POST_EVENT _IOW(CEPM_IOC_MAGIC, 0x96, struct cepm_post_event)
#define CEPM_IOC_BIND _IOWR(CEPM_IOC_MAGIC, 0x97, struct cepm_bind)

/* struct cepm_event.event */
enum cepm_event_type {
	CEPM_EVENT_REQ_RECEIVED = 1, /* on a listener: claim it with CEPM_IOC_GET_REQUEST */
	CEPM_EVENT_REJ_RECEIVED,     /* status: the REJ reason; GET_PRIVATE_DATA has its data */
	CEPM_EVENT_REP_RECEIVED,     /* active side: move the QP to RTR/RTS, then SEND_RTU */
	CEPM_EVENT_ESTABLISHED,      /* passive side: the RTU arrived */
	CEPM_EVENT_REQ_ERROR,        /* the REQ went unanswered: status ETIMEDOUT (EIO: send error) */
	CEPM_EVENT_REP_ERROR,        /* the REP went unanswered: status as for REQ_ERROR */
	CEPM_EVENT_DREQ_RECEIVED,    /* the peer disconnects: answer with SEND_DREP */
	CEPM_EVENT_DREP_RECEIVED,    /* our DREQ was answered; timewait follows */
	CEPM_EVENT_DREQ_ERROR,       /* the DREQ went unanswered (as REQ_ERROR); timewait follows */
	CEPM_EVENT_TIMEWAIT_EXIT,    /* the CEP is idle again */
	CEPM_EVENT_DEVICE_REMOVAL,   /* its RDMA device is gone: the CEP can only be destroyed */
	CEPM_EVENT_MRA_RECEIVED,     /* the peer needs more time; our message's timeout was extended */
	CEPM_EVENT_SIDR_REQ_RECEIVED, /* on a listener: claim it with GET_REQUEST, answer SIDR_REP */
	CEPM_EVENT_SIDR_REP_RECEIVED, /* status: the SIDR status; QUERY_CEP has QPN and Q_Key */
	CEPM_EVENT_SIDR_REQ_ERROR,   /* the SIDR_REQ went unanswered: status as for REQ_ERROR */
};

/* What read() returns, one record per event. */
struct cepm_event {
	__u32 event;        /* enum cepm_event_type */
	__u32 handle;
	__u64 user_context;
	__u32 status;
	__u32 reserved;
};

#endif /* _UAPI_CEPM_H */
