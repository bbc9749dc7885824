#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# rdma_cm's failure paths with cepm's librdmacm on both ends (two hosts: the server in the peer
# namespace on rxe1), each as librdmacm reports it:
#   - an address with no host behind it: ADDR_ERROR;
#   - a peer that stops answering mid-connect (cepm's debugfs drops every REQ it gets):
#     UNREACHABLE, after the REQ and one retry, about 1 s each (CEPM_RDMACM_CM_RETRIES=1 and
#     CEPM_RDMACM_CM_RESPONSE_TIMEOUT=17 keep that short);
#   - a consumer reject: REJECTED with status 28 and the server's private data;
#   - kill -9 of an application mid-connection: its peer sees the disconnect, no CEP is left;
#   - an application slow to accept a request it has taken (4 s), and a client that gives up
#     after its REQ and one retry: the retry finds the MRA the library armed as it took the
#     request, as rdma_cm arms one (cma_ib_req_handler, ib_prepare_cm_mra), and the client
#     waits for the accept.
. "$(dirname "$0")/lib.sh"
need_root
ktap_print_header
[ "$TOPOLOGY" = two-hosts ] || { ktap_skip_all "needs the two-hosts topology"; exit "$KSFT_SKIP"; }
for tool in ucmatose rping; do
	command -v "$tool" >/dev/null || { ktap_skip_all "$tool missing"; exit "$KSFT_SKIP"; }
done
need_library
need_progs rdma_reject_client cm_clock.so
ktap_set_plan 7

out=$CEPM_ROOT/out/rdmacm_failures.$$
trap 'kill $(jobs -p) 2>/dev/null; wait; drop_rx 0 0; topology_down; rm -f "$out".*' EXIT
ktap_check "topology $TOPOLOGY is up" topology_up
ADDR=10.77.0.2 TCP=0x0106
ON_SERVER_OVER_CEPM=("${SERVER[@]}" env LD_LIBRARY_PATH="$LIB")
show() { show_file "# $1: " "$2" "${3:-3}"; }

# No host at 10.77.0.99: its neighbour entry never resolves, within ucmatose's 2 s.
"${OVER_CEPM[@]}" timeout 60 ucmatose -s 10.77.0.99 -p 7190 -c 1 -C 1 >"$out.noaddr" 2>&1
show noaddr "$out.noaddr"
ktap_check "an address nobody has: ADDR_ERROR with a negative errno" \
	grep -Eq 'RDMA_CM_EVENT_ADDR_ERROR, error: -[0-9]+' "$out.noaddr"

# The server listens, but every REQ that reaches a port of cepm's is dropped from now on: the
# client's REQ and its one retry go unanswered.
"${ON_SERVER_OVER_CEPM[@]}" timeout 120 ucmatose -p 7191 -c 1 -C 1 >"$out.gone-s" 2>&1 &
spid=$!
wait_until 30 cepm_listens 7191
drop_rx 0x10 1000
CEPM_RDMACM_CM_RETRIES=1 CEPM_RDMACM_CM_RESPONSE_TIMEOUT=17 "${OVER_CEPM[@]}" timeout 120 ucmatose -s $ADDR -p 7191 -c 1 -C 1 >"$out.gone" 2>&1
drop_rx 0 0
kill $spid 2>/dev/null
wait $spid 2>/dev/null
show gone "$out.gone"
ktap_check "a peer that stops answering mid-connect: UNREACHABLE, -ETIMEDOUT" \
	grep -q 'RDMA_CM_EVENT_UNREACHABLE, error: -110' "$out.gone"

# A consumer reject with private data (rdma_reject_server), read by rdma_reject_client.
tool_pair rej "cepm_listens 7192" -- \
	"${ON_SERVER_OVER_CEPM[@]}" timeout 60 "$progs/rdma_reject_server" $ADDR 7192 "not today" 5 6 -- \
	"${OVER_CEPM[@]}" timeout 60 "$progs/rdma_reject_client" $ADDR 7192 "not today" 5 6
rejected() { [ "$crc" = 0 ] && [ "$src" = 0 ] && file_has 'status 28, 148 bytes of private data: not today' "$out.rej-c"; }
ktap_check "a consumer reject: REJECTED, status 28, with the server's private data; the REQ's retry counts (5, 6) reached the server ($crc, $src)" rejected

# kill -9 mid-connection: rping pings without end until its client is killed; the client's
# file closes with the connection up, cepm disconnects it, the server sees DISCONNECTED and
# exits.
"${ON_SERVER_OVER_CEPM[@]}" timeout 120 rping -s -a $ADDR -p 7193 >"$out.rping9-s" 2>&1 &
spid=$!
wait_until 30 cepm_listens 7193
# Not under timeout(1): $! must be rping itself, which kill -9 is for (the test's own limit
# bounds it).
"${OVER_CEPM[@]}" rping -c -a $ADDR -p 7193 >"$out.rping9-c" 2>&1 &
cpid=$!
established() { [ "$("$CEPMCTL" list | awk '$2 == "ESTABLISHED"' | wc -l)" -ge 2 ]; }
killed_cleanly() {
	wait_until 30 established || return 1
	kill -9 $cpid
	wait $cpid 2>/dev/null
	wait_until 60 exited $spid
}
ktap_check "kill -9 of rping -c mid-connection: the server sees the disconnect and exits" killed_cleanly
wait $spid 2>/dev/null
show rping9-s "$out.rping9-s" 2

# A slow accept (cm_clock.so's CEPM_LATE_ACCEPT) against a client that gives up after about
# 2 s. rxe can lose the exchange's last ACK (lib.sh, rxe_lost_ack_mark).
mra0=$("$CEPMCTL" tx-count "$SERVER_DEV" 1 MRA)
rxe_lost_ack_mark "$RXE_DEV" "$SERVER_DEV"
linger=20 tool_pair slow "cepm_listens 7194" -- \
	"${ON_SERVER_OVER_CEPM[@]}" CEPM_LATE_ACCEPT=4000 LD_PRELOAD="$progs/cm_clock.so" \
	timeout 120 rdma_server -s $ADDR -p 7194 -- \
	"${OVER_CEPM[@]}" CEPM_RDMACM_CM_RETRIES=1 CEPM_RDMACM_CM_RESPONSE_TIMEOUT=17 \
	timeout 120 rdma_client -s $ADDR -p 7194
mras_sent() { echo $(($("$CEPMCTL" tx-count "$SERVER_DEV" 1 MRA) - mra0)); }
ktap_print_msg "the server's cepm sent $(mras_sent) MRA(s)"
slow_ok() {
	[ "$crc" = 0 ] && [ "$src" = 0 ] && file_has '^rdma_client: end 0' "$out.slow-c" &&
		file_has '^cm_clock: accept 1 starts 4000 ms late' "$out.slow-s" && [ "$(mras_sent)" -ge 1 ]
}
check_unless_lost_ack "a server 4 s slow to accept: the client's retry gets an MRA, and both end 0 ($crc, $src)" \
	slow '^rdma_client: end 0' '^rdma_server: end 0' slow_ok

kill $(jobs -p) 2>/dev/null
wait 2>/dev/null
ktap_check "no CEP is left once every tool has exited" wait_until 60 ceps_are 0
ktap_finished
