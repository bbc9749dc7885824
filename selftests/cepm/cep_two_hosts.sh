#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# A connection between two "hosts": rxe0 on veth0 here, rxe1 on veth1 in the network
# namespace cepm_peer, the CM MADs and the RC traffic crossing the veth pair.  cepm manages
# both devices; cepmctl accept runs inside the namespace on rxe1, cepmctl connect here on rxe0.
. "$(dirname "$0")/lib.sh"
need_root
ktap_print_header
ktap_set_plan 6

SID=0x0000000001064e26
out=$CEPM_ROOT/out/cep_two_hosts.$$
trap 'peer_ns_down; rm -f "$out".*' EXIT

ktap_check "cepm manages rxe1 (in namespace $PEER_NS) as well" peer_ns_up

listening() { grep -q '^accept: listening' "$out.accept"; }
ip netns exec $PEER_NS "$CEPMCTL" accept --device rxe1 --service-id $SID --iterations 20 >"$out.accept" 2>&1 &
apid=$!
wait_until 10 listening
"$CEPMCTL" connect --device rxe0 --service-id $SID --iterations 20 \
	--peer-ip 10.77.0.2 --peer-mac "$PEER_MAC" >"$out.connect" 2>&1
crc=$?
wait $apid
arc=$?
sed 's/^/# /' "$out.accept" "$out.connect"

ktap_check "connect (rxe0) and accept (rxe1, other namespace) both succeeded" sh -c "test $crc = 0 && test $arc = 0"
ktap_check "the REQ arrived on rxe1" grep -q 'REQ claimed as CEP' "$out.accept"
ktap_check "20 round trips of 4096 bytes verified across the veth pair" \
	grep -q 'client: 20 iterations x 4096 bytes, .* verified 81920 bytes' "$out.connect"
ktap_check "both sides disconnected through timewait" \
	sh -c "grep -q 'event TIMEWAIT_EXIT' '$out.accept' && grep -q 'event TIMEWAIT_EXIT' '$out.connect'"
ktap_check "no CEP is left in the module" test "$(live_ceps)" = 0
ktap_finished
