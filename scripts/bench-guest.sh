#!/usr/bin/env bash
# The benchmark, inside the VM (scripts/bench.sh boots it): rdma-core's cmtime, the same
# unmodified binary everywhere, connects and disconnects N RC connections (a QP each) between
# two hosts (rxe0 here, rxe1 in namespace cepm_peer), for four pairs:
#   stock -> stock   rdma-core's librdmacm over the in-tree rdma_cm/ib_cm on both ends;
#   cepm -> cepm     cepm's librdmacm (out/rdmacm) over cepm on both ends;
#   cepm -> stock    cepm on rxe0 alone (cepm.devices=rxe0), ib_cm on rxe1, and back:
#   stock -> cepm
# Beside them, perftest's ib_send_bw -R over stock -> stock and cepm -> cepm: the CM sets the
# connection up and must not change the data path, so the two bandwidths should be equal.
# cmtime's pairs run in CEPM_BENCH_ROUNDS rounds (default 3) at each N, the four pairs one after
# the other in each round, so that the machine's drift falls on all of them alike; the table
# gives each step's median over the rounds, and each round's connect time.
# Usage: scripts/bench-guest.sh [N...]   (default: 100 1000)
set -uo pipefail
cd "$CEPM_ROOT/selftests/cepm"
. ./lib.sh
counts=("$@")
[ $# -gt 0 ] || counts=(100 1000)
rounds=${CEPM_BENCH_ROUNDS:-3}
out=$CEPM_ROOT/out/bench
mkdir -p "$out"
report=$CEPM_ROOT/out/bench.md
LIB=$CEPM_ROOT/out/rdmacm
[ -f "$LIB/librdmacm.so.1" ] || { echo "$LIB/librdmacm.so.1 is missing: make user" >&2; exit 1; }
OVER_CEPM=(env LD_LIBRARY_PATH="$LIB")
fail=0

# cmtime's table: "<step> : total_ms max_ms min_us us_per_conn"; the step's total.
step_ms() { sed -n "s/^$2 *: *\([0-9.]*\) .*/\1/p" "$1"; }
# ratio A B: A / B, or "-" unless both are numbers (a median of no rounds is "-").
ratio() {
	awk -v a="$1" -v b="$2" 'BEGIN { if (a ~ /^[0-9.]+$/ && b ~ /^[0-9.]+$/ && b > 0) printf "%.2f", a / b; else print "-" }'
}

stack_unload() { modprobe -r rdma_ucm rdma_cm iw_cm ib_cm 2>/dev/null; }
cepm_unload() { rmmod cepm 2>/dev/null; }
cepm_load() { cepm_unload; insmod "$CEPM_KO" "$@"; } # cepm_load [PARAM=VALUE...]


# run_pair NAME N.ROUND PORT SERVER_WAY CLIENT_WAY: cmtime's server in the peer namespace, its
# client here, each either "stock" or "cepm" (over cepm's librdmacm); the client's table in
# $out/NAME.N.ROUND.
run_pair() {
	local name=$1 n=${2%.*} port=$3 server=() client=()
	[ "$4" = cepm ] && server=("${OVER_CEPM[@]}")
	[ "$5" = cepm ] && client=("${OVER_CEPM[@]}")
	"${PEER[@]}" "${server[@]}" cmtime -b 10.77.0.2 -p "$port" >"$out/$name-server.$2" 2>&1 &
	local spid=$!
	if [ "$4" = cepm ]; then wait_until 30 cepm_listens "$port"; else wait_until 30 stock_listens "$port"; fi
	timeout 600 "${client[@]}" cmtime -s 10.77.0.2 -b 10.77.0.1 -p "$port" -c "$n" >"$out/$name.$2" 2>&1 || fail=1
	kill $spid
	wait $spid
	sed 's/^/  /' "$out/$name.$2"
}

# rxe_stats DEV: rxe's hardware counters (rdma statistic), a "NAME VALUE" line each.
rxe_stats() {
	rdma statistic show link "$1/1" | tr -s ' \t' '\n' |
		awk 'prev != "" && /^[0-9]+$/ { print prev, $0 } { prev = $0 }'
}
# rxe_counter DEV NAME: one of them, e.g. sent_pkts (0 if rxe has no such counter).
rxe_counter() { rxe_stats "$1" | awk -v n="$2" '$1 == n { v = $2 } END { print v + 0 }'; }
# The rxe counters that count something going wrong on a connection: retransmissions, RNR
# NAKs, sequence errors, retries exhausted.  Any of them moving would make the two ways
# differ for a reason other than the machine's noise.
RXE_TROUBLE="duplicate_request out_of_seq_request rcvd_rnr_err send_rnr_err rcvd_seq_err retry_exceeded_err retry_rnr_exceeded_err completer_retry_err send_err"
# rxe_trouble: their sum over rxe0 and rxe1, from one reading of each device.
rxe_trouble() {
	{ rxe_stats rxe0; rxe_stats rxe1; } | awk -v list="$RXE_TROUBLE" \
		'BEGIN { split(list, names); for (i in names) counted[names[i]] = 1 }
		 $1 in counted { sum += $2 } END { print sum + 0 }'
}

# bw_pair NAME PORT WAY: ib_send_bw -R, 1000 sends of 4 KiB, its server in the peer namespace
# and its client here, both "stock" or both "cepm".  On stdout: the client's average MB/s,
# the packets rxe0 sent and the rxe trouble counters' growth (rxe_trouble); or "-" and status
# 1 if it failed.
# perftest exits 1 with "Can't produce a report" when it cannot calibrate its clock in a busy
# TCG guest (selftests/cepm/lib.sh, again_if_void): then it runs once more.
bw_pair() {
	local name=$1 port=$2 way=() try spid rc sent0 trouble0
	[ "$3" = cepm ] && way=("${OVER_CEPM[@]}")
	for try in 1 2; do
		sent0=$(rxe_counter rxe0 sent_pkts) trouble0=$(rxe_trouble)
		"${PEER[@]}" "${way[@]}" timeout 300 ib_send_bw -R -d rxe1 -p "$port" -n 1000 -s 4096 \
			>"$out/$name-server" 2>&1 &
		spid=$!
		if [ "$3" = cepm ]; then wait_until 30 cepm_listens "$port"; else wait_until 30 stock_listens "$port"; fi
		"${way[@]}" timeout 300 ib_send_bw -R -d rxe0 -p "$port" -n 1000 -s 4096 10.77.0.2 \
			>"$out/$name" 2>&1
		rc=$?
		# A client that failed leaves the server waiting for it.
		[ $rc = 0 ] || kill $spid 2>/dev/null
		wait $spid || rc=1
		[ $rc != 0 ] && grep -qs "Can't produce a report" "$out/$name" "$out/$name-server" || break
		echo "  $name: perftest could not calibrate its clock: once more" >&2
	done
	sed 's/^/  /' "$out/$name" >&2
	[ $rc = 0 ] || { echo "-"; return 1; }
	echo "$(awk '$1 == 4096 && $2 == 1000 { print $4 }' "$out/$name")" \
		$(($(rxe_counter rxe0 sent_pkts) - sent0)) $(($(rxe_trouble) - trouble0))
}
# median V...: the middle value, or the mean of the two middle ones; "-" for none.
median() {
	printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 }
		END { if (NR == 0) print "-"; else if (NR % 2) print v[(NR + 1) / 2];
		      else printf "%.2f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
# step_median NAME N STEP: STEP's median over the rounds of pair NAME at N.
step_median() {
	local f values=()
	for f in "$out/$1.$2".*; do
		[ -s "$f" ] && values+=($(step_ms "$f" "$3"))
	done
	median "${values[@]}"
}
# step_rounds NAME N STEP: STEP's time in each round, in order.
step_rounds() {
	local r
	for r in $(seq "$rounds"); do printf ' %s' "$(step_ms "$out/$1.$2.$r" "$3")"; done
}

rows=()
# row LABEL N NAME: the medians of the steps cmtime times, each round's connect, and the
# connect and disconnect ratios of the medians to stock -> stock's at the same N ($base_c,
# $base_d).
row() {
	local c d
	c=$(step_median "$3" "$2" connect) d=$(step_median "$3" "$2" disconnect)
	rows+=("| $1 | $2 | $(step_median "$3" "$2" 'resolve addr') | $(step_median "$3" "$2" 'resolve route') | $(step_median "$3" "$2" 'create qp') | $c |$(step_rounds "$3" "$2" connect) | $d | $(ratio "$c" "$base_c") | $(ratio "$d" "$base_d") |")
}

for n in "${counts[@]}"; do
	rm -f "$out"/*-*."$n".*
	for round in $(seq "$rounds"); do
		echo "== N=$n, round $round: stock -> stock"
		cepm_unload
		modprobe rdma_ucm
		peer_ns_create || exit 1
		run_pair stock-stock "$n.$round" 7490 stock stock
		peer_ns_down
		stack_unload

		echo "== N=$n, round $round: cepm -> stock, stock -> cepm"
		cepm_load devices=rxe0
		modprobe rdma_ucm
		peer_ns_create || exit 1
		run_pair cepm-stock "$n.$round" 7491 stock cepm
		# The other way: cepm's server here, the stock client in the peer namespace.
		"${OVER_CEPM[@]}" cmtime -b 10.77.0.1 -p 7492 >"$out/stock-cepm-server.$n.$round" 2>&1 &
		spid=$!
		wait_until 30 cepm_listens 7492
		"${PEER[@]}" timeout 600 cmtime -s 10.77.0.1 -b 10.77.0.2 -p 7492 -c "$n" \
			>"$out/stock-cepm.$n.$round" 2>&1 || fail=1
		kill $spid
		wait $spid
		sed 's/^/  /' "$out/stock-cepm.$n.$round"
		peer_ns_down
		stack_unload

		echo "== N=$n, round $round: cepm -> cepm"
		cepm_load
		peer_ns_up || exit 1
		run_pair cepm-cepm "$n.$round" 7493 cepm cepm
		peer_ns_down
	done
	base_c=$(step_median stock-stock "$n" connect) base_d=$(step_median stock-stock "$n" disconnect)
	row "stock -> stock" "$n" stock-stock
	row "cepm -> stock" "$n" cepm-stock
	row "stock -> cepm" "$n" stock-cepm
	row "cepm -> cepm" "$n" cepm-cepm
done

# ib_send_bw: three rounds, stock -> stock then cepm -> cepm in each, so that the machine's
# drift over the run falls on both ways alike; a single run under TCG moves by 30 %.
declare -A bw=() pkts=() trouble=()
for round in 1 2 3; do
	for way in stock cepm; do
		echo "== ib_send_bw, round $round: $way -> $way"
		if [ $way = stock ]; then
			cepm_unload
			modprobe rdma_ucm
			peer_ns_create || exit 1
		else
			stack_unload
			cepm_load
			peer_ns_up || exit 1
		fi
		port=$((18510 + 2 * round)) # a port of its own for each run: no TIME_WAIT to meet
		[ $way = cepm ] && port=$((port + 1))
		if r=($(bw_pair "$way-$way-bw.$round" $port $way)); then
			bw[$way]+=" ${r[0]}" pkts[$way]+=" ${r[1]}" trouble[$way]+=" ${r[2]}"
		else
			fail=1
		fi
		peer_ns_down
	done
done
stack_unload
cepm_unload
# bw_row WAY: the table's row for WAY.
bw_row() {
	local runs=(${bw[$1]:-}) m
	[ ${#runs[@]} = 3 ] && m=$(median "${runs[@]}") || m=-
	echo "| $1 -> $1 |${bw[$1]:- -} | $m | $([ "$m" = - ] && echo - || ratio "$m" "$bw_base") |${pkts[$1]:- -} |${trouble[$1]:- -} |"
}
bw_base=$(median ${bw[stock]:-0 0 0})

{
	echo "| client -> server | N | resolve addr (ms) | resolve route (ms) | create qp (ms) | connect (ms) | connect, rounds$(seq -s ' ' "$rounds" | sed 's/^/ /') | disconnect (ms) | connect vs stock -> stock | disconnect vs stock -> stock |"
	echo "|---|---|---|---|---|---|---|---|---|---|"
	printf '%s\n' "${rows[@]}"
	echo
	echo "| ib_send_bw -R, 1000 x 4 KiB | MB/s, rounds 1 2 3 | median | vs stock -> stock | packets rxe0 sent | retransmissions, RNR and sequence errors |"
	echo "|---|---|---|---|---|---|"
	bw_row stock
	bw_row cepm
} | tee "$report"
chmod 644 "$report"
exit $fail
