#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# rdma-core's tools, unmodified, over cepm's librdmacm on one end and over the stock stack
# (rdma-core's librdmacm, the kernel's rdma_cm and ib_cm) on the other, in both directions:
# ucmatose, rdma_server/rdma_client, udaddy, cmtime, perftest's ib_send_bw and ib_write_bw,
# rping and ucmatose over IPv6, a consumer reject with private data (rdma_reject_server and
# rdma_reject_client, ours), an SRQ (rdma_srq_server, ours), a QP readied before rdma_accept
# (rdma_qp_before_accept, ours), ECE (rdma_ece, ours, its REQ, REP and REJ also seen on veth0 by
# tshark), an extended QP (rdma_qp_ex, ours), an event channel's fd (rdma_channel_events, ours) and
# asynchronous address resolution (rdma_async_resolve, ours) and port reservation at bind (rdma_bind_ports, ours, on
# the stock end only, its output compared with rdmacm_ports.sh's). cepm manages rxe0 alone
# (10.77.0.1, this namespace); the stock CM owns rxe1 (10.77.0.2, namespace cepm_peer), as in
# interop_stock.sh (rping, with a capture, is interop_rping.sh). Afterwards no CEP is left.
. "$(dirname "$0")/lib.sh"
interop_begin ucmatose cmtime rdma_server rdma_client udaddy rping ib_send_bw ib_write_bw
need_library
ktap_set_plan 35

out=$CEPM_ROOT/out/rdmacm_stock.$$
OURS=10.77.0.1 STOCK=10.77.0.2
ktap_check "cepm manages rxe0 only, ib_cm has rxe1 in namespace $PEER_NS" stock_up

# pair NAME PORT DIRECTION SERVER... -- CLIENT...: tool_pair with the server over cepm here,
# or stock in the peer namespace, as DIRECTION says ("to-stock" or "from-stock"), ready once
# it listens on PORT, and the client on the other end; each under a 120 s timeout. PORT_SPACE
# (UDP for udaddy) in $ps, TCP by default.
pair() {
	local name=$1 port=$2 direction=$3 server=()
	shift 3
	while [ "$1" != -- ]; do server+=("$1"); shift; done
	shift
	if [ "$direction" = to-stock ]; then
		tool_pair "$name" "stock_listens $port" -- "${PEER[@]}" timeout 120 "${server[@]}" -- \
			"${OVER_CEPM[@]}" timeout 120 "$@"
	else
		tool_pair "$name" "cepm_listens $port ${ps:-$TCP}" -- \
			"${OVER_CEPM[@]}" timeout 120 "${server[@]}" -- "${PEER[@]}" timeout 120 "$@"
	fi
}
both_ok() { [ "$crc" = 0 ] && [ "$src" = 0 ]; }
status_ok() { both_ok && file_has 'return status 0' "$out.$1-c" && file_has 'return status 0' "$out.$1-s"; }
ends_ok() { both_ok && file_has '^rdma_client: end 0' "$out.$1-c" && file_has '^rdma_server: end 0' "$out.$1-s"; }

# ucmatose: two connections at once, 10 messages each way on each; -m moves every ID (and the
# listener) to a new event channel before the disconnect (rdma_migrate_id, cepm's MIGRATE).
migrated() { status_ok "$1" && grep -q '^migrating to new event channel' "$out.$1-c" &&
	grep -q '^migrating to new event channel' "$out.$1-s"; }
pair ucma-to 7503 to-stock ucmatose -b $STOCK -p 7503 -c 2 -C 10 -m -- ucmatose -s $STOCK -p 7503 -c 2 -C 10 -m
ktap_check "ucmatose -m over cepm -> stock ucmatose -m: status 0 on both ends, both migrated ($crc, $src)" migrated ucma-to
pair ucma-from 7504 from-stock ucmatose -b $OURS -p 7504 -c 2 -C 10 -m -- ucmatose -s $OURS -p 7504 -c 2 -C 10 -m
ktap_check "stock ucmatose -m -> ucmatose -m over cepm: status 0 on both ends, both migrated ($crc, $src)" migrated ucma-from

# rdma_server and rdma_client: synchronous endpoints, a message each way.
# rxe can lose an ACK here (lib.sh, rxe_lost_ack_mark): the end left hanging is stopped 20 s
# after the other.
rxe_lost_ack_mark rxe0 rxe1
linger=20 pair rdma-to 7505 to-stock rdma_server -p 7505 -- rdma_client -s $STOCK -p 7505
check_unless_lost_ack "rdma_client over cepm -> stock rdma_server: both end 0 ($crc, $src)" \
	rdma-to '^rdma_client: end 0' '^rdma_server: end 0' ends_ok rdma-to
