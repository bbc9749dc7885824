#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Connections across a lossy link: netem drops 10% of the packets each way on the veth pair
# between rxe0 and rxe1 (in namespace cepm_peer).  Lost REQs, REPs, RTUs, DREQs and DREPs
# are made good by retries and duplicate handling (a duplicate REP is answered with the RTU
# again, a duplicate DREQ with a DREP): every connection is established exactly once and
# disconnected, none fails.  The neighbour entries are fixed, so that the loss tests the CM's
# retries and not ARP's (see peer_neighbours_fixed).
. "$(dirname "$0")/lib.sh"
need_root
ktap_print_header
ktap_set_plan 5

SID=0x0000000001064e50
N=50
out=$CEPM_ROOT/out/cep_lossy.$$
trap 'tc qdisc del dev veth0 root 2>/dev/null; peer_ns_down; rm -f "$out".*' EXIT

peer_up() { peer_ns_up && peer_neighbours_fixed; }
ktap_check "second host up (rxe1 in namespace $PEER_NS), neighbours fixed" peer_up
modprobe sch_netem
tc qdisc add dev veth0 root netem loss 10%
ip netns exec $PEER_NS tc qdisc add dev veth1 root netem loss 10%

listening() { file_has '^accept: listening' "$out.accept"; }
# Short CM timeouts (about 75 ms per try) and the full 15 retries.
fast=(--cm-only --max-cm-retries 15 --cm-response-timeout 14 --packet-life-time 10 --timeout-ms 60000)
ip netns exec $PEER_NS "$CEPMCTL" accept --device rxe1 --service-id $SID --count $N "${fast[@]}" >"$out.accept" 2>&1 &
apid=$!
wait_until 10 listening
"$CEPMCTL" connect --device rxe0 --service-id $SID --count $N "${fast[@]}" \
	--peer-ip 10.77.0.2 --peer-mac "$PEER_MAC" >"$out.connect" 2>&1
crc=$?
wait $apid
arc=$?
show_files "$out.accept" "$out.connect"
tc -s qdisc show dev veth0 | sed 's/^/# veth0: /'

ktap_check "both sides finished" sh -c "test $crc = 0 && test $arc = 0"
ktap_check "all $N connected and disconnected, none failed" \
	grep -q "^connect: $N connected and disconnected, 0 failed" "$out.connect"
ktap_check "netem really dropped packets" sh -c "tc -s qdisc show dev veth0 | grep -q 'dropped [1-9]'"
ktap_check "no CEP is left in the module" wait_until 10 ceps_are 0
ktap_finished
