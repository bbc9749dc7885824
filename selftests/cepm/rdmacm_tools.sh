#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# rdma-core's own tools, unmodified, with cepm's librdmacm (out/rdmacm/librdmacm.so.1)
# in place of rdma-core's on both ends, so that cepm is their connection manager: rping pings
# with RDMA reads and writes and verifies the data, ucmatose connects and exchanges messages
# (on one connection, then on 100, whose IDs move to a new event channel with -m:
# rdma_migrate_id), cmtime connects and disconnects 100 at once, perftest's
# ib_send_bw and ib_write_bw measure over rdma_cm (-R), rdma_server and rdma_client use the synchronous
# endpoint calls (rdma_create_ep, rdma_get_request), udaddy exchanges datagrams after SIDR; a
# connection to a port nobody listens on is REJECTED with status 8 (invalid service ID), and so
# is ib_send_bw's client when its server's data listener comes late (cm_clock.so), after
# which perftest's retry passes the library freed pointers: it must exit cleanly.
# rping and ucmatose run again over IPv6 (ULA addresses on the veth pair). Our own servers
# receive on an SRQ (rdma_srq_server) and ready their QP before rdma_accept
# (rdma_qp_before_accept); ECE values cross in REQ and REP and rdma_reject_ece gives REJ 35
# (rdma_ece); a QP made by rdma_create_qp_ex with send-ops flags sends through ibv_wr_send
# (rdma_qp_ex). Afterwards no CEP is left.
# In the loopback topology both ends are on rxe0; in two-hosts the server runs in the peer
# namespace on rxe1.
. "$(dirname "$0")/lib.sh"
need_root
ktap_print_header
for tool in rping ucmatose cmtime rdma_server rdma_client udaddy ib_send_bw ib_write_bw; do
	command -v "$tool" >/dev/null || { ktap_skip_all "$tool missing"; exit "$KSFT_SKIP"; }
done
need_library
ktap_set_plan 22

out=$CEPM_ROOT/out/rdmacm_tools.$$
trap 'kill $(jobs -p) 2>/dev/null; wait; ipv6_down; topology_down; rm -f "$out".*' EXIT
ktap_check "topology $TOPOLOGY is up" topology_up
case $TOPOLOGY in
two-hosts) ADDR=10.77.0.2 ADDR6=$ADDR6_PEER ;;
*) ADDR=10.77.0.1 ADDR6=$ADDR6_LOCAL ;;
esac
TCP=0x0106 UDP=0x0111
# Command prefixes: with cepm's librdmacm, here and on the server's host. Arrays, not
# functions, so that "${ON_SERVER_OVER_CEPM[@]}" CMD & leaves $! on CMD's own process chain
# (env and ip netns exec exec it), which the test can signal.
ON_SERVER_OVER_CEPM=("${SERVER[@]}" env LD_LIBRARY_PATH="$LIB")
show() { show_file "# $1: " "$2"; }

# rping: 10 pings of 64 bytes, each an RDMA read and write, the data verified (-V).
tool_pair rping "cepm_listens 7174" -- \
	"${ON_SERVER_OVER_CEPM[@]}" timeout 120 rping -s -a $ADDR -p 7174 -C 10 -S 64 -v -V -- \
	"${OVER_CEPM[@]}" timeout 120 rping -c -a $ADDR -p 7174 -C 10 -S 64 -v -V
ktap_check "rping -c -> rping -s: both exit 0 ($crc, $src)" sh -c "test $crc = 0 && test $src = 0"
pings() { [ "$(grep -c '^ping data: rdma-ping-' "$out.rping-c")" = 10 ]; }
ktap_check "... 10 pings echoed and verified" pings

# ucmatose: one connection, 10 messages each way.
show_lines=4 tool_pair ucma "cepm_listens 7175" -- \
	"${ON_SERVER_OVER_CEPM[@]}" timeout 120 ucmatose -p 7175 -c 1 -C 10 -- \
	"${OVER_CEPM[@]}" timeout 120 ucmatose -s $ADDR -p 7175 -c 1 -C 10
ktap_check "ucmatose -c 1 -C 10: client and server complete with status 0 ($crc, $src)" \
	sh -c "test $crc = 0 && test $src = 0 && grep -q 'return status 0' '$out.ucma-c' && grep -q 'return status 0' '$out.ucma-s'"

# ucmatose: 100 connections, 10 messages each way on each; -m moves the 100 IDs (and the
# listener) to a new event channel before the disconnect (rdma_migrate_id, cepm's MIGRATE).
show_lines=2 tool_pair ucma100 "cepm_listens 7183" -- \
	"${ON_SERVER_OVER_CEPM[@]}" timeout 300 ucmatose -p 7183 -c 100 -C 10 -m -- \
	"${OVER_CEPM[@]}" timeout 300 ucmatose -s $ADDR -p 7183 -c 100 -C 10 -m