rxe_lost_ack_mark rxe1 rxe0
linger=20 pair rdma-from 7506 from-stock rdma_server -p 7506 -- rdma_client -s $OURS -p 7506
check_unless_lost_ack "stock rdma_client -> rdma_server over cepm: both end 0 ($crc, $src)" \
	rdma-from '^rdma_client: end 0' '^rdma_server: end 0' ends_ok rdma-from

# udaddy: UD through SIDR on rdma_cm's UDP port 7174, 10 datagrams each way.
ps=$UDP pair udaddy-to 7174 to-stock udaddy -b $STOCK -C 10 -- udaddy -s $STOCK -C 10
ktap_check "udaddy over cepm -> stock udaddy: status 0 on both ends ($crc, $src)" status_ok udaddy-to
ps=$UDP pair udaddy-from 7174 from-stock udaddy -b $OURS -C 10 -- udaddy -s $OURS -C 10
ktap_check "stock udaddy -> udaddy over cepm: status 0 on both ends ($crc, $src)" status_ok udaddy-from

# cmtime: 20 connections at once. Its server never exits: stopped after the client.
cmtime_ok() { [ "$crc" = 0 ] && awk '$1 == "connect" && $NF + 0 > 0 { ok = 1 } END { exit !ok }' "$out.$1-c"; }
stop_server=1 show_lines=9 pair cmtime-to 7507 to-stock cmtime -b $STOCK -p 7507 -- cmtime -s $STOCK -p 7507 -c 20
ktap_check "cmtime -c 20 over cepm -> stock cmtime: the client exits 0 and times its connections ($crc)" cmtime_ok cmtime-to
stop_server=1 show_lines=9 pair cmtime-from 7508 from-stock cmtime -b $OURS -p 7508 -- cmtime -s $OURS -p 7508 -c 20
ktap_check "stock cmtime -c 20 -> cmtime over cepm: the client exits 0 and times its connections ($crc)" cmtime_ok cmtime-from

# A consumer reject: REJ reason 28, and the server's private data reaches the client.
rejected_ok() { both_ok && file_has 'status 28, 148 bytes of private data: not today' "$out.$1-c"; }
pair reject-to 7509 to-stock "$progs/rdma_reject_server" $STOCK 7509 "not today" 5 6 -- \
	"$progs/rdma_reject_client" $STOCK 7509 "not today" 5 6
ktap_check "a client over cepm rejected by a stock server: reason 28 and its private data; retry counts 5, 6 in the REQ ($crc, $src)" rejected_ok reject-to
pair reject-from 7510 from-stock "$progs/rdma_reject_server" $OURS 7510 "not today" 5 6 -- \
	"$progs/rdma_reject_client" $OURS 7510 "not today" 5 6
ktap_check "a stock client rejected by a server over cepm: reason 28 and its private data; retry counts 5, 6 in the CONNECT_REQUEST ($crc, $src)" rejected_ok reject-from

# Extended QPs (rdma_qp_ex against rdma_server): send-ops flags through rdma_create_qp_ex, an
# XRC SRQ refused with rxe's EOPNOTSUPP; stock librdmacm's client first, as the oracle.
qpex_ok() { both_ok && file_has '^rdma_qp_ex: end 0' "$out.$1-c" && file_has '^rdma_server: end 0' "$out.$1-s"; }
rxe_lost_ack_mark rxe1 rxe0
linger=20 pair qpex-from 7521 from-stock rdma_server -p 7521 -- "$progs/rdma_qp_ex" $OURS 7521
check_unless_lost_ack "stock rdma_qp_ex -> rdma_server over cepm: one exchange through ibv_wr_send, XRC SRQ EOPNOTSUPP ($crc, $src)" \
	qpex-from '^rdma_qp_ex: end 0' '^rdma_server: end 0' qpex_ok qpex-from
rxe_lost_ack_mark rxe0 rxe1
linger=20 pair qpex-to 7522 to-stock rdma_server -p 7522 -- "$progs/rdma_qp_ex" $STOCK 7522
check_unless_lost_ack "rdma_qp_ex over cepm -> stock rdma_server: the same ($crc, $src)" \
	qpex-to '^rdma_qp_ex: end 0' '^rdma_server: end 0' qpex_ok qpex-to

