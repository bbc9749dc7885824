#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Several portals on one port, as SPDK's NVMe-oF target listens: one rdma_cm ID per address,
# all on the same port, over cepm's library (rdma_portals, with rdma-core's rdma_client as the
# client). Each request reaches the portal whose address the client dialled, whether the
# portals are in one process or in two, and a client dialling an address of the host that no
# portal of the port has is rejected. An IPv6 wildcard with AFONLY next to two IPv4 portals
# takes the IPv6 client, and leaves the IPv4 ones to their portals. Afterwards no CEP is left.
# In the loopback topology both ends are on rxe0; in two-hosts the server runs in the peer
# namespace on rxe1; in "stock" (rdmacm_portals.sh@stock) it runs there on the stock stack
# (rdma-core's librdmacm, the kernel's rdma_cm: stock_up in lib.sh), which must answer the
# clients over cepm alike. (A wildcard bound next to specific portals of one family gets
# EADDRNOTAVAIL at rdma_bind_addr, as rdma_cm's cma_check_port gives: a rule of the port
# reservation, which its own test covers.)
. "$(dirname "$0")/lib.sh"
need_root
ktap_print_header
command -v rdma_client >/dev/null || { ktap_skip_all "rdma_client missing"; exit "$KSFT_SKIP"; }
need_library
need_progs rdma_portals
ktap_set_plan 12

out=$CEPM_ROOT/out/rdmacm_portals.$$
down=topology_down
[ "$TOPOLOGY" != stock ] || down=stock_down
trap 'kill $(jobs -p) 2>/dev/null; wait; ip addr del 10.77.0.3/24 dev veth0 2>/dev/null; ipv6_down; $down; rm -f "$out".*' EXIT
# ON_SERVER: the server's command prefix, with the library it runs over.
case $TOPOLOGY in
stock)
	ktap_check "cepm manages rxe0 only, ib_cm has rxe1 in namespace $PEER_NS" stock_up
	SERVER=("${PEER[@]}") SERVER_DEV=rxe1 ON_SERVER=("${PEER[@]}")
	;;
*)
	ktap_check "topology $TOPOLOGY is up" topology_up
	ON_SERVER=("${SERVER[@]}" env LD_LIBRARY_PATH="$LIB")
	;;
esac
case $TOPOLOGY in
loopback) A1=10.77.0.1 A2=10.77.0.3 ADDR6=$ADDR6_LOCAL ;;
*) A1=10.77.0.2 A2=10.77.0.4 ADDR6=$ADDR6_PEER ;;
esac
# A second IPv4 address on the server's host, and its RoCE GID.
second_addr() {
	on_server ip addr add $A2/24 dev "$([ "$TOPOLOGY" = loopback ] && echo veth0 || echo veth1)" &&
		wait_until 20 has_gid "$SERVER_DEV" "ffff:0a4d:000${A2##*.}"
}
ktap_check "a second address $A2 and its GID are up on $SERVER_DEV" second_addr
PORT=7520
# What crosses veth0, for wire_trace (on loopback nothing does). dumpcap itself is the job.
if [ "$TOPOLOGY" != loopback ]; then
	dumpcap -q -i veth0 -f "udp port 4791" -w "$out.pcap" >/dev/null 2>&1 &
fi

