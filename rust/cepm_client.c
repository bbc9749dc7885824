// SPDX-License-Identifier: GPL-2.0
/*
 * The "cepm" ib_client, and what cepm reads of the devices it is told about.
 */
#include <linux/string.h>
#include <rdma/ib_verbs.h>

#include "cepm_shim.h"

/*
 * The Rust context of the ib_client callbacks: ib_client.add gets no pointer
 * of the client's, so it is kept here, set before registration.
 */
static void *cepm_client_ctx;

static int cepm_client_add(struct ib_device *device)
{
	return cepm_rust_add_device(cepm_client_ctx, device);
}

static void cepm_client_remove(struct ib_device *device, void *client_data)
{
	cepm_rust_remove_device(cepm_client_ctx, device);
}

static void cepm_client_rename(struct ib_device *device, void *client_data)
{
	cepm_rust_rename_device(cepm_client_ctx, device);
}

static struct ib_client cepm_client = {
	.name = "cepm",
	.add = cepm_client_add,
	.remove = cepm_client_remove,
	.rename = cepm_client_rename,
};

int cepm_shim_client_register(void *ctx)
{
	int ret;

	/* One client, one context: a second registration would overwrite the first's. */
	if (cepm_client_ctx)
		return -EBUSY;
	cepm_client_ctx = ctx;
	ret = ib_register_client(&cepm_client);
	if (ret)
		cepm_client_ctx = NULL;
	return ret;
}

void cepm_shim_client_unregister(void)
{
	ib_unregister_client(&cepm_client);
	cepm_client_ctx = NULL;
}

/*
 * ib_device.name, not dev_name(): a rename frees the string dev_name() points
 * at, while name is an array in the device.  ib_device_rename writes it under
 * devices_rwsem, which ib_core holds around the add and rename callbacks, the
 * only places cepm reads it.
 */
void cepm_shim_device_name(struct ib_device *device, char *buf, size_t len)
{
	strscpy(buf, device->name, len);
}

u64 cepm_shim_device_node_guid(struct ib_device *device)
{
	return be64_to_cpu(device->node_guid);
}

u8 cepm_shim_device_ack_delay(struct ib_device *device)
{
	return device->attrs.local_ca_ack_delay;
}

bool cepm_shim_device_in_net(struct ib_device *device, const struct net *net)
{
	return rdma_dev_access_netns(device, net);
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
	return rdma_protocol_roce(device, port) && !cepm_fault_pretend_ib();
}