# ECE (rdma_ece): vendor ID and options in REQ and REP, and rdma_reject_ece's REJ 35, between
# cepm and the stock rdma_cm, which forwards them whatever the device. Both pairs are
# captured on veth0, so that each end's MADs are seen as sent, not only as the peer reads them.
dumpcap -i veth0 -f "udp port 4791" -w "$out.ece.pcap" >"$out.ece.dumpcap" 2>&1 &
tpid=$!
wait_until 30 file_has "Capturing on" "$out.ece.dumpcap"
ece_ok() { both_ok && file_has '^rdma_ece: end 0' "$out.$1-c" && file_has '^rdma_ece: end 0' "$out.$1-s"; }
pair ece-to 7519 to-stock "$progs/rdma_ece" server $STOCK 7519 -- "$progs/rdma_ece" client $STOCK 7519
ktap_check "rdma_ece over cepm -> stock rdma_ece: ECE both ways, REJECTED status 35 ($crc, $src)" ece_ok ece-to
pair ece-from 7520 from-stock "$progs/rdma_ece" server $OURS 7520 -- "$progs/rdma_ece" client $OURS 7520
ktap_check "stock rdma_ece -> rdma_ece over cepm: the same ($crc, $src)" ece_ok ece-from
# Each pair ends with its REJ: once dumpcap has both, the capture is whole.
wait_until 10 capture_has_mads "$out.ece.pcap" 0012 2
kill -INT $tpid
wait $tpid
# One line per CM MAD: sender, attribute ID, attribute modifier, REJ reason, the MAD's data
# (hex). tshark 4.0 names no field for the vendor ID: it is read from the data, where Linux's
# CM puts it (ib_cm's CM_REQ_VENDOR_ID: bytes 5 to 7 of a REQ; CM_REP_VENDOR_ID_H, _M and _L:
# bytes 15, 19 and 23 of a REP, in that order).
tshark -r "$out.ece.pcap" -Y infiniband.mad.attributeid -T fields -e ip.src -e infiniband.mad.attributeid \
	-e infiniband.mad.attributemodifier -e infiniband.cm.rej.reason -e infiniband.mad.data \
	>"$out.ece.frames" 2>"$out.ece.tshark-err"
show_file '# tshark: ' "$out.ece.tshark-err"
# ece_wire SENDER: what SENDER's REQs, REPs and REJs carried, each distinct line once: "REQ
# vendor V attr_mod M", "REP vendor V attr_mod M", "REJ reason R attr_mod M" (all in hex, as
# tshark prints them), sorted.
ece_wire() {
	awk -F'\t' -v ip="$1" '$1 == ip {
		attr = $2; mod = $3; d = $5
		if (attr == "0x0010")
			print "REQ vendor 0x" substr(d, 11, 6) " attr_mod " mod
		else if (attr == "0x0013")
			print "REP vendor 0x" substr(d, 31, 2) substr(d, 39, 2) substr(d, 47, 2) " attr_mod " mod
		else if (attr == "0x0012")
			print "REJ reason " $4 " attr_mod " mod
	}' "$out.ece.frames" | sort -u | tr '\n' ';'
}
# What rdma_ece sets: the client's vendor ID 0x0015b3 and options 0x12345678 in its REQs; the
# server's options 0x0badcafe in the REP, with the vendor ID the REQ gave (librdmacm's
# rdma_accept returns the one received); reason 35 (0x23) in the REJ of rdma_reject_ece, whose
# attribute modifier Linux leaves 0 (cm_format_rej takes no ECE).
ECE_CLIENT="REQ vendor 0x0015b3 attr_mod 0x12345678;"
ECE_SERVER="REJ reason 0x0023 attr_mod 0x00000000;REP vendor 0x0015b3 attr_mod 0x0badcafe;"
stock_ece=$(ece_wire $STOCK) ours_ece=$(ece_wire $OURS)
ktap_print_msg "on the wire from the stock end: $stock_ece"
ktap_print_msg "on the wire from cepm's end: $ours_ece"
ktap_check "the stock stack's ECE on the wire (veth0): its client's REQ, its server's REP and REJ carry what rdma_ece set" \
	test "$stock_ece" = "$ECE_SERVER$ECE_CLIENT"
