#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Deleting the rxe device releases its port; adding it back (module already loaded) restores it.
. "$(dirname "$0")/lib.sh"
need_root
ktap_print_header
ktap_set_plan 4

ktap_check "$RXE_DEV port 1 listed before" port_listed "$RXE_DEV" 1
rdma link delete "$RXE_DEV"
ktap_check "rdma link delete: port gone from the ioctl" wait_until 20 port_not_listed "$RXE_DEV" 1
ktap_check "module still loaded, no ports" test "$(managed_ports)" = 0
rdma link add "$RXE_DEV" type rxe netdev "$RXE_NETDEV"
ktap_check "rdma link add: port managed again" wait_until 20 port_listed "$RXE_DEV" 1
ktap_finished
