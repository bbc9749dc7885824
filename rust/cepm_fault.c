// SPDX-License-Identifier: GPL-2.0
/*
 * Fault points for tests, in debugfs (/sys/kernel/debug/cepm/, root only).
 * Kbuild builds this file only with CONFIG_FAULT_INJECTION_DEBUG_FS, the
 * option the kernel's own fail_* points need (include/linux/fault-inject.h);
 * without it cepm_shim.h makes the shim's hooks static inline no-ops and
 * rust/shim/fault.rs makes the Rust side's no-ops.
 *
 * The next drop_rx_count received CM MADs whose attribute ID is drop_rx_attr
 * (0: any) are dropped before cepm sees them, as if the wire had lost them.
 * rx_dropped counts them.  This is how the selftests lose exactly one RTU or
 * one DREQ on loopback, where no qdisc sits between the two ends.
 *
 * destroy_delay_ms makes every CEP destroy sleep that long after it has let
 * go of the CEP's lock and before it frees what it took out (the peer and its
 * address handle among them): it holds that window open so that a test can
 * remove the device in it.
 *
 * listen_delay_ms makes every CEPM_IOC_LISTEN sleep that long after it has
 * found its CEP by handle and before it takes the CEP's lock: the window in
 * which a CEPM_IOC_MIGRATE may move the CEP to another file.  listen_delayed
 * counts the LISTENs that entered it, so that a test knows when one is there.
 *
 * request_delay_ms makes every CEPM_IOC_CONNECT and CEPM_IOC_SIDR_REQ sleep
 * that long after it has found its port and before it uses it: the window in
 * which the port's device may go.  request_delayed counts the calls that
 * entered it.
 *
 * The next fail_handle_count handle reservations on a /dev/cepm file fail
 * with EMFILE, as if the file's handle numbers had run out.
 *
 * The next fail_backlog_push_count requests (REQ or SIDR_REQ) offered to a
 * listener fail to join its backlog as if the atomic allocation that makes
 * room there had failed.
 *
 * The next fail_device_list_count devices added fail to join cepm's device
 * list, as if the allocation that makes room there had failed.
 *
 * port_release_delay_ms makes the release of every managed port sleep that
 * long before it unregisters the port's MAD agents, where ib_mad may wait for
 * deferred MADs; port_release_delayed counts the releases that entered it.
 *
 * listen_shards lists how many (namespace, service ID) pairs have exact listeners in each shard
 * of the listener table, one count per line: whether listens that a user chose
 * to collide under a known hash did collide.
 *
 * While pretend_ib is set, devices added are taken for native InfiniBand
 * ones (the VM has only RoCE and iWARP devices).
 */
#include <linux/atomic.h>
#include <linux/debugfs.h>
#include <linux/delay.h>
#include <linux/seq_file.h>
#include <rdma/ib_mad.h>

#include "cepm_shim.h"

static struct dentry *cepm_debugfs;
static u32 cepm_destroy_delay_ms;
static u32 cepm_listen_delay_ms;
static atomic_t cepm_listen_delayed = ATOMIC_INIT(0);
static u32 cepm_request_delay_ms;
static atomic_t cepm_request_delayed = ATOMIC_INIT(0);
static u16 cepm_drop_rx_attr;
static atomic_t cepm_drop_rx_count = ATOMIC_INIT(0);
static atomic_t cepm_rx_dropped = ATOMIC_INIT(0);
static atomic_t cepm_fail_handle_count = ATOMIC_INIT(0);
static atomic_t cepm_fail_backlog_push_count = ATOMIC_INIT(0);
static atomic_t cepm_fail_device_list_count = ATOMIC_INIT(0);
static u32 cepm_port_release_delay_ms;
static atomic_t cepm_port_release_delayed = ATOMIC_INIT(0);
static bool cepm_pretend_ib;

