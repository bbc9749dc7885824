#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# Multicast on RoCE v2 through cepm's librdmacm: rdma-core's mckey, unmodified, a receiver and
# a sender of one group, 10 datagrams counted by the receiver (mckey -C 10 waits for all of
# them). Each joins (rdma_join_multicast, or rdma_join_multicast_ex as a send-only full member
# with mckey -o), creates its address handle from the MULTICAST_JOIN event (the MGID
# ::ffff:GROUP, as rdma_cm derives it for RoCE v2) and leaves (rdma_leave_multicast). While
# the receiver is joined its netdev is a member of the group (ip maddr), and once it has left
# it is not. rdma_multicast (ours) checks the rest of what librdmacm promises of a join (its
# argument checks, MULTICAST_JOIN's fields, a leave that waits for the event's
# acknowledgement), over the library here and, as the oracle, over the stock stack;
# rdma_multicast_full (ours) joins one more QP to a group than rxe attaches
# (max_mcast_qp_attach), whose join's event is then MULTICAST_ERROR, likewise on both.
# In the loopback topology both ends are on rxe0; in two-hosts the receiver runs in the peer
# namespace on rxe1, and then against the stock stack (rdma-core's librdmacm, the kernel's
# rdma_cm) in both directions, after the stock stack alone across the namespaces, as the
# oracle: cepm manages rxe0 alone, rdma_cm serves rxe1 (and rxe0, for the oracle's sender).
. "$(dirname "$0")/lib.sh"
need_root
ktap_print_header
command -v mckey >/dev/null || { ktap_skip_all "mckey missing"; exit "$KSFT_SKIP"; }
need_library
need_progs ah_linger.so rdma_multicast rdma_multicast_full
[ "$TOPOLOGY" = two-hosts ] && ktap_set_plan 16 || ktap_set_plan 7

out=$CEPM_ROOT/out/rdmacm_multicast.$$
stock=0
cleanup() {
	kill $(jobs -p) 2>/dev/null
	wait
	if [ $stock = 1 ]; then stock_down; else topology_down; fi
	rm -f "$out".*
}
trap cleanup EXIT
ktap_check "topology $TOPOLOGY is up" topology_up
HERE=10.77.0.1
case $TOPOLOGY in
two-hosts) THERE=10.77.0.2 THERE_DEV=veth1 ;;
*) THERE=$HERE THERE_DEV=veth0 ;;
esac

# member GROUP NETDEV PREFIX...: NETDEV (in the namespace PREFIX runs in) is a member of GROUP.
member() {
	local group=$1 dev=$2
	shift 2
	"$@" ip -4 maddr show dev "$dev" | awk -v g="$group" '$1 == "inet" && $2 == g { f = 1 } END { exit !f }'
}
not_member() { ! member "$@"; }

# mcast NAME GROUP: the receiver "${RX[@]}" mckey -b $RX_ADDR, a member of GROUP on $RX_DEV
# (in namespace "${RX_NS[@]}") within 30 s, then the sender "${TX[@]}" mckey -s -b $TX_ADDR
# with $TX_FLAGS, its address handle's destroy delayed until its datagrams have left
# (ah_linger.c); each
# under a 60 s timeout. Sets joined (0 if the receiver's netdev became a
# member), rrc and src (exit codes); output in $out.NAME-r and $out.NAME-s.
mcast() {
	local name=$1 group=$2 rpid
	"${RX[@]}" timeout 60 mckey -m "$group" -b "$RX_ADDR" -C 10 >"$out.$name-r" 2>&1 &
	rpid=$!
	wait_until 30 member "$group" "$RX_DEV" "${RX_NS[@]}"
	joined=$?
	"${TX[@]}" env LD_PRELOAD="$progs/ah_linger.so" timeout 60 mckey -m "$group" -b "$TX_ADDR" -s -C 10 ${TX_FLAGS:-} >"$out.$name-s" 2>&1
	src=$?
	wait $rpid
	rrc=$?
	show_side "$name receiver" "$out.$name-r" $rrc
	show_side "$name sender" "$out.$name-s" $src
}
# run_prog PROG SECONDS NAME PREFIX... -- ARGS...: our program PROG with ARGS under PREFIX,
# within SECONDS, its output in $out.NAME (shown), its exit status in $prog_rc.
run_prog() {
	local prog=$1 seconds=$2 name=$3 prefix=()
	shift 3
	while [ "$1" != -- ]; do prefix+=("$1"); shift; done
	shift
	"${prefix[@]}" timeout "$seconds" "$progs/$prog" "$@" >"$out.$name" 2>&1
	prog_rc=$?
	show_file "# $name: " "$out.$name"
}
# ours NAME PREFIX... -- ARGS...: rdma_multicast ARGS under PREFIX, its output in $out.NAME.
ours() { run_prog rdma_multicast 60 "$@"; ours_rc=$prog_rc; }
ours_ok() { [ "$ours_rc" = 0 ] && file_has '^rdma_multicast: end 0' "$out.$1"; }
# full NAME PREFIX... -- ARGS...: rdma_multicast_full ARGS under PREFIX, its output in
# $out.NAME, its results to compare ("= " lines) in $out.NAME.results.
full() {
	run_prog rdma_multicast_full 120 "$@"
	full_rc=$prog_rc
	grep '^= ' "$out.$1" >"$out.$1.results"
}
full_ok() { [ "$full_rc" = 0 ] && file_has '^rdma_multicast_full: end 0' "$out.$1"; }
# received NAME GROUP: both exited 0, each joined the group's MGID, the receiver got its 10.
received() {
	[ "$rrc" = 0 ] && [ "$src" = 0 ] &&
		file_has "^mckey: joined dgid: ::ffff:$2 " "$out.$1-r" &&
		file_has "^mckey: joined dgid: ::ffff:$2 " "$out.$1-s" &&
		file_has '^data transfers complete' "$out.$1-r" &&
		file_has '^return status 0' "$out.$1-r"
}

