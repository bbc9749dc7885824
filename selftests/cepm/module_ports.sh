#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# After load, cepm owns the CM class on rxe0 and /dev/cepm reports it.  A device renamed while
# managed is known by its new name everywhere, the REQs it hands out included (cepm learns it
# from the ib_client rename callback; it never reads a name the rename may be freeing).
# A native InfiniBand port, which cepm cannot serve yet (no LIDs, no SA path records), is
# declined with one log line and left to ib_cm; rxe is RoCE, so debugfs pretend_ib makes
# cepm take rxe0 for an IB device when it is added again.
# A device that cannot join cepm's device list (debugfs fail_device_list_count) is let go
# after the list's lock is released: unregistering its agents, which may wait for deferred
# MADs, holds up no QUERY (debugfs port_release_delay_ms holds that release open).
. "$(dirname "$0")/lib.sh"
need_root
ktap_print_header
ktap_set_plan 14

abi=$(sed -n 's/^#define CEPM_ABI_VERSION \([0-9]*\).*/\1/p' "$CEPM_ROOT/include/uapi/cepm.h")

ktap_check "module is loaded" cepm_loaded
ktap_check "/dev/cepm is a character device" test -c /dev/cepm
ktap_check "ioctl reports ABI version $abi" test "$("$CEPMCTL" abi)" = "$abi"
listed_as_roce() { "$CEPMCTL" ports | grep -qxF "$RXE_DEV port 1 (RoCE)"; }
logged_managing() { dmesg | grep -qF "cepm: $RXE_DEV: managing the CM on 1 port(s)"; }
ktap_check "$RXE_DEV port 1 is listed as RoCE" listed_as_roce
ktap_check "the kernel log says cepm manages $RXE_DEV" logged_managing

# Renamed: the port list, and a REQ received on it, name the device as it is called now.
renamed=cepmtest0
out=$CEPM_ROOT/out/module_ports.$$
trap 'echo 0 >$CEPM_DEBUGFS/pretend_ib; echo 0 >$CEPM_DEBUGFS/port_release_delay_ms
	echo 0 >$CEPM_DEBUGFS/fail_device_list_count; rdma dev set $renamed name $RXE_DEV 2>/dev/null; rm -f "$out".*' EXIT
rdma dev set $RXE_DEV name $renamed
ktap_check "after a rename, the port is listed as $renamed port 1" port_listed $renamed 1
"$CEPMCTL" serve --service-id 0x0000000001064e7d --reason 28 --timeout-ms 20000 >"$out.serve" 2>&1 &
spid=$!
wait_until 10 file_has '^serve: listening' "$out.serve"
"$CEPMCTL" send-mad $renamed 1 REQ --service-id 0x0000000001064e7d
wait $spid
show_files "$out.serve"
ktap_check "a REQ received there names the device $renamed" grep -q "for 0x0000000001064e7d on $renamed port 1," "$out.serve"
rdma dev set $renamed name $RXE_DEV
ktap_check "renamed back, it is $RXE_DEV port 1 again" port_listed $RXE_DEV 1

readd() { rdma link delete "$RXE_DEV" && rdma link add "$RXE_DEV" type rxe netdev "$RXE_NETDEV"; }
mark_dmesg
echo 1 >$CEPM_DEBUGFS/pretend_ib
readd
declined() { dmesg_since_mark | grep -c "cepm: $RXE_DEV: port 1 is native InfiniBand"; }
# unmanaged: rxe0 exists, and cepm lists none of its ports.
unmanaged() { test -d "/sys/class/infiniband/$RXE_DEV" && ! "$CEPMCTL" ports | grep -q "^$RXE_DEV "; }
ktap_check "a native InfiniBand port is not managed" unmanaged
ktap_check "... and one log line says so" test "$(declined)" = 1
echo 0 >$CEPM_DEBUGFS/pretend_ib
readd
ktap_check "added again as RoCE, it is managed" wait_until 10 port_listed $RXE_DEV 1

rdma link delete "$RXE_DEV"
echo 1 >$CEPM_DEBUGFS/fail_device_list_count
echo 8000 >$CEPM_DEBUGFS/port_release_delay_ms
delayed=$(cat $CEPM_DEBUGFS/port_release_delayed)
rdma link add "$RXE_DEV" type rxe netdev "$RXE_NETDEV" &
addpid=$!
releasing() { [ "$(cat $CEPM_DEBUGFS/port_release_delayed)" -gt "$delayed" ]; }
wait_until 10 releasing
query_while_releasing() { releasing && timeout 4 "$CEPMCTL" ports; }
ktap_check "while a device that could not be listed is released, QUERY answers" \
	query_while_releasing
wait $addpid
echo 0 >$CEPM_DEBUGFS/port_release_delay_ms
ktap_check "... and that device is not managed" unmanaged
readd
ktap_check "added again, it is managed" wait_until 10 port_listed $RXE_DEV 1
ktap_finished