ktap_check "cepm's ECE on the wire: the same as the stock stack's" test "$ours_ece" = "$stock_ece"

# An event channel's fd: readable for ADDR_RESOLVED and ROUTE_RESOLVED, which cepm's library
# makes in userspace (POST_EVENT), and after rdma_migrate_id on the new channel only. The
# stock stack answers the same program first, as the oracle.
channel_ok() { [ "$1" = 0 ] && file_has '^rdma_channel_events: end 0' "$out.$2"; }
"${PEER[@]}" timeout 60 "$progs/rdma_channel_events" $STOCK 7512 x >"$out.chan-stock" 2>&1
rc=$?
show_file '# stock: ' "$out.chan-stock"
ktap_check "stock librdmacm: ADDR/ROUTE_RESOLVED make the fd readable, and follow rdma_migrate_id ($rc)" \
	channel_ok $rc chan-stock
"${OVER_CEPM[@]}" timeout 60 "$progs/rdma_channel_events" $OURS 7512 x >"$out.chan-cepm" 2>&1
rc=$?
show_file '# cepm: ' "$out.chan-cepm"
ktap_check "cepm's librdmacm: the same ($rc)" channel_ok $rc chan-cepm

# Asynchronous address resolution (rdma_async_resolve; rdmacm_async.sh runs it over cepm):
# the stock stack's answers are the oracle for which calls return at once, which fail
# themselves (a route the table refuses), and which wait (a synchronous ID).
async_ok() { [ "$rc" = 0 ] && file_has '^rdma_async_resolve: end 0' "$out.async-stock"; }
"${PEER[@]}" ip route add unreachable 198.51.100.1/32
"${PEER[@]}" timeout 120 "$progs/rdma_async_resolve" $OURS 10.77.0.99 198.51.100.1 1000 >"$out.async-stock" 2>&1
rc=$?
"${PEER[@]}" ip route del unreachable 198.51.100.1/32
show_file '# stock: ' "$out.async-stock"
ktap_check "stock librdmacm: rdma_resolve_addr returns at once and completes by event; a refused route fails the call ($rc)" async_ok

# Port reservation: rdma_bind_ports on the stock stack prints what rdmacm_ports.sh expects
# of cepm's librdmacm (rdma_bind_ports.expected): the stock results are the oracle.
"${PEER[@]}" timeout 120 "$progs/rdma_bind_ports" $STOCK 7519 >"$out.ports-stock" 2>&1
rc=$?
diff -u "$(dirname "$0")/rdma_bind_ports.expected" "$out.ports-stock" >"$out.ports-diff"
show_file '# ' "$out.ports-diff"
ktap_check "stock librdmacm: rdma_bind_ports prints rdma_bind_ports.expected ($rc)" \
	sh -c "test $rc = 0 && test ! -s '$out.ports-diff'"

# Our own servers, each against rdma_client as is, one exchange each way: client_pair NAME
# PROG PORT DIRECTION DESC, DIRECTION as pair's. They tear their QP down as rdma_server does,
# so rxe can lose an ACK here too.
client_ends() { both_ok && file_has '^rdma_client: end 0' "$out.$1-c" && file_has "^$2: end 0" "$out.$1-s"; }
client_pair() {
	local name=$1 prog=$2 port=$3 direction=$4 desc=$5 addr=$OURS client=rxe1 server=rxe0
	if [ "$direction" = to-stock ]; then
		addr=$STOCK client=rxe0 server=rxe1
	fi
	rxe_lost_ack_mark $client $server
	linger=20 pair "$name" "$port" "$direction" "$progs/$prog" $addr "$port" -- rdma_client -s $addr -p "$port"
	check_unless_lost_ack "$desc ($crc, $src)" \
		"$name" '^rdma_client: end 0' "^$prog: end 0" client_ends "$name" "$prog"
}
# An SRQ: rdma_srq_server receives on the SRQ rdma_create_srq gave its ID.
client_pair srq-to rdma_srq_server 7511 to-stock \
	"rdma_client over cepm -> stock rdma_srq_server: one exchange, through the SRQ"
client_pair srq-from rdma_srq_server 7512 from-stock \
	"stock rdma_client -> rdma_srq_server over cepm: one exchange, through the SRQ"
# Before accept, as UCX's and SPDK's servers do: rdma_qp_before_accept moves a QP of its own
# through INIT, RTR and RTS with the request ID's attributes, then accepts with its number.
# Over the stock stack first, as the oracle.
client_pair before-to rdma_qp_before_accept 7517 to-stock \
	"rdma_client over cepm -> stock rdma_qp_before_accept: the QP to RTS before rdma_accept, one exchange"
