#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Device removal racing a destroy: no address handle may outlive its device.  A CEP in
# REQ_SENT holds an AH on rxe0; its owner is killed, and the destroy that closing the file
# runs is held open (debugfs destroy_delay_ms) after it let go of the CEP's lock; rxe0 is
# deleted in that window.  If the AH is not accounted to the port when the device goes, it
# outlives the device: the MAD layer frees the PD under it (WARNING in ib_dealloc_pd) and
# the late destroy touches a freed device.  Then a CONNECT, and a SIDR_REQ, held between
# finding their port and using it (debugfs request_delay_ms) while its device goes: ENODEV,
# as docs/abi.md says.  Loopback; rxe0 is added back after each removal.
. "$(dirname "$0")/lib.sh"
need_root
ktap_print_header
ktap_set_plan 7

out=$CEPM_ROOT/out/device_removal_race.$$
trap 'echo 0 >$CEPM_DEBUGFS/destroy_delay_ms; echo 0 >$CEPM_DEBUGFS/request_delay_ms; kill $(jobs -p) 2>/dev/null; wait; rm -f "$out".*' EXIT
nowhere=("${NOWHERE[@]}")

"$CEPMCTL" connect --service-id 0x0000000001064e79 --cm-only --timeout-ms 60000 "${nowhere[@]}" >"$out.req" 2>&1 &
cpid=$!
ktap_check "a CEP waits in REQ_SENT with an address handle on $RXE_DEV" wait_until 20 list_has_state REQ_SENT

mark_dmesg
echo 4000 >$CEPM_DEBUGFS/destroy_delay_ms
kill -KILL $cpid
# The destroy has run its transition and now sleeps with the CEP's lock released.
ktap_check "its owner is killed and the destroy is held open" wait_until 10 list_has_state DESTROYED
ktap_check "$RXE_DEV is deleted inside the window" rdma link delete "$RXE_DEV"
wait $cpid 2>/dev/null
echo 0 >$CEPM_DEBUGFS/destroy_delay_ms
gone() { ! list_has_state DESTROYED; }
wait_until 20 gone
bad=$(dmesg_since_mark | grep -E 'WARNING:|BUG:|still has users|general protection|Oops' || true)
[ -z "$bad" ] || dmesg_since_mark | sed 's/^/# /' | tail -60
ktap_check "no warning or crash: the AH went before the device" test -z "$bad"

# rxe0 added back, and cepm's port again.
rxe_back() { rdma link add "$RXE_DEV" type rxe netdev "$RXE_NETDEV" && wait_until 20 port_listed "$RXE_DEV" 1; }
ktap_check "$RXE_DEV is back and managed" rxe_back

delayed() { [ "$(cat $CEPM_DEBUGFS/request_delayed)" -gt "$1" ]; }
# request_meets_removal connect|resolve SERVICE_ID: that call's ioctl sleeps 5 s once it has
# found rxe0's port (the knob is read on entry: disarmed at once, the next call would not
# wait), rxe0 is deleted meanwhile and added back after; the tool must fail with ENODEV.
# The call must have entered the window with rxe0 managed, and rxe0 must have gone in it:
# otherwise the port lookup before the window would give the same ENODEV.
request_meets_removal() {
	local what=$1 pid rc n entered=0 deleted=0
	wait_until 20 port_listed "$RXE_DEV" 1 || return 1
	n=$(cat $CEPM_DEBUGFS/request_delayed)
	echo 5000 >$CEPM_DEBUGFS/request_delay_ms
	"$CEPMCTL" "$what" --service-id "$2" --cm-only --timeout-ms 20000 "${nowhere[@]}" >"$out.$what" 2>&1 &
	pid=$!
	wait_until 20 delayed "$n" && entered=1
	echo 0 >$CEPM_DEBUGFS/request_delay_ms
	rdma link delete "$RXE_DEV" && deleted=1
	wait $pid
	rc=$?
	rxe_back || ktap_print_msg "$RXE_DEV is not back"
	show_files "$out.$what"
	ktap_print_msg "$what: entered the window $entered, $RXE_DEV deleted $deleted, exit $rc"
	test $entered = 1 && test $deleted = 1 && test $rc != 0 && grep -q 'os error 19' "$out.$what"
}
ktap_check "a CONNECT whose device goes while it holds the port fails with ENODEV" \
	request_meets_removal connect 0x0000000001064e7a
ktap_check "so does a SIDR_REQ" request_meets_removal resolve 0x0000000001114e7a
ktap_finished