ktap_check "ucmatose -c 100 -C 10 -m: client and server complete with status 0, both migrated ($crc, $src)" \
	sh -c "test $crc = 0 && test $src = 0 && grep -q 'return status 0' '$out.ucma100-c' && grep -q 'return status 0' '$out.ucma100-s' && grep -q '^migrating to new event channel' '$out.ucma100-c' && grep -q '^migrating to new event channel' '$out.ucma100-s'"

# cmtime: 100 connections set up and torn down at once. Its server never exits: stopped after.
stop_server=1 show_lines=9 tool_pair cmtime "cepm_listens 7176" -- \
	"${ON_SERVER_OVER_CEPM[@]}" timeout 300 cmtime -p 7176 -- \
	"${OVER_CEPM[@]}" timeout 300 cmtime -s $ADDR -p 7176 -c 100
# Its table has one line a step: connect's (microseconds a connection, last) is not 0.
cmtime_ok() { [ "$crc" = 0 ] && awk '$1 == "connect" && $NF + 0 > 0 { ok = 1 } END { exit !ok }' "$out.cmtime-c"; }
ktap_check "cmtime -c 100: the client exits 0 and times its connections ($crc)" cmtime_ok

# rdma_server and rdma_client: synchronous endpoints, one message each way, then both
# disconnect at once (crossing DREQs: each must still see its DISCONNECTED). rxe can lose an
# ACK here (lib.sh, rxe_lost_ack_mark): the end left hanging is stopped 20 s after the other.
rxe_lost_ack_mark "$RXE_DEV" "$SERVER_DEV"
linger=20 tool_pair rdma "cepm_listens 7178" -- \
	"${ON_SERVER_OVER_CEPM[@]}" timeout 120 rdma_server -p 7178 -- \
	"${OVER_CEPM[@]}" timeout 120 rdma_client -s $ADDR -p 7178
check_unless_lost_ack "rdma_client -> rdma_server: both end 0 ($crc, $src)" \
	rdma '^rdma_client: end 0' '^rdma_server: end 0' \
	sh -c "test $crc = 0 && test $src = 0 && grep -q '^rdma_client: end 0' '$out.rdma-c' && grep -q '^rdma_server: end 0' '$out.rdma-s'"

# udaddy: a UD QP each, resolved through SIDR on rdma_cm's UDP port 7174 (udaddy's only
# port), 10 datagrams each way.
tool_pair udaddy "cepm_listens 7174 $UDP" -- \
	"${ON_SERVER_OVER_CEPM[@]}" timeout 120 udaddy -C 10 -- \
	"${OVER_CEPM[@]}" timeout 120 udaddy -s $ADDR -C 10
ktap_check "udaddy -s -> udaddy: both complete with status 0 ($crc, $src)" \
	sh -c "test $crc = 0 && test $src = 0 && grep -q 'return status 0' '$out.udaddy-c' && grep -q 'return status 0' '$out.udaddy-s'"

# perftest over rdma_cm (-R): 200 sends, then 200 RDMA writes, of 4 KiB (rxe under TCG moves
# about 1 MB/s). Each device named (-d): with two hosts, both are visible from either namespace.
# Both ends finish together; an end whose attempt is void for perftest's own reasons (its clock,
# its early client: lib.sh, PERFTEST_VOID) exits alone, and the other is stopped at once, not at
# its 120 s timeout, and the pair runs again; an end still running 20 s after the other's
# normal exit is stopped too (linger).
perftest_pair() {
	local tool=$1 port=$2 linger=20
	again_if_void "$tool" tool_pair "$tool" "cepm_listens $port" -- \
		"${ON_SERVER_OVER_CEPM[@]}" timeout 120 "${CM_CLOCK[@]}" "$tool" -R -d "$SERVER_DEV" -p "$port" -n 200 -s 4096 -- \
		"${OVER_CEPM[@]}" timeout 120 "${CM_CLOCK[@]}" "$tool" -R -d "$RXE_DEV" -p "$port" -n 200 -s 4096 $ADDR
}
# The client's result line: 4096 bytes, 200 iterations, and an average bandwidth above 0.
measured() { [ "$crc" = 0 ] && [ "$src" = 0 ] && awk '$1 == 4096 && $2 == 200 && $4 + 0 > 0 { ok = 1 } END { exit !ok }' "$out.$1-c"; }
perftest_pair ib_send_bw 18515
ktap_check "ib_send_bw -R: 200 sends of 4 KiB measured, both exit 0 ($crc, $src)" measured ib_send_bw
perftest_pair ib_write_bw 18516
ktap_check "ib_write_bw -R: 200 writes of 4 KiB measured, both exit 0 ($crc, $src)" measured ib_write_bw

