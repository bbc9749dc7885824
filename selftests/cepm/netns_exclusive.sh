#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# The exclusive RDMA netns mode (`rdma system set netns exclusive`, docs/abi.md, "Network
# namespaces"): a device serves only the namespace it belongs to. rxe devices are made in the
# initial namespace and cannot move (rxe has no disassociate_ucontext), so rxe1, on veth1 in
# namespace $PEER_NS, stays the host's: the peer namespace may use no device, and rxe1's GIDs,
# whose netdev is the peer's, belong to a namespace that may not use rxe1.
# - The peer namespace's QUERY lists no port; the host's lists rxe1.
# - A REQ arriving on rxe1 finds no listener, neither the host's nor the peer's: REJ 8.
# The mode can change only while no namespace but the initial one exists: it is set before the
# peer namespace is made, and put back after it is gone.
. "$(dirname "$0")/lib.sh"
need_root
ktap_print_header
command -v rdma >/dev/null || { ktap_skip_all "rdma (iproute2) missing"; exit "$KSFT_SKIP"; }
ktap_set_plan 8

out=$CEPM_ROOT/out/netns_exclusive.$$
# A deleted namespace leaves the RDMA core's list a moment later (cleanup_net's work): until
# then the mode cannot change.
trap 'kill $(jobs -p) 2>/dev/null; wait; peer_ns_down; wait_until 20 rdma system set netns shared; rm -f "$out".*' EXIT

ktap_check "the RDMA netns mode becomes exclusive" sh -c 'rdma system set netns exclusive && rdma system show netns | grep -qw exclusive'
ktap_check "the peer namespace is up, rxe1 in it on veth1" peer_ns_up

# ports_seen CEPMCTL...: how many ports `CEPMCTL ports` (with its prefixes) lists.
ports_seen() {
	local summary
	summary=$("$@" ports | head -n1) &&
		[[ $summary =~ ([0-9]+)\ managed\ port ]] && echo "${BASH_REMATCH[1]}"
}
peer_sees_no_port() { [ "$(ports_seen "${PEER[@]}" "$CEPMCTL")" = 0 ]; }
ktap_check "QUERY in the peer namespace lists no port" peer_sees_no_port
ktap_check "QUERY in the host namespace lists rxe1" port_listed rxe1 1

# connect_to_rxe1 NAME SERVICE_ID: a CM-only CONNECT from rxe0 to rxe1's address.
connect_to_rxe1() { cm_connect "$1" "$2" rxe0 10.77.0.2 "$PEER_MAC" 30000; }
rejected_8() { grep -q 'got REJ_RECEIVED (status 8)' "$out.$1"; }
SID_HOST=0x0000000001069011 SID_PEER=0x0000000001069012
"$CEPMCTL" accept --service-id $SID_HOST --cm-only --timeout-ms 30000 >"$out.host-accept" 2>&1 &
"${PEER[@]}" "$CEPMCTL" accept --service-id $SID_PEER --cm-only --timeout-ms 30000 >"$out.peer-accept" 2>&1 &
listening() { list_has_state LISTEN $SID_HOST && list_has_state LISTEN $SID_PEER; }
ktap_check "cepmctl accept listens in each namespace" wait_until 30 listening
# As in the shared mode: rxe1's GIDs are not the host's.
connect_to_rxe1 to-host $SID_HOST
ktap_check "a REQ on rxe1 for the host's listen gets REJ 8 ($?)" rejected_8 to-host
# Only in the exclusive mode: the peer namespace owns rxe1's GIDs but may not use rxe1.
connect_to_rxe1 to-peer $SID_PEER
ktap_check "a REQ on rxe1 for the peer's listen gets REJ 8 ($?)" rejected_8 to-peer
no_request_offered() { ! grep -q REQ_RECEIVED "$out.host-accept" "$out.peer-accept"; }
ktap_check "... and neither listener was offered a request" no_request_offered
ktap_finished