# Both ends over cepm: the receiver on the server's host, the sender here.
RX=("${SERVER[@]}" env LD_LIBRARY_PATH="$LIB") RX_NS=("${SERVER[@]}") RX_ADDR=$THERE RX_DEV=$THERE_DEV
TX=("${OVER_CEPM[@]}") TX_ADDR=$HERE
mcast cepm 239.77.0.1
ktap_check "mckey over cepm: the receiver's $RX_DEV is a member of 239.77.0.1 while it is joined" test $joined = 0
ktap_check "mckey -s -> mckey, both over cepm: the MGID ::ffff:239.77.0.1, 10 datagrams received ($src, $rrc)" \
	received cepm 239.77.0.1
ktap_check "... and once both have left, $RX_DEV is no member of 239.77.0.1" \
	wait_until 10 not_member 239.77.0.1 "$RX_DEV" "${RX_NS[@]}"
TX_FLAGS=-o mcast sendonly 239.77.0.2
ktap_check "mckey -s -o (a send-only join) -> mckey, both over cepm: 10 datagrams received ($src, $rrc)" \
	received sendonly 239.77.0.2

ours ours "${OVER_CEPM[@]}" -- $HERE 239.77.0.6
ktap_check "rdma_multicast over cepm: argument checks, MULTICAST_JOIN's fields, membership, a leave that waits for the acknowledgement ($ours_rc)" \
	ours_ok ours
full full "${OVER_CEPM[@]}" -- $HERE 239.77.0.8
ktap_check "rdma_multicast_full over cepm: max_mcast_qp_attach joins, then MULTICAST_ERROR with a negative status, all left and destroyed ($full_rc)" \
	full_ok full

if [ "$TOPOLOGY" = two-hosts ]; then
	topology_down
	stock=1
	ktap_check "cepm manages rxe0 only, rdma_cm serves rxe1 in namespace $PEER_NS" stock_up
	ours ours-stock "${PEER[@]}" -- 10.77.0.2 239.77.0.7
	ktap_check "rdma_multicast over the stock stack: the same ($ours_rc)" ours_ok ours-stock
	full full-stock "${PEER[@]}" -- 10.77.0.2 239.77.0.9
	diff -u "$out.full-stock.results" "$out.full.results" >"$out.full.diff"
	show_file '# stock -> cepm: ' "$out.full.diff"
	ktap_check "rdma_multicast_full over the stock stack: the same ($full_rc)" full_ok full-stock
	ktap_check "... with the results it has over cepm: the MULTICAST_ERROR's status, errno and param.ud, the leaves, the destroys" \
		sh -c "test -s '$out.full.results' && test ! -s '$out.full.diff'"
	# The oracle: rdma-core's librdmacm on both ends, the sender here on rxe0 (rdma_cm needs no
	# CM MAD for multicast), the receiver on rxe1.
	RX=("${PEER[@]}") RX_NS=("${PEER[@]}") RX_ADDR=10.77.0.2 RX_DEV=veth1
	TX=() TX_ADDR=10.77.0.1
	mcast oracle 239.77.0.3
	ktap_check "stock mckey -s -> stock mckey across the namespaces: 10 datagrams received ($src, $rrc)" \
		received oracle 239.77.0.3
	TX=("${OVER_CEPM[@]}")
	mcast to-stock 239.77.0.4
	ktap_check "stock mckey: its veth1 is a member of 239.77.0.4 while it is joined" test $joined = 0
	ktap_check "mckey -s over cepm -> stock mckey: 10 datagrams received ($src, $rrc)" \
		received to-stock 239.77.0.4
	RX=("${OVER_CEPM[@]}") RX_NS=() RX_ADDR=10.77.0.1 RX_DEV=veth0
	TX=("${PEER[@]}") TX_ADDR=10.77.0.2
	mcast from-stock 239.77.0.5
	ktap_check "stock mckey -s -> mckey over cepm: 10 datagrams received ($src, $rrc)" \
		received from-stock 239.77.0.5
	ktap_check "... and once it has left, veth0 is no member of 239.77.0.5" \
		wait_until 10 not_member 239.77.0.5 veth0
fi
ktap_finished