# perftest -R's server listens for its data connection only after a handshake on its first
# listener, and a client that connects in between is rejected with reason 8 (rare, on a slow
# host). The client then retries, and perftest 4.5-0.17 (Debian 12's) retries with what it has
# freed: rdma_resolve_addr on an ID pointer read from its freed array, then
# rdma_destroy_event_channel on the channel it destroyed (its src/perftest_communication.c,
# rdma_cm_client_connection and create_rdma_cm_connection; fixed upstream in 2025). Our
# library must turn such pointers away with an error, not crash: the client exits by itself.
# cm_clock.so opens the window at will: the server's second rdma_listen starts 3 s late. The
# client's REJ is then perftest's early client by cm_clock.so's times too (early_client).
linger=3 tool_pair late "cepm_listens 18517" -- \
	"${ON_SERVER_OVER_CEPM[@]}" CEPM_LATE_LISTEN=2:3000 timeout 60 "${CM_CLOCK[@]}" \
	ib_send_bw -R -d "$SERVER_DEV" -p 18517 -n 200 -s 4096 -- \
	"${OVER_CEPM[@]}" timeout 60 "${CM_CLOCK[@]}" ib_send_bw -R -d "$RXE_DEV" -p 18517 -n 200 -s 4096 $ADDR
rejected_early() {
	grep -q '^cm_clock: rdma_listen 2 starts 3000 ms late' "$out.late-s" &&
		grep -q 'Event: RDMA_CM_EVENT_REJECTED; error: 8\.' "$out.late-c" && [ "$crc" -lt 124 ] &&
		early_client late
}
ktap_check "ib_send_bw -R, the server's data listener 3 s late: the client is rejected (status 8) and exits by itself, no crash ($crc)" rejected_early
# The same on purpose: destroyed IDs and channels, and wild pointers (rdma_stale_pointers);
# and a channel destroyed under a thread waiting in rdma_get_cm_event, which must keep it.
"${OVER_CEPM[@]}" timeout 60 "$CEPM_ROOT/out/selftests/rdma_stale_pointers" >"$out.stale" 2>&1
stale_rc=$?
show stale "$out.stale"
stale_refused() { [ "$stale_rc" = 0 ] && grep -q '^rdma_stale_pointers: end 0' "$out.stale"; }
ktap_check "calls on a destroyed ID or channel, or on a wild pointer, fail with EINVAL, no crash; a waiter keeps its channel ($stale_rc)" stale_refused
# A listener destroyed while the CM thread turns its REQ into a CONNECT_REQUEST: the destroy
# waits for that event's acknowledgement, and the thread never reads a freed listener
# (rdma_listener_race holds the thread in that window; it connects to itself on rxe0).
"${OVER_CEPM[@]}" timeout 60 "$CEPM_ROOT/out/selftests/rdma_listener_race" 10.77.0.1 7187 >"$out.race" 2>&1
race_rc=$?
show race "$out.race"
race_ok() { [ "$race_rc" = 0 ] && grep -q '^rdma_listener_race: end 0' "$out.race"; }
ktap_check "rdma_destroy_id of a listener while its REQ is being read: the destroy waits for the CONNECT_REQUEST's ack, no freed listener read ($race_rc)" race_ok

# No one listens on port 7177: the peer's cepm answers with a REJ, reason 8.
"${OVER_CEPM[@]}" timeout 120 ucmatose -s $ADDR -p 7177 -c 1 -C 1 >"$out.nolisten" 2>&1
show nolisten "$out.nolisten" | tail -n 3
ktap_check "no listener: REJECTED, status 8" grep -q 'RDMA_CM_EVENT_REJECTED, error: 8' "$out.nolisten"

# IPv6, on veth0 and, with two hosts, on veth1 (lib.sh).
ktap_check "IPv6 addresses and their GIDs are up" ipv6_up "${SERVER[@]}"

tool_pair rping6 "cepm_listens 7184" -- \
	"${ON_SERVER_OVER_CEPM[@]}" timeout 120 rping -s -a $ADDR6 -p 7184 -C 10 -S 64 -v -V -- \
	"${OVER_CEPM[@]}" timeout 120 rping -c -a $ADDR6 -p 7184 -C 10 -S 64 -v -V
rping6_ok() { [ "$crc" = 0 ] && [ "$src" = 0 ] && [ "$(grep -c '^ping data: rdma-ping-' "$out.rping6-c")" = 10 ]; }
ktap_check "IPv6: rping -c -> rping -s: both exit 0 ($crc, $src), 10 pings verified" rping6_ok

