#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Many connections through cepm (CM only, event driven; loopback on rxe0, or to a server on
# rxe1 in another namespace): 1000 one after the other, then 256 at once; none may fail and no CEP may be left (kmemleak runs at the end of
# the suite).
. "$(dirname "$0")/lib.sh"
need_root
ktap_print_header
ktap_set_plan 6

out=$CEPM_ROOT/out/cep_scale.$$
trap 'topology_down; rm -f "$out".*' EXIT
listening() { file_has '^accept: listening' "$1"; }

run() { # run NAME SERVICE_ID COUNT PARALLEL
	"${SERVER[@]}" "$CEPMCTL" accept --device "$SERVER_DEV" --cm-only --service-id "$2" --count "$3" --timeout-ms 30000 >"$out.$1.accept" 2>&1 &
	local apid=$!
	wait_until 10 listening "$out.$1.accept"
	"$CEPMCTL" connect --cm-only --service-id "$2" --count "$3" --parallel "$4" --timeout-ms 30000 "${TO_SERVER[@]}" \
		>"$out.$1.connect" 2>&1
	local crc=$?
	wait $apid
	local arc=$?
	show_files "$out.$1.accept" "$out.$1.connect"
	[ $crc = 0 ] && [ $arc = 0 ]
}

ktap_check "topology $TOPOLOGY is up" topology_up
ktap_check "1000 sequential connections: both sides finish" run seq 0x0000000001064e30 1000 1
ktap_check "... all 1000 connected and disconnected, none failed" \
	grep -q '^connect: 1000 connected and disconnected, 0 failed' "$out.seq.connect"
ktap_check "256 concurrent connections: both sides finish" run par 0x0000000001064e31 256 256
ktap_check "... all 256 connected and disconnected, none failed" \
	grep -q '^connect: 256 connected and disconnected, 0 failed, 256 in flight' "$out.par.connect"
ktap_check "no CEP is left in the module" wait_until 10 ceps_are 0
ktap_finished
