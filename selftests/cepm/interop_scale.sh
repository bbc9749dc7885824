#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Many connections between cepm and the stock Linux CM: 100 each way with rdma-core's cmtime
# and with ucmatose (-C 0: connections only; the ucmatose server disconnects them all once all
# are up, which crosses the DREQs of cepmctl's phased client).  Topology as in
# interop_stock.sh.
. "$(dirname "$0")/lib.sh"
interop_begin cmtime ucmatose
ktap_set_plan 8

out=$CEPM_ROOT/out/interop_scale.$$

ktap_check "cepm manages rxe0 only, ib_cm has rxe1 in namespace $PEER_NS" stock_up
N=100

# cepmctl's connections to a cmtime server (which never exits by itself).
"${PEER[@]}" timeout -s INT 100 cmtime -b 10.77.0.2 -p 7477 >"$out.cmtime-s" 2>&1 &
cpid=$!
wait_until 10 stock_listens 7477
"$CEPMCTL" connect --service-id "$(ip_service_id $TCP 7477)" "${TO_STOCK[@]}" --cm-only --count $N --parallel 10 >"$out.many" 2>&1
crc=$?
pkill -INT -x cmtime
wait $cpid
show_files "$out.many" "$out.cmtime-s"
ktap_check "cepmctl -> cmtime server: $N connected and disconnected, none failed" \
	sh -c "test $crc = 0 && grep -q '^connect: $N connected and disconnected, 0 failed' '$out.many'"

# cmtime's connections to cepmctl.
"$CEPMCTL" accept --device rxe0 --rdma-cm --cm-only --service-id "$(ip_service_id $TCP 7478)" --count $N --timeout-ms 60000 \
	>"$out.many-acc" 2>&1 &
apid=$!
wait_until 10 file_has '^accept: listening' "$out.many-acc"
"${PEER[@]}" timeout 100 cmtime -s 10.77.0.1 -b 10.77.0.2 -p 7478 -c $N >"$out.cmtime-c" 2>&1
crc=$?
wait $apid
arc=$?
show_files "$out.cmtime-c" "$out.many-acc"
ktap_check "cmtime -c $N -> cepmctl: both ends succeed" sh -c "test $crc = 0 && test $arc = 0"
ktap_check "... all $N connected and disconnected on our side" \
	grep -q "^accept: $N connected and disconnected, 0 failed" "$out.many-acc"

# ucmatose server, 100 connections from cepmctl (phased: all up, then all down).
"${PEER[@]}" timeout 100 ucmatose -b 10.77.0.2 -p 7479 -c $N -C 0 >"$out.ucm-s" 2>&1 &
spid=$!
wait_until 10 stock_listens 7479
"$CEPMCTL" connect --service-id "$(ip_service_id $TCP 7479)" "${TO_STOCK[@]}" --cm-only --count $N --parallel 10 --phases \
	>"$out.ucm-c" 2>&1
crc=$?
wait $spid
src=$?
show_files "$out.ucm-s" "$out.ucm-c"
ktap_check "cepmctl -> ucmatose -c $N server: both ends succeed" sh -c "test $crc = 0 && test $src = 0"
ktap_check "... $N established and $N disconnected, none failed" \
	sh -c "grep -q '^connect phase: $N established, 0 failed' '$out.ucm-c' && grep -q '^disconnect phase: $N disconnected' '$out.ucm-c'"

# ucmatose client, 100 connections to cepmctl, which disconnects them once all are up.
"$CEPMCTL" accept --device rxe0 --rdma-cm --cm-only --service-id "$(ip_service_id $TCP 7480)" --count $N --phases \
	--timeout-ms 60000 >"$out.ucm-a" 2>&1 &
apid=$!
wait_until 10 file_has '^accept: listening' "$out.ucm-a"
"${PEER[@]}" timeout 100 ucmatose -s 10.77.0.1 -b 10.77.0.2 -p 7480 -c $N -C 0 >"$out.ucm-c2" 2>&1
crc=$?
wait $apid
arc=$?
show_files "$out.ucm-c2" "$out.ucm-a"
ktap_check "ucmatose -c $N client -> cepmctl: both ends succeed, none failed" \
	sh -c "test $crc = 0 && test $arc = 0 && grep -q '^connect phase: $N established, 0 failed' '$out.ucm-a'"
ktap_check "no CEP is left in the module" wait_until 20 ceps_are 0
ktap_finished