show_lines=4 tool_pair ucma6 "cepm_listens 7185" -- \
	"${ON_SERVER_OVER_CEPM[@]}" timeout 120 ucmatose -b $ADDR6 -p 7185 -c 1 -C 10 -- \
	"${OVER_CEPM[@]}" timeout 120 ucmatose -s $ADDR6 -p 7185 -c 1 -C 10
ktap_check "IPv6: ucmatose -c 1 -C 10: client and server complete with status 0 ($crc, $src)" \
	sh -c "test $crc = 0 && test $src = 0 && grep -q 'return status 0' '$out.ucma6-c' && grep -q 'return status 0' '$out.ucma6-s'"

# Our own servers, each against rdma_client as is, one exchange each way: client_pair NAME
# PROG PORT DESC. They tear their QP down as rdma_server does, so rxe can lose an ACK here too.
client_ends() { [ "$crc" = 0 ] && [ "$src" = 0 ] && file_has "^$2: end 0" "$out.$1-s" && file_has '^rdma_client: end 0' "$out.$1-c"; }
client_pair() {
	local name=$1 prog=$2 port=$3 desc=$4
	rxe_lost_ack_mark "$RXE_DEV" "$SERVER_DEV"
	linger=20 tool_pair "$name" "cepm_listens $port" -- \
		"${ON_SERVER_OVER_CEPM[@]}" timeout 120 "$CEPM_ROOT/out/selftests/$prog" $ADDR "$port" -- \
		"${OVER_CEPM[@]}" timeout 120 rdma_client -s $ADDR -p "$port"
	check_unless_lost_ack "rdma_client -> $prog: $desc ($crc, $src)" \
		"$name" '^rdma_client: end 0' "^$prog: end 0" client_ends "$name" "$prog"
}
# An SRQ: rdma_srq_server receives on the SRQ rdma_create_srq gave its ID.
client_pair srq rdma_srq_server 7186 "one exchange, through the server's SRQ"
# Before accept, as UCX's and SPDK's servers do: rdma_qp_before_accept reads the request ID's
# RTR attributes, moves a QP of its own through INIT, RTR and RTS with rdma_init_qp_attr, then
# accepts with its number. A REP whose PSN is not the one RTR gave fails the exchange.
client_pair before rdma_qp_before_accept 7188 "the QP to RTS before rdma_accept, one exchange"

# ECE (rdma_ece, ours on both ends): the client's vendor ID and options reach the server in the
# REQ, the server's options come back in the REP, and rdma_reject_ece is REJECTED status 35.
ece_ok() { [ "$crc" = 0 ] && [ "$src" = 0 ] && file_has '^rdma_ece: end 0' "$out.ece-c" && file_has '^rdma_ece: end 0' "$out.ece-s"; }
tool_pair ece "cepm_listens 7189" -- \
	"${ON_SERVER_OVER_CEPM[@]}" timeout 60 "$CEPM_ROOT/out/selftests/rdma_ece" server $ADDR 7189 -- \
	"${OVER_CEPM[@]}" timeout 60 "$CEPM_ROOT/out/selftests/rdma_ece" client $ADDR 7189
ktap_check "rdma_ece: ECE in REQ and REP both ways, rdma_reject_ece gives status 35 ($crc, $src)" ece_ok

# Extended QPs and SRQs (rdma_qp_ex, ours, against rdma_server as is): rdma_create_qp_ex with
# send-ops flags gives a QP whose message leaves through ibv_wr_send; an XRC SRQ fails with
# rxe's EOPNOTSUPP.
qpex_ok() { [ "$crc" = 0 ] && [ "$src" = 0 ] && file_has '^rdma_qp_ex: end 0' "$out.qpex-c" && file_has '^rdma_server: end 0' "$out.qpex-s"; }
rxe_lost_ack_mark "$RXE_DEV" "$SERVER_DEV"
linger=20 tool_pair qpex "cepm_listens 7190" -- \
	"${ON_SERVER_OVER_CEPM[@]}" timeout 120 rdma_server -p 7190 -- \
	"${OVER_CEPM[@]}" timeout 120 "$CEPM_ROOT/out/selftests/rdma_qp_ex" $ADDR 7190
check_unless_lost_ack "rdma_qp_ex -> rdma_server: send-ops flags through rdma_create_qp_ex, one exchange; XRC SRQ EOPNOTSUPP ($crc, $src)" \
	qpex '^rdma_qp_ex: end 0' '^rdma_server: end 0' qpex_ok

kill $(jobs -p) 2>/dev/null
wait 2>/dev/null
ktap_check "no CEP is left once every tool has exited" wait_until 60 ceps_are 0
ktap_finished
