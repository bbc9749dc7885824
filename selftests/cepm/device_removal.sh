#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Deleting the rxe device with connections on it: both ends hear DEVICE_REMOVAL, cepm lets go
# of the device (its address handles and agent) inside the ib_client's remove, the port
# disappears, and adding the device back (module still loaded) manages it again.
. "$(dirname "$0")/lib.sh"
need_root
ktap_print_header
ktap_set_plan 10

SID=0x0000000001064e24
out=$CEPM_ROOT/out/device_removal.$$
listening() { grep -q '^accept: listening' "$out.accept"; }
both_established() { grep -q 'in ESTABLISHED' "$out.connect" && grep -q 'in ESTABLISHED' "$out.accept"; }

ktap_check "$RXE_DEV port 1 listed before" port_listed "$RXE_DEV" 1

# A CM-only connection (no QP: uverbs would hold the device until its users exit) that stays up.
"$CEPMCTL" accept --service-id $SID --cm-only --hold --timeout-ms 30000 >"$out.accept" 2>&1 &
apid=$!
wait_until 10 listening
"$CEPMCTL" connect --service-id $SID --cm-only --hold --timeout-ms 30000 >"$out.connect" 2>&1 &
cpid=$!
wait_until 20 both_established
"$CEPMCTL" list >"$out.list" 2>&1
sed 's/^/# /' "$out.list"

# Right before the delete, 20 connections that end with destroy in timewait: their timewait
# works are still queued when the device goes, and must not touch it when they fire.
"$CEPMCTL" accept --cm-only --service-id 0x0000000001064e2d --count 20 >"$out.burst-accept" 2>&1 &
bpid=$!
wait_until 10 grep -q '^accept: listening' "$out.burst-accept"
"$CEPMCTL" connect --cm-only --service-id 0x0000000001064e2d --count 20 --parallel 20 >"$out.burst" 2>&1
wait $bpid
sed 's/^/# /' "$out.burst-accept" "$out.burst"

rdma link delete "$RXE_DEV"
wait $cpid; crc=$?
wait $apid; arc=$?
sed 's/^/# /' "$out.accept" "$out.connect"
listed() { grep -q "LISTEN .* $(printf '%#x' $SID) " "$out.list" && [ "$(grep -c ' ESTABLISHED ' "$out.list")" = 2 ]; }
ktap_check "cepmctl list showed the listener and both established ends" listed
ktap_check "the burst before the delete completed" grep -q '^connect: 20 connected and disconnected, 0 failed' "$out.burst"
ktap_check "both ends were established and heard DEVICE_REMOVAL" \
	sh -c "test $crc = 0 && test $arc = 0 && grep -q 'event DEVICE_REMOVAL' '$out.connect' && grep -q 'event DEVICE_REMOVAL' '$out.accept'"
ktap_check "rdma link delete: port gone from the ioctl" wait_until 20 port_not_listed "$RXE_DEV" 1
ktap_check "module still loaded, no ports" test "$(managed_ports)" = 0
ktap_check "no CEP is left in the module" test "$(live_ceps)" = 0
rdma link add "$RXE_DEV" type rxe netdev "$RXE_NETDEV"
ktap_check "rdma link add: port managed again" wait_until 20 port_listed "$RXE_DEV" 1
ktap_check "and it carries CM traffic again (REQ to nobody: REJ 8)" \
	sh -c "'$CEPMCTL' connect --service-id 0x0000000001064e25 --cm-only 2>&1 | grep -q 'got REJ_RECEIVED (status 8)'"
ktap_check "no CEP is left after that either" test "$(live_ceps)" = 0
rm -f "$out".*
ktap_finished
