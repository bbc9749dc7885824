#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# What librdmacm tells an application about a connection, over cepm as over the stock stack:
# rdma_conn_params (ours) prints the parameters of CONNECT_REQUEST, CONNECT_RESPONSE and
# ESTABLISHED, and route.addr.addr.ibaddr and route.path_rec after address and route
# resolution and on the passive side's new ID. The stock stack's output on one device
# (rdma-core's librdmacm, the kernel's rdma_cm and ib_cm on rxe1, namespace cepm_peer) is the
# oracle; the same program over cepm's library on rxe0, and each way between the two stacks,
# must print the same, line for line. The same again for an XRC connection made without QPs
# (rdma_create_ep's XRC send and receive IDs in the IB port space), whose REQ and REP between
# the two stacks tshark reads on veth0: the library's REQ names an XRC initiator, its REP
# carries the QPN as an XRC target's. An RC REQ for an XRC listener is rejected with reason 28,
# as rdma_cm's listener refuses a request of another QP type; a UC connection of the IB port
# space connects, and so does an RC client to a listener of QP type 0, which takes every
# request. Afterwards no CEP is left.
. "$(dirname "$0")/lib.sh"
interop_begin dumpcap tshark
need_library
need_progs rdma_conn_params
ktap_set_plan 40

out=$CEPM_ROOT/out/rdmacm_fidelity.$$
OURS=10.77.0.1 STOCK=10.77.0.2
ON_CEPM=("${OVER_CEPM[@]}" timeout 60 "$progs/rdma_conn_params")
ON_STOCK=("${PEER[@]}" timeout 60 "$progs/rdma_conn_params")
ktap_check "cepm manages rxe0 only, ib_cm has rxe1 in namespace $PEER_NS" stock_up

listening() { file_has '^listening' "$out.$1-s"; }
# run NAME PORT ADDRESS SERVER_PREFIX CLIENT_PREFIX [MODE [CLIENT_MODE]]: the server on
# ADDRESS:PORT, then the client to it (in MODE, xrc or ib, or CLIENT_MODE); each must exit 0.
run() {
	local name=$1 port=$2 addr=$3
	tool_pair "$name" "listening $name" -- "${!4}" server "$addr" "$port" ${6:-} -- \
		"${!5}" client "$addr" "$port" ${7:-${6:-}}
}
# same NAME SIDE [ORACLE]: NAME's SIDE (s or c) printed what the stock stack's (run ORACLE,
# "stock" by default) printed, or the diff.
same() {
	diff -u "$out.${3:-stock}-$2" "$out.$1-$2" >"$out.diff" && return 0
	show_file '# ' "$out.diff"
	return 1
}

# four_ways PORT [MODE]: an RC connection (or MODE's) made four ways, on PORT and the three after,
# each with its checks: stock -> stock (the oracle, on rxe1), cepm -> cepm (rxe0), cepm ->
# stock and stock -> cepm; cepm's ends, and the stock end's view of cepm, must print what
# the oracle's ends print.
four_ways() {
	local port=$1 mode=${2:-} stock=stock${2:+-$2} x=${2:+-$2} label=${2:+${2^^}: }
	run "$stock" "$port" $STOCK ON_STOCK[@] ON_STOCK[@] $mode
	ktap_check "${label}stock -> stock on rxe1: both ends exit 0 ($crc, $src)" test "$crc$src" = 00
	run "cepm$x" $((port + 1)) $OURS ON_CEPM[@] ON_CEPM[@] $mode
	ktap_check "${label}cepm -> cepm on rxe0: both ends exit 0 ($crc, $src)" test "$crc$src" = 00
	ktap_check "${label}cepm's server saw what the stock server saw" same "cepm$x" s "$stock"
	ktap_check "${label}cepm's client saw what the stock client saw" same "cepm$x" c "$stock"
	run "to-stock$x" $((port + 2)) $STOCK ON_STOCK[@] ON_CEPM[@] $mode
	ktap_check "${label}cepm -> stock: both ends exit 0 ($crc, $src)" test "$crc$src" = 00
	ktap_check "${label}cepm's client, connected to stock, saw what the stock client saw" \
		same "to-stock$x" c "$stock"
	ktap_check "${label}the stock server saw cepm's REQ as it sees its own" same "to-stock$x" s "$stock"
	run "from-stock$x" $((port + 3)) $OURS ON_CEPM[@] ON_STOCK[@] $mode
	ktap_check "${label}stock -> cepm: both ends exit 0 ($crc, $src)" test "$crc$src" = 00
	ktap_check "${label}cepm's server, reached from stock, saw what the stock server saw" \
		same "from-stock$x" s "$stock"
	ktap_check "${label}the stock client saw cepm's REP as it sees its own" same "from-stock$x" c "$stock"
}

