#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
# shellcheck disable=SC2317 # the checks' probes are functions that ktap_check calls
# The pair suite: tests across the two guests of scripts/vm-pair, run on guest A, in KTAP.
#   scripts/vm-pair -- selftests/pair/run.sh [GROUP...]   (default: all groups, in this order)
# Each tool runs both ways, A's client to B's server and B's client to A's server, with
# whatever connection manager each guest runs (CEPM_PAIR_A_STACK, CEPM_PAIR_B_STACK: cepm's
# library is the guest's librdmacm there). Groups:
#   rping        rping -C 10 -V: 10 pings, each an RDMA read and write, verified
#   ucmatose     ucmatose -c 10: ten connections, messages both ways, status 0 at both ends
#   udaddy       udaddy: SIDR on rdma_cm's UDP port space, then datagrams on UD QPs
#   cmtime       cmtime -c 20: 20 connections set up and torn down at once
#   perftest     ib_send_bw -R: perftest's sends over a connection of rdma_cm
#   rdma         rdma-core's rdma_server and rdma_client (synchronous endpoint calls)
#   conn_params  out/selftests/rdma_conn_params, RC then XRC: what librdmacm reports of a
#                connection. B's own stack connected to itself on rxe0 is the oracle; A's
#                side of each connection between the guests must print what the oracle's
#                same side printed (rdmacm_fidelity.sh does the same on one kernel)
#   capture      one rping connection captured on A's NIC: tshark finds REQ, REP, RTU, DREQ
#                and DREP, and nothing malformed (interop_rping.sh's test)
# The kernel logs of both guests are checked for splats at the end, whatever the groups.
# A server on B runs in the background through $PEER (selftests/pair/side.sh), its output
# fetched once it has exited; the channel carries one request at a time. Files of the run are
# in out/pair-tests/TIME.PID, removed if every check passed; the capture is kept as
# out/artefacts/pair.pcap.
set -uo pipefail
: "${PEER:?run by scripts/vm-pair, which sets PEER}"
here=$(cd "$(dirname "$0")" && pwd)
# lib.sh's PEER is its own (the peer namespace's prefix): the channel's is kept as B_RUN.
read -ra B_RUN <<<"$PEER"
. "$here/../cepm/lib.sh"

groups=(rping ucmatose udaddy cmtime perftest rdma conn_params capture)
declare -A checks=([rping]=2 [ucmatose]=2 [udaddy]=2 [cmtime]=2 [perftest]=2 [rdma]=2
	[conn_params]=10 [capture]=2)