# server NAME COUNT ADDRESS...: rdma_portals in the background on the server's host, its
# output in $out.NAME and its PID in $spid_NAME, once it listens (or has exited).
server() {
	local name=$1
	shift
	"${ON_SERVER[@]}" timeout 120 "$progs/rdma_portals" "$1" $PORT "${@:2}" >"$out.$name" 2>&1 &
	printf -v "spid_$name" %s $!
	up() { file_has '^listening' "$out.$name" || ! kill -0 "$1" 2>/dev/null; }
	wait_until 30 up $!
}
# client NAME ADDRESS: rdma_client to ADDRESS:PORT, its output in $out.NAME-c (line-buffered,
# so that a client stopped in a hang keeps what it printed); its status.
# A client still running after 15 s has hung: the RC QPs of both ends (state, PSNs, as rdma
# res shows them) are logged then, while the hung ones exist.
client() {
	local pid i line
	"${OVER_CEPM[@]}" timeout 60 stdbuf -oL rdma_client -s "$2" -p $PORT >"$out.$1-c" 2>&1 &
	pid=$!
	for ((i = 0; i < 150; i++)); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
	kill -0 $pid 2>/dev/null &&
		rc_qps | while IFS= read -r line; do ktap_print_msg "hung $1: $line"; done
	wait $pid
}
rc_qps() {
	rdma -d res show qp link "$RXE_DEV/1" | grep ' type RC '
	on_server rdma -d res show qp link "$SERVER_DEV/1" | grep ' type RC '
}
# rxe's counters on both ends, logged after each case: a hang in an exchange shows whose rxe
# retried, and whether the other saw the retries as duplicates or as out of sequence (a PSN
# other than the one its QP expects), or not at all (lib.sh, rxe_lost_ack).
rxe_retries() {
	local dev
	for dev in "$RXE_DEV" "$SERVER_DEV"; do
		printf '%s: completer_retry_err %s, duplicate_request %s, out_of_seq_request %s; ' \
			"$dev" "$(rxe_counter "$dev" completer_retry_err)" \
			"$(rxe_counter "$dev" duplicate_request)" "$(rxe_counter "$dev" out_of_seq_request)"
	done
}
# wire_trace: when a case's exchange hung, the last 24 lines of what crossed veth0, one per
# packet: time, source, destination, BTH opcode, destination QP, PSN, then a CM MAD's
# attribute and a REQ's or REP's local QPN and starting PSN (the CM's word on what each end
# expects); a run of the same packet is one line with its count.
wire_trace() {
	local line
	[ "$TOPOLOGY" != loopback ] || return 0
	tshark -r "$out.pcap" -T fields -e frame.time_relative -e ip.src -e ip.dst \
		-e infiniband.bth.opcode -e infiniband.bth.destqp -e infiniband.bth.psn \
		-e infiniband.mad.attributeid -e infiniband.cm.req.localqpn \
		-e infiniband.cm.req.startpsn -e infiniband.cm.rep.localqpn \
		-e infiniband.cm.rep.startpsn 2>/dev/null |
		awk -F'\t' '{ k = $2 " " $3 " " $4 " " $5 " " $6 " " $7 " " $8 $9 " " $10 $11 }
			k == last { n++; next }
			{ if (NR > 1) print t, last, "x" n; last = k; t = sprintf("%.2f", $1); n = 1 }
			END { if (NR) print t, last, "x" n }' | tail -n 24 |
		while IFS= read -r line; do ktap_print_msg "wire: $line"; done
}
# served NAME PORTAL: the server's output says PORTAL took a request, and the exchange on
# it ended well for rdma_client.
served() { file_has "^portal $2: request from " "$out.$1" && file_has '^rdma_client: end 0' "$out.$1-$2-c"; }
# ended NAME: the server NAME exited 0 after its last exchange.
ended() { local pid="spid_$1"; wait "${!pid}" && file_has '^rdma_portals: end 0' "$out.$1"; }

# (i) Two portals in one process.
server one 2 $A1 $A2
client one-$A2 $A2
client one-$A1 $A1
show_files "$out.one" "$out.one-$A2-c" "$out.one-$A1-c"
ktap_print_msg "rxe: $(rxe_retries)"
{ served one $A2 && served one $A1; } || wire_trace
ktap_check "one process, two portals: $A2's request reaches portal $A2" served one $A2
ktap_check "... and $A1's reaches portal $A1" served one $A1
ktap_check "... and the server ends after its two exchanges" ended one

# (ii) Two portals in two processes; before the second listens, a client dialling its address
# is rejected: the port has a portal, but none for that address.
server first 1 $A1
client refused $A2
show_files "$out.refused-c"
ktap_check "a client dialling $A2 while only $A1 listens on the port is refused" \
	file_has '^rdma_connect: Connection refused' "$out.refused-c"
server second 1 $A2
client second-$A2 $A2
client first-$A1 $A1
show_files "$out.first" "$out.second" "$out.first-$A1-c" "$out.second-$A2-c"
ktap_print_msg "rxe: $(rxe_retries)"
{ served second $A2 && served first $A1; } || wire_trace
ktap_check "two processes: $A2's request reaches the second one's portal" served second $A2
ktap_check "... and $A1's the first one's" served first $A1
both_ended() { ended first && ended second; }
ktap_check "... and both servers end" both_ended

# (iv) An IPv6 wildcard with AFONLY next to the two IPv4 portals takes the IPv6 client.
ktap_check "IPv6 addresses and their GIDs are up" ipv6_up "${SERVER[@]}"
server six 2 $A1 $A2 ::+afonly
client six-:: "$ADDR6"
client six-$A1 $A1
show_files "$out.six" "$out.six-::-c" "$out.six-$A1-c"
ktap_print_msg "rxe: $(rxe_retries)"
{ served six :: && served six $A1; } || wire_trace
six_served() { served six :: && served six $A1 && ended six; }
ktap_check "[::] with AFONLY beside $A1 and $A2: the IPv6 client reaches [::], $A1's client $A1" \
	six_served

kill $(jobs -p) 2>/dev/null
wait 2>/dev/null
ktap_check "no CEP is left once every server has exited" wait_until 60 ceps_are 0
ktap_finished
