#!/usr/bin/env bash
# The benchmark, inside the VM (scripts/bench.sh boots it): connect and disconnect N RC
# connections between two hosts (rxe0 here, rxe1 in namespace cepm_peer), for three pairs:
#   stock <-> stock      rdma-core's cmtime on both ends, the in-tree ib_cm/rdma_cm on both;
#   cepmctl <-> stock    cepm on rxe0 (cepm.devices=rxe0), ib_cm on rxe1; both directions;
#   cepmctl <-> cepmctl  cepm on both devices.
# cepmctl runs CM only (--cm-only) and in two phases like cmtime (--phases): all connects,
# then all disconnects.  Usage: scripts/bench-guest.sh [N...]   (default: 100 1000)
set -uo pipefail
cd "$CEPM_ROOT/selftests/cepm"
. ./lib.sh
counts=("$@")
[ $# -gt 0 ] || counts=(100 1000)
out=$CEPM_ROOT/out/bench
mkdir -p "$out"
report=$CEPM_ROOT/out/bench.md
TCP=0x0106
fail=0

# cmtime's table: "<step> : total_ms max_ms min_us us_per_conn".
cmtime_row() { sed -n "s/^$2 *: *\([0-9.]*\) *\([0-9.]*\) *\([0-9.]*\) *\([0-9.]*\)$/\1 \2 \3 \4/p" "$1"; }
# cepmctl's phase lines.
phase_ms() { sed -n "s/^$2 phase: .*, \([0-9.]*\) ms.*/\1/p" "$1"; }
quantile() { sed -n "s/^connect phase: .* $2 \([0-9.]*\) ms.*/\1/p" "$1"; }

stack_unload() { modprobe -r rdma_ucm rdma_cm iw_cm ib_cm 2>/dev/null; }
cepm_unload() { rmmod cepm 2>/dev/null; }
cepm_load() { cepm_unload; insmod "$CEPM_KO" "$@"; } # cepm_load [PARAM=VALUE...]
rows=()
# result LABEL N CONNECT_MS DISCONNECT_MS LATENCY: one table row; the ratio is to $base_c,
# stock <-> stock's connect time at the same N.
result() {
	local rate ratio
	rate=$(awk -v n="$2" -v t="$3" 'BEGIN { printf "%.0f", n / (t / 1000) }')
	ratio=$(awk -v a="$3" -v b="$base_c" 'BEGIN { printf "%.2f", a / b }')
	rows+=("| $1 | $2 | $3 | $4 | $rate | $5 | $ratio |")
}
# cmtime_result LABEL N FILE: a row from cmtime's table (it has no percentiles).
cmtime_result() {
	local c_tot c_max d_tot
	read -r c_tot c_max _ < <(cmtime_row "$3" connect)
	read -r d_tot _ < <(cmtime_row "$3" disconnect)
	result "$1" "$2" "$c_tot" "$d_tot" "max $c_max (cmtime gives no percentiles)"
}
# cepmctl_result LABEL N FILE: a row from `cepmctl connect --phases`.
cepmctl_result() {
	result "$1" "$2" "$(phase_ms "$3" connect)" "$(phase_ms "$3" disconnect)" \
		"p50 $(quantile "$3" p50), p99 $(quantile "$3" p99)"
}

# cmtime_pair N PORT: stock client here -> stock server there; prints the client's table.
cmtime_pair() {
	"${PEER[@]}" cmtime -b 10.77.0.2 -p "$2" >"$out/stock-server.$1" 2>&1 &
	local spid=$!
	wait_until 20 stock_listens "$2"
	timeout 300 cmtime -s 10.77.0.2 -b 10.77.0.1 -p "$2" -c "$1" >"$out/stock-stock.$1" 2>&1 || fail=1
	kill $spid; wait $spid
}

for n in "${counts[@]}"; do
	echo "== N=$n: stock <-> stock"
	cepm_unload
	modprobe rdma_ucm
	peer_ns_create || exit 1
	cmtime_pair "$n" 7490
	sed 's/^/  /' "$out/stock-stock.$n"
	read -r base_c _ < <(cmtime_row "$out/stock-stock.$n" connect)
	cmtime_result "stock -> stock (cmtime -c $n)" "$n" "$out/stock-stock.$n"
	peer_ns_down
	stack_unload

	echo "== N=$n: cepmctl <-> stock"
	cepm_load devices=rxe0
	modprobe rdma_ucm
	peer_ns_create || exit 1
	"${PEER[@]}" cmtime -b 10.77.0.2 -p 7491 >"$out/stock-server2.$n" 2>&1 &
	spid=$!
	wait_until 20 stock_listens 7491
	"$CEPMCTL" connect --device rxe0 --rdma-cm --cm-only --service-id "$(ip_service_id $TCP 7491)" \
		--peer-ip 10.77.0.2 --peer-mac "$PEER_MAC" --count "$n" --parallel "$n" --phases --timeout-ms 60000 \
		>"$out/cepm-stock.$n" 2>&1 || fail=1
	kill $spid; wait $spid
	sed 's/^/  /' "$out/cepm-stock.$n"
	cepmctl_result "cepmctl -> stock (cmtime server)" "$n" "$out/cepm-stock.$n"
	"$CEPMCTL" accept --device rxe0 --rdma-cm --cm-only --service-id "$(ip_service_id $TCP 7492)" --count "$n" \
		--timeout-ms 60000 >"$out/stock-cepm-accept.$n" 2>&1 &
	apid=$!
	wait_until 10 grep -q '^accept: listening' "$out/stock-cepm-accept.$n"
	"${PEER[@]}" timeout 300 cmtime -s 10.77.0.1 -b 10.77.0.2 -p 7492 -c "$n" >"$out/stock-cepm.$n" 2>&1 || fail=1
	wait $apid || fail=1
	sed 's/^/  /' "$out/stock-cepm.$n"
	cmtime_result "stock -> cepmctl (cmtime -c $n)" "$n" "$out/stock-cepm.$n"
	peer_ns_down
	stack_unload

	echo "== N=$n: cepmctl <-> cepmctl"
	cepm_load
	peer_ns_up || exit 1
	"${PEER[@]}" "$CEPMCTL" accept --device rxe1 --cm-only --service-id "$(ip_service_id $TCP 7493)" --count "$n" \
		--timeout-ms 60000 >"$out/cepm-cepm-accept.$n" 2>&1 &
	apid=$!
	wait_until 10 grep -q '^accept: listening' "$out/cepm-cepm-accept.$n"
	"$CEPMCTL" connect --device rxe0 --cm-only --service-id "$(ip_service_id $TCP 7493)" --peer-ip 10.77.0.2 \
		--peer-mac "$PEER_MAC" --count "$n" --parallel "$n" --phases --timeout-ms 60000 >"$out/cepm-cepm.$n" 2>&1 || fail=1
	wait $apid || fail=1
	sed 's/^/  /' "$out/cepm-cepm.$n"
	cepmctl_result "cepmctl -> cepmctl" "$n" "$out/cepm-cepm.$n"
	peer_ns_down
done

{
	echo "| pair | N | connect phase (ms) | disconnect phase (ms) | connections/s | setup latency (ms) | connect time vs stock <-> stock |"
	echo "|---|---|---|---|---|---|---|"
	printf '%s\n' "${rows[@]}"
} | tee "$report"
chmod 644 "$report"
exit $fail