four_ways 7530

dumpcap -i veth0 -f "udp port 4791" -w "$out.pcap" >"$out.dumpcap" 2>&1 &
tpid=$!
wait_until 30 file_has "Capturing on" "$out.dumpcap"
four_ways 7534 xrc

# An RC client of the IB port space and an XRC server: the client is rejected, the server
# hears nothing and is stopped.
stop_server=1 run stock-mixed 7538 $STOCK ON_STOCK[@] ON_STOCK[@] xrc ib
ktap_check "RC REQ to an XRC listener, stock: rejected with reason 28 ($crc)" \
	file_has '^rejected: status 28 ' "$out.stock-mixed-c"
stop_server=1 run cepm-mixed 7539 $OURS ON_CEPM[@] ON_CEPM[@] xrc ib
ktap_check "RC REQ to an XRC listener, cepm: the client saw what the stock client saw" \
	same cepm-mixed c stock-mixed
stop_server=1 run from-stock-mixed 7540 $OURS ON_CEPM[@] ON_STOCK[@] xrc ib
ktap_check "stock's RC REQ to cepm's XRC listener: the client saw what the stock client saw" \
	same from-stock-mixed c stock-mixed

# UC endpoints of the IB port space: the REQ names UC, and a UC listener takes it.
four_ways 7541 uc
# A listener of QP type 0 and an RC client of the IB port space.
run stock-any 7546 $STOCK ON_STOCK[@] ON_STOCK[@] any ib
ktap_check "QP type 0 listener, stock: both ends exit 0 ($crc, $src)" test "$crc$src" = 00
run cepm-any 7547 $OURS ON_CEPM[@] ON_CEPM[@] any ib
ktap_check "QP type 0 listener, cepm: both ends exit 0 ($crc, $src)" test "$crc$src" = 00
ktap_check "QP type 0 listener: cepm's client saw what the stock client saw" same cepm-any c stock-any

# Each cross run's DREQ and DREP crossed veth0: four DREPs, and the capture is whole.
wait_until 10 capture_has_mads "$out.pcap" 0016 4
kill -INT $tpid
wait $tpid
# The XRC REQs (service ID of the IB port space, ports 7536 and 7537): TransportServiceType,
# ExtendedTransportType, LocalQPN; the REPs: LocalQPN, LocalEECN, SRQ.
tshark -r "$out.pcap" -Y 'infiniband.mad.attributeid == 0x0010' -T fields -e infiniband.cm.req.serviceid \
	-e infiniband.cm.req.transpsvctype -e infiniband.cm.req.ext_transport \
	-e infiniband.cm.req.localqpn >"$out.reqs" 2>"$out.tshark-err"
tshark -r "$out.pcap" -Y 'infiniband.mad.attributeid == 0x0013' -T fields -e infiniband.cm.rep.localqpn \
	-e infiniband.cm.rep.localeecn -e infiniband.cm.rep.srq >"$out.reps" 2>>"$out.tshark-err"
show_file '# REQ: ' "$out.reqs"
show_file '# REP: ' "$out.reps"
show_file '# tshark: ' "$out.tshark-err"
# has FILE WORDS...: a line of FILE whose tab-separated fields are WORDS, compared as numbers
# (tshark prints some in hex, some in decimal).
has() {
	local file=$1 fields want=${*:2} got
	while IFS=$'\t' read -r -a fields; do
		got=$(for v in "${fields[@]}"; do printf '%d ' "$v"; done)
		[ "${got% }" = "$want" ] && return 0
	done <"$file"
	return 1
}
ktap_check "cepm's client sent an XRC initiator's REQ: transport 3, extended 1, QPN 0x123456" \
	has "$out.reqs" $(((0x013f << 16) | 7536)) 3 1 $((0x123456))
ktap_check "cepm's server sent an XRC target's REP: LocalQPN 0, LocalEECN 0x654321, SRQ 1" \
	has "$out.reps" 0 $((0x654321)) 1

ktap_check "no CEP is left" wait_until 30 ceps_are 0
ktap_finished
