#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Deleting rxe devices with connection endpoints on them, in many states: a listener, both
# ends of an established connection, a REQ on its way to nobody (REQ_SENT), a SIDR_REQ to
# nobody (SIDR_REQ_SENT) and 20 connections in timewait.  Every owner hears DEVICE_REMOVAL,
# cepm lets go of the device (address handles, agents) inside the ib_client's remove, queued
# timewait works do not touch it when they fire, the port disappears, and adding the device
# back (module still loaded) manages it again. Then a passive CEP whose owner keeps it after
# DEVICE_REMOVAL: once the device is back, a new REQ from the QP of its old peer reaches its
# listener (REJ 10 would mean the kept CEP still named that peer, and took the new REQ for a
# stale connection of it), and no CEP is left in DREQ_SENT with nothing to send.
#  loopback   everything on rxe0, which is deleted;
#  two-hosts  the server side on rxe1 in another namespace; rxe1 and rxe0 are both deleted.
. "$(dirname "$0")/lib.sh"
need_root
ktap_print_header
ktap_set_plan 16

SID=0x0000000001064e24
out=$CEPM_ROOT/out/device_removal.$$
trap 'topology_down; rm -f "$out".*' EXIT
nowhere=("${NOWHERE[@]}")
listening() { file_has '^accept: listening' "$out.accept"; }
both_established() { file_has 'in ESTABLISHED' "$out.connect" && file_has 'in ESTABLISHED' "$out.accept"; }
# The topology's devices deleted, then added back; managed_again: both are cepm's ports again.
delete_devices() {
	[ "$TOPOLOGY" = loopback ] || on_server rdma link delete "$SERVER_DEV"
	rdma link delete "$RXE_DEV"
}
add_devices() {
	rdma link add "$RXE_DEV" type rxe netdev "$RXE_NETDEV"
	[ "$TOPOLOGY" = loopback ] || on_server rdma link add "$SERVER_DEV" type rxe netdev veth1
}
managed_again() { port_listed "$RXE_DEV" 1 && port_listed "$SERVER_DEV" 1; }

ktap_check "topology $TOPOLOGY is up" topology_up
ktap_check "$SERVER_DEV port 1 listed before" port_listed "$SERVER_DEV" 1

# A CM-only connection (no QP: uverbs would hold the device until its users exit) that stays up.
"${SERVER[@]}" "$CEPMCTL" accept --device "$SERVER_DEV" --service-id $SID --cm-only --hold --timeout-ms 30000 >"$out.accept" 2>&1 &
apid=$!
wait_until 10 listening
"$CEPMCTL" connect --service-id $SID --cm-only --hold --timeout-ms 30000 "${TO_SERVER[@]}" >"$out.connect" 2>&1 &
cpid=$!
wait_until 20 both_established
# A REQ and a SIDR_REQ that nobody answers, with long retries: still outstanding at the delete.
"$CEPMCTL" connect --service-id 0x0000000001064e2e --cm-only --timeout-ms 30000 "${nowhere[@]}" >"$out.req" 2>&1 &
rpid=$!
"$CEPMCTL" resolve --service-id 0x0000000001114e2f --timeout-ms 30000 "${nowhere[@]}" >"$out.sidr" 2>&1 &
spid=$!
wait_until 10 list_has_state REQ_SENT
wait_until 10 list_has_state SIDR_REQ_SENT
"$CEPMCTL" list >"$out.list" 2>&1
show_files "$out.list"

# Right before the delete, 20 connections that end with destroy in timewait: their timewait
# works are still queued when the device goes, and must not touch it when they fire.
"${SERVER[@]}" "$CEPMCTL" accept --device "$SERVER_DEV" --cm-only --service-id 0x0000000001064e2d --count 20 >"$out.burst-accept" 2>&1 &
bpid=$!
wait_until 10 file_has '^accept: listening' "$out.burst-accept"
"$CEPMCTL" connect --cm-only --service-id 0x0000000001064e2d --count 20 --parallel 20 "${TO_SERVER[@]}" >"$out.burst" 2>&1
wait $bpid
show_files "$out.burst-accept" "$out.burst"