[ $# = 0 ] || groups=("$@")
plan=2
for g in "${groups[@]}"; do
	[ -n "${checks[$g]:-}" ] || { echo "run.sh: unknown group $g" >&2; exit 2; }
	plan=$((plan + checks[$g]))
done

ktap_print_header
ktap_set_plan "$plan"
A=10.78.0.1 B=10.78.0.2
side=$here/side.sh progs=$CEPM_ROOT/out/selftests
# The guest's PIDs repeat from boot to boot: the time names the run.
out=$CEPM_ROOT/out/pair-tests/$(date +%Y%m%d-%H%M%S).$$
mkdir -p "$out"
out=$out/t

# Which connection manager each side runs: its modules, kernel and the librdmacm rping maps.
stack() { lsmod | awk '$1 ~ /^(cepm|ib_cm|rdma_cm|rdma_ucm)$/ { printf "%s ", $1 }'; uname -r; ldd "$(command -v rping)" | awk '/librdmacm/ { print $3 }'; }
echo "# A: $(stack | tr '\n' ' ')"
echo "# B: $("${B_RUN[@]}" "$(declare -f stack); stack" | tr '\n' ' ')"

# run_on GUEST CMD...: CMD on guest A (here) or B (through the channel), its words kept.
run_on() {
	local where=$1
	shift
	if [ "$where" = A ]; then
		"$@"
	else
		"${B_RUN[@]}" "$(printf '%q ' "$@")"
	fi
}
# on GUEST ARGS...: side.sh ARGS... on GUEST.
on() { run_on "$1" bash "$side" "${@:2}"; }
addr_of() { if [ "$1" = A ]; then echo $A; else echo $B; fi; }
other() { if [ "$1" = A ]; then echo B; else echo A; fi; }

# xpair NAME SERVER_ON PORT PORT_SPACE SERVER_CMD... -- CLIENT_CMD...: the server on guest
# SERVER_ON (A or B), once it listens (30 s at most; PORT_SPACE "said:REGEX": once the server
# has printed a line that matches REGEX) the client on the other guest; each
# under a timeout of 120 s. The client's output goes to $out.NAME-c and its status to $crc,
# the server's to $out.NAME-s and $src. With stop_server=1 the server is ended once the client
# has (cmtime's never exits). SERVER_ON and the client's guest are in the outputs' last lines.
xpair() {
	local name=$1 s=$2 port=$3 ps=$4 server=()
	shift 4
	while [ "$1" != -- ]; do server+=("$1"); shift; done
	shift
	on "$s" start "$name" 120 "${server[@]}"
	if [[ $ps == said:* ]]; then
		wait_until 30 on "$s" said "$name" "${ps#said:}"
	else
		wait_until 30 on "$s" listens "$port" "$ps"
	fi
	crc=0
	run_on "$(other "$s")" timeout 120 "$@" >"$out.$name-c" 2>&1 || crc=$?
	# A client whose attempt is void ($void_if in its output) leaves its server waiting for
	# nobody: it is stopped at once, as cmtime's is.
	local how=${stop_server:+stop}
	[ -z "${void_if:-}" ] || ! grep -qs -- "$void_if" "$out.$name-c" || how=stop
	src=0
	on "$s" finish "$name" 30 "$how" >"$out.$name-s" 2>&1 || src=$?
	show_side "$name server on $s" "$out.$name-s" "$src"
	show_side "$name client on $(other "$s")" "$out.$name-c" "$crc"
}
both_zero() { [ "$crc" = 0 ] && [ "$src" = 0 ]; }
# both_status_zero NAME: both ends of NAME exited 0 and printed rdma-core's "return status 0".
both_status_zero() { both_zero && grep -q 'return status 0' "$out.$1-c" && grep -q 'return status 0' "$out.$1-s"; }
# direction SERVER_ON: the words of a check's description for that way.
direction() { echo "client on $(other "$1") -> server on $1"; }

group_rping() {
	local s a
	for s in B A; do
		a=$(addr_of "$s")
		xpair "rping-$s" "$s" 7174 TCP rping -s -a "$a" -p 7174 -C 10 -S 64 -v -V -- \
			rping -c -a "$a" -p 7174 -C 10 -S 64 -v -V
		verified() { both_zero && [ "$(grep -c '^ping data: rdma-ping-' "$out.rping-$1-c")" = 10 ]; }
		ktap_check "rping -C 10 -V, $(direction "$s"): both exit 0 ($crc, $src), 10 pings verified" verified "$s"
	done
}

group_ucmatose() {
	local s
	for s in B A; do
		show_lines=4 xpair "ucma-$s" "$s" 7175 TCP ucmatose -p 7175 -c 10 -- \
			ucmatose -s "$(addr_of "$s")" -p 7175 -c 10
		ktap_check "ucmatose -c 10, $(direction "$s"): both complete with status 0 ($crc, $src)" \
			both_status_zero "ucma-$s"
	done
}

group_udaddy() {
	local s
	# udaddy's only port: 7174 of rdma_cm's UDP port space, resolved by SIDR.
	for s in B A; do
		show_lines=4 xpair "udaddy-$s" "$s" 7174 UDP udaddy -C 10 -- udaddy -s "$(addr_of "$s")" -C 10
		ktap_check "udaddy -C 10 (SIDR, UD), $(direction "$s"): both complete with status 0 ($crc, $src)" \
			both_status_zero "udaddy-$s"
	done
}

group_cmtime() {
	local s
	for s in B A; do
		stop_server=1 show_lines=9 xpair "cmtime-$s" "$s" 7176 TCP cmtime -p 7176 -- \
			cmtime -s "$(addr_of "$s")" -p 7176 -c 20
		# Its table has one line a step: connect's (microseconds a connection, last) is not 0.
		cmtime_ok() { both_zero && awk '$1 == "connect" && $NF + 0 > 0 { ok = 1 } END { exit !ok }' "$out.cmtime-$1-c"; }
		ktap_check "cmtime -c 20, $(direction "$s"): the client exits 0 and times its connections ($crc)" cmtime_ok "$s"
	done
}

# perftest's attempts that fail for perftest's own reasons are run again, 3 attempts in all
# (lib.sh's PERFTEST_VOID says which and why); each attempt must pass whole.
group_perftest() {
	local s attempt
	for s in B A; do
		for attempt in 1 2 3; do
			[ "$attempt" = 1 ] || echo "# ib_send_bw: perftest printed \"$(grep -ohs -m1 -- "$PERFTEST_VOID" "$out.send-$s-c" "$out.send-$s-s" | head -n1)\": attempt $attempt of 3"
			void_if=$PERFTEST_VOID xpair "send-$s" "$s" 18515 TCP ib_send_bw -R -d rxe0 -p 18515 -n 200 -s 4096 -- \
				ib_send_bw -R -d rxe0 -p 18515 -n 200 -s 4096 "$(addr_of "$s")"
			both_zero || ! grep -qs -- "$PERFTEST_VOID" "$out.send-$s-c" "$out.send-$s-s" || continue
			break
		done
		# The client's result line: 4096 bytes, 200 iterations, an average bandwidth above 0.
		measured() { both_zero && awk '$1 == 4096 && $2 == 200 && $4 + 0 > 0 { ok = 1 } END { exit !ok }' "$out.send-$1-c"; }
		ktap_check "ib_send_bw -R -n 200 -s 4096, $(direction "$s"): measured, both exit 0 ($crc, $src)" measured "$s"
	done
}

group_rdma() {
	local s
	for s in B A; do
		xpair "rdma-$s" "$s" 7178 TCP rdma_server -p 7178 -- rdma_client -s "$(addr_of "$s")" -p 7178
		rdma_ok() { both_zero && grep -q '^rdma_client: end 0' "$out.rdma-$1-c" && grep -q '^rdma_server: end 0' "$out.rdma-$1-s"; }
		ktap_check "rdma_client -> rdma_server, $(direction "$s"): both end 0 ($crc, $src)" rdma_ok "$s"
	done
}

# What the oracle printed, as cepm's side is to print it: cepm's library picks what Linux
# 7.3's rdma_cm picks, and where B's kernel picks otherwise, cepm's value replaces B's own
# (docs/interop.md lists each difference):
# - Linux 6.1 gives a RoCE route the packet lifetime 18, 7.3 gives 16
#   (CMA_IBOE_PACKET_LIFETIME, cma_resolve_iboe_route in drivers/infiniband/core/cma.c). The
#   active side's route is its own; the passive side's comes from the REQ's local ACK timeout,
#   so there the peer's value is right, and the client's only is changed.
b_kernel=$(run_on B uname -r)
expected() {
	local oracle=$out.$1-$2
	case $b_kernel/$2 in
	6.1.*/c)
		sed -E 's/^(route path [0-9]+: .* packet_life_time [0-9]+\/)18$/\116/' "$oracle"
		;;
	*) cat "$oracle" ;;
	esac
}
# same NAME SIDE ORACLE: NAME's SIDE (s or c) printed what the oracle's printed (expected), or
# the diff.
same() {
	expected "$3" "$2" >"$out.$3-$2.expected"
	cmp -s "$out.$3-$2" "$out.$3-$2.expected" ||
		echo "# expected: the oracle's, with $b_kernel's values cepm picks as Linux 7.3 does"
	diff -u "$out.$3-$2.expected" "$out.$1-$2" >"$out.diff" && return 0
	show_file '# ' "$out.diff"
	return 1
}
group_conn_params() {
	local mode port=7530 tag m=() ps=said:^listening
	need_progs rdma_conn_params
	for mode in rc xrc; do
		tag=$mode m=()
		[ "$mode" = rc ] || m=(xrc)
		# The oracle: guest B's stack, server and client both on B.
		on B start "oracle-$tag" 120 "$progs/rdma_conn_params" server $B $port "${m[@]}"
		wait_until 30 on B said "oracle-$tag" '^listening'
		crc=0
		run_on B timeout 120 "$progs/rdma_conn_params" client $B $port "${m[@]}" >"$out.oracle-$tag-c" 2>&1 || crc=$?
		src=0
		on B finish "oracle-$tag" 30 >"$out.oracle-$tag-s" 2>&1 || src=$?
		show_side "oracle server on B" "$out.oracle-$tag-s" "$src"
		show_side "oracle client on B" "$out.oracle-$tag-c" "$crc"
		ktap_check "rdma_conn_params $mode, B -> B (the oracle): both exit 0 ($crc, $src)" both_zero
		port=$((port + 1))
		xpair "to-b-$tag" B $port $ps "$progs/rdma_conn_params" server $B $port "${m[@]}" -- \
			"$progs/rdma_conn_params" client $B $port "${m[@]}"
		ktap_check "rdma_conn_params $mode, $(direction B): both exit 0 ($crc, $src)" both_zero
		ktap_check "rdma_conn_params $mode: A's client saw what the oracle's client saw" same "to-b-$tag" c "oracle-$tag"
		port=$((port + 1))
		xpair "to-a-$tag" A $port $ps "$progs/rdma_conn_params" server $A $port "${m[@]}" -- \
			"$progs/rdma_conn_params" client $A $port "${m[@]}"
		ktap_check "rdma_conn_params $mode, $(direction A): both exit 0 ($crc, $src)" both_zero
		ktap_check "rdma_conn_params $mode: A's server saw what the oracle's server saw" same "to-a-$tag" s "oracle-$tag"
		port=$((port + 1))
	done
}