/* The listener table's shard counts, from the CM context the file was made with. */
static int cepm_listen_shards_show(struct seq_file *m, void *unused)
{
	u32 counts[CEPM_LISTEN_SHARDS];
	unsigned int i;

	cepm_rust_listen_shards(m->private, counts, CEPM_LISTEN_SHARDS);
	for (i = 0; i < CEPM_LISTEN_SHARDS; i++)
		seq_printf(m, "%u\n", counts[i]);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(cepm_listen_shards);

void cepm_shim_fault_create(void *cm_ctx)
{
	/* Best effort, like all of debugfs: no directory, no fault injection. */
	cepm_debugfs = debugfs_create_dir("cepm", NULL);
	debugfs_create_x16("drop_rx_attr", 0600, cepm_debugfs, &cepm_drop_rx_attr);
	debugfs_create_atomic_t("drop_rx_count", 0600, cepm_debugfs, &cepm_drop_rx_count);
	debugfs_create_atomic_t("rx_dropped", 0400, cepm_debugfs, &cepm_rx_dropped);
	debugfs_create_u32("destroy_delay_ms", 0600, cepm_debugfs, &cepm_destroy_delay_ms);
	debugfs_create_u32("listen_delay_ms", 0600, cepm_debugfs, &cepm_listen_delay_ms);
	debugfs_create_atomic_t("listen_delayed", 0400, cepm_debugfs, &cepm_listen_delayed);
	debugfs_create_u32("request_delay_ms", 0600, cepm_debugfs, &cepm_request_delay_ms);
	debugfs_create_atomic_t("request_delayed", 0400, cepm_debugfs, &cepm_request_delayed);
	debugfs_create_atomic_t("fail_handle_count", 0600, cepm_debugfs, &cepm_fail_handle_count);
	debugfs_create_atomic_t("fail_backlog_push_count", 0600, cepm_debugfs,
				&cepm_fail_backlog_push_count);
	debugfs_create_atomic_t("fail_device_list_count", 0600, cepm_debugfs,
				&cepm_fail_device_list_count);
	debugfs_create_u32("port_release_delay_ms", 0600, cepm_debugfs,
			   &cepm_port_release_delay_ms);
	debugfs_create_atomic_t("port_release_delayed", 0400, cepm_debugfs,
				&cepm_port_release_delayed);
	debugfs_create_bool("pretend_ib", 0600, cepm_debugfs, &cepm_pretend_ib);
	debugfs_create_file("listen_shards", 0400, cepm_debugfs, cm_ctx, &cepm_listen_shards_fops);
}

void cepm_shim_fault_remove(void)
{
	debugfs_remove(cepm_debugfs);
}

bool cepm_fault_drop_rx(const struct ib_mad_recv_wc *recv_wc)
{
	u16 attr = READ_ONCE(cepm_drop_rx_attr);

	if (!atomic_read(&cepm_drop_rx_count))
		return false;
	if (attr && recv_wc->recv_buf.mad->mad_hdr.attr_id != cpu_to_be16(attr))
		return false;
	if (atomic_dec_if_positive(&cepm_drop_rx_count) < 0)
		return false;
	atomic_inc(&cepm_rx_dropped);
	return true;
}

bool cepm_fault_pretend_ib(void)
{
	return READ_ONCE(cepm_pretend_ib);
}

void cepm_shim_fault_destroy_delay(void)
{
	u32 ms = READ_ONCE(cepm_destroy_delay_ms);

	if (ms)
		msleep(ms);
}

static void cepm_fault_delay(u32 ms, atomic_t *entered)
{
	if (ms) {
		atomic_inc(entered);
		msleep(ms);
	}
}

void cepm_shim_fault_listen_delay(void)
{
	cepm_fault_delay(READ_ONCE(cepm_listen_delay_ms), &cepm_listen_delayed);
}

void cepm_shim_fault_request_delay(void)
{
	cepm_fault_delay(READ_ONCE(cepm_request_delay_ms), &cepm_request_delayed);
}

void cepm_shim_fault_port_release_delay(void)
{
	cepm_fault_delay(READ_ONCE(cepm_port_release_delay_ms), &cepm_port_release_delayed);
}

bool cepm_shim_fault_fail_handle(void)
{
	return atomic_dec_if_positive(&cepm_fail_handle_count) >= 0;
}

bool cepm_shim_fault_fail_backlog_push(void)
{
	return atomic_dec_if_positive(&cepm_fail_backlog_push_count) >= 0;
}

bool cepm_shim_fault_fail_device_list(void)
{
	return atomic_dec_if_positive(&cepm_fail_device_list_count) >= 0;
}