client_pair before-from rdma_qp_before_accept 7518 from-stock \
	"stock rdma_client -> rdma_qp_before_accept over cepm: the QP to RTS before rdma_accept, one exchange"

# perftest over rdma_cm (-R): 200 sends, then 200 RDMA writes, of 4 KiB, each way. Each names
# its device: the stock end rxe1, ours rxe0. Both ends finish together; an end whose attempt is
# void for perftest's own reasons (its clock, its early client: lib.sh, PERFTEST_VOID) exits
# alone, and the other is stopped at once, not at its 120 s timeout, and the pair runs again;
# an end still running 20 s after the other's normal exit is stopped too (linger).
perftest_pair() {
	local tool=$1 port=$2 direction=$3 name=$1-${3%-stock} linger=20
	if [ "$direction" = to-stock ]; then
		again_if_void "$name" pair "$name" "$port" to-stock "${CM_CLOCK[@]}" "$tool" -R -d rxe1 -p "$port" -n 200 -s 4096 -- \
			"${CM_CLOCK[@]}" "$tool" -R -d rxe0 -p "$port" -n 200 -s 4096 $STOCK
	else
		again_if_void "$name" pair "$name" "$port" from-stock "${CM_CLOCK[@]}" "$tool" -R -d rxe0 -p "$port" -n 200 -s 4096 -- \
			"${CM_CLOCK[@]}" "$tool" -R -d rxe1 -p "$port" -n 200 -s 4096 $OURS
	fi
}
# The client's result line: 4096 bytes, 200 iterations, and an average bandwidth above 0.
measured() { both_ok && awk '$1 == 4096 && $2 == 200 && $4 + 0 > 0 { ok = 1 } END { exit !ok }' "$out.$1-c"; }
port=18520
for tool in ib_send_bw ib_write_bw; do
	perftest_pair $tool $port to-stock
	ktap_check "$tool -R over cepm -> stock $tool: 200 messages of 4 KiB measured ($crc, $src)" measured $tool-to
	perftest_pair $tool $((port + 1)) from-stock
	ktap_check "stock $tool -R -> $tool over cepm: 200 messages of 4 KiB measured ($crc, $src)" measured $tool-from
	port=$((port + 2))
done

# IPv6: rping -V and ucmatose, each way, between fd77::1 (ours) and fd77::2 (stock).
ktap_check "IPv6 addresses on both ends, and their GIDs" ipv6_up "${PEER[@]}"
pings() { both_ok && [ "$(grep -c '^ping data: rdma-ping-' "$out.$1-c")" = 10 ]; }
pair rping6-to 7513 to-stock rping -s -a $ADDR6_PEER -p 7513 -C 10 -S 64 -v -V -- \
	rping -c -a $ADDR6_PEER -p 7513 -C 10 -S 64 -v -V
ktap_check "IPv6: rping -c over cepm -> stock rping -s: 10 pings verified ($crc, $src)" pings rping6-to
pair rping6-from 7514 from-stock rping -s -a $ADDR6_LOCAL -p 7514 -C 10 -S 64 -v -V -- \
	rping -c -a $ADDR6_LOCAL -p 7514 -C 10 -S 64 -v -V
ktap_check "IPv6: stock rping -c -> rping -s over cepm: 10 pings verified ($crc, $src)" pings rping6-from
pair ucma6-to 7515 to-stock ucmatose -b $ADDR6_PEER -p 7515 -c 1 -C 10 -- ucmatose -s $ADDR6_PEER -p 7515 -c 1 -C 10
ktap_check "IPv6: ucmatose over cepm -> stock ucmatose: status 0 on both ends ($crc, $src)" status_ok ucma6-to
pair ucma6-from 7516 from-stock ucmatose -b $ADDR6_LOCAL -p 7516 -c 1 -C 10 -- ucmatose -s $ADDR6_LOCAL -p 7516 -c 1 -C 10
ktap_check "IPv6: stock ucmatose -> ucmatose over cepm: status 0 on both ends ($crc, $src)" status_ok ucma6-from

kill $(jobs -p) 2>/dev/null
wait 2>/dev/null
ktap_check "no CEP is left once every tool has exited" wait_until 60 ceps_are 0
ktap_finished