# The NIC that carries the link on A (scripts/vm-pair-guest.sh gave it PAIR_MAC).
link_nic() {
	local d
	for d in /sys/class/net/*; do
		[ "$(cat "$d/address")" = "${PAIR_MAC:?}" ] && { echo "${d##*/}"; return; }
	done
	return 1
}
group_capture() {
	local pcap=$CEPM_ROOT/out/artefacts/pair.pcap tpid trc
	mkdir -p "$(dirname "$pcap")"
	rm -f "$pcap"
	# tshark's first start of a boot reads every dissector: outside the capture's waits.
	tshark -G protocols >/dev/null 2>&1
	dumpcap -i "$(link_nic)" -f "udp port 4791" -w "$out.pcap" >"$out.dumpcap" 2>&1 &
	tpid=$!
	wait_until 60 file_has "Capturing on" "$out.dumpcap"
	xpair rping-pcap B 7177 TCP rping -s -a $B -p 7177 -C 3 -S 64 -v -V -- \
		rping -c -a $B -p 7177 -C 3 -S 64 -v -V
	# The DREP is the last CM message: once dumpcap has written it, the capture is whole.
	wait_until 10 capture_has_mads "$out.pcap" 0016 1
	kill -INT $tpid
	wait $tpid
	cp "$out.pcap" "$pcap"
	# The CM attribute and the worst expert-info severity of each frame.
	tshark -r "$pcap" -T fields -e infiniband.mad.attributeid -e _ws.expert.severity >"$out.frames" 2>"$out.tshark-err"
	trc=$?
	awk -F'\t' '$1 != "" { print "# CM attribute in capture: " $1 }' "$out.frames"
	show_file '# tshark: ' "$out.tshark-err"
	all_five() {
		local a
		[ "$trc" = 0 ] || return 1
		for a in 0x0010 0x0013 0x0014 0x0015 0x0016; do cut -f1 "$out.frames" | grep -qx "$a" || return 1; done
	}
	ktap_check "one rping connection A -> B captured on A's NIC: REQ, REP, RTU, DREQ and DREP decoded" all_five
	# tshark prints severities in decimal, comma-separated; Warning is 0x600000 (6291456).
	worst_severity() { cut -f2 "$out.frames" | tr ',' '\n' | awk 'NF && $1 + 0 > m { m = $1 + 0 } END { print m + 0 }'; }
	ktap_check "tshark's InfiniBand dissector finds nothing malformed (no expert info of Warning or worse)" \
		test "$(worst_severity)" -lt 6291456
}

