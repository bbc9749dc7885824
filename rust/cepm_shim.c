// SPDX-License-Identifier: GPL-2.0
/*
 * Thin C shim between cepm's Rust code and the RDMA core.  Only what Rust
 * cannot call directly lives here: static inlines (rdma_cap_ib_cm,
 * rdma_start_port, ...), structs with bitfields and unions (ib_mad_reg_req,
 * ib_mad_recv_wc) and the static ib_client.  No policy: every decision is
 * made in Rust.  The prototypes are in cepm_shim.h.
 */
#include <linux/err.h>
#include <linux/string.h>
#include <rdma/ib_mad.h>
#include <rdma/ib_verbs.h>

#include "cepm_shim.h"

static int cepm_client_add(struct ib_device *device)
{
	return cepm_rust_add_device(device);
}

static void cepm_client_remove(struct ib_device *device, void *client_data)
{
	cepm_rust_remove_device(device);
}

static struct ib_client cepm_client = {
	.name = "cepm",
	.add = cepm_client_add,
	.remove = cepm_client_remove,
};

int cepm_shim_client_register(void)
{
	return ib_register_client(&cepm_client);
}

void cepm_shim_client_unregister(void)
{
	ib_unregister_client(&cepm_client);
}

void cepm_shim_device_name(struct ib_device *device, char *buf, size_t len)
{
	strscpy(buf, dev_name(&device->dev), len);
}

u32 cepm_shim_start_port(struct ib_device *device)
{
	return rdma_start_port(device);
}

u32 cepm_shim_end_port(struct ib_device *device)
{
	return rdma_end_port(device);
}

bool cepm_shim_port_has_ib_cm(struct ib_device *device, u32 port)
{
	return rdma_cap_ib_cm(device, port);
}

bool cepm_shim_port_is_roce(struct ib_device *device, u32 port)
{
	return rdma_protocol_roce(device, port);
}

static void cepm_agent_recv(struct ib_mad_agent *agent,
			    struct ib_mad_send_buf *send_buf,
			    struct ib_mad_recv_wc *recv_wc)
{
	/* CM MADs are never RMPP: one 256-byte segment. */
	cepm_rust_recv_mad(agent->context, (const u8 *)recv_wc->recv_buf.mad,
			   recv_wc->mad_len);
	ib_free_recv_mad(recv_wc);
}

static void cepm_agent_send_done(struct ib_mad_agent *agent,
				 struct ib_mad_send_wc *send_wc)
{
	ib_free_send_mad(send_wc->send_buf);
}

struct ib_mad_agent *cepm_shim_agent_register(struct ib_device *device, u32 port,
					      void *port_ctx)
{
	struct ib_mad_reg_req req = {
		.mgmt_class = CEPM_MGMT_CLASS_CM,
		.mgmt_class_version = CEPM_CM_CLASS_VERSION,
	};

	set_bit(IB_MGMT_METHOD_SEND, req.method_mask);
	return ib_register_mad_agent(device, port, IB_QPT_GSI, &req, 0,
				     cepm_agent_send_done, cepm_agent_recv,
				     port_ctx, 0);
}

void cepm_shim_agent_unregister(struct ib_mad_agent *agent)
{
	ib_unregister_mad_agent(agent);
}