delete_devices
wait $cpid; crc=$?
wait $apid; arc=$?
wait $rpid
wait $spid
show_files "$out.accept" "$out.connect" "$out.req" "$out.sidr"
listed() { file_has "LISTEN .* $(printf '%#x' $SID) " "$out.list" && [ "$(grep -c ' ESTABLISHED ' "$out.list")" = 2 ]; }
ktap_check "cepmctl list showed the listener, both established ends, REQ_SENT and SIDR_REQ_SENT" \
	sh -c "grep -q ' REQ_SENT ' '$out.list' && grep -q ' SIDR_REQ_SENT ' '$out.list'" && listed
ktap_check "the burst before the delete completed" grep -q '^connect: 20 connected and disconnected, 0 failed' "$out.burst"
ktap_check "both ends were established and heard DEVICE_REMOVAL" \
	sh -c "test $crc = 0 && test $arc = 0 && grep -q 'event DEVICE_REMOVAL' '$out.connect' && grep -q 'event DEVICE_REMOVAL' '$out.accept'"
ktap_check "the outstanding REQ and SIDR_REQ heard DEVICE_REMOVAL" \
	sh -c "grep -q 'got DEVICE_REMOVAL' '$out.req' && grep -q 'got DEVICE_REMOVAL' '$out.sidr'"
ktap_check "rdma link delete: ports gone from the ioctl" \
	wait_until 20 sh -c "! '$CEPMCTL' ports | grep -q '^rxe[01] port 1 '"
ktap_check "module still loaded, no ports" test "$(managed_ports)" = 0
ktap_check "no CEP is left in the module" test "$(live_ceps)" = 0
add_devices
ktap_check "rdma link add: ports managed again" wait_until 20 managed_again
ktap_check "and they carry CM traffic again (REQ to nobody: REJ 8)" \
	sh -c "'$CEPMCTL' connect --service-id 0x0000000001064e25 --cm-only ${TO_SERVER[*]} 2>&1 | grep -q 'got REJ_RECEIVED (status 8)'"
ktap_check "no CEP is left after that either" test "$(live_ceps)" = 0

# Both sides announce the QPN 0xc0de (CM only); the server keeps its CEP past DEVICE_REMOVAL.
"${SERVER[@]}" "$CEPMCTL" accept --device "$SERVER_DEV" --service-id 0x0000000001064e26 --cm-only --hold \
	--hold-events 2 --timeout-ms 60000 >"$out.keeper" 2>&1 &
kpid=$!
wait_until 10 file_has '^accept: listening' "$out.keeper"
"$CEPMCTL" connect --service-id 0x0000000001064e26 --cm-only --qpn 0xc0de --hold --timeout-ms 30000 \
	"${TO_SERVER[@]}" >"$out.old" 2>&1 &
opid=$!
wait_until 20 file_has 'in ESTABLISHED' "$out.keeper"
delete_devices
wait $opid
wait_until 10 file_has 'event DEVICE_REMOVAL' "$out.keeper"
add_devices
wait_until 20 managed_again
ktap_check "a server kept its established CEP past DEVICE_REMOVAL, and the device is back" \
	sh -c "grep -q 'event DEVICE_REMOVAL' '$out.keeper' && test $(live_ceps) -ge 1" && managed_again
"${SERVER[@]}" "$CEPMCTL" accept --device "$SERVER_DEV" --service-id 0x0000000001064e27 --cm-only \
	--timeout-ms 30000 >"$out.new-accept" 2>&1 &
npid=$!
wait_until 10 file_has '^accept: listening' "$out.new-accept"
"$CEPMCTL" connect --service-id 0x0000000001064e27 --cm-only --qpn 0xc0de --timeout-ms 30000 \
	"${TO_SERVER[@]}" >"$out.new" 2>&1
ncrc=$?
wait $npid
narc=$?
show_files "$out.old" "$out.new" "$out.new-accept"
ktap_check "a new connection from the kept CEP's old peer QP succeeds (no REJ 10)" \
	sh -c "test $ncrc = 0 && test $narc = 0"
"$CEPMCTL" list >"$out.list2" 2>&1
show_files "$out.list2"
ktap_check "... and no CEP is left in DREQ_SENT" sh -c "! grep -q ' DREQ_SENT ' '$out.list2'"
kill $kpid
wait $kpid
show_files "$out.keeper"
ktap_check "no CEP is left once the server has gone" wait_until 20 ceps_are 0
ktap_finished