for g in "${groups[@]}"; do
	echo "# group $g"
	"group_$g"
done

# The kernel logs: no splat on either guest (dmesg_clean.sh's patterns, less those of an
# unload, which this suite does not do).
splats='WARNING:|BUG:|Oops|general protection|Call Trace:|INFO: (lockdep|task .* blocked|possible|inconsistent)|DEBUG_LOCKS_WARN_ON|possible (circular|recursive) locking|inconsistent lock state|suspicious RCU usage|sleeping function called from invalid context|list_(add|del) corruption|UBSAN|Kernel panic|refcount_t:|KFENCE:'
# A user process's fault is logged as "traps: COMM[PID] general protection fault ..." and is
# not the kernel's: perftest 4.5's retry after a REJ crashes in rdma-core's librdmacm
# (docs/rdmacm.md), on the stock peer. Shown, not counted.
user_fault='^\[ *[0-9.]+\] traps: '
# rxe_page_pool_only LOG: the only reports in LOG are those of rxe freeing a page-pool skb with
# interrupts off (docs/interop.md, "rxe on virtio-net"): rxe_receiver drains a QP's queued
# requests under its state_lock, taken with spin_lock_irqsave, and virtio-net's page pool
# re-enables softirqs as it takes the page back: __local_bh_enable_ip's WARN, then lockdep's
# inconsistent lock state on &qp->state_lock. Any other report, or a third call trace, fails.
rxe_page_pool_only() {
	local other traces
	grep -q 'page_pool_put_unrefed_netmem' "$1" && grep -q 'rxe_receiver' "$1" &&
		grep -q 'lock(&qp->state_lock);' "$1" || return 1
	traces=$(grep -Ev "$user_fault" "$1" | grep -c 'Call Trace:')
	other=$(grep -Ev "$user_fault" "$1" | grep -E "$splats" | grep -v 'Call Trace:' |
		grep -Ev 'WARNING: inconsistent lock state$|WARNING: CPU: [0-9]+ PID: [0-9]+ at kernel/softirq\.c:[0-9]+ __local_bh_enable_ip')
	[ -z "$other" ] && [ "$traces" -le 2 ]
}
# check_log GUEST: one result for GUEST's kernel log.
check_log() {
	local log=$out.dmesg-$1 first what="$1's kernel log has no BUG, WARN or lockdep report"
	run_on "$1" dmesg >"$log" || { ktap_test_fail "$what (dmesg failed)"; return; }
	grep -E "$user_fault" "$log" | sed "s/^/# $1, a user process's fault: /"
	first=$(grep -Evn "$user_fault" "$log" | grep -Em1 "$splats" | cut -d: -f1)
	[ -n "$first" ] || { ktap_test_pass "$what"; return; }
	# From a little before the first report on: lockdep and WARN print their cause first.
	echo "# $1's kernel log from line $((first > 10 ? first - 10 : 1)) (all of it: $log):"
	tail -n +$((first > 10 ? first - 10 : 1)) "$log" | head -n 150 | sed "s/^/# /"
	if rxe_page_pool_only "$log"; then
		# Lockdep is off for the rest of that boot: a later lock bug would go unseen.
		ktap_test_xfail "$what: rxe freed a page-pool skb with interrupts off (docs/interop.md), and lockdep stopped there"
	else
		ktap_test_fail "$what"
	fi
}
check_log A
check_log B

[ "$KTAP_CNT_FAIL" != 0 ] || rm -rf "${out%/t}"
ktap_finished
