#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# A connection between two "hosts": rxe0 on veth0 here, rxe1 on veth1 in the network
# namespace cepm_peer, the CM MADs and the RC traffic crossing the veth pair.  cepm manages
# both devices; cepmctl accept runs inside the namespace on rxe1, cepmctl connect here on rxe0.
. "$(dirname "$0")/lib.sh"
need_root
ktap_print_header
ktap_set_plan 6

NS=cepm_peer
SID=0x0000000001064e26
out=$CEPM_ROOT/out/cep_two_hosts.$$
cleanup() {
	rdma link delete rxe1 2>/dev/null
	# Move veth1 home before the namespace goes: deleting it there would delete veth0 too.
	ip -n $NS link set veth1 netns 1 2>/dev/null
	ip netns del $NS 2>/dev/null
	ip link set veth1 up 2>/dev/null
	rm -f "$out".*
}
trap cleanup EXIT

modprobe ib_uverbs
ip netns add $NS
ip link set veth1 netns $NS
ip -n $NS addr add 10.77.0.2/24 dev veth1
ip -n $NS link set veth1 up
ip -n $NS link set lo up
ip netns exec $NS rdma link add rxe1 type rxe netdev veth1
peer_mac=$(ip -n $NS -br link show veth1 | awk '{print $3}')
has_v4_gid() { "$CEPMCTL" ports >/dev/null && grep -qs 'ffff:0a4d:0002' /sys/class/infiniband/rxe1/ports/1/gids/*; }

ktap_check "cepm manages rxe1 as well" wait_until 20 port_listed rxe1 1
wait_until 20 has_v4_gid

listening() { grep -q '^accept: listening' "$out.accept"; }
ip netns exec $NS "$CEPMCTL" accept --device rxe1 --service-id $SID --iterations 20 >"$out.accept" 2>&1 &
apid=$!
wait_until 10 listening
"$CEPMCTL" connect --device rxe0 --service-id $SID --iterations 20 \
	--peer-ip 10.77.0.2 --peer-mac "$peer_mac" >"$out.connect" 2>&1
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
