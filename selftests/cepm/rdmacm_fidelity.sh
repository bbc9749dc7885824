#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# What librdmacm tells an application about a connection, over cepm as over the stock stack:
# rdma_conn_params (ours) prints the parameters of CONNECT_REQUEST, CONNECT_RESPONSE and
# ESTABLISHED, and route.addr.addr.ibaddr and route.path_rec after address and route
# resolution and on the passive side's new ID. The stock stack's output on one device
# (rdma-core's librdmacm, the kernel's rdma_cm and ib_cm on rxe1, namespace cepm_peer) is the
# oracle; the same program over cepm's library on rxe0, and each way between the two stacks,
# must print the same, line for line. Afterwards no CEP is left.
. "$(dirname "$0")/lib.sh"
interop_begin
need_library
need_progs rdma_conn_params
ktap_set_plan 10

out=$CEPM_ROOT/out/rdmacm_fidelity.$$
OURS=10.77.0.1 STOCK=10.77.0.2
ON_CEPM=("${OVER_CEPM[@]}" timeout 60 "$progs/rdma_conn_params")
ON_STOCK=("${PEER[@]}" timeout 60 "$progs/rdma_conn_params")
ktap_check "cepm manages rxe0 only, ib_cm has rxe1 in namespace $PEER_NS" stock_up

listening() { file_has '^listening' "$out.$1-s"; }
# run NAME PORT ADDRESS SERVER_PREFIX CLIENT_PREFIX: the server on ADDRESS:PORT, then the
# client to it; each must exit 0.
run() {
	local name=$1 port=$2 addr=$3
	tool_pair "$name" "listening $name" -- "${!4}" server "$addr" "$port" -- \
		"${!5}" client "$addr" "$port"
}
# same NAME SIDE: NAME's SIDE (s or c) printed what the stock stack's printed, or the diff.
same() {
	diff -u "$out.stock-$2" "$out.$1-$2" >"$out.diff" && return 0
	show_file '# ' "$out.diff"
	return 1
}

run stock 7530 $STOCK ON_STOCK[@] ON_STOCK[@]
ktap_check "stock -> stock on rxe1: both ends exit 0 ($crc, $src)" test "$crc$src" = 00
run cepm 7531 $OURS ON_CEPM[@] ON_CEPM[@]
ktap_check "cepm -> cepm on rxe0: both ends exit 0 ($crc, $src)" test "$crc$src" = 00
ktap_check "cepm's server saw what the stock server saw" same cepm s
ktap_check "cepm's client saw what the stock client saw" same cepm c
run to-stock 7532 $STOCK ON_STOCK[@] ON_CEPM[@]
ktap_check "cepm -> stock: both ends exit 0 ($crc, $src)" test "$crc$src" = 00
ktap_check "cepm's client, connected to stock, saw what the stock client saw" same to-stock c
run from-stock 7533 $OURS ON_CEPM[@] ON_STOCK[@]
ktap_check "stock -> cepm: both ends exit 0 ($crc, $src)" test "$crc$src" = 00
ktap_check "cepm's server, reached from stock, saw what the stock server saw" same from-stock s

ktap_check "no CEP is left" wait_until 30 ceps_are 0
ktap_finished
